"""torch.backends.opt_einsum: tapegrad's einsum contracts in NumPy's order and does not call the opt_einsum
package, so it is not available here (enabled False, strategy None, as torch without the package)."""
import contextlib
import sys

enabled = False
strategy = None


def is_available():
    return False


def get_opt_einsum():
    return None


def set_flags(_enabled=None, _strategy=None):
    this = sys.modules[__name__]
    orig = (enabled, strategy)
    if _enabled is not None:
        if _enabled:
            raise ValueError(f"opt_einsum is not available, so setting `enabled` to {_enabled} will not reap the "
                             "benefits of calculating an optimal path for einsum. torch.einsum will fall back to "
                             "contracting from left to right. To enable this optimal path calculation, please "
                             "install opt-einsum.")
        this.enabled = _enabled
    if _strategy is not None:
        raise ValueError(f"opt_einsum is not available, so setting `strategy` to {_strategy} will not be meaningful. "
                         "torch.einsum will bypass path calculation and simply contract from left to right. Please "
                         "install opt_einsum or unset `strategy`.")
    return orig


@contextlib.contextmanager
def flags(enabled=None, strategy=None):
    orig = set_flags(enabled, strategy)
    try:
        yield
    finally:
        set_flags(*orig)
