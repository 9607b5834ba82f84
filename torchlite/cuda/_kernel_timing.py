"""Kernel timing on the device with CUDA events, for the profiler (reached through
torchlite._dispatch.devices: start_kernel_timing / stop_kernel_timing).

While timing is on, _launch.py's `launch` (the one function every kernel of the backend is
launched through) is wrapped (_launch.set_launch_timer): before the launch a timing event is
recorded on the launch's stream, after it another one, and the caller's hooks mark the launch
on the host.  Nothing is read back while timing: at stop each device is synchronised once and
every kernel's duration (cuEventElapsedTime between its two events) and start (between a
reference event, recorded after a synchronisation at the first launch on the device, and its
first event, added to the host time of that reference) are read.  The events are then kept in
a pool per driver and device for the next time, so timing costs two cuEventRecord calls a
launch.

The device timestamps are the host clock at the reference plus the device's own elapsed
times: on a real GPU they are as good as the reference's placement (a few microseconds); on
the tests' host-memory stand-in driver they are whatever its events report.
"""
from __future__ import annotations

import time
import weakref

from . import _driver, _launch, _runtime

_POOL_LIMIT = 1 << 14        # events kept per device between timings
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
    """One timing session (see the module docstring).  on_begin() is called on the launching
    thread just before a launch and returns the caller's token for it (the profiler: the op
    launching the kernel and its host "cuLaunchKernel" event); on_end(token, failed) just
    after, returning what identifies the launch on the host (kept with the kernel's times)."""

    def __init__(self, on_begin, on_end):
        self.on_begin, self.on_end = on_begin, on_end
        self.driver = None
        self.free = None             # {device: [event handles]} of this driver's pool
        self.refs = {}               # device -> (reference event, host ns when recorded)
        self.launches = []           # (kernel, device, stream, start event, end event, host
                                     #  token, grid, block, shared)

    # ---- while timing (called by the wrapped launch, on the launching thread) ----
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
        host = self.on_begin()
        device = k.device
        if device not in self.refs:
            self._reference(device, stream)
        start = self._event(device)
        _driver.call_on(self.driver, "cuEventRecord", start, stream)
        return (k, device, stream, start, host, grid, block, shared)

    def end(self, token):
        k, device, stream, start, host, grid, block, shared = token
        stop = self._event(device)
        _driver.call_on(self.driver, "cuEventRecord", stop, stream)
        self.launches.append((k.name, device, stream, start, stop, self.on_end(host, False),
                              grid, block, shared))

    def abandon(self, token):
        """The launch raised: its event goes back to the pool, the host side still ends."""
        k, device, stream, start, host, *_ = token
        self.free.setdefault(device, []).append(start)
        self.on_end(host, True)

    # ---- at stop ----
    def collect(self):
        """Each timed kernel as (name, device, stream, start ns on the host's perf_counter
        clock, duration ns, the on_end value of its launch, grid, block, shared bytes), after
        one synchronisation per device; the events go back to the pool."""
        if self.driver is None:
            return []
        d, call = self.driver, _driver.call_on
        for device in self.refs:
            _runtime.activate(device)
            call(d, "cuCtxSynchronize")
        kernels = []
        for name, device, stream, start, stop, host, grid, block, shared in self.launches:
            _runtime.activate(device)
            ref, ref_ns = self.refs[device]
            try:
                offset_ms = float(call(d, "cuEventElapsedTime", ref, start))
                dur_ms = float(call(d, "cuEventElapsedTime", start, stop))
            except _driver.CudaError:         # not timed (an event the driver refuses): left out
                continue
            kernels.append((name, device, stream, ref_ns + offset_ms * 1e6, dur_ms * 1e6, host,
                            list(_launch._dims(grid)), list(_launch._dims(block)), shared))
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


def start(on_begin, on_end):
    """Time kernel launches until stop(); returns the KernelTimer (its collect() gives the
    kernels' times)."""
    timer = KernelTimer(on_begin, on_end)
    _launch.set_launch_timer(timer)
    return timer


def stop():
    _launch.set_launch_timer(None)
