"""torchlite.Size: the tuple subclass returned by Tensor.shape / Tensor.size()."""


class Size(tuple):
    __slots__ = ()

    def __repr__(self):
        return f"torchlite.Size([{', '.join(str(d) for d in self)}])"

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))
