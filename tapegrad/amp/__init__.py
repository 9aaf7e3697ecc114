"""torch.amp: autocast and custom_fwd / custom_bwd (autocast_mode.py), GradScaler (grad_scaler.py).

autocast("cpu") runs the ops on torch's CPU autocast lists in the autocast dtype (docs in autocast_mode.py);
GradScaler("cpu") scales losses and unscales gradients as torch's CPU one. For CUDA (unavailable) both warn and
disable themselves, as torch; disabled they pass through.
"""
from . import autocast_mode, grad_scaler  # noqa: F401
from .autocast_mode import (autocast, clear_autocast_cache, custom_bwd, custom_fwd,  # noqa: F401
                            get_autocast_cpu_dtype, get_autocast_dtype, get_autocast_gpu_dtype, is_autocast_available,
                            is_autocast_cache_enabled, is_autocast_cpu_enabled, is_autocast_enabled,
                            set_autocast_cache_enabled, set_autocast_cpu_dtype, set_autocast_cpu_enabled,
                            set_autocast_dtype, set_autocast_enabled, set_autocast_gpu_dtype)
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
