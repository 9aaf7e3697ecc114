"""Property cases for the statistics ops (ops/statistics.py) and the pointwise Python rows (ops/pointwise.py)."""
import numpy as np

NAN = float("nan")


def pos(x):
    """x mapped into (0.5, inf)."""
    return x.abs() + 0.5


def unit(x):
    """x mapped into (-0.9, 0.9)."""
    return x.tanh() * 0.9


def distinct(L, x):
    """x with its ties broken (a ramp far below the spacing of distinct values); tanh first keeps it moderate."""
    return x.tanh() + L.arange(x.numel(), dtype=x.dtype).reshape(x.shape) * 1e-6


def nan_column(L, x):
    """x with a NaN column appended (a constant: its gradient is never asked for)."""
    return L.cat([x, L.full((x.shape[0], 1), NAN, dtype=x.dtype)], dim=1)


def away(x):
    """x mapped into (1.48, 2.02): against a divisor in (0.69, 0.71) the quotient stays in (2.08, 2.93), away from
    the integers where fmod and remainder jump (and from the sign change where fmod's convention flips)."""
    return unit(x) * 0.3 + 1.75


def divisor(R, x):
    return R.leaf((1, x.shape[1]), 0.69, 0.71)


def mode_case(L, x):
    """Each row's first element repeated once more: that value is each row's mode (the most frequent)."""
    d = distinct(L, x)
    return L.mode(L.cat([d, d[:, :1]], dim=1), dim=1).values


def aminmax_case(L, x):
    d = distinct(L, x)
    by_row = L.aminmax(d, dim=1)
    whole = L.aminmax(d)
    return by_row.min * 2 + by_row.max + whole.min - whole.max * 0.5


def std_mean_case(L, x, R):
    s, mu = L.std_mean(L.cat([x.tanh(), R.leaf((2, x.shape[1]))]), dim=0)
    return L.stack([s, mu])


def var_mean_case(L, x, R):
    v, mu = L.var_mean(L.cat([x.tanh(), R.leaf((x.shape[0], 2))], dim=1), dim=1, keepdim=True)
    return L.cat([v, mu], dim=1)


CASES = {
    # cumulative
    "cummax": lambda L, x, R: L.cummax(distinct(L, x), dim=1).values,
    "cummin": lambda L, x, R: distinct(L, x).cummin(0)[0],
    "cumprod": lambda L, x, R: L.cumprod(unit(x) * 0.5 + 1, dim=1),
    "logcumsumexp": lambda L, x, R: L.logcumsumexp(x.tanh() * 3, dim=0),
    # order statistics (ties broken first: which of equal elements is chosen is torch's choice)
    "kthvalue": lambda L, x, R: L.kthvalue(distinct(L, x), min(2, x.shape[1]), dim=1).values,
    "median": lambda L, x, R: distinct(L, x).median(dim=0).values,
    "median_all": lambda L, x, R: L.median(distinct(L, x)),
    "nanmedian": lambda L, x, R: L.nanmedian(nan_column(L, distinct(L, x)), dim=1).values,
    "nanmedian_all": lambda L, x, R: L.nanmedian(nan_column(L, distinct(L, x))),
    "mode": lambda L, x, R: mode_case(L, x),
    # reductions
    "nansum": lambda L, x, R: L.nansum(nan_column(L, x), dim=1) + L.nansum(nan_column(L, x)),
    "aminmax": lambda L, x, R: aminmax_case(L, x),   # aminmax_min, aminmax_max
    "std_mean": std_mean_case,                          # std_mean_spread, std_mean_mean
    "var_mean": var_mean_case,                          # var_mean_spread, var_mean_mean
    # pointwise
    "acosh": lambda L, x, R: L.acosh(pos(x) + 0.6),
    "asinh": lambda L, x, R: L.asinh(x),
    "atanh": lambda L, x, R: L.atanh(unit(x)),
    "fmod": lambda L, x, R: L.fmod(away(x), divisor(R, x)) + L.fmod(-away(x), divisor(R, x)),
    "fmod_scalar": lambda L, x, R: L.fmod(away(x), 0.7) + L.fmod(-away(x), 0.7),
    "remainder": lambda L, x, R: L.remainder(away(x), divisor(R, x)) + L.remainder(-away(x), divisor(R, x)),
    "remainder_scalar": lambda L, x, R: L.remainder(away(x), 0.7) + L.remainder(-away(x), 0.7),
    "hypot": lambda L, x, R: L.hypot(x, R.leaf((1, x.shape[1]), 0.5, 1)),
    "logaddexp": lambda L, x, R: L.logaddexp(x, R.leaf((1, x.shape[1]))),
    "logaddexp2": lambda L, x, R: L.logaddexp2(R.leaf((1, x.shape[1])), x),
}

NOT_RECORDED = {}
