"""The three products of a 3x3, padding-1 convolution -- forward, input gradient, weight
gradient -- each on its own, torchlite's kernels (torchlite._core.conv) against PyTorch's
(aten.convolution and aten.convolution_backward with one output selected), same inputs, same
process.  Each time is the 20th percentile of 40 calls, the better of two rounds that
alternate the libraries (this machine is shared and noisy).  The whole-layer cases with their
targets are bench.py's conv2d_* ones; this script says which direction the time goes to.

    python benchmarks/bench_conv.py [--threads 1 2] [--shapes 32,32,64,16 ...] [--no-winograd]

A shape is N,C_in,C_out,H (square planes).  --no-winograd times the im2col path where the
Winograd one would run (3x3 layers with 16+ channels), to compare the two.  Needs PyTorch.
"""
import argparse

import numpy as np

from _timing import percentile_time

import torchlite
from torchlite._core import conv as C

DEFAULT_SHAPES = ["32,32,64,16", "32,64,64,8", "32,128,128,8", "32,64,64,32"]


def measure(shape, threads):
    import torch
    torch.set_num_threads(threads)
    torchlite.set_num_threads(threads)
    n, ci, co, h = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, ci, h, h)).astype(np.float32)
    w = (rng.standard_normal((co, ci, 3, 3)) * 0.1).astype(np.float32)
    gy = rng.standard_normal((n, co, h, h)).astype(np.float32)
    tx, tw, tgy = map(torch.from_numpy, (x, w, gy))
    lx, lw, lgy = (torchlite.from_numpy(a)._data for a in (x, w, gy))
    one = (1, 1)

    def torch_backward(mask):
        return lambda: torch.ops.aten.convolution_backward(
            tgy, tx, tw, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, mask)

    fns = {
        "forward": (lambda: C.conv2d_forward(lx, lw, None, one, one, one, 1),
                    lambda: torch.ops.aten.convolution(tx, tw, None, [1, 1], [1, 1], [1, 1],
                                                       False, [0, 0], 1)),
        "input grad": (lambda: C.conv2d_input_grad(lgy, lw, h, h, one, one, one, 1),
                       torch_backward([True, False, False])),
        "weight grad": (lambda: C.conv2d_weight_grad(lx, lgy, 3, 3, one, one, one, 1),
                        torch_backward([False, True, False])),
    }
    best = {}
    with torch.no_grad():
        for _ in range(2):
            for name, (tl_fn, torch_fn) in fns.items():
                for lib, fn in (("torchlite", tl_fn), ("torch", torch_fn)):
                    t = percentile_time(fn, 40, 20)
                    best[name, lib] = min(best.get((name, lib), t), t)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES)
    ap.add_argument("--no-winograd", action="store_true")
    args = ap.parse_args()
    C.use_winograd = not args.no_winograd
    print("| N, C_in, C_out, H | threads | direction | torchlite us | torch us | torch/torchlite |")
    print("|---|---:|---|---:|---:|---:|")
    for s in args.shapes:
        shape = tuple(int(v) for v in s.split(","))
        for nt in args.threads:
            best = measure(shape, nt)
            for name in ("forward", "input grad", "weight grad"):
                a, b = best[name, "torchlite"], best[name, "torch"]
                print(f"| {s} | {nt} | {name} | {a * 1e6:.0f} | {b * 1e6:.0f} | {b / a:.2f}x |")


if __name__ == "__main__":
    main()
