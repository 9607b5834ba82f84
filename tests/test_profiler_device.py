"""torchlite.profiler's device timeline and "[memory]" records, without a GPU.

The CUDA layer runs on the host-memory stand-in driver (tests/fake_cuda_driver.py) with the
elementwise and reduction kernels emulated on the host (tests/fake_cuda_kernels.py), so every
kernel goes through torchlite/cuda/_launch.py's launch as on a GPU.  The stand-in's events
remember the host clock when recorded: a kernel's "device time" is then the host time its
emulation took between its two events, which is what the profiler must read back, attach to
the launching op, sum and show.  On a GPU the same code reads the device's own
times; that is not exercised here."""
import json
import os

import pytest

import torchlite as tl
from torchlite import cuda
from torchlite.cuda import _allocator, _launch
from torchlite.profiler import ProfilerActivity, profile, record_function

import fake_cuda_kernels
from fake_cuda_driver import FakeDriver, installed

_HAS_GPU = cuda.is_available()        # probed before any stand-in driver is installed
CPU, CUDA = ProfilerActivity.CPU, ProfilerActivity.CUDA


@pytest.fixture
def gpu_stand_in(monkeypatch):
    """The stand-in driver installed with the kernels emulated; `launched` lists the names of the
    kernels launched (from the driver's cuLaunchKernel, below any profiler)."""
    with installed(FakeDriver()) as fake:
        fake_cuda_kernels.install(fake, monkeypatch)
        emulate, fake.launched = fake.cuLaunchKernel, []

        def counted(function, *args):
            fake.launched.append(function)
            return emulate(function, *args)
        fake.cuLaunchKernel = counted
        yield fake


def _work(x):
    with record_function("block"):
        y = (x * 2 + 1).exp()
        return y.sum()


def _kernels(prof):
    return [e for e in prof.events() if e.device_type.name == "CUDA"]


def test_kernels_are_timed_and_attached_to_their_ops(gpu_stand_in):
    x = tl.randn(64, 64).cuda()
    with profile(activities=[CPU, CUDA]) as prof:
        s = _work(x)
    assert abs(s.item() - (x.cpu() * 2 + 1).exp().sum().item()) < 1e-2 * abs(s.item())
    kernels = _kernels(prof)
    assert [k.name for k in kernels] == gpu_stand_in.launched         # every launch, in order
    assert len(kernels) == 4                                           # mul, add, exp, sum
    host = {e.id: e for e in prof.events() if e.device_type.name == "CPU"}
    for k in kernels:
        assert k.device_time_total > 0 and k.self_device_time_total == k.device_time_total
        assert k.cpu_time_total == 0 and k.self_cpu_time_total == 0
        assert k.device_index == 0 and k.thread == 0                   # the default stream
        op = host[k.parent_id]                                         # the op that launched it
        assert op.name.startswith(("elementwise.", "reduction.")), op.name
        assert [kk.name for kk in op.kernels] == [k.name]
        assert op.self_device_time_total == pytest.approx(k.device_time_total)
        assert op.cuda_time_total == op.device_time_total == op.self_device_time_total
        launch = host[k.correlation]                                   # its cuLaunchKernel
        assert launch.name == "cuLaunchKernel" and launch.parent_id == op.id
        assert launch.device_time_total == 0
        # the kernel ran while its launch did (the stand-in runs it inside cuLaunchKernel);
        # the device clock is the host's at the reference event, which is read just after
        assert launch.start_us <= k.start_us <= launch.end_us + 1e3
        assert op.start_us <= launch.start_us and launch.end_us <= op.end_us
    starts = [k.start_us for k in kernels]
    assert starts == sorted(starts)
    block = next(e for e in prof.events() if e.name == "block")
    total = sum(k.device_time_total for k in kernels)
    assert block.device_time_total == pytest.approx(total)            # its children's kernels
    assert block.self_device_time_total == 0                           # it launched none itself
    # the launch is a child of the op: the op's self CPU time leaves it out
    for op in (host[k.parent_id] for k in kernels):
        inner = sum(e.cpu_time_total for e in host.values() if e.parent_id == op.id)
        assert op.self_cpu_time_total == pytest.approx(op.cpu_time_total - inner)


def test_key_averages_table_and_sort_keys(gpu_stand_in):
    x = tl.randn(64, 64).cuda()
    with profile(activities=[CPU, CUDA]) as prof:
        for _ in range(2):
            _work(x)
    kernels = _kernels(prof)
    avg = {e.key: e for e in prof.key_averages()}
    for name in {k.name for k in kernels}:
        mine = [k for k in kernels if k.name == name]
        assert avg[name].count == len(mine) == 2
        assert avg[name].self_device_time_total == pytest.approx(sum(k.device_time_total for k in mine))
        assert avg[name].device_time == pytest.approx(avg[name].device_time_total / 2)
        assert avg[name].cpu_time_total == 0
    ops = [e for e in prof.events() if e.kernels]
    mul = avg["elementwise.binary[mul]"]
    assert mul.self_cuda_time_total == mul.self_device_time_total == pytest.approx(
        sum(e.self_device_time_total for e in ops if e.name == "elementwise.binary[mul]"))
    assert avg["block"].device_time_total == pytest.approx(sum(k.device_time_total for k in kernels))
    assert avg["cuLaunchKernel"].count == 8 and avg["cuLaunchKernel"].device_time_total == 0

    table = prof.key_averages().table(sort_by="cuda_time_total")
    lines = table.splitlines()
    for column in ("Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg", "Self CPU %"):
        assert column in lines[1]
    total = sum(k.device_time_total for k in kernels)
    assert lines[-1].startswith("Self CUDA time total:")
    assert lines[-2].startswith("Self CPU time total:")
    from torchlite.profiler._events import format_time
    assert lines[-1].endswith(format_time(total))                     # over the kernels only
    assert lines[3].startswith("block")                               # the largest CUDA total
    for key in ("cuda_time_total", "self_cuda_time_total", "device_time_total",
                "self_device_time_total"):
        rows = prof.key_averages().table(sort_by=key, row_limit=3).splitlines()[3:6]
        best = max(prof.key_averages(), key=lambda e: getattr(e, key))
        assert rows[0].startswith(best.key[:20]), (key, rows[0], best.key)


def test_chrome_trace_has_kernels_on_the_device_row_and_flows(gpu_stand_in, tmp_path):
    x = tl.randn(32, 32).cuda()
    with profile(activities=[CPU, CUDA]) as prof:
        _work(x)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    kernels = [e for e in trace if e.get("cat") == "kernel"]
    assert [e["name"] for e in kernels] == gpu_stand_in.launched
    ops = {e["args"]["External id"]: e for e in trace if e.get("cat") == "cpu_op"}
    launches = {e["args"]["correlation"]: e for e in trace if e.get("cat") == "cuda_runtime"}
    flows = {(e["ph"], e["id"]): e for e in trace if e.get("cat") == "ac2g"}
    for k in kernels:
        assert k["ph"] == "X" and k["pid"] == 0 and k["tid"] == 0 and k["dur"] > 0
        assert k["pid"] != os.getpid()
        op = ops[k["args"]["External id"]]                             # linked to its op
        assert op["pid"] == os.getpid() and op["name"].startswith(("elementwise.", "reduction."))
        launch = launches[k["args"]["correlation"]]                    # and to its launch
        assert launch["name"] == "cuLaunchKernel" and launch["args"]["External id"] == k["args"]["External id"]
        start, finish = flows[("s", k["args"]["correlation"])], flows[("f", k["args"]["correlation"])]
        assert (start["pid"], start["tid"], start["ts"]) == (launch["pid"], launch["tid"], launch["ts"])
        assert (finish["pid"], finish["tid"], finish["ts"], finish["bp"]) == (0, 0, k["ts"], "e")
        assert k["args"]["grid"][0] >= 1 and k["args"]["block"][0] >= 1
    names = {(e["name"], e["args"]["name"]) for e in trace if e["ph"] == "M" and e["name"] != "process_sort_index"}
    assert names == {("process_name", "GPU 0"), ("thread_name", "stream 0")}


def test_kernels_on_a_side_stream(gpu_stand_in, tmp_path):
    x = tl.randn(16).cuda()
    side = cuda.Stream()
    with profile(activities=[CPU, CUDA]) as prof:
        with cuda.stream(side):
            (x + 1).neg()
    kernels = _kernels(prof)
    assert len(kernels) == 2 and {k.thread for k in kernels} == {side.cuda_stream}
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    trace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert {e["tid"] for e in trace if e.get("cat") == "kernel"} == {side.cuda_stream}


def test_cpu_activity_only_times_nothing_on_the_device(gpu_stand_in):
    x = tl.randn(32).cuda()
    plain_launch, plain_malloc = _launch.launch, _allocator.CachingAllocator.malloc
    with profile(activities=[CPU], profile_memory=True) as prof:
        assert _launch.launch is plain_launch                          # not wrapped
        assert _allocator.CachingAllocator.malloc is plain_malloc
        gpu_stand_in.calls.clear()
        (x * 3).exp()
    assert len(gpu_stand_in.launched) == 2                             # the kernels did run
    assert "cuEventRecord" not in gpu_stand_in.calls
    assert not _kernels(prof)
    assert not any(e.name == "cuLaunchKernel" for e in prof.events())
    assert all(e.device_time_total == 0 for e in prof.events())
    assert all(r.device_type.name == "CPU" for r in prof.events().memory_records)
    assert "Self CUDA" not in prof.key_averages().table()


def test_nothing_stays_wrapped_and_events_are_pooled(gpu_stand_in):
    x = tl.randn(32).cuda()
    plain_launch, plain_malloc = _launch.launch, _allocator.CachingAllocator.malloc
    plain_free = _allocator.CachingAllocator.free
    counts = []
    for _ in range(2):
        gpu_stand_in.calls.clear()
        with profile(activities=[CPU, CUDA], profile_memory=True) as prof:
            assert _launch.launch is not plain_launch
            assert _allocator.CachingAllocator.malloc is not plain_malloc
            x * 2
        assert len(_kernels(prof)) == 1
        counts.append(gpu_stand_in.calls.count("cuEventCreate"))
        assert (_launch.launch, _allocator.CachingAllocator.malloc,
                _allocator.CachingAllocator.free) == (plain_launch, plain_malloc, plain_free)
    assert counts[0] == 3 and counts[1] == 0        # reference, start, end; then from the pool
    gpu_stand_in.calls.clear()
    x * 2                                           # no profile: nothing but the launch
    assert not {"cuEventRecord", "cuEventCreate", "cuCtxSynchronize"} & set(gpu_stand_in.calls)


def test_a_failed_launch_leaves_the_profile_consistent(gpu_stand_in):
    x = tl.randn(8).cuda()

    def failing(*args):
        return (1,)                                 # CUDA_ERROR_INVALID_VALUE
    gpu_stand_in.cuLaunchKernel = failing
    with profile(activities=[CPU, CUDA]) as prof:
        with pytest.raises(RuntimeError, match="launching CUDA kernel"):
            x * 2
        with record_function("after"):
            pass
    assert not _kernels(prof)
    after = next(e for e in prof.events() if e.name == "after")
    assert after.depth == 0                          # the failed launch's event was closed


def test_autograd_profiler_use_cuda(gpu_stand_in):
    from torchlite.autograd import profiler
    x = tl.randn(16).cuda()
    with profiler.profile(use_cuda=True) as prof:
        x.exp()
    assert any(e.self_device_time_total > 0 for e in prof.key_averages())
    assert "CUDA total" in prof.table(sort_by="self_cuda_time_total")


# ---- "[memory]" records --------------------------------------------------------------------------
def test_cuda_allocations_and_frees_are_recorded(fake_cuda, tmp_path):
    warm = tl.empty(4, device="cuda")                # the allocator exists before the profile
    block = 4096                                     # the allocator's size class of 4000 bytes
    base = cuda.memory_allocated()
    with profile(activities=[CPU, CUDA], profile_memory=True) as prof:
        a = tl.empty(1000, device="cuda")            # + 4096, inside array.empty
        b = tl.empty(2000, device="cuda")            # + 8192
        address_a, address_b = a.data_ptr(), b.data_ptr()
        del a                                        # - 4096, outside every op
        with record_function("inside"):
            del b                                    # - 8192, inside a range
    records = [r for r in prof.events().memory_records if r.device_type.name == "CUDA"]
    assert [(r.nbytes, r.address) for r in records] == [
        (block, address_a), (2 * block, address_b), (-block, address_a), (-2 * block, address_b)]
    assert [r.total_allocated for r in records] == [base + block, base + 3 * block, base + 2 * block, base]
    assert all(r.device_index == 0 and r.total_reserved >= r.total_allocated for r in records)
    # prof.events(): "[memory]" only for what no op or range holds (PyTorch's rule)
    mem = [e for e in prof.events() if e.name == "[memory]"]
    assert [(e.device_memory_usage, e.cpu_memory_usage) for e in mem] == [(-block, 0)]
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["[memory]"].count == 1 and avg["[memory]"].device_memory_usage == -block
    assert avg["inside"].device_memory_usage == -2 * block
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    instants = [e for e in json.loads(path.read_text())["traceEvents"] if e["name"] == "[memory]"]
    cuda_instants = [e for e in instants if e["args"]["Device Type"] == 1]
    assert all(e["ph"] == "i" and e["pid"] == os.getpid() for e in instants)
    assert [(e["args"]["Bytes"], e["args"]["Addr"], e["args"]["Device Id"], e["args"]["Total Allocated"])
            for e in cuda_instants] == [(r.nbytes, r.address, 0, r.total_allocated) for r in records]
    assert all("Total Reserved" in e["args"] for e in cuda_instants)
    del warm


@pytest.mark.skipif(not _HAS_GPU, reason="no CUDA GPU")
def test_kernels_are_timed_on_a_real_gpu():
    """On a GPU (.ci/gpu_check runs this file): the kernels' device times come from the
    device's own CUDA events, each within its op's wall time and summed into the op."""
    x = tl.randn(1024, 1024, device="cuda")
    _work(x).item()                                   # kernels compiled before the profile
    with profile(activities=[CPU, CUDA]) as prof:
        s = _work(x)
        s.item()
    kernels = _kernels(prof)
    assert len(kernels) >= 4 and all(k.device_time_total > 0 for k in kernels)   # (a sum may take two)
    host = {e.id: e for e in prof.events() if e.device_type.name == "CPU"}
    for k in kernels:
        op = host[k.parent_id]
        assert op.self_device_time_total >= k.device_time_total
    assert "Self CUDA" in prof.key_averages().table(sort_by="cuda_time_total")
