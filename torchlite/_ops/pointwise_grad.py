"""Backward formulas of the elementwise ops in pointwise.py, keyed by the kernel op's name.

Each formula takes the node (its saved tensors: x / a, b / result; its parameters) and the
output gradient g, and returns one gradient per input, written with Tensor ops so that they
are differentiable again (create_graph=True gives second derivatives).  Gradients of
broadcast inputs are summed back to the input's shape by `record_binary`."""
import math

from ..autograd.graph import Node, record, sum_to
from ..autograd.grad_mode import no_grad

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


class _Formula(Node):
    """A node whose backward is a formula from the tables below."""

    def backward(self, g):
        return self.formula(self, g)


def _x(n):
    return n.saved("x")


def _y(n):
    return n.saved("result")


# ---- unary: formula(node, g) -> (grad_x,) --------------------------------------------------
UNARY = {
    "neg": lambda n, g: (-g,),
    "abs": lambda n, g: (g * _x(n).sign(),),
    "sign": lambda n, g: (g * 0,),
    "square": lambda n, g: (g * _x(n) * 2,),
    "reciprocal": lambda n, g: (-g * _y(n) * _y(n),),
    "exp": lambda n, g: (g * _y(n),),
    "exp2": lambda n, g: (g * _y(n) * _LN2,),
    "expm1": lambda n, g: (g * (_y(n) + 1),),
    "log": lambda n, g: (g / _x(n),),
    "log2": lambda n, g: (g / (_x(n) * _LN2),),
    "log10": lambda n, g: (g / (_x(n) * _LN10),),
    "log1p": lambda n, g: (g / (_x(n) + 1),),
    "sqrt": lambda n, g: (g / (_y(n) * 2),),
    "rsqrt": lambda n, g: (g * _y(n) ** 3 * -0.5,),
    "sin": lambda n, g: (g * _x(n).cos(),),
    "cos": lambda n, g: (-g * _x(n).sin(),),
    "tan": lambda n, g: (g * (_y(n) * _y(n) + 1),),
    "asin": lambda n, g: (g / (1 - _x(n) * _x(n)).sqrt(),),
    "acos": lambda n, g: (-g / (1 - _x(n) * _x(n)).sqrt(),),
    "atan": lambda n, g: (g / (_x(n) * _x(n) + 1),),
    "sinh": lambda n, g: (g * _x(n).cosh(),),
    "cosh": lambda n, g: (g * _x(n).sinh(),),
    "tanh": lambda n, g: (g * (1 - _y(n) * _y(n)),),
    "asinh": lambda n, g: (g / (_x(n) * _x(n) + 1).sqrt(),),
    "acosh": lambda n, g: (g / (_x(n) * _x(n) - 1).sqrt(),),
    "atanh": lambda n, g: (g / (1 - _x(n) * _x(n)),),
    "erf": lambda n, g: (g * (-_x(n) * _x(n)).exp() * _TWO_OVER_SQRT_PI,),
    "erfc": lambda n, g: (g * (-_x(n) * _x(n)).exp() * -_TWO_OVER_SQRT_PI,),
    "erfinv": lambda n, g: (g * (_y(n) * _y(n)).exp() * (math.sqrt(math.pi) / 2),),
    "sigmoid": lambda n, g: (g * _y(n) * (1 - _y(n)),),
    "logit": lambda n, g: (_logit_grad(n, g),),
    "floor": lambda n, g: (g * 0,),
    "ceil": lambda n, g: (g * 0,),
    "round": lambda n, g: (g * 0,),
    "round_decimals": lambda n, g: (g * 0,),
    "trunc": lambda n, g: (g * 0,),
    "frac": lambda n, g: (g,),
    "relu": lambda n, g: (g * (_y(n) > 0),),
    "clamp": lambda n, g: (g * ((_x(n) >= n.params[0]) & (_x(n) <= n.params[1])),),
    "nan_to_num": lambda n, g: (g * _x(n).isfinite(),),
}


def _logit_grad(n, g):
    x, eps = _x(n), n.params[0]
    d = g / (x * (1 - x))
    if eps >= 0:                    # clamped inputs have zero slope (PyTorch's rule)
        d = d * ((x >= eps) & (x <= 1 - eps))
    return d


# ---- binary: formula(node, g) -> (grad_a, grad_b), before summing to the input shapes -------
def _a(n):
    return n.saved("a") if n.a_is_tensor else n.a


def _b(n):
    return n.saved("b") if n.b_is_tensor else n.b


def _pow_grads(n, g):
    a, b = _a(n), _b(n)
    ga = g * b * a ** (b - 1) if n.a_is_tensor else None
    gb = None
    if n.b_is_tensor:
        from .pointwise import where
        # d/db a**b = a**b * log(a); PyTorch takes 0 where a == 0 and b >= 0
        gb = g * where((a == 0) & (b >= 0), 0.0, _y(n) * (a.log() if n.a_is_tensor else math.log(a)))
    return ga, gb


def _max_min_grads(n, g, is_max):
    a, b = _a(n), _b(n)
    win_a = (a > b) if is_max else (a < b)
    tie = (a == b)
    ga = g * (win_a + tie * 0.5)
    gb = g * ((~win_a & ~tie) + tie * 0.5)
    return ga, gb


BINARY = {
    "add": lambda n, g: (g, g),
    "add_alpha": lambda n, g: (g, g * n.alpha),
    "sub": lambda n, g: (g, -g),
    "mul": lambda n, g: (g * _b(n), g * _a(n)),
    "div": lambda n, g: (g / _b(n), -g * _a(n) / (_b(n) * _b(n))),
    "div_trunc": lambda n, g: (g * 0, g * 0),
    "div_floor": lambda n, g: (g * 0, g * 0),
    "remainder": lambda n, g: (g, -g * _a(n).div(_b(n), rounding_mode="floor") if n.a_is_tensor
                               else -g * (n.a // _b(n))),
    "fmod": lambda n, g: (g, -g * (_a(n) / _b(n)).trunc()),
    "pow": _pow_grads,
    "atan2": lambda n, g: (g * _b(n) / (_a(n) * _a(n) + _b(n) * _b(n)),
                           -g * _a(n) / (_a(n) * _a(n) + _b(n) * _b(n))),
    "hypot": lambda n, g: (g * _a(n) / _y(n), g * _b(n) / _y(n)),
    "copysign": lambda n, g: (g * _a(n).sign() * _y(n).sign(), g * 0),
    "maximum": lambda n, g: _max_min_grads(n, g, True),
    "minimum": lambda n, g: _max_min_grads(n, g, False),
    "fmax": lambda n, g: _max_min_grads(n, g, True),
    "fmin": lambda n, g: _max_min_grads(n, g, False),
    "xlogy": lambda n, g: (g * _b(n).log() if n.b_is_tensor else g * math.log(n.b), g * _a(n) / _b(n)),
}


def _node(name, table, suffix):
    formula = table.get(name)
    if formula is None:
        return None
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = type("".join(p.capitalize() for p in name.split("_")) + suffix, (_Formula,), {})
        _NODE_CLASSES[name] = cls
    node = cls()
    node.formula = formula
    return node


_NODE_CLASSES = {}


def _not_differentiable(name, inputs, output):
    """Record a node that refuses to backpropagate, so a missing formula is an error and never
    a silently missing gradient."""
    class_name = "".join(p.capitalize() for p in name.split("_")) + "Backward0"

    def backward(node, g):
        raise RuntimeError(f"the derivative for '{name}' is not implemented")
    node = type(class_name, (Node,), {"backward": backward})()
    record(node, inputs, output)


def record_unary(name, x, result, params=()):
    node = _node(name, UNARY, "Backward0")
    if node is None:
        return _not_differentiable(name, (x,), result)
    node.params = params
    node.save(x=x)
    node.save_output(result=result)
    record(node, (x,), result)


def record_binary(name, a, b, result, alpha=1.0):
    from .._tensor import Tensor
    node = _node(name, BINARY, "Backward0")
    a_t, b_t = isinstance(a, Tensor), isinstance(b, Tensor)
    if node is None:
        return _not_differentiable(name, (a if a_t else None, b if b_t else None), result)
    node.a_is_tensor, node.b_is_tensor, node.alpha = a_t, b_t, alpha
    node.a = None if a_t else a
    node.b = None if b_t else b
    node.save(a=a if a_t else None, b=b if b_t else None)
    node.save_output(result=result)
    node.a_shape = a.shape if a_t else None
    node.b_shape = b.shape if b_t else None
    formula = node.formula

    def summed(n, g):
        ga, gb = formula(n, g)
        return (sum_to(ga, n.a_shape) if n.a_is_tensor and ga is not None else None,
                sum_to(gb, n.b_shape) if n.b_is_tensor and gb is not None else None)
    node.formula = summed
    record(node, (a if a_t else None, b if b_t else None), result)


# ---- ternary ---------------------------------------------------------------------------------
class WhereBackward0(Node):
    def backward(self, g):
        from .pointwise import where
        c = self.saved("condition")
        return (None,
                sum_to(where(c, g, 0.0), self.shapes[1]) if self.shapes[1] is not None else None,
                sum_to(where(c, 0.0, g), self.shapes[2]) if self.shapes[2] is not None else None)


class LerpBackward0(Node):
    def backward(self, g):
        s, e, w = (self.saved(k) if self.shapes[i] is not None else self.nums[i]
                   for i, k in enumerate(("start", "end", "weight")))
        return tuple(None if sh is None else sum_to(gr, sh) for gr, sh in
                     zip((g * (1 - w), g * w, g * (e - s)), self.shapes))


class AddcmulBackward0(Node):
    def backward(self, g):
        t1, t2 = self.saved("tensor1"), self.saved("tensor2")
        v = self.value
        return tuple(None if sh is None else sum_to(gr, sh) for gr, sh in
                     zip((g, g * v * t2, g * v * t1), self.shapes))


class AddcdivBackward0(Node):
    def backward(self, g):
        t1, t2 = self.saved("tensor1"), self.saved("tensor2")
        v = self.value
        return tuple(None if sh is None else sum_to(gr, sh) for gr, sh in
                     zip((g, g * v / t2, -g * v * t1 / (t2 * t2)), self.shapes))


def record_ternary(cls, names, inputs, result, value=1.0):
    from .._tensor import Tensor
    node = cls()
    tens = [x if isinstance(x, Tensor) else None for x in inputs]
    node.shapes = [x.shape if x is not None else None for x in tens]
    node.nums = [None if isinstance(x, Tensor) else x for x in inputs]
    node.value = value
    node.save(**{k: t for k, t in zip(names, tens)})
    record(node, tens, result)


# ---- in-place ops on tensors that are part of a graph ---------------------------------------------
def check_inplace(self, name):
    """PyTorch forbids in-place ops on a leaf that requires grad (while recording)."""
    if self.grad_fn is None and self.requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def rebase_inplace(self, out_of_place):
    """Run an in-place op on a tensor that is part of a graph: compute it out of place on a
    snapshot of the old value (so backward sees the input as it was), write the result into
    self's memory, and make self's history the new node."""
    from .._tensor import _wrap
    from .._core import elementwise as _ew
    old = _wrap(_ew.clone(self._data, True), self._requires_grad)
    old.grad_fn, old._output_nr = self.grad_fn, self.output_nr
    if self.grad_fn is None and getattr(self, "_grad_acc", None) is not None:
        old._grad_acc = self._grad_acc
    r = out_of_place(old)
    with no_grad():
        _ew.copy_(self._data, r._data)
    self._bump_version()
    self._requires_grad = r._requires_grad
    self.grad_fn, self._output_nr = r.grad_fn, r.output_nr
    return self
