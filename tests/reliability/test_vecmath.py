"""kernels/vecmath.py's exp, sigmoid and tanh against exact values (mpmath at 40 digits: an oracle that does not
depend on the machine), within 2 ulp of the argument's dtype wherever the exact value is a normal float, and
their special values; float32 arguments give float32 results."""
import math

import mpmath
import numpy as np
import pytest
from numba import njit

from tapegrad.kernels import vecmath

mpmath.mp.dps = 40


@njit(error_model="numpy")
def _apply(name, x, out):
    for i in range(x.shape[0]):
        if name == 0:
            out[i] = vecmath.exp(x[i])
        elif name == 1:
            out[i] = vecmath.sigmoid(x[i])
        else:
            out[i] = vecmath.tanh(x[i])


_EXACT = {0: mpmath.exp, 1: lambda v: 1 / (1 + mpmath.exp(-v)), 2: mpmath.tanh}
_RANGES = {(0, np.float64): (-745.0, 709.7), (1, np.float64): (-700.0, 700.0), (2, np.float64): (-25.0, 25.0),
           (0, np.float32): (-103.0, 88.7), (1, np.float32): (-88.0, 100.0), (2, np.float32): (-12.0, 12.0)}


def _points(lo, hi, dtype):
    rng = np.random.default_rng(0)
    tiny = np.finfo(dtype).tiny
    return np.concatenate([rng.uniform(lo, hi, 1500), rng.normal(0, 2, 1500), rng.normal(0, 1e-5, 300),
                           [tiny, -tiny, 0.34657359, -0.34657359, 0.5, -0.5, 1.0, -1.0]]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", [0, 1, 2], ids=["exp", "sigmoid", "tanh"])
def test_within_two_ulp_of_exact(name, dtype):
    x = _points(*_RANGES[name, dtype], dtype)
    got = np.empty_like(x)
    _apply(name, x, got)
    exact = np.array([float(_EXACT[name](mpmath.mpf(float(v)))) for v in x]).astype(dtype)
    normal = np.abs(exact) >= np.finfo(dtype).tiny
    ulps = np.abs(got.astype(np.float64) - exact)[normal] / np.spacing(np.abs(exact[normal]))
    assert got.dtype == dtype and normal.sum() > 3000 and ulps.max() <= 2, (ulps.max(), x[normal][ulps.argmax()])


@pytest.mark.parametrize("name,x,expected", [
    (0, math.inf, math.inf), (0, -math.inf, 0.0), (0, 710.0, math.inf), (0, -746.0, 0.0), (0, 0.0, 1.0),
    (0, -745.1, 5e-324), (0, 709.78, math.exp(709.78)),
    (1, math.inf, 1.0), (1, -math.inf, 0.0), (1, 0.0, 0.5), (1, 40.0, 1.0), (1, -800.0, 0.0),
    (2, math.inf, 1.0), (2, -math.inf, -1.0), (2, 0.0, 0.0), (2, -0.0, -0.0), (2, 30.0, 1.0), (2, -30.0, -1.0),
    (2, 1e-300, 1e-300), (2, -5e-324, -5e-324),
])
def test_special_values(name, x, expected):
    got = np.empty(1)
    _apply(name, np.array([x]), got)
    assert got[0] == expected and math.copysign(1, got[0]) == math.copysign(1, expected), (got[0], expected)


@pytest.mark.parametrize("name,x,expected", [
    (0, math.inf, math.inf), (0, -math.inf, 0.0), (0, 89.0, math.inf), (0, -104.0, 0.0), (0, 0.0, 1.0),
    (0, -103.9, 1e-45), (0, 88.8, math.inf),
    (1, math.inf, 1.0), (1, -math.inf, 0.0), (1, 0.0, 0.5), (1, 20.0, 1.0), (1, -120.0, 0.0),
    (2, math.inf, 1.0), (2, -math.inf, -1.0), (2, 0.0, 0.0), (2, -0.0, -0.0), (2, 10.0, 1.0), (2, -10.0, -1.0),
    (2, 1e-38, 1e-38), (2, -1e-45, -1e-45),
])
def test_special_values_float32(name, x, expected):
    got = np.empty(1, np.float32)
    _apply(name, np.array([x], np.float32), got)
    expected = np.float32(expected)
    assert got[0] == expected and math.copysign(1, got[0]) == math.copysign(1, expected), (got[0], expected)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", [0, 1, 2])
def test_nan_propagates(name, dtype):
    got = np.empty(1, dtype)
    _apply(name, np.array([math.nan], dtype), got)
    assert math.isnan(got[0])
