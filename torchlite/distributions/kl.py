"""kl_divergence(p, q) and the registry behind it (PyTorch's torch.distributions.kl)."""
import torchlite as tl

from .bernoulli import Bernoulli
from .categorical import Categorical
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .simple import Exponential
from .uniform import Uniform

__all__ = ["kl_divergence", "register_kl"]

_KL = {}


def register_kl(type_p, type_q):
    """Decorator: fn(p, q) computes KL(p || q) for these two distribution types."""
    def deco(fn):
        _KL[(type_p, type_q)] = fn
        return fn
    return deco


def kl_divergence(p, q):
    """KL(p || q), by the most specific registered rule for (type(p), type(q))."""
    for tp in type(p).__mro__:
        for tq in type(q).__mro__:
            fn = _KL.get((tp, tq))
            if fn is not None:
                return fn(p, q)
    raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} "
                              f"and q type {type(q).__name__}")


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = tl.where(q.probs == 0, tl.full_like(t, float("inf")), t)
    t = tl.where(p.probs == 0, tl.zeros_like(t), t)
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    sp = tl.nn.functional.softplus
    t1 = p.probs * (sp(-q.logits) - sp(-p.logits))
    t1 = tl.where(q.probs == 0, tl.full_like(t1, float("inf")), t1)
    t1 = tl.where(p.probs == 0, tl.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (sp(q.logits) - sp(p.logits))
    t2 = tl.where(q.probs == 1, tl.full_like(t2, float("inf")), t2)
    t2 = tl.where(p.probs == 1, tl.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return tl.where(outside, tl.full_like(result, float("inf")), result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    """0.5 (tr(Sq^-1 Sp) + (mq - mp)^T Sq^-1 (mq - mp) - n + log det Sq - log det Sp), with
    triangular solves on the Cholesky factors."""
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event "
                         "shapes cannot be computed")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    shape = tl.broadcast_shapes(tuple(Lp.shape[:-2]), tuple(Lq.shape[:-2]), tuple(p.loc.shape[:-1]),
                                tuple(q.loc.shape[:-1]))
    n = p.event_shape[0]
    Lp, Lq = Lp.expand(*shape, n, n), Lq.expand(*shape, n, n)
    half_logdet = (Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                   - Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    A = tl.linalg.solve_triangular(Lq, Lp, upper=False)
    trace = (A * A).sum((-2, -1))
    diff = (q.loc - p.loc).expand(*shape, n)
    y = tl.linalg.solve_triangular(Lq, diff.unsqueeze(-1), upper=False).squeeze(-1)
    return half_logdet + 0.5 * (trace + (y * y).sum(-1) - n)
