"""torchlite.nn.functional's normalisation functions and the normalisation Modules.

CASES lists every function of nn/functional/normalization.py once (batch norm in training and
eval mode): gradcheck in float64 on several layouts, gradgradcheck (batch/layer/group norm are
single ops whose backward is differentiable again), values and gradients compared with
PyTorch's.  Forward values are checked against NumPy references, running statistics against
PyTorch's update rule, then dtypes, errors and the Modules (reprs, buffers, input checks)."""

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.nn.functional import normalization as _norm
from helpers import Case, case_table_tests, missing_ops, assert_values, make_noncontig


def _f(L):
    return L.nn.functional


def _vec(L, values):
    return L.tensor(values, dtype=L.float64)


_RM, _RV = [0.1, -0.3, 0.5], [0.5, 1.5, 2.0]

CASES = [
    Case("batch_norm", lambda L, x, w, b: _f(L).batch_norm(x, None, None, w, b, True), (4, 3, 2),
         (3,), (3,), layouts=("contig", "step")),
    Case("batch_norm_eval", lambda L, x, w, b: _f(L).batch_norm(
        x, _vec(L, _RM), _vec(L, _RV), w, b, False), (4, 3, 2), (3,), (3,), layouts=("contig", "step")),
    Case("batch_norm_2d_input", lambda L, x: _f(L).batch_norm(x, None, None, training=True), (4, 3)),
    Case("layer_norm", lambda L, x, w, b: _f(L).layer_norm(x, (3,), w, b), (2, 4, 3), (3,), (3,),
         layouts=("contig", "step")),
    Case("layer_norm_2dims", lambda L, x: _f(L).layer_norm(x, (2, 3), eps=0.1), (3, 2, 3)),
    Case("group_norm", lambda L, x, w, b: _f(L).group_norm(x, 2, w, b), (2, 4, 3), (4,), (4,),
         layouts=("contig", "step")),
    Case("instance_norm", lambda L, x, w: _f(L).instance_norm(x, weight=w), (2, 3, 4), (3,),
         layouts=("contig", "step")),
    Case("rms_norm", lambda L, x, w: _f(L).rms_norm(x, (3,), w), (2, 4, 3), (3,),
         layouts=("contig", "step")),
    Case("normalize", lambda L, x: _f(L).normalize(x, p=3.0, dim=0), (3, 4)),
    Case("local_response_norm", lambda L, x: _f(L).local_response_norm(x, 3, alpha=0.5, k=2.0),
         (2, 4, 3)),
]

test_gradcheck, test_gradgradcheck, test_matches_torch = case_table_tests(CASES)


def test_every_function_has_a_case():
    assert missing_ops(CASES, _norm.__all__) == []


def test_grad_fn_names_match_torch():
    torch = pytest.importorskip("torch")
    for L in (tl, torch):
        x = L.ones(2, 4, 3, dtype=L.float64, requires_grad=True) * 1
        w = L.ones(4, dtype=L.float64, requires_grad=True)
        names = [type(f(L.nn.functional).grad_fn).__name__ for f in (
            lambda Fn: Fn.batch_norm(x, None, None, w, None, True),
            lambda Fn: Fn.batch_norm(x, L.zeros(4, dtype=L.float64), L.ones(4, dtype=L.float64)),
            lambda Fn: Fn.layer_norm(x, (3,)),
            lambda Fn: Fn.group_norm(x, 2, w))]
        assert names == ["NativeBatchNormBackward0", "NativeBatchNormBackward0",
                         "NativeLayerNormBackward0", "NativeGroupNormBackward0"]


# ---- forward values against NumPy ------------------------------------------------------------------
def _np_norm(x, axes, eps):
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps)


RNG = np.random.default_rng(11)
X4 = RNG.standard_normal((3, 4, 2, 5)) * 2 + 1
W4, B4 = RNG.random(4) + 0.5, RNG.standard_normal(4)
C4 = (1, 4, 1, 1)

NP_CASES = {
    "batch_norm": (lambda x: F.batch_norm(x, None, None, tl.tensor(W4), tl.tensor(B4), True),
                   lambda a: _np_norm(a, (0, 2, 3), 1e-5) * W4.reshape(C4) + B4.reshape(C4)),
    "batch_norm_eval": (
        lambda x: F.batch_norm(x, tl.tensor(B4), tl.tensor(W4), None, None, False, eps=0.1),
        lambda a: (a - B4.reshape(C4)) / np.sqrt(W4.reshape(C4) + 0.1)),
    "layer_norm": (lambda x: F.layer_norm(x, (2, 5), tl.ones(2, 5, dtype=tl.float64) * 2),
                   lambda a: _np_norm(a, (2, 3), 1e-5) * 2),
    "group_norm": (lambda x: F.group_norm(x, 2, tl.tensor(W4), tl.tensor(B4)),
                   lambda a: _np_norm(a.reshape(3, 2, -1), 2, 1e-5).reshape(a.shape)
                   * W4.reshape(C4) + B4.reshape(C4)),
    "instance_norm": (lambda x: F.instance_norm(x, eps=1e-3),
                      lambda a: _np_norm(a, (2, 3), 1e-3)),
    "rms_norm": (lambda x: F.rms_norm(x, (5,), eps=1e-4),
                 lambda a: a / np.sqrt((a * a).mean(-1, keepdims=True) + 1e-4)),
    "normalize": (lambda x: F.normalize(x, dim=1),
                  lambda a: a / np.maximum(np.sqrt((a * a).sum(1, keepdims=True)), 1e-12)),
    "local_response_norm": (
        lambda x: F.local_response_norm(x, 3, alpha=0.3, beta=0.6, k=1.5),
        lambda a: a / (1.5 + 0.3 / 3 * sum(
            np.pad(a * a, ((0, 0), (1, 1), (0, 0), (0, 0)))[:, i:i + 4] for i in range(3))) ** 0.6),
}


def test_every_function_has_a_numpy_reference():
    assert [n for n in _norm.__all__ if n not in NP_CASES] == []


@pytest.mark.parametrize("name", sorted(NP_CASES))
def test_forward_matches_numpy(name):
    ours, ref = NP_CASES[name]
    expected = ref(X4)
    for label, x in make_noncontig(X4, tl.float64):
        assert_values(ours(x), expected, rtol=1e-10, atol=1e-12, msg=f"{name} {label}")


@pytest.mark.parametrize("dtype,tol", [(tl.float32, 1e-5), (tl.float16, 5e-3), (tl.bfloat16, 3e-2)])
def test_dtypes(dtype, tol):
    x = tl.tensor(X4).to(dtype)
    w32, b32 = tl.tensor(W4).float(), tl.tensor(B4).float()
    for ours, ref in [
            (F.batch_norm(x, None, None, w32, b32, True),
             NP_CASES["batch_norm"][1](x.double().numpy())),
            (F.layer_norm(x, (5,)), _np_norm(x.double().numpy(), 3, 1e-5)),
            (F.group_norm(x, 4), _np_norm(x.double().numpy(), (2, 3), 1e-5))]:
        assert ours.dtype is dtype
        assert_values(ours.float(), ref, rtol=tol, atol=tol)


def test_half_input_normalises_in_float32_and_gets_gradients():
    x = tl.tensor(X4).to(tl.float16).requires_grad_()
    w = tl.ones(4, requires_grad=True)
    y = F.batch_norm(x, None, None, w, None, True)
    y.float().sum().backward()
    assert x.grad.dtype is tl.float16 and w.grad.dtype is tl.float32


def test_norms_thread_counts(threads):
    a = RNG.standard_normal((16, 8, 32, 32)).astype(np.float32)
    x = tl.tensor(a, requires_grad=True)
    y = F.batch_norm(x, None, None, training=True)
    assert_values(y.detach(), _np_norm(a.astype(np.float64), (0, 2, 3), 1e-5), rtol=1e-4, atol=1e-4)
    (y * y).sum().backward()
    assert np.abs(x.grad.numpy()).max() < 1e-2     # d(sum y^2)/dx = 0 for a normalised y
    z = F.layer_norm(tl.tensor(a.reshape(128, 1024)), (1024,))
    assert_values(z, _np_norm(a.reshape(128, 1024).astype(np.float64), 1, 1e-5), rtol=1e-4, atol=1e-4)


# ---- running statistics ------------------------------------------------------------------------------
def test_running_stats_update_like_torch():
    torch = pytest.importorskip("torch")
    stats = []
    for L in (tl, torch):
        rm, rv = L.tensor(_RM, dtype=L.float64), L.tensor(_RV, dtype=L.float64)
        for k in range(3):
            x = L.tensor(X4[:, :3] * (k + 1))
            L.nn.functional.batch_norm(x, rm, rv, training=True, momentum=0.3)
        stats.append((rm.numpy(), rv.numpy()))
    np.testing.assert_allclose(stats[0][0], stats[1][0], rtol=1e-12)
    np.testing.assert_allclose(stats[0][1], stats[1][1], rtol=1e-12)


def test_running_var_uses_the_unbiased_variance():
    x = tl.tensor(X4[:, :3])
    rm, rv = tl.zeros(3, dtype=tl.float64), tl.zeros(3, dtype=tl.float64)
    F.batch_norm(x, rm, rv, training=True, momentum=1.0)
    a = X4[:, :3]
    assert_values(rm, a.mean((0, 2, 3)), rtol=1e-12)
    assert_values(rv, a.var((0, 2, 3), ddof=1), rtol=1e-12)
    v = rm._version
    F.batch_norm(x, rm, rv, training=False)
    assert rm._version == v                  # eval mode leaves the statistics alone


def test_instance_norm_running_stats_are_averaged_over_the_batch():
    torch = pytest.importorskip("torch")
    out = []
    for L in (tl, torch):
        rm, rv = L.zeros(4, dtype=L.float64), L.ones(4, dtype=L.float64)
        L.nn.functional.instance_norm(L.tensor(X4), rm, rv, momentum=0.5)
        out.append(np.concatenate([rm.numpy(), rv.numpy()]))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12)


# ---- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,exc,msg", [
    (lambda: F.batch_norm(tl.randn(4, 3, 5), None, None), RuntimeError,
     "running_mean must be defined in evaluation mode"),
    (lambda: F.batch_norm(tl.randn(4, 3, 5), tl.zeros(4), tl.ones(4), training=True), RuntimeError,
     "running_mean should contain 3 elements not 4"),
    (lambda: F.batch_norm(tl.randn(4, 3), None, None, tl.ones(4), training=True), RuntimeError,
     "weight should contain 3 elements not 4"),
    (lambda: F.batch_norm(tl.randn(1, 3), None, None, training=True), ValueError,
     "Expected more than 1 value per channel when training"),
    (lambda: F.batch_norm(tl.randn(4, 3), tl.zeros(3), None, training=True), ValueError,
     "must either both be None or neither be None"),
    (lambda: F.batch_norm(tl.randn(4, 3).double(), tl.zeros(3), tl.ones(3), training=True),
     RuntimeError, "mixed dtype"),
    (lambda: F.batch_norm(tl.ones(4, 3, dtype=tl.int64), None, None, training=True),
     NotImplementedError, "not implemented for 'Long'"),
    (lambda: F.layer_norm(tl.randn(4, 3, 5), (4,)), RuntimeError,
     r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but got input of size\[4, 3, 5\]"),
    (lambda: F.layer_norm(tl.randn(4, 5), (5,), tl.ones(4)), RuntimeError,
     "Expected weight to be of same shape as normalized_shape"),
    (lambda: F.layer_norm(tl.randn(4, 5), 5), TypeError, "must be tuple of ints, not int"),
    (lambda: F.group_norm(tl.randn(4, 3, 5), 2), RuntimeError,
     "Expected number of channels in input to be divisible by num_groups"),
    (lambda: F.group_norm(tl.randn(4, 3), 3, tl.ones(2)), RuntimeError,
     "Expected weight to be a vector of size equal to the number of channels"),
    (lambda: F.group_norm(tl.randn(3), 3), RuntimeError, "Expected at least 2 dimensions"),
    (lambda: F.rms_norm(tl.randn(4, 5), (4,)), RuntimeError, r"expected input with shape \[\*4\]"),
    (lambda: F.instance_norm(tl.randn(3, 5, 1)), ValueError,
     "Expected more than 1 spatial element when training"),
    (lambda: F.local_response_norm(tl.randn(3, 5), 2), ValueError, "Expected 3D or higher"),
    (lambda: F.local_response_norm(tl.randn(2, 3, 5), 0), RuntimeError,
     "kernel size should be greater than zero"),
])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


# ---- modules ---------------------------------------------------------------------------------------
MODULES = ["BatchNorm1d(3)", "BatchNorm2d(3, momentum=None, affine=False)",
           "BatchNorm3d(4, eps=1e-3, track_running_stats=False)", "BatchNorm2d(3, bias=False)",
           "InstanceNorm1d(3)", "InstanceNorm2d(3, affine=True)",
           "InstanceNorm3d(3, track_running_stats=True)", "LayerNorm(5)",
           "LayerNorm((4, 5), elementwise_affine=False)", "LayerNorm(5, bias=False)",
           "GroupNorm(2, 4)", "GroupNorm(2, 4, affine=False)", "RMSNorm(5)",
           "RMSNorm((2, 3), eps=1e-3, elementwise_affine=False)", "LocalResponseNorm(3)"]


@pytest.mark.parametrize("spec", MODULES)
def test_module_repr_and_state_match_torch(spec):
    torch = pytest.importorskip("torch")  # noqa: F841  (eval below reads it)
    ours, theirs = eval("nn." + spec), eval("torch.nn." + spec)
    assert repr(ours) == repr(theirs)
    mine = {k: (tuple(v.shape), v.dtype.name if hasattr(v.dtype, "name") else str(v.dtype),
                v.tolist()) for k, v in ours.state_dict().items()}
    ref = {k: (tuple(v.shape), str(v.dtype).split(".")[-1], v.tolist())
           for k, v in theirs.state_dict().items()}
    assert {k: (s, d) for k, (s, d, _) in mine.items()} == {k: (s, d) for k, (s, d, _) in ref.items()}
    assert {k: v for k, (_, _, v) in mine.items()} == {k: v for k, (_, _, v) in ref.items()}


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_module_training_matches_torch(momentum):
    torch = pytest.importorskip("torch")
    res = []
    for L in (tl, torch):
        m = L.nn.BatchNorm2d(4, momentum=momentum).double()
        with L.no_grad():
            m.weight.copy_(L.tensor(W4))
            m.bias.copy_(L.tensor(B4))
        outs = [m(L.tensor(X4 * (k + 1))) for k in range(3)]
        m.eval()
        outs.append(m(L.tensor(X4)))
        res.append([o.detach().numpy() for o in outs] + [m.running_mean.numpy(),
                                                         m.running_var.numpy()])
        assert int(m.num_batches_tracked) == 3
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_batchnorm_without_running_stats_uses_batch_stats_in_eval():
    m = nn.BatchNorm1d(4, track_running_stats=False).double()
    m.eval()
    x = tl.tensor(X4[:, :, 0, 0])
    assert_values(m(x).detach(), _np_norm(X4[:, :, 0, 0], 0, 1e-5), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mod,x,exc,msg", [
    ("BatchNorm1d(3)", (2, 3, 4, 4), ValueError, r"expected 2D or 3D input \(got 4D input\)"),
    ("BatchNorm2d(3)", (2, 3, 4), ValueError, r"expected 4D input \(got 3D input\)"),
    ("BatchNorm3d(3)", (2, 3, 4), ValueError, r"expected 5D input \(got 3D input\)"),
    ("BatchNorm2d(3)", (2, 4, 4, 4), RuntimeError, "running_mean should contain 4 elements not 3"),
    ("InstanceNorm1d(3)", (2, 3, 4, 4), ValueError, r"expected 2D or 3D input \(got 4D input\)"),
    ("InstanceNorm1d(3, affine=True)", (2, 4, 4), ValueError,
     r"expected input's size at dim=1 to match num_features \(3\), but got: 4."),
    ("LayerNorm(5)", (2, 4), RuntimeError, r"expected input with shape \[\*, 5\]"),
    ("GroupNorm(3, 6)", (2, 4), RuntimeError, "divisible by num_groups"),
])
def test_module_input_checks(mod, x, exc, msg):
    with pytest.raises(exc, match=msg):
        eval("nn." + mod)(tl.randn(*x))


def test_instance_norm_module_no_batch_input_and_warning():
    m = nn.InstanceNorm1d(3)
    out = m(tl.tensor(X4[0, :3, 0]))
    assert_values(out, _np_norm(X4[0, :3, 0], 1, 1e-5), rtol=1e-10, atol=1e-12)
    with pytest.warns(UserWarning, match="does not match num_features"):
        m(tl.randn(2, 4, 5))
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups \(4\)"):
        nn.GroupNorm(4, 6)


def test_norm_modules_train_their_parameters():
    for m, shape in [(nn.LayerNorm(5), (3, 5)), (nn.GroupNorm(2, 4), (3, 4, 2)),
                     (nn.BatchNorm1d(4), (3, 4)), (nn.RMSNorm(5), (3, 5))]:
        x = tl.randn(*shape)
        (m(x) * tl.randn(*shape)).sum().backward()
        for name, p in m.named_parameters():
            assert p.grad is not None and p.grad.shape == p.shape, (m, name)


# ---- the fused kernels (torchlite/_core/norm.pyx): every SIMD level, odd sizes, threads ----------
def _ln_reference(x, w, b, g, eps=1e-5):
    """layer norm over the last dim and its gradients, in float64 NumPy."""
    m = x.mean(-1, keepdims=True)
    r = 1 / np.sqrt(x.var(-1, keepdims=True) + eps)
    xh = (x - m) * r
    gh = g * w
    dx = r * (gh - gh.mean(-1, keepdims=True) - xh * (gh * xh).mean(-1, keepdims=True))
    return xh * w + b, dx, (g * xh).sum(0), g.sum(0)


def _bn_reference(x, w, b, g, eps=1e-5):
    axes = (0, 2)
    m = x.mean(axes, keepdims=True)
    r = 1 / np.sqrt(x.var(axes, keepdims=True) + eps)
    xh = (x - m) * r
    wb = w.reshape(1, -1, 1)
    gh = g * wb
    dx = r * (gh - gh.mean(axes, keepdims=True) - xh * (gh * xh).mean(axes, keepdims=True))
    return xh * wb + b.reshape(1, -1, 1), dx, (g * xh).sum(axes), g.sum(axes)


def _run_norm(kind, arrays, dtype):
    x, w, b, g = (tl.tensor(a).to(dtype) for a in arrays)
    x.requires_grad_(), w.requires_grad_(), b.requires_grad_()
    if kind == "layer":
        y = F.layer_norm(x, (x.shape[-1],), w, b)
    else:
        y = F.batch_norm(x, None, None, w, b, True)
    y.backward(g)
    return [t.detach().double().numpy() for t in (y, x.grad, w.grad, b.grad)]


def _norm_arrays(kind, rng):
    if kind == "layer":          # K = 131: a tail after the vector lanes; 9 rows: ragged blocks
        x = rng.standard_normal((9, 131)) * 3 + 5
        w, b = rng.random(131) + 0.5, rng.standard_normal(131)
    else:                        # S = 37 per run
        x = rng.standard_normal((6, 5, 37)) * 3 + 5
        w, b = rng.random(5) + 0.5, rng.standard_normal(5)
    return x, w, b, rng.standard_normal(x.shape)


@pytest.mark.parametrize("kind", ["layer", "batch"])
@pytest.mark.parametrize("dtype,tol", [(tl.float32, 2e-5), (tl.float64, 1e-11)])
def test_fused_kernels_at_every_isa_level(kind, dtype, tol):
    from torchlite._core import norm as NK
    from helpers import available_isa_levels
    rng = np.random.default_rng(5)
    arrays = _norm_arrays(kind, rng)
    held = [tl.tensor(a).to(dtype).double().numpy() for a in arrays]
    ref = (_ln_reference if kind == "layer" else _bn_reference)(*held)
    old = NK.isa_level()
    try:
        for level in available_isa_levels():
            assert NK.set_isa_level(level) == level
            got = _run_norm(kind, arrays, dtype)
            for a, r, name in zip(got, ref, ("y", "dx", "dw", "db")):
                np.testing.assert_allclose(a, r, rtol=tol, atol=tol * 10,
                                           err_msg=f"{kind} {name} level {level}")
    finally:
        NK.set_isa_level(old)


@pytest.mark.parametrize("kind", ["layer", "batch"])
def test_fused_kernels_same_result_at_1_and_2_threads(kind):
    rng = np.random.default_rng(6)
    if kind == "layer":
        x = rng.standard_normal((300, 513)).astype(np.float32)
        w, b = rng.random(513).astype(np.float32), rng.random(513).astype(np.float32)
    else:
        x = rng.standard_normal((16, 8, 1025)).astype(np.float32)
        w, b = rng.random(8).astype(np.float32), rng.random(8).astype(np.float32)
    arrays = (x, w, b, rng.standard_normal(x.shape).astype(np.float32))
    old = tl.get_num_threads()
    try:
        results = []
        for th in (1, 2):
            tl.set_num_threads(th)
            results.append(_run_norm(kind, arrays, tl.float32))
    finally:
        tl.set_num_threads(old)
    for a, b_ in zip(*results):
        np.testing.assert_array_equal(a, b_)
    ref = (_ln_reference if kind == "layer" else _bn_reference)(*(a.astype(np.float64) for a in arrays))
    for a, r in zip(results[0], ref):
        np.testing.assert_allclose(a, r, rtol=2e-4, atol=2e-4)


def test_large_mean_does_not_cancel():
    """Statistics are two-pass, so a mean far from zero loses no precision."""
    x = tl.tensor(np.random.default_rng(0).standard_normal((8, 3, 64)) + 3e3).float()
    held = x.double().numpy()
    y = F.batch_norm(x, None, None, training=True)
    assert_values(y, _np_norm(held, (0, 2), 1e-5), rtol=1e-3, atol=1e-3)
    z = F.layer_norm(x, (64,))
    assert_values(z, _np_norm(held, 2, 1e-5), rtol=1e-3, atol=1e-3)


def test_empty_inputs():
    for y in (F.layer_norm(tl.empty(0, 5, requires_grad=True), (5,), tl.ones(5, requires_grad=True)),
              F.batch_norm(tl.empty(4, 3, 0, requires_grad=True), None, None, training=True),
              F.group_norm(tl.empty(0, 4, requires_grad=True), 2)):
        assert y.numel() == 0
        y.sum().backward()
    w = tl.ones(5, requires_grad=True)
    F.layer_norm(tl.empty(0, 5), (5,), w).sum().backward()
    assert w.grad.tolist() == [0.0] * 5
    # no channels: PyTorch counts none for a 1-d input (and for a dim 1 of size 0); the input
    # comes back as a copy in the graph
    for x in (tl.zeros(0, requires_grad=True), tl.ones(2, 0, 3, requires_grad=True)):
        for training in (True, False):
            y = F.batch_norm(x, tl.zeros(0), tl.zeros(0), training=training)
            assert y.shape == x.shape and y is not x and y.requires_grad
    with pytest.raises(RuntimeError, match="running_mean should contain 0 elements not 1"):
        F.batch_norm(tl.randn(3), tl.zeros(1), tl.ones(1), training=False)


def test_hypothesis_norms_over_shapes_and_layouts():
    """batch/layer/group norm over random shapes and permuted, stepped input layouts against
    NumPy (values), and their input gradients against each other's definitions."""
    st = pytest.importorskip("hypothesis.strategies")
    from hypothesis import given, settings, HealthCheck

    @st.composite
    def cases(draw):
        nd = draw(st.integers(2, 4))
        shape = draw(st.lists(st.integers(1, 5), min_size=nd, max_size=nd))
        shape[0] = max(shape[0], 2)
        steps = draw(st.lists(st.integers(1, 2), min_size=nd, max_size=nd))
        perm = draw(st.permutations(list(range(nd))))
        return shape, steps, perm, draw(st.integers(0, 2 ** 16))

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases())
    def run(case):
        shape, steps, perm, seed = case
        rng = np.random.default_rng(seed)
        buf = rng.standard_normal([shape[p] * steps[p] for p in perm]) * 2 + 1
        view = tl.tensor(buf)[tuple(slice(None, None, steps[p]) for p in perm)]
        x = view.permute(*np.argsort(perm))
        a = x.numpy()
        nd, C = len(shape), shape[1]
        bn_axes = (0,) + tuple(range(2, nd))
        assert_values(F.batch_norm(x, None, None, training=True), _np_norm(a, bn_axes, 1e-5),
                      rtol=1e-9, atol=1e-9)
        k = rng.integers(1, nd)
        ln_axes = tuple(range(nd - k, nd))
        assert_values(F.layer_norm(x, tuple(shape[nd - k:])), _np_norm(a, ln_axes, 1e-5),
                      rtol=1e-9, atol=1e-9)
        groups = 1 if C == 1 else int(rng.choice([g for g in range(1, C + 1) if C % g == 0]))
        gn = _np_norm(a.reshape(shape[0], groups, -1), 2, 1e-5).reshape(a.shape)
        assert_values(F.group_norm(x, groups), gn, rtol=1e-9, atol=1e-9)

    run()


@pytest.mark.parametrize("plane", [(), (1, 1), (2, 2), (7,), (8,), (3, 5)])
@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_batch_norm_small_and_large_planes_forward_and_backward_match_numpy(plane, dtype):
    """Planes under 8 elements take the row-wise passes (norm.pyx SMALL_PLANE), larger ones the
    per-run kernels: both against NumPy in float64, the statistics and all three gradients."""
    rng = np.random.default_rng(5)
    shape = (6, 5) + plane
    a = rng.standard_normal(shape) * 3 + 2
    gy = rng.standard_normal(shape)
    w, b = rng.random(5) + 0.5, rng.standard_normal(5)
    axes = (0,) + tuple(range(2, len(shape)))
    cshape = (1, 5) + (1,) * len(plane)
    mean, var = a.mean(axes, keepdims=True), a.var(axes, keepdims=True)
    xhat = (a - mean) / np.sqrt(var + 1e-5)
    m = a.size / 5
    dxhat = gy * w.reshape(cshape)
    dx = (dxhat - dxhat.mean(axes, keepdims=True) - xhat * (dxhat * xhat).mean(axes, keepdims=True)) \
        / np.sqrt(var + 1e-5)
    x = tl.tensor(a).to(dtype).requires_grad_()
    wt, bt = tl.tensor(w).to(dtype).requires_grad_(), tl.tensor(b).to(dtype).requires_grad_()
    rm, rv = tl.zeros(5, dtype=dtype), tl.ones(5, dtype=dtype)
    y = F.batch_norm(x, rm, rv, wt, bt, True, momentum=0.5)
    y.backward(tl.tensor(gy).to(dtype))
    tol = 1e-10 if dtype is tl.float64 else 2e-5
    assert_values(y.detach(), xhat * w.reshape(cshape) + b.reshape(cshape), rtol=tol, atol=tol)
    assert_values(x.grad, dx, rtol=tol * 10, atol=tol * 10)
    assert_values(wt.grad, (gy * xhat).sum(axes), rtol=tol * 10, atol=tol * 10)
    assert_values(bt.grad, gy.sum(axes), rtol=tol, atol=tol * 10)
    assert_values(rm, 0.5 * mean.reshape(5), rtol=tol, atol=tol)
    assert_values(rv, 0.5 + 0.5 * var.reshape(5) * m / (m - 1), rtol=tol, atol=tol)
