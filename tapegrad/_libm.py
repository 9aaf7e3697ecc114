"""libm's scalar functions, as ATen's CPU kernels call them (std::lgamma, std::erfc, std::log1p(float), logf, ...):
NumPy's and Python's own differ from libm's in the last bit, and torch's values are libm's. Loaded at first use
(ctypes.util imports subprocess and tempfile: 12 ms of `import tapegrad`)."""
import functools


@functools.cache
def _library():
    import ctypes.util
    return ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")


@functools.cache
def function(name, single=False):
    """libm's `name` as a callable of one number (C float in and out when single, else double), or None where libm
    cannot be loaded or lacks it."""
    import ctypes
    try:
        fn = getattr(_library(), name)
    except (OSError, AttributeError):
        return None
    kind = ctypes.c_float if single else ctypes.c_double
    fn.restype, fn.argtypes = kind, [kind]
    return fn
