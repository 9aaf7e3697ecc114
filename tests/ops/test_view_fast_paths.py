"""The view ops' fast paths against torch: view/reshape with an inferred size, squeeze, permute's remembered
checks, getitem's basic keys (offset worked out only when recorded), the remembered strides of NumPy views,
cat letting NumPy check the sizes, and stack's one-dtype, one-shape path. Each case compares values, strides,
storage offsets, gradients, writes through the view, and torch's exceptions, including the edges the fast paths
hand to the general code."""
import numpy as np
import pytest

import tapegrad

import torch  # noqa: E402  (the oracle)

LIBS = (torch, tapegrad)


def _leaf(L, shape, dtype="float64"):
    n = int(np.prod(shape))
    return (L.arange(float(n), dtype=getattr(L, dtype)).reshape(shape) / 7 - 1).requires_grad_()


def _outcome(L, build):
    """Values, dtype, shape, strides, storage offset of build(L)'s outputs, and its leaves' gradients."""
    outs, leaves = build(L)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    res = [(str(o.dtype).split(".")[-1], tuple(o.shape), tuple(o.stride()), o.storage_offset(),
            o.detach().numpy().copy()) for o in outs]
    grads = []
    if any(o.requires_grad for o in outs):
        total = sum((o * L.arange(float(o.numel()), dtype=o.dtype).reshape(o.shape)).sum() for o in outs
                    if o.requires_grad)
        total.backward()
        grads = [None if leaf.grad is None else leaf.grad.numpy().copy() for leaf in leaves]
    return res, grads


def _same(build):
    (ta, ga), (tb, gb) = (_outcome(L, build) for L in LIBS)
    assert len(ta) == len(tb)
    for a, b in zip(ta, tb):
        assert a[:4] == b[:4]
        np.testing.assert_array_equal(a[4], b[4])
    assert len(ga) == len(gb)
    for a, b in zip(ga, gb):
        if a is None or b is None:
            assert a is None and b is None
        else:
            np.testing.assert_array_equal(a, b)


def _same_error(call, message=True):
    """call(L) raises the same exception type and message in both (`message=False`: the type only, where
    tapegrad's words are its own: torch's argument parser's errors)."""
    caught = []
    for L in LIBS:
        with pytest.raises(Exception) as info:
            call(L)
        caught.append(info.value)
    assert type(caught[1]) is type(caught[0]), (caught[0], caught[1])
    if message:
        assert str(caught[1]) == str(caught[0])


# -- view, reshape: the inferred size -------------------------------------------------------------------------
@pytest.mark.parametrize("sizes", [(-1, 8), (4, -1), (2, -1, 4), (-1,), (32, -1), (-1, 1, 4), (4, 8)])
@pytest.mark.parametrize("name", ["view", "reshape"])
def test_view_and_reshape_sizes(name, sizes):
    _same(lambda L: (lambda x: (getattr(x, name)(*sizes), [x]))(_leaf(L, (4, 8))))
    _same(lambda L: (lambda x: (getattr(x, name)(sizes), [x]))(_leaf(L, (4, 8))))


def test_view_chain_of_reshapes():
    def build(L):
        x = _leaf(L, (4, 8))
        y = x
        for shape in ((-1, 8), (32,), (2, -1), (8, 4), (-1,)):
            y = y.view(*shape)
        return y, [x]
    _same(build)


@pytest.mark.parametrize("sizes", [(-1, -1), (-1, 5), (-1, 0), (3, 11), (0, -1), (-1, 64), (33,)])
@pytest.mark.parametrize("name", ["view", "reshape"])
def test_view_and_reshape_size_errors(name, sizes):
    _same_error(lambda L: getattr(_leaf(L, (4, 8)), name)(*sizes))


def test_inferred_size_of_empty_tensor():
    _same_error(lambda L: L.zeros(0, 4).view(-1, 0))
    _same(lambda L: (L.zeros(0, 4).view(-1, 2), []))
    _same(lambda L: (L.zeros(0, 4).reshape(2, -1, 2), []))


def test_view_size_keyword_and_integer_tensors():
    _same(lambda L: (lambda x: (x.view(size=(-1, 4)), [x]))(_leaf(L, (4, 8))))
    _same(lambda L: (lambda x: (x.view(np.int64(8), -1), [x]))(_leaf(L, (4, 8))))
    _same(lambda L: (lambda x: (x.view(L.tensor(2), -1), [x]))(_leaf(L, (4, 8))))
    _same_error(lambda L: _leaf(L, (4, 8)).view(2.0, -1), message=False)
    _same_error(lambda L: _leaf(L, (4, 8)).view(True, -1), message=False)


def test_view_of_transposed_raises_and_reshape_copies():
    _same_error(lambda L: _leaf(L, (4, 8)).t().view(-1))
    _same(lambda L: (lambda x: (x.t().reshape(-1), [x]))(_leaf(L, (4, 8))))
    _same(lambda L: (lambda x: (x.t().view(8, 1, 4), [x]))(_leaf(L, (4, 8))))


def test_write_through_a_reshape_of_a_reshape_reaches_the_base():
    def build(L):
        x = _leaf(L, (4, 8))
        base = x * 1
        v = base.view(-1, 8).view(32)
        v.mul_(2)
        return (base, v), [x]
    _same(build)


# -- squeeze ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 8), (1, 4, 1, 8), (1,), (1, 1), ()])
def test_squeeze_all(shape):
    _same(lambda L: (lambda x: (x.squeeze(), [x]))(_leaf(L, shape)))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -4, (0, 2), (1,), [0, -1]])
def test_squeeze_dims(dim):
    _same(lambda L: (lambda x: (x.squeeze(dim), [x]))(_leaf(L, (1, 4, 1, 8))))
    _same(lambda L: (lambda x: (L.squeeze(x, dim), [x]))(_leaf(L, (1, 4, 1, 8))))


def test_squeeze_grad_fn_names():
    for dim, name in ((None, "SqueezeBackward0"), (0, "SqueezeBackward1"), ((0,), "SqueezeBackward2")):
        for L in LIBS:
            x = _leaf(L, (1, 4))
            y = x.squeeze() if dim is None else x.squeeze(dim)
            assert type(y.grad_fn).__name__ == name


@pytest.mark.parametrize("dim", [4, -5, 2.0, True])
def test_squeeze_dim_errors(dim):
    _same_error(lambda L: _leaf(L, (1, 4, 1, 8)).squeeze(dim), message=type(dim) is int)


def test_squeeze_of_0d():
    _same(lambda L: (lambda x: (x.squeeze(0), [x]))(_leaf(L, ())))
    _same(lambda L: (lambda x: (x.squeeze(-1), [x]))(_leaf(L, ())))
    _same_error(lambda L: _leaf(L, ()).squeeze(1))


# -- permutations --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dims", [(1, 0, 2), (2, 0, 1), (-1, 0, 1), (0, 1, 2), (-3, -1, -2)])
def test_permute(dims):
    for _ in range(2):  # (the second call finds its checks remembered)
        _same(lambda L: (lambda x: (x.permute(*dims), [x]))(_leaf(L, (2, 3, 4))))
        _same(lambda L: (lambda x: (x.permute(dims), [x]))(_leaf(L, (2, 3, 4))))
        _same(lambda L: (lambda x: (x.t().unsqueeze(0).permute(dims), [x]))(_leaf(L, (3, 4))))


@pytest.mark.parametrize("dims", [(0, 0, 1), (0, 1), (0, 1, 2, 3), (0, 1, 3), (0, -4, 1), (1, 0, 2.0)])
def test_permute_errors_each_time(dims):
    for _ in range(2):  # (an error is never remembered as a valid permutation)
        _same_error(lambda L: _leaf(L, (2, 3, 4)).permute(*dims), message=all(type(d) is int for d in dims))


def test_permute_same_dims_other_rank():
    _same(lambda L: (lambda x: (x.permute(1, 0), [x]))(_leaf(L, (2, 3))))
    _same_error(lambda L: _leaf(L, (2, 3, 4)).permute(1, 0))


@pytest.mark.parametrize("shape", [(4, 8), (8,), ()])
def test_t_and_transpose(shape):
    _same(lambda L: (lambda x: (x.t(), [x]))(_leaf(L, shape)))
    _same(lambda L: (lambda x: (x.t().t(), [x]))(_leaf(L, shape)))
    if shape:
        _same(lambda L: (lambda x: (x.transpose(0, -1), [x]))(_leaf(L, shape)))
    _same_error(lambda L: _leaf(L, shape).transpose(0, 2))


def test_t_of_3d_raises():
    _same_error(lambda L: _leaf(L, (2, 3, 4)).t())


# -- strides of NumPy views, remembered -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_strides_of_views_of_strided_tensors(dtype):
    # (the same views of same shapes in other dtypes and layouts: a remembered answer must fit each)
    for _ in range(2):
        _same(lambda L: (lambda x: ((x.t()[1:3], x.t()[:, 1], x[:, 1:3].t(), x.t()[2], x.t()[:, :2]), [x]))(
            _leaf(L, (4, 6), dtype)))
        _same(lambda L: (lambda x: ((x[1:3], x[:, 1], x.permute(2, 0, 1)[1], x.transpose(0, 2)[:, 1:]), [x]))(
            _leaf(L, (3, 4, 5), dtype)))


# -- getitem's basic keys ------------------------------------------------------------------------------------------
KEYS = [0, -1, 2, slice(1, 3), slice(None, 2), slice(2, None), slice(None), slice(0, 10), slice(1, 3, 1),
        (slice(None), 1), (slice(None), slice(1, 3)), (1, slice(None), 2), (slice(None), slice(None)),
        (slice(None), -1), (0, 0, 0), (slice(1, 2), slice(None), slice(None, 1)), (slice(0, 0),)]


@pytest.mark.parametrize("key", KEYS, ids=repr)
@pytest.mark.parametrize("recorded", [True, False])
def test_getitem_basic_keys(key, recorded):
    def build(L):
        x = _leaf(L, (3, 4, 5))
        if not recorded:
            x = x.detach()
        return x[key], [x] if recorded else []
    _same(build)


def test_getitem_with_0d_integer_tensor():
    _same(lambda L: (lambda x: (x[L.tensor(1), 2:], [x]))(_leaf(L, (3, 4))))
    _same(lambda L: (lambda x: (x[:, L.tensor(-1)], [x]))(_leaf(L, (3, 4))))


@pytest.mark.parametrize("key", [3, -4, (0, 4), (slice(None), 9), (0, 0, 0)], ids=repr)
def test_getitem_out_of_range(key):
    _same_error(lambda L: _leaf(L, (3, 4))[key])


def test_write_through_getitem_views():
    def build(L):
        x = _leaf(L, (3, 4))
        base = x * 1
        row, col, part = base[1], base[:, 2], base[:, 1:3]
        row.add_(10)
        return (base, row, col, part), [x]
    _same(build)


def test_getitem_chain_unsqueeze_select():
    def build(L):
        x = _leaf(L, (4, 6))
        y = x
        for _ in range(5):
            y = y.unsqueeze(0)[0]
        return y[1:][:, 2:], [x]
    _same(build)


# -- cat: NumPy checks the sizes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_cat_fast_path(dim):
    _same(lambda L: (lambda xs: (L.cat(xs, dim), xs))([_leaf(L, (3, 2)) for _ in range(4)]))
    _same(lambda L: (lambda xs: (L.cat(tuple(xs), dim=dim), xs))([_leaf(L, (3, 2), "float32") for _ in range(2)]))


def test_cat_unequal_sizes_along_dim():
    _same(lambda L: (lambda xs: (L.cat(xs, 1), xs))([_leaf(L, (3, n)) for n in (1, 4, 2)]))


@pytest.mark.parametrize("shapes,dim", [([(3, 2), (4, 2)], 1), ([(3, 2), (3, 2, 1)], 0), ([(3, 2), (2,)], 0),
                                        ([(3, 2), ()], 0), ([(), ()], 0), ([(3, 2), (3, 3)], 0),
                                        ([(2, 3, 4), (2, 5, 4), (2, 3, 5)], 1), ([(3, 2)], 2)])
def test_cat_errors(shapes, dim):
    _same_error(lambda L: L.cat([_leaf(L, s) for s in shapes], dim))


def test_cat_legacy_empty_and_promotion():
    _same(lambda L: (lambda a, b: (L.cat([a, L.zeros(0), b], 0), [a, b]))(_leaf(L, (2, 3)), _leaf(L, (1, 3))))
    _same(lambda L: (lambda a: (L.cat([L.zeros(0), a], 0), [a]))(_leaf(L, (3,))))
    _same(lambda L: (lambda a, b: (L.cat([a, b], 1), [a, b]))(_leaf(L, (2, 3), "float32"), _leaf(L, (2, 1))))
    _same(lambda L: (L.cat([L.arange(3), L.arange(2)]), []))
    _same(lambda L: (L.cat([L.arange(3), L.arange(2.0)]), []))


def test_cat_meta():
    for L in LIBS:
        out = L.cat([L.empty(2, 3, device="meta"), L.empty(2, 4, device="meta")], 1)
        assert out.is_meta and tuple(out.shape) == (2, 7)
    _same_error(lambda L: L.cat([L.empty(2, 3, device="meta"), L.zeros(2, 3)], 0))


# -- stack: one dtype, one shape -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack_fast_path(dim):
    _same(lambda L: (lambda xs: (L.stack(xs, dim), xs))([_leaf(L, (3, 2)) for _ in range(4)]))
    _same(lambda L: (lambda xs: (L.stack(tuple(xs), dim=dim), xs))([_leaf(L, (3, 2), "float32") for _ in range(2)]))


def test_stack_of_0d_integers_and_mixed_dtypes():
    _same(lambda L: (lambda xs: (L.stack(xs), xs))([_leaf(L, ()) for _ in range(3)]))
    _same(lambda L: (L.stack([L.arange(3), L.arange(3)], 1), []))
    _same(lambda L: (lambda a, b: (L.stack([a, b]), [a, b]))(_leaf(L, (2,), "float32"), _leaf(L, (2,))))


@pytest.mark.parametrize("shapes,dim", [([(3, 2), (2, 3)], 0), ([(3, 2), (3, 2)], 3), ([(3, 2), (3, 2)], -4),
                                        ([(3,), (3, 1)], 0), ([(), (1,)], 0)])
def test_stack_errors(shapes, dim):
    _same_error(lambda L: L.stack([_leaf(L, s) for s in shapes], dim))


def test_stack_empty_list():
    _same_error(lambda L: L.stack([]))


def test_stack_meta():
    for L in LIBS:
        out = L.stack([L.empty(2, 3, device="meta"), L.empty(2, 3, device="meta")], 1)
        assert out.is_meta and tuple(out.shape) == (2, 2, 3)
    _same_error(lambda L: L.stack([L.empty(2, 3, device="meta"), L.zeros(2, 3)], 0))


def test_stack_records_only_with_grad():
    for L in LIBS:
        xs = [_leaf(L, (2,)) for _ in range(2)]
        with L.no_grad():
            assert not L.stack(xs).requires_grad
        assert type(L.stack(xs).grad_fn).__name__ == "StackBackward0"
        assert type(L.cat(xs).grad_fn).__name__ == "CatBackward0"
