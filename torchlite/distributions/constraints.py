"""What values a distribution's parameters and samples may take (PyTorch's
torch.distributions.constraints); check(value) returns a bool tensor."""
import torchlite as tl

__all__ = ["Constraint", "real", "positive", "nonnegative", "unit_interval", "boolean",
           "simplex", "nonnegative_integer", "integer_interval", "interval", "greater_than",
           "real_vector", "dependent", "lower_cholesky", "positive_definite"]


class Constraint:
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__[1:] + "()"


class _Real(Constraint):
    def check(self, value):
        return value == value          # not NaN


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return value > self.lower_bound


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return value >= self.lower_bound


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)


class _NonnegativeInteger(Constraint):
    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & (value >= 0)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _RealVector(Constraint):
    event_dim = 1

    def check(self, value):
        return (value == value).all(-1)


class _LowerCholesky(Constraint):
    """Lower-triangular matrices with a positive diagonal."""
    event_dim = 2

    def check(self, value):
        lower = (value.tril() == value).flatten(-2).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _PositiveDefinite(Constraint):
    """Symmetric positive-definite matrices (a Cholesky factorisation exists)."""
    event_dim = 2

    def check(self, value):
        symmetric = ((value - value.mT).abs() <= 1e-6 * value.abs().amax((-2, -1), keepdim=True)
                     ).flatten(-2).all(-1)
        return symmetric & (tl.linalg.cholesky_ex(value).info == 0)


class _Dependent(Constraint):
    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


real = _Real()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
boolean = _Boolean()
simplex = _Simplex()
nonnegative_integer = _NonnegativeInteger()
real_vector = _RealVector()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
dependent = _Dependent()
interval = _Interval
greater_than = _GreaterThan
integer_interval = _IntegerInterval
