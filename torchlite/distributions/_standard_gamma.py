"""Gamma(concentration, 1) draws with a reparameterised gradient (PyTorch's
torch._standard_gamma), which Gamma, Chi2, Beta, Dirichlet and StudentT sample through.

Sampling is Marsaglia and Tsang's method ("A simple method for generating gamma variables",
2000) on whole tensors: for a >= 1, with d = a - 1/3 and c = 1 / sqrt(9d), propose
v = (1 + c z)^3 from a standard normal z and accept d v when
log u < z^2 / 2 + d - d v + d log v (u uniform).  Every round proposes for all the elements
still waiting and keeps the accepted ones; at least 95% are accepted per round, so a bounded
number of rounds suffices.  For a < 1 the draw is boosted: G(a) = G(a + 1) U^(1/a).
All randomness comes from torchlite.randn / torchlite.rand, so manual_seed reproduces it.

The gradient of a draw x in a is the implicit one, dx/da = -(dP(a, x)/da) / p(a, x)
(_incomplete_gamma.standard_gamma_quantile_grad)."""
import torchlite as tl

from ._incomplete_gamma import standard_gamma_quantile_grad

__all__ = ["standard_gamma"]

# Each round leaves at most 5% of the elements waiting: after 64 rounds the chance that any
# of 1e12 elements still waits is below 1e-70.
_MAX_ROUNDS = 64


def _marsaglia_tsang(alpha):
    """Gamma(alpha, 1) draws for a flat tensor of alpha >= 1."""
    d = alpha - 1 / 3
    c = (9 * d).rsqrt()
    out = tl.empty_like(alpha)
    waiting = tl.arange(alpha.shape[0])
    for _ in range(_MAX_ROUNDS):
        if waiting.shape[0] == 0:
            return out
        dw, cw = d[waiting], c[waiting]
        z = tl.randn(waiting.shape[0], dtype=alpha.dtype)
        u = tl.rand(waiting.shape[0], dtype=alpha.dtype)
        v = (1 + cw * z).pow(3)
        positive = v > 0
        log_v = tl.where(positive, v, tl.ones_like(v)).log()
        accept = positive & (u.log() < 0.5 * z * z + dw - dw * v + dw * log_v)
        out[waiting[accept]] = (dw * v)[accept]
        waiting = waiting[~accept]
    if waiting.shape[0]:
        raise RuntimeError("standard_gamma: the rejection sampler did not converge")
    return out


def _sample(alpha):
    """Gamma(alpha, 1) draws, elementwise, for alpha of any shape (no gradient)."""
    flat = alpha.reshape(-1)
    out = tl.full_like(flat, float("nan"))
    ok = flat > 0                                   # NaN and a <= 0 stay NaN
    out[flat <= 0] = 0.0
    if bool(ok.any()):
        a = flat[ok]
        small = a < 1
        boosted = tl.where(small, a + 1, a)
        x = _marsaglia_tsang(boosted)
        if bool(small.any()):
            # G(a) = G(a + 1) U^(1/a), in logs: U^(1/a) underflows for small a
            u = tl.rand(a.shape[0], dtype=a.dtype)
            x = tl.where(small, (x.log() + u.log() / a).exp(), x)
        # draws that underflow (tiny a) stay at the smallest normal number, as PyTorch's do:
        # log_prob and a Dirichlet's normalisation then stay finite
        out[ok] = x.clamp(min=tl.finfo(x.dtype).tiny)
    return out.reshape(alpha.shape)


class _StandardGamma(tl.autograd.Function):
    @staticmethod
    def forward(ctx, alpha):
        x = _sample(alpha)
        ctx.save_for_backward(alpha, x)
        ctx.save_for_forward(alpha, x)
        return x

    @staticmethod
    def jvp(ctx, t):
        """Forward mode: the draw moves with alpha as its quantile does (dx/dalpha t)."""
        alpha, x = ctx.saved_tensors
        return t * standard_gamma_quantile_grad(alpha, x)

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * standard_gamma_quantile_grad(alpha, x)


def standard_gamma(alpha):
    """Gamma(alpha, 1) draws of alpha's shape, differentiable in alpha."""
    return _StandardGamma.apply(alpha)
