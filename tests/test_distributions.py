"""torchlite.distributions: log_prob, entropy, moments, cdf and KL against closed forms
(NumPy) and PyTorch where installed; samples' moments; reparameterised gradients; PyTorch's
validation errors."""
import math

import numpy as np
import pytest

import torchlite as tl
from torchlite.distributions import (Bernoulli, Categorical, Normal, Uniform, constraints,
                                     kl_divergence, register_kl, Distribution)
import torchlite.distributions as D

LOC, SCALE = np.array([0.0, 1.5, -2.0]), np.array([1.0, 0.5, 3.0])
VALUE = np.array([0.3, 1.0, -7.0])
PROBS = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])


def _t(a, **kw):
    return tl.tensor(a, dtype=tl.float64, **kw)


def test_normal_closed_forms():
    n = Normal(_t(LOC), _t(SCALE))
    want = -((VALUE - LOC) ** 2) / (2 * SCALE ** 2) - np.log(SCALE) - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(n.log_prob(_t(VALUE)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(n.entropy().numpy(), 0.5 + 0.5 * np.log(2 * np.pi) + np.log(SCALE))
    np.testing.assert_allclose(n.cdf(_t(LOC)).numpy(), 0.5)
    np.testing.assert_allclose(n.icdf(n.cdf(_t(VALUE))).numpy(), VALUE, rtol=1e-9)
    assert n.batch_shape == (3,) and n.event_shape == () and n.has_rsample
    np.testing.assert_allclose(n.variance.numpy(), SCALE ** 2)


def test_sampling_is_seeded_and_has_the_right_moments():
    n = Normal(_t(LOC), _t(SCALE))
    tl.manual_seed(0)
    a = n.sample((20000,))
    tl.manual_seed(0)
    assert tl.equal(a, n.sample((20000,)))
    assert a.shape == (20000, 3)
    np.testing.assert_allclose(a.numpy().mean(0), LOC, atol=0.1)
    np.testing.assert_allclose(a.numpy().std(0), SCALE, rtol=0.05)
    c = Categorical(probs=_t(PROBS))
    s = c.sample((30000,))
    assert s.shape == (30000, 2) and s.dtype is tl.int64
    freq = np.stack([np.bincount(s.numpy()[:, i], minlength=3) / 30000 for i in range(2)])
    np.testing.assert_allclose(freq, PROBS, atol=0.02)
    b = Bernoulli(probs=_t([0.2, 0.9]))
    np.testing.assert_allclose(b.sample((20000,)).numpy().mean(0), [0.2, 0.9], atol=0.02)
    u = Uniform(_t([0.0, 2.0]), _t([1.0, 5.0]))
    us = u.sample((20000,)).numpy()
    assert (us[:, 0] >= 0).all() and (us[:, 1] < 5).all()
    np.testing.assert_allclose(us.mean(0), [0.5, 3.5], atol=0.05)


def test_rsample_is_differentiable():
    loc = _t(LOC, requires_grad=True)
    scale = _t(SCALE, requires_grad=True)
    tl.manual_seed(1)
    x = Normal(loc, scale).rsample((5,))
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), np.full(3, 5.0))
    eps = (x.detach().numpy() - LOC) / SCALE
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0), rtol=1e-10)


def test_categorical_and_bernoulli():
    c = Categorical(logits=_t(np.log(PROBS)))
    np.testing.assert_allclose(c.probs.numpy(), PROBS, rtol=1e-12)
    np.testing.assert_allclose(c.log_prob(tl.tensor([2, 0])).numpy(), np.log([0.5, 0.6]))
    np.testing.assert_allclose(c.entropy().numpy(), -(PROBS * np.log(PROBS)).sum(1))
    assert c.enumerate_support().shape == (3, 2)
    b = Bernoulli(logits=_t([0.0, 2.0]))
    p = 1 / (1 + np.exp(-np.array([0.0, 2.0])))
    np.testing.assert_allclose(b.log_prob(_t([1.0, 0.0])).numpy(), np.log([p[0], 1 - p[1]]))
    np.testing.assert_allclose(b.entropy().numpy(), -(p * np.log(p) + (1 - p) * np.log(1 - p)))


def test_kl_divergence_and_the_registry():
    p, q = Normal(_t(LOC), _t(SCALE)), Normal(_t([0.5, 0.5, 0.5]), _t([2.0, 2.0, 2.0]))
    want = np.log(2.0 / SCALE) + (SCALE ** 2 + (LOC - 0.5) ** 2) / (2 * 4.0) - 0.5
    np.testing.assert_allclose(kl_divergence(p, q).numpy(), want, rtol=1e-12)
    cp, cq = Categorical(probs=_t(PROBS)), Categorical(probs=_t(PROBS[::-1].copy()))
    np.testing.assert_allclose(kl_divergence(cp, cq).numpy(),
                               (PROBS * np.log(PROBS / PROBS[::-1])).sum(1), rtol=1e-12)
    assert math.isinf(kl_divergence(Uniform(0.0, 2.0), Uniform(0.5, 1.0)).item())

    class Point(Distribution):
        pass
    with pytest.raises(NotImplementedError, match="Point"):
        kl_divergence(Point(), p)
    register_kl(Point, Normal)(lambda a, b: tl.tensor(7.0))
    assert kl_divergence(Point(), p).item() == 7.0


def test_validation_errors():
    with pytest.raises(ValueError, match="scale .*constraint GreaterThan"):
        Normal(0.0, -1.0)
    Normal(0.0, -1.0, validate_args=False)
    with pytest.raises(ValueError, match="support"):
        Bernoulli(probs=_t([0.5])).log_prob(_t([0.5]))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        Categorical()
    with pytest.raises(ValueError, match="low .*constraint LessThan"):
        Uniform(1.0, 1.0)
    assert bool(constraints.simplex.check(_t(PROBS)).all())


def test_against_torch():
    torch = pytest.importorskip("torch")
    td = torch.distributions
    pairs = [
        (Normal(_t(LOC), _t(SCALE)), td.Normal(torch.tensor(LOC), torch.tensor(SCALE)), VALUE),
        (Categorical(probs=_t(PROBS)), td.Categorical(probs=torch.tensor(PROBS)),
         np.array([1, 2])),
        (Bernoulli(probs=_t([0.3, 0.8])), td.Bernoulli(probs=torch.tensor([0.3, 0.8],
                                                                          dtype=torch.float64)),
         np.array([1.0, 0.0])),
        (Uniform(_t([0.0, 1.0]), _t([2.0, 4.0])),
         td.Uniform(torch.tensor([0.0, 1.0], dtype=torch.float64),
                    torch.tensor([2.0, 4.0], dtype=torch.float64)), np.array([0.5, 3.0])),
    ]
    for ours, theirs, v in pairs:
        ov = tl.tensor(v) if v.dtype.kind == "i" else _t(v)
        np.testing.assert_allclose(ours.log_prob(ov).numpy(),
                                   theirs.log_prob(torch.tensor(v)).numpy(), rtol=1e-10)
        np.testing.assert_allclose(ours.entropy().numpy(), theirs.entropy().numpy(), rtol=1e-10)
        assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)


def test_more_families_against_torch_and_their_samples():
    from torchlite.distributions import Exponential, Laplace, LogNormal, Poisson
    rate = np.array([0.5, 2.0])
    loc, scale = np.array([0.0, 1.0]), np.array([1.0, 0.5])
    fams = [(Exponential(_t(rate)), "Exponential", (rate,), np.array([0.3, 2.0])),
            (Laplace(_t(loc), _t(scale)), "Laplace", (loc, scale), np.array([-1.0, 2.0])),
            (LogNormal(_t(loc), _t(scale)), "LogNormal", (loc, scale), np.array([0.5, 3.0])),
            (Poisson(_t(rate)), "Poisson", (rate,), np.array([0.0, 3.0]))]
    tl.manual_seed(4)
    for d, name, params, v in fams:
        s = d.sample((40000,)).numpy()
        np.testing.assert_allclose(s.mean(0), d.mean.numpy(), rtol=0.06, atol=0.03)
        np.testing.assert_allclose(s.var(0), d.variance.numpy(), rtol=0.12, atol=0.03)
    np.testing.assert_allclose(Exponential(_t(rate)).log_prob(_t([1.0, 1.0])).numpy(),
                               np.log(rate) - rate)
    np.testing.assert_allclose(kl_divergence(Exponential(_t([1.0])), Exponential(_t([2.0])))
                               .numpy(), [2 - 1 - np.log(2)], rtol=1e-12)
    torch = pytest.importorskip("torch")
    td = torch.distributions
    for d, name, params, v in fams:
        theirs = getattr(td, name)(*[torch.tensor(p) for p in params])
        np.testing.assert_allclose(d.log_prob(_t(v)).numpy(),
                                   theirs.log_prob(torch.tensor(v)).numpy(), rtol=1e-10)
        if name != "Poisson":
            np.testing.assert_allclose(d.entropy().numpy(), theirs.entropy().numpy(), rtol=1e-10)
        np.testing.assert_allclose(d.mean.numpy(), theirs.mean.numpy(), rtol=1e-10)
        np.testing.assert_allclose(d.variance.numpy(), theirs.variance.numpy(), rtol=1e-10)


# ---- MultivariateNormal -------------------------------------------------------------------------
def _spd(g, n, batch=()):
    A = g.standard_normal(batch + (n, n))
    return A @ np.swapaxes(A, -1, -2) + 2 * np.eye(n)


@pytest.mark.parametrize("form", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal_against_scipy(form):
    stats = pytest.importorskip("scipy.stats")
    g = np.random.default_rng(0)
    S, mu = _spd(g, 3), g.standard_normal(3)
    mat = {"covariance_matrix": S, "precision_matrix": np.linalg.inv(S),
           "scale_tril": np.linalg.cholesky(S)}[form]
    d = D.MultivariateNormal(tl.tensor(mu), **{form: tl.tensor(mat)})
    x = g.standard_normal((4, 3))
    ref = stats.multivariate_normal(mu, S)
    np.testing.assert_allclose(d.log_prob(tl.tensor(x)).numpy(), ref.logpdf(x), rtol=1e-10)
    np.testing.assert_allclose(float(d.entropy()), ref.entropy(), rtol=1e-10)
    np.testing.assert_allclose(d.covariance_matrix.numpy(), S, rtol=1e-10)
    np.testing.assert_allclose(d.precision_matrix.numpy(), np.linalg.inv(S), rtol=1e-8)
    np.testing.assert_allclose(d.variance.numpy(), np.diag(S), rtol=1e-10)
    assert d.batch_shape == () and d.event_shape == (3,)


def test_multivariate_normal_batches_samples_and_gradients():
    g = np.random.default_rng(1)
    S = _spd(g, 2, (4,))
    mu = g.standard_normal(2)
    d = D.MultivariateNormal(tl.tensor(mu), tl.tensor(S))
    assert d.batch_shape == (4,) and d.sample((5,)).shape == (5, 4, 2)
    assert d.log_prob(tl.tensor(g.standard_normal((5, 4, 2)))).shape == (5, 4)
    tl.manual_seed(0)
    big = D.MultivariateNormal(tl.tensor(mu), tl.tensor(S[0])).sample((40000,)).numpy()
    np.testing.assert_allclose(big.mean(0), mu, atol=0.05)
    np.testing.assert_allclose(np.cov(big.T), S[0], atol=0.15 * np.abs(S[0]).max())
    loc = tl.tensor(mu, requires_grad=True)
    L = tl.tensor(np.linalg.cholesky(S[0]), requires_grad=True)
    D.MultivariateNormal(loc, scale_tril=L).rsample((3,)).sum().backward()
    assert loc.grad is not None and L.grad is not None
    with pytest.raises(ValueError, match="Exactly one"):
        D.MultivariateNormal(tl.zeros(2))
    with pytest.raises(ValueError, match="Exactly one"):
        D.MultivariateNormal(tl.zeros(2), tl.eye(2), scale_tril=tl.eye(2))
    with pytest.raises(ValueError):
        D.MultivariateNormal(tl.zeros(2), tl.tensor([[1.0, 2.0], [2.0, 1.0]]), validate_args=True)


def test_multivariate_normal_kl_against_closed_form():
    g = np.random.default_rng(2)
    S1, S2 = _spd(g, 3), _spd(g, 3)
    m1, m2 = g.standard_normal(3), g.standard_normal(3)
    kl = D.kl_divergence(D.MultivariateNormal(tl.tensor(m1), tl.tensor(S1)),
                         D.MultivariateNormal(tl.tensor(m2), tl.tensor(S2)))
    inv2 = np.linalg.inv(S2)
    want = 0.5 * (np.trace(inv2 @ S1) + (m2 - m1) @ inv2 @ (m2 - m1) - 3
                  + np.log(np.linalg.det(S2) / np.linalg.det(S1)))
    np.testing.assert_allclose(float(kl), want, rtol=1e-10)
