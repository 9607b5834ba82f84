"""torch.profiler's API on torchlite: profile, record_function, schedule, ProfilerActivity,
ProfilerAction, tensorboard_trace_handler.

What is timed on the host: every call through the array layer's one door (torchlite/
_dispatch.py, which calls an observer around each kernel function while one is set: nothing
is wrapped, and nothing costs, while no profile records) and every record_function range.
Host events are named by the array-layer function and, for the elementwise and reduction
families, the op: 'elementwise.binary[mul]', 'reduction.reduce[sum]',
'matmul.bmm[addmm_impl_cpu_]'.  Their times are host (CPU) wall times.

What is timed on the device: with ProfilerActivity.CUDA among the activities (the default
where CUDA is usable) every CUDA kernel launch (torchlite/cuda/_launch.py's `launch`, the one
function every kernel goes through) is bracketed by two CUDA events on the launch's stream and
read back with cuEventElapsedTime when the profile stops (torchlite/profiler/_device.py).  Each
kernel becomes an event of its own (device_type CUDA, named by its kernel's name expression,
`thread` its stream, device_index its device), the launch a "cuLaunchKernel" host event inside
the op, and the op's `kernels`, self_device_time_total (its own kernels) and
device_time_total (with its children's) sum the kernels' times, as do key_averages and the
table's "Self CUDA", "Self CUDA %", "CUDA total" and "CUDA time avg" columns; the Chrome trace
puts the kernels on the device's row (pid: device number, tid: stream) with "cat": "kernel",
tied to their launch by an "ac2g" flow and to their op by "External id".  Only kernels are
timed: copies and memsets (Memcpy/Memset rows in PyTorch) are not.  With only
ProfilerActivity.CPU the launch function is not wrapped and nothing is timed on the device.

profile_memory=True gives each event the change of the host allocator's live bytes while it
ran (cpu_memory_usage; self_cpu_memory_usage leaves out its children's), and of the CUDA
allocator's when CUDA is profiled (device_memory_usage): allocations minus frees, in the
allocators' block sizes (host: a multiple of 64 bytes, of 64 KiB from 128 KiB on, of 2 MiB
from 2 MiB on).  The table shows them as PyTorch's does ("CPU Mem", "Self CPU Mem").  It also
records allocations as PyTorch's "[memory]" records (prof.events().memory_records, and
instant events named "[memory]" in the Chrome trace with "Addr", "Bytes" (negative for a
free), "Total Allocated", "Total Reserved", "Device Type" and "Device Id"); a record made
outside every op and range is also a "[memory]" event in prof.events() and key_averages
(cpu_memory_usage or device_memory_usage = its bytes), one made inside one counts in that
op's memory columns, as in PyTorch.
- CUDA (with CUDA profiled): every allocation and free of the caching allocator, one record
  each, with its block's address and the device's allocated and reserved totals after it
  (torchlite/cuda/_allocator.py's set_observer; pinned host blocks have Device Type CPU,
  Device Id -1).
- Host: every storage allocation and free of the host allocator, one record each, with its
  block's address and the live and live-plus-cached totals after it (torchlite/_core/
  array.pyx's set_alloc_observer).  A free is recorded where the storage's last reference
  goes, so it counts in the op that dropped it.  The host count is the process's: what
  another thread allocates while an event runs counts in that event."""
from __future__ import annotations

import enum
import itertools
import os
import socket
import threading
import time
from typing import TYPE_CHECKING

from .. import _dispatch
from .._core.array import live_bytes, set_alloc_observer
from ._events import DeviceType, EventList, FunctionEvent, Kernel, MemoryRecord, write_chrome_trace

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    from .. import _dispatch as dispatch
    return {ProfilerActivity.CPU} | ({ProfilerActivity.CUDA} if dispatch.cuda_available() else set())


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """The step -> ProfilerAction function torch.profiler.schedule makes: skip_first steps
    off, then cycles of `wait` steps off, `warmup` steps warming up, `active` steps
    recorded (the last one RECORD_AND_SAVE, when on_trace_ready runs), `repeat` cycles (0:
    forever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")
    cycle = wait + warmup + active

    def action(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


_NAMED_BY_OP = {}


def _op_names():
    """op code -> name for the elementwise families (read once from the kernel tables)."""
    if not _NAMED_BY_OP:
        ew = _dispatch.elementwise
        for family, table in (("unary", ew.UNARY), ("binary", ew.BINARY),
                              ("ternary", ew.TERNARY)):
            _NAMED_BY_OP[f"elementwise.{family}"] = {code: name for name, code in table.items()}
    return _NAMED_BY_OP


def _event_name(qualname, args):
    if qualname.startswith("elementwise.") and args and isinstance(args[0], int):
        names = _op_names().get(qualname)
        if names is not None and args[0] in names:
            return f"{qualname}[{names[args[0]]}]"
    if qualname in ("reduction.reduce", "reduction.scan") and args and isinstance(args[0], str):
        return f"{qualname}[{args[0]}]"
    if qualname == "matmul.bmm" and len(args) > 5 and isinstance(args[5], str):
        return f"{qualname}[{args[5]}]"
    return qualname


def _shapes(args):
    return [list(a.shape) if hasattr(a, "shape") and hasattr(a, "dtype") else []
            for a in args]


def _no_bytes():
    return 0


_ids = itertools.count(1)     # event ids: the Chrome trace's "External id" and "correlation"


class _Recorder:
    """Collects the events of one profile, one nesting stack per thread (a nested event's
    time is its parent's child time, so self times add up to the total).  With
    profile_memory, each event also gets the change of the host allocator's live bytes over
    its run (and of the CUDA allocator's, when CUDA is profiled and in use), its children's
    changes counted apart as its times are, and `memory` gets the allocation records (see the
    module docstring).  `timer`: the KernelTimer timing kernel launches, when CUDA is."""

    def __init__(self, record_shapes, profile_memory=False, device_memory=None):
        self.record_shapes = record_shapes
        self.events = []
        self.t0 = time.perf_counter_ns()
        self.local = threading.local()
        self.lock = threading.Lock()
        self.profile_memory = profile_memory
        self.host_bytes = live_bytes if profile_memory else _no_bytes
        self.device_bytes = device_memory if profile_memory and device_memory else _no_bytes
        # (ns, DeviceType, device, address, bytes, total allocated, total reserved, thread,
        #  inside an op)
        self.memory = []
        self.timer = None

    def _stack(self):
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        return stack

    def next_id(self):
        return next(_ids)

    def begin(self):
        stack = self._stack()
        host = self.host_bytes()
        # [start time, children's time, host bytes at start, children's host bytes,
        #  device bytes at start, children's device bytes, id, parent's id]
        stack.append([time.perf_counter_ns(), 0, host, 0, self.device_bytes(), 0, next(_ids),
                      stack[-1][6] if stack else None])
        return stack

    def end(self, stack, name, shapes, category="cpu_op"):
        end = time.perf_counter_ns()
        host, device = self.host_bytes(), self.device_bytes()
        start, child, host0, host_child, dev0, dev_child, eid, parent_id = stack.pop()
        if stack:
            parent = stack[-1]
            parent[1] += end - start
            parent[3] += host - host0
            parent[5] += device - dev0
        e = FunctionEvent(name, (start - self.t0) / 1e3, (end - self.t0) / 1e3, child / 1e3,
                          threading.get_ident(), shapes, len(stack), host - host0,
                          host - host0 - host_child, device - dev0, device - dev0 - dev_child,
                          id=eid, parent_id=parent_id, category=category)
        with self.lock:
            self.events.append(e)
        return e

    def observe(self, qualname, fn, args, kwargs):
        stack = self.begin()
        try:
            return fn(*args, **kwargs)
        finally:
            self.end(stack, _event_name(qualname, args), _shapes(args) if self.record_shapes else [])

    # ---- memory records ----
    def host_record(self, address, nbytes, allocated, reserved):
        """A host storage's allocation or free (the host allocator's observer)."""
        in_op = bool(getattr(self.local, "stack", None))
        self.memory.append((time.perf_counter_ns(), DeviceType.CPU, -1, address, nbytes,
                            allocated, reserved, threading.get_ident(), in_op))

    def device_record(self, device, address, nbytes, allocated, reserved):
        """A CUDA caching allocator's allocation or free (its observer; device -1 is pinned
        host memory)."""
        in_op = bool(getattr(self.local, "stack", None))
        kind = DeviceType.CUDA if device >= 0 else DeviceType.CPU
        self.memory.append((time.perf_counter_ns(), kind, device, address, nbytes, allocated,
                            reserved, threading.get_ident(), in_op))

    # ---- at stop ----
    def finish(self):
        """(events sorted by start time, memory records): the host events with their kernels'
        device times, the kernels, and the "[memory]" events of allocations made outside
        every op (those inside one are its memory columns, as in PyTorch)."""
        events = list(self.events)
        kernels = self.timer.collect(self.t0) if self.timer is not None else []
        if kernels:
            by_id = {e.id: e for e in events}
            for k in kernels:
                op = by_id.get(k.parent_id)
                if op is not None:
                    if not op.kernels:
                        op.kernels = []
                    op.kernels.append(Kernel(k.name, k.device_index, k.device_time_total))
                    op.self_device_time_total += k.device_time_total
            for e in events:
                e.device_time_total = e.self_device_time_total
            for e in sorted(events, key=lambda e: -e.depth):      # children before parents
                parent = by_id.get(e.parent_id)
                if parent is not None:
                    parent.device_time_total += e.device_time_total
        records, memory_events = [], []
        for ns, kind, device, address, nbytes, allocated, reserved, thread, in_op in self.memory:
            r = MemoryRecord((ns - self.t0) / 1e3, kind, device, address, nbytes, allocated,
                             reserved, thread)
            records.append(r)
            if not in_op:
                cpu = kind is DeviceType.CPU
                memory_events.append(FunctionEvent(
                    "[memory]", r.time_us, r.time_us, 0.0, thread, [], 0,
                    nbytes if cpu else 0, nbytes if cpu else 0, 0 if cpu else nbytes,
                    0 if cpu else nbytes, id=next(_ids), category="memory"))
        out = sorted(events + kernels + memory_events, key=lambda e: e.start_us)
        return out, sorted(records, key=lambda r: r.time_us)


_active = [None]        # the recorder of the profile that is recording, if any


class record_function:
    """A named range in the profile (torch.profiler.record_function): a context manager or
    a decorator; it costs one check while no profile records."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._stack = None

    def __enter__(self) -> record_function:
        rec = _active[0]
        if rec is not None:
            self._rec, self._stack = rec, rec.begin()
        return self

    def __exit__(self, *exc: object) -> bool:
        if self._stack is not None:
            self._rec.end(self._stack, self.name, [])
            self._stack = None
        return False

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapper


class profile:
    """torch.profiler.profile: records kernel calls and record_function ranges between
    start() and stop() (or in a with block), driven by `schedule` through step() when one
    is given; on_trace_ready(prof) runs at the end of each recorded cycle (and at stop while
    recording).  Results: events(), key_averages(), export_chrome_trace()."""

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False,
                 use_cuda: bool | None = None) -> None:
        acts = set(activities) if activities is not None else supported_activities()
        if use_cuda:
            acts.add(ProfilerActivity.CUDA)
        self.activities = acts
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.step_num = 0
        self.current_action = None
        self._recorder = None
        self._events = EventList()
        self._started = False

    # ---- recording on and off ----
    def _record_on(self):
        if _active[0] is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        rec = self._recorder = _Recorder(self.record_shapes, self.profile_memory, self._device_memory())
        _active[0] = rec
        _dispatch.set_kernel_observer(rec.observe)
        if self.profile_memory:
            set_alloc_observer(rec.host_record)
        if self._cuda_profiled():
            from . import _device
            rec.timer = _device.KernelTimer(rec)
            if self.profile_memory:
                _dispatch.devices.observe_allocations(rec.device_record)

    def _cuda_profiled(self):
        """Whether this profile records CUDA: asked for, and usable here (torchlite.cuda's
        modules are not imported otherwise)."""
        return ProfilerActivity.CUDA in self.activities and _dispatch.cuda_available()

    def _device_memory(self):
        """The CUDA allocator's live-bytes query, when CUDA is profiled and in use."""
        if not self._cuda_profiled():
            return None
        from .. import cuda
        return cuda.memory_allocated if cuda.is_initialized() else None

    def _record_off(self):
        rec = self._recorder
        if rec is None:
            return
        _dispatch.set_kernel_observer(None)
        set_alloc_observer(None)
        _active[0] = None
        if rec.timer is not None:
            rec.timer.stop()
            _dispatch.devices.observe_allocations(None)
        self._recorder = None
        events, records = rec.finish()
        self._events = EventList(events)
        self._events.profile_memory = self.profile_memory
        self._events.memory_records = records

    def _recording(self, action):
        return action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    def start(self) -> profile:
        self._started = True
        self.current_action = (self.schedule(self.step_num) if self.schedule is not None
                               else ProfilerAction.RECORD)
        if self._recording(self.current_action):
            self._record_on()
        return self

    def stop(self) -> None:
        if not self._started:
            return
        was_recording = self._recorder is not None
        self._record_off()
        self._started = False
        if was_recording and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def step(self) -> None:
        """Advance the schedule by one step (call once per training iteration)."""
        if self.schedule is None or not self._started:
            self.step_num += 1
            return
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if prev == ProfilerAction.RECORD_AND_SAVE or (
                self._recording(prev) and not self._recording(self.current_action)):
            self._record_off()
            if prev == ProfilerAction.RECORD_AND_SAVE and self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if self._recording(self.current_action) and self._recorder is None:
            self._record_on()

    def __enter__(self) -> profile:
        return self.start()

    def __exit__(self, *exc: object) -> bool:
        self.stop()
        return False

    # ---- results ----
    def events(self) -> EventList:
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self._events.key_averages(group_by_input_shape)

    def export_chrome_trace(self, path: str) -> None:
        write_chrome_trace(self._events, path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write 'name count' lines of the events' self times (flame-graph input)."""
        with open(path, "w") as f:
            for e in self._events.key_averages():
                f.write(f"{e.key} {int(getattr(e, metric))}\n")


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[profile], None]:
    """An on_trace_ready that writes each recorded cycle as
    `<worker>.<time>.pt.trace.json` into dir_name (what TensorBoard's profile plugin reads)."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        stamp = time.time_ns()
        while True:                      # two cycles in one tick must not overwrite each other
            name = f"{worker}.{stamp}.pt.trace.json" + (".gz" if use_gzip else "")
            if not os.path.exists(os.path.join(dir_name, name)):
                break
            stamp += 1
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler
