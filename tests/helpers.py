"""Shared test utilities: dtype tables, NumPy/torch conversion, layout generators and
`check_op`, which compares a torchlite op with NumPy (values) and PyTorch (result dtype)."""
import contextlib

import numpy as np
import pytest

import torchlite as tl
import torchlite._core as _core
from torchlite.autograd import gradcheck, gradgradcheck
from torchlite._core import elementwise as _ew

DTYPE_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
               "float32", "float64")
ALL_DTYPES = tuple(getattr(tl, n) for n in DTYPE_NAMES)
FLOAT_DTYPES = (tl.float16, tl.bfloat16, tl.float32, tl.float64)
INT_DTYPES = (tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64)

# NumPy has no bfloat16: its values are compared through float32
NP_DTYPE = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16,
            "int32": np.int32, "int64": np.int64, "float16": np.float16, "bfloat16": np.float32,
            "float32": np.float32, "float64": np.float64}

# relative tolerance of a float32 result computed by torchlite vs the float64 reference
RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-12}


def torch_or_skip():
    return pytest.importorskip("torch")


def torch_dtype(dt):
    """The torch dtype with the same name as a torchlite dtype."""
    return getattr(torch_or_skip(), dt.name)


def tl_dtype_of(torch_dt):
    return getattr(tl, str(torch_dt).split(".")[-1])


def tensor_of(a, dtype="float32"):
    """A torchlite tensor of dtype `dtype` (a name, e.g. "bfloat16") holding the values of
    array-like a (bfloat16 through float32, which NumPy has)."""
    if dtype == "bfloat16":
        return tl.tensor(np.asarray(a, np.float32)).to(tl.bfloat16)
    return tl.tensor(np.asarray(a, NP_DTYPE[dtype]))


def to_numpy(t):
    """A NumPy copy of a torchlite tensor (bfloat16 widened to float32)."""
    if t.dtype is tl.bfloat16:
        t = t.float()
    return np.array(t.numpy(), copy=True)


def to_torch(t):
    """A torch copy of a torchlite tensor, same dtype and values."""
    torch = torch_or_skip()
    if t.dtype is tl.bfloat16:
        return torch.from_numpy(to_numpy(t)).to(torch.bfloat16)
    return torch.from_numpy(to_numpy(t))


def from_torch(t):
    """A torchlite copy of a torch tensor."""
    torch = torch_or_skip()
    if t.dtype == torch.bfloat16:
        return tl.tensor(t.float().numpy()).to(tl.bfloat16)
    return tl.tensor(t.detach().numpy())


def rounded_to(x, dt):
    """float64 NumPy values `x` rounded to float dtype dt, as float64 (NumPy rounds; bfloat16,
    which NumPy lacks, goes through torchlite's own cast, tested against torch elsewhere)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        if dt is tl.bfloat16:
            return to_numpy(tl.tensor(x).to(dt)).astype(np.float64)
        return x.astype(NP_DTYPE[dt.name]).astype(np.float64)


def make_noncontig(a, dtype=None):
    """Yield (label, tensor) pairs holding the values of NumPy array `a` (cast to `dtype`
    when given) in different layouts: contiguous, transposed (a permuted view of a buffer in
    reversed dim order), every other element of a bigger buffer, a slice at a storage
    offset, and, when all rows are equal, an expanded (stride-0) view."""
    a = np.asarray(a)

    def make(buf):
        t = tl.tensor(buf)
        return t if dtype is None else t.to(dtype)

    yield "contiguous", make(a)
    if a.ndim >= 2:
        yield "transposed", make(np.ascontiguousarray(a.transpose())).permute(
            *range(a.ndim - 1, -1, -1))
    if a.ndim >= 1 and a.size:
        shape = list(a.shape)
        shape[-1] *= 2
        big = np.zeros(shape, dtype=a.dtype)
        big[..., ::2] = a
        yield "stepped", make(big)[..., ::2]
        off = np.zeros((a.shape[0] + 1,) + a.shape[1:], dtype=a.dtype)
        off[1:] = a
        yield "offset", make(off)[1:]
        if (a == a[:1]).all():
            yield "expanded", make(a[:1]).expand(*a.shape)


def assert_values(actual, expected, rtol=0.0, atol=0.0, equal_nan=True, msg=""):
    """actual (a tensor) equals expected (array-like) within tolerances; NaN matches NaN,
    infinities must match exactly."""
    got = to_numpy(actual)
    exp = np.asarray(expected)
    assert got.shape == exp.shape, f"{msg}: shape {got.shape} != {exp.shape}"
    if got.dtype == np.bool_ or exp.dtype == np.bool_:
        np.testing.assert_array_equal(got, exp.astype(got.dtype), err_msg=msg)
        return
    if got.dtype.kind in "iu" and exp.dtype.kind in "iub":
        np.testing.assert_array_equal(got, exp, err_msg=msg)
        return
    np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=equal_nan, err_msg=msg)


def check_op(tl_fn, np_fn, *arrays, dtype=None, rtol=None, atol=0.0, torch_fn=None,
             layouts=True):
    """Compare tl_fn(*tensors) with np_fn(*arrays) for every layout of the inputs.

    `arrays` are NumPy arrays (float64, ints or bool).  With `dtype`, the tensors are cast
    to it and np_fn gets the values the tensors really hold (rounded to dtype, as float64).
    With torch_fn, the result dtype must equal that of torch_fn(*torch tensors).  The
    tolerance defaults to RTOL of the result dtype.  Returns the contiguous-layout result."""
    if dtype is not None:
        arrays = [rounded_to(a, dtype) if dtype.is_floating_point else
                  np.asarray(a).astype(NP_DTYPE[dtype.name]) for a in arrays]
    with np.errstate(all="ignore"):
        ref = np.asarray(np_fn(*arrays))
    tensors = [t for _, t in (next(make_noncontig(a, dtype)) for a in arrays)]
    res = tl_fn(*tensors)
    if res.dtype.is_floating_point and res.dtype is not tl.float64:
        ref = rounded_to(ref, res.dtype)      # overflow and underflow as the result dtype has them
    tol = RTOL.get(res.dtype.name, 0.0) if rtol is None else rtol
    assert_values(res, ref, tol, atol, msg="contiguous")
    if torch_fn is not None:
        torch_or_skip()
        tres = torch_fn(*[to_torch(t) for t in tensors])
        assert res.dtype.name == str(tres.dtype).split(".")[-1], (res.dtype, tres.dtype)
    if layouts:
        variants = [list(make_noncontig(a, dtype)) for a in arrays]
        for k in range(1, max(len(v) for v in variants)):
            ins = [v[k][1] if k < len(v) else v[0][1] for v in variants]
            label = "/".join(v[k][0] if k < len(v) else "contiguous" for v in variants)
            assert_values(tl_fn(*ins), ref, tol, atol, msg=label)
    return res


@contextlib.contextmanager
def isa_level(level):
    """Install the SIMD kernels of `level` (0, 3 or 4) in every kernel module
    (torchlite._core._KERNEL_MODULES) for the duration of the block."""
    old = _core.isa_level()
    got = _core.set_isa_level(level)
    try:
        yield got
    finally:
        _core.set_isa_level(old)


def available_isa_levels():
    """The compiled levels this CPU can run."""
    cpu = _ew.cpu_isa_level()
    return [lv for lv in _ew.compiled_isa_levels() if lv <= cpu]


@contextlib.contextmanager
def default_dtype(dt):
    old = tl.get_default_dtype()
    tl.set_default_dtype(dt)
    try:
        yield
    finally:
        tl.set_default_dtype(old)


# ---- autograd case tables (test_autograd_shape.py, test_autograd_indexing.py) --------------------
# A case's fn(L, *xs) is written once for both libraries (L is torchlite or torch); each case
# runs gradcheck in float64 on several input layouts, gradgradcheck on the contiguous layout,
# and a comparison of the values and gradients with PyTorch's.
LAYOUTS = ("contig", "t", "step", "expand")


class Case:
    """An op's gradcheck case: fn(L, *tensors) -> tensor or tuple of tensors; shapes of the
    float64 inputs (all require grad); double: also gradgradcheck; layouts to try; check:
    run gradcheck (gradcheck cannot take an empty input yet: such cases are compared with
    PyTorch only)."""

    def __init__(self, name, fn, *shapes, double=True, layouts=LAYOUTS, atol=1e-5, check=True):
        self.name, self.fn, self.shapes, self.double = name, fn, shapes, double and check
        self.check = check
        self.layouts = [lay for lay in layouts if _layout_applies(lay, shapes)]
        self.atol = atol

    def __repr__(self):
        return self.name


def _layout_applies(layout, shapes):
    if layout == "t":
        return all(len(s) >= 2 for s in shapes)
    if layout == "step":
        return all(len(s) >= 1 for s in shapes)
    if layout == "expand":
        return all(len(s) >= 1 and s[0] > 1 for s in shapes)
    return True


def make_leaf(L, a, layout):
    """A float64 leaf requiring grad holding a (numpy), laid out as `layout`: 'contig';
    't': a transposed view; 'step': every other element of a wider buffer; 'expand': a
    (1, ...) leaf the case expands to a's shape (see run_fn)."""
    if layout == "t":
        base = L.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=L.float64)
        t = base.transpose(-1, -2)
    elif layout == "step":
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],))
        wide[..., ::2] = a
        t = L.tensor(wide, dtype=L.float64)[..., ::2]
    elif layout == "expand":
        t = L.tensor(a[:1], dtype=L.float64)
    else:
        t = L.tensor(a, dtype=L.float64)
    return t.detach().requires_grad_()


def run_fn(case, L, layout, xs):
    if layout == "expand":
        xs = [x.expand(*s) for x, s in zip(xs, case.shapes)]
    return case.fn(L, *xs)


def leaves(case, L, layout, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in case.shapes]
    return [make_leaf(L, a, layout) for a in arrays]


def float_outputs(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if o.is_floating_point()]


def check_gradcheck(case, layout):
    xs = leaves(case, tl, layout)
    assert gradcheck(lambda *a: run_fn(case, tl, layout, a), tuple(xs), atol=case.atol)


def check_gradgradcheck(case):
    xs = leaves(case, tl, "contig")
    assert gradgradcheck(lambda *a: run_fn(case, tl, "contig", a), tuple(xs), atol=case.atol)


def check_against_torch(case, layout):
    """Values and gradients (for random output gradients) equal PyTorch's."""
    torch = pytest.importorskip("torch")
    grads = {}
    for L in (tl, torch):
        xs = leaves(case, L, layout)
        outs = [o for o in float_outputs(run_fn(case, L, layout, xs)) if o.requires_grad]
        rng = np.random.default_rng(1)
        gos = [L.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype) for o in outs]
        # one scalar (sum of o * go) rather than grad(outs, ...): the same gradients
        loss = sum((o * go).sum() for o, go in zip(outs, gos))
        gs = L.autograd.grad(loss, xs, allow_unused=True) if outs else [None] * len(xs)
        grads[L] = ([o.detach().numpy() for o in outs],
                    [None if g is None else g.numpy() for g in gs])
    (ours_out, ours_g), (ref_out, ref_g) = grads[tl], grads[torch]
    assert len(ours_out) == len(ref_out)
    for a, b in zip(ours_out, ref_out):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    for a, b in zip(ours_g, ref_g):
        a = np.zeros_like(b) if a is None and b is not None else a
        b = np.zeros_like(a) if b is None and a is not None else b
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def layout_params(cases):
    return [pytest.param(c, lay, id=f"{c.name}-{lay}") for c in cases for lay in c.layouts]


def case_table_tests(cases):
    """The test functions of a case table: (test_gradcheck, test_gradgradcheck,
    test_matches_torch), to be bound at a test module's top level."""

    @pytest.mark.parametrize("case,layout", layout_params([c for c in cases if c.check]))
    def test_gradcheck(case, layout):
        check_gradcheck(case, layout)

    @pytest.mark.parametrize("case", [c for c in cases if c.double], ids=repr)
    def test_gradgradcheck(case):
        check_gradgradcheck(case)

    @pytest.mark.parametrize("case,layout", layout_params(cases))
    def test_matches_torch(case, layout):
        check_against_torch(case, layout)

    return test_gradcheck, test_gradgradcheck, test_matches_torch


def grad_fn_names(fn):
    """The grad_fn class names of fn(L, x) in torchlite and in PyTorch (skips without it),
    x a (3, 4) float64 non-leaf."""
    torch = pytest.importorskip("torch")
    names = []
    for L in (tl, torch):
        x = L.ones(3, 4, dtype=L.float64, requires_grad=True) * 1
        names.append(type(fn(L, x).grad_fn).__name__)
    return names


def missing_ops(cases, ops):
    """The names in ops that no case of the table is named after."""
    names = {c.name for c in cases}
    return [op for op in ops if op not in names]


def grad_leaves(arrays, layout):
    """Float64 leaves requiring grad holding `arrays`, in make_noncontig's layout number
    `layout` (0 = contiguous) where the array has it."""
    out = []
    for a in arrays:
        variants = [t for label, t in make_noncontig(a, tl.float64) if label != "expanded"]
        out.append(variants[min(layout, len(variants) - 1)].requires_grad_())
    return out


def saved_buffer(obj):
    """obj written by torchlite.save into a rewound in-memory file (the serialization tests'
    checkpoints of crafted objects)."""
    import io
    import torchlite
    buf = io.BytesIO()
    torchlite.save(obj, buf)
    buf.seek(0)
    return buf
