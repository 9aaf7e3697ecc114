"""Table rows for tapegrad/ops/statistics.py: cumulative ops, order statistics, NaN-ignoring and paired
reductions, cov/corrcoef and the trapezoid rules (values, dtypes, grad_fn names, gradients against torch)."""
from optable import A, Case, I, V

TM = ("top", "method")
NAN = float("nan")
ZEROS = [[1.5, 0.0, 2.0, -0.5, 3.0], [0.0, 2.0, 0.0, 1.5, -1.0], [0.5, -2.0, 1.5, 3.0, 0.0], [2.0, 1.5, -0.5, 0.5, 1.2]]
WITH_NAN = [[1.0, NAN, -2.0, 0.5, 3.0], [NAN, NAN, NAN, NAN, NAN], [0.2, -1.0, 2.5, -0.3, 1.7]]

CASES = [
    # cumprod: torch's cumprod_backward, exact with zeros (one, two, first or last in a slice)
    Case("cumprod", [A((3, 4))], {"dim": 1}, paths=TM),
    Case("cumprod", [A((3, 4))], {"dim": -2}, id="negdim"),
    Case("cumprod", [A(())], {"dim": 0}, id="0d"),
    Case("cumprod", [V(ZEROS)], {"dim": 1}, id="zeros"),
    Case("cumprod", [V(ZEROS)], {"dim": 0}, id="zeros_dim0"),
    Case("cumprod", [I((3, 4), 5)], {"dim": 1}, id="int"),
    Case("cumprod", [A((3, 4))], {"dim": 1, "dtype": "float64"}, fn=lambda L, x: L.cumprod(x, 1, dtype=L.float64),
         id="dtype"),
    Case("cumsum", [A((3, 4))], fn=lambda L, x: (x * 1.0).cumsum_(1), id="inplace"),
    Case("cumprod", [V(ZEROS)], fn=lambda L, x: (x * 1.0).cumprod_(0), id="inplace"),
    # cummax / cummin: (values, indices), the gradient scattered to the indices
    Case("cummax", [A((3, 5))], {"dim": 1}, paths=TM),
    Case("cummin", [A((3, 5))], {"dim": 0}, paths=TM),
    Case("cummax", [V([[1.0, 3.0, 3.0, 2.0, 3.0], [2.0, 1.0, 2.0, 2.0, 0.5]])], {"dim": 1}, id="ties", fd=False),
    Case("cummin", [V([[1.0, 0.5, 0.5, 2.0, 0.5]])], {"dim": 1}, id="ties", fd=False),
    Case("cummax", [A(())], {"dim": 0}, id="0d"),
    Case("cummax", [I((3, 5), 9)], {"dim": 1}, id="int"),
    # logcumsumexp: its own rule, stable for large values
    Case("logcumsumexp", [A((3, 5))], {"dim": 1}, paths=TM),
    Case("logcumsumexp", [A((4, 3), "big")], {"dim": 0}, id="big"),
    Case("logcumsumexp", [V([[500.0, 501.0, -500.0, 499.0], [-800.0, -790.0, -810.0, -805.0]])], {"dim": 1},
         id="huge", fd=False),
    Case("logcumsumexp", [A(())], {"dim": 0}, id="0d"),
    # order statistics (random inputs: no ties)
    Case("median", [A((3, 5))], paths=TM),
    Case("median", [A((3, 4))], id="even"),
    Case("median", [V([[1.0, 2.0, 2.0], [0.5, 2.0, 3.0]])], id="ties_share", fd=False),
    Case("median", [A((3, 5))], fn=lambda L, x: L.median(x, 1), id="dim"),
    Case("median", [A((4, 3))], fn=lambda L, x: x.median(0, keepdim=True), id="dim0_keepdim"),
    Case("median", [V(WITH_NAN)], fn=lambda L, x: L.median(x, 1), id="nan", fd=False),
    Case("median", [A(())], fn=lambda L, x: L.median(x, 0), id="0d"),
    Case("median", [I((3, 5), 100)], fn=lambda L, x: L.median(x, 1), id="int"),
    Case("nanmedian", [V(WITH_NAN[:1] + WITH_NAN[2:])], paths=TM, fd=False),
    Case("nanmedian", [A((3, 5))], id="no_nan"),
    Case("nanmedian", [V(WITH_NAN[:1] + WITH_NAN[2:])], fn=lambda L, x: L.nanmedian(x, 1), id="dim", fd=False),
    Case("nanmedian", [A((4, 3))], fn=lambda L, x: x.nanmedian(0, True), id="dim0_keepdim"),
    Case("kthvalue", [A((3, 5))], fn=lambda L, x: L.kthvalue(x, 2)),
    Case("kthvalue", [A((4, 3))], fn=lambda L, x: x.kthvalue(4, 0, True), id="dim0_keepdim"),
    Case("kthvalue", [A(())], fn=lambda L, x: L.kthvalue(x, 1), id="0d"),
    Case("mode", [V([[1.0, 3.0, 3.0, 2.0, 1.0, 3.0], [5.0, 5.0, 4.0, 4.0, 0.0, 1.0]])], paths=TM, fd=False),
    Case("mode", [V([[1.0, 2.0], [2.0, 2.0], [1.0, 3.0]])], fn=lambda L, x: L.mode(x, 0, keepdim=True),
         id="dim0", fd=False),
    Case("mode", [I((4, 7), 3)], fn=lambda L, x: L.mode(x, 1), id="int"),
    # quantile: torch's composite (sort, gather, lerp); its last row is an in-place squeeze_ in torch
    Case("quantile", [A((3, 5))], {"q": 0.3}, paths=TM, grad_fn=False),
    Case("quantile", [A((3, 5))], {"q": 0.3, "dim": 1}, grad_fn=False, id="dim"),
    Case("quantile", [A((4, 3)), V([0.0, 0.25, 0.6, 1.0], grad=False)], fn=lambda L, x, q: L.quantile(x, q, dim=0),
         grad_fn=False, id="qtensor"),
    Case("quantile", [A((4, 3)), V([0.1, 0.75], grad=False)], fn=lambda L, x, q: L.quantile(x, q, 1, True),
         grad_fn=False, id="qtensor_keepdim"),
    Case("quantile", [A((2, 3, 4))], {"q": 0.4, "dim": 1, "keepdim": True}, grad_fn=False, id="middim"),
    Case("quantile", [V(WITH_NAN)], {"q": 0.5, "dim": 1}, grad_fn=False, fd=False, id="nan"),
    Case("nanquantile", [V(WITH_NAN)], {"q": 0.4, "dim": 1}, paths=TM, grad_fn=False, fd=False),
    Case("nanquantile", [A((3, 5))], {"q": 0.7}, grad_fn=False, id="no_nan"),
    *[Case("quantile", [A((3, 6))], {"q": 0.45, "dim": 1, "interpolation": m}, grad_fn=False, id=m)
      for m in ("lower", "higher", "midpoint", "nearest")],
    *[Case("nanquantile", [V(WITH_NAN)], {"q": 0.6, "dim": 1, "interpolation": m}, grad_fn=False, fd=False, id=m)
      for m in ("lower", "higher", "midpoint", "nearest")],
    # NaN-ignoring reductions: zero gradient where NaN
    Case("nansum", [V(WITH_NAN)], paths=TM, fd=False),
    Case("nansum", [V(WITH_NAN)], {"dim": 1}, id="dim", fd=False),
    Case("nansum", [A((3, 4))], {"dim": 0, "keepdim": True}, id="keepdim"),
    Case("nansum", [I((3, 4), 5, dtype="int32")], id="int"),
    Case("nanmean", [V(WITH_NAN[:1] + WITH_NAN[2:])], paths=TM, fd=False),
    Case("nanmean", [V(WITH_NAN)], {"dim": 1}, id="dim", fd=False),
    Case("nanmean", [A((3, 4))], {"dim": 0, "keepdim": True}, id="keepdim"),
    # paired reductions
    Case("aminmax", [A((3, 5))], paths=TM),
    Case("aminmax", [A((3, 5))], {"dim": 1}, id="dim"),
    Case("aminmax", [V([[1.0, 3.0, 3.0], [0.0, 0.0, 2.0]])], {"dim": 1, "keepdim": True}, id="ties", fd=False),
    Case("aminmax", [I((3, 5), 9)], {"dim": 0}, id="int"),
    Case("std_mean", [A((3, 5))]),
    Case("std_mean", [A((3, 5))], {"dim": 1, "keepdim": True}, id="dim"),
    Case("std_mean", [A((3, 5))], fn=lambda L, x: L.std_mean(x, (0, 1), correction=0), id="correction0"),
    Case("var_mean", [A((3, 5))]),
    Case("var_mean", [A((3, 5))], fn=lambda L, x: L.var_mean(x, 0, False), id="unbiased_false"),
    Case("var_mean", [A((4, 5))], {"dim": 1, "correction": 2}, id="correction2"),
    # cov, corrcoef, trapezoid: torch's composites
    Case("cov", [A((3, 6))], paths=TM),
    Case("cov", [A((6,))], id="1d"),
    Case("cov", [A((3, 6))], {"correction": 0}, id="correction0"),
    Case("cov", [A((3, 6)), I((6,), 4, low=1)], fn=lambda L, x, f: L.cov(x, fweights=f), id="fweights"),
    Case("cov", [A((3, 6)), A((6,), "pos", grad=False)], fn=lambda L, x, a: L.cov(x, aweights=a), id="aweights"),
    Case("cov", [A((3, 6)), I((6,), 4, low=1), A((6,), "pos")],
         fn=lambda L, x, f, a: L.cov(x, fweights=f, aweights=a), id="both_weights"),
    Case("cov", [I((3, 6), 9)], id="int", rtol=1e-6),   # (in float32: mm's order of sums differs)
    Case("corrcoef", [A((3, 6))], paths=TM),
    Case("corrcoef", [A((6,))], id="1d"),
    Case("trapezoid", [A((3, 5))]),
    Case("trapezoid", [A((3, 5))], {"dx": 0.5, "dim": 0}, id="dx"),
    Case("trapezoid", [A((3, 5)), A((5,))], id="x1d"),
    Case("trapezoid", [A((3, 5)), A((3, 5))], fn=lambda L, y, x: L.trapezoid(y, x, dim=1), id="x2d"),
    Case("trapezoid", [I((3, 5), 9)], id="int"),
    Case("trapz", [A((4, 3)), A((4,))], fn=lambda L, y, x: L.trapz(y, x, dim=0)),
    Case("cumulative_trapezoid", [A((3, 5))]),
    Case("cumulative_trapezoid", [A((3, 5))], {"dx": 2.0, "dim": 0}, id="dx"),
    Case("cumulative_trapezoid", [A((3, 5)), A((5,))], id="x1d"),
]
