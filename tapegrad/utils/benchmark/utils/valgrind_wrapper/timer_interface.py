"""torch.utils.benchmark.utils.valgrind_wrapper.timer_interface: the names of Callgrind's results, for scripts that
import them. Timer.collect_callgrind raises NotImplementedError (it needs Valgrind and torch's C++ build), so
none is ever made; making one raises too."""

__all__ = ["CallgrindStats", "FunctionCounts", "FunctionCount", "CopyIfCallgrind"]


class _NotProvided:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"torch.utils.benchmark.{type(self).__name__}: tapegrad measures no instruction "
                                  "counts (Timer.collect_callgrind needs Valgrind and torch's C++ build)")


class CallgrindStats(_NotProvided):
    pass


class FunctionCounts(_NotProvided):
    pass


class FunctionCount(_NotProvided):
    pass


class CopyIfCallgrind(_NotProvided):
    pass
