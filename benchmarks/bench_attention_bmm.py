"""The batched products of multi-head attention on the layouts nn.MultiheadAttention gives them:
heads folded into the batch of a (T, B, E) projection, so a head's (T, D) matrix has a row
stride of B*E elements (16 KB for TinyGPT: T=64, B*H=128, D=32), against the same products
on contiguous copies and against PyTorch on the same views, in one run:

    python benchmarks/bench_attention_bmm.py [--dtype float32 float64] [--repeat 7] [--step]

Times are the median of `--repeat` rounds, each the best of a few calls; --step adds the
training step of examples/transformer_lm.py's TinyGPT (batch 32, context 64)."""
import argparse
import os
import statistics
import sys
import time

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)
sys.path.insert(0, os.path.join(_ROOT, "examples"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import best_of  # noqa: E402

T, BH, D = 64, 128, 32


def _layouts(lib, dtype, rng):
    """name -> (a, b, addend or None): the six products of one attention layer's forward and
    backward, on views laid out as multi_head_attention_forward makes them."""
    def t(x):
        return lib.tensor(x) if lib.__name__ == "torchlite" else lib.from_numpy(x)

    def heads():   # (T, B*H, D) contiguous -> (B*H, T, D), strides (D, B*H*D, 1)
        return t(rng.standard_normal((T, BH, D)).astype(dtype)).transpose(0, 1)

    q, k, v, g = heads(), heads(), heads(), heads()
    p = t(rng.standard_normal((BH, T, T)).astype(dtype))
    zero = t(np.zeros((), dtype))
    return {
        "q@k^T (baddbmm)": (q, k.transpose(1, 2), zero),
        "p@v": (p, v, None),
        "g@v^T": (g, v.transpose(1, 2), None),
        "p^T@g": (p.transpose(1, 2), g, None),
        "p@k": (p, k, None),
        "q^T@p": (q.transpose(1, 2), p, None),
    }


def _call(lib, a, b, addend):
    if addend is None:
        return lambda: lib.bmm(a, b)
    return lambda: lib.baddbmm(addend, a, b, beta=0, alpha=0.125)


def _time(fn, repeat):
    fn()
    return statistics.median(best_of(fn, 5) for _ in range(repeat))


def _step_time(repeat):
    import torchlite as tl
    import torchlite.nn.functional as F
    from transformer_lm import TinyGPT
    tl.manual_seed(0)
    m = TinyGPT(65, 64)
    opt = tl.optim.AdamW(m.parameters(), lr=1e-3)
    codes = tl.randint(0, 65, (32, 64))
    target = tl.randint(0, 65, (32, 64))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(m(codes).reshape(-1, 65), target.reshape(-1))
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    times = []
    for _ in range(4 * repeat):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--step", action="store_true")
    args = ap.parse_args()
    import torchlite as tl
    try:
        import torch
        torch.set_num_threads(tl.get_num_threads())
    except ImportError:
        torch = None
    print(f"threads {tl.get_num_threads()}; times in us (median of {args.repeat})")
    print(f"{'case':24} {'dtype':8} {'strided':>9} {'contig':>9} {'torch':>9}")
    for dt in args.dtype:
        ours = _layouts(tl, dt, np.random.default_rng(0))
        theirs = _layouts(torch, dt, np.random.default_rng(0)) if torch else {}
        for name, (a, b, c) in ours.items():
            strided = _time(_call(tl, a, b, c), args.repeat)
            contig = _time(_call(tl, a.contiguous(), b.contiguous(), c), args.repeat)
            ref = _time(_call(torch, *theirs[name]), args.repeat) if torch else float("nan")
            print(f"{name:24} {dt:8} {strided * 1e6:9.0f} {contig * 1e6:9.0f} {ref * 1e6:9.0f}",
                  flush=True)
    if args.step:
        print(f"TinyGPT training step: {_step_time(args.repeat) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
