"""The regularized lower incomplete gamma function P(a, x) (PyTorch's torch.special.gammainc,
which Gamma.cdf is) and the derivative of a Gamma(a, 1) quantile in its shape a, which is
the reparameterised gradient of a Gamma sample (Figurnov et al., "Implicit
reparameterization gradients", 2018):

    x = F^-1(u; a)  =>  dx/da = -(dP(a, x)/da) / p(a, x)

Both come from one computation, in float64 on flat tensors of tensor ops:
- x < a + 1: the power series P = pre * sum_n x^n / (a (a+1) ... (a+n)), with
  pre = x^a e^-x / Gamma(a), differentiated in a term by term (each term's a-derivative is
  itself times log x - digamma(a+n+1), and digamma steps by 1/(a+n));
- x >= a + 1: Legendre's continued fraction for Q = 1 - P = pre * h, evaluated by the
  modified Lentz method (Numerical Recipes' gcf) with the a-derivative of every quantity
  carried along (forward-mode differentiation of the recurrence);
- a >= 1e4, where both need O(sqrt(a)) terms: Temme's uniform asymptotic expansion for P
  (first correction term, absolute error below 1e-9 there), and for dx/da the Wilson-Hilferty
  cube-root approximation of the quantile (relative error below 2e-6 there).
Both forms are used only where they converge fast and without cancellation, and each loop
drops the elements that have converged, so a tensor costs what its hardest elements need."""
import math

import torchlite as tl

__all__ = ["gammainc", "standard_gamma_quantile_grad"]

_EPS = 1e-15              # relative accuracy at which a series / continued fraction stops
_TINY = 1e-300            # Lentz's guard against division by zero
_CHECK_EVERY = 8          # iterations between convergence checks (each check is a reduction)
_MAX_ITERATIONS = 4000    # enough for a < 1e4 (about 9 sqrt(a) terms near x = a)
_LARGE_A = 1e4            # from here on: the asymptotic forms


def _converged_loop(state, step, done, out_names):
    """Run step(state, i) for i = 1, 2, ...; every few iterations move the elements where
    done(state) holds into the outputs and keep iterating on the rest only."""
    n = state["a"].shape[0]
    outs = {k: tl.empty(n, dtype=tl.float64) for k in out_names}
    index = tl.arange(n)
    for i in range(1, _MAX_ITERATIONS + 1):
        step(state, i)
        if i % _CHECK_EVERY and i != _MAX_ITERATIONS:
            continue
        finished = done(state) if i != _MAX_ITERATIONS else tl.ones(index.shape[0], dtype=tl.bool)
        if bool(finished.any()):
            for k in out_names:
                outs[k][index[finished]] = state[k][finished]
            keep = ~finished
            index = index[keep]
            if index.shape[0] == 0:
                break
            for k, v in state.items():
                if isinstance(v, tl.Tensor) and v.ndim == 1:
                    state[k] = v[keep]
    return outs


def _series(a, x):
    """For x < a + 1: S and T with P = pre * S and dP/da = pre * T."""
    log_x = x.log()
    term = a.reciprocal()
    psi = a.digamma() + term                      # digamma(a + 1)
    state = {"a": a, "x": x, "log_x": log_x, "k": a.clone(), "term": term, "psi": psi,
             "S": term.clone(), "T": term * (log_x - psi), "dT": term}

    def step(s, i):
        s["k"] = s["k"] + 1                       # a + n
        s["term"] = s["term"] * s["x"] / s["k"]
        s["psi"] = s["psi"] + 1 / s["k"]          # digamma(a + n + 1)
        s["dT"] = s["term"] * (s["log_x"] - s["psi"])
        s["S"] = s["S"] + s["term"]
        s["T"] = s["T"] + s["dT"]

    def done(s):
        return (s["term"] <= _EPS * s["S"]) & (s["dT"].abs() <= _EPS * (s["T"].abs() + s["S"]))

    out = _converged_loop(state, step, done, ("S", "T"))
    return out["S"], out["T"]


def _continued_fraction(a, x):
    """For x >= a + 1: h and dh/da with Q = pre * h (Lentz's method, differentiated in a)."""
    b = x + 1 - a                                  # db/da = -1 throughout
    d = b.reciprocal()
    state = {"a": a, "x": x, "b": b, "c": tl.full_like(b, 1 / _TINY), "dc": tl.zeros_like(b),
             "d": d, "dd": d * d, "h": d.clone(), "dh": d * d, "delta": tl.zeros_like(b),
             "ddelta": tl.ones_like(b)}

    def step(s, i):
        an = -i * (i - s["a"])                     # d(an)/da = i
        s["b"] = s["b"] + 2
        D = an * s["d"] + s["b"]
        dD = i * s["d"] + an * s["dd"] - 1
        D = tl.where(D.abs() < _TINY, tl.full_like(D, _TINY), D)
        c = s["b"] + an / s["c"]
        dc = -1 + i / s["c"] - an * s["dc"] / (s["c"] * s["c"])
        c = tl.where(c.abs() < _TINY, tl.full_like(c, _TINY), c)
        d = D.reciprocal()
        dd = -dD * d * d
        delta = d * c
        ddelta = dd * c + d * dc
        s["dh"] = s["dh"] * delta + s["h"] * ddelta
        s["h"] = s["h"] * delta
        s["c"], s["dc"], s["d"], s["dd"], s["delta"], s["ddelta"] = c, dc, d, dd, delta, ddelta

    def done(s):
        return ((s["delta"] - 1).abs() <= _EPS) & \
            ((s["h"] * s["ddelta"]).abs() <= _EPS * (s["dh"].abs() + s["h"]))

    out = _converged_loop(state, step, done, ("h", "dh"))
    return out["h"], out["dh"]


def _temme_p(a, x):
    """P(a, x) for large a: 0.5 erfc(-eta sqrt(a/2)) - e^(-a eta^2/2) / sqrt(2 pi a) C0(eta),
    with eta^2 / 2 = lambda - 1 - log(lambda), lambda = x / a, sign(eta) = sign(lambda - 1)."""
    lam = x / a
    sigma = lam - 1
    eta = (2 * (sigma - sigma.log1p())).clamp(min=0).sqrt() * sigma.sign()
    near = sigma.abs() < 1e-2                      # C0's two terms cancel: its Taylor series
    safe_sigma = tl.where(near, tl.ones_like(sigma), sigma)
    safe_eta = tl.where(near, tl.ones_like(eta), eta)
    c0 = tl.where(near, -1 / 3 + eta * (1 / 12 + eta * (-2 / 135 + eta / 864)),
                  1 / safe_sigma - 1 / safe_eta)
    return 0.5 * (-eta * (a / 2).sqrt()).erfc() - \
        (-0.5 * a * eta * eta).exp() / (2 * math.pi * a).sqrt() * c0


def _wilson_hilferty_dx_da(a, x):
    """d quantile / da for large a, from x = a (1 - s + z sqrt(s))^3 with s = 1 / (9a) and
    the standard-normal z held fixed."""
    s = 1 / (9 * a)
    z = ((x / a).pow(1 / 3) - 1 + s) / s.sqrt()
    w = 1 - s + z * s.sqrt()
    dw = -s / a * (-1 + z / (2 * s.sqrt()))       # ds/da = -s / a
    return w.pow(3) + 3 * a * w * w * dw


def _p_and_dx_da(a, x):
    """P(a, x) and dx/da = -(dP/da) / p(a, x), elementwise over flat float64 tensors."""
    P = tl.full_like(x, float("nan"))
    dx_da = tl.full_like(x, float("nan"))
    valid = (a > 0) & (x >= 0)                     # NaN fails both tests
    zero = valid & (x == 0)
    P[zero] = 0.0
    dx_da[zero] = 0.0
    top = valid & (x == float("inf"))
    P[top] = 1.0
    dx_da[top] = 0.0
    inner = valid & (x > 0) & (x < float("inf"))
    large = inner & (a >= _LARGE_A)
    series = inner & ~large & (x < a + 1)
    fraction = inner & ~large & ~series
    if bool(series.any()):
        aa, xx = a[series], x[series]
        S, T = _series(aa, xx)
        pre = (aa * xx.log() - xx - aa.lgamma()).exp()
        P[series] = pre * S
        dx_da[series] = -xx * T
    if bool(fraction.any()):
        aa, xx = a[fraction], x[fraction]
        h, dh = _continued_fraction(aa, xx)
        log_x = xx.log()
        pre = (aa * log_x - xx - aa.lgamma()).exp()
        P[fraction] = 1 - pre * h
        dx_da[fraction] = xx * ((log_x - aa.digamma()) * h + dh)
    if bool(large.any()):
        aa, xx = a[large], x[large]
        P[large] = _temme_p(aa, xx)
        dx_da[large] = _wilson_hilferty_dx_da(aa, xx)
    return P, dx_da


def _flat64(a, x):
    shape = tl.broadcast_shapes(tuple(a.shape), tuple(x.shape))
    return (a.detach().expand(shape).reshape(-1).to(tl.float64),
            x.detach().expand(shape).reshape(-1).to(tl.float64), shape)


def standard_gamma_quantile_grad(a, x):
    """dx/da for x drawn from Gamma(a, 1): the reparameterised gradient of the sample x in
    its concentration a (PyTorch's torch._standard_gamma_grad).  No autograd graph."""
    a64, x64, shape = _flat64(a, x)
    return _p_and_dx_da(a64, x64)[1].reshape(shape).to(x.dtype)


def _log_density(a, x):
    return tl.xlogy(a - 1, x) - x - a.lgamma()


class _GammaInc(tl.autograd.Function):
    """P(a, x) with gradients in both arguments: dP/dx is the Gamma(a, 1) density,
    dP/da = -density * dx/da."""

    @staticmethod
    def forward(ctx, a, x):
        a64, x64, shape = _flat64(a, x)
        P, dx_da = _p_and_dx_da(a64, x64)
        dtype = tl.promote_types(a.dtype, x.dtype)
        dx_da = dx_da.reshape(shape).to(dtype)
        ctx.save_for_backward(a, x, dx_da)
        ctx.save_for_forward(a, x, dx_da)
        return P.reshape(shape).to(dtype)

    @staticmethod
    def jvp(ctx, ta, tx):
        """Forward mode: density * (t_x - dx/da t_a)."""
        a, x, dx_da = ctx.saved_tensors
        return _log_density(a, x).exp() * (tx - ta * dx_da)

    @staticmethod
    def backward(ctx, grad):
        a, x, dx_da = ctx.saved_tensors
        density = _log_density(a, x).exp()
        grad_a = grad_x = None
        if ctx.needs_input_grad[0]:
            grad_a = _sum_to(-grad * density * dx_da, a.shape)
        if ctx.needs_input_grad[1]:
            grad_x = _sum_to(grad * density, x.shape)
        return grad_a, grad_x


def _sum_to(g, shape):
    return g.sum_to_size(shape) if tuple(g.shape) != tuple(shape) else g


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a),
    differentiable in a and x; NaN where a <= 0 or x < 0 (as torch.special.gammainc)."""
    return _GammaInc.apply(a, x)
