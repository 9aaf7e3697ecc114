"""What the distribution parity tests share: the same inputs built in both libraries, and comparisons of what
each computed (values to a tolerance, random draws bit for bit, errors by message)."""
import numpy as np
import pytest
import torch

import tapegrad as tg

D, TD = tg.distributions, torch.distributions
DTYPES = [(np.float32, torch.float32, tg.float32), (np.float64, torch.float64, tg.float64)]
DT_IDS = ["float32", "float64"]


def T(x, dt=torch.float64, grad=False):
    return torch.tensor(np.asarray(x), dtype=dt, requires_grad=grad)


def G(x, dt=tg.float64, grad=False):
    return tg.tensor(np.asarray(x), dtype=dt, requires_grad=grad)


def arr(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x.detach()._data)


def close(a, b, tol, atol=None):
    a, b = arr(a), arr(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol if atol is None else atol, equal_nan=True)


def same(a, b):
    a, b = arr(a), arr(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_array_equal(b, a)


def near(a, b, npdt):
    """Within a few ulps: the same random draws pushed through transcendental functions (tanh, exp, log, pow),
    whose last bit in torch is its vectorized (SLEEF) kernels' own. The draws themselves are compared bit for
    bit (`same`) where the tests can reach them."""
    a, b = arr(a), arr(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    t = 1e-6 if npdt == np.float32 else 1e-14
    np.testing.assert_allclose(b, a, rtol=t, atol=t)


def tol(npdt):
    return 2e-5 if npdt == np.float32 else 1e-12


def seed(s=3):
    torch.manual_seed(s)
    tg.manual_seed(s)


def messages(fn_t, fn_g, exc=ValueError):
    """Both raise exc, with the same message."""
    with pytest.raises(exc) as et:
        fn_t()
    with pytest.raises(exc) as eg:
        fn_g()
    assert str(eg.value) == str(et.value)
