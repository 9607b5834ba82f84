"""The profiler's device timeline: each CUDA kernel launch timed on the device with CUDA
events, by the backend (torchlite/cuda/_kernel_timing.py, reached through _dispatch.devices).

While a profile records with ProfilerActivity.CUDA and CUDA can be used, every kernel launch
is bracketed by two CUDA events on its stream, and the launch itself is a "cuLaunchKernel"
event on the host (a child of the op that launched it, so the op's self CPU time leaves it
out).  At stop the kernels' device times are read once and each becomes a device
FunctionEvent, a child of its op, linked to its launch (correlation)."""
from __future__ import annotations

from .. import _dispatch
from ._events import DeviceType, FunctionEvent


class KernelTimer:
    """The device side of one profile: `recorder` is the profile's _Recorder, whose
    per-thread stack says which op launches each kernel."""

    def __init__(self, recorder):
        self.rec = recorder
        self.timer = _dispatch.devices.start_kernel_timing(self._launch_begins, self._launch_ends)

    def _launch_begins(self):
        stack = self.rec._stack()
        op = stack[-1][6] if stack else None          # the op launching the kernel
        return op, self.rec.begin()                   # and its "cuLaunchKernel" child

    def _launch_ends(self, host, failed):
        op, launch_stack = host
        launch = self.rec.end(launch_stack, "cuLaunchKernel", [], category="cuda_runtime")
        return op, launch.id

    def stop(self):
        _dispatch.devices.stop_kernel_timing()

    def collect(self, t0_ns):
        """The kernels as device FunctionEvents (times in microseconds from t0_ns)."""
        kernels = []
        for name, device, stream, start_ns, dur_ns, (op, launch), grid, block, shared in self.timer.collect():
            begin_us = (start_ns - t0_ns) / 1e3
            kernels.append(FunctionEvent(
                name, begin_us, begin_us + dur_ns / 1e3, 0.0, stream, [], 0, id=self.rec.next_id(),
                parent_id=op, category="kernel", device_type=DeviceType.CUDA, device_index=device,
                correlation=launch, trace_args={"device": device, "stream": stream, "grid": grid,
                                                "block": block, "shared memory": shared}))
        return kernels
