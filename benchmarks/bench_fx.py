"""torchlite.fx speed (issue 11's targets, not tests):
- symbolic_trace of examples/transformer_lm.py's model (TinyGPT: embeddings, the
  TransformerEncoder, the head): target under 50 ms;
- a traced module's call overhead on the quickstart MLP at batch 1: target no more than 1.2x
  the eager module's time;
- torchlite.onnx.export of the same transformer: target under 1 s.

    python benchmarks/bench_fx.py [--repeat 7]

Each number is the median of --repeat runs (a run: the best of many calls), so the machine's
drift hits eager and traced alike: they alternate within each run."""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)

import torchlite as torch  # noqa: E402
from _timing import best_of  # noqa: E402
from torchlite import fx  # noqa: E402




def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=7)
    a = p.parse_args()
    from transformer_lm import TinyGPT
    from quickstart import NeuralNetwork
    gpt = TinyGPT(65, 64)
    fx.symbolic_trace(gpt)                        # the first trace pays for imports
    trace = statistics.median(best_of(lambda: fx.symbolic_trace(gpt), 5)
                              for _ in range(a.repeat))
    mlp = NeuralNetwork()
    traced = fx.symbolic_trace(mlp)
    x = torch.randn(1, 8, 8)
    ratios, eager_t, traced_t = [], [], []
    with torch.no_grad():
        for _ in range(a.repeat):
            e = best_of(lambda: mlp(x), 2000)
            t = best_of(lambda: traced(x), 2000)
            eager_t.append(e)
            traced_t.append(t)
            ratios.append(t / e)
    print("| what | torchlite | target | met? |")
    print("|---|---:|---|---|")
    print(f"| symbolic_trace(TinyGPT of examples/transformer_lm.py) | {trace * 1e3:.2f} ms | "
          f"< 50 ms | {'yes' if trace < 0.05 else 'no'} |")
    r = statistics.median(ratios)
    print(f"| quickstart MLP, batch 1, no_grad: traced / eager call time | {r:.3f}x "
          f"({statistics.median(traced_t) * 1e6:.1f} vs {statistics.median(eager_t) * 1e6:.1f} "
          f"us) | <= 1.2x | {'yes' if r <= 1.2 else 'no'} |")
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("| onnx.export | n/a (onnx not installed) | < 1 s | n/a |")
        return
    gpt.eval()
    codes = torch.zeros(1, 64, dtype=torch.int64)
    t = statistics.median(best_of(lambda: torch.onnx.export(gpt, (codes,), None), 3)
                          for _ in range(a.repeat))
    print(f"| onnx.export(TinyGPT of examples/transformer_lm.py) | {t * 1e3:.1f} ms | < 1 s | "
          f"{'yes' if t < 1 else 'no'} |")


if __name__ == "__main__":
    main()
