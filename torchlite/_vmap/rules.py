"""vmap's batching rules: how each operation on logical tensors runs once on the physical
ones (batch dimension first).  The families, each one rule factory and a list of names:

- ELEMENTWISE: the operands aligned -- a batched operand of lower logical rank gets size-1
  dims after its batch dim, so logical broadcasting is physical broadcasting;
- DIMS: a logical dim argument d becomes d + 1 (a reduction over every dim becomes one over
  dims 1..R, or over the flattened element);
- TRAILING: ops on the last dims (matrices, normalised shapes, indices): the batch is one
  more leading dim;
- LEADING_N: layers whose input has an optional batch dim N (convolution, pooling): the
  batch folded into N;
- matmul and the products built on it, F.linear, convolution with batched weights (the batch
  as groups), losses (per element, then reduced per batch element), cat/stack, indexing,
  views and in-place methods: rules of their own below.

A rule returns NotImplemented where it does not apply (a batched weight it cannot fold, an
argument form it does not know); the caller then runs the fallback loop, which is always
right.  FUNCTIONS maps torchlite's function objects to rules, BY_NAME a Tensor method's
name to the function it is, METHODS the method-only rules."""
import inspect
import itertools

from .._tensor import Tensor
from .batched import Batched, _level, has_batched

__all__ = ["FUNCTIONS", "BY_NAME", "METHODS", "RANDOM", "RANDOM_METHODS", "build", "inplace"]

FUNCTIONS = {}
BY_NAME = {}
METHODS = {}
RANDOM = {}
RANDOM_METHODS = frozenset({"uniform_", "normal_", "bernoulli_", "random_", "exponential_",
                            "geometric_", "cauchy_", "log_normal_"})
_O = {}                     # the original functions the rules call, by name
_built = False


# ---- helpers ---------------------------------------------------------------------------------
def _size():
    return _level().size


def _rank(x):
    if type(x) is Batched:
        return x.value.dim() - 1
    if isinstance(x, Tensor):
        return x.dim()
    return 0


def _align(x, rank):
    """x's physical tensor broadcastable as a logical tensor of rank `rank` (non-tensors and
    unbatched tensors as they are: they broadcast from the right)."""
    if type(x) is not Batched:
        return x
    v = x.value
    k = rank - (v.dim() - 1)
    return v[(slice(None),) + (None,) * k] if k > 0 else v


def _expand(x):
    """The physical tensor of x, an unbatched tensor expanded over the batch."""
    if type(x) is Batched:
        return x.value
    return x.unsqueeze(0).expand(_size(), *x.shape)


def _wrap(out):
    if isinstance(out, Tensor):
        return Batched(out)
    if isinstance(out, tuple):
        parts = [_wrap(o) for o in out]
        return type(out)(*parts) if hasattr(out, "_fields") else tuple(parts)
    if isinstance(out, list):
        return [_wrap(o) for o in out]
    return out


def _bind(sig, args, kwargs):
    """The arguments bound to sig, or None where they do not bind (the loop then calls the
    function, which raises its own error)."""
    try:
        return sig.bind(*args, **kwargs)
    except TypeError:
        return None


def _pdim(d, rank):
    """Logical dim d of a rank-`rank` tensor as a physical dim."""
    if not isinstance(d, int) or isinstance(d, bool):
        raise TypeError(f"vmap: expected an int dim, got {type(d).__name__}")
    n = max(rank, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {d})")
    return d % n + 1


def _pdims(d, rank):
    if isinstance(d, (tuple, list)):
        return type(d)(_pdim(x, rank) for x in d)
    return _pdim(d, rank)


def _tensors_in(values):
    for v in values:
        if type(v) in (list, tuple):
            yield from (x for x in v if isinstance(x, (Tensor, Batched)))
        elif isinstance(v, (Tensor, Batched)):
            yield v


# ---- elementwise ----------------------------------------------------------------------------------
def _elementwise(fn):
    def rule(*args, **kwargs):
        rank, batched = 0, False
        for a in itertools.chain(args, kwargs.values()):
            t = type(a)
            if t is list or t is tuple:
                if any(type(x) is Batched for x in a):
                    return NotImplemented
            else:
                rank = max(rank, _rank(a))
                batched = batched or t is Batched
        if not batched:                      # a rule composing others on unbatched values
            return fn(*args, **kwargs)
        return _wrap(fn(*[_align(a, rank) for a in args],
                        **{k: _align(v, rank) for k, v in kwargs.items()}))
    return rule


ELEMENTWISE = """abs absolute acos arccos acosh arccosh add addcdiv addcmul angle asin arcsin asinh
arcsinh atan arctan atan2 arctan2 atanh arctanh bitwise_and bitwise_not bitwise_or bitwise_xor
bitwise_left_shift bitwise_right_shift ceil clamp clamp_min clamp_max clip conj conj_physical
copysign cos cosh deg2rad digamma div divide eq erf erfc erfinv exp exp2 expm1 float_power floor
floor_divide fmax fmin fmod frac ge greater greater_equal gt heaviside hypot i0 igamma igammac
isclose isfinite isinf isnan isneginf isposinf isreal le less less_equal lerp lgamma log log10
log1p log2 logaddexp logaddexp2 logical_and logical_not logical_or logical_xor logit lt
masked_fill maximum minimum mul multiply mvlgamma nan_to_num ne neg negative nextafter not_equal
polygamma positive pow rad2deg reciprocal relu remainder round rsqrt sigmoid sign sgn signbit sin
sinc sinh sqrt square sub subtract tan tanh true_divide trunc fix where xlogy zeros_like
ones_like empty_like full_like real imag relu6 selu celu gelu silu mish hardtanh hardswish
hardsigmoid leaky_relu softplus softsign tanhshrink softshrink hardshrink threshold logsigmoid
elu erfcx log_ndtr ndtr ndtri entr expit xlog1py sinc i0e i1 i1e alpha_dropout rsub lcm gcd
ldexp
dropout""".split()
# the Tensor-method-only conversions: the same values, another dtype, device or storage
_PASSTHROUGH = """clone detach contiguous float double half bfloat16 int long short char byte
bool to type type_as cpu cuda requires_grad_ detach_ cfloat cdouble""".split()


# ---- dims -------------------------------------------------------------------------------------------
class _DimRule:
    """fn whose `params` are logical dims of its first argument.  none: what a None dim
    means -- "all" (every logical dim, as a tuple), "flat" (the flattened element, fn taking
    one dim), "flat_values" (the same, keeping .values of a (values, indices) result),
    "softmax" (PyTorch's implicit softmax dim), or None (passed on)."""

    def __init__(self, fn, params, none=None, tensor_params=()):
        self.fn = fn
        self.sig = inspect.signature(fn)
        names = list(self.sig.parameters)
        self.first = names[0]
        self.params = params
        self.none = none
        self.tensor_params = tensor_params

    def __call__(self, *args, **kwargs):
        ba = _bind(self.sig, args, kwargs)
        if ba is None:
            return NotImplemented                       # the loop raises fn's own error
        x = ba.arguments[self.first]
        if type(x) is not Batched:
            return NotImplemented
        for name, v in ba.arguments.items():
            if name != self.first and name not in self.tensor_params and \
                    any(True for _ in _tensors_in([v])):
                return NotImplemented
            if name in self.tensor_params and type(v) is Batched:
                return NotImplemented
        rank = x.value.dim() - 1
        ba.arguments[self.first] = x.value
        for p in self.params:
            d = ba.arguments.get(p, self.sig.parameters[p].default)
            if d is inspect.Parameter.empty:
                continue
            if isinstance(d, bool):             # var(x, True): the legacy unbiased flag
                return NotImplemented
            if d is None or (self.none == "all" and isinstance(d, (tuple, list)) and not d):
                if self.none is None:
                    continue
                if rank == 0:
                    return NotImplemented
                if self.none == "all":
                    ba.arguments[p] = tuple(range(1, rank + 1))
                    continue
                if self.none == "softmax":
                    ba.arguments[p] = (0 if rank in (0, 1, 3) else 1) + 1
                    continue
                if ba.arguments.get("keepdim"):
                    return NotImplemented
                ba.arguments[self.first] = x.value.reshape(x.value.shape[0], -1)
                ba.arguments[p] = 1
                out = self.fn(*ba.args, **ba.kwargs)
                return _wrap(out.values if self.none == "flat_values" else out)
            if rank == 0:
                return NotImplemented
            ba.arguments[p] = _pdims(d, rank)
        return _wrap(self.fn(*ba.args, **ba.kwargs))


DIMS = {  # name: (dim params, what None means)
    "sum": (("dim",), "all"), "mean": (("dim",), "all"), "nansum": (("dim",), "all"),
    "nanmean": (("dim",), "all"), "amax": (("dim",), "all"), "amin": (("dim",), "all"),
    "aminmax": (("dim",), "flat"), "logsumexp": (("dim",), None),
    "var": (("dim",), "all"), "std": (("dim",), "all"), "var_mean": (("dim",), "all"),
    "std_mean": (("dim",), "all"), "count_nonzero": (("dim",), "all"),
    "prod": (("dim",), "flat"), "argmax": (("dim",), "flat"), "argmin": (("dim",), "flat"),
    "all": (("dim",), "flat"), "any": (("dim",), "flat"), "median": (("dim",), "flat_values"),
    "nanmedian": (("dim",), "flat_values"), "mode": (("dim",), None),
    "cumsum": (("dim",), None), "cumprod": (("dim",), None), "cummax": (("dim",), None),
    "cummin": (("dim",), None), "logcumsumexp": (("dim",), None),
    "softmax": (("dim",), "softmax"), "log_softmax": (("dim",), "softmax"),
    "softmin": (("dim",), "softmax"), "glu": (("dim",), None), "normalize": (("dim",), None),
    "sort": (("dim",), None), "argsort": (("dim",), None),
    "topk": (("dim",), None), "kthvalue": (("dim",), None), "unbind": (("dim",), None),
    "split": (("dim",), None), "chunk": (("dim",), None), "tensor_split": (("dim",), None),
    "narrow": (("dim",), None), "select": (("dim",), None), "index_select": (("dim",), None),
    "transpose": (("dim0", "dim1"), None),
    "swapaxes": (("axis0", "axis1"), None), "swapdims": (("dim0", "dim1"), None),
    "movedim": (("source", "destination"), None), "moveaxis": (("source", "destination"), None),
    "diagonal": (("dim1", "dim2"), None), "diff": (("dim",), None),
    "unflatten": (("dim",), None),
    "cumulative_trapezoid": (("dim",), None), "trapezoid": (("dim",), None),
    "rot90": (("dims",), None),
    "repeat_interleave": (("dim",), "flat"), "quantile": (("dim",), "flat"),
    "nanquantile": (("dim",), "flat"),
}


# ---- trailing-dim and leading-N ops ------------------------------------------------------------------
def _trailing(fn):
    """fn acting on the last dims of its first argument (the others unbatched)."""
    def rule(x, *args, **kwargs):
        if type(x) is not Batched or has_batched(args, kwargs):
            return NotImplemented
        return _wrap(fn(x.value, *args, **kwargs))
    return rule


TRAILING = """tril triu inverse det logdet slogdet matrix_exp cholesky pinverse matrix_power
layer_norm rms_norm embedding pixel_shuffle pixel_unshuffle
inv inv_ex det slogdet cholesky cholesky_ex qr svd svdvals eigh eigvalsh eig eigvals
matrix_rank pinv matrix_exp lu_factor lu cond cholesky_inverse""".split()

# torchlite's torch.* spellings of nn.functional ops (nn/functional/aten.py) whose arguments
# are F's in F's order up to the first tensor, so F's rule serves them (the others -- embedding
# with the weight first, batch_norm in ATen's order, the losses' integer reductions, dropout's
# required train flag -- keep the loop)
ATEN_SAME_RULE = """conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d
max_pool1d max_pool2d max_pool3d avg_pool1d adaptive_avg_pool1d adaptive_max_pool1d
max_pool1d_with_indices channel_shuffle pixel_shuffle pixel_unshuffle layer_norm rms_norm
group_norm instance_norm selu celu threshold hardshrink""".split()


def _leading_n(fn, unbatched_rank):
    """fn on an input with an optional leading batch dim N (unbatched_rank: the input's rank
    without it; None: N is always there): the vmap batch is N, or is folded into it."""
    def rule(x, *args, **kwargs):
        if type(x) is not Batched or has_batched(args, kwargs):
            return NotImplemented
        v = x.value
        rank = v.dim() - 1
        if unbatched_rank is not None and rank == unbatched_rank:
            return _wrap(fn(v, *args, **kwargs))
        if rank < 2 or (unbatched_rank is not None and rank != unbatched_rank + 1):
            return NotImplemented
        b, n = v.shape[0], v.shape[1]
        out = fn(v.reshape(b * n, *v.shape[2:]), *args, **kwargs)
        if isinstance(out, tuple):
            return tuple(Batched(o.reshape(b, n, *o.shape[1:])) for o in out)
        return Batched(out.reshape(b, n, *out.shape[1:]))
    return rule


LEADING_N = {"conv1d": 2, "conv2d": 3, "conv3d": 4, "conv_transpose1d": 2,
             "conv_transpose2d": 3, "conv_transpose3d": 4, "max_pool1d": 2, "max_pool2d": 3,
             "max_pool3d": 4, "avg_pool1d": 2, "avg_pool2d": 3, "avg_pool3d": 4,
             "adaptive_avg_pool1d": 2, "adaptive_avg_pool2d": 3, "adaptive_avg_pool3d": 4,
             "adaptive_max_pool1d": 2, "adaptive_max_pool2d": 3, "adaptive_max_pool3d": 4,
             "lp_pool1d": 2, "lp_pool2d": 3, "max_pool1d_with_indices": 2,
             "max_pool2d_with_indices": 3, "fold": 2, "unfold": 3, "dropout1d": 2,
             "dropout2d": None, "dropout3d": 4, "channel_shuffle": None, "interpolate": None, "upsample": None,
             "group_norm": None, "instance_norm": None, "local_response_norm": None,
             "upsample_nearest": None, "upsample_bilinear": None}


def _one_hot(fn):
    """num_classes=-1 (the largest value + 1) depends on each element's values: the loop."""
    trailing = _trailing(fn)

    def rule(x, num_classes=-1):
        return NotImplemented if num_classes == -1 else trailing(x, num_classes)
    return rule


def _masked_fill(fn):
    elementwise = _elementwise(fn)

    def rule(x, mask, value):
        if type(value) is Batched:          # a per-element 0-d value: where(mask, value, x)
            return FUNCTIONS[_O["where"]](mask, value, x)
        return elementwise(x, mask, value)
    return rule


def _batch_norm(fn):
    leading = _leading_n(fn, None)
    sig = inspect.signature(fn)

    def rule(*args, **kwargs):
        ba = _bind(sig, args, kwargs)
        if ba is None:
            return NotImplemented
        a = ba.arguments
        if not a.get("training", False):
            return leading(*args, **kwargs)
        # statistics over N and the spatial dims, per batch element and channel: the batch
        # folded into the channels, (B, N, C, ...) -> (N, B*C, ...); running statistics
        # (updated in place once per element) and batched weights take the loop
        x = a.get("input")
        if type(x) is not Batched or x.value.dim() < 3 or a.get("running_mean") is not None \
                or a.get("running_var") is not None \
                or any(type(a.get(k)) is Batched for k in ("weight", "bias")):
            return NotImplemented
        v = x.value
        b, n, c = v.shape[0], v.shape[1], v.shape[2]
        a["input"] = v.movedim(0, 1).reshape(n, b * c, *v.shape[3:])
        for k in ("weight", "bias"):
            if a.get(k) is not None:
                a[k] = a[k].repeat(b)
        out = fn(*ba.args, **ba.kwargs)     # (F's and ATen's argument orders alike)
        return Batched(out.reshape(n, b, c, *v.shape[3:]).movedim(1, 0))
    return rule


def _attention(fn):
    """scaled_dot_product_attention takes any leading (broadcasting) batch dims: the batched
    operands aligned to one logical rank, the vmap batch is one more leading dim (dropout
    draws random numbers: the loop, which applies vmap's randomness rules)."""
    sig = inspect.signature(fn)

    def rule(*args, **kwargs):
        ba = _bind(sig, args, kwargs)
        if ba is None or ba.arguments.get("dropout_p", 0.0):
            return NotImplemented
        a = ba.arguments
        names = ("query", "key", "value", "attn_mask")
        if not any(type(a.get(k)) is Batched for k in names):
            return fn(*args, **kwargs)
        rank = max(_rank(a.get(k)) for k in names)
        for k in names:
            if a.get(k) is not None:
                a[k] = _align(a[k], rank)
        return Batched(fn(*ba.args, **ba.kwargs))
    return rule


def _cosine_similarity(fn):
    """Elementwise over the broadcast operands, then a sum over `dim`: the operands aligned
    (both with the batch dim), dim made physical."""
    def rule(x1, x2, dim=1, eps=1e-8):
        if type(x1) is not Batched and type(x2) is not Batched:
            return fn(x1, x2, dim, eps)
        rank = max(_rank(x1), _rank(x2), 1)     # (0-d operands: dim 0 of one size-1 dim)

        def physical(x):        # rank + 1 dims, the batch first (size 1 for an unbatched x)
            if type(x) is Batched:
                return _align(x, rank)
            return x[(None,) * (rank - x.dim() + 1)]
        return Batched(fn(physical(x1), physical(x2), _pdim(dim, rank), eps))
    return rule


def _prelu(fn):
    """prelu scales the negative part by one weight or by a weight per channel (dim 1; a 1-d
    input has one channel): an unbatched weight is placed on the physical channel dim."""
    def rule(x, weight):
        if type(x) is not Batched or type(weight) is Batched:
            return NotImplemented
        v, rank = x.value, _rank(x)
        if weight.numel() == 1:
            return Batched(fn(v, weight))
        ch = 1
        if rank < 2 or v.shape[ch + 1] != weight.numel():
            return NotImplemented           # the loop raises prelu's own error
        w = weight.reshape([-1 if d == ch + 1 else 1 for d in range(rank + 1)])
        return Batched(_O["where"](v >= 0, v, v * w))
    return rule


def _pad(fn):
    trailing = _trailing(fn)

    def rule(x, pad, mode="constant", value=None):
        if mode == "constant":
            return trailing(x, pad, mode, value)
        return _leading_n(fn, len(pad) // 2 + 1)(x, pad, mode, value)
    return rule


# ---- products ------------------------------------------------------------------------------------
def _matmul(a, b):
    mm = _O["matmul"]
    if type(a) is not Batched and type(b) is not Batched:
        return mm(a, b)
    la, lb = _rank(a), _rank(b)
    if la == 0 or lb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{la}D and {lb}D")
    if type(b) is not Batched:                      # a batched
        v = a.value
        if la == 1:
            if lb <= 2:
                return Batched(mm(v, b))
            return Batched(mm(v[(slice(None),) + (None,) * (lb - 2) + (None,)], b).squeeze(-2))
        if lb >= 2 and lb > la:
            v = v[(slice(None),) + (None,) * (lb - la)]
        return Batched(mm(v, b))
    if type(a) is not Batched:                      # b batched
        w = b.value
        if lb == 1:
            if la == 1:
                return Batched(mm(w, a))
            return Batched(mm(a, w.t()).movedim(-1, 0))
        if la >= 2 and la > lb:
            w = w[(slice(None),) + (None,) * (la - lb)]
        return Batched(mm(a, w))
    v, w = a.value, b.value                         # both batched
    if la == 1 and lb == 1:
        return Batched((v * w).sum(-1))
    if la == 1:
        return Batched(mm(v[(slice(None),) + (None,) * (lb - 1)], w).squeeze(-2))
    if lb == 1:
        return Batched(mm(v, w[(slice(None),) + (None,) * (la - 2) + (Ellipsis, None)]
                          ).squeeze(-1))
    r = max(la, lb)
    v = v[(slice(None),) + (None,) * (r - la)] if r > la else v
    w = w[(slice(None),) + (None,) * (r - lb)] if r > lb else w
    return Batched(mm(v, w))


def _checked_matmul(name, ranks):
    def rule(a, b, *, out=None):
        if out is not None:
            return NotImplemented
        if (_rank(a), _rank(b)) not in ranks:
            raise RuntimeError(f"{name}: expected {' and '.join(f'{r}D' for r in ranks[0])} "
                               f"tensors, got {_rank(a)}D and {_rank(b)}D")
        return _matmul(a, b)
    return rule


def _add(a, b):
    return FUNCTIONS[_O["add"]](a, b)


def _mul(a, b):
    return FUNCTIONS[_O["mul"]](a, b)


def _t(x):
    if type(x) is Batched:
        return Batched(x.value.transpose(-1, -2)) if x.ndim == 2 else x
    return x.t()


def _linear(x, weight, bias=None):
    if type(weight) is not Batched and type(bias) is not Batched:
        if type(x) is not Batched:
            return NotImplemented
        return Batched(_O["linear"](x.value, weight, bias))
    out = _matmul(x, _t(weight))
    return out if bias is None else _add(out, bias)


def _addmm_like(product):
    def rule(input, a, b, *, beta=1, alpha=1, out=None):
        if out is not None:
            return NotImplemented
        p = product(a, b)
        if alpha != 1:
            p = _mul(p, alpha)
        if beta == 0:
            return p
        return _add(p, input if beta == 1 else _mul(input, beta))
    return rule


def _addbmm(input, a, b, *, beta=1, alpha=1, out=None):
    if out is not None:
        return NotImplemented
    p = _matmul(a, b)
    p = Batched(p.value.sum(1)) if type(p) is Batched else p.sum(0)
    if alpha != 1:
        p = _mul(p, alpha)
    return p if beta == 0 else _add(p, input if beta == 1 else _mul(input, beta))


def _outer(a, b):
    return _mul(_unsqueeze(a, -1), _unsqueeze(b, 0))


def _unsqueeze(x, d):
    if type(x) is Batched:
        return Batched(x.value.unsqueeze(d % (x.ndim + 1) + 1))
    return x.unsqueeze(d)


def _einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str) or "->" not in equation:
        return NotImplemented
    lhs, rhs = equation.replace(" ", "").split("->")
    specs = lhs.split(",")
    if len(specs) != len(operands):
        return NotImplemented
    used = set(equation)
    letter = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
                  if c not in used)
    new = [letter + s if type(o) is Batched else s for s, o in zip(specs, operands)]
    phys = [o.value if type(o) is Batched else o for o in operands]
    return Batched(_O["einsum"](",".join(new) + "->" + letter + rhs, *phys))


def _conv_batched_weight(fn, spatial):
    """Convolution with a batched weight (per-sample gradients of a CNN): the batch becomes
    groups -- input [N, B*C, ...], weight [B*O, C/g, ...], groups g*B."""
    def rule(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        if type(weight) is not Batched:
            if type(bias) is Batched:
                return NotImplemented
            return _leading_n(fn, spatial + 1)(x, weight, bias, stride, padding, dilation,
                                               groups)
        rank = _rank(x)
        if rank not in (spatial + 1, spatial + 2):
            return NotImplemented
        b = _size()
        xv = _expand(x)
        if rank == spatial + 1:
            xv = xv.unsqueeze(1)
        n, c = xv.shape[1], xv.shape[2]
        xv = xv.transpose(0, 1).reshape(n, b * c, *xv.shape[3:])
        w = weight.value
        o = w.shape[1]
        bias_v = None if bias is None else _expand(bias).reshape(b * o)
        out = fn(xv, w.reshape(b * o, *w.shape[2:]), bias_v, stride, padding, dilation,
                 groups * b)
        out = out.reshape(n, b, o, *out.shape[2:]).transpose(0, 1)
        return Batched(out.squeeze(1) if rank == spatial + 1 else out)
    return rule


# ---- losses -----------------------------------------------------------------------------------------
def _reduce_per_element(per, reduction):
    v = per.value if type(per) is Batched else _expand(per)
    if reduction == "none":
        return Batched(v)
    flat = v.reshape(v.shape[0], -1)
    if reduction == "sum":
        return Batched(flat.sum(1))
    if reduction == "mean":
        return Batched(flat.mean(1))
    if reduction == "batchmean":
        return Batched(flat.sum(1) / (v.shape[1] if v.dim() > 1 else 1))
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _full(args):
    """The tensor arguments (Tensor or Batched) expanded to the physical shape [B, *the
    broadcast of their logical shapes] -- for functions that insist on equal shapes (the
    binary cross-entropies), where plain alignment would leave an unbatched target short."""
    shapes = [tuple(a.shape) for a in args.values() if isinstance(a, (Tensor, Batched))]
    shape = tuple(_O["broadcast_shapes"](*shapes))
    b = _size()
    out = {}
    for k, a in args.items():
        if type(a) is Batched:
            out[k] = _align(a, len(shape)).expand(b, *shape)
        elif isinstance(a, Tensor):
            out[k] = a.expand(b, *shape)
        else:
            out[k] = a
    return out


def _pointwise_loss(fn):
    sig = inspect.signature(fn)

    def rule(*args, **kwargs):
        ba = _bind(sig, args, kwargs)
        if ba is None:
            return NotImplemented
        if ba.arguments.get("size_average") is not None or ba.arguments.get("reduce") is not None:
            return NotImplemented
        reduction = ba.arguments.get("reduction", sig.parameters["reduction"].default)
        ba.arguments["reduction"] = "none"
        ba.arguments.update(_full(dict(ba.arguments)))
        return _reduce_per_element(Batched(fn(*ba.args, **ba.kwargs)), reduction)
    return rule


def _class_loss(fn):
    """cross_entropy and nll_loss: input [C] or [N, C], per batch element."""
    sig = inspect.signature(fn)

    def rule(*args, **kwargs):
        ba = _bind(sig, args, kwargs)
        if ba is None:
            return NotImplemented
        a = ba.arguments
        x, target, weight = a["input"], a["target"], a.get("weight")
        if a.get("size_average") is not None or a.get("reduce") is not None or \
                type(weight) is Batched or _rank(x) not in (1, 2):
            return NotImplemented
        reduction = a.get("reduction", "mean")
        ignore = a.get("ignore_index", -100)
        xv, tv = _expand(x), _expand(target)
        b, c = xv.shape[0], xv.shape[-1]
        probabilities = tv.is_floating_point()
        a["input"] = xv.reshape(-1, c)
        a["target"] = tv.reshape(-1, c) if probabilities else tv.reshape(-1)
        a["reduction"] = "none"
        per = fn(*ba.args, **ba.kwargs).reshape(b, *xv.shape[1:-1])
        if reduction != "mean" or probabilities:
            return _reduce_per_element(Batched(per), reduction)
        t = tv.reshape(b, -1)
        keep = t != ignore
        if weight is None:
            count = keep.sum(1).to(per.dtype)
        else:
            count = (weight[t.clamp(0, c - 1)] * keep.to(weight.dtype)).sum(1)
        return Batched(per.reshape(b, -1).sum(1) / count)
    return rule


POINTWISE_LOSSES = """mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy
binary_cross_entropy_with_logits soft_margin_loss kl_div poisson_nll_loss hinge_embedding_loss
margin_ranking_loss multilabel_soft_margin_loss triplet_margin_loss""".split()
# (the last two give one value per row of their same-shaped operands, over any leading dims:
# reduction='none' is then the per-element value the rule reduces)


def _paired_leading_n(fn, unbatched_rank):
    """A layer taking two tensors that share the optional leading batch dim N (max_unpool's
    input and indices, grid_sample's input and grid; unbatched_rank: the input's rank without
    N, None where N is required): both folded into N (an unbatched one expanded over the
    batch)."""
    def rule(x, other, *args, **kwargs):
        if not (type(x) is Batched or type(other) is Batched) or has_batched(args, kwargs):
            return NotImplemented
        xv, ov = _expand(x), _expand(other)
        rank = xv.dim() - 1
        if unbatched_rank is not None and rank == unbatched_rank and ov.dim() == xv.dim():
            return Batched(fn(xv, ov, *args, **kwargs))             # no N: the batch is N
        if rank < 2 or (unbatched_rank is not None and rank != unbatched_rank + 1) \
                or ov.dim() < 3 or ov.shape[1] != xv.shape[1]:
            return NotImplemented
        b, n = xv.shape[0], xv.shape[1]
        out = fn(xv.reshape(b * n, *xv.shape[2:]), ov.reshape(b * n, *ov.shape[2:]), *args, **kwargs)
        return Batched(out.reshape(b, n, *out.shape[1:]))
    return rule


def _bilinear(fn):
    """x1^T W x2 over the last dims, any leading dims: both operands expanded over the batch,
    aligned to one rank (the weight and bias unbatched)."""
    def rule(input1, input2, weight, bias=None):
        if type(weight) is Batched or type(bias) is Batched:
            return NotImplemented
        rank = max(_rank(input1), _rank(input2))
        a, b = (_align(x, rank) if type(x) is Batched else x[(None,) * (rank - x.dim() + 1)]
                for x in (input1, input2))
        shape = (_size(),) + tuple(_O["broadcast_shapes"](a.shape[1:-1], b.shape[1:-1]))
        return Batched(fn(a.expand(*shape, a.shape[-1]), b.expand(*shape, b.shape[-1]), weight, bias))
    return rule


def _pairwise_distance(fn):
    """|x1 - x2 + eps|_p over the last dim of the broadcast operands: both aligned (with the
    batch dim), the norm still over the last dim."""
    def rule(x1, x2, p=2.0, eps=1e-6, keepdim=False):
        if type(x1) is not Batched and type(x2) is not Batched:
            return fn(x1, x2, p, eps, keepdim)
        rank = max(_rank(x1), _rank(x2), 1)
        a, b = (_align(x, rank) if type(x) is Batched else x[(None,) * (rank - x.dim() + 1)]
                for x in (x1, x2))
        return Batched(fn(a, b, p, eps, keepdim))
    return rule


# ---- joining ------------------------------------------------------------------------------------
def _cat(tensors, dim=0, *, out=None):
    if out is not None or not isinstance(tensors, (list, tuple)):
        return NotImplemented
    ranks = {_rank(t) for t in tensors if type(t) is Batched}
    if len(ranks) != 1:
        return NotImplemented
    rank = ranks.pop()
    if rank == 0:
        return NotImplemented
    return Batched(_O["cat"]([_expand(t) for t in tensors], _pdim(dim, rank)))


def _stack(tensors, dim=0, *, out=None):
    if out is not None or not isinstance(tensors, (list, tuple)):
        return NotImplemented
    rank = max(_rank(t) for t in tensors)
    return Batched(_O["stack"]([_expand(t) for t in tensors], _pdim(dim, rank + 1)))


def _gather(x, dim, index, *, sparse_grad=False, out=None):
    if out is not None or _rank(x) == 0:
        return NotImplemented
    return Batched(_O["gather"](_expand(x), _pdim(dim, _rank(x)), _expand(index)))


def _take_along_dim(x, indices, dim=None, *, out=None):
    """take_along_dim with the batch as one more leading dim of both operands (dim=None: each
    element's flattened values)."""
    if out is not None or not isinstance(indices, (Tensor, Batched)):
        return NotImplemented
    rank = max(_rank(x), _rank(indices))
    xv, iv = _expand(x), _expand(indices)
    if dim is None:
        return Batched(_O["take_along_dim"](xv.reshape(xv.shape[0], -1),
                                             iv.reshape(iv.shape[0], -1), 1))
    if _rank(x) != _rank(indices) or rank == 0:
        return NotImplemented                   # (the loop gives take_along_dim's own errors)
    return Batched(_O["take_along_dim"](xv, iv, _pdim(dim, rank)))


def _index_op(name):
    """index_add/index_copy (input, dim, index, source) and index_fill (input, dim, index,
    value): the batch leads input and source; the index (and a fill value) stay unbatched --
    a batched one keeps the loop."""
    def rule(x, dim, index, source, *, out=None, **kwargs):
        if out is not None or type(index) is Batched or _rank(x) == 0:
            return NotImplemented
        if name == "index_fill":
            if type(x) is not Batched or type(source) is Batched:
                return NotImplemented
            return Batched(_O[name](x.value, _pdim(dim, _rank(x)), index, source))
        if not isinstance(source, (Tensor, Batched)) or _rank(source) != _rank(x):
            return NotImplemented
        return Batched(_O[name](_expand(x), _pdim(dim, _rank(x)), index, _expand(source), **kwargs))
    return rule


def _cross(x, other, dim=None, *, out=None):
    """cross along a given logical dim, both operands with the batch leading (their other
    dims broadcast as in the loop); dim=None (the first dim of size 3) keeps the loop."""
    if dim is None or out is not None or _rank(x) != _rank(other) or _rank(x) == 0:
        return NotImplemented
    return Batched(_O["cross"](_expand(x), _expand(other), dim=_pdim(dim, _rank(x))))


def _scatter_like(name):
    def rule(x, dim, index, src=None, *args, **kwargs):
        if type(x) is not Batched or kwargs.get("out") is not None:
            return NotImplemented
        if isinstance(src, (Tensor, Batched)):
            src = _expand(src)
        return Batched(_O[name](x.value, _pdim(dim, _rank(x)), _expand(index), src, *args,
                                **kwargs))
    return rule


def _where(condition, input=None, other=None, *, out=None):
    if input is None or out is not None:
        return NotImplemented
    return _elementwise(_O["where"])(condition, input, other)


def _max_min(name, elementwise_name, reduction_name):
    dim_rule = [None]

    def rule(x, dim=None, keepdim=False, *, out=None):
        if out is not None:
            return NotImplemented
        if isinstance(dim, (Tensor, Batched)):
            return FUNCTIONS[_O[elementwise_name]](x, dim)
        if type(x) is not Batched:
            return NotImplemented
        if dim is None:
            if x.ndim == 0:
                return x
            return Batched(_O[reduction_name](x.value.reshape(x.value.shape[0], -1), 1))
        if dim_rule[0] is None:
            dim_rule[0] = _DimRule(_O[name], ("dim",))
        return dim_rule[0](x, dim, keepdim)
    return rule


def _roll(x, shifts, dims=None):
    if type(x) is not Batched:
        return NotImplemented
    v = x.value
    if dims is None:
        return Batched(_O["roll"](v.reshape(v.shape[0], -1), shifts, 1).reshape(v.shape))
    return Batched(_O["roll"](v, shifts, _pdims(dims, x.ndim)))


def _as_strided(x, size, stride, storage_offset=None):
    """as_strided of each element as if it were its own tensor: sizes, strides and the
    offset count from the element's first value (the batch stride steps between elements)."""
    if type(x) is not Batched:
        return NotImplemented
    v = x.value
    base = v.storage_offset() + (0 if storage_offset is None else storage_offset)
    return Batched(v.as_strided((v.shape[0],) + tuple(size), (v.stride(0),) + tuple(stride),
                                base))


def _flip(x, *args, dims=None):
    if type(x) is not Batched:
        return NotImplemented
    dims = dims if dims is not None else _shape_arg(args)
    return Batched(x.value.flip(_pdims(tuple(dims), x.ndim)))


def _flatten(x, start_dim=0, end_dim=-1):
    if type(x) is not Batched:
        return NotImplemented
    if x.ndim == 0:
        return Batched(x.value.reshape(x.value.shape[0], 1))
    return Batched(x.value.flatten(_pdim(start_dim, x.ndim), _pdim(end_dim, x.ndim)))


def _squeeze(x, dim=None):
    if type(x) is not Batched:
        return NotImplemented
    shape = x.shape
    if x.ndim == 0:
        return NotImplemented
    if dim is None:
        dims = tuple(i + 1 for i, s in enumerate(shape) if s == 1)
        return Batched(x.value.squeeze(dims) if dims else x.value)
    return Batched(x.value.squeeze(_pdims(dim, x.ndim)))


def _unsqueeze_rule(x, dim):
    if type(x) is not Batched:
        return NotImplemented
    n = x.ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return Batched(x.value.unsqueeze(dim % n + 1))


def _diag(x, diagonal=0):
    if type(x) is not Batched:
        return NotImplemented
    if x.ndim == 1:
        return Batched(_O["diag_embed"](x.value, diagonal))
    return Batched(_O["diagonal"](x.value, diagonal, 1, 2))


def _trace(x):
    if type(x) is not Batched or x.ndim != 2:
        return NotImplemented
    return Batched(_O["diagonal"](x.value, 0, 1, 2).sum(-1))


def _shape_arg(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)) or \
            (len(args) == 1 and type(args[0]).__name__ == "Size"):
        return tuple(args[0])
    return tuple(args)


def _reshape_fn(x, shape):
    if type(x) is not Batched:
        return NotImplemented
    return Batched(x.value.reshape(x.value.shape[0], *shape))


def _broadcast_to(x, shape):
    return _expand_method(x, *shape) if type(x) is Batched else NotImplemented


def _expand_method(x, *sizes):
    sizes = _shape_arg(sizes)
    v = x.value
    k = len(sizes) - x.ndim
    if k < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({x.ndim})")
    return Batched(v[(slice(None),) + (None,) * k].expand(v.shape[0], *sizes))


def _repeat_method(x, *sizes):
    sizes = _shape_arg(sizes)
    v = x.value
    k = len(sizes) - x.ndim
    if k < 0:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    return Batched(v[(slice(None),) + (None,) * k].repeat(1, *sizes))


def _permute_method(x, *dims):
    dims = _shape_arg(dims)
    if len(dims) != x.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {x.ndim} is not equal to len(dims) = {len(dims)}")
    return Batched(x.value.permute(0, *[_pdim(d, x.ndim) for d in dims]))


def _t_method(x):
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return _t(x)


# ---- indexing ----------------------------------------------------------------------------------------
def _index_key(key):
    """The physical key for a logical one, or None where the rule does not apply (batched or
    boolean indices, advanced indices that are not adjacent)."""
    key = key if isinstance(key, tuple) else (key,)
    advanced = []
    for i, k in enumerate(key):
        if type(k) is Batched:
            return None
        if isinstance(k, Tensor):
            if k.dtype.is_floating_point or str(k.dtype) == "torchlite.bool":
                return None
            advanced.append(i)
        elif isinstance(k, (list, bool)):
            return None
    if advanced:
        ints = [i for i, k in enumerate(key) if isinstance(k, int)]
        spots = sorted(advanced + ints)
        if spots[-1] - spots[0] + 1 != len(spots):
            return None
    return (slice(None),) + key


def _getitem(x, key):
    pkey = _index_key(key)
    if pkey is None:
        return NotImplemented
    return Batched(x.value[pkey])


def _setitem(x, key, value):
    pkey = _index_key(key)
    if pkey is None:
        return NotImplemented
    region = x.value[pkey]
    x.value[pkey] = _align(value, region.dim() - 1)
    return None


# ---- in place -----------------------------------------------------------------------------------------
_INPLACE_EXTRA = {"copy_", "fill_", "zero_", "masked_fill_", "clamp_", "clamp_min_",
                  "clamp_max_", "lerp_", "addcmul_", "addcdiv_"}


def inplace(name, x, args, kwargs):
    """x.name(*args) for an in-place elementwise method, on the physical tensor."""
    base = name[:-1]
    if base not in _ELEMENTWISE_NAMES and name not in _INPLACE_EXTRA:
        return NotImplemented
    rank = x.ndim
    for a in _tensors_in(list(args) + list(kwargs.values())):
        if _rank(a) > rank:
            raise RuntimeError(f"vmap: {name}(self, *extra_args) is not possible because the "
                               f"argument of logical rank {_rank(a)} does not broadcast to self "
                               f"of logical rank {rank}")
    if name == "fill_" and args and type(args[0]) is Batched:
        x.value.copy_(_align(args[0], rank).expand_as(x.value))
        return x
    getattr(x.value, name)(*[_align(a, rank) for a in args],
                           **{k: _align(v, rank) for k, v in kwargs.items()})
    return x


_ELEMENTWISE_NAMES = set()


# ---- randomness ---------------------------------------------------------------------------------------
class _Random:
    """A random function: whether a call draws (dropout only in training), and its rule for
    randomness='same' with batched arguments (None: the same-state loop)."""
    __slots__ = ("draws", "same")

    def __init__(self, fn, same=None):
        self.same = same
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        if sig is not None and "training" in sig.parameters:
            params = sig.parameters

            def draws(args, kwargs):          # dropout: only in training, and not with p=0
                try:
                    a = sig.bind(*args, **kwargs).arguments
                except TypeError:
                    return True
                p = a.get("p", params["p"].default if "p" in params else 1)
                return bool(a.get("training", params["training"].default)) and p != 0
            self.draws = draws
        else:
            self.draws = lambda args, kwargs: True


def _dropout_same(fn):
    def same(x, *args, **kwargs):
        if type(x) is not Batched or has_batched(args, kwargs):
            return NotImplemented
        kwargs.pop("inplace", None)
        if len(args) >= 3:
            args = args[:2]
        mask = fn(_O["ones_like"](x.value[0]), *args, **kwargs)
        return _mul(x, mask)
    return same


def _like_same(fn):
    def same(x, *args, **kwargs):
        if type(x) is not Batched or has_batched(args, kwargs):
            return NotImplemented
        return fn(x.value[0], *args, **kwargs)          # one draw, unbatched
    return same


_RANDOM_FUNCTIONS = """rand randn randint randperm bernoulli multinomial normal poisson
rand_like randn_like randint_like dropout dropout1d dropout2d dropout3d alpha_dropout
feature_alpha_dropout gumbel_softmax rrelu""".split()


# ---- the tables -----------------------------------------------------------------------------------
def _namespaces():
    import sys
    import torchlite
    import torchlite.nn.functional as F
    mods = [torchlite, F]
    for path in ("torchlite.linalg", "torchlite.special", "torchlite.fft"):
        if path in sys.modules:
            mods.append(sys.modules[path])
    return mods


def _lookup(name, mods):
    """Every distinct function called `name` in the namespaces."""
    found = []
    for m in mods:
        f = vars(m).get(name)
        if callable(f) and not isinstance(f, type) and f not in found:
            found.append(getattr(f, "_vmap_original", f))
    return found


def build():
    """Fill the tables (once, with the original functions: before the door first opens)."""
    global _built
    if _built:
        return
    import torchlite
    import torchlite.nn.functional as F
    mods = _namespaces()

    def register(name, make):
        for f in _lookup(name, mods):
            try:
                FUNCTIONS[f] = make(f)
            except (TypeError, ValueError):     # no Python signature to bind: the loop
                pass
    for name in ("matmul", "add", "mul", "linear", "einsum", "cat", "stack", "gather", "where",
                 "take_along_dim", "cross", "index_add", "index_copy", "index_fill",
                 "broadcast_shapes", "polygamma", "as_strided",
                 "roll", "diagonal", "diag_embed", "ones_like", "scatter", "scatter_add",
                 "scatter_reduce"):
        f = getattr(torchlite, name, None) or getattr(F, name)
        _O[name] = f
    for name in ELEMENTWISE:
        _ELEMENTWISE_NAMES.add(name)
        register(name, _elementwise)
    for name, (params, none) in DIMS.items():
        register(name, lambda f, p=params, n=none: _DimRule(
            f, p, n, tensor_params=("index",) if f.__name__ == "index_select" else ()))
    for name in TRAILING:
        register(name, _trailing)
    for name, rank in LEADING_N.items():
        register(name, lambda f, r=rank: _leading_n(f, r))
    for name, spatial in (("conv1d", 1), ("conv2d", 2), ("conv3d", 3)):
        register(name, lambda f, s=spatial: _conv_batched_weight(f, s))
    import importlib
    aten = importlib.import_module("torchlite.nn.functional.aten")
    for name in ATEN_SAME_RULE:
        rule = FUNCTIONS.get(getattr(F, name, None))
        if rule is not None:
            FUNCTIONS[getattr(aten, name)] = _same_rule_for(getattr(aten, name), name)
    register("scaled_dot_product_attention", _attention)
    for name, rank in (("max_unpool1d", 2), ("max_unpool2d", 3), ("max_unpool3d", 4), ("grid_sample", None)):
        register(name, lambda f, r=rank: _paired_leading_n(f, r))
    register("bilinear", _bilinear)
    register("pairwise_distance", _pairwise_distance)
    for name, make in (("cosine_similarity", _cosine_similarity), ("prelu", _prelu),
                       ("batch_norm", _batch_norm)):         # (binds its arguments by name)
        register(name, make)
        FUNCTIONS[getattr(aten, name)] = make(getattr(aten, name))     # torch.* spelling: F's order
    register("one_hot", _one_hot)
    register("masked_fill", _masked_fill)
    register("pad", _pad)
    register("matmul", lambda f: lambda a, b, *, out=None: _matmul(a, b) if out is None
             else NotImplemented)
    register("mm", lambda f: _checked_matmul("mm", ((2, 2),)))
    register("bmm", lambda f: _checked_matmul("bmm", ((3, 3),)))
    register("mv", lambda f: _checked_matmul("mv", ((2, 1),)))
    register("dot", lambda f: _checked_matmul("dot", ((1, 1),)))
    register("inner", lambda f: lambda a, b: _matmul(a, b) if _rank(a) == _rank(b) == 1
             else NotImplemented)
    register("outer", lambda f: _outer)
    register("ger", lambda f: _outer)
    register("linear", lambda f: _linear)
    register("addmm", lambda f: _addmm_like(_checked_matmul("addmm", ((2, 2),))))
    register("addmv", lambda f: _addmm_like(_checked_matmul("addmv", ((2, 1),))))
    register("baddbmm", lambda f: _addmm_like(_checked_matmul("baddbmm", ((3, 3),))))
    register("addbmm", lambda f: _addbmm)
    register("einsum", lambda f: _einsum)
    for name in POINTWISE_LOSSES:
        register(name, _pointwise_loss)
    register("cross_entropy", _class_loss)
    register("nll_loss", _class_loss)
    register("cat", lambda f: _cat)
    register("concat", lambda f: _cat)
    register("concatenate", lambda f: _cat)
    register("stack", lambda f: _stack)
    register("gather", lambda f: _gather)
    register("take_along_dim", lambda f: _take_along_dim)
    register("cross", lambda f: _cross)
    for name in ("index_add", "index_copy", "index_fill"):
        register(name, lambda f, n=name: _index_op(n))
    for name in ("scatter", "scatter_add", "scatter_reduce"):
        register(name, lambda f, n=name: _scatter_like(n))
    register("where", lambda f: _where)
    register("max", lambda f: _max_min("max", "maximum", "amax"))
    register("min", lambda f: _max_min("min", "minimum", "amin"))
    _O["max"], _O["min"] = torchlite.max, torchlite.min
    _O["maximum"], _O["minimum"] = torchlite.maximum, torchlite.minimum
    _O["amax"], _O["amin"] = torchlite.amax, torchlite.amin
    register("roll", lambda f: _roll)
    register("flatten", lambda f: _flatten)
    register("flip", lambda f: _flip)
    register("as_strided", lambda f: _as_strided)
    register("as_strided_copy", lambda f: lambda *a, **k: (
        lambda r: r if r is NotImplemented else Batched(r.value.clone()))(_as_strided(*a, **k)))
    register("squeeze", lambda f: _squeeze)
    register("unsqueeze", lambda f: _unsqueeze_rule)
    register("diag", lambda f: _diag)
    register("trace", lambda f: _trace)
    register("reshape", lambda f: _reshape_fn)
    register("broadcast_to", lambda f: _broadcast_to)
    # function forms of Tensor methods with rules (torch.permute(x, dims), torch.t(x), ...)
    register("permute", lambda f: _batched_only(lambda x, dims: _permute_method(x, *dims)))
    register("t", lambda f: _batched_only(_t_method))
    register("clone", lambda f: _batched_only(
        lambda x, *, memory_format=None: Batched(x.value.clone())))
    register("detach", lambda f: _batched_only(lambda x: Batched(x.value.detach())))
    register("ravel", lambda f: _batched_only(
        lambda x: Batched(x.value.reshape(x.value.shape[0], -1))))
    register("fliplr", lambda f: _batched_only(lambda x: _flip(x, 1) if x.ndim >= 2 else NotImplemented))
    register("flipud", lambda f: _batched_only(lambda x: _flip(x, 0) if x.ndim >= 1 else NotImplemented))
    for name in _RANDOM_FUNCTIONS:
        for f in _lookup(name, mods):
            if name == "dropout":             # a multiplicative mask: one for the batch
                RANDOM[f] = _Random(f, _dropout_same(f))
            elif name.endswith("_like"):
                RANDOM[f] = _Random(f, _like_same(f))
            else:
                RANDOM[f] = _Random(f)
    for name in dir(Tensor):
        f = getattr(torchlite, name, None)
        if f is not None and f in FUNCTIONS:
            BY_NAME[name] = f
    for name in ("add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "matmul",
                 "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                 "bitwise_right_shift", "eq", "ne", "lt", "le", "gt", "ge", "neg", "abs",
                 "bitwise_not"):
        BY_NAME[name] = getattr(torchlite, name)
    METHODS.update({
        "view": lambda x, *s: (Batched(x.value.view(*s)) if len(s) == 1 and not isinstance(
            s[0], (int, tuple, list)) and type(s[0]).__name__ != "Size"
            else Batched(x.value.reshape(x.value.shape[0], *_shape_arg(s)))),
        "reshape": lambda x, *s: Batched(x.value.reshape(x.value.shape[0], *_shape_arg(s))),
        "view_as": lambda x, o: Batched(x.value.reshape(x.value.shape[0], *o.shape)),
        "reshape_as": lambda x, o: Batched(x.value.reshape(x.value.shape[0], *o.shape)),
        "expand": _expand_method,
        "expand_as": lambda x, o: _expand_method(x, *o.shape),
        "repeat": _repeat_method,
        "permute": _permute_method,
        "t": _t_method,
        # x.where(condition, y) is where(condition, x, y); x.polygamma(n) is polygamma(n, x)
        "where": lambda x, condition, y: FUNCTIONS[_O["where"]](condition, x, y),
        "polygamma": lambda x, n: FUNCTIONS[_O["polygamma"]](n, x),
        "as_strided": lambda x, size, stride, storage_offset=None: _as_strided(
            x, size, stride, storage_offset),
        "__getitem__": _getitem,
        "__setitem__": _setitem,
    })
    for name in _PASSTHROUGH:
        METHODS[name] = (lambda n: lambda x, *a, **k: _passthrough(n, x, a, k))(name)
    for name in ("new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"):
        METHODS[name] = (lambda n: lambda x, *a, **k: getattr(x.value, n)(*a, **k))(name)
    _built = True


def _batched_only(rule):
    """rule for a batched first argument (anything else: the loop, which raises fn's errors)."""
    def checked(x, *args, **kwargs):
        if type(x) is not Batched or has_batched(args, kwargs):
            return NotImplemented
        try:
            return rule(x, *args, **kwargs)
        except TypeError:                   # an argument form the rule does not take
            return NotImplemented
    return checked


def _same_rule_for(fn, name):
    """The rule F's op `name` has, made for fn (its torch.* spelling)."""
    if name in _ELEMENTWISE_NAMES:
        return _elementwise(fn)
    if name in TRAILING:
        return _trailing(fn)
    return _leading_n(fn, LEADING_N[name])


def _passthrough(name, x, args, kwargs):
    # memory_format is a layout of the 4-d (5-d) logical tensor, which the physical tensor
    # has one more dim than: the values do not depend on it
    kwargs = {k: v for k, v in kwargs.items() if k != "memory_format"}
    args = [a.value if type(a) is Batched else a for a in args]
    out = getattr(x.value, name)(*args, **kwargs)
    if out is x.value:
        return x
    return Batched(out) if isinstance(out, Tensor) else out     # x.type() is a string
