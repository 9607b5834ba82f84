"""torchlite.func against torch.func on the CPU: per-sample gradients, the toolbox issue's
target case, and the transforms around it.

Each case is timed as the best of --repeat calls of each library, the two libraries' calls
alternating, at the same thread count, and reported as torch_time / torchlite_time (above 1:
torchlite is faster).  The target (issue 19):

    vmap(grad(loss)) of an MLP (64 -> 128 -> 10) over a batch of 64      ratio >= 0.8

    python benchmarks/bench_func.py [--threads N] [--repeat 20]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import best_of  # noqa: E402

BATCH, D_IN, HIDDEN, D_OUT = 64, 64, 128, 10


def cases(lib):
    """(name, call, target ratio) for torchlite or torch (lib), on the same data."""
    rng = np.random.default_rng(0)
    f = lib.func

    def t(a):
        return lib.from_numpy(np.ascontiguousarray(a.astype(np.float32)))

    params = {"w1": t(rng.standard_normal((HIDDEN, D_IN)) * 0.1), "b1": t(np.zeros(HIDDEN)),
              "w2": t(rng.standard_normal((D_OUT, HIDDEN)) * 0.1), "b2": t(np.zeros(D_OUT))}
    x = t(rng.standard_normal((BATCH, D_IN)))
    y = lib.from_numpy(rng.integers(0, D_OUT, BATCH))
    F = lib.nn.functional

    def loss(p, xi, yi):
        h = F.relu(F.linear(xi, p["w1"], p["b1"]))
        return F.cross_entropy(F.linear(h, p["w2"], p["b2"]).unsqueeze(0), yi.unsqueeze(0))

    per_sample = f.vmap(f.grad(loss), in_dims=(None, 0, 0))

    def plain_step():          # the whole batch's gradient, for scale
        def batch_loss(p):
            h = F.relu(F.linear(x, p["w1"], p["b1"]))
            return F.cross_entropy(F.linear(h, p["w2"], p["b2"]), y)
        return f.grad(batch_loss)(params)

    def jacrev_case():
        return f.jacrev(lambda w: F.linear(x[:8], w).tanh().sum(0))(params["w1"])

    w_h = t(rng.standard_normal((64, 32)) * 0.2)
    x_h = t(rng.standard_normal(32))

    def hessian_case():             # a scalar of 32 inputs: the Jacobian of its gradient
        return f.hessian(lambda v: (w_h @ v).tanh().pow(2).sum() + v.sin().sum())(x_h)

    def jacobian_vectorized():      # torch.autograd.functional's vectorize=True
        return lib.autograd.functional.jacobian(lambda v: (w_h @ v).tanh(), x_h, vectorize=True)

    fwad = lib.autograd.forward_ad
    blk = {"w1": t(rng.standard_normal((512, 256)) * 0.05), "b1": t(np.zeros(512)),
           "w2": t(rng.standard_normal((256, 512)) * 0.05), "b2": t(np.zeros(256)),
           "g": t(np.ones(256)), "beta": t(np.zeros(256))}
    x_blk, t_blk = t(rng.standard_normal((128, 256))), t(rng.standard_normal((128, 256)))

    def mlp_block(v):              # LayerNorm -> Linear -> GELU -> Linear, plus the residual
        h = F.layer_norm(v, (256,), blk["g"], blk["beta"])
        return v + F.linear(F.gelu(F.linear(h, blk["w1"], blk["b1"])), blk["w2"], blk["b2"])

    k1, k2 = t(rng.standard_normal((16, 3, 3, 3)) * 0.2), t(rng.standard_normal((32, 16, 3, 3)) * 0.1)
    img, t_img = t(rng.standard_normal((16, 3, 32, 32))), t(rng.standard_normal((16, 3, 32, 32)))

    def cnn(v):                    # conv, batch norm, relu, pool, conv, softmax
        h = F.max_pool2d(F.relu(F.batch_norm(F.conv2d(v, k1, padding=1), None, None, training=True)), 2)
        return F.log_softmax(F.conv2d(h, k2, padding=1).mean((2, 3)), 1)

    def forward_ad(fn, primal, tangent):
        def run():
            with fwad.dual_level():
                return fwad.unpack_dual(fn(fwad.make_dual(primal, tangent))).tangent
        return run

    return [("vmap(grad) per-sample MLP, batch 64", lambda: per_sample(params, x, y), 0.8),
            ("forward AD: MLP block (LN, GELU), 128x256", forward_ad(mlp_block, x_blk, t_blk), None),
            ("forward AD: small CNN (conv, BN, pool)", forward_ad(cnn, img, t_img), None),
            ("grad of the batch loss (one backward)", plain_step, None),
            ("jacrev of tanh(linear), 128 outputs", jacrev_case, None),
            ("hessian of a scalar of 32 inputs", hessian_case, None),
            ("autograd.functional.jacobian vectorize", jacobian_vectorized, None)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=None,
                    help="thread count for both libraries (default: torchlite's)")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()

    import torch

    import torchlite

    if args.threads:
        torchlite.set_num_threads(args.threads)
    threads = torchlite.get_num_threads()
    torch.set_num_threads(threads)
    print(f"threads: {threads} (torchlite OpenMP, torch.set_num_threads); best of {args.repeat}")
    print(f"{'case':42s} {'torchlite ms':>13s} {'torch ms':>10s} {'ratio':>7s} {'target':>7s}")
    missed = 0
    for (name, ours_fn, target), (_, theirs_fn, _) in zip(cases(torchlite), cases(torch)):
        ours_fn(), theirs_fn()                                  # warm up
        t_ours = t_theirs = float("inf")
        for _ in range(args.repeat):
            t_ours = min(t_ours, best_of(ours_fn, 1))
            t_theirs = min(t_theirs, best_of(theirs_fn, 1))
        ratio = t_theirs / t_ours
        mark = ""
        if target is not None:
            mark = f"{target:7.2f}" + ("" if ratio >= target else "  NOT met")
            missed += ratio < target
        print(f"{name:42s} {t_ours * 1e3:13.3f} {t_theirs * 1e3:10.3f} {ratio:7.2f} {mark}")
    print("all targets met" if not missed else f"{missed} target(s) not met")


if __name__ == "__main__":
    main()
