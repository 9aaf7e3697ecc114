"""torch.backends.openmp: tapegrad's threads are NumPy's BLAS's and Numba's, not an OpenMP runtime of its own."""


def is_available():
    return False
