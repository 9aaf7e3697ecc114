"""torch.backends.cudnn: unavailable; its flags are plain attributes, as in a CPU-only torch build, which
`flags` (a context manager) and `set_flags` set and restore as torch's do."""
import contextlib
import sys

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10
fp32_precision = "none"
depthwise_kernel = "auto"


def is_available():
    return False


def version():
    return None


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None, _allow_tf32=None,
              _fp32_precision="none", _depthwise_kernel=None):
    """Set the flags given (None: unchanged); returns the previous ones (benchmark_limit: None without cuDNN)."""
    this = sys.modules[__name__]
    orig = (enabled, benchmark, None, deterministic, allow_tf32, fp32_precision, depthwise_kernel)
    for name, value in (("enabled", _enabled), ("benchmark", _benchmark), ("deterministic", _deterministic),
                        ("allow_tf32", _allow_tf32), ("fp32_precision", _fp32_precision),
                        ("depthwise_kernel", _depthwise_kernel)):
        if value is not None:
            setattr(this, name, value)
    return orig


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    orig = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32, fp32_precision, depthwise_kernel)
    try:
        yield
    finally:
        set_flags(*orig)
