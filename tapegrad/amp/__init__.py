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


class GradScaler:
    """torch.amp.GradScaler(device="cuda", ...). For CUDA (unavailable) torch warns and disables it;
    disabled, scale() returns its argument, step() calls optimizer.step() and get_scale() is 1.0."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device)
        if enabled and self._device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          UserWarning, stacklevel=2)
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
                          stacklevel=2)
            enabled = False
        if enabled and device_type == "cpu" and dtype not in (_dtype.bfloat16, _dtype.float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU "
                          "Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.", UserWarning,
                          stacklevel=2)
            enabled = False
        if enabled and device_type != "cpu":
            raise NotImplementedError(f"tapegrad: autocast(device_type={device_type!r}) is not implemented "
                                      f"(tapegrad computes on the CPU: autocast(\"cpu\") is)")
        self._enabled = bool(enabled)
        self._outer = []

    def __enter__(self):
        if self.device == "cpu":  # (a CUDA region, always disabled here, leaves the CPU's state alone)
            self._outer.append(_dtype.autocast_state.dtype)
            _dtype.autocast_state.dtype = self.fast_dtype.np if self._enabled else None
        return self

    def __exit__(self, *exc):
        if self.device == "cpu":
            _dtype.autocast_state.dtype = self._outer.pop()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return wrapper


def is_autocast_available(device_type):
    return False
