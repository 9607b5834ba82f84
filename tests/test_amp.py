"""torchlite.autocast and torchlite.amp.GradScaler: PyTorch's AMP policy and loss scaling.

Oracles: float32 runs of the same ops (values), the op lists in PyTorch's documentation
(dtypes), and PyTorch's CPU autocast / GradScaler where torch is installed."""
import math
import threading
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F

LOW = [tl.bfloat16, tl.float16]


def _x(*shape, dtype=tl.float32, device="cpu", seed=0):
    g = np.random.default_rng(seed)
    return tl.tensor(g.standard_normal(shape).astype(np.float32), device=device).to(dtype)


# ---- the policy on the CPU ----------------------------------------------------------------
LOWER_CASES = {
    "mm": lambda a: tl.mm(a, a),
    "@": lambda a: a @ a,
    "Tensor.matmul": lambda a: a.matmul(a),
    "bmm": lambda a: tl.bmm(a.expand(2, 4, 4), a.expand(2, 4, 4)),
    "addmm": lambda a: tl.addmm(a, a, a),
    "baddbmm": lambda a: tl.baddbmm(a, a.expand(2, 4, 4), a.expand(2, 4, 4)),
    "addbmm": lambda a: tl.addbmm(a, a.expand(2, 4, 4), a.expand(2, 4, 4)),
    "einsum": lambda a: tl.einsum("ij,jk->ik", a, a),
    "linear": lambda a: F.linear(a, a, a[0]),
    "conv1d": lambda a: F.conv1d(a[None, :2], a[:3, :2, None].expand(3, 2, 3)),
    "conv2d": lambda a: F.conv2d(a[None, None], a[None, None, :3, :3]),
    "conv_transpose2d": lambda a: F.conv_transpose2d(a[None, None], a[None, None, :3, :3]),
    "prelu": lambda a: F.prelu(a, tl.ones(1)),
    "sdpa": lambda a: F.scaled_dot_product_attention(a[None], a[None], a[None]),
}
FP32_CPU_CASES = {
    "cross_entropy": lambda a: F.cross_entropy(a, tl.tensor([0, 1, 2, 3])),
    "nll_loss": lambda a: F.nll_loss(a, tl.tensor([0, 1, 2, 3])),
    "mse_loss": lambda a: F.mse_loss(a, a.detach() * 0.5),
    "l1_loss": lambda a: F.l1_loss(a, a.detach() * 0.5),
    "smooth_l1_loss": lambda a: F.smooth_l1_loss(a, a.detach() * 0.5),
    "bce_with_logits": lambda a: F.binary_cross_entropy_with_logits(a, _x(4, 4).sigmoid()),
    "kl_div": lambda a: F.kl_div(a, _x(4, 4).softmax(-1), reduction="batchmean"),
    "prod": lambda a: tl.prod(a),
}
NEITHER_CPU_CASES = {            # on neither CPU list: they run in their inputs' dtype
    "add": lambda a: a + a,
    "relu": lambda a: F.relu(a),
    "softmax": lambda a: tl.softmax(a, -1),
    "exp": lambda a: a.exp(),
    "sum": lambda a: a.sum(),
    "layer_norm": lambda a: F.layer_norm(a, (4,)),
    "gelu": lambda a: F.gelu(a),
    "mean": lambda a: a.mean(),
}


@pytest.mark.parametrize("name", LOWER_CASES)
@pytest.mark.parametrize("low", LOW, ids=str)
def test_cpu_lower_precision_ops(name, low):
    a = _x(4, 4)
    with tl.autocast("cpu", dtype=low):
        out = LOWER_CASES[name](a)
    assert out.dtype == low
    ref = LOWER_CASES[name](a)
    tl.testing.assert_close(out.float(), ref, rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("name", FP32_CPU_CASES)
def test_cpu_float32_ops(name):
    a = _x(4, 4)
    with tl.autocast("cpu"):
        out = FP32_CPU_CASES[name](a.bfloat16())
    assert out.dtype == tl.float32
    tl.testing.assert_close(out, FP32_CPU_CASES[name](a.bfloat16().float()))


@pytest.mark.parametrize("name", NEITHER_CPU_CASES)
def test_cpu_unlisted_ops_keep_input_dtype(name):
    a = _x(4, 4)
    with tl.autocast("cpu"):
        assert NEITHER_CPU_CASES[name](a).dtype == tl.float32
        assert NEITHER_CPU_CASES[name](a.bfloat16()).dtype == tl.bfloat16


def test_float64_integer_and_other_device_tensors_are_not_cast():
    i, d = tl.arange(16).reshape(4, 4), _x(4, 4).double()
    with tl.autocast("cpu"):
        assert (i @ i).dtype == tl.int64
        assert (d @ d).dtype == F.linear(d, d).dtype == tl.float64
    with tl.autocast("cuda", enabled=False):
        assert (_x(4, 4) @ _x(4, 4)).dtype == tl.float32


# ---- modules, gradients ------------------------------------------------------------------
def _mlp():
    tl.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.LayerNorm(16), nn.Linear(16, 4))


def test_module_forward_backward_cpu():
    model = _mlp()
    x, y = _x(5, 8), tl.tensor([0, 1, 2, 3, 0])
    ref_loss = F.cross_entropy(model(x), y)
    ref_loss.backward()
    ref_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with tl.autocast("cpu"):
        out = model(x)
        loss = F.cross_entropy(out, y)
    assert out.dtype == tl.bfloat16 and loss.dtype == tl.float32
    tl.testing.assert_close(loss, ref_loss, rtol=2e-2, atol=2e-2)
    loss.backward()
    for p, g in zip(model.parameters(), ref_grads):
        assert p.dtype == tl.float32 and p.grad.dtype == tl.float32
        tl.testing.assert_close(p.grad, g, rtol=0.1, atol=2e-2)


def test_conv_module_and_weight_used_twice():
    tl.manual_seed(1)
    conv = nn.Conv2d(2, 3, 3, padding=1)
    x = _x(1, 2, 6, 6)
    with tl.autocast("cpu"):
        out = conv(conv.weight.new_ones(()) * 0 + x)     # one forward
        twice = F.linear(x.flatten(1)[:, :4], conv.weight.flatten(1)[:, :4]) \
            + F.linear(x.flatten(1)[:, :4], conv.weight.flatten(1)[:, :4])
    assert out.dtype == tl.bfloat16
    tl.testing.assert_close(out.float(), conv(x), rtol=3e-2, atol=3e-2)
    twice.float().sum().backward()
    assert conv.weight.grad.dtype == tl.float32
    # d/dw of the sum of two identical linears = 2 * sum over the batch of x
    expect = 2 * x.flatten(1)[:, :4].sum(0).expand(3, 4)
    tl.testing.assert_close(conv.weight.grad.flatten(1)[:, :4], expect, rtol=2e-2, atol=2e-2)


def test_multihead_attention_runs_in_lower_precision():
    tl.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2)
    q = _x(3, 1, 8)
    with tl.autocast("cpu"):
        out, w = mha(q, q, q)
    assert out.dtype == tl.bfloat16
    tl.testing.assert_close(out.float(), mha(q, q, q)[0], rtol=5e-2, atol=5e-2)


# ---- the context manager -----------------------------------------------------------------
def test_nesting_enabled_false_and_queries():
    a = _x(4, 4)
    assert not tl.is_autocast_enabled("cpu")
    with tl.autocast("cpu"):
        assert tl.is_autocast_enabled("cpu") and tl.get_autocast_dtype("cpu") == tl.bfloat16
        with tl.autocast("cpu", enabled=False):
            assert (a @ a).dtype == tl.float32 and not tl.is_autocast_enabled("cpu")
            with tl.autocast("cpu", dtype=tl.float16):
                assert (a @ a).dtype == tl.float16
            assert (a @ a).dtype == tl.float32
        assert (a @ a).dtype == tl.bfloat16
    assert (a @ a).dtype == tl.float32 and not tl.is_autocast_enabled("cpu")


def test_exception_inside_restores_state():
    with pytest.raises(KeyError):
        with tl.autocast("cpu"):
            raise KeyError("x")
    assert not tl.is_autocast_enabled("cpu")
    assert (_x(2, 2) @ _x(2, 2)).dtype == tl.float32


def test_decorator_and_aliases():
    a = _x(4, 4)

    @tl.autocast("cpu")
    def f(t):
        return t @ t
    assert f(a).dtype == tl.bfloat16 and (a @ a).dtype == tl.float32
    with tl.amp.autocast("cpu", dtype=tl.float16):
        assert (a @ a).dtype == tl.float16
    with pytest.warns(FutureWarning, match="torchlite.amp.autocast"):
        ctx = tl.cpu.amp.autocast()
    with ctx:
        assert (a @ a).dtype == tl.bfloat16


def test_thread_local():
    a = _x(4, 4)
    seen = {}
    inside, done = threading.Event(), threading.Event()

    def other():
        inside.wait()
        seen["other"] = (a @ a).dtype, tl.is_autocast_enabled("cpu")
        done.set()
    t = threading.Thread(target=other)
    t.start()
    with tl.autocast("cpu"):
        inside.set()
        done.wait(10)
        seen["main"] = (a @ a).dtype
    t.join()
    assert seen == {"other": (tl.float32, False), "main": tl.bfloat16}


def test_bad_arguments():
    with pytest.raises(ValueError, match="device_type"):
        tl.autocast(0)
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        tl.autocast("tpu")
    with pytest.warns(UserWarning, match="Disabling autocast"):
        ctx = tl.autocast("cpu", dtype=tl.float64)
    with ctx:
        assert not tl.is_autocast_enabled("cpu")


# ---- the CUDA policy (stand-in driver, and a real GPU where there is one) -----------------
FP32_CUDA_CASES = {
    "softmax": lambda a: F.softmax(a, -1),
    "Tensor.softmax": lambda a: a.softmax(-1),
    "log_softmax": lambda a: F.log_softmax(a, -1),
    "exp": lambda a: a.exp(),
    "log": lambda a: a.abs().log(),
    "pow": lambda a: a ** 2,
    "sum": lambda a: a.sum(),
    "cumsum": lambda a: a.cumsum(0),
    "norm": lambda a: a.norm(),
    "logsumexp": lambda a: a.logsumexp(0),
    "layer_norm": lambda a: F.layer_norm(a, (4,)),
    "group_norm": lambda a: F.group_norm(a, 2),
    "mse_loss": lambda a: F.mse_loss(a, a.detach()),
}


def test_cuda_policy(cuda_device):
    a = _x(4, 4, device=cuda_device)
    h = a.half()
    with tl.autocast("cuda"):
        for name, fn in LOWER_CASES.items():
            if name not in ("conv1d", "conv_transpose2d", "prelu"):
                assert fn(a).dtype == tl.float16, name
        assert tl.mv(a, a[0]).dtype == tl.float16            # on the CUDA list only
        for name, fn in FP32_CUDA_CASES.items():
            assert fn(h).dtype == tl.float32, name
        assert h.sum(dtype=tl.float16).dtype == tl.float16   # an explicit dtype wins
        assert tl.addcmul(h, h, a).dtype == tl.float32        # promoted to the widest
        assert F.gelu(h).dtype == tl.float16                  # on neither list
        cpu = _x(4, 4)
        assert (cpu @ cpu).dtype == tl.float32                # another device type
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(h.sigmoid(), h.sigmoid().detach())
    ref = tl.softmax(h.float(), -1)
    with tl.autocast("cuda"):
        tl.testing.assert_close(F.softmax(h, -1), ref)


def test_cuda_training_step(cuda_device):
    model = _mlp().to(cuda_device)
    opt = tl.optim.SGD(model.parameters(), lr=0.1)
    scaler = tl.amp.GradScaler("cuda", init_scale=256.0)   # no float16 overflow at this size
    x, y = _x(5, 8, device=cuda_device), tl.tensor([0, 1, 2, 3, 0], device=cuda_device)
    with tl.autocast("cuda"):
        out = model(x)
        loss = F.cross_entropy(out, y)
    assert out.dtype == tl.float16 and loss.dtype == tl.float32
    scaler.scale(loss).backward()
    grads_scaled = [p.grad.clone() for p in model.parameters()]
    scaler.unscale_(opt)
    for p, g in zip(model.parameters(), grads_scaled):
        assert p.grad.dtype == tl.float32 and p.grad.device.type == "cuda"
        tl.testing.assert_close(p.grad, g / 256.0)
    before = [p.detach().clone() for p in model.parameters()]
    scaler.step(opt)
    scaler.update()
    for p, b in zip(model.parameters(), before):
        tl.testing.assert_close(p.detach(), b - 0.1 * p.grad)
    assert scaler.get_scale() == 256.0 and scaler._get_growth_tracker() == 1


# ---- GradScaler --------------------------------------------------------------------------
def _param_opt(lr=1.0):
    p = nn.Parameter(tl.tensor([1.0, 2.0]))
    return p, tl.optim.SGD([p], lr=lr)


def test_scaler_scale_unscale_step():
    p, opt = _param_opt()
    scaler = tl.amp.GradScaler("cpu", init_scale=8.0)
    loss = (p * p).sum()
    scaled = scaler.scale(loss)
    assert scaled.item() == 8.0 * loss.item()
    scaled.backward()
    tl.testing.assert_close(p.grad, tl.tensor([16.0, 32.0]))
    scaler.unscale_(opt)
    tl.testing.assert_close(p.grad, tl.tensor([2.0, 4.0]))
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)                     # no second unscale inside step
    tl.testing.assert_close(p.detach(), tl.tensor([-1.0, -2.0]))
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
        scaler.unscale_(opt)
    scaler.update()
    assert scaler.get_scale() == 8.0 and scaler._get_growth_tracker() == 1


@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_scaler_skips_step_on_inf_nan_and_backs_off(bad):
    p, opt = _param_opt()
    scaler = tl.amp.GradScaler("cpu", init_scale=4.0, backoff_factor=0.25)
    scaler.scale((p * tl.tensor([1.0, bad])).sum()).backward()
    assert scaler.step(opt) is None
    tl.testing.assert_close(p.detach(), tl.tensor([1.0, 2.0]))
    scaler.update()
    assert scaler.get_scale() == 1.0 and scaler._get_growth_tracker() == 0


def test_scaler_growth_after_interval():
    p, opt = _param_opt(lr=0.0)
    scaler = tl.amp.GradScaler("cpu", init_scale=2.0, growth_factor=3.0, growth_interval=3)
    scales = []
    for _ in range(7):
        opt.zero_grad()
        scaler.scale(p.sum()).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales == [2.0, 2.0, 6.0, 6.0, 6.0, 18.0, 18.0]
    scaler.update(5.0)
    assert scaler.get_scale() == 5.0


def test_scaler_errors_and_iterables():
    p, opt = _param_opt()
    scaler = tl.amp.GradScaler("cpu")
    with pytest.raises(RuntimeError, match="_scale is None"):
        scaler.step(opt)
    a, (b, c) = scaler.scale([tl.tensor(1.0), (tl.tensor(2.0), tl.tensor(3.0))])
    assert (a.item(), b.item(), c.item()) == (65536.0, 131072.0, 196608.0)
    with pytest.raises(ValueError, match="iterable of Tensors"):
        scaler.scale(3.0)
    with pytest.raises(RuntimeError, match="No inf checks were recorded prior to update"):
        scaler.update()
    with pytest.raises(ValueError, match="growth factor"):
        tl.amp.GradScaler("cpu", growth_factor=1.0)
    q = nn.Parameter(tl.tensor([1.0]).half())
    q.grad = tl.tensor([1.0]).half()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.unscale_(tl.optim.SGD([q], lr=1.0))


def test_scaler_state_dict_round_trip_and_disabled():
    p, opt = _param_opt()
    scaler = tl.amp.GradScaler("cpu", init_scale=16.0, growth_interval=10)
    scaler.scale(p.sum()).backward()
    scaler.step(opt)
    scaler.update()
    sd = scaler.state_dict()
    assert sd == {"scale": 16.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                  "growth_interval": 10, "_growth_tracker": 1}
    other = tl.amp.GradScaler("cpu")
    other.load_state_dict(sd)
    assert other.state_dict() == sd
    off = tl.amp.GradScaler("cpu", enabled=False)
    loss = p.sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and not off.is_enabled()
    assert off.state_dict() == {}
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        other.load_state_dict({})
    p.grad = tl.tensor([1.0, 1.0])
    before = p.detach().clone()
    off.step(opt)
    off.update()
    tl.testing.assert_close(p.detach(), before - 1.0)


def test_cuda_amp_aliases(fake_cuda):
    with pytest.warns(FutureWarning):
        scaler = tl.cuda.amp.GradScaler(init_scale=4.0)
    with pytest.warns(FutureWarning):
        ctx = tl.cuda.amp.autocast()
    a = _x(4, 4, device="cuda")
    with ctx:
        assert (a @ a).dtype == tl.float16
    assert scaler.scale(a).device.type == "cuda" and scaler.get_scale() == 4.0


# ---- against PyTorch ---------------------------------------------------------------------
def test_intermediate_dtypes_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib, x, y):
        Fn = lib.nn.functional
        w1 = lib.ones(16, 8) * 0.1
        w2 = lib.ones(4, 16) * 0.1
        conv_w = lib.ones(2, 1, 3, 3) * 0.1
        with lib.autocast("cpu"):
            h = Fn.linear(x, w1)
            steps = [h, Fn.relu(h), Fn.layer_norm(h, (16,)), h.softmax(-1), h.exp(), h.sum(),
                     h @ w2.t(), Fn.gelu(h), h + x.sum(), lib.mean(h)]
            logits = Fn.linear(Fn.relu(h), w2)
            steps += [logits, Fn.cross_entropy(logits, y), Fn.mse_loss(logits, logits.detach()),
                      Fn.conv2d(x.reshape(5, 1, 2, 4), conv_w, padding=1), lib.prod(h),
                      Fn.scaled_dot_product_attention(h[None], h[None], h[None]),
                      Fn.log_softmax(logits.float(), -1), lib.cdist(h, h)]
        return [str(s.dtype).split(".")[-1] for s in steps]
    xn = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    yn = np.array([0, 1, 2, 3, 0])
    assert run(tl, tl.tensor(xn), tl.tensor(yn)) == \
        run(torch, torch.tensor(xn), torch.tensor(yn))


def test_scaler_trajectory_matches_torch():
    torch = pytest.importorskip("torch")
    pattern = [0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0]   # 1: an inf in the gradient

    def trajectory(lib):
        p = lib.nn.Parameter(lib.tensor([1.0, -2.0]))
        opt = lib.optim.SGD([p], lr=0.01)
        scaler = lib.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
        out = []
        for bad in pattern:
            opt.zero_grad()
            coef = lib.tensor([1.0, float("inf") if bad else 3.0])
            scaler.scale((p * coef).sum()).backward()
            scaler.step(opt)
            scaler.update()
            out.append((scaler.get_scale(), scaler._get_growth_tracker(), p.tolist()))
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert trajectory(tl) == trajectory(torch)


# ---- autocast at the op entry --------------------------------------------------------------
def test_every_listed_op_checks_autocast_at_its_entry():
    """Each function on autocast's lists (or the function its method is) starts with the
    entry check, naming an object that is the listed function itself."""
    import inspect
    from torchlite.amp import _lists
    for name in _lists._policies():
        fn = _lists._lookup(name)
        inner = inspect.unwrap(fn)
        src = inspect.getsource(inner)
        assert "if _autocast.regions and _autocast.here.active:" in src, name
        ref = src.split("return _autocast_run(", 1)[1].split(",", 1)[0]
        closure = dict(zip(inner.__code__.co_freevars,
                           [c.cell_contents for c in (inner.__closure__ or ())]))
        assert closure.get(ref, inner.__globals__.get(ref)) is fn, (name, ref)


def test_a_function_imported_before_the_first_autocast_is_autocast():
    # the names are bound here, before this test opens a region; the op checks at its entry,
    # so the binding does not matter
    from torchlite import matmul, mm
    from torchlite.nn.functional import linear
    a = _x(4, 4)
    with tl.autocast("cpu"):
        assert matmul(a, a).dtype is tl.bfloat16
        assert mm(a, a).dtype is tl.bfloat16
        assert linear(a, a).dtype is tl.bfloat16
        assert tl.Tensor.mm(a, a).dtype is tl.bfloat16
        with tl.autocast("cpu", enabled=False):
            assert matmul(a, a).dtype is tl.float32
    assert matmul(a, a).dtype is tl.float32


def test_dtype_given_by_position_wins_over_float32():
    if not tl.cuda.is_available():
        pytest.skip("the float32-unless-dtype policy is on the CUDA list")
    a = _x(4, 4, dtype=tl.float16, device="cuda")
    with tl.autocast("cuda"):
        assert F.softmax(a, 1, 3, tl.float16).dtype is tl.float16
        assert F.softmax(a, 1).dtype is tl.float32


def test_autocast_is_off_inside_a_listed_op():
    # interpolate (on the CUDA float32 list) resamples with matrix products inside; those must
    # not run in bfloat16 under CPU autocast, where PyTorch's upsampling keeps float32
    from torchlite._autocast_state import state
    x = _x(1, 2, 8, 8)
    with tl.autocast("cpu"):
        y = F.interpolate(x, size=(4, 4), mode="bilinear", antialias=True)
        assert state.active            # restored after the op
    assert y.dtype is tl.float32
    np.testing.assert_allclose(y.numpy(), F.interpolate(x, size=(4, 4), mode="bilinear",
                                                        antialias=True).numpy(), rtol=1e-6)


def test_cpu_autocast_runs_the_ffts_in_float32_as_pytorch():
    # PyTorch's CPU autocast lists the FFTs as float32 ops: a bfloat16 activation's spectrum
    # is complex64 there, where the FFT of a bfloat16 tensor outside autocast is an error
    x = _x(8, 16).to(tl.bfloat16)
    with tl.autocast("cpu", dtype=tl.bfloat16):
        for name in ("fft", "ifft", "rfft", "fft2", "rfftn", "ihfft"):
            assert getattr(tl.fft, name)(x).dtype is tl.complex64, name
        assert tl.fft.irfft(tl.fft.rfft(x)).dtype is tl.float32
        got = tl.fft.rfft(x)
    want = tl.fft.rfft(x.float())
    assert tl.allclose(got, want)
