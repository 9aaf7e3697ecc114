"""torch.cuda.amp: GradScaler, autocast and custom_fwd / custom_bwd for CUDA, which pass through (with torch's
warnings) here."""
import warnings

from ..amp import GradScaler as _GradScaler
from ..amp import autocast as _autocast
from ..amp import custom_bwd as _custom_bwd
from ..amp import custom_fwd as _custom_fwd
from .. import _dtype
from .._warnings import user_stacklevel


def amp_definitely_not_available():
    return True


class GradScaler(_GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=user_stacklevel())
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


class autocast(_autocast):
    def __init__(self, enabled=True, dtype=_dtype.float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=user_stacklevel())
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.amp.custom_fwd(device_type="cuda"): outside a CUDA autocast region (always, here) a no-op."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=user_stacklevel())
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """torch.amp.custom_bwd(device_type="cuda")."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=user_stacklevel())
    return _custom_bwd(bwd, device_type="cuda")
