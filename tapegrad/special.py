"""torch.special: the special functions, most of them torch's aliases of top-level ops (expit is sigmoid, gammaln
lgamma, psi digamma, ...), the rest rows of ops/special.py (i0e, i1, i1e, ndtri, log_ndtr, erfcx, xlog1py, entr,
zeta), each ATen's algorithm. torch.special's Bessel functions of the second kind and other orders (bessel_j0/j1/y0/y1,
modified_bessel_*, scaled_modified_bessel_*, spherical_bessel_j0, airy_ai), its orthogonal polynomials
(chebyshev_*, hermite_*, laguerre_*, legendre_*) and gammainc / gammaincc are not implemented: their names are
absent (AttributeError), as a misspelling's would be."""
import math

from .ops import elementwise, reduce
from .ops import special as _s
from .ops._common import _float, _tensor
from .ops.nn import round as _round
from .ops.out import with_out

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e",
           "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy", "zeta"]

expit = elementwise.sigmoid
erf = elementwise.erf
exp2 = elementwise.exp2
expm1 = elementwise.expm1
log1p = elementwise.log1p
logsumexp = reduce.logsumexp
erfc, erfinv, i0, logit, polygamma, sinc, xlogy = _s.erfc, _s.erfinv, _s.i0, _s.logit, _s.polygamma, _s.sinc, _s.xlogy
gammaln = _s.lgamma
digamma = psi = _s.digamma
i0e, i1, i1e = _s.special_i0e, _s.special_i1, _s.special_i1e
ndtri, log_ndtr, erfcx, entr = _s.special_ndtri, _s.special_log_ndtr, _s.special_erfcx, _s.special_entr
xlog1py, zeta = _s.special_xlog1py, _s.special_zeta


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
    if _name not in ("softmax", "log_softmax"):
        globals()[_name] = with_out(globals()[_name])  # (named as torch's messages name it: sigmoid, special_i0e)
del _name
