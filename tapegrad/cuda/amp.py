"""torch.cuda.amp: GradScaler and autocast for CUDA, which pass through (with torch's warning) here."""
import warnings

from ..amp import GradScaler as _GradScaler
from ..amp import autocast as _autocast
from .._warnings import user_stacklevel


class GradScaler(_GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=user_stacklevel())
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


class autocast(_autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=user_stacklevel())
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
