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
RANDOM = 6                       # a Bernoulli mask drawn from (seed, first block) int64 inputs
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
    void <name>(outputs..., inputs..., tl::i64 n, tl::Indexer<outputs + inputs> ix)`.
    Raises Unsupported when some instruction has no CUDA functor."""
    name = name or kernel_name(spec)
    n_in, n_out = len(spec.in_dtypes), len(spec.out_dtypes)
    nops = n_in + n_out
    if param_bytes(nops) > MAX_PARAM_BYTES:
        raise Unsupported(f"{nops} operands: the kernel's parameters pass {MAX_PARAM_BYTES} bytes")
    for dt in spec.out_dtypes:
        if dt not in CTYPE:
            raise Unsupported(f"dtype code {dt}")
    for dt in spec.in_dtypes:
        if dt not in IN_CTYPE:
            raise Unsupported(f"dtype code {dt}")
    params = [f"{CTYPE[dt]}* __restrict__ out{k}" for k, dt in enumerate(spec.out_dtypes)]
    params += [f"const {IN_CTYPE[dt]}* __restrict__ in{k}" for k, dt in enumerate(spec.in_dtypes)]
    params += ["tl::i64 n", f"tl::Indexer<{nops}> ix"]
    head = [f"/* fused program {spec.name}: {len(spec.instrs)} instructions, {n_in} inputs, "
            f"{n_out} outputs (generated by torchlite/cuda/_fused.py) */",
            '#include "tl_common.cuh"', '#include "tl_ops.cuh"',
            *(['#include "tl_philox.cuh"'] if any(ins[0] == RANDOM for ins in spec.instrs) else []),
            "",
            f'extern "C" __global__ void {name}(']
    head.append("    " + ",\n    ".join(params) + ") {")
    pre, body = [], []
    for k, (dt, v) in enumerate(spec.consts):
        pre.append(f"    const {CTYPE[dt]} c{k} = {_literal(dt, v)};")
    value = {}                    # slot (kind, index) -> (C expression, dtype) now held there
    used_inputs = sorted({o[1] for ins in spec.instrs for o in ins[3][1:] if o[0] == 0})
    for k in used_inputs:
        body.append(f"        const {IN_CTYPE[spec.in_dtypes[k]]} x{k} = "
                    f"tl::load(in{k}[o.o[{n_out + k}]]);")
        value[(0, k)] = (f"x{k}", spec.in_dtypes[k])
    for k, (dt, _) in enumerate(spec.consts):
        value[(1, k)] = (f"c{k}", dt)
    for i, (kind, op, compute, operands, ps) in enumerate(spec.instrs):
        (dkind, didx, ddt), srcs = operands[0], operands[1:]
        if ddt not in CTYPE:
            raise Unsupported(f"dtype code {ddt}")
        try:
            vals = [value[(s[0], s[1])][0] for s in srcs]
        except KeyError:
            raise Unsupported(f"instruction {i} reads a slot nothing wrote") from None
        if kind == CAST:
            expr = vals[0]
        elif kind == RANDOM:
            if ddt not in (F32, F64) or len(vals) != 2 or op != 0:
                raise Unsupported(f"random instruction {i}")
            body.extend(_bernoulli_lines(i, vals[0], vals[1], ps[0]))
            expr = f"(r{i} ? 1 : 0)"
        else:
            if compute not in CTYPE:
                raise Unsupported(f"compute dtype code {compute}")
            fn = _functor(kind, op, compute)
            c = CTYPE[compute]
            args = [f"tl::cvt<{'bool' if kind == TERNARY and fn == 'tl::op::Where' and j == 0 else c}>"
                    f"::from({v})" for j, v in enumerate(vals)]
            if ps:
                scal = ", ".join(_f64(p) for p in (tuple(ps) + (0.0,) * 4)[:4])
                pre.append(f"    const tl::Params p{i} = {{{{{scal}}}, nullptr}};")
                pname = f"p{i}"
            else:
                pname = "p_"
            expr = f"{fn}()({', '.join(args)}, {pname})"
        body.append(f"        const {CTYPE[ddt]} v{i} = tl::cvt<{CTYPE[ddt]}>::from({expr});")
        value[(dkind, didx)] = (f"v{i}", ddt)
    for k, dt in enumerate(spec.out_dtypes):
        if (3, k) not in value:
            raise Unsupported(f"output {k} is never written")
        body.append(f"        out{k}[o.o[{k}]] = tl::cvt<{CTYPE[dt]}>::from({value[(3, k)][0]});")
    pre.insert(0, "    const tl::Params p_ = {{0.0, 0.0, 0.0, 0.0}, nullptr};")
    loop = ["    for (tl::i64 e = tl::global_thread(); e < n; e += tl::global_threads()) {",
            f"        const tl::Offsets<{nops}> o = tl::operand_offsets(ix, e);"]
    return "\n".join(head + pre + loop + body + ["    }", "}", ""])


def _bernoulli_lines(i, seed, base, p):
    """Element `e` (the loop's flat index) of a Bernoulli(p) request at (seed, base): the CPU's
    threshold and word (kernels/random.h's layout), into bool r<i>."""
    thresh = int(float(p) * 4294967296.0 + 0.5)
    return [f"        tl::u32 w{i}[4];",
            f"        {{ const tl::u64 s{i} = (tl::u64){seed};",
            f"          const tl::u32 key{i}[2] = {{(tl::u32)s{i}, (tl::u32)(s{i} >> 32)}};",
            f"          tl::rnd::tl_philox_block(key{i}, (tl::u64){base} + (tl::u64)(e / 64) * 16"
            f" + (tl::u64)(e % 16), 0u, w{i}); }}",
            f"        const bool r{i} = (tl::u64)w{i}[(e % 64) / 16] < {thresh}ull;"]


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
    _launch.launch(k, E._grid(numel, device), E._THREADS, args)
    return outs


@_registry.native("fused", "run", kernel=True)
def run(program, inputs, shape, spec=None):
    """torchlite._core.fused.run on CUDA arrays: the generated kernel of `spec`."""
    if spec is None:
        raise Unsupported("a fused program on CUDA needs its spec (the lowered data)")
    return run_cuda(spec, inputs, shape)
