"""Round 9 (torch's OpInfo samples): views, copies, conversions and factories against torch.

as_strided and its _scatter/_copy forms, the *_copy forms of the views, unsafe_chunk/split, fill, constant_pad_nd,
empty_permuted, resize_as_, nonzero_static; Tensor.float() & co. with memory_format; linspace/logspace with 0-d tensor
bounds; arange's sizes and errors; torch's messages for narrow, narrow_copy, movedim, unbind, reshape/view, the stacks,
hsplit/vsplit, and sum_to_size's dtype."""
import numpy as np
import pytest

import tapegrad

import torch  # noqa: E402  (the oracle: CI requires it)

LIBS = (torch, tapegrad)


def _arange(L, shape, dtype="float64"):
    dt = getattr(L, dtype)
    x = L.arange(float(np.prod(shape))).reshape(shape).to(dt)
    return x.requires_grad_() if dtype.startswith("float") else x


def _outcome(L, build):
    """Values, strides, storage offset and gradients (of sum(out * arange)) of build(L) -> (outputs, leaves)."""
    outs, leaves = build(L)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    res = [(str(o.dtype).split(".")[-1], tuple(o.shape), tuple(o.stride()), o.storage_offset(),
            o.detach().numpy().copy()) for o in outs]
    grads = []
    if any(o.requires_grad for o in outs):
        total = sum((o * L.arange(float(o.numel()), dtype=o.dtype).reshape(o.shape)).sum() for o in outs
                    if o.requires_grad)
        total.backward()
        grads = [leaf.grad.numpy().copy() for leaf in leaves]
    return res, grads


def _same(build):
    (ta, ga), (tb, gb) = (_outcome(L, build) for L in LIBS)
    assert len(ta) == len(tb)
    for a, b in zip(ta, tb):
        assert a[:4] == b[:4]
        np.testing.assert_allclose(a[4], b[4], rtol=1e-6)
    assert len(ga) == len(gb)
    for a, b in zip(ga, gb):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def _raises_same(fn):
    got = []
    for L in LIBS:
        with pytest.raises(Exception) as info:
            fn(L)
        got.append((type(info.value), str(info.value)))
    assert got[0] == got[1]


AS_STRIDED = {
    "1-d": lambda L: (lambda x: (x.as_strided((1,), (1,), 0), [x]))(_arange(L, (3, 3))),
    "2x2": lambda L: (lambda x: (x.as_strided((2, 2), (1, 2)), [x]))(_arange(L, (3, 3))),
    "offset": lambda L: (lambda x: (L.as_strided(x, (2, 2), (1, 2), 1), [x]))(_arange(L, (3, 3))),
    "overlapping": lambda L: (lambda x: (x.as_strided((3, 3), (1, 0)), [x]))(_arange(L, (3, 3))),
    "4-d": lambda L: (lambda x: (x.as_strided((2, 1, 1, 2), (1, 7, 7, 1)), [x]))(_arange(L, (16,))),
    "float32": lambda L: (lambda x: (x.as_strided((2, 2), (2, 1), 3), [x]))(_arange(L, (9,), "float32")),
    "int64": lambda L: (_arange(L, (9,), "int64").as_strided((2, 2), (2, 1), 3), []),
    "of a slice, storage outside it": lambda L: (lambda b: (b[2:8].as_strided((3, 2), (1, 2), 0), [b]))(
        _arange(L, (12,))),
    "of a slice, its own offset": lambda L: (lambda b: (b[2:8].as_strided((3, 2), (1, 2)), [b]))(_arange(L, (12,))),
    "of a view's rows": lambda L: (lambda b: (L.as_strided(b.view(3, 4)[1:], (2, 2), (4, 1)).pow(2), [b]))(
        _arange(L, (12,))),
    "of a transpose": lambda L: (lambda b: (b.t().as_strided((2, 2), (1, 3)), [b]))(_arange(L, (3, 3))),
    "of channels_last": lambda L: (lambda b: (b.contiguous(memory_format=L.channels_last).as_strided((4,), (1,)),
                                              [b]))(_arange(L, (1, 2, 3, 4))),
    "empty": lambda L: (lambda x: (x.as_strided((0, 3), (3, 1), 4), [x]))(_arange(L, (6,))),
    "copy": lambda L: (lambda b: (L.as_strided_copy(b.t(), (2, 2), (1, 2), 1), [b]))(_arange(L, (3, 3))),
    "scatter": lambda L: (L.as_strided_scatter(_arange(L, (3, 3), "int64"), _arange(L, (2, 2), "int64"), (2, 2),
                                               (1, 2), 1), []),
    "scatter of a transpose": lambda L: (L.as_strided_scatter(_arange(L, (3, 3), "int64").t(),
                                                              _arange(L, (2, 2), "int64"), (2, 2), (1, 2), 1), []),
    "scatter, src's gradient": lambda L: (lambda s: (L.as_strided_scatter(L.zeros(3, 3, dtype=L.float64), s, (2, 2),
                                                                           (1, 2), 1), [s]))(_arange(L, (2, 2))),
}


@pytest.mark.parametrize("name", AS_STRIDED)
def test_as_strided_as_torch(name):
    _same(AS_STRIDED[name])


def test_as_strided_is_a_view_of_the_storage():
    for L in LIBS:
        b = L.zeros(6)
        b.as_strided((2,), (2,), 1).add_(1)
        assert b.tolist() == [0, 1, 0, 1, 0, 0]


def test_as_strided_scatter_gradient_of_input():
    """torch's AsStridedScatterBackward0 gives input the gradient of the scattered positions (its gradcheck fails:
    OpInfo skips it); tapegrad's is the derivative: zero where src was written, one elsewhere."""
    a = tapegrad.randn(3, 3, dtype=tapegrad.float64, requires_grad=True)
    s = tapegrad.randn(2, 2, dtype=tapegrad.float64, requires_grad=True)
    assert tapegrad.autograd.gradcheck(lambda a, s: tapegrad.as_strided_scatter(a, s, (2, 2), (1, 2), 1), (a, s))


AS_STRIDED_ERRORS = {
    "lengths": lambda L: L.arange(6.).as_strided((2, 3), (1,)),
    "negative size": lambda L: L.arange(6.).as_strided((-1, 3), (1, 1)),
    "negative offset": lambda L: L.arange(6.).as_strided((2, 3), (3, 1), -1),
    "out of bounds": lambda L: L.arange(6.).as_strided((2, 3), (3, 1), 1),
    "size an int": lambda L: L.arange(6.).as_strided(2, 3),
    "offset a float": lambda L: L.arange(6.).as_strided([2], [1], 1.5),
    "negative stride": lambda L: L.arange(6.).as_strided((2, 2), (-1, 1)),
    "of an expand": lambda L: L.arange(3.).expand(2, 3).as_strided((4,), (1,)),
    "scatter's src": lambda L: L.as_strided_scatter(L.zeros(3, 3), L.ones(3, 2), (2, 2), (1, 2), 1),
}


@pytest.mark.parametrize("name", AS_STRIDED_ERRORS)
def test_as_strided_errors_as_torch(name):
    _raises_same(AS_STRIDED_ERRORS[name])


COPIES = [("alias_copy", ()), ("view_copy", ((6, 4),)), ("view_copy", ((-1,),)), ("expand_copy", ((2, 2, 3, 4),)),
          ("permute_copy", ((2, 0, 1),)), ("transpose_copy", (0, 2)), ("unsqueeze_copy", (1,)), ("squeeze_copy", ()),
          ("diagonal_copy", ()), ("diagonal_copy", (1, 1, 2)), ("select_copy", (1, 2)), ("slice_copy", ()),
          ("slice_copy", (2, 1, 3)), ("slice_copy", (1, None, None, 2)), ("slice_copy", (2, -3, 100)),
          ("unfold_copy", (2, 2, 1)), ("unbind_copy", (1,)), ("split_copy", (2, 2)),
          ("split_with_sizes_copy", ([1, 2], 1)), ("unsafe_chunk", (2, 1)), ("unsafe_split", (2, 2)),
          ("unsafe_split_with_sizes", ([1, 2], 1))]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("name,args", COPIES, ids=[f"{n}{a}" for n, a in COPIES])
def test_view_copies_as_torch(name, args, dtype):
    def build(L):
        x = _arange(L, (2, 3, 4), dtype)
        return getattr(L, name)(x, *args), [x] if x.requires_grad else []
    _same(build)
    if name.endswith("_copy"):  # a tensor of its own: writing it leaves the input alone
        x = _arange(tapegrad, (2, 3, 4), dtype).detach()
        out = getattr(tapegrad, name)(x, *args)
        (out[0] if isinstance(out, tuple) else out).add_(1)
        assert x.tolist() == _arange(tapegrad, (2, 3, 4), dtype).tolist()


def test_t_copy_and_out():
    for L in LIBS:
        assert L.t_copy(L.ones(2, 3)).stride() == (2, 1)
        o = L.empty(0)
        assert L.view_copy(L.arange(6.).reshape(2, 3), (3, 2), out=o) is o and tuple(o.shape) == (3, 2)
    _raises_same(lambda L: L.view_copy(L.ones(2, 3), 6))


def _fill(L, value, dtype="float64"):
    x = _arange(L, (2, 3), dtype)
    v = value(L)
    return L.fill(x, v), [x] + ([v] if isinstance(v, L.Tensor) and v.requires_grad else [])


FILL = {
    "number": lambda L: _fill(L, lambda L: 3.),
    "0-d tensor": lambda L: _fill(L, lambda L: L.tensor(2., dtype=L.float64, requires_grad=True)),
    "0-d float32 tensor": lambda L: _fill(L, lambda L: L.tensor(2., requires_grad=True)),
    "int input": lambda L: _fill(L, lambda L: 3.7, "int64"),
    "pad": lambda L: (lambda x: (L.constant_pad_nd(x, [1, 1], 2.), [x]))(_arange(L, (2, 3))),
    "pad negative": lambda L: (lambda x: (L.constant_pad_nd(x, [-1, -1, 1, 0]), [x]))(_arange(L, (2, 3))),
    "pad int": lambda L: (L.constant_pad_nd(_arange(L, (2, 3), "int64"), [1, 1], 2.5), []),
    "nonzero_static pads": lambda L: (L.nonzero_static(L.tensor([[1, 0], [3, 2]]), size=4), []),
    "nonzero_static cuts": lambda L: (L.tensor([[1, 0], [3, 2]]).nonzero_static(size=1, fill_value=7), []),
    "nonzero_static 0-d": lambda L: (L.nonzero_static(L.tensor(1.), size=2), []),
}


@pytest.mark.parametrize("name", FILL)
def test_fill_pad_nonzero_static_as_torch(name):
    _same(FILL[name])


ERRORS = {
    "fill with a 1-d value": lambda L: L.fill(L.ones(2), L.ones(2)),
    "pad odd": lambda L: L.constant_pad_nd(L.ones(2, 2), [1]),
    "pad long": lambda L: L.constant_pad_nd(L.ones(2, 2), [1] * 6),
    "nonzero_static negative": lambda L: L.nonzero_static(L.tensor([1]), size=-1),
    "empty_permuted lengths": lambda L: L.empty_permuted((2, 3, 4), (0, 2)),
    "empty_permuted twice": lambda L: L.empty_permuted((2, 3), (0, 0)),
    "empty_permuted range": lambda L: L.empty_permuted((2, 3), (0, 2)),
    "empty_permuted negative": lambda L: L.empty_permuted((2, -1), (1, 0)),
    "linspace float steps": lambda L: L.linspace(0, 3, 1.0),
    "linspace bool steps": lambda L: L.linspace(0, 3, True),
    "linspace 1-d": lambda L: L.linspace(L.tensor([1, 1]), L.tensor([3, 3]), 1),
    "logspace float steps": lambda L: L.logspace(0, 3, 1.0),
    "logspace 1-d": lambda L: L.logspace(L.tensor([1, 1]), L.tensor([3, 3]), 1),
    "arange step sign": lambda L: L.arange(0, -3, 2),
    "arange step sign 2": lambda L: L.arange(0, 3, -2),
    "arange step sign 3": lambda L: L.arange(1549556900, 1549556828, 1989724),
    "arange truncated bounds": lambda L: L.arange(0.5, -0.2, dtype=L.int64),
    "arange inf": lambda L: L.arange(0, float("inf"), 2),
    "arange -inf": lambda L: L.arange(float("-inf"), 1, 2),
    "arange nan": lambda L: L.arange(0.5, float("nan")),
    "arange zero step": lambda L: L.arange(0, 64, 0),
    "arange truncated step": lambda L: L.arange(0, 64, 0.5, dtype=L.int64),
    "narrow tensor start": lambda L: L.ones(5, 5).narrow(0, L.tensor([[0]]), 1),
    "narrow float start": lambda L: L.ones(5, 5).narrow(0, L.tensor(1.), 1),
    "narrow_copy 0-d": lambda L: L.narrow_copy(L.tensor(1.), 0, 0, 1),
    "narrow_copy dim": lambda L: L.narrow_copy(L.ones(5, 5, 10), 3, 0, 1),
    "narrow_copy start": lambda L: L.narrow_copy(L.ones(5, 5, 10), 2, 11, 0),
    "narrow_copy negative start": lambda L: L.narrow_copy(L.ones(5, 5, 10), 2, -11, 0),
    "narrow_copy length": lambda L: L.narrow_copy(L.ones(5, 5, 10), 2, 0, -1),
    "movedim lengths": lambda L: L.movedim(L.ones(2, 3, 4, 5, 6), (3, -3), (1, 0, 4)),
    "movedim source": lambda L: L.movedim(L.ones(2, 3, 4, 5, 6), (0, 4, -5), (1, 2, 3)),
    "movedim destination": lambda L: L.movedim(L.ones(2, 3, 4, 5, 6), (1, 2, 3), (0, 4, -5)),
    "unbind 0-d": lambda L: L.tensor(1.).unbind(0),
    "reshape 0 elements": lambda L: L.ones(0, 5).reshape(0, -1),
    "view 0 elements": lambda L: L.ones(0, 5).view(-1, 0),
    "dstack empty": lambda L: L.dstack([]),
    "hstack empty": lambda L: L.hstack(()),
    "vstack empty": lambda L: L.vstack([]),
    "row_stack empty": lambda L: L.row_stack([]),
    "column_stack empty": lambda L: L.column_stack([]),
    "hsplit str": lambda L: L.hsplit(L.ones(5, 5, 5), "abc"),
    "vsplit float": lambda L: L.vsplit(L.ones(5, 5, 5), 1.5),
    "dsplit method str": lambda L: L.ones(5, 5, 5).dsplit("abc"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_as_torch(name):
    _raises_same(ERRORS[name])


def test_hash_tensor_refused_clearly():
    with pytest.raises(NotImplementedError, match="hash_tensor"):
        tapegrad.hash_tensor(tapegrad.ones(2))
    with pytest.raises(NotImplementedError, match="hash_tensor"):
        tapegrad.ones(2).hash_tensor()


def test_empty_permuted_and_resize_as_():
    for shape, order in [((2, 3), (1, 0)), ((2, 3, 4, 5), (0, 2, 3, 1)), ((2, 0, 4), (2, 1, 0)), ((), ())]:
        got = [(tuple(L.empty_permuted(shape, order).shape), L.empty_permuted(shape, order).stride()) for L in LIBS]
        assert got[0] == got[1]
    t = tapegrad.empty_permuted((2, 3), (1, 0), dtype=tapegrad.float64, requires_grad=True)
    assert t.dtype == tapegrad.float64 and t.requires_grad
    for L in LIBS:
        a = L.ones(2, 3)
        assert L.resize_as_(a, L.zeros(4)) is a and tuple(a.shape) == (4,)


@pytest.mark.parametrize("method", ["float", "double", "half", "bfloat16", "int", "long", "bool", "byte", "char",
                                    "short"])
def test_conversions_take_memory_format(method):
    got = []
    for L in LIBS:
        x = L.arange(6.).reshape(2, 3).t()
        row = []
        for fmt in (L.contiguous_format, L.preserve_format):
            y = getattr(x, method)(memory_format=fmt)
            row.append((str(y.dtype).split(".")[-1], y.stride(), y is x))
        same = L.ones(2, dtype=getattr(L, {"byte": "uint8", "char": "int8", "short": "int16"}.get(method, "float32")))
        row.append(getattr(same, method)() is same)
        got.append(row)
    assert got[0] == got[1]


def _values(build):
    got = []
    for L in LIBS:
        r = build(L)
        got.append((str(r.dtype).split(".")[-1], r.tolist()))
    assert got[0][0] == got[1][0]
    np.testing.assert_allclose(np.asarray(got[0][1], dtype=float), np.asarray(got[1][1], dtype=float), rtol=1e-6)


FACTORIES = {
    "linspace 0-d end": lambda L: L.linspace(-2.0, L.tensor(-3), 5),
    "linspace 0-d both": lambda L: L.linspace(L.tensor(-2), L.tensor(-3), 5),
    "linspace int64": lambda L: L.linspace(L.tensor(-2.), 3, 5, dtype=L.int64),
    "linspace float64 start": lambda L: L.linspace(L.tensor(-2., dtype=L.float64), 3, 5),
    "linspace tensor steps": lambda L: L.linspace(0, 3, L.tensor(4)),
    "logspace 0-d": lambda L: L.logspace(L.tensor(-2), L.tensor(-3), 5, base=2),
    "arange int64 float bounds": lambda L: L.arange(0.0, -8.000001, -4.0, dtype=L.int64),
    "arange int64 float bounds 2": lambda L: L.arange(1.0, 5.000001, 2.0, dtype=L.int64),
    "arange int64 truncated": lambda L: L.arange(0.5, 3.7, 1.3, dtype=L.int64),
    "arange int32 float bounds": lambda L: L.arange(1.0, 5.000001, 2.0, dtype=L.int32),
    "arange int32 truncated step": lambda L: L.arange(0.5, 3.2, 0.4, dtype=L.int32),
    "arange uint8 wraps": lambda L: L.arange(-0.5, -3.7, -1.3, dtype=L.uint8),
    "arange float32": lambda L: L.arange(0.5, 3.7, 1.3),
    "arange 0-d tensors": lambda L: L.arange(L.tensor(1), L.tensor(5.)),
    "arange empty": lambda L: L.arange(3, 3),
    "sum_to_size bool to ()": lambda L: L.tensor(True).sum_to_size(()),
    "sum_to_size bool": lambda L: L.tensor([True, False]).sum_to_size((1,)),
    "sum_to_size bool unchanged": lambda L: L.tensor([[True, False]]).sum_to_size((1, 2)),
    "sum_to_size uint8": lambda L: L.tensor([1, 2], dtype=L.uint8).sum_to_size(1),
    "sum_to_size int32 unchanged": lambda L: L.tensor([1, 2], dtype=L.int32).sum_to_size((2,)),
}


@pytest.mark.parametrize("name", FACTORIES)
def test_factories_and_sum_to_size_as_torch(name):
    _values(FACTORIES[name])
