"""Shared test utilities: dtype tables, NumPy/torch conversion, layout generators and
`check_op`, which compares a torchlite op with NumPy (values) and PyTorch (result dtype)."""
import contextlib

import numpy as np
import pytest

import torchlite as tl
import torchlite._core as _core
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
        torch = torch_or_skip()
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
    """Install the SIMD kernels of `level` (0, 3 or 4) in every kernel module (elementwise,
    reduce, matmul, random) for the duration of the block."""
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
