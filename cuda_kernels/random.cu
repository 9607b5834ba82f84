/* Random sampling kernels on the Philox4x32-10 stream: the CPU's distributions with the
 * CPU's stream layout (tl_philox.cuh), so a seed and offset give the same numbers on both
 * devices whatever the launch shape.  Thread t computes block q.base + t; launch
 * ceil(n / G) * 16 threads (G = 64 for one-word samples, 32 for two-word ones, as the CPU's
 * tl_rnd_words) and advance the generator's offset by that many blocks.
 * Compile with --fmad=false (see tl_philox.cuh).
 *
 * Name expressions: tl_random<tl::rnd::NormalF32>, tl_random<tl::rnd::Bernoulli<tl::i64> >. */
#include "tl_common.cuh"
#include "tl_philox.cuh"

template <class Dist>
__global__ void tl_random(tl::rnd::Req q, tl::u64 nthreads) {
    for (tl::u64 t = (tl::u64)tl::global_thread(); t < nthreads; t += (tl::u64)tl::global_threads())
        Dist::run(q, t);
}
