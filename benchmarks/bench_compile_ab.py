"""The two training steps of bench_compile.py (the GELU MLP block, examples/transformer_lm.py's
model) eager and compiled, alternating in pairs, so the machine's drift hits both alike; the
median of the pairs' ratios is printed (no target here: issue 12's are in bench_compile.py).

    python benchmarks/bench_compile_ab.py [--pairs 30]
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)

import torchlite as tl  # noqa: E402
import torchlite.nn.functional as F  # noqa: E402
from bench_compile import TlBlock, train_step  # noqa: E402


def pairs(eager, compiled, n, inner):
    """(median eager/compiled ratio, median eager ms, median compiled ms) over n pairs."""
    for _ in range(3):
        eager(), compiled()
    ratios, te, tc = [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        for _ in range(inner):
            eager()
        t1 = time.perf_counter()
        for _ in range(inner):
            compiled()
        t2 = time.perf_counter()
        ratios.append((t1 - t0) / (t2 - t1))
        te.append((t1 - t0) / inner * 1e3)
        tc.append((t2 - t1) / inner * 1e3)
    return statistics.median(ratios), statistics.median(te), statistics.median(tc)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=30)
    a = p.parse_args()
    tl.manual_seed(0)
    m, mc = TlBlock(), TlBlock()
    mc.load_state_dict(m.state_dict())
    x, y = tl.randn(64, 512), tl.randn(64, 512)
    se = train_step(m, tl.optim.SGD(m.parameters(), lr=1e-3), x, y, F.mse_loss)
    cm = tl.compile(mc)
    sc = train_step(cm, tl.optim.SGD(cm.parameters(), lr=1e-3), x, y, F.mse_loss)
    print("GELU MLP block step: compiled speed-up %.3f (eager %.3f ms, compiled %.3f ms)"
          % pairs(se, sc, a.pairs, 20))
    from transformer_lm import TinyGPT
    tl.manual_seed(0)
    g, gc = TinyGPT(65, 64), TinyGPT(65, 64)
    gc.load_state_dict(g.state_dict())
    codes, target = tl.randint(0, 65, (32, 64)), tl.randint(0, 65, (32, 64))

    def ce(out, t):
        return F.cross_entropy(out.reshape(-1, 65), t.reshape(-1))
    se = train_step(g, tl.optim.AdamW(g.parameters(), lr=1e-3), codes, target, ce)
    cg = tl.compile(gc)
    sc = train_step(cg, tl.optim.AdamW(cg.parameters(), lr=1e-3), codes, target, ce)
    print("Transformer LM step: compiled speed-up %.3f (eager %.2f ms, compiled %.2f ms)"
          % pairs(se, sc, max(a.pairs * 2 // 3, 1), 3))


if __name__ == "__main__":
    main()
