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
mask is drawn by the interpreter, as it draws it without the C, and read by the loop.  A
program with row instructions (softmax, a row mean) runs a few passes per row: each row
reduction a pass recomputing what comes before it, then a last pass storing the outputs.
Programs with an op that has no one-expression formula (the float32 ops fixed up by a
library call on part of their domain: expm1, log1p, sin, cos, tan, erfinv, pow) stay on the
interpreter.

Each function is compiled once per text: the shared object is cached on disk under
$TORCHLITE_CACHE_DIR/cpp (default ~/.cache/torchlite/cpp), named by a hash of the source and
of the compiler command, written to a temporary name and renamed, so processes share it and
a second process compiles nothing.  Loading a shared object runs its code (its constructors,
then the function asked for), so the cache folder is trusted as the package itself is: it is
the user's own by default."""
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
import time

from .._core import KERNEL_HEADERS, cuda_kernel_dir, elementwise as _ew
from ._lowering import (MAX_PROGRAM_SLOTS, BOOL, F32, F64, I64, UNARY, BINARY, TERNARY, CAST, RANDOM, ROW, SOFTMAX,
                        SOFTMAX_BWD, ROW_SPREAD)

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
    """The C text of `spec` (a ProgramSpec): `int tl_fused_program(char **d, int64_t n,
    int64_t L)` computing n elements, d holding the inputs', the outputs' and then each random
    instruction's mask's first elements (the interpreter draws the masks: _core/fused.pyx's
    _native), all contiguous.  A program with row instructions works on the n / L rows of L
    elements: each row reduction is a pass over the row that recomputes the instructions
    before it (summed in double, in another order than the interpreter's row kernels), then
    a last pass computes every instruction and stores the outputs.  Raises Unsupported."""
    for dt in spec.out_dtypes:
        if dt not in CTYPE:
            raise Unsupported(f"dtype code {dt}")
    for dt in spec.in_dtypes:
        if dt not in CTYPE and dt != I64:       # int64: a random draw's seed or block
            raise Unsupported(f"dtype code {dt}")
    n_in, n_out = len(spec.in_dtypes), len(spec.out_dtypes)
    lines = [f"/* fused program {spec.name}: {len(spec.instrs)} instructions (generated by "
             f"torchlite/compiler/_cpp.py) */", _PRELUDE]
    for i, (kind, op, compute, operands, ps) in enumerate(spec.instrs):
        if ps and kind in (UNARY, BINARY, TERNARY):
            vals = ", ".join(_double(p) for p in (tuple(ps) + (0.0,) * 3)[:3])
            lines.append(f"static const double P{i}[3] = {{{vals}}};")
    lines += [f"int {ENTRY}(char **d, int64_t n, int64_t L) {{", "    (void)L;"]
    for k, dt in enumerate(spec.in_dtypes):
        if dt in CTYPE:
            lines.append(f"    const {CTYPE[dt]} *restrict in{k} = (const {CTYPE[dt]} *)d[{k}];")
    for k, dt in enumerate(spec.out_dtypes):
        lines.append(f"    {CTYPE[dt]} *restrict out{k} = ({CTYPE[dt]} *)d[{n_in + k}];")
    randoms = [i for i, ins in enumerate(spec.instrs) if ins[0] == RANDOM]
    if len({spec.instrs[i][3][0][:2] for i in randoms}) < len(randoms):
        # the interpreter draws a mask just before its use, so two may share a register;
        # the C's masks are all drawn before the loop
        raise Unsupported("random masks that share a register")
    if n_in + n_out + len(randoms) + spec.n_scratch > MAX_PROGRAM_SLOTS:
        raise Unsupported("more operands than the interpreter hands generated C")
    for j, i in enumerate(randoms):
        dt = spec.instrs[i][3][0][2]
        if dt not in (F32, F64):
            raise Unsupported(f"random instruction {i} of dtype code {dt}")
        lines.append(f"    const {CTYPE[dt]} *restrict rnd{j} = (const {CTYPE[dt]} *)d[{n_in + n_out + j}];")
    for k, (dt, v) in enumerate(spec.consts):
        if dt not in CTYPE:
            raise Unsupported(f"constant of dtype code {dt}")
        lines.append(f"    const {CTYPE[dt]} c{k} = {_literal(dt, v)};")
    rnd = {i: f"rnd{j}" for j, i in enumerate(randoms)}
    if any(ins[0] in ROW_KINDS for ins in spec.instrs):
        # the interpreter's scratch registers follow the masks (_native), for the values a
        # row pass keeps for a later one
        for r in range(spec.n_scratch):
            lines.append(f"    char *restrict sreg{r} = d[{n_in + n_out + len(randoms) + r}];")
    if not any(ins[0] in ROW_KINDS for ins in spec.instrs):
        body, value = _element_body(spec, len(spec.instrs), {}, rnd, "        ")
        lines += ["    for (int64_t e = 0; e < n; e++) {", *body, *_stores(spec, value, "        "), "    }"]
    else:
        lines += _row_loops(spec, rnd)
    return "\n".join(lines + ["    return 0;", "}", ""])


ROW_KINDS = (ROW, SOFTMAX, SOFTMAX_BWD)


def _element_body(spec, upto, scalars, rnd, ind):
    """(statements, values) computing instructions 0 .. upto-1 of element e (the loop's
    variable) in registers, one const local v<i> per instruction; values: slot -> the C name
    holding it last.  scalars: {row instruction index: its per-row value(s)}, the reductions
    done before this pass."""
    ops = _table_ops()
    value = {(0, k): f"in{k}[e]" for k, dt in enumerate(spec.in_dtypes) if dt in CTYPE}
    value.update(((1, k), f"c{k}") for k in range(len(spec.consts)))
    body = []
    for i, (kind, op, compute, operands, ps) in enumerate(spec.instrs[:upto]):
        (dkind, didx, ddt), srcs = operands[0], operands[1:]
        if ddt not in CTYPE:
            raise Unsupported(f"dtype code {ddt}")
        if kind == RANDOM:
            body.append(f"{ind}const {CTYPE[ddt]} v{i} = {rnd[i]}[e];")
            value[(dkind, didx)] = f"v{i}"
            continue
        try:
            args = [value[(src[0], src[1])] for src in srcs]
        except KeyError:
            raise Unsupported(f"instruction {i} reads a slot nothing wrote") from None
        c = CTYPE.get(compute)
        if kind == CAST:
            sdt = srcs[0][2]
            expr = f"({args[0]} != 0)" if ddt == BOOL and sdt != BOOL else f"({CTYPE[ddt]}){args[0]}"
        elif kind in (UNARY, BINARY, TERNARY):
            name = ops.get((kind, op))
            if name is None or compute not in SUFFIX:
                raise Unsupported(f"op {op} of kind {kind} in dtype code {compute}")
            fn = f"{'ubt'[kind]}_{name}_{SUFFIX[compute]}"
            expr = f"{fn}({', '.join(args)}, {f'P{i}' if ps else 'P_'})"
        elif kind == ROW and op == ROW_SPREAD:
            expr = args[0]
        elif i not in scalars:
            raise Unsupported(f"row instruction {i} before its reduction")
        elif kind == ROW:
            expr = scalars[i]
        elif kind == SOFTMAX:
            m, total, kept = scalars[i]
            exp = f"u_EXP_{SUFFIX[compute]}"
            if op == 1:
                expr = f"({c})({args[0]} - {m}) - ({c})log({total})"
            elif kept:                  # exp(v - max) as the sum's pass left it
                expr = f"{kept}[e] * ({c})(1.0 / {total})"
            else:
                expr = f"{exp}(({c})({args[0]} - {m}), P_) * ({c})(1.0 / {total})"
        elif kind == SOFTMAX_BWD:
            y, g = args
            expr = (f"{y} * ({g} - {scalars[i]})" if op == 0 else
                    f"{g} - u_EXP_{SUFFIX[compute]}({y}, P_) * {scalars[i]}")
        else:
            raise Unsupported(f"instruction kind {kind}")
        body.append(f"{ind}const {CTYPE[ddt]} v{i} = {expr};")
        value[(dkind, didx)] = f"v{i}"
    return body, value


def _stores(spec, value, ind):
    out = []
    for k in range(len(spec.out_dtypes)):
        if (3, k) not in value:
            raise Unsupported(f"output {k} is never written")
        out.append(f"{ind}out{k}[e] = {value[(3, k)]};")
    return out


def _kept_exponentials(spec):
    """{softmax instruction index: the C array its sum pass leaves exp(v - max) in}: its own
    destination (an output, or a scratch register), so the last pass reads the exponential
    instead of computing it again; only where no other value that lives across passes (a
    random mask, another softmax's) uses that slot."""
    claims = {}
    for i, (kind, op, compute, operands, ps) in enumerate(spec.instrs):
        if kind == RANDOM or (kind == SOFTMAX and op == 0):
            claims.setdefault(operands[0][:2], []).append(i)
    kept = {}
    for slot, users in claims.items():
        i = users[0]
        kind, op, compute, operands, ps = spec.instrs[i]
        if len(users) != 1 or kind != SOFTMAX or operands[0][2] != compute:
            continue
        skind, idx = slot
        c = CTYPE[compute]
        if skind == 3:
            kept[i] = f"out{idx}"
        elif skind == 2:
            kept[i] = f"(({c} *)sreg{idx})"
    return kept


def _row_loops(spec, rnd):
    """The per-row passes of a program with row instructions (see c_source)."""
    lines = ["    for (int64_t row = 0; row < n / L; row++) {",
             "        const int64_t e0 = row * L;"]
    scalars = {}
    kept = _kept_exponentials(spec)
    ind = "            "

    def reduction(i, name, init, term, combine):
        body, value = _element_body(spec, i, scalars, rnd, ind)
        operand = [value.get((src[0], src[1])) for src in spec.instrs[i][3][1:]]
        if None in operand:
            raise Unsupported(f"row instruction {i} reads a slot nothing wrote")
        lines.append(f"        double {name} = {init};")
        lines.append(f"        {combine[0]}")
        lines.append("        for (int64_t e = e0; e < e0 + L; e++) {")
        lines.extend(body)
        lines.append(f"{ind}{combine[1].format(a=name, t=term(*operand))};")
        lines.append("        }")
        return operand

    sum_ = ("#pragma omp simd reduction(+:{a})", "{a} += {t}")
    for i, (kind, op, compute, operands, ps) in enumerate(spec.instrs):
        if kind not in ROW_KINDS or (kind == ROW and op == ROW_SPREAD):
            continue
        c = CTYPE[compute]
        if kind == SOFTMAX_BWD:         # the row sum of g * y (softmax) or of g (log_softmax)
            reduction(i, f"a{i}", "0.0", (lambda y, g: f"(double)({g} * {y})") if op == 0
                      else (lambda y, g: f"(double){g}"), (sum_[0].format(a=f"a{i}"), sum_[1]))
            lines.append(f"        const {c} s{i} = ({c})a{i};")
            scalars[i] = f"s{i}"
        elif kind == ROW:
            reduction(i, f"a{i}", "0.0", lambda v: f"(double){v}", (sum_[0].format(a=f"a{i}"), sum_[1]))
            lines.append(f"        const {c} s{i} = ({c})(a{i}{' / (double)L' if op == 1 else ''});")
            scalars[i] = f"s{i}"
        else:                           # softmax: the row's maximum (NaN wins), then sum exp
            lines.append(f"        int nan{i} = 0;")
            reduction(i, f"x{i}", "-INFINITY", lambda v: v,
                      (f"#pragma omp simd reduction(max:x{i}) reduction(|:nan{i})",
                       "{a} = {t} > {a} ? {t} : {a}; nan" + str(i) + " |= {t} != {t}"))
            lines.append(f"        const {c} m{i} = nan{i} ? ({c})NAN : ({c})x{i};")
            scalars[i] = (f"m{i}", "1.0", None)
            exp = f"u_EXP_{SUFFIX[compute]}"
            if i in kept:               # the exponential stored for the last pass as well
                reduction(i, f"a{i}", "0.0", lambda v: f"{exp}(({c})({v} - m{i}), P_)",
                          (sum_[0].format(a=f"a{i}"),
                           "{{ const " + c + " t_ = {t}; " + kept[i] + "[e] = t_; {a} += (double)t_; }}"))
            else:
                reduction(i, f"a{i}", "0.0", lambda v: f"(double){exp}(({c})({v} - m{i}), P_)",
                          (sum_[0].format(a=f"a{i}"), sum_[1]))
            scalars[i] = (f"m{i}", f"a{i}", kept.get(i))
    body, value = _element_body(spec, len(spec.instrs), scalars, rnd, ind)
    lines += ["        for (int64_t e = e0; e < e0 + L; e++) {", *body, *_stores(spec, value, ind),
              "        }", "    }"]
    return lines


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
    # the eager kernels' flags (setup.py), for the SIMD level the kernels run at
    return ["-O3", _march(), "-fno-math-errno", "-fno-trapping-math", "-fopenmp-simd", "-fPIC", "-shared",
            "-std=gnu99", "-w", f"-I{_KERNELS}"] + \
        ([f"-I{cuda}"] if cuda else []) + ["-lm"]


_X86_LEVELS = {0: "-march=x86-64", 3: "-march=x86-64-v3", 4: "-march=x86-64-v4"}


def _march():
    """-march=native, unless the eager kernels run below the CPU's best SIMD level (x86:
    TORCHLITE_ISA or set_isa_level forced one, for reproducible numbers or a check of the
    narrower code): then that level's x86-64 micro-architecture level, so generated C uses
    no instruction the eager kernels do not.  The level when the program is built counts."""
    level, best = _ew.isa_level(), _ew.cpu_isa_level()
    if level < best and level in _X86_LEVELS:
        return _X86_LEVELS[level]
    return "-march=native"


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
    try:                    # x86's "flags", ARM's "Features" and part numbers
        with open("/proc/cpuinfo") as f:
            cpu = sorted({ln for ln in f if ln.startswith(("flags", "model name", "Features",
                                                             "CPU implementer", "CPU part"))})
    except OSError:
        cpu = []
    h.update(("".join(cpu) + platform.machine() + platform.processor()).encode())
    return h.hexdigest()


def native_program(spec):
    """(library, address of its entry function) for `spec`, compiled or taken from the disk
    cache; None when the program has no C form or no compiler is found.  Raises RuntimeError
    (with the compiler's message) when it cannot be built or loaded."""
    try:
        try:
            src = c_source(spec)
        except Unsupported:
            return None
        cc = compiler()
        if cc is None:
            return None
        cmd = cc + _flags()
        key = hashlib.sha256("\0".join((src, " ".join(cmd), _environment_key())).encode())
        path = os.path.join(_cache_dir(), f"fused_{key.hexdigest()[:24]}.so")
        lib = _LOADED.get(path)
        if lib is None:
            if not os.path.isfile(path):
                _build(cmd, src, path)
            try:
                lib = _load(path)
            except (OSError, AttributeError):    # a damaged file in the cache: built again, once
                os.remove(path)
                _build(cmd, src, path)
                lib = _load(path)
            _LOADED[path] = lib
    except (OSError, AttributeError) as e:   # headers or cache folder missing, a bad file
        raise RuntimeError(f"torchlite.compile (cpp_codegen): {type(e).__name__}: {e}") from e
    return lib, ctypes.cast(getattr(lib, ENTRY), ctypes.c_void_p).value


def _load(path):
    """The library at path, which must define the entry function (AttributeError if not)."""
    lib = ctypes.CDLL(path)
    getattr(lib, ENTRY)
    return lib


_STALE_BUILD_S = 3600        # a build folder this old is one a killed process left behind


def _build(cmd, src, path):
    d = os.path.dirname(path)
    _sweep_stale_builds(d)
    with tempfile.TemporaryDirectory(dir=d, prefix="build-") as tmp:
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


def _sweep_stale_builds(d):
    """Remove the build folders (build-*) older than _STALE_BUILD_S in the cache folder d: a
    process killed while compiling leaves its folder (a live build is seconds old)."""
    now = time.time()
    for name in os.listdir(d):
        full = os.path.join(d, name)
        try:
            if name.startswith("build-") and os.path.isdir(full) \
                    and now - os.path.getmtime(full) > _STALE_BUILD_S:
                shutil.rmtree(full, ignore_errors=True)
        except OSError:         # another process removed it first
            pass
