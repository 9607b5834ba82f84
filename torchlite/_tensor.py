"""torchlite.Tensor: one array (the array layer's strided view) plus autograd metadata.

The Tensor holds no element logic of its own: each op lives in torchlite/_ops/<family>.py
as a function, and is attached here as a method by that module (``_ops._register``).
Nothing here knows which device the array is on, except through ``tensor.device``."""
from __future__ import annotations

import builtins
import weakref
import numbers
from typing import TYPE_CHECKING

from . import _dtype as D
from . import _layout
from . import _memory_format as MF
from ._device import CPU, device as _device_cls
from ._size import Size

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from ._device import device
    from ._dtype import dtype
    from ._layout import layout
    from ._memory_format import memory_format

__all__ = ["Tensor"]


def _is_number(x):
    return isinstance(x, numbers.Number) and not isinstance(x, Tensor)


def _as_pyscalar(x):
    """A Python bool/int/float/complex for a NumPy scalar; x itself for a Python number."""
    if type(x) in (builtins.int, builtins.float, builtins.bool, builtins.complex):
        return x
    if isinstance(x, builtins.bool) or getattr(getattr(x, "dtype", None), "kind", None) == "b":
        return builtins.bool(x)
    if isinstance(x, numbers.Integral):
        return builtins.int(x)
    if isinstance(x, numbers.Real):
        return builtins.float(x)
    if isinstance(x, numbers.Complex):
        return builtins.complex(x)
    return x


class Tensor:
    """An n-dimensional array on a device, with PyTorch's semantics.

    >>> import torchlite as torch
    >>> x = torch.tensor([[1., 2.], [3., 4.]])
    >>> (x @ x.T).sum().item()
    50.0
    """

    __slots__ = ("_data", "_requires_grad", "_grad", "grad_fn", "_output_nr", "_grad_acc",
                 "_hooks", "_retains_grad", "_post_acc_hooks", "_base", "_view_version",
                 "_views", "__weakref__")
    __array_priority__ = 1000   # make NumPy defer to our reflected operators

    # __new__ (the legacy constructor, Tensor([1, 2]) / Tensor(2, 3)) and __reduce_ex__
    # (pickling) make tensors, so _ops/creation.py attaches them, as every op attaches its
    # method: this layer imports no op.

    # -- metadata ------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Size | int:
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> dtype:
        return D.DTYPES[self._data.dtype]

    @property
    def device(self) -> device:
        d = self._data.device
        return CPU if d == "cpu" else _device_cls(d)

    @property
    def is_cuda(self) -> bool:
        d = self._data.device
        return d != "cpu" and d != "meta"

    @property
    def is_meta(self) -> bool:
        """Whether this tensor is on the meta device (a shape and dtype, no data)."""
        return self._data.device == "meta"

    @property
    def is_cpu(self) -> bool:
        return self._data.device == "cpu"

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.numel

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.itemsize * self._data.numel

    def stride(self, dim: int | None = None) -> tuple[int, ...] | int:
        st = self._data.strides
        if dim is None:
            return st
        return st[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        return self._data.offset

    def is_contiguous(self, *, memory_format: memory_format = MF.contiguous_format) -> bool:
        """Whether the memory is dense in row-major order, or in `memory_format`'s order
        (channels_last: NHWC strides for a 4-d tensor; False for other ranks).  As in
        PyTorch, preserve_format asks the row-major question, the format is keyword-only and
        must be a torchlite.memory_format (None is a TypeError)."""
        if not isinstance(memory_format, MF.memory_format):
            raise TypeError(f"is_contiguous(): argument 'memory_format' must be "
                            f"torchlite.memory_format, not {type(memory_format).__name__}")
        if memory_format is MF.channels_last or memory_format is MF.channels_last_3d:
            return MF.is_contiguous_as(self._data.shape, self._data.strides, memory_format)
        # an empty tensor is contiguous whatever its strides (array.pyx's check misses this)
        return self._data.numel == 0 or self._data.is_contiguous()

    def data_ptr(self) -> int:
        return self._data.data_ptr()

    def const_data_ptr(self) -> int:
        return self._data.data_ptr()

    # ---- layout, and the flags of the layouts and devices torchlite does not have ------------
    # (PyTorch code reads them to pick a path; a torchlite tensor is dense, strided, on the CPU
    # or a CUDA device)
    @property
    def layout(self) -> layout:
        return _layout.strided

    is_sparse = is_sparse_csr = is_quantized = is_nested = is_mkldnn = False
    is_mps = is_xla = is_xpu = is_ipu = is_vulkan = is_maia = is_mtia = False

    def dense_dim(self) -> int:
        """The number of dense dims: all of them, for a strided tensor."""
        return self._data.ndim

    def sparse_dim(self) -> int:
        return 0

    def to_dense(self, dtype: dtype | None = None, *, masked_grad: bool | None = None) -> Tensor:
        """A strided tensor is already dense: self (converted to dtype when given)."""
        return self if dtype is None else self.to(dtype)

    def dim_order(self, *, ambiguity_check: bool | list[memory_format] = False) -> tuple[int, ...]:
        """The dims from the outermost in memory to the innermost (largest stride first; ties
        keep the dims' order), e.g. (0, 2, 3, 1) for a channels_last 4-d tensor."""
        strides = self._data.strides
        return tuple(sorted(range(len(strides)), key=lambda d: -strides[d]))

    def is_set_to(self, tensor: Tensor) -> bool:
        """Whether both tensors view the same memory with the same offset, sizes and strides."""
        a, b = self._data, tensor._data
        return (a.storage is b.storage and a.offset == b.offset and a.shape == b.shape
                and a.strides == b.strides)

    @property
    def volatile(self) -> bool:
        import warnings
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                      stacklevel=2)
        return False

    def as_subclass(self, cls: type[Tensor]) -> Tensor:
        """self's data as an instance of cls (a Tensor subclass): it shares self's memory and
        stays in self's autograd graph."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, got "
                            f"{cls!r}")
        r = self.view_as(self)
        try:
            r.__class__ = cls
            return r
        except TypeError:           # cls adds slots or a __dict__: a new instance of it
            t = object.__new__(cls)
            for k in Tensor.__slots__:
                if k != "__weakref__" and hasattr(r, k):
                    setattr(t, k, getattr(r, k))
            return t

    def is_floating_point(self) -> bool:
        return 6 <= self._data.dtype <= 9

    def is_complex(self) -> bool:
        return self._data.dtype >= 10

    def is_signed(self) -> bool:
        return D.DTYPES[self._data.dtype].is_signed

    @property
    def data(self) -> Tensor:
        """The same memory as a tensor outside the graph, with its own version counter (unlike
        detach(), in-place changes through it are not caught by autograd, as in PyTorch)."""
        return _wrap(self._data.alias_with_own_version())

    @data.setter
    def data(self, other: Tensor) -> None:
        self._data = other._data

    def get_device(self) -> int:
        d = self._data.device
        return -1 if d == "cpu" or d == "meta" else (self.device.index or 0)

    # -- Python protocol -------------------------------------------------------------------
    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self) -> int:
        return id(self)

    def _one_value(self):
        """The Python number of a one-element tensor (float(), int(): ValueError otherwise)."""
        if self._data.numel != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self._data.item()

    def item(self) -> int | float | bool | complex:
        """The value of a one-element tensor as a Python number."""
        return self._data.item()

    def __bool__(self) -> bool:
        if self._data.numel != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous"
                               if self._data.numel > 1 else
                               "Boolean value of Tensor with no values is ambiguous")
        return builtins.bool(self._data.item())

    def __float__(self) -> float:
        return builtins.float(self._one_value())

    def __int__(self) -> int:
        return builtins.int(self._one_value())

    def __index__(self) -> int:
        if self._data.dtype >= 6 or self._data.numel != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self._data.item())

    def __complex__(self) -> complex:
        return complex(self._one_value())

    def tolist(self) -> list[Any] | int | float | bool | complex:
        return self._data.tolist()

    def numpy(self, *, force: bool = False) -> Any:
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._data.device != "cpu":
            if not force:
                raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                                f"Tensor.cpu() to copy the tensor to host memory first.")
            return self.cpu().numpy()
        import numpy as np
        return np.asarray(self._data)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        import numpy as np
        if self._data.device != "cpu":      # as numpy(): PyTorch never copies implicitly
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                            f"Tensor.cpu() to copy the tensor to host memory first.")
        a = np.asarray(self._data)
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        from ._tensor_str import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self.item(), spec)     # '{}'.format(tensor(2.5)) == '2.5', as in torch
        return object.__format__(self, spec) if spec else repr(self)

    # -- autograd (torchlite/autograd: graph.py records, engine.py runs) ----------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        value = builtins.bool(value)
        if self.grad_fn is not None:
            raise RuntimeError(_NON_LEAF_FLAG if value else _NON_LEAF_FLAG + _NON_LEAF_HINT)
        if value and not (self.is_floating_point() or self.is_complex()):
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        self._requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set requires_grad in place (a non-leaf already requires grad: True is a no-op)."""
        if self.grad_fn is not None and requires_grad:
            return self
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated into this tensor by backward() (None until then).  Only
        leaves and tensors that called retain_grad() get one; reading it on another tensor
        warns, as PyTorch does."""
        g = self._grad
        if g is None and self.grad_fn is not None and not getattr(self, "_retains_grad", False):
            import warnings
            warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype "
                                   f"'{value.dtype}' to a tensor with dtype '{self.dtype}'. "
                                   f"The gradient must match the tensor's dtype")
            if value._data.device != self._data.device:
                raise RuntimeError(f"attempting to assign a gradient located on device "
                                   f"'{value.device}' to a tensor located on device "
                                   f"'{self.device}'. Please ensure that the gradient and the "
                                   f"tensor are on the same device")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"attempting to assign a gradient of size "
                                   f"'{list(value._data.shape)}' to a tensor of size "
                                   f"'{list(self._data.shape)}'. Please ensure that the "
                                   f"gradient and the tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def is_leaf(self) -> bool:
        """True for tensors made by the user (or not requiring grad): no grad_fn."""
        return self.grad_fn is None

    def detach(self) -> Tensor:
        """The same data, cut from the graph (shares memory and the version counter; never
        requires grad)."""
        return _wrap(self._data)

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place: it becomes a leaf not requiring grad."""
        if getattr(self, "_base", None) is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._requires_grad = False
        return self

    def _is_view(self):
        """True for a view of another tensor (`self._base`), as PyTorch's _is_view."""
        return getattr(self, "_base", None) is not None

    @property
    def output_nr(self) -> int:
        return getattr(self, "_output_nr", 0) if self.grad_fn is not None else 0

    # backward() is attached by autograd/engine.py, which runs the graph (as the ops attach
    # theirs): this module never imports the engine

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> Any:
        """hook(grad) runs when this tensor's gradient is computed; it may return a replacement.
        Returns a handle whose remove() unregisters it."""
        from .autograd.graph import RemovableHandle
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self.grad_fn
        if fn is None:
            hooks = getattr(self, "_hooks", None)
            if hooks is None:
                hooks = self._hooks = []
        else:
            if fn._tensor_hooks is None:
                fn._tensor_hooks = {}
                fn._special = True
            hooks = fn._tensor_hooks.setdefault(self.output_nr, [])
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> Any:
        """hook(tensor) runs on a leaf after its .grad has been accumulated."""
        from .autograd.graph import RemovableHandle
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        hooks = getattr(self, "_post_acc_hooks", None)
        if hooks is None:
            hooks = self._post_acc_hooks = []
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def retain_grad(self) -> None:
        """Populate .grad of this non-leaf tensor during backward (a no-op on leaves).  The
        gradient stored is the one after all of the tensor's hooks."""
        import weakref
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self.grad_fn
        if fn is None or getattr(self, "_retains_grad", False):
            return
        if fn._retained is None:
            fn._retained = {}
            fn._special = True
        fn._retained[self.output_nr] = weakref.ref(self)
        self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        return getattr(self, "_retains_grad", False) and self.grad_fn is not None

    @property
    def _version(self):
        return self._data.storage.version

    def _bump_version(self):
        self._data.storage.version += 1


_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.")
_NON_LEAF_FLAG = "you can only change requires_grad flags of leaf variables."
_NON_LEAF_HINT = (" If you want to use a computed variable in a subgraph that doesn't require "
                  "differentiation use var_no_grad = var.detach().")


def _wrap(arr, requires_grad=False):
    """A Tensor around an array (the one constructor every op uses)."""
    t = object.__new__(Tensor)
    t._data = arr
    t._requires_grad = requires_grad
    t._grad = None
    t.grad_fn = None
    t._base = None
    return t


def _wrap_view(arr, src):
    """A Tensor around arr, a view of src's memory: like _wrap, but it remembers its base
    (src, or src's own base), as every PyTorch view does, recorded or not, so an in-place
    write through it can give the base a history (elementwise_grad.rebase_inplace)."""
    t = object.__new__(Tensor)
    t._data = arr
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    base = src._base
    if base is None:
        base = src
    t._base = base
    if not base._requires_grad:
        _register_view(base, t)
    return t


def _register_view(base, view):
    """Remember (weakly) a view of a base outside the graph: if the base joins the graph
    later (an in-place write of a value requiring grad), the views taken
    before must require grad too, as PyTorch's views follow their base.  base._views is
    [prune_at, ref, ref, ...]; dead references are dropped whenever the list doubles."""
    try:
        views = base._views
    except AttributeError:
        base._views = [32, weakref.ref(view)]
        return
    views.append(weakref.ref(view))
    if len(views) > views[0]:
        alive = [r for r in views[1:] if r() is not None]
        views[:] = [max(32, 2 * len(alive)), *alive]


def _join_views(base):
    """base now requires grad: every live view of it taken while it did not gets a history
    as a view of base's current history (autograd.graph.refresh_view)."""
    try:
        views = base._views
    except AttributeError:
        return
    del base._views
    from .autograd.graph import refresh_view
    for ref in views[1:]:
        v = ref()
        if v is not None and v._base is base and v.grad_fn is None and not v._requires_grad:
            refresh_view(v)


def _wrap_dim(dim, ndim, op="dim"):
    if not isinstance(dim, builtins.int):
        try:
            dim = dim.__index__()
        except AttributeError:
            raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}") from None
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if dim < lo or dim > hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + ndim if dim < 0 and ndim > 0 else (0 if dim < 0 else dim)
