"""torch.cpu: the one device tapegrad computes on."""
import importlib.machinery
import sys
import types
import warnings

from . import _dtype
from .amp import GradScaler as _GradScaler
from .amp import autocast as _autocast
from ._warnings import user_stacklevel


class _CpuAutocast(_autocast):
    def __init__(self, enabled=True, dtype=_dtype.bfloat16, cache_enabled=True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=user_stacklevel())
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class _CpuGradScaler(_GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=user_stacklevel())
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


# torch.cpu.amp, a module registered as this module's submodule (this one a package with no files: torch's are
# packages), so that `from torch.cpu.amp import autocast` imports it
__path__ = []
amp = types.ModuleType(__name__ + ".amp", "torch.cpu.amp: the deprecated autocast and GradScaler for the CPU.")
amp.__spec__ = importlib.machinery.ModuleSpec(amp.__name__, None)
for _cls, _name in ((_CpuAutocast, "autocast"), (_CpuGradScaler, "GradScaler")):  # (their names, for pickle)
    _cls.__module__, _cls.__name__, _cls.__qualname__ = amp.__name__, _name, _name
    setattr(amp, _name, _cls)
del _cls, _name
sys.modules[amp.__name__] = amp


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    pass
