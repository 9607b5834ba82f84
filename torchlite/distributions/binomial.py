"""Binomial(total_count=1, probs or logits) (PyTorch's torch.distributions.Binomial): the
number of successes in total_count independent trials.

Sampling (PyTorch's torch.binomial) is exact and vectorised, by the smaller of p and 1 - p
(q below; the count is flipped back for p > 1/2):
- n q < 10: inversion, walking up the probabilities P(k) = P(k-1) (n-k+1)/k q/(1-q) until the
  uniform is used up (about n q + 1 steps);
- n q >= 10: Hormann's BTRS ("The generation of binomial random variates", 1993), transformed
  rejection with a squeeze, accepting by the exact log-probability ratio (about 1.15
  proposals per draw).
Each loop works on the elements still waiting only; all randomness is torchlite.rand."""
import torchlite as tl

from . import constraints
from .distribution import Distribution
from .utils import BinaryLogitsProbs

__all__ = ["Binomial", "binomial"]

_INVERSION_BELOW = 10.0    # n q under which inversion is cheaper than BTRS
_MAX_ROUNDS = 200          # BTRS accepts >= 85% per round; inversion steps <= ~n q + 60


def _inversion(n, q, generator=None):
    """Binomial(n, q) draws for flat float64 n, q with n q < 10."""
    s = q / (1 - q)
    a = (n + 1) * s
    r = (n * (-q).log1p()).exp()                    # P(0) = (1 - q)^n
    u = tl.rand(n.shape[0], dtype=n.dtype, generator=generator)
    k = tl.zeros_like(n)
    out = tl.empty_like(n)
    index = tl.arange(n.shape[0])
    for _ in range(_MAX_ROUNDS):
        done = (u <= r) | (k >= n)
        out[index[done]] = k[done]
        keep = ~done
        if not bool(keep.any()):
            return out
        index, u, r, k, n, a, s = (t[keep] for t in (index, u - r, r, k, n, a, s))
        k = k + 1
        r = r * (a / k - s)                         # P(k) from P(k - 1)
    out[index] = k                                  # the tail beyond ~n q + 60: never reached
    return out


def _btrs(n, q, generator=None):
    """Binomial(n, q) draws for flat float64 n, q with n q >= 10 and q <= 1/2."""
    spq = (n * q * (1 - q)).sqrt()
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * q
    c = n * q + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = (q / (1 - q)).log()
    m = ((n + 1) * q).floor()
    h = (m + 1).lgamma() + (n - m + 1).lgamma()
    out = tl.empty_like(n)
    index = tl.arange(n.shape[0])
    params = [n, a, b, c, v_r, alpha, lpq, m, h]
    for _ in range(_MAX_ROUNDS):
        n, a, b, c, v_r, alpha, lpq, m, h = params
        u = tl.rand(n.shape[0], dtype=n.dtype, generator=generator) - 0.5
        v = tl.rand(n.shape[0], dtype=n.dtype, generator=generator)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + c).floor()
        inside = (k >= 0) & (k <= n)
        squeeze = inside & (us >= 0.07) & (v <= v_r)
        kk = k.clamp(min=0).minimum(n)              # keeps lgamma finite where k is outside
        log_v = (v * alpha / (a / (us * us) + b)).log()
        exact = inside & (log_v <= h - (kk + 1).lgamma() - (n - kk + 1).lgamma() + (kk - m) * lpq)
        accept = squeeze | exact
        out[index[accept]] = k[accept]
        keep = ~accept
        if not bool(keep.any()):
            return out
        index = index[keep]
        params = [t[keep] for t in params]
    raise RuntimeError("binomial: the rejection sampler did not converge")


def _sample_binomial(total_count, probs, generator=None):
    """Binomial draws elementwise (any shape, same shape for both), in probs' dtype."""
    n = total_count.reshape(-1).to(tl.float64)
    p = probs.reshape(-1).to(tl.float64)
    flip = p > 0.5
    q = tl.where(flip, 1 - p, p)
    out = tl.full_like(p, float("nan"))
    valid = (q >= 0) & (n >= 0)                     # NaN fails
    trivial = valid & ((q == 0) | (n == 0))
    out[trivial] = 0.0
    small = valid & ~trivial & (n * q < _INVERSION_BELOW)
    large = valid & ~trivial & ~small
    if bool(small.any()):
        out[small] = _inversion(n[small], q[small], generator)
    if bool(large.any()):
        out[large] = _btrs(n[large], q[large], generator)
    out = tl.where(flip, n - out, out)
    return out.reshape(probs.shape).to(probs.dtype)


def _clamp_by_zero(x):
    """max(x, 0) with gradient 1/2 at 0 (PyTorch's, for the log-normaliser's kink)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(BinaryLogitsProbs, Distribution):
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        super().__init__(self._set_probs_or_logits(probs, logits, total_count),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_param(Binomial, batch_shape, _instance, "total_count")

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().minimum(self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with tl.no_grad():
            return _sample_binomial(self.total_count.expand(shape).contiguous(),
                                    self.probs.expand(shape).contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = (self.total_count + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (self.total_count - value + 1).lgamma()
        # n log(1 + e^logit), written to stay finite for large |logit|
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * (-self.logits.abs()).exp().log1p()
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def _homogeneous_count(self, what):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total_count

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = self._homogeneous_count("enumerate_support")
        values = tl.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


def binomial(count, prob, generator=None):
    """torch.binomial: one Binomial(count, prob) draw per element (count and prob broadcast;
    the result has prob's dtype), by the samplers above.  Like PyTorch's, it stays in the
    graph of inputs that require grad, with a node whose backward raises."""
    from ..autograd.graph import needs_grad, record_not_differentiable
    c, p = tl.broadcast_tensors(count, prob)
    with tl.no_grad():
        out = _sample_binomial(c.contiguous(), p.contiguous(), generator)
    if needs_grad(count, prob):
        record_not_differentiable("binomial", (count, prob), out, name="NotImplemented")
    return out
