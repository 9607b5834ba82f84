"""torchlite.autograd.functional: derivatives of whole functions, with PyTorch's
torch.autograd.functional API: vjp, jvp, jacobian, hessian, vhp, hvp.

`inputs` is a Tensor or a tuple of Tensors, and so is what the function returns; every
result follows those structures (a tuple where they were a tuple, a tensor where they were
one).  Results are detached unless create_graph=True, which keeps them differentiable with
respect to the inputs (and through them, the inputs' own history).  strict=True raises a
RuntimeError naming the output or input when an output does not depend on an input.

Everything runs in reverse mode (torchlite has no forward-mode AD).  The forward-mode
products -- jvp, hvp, jacobian(strategy="forward-mode"), hessian(outer_jacobian_strategy=
"forward-mode") -- use the double-vjp trick (Linearization, below): with u a cotangent that
requires grad, the vjp g(u) = J^T u is linear in u, so differentiating g with respect to u
in the direction v, grad(g, u, v), is exactly J v (no finite differences).  It costs one
backward with create_graph, then one backward per product, and needs the function's backward
formulas to be differentiable, which torchlite's are (they are written with Tensor ops).

vectorize=True computes the rows of a reverse-mode Jacobian by torchlite.func.jacrev (one
batched backward over the output basis, through vmap's batching rules; with create_graph, or
for complex outputs, a loop over the basis vectors), and the columns of a forward-mode one
through grad(..., is_grads_batched=True), which torchlite runs as a loop over the basis
vectors: the same values as vectorize=False.  As in PyTorch, forward mode needs vectorize=True and supports neither
strict nor create_graph."""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import grad as _autograd_grad
from .._ops.creation import eye, ones_like, zeros, zeros_like
from .._ops.joining import stack
from .._tensor import Tensor
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp", "Linearization"]


# ---- argument structure -------------------------------------------------------------------------
def _as_tuple(x, arg_name, fn_name):
    """(whether x was a tuple, x as a tuple), checking that it holds only Tensors."""
    is_tuple = isinstance(x, tuple)
    items = x if is_tuple else (x,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"the value at index {i} has type" if is_tuple else f"the given {arg_name} has type"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple "
                            f"of Tensors but {where} {type(el)}.")
    return is_tuple, items


def _tuple_postprocess(res, was_tuple):
    """Undo _as_tuple on a result: was_tuple is one flag, or (outer, inner) for the tuple of
    tuples a Jacobian is (one entry per output, then per input)."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            res = tuple(r[0] for r in res)
        return res if outer else res[0]
    return res if was_tuple else res[0]


def _grad_preprocess(tensors, create_graph, need_graph):
    """The tensors the function is run on: with create_graph, an input that requires grad
    stays in its graph (through a view of itself, so the result can reach its history);
    otherwise a detached copy that requires grad when need_graph."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad
                 else t.detach().requires_grad_(need_graph) for t in tensors)


def _grad_postprocess(results, create_graph):
    """Detach the results (tensors, or tuples of them) unless create_graph."""
    if create_graph:
        return results
    return tuple(r.detach() if isinstance(r, Tensor) else _grad_postprocess(r, False)
                 for r in results)


def _validate_v(v, other, other_is_tuple):
    """v must hold one tensor of the same size per tensor of `other`."""
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prefix = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {el_other.size()} but got "
                               f"{el_v.size()}.")


_NOT_DIFFERENTIABLE = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs "
               "must be computed in a differentiable manner from the input when running in strict "
               "mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
                   "user-provided function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function "
                "with respect to input {i} is independent of the input. This is not allowed in "
                "strict mode. You should ensure that your function is twice differentiable and that "
                "the jacobian depends on the inputs (this would be violated by a linear function for "
                "example).",
}


def _check_requires_grad(tensors, kind, strict):
    """strict: every tensor (outputs, vjps, a Jacobian) must exist and depend on the inputs."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input "
                               f"{i}. This is not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_NOT_DIFFERENTIABLE[kind].format(i=i))


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This "
                   "is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in "
                         "the grad_jacobian. This is not allowed in strict mode as it prevents from "
                         "using the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """Zeros (refs[i]'s shape) for the gradients no graph reached; strict makes that, or a
    gradient that does not depend on the inputs under create_graph, an error."""
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if stage.startswith("double") else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input "
                               f"{i}. This is not allowed in strict mode when create_graph=True.")
        out.append(g)
    return tuple(out)


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
          is_grads_batched=False):
    """autograd.grad over the outputs that require grad (the others contribute nothing),
    allowing unused inputs: one gradient or None per input."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    live = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not live:
        return (None,) * len(inputs)
    return _autograd_grad(tuple(o for o, _ in live), inputs, tuple(g for _, g in live),
                          retain_graph=retain_graph, create_graph=create_graph, allow_unused=True,
                          is_grads_batched=is_grads_batched)


# ---- the double-vjp trick -----------------------------------------------------------------------
class Linearization:
    """Jacobian-vector products J v of `outputs` with respect to `inputs` (tuples of tensors;
    built under grad mode from outputs whose graph reaches the inputs) for any tangents v,
    by the double-vjp trick: vjps = J^T u for cotangents u that require grad (zeros: the
    value does not matter, the vjp is linear in u), then J v = grad(vjps, u, v).

    The one home of the trick: jvp, hvp and forward-mode jacobian here, and
    torchlite.func.jvp, linearize and jacfwd, all go through it."""

    def __init__(self, outputs: Iterable[Tensor | None], inputs: Iterable[Tensor]) -> None:
        self.outputs = tuple(outputs)
        self.inputs = tuple(inputs)
        # only outputs in the graph get a cotangent: the others' J v is None (no input reaches
        # them; an output may itself be None, as a gradient that no input reaches is)
        self.cotangents = tuple(zeros_like(o, requires_grad=True)
                                if o is not None and o.requires_grad else None for o in self.outputs)
        self.vjps = _grad(self.outputs, self.inputs, self.cotangents, create_graph=True,
                          retain_graph=True)

    def jvp(self, tangents: Sequence[Tensor | None], create_graph: bool = False, retain_graph: bool = True,
            is_grads_batched: bool = False) -> tuple[Tensor | None, ...]:
        """J v, one tensor per output (None for an output no input reaches); tangents: one per
        input, None standing for zeros.  is_grads_batched: each tangent holds a batch of
        vectors along its first dim (the same batch size for all), giving a batch of
        products per output."""
        live = [(g, v) for g, v in zip(self.vjps, tangents) if g is not None and v is not None]
        slots = [i for i, u in enumerate(self.cotangents) if u is not None]
        if not live or not slots:
            return (None,) * len(self.outputs)
        got = _grad(tuple(g for g, _ in live), tuple(self.cotangents[i] for i in slots),
                    tuple(v for _, v in live), create_graph=create_graph,
                    retain_graph=retain_graph, is_grads_batched=is_grads_batched)
        result = [None] * len(self.outputs)
        for i, r in zip(slots, got):
            result[i] = r
        return tuple(result)

    def jacobian(self, create_graph: bool = False) -> tuple[tuple[Tensor, ...], ...]:
        """The Jacobian, one column J e_k per input element (a batch of products per input
        over its standard basis): for output j and input k, a tensor of shape
        output_j.shape + input_k.shape (zeros where no input reaches the output)."""
        columns = []            # per input: per output, (numel of the input, *output shape) or None
        for k, x in enumerate(self.inputs):
            tangents = [None] * len(self.inputs)
            tangents[k] = _basis(x)
            columns.append(self.jvp(tangents, create_graph=create_graph, is_grads_batched=True))
        return tuple(tuple(zeros(tuple(o.shape) + tuple(x.shape), dtype=o.dtype, device=o.device)
                           if cols[j] is None else
                           cols[j].movedim(0, -1).reshape(tuple(o.shape) + tuple(x.shape))
                           for cols, x in zip(columns, self.inputs))
                     for j, o in enumerate(self.outputs))


def _basis(t):
    """The standard basis of t's space: (numel, *t.shape), row k the one-hot vector e_k."""
    n = t.numel()
    return eye(n, dtype=t.dtype, device=t.device).reshape((n,) + tuple(t.shape))


# ---- the API ------------------------------------------------------------------------------------
def _prepare_v(v, against, against_is_tuple, create_graph, fn_name):
    _, v = _as_tuple(v, "v", fn_name)
    v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    _validate_v(v, against, against_is_tuple)
    return v


def _require_single_element(tensors, what):
    if len(tensors) != 1 or tensors[0].nelement() != 1:
        raise RuntimeError(f"The vector v can only be None if {what} a single Tensor with a single "
                           f"element.")


def vjp(func: Callable[..., Tensor | tuple[Tensor, ...]], inputs: Tensor | tuple[Tensor, ...],
        v: Tensor | tuple[Tensor, ...] | None = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Tensor | tuple[Tensor, ...], Tensor | tuple[Tensor, ...]]:
    """(func(inputs), v^T J): the vector-Jacobian product of func at inputs with v (one
    tensor per output; None is allowed for a single one-element output)."""
    with enable_grad():
        inputs_are_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        outputs_are_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            v = _prepare_v(v, outputs, outputs_are_tuple, create_graph, "vjp")
        else:
            _require_single_element(outputs, "the user-provided function returns")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "back")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), outputs_are_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), inputs_are_tuple))


def jvp(func: Callable[..., Tensor | tuple[Tensor, ...]], inputs: Tensor | tuple[Tensor, ...],
        v: Tensor | tuple[Tensor, ...] | None = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Tensor | tuple[Tensor, ...], Tensor | tuple[Tensor, ...]]:
    """(func(inputs), J v): the Jacobian-vector product of func at inputs with v (one tensor
    per input; None is allowed for a single one-element input), by the double-vjp trick."""
    with enable_grad():
        inputs_are_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            v = _prepare_v(v, inputs, inputs_are_tuple, create_graph, "jvp")
        else:
            _require_single_element(inputs, "the input to the user-provided function is")
            v = (ones_like(inputs[0]),)
        outputs = func(*inputs)
        outputs_are_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        lin = Linearization(outputs, inputs)
        _check_requires_grad(lin.vjps, "grad_inputs", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        products = lin.jvp(v, create_graph=create_graph, retain_graph=create_graph)
        result = _fill_in_zeros(products, outputs, strict, create_graph, "back_trick")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), outputs_are_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), outputs_are_tuple))


def _jacobian_forward(func, inputs, strict, vectorize):
    """The Jacobian one column per input element (J e_k, by the double-vjp trick)."""
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and '
                           '`strategy="forward-mode"` are not supported together (yet). Please '
                           'either set `strict=False` or `strategy="reverse-mode"`.')
    inputs_are_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian is only implemented for `vectorize=True`.")
    with enable_grad():
        inputs = _grad_preprocess(inputs, create_graph=False, need_graph=True)
        outputs = func(*inputs)
        outputs_are_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                               "jacobian")
        lin = Linearization(outputs, inputs)
    # lists, not tuples, where the structure is kept: PyTorch's forward mode returns those
    jac = [list(row) for row in lin.jacobian()]
    return _tuple_postprocess(jac, (outputs_are_tuple, inputs_are_tuple))


def jacobian(func: Callable[..., Tensor | tuple[Tensor, ...]], inputs: Tensor | tuple[Tensor, ...],
             create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Tensor | tuple[Tensor | tuple[Tensor, ...], ...]:
    """The Jacobian of func at inputs: for output i and input j a tensor of shape
    output_i.shape + input_j.shape (a tuple of tuples, a tuple or a tensor following the
    structures of outputs and inputs).  reverse-mode: one backward per output element;
    forward-mode: one double-vjp product per input element (needs vectorize=True)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: '
                             'If your function has more outputs than inputs, "forward-mode" tends to '
                             'be more performant. Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). '
                                      'Please either set `create_graph=False` or '
                                      '`strategy="reverse-mode"`.')
        return _jacobian_forward(func, inputs, strict, vectorize)

    with enable_grad():
        inputs_are_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        outputs_are_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                               "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                                   "`vectorized=True` are not supported together. Please either set "
                                   "`strict=False` or `vectorize=False`.")
            jac = None if create_graph else _jacobian_by_vmap(func, inputs, outputs)
            if jac is None:
                jac = _jacobian_rows_batched(outputs, inputs, create_graph)
        else:
            jac = _jacobian_rows(outputs, inputs, create_graph, strict)
        jac = _grad_postprocess(jac, create_graph)
    return _tuple_postprocess(jac, (outputs_are_tuple, inputs_are_tuple))


def _jacobian_rows(outputs, inputs, create_graph, strict):
    """One backward per output element (a row of the Jacobian of every input)."""
    jac = []
    for i, out in enumerate(outputs):
        rows = tuple([] for _ in inputs)
        flat = out.reshape(-1)
        for e in range(out.nelement()):
            grads = _grad((flat[e],), inputs, retain_graph=True, create_graph=create_graph)
            for j, (g, x) in enumerate(zip(grads, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent "
                                           f"of input {j}. This is not allowed in strict mode.")
                    g = zeros_like(x)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is independent "
                                       f"of input {j}. This is not allowed in strict mode when "
                                       f"create_graph=True.")
                rows[j].append(g)
        jac.append(tuple(stack(r).reshape(tuple(out.shape) + tuple(x.shape)) if r else
                         zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
                         for r, x in zip(rows, inputs)))
    return tuple(jac)


def _jacobian_by_vmap(func, inputs, outputs):
    """vectorize=True without create_graph: torchlite.func.jacrev, whose rows come from one
    batched backward (vmap over the output basis), as PyTorch's vectorize uses vmap; None for
    complex outputs (the loop below takes them)."""
    if any(o.is_complex() for o in outputs):
        return None
    from .. import func as _func          # the transforms sit above autograd: loaded on use
    xs = tuple(x.detach() for x in inputs)
    jac = _func.jacrev(func, argnums=tuple(range(len(xs))))(*xs)
    return jac if isinstance(jac[0], tuple) else (jac,)


def _jacobian_rows_batched(outputs, inputs, create_graph):
    """vectorize=True: the rows of all outputs through one batched grad over the standard
    basis of the outputs' concatenated space (a loop in torchlite, see the module docstring)."""
    numels = [o.numel() for o in outputs]
    total = sum(numels)
    flat = tuple(o.reshape(-1) for o in outputs)
    grad_outputs, start = [], 0
    for o, n in zip(outputs, numels):
        identity = eye(total, dtype=o.dtype, device=o.device)
        grad_outputs.append(identity[:, start:start + n])
        start += n
    per_input = _grad(flat, inputs, tuple(grad_outputs), create_graph=create_graph,
                      is_grads_batched=True)
    per_input = [g if g is not None else
                 zeros_like(x).expand((total,) + tuple(x.shape))
                 for g, x in zip(per_input, inputs)]
    by_input = [tuple(piece.reshape(tuple(o.shape) + tuple(x.shape))
                      for piece, o in zip(g.split(numels, dim=0), outputs))
                for g, x in zip(per_input, inputs)]
    return tuple(zip(*by_input))


def hessian(func: Callable[..., Tensor | tuple[Tensor, ...]], inputs: Tensor | tuple[Tensor, ...],
            create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Tensor | tuple[Tensor | tuple[Tensor, ...], ...]:
    """The Hessian of func (one one-element output) at inputs: the Jacobian of its gradient.
    For inputs i and j a tensor of shape input_i.shape + input_j.shape (a tuple of tuples
    for a tuple of inputs).  outer_jacobian_strategy picks how that outer Jacobian is
    computed (forward-mode: by the double-vjp trick, with vectorize=True)."""
    inputs_are_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*xs):
        out = func(*xs)
        out_is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_is_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a "
                               "single element")
        return out.squeeze()

    def gradient(*xs):
        jac = jacobian(single_output, xs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (inputs_are_tuple, inputs_are_tuple))


def _scalar_function_gradient(func, inputs, v, create_graph, strict, fn_name):
    """Shared start of vhp and hvp: (inputs, v, outputs, gradient of the one output)."""
    inputs_are_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        v = _prepare_v(v, inputs, inputs_are_tuple, create_graph, fn_name)
    else:
        _require_single_element(inputs, "the input to the user-provided function is")
    outputs = func(*inputs)
    outputs_are_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if outputs_are_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a "
                           f"single element")
    gradient = _grad(outputs, inputs, create_graph=True)
    _check_requires_grad(gradient, "jacobian", strict)
    return inputs_are_tuple, inputs, v, outputs, outputs_are_tuple, gradient


def vhp(func: Callable[..., Tensor | tuple[Tensor, ...]], inputs: Tensor | tuple[Tensor, ...],
        v: Tensor | tuple[Tensor, ...] | None = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Tensor | tuple[Tensor, ...], Tensor | tuple[Tensor, ...]]:
    """(func(inputs), v^T H): the vector-Hessian product of func (one one-element output)
    at inputs: the vjp of its gradient."""
    with enable_grad():
        inputs_are_tuple, inputs, v, outputs, outputs_are_tuple, gradient = \
            _scalar_function_gradient(func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _grad(gradient, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "double_back")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), outputs_are_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), inputs_are_tuple))


def hvp(func: Callable[..., Tensor | tuple[Tensor, ...]], inputs: Tensor | tuple[Tensor, ...],
        v: Tensor | tuple[Tensor, ...] | None = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Tensor | tuple[Tensor, ...], Tensor | tuple[Tensor, ...]]:
    """(func(inputs), H v): the Hessian-vector product of func (one one-element output) at
    inputs: the jvp of its gradient, by the double-vjp trick (equal to vhp's result, the
    Hessian being symmetric, but computed as PyTorch does)."""
    with enable_grad():
        inputs_are_tuple, inputs, v, outputs, outputs_are_tuple, gradient = \
            _scalar_function_gradient(func, inputs, v, create_graph, strict, "hvp")
        if v is None:
            v = (ones_like(inputs[0]),)
        lin = Linearization(gradient, inputs)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        products = lin.jvp(v, create_graph=create_graph, retain_graph=create_graph)
        result = _fill_in_zeros(products, inputs, strict, create_graph, "double_back_trick")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), outputs_are_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), inputs_are_tuple))
