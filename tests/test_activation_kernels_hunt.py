"""The one-pass GELU/SiLU kernel ops (F.gelu exact and tanh, F.silu) through the rest of the
library: half dtypes, autocast, special values, meta, vmap and per-sample grads, forward mode,
hessians, in-place forms, modules, Transformer layers, tracing, ONNX, torchlite.compile and
the generated CUDA source run by the host emulation.  Oracles: float64 formulas (math/NumPy),
float64 central differences, and PyTorch / onnxruntime where installed."""

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F

from test_activation_kernels import _gelu, _gelu_tanh, _silu as _silu_plain


def _silu(x):
    with np.errstate(over="ignore"):
        return _silu_plain(x)


CASES = {"gelu": (lambda t: F.gelu(t), _gelu),
         "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"), _gelu_tanh),
         "silu": (lambda t: F.silu(t), _silu)}


def _d1(ref, x, h=1e-6):
    return (ref(x + h) - ref(x - h)) / (2 * h)


@pytest.mark.parametrize("dtype,eps", [(tl.float16, 2.0 ** -10), (tl.bfloat16, 2.0 ** -7)])
@pytest.mark.parametrize("name", list(CASES))
def test_half_dtypes_forward_and_backward(name, dtype, eps):
    fn, ref = CASES[name]
    x = tl.tensor(np.linspace(-8, 8, 161)).to(dtype)
    xs = x.to(tl.float64).numpy()                       # the inputs as rounded to the dtype
    t = x.detach().requires_grad_()
    y = fn(t)
    assert y.dtype == dtype
    got = y.detach().to(tl.float64).numpy()
    want = ref(xs)
    # computed in float32 and rounded once: half an ulp of the result, plus float32 noise
    assert np.all(np.abs(got - want) <= eps * np.abs(want) + 1e-6 * np.abs(xs) + 1e-7)
    y.backward(tl.ones_like(y))
    assert t.grad.dtype == dtype
    d = _d1(ref, xs)
    gg = t.grad.to(tl.float64).numpy()
    assert np.all(np.abs(gg - d) <= eps * np.abs(d) + 1e-5), np.max(np.abs(gg - d))


@pytest.mark.parametrize("spelling", ["autocast", "amp"])
@pytest.mark.parametrize("name", list(CASES))
def test_autocast_bfloat16_on_cpu(name, spelling):
    fn, ref = CASES[name]
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(6, 5)).astype(np.float32), rng.normal(size=(5, 4)).astype(np.float32)
    ctx = (tl.autocast("cpu", dtype=tl.bfloat16) if spelling == "autocast"
           else tl.amp.autocast("cpu", dtype=tl.bfloat16))
    ta, tb = tl.tensor(a, requires_grad=True), tl.tensor(b, requires_grad=True)
    with ctx:
        h = ta @ tb                                       # bfloat16 under autocast
        y = fn(h)
    assert h.dtype == tl.bfloat16 and y.dtype == tl.bfloat16
    hv = h.detach().to(tl.float64).numpy()
    np.testing.assert_allclose(y.detach().to(tl.float64).numpy(), ref(hv), rtol=2 ** -7, atol=1e-6)
    # outside the region a float32 input stays float32
    assert fn(tl.tensor(a)).dtype == tl.float32
    y.to(tl.float32).sum().backward()
    assert tb.grad.dtype == tl.float32 and np.all(np.isfinite(tb.grad.numpy()))


@pytest.mark.parametrize("name", list(CASES))
def test_special_and_extreme_values_all_float_dtypes(name):
    fn, ref = CASES[name]
    vals = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-30, 30.0, -30.0, 1e4, -1e4])
    for dt in (tl.float64, tl.float32, tl.float16, tl.bfloat16):
        t = tl.tensor(vals).to(dt).requires_grad_()
        y = fn(t)
        got = y.detach().to(tl.float64).numpy()
        assert got[0] == np.inf and np.isnan(got[2]), (dt, got)
        assert got[1] == 0 or np.isnan(got[1])
        assert got[3] == 0 and got[4] == 0
        finite = np.isfinite(t.detach().to(tl.float64).numpy())
        xs = t.detach().to(tl.float64).numpy()[finite]
        tiny = 6e-8 if dt == tl.float16 else 1e-30      # float16 flushes silu(-30) to -0
        np.testing.assert_allclose(got[finite], ref(xs), rtol=1e-2, atol=tiny, err_msg=str(dt))
        y.backward(tl.ones_like(y))
        g = t.grad.to(tl.float64).numpy()
        np.testing.assert_allclose(g[3:5], [0.5, 0.5])
        np.testing.assert_allclose(g[7:][::2], [1.0, 1.0], rtol=1e-2)     # +30, +1e4
        np.testing.assert_allclose(g[8:][::2], [0.0, 0.0], atol=1e-9)     # -30, -1e4


@pytest.mark.parametrize("name", list(CASES))
def test_meta_device(name):
    fn, _ = CASES[name]
    for dt in (tl.float32, tl.float16, tl.bfloat16):
        t = tl.empty(3, 4, device="meta", dtype=dt, requires_grad=True)
        y = fn(t)
        assert y.device.type == "meta" and y.shape == (3, 4) and y.dtype == dt
        y.sum().backward()
        assert t.grad.device.type == "meta" and t.grad.shape == (3, 4) and t.grad.dtype == dt


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_and_per_sample_grads(name):
    fn, ref = CASES[name]
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 4)) * 3
    w = rng.normal(size=(4, 3))
    y = tl.func.vmap(fn)(tl.tensor(x))
    np.testing.assert_allclose(y.numpy(), ref(x), rtol=1e-12, atol=1e-14)

    def loss(wt, xi):
        return fn(xi @ wt).sum()
    per = tl.func.vmap(tl.func.grad(loss), in_dims=(None, 0))(tl.tensor(w), tl.tensor(x))
    # per sample: d/dw sum f(x_i w) = outer(x_i, f'(x_i w))
    want = np.stack([np.outer(xi, _d1(ref, xi @ w)) for xi in x])
    np.testing.assert_allclose(per.numpy(), want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("name", list(CASES))
def test_forward_mode_against_differences(name):
    import torchlite.autograd.forward_ad as fwAD
    fn, ref = CASES[name]
    x = np.linspace(-6, 6, 25)
    v = np.cos(np.arange(25.0))
    with fwAD.dual_level():
        out = fn(fwAD.make_dual(tl.tensor(x), tl.tensor(v)))
        primal, tangent = fwAD.unpack_dual(out)
    # (detach: make_dual's result requires grad here even for a primal that does not)
    np.testing.assert_allclose(primal.detach().numpy(), ref(x), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tangent.detach().numpy(), _d1(ref, x) * v, rtol=1e-7, atol=1e-9)
    _, jv = tl.func.jvp(fn, (tl.tensor(x),), (tl.tensor(v),))
    np.testing.assert_allclose(jv.numpy(), tangent.detach().numpy(), rtol=1e-14, atol=0)
    jac = tl.func.jacfwd(fn)(tl.tensor(x[:6]))
    np.testing.assert_allclose(jac.numpy(), np.diag(_d1(ref, x[:6])), rtol=1e-7, atol=1e-9)
    # forward over reverse (the gradient op's own forward rule)
    _, hv = tl.func.jvp(tl.func.grad(lambda t: fn(t).sum()), (tl.tensor(x),), (tl.tensor(v),))
    k = 1e-4
    d2 = (ref(x + k) - 2 * ref(x) + ref(x - k)) / (k * k)
    np.testing.assert_allclose(hv.numpy(), d2 * v, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(CASES))
def test_hessian_of_a_two_layer_network(name):
    fn, _ = CASES[name]
    rng = np.random.default_rng(2)
    W = rng.normal(size=(3, 4))
    x0 = rng.normal(size=4)

    def f(v):
        return fn(tl.tensor(W) @ fn(v)).sum()
    h = tl.func.hessian(f)(tl.tensor(x0)).numpy()
    h2 = tl.autograd.functional.hessian(f, tl.tensor(x0)).numpy()

    def grad_at(p):
        t = tl.tensor(p, requires_grad=True)
        f(t).backward()
        return t.grad.numpy()
    eps = 1e-5
    fd = np.stack([(grad_at(x0 + eps * e) - grad_at(x0 - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h, h.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h2, h, rtol=1e-12, atol=1e-14)


def test_silu_in_place_errors_and_values():
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        F.silu(tl.randn(3, requires_grad=True), inplace=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        F.silu(tl.randn(4, requires_grad=True)[1:], inplace=True)
    with pytest.raises(RuntimeError, match="more than one element"):
        F.silu(tl.randn(1).expand(3), inplace=True)
    # on a view of a non-leaf: values and gradients of x -> c = 2x; silu_(c[1:]); sum(c^2)
    x = np.arange(4.0) - 1.5
    a = tl.tensor(x, requires_grad=True)
    c = a * 2
    F.silu(c[1:], inplace=True)
    (c * c).sum().backward()
    s = _silu(2 * x[1:])
    np.testing.assert_allclose(c.detach().numpy(), np.r_[2 * x[0], s])
    want = np.r_[8 * x[0], 2 * s * _d1(_silu, 2 * x[1:]) * 2]
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-8)
    # silu_ on a tensor another node saved: the version check fires
    b = tl.tensor(x, requires_grad=True)
    d = b.exp()
    F.silu(d, inplace=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        d.sum().backward()
    # nn.SiLU(inplace=True) writes into its input
    t = tl.tensor(x)
    out = nn.SiLU(inplace=True)(t)
    assert out is t
    np.testing.assert_allclose(t.numpy(), _silu(x))


def test_modules_and_repr():
    assert repr(nn.GELU()) == "GELU(approximate='none')"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.SiLU()) == "SiLU()" and repr(nn.SiLU(inplace=True)) == "SiLU(inplace=True)"
    x = np.linspace(-4, 4, 9)
    np.testing.assert_allclose(nn.GELU("tanh")(tl.tensor(x)).numpy(), _gelu_tanh(x), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(nn.GELU()(tl.tensor(x)).numpy(), _gelu(x), rtol=1e-13, atol=1e-16)


def test_gelu_approximate_is_keyword_only():
    """PyTorch's gelu takes approximate by keyword only; the positional form was accepted
    here, and the ONNX exporter, which reads approximate from the keywords, exported
    F.gelu(h, 'tanh') as the exact GELU (a silent 5e-4 difference)."""
    with pytest.raises(TypeError):
        F.gelu(tl.tensor([1.0, -2.0]), "tanh")
    np.testing.assert_allclose(F.gelu(tl.tensor([1.0, -2.0]), approximate="tanh").numpy(),
                               _gelu_tanh(np.array([1.0, -2.0])), rtol=1e-6)
    with pytest.raises(RuntimeError, match="approximate argument"):
        F.gelu(tl.tensor([1.0]), approximate="erf")


def test_complex_inputs():
    """silu takes complex inputs (PyTorch's too; the real kernel op refused them); gelu
    raises PyTorch's NotImplementedError."""
    z = np.array([1 + 1j, -2 + 0.5j, 0.3 - 3j, 0j], dtype=np.complex128)
    want = z / (1 + np.exp(-z))
    np.testing.assert_allclose(F.silu(tl.tensor(z)).numpy(), want, rtol=1e-13)
    np.testing.assert_allclose(nn.SiLU()(tl.tensor(z)).numpy(), want, rtol=1e-13)
    t = tl.tensor(z)
    F.silu(t, inplace=True)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-13)
    # gradients of a real loss: those of the composite x * sigmoid(x)
    a = tl.tensor(z, requires_grad=True)
    F.silu(a).abs().sum().backward()
    b = tl.tensor(z, requires_grad=True)
    (b * b.sigmoid()).abs().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="GeluKernelImpl"):
        F.gelu(tl.tensor(z))


def test_integer_inputs_raise_pytorchs_errors():
    with pytest.raises(NotImplementedError, match="GeluKernelImpl"):
        F.gelu(tl.arange(3))
    with pytest.raises(NotImplementedError, match="silu_cpu"):
        F.silu(tl.arange(3))


@pytest.mark.parametrize("activation", ["gelu", "gelu_fn"])
def test_transformer_encoder_layer_against_pytorch(activation):
    torch = pytest.importorskip("torch")
    act = F.gelu if activation == "gelu_fn" else "gelu"
    tact = torch.nn.functional.gelu if activation == "gelu_fn" else "gelu"
    tl.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation=act, batch_first=True)
    tlayer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation=tact, batch_first=True)
    tlayer.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in layer.state_dict().items()})
    x = np.random.default_rng(0).normal(size=(2, 5, 16)).astype(np.float32)
    xt, txt = tl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = layer(xt), tlayer(txt)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=2e-6)
    y.pow(2).sum().backward()
    ty.pow(2).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), txt.grad.numpy(), rtol=1e-4, atol=1e-5)
    layer.eval()
    tlayer.eval()
    with tl.no_grad():
        ye = layer(tl.tensor(x))
    with torch.no_grad():
        tye = tlayer(torch.tensor(x))
    np.testing.assert_allclose(ye.numpy(), tye.numpy(), rtol=1e-5, atol=2e-6)
    c = tl.compile(layer)
    np.testing.assert_allclose(c(tl.tensor(x)).detach().numpy(), ye.numpy(), rtol=1e-5, atol=1e-6)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.g = nn.GELU("tanh")
        self.s = nn.SiLU()

    def forward(self, x):
        return F.gelu(self.s(self.g(self.lin(x)))) + F.silu(x) + F.gelu(x, approximate="tanh")


def test_fx_and_jit_trace_keep_gelu():
    import torchlite.fx as tfx
    tl.manual_seed(0)
    m = _Net()
    x = tl.randn(3, 4)
    want = m(x).detach().numpy()
    gm = tfx.symbolic_trace(m)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert F.gelu in targets and F.silu in targets
    assert "gelu" in gm.code and "approximate = 'tanh'" in gm.code
    np.testing.assert_array_equal(gm(x).detach().numpy(), want)
    tr = tl.jit.trace(m, (x,))
    np.testing.assert_array_equal(tr(x).detach().numpy(), want)


@pytest.mark.parametrize("mode", ["kw", "exact", "module", "silu", "silu_inplace"])
def test_onnx_export_against_onnxruntime(mode, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    if not hasattr(tl, "onnx"):
        pytest.skip("no torchlite.onnx")

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            h = self.lin(x)
            if mode == "kw":
                return F.gelu(h, approximate="tanh")
            if mode == "exact":
                return F.gelu(h)
            if mode == "module":
                return nn.GELU("tanh")(h)
            if mode == "silu":
                return F.silu(h) + nn.SiLU()(h * 2)
            return F.silu(h * 1, inplace=True)
    tl.manual_seed(0)
    m = M()
    x = tl.randn(3, 4) * 3
    path = str(tmp_path / "m.onnx")
    tl.onnx.export(m, (x,), path, input_names=["x"])
    s = ort.InferenceSession(path)
    out = s.run(None, {s.get_inputs()[0].name: x.numpy()})[0]
    np.testing.assert_allclose(out, m(x).detach().numpy(), rtol=1e-5, atol=1e-6)


_FORMS = {
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh_kw": lambda x: F.gelu(input=x, approximate="tanh"),
    "silu": lambda x: F.silu(x),
    "silu_inplace": lambda x: F.silu(x * 1.0, True),
    "modules": lambda x: nn.SiLU(inplace=True)(nn.GELU("tanh")(x) * 2.0),
    "chain": lambda x: F.gelu(F.silu(x) * 3.0, approximate="tanh") - F.gelu(x),
}


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64, tl.float16])
@pytest.mark.parametrize("form", list(_FORMS))
def test_compile_values_and_grads_with_dynamic_shapes(form, dtype):
    import torchlite._dynamo as dynamo
    dynamo.reset()
    f = _FORMS[form]

    def fn(x, w):
        return f(x * w) + 1.0
    c = tl.compile(fn)
    g = tl.Generator().manual_seed(3)
    try:
        for rows in (5, 3, 9):                    # the later shapes: the dynamic graph
            x = (tl.randn(rows, 7, generator=g) * 3).to(dtype)
            w = tl.randn(7, generator=g).to(dtype)
            gy = tl.randn(rows, 7, generator=g).to(dtype)
            xc, xe = x.detach().requires_grad_(), x.detach().requires_grad_()
            wc, we = w.detach().requires_grad_(), w.detach().requires_grad_()
            yc, ye = c(xc, wc), fn(xe, we)
            assert yc.dtype == dtype
            np.testing.assert_array_equal(yc.detach().to(tl.float64).numpy(), ye.detach().to(tl.float64).numpy())
            yc.backward(gy)
            ye.backward(gy)
            for a, b in ((xc, xe), (wc, we)):
                np.testing.assert_allclose(a.grad.to(tl.float64).numpy(), b.grad.to(tl.float64).numpy(),
                                           rtol=1e-6 if dtype != tl.float16 else 1e-3, atol=1e-6)
    finally:
        dynamo.reset()


def test_compiled_double_backward_matches_eager():
    import torchlite._dynamo as dynamo
    for name in CASES:
        dynamo.reset()
        fn = CASES[name][0]
        c = tl.compile(lambda x: fn(x).sum())
        x = tl.tensor(np.linspace(-3, 3, 7), requires_grad=True)
        (gc,) = tl.autograd.grad(c(x), x, create_graph=True)
        (ge,) = tl.autograd.grad(fn(x).sum(), x, create_graph=True)
        np.testing.assert_allclose(gc.detach().numpy(), ge.detach().numpy(), rtol=1e-14)
        (hc,) = tl.autograd.grad(gc.sum(), x)
        (he,) = tl.autograd.grad(ge.sum(), x)
        np.testing.assert_allclose(hc.numpy(), he.numpy(), rtol=1e-14)
    dynamo.reset()


def _activation_prog(x, w):
    return F.silu(x * w) + F.gelu(x, approximate="tanh") - F.gelu(w * 0.5 + x)


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_cuda_fused_source_and_host_emulation(dtype):
    """The compiled program of all three activations (and its backward) as generated CUDA C,
    built for the CPU by tests/cuda_host's emulation and run against the CPU program,
    special values included."""
    import test_compile_cuda as T
    from torchlite.cuda import _fused as _cuda
    g = tl.Generator().manual_seed(0)
    x, w = tl.randn(4, 6, generator=g).to(dtype), tl.randn(6, generator=g).to(dtype)
    specs = T._specs(_activation_prog, x, w, grad=True)
    assert len(specs) == 2
    for spec in specs:
        src = _cuda.cuda_source(spec, "k_act")
        assert 'extern "C" __global__ void k_act(' in src
        rng = np.random.default_rng(7)
        shape = (7, 45)
        arrays = [a * 4 for a in T._inputs(spec, shape, "contiguous", rng)]
        for a in arrays:                         # special values in the first row
            a[0, :6] = [np.inf, -np.inf, np.nan, 0.0, 40.0, -40.0]
        got, _ = T._emulate(spec, arrays, shape)
        want = T._cpu_run(spec, arrays, shape)
        tol = 1e-6 if dtype == tl.float32 else 1e-13
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)
