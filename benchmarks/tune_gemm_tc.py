"""Tile configurations of the tensor-core GEMM (cuda_kernels/gemm.cu, tl_gemm_tc) on one GPU,
against PyTorch's cuBLAS in the same process: for each configuration and operand layout, the
float16 and bfloat16 product of 4096 x 4096 matrices, timed with CUDA events (median of
several samples) and checked against torch's result.  For choosing _kernels.TC_CONFIGS on a
GPU session (issue 15's target: at least 0.5x cuBLAS):

    python benchmarks/tune_gemm_tc.py [--size 4096] [--configs "128,256,64,2,4,3;128,128,32,2,2,4"]

A configuration is BM,BN,BK,WARPS_M,WARPS_N,STAGES[,GROUP_M]: GROUP_M > 1 launches the tiles
in groups of GROUP_M rows (gemm.cu), for the L2 cache.
"""
import argparse
import statistics
import time


def timed(sync, event, fn, reps=10, samples=5):
    fn()
    sync()
    out = []
    for _ in range(samples):
        start, end = event(), event()
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / 1e3 / reps)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--configs", default="128,128,32,2,2,4;128,128,32,2,2,4,8;128,128,64,2,2,3;"
                                         "128,128,64,2,2,3,8;128,128,64,2,2,4,8;128,256,32,2,4,4,8")
    a = ap.parse_args()
    import numpy as np
    import torch

    import torchlite as tl
    from torchlite.cuda import _matmul
    configs = [tuple(int(x) for x in c.split(",")) for c in a.configs.split(";") if c]
    n = a.size
    flops = 2.0 * n ** 3
    rng = np.random.default_rng(0)
    x32, y32 = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    print("| dtype | layout | config (BM, BN, BK, WARPS_M, WARPS_N, STAGES) | TFLOP/s | torch TFLOP/s | "
          "ratio | rel. error vs torch |")
    print("|---|---|---|---:|---:|---:|---:|")
    for dname in ("float16", "bfloat16"):
        tdt, ldt = getattr(torch, dname), getattr(tl, dname)
        tx, ty = torch.from_numpy(x32).cuda().to(tdt), torch.from_numpy(y32).cuda().to(tdt)
        lx, ly = tl.from_numpy(x32).cuda().to(ldt), tl.from_numpy(y32).cuda().to(ldt)
        lyt = ly.mT.contiguous()
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        t_torch = timed(torch.cuda.synchronize, lambda: torch.cuda.Event(enable_timing=True),
                        lambda: tx @ ty)
        ref = (tx @ ty).float()
        layouts = {"A k, B n (a @ b)": (lambda: lx @ ly),
                   "A k, B k (a @ b.T)": (lambda: lx @ lyt.mT),
                   "A m, B n (a.T @ b)": (lambda: lx.mT @ ly)}
        refs = {"A k, B n (a @ b)": ref, "A k, B k (a @ b.T)": ref,
                "A m, B n (a.T @ b)": (tx.mT @ ty).float()}
        for cfg in configs:
            _matmul._tc_config = lambda *args, cfg=cfg: cfg
            _matmul._plan.cache_clear()
            for lname, fn in layouts.items():
                if lname != "A k, B n (a @ b)" and cfg != configs[0]:
                    continue        # the other layouts at the first configuration only
                try:
                    t0 = time.perf_counter()
                    out = fn()
                    tl.cuda.synchronize()
                    first = time.perf_counter() - t0
                    got = torch.from_numpy(out.float().cpu().numpy()).cuda()
                    r = refs[lname]
                    err = float((got - r).norm() / r.norm())
                    t = timed(tl.cuda.synchronize, lambda: tl.cuda.Event(enable_timing=True), fn)
                    print(f"| {dname} | {lname} | {cfg} | {flops / t / 1e12:.1f} | "
                          f"{flops / t_torch / 1e12:.1f} | {t_torch / t:.3f}x | {err:.2e} |"
                          f"{'' if err < 1e-2 else ' **WRONG**'} (first call {first:.2f} s)", flush=True)
                except Exception as e:       # a configuration that fails to compile or launch
                    print(f"| {dname} | {lname} | {cfg} | failed: {type(e).__name__}: {str(e)[:200]} |||", flush=True)


if __name__ == "__main__":
    main()
