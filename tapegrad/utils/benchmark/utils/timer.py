"""torch.utils.benchmark.utils.timer: Timer, a timeit.Timer that warms up, sets the thread count, and returns
Measurements (blocked_autorange, adaptive_autorange) instead of bare seconds.

Python statements only: C++ statements (language="cpp") need torch's C++ build and compiler, and
collect_callgrind needs Valgrind's Callgrind on that build; both raise NotImplementedError.
"""
import enum
import sys
import textwrap
import timeit

from . import common

__all__ = ["Timer", "timer", "Language"]


def timer():
    """The default clock: CPU only, so no device synchronization before reading it."""
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def _clean(code):
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()


class Timer:
    """torch.utils.benchmark.Timer: times `stmt` (after `setup`) with timeit, under `num_threads` threads.

    `globals` is copied (`torch` added to the copy when absent); as in timeit, `setup` runs before each
    timed block, outside the time measured. label, sub_label, description and env label the Measurements
    for printing and for Compare.
    """

    _timer_cls = timeit.Timer

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None, label=None,
                 sub_label=None, description=None, env=None, num_threads=1, language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError(
                "Timer(language='cpp'): C++ statements are not supported by tapegrad (it has no C++ API to "
                "compile them against); time a Python statement instead.")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this code can simply "
                             "be moved to `setup`.")
        self._language = Language.PYTHON
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", sys.modules[__name__.split(".")[0]])
        stmt, setup = _clean(stmt), _clean(setup)
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                          sub_label=sub_label, description=description, env=env,
                                          num_threads=num_threads)

    def _timeit(self, number):
        return max(self._timer.timeit(number), 1e-9)

    def _measurement(self, number, times):
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def timeit(self, number=1000000):
        """timeit.Timer.timeit: `stmt` run `number` times (after a warm-up of number // 100, at least 2)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(max(int(number // 100), 2))
            return self._measurement(number, [self._timeit(number)])

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _estimate_block_size(self, min_run_time):
        """The first power of ten of runs per block whose time dwarfs the timer's overhead (or exceeds
        min_run_time)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = sorted(self._timeit(0) for _ in range(5))[2]
            number = 1
            while True:
                taken = self._timeit(number)
                if (overhead / taken <= 1e-4 and taken >= min_run_time / 1000) or taken > min_run_time:
                    return number
                if number * 10 > 2147483647:
                    return number
                number *= 10

    def _measure_blocks(self, number, can_stop, min_run_time, max_run_time=None, callback=None):
        total, times, stop = 0.0, [], False
        with common.set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                stop = can_stop(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of a fixed number of runs (chosen so the timer's overhead is negligible) timed until
        min_run_time seconds have been measured."""
        number = self._estimate_block_size(min_run_time)
        times = self._measure_blocks(number, lambda times: True, min_run_time, callback=callback)
        return self._measurement(number, times)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None):
        """blocked_autorange that goes on until IQR / median < threshold (over more than 3 blocks) or
        max_run_time seconds have been measured."""
        number = self._estimate_block_size(min_run_time=0.05)

        def can_stop(times):
            return len(times) > 3 and self._measurement(number, times).meets_confidence(threshold=threshold)

        times = self._measure_blocks(number, can_stop, min_run_time, max_run_time, callback=callback)
        return self._measurement(number, times)

    def collect_callgrind(self, number=100, *, repeats=None, collect_baseline=True, retain_out_file=False):
        raise NotImplementedError(
            "Timer.collect_callgrind is not supported by tapegrad: it counts instructions with Valgrind's "
            "Callgrind through torch's C++ bindings, which tapegrad does not have; use blocked_autorange or "
            "adaptive_autorange for wall times.")
