"""torch.backends.mkl: tapegrad calls NumPy's BLAS (OpenBLAS in its wheels), not oneMKL: not available."""
VERBOSE_OFF, VERBOSE_ON = 0, 1


def is_available():
    return False


class verbose:
    """oneMKL's verbose messages for a scope: there is no oneMKL to make them."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        return None if self.enable == VERBOSE_OFF else self

    def __exit__(self, *exc):
        return False
