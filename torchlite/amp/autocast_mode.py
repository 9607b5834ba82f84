"""autocast: mixed precision with PyTorch's API and policy (https://pytorch.org/docs/stable/amp.html).

Inside ``autocast(device_type)`` the ops on the "lower precision" list cast their floating inputs
on that device type to the autocast dtype (float16 for 'cuda', bfloat16 for 'cpu' by default),
the ops on the "float32" list cast them to float32, the "promote" ops cast them to the widest
floating dtype among them, and every other op runs in its inputs' dtypes.  float64 tensors,
integer tensors and tensors on another device type are never cast.

How: each listed op checks autocast's thread-local state at its entry (torchlite/_autocast_state.py)
and, while a region is open, hands its call to _run below, which casts the inputs by the op's
policy and runs the op with autocast off for the ops it calls (PyTorch excludes the autocast
dispatch key the same way), so a fused op's own internals keep the dtypes it chose.  The casts
are Tensor.to calls, so gradients flow back through them in the parameters' dtype.

The state (enabled flag, dtype per device type, cache flag) is thread-local, as in PyTorch."""
from __future__ import annotations

import functools
import inspect
import threading
import warnings
from typing import TYPE_CHECKING

from .. import _dtype as D
from .. import _autocast_state
from .._tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .._dtype import dtype

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "set_autocast_enabled",
           "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "custom_fwd", "custom_bwd",
           "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype",
           "set_autocast_cpu_dtype", "get_autocast_gpu_dtype", "set_autocast_gpu_dtype",
           "autocast_increment_nesting", "autocast_decrement_nesting"]

_DEVICE_TYPES = ("cpu", "cuda")
_SUPPORTED = {"cpu": (D.bfloat16, D.float16), "cuda": (D.float16, D.bfloat16)}
_CAST_ELIGIBLE = (D.float16, D.bfloat16, D.float32)     # float64 is never autocast


_state = _autocast_state.state


# ---- the query/set functions (torch.is_autocast_enabled, torch.get_autocast_dtype, ...) -----
def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """True for the device types autocast supports ('cpu' and 'cuda')."""
    return device_type in _DEVICE_TYPES


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for `device_type` in this thread."""
    return _state.enabled[_check_device_type(device_type)]


def set_autocast_enabled(device_type: str | bool, enabled: bool | None = None) -> None:
    """set_autocast_enabled(device_type, enabled); the older one-argument form
    set_autocast_enabled(enabled) means 'cuda' (deprecated in PyTorch)."""
    if enabled is None and isinstance(device_type, bool):
        _deprecated("set_autocast_enabled(enabled)", "set_autocast_enabled('cuda', enabled)")
        device_type, enabled = "cuda", device_type
    if enabled:
        _install()
    _state.enabled[_check_device_type(device_type)] = bool(enabled)
    _refresh_active()


_POLICY_OF = {}                 # listed op (the function object) -> {device type: policy}
_install_lock = threading.Lock()


def _install():
    """Read the op lists and register _run as the ops' autocast entry, the first time
    autocast is switched on."""
    if _POLICY_OF:
        return
    with _install_lock:
        if not _POLICY_OF:
            from . import _lists
            table = _lists.policies_by_op()
            _autocast_state.set_handler(_run)
            _POLICY_OF.update(table)


def get_autocast_dtype(device_type: str) -> dtype:
    """The dtype autocast uses for `device_type`'s lower-precision ops in this thread."""
    return _state.dtype[_check_device_type(device_type)]


def set_autocast_dtype(device_type: str, dtype: dtype) -> None:
    _state.dtype[_check_device_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    _state.cache.clear()


_refresh_active = _autocast_state.refresh


# ---- the context manager / decorator --------------------------------------------------------
class autocast:
    """Context manager and decorator: run ops in mixed precision on `device_type`.

    autocast(device_type, dtype=None, enabled=True, cache_enabled=None): dtype defaults to the
    thread's current autocast dtype for that device type (float16 for 'cuda', bfloat16 for
    'cpu'); cache_enabled (default: the current setting, initially True) keeps the cast copy of
    each leaf tensor that requires grad (the weights) for the whole region instead of casting it
    again at every use.  Regions nest; autocast(..., enabled=False) turns it off inside."""

    def __init__(self, device_type: str, dtype: dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        self.device = _check_device_type(device_type)
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None \
            else bool(cache_enabled)
        self._enabled = bool(enabled)
        if self._enabled and self.fast_dtype not in _SUPPORTED[self.device]:
            name = self.device.upper()
            allowed = " and ".join(str(d) for d in _SUPPORTED[self.device])
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                          f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                          f"{allowed} currently.")
            self._enabled = False
        if self._enabled and self.device == "cuda":
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. "
                              "Disabling")
                self._enabled = False
        self._saved = []

    def __enter__(self) -> autocast:
        if self._enabled:
            _install()
        s = _state
        self._saved.append((s.enabled[self.device], s.dtype[self.device], s.cache_enabled))
        s.enabled[self.device] = self._enabled
        s.dtype[self.device] = self.fast_dtype
        s.cache_enabled = self._cache_enabled
        s.nesting += 1
        _refresh_active()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        s = _state
        s.enabled[self.device], s.dtype[self.device], s.cache_enabled = self._saved.pop()
        s.nesting -= 1
        if s.nesting == 0:
            s.cache.clear()
        _refresh_active()
        return False

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)
        return decorated


# ---- custom autograd Functions (torch.amp.custom_fwd / custom_bwd) --------------------------
def custom_fwd(fwd: Callable[..., Any] | None = None, *, device_type: str,
               cast_inputs: dtype | None = None) -> Callable[..., Any]:
    """Decorator for a custom Function's forward: with cast_inputs, inside an enabled autocast
    region the forward runs with autocast off and its floating inputs cast to cast_inputs."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorated(*args, **kwargs):
        if cast_inputs is None or not _state.enabled[device_type]:
            return fwd(*args, **kwargs)
        args = [_cast_tree(a, {device_type: cast_inputs}) for a in args]
        kwargs = {k: _cast_tree(v, {device_type: cast_inputs}) for k, v in kwargs.items()}
        with autocast(device_type, enabled=False):
            return fwd(*args, **kwargs)
    return decorated


def custom_bwd(bwd: Callable[..., Any] | None = None, *, device_type: str) -> Callable[..., Any]:
    """Decorator for a custom Function's backward (kept for API compatibility: torchlite runs
    backward with autocast off, as PyTorch recommends)."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd


# ---- casting ---------------------------------------------------------------------------------
def _eligible(t):
    return (type(t) is Tensor or isinstance(t, Tensor)) and t.dtype in _CAST_ELIGIBLE \
        and _state.enabled.get(t.device.type, False)


def _cast(t, dtype):
    """t in dtype (differentiably); the copy of a leaf weight is cached for the region."""
    if t.dtype == dtype:
        return t
    cacheable = _state.cache_enabled and t.requires_grad and t.grad_fn is None
    if cacheable:
        hit = _state.cache.get((id(t), dtype))
        if hit is not None and hit[0] is t:
            return hit[1]
    out = t.to(dtype)
    if cacheable:
        _state.cache[(id(t), dtype)] = (t, out)
    return out


def _cast_tree(x, targets):
    """x with each eligible tensor (also inside lists/tuples) cast to targets[its device type]."""
    if isinstance(x, Tensor):
        if _eligible(x):
            dt = targets.get(x.device.type)
            if dt is not None:
                return _cast(x, dt)
        return x
    if isinstance(x, (list, tuple)) and x and any(isinstance(e, Tensor) for e in x):
        return type(x)(_cast_tree(e, targets) for e in x)
    return x


def _tensors(args, kwargs):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            for e in a:
                if isinstance(e, Tensor):
                    yield e
    for v in kwargs.values():
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            for e in v:
                if isinstance(e, Tensor):
                    yield e


def _device_type(args, kwargs):
    for t in _tensors(args, kwargs):
        return t.device.type
    return None


def _lower_targets(args, kwargs):
    return {dt: _state.dtype[dt] for dt in _DEVICE_TYPES}


def _fp32_targets(args, kwargs):
    return {"cpu": D.float32, "cuda": D.float32}


def _widest_targets(args, kwargs):
    widest = None
    for t in _tensors(args, kwargs):
        if _eligible(t):
            widest = t.dtype if widest is None else D.promote_types(widest, t.dtype)
    return {} if widest is None else {"cpu": widest, "cuda": widest}


def _fp32_unless_dtype(args, kwargs):
    # sum, prod, softmax, cumsum, ...: an explicit dtype= wins over autocast's float32
    return {} if kwargs.get("dtype") is not None else _fp32_targets(args, kwargs)


def _no_targets(args, kwargs):
    return {}


def _banned(name):
    def targets(args, kwargs):
        raise RuntimeError(
            f"torchlite.nn.functional.{name} and torchlite.nn.BCELoss are unsafe to autocast.\n"
            "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
            "In this case, combine the two layers using "
            "torchlite.nn.functional.binary_cross_entropy_with_logits\n"
            "or torchlite.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and "
            "BCEWithLogits are\nsafe to autocast.")
    return targets


_POLICIES = {"lower": _lower_targets, "fp32": _fp32_targets, "fp32_opt": _fp32_unless_dtype,
             "promote": _widest_targets, "native": _no_targets}


_CALLS = {}                     # op -> how to call it again from its parameters


def _call_plan(op):
    """[(name, kind)] for op's parameters: 'pos' (passed by position: positional-only, and
    the ones before a *args), 'var' (the *args), 'kw', 'varkw'.  The rest go by keyword, so a
    policy sees dtype= however the caller passed it."""
    plan = _CALLS.get(op)
    if plan is None:
        params = list(inspect.signature(op).parameters.values())
        has_var = any(p.kind is p.VAR_POSITIONAL for p in params)
        plan = []
        for p in params:
            if p.kind is p.POSITIONAL_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and has_var):
                plan.append((p.name, "pos"))
            elif p.kind is p.VAR_POSITIONAL:
                plan.append((p.name, "var"))
            elif p.kind is p.VAR_KEYWORD:
                plan.append((p.name, "varkw"))
            else:
                plan.append((p.name, "kw"))
        _CALLS[op] = plan
    return plan


def _run(op, params):
    """A listed op called inside an autocast region: cast its floating inputs as its policy
    says for the device type of its tensors, then run it with autocast off below it."""
    # an op made from a table shares its entry with its table's listed ops (elementwise's
    # unary functions): unlisted, it runs as it is, with autocast off below it like any op
    policy_by_device = _POLICY_OF.get(op, {})
    args, kwargs = [], {}
    for name, kind in _call_plan(op):
        v = params[name]
        if kind == "pos":
            args.append(v)
        elif kind == "var":
            args.extend(v)
        elif kind == "varkw":
            kwargs.update(v)
        else:
            kwargs[name] = v
    state = _state
    dev = _device_type(args, kwargs)
    policy = policy_by_device.get(dev)
    if policy is not None and state.enabled[dev]:
        targets = policy(args, kwargs)
        if targets:
            args = [_cast_tree(a, targets) for a in args]
            kwargs = {k: _cast_tree(v, targets) for k, v in kwargs.items()}
    state.active = False
    try:
        return op(*args, **kwargs)
    finally:
        _refresh_active()


# ---- the older per-device spellings PyTorch keeps at its top level (deprecated there) ---------
def _deprecated(old, new):
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> dtype:
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: dtype) -> None:
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> dtype:
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype: dtype) -> None:
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def autocast_increment_nesting() -> int:
    """Open one more autocast level on this thread (what autocast.__enter__ does); returns the
    new depth."""
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    """Close one autocast level; the cast cache is cleared when the last one closes.  Returns
    the new depth."""
    _state.nesting = max(_state.nesting - 1, 0)
    if _state.nesting == 0:
        _state.cache.clear()
    return _state.nesting
