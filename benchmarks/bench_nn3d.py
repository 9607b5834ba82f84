"""The 3-d layers built on the 2-d kernels (nn.functional's conv3d, conv_transpose3d,
max_pool3d, avg_pool3d, grid_sample, ctc_loss) against PyTorch, forward and forward+backward,
in one process on the same inputs: the ratio torchlite time / torch time, median of rounds
that alternate the two libraries (these machines are shared and noisy).  No speed target:
the numbers say what composing the 3-d ops from 2-d kernels costs.

    python benchmarks/bench_nn3d.py [--rounds 5] [--threads N]
"""
import argparse
import statistics
import time

import numpy as np

import torchlite as tl
import torchlite.nn.functional as F


def _seconds(fn, min_time=0.1):
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < min_time:
        fn()
        n += 1
    return (time.perf_counter() - t0) / n


def cases():
    rng = np.random.default_rng(0)

    def arrays(*shapes):
        return [rng.standard_normal(s).astype(np.float32) for s in shapes]

    out = {}
    x, w = arrays((4, 16, 16, 32, 32), (32, 16, 3, 3, 3))
    out["conv3d 4x16x16x32x32, 32x3x3x3, pad 1"] = (x, w, dict(padding=1), "conv3d")
    x, w = arrays((2, 32, 8, 16, 16), (32, 64, 3, 3, 3))
    out["conv_transpose3d 2x32x8x16x16 -> 64, stride 2"] = (x, w, dict(stride=2, padding=1,
                                                                       output_padding=1),
                                                           "conv_transpose3d")
    x, = arrays((4, 32, 16, 32, 32))
    out["max_pool3d 4x32x16x32x32, k2"] = (x, None, dict(kernel_size=2), "max_pool3d")
    out["avg_pool3d 4x32x16x32x32, k3 s2 p1"] = (x, None, dict(kernel_size=3, stride=2,
                                                               padding=1), "avg_pool3d")
    x, = arrays((8, 16, 64, 64))
    g = rng.uniform(-1, 1, (8, 64, 64, 2)).astype(np.float32)
    out["grid_sample bilinear 8x16x64x64"] = (x, g, dict(align_corners=False), "grid_sample")
    return out


def run_case(L, F_, x, w, kw, name, backward):
    xt = L.tensor(x, requires_grad=backward)
    args = () if w is None else (L.tensor(w, requires_grad=backward),)

    def call():
        y = getattr(F_, name)(xt, *args, **kw)
        if backward:
            y.sum().backward()
    return call


def ctc_case(L, F_, backward, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    T, N, C, S = 100, 16, 30, 30
    lp = rng.standard_normal((T, N, C)).astype(np.float32)
    lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
    tg = rng.integers(1, C, (N, S))
    lens = rng.integers(10, S, N)
    lpt = L.tensor(lp, requires_grad=backward)
    tgt, ilt, tlt = L.tensor(tg), L.tensor(np.full(N, T)), L.tensor(lens)

    def call():
        y = F_.ctc_loss(lpt, tgt, ilt, tlt)
        if backward:
            y.backward()
    return call


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args()
    import torch
    if a.threads:
        torch.set_num_threads(a.threads)
        tl.set_num_threads(a.threads)
    rows = []
    for label, (x, w, kw, name) in cases().items():
        for backward in (False, True):
            fns = [run_case(L, F_, x, w, kw, name, backward)
                   for L, F_ in ((tl, F), (torch, torch.nn.functional))]
            rows.append((label + (" fwd+bwd" if backward else " fwd"), fns))
    for backward in (False, True):
        fns = [ctc_case(L, F_, backward) for L, F_ in ((tl, F), (torch, torch.nn.functional))]
        rows.append(("ctc_loss T100 N16 C30 S30" + (" fwd+bwd" if backward else " fwd"), fns))
    print(f"{'case':58s} {'torchlite ms':>12s} {'torch ms':>9s} {'ratio':>6s}")
    for label, (ours, ref) in rows:
        ratios, t_ours, t_ref = [], [], []
        for _ in range(a.rounds):
            to, tr = _seconds(ours), _seconds(ref)
            t_ours.append(to)
            t_ref.append(tr)
            ratios.append(to / tr)
        print(f"{label:58s} {1e3 * statistics.median(t_ours):12.2f} "
              f"{1e3 * statistics.median(t_ref):9.2f} {statistics.median(ratios):6.2f}", flush=True)


if __name__ == "__main__":
    main()
