"""torch.amp.autocast_mode: autocast, each device type's autocast settings, and custom_fwd / custom_bwd.

autocast("cpu") runs the ops on torch's CPU autocast lists in bfloat16, or float16 with dtype=torch.float16
(matmul, mm, bmm, linear, conv, einsum, prelu: their float32 operands cast, the casts recorded) and its float32
list (the losses, prod) in float32, as torch does; bfloat16 needs the optional `bfloat16` extra. For CUDA (unavailable)
it warns and disables itself, as torch; disabled it passes through.
"""
import collections.abc
import functools
import warnings

import numpy as np

from .. import _dtype
from .._warnings import user_stacklevel
from ..tensor import Tensor

__all__ = ["autocast_decorator", "autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)
    return decorate_autocast


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None); also a decorator."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        if dtype is None:  # (the current region's: bfloat16 on the CPU outside any)
            dtype = get_autocast_dtype(device_type)
        self.fast_dtype = dtype
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        if enabled and device_type == "cuda":
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", UserWarning,
                          stacklevel=user_stacklevel())
            enabled = False
        if enabled and device_type == "cpu" and dtype not in (_dtype.bfloat16, _dtype.float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU "
                          "Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.", UserWarning,
                          stacklevel=user_stacklevel())
            enabled = False
        if enabled and device_type != "cpu":
            raise NotImplementedError(f"tapegrad: autocast(device_type={device_type!r}) is not implemented "
                                      f"(tapegrad computes on the CPU: autocast(\"cpu\") is)")
        self._enabled = bool(enabled)
        self._outer = []

    def __enter__(self):
        if self.device == "cpu":  # (a CUDA region, always disabled here, leaves the CPU's state alone)
            self._outer.append((is_autocast_enabled("cpu"), get_autocast_dtype("cpu")))
            set_autocast_enabled("cpu", self._enabled)
            set_autocast_dtype("cpu", self.fast_dtype)
        return self

    def __exit__(self, *exc):
        if self.device == "cpu":
            enabled, dtype = self._outer.pop()
            set_autocast_enabled("cpu", enabled)
            set_autocast_dtype("cpu", dtype)
        return False

    def __call__(self, func):
        return autocast_decorator(self, func)


# -- each device type's autocast settings (torch.is_autocast_enabled, get_autocast_dtype, ...) ------------------------
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
                 "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_AUTOCAST_TYPES = ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "ipu", "mtia", "privateuseone")
_BFLOAT16_BY_DEFAULT = ("cpu", "hpu", "xla")


def _autocast_device(device_type):
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")
    if device_type not in _AUTOCAST_TYPES:
        raise RuntimeError("unknown device type for autocast in get_autocast_dispatch_key_from_device_type")
    return device_type


def is_autocast_available(device_type):
    """Whether autocast takes this device type (tapegrad computes only on the CPU: the others' regions are
    disabled with torch's warning, as on a machine without them)."""
    if device_type not in _DEVICE_TYPES:
        _autocast_device(device_type)
    return device_type in _AUTOCAST_TYPES


def is_autocast_enabled(device_type="cuda"):
    return _dtype.autocast_state.enabled.get(_autocast_device(device_type), False)


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:  # (the deprecated one-argument form: CUDA's)
        device_type, enabled = "cuda", device_type
    _dtype.autocast_state.enabled[_autocast_device(device_type)] = bool(enabled)
    _sync()


def get_autocast_dtype(device_type):
    if device_type in _DEVICE_TYPES and device_type not in _AUTOCAST_TYPES:
        raise RuntimeError("unsupported scalarType")  # (torch's words for a device type without autocast)
    state = _dtype.autocast_state.dtypes
    default = _dtype.bfloat16 if device_type in _BFLOAT16_BY_DEFAULT else _dtype.float16
    return state.get(_autocast_device(device_type), default)


def set_autocast_dtype(device_type, dtype):
    if device_type in _DEVICE_TYPES and device_type not in _AUTOCAST_TYPES:
        return  # (torch ignores it)
    _dtype.autocast_state.dtypes[_autocast_device(device_type)] = dtype
    _sync()


def _sync():
    """The CPU's settings as the ops on the autocast lists read them: the dtype, or None where it is off."""
    state = _dtype.autocast_state
    state.dtype = get_autocast_dtype("cpu").np if state.enabled.get("cpu") else None


def _deprecated(old, new, fn):
    def call(*args):
        warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=user_stacklevel())
        return fn(*args)
    call.__name__ = old.split("(")[0]
    return call


is_autocast_cpu_enabled = _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')",
                                      lambda: is_autocast_enabled("cpu"))
set_autocast_cpu_enabled = _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)",
                                       lambda enabled: set_autocast_enabled("cpu", enabled))
get_autocast_cpu_dtype = _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')",
                                     lambda: get_autocast_dtype("cpu"))
set_autocast_cpu_dtype = _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)",
                                     lambda dtype: set_autocast_dtype("cpu", dtype))
get_autocast_gpu_dtype = _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')",
                                     lambda: get_autocast_dtype("cuda"))
set_autocast_gpu_dtype = _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)",
                                     lambda dtype: set_autocast_dtype("cuda", dtype))
_cache_enabled = [True]


def is_autocast_cache_enabled():
    return _cache_enabled[0]


def set_autocast_cache_enabled(enabled):
    """Whether autocast keeps casts of weights for the region (tapegrad casts each use: a setting with no cache)."""
    _cache_enabled[0] = bool(enabled)


def clear_autocast_cache():
    """Nothing is cached (see set_autocast_cache_enabled)."""


# -- custom autograd Functions in autocast regions (torch.amp.custom_fwd / custom_bwd) --------------------------------
def _cast(value, device_type, dtype):
    """value with its floating tensors (float64 excepted) cast to dtype, through lists, tuples and dicts."""
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not _dtype.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorates a custom Function's forward: in an autocast region of device_type, with cast_inputs its floating
    inputs are cast to that dtype and it runs with autocast off; without, it runs in the region. Either way ctx
    records the state for custom_bwd."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorates a custom Function's backward: it runs under the autocast state its forward had (custom_fwd's)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
