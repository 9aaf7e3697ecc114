"""Tensor and library features that real scripts use (issue 18), each against torch 2.13: ordering ops,
multinomial's random stream, layout helpers, new_*, out=, data_ptr and the device flags, indexing with ranges
and lists of tensors, 0-d __format__, set_printoptions, and sparse COO tensors for graph networks.
(Gradients of sort, topk, roll and diag are in test_ops_table.py's table.)"""
import math
import warnings

import numpy as np
import pytest
import torch

import tapegrad

LIBS = (torch, tapegrad)


def both(fn):
    """fn(lib) under torch and tapegrad."""
    return fn(torch), fn(tapegrad)


def same(a, b, rtol=0, atol=0):
    """Two results (tensors, or tuples of them) agree in shape, dtype and value."""
    if isinstance(a, (tuple, list)):
        assert type(b) in (tuple, list) or hasattr(b, "_fields"), type(b)
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y, rtol, atol)
        return
    assert str(a.dtype) == str(b.dtype), (a.dtype, b.dtype)
    assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=rtol, atol=atol)


def raises_same(fn):
    """Both libraries raise the same exception type with the same message."""
    errors = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            fn(lib)
        errors.append(info.value)
    assert type(errors[1]) is type(errors[0]), (errors[0], errors[1])
    assert str(errors[1]) == str(errors[0])


RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6)).astype(np.float32)
TIES = np.array([[3, 1, 2, 1, 3, np.nan, 0, 1], [0, 0, 1, 1, -1, -1, 2, 2]], np.float32)


# -- sort, argsort, topk, unique -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [-1, 0])
def test_sort_is_stable_with_ties_and_nan(dtype, descending, dim):
    data = TIES if dtype in (np.float32, np.float64) else np.nan_to_num(TIES)
    data = data.astype(dtype)
    r = both(lambda L: L.sort(L.tensor(data), dim=dim, descending=descending, stable=True))
    same(r[0].values, r[1].values)
    same(r[0].indices, r[1].indices)
    a = both(lambda L: L.argsort(L.tensor(data), dim=dim, descending=descending, stable=True))
    same(*a)
    same(*both(lambda L: L.tensor(data).argsort(dim, descending)))


def test_sort_and_topk_return_types():
    t, g = both(lambda L: L.tensor(X).sort(descending=True))
    assert type(g).__name__ == "sort" and g.values is g[0]
    t, g = both(lambda L: L.topk(L.tensor(X), 2, dim=0))
    assert type(g).__name__ == "topk"
    same(t.values, g.values)
    same(t.indices, g.indices)


@pytest.mark.parametrize("k,dim,largest", [(1, -1, True), (3, -1, False), (4, 0, True), (6, 1, True), (0, 1, True)])
def test_topk_values_and_indices(k, dim, largest):
    t, g = both(lambda L: L.topk(L.tensor(X), k, dim, largest))
    same(t.values, g.values)
    same(t.indices, g.indices)


@pytest.mark.parametrize("call", [
    lambda L: L.topk(L.tensor(X), 7),
    lambda L: L.topk(L.tensor(X), -1),
    lambda L: L.sort(L.tensor(X), dim=2),
    lambda L: L.argsort(L.tensor(X), dim=-3),
])
def test_ordering_errors(call):
    raises_same(call)


@pytest.mark.parametrize("kwargs", [{}, {"return_inverse": True}, {"return_counts": True},
                                    {"return_inverse": True, "return_counts": True}, {"dim": 0},
                                    {"dim": 1, "return_inverse": True, "return_counts": True},
                                    {"sorted": False}])
@pytest.mark.parametrize("data", [np.array([[3, 1, 2], [1, 3, 2], [3, 1, 2]]),
                                  np.array([[0.5, -1.0], [0.5, -1.0], [2.0, 0.0]], np.float32)])
def test_unique(kwargs, data):
    same(*both(lambda L: L.unique(L.tensor(data), **kwargs)))
    same(*both(lambda L: L.tensor(data).unique(**kwargs)))


def test_unique_consecutive():
    data = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    same(*both(lambda L: L.unique_consecutive(L.tensor(data), return_inverse=True, return_counts=True)))


# -- multinomial: torch's algorithm and random stream --------------------------------------------------------------
P = np.random.default_rng(1).random((5, 9)).astype(np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,replacement,rows", [(1, False, 2), (1, True, 2), (4, False, 2), (9, False, 1),
                                                 (30, True, 2), (5, True, 1)])
def test_multinomial_matches_torch_for_the_same_seed(dtype, n, replacement, rows):
    p = P.astype(dtype) if rows == 2 else P[0].astype(dtype)

    def draw(L):
        L.manual_seed(7)
        first = L.multinomial(L.tensor(p), n, replacement)
        second = L.tensor(p).multinomial(n, replacement=replacement)
        return first, second, L.rand(3)   # the stream goes on where torch's does
    same(*both(draw))


def test_multinomial_with_a_generator_and_zero_probabilities():
    p = np.array([0.0, 1.0, 0.0, 2.0], np.float32)

    def draw(L):
        g = L.Generator().manual_seed(3)
        return L.multinomial(L.tensor(p), 2, generator=g), L.multinomial(L.tensor(p), 1, generator=g)
    same(*both(draw))
    # past the positive categories come the zero-probability ones; their order among themselves is a tie, which
    # torch's topk leaves unspecified (its order comes from std::nth_element)
    out = tapegrad.multinomial(tapegrad.tensor(p), 4).tolist()
    assert set(out[:2]) == {1, 3} and set(out[2:]) == {0, 2}


@pytest.mark.parametrize("call", [
    lambda L: L.multinomial(L.tensor([1.0, -1.0]), 1),
    lambda L: L.multinomial(L.tensor([1.0, float("nan")]), 1),
    lambda L: L.multinomial(L.tensor([1.0, float("inf")]), 1),
    lambda L: L.multinomial(L.tensor([0.0, 0.0]), 1),
    lambda L: L.multinomial(L.tensor([[1.0, 1.0], [0.0, 0.0]]), 1),
    lambda L: L.multinomial(L.tensor([1.0, float("nan")]), 2, True),
    lambda L: L.multinomial(L.tensor([1.0, -2.0]), 2, True),
    lambda L: L.multinomial(L.tensor([0.0, 0.0]), 2, True),
    lambda L: L.multinomial(L.zeros(2, 2, 2), 1),
    lambda L: L.multinomial(L.tensor([1, 2]), 1),
    lambda L: L.multinomial(L.tensor([1.0, 2.0]), 0),
    lambda L: L.multinomial(L.tensor([1.0, 2.0]), 3),
])
def test_multinomial_errors(call):
    raises_same(call)


# -- roll, diag, tril_indices, triu_indices ------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda L, x: L.roll(x, 5), lambda L, x: L.roll(x, (1, -2), (0, 1)), lambda L, x: x.roll(-1, 1),
    lambda L, x: L.roll(x[0], 3, 0), lambda L, x: L.diag(x), lambda L, x: L.diag(x, -2), lambda L, x: L.diag(x, 9),
    lambda L, x: L.diag(x[0]), lambda L, x: L.diag(x[0], 3), lambda L, x: x[1].diag(-1),
    lambda L, x: L.diag(L.tensor([1, 2, 3])),
])
def test_layout_values(call):
    same(*both(lambda L: call(L, L.tensor(X))))


@pytest.mark.parametrize("args", [(3, 3), (4, 3), (3, 5, 1), (3, 5, -1), (0, 3), (4, 4, 10), (4, 4, -10)])
def test_triangle_indices(args):
    same(*both(lambda L: L.tril_indices(*args)))
    same(*both(lambda L: L.triu_indices(*args)))
    same(*both(lambda L: L.tril_indices(*args, dtype=L.int32)))


@pytest.mark.parametrize("call", [
    lambda L: L.roll(L.tensor(X), (1, 2), (0,)), lambda L: L.roll(L.tensor(X), 1, 5),
    lambda L: L.roll(L.tensor(X), ()), lambda L: L.diag(L.zeros(2, 2, 2)), lambda L: L.diag(L.tensor(3.0)),
    lambda L: L.tril_indices(-1, 2), lambda L: L.triu_indices(2, -3),
])
def test_layout_errors(call):
    raises_same(call)


# -- new_*, data_ptr, device flags ---------------------------------------------------------------------------------
@pytest.mark.parametrize("src_dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("call", [
    lambda L, x: x.new_zeros(2, 3), lambda L, x: x.new_zeros((2,)), lambda L, x: x.new_ones([3]),
    lambda L, x: x.new_ones(2, dtype=L.float64), lambda L, x: x.new_full((2, 2), 3),
    lambda L, x: x.new_full((2,), 1.5, dtype=L.float32), lambda L, x: x.new_empty(0, 2).shape,
    lambda L, x: x.new_tensor([1, 2]), lambda L, x: x.new_tensor([[1.5, 2.5]]),
    lambda L, x: x.new_tensor(np.array([1, 0]), dtype=L.int32), lambda L, x: x.new_tensor(L.tensor([1.0, 2.0])),
])
def test_new_constructors(src_dtype, call):
    def run(L):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # torch warns on new_tensor(Tensor)
            return call(L, L.tensor([1, 0]).to(getattr(L, src_dtype)))
    t, g = both(run)
    if isinstance(t, torch.Size):
        assert tuple(t) == tuple(g)
    else:
        same(t, g)
        assert g.requires_grad is False


def test_new_tensor_requires_grad_and_copies():
    x = tapegrad.tensor([1.0, 2.0])
    y = x.new_tensor([3.0, 4.0], requires_grad=True)
    assert y.requires_grad and y.is_leaf
    src = np.array([1.0, 2.0], np.float32)
    z = x.new_tensor(src)
    src[0] = 9
    assert z.tolist() == [1.0, 2.0]


def test_data_ptr_is_stable_and_shared_by_memory_sharing_views():
    x = tapegrad.zeros(4, 5)
    p = x.data_ptr()
    assert x.data_ptr() == p and isinstance(p, int) and p != 0
    x.add_(1)                                   # in place: same storage
    assert x.data_ptr() == p
    assert x.detach().data_ptr() == p            # detach shares storage, as torch
    arr = np.zeros(6, np.float32)
    assert tapegrad.from_numpy(arr).data_ptr() == arr.ctypes.data
    assert tapegrad.zeros(3).data_ptr() != p     # a fresh tensor has its own storage


def test_device_and_storage_flags():
    for lib in LIBS:
        x = lib.ones(2)
        for name in ("is_cuda", "is_xpu", "is_mps", "is_sparse", "is_quantized", "is_meta"):
            assert getattr(x, name) is False, (lib.__name__, name)
        assert repr(x.layout) == "torch.strided"


# -- out= ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,out_shape,out_dtype", [
    (lambda L, a, b, o: L.add(a, b, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.sub(a, b, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.mul(a, 2, out=o), (3, 4), "float64"),
    (lambda L, a, b, o: L.div(a, b, out=o), (0,), "float32"),
    (lambda L, a, b, o: L.matmul(a, b.t(), out=o), (3, 3), "float32"),
    (lambda L, a, b, o: L.mm(a, b.t(), out=o), (3, 3), "float32"),
    (lambda L, a, b, o: L.cat([a, b], 0, out=o), (6, 4), "float32"),
    (lambda L, a, b, o: L.stack([a, b], out=o), (2, 3, 4), "float32"),
    (lambda L, a, b, o: L.sum(a, 1, out=o), (3,), "float32"),
    (lambda L, a, b, o: L.mean(a, (0, 1), out=o), (), "float32"),
    (lambda L, a, b, o: L.exp(a, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.zeros(2, 2, out=o), (2, 2), "float32"),
    (lambda L, a, b, o: L.arange(5, out=o), (5,), "int64"),
    (lambda L, a, b, o: L.gt(a, b, out=o), (3, 4), "bool"),
    (lambda L, a, b, o: L.std(a, 1, out=o), (3,), "float32"),
    (lambda L, a, b, o: L.var(a, 1, out=o), (3,), "float32"),
    (lambda L, a, b, o: L.norm(a, dim=1, out=o), (3,), "float32"),
    (lambda L, a, b, o: L.softmax(a, 1, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.log_softmax(a, 1, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.addmm(L.zeros(3, 3), a, b.t(), out=o), (3, 3), "float32"),
    (lambda L, a, b, o: L.addcmul(a, a, b, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.addcdiv(a, a, b + 5, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.masked_select(a, a > 0, out=o), (0,), "float32"),
    (lambda L, a, b, o: L.nansum(a, 1, out=o), (3,), "float32"),
    (lambda L, a, b, o: L.cumprod(a, 1, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.tensordot(a, b, dims=([1], [1]), out=o), (3, 3), "float32"),
    (lambda L, a, b, o: L.remainder(a, 1.5, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.fmod(a, 1.5, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.log2(a.abs(), out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.erfinv(a / 3, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.nan_to_num(a.log(), out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.searchsorted(L.tensor([0.0, 1.0]), a, out=o), (3, 4), "int64"),
    (lambda L, a, b, o: L.hypot(a, b, out=o), (3, 4), "float32"),
    (lambda L, a, b, o: L.take(a, L.tensor([0, 5]), out=o), (2,), "float32"),
])
def test_out_writes_into_and_returns_the_out_tensor(call, out_shape, out_dtype):
    def run(L):
        a, b = L.tensor(X[:3, :4]), L.tensor(X[1:, 2:])
        o = L.zeros(out_shape, dtype=getattr(L, out_dtype))
        r = call(L, a, b, o)
        assert r is o
        return o
    same(*both(run), rtol=1e-6)


def test_out_resizes_with_torch_warning():
    for lib in LIBS:
        o = lib.zeros(5)
        with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
            lib.add(lib.ones(2), 1, out=o)
        assert o.tolist() == [2.0, 2.0]


def test_out_of_a_values_indices_pair():
    def run(L):
        a = L.tensor(X[:3, :4])
        pairs = [(L.zeros(3), L.zeros(3, dtype=L.int64)) for _ in range(3)]
        for f, o in zip((L.max, L.min, L.median), pairs):
            r = f(a, 1, out=o)
            assert r[0] is o[0] and r[1] is o[1]
        return [t for o in pairs for t in o]
    same(*both(run))


def test_out_of_sort_and_topk():
    def run(L):
        v, i = L.zeros(0), L.zeros(0, dtype=L.int64)
        r = L.sort(L.tensor(X), 1, out=(v, i))
        assert r[0] is v and r[1] is i
        return v, i
    same(*both(run))


@pytest.mark.parametrize("call", [
    lambda L: L.add(L.ones(2, requires_grad=True), 1, out=L.empty(2)),
    lambda L: L.add(L.ones(2), 1, out=L.empty(2, requires_grad=True)),
    lambda L: L.matmul(L.ones(2, 2, requires_grad=True), L.ones(2, 2), out=L.empty(2, 2)),
    lambda L: L.exp(L.ones(2, requires_grad=True), out=L.empty(2)),
    lambda L: L.cat([L.ones(2, requires_grad=True)], out=L.empty(2)),
    lambda L: L.add(L.ones(2), 1.5, out=L.empty(2, dtype=L.int64)),
    lambda L: L.add(L.ones(2, dtype=L.int64), 1, out=L.empty(2, dtype=L.bool)),
])
def test_out_errors(call):
    raises_same(call)


def test_out_is_allowed_under_no_grad():
    for lib in LIBS:
        x = lib.ones(2, requires_grad=True)
        o = lib.empty(2)
        with lib.no_grad():
            assert lib.add(x, x, out=o) is o
        assert o.tolist() == [2.0, 2.0] and not o.requires_grad


# -- indexing with ranges, lists and tuples of tensors ---------------------------------------------------------------
KEYS = {
    "range": lambda L: range(1, 3),
    "range_step": lambda L: range(0, 4, 2),
    "range_in_tuple": lambda L: (slice(None), range(2, 5)),
    "list_of_tensors": lambda L: [L.tensor([0, 1]), L.tensor([2, 3])],
    "list_of_lists": lambda L: [[0, 1], [2, 3]],
    "list_with_slice": lambda L: [slice(1, 3), 2],
    "list_with_none": lambda L: [None, 1],
    "tuple_of_tensors": lambda L: (L.tensor([0, 2]), L.tensor([[1], [3]])),
    "list_of_0d_tensors": lambda L: [L.tensor(1), L.tensor(2)],
    "plain_list": lambda L: [3, 0, 0],
    "empty_range": lambda L: range(0),
}


@pytest.mark.parametrize("key", KEYS, ids=list(KEYS))
def test_getitem_and_setitem_with_sequences(key):
    def get(L):
        return L.tensor(X)[KEYS[key](L)]
    same(*both(get))

    def put(L):
        x = L.tensor(X)
        x[KEYS[key](L)] = -7.0
        return x
    same(*both(put))


def test_indexing_with_sequences_is_differentiable():
    def run(L):
        x = L.tensor(X, requires_grad=True)
        y = x[range(1, 3)].sum() + (x[[L.tensor([0, 1]), L.tensor([2, 3])]] * 3).sum()
        y.backward()
        return x.grad
    same(*both(run))


# -- __format__ and set_printoptions -----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0.123456789, 3.0, -2.5e-7, 7, True, float("nan")])
@pytest.mark.parametrize("spec", ["", ".4f", "8.2e", ">10", "^12.3g"])
def test_format_of_a_0d_tensor_formats_its_number(value, spec):
    t, g = both(lambda L: L.tensor(value))
    try:
        expected = format(t, spec)
    except (ValueError, TypeError) as e:
        with pytest.raises(type(e)):
            format(g, spec)
        return
    assert format(g, spec) == expected
    assert f"{g}" == f"{t}"


def test_format_of_other_tensors():
    for spec in ("", ".2f"):
        t, g = both(lambda L: L.tensor([1.0, 2.0]))
        if spec:
            with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
                format(g, spec)
            with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
                format(t, spec)
        else:
            assert format(g) == format(t)
    p = tapegrad.nn.Parameter(tapegrad.tensor(1.0))
    assert f"{p}" == f"{torch.nn.Parameter(torch.tensor(1.0))}"


@pytest.fixture
def print_defaults():
    yield
    for lib in LIBS:
        lib.set_printoptions(profile="default")


PRINT_DATA = [
    np.array(3.14159265), np.array([1.123456789, -20.5, 3e-3]), np.arange(2000, dtype=np.float32) / 7,
    np.arange(30, dtype=np.int64).reshape(5, 6), np.random.default_rng(2).standard_normal((12, 9, 4)),
    np.array([1e-6, 1.0, 1e9]), np.array([0.0, 1.0, 2.0]), np.array([True, False]),
    np.linspace(-1, 1, 120).reshape(4, 30),
]
OPTIONS = [dict(precision=2), dict(precision=8), dict(threshold=5), dict(threshold=5, edgeitems=1),
           dict(edgeitems=0, threshold=3), dict(linewidth=30), dict(linewidth=200), dict(sci_mode=True),
           dict(sci_mode=False), dict(profile="short"), dict(profile="full"), dict(profile="short", precision=6),
           dict(precision=3, sci_mode=True, linewidth=50)]


@pytest.mark.parametrize("options", OPTIONS, ids=[",".join(f"{k}={v}" for k, v in o.items()) for o in OPTIONS])
def test_set_printoptions_prints_as_torch(options, print_defaults):
    for lib in LIBS:
        lib.set_printoptions(**options)
    for data in PRINT_DATA:
        for grad in (False, True):
            if grad and data.dtype.kind != "f":
                continue
            t, g = both(lambda L: L.tensor(data, requires_grad=grad))
            assert repr(g) == repr(t), f"\n{g!r}\n!=\n{t!r}"
    assert tapegrad.get_printoptions() == {k: v for k, v in torch._tensor_str.get_printoptions().items()}


def test_set_printoptions_profile_default_restores(print_defaults):
    for lib in LIBS:
        lib.set_printoptions(precision=1, threshold=3)
        lib.set_printoptions(profile="default")
    t, g = both(lambda L: L.tensor([1.23456, 2.0, 3.0, 4.0]))
    assert repr(g) == repr(t) == "tensor([1.2346, 2.0000, 3.0000, 4.0000])"


# -- sparse COO -------------------------------------------------------------------------------------------------------
IND = np.array([[0, 1, 1, 0, 2, 3, 3], [2, 0, 2, 2, 1, 3, 0]], np.int64)
VAL = np.random.default_rng(3).standard_normal(7).astype(np.float32)


def sp(L, values=None, ind=IND, size=(4, 4), **kw):
    return L.sparse_coo_tensor(L.tensor(ind), L.tensor(VAL if values is None else values), size, **kw)


def test_sparse_coo_basics_and_repr():
    t, g = both(lambda L: sp(L))
    assert g.is_sparse and repr(g.layout) == "torch.sparse_coo" and g.shape == t.shape and g.dtype is tapegrad.float32
    assert (g._nnz(), g.sparse_dim(), g.dense_dim(), g.is_coalesced()) == (7, 2, 0, False)
    same(t._indices(), g._indices())
    same(t._values(), g._values())
    same(t.to_dense(), g.to_dense())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in (lambda s: s, lambda s: s.coalesce(), lambda s: s.double(), lambda s: s.t(), lambda s: s * 2,
                  lambda s: -s):
            assert repr(f(g)) == repr(f(t))
    c = both(lambda L: sp(L).coalesce())
    assert c[1].is_coalesced()
    same(c[0].indices(), c[1].indices())
    same(c[0].values(), c[1].values(), rtol=1e-6)
    raises_same(lambda L: sp(L).indices())
    raises_same(lambda L: sp(L).values())


@pytest.mark.parametrize("make", [
    lambda L: L.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0]]).to_sparse(),
    lambda L: L.diag(L.tensor([1.0, 0.0, 2.0])).to_sparse(),
    lambda L: L.zeros(3, 4).to_sparse(),
    lambda L: L.sparse_coo_tensor(np.array([[0, 1, 1], [2, 0, 2]], np.int32), L.ones(3), (2, 3), dtype=L.int64),
    lambda L: L.sparse_coo_tensor([[0, 1]], [1.0, 2.0]),
    lambda L: L.sparse_coo_tensor(L.tensor([[0, 2]]), L.tensor([1.0, 2.0])),
])
def test_sparse_constructors(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, g = both(make)
        assert repr(g) == repr(t)
    same(t.to_dense(), g.to_dense())


def test_dense_plus_sparse_is_dense():
    def run(L):
        a = L.sparse_coo_tensor(L.tensor(IND), L.ones(7), (4, 4), dtype=L.int64)
        return L.eye(4) + a, L.ones(4, 4, dtype=L.float64) - sp(L), sp(L) + sp(L, ind=IND[::-1].copy())
    t, g = both(run)
    same(t[0], g[0])
    same(t[1], g[1])
    same(t[2].to_dense(), g[2].to_dense())


@pytest.mark.parametrize("product", [
    lambda L, s, d, e: L.mm(s, d), lambda L, s, d, e: L.spmm(s, d), lambda L, s, d, e: s @ d,
    lambda L, s, d, e: L.sparse.mm(s, d), lambda L, s, d, e: L.matmul(s, d), lambda L, s, d, e: s.mm(d),
    lambda L, s, d, e: e @ s, lambda L, s, d, e: L.mm(e, s), lambda L, s, d, e: L.matmul(s, d[:, 0]),
    lambda L, s, d, e: L.sparse.mm(s.coalesce(), d), lambda L, s, d, e: L.mm(s.t(), d),
    lambda L, s, d, e: (s * 0.5) @ d, lambda L, s, d, e: L.sparse.addmm(d[:, :1], s, d, beta=0.5, alpha=2.0),
])
def test_sparse_times_dense_values_and_gradients(product):
    rng = np.random.default_rng(4)
    d, e = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)

    def run(L):
        v = L.tensor(VAL, requires_grad=True)
        dd, ee = L.tensor(d, requires_grad=True), L.tensor(e, requires_grad=True)
        out = product(L, L.sparse_coo_tensor(L.tensor(IND), v, (4, 4)), dd, ee)
        (out.sin() * L.arange(out.numel()).reshape(out.shape)).sum().backward()
        grads = [x.grad if x.grad is not None else L.zeros(x.shape) for x in (v, dd, ee)]
        return [out] + grads
    same(*both(run), rtol=1e-5, atol=1e-5)


def test_sparse_gradients_of_second_order():
    """Through the dense operand's gradient, as torch; torch's gradient for the values is not differentiable
    (it has no grad_fn), tapegrad's is: checked against central differences."""
    rng = np.random.default_rng(5)
    d = rng.standard_normal((4, 3))

    def grads(L, values, dense):
        v, dd = L.tensor(values, requires_grad=True), L.tensor(dense, requires_grad=True)
        y = (L.spmm(L.sparse_coo_tensor(L.tensor(IND), v, (4, 4)), dd) ** 3).sum()
        gv, gd = L.autograd.grad(y, (v, dd), create_graph=True)
        return v, dd, gv, gd

    def run(L):
        v, dd, gv, gd = grads(L, VAL.astype(np.float64), d)
        return L.autograd.grad((gd * dd).sum(), (v, dd)) + (gv, gd)
    same(*both(run), rtol=1e-9, atol=1e-9)

    v, dd, gv, gd = grads(tapegrad, VAL.astype(np.float64), d)
    analytic = tapegrad.autograd.grad((gv ** 2).sum(), (v,))[0].numpy()

    def f(values):
        return float((grads(tapegrad, values, d)[2] ** 2).sum())
    eps, base = 1e-6, VAL.astype(np.float64)
    numeric = [(f(base + eps * e) - f(base - eps * e)) / (2 * eps) for e in np.eye(len(base))]
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5)


def test_graph_convolution_as_the_gcn_example():
    """pytorch/examples gcn: row-normalised sparse features, the renormalised adjacency, two graph convolutions."""
    rng = np.random.default_rng(6)
    V, E, Fin = 30, 60, 12
    feats = (rng.random((V, Fin)) < 0.3).astype(np.int32)
    edges = rng.integers(0, V, (E, 2)).astype(np.int32)
    w1, w2 = rng.standard_normal((Fin, 8)).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32)

    def run(L):
        features = L.FloatTensor(feats)
        scale = 1 / L.sum(features, dim=1)
        scale[scale == float("inf")] = 0
        features = L.diag(scale).to_sparse() @ features
        adj = L.sparse_coo_tensor(edges.T, L.ones(E), (V, V), dtype=L.int64)
        adj = L.eye(V) + adj
        degree = L.sqrt(1 / L.sum(adj, dim=1))
        degree[degree == float("inf")] = 0
        degree = L.diag(degree).to_sparse()
        adj = (degree @ adj @ degree).to_sparse()
        features = features.to_sparse()
        k1, k2 = L.tensor(w1, requires_grad=True), L.tensor(w2, requires_grad=True)
        x = L.spmm(adj, L.mm(features, k1)).relu()
        out = L.nn.functional.log_softmax(L.spmm(adj, L.mm(x, k2)), dim=1)
        loss = L.nn.functional.nll_loss(out, L.tensor(rng_labels))
        loss.backward()
        return loss, k1.grad, k2.grad
    rng_labels = np.random.default_rng(7).integers(0, 3, V)
    same(*both(run), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", [
    lambda L: sp(L) + L.ones(4, 4),
    lambda L: sp(L).reshape(16),
    lambda L: sp(L).numpy(),
    lambda L: sp(L).item(),
    lambda L: sp(L).data_ptr(),
    lambda L: L.mm(sp(L), L.ones(3, 2)),
    lambda L: L.mm(L.ones(2, 3), sp(L)),
    lambda L: L.ones(2, 3) @ sp(L),
    lambda L: L.mm(sp(L), L.ones(4)),
    lambda L: L.mm(sp(L), L.ones(4, 2, dtype=L.float64)),
    lambda L: L.sparse_coo_tensor(L.tensor(IND), L.ones(3), (4, 4)),
    lambda L: L.sparse_coo_tensor(L.tensor(IND), L.ones(7), (4,)),
    lambda L: L.sparse_coo_tensor(L.tensor([0, 1]), L.ones(2), (2,)),
    lambda L: L.sparse_coo_tensor(L.tensor(IND), L.ones(7), (2, 4), check_invariants=True),
    lambda L: L.sparse_coo_tensor(L.tensor([[0, -1]]), L.ones(2), (2,), check_invariants=True),
])
def test_sparse_errors(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raises_same(call)


@pytest.mark.parametrize("call", [lambda s: s.view(-1), lambda s: s.exp(), lambda s: s[0],
                                  lambda s: tapegrad.exp(s), lambda s: s.mean(), lambda s: s.softmax(0)])
def test_sparse_ops_tapegrad_lacks_raise_torchs_not_implemented_error(call):
    with pytest.raises(NotImplementedError, match="with arguments from the 'SparseCPU' backend"):
        call(sp(tapegrad))


# -- tapegrad.compile ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [lambda t: (tapegrad.roll(t, (1, 2), (0, 1)) * t).sum(),
                                lambda t: (tapegrad.diag(t[0]) @ t.T).square().sum()], ids=["roll", "diag"])
def test_compile_replays_roll_and_diag(fn):
    x = tapegrad.tensor(X, requires_grad=True)
    compiled = tapegrad.compile(fn, fullgraph=True)
    for _ in range(3):
        compiled(x).backward()
    eager = tapegrad.tensor(X, requires_grad=True)
    fn(eager).backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * eager.grad.numpy(), rtol=1e-6)


def test_compile_names_the_ops_it_cannot_replay():
    x = tapegrad.tensor(X, requires_grad=True)
    for fn, name in ((lambda t: t.scatter_add(0, tapegrad.zeros_like(t, dtype=tapegrad.int64), t).sum(), "scatter_add"),
                     (lambda t: tapegrad.nn.functional.embedding_bag(tapegrad.tensor([[0, 1]]), t).sum(),
                      "embedding_bag"),
                     (lambda t: tapegrad.spmm(t[:2, :4].detach().to_sparse(), t[:4]).sum(), "")):
        reason = f"{name} has no replay rule" if name else ""   # (a sparse operand stops the trace earlier)
        with pytest.raises(tapegrad._dynamo.exc.Unsupported, match=f"cannot replay this function: {reason}"):
            tapegrad.compile(fn, fullgraph=True)(x)  # (torch's exception, a RuntimeError)
        assert float(tapegrad.compile(fn)(x)) == pytest.approx(float(fn(x)))   # eager fallback


@pytest.mark.parametrize("call", [
    lambda L: L.ones(2).new_zeros(2, device="cuda"), lambda L: L.ones(2).new_tensor([1.0], device="cuda:0"),
    lambda L: L.ones(2).new_full((2,), 1.0, device="xpu"), lambda L: L.tril_indices(2, 2, device="cuda"),
    lambda L: L.sparse_coo_tensor([[0]], [1.0], device="cuda"),
])
def test_constructors_refuse_other_devices_as_a_cpu_only_torch(call):
    raises_same(call)
    assert tapegrad.ones(2).new_zeros(2, device="cpu").tolist() == [0.0, 0.0]


LINSPACE = [(-1, 1, 28), (-math.pi, math.pi, 2000), (0, 1, 7), (0, 10, 100), (-3, 5, 33), (1e-3, 2.5, 1000),
            (2, -7, 999), (0.1, 0.7, 123), (0, 1, 2), (5, 5, 4), (-1e30, 1e30, 9), (1, 0, 100000), (0, 1, 1),
            (0, 1, 0), (0, math.inf, 5), (math.nan, 1, 3)]


@pytest.mark.parametrize("start, end, steps", LINSPACE)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linspace_is_torchs_bit_for_bit(start, end, steps, dtype):
    """start + k * step (first half) and end - (steps - 1 - k) * step, each rounded once, as torch's CPU kernel's
    fused multiply-adds: the spatial transformer tutorial's affine_grid samples exactly on pixel centres, where a
    last bit decides grid_sample's one-sided gradient."""
    got = tapegrad.linspace(start, end, steps, dtype=getattr(tapegrad, dtype)).numpy()
    want = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).numpy()
    assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)


def test_storages_and_data_pointers_of_views_are_torchs():
    """untyped_storage / storage (with torch's deprecation warning) over the memory a tensor and its views share:
    data pointers, sizes, values and reprs as torch's; writing through a storage is refused, naming it."""
    from tapegrad import storage as tg_storage
    tg_storage._warned[0] = False  # (each warns once a process: torch's flag reset too)
    torch.storage._warn_typed_storage_removal.__dict__.pop("has_warned", None)
    seen = []
    for lib in LIBS:
        x = lib.arange(6.0).reshape(2, 3)
        u = x.untyped_storage()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = x.storage()
        assert [str(w.message) for w in caught if "TypedStorage" in str(w.message)], lib.__name__
        views = (x.t(), x[1], x[:, 1], x.view(6), x.unsqueeze(0), x.detach())
        seen.append((
            [v.data_ptr() - x.data_ptr() for v in views],
            [v.untyped_storage().data_ptr() == u.data_ptr() for v in views],
            u.data_ptr() == x.data_ptr(), u.nbytes(), u.size(), len(u), u.element_size(), str(u.device),
            type(u).__name__, type(s).__name__, s.size(), str(s.dtype), s.element_size(), s.nbytes(), s.tolist(),
            s[4], u[7], repr(lib.arange(2, dtype=lib.int8).untyped_storage()), repr(lib.arange(3.0).storage()),
            repr(lib.zeros(0).storage()), lib.zeros(3).untyped_storage().data_ptr() != u.data_ptr()))
    assert seen[0] == seen[1]
    with pytest.raises(NotImplementedError, match="does not write through a tensor's storage"):
        tapegrad.zeros(2).untyped_storage()[0] = 1


T_SCRIPT = """
import warnings
import {lib} as torch
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as w:
    shapes = [tuple(t.T.shape) for t in (torch.randn(3), torch.randn(2, 3, 4), torch.tensor(1.), torch.tensor(2.),
                                           torch.randn(2, 3), torch.randn(2, 3, 4))]
x = torch.randn(2, 3, 4, requires_grad=True)
y = x.T
y.sum().backward()
print([str(m.message) for m in w], [m.filename.endswith("<string>") for m in w], shapes, y.grad_fn.name(), y.stride(),
      tuple(x.grad.shape))
"""


def test_dot_T_reverses_dims_with_torchs_once_a_process_warnings():
    """x.T of a tensor that is not 2-D warns as torch's does (once a process for 0-d, once for the rest), at the caller's
    line; its value, grad_fn and strides are permute's."""
    import subprocess
    import sys
    outs = [subprocess.run([sys.executable, "-c", T_SCRIPT.format(lib=lib)], capture_output=True, text=True, timeout=120)
            for lib in ("torch", "tapegrad")]
    assert outs[0].returncode == 0 and outs[1].returncode == 0, (outs[0].stderr, outs[1].stderr)
    import re
    # (tapegrad's warnings leave out the "(Triggered internally at <torch's C++ source>)" torch appends: tensor.py)
    assert outs[1].stdout == re.sub(r" \(Triggered internally at [^)]*\)", "", outs[0].stdout)


INT_POWERS = [
    lambda L: L.tensor([2, 1, -1, 0, 3, -2]) ** L.tensor([-1, -2, -3, 2, 0, -1]),
    lambda L: L.tensor([0]) ** L.tensor([-1]),
    lambda L: L.tensor([2]).pow(L.tensor(-1)),
    lambda L: L.tensor(2) ** L.tensor([-1, 2]),
    lambda L: 2 ** L.tensor([-1, 2]),
    lambda L: L.tensor([[1], [-1], [3]], dtype=L.int32) ** L.tensor([-1, -2, 4], dtype=L.int32),
    lambda L: L.tensor([1, -1, 5], dtype=L.int8) ** L.tensor([-3], dtype=L.int16),
    lambda L: L.tensor([2, -1]).pow_(L.tensor([-1, -3])),
]


@pytest.mark.parametrize("case", range(len(INT_POWERS)))
def test_integer_tensors_to_negative_tensor_powers_as_torch(case):
    """An integer tensor to a tensor of negative integer powers: 1 and -1 as they are, others 0 (torch refuses only a
    negative Python-number exponent)."""
    ours, theirs = INT_POWERS[case](tapegrad), INT_POWERS[case](torch)
    assert ours.tolist() == theirs.tolist() and str(ours.dtype) == str(theirs.dtype)


def test_integer_tensor_to_a_negative_number_raises_as_torch():
    raises_same(lambda L: L.tensor([2]) ** -1)


OUT_DTYPES = {
    "rand_float64": lambda L: L.rand(2, 2, out=L.empty(2, 2, dtype=L.float64)),
    "randn_float64": lambda L: L.randn(3, out=L.empty(3, dtype=L.float64)),
    "zeros_int64": lambda L: L.zeros(3, out=L.empty(3, dtype=L.int64)),
    "ones_bool": lambda L: L.ones(2, out=L.empty(2, dtype=L.bool)),
    "arange_float": lambda L: L.arange(3, out=L.empty(3)),
    "randint_float": lambda L: L.randint(0, 5, (3,), out=L.empty(3)),
    "full_float64": lambda L: L.full((2,), 1.5, out=L.empty(2, dtype=L.float64)),
    "linspace_float64": lambda L: L.linspace(0, 1, 3, out=L.empty(3, dtype=L.float64)),
    "eye_int64": lambda L: L.eye(2, out=L.empty(2, 2, dtype=L.int64)),
    "matmul_float64": lambda L: L.matmul(L.ones(2, 2), L.ones(2, 2), out=L.empty(0, dtype=L.float64)),
    "mm_int64": lambda L: L.mm(L.ones(2, 2), L.ones(2, 2), out=L.empty(0, dtype=L.int64)),
    "bmm_float64": lambda L: L.bmm(L.ones(2, 2, 2), L.ones(2, 2, 2), out=L.empty(0, dtype=L.float64)),
    "mv_float64": lambda L: L.mv(L.ones(2, 2), L.ones(2), out=L.empty(0, dtype=L.float64)),
    "dot_int64": lambda L: L.dot(L.ones(2), L.ones(2), out=L.empty(0, dtype=L.int64)),
    "cat_int64": lambda L: L.cat([L.ones(2), L.ones(2)], out=L.empty(0, dtype=L.int64)),
    "outer_float64": lambda L: L.outer(L.ones(2), L.ones(2), out=L.empty(0, dtype=L.float64)),
}


@pytest.mark.parametrize("case", sorted(OUT_DTYPES))
def test_out_of_another_dtype_as_torch(case):
    """A factory with out= makes out's dtype (rand draws that dtype's stream); the matrix products, dot and cat refuse
    an out= of another dtype with torch's error; elementwise ops cast."""
    seen = []
    for L in LIBS:
        L.manual_seed(0)
        try:
            r = OUT_DTYPES[case](L)
            seen.append((str(r.dtype), r.tolist()))
        except (RuntimeError, TypeError) as e:
            seen.append((type(e).__name__, str(e)))
    assert seen[1] == seen[0]


OUT_RESIZES = {
    "rand": lambda L: L.rand(2, 2, out=L.empty(5)), "zeros": lambda L: L.zeros(3, out=L.empty(5)),
    "arange": lambda L: L.arange(3, out=L.empty(5)), "linspace": lambda L: L.linspace(0, 1, 3, out=L.empty(5)),
    "add": lambda L: L.add(L.ones(2), 1, out=L.empty(5)), "cat": lambda L: L.cat([L.ones(2)], out=L.empty(5)),
    "mm": lambda L: L.mm(L.ones(2, 2), L.ones(2, 2), out=L.empty(5)),
}


@pytest.mark.parametrize("case", sorted(OUT_RESIZES))
def test_out_resize_warnings_as_torchs(case):
    """An out= of another size: factories resize it silently, arange with its own warning, the others with torch's
    deprecation warning, each at the caller's line."""
    import re
    seen = []
    for L in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            OUT_RESIZES[case](L)
        seen.append([(re.sub(r" \(Triggered internally at [^)]*\)", "", str(w.message)), w.filename == __file__)
                     for w in caught])
    assert seen[1] == seen[0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_keeps_full_precision_for_negative_inputs(dtype):
    """sigmoid (and what is built on it: silu, glu, mish's backward, BCE-with-logits' gradient) to torch's relative
    precision far into the negative side: float32 sigmoid(-20) is 2e-9, not 0, so BCELoss after it is 20 with gradient
    -1, not 100 with none."""
    z = np.array([-80., -40., -20., -10., -1., 0., 1., 10., 20., 40.])
    seen = []
    for L in LIBS:
        F = L.nn.functional
        x = L.tensor(z, dtype=getattr(L, dtype), requires_grad=True)
        p = L.sigmoid(x)
        loss = F.binary_cross_entropy(p, L.ones(len(z), dtype=x.dtype), reduction="none")
        loss.sum().backward()
        m = L.tensor(z[:6], dtype=x.dtype, requires_grad=True)
        F.mish(m).sum().backward()
        logits = L.tensor(z, dtype=x.dtype, requires_grad=True)
        F.binary_cross_entropy_with_logits(logits, L.zeros(len(z), dtype=x.dtype), reduction="sum").backward()
        s = L.tensor(z, dtype=x.dtype, requires_grad=True)  # (their compiled backwards' sigmoid: it cancelled too)
        (F.softplus(s) + F.silu(s)).sum().backward()
        seen.append([t.detach().numpy().astype(np.float64) for t in
                     (p, loss, x.grad, F.silu(x), F.glu(x.reshape(-1, 2), -1), m.grad, logits.grad, s.grad)])
    for ours, theirs in zip(*seen):
        np.testing.assert_allclose(ours, theirs, rtol=2e-6 if dtype == "float32" else 1e-8, atol=0)


ROUNDED_DIVS = {
    "float_floor": lambda L, a: L.div(a, 2, rounding_mode="floor"),
    "float_trunc_tensor": lambda L, a: L.div(a, L.tensor([2., 2., -2., 2., 3., 2.]), rounding_mode="trunc"),
    "method_floor_negative": lambda L, a: a.div(-3, rounding_mode="floor"),
    "divide_trunc": lambda L, a: L.divide(a, -3, rounding_mode="trunc"),
    "int_floor": lambda L, a: L.div(L.tensor([7, -7, 9, -9, 0]), 2, rounding_mode="floor"),
    "int_trunc_negative": lambda L, a: L.tensor([7, -7, 9, -9, 0]).div(L.tensor(-2), rounding_mode="trunc"),
    "number_by_tensor": lambda L, a: L.div(7, L.tensor([2, -2]), rounding_mode="trunc"),
    "int_by_float": lambda L, a: L.div(L.tensor([7, -7]), 2.5, rounding_mode="floor"),
    "by_zero_float": lambda L, a: L.div(L.tensor([1., -1.]), 0., rounding_mode="floor"),
    "in_place": lambda L, a: L.tensor([5., -5.]).div_(2, rounding_mode="floor"),
    "out": lambda L, a: L.div(L.tensor([3., 4.]), 2, rounding_mode="floor", out=L.empty(2)),
    "none": lambda L, a: L.div(a, 4, rounding_mode=None),
}


@pytest.mark.parametrize("case", sorted(ROUNDED_DIVS))
def test_div_rounding_mode_as_torch(case):
    """div / divide / div_ with rounding_mode "trunc" or "floor": values and dtypes as torch's (integers divided
    exactly), and a zero gradient for the rounded float quotient."""
    seen = []
    for L in LIBS:
        a = L.tensor([7., -7., 7.5, -7.5, 0., -0.5], requires_grad=True)
        r = ROUNDED_DIVS[case](L, a)
        grad = None
        if r.requires_grad:
            r.sum().backward()
            grad = a.grad.tolist()
        seen.append((r.tolist(), str(r.dtype), grad))
    assert seen[1] == seen[0]


def test_div_rounding_mode_errors_as_torch():
    raises_same(lambda L: L.div(L.tensor([1]), 0, rounding_mode="floor"))
    raises_same(lambda L: L.div(L.tensor([1.]), 2, rounding_mode="round"))


SPARSE_INVARIANTS_SCRIPT = """
import warnings
import torch
warnings.simplefilter("always")
i, v = torch.tensor([[0, 1], [1, 0]]), torch.ones(2)
torch.sparse_coo_tensor(i, v, (2, 2), check_invariants=False); print("told this call: no warning")
torch.sparse_coo_tensor(i, v); print("first untold: the warning")
torch.sparse_coo_tensor(i, v, (2, 2)); print("second: none (once a process)")
check = torch.sparse.check_sparse_tensor_invariants()(torch.sparse.check_sparse_tensor_invariants.is_enabled)
print("decorated", check(), torch.sparse.check_sparse_tensor_invariants.is_enabled())
"""

SPARSE_INVARIANTS_TOLD = """
import warnings
import torch
warnings.simplefilter("always")
i, v = torch.tensor([[0, 1], [1, 0]]), torch.ones(2)
with torch.sparse.check_sparse_tensor_invariants(enable=False):
    torch.sparse_coo_tensor(i, v, (2, 2)); print("inside", torch.sparse.check_sparse_tensor_invariants.is_enabled())
print("after", torch.sparse.check_sparse_tensor_invariants.is_enabled())
torch.sparse_coo_tensor(i, v); print("told once, told for good: no warning")
torch.sparse.check_sparse_tensor_invariants.enable(); print(torch.sparse.check_sparse_tensor_invariants.is_enabled())
"""


def test_sparse_invariants_setting_and_its_warning(tmp_path):
    """torch 2.13 warns once a process, at the caller's line, that a sparse constructor told neither way does not
    check its input; check_sparse_tensor_invariants (context manager, decorator, enable/disable) tells it."""
    import os
    import re
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name, text in (("untold.py", SPARSE_INVARIANTS_SCRIPT), ("told.py", SPARSE_INVARIANTS_TOLD)):
        script = tmp_path / name
        script.write_text(text)
        outputs = []
        for launch in ([], ["-m", "tapegrad"]):
            r = subprocess.run([sys.executable, *launch, str(script)], capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, PYTHONPATH=root), cwd=tmp_path)
            assert r.returncode == 0, r.stderr
            outputs.append((r.stdout, re.sub(r" \(Triggered internally at [^)]*\)", "", r.stderr)))
        warned = "implicitly disabled" in outputs[0][1]
        assert warned == (name == "untold.py") and (not warned or f"{script}:7: UserWarning" in outputs[0][1])
        assert outputs[1] == outputs[0]


NUMPY_NAMES = ["x.argmax(axis=1)", "x.sum(axis=1, keepdims=True)", "L.cat([x, x], axis=0)", "L.cumprod(x, axis=0)",
               "x.cumsum(axis=1)", "L.sum(x, axis=1)", "x.mean(axis=0, keepdims=True)", "x.max(axis=1)",
               "x.min(axis=1, keepdims=True)", "L.argmin(x, axis=1)", "x.amax(axis=1)", "x.std(axis=0)",
               "x.var(axis=0, keepdims=True)", "L.std_mean(x, axis=0)", "x.prod(axis=1)", "(x > 3).any(axis=1)",
               "L.logsumexp(x, axis=1)", "L.softmax(x, axis=1)", "x.log_softmax(axis=1)", "x[None].squeeze(axis=0)",
               "x.unsqueeze(axis=0)", "L.concatenate([x, x], axis=1)", "L.stack([x, x], axis=1)", "x.sort(axis=1)",
               "x.nanmean(axis=0)", "x.median(axis=0)", "x.count_nonzero(axis=0)", "x.unbind(axis=1)",
               "x.gather(axis=1, index=L.tensor([[0], [1], [2]]))", "L.cummax(x, axis=0)", "L.topk(x, 2, axis=1)",
               "L.narrow(x, axis=0, start=0, length=1)", "L.var_mean(x, axis=1)", "x.logcumsumexp(axis=0)"]


@pytest.mark.parametrize("call", NUMPY_NAMES)
def test_numpy_keyword_names_as_torchs(call):
    """torch's C++-bound functions and methods take axis= for dim= and keepdims= for keepdim= (d2l's
    `argmax(axis=1)`, diffusion code's `cumprod(alphas, axis=0)`)."""
    a, b = (eval(call, {"L": L, "x": L.arange(12.0).reshape(3, 4)}) for L in LIBS)
    same(tuple(a) if isinstance(a, tuple) else a, tuple(b) if isinstance(b, tuple) else b)


@pytest.mark.parametrize("call", ["L.nn.functional.softmax(x, axis=1)", "x.norm(dim=1, keepdims=True)",
                                  "x.split(2, axis=1)", "x.sum(dim=1, bogus=0)", "x.sum(dim=0, axis=1)",
                                  "x.sum(0, keepdim=True, keepdims=True)"])
def test_numpy_keyword_names_refused_where_torch_refuses(call):
    """torch's Python-written functions (nn.functional's, Tensor.norm, Tensor.split) refuse them: a TypeError."""
    for L in LIBS:
        with pytest.raises(TypeError, match="unexpected keyword argument"):
            eval(call, {"L": L, "x": L.arange(12.0).reshape(3, 4)})


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_orders_ties_as_torch(dtype, descending):
    """torch.sort(stable=False) leaves ties in libstdc++ std::sort's order past 16 elements (a padded batch's
    `lengths.sort(descending=True)`, pack_padded_sequence(enforce_sorted=False)); stable=True and ATen's radix sort
    of a long 1-D integer tensor keep input order. Before, every order was stable: a different batch order, and
    different dropout masks, from the first step."""
    rng = np.random.default_rng(7)
    shapes = [(17,), (40,), (3, 300), (500, 2), (40000,)]
    for shape in shapes:
        a = rng.integers(0, 3, shape).astype(dtype)
        if dtype.startswith("float"):
            a[rng.random(shape) < 0.05] = np.nan
        for dim in range(len(shape)):
            for stable in (False, True):
                got, want = (L.sort(L.tensor(a), dim=dim, descending=descending, stable=stable).indices.numpy()
                             for L in (tapegrad, torch))
                np.testing.assert_array_equal(got, want, err_msg=f"{shape} dim {dim} stable {stable}")
                got, want = (L.argsort(L.tensor(a), dim=dim, descending=descending).numpy() for L in (tapegrad, torch))
                np.testing.assert_array_equal(got, want)


def test_pack_padded_sequence_unsorted_lengths_in_torchs_order():
    lengths = [3, 2] * 9
    got, want = (L.nn.utils.rnn.pack_padded_sequence(L.zeros(3, 18, 1), L.tensor(lengths), enforce_sorted=False)
                 for L in (tapegrad, torch))
    assert got.sorted_indices.tolist() == want.sorted_indices.tolist()
    assert got.unsorted_indices.tolist() == want.unsorted_indices.tolist()


WARNINGS_SCRIPT = """
import warnings
import numpy as np
import torch
import torch.nn.functional as F
warnings.simplefilter("always")
torch.tensor([np.ones(2), np.zeros(2)]); torch.tensor([np.ones(2), np.zeros(2)])
F.conv1d(torch.randn(1, 2, 10), torch.randn(3, 2, 4), padding="same")
F.conv2d(torch.randn(1, 2, 10, 10), torch.randn(3, 2, 3, 4), padding="same")
F.conv1d(torch.randn(1, 2, 10), torch.randn(3, 2, 3), padding="same", dilation=2)
F.kl_div(torch.rand(2, 3).log(), torch.rand(2, 3))
F.kl_div(torch.rand(2, 3).log(), torch.rand(2, 3), reduction="batchmean")
x = torch.randn(1, 1, 2, 2)
F.upsample(x, scale_factor=2); F.upsample_bilinear(x, scale_factor=2); F.upsample_nearest(x, scale_factor=2)
for inp, tgt in [((2, 3, 4, 5), (2, 3, 5)), ((2, 3, 4, 5), (2, 4, 5, 1)), ((2, 3, 4), (2, 5)), ((2, 3, 4, 5, 6), (2, 4, 5, 7))]:
    for loss in (F.cross_entropy, F.nll_loss):
        try:
            loss(torch.zeros(inp), torch.zeros(tgt, dtype=torch.long))
        except RuntimeError as e:
            print(e)
"""


def test_deprecation_warnings_and_spatial_target_errors_as_torch(tmp_path):
    """A list of arrays to torch.tensor and padding='same' with an even kernel (torch warns once a process, at the
    caller's line), F.kl_div's 'mean',
    F.upsample*'s deprecations; cross_entropy / nll_loss of a 4-D input with the wrong target: nll_loss2d's words."""
    import os
    import re
    import subprocess
    import sys
    script = tmp_path / "warns.py"
    script.write_text(WARNINGS_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outputs = []
    for launch in ([], ["-m", "tapegrad"]):
        r = subprocess.run([sys.executable, *launch, str(script)], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PYTHONPATH=root), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        outputs.append((r.stdout, re.sub(r" \(Triggered internally at [^)]*\)", "", r.stderr)))
    assert outputs[0][1].count("UserWarning") == 6 and "size mismatch" in outputs[0][0]
    assert outputs[1] == outputs[0]


NUMPY_SCALAR_DATA = {
    "float64_scalar": lambda np_: np_.float64(1.5), "float64_in_list": lambda np_: [np_.float64(1.0), 2.0],
    "float_then_float64": lambda np_: [1.0, np_.float64(2.0)], "int32_with_int": lambda np_: [np_.int32(1), 2],
    "int32_with_float": lambda np_: [np_.int32(1), 2.5], "float16_with_float": lambda np_: [np_.float16(1), 2.5],
    "int64_with_bool": lambda np_: [np_.int64(3), True], "nested": lambda np_: [[np_.float32(1)], [np_.float64(2)]],
    "bool_scalar": lambda np_: np_.bool_(True), "uint8_int8": lambda np_: [np_.uint8(3), np_.int8(2)],
    "arrays": lambda np_: [np_.ones(2, np_.float32), np_.zeros(2)]}


@pytest.mark.parametrize("case", sorted(NUMPY_SCALAR_DATA))
def test_tensor_of_numpy_scalars_takes_their_dtype_as_torch(case):
    """torch.tensor / as_tensor infer NumPy scalars' and arrays' dtypes, promoted with Python numbers' as torch
    promotes (`torch.tensor(np.mean(x))` is float64; Python floats alone give the default dtype)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's once-a-process warning for a list of arrays)
        made = [(L.tensor(NUMPY_SCALAR_DATA[case](np)), L.as_tensor(NUMPY_SCALAR_DATA[case](np))) for L in LIBS]
    for ours, theirs in zip(made[1], made[0]):
        same(theirs, ours)


def test_tensor_of_tensors_reads_their_values_as_torch():
    same(*both(lambda L: (L.tensor([L.tensor(1.0), L.tensor(2.5)]), L.tensor([[L.tensor([1.0])]]),
                          L.tensor([L.tensor(1, dtype=L.int32), 2]), L.tensor([L.tensor(1.0, dtype=L.float64), 2.0]),
                          L.arange(np.float32(2.5)))))
    raises_same(lambda L: L.tensor([L.ones(2), L.zeros(2)]))


@pytest.mark.parametrize("shape", [(2, 8), (2, 3, 8), (2, 3, 4, 4), (1, 2, 3, 4, 4)])
def test_dropout2d_warnings_by_rank_as_torch(shape):
    """pytorch/examples mnist_rnn feeds Dropout2d a 2-D batch: torch warns and drops."""
    seen = []
    for L in LIBS:
        L.manual_seed(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = L.nn.Dropout2d(0.5)(L.ones(shape))
        seen.append((out.tolist(), [str(w.message)[:60] for w in caught]))
    assert seen[0] == seen[1]
