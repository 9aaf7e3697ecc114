"""torch.nn.attention: the choice of scaled_dot_product_attention's backend (`sdpa_kernel`, `SDPBackend`). On the
CPU torch has two, math and flash, and so does tapegrad: they compute the same values, and differ in the layout
of their output (flash's follows the query's; ops/attention.py) and in what each refuses."""
import contextlib
import enum

from ...ops import attention as _attention

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __str__(self):  # (torch's enum prints its type's name; an IntEnum's prints the number)
        return f"SDPBackend.{self.name}"

    def __format__(self, spec):
        return format(str(self), spec)


_backend_names = {"cudnn": "CUDNN_ATTENTION", "flash": "FLASH_ATTENTION", "mem_efficient": "EFFICIENT_ATTENTION",
                  "math": "MATH", "overrideable": "OVERRIDEABLE"}


def _cur_sdpa_kernel_backends(with_priority=False):
    return [getattr(SDPBackend, val) for name, val in _backend_names.items() if _attention.SDP_BACKENDS[name]]


def _sdpa_kernel(backends, set_priority=False):
    for name, val in _backend_names.items():
        _attention.SDP_BACKENDS[name] = getattr(SDPBackend, val) in backends


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the block, scaled_dot_product_attention may use only `backends` (one or a list); the previous
    choice is restored on exit."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _cur_sdpa_kernel_backends()
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, set_priority)
