"""torch's window functions (torch.hann_window, hamming, blackman, bartlett, kaiser): constants, computed in
float64 and cast to the requested floating dtype."""
import math

import numpy as np

from .. import _dtype
from ..device import cpu_only as _check_device
from ..tensor import _new

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]
INPLACE = ()


def _window(name, window_length, periodic, dtype, device, requires_grad, values):
    if not isinstance(window_length, (int, np.integer)) or isinstance(window_length, bool):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    _check_device(device, name)
    d = dtype if dtype is not None else _dtype.default_float
    np_dtype = _dtype.to_numpy_dtype(d)
    if not _dtype.is_float(np_dtype):
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype="
                           f"{_dtype.cpp_type_name(np_dtype)}, device=cpu, layout=Strided (default), "
                           f"requires_grad=false (default), pinned_memory=false, memory_format=(nullopt))")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    n = int(window_length)
    # (float16 and bfloat16 computed in float32, then rounded)
    work = np_dtype if np_dtype in (np.float32, np.float64) else np.dtype(np.float32)
    if n == 0:
        w = np.zeros(0, work)
    elif n == 1:
        w = np.ones(1, work)
    else:
        m = n + 1 if periodic else n  # periodic: one more point, the last dropped (the DFT-even window)
        w = values(np.arange(m).astype(work), m, work.type)[:n]
    t = _new(np.ascontiguousarray(w.astype(np_dtype)))
    if requires_grad:
        t.requires_grad_(True)
    return t


# Each computed in the window's dtype in torch's order of operations (TensorFactories.cpp), so float32 windows
# round as torch's do (blackman's ends are exactly 0).
def _hamming(alpha, beta):
    def values(k, m, s):
        return np.cos(k * s(2 * math.pi / (m - 1))) * s(-beta) + s(alpha)
    return values


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    """torch.hann_window: 0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, _hamming(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """torch.hamming_window: alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad, _hamming(alpha, beta))


def _blackman(k, m, s):
    x = k * s(math.pi / (m - 1))
    return np.cos(x * s(4)) * s(0.08) - np.cos(x * s(2)) * s(0.5) + s(0.42)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """torch.blackman_window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad, _blackman)


def _bartlett(k, m, s):
    w = k * s(2.0 / (m - 1))
    half = ((m - 1) >> 1) + 1
    w[half:] = w[half:] * s(-1) + s(2)
    return w


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """torch.bartlett_window: the triangle 1 - |2n / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, _bartlett)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None, pin_memory=False,
                  requires_grad=False):
    """torch.kaiser_window: I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N - 1) / 2 (computed in float64)."""
    def values(k, m, s):
        a = (m - 1) / 2
        k = k.astype(np.float64)
        return np.i0(beta * np.sqrt(np.abs(1 - ((k - a) / a) ** 2))) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, values)
