"""torch.special's Bessel and Airy functions and orthogonal polynomials (tapegrad/ops/special.py's BESSEL and
POLYNOMIALS, kernels/special_functions.py) against torch: values in float32 and float64 over wide ranges (0, signs,
huge and tiny magnitudes, inf, NaN), integer and bool promotion, Python numbers for x or n, n's truncation,
out=, no gradient (as torch's), torch's errors, and a compiled replay on new inputs.

Tolerances: ATen's float kernels are compiled with fused multiply-adds where the CPU has them, so float32 results
differ from these (unfused, IEEE) ones by an ulp or so, more near a root or where a recurrence overflows."""
import numpy as np
import pytest
import torch

import tapegrad
import tapegrad.special
from tapegrad.ops import special as ops_special

BESSEL = ops_special.BESSEL
POLYNOMIALS = ops_special.POLYNOMIALS
RNG = np.random.default_rng(9)
WIDE = np.concatenate([RNG.uniform(-20, 20, 300), RNG.uniform(-3, 3, 300), RNG.uniform(-300, 300, 60),
                       10.0 ** RNG.uniform(-30, 30, 60), -10.0 ** RNG.uniform(-30, 30, 60),
                       [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, 1e-30, 1e-5, 100.0, 700.0, 2.09, -2.09, 8.0, 5.0,
                        103.8, 103.9, 8.3203353, 1e300, -1e300, np.nan, np.inf, -np.inf]])


def _close(got, want, rtol, atol=0.0, overflow=None):
    """got matches want (NaN with NaN); with overflow, a non-finite got is accepted where want is beyond it (a
    recurrence that overflows an operation earlier or later than ATen's fused one)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(all="ignore"):
        ok = same | (np.abs(got - want) <= atol * np.maximum(1.0, np.abs(want)) + rtol * np.abs(want))
        if overflow is not None:
            ok |= ~np.isfinite(got) & ~(np.abs(want) <= overflow)
    bad = np.flatnonzero(~ok)
    assert not bad.size, f"{bad.size} values differ, e.g. {got.ravel()[bad[:3]]} != torch {want.ravel()[bad[:3]]}"


def test_kernel_codes_match():
    module = tapegrad.kernels.module("special_functions")
    assert module.UNARY == BESSEL and module.BINARY == POLYNOMIALS


@pytest.mark.parametrize("name", BESSEL)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_bessel_values(name, dtype):
    with np.errstate(over="ignore"):   # (1e300 is inf in float32)
        x = WIDE.astype(dtype)
    want = getattr(torch.special, name)(torch.from_numpy(x))
    got = getattr(tapegrad.special, name)(tapegrad.tensor(x))
    assert got.dtype == getattr(tapegrad, dtype) and want.dtype == getattr(torch, dtype)
    if dtype == "float64":
        _close(got.numpy(), want.numpy(), 1e-13, 1e-300)
    else:
        _close(got.numpy(), want.numpy(), 4e-6, 1e-6)


_XS = np.concatenate([RNG.uniform(-1.5, 1.5, 40), RNG.uniform(-10, 10, 20),
                      [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.0, 1e-8, 1e10, -1e10, np.inf, -np.inf, 0.25, 0.75]])
# (no NaN x: ATen's chebyshev_u/v/w, laguerre and legendre leave their result uninitialised when x is NaN; and no
# degree that makes torch's loop run for ever, as laguerre's and legendre's for |x| <= 1 and n near 2^63)
_NS = np.concatenate([np.arange(-2, 13), [20, 50, 100, 127, 128, 129, 300, 512, 513, 3.5, 7.9, -0.5, np.nan, np.inf,
                                          -np.inf, 1e30]])


@pytest.mark.parametrize("name", POLYNOMIALS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_polynomial_values(name, dtype):
    x, n = (a.ravel().astype(dtype) for a in np.meshgrid(_XS, _NS))
    want = getattr(torch.special, name)(torch.from_numpy(x), torch.from_numpy(n))
    got = getattr(tapegrad.special, name)(tapegrad.tensor(x), tapegrad.tensor(n))
    assert got.dtype == getattr(tapegrad, dtype)
    rtol, atol = (1e-10, 1e-12) if dtype == "float64" else (1e-4, 1e-5)
    _close(got.numpy(), want.numpy(), rtol, atol, overflow=np.finfo(dtype).max / 1e3)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_numbers_and_promotion(name):
    T, S = getattr(torch.special, name), getattr(tapegrad.special, name)
    xi, ni = np.array([[-3, 0, 2, 5]]), np.array([[0], [1], [3], [6]])
    cases = [
        (torch.tensor(xi), torch.tensor(ni)),                                   # int64, int64 -> float32
        (torch.tensor(xi, dtype=torch.int32), torch.tensor(ni, dtype=torch.uint8)),
        (torch.tensor(xi > 0), torch.tensor(ni)),                               # bool
        (torch.tensor([0.3, -0.7, 1.2]), 3),                                    # a Python int n
        (torch.tensor([0.3, -0.7, 1.2]), 4.9),                                  # a float n, truncated
        (torch.tensor([0.3, -0.7, 1.2], dtype=torch.float64), True),
        (0.4, torch.tensor([0, 2, 5, 9])),                                      # a Python float x
        (2, torch.tensor([0, 2, 5, 9])),
        (torch.tensor([0.3, 1.2], dtype=torch.float32), torch.tensor([3.0, 8.0], dtype=torch.float64)),
        (torch.tensor(0.3), torch.tensor([[2], [4]])),                           # 0-d and broadcast
        (torch.tensor(0.3), torch.tensor(5)),
        (torch.zeros(0, 3), torch.tensor([1, 2, 3])),
    ]
    for x, n in cases:
        want = T(x, n)
        got = S(*(tapegrad.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v for v in (x, n)))
        assert str(got.dtype) == str(want.dtype), (x, n)
        assert tuple(got.shape) == tuple(want.shape)
        _close(got.numpy(), want.numpy(), 1e-6, 1e-6)
    # keywords as torch's
    _close(S(x=tapegrad.tensor([0.5]), n=3).numpy(), T(x=torch.tensor([0.5]), n=3).numpy(), 1e-6)


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_promotion_and_shapes(name):
    T, S = getattr(torch.special, name), getattr(tapegrad.special, name)
    for x in (torch.tensor([0, 1, 3, -2]), torch.tensor([True, False]), torch.tensor([2, 7], dtype=torch.int32),
              torch.tensor(1.5), torch.zeros(0, 2), torch.tensor([[0.5, 2.5]], dtype=torch.float64).t()):
        want = T(x)
        got = S(tapegrad.tensor(x.numpy()))
        assert str(got.dtype) == str(want.dtype)
        assert tuple(got.shape) == tuple(want.shape)
        _close(got.numpy(), want.numpy(), 4e-6, 1e-6)
    assert S(input=tapegrad.tensor([0.5])).shape == (1,)
    # non-contiguous input
    a = RNG.uniform(0.1, 9, (4, 6))
    _close(S(tapegrad.tensor(a).t()).numpy(), T(torch.tensor(a).t()).numpy(), 1e-13)


def test_default_dtype_float64():
    old = tapegrad.get_default_dtype()
    tapegrad.set_default_dtype(tapegrad.float64)
    try:
        assert tapegrad.special.bessel_j0(tapegrad.tensor([1, 2])).dtype == tapegrad.float64
        assert tapegrad.special.legendre_polynomial_p(tapegrad.tensor([1, 2]), 3).dtype == tapegrad.float64
    finally:
        tapegrad.set_default_dtype(old)


@pytest.mark.parametrize("name", BESSEL + POLYNOMIALS)
def test_no_gradient_as_torch(name):
    """torch gives these no derivative: the result does not require grad, and a backward through it raises."""
    args = {}
    for lib in (torch, tapegrad):
        x = lib.tensor([0.5, 1.5], requires_grad=True)
        f = getattr(lib.special, name)
        y = f(x) if name in BESSEL else f(x, lib.tensor([2.0, 3.0], requires_grad=True))
        assert not y.requires_grad and y.grad_fn is None
        with pytest.raises(RuntimeError) as info:
            (y * 2).sum().backward()
        args[lib.__name__] = str(info.value)
    assert args["tapegrad"] == args["torch"]


@pytest.mark.parametrize("name", ["bessel_y1", "hermite_polynomial_he"])
def test_out(name):
    S, T = getattr(tapegrad.special, name), getattr(torch.special, name)
    call = (lambda f, x, **k: f(x, **k)) if name in BESSEL else (lambda f, x, **k: f(x, 3, **k))
    xv = np.array([0.5, 1.5, 4.0], np.float32)
    for lib, f in ((torch, T), (tapegrad, S)):
        x = lib.tensor(xv, requires_grad=True)     # (out= is taken: the op has no derivative)
        out = lib.empty(3, dtype=lib.float64)
        r = call(f, x, out=out)
        assert r is out and out.dtype == lib.float64
        _close(out.detach().numpy(), call(f, x).detach().numpy(), 1e-7)
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            call(f, x, out=lib.empty(3, dtype=lib.int64))


def _error(fn):
    try:
        fn()
    except Exception as e:   # noqa: BLE001 (the type and message are what is compared)
        return type(e), str(e)
    return None


@pytest.mark.parametrize("case", ["half", "bfloat16_poly", "numbers", "list_n", "not_tensor", "broadcast", "int_big"])
def test_errors_as_torch(case):
    def run(lib):
        S = lib.special
        return {
            "half": lambda: S.bessel_j0(lib.tensor([1.0], dtype=lib.float16)),
            "bfloat16_poly": lambda: S.legendre_polynomial_p(lib.tensor([1.0], dtype=lib.bfloat16), 2),
            "numbers": lambda: S.chebyshev_polynomial_t(2, 3),
            "list_n": lambda: S.hermite_polynomial_h(lib.ones(2), [1, 2]),
            "not_tensor": lambda: S.modified_bessel_k0(1.0),
            "broadcast": lambda: S.laguerre_polynomial_l(lib.ones(2), lib.ones(3)),
            "int_big": lambda: S.chebyshev_polynomial_u(lib.ones(2), 2 ** 70),
        }[case]()
    want, got = _error(lambda: run(torch)), _error(lambda: run(tapegrad))
    assert want is not None and got is not None
    assert got[0] is want[0]
    assert got[1].split("\n")[0] == want[1].split("\n")[0]


def test_compiled_replay_recomputes():
    def f(x, n):
        return tapegrad.special.bessel_j1(x) + tapegrad.special.chebyshev_polynomial_t(x / 10, n)

    compiled = tapegrad.compile(f)
    for _ in range(3):
        x = tapegrad.tensor(RNG.uniform(-9, 9, 5))
        n = tapegrad.tensor(RNG.integers(0, 9, 5).astype(np.float64))
        want = torch.special.bessel_j1(torch.tensor(x.numpy())) + \
            torch.special.chebyshev_polynomial_t(torch.tensor(x.numpy()) / 10, torch.tensor(n.numpy()))
        _close(compiled(x, n).numpy(), want.numpy(), 1e-12, 1e-14)
