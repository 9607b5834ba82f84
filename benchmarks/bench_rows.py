"""Row reductions over the last dimension on one thread, float32: amax, softmax and
log_softmax of 8192 rows of 16, 40, 100, 128 and 200 and of 4096 rows of 65 (classifier
logits, short attention rows), torchlite against PyTorch in the same run (median
microseconds).

    python benchmarks/bench_rows.py
"""
import numpy as np

import torchlite as tl
from _timing import percentile_time


def median_us(fn, n=200):
    return percentile_time(fn, n, 50) * 1e6


def main():
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    tl.set_num_threads(1)
    print("| shape | op | torchlite us | PyTorch us |")
    print("|---|---|---:|---:|")
    for shape in ((8192, 16), (8192, 40), (8192, 100), (4096, 65), (8192, 128), (8192, 200)):
        a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        la = tl.from_numpy(a)
        ta = torch.from_numpy(a) if torch is not None else None
        for name, f, tf in (("amax", lambda t: t.amax(-1), lambda t: t.amax(-1)),
                            ("softmax", lambda t: tl.softmax(t, -1), lambda t: torch.softmax(t, -1)),
                            ("log_softmax", lambda t: tl.log_softmax(t, -1),
                             lambda t: torch.log_softmax(t, -1))):
            mine = median_us(lambda: f(la))
            theirs = f"{median_us(lambda: tf(ta)):.0f}" if ta is not None else "-"
            print(f"| {shape[0]}x{shape[1]} | {name} | {mine:.0f} | {theirs} |")


if __name__ == "__main__":
    main()
