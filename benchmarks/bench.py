#!/usr/bin/env python
"""Speed of torchlite against PyTorch and NumPy, measured in the same run.

    python benchmarks/bench.py --threads 1 2 --markdown benchmarks/RESULTS.md

Each library runs in its own worker process, one set of workers per thread count, started
with OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS set (and set_num_threads
called), so every thread pool starts at that size and no two OpenMP runtimes share a
process.  The parent drives the workers case by case, interleaved: one sample of torchlite,
one of torch, one of NumPy, and again, so a burst of machine noise hits all three alike.  A
sample is a loop of enough calls to last --min-sample seconds; the figure is the median
sample after warm-up.  Around every round the parent measures the CPU time other processes
took (from /proc/stat, minus its workers' and its own); a disturbed round is set aside and
redone, so each figure comes from --repeat undisturbed rounds when the machine allows it.
The cases and the issue's targets live in benchmarks/_cases_core.py; see benchmarks/README.md.
"""
import argparse
import datetime
import gc
import json
import math
import os
import platform
import re
import select
import shlex
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIB_ORDER = ("torchlite", "torch", "numpy")
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
NA = "n/a (not implemented)"
BROKEN = ("crashed", "error", "wrong result", "import failed")   # torchlite statuses that fail
SETTINGS = ("repeat", "min_sample", "case_budget", "max_others", "wait_idle", "gap", "settle",
            "libs")     # the options recorded with the results


# ---- CPU accounting: how much of the machine other processes took --------------------------
_HZ = os.sysconf("SC_CLK_TCK")


def _busy_seconds():
    """CPU seconds all CPUs have spent busy since boot (steal included: the host took it)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = fields[:7]
    steal = fields[7] if len(fields) > 7 else 0
    return (user + nice + system + irq + softirq + steal) / _HZ


def _process_seconds(pid):
    """CPU seconds (user + system, all threads) process pid has used; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _HZ


class CpuMeter:
    """CPU seconds used by processes other than this one and `ours` between start and stop."""

    def __init__(self, ours=()):
        self.ours = [os.getpid()] + list(ours)

    def _mine(self):
        return sum(_process_seconds(p) for p in self.ours)

    def start(self):
        self.t0, self.busy0, self.mine0 = time.perf_counter(), _busy_seconds(), self._mine()

    def stop(self):
        wall = time.perf_counter() - self.t0
        others = max((_busy_seconds() - self.busy0) - (self._mine() - self.mine0), 0.0)
        # as a percentage of one CPU over the wall time (ticks are 10 ms)
        return {"wall_s": wall, "others_cpu_s": others,
                "others_pct": 100.0 * others / max(wall, 1e-9)}


def _threads_cpu_ns(pids):
    """CPU nanoseconds used so far by every thread of the processes pids (precise, from
    /proc/<pid>/task/<tid>/schedstat; ticks would be too coarse for a few milliseconds)."""
    total = 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    return total


def settle(pids, min_s, max_s, window_s=0.005, busy_frac=0.1):
    """Wait until the workers' threads have gone quiet: idle BLAS and OpenMP pools spin after
    a call (OpenBLAS's for about 0.1 s), and a spinning pool of one library would steal a
    core from the next library's sample.  Returns the seconds waited."""
    t0 = time.perf_counter()
    time.sleep(min_s)
    prev = _threads_cpu_ns(pids)
    while time.perf_counter() - t0 < max_s:
        time.sleep(window_s)
        cur = _threads_cpu_ns(pids)
        if cur - prev <= busy_frac * window_s * 1e9:
            break
        prev = cur
    return time.perf_counter() - t0


def wait_for_idle(max_wait_s, max_others_pct, ours=(), window_s=0.5):
    """Wait (up to max_wait_s) for a window in which other processes are nearly idle."""
    deadline = time.perf_counter() + max_wait_s
    meter = CpuMeter(ours)
    while True:
        meter.start()
        time.sleep(window_s)
        if meter.stop()["others_pct"] <= max_others_pct or time.perf_counter() >= deadline:
            return


# ---- worker: one library at one thread count, in its own process ---------------------------
def load_library(name, threads):
    """The adapter for one library; ImportError when it is not installed."""
    from _cases_core import TorchLike, NumpyLib
    if name == "numpy":
        return NumpyLib()
    mod = __import__(name)
    mod.set_num_threads(threads)
    return TorchLike(name, mod)


def library_details(lib):
    """Version and thread settings the library reports (to confirm the thread count took)."""
    import numpy as np
    d = {"version": np.__version__ if lib.name == "numpy" else lib.mod.__version__}
    if lib.name == "torch":
        d["threads"] = lib.mod.get_num_threads()
        d["parallel_info"] = lib.mod.__config__.parallel_info().splitlines()[:6]
    elif lib.name == "torchlite":
        cfg = lib.mod._config.config()
        d.update({k: cfg[k] for k in ("num_threads", "simd_in_use", "openmp")})
    try:
        from threadpoolctl import threadpool_info
        d["threadpools"] = [{k: p.get(k) for k in ("internal_api", "num_threads", "version")}
                            for p in threadpool_info()]
    except ImportError:
        pass
    return d


def time_samples(f, inner):
    """Seconds per call over `inner` calls, and the CPUs the process kept busy meanwhile
    (process CPU time / wall time: shows a library using more threads than it was given).
    A Staged callable's setup runs before each call, outside the timed region."""
    from _cases_core import Staged
    if isinstance(f, Staged):
        return _time_staged(f, inner)
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(inner):
        f()
    wall = time.perf_counter() - t0
    return wall / inner, (time.process_time() - c0) / max(wall, 1e-9)


def _time_staged(f, inner):
    """time_samples for a Staged callable: only the run parts are timed, one by one (a
    staged case is long, e.g. a backward, so the clock reads cost nothing in comparison)."""
    wall = cpu = 0.0
    for _ in range(inner):
        state = f.setup()
        c0, t0 = time.process_time(), time.perf_counter()
        f.run(state)
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        del state       # free the graph before the next setup, as the plain loop does
    return wall / inner, cpu / max(wall, 1e-9)


def check_result(case, lib, result, inputs):
    """None when the result matches NumPy's, else what differs."""
    import numpy as np
    from _cases_core import NotImplementedOp, NumpyLib
    if not case.check or lib.name == "numpy":
        return None
    try:
        ref = (case.reference(inputs) if case.reference is not None
               else case.build(NumpyLib(), inputs)())
    except NotImplementedOp:
        return None         # nothing to compare with; the timings are still worth having
    # a case may return several results (e.g. the gradients of both matmul operands)
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    gots = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(gots) != len(refs):
        return f"{len(gots)} results, NumPy's answer has {len(refs)}"
    for i, (got, want) in enumerate(zip(gots, refs)):
        wrong = _compare(case, lib.to_numpy(got), np.asarray(want))
        if wrong:
            return wrong if len(refs) == 1 else f"result {i}: {wrong}"
    return None


def _compare(case, got, ref):
    """None when got matches ref within the case's tolerance, else what differs."""
    import numpy as np
    from _cases_core import relative_tolerance
    if got.shape != ref.shape:
        return f"shape {got.shape}, NumPy's is {ref.shape}"
    tol = relative_tolerance(case)
    atol = tol * max(1.0, float(np.max(np.abs(ref))) if ref.size else 1.0)
    if not np.allclose(got, ref, rtol=tol, atol=atol):
        return f"max abs difference from NumPy {float(np.max(np.abs(got - ref))):.3g}"
    return None


def prepare(case, lib, min_sample):
    """Build, run once (timed: first_s), check, warm up and calibrate one library's callable.
    Returns (callable or None, status dict)."""
    import numpy as np
    from _cases_core import NotImplementedOp
    inputs = case.make_inputs(np.random.default_rng(0))
    try:
        f = case.build(lib, inputs)
        t0 = time.perf_counter()
        r = f()
        first = time.perf_counter() - t0
        wrong = check_result(case, lib, r, inputs)
        del r, inputs
        if wrong:
            return None, {"status": "wrong result", "detail": wrong}
        one = time_samples(f, 1)[0]             # second call: warm
        inner = max(1, min(10 ** 6, math.ceil(min_sample / max(one, 1e-9))))
        time_samples(f, min(inner, 3))          # a little more warm-up at the sample's length
        return f, {"status": "ok", "first_s": first, "inner": inner}
    except NotImplementedOp as e:
        return None, {"status": NA, "detail": str(e)}
    except Exception as e:      # noqa: BLE001  (any failure is reported, not fatal)
        return None, {"status": "error", "detail": f"{type(e).__name__}: {e}"[:300]}


def worker_main(args):
    """Serve the parent: one JSON request per line on stdin, one JSON reply per line."""
    sys.path.insert(0, HERE)
    from cases import CASES
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)       # whatever a library prints goes to stderr, not into the replies
    cases = {c.name: c for c in CASES}
    try:
        lib = load_library(args.lib, args.threads[0])
    except ImportError as e:
        reply.write(json.dumps({"missing": str(e)}) + "\n")
        return
    reply.write(json.dumps(library_details(lib)) + "\n")
    f, inner = None, 1
    for line in sys.stdin:
        req = json.loads(line)
        if req["cmd"] == "prepare":
            f, status = prepare(cases[req["case"]], lib, req["min_sample"])
            inner = status.get("inner", 1)
            out = status
        elif req["cmd"] == "sample":
            t, cpus = time_samples(f, inner)
            out = {"t": t, "cpus": cpus}
        elif req["cmd"] == "release":
            f = None
            gc.collect()
            out = {}
        else:
            return
        reply.write(json.dumps(out) + "\n")


# ---- parent: drives the workers ------------------------------------------------------------
class WorkerDied(Exception):
    pass


class LibraryWorker:
    """One library's worker process at one thread count."""

    def __init__(self, name, threads, args):
        self.name, self.threads, self.args = name, threads, args
        self.details = None
        self.start()

    def start(self):
        env = dict(os.environ, **{k: str(self.threads) for k in THREAD_ENV})
        cmd = [sys.executable, os.path.abspath(__file__), "--_worker", "--lib", self.name,
               "--threads", str(self.threads)]
        self.proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.details = self._read(self.args.timeout)

    def _read(self, timeout):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.proc.kill()        # hung: a case that never returns
            self.proc.wait()
            raise WorkerDied(f"no answer within {timeout:.0f} s (killed)")
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            how = (f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}")
            raise WorkerDied(f"worker died ({how})")
        return json.loads(line)

    def call(self, timeout=None, **req):
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass            # the read below reports how it died
        return self._read(timeout or self.args.timeout)

    def restart_if_dead(self):
        if self.proc.poll() is not None:
            self.start()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def one_round(workers, running, args):
    """One interleaved round: a sample of every running library (running[name] is None), in
    LIB_ORDER, and the CPU other processes took meanwhile.  A library whose worker dies gets
    its status in running[name] and takes no further samples."""
    pids = [w.proc.pid for w in workers.values()]
    meter = CpuMeter(pids)
    meter.start()
    times = {}
    for name in [n for n in LIB_ORDER if n in running and running[n] is None]:
        settle(pids, args.gap, args.settle)     # the previous library's threads go quiet
        try:
            r = workers[name].call(cmd="sample")
            times[name] = (r["t"], r["cpus"])
        except WorkerDied as e:
            running[name] = {"status": "crashed", "detail": str(e)}
    return meter.stop()["others_pct"], times


def measure(workers, running, args):
    """Rounds until `repeat` of them were undisturbed, or the case's time budget is spent.

    A round during which other processes took more than --max-others % of a CPU is set aside
    (and the harness waits for a quiet moment before the next); if the budget runs out first,
    the least disturbed rounds are kept and the case is flagged."""
    pids = [w.proc.pid for w in workers.values()]
    rounds = []
    deadline = time.perf_counter() + args.case_budget
    if args.wait_idle > 0:
        wait_for_idle(args.wait_idle, args.max_others, pids)
    while any(v is None for v in running.values()):
        rounds.append(one_round(workers, running, args))
        clean = [r for r in rounds if r[0] <= args.max_others]
        if len(clean) >= args.repeat:
            break
        if time.perf_counter() > deadline and len(rounds) >= args.repeat:
            break
        if rounds[-1][0] > args.max_others and args.wait_idle > 0:
            wait_for_idle(min(args.wait_idle, max(deadline - time.perf_counter(), 0.0)),
                          args.max_others, pids, window_s=0.2)
    clean = [r for r in rounds if r[0] <= args.max_others]
    kept = clean if len(clean) >= args.repeat else sorted(rounds, key=lambda r: r[0])[:args.repeat]
    samples = {}
    for _, times in kept:
        for name, pair in times.items():
            samples.setdefault(name, []).append(pair)
    info = {"rounds": len(rounds), "rounds_disturbed": len(rounds) - len(clean),
            "others_pct": statistics.mean(r[0] for r in kept) if kept else 0.0,
            "others_pct_all_rounds": statistics.mean(r[0] for r in rounds) if rounds else 0.0,
            "disturbed": any(r[0] > args.max_others for r in kept)}
    return samples, info


def summarise(case, samples):
    out = {}
    for name, pairs in samples.items():
        s = sorted(t for t, _ in pairs)
        med = statistics.median(s)
        q = statistics.quantiles(s, n=4) if len(s) >= 2 else [med, med, med]
        out[name] = {"median_s": med, "min_s": s[0], "iqr_rel": (q[2] - q[0]) / med,
                     "samples_s": s, "value": natural_value(case, med),
                     "cpus_used": statistics.median(c for _, c in pairs)}
    return out


def natural_value(case, seconds):
    if case.unit == "us/op":
        return seconds * 1e6 / case.work
    return case.work / seconds / 1e9     # GFLOP/s and GB/s


def run_case(case, workers, args):
    """Prepare the case in every worker, measure it interleaved, release it."""
    status, running = {}, {}
    for name, w in workers.items():
        try:
            w.restart_if_dead()
            status[name] = w.call(cmd="prepare", case=case.name, min_sample=args.min_sample)
        except WorkerDied as e:
            status[name] = {"status": "crashed", "detail": str(e)}
        if status[name]["status"] == "ok":
            running[name] = None        # None: still running; a dict: how it stopped
    samples, info = measure(workers, running, args) if running else ({}, {
        "rounds": 0, "rounds_disturbed": 0, "others_pct": 0.0, "disturbed": False})
    for name in [n for n, stopped in running.items() if stopped is None]:
        try:
            workers[name].call(cmd="release")
        except WorkerDied as e:     # a crash after the last sample still marks the case
            running[name] = {"status": "crashed", "detail": f"{e} while releasing the case"}
    for name, stopped in running.items():
        if stopped is not None:
            status[name] = stopped
            samples.pop(name, None)
    stats = summarise(case, samples)
    libs_out = {name: dict(status[name], **stats.get(name, {})) for name in workers}
    return dict({"unit": case.unit, "work": case.work, "desc": case.desc, "libs": libs_out},
                **info)


def run_threads(n, names, args):
    """All selected cases at one thread count, with a fresh worker per library."""
    sys.path.insert(0, HERE)
    from cases import CASES
    workers, result = {}, {"threads": n, "libraries": {}, "cases": {}}
    for name in args.libs:
        try:
            w = LibraryWorker(name, n, args)
        except WorkerDied as e:
            result["libraries"][name] = {"missing": str(e)}
            continue
        result["libraries"][name] = w.details
        if "missing" in w.details:
            w.close()
        else:
            workers[name] = w
    for name, info in result["libraries"].items():
        if "missing" in info:
            print(f"  [{n}t] {name} cannot be imported: {info['missing']}", file=sys.stderr)
    try:
        for case in [c for c in CASES if c.name in names]:
            t0 = time.perf_counter()
            res = run_case(case, workers, args)
            if "missing" in result["libraries"].get("torchlite", {}):
                # torchlite itself broken: every row says so (an absent torch stays blank)
                res["libs"]["torchlite"] = {"status": "import failed",
                                            "detail": result["libraries"]["torchlite"]["missing"]}
            res["case_wall_s"] = time.perf_counter() - t0
            result["cases"][case.name] = res
            print(f"  [{n}t] {case.name:<28} {progress_line(res)}", file=sys.stderr, flush=True)
    finally:
        for w in workers.values():
            w.close()
    return result


def progress_line(res):
    parts = []
    for name in LIB_ORDER:
        r = res["libs"].get(name)
        if r is None:
            continue
        parts.append(f"{name}={fmt(r['value'])}" if "value" in r else f"{name}={r['status']}")
    return (f"{res['unit']:<8} " + "  ".join(parts) + f"  others={res['others_pct']:.0f}% "
            f"({res['rounds_disturbed']}/{res['rounds']} rounds set aside)")


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def selected_cases(patterns):
    sys.path.insert(0, HERE)
    from cases import CASES
    if not patterns:
        return [c.name for c in CASES]
    rx = [re.compile(p) for p in patterns]
    # an exact name also selects its case, so names with regex characters ("+") need no escape
    return [c.name for c in CASES
            if c.name in patterns or any(r.search(c.name) for r in rx)]


def machine_info():
    model, cores = "unknown", os.cpu_count()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {"cpu": model, "logical_cpus": cores, "python": platform.python_version(),
            "platform": platform.platform()}
    try:
        import subprocess as sp
        lscpu = sp.run(["lscpu"], capture_output=True, text=True).stdout
        for key in ("Core(s) per socket", "Thread(s) per core", "L2 cache", "L3 cache"):
            m = re.search(rf"^{re.escape(key)}:\s*(.+)$", lscpu, re.M)
            if m:
                info[key] = m.group(1).strip()
    except OSError:
        pass
    try:
        # "-dirty": the tree measured had uncommitted changes
        info["git_commit"] = subprocess.run(["git", "describe", "--always", "--dirty"],
                                            cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return info


def parent_main(args, argv):
    names = selected_cases(args.cases)
    if not names:
        sys.exit(f"no case matches {args.cases}")
    command = "python benchmarks/bench.py " + " ".join(shlex.quote(a) for a in argv)
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "command": command, "machine": machine_info(),
              "settings": {k: getattr(args, k) for k in SETTINGS},
              "runs": {}}
    t0 = time.perf_counter()
    for n in args.threads:
        print(f"threads={n}: {len(names)} cases", file=sys.stderr, flush=True)
        report["runs"][str(n)] = run_threads(n, names, args)
    report["total_wall_s"] = time.perf_counter() - t0
    if args.out:
        write_json(args.out, report)
    text = render_markdown(report)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    print(text)
    broken = [f"{name} at {th} thread(s): {r['libs']['torchlite']['status']}"
              for th, run in report["runs"].items() for name, r in run["cases"].items()
              if r["libs"].get("torchlite", {}).get("status") in BROKEN]
    if broken:      # a failing exit status, so a script or CI run notices
        sys.exit("torchlite failed in " + "; ".join(broken[:5])
                 + (f" and {len(broken) - 5} more" if len(broken) > 5 else ""))


# ---- the report ----------------------------------------------------------------------------
def fmt(v):
    if v is None:
        return "–"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def ratio(case_res, lib, unit):
    """torchlite throughput / lib throughput (times inverted, so > 1 means torchlite wins)."""
    a, b = case_res["libs"].get("torchlite", {}), case_res["libs"].get(lib, {})
    if "value" not in a or "value" not in b:
        return None
    return b["value"] / a["value"] if unit == "us/op" else a["value"] / b["value"]


def cell(case_res, lib, threads):
    r = case_res["libs"].get(lib)
    if r is None:
        return ""                               # library not installed / not asked for
    if "value" in r:
        # a library that kept more CPUs busy than it was given threads gets a note
        extra = r.get("cpus_used", 0) > threads + 0.25
        return fmt(r["value"]) + (f" (used {r['cpus_used']:.1f} CPUs)" if extra else "")
    return r["status"] if r["status"] == NA else f"{r['status']}: {r.get('detail', '')}"[:80]


def verdict(target, rt, threads):
    """'yes' / 'no (...)' / '' for one case at one thread count."""
    if target is None or (target.threads is not None and threads not in target.threads):
        return "", ""
    if rt is None:
        return target.text, "n/a"
    if rt >= target.ratio:
        aim = ""
        if target.aim is not None:
            aim = "; aim met" if rt >= target.aim else f"; aim {target.aim:g}x not yet"
        return target.text, "yes" + aim
    return target.text, f"**no**: {rt:.2f}x, needs {target.ratio / rt:.2f}x faster"


def header_lines(report):
    """Date, machine, versions, the exact command and the settings of a report."""
    m = report["machine"]
    libinfo = next(iter(report["runs"].values())).get("libraries", {})
    vers = {k: v.get("version", "not importable") for k, v in libinfo.items()}
    simd = libinfo.get("torchlite", {}).get("simd_in_use", "?")
    machine = f"{m['cpu']}, {m['logical_cpus']} logical CPUs"
    if "L3 cache" in m:
        machine += (f" ({m.get('Core(s) per socket')} cores/socket, "
                    f"{m.get('Thread(s) per core')} thread/core, L2 {m.get('L2 cache')}, "
                    f"L3 {m['L3 cache']})")
    threads = "; ".join(
        f"run {th}: torchlite {run['libraries'].get('torchlite', {}).get('num_threads', '–')}, "
        f"torch {run['libraries'].get('torch', {}).get('threads', '–')}"
        for th, run in report["runs"].items())
    return [
        "# torchlite benchmark results", "",
        "Generated by `benchmarks/bench.py` (see benchmarks/README.md for what the columns "
        "mean and how noise is handled). Ratios are torchlite's throughput over the other "
        "library's (for µs/op the times are inverted), so **above 1 means torchlite is "
        "faster**.", "",
        f"- date: {report['date']}",
        f"- machine: {machine}",
        f"- software: Python {m['python']}; torchlite {vers.get('torchlite', '–')} (git "
        f"{m.get('git_commit', '?')}, SIMD {simd}); torch {vers.get('torch', '–')}; "
        f"numpy {vers.get('numpy', '–')}",
        f"- command: `{report['command']}`",
        f"- settings: {report['settings']}; total {report.get('total_wall_s', 0):.0f} s",
        f"- threads as the libraries report them: {threads}", ""]


def result_row(name, th, res, target):
    """One table row, and how it counts against its target."""
    unit = "µs/op" if res["unit"] == "us/op" else res["unit"]
    r_t, r_n = ratio(res, "torch", res["unit"]), ratio(res, "numpy", res["unit"])
    ttext, met = verdict(target, r_t, th)
    tl_status = res["libs"].get("torchlite", {}).get("status")
    if met == "n/a" and tl_status not in (None, NA, "ok"):
        met = f"**no**: {tl_status}"        # a crash or a wrong answer misses the target
    kind = ("met" if met.startswith("yes") else "missed" if met.startswith("**no")
            else "n/a" if met == "n/a" else "no target")
    star = "*" if res["disturbed"] else ""
    redone = f" ({res['rounds_disturbed']}/{res['rounds']})" if res["rounds_disturbed"] else ""
    cells = [name, unit, str(th), cell(res, "torchlite", th), cell(res, "torch", th),
             cell(res, "numpy", th), fmt(r_t) + "x" if r_t else "–",
             fmt(r_n) + "x" if r_n else "–", ttext, met,
             f"{res['others_pct']:.0f}%{star}{redone}"]
    return "| " + " | ".join(cells) + " |", kind


def render_markdown(report):
    sys.path.insert(0, HERE)
    from cases import CASES
    lines = header_lines(report) + [
        "| case | unit | threads | torchlite | torch | numpy | tl/torch | tl/numpy | "
        "target (tl/torch) | met? | others |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|"]
    summary = {}
    for case in CASES:
        for th, run in report["runs"].items():
            if case.name in run["cases"]:
                row, kind = result_row(case.name, int(th), run["cases"][case.name], case.target)
                lines.append(row)
                summary[(int(th), kind)] = summary.get((int(th), kind), 0) + 1
    counts = "; ".join(
        f"{th} thread(s): " + ", ".join(f"{summary.get((th, k), 0)} {k}"
                                        for k in ("met", "missed", "n/a"))
        for th in sorted({k[0] for k in summary}))
    lines += ["", f"Targets per thread count: {counts}.", "",
              "`others`: CPU time other processes took during the rounds kept, as a percentage "
              "of one CPU; `(k/n)`: k of the n rounds run were set aside as disturbed; `*`: "
              "even the kept rounds were disturbed (the machine never went quiet within the "
              "case's budget), so treat that row with suspicion. \"(used N CPUs)\": the "
              "library kept more CPUs busy than its thread count (process CPU time / wall "
              "time). \"n/a (not implemented)\" means torchlite lacks the op today.", ""]
    return "\n".join(lines)


# ---- command line --------------------------------------------------------------------------
def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                   help="thread counts, each measured in its own subprocess (default: 1 2)")
    p.add_argument("--cases", nargs="+", metavar="PATTERN",
                   help="regular expressions; run the cases whose name matches any (default: all)")
    p.add_argument("--repeat", type=int, default=7, help="timed samples per library (default 7)")
    p.add_argument("--min-sample", type=float, default=0.05,
                   help="seconds a sample lasts at least; fast ops loop to reach it (default 0.05)")
    p.add_argument("--case-budget", type=float, default=12.0,
                   help="seconds a case may spend redoing rounds other processes disturbed "
                        "(default 12)")
    p.add_argument("--max-others", type=float, default=15.0,
                   help="%% of one CPU other processes may take before a case counts as "
                        "disturbed (default 15)")
    p.add_argument("--wait-idle", type=float, default=3.0,
                   help="seconds to wait for an idle machine before each case (default 3)")
    p.add_argument("--gap", type=float, default=0.002,
                   help="least pause between samples, untimed (default 0.002)")
    p.add_argument("--settle", type=float, default=0.5,
                   help="most seconds to wait between samples for the previous library's "
                        "spinning thread pools to go quiet (default 0.5)")
    p.add_argument("--libs", nargs="+", default=list(LIB_ORDER), choices=LIB_ORDER,
                   help="the libraries to measure (default: all three)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds a worker may take to answer before it counts as hung")
    p.add_argument("--out", help="write every figure (samples included) to this JSON file")
    p.add_argument("--markdown", help="write the results table to this markdown file")
    p.add_argument("--from-json", help="only render the markdown of an earlier --out file")
    p.add_argument("--list", action="store_true", help="list the cases and their targets")
    p.add_argument("--_worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--lib", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def list_cases():
    sys.path.insert(0, HERE)
    from cases import CASES
    for c in CASES:
        t = c.target.text if c.target else "–"
        print(f"{c.name:<28} {c.unit:<8} target {t:<18} {c.desc}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args._worker:
        worker_main(args)
    elif args.list:
        list_cases()
    elif args.from_json:
        with open(args.from_json) as f:
            text = render_markdown(json.load(f))
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(text)
        print(text)
    else:
        parent_main(args, argv)


if __name__ == "__main__":
    main()
