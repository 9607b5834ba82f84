#!/usr/bin/env python
"""GPU speed of torchlite against PyTorch, both on CUDA, measured in the same run (issue 6).

    python benchmarks/bench_gpu.py                       # all of it: 2-5 minutes on an H100
    python benchmarks/bench_gpu.py --quick               # small sizes: a smoke run
    python benchmarks/bench_gpu.py --cases matmul 'sum_' --repeat 5
    python benchmarks/bench_gpu.py --from-json benchmarks/RESULTS-gpu.json   # re-render only

Sections: float32 matmul with TF32 off in torch (torchlite has none), elementwise add, mul and
exp, sums, the CPU benchmarks' MLP and CNN training steps (the cases and targets live in
benchmarks/_cases_gpu.py), and the first-use NVRTC compile cost: cold (an empty
TORCHLITE_KERNEL_CACHE, a fresh process) against warm (the disk cache, a fresh process).

How it measures: both libraries run in one worker process on the same GPU, interleaved round
by round (torchlite then torch, then torch then torchlite, ...).  A sample is a loop of
enough calls to last --min-sample seconds, timed by the library's own CUDA events after a
synchronize (the wall clock around it is kept too); the figure is the median of --repeat
samples, after warm-up calls that also absorb NVRTC compiles.  Inputs are random (never
zeros), drawn once with NumPy and copied to each library.  Before timing, each result is
checked against torch's on a few slices (head, middle, tail) of two calls' outputs, computed
after the first call's output was filled with NaN and freed, so that memory a kernel fails
to write shows up.
A torchlite failure is recorded as "error: ..." and the run goes on; a crash, a hang or a
broken CUDA context ends the worker, and a new one runs the cases left.  No case starts
after --deadline seconds, so a run fits a device lease; the results files are rewritten
after every case, so a run cut short still leaves what it measured.
"""
import argparse
import collections
import datetime
import gc
import json
import math
import os
import platform
import queue
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from _cases_gpu import PROFILES, SECTIONS, TIME_UNITS, _count, make_cases  # noqa: E402
from bench import fmt, machine_info, write_json  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "RESULTS-gpu.md")
PREFIX = "@@ "            # marks the worker's and probes' messages on their stdout
LIB_ORDER = ("torchlite", "torch")
CHECK_CALLS = 2           # calls whose results are compared (also the first warm-up)
MAX_INNER = 100000
SETTINGS = ("quick", "repeat", "min_sample", "case_budget", "case_timeout", "deadline",
            "compile_timeout")

# the first-use compile rows: case name -> (probe mode, {row: description})
COMPILE_CASES = {
    "compile_first_use": ("ops", {
        "add": "`a + b`, float32, 64K elements: first call (compile, module load, launch)",
        "matmul": "`a @ b`, float32, 256x256: first call (compile, module load, launch)"}),
    "compile_nvrtc": ("direct", {
        "add": "NVRTC: the float32 add kernel alone (elementwise.cu, 1 variant)",
        "gemm": "NVRTC: the float32 GEMM kernels alone (gemm.cu, 2 tile configs)"}),
}


# ---- libraries on a device ---------------------------------------------------------------------
class Lib:
    """torchlite or torch on one device (PyTorch's API): tensors from NumPy, synchronize, and a
    timed loop.  `unavailable` holds why the library cannot run here (None when it can)."""

    def __init__(self, name, mod, device="cuda", unavailable=None):
        self.name, self.mod, self.device = name, mod, device
        self.on_cuda = device.startswith("cuda")
        self.unavailable = unavailable

    def tensor(self, x):
        return self.mod.from_numpy(x).to(self.device)

    def sync(self):
        if self.on_cuda:
            self.mod.cuda.synchronize()

    def empty_cache(self):
        if self.on_cuda:
            self.mod.cuda.empty_cache()

    def time_loop(self, fn, n):
        """(event seconds, wall seconds) per call over n calls after a synchronize.  The event
        figure is None off CUDA, or when the events measured nothing (a stand-in driver)."""
        self.sync()
        if not self.on_cuda:
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            return None, (time.perf_counter() - t0) / n
        start = self.mod.cuda.Event(enable_timing=True)
        end = self.mod.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        for _ in range(n):
            fn()
        end.record()
        end.synchronize()
        wall = (time.perf_counter() - t0) / n
        event = start.elapsed_time(end) / 1e3 / n
        return (event if event > 0 else None), wall


def failure(e):
    """A JSON-able record of an exception: the message for the table, the traceback's end for
    whoever debugs it."""
    msg = f"{type(e).__name__}: {e}".strip()
    return {"status": "error", "detail": msg[:400],
            "traceback": "".join(traceback.format_exception(e))[-3000:]}


# ---- correctness ---------------------------------------------------------------------------------
PROBE = 4096          # elements compared from each of the head, middle and tail


def probe_values(out):
    """A few slices of a result (head, middle, tail of its elements) as float64 NumPy."""
    flat = out.detach().reshape(-1)
    n = int(flat.shape[0])
    k = min(PROBE, n)
    mid = max(0, n // 2 - k // 2)
    parts = [flat[:k]] + ([flat[mid:mid + k], flat[n - k:]] if n > k else [])
    return np.concatenate([p.float().cpu().numpy().astype(np.float64).reshape(-1) for p in parts])


def rel_error(got, ref):
    """max |got - ref| / max |ref| (inf for a shape difference or a NaN)."""
    if got.shape != ref.shape:
        return math.inf
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
    err = err / scale if scale > 0 else err
    return err if math.isfinite(err) else math.inf


def check(probes, tol):
    """torchlite's probe against torch's: {'status': 'ok' | 'mismatch' | 'n/a', ...}."""
    got, ref = probes.get("torchlite"), probes.get("torch")
    if got is None or ref is None:
        return {"status": "n/a"}
    err = rel_error(got, ref)
    return {"status": "ok" if err <= tol else "mismatch",
            "rel_err": err if math.isfinite(err) else None, "tol": tol,
            "compared": int(ref.size)}


# ---- measuring one case --------------------------------------------------------------------------
def poison(out):
    """Fill a result with NaN before it is freed: the caching allocators hand its block to the
    next result of that size, where an element the kernel fails to write stays NaN and fails
    the check.  (A training step's loss, part of a graph, is left alone.)"""
    if out.is_floating_point() and not out.requires_grad:
        out.fill_(float("nan"))


def prepare(case, lib, xs, min_sample):
    """Build the case for one library, time its first call on its own (compiles land there),
    run the checked calls over poisoned memory, and pick how many calls make a sample."""
    fn = case.build(lib, xs)
    t0 = time.perf_counter()
    out = fn()
    lib.sync()
    first_s = time.perf_counter() - t0
    poison(out)
    del out
    outs = [fn() for _ in range(CHECK_CALLS)]
    probe = np.concatenate([probe_values(o) for o in outs])
    del outs
    _, one = lib.time_loop(fn, 1)
    inner = max(1, min(MAX_INNER, math.ceil(min_sample / max(one, 1e-7))))
    if inner > 1:
        lib.time_loop(fn, inner)          # warm at the sample's length (clocks up)
    return fn, {"status": "ok", "first_s": first_s, "inner": inner}, probe


def measure(live, repeat, budget):
    """Interleaved rounds, one sample per library each, until `repeat` rounds or the budget
    (at least 3 rounds).  live: {name: (lib, fn, inner)}.  Returns ({name: [(event, wall)]},
    {name: failure record})."""
    samples = {name: [] for name in live}
    failed = {}
    stop = time.perf_counter() + budget
    for r in range(repeat):
        order = list(live) if r % 2 == 0 else list(reversed(list(live)))
        for name in order:
            if name in failed:
                continue
            lib, fn, inner = live[name]
            try:
                samples[name].append(lib.time_loop(fn, inner))
            except Exception as e:  # noqa: BLE001  (a failing library stops, the other goes on)
                failed[name] = failure(e)
        if r >= 2 and time.perf_counter() > stop:
            break
    return samples, failed


def natural_value(unit, work, seconds):
    if unit in TIME_UNITS:
        return seconds * 1e3
    return work / seconds / 1e9


def summarise(case, pairs):
    events = [e for e, _ in pairs if e is not None]
    walls = sorted(w for _, w in pairs)
    timer = "events" if len(events) == len(pairs) else "wall clock"
    s = sorted(events) if timer == "events" else walls
    med = statistics.median(s)
    q = statistics.quantiles(s, n=4) if len(s) >= 2 else [med, med, med]
    return {"timer": timer, "median_s": med, "min_s": s[0], "iqr_rel": (q[2] - q[0]) / med,
            "samples_s": s, "wall_median_s": statistics.median(walls),
            "value": natural_value(case.unit, case.work, med)}


def case_stub(case):
    return {"section": case.section, "unit": case.unit, "work": case.work, "desc": case.desc,
            "libs": {}, "check": {"status": "n/a"}}


def run_case(case, libs, repeat=10, min_sample=0.025, budget=15.0, seed=0):
    """Build, check and time one case in every library; every failure is caught and recorded."""
    t0 = time.perf_counter()
    res = case_stub(case)
    xs = case.make_inputs(np.random.default_rng(seed))
    live, probes = {}, {}
    for lib in libs:
        if lib.unavailable:
            res["libs"][lib.name] = {"status": "error", "detail": lib.unavailable}
            continue
        try:
            fn, info, probes[lib.name] = prepare(case, lib, xs, min_sample)
            live[lib.name] = (lib, fn, info["inner"])
            res["libs"][lib.name] = info
        except Exception as e:  # noqa: BLE001
            res["libs"][lib.name] = failure(e)
    del xs
    res["check"] = check(probes, case.tol)
    samples, failed = measure(live, repeat, budget)
    for name, pairs in samples.items():
        if name in failed:
            res["libs"][name] = failed[name]
        elif pairs:
            res["libs"][name].update(summarise(case, pairs))
    res["wall_s"] = time.perf_counter() - t0
    return res


# ---- the worker process --------------------------------------------------------------------------
def _driver_text(v):
    """cuDriverGetVersion's 13000 as '13.0'."""
    return f"{v // 1000}.{v % 1000 // 10}" if isinstance(v, int) else "–"


def _try(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001  (a missing detail never stops the run)
        return f"unknown ({type(e).__name__}: {e})"


def load_torchlite():
    """(Lib, details) for torchlite on CUDA."""
    try:
        import torchlite
    except Exception as e:  # noqa: BLE001
        return Lib("torchlite", None, unavailable=f"import failed: {e}"), {}
    cuda = torchlite.cuda
    status = cuda._status()
    env = {"version": torchlite.__version__, "file": torchlite.__file__, "status": status,
           "driver": _driver_text(status.get("driver")), "nvrtc": status.get("nvrtc")}
    from torchlite.cuda import _cache
    env["kernel_cache"] = _cache.cache_dir()
    if not status["available"]:
        return Lib("torchlite", torchlite, unavailable=f"CUDA unavailable: {status['reason']}"), env
    env["device_name"] = _try(lambda: cuda.get_device_name(0))
    env["capability"] = _try(lambda: list(cuda.get_device_capability(0)))
    env["properties"] = _try(lambda: repr(cuda.get_device_properties(0)))
    env["kernel_target"] = _try(lambda: list(_kernel_target(torchlite)))
    return Lib("torchlite", torchlite), env


def _kernel_target(torchlite):
    """(kind, arch) NVRTC builds for on device 0: ('cubin', 'sm_90')."""
    from torchlite.cuda import _nvrtc
    return _nvrtc.target_for(*torchlite.cuda.get_device_capability(0))


def load_torch():
    """(Lib, details) for torch on CUDA, with TF32 off (torchlite computes in float32)."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return Lib("torch", None, unavailable=f"import failed: {e}"), {}
    env = {"version": torch.__version__, "cuda": torch.version.cuda}
    if not torch.cuda.is_available():
        return Lib("torch", torch, unavailable=f"torch {torch.__version__} sees no CUDA GPU"), env
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    env.update(device_name=_try(lambda: torch.cuda.get_device_name(0)),
               cudnn=_try(torch.backends.cudnn.version),
               matmul_allow_tf32=torch.backends.cuda.matmul.allow_tf32,
               cudnn_allow_tf32=torch.backends.cudnn.allow_tf32)
    return Lib("torch", torch), env


def context_healthy(libs):
    """After a failure: whether CUDA still works in this process (an illegal address breaks
    the context for both libraries, which share it)."""
    try:
        for lib in libs:
            if not lib.unavailable:
                lib.sync()
        torch = next((lib for lib in libs if lib.name == "torch" and not lib.unavailable), None)
        if torch is not None:
            return float((torch.mod.ones(8, device=torch.device) * 2).sum().item()) == 16.0
        return True
    except Exception:  # noqa: BLE001
        return False


def copy_ceiling(libs, n, min_sample):
    """GB/s (bytes read plus written) of torch copying n floats device to device: the memory
    ceiling the GB/s rows can be read against."""
    torch = next((lib for lib in libs if lib.name == "torch" and not lib.unavailable), None)
    if torch is None or not torch.on_cuda:
        return None
    try:
        src = torch.mod.randn(n, device=torch.device)
        dst = torch.mod.empty_like(src)

        def fn():
            dst.copy_(src)
        _, one = torch.time_loop(fn, 1)
        inner = max(1, math.ceil(min_sample / max(one, 1e-7)))
        times = [event or wall for event, wall in (torch.time_loop(fn, inner) for _ in range(5))]
        return 8.0 * n / statistics.median(times) / 1e9
    except Exception as e:  # noqa: BLE001
        return failure(e)["detail"]


def release(libs):
    gc.collect()
    for lib in libs:
        if not lib.unavailable:
            try:
                lib.empty_cache()
            except Exception:  # noqa: BLE001
                pass


def worker_main(args):
    """Run the named cases and report each on stdout (PREFIX + JSON, one line each)."""
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)        # what the libraries print goes to stderr, not into the messages

    def send(**msg):
        reply.write(PREFIX + json.dumps(msg, default=str) + "\n")

    (tl, tl_env), (th, th_env) = load_torchlite(), load_torch()
    libs = [tl, th]
    profile = "quick" if args.quick else "full"
    n = PROFILES[profile]["ewise"]
    send(type="env", env={"torchlite": tl_env, "torch": th_env, "python": platform.python_version(),
                          "copy_floats": n, "copy_gbs": copy_ceiling(libs, n, args.min_sample)})
    release(libs)
    cases = {c.name: c for c in make_cases(profile)}
    for name in args._names.split(","):
        send(type="start", case=name)
        res = run_case(cases[name], libs, args.repeat, args.min_sample, args.case_budget)
        send(type="result", case=name, result=res)
        release(libs)
        failed = any(r.get("status") == "error" for r in res["libs"].values())
        if failed and not context_healthy(libs):
            send(type="unhealthy", case=name)
            sys.exit(3)


# ---- the compile probes (each a fresh process) --------------------------------------------------
def probe_arch(torchlite):
    """The architecture to compile for: the device's, or sm_90 where there is no GPU."""
    if torchlite.cuda.is_available():
        return _kernel_target(torchlite)[1], None
    return "sm_90", "no usable GPU here: compiled for sm_90 without loading"


def _timed(stats, fn):
    """(seconds, kernels compiled, kernels read from disk) of fn()."""
    before = dict(stats)
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0, stats["compiles"] - before["compiles"],
            stats["disk_hits"] - before["disk_hits"])


def direct_rows(torchlite):
    """Compile (or read from the disk cache) the add and GEMM kernels the way the backend
    does: one NVRTC program per kernel variant."""
    from torchlite.cuda import _cache, _kernels as K
    arch, note = probe_arch(torchlite)
    stats = _cache.default_cache().stats
    jobs = {"add": ("elementwise.cu", [K.binary_kernel("ADD", K.FLOAT32)]),
            "gemm": ("gemm.cu", [K.gemm_kernel(K.FLOAT32, c) for c in K.GEMM_CONFIGS[K.FLOAT32]])}
    rows = {}
    for row, (source, names) in jobs.items():
        try:
            s, compiles, hits = _timed(stats, lambda: [_cache.program(source, (n,), arch)
                                                       for n in names])
            rows[row] = {"first_s": s, "compiles": compiles, "disk_hits": hits, "arch": arch,
                         "note": note}
        except Exception as e:  # noqa: BLE001
            rows[row] = failure(e)
    return rows


def first_use_rows(torchlite):
    """The first `a + b` and `a @ b` on CUDA in this process: compile (or disk read), module
    load and launch; then a second call, the steady cost; each result checked on the host."""
    from torchlite.cuda import _cache
    cuda = torchlite.cuda
    stats = _cache.default_cache().stats
    rng = np.random.default_rng(0)
    host = {"add": [rng.standard_normal(1 << 16, dtype=np.float32) for _ in range(2)],
            "matmul": [rng.standard_normal((256, 256), dtype=np.float32) for _ in range(2)]}
    t0 = time.perf_counter()
    cuda.init()
    dev = {k: [torchlite.from_numpy(x).to("cuda") for x in v] for k, v in host.items()}
    cuda.synchronize()
    init_s = time.perf_counter() - t0
    ops = {"add": (lambda a, b: a + b, lambda a, b: a + b),
           "matmul": (lambda a, b: a @ b, lambda a, b: a.astype(np.float64) @ b)}
    rows = {}
    for row, (op, ref_op) in ops.items():
        try:
            a, b = dev[row]
            out = []
            first_s, compiles, hits = _timed(stats, lambda: (out.append(op(a, b)),
                                                             cuda.synchronize()))
            steady_s, _, _ = _timed(stats, lambda: (op(a, b), cuda.synchronize()))
            ref = ref_op(*host[row])
            err = rel_error(out[0].cpu().numpy().astype(np.float64), ref)
            rows[row] = {"first_s": first_s, "steady_s": steady_s, "compiles": compiles,
                         "disk_hits": hits, "init_s": init_s,
                         "check": "ok" if err <= 1e-4 else f"mismatch (rel err {err:.3g})"}
        except Exception as e:  # noqa: BLE001
            rows[row] = failure(e)
    return rows


def compile_probe_main(mode):
    t0 = time.perf_counter()
    import torchlite
    from torchlite.cuda import _cache
    out = {"mode": mode, "import_s": time.perf_counter() - t0, "cache_dir": _cache.cache_dir()}
    try:
        out["rows"] = direct_rows(torchlite) if mode == "direct" else first_use_rows(torchlite)
    except Exception as e:  # noqa: BLE001  (e.g. CUDA unavailable: cuda.init raises)
        out["error"] = failure(e)["detail"]
    print(PREFIX + json.dumps(out, default=str), flush=True)


def _last_message(text):
    lines = [ln for ln in text.splitlines() if ln.startswith(PREFIX)]
    return json.loads(lines[-1][len(PREFIX):]) if lines else None


def child_env(kernel_cache):
    """A worker's or probe's environment: this checkout's torchlite first on the path (it
    need not be installed), its own kernel cache folder, unbuffered output."""
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, PYTHONPATH=path, TORCHLITE_KERNEL_CACHE=kernel_cache,
                PYTHONUNBUFFERED="1")


def run_probe(mode, cache_dir, timeout):
    """One probe in a fresh process with TORCHLITE_KERNEL_CACHE=cache_dir."""
    env = child_env(cache_dir)
    cmd = [sys.executable, os.path.abspath(__file__), "--_compile-probe", mode]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {timeout:.0f} s (killed)"}
    msg = _last_message(r.stdout)
    if msg is None:
        tail = " ".join(r.stderr.strip().splitlines()[-3:])
        return {"error": f"probe exited with code {r.returncode}: {tail}"[:400]}
    msg["process_s"] = time.perf_counter() - t0
    return msg


def run_compile_cases(names, args, report, folder, deadline, save):
    """Each compile case: a probe with an empty cache folder (cold), then the same probe again
    in a new process over the folder it filled (warm)."""
    for name in names:
        mode, _ = COMPILE_CASES[name]
        cache = os.path.join(folder, mode)
        res = {"mode": mode, "cache_dir": cache}
        for phase in ("cold", "warm"):
            left = deadline - time.perf_counter()
            if left <= 0:
                res[phase] = {"error": deadline_text(args)}
                continue
            res[phase] = run_probe(mode, cache, min(args.compile_timeout, left + 30))
        report["compile"][name] = res
        progress(name, "compile: " + compile_progress(res))
        save()


def compile_progress(res):
    parts = []
    for phase in ("cold", "warm"):
        p = res.get(phase, {})
        rows = p.get("rows") or {}
        parts.append(f"{phase} " + (p["error"] if "error" in p else ", ".join(
            f"{k}={v['first_s']:.3f}s" if "first_s" in v else f"{k}=error"
            for k, v in rows.items())))
    return "; ".join(parts)


# ---- the parent: drives workers, survives their deaths ------------------------------------------
class Worker:
    """A worker process over a list of cases; its messages arrive on a queue, its stderr is
    passed through (and its end kept for error messages)."""

    def __init__(self, names, args, env):
        cmd = [sys.executable, os.path.abspath(__file__), "--_worker", "--_names", ",".join(names),
               "--repeat", str(args.repeat), "--min-sample", str(args.min_sample),
               "--case-budget", str(args.case_budget)] + (["--quick"] if args.quick else [])
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.messages = queue.Queue()
        self.tail = collections.deque(maxlen=12)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        for line in self.proc.stdout:
            if line.startswith(PREFIX):
                self.messages.put(json.loads(line[len(PREFIX):]))
        self.messages.put(None)            # end of output: the worker exited

    def _read_stderr(self):
        for line in self.proc.stderr:
            sys.stderr.write(line)
            self.tail.append(line.rstrip())

    def next(self, timeout):
        """The next message; None when the worker has exited, 'timeout' when none came."""
        try:
            return self.messages.get(timeout=max(timeout, 0.1))
        except queue.Empty:
            return "timeout"

    def exit_text(self):
        code = self.proc.wait()
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        last = " / ".join(list(self.tail)[-3:])
        return f"{how}{'; last output: ' + last if last else ''}"

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def mark_failed(report, cases, name, text):
    """Record a case the worker could not finish: torchlite's cell carries the reason."""
    res = case_stub(cases[name])
    res["libs"]["torchlite"] = {"status": "error", "detail": text}
    report["cases"][name] = res


def run_worker_once(pending, args, report, cases, deadline, save, env):
    """One worker over the pending cases; removes from `pending` every case it settles.
    Returns False when the worker could not even start (so the rest cannot run either)."""
    w = Worker(pending, args, env)
    report["worker_starts"] = report.get("worker_starts", 0) + 1
    current, started = None, False
    while pending:
        left = deadline - time.perf_counter()
        msg = w.next(min(args.case_timeout, left + 30))
        if msg == "timeout":
            w.kill()
            past = time.perf_counter() > deadline
            if current is not None:
                mark_failed(report, cases, current, "stopped: the run's --deadline passed during "
                            "this case (worker killed)" if past else f"crashed: no result within "
                            f"--case-timeout {args.case_timeout:.0f} s (worker killed)")
                pending.remove(current)
            if past:
                skip_all(pending, report, cases, args)
            elif not started:
                return _fail_all(pending, report, cases, f"the worker gave no sign within "
                                 f"{args.case_timeout:.0f} s of starting (killed)")
            break
        if msg is None:
            text = w.exit_text()
            if current is not None:
                mark_failed(report, cases, current, f"crashed: the worker died ({text})")
                pending.remove(current)
            elif not started:
                return _fail_all(pending, report, cases,
                                 f"the worker died before its first case ({text})")
            break
        if msg["type"] == "env":
            report.setdefault("env", msg["env"])
        elif msg["type"] == "start":
            if time.perf_counter() > deadline:
                w.kill()
                skip_all(pending, report, cases, args)
                break
            current, started = msg["case"], True
        elif msg["type"] == "result":
            report["cases"][msg["case"]] = msg["result"]
            pending.remove(msg["case"])
            current = None
            progress(msg["case"], progress_text(msg["result"]))
            save()
        elif msg["type"] == "unhealthy":
            report["cases"][msg["case"]]["note"] = ("the CUDA context was broken after this case; "
                                                    "a new worker ran the cases after it")
    w.kill()
    return True


def _fail_all(pending, report, cases, text):
    for name in list(pending):
        mark_failed(report, cases, name, text)
    pending.clear()
    return False


def deadline_text(args):
    return f"skipped: the run's --deadline of {args.deadline:.0f} s had passed"


def skip_all(pending, report, cases, args):
    for name in list(pending):
        mark_failed(report, cases, name, deadline_text(args))
        report["cases"][name]["skipped"] = True
    pending.clear()


def run_gpu_cases(names, args, report, deadline, save, env):
    cases = {c.name: c for c in make_cases("quick" if args.quick else "full")}
    pending = list(names)
    while pending:
        if time.perf_counter() > deadline:
            skip_all(pending, report, cases, args)
            break
        if not run_worker_once(pending, args, report, cases, deadline, save, env):
            break


def progress(name, text):
    print(f"[{time.strftime('%H:%M:%S')}] {name:<22} {text}", file=sys.stderr, flush=True)


def progress_text(res):
    parts = []
    for name in LIB_ORDER:
        r = res["libs"].get(name, {})
        parts.append(f"{name}={fmt(r['value'])}" if "value" in r
                     else f"{name}={r.get('status', '–')}")
    ratio = case_ratio(res)
    return (f"{res['unit']:<8} " + "  ".join(parts)
            + (f"  ratio={ratio:.3g}" if ratio else "") + f"  check={res['check']['status']}")


def nvidia_smi():
    """The GPU's state as nvidia-smi reports it (driver, clocks, temperature, power)."""
    fields = ("name,driver_version,pstate,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,"
              "power.draw,power.limit,memory.used,memory.total")
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip()[:200]}
    values = [v.strip() for v in r.stdout.strip().splitlines()[0].split(",")]
    return dict(zip(fields.split(","), values))


def select(patterns, names):
    """The names matching any pattern (re.search), or equal to one; all without patterns."""
    if not patterns:
        return list(names)
    rx = [re.compile(p) for p in patterns]
    return [n for n in names if n in patterns or any(r.search(n) for r in rx)]


def all_case_names(quick):
    return [c.name for c in make_cases("quick" if quick else "full")] + list(COMPILE_CASES)


def parent_main(args, argv):
    names = select(args.cases, all_case_names(args.quick))
    if not names:
        sys.exit(f"no case matches {args.cases}; --list shows them")
    t0 = time.perf_counter()
    deadline = t0 + args.deadline
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "command": "python benchmarks/bench_gpu.py " + shlex.join(argv),
              "settings": {k: getattr(args, k) for k in SETTINGS},
              "host": machine_info(), "nvidia_smi_start": nvidia_smi(),
              "cases": {}, "compile": {}}
    folder = tempfile.mkdtemp(prefix="torchlite-bench-gpu-")
    kernel_cache = args.kernel_cache or os.environ.get("TORCHLITE_KERNEL_CACHE") \
        or os.path.join(folder, "ops")     # the first-use probe's folder: add and GEMM warm
    report["kernel_cache"] = kernel_cache
    env = child_env(kernel_cache)

    def save():
        report["total_wall_s"] = time.perf_counter() - t0
        write_outputs(report, args.out, args.json)

    try:
        run_compile_cases([n for n in names if n in COMPILE_CASES], args, report, folder,
                          deadline, save)
        run_gpu_cases([n for n in names if n not in COMPILE_CASES], args, report, deadline,
                      save, env)
    finally:
        report["nvidia_smi_end"] = nvidia_smi()
        save()
        shutil.rmtree(folder, ignore_errors=True)
    print(render_markdown(report))
    print(f"wrote {args.out} and {args.json}", file=sys.stderr)
    broken = torchlite_failures(report)
    if broken:       # a failing exit status, as bench.py gives, so a script notices
        sys.exit("torchlite failed in " + ", ".join(broken))


def torchlite_failures(report):
    """The cases where torchlite raised, crashed, hung or gave a wrong result (not those the
    deadline skipped)."""
    return [name for name, res in report["cases"].items() if not res.get("skipped") and (
            res["libs"].get("torchlite", {}).get("status") == "error"
            or res["check"]["status"] == "mismatch")]


def write_outputs(report, md_path, json_path):
    for path in (md_path, json_path):
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
    write_json(json_path, report)
    tmp = md_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(render_markdown(report))
    os.replace(tmp, md_path)


# ---- the results file ---------------------------------------------------------------------------
def case_ratio(res):
    """torchlite over torch: throughputs, or torch's time over torchlite's (above 1: torchlite
    is faster); None unless both were measured."""
    a, b = res["libs"].get("torchlite", {}), res["libs"].get("torch", {})
    if "value" not in a or "value" not in b:
        return None
    return b["value"] / a["value"] if res["unit"] in TIME_UNITS else a["value"] / b["value"]


def evaluate(res, target):
    """(target text, met text, kind): kind is 'met', 'missed', 'n/a' or '' (no target)."""
    if target is None:
        return "", "", ""
    tl = res["libs"].get("torchlite", {})
    if tl.get("status") == "error":
        return target.text, "**no**: " + ("skipped" if res.get("skipped") else "error"), \
            ("n/a" if res.get("skipped") else "missed")
    if res["check"]["status"] == "mismatch":
        return target.text, "**no**: wrong result", "missed"
    r = case_ratio(res)
    if r is None:
        return target.text, "n/a (torch not measured)", "n/a"
    if r >= target.ratio:
        return target.text, "yes", "met"
    return target.text, f"**no**: {r:.2f}x, needs {target.ratio / r:.2f}x faster", "missed"


def escape(text, limit=140):
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def lib_cell(res, name):
    r = res["libs"].get(name)
    if r is None:
        return "–"
    if "value" in r:
        mark = " (wall)" if r.get("timer") == "wall clock" else ""
        if r.get("timer") == "events" and r["wall_median_s"] > 1.25 * r["median_s"]:
            mark = " †"          # the events saw much less time than the wall clock
        return fmt(r["value"]) + mark
    if r.get("status") == "error":
        detail = r.get("detail", "")
        own = detail.startswith(("skipped", "crashed", "stopped", "the worker"))
        return escape(detail if own else "error: " + detail)
    return "–"


def check_cell(c):
    if c["status"] == "ok":
        return f"ok ({c['rel_err']:.1g})"
    if c["status"] == "mismatch":
        err = "NaN/shape" if c.get("rel_err") is None else f"{c['rel_err']:.2g}"
        return f"**MISMATCH** (err {err} > {c['tol']:g})"
    return "–"


def spread_cell(res):
    parts = [f"{res['libs'][n]['iqr_rel'] * 100:.1f}%" if "iqr_rel" in res["libs"].get(n, {})
             else "–" for n in LIB_ORDER]
    return " / ".join(parts)


def case_row(name, res, target):
    ttext, met, kind = evaluate(res, target)
    r = case_ratio(res)
    cells = [name, res["unit"], lib_cell(res, "torchlite"), lib_cell(res, "torch"),
             f"{r:.3g}x" if r else "–", ttext, met, check_cell(res["check"]), spread_cell(res)]
    return "| " + " | ".join(cells) + " |", kind


def _targets(report):
    quick = report["settings"].get("quick", False)
    return {c.name: c.target for c in make_cases("quick" if quick else "full")}


def section_lines(report, counts):
    targets = _targets(report)
    lines = []
    for key, title in SECTIONS:
        rows = [(n, r) for n, r in report["cases"].items() if r.get("section") == key]
        if not rows:
            continue
        lines += [f"## {title}", "",
                  "| case | unit | torchlite | torch | ratio | target | met? | check | "
                  "IQR (tl / torch) |", "|---|---|---:|---:|---:|---|---|---|---:|"]
        for name, res in rows:
            row, kind = case_row(name, res, targets.get(name))
            lines.append(row)
            counts[kind] = counts.get(kind, 0) + 1
        notes = [f"- {name}: {res['note']}" for name, res in rows if res.get("note")]
        lines += ([""] + notes if notes else []) + [""]
    return lines


def _seconds(v):
    return f"{v:.3f} s" if v >= 0.1 else f"{v * 1e3:.2f} ms"


def compile_cell(phase):
    if phase is None:
        return "–"
    if "error" in phase:
        return escape("error: " + str(phase["error"]), 100)
    if phase.get("status") == "error":
        return escape("error: " + phase.get("detail", ""), 100)
    kernels = f"{phase['compiles']} compiled, {phase['disk_hits']} from disk"
    return f"{_seconds(phase['first_s'])} ({kernels})"


def compile_note(cold, warm):
    notes = []
    for label, p in (("cold", cold), ("warm", warm)):
        if not p or "first_s" not in p:
            continue
        if "steady_s" in p:
            notes.append(f"{label}: second call {_seconds(p['steady_s'])}, CUDA init + copies "
                         f"{_seconds(p['init_s'])}, result {p['check']}")
        if p.get("note"):
            notes.append(p["note"])
    if cold and cold.get("compiles") == 0 and "steady_s" in cold:
        notes.append("no NVRTC compile on first use: the op ran without a kernel (host fallback?)")
    return escape("; ".join(dict.fromkeys(notes)), 300)


def compile_lines(report):
    if not report.get("compile"):
        return []
    lines = ["## First-use compile cost (NVRTC)", "",
             "Cold: a fresh process with an empty TORCHLITE_KERNEL_CACHE folder; warm: another "
             "fresh process over the folder the cold one filled (a disk-cache hit). Times are "
             "the op's or compile's own, after `import torchlite` and CUDA initialisation.", "",
             "| case | what | cold | warm | cold / warm | note |", "|---|---|---:|---:|---:|---|"]
    for name, res in report["compile"].items():
        descriptions = COMPILE_CASES[name][1]
        for row, what in descriptions.items():
            cold = _row(res.get("cold"), row)
            warm = _row(res.get("warm"), row)
            both = cold and warm and "first_s" in cold and "first_s" in warm
            fast = both and warm["first_s"] > 0
            ratio = fmt(cold["first_s"] / warm["first_s"]) + "x" if fast else "–"
            lines.append(f"| {name} | {what} | {compile_cell(cold)} | {compile_cell(warm)} | "
                         f"{ratio} | {compile_note(cold, warm)} |")
    return lines + [""]


def _row(phase, row):
    """One row of a probe's answer; the probe's own error stands for every row."""
    if phase is None:
        return None
    if "error" in phase:
        return {"error": phase["error"]}
    return (phase.get("rows") or {}).get(row, {"error": "no answer for this row"})


def header_lines(report):
    env = report.get("env", {})
    tl, th = env.get("torchlite", {}), env.get("torch", {})
    smi = report.get("nvidia_smi_start", {})
    host = report.get("host", {})
    s = report["settings"]
    lines = [
        "# torchlite GPU benchmark results", "",
        "Generated by `benchmarks/bench_gpu.py`: torchlite on CUDA against PyTorch on CUDA, in "
        "one process on the same GPU, interleaved round by round. Figures are medians of "
        "samples timed with each library's CUDA events (\"(wall)\": wall clock; \"†\": the "
        "wall clock saw over 1.25x the events' time). **ratio**: torchlite's throughput over "
        "torch's; for ms/step torch's time over torchlite's, so above 1 means torchlite is "
        "faster. **check**: torchlite's result against torch's on the head, middle and tail "
        "of two calls' outputs, over memory poisoned with NaN (largest difference over "
        "torch's largest value).", "",
        f"- date: {report['date']}",
        f"- command: `{report['command']}`",
        f"- GPU: torchlite sees {tl.get('device_name', '–')} (compute capability "
        f"{_dotted(tl.get('capability'))}{'; ' + tl['properties'] if tl.get('properties') else ''}"
        f"); torch sees "
        f"{th.get('device_name', '–')}",
        f"- driver: {smi.get('driver_version', smi.get('error', '–'))} (nvidia-smi); CUDA "
        f"driver API {tl.get('driver', '–')} (torchlite.cuda._status())",
        f"- NVRTC: {_dotted(tl.get('nvrtc'))}; kernels built as "
        f"{' '.join(map(str, tl.get('kernel_target') or ['–']))}; kernel cache "
        f"{report.get('kernel_cache', '–')}",
        f"- software: Python {env.get('python', '–')}; torchlite {tl.get('version', '–')} (git "
        f"{host.get('git_commit', '?')}); torch {th.get('version', '–')} (CUDA "
        f"{th.get('cuda', '–')}, cuDNN {th.get('cudnn', '–')}); host CPU "
        f"{host.get('cpu', '–')}",
        f"- memory ceiling: torch copies {_count(env.get('copy_floats') or 0)} floats device to "
        f"device at "
        f"{_gbs(env.get('copy_gbs'))} (bytes read plus written)",
        f"- float32 in torch: matmul allow_tf32={th.get('matmul_allow_tf32', '–')}, cudnn "
        f"allow_tf32={th.get('cudnn_allow_tf32', '–')} (torchlite has no TF32)",
        "- GPU state (nvidia-smi) at start: " + _smi_text(smi)
        + "; at end: " + _smi_text(report.get("nvidia_smi_end", {})),
        f"- settings: {s}; total {report.get('total_wall_s', 0):.0f} s; worker processes "
        f"started: {report.get('worker_starts', 0)}",
    ]
    if tl.get("status", {}).get("available") is False:
        lines.append(f"- torchlite CUDA unavailable: {tl['status'].get('reason')}")
    if s.get("quick"):
        lines.append("- **quick run**: sizes shrunk for a smoke test; the targets are stated for "
                     "the full sizes, so read them as indications only")
    return lines + [""]


def _gbs(v):
    return f"{fmt(v)} GB/s" if isinstance(v, float) else str(v or "–")


def _dotted(parts):
    """[9, 0] as '9.0'; anything else as it is."""
    return ".".join(map(str, parts)) if isinstance(parts, (list, tuple)) else str(parts or "–")


def _smi_text(smi):
    if not smi:
        return "–"
    if "error" in smi:
        return "unavailable (" + smi["error"] + ")"
    return (f"{smi.get('pstate')}, SM {smi.get('clocks.sm')} (max {smi.get('clocks.max.sm')}), "
            f"memory {smi.get('clocks.mem')}, {smi.get('temperature.gpu')} C, "
            f"{smi.get('power.draw')} of {smi.get('power.limit')}, "
            f"{smi.get('memory.used')} of {smi.get('memory.total')} used")


def summary_lines(report, counts):
    broken = torchlite_failures(report)
    lines = [f"Targets: {counts.get('met', 0)} met, {counts.get('missed', 0)} not met, "
             f"{counts.get('n/a', 0)} not measurable."]
    if broken:
        lines.append(f"torchlite failed or gave a wrong result in: {', '.join(broken)} "
                     f"(details and tracebacks in the JSON).")
    return lines + [""]


def render_markdown(report):
    counts = {}
    body = section_lines(report, counts) + compile_lines(report)
    return "\n".join(header_lines(report) + body + summary_lines(report, counts))


# ---- command line -------------------------------------------------------------------------------
def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Cases: " + ", ".join(all_case_names(False)))
    p.add_argument("--quick", action="store_true",
                   help="small sizes (matmul 1024, 1M floats...): a smoke run")
    p.add_argument("--cases", nargs="+", metavar="PATTERN",
                   help="regular expressions; run the cases whose name matches any (re.search), "
                        "or equals one (default: all)")
    p.add_argument("--repeat", type=int, default=10, help="timed samples per library (default 10)")
    p.add_argument("--min-sample", type=float, default=0.025,
                   help="seconds a sample lasts at least; fast ops loop (default 0.025)")
    p.add_argument("--case-budget", type=float, default=15.0,
                   help="seconds of timed rounds a case may take before it stops at 3 rounds "
                        "(default 15)")
    p.add_argument("--case-timeout", type=float, default=120.0,
                   help="seconds a case (or a worker's start) may take before the worker is "
                        "killed as hung (default 120)")
    p.add_argument("--deadline", type=float, default=300.0,
                   help="no case starts after this many seconds; the rest are reported as "
                        "skipped (default 300)")
    p.add_argument("--compile-timeout", type=float, default=150.0,
                   help="seconds one compile probe may take (default 150)")
    p.add_argument("--kernel-cache",
                   help="TORCHLITE_KERNEL_CACHE for the timed cases (default: the environment's, "
                        "else the cold/warm probe's folder, deleted afterwards)")
    p.add_argument("--out", default=DEFAULT_OUT,
                   help=f"the markdown results file (default {DEFAULT_OUT})")
    p.add_argument("--json", help="every figure, samples and tracebacks included (default: "
                                  "--out with .json for .md)")
    p.add_argument("--from-json", help="only render the markdown of an earlier --json file")
    p.add_argument("--list", action="store_true", help="list the cases and their targets")
    p.add_argument("--_worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--_names", help=argparse.SUPPRESS)
    p.add_argument("--_compile-probe", dest="_compile_probe", choices=("ops", "direct"),
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.json is None:
        args.json = re.sub(r"\.md$", "", args.out) + ".json"
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    for pattern in args.cases or ():
        try:
            re.compile(pattern)
        except re.error as e:
            p.error(f"--cases: {pattern!r} is not a regular expression ({e})")
    return args


def list_cases(quick):
    for c in make_cases("quick" if quick else "full"):
        t = c.target.text if c.target else "–"
        print(f"{c.name:<22} {c.unit:<8} target {t:<18} {c.desc}")
    for name, (mode, rows) in COMPILE_CASES.items():
        print(f"{name:<22} {'s':<8} target {'–':<18} cold vs warm: " + "; ".join(rows.values()))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args._worker:
        worker_main(args)
    elif args._compile_probe:
        compile_probe_main(args._compile_probe)
    elif args.list:
        list_cases(args.quick)
    elif args.from_json:
        with open(args.from_json) as f:
            report = json.load(f)
        text = render_markdown(report)
        with open(args.out, "w") as f:
            f.write(text)
        print(text)
    else:
        parent_main(args, argv)


if __name__ == "__main__":
    main()
