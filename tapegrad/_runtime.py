"""Process-wide settings torch scripts make: the default dtype, thread counts, determinism, matmul precision.

set_num_threads sets Numba's threads (imported only when called) and the BLAS's through threadpoolctl
when that optional package is installed (the `threads` extra); without it, the BLAS keeps its own count.
"""
import os
import warnings

from . import _dtype
from ._warnings import user_stacklevel

_num_threads = None
_interop_threads = None
_blas_limit = None  # the threadpoolctl limiter kept alive (a dropped one would keep its limits anyway)
_deterministic = False
_matmul_precision = "highest"
warn_always = False  # torch.set_warn_always: warnings torch gives once per process given every time


def get_default_dtype():
    return _dtype.default_float


def set_default_dtype(d):
    """torch.set_default_dtype: float32 or float64; Python floats and float factories then use it."""
    _dtype.set_default(d)


_TENSOR_TYPES = {"torch.FloatTensor": "float32", "torch.DoubleTensor": "float64"}
_warned_default_tensor_type = []


def set_default_tensor_type(t):
    """torch.set_default_tensor_type (deprecated in torch 2.1, with its warning): torch.FloatTensor or
    torch.DoubleTensor (or their names) as set_default_dtype; a CUDA type raises, as in a CPU-only torch."""
    if not _warned_default_tensor_type:  # (torch's: once per process)
        _warned_default_tensor_type.append(t)
        warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                      "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                      stacklevel=user_stacklevel())
    name = t if isinstance(t, str) else f"{getattr(t, '__module__', '')}.{getattr(t, '__name__', '')}"
    if name.startswith("torch.cuda."):
        raise AssertionError("Torch not compiled with CUDA enabled")
    if name not in _TENSOR_TYPES:
        raise TypeError("only floating-point types are supported as the default type")
    _dtype.set_default(getattr(_dtype, _TENSOR_TYPES[name]))


def _cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def get_num_threads():
    """set_num_threads's count; before it, as torch's: OMP_NUM_THREADS where that is a positive integer (NumPy's BLAS
    reads it too), at most the CPUs this process may run on, else those CPUs."""
    if _num_threads is not None:
        return _num_threads
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    cpus = _cpu_count()
    return min(int(omp), cpus) if omp.isdigit() and int(omp) > 0 else cpus


def set_num_threads(n):
    global _num_threads, _blas_limit
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    import numba
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        pass  # the BLAS keeps its own thread count (pip install tapegrad[threads] to control it)
    else:
        _blas_limit = threadpool_limits(limits=n, user_api="blas")
    _num_threads = n


def get_num_interop_threads():
    return _interop_threads if _interop_threads is not None else _cpu_count()


def set_num_interop_threads(n):
    global _interop_threads
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise RuntimeError("Number of inter-op threads must be positive")
    _interop_threads = n  # tapegrad runs no inter-op thread pool: recorded for get_num_interop_threads


def use_deterministic_algorithms(mode, *, warn_only=False):
    """tapegrad's ops are deterministic already; the flag is recorded for are_deterministic_algorithms_enabled."""
    global _deterministic
    _deterministic = bool(mode)


def are_deterministic_algorithms_enabled():
    return _deterministic


def set_float32_matmul_precision(precision):
    """A hint about TF32/bf16 matmuls, which tapegrad never uses: float32 matmuls are always full precision."""
    global _matmul_precision
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=user_stacklevel())
        return
    _matmul_precision = precision


def get_float32_matmul_precision():
    return _matmul_precision


def set_warn_always(b):
    """torch.set_warn_always: the warnings torch gives once per process (TORCH_WARN_ONCE) are given every time."""
    global warn_always
    warn_always = bool(b)


def is_warn_always_enabled():
    return warn_always


def set_flush_denormal(mode):
    """torch.set_flush_denormal: tapegrad computes with NumPy, which cannot switch the CPU's denormal handling on:
    turning it on answers False, as torch does on a CPU that cannot flush denormals (nothing changes); turning it
    off answers True (denormals are kept, as asked)."""
    if not isinstance(mode, bool):
        raise TypeError(f"set_flush_denormal(): argument 'mode' (position 1) must be bool, not {type(mode).__name__}")
    return not mode
