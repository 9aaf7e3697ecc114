"""Op-table rows of tapegrad/ops/scatter.py: scatters, index writes, take (values, grad_fn names, gradients, finite
differences, second order against torch). Placements use unique indices (torch's order of duplicate writes is
undefined); accumulations and reductions use duplicates."""
import numpy as np

from optable import A, B, Case, V

# unique along dim 0 within each column: a placement's duplicate writes would be nondeterministic in torch
IDX0 = np.array([[0, 1, 2, 0], [1, 2, 0, 1]])
IDX1 = np.array([[3, 0], [1, 2], [0, 3]])          # unique within each row (dim 1)
DUP = np.array([[0, 1, 2, 0], [0, 2, 0, 1], [2, 2, 0, 1]])  # duplicates along dim 0
TIES_X = [[1.0, 2.0, 0.5, -1.0], [0.3, 2.0, 0.5, 4.0]]
TIES_S = [[1.0, 2.0, 0.5, 4.0], [1.0, 2.0, 0.5, 4.0], [1.0, -3.0, 0.2, 4.0]]
TIES_I = [[0, 1, 0, 1], [0, 1, 0, 1], [0, 0, 0, 1]]

CASES = [
    Case("scatter", [A((3, 4)), V(IDX0), A((2, 4))], fn=lambda L, x, i, s: L.scatter(x, 0, i, s)),
    # (src larger than index: torch's ScatterBackward0 returns src's gradient in index's shape, which its engine
    # rejects, so src takes no gradient here)
    Case("scatter", [A((3, 4)), V(IDX1), A((3, 4), grad=False)], fn=lambda L, x, i, s: x.scatter(1, i, s),
         id="src_larger"),
    Case("scatter", [A((3, 4)), V(IDX1)], fn=lambda L, x, i: x.scatter(-1, i, 2.5), id="value"),
    Case("scatter", [A(()), V(0), A(())], fn=lambda L, x, i, s: x.scatter(0, i, s), id="0d"),
    Case("scatter", [A((3, 4)), V(IDX0), A((2, 4))], fn=lambda L, x, i, s: x.clone().scatter_(0, i, s),
         id="inplace"),
]
for reduce in ("sum", "prod", "mean", "amax", "amin"):
    for include_self in (True, False):
        CASES.append(Case("scatter_reduce", [A((4, 4), "pos"), V(DUP), A((3, 4), "pos")],
                          fn=lambda L, x, i, s, r=reduce, k=include_self: x.scatter_reduce(0, i, s, r, include_self=k),
                          id=f"{reduce}-{include_self}"))
    CASES.append(Case("scatter_reduce", [V(TIES_X), V(TIES_I), V(TIES_S)],
                      fn=lambda L, x, i, s, r=reduce: L.scatter_reduce(x, 0, i, s, r), id=f"{reduce}-ties", fd=False))
CASES += [
    Case("scatter_reduce", [A((2, 3)), V([[2, 0], [1, 1]]), A((2, 3), grad=False)],
         fn=lambda L, x, i, s: x.scatter_reduce(1, i, s, "sum", include_self=False), id="dim1-src_larger"),
    Case("scatter_reduce", [V([[1.0, 0.0, 2.0], [3.0, 1.5, 0.5]]), V([[0, 1, 1], [0, 0, 1]]),
                            V([[0.0, 2.0, 3.0], [0.5, 0.0, 0.0]])],
         fn=lambda L, x, i, s: x.scatter_reduce(0, i, s, "prod"), id="prod-zeros", fd=False),
    Case("index_add", [A((5, 3)), V([0, 2, 2, 4]), A((4, 3))], fn=lambda L, x, i, s: L.index_add(x, 0, i, s)),
    Case("index_add", [A((2, 5)), V([4, 0, 4]), A((2, 3))], fn=lambda L, x, i, s: x.index_add(1, i, s, alpha=2.5),
         id="alpha"),
    Case("index_add", [A((5,)), V(np.array([3], np.int32)), A((1,))], fn=lambda L, x, i, s: x.index_add(0, i, s),
         id="int32"),
    Case("index_add", [A(()), V([0]), A(())], fn=lambda L, x, i, s: x.index_add(0, i, s), id="0d"),
    Case("index_copy", [A((5, 3)), V([4, 0, 2]), A((3, 3))], fn=lambda L, x, i, s: L.index_copy(x, 0, i, s)),
    Case("index_copy", [A((2, 4)), V([3, 1]), A((2, 2))], fn=lambda L, x, i, s: x.index_copy(-1, i, s), id="dim1"),
    Case("index_fill", [A((4, 3)), V([0, 2, -1])], fn=lambda L, x, i: L.index_fill(x, 0, i, -1.5)),
    Case("index_fill", [A((4, 3)), V([1]), A(())], fn=lambda L, x, i, v: x.index_fill(1, i, v), id="tensor_value"),
    Case("take", [A((3, 4)), V([[0, -1], [5, 11]])], fn=lambda L, x, i: L.take(x, i)),
    Case("take", [A((3, 4)), V([2, 2, 7])], fn=lambda L, x, i: x.take(i), id="duplicates"),
    Case("put", [A((3, 4)), V([0, -1, 5]), A((3,))], fn=lambda L, x, i, s: x.put(i, s)),
    Case("put", [A((3, 4)), V([[0, 5], [5, 11]]), A((2, 2))], fn=lambda L, x, i, s: L.put(x, i, s, accumulate=True),
         id="accumulate"),
    Case("index_put", [A((4, 3)), V([3, 0]), A((2, 3))], fn=lambda L, x, i, v: L.index_put(x, (i,), v)),
    Case("index_put", [A((4, 3)), V([3, 0, 1]), V([2, 0, 0]), A(())],
         fn=lambda L, x, i, j, v: x.index_put((i, j), v), id="pairs-broadcast"),
    Case("index_put", [A((4, 3)), V([3, 0, 3]), A((3,))], fn=lambda L, x, i, v: x.index_put((i,), v, True),
         id="accumulate"),
    Case("index_put", [A((4, 3)), V([True, False, True, False]), A((3,))],
         fn=lambda L, x, m, v: x.index_put([m], v), id="bool"),
    Case("masked_scatter", [A((3, 4)), B((3, 4)), A((13,))], fn=lambda L, x, m, s: L.masked_scatter(x, m, s)),
    Case("masked_scatter", [A((3, 4)), B((4,)), A((12,))], fn=lambda L, x, m, s: x.masked_scatter(m, s),
         id="broadcast_mask"),
    Case("slice_scatter", [A((4, 5)), A((4, 2))], fn=lambda L, x, s: L.slice_scatter(x, s, 1, 1, 5, 2)),
    Case("slice_scatter", [A((4, 5)), A((1, 5))], fn=lambda L, x, s: x.slice_scatter(s, start=-1), id="default"),
    Case("select_scatter", [A((4, 5)), A((4,))], fn=lambda L, x, s: L.select_scatter(x, s, 1, -2)),
    Case("diagonal_scatter", [A((4, 5)), A((4,))], fn=lambda L, x, s: L.diagonal_scatter(x, s, 1)),
    Case("diagonal_scatter", [A((2, 3, 4)), A((3, 2))], fn=lambda L, x, s: x.diagonal_scatter(s, 0, 0, 2),
         id="3d"),
]
# index_reduce: scatter_reduce's row (grad_fn ScatterReduceBackward0; torch's is IndexReduceBackward0, the same rule)
for reduce in ("prod", "mean", "amax", "amin"):
    for include_self in (True, False):
        CASES.append(Case("index_reduce", [A((4, 3), "pos"), V([0, 2, 2, 3, 0]), A((5, 3), "pos")],
                          fn=lambda L, x, i, s, r=reduce, k=include_self: x.index_reduce(0, i, s, r, include_self=k),
                          id=f"{reduce}-{include_self}", grad_fn=False))
CASES.append(Case("index_reduce", [A((2, 4), "pos"), V([3, 1]), A((2, 2), "pos")],
                  fn=lambda L, x, i, s: L.index_reduce(x, 1, i, s, "amax"), id="dim1", grad_fn=False))
