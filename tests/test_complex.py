"""Complex tensors (complex64/complex128, and complex32 as a storage type): dtype rules,
creation, printing, NumPy interop, elementwise math, views of the parts, reductions, products,
indexing, autograd and serialization.  Oracles: NumPy for values, central differences in float64 for gradients,
and PyTorch (where installed) for promotion, printing and the gradient convention."""
import io
import itertools

import numpy as np
import pytest

import torchlite as tl

try:
    import torch
except ImportError:          # the PyTorch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")
CDTYPES = (tl.complex64, tl.complex128)
NP = {tl.complex64: np.complex64, tl.complex128: np.complex128}
TOL = {tl.complex64: dict(rtol=2e-5, atol=2e-6), tl.complex128: dict(rtol=1e-12, atol=1e-13)}


def crandn(*shape, dtype=np.complex128, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


# ---- dtypes and promotion ----------------------------------------------------------------------
def test_dtype_objects():
    assert tl.complex64.is_complex and tl.complex128.is_complex
    assert not tl.complex64.is_floating_point
    assert tl.cfloat is tl.complex64 and tl.cdouble is tl.complex128
    assert tl.complex64.to_real() is tl.float32 and tl.float64.to_complex() is tl.complex128
    assert tl.finfo(tl.complex64).eps == tl.finfo(tl.float32).eps
    assert tl.get_default_complex_dtype() is tl.complex64
    tl.set_default_dtype(tl.float64)
    try:
        assert tl.get_default_complex_dtype() is tl.complex128
        assert tl.tensor([1j]).dtype is tl.complex128
    finally:
        tl.set_default_dtype(tl.float32)


@needs_torch
def test_promotion_matches_torch():
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
             "float64", "complex64", "complex128", "complex32"]
    for a, b in itertools.product(names, repeat=2):
        if "complex" not in a + b:
            continue
        expect = torch.promote_types(getattr(torch, a), getattr(torch, b))
        got = tl.promote_types(getattr(tl, a), getattr(tl, b))
        assert got.name == str(expect).split(".")[1], (a, b)
        assert tl.can_cast(getattr(tl, a), getattr(tl, b)) == torch.can_cast(
            getattr(torch, a), getattr(torch, b)), (a, b)


@needs_torch
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "float64", "complex64",
                                   "complex128"])
def test_python_complex_scalars_promote_as_in_torch(dtype):
    x = tl.ones(2, dtype=getattr(tl, dtype))
    xt = torch.ones(2, dtype=getattr(torch, dtype))
    for v in (1j, 2 + 0j, 1.5, 2):
        assert (x * v).dtype.name == str((xt * v).dtype).split(".")[1]
        np.testing.assert_allclose((x * v).numpy(), (xt * v).numpy())


# ---- creation, NumPy, printing -----------------------------------------------------------------
def test_creation_and_values():
    t = tl.tensor([1 + 2j, 3, -1j])
    assert t.dtype is tl.complex64 and t.is_complex() and not t.is_floating_point()
    assert t.tolist() == [1 + 2j, 3 + 0j, -1j]
    assert tl.tensor(2 - 3j).item() == 2 - 3j and complex(tl.tensor(2 - 3j)) == 2 - 3j
    assert tl.zeros(2, 3, dtype=tl.cdouble).tolist() == [[0j] * 3] * 2
    f = tl.full((2,), 1.5 - 2j, dtype=tl.complex128)
    assert f.tolist() == [1.5 - 2j, 1.5 - 2j]
    assert tl.full((2, 2), 1j).dtype is tl.complex64        # inferred from the value
    z = tl.ones(3, dtype=tl.complex64).fill_(4j)
    assert z.tolist() == [4j] * 3
    r = tl.arange(3).to(tl.complex64)
    assert r.tolist() == [0j, 1 + 0j, 2 + 0j]
    # complex -> real keeps the real part, as a cast does
    assert tl.tensor([1.5 + 2j]).to(tl.float32).tolist() == [1.5]
    assert tl.tensor([1.5 + 2j]).to(tl.int64).tolist() == [1]
    assert tl.tensor([0j, 1j]).to(tl.bool).tolist() == [False, True]
    assert tl.tensor([1 + 1j], dtype=tl.complex64).to(tl.complex128).dtype is tl.complex128


@pytest.mark.parametrize("dtype", CDTYPES)
def test_numpy_zero_copy_both_ways(dtype):
    a = crandn(3, 4, dtype=NP[dtype])
    t = tl.from_numpy(a)
    assert t.dtype is dtype
    a[0, 0] = 7 + 7j                      # the tensor sees the NumPy memory
    assert t[0, 0].item() == 7 + 7j
    back = t.numpy()
    back[1, 1] = -1j
    assert a[1, 1] == -1j
    np.testing.assert_array_equal(np.asarray(t), a)
    # strided views keep working
    np.testing.assert_array_equal(tl.from_numpy(a[:, ::2]).numpy(), a[:, ::2])


@needs_torch
def test_printing_matches_torch():
    cases = [[1 + 2j, 3], [[1.5 + 2j, 3], [0, -1j]], [0.001 + 1000j, -2.5 - 0.25j],
             [1e-5j, 1], [float("nan") + 1j, 2]]
    for v in cases:
        for dt in ("complex64", "complex128"):
            got = repr(tl.tensor(v, dtype=getattr(tl, dt)))
            want = repr(torch.tensor(v, dtype=getattr(torch, dt))).replace("torch.", "torchlite.")
            assert got == want
    assert repr(tl.tensor(2 - 3j)) == "tensor(2.-3.j)"


# ---- elementwise ------------------------------------------------------------------------------
UNARY = {
    "neg": np.negative, "square": np.square, "reciprocal": np.reciprocal, "exp": np.exp,
    "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt,
    "rsqrt": lambda a: 1 / np.sqrt(a), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
    "sgn": lambda a: np.where(a == 0, 0, a / np.where(a == 0, 1, np.abs(a))),
    "conj": np.conj, "conj_physical": np.conj, "abs": np.abs, "angle": np.angle,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "arcsin": np.arcsin, "arccos": np.arccos,
    "arctan": np.arctan, "arcsinh": np.arcsinh, "arccosh": np.arccosh, "arctanh": np.arctanh,
    "log1p": np.log1p, "expm1": np.expm1, "exp2": np.exp2,
}


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_against_numpy(op, dtype):
    a = crandn(5, 7, dtype=NP[dtype], seed=1) * 2
    a[0, 0] = 0                              # zero, pure reals and pure imaginaries
    a[0, 1], a[0, 2] = 2.5, -3j
    if op in ("log", "log2", "log10", "reciprocal", "rsqrt"):
        a[0, 0] = 1
    t = tl.from_numpy(a)
    got = getattr(tl, op)(t)
    want = UNARY[op](a)
    expect_dtype = dtype.to_real() if op in ("abs", "angle") else dtype
    assert got.dtype is expect_dtype
    np.testing.assert_allclose(got.numpy(), want, **TOL[dtype])
    # a transposed (non-contiguous) input gives the same values
    np.testing.assert_allclose(getattr(tl, op)(t.t()).numpy(), want.T, **TOL[dtype])


def test_tanh_and_exp_of_large_arguments_stay_finite():
    a = np.array([30 + 1j, -30 - 2j, 800 + 0j, 1e-30 + 1e-30j], np.complex128)
    np.testing.assert_allclose(tl.tanh(tl.from_numpy(a)).numpy(), np.tanh(a), rtol=1e-12)
    big = np.array([1e200 + 1e200j, 3e-200 - 1e-200j])
    np.testing.assert_allclose(tl.from_numpy(big).abs().numpy(), np.abs(big), rtol=1e-15)
    np.testing.assert_allclose(tl.from_numpy(big).reciprocal().numpy(), 1 / big, rtol=1e-14)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_binary_against_numpy(dtype):
    a = crandn(4, 5, dtype=NP[dtype], seed=2)
    b = crandn(5, dtype=NP[dtype], seed=3)
    ta, tb = tl.from_numpy(a), tl.from_numpy(b)
    tol = TOL[dtype]
    np.testing.assert_allclose((ta + tb).numpy(), a + b, **tol)
    np.testing.assert_allclose((ta - tb).numpy(), a - b, **tol)
    np.testing.assert_allclose((ta * tb).numpy(), a * b, **tol)
    np.testing.assert_allclose((ta / tb).numpy(), a / b, **tol)
    np.testing.assert_allclose((ta ** tb).numpy(), a ** b, rtol=tol["rtol"] * 20, atol=tol["atol"])
    np.testing.assert_allclose((ta ** 3).numpy(), a ** 3, **tol)
    np.testing.assert_allclose((ta ** -2).numpy(), a ** -2.0, **tol)
    np.testing.assert_allclose(tl.add(ta, tb, alpha=2.5).numpy(), a + 2.5 * b, **tol)
    np.testing.assert_allclose((2 - 1j - ta).numpy(), 2 - 1j - a, **tol)
    np.testing.assert_allclose((ta * 1.5).numpy(), a * 1.5, **tol)
    np.testing.assert_allclose((1j / ta).numpy(), 1j / a, **tol)
    real = np.random.default_rng(4).standard_normal(5).astype(NP[dtype]().real.dtype)
    mixed = ta * tl.from_numpy(real)
    assert mixed.dtype is dtype
    np.testing.assert_allclose(mixed.numpy(), a * real, **tol)
    assert (ta == ta).all().item() and not (ta != ta).any().item()
    np.testing.assert_array_equal((ta == tb).numpy(), a == b)
    cond = np.arange(5) % 2 == 0
    np.testing.assert_array_equal(tl.where(tl.from_numpy(cond), ta, tb).numpy(),
                                  np.where(cond, a, b))
    assert tl.allclose(ta, ta + 1e-9) and not tl.allclose(ta, ta + 1e-2j)
    np.testing.assert_allclose(tl.addcmul(ta, ta, tb, value=2).numpy(), a + 2 * a * b, **tol)
    np.testing.assert_allclose(tl.addcdiv(ta, ta, tb, value=-1).numpy(), a - a / b, **tol)
    np.testing.assert_allclose(tl.lerp(ta, tb, 0.3).numpy(), a + 0.3 * (b - a), **tol)
    np.testing.assert_allclose(tl.lerp(ta, tb, tb).numpy(), a + b * (b - a), rtol=tol["rtol"] * 10,
                               atol=tol["atol"] * 10)
    np.testing.assert_array_equal(tl.isclose(ta, ta * (1 + 1e-9)).numpy(), np.ones((4, 5), bool))


def test_predicates():
    a = np.array([1 + 1j, np.nan + 0j, complex(0, np.inf), 2j, 3 + 0j], np.complex64)
    t = tl.from_numpy(a)
    np.testing.assert_array_equal(tl.isnan(t).numpy(), np.isnan(a))
    np.testing.assert_array_equal(tl.isinf(t).numpy(), np.isinf(a))
    np.testing.assert_array_equal(tl.isfinite(t).numpy(), np.isfinite(a))
    np.testing.assert_array_equal(tl.isreal(t).numpy(), np.isreal(a))
    assert tl.isreal(tl.ones(2)).all().item()
    assert t.nonzero().shape == (5, 1)
    assert tl.count_nonzero(tl.tensor([0j, 1j, 1 + 0j, 0j])).item() == 2


def test_in_place_and_out():
    a = crandn(3, dtype=np.complex64)
    t = tl.from_numpy(a.copy())
    t.mul_(2j).add_(1)
    np.testing.assert_allclose(t.numpy(), a * 2j + 1, rtol=1e-6)
    out = tl.empty(3, dtype=tl.complex128)
    tl.mul(tl.from_numpy(a), 2, out=out)
    np.testing.assert_allclose(out.numpy(), a * 2, rtol=1e-6)
    with pytest.raises(RuntimeError, match="can't be cast"):
        tl.mul(tl.from_numpy(a), 2, out=tl.empty(3))          # complex into float32
    with pytest.raises(RuntimeError):
        tl.ones(3).mul_(1j)                                     # the same rule in place


def test_ops_without_complex_meaning_raise():
    t = tl.tensor([1 + 1j, 2 - 1j])
    for fn in (lambda: t < t, lambda: t.sort(), lambda: t.max(), lambda: tl.floor(t),
               lambda: t.sign(), lambda: tl.relu(t),
               lambda: tl.maximum(t, t), lambda: t.topk(1), lambda: t.argmax(), t.unique,
               lambda: tl.ones(2).index_put_((tl.tensor([0]),), tl.tensor([1j]))):
        with pytest.raises(RuntimeError):
            fn()


# ---- PyTorch's complex unary set: inverse functions, log1p, expm1, exp2, nan_to_num, sinc -----
# (before, these raised "not implemented for 'ComplexDouble'"; sinc gave real, wrong values)
INVERSE_OPS = ("asin", "acos", "atan", "asinh", "acosh", "atanh", "log1p", "expm1", "exp2")
ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
           "arccosh": "acosh", "arctanh": "atanh"}
EPS = {tl.complex64: 2.0 ** -23, tl.complex128: 2.0 ** -52}


def _grid(dtype):
    """Both sides of every branch cut (signed zeros), the branch points +-1 and +-i, tiny and
    huge magnitudes, the unit circle and |1 + z| = 1 (log1p's hard case), random points."""
    if dtype is tl.complex128:
        parts = [0.0, 1e-310, 1e-200, 1e-20, 1e-9, 0.25, 0.5, 0.999, 1.0, 1.001, 1.5, 2.0, 3.0, 10.0,
                 1e8, 1e17, 1e150, 1e300]
    else:
        parts = [0.0, 1e-40, 1e-30, 1e-9, 1e-4, 0.25, 0.5, 0.999, 1.0, 1.001, 1.5, 2.0, 3.0, 10.0,
                 1e4, 1e8, 1e18, 1e37]
    vals = [complex(sa * a, sb * b) for a in parts for b in parts for sa in (1.0, -1.0) for sb in (1.0, -1.0)]
    rng = np.random.default_rng(12)
    vals += list(rng.uniform(-4, 4, 400) + 1j * rng.uniform(-4, 4, 400))
    th = rng.uniform(-np.pi, np.pi, 200)
    vals += list(np.exp(1j * th)) + list(np.exp(1j * th[:100] * 0.3) - 1)
    vals += list(10.0 ** rng.uniform(-6, 6, 300) * np.exp(1j * rng.uniform(-np.pi, np.pi, 300)))
    return np.array(vals, NP[dtype])


def _check_against(got, want, dtype, ulps, what, zero_signs=(True, True)):
    """got within `ulps` eps of |want| element by element (the normwise relative error), the
    same NaN and infinity pattern part by part, and each zero part with want's sign (the side of
    a branch cut, as C99 / PyTorch; zero_signs: whether to check it, real and imaginary part)."""
    got, want = np.asarray(got).astype(np.complex128), np.asarray(want).astype(np.complex128)
    for part, signs in zip((np.real, np.imag), zero_signs):
        g, w = part(got), part(want)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{what}: NaN pattern")
        inf = np.isinf(w)
        np.testing.assert_array_equal(g[inf], w[inf], err_msg=f"{what}: infinities")
        zero = (w == 0) & signs
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]),
                                      err_msg=f"{what}: signs of zero parts")
    fin = np.isfinite(want) & np.isfinite(got)
    m = np.abs(want[fin])
    err = np.abs(got[fin] - want[fin]) / np.where(m == 0, 1, m)
    err = np.where(m == 0, np.abs(got[fin]), err)
    bad = err > ulps * EPS[dtype]
    assert not bad.any(), (what, list(zip(want[fin][bad][:5], got[fin][bad][:5])), err.max() / EPS[dtype])


@needs_torch
@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("op", INVERSE_OPS)
def test_inverse_and_small_argument_functions_match_torch(op, dtype):
    """Values on the grid against torch (glibc's casin, ... on the CPU), to a few ulps of |f(z)|,
    with torch's infinities, NaNs and signed zeros; NumPy's functions too where it has them."""
    z = _grid(dtype)
    if op in ("expm1", "exp2"):           # torch's exp(x) overflows first: kept to |x| < 80
        z = z[np.abs(z.real) < 80]
    if op == "exp2":                       # torch rounds y ln 2 first: errors of |y| ulps (the
        z = z[np.abs(z.imag) < 100]        # large y against mpmath in the test below)
    zt = torch.from_numpy(z)
    want = getattr(torch, op)(zt).numpy()
    got = getattr(tl, op)(tl.from_numpy(z))
    assert got.dtype is dtype
    keep = np.ones(len(z), bool)
    if op == "log1p":                      # torch's vectorized log1p gives NaN for subnormal z
        keep = ~np.isnan(want) | ~np.isfinite(z)
        assert np.isfinite(got.numpy()[~keep]).all()
    # exp2: torch computes exp(z ln 2), whose magnitude carries |x ln 2| ulps of its own error
    ulps = {"exp2": 64}.get(op, 8)
    if op == "acos":                       # torch's vectorized loop takes pi/2 - asin(z), whose
        w = want.astype(np.complex128)     # real part has an absolute error of ulps of pi/2:
        keep &= ~np.isfinite(w) | (np.abs(w) > 0.5)     # a small result (z near 1) against NumPy
    # acos and log1p: torch's vectorized loops give a real z a result with imaginary part +0
    # (acos: +0 - asin(z)), where C99 (NumPy, cmath, torch on a 0-dim tensor) and torchlite keep
    # the sign the formula gives (-0 above the real axis for acos; y's sign for log1p): those
    # signs are checked against NumPy below and in test_inverse_functions_on_the_branch_cuts
    _check_against(got.numpy()[keep], want[keep], dtype, ulps, f"{op} vs torch",
                   zero_signs=(True, op not in ("acos", "log1p")))
    npf = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
           "acosh": np.arccosh, "atanh": np.arctanh, "log1p": np.log1p, "exp2": np.exp2}.get(op)
    if npf is not None:
        with np.errstate(all="ignore"):
            ref = npf(z)
        fin = np.isfinite(ref) & (np.abs(z) < (1e10 if dtype is tl.complex64 else 1e100))
        if op == "log1p":                  # NumPy's log1p loses the small part near |1 + z| = 1
            fin &= np.abs(np.abs(1 + z.astype(np.complex128)) - 1) > 0.1
        _check_against(got.numpy()[fin], ref[fin], dtype, 16 if op != "exp2" else 64, f"{op} vs NumPy")


def test_inverse_functions_on_the_branch_cuts():
    """C99's (and PyTorch's) values on the cuts: a signed zero picks the side."""
    z = np.array([complex(2, 0.0), complex(2, -0.0), complex(-2, 0.0), complex(-2, -0.0),
                  complex(0.0, 2), complex(-0.0, 2), complex(0.0, -2), complex(-0.0, -2)])
    t = tl.from_numpy(z)
    a2 = np.arccosh(2.0)
    hp = np.pi / 2
    np.testing.assert_allclose(tl.asin(t).numpy()[:4], [hp + 1j * a2, hp - 1j * a2, -hp + 1j * a2, -hp - 1j * a2])
    np.testing.assert_allclose(tl.acos(t).numpy()[:4], [-1j * a2, 1j * a2, np.pi - 1j * a2, np.pi + 1j * a2],
                               atol=1e-15)
    np.testing.assert_allclose(tl.asinh(t).numpy()[4:], [a2 + 1j * hp, -a2 + 1j * hp, a2 - 1j * hp, -a2 - 1j * hp])
    at = np.arctanh(0.5)                   # atanh(2) = atanh(1/2) +- i pi/2
    np.testing.assert_allclose(tl.atanh(t).numpy()[:4], [at + 1j * hp, at - 1j * hp, -at + 1j * hp, -at - 1j * hp])
    np.testing.assert_allclose(tl.atan(t).numpy()[4:], [hp + 1j * at, -hp + 1j * at, hp - 1j * at, -hp - 1j * at])
    ac = tl.acosh(t).numpy()
    np.testing.assert_allclose(ac[2:4], [a2 + 1j * np.pi, a2 - 1j * np.pi])
    assert (ac.real >= 0).all()
    lp = tl.log1p(t).numpy()               # log1p's cut: x < -1
    np.testing.assert_allclose(lp[2:4], [np.log(1) + 1j * np.pi, np.log(1) - 1j * np.pi])
    # on [-1, 1] the zero imaginary part of acos is -0 above the axis, +0 below (C99: acos(conj z)
    # = conj(acos z)), and log1p keeps y's sign (NumPy's values)
    r = np.array([complex(0.5, 0.0), complex(0.5, -0.0), complex(0.25, -0.0), complex(1e-9, -0.0)])
    for op, npf in (("acos", np.arccos), ("log1p", np.log1p), ("asin", np.arcsin), ("atanh", np.arctanh)):
        got = getattr(tl, op)(tl.from_numpy(r)).numpy()
        np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(npf(r).imag), err_msg=op)
        np.testing.assert_array_equal(np.signbit(got.real), np.signbit(npf(r).real), err_msg=op)


@needs_torch
@pytest.mark.parametrize("dtype", CDTYPES)
def test_special_values_match_torch(dtype):
    """Infinities, NaNs and zeros in either part: C99 Annex G's values, as torch gives them."""
    parts = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, np.inf, -np.inf, np.nan]
    z = np.array([complex(a, b) for a in parts for b in parts], NP[dtype])
    t, zt = tl.from_numpy(z), torch.from_numpy(z)
    for op in INVERSE_OPS:
        got, want = getattr(tl, op)(t).numpy(), getattr(torch, op)(zt).numpy()
        if op in ("expm1", "log1p"):
            # where a part is infinite or NaN torch's expm1 (expm1(x) cos y - 2 sin^2(y/2),
            # exp(x) sin y) and log1p are not exp(z) - 1 and log(1 + z): torchlite is, and the
            # C99 values of torch's exp and log
            keep = np.isfinite(z)
            ref = torch.exp(zt) - 1 if op == "expm1" else torch.log(1 + zt)
            _check_against(got[~keep], ref.numpy()[~keep], dtype, 4, f"{op} special values as exp / log",
                           zero_signs=(True, False))          # (1 + z drops the sign of a zero)
            got, want = got[keep], want[keep]
        _check_against(got, want, dtype, 4, f"{op} special values", zero_signs=(True, op != "acos"))


def test_expm1_and_exp2_keep_the_small_part_and_avoid_spurious_overflow():
    z = np.array([1e-20 + 1e-20j, -1e-12 + 2e-6j, 1e-300 + 0j, complex(3e-8, -0.0)])
    got = tl.expm1(tl.from_numpy(z)).numpy()
    want = np.array([_mp_expm1(v) for v in z])
    np.testing.assert_allclose(got, want, rtol=4e-16, atol=0)
    assert np.signbit(got[3].imag)
    # 2^(iy) = cos(y ln 2) + i sin(y ln 2) for the y given: y ln 2 carried to twice the precision
    # (torch rounds it first: errors of |y| ulps), and on the unit circle for any y
    mp = pytest.importorskip("mpmath")
    y = np.array([1e3, -7.25e5, 3.3e8, 1e12])
    got = tl.exp2(tl.from_numpy(1j * y)).numpy()
    with mp.workprec(200):
        want = np.array([complex(mp.power(2, mp.mpc(0, v))) for v in y])
    np.testing.assert_allclose(got, want, rtol=4e-16, atol=4e-16)
    for dt, huge in ((tl.complex128, 1e300), (tl.complex64, 1e37)):
        r = tl.exp2(tl.tensor([huge * 1j, -huge * 1j, 0.5 - huge * 1j], dtype=dt)).abs().numpy()
        np.testing.assert_allclose(r, [1, 1, 2 ** 0.5], rtol=1e-6)
    big = tl.expm1(tl.tensor([710 + 1.5707j], dtype=tl.complex128)).numpy()[0]   # exp(710) overflows
    np.testing.assert_allclose(big.real, np.exp(355) * np.cos(1.5707) * np.exp(355), rtol=1e-13)
    assert np.isinf(big.imag)
    np.testing.assert_allclose(tl.exp2(tl.tensor([10 + 0j, -3 + 0.5j], dtype=tl.complex128)).numpy(),
                               [1024, 2 ** -3 * np.exp(0.5j * np.log(2))], rtol=1e-15)


def _mp_expm1(v):
    mp = pytest.importorskip("mpmath")
    with mp.workprec(120):
        return complex(mp.expm1(mp.mpc(v.real, v.imag)))


def test_log1p_near_the_unit_circle_keeps_its_real_part():
    """|1 + z| = 1 + tiny: log|1 + z| is tiny while 2x + x^2 + y^2 cancels (the sum is formed
    without that cancellation)."""
    mp = pytest.importorskip("mpmath")
    rng = np.random.default_rng(3)
    th = rng.uniform(-1, 1, 200)
    z = np.exp(1j * th) * (1 + rng.uniform(-1e-9, 1e-9, 200)) - 1
    got = tl.log1p(tl.from_numpy(z)).numpy()
    with mp.workprec(150):
        want = np.array([complex(mp.log(1 + mp.mpc(v.real, v.imag))) for v in z])
    np.testing.assert_allclose(got.real, want.real, rtol=1e-14, atol=0)
    np.testing.assert_allclose(got.imag, want.imag, rtol=1e-15, atol=0)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_inverse_functions_in_place_out_aliases_and_methods(dtype):
    z = crandn(3, 4, dtype=NP[dtype], seed=13)
    for op in INVERSE_OPS + tuple(ALIASES):
        base = ALIASES.get(op, op)
        want = getattr(tl, base)(tl.from_numpy(z)).numpy()
        got = getattr(tl, op)(tl.from_numpy(z))
        np.testing.assert_array_equal(got.numpy(), want)
        out = tl.empty((3, 4), dtype=dtype)
        assert getattr(tl, op)(tl.from_numpy(z), out=out) is out
        np.testing.assert_array_equal(out.numpy(), want)
        np.testing.assert_array_equal(getattr(tl.from_numpy(z), op)().numpy(), want)
        t = tl.from_numpy(z.copy())
        assert getattr(t, op + "_")() is t
        np.testing.assert_array_equal(t.numpy(), want)
        t = tl.from_numpy(z.copy())
        assert getattr(tl, op + "_")(t) is t
        np.testing.assert_array_equal(t.numpy(), want)
    out = tl.empty((3, 4), dtype=tl.complex128)       # a wider out= takes the result cast
    tl.asin(tl.from_numpy(z), out=out)
    np.testing.assert_allclose(out.numpy(), tl.asin(tl.from_numpy(z)).numpy())
    with pytest.raises(RuntimeError, match="can't be cast"):
        tl.asin(tl.from_numpy(z), out=tl.empty((3, 4), dtype=dtype.to_real()))
    np.testing.assert_allclose(tl.special.expm1(tl.from_numpy(z)).numpy(), tl.expm1(tl.from_numpy(z)).numpy())


# points away from the branch cuts (finite differences straddle no cut), one per quadrant
_GRAD_POINTS = np.array([0.3 + 0.4j, -0.7 + 0.2j, -0.4 - 0.9j, 0.8 - 0.3j, 1.7 + 0.6j, -1.6 - 0.5j])


@pytest.mark.parametrize("op", INVERSE_OPS)
def test_inverse_function_gradients_pass_gradcheck(op):
    z = tl.tensor(_GRAD_POINTS, requires_grad=True)
    assert tl.autograd.gradcheck(getattr(tl, op), (z,))
    assert tl.autograd.gradcheck(lambda z: getattr(tl, op)(z).abs().sum(), (z,))
    if op in ("acosh", "log1p"):
        assert tl.autograd.gradgradcheck(getattr(tl, op), (z,))


@needs_torch
@pytest.mark.parametrize("op", INVERSE_OPS)
def test_inverse_function_gradients_match_torch(op):
    """Reverse mode (PyTorch's convention: g * conj(f'(z))) and forward mode (f'(z) t)."""
    import torchlite.autograd.forward_ad as fwAD
    v = crandn(6, seed=14)
    z, zt = tl.tensor(_GRAD_POINTS, requires_grad=True), torch.tensor(_GRAD_POINTS, requires_grad=True)
    g, = tl.autograd.grad(getattr(tl, op)(z), z, tl.tensor(v))
    gt, = torch.autograd.grad(getattr(torch, op)(zt), zt, torch.tensor(v))
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=1e-12, atol=1e-14)
    with fwAD.dual_level():
        jvp = fwAD.unpack_dual(getattr(tl, op)(fwAD.make_dual(tl.tensor(_GRAD_POINTS), tl.tensor(v)))).tangent
    _, jvpt = torch.func.jvp(getattr(torch, op), (torch.tensor(_GRAD_POINTS),), (torch.tensor(v),))
    np.testing.assert_allclose(jvp.numpy(), jvpt.numpy(), rtol=1e-12, atol=1e-14)


@needs_torch
@pytest.mark.parametrize("dtype", CDTYPES)
def test_nan_to_num_replaces_each_part(dtype):
    z = np.array([complex(np.nan, np.inf), complex(-np.inf, np.nan), complex(1.5, -np.inf),
                  complex(np.inf, 2), 3 - 4j, complex(np.nan, np.nan)], NP[dtype])
    zt = torch.from_numpy(z)
    for kw in ({}, dict(nan=1.5), dict(nan=-2.0, posinf=7.0, neginf=-9.5), dict(posinf=1e30)):
        want = torch.nan_to_num(zt, **kw).numpy()
        np.testing.assert_array_equal(tl.nan_to_num(tl.from_numpy(z), **kw).numpy(), want)
        t = tl.from_numpy(z.copy())
        assert t.nan_to_num_(**kw) is t
        np.testing.assert_array_equal(t.numpy(), want)
        out = tl.empty(6, dtype=dtype)
        tl.nan_to_num(tl.from_numpy(z), out=out, **kw)
        np.testing.assert_array_equal(out.numpy(), want)
    # the defaults are the largest and smallest values of the parts' dtype
    assert tl.nan_to_num(tl.from_numpy(z)).numpy()[0].imag == np.finfo(NP[dtype]().real.dtype).max
    # PyTorch defines no derivative of nan_to_num for complex outputs, and says so
    with pytest.raises(RuntimeError, match="does not support automatic differentiation"):
        tl.nan_to_num(tl.from_numpy(z).requires_grad_())
    with pytest.raises(RuntimeError, match="does not support automatic differentiation"):
        torch.nan_to_num(zt.clone().requires_grad_())
    with tl.no_grad():
        tl.nan_to_num(tl.from_numpy(z).requires_grad_())


@needs_torch
def test_logical_not_of_complex_matches_torch():
    z = np.array([0j, 1j, complex(0.0, -0.0), complex(np.nan, 0), 2 + 0j], np.complex64)
    np.testing.assert_array_equal(tl.logical_not(tl.from_numpy(z)).numpy(),
                                  torch.logical_not(torch.from_numpy(z)).numpy())


@needs_torch
def test_ops_torch_refuses_for_complex_raise_too():
    """Ops PyTorch does not define for complex input raise rather than drop the imaginary part."""
    z = tl.tensor([1 + 2j, -3j])
    zt = torch.tensor([1 + 2j, -3j])
    for name, exc in (("digamma", NotImplementedError), ("deg2rad", RuntimeError), ("rad2deg", RuntimeError),
                      ("deg2rad_", RuntimeError), ("abs_", RuntimeError)):
        with pytest.raises(exc):
            getattr(zt.clone(), name)()
        with pytest.raises(exc):
            getattr(z.clone(), name)()
    with pytest.raises(NotImplementedError, match="\"digamma\" not implemented for 'ComplexFloat'"):
        tl.special.digamma(z)


@needs_torch
@pytest.mark.parametrize("dtype", CDTYPES)
def test_sinc_of_complex_matches_torch(dtype):
    """sin(pi z) / (pi z), and 1 at 0 (before: the imaginary part was dropped)."""
    z = np.concatenate([crandn(12, dtype=NP[dtype], seed=15) * 2,
                        np.array([0, complex(0.0, -0.0), 1e-20 + 1e-20j, 1e-3j, -1e-7 + 1e-7j, 1e-30, 2, 1.5j,
                                  3 - 1j], NP[dtype])])
    got = tl.sinc(tl.from_numpy(z))
    assert got.dtype is dtype
    want = torch.sinc(torch.from_numpy(z)).numpy()
    _check_against(got.numpy(), want, dtype, 16, "sinc")
    assert got.numpy()[12] == 1 and got.numpy()[13] == 1
    t = tl.from_numpy(z.copy())
    assert t.sinc_() is t
    np.testing.assert_array_equal(t.numpy(), got.numpy())
    out = tl.empty(len(z), dtype=dtype)
    tl.special.sinc(tl.from_numpy(z), out=out)
    np.testing.assert_array_equal(out.numpy(), got.numpy())
    # gradients against torch, a zero included (its gradient is 0), and gradcheck
    zg = np.array([0.3 + 0.4j, -1.2 + 0.5j, 0j, 2 - 1j])
    v = crandn(4, seed=16)
    x, xt = tl.tensor(zg, requires_grad=True), torch.tensor(zg, requires_grad=True)
    g, = tl.autograd.grad(tl.sinc(x), x, tl.tensor(v))
    gt, = torch.autograd.grad(torch.sinc(xt), xt, torch.tensor(v))
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=1e-12, atol=1e-14)
    assert tl.autograd.gradcheck(tl.sinc, (tl.tensor(zg[[0, 1, 3]], requires_grad=True),))


# ---- add / sub with a complex alpha ------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("dtype", CDTYPES)
def test_add_sub_with_complex_alpha_match_torch(dtype):
    a, b = crandn(3, 4, dtype=NP[dtype], seed=17), crandn(4, dtype=NP[dtype], seed=18)
    real = np.random.default_rng(19).standard_normal(4).astype(NP[dtype]().real.dtype)
    tol = TOL[dtype]
    cases = [
        lambda m, x, y, r: m.add(x, y, alpha=2 - 1j),
        lambda m, x, y, r: m.sub(x, y, alpha=0.5j),
        lambda m, x, y, r: m.subtract(x, y, alpha=-1 + 3j),
        lambda m, x, y, r: m.rsub(x, y, alpha=1 - 1j),
        lambda m, x, y, r: x.add(y, alpha=1j),
        lambda m, x, y, r: x.sub(y, alpha=2 + 0j),
        lambda m, x, y, r: m.add(x, r, alpha=1 + 2j),            # a real tensor joins
        lambda m, x, y, r: m.add(r, y, alpha=-2j),               # complex result from a real self
        lambda m, x, y, r: m.add(x, 2 + 1j, alpha=3 - 1j),       # a number other
        lambda m, x, y, r: m.add(r, 2 + 1j, alpha=3 - 1j),
        lambda m, x, y, r: m.add(x, y, alpha=1 + 0j),
    ]
    for k, f in enumerate(cases):
        got = f(tl, tl.from_numpy(a), tl.from_numpy(b), tl.from_numpy(real))
        want = f(torch, torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(real))
        assert got.dtype.name == str(want.dtype).split(".")[1], k
        np.testing.assert_allclose(got.numpy(), want.numpy(), **tol, err_msg=str(k))
    # in place and out=
    t, tt = tl.from_numpy(a.copy()), torch.from_numpy(a.copy())
    t.add_(tl.from_numpy(b), alpha=2 - 1j).sub_(tl.from_numpy(b), alpha=0.25j)
    tt.add_(torch.from_numpy(b), alpha=2 - 1j).sub_(torch.from_numpy(b), alpha=0.25j)
    np.testing.assert_allclose(t.numpy(), tt.numpy(), **tol)
    out = tl.empty((3, 4), dtype=dtype)
    assert tl.add(tl.from_numpy(a), tl.from_numpy(b), alpha=-1j, out=out) is out
    np.testing.assert_allclose(out.numpy(), a - 1j * b, **tol)
    np.testing.assert_allclose(tl.sub(tl.from_numpy(a), tl.from_numpy(b), alpha=1 + 1j, out=out).numpy(),
                               a - (1 + 1j) * b, **tol)


@needs_torch
def test_complex_alpha_is_refused_for_real_results_as_in_torch():
    """PyTorch's alpha_check: a complex alpha needs a complex result (its RuntimeError and
    message, whatever alpha's value; an integer result gets the floating-point message)."""
    calls = (lambda m, x: m.add(x, x, alpha=2 - 1j), lambda m, x: m.sub(x, x, alpha=1j),
             lambda m, x: x.add_(x, alpha=1 + 0j), lambda m, x: x.sub_(x, alpha=-1j),
             lambda m, x: m.add(x, 2, alpha=1j), lambda m, x: m.add(x, x, alpha=1.0 + 0j),
             lambda m, x: m.rsub(x, x, alpha=0.5j))
    for dt in ("float32", "float64", "int64", "uint8", "bool"):
        for call in calls:
            with pytest.raises(RuntimeError) as want:
                call(torch, torch.ones(3, dtype=getattr(torch, dt)))
            with pytest.raises(RuntimeError) as got:
                call(tl, tl.ones(3, dtype=getattr(tl, dt)))
            assert str(got.value) == str(want.value), dt
    # a floating-point alpha with an integer result: PyTorch's other message
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a floating"):
        tl.add(tl.ones(2, dtype=tl.int64), tl.ones(2, dtype=tl.int64), alpha=1.0)
    assert tl.add(tl.ones(2, dtype=tl.int64), 2.5, alpha=2.0).tolist() == [6.0, 6.0]   # a float result


@needs_torch
def test_complex_alpha_gradients_match_torch():
    """d/db of a + alpha b is g conj(alpha) in PyTorch's convention (the saved operands and
    alpha are conjugated alike); forward mode takes alpha as it is."""
    import torchlite.autograd.forward_ad as fwAD
    a0, b0, r0 = crandn(3, seed=20), crandn(3, seed=21), np.array([0.5, -1.0, 2.0])
    v = crandn(3, seed=22)
    for alpha in (2 - 1j, 0.5j, -1.5 + 0j, 2.0):
        for op in ("add", "sub", "rsub"):
            a, b, r = (tl.tensor(x, requires_grad=True) for x in (a0, b0, r0))
            at, bt, rt = (torch.tensor(x, requires_grad=True) for x in (a0, b0, r0))
            out = getattr(tl, op)(a, b, alpha=alpha) + getattr(tl, op)(a, r, alpha=alpha)
            outt = getattr(torch, op)(at, bt, alpha=alpha) + getattr(torch, op)(at, rt, alpha=alpha)
            gs = tl.autograd.grad(out, (a, b, r), tl.tensor(v))
            gts = torch.autograd.grad(outt, (at, bt, rt), torch.tensor(v))
            for g, gt in zip(gs, gts):
                assert g.dtype.name == str(gt.dtype).split(".")[1]
                np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=1e-14, atol=1e-15, err_msg=f"{op} {alpha}")
            assert tl.autograd.gradcheck(lambda a, b: getattr(tl, op)(a, b, alpha=alpha),
                                         (tl.tensor(a0, requires_grad=True), tl.tensor(b0, requires_grad=True)))
    # in place, through the graph
    a, b = tl.tensor(a0, requires_grad=True), tl.tensor(b0, requires_grad=True)
    at, bt = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    g, = tl.autograd.grad((a * 1).add_(b, alpha=1 - 2j), b, tl.tensor(v))
    gt, = torch.autograd.grad((at * 1).add_(bt, alpha=1 - 2j), bt, torch.tensor(v))
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=1e-14)
    np.testing.assert_allclose(g.numpy(), v * np.conj(1 - 2j), rtol=1e-14)
    # forward mode: the tangent of a + alpha b is t_a + alpha t_b
    ta, tb = crandn(3, seed=23), crandn(3, seed=24)
    with fwAD.dual_level():
        y = tl.add(fwAD.make_dual(tl.tensor(a0), tl.tensor(ta)), fwAD.make_dual(tl.tensor(b0), tl.tensor(tb)),
                   alpha=2 - 1j)
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), ta + (2 - 1j) * tb, rtol=1e-14)


# ---- views of the parts -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", CDTYPES)
def test_real_imag_views_write_through(dtype):
    a = crandn(3, 4, dtype=NP[dtype])
    t = tl.from_numpy(a.copy())
    np.testing.assert_array_equal(t.real.numpy(), a.real)
    np.testing.assert_array_equal(t.imag.numpy(), a.imag)
    assert t.real.dtype is dtype.to_real()
    t.imag[0] = 5                                  # writes through to t
    t.real = tl.zeros(3, 4, dtype=dtype.to_real())
    assert t[0, 1].item() == 5j and t[1, 1].item() == 1j * a[1, 1].imag
    r = tl.view_as_real(t)
    assert r.shape == (3, 4, 2) and r.stride() == (8, 2, 1)
    r[2, 3, 0] = 9
    assert t[2, 3].item().real == 9
    back = tl.view_as_complex(r)
    assert back.dtype is dtype and back.data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(tl.view_as_real(t.t()).numpy(),
                                  np.stack([t.numpy().T.real, t.numpy().T.imag], -1))
    assert tl.real(tl.ones(2)).tolist() == [1.0, 1.0]        # a real tensor is its own real
    with pytest.raises(RuntimeError, match="imag"):
        tl.imag(tl.ones(2))
    with pytest.raises(RuntimeError, match="complex"):
        tl.view_as_real(tl.ones(2))
    with pytest.raises(RuntimeError, match="size 2"):
        tl.view_as_complex(tl.ones(3, 3))
    with pytest.raises(RuntimeError, match="stride 1"):
        tl.view_as_complex(tl.ones(2, 3).t())
    with pytest.raises(RuntimeError, match="float and double"):
        tl.view_as_complex(tl.ones(3, 2, dtype=tl.int32))


def test_complex_and_polar():
    re, im = np.array([1.0, -2.0, 0.5]), np.array([0.0, 3.0, -1.5])
    z = tl.complex(tl.from_numpy(re), tl.from_numpy(im))
    assert z.dtype is tl.complex128
    np.testing.assert_array_equal(z.numpy(), re + 1j * im)
    p = tl.polar(tl.tensor([2.0, 1.0]), tl.tensor([0.5, -3.0]))
    np.testing.assert_allclose(p.numpy(), np.array([2.0, 1.0]) * np.exp(1j * np.array([0.5, -3.0])),
                               rtol=1e-6)
    with pytest.raises(RuntimeError):
        tl.complex(tl.ones(2), tl.ones(2, dtype=tl.float64))


# ---- reductions, products, joining, indexing ---------------------------------------------------
@pytest.mark.parametrize("dtype", CDTYPES)
def test_sum_mean_norm(dtype):
    a = crandn(3, 4, 5, dtype=NP[dtype])
    t = tl.from_numpy(a)
    tol = dict(rtol=1e-5 if dtype is tl.complex64 else 1e-12)
    np.testing.assert_allclose(t.sum().item(), a.sum(), **tol)
    np.testing.assert_allclose(t.sum((0, 2)).numpy(), a.sum((0, 2)), **tol)
    np.testing.assert_allclose(t.mean(-1, keepdim=True).numpy(), a.mean(-1, keepdims=True), **tol)
    np.testing.assert_allclose(t.permute(2, 0, 1).sum(1).numpy(), a.transpose(2, 0, 1).sum(1), **tol)
    assert tl.tensor(1 + 1j).sum().item() == 1 + 1j
    np.testing.assert_allclose(t.cumsum(1).numpy(), a.cumsum(1), **tol)
    np.testing.assert_allclose(t.prod().item(), a.prod(), **tol)
    np.testing.assert_allclose(t.prod(1).numpy(), a.prod(1), **tol)
    np.testing.assert_allclose(t.prod(-1, keepdim=True).numpy(), a.prod(-1, keepdims=True), **tol)
    assert tl.zeros(0, dtype=dtype).prod().item() == 1
    np.testing.assert_allclose(t.transpose(0, 2).cumsum(-1).numpy(), a.transpose(2, 1, 0).cumsum(-1),
                               **tol)
    n = tl.linalg.vector_norm(t)
    assert n.dtype is dtype.to_real()
    np.testing.assert_allclose(n.item(), np.linalg.norm(a.ravel()), **tol)
    np.testing.assert_allclose(tl.linalg.vector_norm(t, 1, dim=0).numpy(), np.abs(a).sum(0), **tol)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_products(dtype):
    tol = dict(rtol=1e-4, atol=1e-5) if dtype is tl.complex64 else dict(rtol=1e-12, atol=1e-12)
    A, B = crandn(2, 3, 4, dtype=NP[dtype], seed=5), crandn(2, 4, 6, dtype=NP[dtype], seed=6)
    a, b = tl.from_numpy(A), tl.from_numpy(B)
    np.testing.assert_allclose((a @ b).numpy(), A @ B, **tol)
    np.testing.assert_allclose(tl.bmm(a, b).numpy(), A @ B, **tol)
    np.testing.assert_allclose(tl.mm(a[0], b[0]).numpy(), A[0] @ B[0], **tol)
    np.testing.assert_allclose(a[0].mv(b[0, :, 0]).numpy(), A[0] @ B[0, :, 0], **tol)
    np.testing.assert_allclose(tl.dot(a[0, 0], b[0, :, 0]).item(), A[0, 0] @ B[0, :, 0], **tol)
    np.testing.assert_allclose(tl.vdot(a[0, 0], b[0, :, 0]).item(),
                               np.vdot(A[0, 0], B[0, :, 0]), **tol)
    np.testing.assert_allclose(tl.einsum("bij,bjk->bik", a, b).numpy(), A @ B, **tol)
    np.testing.assert_allclose(tl.linalg.vecdot(a[0], a[1]).numpy(),
                               (A[0].conj() * A[1]).sum(-1), **tol)
    np.testing.assert_allclose(tl.addmm(a[0, :, :3], a[0], b[0, :, :3], beta=2, alpha=0.5).numpy(),
                               2 * A[0, :, :3] + 0.5 * A[0] @ B[0, :, :3], **tol)
    np.testing.assert_allclose((a.mT @ a.conj()).numpy(), A.transpose(0, 2, 1) @ A.conj(), **tol)
    # complex alpha and beta, as PyTorch takes them for complex operands
    c = a[0, :, :3]
    np.testing.assert_allclose(tl.addmm(c, a[0], b[0, :, :3], beta=2 - 1j, alpha=0.5j).numpy(),
                               (2 - 1j) * A[0, :, :3] + 0.5j * A[0] @ B[0, :, :3], **tol)
    np.testing.assert_allclose(tl.baddbmm(a[:, :, :3], a, b[:, :, :3], beta=1j, alpha=-2j).numpy(),
                               1j * A[:, :, :3] - 2j * A @ B[:, :, :3], **tol)
    np.testing.assert_allclose(tl.addmv(a[0, :, 0], a[0], b[0, :, 0], alpha=1 + 1j).numpy(),
                               A[0, :, 0] + (1 + 1j) * A[0] @ B[0, :, 0], **tol)
    np.testing.assert_allclose(c.clone().addmm_(a[0], b[0, :, :3], beta=0, alpha=3j).numpy(),
                               3j * A[0] @ B[0, :, :3], **tol)
    with pytest.raises(RuntimeError, match="complex scalar needs complex operands"):
        tl.addmm(c.real, a[0].real, b[0, :, :3].real, alpha=1j)


def test_joining_and_indexing():
    A = crandn(4, 3)
    t = tl.from_numpy(A)
    np.testing.assert_array_equal(tl.cat([t, t]).numpy(), np.concatenate([A, A]))
    np.testing.assert_array_equal(tl.stack([t, t], 1).numpy(), np.stack([A, A], 1))
    idx = np.array([3, 0, 3])
    np.testing.assert_array_equal(t[tl.from_numpy(idx)].numpy(), A[idx])
    np.testing.assert_array_equal(t[t.real > 0].numpy(), A[A.real > 0])
    np.testing.assert_array_equal(t.gather(1, tl.tensor([[0], [2], [1], [0]])).numpy(),
                                  np.take_along_axis(A, np.array([[0], [2], [1], [0]]), 1))
    acc = tl.zeros(4, 3, dtype=tl.complex128)
    acc.index_put_((tl.from_numpy(idx),), tl.from_numpy(A[:3]), accumulate=True)
    want = np.zeros_like(A)
    np.add.at(want, idx, A[:3])
    np.testing.assert_allclose(acc.numpy(), want)
    sa = tl.zeros(4, 3, dtype=tl.complex128).scatter_add(0, tl.tensor([[1, 2, 3], [1, 0, 0]]), t[:2])
    want = np.zeros_like(A)
    for i, row in enumerate([[1, 2, 3], [1, 0, 0]]):
        for j, r in enumerate(row):
            want[r, j] += A[i, j]
    np.testing.assert_allclose(sa.numpy(), want)
    ia = tl.zeros(4, 3, dtype=tl.complex128).index_add(0, tl.tensor([2, 2]), t[:2], alpha=2)
    want = np.zeros_like(A)
    want[2] = 2 * (A[0] + A[1])
    np.testing.assert_allclose(ia.numpy(), want)
    t2 = t.clone()
    t2[1] = 5j
    t2[:, 0] = 1
    assert t2[1, 1].item() == 5j and t2[2, 0].item() == 1
    t2.masked_fill_(t2.real > 100, 2j)


# ---- autograd ---------------------------------------------------------------------------------
def _fd_grad(f, z, eps=1e-6):
    """dL/dx + i dL/dy of the real function f at complex128 z, by central differences."""
    g = np.zeros_like(z)
    for k in range(z.size):
        for unit in (1, 1j):
            zp, zm = z.copy(), z.copy()
            zp.flat[k] += eps * unit
            zm.flat[k] -= eps * unit
            d = (f(zp) - f(zm)) / (2 * eps)
            g.flat[k] += d * unit
    return g


GRAD_CASES = {
    "abs_mul": lambda z: (z * z).abs().sum(),
    "exp_angle": lambda z: (z.exp() * z).angle().sum(),
    "div_sgn": lambda z: (z / (z + 2)).sgn().real.sum(),
    "log_sqrt_tanh": lambda z: z.tanh().sqrt().log().abs().sum(),
    "pow": lambda z: (z ** 2.5).abs().sum() + (z ** z).real.sum(),
    "conj_imag": lambda z: (z.conj() * 1j).imag.sum() + (z * z.conj()).real.sum(),
    "trig": lambda z: (z.sin() + z.cos() * z.sinh() - z.cosh() / (z.tan() + 3)).abs().sum(),
    "sigmoid_recip": lambda z: z.sigmoid().reciprocal().square().rsqrt().abs().sum(),
    "views": lambda z: (tl.view_as_real(z * z) ** 3).sum() if isinstance(z, tl.Tensor)
    else (torch.view_as_real(z * z) ** 3).sum(),
    "matmul": lambda z: (z @ z.mT).abs().sum() + (z.mT @ z.conj()).angle().sum(),
    "reduce_norm": lambda z: (z.sum(0) * z.mean(1)[:2]).abs().sum() + z.norm()
    + z.cumsum(0).angle().sum() + z.prod(0).abs().sum() + z.prod().real,
    "index": lambda z: (z[[0, 0, 1]] * z[:, 1:2].exp()).real.sum(),
    "complex_polar": lambda z: (z * (z.real * 2 + z.imag ** 2)).abs().sum(),
    "ternary": lambda z: (z.addcmul(z, z.exp(), value=0.5) + z.addcdiv(z, z + 3)
                          + z.lerp(z * z, 0.7) + z.lerp(z * z, z.sin())).abs().sum(),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_against_finite_differences(case):
    f = GRAD_CASES[case]
    z0 = crandn(3, 2, seed=7) * 0.8 + 0.3
    z = tl.tensor(z0, requires_grad=True)
    f(z).backward()

    def loss(v):
        with tl.no_grad():
            return f(tl.tensor(v)).item()
    np.testing.assert_allclose(z.grad.numpy(), _fd_grad(loss, z0), rtol=1e-5, atol=1e-7)


@needs_torch
@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_match_torch(case):
    f = GRAD_CASES[case]
    z0 = crandn(3, 2, seed=8) * 0.8 + 0.3
    z, zt = tl.tensor(z0, requires_grad=True), torch.tensor(z0, requires_grad=True)
    f(z).backward()
    f(zt).backward()
    np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_real_inputs_get_real_gradients():
    x = tl.tensor([0.5, -1.5], dtype=tl.float64, requires_grad=True)
    w = tl.tensor([1 + 2j, -1j], dtype=tl.complex128)
    (x * w).abs().sum().backward()
    assert x.grad.dtype is tl.float64
    np.testing.assert_allclose(x.grad.numpy(), np.sign([0.5, -1.5]) * np.abs([1 + 2j, -1j]))
    y = tl.tensor([1.0, 2.0], requires_grad=True)
    tl.complex(y, y * 2).abs().sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [np.sqrt(5)] * 2, rtol=1e-6)


def test_backward_needs_a_real_scalar():
    z = tl.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="real scalar"):
        z.sum().backward()
    z.sum().backward(tl.tensor(1 + 0j))          # an explicit gradient is fine
    assert z.grad.tolist() == [1 + 0j]


# ---- serialization and DLPack ------------------------------------------------------------------
def test_save_load_round_trip(tmp_path):
    t = tl.from_numpy(crandn(3, 2, dtype=np.complex64))
    p = tmp_path / "c.pt"
    tl.save({"z": t, "w": t.double() if False else t.to(tl.complex128)}, p)
    d = tl.load(p)
    assert d["z"].dtype is tl.complex64 and d["w"].dtype is tl.complex128
    np.testing.assert_array_equal(d["z"].numpy(), t.numpy())


@needs_torch
def test_checkpoints_interchange_with_torch(tmp_path):
    z = crandn(2, 3)
    buf = io.BytesIO()
    torch.save({"a": torch.tensor(z), "b": torch.tensor(z, dtype=torch.complex64)}, buf)
    buf.seek(0)
    d = tl.load(buf)
    np.testing.assert_array_equal(d["a"].numpy(), z)
    assert d["b"].dtype is tl.complex64
    p = tmp_path / "t.pt"
    tl.save({"a": tl.from_numpy(z)}, p)
    back = torch.load(p, weights_only=True)
    assert back["a"].dtype == torch.complex128
    np.testing.assert_array_equal(back["a"].numpy(), z)


def test_dlpack_round_trip():
    z = crandn(2, 3, dtype=np.complex64)
    t = tl.from_numpy(z)
    np.testing.assert_array_equal(np.from_dlpack(t), z)
    back = tl.from_dlpack(np.ascontiguousarray(z))
    assert back.dtype is tl.complex64
    np.testing.assert_array_equal(back.numpy(), z)
    if torch is not None:
        tt = torch.from_dlpack(tl.from_numpy(crandn(2, 2)))
        assert tt.dtype == torch.complex128


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradcheck_and_gradgradcheck_take_complex_inputs(case):
    f = GRAD_CASES[case]
    z = tl.tensor(crandn(3, 2, seed=9) * 0.8 + 0.3, requires_grad=True)
    assert tl.autograd.gradcheck(f, (z,))
    if case not in ("views", "pow"):             # keep the slow second order to a few cases
        return
    assert tl.autograd.gradgradcheck(f, (z,))


def test_gradcheck_complex_outputs_and_mixed_inputs():
    z = tl.tensor(crandn(2, seed=10), requires_grad=True)
    x = tl.tensor([0.3, 0.7], dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(lambda z, x: (z * z * x).exp(), (z, x))
    assert tl.autograd.gradgradcheck(lambda z, x: (z * x).sin() * z.conj(), (z, x))

    class SquareWithoutConj(tl.autograd.Function):
        """z * z with the real-valued formula g * 2z: right for reals, wrong for complex
        (PyTorch's convention needs g * conj(2z)); gradcheck must catch it."""

        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            z, = ctx.saved_tensors
            return g * 2 * z

    assert tl.autograd.gradcheck(SquareWithoutConj.apply, (x,))
    assert not tl.autograd.gradcheck(SquareWithoutConj.apply, (z,), raise_exception=False)


# ---- linear algebra through the real embedding ---------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 4)])
def test_complex_svdvals_and_matrix_norms_against_numpy(shape):
    z = crandn(*shape, seed=6)
    t = tl.tensor(z)
    np.testing.assert_allclose(tl.linalg.svdvals(t).numpy(), np.linalg.svd(z, compute_uv=False),
                               rtol=1e-12, atol=1e-12)
    for ord in ("fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf):
        got = tl.linalg.matrix_norm(t, ord)
        assert got.dtype is tl.float64
        np.testing.assert_allclose(got.numpy(), np.linalg.norm(z, ord, axis=(-2, -1)),
                                   rtol=1e-12, err_msg=str(ord))
    np.testing.assert_allclose(tl.linalg.norm(t, "nuc", dim=(-2, -1), keepdim=True).numpy(),
                               np.linalg.norm(z, "nuc", axis=(-2, -1), keepdims=True), rtol=1e-12)
    c64 = tl.tensor(z.astype(np.complex64))
    assert tl.linalg.matrix_norm(c64, 2).dtype is tl.float32


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_complex_eigvalsh_reads_one_triangle(uplo):
    z = crandn(2, 4, 4, seed=7)
    h = z + np.conj(np.swapaxes(z, -1, -2))
    only = np.tril(h) if uplo == "L" else np.triu(h)
    only = only + 9j * np.eye(4)                  # the diagonal's imaginary parts are not read
    got = tl.linalg.eigvalsh(tl.tensor(only), uplo)
    np.testing.assert_allclose(got.numpy(), np.linalg.eigvalsh(h), rtol=1e-12, atol=1e-12)


def test_complex_spectra_with_repeated_values_have_the_complex_gradient():
    """The embedding has each value twice; both copies share the gradient, so a repeated value
    of the complex matrix gets the gradient of its whole space (U V^H, the projector)."""
    A = tl.eye(3, dtype=tl.complex128).requires_grad_()
    tl.linalg.matrix_norm(A, "nuc").backward()                 # d sum(s) = U V^H = I
    np.testing.assert_allclose(A.grad.numpy(), np.eye(3), atol=1e-12)
    q, _ = np.linalg.qr(crandn(3, 3, seed=10))
    H = tl.tensor(q @ np.diag([1.0, 1.0, 2.0]) @ q.conj().T, requires_grad=True)
    tl.linalg.eigvalsh(H).sum().backward()                     # d trace = I
    np.testing.assert_allclose(H.grad.numpy(), np.eye(3), atol=1e-10)
    # one of the two equal eigenvalues alone has no unique gradient (PyTorch gives v v^H for
    # whichever eigenvector LAPACK picked): here too, a Hermitian positive semidefinite
    # matrix of trace 1 inside that eigenvalue's eigenspace
    H.grad = None
    (tl.linalg.eigvalsh(H) * tl.tensor([1.0, 0.0, 0.0], dtype=tl.float64)).sum().backward()
    G, P = H.grad.numpy(), q[:, :2] @ q[:, :2].conj().T
    np.testing.assert_allclose(G, G.conj().T, atol=1e-10)
    np.testing.assert_allclose(np.trace(G), 1.0, atol=1e-10)
    np.testing.assert_allclose(P @ G, G, atol=1e-10)
    assert np.linalg.eigvalsh(G).min() > -1e-10


def test_complex_norm_gradients_against_finite_differences():
    z = tl.tensor(crandn(3, 2, seed=8), requires_grad=True)
    for fn in (lambda a: tl.linalg.matrix_norm(a, "nuc"), lambda a: tl.linalg.svdvals(a),
               lambda a: tl.linalg.matrix_norm(a, 2), lambda a: tl.linalg.matrix_norm(a, "fro")):
        assert tl.autograd.gradcheck(fn, (z,))


@needs_torch
def test_complex_linalg_gradients_match_torch():
    rng = np.random.default_rng(9)
    z = crandn(2, 4, 3, seed=9)
    h = z[:, :3] + np.conj(np.swapaxes(z[:, :3], -1, -2))
    w = rng.standard_normal(3)
    cases = [(z, lambda L, x: L.linalg.matrix_norm(x, "nuc").sum()),
             (z, lambda L, x: (L.linalg.svdvals(x) * L.tensor(w)).sum()),
             (z, lambda L, x: L.linalg.matrix_norm(x, 1).sum()),
             (h, lambda L, x: (L.linalg.eigvalsh(x) * L.tensor(w)).sum()),
             (np.triu(h), lambda L, x: (L.linalg.eigvalsh(x, "U") * L.tensor(w)).sum())]
    for value, fn in cases:
        a, b = tl.tensor(value, requires_grad=True), torch.tensor(value, requires_grad=True)
        fn(tl, a).backward()
        fn(torch, b).backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


# ---- complex32 (chalf): a storage type, computed in complex64 -----------------------------------
def _c32(z):
    """NumPy's oracle of a complex32 value: each part rounded to float16 (as complex64)."""
    z = np.asarray(z, np.complex64)
    return (z.real.astype(np.float16).astype(np.float32)
            + 1j * z.imag.astype(np.float16).astype(np.float32)).astype(np.complex64)


def _c32_values(t):
    assert t.dtype is tl.complex32
    return t.to(tl.complex64).numpy()


def test_complex32_dtype_and_promotion():
    assert tl.chalf is tl.complex32 and tl.complex32.itemsize == 4 and tl.complex32.is_complex
    assert tl.complex32.to_real() is tl.float16 and tl.float16.to_complex() is tl.complex32
    assert tl.bfloat16.to_complex() is tl.complex64           # no bfloat16 complex (PyTorch)
    expect = {tl.bool: tl.complex32, tl.uint8: tl.complex32, tl.int64: tl.complex32,
              tl.float16: tl.complex32, tl.bfloat16: tl.complex64, tl.float32: tl.complex64,
              tl.float64: tl.complex128, tl.complex64: tl.complex64,
              tl.complex128: tl.complex128, tl.complex32: tl.complex32}
    for d, r in expect.items():
        assert tl.promote_types(tl.complex32, d) is r and tl.promote_types(d, tl.complex32) is r
    h = tl.ones(2, dtype=tl.float16)
    assert (h * 1j).dtype is tl.complex32 and tl.complex(h, h).dtype is tl.complex32
    assert (tl.ones(2, dtype=tl.chalf) * 2.5).dtype is tl.complex32


def test_complex32_conversions_against_numpy():
    z = crandn(3, 4, dtype=np.complex64, seed=4) * 100
    c = tl.from_numpy(z).chalf()
    assert c.dtype is tl.complex32 and c.element_size() == 4 and c.is_complex()
    np.testing.assert_array_equal(_c32_values(c), _c32(z))
    np.testing.assert_array_equal(c.to(tl.float32).numpy(), _c32(z).real)      # the real part
    np.testing.assert_array_equal(c.to(tl.float16).numpy(), z.real.astype(np.float16))
    np.testing.assert_array_equal(c.to(tl.int32).numpy(), _c32(z).real.astype(np.int32))
    np.testing.assert_array_equal(c.to(tl.complex128).numpy(), _c32(z).astype(np.complex128))
    np.testing.assert_array_equal((c * 0).bool().numpy(), np.zeros((3, 4), bool))
    for d in (tl.bool, tl.uint8, tl.int64, tl.float16, tl.bfloat16, tl.float32, tl.float64):
        x = tl.arange(-3, 9).reshape(3, 4).to(d)
        np.testing.assert_array_equal(_c32_values(x.to(tl.complex32)),
                                      x.double().numpy().astype(np.complex64))
    v = tl.tensor([1.5 + 2j, -0.5j], dtype=tl.complex32)
    assert v.tolist() == [1.5 + 2j, -0.5j] and v[0].item() == 1.5 + 2j
    assert tl.full((2,), 1 - 1j, dtype=tl.chalf).tolist() == [1 - 1j] * 2
    assert tl.zeros(3, dtype=tl.chalf).tolist() == [0j] * 3
    with pytest.raises(TypeError, match="ComplexHalf"):
        v.numpy()                                        # NumPy has no complex32 (as PyTorch)


def test_complex32_arithmetic_in_complex64_rounded():
    """Each op computes in complex64 and rounds the parts to float16, as PyTorch's opmath."""
    a, b = crandn(5, 3, dtype=np.complex64, seed=1), crandn(5, 3, dtype=np.complex64, seed=2)
    x, y = tl.from_numpy(a).chalf(), tl.from_numpy(b).chalf()
    a, b = _c32(a), _c32(b)
    for got, expect in ((x + y, a + b), (x - y, a - b), (x * y, a * b), (-x, -a), (x / y, a / b),
                        (x * (2 - 1j), a * np.complex64(2 - 1j)), (x.exp(), np.exp(a)),
                        (x.conj(), a.conj()), (x.sqrt(), np.sqrt(a))):
        np.testing.assert_allclose(_c32_values(got), _c32(expect), rtol=2e-3, atol=2e-3)
    assert x.abs().dtype is tl.float16 and x.angle().dtype is tl.float16
    np.testing.assert_allclose(x.abs().float().numpy(), np.abs(a), rtol=1e-3)
    np.testing.assert_array_equal((x == y).numpy(), a == b)
    np.testing.assert_array_equal((x == x).numpy(), np.ones((5, 3), bool))
    np.testing.assert_array_equal(x.isnan().numpy(), np.zeros((5, 3), bool))
    assert (x + tl.ones(3, dtype=tl.float16)).dtype is tl.complex32
    assert (x + tl.ones(3)).dtype is tl.complex64 and (x + y.cfloat()).dtype is tl.complex64


def test_complex32_views_joining_and_indexing():
    z = crandn(4, 3, dtype=np.complex64, seed=3)
    c = tl.from_numpy(z).chalf()
    parts = tl.view_as_real(c)
    assert parts.dtype is tl.float16 and parts.shape == (4, 3, 2)
    np.testing.assert_array_equal(parts.float().numpy()[..., 0], _c32(z).real)
    back = tl.view_as_complex(parts)
    assert back.dtype is tl.complex32 and back._data.same_storage(c._data)
    c.imag[0] = 7                                          # writes through the view
    assert c[0, 1].item().imag == 7
    np.testing.assert_array_equal(_c32_values(tl.cat([c, c])), np.concatenate([_c32_values(c)] * 2))
    np.testing.assert_array_equal(_c32_values(tl.stack([c, c]))[1], _c32_values(c))
    np.testing.assert_array_equal(_c32_values(c[tl.tensor([3, 0])]), _c32_values(c)[[3, 0]])
    np.testing.assert_array_equal(_c32_values(c[1:, ::2].clone()), _c32_values(c)[1:, ::2])
    w = tl.where(c.real > 0, c, tl.zeros((), dtype=tl.chalf))
    np.testing.assert_array_equal(_c32_values(w), np.where(_c32_values(c).real > 0, _c32_values(c), 0))
    f = c.clone().fill_(2 - 1j)
    assert f.dtype is tl.complex32 and f.tolist()[0] == [2 - 1j] * 3
    # where / masked_fill with Python numbers: the scalar is written as complex32 parts
    np.testing.assert_array_equal(_c32_values(tl.where(c.real > 0, c, 1.5 - 2j)),
                                  np.where(_c32_values(c).real > 0, _c32_values(c), np.complex64(1.5 - 2j)))
    np.testing.assert_array_equal(_c32_values(c.masked_fill(c.real > 0, 2.5)),
                                  np.where(_c32_values(c).real > 0, np.complex64(2.5), _c32_values(c)))
    assert tl.where(tl.tensor([True, False]), tl.ones(2, dtype=tl.float16), 1j).tolist() == [1, 1j]
    d = tl.from_dlpack(c)                                  # DLPack: complex of 32 bits
    assert d.dtype is tl.complex32 and d.data_ptr() == c.data_ptr() and d.tolist() == c.tolist()


@needs_torch
def test_complex32_printing_and_checkpoints_match_torch(tmp_path):
    import warnings
    values = [[1.5 + 2j, -0.5j, 3], [1e-3 - 4j, 100.25 + 0j, -7j]]
    c = tl.tensor(values).chalf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # torch: "ComplexHalf support is experimental"
        ct = torch.tensor(values).chalf()
        assert repr(c).replace("torchlite.", "torch.") == repr(ct)
        assert repr(c.abs()).replace("torchlite.", "torch.") == repr(ct.abs())
        tl.save({"c": c, "view": c[1:, 1:]}, tmp_path / "tl.pt")
        got = torch.load(tmp_path / "tl.pt")           # weights_only: as torch writes complex32
        assert got["c"].dtype is torch.complex32 and got["c"].tolist() == ct.tolist()
        assert got["view"].tolist() == ct[1:, 1:].tolist()
        torch.save(ct, tmp_path / "torch.pt")
    back = tl.load(tmp_path / "torch.pt")
    assert back.dtype is tl.complex32 and back.tolist() == c.tolist()


def test_random_complex_samples():
    tl.manual_seed(0)
    z = tl.randn(200000, dtype=tl.complex64)
    assert z.dtype is tl.complex64
    assert abs((z.abs() ** 2).mean().item() - 1) < 0.02           # E|z|^2 = 1
    assert abs(z.real.var().item() - 0.5) < 0.01 and abs(z.imag.var().item() - 0.5) < 0.01
    u = tl.rand(1000, dtype=tl.complex128)
    assert 0 <= u.real.min().item() and u.real.max().item() < 1 and u.imag.min().item() >= 0


def test_complex_on_cuda(cuda_device):
    """Complex tensors on the CUDA backend (the stand-in driver everywhere, a GPU where there
    is one): elementwise ops and products on kernels, the FFT on host copies, the CPU's values
    either way (tests/test_cuda_kernel_launch.py checks each complex kernel)."""
    z = crandn(4, 3, dtype=np.complex64, seed=11)
    t = tl.from_numpy(z).to(cuda_device)
    assert t.device.type == "cuda" and t.dtype is tl.complex64
    r = (t * t.conj() + 1j).exp().abs()
    np.testing.assert_allclose(r.cpu().numpy(), np.abs(np.exp(z * z.conj() + 1j)), rtol=1e-5)
    np.testing.assert_allclose(tl.view_as_real(t).cpu().numpy(), z.view(np.float32).reshape(4, 3, 2))
    np.testing.assert_allclose((t @ t.mT).cpu().numpy(), z @ z.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tl.fft.fft(t).cpu().numpy(), np.fft.fft(z), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_cov_corrcoef_and_addcmul_addcdiv_of_complex_tensors(dtype):
    """cov/corrcoef keep complex variables complex (x_i conj(x_j), as NumPy and PyTorch);
    addcmul/addcdiv take a complex value, in place too."""
    tol = dict(rtol=1e-4, atol=1e-5) if dtype is tl.complex64 else dict(rtol=1e-12, atol=1e-12)
    Z = crandn(3, 6, dtype=NP[dtype], seed=21)
    z = tl.from_numpy(Z)
    assert tl.cov(z).dtype is dtype and tl.corrcoef(z).dtype is dtype
    np.testing.assert_allclose(tl.cov(z).numpy(), np.cov(Z), **tol)
    np.testing.assert_allclose(tl.cov(z, correction=0).numpy(), np.cov(Z, bias=True), **tol)
    np.testing.assert_allclose(tl.corrcoef(z).numpy(), np.corrcoef(Z), **tol)
    np.testing.assert_allclose(tl.cov(z[0]).numpy(), np.cov(Z[0]), **tol)
    want = Z[0] + (2 - 1j) * Z[1] * Z[2]
    np.testing.assert_allclose(tl.addcmul(z[0], z[1], z[2], value=2 - 1j).numpy(), want, **tol)
    np.testing.assert_allclose(z[0].clone().addcmul_(z[1], z[2], value=2 - 1j).numpy(), want, **tol)
    want = Z[0] + 1j * Z[1] / Z[2]
    np.testing.assert_allclose(tl.addcdiv(z[0], z[1], z[2], value=1j).numpy(), want, **tol)
    np.testing.assert_allclose(z[0].clone().addcdiv_(z[1], z[2], value=1j).numpy(), want, **tol)
    with pytest.raises(RuntimeError):
        tl.addcmul(z[0].real, z[1].real, z[2].real, value=1j)


def test_nan_reductions_refuse_complex_inputs_as_pytorch():
    for fn in (tl.nansum, tl.nanmean):
        with pytest.raises(RuntimeError, match="does not support complex"):
            fn(tl.ones(2, dtype=tl.complex64))
