"""torch.amp: GradScaler and autocast.

autocast("cpu") runs the ops on torch's CPU autocast lists in bfloat16, or float16 with dtype=torch.float16
(matmul, mm, bmm, linear, conv, einsum, prelu: their float32 operands cast, the casts recorded) and its float32
list (the losses, prod) in float32, as torch does; bfloat16 needs the optional `bfloat16` extra. For CUDA (unavailable)
it warns and disables itself, as torch; disabled it passes through. GradScaler passes through disabled;
enabled on the CPU it raises NotImplementedError.
"""
import functools
import warnings

from .. import _dtype
from .._warnings import user_stacklevel


class GradScaler:
    """torch.amp.GradScaler(device="cuda", ...). For CUDA (unavailable) torch warns and disables it;
    disabled, scale() returns its argument, step() calls optimizer.step() and get_scale() is 1.0."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device)
        if enabled and self._device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          UserWarning, stacklevel=user_stacklevel())
            enabled = False
        if enabled:
            raise NotImplementedError(f"tapegrad: GradScaler(device={self._device!r}, enabled=True) is not "
                                      f"implemented (tapegrad computes in full precision; pass enabled=False)")
        self._enabled = False
        self._init_scale, self._growth_factor = init_scale, growth_factor
        self._backoff_factor, self._growth_interval = backoff_factor, growth_interval

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer):
        pass

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        pass

    def get_scale(self):
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        """A no-op, as a disabled torch GradScaler's (this one always is: pytorch/tutorials' amp recipe loads
        the state_dict it saved)."""


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None); also a decorator."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        if dtype is None and device_type == "cpu":
            dtype = _dtype.bfloat16  # (torch.get_autocast_dtype("cpu"))
        self.fast_dtype = dtype
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
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return wrapper


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
    state = _dtype.autocast_state.dtypes
    default = _dtype.bfloat16 if device_type in _BFLOAT16_BY_DEFAULT else _dtype.float16
    return state.get(_autocast_device(device_type), default)


def set_autocast_dtype(device_type, dtype):
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
