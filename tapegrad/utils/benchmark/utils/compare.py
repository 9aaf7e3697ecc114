"""torch.utils.benchmark.utils.compare: Compare, a table of Measurements' medians.

One table per label; a row per (num_threads, env, sub_label or stmt), a column per description; replicates of
one TaskSpec merged first. The text is torch's: same widths, separators, units and colours.
"""
import collections
import enum
import itertools
import math

import numpy as np

from . import common

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
    return int(math.ceil(common._log10f(np.float32(x))))


class _Column:
    """One description's cells: a shared number format (width, decimals) for all its rows."""

    def __init__(self, groups, time_scale, trim, highlight_warnings):
        self.groups = groups  # per thread group, the column's Measurement (or None) of each row
        flat = [m for m in itertools.chain.from_iterable(groups) if m is not None]
        self._trim = trim
        self._highlight = highlight_warnings and any(m.has_warnings for m in flat)
        digits = [_leading_digits(m.median / time_scale) for m in flat]
        decimals = min(max(m.significant_figures - d, 0) for d, m in zip(digits, flat)) if trim else 1
        width = max(digits) + decimals + (1 if decimals else 0)
        self._template = f"{{:>{width}.{decimals}f}}{{:>{7 if self._highlight else 0}}}"

    def cell(self, value, sigfigs, spread):
        if value is None:
            return " " * len(self.cell(1, sigfigs, None))
        if self._trim:
            value = common.trim_sigfig(value, sigfigs)
        note = f" (! {spread * 100:.0f}%)" if self._highlight and spread is not None else ""
        return self._template.format(value, note)


def _colour(text, value, best):
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + text + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + text + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + text + TERMINATE * 2
    if value >= best * 2:
        return BAD + text + TERMINATE * 2
    return text


class _Table:
    def __init__(self, results, colorize, trim, highlight_warnings):
        self.results = results
        self.colorize = colorize
        self.highlight_warnings = highlight_warnings
        self.label = results[0].label
        self.unit, self.scale = common.select_unit(min(m.median for m in results))
        row_key = lambda m: (m.num_threads, m.env, m.as_row_name)  # noqa: E731
        self.row_keys = common.ordered_unique(row_key(m) for m in results)
        self.row_keys.sort(key=lambda k: k[:2])  # by threads and env, stmt order kept within
        self.col_keys = common.ordered_unique(m.description for m in results)
        grid = [[None] * len(self.col_keys) for _ in self.row_keys]
        row_at = {k: i for i, k in enumerate(self.row_keys)}
        col_at = {k: j for j, k in enumerate(self.col_keys)}
        for m in results:
            grid[row_at[row_key(m)]][col_at[m.description]] = m
        envs = {m.env for m in results}
        self.render_env = len(envs) > 1
        self.env_width = max(len(e) for e in envs) if self.render_env else 0
        # rows: (measurements, group index, show env, threads header or None)
        self.rows, groups, prior_threads, prior_env = [], [], -1, ""
        for (threads, env, _), row in zip(self.row_keys, grid):
            new_group = threads != prior_threads
            if new_group:
                prior_threads, prior_env = threads, ""
                groups.append([])
            self.rows.append((row, len(groups) - 1, self.render_env and env != prior_env,
                              threads if new_group else None))
            groups[-1].append(row)
            prior_env = env
        self.columns = [_Column([tuple(row[j] for row in g) for g in groups], self.scale, trim, highlight_warnings)
                        for j in range(len(self.col_keys))]

    def _cells(self, row, show_env):
        first = next(m for m in row if m is not None)
        env = f"({first.env})" if show_env else ""
        cells = ["  " + env.ljust(self.env_width + 4) + first.as_row_name]
        for m, column in zip(row, self.columns):
            if m is None:
                cells.append(column.cell(None, 1, None))
            else:
                cells.append(column.cell(m.median / self.scale, m.significant_figures,
                                         m.iqr / m.median if m.has_warnings else None))
        return cells

    def _best(self, row, group):
        if self.colorize == Colorize.ROWWISE:
            return [min(m.median for m in row if m is not None)] * len(row)
        if self.colorize == Colorize.COLUMNWISE:
            return [min((m.median for m in c.groups[group] if m is not None), default=None) for c in self.columns]
        return [-1] * len(row)

    def render(self):
        header = [""] + ["" if k is None else k for k in self.col_keys]  # (torch: a TypeError for None)
        text_rows = [header] + [self._cells(row, show_env) for row, _, show_env, _ in self.rows]
        n_cols = max(len(r) for r in text_rows)
        for r in text_rows:
            r.extend([""] * (n_cols - len(r)))
        widths = [max(len(c) for c in col) for col in zip(*text_rows)]
        lines = ["  |  ".join(c.center(w) for c, w in zip(text_rows[0], widths))]
        overall = len(lines[0])
        for cells, (row, group, _, threads) in zip(text_rows[1:], self.rows):
            if threads is not None:
                lines.append(f"{threads} threads: ".ljust(overall, "-"))
            out = [cells[0].ljust(widths[0])]
            for text, width, m, best in zip(cells[1:], widths[1:], row, self._best(row, group)):
                text = text.center(width)
                if self.colorize != Colorize.NONE and m is not None and best is not None:
                    text = _colour(text, m.median, best)
                out.append(text)
            lines.append("  |  ".join(out))
        warn = self.highlight_warnings and any(m.has_warnings for m in self.results)
        title = (" " + (self.label or "") + " ").center(overall - 2, "-")
        return (f"[{title}]\n" + "\n".join(lines) + "\n\n"
                f"Times are in {common.unit_to_english(self.unit)}s ({self.unit}).\n"
                + ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n" if warn else ""))


class Compare:
    """torch.utils.benchmark.Compare: print a table of Measurements (by label, sub_label, description and
    num_threads)."""

    def __init__(self, results):
        self._results = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self):
        return "\n".join(self._render())

    def extend_results(self, results):
        """Append Measurements to those the table shows."""
        for r in results:
            if not isinstance(r, common.Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self):
        """Print each median to its estimated significant figures."""
        self._trim_significant_figures = True

    def colorize(self, rowwise=False):
        """Colour each cell by how it compares with its column's best (or its row's, rowwise=True)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self):
        """Mark the cells whose IQR is large next to their median."""
        self._highlight_warnings = True

    def print(self):
        print(str(self))

    def _render(self):
        by_label = collections.defaultdict(list)
        for m in common.Measurement.merge(self._results):
            by_label[m.label].append(m)
        return [_Table(group, self._colorize, self._trim_significant_figures, self._highlight_warnings).render()
                for group in by_label.values()]
