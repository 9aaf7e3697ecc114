"""Round 9 (torch's OpInfo samples): indexing, scatter/gather, sorting, reductions and elementwise odds against
torch: values, shapes, dtypes, gradients, and errors' types and messages."""
import numpy as np
import pytest

import tapegrad

import torch  # noqa: E402  (the oracle: CI requires it)

L = lambda m, *a, **k: m.tensor(*a, **k)  # noqa: E731


def _run(m, fn):
    try:
        r = fn(m)
    except Exception as e:  # noqa: BLE001  (the error is what is compared)
        return ("error", type(e).__name__, str(e))
    rs = r if isinstance(r, tuple) else (r,)
    return [(tuple(x.shape), str(x.dtype), x.detach().numpy().tolist()) for x in rs]


VALUES = {
    # gather: the output has the index's shape; an empty index of any dtype and shape is taken unchecked
    "gather 0-d input": lambda m: m.gather(L(m, 1.5), 0, L(m, [0])),
    "gather 0-d input, 2 indices": lambda m: m.gather(L(m, 1.5), 0, L(m, [0, 0])),
    "gather empty index": lambda m: m.gather(m.zeros(3, 5), 0, m.zeros(0, dtype=m.int64)),
    "gather empty float index": lambda m: m.gather(m.zeros(3, 5), 0, m.zeros(0, 5, 5)),
    "gather empty uint8 index": lambda m: m.gather(L(m, [1.5, 2.0]), 0, L(m, [], dtype=m.uint8)),
    "gather uint8 index": lambda m: m.gather(L(m, [1.5, 2.0]), 0, L(m, [1], dtype=m.uint8)),
    "gather dims": lambda m: m.gather(m.zeros(3, 5), 0, m.zeros(2, dtype=m.int64)),
    # scatter, scatter_add, scatter_reduce: torch's checks and words ("scatter" for all three), 0-d as 1-d
    "scatter_add self dtype": lambda m: m.scatter_add(m.zeros(3, 5).double(), 0, L(m, [[0, 1], [1, 2]]),
                                                      m.zeros(3, 5)),
    "scatter_add src dims": lambda m: m.scatter_add(m.zeros(3, 5), 0, L(m, [[34, 1], [1, 2]]), m.zeros(5, 2, 2)),
    "scatter src dims": lambda m: m.scatter(m.zeros(3, 5), 0, L(m, [[34, 1], [1, 2]]), m.zeros(5, 2, 2)),
    "scatter_add self dims": lambda m: m.scatter_add(m.zeros(3, 5, 3), 0, L(m, [[0, 1], [1, 2]]), m.zeros(5, 2)),
    "scatter_add index dtype": lambda m: m.scatter_add(m.zeros(3), 0, L(m, [1], dtype=m.uint8), m.zeros(3)),
    "scatter_add empty uint8 index": lambda m: m.scatter_add(m.zeros(3, 5), 0, m.zeros(0, dtype=m.uint8),
                                                             m.zeros(5, 2, 3)),
    "scatter empty index": lambda m: m.scatter(m.zeros(3, 5), 0, m.zeros(0, dtype=m.int64), m.zeros(5, 2, 3)),
    "scatter empty index, value": lambda m: m.scatter(m.zeros(3, 5), 0, m.zeros(0, dtype=m.uint8), 2.0),
    "scatter_add 0-d": lambda m: m.scatter_add(L(m, 1.0), 0, L(m, 0), L(m, 2.0)),
    "scatter_add 0-d, 2 indices": lambda m: m.scatter_add(L(m, 1.0), 0, L(m, [0, 0]), L(m, [2.0, 3])),
    "scatter_add 1-d, 0-d index": lambda m: m.scatter_add(L(m, [1.0, 4]), 0, L(m, 1), L(m, [2.0, 5])),
    "scatter 0-d, 2 indices": lambda m: m.scatter(L(m, 1.0), 0, L(m, [0, 0]), L(m, [2.0, 3])),
    "scatter_reduce 0-d": lambda m: m.scatter_reduce(L(m, 1.0), 0, L(m, [0, 0]), L(m, [2.0, 3]), "sum"),
    "scatter int 0-d": lambda m: m.scatter_add(L(m, 7), 0, L(m, 0), L(m, 2)),
    # index_select, take, take_along_dim, unique
    "index_select 0-d input": lambda m: m.index_select(L(m, 1.5), 0, L(m, [0])),
    "index_select 0-d input, 2 indices": lambda m: m.index_select(L(m, 1.5), 0, L(m, [0, 0])),
    "take 0-d": lambda m: m.take(L(m, 1.5), L(m, 0)),
    "take 1-d, 0-d index": lambda m: m.take(L(m, [1.5]), L(m, 0)),
    "take_along_dim wraps": lambda m: m.take_along_dim(L(m, [[1.5, 2, 3]]), L(m, [[-1, -4, 3, 4, -5]]), 1),
    "take_along_dim broadcast, negative": lambda m: m.take_along_dim(m.ones(2, 3), L(m, [[-1]]), 1),
    "take_along_dim int32": lambda m: m.take_along_dim(L(m, [[1.5, 2, 3]]), L(m, [[-1]], dtype=m.int32), 1),
    "take_along_dim dims": lambda m: m.take_along_dim(m.zeros(3, 2), L(m, [0]), 1),
    "take_along_dim size 0": lambda m: m.take_along_dim(m.ones(2, 0), L(m, [[0]]), 1),
    "take_along_dim no dim": lambda m: m.take_along_dim(L(m, [[1.5, 2, 3]]), L(m, [[-1]])),
    "unique 0-d inverse": lambda m: m.unique(L(m, 1.5), return_inverse=True, return_counts=True),
    "unique 0-d unsorted": lambda m: m.unique(L(m, 1.5), sorted=False, return_inverse=True),
    # elementwise odds
    "diff bool": lambda m: m.diff(L(m, [True, False, False, True])),
    "diff bool n=2": lambda m: m.diff(L(m, [True, False, False, True]), n=2, prepend=L(m, [True])),
    "rsub alpha": lambda m: m.rsub(L(m, [1.0, 2]), L(m, [3.0, 4]), alpha=2),
    "rsub alpha number": lambda m: m.rsub(L(m, [1.0, 2]), 3, alpha=2),
    "rsub alpha float of int": lambda m: m.rsub(L(m, [1, 2]), 3, alpha=2.5),
    "rsub number input": lambda m: m.rsub(2, L(m, [1, 2])),
    "nextafter": lambda m: m.nextafter(L(m, [1.0, 0.0, -0.0, 5]), L(m, [0.0, -1.0, 1.0, 5])),
    # errors
    "mean int dtype": lambda m: m.mean(L(m, [1.0, 2]), dtype=m.int64),
    "roll 0-d dim": lambda m: m.roll(L(m, 1.5), 0, 0),
    "masked_fill complex": lambda m: m.masked_fill(L(m, [1.0, 2]).double(), L(m, True), 1 + 1j),
    "masked_fill complex real": lambda m: m.masked_fill(L(m, [1.0, 2]), L(m, True), 1 + 0j),
    "masked_fill int overflow": lambda m: m.masked_fill(L(m, [1, 2], dtype=m.int8), L(m, False), 300),
    "masked_fill uint8 -1": lambda m: m.masked_fill(L(m, [1, 2], dtype=m.uint8), L(m, True), -1),
    "masked_fill float overflow": lambda m: m.masked_fill(L(m, [1.0, 2]), L(m, True), 1e300),
    "amax out dtype": lambda m: m.amax(L(m, [[1.0, 2], [3, 4]]), 1, out=m.empty(2, dtype=m.int32)),
    "amin out dtype": lambda m: m.amin(L(m, [[1.0, 2], [3, 4]]), 1, out=m.empty(2, dtype=m.float64)),
    "aminmax out dtype": lambda m: m.aminmax(L(m, [[1.0, 2], [3, 4]]), dim=1,
                                             out=(m.empty(2, dtype=m.float64), m.empty(2))),
    "aminmax out": lambda m: tuple(m.aminmax(L(m, [[1.0, 2], [3, 4]]), dim=1, out=(m.empty(2), m.empty(2)))),
    "multinomial out dtype": lambda m: m.multinomial(L(m, [[0.5, 0.5]]), 2, out=m.empty(1, 2)),
    "gather out dtype": lambda m: m.gather(L(m, [[1.0, 2], [3, 4]]), 1, L(m, [[0, 0], [1, 0]]),
                                           out=m.empty(2, 2, dtype=m.float64)),
    "index_select out dtype": lambda m: m.index_select(L(m, [[1.0, 2], [3, 4]]), 1, L(m, [0]),
                                                       out=m.empty(2, 1, dtype=m.float64)),
    "take out dtype": lambda m: m.take(L(m, [[1.0, 2], [3, 4]]), L(m, [0]), out=m.empty(1, dtype=m.float64)),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_and_errors_as_torch(name):
    assert _run(tapegrad, VALUES[name]) == _run(torch, VALUES[name])


def _grads(m, fn, values, dtype):
    ins = [m.tensor(v, dtype=getattr(m, dtype), requires_grad=True) for v in values]
    try:
        out = fn(m, *ins)
        out = out[0] if isinstance(out, tuple) else out
        w = m.arange(1.0, out.numel() + 1, dtype=out.dtype).reshape(out.shape)
        grads = m.autograd.grad((out * w).sum(), ins, allow_unused=True)
    except Exception as e:  # noqa: BLE001
        return ("error", type(e).__name__, str(e))
    zero = lambda a, g: np.zeros(np.shape(a)) if g is None else g.numpy()  # noqa: E731  (None: torch's zeros)
    return out.detach().numpy(), [zero(v, g) for v, g in zip(values, grads)]


GRADS = {
    "index_reduce prod 0-d": (lambda m, x, s: m.index_reduce(x, 0, L(m, [0]), s, "prod"), (7.5, -5.1)),
    "index_reduce mean 0-d": (lambda m, x, s: m.index_reduce(x, 0, L(m, [0]), s, "mean", include_self=False),
                              (7.5, -5.1)),
    "index_reduce amax 0-d": (lambda m, x, s: m.index_reduce(x, 0, L(m, [0]), s, "amax"), (7.5, -5.1)),
    "index_reduce amin 0-d": (lambda m, x, s: m.index_reduce(x, 0, L(m, [0]), s, "amin"), (7.5, 9.0)),
    "scatter_add 0-d": (lambda m, x, s: m.scatter_add(x, 0, L(m, [0, 0]), s), (7.5, [-5.1, 3])),
    "scatter_add 1-d, 0-d index": (lambda m, x, s: m.scatter_add(x, 0, L(m, 1), s), ([7.5, 1], -5.1)),
    "scatter 0-d": (lambda m, x, s: m.scatter(x, 0, L(m, [0]), s), (7.5, -5.1)),
    "scatter_reduce 0-d amax": (lambda m, x, s: m.scatter_reduce(x, 0, L(m, [0, 0]), s, "amax"), (7.5, [-5.1, 9])),
    "gather 0-d": (lambda m, x: m.gather(x, 0, L(m, [0, 0])), (7.5,)),
    "index_select 0-d": (lambda m, x: m.index_select(x, 0, L(m, [0])), (7.5,)),
    "take 0-d": (lambda m, x: m.take(x, L(m, 0)), (7.5,)),
    "take_along_dim negative": (lambda m, x: m.take_along_dim(x, L(m, [[-1, 0, -3]]), 1), ([[1.0, 2, 3]],)),
    "rsub alpha": (lambda m, x, y: m.rsub(x, y, alpha=3), ([1.0, 2], [3.0, 4])),
    "nextafter": (lambda m, x, y: m.nextafter(x, y), ([1.0, 2, 0, 5, float("nan")], [3.0, -4, 1, 5, 1])),
    "logcumsumexp large": (lambda m, x: m.logcumsumexp(x, 0), ([1e4] * 7 + [1e4 + 0.5, 3.0],)),
    "gradient": (lambda m, x: m.gradient(x), ([[1.0, 2, 4, 8], [3, 5, 9, 1], [0, 2, -1, 3]],)),
    "gradient spacing": (lambda m, x: m.gradient(x, spacing=[2.0, 3]),
                         ([[1.0, 2, 4, 8], [3, 5, 9, 1], [0, 2, -1, 3]],)),
    "gradient dim edge_order 2": (lambda m, x: m.gradient(x, dim=0, spacing=3, edge_order=2),
                                  ([[1.0, 2, 4, 8], [3, 5, 9, 1], [0, 2, -1, 3]],)),
    "gradient coordinates": (lambda m, x: m.gradient(x, spacing=(m.tensor([0.0, 1, 3], dtype=x.dtype),
                                                                 m.tensor([0.0, 1, 3, 4], dtype=x.dtype))),
                             ([[1.0, 2, 4, 8], [3, 5, 9, 1], [0, 2, -1, 3]],)),
    "gradient coordinates edge_order 2": (
        lambda m, x: m.gradient(x, spacing=(m.tensor([0.0, 1, 3], dtype=x.dtype),
                                            m.tensor([0.0, 1, 3, 4], dtype=x.dtype)), edge_order=2),
        ([[1.0, 2, 4, 8], [3, 5, 9, 1], [0, 2, -1, 3]],)),
    "gradient list dim": (lambda m, x: m.gradient(x, dim=[1, 0], spacing=[1, 2]), ([[1.0, 2, 4], [3, 5, 9]],)),
    "gradient errors: edge_order": (lambda m, x: m.gradient(x, dim=1, edge_order=3), ([[1.0, 2, 4]],)),
    "gradient errors: size": (lambda m, x: m.gradient(x, edge_order=2), ([[1.0, 2, 4]],)),
    "gradient errors: spacing length": (lambda m, x: m.gradient(x, spacing=[2.0]), ([[1.0, 2], [4, 5]],)),
    "gradient errors: spacing and dim": (lambda m, x: m.gradient(x, spacing=[2.0], dim=[0, 1]), ([[1.0, 2], [4, 5]],)),
    "gradient errors: repeated dim": (lambda m, x: m.gradient(x, dim=[0, 0]), ([[1.0, 2], [4, 5]],)),
    "gradient errors: 2-d coordinates": (lambda m, x: m.gradient(x, spacing=[m.tensor([[1.0, 2]])], dim=1),
                                         ([[1.0, 2], [4, 5]],)),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(GRADS))
def test_values_and_gradients_as_torch(name, dtype):
    fn, values = GRADS[name]
    ours, theirs = _grads(tapegrad, fn, values, dtype), _grads(torch, fn, values, dtype)
    if isinstance(theirs[0], str):
        assert ours == theirs
        return
    assert not isinstance(ours[0], str), ours
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ours[0], theirs[0], equal_nan=True, **tol)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, equal_nan=True, **tol)


def test_gradient_of_integers_and_without_dims():
    for fn in (lambda m: m.gradient(L(m, [1, 2, 4]), spacing=2), lambda m: m.gradient(L(m, [[1, 2], [4, 7]])),
               lambda m: m.gradient(L(m, 1.0))):
        assert _run(tapegrad, fn) == _run(torch, fn)


def test_bernoulli_output_requires_grad_with_a_zero_gradient():
    for m in (torch, tapegrad):
        p = m.tensor([0.2, 0.7], requires_grad=True)
        r = m.bernoulli(p)
        assert r.requires_grad
        assert m.autograd.grad((r * 3).sum(), p)[0].tolist() == [0.0, 0.0]
