"""erf on arrays (NumPy has none): a compiled ufunc, in its own module because a ufunc with explicit
signatures is built when its module is imported, and only the erf op should pay for that. Moving it out of
kernels/scalar.py took import + first backward from 1.13 to 0.99 s (median of 11 fresh processes)."""
import math

from numba import vectorize


@vectorize(["float32(float32)", "float64(float64)"], cache=True)
def erf_array(x):
    return math.erf(x)
