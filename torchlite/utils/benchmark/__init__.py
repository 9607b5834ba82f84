"""torchlite.utils.benchmark (PyTorch's torch.utils.benchmark): Timer to time a Python
statement (timeit with warm-up, fixed thread count and CUDA synchronisation), Measurement for
its results (median, mean, IQR, PyTorch's printout) and Compare to print several as a table.

>>> from torchlite.utils.benchmark import Timer
>>> m = Timer("x + y", setup="x = torch.ones(4); y = torch.ones(4)").timeit(100)
>>> m.number_per_run, len(m.times)
(100, 1)
"""
from .common import (Measurement, TaskSpec, ordered_unique, select_unit,  # noqa: F401
                     set_torch_threads, trim_sigfig, unit_to_english)
from .compare import Colorize, Compare  # noqa: F401
from .timer import Language, Timer, timer  # noqa: F401

__all__ = ["Timer", "timer", "Language", "Measurement", "TaskSpec", "Compare", "Colorize",
           "select_unit", "unit_to_english", "trim_sigfig", "ordered_unique",
           "set_torch_threads"]
