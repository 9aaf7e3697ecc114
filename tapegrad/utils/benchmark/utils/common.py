"""torch.utils.benchmark.utils.common: TaskSpec (what a Timer measures) and Measurement (what it measured).

The statistics follow torch's: times are raw times over number_per_run; median and quartiles interpolate
linearly (torch.quantile); the unit choice and the significant-figure estimate use float32 as torch's
(its scalars become float32 tensors there), so tables print the same digits.
"""
import collections
import contextlib
import dataclasses
import math
import textwrap
from typing import Any

import numpy as np

from .... import _libm, _runtime

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig", "ordered_unique",
           "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # seconds
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


def _f32(x):
    return np.float32(x)


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a Timer runs and how it is labelled (everything but its globals)."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self):
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n" + textwrap.indent(self.stmt, "  ")

    def setup_str(self):
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return "setup:\n" + textwrap.indent(self.setup, "  ")
        return f"setup: {self.setup}"

    def summarize(self):
        parts = [p for p in (self.title, self.description or "", self.setup_str()) if p]
        return "\n".join(p + "\n" if "\n" in p else p for p in parts)


_TASKSPEC_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """One or more timings of a statement: raw_times, each over number_per_run runs of it."""
    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __post_init__(self):
        self._stats = None  # (sorted times, median, mean, p25, p75, warnings), computed on first use

    def __getattr__(self, name):
        if name in _TASKSPEC_FIELDS:  # label, sub_label, description, num_threads, stmt, ... from the TaskSpec
            return getattr(self.task_spec, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    def _computed(self):
        if self._stats is None and self.raw_times:
            ordered = tuple(sorted(self.times))
            arr = np.asarray(ordered, dtype=np.float64)
            p25, median, p75 = (float(v) for v in np.quantile(arr, [0.25, 0.5, 0.75]))
            self._stats = (ordered, median, float(arr.mean()), p25, p75, ())
            warnings = ()
            for threshold, msg in ((_IQR_GROSS_WARN_THRESHOLD, "This suggests significant environmental influence."),
                                   (_IQR_WARN_THRESHOLD, "This could indicate system fluctuation.")):
                if not self.meets_confidence(threshold):
                    warnings = (f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% "
                                f"of the median measurement.\n           {msg}",)
                    break
            self._stats = self._stats[:5] + (warnings,)
        return self._stats or ((), -1.0, -1.0, -1.0, -1.0, ())

    @property
    def median(self):
        return self._computed()[1]

    @property
    def mean(self):
        return self._computed()[2]

    @property
    def iqr(self):
        stats = self._computed()
        return stats[4] - stats[3]

    @property
    def significant_figures(self):
        """A rough precision estimate from the interquartile points (z = 1.645), between 1 and 4."""
        ordered = self._computed()[0]
        n = len(ordered)
        middle = np.asarray(ordered[n // 4:int(math.ceil(_f32(3 * n / 4)))], dtype=np.float32)
        std = float(middle.std()) if len(middle) else float("nan")
        sqrt_n = float(np.sqrt(_f32(len(middle))))
        ci = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        digits = int(math.floor(_log10f(_f32(self.median / ci))))
        return min(max(digits, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self):
        return bool(self._computed()[5])

    def meets_confidence(self, threshold=_IQR_WARN_THRESHOLD):
        return self.iqr / self.median < threshold

    @property
    def title(self):
        return self.task_spec.title

    @property
    def env(self):
        return self.task_spec.env

    @property
    def as_row_name(self):
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self):
        ordered, median, _, p25, p75, warnings = self._computed()
        n = len(ordered)
        unit, scale = select_unit(median)
        threads = self.num_threads
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {(p75 - p25) / scale:.2f} {unit} ({p25 / scale:.2f} to {p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} thread{'s' if threads > 1 else ''}")
        lines.append("\n".join(warnings))
        return "\n".join("\n".join(lines).strip().splitlines())

    @staticmethod
    def merge(measurements):
        """Replicates of one TaskSpec merged into one Measurement of per-run times (number_per_run=1)."""
        groups = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].extend(m.times)
        return [Measurement(number_per_run=1, raw_times=times, task_spec=spec, metadata=None)
                for spec, times in groups.items()]


def _log10f(x):
    """torch.tensor(x).log10() of a float32 as libm's log10f gives it (a 0-d tensor's kernel calls it): NumPy's
    float32 log10 takes the CPU's vector path, whose last bit differs between CPUs (1e-6: -6.0000005 on AVX-512,
    and the unit changes at such powers of ten)."""
    log10f = _libm.function("log10f", single=True)
    x = float(x)
    return float(log10f(x)) if log10f is not None else float(np.float32(math.log10(x)) if x > 0 else np.log10(x))


def select_unit(t):
    """The unit (ns, us, ms, s) and its scale in seconds that print `t` seconds with O(1) digits."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(_log10f(_f32(t)) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u):
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x, n):
    """`x` rounded to `n` significant figures (3.14159, 2 -> 3.1)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = int(math.ceil(_log10f(abs(_f32(x)))))
    scale = 10 ** (magnitude - n)
    return float(np.round(_f32(x / scale)) * _f32(scale))


def ordered_unique(elements):
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n):
    """torch.set_num_threads(n) for the block, the prior count restored after it."""
    prior = _runtime.get_num_threads()
    try:
        if n != prior:
            _runtime.set_num_threads(n)
        yield
    finally:
        if n != prior:
            _runtime.set_num_threads(prior)
