"""What a bias costs in F.linear and F.conv2d: the time with a bias over the time without, for
torchlite and PyTorch in the same run, and torchlite's time against PyTorch's.  torchlite's
GEMM adds the bias in its store (kernels/gemm.h's addend), so a bias should cost close to
nothing; before that it was copied into the output and read back (3-4% at common sizes, 60%
for a short inner dimension).

    python benchmarks/bench_bias.py [--repeat 5]
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torchlite as tl  # noqa: E402
import torchlite.nn.functional as F  # noqa: E402
from _timing import best_of  # noqa: E402

LINEAR = [(2048, 128, 512), (64, 512, 512), (8192, 32, 4096), (4096, 1024, 1024)]
CONV = [(8, 64, 48, 64, 3), (8, 32, 96, 32, 3), (32, 16, 28, 32, 5), (8, 128, 24, 128, 1)]


def median_of(fns, repeat, n):
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            times[k].append(best_of(fn, n))
    return {k: statistics.median(v) for k, v in times.items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    try:
        import torch
        torch.set_num_threads(tl.get_num_threads())
    except ImportError:
        torch = None
    print(f"threads: {tl.get_num_threads()}\n")
    print("| op | shape | torchlite with bias | without | bias cost | torch bias cost | "
          "torchlite vs torch (with bias) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    cases = []
    for m, k, n in LINEAR:
        x, w, b = tl.randn(m, k), tl.randn(n, k), tl.randn(n)
        cases.append(("linear", f"{m}x{k} -> {n}", lambda x=x, w=w, b=b: F.linear(x, w, b),
                      lambda x=x, w=w: F.linear(x, w), (x, w, b), "linear", {}))
    for nb, c, h, o, ks in CONV:
        x, w, b = tl.randn(nb, c, h, h), tl.randn(o, c, ks, ks), tl.randn(o)
        kw = {"padding": ks // 2}
        cases.append(("conv2d", f"{nb}x{c}x{h}x{h}, {o} {ks}x{ks}",
                      lambda x=x, w=w, b=b, kw=kw: F.conv2d(x, w, b, **kw),
                      lambda x=x, w=w, kw=kw: F.conv2d(x, w, None, **kw), (x, w, b), "conv2d", kw))
    for op, shape, with_b, without_b, tensors, name, kw in cases:
        fns = {"b": with_b, "nb": without_b}
        if torch is not None:
            tx, tw, tb = (torch.from_numpy(t.numpy()) for t in tensors)
            tf = getattr(torch.nn.functional, name)
            fns["tb"] = lambda tf=tf, tx=tx, tw=tw, tb=tb, kw=kw: tf(tx, tw, tb, **kw)
            fns["tnb"] = lambda tf=tf, tx=tx, tw=tw, kw=kw: tf(tx, tw, None, **kw)
        t = median_of(fns, a.repeat, 5)
        tcost = f"{t['tb'] / t['tnb']:.3f}x" if torch is not None else "-"
        vs = f"{t['tb'] / t['b']:.2f}x" if torch is not None else "-"
        print(f"| {op} | {shape} | {t['b'] * 1e3:.3f} ms | {t['nb'] * 1e3:.3f} ms | "
              f"{t['b'] / t['nb']:.3f}x | {tcost} | {vs} |")


if __name__ == "__main__":
    main()
