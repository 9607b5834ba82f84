"""Fused elementwise programs on CUDA (torchlite.compile's): a lowered program (plain data:
torchlite/compiler/_lowering.py's ProgramSpec) becomes one CUDA C kernel, compiled at run time
by NVRTC through the kernel cache (keyed by the text).  It is the CUDA version of
torchlite._core.fused.run, registered like the backend's other kernels and reached through
torchlite._dispatch.fused.

The kernel walks its operands as cuda_kernels/elementwise.cu does -- a grid-stride loop, a
tl::Indexer over all operands (outputs first, then inputs), the contiguous fast path or the
strided walk -- and for each element loads the inputs, evaluates the instructions in registers
(one float/double/bool local per instruction, each one call of the op's tl::op functor, which
has the CPU loop's semantics, then the CPU's conversion to the destination's dtype) and stores
the outputs.  A random instruction (dropout's mask) computes, for flat element i, the Philox
word the CPU's bernoulli_ turns into element i of its request (tl_philox.cuh, one source with
the CPU: word (i mod 64) / 16 of block base + 16 (i / 64) + i mod 16) and compares it with the
probability's threshold, so the mask is the CPU's to the bit.  The op's scalars (clamp
bounds, alpha, value) are written into the text as exact bit patterns, so a program with
other scalars is another kernel.

A program with row instructions (softmax/log_softmax over the last dimension, row sums and
means: torchlite/_core/fused.pyx) becomes a kernel with one thread block per row: each row
reduction is a pass over the row's elements that recomputes the instructions before it and
combines the per-thread partials across the block in double (tl_block.cuh); a last pass
computes every instruction and stores the outputs.  Nothing per element is kept between
passes, so any row length works.

The op code -> functor mapping is the CUDA backend's (torchlite/cuda/_elementwise.py's names,
_kernels.functor), as is the launch geometry and the Indexer packing.
"""
import functools
import hashlib
import re
import struct

from . import _registry

# the array layer's dtype codes and the program's instruction kinds (_core/fused.pyx)
BOOL, I64, F32, F64 = 0, 5, 8, 9
UNARY, BINARY, TERNARY, CAST = 0, 1, 2, 3
ROW, SOFTMAX, ROW_SPREAD = 4, 5, 2      # row instructions: sum/mean/spread, softmax
RANDOM = 6                       # a Bernoulli mask drawn from (seed, first block) int64 inputs
SOFTMAX_BWD = 7                  # softmax (op 0) / log_softmax (1) gradient from sources y, g
ROW_KINDS = (ROW, SOFTMAX, SOFTMAX_BWD)
CTYPE = {BOOL: "bool", F32: "float", F64: "double"}
IN_CTYPE = {**CTYPE, I64: "tl::i64"}     # int64 inputs: a random instruction's seed/block
MAX_PARAM_BYTES = 32764          # kernel parameter space (Volta+ with CUDA 12.1+)
# no multiply-add contraction across instructions: each op rounds as the CPU loop does
OPTIONS = ("--fmad=false",)


class Unsupported(NotImplementedError):
    """The program has no CUDA kernel (an op without a functor, too many operands, a launch
    too large for the strided walk): the caller runs it another way."""


def _names():
    from . import _elementwise as E
    return E._UNARY_NAME, E._BINARY_NAME, E._TERNARY_NAME


def _f64(v):
    """A double as an exact expression (NaN, infinities and -0.0 included)."""
    return "tl::bits_f64(0x%016xull)" % struct.unpack("<Q", struct.pack("<d", float(v)))[0]


def _literal(dt, v):
    if dt == BOOL:
        return "true" if v else "false"
    if dt == F32:
        return f"(float){_f64(v)}"              # the CPU's (float)v
    return _f64(v)


def _functor(kind, op, compute):
    """The tl::op functor of an instruction, checked against the CUDA backend's op lists."""
    from . import _kernels as K
    unary, binary, ternary = _names()
    try:
        if kind == UNARY:
            K.unary_kernel(unary[op], compute)
            return K.functor(unary[op])
        if kind == BINARY:
            K.binary_kernel(binary[op], compute)
            return K.functor(binary[op])
        if kind == TERNARY:
            K.ternary_kernel(ternary[op], compute)
            return K.functor(ternary[op])
    except KeyError as e:
        raise Unsupported(str(e)) from None
    raise Unsupported(f"instruction kind {kind}")


def kernel_name(spec):
    """The kernel's C name: the program's name, made an identifier, and a hash of the spec."""
    base = re.sub(r"\W", "_", spec.name)[:48]
    return f"tl_fused_{base}_{hashlib.sha256(repr(spec).encode()).hexdigest()[:12]}"


def param_bytes(n_operands):
    """The kernel's parameter bytes: a pointer per operand, n and the Indexer."""
    from . import _kernels as K
    return 8 * n_operands + 8 + K.indexer_size(n_operands)


def cuda_source(spec, name=None):
    """The CUDA C text of a kernel computing `spec` (a ProgramSpec): `extern "C" __global__
    void <name>(outputs..., inputs..., tl::i64 n, tl::Indexer<outputs + inputs> ix)`, with a
    trailing `tl::i64 L` (the row length) for a program with row instructions.  Raises
    Unsupported when some instruction has no CUDA functor."""
    name = name or kernel_name(spec)
    n_in, n_out = len(spec.in_dtypes), len(spec.out_dtypes)
    nops = n_in + n_out
    if param_bytes(nops) + 8 > MAX_PARAM_BYTES:
        raise Unsupported(f"{nops} operands: the kernel's parameters pass {MAX_PARAM_BYTES} bytes")
    for dt in spec.out_dtypes:
        if dt not in CTYPE:
            raise Unsupported(f"dtype code {dt}")
    for dt in spec.in_dtypes:
        if dt not in IN_CTYPE:
            raise Unsupported(f"dtype code {dt}")
    rows = any(ins[0] in ROW_KINDS for ins in spec.instrs)
    params = [f"{CTYPE[dt]}* __restrict__ out{k}" for k, dt in enumerate(spec.out_dtypes)]
    params += [f"const {IN_CTYPE[dt]}* __restrict__ in{k}" for k, dt in enumerate(spec.in_dtypes)]
    params += ["tl::i64 n", f"tl::Indexer<{nops}> ix"] + (["tl::i64 L"] if rows else [])
    head = [f"/* fused program {spec.name}: {len(spec.instrs)} instructions, {n_in} inputs, "
            f"{n_out} outputs (generated by torchlite/cuda/_fused.py) */",
            '#include "tl_common.cuh"', '#include "tl_ops.cuh"',
            *(['#include "tl_philox.cuh"'] if any(ins[0] == RANDOM for ins in spec.instrs) else []),
            *(['#include "tl_block.cuh"'] if rows else []),
            "",
            *(_ROW_HELPERS if rows else []),
            f'extern "C" __global__ void {name}(']
    head.append("    " + ",\n    ".join(params) + ") {")
    pre = ["    const tl::Params p_ = {{0.0, 0.0, 0.0, 0.0}, nullptr};"]
    for k, (dt, v) in enumerate(spec.consts):
        pre.append(f"    const {CTYPE[dt]} c{k} = {_literal(dt, v)};")
    for i, (kind, op, compute, operands, ps) in enumerate(spec.instrs):
        if ps and kind not in (RANDOM,) + ROW_KINDS:
            scal = ", ".join(_f64(p) for p in (tuple(ps) + (0.0,) * 4)[:4])
            pre.append(f"    const tl::Params p{i} = {{{{{scal}}}, nullptr}};")
    if not rows:
        loop = ["    for (tl::i64 e = tl::global_thread(); e < n; e += tl::global_threads()) {"]
        body = _element_body(spec, len(spec.instrs), {}, "        ")
        return "\n".join(head + pre + loop + body + _stores(spec, body, "        ") +
                          ["    }", "}", ""])
    return "\n".join(head + pre + _row_kernel_body(spec) + ["}", ""])


def _stores(spec, body, ind):
    """The output stores after an element body (its last value of each output slot)."""
    values = _element_values(spec)
    out = []
    for k, dt in enumerate(spec.out_dtypes):
        if (3, k) not in values:
            raise Unsupported(f"output {k} is never written")
        out.append(f"{ind}out{k}[o.o[{k}]] = tl::cvt<{CTYPE[dt]}>::from({values[(3, k)]});")
    return out


def _element_values(spec):
    """slot -> the C name of the last value written there (by instruction index)."""
    values = {}
    for i, (kind, op, compute, operands, ps) in enumerate(spec.instrs):
        values[(operands[0][0], operands[0][1])] = f"v{i}"
    return values


def _element_body(spec, upto, scalars, ind, also_read=()):
    """The statements computing instructions 0 .. upto-1 for flat element e (the loop's
    variable): the operands' offsets, the inputs the instructions (and also_read: more
    operands) read, one const local v<i> per instruction.  scalars: {instruction index: C
    expression} of the row instructions already reduced (their values per row)."""
    n_out = len(spec.out_dtypes)
    nops = n_out + len(spec.in_dtypes)
    body = [f"{ind}const tl::Offsets<{nops}> o = tl::operand_offsets(ix, e);"]
    value = {}                    # slot (kind, index) -> (C expression, dtype) now held there
    instrs = spec.instrs[:upto]
    used_inputs = sorted({o[1] for ins in instrs for o in ins[3][1:] if o[0] == 0}
                         | {o[1] for o in also_read if o[0] == 0})
    for k in used_inputs:
        body.append(f"{ind}const {IN_CTYPE[spec.in_dtypes[k]]} x{k} = "
                    f"tl::load(in{k}[o.o[{n_out + k}]]);")
        value[(0, k)] = (f"x{k}", spec.in_dtypes[k])
    for k, (dt, _) in enumerate(spec.consts):
        value[(1, k)] = (f"c{k}", dt)
    for i, (kind, op, compute, operands, ps) in enumerate(instrs):
        (dkind, didx, ddt), srcs = operands[0], operands[1:]
        if ddt not in CTYPE:
            raise Unsupported(f"dtype code {ddt}")
        try:
            vals = [value[(s[0], s[1])][0] for s in srcs]
        except KeyError:
            raise Unsupported(f"instruction {i} reads a slot nothing wrote") from None
        c = CTYPE.get(compute)
        if kind == CAST:
            expr = vals[0]
        elif kind == RANDOM:
            if ddt not in (F32, F64) or len(vals) != 2 or op != 0:
                raise Unsupported(f"random instruction {i}")
            body.extend(_bernoulli_lines(i, vals[0], vals[1], ps[0], ind))
            expr = f"(r{i} ? 1 : 0)"
        elif kind == ROW and op == ROW_SPREAD:
            expr = vals[0]
        elif kind == SOFTMAX_BWD:
            if i not in scalars:
                raise Unsupported(f"row instruction {i} before its reduction")
            y, g = (f"({c})({v})" for v in vals)
            if op == 0:                       # softmax: y * (g - sum(g * y))
                expr = f"{y} * ({g} - {scalars[i]})"
            else:                             # log_softmax: g - exp(y) * sum(g)
                expr = f"{g} - tl::op::Exp()({y}, p_) * {scalars[i]}"
        elif kind in (ROW, SOFTMAX):
            if i not in scalars:
                raise Unsupported(f"row instruction {i} before its reduction")
            if kind == ROW:
                expr = scalars[i]
            elif op == 0:                     # softmax: exp(v - max) / sum
                m, total = scalars[i]
                expr = f"tl::op::Exp()(({c})({vals[0]} - {m}), p_) * ({c})(1.0 / {total})"
            else:                             # log_softmax: v - max - log(sum)
                m, total = scalars[i]
                expr = f"({c})({vals[0]} - {m}) - ({c})log({total})"
        else:
            if compute not in CTYPE:
                raise Unsupported(f"compute dtype code {compute}")
            fn = _functor(kind, op, compute)
            args = [f"tl::cvt<{'bool' if kind == TERNARY and fn == 'tl::op::Where' and j == 0 else c}>"
                    f"::from({v})" for j, v in enumerate(vals)]
            expr = f"{fn}()({', '.join(args)}, {f'p{i}' if ps else 'p_'})"
        body.append(f"{ind}const {CTYPE[ddt]} v{i} = tl::cvt<{CTYPE[ddt]}>::from({expr});")
        value[(dkind, didx)] = (f"v{i}", ddt)
    return body


# the combines of a row reduction (tl::block_allcombine's Op), in double
_ROW_HELPERS = [
    "struct TlRowSum { __device__ double combine(double a, double b) const { return a + b; } };",
    "struct TlRowMax { __device__ double combine(double a, double b) const {",
    "    return (b != b || b > a) ? b : a; } };",
    "",
]


def _row_kernel_body(spec):
    """A program with row instructions: one block per row (grid-stride over the rows), each
    row instruction's reduction a pass over the row's elements that recomputes the
    instructions before it (elementwise work is cheap; nothing per element is kept between
    passes), the per-row results combined across the block in double; a last pass computes
    every instruction and stores the outputs."""
    lines = ["    __shared__ double tl_buf[32];",
             "    const tl::i64 rows = L > 0 ? n / L : 0;",
             "    for (tl::i64 row = blockIdx.x; row < rows; row += gridDim.x) {"]
    scalars = {}
    ind = "            "

    def reduction(i, upto, combine, init, term):
        lines.append(f"        double a{i}{combine} = {init};")
        lines.append("        for (tl::i64 j = threadIdx.x; j < L; j += blockDim.x) {")
        lines.append(f"{ind}const tl::i64 e = row * L + j;")
        lines.extend(_element_body(spec, upto, scalars, ind, spec.instrs[i][3][1:]))
        lines.append(f"{ind}a{i}{combine} = TlRow{combine}().combine(a{i}{combine}, {term});")
        lines.append("        }")
        lines.append(f"        a{i}{combine} = tl::block_allcombine(TlRow{combine}(), "
                     f"a{i}{combine}, tl_buf, true);")

    for i, (kind, op, compute, operands, ps) in enumerate(spec.instrs):
        if kind not in ROW_KINDS or (kind == ROW and op == ROW_SPREAD):
            continue
        values = {}
        for j, ins in enumerate(spec.instrs[:i]):
            values[(ins[3][0][0], ins[3][0][1])] = f"v{j}"

        def operand_of(src):
            operand = {0: f"x{src[1]}", 1: f"c{src[1]}"}.get(src[0]) or values.get((src[0], src[1]))
            if operand is None:
                raise Unsupported(f"row instruction {i} reads a slot nothing wrote")
            return operand
        operand = operand_of(operands[1])
        c = CTYPE[compute]
        if kind == SOFTMAX_BWD:         # the row sum of g * y (softmax) or of g (log_softmax)
            y, g = f"({c})({operand})", f"({c})({operand_of(operands[2])})"
            reduction(i, i, "Sum", "0.0", f"(double)({g} * {y})" if op == 0 else f"(double){g}")
            lines.append(f"        const {c} s{i} = ({c})a{i}Sum;")
            scalars[i] = f"s{i}"
        elif kind == ROW:
            reduction(i, i, "Sum", "0.0", f"(double){operand}")
            scale = " / (double)L" if op == 1 else ""
            lines.append(f"        const {c} s{i} = ({c})(a{i}Sum{scale});")
            scalars[i] = f"s{i}"
        else:
            reduction(i, i, "Max", "tl::bits_f64(0xfff0000000000000ull)", f"(double){operand}")
            lines.append(f"        const {c} m{i} = ({c})a{i}Max;")
            scalars[i] = (f"m{i}", "0.0")
            reduction(i, i, "Sum", "0.0",
                      f"(double)tl::op::Exp()(({c})({operand} - m{i}), p_)")
            scalars[i] = (f"m{i}", f"a{i}Sum")
    lines.append("        for (tl::i64 j = threadIdx.x; j < L; j += blockDim.x) {")
    lines.append(f"{ind}const tl::i64 e = row * L + j;")
    body = _element_body(spec, len(spec.instrs), scalars, ind)
    lines.extend(body + _stores(spec, body, ind))
    lines += ["        }", "    }"]
    return lines


def _bernoulli_lines(i, seed, base, p, ind):
    """Element `e` (the loop's flat index) of a Bernoulli(p) request at (seed, base): the CPU's
    threshold and word (kernels/random.h's layout), into bool r<i>."""
    thresh = int(float(p) * 4294967296.0 + 0.5)
    return [f"{ind}tl::u32 w{i}[4];",
            f"{ind}{{ const tl::u64 s{i} = (tl::u64){seed};",
            f"{ind}  const tl::u32 key{i}[2] = {{(tl::u32)s{i}, (tl::u32)(s{i} >> 32)}};",
            f"{ind}  tl::rnd::tl_philox_block(key{i}, (tl::u64){base} + (tl::u64)(e / 64) * 16"
            f" + (tl::u64)(e % 16), 0u, w{i}); }}",
            f"{ind}const bool r{i} = (tl::u64)w{i}[(e % 64) / 16] < {thresh}ull;"]


@functools.lru_cache(maxsize=512)
def _compiled_text(spec):
    """(kernel name, text) of a spec, made once per spec."""
    name = kernel_name(spec)
    return name, cuda_source(spec, name)


def run_cuda(spec, arrays, shape):
    """The outputs (new contiguous CUDA arrays of `shape`) of `spec` on CUDA arrays `arrays`
    (broadcastable to `shape`, of the program's input dtypes, all on one device): one launch
    of the generated kernel.  Raises Unsupported when the program has no CUDA kernel."""
    from . import _array, _elementwise as E, _launch
    from ._array import CudaArray
    shape = tuple(shape)
    if len(arrays) != len(spec.in_dtypes):
        raise ValueError(f"fused program {spec.name}: {len(arrays)} inputs for {len(spec.in_dtypes)}")
    if not arrays or not all(isinstance(a, CudaArray) for a in arrays):
        raise Unsupported("inputs not all CUDA arrays")
    device = arrays[0].device_index
    if any(a.device_index != device for a in arrays):
        raise Unsupported("inputs on several devices")
    for i, (a, dt) in enumerate(zip(arrays, spec.in_dtypes)):
        if a.dtype != dt:
            raise TypeError(f"fused program {spec.name}: input {i} has dtype code {a.dtype}, "
                            f"expected {dt}")
        if a.ndim > len(shape) or any(s != 1 and s != shape[len(shape) - a.ndim + d]
                                      for d, s in enumerate(a.shape)):
            raise ValueError(f"fused program {spec.name}: input {i} of shape {tuple(a.shape)} "
                             f"does not broadcast to {shape}")
    name, text = _compiled_text(spec)
    outs = [_array.empty(shape, dt, device) for dt in spec.out_dtypes]
    numel = 1
    for s in shape:
        numel *= s
    if numel == 0:
        return outs
    strides = [E._broadcast_strides(x, shape) for x in outs + list(arrays)]
    ix = E.packed_indexer(shape, strides)
    if ix is None:
        raise Unsupported(f"{numel} elements: too many for the strided walk")
    k = _launch.kernel_from_text(name + ".cu", text, name, device, OPTIONS)
    args = [_launch.ptr(x.data_ptr()) for x in outs + list(arrays)]
    args += [_launch.i64(numel), _launch.struct(ix)]
    if any(ins[0] in ROW_KINDS for ins in spec.instrs):
        row_len = shape[-1] if shape else 1       # one block per row of the last dimension
        args.append(_launch.i64(row_len))
        _launch.launch(k, E._grid(numel // row_len * E._THREADS, device), E._THREADS, args)
    else:
        _launch.launch(k, E._grid(numel, device), E._THREADS, args)
    return outs


@_registry.native("fused", "run", kernel=True)
def run(program, inputs, shape, spec=None):
    """torchlite._core.fused.run on CUDA arrays: the generated kernel of `spec`."""
    if spec is None:
        raise Unsupported("a fused program on CUDA needs its spec (the lowered data)")
    return run_cuda(spec, inputs, shape)
