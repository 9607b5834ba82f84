"""The compiled softmax/log_softmax backward: one SOFTMAX_BWD row instruction (the eager
backward's row kernel, tl_smb_rows) in the backward program, on the CPU interpreter and in the
generated CUDA row kernels; its Python form (create_graph=True) stays differentiable."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F
from torchlite.compiler import _lowering as L
from torchlite.cuda import _fused as _cuda
from torchlite._core.fused import Program

SOFTMAX_BWD = L.SOFTMAX_BWD


def kernels_of(compiled):
    return [k for e in compiled.cache.values() for k in getattr(e, "kernels", [])]


def attn(a, mask):
    return F.softmax(a * 0.125 + mask, dim=-1)


def log_attn(a, mask):
    return F.log_softmax(a * 0.125 + mask, dim=-1) * 0.5


def _inputs(n, dt, rg_a=True, rg_mask=False, seed=0):
    g = tl.Generator().manual_seed(seed)
    a = tl.randn(3, 2, 4, n, generator=g, dtype=dt)
    m = tl.triu(tl.full((4, n), float("-inf"), dtype=dt), 1)       # causal where n >= 4
    if n == 1:
        m = tl.zeros(4, 1, dtype=dt)
    m = m + 0.1 * tl.randn(4, n, generator=g, dtype=dt)
    w = tl.randn(3, 2, 4, n, generator=g, dtype=dt)
    return a.requires_grad_(rg_a), m.requires_grad_(rg_mask), w


def _tol(dt):
    return dict(rtol=1e-5, atol=1e-6) if dt is tl.float32 else dict(rtol=1e-12, atol=1e-13)


def _np(t):
    return t.detach().numpy()


def _backward_kernels(c):
    return [k._backward for k in kernels_of(c) if k._backward is not None]


@pytest.mark.parametrize("fn", [attn, log_attn])
@pytest.mark.parametrize("dt", [tl.float32, tl.float64])
@pytest.mark.parametrize("n", [1, 7, 64, 100, 1000])
@pytest.mark.parametrize("rg", [(True, False), (False, True), (True, True)])
def test_values_and_gradients_match_eager(fn, dt, n, rg):
    a, m, w = _inputs(n, dt, *rg)
    ae, me = (t.detach().clone().requires_grad_(t.requires_grad) for t in (a, m))
    c = tl.compile(fn)
    got = c(a, m)
    want = fn(ae, me)
    np.testing.assert_allclose(_np(got), _np(want), **_tol(dt))
    (got * w).sum().backward()
    (want * w).sum().backward()
    for t, te in ((a, ae), (m, me)):
        if te.requires_grad:
            np.testing.assert_allclose(_np(t.grad), _np(te.grad), **_tol(dt))
        else:
            assert t.grad is None
    bws = _backward_kernels(c)
    assert bws and all(b.program is not None for b in bws)
    assert sum(i[0] == SOFTMAX_BWD for b in bws for i in b.spec.instrs) == 1


@pytest.mark.parametrize("log", [False, True])
def test_backward_program_is_one_row_instruction_and_a_scale(log):
    """The gradient of softmax(a * 0.125 + mask) is SOFTMAX_BWD then the scale: no row sum,
    spread or elementwise steps of the formula left."""
    a, m, w = _inputs(64, tl.float32)
    c = tl.compile(log_attn if log else attn)
    (c(a, m) * w).sum().backward()
    (bw,) = _backward_kernels(c)
    kinds = [i[0] for i in bw.spec.instrs]
    assert kinds.count(SOFTMAX_BWD) == 1 and L.ROW not in kinds and L.SOFTMAX not in kinds
    (ins,) = [i for i in bw.spec.instrs if i[0] == SOFTMAX_BWD]
    assert ins[1] == (1 if log else 0) and len(ins[3]) == 3
    assert len(kinds) <= 3 + log            # (log: the 0.5 scale of the gradient too)
    assert bw.program.num_instructions == len(kinds)


@pytest.mark.parametrize("fn", [attn, log_attn])
@pytest.mark.parametrize("dt", [tl.float32, tl.float64])
def test_create_graph_second_derivatives(fn, dt):
    """create_graph=True runs the backward's Python form, whose softmax_grad is the formula's
    ops: the gradient is differentiable again, as eager's."""
    a, m, w = _inputs(7, dt)
    ae = a.detach().clone().requires_grad_()
    c = tl.compile(fn)
    (ga,) = tl.autograd.grad((c(a, m) * w).sum(), a, create_graph=True)
    (ge,) = tl.autograd.grad((fn(ae, m) * w).sum(), ae, create_graph=True)
    np.testing.assert_allclose(_np(ga), _np(ge), **_tol(dt))
    assert ga.requires_grad
    (gga,) = tl.autograd.grad((ga * ga).sum(), a)
    (gge,) = tl.autograd.grad((ge * ge).sum(), ae)
    np.testing.assert_allclose(_np(gga), _np(gge), rtol=1e-4 if dt is tl.float32 else 1e-10,
                               atol=1e-5 if dt is tl.float32 else 1e-12)


def test_softmax_grad_on_tensors_is_the_formula():
    g = tl.Generator().manual_seed(3)
    for log in (False, True):
        x = tl.randn(5, 9, generator=g, dtype=tl.float64)
        y = F.log_softmax(x, -1) if log else F.softmax(x, -1)
        gy = tl.randn(5, 9, generator=g, dtype=tl.float64)
        want = gy - y.exp() * gy.sum(-1, keepdim=True) if log \
            else y * (gy - (gy * y).sum(-1, keepdim=True))
        np.testing.assert_allclose(_np(L.softmax_grad(gy, y, log)), _np(want), rtol=1e-13, atol=1e-14)
        gb = tl.randn(5, 1, generator=g, dtype=tl.float64)        # a broadcast g: the formula
        want = gb - y.exp() * gb.expand(5, 9).sum(-1, keepdim=True) if log \
            else y * (gb - (gb * y).sum(-1, keepdim=True))
        np.testing.assert_allclose(_np(L.softmax_grad(gb, y, log)), _np(want), rtol=1e-13, atol=1e-14)


def _np_grad(y, g, log):
    if log:
        return g - np.exp(y) * g.sum(-1, keepdims=True)
    return y * (g - (g * y).sum(-1, keepdims=True))


@pytest.mark.parametrize("dt", [8, 9])
@pytest.mark.parametrize("log", [0, 1])
def test_interpreter_instruction(dt, log):
    """SOFTMAX_BWD on the interpreter: contiguous sources, a source broadcast from a scalar
    (stride 0) or a row (gathered), in place over a scratch register, rows of many lengths."""
    npdt = np.float32 if dt == 8 else np.float64
    rng = np.random.default_rng(1)
    for n in (1, 3, 100, 5000):
        y = rng.standard_normal((6, n)).astype(npdt) * 0.3
        g = rng.standard_normal((6, n)).astype(npdt)
        s = rng.standard_normal(()).astype(npdt)
        row = rng.standard_normal(n).astype(npdt)
        tol = dict(rtol=2e-5, atol=2e-5) if dt == 8 else dict(rtol=1e-12, atol=1e-12)
        one = Program("smb", [dt, dt], [], 0, [dt], [(SOFTMAX_BWD, log, dt, ((3, 0, dt), (0, 0, dt), (0, 1, dt)), ())])
        for yy, gg in ((y, g), (y, s), (s, g), (s, s), (row, g), (y, row)):
            ts = tuple(tl.from_numpy(np.ascontiguousarray(v))._data for v in (yy, gg))
            (out,) = one.run(ts, (6, n))
            want = _np_grad(np.broadcast_to(yy, (6, n)).astype(np.float64),
                            np.broadcast_to(gg, (6, n)).astype(np.float64), log)
            np.testing.assert_allclose(tl._tensor._wrap(out).numpy(), want, **tol)
        # in place: r0 = y; r0 = grad(r0, g); out = r0
        inplace = Program("smb", [dt, dt], [], 1, [dt], [
            (3, dt, dt, ((2, 0, dt), (0, 0, dt)), ()),
            (SOFTMAX_BWD, log, dt, ((2, 0, dt), (2, 0, dt), (0, 1, dt)), ()),
            (3, dt, dt, ((3, 0, dt), (2, 0, dt)), ())])
        ts = tuple(tl.from_numpy(v)._data for v in (y, g))
        (out,) = inplace.run(ts, (6, n))
        np.testing.assert_allclose(tl._tensor._wrap(out).numpy(),
                                   _np_grad(y.astype(np.float64), g.astype(np.float64), log), **tol)


def test_interpreter_rejects_bad_instructions():
    F32, F64 = 8, 9
    for ins in [(SOFTMAX_BWD, 2, F32, ((3, 0, F32), (0, 0, F32), (0, 1, F32)), ()),    # no such op
                (SOFTMAX_BWD, 0, F32, ((3, 0, F32), (0, 0, F32)), ()),                 # one source
                (SOFTMAX_BWD, 0, F32, ((3, 0, F32), (0, 0, F32), (0, 1, F64)), ())]:   # mixed
        with pytest.raises(ValueError):
            Program("bad", [F32, F32], [], 0, [F32], [ins])


@pytest.mark.parametrize("log", [False, True])
def test_cuda_source_of_the_backward(log):
    """The generated CUDA row kernel computes SOFTMAX_BWD natively: one block reduction (the
    row sum of g * y, or of g), then the gradient per element."""
    a, m, w = _inputs(40, tl.float32)
    c = tl.compile(log_attn if log else attn)
    (c(a, m) * w).sum().backward()
    (bw,) = _backward_kernels(c)
    text = _cuda.cuda_source(bw.spec, "k")
    assert text.count("tl::block_allcombine(TlRowSum()") == 1 and "TlRowMax" not in text.split("void k(")[1]
    assert ("tl::op::Exp()" in text) == log


def test_cuda_spec_runs_in_host_emulation():
    """The backward specs of the softmax and log_softmax programs, built by the CUDA generator
    and run by the host emulation, match the CPU interpreter."""
    import test_compile_cuda as T
    import fake_cuda_kernels as FK
    if FK.compiler() is None:
        pytest.skip("no g++")
    rng = np.random.default_rng(2)
    for fn, dt in ((attn, tl.float32), (log_attn, tl.float64)):
        a, m, w = _inputs(45, dt)
        c = tl.compile(fn)
        (c(a, m) * w).sum().backward()
        (bw,) = _backward_kernels(c)
        npdt = np.float32 if dt is tl.float32 else np.float64
        shape = (7, 45)
        arrays = [rng.standard_normal(shape).astype(npdt) for _ in bw.spec.in_dtypes]
        arrays[-1] = np.exp(rng.standard_normal(shape)).astype(npdt) * 0.02      # y: the saved result
        got, _ = T._emulate(bw.spec, arrays, shape)
        want = T._cpu_run(bw.spec, arrays, shape)
        for gg, ww in zip(got, want):
            np.testing.assert_allclose(gg, ww, **(dict(rtol=1e-5, atol=1e-6) if dt is tl.float32
                                                   else dict(rtol=1e-12, atol=1e-13)))
