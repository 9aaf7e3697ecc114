"""torch.backends.mkldnn: tapegrad has no oneDNN (its convolutions are im2col onto NumPy's BLAS), so it is not
available; its flags are plain attributes scripts may set, as in a torch build without it."""
import contextlib
import sys

enabled = True
deterministic = False
allow_tf32 = True
fp32_precision = "none"
VERBOSE_OFF, VERBOSE_ON, VERBOSE_ON_CREATION = 0, 1, 2


def is_available():
    return False


def is_acl_available():
    return False


class verbose:
    """oneDNN's verbose messages for a scope: there is no oneDNN to make them."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        return None if self.level == VERBOSE_OFF else self

    def __exit__(self, *exc):
        return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    """Set the flags given (None: unchanged); returns the previous ones."""
    this = sys.modules[__name__]
    orig = (enabled, deterministic, allow_tf32, fp32_precision)
    for name, value in (("enabled", _enabled), ("deterministic", _deterministic), ("allow_tf32", _allow_tf32),
                        ("fp32_precision", _fp32_precision)):
        if value is not None:
            setattr(this, name, value)
    return orig


@contextlib.contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    orig = set_flags(enabled, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        set_flags(*orig)
