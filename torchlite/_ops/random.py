"""Random sampling: generators and seeding, rand/randn/randint/randperm, normal, bernoulli,
multinomial, poisson, the *_like forms and the in-place fills (uniform_, normal_, ...).

The generator is Philox4x32-10 (Salmon et al., SC 2011), a counter-based generator: block
number b under key k (the 64-bit seed) is a pure function of (b, k) giving four 32-bit words.
A generator is just (seed, offset), the offset being the next unused block.

Stream layout (details in torchlite/_core/kernels/random.h).  A request for n values starts at
block `offset` and is cut into groups of 16 blocks (64 words).  Element e of group g lies in
lane i = e mod 16 and takes word (e mod 64) / 16 of block offset + 16 g + i, or, for values
that need two words (float64, integer ranges above 2^32), the word pair 2h, 2h+1 with
h = (e mod 32) / 16.  Box-Muller normals come in pairs from the word pairs of one block.  The
request then advances the offset by 16 ceil(n / values-per-group) blocks, so consecutive calls
give fresh numbers, and since any thread can compute any group directly from its counter,
the split of the work across OpenMP threads never changes the results.  A value that
rejection sampling throws away (bounded integers) redraws from the same word of its block with
counter word 2 = 1, 2, ...; Poisson gives element e its own block offset + e and draws from it
with counter word 2 = 0, 1, 2, ...

Quality: float32 uniforms carry 24 random bits (float16 11, bfloat16 8, so that they are exact
and below 1), float64 53; normals use Box-Muller; integers on [low, high) use Lemire's
multiply-shift with rejection, which is exactly unbiased; randperm is an inside-out
Fisher-Yates shuffle whose draws are computed in parallel from the counter stream.
Elements of a tensor are filled in row-major order whatever its strides."""
from __future__ import annotations

import builtins
import math
import contextlib
import numbers
import warnings
from typing import TYPE_CHECKING

from .. import _dtype as D
from .._device import factory_device
from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .._dispatch import random as _R
from .._device import to_device
from .._tensor import Tensor, _wrap, _as_pyscalar
from . import _register
from .creation import _like_array, _on, _on_meta, _size_args, _place
from ._kit import factory_dtype, out_array, tensor_arg
from .. import _layout

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from typing import Any

    from .._device import device
    from .._dtype import dtype
    from .._layout import layout
    from .._memory_format import memory_format

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "rand", "randn", "randint", "randperm", "normal",
           "bernoulli", "multinomial", "poisson", "binomial", "rand_like", "randn_like", "randint_like"]


# ---- generators ------------------------------------------------------------------------------
class Generator(_R.Philox):
    """A random number generator (Philox4x32-10): a 64-bit seed and a position in its stream.

    >>> g = torchlite.Generator().manual_seed(42)
    >>> torchlite.rand(2, generator=g)          # the same two numbers for every run
    """

    def __init__(self, device: str | device | int = "cpu") -> None:
        self._device = to_device(device)

    @property
    def device(self) -> device:
        return self._device

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor (16 bytes: seed and offset, little-endian)."""
        return _wrap(_A.from_flat(list(self.state_bytes()), (16,), D.uint8.code))

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore a state returned by get_state(); returns self."""
        if not isinstance(new_state, Tensor) or new_state.dtype is not D.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        self.set_state_bytes(builtins.bytes(new_state.reshape(-1).tolist()))
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_generator, (str(self._device), self.state_bytes()))


Generator.__module__ = "torchlite"


def _restore_generator(device, state):
    g = Generator(device)
    g.set_state_bytes(state)
    return g


default_generator = Generator()
default_generator.seed()        # as PyTorch: a fresh seed per process until manual_seed


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (returns it) and, as PyTorch does, every CUDA device's;
    the same seed gives the same numbers."""
    from .. import _dispatch
    g = default_generator.manual_seed(seed)
    _dispatch.seed_devices(seed)      # also the device generators the backend makes later
    return g


def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator's state from get_rng_state()."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices: Iterable[Any] | None = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda") -> Iterator[None]:
    """Context manager: random draws inside it leave the default generator as it was."""
    if not enabled:
        yield
        return
    state = default_generator.state_bytes()
    try:
        yield
    finally:
        default_generator.set_state_bytes(state)


# ---- argument helpers ------------------------------------------------------------------------
_CTYPE = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short",
          "int32": "int", "int64": "long int", "float16": "c10::Half",
          "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double"}
_MANTISSA = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}
_INF = float("inf")


def _gen(generator, op, device=None):
    """The generator to draw from: `generator`, else the default generator of `device` (a
    CUDA device has its own, seeded by torchlite.cuda.manual_seed and torchlite.manual_seed;
    both follow the CPU generator's stream layout, so one seed gives the same numbers)."""
    if generator is None:
        device = factory_device(device)
        if device is not None:
            dev = to_device(device)
            if dev.type == "cuda":
                from .. import _dispatch
                return _dispatch.devices.generator(dev)
        return default_generator
    if isinstance(generator, _R.Philox):
        return generator
    raise TypeError(f"{op}(): argument 'generator' must be torch.Generator, not "
                    f"{type(generator).__name__}")


def _torch_name(dt):
    return _ew._TORCH_NAMES[dt.code]


def _need_float(dt, kernel):
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_torch_name(dt)}'")


def _real(x, name, op):
    """A Python float from a number or a one-element tensor."""
    if isinstance(x, Tensor):
        x = x.item()
    x = _as_pyscalar(x)
    if isinstance(x, builtins.bool) or not isinstance(x, (builtins.int, builtins.float)):
        raise TypeError(f"{op}(): argument '{name}' must be float, not {type(x).__name__}")
    return builtins.float(x)


def _integer(x, name, op):
    """A Python int in int64's range from an integer or an integer tensor (floats are a
    TypeError and values beyond int64 a ValueError, as in PyTorch)."""
    if isinstance(x, (builtins.int, Tensor)) or (isinstance(x, numbers.Integral)):
        try:
            v = x.__index__()
        except TypeError:
            v = None
        if v is not None:
            if not -2**63 <= v < 2**63:
                raise ValueError(f"Overflow when unpacking long long: {op}(): {name}={v}")
            return v
    raise TypeError(f"{op}(): argument '{name}' must be int, not {type(x).__name__}")


def _num(x):
    """A number as PyTorch prints it in messages (2, not 2.0)."""
    return f"{x:g}" if isinstance(x, builtins.float) else str(x)


def _fill_inplace(self, fill):
    """fill(array) into self (on any device: the array layer draws the same numbers there);
    bumps the version."""
    fill(self._data)
    self._bump_version()
    return self


def _new(shape, dt, device, requires_grad, out, op, fill, like=None):
    """A new tensor (or out=) of `shape`, filled by fill(array).  like=(input, memory_format,
    op): the *_like ops' result, laid out as empty_like(input, memory_format=...) would be;
    the fill still draws element i in row-major order, so a seed gives the same values for
    every layout (as the in-place fills do; see the module's docstring)."""
    if out is not None:
        out_array(out, shape, op)
        return _fill_inplace(out, fill)
    if like is None:
        arr = _A.empty(shape, dt.code, device=_on(device))
    else:
        arr = _like_array(like[0], dt, device, like[1], like[2])
    # nothing to draw in an empty result (the generator would not move either), and an empty
    # *_like result may carry 0 strides, which the array layer's overlap check refuses
    if arr.numel:
        fill(arr)
    return _place(arr, None, requires_grad)


# ---- real distributions ----------------------------------------------------------------------
def _uniform_bounds(dt, lo, hi):
    """PyTorch's check_uniform_bounds."""
    big = D.finfo(dt).max
    ct = _CTYPE[dt.name]
    if not (-big <= lo <= big):
        raise RuntimeError(f"from is out of bounds for {ct}")
    if not (-big <= hi <= big):
        raise RuntimeError(f"to is out of bounds for {ct}")
    if lo > hi:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_num(lo)} > to={_num(hi)}")
    if hi - lo > big:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{ct}>::max(), but "
                           f"found to={_num(hi)} and from={_num(lo)} which result in to-from to "
                           f"exceed the limit")


def _check_positive(value, name, op):
    """value (named `name` in the message) must be > 0."""
    if not value > 0:
        raise RuntimeError(f"{op} expects {name} > 0.0, but found {name}={_num(value)}")


def _check_std(std, op="normal"):
    if std < 0:
        raise RuntimeError(f"{op} expects std >= 0.0, but found std {_num(std)}")


def _standard(dist, kernel, op, size, generator, out, dtype, device, requires_grad, like=None):
    """A new tensor of standard samples of `dist` (0 and 1 its parameters): rand and randn
    (and their *_like forms: `like` as _new takes it); kernel names the float-only check in
    PyTorch's message."""
    shape = _size_args(size, op)
    gen = _gen(generator, op, device if out is None else out.device)
    dt = factory_dtype(dtype, out, op, D.get_default_dtype())
    if dt.is_complex:
        # PyTorch's complex samples: both parts drawn independently; randn's have variance
        # 1/2 each, so that E|z|^2 = 1
        from .complex import parts_array
        scale = math.sqrt(0.5) if dist == _R.NORMAL else 1.0
        return _new(shape, dt, device, requires_grad, out, op,
                    lambda a: _R.fill(parts_array(a), gen, dist, 0.0, scale, op), like)
    _need_float(dt, kernel)
    return _new(shape, dt, device, requires_grad, out, op,
                lambda a: _R.fill(a, gen, dist, 0.0, 1.0, op), like)


def rand(*size: int | Sequence[int], generator: Generator | None = None, out: Tensor | None = None,
         dtype: dtype | None = None, layout: layout | None = None,
         device: str | device | int | None = None, requires_grad: bool = False,
         pin_memory: bool = False) -> Tensor:
    """Uniform samples on [0, 1) of the given shape (24 random bits for float32, 53 for
    float64)."""
    _layout.check(layout, "rand")
    return _standard(_R.UNIFORM, "check_uniform_bounds", "rand", size, generator, out, dtype,
                     device, requires_grad)


def randn(*size: int | Sequence[int], generator: Generator | None = None, out: Tensor | None = None,
          dtype: dtype | None = None, layout: layout | None = None,
          device: str | device | int | None = None, requires_grad: bool = False,
          pin_memory: bool = False) -> Tensor:
    """Standard normal samples of the given shape (Box-Muller)."""
    _layout.check(layout, "randn")
    return _standard(_R.NORMAL, "normal_kernel_cpu", "randn", size, generator, out, dtype,
                     device, requires_grad)


def _like_args(input, dtype, device):
    if not isinstance(input, Tensor):
        raise TypeError(f"expected Tensor as argument 'input', but got {type(input).__name__}")
    return D.to_dtype(dtype, input.dtype), (input.device if device is None else device)


def rand_like(input: Tensor, *, dtype: dtype | None = None, layout: layout | None = None,
              device: str | device | int | None = None, requires_grad: bool = False,
              memory_format: memory_format | None = None,
              generator: Generator | None = None) -> Tensor:
    """rand() with input's shape (and dtype and device unless given), laid out as
    empty_like(input, memory_format=memory_format)."""
    _layout.check(layout, "rand_like")
    dt, dev = _like_args(input, dtype, device)
    return _standard(_R.UNIFORM, "check_uniform_bounds", "rand", (tuple(input.shape),), generator,
                     None, dt, dev, requires_grad, (input, memory_format, "rand_like"))


def randn_like(input: Tensor, *, dtype: dtype | None = None, layout: layout | None = None,
               device: str | device | int | None = None, requires_grad: bool = False,
               memory_format: memory_format | None = None,
               generator: Generator | None = None) -> Tensor:
    """randn() with input's shape (and dtype and device unless given), laid out as
    empty_like(input, memory_format=memory_format)."""
    _layout.check(layout, "randn_like")
    dt, dev = _like_args(input, dtype, device)
    return _standard(_R.NORMAL, "normal_kernel_cpu", "randn", (tuple(input.shape),), generator,
                     None, dt, dev, requires_grad, (input, memory_format, "randn_like"))


def normal(mean: Tensor | float = 0.0, std: Tensor | float = 1.0, size: Sequence[int] | None = None,
           *, generator: Generator | None = None, out: Tensor | None = None,
           dtype: dtype | None = None, layout: layout | None = None,
           device: str | device | int | None = None, requires_grad: bool = False) -> Tensor:
    """Normal samples.  normal(mean, std, size) with numbers; normal(mean, std) where either
    is a tensor gives one sample per element of their broadcast shape, in mean's dtype (std's
    when mean is a number)."""
    _layout.check(layout, "normal")
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        gen = _gen(generator, "normal", (mean if isinstance(mean, Tensor) else std).device)
        if size is not None:
            raise TypeError("normal(): size cannot be given when mean or std is a Tensor")
        r = _normal_tensors(mean, std, gen, out)
        if out is not None:
            return r
        kind = 3 if isinstance(mean, Tensor) and isinstance(std, Tensor) else (1 if isinstance(mean, Tensor) else 2)
        return _zero_grad_record(f"NormalBackward{kind}", (mean, std), r)
    if size is None:
        raise TypeError("normal() received an invalid combination of arguments: with numbers "
                        "for mean and std, size is required")
    gen = _gen(generator, "normal", device if out is None else out.device)
    mean, std = _real(mean, "mean", "normal"), _real(std, "std", "normal")
    _check_std(std)
    shape = _size_args((size,), "normal")
    dt = factory_dtype(dtype, out, "normal", D.get_default_dtype())
    _need_float(dt, "normal_kernel_cpu")
    return _new(shape, dt, device, requires_grad, out, "normal",
                lambda a: _R.fill(a, gen, _R.NORMAL, mean, std, "normal"))


def _zero_grad_record(name, inputs, result):
    """Sampling is not differentiable in its parameters, but PyTorch keeps the sample in the
    graph with a zero gradient for each parameter that requires grad (so it is never silently
    cut off): do the same."""
    from ..autograd.graph import Node, needs_grad, record
    if not needs_grad(*inputs) or not result.is_floating_point():
        return result

    def backward(node, g):
        return tuple(None if t is None else g.new_zeros(t.shape) for t in node.params)
    node = type(name, (Node,), {"backward": backward})()
    node.params = tuple(t if isinstance(t, Tensor) else None for t in inputs)
    record(node, node.params, result)
    return result


def _normal_tensors(mean, std, gen, out):
    """mean + std * z, z standard normal of the broadcast shape, in one addcmul pass."""
    if isinstance(std, Tensor):
        if not std.is_meta and not _R.all_in_range(std._data, 0.0, _INF):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        std_op = std._data
    else:
        std_op = _real(std, "std", "normal")
        _check_std(std_op)
    mean_op = mean._data if isinstance(mean, Tensor) else _real(mean, "mean", "normal")
    dt = factory_dtype(None, out, "normal", mean.dtype if isinstance(mean, Tensor) else std.dtype)
    _need_float(dt, "normal_kernel_cpu")
    shape = _A.broadcast_shapes(*[t.shape for t in (mean, std) if isinstance(t, Tensor)])
    zdt = D.float64 if dt is D.float64 else D.float32      # half types: sample in float32
    like = (mean if isinstance(mean, Tensor) else std)._data
    z = _A.empty(shape, zdt.code, device=like)
    _R.fill(z, gen, _R.NORMAL, 0.0, 1.0, "normal")
    if out is None:
        arr = _A.empty(shape, dt.code, device=like)
    else:
        arr = out_array(out, shape, "normal")
    _ew.ternary(_ew.TERNARY["addcmul"], mean_op, z, std_op, arr, 1.0)
    return _wrap(arr) if out is None else out


# ---- integers ------------------------------------------------------------------------------
def _int_range(dt, lo, hi, op):
    """Check [lo, hi) against PyTorch's rules for dtype dt; returns hi - lo."""
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    ct = _CTYPE[dt.name]
    if dt.is_floating_point:
        big = D.finfo(dt).max
        if not -big <= lo <= big:
            raise RuntimeError(f"from is out of bounds for {ct}")
        if not -big <= hi - 1 <= big:
            raise RuntimeError(f"to - 1 is out of bounds for {ct}")
        digits = _MANTISSA[dt.name]
        if lo < -(2 ** digits) or hi - 1 > 2 ** digits:
            warnings.warn(f"{op}: [{lo}, {hi}) goes beyond [-(2^{digits}), 2^{digits}], where "
                          f"{dt.name} can hold every integer; some values cannot be produced")
    else:
        info = D.iinfo(dt) if dt is not D.bool else None
        mn, mx = (0, 1) if info is None else (info.min, info.max)
        if lo < mn:
            raise RuntimeError(f"from is out of bounds for {ct}")
        if hi - 1 > mx:
            raise RuntimeError(f"to - 1 is out of bounds for {ct}")
    return hi - lo


def _default_top(dt):
    """random_'s exclusive upper end when `to` is not given: max + 1 for integer types,
    2^digits + 1 for floating types (every integer up to 2^digits is exact)."""
    if dt is D.bool:
        return 2
    if dt.is_floating_point:
        return 2 ** _MANTISSA[dt.name] + 1
    return D.iinfo(dt).max + 1


def randint(*args: int | Sequence[int], size: Sequence[int] | None = None, low: int | None = None,
            high: int | None = None, generator: Generator | None = None, out: Tensor | None = None,
            dtype: dtype | None = None, layout: layout | None = None,
            device: str | device | int | None = None, requires_grad: bool = False,
            pin_memory: bool = False) -> Tensor:
    """Integers uniform on [low, high) (low defaults to 0): randint(high, size) or
    randint(low, high, size).  int64 unless dtype says otherwise; exactly unbiased."""
    _layout.check(layout, "randint")
    args = list(args)
    if size is None:
        if not args:
            raise TypeError("randint() missing required argument 'size'")
        size = args.pop()
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"randint(): argument 'size' (position {len(args) + 1}) must be tuple "
                            f"of ints, not {type(size).__name__}")
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif len(args) > 2:
        raise TypeError(f"randint() takes at most 3 positional arguments ({len(args) + 1} given)")
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    return _randint(low, high, size, generator, out, dtype, device, requires_grad)


def _randint(low, high, size, generator, out, dtype, device, requires_grad, like=None):
    """randint's samples once its arguments are sorted out (`like` as _new takes it)."""
    lo = 0 if low is None else _integer(low, "low", "randint")
    hi = _integer(high, "high", "randint")
    gen = _gen(generator, "randint", device if out is None else out.device)
    shape = _size_args((size,), "randint")
    dt = factory_dtype(dtype, out, "randint", D.int64)
    span = _int_range(dt, lo, hi, "randint")
    return _new(shape, dt, device, requires_grad, out, "randint",
                lambda a: _R.fill_int(a, gen, lo, span, "randint"), like)


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *,
                 dtype: dtype | None = None, layout: layout | None = None,
                 device: str | device | int | None = None, requires_grad: bool = False,
                 memory_format: memory_format | None = None,
                 generator: Generator | None = None) -> Tensor:
    """randint() with input's shape (and dtype and device unless given), laid out as
    empty_like(input, memory_format=memory_format): randint_like(input, high) or
    randint_like(input, low, high)."""
    _layout.check(layout, "randint_like")
    if high is None:
        low, high = 0, low
    dt, dev = _like_args(input, dtype, device)
    return _randint(low, high, tuple(input.shape), generator, None, dt, dev, requires_grad,
                    (input, memory_format, "randint_like"))


_RANDPERM_LIMIT = {"float16": ("Half", 2049), "bfloat16": ("BFloat16", 257),
                   "float32": ("Float", 2 ** 24 + 1), "float64": ("Double", 2 ** 53 + 1)}


def randperm(n: int, *, generator: Generator | None = None, out: Tensor | None = None,
             dtype: dtype | None = None, layout: layout | None = None,
             device: str | device | int | None = None, requires_grad: bool = False,
             pin_memory: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1 (int64 by default)."""
    _layout.check(layout, "randperm")
    n = _integer(n, "n", "randperm")
    gen = _gen(generator, "randperm", device if out is None else out.device)
    dt = factory_dtype(dtype, out, "randperm", D.int64)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if dt is D.bool:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if dt.is_floating_point:
        name, limit = _RANDPERM_LIMIT[dt.name]
        if n > limit:
            raise RuntimeError(f"n cannot be greater than {limit} for {name} type.")
    elif n - 1 > D.iinfo(dt).max:
        raise RuntimeError(f"value cannot be converted to type {dt.name}_t without overflow")

    meta = _on_meta((n,), dt, device, requires_grad, out)
    if meta is not None:
        return meta
    if out is None and dt is D.int64:
        return _place(_R.randperm(n, gen), factory_device(device), requires_grad)
    return _new((n,), dt, device, requires_grad, out, "randperm",
                lambda arr: _ew.copy_(arr, _R.randperm(n, gen)))


# ---- bernoulli, multinomial, poisson -------------------------------------------------------
def _check_p(p, op):
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"{op} expects p to be in [0, 1], but got p={_num(p)}")


def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None,
              out: Tensor | None = None) -> Tensor:
    """0/1 samples, 1 with probability input[...] (or with probability p for every element
    when p is given); same shape and dtype as input."""
    tensor_arg(input, "bernoulli", "input")
    gen = _gen(generator, "bernoulli", input.device)
    dt = factory_dtype(None, out, "bernoulli", input.dtype)
    if p is None:
        _need_float(input.dtype, "bernoulli_tensor_cpu_p_")
        probs = input._data
        fill = lambda a: _R.fill_bernoulli_tensor(a, gen, probs, "bernoulli")
    else:
        p = _real(p, "p", "bernoulli")
        _check_p(p, "bernoulli_")
        fill = lambda a: _R.fill_bernoulli(a, gen, p, "bernoulli")
    r = _new(tuple(input.shape), dt, input.device, False, out, "bernoulli", fill)
    return r if out is not None else _zero_grad_record("BernoulliBackward0", (input,), r)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None, out: Tensor | None = None) -> Tensor:
    """num_samples category indices per row of the weights `input` (1-d or 2-d, non-negative,
    not necessarily normalised).  Without replacement a category appears at most once."""
    tensor_arg(input, "multinomial", "input")
    if isinstance(num_samples, builtins.bool) or not isinstance(num_samples, numbers.Integral):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not "
                        f"{type(num_samples).__name__}")
    gen = _gen(generator, "multinomial", input.device)
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_torch_name(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    ncat = input.shape[-1]
    if not replacement and num_samples > ncat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if ncat > 2 ** 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    if input.is_meta:               # the indices' shape, nothing drawn
        res = _A.empty(tuple(input.shape[:-1]) + (builtins.int(num_samples),),
                       D.int64.code, device="meta")
    else:
        res = _R.multinomial(input._data, builtins.int(num_samples), builtins.bool(replacement),
                             gen)
    if out is not None:
        if isinstance(out, Tensor) and out.dtype is not D.int64:
            raise RuntimeError(f"multinomial expects Long tensor out, got: "
                               f"{_ew._TORCH_NAMES[out._data.dtype]}")
        out_array(out, res.shape, "multinomial")
        return _fill_inplace(out, lambda a: _ew.copy_(a, res))
    return _wrap(res)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Poisson samples with rates input[...] (>= 0), in input's dtype."""
    tensor_arg(input, "poisson", "input")
    gen = _gen(generator, "poisson", input.device)
    _need_float(input.dtype, "poisson_cpu")
    if input.is_meta:               # the samples' shape, nothing drawn
        res = _A.empty_like(input._data, input._data.dtype)
    else:
        res = _R.poisson(input._data, gen)
    return _zero_grad_record("PoissonBackward0", (input,), _wrap(res))


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """torch.binomial: one Binomial(count, prob) draw per element (count and prob broadcast;
    float32 or float64, one dtype for both), exact (inversion for count * min(p, 1 - p) < 10,
    Hormann's BTRS above: kernels/random_sample.h), each element from its own block of the
    generator's stream.  PyTorch's edge rules: count <= 0 or prob <= 0 gives 0, prob >= 1 gives
    count; a NaN prob or a NaN or infinite count gives NaN (PyTorch's loop does not end there).
    Like PyTorch's, it stays in the graph of inputs that require grad, with a node whose
    backward raises."""
    from .views import broadcast_tensors
    from ..autograd.graph import needs_grad, record_not_differentiable
    tensor_arg(count, "binomial", "count")
    tensor_arg(prob, "binomial", "prob")
    gen = _gen(generator, "binomial", prob.device)
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{_torch_name(t.dtype)}")
    if prob.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"binomial_cpu\" not implemented for '{_torch_name(prob.dtype)}'")
    if count.dtype is not prob.dtype:
        raise RuntimeError(f"Found dtype {_torch_name(prob.dtype)} but expected "
                           f"{_torch_name(count.dtype)}")
    c, p = broadcast_tensors(count.detach(), prob.detach())
    if p.is_meta:
        res = _A.empty(tuple(p.shape), p._data.dtype, device="meta")
    else:
        res = _R.binomial(c._data, p._data, gen)
        if p._data.dtype != D.float64.code:
            res = _ew.cast(res, p._data.dtype)
    out = _wrap(res)
    if needs_grad(count, prob):
        record_not_differentiable("binomial", (count, prob), out, name="NotImplemented")
    return out


# ---- in-place fills (Tensor methods) -------------------------------------------------------
def _from_kw(value, kwargs, op):
    """PyTorch spells the lower bound `from`, a Python keyword: accept it through **kwargs."""
    if "from" in kwargs:
        value = kwargs.pop("from")
    if kwargs:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return value


@_register("uniform_")
def uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator: Generator | None = None,
             **kwargs: Any) -> Tensor:
    """Fill with uniform samples on [from, to)."""
    lo = _real(_from_kw(from_, kwargs, "uniform_"), "from", "uniform_")
    hi = _real(to, "to", "uniform_")
    gen = _gen(generator, "uniform_", self.device)
    _need_float(self.dtype, "check_uniform_bounds")
    _uniform_bounds(self.dtype, lo, hi)
    return _fill_inplace(self, lambda a: _R.fill(a, gen, _R.UNIFORM, lo, hi, "uniform_"))


@_register("normal_")
def normal_(self, mean: float = 0.0, std: float = 1.0, *,
            generator: Generator | None = None) -> Tensor:
    """Fill with normal samples N(mean, std^2)."""
    mean, std = _real(mean, "mean", "normal_"), _real(std, "std", "normal_")
    gen = _gen(generator, "normal_", self.device)
    _check_std(std)
    _need_float(self.dtype, "normal_kernel_cpu")
    return _fill_inplace(self, lambda a: _R.fill(a, gen, _R.NORMAL, mean, std, "normal_"))


@_register("log_normal_")
def log_normal_(self, mean: float = 1.0, std: float = 2.0, *,
                generator: Generator | None = None) -> Tensor:
    """Fill with exp(N(mean, std^2)) samples."""
    mean, std = _real(mean, "mean", "log_normal_"), _real(std, "std", "log_normal_")
    gen = _gen(generator, "log_normal_", self.device)
    _check_positive(std, "std", "log_normal_")
    _need_float(self.dtype, "log_normal_cpu")
    return _fill_inplace(self, lambda a: _R.fill(a, gen, _R.LOG_NORMAL, mean, std, "log_normal_"))


def _need_continuous(dt, name, tname):
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. dtype "
                           f"must be a floating point but you specified {tname}")


@_register("exponential_")
def exponential_(self, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill with exponential samples of rate lambd (never 0, never inf)."""
    lambd = _real(lambd, "lambd", "exponential_")
    gen = _gen(generator, "exponential_", self.device)
    _check_positive(lambd, "lambda", "exponential_")
    _need_continuous(self.dtype, "Exponential", _torch_name(self.dtype))
    return _fill_inplace(self, lambda a: _R.fill(a, gen, _R.EXPONENTIAL, lambd, 0.0, "exponential_"))


@_register("cauchy_")
def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *,
            generator: Generator | None = None) -> Tensor:
    """Fill with Cauchy samples median + sigma * tan(pi (u - 1/2))."""
    median, sigma = _real(median, "median", "cauchy_"), _real(sigma, "sigma", "cauchy_")
    gen = _gen(generator, "cauchy_", self.device)
    _check_positive(sigma, "sigma", "cauchy_")
    _need_continuous(self.dtype, "Cauchy", _CTYPE[self.dtype.name])
    return _fill_inplace(self, lambda a: _R.fill(a, gen, _R.CAUCHY, median, sigma, "cauchy_"))


@_register("geometric_")
def geometric_(self, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (>= 1)."""
    p = _real(p, "p", "geometric_")
    gen = _gen(generator, "geometric_", self.device)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    return _fill_inplace(self, lambda a: _R.fill(a, gen, _R.GEOMETRIC, p, 0.0, "geometric_"))


@_register("bernoulli_")
def bernoulli_(self, p: float | Tensor = 0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill with 1 with probability p (a number, or a tensor broadcastable to self), else 0."""
    gen = _gen(generator, "bernoulli_", self.device)
    if isinstance(p, Tensor):
        _need_float(p.dtype, "bernoulli_tensor_cpu_p_")
        probs = p.to(self.device)._data.expand(tuple(self.shape))
        return _fill_inplace(self, lambda a: _R.fill_bernoulli_tensor(a, gen, probs, "bernoulli_"))
    p = _real(p, "p", "bernoulli_")
    _check_p(p, "bernoulli_")
    return _fill_inplace(self, lambda a: _R.fill_bernoulli(a, gen, p, "bernoulli_"))


_UNSET = object()


@_register("random_")
def random_(self, from_: Any = _UNSET, to: Any = _UNSET, *, generator: Generator | None = None,
            **kwargs: Any) -> Tensor:
    """Fill with integers uniform on [from, to): random_() covers [0, max] of the dtype
    (0 .. 2^mantissa for floating types), random_(to) is [0, to), random_(from, None) is
    [from, max]."""
    by_keyword = "from" in kwargs
    from_ = _from_kw(from_, kwargs, "random_")
    gen = _gen(generator, "random_", self.device)
    dt = self.dtype
    if from_ is _UNSET and to is _UNSET:
        lo, hi = 0, _default_top(dt)
    elif to is _UNSET and not by_keyword:          # random_(to)
        lo, hi = 0, _integer(from_, "to", "random_")
    else:                                          # random_(from, to=None)
        lo = 0 if from_ is _UNSET else _integer(from_, "from", "random_")
        hi = _default_top(dt) if to is None or to is _UNSET else _integer(to, "to", "random_")
    span = _int_range(dt, lo, hi, "random_")
    return _fill_inplace(self, lambda a: _R.fill_int(a, gen, lo, span, "random_"))


# ---- Tensor methods for the functional forms -----------------------------------------------
_register("bernoulli")(bernoulli)
_register("multinomial")(multinomial)
