"""torchlite.autograd.forward_ad (torch.autograd.forward_ad): dual tensors and the tangents
ops give their results.  Oracles: float64 central differences along the tangent, and PyTorch's
own forward AD where installed."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.autograd.forward_ad as fwAD
import torchlite.nn.functional as F

F64 = tl.float64


def jvp(f, xs, ts):
    with fwAD.dual_level():
        out = f(*[fwAD.make_dual(x, t) for x, t in zip(xs, ts)])
        primal, tangent = fwAD.unpack_dual(out)
    return primal, tangent


def central_difference(f, xs, ts, eps=1e-6):
    plus = f(*[x + eps * t for x, t in zip(xs, ts)])
    minus = f(*[x - eps * t for x, t in zip(xs, ts)])
    return (plus - minus) / (2 * eps)


def _inplace(x):
    y = x * 1.0
    y.mul_(3).add_(1)
    return y.sin_()


def _through_views(x):
    y = x * 1.0
    y[1:3].mul_(2)
    y[:, 0].add_(y[:, 1])
    return y.t().reshape(-1)[2:9]


def _multi_output(x):
    values, _ = x.max(1)
    a, b = x.split([2, 3], 1)
    return values.sum() + (a * 2).sum() + b.prod()


G = tl.Generator().manual_seed(0)
X = tl.randn(4, 5, dtype=F64, generator=G)
W = tl.randn(5, 3, dtype=F64, generator=G)
IMG = tl.randn(2, 3, 6, 6, dtype=F64, generator=G)
K = tl.randn(4, 3, 3, 3, dtype=F64, generator=G)
tl.manual_seed(0)
LSTM = tl.nn.LSTM(5, 3, batch_first=True, bidirectional=True).double().requires_grad_(False)
CASES = {
    "elementwise": (lambda x: x.sin() * x.exp() / (x * x + 1) - 2, (X,)),
    "broadcast": (lambda x, b: x * b + b.tanh(), (X, W[:, 0])),
    "matmul": (lambda x, w: x @ w, (X, W)),
    "reductions": (lambda x: x.sum(0) * x.mean() + x.amax(1).sum() + x.norm(), (X,)),
    "softmax": (lambda x: F.log_softmax(x, -1) + F.softmax(x, 0), (X,)),
    "indexing": (lambda x: x[tl.tensor([0, 2, 2])] * x[1:, ::2].sum(), (X,)),
    "joining": (lambda x: tl.cat([x, x * 2]).sum(1) + tl.stack([x, x.exp()]).mean(0).sum(), (X,)),
    "conv2d": (lambda a, k: F.conv2d(a, k, padding=1).relu(), (IMG, K)),
    "norms": (lambda a: F.layer_norm(a, (6,)) + F.batch_norm(a, None, None, training=True), (IMG,)),
    "activations": (lambda a: F.gelu(a) + F.silu(a) * F.softplus(a), (IMG,)),
    "in place": (_inplace, (X,)),
    "in place through views": (_through_views, (X,)),
    "several outputs": (_multi_output, (X,)),
    "cross_entropy": (lambda z: F.cross_entropy(z, tl.tensor([0, 1, 2, 1])), (X,)),
    # ops whose tangents came from the double backward of their node before they had rules
    "pooling": (lambda a: F.max_pool2d(a, 2).sum() + F.avg_pool2d(a, 2) * 2
                + F.adaptive_avg_pool2d(a, 3), (IMG,)),
    "interpolate and pad": (lambda a: F.pad(F.interpolate(a, scale_factor=2, mode="bilinear"),
                                            (1, 2, 1, 0)), (IMG,)),
    "conv_transpose2d": (lambda a, k: F.conv_transpose2d(a, k.transpose(0, 1)), (IMG, K)),
    "gather and scatter": (lambda x: x.gather(1, tl.tensor([[0, 2], [1, 1], [4, 0], [3, 3]])).sum()
                           + tl.zeros(4, 5, dtype=F64).scatter_add(
                               1, tl.tensor([[4, 1, 2, 3, 0]] * 4), x), (X,)),
    "scans and sorting": (lambda x: x.cumsum(1) + x.cumprod(1) + x.sort(1)[0]
                          + x.logsumexp(1, keepdim=True), (X,)),
    "linear algebra": (lambda x: tl.linalg.inv(x[:, :4] + 3 * tl.eye(4, dtype=F64))
                       + tl.linalg.det(x[:, :4]) + tl.linalg.qr(x[:, :4])[1]
                       + tl.linalg.cholesky(x[:, :4] @ x[:, :4].T + tl.eye(4, dtype=F64)), (X,)),
    "lstm": (lambda x: LSTM(x.reshape(2, 2, 5))[0], (X,)),
    "einsum and bmm": (lambda x: tl.einsum("ij,kj->ik", x, x) + (x[None] @ x.T[None])[0], (X,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_tangents_against_central_differences(name):
    f, xs = CASES[name]
    g = tl.Generator().manual_seed(1)
    ts = [tl.randn(*x.shape, dtype=F64, generator=g) for x in xs]
    primal, tangent = jvp(f, xs, ts)
    np.testing.assert_allclose(primal.detach().numpy(), f(*xs).detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    assert tangent is not None
    fd = central_difference(f, xs, ts).numpy()
    np.testing.assert_allclose(tangent.numpy(), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_real_case_takes_rules_only(name, no_double_backward):
    """Every op of the real cases has a JVP rule: none needs the double backward."""
    f, xs = CASES[name]
    ts = [tl.randn(*x.shape, dtype=F64, generator=tl.Generator().manual_seed(1)) for x in xs]
    _, tangent = jvp(f, xs, ts)
    np.testing.assert_allclose(tangent.numpy(), central_difference(f, xs, ts).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_tangents_under_no_grad(name):
    """Tangents do not depend on grad mode (PyTorch's rule): under no_grad every case gives the
    tangent it gives with grad mode on; the primal and the tangent require no grad there."""
    f, xs = CASES[name]
    g = tl.Generator().manual_seed(1)
    ts = [tl.randn(*x.shape, dtype=F64, generator=g) for x in xs]
    _, want = jvp(f, xs, ts)
    with tl.no_grad():
        primal, got = jvp(f, xs, ts)
    assert got is not None and not primal.requires_grad and not got.requires_grad
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    primal.numpy()                  # a plain tensor, as PyTorch's under no_grad


def test_no_grad_keeps_parameters_out_of_the_graph():
    """Under no_grad with a dual input, a layer's weights (requiring grad, without tangents)
    get no gradient from the tangents' records."""
    lin = tl.nn.Linear(5, 3).double()
    with fwAD.dual_level(), tl.no_grad():
        d = fwAD.make_dual(X, tl.ones_like(X))
        _, t = fwAD.unpack_dual(lin(d))
        np.testing.assert_allclose(t.numpy(), np.ones((4, 5)) @ lin.weight.detach().numpy().T, rtol=1e-12)
        assert lin.weight.grad is None and not lin(X).requires_grad


@pytest.mark.parametrize("name", ["elementwise", "matmul", "softmax", "conv2d", "norms", "in place"])
def test_tangents_against_torch(name):
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw
    f, xs = CASES[name]
    g = tl.Generator().manual_seed(2)
    ts = [tl.randn(*x.shape, dtype=F64, generator=g) for x in xs]
    _, got = jvp(f, xs, ts)
    tf = {"elementwise": lambda x: x.sin() * x.exp() / (x * x + 1) - 2,
          "matmul": lambda x, w: x @ w,
          "softmax": lambda x: torch.nn.functional.log_softmax(x, -1)
          + torch.nn.functional.softmax(x, 0),
          "conv2d": lambda a, k: torch.nn.functional.conv2d(a, k, padding=1).relu(),
          "norms": lambda a: torch.nn.functional.layer_norm(a, (6,))
          + torch.nn.functional.batch_norm(a, None, None, training=True),
          "in place": lambda x: (x * 1.0).mul_(3).add_(1).sin_()}[name]
    with tfw.dual_level():
        out = tf(*[tfw.make_dual(torch.from_numpy(x.numpy()), torch.from_numpy(t.numpy()))
                   for x, t in zip(xs, ts)])
        want = tfw.unpack_dual(out).tangent.numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)


def test_a_module_with_a_dual_input_and_plain_parameters():
    tl.manual_seed(0)
    net = tl.nn.Sequential(tl.nn.Linear(5, 8), tl.nn.Tanh(), tl.nn.Linear(8, 2)).double()
    t = tl.randn(4, 5, dtype=F64)
    _, tangent = jvp(net, (X,), (t,))
    np.testing.assert_allclose(tangent.detach().numpy(), central_difference(net, (X,), (t,))
                               .detach().numpy(), rtol=1e-6, atol=1e-7)


class _Cube(tl.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 3 * x * x * t


class _CubeNoJvp(_Cube):
    jvp = None


@pytest.mark.parametrize("fn", [_Cube, _CubeNoJvp])
def test_custom_functions_use_their_jvp_or_their_backward(fn):
    t = tl.randn(4, 5, dtype=F64)
    _, tangent = jvp(lambda x: fn.apply(x) * 2, (X,), (t,))
    np.testing.assert_allclose(tangent.numpy(), (6 * X * X * t).numpy(), rtol=1e-12)
    with tl.no_grad():                  # apply records for the tangent under no_grad too
        _, tangent = jvp(lambda x: fn.apply(x) * 2, (X,), (t,))
    np.testing.assert_allclose(tangent.numpy(), (6 * X * X * t).numpy(), rtol=1e-12)


def test_levels_duals_and_their_rules():
    x, t = tl.randn(3, dtype=F64), tl.ones(3, dtype=F64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        y = d * 2
        assert fwAD.unpack_dual(y).tangent is not None
        assert fwAD.unpack_dual(x).tangent is None          # the primal itself has none
        assert fwAD.unpack_dual(fwAD.unpack_dual(y).primal).tangent is None
        with tl.no_grad():                                  # tangents travel in no_grad too
            np.testing.assert_array_equal(fwAD.unpack_dual(d * 3).tangent.numpy(), 3 * t.numpy())
            assert not (x * 3).requires_grad                # ... and nothing else records
        with pytest.raises(RuntimeError, match="Nested forward mode AD"):
            fwAD.enter_dual_level()
        with pytest.raises(ValueError, match="shape, dtype and device"):
            fwAD.make_dual(x, tl.ones(4, dtype=F64))
        with pytest.raises(ValueError, match="floating point or complex"):
            fwAD.make_dual(tl.ones(2, dtype=tl.int64), tl.ones(2, dtype=tl.int64))
        with pytest.raises(TypeError, match="must be Tensor"):
            fwAD.make_dual(x, [1.0, 2.0, 3.0])
        assert fwAD.unpack_dual(tl.fft.rfft(d)).tangent.dtype == tl.complex128
    assert fwAD.unpack_dual(y).tangent is None              # the level dropped them
    with pytest.raises(RuntimeError, match="enter a forward AD level"):
        fwAD.make_dual(x, t)

    @fwAD.dual_level()
    def decorated():
        return fwAD.unpack_dual(fwAD.make_dual(x, t).exp()).tangent
    np.testing.assert_allclose(decorated().numpy(), x.exp().numpy(), rtol=1e-12)


def test_a_dual_is_differentiable_backwards_in_its_primal():
    x = tl.randn(3, dtype=F64, requires_grad=True)
    with fwAD.dual_level():
        y = (fwAD.make_dual(x, tl.ones(3, dtype=F64)) ** 2).sum()
    (g,) = tl.autograd.grad(y, [x])
    np.testing.assert_allclose(g.numpy(), 2 * x.detach().numpy(), rtol=1e-12)


# ---- complex tensors -----------------------------------------------------------------------------
# A complex tangent is a direction in the (real, imag) plane of each element: the tangent of
# f(z) along t is the derivative of f(z + s t) at s = 0, so central differences stay the oracle
# for holomorphic and non-holomorphic functions (abs, conj, real, angle) alike.
Z = tl.randn(3, 4, dtype=tl.complex128, generator=G)
COMPLEX_CASES = {
    "holomorphic": (lambda z: (z.exp() * z.sin() / (z * z + 1)).sum(0), "exp_sin"),
    "non-holomorphic": (lambda z: z.abs() * z.angle() + z.conj() * z + z.real - z.imag + z.sgn(), "abs"),
    "products": (lambda z: z @ z.T.conj() + tl.addmm(z[:, :3], z, z[:3].T, beta=2 - 1j, alpha=0.5j)
                 + tl.einsum("ij,kj->ik", z, z * 1j), "mm"),
    "views and reductions": (lambda z: (z * 1)[1:].t().unsqueeze(0).expand(2, 4, 2).flip(0).sum(0)
                             .cumsum(0).mean(1), None),
    "joining and indexing": (lambda z: tl.cat([z, z.exp()]).sum(0) + tl.stack([z, z]).prod(0)[0]
                             + z.reshape(-1)[tl.tensor([0, 3, 1, 1])], None),
    "in place through views": (lambda z: (lambda w: (w[1:3].mul_(2j), w.sin_())[1])(z * 1), None),
    "real to complex and back": (lambda z: tl.view_as_real(tl.fft.fft(z, dim=1)).sum(-1)
                                 + tl.fft.irfft(tl.fft.rfft(z.real, dim=1), dim=1)
                                 + tl.complex(z.real, z.imag * 3).exp().abs(), None),
    "dot products": (lambda z: tl.vdot(z[0], z[1]) + z[0].dot(z[2]) + z.mv(z[0]).sum(), None),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_complex_tangents_against_central_differences(name):
    f, _ = COMPLEX_CASES[name]
    t = tl.randn(3, 4, dtype=tl.complex128, generator=tl.Generator().manual_seed(3))
    primal, tangent = jvp(f, (Z,), (t,))
    assert tangent.dtype == primal.dtype
    np.testing.assert_allclose(tangent.numpy(), central_difference(f, (Z,), (t,)).numpy(),
                               rtol=1e-6, atol=1e-7)
    with tl.no_grad():
        _, again = jvp(f, (Z,), (t,))
    np.testing.assert_allclose(again.numpy(), tangent.numpy(), rtol=1e-12, atol=1e-12)


def test_complex_tangents_against_torch():
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw
    t = tl.randn(3, 4, dtype=tl.complex128, generator=tl.Generator().manual_seed(4))
    # written with Tensor methods only, so each runs on either library's tensors
    cases = {name: COMPLEX_CASES[name][0] for name in ("holomorphic", "non-holomorphic")}
    cases["products"] = lambda z: (z @ z.T.conj() + z[:, :3].addmm(z, z[:3].T, beta=2 - 1j, alpha=0.5j)
                                   + z.exp() @ z.T)
    for name, f in cases.items():
        _, got = jvp(f, (Z,), (t,))
        with tfw.dual_level():
            out = f(tfw.make_dual(torch.from_numpy(Z.numpy()), torch.from_numpy(t.numpy())))
            want = tfw.unpack_dual(out).tangent.numpy()
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12, err_msg=name)


def test_complex_elementwise_ops_take_their_formulas(no_double_backward):
    """Complex tangents through the elementwise ops without the double backward: the
    holomorphic ones by their derivative formula on the saved values (the backward applies it
    to the conjugates), abs/angle/sgn/conj by rules of their own; zero at z = 0 where the
    backward is."""
    t = tl.randn(3, 4, dtype=tl.complex128, generator=tl.Generator().manual_seed(6))
    cases = [lambda z: (z.exp() * z.sin() / (z * z + 1) + z.sqrt() - z.log() ** 2).tanh(),
             lambda z: z.rsqrt() + z.reciprocal() + z.sigmoid() + z.square() - z.neg() + z.cos() * z.cosh(),
             lambda z: z.add(z * z, alpha=2) - z.sub(z.exp(), alpha=3) + z ** 3 + 2 ** z + z.pow(z),
             lambda z: z * Z.real + Z.real / z + (z * 1j).abs() * z.angle() + z.sgn() * z.conj()]
    for f in cases:
        _, tangent = jvp(f, (Z,), (t,))
        np.testing.assert_allclose(tangent.numpy(), central_difference(f, (Z,), (t,)).numpy(), rtol=1e-6, atol=1e-7)
    zero = tl.zeros(2, dtype=tl.complex128)
    for f in (lambda z: z.abs(), lambda z: z.angle(), lambda z: z.sgn()):
        _, tangent = jvp(f, (zero,), (tl.ones_like(zero),))
        assert not tangent.numpy().any()


def test_complex_products_take_their_table_rule(no_double_backward):
    """The products' rule (t_a b + a t_b, with the product itself) holds for complex operands."""
    t = tl.randn(3, 4, dtype=tl.complex128, generator=tl.Generator().manual_seed(5))
    w = tl.randn(4, 2, dtype=tl.complex128, generator=G)
    for f in (lambda z: z @ w, lambda z: z.mm(w.conj()), lambda z: tl.addmm(z[:, :2], z, w, alpha=2j)):
        _, tangent = jvp(f, (Z,), (t,))
        np.testing.assert_allclose(tangent.numpy(), (f(t) - f(tl.zeros_like(t))).numpy(), rtol=1e-12)


# ---- the JVP tables beside the backward formulas (_ops/*_grad.py's JVP) ------------------------
B3 = tl.randn(3, 4, 5, dtype=F64, generator=G)
C3 = tl.randn(3, 5, 2, dtype=F64, generator=G)
V5 = tl.randn(5, dtype=F64, generator=G)
TABLE_CASES = {      # each runs only ops with a table rule (no double backward), then compared
    "reshape family": lambda x: x.reshape(20).view(2, 10).unsqueeze(0).squeeze(0).flatten(),
    "permute/transpose/t": lambda x: x.unsqueeze(0).permute(2, 0, 1).transpose(0, 2).squeeze(1).t(),
    "expand": lambda x: x[:, :1].expand(4, 7),
    "slice/select/diagonal": lambda x: x[1:3, ::2].select(1, 1) + x.diagonal()[:2],
    "unfold": lambda x: x.unfold(1, 3, 1).unfold(0, 2, 2),
    "flip/clone": lambda x: x.flip(0).clone(),
    "sum/mean": lambda x: x.sum(0, keepdim=True) + x.mean(1).sum() + x.sum() + x.mean(),
    "cat/stack": lambda x: tl.stack([tl.cat([x, x], 1), tl.cat([x.flip(0), x], 1)], 2),
    "split/unbind/chunk": lambda x: x.split([1, 3])[1].sum(0) + x.chunk(2)[0].sum(0) + x.unbind(1)[2].sum(),
    "to": lambda x: x.float().double(),
}
PRODUCT_CASES = {
    "mm": (lambda x, w: x.mm(w), (X, W)),
    "bmm": (lambda b, c: b.bmm(c), (B3, C3)),
    "mv/dot": (lambda x, v: x.mv(v).dot(x.mv(v)), (X, V5)),
    "addmm": (lambda x, w, b: tl.addmm(b, x, w, beta=0.5, alpha=2.0), (X, W, W[0])),
    "addmm bias only": (lambda b: tl.addmm(b, X, W), (W[0],)),
    "baddbmm/addbmm": (lambda b, c: tl.baddbmm(b.bmm(c), b, c, alpha=3.0).sum(0) + tl.addbmm(
        b[0].mm(c[0]), b, c), (B3, C3)),
}


LN_W, LN_B = tl.randn(5, dtype=F64, generator=G), tl.randn(5, dtype=F64, generator=G)
BN_W, BN_B = tl.randn(3, dtype=F64, generator=G), tl.randn(3, dtype=F64, generator=G)
CONV_B = tl.randn(4, dtype=F64, generator=G)
NONLINEAR_CASES = {
    "softmax/log_softmax": (lambda x: F.softmax(x, 1) * 3 + F.log_softmax(x, 0), (X,)),
    "logsumexp/cumsum": (lambda x: x.logsumexp(1) + x.cumsum(1).sum(1) + x.logsumexp((0, 1)), (X,)),
    "amax with ties": (lambda x: tl.cat([x, x]).amax(0).sum() + x.amin() + x.amax(1).sum(), (X,)),
    "var/std and their _mean forms": (lambda x: x.var(1) + x.std(0, correction=0).sum() + x.var()
                                      + tl.var_mean(x, 0)[0].sum() + tl.var_mean(x, 1, keepdim=True)[1].sum()
                                      + tl.std_mean(x)[0] * tl.std_mean(x, 0)[1].sum(), (X,)),
    "prod": (lambda x: x.prod() + x.prod(1).sum() + x[:2].prod(0, keepdim=True).sum(), (X,)),
    "var/std over everything, kept dims": (lambda x: tl.var(x, None, keepdim=True) * tl.std_mean(
        x, None, keepdim=True)[1] + tl.std(x, None, keepdim=True), (X,)),
    "prod with a zero": (lambda x: (x * tl.tensor([1.0, 0, 1, 1, 1], dtype=F64)).prod(1)
                         + (x * tl.tensor([1.0, 0, 1, 1, 1], dtype=F64)).prod(0).sum(), (X,)),
    "indexing, gather, index_select, take": (
        lambda x: x[tl.tensor([0, 2, 2])].sum(0) + x[:, tl.tensor([4, 1])].sum(1).sum()
        + x.gather(1, tl.tensor([[0, 0], [1, 4], [3, 3], [2, 0]])).sum(0).sum()
        + x.index_select(0, tl.tensor([3, 1])).sum(0) + x.take(tl.tensor([0, 7, 19])).sum(), (X,)),
    "masked_select/masked_fill": (
        lambda x, v: x.masked_select(x > 0).sum() + x.masked_fill(x < 0, v).sum(0)
        + x.masked_fill(x < 0.5, 2.0).sum(), (X, tl.tensor(0.7, dtype=F64))),
    "max/min/median": (lambda x: x.max() + x.min() * 2 + x.median() + x.max(1)[0].sum()
                       + x.min(0, keepdim=True)[0].sum() + x.median(1).values.sum(), (X,)),
    "conv2d x, w and bias": (lambda a, k, b: F.conv2d(a, k, b, stride=2, padding=1), (IMG, K, CONV_B)),
    "conv2d x only": (lambda a: F.conv2d(a, K, None, padding=1, dilation=2), (IMG,)),
    "conv1d w only": (lambda k: F.conv1d(IMG[:, :, 0], k[:, :, 0], None), (K,)),
    "conv_transpose2d x, w and bias": (lambda a, k, b: F.conv_transpose2d(
        a, k.transpose(0, 1).contiguous(), b, stride=2, padding=1, output_padding=1), (IMG, K, CONV_B)),
    "conv_transpose1d x only": (lambda a: F.conv_transpose1d(a[:, :, 0], K[:, :, 0].transpose(0, 1).contiguous(),
                                                            None, stride=3), (IMG,)),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (5,), w, b), (X, LN_W, LN_B)),
    "batch_norm train": (lambda a, w, b: F.batch_norm(a, None, None, w, b, training=True), (IMG, BN_W, BN_B)),
    "batch_norm eval": (lambda a: F.batch_norm(a, IMG.mean((0, 2, 3)), IMG.var((0, 2, 3)) + 1, training=False),
                        (IMG,)),
    "group_norm": (lambda a, w: F.group_norm(a, 3, w), (IMG, BN_W)),
    "max/avg/adaptive pooling": (lambda a: F.max_pool2d(a, 2).sum() + F.avg_pool2d(a, 3, 1, 1).mean() * 7
                                 + F.adaptive_avg_pool2d(a, (2, 3)).sum() + F.max_pool1d(a[0], 2).sum(), (IMG,)),
    "embedding": (lambda w: F.embedding(tl.tensor([[0, 2, 2], [1, 0, 3]]), w), (X,)),
    "matmul broadcast": (lambda b, x: b.matmul(x[:, :2]) + x[:, 0].matmul(C3).sum(), (B3, W)),
}


@pytest.fixture
def no_double_backward(monkeypatch):
    def refuse(node, meta, tangents):
        raise AssertionError(f"{node.name()} fell back to the double backward")
    monkeypatch.setattr(fwAD, "_by_double_backward", refuse)


@pytest.mark.parametrize("name", list(TABLE_CASES))
def test_linear_ops_take_their_table_rule(name, no_double_backward):
    f = TABLE_CASES[name]
    t = tl.randn(4, 5, dtype=F64, generator=G)
    primal, tangent = jvp(f, (X,), (t,))
    np.testing.assert_allclose(primal.detach().numpy(), f(X).numpy())
    # linear maps: the tangent is the op applied to the tangent itself
    np.testing.assert_allclose(tangent.numpy(), f(t).numpy(), rtol=1e-12, atol=1e-12)




def test_cat_with_an_input_without_tangent(no_double_backward):
    # the other input's tangent counts as zeros; cat promotes, and so does the tangent
    with fwAD.dual_level():
        d = fwAD.make_dual(X, tl.ones_like(X))
        out = tl.cat([X.float().double() * 0 + 5, d], 0)
        _, t = fwAD.unpack_dual(out)
    np.testing.assert_array_equal(t.numpy(), np.concatenate([np.zeros((4, 5)), np.ones((4, 5))]))


@pytest.mark.parametrize("name", list(PRODUCT_CASES) + list(NONLINEAR_CASES))
def test_table_rules_against_central_differences(name, no_double_backward):
    f, xs = {**PRODUCT_CASES, **NONLINEAR_CASES}[name]
    ts = [tl.randn(*x.shape, dtype=F64, generator=G) for x in xs]
    _, tangent = jvp(f, xs, ts)
    np.testing.assert_allclose(tangent.numpy(), central_difference(f, xs, ts).numpy(), rtol=1e-6, atol=1e-7)


def test_table_rules_edge_shapes_and_dtypes(no_double_backward):
    """An empty product's tangent is zero (no factors); masked_fill's tangent keeps the
    input's dtype when the value is a float64 0-d tensor."""
    e = tl.zeros(0, 3, dtype=F64)
    for f, shape in ((lambda a: a.prod(), ()), (lambda a: a.prod(0), (3,))):
        _, tangent = jvp(f, (e,), (tl.ones(0, 3, dtype=F64),))
        assert tuple(tangent.shape) == shape and not tangent.numpy().any()
    x32 = X.float()
    with fwAD.dual_level():
        d = fwAD.make_dual(x32, tl.ones_like(x32))
        v = fwAD.make_dual(tl.tensor(0.5, dtype=F64), tl.tensor(2.0, dtype=F64))
        primal, tangent = fwAD.unpack_dual(d.masked_fill(x32 > 0, v))
    assert tangent.dtype is primal.dtype is tl.float32
    np.testing.assert_array_equal(tangent.numpy(), np.where(x32.numpy() > 0, 2.0, 1.0))


def test_the_distributions_custom_functions_have_jvps(no_double_backward):
    """The regularized incomplete gamma of the distributions (in a and x) against central
    differences; a Gamma rsample's tangent against its reverse-mode gradient (the implicit
    reparameterisation: the draw moves with alpha as its quantile does)."""
    from torchlite.distributions import Gamma
    from torchlite.distributions._incomplete_gamma import gammainc
    a, x = tl.tensor([0.5, 1.5, 3.0], dtype=F64), tl.tensor([0.3, 2.0, 2.5], dtype=F64)
    ta, tx = tl.tensor([1.0, -0.5, 0.2], dtype=F64), tl.tensor([0.3, 1.0, -2.0], dtype=F64)
    _, tangent = jvp(gammainc, (a, x), (ta, tx))
    np.testing.assert_allclose(tangent.numpy(), central_difference(gammainc, (a, x), (ta, tx)).numpy(),
                               rtol=1e-6, atol=1e-8)
    tl.manual_seed(0)
    _, tangent = jvp(lambda c: Gamma(c, tl.ones(3, dtype=F64)).rsample(), (a,), (ta,))
    tl.manual_seed(0)
    c = a.clone().requires_grad_()
    draws = Gamma(c, tl.ones(3, dtype=F64)).rsample()
    (slope,) = tl.autograd.grad(draws.sum(), [c])      # elementwise: d draw_i / d alpha_i
    np.testing.assert_allclose(tangent.numpy(), (slope * ta).numpy(), rtol=1e-12)


def test_unpack_dual_primal_requires_grad_only_when_a_leaf_does():
    import torchlite.autograd.forward_ad as fwAD
    x, t = tl.randn(3), tl.ones(3)
    w = tl.randn(3, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        p, tangent = fwAD.unpack_dual(d.sin())
        assert not p.requires_grad                  # PyTorch's: a plain tensor
        np.testing.assert_allclose(p.numpy(), np.sin(x.numpy()), rtol=1e-6)
        np.testing.assert_allclose(tangent.numpy(), np.cos(x.numpy()), rtol=1e-6)
        p2, _ = fwAD.unpack_dual((d * w).sum())
        assert p2.requires_grad                     # w is a leaf of the reverse graph
        p2.backward()
        np.testing.assert_allclose(w.grad.numpy(), x.numpy(), rtol=1e-6)
        p3, _ = fwAD.unpack_dual(fwAD.make_dual(w, t).exp())
        assert p3.requires_grad
