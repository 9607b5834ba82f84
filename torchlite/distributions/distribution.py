"""The Distribution base class (PyTorch's torch.distributions.Distribution): batch_shape and
event_shape, argument and sample validation, expand, and the derived properties."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import torchlite as tl

from . import constraints
from .utils import lazy_property

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._size import Size
    from .._tensor import Tensor

__all__ = ["Distribution"]


def _is_all_true(mask):
    """bool(mask.all()) (PyTorch's torch._is_all_true), through a float reduction: on large
    masks torchlite's bool all() is several times slower than converting and taking a float
    minimum, and validation runs on every log_prob."""
    if mask.numel() == 0:
        return True
    return bool(mask.view(tl.uint8).to(tl.float32).amin() > 0)


def _satisfies(constraint, value):
    """Whether every entry of value satisfies constraint.  On the real line that means no
    NaN, and any NaN makes the sum NaN: one float reduction answers for the usual case (the
    support check of Normal.log_prob, say) where the elementwise check costs three passes;
    a NaN sum (a NaN, or +inf with -inf) falls back to the elementwise check."""
    if type(constraint) is constraints._Real and value.is_floating_point() and \
            not bool(value.sum().isnan()):
        return True
    return _is_all_true(constraint.check(value))


class Distribution:
    """A family of distributions: subclasses define arg_constraints, support, sample or
    rsample, log_prob, expand, and what moments they have.

    Validation (of the parameters at construction, of values given to log_prob / cdf) is on
    unless validate_args=False, or after Distribution.set_default_validate_args(False);
    as in PyTorch, `python -O` turns the default off."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints = {}
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn validation on or off for distributions made without validate_args."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Size | Sequence[int] = (), event_shape: Size | Sequence[int] = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = tl.Size(batch_shape)
        self._event_shape = tl.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for name, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue                    # cannot be checked on its own
                if name not in vars(self) and isinstance(getattr(type(self), name, None),
                                                         lazy_property):
                    continue                    # not given: made lazily from what was given
                value = getattr(self, name)
                if not _satisfies(constraint, value):
                    raise ValueError(
                        f"Expected parameter {name} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")

    def expand(self, batch_shape: Size | Sequence[int], _instance: Distribution | None = None) -> Distribution:
        """A new distribution of this family whose parameters are expanded (views, no copy)
        to batch_shape; arguments are not validated again."""
        raise NotImplementedError

    def _get_checked_instance(self, cls, _instance=None):
        """The object expand fills in: _instance when a subclass passes one, else a bare
        instance of type(self) (a subclass with its own __init__ must define expand)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                f"__init__ method must also define a custom .expand() method.")
        return type(self).__new__(type(self)) if _instance is None else _instance

    def _expand_tensors(self, cls, batch_shape, _instance, *names):
        """expand's common part: the named tensors that this instance holds (given, or lazily
        computed already), each shaped batch_shape + its own trailing dims, expanded to the
        new batch_shape; the new instance is initialised without validation."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = tl.Size(batch_shape)
        nb = len(self._batch_shape)
        for name in names:
            if name in vars(self):
                value = vars(self)[name]
                new.__dict__[name] = value.expand(tuple(batch_shape) + tuple(value.shape[nb:]))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    @property
    def support(self) -> constraints.Constraint:
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def _extended_shape(self, sample_shape=()):
        return tl.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def sample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        with tl.no_grad():
            return self.rsample(sample_shape)

    def sample_n(self, n: int) -> Tensor:
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample((n,))

    def rsample(self, sample_shape: Size | Sequence[int] = ()) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized samples")

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def _validate_sample(self, value):
        if not isinstance(value, tl.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.ndim - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{tuple(value.shape)} vs {tuple(self._event_shape)}.")
        actual = tuple(value.shape)
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{type(self)} does not define `support` to enable sample validation. "
                          f"Please initialize the distribution with `validate_args=False` to "
                          f"turn off validation.", stacklevel=2)
            return
        if not _satisfies(support, value):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{actual}) to be within the support ({support!r}) of the "
                             f"distribution {self!r}, but found invalid values:\n{value}")

    def __repr__(self) -> str:
        args = []
        for name in self.arg_constraints:
            value = vars(self).get(name)
            if isinstance(value, tl.Tensor):
                args.append(f"{name}: {value if value.numel() == 1 else value.size()}")
        return f"{type(self).__name__}({', '.join(args)})"
