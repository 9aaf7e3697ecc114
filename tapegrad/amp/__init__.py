"""torch.amp: GradScaler and autocast.

tapegrad has no reduced-precision compute, so mixed precision is not emulated: disabled (or, for CUDA,
unavailable and so disabled with torch's warning) they pass through exactly as torch's do; enabled on
the CPU, autocast raises NotImplementedError rather than compute in full precision while claiming not to.
"""
import functools
import warnings


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
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None); also a decorator."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = dtype
        if enabled and device_type == "cuda":
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", UserWarning,
                          stacklevel=2)
            enabled = False
        if enabled:
            raise NotImplementedError(f"tapegrad: autocast(device_type={device_type!r}) is not implemented "
                                      f"(no reduced-precision compute; pass enabled=False to run in full "
                                      f"precision)")
        self._enabled = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return wrapper


def is_autocast_available(device_type):
    return False
