"""Timer (PyTorch's torch.utils.benchmark.Timer): timeit.Timer with PyTorch's additions: the
thread count fixed while timing (1 by default, so numbers are comparable across machines),
`torch` (torchlite) in the statement's globals, CUDA synchronised around each timed block
when the CUDA backend is in use, a warm-up before timing, and results as Measurement objects
that carry their labels for Compare."""
from __future__ import annotations

import enum
import textwrap
import timeit
from typing import TYPE_CHECKING

from ... import cuda as _cuda
from . import common

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """timeit's clock, after waiting for queued CUDA work (when CUDA was initialised), so a
    timed block includes the kernels it launched."""
    if _cuda.is_initialized():
        _cuda.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


class Timer:
    """Time `stmt` (a string of Python) after running `setup` once, with `globals` as its
    namespace (`torch` is torchlite unless given).

    label / sub_label / description / env: how Compare arranges the results (label: the
    table, sub_label: the row, description: the column).  num_threads: the thread count set
    while timing.  timer: the clock (the default synchronises CUDA).  Only Python statements
    are supported (language='c++' needs PyTorch's C++ toolchain)."""

    _timer_cls = timeit.Timer

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict[str, Any] | None = None, label: str | None = None,
                 sub_label: str | None = None, description: str | None = None, env: str | None = None,
                 num_threads: int = 1, language: Language | str = Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("torchlite's Timer times Python statements only (C++ "
                                      "timing needs PyTorch's C++ extension toolchain)")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this "
                             f"code can simply be moved to `setup`.")
        self._globals = dict(globals or {})
        if "torch" not in self._globals:
            import torchlite
            self._globals["torch"] = torchlite
        self._language = Language.PYTHON
        stmt, setup = _clean(stmt), _clean(setup)
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup,
                                          label=label, sub_label=sub_label,
                                          description=description, env=env,
                                          num_threads=num_threads)

    def _timeit(self, number):
        # never 0: later divisions (per-run times, relative overhead) stay finite
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """One measurement of `number` executions (after a warm-up of number // 100, at
        least 2)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return common.Measurement(number_per_run=number,
                                      raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> NoReturn:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], None] | None = None) -> NoReturn:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _measurement_loop(self, number, stop_hook, min_run_time, max_run_time=None,
                          callback=None):
        """Blocks of `number` executions until min_run_time has passed and stop_hook(times)
        agrees (or max_run_time has passed)."""
        total, times = 0.0, []
        with common.set_torch_threads(self._task_spec.num_threads):
            while True:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop_hook(times)
                if total >= min_run_time and can_stop:
                    break
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time):
        """The smallest power of 10 executions per block whose time dwarfs the timer's own
        overhead (1e-4 of it) and is at least min_run_time / 1000."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overheads = sorted(self._timeit(0) for _ in range(5))
            overhead = overheads[2]
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback: Callable[[int, float], None] | None = None,
                          min_run_time: float = 0.2) -> common.Measurement:
        """Blocks of executions (the block size chosen so the timer's overhead does not
        matter) until min_run_time seconds have been spent: one time per block."""
        number = self._estimate_block_size(min_run_time)
        times = self._measurement_loop(number, lambda times: True, min_run_time,
                                       callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback: Callable[[int, float], None] | None = None) -> common.Measurement:
        """Blocks until IQR / median of the block times is below threshold (with more than
        3 blocks and at least min_run_time spent), or max_run_time has passed."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times):
            return len(times) > 3 and common.Measurement(
                number_per_run=number, raw_times=times,
                task_spec=self._task_spec).meets_confidence(threshold=threshold)
        times = self._measurement_loop(number, stop_hook, min_run_time, max_run_time,
                                       callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def collect_callgrind(self, number: int = 100, *, repeats: int | None = None, collect_baseline: bool = True,
                          retain_out_file: bool = False) -> NoReturn:
        raise NotImplementedError("torchlite's Timer has no Callgrind collection (PyTorch's "
                                  "needs valgrind and its C++ bindings)")


def _clean(code):
    """Dedented, without a leading newline or trailing whitespace (as PyTorch stores it)."""
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()
