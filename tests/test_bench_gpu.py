"""benchmarks/bench_gpu.py without a GPU: its command line, the case list and targets, the
target evaluation, the result check, the markdown writer on made-up results, the parent's
handling of workers that crash or hang, and every case's code run through torchlite's CUDA
layer on the host-memory stand-in driver (torch on the CPU as the other side).  The real
measurement runs only where torchlite and torch both see a GPU."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import torchlite

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "bench_gpu.py")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import bench_gpu as B  # noqa: E402
from _cases_gpu import GpuCase, make_cases  # noqa: E402

# sizes small enough for the host fallback behind the stand-in driver
TINY = {"matmul": (48, 32), "bmm": (3, 16), "ewise": 5000, "sum": 5000, "sum2d": 40,
        "mlp_batches": (8,), "cnn_batch": 4}


def run_script(*args, timeout=120):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def real_gpu():
    """Whether torchlite and torch both have a usable GPU (asked without the stand-in)."""
    try:
        import torch
    except ImportError:
        return False
    return torchlite.cuda.is_available() and torch.cuda.is_available()


# ---- command line --------------------------------------------------------------------------------
def test_help_runs():
    r = run_script("--help")
    assert r.returncode == 0, r.stderr
    for option in ("--quick", "--cases", "--repeat", "--out", "--deadline"):
        assert option in r.stdout
    assert "matmul_4096" in r.stdout          # the case names are listed


def test_parse_args_defaults_and_options():
    a = B.parse_args([])
    assert (a.quick, a.cases, a.repeat) == (False, None, 10)
    assert a.out == os.path.join(ROOT, "benchmarks", "RESULTS-gpu.md")
    assert a.json == os.path.join(ROOT, "benchmarks", "RESULTS-gpu.json")
    a = B.parse_args(["--quick", "--cases", "matmul", "^sum_", "--repeat", "3",
                      "--out", "/tmp/x/gpu.md"])
    assert a.quick and a.cases == ["matmul", "^sum_"] and a.repeat == 3
    assert a.json == "/tmp/x/gpu.json"
    assert B.parse_args(["--out", "r.md", "--json", "j.json"]).json == "j.json"


@pytest.mark.parametrize("argv", [["--cases", "add_("], ["--repeat", "0"], ["--repeat", "x"]])
def test_parse_args_rejects_bad_values(argv, capsys):
    with pytest.raises(SystemExit) as info:
        B.parse_args(argv)
    assert info.value.code == 2
    assert "error" in capsys.readouterr().err


def test_select_by_regex_or_exact_name():
    names = B.all_case_names(quick=False)
    assert B.select(None, names) == names
    assert B.select(["^matmul"], names) == ["matmul_4096", "matmul_2048", "matmul_half_4096",
                                            "matmul_bfloat16_4096"]
    assert B.select(["sum_dim", "compile_nvrtc"], names) == [
        "sum_dim0_8192x8192", "sum_dim1_8192x8192", "compile_nvrtc"]
    assert B.select(["nothing-like-this"], names) == []


def test_cases_sizes_work_and_targets():
    cases = {c.name: c for c in make_cases("full")}
    assert cases["matmul_4096"].work == 2 * 4096 ** 3 and cases["matmul_4096"].target.ratio == 0.6
    assert cases["matmul_2048"].target is None and cases["bmm_64x512x512"].work == 2 * 64 * 512 ** 3
    n = 64 << 20
    assert cases["add_64M"].work == 12 * n and cases["exp_64M"].work == 8 * n
    assert all(cases[k].target.ratio == 0.85 for k in ("add_64M", "mul_64M", "exp_64M"))
    assert all(cases[k].target.ratio == 0.75
               for k in ("sum_64M", "sum_dim0_8192x8192", "sum_dim1_8192x8192"))
    assert cases["sum_dim1_8192x8192"].work == 4 * (8192 * 8192 + 8192)
    for k in ("mlp_step_b64", "mlp_step_b256", "cnn_step_b64"):
        assert cases[k].unit == "ms/step" and cases[k].target.ratio == pytest.approx(1 / 1.5)
    assert all(cases[k].target.ratio == 0.5 for k in ("matmul_half_4096", "matmul_bfloat16_4096"))
    assert [c.name for c in make_cases("quick")][:5] == [
        "matmul_1024", "matmul_512", "bmm_16x128x128", "matmul_half_1024", "matmul_bfloat16_1024"]


# ---- target evaluation and the result check ------------------------------------------------------
def result(name, tl=None, torch=None, check="ok", quick=False, **extra):
    """A case result as the worker reports it: tl/torch are values (a number) or error texts."""
    case = {c.name: c for c in make_cases("quick" if quick else "full")}[name]
    res = B.case_stub(case)
    for lib, v in (("torchlite", tl), ("torch", torch)):
        if isinstance(v, str):
            res["libs"][lib] = {"status": "error", "detail": v}
        elif v is not None:
            res["libs"][lib] = {"status": "ok", "value": v, "timer": "events", "median_s": 1e-3,
                                "wall_median_s": 1.05e-3, "iqr_rel": 0.012, "first_s": 0.5}
    res["check"] = {"status": check, "rel_err": 1e-7 if check == "ok" else 0.5, "tol": 1e-6}
    res.update(extra)
    return res


def target_of(name):
    return {c.name: c.target for c in make_cases("full")}[name]


@pytest.mark.parametrize("name,tl,torch,check,met,kind", [
    ("add_64M", 2600.0, 3000.0, "ok", "yes", "met"),                 # 0.87 >= 0.85
    ("add_64M", 2400.0, 3000.0, "ok", "**no**: 0.80x, needs 1.06x faster", "missed"),
    ("matmul_4096", 30e3, 50e3, "ok", "yes", "met"),                # 0.6 exactly
    ("mlp_step_b64", 1.4, 1.0, "ok", "yes", "met"),                  # time: 1.4x torch's
    ("mlp_step_b64", 2.5, 1.0, "ok", "**no**: 0.40x, needs 1.67x faster", "missed"),
    ("sum_64M", 3000.0, 3000.0, "mismatch", "**no**: wrong result", "missed"),
    ("sum_64M", "RuntimeError: boom", 3000.0, "n/a", "**no**: error", "missed"),
    ("sum_64M", 3000.0, "torch sees no CUDA GPU", "n/a", "n/a (torch not measured)", "n/a"),
])
def test_evaluate_targets(name, tl, torch, check, met, kind):
    text, got_met, got_kind = B.evaluate(result(name, tl, torch, check), target_of(name))
    assert (got_met, got_kind) == (met, kind)
    assert text == target_of(name).text


def test_time_ratio_is_inverted_and_no_target_is_blank():
    assert B.case_ratio(result("mlp_step_b64", 4.0, 1.0)) == pytest.approx(0.25)
    assert B.case_ratio(result("add_64M", 1500.0, 3000.0)) == pytest.approx(0.5)
    assert B.evaluate(result("matmul_2048", 1.0, 2.0), None) == ("", "", "")


def test_check_catches_one_wrong_element_nan_and_shape():
    rng = np.random.default_rng(1)
    ref = rng.standard_normal(3 * 4096)
    assert B.check({"torchlite": ref * (1 + 1e-8), "torch": ref}, 1e-6)["status"] == "ok"
    bad = ref.copy()
    bad[5000] += 0.01 * np.abs(ref).max()
    assert B.check({"torchlite": bad, "torch": ref}, 1e-6)["status"] == "mismatch"
    bad[5000] = np.nan
    c = B.check({"torchlite": bad, "torch": ref}, 1e-6)
    assert c["status"] == "mismatch" and c["rel_err"] is None
    assert B.check({"torchlite": ref[:10], "torch": ref}, 1e-6)["status"] == "mismatch"
    assert B.check({"torch": ref}, 1e-6) == {"status": "n/a"}


# ---- the markdown writer -------------------------------------------------------------------------
def fake_report():
    cases = {
        "matmul_4096": result("matmul_4096", 31000.0, 50000.0),
        "add_64M": result("add_64M", 2400.0, 3000.0, note="the CUDA context was broken"),
        "mul_64M": result("mul_64M", "CudaError: cuLaunchKernel | CUDA_ERROR_INVALID_VALUE", 3000.0,
                          "n/a"),
        "sum_64M": result("sum_64M", 2900.0, 3000.0, "mismatch"),
        "cnn_step_b64": result("cnn_step_b64", 1.5, 1.0),
        "mlp_step_b64": result("mlp_step_b64", f"{B.deadline_text(B.parse_args([]))}", None,
                               "n/a", skipped=True),
    }
    ops = {"rows": {"add": {"first_s": 1.25, "steady_s": 2e-5, "compiles": 1, "disk_hits": 0,
                            "init_s": 0.4, "check": "ok"},
                    "matmul": {"status": "error", "detail": "RuntimeError: no kernel"}}}
    ops_warm = {"rows": {"add": {"first_s": 0.05, "steady_s": 2e-5, "compiles": 0,
                                 "disk_hits": 1, "init_s": 0.4, "check": "ok"},
                         "matmul": {"status": "error", "detail": "RuntimeError: no kernel"}}}
    return {
        "date": "2026-11-22T10:00:00+00:00",
        "command": "python benchmarks/bench_gpu.py --out /tmp/o/RESULTS-gpu.md",
        "settings": {k: getattr(B.parse_args([]), k) for k in B.SETTINGS},
        "host": {"cpu": "AMD EPYC", "git_commit": "abc1234"},
        "nvidia_smi_start": {"driver_version": "580.159.04", "pstate": "P0"},
        "nvidia_smi_end": {"error": "gone"},
        "env": {"python": "3.12.3", "copy_floats": 64 << 20, "copy_gbs": 2990.5,
                "torchlite": {"version": "0.1.0", "device_name": "NVIDIA H100 80GB HBM3",
                              "capability": [9, 0], "driver": "13.0", "nvrtc": [13, 0],
                              "kernel_target": ["cubin", "sm_90"],
                              "status": {"available": True}},
                "torch": {"version": "2.11.0+cu130", "cuda": "13.0", "cudnn": 91200,
                          "device_name": "NVIDIA H100 80GB HBM3", "matmul_allow_tf32": False,
                          "cudnn_allow_tf32": False}},
        "cases": cases,
        "compile": {"compile_first_use": {"mode": "ops", "cold": ops, "warm": ops_warm},
                    "compile_nvrtc": {"mode": "direct",
                                      "cold": {"error": "no answer within 150 s (killed)"},
                                      "warm": {"rows": {}}}},
    }


def test_markdown_has_header_tables_verdicts_and_errors():
    text = B.render_markdown(fake_report())
    for piece in ("2026-11-22T10:00:00",
                  "`python benchmarks/bench_gpu.py --out /tmp/o/RESULTS-gpu.md`",
                  "torchlite sees NVIDIA H100 80GB HBM3 (compute capability 9.0",
                  "torch sees NVIDIA H100 80GB HBM3", "580.159.04", "CUDA driver API 13.0",
                  "NVRTC: 13.0; kernels built as cubin sm_90", "torch 2.11.0+cu130",
                  "allow_tf32=False", "2990 GB/s",
                  "git abc1234"):
        assert piece in text, piece
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert [h.split(",")[0].split(" (")[0] for h in headings] == [
        "## Matrix multiply", "## Elementwise", "## Sums", "## Training steps",
        "## First-use compile cost"]
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| case")}
    assert "| >= 0.6x | yes |" in rows["matmul_4096"] and "0.62x" in rows["matmul_4096"]
    assert "**no**: 0.80x, needs 1.06x faster" in rows["add_64M"]
    assert "- add_64M: the CUDA context was broken" in text
    # the error message is in the table, its pipe escaped so the row keeps its columns
    assert "error: CudaError: cuLaunchKernel \\| CUDA_ERROR_INVALID_VALUE" in rows["mul_64M"]
    assert "**no**: error" in rows["mul_64M"]
    assert "**MISMATCH**" in rows["sum_64M"] and "**no**: wrong result" in rows["sum_64M"]
    assert "0.667x" in rows["cnn_step_b64"] and "| yes |" in rows["cnn_step_b64"]
    assert "skipped: the run's --deadline" in rows["mlp_step_b64"]
    for line in rows.values():          # every row has the header's number of cells
        assert line.replace("\\|", "").count("|") in (10, 7)
    assert "1.250 s (1 compiled, 0 from disk)" in text
    assert "50.00 ms (0 compiled, 1 from disk)" in text
    assert "25x" in text and "error: RuntimeError: no kernel" in text
    assert "error: no answer within 150 s (killed)" in text
    assert "Targets: 2 met, 3 not met, 1 not measurable." in text
    assert "torchlite failed or gave a wrong result in: mul_64M, sum_64M (" in text


def test_markdown_survives_a_report_with_nothing_measured():
    report = fake_report()
    report.pop("env")
    report["cases"], report["compile"] = {}, {}
    text = B.render_markdown(report)
    assert "torchlite sees –" in text and "Targets: 0 met" in text


def test_write_outputs_then_rerender_from_json(tmp_path):
    md, js = str(tmp_path / "out" / "r.md"), str(tmp_path / "out" / "r.json")
    report = fake_report()
    B.write_outputs(report, md, js)
    with open(js) as f:
        assert json.load(f)["cases"]["sum_64M"]["check"]["status"] == "mismatch"
    again = str(tmp_path / "again.md")
    B.main(["--from-json", js, "--out", again])
    with open(md) as f1, open(again) as f2:
        assert f1.read() == f2.read()


# ---- the parent's handling of its workers --------------------------------------------------------
class ScriptedWorker:
    """Stands in for bench_gpu.Worker: each new one plays the next script of messages."""
    scripts, started = [], []

    def __init__(self, names, args, env):
        ScriptedWorker.started.append(list(names))
        self.messages = list(ScriptedWorker.scripts.pop(0))

    def next(self, timeout):
        return self.messages.pop(0)

    def exit_text(self):
        return "killed by signal 11"

    def kill(self):
        pass


def ok_result(name):
    return result(name, 10.0, 10.0, quick=True)


def run_parent(monkeypatch, scripts, names, deadline_in=100.0):
    monkeypatch.setattr(B, "Worker", ScriptedWorker)
    ScriptedWorker.scripts, ScriptedWorker.started = [list(s) for s in scripts], []
    report, saved = {"cases": {}}, []
    args = B.parse_args(["--quick"])
    B.run_gpu_cases(names, args, report, time.perf_counter() + deadline_in,
                    lambda: saved.append(1), {})
    return report, saved


def test_a_crash_and_a_hang_cost_one_case_each(monkeypatch):
    names = ["matmul_1024", "matmul_512", "bmm_16x128x128", "add_1M"]
    env = {"type": "env", "env": {"torch": {"version": "x"}}}
    scripts = [
        [env, {"type": "start", "case": names[0]},
         {"type": "result", "case": names[0], "result": ok_result(names[0])},
         {"type": "start", "case": names[1]}, None],                    # segfault in case 2
        [env, {"type": "start", "case": names[2]}, "timeout"],           # hang in case 3
        [env, {"type": "start", "case": names[3]},
         {"type": "result", "case": names[3], "result": ok_result(names[3])}, None],
    ]
    report, saved = run_parent(monkeypatch, scripts, names)
    assert ScriptedWorker.started == [names, names[2:], names[3:]]
    assert list(report["cases"]) == names and report["worker_starts"] == 3
    cases = report["cases"]
    assert cases[names[0]]["libs"]["torchlite"]["value"] == 10.0
    assert cases[names[1]]["libs"]["torchlite"]["detail"] == \
        "crashed: the worker died (killed by signal 11)"
    assert cases[names[2]]["libs"]["torchlite"]["detail"].startswith("crashed: no result within")
    assert cases[names[3]]["libs"]["torch"]["value"] == 10.0
    assert report["env"] == env["env"] and len(saved) == 2


def test_a_broken_context_restarts_the_worker(monkeypatch):
    names = ["add_1M", "mul_1M"]
    broken = result(names[0], "CudaError: an illegal memory access", 5.0, "n/a", quick=True)
    scripts = [
        [{"type": "start", "case": names[0]},
         {"type": "result", "case": names[0], "result": broken},
         {"type": "unhealthy", "case": names[0]}, None],
        [{"type": "start", "case": names[1]},
         {"type": "result", "case": names[1], "result": ok_result(names[1])}],
    ]
    report, _ = run_parent(monkeypatch, scripts, names)
    assert ScriptedWorker.started == [names, names[1:]]
    assert "CUDA context was broken" in report["cases"][names[0]]["note"]
    assert report["cases"][names[1]]["check"]["status"] == "ok"


def test_a_worker_that_cannot_start_fails_every_case(monkeypatch):
    names = ["add_1M", "mul_1M"]
    report, _ = run_parent(monkeypatch, [[None]], names)
    assert ScriptedWorker.started == [names]
    for name in names:
        assert report["cases"][name]["libs"]["torchlite"]["detail"].startswith(
            "the worker died before its first case")


def test_nothing_starts_after_the_deadline(monkeypatch):
    names = ["add_1M", "mul_1M"]
    report, _ = run_parent(monkeypatch, [], names, deadline_in=-1.0)
    assert ScriptedWorker.started == []
    assert all(report["cases"][n].get("skipped") for n in names)
    scripts = [[{"type": "env", "env": {}}, {"type": "start", "case": names[0]}]]
    report, _ = run_parent(monkeypatch, scripts, names, deadline_in=0.0)   # passes while starting
    assert all(report["cases"][n].get("skipped") for n in names)


# ---- the cases' code through torchlite's CUDA layer (stand-in driver; torch on the CPU) ----------
def test_every_case_runs_and_checks_on_the_stand_in(fake_cuda):
    torch = pytest.importorskip("torch")
    libs = [B.Lib("torchlite", torchlite, "cuda"), B.Lib("torch", torch, "cpu")]
    for case in make_cases(TINY):
        res = B.run_case(case, libs, repeat=2, min_sample=1e-4, budget=0.2)
        tl = res["libs"]["torchlite"]
        assert tl["status"] == "ok", (case.name, tl.get("traceback"))
        assert res["check"]["status"] == "ok", (case.name, res["check"])
        assert tl["value"] > 0 and tl["timer"] == "events"     # the stand-in's events keep host times
        assert res["libs"]["torch"]["value"] > 0


def test_a_wrong_answer_and_an_error_are_recorded(fake_cuda):
    torch = pytest.importorskip("torch")
    libs = [B.Lib("torchlite", torchlite, "cuda"), B.Lib("torch", torch, "cpu")]

    def off_by_one_in_torchlite(lib, xs):
        a = lib.tensor(xs[0])
        return (lambda: a + 1) if lib.name == "torchlite" else (lambda: a + 0)

    def fails_in_torchlite(lib, xs):
        a = lib.tensor(xs[0])
        if lib.name == "torchlite":
            return lambda: a.no_such_method()
        return lambda: a * 2

    inputs = lambda rng: [rng.standard_normal(1000, dtype=np.float32)]  # noqa: E731
    wrong = GpuCase("wrong", "elementwise", "GB/s", 8000, inputs, off_by_one_in_torchlite, "")
    res = B.run_case(wrong, libs, repeat=2, min_sample=1e-4, budget=0.2)
    assert res["check"]["status"] == "mismatch" and res["libs"]["torchlite"]["status"] == "ok"
    broken = GpuCase("broken", "elementwise", "GB/s", 8000, inputs, fails_in_torchlite, "")
    res = B.run_case(broken, libs, repeat=2, min_sample=1e-4, budget=0.2)
    assert res["libs"]["torchlite"]["status"] == "error"
    assert "no_such_method" in res["libs"]["torchlite"]["detail"]
    assert res["libs"]["torch"]["value"] > 0 and res["check"]["status"] == "n/a"


def test_an_element_left_unwritten_is_caught(fake_cuda):
    """Stale memory holding the right answer would hide a kernel that skips an element; the
    result of the first call is poisoned with NaN before the allocator hands its block on."""
    torch = pytest.importorskip("torch")
    libs = [B.Lib("torchlite", torchlite, "cuda"), B.Lib("torch", torch, "cpu")]

    def skips_the_last_element_in_torchlite(lib, xs):
        a = lib.tensor(xs[0])
        n = a.shape[0]
        del_me = a.clone()          # the allocator's cached block now holds the right answer
        del del_me

        def run():
            out = lib.mod.empty(n, device=lib.device)
            out[:n - 1] = a[:n - 1]
            if lib.name == "torch":
                out[n - 1] = a[n - 1]
            return out
        return run

    inputs = lambda rng: [rng.standard_normal(1000, dtype=np.float32)]  # noqa: E731
    case = GpuCase("unwritten", "elementwise", "GB/s", 8000, inputs,
                   skips_the_last_element_in_torchlite, "")
    res = B.run_case(case, libs, repeat=2, min_sample=1e-4, budget=0.2)
    assert res["check"]["status"] == "mismatch" and res["check"]["rel_err"] is None   # NaN


# ---- whole runs ----------------------------------------------------------------------------------
@pytest.mark.skipif(real_gpu(), reason="a GPU is here: test_quick_run_on_the_gpu covers the run")
def test_a_run_without_a_gpu_reports_instead_of_crashing(tmp_path):
    out = tmp_path / "r.md"
    r = run_script("--quick", "--cases", "add_", "--repeat", "2", "--out", str(out))
    assert r.returncode == 1, r.stderr            # torchlite failed: a failing status
    text = out.read_text()
    assert "| add_1M | GB/s | error: CUDA unavailable" in text
    assert json.loads((tmp_path / "r.json").read_text())["cases"]["add_1M"]["libs"]["torchlite"][
        "status"] == "error"


@pytest.mark.skipif(not real_gpu(), reason="needs a GPU usable by torchlite and torch")
def test_quick_run_on_the_gpu(tmp_path):
    out = tmp_path / "r.md"
    r = run_script("--quick", "--cases", "add_", "matmul_512", "sum_1M", "compile_nvrtc",
                   "--repeat", "3", "--out", str(out), timeout=600)
    report = json.loads((tmp_path / "r.json").read_text())
    for name in ("add_1M", "matmul_512", "sum_1M"):
        res = report["cases"][name]
        assert res["libs"]["torchlite"]["status"] == "ok", (name, res["libs"]["torchlite"])
        assert res["check"]["status"] == "ok", (name, res["check"])
        assert res["libs"]["torchlite"]["timer"] == "events"
    assert r.returncode == 0, r.stderr[-2000:]
