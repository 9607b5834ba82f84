"""torchlite.compile speed against eager torchlite, and torch.compile against eager torch in the
same run (issue 12's targets, not tests):
- a chain of elementwise ops over 16M float32, gelu(x * w + b) * sigmoid(y) - z: compiled
  at least 3x eager torchlite, and faster than torch.compile (inductor) on this machine;
- a GELU MLP block (Linear-GELU-Linear + residual + LayerNorm, batch 64 x 512) training
  step: compiled at least 1.25x eager torchlite;
- a training step of examples/transformer_lm.py's model: compiled at least 1.15x eager;
  both next to torch.compile's speed-up over eager torch (the goal: a larger speed-up);
- compile time: a cold compile of the Transformer LM under 3 s; a recompile after a guard
  failure (a new batch size) under 1 s.
Then, with no target, the row fusion (softmax and keepdim means fused with the elementwise
ops around them), forward + backward: a causal attention's scale + mask + softmax, nn.RMSNorm,
and a LayerNorm written out as means (as model code often has it); and inference of
torchlite.vision models (batch 8, 96 x 96, under no_grad), compiled against eager.

    python benchmarks/bench_compile.py [--repeat 5] [--no-torch] [--options cpp_codegen ...]

Each time is the median over --repeat rounds of the best of a few calls; within a round the
contenders alternate, so the machine's drift hits them alike.  torch.compile needs PyTorch and
a C++ compiler; where it fails its column says why."""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)

import torchlite as tl  # noqa: E402
from _timing import best_of  # noqa: E402
import torchlite.nn as nn  # noqa: E402
import torchlite.nn.functional as F  # noqa: E402




OPTIONS = {}                # --options: torchlite.compile's options for every compiled case


def compile_tl(fn):
    return tl.compile(fn, options=OPTIONS or None)


def rounds(fns, repeat, n):
    """Median time of each fn over `repeat` rounds (each the best of n calls)."""
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            if fn is not None:
                times[k].append(best_of(fn, n))
    return {k: statistics.median(v) if v else None for k, v in times.items()}


# ---- the cases -----------------------------------------------------------------------------------
def chain_tl(x, w, b, y, z):
    return F.gelu(x * w + b) * tl.sigmoid(y) - z


def _torch_block(torch):
    class TBlock(torch.nn.Module):
        def __init__(self, d=512, h=512):
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(d, h), torch.nn.Linear(h, d)
            self.ln = torch.nn.LayerNorm(d)

        def forward(self, x):
            return self.ln(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))
    return TBlock()


def _torch_gpt(torch, vocab, context, d_model=128, heads=4, layers=2, dropout=0.1):
    """examples/transformer_lm.py's TinyGPT written with torch.nn."""
    class TorchGPT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = torch.nn.Embedding(vocab, d_model)
            self.positions = torch.nn.Embedding(context, d_model)
            block = torch.nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout,
                                                     activation="gelu", batch_first=True,
                                                     norm_first=True)
            self.blocks = torch.nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
            self.norm = torch.nn.LayerNorm(d_model)
            self.head = torch.nn.Linear(d_model, vocab)

        def forward(self, codes):
            t = codes.shape[1]
            x = self.tokens(codes) + self.positions(torch.arange(t))
            mask = torch.nn.Transformer.generate_square_subsequent_mask(t)
            x = self.blocks(x, mask=mask, is_causal=True)
            return self.head(self.norm(x))
    return TorchGPT()


class TlBlock(nn.Module):
    def __init__(self, d=512, h=512):
        super().__init__()
        self.fc1, self.fc2, self.ln = nn.Linear(d, h), nn.Linear(h, d), nn.LayerNorm(d)

    def forward(self, x):
        return self.ln(x + self.fc2(F.gelu(self.fc1(x))))


def attention_scores(a, mask, F_):
    return F_.softmax(a * 0.125 + mask, dim=-1)


def layer_norm_by_hand(x, w, b):
    mu = x.mean(-1, keepdim=True)
    d = x - mu
    return d * ((d * d).mean(-1, keepdim=True) + 1e-5).rsqrt() * w + b


def fwd_bwd(fn, *args):
    def step():
        y = fn(*args)
        y.backward(y.detach() * 0 + 1)
    return step


def train_step(model, opt, x, y, loss_fn):
    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def try_torch_compile(torch, fn, *example):
    """torch.compile(fn), warmed up on example; or the reason it fails here."""
    try:
        c = torch.compile(fn)
        c(*example)
        return c, None
    except Exception as e:          # no C++ compiler, an unsupported build, ...
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--options", nargs="*", default=[],
                   help="torchlite.compile options to turn on for every case, e.g. cpp_codegen")
    a = p.parse_args()
    OPTIONS.update((k, True) for k in a.options)
    if OPTIONS:
        print(f"torchlite.compile options: {OPTIONS}\n")
    torch = None
    if not a.no_torch:
        try:
            import torch
            torch.set_num_threads(tl.get_num_threads())
        except ImportError:
            torch = None
    rows = []

    # 1. the elementwise chain over 16M float32
    n = 4096
    g = tl.Generator().manual_seed(0)
    x, y, z = (tl.randn(n, n, generator=g) for _ in range(3))
    w, b = tl.randn(n, generator=g), tl.randn(n, generator=g)
    compiled = compile_tl(chain_tl)
    compiled(x, w, b, y, z)
    fns = {"tl": lambda: chain_tl(x, w, b, y, z), "tlc": lambda: compiled(x, w, b, y, z)}
    why = None
    if torch is not None:
        tx, ty, tz, tw, tb = (torch.from_numpy(t.numpy()) for t in (x, y, z, w, b))

        def chain_t(x, w, b, y, z):
            return torch.nn.functional.gelu(x * w + b) * torch.sigmoid(y) - z
        tc, why = try_torch_compile(torch, chain_t, tx, tw, tb, ty, tz)
        fns["t"] = lambda: chain_t(tx, tw, tb, ty, tz)
        fns["tc"] = (lambda: tc(tx, tw, tb, ty, tz)) if tc is not None else None
    t = rounds(fns, a.repeat, 3)
    rows.append(("gelu(x*w+b)*sigmoid(y)-z, 16M float32, forward", t, 3.0, why))

    # 2. the GELU MLP block training step
    tl.manual_seed(0)
    m = TlBlock()
    mc = TlBlock()
    mc.load_state_dict(m.state_dict())
    mcc = compile_tl(mc)
    xb, yb = tl.randn(64, 512), tl.randn(64, 512)
    s_e = train_step(m, tl.optim.SGD(m.parameters(), lr=1e-3), xb, yb, F.mse_loss)
    s_c = train_step(mcc, tl.optim.SGD(mcc.parameters(), lr=1e-3), xb, yb, F.mse_loss)
    s_c()
    fns = {"tl": s_e, "tlc": s_c}
    why = None
    if torch is not None:
        tm = _torch_block(torch)
        tmc_model = _torch_block(torch)
        tmc_model.load_state_dict(tm.state_dict())
        txb, tyb = torch.from_numpy(xb.numpy()), torch.from_numpy(yb.numpy())
        fns["t"] = train_step(tm, torch.optim.SGD(tm.parameters(), lr=1e-3), txb, tyb,
                              torch.nn.functional.mse_loss)
        tmc, why = try_torch_compile(torch, tmc_model, txb)
        fns["tc"] = train_step(tmc, torch.optim.SGD(tmc_model.parameters(), lr=1e-3), txb, tyb,
                               torch.nn.functional.mse_loss) if tmc is not None else None
        if fns["tc"] is not None:
            fns["tc"]()
    t = rounds(fns, a.repeat, 10)
    rows.append(("GELU MLP block 64x512, training step", t, 1.25, why))

    # 3. the Transformer LM training step (examples/transformer_lm.py's TinyGPT, its sizes)
    from transformer_lm import TinyGPT
    tl.manual_seed(0)
    gpt = TinyGPT(65, 64)
    gptc_model = TinyGPT(65, 64)
    gptc_model.load_state_dict(gpt.state_dict())
    codes = tl.randint(0, 65, (32, 64))
    target = tl.randint(0, 65, (32, 64))

    def ce(out, y):
        return F.cross_entropy(out.reshape(-1, 65), y.reshape(-1))
    t0 = time.perf_counter()
    gptc = compile_tl(gptc_model)
    step_c = train_step(gptc, tl.optim.AdamW(gptc.parameters(), lr=1e-3), codes, target, ce)
    step_c()
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    gptc(codes[:16])                       # a new batch size: the guards fail, it recompiles
    recompile = time.perf_counter() - t0
    step_e = train_step(gpt, tl.optim.AdamW(gpt.parameters(), lr=1e-3), codes, target, ce)
    step_e()
    fns = {"tl": step_e, "tlc": step_c}
    why = None
    if torch is not None:
        tg, tgc_model = _torch_gpt(torch, 65, 64), _torch_gpt(torch, 65, 64)
        tgc_model.load_state_dict(tg.state_dict())
        tcodes, ttarget = (torch.from_numpy(t.numpy()) for t in (codes, target))

        def tce(out, y):
            return torch.nn.functional.cross_entropy(out.reshape(-1, 65), y.reshape(-1))
        fns["t"] = train_step(tg, torch.optim.AdamW(tg.parameters(), lr=1e-3), tcodes, ttarget, tce)
        tgc, why = try_torch_compile(torch, tgc_model, tcodes)
        fns["tc"] = train_step(tgc, torch.optim.AdamW(tgc_model.parameters(), lr=1e-3), tcodes,
                               ttarget, tce) if tgc is not None else None
        if fns["tc"] is not None:
            fns["tc"]()
    t = rounds(fns, a.repeat, 3)
    rows.append(("Transformer LM (examples/transformer_lm.py), training step", t, 1.15, why))

    # 4. the row fusion, forward + backward (no target)
    row_rows = []
    for name, make_tl, make_t in _row_cases(torch):
        fns = {"tl": fwd_bwd(*make_tl(False)), "tlc": fwd_bwd(*make_tl(True))}
        fns["tlc"]()
        why = None
        if torch is not None:
            fns["t"] = fwd_bwd(*make_t(None))
            fn_c, *args = make_t(None)
            tc, why = try_torch_compile(torch, fn_c, *args)
            fns["tc"] = fwd_bwd(tc, *args) if tc is not None else None
            if fns["tc"] is not None:
                fns["tc"]()
        row_rows.append((name, rounds(fns, a.repeat, 3), None, why))

    print("| case | eager torchlite | compiled torchlite | speed-up (target) | eager torch | "
          "torch.compile | torch speed-up |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for name, t, target, why in rows:
        su = t["tl"] / t["tlc"]
        met = "met" if su >= target else "NOT met"
        te, tc = t.get("t"), t.get("tc")
        tsu = f"{te / tc:.2f}x" if te and tc else "-"
        print(f"| {name} | {t['tl'] * 1e3:.2f} ms | {t['tlc'] * 1e3:.2f} ms | {su:.2f}x "
              f"(>= {target}x: {met}) | {te * 1e3:.2f} ms | "
              f"{(f'{tc * 1e3:.2f} ms' if tc else (why or '-'))} | {tsu} |"
              if te else
              f"| {name} | {t['tl'] * 1e3:.2f} ms | {t['tlc'] * 1e3:.2f} ms | {su:.2f}x "
              f"(>= {target}x: {met}) | - | {why or '-'} | - |")
    print()
    print("Row fusion, forward + backward (no target):\n")
    print("| case | eager torchlite | compiled torchlite | speed-up | eager torch | "
          "torch.compile | torch speed-up |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, t, _, why in row_rows:
        te, tc = t.get("t"), t.get("tc")
        print(f"| {name} | {t['tl'] * 1e3:.2f} ms | {t['tlc'] * 1e3:.2f} ms | "
              f"{t['tl'] / t['tlc']:.2f}x | {f'{te * 1e3:.2f} ms' if te else '-'} | "
              f"{f'{tc * 1e3:.2f} ms' if tc else (why or '-')} | "
              f"{f'{te / tc:.2f}x' if te and tc else '-'} |")
    print()
    print("torchlite.vision models, inference (batch 8, 3 x 96 x 96, no_grad; no target):\n")
    print("| model | eager torchlite | compiled torchlite | speed-up |")
    print("|---|---:|---:|---:|")
    from torchlite.vision import models
    for name in ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0"):
        tl.manual_seed(0)
        vm = getattr(models, name)(num_classes=10).eval()
        vc = compile_tl(vm)
        xv = tl.randn(8, 3, 96, 96)
        with tl.no_grad():
            vc(xv)
            t = rounds({"tl": lambda: vm(xv), "tlc": lambda: vc(xv)}, a.repeat, 2)
        print(f"| {name} | {t['tl'] * 1e3:.1f} ms | {t['tlc'] * 1e3:.1f} ms | "
              f"{t['tl'] / t['tlc']:.2f}x |")
    print()
    print(f"| compile time | seconds | target |\n|---|---:|---|\n"
          f"| cold compile + first training step, Transformer LM | {cold:.2f} s | < 3 s: "
          f"{'met' if cold < 3 else 'NOT met'} |\n"
          f"| recompile after a guard failure (new batch size), Transformer LM | "
          f"{recompile:.2f} s | < 1 s: {'met' if recompile < 1 else 'NOT met'} |")


def _row_cases(torch):
    """(name, make_tl(compiled) -> (fn, *args), make_t(_) -> (fn, *args)) of the row cases."""
    cases = []
    for shape in ((32, 4, 64, 64), (16, 8, 128, 128)):
        g = tl.Generator().manual_seed(0)
        a0 = tl.randn(*shape, generator=g)
        m0 = tl.triu(tl.full(shape[-2:], float("-inf")), 1)

        def make_tl(compiled, a0=a0, m0=m0):
            a = a0.detach().requires_grad_()
            fn = (lambda a, m: attention_scores(a, m, F))
            return (compile_tl(fn) if compiled else fn), a, m0

        def make_t(_, a0=a0, m0=m0):
            a = torch.from_numpy(a0.numpy()).requires_grad_()
            return (lambda a, m: attention_scores(a, m, torch.nn.functional)), a, \
                torch.from_numpy(m0.numpy())
        cases.append((f"softmax(a * 0.125 + causal mask), a {'x'.join(map(str, shape))}",
                      make_tl, make_t))
    for shape in ((2048, 512), (8192, 1024)):
        g = tl.Generator().manual_seed(1)
        x0 = tl.randn(*shape, generator=g)

        def make_tl(compiled, x0=x0, n=shape[-1]):
            m = nn.RMSNorm(n, eps=1e-6)
            return (compile_tl(m) if compiled else m), x0.detach().requires_grad_()

        def make_t(_, x0=x0, n=shape[-1]):
            return torch.nn.RMSNorm(n, eps=1e-6), torch.from_numpy(x0.numpy()).requires_grad_()
        cases.append((f"nn.RMSNorm, x {'x'.join(map(str, shape))}", make_tl, make_t))

        def make_tl_ln(compiled, x0=x0, n=shape[-1]):
            w, b = tl.ones(n, requires_grad=True), tl.zeros(n, requires_grad=True)
            fn = compile_tl(layer_norm_by_hand) if compiled else layer_norm_by_hand
            return fn, x0.detach().requires_grad_(), w, b

        def make_t_ln(_, x0=x0, n=shape[-1]):
            w, b = torch.ones(n, requires_grad=True), torch.zeros(n, requires_grad=True)
            return layer_norm_by_hand, torch.from_numpy(x0.numpy()).requires_grad_(), w, b
        cases.append((f"LayerNorm written as means, x {'x'.join(map(str, shape))}",
                      make_tl_ln, make_t_ln))
    return cases


if __name__ == "__main__":
    main()
