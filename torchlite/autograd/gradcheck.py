"""gradcheck / gradgradcheck: compare backward's gradients with central finite differences
(use float64 inputs; float32 differences are too coarse to be a check)."""
import itertools

from .grad_mode import no_grad


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _float_outputs(func, inputs):
    from .._tensor import Tensor
    return tuple(o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor) and o.is_floating_point())


def _numerical_jacobian(func, inputs, x, eps):
    """J[j][i] = d out_j / d x_i, by central differences, one column per element of x."""
    cols = []
    for idx in itertools.product(*[range(s) for s in x.shape]):
        with no_grad():
            orig = x[idx].item()
            x[idx] = orig + eps
            plus = [o.detach().double().reshape(-1).clone() for o in _float_outputs(func, inputs)]
            x[idx] = orig - eps
            minus = [o.detach().double().reshape(-1).clone() for o in _float_outputs(func, inputs)]
            x[idx] = orig
        cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
    return cols          # cols[i][k] = column i of the Jacobian of output k (a 1-d tensor)


def _analytical_rows(outputs, tin):
    """rows[k][j] = the gradients of element j of output k w.r.t. each input (None if unused)."""
    from .._ops.creation import zeros
    from . import grad
    rows = []
    for o in outputs:
        ro = []
        for j in range(o.numel()):
            g = zeros(o.shape, dtype=o.dtype)
            g.reshape(-1)[j] = 1
            ro.append(grad(o, tin, g, retain_graph=True, allow_unused=True) if o.requires_grad
                      else (None,) * len(tin))
        rows.append(ro)
    return rows


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, fast_mode=False, masked=None):
    """True if func's analytical gradients (backward) match finite differences for every input
    that requires grad; otherwise raise GradcheckError (or return False)."""
    from .._tensor import Tensor
    inputs = _as_tuple(inputs)
    tin = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    if not tin:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    outputs = _float_outputs(func, inputs)
    rows = _analytical_rows(outputs, tin)
    for n, x in enumerate(tin):
        cols = _numerical_jacobian(func, inputs, x, eps)
        for k, o in enumerate(outputs):
            for i, col in enumerate(cols):
                for j in range(o.numel()):
                    num = col[k][j].item()
                    g = rows[k][j][n]
                    ana = 0.0 if g is None else g.reshape(-1)[i].item()
                    if abs(ana - num) > atol + rtol * abs(num):
                        msg = (f"Jacobian mismatch for output {k} with respect to input {n}: element "
                               f"[{j}, {i}]: numerical {num}, analytical {ana} (atol {atol}, rtol {rtol})")
                        if raise_exception:
                            raise GradcheckError(msg)
                        return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, **kwargs):
    """gradcheck of the gradient: checks that backward is itself differentiable."""
    from .._tensor import Tensor
    from .._ops.random import randn
    from . import grad
    inputs = _as_tuple(inputs)
    tin = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    outputs = _float_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(randn(*o.shape, dtype=o.dtype).requires_grad_() for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_order(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _float_outputs(func, ins)
        xs = [x for x in ins if isinstance(x, Tensor) and x.requires_grad]
        used = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
        return grad([o for o, _ in used], xs, [g for _, g in used], create_graph=True,
                    allow_unused=True, materialize_grads=True)
    return gradcheck(first_order, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
