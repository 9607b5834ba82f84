"""The cost of sizing parallel regions to the free cores (kernels/busy_cpus.h) on an idle
machine: the same workloads timed with the adaptation on and off, alternating in one process
(so that the machine's drift hits both alike), median of the rounds.

    python benchmarks/bench_adaptive_idle.py [--rounds 15]
"""
import argparse
import statistics
import time

import torchlite as tl
from torchlite import nn
from torchlite._core import parallel


def workloads():
    tl.manual_seed(0)
    a, b = tl.randn(1024, 1024), tl.randn(1024, 1024)
    x = tl.randn(4096, 1024)
    cnn = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(64 * 49, 10))
    opt = tl.optim.SGD(cnn.parameters(), lr=0.01)
    img, lab = tl.randn(64, 1, 28, 28), tl.randint(0, 10, (64,))
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    mopt = tl.optim.SGD(mlp.parameters(), lr=0.01)
    xb, yb = tl.randn(64, 784), tl.randint(0, 10, (64,))

    def cnn_step():
        opt.zero_grad()
        nn.functional.cross_entropy(cnn(img), lab).backward()
        opt.step()

    def mlp_step():
        mopt.zero_grad()
        nn.functional.cross_entropy(mlp(xb), yb).backward()
        mopt.step()
    return {"matmul 1024": lambda: a @ b, "softmax 4096x1024": lambda: x.softmax(1),
            "CNN step b64": cnn_step, "MLP step b64": mlp_step}


def seconds_per_call(fn, min_time=0.2):
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < min_time:
        fn()
        n += 1
    return (time.perf_counter() - t0) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    cases = workloads()
    times = {(name, on): [] for name in cases for on in (True, False)}
    for fn in cases.values():
        fn()                                   # warm up
    for _ in range(args.rounds):
        for name, fn in cases.items():
            for on in (True, False):
                parallel.set_adaptive_threads(on)
                times[(name, on)].append(seconds_per_call(fn))
    parallel.set_adaptive_threads(True)
    print(f"{tl.get_num_threads()} threads, median of {args.rounds} alternating rounds")
    print("| workload | adaptation on (ms) | off (ms) | on / off |\n|---|---:|---:|---:|")
    for name in cases:
        on, off = (statistics.median(times[(name, v)]) * 1e3 for v in (True, False))
        print(f"| {name} | {on:.3f} | {off:.3f} | {on / off:.3f} |")


if __name__ == "__main__":
    main()
