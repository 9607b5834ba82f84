"""torchlite.distributions beyond the first families (Gamma, Chi2, Beta, Dirichlet, StudentT,
Cauchy, Gumbel, HalfNormal/HalfCauchy, Geometric, Binomial, Multinomial, OneHotCategorical,
LowRankMultivariateNormal, the Relaxed families, Independent, MixtureSameFamily,
TransformedDistribution, transforms, biject_to/transform_to, KL pairs).

Every family is compared with PyTorch at the same float64 parameters (shapes, moments,
log_prob, entropy, cdf/icdf, enumerate_support, expand, sample shapes); samples are checked
against the analytic moments with six-standard-error bounds computed from the sample itself
(fixed seeds: deterministic, and a wrong sampler is off by far more), against SciPy's CDFs
(Kolmogorov-Smirnov) and pmfs (chi-square); reparameterised gradients against finite
differences of the CDF (Gamma), against torch, and for unbiasedness (Beta, Dirichlet,
StudentT); validation errors are PyTorch's ValueErrors."""
import math

import numpy as np
import pytest

import torchlite as tl
import torchlite.distributions as D
from torchlite.distributions import constraints
from torchlite.distributions import transforms as T

P3 = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
COV_FACTOR = np.random.default_rng(0).standard_normal((2, 3, 2))


def _t(a):
    return tl.tensor(np.asarray(a, dtype=np.float64))


def _families(mk, lib):
    """name -> (distribution, a value in its support) for torchlite or torch (mk makes a
    float64 tensor of the library)."""
    d, t = lib.distributions, lib.distributions.transforms
    return {
        "Gamma": (d.Gamma(mk([0.5, 3.0]), mk([1.0, 2.5])), mk([[0.3, 1.0], [2.0, 0.01]])),
        "Chi2": (d.Chi2(mk([1.5, 4.0])), mk([[0.3, 1.0], [2.0, 7.0]])),
        "Beta": (d.Beta(mk([0.5, 3.0]), mk([2.0, 1.5])), mk([[0.3, 0.9], [0.02, 0.5]])),
        "Dirichlet": (d.Dirichlet(mk([[0.5, 2.0, 3.0], [1.0, 1.0, 4.0]])), mk(P3)),
        "StudentT": (d.StudentT(mk([0.8, 1.5, 5.0]), mk([0.0, 1.0, -1.0]), mk([1.0, 2.0, 0.5])),
                     mk([0.3, 4.0, -2.0])),
        "Cauchy": (d.Cauchy(mk([0.0, 1.0]), mk([1.0, 3.0])), mk([0.3, -4.0])),
        "Gumbel": (d.Gumbel(mk([0.0, 1.0]), mk([1.0, 3.0])), mk([0.3, -4.0])),
        "HalfNormal": (d.HalfNormal(mk([1.0, 3.0])), mk([0.3, 4.0])),
        "HalfCauchy": (d.HalfCauchy(mk([1.0, 3.0])), mk([0.3, 4.0])),
        "Geometric": (d.Geometric(mk([0.3, 0.9])), mk([0.0, 4.0])),
        "Binomial": (d.Binomial(10, mk([0.3, 0.9])), mk([0.0, 9.0])),
        "BinomialLogits": (d.Binomial(mk([5.0, 10.0]), logits=mk([-0.3, 2.0])), mk([5.0, 9.0])),
        "Multinomial": (d.Multinomial(6, mk(P3)), mk([[1.0, 2.0, 3.0], [6.0, 0.0, 0.0]])),
        "OneHotCategorical": (d.OneHotCategorical(mk(P3)), mk([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])),
        "LowRankMultivariateNormal": (
            d.LowRankMultivariateNormal(mk([[0.0, 1.0, 2.0]]), mk(COV_FACTOR), mk([1.0, 2.0, 0.5])),
            mk([[0.5, 0.2, -1.0], [1.0, 1.0, 1.0]])),
        "RelaxedBernoulli": (d.RelaxedBernoulli(mk(0.7), mk([0.3, 0.9])), mk([0.2, 0.95])),
        "RelaxedOneHotCategorical": (d.RelaxedOneHotCategorical(mk(0.7), mk(P3)), mk(P3)),
        "LogNormal": (d.LogNormal(mk([0.0, 1.0]), mk([1.0, 0.5])), mk([0.3, 4.0])),
        "Independent": (d.Independent(d.Normal(mk([[0.0, 1.0], [2.0, 3.0]]),
                                               mk([[1.0, 2.0], [0.5, 0.3]])), 1),
                        mk([[0.3, 4.0], [1.0, 2.0]])),
        "MixtureSameFamily": (d.MixtureSameFamily(d.Categorical(mk([0.3, 0.7])),
                                                  d.Normal(mk([0.0, 2.0]), mk([1.0, 0.5]))),
                              mk([0.3, 4.0, 1.0])),
        "MixtureOfIndependent": (
            d.MixtureSameFamily(d.Categorical(mk([0.3, 0.7])),
                                d.Independent(d.Normal(mk([[0.0, 2.0], [1.0, 1.0]]),
                                                       mk([[1.0, 0.5], [2.0, 1.0]])), 1)),
            mk([[0.3, 4.0], [1.0, 2.0]])),
        "TransformedTanhAffine": (
            d.TransformedDistribution(d.Normal(mk([0.0, 1.0]), mk([1.0, 0.5])),
                                      [t.TanhTransform(), t.AffineTransform(mk(1.0), mk(2.0))]),
            mk([0.3, 2.5])),
        "TransformedStickBreaking": (
            d.TransformedDistribution(d.Normal(mk([0.0, 1.0]), mk([1.0, 0.5])),
                                      t.StickBreakingTransform()), mk([0.3, 0.2, 0.5])),
        "Exponential": (d.Exponential(mk([0.5, 2.0])), mk([0.3, 4.0])),
        "Laplace": (d.Laplace(mk([0.0, 1.0]), mk([1.0, 0.5])), mk([0.3, 4.0])),
        "Uniform": (d.Uniform(mk([0.0, 1.0]), mk([2.0, 5.0])), mk([0.3, 4.0])),
        "Poisson": (d.Poisson(mk([0.5, 2.0])), mk([0.0, 4.0])),
        "Bernoulli": (d.Bernoulli(mk([0.5, 0.2])), mk([0.0, 1.0])),
        "Categorical": (d.Categorical(mk(P3)), mk([2.0, 0.0])),
        "MultivariateNormal": (d.MultivariateNormal(mk([0.0, 1.0]), mk([[2.0, 0.5], [0.5, 1.0]])),
                               mk([[0.3, 4.0], [1.0, 2.0]])),
    }


FAMILIES = list(_families(_t, tl))


def _both(name):
    torch = pytest.importorskip("torch")
    ours = _families(_t, tl)[name]
    theirs = _families(lambda a: torch.tensor(np.asarray(a, dtype=np.float64)), torch)[name]
    return torch, ours, theirs


def _agree(ours_fn, theirs_fn, rtol=1e-9):
    """Both raise NotImplementedError, or both give the same values and shape."""
    try:
        want = theirs_fn()
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ours_fn()
        return
    got = ours_fn()
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("name", FAMILIES)
def test_family_agrees_with_torch(name):
    torch, (d, v), (td, tv) = _both(name)
    assert tuple(d.batch_shape) == tuple(td.batch_shape)
    assert tuple(d.event_shape) == tuple(td.event_shape)
    assert d.has_rsample == td.has_rsample
    assert d.has_enumerate_support == td.has_enumerate_support
    assert type(d.support).__name__ == type(td.support).__name__
    for prop in ("mean", "mode", "variance", "stddev"):
        _agree(lambda: getattr(d, prop), lambda: getattr(td, prop))
    # Multinomial.entropy: torch takes lgamma of an integer tensor in float32
    _agree(d.entropy, td.entropy, rtol=1e-6 if name == "Multinomial" else 1e-9)
    _agree(lambda: d.log_prob(v), lambda: td.log_prob(tv))
    _agree(lambda: d.cdf(v), lambda: td.cdf(tv))
    if not d.event_shape:
        u = np.array([0.2, 0.7])
        _agree(lambda: d.icdf(_t(u)), lambda: td.icdf(torch.tensor(u)))
    _agree(d.enumerate_support, td.enumerate_support)
    batch = (4,) + tuple(d.batch_shape)
    e, te = d.expand(batch), td.expand(batch)
    assert type(e) is type(d) and tuple(e.batch_shape) == batch
    assert tuple(e.event_shape) == tuple(te.event_shape)
    extra = v.ndim - len(d.batch_shape) - len(d.event_shape)         # sample dims of v
    _agree(lambda: e.log_prob(v[(0,) * extra]), lambda: te.log_prob(tv[(0,) * extra]))
    _agree(lambda: e.mean, lambda: te.mean)
    s, ts = d.sample((3,)), td.sample((3,))
    assert tuple(s.shape) == tuple(ts.shape)
    assert str(s.dtype).split(".")[-1] == str(ts.dtype).split(".")[-1]
    assert tuple(e.sample((2,)).shape) == tuple(te.sample((2,)).shape)
    if d.has_rsample:
        assert tuple(d.rsample((3,)).shape) == tuple(ts.shape)


def _moment_cases():
    return {
        "Gamma": D.Gamma(_t([0.3, 2.5, 40.0]), _t([1.0, 2.0, 0.5])),
        "Chi2": D.Chi2(_t([1.0, 7.0])),
        "Beta": D.Beta(_t([0.4, 2.0, 30.0]), _t([0.7, 5.0, 3.0])),
        "Dirichlet": D.Dirichlet(_t([0.3, 2.0, 5.0])),
        "StudentT": D.StudentT(_t([5.0, 12.0]), _t([1.0, -2.0]), _t([2.0, 0.5])),
        "Gumbel": D.Gumbel(_t([0.0, 3.0]), _t([1.0, 0.2])),
        "HalfNormal": D.HalfNormal(_t([1.0, 4.0])),
        "Geometric": D.Geometric(_t([0.2, 0.9])),
        "Binomial": D.Binomial(_t([10.0, 200.0, 1000.0, 60.0]), _t([0.3, 0.6, 0.01, 0.97])),
        "Multinomial": D.Multinomial(9, _t([0.1, 0.2, 0.7])),
        "OneHotCategorical": D.OneHotCategorical(_t([0.1, 0.2, 0.7])),
        "LogNormal": D.LogNormal(_t([0.0, 1.0]), _t([0.3, 0.2])),
        "LowRankMultivariateNormal": D.LowRankMultivariateNormal(
            _t([0.0, 1.0, 2.0]), _t(COV_FACTOR[0]), _t([1.0, 2.0, 0.5])),
        "MixtureSameFamily": D.MixtureSameFamily(D.Categorical(_t([0.3, 0.7])),
                                                 D.Normal(_t([-1.0, 2.0]), _t([1.0, 0.5]))),
    }


@pytest.mark.parametrize("name", list(_moment_cases()))
def test_sample_moments_match_the_analytic_ones(name):
    """Sample mean and variance within six standard errors (estimated from the same sample)
    of the distribution's mean and variance."""
    d = _moment_cases()[name]
    tl.manual_seed(11)
    n = 40000
    x = d.sample((n,)).numpy()
    assert x.shape == (n,) + tuple(d.batch_shape) + tuple(d.event_shape)
    mean = x.mean(0)
    dev2 = (x - mean) ** 2
    se_mean = x.std(0) / math.sqrt(n)
    se_var = dev2.std(0) / math.sqrt(n)
    assert (np.abs(mean - d.mean.numpy()) <= 6 * se_mean + 1e-12).all(), (mean, d.mean)
    assert (np.abs(dev2.mean(0) - d.variance.numpy()) <= 6 * se_var + 1e-12).all(), \
        (dev2.mean(0), d.variance)
    if name == "LowRankMultivariateNormal":
        np.testing.assert_allclose(np.cov(x.T), d.covariance_matrix.numpy(), atol=0.15)
    tl.manual_seed(11)
    assert np.array_equal(d.sample((n,)).numpy(), x)            # seeded: reproducible


@pytest.mark.parametrize("name,make,scipy_dist", [
    ("Gamma small", lambda: D.Gamma(0.3, 2.0), lambda s: s.gamma(0.3, scale=0.5)),
    ("Gamma", lambda: D.Gamma(2.5, 0.5), lambda s: s.gamma(2.5, scale=2.0)),
    ("Chi2", lambda: D.Chi2(3.0), lambda s: s.chi2(3.0)),
    ("Beta", lambda: D.Beta(0.5, 2.0), lambda s: s.beta(0.5, 2.0)),
    ("StudentT", lambda: D.StudentT(2.5, 1.0, 3.0), lambda s: s.t(2.5, 1.0, 3.0)),
    ("Cauchy", lambda: D.Cauchy(1.0, 2.0), lambda s: s.cauchy(1.0, 2.0)),
    ("Gumbel", lambda: D.Gumbel(1.0, 2.0), lambda s: s.gumbel_r(1.0, 2.0)),
    ("HalfNormal", lambda: D.HalfNormal(2.0), lambda s: s.halfnorm(scale=2.0)),
    ("HalfCauchy", lambda: D.HalfCauchy(2.0), lambda s: s.halfcauchy(scale=2.0)),
])
def test_continuous_samples_follow_scipy(name, make, scipy_dist):
    """Kolmogorov-Smirnov against SciPy's CDF at 20000 draws (a fixed seed)."""
    stats = pytest.importorskip("scipy.stats")
    tl.manual_seed(3)
    x = make().sample((20000,)).double().numpy()
    assert stats.kstest(x, scipy_dist(stats).cdf).pvalue > 1e-5


@pytest.mark.parametrize("n,p", [(7, 0.3), (40, 0.05), (60, 0.5), (300, 0.8), (5000, 0.3)])
def test_binomial_draws_follow_the_pmf(n, p):
    """Chi-square over the cells with >= 5 expected draws (inversion below n min(p, 1-p) = 10,
    BTRS above, p > 1/2 by symmetry)."""
    stats = pytest.importorskip("scipy.stats")
    tl.manual_seed(5)
    x = D.Binomial(n, _t(p)).sample((100000,)).numpy().astype(np.int64)
    assert x.min() >= 0 and x.max() <= n
    counts = np.bincount(x, minlength=n + 1)
    expected = stats.binom(n, p).pmf(np.arange(n + 1)) * x.size
    cells = expected >= 5
    chi2 = ((counts[cells] - expected[cells]) ** 2 / expected[cells]).sum()
    assert stats.chi2(cells.sum() - 1).sf(chi2) > 1e-5
    assert counts[~cells].sum() <= max(30, 3 * expected[~cells].sum())


def test_binomial_and_multinomial_edge_cases():
    tl.manual_seed(0)
    b = D.Binomial(_t([0.0, 5.0, 5.0, 8.0]), _t([0.3, 0.0, 1.0, 0.5])).sample((50,)).numpy()
    assert (b[:, 0] == 0).all() and (b[:, 1] == 0).all() and (b[:, 2] == 5).all()
    m = D.Multinomial(12, _t([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])).sample((20,)).numpy()
    assert (m.sum(-1) == 12).all() and (m[:, 0, 0] == 0).all() and (m[:, 1, 0] == 12).all()
    with pytest.raises(NotImplementedError, match="inhomogeneous"):
        D.Multinomial(_t(3.0), _t([0.5, 0.5]))
    with pytest.raises(NotImplementedError, match="Inhomogeneous"):
        D.Binomial(_t([2.0, 3.0]), _t([0.5, 0.5])).entropy()


# ---- reparameterised gradients ----------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.05, 0.6, 1.0, 3.0, 40.0, 2.0e4])
def test_gamma_rsample_gradient_is_the_implicit_one(alpha):
    """dx/d concentration of Gamma(alpha, rate) draws equals -(dF/dalpha) / f at the draw
    (central differences of SciPy's regularized incomplete gamma), and d x / d rate = -x/rate."""
    special = pytest.importorskip("scipy.special")
    stats = pytest.importorskip("scipy.stats")
    rate = 1.7
    conc = tl.full((40,), alpha, dtype=tl.float64, requires_grad=True)
    rt = tl.full((40,), rate, dtype=tl.float64, requires_grad=True)
    tl.manual_seed(2)
    x = D.Gamma(conc, rt).rsample()
    x.sum().backward()
    z = x.detach().numpy() * rate                       # the standard Gamma(alpha, 1) draws
    h = 1e-5 * alpha
    dF = (special.gammainc(alpha + h, z) - special.gammainc(alpha - h, z)) / (2 * h)
    want = -dF / stats.gamma(alpha).pdf(z) / rate
    np.testing.assert_allclose(conc.grad.numpy(), want, rtol=2e-4 if alpha < 1e4 else 1e-3)
    np.testing.assert_allclose(rt.grad.numpy(), -x.detach().numpy() / rate, rtol=1e-12)


def test_gamma_rsample_gradient_against_torch():
    torch = pytest.importorskip("torch")
    a = np.array([0.1, 0.5, 1.0, 2.0, 7.0, 30.0, 300.0])
    tl.manual_seed(0)
    z = D.Gamma(_t(a), 1.0).sample((50,))
    from torchlite.distributions._incomplete_gamma import standard_gamma_quantile_grad
    ours = standard_gamma_quantile_grad(_t(a).expand(z.shape), z).numpy()
    theirs = torch._standard_gamma_grad(torch.tensor(a).expand(z.shape).contiguous(),
                                        torch.tensor(z.numpy())).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=5e-3)          # torch's own approximation


def test_gamma_cdf_is_differentiable_in_both_arguments():
    special = pytest.importorskip("scipy.special")
    a = np.array([0.3, 1.0, 4.0, 50.0, 2.0e4])
    x = np.array([0.1, 2.5, 3.0, 60.0, 2.01e4])
    d = D.Gamma(_t(a), _t(1.0))
    np.testing.assert_allclose(d.cdf(_t(x)).numpy(), special.gammainc(a, x), rtol=1e-9,
                               atol=1e-9)
    ca = _t(a[:4]).requires_grad_()
    cx = _t(x[:4]).requires_grad_()
    assert tl.autograd.gradcheck(lambda c, v: D.Gamma(c, 1.0, validate_args=False).cdf(v),
                                 (ca, cx), eps=1e-6, atol=1e-7, rtol=1e-5)
    with tl.no_grad():
        edge = D.Gamma(_t([2.0, 2.0]), 1.0).cdf(_t([0.0, float("inf")]))
    np.testing.assert_array_equal(edge.numpy(), [0.0, 1.0])


def _per_sample_grads(make, params, n, seed=4):
    """d f(sample_i) / d params_i for n independent copies of the parameters."""
    leaves = [tl.tensor(np.broadcast_to(np.asarray(p, dtype=np.float64), (n,) + np.shape(p)).copy(),
                        requires_grad=True) for p in params]
    tl.manual_seed(seed)
    make(*leaves).backward()
    return [leaf.grad.numpy() for leaf in leaves]


def _assert_unbiased(samples, want):
    """The mean of per-sample gradient estimates within six standard errors of want."""
    mean = samples.mean(0)
    se = samples.std(0) / math.sqrt(samples.shape[0])
    assert (np.abs(mean - want) <= 6 * se + 1e-12).all(), (mean, want, se)


def test_beta_rsample_gradients_are_unbiased():
    """E[dx/da] = d/da E[x] = b / (a + b)^2 and E[dx/db] = -a / (a + b)^2."""
    a, b = 0.7, 2.5
    ga, gb = _per_sample_grads(lambda ca, cb: D.Beta(ca, cb).rsample().sum(), [a, b], 40000)
    _assert_unbiased(ga, b / (a + b) ** 2)
    _assert_unbiased(gb, -a / (a + b) ** 2)


def test_dirichlet_rsample_gradients_are_unbiased():
    """For f = w . x: E[df/dalpha_j] = d/dalpha_j (w . alpha / alpha_0)."""
    alpha, w = np.array([0.4, 1.5, 3.0]), np.array([1.0, -2.0, 0.5])
    (g,) = _per_sample_grads(lambda c: (D.Dirichlet(c).rsample() * _t(w)).sum(), [alpha], 40000)
    a0 = alpha.sum()
    _assert_unbiased(g, (w * a0 - w @ alpha) / a0 ** 2)


def test_student_t_and_chi2_rsample_gradients_are_unbiased():
    """E[d(x^2)/d df] = d/d df (scale^2 df / (df - 2)); E[dx/d df] = 1 for Chi2."""
    df, scale = 9.0, 1.5
    (g,) = _per_sample_grads(lambda v: D.StudentT(v, 0.0, scale).rsample().pow(2).sum(), [df],
                             40000)
    _assert_unbiased(g, -2 * scale ** 2 / (df - 2) ** 2)
    (g,) = _per_sample_grads(lambda v: D.Chi2(v).rsample().sum(), [df], 40000)
    _assert_unbiased(g, 1.0)


@pytest.mark.parametrize("make,params", [
    (lambda a, b: D.Normal(a, b), [[0.3, -1.0], [1.5, 0.7]]),
    (lambda a, b: D.Cauchy(a, b), [[0.3, -1.0], [1.5, 0.7]]),
    (lambda a, b: D.Gumbel(a, b), [[0.3, -1.0], [1.5, 0.7]]),
    (lambda a, b: D.Laplace(a, b), [[0.3, -1.0], [1.5, 0.7]]),
    (lambda a, b: D.LogNormal(a, b), [[0.3, -1.0], [1.5, 0.7]]),
    (lambda a, b: D.Uniform(a, b), [[0.3, -1.0], [1.5, 0.7]]),
    (lambda a: D.HalfNormal(a), [[1.5, 0.7]]),
    (lambda a: D.HalfCauchy(a), [[1.5, 0.7]]),
    (lambda a: D.Exponential(a), [[1.5, 0.7]]),
    (lambda t, p: D.RelaxedBernoulli(t, p), [0.7, [0.3, 0.8]]),
    (lambda t, p: D.RelaxedOneHotCategorical(t, logits=p), [0.7, [0.3, 0.8, -1.0]]),
    (lambda loc, w, dg: D.LowRankMultivariateNormal(loc, w, dg),
     [[0.0, 1.0, 2.0], COV_FACTOR[0], [1.0, 2.0, 0.5]]),
    (lambda loc, L: D.MultivariateNormal(loc, scale_tril=L.tril(), validate_args=False),
     [[0.0, 1.0], [[1.0, 0.0], [0.4, 2.0]]]),
])
def test_rsample_is_differentiable_given_the_noise(make, params):
    """With the noise fixed by the seed, rsample is a smooth function of the parameters:
    its backward matches finite differences."""
    leaves = [_t(p).requires_grad_() for p in params]

    def draw(*ps):
        tl.manual_seed(7)
        return make(*ps).rsample((3,))
    assert tl.autograd.gradcheck(draw, leaves, eps=1e-6, atol=1e-6, rtol=1e-4)


# ---- validation ---------------------------------------------------------------------------------
def _bad_arguments(lib):
    d = lib.distributions

    def mk(a):
        return lib.tensor(np.asarray(a, dtype=np.float64))
    return [lambda: d.Gamma(-1.0, 1.0), lambda: d.Gamma(1.0, 0.0), lambda: d.Beta(0.0, 1.0),
            lambda: d.Dirichlet(mk([1.0, -1.0])), lambda: d.Chi2(-2.0),
            lambda: d.StudentT(mk(-1.0)), lambda: d.StudentT(mk(2.0), scale=mk(0.0)),
            lambda: d.Cauchy(0.0, -1.0), lambda: d.Gumbel(0.0, -1.0), lambda: d.HalfNormal(-1.0),
            lambda: d.HalfCauchy(0.0), lambda: d.Geometric(mk(0.0)),
            lambda: d.Geometric(mk(1.5)), lambda: d.Binomial(10, mk(1.5)),
            lambda: d.Binomial(mk(2.5), mk(0.5)), lambda: d.Binomial(mk(-1.0), mk(0.5)),
            lambda: d.Multinomial(3, mk([-0.1, 1.1])), lambda: d.OneHotCategorical(mk([-0.1, 1.1])),
            lambda: d.LowRankMultivariateNormal(mk([0.0, 0.0]), mk([[1.0], [1.0]]), mk([1.0, -1.0])),
            lambda: d.RelaxedBernoulli(mk(0.5), mk(2.0)), lambda: d.Uniform(2.0, 1.0),
            lambda: d.Dirichlet(mk(1.0)),
            lambda: d.LowRankMultivariateNormal(mk([0.0, 0.0]), mk([[1.0, 0.0]]), mk([1.0, 1.0])),
            lambda: d.Independent(d.Normal(mk([0.0]), mk([1.0])), 2),
            lambda: d.MixtureSameFamily(d.Categorical(mk([0.5, 0.5])), d.Normal(mk([0.0] * 3), 1.0)),
            lambda: d.MixtureSameFamily(d.Normal(0.0, 1.0), d.Normal(mk([0.0]), 1.0)),
            lambda: d.TransformedDistribution(d.Normal(0.0, 1.0), "exp")]


def _bad_values(lib):
    d = lib.distributions

    def mk(a):
        return lib.tensor(np.asarray(a, dtype=np.float64))
    return [lambda: d.Gamma(2.0, 1.0).log_prob(mk(-1.0)),
            lambda: d.Beta(2.0, 1.0).log_prob(mk(1.5)),
            lambda: d.Binomial(10, mk(0.5)).log_prob(mk(11.0)),
            lambda: d.Binomial(10, mk(0.5)).log_prob(mk(2.5)),
            lambda: d.Dirichlet(mk([1.0, 2.0])).log_prob(mk([0.5, 0.7])),
            lambda: d.Multinomial(3, mk([0.5, 0.5])).log_prob(mk([3.0, 1.0])),
            lambda: d.Geometric(mk(0.5)).log_prob(mk(-1.0)),
            lambda: d.OneHotCategorical(mk([0.5, 0.5])).log_prob(mk([1.0, 1.0])),
            lambda: d.HalfNormal(1.0).log_prob(mk(-0.5)),
            lambda: d.Gamma(mk([1.0, 2.0]), 1.0).log_prob(mk([1.0, 2.0, 3.0])),
            lambda: d.Dirichlet(mk([1.0, 2.0])).log_prob(mk([0.2, 0.3, 0.5]))]


@pytest.mark.parametrize("i", range(len(_bad_arguments(tl))))
def test_bad_arguments_raise_value_error_as_in_torch(i):
    with pytest.raises(ValueError):
        _bad_arguments(tl)[i]()
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError):
        _bad_arguments(torch)[i]()


@pytest.mark.parametrize("i", range(len(_bad_values(tl))))
def test_values_outside_the_support_raise_value_error(i):
    with pytest.raises(ValueError):
        _bad_values(tl)[i]()
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError):
        _bad_values(torch)[i]()


def test_validation_can_be_turned_off():
    assert D.Gamma(-1.0, 1.0, validate_args=False).mean.item() == -1.0
    D.Beta(2.0, 1.0, validate_args=False).log_prob(_t(0.5))
    D.Distribution.set_default_validate_args(False)
    try:
        D.Gamma(-1.0, 1.0)
        D.HalfNormal(-1.0)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Gamma(-1.0, 1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


# ---- KL divergence ------------------------------------------------------------------------------
def _kl_pairs(mk, lib):
    d = lib.distributions
    return [
        (d.Gamma(mk([0.5, 3.0]), mk([1.0, 2.5])), d.Gamma(mk([2.0, 1.0]), mk([0.5, 1.5]))),
        (d.Beta(mk([0.5, 3.0]), mk([2.0, 1.5])), d.Beta(mk([1.0, 2.0]), mk([1.0, 4.0]))),
        (d.Dirichlet(mk([[0.5, 2.0, 3.0]])), d.Dirichlet(mk([[1.0, 1.0, 4.0]]))),
        (d.Binomial(10, mk([0.3, 0.9])), d.Binomial(10, mk([0.5, 0.5]))),
        (d.Geometric(mk([0.3, 0.9])), d.Geometric(mk([0.5, 0.2]))),
        (d.Gumbel(mk([0.0, 1.0]), mk([1.0, 3.0])), d.Gumbel(mk([1.0, 0.0]), mk([2.0, 0.5]))),
        (d.Cauchy(mk([0.0, 1.0]), mk([1.0, 3.0])), d.Cauchy(mk([1.0, 0.0]), mk([2.0, 0.5]))),
        (d.HalfNormal(mk([1.0, 3.0])), d.HalfNormal(mk([2.0, 0.5]))),
        (d.LogNormal(mk([0.0, 1.0]), mk([1.0, 0.5])), d.LogNormal(mk([1.0, 0.0]), mk([2.0, 0.5]))),
        (d.Laplace(mk([0.0, 1.0]), mk([1.0, 0.5])), d.Laplace(mk([1.0, 0.0]), mk([2.0, 0.5]))),
        (d.Poisson(mk([0.5, 2.0])), d.Poisson(mk([1.5, 0.3]))),
        (d.OneHotCategorical(mk(P3)), d.OneHotCategorical(mk(P3[::-1].copy()))),
        (d.Independent(d.Normal(mk([[0.0, 1.0]]), mk([[1.0, 2.0]])), 1),
         d.Independent(d.Normal(mk([[1.0, 0.0]]), mk([[0.5, 1.0]])), 1)),
        (d.LowRankMultivariateNormal(mk([0.0, 1.0, 2.0]), mk(COV_FACTOR[0]), mk([1.0, 2.0, 0.5])),
         d.LowRankMultivariateNormal(mk([1.0, 0.0, 0.0]), mk(COV_FACTOR[1]), mk([0.5, 1.0, 1.5]))),
        (d.MultivariateNormal(mk([0.0, 1.0, 2.0]), mk(np.diag([1.0, 2.0, 3.0]) + 0.3)),
         d.LowRankMultivariateNormal(mk([1.0, 0.0, 0.0]), mk(COV_FACTOR[1]), mk([0.5, 1.0, 1.5]))),
        (d.LowRankMultivariateNormal(mk([1.0, 0.0, 0.0]), mk(COV_FACTOR[1]), mk([0.5, 1.0, 1.5])),
         d.MultivariateNormal(mk([0.0, 1.0, 2.0]), mk(np.diag([1.0, 2.0, 3.0]) + 0.3))),
        (d.Exponential(mk([0.5, 2.0])), d.Gamma(mk([2.0, 1.0]), mk([0.5, 1.5]))),
        (d.Gamma(mk([0.5, 3.0]), mk([1.0, 2.5])), d.Exponential(mk([0.5, 2.0]))),
        (d.Gamma(mk([0.5, 3.0]), mk([1.0, 2.5])), d.Normal(mk([0.5, 2.0]), mk([1.0, 3.0]))),
        (d.Gamma(mk([0.5, 3.0]), mk([1.0, 2.5])), d.Gumbel(mk([0.5, 2.0]), mk([1.0, 3.0]))),
        (d.Beta(mk([0.5, 3.0]), mk([2.0, 1.5])), d.Normal(mk([0.5, 2.0]), mk([1.0, 3.0]))),
        (d.Beta(mk([0.5, 3.0]), mk([2.0, 1.5])), d.Gamma(mk([0.5, 2.0]), mk([1.0, 3.0]))),
        (d.Beta(mk([0.5, 3.0]), mk([2.0, 1.5])), d.Exponential(mk([0.5, 2.0]))),
        (d.Beta(mk([0.5, 3.0]), mk([2.0, 1.5])), d.Uniform(mk([-0.5, 0.2]), mk([1.0, 3.0]))),
        (d.Uniform(mk([0.1, 0.2]), mk([0.9, 0.3])), d.Beta(mk([0.5, 3.0]), mk([2.0, 1.5]))),
        (d.Uniform(mk([0.1, 0.2]), mk([0.9, 3.0])), d.Gamma(mk([0.5, 3.0]), mk([2.0, 1.5]))),
        (d.Uniform(mk([0.1, -0.2]), mk([0.9, 3.0])), d.Exponential(mk([0.5, 3.0]))),
        (d.Uniform(mk([0.1, 0.2]), mk([0.9, 3.0])), d.Gumbel(mk([0.5, 3.0]), mk([2.0, 1.5]))),
        (d.Uniform(mk([0.1, 0.2]), mk([0.9, 3.0])), d.Normal(mk([0.5, 3.0]), mk([2.0, 1.5]))),
        (d.Exponential(mk([0.5, 2.0])), d.Gumbel(mk([0.5, 2.0]), mk([1.0, 3.0]))),
        (d.Exponential(mk([0.5, 2.0])), d.Normal(mk([0.5, 2.0]), mk([1.0, 3.0]))),
        (d.Gumbel(mk([0.5, 2.0]), mk([1.0, 3.0])), d.Normal(mk([0.5, 2.0]), mk([1.0, 3.0]))),
        (d.Laplace(mk([0.5, 2.0]), mk([1.0, 3.0])), d.Normal(mk([0.0, 1.0]), mk([1.0, 0.5]))),
        (d.Normal(mk([0.5, 2.0]), mk([1.0, 3.0])), d.Gumbel(mk([0.0, 1.0]), mk([1.0, 0.5]))),
        (d.Normal(mk([0.5, 2.0]), mk([1.0, 3.0])), d.Laplace(mk([0.0, 1.0]), mk([1.0, 0.5]))),
        (d.Bernoulli(mk([0.3, 0.8])), d.Poisson(mk([0.5, 2.0]))),
        (d.Normal(mk([0.5, 2.0]), mk([1.0, 3.0])), d.Gamma(mk([0.5, 2.0]), mk([1.0, 3.0]))),
        (d.Poisson(mk([0.5, 2.0])), d.Binomial(10, mk([0.3, 0.5]))),
        (d.Gumbel(mk([0.5, 2.0]), mk([1.0, 3.0])), d.Uniform(mk([0.0, 1.0]), mk([1.0, 3.0]))),
    ]


def test_kl_divergence_agrees_with_torch():
    torch = pytest.importorskip("torch")
    ours = _kl_pairs(_t, tl)
    theirs = _kl_pairs(lambda a: torch.tensor(np.asarray(a, dtype=np.float64)), torch)
    for (p, q), (tp, tq) in zip(ours, theirs):
        got = D.kl_divergence(p, q)
        want = torch.distributions.kl_divergence(tp, tq)
        assert tuple(got.shape) == tuple(want.shape), (type(p), type(q))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=f"{type(p).__name__} || {type(q).__name__}")


def test_kl_divergence_is_a_monte_carlo_average_and_flows_gradients():
    """KL(Gamma || Gamma) equals E_p[log p - log q] (Monte Carlo, six standard errors), and
    gradients reach the parameters of both."""
    a = _t([2.0]).requires_grad_()
    p, q = D.Gamma(a, _t([1.0])), D.Gamma(_t([3.0]), _t([2.0]))
    tl.manual_seed(1)
    x = p.sample((40000,))
    diff = (p.log_prob(x) - q.log_prob(x)).detach().numpy()
    kl = D.kl_divergence(p, q)
    assert abs(diff.mean() - kl.item()) <= 6 * diff.std() / math.sqrt(diff.size)
    kl.sum().backward()
    assert a.grad is not None and np.isfinite(a.grad.numpy()).all()


def test_kl_lookup_prefers_the_most_specific_pair():
    class MyGamma(D.Gamma):
        pass
    p, q = MyGamma(2.0, 1.0), D.Gamma(3.0, 2.0)
    assert D.kl_divergence(p, q).item() == pytest.approx(D.kl_divergence(D.Gamma(2.0, 1.0), q).item())
    D.register_kl(MyGamma, D.Gamma)(lambda a, b: tl.tensor(-1.0))
    assert D.kl_divergence(p, q).item() == -1.0
    assert D.kl_divergence(D.Gamma(2.0, 1.0), q).item() != -1.0
    with pytest.raises(TypeError):
        D.register_kl(int, D.Gamma)
    with pytest.raises(NotImplementedError, match="Cauchy"):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Gamma(1.0, 1.0))


# ---- transforms, biject_to / transform_to -------------------------------------------------------
def _transforms(lib, mk):
    t = lib.distributions.transforms
    return [
        (t.ExpTransform(), mk([-1.0, 0.3, 2.0])),
        (t.AffineTransform(mk([1.0, -2.0, 0.5]), mk([2.0, -0.5, 3.0])), mk([-1.0, 0.3, 2.0])),
        (t.AffineTransform(1.0, -3.0), mk([-1.0, 0.3, 2.0])),
        (t.AffineTransform(mk([1.0, 2.0]), mk([2.0, 3.0]), event_dim=1), mk([[-1.0, 0.3], [2.0, 1.0]])),
        (t.SigmoidTransform(), mk([-1.0, 0.3, 2.0])),
        (t.TanhTransform(), mk([-1.0, 0.3, 2.0])),
        (t.SoftplusTransform(), mk([-1.0, 0.3, 2.0])),
        (t.PowerTransform(mk(2.5)), mk([0.5, 0.3, 2.0])),
        (t.AbsTransform(), mk([1.0, 0.3, 2.0])),
        (t.SoftmaxTransform(), mk([[-1.0, 0.3, 2.0]])),
        (t.StickBreakingTransform(), mk([[-1.0, 0.3, 2.0]])),
        (t.LowerCholeskyTransform(), mk([[1.0, 5.0], [0.3, -0.2]])),
        (t.CorrCholeskyTransform(), mk([[-1.0, 0.3, 2.0]])),
        (t.ComposeTransform([t.ExpTransform(), t.AffineTransform(1.0, 2.0)]), mk([-1.0, 0.3, 2.0])),
        (t.ExpTransform().inv, mk([0.5, 0.3, 2.0])),
        (t.IndependentTransform(t.ExpTransform(), 1), mk([[-1.0, 0.3, 2.0]])),
        (t.ReshapeTransform((2, 2), (4,)), mk([[1.0, 2.0], [3.0, 4.0]])),
        (t.CatTransform([t.ExpTransform(), t.identity_transform], 0, [1, 2]), mk([-1.0, 0.3, 2.0])),
        (t.StackTransform([t.ExpTransform(), t.SigmoidTransform()], 0), mk([[-1.0, 0.3], [2.0, 1.0]])),
        (t.identity_transform, mk([-1.0, 0.3, 2.0])),
    ]


def test_transforms_agree_with_torch():
    torch = pytest.importorskip("torch")
    ours = _transforms(tl, _t)
    theirs = _transforms(torch, lambda a: torch.tensor(np.asarray(a, dtype=np.float64)))
    for (t, x), (tt, tx) in zip(ours, theirs):
        y, ty = t(x), tt(tx)
        np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-12, err_msg=repr(t))
        np.testing.assert_allclose(t.inv(y).numpy(), tt.inv(ty).numpy(), rtol=1e-9, atol=1e-12)
        assert t.bijective == tt.bijective
        assert t.domain.event_dim == tt.domain.event_dim
        assert t.codomain.event_dim == tt.codomain.event_dim
        assert tuple(t.forward_shape(x.shape)) == tuple(tt.forward_shape(tx.shape))
        assert tuple(t.inverse_shape(y.shape)) == tuple(tt.inverse_shape(ty.shape))
        if not isinstance(t, (T.AbsTransform, T.SoftmaxTransform, T.LowerCholeskyTransform)):
            np.testing.assert_allclose(t.log_abs_det_jacobian(x, y).numpy(),
                                       tt.log_abs_det_jacobian(tx, ty).numpy(), rtol=1e-10,
                                       atol=1e-12, err_msg=repr(t))
        if t.bijective:
            np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-9, atol=1e-12)


def test_elementwise_log_abs_det_jacobian_is_the_derivative():
    x = _t([-1.2, 0.3, 2.0])
    for t in [T.ExpTransform(), T.SigmoidTransform(), T.TanhTransform(), T.SoftplusTransform(),
              T.AffineTransform(1.0, -3.0), T.ExpTransform().inv.inv,
              T.ComposeTransform([T.TanhTransform(), T.AffineTransform(0.5, 4.0)])]:
        xx = x.clone().requires_grad_()
        t(xx).sum().backward()
        np.testing.assert_allclose(t.log_abs_det_jacobian(x, t(x)).numpy(),
                                   np.log(np.abs(xx.grad.numpy())), rtol=1e-10)


@pytest.mark.parametrize("c", [constraints.real, constraints.positive, constraints.nonnegative,
                               constraints.greater_than(2.0), constraints.less_than(-1.0),
                               constraints.interval(-2.0, 3.0), constraints.unit_interval,
                               constraints.half_open_interval(0.0, 4.0), constraints.simplex,
                               constraints.real_vector, constraints.independent(constraints.positive, 1),
                               constraints.lower_cholesky, constraints.positive_definite,
                               constraints.corr_cholesky])
def test_biject_to_and_transform_to_land_in_the_constraint(c):
    tl.manual_seed(0)
    shape = {2: (3, 3), 1: (4,), 0: (5,)}[c.event_dim]
    if c is constraints.corr_cholesky:
        shape = (3,)
    x = tl.randn((2,) + shape, dtype=tl.float64)
    for registry in (D.transform_to, D.biject_to):
        try:
            t = registry(c)
        except NotImplementedError:
            assert registry is D.biject_to             # transform_to covers all of these
            continue
        y = t(x)
        assert bool(c.check(y).all()), (registry, c, y)
        if registry is D.biject_to and c.event_dim == 0:
            np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-8, atol=1e-10)
    want = {        # the kind of transform PyTorch's registry gives
            "GreaterThan": "ComposeTransform", "GreaterThanEq": "ComposeTransform",
            "LessThan": "ComposeTransform", "Simplex": "SoftmaxTransform",
            "LowerCholesky": "LowerCholeskyTransform", "CorrCholesky": "CorrCholeskyTransform",
            "PositiveDefinite": "PositiveDefiniteTransform",
            "IndependentConstraint": "IndependentTransform"}
    name = type(c).__name__[1:]
    if name in want:
        assert type(D.transform_to(c)).__name__ == want[name]


def test_transformed_distribution_is_a_density_and_caches_its_samples():
    """Change of variables: exp(log_prob) of tanh-then-affine of a Normal integrates to 1; a
    cache_size=1 transform scores its own samples from the cached preimage."""
    d = D.TransformedDistribution(D.Normal(_t(0.3), _t(0.8)),
                                  [T.TanhTransform(), T.AffineTransform(1.0, 2.0)])
    grid = np.linspace(-1 + 1e-9, 3 - 1e-9, 200001)
    density = d.log_prob(_t(grid)).exp().numpy()
    assert abs(np.trapezoid(density, grid) - 1) < 1e-4
    np.testing.assert_allclose(d.cdf(_t([1.0])).numpy(), D.Normal(_t(0.3), _t(0.8)).cdf(_t([0.0])).numpy())
    np.testing.assert_allclose(d.icdf(d.cdf(_t([2.5]))).numpy(), [2.5], rtol=1e-9)
    flipped = D.TransformedDistribution(D.Normal(_t(0.0), _t(1.0)), T.AffineTransform(0.0, -1.0))
    np.testing.assert_allclose(flipped.cdf(_t([0.7])).numpy(),
                               1 - D.Normal(_t(0.0), _t(1.0)).cdf(_t([-0.7])).numpy(), rtol=1e-12)
    cached = D.TransformedDistribution(D.Normal(_t(0.0), _t(3.0)), T.TanhTransform(cache_size=1))
    tl.manual_seed(0)
    y = cached.rsample((1000,))
    x = cached.transforms[0]._cached_x_y[0]
    want = D.Normal(_t(0.0), _t(3.0)).log_prob(x) - cached.transforms[0].log_abs_det_jacobian(x, y)
    np.testing.assert_array_equal(cached.log_prob(y).numpy(), want.numpy())


def test_constraints_check_like_torch():
    torch = pytest.importorskip("torch")
    tc = torch.distributions.constraints
    v = np.array([[0.2, 0.8], [1.0, 0.0], [-1.0, 2.0], [0.5, 0.5]])
    for name, args in [("boolean", ()), ("one_hot", ()), ("simplex", ()), ("real_vector", ()),
                       ("nonnegative_integer", ()), ("positive_integer", ()), ("unit_interval", ()),
                       ("greater_than", (0.1,)), ("less_than", (0.9,)), ("interval", (0.0, 1.0)),
                       ("half_open_interval", (0.0, 1.0)), ("integer_interval", (0, 1)),
                       ("multinomial", (1,)), ("greater_than_eq", (0.0,))]:
        ours, theirs = getattr(constraints, name), getattr(tc, name)
        if args:
            ours, theirs = ours(*args), theirs(*args)
        assert ours.event_dim == theirs.event_dim and ours.is_discrete == theirs.is_discrete
        np.testing.assert_array_equal(ours.check(_t(v)).numpy(), theirs.check(torch.tensor(v)).numpy(),
                                      err_msg=name)
    m = np.array([[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.2], [0.5, 2.0]], [[2.0, 0.5], [0.5, 1.0]]])
    for name in ("lower_triangular", "lower_cholesky", "positive_definite", "symmetric", "square",
                 "positive_semidefinite", "corr_cholesky"):
        np.testing.assert_array_equal(getattr(constraints, name).check(_t(m)).numpy(),
                                      getattr(tc, name).check(torch.tensor(m)).numpy(), err_msg=name)
    assert repr(constraints.independent(constraints.positive, 1)) == \
        repr(tc.independent(tc.positive, 1))
    assert constraints.is_dependent(constraints.dependent) and \
        not constraints.is_dependent(constraints.real)
    with pytest.raises(ValueError, match="dependent"):
        constraints.dependent.check(_t(1.0))
    assert isinstance(D.Uniform.support, constraints._Dependent)


def test_mixture_same_family_sampling_and_cdf():
    mix = D.MixtureSameFamily(D.Categorical(_t([0.25, 0.75])),
                              D.Normal(_t([-3.0, 3.0]), _t([0.5, 0.5])))
    tl.manual_seed(0)
    x = mix.sample((20000,)).numpy()
    assert abs((x > 0).mean() - 0.75) < 6 * math.sqrt(0.75 * 0.25 / 20000)
    np.testing.assert_allclose(mix.cdf(_t([0.0])).numpy(), [0.25], rtol=1e-6)
    assert not mix.has_rsample


def test_categorical_draws_from_one_row_never_pick_impossible_categories():
    """One distribution, many draws: the inverse-CDF path (binary search of uniforms in the
    normalised CDF) gives probability-0 categories an empty interval."""
    tl.manual_seed(0)
    c = D.Categorical(probs=_t([0.0, 0.5, 0.0, 0.5, 0.0]))
    s = c.sample((100000,)).numpy()
    counts = np.bincount(s, minlength=5)
    assert counts[[0, 2, 4]].sum() == 0 and abs(counts[1] / s.size - 0.5) < 6 * 0.5 / math.sqrt(s.size)
    assert s.dtype == np.int64 and c.sample((2, 3)).shape == (2, 3)
    with pytest.raises(RuntimeError):                  # multinomial's error, as in PyTorch
        D.Categorical(probs=_t([0.5, -0.5, 1.0]), validate_args=False).sample((10,))


def test_normal_log_prob_with_and_without_autograd():
    """log_prob works in place on its temporary only when nothing needs a gradient: both paths
    give the same values, and the gradients are the closed forms."""
    loc, scale = _t([0.5, -1.0]).requires_grad_(), _t([2.0, 0.3]).requires_grad_()
    v = _t([[1.0, 0.0], [-2.0, 3.0]])
    lp = D.Normal(loc, scale).log_prob(v)
    with tl.no_grad():
        np.testing.assert_allclose(D.Normal(loc, scale).log_prob(v).numpy(), lp.detach().numpy(),
                                   rtol=1e-15)
    lp.sum().backward()
    z = (v.numpy() - loc.detach().numpy()) / scale.detach().numpy()
    np.testing.assert_allclose(loc.grad.numpy(), (z / scale.detach().numpy()).sum(0), rtol=1e-12)
    np.testing.assert_allclose(scale.grad.numpy(), ((z ** 2 - 1) / scale.detach().numpy()).sum(0),
                               rtol=1e-12)
