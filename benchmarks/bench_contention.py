"""Training speed when another process keeps one core busy (issue 20's OpenMP target).

Runs examples/quickstart.py's training loop (the README's demo, more epochs so that it lasts a
few seconds) with torchlite and, where installed, PyTorch as the backend, on an idle machine
and again while a spinning child process keeps one core busy, and reports each library's
busy/idle ratio (the target: torchlite's at most 1.5).  torchlite's default (parallel regions
sized to the cores other processes leave free, kernels/busy_cpus.h) is run beside the plain
OpenMP behaviour (TORCHLITE_ADAPTIVE_THREADS=0) and OMP_WAIT_POLICY=passive, for comparison.

    python benchmarks/bench_contention.py [--epochs 150] [--repeat 3] [--markdown FILE]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = [  # (label, backend, extra environment)
    ("torchlite (default: regions sized to the free cores)", "torchlite", {}),
    ("torchlite, TORCHLITE_ADAPTIVE_THREADS=0 (plain OpenMP)", "torchlite",
     {"TORCHLITE_ADAPTIVE_THREADS": "0"}),
    ("torchlite, TORCHLITE_ADAPTIVE_THREADS=0 OMP_WAIT_POLICY=passive", "torchlite",
     {"TORCHLITE_ADAPTIVE_THREADS": "0", "OMP_WAIT_POLICY": "passive"}),
    ("PyTorch", "torch", {}),
]


def train_seconds(backend, env, epochs):
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "quickstart.py"), "--epochs", str(epochs),
         "--checkpoint", f"/tmp/bench_contention_{os.getpid()}.pt", "--plot", ""],
        env=dict(os.environ, TORCHLITE_EXAMPLE_BACKEND=backend, **env),
        capture_output=True, text=True, check=True).stdout
    return float(re.search(r"trained \d+ epochs in ([0-9.]+) s", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=150)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--markdown", help="write the table to this file")
    args = ap.parse_args()
    try:
        import torch  # noqa: F401
        configs = CONFIGS
    except ImportError:
        configs = [c for c in CONFIGS if c[1] != "torch"]
    idle = {label: statistics.median(train_seconds(b, e, args.epochs) for _ in range(args.repeat))
            for label, b, e in configs}
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = {label: statistics.median(train_seconds(b, e, args.epochs)
                                         for _ in range(args.repeat))
                for label, b, e in configs}
    finally:
        spinner.kill()
        spinner.wait()
    lines = [f"quickstart.py --epochs {args.epochs}, training loop only, median of "
             f"{args.repeat} runs, {os.cpu_count()} cores; busy = one other process spinning",
             "", "| configuration | idle (s) | one core busy (s) | busy / idle |",
             "|---|---:|---:|---:|"]
    for label, _, _ in configs:
        lines.append(f"| {label} | {idle[label]:.2f} | {busy[label]:.2f} | "
                     f"{busy[label] / idle[label]:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
