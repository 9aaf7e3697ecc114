"""Special functions (torch.lgamma, digamma, polygamma, mvlgamma, erfinv, erfc, i0, sinc, xlogy, logit, log10, and
the rows behind tapegrad.special): ATen's own algorithms (aten/src/ATen/native/Math.h, most from Cephes), vectorised
in NumPy, each in the input's dtype as ATen's CPU kernel computes it (libm's lgamma and erfc per element, by ctypes:
NumPy has neither). Each is a Python row whose rule is written in these ops, so create_graph differentiates
through them (lgamma -> digamma -> polygamma(1) -> polygamma(2) ...)."""
import functools
import math
import numbers

import numpy as np

from .. import _dtype, _libm as _libm_functions, _meta, kernels, registry
from ..tape import traced_value
from ..tensor import Tensor, _new
from ._common import OPS, _array_rule_dtype, _float, _in_float32, _is_scalar, _record, _sum_to_np, _tensor, \
    _to_dtype, broadcast_shape
from .elementwise import _erf, exp, log, where
from ._signatures import number_either
from .reduce import sum_to_shape

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "erfc", "i0", "sinc", "xlogy", "logit", "log10",
           "igamma", "igammac"]
INPLACE = ("lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "erfc", "i0", "sinc", "xlogy", "logit", "log10",
           "igamma", "igammac")

_SQRT_PI = math.sqrt(math.pi)
_M_2_SQRTPI = 2.0 / _SQRT_PI
_LN10 = math.log(10.0)
_MACHEP = 1.11022302462515654042e-16


# -- libm (ATen's std::lgamma, std::erfc) ----------------------------------------------------------------
@functools.cache
def _libm(name):
    """libm's `name` (double) and `name`f (float) as Python callables; Python's math module where libm is absent."""
    fd, ff = _libm_functions.function(name), _libm_functions.function(name + "f", single=True)
    if fd is not None and ff is not None:
        return fd, ff
    fallback = getattr(math, name)

    def fd(x):
        try:
            return fallback(x)
        except ValueError:   # lgamma's poles: +inf there
            return math.inf
    return fd, fd


def _map_libm(name, a):
    a = np.asanyarray(a)
    fd, ff = _libm(name)
    fn = ff if a.dtype == np.float32 else fd
    flat = np.asanyarray(a, order="C").reshape(-1)
    return np.fromiter(map(fn, flat.tolist()), a.dtype, flat.size).reshape(a.shape)


def lgamma_np(a):
    """ATen's lgamma: libm's lgamma (lgammaf for float32)."""
    return _map_libm("lgamma", a)


def erfc_np(a):
    """libm's erfc (erfcf for float32); ATen's float32 kernel is SLEEF's erfcf (1.5 ulp)."""
    return _map_libm("erfc", a)


# -- gamma family ----------------------------------------------------------------------------------------
_PSI_COEF = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
             -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
             8.33333333333333333333E-2)


def digamma_np(a):
    """ATen's calc_digamma (Cephes psi), vectorised, in a's dtype; the reflection term in float64 as ATen's."""
    a = np.asanyarray(a)
    dt = a.dtype.type
    x = a.copy()
    zero = x == 0
    neg_int = (x < 0) & (x == np.trunc(x))
    reflect = (x < 0) & ~neg_int
    extra = np.zeros(x.shape, np.float64)
    with np.errstate(all="ignore"):
        if reflect.any():
            r = np.modf(x[reflect].astype(np.float64))[0]
            extra[reflect] = -math.pi / np.tan(math.pi * r)
            x[reflect] = dt(1) - x[reflect]
        x = np.where(zero | neg_int, dt(1), x)
        result = np.zeros_like(x)
        small = x < 10
        while small.any():   # push x to >= 10
            result = np.where(small, result - dt(1) / x, result)
            x = np.where(small, x + dt(1), x)
            small = x < 10
        z = dt(1) / (x * x)
        poly = np.zeros_like(x)
        for c in _PSI_COEF:
            poly = poly * z + dt(c)
        y = np.where(x < dt(1.0e17), z * poly, dt(0))
        out = np.where(x == 10, result + dt(2.25175258906672110764), result + np.log(x) - dt(0.5) / x - y)
        out = out + extra.astype(a.dtype)
    out = np.where(zero, np.copysign(dt(np.inf), -a), out)
    return np.where(neg_int, dt(np.nan), out).astype(a.dtype)


def trigamma_np(a):
    """ATen's trigamma (float and double overloads), vectorised, in a's dtype."""
    a = np.asanyarray(a)
    dt = a.dtype.type
    x = a.copy()
    low = x < 0.5
    with np.errstate(all="ignore"):
        sin_pi_x = np.sin(dt(math.pi) * x)
        result = np.where(low, -(dt(math.pi) * dt(math.pi)) / (sin_pi_x * sin_pi_x), dt(0))
        sign = np.where(low, dt(-1), dt(1))
        x = np.where(low, dt(1) - x, x)
        for _ in range(6):
            result = result + dt(1) / (x * x)
            x = x + dt(1)
        ixx = dt(1) / (x * x)
        series = dt(1. / 6) - ixx * (dt(1. / 30) - ixx * dt(1. / 42))
        result = result + (dt(1) + dt(1) / (dt(2) * x) + ixx * series) / x
    return (sign * result).astype(a.dtype)


_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
           -7.1661652561756670113e18)


def zeta_np(x, q):
    """ATen's zeta(x, q) (Cephes' Hurwitz zeta: a direct sum, then Euler-Maclaurin), vectorised; computed in
    float64 (ATen's acc_type on the CPU) and returned in the operands' result dtype."""
    x, q = np.asanyarray(x), np.asanyarray(q)
    out_dt = np.result_type(x, q)
    x, q = np.broadcast_arrays(x.astype(np.float64), q.astype(np.float64))
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        pole = x == 1
        out[pole] = np.inf
        done = pole | (x < 1)
        qneg = (q <= 0) & ~done
        qint = qneg & (q == np.floor(q))
        out[qint] = np.inf
        done |= qint | (qneg & (x != np.floor(x)))
        s = q ** -x
        a, b = q.copy(), np.zeros(x.shape)
        direct, i = ~done, 0
        while True:   # the direct sum, each element while (i < 9 || a <= 9) and not converged
            go = direct & ((i < 9) | (a <= 9))
            if not go.any():
                break
            i += 1
            a = np.where(go, a + 1, a)
            b = np.where(go, a ** -x, b)
            s = np.where(go, s + b, s)
            conv = go & (-_MACHEP * s < b) & (b < _MACHEP * s)
            out[conv] = s[conv]
            done |= conv
            direct = go & ~conv
        w = a
        s = s + b * w / (x - 1) - 0.5 * b
        aa, k, live = np.ones(x.shape), 0.0, ~done
        for c in _ZETA_A:   # Euler-Maclaurin terms, each element until one is below MACHEP of the sum
            aa = aa * (x + k)
            b = b / w
            t = aa * b / c
            s = np.where(live, s + t, s)
            live &= ~(np.abs(t / s) < _MACHEP)
            k += 1
            aa = aa * (x + k)
            b = b / w
            k += 1
        out[~done] = s[~done]
    return out.astype(out_dt)


def polygamma_np(n, a):
    """ATen's polygamma kernel: digamma (n = 0), trigamma (n = 1), else calc_polygamma:
    (-1)^(n+1) exp(lgamma(n + 1)) zeta(n + 1, x), the factorial in a's dtype, zeta in float64."""
    a = np.asanyarray(a)
    if n == 0:
        return digamma_np(a)
    if n == 1:
        return trigamma_np(a)
    dt = a.dtype.type
    fact = dt(lgamma_np(np.asanyarray(dt(n) + dt(1))))
    with np.errstate(all="ignore"):
        return (dt(1 if n % 2 else -1) * np.exp(fact) * zeta_np(dt(n + 1), a).astype(a.dtype)).astype(a.dtype)


# -- error functions -------------------------------------------------------------------------------------
_ERFINV_A = (0.886226899, -1.645349621, 0.914624893, -0.140543331)
_ERFINV_B = (-2.118377725, 1.442710462, -0.329097515, 0.012229801)
_ERFINV_C = (-1.970840454, -1.624906493, 3.429567803, 1.641345311)
_ERFINV_D = (3.543889200, 1.637067800)


def erfinv_np(y):
    """ATen's calc_erfinv: a rational first guess (Pavlis), then two Newton steps on erf, in y's dtype; then two
    on erfc in the tails."""
    y = np.asanyarray(y)
    dt = y.dtype.type
    a, b, c, d = ([dt(v) for v in t] for t in (_ERFINV_A, _ERFINV_B, _ERFINV_C, _ERFINV_D))
    ya = np.abs(y)
    with np.errstate(all="ignore"):
        z = y * y
        central = y * (((a[3] * z + a[2]) * z + a[1]) * z + a[0]) / \
            ((((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + dt(1))
        z = np.sqrt(-np.log((dt(1) - ya) / dt(2)))
        tail = np.copysign(((c[3] * z + c[2]) * z + c[1]) * z + c[0], y) / ((d[1] * z + d[0]) * z + dt(1))
        x = np.where(ya <= dt(0.7), central, tail)
        two_over_sqrt_pi = dt(2) / dt(_SQRT_PI)
        for _ in range(2):
            x = x - (_erf(x) - y) / (two_over_sqrt_pi * np.exp(-x * x))
        # a third step in the tails on erfc, where 1 - |y| is exact and erf's residual is not: torch 2.13's
        # results there are correctly rounded, two steps on erf leave up to 1e-11
        xa = np.abs(x)
        for _ in range(2):
            xa = xa - ((dt(1) - ya) - erfc_np(xa)) / (two_over_sqrt_pi * np.exp(-xa * xa))
        x = np.where(ya > dt(0.7), np.copysign(xa, y), x)
    x = np.where(ya == 1, np.copysign(dt(np.inf), y), x)
    return np.where(ya > 1, dt(np.nan), x).astype(y.dtype)


def erfcx_np(a):
    """exp(x^2) erfc(x): libm's erfc scaled by exp(x^2) (x^2 split exactly into hi + lo), and, from x = 26, where
    erfc nears underflow, the asymptotic series 1/(x sqrt pi) sum (-1)^k (2k-1)!! / (2x^2)^k (its terms fall by
    (2k-1)/1352 or more there). ATen uses Faddeeva's Chebyshev fits; the two agree to about 1e-15."""
    a = np.asanyarray(a)
    x = a.astype(np.float64)
    with np.errstate(all="ignore"):
        big = x >= 26
        xs = np.where(big, 0.0, x)
        split = xs * 134217729.0
        hi_part = split - (split - xs)
        lo_part = xs - hi_part
        sq = xs * xs
        sq_lo = ((hi_part * hi_part - sq) + 2 * hi_part * lo_part) + lo_part * lo_part
        if a.dtype == np.float32:   # ATen's float kernel squares in float32 (its exp(x^2) for x < 0)
            sq, sq_lo = np.where(xs < 0, (xs * xs).astype(np.float32), sq), np.where(xs < 0, 0.0, sq_lo)
        near = np.exp(sq) * (1 + sq_lo) * erfc_np(xs)
        xb = np.where(big, x, 26.0)
        inv = 1 / (2 * xb * xb)
        term, total = np.ones_like(xb), np.ones_like(xb)
        for k in range(1, 12):
            term = term * -(2 * k - 1) * inv
            total = total + term
        far = total / (xb * _SQRT_PI)
        out = np.where(big, far, np.where(x < -26.7, np.inf, near))
        return out.astype(a.dtype)   # (float32 overflows to inf from x = -9.4, as ATen's)


def log_ndtr_np(a):
    """ATen's calc_log_ndtr: log(erfcx(-x/sqrt2) / 2) - x^2/2 below -1, else log1p(-erfc(x/sqrt2) / 2)."""
    a = np.asanyarray(a)
    dt = a.dtype.type
    t = a * dt(1 / math.sqrt(2))
    with np.errstate(all="ignore"):
        low = np.log(erfcx_np(-t) / dt(2)) - t * t
        high = np.log1p(-erfc_np(t) / dt(2))
    return np.where(a < -1, low, high).astype(a.dtype)


_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9)


def _polevl(x, coef):
    out = np.zeros_like(x)
    for c in coef:
        out = out * x + x.dtype.type(c)
    return out


def ndtri_np(a):
    """ATen's calc_ndtri (Cephes ndtri), vectorised, in a's dtype."""
    a = np.asanyarray(a)
    dt = a.dtype.type
    e2 = dt(0.13533528323661269189)   # exp(-2)
    with np.errstate(all="ignore"):
        upper = a > dt(1) - e2
        y = np.where(upper, dt(1) - a, a)
        yc = y - dt(0.5)
        y2 = yc * yc
        central = (yc + yc * (y2 * _polevl(y2, _NDTRI_P0) / _polevl(y2, _NDTRI_Q0))) * dt(2.50662827463100050242)
        x = np.sqrt(dt(-2) * np.log(y))
        x0 = x - np.log(x) / x
        z = dt(1) / x
        x1 = np.where(x < 8, z * _polevl(z, _NDTRI_P1) / _polevl(z, _NDTRI_Q1),
                      z * _polevl(z, _NDTRI_P2) / _polevl(z, _NDTRI_Q2))
        tail = np.where(upper, x0 - x1, x1 - x0)
        out = np.where(y > e2, central, tail)
    out = np.where(a == 0, dt(-np.inf), np.where(a == 1, dt(np.inf), out))
    return np.where((a < 0) | (a > 1), dt(np.nan), out).astype(a.dtype)


# -- modified Bessel functions (Cephes Chebyshev expansions) ---------------------------------------------
from .._cephes import I0_A as _I0E_A, I0_B as _I0E_B, I1_A as _I1E_A, I1_B as _I1E_B  # noqa: E402


def _chbevl(x, coef):
    """Cephes chbevl: the Chebyshev series sum coef at x (already mapped to [-2, 2])."""
    dt = x.dtype.type
    b0, b1, b2 = np.full_like(x, coef[0]), np.zeros_like(x), np.zeros_like(x)
    for c in coef[1:]:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + dt(c)
    return dt(0.5) * (b0 - b2)


def _bessel_parts(a, order):
    """|x|, the [0, 8] mask, and exp(-|x|) I_order(|x|) (/|x| for order 1 below 8, as Cephes' series is) on both
    pieces; ATen's float32 I1 series drop the leading coefficients (17 and 7 of them are kept)."""
    dt = a.dtype.type
    ca, cb = (_I0E_A, _I0E_B) if order == 0 else (_I1E_A, _I1E_B)
    if order == 1 and a.dtype == np.float32:
        ca, cb = ca[-17:], cb[-7:]
    x = np.abs(a)
    small = x <= dt(8)
    with np.errstate(all="ignore"):
        near = _chbevl(x / dt(2) - dt(2), ca)
        far = _chbevl(dt(32) / x - dt(2), cb) / np.sqrt(x)
    return x, small, near, far


def i0_np(a):
    """ATen's calc_i0."""
    a = np.asanyarray(a)
    x, small, near, far = _bessel_parts(a, 0)
    with np.errstate(all="ignore"):
        return np.where(small, np.exp(x) * near, np.exp(x) * far).astype(a.dtype)


def i0e_np(a):
    """ATen's calc_i0e."""
    a = np.asanyarray(a)
    x, small, near, far = _bessel_parts(a, 0)
    return np.where(small, near, far).astype(a.dtype)


def i1_np(a):
    """ATen's calc_i1."""
    a = np.asanyarray(a)
    x, small, near, far = _bessel_parts(a, 1)
    with np.errstate(all="ignore"):
        out = np.where(small, np.exp(x) * x * near, np.exp(x) * far)
    return np.where(a < 0, -out, out).astype(a.dtype)


def i1e_np(a):
    """ATen's calc_i1e."""
    a = np.asanyarray(a)
    x, small, near, far = _bessel_parts(a, 1)
    out = np.where(small, near * x, far)
    return np.where(a < 0, -out, out).astype(a.dtype)


# -- the rest ----------------------------------------------------------------------------------------------
def sinc_np(a):
    """sin(pi x) / (pi x), 1 at 0 (pi in a's dtype, as ATen's)."""
    a = np.asanyarray(a)
    with np.errstate(all="ignore"):
        p = a.dtype.type(math.pi) * a
        return np.where(a == 0, a.dtype.type(1), np.sin(p) / p).astype(a.dtype)


def logit_np(a, eps=None):
    """log(x / (1 - x)), x first clamped into [eps, 1 - eps] when eps is given (NaN passes)."""
    a = np.asanyarray(a)
    dt = a.dtype.type
    if eps is not None:
        lo, hi = dt(eps), dt(1) - dt(eps)
        a = np.where(a < lo, lo, np.where(a > hi, hi, a))
    with np.errstate(all="ignore"):
        return np.log(a / (dt(1) - a)).astype(a.dtype)


def log10_np(a):
    """float32 through float64, rounded once: NumPy's own float32 log10 is off by an ulp at powers of ten (1000 gave
    3.0000002, 0.001 gave -3.0000002: a floor of it one digit off), where torch's is exact."""
    with np.errstate(all="ignore"):   # (log10 of 0 and of negatives: -inf and NaN, as torch's)
        if a.dtype == np.float32:
            return np.log10(a.astype(np.float64)).astype(np.float32)
        return np.log10(a)


def entr_np(a):
    """-x log x for x > 0, 0 at 0, -inf below, NaN for NaN."""
    a = np.asanyarray(a)
    with np.errstate(all="ignore"):
        out = np.where(a > 0, -a * np.log(a), np.where(a == 0, a.dtype.type(0), a.dtype.type(-np.inf)))
    return np.where(np.isnan(a), a, out).astype(a.dtype)


def xlogy_np(x, y):
    """x log y; 0 where x == 0 and y is not NaN."""
    with np.errstate(all="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0, x * np.log(y)).astype(np.result_type(x, y))


def xlog1py_np(x, y):
    """x log1p y; 0 where x == 0 and y is not NaN."""
    with np.errstate(all="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0, x * np.log1p(y)).astype(np.result_type(x, y))


# -- front-ends ----------------------------------------------------------------------------------------------
def _unary(name, forward, input, ctx=None):
    """Record op `name` on input (integers and bool promoted to the default float dtype, as torch's float ops;
    float16 and bfloat16 computed in float32 and rounded once)."""
    x = _float(_tensor(input))
    if _dtype.is_reduced_float(x._data.dtype):
        out = _in_float32(forward, x._data)
    else:
        out = np.asanyarray(forward(x._data))
    return _record(OPS[name], out, (x,), aux=ctx)


def lgamma(input):
    return _unary("lgamma", lgamma_np, input)


def digamma(input):
    return _unary("digamma", digamma_np, input)


def polygamma(n, input):
    """The n-th derivative of digamma (n >= 0)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    n = int(n)
    return _unary("polygamma", lambda a: polygamma_np(n, a), input, n)


def mvlgamma(input, p):
    """The multivariate log-gamma of dimension p: sum_j lgamma(x - j/2) + p (p - 1) / 4 log(pi)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    # (torch 2.13 no longer checks that input > (p - 1) / 2: lgamma's values, NaN or not, are summed)
    return _unary("mvlgamma", lambda a: _mvlgamma_np(a, int(p)), input, int(p))


def _mvlgamma_args(a, p):
    """x[..., None] + (-(p-1)/2, ..., -1/2, 0), in a's dtype (ATen's arange(-p/2 + 1/2, 1/2, 1/2))."""
    return a[..., None] + np.arange(-p * 0.5 + 0.5, 0.5, 0.5).astype(a.dtype)


def _mvlgamma_np(a, p):
    return (lgamma_np(_mvlgamma_args(a, p)).sum(-1) + a.dtype.type(p * (p - 1) * math.log(math.pi) / 4)).astype(a.dtype)


def erfinv(input):
    return _unary("erfinv", erfinv_np, input)


def erfc(input):
    return _unary("erfc", erfc_np, input)


def i0(input):
    return _unary("i0", i0_np, input)


def sinc(input):
    return _unary("sinc", sinc_np, input)


def log10(input):
    return _unary("log10", log10_np, input)


def logit(input, eps=None):
    """log(x / (1 - x)); with eps, x is first clamped into [eps, 1 - eps] (and the gradient is 0 outside)."""
    eps = None if eps is None or eps < 0 else float(eps)   # (ATen: a negative eps means none)
    return _unary("logit", lambda a: logit_np(a, eps), input, eps)


def special_i0e(input):
    return _unary("special_i0e", i0e_np, input)


def special_i1(input):
    return _unary("special_i1", i1_np, input)


def special_i1e(input):
    return _unary("special_i1e", i1e_np, input)


def special_ndtri(input):
    return _unary("special_ndtri", ndtri_np, input)


def special_log_ndtr(input):
    return _unary("special_log_ndtr", log_ndtr_np, input)


def special_erfcx(input):
    return _unary("special_erfcx", erfcx_np, input)


def special_entr(input):
    return _unary("special_entr", entr_np, input)


def _binary(name, forward, input, other):
    """Record a binary op: tensor-tensor as `name`, with a Python number as `name_ts` (other) or `name_st`
    (input), the number kept in ctx. Operands promote as torch's, integer results to the default float dtype."""
    if _is_scalar(input) and _is_scalar(other):  # (torch's parser: a number on one side only)
        number_either(name).check(input, other)
    if _is_scalar(other):
        x = _tensor(input)
        dt = _result_float(x._data, other)
        x = _to_dtype(x, dt)
        c = float(other)
        return _record(OPS[name + "_ts"], forward(x._data, dt.type(c)), (x,), aux=c)
    if _is_scalar(input):
        y = _tensor(other)
        dt = _result_float(input, y._data)
        y = _to_dtype(y, dt)
        c = float(input)
        return _record(OPS[name + "_st"], forward(dt.type(c), y._data), (y,), aux=c)
    x, y = _tensor(input), _tensor(other)
    broadcast_shape(x.shape, y.shape)
    dt = _result_float(x._data, y._data)
    x, y = _to_dtype(x, dt), _to_dtype(y, dt)
    return _record(OPS[name], np.asanyarray(forward(x._data, y._data)), (x, y))


def _result_float(a, b):
    dt = np.dtype(_dtype.result_type(a, b))
    return dt if _dtype.is_float(dt) else np.dtype(_dtype.default_float.np)


def xlogy(input, other):
    """input * log(other), 0 where input == 0 (unless other is NaN)."""
    return _binary("xlogy", xlogy_np, input, other)


def special_xlog1py(input, other):
    """input * log1p(other), 0 where input == 0 (unless other is NaN)."""
    return _binary("special_xlog1py", xlog1py_np, input, other)


def special_zeta(input, other):
    """The Hurwitz zeta function zeta(input, other) = sum_k (k + other)^-input (differentiable in `other` only, as
    torch's)."""
    return _binary("special_zeta", zeta_np, input, other)


# -- the regularized incomplete gamma functions --------------------------------------------------------------
def igamma_np(a, x, upper=False):
    """ATen's calc_igamma (calc_igammac where upper) of arrays a and x of one float dtype (broadcast), compiled
    (kernels/special_functions.py); float16 and bfloat16 computed in float32 and rounded once, as ATen's."""
    if _meta.is_meta(a) or _meta.is_meta(x):  # (the meta device: the shape and dtype only)
        return _meta.make(np.broadcast_shapes(np.shape(a), np.shape(x)), np.asanyarray(a).dtype)
    a, x = np.broadcast_arrays(a, x)
    dt = a.dtype
    work = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    a, x = np.asarray(a, work, order="C"), np.asarray(x, work, order="C")
    out = np.empty(a.shape, work)
    if a.size:
        kernels.module("special_functions").incomplete_gamma(bool(upper), a.reshape(-1), x.reshape(-1),
                                                             out.reshape(-1), work.type, work == np.float64)
    return out if out.dtype == dt else out.astype(dt)


def _igamma(name, input, other, function):
    for position, (argument, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{function}(): argument '{argument}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")
    broadcast_shape(input.shape, other.shape)
    dt = np.dtype(_dtype.result_type(input._data, other._data))
    if not _dtype.is_float(dt):
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype.scalar_type_name(dt)}'")
    a, x = _to_dtype(input, dt), _to_dtype(other, dt)
    return _record(OPS[name], igamma_np(a._data, x._data, name == "igammac"), (a, x))


def igamma(input, other):
    """The regularized lower incomplete gamma function P(input, other) (ATen's calc_igamma); differentiable in
    `other` only, as torch's (a backward that reaches `input` raises torch's NotImplementedError)."""
    return _igamma("igamma", input, other, "igamma")


def igammac(input, other):
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P (ATen's calc_igammac);
    differentiable in `other` only, as torch's."""
    return _igamma("igammac", input, other, "igammac")


def special_gammainc(input, other):
    """torch.special.gammainc: igamma."""
    return _igamma("igamma", input, other, "special_gammainc")


def special_gammaincc(input, other):
    """torch.special.gammaincc: igammac."""
    return _igamma("igammac", input, other, "special_gammaincc")


# -- torch.special's Bessel and Airy functions and orthogonal polynomials (no gradient) ------------------------
# ATen's scalar functions, compiled (kernels/special_functions.py); torch gives them no derivative: their results
# never require grad (a backward through one finds no grad_fn, as torch's). The codes index these tuples, which
# are the kernel module's UNARY and BINARY.
BESSEL = ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
          "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
          "spherical_bessel_j0")
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
               "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p")
_HERMITE_LIMIT = {np.dtype(np.float32): 128, np.dtype(np.float64): 512}   # (ATen's getHermitianLimit)


def _kernel_dtype(name, dt):
    """ATen's CPU kernels of these exist for float and double only (AT_DISPATCH_FLOATING_TYPES)."""
    if np.dtype(dt) not in _HERMITE_LIMIT:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype.scalar_type_name(dt)}'")


def bessel_np(name, a):
    """torch.special.<name> (one of BESSEL) of a float32 or float64 array, in its dtype."""
    a = np.asarray(a, order="C")   # (ascontiguousarray would make a 0-d array 1-d)
    out = np.empty(a.shape, a.dtype)
    if a.size:
        dt = a.dtype.type
        kernels.module("special_functions").unary(BESSEL.index(name), a.reshape(-1), out.reshape(-1), dt,
                                                  dt(np.finfo(dt).eps))
    return out


def polynomial_np(name, x, n):
    """torch.special.<name> (one of POLYNOMIALS) of arrays x and n of one float dtype (broadcast): n is truncated
    to an integer as ATen's static_cast<int64_t> (NaN, infinities and values beyond int64: a negative degree, 0)."""
    x, n = np.broadcast_arrays(x, n)
    x, n = np.asarray(x, order="C"), np.asarray(n, x.dtype, order="C")
    out = np.empty(x.shape, x.dtype)
    if x.size:
        kernels.module("special_functions").binary(POLYNOMIALS.index(name), x.reshape(-1), n.reshape(-1),
                                                   out.reshape(-1), x.dtype.type, _HERMITE_LIMIT[x.dtype])
    return out


def _bessel_function(name):
    def fn(input):
        if not isinstance(input, Tensor):
            raise TypeError(f"special_{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        x = _float(input)
        _kernel_dtype(name, x._data.dtype)

        def forward(a):
            return bessel_np(name, a.astype(x._data.dtype, copy=False))
        return traced_value(_new(forward(x._data)), forward, input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name}: ATen's algorithm, no gradient (integers and bool as the default float dtype)."
    return fn


def _polynomial(name):
    def fn(x, n):
        if not isinstance(x, Tensor) and not isinstance(n, Tensor) or \
                not isinstance(x, (Tensor, numbers.Number, np.bool_)) or not isinstance(n, (Tensor, numbers.Number, np.bool_)):
            kinds = ", ".join(type(v).__name__ if not isinstance(v, Tensor) else "Tensor" for v in (x, n))
            raise TypeError(f"special_{name}() received an invalid combination of arguments - got ({kinds}), but "
                            f"expected one of:\n * (Tensor x, Tensor n, *, Tensor out = None)\n * (Number x, Tensor n, "
                            f"*, Tensor out = None)\n * (Tensor x, Number n, *, Tensor out = None)\n")
        for v in (x, n):
            if isinstance(v, int) and not -2 ** 63 <= v < 2 ** 63:
                raise OverflowError("int too big to convert")   # (torch's Scalar of a Python int)
        xa = x._data if isinstance(x, Tensor) else x
        na = n._data if isinstance(n, Tensor) else n
        dt = np.dtype(_dtype.result_type(xa, na))
        if not _dtype.is_float(dt):
            dt = np.dtype(_dtype.default_float.np)
        broadcast_shape(np.shape(xa), np.shape(na))
        _kernel_dtype(name, dt)
        tensors = [v for v in (x, n) if isinstance(v, Tensor)]

        def forward(*arrays):
            it = iter(arrays)
            a, b = (np.asarray(next(it), dt) if isinstance(v, Tensor) else np.asarray(v, dt) for v in (x, n))
            return polynomial_np(name, a, b)
        return traced_value(_new(forward(*(t._data for t in tensors))), forward, *tensors)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"torch.special.{name}(x, n): ATen's algorithm, n truncated to an integer; x or n may be a Python "
                  f"number; no gradient.")
    return fn


for _name in BESSEL:
    globals()[_name] = _bessel_function(_name)
for _name in POLYNOMIALS:
    globals()[_name] = _polynomial(_name)
del _name


# -- rules (Tensor ops, recorded under create_graph; NumPy twins for a plain backward) ------------------------
def _vjp_lgamma(ctx, g, inputs, out):
    return (g * digamma(inputs[0]),)


def _lgamma_arrays(ctx, g, inputs, out, wanted):
    return (g * digamma_np(inputs[0]),) if _array_rule_dtype(g) else None


def _vjp_digamma(ctx, g, inputs, out):
    return (g * polygamma(1, inputs[0]),)


def _digamma_arrays(ctx, g, inputs, out, wanted):
    return (g * trigamma_np(inputs[0]),) if _array_rule_dtype(g) else None


def _vjp_polygamma(ctx, g, inputs, out):
    return (g * polygamma(ctx + 1, inputs[0]),)


def _polygamma_arrays(ctx, g, inputs, out, wanted):
    return (g * polygamma_np(ctx + 1, inputs[0]),) if _array_rule_dtype(g) else None


def _vjp_mvlgamma(ctx, g, inputs, out):
    x = inputs[0]
    offsets = _new(np.arange(-ctx * 0.5 + 0.5, 0.5, 0.5).astype(x._data.dtype))
    return (g * digamma(x.unsqueeze(-1) + offsets).sum(-1),)


def _mvlgamma_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    return (g * digamma_np(_mvlgamma_args(inputs[0], ctx)).sum(-1),)


def _vjp_erfinv(ctx, g, inputs, out):
    return (g * (0.5 * _SQRT_PI) * exp(out * out),)


def _erfinv_arrays(ctx, g, inputs, out, wanted):
    return (g * (0.5 * _SQRT_PI) * np.exp(out * out),) if _array_rule_dtype(g) else None


def _vjp_erfc(ctx, g, inputs, out):
    x = inputs[0]
    return (g * -_M_2_SQRTPI * exp(-(x * x)),)


def _erfc_arrays(ctx, g, inputs, out, wanted):
    x = inputs[0]
    return (g * -_M_2_SQRTPI * np.exp(-(x * x)),) if _array_rule_dtype(g) else None


def _vjp_i0(ctx, g, inputs, out):
    return (g * special_i1(inputs[0]),)


def _i0_arrays(ctx, g, inputs, out, wanted):
    return (g * i1_np(inputs[0]),) if _array_rule_dtype(g) else None


def _vjp_i0e(ctx, g, inputs, out):
    x = inputs[0]
    return (g * (special_i1e(x) - x.sign() * out),)


def _i0e_arrays(ctx, g, inputs, out, wanted):
    x = inputs[0]
    return (g * (i1e_np(x) - np.sign(x) * out),) if _array_rule_dtype(g) else None


def _const(value, like):
    """A 0-d constant in like's dtype (a where's branch that carries no gradient, NaN or not)."""
    return _new(np.asanyarray(value, like._data.dtype))


def _safe(x):
    """ATen's i1_backward guard: |x| > eps (the derivative at 0 is 1/2), and x with eps where it is not."""
    eps = np.finfo(x._data.dtype).eps
    return x.abs() > eps, where(x.abs() > eps, x, _const(eps, x))


def _vjp_i1(ctx, g, inputs, out):
    big, sx = _safe(inputs[0])
    return (g * where(big, i0(sx) - out / sx, _const(0.5, g)),)


def _vjp_i1e(ctx, g, inputs, out):
    big, sx = _safe(inputs[0])
    return (g * where(big, special_i0e(sx) - out * (sx.sign() + 1 / sx), _const(0.5, g)),)


def _i1_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    x = inputs[0]
    eps = np.finfo(x.dtype).eps
    big = np.abs(x) > eps
    sx = np.where(big, x, x.dtype.type(eps))
    return (g * np.where(big, i0_np(sx) - out / sx, x.dtype.type(0.5)),)


def _i1e_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    x = inputs[0]
    eps = np.finfo(x.dtype).eps
    big = np.abs(x) > eps
    sx = np.where(big, x, x.dtype.type(eps))
    return (g * np.where(big, i0e_np(sx) - out * (np.sign(sx) + 1 / sx), x.dtype.type(0.5)),)


def _vjp_sinc(ctx, g, inputs, out):
    x = inputs[0]
    px = math.pi * x
    d = (px * px.cos() - px.sin()) / (px * x)   # (0/0 at 0, masked: torch's second derivative there is NaN too)
    return (g * where(x == 0, _const(0.0, g), d),)


def _sinc_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    x = inputs[0]
    with np.errstate(all="ignore"):
        px = math.pi * x
        d = (px * np.cos(px) - np.sin(px)) / (px * x)
    return (g * np.where(x == 0, x.dtype.type(0), d),)


def _vjp_log10(ctx, g, inputs, out):
    return (g / (inputs[0] * _LN10),)


def _log10_arrays(ctx, g, inputs, out, wanted):
    return (g / (inputs[0] * _LN10),) if _array_rule_dtype(g) else None


def _logit_outside(x, eps):
    """Where ATen's logit_backward gives NaN (no eps: outside [0, 1]) or 0 (outside [eps, 1 - eps])."""
    lo, hi = (0.0, 1.0) if eps is None else (eps, 1.0 - eps)
    return (x < lo) | (x > hi)


def _vjp_logit(ctx, g, inputs, out):
    x = inputs[0]
    d = g / (x * (1 - x))
    return (where(_logit_outside(x, ctx), _const(math.nan if ctx is None else 0.0, g), d),)


def _logit_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    x = inputs[0]
    with np.errstate(all="ignore"):
        d = g / (x * (1 - x))
    return (np.where(_logit_outside(x, ctx), g.dtype.type(math.nan if ctx is None else 0.0), d),)


def _vjp_ndtri(ctx, g, inputs, out):
    return (g * math.sqrt(2 * math.pi) * exp(out * out / 2),)


def _ndtri_arrays(ctx, g, inputs, out, wanted):
    return (g * math.sqrt(2 * math.pi) * np.exp(out * out / 2),) if _array_rule_dtype(g) else None


def _vjp_log_ndtr(ctx, g, inputs, out):
    x = inputs[0]
    return (g / math.sqrt(2 * math.pi) * exp(-(out + x * x / 2)),)


def _log_ndtr_arrays(ctx, g, inputs, out, wanted):
    x = inputs[0]
    return (g / math.sqrt(2 * math.pi) * np.exp(-(out + x * x / 2)),) if _array_rule_dtype(g) else None


def _vjp_erfcx(ctx, g, inputs, out):
    return ((2.0 * inputs[0] * out - _M_2_SQRTPI) * g,)


def _erfcx_arrays(ctx, g, inputs, out, wanted):
    return ((2.0 * inputs[0] * out - _M_2_SQRTPI) * g,) if _array_rule_dtype(g) else None


def _vjp_entr(ctx, g, inputs, out):
    return (g * -(1 + log(inputs[0])),)


def _entr_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    with np.errstate(all="ignore"):
        return (g * -(1 + np.log(inputs[0])),)


# binary rules (derivatives.yaml): input's xlogy(grad, other), 0 where input == 0 and other <= 0 (xlog1py: <= -1)
def _vjp_xlogy(ctx, g, inputs, out):
    x, y = inputs
    gx = sum_to_shape(where((x == 0) & (y <= 0), _const(0.0, g), xlogy(g, y)), x.shape)
    gy = sum_to_shape(g * x / y, y.shape)
    return gx, gy


def _xlogy_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    x, y = inputs
    with np.errstate(all="ignore"):
        gx = _sum_to_np(np.where((x == 0) & (y <= 0), 0, xlogy_np(g, y)), x.shape) if wanted[0] else None
        gy = _sum_to_np(g * x / y, y.shape) if wanted[1] else None
    return gx, gy


def _vjp_xlogy_ts(ctx, g, inputs, out):
    x = inputs[0]
    gx = xlogy(g, ctx)
    return (where(x == 0, _const(0.0, g), gx) if ctx <= 0 else gx,)


def _xlogy_ts_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    gx = xlogy_np(g, g.dtype.type(ctx))
    return (np.where(inputs[0] == 0, g.dtype.type(0), gx) if ctx <= 0 else gx,)


def _vjp_xlogy_st(ctx, g, inputs, out):
    return (g * ctx / inputs[0],)


def _xlogy_st_arrays(ctx, g, inputs, out, wanted):
    with np.errstate(all="ignore"):
        return (g * ctx / inputs[0],) if _array_rule_dtype(g) else None


def _vjp_xlog1py(ctx, g, inputs, out):
    x, y = inputs
    gx = sum_to_shape(where((x == 0) & (y <= -1), _const(0.0, g), special_xlog1py(g, y)), x.shape)
    gy = sum_to_shape(g * x / (y + 1), y.shape)
    return gx, gy


def _xlog1py_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    x, y = inputs
    with np.errstate(all="ignore"):
        gx = _sum_to_np(np.where((x == 0) & (y <= -1), 0, xlog1py_np(g, y)), x.shape) if wanted[0] else None
        gy = _sum_to_np(g * x / (y + 1), y.shape) if wanted[1] else None
    return gx, gy


def _vjp_xlog1py_ts(ctx, g, inputs, out):
    gx = special_xlog1py(g, ctx)
    return (where(inputs[0] == 0, _const(0.0, g), gx) if ctx <= -1 else gx,)


def _xlog1py_ts_arrays(ctx, g, inputs, out, wanted):
    if not _array_rule_dtype(g):
        return None
    gx = xlog1py_np(g, g.dtype.type(ctx))
    return (np.where(inputs[0] == 0, g.dtype.type(0), gx) if ctx <= -1 else gx,)


def _vjp_xlog1py_st(ctx, g, inputs, out):
    return (g * ctx / (inputs[0] + 1),)


def _xlog1py_st_arrays(ctx, g, inputs, out, wanted):
    with np.errstate(all="ignore"):
        return (g * ctx / (inputs[0] + 1),) if _array_rule_dtype(g) else None


_NO_ZETA_DERIVATIVE = "the derivative for 'zeta' is not implemented."


def _vjp_zeta(ctx, g, inputs, out):
    """torch has no derivative in x; in q, d zeta(x, q) / dq = -x zeta(x + 1, q)."""
    x, q = inputs
    if x.requires_grad:
        raise NotImplementedError(_NO_ZETA_DERIVATIVE)
    return None, sum_to_shape(g * -x * special_zeta(x + 1, q), q.shape)


def _zeta_arrays(ctx, g, inputs, out, wanted):
    if wanted[0]:
        raise NotImplementedError(_NO_ZETA_DERIVATIVE)
    if not _array_rule_dtype(g):
        return None
    x, q = inputs
    return None, _sum_to_np(g * -x * zeta_np(x + 1, q), q.shape)


def _vjp_zeta_ts(ctx, g, inputs, out):
    raise NotImplementedError(_NO_ZETA_DERIVATIVE)


def _zeta_ts_arrays(ctx, g, inputs, out, wanted):
    raise NotImplementedError(_NO_ZETA_DERIVATIVE)


def _vjp_zeta_st(ctx, g, inputs, out):
    return (g * -ctx * special_zeta(ctx + 1, inputs[0]),)


def _zeta_st_arrays(ctx, g, inputs, out, wanted):
    return (g * -ctx * zeta_np(g.dtype.type(ctx + 1), inputs[0]),) if _array_rule_dtype(g) else None


def _igamma_rules(name, sign):
    """torch's derivative: none in input (a backward reaching it raises), in other
    sign * exp((input - 1) log(other) - other - lgamma(input))."""
    message = f"the derivative for '{name}: input' is not implemented."

    def vjp(ctx, g, inputs, out):
        a, x = inputs
        if a.requires_grad:
            raise NotImplementedError(message)
        gx = exp((a - 1) * log(x) - x - lgamma(a)) * g
        return None, sum_to_shape(gx if sign > 0 else -gx, x.shape)

    def arrays(ctx, g, inputs, out, wanted):
        if wanted[0]:
            raise NotImplementedError(message)
        if not _array_rule_dtype(g):
            return None
        a, x = inputs
        with np.errstate(all="ignore"):
            gx = np.exp((a - 1) * np.log(x) - x - lgamma_np(a)) * g
        return None, _sum_to_np(gx if sign > 0 else -gx, x.shape)
    return vjp, arrays


def _unary_row(name, grad_fn, forward, vjp, arrays):
    registry.python(name, grad_fn, lambda ctx, x: forward(x), vjp, array_vjp=arrays)


_unary_row("lgamma", "LgammaBackward0", lgamma_np, _vjp_lgamma, _lgamma_arrays)
_unary_row("digamma", "DigammaBackward0", digamma_np, _vjp_digamma, _digamma_arrays)
registry.python("polygamma", "PolygammaBackward0", lambda ctx, x: polygamma_np(ctx, x), _vjp_polygamma,
                array_vjp=_polygamma_arrays)
registry.python("mvlgamma", "MvlgammaBackward0", lambda ctx, x: _mvlgamma_np(x, ctx), _vjp_mvlgamma,
                array_vjp=_mvlgamma_arrays)
_unary_row("erfinv", "ErfinvBackward0", erfinv_np, _vjp_erfinv, _erfinv_arrays)
_unary_row("erfc", "ErfcBackward0", erfc_np, _vjp_erfc, _erfc_arrays)
_unary_row("i0", "I0Backward0", i0_np, _vjp_i0, _i0_arrays)
_unary_row("sinc", "SincBackward0", sinc_np, _vjp_sinc, _sinc_arrays)
_unary_row("log10", "Log10Backward0", log10_np, _vjp_log10, _log10_arrays)
registry.python("logit", "LogitBackward0", lambda ctx, x: logit_np(x, ctx), _vjp_logit, array_vjp=_logit_arrays)
_unary_row("special_i0e", "SpecialI0EBackward0", i0e_np, _vjp_i0e, _i0e_arrays)
_unary_row("special_i1", "SpecialI1Backward0", i1_np, _vjp_i1, _i1_arrays)
_unary_row("special_i1e", "SpecialI1EBackward0", i1e_np, _vjp_i1e, _i1e_arrays)
_unary_row("special_ndtri", "SpecialNdtriBackward0", ndtri_np, _vjp_ndtri, _ndtri_arrays)
_unary_row("special_log_ndtr", "SpecialLogNdtrBackward0", log_ndtr_np, _vjp_log_ndtr, _log_ndtr_arrays)
_unary_row("special_erfcx", "SpecialErfcxBackward0", erfcx_np, _vjp_erfcx, _erfcx_arrays)
_unary_row("special_entr", "SpecialEntrBackward0", entr_np, _vjp_entr, _entr_arrays)
for _name, _sign in (("igamma", 1), ("igammac", -1)):
    _vjp, _arrays = _igamma_rules(_name, _sign)
    registry.python(_name, _name.capitalize() + "Backward0", lambda ctx, a, x, upper=_sign < 0: igamma_np(a, x, upper),
                    _vjp, array_vjp=_arrays)
for _name, _grad_fn, _fwd, _rules in (
        ("xlogy", "XlogyBackward", xlogy_np, ((_vjp_xlogy, _xlogy_arrays), (_vjp_xlogy_ts, _xlogy_ts_arrays),
                                                (_vjp_xlogy_st, _xlogy_st_arrays))),
        ("special_xlog1py", "SpecialXlog1PyBackward", xlog1py_np,
         ((_vjp_xlog1py, _xlog1py_arrays), (_vjp_xlog1py_ts, _xlog1py_ts_arrays),
          (_vjp_xlog1py_st, _xlog1py_st_arrays))),
        ("special_zeta", "SpecialZetaBackward", zeta_np, ((_vjp_zeta, _zeta_arrays), (_vjp_zeta_ts, _zeta_ts_arrays),
                                                         (_vjp_zeta_st, _zeta_st_arrays)))):
    # torch's grad_fn names: Backward0 tensor-tensor, Backward1 number-tensor, Backward2 tensor-number
    registry.python(_name, _grad_fn + "0", lambda ctx, x, y, f=_fwd: f(x, y), _rules[0][0], array_vjp=_rules[0][1])
    registry.python(_name + "_ts", _grad_fn + "2", lambda ctx, x, f=_fwd: f(x, x.dtype.type(ctx)), _rules[1][0],
                    array_vjp=_rules[1][1])
    registry.python(_name + "_st", _grad_fn + "1", lambda ctx, y, f=_fwd: f(y.dtype.type(ctx), y), _rules[2][0],
                    array_vjp=_rules[2][1])


Tensor.lgamma = lgamma
Tensor.digamma = digamma
Tensor.polygamma = lambda self, n: polygamma(n, self)
Tensor.mvlgamma = mvlgamma
Tensor.erfinv = erfinv
Tensor.erfc = erfc
Tensor.i0 = i0
Tensor.sinc = sinc
Tensor.xlogy = xlogy
Tensor.logit = logit
Tensor.log10 = log10
Tensor.igamma = igamma
Tensor.igammac = igammac
