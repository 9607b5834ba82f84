"""nn.Module: the base class of every layer and model, with PyTorch's semantics.

A Module keeps its state in three ordered dicts: ``_parameters`` (Parameters), ``_buffers``
(Tensors that are state but not parameters, e.g. running statistics) and ``_modules``
(sub-modules).  Assigning a Parameter or a Module as an attribute registers it there;
``__getattr__`` finds it again.  Everything that walks a model (parameters(), state_dict(),
to(), train(), repr, ...) walks these dicts, recursively through ``_modules``."""
from __future__ import annotations

import functools
import itertools
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter, Buffer, is_lazy

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from ..._device import device
    from ..._dtype import dtype

# torch.nn exports only Module from here; the global hook functions stay reachable as
# torchlite.nn.modules.module.register_module_*_hook, as in PyTorch
__all__ = ["Module"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: the keys it expected but did not get, and the keys it
    got but did not expect."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class RemovableHandle:
    """What a register_*_hook method returns: remove() unregisters the hook (also on leaving
    a ``with`` block).  The hooks live in an ordered dict keyed by the handle's id; the handle
    refers to it weakly, so it does not keep a deleted module's hooks alive."""

    next_id = 0

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if extra_dict is None:
            extra_dict = ()
        elif isinstance(extra_dict, dict):
            extra_dict = (extra_dict,)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        hooks, self.id, extras = state
        # a handle whose dict is gone gets a dead reference (remove() then does nothing)
        self.hooks_dict_ref = weakref.ref(hooks if hooks is not None else OrderedDict())
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


# ---- hooks shared by every module (torch.nn.modules.module.register_module_*_hook) ------------
_global_forward_pre_hooks = OrderedDict()
_global_forward_pre_hooks_with_kwargs = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
_global_backward_hooks = OrderedDict()
_global_backward_pre_hooks = OrderedDict()


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, args) runs before every module's forward (before the module's own hooks)."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook: Callable[..., Any], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """hook(module, args, output) runs after every module's forward (before its own hooks)."""
    handle = RemovableHandle(_global_forward_hooks, extra_dict=[
        _global_forward_hooks_with_kwargs, _global_forward_hooks_always_called])
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, grad_input, grad_output) runs for every module's backward."""
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, grad_output) runs before every module's backward."""
    handle = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    return handle


def _any_global_hook():
    return bool(_global_forward_pre_hooks or _global_forward_hooks or _global_backward_hooks
                or _global_backward_pre_hooks)


# ---- repr helpers ---------------------------------------------------------------------------
def _addindent(text, spaces):
    """Indent every line of text but the first (blank lines stay empty), as nested reprs do."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return "\n".join([lines[0]] + [pad + ln if ln.strip() else "" for ln in lines[1:]])


def _typename(obj):
    if isinstance(obj, Tensor):
        return obj.type()
    t = type(obj)
    module = t.__module__
    if module in ("builtins", "__builtin__", None):
        return t.__qualname__
    return module + "." + t.__qualname__


def _name_the_layer(module, err):
    """Prefix an error raised inside one of torchlite's own layers with that layer (the
    innermost one), so "mat1 and mat2 shapes cannot be multiplied (64x100 and 784x512)" says
    which Linear it came from.  Errors of user-defined modules are left as they are."""
    if getattr(err, "_torchlite_layer", False) or not err.args or not isinstance(err.args[0], str):
        return
    cls = type(module)
    if not cls.__module__.startswith("torchlite.nn.") or cls.__name__ in _CONTAINERS:
        return
    try:
        head = f"{cls.__name__}({module.extra_repr()})"
    except Exception:       # noqa: BLE001  (a broken extra_repr must not hide the error)
        head = cls.__name__
    err.args = (f"{head}: {err.args[0]}",) + err.args[1:]
    err._torchlite_layer = True


_CONTAINERS = {"Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"}


def _forward_unimplemented(self, *input: Any) -> Any:
    """Module.forward until a subclass defines it."""
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" '
                              f'function')


# Bumped by every change of a module's attributes, parameters, buffers or children (its
# __setattr__/__delattr__ and its _TrackedDicts): the compiler's guards skip walking a module
# tree when it has not moved since they last did (torchlite/compiler/_compile.py, _world).
_epoch = [0]


class _TrackedDict(dict):
    """A module's _parameters, _buffers or _modules: a dict whose every change bumps _epoch
    (code that edits these dicts directly, as pruning and parametrizations do, is seen too)."""

    __slots__ = ()

    def __setitem__(self, key, value):
        _epoch[0] += 1
        dict.__setitem__(self, key, value)

    def __delitem__(self, key):
        _epoch[0] += 1
        dict.__delitem__(self, key)

    def pop(self, *args):
        _epoch[0] += 1
        return dict.pop(self, *args)

    def popitem(self):
        _epoch[0] += 1
        return dict.popitem(self)

    def clear(self):
        _epoch[0] += 1
        dict.clear(self)

    def update(self, *args, **kwargs):
        _epoch[0] += 1
        dict.update(self, *args, **kwargs)

    def setdefault(self, key, default=None):
        _epoch[0] += 1
        return dict.setdefault(self, key, default)

    def __ior__(self, other):
        _epoch[0] += 1
        dict.update(self, other)
        return self

    def __reduce_ex__(self, protocol):
        # pickled and deep-copied as a plain dict (a checkpoint names no private class);
        # Module.__setstate__ makes it a tracked one again
        return (dict, (dict(self),))


def _tracked(d):
    return d if type(d) is _TrackedDict else _TrackedDict(d)


class Module:
    """Base class for all neural network modules; subclass it and define forward().

    >>> import torchlite.nn as nn
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x)
    >>> [name for name, _ in Net().named_parameters()]
    ['fc.weight', 'fc.bias']
    """

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False
    forward = _forward_unimplemented

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs and not self.call_super_init:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if args and not self.call_super_init:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        # object.__setattr__: these are plain attributes, not registrations
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", _TrackedDict())
        setattr_(self, "_buffers", _TrackedDict())
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_backward_pre_hooks", OrderedDict())
        setattr_(self, "_backward_hooks", OrderedDict())
        setattr_(self, "_is_full_backward_hook", None)
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_forward_hooks_always_called", OrderedDict())
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_state_dict_hooks", OrderedDict())
        setattr_(self, "_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_post_hooks", OrderedDict())
        setattr_(self, "_modules", _TrackedDict())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    # ---- registration ------------------------------------------------------------------------
    def _check_new_name(self, name, kind, store):
        """The checks register_buffer/register_parameter/add_module share (PyTorch's order and
        exception types)."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f"{kind} name can't contain \".\"")
        if name == "":
            raise KeyError(f"{kind} name can't be empty string \"\"")
        if hasattr(self, name) and name not in store:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not a parameter (e.g. BatchNorm's running_mean).  A
        persistent buffer is part of state_dict(); a None buffer is skipped by to(), state_dict
        and friends."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_new_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            f"(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (a Parameter, or None for an absent one such as a disabled bias)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_new_name(name, "parameter", self._parameters)
        if param is not None:
            if not isinstance(param, Parameter):
                raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                                f"(torch.nn.Parameter or None required)")
            if param.grad_fn is not None:
                raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                                 f"parameters must be created explicitly. To express '{name}' as a "
                                 f"function of another Tensor, compute the value in the forward() "
                                 f"method.")
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module (or None), reachable as the attribute `name`."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f"module name can't contain \".\", got: {name}")
        if name == "":
            raise KeyError("module name can't be empty string \"\"")
        self._modules[name] = module

    def register_module(self, name: str, module: Module | None) -> None:
        """Alias of add_module."""
        self.add_module(name, module)

    # ---- lookup by dotted name ------------------------------------------------------------------
    def get_submodule(self, target: str) -> Module:
        """The sub-module at dotted path `target` ('' is self); AttributeError otherwise."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Replace (or, unless strict, add) the sub-module at dotted path `target`."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        path, _, name = target.rpartition(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self.get_submodule(path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def _get_member(self, target, check, what):
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        value = getattr(mod, name)
        if not check(mod, name, value):
            raise AttributeError("`" + name + "` is not " + what)
        return value

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path `target` (e.g. 'net.0.weight')."""
        return self._get_member(target, lambda m, n, v: isinstance(v, Parameter), "an nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path `target`."""
        return self._get_member(target, lambda m, n, v: n in m._buffers, "a buffer")

    def get_extra_state(self) -> Any:
        """Override (with set_extra_state) to put extra state into state_dict()."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be "
                           "called.")

    def set_extra_state(self, state: Any) -> None:
        """Override (with get_extra_state) to restore extra state from load_state_dict()."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be "
                           "called.")

    # ---- attribute protocol ---------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        # only called when ordinary lookup fails: parameters, buffers and sub-modules
        d = self.__dict__
        if "_parameters" in d:
            params = d["_parameters"]
            if name in params:
                return params[name]
        if "_buffers" in d:
            buffers = d["_buffers"]
            if name in buffers:
                return buffers[name]
        if "_modules" in d:
            modules = d["_modules"]
            if name in modules:
                return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        _epoch[0] += 1
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _discard(name, d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                f"(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            _discard(name, d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                f"(torch.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                f"(torch.nn.Buffer, torch.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        _epoch[0] += 1
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters)
                + list(self._modules) + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        _epoch[0] += 1
        self.__dict__.update(state)
        for name in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__:
                object.__setattr__(self, name, _tracked(self.__dict__[name]))
        # a module pickled by an older version may lack some of the hook dicts
        for name in ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
                     "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                     "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks", "_backward_pre_hooks"):
            if name not in self.__dict__:
                object.__setattr__(self, name, OrderedDict())
        if "_non_persistent_buffers_set" not in self.__dict__:
            object.__setattr__(self, "_non_persistent_buffers_set", set())
        if "_is_full_backward_hook" not in self.__dict__:
            object.__setattr__(self, "_is_full_backward_hook", None)

    # ---- calling -------------------------------------------------------------------------------
    _compiled_call_impl = None      # set by compile(): the compiled call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        """The call itself: hooks and forward (what a compiled module falls back to)."""
        try:
            # fast path: a module without hooks is just its forward
            if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                    or self._backward_pre_hooks or _any_global_hook()):
                return self.forward(*args, **kwargs)
            return self._call_with_hooks(args, kwargs)
        except (RuntimeError, ValueError, IndexError, TypeError) as e:
            _name_the_layer(self, e)
            raise

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compile this module's calls in place (torchlite.compile's arguments): later calls
        run the compiled graph; the module keeps its type, parameters and state_dict keys."""
        # the public torchlite.compile, as PyTorch's Module.compile calls torch.compile: the
        # compiler sits above nn (it captures modules), so nn reaches it through the package
        import torchlite
        self._compiled_call_impl = torchlite.compile(self._call_impl, *args, **kwargs)

    def _call_with_hooks(self, args, kwargs):
        """forward, with the forward pre-hooks, forward hooks and backward hooks around it."""
        state = {"result": None, "args": args, "kwargs": kwargs, "called": set()}
        try:
            return self._run_hooked_forward(state)
        except Exception:
            self._run_always_called_hooks(state)
            raise

    def _run_hooked_forward(self, state):
        args, kwargs = self._run_forward_pre_hooks(state["args"], state["kwargs"])
        state["args"], state["kwargs"] = args, kwargs
        bw = None
        full_hooks, pre_hooks, legacy_hooks = self._get_backward_hooks()
        if full_hooks or pre_hooks:
            bw = _BackwardHook(self, full_hooks, pre_hooks)
            args = bw.setup_input_hook(args)
        result = self.forward(*args, **kwargs)
        state["result"] = result
        for hook_id, hook in itertools.chain(_global_forward_hooks.items(),
                                             self._forward_hooks.items()):
            if (hook_id in self._forward_hooks_always_called
                    or hook_id in _global_forward_hooks_always_called):
                state["called"].add(hook_id)
            if (hook_id in self._forward_hooks_with_kwargs
                    or hook_id in _global_forward_hooks_with_kwargs):
                out = hook(self, args, kwargs, result)
            else:
                out = hook(self, args, result)
            if out is not None:
                result = state["result"] = out
        if bw is not None:
            result = bw.setup_output_hook(result)
        if legacy_hooks:
            _register_legacy_backward_hooks(self, legacy_hooks, args, result)
        return result

    def _run_forward_pre_hooks(self, args, kwargs):
        for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(),
                                             self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                out = hook(self, args, kwargs)
                if out is not None:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {out}.")
                    args, kwargs = out
            else:
                out = hook(self, args)
                if out is not None:
                    args = out if isinstance(out, tuple) else (out,)
        return args, kwargs

    def _run_always_called_hooks(self, state):
        """After forward raised: the forward hooks registered with always_call=True that did
        not run yet (their own errors are reported as warnings, the original error wins)."""
        import warnings
        args, kwargs, called = state["args"], state["kwargs"], state["called"]
        for hooks, always, with_kw in (
                (_global_forward_hooks, _global_forward_hooks_always_called,
                 _global_forward_hooks_with_kwargs),
                (self._forward_hooks, self._forward_hooks_always_called,
                 self._forward_hooks_with_kwargs)):
            for hook_id, hook in hooks.items():
                if hook_id not in always or hook_id in called:
                    continue
                try:
                    out = (hook(self, args, kwargs, state["result"]) if hook_id in with_kw
                           else hook(self, args, state["result"]))
                    if out is not None:
                        state["result"] = out
                except Exception as e:
                    warnings.warn(f"module forward hook with ``always_call=True`` raised an "
                                  f"exception that was silenced as another error was raised in "
                                  f"forward: {e}", stacklevel=3)

    def _get_backward_hooks(self):
        """(full hooks, pre-hooks, hooks of the deprecated register_backward_hook): the
        module's own hooks are one kind or the other (registering both kinds is an error)."""
        own = list(self._backward_hooks.values())
        legacy = self._is_full_backward_hook is False
        full = list(_global_backward_hooks.values()) + ([] if legacy else own)
        pre = list(_global_backward_pre_hooks.values()) + list(self._backward_pre_hooks.values())
        return full, pre, (own if legacy else [])

    # ---- hook registration ---------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """hook(module, args) -> None or new args runs before forward (with_kwargs:
        hook(module, args, kwargs) -> None or (new_args, new_kwargs))."""
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """hook(module, args, output) -> None or new output runs after forward (with_kwargs:
        hook(module, args, kwargs, output)); always_call: also when forward raises."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=[
            self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Deprecated, as in PyTorch (use register_full_backward_hook): hook(module,
        grad_input, grad_output) -> None or new grad_input runs on the backward of the node
        that made forward's (first) output tensor, so grad_input are the gradients of that
        last op's inputs, which are the module's own only when forward is a single op."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on "
                               "a single Module. Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", False)
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def register_full_backward_hook(self, hook: Callable[..., Any],
                                    prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) -> None or new grad_input runs when the
        gradients with respect to the module's inputs have been computed."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on "
                               "a single Module. Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", True)
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook: Callable[..., Any],
                                        prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_output) -> None or new grad_output runs before the module's
        input gradients are computed."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, prefix, keep_vars) runs before state_dict() saves this module."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata) runs after state_dict() saved this
        module; it may change state_dict in place and must return None."""
        hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _register_state_dict_hook(self, hook):
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs) runs before load_state_dict() loads this module."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = (functools.partial(hook, self) if with_module
                                                       else hook)
        return handle

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """hook(module, incompatible_keys) runs after load_state_dict() loaded this module; it
        may edit incompatible_keys in place."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ---- walking the tree -----------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield (module_prefix + "." + k if module_prefix else k), v

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module (and of its sub-modules when recurse), each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs, e.g. ('0.weight', ...)."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module (and of its sub-modules when recurse)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) pairs."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def children(self) -> Iterator[Module]:
        """The immediate sub-modules, each once."""
        for _, m in self.named_children():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, immediate sub-module) pairs, each module once."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        """Every module of the tree, self first (depth first)."""
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def named_modules(self, memo: set[Module] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """(dotted name, module) for every module of the tree, self first as (prefix, self)."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    # ---- modes and gradients --------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (True) or evaluation mode (False) on the whole tree."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: train(False)."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set requires_grad of every parameter in place."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default) or to zeros."""
        for p in self.parameters():
            g = p.grad
            if g is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    # ---- state dict -----------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """This module's own parameters, persistent buffers and extra state (not its
        children's) into destination."""
        for name, param in self._parameters.items():
            if param is not None:       # a lazy module's placeholder is saved as it is
                destination[prefix + name] = param if keep_vars or is_lazy(param) else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars or is_lazy(buf) else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args: Any, destination: dict[str, Any] | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Any]:
        """An OrderedDict of every parameter and persistent buffer of the tree, by dotted name
        (detached from autograd unless keep_vars)."""
        if args:        # the deprecated positional form (destination, prefix, keep_vars)
            destination = args[0] if destination is None else destination
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            out = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if out is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif out is not None:
                destination = out
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Load this module's own parameters and persistent buffers from state_dict (keys
        prefixed with `prefix`), appending to the three lists what does not fit."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        local_state = {k: v for k, v in itertools.chain(
            self._parameters.items(),
            ((k, v) for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set))
            if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key in state_dict:
                self._load_one(name, key, param, state_dict[key], assign, error_msgs)
            elif strict:
                missing_keys.append(key)
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head = key[len(prefix):].split(".", 1)
                    if len(head) > 1:
                        if head[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif head[0] not in local_state:
                        unexpected_keys.append(key)

    def _load_one(self, name, key, param, value, assign, error_msgs):
        """Copy (or with assign, set) one entry of a state dict into param."""
        if not isinstance(value, Tensor):
            error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor '
                              f'or Tensor-like object from checkpoint but received {type(value)}')
            return
        # a 1-element 1-d tensor loads into a 0-d one (checkpoints of old PyTorch versions)
        if param.ndim == 0 and value.ndim == 1 and value.shape[0] == 1:
            value = value[0]
        if value.shape != param.shape:
            error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} "
                              f"from checkpoint, the shape in current model is {param.shape}.")
            return
        try:
            with no_grad():
                if assign:
                    if isinstance(param, Parameter):
                        if isinstance(value, Parameter):
                            value.requires_grad_(param.requires_grad)
                        else:
                            value = Parameter(value, requires_grad=param.requires_grad)
                    setattr(self, name, value)
                else:
                    param.copy_(value)
        except Exception as ex:
            error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in '
                              f'the model are {param.size()} and whose dimensions in the '
                              f'checkpoint are {value.size()}, an exception occurred : '
                              f'{ex.args}.')

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy parameters and buffers from state_dict into the tree.  strict: the keys must
        match state_dict()'s exactly (RuntimeError listing missing and unexpected keys).  A
        shape mismatch is always an error.  assign: keep the state dict's tensors themselves
        (parameters keep the module's requires_grad).  Returns (missing_keys,
        unexpected_keys)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        self._load_tree(state_dict, "", metadata, assign, strict, missing, unexpected, errors)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def _load_tree(self, local_state, prefix, metadata, assign, strict, missing, unexpected,
                   errors):
        local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
        if assign:
            local_metadata["assign_to_params_buffers"] = assign
        # strict=True here always: the keys are collected, and only reported when strict
        self._load_from_state_dict(local_state, prefix, local_metadata, True, missing, unexpected,
                                   errors)
        for name, child in self._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                child_state = {k: v for k, v in local_state.items() if k.startswith(child_prefix)}
                child._load_tree(child_state, child_prefix, metadata, assign, strict, missing,
                                 unexpected, errors)
        keys = _IncompatibleKeys(missing, unexpected)
        for hook in self._load_state_dict_post_hooks.values():
            if hook(self, keys) is not None:
                raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` "
                                     "are not expected to return new values, if incompatible_keys "
                                     "need to be modified, it should be done inplace.")

    # ---- conversion -----------------------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        """Apply fn to every parameter, gradient and buffer of the tree.  A parameter keeps its
        identity (its data is replaced, as PyTorch does), so optimizers holding it still see it;
        buffers are replaced by fn's result."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            if is_lazy(param):              # no data yet: converted when it gets some
                param._defer(fn)
                continue
            with no_grad():
                applied = fn(param)
            param.data = applied
            grad = param.grad
            if grad is not None:
                with no_grad():
                    grad.data = fn(grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                if is_lazy(buf):
                    buf._defer(fn)
                else:
                    self._buffers[key] = fn(buf)
        return self

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call fn(module) on every sub-module (children first) and then on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move and/or cast parameters and buffers in place: to(device), to(dtype),
        to(device, dtype), to(tensor), keywords device=, dtype=, non_blocking=.  Only
        floating point tensors change dtype; the dtype must be a floating point one."""
        from ..._ops.conversion import _parse_to
        if "copy" in kwargs:
            raise TypeError("to() got an unexpected keyword argument 'copy'")
        dtype, device, _, non_blocking, fmt = _parse_to(args, dict(kwargs))
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got "
                            f"desired dtype={dtype}")

        def convert(t):
            # memory_format applies to the 4-d (5-d) tensors only, as in PyTorch
            layout = fmt if fmt is not None and t.dim() in (4, 5) else None
            return t.to(device, dtype if (t.is_floating_point() or t.is_complex()) else None,
                        non_blocking=non_blocking, memory_format=layout)
        return self._apply(convert)

    def cuda(self, device: str | device | int | None = None) -> Module:
        """Move every parameter and buffer to a CUDA device (RuntimeError without a CUDA
        backend)."""
        from ..._device import device as _device
        target = _device("cuda", device) if isinstance(device, int) or device is None else device
        return self._apply(lambda t: t.to(target))

    def cpu(self) -> Module:
        """Move every parameter and buffer to the CPU."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type: dtype | str) -> Module:
        """Cast every parameter and buffer to dst_type."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> Module:
        """Cast floating point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Module:
        """Cast floating point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> Module:
        """Cast floating point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> Module:
        """Cast floating point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device: str | device | int | None = None, recurse: bool = True) -> Module:
        """Replace every parameter and buffer by an uninitialised tensor of the same shape on
        `device`."""
        from ..._ops.creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def share_memory(self) -> Module:
        """A no-op here: CPU tensors of torchlite live in ordinary process memory."""
        return self

    # ---- printing -------------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module's own settings for repr (override it; one line or several)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _discard(name, *stores):
    """Remove `name` from each dict or set that has it."""
    for s in stores:
        if name in s:
            if isinstance(s, dict):
                del s[name]
            else:
                s.discard(name)


# ---- backward hooks of the deprecated register_backward_hook -----------------------------------
def _register_legacy_backward_hooks(module, hooks, args, result):
    """PyTorch's non-full backward hooks: each becomes a hook of the grad_fn of the first
    tensor in the output, called as hook(module, grad_input, grad_output); FutureWarnings
    where that node's gradients cannot be the module's (PyTorch's cases)."""
    var = result
    while not isinstance(var, Tensor):
        var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) else var[0]
    grad_fn = var.grad_fn
    if grad_fn is None:
        return
    for hook in hooks:
        grad_fn.register_hook(functools.partial(hook, module))
    _warn_if_not_the_modules_gradients(args, result, grad_fn)


def _warn_if_not_the_modules_gradients(inputs, result, grad_fn):
    import warnings
    advice = "Please use register_full_backward_hook to get the documented behavior."
    results = (result,) if isinstance(result, Tensor) else result
    if not (isinstance(results, tuple) and all(isinstance(r, Tensor) for r in results)):
        msg = ("Using non-full backward hooks on a Module that does not return a single Tensor or a "
               "tuple of Tensors is deprecated and will be removed in future versions. This hook "
               "will be missing some of the grad_output. " + advice)
    elif not all(isinstance(i, Tensor) for i in inputs):
        msg = ("Using non-full backward hooks on a Module that does not take as input a single Tensor "
               "or a tuple of Tensors is deprecated and will be removed in future versions. This "
               "hook will be missing some of the grad_input. " + advice)
    else:
        out_fns = {r.grad_fn for r in results if r.grad_fn is not None}
        if not out_fns or (len(out_fns) == 1 and grad_fn not in out_fns):
            msg = ("Using a non-full backward hook when outputs are nested in python data structure "
                   "is deprecated and will be removed in future versions. This hook will be "
                   "missing some grad_output.")
        elif len(out_fns) > 1:
            msg = ("Using a non-full backward hook when outputs are generated by different autograd "
                   "Nodes is deprecated and will be removed in future versions. This hook will be "
                   "missing some grad_output. " + advice)
        elif {i.grad_fn for i in inputs if i.grad_fn is not None} != {n for n, _ in grad_fn.next_functions}:
            msg = ("Using a non-full backward hook when the forward contains multiple autograd Nodes "
                   "is deprecated and will be removed in future versions. This hook will be missing "
                   "some grad_input. " + advice)
        else:
            return
    warnings.warn(msg, FutureWarning, stacklevel=4)


# ---- full backward hooks --------------------------------------------------------------------
class _BackwardHook:
    """Module backward hooks through two identity autograd Functions: one over the module's
    outputs catches the output gradients (and runs the pre-hooks), one over its tensor inputs
    catches the input gradients and calls the hooks with both."""

    def __init__(self, module, hooks, pre_hooks):
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_hooked = False

    def setup_input_hook(self, args):
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(positions)
        tensors = [args[i] for i in positions]
        if not any(t.requires_grad for t in tensors):
            return args
        from ...autograd.grad_mode import is_grad_enabled
        if not is_grad_enabled():
            return args
        self.input_hooked = True
        new = _HookIdentity.apply(self, "input", *tensors)
        args = list(args)
        for i, t in zip(positions, new):
            args[i] = t
        return tuple(args)

    def setup_output_hook(self, result):
        single = isinstance(result, Tensor)
        outs = (result,) if single else result
        if not isinstance(outs, tuple):
            return result
        positions = [i for i, o in enumerate(outs) if isinstance(o, Tensor)]
        tensors = [outs[i] for i in positions]
        if not any(t.requires_grad for t in tensors):
            return result
        new = _HookIdentity.apply(self, "output", *tensors)
        outs = list(outs)
        for i, t in zip(positions, new):
            outs[i] = t
        return outs[0] if single else tuple(outs)

    def output_grads(self, grads):
        """Output gradients arrived: run the pre-hooks; with no input to wait for, the hooks
        run now with None input gradients."""
        for hook in self.pre_hooks:
            out = hook(self.module, grads)
            if out is not None:
                grads = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        self.grad_outputs = grads
        if not self.input_hooked:
            for hook in self.hooks:
                if hook(self.module, (None,) * self.n_inputs, grads) is not None:
                    raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                       "should always return None or None for all gradients.")
        return grads

    def input_grads(self, grads):
        """Input gradients arrived: call each hook with (grad_input, grad_output)."""
        for hook in self.hooks:
            out = hook(self.module, grads, self.grad_outputs)
            if out is not None:
                out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
                if len(out) != len(grads):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(grads)}")
                grads = out
        return grads


def _hook_identity_class():
    from ...autograd.function import Function

    class BackwardHookFunction(Function):
        @staticmethod
        def forward(ctx, state, kind, *tensors):
            ctx.state, ctx.kind = state, kind
            return tuple(tensors)

        @staticmethod
        def backward(ctx, *grads):
            st = ctx.state
            grads = st.output_grads(grads) if ctx.kind == "output" else st.input_grads(grads)
            return (None, None) + tuple(grads)

    return BackwardHookFunction


class _LazyHookIdentity:
    """The identity Function, built on first use (autograd.function imports Tensor ops)."""
    _cls = None

    def apply(self, *args):
        if self._cls is None:
            _LazyHookIdentity._cls = _hook_identity_class()
        return self._cls.apply(*args)


_HookIdentity = _LazyHookIdentity()
