/* Running torchlite's CUDA kernels on the CPU, for tests on machines without a GPU.
 *
 * Included (g++ -include) before a cuda_kernels/*.cu file compiled as C++20 with
 * TL_HOST_EMULATION.  A launch runs its blocks one after another; the threads of a block are
 * CPU threads, so __syncthreads is a barrier, __shared__ variables are statics (one block at a
 * time uses them), warp shuffles exchange through a block-wide buffer between two barriers,
 * and atomics are std::atomic_ref.  A thread that returns early leaves the barrier, as exited
 * threads stop counting on a GPU.  Only the kernels' logic is checked this way: timing,
 * memory ordering between blocks that run at once and the fp16/bf16 paths are not.
 * tests/fake_cuda_kernels.py compiles one small library per kernel with it and calls
 * tl_emu_run with the launch's own argument array. */
#ifndef TL_EMULATION_H
#define TL_EMULATION_H
#include <atomic>
#include <barrier>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace tl_emu {
struct Block {
    std::barrier<>* barrier;
    unsigned* exchange;        /* one word per thread, for the shuffles */
};
inline thread_local Block block;
inline thread_local unsigned linear_tid;
}  // namespace tl_emu

inline void __syncthreads() { tl_emu::block.barrier->arrive_and_wait(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

/* lane i of each width-wide segment of a warp reads lane i + delta of its segment, or keeps
 * its own value past the segment's end; every thread of the block must call it */
inline unsigned __shfl_down_sync(unsigned, unsigned v, unsigned delta, int width) {
    const unsigned t = tl_emu::linear_tid, lane = t % 32, seg = lane % (unsigned)width;
    tl_emu::block.exchange[t] = v;
    __syncthreads();
    const unsigned r = seg + delta < (unsigned)width ? tl_emu::block.exchange[t + delta] : v;
    __syncthreads();
    return r;
}

template <class T> inline T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
inline int atomicOr(int* p, int v) { return std::atomic_ref<int>(*p).fetch_or(v); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }

namespace tl_emu {
template <class... A, std::size_t... I>
std::tuple<A...> unpack(void** params, std::index_sequence<I...>) {
    return std::tuple<A...>(*static_cast<std::remove_reference_t<A>*>(params[I])...);
}

/* the kernel over the grid, with the arguments the driver would read from `params`: one CPU
 * thread per thread of a block for the whole launch (making threads costs more than most
 * kernels), running the blocks one after another; a fresh block barrier for each block, since
 * threads that return early leave theirs */
template <class... A>
void launch(void (*kernel)(A...), dim3 grid, dim3 blk, void** params) {
    const auto args = unpack<A...>(params, std::index_sequence_for<A...>{});
    const unsigned n = blk.x * blk.y * blk.z;
    std::vector<unsigned> exchange(n);
    std::optional<std::barrier<>> block_barrier;
    block_barrier.emplace((std::ptrdiff_t)n);
    auto next_block = [&]() noexcept { block_barrier.emplace((std::ptrdiff_t)n); };
    std::barrier<decltype(next_block)> block_done((std::ptrdiff_t)n, next_block);
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (unsigned t = 0; t < n; t++)
        threads.emplace_back([&, t] {
            block = Block{&*block_barrier, exchange.data()};
            linear_tid = t;
            threadIdx = dim3{t % blk.x, (t / blk.x) % blk.y, t / (blk.x * blk.y)};
            blockDim = blk;
            gridDim = grid;
            for (unsigned bz = 0; bz < grid.z; bz++)
                for (unsigned by = 0; by < grid.y; by++)
                    for (unsigned bx = 0; bx < grid.x; bx++) {
                        blockIdx = dim3{bx, by, bz};
                        std::apply(kernel, args);
                        block_barrier->arrive_and_drop();
                        block_done.arrive_and_wait();
                    }
        });
    for (auto& th : threads) th.join();
}
}  // namespace tl_emu
#endif
