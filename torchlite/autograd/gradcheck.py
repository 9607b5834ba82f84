"""gradcheck / gradgradcheck: compare backward's gradients with central finite differences
(use float64/complex128 inputs; float32 differences are too coarse to be a check).

Complex inputs and outputs are checked as pairs of reals, which is what PyTorch's convention
for complex gradients means: an input element z = x + iy contributes two Jacobian columns
(perturbing x, then y), read from the analytical gradient's real and imaginary parts; an
output element w contributes two rows, the gradients of Re(w) and Im(w), which backward gives
for the grad_output units 1 and 1j."""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from .grad_mode import no_grad, enable_grad

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .._tensor import Tensor


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients disagree."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _is_tensor(x):
    from .._tensor import Tensor
    return isinstance(x, Tensor)


def _float_outputs(func, inputs):
    return tuple(o for o in _as_tuple(func(*inputs))
                 if _is_tensor(o) and (o.is_floating_point() or o.is_complex()))


def _parts(t):
    """The number of reals per element of t: 2 for complex, else 1."""
    return 2 if t.is_complex() else 1


def _flat_values(outputs):
    """Each output's values as a 1-d float64 tensor (complex: re, im interleaved)."""
    from .._ops.complex import view_as_real
    return [(view_as_real(o.detach()) if o.is_complex() else o.detach()).double().reshape(-1).clone()
            for o in outputs]


def _numerical_columns(func, inputs, x, eps):
    """cols[i][k]: column i of the Jacobian of output k w.r.t. x (a 1-d tensor), by central
    differences.  x is perturbed in place and put back exactly; nothing is recorded (a func
    that needs to record, like gradgradcheck's, turns grad mode back on itself)."""
    cols = []
    units = (1, 1j) if x.is_complex() else (1,)
    with no_grad():
        for idx in itertools.product(*[range(s) for s in x.shape]):
            orig = x[idx].item()
            for unit in units:
                x[idx] = orig + eps * unit
                plus = _flat_values(_float_outputs(func, inputs))
                x[idx] = orig - eps * unit
                minus = _flat_values(_float_outputs(func, inputs))
                x[idx] = orig
                cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
    return cols


def _analytical_rows(outputs, tin):
    """rows[k][j]: the gradients of element j of output k w.r.t. each input (None if unused),
    one backward per output element."""
    from .._ops.creation import zeros
    from . import grad
    rows = []
    for o in outputs:
        ro = []
        for j in range(o.numel()):
            for unit in ((1, 1j) if o.is_complex() else (1,)):
                if not o.requires_grad:
                    ro.append((None,) * len(tin))
                    continue
                g = zeros(o.shape, dtype=o.dtype)
                g.view(-1)[j] = unit
                ro.append(grad(o, tin, g, retain_graph=True, allow_unused=True))
        rows.append(ro)
    return rows


def _analytical_value(g, i, _unused=None):
    """Jacobian entry i (a real coordinate) of an input's gradient g: for a complex input,
    coordinate 2k + part is the real (part 0) or imaginary (1) part of g's element k."""
    if g is None:
        return 0.0
    if g.is_complex():
        v = g.reshape(-1)[i // 2].item()
        return v.imag if i % 2 else v.real
    return g.reshape(-1)[i].item()


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradcheck(func: Callable[..., Tensor | Sequence[Tensor]], inputs: Tensor | Sequence[Any], *,
              eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3, raise_exception: bool = True,
              nondet_tol: float = 0.0, check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True, fast_mode: bool = False,
              masked: bool | None = None) -> bool:
    """True if func's analytical gradients (its backward) match central finite differences
    for every input that requires grad; otherwise raise GradcheckError (or return False with
    raise_exception=False).  Runs the backward twice to catch a nondeterministic one (within
    nondet_tol)."""
    inputs = _as_tuple(inputs)
    tin = [x for x in inputs if _is_tensor(x) and x.requires_grad]
    if not tin:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    outputs = _float_outputs(func, inputs)
    rows = _analytical_rows(outputs, tin)
    again = _analytical_rows(outputs, tin)
    for k, o in enumerate(outputs):
        for j in range(o.numel() * _parts(o)):
            for n, (g1, g2) in enumerate(zip(rows[k][j], again[k][j])):
                if (g1 is None) != (g2 is None) or (g1 is not None and
                                                    g1.numel() and (g1 - g2).abs().max().item() > nondet_tol):
                    return _fail(f"Backward is not reentrant, i.e., running backward with same input "
                                 f"and grad_output multiple times gives different values, although "
                                 f"analytical gradient matches numerical gradient. The tolerance for "
                                 f"nondeterminism was {nondet_tol}. (output {k}, input {n})",
                                 raise_exception)
    for n, x in enumerate(tin):
        cols = _numerical_columns(func, inputs, x, eps)
        for k, o in enumerate(outputs):
            for i, col in enumerate(cols):
                for j in range(o.numel() * _parts(o)):
                    num = col[k][j].item()
                    ana = _analytical_value(rows[k][j][n], i, None)
                    if not abs(ana - num) <= atol + rtol * abs(num):
                        return _fail(f"Jacobian mismatch for output {k} with respect to input {n},\n"
                                     f"numerical:{num}\nanalytical:{ana}\n(element [{i}, {j}] of the "
                                     f"Jacobian; atol {atol}, rtol {rtol})", raise_exception)
    return True


def gradgradcheck(func: Callable[..., Tensor | Sequence[Tensor]], inputs: Tensor | Sequence[Any],
                  grad_outputs: Tensor | Sequence[Tensor] | None = None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """gradcheck of the gradient: checks that backward is itself differentiable and right,
    with respect to the inputs and to the output gradients (random ones by default)."""
    from .._ops.random import randn
    from . import grad
    inputs = _as_tuple(inputs)
    outputs = _float_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(randn(*o.shape, dtype=o.dtype).requires_grad_() for o in outputs)
        if gen_non_contig_grad_outputs:
            grad_outputs = tuple(_non_contiguous(g) for g in grad_outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_order(*args):
        ins, gos = args[:n_in], args[n_in:]
        with enable_grad():
            outs = _float_outputs(func, ins)
            xs = [x for x in ins if _is_tensor(x) and x.requires_grad]
            used = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
            if not used:
                return ()
            return grad([o for o, _ in used], xs, [g for _, g in used], create_graph=True,
                        allow_unused=True, materialize_grads=True)
    return gradcheck(first_order, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol)


def _non_contiguous(t):
    """The same values in a non-contiguous layout (every other element of a twice-as-big
    buffer), still requiring grad as a leaf."""
    from .._ops.creation import zeros
    if t.numel() == 0:
        return t
    with no_grad():
        big = zeros(*t.shape, 2, dtype=t.dtype)
        big.select(-1, 0).copy_(t)
        out = big.select(-1, 0)
    return out.detach().requires_grad_(t.requires_grad)
