"""Generated C for fused programs (options={"cpp_codegen": True}, or TORCHLITE_CPP_CODEGEN=1):
where a C compiler is present, each fused elementwise program of the CPU interpreter also
becomes one C function that evaluates all its instructions per element in registers, in one
loop the compiler vectorises, instead of one pass over an L1 tile per instruction.  The
interpreter (torchlite/_core/fused.pyx) still does the tiling, the threads and the layout of
the operands; for each tile it hands the function contiguous inputs and outputs.

The per-op formulas are the eager loops' own (kernels/ewise_exprs.h: one row per op, both
for ewise_body.h's loops and for this code), so a generated program computes what the ops
compute, up to the rounding of a multiply and an add the C compiler may contract into one
fused multiply-add across ops (as torch.compile's generated code does).  A dropout's random
mask is drawn by the interpreter, as it draws it without the C, and read by the loop.
Programs with row instructions, or with an op that has no one-expression formula (the
float32 ops fixed up by a library call on part of their domain: expm1, log1p, sin, cos, tan,
erfinv, pow), stay on the interpreter.

Each function is compiled once per text: the shared object is cached on disk under
$TORCHLITE_CACHE_DIR/cpp (default ~/.cache/torchlite/cpp), named by a hash of the source and
of the compiler command, written to a temporary name and renamed, so processes share it and
a second process compiles nothing.  Loading runs no code from the cache but the function it
asked for, which its own text defined."""
import ctypes
import functools
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sysconfig
import tempfile

from .._core import KERNEL_HEADERS, cuda_kernel_dir, elementwise as _ew
from ._lowering import BOOL, F32, F64, I64, UNARY, BINARY, TERNARY, CAST, RANDOM

__all__ = ["Unsupported", "c_source", "native_program", "compiler"]

CTYPE = {BOOL: "tl_bool", F32: "float", F64: "double"}
SUFFIX = {F32: "f32", F64: "f64"}
_KERNELS = KERNEL_HEADERS


class Unsupported(Exception):
    """The program has no generated C form (it stays on the interpreter)."""


@functools.lru_cache(maxsize=1)
def _table_ops():
    """{(kind, op code): table} for the ops with a one-expression formula, read from
    kernels/ewise_exprs.h's rows (the one list of them)."""
    text = open(os.path.join(_KERNELS, "ewise_exprs.h")).read()
    codes = {UNARY: _ew.UNARY, BINARY: _ew.BINARY, TERNARY: _ew.TERNARY}
    tables = {"TL_FLOAT_UNARY_EXPRS": UNARY, "TL_FLOAT_UNARY_BOOL_EXPRS": UNARY,
              "TL_FLOAT_BINARY_EXPRS": BINARY, "TL_FLOAT_BINARY_BOOL_EXPRS": BINARY,
              "TL_FLOAT_TERNARY_EXPRS": TERNARY}
    ops = {}
    for m in re.finditer(r"#define (TL_FLOAT_\w+)\(X\)((?:.*\\\n)*.*)", text):
        kind = tables[m.group(1)]
        for name in re.findall(r"\bX\((\w+),", m.group(2)):
            code = codes[kind].get(name.lower())
            if code is not None:
                ops[(kind, code)] = name
    return ops


# the functions made from ewise_exprs.h's rows: u_OP_f32(x, P), b_OP_f64(x, y, P), t_OP_f32(c,
# x, y, P); a bool row's function returns tl_bool
_PRELUDE = r"""#include <stdint.h>
#include <math.h>
#include "ewise_scalar.h"
#include "ewise_exprs.h"
#define TL_G_U(OP, E32, E64) \
    static inline float u_##OP##_f32(float x, const double *P) { (void)P; return (E32); } \
    static inline double u_##OP##_f64(double x, const double *P) { (void)P; return (E64); }
#define TL_G_UB(OP, E32, E64) \
    static inline tl_bool u_##OP##_f32(float x, const double *P) { (void)P; return (E32); } \
    static inline tl_bool u_##OP##_f64(double x, const double *P) { (void)P; return (E64); }
#define TL_G_B(OP, E32, E64) \
    static inline float b_##OP##_f32(float x, float y, const double *P) { (void)P; return (E32); } \
    static inline double b_##OP##_f64(double x, double y, const double *P) { (void)P; return (E64); }
#define TL_G_BB(OP, E) \
    static inline tl_bool b_##OP##_f32(float x, float y, const double *P) { (void)P; return (E); } \
    static inline tl_bool b_##OP##_f64(double x, double y, const double *P) { (void)P; return (E); }
#define TL_G_T(OP, C32, C64, E32, E64) \
    static inline float t_##OP##_f32(C32 c, float x, float y, const double *P) { (void)P; return (E32); } \
    static inline double t_##OP##_f64(C64 c, double x, double y, const double *P) { (void)P; return (E64); }
TL_FLOAT_UNARY_EXPRS(TL_G_U)
TL_FLOAT_UNARY_BOOL_EXPRS(TL_G_UB)
TL_FLOAT_BINARY_EXPRS(TL_G_B)
TL_FLOAT_BINARY_BOOL_EXPRS(TL_G_BB)
TL_FLOAT_TERNARY_EXPRS(TL_G_T)
static const double P_[3] = {0.0, 0.0, 0.0};
"""
ENTRY = "tl_fused_program"


def _double(v):
    """A double as an exact C expression (hex float; infinities and NaN by name)."""
    v = float(v)
    if v != v:
        return "NAN"
    if v in (float("inf"), float("-inf")):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    return v.hex()


def _literal(dt, v):
    if dt == BOOL:
        return "1" if v else "0"
    return f"(({CTYPE[dt]}){_double(v)})"


def c_source(spec):
    """The C text of `spec` (a ProgramSpec without row instructions): `int
    tl_fused_program(char **d, int64_t n)` computing n elements, d holding the inputs', the
    outputs' and then each random instruction's mask's first elements (the interpreter draws
    the masks: _core/fused.pyx's _native), all contiguous.  Raises Unsupported."""
    ops = _table_ops()
    for dt in spec.out_dtypes:
        if dt not in CTYPE:
            raise Unsupported(f"dtype code {dt}")
    for dt in spec.in_dtypes:
        if dt not in CTYPE and dt != I64:       # int64: a random draw's seed or block
            raise Unsupported(f"dtype code {dt}")
    n_in, n_out = len(spec.in_dtypes), len(spec.out_dtypes)
    n_random = 0
    lines = [f"/* fused program {spec.name}: {len(spec.instrs)} instructions (generated by "
             f"torchlite/compiler/_cpp.py) */", _PRELUDE]
    for i, (kind, op, compute, operands, ps) in enumerate(spec.instrs):
        if ps and kind in (UNARY, BINARY, TERNARY):
            vals = ", ".join(_double(p) for p in (tuple(ps) + (0.0,) * 3)[:3])
            lines.append(f"static const double P{i}[3] = {{{vals}}};")
    lines += [f"int {ENTRY}(char **d, int64_t n) {{"]
    for k, dt in enumerate(spec.in_dtypes):
        if dt in CTYPE:
            lines.append(f"    const {CTYPE[dt]} *restrict in{k} = (const {CTYPE[dt]} *)d[{k}];")
    for k, dt in enumerate(spec.out_dtypes):
        lines.append(f"    {CTYPE[dt]} *restrict out{k} = ({CTYPE[dt]} *)d[{n_in + k}];")
    body = []
    value = {}                        # slot (kind, index) -> the C name holding its value
    for k in range(n_in):
        if spec.in_dtypes[k] in CTYPE:
            value[(0, k)] = f"in{k}[i]"
    for k, (dt, v) in enumerate(spec.consts):
        if dt not in CTYPE:
            raise Unsupported(f"constant of dtype code {dt}")
        lines.append(f"    const {CTYPE[dt]} c{k} = {_literal(dt, v)};")
        value[(1, k)] = f"c{k}"
    for i, (kind, op, compute, operands, ps) in enumerate(spec.instrs):
        (dkind, didx, ddt), srcs = operands[0], operands[1:]
        if ddt not in CTYPE:
            raise Unsupported(f"dtype code {ddt}")
        if kind == RANDOM:              # the mask the interpreter drew into d[n_in + n_out + j]
            if ddt not in (F32, F64):
                raise Unsupported(f"random instruction {i} of dtype code {ddt}")
            lines.append(f"    const {CTYPE[ddt]} *restrict rnd{n_random} = "
                         f"(const {CTYPE[ddt]} *)d[{n_in + n_out + n_random}];")
            body.append(f"        const {CTYPE[ddt]} v{i} = rnd{n_random}[i];")
            value[(dkind, didx)] = f"v{i}"
            n_random += 1
            continue
        try:
            args = [value[(s[0], s[1])] for s in srcs]
        except KeyError:
            raise Unsupported(f"instruction {i} reads a slot nothing wrote") from None
        if kind == CAST:
            sdt = srcs[0][2]
            expr = f"({args[0]} != 0)" if ddt == BOOL and sdt != BOOL else f"({CTYPE[ddt]}){args[0]}"
        elif kind in (UNARY, BINARY, TERNARY):
            name = ops.get((kind, op))
            if name is None or compute not in SUFFIX:
                raise Unsupported(f"op {op} of kind {kind} in dtype code {compute}")
            fn = f"{'ubt'[kind]}_{name}_{SUFFIX[compute]}"
            expr = f"{fn}({', '.join(args)}, {f'P{i}' if ps else 'P_'})"
        else:
            raise Unsupported(f"instruction kind {kind}")
        body.append(f"        const {CTYPE[ddt]} v{i} = {expr};")
        value[(dkind, didx)] = f"v{i}"
    for k in range(len(spec.out_dtypes)):
        if (3, k) not in value:
            raise Unsupported(f"output {k} is never written")
        body.append(f"        out{k}[i] = {value[(3, k)]};")
    lines += ["    for (int64_t i = 0; i < n; i++) {", *body, "    }", "    return 0;", "}", ""]
    return "\n".join(lines)


@functools.lru_cache(maxsize=1)
def compiler():
    """The C compiler command (a list), or None: $CC, else the one Python was built with, else
    cc/gcc/clang, whichever is found."""
    for cand in (os.environ.get("CC"), sysconfig.get_config_var("CC"), "cc", "gcc", "clang"):
        if cand:
            exe = cand.split()[0]
            if shutil.which(exe):
                return cand.split()
    return None


def _flags():
    cuda = _cuda_kernel_dir()
    # the eager kernels' flags (setup.py), for this machine's ISA
    return ["-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fPIC", "-shared",
            "-std=gnu99", "-w", f"-I{_KERNELS}"] + \
        ([f"-I{cuda}"] if cuda else []) + ["-lm"]


def _cuda_kernel_dir():
    """The folder of cuda_kernels/ (ewise_scalar.h includes its tl_scalar_math.cuh)."""
    try:
        return cuda_kernel_dir()
    except RuntimeError:        # no sources: the compile then fails and says so
        return None


def _cache_dir():
    root = os.environ.get("TORCHLITE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                                 "torchlite")
    d = os.path.join(root, "cpp")
    os.makedirs(d, exist_ok=True)
    return d


_LOADED = {}                 # path -> the loaded library (kept: its code must stay mapped)


@functools.lru_cache(maxsize=1)
def _environment_key():
    """What else a cached object depends on: the headers it includes (their text: an upgrade
    that changes a formula must not load the old code) and the CPU -march=native built for
    (a cache shared between machines must not hand one another's instructions to a CPU
    without them)."""
    h = hashlib.sha256()
    dirs = [_KERNELS] + ([_cuda_kernel_dir()] if _cuda_kernel_dir() else [])
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if name.endswith((".h", ".cuh")):
                with open(os.path.join(d, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    try:
        with open("/proc/cpuinfo") as f:
            cpu = [ln for ln in f if ln.startswith(("flags", "model name"))][:2]
    except OSError:
        cpu = []
    h.update(("".join(cpu) + platform.machine() + platform.processor()).encode())
    return h.hexdigest()


def native_program(spec):
    """(library, address of its entry function) for `spec`, compiled or taken from the disk
    cache; None when the program has no C form or no compiler is found.  Raises RuntimeError
    (with the compiler's message) when it cannot be built or loaded."""
    try:
        src = c_source(spec)
    except Unsupported:
        return None
    cc = compiler()
    if cc is None:
        return None
    cmd = cc + _flags()
    key = hashlib.sha256("\0".join((src, " ".join(cmd), _environment_key())).encode()).hexdigest()[:24]
    try:
        path = os.path.join(_cache_dir(), f"fused_{key}.so")
        lib = _LOADED.get(path)
        if lib is None:
            if not os.path.isfile(path):
                _build(cmd, src, path)
            try:
                lib = ctypes.CDLL(path)
            except OSError:         # a damaged file in the cache: built again, once
                os.remove(path)
                _build(cmd, src, path)
                lib = ctypes.CDLL(path)
            _LOADED[path] = lib
    except OSError as e:            # an unusable cache folder, a file that will not load
        raise RuntimeError(f"torchlite.compile (cpp_codegen): {type(e).__name__}: {e}") from e
    fn = getattr(lib, ENTRY)
    return lib, ctypes.cast(fn, ctypes.c_void_p).value


def _build(cmd, src, path):
    d = os.path.dirname(path)
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        c_file = os.path.join(tmp, "program.c")
        so_file = os.path.join(tmp, "program.so")
        with open(c_file, "w") as f:
            f.write(src)
        r = subprocess.run(cmd[:1] + [c_file, "-o", so_file] + cmd[1:], capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise RuntimeError(f"torchlite.compile (cpp_codegen): the C compiler failed:\n"
                               f"{' '.join(cmd)}\n{r.stderr[-2000:]}")
        os.replace(so_file, path)
