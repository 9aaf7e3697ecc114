"""statistics (aminmax, cumprod, logcumsumexp, median/nanmedian of all, nansum, std_mean, var_mean) and pointwise
(acosh, asinh, atanh, fmod, remainder, hypot, logaddexp, logaddexp2) rows."""
NAN_MASK = [[False, True, False, False], [False, False, False, True], [True, False, False, False]]
SIGNS = [[1.0, -1.0, 1.0, -1.0], [-1.0, 1.0, 1.0, -1.0], [1.0, 1.0, -1.0, -1.0]]
ZERO_AT = [[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]]  # cumprod's zero path


def _with_nan(T, x):
    """x with NaN at NAN_MASK (their gradient is zero in both libraries)."""
    return T.where(T.tensor(NAN_MASK), T.full(x.shape, float("nan"), dtype=T.float64), x)


def _signed(T, x, scale, offset):
    """|a| in offset + [-1.45, 1.55] * scale, with SIGNS' signs: away from fmod's and remainder's jumps for the
    divisors below (a / b stays strictly between two integers)."""
    return (x * scale + offset) * T.tensor(SIGNS, dtype=T.float64)


def _pair(T, r):
    return T.stack([r[0], r[1]])


CASES = [
    # -- statistics ----------------------------------------------------------------------------------------------
    (("aminmax_dim", lambda T, x: _pair(T, T.aminmax(x, dim=1)), [(3, 4)]),
     {"covers": ("aminmax_min", "aminmax_max")}),
    (("aminmax_all", lambda T, x: _pair(T, x.aminmax()), [(3, 4)]), {"covers": ("aminmax_min", "aminmax_max")}),
    (("aminmax_keepdim", lambda T, x: x.aminmax(dim=0, keepdim=True).max * 2.0, [(3, 4)]),
     {"covers": ("aminmax_max",)}),
    (("cumprod", lambda T, x: x.cumprod(1), [(3, 4)]), {}),
    (("cumprod_dim0", lambda T, x: T.cumprod(x, 0), [(3, 4)]), {"covers": ("cumprod",), "low": 0.4, "high": 1.6}),
    (("cumprod_zeros", lambda T, x: (x * T.tensor(ZERO_AT, dtype=T.float64)).cumprod(1), [(3, 4)]),
     {"covers": ("cumprod",), "eps": 1e-4}),
    # (torch's own third derivative of logcumsumexp is NaN: its backward takes log|g| where g is 0 and masks it
    # after, 0 / 0 in the derivative; its composite is the oracle. SIGNS: g of both signs at every order)
    (("logcumsumexp", lambda T, x: x.logcumsumexp(1), [(3, 4)]),
     {"torch_fn": lambda T, x: x.exp().cumsum(1).log()}),
    (("logcumsumexp_dim0", lambda T, x: T.logcumsumexp(x, 0) * T.tensor(SIGNS, dtype=T.float64), [(3, 4)]),
     {"covers": ("logcumsumexp",),
      "torch_fn": lambda T, x: x.exp().cumsum(0).log() * T.tensor(SIGNS, dtype=T.float64)}),
    (("median_all", lambda T, x: x.median().reshape(1), [(3, 4)]), {}),
    (("nanmedian_all", lambda T, x: x.nanmedian().reshape(1), [(3, 4)]), {}),
    (("nanmedian_all_nan", lambda T, x: _with_nan(T, x).nanmedian().reshape(1), [(3, 4)]),
     {"covers": ("nanmedian_all",)}),
    (("nansum", lambda T, x: x.nansum(1), [(3, 4)]), {"eps": 1e-3}),
    (("nansum_nan", lambda T, x: _with_nan(T, x).nansum(), [(3, 4)]), {"covers": ("nansum",), "eps": 1e-3}),
    (("std_mean", lambda T, x: _pair(T, T.std_mean(x, 1)), [(3, 4)]),
     {"covers": ("std_mean_spread", "std_mean_mean")}),
    (("std_mean_all", lambda T, x: _pair(T, T.std_mean(x, correction=0)), [(3, 4)]),
     {"covers": ("std_mean_spread", "std_mean_mean")}),
    (("var_mean", lambda T, x: _pair(T, T.var_mean(x, 0, keepdim=True)), [(3, 4)]),
     {"covers": ("var_mean_spread", "var_mean_mean")}),
    (("var_mean_all", lambda T, x: _pair(T, T.var_mean(x)), [(3, 4)]),
     {"covers": ("var_mean_spread", "var_mean_mean")}),
    # -- pointwise -----------------------------------------------------------------------------------------------
    (("acosh", lambda T, x: T.acosh(x), [(3, 4)]), {"low": 1.2, "high": 2.6}),
    (("asinh", lambda T, x: x.asinh(), [(3, 4)]), {}),
    (("atanh", lambda T, x: T.atanh(x), [(3, 4)]), {"low": -0.8, "high": 0.75}),
    # |a / b| in about (3.05, 3.51): trunc and floor are constant near every input
    (("fmod", lambda T, x, y: T.fmod(_signed(T, x, 0.1, 3.6), y * 0.02 + 1.1), [(3, 4), (3, 4)]), {}),
    (("fmod_broadcast", lambda T, x, y: T.fmod(_signed(T, x, 0.1, 3.6), y * 0.02 + 1.1), [(3, 4), (4,)]),
     {"covers": ("fmod", "sum_to_shape")}),
    (("fmod_scalar", lambda T, x: T.fmod(_signed(T, x, 0.1, 3.6), 1.1), [(3, 4)]), {}),
    (("remainder", lambda T, x, y: T.remainder(_signed(T, x, 0.1, 3.6), y * 0.02 + 1.1), [(3, 4), (3, 4)]), {}),
    (("remainder_negative_divisor", lambda T, x, y: T.remainder(_signed(T, x, 0.1, 3.6), -(y * 0.02 + 1.1)),
      [(3, 4), (3, 1)]), {"covers": ("remainder", "sum_to_shape")}),
    (("remainder_scalar", lambda T, x: _signed(T, x, 0.1, 3.6) % 1.1, [(3, 4)]), {}),
    (("hypot", lambda T, x, y: T.hypot(x, y), [(3, 4), (3, 4)]), {}),
    (("hypot_broadcast", lambda T, x, y: x.hypot(y), [(3, 1), (4,)]), {"covers": ("hypot", "sum_to_shape")}),
    (("logaddexp", lambda T, x, y: T.logaddexp(x, y), [(3, 4), (3, 4)]), {}),
    (("logaddexp2", lambda T, x, y: T.logaddexp2(x, y * 2.0), [(3, 4), (3, 4)]), {}),
    (("logaddexp2_broadcast", lambda T, x, y: x.logaddexp2(y), [(3, 4), (4,)]), {"covers": ("logaddexp2",)}),
]
EXEMPT = {}
