"""Table rows (test_ops_table.py) of ops/pointwise.py and ops/arrange.py: torch's small pointwise functions and
its shape functions, products and distances. Compositions of recorded ops have no grad_fn of their own (torch
names its node after the function): their rows check values and gradients, not the node's name."""
import warnings

from optable import A, Case, I, V

TM = ("top", "method")
CASES = []


def add(*cases):
    CASES.extend(cases)


def composite(name, inputs, kwargs=None, **kw):
    """A row of a function composed of recorded ops (its node is named after the last op it calls)."""
    return Case(name, inputs, kwargs, grad_fn=False, **kw)


# -- Python rows: torch's derivatives --------------------------------------------------------------------------------
for name in ("fmod", "remainder"):
    add(Case(name, [A((3, 4), "big"), A((3, 4), "gt1")], paths=TM),
        Case(name, [A((3, 4), "big"), A((3, 4), "gt1")], fn=lambda L, x, y, n=name: getattr(L, n)(x, -y), id="neg"),
        Case(name, [A((3, 1), "big"), A((4,), "gt1")], id="broadcast"),
        Case(name, [A((2, 3), "big")], fn=lambda L, x, n=name: getattr(L, n)(x, 1.7), id="scalar"),
        Case(name, [A((2, 3), "big")], fn=lambda L, x, n=name: getattr(L, n)(x, -1.7), id="negscalar"))
add(Case("remainder", [A((2, 3), "big")], fn=lambda L, x: x % 2.5, id="operator"))
for name in ("hypot", "logaddexp", "logaddexp2"):
    add(Case(name, [A((3, 4)), A((3, 4))], paths=TM),
        Case(name, [A((3, 1)), A((4,))], id="broadcast"),
        Case(name, [A(()), A((2, 3), grad=False)], id="0d"),
        Case(name, [A((0, 3)), A((3,))], id="empty", fd=False))
add(Case("asinh", [A((3, 4), "big")], paths=TM), Case("asinh", [A(())], id="0d"),
    Case("acosh", [A((3, 4), "gt1")], paths=TM), Case("atanh", [A((3, 4), "unit")], paths=TM),
    Case("arcsinh", [A((3, 4))], paths=TM), Case("arccosh", [A((3, 4), "gt1")], paths=TM),
    Case("arctanh", [A((3, 4), "unit")], paths=TM), Case("atanh", [A((0, 2), "unit")], id="empty", fd=False))

# -- pointwise compositions --------------------------------------------------------------------------------------------
add(composite("frac", [A((3, 4), "big")], paths=TM),
    composite("fix", [A((3, 4), "big")], paths=TM),
    composite("sgn", [A((3, 4))], paths=TM, gg=False),
    composite("copysign", [A((3, 4)), A((3, 4), grad=False)], paths=TM),
    composite("copysign", [A((3, 4))], fn=lambda L, x: L.copysign(x, -1.0), id="scalar"),
    composite("nan_to_num", [V([[1.0, float("nan"), -2.0], [float("inf"), 0.5, float("-inf")]])], paths=TM,
              fd=False),
    composite("nan_to_num", [V([1.0, float("nan"), float("inf"), float("-inf")])],
              {"nan": 2.0, "posinf": 9.0, "neginf": -9.0}, id="values", fd=False),
    composite("deg2rad", [A((3, 4), "big")], paths=TM),
    composite("rad2deg", [A((3, 4))], paths=TM),
    composite("float_power", [A((3, 4), "pos"), A((3, 4))], paths=TM),
    composite("float_power", [A((3, 4))], fn=lambda L, x: L.float_power(x, 2), id="scalar"),
    composite("fmax", [A((3, 4)), A((3, 4))], paths=TM),
    composite("fmin", [A((3, 1)), A((4,))], paths=TM),
    composite("fmax", [V([1.0, float("nan"), 2.0, float("nan")]), V([float("nan"), 1.0, 2.0, float("nan")])],
              id="nan", fd=False, gg=False),
    composite("fmin", [V([1.0, float("nan"), 2.0, float("nan")]), V([float("nan"), 1.0, 2.0, float("nan")])],
              id="nan", fd=False, gg=False),
    # (torch differentiates 2 ** other in other's integer dtype: 0 for a negative exponent; non-negative here)
    composite("ldexp", [A((3, 4)), I((3, 4), 4)], paths=TM),
    composite("frexp", [A((3, 4), "big")], paths=TM),
    composite("positive", [A((3, 4))], paths=TM, gg=False),
    composite("absolute", [A((3, 4))], paths=TM),
    composite("negative", [A((3, 4))], paths=TM),
    composite("true_divide", [A((3, 4)), A((3, 4), "pos")], paths=TM),
    composite("arctan2", [A((3, 4)), A((3, 4))], paths=TM))

# -- flips, splits, stacks -------------------------------------------------------------------------------------------
add(composite("rot90", [A((3, 4))], paths=TM),
    composite("rot90", [A((2, 3, 4))], {"k": -1, "dims": (2, 0)}, id="k-1"),
    composite("rot90", [A((2, 3))], {"k": 2}, id="k2"),
    composite("rot90", [A((2, 3))], {"k": 4}, id="k4"),
    composite("fliplr", [A((3, 4))], paths=TM),
    composite("flipud", [A((3, 4))], paths=TM),
    composite("tensor_split", [A((3, 7))], fn=lambda L, x: L.tensor_split(x, 3, dim=1), id="sections"),
    composite("tensor_split", [A((7, 2))], fn=lambda L, x: x.tensor_split([1, 5, 9]), id="indices"),
    composite("hsplit", [A((3, 4))], fn=lambda L, x: L.hsplit(x, 2)),
    composite("vsplit", [A((4, 3))], fn=lambda L, x: x.vsplit([1, 3])),
    composite("dsplit", [A((2, 3, 4))], fn=lambda L, x: L.dsplit(x, 2)),
    composite("split_with_sizes", [A((3, 5))], fn=lambda L, x: L.split_with_sizes(x, [2, 3], 1)),
    composite("narrow_copy", [A((3, 5))], fn=lambda L, x: x.narrow_copy(1, 1, 3)),
    composite("dstack", [A((3,)), A((3,))], fn=lambda L, x, y: L.dstack([x, y])),
    composite("dstack", [A((2, 3)), A((2, 3, 2))], fn=lambda L, x, y: L.dstack((x, y)), id="mixed"),
    composite("column_stack", [A((3,)), A((3, 2))], fn=lambda L, x, y: L.column_stack([x, y])),
    composite("row_stack", [A((3,)), A((2, 3))], fn=lambda L, x, y: L.row_stack([x, y])),
    composite("atleast_1d", [A(())], fn=lambda L, x: L.atleast_1d(x)),
    composite("atleast_2d", [A((3,)), A(())], fn=lambda L, x, y: L.atleast_2d(x, y)),
    composite("atleast_3d", [A((3,)), A((2, 3))], fn=lambda L, x, y: L.atleast_3d([x, y])),
    composite("moveaxis", [A((2, 3, 4))], fn=lambda L, x: L.moveaxis(x, (0, 1), (2, 0))),
    composite("ravel", [A((3, 4))], fn=lambda L, x: x.t().ravel()),
    composite("diagflat", [A((2, 2))], {"offset": -1}, paths=TM),
    composite("sum_to_size", [A((2, 3, 4))], fn=lambda L, x: x.sum_to_size(3, 1)))

# -- products ----------------------------------------------------------------------------------------------------------
add(composite("kron", [A((2, 3)), A((3, 2))], paths=TM),
    composite("kron", [A((3,)), A((2, 2, 2))], id="ranks"),
    composite("cartesian_prod", [A((3,)), A((2,))], fn=lambda L, x, y: L.cartesian_prod(x, y)),
    composite("combinations", [A((4,))], fn=lambda L, x: L.combinations(x)),
    composite("combinations", [A((3,))], fn=lambda L, x: L.combinations(x, 3, with_replacement=True), id="repl"),
    composite("block_diag", [A((2, 3)), A((3,)), A(())], fn=lambda L, x, y, z: L.block_diag(x, y, z)),
    composite("tensordot", [A((2, 3, 4)), A((3, 4, 5))], fn=lambda L, x, y: L.tensordot(x, y)),
    composite("tensordot", [A((2, 3, 4)), A((4, 2))], fn=lambda L, x, y: L.tensordot(x, y, ([0, 2], [1, 0])),
              id="lists"),
    composite("tensordot", [A((2,)), A((3,))], fn=lambda L, x, y: L.tensordot(x, y, 0), id="outer"),
    composite("trace", [A((3, 4))], paths=TM),
    # (torch 2.13's vander cannot backward: its cumprod writes in place into a saved tensor; values only)
    composite("vander", [A((4,), grad=False)], fn=lambda L, x: L.vander(x)),
    composite("vander", [A((3,), grad=False)], fn=lambda L, x: L.vander(x, N=4, increasing=True), id="increasing"),
    composite("baddbmm", [A((3, 4)), A((2, 3, 5)), A((2, 5, 4))], {"beta": 0.5, "alpha": 2.0}, paths=TM),
    composite("baddbmm", [A((3, 4)), A((2, 3, 5)), A((2, 5, 4))], {"beta": 0}, id="beta0"),
    composite("addbmm", [A((3, 4)), A((2, 3, 5)), A((2, 5, 4))], paths=TM),
    composite("addmv", [A((3,)), A((3, 4)), A((4,))], {"alpha": 3.0}, paths=TM),
    composite("addr", [A((3, 4)), A((3,)), A((4,))], {"beta": 2.0}, paths=TM),
    composite("vdot", [A((4,)), A((4,))], paths=TM),
    composite("chain_matmul", [A((2, 3)), A((3, 4)), A((4, 2))],
              fn=lambda L, x, y, z: _quiet(L.chain_matmul, x, y, z)))

# -- distances ---------------------------------------------------------------------------------------------------------
add(composite("cdist", [A((3, 4)), A((2, 4))], fn=lambda L, x, y: L.cdist(x, y), gg=False),  # (torch: no 2nd order)
    composite("cdist", [A((2, 3, 4)), A((2, 2, 4))], fn=lambda L, x, y: L.cdist(x, y, p=1.0), id="p1", gg=False),
    composite("cdist", [A((3, 4)), A((2, 4))], fn=lambda L, x, y: L.cdist(x, y, p=3.0), id="p3", gg=False),
    composite("pdist", [A((4, 3))], fn=lambda L, x: L.pdist(x), gg=False),
    composite("pdist", [A((4, 3))], fn=lambda L, x: L.pdist(x, 3), id="p3", gg=False),
    composite("dist", [A((3, 4)), A((4,))], paths=TM),
    composite("dist", [A((3, 4)), A((3, 4))], {"p": 1}, id="p1", gg=False),
    composite("renorm", [A((3, 4))], fn=lambda L, x: L.renorm(x, 2, 0, 1.0)),
    composite("renorm", [A((3, 4))], fn=lambda L, x: x.renorm(1, 1, 0.8), id="p1"))


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)
