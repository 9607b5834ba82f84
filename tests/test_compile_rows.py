"""torchlite.compile's row fusion: softmax/log_softmax over the last dimension and keepdim
sum/mean of it fused with the elementwise ops around them (the interpreter's row instructions,
torchlite/_core/fused.pyx; the partition in torchlite/compiler/_fusion.py).  Oracles: NumPy for
the interpreter and the forward values, eager torchlite and float64 finite differences for the
gradients."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F
import torchlite.special as special
from torchlite._core import elementwise as ew
from torchlite._core.fused import Program
from torchlite._tensor import _wrap
from compile_helpers import fresh_compiler, kernels_of  # noqa: F401
from compile_helpers import UNARY, BINARY, apply_unary, apply_binary, random_input

F32, F64 = 8, 9
ROW, SOFTMAX = 4, 5
SUB, MUL, ADD = ew.BINARY["sub"], ew.BINARY["mul"], ew.BINARY["add"]


def row_kernels(compiled):
    """The fused kernels holding a row instruction."""
    return [k for k in kernels_of(compiled)
            if any(ins[0] in (ROW, SOFTMAX) for ins in k.spec.instrs)]


def np_softmax(x, log=False):
    z = x - x.max(-1, keepdims=True)
    if log:
        return z - np.log(np.exp(z).sum(-1, keepdims=True))
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


# ---- the interpreter -------------------------------------------------------------------------------
def _program(dt):
    """out0 = softmax(x - mean(x)); out1 = 2 * sum(x) + 1, computed on the compact sums (one
    per row) and spread along the rows; out2 = log_softmax(x), run again in place on its own
    register (a no-op shift)."""
    return Program("rows", [dt], [(dt, 2.0), (dt, 1.0)], 2, [dt, dt, dt], [
        (ROW, 1, dt, ((2, 0, dt), (0, 0, dt)), ()),                 # r0 = mean (compact)
        (ROW, 2, dt, ((2, 0, dt), (2, 0, dt)), ()),                 # r0 = spread r0, in place
        (1, SUB, dt, ((2, 1, dt), (0, 0, dt), (2, 0, dt)), ()),     # r1 = x - mean
        (SOFTMAX, 0, dt, ((3, 0, dt), (2, 1, dt)), ()),
        (ROW, 0, dt, ((2, 0, dt), (0, 0, dt)), ()),                 # r0 = sum (compact)
        (1, MUL, dt, ((2, 0, dt), (2, 0, dt), (1, 0, dt)), ()),     # compact: r0 = 2 r0
        (1, ADD, dt, ((2, 1, dt), (2, 0, dt), (1, 1, dt)), ()),     # compact: r1 = r0 + 1
        (ROW, 2, dt, ((3, 1, dt), (2, 1, dt)), ()),                 # out1 = spread r1
        (SOFTMAX, 1, dt, ((2, 0, dt), (0, 0, dt)), ()),
        (SOFTMAX, 1, dt, ((2, 0, dt), (2, 0, dt)), ()),             # in place: a no-op shift
        (3, dt, dt, ((3, 2, dt), (2, 0, dt)), ()),
    ], [5, 6])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("L", [1, 3, 64, 1000, 4096, 4097, 20000])
def test_row_instructions_against_numpy(dtype, L):
    dt = F32 if dtype == np.float32 else F64
    rng = np.random.default_rng(L)
    x = (rng.standard_normal((5, 3, L)) * 4).astype(dtype)
    out = [_wrap(a).numpy() for a in _program(dt).run((tl.from_numpy(x)._data,), x.shape)]
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(out[0], np_softmax(x - x.mean(-1, keepdims=True)), rtol=tol * 10,
                               atol=tol)
    sums = 2 * x.sum(-1, keepdims=True, dtype=np.float64) + 1
    np.testing.assert_allclose(out[1], np.broadcast_to(sums, x.shape), rtol=tol * 10,
                               atol=tol * 10)
    np.testing.assert_allclose(out[2], np_softmax(x, log=True), rtol=tol * 10, atol=tol * 10)


def test_row_instructions_read_any_layout_and_broadcast_inputs():
    rng = np.random.default_rng(1)
    p = Program("rows", [F32, F32], [], 1, [F32], [
        (1, ew.BINARY["mul"], F32, ((2, 0, F32), (0, 0, F32), (0, 1, F32)), ()),
        (SOFTMAX, 0, F32, ((3, 0, F32), (2, 0, F32)), ()),
    ])
    base = rng.standard_normal((40, 7)).astype(np.float32)
    w = rng.standard_normal((40,)).astype(np.float32)
    x = tl.from_numpy(base).t()                     # (7, 40), not contiguous
    got = _wrap(p.run((x._data, tl.from_numpy(w)._data), (7, 40))[0]).numpy()
    np.testing.assert_allclose(got, np_softmax(base.T * w), rtol=1e-6, atol=1e-7)
    # a fully broadcast operand (one value): every row is uniform
    q = Program("rows", [F32], [], 1, [F32], [(ROW, 0, F32, ((2, 0, F32), (0, 0, F32)), ()),
                                              (ROW, 2, F32, ((3, 0, F32), (2, 0, F32)), ())])
    got = _wrap(q.run((tl.tensor(2.5)._data,), (3, 6))[0]).numpy()
    np.testing.assert_array_equal(got, np.full((3, 6), 15.0, np.float32))


def test_rows_longer_than_the_limit_are_refused_and_bad_row_instructions_rejected():
    p = Program("rows", [F32], [], 0, [F32], [(SOFTMAX, 0, F32, ((3, 0, F32), (0, 0, F32)), ())])
    with pytest.raises(NotImplementedError, match="rows of 70000"):
        p.run((tl.zeros(2, 70000)._data,), (2, 70000))
    for ins in [(ROW, 3, F32, ((3, 0, F32), (0, 0, F32)), ()),        # no such op
                (ROW, 0, F32, ((3, 0, F64), (0, 0, F32)), ()),        # dtypes differ
                (SOFTMAX, 0, 5, ((3, 0, 5), (0, 0, 5)), ()),          # int64 rows
                (ROW, 0, F32, ((3, 0, F32), (0, 0, F32), (0, 0, F32)), ())]:
        with pytest.raises(ValueError):
            Program("bad", [F32 if ins[2] != 5 else 5], [], 0, [ins[2]], [ins])


# ---- compiled graphs ---------------------------------------------------------------------------------
def attention(q, k, mask):
    a = (q @ k.transpose(-2, -1)) * 0.25 + mask
    return F.softmax(a, dim=-1) * 2.0 - 0.5


def rms_norm(x, w):
    return x * tl.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def layer_norm_by_hand(x, w, b):
    m = x.mean(-1, keepdim=True)
    d = x - m
    v = (d * d).mean(-1, keepdim=True)
    return d / (v + 1e-5).sqrt() * w + b, m          # the mean is read outside the kernel


def nll_by_hand(x, t):
    return -(F.log_softmax(x * 2, -1) * t).sum(-1, keepdim=True)


def softmax_spellings(x):
    n = x.dim() - 1
    return (x.softmax(-1) + tl.softmax(x * 2, n) + special.log_softmax(x - 1, dim=-1)
            + tl.log_softmax(x, -1) * x.sum([-1], keepdim=True) + tl.sum(x, -1, keepdim=True))


def _cases(dtype=tl.float32):
    g = tl.Generator().manual_seed(0)

    def r(*s, grad=True):
        return tl.randn(*s, generator=g, dtype=dtype, requires_grad=grad)
    return [
        (attention, [r(2, 3, 8, 4), r(2, 3, 8, 4), r(8, 8, grad=False)]),
        (rms_norm, [r(5, 16), r(16)]),
        (layer_norm_by_hand, [r(5, 7, 16), r(16), r(16)]),
        (nll_by_hand, [r(6, 10), tl.rand(6, 10, generator=g, dtype=dtype)]),
        (softmax_spellings, [r(4, 9)]),
    ]


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("case", range(5))
def test_row_ops_fuse_and_match_eager_values_and_gradients(case):
    fn, args = _cases()[case]
    c = tl.compile(fn)
    got, want = _tuple(c(*args)), _tuple(fn(*args))
    assert row_kernels(c), fn.__name__
    assert all(k._backward is not None and k._backward.program is not None
               for k in row_kernels(c))
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = tl.Generator().manual_seed(1)
    seeds = [tl.randn(*o.shape, generator=g) for o in want]
    leaves = [a for a in args if a.requires_grad]
    gw = tl.autograd.grad(want, leaves, seeds)
    gg = tl.autograd.grad(got, leaves, seeds)
    for a, b in zip(gg, gw):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", range(5))
def test_row_op_gradients_against_finite_differences(case):
    fn, args = _cases(tl.float64)[case]
    c = tl.compile(fn)
    grad_args = tuple(a for a in args if a.requires_grad)

    def f(*xs):
        it = iter(xs)
        return c(*[next(it) if a.requires_grad else a for a in args])
    assert tl.autograd.gradcheck(f, grad_args)
    assert row_kernels(c)


def test_forward_values_against_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 33)).astype(np.float32)
    w = rng.standard_normal(33).astype(np.float32)
    got = tl.compile(rms_norm)(tl.from_numpy(x), tl.from_numpy(w)).numpy()
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
    q, k = rng.standard_normal((2, 5, 4)).astype(np.float32), rng.standard_normal((2, 5, 4))
    k = k.astype(np.float32)
    mask = np.triu(np.full((5, 5), -np.inf, np.float32), 1)
    got = tl.compile(attention)(*(tl.from_numpy(a) for a in (q, k, mask))).numpy()
    want = np_softmax(q @ k.transpose(0, 2, 1) * 0.25 + mask) * 2 - 0.5
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_other_reductions_stay_eager_ops():
    """Only the last dimension with keepdim (and softmax without dtype) fuses; the rest run as
    the eager ops, with eager's answers."""
    def other(x):
        return (x * 2).softmax(0) + (x + 1).sum(-1).unsqueeze(-1) + (x - 1).mean(-1, True) \
            + F.softmax(x * 3, -1, dtype=tl.float64).float()
    x = tl.randn(4, 5)
    c = tl.compile(other)
    np.testing.assert_allclose(c(x).numpy(), other(x).numpy(), rtol=1e-6, atol=1e-6)
    row_ops = {(ins[0], ins[1]) for k in row_kernels(c) for ins in k.spec.instrs
               if ins[0] in (ROW, SOFTMAX)}
    assert row_ops == {(ROW, 1), (ROW, 2)}          # the mean and its spread, nothing else


def test_long_rows_run_the_ops_one_by_one():
    x = tl.randn(2, 70000, requires_grad=True)
    c = tl.compile(lambda x: F.softmax(x * 2, -1) * 3)
    got = c(x)
    want = F.softmax(x * 2, -1) * 3
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-9)
    (gx,) = tl.autograd.grad(got.sum() + (got * got).sum(), [x])
    (wx,) = tl.autograd.grad(want.sum() + (want * want).sum(), [x])
    np.testing.assert_allclose(gx.numpy(), wx.numpy(), rtol=1e-5, atol=1e-8)


def test_dynamic_row_programs_follow_the_row_length_and_broadcasting():
    def f(x, w):
        return F.softmax(x, -1) * w + x.mean(-1, keepdim=True)
    c = tl.compile(f, dynamic=True)
    for shape in ((3, 8), (5, 8), (2, 13), (1, 1)):
        x, w = tl.randn(*shape, requires_grad=True), tl.randn(shape[-1], requires_grad=True)
        got, want = c(x, w), f(x, w)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6,
                                   atol=1e-7)
        seed = tl.randn(*want.shape)
        for a, b in zip(tl.autograd.grad(got, [x, w], seed), tl.autograd.grad(want, [x, w], seed)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert row_kernels(c)
    # the softmax's operand is narrower than the output here: rows of one element each,
    # which the kernel (rows of 6) must not take
    c = tl.compile(f, dynamic=True)
    c(tl.randn(3, 8), tl.randn(8))
    x, w = tl.randn(4, 1), tl.randn(6)
    np.testing.assert_allclose(c(x, w).numpy(), f(x, w).numpy(), rtol=1e-6)


def test_a_row_value_used_outside_keeps_its_shape_and_gradient():
    x = tl.randn(3, 4, 10, dtype=tl.float64, requires_grad=True)
    c = tl.compile(lambda x: (lambda s: (s, (x - s).exp()))(x.sum(-1, keepdim=True) * 0.1))
    s, e = c(x)
    assert s.shape == (3, 4, 1) and e.shape == (3, 4, 10)
    assert tl.autograd.gradcheck(lambda x: sum(t.sum() * k for k, t in enumerate(c(x), 1)), (x,))


def test_values_of_whole_rows_run_one_element_per_row():
    """rsqrt(mean(x^2) + eps) is computed once per row (compact instructions), then spread."""
    c = tl.compile(rms_norm)
    c(tl.randn(4, 32), tl.randn(32))
    (k,) = row_kernels(c)
    compact = [k.spec.instrs[i] for i in k.spec.compact]
    assert [ins[:2] for ins in compact] == [(1, ew.BINARY["add"]), (0, ew.UNARY["rsqrt"])]
    spreads = [ins for ins in k.spec.instrs if ins[:2] == (ROW, 2)]
    assert len(spreads) == 1


def test_a_row_value_returned_twice_and_used_inside():
    def f(x):
        m = x.mean(-1, keepdim=True) * 3
        return m, x - m, m
    x = tl.randn(5, 6, requires_grad=True)
    c = tl.compile(f)
    got, want = c(x), f(x)
    assert row_kernels(c)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
    seeds = [tl.randn(*w.shape) for w in want]
    np.testing.assert_allclose(tl.autograd.grad(got, [x], seeds)[0].numpy(),
                               tl.autograd.grad(want, [x], seeds)[0].numpy(), rtol=1e-5,
                               atol=1e-6)


def test_rms_norm_is_decomposed_into_one_kernel_with_its_neighbours():
    import torchlite.nn as nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.RMSNorm(24, eps=1e-6)

        def forward(self, x, y):
            return F.silu(self.norm(x + y)) * 2
    tl.manual_seed(0)
    block = Block()
    norm = block.norm
    with tl.no_grad():
        norm.weight.mul_(tl.rand(24) + 0.5)
    x, y = tl.randn(3, 5, 24, requires_grad=True), tl.randn(3, 5, 24, requires_grad=True)
    c = tl.compile(block)
    got, want = c(x, y), block(x, y)
    (k,) = row_kernels(c)                      # the add, the norm and the silu: one kernel
    assert len(kernels_of(c)) == 1 and k.program.num_instructions >= 8
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    seed = tl.randn(3, 5, 24)
    for a, b in zip(tl.autograd.grad(got, [x, y, norm.weight], seed),
                    tl.autograd.grad(want, [x, y, norm.weight], seed)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
    # eps=None (the dtype's epsilon) and several normalized dims stay the eager function
    for args in (((24,), None), ((5, 24), 1e-6)):
        c2 = tl.compile(lambda x: F.rms_norm(x, args[0], None, args[1]) + 1)
        np.testing.assert_allclose(c2(x).detach().numpy(),
                                   (F.rms_norm(x, args[0], None, args[1]) + 1).detach().numpy(),
                                   rtol=1e-6, atol=1e-6)
        assert not row_kernels(c2)


def test_var_and_std_of_the_last_dimension_fuse_as_means():
    def ln(x, w, b):
        mu = x.mean(-1, keepdim=True)
        v = x.var(-1, keepdim=True, unbiased=False)
        return (x - mu) / (v + 1e-5).sqrt() * w + b, x.std(-1, keepdim=True), \
            tl.var(x * 2, dim=[-1], keepdim=True, correction=2)
    x = tl.randn(5, 7, 9, dtype=tl.float64, requires_grad=True)
    w, b = tl.randn(9, dtype=tl.float64), tl.randn(9, dtype=tl.float64)
    c = tl.compile(ln)
    got, want = c(x, w, b), ln(x, w, b)
    assert len(row_kernels(c)) == len(kernels_of(c)) == 2      # the norm and std; the var of 2x
    for a, e in zip(got, want):
        np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=1e-12,
                                   atol=1e-13)
    xs = x.detach().numpy()
    np.testing.assert_allclose(got[1].detach().numpy(), xs.std(-1, ddof=1, keepdims=True),
                               rtol=1e-12)
    assert tl.autograd.gradcheck(lambda x: c(x, w, b), (x,))
    # var over another dimension, without keepdim, or of a row too short for its correction
    # stays the eager op
    def other(x):
        return x.var(0, keepdim=True) + x.var(-1).unsqueeze(-1) + \
            x[..., :1].var(-1, keepdim=True, correction=1)
    c = tl.compile(other)
    with pytest.warns(UserWarning, match="degrees of freedom"):       # eager's own warning
        got, want = c(x), other(x)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), equal_nan=True)


# ---- random graphs with row ops (hypothesis) ---------------------------------------------------
hyp = pytest.importorskip("hypothesis")
st = hyp.strategies
_ROW = ["softmax", "log_softmax", "sum", "mean"]


def _apply_row(name, a):
    if name in ("softmax", "log_softmax"):
        return getattr(F, name)(a, dim=-1)
    return getattr(a, name)(-1, keepdim=True)


@st.composite
def _row_programs(draw):
    n_inputs = draw(st.integers(1, 3))
    steps = []
    for _ in range(draw(st.integers(2, 10))):
        kind = draw(st.sampled_from("uubr"))
        if kind == "u":
            steps.append(("u", draw(st.sampled_from(UNARY)), draw(st.integers(0, 50))))
        elif kind == "b":
            steps.append(("b", draw(st.sampled_from(BINARY)), draw(st.integers(0, 50)),
                          draw(st.integers(0, 50))))
        else:
            steps.append(("r", draw(st.sampled_from(_ROW)), draw(st.integers(0, 50))))
    shape = draw(st.sampled_from([(6,), (3, 5), (2, 3, 4), (4, 1), (33, 70), (2, 700)]))
    layouts = [draw(st.sampled_from(["full", "bcast", "scalar", "t"])) for _ in range(n_inputs)]
    return n_inputs, steps, shape, layouts


def _row_program_fn(steps):
    def f(*xs):
        vals = list(xs)
        for s in steps:
            if s[0] == "u":
                vals.append(apply_unary(s[1], vals[s[2] % len(vals)]))
            elif s[0] == "b":
                vals.append(apply_binary(s[1], vals[s[2] % len(vals)], vals[s[3] % len(vals)]))
            else:
                x = vals[s[2] % len(vals)]
                vals.append(_apply_row(s[1], x) if x.ndim else x * 2)
        return vals[-1] * 1.5 + vals[-2 if len(vals) > 1 else -1]
    return f


@hyp.settings(max_examples=60, deadline=None, derandomize=True)
@hyp.given(_row_programs(), st.sampled_from([tl.float32, tl.float64]))
def test_random_graphs_with_row_ops(program, dtype):
    """Compiled equals eager, values and gradients, for random chains of elementwise and row
    ops over inputs of any layout (broadcast, 0-dim, transposed)."""
    n_inputs, steps, shape, layouts = program
    f = _row_program_fn(steps)
    g = tl.Generator().manual_seed(len(steps))
    xs = [random_input(layouts[i], shape, g, dtype) for i in range(n_inputs)]
    if all(x.ndim == 0 for x in xs):
        xs[0] = tl.randn(*shape, generator=g, dtype=dtype)
    want = f(*xs)
    got = tl.compile(f)(*xs)
    tol = 2e-5 if dtype is tl.float32 else 1e-11
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)
    a = [x.clone().requires_grad_() for x in xs]
    e = [x.clone().requires_grad_() for x in xs]
    tl.compile(f)(*a).sum().backward()
    f(*e).sum().backward()
    for ta, te in zip(a, e):
        assert (ta.grad is None) == (te.grad is None)
        if te.grad is not None:
            np.testing.assert_allclose(ta.grad.numpy(), te.grad.numpy(), rtol=tol * 20,
                                       atol=tol * 20)


def test_a_bool_row_value_used_along_its_rows():
    """`mean(x) > 0` combined with full-shape values spreads a bool along the rows, which no
    row instruction takes: that region runs unfused, with eager's answer (it raised)."""
    g = tl.Generator().manual_seed(2)
    x = tl.randn(5, 7, generator=g)
    fns = [lambda x: ((x * 2).mean(-1, keepdim=True) > 0) & (x > 0),
           lambda x: (((x * 2).mean(-1, keepdim=True) > 0).float() * x).exp(),
           lambda x: tl.where((x.sum(-1, keepdim=True) > 0), x, -x) * 3]
    for f in fns:
        got, want = tl.compile(f)(x), f(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())
