"""torch.profiler.itt: Intel ITT annotations (VTune), which tapegrad does not emit."""
import contextlib

__all__ = ["is_available", "range_push", "range_pop", "mark", "range"]


def is_available():
    """False: tapegrad emits no ITT annotations."""
    return False


def _unsupported(name):
    raise RuntimeError(f"torch.profiler.itt.{name}: tapegrad emits no Intel ITT annotations (VTune); use "
                       "torch.profiler.profile and record_function")


def range_push(msg):
    _unsupported("range_push")


def range_pop():
    _unsupported("range_pop")


def mark(msg):
    _unsupported("mark")


@contextlib.contextmanager
def range(msg, *args, **kwargs):  # noqa: A001  (torch's name)
    _unsupported("range")
    yield
