"""Contiguous (NCHW) against channels_last (NHWC) layouts: a 3x3 convolution, max and average
pooling, and a small CNN's training step, in torchlite and PyTorch, each in both layouts, same
inputs, same process.  Each time is the 20th percentile of 30 calls, the better of two rounds
that alternate the libraries and layouts (this machine is shared and noisy).

    python benchmarks/bench_channels_last.py [--threads 1 2]

Needs PyTorch.  torchlite's convolution reads an NHWC input in place and writes an NHWC
result when its input or weight is channels_last (as PyTorch does); max and average pooling
and their backward passes run NHWC kernels (torchlite/_core/pool.pyx)."""
import argparse

import numpy as np

from _timing import percentile_time

import torchlite


def _cases(lib, cl):
    """name -> a no-argument callable, for library `lib` (torchlite or torch) in layout cl."""
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    fmt = lib.channels_last if cl else lib.contiguous_format
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((32, 64, 16, 16)).astype(np.float32))
    x = x.contiguous(memory_format=fmt)
    w = lib.tensor(rng.standard_normal((64, 64, 3, 3)).astype(np.float32) * 0.05)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 8 * 8, 10)).to(memory_format=fmt)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    img = lib.tensor(rng.standard_normal((64, 3, 32, 32)).astype(np.float32)).contiguous(memory_format=fmt)
    labels = lib.tensor(rng.integers(0, 10, 64))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(img), labels).backward()
        opt.step()

    def nograd(fn):
        def run():
            with lib.no_grad():
                fn()
        return run

    return {
        "conv2d 64->64 3x3 16x16, batch 32": nograd(lambda: F.conv2d(x, w, padding=1)),
        "max_pool2d 2x2 of 32x64x16x16": nograd(lambda: F.max_pool2d(x, 2)),
        "avg_pool2d 2x2 of 32x64x16x16": nograd(lambda: F.avg_pool2d(x, 2)),
        "small CNN training step, batch 64": step,
    }


def main():
    import torch
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    print("| case | threads | torchlite NCHW us | torchlite NHWC us | torch NCHW us | torch NHWC us |"
          " torchlite NHWC vs NCHW | NHWC: torch/torchlite |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for nt in args.threads:
        torch.set_num_threads(nt)
        torchlite.set_num_threads(nt)
        fns = {(lib.__name__, cl): _cases(lib, cl) for lib in (torchlite, torch) for cl in (False, True)}
        best = {}
        for _ in range(2):
            for key, cases in fns.items():
                for name, fn in cases.items():
                    t = percentile_time(fn, 30, 20)
                    best[key + (name,)] = min(best.get(key + (name,), t), t)
        for name in fns["torchlite", False]:
            a, b = best["torchlite", False, name], best["torchlite", True, name]
            c, d = best["torch", False, name], best["torch", True, name]
            print(f"| {name} | {nt} | {a * 1e6:.0f} | {b * 1e6:.0f} | {c * 1e6:.0f} | {d * 1e6:.0f} | "
                  f"{a / b:.2f}x | {d / b:.2f}x |")


if __name__ == "__main__":
    main()
