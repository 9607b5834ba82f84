"""torchlite.func: function transforms with PyTorch's torch.func API, built on torchlite's
autograd: grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian, vmap,
functional_call, stack_module_state.

How they differ from PyTorch's: there are no transform levels, so
- grad/vjp/jacrev differentiate by reverse-mode autograd on the inputs (copies that require
  grad, or the inputs themselves inside an outer transform, which is how grad(grad(f)) and
  hessian compose);
- jvp, linearize and jacfwd use the double-vjp trick
  of autograd.functional.Linearization (J v as the derivative of the vjp J^T u with respect
  to u, exact): one backward with create_graph, then one backward per tangent (per input
  element for jacfwd).  linearize keeps that graph, so its jvp_fn runs one backward per call
  and never re-runs the function;
- vmap runs the function once on the whole batch: inside, it sees batched tensors
  (torchlite/_vmap) whose operations run by batching rules on the physical tensor, batch
  dimension first -- elementwise ops, reductions and every dim argument, views and indexing,
  matmul and its family, F.linear, convolution (a batched weight folded into groups),
  pooling, normalisation, the losses, cat/stack, gather/scatter, in-place methods.  An
  operation without a rule runs once per element on real slices (the same values, at loop
  speed), as do jacrev/jacfwd/jvp and a vjp_fn inside vmap.  grad inside vmap is one
  backward over the batch: an unbatched differentiated input is expanded over the batch, so
  each element gets the gradient of its own output (per-sample gradients).
  Differences: a nested vmap runs its own map as a loop (the outer one stays batched);
  random ops follow `randomness` ('error' raises, 'different' draws per element, 'same'
  once).  The batched tensors reach torchlite's functions
  through their module attributes (torchlite.x, F.x, ...), which vmap wraps while it runs: a
  function imported by name before (`from torchlite.nn.functional import relu`) and called
  on a batched tensor raises TypeError -- call it as F.relu.  The recurrent modules run once
  per element."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import torchlite as _tl

from . import _vmap
from .autograd import grad as _autograd_grad
from .autograd.functional import Linearization
from .autograd.grad_mode import enable_grad
from .utils._pytree import tree_flatten, tree_map, tree_unflatten

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

    from ._tensor import Tensor
    from .nn.modules.module import Module

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "vmap", "functional_call", "stack_module_state"]


def _prepare(args, argnums):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -len(args) <= n < len(args):
            raise RuntimeError(f"Got argnums={argnums} but only {len(args)} positional inputs")
    nums = tuple(n % len(args) for n in nums)
    args = list(args)
    nested = False
    for n in nums:
        leaves, spec = tree_flatten(args[n])
        out = []
        for t in leaves:
            if not isinstance(t, _tl.Tensor) or not t.is_floating_point():
                raise RuntimeError("grad: the differentiated inputs must be floating-point "
                                   "tensors")
            if t.requires_grad:          # inside an outer transform: keep its graph
                nested = True
                out.append(t)
            else:
                out.append(t.detach().requires_grad_())
        args[n] = tree_unflatten(out, spec)
    return args, nums, nested


def _scalar_output(func, args, kwargs, has_aux, types):
    """func's (output, aux), the output checked to be one element of one of `types`."""
    out = func(*args, **kwargs)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError("grad_and_value(f)(*args): output of function f should "
                               "be a tuple: (output, aux) if has_aux is True")
        out, aux = out
    if not isinstance(out, types) or out.numel() != 1:
        raise _NotScalarOutput("grad_and_value(f)(*args): Expected f(*args) to return a "
                               "scalar Tensor")
    return out, aux


class _NotScalarOutput(RuntimeError):
    """grad's error for a function whose output is not one element (hessian tells it apart)."""


def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """A function returning (the gradient of func's scalar output with respect to the
    arguments argnums, func's output) — and the aux output too with has_aux."""
    def wrapper(*args, **kwargs):
        if _vmap.current() is not None:
            return _batched_grad_and_value(func, argnums, has_aux, args, kwargs)
        args, nums, nested = _prepare(args, argnums)
        with enable_grad():
            out, aux = _scalar_output(func, args, kwargs, has_aux, _tl.Tensor)
            flat, specs = [], []
            for n in nums:
                leaves, spec = tree_flatten(args[n])
                flat += leaves
                specs.append((spec, len(leaves)))
            gs = _autograd_grad(out, flat, create_graph=nested, allow_unused=True)
        gs = [g if g is not None else _tl.zeros_like(x) for g, x in zip(gs, flat)]
        it = iter(gs)
        grads = tuple(tree_unflatten([next(it) for _ in range(k)], spec) for spec, k in specs)
        grads = grads[0] if isinstance(argnums, int) else grads
        value = out if nested else out.detach()
        return (grads, (value, aux)) if has_aux else (grads, value)
    return wrapper


def _prepare_batched(args, argnums):
    """_prepare inside vmap: the differentiated inputs as batched leaves that require grad --
    a batched input's physical tensor, an unbatched one expanded over the batch (so that
    every element gets its own gradient).  Returns (args, nums, physical leaves, nested)."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -len(args) <= n < len(args):
            raise RuntimeError(f"Got argnums={argnums} but only {len(args)} positional inputs")
    nums = tuple(n % len(args) for n in nums)
    size = _vmap.current().size
    args, phys, nested = list(args), [], False
    for n in nums:
        leaves, spec = tree_flatten(args[n])
        out = []
        for t in leaves:
            v = t.value if type(t) is _vmap.Batched else t
            if not isinstance(v, _tl.Tensor) or not v.is_floating_point():
                raise RuntimeError("grad: the differentiated inputs must be floating-point "
                                   "tensors")
            if type(t) is not _vmap.Batched:
                v = v.unsqueeze(0).expand(size, *v.shape)
            if v.requires_grad:          # inside an outer transform: keep its graph
                nested = True
            else:
                v = v.detach().requires_grad_()
            phys.append(v)
            out.append(_vmap.Batched(v))
        args[n] = tree_unflatten(out, spec)
    return args, nums, phys, nested


def _batched_grad_and_value(func, argnums, has_aux, args, kwargs):
    """grad_and_value inside vmap: one backward over the whole batch, each element's scalar
    seeded with 1 -- the elements' graphs are disjoint, so each input element gets the
    gradient of its own output."""
    args, nums, phys, nested = _prepare_batched(args, argnums)
    with enable_grad():
        out, aux = _scalar_output(func, args, kwargs, has_aux, (_tl.Tensor, _vmap.Batched))
        size = _vmap.current().size
        value = out.value if type(out) is _vmap.Batched else \
            out.unsqueeze(0).expand(size, *out.shape)
        if value.requires_grad:
            gs = _autograd_grad(value, phys, _tl.ones_like(value), create_graph=nested,
                                allow_unused=True)
        else:
            gs = [None] * len(phys)
    gs = [_vmap.Batched(g if g is not None else _tl.zeros_like(x)) for g, x in zip(gs, phys)]
    it = iter(gs)
    grads = []
    for n in nums:
        leaves, spec = tree_flatten(args[n])
        grads.append(tree_unflatten([next(it) for _ in leaves], spec))
    grads = grads[0] if isinstance(argnums, int) else tuple(grads)
    value = _vmap.Batched(value if nested else value.detach())
    return (grads, (value, aux)) if has_aux else (grads, value)


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """A function returning the gradient of func's scalar output with respect to the
    arguments argnums (with the aux output, when has_aux)."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, v = gv(*args, **kwargs)
        return (g, v[1]) if has_aux else g
    return wrapper


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """(func(*primals), vjp_fn): vjp_fn(cotangents) gives the cotangents pulled back to each
    primal (a tuple)."""
    args, nums, nested = _prepare(primals, tuple(range(len(primals))))
    with enable_grad():
        out = func(*args)
        aux = None
        if has_aux:
            out, aux = out
    out_leaves, out_spec = tree_flatten(out)

    def vjp_fn(cotangents):
        if _vmap.has_batched((cotangents,), None):      # vmap(vjp_fn): one per element
            return _vmap.loop(vjp_fn, (cotangents,), {})
        cts, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("vjp_fn: the cotangents must have the structure of the output")
        flat = []
        for a in args:
            flat += tree_flatten(a)[0]
        with enable_grad():
            gs = _autograd_grad(out_leaves, flat, cts, retain_graph=True, create_graph=nested,
                                allow_unused=True)
        gs = [g if g is not None else _tl.zeros_like(x) for g, x in zip(gs, flat)]
        it = iter(gs)
        return tuple(tree_map(lambda _: next(it), a) for a in args)
    value = out if nested else tree_map(lambda t: t.detach() if isinstance(t, _tl.Tensor)
                                        else t, out)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def jacrev(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable[..., Any]:
    """A function returning the Jacobian of func with respect to the arguments argnums
    (tensors): for each tensor of func's output (a tensor or a structure of them) a tensor of
    shape output.shape + input.shape (a tuple of them for a tuple argnums), in the output's
    structure.

    The rows come from one batched backward: vmap over the basis of output cotangents e_i of
    grad(<func(x), e_i>), so func runs once on a batch of output-size copies (chunk_size of them
    at a time, when given) and one backward gives every row.  Where that cannot run (func reads
    values in Python, draws random numbers, or is itself a Jacobian transform), or inside
    another transform, it takes one reverse pass per output element.  The batched rows call
    func a second time (the first call gives the output's shape and aux): as with torch.func,
    func should have no side effects."""
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    def wrapper(*args):
        if _vmap.has_batched(args, None):                # inside vmap: one per element
            return _vmap.loop(wrapper, args, {})
        args_, nums, nested = _prepare(args, argnums)
        with enable_grad():
            out = func(*args_)
            aux = None
            if has_aux:
                out, aux = out
        leaves, spec = tree_flatten(out)
        for leaf in leaves:
            if not isinstance(leaf, _tl.Tensor):
                raise RuntimeError(f"jacrev(f): expected f's outputs to be Tensors, got "
                                   f"{type(leaf).__name__}")
            if not (leaf.is_floating_point() or leaf.is_complex()):
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or "
                                   f"complex Tensors, got Tensor with dtype {leaf.dtype}")
        inputs = [args_[n] for n in nums]
        batched = (not nested and _vmap.current() is None
                   and not getattr(func, "_jacobian_transform", False)
                   and all(isinstance(x, _tl.Tensor) for x in inputs))
        jacs = []
        for j, leaf in enumerate(leaves):
            jac = None
            if batched and leaf.numel() > 1 and not leaf.is_complex():
                try:
                    jac = _jacrev_batched(func, args, nums, has_aux, j, leaf, chunk_size)
                except Exception:      # (a Python read of values, randomness, ...): by rows
                    jac = None
            if jac is None:
                jac = _jacrev_by_rows(leaf, inputs, nested)
            jacs.append(jac[0] if isinstance(argnums, int) else jac)
        jac = tree_unflatten(jacs, spec)
        return (jac, aux) if has_aux else jac
    wrapper._jacobian_transform = True
    return wrapper


def _jacrev_batched(func, args, nums, has_aux, leaf_index, out, chunk_size):
    """The Jacobians of out, output leaf `leaf_index` of func(*args), with respect to
    args[nums] by vmap over the output basis of the gradient of <that leaf, e_i>: one batched
    forward and backward per chunk."""
    out_shape, m = tuple(out.shape), out.numel()

    def contracted(e, *a):
        y = func(*a)
        if has_aux:
            y = y[0]
        y = tree_flatten(y)[0][leaf_index]
        return (y * e).sum()

    per_row = grad(contracted, argnums=tuple(n + 1 for n in nums))
    in_dims = (0,) + (None,) * len(args)
    basis = _tl.eye(m, dtype=out.dtype, device=out.device).reshape((m,) + out_shape)
    step = m if not chunk_size else max(int(chunk_size), 1)
    parts = [vmap(per_row, in_dims=in_dims)(basis[i:i + step], *args) for i in range(0, m, step)]
    return tuple((parts[0][k] if len(parts) == 1 else _tl.cat([p[k] for p in parts]))
                 .reshape(out_shape + tuple(args[n].shape)) for k, n in enumerate(nums))


def _jacrev_by_rows(out, inputs, nested):
    """The Jacobians of out with respect to inputs, one reverse pass per output element."""
    with enable_grad():
        rows = [[] for _ in inputs]
        flat_out = out.reshape(-1)
        for i in range(flat_out.numel()):
            gs = _autograd_grad(flat_out[i], inputs, retain_graph=True, create_graph=nested,
                                allow_unused=True)
            for k, (g, x) in enumerate(zip(gs, inputs)):
                rows[k].append(g if g is not None else _tl.zeros_like(x))
    return tuple(_tl.stack(r).reshape(tuple(out.shape) + tuple(x.shape)) if r else
                 _tl.zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype)
                 for r, x in zip(rows, inputs))


_JVP = "jvp(f, primals, tangents)"


def _tensor_leaves(leaves, api, argname):
    if not leaves:
        raise RuntimeError(f"{api}: Expected {argname} to contain at least one Tensor.")
    for t in leaves:
        if not isinstance(t, _tl.Tensor):
            raise RuntimeError(f"{api}: Expected {argname} to only contain Tensors, got {type(t)}")


def _tensor_outputs(leaves, api):
    if not leaves or (len(leaves) == 1 and leaves[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got "
                           f"output = {leaves})")
    for o in leaves:
        if not isinstance(o, _tl.Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(o)}")


def _linearize(func, primals, has_aux, api):
    """Run func on differentiable copies of the primals (see _prepare) and linearize it:
    (flat outputs, their spec, the Linearization, aux, nested)."""
    args, _, nested = _prepare(primals, tuple(range(len(primals))))
    with enable_grad():
        out = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) "
                                   f"if has_aux is True")
            out, aux = out
        flat_out, out_spec = tree_flatten(out)
        _tensor_outputs(flat_out, api)
        flat_args = tree_flatten(args)[0]
        lin = Linearization(flat_out, flat_args)
    return flat_out, out_spec, lin, aux, nested


def jvp(func: Callable[..., Any], primals: tuple[Any, ...], tangents: tuple[Any, ...], *, strict: bool = False,
        has_aux: bool = False) -> tuple[Any, ...]:
    """(func(*primals), J tangents): the Jacobian-vector product of func at primals (a tuple,
    the arguments), tangents having primals' structure; with has_aux, func returns (output,
    aux) and aux comes third.  Exact, by the double-vjp trick (see the module docstring)."""
    if _vmap.has_batched((primals, tangents), None):    # inside vmap: one per element
        return _vmap.loop(lambda p, t: jvp(func, p, t, strict=strict, has_aux=has_aux),
                          (primals, tangents), {})
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to "
                           f"call f(*primals).")
    flat_primals, primals_spec = tree_flatten(primals)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, tangents "
                           f"also must be. Got primals with structure {primals_spec} and tangents "
                           f"with structure {tangents_spec}")
    _tensor_leaves(flat_primals, _JVP, "primals")
    _tensor_leaves(flat_tangents, _JVP, "tangents")
    flat_out, out_spec, lin, aux, nested = _linearize(func, primals, has_aux, _JVP)
    keep = nested or any(t.requires_grad for t in flat_tangents)
    with enable_grad():
        products = lin.jvp(flat_tangents, create_graph=keep, retain_graph=keep)
    if strict and any(p is None for p in products):
        raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent "
                           "of the inputs. This is not allowed with strict=True.")
    products = [_tl.zeros_like(o) if p is None else p for p, o in zip(products, flat_out)]
    outputs = flat_out if nested else [o.detach() for o in flat_out]
    result = (tree_unflatten(outputs, out_spec), tree_unflatten(products, out_spec))
    return result + (aux,) if has_aux else result


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """(func(*primals), jvp_fn): jvp_fn(*tangents) gives J tangents at primals, for any
    number of calls, from the graph kept by this one evaluation of func (tangents must match
    the primals in structure, shape, dtype and device)."""
    flat_out, out_spec, lin, _, nested = _linearize(func, primals, False, "linearize")
    flat_primals, primals_spec = tree_flatten(primals)
    meta = [(tuple(p.shape), p.device, p.dtype) for p in flat_primals]

    def jvp_fn(*tangents):
        flat_tangents, spec = tree_flatten(tangents)
        if spec != primals_spec:
            raise RuntimeError(f"Expected the tangents {spec} to have the same argspec as the "
                               f"primals {primals_spec}")
        for i, (t, (shape, device, dtype)) in enumerate(zip(flat_tangents, meta)):
            for what, got, want in (("shape", tuple(t.shape), shape), ("device", t.device, device),
                                    ("dtype", t.dtype, dtype)):
                if got != want:
                    raise RuntimeError(f"tangent:{i} with {what} {got} in flattened pytree doesn't "
                                       f"match the {what} {want} of the corresponding primal.")
        keep = nested or any(t.requires_grad for t in flat_tangents)
        with enable_grad():
            products = lin.jvp(flat_tangents, create_graph=keep, retain_graph=True)
        return tree_unflatten([_tl.zeros_like(o) if p is None else p for p, o in zip(products, flat_out)],
                              out_spec)

    outputs = flat_out if nested else [o.detach() for o in flat_out]
    return tree_unflatten(outputs, out_spec), jvp_fn


def jacfwd(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable[..., Any]:
    """A function returning the Jacobian of func with respect to the arguments argnums, one
    column per input element (J e_k, by the double-vjp trick: cheap when the inputs are few
    and the outputs many).  Output leaves map to output.shape + input.shape tensors (a tuple
    of them for a tuple argnums), in func's output structure."""
    def wrapper(*args):
        if _vmap.has_batched(args, None):                # inside vmap: one per element
            return _vmap.loop(wrapper, args, {})
        args_, nums, nested = _prepare(args, argnums)
        with enable_grad():
            out = func(*args_)
            aux = None
            if has_aux:
                out, aux = out
            flat_out, out_spec = tree_flatten(out)
            inputs = [args_[n] for n in nums]
            jacs = Linearization(flat_out, inputs).jacobian(create_graph=nested)
        jac = tree_unflatten([j[0] if isinstance(argnums, int) else j for j in jacs], out_spec)
        return (jac, aux) if has_aux else jac
    wrapper._jacobian_transform = True
    return wrapper


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Hessian of func: the Jacobian (jacrev) of its Jacobian, shape output.shape +
    input.shape + input.shape.  For a one-element output the inner Jacobian is grad, so the
    outer one takes its rows from one batched backward (jacrev's vmap path) instead of one
    reverse pass per row."""
    first = _first_derivative(func, argnums)
    return jacrev(first, argnums)


def _first_derivative(func, argnums):
    """jacrev(func, argnums) as a function, computed by grad when func's output is one element
    (grad, unlike jacrev, runs batched inside vmap)."""
    jac = jacrev(func, argnums)
    gv = grad_and_value(func, argnums)

    def first(*args):
        try:
            g, value = gv(*args)
        except _NotScalarOutput:
            return jac(*args)
        lead = tuple(value.shape)
        return g if not lead else tree_map(lambda t: t.reshape(lead + tuple(t.shape)), g)
    return first


def vmap(func: Callable[..., Any], in_dims: int | tuple[Any, ...] | None = 0, out_dims: int | tuple[int, ...] = 0,
         randomness: str = "error", *, chunk_size: int | None = None) -> Callable[..., Any]:
    """func mapped over a batch dimension of its inputs (in_dims: one per argument, a
    structure matching an argument's, or one for all; None leaves an argument unbatched): the
    results stacked along out_dims.  func runs once on the whole batch, each operation by its
    batching rule (torchlite/_vmap/rules.py); an operation without one runs once per element
    (see the module docstring).  randomness: 'error' (a random op raises), 'different' (each
    element its own draw) or 'same' (one draw for all); chunk_size: at most that many
    elements at a time."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _vmap.run(func, args, kwargs, in_dims, out_dims, randomness, chunk_size)
    return wrapper


def functional_call(module: Module,
                    parameter_and_buffer_dicts: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
                    args: Any = (), kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """module(*args, **kwargs) with its parameters and buffers replaced, for this call only,
    by the tensors of the dict(s) (keyed by state_dict name)."""
    dicts = parameter_and_buffer_dicts if isinstance(parameter_and_buffer_dicts, (tuple, list)) \
        else (parameter_and_buffer_dicts,)
    merged = {}
    for d in dicts:
        for k, v in d.items():
            if k in merged:
                raise ValueError(f"{k} appeared in multiple dictionaries; behavior of "
                                 f"functional call is ambiguous")
            merged[k] = v
    if tie_weights:
        merged = _with_tied_names(module, merged)
    known = dict(module.named_parameters()) | dict(module.named_buffers())
    if strict:
        missing = sorted(set(known) - set(merged))
        unexpected = sorted(set(merged) - set(known))
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}: "
                               f"missing {missing}, unexpected {unexpected}")
    saved = []
    try:
        for name, value in merged.items():
            *path, attr = name.split(".")
            owner = module.get_submodule(".".join(path)) if path else module
            table = owner._parameters if attr in owner._parameters else \
                owner._buffers if attr in owner._buffers else None
            if table is None:
                raise AttributeError(f"{type(owner).__name__} has no parameter or buffer "
                                     f"{attr!r}")
            saved.append((table, attr, table[attr]))
            table[attr] = value
        args = args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, attr, old in reversed(saved):
            table[attr] = old


def _with_tied_names(module, merged):
    """merged plus, for each name given, every other name of the same tensor in the module
    (tied weights, e.g. an embedding shared with the output layer), as PyTorch's
    tie_weights=True does; giving tied names different values is an error."""
    names_of = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        if t is not None:
            names_of.setdefault(id(t), []).append(name)
    out = dict(merged)
    for names in names_of.values():
        if len(names) < 2:
            continue
        given = [n for n in names if n in merged]
        if not given:
            continue
        value = merged[given[0]]
        for n in given[1:]:
            if merged[n] is not value:
                raise ValueError(f"functional_call got multiple values for keys {given}, which "
                                 f"are tied. Consider using tie_weights=False")
        for n in names:
            out.setdefault(n, value)
    return out


def stack_module_state(models: Iterable[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """({name: the models' parameters stacked}, {name: their buffers stacked}): the state of
    an ensemble for vmap over functional_call."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    params = {k: _tl.stack([dict(m.named_parameters())[k].detach() for m in models])
              .requires_grad_() for k, _ in models[0].named_parameters()}
    buffers = {k: _tl.stack([dict(m.named_buffers())[k] for m in models])
               for k, _ in models[0].named_buffers()}
    return params, buffers
