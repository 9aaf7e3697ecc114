"""torch.cpu: the one device tapegrad computes on."""
import types
import warnings

from .amp import autocast as _autocast
from ._warnings import user_stacklevel


class _CpuAutocast(_autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=user_stacklevel())
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


_CpuAutocast.__name__ = _CpuAutocast.__qualname__ = "autocast"
amp = types.SimpleNamespace(autocast=_CpuAutocast)  # torch.cpu.amp.autocast


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    pass
