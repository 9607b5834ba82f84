"""The batched tensor of vmap, and the door through which torchlite's functions reach it.

Inside `vmap(f)(x)`, f sees `Batched` objects: each holds one real ("physical") tensor whose
dimension 0 is the batch, and shows f the "logical" tensor without it -- `shape`, `ndim`,
`size()`, indexing and every dim argument are the logical ones.  An operation on a Batched
runs once on the physical tensor, by its batching rule (rules.py: the logical dims moved past
the batch dim, operands aligned), so the whole batch costs one call and autograd records one
graph over the batch.  An operation without a rule runs once per batch element on real
slices and stacks the results (the fallback: the same values, at loop speed).

torchlite has no dispatcher key to hang this on, so for the duration of the outermost vmap
the public functions of torchlite, torchlite.nn.functional, torchlite.linalg, torchlite.special
and torchlite.fft are replaced by wrappers that send a call with a Batched among its arguments
to `call_function` (and let every other call through), and so are the Tensor methods that take
a second tensor -- the same patch-for-the-duration door as torchlite.fx's tracer.  Tensor's
operators need no patch: they return NotImplemented for a Batched operand, and Python asks
the Batched's reflected operator.  Methods and operators of a Batched itself go through `call_method`."""
import functools
import inspect
import sys
import threading

from .._tensor import Tensor

__all__ = ["Batched", "Level", "current", "patched", "call_function", "call_method",
           "has_batched", "unwrap_slice"]

_NAMESPACES = ("torchlite", "torchlite.nn.functional", "torchlite.linalg", "torchlite.special",
               "torchlite.fft")


class Level:
    """One running vmap: the batch size and the randomness mode ('error', 'different',
    'same')."""
    __slots__ = ("size", "randomness")

    def __init__(self, size, randomness):
        self.size = size
        self.randomness = randomness


_local = threading.local()


def current():
    """The innermost vmap level running in this thread, or None."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def push(level):
    if not hasattr(_local, "stack"):
        _local.stack = []
    _local.stack.append(level)


def pop():
    _local.stack.pop()


def _level():
    lv = current()
    if lv is None:
        raise RuntimeError("vmap: a batched tensor was used outside of the vmap call that "
                           "made it (do not let it escape the function)")
    return lv


class Batched:
    """A tensor inside vmap: `value` is the physical tensor, batch dimension first."""

    __slots__ = ("value", "__weakref__")

    def __init__(self, value):
        self.value = value

    # ---- what f sees: the logical tensor ---------------------------------------------------
    @property
    def shape(self):
        return self.value.shape[1:]

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return self.value.dim() - 1

    ndimension = dim

    @property
    def ndim(self):
        return self.value.dim() - 1

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    nelement = numel

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.value.shape[1]

    def __iter__(self):
        return iter(call_method("unbind", self, (0,), {}))

    dtype = property(lambda self: self.value.dtype)
    device = property(lambda self: self.value.device)
    is_cuda = property(lambda self: self.value.is_cuda)
    layout = property(lambda self: self.value.layout)
    requires_grad = property(lambda self: self.value.requires_grad)
    grad_fn = property(lambda self: self.value.grad_fn)
    is_leaf = property(lambda self: self.value.is_leaf)
    data = property(lambda self: Batched(self.value.data))
    T = property(lambda self: call_method("permute", self, tuple(range(self.ndim - 1, -1, -1)), {}))
    mT = property(lambda self: call_method("transpose", self, (-2, -1), {}))
    H = property(lambda self: call_method("conj", self.T, (), {}))
    mH = property(lambda self: call_method("conj", self.mT, (), {}))
    real = property(lambda self: Batched(self.value.real))
    imag = property(lambda self: Batched(self.value.imag))

    @property
    def grad(self):
        g = self.value.grad
        return None if g is None else Batched(g)

    def is_floating_point(self):
        return self.value.is_floating_point()

    def is_complex(self):
        return self.value.is_complex()

    def element_size(self):
        return self.value.element_size()

    def stride(self, dim=None):
        s = self.value.stride()[1:]
        return s if dim is None else s[dim]

    def is_contiguous(self, memory_format=None):
        return True

    def __repr__(self):
        return f"BatchedTensor(batch={self.value.shape[0]}, value=\n{self.value!r})"

    __hash__ = object.__hash__

    # ---- values a function must not branch on ----------------------------------------------
    def _data_dependent(self, what):
        raise RuntimeError(f"vmap: It looks like you're calling {what} on a Tensor inside "
                           f"vmap.  The value differs across the batch, so vmap cannot give "
                           f"one answer: rewrite the function without data-dependent Python "
                           f"control flow (torchlite.where, masking), or run it without vmap.")

    def item(self):
        self._data_dependent(".item()")

    def tolist(self):
        self._data_dependent(".tolist()")

    def numpy(self, *a, **k):
        self._data_dependent(".numpy()")

    def __bool__(self):
        self._data_dependent("bool()")

    def __int__(self):
        self._data_dependent("int()")

    def __float__(self):
        self._data_dependent("float()")

    def __index__(self):
        self._data_dependent("an index conversion")

    def data_ptr(self):
        raise RuntimeError("vmap: data_ptr() of a batched tensor is not defined")

    # ---- every other method -------------------------------------------------------------------
    def __getattr__(self, name):
        if name.startswith("_") and not name.startswith("__") and hasattr(Tensor, name):
            # a torchlite function reading a tensor's internals: it was reached through a
            # reference taken before vmap opened its door, so it runs unbatched -- refuse
            # rather than hand it one element's data
            raise AttributeError(
                f"vmap: a torchlite function was given a batched tensor without going through "
                f"vmap (it read '{name}'): it was called through a name bound before vmap "
                f"started, such as `from torchlite import clone`; call it through its module "
                f"(torchlite.clone, torchlite.nn.functional.relu) inside vmapped code")
        if name.startswith("__") or not hasattr(Tensor, name):
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        if not callable(inspect.getattr_static(Tensor, name)):
            return getattr(self.value.select(0, 0), name)    # a flag or size of one element
        return lambda *args, **kwargs: call_method(name, self, args, kwargs)

    def __getitem__(self, key):
        return call_method("__getitem__", self, (key,), {})

    def __setitem__(self, key, value):
        call_method("__setitem__", self, (key, value), {})


def _operator(fn_name, reflected_dunder=None):
    if reflected_dunder is not None:
        def op(self, other):                   # other <op> self
            if isinstance(other, (Tensor, Batched)):
                from . import rules
                return call_function(rules.BY_NAME[fn_name], (other, self), {})
            return Batched(getattr(self.value, reflected_dunder)(other))   # a number
    else:
        def op(self, other):
            return call_method(fn_name, self, (other,), {})
    return op


# (operator, the function it is, whether the Batched is the right operand)
_BINARY = {"__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
           "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "pow",
           "__matmul__": "matmul", "__and__": "bitwise_and", "__or__": "bitwise_or",
           "__xor__": "bitwise_xor", "__lshift__": "bitwise_left_shift",
           "__rshift__": "bitwise_right_shift"}
_COMPARE = {"__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
            "__ge__": "ge"}
for _dunder, _fn in _BINARY.items():
    setattr(Batched, _dunder, _operator(_fn))
    setattr(Batched, "__r" + _dunder[2:], _operator(_fn, "__r" + _dunder[2:]))
    setattr(Batched, "__i" + _dunder[2:], _operator(_fn + "_"))
for _dunder, _fn in _COMPARE.items():
    setattr(Batched, _dunder, _operator(_fn))
Batched.__neg__ = lambda self: call_method("neg", self, (), {})
Batched.__pos__ = lambda self: self
Batched.__abs__ = lambda self: call_method("abs", self, (), {})
Batched.__invert__ = lambda self: call_method("bitwise_not", self, (), {})


# ---- dispatch ---------------------------------------------------------------------------------
def _is_batched_arg(a):
    t = type(a)
    if t is Batched:
        return True
    if t is list or t is tuple:
        for x in a:
            if type(x) is Batched:
                return True
    return False


def has_batched(args, kwargs):
    for a in args:
        if _is_batched_arg(a):
            return True
    if kwargs:
        for a in kwargs.values():
            if _is_batched_arg(a):
                return True
    return False


def unwrap_slice(x, i):
    """x with every Batched in it (through lists, tuples and dicts) replaced by its i-th
    element."""
    t = type(x)
    if t is Batched:
        return x.value[i]
    if t is list or t is tuple:
        return t(unwrap_slice(v, i) for v in x)
    if t is dict:
        return {k: unwrap_slice(v, i) for k, v in x.items()}
    return x


def _restack(results, inplace_self=None):
    """The per-element results of the fallback loop as one batched result."""
    first = results[0]
    if inplace_self is not None and isinstance(first, Tensor):
        return inplace_self
    if isinstance(first, Tensor):
        from .. import stack
        return Batched(stack(results))
    if isinstance(first, (tuple, list)):
        parts = [_restack([r[k] for r in results]) for k in range(len(first))]
        if hasattr(first, "_fields"):                  # a named tuple (values, indices)
            return type(first)(*parts)
        return type(first)(parts)
    if isinstance(first, dict):
        return {k: _restack([r[k] for r in results]) for k in first}
    if any(r != first for r in results[1:]):
        raise RuntimeError(f"vmap: the function returned a {type(first).__name__} that differs "
                           f"across the batch ({results[0]!r} and others); return tensors")
    return first


def loop(fn, args, kwargs, inplace_self=None):
    """The fallback: fn once per batch element on real slices, the results stacked."""
    size = _level().size
    results = [fn(*unwrap_slice(args, i), **unwrap_slice(kwargs, i)) for i in range(size)]
    return _restack(results, inplace_self)


def _random_mode(name):
    lv = _level()
    if lv.randomness == "error":
        raise RuntimeError(f"vmap: called random operation {name} while in randomness error "
                           f"mode. Please either use the 'same' or 'different' randomness flags "
                           f"on vmap or perform the randomness operation out of vmap")
    return lv.randomness


def _same_randomness_loop(fn, args, kwargs, inplace_self=None):
    """randomness='same' without a rule: each element draws from the same generator state."""
    from .. import random as _random
    size = _level().size
    state = _random.get_rng_state()
    results = []
    for i in range(size):
        _random.set_rng_state(state)
        results.append(fn(*unwrap_slice(args, i), **unwrap_slice(kwargs, i)))
    return _restack(results, inplace_self)


def call_function(fn, args, kwargs):
    """fn (one of torchlite's functions) called with a Batched among its arguments."""
    from . import rules
    name = getattr(fn, "__name__", "")
    random = rules.RANDOM.get(fn)
    if random is not None and random.draws(args, kwargs):
        if _random_mode(name) == "same":
            if random.same is not None:
                out = random.same(*args, **kwargs)
                if out is not NotImplemented:
                    return out
            return _same_randomness_loop(fn, args, kwargs)
    rule = rules.FUNCTIONS.get(fn)
    if rule is not None:
        out = rule(*args, **kwargs)
        if out is not NotImplemented:
            return out
    return loop(fn, args, kwargs)


_INPLACE_VIEWS = frozenset({"t", "transpose", "swapaxes", "swapdims", "unsqueeze", "squeeze",
                            "as_strided", "resize", "resize_as"})


def call_method(name, self, args, kwargs):
    """self.name(*args, **kwargs), self a Batched."""
    from . import rules
    rule = rules.METHODS.get(name)
    if rule is not None:
        out = rule(self, *args, **kwargs)
        if out is not NotImplemented:
            return out
    fn = rules.BY_NAME.get(name)
    if fn is not None:
        return call_function(fn, (self,) + args, kwargs)
    if name.endswith("_") and not name.endswith("__"):
        if name[:-1] in _INPLACE_VIEWS:      # t_, unsqueeze_: self becomes the view
            self.value = call_method(name[:-1], self, args, kwargs).value
            return self
        if name in rules.RANDOM_METHODS:
            if _random_mode(name) == "same":
                return _same_randomness_loop(
                    lambda s, *a, **k: getattr(s, name)(*a, **k), (self,) + args, kwargs,
                    inplace_self=self)
            getattr(self.value, name)(*args, **kwargs)      # 'different': one draw each
            return self
        out = rules.inplace(name, self, args, kwargs)
        if out is not NotImplemented:
            return out
        return loop(lambda s, *a, **k: getattr(s, name)(*a, **k), (self,) + args, kwargs,
                    inplace_self=self)
    return loop(lambda s, *a, **k: getattr(s, name)(*a, **k), (self,) + args, kwargs)


# ---- the door, open while a vmap runs ------------------------------------------------------------
_wrappers = {}              # original function -> its wrapper
_patch_lock = threading.Lock()
_patch_count = 0


def _aware(fn):
    w = _wrappers.get(fn)
    if w is None:
        from . import rules
        random = rules.RANDOM.get(fn)

        @functools.wraps(fn)
        def w(*args, **kwargs):
            if has_batched(args, kwargs):
                return call_function(fn, args, kwargs)
            if random is not None and current() is not None and random.draws(args, kwargs):
                if _random_mode(fn.__name__) == "different":   # every element its own draw
                    return loop(fn, args, kwargs)
            return fn(*args, **kwargs)
        w._vmap_original = fn
        _wrappers[fn] = w
    return w


def _module_call(original):
    """Module.__call__, running a module that says so (_vmap_per_element) once per element."""
    def call(mod, *args, **kwargs):
        if getattr(mod, "_vmap_per_element", False) and has_batched(args, kwargs):
            return loop(lambda *a, **k: original(mod, *a, **k), args, kwargs)
        return original(mod, *args, **kwargs)
    return call


def _tensor_method(original, name):
    """A Tensor method, sending a call with a Batched argument to the batched function of the
    same name (or the loop)."""
    def method(self, *args, **kwargs):
        if has_batched(args, kwargs):
            from . import rules
            fn = rules.BY_NAME.get(name)
            if fn is not None:
                return call_function(fn, (self,) + args, kwargs)
            return loop(lambda *a, **k: original(*a, **k), (self,) + args, kwargs)
        return original(self, *args, **kwargs)
    return method


# Tensor methods that take a second tensor, opened for a Batched argument (every other
# method of an unbatched tensor given a Batched raises TypeError)
_TENSOR_METHODS = """add sub mul div true_divide floor_divide remainder fmod pow matmul mm bmm mv
dot outer maximum minimum fmax fmin atan2 hypot copysign logaddexp where masked_fill eq ne lt
le gt ge logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor lerp addcmul
addcdiv expand_as type_as view_as reshape_as gather index_select __getitem__""".split()


def _is_function(v):
    return callable(v) and not isinstance(v, type) and type(v).__name__ in (
        "function", "builtin_function_or_method", "cython_function_or_method")


_plan = []                  # (owner, {name: wrapper}, {name: original}), for the namespaces
_plan_key = None            # as they were when it was made (their sizes)


def _namespace_dicts():
    return [vars(sys.modules[p]) for p in _NAMESPACES if p in sys.modules]


def _make_plan(dicts):
    plan = []
    for d in dicts:
        wrappers, originals = {}, {}
        for name, v in list(d.items()):
            v = getattr(v, "_vmap_original", v)
            if not name.startswith("_") and _is_function(v) and not hasattr(v, "_fx_original"):
                wrappers[name], originals[name] = _aware(v), v
        plan.append((d, wrappers, originals))
    from ..nn.modules.module import Module
    call = Module.__dict__["__call__"]
    plan.append((Module, {"__call__": _module_call(call)}, {"__call__": call}))
    # (Tensor's operators need nothing: they return NotImplemented for a Batched operand, so
    # Python hands `tensor + batched` to Batched.__radd__)
    wrappers, originals = {}, {}
    for name in _TENSOR_METHODS:
        original = Tensor.__dict__.get(name)
        if original is not None and name not in wrappers:
            wrappers[name], originals[name] = _tensor_method(original, name), original
    plan.append((Tensor, wrappers, originals))
    return plan


def _set_all(use_wrappers):
    for owner, wrappers, originals in _plan:
        values = wrappers if use_wrappers else originals
        if type(owner) is dict:
            owner.update(values)           # one C call per namespace
        else:
            for name, v in values.items():
                setattr(owner, name, v)


def _install():
    global _plan, _plan_key
    from . import rules
    rules.build()
    dicts = _namespace_dicts()
    key = tuple((id(d), len(d)) for d in dicts)
    if key != _plan_key:
        _plan, _plan_key = _make_plan(dicts), key
    _set_all(True)


def _uninstall():
    _set_all(False)


class patched:
    """Context manager: the door open (counted, so nested and concurrent vmaps share it)."""

    def __enter__(self):
        global _patch_count
        with _patch_lock:
            if _patch_count == 0:
                _install()
            _patch_count += 1

    def __exit__(self, *exc):
        global _patch_count
        with _patch_lock:
            _patch_count -= 1
            if _patch_count == 0:
                _uninstall()
