/* Elementwise kernels: unary, binary and ternary ops (functors in tl_ops.cuh), casts and
 * copies between all dtypes, fill and the affine fills of arange and linspace.
 *
 * Every kernel takes an Indexer (tl_common.cuh) over its operands, output first.  With
 * ix.ndim == 0 it runs the contiguous fast path: a grid-stride loop over 64-bit indices, each
 * input at i * ix.step[k] (1, or 0 for a broadcast scalar) and the output at i, four elements
 * to an aligned access where the pointers allow (tl_common.cuh's Vec4).  Otherwise it
 * walks the strided n-d space with 32-bit linear indices (n < 2^32; the host splits larger
 * launches) and 64-bit element offsets.  Operands are typed pointers to their first element.
 *
 * Name expressions: tl_unary<tl::op::Exp, float, float>, tl_binary<tl::op::Lt, int, bool>,
 * tl_ternary<tl::op::Where, bool, tl::u16>, tl_unary<tl::op::Identity, __half, double> (a
 * cast), tl_fill<tl::u32>, tl_arange<float>, tl_arange_int<tl::i64>, tl_linspace<__half>. */
#include "tl_common.cuh"
#include "tl_ops.cuh"

using tl::i64;
using tl::u32;

/* out = op(a): TI the input's element type, TO the output's. */
template <class Op, class TI, class TO>
__global__ void tl_unary(TO* __restrict__ out, const TI* __restrict__ a, i64 n,
                         tl::Indexer<2> ix, tl::Params p) {
    const Op op;
    i64 start = 0;
    if (ix.ndim == 0 && tl::vec4_ok(out, 1) && tl::vec4_ok(a, ix.step[1])) {
        for (i64 v = tl::global_thread(); v < n / 4; v += tl::global_threads()) {
            typename tl::compute<TI>::type x[4];
            tl::load4(x, a, ix.step[1], v);
            tl::Vec4<TO> r;
            for (int k = 0; k < 4; k++) r.v[k] = tl::cvt<TO>::from(op(x[k], p));
            reinterpret_cast<tl::Vec4<TO>*>(out)[v] = r;
        }
        start = n / 4 * 4;          /* the tail, below */
    }
    for (i64 i = start + tl::global_thread(); i < n; i += tl::global_threads()) {
        const tl::Offsets<2> o = tl::operand_offsets(ix, i);
        out[o.o[0]] = tl::cvt<TO>::from(op(tl::load(a[o.o[1]]), p));
    }
}

/* out = op(a, b): both inputs of type TI (the host promotes first). */
template <class Op, class TI, class TO>
__global__ void tl_binary(TO* __restrict__ out, const TI* __restrict__ a, const TI* __restrict__ b,
                          i64 n, tl::Indexer<3> ix, tl::Params p) {
    const Op op;
    i64 start = 0;
    if (ix.ndim == 0 && tl::vec4_ok(out, 1) && tl::vec4_ok(a, ix.step[1]) && tl::vec4_ok(b, ix.step[2])) {
        for (i64 v = tl::global_thread(); v < n / 4; v += tl::global_threads()) {
            typename tl::compute<TI>::type x[4], y[4];
            tl::load4(x, a, ix.step[1], v);
            tl::load4(y, b, ix.step[2], v);
            tl::Vec4<TO> r;
            for (int k = 0; k < 4; k++) r.v[k] = tl::cvt<TO>::from(op(x[k], y[k], p));
            reinterpret_cast<tl::Vec4<TO>*>(out)[v] = r;
        }
        start = n / 4 * 4;
    }
    for (i64 i = start + tl::global_thread(); i < n; i += tl::global_threads()) {
        const tl::Offsets<3> o = tl::operand_offsets(ix, i);
        out[o.o[0]] = tl::cvt<TO>::from(op(tl::load(a[o.o[1]]), tl::load(b[o.o[2]]), p));
    }
}

/* out = op(c, x, y): c of type TC (bool for where, else T), x, y and out of type T. */
template <class Op, class TC, class T>
__global__ void tl_ternary(T* __restrict__ out, const TC* __restrict__ c, const T* __restrict__ x,
                           const T* __restrict__ y, i64 n, tl::Indexer<4> ix, tl::Params p) {
    const Op op;
    i64 start = 0;
    if (ix.ndim == 0 && tl::vec4_ok(out, 1) && tl::vec4_ok(c, ix.step[1]) && tl::vec4_ok(x, ix.step[2])
            && tl::vec4_ok(y, ix.step[3])) {
        for (i64 v = tl::global_thread(); v < n / 4; v += tl::global_threads()) {
            typename tl::compute<TC>::type cv[4];
            typename tl::compute<T>::type xv[4], yv[4];
            tl::load4(cv, c, ix.step[1], v);
            tl::load4(xv, x, ix.step[2], v);
            tl::load4(yv, y, ix.step[3], v);
            tl::Vec4<T> r;
            for (int k = 0; k < 4; k++) r.v[k] = tl::cvt<T>::from(op(cv[k], xv[k], yv[k], p));
            reinterpret_cast<tl::Vec4<T>*>(out)[v] = r;
        }
        start = n / 4 * 4;
    }
    for (i64 i = start + tl::global_thread(); i < n; i += tl::global_threads()) {
        const tl::Offsets<4> o = tl::operand_offsets(ix, i);
        out[o.o[0]] = tl::cvt<T>::from(
            op(tl::load(c[o.o[1]]), tl::load(x[o.o[2]]), tl::load(y[o.o[3]]), p));
    }
}

/* out[...] = value, for any dtype by its size (T = tl::u8, u16, u32 or u64 bits). */
template <class T>
__global__ void tl_fill(T* __restrict__ out, i64 n, tl::Indexer<1> ix, T value) {
    if (ix.ndim == 0) {
        for (i64 i = tl::global_thread(); i < n; i += tl::global_threads()) out[i] = value;
    } else {
        for (i64 i = tl::global_thread(); i < n; i += tl::global_threads())
            out[tl::offsets(ix, (u32)i).o[0]] = value;
    }
}

/* arange for floating types: out[i] = start + i * step, in float64 and without a fused
 * multiply-add (as the CPU), then converted; out contiguous. */
template <class T>
__global__ void tl_arange(T* __restrict__ out, i64 n, double start, double step) {
    for (i64 i = tl::global_thread(); i < n; i += tl::global_threads())
        out[i] = tl::cvt<T>::from(__dadd_rn(start, __dmul_rn((double)i, step)));
}

/* arange for integer types: out[i] = start + i * step in int64 (wrapping), then truncated. */
template <class T>
__global__ void tl_arange_int(T* __restrict__ out, i64 n, i64 start, i64 step) {
    for (i64 i = tl::global_thread(); i < n; i += tl::global_threads())
        out[i] = (T)(tl::u64)((tl::u64)start + (tl::u64)i * (tl::u64)step);
}

/* linspace: the lower half counts up from start, the upper half down from end (so the last
 * element is exactly end), in float64, then converted; out contiguous. */
template <class T>
__global__ void tl_linspace(T* __restrict__ out, i64 n, double start, double end, double step) {
    const i64 half = n / 2;
    for (i64 i = tl::global_thread(); i < n; i += tl::global_threads()) {
        const double v = i < half ? __dadd_rn(start, __dmul_rn((double)i, step))
                                  : __dsub_rn(end, __dmul_rn((double)(n - 1 - i), step));
        out[i] = tl::cvt<T>::from(v);
    }
}
