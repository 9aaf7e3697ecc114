"""Property-test cases for the special functions (tapegrad/ops/special.py), each on its smooth domain."""


def pos(x):
    """x mapped into (0.5, inf)."""
    return x.abs() + 0.5


def unit(x):
    """x mapped into (-0.9, 0.9)."""
    return x.tanh() * 0.9


def prob(x):
    """x mapped into (0.1, 0.9): the domain of logit, ndtri."""
    return x.sigmoid() * 0.8 + 0.1


CASES = {
    "lgamma": lambda L, x, R: L.lgamma(pos(x)),
    "digamma": lambda L, x, R: L.digamma(pos(x)),
    "polygamma": lambda L, x, R: L.polygamma(1, pos(x)) + L.polygamma(2, pos(x) + 0.3),
    "mvlgamma": lambda L, x, R: L.mvlgamma(pos(x) + 1.2, 3),
    "erfc": lambda L, x, R: L.erfc(unit(x) * 2.5),
    "erfinv": lambda L, x, R: L.erfinv(unit(x)),
    "i0": lambda L, x, R: L.i0(unit(x) * 3),
    "sinc": lambda L, x, R: L.sinc(pos(x) * 0.7),
    "log10": lambda L, x, R: L.log10(pos(x)),
    "logit": lambda L, x, R: L.logit(prob(x)),
    "special_i0e": lambda L, x, R: L.special.i0e(unit(x) * 3),
    "special_i1": lambda L, x, R: L.special.i1(unit(x) * 3),
    "special_i1e": lambda L, x, R: L.special.i1e(unit(x) * 3),
    "special_ndtri": lambda L, x, R: L.special.ndtri(prob(x)),
    "special_log_ndtr": lambda L, x, R: L.special.log_ndtr(unit(x) * 4),
    "special_erfcx": lambda L, x, R: L.special.erfcx(unit(x) * 3),
    "special_entr": lambda L, x, R: L.special.entr(pos(x)),
    # x log y: tensor-tensor (a leaf y, broadcast over rows), tensor-number (_ts) and number-tensor (_st)
    "xlogy": lambda L, x, R: L.xlogy(x, pos(R.leaf((1, x.shape[1])))),
    "xlogy_ts": lambda L, x, R: L.xlogy(x, 1.7),
    "xlogy_st": lambda L, x, R: L.xlogy(1.5, pos(x)),
    "special_xlog1py": lambda L, x, R: L.special.xlog1py(x, pos(R.leaf((1, x.shape[1])))),
    "special_xlog1py_ts": lambda L, x, R: L.special.xlog1py(x, 0.7),
    "special_xlog1py_st": lambda L, x, R: L.special.xlog1py(1.5, pos(x) - 0.4),
    # Hurwitz zeta(s, q): differentiable in q only, so s is a constant (s in [2, 3]; q > 0.5)
    "special_zeta": lambda L, x, R: L.special.zeta(R.const((1, x.shape[1]), 2.0, 3.0), pos(x)),
    "special_zeta_st": lambda L, x, R: L.special.zeta(2.5, pos(x)),
    # zeta(x, number) has no derivative at all (torch raises in backward): the row is recorded from x, its value
    # used detached (x's gradient comes through the product only)
    "special_zeta_ts": lambda L, x, R: L.special.zeta(pos(x) + 1.5, 1.5).detach() * x,
    # the incomplete gamma functions: differentiable in x only, so a is a constant (a in [0.5, 3]; x > 0.5)
    "igamma": lambda L, x, R: L.igamma(R.const((1, x.shape[1]), 0.5, 3.0), pos(x)),
    "igammac": lambda L, x, R: L.special.gammaincc(R.const((1, x.shape[1]), 0.5, 3.0), pos(x)),
}

NOT_RECORDED = {}
