"""Sums in float64 lanes: a float32 array's whole sum (ops/reduce.py), a row of cross_entropy's exponentials.

NumPy sums float32 pairwise in float32 without SIMD (131,072 elements: 17 us; torch 4 us); this loop
reassociates its float64 sum (fastmath "reassoc" only: NaN and infinity behave as without it), which lets LLVM
vectorise it (4.7 us), and its float64 total rounds to float32 at least as close to the exact sum as NumPy's.
The rounding of the float64 total depends on the machine's vector width, far below float32's resolution. In its
own module so that only such sums compile it.
"""
from numba import njit

from .memory import JIT


@njit(fastmath={"reassoc"}, **JIT)
def float64_sum(x):
    """The float64 sum of 1-d x."""
    s = 0.0
    for j in range(x.size):
        s += x[j]
    return s
