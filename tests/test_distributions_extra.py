"""Pareto, Weibull, InverseGamma, Kumaraswamy, FisherSnedecor and NegativeBinomial: log_prob,
mean, variance and entropy against SciPy's (and the closed forms where SciPy lacks the
distribution), samples against those moments, shapes through expand, gradients by finite
differences, and PyTorch's where installed."""
import numpy as np
import pytest

import torchlite as tl

from helpers import torch_or_skip

st = pytest.importorskip("scipy.stats")
D = tl.distributions
F64 = tl.float64


def _t(v):
    return tl.tensor(v, dtype=F64)


# (ours, scipy's frozen distribution, points)
CASES = {
    "Pareto": (lambda: D.Pareto(_t([1.2, 0.5]), _t([2.5, 4.5])),
               lambda: st.pareto([2.5, 4.5], scale=[1.2, 0.5]), [[1.5, 0.7], [3.0, 2.0]]),
    "Weibull": (lambda: D.Weibull(_t([1.3, 2.0]), _t([1.7, 0.8])),
                lambda: st.weibull_min([1.7, 0.8], scale=[1.3, 2.0]), [[0.4, 2.5], [1.9, 0.1]]),
    "InverseGamma": (lambda: D.InverseGamma(_t([3.0, 5.5]), _t([2.0, 1.0])),
                     lambda: st.invgamma([3.0, 5.5], scale=[2.0, 1.0]), [[0.5, 0.3], [2.0, 0.1]]),
    "FisherSnedecor": (lambda: D.FisherSnedecor(_t([5.0, 12.0]), _t([9.0, 30.0])),
                       lambda: st.f([5.0, 12.0], [9.0, 30.0]), [[0.5, 1.2], [2.0, 0.9]]),
    "NegativeBinomial": (lambda: D.NegativeBinomial(_t([4.0, 1.5]), probs=_t([0.3, 0.8])),
                         lambda: st.nbinom([4.0, 1.5], [0.7, 0.2]), [[0.0, 3.0], [7.0, 12.0]]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_scipy(name):
    ours, theirs, points = CASES[name]
    d, ref = ours(), theirs()
    x = np.array(points)
    logp = ref.logpmf(x) if name == "NegativeBinomial" else ref.logpdf(x)
    np.testing.assert_allclose(d.log_prob(_t(x)).numpy(), logp, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(d.mean.numpy(), ref.mean(), rtol=1e-12)
    np.testing.assert_allclose(d.variance.numpy(), ref.var(), rtol=1e-11)
    if name not in ("FisherSnedecor", "NegativeBinomial"):     # PyTorch has no entropy there
        np.testing.assert_allclose(d.entropy().numpy(), ref.entropy(), rtol=1e-10)


@pytest.mark.parametrize("name", sorted(CASES) + ["Kumaraswamy"])
def test_samples_match_the_moments(name):
    tl.manual_seed(0)
    d = CASES[name][0]() if name in CASES else D.Kumaraswamy(_t([2.0, 0.7]), _t([3.0, 1.5]))
    s = d.sample((200_000,))
    assert tuple(s.shape) == (200_000, 2)
    se = (d.variance / 200_000).sqrt().numpy()
    assert np.all(np.abs(s.mean(0).numpy() - d.mean.numpy()) < 6 * se), name
    assert bool(d.support.check(s).all())
    e = d.expand((3, 2))
    assert tuple(e.sample().shape) == (3, 2) and tuple(e.mean.shape) == (3, 2)


def test_kumaraswamy_closed_forms():
    a, b = 2.0, 3.0
    d = D.Kumaraswamy(_t(a), _t(b))
    x = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(d.log_prob(_t(x)).numpy(),
                               np.log(a * b * x ** (a - 1) * (1 - x ** a) ** (b - 1)), rtol=1e-12)
    # E[X^n] = b B(1 + n/a, b)
    from scipy.special import beta as B
    mean = b * B(1 + 1 / a, b)
    np.testing.assert_allclose(d.mean.item(), mean, rtol=1e-12)
    np.testing.assert_allclose(d.variance.item(), b * B(1 + 2 / a, b) - mean ** 2, rtol=1e-11)
    grid = np.linspace(1e-6, 1 - 1e-6, 200001)
    dens = a * b * grid ** (a - 1) * (1 - grid ** a) ** (b - 1)
    h = -np.trapezoid(dens * np.log(dens), grid)
    np.testing.assert_allclose(d.entropy().item(), h, rtol=1e-5)
    np.testing.assert_allclose(d.mode.item(), ((a - 1) / (a * b - 1)) ** (1 / a), rtol=1e-12)


@pytest.mark.parametrize("make", [
    lambda p: D.Pareto(p, p + 1.5),
    lambda p: D.Weibull(p, p + 0.5),
    lambda p: D.InverseGamma(p + 1.0, p),
    lambda p: D.Kumaraswamy(p + 0.5, p + 1.0),
    lambda p: D.FisherSnedecor(p + 3.0, p + 5.0),
])
def test_log_prob_gradcheck_and_rsample_gradients(make):
    p = tl.tensor([0.7, 1.3], dtype=F64, requires_grad=True)
    d = make(p.detach())
    x = d.sample((3,)).clamp(max=0.95 if isinstance(d, D.Kumaraswamy) else 1e9)
    assert tl.autograd.gradcheck(lambda p: make(p).log_prob(x), (p,))
    if make(p).has_rsample:
        tl.manual_seed(1)
        make(p).rsample((5,)).sum().backward()
        assert p.grad is not None and np.all(np.isfinite(p.grad.numpy()))


def test_negative_binomial_logits_and_zero_count():
    d = D.NegativeBinomial(_t([0.0, 2.0]), logits=_t([0.3, -1.0]))
    lp = d.log_prob(_t([0.0, 1.0])).numpy()
    assert lp[0] == 0.0                                   # nothing to count: certain
    np.testing.assert_allclose(lp[1], st.nbinom(2.0, 1 - 1 / (1 + np.exp(1.0))).logpmf(1),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.NegativeBinomial(2.0)


def test_matches_torch():
    torch = torch_or_skip()
    x = torch.tensor([[1.5, 2.5], [3.0, 1.1]], dtype=torch.float64)
    pairs = [(D.Pareto(_t([1.0, 0.5]), _t([2.0, 3.0])),
              torch.distributions.Pareto(torch.tensor([1.0, 0.5]).double(), torch.tensor([2.0, 3.0]).double())),
             (D.Weibull(_t([1.0, 0.5]), _t([2.0, 3.0])),
              torch.distributions.Weibull(torch.tensor([1.0, 0.5]).double(), torch.tensor([2.0, 3.0]).double())),
             (D.FisherSnedecor(_t([4.0, 6.0]), _t([7.0, 9.0])),
              torch.distributions.FisherSnedecor(torch.tensor([4.0, 6.0]).double(), torch.tensor([7.0, 9.0]).double()))]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.log_prob(_t(x.numpy())).numpy(), theirs.log_prob(x).numpy(),
                                   rtol=1e-12)
        np.testing.assert_allclose(ours.mean.numpy(), theirs.mean.numpy(), rtol=1e-12)


def test_von_mises():
    d = D.VonMises(_t([0.5, -1.0]), _t([2.0, 0.3]))
    x = np.array([[0.1, 2.0], [-3.0, 0.4]])
    np.testing.assert_allclose(d.log_prob(_t(x)).numpy(),
                               st.vonmises([2.0, 0.3], loc=[0.5, -1.0]).logpdf(x), rtol=1e-12)
    tl.manual_seed(0)
    s = d.sample((200_000,)).numpy()
    assert s.min() >= -np.pi and s.max() < np.pi
    z = np.exp(1j * s).mean(0)                      # circular mean and variance of the draws
    np.testing.assert_allclose(np.angle(z), [0.5, -1.0], atol=0.02)
    np.testing.assert_allclose(1 - np.abs(z), d.variance.numpy(), atol=0.01)
    from scipy.special import i0, i1
    np.testing.assert_allclose(d.variance.numpy(), 1 - i1([2.0, 0.3]) / i0([2.0, 0.3]), rtol=1e-12)
    assert tuple(d.expand((3, 2)).sample().shape) == (3, 2)
    tiny = D.VonMises(_t(0.0), _t(1e-7)).sample((1000,))        # near-uniform: no hang
    assert tiny.abs().max().item() < np.pi + 1e-12


def test_generalized_pareto():
    g = D.GeneralizedPareto(_t([0.0, 1.0, 0.5]), _t([1.0, 2.0, 1.5]), _t([0.3, -0.2, 0.0]))
    ref = st.genpareto([0.3, -0.2, 0.0], loc=[0.0, 1.0, 0.5], scale=[1.0, 2.0, 1.5])
    x = np.array([[0.5, 1.5, 0.7], [2.0, 3.0, 4.0]])
    np.testing.assert_allclose(g.log_prob(_t(x)).numpy(), ref.logpdf(x), rtol=1e-12)
    np.testing.assert_allclose(g.cdf(_t(x)).numpy(), ref.cdf(x), rtol=1e-12)
    np.testing.assert_allclose(g.icdf(_t([0.1, 0.5, 0.9])).numpy(), ref.ppf([0.1, 0.5, 0.9]),
                               rtol=1e-12)
    np.testing.assert_allclose(g.mean.numpy(), ref.mean(), rtol=1e-12)
    np.testing.assert_allclose(g.variance.numpy(), ref.var(), rtol=1e-12)
    np.testing.assert_allclose(g.entropy().numpy(), ref.entropy(), rtol=1e-12)
    p = tl.tensor([1.0, 2.0, 1.5], dtype=F64, requires_grad=True)
    tl.manual_seed(2)
    D.GeneralizedPareto(_t([0.0, 1.0, 0.5]), p, _t([0.3, -0.2, 0.0])).rsample((4,)).sum().backward()
    assert np.all(np.isfinite(p.grad.numpy()))
    assert bool(g.support.check(g.sample((1000,))).all())


def test_logistic_normal():
    ln = D.LogisticNormal(_t([0.1, -0.3]), _t([0.5, 1.0]))
    v = ln.sample((5,))
    assert tuple(v.shape) == (5, 3)
    np.testing.assert_allclose(v.sum(-1).numpy(), 1.0, rtol=1e-12)
    # its density over the first two coordinates integrates to 1 over the simplex
    h = 1 / 600
    g1, g2 = np.meshgrid(np.arange(h / 2, 1, h), np.arange(h / 2, 1, h), indexing="ij")
    inside = g1 + g2 < 1 - h / 2
    pts = np.stack([g1[inside], g2[inside], 1 - g1[inside] - g2[inside]], -1)
    total = ln.log_prob(_t(pts)).exp().sum().item() * h * h
    np.testing.assert_allclose(total, 1.0, atol=2e-3)
    assert ln.loc.tolist() == [0.1, -0.3]


@pytest.mark.parametrize("lam", [0.05, 0.3, 0.4995, 0.5, 0.72, 0.97])
def test_continuous_bernoulli_against_numerical_integrals(lam):
    d = D.ContinuousBernoulli(_t([lam]))
    x = np.linspace(0, 1, 200001)
    dens = np.exp(d.log_prob(_t(x[:, None])).numpy()[:, 0])
    integral = np.trapezoid                         # numpy >= 2
    np.testing.assert_allclose(integral(dens, x), 1.0, rtol=1e-9)
    mean = integral(x * dens, x)
    np.testing.assert_allclose(d.mean.item(), mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(d.variance.item(), integral((x - mean) ** 2 * dens, x), rtol=1e-6)
    np.testing.assert_allclose(d.entropy().item(), -integral(dens * np.log(dens), x), atol=1e-8)
    # the Bregman form of the exponential-family base gives the same entropy
    np.testing.assert_allclose(D.ExponentialFamily.entropy(d).item(), d.entropy().item(),
                               atol=1e-10)
    u = np.array([0.1, 0.5, 0.9])
    q = d.icdf(_t(u[:, None])).numpy()[:, 0]
    np.testing.assert_allclose(d.cdf(_t(q[:, None])).numpy()[:, 0], u, rtol=1e-9)


def test_continuous_bernoulli_kl_sampling_and_logits():
    p = D.ContinuousBernoulli(_t([0.3]))
    q = D.ContinuousBernoulli(logits=_t([1.2]))
    x = np.linspace(0, 1, 200001)
    lp = p.log_prob(_t(x[:, None])).numpy()[:, 0]
    lq = q.log_prob(_t(x[:, None])).numpy()[:, 0]
    np.testing.assert_allclose(D.kl_divergence(p, q).item(),
                               np.trapezoid(np.exp(lp) * (lp - lq), x), rtol=1e-7)
    tl.manual_seed(3)
    s = p.rsample((200_000,))
    assert bool(((s >= 0) & (s <= 1)).all())
    np.testing.assert_allclose(s.mean().item(), p.mean.item(), atol=4e-3)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        from torchlite.distributions.kl import _kl_expfamily_expfamily
        _kl_expfamily_expfamily(p, D.Beta(_t([1.0]), _t([1.0])))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.ContinuousBernoulli()


@pytest.mark.parametrize("eta", [0.5, 1.0, 3.0])
def test_lkj_cholesky_dim2_against_the_correlation_density(eta):
    d = D.LKJCholesky(2, _t(eta))
    # for dim 2, L = [[1, 0], [r, sqrt(1 - r^2)]] and the density over r is (1 - r^2)^(eta - 1)
    # / (2^(2 eta - 1) B(eta, eta)); integrate in r = sin(t) to tame the ends when eta < 1
    t = np.linspace(-np.pi / 2, np.pi / 2, 200001)[1:-1]
    r = np.sin(t)
    L = np.zeros((r.size, 2, 2))
    L[:, 0, 0], L[:, 1, 0], L[:, 1, 1] = 1.0, r, np.sqrt(1 - r ** 2)
    dens = np.exp(d.log_prob(_t(L)).numpy())
    np.testing.assert_allclose(np.trapezoid(dens * np.cos(t), t), 1.0, rtol=1e-4)
    tl.manual_seed(0)
    s = d.sample((200_000,))
    np.testing.assert_allclose(s[:, 1, 0].numpy().var(), 1 / (2 * eta + 1), rtol=0.02)


def test_lkj_cholesky_samples_are_correlation_factors():
    d = D.LKJCholesky(4, _t([0.7, 2.0]))
    tl.manual_seed(1)
    s = d.sample((50,))
    assert tuple(s.shape) == (50, 2, 4, 4)
    assert bool(D.constraints.corr_cholesky.check(s).all())
    C = (s @ s.mT).numpy()
    np.testing.assert_allclose(np.diagonal(C, axis1=-2, axis2=-1), 1.0, rtol=1e-12)
    assert tuple(d.log_prob(s).shape) == (50, 2) and tuple(d.expand((3, 2)).sample().shape) == (3, 2, 4, 4)
    with pytest.raises(ValueError, match="dim to be an integer greater than or equal to 2"):
        D.LKJCholesky(1)
    torch = pytest.importorskip("torch")
    t = torch.distributions.LKJCholesky(4, torch.tensor([0.7, 2.0], dtype=torch.float64))
    np.testing.assert_allclose(d.log_prob(s).numpy(), t.log_prob(torch.tensor(s.numpy())).numpy(),
                               rtol=1e-12)


S3 = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]])


@pytest.mark.parametrize("form", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_against_scipy(form):
    matrix = {"covariance_matrix": S3, "precision_matrix": np.linalg.inv(S3),
              "scale_tril": np.linalg.cholesky(S3)}[form]
    d = D.Wishart(_t(5.5), **{form: _t(matrix)})
    ref = st.wishart(df=5.5, scale=S3)
    tl.manual_seed(0)
    X = d.rsample((4,))
    np.testing.assert_allclose(d.log_prob(X).numpy(), ref.logpdf(np.moveaxis(X.numpy(), 0, -1)),
                               rtol=1e-12)
    np.testing.assert_allclose(d.mean.numpy(), ref.mean(), rtol=1e-12)
    np.testing.assert_allclose(d.variance.numpy(), ref.var(), rtol=1e-12)
    np.testing.assert_allclose(d.entropy().item(), ref.entropy(), rtol=1e-11)
    np.testing.assert_allclose(d.mode.numpy(), (5.5 - 4) * S3, rtol=1e-12)


def test_wishart_samples_batches_and_gradients():
    d = D.Wishart(_t(5.5), covariance_matrix=_t(S3))
    tl.manual_seed(1)
    s = d.sample((100_000,)).numpy()
    np.testing.assert_allclose(s.mean(0), 5.5 * S3, atol=0.05)
    assert np.all(np.linalg.eigvalsh(s[:100]) > 0)
    b = D.Wishart(_t([4.0, 6.0]), scale_tril=_t(np.linalg.cholesky(S3)))
    assert tuple(b.sample((2,)).shape) == (2, 2, 3, 3) and tuple(b.expand((5, 2)).mean.shape) == (5, 2, 3, 3)
    df = tl.tensor(5.0, dtype=F64, requires_grad=True)
    D.Wishart(df, covariance_matrix=_t(S3)).rsample((3,)).sum().backward()
    assert np.isfinite(df.grad.item())
    X = d.sample((2,))
    L = tl.tensor(np.linalg.cholesky(S3), requires_grad=True)
    assert tl.autograd.gradcheck(lambda L: D.Wishart(_t(5.5), scale_tril=L.tril()).log_prob(X), (L,))
    with pytest.raises(ValueError, match="Exactly one of"):
        D.Wishart(_t(5.0))


def test_exponential_families_bregman_forms_match_the_closed_ones():
    """Normal, Bernoulli, Exponential, Gamma, Beta, Dirichlet and Poisson are ExponentialFamily
    members, as in PyTorch: the entropy and KL that the base computes from the natural
    parameters and log-normaliser (through autograd) equal each one's closed forms."""
    from torchlite.distributions.kl import _kl_expfamily_expfamily as bregman_kl
    pairs = [(D.Normal(_t([0.3, -1.0]), _t([1.2, 0.5])), D.Normal(_t([0.0, 1.0]), _t([0.7, 2.0]))),
             (D.Bernoulli(probs=_t([0.3, 0.8])), D.Bernoulli(probs=_t([0.6, 0.1]))),
             (D.Exponential(_t([1.5, 0.3])), D.Exponential(_t([0.7, 2.0]))),
             (D.Gamma(_t([2.0, 0.7]), _t([1.5, 3.0])), D.Gamma(_t([1.0, 2.5]), _t([0.5, 1.0]))),
             (D.Beta(_t([2.0, 0.7]), _t([1.5, 3.0])), D.Beta(_t([1.0, 2.5]), _t([0.5, 1.0]))),
             (D.Dirichlet(_t([[2.0, 0.7, 1.1]])), D.Dirichlet(_t([[1.0, 2.5, 0.4]]))),
             (D.Poisson(_t([2.0, 0.7])), D.Poisson(_t([1.0, 2.5])))]
    for p, q in pairs:
        assert isinstance(p, D.ExponentialFamily)
        if not isinstance(p, D.Poisson):             # h = 1/x! has no closed E[log h]
            np.testing.assert_allclose(D.ExponentialFamily.entropy(p).detach().numpy(),
                                       p.entropy().numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(bregman_kl(p, q).detach().numpy(),
                                   D.kl_divergence(p, q).numpy(), rtol=1e-12, atol=1e-14)
    assert not isinstance(D.Cauchy(0.0, 1.0), D.ExponentialFamily)
