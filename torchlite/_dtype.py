"""dtype objects, the default dtype, and PyTorch's type-promotion rules.

The integer codes match torchlite/_core/kernels/types.h."""
# the promotion table and the default float are metadata of the CPU array layer (device-blind)
from ._core import elementwise as _ew


class dtype:
    """A tensor element type, e.g. ``torchlite.float32``."""

    __slots__ = ("name", "code", "itemsize", "is_floating_point", "is_signed", "is_complex")

    def __init__(self, name, code, itemsize, is_floating_point, is_signed, is_complex=False):
        self.name = name
        self.code = code
        self.itemsize = itemsize
        self.is_floating_point = is_floating_point
        self.is_signed = is_signed
        self.is_complex = is_complex

    def __repr__(self):
        return "torchlite." + self.name

    def __reduce__(self):
        return (_dtype_from_name, (self.name,))

    def to_real(self):
        """The dtype of a complex dtype's parts (complex64 -> float32); others are unchanged."""
        return DTYPES[_ew.real_of(self.code)]

    def to_complex(self):
        """The complex dtype with this float dtype's parts (float64 -> complex128, float32 and
        bfloat16 -> complex64, float16 -> complex32)."""
        if self.is_complex:
            return self
        if not self.is_floating_point:
            raise RuntimeError(f"to_complex: {self!r} is not a floating point dtype")
        return DTYPES[_ew.complex_of(self.code)]


bool = dtype("bool", 0, 1, False, False)
uint8 = dtype("uint8", 1, 1, False, False)
int8 = dtype("int8", 2, 1, False, True)
int16 = dtype("int16", 3, 2, False, True)
int32 = dtype("int32", 4, 4, False, True)
int64 = dtype("int64", 5, 8, False, True)
float16 = dtype("float16", 6, 2, True, True)
bfloat16 = dtype("bfloat16", 7, 2, True, True)
float32 = dtype("float32", 8, 4, True, True)
float64 = dtype("float64", 9, 8, True, True)
complex64 = dtype("complex64", 10, 8, False, True, is_complex=True)
complex128 = dtype("complex128", 11, 16, False, True, is_complex=True)
# PyTorch's complex32 (chalf): two float16 parts, stored as such; ops compute in complex64
complex32 = dtype("complex32", 12, 4, False, True, is_complex=True)

# aliases, as in PyTorch
half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble, chalf = complex64, complex128, complex32

DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
          complex64, complex128, complex32)
_BY_NAME = {d.name: d for d in DTYPES}
_BY_NAME.update(half=half, float=float, double=double, short=short, int=int, long=long,
                cfloat=cfloat, cdouble=cdouble, chalf=chalf)


def _dtype_from_name(name):
    return _BY_NAME[name]


def get_default_dtype():
    """The dtype of floating tensors created from Python floats (float32 unless changed)."""
    return DTYPES[_ew.get_default_float()]


def get_default_complex_dtype():
    """The dtype of complex tensors made from Python complex numbers: complex64, or
    complex128 when the default dtype is float64."""
    return get_default_dtype().to_complex()


def set_default_dtype(d):
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _ew.set_default_float(d.code)


def promote_types(type1, type2):
    """The smallest dtype both can be converted to without losing range (torch.promote_types)."""
    return DTYPES[_ew.promote(type1.code, type2.code)]


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow from_ -> to in out= and in-place ops."""
    return _ew.can_cast(from_.code, to.code)


def to_dtype(d, default=None):
    """Accept a torchlite dtype, a NumPy dtype or Python type; None gives `default`."""
    if d is None:
        return default
    if isinstance(d, dtype):
        return d
    import builtins
    if d is builtins.float:
        return float64
    if d is builtins.int:
        return int64
    if d is builtins.bool:
        return bool
    if d is builtins.complex:
        return complex128
    name = getattr(d, "name", None) or getattr(d, "__name__", None) or str(d)
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise TypeError(f"dtype must be a torchlite.dtype, got {d!r}")


class finfo:
    """Machine limits of a floating dtype (torch.finfo)."""

    _TABLE = {
        "float16": (16, 6.103515625e-05, 65504.0, 0.0009765625, 0.001, 5.960464477539063e-08),
        "bfloat16": (16, 1.1754943508222875e-38, 3.3895313892515355e38, 0.0078125, 0.01,
                     9.183549615799121e-41),
        "float32": (32, 1.1754943508222875e-38, 3.4028234663852886e38, 1.1920928955078125e-07,
                    1e-06, 1.401298464324817e-45),
        "float64": (64, 2.2250738585072014e-308, 1.7976931348623157e308, 2.220446049250313e-16,
                    1e-15, 5e-324),
    }

    def __init__(self, type=None):
        type = get_default_dtype() if type is None else type
        type = type.to_real()           # a complex dtype's limits are its parts'
        if type.name not in self._TABLE:
            raise TypeError(f"finfo: {type!r} is not a floating point dtype")
        self.dtype = type.name
        (self.bits, self.tiny, self.max, self.eps, self.resolution,
         self.smallest_subnormal) = self._TABLE[type.name]
        self.smallest_normal = self.tiny
        self.min = -self.max

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, "
                f"eps={self.eps}, smallest_normal={self.tiny}, tiny={self.tiny}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integer dtype (torch.iinfo)."""

    _TABLE = {"uint8": (8, 0, 255), "int8": (8, -128, 127), "int16": (16, -32768, 32767),
              "int32": (32, -2**31, 2**31 - 1), "int64": (64, -2**63, 2**63 - 1),
              "bool": (8, 0, 1)}

    def __init__(self, type):
        if type.name not in self._TABLE:
            raise TypeError(f"iinfo: {type!r} is not an integer dtype")
        self.dtype = type.name
        self.bits, self.min, self.max = self._TABLE[type.name]

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
