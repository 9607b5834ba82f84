"""nn.init: distributions checked statistically (fixed seeds, tolerances a wrong formula
fails), gains and deterministic fills against torch.nn.init, orthogonality, errors."""
import math

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite.nn import init

N = 200_000                 # samples per distribution check: std error of the mean ~ 0.2%


def _big(rows=400, cols=500, dtype=tl.float32):
    return tl.empty(rows, cols, dtype=dtype)


def _stats(t):
    a = t.detach().double().numpy().ravel()
    return a, a.mean(), a.std()


def test_calculate_gain_matches_torch():
    torch = pytest.importorskip("torch")
    for name in ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "sigmoid", "tanh", "relu", "selu", "leaky_relu"]:
        assert init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    for slope in (0, 0.2, 1, 3.5):
        assert init.calculate_gain("leaky_relu", slope) == \
            pytest.approx(torch.nn.init.calculate_gain("leaky_relu", slope))
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", True)


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_uniform_and_normal(dtype):
    tl.manual_seed(1)
    a, mean, std = _stats(init.uniform_(_big(dtype=dtype), -2.0, 4.0))
    assert a.min() >= -2.0 and a.max() < 4.0 and a.min() < -1.99 and a.max() > 3.99
    assert abs(mean - 1.0) < 0.02 and abs(std - 6 / math.sqrt(12)) < 0.01
    _, mean, std = _stats(init.normal_(_big(dtype=dtype), 3.0, 0.5))
    assert abs(mean - 3.0) < 0.005 and abs(std - 0.5) < 0.005


def test_trunc_normal():
    tl.manual_seed(2)
    a, mean, std = _stats(init.trunc_normal_(_big(), mean=1.0, std=2.0, a=-1.0, b=5.0))
    assert a.min() >= -1.0 and a.max() <= 5.0
    # moments of N(1, 2^2) truncated to [-1, 5], i.e. to [-1, 2] standard deviations
    alpha, beta = -1.0, 2.0
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)       # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2                 # noqa: E731
    z = cdf(beta) - cdf(alpha)
    m = (pdf(alpha) - pdf(beta)) / z
    var = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - m * m
    assert abs(mean - (1.0 + 2.0 * m)) < 0.01
    assert abs(std - 2.0 * math.sqrt(var)) < 0.01


def test_constant_zeros_ones_eye_dirac_match_torch():
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(init.constant_(tl.empty(2, 3), 2.5).numpy(), np.full((2, 3), 2.5))
    np.testing.assert_array_equal(init.zeros_(tl.ones(4)).numpy(), np.zeros(4))
    np.testing.assert_array_equal(init.ones_(tl.zeros(4)).numpy(), np.ones(4))
    for shape in [(3, 5), (5, 3), (4, 4)]:
        np.testing.assert_array_equal(init.eye_(tl.empty(*shape)).numpy(),
                                      torch.nn.init.eye_(torch.empty(*shape)).numpy())
    for shape, groups in [((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((4, 4, 1, 2, 3), 1), ((2, 5, 3), 1)]:
        np.testing.assert_array_equal(init.dirac_(tl.empty(*shape), groups).numpy(),
                                      torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(tl.empty(2, 2, 2))
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        init.dirac_(tl.empty(2, 2))
    with pytest.raises(ValueError, match="divisible by groups"):
        init.dirac_(tl.empty(3, 2, 2), groups=2)


def test_fan_in_fan_out():
    assert init._calculate_fan_in_and_fan_out(tl.empty(5, 3)) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(tl.empty(8, 4, 3, 2)) == (24, 48)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(tl.empty(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(tl.empty(3, 3), mode="fan_avg")


def test_xavier():
    tl.manual_seed(3)
    t = tl.empty(300, 200, 2)                      # fan_in 400, fan_out 600
    a, mean, std = _stats(init.xavier_uniform_(t, gain=2.0))
    bound = 2.0 * math.sqrt(6.0 / 1000)
    assert a.max() <= bound and a.min() >= -bound and a.max() > 0.99 * bound
    assert abs(std - bound / math.sqrt(3)) < 0.01 * bound and abs(mean) < 0.01 * bound
    _, mean, std = _stats(init.xavier_normal_(t, gain=0.5))
    expected = 0.5 * math.sqrt(2.0 / 1000)
    assert abs(std - expected) < 0.01 * expected and abs(mean) < 0.01 * expected


@pytest.mark.parametrize("mode, fan", [("fan_in", 500), ("fan_out", 400)])
def test_kaiming(mode, fan):
    tl.manual_seed(4)
    a, mean, std = _stats(init.kaiming_uniform_(_big(), a=0.3, mode=mode,
                                                nonlinearity="leaky_relu"))
    gain = math.sqrt(2.0 / (1 + 0.3 ** 2))
    bound = gain * math.sqrt(3.0 / fan)
    assert a.max() <= bound and a.min() >= -bound and a.max() > 0.99 * bound
    assert abs(std - bound / math.sqrt(3)) < 0.01 * bound
    _, mean, std = _stats(init.kaiming_normal_(_big(), mode=mode, nonlinearity="relu"))
    expected = math.sqrt(2.0) / math.sqrt(fan)
    assert abs(std - expected) < 0.01 * expected and abs(mean) < 0.01 * expected


def test_kaiming_zero_element_warns():
    t = tl.empty(0, 3)
    with pytest.warns(UserWarning, match="zero-element"):
        assert init.kaiming_uniform_(t) is t


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (3, 2, 4), (1, 7)])
def test_orthogonal(shape):
    tl.manual_seed(5)
    t = init.orthogonal_(tl.empty(*shape), gain=2.0)
    q = t.detach().double().numpy().reshape(shape[0], -1)
    rows, cols = q.shape
    gram = q.T @ q if rows >= cols else q @ q.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(tl.empty(3))


def test_orthogonal_is_q_of_qr_with_positive_r():
    """With the same normal sample, orthogonal_'s Q equals NumPy's QR with R's diagonal made
    positive (the Q PyTorch returns)."""
    g = tl.Generator().manual_seed(7)
    t = init.orthogonal_(tl.empty(5, 3, dtype=tl.float64), generator=g)
    sample = tl.empty(5, 3, dtype=tl.float64).normal_(0, 1, generator=tl.Generator().manual_seed(7))
    q, r = np.linalg.qr(sample.numpy())
    q = q * np.sign(np.diag(r))
    np.testing.assert_allclose(t.numpy(), q, atol=1e-12)


def test_sparse():
    tl.manual_seed(6)
    t = init.sparse_(tl.empty(10, 200), sparsity=0.3, std=0.5)
    zeros = (t.numpy() == 0).sum(axis=0)
    assert (zeros == 3).all()                     # ceil(0.3 * 10) per column
    nz = t.numpy()[t.numpy() != 0]
    assert abs(nz.std() - 0.5) < 0.05
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.sparse_(tl.empty(2, 2, 2), 0.1)


def test_generator_makes_init_reproducible():
    def draw(fn, seed):
        return fn(tl.empty(20, 30), generator=tl.Generator().manual_seed(seed)).numpy().copy()
    for fn in (init.uniform_, init.normal_, init.trunc_normal_, init.xavier_uniform_,
               init.xavier_normal_, init.kaiming_uniform_, init.kaiming_normal_,
               init.orthogonal_):
        np.testing.assert_array_equal(draw(fn, 11), draw(fn, 11))
        assert not np.array_equal(draw(fn, 11), draw(fn, 12))


def test_init_runs_outside_autograd():
    p = nn.Parameter(tl.empty(3, 4))
    for fn in (init.uniform_, init.normal_, init.kaiming_uniform_, init.xavier_normal_,
               init.orthogonal_, init.zeros_, init.trunc_normal_, init.eye_):
        out = fn(p)
        assert out is p and p.is_leaf and p.grad_fn is None and p.requires_grad


def test_init_does_not_depend_on_thread_count():
    old = tl.get_num_threads()
    draws = []
    try:
        for n in (1, 2):
            tl.set_num_threads(n)
            g = tl.Generator().manual_seed(3)
            draws.append(init.kaiming_uniform_(tl.empty(300, 400), generator=g).numpy().copy())
    finally:
        tl.set_num_threads(old)
    np.testing.assert_array_equal(draws[0], draws[1])


def test_deprecated_names_warn_and_fill_in_place():
    import warnings
    for old in ("uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
                "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"):
        t = tl.zeros(4, 3, 3) if old == "dirac" else tl.zeros(4, 3)
        args = (0.5,) if old in ("constant", "sparse") else ()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = getattr(tl.nn.init, old)(t, *args)
        assert out is t, old
        assert any(issubclass(w.category, FutureWarning) and f"nn.init.{old}_" in str(w.message)
                   for w in caught), old
        assert old == "sparse" or bool((t != 0).any()), old


def test_autograd_variable_is_the_old_spelling_of_a_tensor():
    import warnings
    from torchlite.autograd import Variable
    x = tl.ones(3)
    v = Variable(x, requires_grad=True)
    assert type(v) is tl.Tensor and v.requires_grad and v.is_leaf
    assert v.data_ptr() == x.data_ptr()                       # the same memory
    assert isinstance(tl.zeros(1), Variable) and not isinstance(1.0, Variable)
    y = Variable(tl.ones(2, requires_grad=True) * 2)        # detached: a leaf that needs no grad
    assert y.is_leaf and not y.requires_grad
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Variable(x, volatile=True)
    assert any("volatile was removed" in str(w.message) for w in caught)
    with pytest.raises(TypeError, match="has to be a tensor"):
        Variable([1.0, 2.0])


# ---- nn.utils.skip_init ----------------------------------------------------------------------
def test_skip_init_builds_the_module_without_initialising_it():
    """skip_init builds the module with the shapes, dtype and device asked for and runs none of
    the initialisers: the global generator is exactly where it was (every layer's default
    initialisation draws from it), the parameters are not their initialised values, and
    initialising afterwards (reset_parameters) gives the usual module."""
    from torchlite.nn.utils import skip_init
    for cls, args, kw in [(nn.Linear, (5, 3), {}), (nn.Conv2d, (2, 4, 3), {"bias": False}),
                          (nn.Embedding, (7, 3), {}), (nn.LSTM, (4, 6), {}),
                          (nn.BatchNorm1d, (3,), {}), (nn.Linear, (4, 2), {"dtype": tl.float64})]:
        tl.manual_seed(3)
        ref = cls(*args, **kw)
        tl.manual_seed(3)
        m = skip_init(cls, *args, **kw)
        assert type(m) is cls
        for (name, p), (_, q) in zip(m.named_parameters(), ref.named_parameters()):
            assert p.shape == q.shape and p.dtype == q.dtype and p.device == q.device, name
            assert isinstance(p, nn.Parameter)
        # nothing drew from the generator: the next number is the first one after the seed
        tl.manual_seed(3)
        first = tl.rand(3)
        tl.manual_seed(3)
        skip_init(cls, *args, **kw)
        np.testing.assert_array_equal(tl.rand(3).numpy(), first.numpy())
        tl.manual_seed(3)
        m.reset_parameters()
        for (name, p), (_, q) in zip(m.named_parameters(), ref.named_parameters()):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)
    # the initialisers work again afterwards
    w = tl.empty(3, 3)
    nn.init.ones_(w)
    assert w.tolist() == [[1.0] * 3] * 3


def test_skip_init_errors_as_pytorch():
    from torchlite.nn.utils import skip_init

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.lin = nn.Linear(n, n)
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        skip_init(NoDevice, 3)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        skip_init(int, 3)
