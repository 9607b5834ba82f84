"""Compare (PyTorch's torch.utils.benchmark.Compare): Measurements laid out as tables, as
PyTorch prints them: one table per label, one row per (thread count, env, sub_label or stmt),
one column per description, each cell the median in one unit for the table; measurements of
the same task are pooled first.  Optionally trimmed to the significant figures, colourised
(best in green, worst in red) and flagged where the spread is high."""
from __future__ import annotations

import collections
import enum
import itertools
import math
from typing import TYPE_CHECKING

from . import common

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _leading_digits(x):
    return math.ceil(math.log10(x)) if x > 0 else 1


class _Column:
    """How one column prints its numbers: a width and a number of decimals that fit every
    cell (the cells of all row groups)."""

    def __init__(self, grouped_results, time_scale, trim_significant_figures,
                 highlight_warnings):
        self._grouped_results = grouped_results
        flat = [r for r in itertools.chain.from_iterable(grouped_results) if r is not None]
        self._trim = trim_significant_figures
        self._highlight = highlight_warnings and any(r.has_warnings for r in flat)
        digits = [_leading_digits(r.median / time_scale) for r in flat]
        unit_digits = max(digits)
        decimals = (min(max(r.significant_figures - d, 0) for d, r in zip(digits, flat))
                    if self._trim else 1)
        width = unit_digits + decimals + (1 if decimals else 0)
        self._template = f"{{:>{width}.{decimals}f}}{{:>{7 if self._highlight else 0}}}"

    def results_for(self, group):
        return self._grouped_results[group]

    def num_to_str(self, value, sigfigs, spread):
        if value is None:
            return " " * len(self.num_to_str(1, sigfigs, None))
        if self._trim:
            value = common.trim_sigfig(value, sigfigs)
        flag = f" (! {spread * 100:.0f}%)" if self._highlight and spread is not None else ""
        return self._template.format(value, flag)


class _Row:
    def __init__(self, results, row_group, render_env, env_str_len, time_scale, colorize,
                 num_threads=None):
        self._results = results
        self._row_group = row_group
        self._render_env = render_env
        self._env_str_len = env_str_len
        self._time_scale = time_scale
        self._colorize = colorize
        self._num_threads = num_threads      # set on the first row of a thread-count group
        self._columns = ()

    def register_columns(self, columns):
        self._columns = columns

    def as_column_strings(self):
        first = next(r for r in self._results if r is not None)
        env = f"({first.env})" if self._render_env else ""
        out = ["  " + env.ljust(self._env_str_len + 4) + first.as_row_name]
        for m, col in zip(self._results, self._columns):
            if m is None:
                out.append(col.num_to_str(None, 1, None))
            else:
                out.append(col.num_to_str(m.median / self._time_scale, m.significant_figures,
                                          m.iqr / m.median if m.has_warnings else None))
        return out

    @staticmethod
    def color_segment(segment, value, best):
        if value <= best * 1.01 or value <= best + 100e-9:
            return BEST + BOLD + segment + TERMINATE * 2
        if value <= best * 1.1:
            return GOOD + BOLD + segment + TERMINATE * 2
        if value >= best * 5:
            return VERY_BAD + BOLD + segment + TERMINATE * 2
        if value >= best * 2:
            return BAD + segment + TERMINATE * 2
        return segment

    def row_separator(self, width):
        if self._num_threads is None:
            return []
        return [f"{self._num_threads} threads: ".ljust(width, "-")]

    def finalize_column_strings(self, strings, widths):
        if self._colorize == Colorize.ROWWISE:
            row_min = min(r.median for r in self._results if r is not None)
            bests = [row_min] * len(strings)
        elif self._colorize == Colorize.COLUMNWISE:
            bests = []
            for col in self._columns:
                medians = [r.median for r in col.results_for(self._row_group) if r is not None]
                bests.append(min(medians) if medians else None)
        else:
            bests = [None] * len(strings)
        row = [strings[0].ljust(widths[0])]
        for s, width, result, best in zip(strings[1:], widths[1:], self._results, bests):
            s = s.center(width)
            if self._colorize != Colorize.NONE and result is not None and best is not None:
                s = self.color_segment(s, result.median, best)
            row.append(s)
        return row


class _Table:
    """The measurements of one label."""

    def __init__(self, results, colorize, trim_significant_figures, highlight_warnings):
        if len({r.label for r in results}) != 1:
            raise AssertionError("All results must share the same label")
        self.results = results
        self.label = results[0].label
        self._colorize = colorize
        self._highlight = highlight_warnings
        self.time_unit, self.time_scale = common.select_unit(min(r.median for r in results))
        self.row_keys = common.ordered_unique(self._row_key(r) for r in results)
        self.row_keys.sort(key=lambda k: k[:2])     # by threads and env; stmt order kept
        self.column_keys = common.ordered_unique(r.description for r in results)
        self.rows, self.columns = self._layout(trim_significant_figures)

    @staticmethod
    def _row_key(m):
        return m.num_threads, m.env, m.as_row_name

    def _layout(self, trim):
        cells = [[None] * len(self.column_keys) for _ in self.row_keys]
        row_at = {k: i for i, k in enumerate(self.row_keys)}
        col_at = {k: j for j, k in enumerate(self.column_keys)}
        for r in self.results:
            cells[row_at[self._row_key(r)]][col_at[r.description]] = r
        envs = {r.env for r in self.results}
        render_env = len(envs) > 1
        env_str_len = max(len(e) for e in envs) if render_env else 0
        rows, groups = [], []
        prior_threads, prior_env = -1, ""
        for (threads, env, _), row_cells in zip(self.row_keys, cells):
            new_group = threads != prior_threads
            if new_group:
                prior_threads, prior_env = threads, ""
                groups.append([])
            rows.append(_Row(row_cells, len(groups) - 1, render_env and env != prior_env,
                             env_str_len, self.time_scale, self._colorize,
                             threads if new_group else None))
            groups[-1].append(row_cells)
            prior_env = env
        columns = tuple(
            _Column([tuple(row[j] for row in g) for g in groups], self.time_scale, trim,
                    self._highlight)
            for j in range(len(self.column_keys)))
        for row in rows:
            row.register_columns(columns)
        return tuple(rows), columns

    def render(self):
        string_rows = [[""] + [k if k is not None else "" for k in self.column_keys]]
        string_rows.extend(r.as_column_strings() for r in self.rows)
        n_cols = max(len(r) for r in string_rows)
        for r in string_rows:
            r.extend([""] * (n_cols - len(r)))
        widths = [max(len(s) for s in col) for col in zip(*string_rows)]
        lines = ["  |  ".join(s.center(w) for s, w in zip(string_rows[0], widths))]
        width = len(lines[0])
        for strings, row in zip(string_rows[1:], self.rows):
            lines.extend(row.row_separator(width))
            lines.append("  |  ".join(row.finalize_column_strings(strings, widths)))
        warn = self._highlight and any(r.has_warnings for r in self.results)
        return (f"[{(' ' + (self.label or '') + ' ').center(width - 2, '-')}]\n"
                + "\n".join(lines)
                + f"\n\nTimes are in {common.unit_to_english(self.time_unit)}s "
                  f"({self.time_unit}).\n"
                + ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
                   if warn else ""))


class Compare:
    """Tables of Measurements (see the module docstring): Compare(results).print()."""

    def __init__(self, results: Iterable[common.Measurement]) -> None:
        self._results = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results: Iterable[common.Measurement]) -> None:
        """Add more Measurements (ValueError for anything else)."""
        results = list(results)
        for r in results:
            if not isinstance(r, common.Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} "
                                 f"instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Print only the digits the measurements support."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Colour each cell against the best of its column (or of its row)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Flag the cells whose IQR is large relative to their median."""
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    def _render(self):
        by_label = collections.defaultdict(list)
        for r in common.Measurement.merge(self._results):
            by_label[r.label].append(r)
        return [_Table(group, self._colorize, self._trim_significant_figures,
                       self._highlight_warnings).render() for group in by_label.values()]
