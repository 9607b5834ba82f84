"""torchlite.utils.benchmark: Timer's measurements (structure, positive times, thread count
restored, globals), Measurement's statistics on given times (checked against torch's
Measurement where installed), its repr, and Compare's table.  No assertion on speed."""
import numpy as np
import pytest

import torchlite as tl
from torchlite.utils import benchmark
from torchlite.utils.benchmark import Compare, Measurement, TaskSpec, Timer


def test_timeit_measures_the_statement():
    calls = []
    t = Timer("f()", globals={"f": lambda: calls.append(1)}, label="calls")
    m = t.timeit(50)
    assert isinstance(m, Measurement)
    assert m.number_per_run == 50 and len(m.raw_times) == 1 and m.times[0] > 0
    assert len(calls) == 50 + 2          # a warm-up of max(50 // 100, 2) first
    assert m.stmt == "f()" and m.label == "calls" and m.num_threads == 1
    assert m.median == m.mean == m.times[0]


def test_torch_is_torchlite_in_the_globals_and_threads_are_restored():
    before = tl.get_num_threads()
    seen = []
    t = Timer("seen.append((torch, torch.get_num_threads()))", setup="x = torch.ones(3)",
              globals={"seen": seen}, num_threads=1)
    t.timeit(3)
    assert seen[0] == (tl, 1) and tl.get_num_threads() == before


def test_blocked_and_adaptive_autorange():
    t = Timer("x + y", setup="x = torch.ones(8); y = torch.ones(8)", sub_label="add",
              description="8")
    m = t.blocked_autorange(min_run_time=0.02)
    assert m.number_per_run >= 1 and len(m.times) >= 1 and all(x > 0 for x in m.times)
    assert sum(m.raw_times) >= 0.02
    assert m.sub_label == "add" and m.description == "8" and m.iqr >= 0
    seen = []
    m = t.adaptive_autorange(threshold=0.5, min_run_time=0.01, max_run_time=0.5,
                             callback=lambda number, time: seen.append((number, time)))
    assert len(seen) == len(m.times) and all(n == m.number_per_run for n, _ in seen)
    assert len(m.times) >= 4 or sum(m.raw_times) > 0.5


def test_measurement_statistics_against_numpy_and_torch():
    spec = TaskSpec(stmt="x", setup="pass", label="L", sub_label="s", description="d")
    raw = [3.0e-6, 1.0e-6, 2.0e-6, 4.0e-6, 10.0e-6]
    m = Measurement(number_per_run=10, raw_times=raw, task_spec=spec)
    times = np.array(raw) / 10
    assert m.times == pytest.approx(list(times))
    assert m.median == pytest.approx(np.quantile(times, 0.5))
    assert m.mean == pytest.approx(times.mean())
    assert m.iqr == pytest.approx(np.quantile(times, 0.75) - np.quantile(times, 0.25))
    assert m.has_warnings and not m.meets_confidence()
    assert m.title == "L: s" and m.env == "Unspecified env" and m.as_row_name == "s"
    pytest.importorskip("torch")
    from torch.utils.benchmark import Measurement as TM, TaskSpec as TT
    tm = TM(number_per_run=10, raw_times=raw, task_spec=TT(stmt="x", setup="pass", label="L",
                                                           sub_label="s", description="d"))
    assert (m.median, m.mean, m.iqr, m.significant_figures) == pytest.approx(
        (tm.median, tm.mean, tm.iqr, tm.significant_figures))
    ours = repr(m).splitlines()[1:]
    theirs = repr(tm).splitlines()[1:]
    assert ours == theirs


def test_measurement_repr_and_merge():
    spec = TaskSpec(stmt="a + b", setup="a = 1\nb = 2", num_threads=2)
    m = Measurement(number_per_run=100, raw_times=[5e-5], task_spec=spec)
    text = repr(m)
    assert text.startswith("<torchlite.utils.benchmark.common.Measurement object at")
    assert "a + b" in text and "setup:\n  a = 1\n  b = 2" in text
    assert "500.00 ns" in text and "1 measurement, 100 runs , 2 threads" in text
    assert "IQR" not in text and "Median" not in text
    merged = Measurement.merge([m, Measurement(number_per_run=1, raw_times=[1e-6, 2e-6],
                                               task_spec=spec)])
    assert len(merged) == 1 and merged[0].number_per_run == 1
    assert merged[0].times == pytest.approx([5e-7, 1e-6, 2e-6])
    assert benchmark.select_unit(2.5e-7) == ("ns", 1e-9)
    assert benchmark.select_unit(3e-3) == ("ms", 1e-3)
    assert benchmark.trim_sigfig(123.456, 2) == 120.0


def _m(sub_label, description, times, label="op", num_threads=1):
    return Measurement(number_per_run=1, raw_times=times,
                       task_spec=TaskSpec(stmt="f()", setup="", label=label, sub_label=sub_label,
                                          description=description, num_threads=num_threads))


def test_compare_table(capsys):
    results = [_m("n=10", "ours", [1e-6, 1.1e-6, 1.05e-6, 1e-6]),
               _m("n=10", "theirs", [2e-6, 2.1e-6, 2e-6, 2e-6]),
               _m("n=100", "ours", [5e-6, 5e-6, 5.1e-6, 5e-6]),
               _m("n=100", "ours", [5e-6] * 4, num_threads=2),
               _m("x", "y", [1e-3] * 4, label="other")]
    c = Compare(results)
    c.print()
    out = capsys.readouterr().out
    tables = out.split("Times are in")
    assert "[" in tables[0] and " op " in tables[0] and "other" in tables[1]
    lines = tables[0].splitlines()
    assert "ours" in lines[1] and "theirs" in lines[1]
    assert lines[2].startswith("1 threads: ---") and any("2 threads: " in ln for ln in lines)
    row10 = next(ln for ln in lines if "n=10 " in ln)
    assert "1.0" in row10 and "2.0" in row10
    assert "microseconds (us)" in out and "milliseconds (ms)" in out
    c.trim_significant_figures()
    c.colorize()
    c.highlight_warnings()
    assert "\033[" in str(c)
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        Compare([1.0])
    pytest.importorskip("torch")
    from torch.utils.benchmark import Compare as TC, Measurement as TM, TaskSpec as TT
    theirs = [TM(number_per_run=1, raw_times=r.raw_times,
                 task_spec=TT(**{f: getattr(r.task_spec, f) for f in
                                 ("stmt", "setup", "label", "sub_label", "description",
                                  "num_threads")}))
              for r in results]
    assert str(Compare(results)) == str(TC(theirs))


def test_errors():
    with pytest.raises(ValueError, match="only a `str` stmt"):
        Timer(lambda: None)
    with pytest.raises(NotImplementedError):
        Timer("x", language="c++")
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        Timer("x", global_setup="int x;")
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        Timer("pass").repeat()
