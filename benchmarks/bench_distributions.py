"""torchlite.distributions against torch.distributions on the CPU, through the public APIs of
both, on 1M elements.

Each case is timed as the best of --repeat calls of each library, the two libraries' calls
alternating (so a change in the machine's load hits both), with both at the same thread
count (torchlite through OpenMP, PyTorch through torch.set_num_threads), and reported as
torch_time / torchlite_time (above 1: torchlite is faster).  The targets are the distributions issue's:

    Normal.log_prob, 1M float32 values, scalar loc/scale      ratio >= 1.0
    Categorical.sample, 1M draws from 10 categories           ratio >= 1.0

    python benchmarks/bench_distributions.py [--threads N] [--repeat 20] [--all]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import best_of  # noqa: E402

N = 1_000_000


def cases(lib, all_cases):
    """(name, call, target ratio) for torchlite or torch (lib), on the same data."""
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal(N).astype(np.float32))
    d = lib.distributions
    normal = d.Normal(lib.tensor(0.5), lib.tensor(2.0))
    cat = d.Categorical(probs=lib.from_numpy(rng.random(10).astype(np.float32)))
    out = [("Normal.log_prob 1M float32", lambda: normal.log_prob(x), 1.0),
           ("Categorical.sample 1M from 10", lambda: cat.sample((N,)), 1.0)]
    if all_cases:
        full = d.Normal(lib.full((N,), 0.5), lib.full((N,), 2.0))
        rows = d.Categorical(logits=lib.from_numpy(rng.standard_normal((N // 10, 10)).astype(np.float32)))
        gamma = d.Gamma(lib.full((N,), 2.5), lib.tensor(1.0))
        beta = d.Beta(lib.full((N,), 2.5), lib.full((N,), 0.5))
        binom = d.Binomial(lib.full((N,), 50.0), lib.full((N,), 0.3))
        k = lib.from_numpy(rng.integers(0, 10, N // 10))
        out += [("Normal.log_prob 1M, 1M params", lambda: full.log_prob(x), None),
                ("Normal.rsample 1M", lambda: normal.rsample((N,)), None),
                ("Categorical.sample 100k rows of 10", lambda: rows.sample(), None),
                ("Categorical.log_prob 100k rows of 10", lambda: rows.log_prob(k), None),
                ("Gamma.sample 1M (a = 2.5)", lambda: gamma.sample(), None),
                ("Gamma.log_prob 1M", lambda: gamma.log_prob(x.abs() + 0.1), None),
                ("Beta.sample 1M", lambda: beta.sample(), None),
                ("Binomial.sample 1M (n = 50)", lambda: binom.sample(), None)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=None,
                    help="thread count for both libraries (default: torchlite's)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--all", action="store_true", help="more cases than the two targets")
    args = ap.parse_args()

    import torch

    import torchlite

    if args.threads:
        torchlite.set_num_threads(args.threads)
    threads = torchlite.get_num_threads()
    torch.set_num_threads(threads)
    print(f"threads: {threads} (torchlite OpenMP, torch.set_num_threads); best of {args.repeat}")
    print(f"{'case':40s} {'torchlite ms':>13s} {'torch ms':>10s} {'ratio':>7s} {'target':>7s}")
    failed = 0
    ours, theirs = cases(torchlite, args.all), cases(torch, args.all)
    for (name, ours_fn, target), (_, theirs_fn, _) in zip(ours, theirs):
        ours_fn(), theirs_fn()                                  # warm up
        t_ours = t_theirs = float("inf")
        for _ in range(args.repeat):
            t_ours = min(t_ours, best_of(ours_fn, 1))
            t_theirs = min(t_theirs, best_of(theirs_fn, 1))
        ratio = t_theirs / t_ours
        mark = ""
        if target is not None:
            ok = ratio >= target
            failed += not ok
            mark = f"{target:7.2f}" + ("" if ok else "  MISSED")
        print(f"{name:40s} {t_ours * 1e3:13.3f} {t_theirs * 1e3:10.3f} {ratio:7.2f} {mark}")
    print("all targets met" if not failed else f"{failed} target(s) missed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
