"""What a profile holds: timed events, their averages by name, and the text table and the
Chrome trace made from them (torch.profiler's FunctionEvent, EventList, key_averages,
table and export_chrome_trace)."""
from __future__ import annotations

import json
import os
from collections import OrderedDict
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


def _device_memory(event: Any) -> int:
    return event.device_memory_usage


def _self_device_memory(event: Any) -> int:
    return event.self_device_memory_usage


class FunctionEvent:
    """One timed call: an array-layer kernel call (named like 'elementwise.binary[mul]') or a
    record_function range.  Times are in microseconds from the start of the profile; memory
    (with profile_memory) in bytes allocated minus freed while it ran."""

    __slots__ = ("name", "start_us", "end_us", "self_cpu_time_total", "thread", "input_shapes",
                 "depth", "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
                 "self_device_memory_usage")

    def __init__(self, name: str, start_us: float, end_us: float, child_us: float, thread: int,
                 input_shapes: list[list[int]], depth: int, cpu_memory_usage: int = 0,
                 self_cpu_memory_usage: int = 0, device_memory_usage: int = 0,
                 self_device_memory_usage: int = 0) -> None:
        self.name = name
        self.start_us = start_us
        self.end_us = end_us
        self.self_cpu_time_total = end_us - start_us - child_us
        self.thread = thread
        self.input_shapes = input_shapes
        self.depth = depth
        self.cpu_memory_usage = cpu_memory_usage
        self.self_cpu_memory_usage = self_cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.self_device_memory_usage = self_device_memory_usage

    cuda_memory_usage = property(_device_memory)          # PyTorch's older names
    self_cuda_memory_usage = property(_self_device_memory)

    @property
    def key(self) -> str:
        return self.name

    @property
    def count(self) -> int:
        return 1

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    cpu_time = cpu_time_total

    @property
    def time_range(self) -> tuple[float, float]:
        return (self.start_us, self.end_us)

    def __repr__(self) -> str:
        return (f"<FunctionEvent name={self.name} cpu_time={format_time(self.cpu_time_total)} "
                f"self_cpu_time={format_time(self.self_cpu_time_total)} thread={self.thread} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """The events of one key (name, or name and input shapes) summed: count and times."""

    _MEMORY = ("cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
               "self_device_memory_usage")

    def __init__(self, key: str, input_shapes: list[list[int]] | None = None) -> None:
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        for name in self._MEMORY:
            setattr(self, name, 0)

    def add(self, event: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        for name in self._MEMORY:
            setattr(self, name, getattr(self, name) + getattr(event, name))
        return self

    cuda_memory_usage = property(_device_memory)
    self_cuda_memory_usage = property(_self_device_memory)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    # torch's names for device times: no device timeline is recorded here (see profile)
    cuda_time_total = self_cuda_time_total = device_time_total = self_device_time_total = 0.0

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={format_time(self.self_cpu_time_total)} "
                f"cpu_time={format_time(self.cpu_time)} count={self.count}>")


_SORT_KEYS = {"cpu_time_total", "self_cpu_time_total", "cpu_time", "count", "cuda_time_total",
              "self_cuda_time_total", "device_time_total", "self_device_time_total",
              "cpu_memory_usage", "self_cpu_memory_usage", "cuda_memory_usage",
              "self_cuda_memory_usage", "device_memory_usage", "self_device_memory_usage"}


class EventList(list):
    """A list of events (or of averages) with torch's table, key_averages and trace export.
    profile_memory: the profile recorded memory (the table then shows the host memory columns
    even where every value is 0, as PyTorch's)."""

    profile_memory = False

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
        with their shares of the profile, the average, and the call count."""
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise AttributeError(f"table: sort_by must be one of {sorted(_SORT_KEYS)}, "
                                     f"got {sort_by!r}")
            rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        total_self = sum(e.self_cpu_time_total for e in self) or 1.0
        shapes = any(getattr(e, "input_shapes", None) for e in rows)
        name_w = min(max_name_column_width, max([len(str(e.key)) for e in rows] + [4]) + 2)
        cols = [("Name", name_w), ("Self CPU %", 12), ("Self CPU", 12), ("CPU total %", 12),
                ("CPU total", 12), ("CPU time avg", 12), ("# of Calls", 12)]
        memory = [(title, attr) for title, attr in (
            ("CPU Mem", "cpu_memory_usage"), ("Self CPU Mem", "self_cpu_memory_usage"),
            ("CUDA Mem", "device_memory_usage"), ("Self CUDA Mem", "self_device_memory_usage"))
            if (self.profile_memory and "CPU" in title) or any(getattr(e, attr, 0) for e in self)]
        cols[-1:-1] = [(title, 12) for title, _ in memory]
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
            cells += [f"{format_memory(getattr(e, attr)):>12}" for _, attr in memory]
            cells.append(f"{e.count:>12}")
            if shapes:
                cells.append(f"{str(e.input_shapes)[:cols[-1][1]]:>{cols[-1][1]}}")
            out.append("  ".join(cells))
        out += [line, f"Self CPU time total: {format_time(sum(e.self_cpu_time_total for e in self))}"]
        return "\n".join(out) + "\n"

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (JSON 'X' events in microseconds), which
        chrome://tracing, Perfetto and TensorBoard's profile plugin open."""
        write_chrome_trace(self, path)


def chrome_trace(events: Iterable[FunctionEvent | FunctionEventAvg]) -> dict[str, Any]:
    pid = os.getpid()
    trace = [{"name": e.name, "ph": "X", "cat": "cpu_op", "ts": round(e.start_us, 3),
              "dur": round(e.cpu_time_total, 3), "pid": pid, "tid": e.thread,
              "args": {"Input Dims": e.input_shapes} if e.input_shapes else {}}
             for e in events if isinstance(e, FunctionEvent)]
    return {"schemaVersion": 1, "traceEvents": trace, "displayTimeUnit": "ms"}


def write_chrome_trace(events: Iterable[FunctionEvent | FunctionEventAvg], path: str) -> None:
    opener = open
    if str(path).endswith(".gz"):
        import gzip
        opener = gzip.open
    with opener(path, "wt") as f:
        json.dump(chrome_trace(events), f)
