"""Special functions (ops/special.py): gamma family, erf family, Bessel i0/i1(e), sinc, logit, xlogy, zeta ..."""
CASES = [  # (args, kwargs) of test_higher_order._case: (name, fn, shapes), covers=, eps=, torch_fn=, low=, high=
    # the gamma family: each rule is the next one (lgamma -> digamma -> polygamma(1) -> polygamma(2) ...)
    (("lgamma", lambda T, x: T.lgamma(x), [(3, 4)]), {"low": 0.3, "high": 2.0, "covers": ("lgamma", "digamma",
                                                                                          "polygamma")}),
    (("digamma", lambda T, x: T.digamma(x), [(3, 4)]), {"low": 0.3, "high": 2.0, "covers": ("digamma", "polygamma")}),
    (("polygamma", lambda T, x: T.polygamma(2, x), [(3, 4)]), {"low": 0.3, "high": 2.0}),
    (("polygamma_0", lambda T, x: T.polygamma(0, x), [(3, 4)]), {"low": 0.3, "high": 2.0, "covers": ("polygamma",)}),
    (("mvlgamma", lambda T, x: T.mvlgamma(x, 3), [(3, 4)]), {"low": 1.2, "high": 3.0,
                                                            "covers": ("mvlgamma", "digamma", "polygamma")}),
    # error functions
    (("erfc", lambda T, x: T.erfc(x), [(3, 4)]), {}),
    (("erfinv", lambda T, x: T.erfinv(x), [(3, 4)]), {"low": -0.8, "high": 0.8}),
    (("special_erfcx", lambda T, x: T.special.erfcx(x), [(3, 4)]), {"low": -1.5, "high": 2.5}),
    (("special_log_ndtr", lambda T, x: T.special.log_ndtr(x), [(3, 4)]), {"low": -3.0, "high": 2.0}),
    (("special_ndtri", lambda T, x: T.special.ndtri(x), [(3, 4)]), {"low": 0.05, "high": 0.85}),
    # modified Bessel functions (i0's rule is i1, i1's i0; i0e's i1e, i1e's i0e)
    (("i0", lambda T, x: T.i0(x), [(3, 4)]), {"covers": ("i0", "special_i1")}),
    (("special_i0e", lambda T, x: T.special.i0e(x), [(3, 4)]), {"covers": ("special_i0e", "special_i1e")}),
    (("special_i1", lambda T, x: T.special.i1(x), [(3, 4)]), {"covers": ("special_i1", "i0")}),
    (("special_i1e", lambda T, x: T.special.i1e(x), [(3, 4)]), {"covers": ("special_i1e", "special_i0e")}),
    # the rest
    (("sinc", lambda T, x: T.sinc(x), [(3, 4)]), {}),
    (("log10", lambda T, x: T.log10(x), [(3, 4)]), {"low": 0.3, "high": 2.0}),
    (("logit", lambda T, x: T.logit(x), [(3, 4)]), {"low": 0.1, "high": 0.85}),
    (("logit_eps", lambda T, x: T.logit(x, 0.05), [(3, 4)]), {"low": 0.1, "high": 0.85, "covers": ("logit",)}),
    (("special_entr", lambda T, x: T.special.entr(x), [(3, 4)]), {"low": 0.3, "high": 2.0}),
    # binary ops, tensor-tensor (broadcasting) and with a number on either side
    (("xlogy", lambda T, x, y: T.xlogy(x, y), [(3, 4), (4,)]), {"low": 0.3, "high": 2.0}),
    (("xlogy_broadcast_x", lambda T, x, y: T.xlogy(x, y), [(3, 1), (3, 4)]), {"low": 0.3, "high": 2.0,
                                                                             "covers": ("xlogy",)}),
    (("xlogy_ts", lambda T, x: T.xlogy(x, 1.7), [(3, 4)]), {"low": 0.3, "high": 2.0}),
    (("xlogy_st", lambda T, y: T.xlogy(1.7, y), [(3, 4)]), {"low": 0.3, "high": 2.0}),
    (("special_xlog1py", lambda T, x, y: T.special.xlog1py(x, y), [(3, 4), (4,)]), {"low": -0.6, "high": 1.5}),
    (("special_xlog1py_ts", lambda T, x: T.special.xlog1py(x, 0.7), [(3, 4)]), {"low": -0.6, "high": 1.5}),
    (("special_xlog1py_st", lambda T, y: T.special.xlog1py(1.7, y), [(3, 4)]), {"low": -0.6, "high": 1.5}),
    # zeta: differentiable in q only (as torch's), so x is a constant
    (("special_zeta", lambda T, q: T.special.zeta(T.tensor([2.5, 3.0, 4.5, 6.0], dtype=T.float64), q), [(3, 4)]),
     {"low": 0.3, "high": 2.5}),
    (("special_zeta_st", lambda T, q: T.special.zeta(3.0, q), [(3, 4)]), {"low": 0.3, "high": 2.5}),
    # the incomplete gamma functions: differentiable in x only (as torch's), so a is a constant
    (("igamma", lambda T, x: T.igamma(T.tensor([0.5, 1.5, 3.0, 4.5], dtype=T.float64), x), [(3, 4)]),
     {"low": 0.3, "high": 2.5}),
    (("igammac", lambda T, x: T.igammac(T.tensor([0.5, 1.5, 3.0, 4.5], dtype=T.float64), x), [(3, 4)]),
     {"low": 0.3, "high": 2.5}),
]
EXEMPT = {  # registry op name -> why no higher-order case can exist, naming the test that covers it instead
    "special_zeta_ts": "zeta(tensor x, number q) has no derivative at all (torch: \"the derivative for 'zeta' is not "
                       "implemented.\", tapegrad raises the same): tests/ops/test_special.py::"
                       "test_zeta_has_no_derivative_in_x",
}
