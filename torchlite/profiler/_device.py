"""The profiler's device timeline: each CUDA kernel launch timed on the device with CUDA events.

While a profile records with ProfilerActivity.CUDA and CUDA can be used, torchlite/cuda/
_launch.py's `launch` (the one function every kernel of the backend is launched through) is
wrapped (set_launch_timer): before the launch a timing event is recorded on the launch's
stream, after it another one, and the launch itself is a "cuLaunchKernel" event on the host
(a child of the op that launched it, so the op's self CPU time leaves it out).  Nothing is read
back while the profile records: at stop each device is synchronised once and every kernel's
duration (cuEventElapsedTime between its two events) and start (between a reference event,
recorded after a synchronisation at the first launch on the device, and its first event,
added to the host time of that reference) are read.  The events are then kept in a pool per
driver and device for the next profile, so recording costs two cuEventRecord calls a launch.

The device timestamps are the host clock at the reference plus the device's own elapsed
times: on a real GPU they are as good as the reference's placement (a few microseconds); on
the tests' host-memory stand-in driver they are whatever its events report.
"""
from __future__ import annotations

import time
import weakref

from ..cuda import _driver, _launch, _runtime
from ._events import DeviceType, FunctionEvent

_POOL_LIMIT = 1 << 14        # events kept per device between profiles
_pools = {}                  # id(driver) -> (weakref to the driver, {device: [event handles]})


def _pool_of(d):
    entry = _pools.get(id(d))
    if entry is None or entry[0]() is not d:
        try:
            ref = weakref.ref(d)
        except TypeError:                  # a driver object without weak references
            def ref(d=d):
                return d
        entry = _pools[id(d)] = (ref, {})
    return entry[1]


class KernelTimer:
    """The device side of one profile (see the module docstring): `recorder` is the profile's
    _Recorder, whose per-thread stack says which op launches each kernel."""

    def __init__(self, recorder):
        self.rec = recorder
        self.driver = None
        self.free = None             # {device: [event handles]} of this driver's pool
        self.refs = {}               # device -> (reference event, host ns when recorded)
        self.launches = []           # (kernel, device, stream, start event, end event, launch
                                     #  event, op id, grid, block, shared)

    # ---- while recording (called by the wrapped launch, on the launching thread) ----
    def _event(self, device):
        free = self.free.get(device)
        if free:
            try:
                return free.pop()
            except IndexError:        # another thread took the last one
                pass
        return _driver.call_on(self.driver, "cuEventCreate", 0)       # CU_EVENT_DEFAULT: timed

    def _reference(self, device, stream):
        """At the first launch on `device`: let the device go idle, then record the event the
        kernels' start times are measured from, and the host time it stands for."""
        _driver.call_on(self.driver, "cuCtxSynchronize")
        ev = self._event(device)
        _driver.call_on(self.driver, "cuEventRecord", ev, stream)
        self.refs[device] = (ev, time.perf_counter_ns())

    def begin(self, k, stream, grid, block, shared):
        if self.driver is None:
            self.driver = _driver.driver_module()
            self.free = _pool_of(self.driver)
        stack = self.rec._stack()
        op = stack[-1][6] if stack else None          # the op launching the kernel
        launch_stack = self.rec.begin()               # its "cuLaunchKernel" child
        device = k.device
        if device not in self.refs:
            self._reference(device, stream)
        start = self._event(device)
        _driver.call_on(self.driver, "cuEventRecord", start, stream)
        return (k, device, stream, start, launch_stack, op, grid, block, shared)

    def end(self, token):
        k, device, stream, start, launch_stack, op, grid, block, shared = token
        stop = self._event(device)
        _driver.call_on(self.driver, "cuEventRecord", stop, stream)
        launch = self.rec.end(launch_stack, "cuLaunchKernel", [], category="cuda_runtime")
        self.launches.append((k.name, device, stream, start, stop, launch, op, grid, block, shared))

    def abandon(self, token):
        """The launch raised: its event goes back to the pool, the host event still ends."""
        k, device, stream, start, launch_stack, *_ = token
        self.free.setdefault(device, []).append(start)
        self.rec.end(launch_stack, "cuLaunchKernel", [], category="cuda_runtime")

    # ---- at stop ----
    def collect(self, t0_ns):
        """The kernels as device FunctionEvents (times in microseconds from t0_ns), after one
        synchronisation per device; the events go back to the pool."""
        if self.driver is None:
            return []
        d, call = self.driver, _driver.call_on
        for device in self.refs:
            _runtime.activate(device)
            call(d, "cuCtxSynchronize")
        kernels = []
        for name, device, stream, start, stop, launch, op, grid, block, shared in self.launches:
            _runtime.activate(device)
            ref, ref_ns = self.refs[device]
            try:
                offset_ms = float(call(d, "cuEventElapsedTime", ref, start))
                dur_ms = float(call(d, "cuEventElapsedTime", start, stop))
            except _driver.CudaError:         # not timed (an event the driver refuses): left out
                continue
            begin_us = (ref_ns - t0_ns) / 1e3 + offset_ms * 1e3
            e = FunctionEvent(name, begin_us, begin_us + dur_ms * 1e3, 0.0, stream, [], 0,
                              id=self.rec.next_id(), parent_id=op, category="kernel",
                              device_type=DeviceType.CUDA, device_index=device,
                              correlation=launch.id,
                              trace_args={"device": device, "stream": stream,
                                          "grid": list(_launch._dims(grid)),
                                          "block": list(_launch._dims(block)),
                                          "shared memory": shared})
            kernels.append(e)
        for name, device, stream, start, stop, *_ in self.launches:
            self._give_back(device, start, stop)
        for device, (ref, _) in self.refs.items():
            self._give_back(device, ref)
        self.launches, self.refs = [], {}
        return kernels

    def _give_back(self, device, *events):
        free = self.free.setdefault(device, [])
        for ev in events:
            if len(free) < _POOL_LIMIT:
                free.append(ev)
            else:
                try:
                    self.driver.cuEventDestroy(ev)
                except Exception:
                    pass


def start_timing(recorder):
    """Time kernel launches for `recorder` until stop_timing(); returns the KernelTimer."""
    timer = KernelTimer(recorder)
    _launch.set_launch_timer(timer)
    return timer


def stop_timing():
    _launch.set_launch_timer(None)
