# The fused elementwise program interpreter behind torchlite.compile on the CPU.
#
# A program is a straight line of elementwise instructions over "slots": the kernel inputs
# (any strides, broadcast to the output shape), constants, scratch registers and the outputs.
# The output's elements are cut into tiles of TILE elements; each tile runs every instruction
# in turn, so intermediates live in a few KB of per-thread scratch (L1/L2) and never reach
# memory, and OpenMP spreads the tiles over the threads.  Each instruction calls the very
# loop the eager op runs (elementwise.loop_of: SIMD at the CPU's ISA level), so a fused op
# computes exactly what the eager op computes, from one copy of its math.
#
# Row instructions (kinds ROW, SOFTMAX and SOFTMAX_BWD) work on whole rows of the output's
# last dimension: a row sum or mean (a compact value: one element per row of the tile, at the
# start of its register), the spread of a compact value along its rows, a softmax/log_softmax
# of each row, or its gradient from the result and the result's gradient; they call the eager
# reduction's row kernels (reduction.pxd).  Elementwise
# instructions marked compact run over the compact values, one element per row.  A program
# with row instructions runs on whole-row tiles (below).
#
# Three tilings:
# - whole-row tiles: for programs with row instructions, a tile is as many whole rows of the
#   flat output as fit in TILE elements (at least one, at most MAX_ROW elements long); inputs
#   as for flat tiles;
# - row tiles: when the innermost (coalesced) dimension is long, a tile is a piece of one
#   row; every input is then a pointer and a stride (0 for a broadcast operand), no copies;
# - flat tiles: when rows are short (a bias over a narrow last dim), a tile is a run of the
#   flat output; inputs laid out as the output are read in place, the others are gathered
#   into scratch first.
#
# Streaming.  Each instruction is one loop over the tile, so an instruction reading an input
# from memory or writing the output is a burst of misses while the cheap arithmetic around it
# waits, and the costly instructions (an erf, an exp) run with memory idle: unlike one
# generated loop, the interpreter does not overlap the two by itself.  When the operands are
# larger than the last level cache, the tiles are 1024 elements (bursts small enough for the
# core's outstanding misses) and before each instruction the matching share of the next
# tile's operands is prefetched (inputs into L2, outputs owned): the chain of issue 12's
# benchmark, 16M float32, 19 -> 16 ms on two cores, 37 -> 31 ms on one.  On operands that stay
# in cache the prefetches would cost 10% for nothing, so only streaming programs make them.
from cython.parallel cimport prange, threadid
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

cdef extern from "kernels/omp_shim.h" nogil:
    int omp_get_thread_num()
cdef extern from "kernels/prefetch.h" nogil:
    void tl_prefetch_read(const char* p, int64_t nbytes)
    void tl_prefetch_write(const char* p, int64_t nbytes)
from torchlite._core.array cimport (Array, MAX_DIMS, new_array, new_array_strided, tl_itemsize,
                                    TL_ERR_ZERODIV)
from torchlite._core.elementwise cimport tl_loop, loop_of, memory_order
from torchlite._core.reduction cimport (row_reduce_fn, row_softmax_fn, row_softmax_back_fn,
                                        row_sum, row_softmax, row_softmax_back)
from torchlite._core.random cimport bernoulli_range
from torchlite._core.parallel cimport num_chunks, max_threads
from torchlite._core.elementwise import copy_ as _copy

cdef enum:
    TILE = 4096              # elements per tile (32 KB per float64 scratch register: L1/L2)
    STREAM_TILE = 1024       # ... for a program whose operands stream from memory (below)
    ROW_MIN = 256            # rows at least this long are cut into row tiles
    MAX_IN = 64
    GRAIN = 32768            # elements per thread below which a program runs serially
    MAX_ROW = 65536          # the longest row a program with row instructions takes

# instruction kinds beyond elementwise.loop_of's (0 unary, 1 binary, 2 ternary, 3 cast)
cdef enum:
    K_ROW = 4                # op: ROW_SUM, ROW_MEAN or ROW_SPREAD
    K_SOFTMAX = 5            # op: 0 softmax, 1 log_softmax of the source's rows
    K_RANDOM = 6             # op 0: Bernoulli(p[0]) at each element's flat index of the
                             # request whose seed and first block are the two int64 sources
    K_SOFTMAX_BWD = 7        # op: 0 softmax, 1 log_softmax: the gradient of each row from the
                             # sources y (the result) and g (its gradient): y (g - sum(g y)),
                             # or g - exp(y) sum(g)
    ROW_SUM = 0              # the sum of each row of the source -> a compact value
    ROW_MEAN = 1
    ROW_SPREAD = 2           # a compact source -> its value on every element of its row

# slot kinds, as Program.slots gives them
cdef enum:
    S_INPUT = 0
    S_CONST = 1
    S_SCRATCH = 2
    S_OUTPUT = 3


cdef class Program:
    """A compiled fused program: instructions (kind, op, dtype, dst, srcs, params) over slots.
    Built once per fused kernel by torchlite.compiler; run() executes it on arrays (and
    Epilogue on the tiles of a matrix product).  Its fields are declared in fused.pxd."""

    def __cinit__(self):
        self.ins = NULL
        self.in_dtype = self.out_dtype = self.slot_kind = self.slot_index = NULL
        self.const_bits = NULL
        self.native = NULL

    def __dealloc__(self):
        free(self.ins); free(self.in_dtype); free(self.out_dtype)
        free(self.slot_kind); free(self.slot_index); free(self.const_bits)

    def __init__(self, str name, list in_dtypes, list consts, int n_scratch, list out_dtypes,
                 list instrs, list compact=None):
        """in_dtypes: the inputs' dtype codes; consts: (dtype, value) pairs; n_scratch: scratch
        registers; out_dtypes: the outputs' dtype codes; instrs: (kind, op, dtype, operands,
        params) where operands is a tuple of (slot kind, index, dtype) with the destination
        first, kind/op/dtype as elementwise.loop_of takes them (or a row instruction's);
        compact: the indices of the elementwise instructions over compact values."""
        cdef int i, k, n_slots
        cdef Instr* I
        self.name = name
        self.n_in, self.n_const, self.n_scratch = len(in_dtypes), len(consts), n_scratch
        self.n_out, self.n_ins = len(out_dtypes), len(instrs)
        if self.n_in > MAX_IN:
            raise ValueError(f"fused program {name}: {self.n_in} inputs (at most {MAX_IN})")
        if self.n_out > 16 or self.n_in + self.n_out + self.n_const + n_scratch > MAX_IN + 16 + 64:
            raise ValueError(f"fused program {name}: too many slots")
        if self.n_out < 1 or self.n_ins < 1:
            raise ValueError(f"fused program {name}: needs an output and an instruction")
        self.in_dtype = <int*>malloc(sizeof(int) * (self.n_in + 1))
        self.out_dtype = <int*>malloc(sizeof(int) * self.n_out)
        self.const_bits = <double*>malloc(sizeof(double) * (self.n_const + 1))
        self.ins = <Instr*>malloc(sizeof(Instr) * self.n_ins)
        if not self.in_dtype or not self.out_dtype or not self.const_bits or not self.ins:
            raise MemoryError()
        for i in range(self.n_in):
            self.in_dtype[i] = _check_dtype(in_dtypes[i])
        for i in range(self.n_out):
            self.out_dtype[i] = _check_dtype(out_dtypes[i])
        for i, (dt, v) in enumerate(consts):
            _store_const(&self.const_bits[i], _check_dtype(dt), v)
        self.has_rows = self.has_random = False
        for i, (kind, op, dtype, operands, params) in enumerate(instrs):
            I = &self.ins[i]
            I.nops = len(operands)
            I.row_kind = 0
            I.compact = compact is not None and i in compact
            I.fn = NULL
            I.rfn = NULL
            I.sfn = NULL
            I.bfn = NULL
            if kind == K_SOFTMAX_BWD:
                if I.nops != 3 or not 0 <= op <= 1 or I.compact or dtype not in (8, 9) \
                        or any(o[2] != dtype for o in operands):
                    raise ValueError(f"fused program {name}: softmax gradient instruction {i} "
                                     f"needs a destination and sources y, g of one float "
                                     f"dtype, and op 0 or 1")
                I.row_kind, I.row_op = kind, op
                I.bfn = row_softmax_back(_check_dtype(dtype))
                self.has_rows = True
            elif kind == K_ROW or kind == K_SOFTMAX:
                if I.nops != 2 or not (0 <= op <= (2 if kind == K_ROW else 1)) or I.compact \
                        or any(o[2] != dtype for o in operands):
                    raise ValueError(f"fused program {name}: row instruction {i} needs one "
                                     f"source and a destination of its dtype, and a known op")
                I.row_kind, I.row_op = kind, op
                if kind == K_ROW:
                    I.rfn = row_sum(_check_dtype(dtype))
                else:
                    I.sfn = row_softmax(_check_dtype(dtype))
                if I.rfn == NULL and I.sfn == NULL:
                    raise ValueError(f"fused program {name}: no row kernel for dtype {dtype}")
                self.has_rows = True
            elif kind == K_RANDOM:
                if I.nops != 3 or op != 0 or dtype not in (8, 9) or operands[0][2] != dtype \
                        or operands[1][2] != 5 or operands[2][2] != 5 or I.compact \
                        or not params or not 0.0 <= params[0] <= 1.0:
                    raise ValueError(f"fused program {name}: random instruction {i} needs a "
                                     f"float destination, int64 seed and block sources and a "
                                     f"probability")
                I.row_kind, I.row_op = kind, op
                self.has_random = True
            else:
                I.fn = loop_of(kind, op, dtype)
                if I.fn == NULL:
                    raise ValueError(f"fused program {name}: no loop for kind {kind} op {op} "
                                     f"dtype {dtype}")
            if I.nops < 2 or I.nops > 4:
                raise ValueError(f"fused program {name}: instruction {i} has {I.nops} operands")
            for k, (skind, sidx, sdt) in enumerate(operands):
                limit = (self.n_in, self.n_const, self.n_scratch, self.n_out)[skind]
                if not 0 <= sidx < limit:
                    raise ValueError(f"fused program {name}: instruction {i} names slot "
                                     f"{sidx} of kind {skind}, which has {limit}")
                if k == 0 and skind in (S_INPUT, S_CONST):
                    raise ValueError(f"fused program {name}: instruction {i} writes an input")
                I.slot[k] = _slot(self, skind, sidx)
                I.isz[k] = tl_itemsize[_check_dtype(sdt)]
            for k in range(3):
                I.p[k] = params[k] if k < len(params) else 0.0

    def run(self, tuple inputs, shape):
        """The outputs (new arrays of `shape`) of the program on `inputs` (Arrays broadcastable
        to `shape`, of the program's input dtypes).  The outputs take the inputs' memory order
        as an eager op's result does (channels_last inputs give channels_last outputs), except
        in programs with row or random instructions, whose outputs are contiguous: row
        instructions work on the rows of `shape`'s last dimension, and a random instruction
        draws by the element's row-major index.  Longer rows than MAX_ROW raise
        NotImplementedError (the caller runs the ops one by one)."""
        cdef int nd = len(shape), i, d, k, nops = self.n_in + self.n_out
        cdef int64_t shp[MAX_DIMS]
        cdef int64_t order[MAX_DIMS]
        cdef int perm[MAX_DIMS]
        cdef int64_t tmp[MAX_DIMS]
        cdef bint permuted = False
        cdef Array a
        if nd > MAX_DIMS:
            raise ValueError(f"fused program {self.name}: {nd} dims (at most {MAX_DIMS})")
        if len(inputs) != self.n_in:
            raise ValueError(f"fused program {self.name}: {len(inputs)} inputs for {self.n_in}")
        for d in range(nd):
            shp[d] = shape[d]
            if shp[d] < 0:
                raise ValueError(f"fused program {self.name}: negative size in {tuple(shape)}")
        cdef int64_t row = 0
        if self.has_rows:
            row = shp[nd - 1] if nd > 0 else 1
            if row > MAX_ROW:
                raise NotImplementedError(f"fused program {self.name}: rows of {row} elements "
                                          f"(at most {MAX_ROW})")
        # byte strides of every operand over the output's dims (outputs are contiguous in the
        # order the program iterates: the inputs' memory order, dims permuted to it)
        cdef Tiling t
        memset(&t, 0, sizeof(Tiling))
        t.nops = nops
        t.row = row
        _input_strides(self, inputs, nd, shp, &t)
        # each output's memory order, as the eager ops would give it (out_perm[i * MAX_DIMS:]);
        # the program iterates in output 0's, the outputs in another order are copied after
        cdef int* out_perm = NULL
        cdef list reorder = []
        if not self.has_rows and not self.has_random and nd > 1:
            out_perm = <int*>malloc(sizeof(int) * MAX_DIMS * self.n_out)
            if out_perm == NULL or _eager_orders(self, &t, nd, shp, out_perm) < 0:
                free(out_perm)
                raise MemoryError()
            for d in range(nd):
                perm[d] = out_perm[d]
                order[d] = perm[d]
                permuted = permuted or perm[d] != nd - 1 - d
            first = [d for d in perm[:nd] if shp[d] > 1]    # size-1 dims go anywhere
            for i in range(1, self.n_out):
                o_perm = [out_perm[i * MAX_DIMS + k] for k in range(nd)]
                if [d for d in o_perm if shp[d] > 1] != first:
                    reorder.append((i, o_perm))
            free(out_perm)
        if permuted:
            outs = [new_array_strided(nd, shp, order, self.out_dtype[i]) for i in range(self.n_out)]
        else:
            outs = [new_array(nd, shp, self.out_dtype[i]) for i in range(self.n_out)]
        for i in range(self.n_out):
            a = <Array>outs[i]
            for d in range(nd):
                t.st[self.n_in + i][d] = 0 if shp[d] == 1 else a.strd[d] * tl_itemsize[a.dtype]
            t.base[self.n_in + i] = a.ptr()
            t.isz[self.n_in + i] = tl_itemsize[a.dtype]
        if permuted:
            # iterate in memory order: dim k (outermost first) is logical dim perm[nd - 1 - k],
            # so every output is contiguous over the permuted dims (an elementwise program does
            # not care which logical dim is which)
            for k in range(nops):
                for d in range(nd):
                    tmp[d] = t.st[k][perm[nd - 1 - d]]
                for d in range(nd):
                    t.st[k][d] = tmp[d]
            for d in range(nd):
                tmp[d] = shp[perm[nd - 1 - d]]
            for d in range(nd):
                shp[d] = tmp[d]
        _coalesce(&t, nd, shp)
        if t.numel == 0:
            return outs
        cdef int err
        with nogil:
            err = _run(self, &t)
        if err < 0:
            raise MemoryError(f"fused program {self.name}: no memory for scratch")
        if err & TL_ERR_ZERODIV:
            raise ZeroDivisionError(f"fused program {self.name}: integer division by zero")
        for i, o_perm in reorder:       # an output whose eager order is another one's
            for d in range(nd):
                order[d] = o_perm[d]
                tmp[d] = shape[d]
            a = new_array_strided(nd, tmp, order, self.out_dtype[i])
            _copy(a, outs[i])
            outs[i] = a
        return outs

    @property
    def num_instructions(self):
        return self.n_ins

    def set_native(self, size_t address, owner):
        """Run the program's generated C (torchlite/compiler/_cpp.py) on each tile: `address`
        is its `int f(char **d, int64_t n, int64_t L)` (0: back to the interpreter), `owner`
        what keeps it loaded."""
        cdef int i, n_random = 0
        for i in range(self.n_ins):
            n_random += self.ins[i].row_kind == K_RANDOM
        if address and self.n_in + self.n_out + n_random + self.n_scratch > MAX_IN + 16 + 64:
            raise ValueError(f"fused program {self.name}: too many operands for generated C")
        self.native = <native_fn>address
        self.native_owner = owner if address else None

    @property
    def has_native(self):
        """Whether the program runs its generated C (set_native)."""
        return self.native != NULL

    @property
    def has_row_instructions(self):
        """Whether the program has row instructions (they need whole rows of the output, so
        it cannot run as a matrix product's epilogue, which sees pieces of rows)."""
        return bool(self.has_rows)


cdef int _input_strides(Program p, tuple inputs, int nd, const int64_t* shp, Tiling* t) except -1:
    """Check the inputs against the program (dtypes, broadcasting to the output shape shp) and
    write their base pointers, element sizes and byte strides over shp's dims (0 where
    broadcast) into t."""
    cdef int i, d, k
    cdef Array a
    if len(inputs) != p.n_in:
        raise ValueError(f"fused program {p.name}: {len(inputs)} inputs for {p.n_in}")
    shape = tuple(shp[d] for d in range(nd))
    for i in range(p.n_in):
        a = <Array?>inputs[i]       # (checked: a CUDA array must not reach the host loops)
        if a.dtype != p.in_dtype[i]:
            raise TypeError(f"fused program {p.name}: input {i} has dtype code "
                            f"{a.dtype}, expected {p.in_dtype[i]}")
        k = nd - a.nd
        if k < 0:
            raise ValueError(f"fused program {p.name}: input {i} has more dims than "
                             f"the output {shape}")
        for d in range(nd):
            if d >= k and a.shp[d - k] != shp[d] and a.shp[d - k] != 1:
                raise ValueError(f"fused program {p.name}: input {i} of shape "
                                 f"{tuple(a.shape)} does not broadcast to {shape}")
            t.st[i][d] = 0 if (d < k or a.shp[d - k] == 1) else a.strd[d - k] * tl_itemsize[a.dtype]
        t.base[i] = a.ptr()
        t.isz[i] = tl_itemsize[a.dtype]
    return 0


cdef int _eager_orders(Program p, Tiling* t, int nd, const int64_t* shp, int* out_perm) noexcept nogil:
    """The memory order (innermost first) each output of an elementwise program would have,
    were its instructions run as the eager ops: each instruction's result takes its operands'
    memory order (elementwise.memory_order, with the byte strides of the inputs in t.st and
    the dense strides an earlier result would have), over the dims some operand spans (one
    all its operands broadcast stays broadcast).  -1 when out of memory."""
    cdef int n_slots = p.n_in + p.n_out + p.n_const + p.n_scratch, i, k, d, j
    # vst[slot * MAX_DIMS + d]: the stride a slot's value would have over dim d
    cdef int64_t* vst = <int64_t*>malloc(sizeof(int64_t) * MAX_DIMS * n_slots)
    cdef int64_t src[4][MAX_DIMS]
    cdef int perm[MAX_DIMS]
    cdef int64_t step
    cdef bint spans
    cdef Instr* I
    if vst == NULL:
        return -1
    memset(vst, 0, sizeof(int64_t) * MAX_DIMS * n_slots)     # constants: broadcast
    for i in range(p.n_in):
        for d in range(nd):
            vst[i * MAX_DIMS + d] = t.st[i][d]
    for i in range(p.n_out):        # an output no instruction writes: logical order
        for d in range(nd):
            out_perm[i * MAX_DIMS + d] = nd - 1 - d
    for i in range(p.n_ins):
        I = &p.ins[i]
        for k in range(1, I.nops):
            for d in range(nd):
                src[k][d] = vst[I.slot[k] * MAX_DIMS + d]
        memory_order(src, 1, I.nops, nd, perm)
        step = 1
        for j in range(nd):
            d = perm[j]
            spans = False
            for k in range(1, I.nops):
                spans = spans or src[k][d] != 0
            vst[I.slot[0] * MAX_DIMS + d] = step if spans else 0
            if spans:
                step *= shp[d]
        if p.n_in <= I.slot[0] < p.n_in + p.n_out:
            for d in range(nd):
                out_perm[(I.slot[0] - p.n_in) * MAX_DIMS + d] = perm[d]
    free(vst)
    return 0


cdef int _check_dtype(object dt) except -1:
    cdef int d = dt
    if not 0 <= d < 10:
        raise ValueError(f"fused program: bad dtype code {dt}")
    return d


cdef int _slot(Program p, int kind, int idx) noexcept:
    # slots are numbered inputs, then outputs, then constants, then scratch
    if kind == S_INPUT:
        return idx
    if kind == S_OUTPUT:
        return p.n_in + idx
    if kind == S_CONST:
        return p.n_in + p.n_out + idx
    return p.n_in + p.n_out + p.n_const + idx


cdef int _store_const(double* cell, int dtype, object v) except -1:
    """Write v into cell with dtype's representation (the loops read it as that type)."""
    cdef char* c = <char*>cell
    memset(cell, 0, 8)
    if dtype == 9:
        (<double*>c)[0] = v
    elif dtype == 8:
        (<float*>c)[0] = v
    elif dtype == 0:
        (<unsigned char*>c)[0] = 1 if v else 0
    elif dtype == 5:
        (<long long*>c)[0] = v
    elif dtype == 4:
        (<int*>c)[0] = v
    else:
        raise ValueError(f"fused program: constants of dtype code {dtype} are not supported")
    return 0


# ---- the iteration ------------------------------------------------------------------------
cdef struct Tiling:
    int nops                         # inputs then outputs
    int nd                           # coalesced dims, innermost first
    int64_t numel
    int64_t row                      # the row length of row instructions (0: none)
    int64_t tile                     # elements per tile (whole rows when row > 0)
    int64_t shape[MAX_DIMS]
    int64_t st[MAX_IN + 16][MAX_DIMS]   # byte strides (before coalescing: outermost first)
    int64_t cst[MAX_IN + 16][MAX_DIMS]  # after coalescing: innermost first
    char* base[MAX_IN + 16]
    int isz[MAX_IN + 16]
    bint flat[MAX_IN + 16]           # laid out exactly as the (contiguous) output
    bint per_row[MAX_IN + 16]        # whole-row tiles: reads only by the place in the row (a
                                     # weight or bias row), so every tile gathers the same
    bint stream                      # the operands stream from memory: prefetch (above)


cdef void _coalesce(Tiling* t, int nd, const int64_t* shp) noexcept:
    """Drop size-1 dims and merge neighbours every operand steps through evenly; dims end up
    innermost first.  Then mark which inputs are laid out as the output (read in place by
    flat tiles)."""
    cdef int i, d, o, c
    cdef bint merge
    t.nd = 0
    t.numel = 1
    for i in range(nd):
        d = nd - 1 - i
        t.numel *= shp[d]
        if shp[d] == 1:
            continue
        if t.nd > 0:
            c = t.nd - 1
            merge = True
            for o in range(t.nops):
                if t.st[o][d] != t.cst[o][c] * t.shape[c]:
                    merge = False
                    break
            if merge:
                t.shape[c] *= shp[d]
                continue
        t.shape[t.nd] = shp[d]
        for o in range(t.nops):
            t.cst[o][t.nd] = t.st[o][d]
        t.nd += 1
    if t.nd == 0:
        t.nd = 1
        t.shape[0] = 1
        for o in range(t.nops):
            t.cst[o][0] = 0
    cdef int64_t expect
    for o in range(t.nops):
        t.flat[o] = True
        expect = t.isz[o]
        for c in range(t.nd):
            if t.cst[o][c] != expect:
                t.flat[o] = False
                break
            expect *= t.shape[c]


def last_level_cache_bytes():
    """The size of the largest cache of CPU 0 as Linux's sysfs gives it (what lscpu shows;
    glibc's sysconf can report the whole package's), else 32 MB."""
    best = 0
    for i in range(8):
        try:
            with open(f"/sys/devices/system/cpu/cpu0/cache/index{i}/size") as f:
                text = f.read().strip()
        except OSError:
            break
        unit = 1
        for suffix, scale in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
            if text.endswith(suffix):
                unit, text = scale, text[:len(text) - 1]
        try:
            best = max(best, int(text) * unit)
        except ValueError:
            pass
    return best or 32 << 20


cdef int64_t _stream_bytes = last_level_cache_bytes()
cdef int64_t _streamed = 0          # programs run streaming (a count the tests read)


def streamed_runs():
    """How many program runs streamed (STREAM_TILE tiles, prefetching) in this process."""
    return _streamed


def stream_bytes(nbytes=None):
    """The operand footprint above which a program streams (tiles of STREAM_TILE, prefetching:
    the header comment): by default the last level cache's size.  With nbytes, set it (0:
    every program streams; the tests use this) and return the previous value."""
    global _stream_bytes
    old = _stream_bytes
    if nbytes is not None:
        if nbytes < 0:
            raise ValueError(f"stream_bytes: expected a size >= 0, got {nbytes}")
        _stream_bytes = nbytes
    return old


cdef int64_t _footprint(Tiling* t) noexcept nogil:
    """The bytes the operands span (a broadcast dimension counted once)."""
    cdef int64_t total = 0, b
    cdef int o, c
    for o in range(t.nops):
        b = t.isz[o]
        for c in range(t.nd):
            if t.cst[o][c] != 0:
                b *= t.shape[c]
        total += b
    return total


cdef int _run(Program p, Tiling* t) noexcept nogil:
    global _streamed
    cdef bint rows = t.row == 0 and (t.shape[0] >= ROW_MIN or t.nd == 1)
    cdef int o, c
    t.tile = TILE
    t.stream = t.row == 0 and _footprint(t) > _stream_bytes
    if t.stream:
        t.tile = STREAM_TILE
        _streamed += 1
    if t.row > 0:                   # whole rows: flat tiles of as many rows as fit
        t.tile = (TILE // t.row if t.row < TILE else 1) * t.row
    for o in range(t.nops):
        t.per_row[o] = t.row > 0 and t.shape[0] == t.row and not t.flat[o]
        for c in range(1, t.nd):
            if t.cst[o][c] != 0:
                t.per_row[o] = False
    cdef int64_t per_row = (t.shape[0] + t.tile - 1) // t.tile if rows else 0
    cdef int64_t n_items = (t.numel // t.shape[0]) * per_row if rows else (t.numel + t.tile - 1) // t.tile
    # a program does n_ins passes' worth of work per element: threads start that much sooner
    cdef int nt = num_chunks(t.numel * p.n_ins, GRAIN), tid, err = 0
    cdef int64_t it
    # per thread: the scratch registers, the gathered inputs, one partial per row of a tile,
    # and for each input the elements a per-row input has gathered so far
    cdef int64_t scratch_bytes = <int64_t>(p.n_scratch + p.n_in) * t.tile * 8 + t.tile * 8 \
        + p.n_in * 8
    if nt > n_items:
        nt = <int>n_items
    if nt < 1:
        nt = 1
    cdef char* scratch = <char*>malloc(nt * scratch_bytes + 64)
    cdef int* errs = <int*>malloc(sizeof(int) * nt)
    if scratch == NULL or errs == NULL:
        free(scratch); free(errs)
        return -1
    for tid in range(nt):
        errs[tid] = 0
        memset(scratch + tid * scratch_bytes + scratch_bytes - p.n_in * 8, 0, p.n_in * 8)
    if nt == 1:
        for it in range(n_items):
            errs[0] |= _tile(p, t, it, rows, per_row, scratch)
    else:
        for it in prange(n_items, num_threads=nt, schedule="static"):
            tid = threadid()
            errs[tid] |= _tile(p, t, it, rows, per_row, scratch + tid * scratch_bytes)
    for tid in range(nt):
        err |= errs[tid]
    free(scratch)
    free(errs)
    return err


cdef inline int64_t _offset(Tiling* t, int o, int64_t flat_outer, int first_dim) noexcept nogil:
    """The byte offset of operand o at the element whose index over dims first_dim.. is
    flat_outer (row-major over the coalesced dims, innermost first)."""
    cdef int64_t off = 0, q = flat_outer
    cdef int d
    for d in range(first_dim, t.nd):
        off += (q % t.shape[d]) * t.cst[o][d]
        q = q // t.shape[d]
    return off


cdef int _gather(Tiling* t, int o, int64_t f0, int64_t n, char* dst) noexcept nogil:
    """Copy operand o's elements at flat output indices [f0, f0 + n) into dst (contiguous)."""
    cdef int64_t j = f0 % t.shape[0], row = f0 // t.shape[0], k, m, done = 0
    cdef int64_t s0 = t.cst[o][0]
    cdef int sz = t.isz[o], b
    cdef char* src
    while done < n:
        src = t.base[o] + _offset(t, o, row, 1) + j * s0
        m = t.shape[0] - j
        if m > n - done:
            m = n - done
        if s0 == sz:                # a contiguous run (a bias row, a mask row): one copy
            memcpy(dst + done * sz, src, m * sz)
        elif sz == 4:
            for k in range(m):
                (<int*>dst)[done + k] = (<int*>(src + k * s0))[0]
        elif sz == 8:
            for k in range(m):
                (<double*>dst)[done + k] = (<double*>(src + k * s0))[0]
        else:
            for k in range(m):
                for b in range(sz):
                    dst[(done + k) * sz + b] = src[k * s0 + b]
        done += m
        j = 0
        row += 1
    return 0


cdef int _tile(Program p, Tiling* t, int64_t it, bint rows, int64_t per_row,
               char* scratch) noexcept nogil:
    cdef char* ptr[MAX_IN + 16 + 64]
    cdef int64_t stride[MAX_IN + 16 + 64]
    cdef int64_t n, row, j0, f0
    cdef int o
    if p.n_in + p.n_out + p.n_const + p.n_scratch > MAX_IN + 16 + 64:
        return -1
    cdef double* part = <double*>(scratch + <int64_t>(p.n_scratch + p.n_in) * t.tile * 8)
    cdef int64_t* gathered = <int64_t*>(part + t.tile)
    if rows:
        row = it // per_row
        j0 = (it % per_row) * t.tile
        f0 = row * t.shape[0] + j0      # the output is contiguous: its flat index
        n = t.shape[0] - j0
        if n > t.tile:
            n = t.tile
        for o in range(t.nops):
            ptr[o] = t.base[o] + _offset(t, o, row, 1) + j0 * t.cst[o][0]
            stride[o] = t.cst[o][0]
    else:
        f0 = it * t.tile
        n = t.numel - f0
        if n > t.tile:
            n = t.tile
        for o in range(t.nops):
            if t.flat[o]:
                ptr[o] = t.base[o] + f0 * t.isz[o]
                stride[o] = t.isz[o]
            elif t.cst[o][0] == 0 and _all_zero(t, o):
                ptr[o] = t.base[o]
                stride[o] = 0
            else:                   # an input only: outputs are contiguous, hence flat
                ptr[o] = scratch + <int64_t>(p.n_scratch + o) * t.tile * 8
                stride[o] = t.isz[o]
                if not t.per_row[o] or gathered[o] < n:
                    _gather(t, o, f0, n, ptr[o])
                    gathered[o] = n
    if p.native != NULL and _outputs_contiguous(p, stride):
        return _native(p, ptr, stride, n, f0, t.row, t.tile, scratch)
    cdef char* nxt[MAX_IN + 16]
    if not t.stream:
        return _exec(p, ptr, stride, n, f0, t.row, t.tile, part, scratch, NULL)
    for o in range(t.nops):         # the operands read or written in place: where the thread's
        nxt[o] = NULL               # next tile (the next item: static schedule) starts
        if stride[o] == t.isz[o] and (rows or t.flat[o]):
            nxt[o] = ptr[o] + n * stride[o]
    return _exec(p, ptr, stride, n, f0, t.row, t.tile, part, scratch, nxt)


cdef inline bint _outputs_contiguous(Program p, int64_t* stride) noexcept nogil:
    cdef int o
    for o in range(p.n_in, p.n_in + p.n_out):
        if stride[o] != _isz(p, o):
            return False
    return True


cdef int _native(Program p, char** ptr, int64_t* stride, int64_t n, int64_t f0, int64_t row,
                 int64_t tile, char* scratch) noexcept nogil:
    """The tile through the program's generated C, which takes contiguous operands (the
    outputs are: _outputs_contiguous): an input broadcast along the tile (stride 0) or strided
    is first written out contiguously into its gather buffer (not in use then: scratch +
    (n_scratch + o) * tile * 8 bytes).  The random instructions' masks (they read only the
    int64 seed and block inputs) are drawn here, as the interpreter draws them, into their
    destinations, which follow the outputs in the pointers the C reads; a program with row
    instructions gets its scratch registers after them."""
    cdef int o, b, sz, i, k = p.n_in + p.n_out
    cdef int64_t j
    cdef char* buf
    cdef char* d[MAX_IN + 16 + 64]
    cdef Instr* I
    for o in range(p.n_in):
        if stride[o] == _isz(p, o) or p.in_dtype[o] == 5:     # (int64: a seed, read below)
            continue
        buf = scratch + (<int64_t>p.n_scratch + o) * tile * 8
        sz = _isz(p, o)
        if sz == 4:                 # broadcast (stride 0) or strided: one element at a time
            for j in range(n):
                (<float*>buf)[j] = (<float*>(ptr[o] + j * stride[o]))[0]
        elif sz == 8:
            for j in range(n):
                (<double*>buf)[j] = (<double*>(ptr[o] + j * stride[o]))[0]
        else:
            for j in range(n):
                for b in range(sz):
                    buf[j * sz + b] = ptr[o][j * stride[o] + b]
        ptr[o] = buf
    for o in range(p.n_in + p.n_out):
        d[o] = ptr[o]
    for i in range(p.n_ins):
        I = &p.ins[i]
        if I.row_kind == K_RANDOM:
            o = I.slot[0]           # an output, or a scratch register (tile cells of 8 bytes)
            buf = ptr[o] if o < p.n_in + p.n_out else \
                scratch + <int64_t>(o - p.n_in - p.n_out - p.n_const) * tile * 8
            bernoulli_range((<uint64_t*>ptr[I.slot[1]])[0], (<uint64_t*>ptr[I.slot[2]])[0], I.p[0],
                            f0, n, 8 if I.isz[0] == 4 else 9, buf)
            d[k] = buf
            k += 1
    if p.has_rows:                  # the scratch registers, for values kept between row passes
        for i in range(p.n_scratch):
            d[k + i] = scratch + <int64_t>i * tile * 8
    return p.native(d, n, row)


cdef inline int _isz(Program p, int o) noexcept nogil:
    """The element size of operand o (inputs, then outputs)."""
    return tl_itemsize[p.in_dtype[o] if o < p.n_in else p.out_dtype[o - p.n_in]]


cdef int _exec(Program p, char** ptr, int64_t* stride, int64_t n, int64_t f0, int64_t row,
               int64_t tile, double* part, char* scratch, char** nxt) noexcept nogil:
    """Run every instruction over n elements: ptr/stride hold the inputs' and outputs' first
    element and byte stride (0: broadcast); the constants and the scratch registers (tile
    8-byte cells each, from scratch) are set here.  f0: the flat index of the first element
    (random draws); row: the row length of row instructions; part: their per-row partials.
    nxt (or NULL): for each input and output, where its next tile starts (NULL: not in
    memory); instruction i prefetches the i-th of n_ins equal shares of those n elements."""
    cdef char* d[4]
    cdef int64_t s[4]
    cdef int64_t share, a0, a1
    cdef int i, k, sl, err = 0
    cdef int first_const = p.n_in + p.n_out, first_scratch = first_const + p.n_const
    cdef Instr* I
    for k in range(p.n_const):
        ptr[first_const + k] = <char*>&p.const_bits[k]
        stride[first_const + k] = 0
    for k in range(p.n_scratch):
        ptr[first_scratch + k] = scratch + <int64_t>k * tile * 8
        stride[first_scratch + k] = -1          # the value's own element size
    for i in range(p.n_ins):
        I = &p.ins[i]
        if nxt != NULL:
            for k in range(p.n_in + p.n_out):
                if nxt[k] != NULL:
                    share = n * stride[k]
                    a0 = share * i // p.n_ins
                    a1 = share * (i + 1) // p.n_ins
                    if k < p.n_in:
                        tl_prefetch_read(nxt[k] + a0, a1 - a0)
                    else:
                        tl_prefetch_write(nxt[k] + a0, a1 - a0)
        for k in range(I.nops):
            sl = I.slot[k]
            d[k] = ptr[sl]
            s[k] = stride[sl] if stride[sl] >= 0 else I.isz[k]
        if I.row_kind == K_RANDOM:
            bernoulli_range((<uint64_t*>d[1])[0], (<uint64_t*>d[2])[0], I.p[0], f0, n,
                            8 if I.isz[0] == 4 else 9, d[0])
        elif I.row_kind:
            _row_instruction(I, d, s, n, row, part)
        else:
            err |= I.fn(d, s, n // row if I.compact else n, I.p)
    return err


cdef void _row_instruction(Instr* I, char** d, int64_t* s, int64_t n, int64_t L,
                           double* part) noexcept nogil:
    """A row instruction over the n // L whole rows of a tile: d[0] (contiguous) gets each
    row's sum or mean (compact), a compact value spread along its rows, or each row's
    softmax.  Each reads what it needs before it writes over it, so d[0] may be d[1]."""
    cdef int64_t nr = n // L, r, j
    cdef char* src = d[1]
    cdef bint f32 = I.isz[0] == 4
    cdef double v
    cdef float* yf = <float*>d[0]
    cdef double* yd = <double*>d[0]
    if I.row_kind == K_SOFTMAX_BWD:
        _softmax_back(I, d, s, n, L, part)
        return
    if I.row_kind == K_ROW and I.row_op == ROW_SPREAD:
        r = nr - 1
        while r >= 0:               # the last row first: row r is read before rows >= r are written
            v = (<float*>src)[r if s[1] else 0] if f32 else (<double*>src)[r if s[1] else 0]
            for j in range(r * L, r * L + L):
                if f32:
                    yf[j] = <float>v
                else:
                    yd[j] = v
            r -= 1
        return
    if s[1] == 0:                   # a broadcast operand: its value on every element first
        v = (<float*>src)[0] if f32 else (<double*>src)[0]
        for j in range(n):
            if f32:
                yf[j] = <float>v
            else:
                yd[j] = v
        src = d[0]
    if I.row_kind == K_SOFTMAX:
        I.sfn(src, d[0], nr, L, I.row_op)
        return
    I.rfn(src, nr, L * I.isz[0], L, NULL, 0.0, part)
    for r in range(nr):
        v = part[r] / L if I.row_op == ROW_MEAN else part[r]
        if f32:
            yf[r] = <float>v
        else:
            yd[r] = v


cdef void _softmax_back(Instr* I, char** d, int64_t* s, int64_t n, int64_t L,
                        double* part) noexcept nogil:
    """The softmax/log_softmax gradient of the n // L whole rows of a tile, d[0] from y = d[1]
    and g = d[2] (contiguous, or broadcast: stride 0).  A broadcast source is first written
    out along the tile: into part (TILE 8-byte cells, unused by this instruction) for y, and
    for g into part when y is not broadcast, else into d[0] (then an output or scratch register,
    neither source).  The kernel reads a row before it writes it, so d[0] may be y or g."""
    cdef char* y = d[1]
    cdef char* g = d[2]
    cdef char* dst
    if s[1] == 0:
        _fill(<char*>part, y, n, I.isz[0])
        y = <char*>part
    if s[2] == 0:
        dst = d[0] if s[1] == 0 else <char*>part
        _fill(dst, g, n, I.isz[0])
        g = dst
    I.bfn(y, g, d[0], n // L, L, I.row_op)


cdef inline void _fill(char* dst, const char* v, int64_t n, int isz) noexcept nogil:
    cdef int64_t j
    if isz == 4:
        for j in range(n):
            (<float*>dst)[j] = (<const float*>v)[0]
    else:
        for j in range(n):
            (<double*>dst)[j] = (<const double*>v)[0]


cdef inline bint _all_zero(Tiling* t, int o) noexcept nogil:
    cdef int c
    for c in range(t.nd):
        if t.cst[o][c] != 0:
            return False
    return True


# ---- a program as the epilogue of a matrix product ---------------------------------------
cdef struct EpState:
    # the program's slots: inputs (one of them the product's result C), then outputs; for
    # each, the first element and the byte strides along C's rows and columns
    char* base[MAX_IN + 16]
    int64_t rs[MAX_IN + 16]
    int64_t cs[MAX_IN + 16]
    int nops
    int64_t n_cols               # C's columns: element (i, j) is number i * n_cols + j
    char* scratch                # per thread: the scratch registers, TILE cells each
    int64_t scratch_bytes
    int nthreads
    int* errs                    # per thread: what the instructions reported
    void* program                # the Program (a borrowed reference: Epilogue holds it)


cdef void _epilogue_block(void* ctx, int64_t i0, int64_t m, int64_t j0, int64_t n) noexcept nogil:
    """The program over rows [i0, i0+m) and columns [j0, j0+n) of C (tl_gemm_problem.epilogue):
    row by row, or as one run when every operand steps through the block evenly (a block as
    wide as C in contiguous arrays), in pieces of at most TILE elements."""
    cdef EpState* e = <EpState*>ctx
    cdef char* ptr[MAX_IN + 16 + 64]
    cdef int64_t stride[MAX_IN + 16 + 64]
    cdef int tid = omp_get_thread_num(), o
    cdef int64_t r, rows = m, length = n, j, cnt
    if tid >= e.nthreads:            # more threads than Epilogue made room for: report it
        e.errs[0] |= EP_THREADS
        return
    for o in range(e.nops):
        if e.rs[o] != n * e.cs[o]:
            break
    else:
        rows, length = 1, m * n
    for r in range(rows):
        j = 0
        while j < length:
            cnt = length - j if length - j < TILE else TILE
            for o in range(e.nops):
                ptr[o] = e.base[o] + (i0 + r) * e.rs[o] + (j0 + j) * e.cs[o]
                stride[o] = e.cs[o]
            e.errs[tid] |= _exec(<Program>e.program, ptr, stride, cnt, (i0 + r) * e.n_cols + j0 + j,
                                 0, TILE, NULL, e.scratch + tid * e.scratch_bytes, NULL)
            j += cnt


cdef enum:
    EP_THREADS = 1 << 30         # an epilogue ran on a thread it has no scratch for


cdef class Epilogue:
    def __cinit__(self):
        self.ctx = NULL
        self.fn = _epilogue_block

    def __dealloc__(self):
        cdef EpState* e = <EpState*>self.ctx
        if e != NULL:
            free(e.scratch)
            free(e.errs)
            free(e)

    def __init__(self, Program program, tuple inputs, int c_index):
        """`program` with inputs[c_index] the product's result C (a 2-D array whose values the
        GEMM is about to write: only its memory is used now) and the other inputs
        broadcastable to C's shape; makes the outputs (contiguous, C's shape).  For programs
        without row instructions."""
        cdef Array c = <Array?>inputs[c_index], a
        cdef int64_t shp[2]
        cdef int i, nt = max_threads()
        cdef Tiling* t
        cdef EpState* e
        if program.has_rows:
            raise ValueError(f"fused program {program.name}: row instructions cannot run as an "
                             f"epilogue")
        if c.nd != 2:
            raise ValueError(f"fused program {program.name}: an epilogue needs a 2-D result")
        if program.n_in + program.n_out + program.n_const + program.n_scratch > MAX_IN + 16 + 64:
            raise ValueError(f"fused program {program.name}: too many slots")
        shp[0], shp[1] = c.shp[0], c.shp[1]
        self.program, self.inputs = program, inputs
        self.outputs = [new_array(2, shp, program.out_dtype[i]) for i in range(program.n_out)]
        t = <Tiling*>malloc(sizeof(Tiling))
        e = <EpState*>malloc(sizeof(EpState))
        if e != NULL:
            memset(e, 0, sizeof(EpState))   # (before __dealloc__ can see it)
        self.ctx = e
        if t == NULL or e == NULL:
            free(t)
            raise MemoryError()
        try:
            _input_strides(program, inputs, 2, shp, t)
            for i in range(program.n_in):
                e.base[i], e.rs[i], e.cs[i] = t.base[i], t.st[i][0], t.st[i][1]
        finally:
            free(t)
        for i in range(program.n_out):
            a = <Array>self.outputs[i]
            e.base[program.n_in + i] = a.ptr()
            e.rs[program.n_in + i] = 0 if shp[0] == 1 else a.strd[0] * tl_itemsize[a.dtype]
            e.cs[program.n_in + i] = 0 if shp[1] == 1 else a.strd[1] * tl_itemsize[a.dtype]
        e.nops = program.n_in + program.n_out
        e.n_cols = shp[1]
        if shp[1] == 1:             # one column: each block is one run down it
            for i in range(e.nops):
                e.cs[i] = e.rs[i]
        e.nthreads = nt
        e.scratch_bytes = (<int64_t>program.n_scratch * TILE * 8 + 63) // 64 * 64
        e.scratch = <char*>malloc(nt * e.scratch_bytes + 64)
        e.errs = <int*>malloc(sizeof(int) * nt)
        if e.scratch == NULL or e.errs == NULL:
            raise MemoryError()
        memset(e.errs, 0, sizeof(int) * nt)
        e.program = <void*>program

    cdef int check(self) except -1:
        cdef EpState* e = <EpState*>self.ctx
        cdef int err = 0, i
        for i in range(e.nthreads):
            err |= e.errs[i]
        if err & EP_THREADS:
            raise RuntimeError(f"fused program {self.program.name}: the epilogue ran on more "
                               f"threads than it was set up for")
        if err & TL_ERR_ZERODIV:
            raise ZeroDivisionError(f"fused program {self.program.name}: integer division by "
                                    f"zero")
        return 0


def run(Program program, tuple inputs, shape, spec=None):
    """The outputs of `program` on `inputs` (see Program.run).  spec: the program as plain
    data (torchlite/compiler/_lowering.py's ProgramSpec), which the CUDA version of this
    function (torchlite/cuda/_fused.py, through torchlite._dispatch.fused) compiles."""
    return program.run(inputs, shape)
