"""The Distribution base class (PyTorch's torch.distributions.Distribution): batch_shape and
event_shape, argument and sample validation, and the derived properties."""
import torchlite as tl

from . import constraints

__all__ = ["Distribution"]

_validate_default = True


class Distribution:
    """A family of distributions: subclasses define arg_constraints, support, sample or
    rsample, log_prob, and what moments they have."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints = {}
    support = None

    @staticmethod
    def set_default_validate_args(value):
        global _validate_default
        if value not in (True, False):
            raise ValueError
        _validate_default = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = tl.Size(batch_shape)
        self._event_shape = tl.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        else:
            self._validate_args = _validate_default
        if self._validate_args:
            for name, constraint in self.arg_constraints.items():
                if constraint is constraints.dependent or name not in vars(self) and \
                        isinstance(getattr(type(self), name, None), property):
                    continue
                value = getattr(self, name)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {name} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self).__name__} has no mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def _extended_shape(self, sample_shape=()):
        return tl.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def sample(self, sample_shape=()):
        with tl.no_grad():
            return self.rsample(sample_shape)

    def sample_n(self, n):
        return self.sample((n,))

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized samples")

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
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
        if self.support is not None and not bool(self.support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{actual}) to be within the support ({self.support!r}) of the "
                             f"distribution {self!r}, but found invalid values:\n{value}")

    def __repr__(self):
        params = ", ".join(f"{k}: {tuple(getattr(self, k).shape) if getattr(self, k).numel() > 1 else getattr(self, k)}"
                           for k in self.arg_constraints if k in vars(self))
        return f"{type(self).__name__}({params})"
