"""Run the elementwise kernels' launches of the CUDA backend on the host, for tests without a GPU.

`install(fake, monkeypatch)` gives a FakeDriver (tests/fake_cuda_driver.py) a cuLaunchKernel
that reads the launch's argument array exactly as the device would (a void* per parameter:
pointers, the element count, the packed tl::Indexer and tl::Params), rebuilds each operand
as a strided view over the fake device memory from the Indexer (the kernels' own offset rule,
_kernels.indexer_offsets, is checked against it), and computes the op with torchlite's CPU
kernel.  So the host side of an elementwise launch (dtype choice, casts, broadcasting,
coalescing, the fast path, argument packing, out= and overlap handling) is tested in CI; the
CUDA C itself is compiled in tests/test_cuda_compile.py and runs only on a GPU.
"""
import ctypes
import hashlib
import os
import re
import shutil
import struct
import subprocess
import threading

from torchlite._core import array as _A
from torchlite._core import elementwise as _ew
from torchlite.cuda import _kernels as K
from torchlite.cuda import _launch

_CTYPE_CODE = {v: k for k, v in K.CTYPE.items()}
_CTYPE_CODE.update({"tl::u16": 6, "tl::u32": 4, "tl::u64": 5,     # bit-moving kernels: any
                    "tl::u128": 11})                              # same-size type
_NOPS = {"tl_unary": 2, "tl_binary": 3, "tl_ternary": 4}


def _functor_op(functor):
    """tl::op::NanToNum -> 'nan_to_num'."""
    name = functor.split("::")[-1]
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _parse(name):
    m = re.match(r"(tl_\w+)<(.*)>$", name)
    if not m or m.group(1) not in _NOPS and m.group(1) != "tl_reduce":
        raise NotImplementedError(f"fake kernels: no emulation of {name}")
    return m.group(1), [p.strip() for p in m.group(2).split(",")]


def _arg(params, index, fmt):
    """Launch argument `index` read as one value of struct format `fmt` ('Q', 'q', 'd', 'i')."""
    return struct.unpack("<" + fmt, _arg_bytes(params, index, struct.calcsize("<" + fmt)))[0]


def _arg_bytes(params_addr, index, size):
    pointers = (ctypes.c_void_p * (index + 1)).from_address(params_addr)
    return ctypes.string_at(pointers[index], size)


def _decode_indexer(packed, nops, n):
    """(shape, per-operand strides) of a packed Indexer over n elements."""
    nd = struct.unpack_from("<i", packed, 0)[0]
    if nd == 0:
        steps = struct.unpack_from(f"<{nops}q", packed, 8)
        return [n], [[s] for s in steps]
    base = 8 + 8 * nops
    shape = list(struct.unpack_from(f"<{nd}I", packed, base))
    flat = struct.unpack_from(f"<{K.MAX_DIMS * nops}q", packed, K._stride_offset(nops))
    return shape, [[flat[d * nops + k] for d in range(nd)] for k in range(nops)]


def _view(address, dtype, shape, strides):
    """A CPU view over fake device memory at `address` (the operand's first element)."""
    isz = K.ITEMSIZE[dtype]
    lo = sum((s - 1) * st for s, st in zip(shape, strides) if st < 0)
    hi = sum((s - 1) * st for s, st in zip(shape, strides) if st > 0)
    base = _A.external(address + lo * isz, (hi - lo + 1) * isz, None, dtype)
    return _A.reinterpret(base, dtype, tuple(shape), tuple(strides), -lo)   # negative strides too


def _offsets_of(packed, nops, n):
    """Offsets of every element 0..n-1 of a packed Indexer, by the kernels' arithmetic."""
    return [K.indexer_offsets(packed, nops, i) for i in range(n)]


_RED = re.compile(r"tl::red::(\w+)<([^<>]+)>")


def _reduce(f, params, gx, gy, bx, by):
    """tl_reduce: each output computed in Python (float64 / int64 accumulators, as the kernel),
    an oracle independent of the CPU's reduction code."""
    op, ctype = _RED.search(f).groups()
    dtype = _CTYPE_CODE[ctype.strip()]
    p_in, p0, p1 = (_arg(params, k, "Q") for k in range(3))
    out_ix = _arg_bytes(params, 3, K.indexer_size(3))
    red_ix = _arg_bytes(params, 4, K.indexer_size(1))
    n_out, R, chunk, rows, _, ws, sem = struct.unpack("<qqqiiQQ", _arg_bytes(params, 5, 48))
    correction, take_sqrt = struct.unpack("<4d", _arg_bytes(params, 6, 40)[:32])[:2]
    assert bx & (bx - 1) == 0 and by & (by - 1) == 0 and bx * by <= 1024
    assert (gx * (by if rows else bx)) >= n_out and gy * chunk >= R
    assert gy == 1 or (ws and sem)
    isz = K.ITEMSIZE[dtype]
    fmt = {0: "?", 1: "B", 2: "b", 3: "h", 4: "i", 5: "q", 8: "f", 9: "d"}
    red_offs = [K.indexer_offsets(red_ix, 1, r)[0] for r in range(R)]

    def load(off):
        raw = ctypes.string_at(p_in + off * isz, isz)
        if dtype == 6:
            return struct.unpack("<e", raw)[0]
        if dtype == 7:
            return struct.unpack("<f", b"\0\0" + raw)[0]
        return struct.unpack("<" + fmt[dtype], raw)[0]

    def store(ptr, off, code, value):
        if code == 7:
            raw = struct.pack("<f", value)[2:]          # truncation; the tests use exact values
        elif code == 6:
            raw = struct.pack("<e", value)
        else:
            raw = struct.pack("<" + fmt[code], value)
        ctypes.memmove(ptr + off * K.ITEMSIZE[code], raw, len(raw))

    floats = dtype in K.FLOATS
    for o in range(n_out):
        base, o0, o1 = K.indexer_offsets(out_ix, 3, o)
        xs = [load(base + r) for r in red_offs]
        if op in ("Sum", "NanSum", "Prod", "Mean"):
            if op == "NanSum":
                xs = [x for x in xs if x == x]
            acc = float(1 if op == "Prod" else 0) if floats else (1 if op == "Prod" else 0)
            for x in xs:
                acc = acc * x if op == "Prod" else acc + x
            if op == "Mean":
                store(p0, o0, dtype, acc / R)
            else:
                store(p0, o0, dtype if floats else 5, acc if floats else
                      (acc + 2**63) % 2**64 - 2**63)
        elif op in ("Max", "Min"):
            best = 0
            for r, x in enumerate(xs):
                b = xs[best]
                if b != b:
                    break
                if x != x or (x > b if op == "Max" else x < b):
                    best = r
            if p0:
                store(p0, o0, dtype, xs[best])
            if p1:
                store(p1, o1, 5, best)
        elif op in ("Any", "All"):
            v = any(x != 0 for x in xs) if op == "Any" else all(x != 0 for x in xs)
            store(p0, o0, 0, v)
        elif op == "VarStd":
            m = sum(xs) / R
            var = sum((x - m) ** 2 for x in xs) / max(0.0, R - correction) if R - correction > 0 \
                else float("inf")
            store(p0, o0, dtype, var ** 0.5 if take_sqrt else var)
            if p1:
                store(p1, o1, dtype, m)
        else:
            raise NotImplementedError(op)
    return (0,)


def _gemm(f, params, grid, threads, shared):
    """tl_gemm / tl_gemm_tc: C = alpha A @ B + beta C over the decoded strides, by the CPU's
    bmm.  For tl_gemm_tc, the preconditions of its 16-byte copies are checked too (the
    contiguous dim of each operand as the layout flags say, strides multiples of 8 elements,
    16-byte aligned addresses) and the dynamic shared memory it needs."""
    from torchlite._core import matmul as _mm
    kind, targs = re.match(r"tl_gemm(_tc)?<(.*)>$", f).groups()
    targs = [t.strip() for t in targs.split(",")]
    dtype = _CTYPE_CODE[targs[0]]
    pa, pb, pc, pd = (_arg(params, k, "Q") for k in range(4))
    g = struct.unpack("<16q2d", _arg_bytes(params, 4, 144))
    M, N, Kd, batch = g[:4]
    if kind:
        bm, bn, bk, wm, wn, stages, a_k, b_k = (int(t) for t in targs[1:])
        assert threads == wm * wn * 32
        assert shared == K.gemm_tc_shared_bytes((bm, bn, bk, wm, wn, stages), a_k, b_k)
        sa_b, sa_m, sa_k = g[4:7]
        sb_b, sb_k, sb_n = g[7:10]
        assert pa % 16 == 0 and pb % 16 == 0, "tl_gemm_tc: operands not 16-byte aligned"
        a_ok = (sa_k == 1 and Kd % 8 == 0 and sa_m % 8 == 0) if a_k else \
            (sa_m == 1 and M % 8 == 0 and sa_k % 8 == 0)
        b_ok = (sb_k == 1 and Kd % 8 == 0 and sb_n % 8 == 0) if b_k else \
            (sb_n == 1 and N % 8 == 0 and sb_k % 8 == 0)
        assert a_ok and b_ok and sa_b % 8 == 0 and sb_b % 8 == 0, \
            f"tl_gemm_tc: layout flags {a_k, b_k} do not fit strides {g[4:10]}, M, N, K = {M, N, Kd}"
    else:
        bm, bn, bk, tm, tn = (int(t) for t in targs[1:])
        assert threads == (bm // tm) * (bn // tn)
    assert grid[0] * bn >= N and grid[1] * bm >= M and 1 <= grid[2] <= batch
    a = _view(pa, dtype, [batch, M, Kd], list(g[4:7]))
    b = _view(pb, dtype, [batch, Kd, N], list(g[7:10]))
    c = _view(pc, dtype, [batch, M, N], list(g[10:13]))
    alpha, beta = g[16], g[17]
    if beta != 0 and (pd, g[13:16]) != (pc, g[10:13]):      # the addend D apart from C
        _ew.copy_(c, _view(pd, dtype, [batch, M, N], list(g[13:16])))
    _mm.bmm(a, b, out=c, alpha=alpha, beta=beta)
    return (0,)


def _gemm_splitk_sum(f, params):
    """tl_gemm_splitk_sum: C = alpha * (the sum of the pieces W[s]) + beta * D, as the CPU's
    bmm of a row of ones by each row's pieces (D copied into C first where it lies apart)."""
    from torchlite._core import matmul as _mm
    dtype = _CTYPE_CODE[re.match(r"tl_gemm_splitk_sum<(.*)>$", f).group(1).strip()]
    pw, pc, pd = (_arg(params, k, "Q") for k in range(3))
    g = struct.unpack("<16q2d", _arg_bytes(params, 3, 144))
    pieces = _arg(params, 4, "q")
    M, N = g[:2]
    w = _view(pw, dtype, [M, pieces, N], [N, M * N, 1])
    c = _view(pc, dtype, [M, 1, N], [g[11], 0, g[12]])
    if g[17] != 0 and (pd, g[14], g[15]) != (pc, g[11], g[12]):
        _ew.copy_(c, _view(pd, dtype, [M, 1, N], [g[14], 0, g[15]]))
    ones = _A.full((M, 1, pieces), 1.0, dtype)
    _mm.bmm(ones, w, out=c, alpha=g[16], beta=g[17])
    return (0,)


def _softmax(f, params, grid, block):
    """tl_softmax: the CPU's softmax over the [outer, R, inner] view of the arguments."""
    from torchlite._core import reduction as _R
    dtype = _CTYPE_CODE[re.match(r"tl_softmax<(.*)>$", f).group(1).strip()]
    px, py = (_arg(params, k, "Q") for k in range(2))
    outer, R, inner = (_arg(params, k, "q") for k in (2, 3, 4))
    rows, log = (_arg(params, k, "i") for k in (5, 6))
    bx, by = block
    assert bx * by <= 1024 and bx & (bx - 1) == 0 and by & (by - 1) == 0
    assert rows == (inner == 1) and grid * (by if rows else bx) >= outer * inner
    shape, strides = [outer, R, inner], [R * inner, inner, 1]
    _ew.copy_(_view(py, dtype, shape, strides), _R.softmax(_view(px, dtype, shape, strides), 1, log))
    return (0,)


_INDEX = re.compile(r"(tl_gather|tl_scatter_add|tl_scatter)<(.+)>$")
_PYFMT = {0: "?", 1: "B", 2: "b", 3: "h", 4: "i", 5: "q", 6: "e", 8: "f", 9: "d"}


def _index(f, params):
    """tl_gather / tl_scatter / tl_scatter_add, element by element in Python."""
    kind, ctype = _INDEX.match(f).groups()
    dtype = _CTYPE_CODE[ctype.strip()]
    isz = K.ITEMSIZE[dtype]
    p_out, p_in, p_idx = (_arg(params, k, "Q") for k in range(3))
    n = _arg(params, 3, "q")
    ix = _arg_bytes(params, 4, K.indexer_size(3))
    dim_size, dim_stride = (_arg(params, k, "q") for k in (5, 6))
    wrap = _arg(params, 7, "i")
    p_err = _arg(params, 8, "Q")
    alpha = _arg(params, 9, "d") if kind == "tl_scatter_add" else None
    for i in range(n):
        o0, o1, o2 = K.indexer_offsets(ix, 3, i)
        j = struct.unpack("<q", ctypes.string_at(p_idx + 8 * o2, 8))[0]
        if j < 0 and wrap:
            j += dim_size
        if not 0 <= j < dim_size:
            flag = ctypes.c_int32.from_address(p_err)
            flag.value |= 4                                  # tl::ERR_INDEX
            continue
        if kind == "tl_gather":
            ctypes.memmove(p_out + o0 * isz, p_in + (o1 + j * dim_stride) * isz, isz)
        elif kind == "tl_scatter":
            ctypes.memmove(p_out + (o0 + j * dim_stride) * isz, p_in + o1 * isz, isz)
        else:
            fmt = "<" + _PYFMT[dtype]
            dst = p_out + (o0 + j * dim_stride) * isz
            old = struct.unpack(fmt, ctypes.string_at(dst, isz))[0]
            add = struct.unpack(fmt, ctypes.string_at(p_in + o1 * isz, isz))[0]
            ctypes.memmove(dst, struct.pack(fmt, old + alpha * add if dtype in K.FLOATS
                                            else old + add), isz)
    return (0,)


_RANDOM = {"Uniform": "UNIFORM", "Normal": "NORMAL", "LogNormal": "LOG_NORMAL",
           "Exponential": "EXPONENTIAL", "Cauchy": "CAUCHY", "Geometric": "GEOMETRIC"}


def _random(f, params, nthreads_arg):
    """tl_random: the CPU generator's request at the same seed and first block."""
    from torchlite._core import random as _R
    functor = re.match(r"tl_random<tl::rnd::(.+?)\s*>$", f).group(1)
    (k0, k1, base, n, a, b, bits, scale, low, range_, reject, thresh, p_ptr, out_ptr) = \
        struct.unpack("<IIQqddifqQQQQQ", _arg_bytes(params, 0, 96))
    nthreads = _arg(params, 1, "Q")
    gen = _R.Philox()
    gen.set_state_bytes(((k1 << 32) | k0).to_bytes(8, "little") + base.to_bytes(8, "little"))
    m = re.match(r"(\w+?)(F32|F64)$", functor)
    if m and m.group(1) in _RANDOM:
        out = _view(out_ptr, 8 if m.group(2) == "F32" else 9, [n], [1])
        assert m.group(2) == "F64" or bits == 24, "fake kernels: float16/bfloat16 bits not emulated"
        _R.fill(out, gen, getattr(_R, _RANDOM[m.group(1)]), a, 1.0 if m.group(1) == "Geometric" else b)
    else:
        kind, ctype = re.match(r"(\w+?)(?:<(.+)>)?$", functor).groups()
        code = {"float": 8, "double": 9, "tl::i64": 5, None: 5}[ctype.strip() if ctype else None]
        out = _view(out_ptr, code, [n], [1])
        if kind == "Randint" or kind == "RandintWide":
            _R.fill_int(out, gen, low, range_ or (1 << 64))
        elif kind == "Bernoulli":
            _R.fill_bernoulli(out, gen, thresh / 4294967296.0)
        elif kind == "BernoulliP":
            _R.fill_bernoulli_tensor(out, gen, _view(p_ptr, 9, [n], [1]))
        else:
            raise NotImplementedError(functor)
    state = gen.state_bytes()
    assert int.from_bytes(state[8:], "little") - base == nthreads, "blocks reserved differ"
    return (0,)


def _np(ptr, dtype, n):
    import numpy as np
    np_dtype = {8: np.float32, 9: np.float64, 6: np.float16}[dtype]
    return np.frombuffer((ctypes.c_char * (n * K.ITEMSIZE[dtype])).from_address(ptr), np_dtype)


def _lstm(f, params):
    """tl_lstm_fwd / tl_lstm_bwd: the step's formulas (rnn.cu, rnn.pyx) in NumPy, in the
    arrays' own type."""
    import numpy as np
    kind, ctype = re.match(r"tl_lstm_(fwd|bwd)<(.+)>$", f).groups()
    dtype = _CTYPE_CODE[ctype.strip()]
    nptr = 4 if kind == "fwd" else 6
    ptrs = [_arg(params, k, "Q") for k in range(nptr)]
    nb, nh = _arg(params, nptr, "q"), _arg(params, nptr + 1, "q")
    gates = _np(ptrs[0], dtype, nb * 4 * nh).reshape(nb, 4, nh)
    state = [_np(p, dtype, nb * nh).reshape(nb, nh) for p in ptrs[1:5 if kind == "bwd" else 4]]
    one = gates.dtype.type(1)
    sig = lambda x: one / (one + np.exp(-x))           # noqa: E731
    if kind == "fwd":
        c_prev, c, h = state
        gates[:, 0], gates[:, 1], gates[:, 3] = sig(gates[:, 0]), sig(gates[:, 1]), sig(gates[:, 3])
        gates[:, 2] = np.tanh(gates[:, 2])
        i, fg, g, o = gates[:, 0], gates[:, 1], gates[:, 2], gates[:, 3]
        c[:] = fg * c_prev + i * g
        h[:] = o * np.tanh(c)
        return (0,)
    c_prev, c, dh, dc = state
    dg = _np(ptrs[5], dtype, nb * 4 * nh).reshape(nb, 4, nh)
    i, fg, g, o = gates[:, 0], gates[:, 1], gates[:, 2], gates[:, 3]
    tc = np.tanh(c)
    d = dc + dh * o * (one - tc * tc)
    dg[:, 0] = d * g * (i * (one - i))
    dg[:, 1] = d * c_prev * (fg * (one - fg))
    dg[:, 2] = d * i * (one - g * g)
    dg[:, 3] = dh * tc * (o * (one - o))
    dc[:] = d * fg
    return (0,)


def _sgd_multi(f, params, gx, gy):
    """tl_sgd_multi: each of the gy parameters of the packed list stepped as tl_sgd would (the
    per-parameter emulation below, on an argument array rebuilt for it)."""
    from torchlite.cuda import _kernels as KK
    ctype = re.match(r"tl_sgd_multi<(.+)>$", f).group(1).strip()
    mx = KK.MULTI_MAX
    t = struct.unpack(f"<{mx}Q{mx}Q{mx}Q{mx}q{mx}i", _arg_bytes(params, 0, 36 * mx))
    head = _arg_bytes(params, 1, 48)
    lr, wd, mom, damp, nesterov, maximize, _, pad = struct.unpack("<4d4i", head)
    assert gy <= mx and gx >= 1
    for j in range(gy):
        n = t[3 * mx + j]
        assert n > 0 and gx * 256 * 4 >= n or gx >= 32 * 132, "grid too small for parameter j"
        one = [ctypes.c_uint64(t[j]), ctypes.c_uint64(t[mx + j]), ctypes.c_uint64(t[2 * mx + j]),
               ctypes.c_int64(n), ctypes.create_string_buffer(
                   struct.pack("<4d4i", lr, wd, mom, damp, nesterov, maximize, t[4 * mx + j], pad), 48)]
        ptrs = (ctypes.c_void_p * len(one))(*[ctypes.addressof(x) for x in one])
        _optim(f"tl_sgd<{ctype}>", ctypes.addressof(ptrs))
    return (0,)


def _optim(f, params):
    """tl_sgd / tl_adam: the per-element formulas of optim.cu in NumPy, in the kernel's
    compute type (float32 for float32 parameters)."""
    import numpy as np
    name, ctype = re.match(r"tl_(sgd|adam)<(.+)>$", f).groups()
    dtype = _CTYPE_CODE[ctype.strip()]
    C = np.float64 if dtype == 9 else np.float32
    if name == "sgd":
        pp, pg, pb = (_arg(params, k, "Q") for k in range(3))
        n = _arg(params, 3, "q")
        lr, wd, mom, damp, nesterov, maximize, first, _ = struct.unpack("<4d4i", _arg_bytes(params, 4, 48))
        p, g = _np(pp, dtype, n), _np(pg, dtype, n).astype(C)
        if maximize:
            g = -g
        if wd != 0:
            g = g + C(wd) * p.astype(C)
        if mom != 0:
            b = _np(pb, dtype, n)
            nb = g if first else C(mom) * b.astype(C) + C(1.0 - damp) * g
            b[:] = nb
            g = g + C(mom) * nb if nesterov else nb
        p[:] = p.astype(C) - C(lr) * g
        return (0,)
    pp, pg, pm, pv, pvm = (_arg(params, k, "Q") for k in range(5))
    n = _arg(params, 5, "q")
    b1, b2, lr, wd, eps, step_size, bc2, ams, maximize, decoupled, _ = \
        struct.unpack("<7d4i", _arg_bytes(params, 6, 72))
    p, g = _np(pp, dtype, n), _np(pg, dtype, n).astype(C)
    m_, v_ = _np(pm, dtype, n), _np(pv, dtype, n)
    pc = p.astype(C)
    if maximize:
        g = -g
    if wd != 0:
        if decoupled:
            pc = pc * C(1.0 - lr * wd)
        else:
            g = g + C(wd) * pc
    m = m_.astype(C) + C(1.0 - b1) * (g - m_.astype(C))
    v = v_.astype(C) * C(b2) + C(1.0 - b2) * g * g
    m_[:] = m
    v_[:] = v
    if ams:
        vm = _np(pvm, dtype, n)
        v = np.maximum(vm.astype(C), v)
        vm[:] = v
    p[:] = pc + (-C(step_size)) * m / (np.sqrt(v) / C(bc2) + C(eps))
    return (0,)


def _affine(f, params):
    """tl_arange / tl_arange_int / tl_linspace: the kernels' formulas in Python (float64 mul
    and add, each rounded; int64 wrapping), stored in the output's type."""
    kind, ctype = re.match(r"(tl_arange_int|tl_arange|tl_linspace)<(.+)>$", f).groups()
    dtype = _CTYPE_CODE[ctype.strip()]
    out = _arg(params, 0, "Q")
    n = _arg(params, 1, "q")
    if kind == "tl_arange_int":
        start, step = (_arg(params, k, "q") for k in (2, 3))
        values = [((start + i * step + 2**63) % 2**64) - 2**63 for i in range(n)]
    elif kind == "tl_arange":
        start, step = (_arg(params, k, "d") for k in (2, 3))
        values = [start + float(i) * step for i in range(n)]
    else:
        start, end, step = (_arg(params, k, "d") for k in (2, 3, 4))
        half = n // 2
        values = [start + float(i) * step if i < half else end - float(n - 1 - i) * step
                  for i in range(n)]
    fmt = "<" + _PYFMT[dtype]
    for i, v in enumerate(values):
        ctypes.memmove(out + i * K.ITEMSIZE[dtype], struct.pack(fmt, v), K.ITEMSIZE[dtype])
    return (0,)


def _nll(f, params):
    """tl_nll_forward / tl_nll_backward, element by element in Python (float64, the CPU's
    roundings)."""
    import math
    kind, ctype, ttype = re.match(r"tl_nll_(forward|backward|reduce)<(.+), (.+)>$", f).groups()
    dtype, tdtype = _CTYPE_CODE[ctype.strip()], _CTYPE_CODE[ttype.strip()]
    fmt, tfmt = "<" + _PYFMT[dtype], "<" + _PYFMT[tdtype]
    isz, tsz = K.ITEMSIZE[dtype], K.ITEMSIZE[tdtype]

    def read(ptr, off, f=fmt, size=isz):
        return struct.unpack(f, ctypes.string_at(ptr + off * size, size))[0]

    def rnd(v):                            # rounding to the element type
        return struct.unpack(fmt, struct.pack(fmt, v))[0]
    ptr = [_arg(params, k, "Q") for k in range(4 if kind == "backward" else 5)]
    if kind == "reduce":                       # the error flag goes to the result record
        p_lp, p_t, p_w, p_out, p_res = ptr
        geo_at, mean = 5, _arg(params, 6, "i")
    elif kind == "forward":
        p_lp, p_t, p_w, p_loss, p_wsum = ptr
        geo_at, err_at = 5, 6
    else:
        p_lp, p_t, p_w, p_g = ptr
        g_step = _arg(params, 4, "q")
        p_dx = _arg(params, 5, "Q")
        geo_at, err_at = 6, 9
        scale = _arg(params, 7, "d")
        softmax = _arg(params, 8, "i")
    N, C, S, lpn, lpc, lps, tn, ts, ws, ignore = struct.unpack("<10q", _arg_bytes(params, geo_at, 80))
    if kind == "reduce":
        ctypes.memmove(p_res, bytes(16), 16)
        p_err = p_res + 8
    else:
        p_err = _arg(params, err_at, "Q")
    total_loss = total_w = 0.0

    def target(n, s):
        t = read(p_t, n * tn + s * ts, tfmt, tsz)
        if t == ignore:
            return -1
        if not 0 <= t < C:
            ctypes.c_int32.from_address(p_err).value |= 4
            return -2
        return t
    for n in range(N):
        for s in range(S):
            t = target(n, s)
            w = (read(p_w, t * ws) if p_w else 1.0) if t >= 0 else 0.0
            if kind != "backward":
                loss = -w * read(p_lp, n * lpn + t * lpc + s * lps) if t >= 0 else 0.0
                if kind == "reduce":
                    total_loss, total_w = total_loss + loss, total_w + w
                    continue
                ctypes.memmove(p_loss + 8 * (n * S + s), struct.pack("<d", loss), 8)
                ctypes.memmove(p_wsum + 8 * (n * S + s), struct.pack("<d", w), 8)
                continue
            f_ = w * scale * read(p_g, (n * S + s) * g_step) if t >= 0 else 0.0
            for c in range(C):
                d = 0.0
                if t >= 0:
                    x = read(p_lp, n * lpn + c * lpc + s * lps)
                    e = rnd(math.exp(x)) if dtype == 8 else math.exp(x)     # expf / exp
                    d = rnd(f_ * e) if softmax else 0.0
                    if c == t:
                        d = rnd(d - f_)
                ctypes.memmove(p_dx + ((n * C + c) * S + s) * isz, struct.pack(fmt, d), isz)
    if kind == "reduce":
        v = total_loss / total_w if mean and total_w else (math.nan if mean else total_loss)
        ctypes.memmove(p_out, struct.pack(fmt, v), isz)
        ctypes.memmove(p_res, struct.pack("<d", total_w), 8)
    return (0,)


def _bn_coefs(f, params):
    """tl_bn_forward_coefs / tl_bn_backward_coefs: the formulas of norm.cu in Python floats."""
    import math
    kind, ctype = re.match(r"tl_bn_(forward|backward)_coefs<(.+)>$", f).groups()
    dtype = _CTYPE_CODE[ctype.strip()]
    fmt, isz = "<" + _PYFMT[dtype], K.ITEMSIZE[dtype]

    def ptr(k):
        return _arg(params, k, "Q")

    def rd(p, c, f="<d", size=8):
        return struct.unpack(f, ctypes.string_at(p + c * size, size))[0]

    def wr(p, c, v):
        if p:
            ctypes.memmove(p + c * isz, struct.pack(fmt, v), isz)
    if kind == "forward":
        p_mean, p_var, p_w, p_b = (ptr(k) for k in range(4))
        eps = _arg(params, 4, "d")
        C = _arg(params, 5, "q")
        p_inv, p_scale, p_shift = (ptr(k) for k in (6, 7, 8))
        for c in range(C):
            r = 1.0 / math.sqrt(rd(p_var, c) + eps)
            s_ = r * rd(p_w, c, fmt, isz) if p_w else r
            ctypes.memmove(p_inv + 8 * c, struct.pack("<d", r), 8)
            wr(p_scale, c, s_)
            wr(p_shift, c, (rd(p_b, c, fmt, isz) if p_b else 0.0) - rd(p_mean, c) * s_)
        return (0,)
    p_sg, p_sx, p_mean, p_inv, p_w = (ptr(k) for k in range(5))
    n = _arg(params, 5, "d")
    batch_stats = _arg(params, 6, "i")
    C = _arg(params, 7, "q")
    p_ka, p_km, p_kb, p_kc, p_dw, p_db = (ptr(k) for k in range(8, 14))
    for c in range(C):
        inv = rd(p_inv, c)
        if p_dw:
            wr(p_dw, c, rd(p_sx, c) * inv)
        if p_db:
            wr(p_db, c, rd(p_sg, c))
        a = inv * rd(p_w, c, fmt, isz) if p_w else inv
        stats = batch_stats and n > 0
        wr(p_ka, c, a)
        wr(p_km, c, rd(p_mean, c))
        wr(p_kb, c, -a * inv * inv * rd(p_sx, c) / n if stats else 0.0)
        wr(p_kc, c, -a * rd(p_sg, c) / n if stats else 0.0)
    return (0,)


def _im2col(f, params):
    """tl_im2col: the input's zero-padded windows, in NumPy."""
    import numpy as np
    dtype = _CTYPE_CODE[re.match(r"tl_im2col<(.+)>$", f).group(1).strip()]
    p_x, p_cols = (_arg(params, k, "Q") for k in range(2))
    N, C, H, W, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, xn, xc, xh, xw = \
        struct.unpack("<18q", _arg_bytes(params, 2, 144))
    assert min(xn, xc, xh, xw) >= 0
    span = (N - 1) * xn + (C - 1) * xc + (H - 1) * xh + (W - 1) * xw + 1
    isz = K.ITEMSIZE[dtype]
    x = np.lib.stride_tricks.as_strided(_np(p_x, dtype, span), (N, C, H, W),
                                        tuple(st * isz for st in (xn, xc, xh, xw)))
    xp = np.zeros((N, C, H + 2 * ph + sh * OH + dh * KH, W + 2 * pw + sw * OW + dw * KW), x.dtype)
    xp[:, :, ph:ph + H, pw:pw + W] = x
    cols = _np(p_cols, dtype, N * C * KH * KW * OH * OW).reshape(N, C, KH, KW, OH, OW)
    for kh in range(KH):
        for kw in range(KW):
            cols[:, :, kh, kw] = xp[:, :, kh * dh:kh * dh + sh * OH:sh, kw * dw:kw * dw + sw * OW:sw]
    return (0,)


def _col2im(f, params):
    """tl_col2im: each output element the sum of its window entries, in Python."""
    dtype = _CTYPE_CODE[re.match(r"tl_col2im<(.+)>$", f).group(1).strip()]
    fmt, isz = "<" + _PYFMT[dtype], K.ITEMSIZE[dtype]
    p_cols, p_out = (_arg(params, k, "Q") for k in range(2))
    NC, H, W, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw = struct.unpack("<13q", _arg_bytes(params, 2, 104))
    for nc in range(NC):
        for h in range(H):
            for w in range(W):
                acc = 0.0
                for kh in range(KH):
                    hp = h + ph - kh * dh
                    if hp < 0 or hp % sh or hp // sh >= OH:
                        continue
                    for kw in range(KW):
                        wp = w + pw - kw * dw
                        if wp < 0 or wp % sw or wp // sw >= OW:
                            continue
                        k = (((nc * KH + kh) * KW + kw) * OH + hp // sh) * OW + wp // sw
                        v = struct.unpack(fmt, ctypes.string_at(p_cols + k * isz, isz))[0]
                        acc = struct.unpack(fmt, struct.pack(fmt, acc + v))[0]   # T arithmetic
                ctypes.memmove(p_out + ((nc * H + h) * W + w) * isz, struct.pack(fmt, acc), isz)
    return (0,)


def _max_pool(f, params):
    """tl_max_pool2d: each window scanned in Python (first maximum, NaN wins)."""
    import math
    dtype = _CTYPE_CODE[re.match(r"tl_max_pool2d<(.+)>$", f).group(1).strip()]
    fmt, isz = "<" + _PYFMT[dtype], K.ITEMSIZE[dtype]
    p_x, p_y, p_idx = (_arg(params, k, "Q") for k in range(3))
    B, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw = struct.unpack("<13q", _arg_bytes(params, 3, 104))
    lowest = {8: -math.inf, 9: -math.inf, 6: -math.inf, 5: -2 ** 63, 4: -2 ** 31, 3: -2 ** 15,
              2: -2 ** 7, 1: 0}[dtype]
    for b in range(B):
        for oh in range(OH):
            for ow in range(OW):
                ih0, iw0 = oh * sh - ph, ow * sw - pw
                ihf, iwf = ih0, iw0
                while ihf < 0:
                    ihf += dh
                while iwf < 0:
                    iwf += dw
                m, best = lowest, ihf * W + iwf
                for ki in range(kh):
                    ih = ih0 + ki * dh
                    if not 0 <= ih < H:
                        continue
                    for kj in range(kw):
                        iw = iw0 + kj * dw
                        if not 0 <= iw < W:
                            continue
                        v = struct.unpack(fmt, ctypes.string_at(p_x + ((b * H + ih) * W + iw) * isz, isz))[0]
                        if v > m or v != v:
                            m, best = v, ih * W + iw
                o = (b * OH + oh) * OW + ow
                ctypes.memmove(p_y + o * isz, struct.pack(fmt, m), isz)
                ctypes.memmove(p_idx + 8 * o, struct.pack("<q", best), 8)
    return (0,)


def launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
    if f.startswith("tl_max_pool2d<"):
        return _max_pool(f, params)
    if f.startswith("tl_col2im<"):
        return _col2im(f, params)
    if f.startswith("tl_im2col<"):
        return _im2col(f, params)
    if f.startswith("tl_bn_"):
        return _bn_coefs(f, params)
    if f.startswith("tl_nll_"):
        return _nll(f, params)
    if f.startswith(("tl_arange", "tl_linspace")):
        return _affine(f, params)
    if f.startswith("tl_sgd_multi<"):
        return _sgd_multi(f, params, gx, gy)
    if f.startswith(("tl_sgd<", "tl_adam<")):
        return _optim(f, params)
    if f.startswith("tl_lstm_"):
        return _lstm(f, params)
    if f.startswith("tl_random<"):
        return _random(f, params, gx * bx)
    if _INDEX.match(f):
        return _index(f, params)
    if f.startswith("tl_softmax<"):
        return _softmax(f, params, gx, (bx, by))
    if f.startswith("tl_reduce<"):
        return _reduce(f, params, gx, gy, bx, by)
    if f.startswith("tl_gemm_splitk_sum<"):
        return _gemm_splitk_sum(f, params)
    if f.startswith(("tl_gemm<", "tl_gemm_tc<")):
        return _gemm(f, params, (gx, gy, gz), bx * by * bz, shared)
    family, targs = _parse(f)
    nops = _NOPS[family]
    ptrs = [_arg(params, k, "Q") for k in range(nops)]
    n = _arg(params, nops, "q")
    packed = _arg_bytes(params, nops + 1, K.indexer_size(nops))
    scalars = struct.unpack("<4d", _arg_bytes(params, nops + 2, 40)[:32])
    shape, strides = _decode_indexer(packed, nops, n)
    # the kernels' own offset arithmetic must agree with the decoded strides
    for i in {0, n // 2, n - 1}:
        expect, rem = [0] * nops, i
        for d in range(len(shape) - 1, -1, -1):
            rem, c = divmod(rem, shape[d])
            for k in range(nops):
                expect[k] += c * strides[k][d]
        assert K.indexer_offsets(packed, nops, i) == expect, (f, i)
    op, types = targs[0], targs[1:]
    if family == "tl_unary":
        ti, to = _CTYPE_CODE[types[0]], _CTYPE_CODE[types[1]]
        out, a = _view(ptrs[0], to, shape, strides[0]), _view(ptrs[1], ti, shape, strides[1])
        if op == "tl::op::Identity":
            _ew.copy_(out, a)
        else:
            _ew.unary(_ew.UNARY[_functor_op(op)], a, out=out, p0=scalars[0], p1=scalars[1],
                      p2=scalars[2])
    elif family == "tl_binary":
        ti, to = _CTYPE_CODE[types[0]], _CTYPE_CODE[types[1]]
        out = _view(ptrs[0], to, shape, strides[0])
        a, b = (_view(ptrs[k], ti, shape, strides[k]) for k in (1, 2))
        alpha = complex(scalars[0], scalars[1]) if ti in K.COMPLEX and scalars[1] else scalars[0]
        _ew.binary(_ew.BINARY[_functor_op(op)], a, b, out=out, alpha=alpha)
    else:
        tc, t = _CTYPE_CODE[types[0]], _CTYPE_CODE[types[1]]
        out = _view(ptrs[0], t, shape, strides[0])
        c = _view(ptrs[1], tc, shape, strides[1])
        x, y = (_view(ptrs[k], t, shape, strides[k]) for k in (2, 3))
        _ew.ternary(_ew.TERNARY[_functor_op(op)], c, x, y, out=out, p0=scalars[0])
    return (0,)


# ---- the kernels themselves, compiled for the CPU (tests/cuda_host/tl_emulation.h) -------------
# One library holds a slice of one source's variants (compiling them together costs a little
# more than compiling one: the headers are parsed once), and the first kernel asked for starts
# the build of every library on all cores, so a cold run waits for the slowest slice, not for
# a hundred compilers in a row.  Libraries are kept by the hash of what goes into them.
_HERE = os.path.dirname(os.path.abspath(__file__))
_HEADER = os.path.join(_HERE, "cuda_host", "tl_emulation.h")
# variants the host build has no types or functions for: they run on the Python emulation
_NOT_ON_HOST = ("__half", "__nv_bfloat16", "tl::op::Erfinv")
_SLICE = 120                  # variants per library: elementwise.cu's 650 build in parallel
_build_lock = threading.Lock()
_builds = None                # {(source, slice index): Future of the library's path}
_where = {}                   # kernel name -> (source, slice index, symbol)
_libraries = {}               # kernel name -> tl_emu_run of that kernel


def compiler():
    return shutil.which("g++")


def build_dir():
    """Where the libraries are kept between runs ($TORCHLITE_TEST_CACHE/emulation)."""
    root = os.environ.get("TORCHLITE_TEST_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "torchlite", "tests")
    return os.path.join(root, "emulation")


def on_host(name):
    """Whether kernel `name` is compiled for the CPU (else the Python emulation runs it)."""
    return not any(mark in name for mark in _NOT_ON_HOST)


def _build_library(source, names):
    """Path of the library of `names` (variants of `source`), compiled unless kept."""
    src = K.load_source(source)
    with open(_HEADER) as f:
        header = f.read()
    key = hashlib.sha256("\n".join((src.digest(), header) + names).encode()).hexdigest()[:24]
    folder = build_dir()
    lib = os.path.join(folder, f"{key}.so")
    if os.path.exists(lib):
        return lib
    os.makedirs(folder, exist_ok=True)
    tmp = f"{lib}.{os.getpid()}.{threading.get_ident()}.tmp"
    cpp = tmp + ".cpp"
    with open(cpp, "w") as f:
        f.write(f'#include "{src.name}"\n')
        for i, name in enumerate(names):
            f.write(f'extern "C" void tl_emu_run_{i}(unsigned gx, unsigned gy, unsigned gz, '
                    f'unsigned bx, unsigned by, unsigned bz, void** params) {{\n'
                    f'    tl_emu::launch(&{name}, dim3{{gx, gy, gz}}, dim3{{bx, by, bz}}, '
                    f'params);\n}}\n')
    try:
        r = subprocess.run([compiler(), "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread",
                            "-DTL_HOST_EMULATION", "-include", _HEADER, "-I", K.kernel_dir(),
                            "-o", tmp, cpp], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"host build of {source} ({len(names)} kernels) failed:\n"
                               f"{r.stderr[-4000:]}")
        os.replace(tmp, lib)
    finally:
        for leftover in (cpp, tmp):
            if os.path.exists(leftover):
                os.remove(leftover)
    return lib


def _start_builds():
    """Start building every library, on as many compilers as there are cores."""
    from concurrent.futures import ThreadPoolExecutor
    global _builds
    jobs = []
    for source, names in K.variants().items():
        names = [n for n in names if on_host(n)]
        for j in range(0, len(names), _SLICE):
            part = tuple(names[j:j + _SLICE])
            jobs.append((source, j // _SLICE, part))
            for i, name in enumerate(part):
                _where[name] = (source, j // _SLICE, f"tl_emu_run_{i}")
    jobs.sort(key=lambda job: -len(job[2]))          # the big ones first
    pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2)
    _builds = {(s, j): pool.submit(_build_library, s, part) for s, j, part in jobs}
    pool.shutdown(wait=False)


def compiled_kernel(name):
    """tl_emu_run(grid, block, params) of kernel `name` compiled for the CPU."""
    fn = _libraries.get(name)
    if fn is not None:
        return fn
    with _build_lock:
        if _builds is None:
            _start_builds()
    if name not in _where:
        raise KeyError(f"{name} is not in the kernel catalogue (or has no host build)")
    source, part, symbol = _where[name]
    fn = getattr(ctypes.CDLL(_builds[(source, part)].result()), symbol)
    fn.argtypes = [ctypes.c_uint] * 6 + [ctypes.c_void_p]
    fn.restype = None
    _libraries[name] = fn
    return fn


def launch_compiled(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
    """cuLaunchKernel running the kernel's own code on the CPU (the Python emulation above
    for the kernels the host build cannot compile: float16/bfloat16, CUDA's erfinv)."""
    if not on_host(f):
        return launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
    compiled_kernel(f)(gx, gy, gz, bx, by, bz, params)
    return (0,)


def install(fake, monkeypatch, compiled=False):
    """Make `fake` run kernel launches on the host, and the backend's kernels enabled: by the
    Python emulation above, or (compiled) by the kernels' own code built for the CPU.  Call it
    inside fake_cuda_driver.installed(fake), which restores the kernels switch on leaving.
    Kernels are not compiled with NVRTC: _launch.kernel hands out the name expression."""
    from torchlite.cuda import _state
    fake.cuLaunchKernel = launch_compiled if compiled else launch
    monkeypatch.setattr(_launch, "kernel", lambda source, name, device:
                        _launch.Kernel(name, name, device, 1024))
    _state.kernels_enabled = True
