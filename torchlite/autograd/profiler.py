"""torchlite.autograd.profiler: PyTorch's older profiler API, on the same recorder as
torchlite.profiler: `with profile() as prof:` ... `prof.key_averages().table()`,
`prof.function_events`, `export_chrome_trace`, `record_function`."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..profiler import EventList, ProfilerActivity, record_function
from ..profiler import profile as _profile

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["profile", "record_function", "emit_nvtx", "EventList"]


class profile:
    """torch.autograd.profiler.profile(enabled=True, *, use_cuda=False, record_shapes=False,
    profile_memory=False, ...): records between __enter__ and __exit__ (nothing when
    enabled=False); use_cuda=True (or use_device="cuda") times the CUDA kernels too."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = True,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Callable[[], str] | None = None) -> None:
        self.enabled = enabled
        activities = [ProfilerActivity.CPU]
        if use_cuda or use_device == "cuda":          # PyTorch's: the device only when asked
            activities.append(ProfilerActivity.CUDA)
        self._prof = _profile(activities=activities, record_shapes=record_shapes,
                              profile_memory=profile_memory)

    def __enter__(self) -> profile:
        if self.enabled:
            self._prof.start()
        return self

    def __exit__(self, *exc) -> bool:
        if self.enabled:
            self._prof.stop()
        return False

    @property
    def function_events(self) -> EventList:
        return self._prof.events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        return self._prof.key_averages(group_by_input_shape)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs) -> str:
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        self._prof.export_chrome_trace(path)

    @property
    def self_cpu_time_total(self) -> float:
        return self.function_events.self_cpu_time_total


class emit_nvtx:
    """torch.autograd.profiler.emit_nvtx: a context manager; torchlite emits no NVTX ranges,
    so it only marks the block (record_function ranges still reach a running profile)."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled

    def __enter__(self) -> emit_nvtx:
        return self

    def __exit__(self, *exc) -> bool:
        return False
