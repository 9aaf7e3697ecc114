"""torch.special: the special functions, most of them torch's aliases of top-level ops (expit is sigmoid, gammaln
lgamma, psi digamma, ...), the rest rows of ops/special.py (i0e, i1, i1e, ndtri, log_ndtr, erfcx, xlog1py, entr,
zeta), each ATen's algorithm. torch.special's Bessel and Airy functions (bessel_j0/j1/y0/y1, modified_bessel_*,
scaled_modified_bessel_*, spherical_bessel_j0, airy_ai) and orthogonal polynomials (chebyshev_*, shifted_chebyshev_*,
hermite_*, laguerre_*, legendre_*) are ATen's algorithms compiled (kernels/special_functions.py), without gradient
as torch's. gammainc / gammaincc are igamma / igammac (ATen's calc_igamma / calc_igammac, compiled)."""
import functools
import math

from .ops import elementwise, reduce
from .ops import special as _s
from .ops._common import _float, _is_scalar, _tensor
from .ops._signatures import number_either as _number_either
from .ops.nn import round as _round
from .ops.out import with_out, write_out

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e",
           "gammainc", "gammaincc", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy", "zeta"] + list(_s.BESSEL) + \
    list(_s.POLYNOMIALS)

expit = elementwise.sigmoid
erf = elementwise.erf
exp2 = elementwise.exp2
expm1 = elementwise.expm1
log1p = elementwise.log1p
logsumexp = reduce.logsumexp
erfc, erfinv, i0, logit, polygamma, sinc = _s.erfc, _s.erfinv, _s.i0, _s.logit, _s.polygamma, _s.sinc
_XLOGY = _number_either("special_xlogy")


def xlogy(input, other):
    """torch.special.xlogy: torch.xlogy, under its name in torch's messages (`special_xlogy()`)."""
    if _is_scalar(input) and _is_scalar(other):
        _XLOGY.check(input, other)
    return _s.xlogy(input, other)
gammaln = _s.lgamma
digamma = psi = _s.digamma
i0e, i1, i1e = _s.special_i0e, _s.special_i1, _s.special_i1e
ndtri, log_ndtr, erfcx, entr = _s.special_ndtri, _s.special_log_ndtr, _s.special_erfcx, _s.special_entr
xlog1py, zeta = _s.special_xlog1py, _s.special_zeta
gammainc, gammaincc = _s.special_gammainc, _s.special_gammaincc


def multigammaln(input, p):
    """mvlgamma(input, p)."""
    return _s.mvlgamma(input, p)


def ndtr(input):
    """The standard normal CDF, composed as ATen's: (1 + erf(x / sqrt 2)) * 0.5."""
    x = _float(_tensor(input))
    return (elementwise.erf(x * math.sqrt(0.5)) + 1) * 0.5


def round(input, *, decimals=0):
    """torch.round(input, decimals=decimals)."""
    return _round(input, decimals=decimals)


def softmax(input, dim, *, dtype=None):
    return reduce.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return reduce.log_softmax(input, dim, dtype=dtype)


# out= on each, as torch.special's (but softmax and log_softmax, which take none)
for _name in __all__:
    if _name not in ("softmax", "log_softmax") and _name not in _s.BESSEL and _name not in _s.POLYNOMIALS:
        # (named as torch's messages name it: sigmoid, special_i0e; gammainc's is igamma's)
        globals()[_name] = with_out(globals()[_name], {"gammainc": "igamma", "gammaincc": "igammac"}.get(_name))
del _name


# the Bessel functions and polynomials: no derivative, so out= is taken whatever requires grad (as torch's)
def _bessel_out(fn):
    def wrapper(input, *, out=None):
        result = fn(input)
        return result if out is None else write_out(out, result, fn.__name__)
    return functools.update_wrapper(wrapper, fn)


def _polynomial_out(fn):
    def wrapper(x, n, *, out=None):
        result = fn(x, n)
        return result if out is None else write_out(out, result, fn.__name__)
    return functools.update_wrapper(wrapper, fn)


for _name in _s.BESSEL:
    globals()[_name] = _bessel_out(getattr(_s, _name))
for _name in _s.POLYNOMIALS:
    globals()[_name] = _polynomial_out(getattr(_s, _name))
del _name
