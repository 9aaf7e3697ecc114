"""The ILP64 OpenBLAS bundled with NumPy's wheels, found once, for the callers that reach past NumPy into it:
kernels/blas.py (cblas gemm, called by address from compiled code and by ctypes) and ops/decompositions.py (LAPACKE
drivers NumPy does not expose). A bottom module: ctypes and NumPy only, no Numba (`import tapegrad` loads none).

NumPy 2 bundles scipy-openblas64 (`numpy.libs/`, symbols `scipy_*64_`); NumPy 1.22-1.26 bundled openblas64_
(`numpy/.libs/` on some platforms, symbols `*64_`). A NumPy built on MKL, Accelerate or a system BLAS bundles
none: `functions` then returns None and its callers take their NumPy path."""
import ctypes
import glob
import os

import numpy as np

_LIBRARIES = None


def libraries():
    """NumPy's bundled ILP64 OpenBLAS libraries, loaded (as NumPy linked them, so loaded already), in the order
    searched; empty where NumPy bundles none."""
    global _LIBRARIES
    if _LIBRARIES is None:
        package, found = os.path.dirname(np.__file__), []
        for path in sorted(glob.glob(os.path.join(package, os.pardir, "numpy.libs", "*openblas64*"))
                           + glob.glob(os.path.join(package, ".libs", "*openblas64*"))):
            try:
                found.append(ctypes.CDLL(path))
            except OSError:
                continue
        _LIBRARIES = found
    return _LIBRARIES


def functions(*alternatives):
    """The first of `alternatives` (each a tuple of symbol names: one library's spelling of them) that a bundled
    library has every name of, as new ctypes functions of that library (the caller sets their types; each call
    gives its own objects), libraries searched in order, each library's alternatives in order; None where none
    has."""
    for lib in libraries():
        for names in alternatives:
            try:
                return tuple(lib[name] for name in names)
            except AttributeError:
                continue
    return None
