"""torchlite.layout: how a tensor's elements are stored.  torchlite's tensors are dense and
strided (torchlite.strided); the sparse and other layouts PyTorch has are named here so that
code comparing or passing them runs, and a factory asked for one of them says it is not
supported instead of ignoring the request."""


class layout:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torchlite." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
_mkldnn = layout("_mkldnn")
jagged = layout("jagged")
_LAYOUTS = {lay.name: lay for lay in (strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr,
                                      sparse_bsc, _mkldnn, jagged)}


def _by_name(name):
    return _LAYOUTS[name]


def check(lay, op):
    """None or torchlite.strided; TypeError for a non-layout, RuntimeError for a layout
    torchlite does not have."""
    if lay is None or lay is strided:
        return
    if not isinstance(lay, layout):
        raise TypeError(f"{op}(): argument 'layout' must be torchlite.layout, not "
                        f"{type(lay).__name__}")
    raise RuntimeError(f"{op}(): layout {lay} is not supported: torchlite's tensors are dense "
                       f"(torchlite.strided)")
