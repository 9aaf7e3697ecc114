"""Scatters and index writes: scatter (src, value), scatter_reduce (sum, prod, mean, amax, amin), index_add,
index_copy, index_fill (number, tensor), index_put (accumulate), put (accumulate), masked_scatter, and the
slice/select/diagonal scatters."""

ROWS = [[0, 3], [1, 2], [2, 0]]  # unique within each row: scatter's result does not depend on write order
COLS = [[2, 0, 1, 0], [0, 2, 2, 1]]  # along dim 0 of a (3, 4) input: repeats reduce together
MASK = [[True, False, True, False], [False, True, True, False], [True, False, False, True]]


def _shift(T, src):
    """src moved off the (3, 4) input's grid, so no src value ties an input value (amax/amin stay smooth)."""
    return src * 0.8 + 0.22  # at least 0.027 from every input value


CASES = [  # (args, kwargs) of test_higher_order._case
    (("scatter", lambda T, x, src: x.scatter(1, T.tensor(ROWS), src), [(3, 4), (3, 2)]), {"eps": 1e-2}),
    (("scatter_src_larger", lambda T, x, src: T.scatter(x, 1, T.tensor(ROWS), src), [(3, 4), (3, 3)]),
     # (torch's own ScatterBackward0 returns src's gradient in the index's shape, which its engine refuses: the
     # oracle scatters src's leading block, as tapegrad records it)
     {"covers": ("scatter",), "eps": 1e-2, "torch_fn": lambda T, x, src: x.scatter(1, T.tensor(ROWS), src[:, :2])}),
    (("scatter_value", lambda T, x: x.scatter(1, T.tensor(ROWS), 0.75), [(3, 4)]), {"eps": 1e-2}),
    (("scatter_reduce_sum", lambda T, x, src: x.scatter_reduce(0, T.tensor(COLS), src, "sum"), [(3, 4), (2, 4)]),
     {"covers": ("scatter_reduce",), "eps": 1e-2}),
    (("scatter_reduce_sum_exclude", lambda T, x, src: x.scatter_reduce(0, T.tensor(COLS), src, "sum",
                                                                       include_self=False), [(3, 4), (2, 4)]),
     {"covers": ("scatter_reduce",), "eps": 1e-2}),
    (("scatter_reduce_prod", lambda T, x, src: x.scatter_reduce(0, T.tensor(COLS), src, "prod"), [(3, 4), (2, 4)]),
     {"covers": ("scatter_reduce",)}),
    (("scatter_reduce_prod_exclude", lambda T, x, src: x.scatter_reduce(0, T.tensor(COLS), src, "prod",
                                                                        include_self=False), [(3, 4), (2, 4)]),
     {"covers": ("scatter_reduce",)}),
    (("scatter_reduce_mean", lambda T, x, src: x.scatter_reduce(0, T.tensor(COLS), src, "mean"), [(3, 4), (2, 4)]),
     {"covers": ("scatter_reduce",), "eps": 1e-2}),
    (("scatter_reduce_mean_exclude", lambda T, x, src: x.scatter_reduce(0, T.tensor(COLS), src, "mean",
                                                                        include_self=False), [(3, 4), (2, 4)]),
     {"covers": ("scatter_reduce",), "eps": 1e-2}),
    (("scatter_reduce_amax", lambda T, x, src: x.scatter_reduce(0, T.tensor(COLS), _shift(T, src), "amax"),
      [(3, 4), (2, 4)]), {"covers": ("scatter_reduce",), "eps": 1e-3}),
    (("scatter_reduce_amin_exclude", lambda T, x, src: x.scatter_reduce(0, T.tensor(COLS), _shift(T, src), "amin",
                                                                        include_self=False), [(3, 4), (2, 4)]),
     {"covers": ("scatter_reduce",), "eps": 1e-3}),
    (("index_add", lambda T, x, src: x.index_add(0, T.tensor([2, 0, 2]), src, alpha=1.5), [(3, 4), (3, 4)]),
     {"eps": 1e-2}),
    (("index_copy", lambda T, x, src: x.index_copy(1, T.tensor([3, 0]), src), [(3, 4), (3, 2)]), {"eps": 1e-2}),
    (("index_fill", lambda T, x: x.index_fill(1, T.tensor([0, 2]), 1.3), [(3, 4)]), {"eps": 1e-2}),
    (("index_fill_tensor", lambda T, x, v: x.index_fill(1, T.tensor([3, 1]), v[1]), [(3, 4), (2,)]),
     {"eps": 1e-2}),
    (("index_put", lambda T, x, v: x.index_put((T.tensor([0, 2, 1]), T.tensor([1, 3, 1])), v), [(3, 4), (3,)]),
     {"eps": 1e-2}),
    (("index_put_broadcast", lambda T, x, v: T.index_put(x, (T.tensor([2, 0]),), v), [(3, 4), (4,)]),
     {"covers": ("index_put",), "eps": 1e-2}),
    (("index_put_accumulate", lambda T, x, v: x.index_put((T.tensor([0, 2, 0]), T.tensor([1, 3, 1])), v,
                                                          accumulate=True), [(3, 4), (3,)]), {"eps": 1e-2}),
    (("masked_scatter", lambda T, x, src: x.masked_scatter(T.tensor(MASK), src), [(3, 4), (8,)]), {"eps": 1e-2}),
    (("masked_scatter_broadcast", lambda T, x, src: x.masked_scatter(T.tensor(MASK[0]), src), [(3, 4), (2, 3)]),
     {"covers": ("masked_scatter",), "eps": 1e-2}),
    (("put", lambda T, x, src: x.put(T.tensor([1, 5, -2]), src), [(3, 4), (3,)]), {"eps": 1e-2}),
    (("put_accumulate", lambda T, x, src: x.put(T.tensor([[1, 5], [1, 11]]), src, accumulate=True),
      [(3, 4), (2, 2)]), {"eps": 1e-2}),
    (("select_scatter", lambda T, x, src: T.select_scatter(x, src, 0, 1), [(3, 4), (4,)]), {"eps": 1e-2}),
    (("slice_scatter", lambda T, x, src: T.slice_scatter(x, src, 1, 1, None, 2), [(3, 4), (3, 2)]), {"eps": 1e-2}),
    (("diagonal_scatter", lambda T, x, src: T.diagonal_scatter(x, src, 1), [(3, 4), (3,)]), {"eps": 1e-2}),
]

EXEMPT = {}  # every scatter op has a higher-order case
