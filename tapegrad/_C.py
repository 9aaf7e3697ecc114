"""torch._C: the few entries of torch's C++ extension module that Python code outside torch calls (torchvision's
`_log_api_usage_once`, old code's `_get_tracing_state`, the build flags); tapegrad has no C++ extension, so any
other name is an AttributeError that says so."""
from . import grad_mode

has_mkl = has_mkldnn = has_openmp = has_cuda = has_mps = False
has_lapack = True  # (tapegrad's linear algebra: NumPy's LAPACK)


def _log_api_usage_once(event):
    """torch logs the first use of an API for its telemetry; tapegrad keeps none."""


def _get_tracing_state():
    return None  # (no TorchScript trace is ever running)


def _get_cpu_capability():
    return "DEFAULT"


def _set_grad_enabled(enabled):
    grad_mode._set(enabled)


def is_grad_enabled():
    return grad_mode.is_grad_enabled()


def __getattr__(name):
    raise AttributeError(f"module 'torch._C' has no attribute '{name}' (tapegrad has no C++ extension: only "
                         "_log_api_usage_once, _get_tracing_state, _get_cpu_capability, _set_grad_enabled and "
                         "the has_* flags are provided)")
