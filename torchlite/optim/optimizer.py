"""The Optimizer base class (PyTorch's torch.optim.Optimizer semantics).

An optimizer holds `param_groups` (a list of dicts: the tensors under "params" plus that
group's options, missing ones filled from `defaults`) and `state` (a defaultdict keyed by
parameter tensor).  A concrete optimizer implements `_update_group(group)`, which applies one
update to the parameters of a group that have a gradient; `step()` evaluates the closure with
grad enabled, then runs `_update_group` for every group with grad recording off, or on for an
optimizer made with differentiable=True (the update is then recorded into the parameters,
which must not be leaves, and the state, so autograd can differentiate through steps, as in
PyTorch: the update functions then avoid in-place operations on values autograd keeps).
Complex parameters are updated as their real views (view_as_real), as PyTorch does.  Subclasses
written in PyTorch's style (overriding `step` themselves) work too: every `step` defined on a
subclass is wrapped so the step pre/post hooks run around it."""
from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain
from typing import TYPE_CHECKING

from .._tensor import Tensor
from .._ops.creation import tensor as _scalar_tensor, zeros_like
from .._ops.complex import view_as_real as _view_as_real_op
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.graph import RemovableHandle

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks a default with no value: every param group must then give that option."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_step_pre_hooks = []
_global_step_post_hooks = []


def register_optimizer_step_pre_hook(
        hook: Callable[[Optimizer, tuple[Any, ...], dict[str, Any]], Any]) -> RemovableHandle:
    """Run hook(optimizer, args, kwargs) before every optimizer's step (it may return new
    (args, kwargs)).  Returns a handle whose remove() unregisters it."""
    _global_step_pre_hooks.append(hook)
    return RemovableHandle(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(
        hook: Callable[[Optimizer, tuple[Any, ...], dict[str, Any]], Any]) -> RemovableHandle:
    """Run hook(optimizer, args, kwargs) after every optimizer's step."""
    _global_step_post_hooks.append(hook)
    return RemovableHandle(_global_step_post_hooks, hook)


def _typename(obj):
    """torch.typename: 'torchlite.FloatTensor' for a tensor, else the qualified type name."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in ("", "builtins") else f"{module}.{cls.__qualname__}"


def _to_scalar(x):
    """A Python number for a number or a one-element tensor (lr may be a Tensor)."""
    return x.item() if isinstance(x, Tensor) else x


def _squeeze_hyperparameter(x):
    """A hyperparameter as PyTorch keeps it in a param group (its optimizer._to_scalar): a
    one-element tensor squeezed to 0-d, anything else as given."""
    return x.squeeze() if isinstance(x, Tensor) and x.dim() != 0 else x


def _new_step_count():
    """The per-parameter step counter: a float32 0-d tensor on the CPU, as PyTorch keeps it."""
    return _scalar_tensor(0.0)


def _check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_nonneg(value, what):
    """PyTorch's "Invalid <what>: <value>" for a negative option."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def _check_betas(betas):
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def _check_adam_options(lr, eps, betas, weight_decay):
    """The option checks the Adam family (Adam, Adamax, NAdam, RAdam) shares, in PyTorch's
    order (so the same bad option is reported first)."""
    _check_lr(lr)
    _check_nonneg(eps, "epsilon value")
    _check_betas(betas)
    _check_nonneg(weight_decay, "weight_decay value")


def _apply_weight_decay(param, grad, lr, weight_decay, decoupled):
    """Weight decay as Adam, NAdam and RAdam apply it: decoupled, the parameter shrinks
    (p <- p * (1 - lr * wd)); otherwise the decay enters the gradient (g <- g + wd * p).
    Returns the gradient the update goes on with."""
    if weight_decay != 0:
        if decoupled:
            param.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(param, alpha=weight_decay)
    return grad


def _update_moments_(exp_avg, exp_avg_sq, grad, beta1, beta2):
    """Adam's running moment estimates, in place: m <- lerp(m, g, 1 - beta1) and
    v <- beta2 * v + (1 - beta2) * g * g."""
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)


def _check_impl_flags(differentiable, fused, foreach):
    """foreach, fused (and capturable) choose an implementation in PyTorch, all with the same
    update rule: here every choice runs the one implementation (the fused kernels where they
    apply).  differentiable=True runs the step with grad recording on, so autograd can
    differentiate through it; the fused kernels then step aside."""
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _refuse_tensor_for_foreach(value, what, foreach, capturable):
    """Adam and AdamW refuse a Tensor lr or beta for PyTorch's foreach implementation unless
    capturable (its foreach kernels take numbers there); the same configuration is refused
    here so that a script behaves alike in both."""
    if isinstance(value, Tensor) and foreach and not capturable:
        raise ValueError(f"{what} as a Tensor is not supported for capturable=False and "
                         "foreach=True")


def _view_as_real(*tensors):
    """The real view of each complex tensor (the real optimizers run on (real, imag) pairs, as
    PyTorch's do); real tensors and None pass through."""
    return [t if t is None or not t.is_complex() else _view_as_real_op(t) for t in tensors]


def _run_step_with_hooks(step):
    """Wrap a step method: the step pre hooks (global, then this optimizer's) run before it
    and may replace its arguments, the post hooks run after it.  It also records that the
    optimizer stepped (for the lr schedulers' order warning).  A step that calls its parent's
    step (super().step()) runs the hooks once."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        self._opt_called = True
        if self._in_step or not (_global_step_pre_hooks or self._step_pre_hooks or
                                 _global_step_post_hooks or self._step_post_hooks):
            return step(self, *args, **kwargs)
        self._in_step = True
        try:
            for hook in chain(_global_step_pre_hooks, self._step_pre_hooks):
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(f"{step} must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            out = step(self, *args, **kwargs)
            for hook in chain(self._step_post_hooks, _global_step_post_hooks):
                hook(self, args, kwargs)
            return out
        finally:
            self._in_step = False
    wrapper._hooked = True
    return wrapper


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of tensors, of (name, tensor) pairs, or of dicts (parameter
            groups: "params" plus per-group options).
        defaults: the default value of every option (used where a group gives none).
    """

    _in_step = False        # class defaults: instances set them on first step
    _opt_called = False
    # the options a group saved by an older version may lack, and their values: a subclass
    # lists its own; __setstate__ (unpickling, load_state_dict) fills them in
    _late_option_defaults = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _run_step_with_hooks(step)

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._init_hook_lists()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def _init_hook_lists(self):
        self._step_pre_hooks = []
        self._step_post_hooks = []
        self._state_dict_pre_hooks = []
        self._state_dict_post_hooks = []
        self._load_state_dict_pre_hooks = []
        self._load_state_dict_post_hooks = []

    # -- pickling ---------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "_step_pre_hooks" not in self.__dict__:
            self._init_hook_lists()
        self.defaults.setdefault("differentiable", False)
        if self._late_option_defaults:
            self._fill_group_defaults()

    def _fill_group_defaults(self):
        """After unpickling/loading an older state: give every group the options of
        _late_option_defaults it lacks, and make plain-number step counters tensors again."""
        for group in self.param_groups:
            for key, value in self._late_option_defaults.items():
                group.setdefault(key, value)
        for state in self.state.values():
            step = state.get("step") if isinstance(state, dict) else None
            if step is not None and not isinstance(step, Tensor):
                state["step"] = _scalar_tensor(float(step))

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            text += "".join(f"    {key}: {group[key]}\n"
                            for key in sorted(group) if key != "params")
        return text + ")"

    # -- parameter groups -------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (a dict with "params" and optional options) to optimize,
        e.g. layers unfrozen during fine-tuning.  A parameter may belong to one group only."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        self._split_param_names(param_group, params)
        self._check_params(param_group["params"])
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        self._check_disjoint(param_group)
        self.param_groups.append(param_group)

    @staticmethod
    def _split_param_names(param_group, params):
        """Params given as (name, tensor) pairs (named_parameters()) keep their names under
        "param_names"; either all are named or none."""
        names = [p[0] for p in params if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            param_group["param_names"] = names

    def _check_params(self, params):
        differentiable = self.defaults.get("differentiable", None)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not differentiable and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

    def _check_disjoint(self, param_group):
        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")

    # -- gradients and steps ----------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors: to None (the default), or to zeros
        (detached from any graph) with set_to_none=False."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Perform one optimization step; closure (optional for most optimizers) re-evaluates
        the model and returns the loss, which step returns."""
        loss = None
        if closure is not None:
            loss = _call_with_grad(closure)
        was_enabled = _grad_state.enabled
        # differentiable=True records the update, so autograd can differentiate through it
        _grad_state.enabled = bool(self.defaults.get("differentiable", False))
        try:
            for group in self.param_groups:
                self._update_group(group)
        finally:
            _grad_state.enabled = was_enabled
        return loss

    def _update_group(self, group: dict[str, Any]) -> None:
        """Apply one update to the parameters of `group` that have a gradient (subclasses)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    @staticmethod
    def _params_with_grad(group):
        """The parameters of a group that have a gradient, and those gradients."""
        params, grads = [], []
        for p in group["params"]:
            g = p.grad
            if g is not None:
                params.append(p)
                grads.append(g)
        return params, grads

    def _collect_state(self, params, buffers, scalars=()):
        """Per-parameter state as lists: [steps, one list per scalar, one per buffer].  An
        empty state is initialised first: the step counter, each (name, value) of scalars as
        a float32 0-d tensor, and each named buffer as zeros like the parameter."""
        state_of = self.state
        lists = [[] for _ in range(1 + len(scalars) + len(buffers))]
        names = ("step",) + tuple(name for name, _ in scalars) + tuple(buffers)
        for p in params:
            state = state_of[p]
            if len(state) == 0:
                state["step"] = _new_step_count()
                for name, value in scalars:
                    state[name] = _scalar_tensor(float(value))
                for name in buffers:
                    state[name] = zeros_like(p)
            for lst, name in zip(lists, names):
                lst.append(state[name])
        return lists

    # -- hooks ------------------------------------------------------------------------------
    @staticmethod
    def _add_hook(hooks, hook, prepend=False):
        if prepend:
            hooks.insert(0, hook)
        else:
            hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def register_step_pre_hook(self,
                               hook: Callable[[Optimizer, tuple[Any, ...], dict[str, Any]], Any]) -> RemovableHandle:
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), run before step."""
        return self._add_hook(self._step_pre_hooks, hook)

    def register_step_post_hook(self,
                                hook: Callable[[Optimizer, tuple[Any, ...], dict[str, Any]], Any]) -> RemovableHandle:
        """hook(optimizer, args, kwargs) -> None, run after step."""
        return self._add_hook(self._step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable[[Optimizer], None],
                                     prepend: bool = False) -> RemovableHandle:
        """hook(optimizer), run before state_dict() builds its result."""
        return self._add_hook(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self,
                                      hook: Callable[[Optimizer, dict[str, Any]], dict[str, Any] | None],
                                      prepend: bool = False) -> RemovableHandle:
        """hook(optimizer, state_dict) -> None or a replacement state dict."""
        return self._add_hook(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self,
                                          hook: Callable[[Optimizer, dict[str, Any]], dict[str, Any] | None],
                                          prepend: bool = False) -> RemovableHandle:
        """hook(optimizer, state_dict) -> None or a replacement, run before loading."""
        return self._add_hook(self._load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable[[Optimizer], None],
                                           prepend: bool = False) -> RemovableHandle:
        """hook(optimizer), run after load_state_dict()."""
        return self._add_hook(self._load_state_dict_post_hooks, hook, prepend)

    # -- saving and loading -----------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """{"state": {index: per-parameter state}, "param_groups": [group options with
        "params" as indices]}: parameters are numbered in group order, as in PyTorch.  The
        per-parameter state dicts and their tensors are the optimizer's own (not copies)."""
        for hook in self._state_dict_pre_hooks:
            hook(self)
        index_of = {}
        packed_groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            start = len(index_of)
            for i, p in enumerate(group["params"], start):
                index_of.setdefault(id(p), i)
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            packed_groups.append(packed)
        packed_state = {(index_of[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": packed_groups}
        for hook in self._state_dict_post_hooks:
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load what state_dict() returned (from an optimizer with groups of the same sizes).
        Floating state tensors are cast to their parameter's dtype, except "step"."""
        state_dict = state_dict.copy()
        for hook in self._load_state_dict_pre_hooks:
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        param_of = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                            chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in param_of:
                state[param_of[key]] = _cast_state(param_of[key], value)
            else:
                state[key] = value
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for hook in self._load_state_dict_post_hooks:
            hook(self)


Optimizer.step = _run_step_with_hooks(Optimizer.step)


def _cast_state(param, value, key=None):
    """A loaded state value with its tensors moved to param's device and cast to a floating
    param's dtype (the "step" counter keeps its own dtype and stays on the CPU; .to returns
    the tensor itself when nothing changes, as in PyTorch); containers are rebuilt."""
    if isinstance(value, Tensor):
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(device=param.device, dtype=param.dtype)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value


def _call_with_grad(closure):
    """closure() with grad recording on (step runs with it off)."""
    was_enabled = _grad_state.enabled
    _grad_state.enabled = True
    try:
        return closure()
    finally:
        _grad_state.enabled = was_enabled
