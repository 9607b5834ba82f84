"""What a profile holds: timed events, their averages by name, and the text table and the
Chrome trace made from them (torch.profiler's FunctionEvent, EventList, key_averages,
table and export_chrome_trace).

Events are of three kinds, as PyTorch's: host events (device_type CPU: array-layer calls,
record_function ranges, "cuLaunchKernel" launches, and "[memory]" allocations or frees made
outside every op), and kernels timed on the device (device_type CUDA: self and total device
time are the kernel's duration, CPU times 0).  A host event's self_device_time_total is the
time of the kernels it launched itself (its `kernels`), its device_time_total adds its
children's; the table's device share is taken over the kernels only, so nothing counts twice.
"""
from __future__ import annotations

import enum
import json
import os
from collections import OrderedDict, namedtuple
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


def format_time(us: float) -> str:
    """A duration in microseconds as PyTorch's tables print it: 12.345us, 1.234ms, 2.000s."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_memory(nbytes: int) -> str:
    """A byte count as PyTorch's tables print it: 512 B, 1.50 KB, 2.00 MB, 1.00 GB."""
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{nbytes} B"


class DeviceType(enum.Enum):
    """Where an event ran (torch.autograd.DeviceType's values)."""
    CPU = 0
    CUDA = 1


# a kernel launched by a host event: its name, device and device time (us), as PyTorch's
Kernel = namedtuple("Kernel", ["name", "device", "duration"])

# one allocation (nbytes > 0) or free (nbytes < 0) seen while a profile recorded memory:
# what the Chrome trace's "[memory]" instant events show (total_reserved None where unknown)
MemoryRecord = namedtuple("MemoryRecord", ["time_us", "device_type", "device_index", "address", "nbytes",
                                           "total_allocated", "total_reserved", "thread"])


def _device_time(event: Any) -> float:
    return event.device_time_total


def _self_device_time(event: Any) -> float:
    return event.self_device_time_total


def _device_memory(event: Any) -> int:
    return event.device_memory_usage


def _self_device_memory(event: Any) -> int:
    return event.self_device_memory_usage


class FunctionEvent:
    """One timed call: an array-layer kernel call (named like 'elementwise.binary[mul]'), a
    record_function range, a kernel launch ('cuLaunchKernel'), a kernel on the device (its
    name expression, device_type CUDA, `thread` its stream) or a "[memory]" record.  Times
    are in microseconds from the start of the profile; memory (with profile_memory) in bytes
    allocated minus freed while it ran.  `id` is the trace's "External id"; a kernel's
    `correlation` is the id of its launch, its `parent_id` the op that launched it."""

    __slots__ = ("name", "start_us", "end_us", "self_cpu_time_total", "thread", "input_shapes",
                 "depth", "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
                 "self_device_memory_usage", "id", "parent_id", "category", "device_type",
                 "device_index", "correlation", "trace_args", "kernels", "device_time_total",
                 "self_device_time_total")

    def __init__(self, name: str, start_us: float, end_us: float, child_us: float, thread: int,
                 input_shapes: list[list[int]], depth: int, cpu_memory_usage: int = 0,
                 self_cpu_memory_usage: int = 0, device_memory_usage: int = 0,
                 self_device_memory_usage: int = 0, *, id: int = 0, parent_id: int | None = None,
                 category: str = "cpu_op", device_type: DeviceType = DeviceType.CPU,
                 device_index: int = 0, correlation: int | None = None,
                 trace_args: dict[str, Any] | None = None) -> None:
        self.name = name
        self.start_us = start_us
        self.end_us = end_us
        on_device = device_type is not DeviceType.CPU
        self.self_cpu_time_total = 0.0 if on_device else end_us - start_us - child_us
        self.thread = thread
        self.input_shapes = input_shapes
        self.depth = depth
        self.cpu_memory_usage = cpu_memory_usage
        self.self_cpu_memory_usage = self_cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.self_device_memory_usage = self_device_memory_usage
        self.id = id
        self.parent_id = parent_id
        self.category = category
        self.device_type = device_type
        self.device_index = device_index
        self.correlation = correlation
        self.trace_args = trace_args
        self.kernels = ()            # a list of Kernel once it launched one (see the profile)
        self.device_time_total = self.self_device_time_total = end_us - start_us if on_device else 0.0

    cuda_memory_usage = property(_device_memory)          # PyTorch's older names
    self_cuda_memory_usage = property(_self_device_memory)
    cuda_time_total = property(_device_time)
    self_cuda_time_total = property(_self_device_time)
    device_time = cuda_time = property(_device_time)

    @property
    def key(self) -> str:
        return self.name

    @property
    def count(self) -> int:
        return 1

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us if self.device_type is DeviceType.CPU else 0.0

    cpu_time = cpu_time_total

    @property
    def time_range(self) -> tuple[float, float]:
        return (self.start_us, self.end_us)

    def __repr__(self) -> str:
        device = (f" device_time={format_time(self.device_time_total)}"
                  f" self_device_time={format_time(self.self_device_time_total)}"
                  if self.device_time_total else "")
        return (f"<FunctionEvent name={self.name} device_type={self.device_type.name} "
                f"cpu_time={format_time(self.cpu_time_total)} "
                f"self_cpu_time={format_time(self.self_cpu_time_total)}{device} thread={self.thread} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """The events of one key (name, or name and input shapes) summed: count, times, memory."""

    _SUMMED = ("cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
               "self_device_memory_usage", "device_time_total", "self_device_time_total")

    def __init__(self, key: str, input_shapes: list[list[int]] | None = None) -> None:
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_type = None           # the first event's (as PyTorch's)
        for name in self._SUMMED:
            setattr(self, name, 0)

    def add(self, event: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        if self.device_type is None:
            self.device_type = event.device_type
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        for name in self._SUMMED:
            setattr(self, name, getattr(self, name) + getattr(event, name))
        return self

    cuda_memory_usage = property(_device_memory)
    self_cuda_memory_usage = property(_self_device_memory)
    cuda_time_total = property(_device_time)
    self_cuda_time_total = property(_self_device_time)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return self.device_time_total / self.count if self.count else 0.0

    cuda_time = device_time

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={format_time(self.self_cpu_time_total)} "
                f"cpu_time={format_time(self.cpu_time)} "
                f"self_device_time={format_time(self.self_device_time_total)} "
                f"device_time={format_time(self.device_time)} count={self.count}>")


_SORT_KEYS = {"cpu_time_total", "self_cpu_time_total", "cpu_time", "count", "cuda_time_total",
              "self_cuda_time_total", "device_time_total", "self_device_time_total", "cuda_time",
              "device_time",
              "cpu_memory_usage", "self_cpu_memory_usage", "cuda_memory_usage",
              "self_cuda_memory_usage", "device_memory_usage", "self_device_memory_usage"}


class EventList(list):
    """A list of events (or of averages) with torch's table, key_averages and trace export.
    profile_memory: the profile recorded memory (the table then shows the host memory columns
    even where every value is 0, as PyTorch's); memory_records: its allocations and frees."""

    profile_memory = False
    memory_records = ()       # every MemoryRecord of the profile (the trace's "[memory]" events)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        groups = OrderedDict()
        for e in self:
            shapes = str(e.input_shapes) if group_by_input_shape else None
            k = (e.key, shapes)
            if k not in groups:
                groups[k] = FunctionEventAvg(e.key, e.input_shapes if group_by_input_shape else None)
            groups[k].add(e)
        out = EventList(groups.values())
        out.profile_memory = self.profile_memory
        return out

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """The events (usually key_averages()) as torch's text table: self and total CPU time
        with their shares of the profile, the average, and the call count; self and total
        device time ("Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg") when any
        event has some, the memory columns with profile_memory."""
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise AttributeError(f"table: sort_by must be one of {sorted(_SORT_KEYS)}, "
                                     f"got {sort_by!r}")
            rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        sum_self_cpu = sum(e.self_cpu_time_total for e in self)
        total_self = sum_self_cpu or 1.0
        device = any(e.device_time_total or e.self_device_time_total for e in self)
        # the device share is over the kernels only: a host event's device time is theirs
        sum_self_device = sum(e.self_device_time_total for e in self
                              if e.device_type not in (None, DeviceType.CPU))
        total_device = sum_self_device or 1.0
        shapes = any(getattr(e, "input_shapes", None) for e in rows)
        name_w = min(max_name_column_width, max([len(str(e.key)) for e in rows] + [4]) + 2)
        cols = [("Name", name_w), ("Self CPU %", 12), ("Self CPU", 12), ("CPU total %", 12),
                ("CPU total", 12), ("CPU time avg", 12)]
        if device:
            cols += [("Self CUDA", 12), ("Self CUDA %", 12), ("CUDA total", 12), ("CUDA time avg", 12)]
        memory = [(title, attr) for title, attr in (
            ("CPU Mem", "cpu_memory_usage"), ("Self CPU Mem", "self_cpu_memory_usage"),
            ("CUDA Mem", "device_memory_usage"), ("Self CUDA Mem", "self_device_memory_usage"))
            if (self.profile_memory and "CPU" in title) or any(getattr(e, attr, 0) for e in self)]
        cols += [(title, 12) for title, _ in memory] + [("# of Calls", 12)]
        if shapes:
            cols.append(("Input Shapes", min(max_shapes_column_width, 40)))
        line = "  ".join("-" * w for _, w in cols)
        out = [] if header is None else [header]
        out += [line, "  ".join(f"{n:<{w}}" if i == 0 else f"{n:>{w}}" for i, (n, w) in
                               enumerate(cols)), line]
        for e in rows:
            name = str(e.key)
            if len(name) > name_w:
                name = name[:name_w - 3] + "..."
            cells = [f"{name:<{name_w}}",
                     f"{100.0 * e.self_cpu_time_total / total_self:>11.2f}%",
                     f"{format_time(e.self_cpu_time_total):>12}",
                     f"{100.0 * e.cpu_time_total / total_self:>11.2f}%",
                     f"{format_time(e.cpu_time_total):>12}",
                     f"{format_time(e.cpu_time):>12}"]
            if device:
                cells += [f"{format_time(e.self_device_time_total):>12}",
                          f"{100.0 * e.self_device_time_total / total_device:>11.2f}%",
                          f"{format_time(e.device_time_total):>12}",
                          f"{format_time(e.device_time):>12}"]
            cells += [f"{format_memory(getattr(e, attr)):>12}" for _, attr in memory]
            cells.append(f"{e.count:>12}")
            if shapes:
                cells.append(f"{str(e.input_shapes)[:cols[-1][1]]:>{cols[-1][1]}}")
            out.append("  ".join(cells))
        out += [line, f"Self CPU time total: {format_time(sum_self_cpu)}"]
        if device:
            out.append(f"Self CUDA time total: {format_time(sum_self_device)}")
        return "\n".join(out) + "\n"

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (JSON 'X' events in microseconds), which
        chrome://tracing, Perfetto and TensorBoard's profile plugin open."""
        write_chrome_trace(self, path)


def chrome_trace(events: Iterable[FunctionEvent | FunctionEventAvg]) -> dict[str, Any]:
    """The trace as PyTorch's profiler writes it: host events as 'X' events ("cat" "cpu_op",
    or "cuda_runtime" for launches) on the process's row of each thread, kernels as 'X'
    events with "cat" "kernel" on the device's row (pid: the device number, tid: the stream),
    each launch tied to its kernel by an "ac2g" flow ('s' at the launch, 'f' at the kernel)
    and by "External id" (the launching op's id) and "correlation" (the launch's id) in the
    args, and each recorded allocation or free as a "[memory]" instant event ('i')."""
    pid = os.getpid()
    fevents = [e for e in events if isinstance(e, FunctionEvent)]
    host = {e.id: e for e in fevents if e.device_type is DeviceType.CPU}
    trace, streams = [], {}
    for e in fevents:
        if e.category == "memory":             # written from the memory records below
            continue
        if e.device_type is DeviceType.CPU:
            if e.category == "cuda_runtime":
                args = {"External id": e.parent_id or 0, "correlation": e.id}
            else:
                args = {"External id": e.id}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            trace.append({"name": e.name, "ph": "X", "cat": e.category, "ts": round(e.start_us, 3),
                          "dur": round(e.cpu_time_total, 3), "pid": pid, "tid": e.thread, "args": args})
            continue
        args = {"External id": e.parent_id or 0, "correlation": e.correlation, **(e.trace_args or {})}
        trace.append({"name": e.name, "ph": "X", "cat": "kernel", "ts": round(e.start_us, 3),
                      "dur": round(e.device_time_total, 3), "pid": e.device_index, "tid": e.thread,
                      "args": args})
        streams.setdefault(e.device_index, set()).add(e.thread)
        launch = host.get(e.correlation)
        if launch is not None:
            trace.append({"name": "ac2g", "ph": "s", "cat": "ac2g", "id": e.correlation,
                          "pid": pid, "tid": launch.thread, "ts": round(launch.start_us, 3)})
            trace.append({"name": "ac2g", "ph": "f", "bp": "e", "cat": "ac2g", "id": e.correlation,
                          "pid": e.device_index, "tid": e.thread, "ts": round(e.start_us, 3)})
    for r in getattr(events, "memory_records", ()):
        args = {"Addr": r.address, "Bytes": r.nbytes, "Total Allocated": r.total_allocated}
        if r.total_reserved is not None:
            args["Total Reserved"] = r.total_reserved
        args["Device Type"] = r.device_type.value
        args["Device Id"] = r.device_index
        trace.append({"name": "[memory]", "ph": "i", "s": "t", "cat": "cpu_instant_event",
                      "ts": round(r.time_us, 3), "pid": pid, "tid": r.thread, "args": args})
    for device, tids in sorted(streams.items()):
        trace.append({"name": "process_name", "ph": "M", "pid": device, "tid": 0,
                      "args": {"name": f"GPU {device}"}})
        trace.append({"name": "process_sort_index", "ph": "M", "pid": device, "tid": 0,
                      "args": {"sort_index": 1000 + device}})
        trace += [{"name": "thread_name", "ph": "M", "pid": device, "tid": tid,
                   "args": {"name": f"stream {tid}"}} for tid in sorted(tids)]
    return {"schemaVersion": 1, "traceEvents": trace, "displayTimeUnit": "ms"}


def write_chrome_trace(events: Iterable[FunctionEvent | FunctionEventAvg], path: str) -> None:
    opener = open
    if str(path).endswith(".gz"):
        import gzip
        opener = gzip.open
    with opener(path, "wt") as f:
        json.dump(chrome_trace(events), f)
