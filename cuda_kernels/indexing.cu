/* Indexing along one dim: gather (torch.gather, index_select, take_along_dim, embedding,
 * advanced indexing with one index tensor) and scatter (scatter_, index_copy_,
 * index_put_) with assignment or accumulation (scatter_add_, index_add_, index_put_ with
 * accumulate=True, embedding backward).
 *
 * The iteration space is the index tensor's (broadcast where the op broadcasts):
 * Indexer<3> over (out or self, the other operand's base, index), with the indexed dim
 * excluded from the data operand's strides; element j = index[...] (int64) then moves
 * `dim_stride` elements along that dim.  With wrap_negative, j < 0 counts from the end
 * (advanced indexing); an index outside [0, dim_size) is skipped and ERR_INDEX is or-ed
 * into *err, which the host checks (PyTorch raises "index out of bounds").
 * gather/scatter move bits (T = tl::u8, u16, u32, u64 by element size); scatter_add adds
 * with atomics (float16/bfloat16/float32/float64/int32/int64), so float sums of colliding
 * indices may round differently from run to run, as on PyTorch's CUDA backend.
 *
 * Name expressions: tl_gather<tl::u32>, tl_scatter<tl::u64>, tl_scatter_add<float>. */
#include "tl_common.cuh"

using tl::i64;

namespace tl {
/* the element index along the dim, or -1 (after flagging) when out of range */
TL_DEV i64 checked_index(i64 j, i64 dim_size, int wrap_negative, int* err) {
    if (j < 0 && wrap_negative) j += dim_size;
    if (j < 0 || j >= dim_size) {
        atomicOr(err, ERR_INDEX);
        return -1;
    }
    return j;
}

TL_DEV void atomic_add(float* p, float v) { atomicAdd(p, v); }
TL_DEV void atomic_add(double* p, double v) { atomicAdd(p, v); }
#if TL_HAS_HALF
TL_DEV void atomic_add(f16* p, f16 v) { atomicAdd(p, v); }
TL_DEV void atomic_add(bf16* p, bf16 v) { atomicAdd(p, v); }
#endif
TL_DEV void atomic_add(i32* p, i32 v) { atomicAdd(p, v); }
TL_DEV void atomic_add(i64* p, i64 v) {          /* two's complement: unsigned add wraps alike */
    atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
}  // namespace tl

/* out[o] = in[base + j * dim_stride], j = index[k] */
template <class T>
__global__ void tl_gather(T* __restrict__ out, const T* __restrict__ in, const i64* __restrict__ index,
                          i64 n, tl::Indexer<3> ix, i64 dim_size, i64 dim_stride,
                          int wrap_negative, int* err) {
    for (i64 i = tl::global_thread(); i < n; i += tl::global_threads()) {
        const tl::Offsets<3> o = tl::operand_offsets(ix, i);
        const i64 j = tl::checked_index(index[o.o[2]], dim_size, wrap_negative, err);
        if (j >= 0) out[o.o[0]] = in[o.o[1] + j * dim_stride];
    }
}

/* self[base + j * dim_stride] = src[o] (colliding indices: one of the writes wins) */
template <class T>
__global__ void tl_scatter(T* __restrict__ self, const T* __restrict__ src, const i64* __restrict__ index,
                           i64 n, tl::Indexer<3> ix, i64 dim_size, i64 dim_stride,
                           int wrap_negative, int* err) {
    for (i64 i = tl::global_thread(); i < n; i += tl::global_threads()) {
        const tl::Offsets<3> o = tl::operand_offsets(ix, i);
        const i64 j = tl::checked_index(index[o.o[2]], dim_size, wrap_negative, err);
        if (j >= 0) self[o.o[0] + j * dim_stride] = src[o.o[1]];
    }
}

/* self[base + j * dim_stride] += alpha * src[o], atomically */
template <class T>
__global__ void tl_scatter_add(T* __restrict__ self, const T* __restrict__ src, const i64* __restrict__ index,
                               i64 n, tl::Indexer<3> ix, i64 dim_size, i64 dim_stride,
                               int wrap_negative, int* err, double alpha) {
    typedef typename tl::compute<T>::type C;
    for (i64 i = tl::global_thread(); i < n; i += tl::global_threads()) {
        const tl::Offsets<3> o = tl::operand_offsets(ix, i);
        const i64 j = tl::checked_index(index[o.o[2]], dim_size, wrap_negative, err);
        if (j < 0) continue;
        C v = tl::load(src[o.o[1]]);
        if (alpha != 1.0) v = (C)(alpha * (double)v);
        tl::atomic_add(self + o.o[0] + j * dim_stride, tl::cvt<T>::from(v));
    }
}
