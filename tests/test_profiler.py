"""torchlite.profiler and torchlite.autograd.profiler: what is recorded (kernel calls through
the array layer's door, record_function ranges), the arithmetic of self and total times,
schedules and on_trace_ready, the Chrome trace, and that nothing is left wrapped after."""
import json
import os

import pytest

import torchlite as tl
from torchlite import _dispatch
from torchlite._core import elementwise as core_ew
from torchlite.profiler import (ProfilerAction, ProfilerActivity, profile, record_function,
                                schedule, tensorboard_trace_handler)


def _step(x, w):
    return (x @ w).relu().sum()


def test_kernel_calls_and_ranges_are_recorded():
    x, w = tl.randn(16, 16), tl.randn(16, 16)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("three products"):
            for _ in range(3):
                _step(x, w)
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["matmul.bmm[addmm_impl_cpu_]"].count == 3
    assert avg["elementwise.unary[relu]"].count == 3
    assert avg["reduction.reduce[sum]"].count == 3
    rng = avg["three products"]
    assert rng.count == 1
    inside = sum(e.cpu_time_total for e in prof.events() if e.name != "three products")
    assert rng.cpu_time_total >= inside                # the range holds its kernel calls
    assert abs(rng.self_cpu_time_total - (rng.cpu_time_total - inside)) < 1e-6
    for e in prof.events():
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
    mm = next(e for e in prof.events() if e.name.startswith("matmul.bmm"))
    assert mm.input_shapes[:2] == [[16, 16], [16, 16]]
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert any(e.input_shapes and e.input_shapes[:2] == [[16, 16], [16, 16]] for e in by_shape)


def test_nothing_stays_wrapped_and_profiles_do_not_nest():
    assert _dispatch.elementwise.binary is core_ew.binary
    with profile() as prof:
        assert _dispatch.elementwise.binary is not core_ew.binary
        with pytest.raises(RuntimeError, match="already enabled"):
            profile().start()
        tl.ones(3) + 1
    assert _dispatch.elementwise.binary is core_ew.binary
    assert len(prof.events()) > 0
    with record_function("no profile running"):        # a no-op outside a profile
        tl.ones(2) * 2


def test_table_and_trace(tmp_path):
    with profile() as prof:
        _step(tl.randn(8, 8), tl.randn(8, 8))
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=2)
    lines = table.splitlines()
    assert "Self CPU %" in lines[1] and "# of Calls" in lines[1]
    # the two rows are kernel calls of some array-layer family (which two depends on timing)
    families = tuple(m + "." for m in _dispatch._MODULES)
    assert len([ln for ln in lines if ln.startswith(families)]) == 2
    assert lines[-1].startswith("Self CPU time total:")
    with pytest.raises(AttributeError):
        prof.key_averages().table(sort_by="nonsense")
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert {e["ph"] for e in trace["traceEvents"]} == {"X"}
    assert len(trace["traceEvents"]) == len(prof.events())
    assert all(e["dur"] >= 0 and e["pid"] == os.getpid() for e in trace["traceEvents"])


def test_schedule_and_on_trace_ready(tmp_path):
    sched = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    assert [sched(i) for i in range(10)] == [
        ProfilerAction.NONE, ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE, ProfilerAction.WARMUP,
        ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE]
    ready = []
    x, w = tl.randn(4, 4), tl.randn(4, 4)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=lambda p: ready.append(
                     sum(e.count for e in p.key_averages() if e.key.startswith("matmul")))) as p:
        for _ in range(6):
            _step(x, w)
            p.step()
    assert ready == [2]                 # one cycle saved, holding its two recorded steps
    handler_dir = tmp_path / "tb"
    with profile(schedule=schedule(wait=0, warmup=0, active=1, repeat=2),
                 on_trace_ready=tensorboard_trace_handler(str(handler_dir), "worker0")) as p:
        for _ in range(3):
            _step(x, w)
            p.step()
    files = sorted(os.listdir(handler_dir))
    assert len(files) == 2 and all(f.startswith("worker0.") and f.endswith(".pt.trace.json")
                                   for f in files)
    assert json.loads((handler_dir / files[0]).read_text())["traceEvents"]


def test_autograd_profiler():
    from torchlite.autograd import profiler
    x = tl.randn(8, 8, requires_grad=True)
    with profiler.profile(record_shapes=True) as prof:
        (x * 2).sum().backward()
    names = {e.key for e in prof.key_averages()}
    assert "elementwise.binary[mul]" in names
    assert "Self CPU time total" in prof.table(sort_by="cpu_time_total")
    assert prof.self_cpu_time_total > 0
    with profiler.profile(enabled=False) as off:
        x * 3
    assert len(off.function_events) == 0


def test_record_function_as_decorator():
    @record_function("my_block")
    def block(t):
        return t.exp()

    with profile() as prof:
        block(tl.ones(4))
    assert {e.key for e in prof.key_averages()} >= {"my_block", "elementwise.unary[exp]"}


def test_profiling_cuda_tensors(fake_cuda):
    with profile() as prof:
        t = tl.ones(4, device="cuda")          # the backend starts while the profile records
        r = (t * 2).cpu()
    assert r.tolist() == [2.0] * 4
    assert any(e.key == "elementwise.binary[mul]" for e in prof.key_averages())
    assert (tl.ones(2, device="cuda") + 1).cpu().tolist() == [2.0, 2.0]   # dispatch still works


def test_profile_memory_counts_allocations_and_frees():
    """profile_memory: each event's net bytes (allocated minus freed while it ran), its self
    share without its children's, summed by key_averages and shown and sorted in the table.
    The oracle is the tensors' sizes: a 256 x 256 float32 result is 256 KiB (the allocator's
    block size for it too)."""
    x = tl.randn(256, 256)
    size = 256 * 256 * 4
    with profile(profile_memory=True) as prof:
        with record_function("block"):
            y = x @ x                   # + 1 result
            z = (y + 1).relu()          # + the temporary, + z, - the temporary
            del y                       # - y
    events = {e.key: e for e in prof.key_averages()}
    assert events["matmul.bmm[addmm_impl_cpu_]"].cpu_memory_usage == size
    assert events["elementwise.binary[add]"].self_cpu_memory_usage == size
    block = events["block"]
    assert block.cpu_memory_usage == size                       # z is what is left
    assert block.self_cpu_memory_usage == size - 3 * size       # its children allocated 3, it freed 2
    table = prof.key_averages().table(sort_by="self_cpu_memory_usage")
    assert "CPU Mem" in table and "Self CPU Mem" in table and "256.00 KB" in table and "-512.00 KB" in table
    assert table.index("matmul.bmm") < table.index("block")       # sorted by self memory, descending
    assert z.shape == (256, 256)
    with profile(profile_memory=True) as quiet:                   # on: the columns even at 0
        x.add_(1)
    assert "Self CPU Mem" in quiet.key_averages().table() and "0 B" in quiet.key_averages().table()
    with profile() as plain:                                      # off: no columns, zeros
        (x + 1).sum()
    assert "CPU Mem" not in plain.key_averages().table()
    assert all(e.cpu_memory_usage == 0 for e in plain.events())


def test_memory_records_of_the_host_allocator(tmp_path):
    """profile_memory: "[memory]" records of the host allocator (its observer sees every
    storage allocated and freed): a known sequence of torchlite.empty and frees gives one
    record each, in the allocator's block sizes, with the storage's address; frees outside
    every op are "[memory]" events (PyTorch's rule)."""
    small, big, f64 = 4000 + 32, 256 * 256 * 4, 832        # 4000 and 800 bytes round up to 64
    from torchlite._core.array import live_bytes
    base = live_bytes()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        a = tl.empty(1000)
        b = tl.empty(256, 256)
        address_a, address_b = a.data_ptr(), b.data_ptr()
        del a
        c = tl.empty(100, dtype=tl.float64)
        del b
    records = prof.events().memory_records
    assert [(r.nbytes, r.address) for r in records] == [
        (small, address_a), (big, address_b), (-small, address_a), (f64, c.data_ptr()), (-big, address_b)]
    assert [r.total_allocated for r in records] == [
        base + small, base + small + big, base + big, base + big + f64, base + f64]
    assert all(r.device_type.name == "CPU" and r.device_index == -1 for r in records)
    assert all(r.total_reserved >= r.total_allocated for r in records)
    mem = [e for e in prof.events() if e.name == "[memory]"]
    assert [e.cpu_memory_usage for e in mem] == [-small, -big]
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["[memory]"].count == 2 and avg["[memory]"].cpu_memory_usage == -small - big
    assert avg["array.empty"].cpu_memory_usage == small + big + f64
    assert "[memory]" in prof.key_averages().table()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    instants = [e for e in trace if e["name"] == "[memory]"]
    assert all(e["ph"] == "i" and e["s"] == "t" and e["pid"] == os.getpid() for e in instants)
    assert [{k: e["args"][k] for k in ("Bytes", "Addr", "Total Allocated", "Device Type", "Device Id")}
            for e in instants] == [{"Bytes": r.nbytes, "Addr": r.address, "Total Allocated": r.total_allocated,
                                    "Device Type": 0, "Device Id": -1} for r in records]
    assert all(e["args"]["Total Reserved"] >= e["args"]["Total Allocated"] for e in instants)
    assert len([e for e in trace if e["ph"] == "X"]) == len(prof.events()) - len(mem)
    with profile(activities=[ProfilerActivity.CPU]) as off:     # off: no records
        tl.empty(10)
    assert not off.events().memory_records and all(e.name != "[memory]" for e in off.events())
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as temp:
        y = tl.ones(5000).add(1).mul(2)         # ones and add: temporaries, freed once used
    allocs = [r.nbytes for r in temp.events().memory_records]
    assert allocs == [20032, 20032, -20032, 20032, -20032]
    del y
