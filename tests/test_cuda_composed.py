"""The composed CUDA natives of convolution, pooling, normalisation and the NLL loss
(torchlite/cuda/_conv.py, _pool.py, _norm.py, _loss.py) against the CPU path of torchlite.

Each test runs through the `dev` fixture of test_cuda_kernel_launch.py: on the fake driver,
whose emulated kernels (tests/fake_cuda_kernels.py) run every launch on the host, so the
compositions (windows, padding, index maps, dtypes, masks, reductions) are checked without a
GPU, and on a real GPU where there is one.  The `native` fixture makes any of these functions
that reaches the host fallback fail the test, so a passing test ran the composition itself.
"""
import copy

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F
from torchlite import _dispatch
from torchlite._tensor import _wrap
from torchlite.cuda import _fallback

from test_cuda_kernel_launch import dev  # noqa: F401

COMPOSED = {
    "conv.conv2d_forward", "conv.conv2d_input_grad", "conv.conv2d_weight_grad", "conv.im2col",
    "conv.col2im", "pool.max_pool2d", "pool.scatter_planes", "pool.gather_planes",
    "pool.avg_pool2d", "pool.avg_pool2d_backward", "pool.adaptive_avg_pool2d",
    "pool.adaptive_avg_pool2d_backward", "pool.adaptive_max_pool2d", "norm.batch_norm_stats",
    "norm.batch_norm_grad_sums", "norm.batch_norm_forward", "norm.batch_norm_backward",
    "norm.layer_norm_forward", "norm.layer_norm_backward", "loss.nll_forward",
    "loss.nll_backward", "loss.target_weights",
}


def _name(cpu_fn):
    return f"{cpu_fn.__module__.rsplit('.', 1)[-1]}.{cpu_fn.__name__}"


@pytest.fixture
def fallbacks(dev, monkeypatch):
    """The names of the array functions that ran on the host fallback during the test."""
    seen = []
    run = _fallback.run_on_host

    def record(cpu_fn, device, args, kwargs):
        seen.append(_name(cpu_fn))
        return run(cpu_fn, device, args, kwargs)
    monkeypatch.setattr(_fallback, "run_on_host", record)
    return seen


@pytest.fixture
def native(dev, monkeypatch):
    """The device, with the host fallback failing for the composed functions."""
    run = _fallback.run_on_host

    def guard(cpu_fn, device, args, kwargs):
        assert _name(cpu_fn) not in COMPOSED, f"{_name(cpu_fn)} ran on the host fallback"
        return run(cpu_fn, device, args, kwargs)
    monkeypatch.setattr(_fallback, "run_on_host", guard)
    return dev


def _near(cpu, gpu, tol=1e-5):
    """Same dtype and shape, values equal to rounding (relative to the largest value)."""
    got = gpu.detach().cpu()
    cpu = cpu.detach()
    assert got.dtype == cpu.dtype and got.shape == cpu.shape
    want = cpu.double().numpy()
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got.double().numpy(), want, rtol=tol, atol=tol * scale)


def _rand(*shape, seed=0, dtype=tl.float32):
    return tl.randn(*shape, generator=tl.Generator().manual_seed(seed), dtype=dtype)


def _leaf(t, device="cpu"):
    return t.detach().to(device).requires_grad_()


def _both(make, *tensors, grad_seed=9):
    """make(*leaves) on the CPU and on the device, each backward with one output gradient;
    returns (cpu output, device output, cpu leaves, device leaves)."""
    outs, leaves = [], []
    for device in ("cpu", "cuda"):
        ls = [None if t is None else _leaf(t, device) for t in tensors]
        y = make(*ls)
        y.backward(_rand(*y.shape, seed=grad_seed, dtype=y.dtype).to(device))
        outs.append(y)
        leaves.append(ls)
    return outs[0], outs[1], leaves[0], leaves[1]


def _same_grads(cpu_leaves, gpu_leaves, tol=1e-5):
    for a, b in zip(cpu_leaves, gpu_leaves):
        if a is not None:
            _near(a.grad, b.grad, tol)


# ---- convolution ---------------------------------------------------------------------------
CONVS = {
    "plain": dict(),
    "stride_padding": dict(stride=2, padding=1),
    "dilation": dict(padding=(2, 1), dilation=(2, 1)),
    "groups": dict(groups=2, padding=1, stride=(1, 2)),
    "no_bias": dict(bias=False, padding=1),
    "pointwise": dict(kernel=(1, 1)),
    "float64": dict(dtype=tl.float64, stride=(2, 1)),
    "noncontiguous": dict(transposed=True, padding=1),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv2d_and_its_gradients_match_cpu(native, name):
    opt = dict(CONVS[name])
    dtype, groups = opt.pop("dtype", tl.float32), opt.get("groups", 1)
    kh, kw = opt.pop("kernel", (3, 2))
    bias = _rand(6, seed=3, dtype=dtype) if opt.pop("bias", True) else None
    transposed = opt.pop("transposed", False)
    x = _rand(*((2, 4, 6, 7) if transposed else (2, 4, 7, 6)), seed=1, dtype=dtype)
    w = _rand(6, 4 // groups, kh, kw, seed=2, dtype=dtype)

    def make(x, w, b):
        return F.conv2d(x.transpose(2, 3) if transposed else x, w, b, **opt)
    y, yc, leaves, cleaves = _both(make, x, w, bias)
    _near(y, yc)
    _same_grads(leaves, cleaves)
    assert any(k.startswith("tl_gemm<") for k in native.launched)


@pytest.mark.parametrize("kernel", [(3, 2), (1, 1)], ids=["3x2", "1x1"])
def test_conv_in_batches_of_images_matches_cpu(native, monkeypatch, kernel):
    from torchlite.cuda import _conv
    pad, L = (1, 49) if kernel == (3, 2) else (0, 42)
    monkeypatch.setattr(_conv, "COLUMN_BUDGET", 2 * 4 * kernel[0] * kernel[1] * L)  # 2 images
    ranges, batches = [], _conv.Geometry.batches
    monkeypatch.setattr(_conv.Geometry, "batches",
                        lambda g: ranges.append(batches(g)) or ranges[-1])
    x, w, b = _rand(5, 4, 7, 6, seed=1), _rand(6, 2, *kernel, seed=2), _rand(6, seed=3)
    y, yc, leaves, cleaves = _both(lambda x, w, b: F.conv2d(x, w, b, padding=pad, groups=2),
                                   x, w, b)
    _near(y, yc)
    _same_grads(leaves, cleaves)
    assert ranges == [[(0, 2), (2, 4), (4, 5)]] * 3          # forward, input and weight grads


def test_conv2d_half_is_computed_in_float32(native):
    x, w, b = _rand(2, 3, 6, 6, seed=1).half(), _rand(4, 3, 3, 3, seed=2).half(), _rand(4).half()
    _near(F.conv2d(x, w, b, padding=1), F.conv2d(x.cuda(), w.cuda(), b.cuda(), padding=1), 1e-3)


def test_conv1d_and_transposed_conv_gradients_match_cpu(native):
    x, w = _rand(2, 4, 9, seed=1), _rand(3, 4, 3, seed=2)
    y, yc, leaves, cleaves = _both(lambda x, w: F.conv1d(x, w, stride=2, padding=1), x, w)
    _near(y, yc)
    _same_grads(leaves, cleaves)
    x = _rand(2, 4, 5, 5, seed=3)
    y, yc, leaves, cleaves = _both(
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1), x,
        _rand(4, 3, 3, 3, seed=4))
    _near(y, yc)
    _same_grads(leaves, cleaves)


def test_unfold_and_fold_match_cpu(native):
    x = _rand(2, 3, 6, 5, seed=1)
    for opt in (dict(kernel_size=3, padding=1, stride=2), dict(kernel_size=(2, 3), dilation=2)):
        cols = F.unfold(x, **opt)
        _near(cols, F.unfold(x.cuda(), **opt), 0)                 # a copy: exact
        _near(F.fold(cols, (6, 5), **opt), F.fold(cols.cuda(), (6, 5), **opt))
    half = x.half()
    _near(F.unfold(half, 3, padding=1), F.unfold(half.cuda(), 3, padding=1), 0)


def test_conv_argument_errors_are_the_cpus(fallbacks):
    x, w = _rand(2, 4, 5, 5), _rand(3, 2, 3, 3)          # 4 channels, weight for 2
    errors = []
    for a, b in ((x, w), (x.cuda(), w.cuda())):
        with pytest.raises(RuntimeError) as e:
            _dispatch.conv.conv2d_forward(a._data, b._data, None, (1, 1), (0, 0), (1, 1), 1)
        errors.append(str(e.value))
    assert errors[0] == errors[1]
    assert fallbacks == ["conv.conv2d_forward"]


# ---- pooling -------------------------------------------------------------------------------
POOLS = {
    "k2": dict(kernel_size=2),
    "k3_s2_p1": dict(kernel_size=3, stride=2, padding=1),
    "dilated": dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2)),
    "ceil_mode": dict(kernel_size=3, stride=2, ceil_mode=True),
    "overlapping": dict(kernel_size=2, stride=1),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_max_pool2d_values_indices_and_gradient_match_cpu(native, name):
    opt = POOLS[name]
    x = _rand(2, 3, 7, 6, seed=4)
    y, yc, leaves, cleaves = _both(lambda x: F.max_pool2d(x, **opt), x)
    _near(y, yc, 0)
    _same_grads(leaves, cleaves)
    _near(F.max_pool2d(x, return_indices=True, **opt)[1],
          F.max_pool2d(x.cuda(), return_indices=True, **opt)[1], 0)


def test_pooling_of_a_noncontiguous_input_matches_cpu(native):
    x = _rand(2, 3, 6, 7, seed=5)
    for pool in (lambda t: F.max_pool2d(t.transpose(2, 3), 3, 2, 1),
                 lambda t: F.avg_pool2d(t.transpose(2, 3), 2)):
        y, yc, leaves, cleaves = _both(pool, x)
        _near(y, yc)
        _same_grads(leaves, cleaves)


def test_max_pool_of_equal_lowest_values_reports_the_cpus_index(native):
    x = tl.full((1, 2, 4, 5), float("-inf"))
    for opt in (dict(kernel_size=3, stride=2, padding=1),
                dict(kernel_size=2, padding=1, dilation=2)):
        _near(F.max_pool2d(x, return_indices=True, **opt)[1],
              F.max_pool2d(x.cuda(), return_indices=True, **opt)[1], 0)


def test_max_pool_of_integers_and_half(native):
    xi = (_rand(2, 3, 6, 6, seed=5) * 50).to(tl.int16)
    _near(F.max_pool2d(xi, 3, 2, 1), F.max_pool2d(xi.cuda(), 3, 2, 1), 0)
    xu = (_rand(1, 2, 5, 5, seed=6).abs() * 20).to(tl.uint8)
    _near(F.max_pool2d(xu, 2, return_indices=True)[1],
          F.max_pool2d(xu.cuda(), 2, return_indices=True)[1], 0)
    xh = _rand(2, 3, 6, 6, seed=7).half()
    _near(F.max_pool2d(xh, 2), F.max_pool2d(xh.cuda(), 2), 0)


def test_max_pool_with_nan_runs_natively_and_matches_cpu(fallbacks):
    x = _rand(1, 1, 4, 4, seed=8)
    x[0, 0, 0, 0] = x[0, 0, 1, 1] = float("nan")            # two NaNs in one window: the last wins
    _near(F.max_pool2d(x, 2, return_indices=True)[1],
          F.max_pool2d(x.cuda(), 2, return_indices=True)[1], 0)
    assert fallbacks == []


def test_max_pool_double_backward_gathers_like_cpu(native):
    x = _rand(2, 3, 6, 6, seed=9)
    results = []
    for device in ("cpu", "cuda"):
        xl, gy = _leaf(x, device), _leaf(_rand(2, 3, 3, 3, seed=10), device)
        gx, = tl.autograd.grad(F.max_pool2d(xl, 2), xl, gy, create_graph=True)
        ggy, = tl.autograd.grad((gx * gx.detach()).sum(), gy)       # scatter, then gather
        results.append((gx, ggy))
    for a, b in zip(*results):
        _near(a, b, 0)


def test_max_pool_backward_trusts_only_its_own_indices(fallbacks):
    """scatter_planes on CUDA takes max pooling's indices unchecked (reading a range flag back
    would stop the device every backward): its one caller is the pooling node, and indices
    changed after the forward are refused by the node's version check.  An index out of range
    reaching the kernel anyway is skipped, not written out of bounds."""
    x = tl.randn(1, 1, 4, 4).cuda().requires_grad_()
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    idx[0, 0, 0, 0] = 99
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    g, bad = tl.ones(1, 1, 2, 2).cuda(), tl.tensor([[[[0, 1], [2, 9]]]]).cuda()
    got = _wrap(_dispatch.pool.scatter_planes(g._data, bad._data, 3, 3, True))
    np.testing.assert_array_equal(got.cpu().numpy().reshape(3, 3), [[1, 1, 1], [0, 0, 0], [0, 0, 0]])
    assert fallbacks == []


AVG_POOLS = {
    "k2": dict(kernel_size=2),
    "pad_include": dict(kernel_size=3, stride=2, padding=1),
    "pad_exclude": dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    "divisor": dict(kernel_size=(3, 2), stride=1, padding=(1, 0), divisor_override=5),
    "ceil_mode": dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
}


@pytest.mark.parametrize("name", sorted(AVG_POOLS))
def test_avg_pool2d_and_its_gradient_match_cpu(native, name):
    opt = AVG_POOLS[name]
    y, yc, leaves, cleaves = _both(lambda x: F.avg_pool2d(x, **opt), _rand(2, 3, 7, 6, seed=11))
    _near(y, yc)
    _same_grads(leaves, cleaves)


def test_avg_pool_float64_and_half(native):
    x = _rand(2, 2, 5, 5, seed=12, dtype=tl.float64)
    _near(F.avg_pool2d(x, 3, 2, 1), F.avg_pool2d(x.cuda(), 3, 2, 1), 1e-12)
    h = x.half()
    _near(F.avg_pool2d(h, 2), F.avg_pool2d(h.cuda(), 2), 1e-3)


@pytest.mark.parametrize("size", [(1, 1), (3, 2)], ids=["global", "tiles"])
def test_adaptive_pooling_that_tiles_the_input_matches_cpu(native, size):
    x = _rand(2, 3, 6, 4, seed=13)
    for pool in (lambda t: F.adaptive_avg_pool2d(t, size),
                 lambda t: F.adaptive_max_pool2d(t, size)):
        y, yc, leaves, cleaves = _both(pool, x)
        _near(y, yc)
        _same_grads(leaves, cleaves)


def test_adaptive_pooling_to_other_sizes_goes_to_the_fallback(fallbacks):
    x = _rand(1, 2, 5, 5, seed=14)
    _near(F.adaptive_avg_pool2d(x, 3), F.adaptive_avg_pool2d(x.cuda(), 3))
    assert fallbacks == ["pool.adaptive_avg_pool2d"]


# ---- normalisation ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_batch_norm_matches_cpu_with_running_stats(native, dtype, training, affine):
    x = _rand(4, 3, 5, 5, seed=13, dtype=dtype) * 2 + 1
    w, b = (_rand(3, seed=14, dtype=dtype), _rand(3, seed=15, dtype=dtype)) if affine \
        else (None, None)
    running = (_rand(3, seed=16, dtype=dtype), _rand(3, seed=17, dtype=dtype).abs() + 0.5)
    stats = {d: tuple(t.to(d) for t in running) for d in ("cpu", "cuda")}
    devices = iter(("cpu", "cuda"))

    def make(x, w, b):
        rm, rv = stats[next(devices)]
        return F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.2)
    y, yc, leaves, cleaves = _both(make, x, w, b)
    _near(y, yc)
    _same_grads(leaves, cleaves, 1e-5 if dtype == tl.float32 else 1e-10)
    for a, c in zip(stats["cpu"], stats["cuda"]):
        _near(a, c)


def test_batch_norm_kernels_directly(native):
    x, g = _rand(3, 4, 10, seed=18), _rand(3, 4, 10, seed=19)
    xc, gc = x.cuda(), g.cuda()          # (the first CUDA array turns the dispatch on)
    mean, var = _dispatch.norm.batch_norm_stats(x._data)
    mc, vc = _dispatch.norm.batch_norm_stats(xc._data)
    for a, b in ((mean, mc), (var, vc)):
        _near(_t(a), _t(b))
    sums = _dispatch.norm.batch_norm_grad_sums(g._data, x._data, mean)
    sums_c = _dispatch.norm.batch_norm_grad_sums(gc._data, xc._data, mc)
    for a, b in zip(sums, sums_c):
        _near(_t(a), _t(b))


def _t(arr):
    from torchlite._tensor import _wrap
    return _wrap(arr)


def test_batchnorm2d_module_trains_and_evaluates_like_cpu(native):
    tl.manual_seed(0)
    bn = tl.nn.BatchNorm2d(3)
    bnc = copy.deepcopy(bn).cuda()
    x = _rand(4, 3, 4, 4, seed=20)
    for _ in range(2):
        _near(bn(x), bnc(x.cuda()))
    bn.eval()
    bnc.eval()
    _near(bn(x), bnc(x.cuda()))
    _near(bn.running_var, bnc.running_var)


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_layer_norm_and_its_gradients_match_cpu(native, dtype, affine):
    x = _rand(4, 3, 6, seed=21, dtype=dtype) * 3 - 1
    w, b = (_rand(3, 6, seed=22, dtype=dtype), _rand(3, 6, seed=23, dtype=dtype)) if affine \
        else (None, None)
    y, yc, leaves, cleaves = _both(lambda x, w, b: F.layer_norm(x, (3, 6), w, b), x, w, b)
    _near(y, yc)
    _same_grads(leaves, cleaves, 1e-5 if dtype == tl.float32 else 1e-10)


# ---- the NLL loss ----------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("shape", [(6, 5), (3, 5, 2, 3)], ids=["2d", "4d"])
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
def test_nll_losses_and_gradients_match_cpu(native, reduction, weighted, shape, loss):
    gen = tl.Generator().manual_seed(24)
    target = tl.randint(0, 5, (shape[0],) + shape[2:], generator=gen)
    target.view(-1)[1] = -100                                    # ignored
    weight = tl.rand(5, generator=gen) if weighted else None
    x = _rand(*shape, seed=25)
    if loss == "nll_loss":
        x = x.log_softmax(1)
    devices = iter(("cpu", "cuda"))

    def make(x):
        d = next(devices)
        return getattr(F, loss)(x, target.to(d), weight=None if weight is None else weight.to(d),
                                reduction=reduction)
    y, yc, leaves, cleaves = _both(make, x)
    _near(y, yc)
    _same_grads(leaves, cleaves)


def test_nll_float64_uint8_targets_and_ignore_index(native):
    x = _rand(5, 4, seed=26, dtype=tl.float64)
    t = tl.tensor([0, 3, 1, 2, 3], dtype=tl.uint8)
    for kw in (dict(), dict(ignore_index=3), dict(weight=tl.rand(4, dtype=tl.float64))):
        def make(x):
            on = {k: v.to(x.device) if isinstance(v, tl.Tensor) else v for k, v in kw.items()}
            return F.cross_entropy(x, t.to(x.device), **on)
        y, yc, leaves, cleaves = _both(make, x)
        _near(y, yc, 1e-12)
        _same_grads(leaves, cleaves, 1e-12)


def test_nll_with_every_target_ignored_is_nan_like_cpu(native):
    x, t = _rand(3, 4, seed=27), tl.full((3,), -100, dtype=tl.int64)
    y, yc = F.cross_entropy(x, t), F.cross_entropy(x.cuda(), t.cuda())
    assert np.isnan(y.item()) and np.isnan(yc.item())


def test_nll_target_out_of_range_raises_the_cpus_error(fallbacks):
    x = _rand(3, 4, seed=28).cuda()
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        F.cross_entropy(x, tl.tensor([0, 4, 1]).cuda())
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        F.nll_loss(x, tl.tensor([0, 1, -1]).cuda(), weight=tl.ones(4).cuda())
    assert set(fallbacks) == {"loss.nll_forward"}


def test_cross_entropy_double_backward_matches_cpu(native):
    x, t = _rand(4, 5, seed=29, dtype=tl.float64), tl.tensor([0, 3, 1, 4])
    w = _rand(5, seed=30, dtype=tl.float64).abs()
    grads = []
    for device in ("cpu", "cuda"):
        xl = _leaf(x, device)
        g, = tl.autograd.grad(F.cross_entropy(xl, t.to(device), weight=w.to(device)), xl,
                              create_graph=True)
        (g * g).sum().backward()
        grads.append(xl.grad)
    _near(*grads, 1e-12)


def test_target_weights_kernel_directly(native):
    t, w = tl.tensor([[0, 2], [-100, 1]]), tl.tensor([0.5, 2.0, 3.0])
    tc, wc = t.cuda(), w.cuda()
    for weight, weight_c in ((None, None), (w._data, wc._data)):
        want = _dispatch.loss.target_weights(t._data, weight, -100, 3)
        _near(_t(want), _t(_dispatch.loss.target_weights(tc._data, weight_c, -100, 3)), 0)


# ---- modules and a training step ---------------------------------------------------------------
def _cnn():
    nn = tl.nn
    tl.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 5))


def test_module_gradients_match_cpu(native):
    model, x = _cnn(), _rand(6, 3, 8, 8, seed=32)
    y = tl.randint(0, 5, (6,), generator=tl.Generator().manual_seed(33))
    grads = {}
    for device in ("cpu", "cuda"):
        m, xl = copy.deepcopy(model).to(device), _leaf(x, device)
        F.cross_entropy(m(xl), y.to(device)).backward()
        grads[device] = [xl.grad] + [p.grad for p in m.parameters()]
    assert len(grads["cpu"]) == 7
    for a, b in zip(grads["cpu"], grads["cuda"]):
        _near(a, b, 1e-5)


def test_cnn_training_step_runs_native_and_matches_cpu(dev, fallbacks):
    model = _cnn()
    x = _rand(6, 3, 8, 8, seed=30)
    y = tl.randint(0, 5, (6,), generator=tl.Generator().manual_seed(31))
    losses = {}
    for device in ("cpu", "cuda"):
        m = copy.deepcopy(model).to(device)
        opt = tl.optim.Adam(m.parameters(), lr=1e-2)
        losses[device] = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(m(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
            losses[device].append(loss.item())
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=1e-5)
    assert losses["cpu"][2] < losses["cpu"][0]                      # it learns
    assert fallbacks == [], f"ran on the host fallback: {sorted(set(fallbacks))}"
