"""torch functions and Tensor methods added in tapegrad/ops/{comparison,windows,histogram,diagonals,tensor_info}.py,
tapegrad/creation.py (scalar_tensor, asarray, frombuffer, empty_strided, memory formats of the *_like factories),
tapegrad/tensor.py (memory formats) and tapegrad/testing: each case runs in torch 2.13 and in tapegrad and must give
the same repr (values, dtype, grad_fn-free flags) or the same exception type and message."""
import array
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg


def run(L, f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return repr(f(L))
        except Exception as e:  # noqa: BLE001 (the exception is what is compared)
            return f"{type(e).__name__} | {e}"


def ident(L, fn):
    t = L.randn(3)
    return fn(t) is t


TESTING_CASES = [
 lambda L: L.testing.assert_close(L.tensor([1.,2,3]), L.tensor([1.,2.1,3])),
 lambda L: L.testing.assert_close(L.tensor([1.,2,3]), L.tensor([1.,2.1,3.5])),
 lambda L: L.testing.assert_close(L.tensor([1,2,3]), L.tensor([1,4,3])),
 lambda L: L.testing.assert_close(L.tensor([1.,2,3]), L.tensor([1.,2,3]).double()),
 lambda L: L.testing.assert_close(L.tensor([1.,2,3]), L.tensor([1.,2])),
 lambda L: L.testing.assert_close(L.tensor([1.,float('nan')]), L.tensor([1.,float('nan')])),
 lambda L: L.testing.assert_close(L.tensor([1.,float('nan')]), L.tensor([1.,float('nan')]), equal_nan=True),
 lambda L: L.testing.assert_close(L.tensor([1.,2,3]), L.tensor([1.,2.1,3]), msg='custom'),
 lambda L: L.testing.assert_close(1.0, 1.1),
 lambda L: L.testing.assert_close(1, 2),
 lambda L: L.testing.assert_close(1, 1.0),
 lambda L: L.testing.assert_close([L.tensor(1.)], [L.tensor(2.)]),
 lambda L: L.testing.assert_close({'a':L.tensor(1.)}, {'a':L.tensor(2.)}),
 lambda L: L.testing.assert_close(L.tensor(1.), 1.0),
 lambda L: L.testing.assert_close(L.tensor([1.]), L.tensor([1.]), rtol=1e-3),
 lambda L: L.testing.assert_close(L.tensor([[1.,2],[3,4]]), L.tensor([[1.,2],[3,5]])),
 lambda L: L.testing.assert_close([1,2], [1,2,3]),
 lambda L: L.testing.assert_close(L.tensor([True]), L.tensor([False])),
 lambda L: L.testing.assert_close('a', 'a'),
 lambda L: L.testing.assert_close(L.tensor([1.,2]), L.tensor([1.,3]), msg=lambda m: 'X'+m),
 lambda L: L.testing.assert_close(np.array([1.]), np.array([1.1])),
 lambda L: L.testing.assert_close(None, 1),
 lambda L: L.testing.assert_close({'a':1}, {'b':1}),
 lambda L: L.testing.assert_close(L.nn.Parameter(L.ones(1)), L.ones(1), allow_subclasses=False),
 lambda L: L.testing.assert_close(L.ones(2,3).t(), L.ones(3,2), check_stride=True),
 lambda L: L.testing.assert_close(L.tensor([1., 3]), L.tensor([0., 3])),
 lambda L: L.testing.assert_close(L.tensor([1.,2]), L.tensor([1.,2.5]).double(), check_dtype=False),
 lambda L: L.testing.assert_close([L.tensor([1.]), [L.tensor(1.), {'x': L.tensor(3.)}]], [L.tensor([1.]), [L.tensor(1.), {'x': L.tensor(4.)}]]),
 lambda L: L.testing.assert_close(L.tensor([1,5]), L.tensor([2,5]), rtol=0.5, atol=0),
 lambda L: L.testing.assert_allclose(L.tensor([1.,2]), [1., 2.0001]),
 lambda L: L.testing.assert_allclose(L.tensor([1.,2]), [1., 2.01]),
 lambda L: L.testing.assert_close(L.tensor([1.,float('inf')]), L.tensor([1.,float('inf')])),
 lambda L: L.testing.assert_close(L.tensor([1.,float('inf')]), L.tensor([1.,-float('inf')])),
 lambda L: L.testing.assert_close(L.tensor([1.,2]), L.tensor([1.,2]).requires_grad_()),
]

FUNCTION_CASES = [
 lambda L: L.isclose(L.tensor([1.,2.,float('nan')]), L.tensor([1.,2.00001,float('nan')])),
 lambda L: L.isclose(L.tensor([1.,2.,float('nan')]), L.tensor([1.,2.00001,float('nan')]), equal_nan=True),
 lambda L: L.isclose(L.tensor([1.,2.]), L.tensor([1.,2.]).double()),
 lambda L: L.isclose(L.tensor([1.,2.]), 1.0),
 lambda L: L.isclose(L.tensor([1.,2.]), L.tensor([1.,2.]), rtol=-1),
 lambda L: L.isclose(L.tensor([1,2]), L.tensor([1,3]), rtol=0.6),
 lambda L: L.isclose(L.tensor([1,2]), L.tensor([1,3])),
 lambda L: L.tensor([1.,2]).isclose(L.tensor([[1.],[3]])),
 lambda L: L.isclose(L.tensor([1.,2]), L.tensor([1.,2, 3])),
 lambda L: L.isclose(L.tensor([1.,float('inf'), -float('inf')]), L.tensor([1.,float('inf'), float('inf')])),
 lambda L: L.isin(L.tensor([1,2,3]), L.tensor([2,5])),
 lambda L: L.isin(L.tensor([1,2,3]), 2),
 lambda L: L.isin(2, L.tensor([1,2,3])),
 lambda L: L.isin(2.0, L.tensor([1,2,3])),
 lambda L: L.isin(L.tensor([1.,2]), L.tensor([2,3])),
 lambda L: L.isin(L.tensor([1.,2]), L.tensor([True])),
 lambda L: L.isin(L.tensor([1.,float('nan')]), L.tensor([float('nan')])),
 lambda L: L.isin(L.tensor([[1,2],[3,4]]), L.tensor([2,5]), invert=True),
 lambda L: L.isin(L.tensor([1,2,3]), L.tensor([2,5]), assume_unique=True),
 lambda L: L.isin(2, 3),
 lambda L: L.unravel_index(L.tensor([4,1]),(2,3)),
 lambda L: L.unravel_index(L.tensor(5),L.Size([2,3])),
 lambda L: L.unravel_index(L.tensor([6, -1, -7]),(2,3)),
 lambda L: L.unravel_index(L.tensor([1.]),(2,3)),
 lambda L: L.unravel_index(L.tensor([1]),(2,-3)),
 lambda L: L.unravel_index(L.tensor([1]),()),
 lambda L: L.unravel_index(L.tensor([0]),(0,)),
 lambda L: L.unravel_index(L.tensor([1]),5),
 lambda L: L.unravel_index(L.tensor([[1, 2]], dtype=L.int32),(5, 1)),
 lambda L: L.unravel_index(L.tensor([True]),(5,)),
 lambda L: L.unravel_index(L.tensor([1]),(2.0,)),
 lambda L: L.hann_window(-1), lambda L: L.hann_window(0), lambda L: L.hann_window(1),
 lambda L: L.hann_window(3, dtype=L.int64), lambda L: L.hann_window(2.5),
 lambda L: L.hann_window(5), lambda L: L.hann_window(5, False, dtype=L.float64),
 lambda L: L.hamming_window(6), lambda L: L.hamming_window(4, False, 0.5), lambda L: L.hamming_window(4, True, 0.5, 0.3, dtype=L.float64),
 lambda L: L.blackman_window(7), lambda L: L.blackman_window(4, dtype=L.float64),
 lambda L: L.bartlett_window(5, requires_grad=True), lambda L: L.bartlett_window(6, periodic=False),
 lambda L: L.kaiser_window(6), lambda L: L.kaiser_window(5, False, 5.0, dtype=L.float64), lambda L: L.kaiser_window(1),
 lambda L: L.kaiser_window(3, dtype=L.int64),
 lambda L: L.scalar_tensor(3), lambda L: L.scalar_tensor(True), lambda L: L.scalar_tensor(3, dtype=L.int64),
 lambda L: L.scalar_tensor(2.5, dtype=L.float64, requires_grad=True), lambda L: L.scalar_tensor('a'),
 lambda L: L.diag_embed(L.tensor([[1.,2],[3,4]])), lambda L: L.diag_embed(L.tensor([1.,2]), 1),
 lambda L: L.diag_embed(L.tensor([1,2]), offset=-1, dim1=1, dim2=0),
 lambda L: L.diag_embed(L.arange(6.).reshape(2,3), dim1=0, dim2=2),
 lambda L: L.diag_embed(L.randn(2,3), dim1=0, dim2=0), lambda L: L.diag_embed(L.randn(2,3), dim1=5),
 lambda L: L.tensor([1.,2]).diag_embed(),
 lambda L: L.ones(3).fill_diagonal_(2), lambda L: L.ones(2,3,4).fill_diagonal_(2),
 lambda L: L.ones(7,3).fill_diagonal_(2, wrap=True), lambda L: L.ones(7,3).fill_diagonal_(2),
 lambda L: L.ones(3,7).fill_diagonal_(2, wrap=True),
 lambda L: L.ones(2,2,2).fill_diagonal_(2), lambda L: L.ones(3,3,dtype=L.long).fill_diagonal_(2.5),
 lambda L: L.ones(3,3,requires_grad=True).fill_diagonal_(0),
 lambda L: L.histogram(L.tensor([1.,2,1,4,2.5]), 3),
 lambda L: L.tensor([1.,2,1,4,2.5]).histogram(L.tensor([0.,2,5]), weight=L.ones(5), density=True),
 lambda L: L.histogram(L.tensor([1,2]), 3), lambda L: L.histogram(L.tensor([1.,2]), 0),
 lambda L: L.histogram(L.tensor([1.,2,1,4,2.5]), 3, range=(2,1)),
 lambda L: L.histogram(L.tensor([1.,2,1,4,2.5]), 3, range=(1,1)),
 lambda L: L.histogram(L.tensor([2.,2.]), 3),
 lambda L: L.histogram(L.tensor([]), 2),
 lambda L: L.histogram(L.tensor([1.,2,1,4,2.5]), 3, weight=L.ones(4)),
 lambda L: L.histogram(L.tensor([1.,2,1,4,2.5]), 3, weight=L.ones(5).double()),
 lambda L: L.histogram(L.tensor([1.,2]), L.tensor([[0.,1]])),
 lambda L: L.histogram(L.tensor([1.,2]), L.tensor([0.])),
 lambda L: L.histogram(L.tensor([1.,2]), L.tensor([0.,1]).double()),
 lambda L: L.histogram(L.tensor([1.,2]), L.tensor([3.,1])),
 lambda L: L.histogram(L.tensor([1., float('nan')]), 2),
 lambda L: L.histogram(L.tensor([1., float('inf')]), 2),
 lambda L: L.histogram(L.tensor([[1., 5],[3, 2]]).double(), 4, range=(0., 4.), density=True),
 lambda L: L.histogramdd(L.tensor([[0.,1],[1,0],[2,2]]), bins=[2,2]),
 lambda L: L.histogramdd(L.tensor([[0.,1],[1,0],[2,2]]), bins=2, range=[0.,2,0,2]),
 lambda L: L.histogramdd(L.tensor([[0.,1],[1,0],[2,2]]), bins=[L.tensor([0.,1,2]), L.tensor([0.,2])]),
 lambda L: L.histogramdd(L.tensor([[0.,1],[1,0],[2,2]]), bins=[2,3], weight=L.tensor([1.,2,3]), density=True),
 lambda L: L.histogramdd(L.tensor([0.,1,2]), bins=2),
 lambda L: L.histogramdd(L.tensor([[0.,1],[1,0],[2,2]]), bins=[2,3,4]),
 lambda L: L.histogramdd(L.tensor([[0.,1],[1,0],[2,2]]), bins=2, range=[0.,1.]),
]

TENSOR_CASES = [
 lambda L: ident(L, lambda t: t.conj()), lambda L: ident(L, L.conj), lambda L: ident(L, L.resolve_conj),
 lambda L: ident(L, lambda t: t.resolve_neg()), lambda L: ident(L, L.conj_physical), lambda L: ident(L, L.conj_physical_),
 lambda L: ident(L, lambda t: t.conj_physical_()),
 lambda L: (L.is_conj(L.ones(2)), L.ones(2).is_neg(), L.is_neg(L.ones(2)), L.ones(1).is_conj()),
 lambda L: L.is_conj(3), lambda L: L.is_complex(3), lambda L: L.conj(3),
 lambda L: (L.is_complex(L.ones(2)), L.is_signed(L.ones(2)), L.is_signed(L.ones(2, dtype=L.uint8)), L.is_signed(L.ones(2, dtype=L.bool)), L.is_signed(L.ones(2, dtype=L.int8))),
 lambda L: L.arange(6.).reshape(2,3).H, lambda L: L.arange(6.).reshape(2,3).mH, lambda L: L.arange(12.).reshape(2,2,3).mH,
 lambda L: L.adjoint(L.arange(12.).reshape(2,2,3)), lambda L: L.arange(6.).reshape(2,3).adjoint(),
 lambda L: L.ones(3).H, lambda L: L.ones(3).mH, lambda L: L.ones(3).adjoint(), lambda L: L.ones(2,2,2).H,
 lambda L: L.tensor(1.).H, lambda L: L.tensor(1.).mH, lambda L: L.adjoint(L.tensor(1.)),
 lambda L: L.ones(2,3,requires_grad=True).mH,
 lambda L: (L.arange(5.).storage_offset(), L.arange(5.)[2:].storage_offset(), L.arange(6.).reshape(2,3)[1].storage_offset(), L.arange(6.).reshape(2,3)[:, 1].storage_offset(), L.arange(6.).reshape(2,3).t()[1:].storage_offset()),
 lambda L: L.ones(2).is_pinned(), lambda L: L.ones(2).pin_memory(),
 lambda L: (L.typename(L.ones(2)), L.typename(3), L.typename(L.nn.Linear(2,2)), L.typename(L.ones(2).double()), L.typename(L.nn.Parameter(L.ones(2))), L.typename(L.nn), L.typename(L.float32), L.typename(L.Tensor), L.typename(L.nn.Linear), L.typename(L.ones(2, dtype=L.long))),
 lambda L: L.ones(3).new([1],dtype=L.float64), lambda L: L.ones(3).new(2, requires_grad=True), lambda L: L.ones(3).new(2.5),
 lambda L: L.ones(3).new(L.ones(3).double()), lambda L: L.ones(3).new(L.ones(3), device='cpu'), lambda L: L.ones(3).new(L.arange(3.)),
 lambda L: L.ones(3).new(2, device='cpu').shape,
 lambda L: [getattr(L, n)(L.tensor([0.25, 0.5]))for n in ('exp_', 'sigmoid_', 'relu_', 'square_', 'sqrt_', 'log_', 'neg_', 'zero_', 'exp2_', 'log2_', 'sin_', 'trunc_', 'frac_')],
 lambda L: L.exp_(3), lambda L: L.clamp_(L.tensor([1., 5]), min=2, max=3), lambda L: L.fill_(L.ones(2), 3), lambda L: L.tensor([2.]).exp2_(),
 lambda L: L.tensor([4.]).log2_(),
 lambda L: L.exp_(L.ones(2, requires_grad=True)),
 lambda L: (L.channels_last, L.contiguous_format, L.preserve_format, L.channels_last_3d, type(L.channels_last).__name__, L.channels_last == L.channels_last, L.channels_last == L.contiguous_format),
 lambda L: [L.randn(2,3,4,5).is_contiguous(memory_format=f) for f in (L.contiguous_format, L.channels_last, L.preserve_format, L.channels_last_3d)],
 lambda L: [L.randn(2,3,4,5).transpose(0,1).is_contiguous(memory_format=f) for f in (L.contiguous_format, L.channels_last, L.preserve_format)],
 lambda L: L.randn(2,3).is_contiguous(memory_format=L.channels_last), lambda L: L.randn(2,1,4,5).is_contiguous(memory_format=L.channels_last),
 lambda L: L.randn(2,3,1,1).is_contiguous(memory_format=L.channels_last),
 lambda L: (lambda y: (y.is_contiguous(memory_format=L.channels_last), y.is_contiguous(), y.stride()))(L.randn(2,3,4,5).permute(0,2,3,1).contiguous().permute(0,3,1,2)),
 lambda L: (lambda c: (c.stride(), c.is_contiguous(), c.is_contiguous(memory_format=L.channels_last), c.contiguous(memory_format=L.channels_last) is c, c.contiguous().stride(), c.contiguous() is c))(L.randn(2,3,4,5).contiguous(memory_format=L.channels_last)),
 lambda L: L.randn(2,3,4,5, requires_grad=True).contiguous(memory_format=L.channels_last).grad_fn.name(),
 lambda L: L.randn(2,3,4,5).to(memory_format=L.channels_last).stride(),
 lambda L: L.randn(2,3,4,5).to(L.float64, memory_format=L.channels_last).stride(),
 lambda L: L.randn(2,3).to(memory_format=L.channels_last), lambda L: L.randn(2,3).contiguous(memory_format=L.channels_last),
 lambda L: L.randn(2,3,4,5,6).contiguous(memory_format=L.channels_last_3d).stride(),
 lambda L: L.randn(2,3,4,5).contiguous(memory_format=L.channels_last_3d),
 lambda L: L.randn(2,3).contiguous(memory_format=3), lambda L: L.randn(2,3).is_contiguous(memory_format=3),
 lambda L: L.empty(2,0,3,4).contiguous(memory_format=L.channels_last).stride(),
 lambda L: L.empty(2,1,3,4).contiguous(memory_format=L.channels_last).stride(),
 lambda L: L.randn(2,3,4,5).contiguous(memory_format=L.channels_last).view(-1),
 lambda L: L.empty_like(L.randn(2,3,4,5).contiguous(memory_format=L.channels_last)).stride(),
 lambda L: L.empty_like(L.randn(2,3,4,5).contiguous(memory_format=L.channels_last), memory_format=L.contiguous_format).stride(),
 lambda L: L.empty_like(L.randn(2,3,4,5), memory_format=L.channels_last).stride(),
 lambda L: L.zeros_like(L.randn(2,3,4,5), memory_format=L.channels_last).stride(),
 lambda L: L.ones_like(L.randn(2,3,4,5).transpose(0,1)).stride(),
 lambda L: L.full_like(L.randn(2,3).t(), 2).stride(),
 lambda L: L.empty_like(L.randn(2,1).expand(2,3)).stride(),
 lambda L: (L.is_warn_always_enabled(), L.set_warn_always(True), L.is_warn_always_enabled(), L.set_warn_always(False), L.is_warn_always_enabled()),
 lambda L: L.scalar_tensor(L.tensor(2)),
 lambda L: (lambda t: L.asarray(t) is t)(L.ones(2)),
 lambda L: (lambda a: (L.asarray(a), a.__setitem__(0, 9), L.asarray(a)))(np.arange(3.)),
 lambda L: (lambda a: (lambda b: (a.__setitem__(0, 9), b)[1])(L.asarray(a)))(np.arange(3.)),
 lambda L: L.asarray([1,2.5]), lambda L: L.asarray([1,2]), lambda L: L.asarray(3), lambda L: L.asarray(2.5), lambda L: L.asarray(True),
 lambda L: L.asarray(L.ones(2), dtype=L.float64), lambda L: (lambda t: L.asarray(t, copy=True) is t)(L.ones(2)),
 lambda L: L.asarray(L.ones(2), dtype=L.float64, copy=False), lambda L: L.asarray([1,2], copy=False),
 lambda L: L.asarray(np.arange(3.), copy=False, dtype=L.float32), lambda L: L.asarray(L.ones(2), requires_grad=True),
 lambda L: L.asarray([1,2], requires_grad=True), lambda L: L.asarray(np.arange(3.), requires_grad=True),
 lambda L: L.asarray([[1,2],[3,4]], dtype=L.float64), lambda L: L.asarray(np.arange(6.).reshape(2,3).T),
 lambda L: L.asarray(array.array('f', [1, 2])),
 lambda L: (lambda a: (lambda t: (a.__setitem__(0, 9), t)[1])(L.frombuffer(a, dtype=L.float32)))(array.array('f',[1,2,3,4])),
 lambda L: L.frombuffer(array.array('f',[1,2,3,4]), dtype=L.float32, count=2, offset=4),
 lambda L: L.frombuffer(b'\x01\x02', dtype=L.uint8), lambda L: L.frombuffer(bytearray(b'\x01\x02\x03'), dtype=L.int16),
 lambda L: L.frombuffer(bytearray(b''), dtype=L.int16), lambda L: L.frombuffer(bytearray(b'1234'), dtype=L.int16, offset=5),
 lambda L: L.frombuffer(bytearray(b'1234'), dtype=L.int16, count=3), lambda L: L.frombuffer(bytearray(b'1234'), dtype=L.int16, offset=-1),
 lambda L: L.frombuffer([1,2], dtype=L.int8), lambda L: L.frombuffer(bytearray(b'\x00\x00\x80?'), dtype=L.float32, requires_grad=True),
 lambda L: L.empty_strided((2,3),(1,2)).stride(), lambda L: L.empty_strided((2,3),(1,2)).is_contiguous(),
 lambda L: L.empty_strided((2,3),(1,)), lambda L: L.empty_strided((2,-3),(1,2)),
 lambda L: L.empty_strided((2,3),(3,1), dtype=L.int64, requires_grad=True), lambda L: L.empty_strided((2,3),(3,1), dtype=L.float64).shape,
 lambda L: L.set_flush_denormal(False),
 lambda L: L.empty(2,3,4,5, memory_format=L.channels_last).stride(), lambda L: L.empty(2,3, memory_format=L.channels_last),
 lambda L: L.empty(2,3,4,5, memory_format=L.preserve_format), lambda L: L.empty(2,3,4,5,6, memory_format=L.channels_last_3d).stride(),
 lambda L: L.randn(2,3).new_empty_strided((2,3),(1,2)).stride(), lambda L: L.randn(2,3).new_empty_strided((2,3),(1,2), dtype=L.float64).dtype,
 lambda L: L.empty(2,0,3,4).contiguous(memory_format=L.channels_last).is_contiguous(memory_format=L.channels_last),
 lambda L: L.randn(2,3,4,5).contiguous(memory_format=L.channels_last).contiguous(memory_format=L.contiguous_format).stride(),
 lambda L: L.randn(2,3,4,5).contiguous(memory_format=L.channels_last).to(memory_format=L.contiguous_format).stride(),
 lambda L: L.randn(2,3,4,5).contiguous(memory_format=L.channels_last).to(memory_format=L.preserve_format).stride(),
 lambda L: L.empty_like(L.randn(2,3,4,5,6).contiguous(memory_format=L.channels_last_3d)).stride(),
 lambda L: (lambda t: (t.storage_offset(), t.stride()))(L.arange(24.).reshape(2,3,4)[1, 1:, ::2]),
 lambda L: L.rand_like(L.randn(2,3,4,5), memory_format=L.channels_last).stride(), lambda L: L.randn_like(L.randn(2,3).t()).stride(),
 lambda L: L.randn_like(L.randn(2,3), dtype=L.float64).dtype, lambda L: L.rand_like(L.randn(2,3), memory_format=L.channels_last),
]


@pytest.mark.parametrize("case", range(len(TESTING_CASES)))
def test_testing_matches_torch(case):
    f = TESTING_CASES[case]
    assert run(tg, f) == run(torch, f)


@pytest.mark.parametrize("case", range(len(FUNCTION_CASES)))
def test_functions_match_torch(case):
    f = FUNCTION_CASES[case]
    assert run(tg, f) == run(torch, f)


@pytest.mark.parametrize("case", range(len(TENSOR_CASES)))
def test_tensor_api_matches_torch(case):
    f = TENSOR_CASES[case]
    assert run(tg, f) == run(torch, f)


# -- values computed differently from torch (rounding), compared to tolerance ------------------------------------------
@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("n", [1, 2, 5, 8, 17, 64])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows_values(name, n, periodic, dtype):
    a = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype))
    b = getattr(tg, name)(n, periodic, dtype=getattr(tg, dtype))
    assert b.dtype == getattr(tg, dtype) and b.shape == tuple(a.shape)
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=0, atol=1e-6 if dtype == "float32" else 1e-14)


def test_histogram_random_values():
    rng = np.random.RandomState(0)
    for dt in ("float32", "float64"):
        x = rng.randn(1000).astype(dt)
        w = rng.rand(1000).astype(dt)
        for bins in (1, 7, 64):
            for kw in ({}, {"range": (-1.0, 2.0)}, {"density": True}):
                a = torch.histogram(torch.tensor(x), bins, weight=torch.tensor(w), **kw)
                b = tg.histogram(tg.tensor(x), bins, weight=tg.tensor(w), **kw)
                np.testing.assert_allclose(b.bin_edges.numpy(), a.bin_edges.numpy(), rtol=1e-6, atol=1e-6)
                np.testing.assert_allclose(b.hist.numpy(), a.hist.numpy(), rtol=1e-5, atol=1e-6)
        pts = rng.randn(300, 3).astype(dt)
        a = torch.histogramdd(torch.tensor(pts), [3, 4, 5], density=True)
        b = tg.histogramdd(tg.tensor(pts), [3, 4, 5], density=True)
        np.testing.assert_allclose(b.hist.numpy(), a.hist.numpy(), rtol=1e-5)
        for ea, eb in zip(a.bin_edges, b.bin_edges):
            np.testing.assert_allclose(eb.numpy(), ea.numpy(), rtol=1e-6, atol=1e-6)


def test_histogram_return_type():
    r = tg.histogram(tg.tensor([1.0, 2.0]), 2)
    assert type(r).__name__ == "histogram" and r._fields == ("hist", "bin_edges")
    assert repr(r) == repr(torch.histogram(torch.tensor([1.0, 2.0]), 2))


# -- gradients ------------------------------------------------------------------------------------------------------------
def _grads(L, make, order):
    x = L.tensor(np.arange(1.0, 7.0).reshape(2, 3), dtype=L.float64, requires_grad=True)
    y = make(L, x)
    w = L.tensor(np.random.RandomState(0).randn(*y.shape))
    out = []
    g = (y * w).sum()
    for _ in range(order):
        g, = L.autograd.grad(g if g.dim() == 0 else (g * g).sum(), x, create_graph=True)
        out.append(g.detach().numpy().copy())
    return out


@pytest.mark.parametrize("make", [
    lambda L, x: L.diag_embed(x * x),
    lambda L, x: L.diag_embed(x * x, offset=1, dim1=0, dim2=2),
    lambda L, x: (x * x).diag_embed(-2, 2, 0),
    lambda L, x: (x * x).H,
    lambda L, x: (x * x).mH,
    lambda L, x: L.adjoint((x * x).reshape(1, 2, 3)),
    lambda L, x: L.conj_physical(x * x) * L.resolve_conj(x).conj(),
])
def test_gradients_match_torch(make):
    for a, b in zip(_grads(torch, make, 3), _grads(tg, make, 3)):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


def test_fill_diagonal_gradient():
    grads = []
    for L in (torch, tg):
        x = L.tensor(np.arange(1.0, 13.0).reshape(4, 3), requires_grad=True)
        z = x * 1
        z.fill_diagonal_(5.0, wrap=True)
        (z * L.tensor(np.arange(12.0).reshape(4, 3), dtype=L.float32)).sum().backward()
        grads.append((x.grad.numpy().copy(), z.detach().numpy().copy()))
    np.testing.assert_array_equal(grads[1][0], grads[0][0])
    np.testing.assert_array_equal(grads[1][1], grads[0][1])


def test_inplace_functions_record():
    for L in (torch, tg):
        x = L.tensor([0.5, 1.5], requires_grad=True)
        y = x * 1
        L.sigmoid_(y)
        y.sum().backward()
        if L is torch:
            expected = x.grad.numpy().copy()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


# -- uninitialized values: only what torch determines --------------------------------------------------------------------
def test_new_sizes():
    for args in ((2, 3), (tg.Size([2, 3]),)):
        t = tg.ones(3, dtype=tg.float64).new(*args)
        assert t.shape == (2, 3) and t.dtype == tg.float64
    assert tg.ones(3).new(tg.Size([2])).shape == torch.ones(3).new(torch.Size([2])).shape


def test_new_tensor_aliases():
    a = tg.arange(3.0)
    b = a.new(a)
    b[0] = 7.0
    assert a[0].item() == 7.0 and b is not a


# -- flags and settings ------------------------------------------------------------------------------------------------
def test_warn_always_repeats_scalar_warning():
    x = tg.ones(1, requires_grad=True)
    tg.set_warn_always(True)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            float(x)
            float(x)
        assert sum("Converting a tensor with requires_grad=True" in str(m.message) for m in w) == 2
    finally:
        tg.set_warn_always(False)
    assert tg.is_warn_always_enabled() is torch.is_warn_always_enabled() is False


def test_set_flush_denormal_is_honest():
    assert tg.set_flush_denormal(True) is False  # (NumPy cannot flush denormals: nothing changed, as torch says
    assert tg.set_flush_denormal(False) is True  # on a CPU without the flag)


def test_frombuffer_shares_and_warns_once():
    buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
    t = tg.frombuffer(buf, dtype=tg.float32)
    buf[0:4] = np.float32(9).tobytes()
    assert t[0].item() == 9.0
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tg.frombuffer(b"\x01\x02", dtype=tg.uint8)
    assert len(w) <= 1


def test_typename_under_torch_names():
    assert tg.typename(tg.nn.Linear(2, 2)) == torch.typename(torch.nn.Linear(2, 2))
    assert tg.typename(tg.channels_last) == torch.typename(torch.channels_last)


def test_make_tensor():
    for dt, ldt in ((tg.float32, torch.float32), (tg.float64, torch.float64), (tg.int64, torch.int64),
                    (tg.uint8, torch.uint8), (tg.bool, torch.bool), (tg.int8, torch.int8)):
        t = tg.testing.make_tensor(3, 4, dtype=dt, device="cpu")
        r = torch.testing.make_tensor(3, 4, dtype=ldt, device="cpu")
        assert t.shape == tuple(r.shape) and t.dtype == dt
        if dt is not tg.bool:
            assert t.min().item() >= r.new_tensor(-9 if dt is not tg.uint8 else 0).item()
            assert t.max().item() <= 9
    t = tg.testing.make_tensor((5,), dtype=tg.float64, device="cpu", low=2, high=3, requires_grad=True)
    assert t.requires_grad and t.min().item() >= 2 and t.max().item() < 3
    t = tg.testing.make_tensor(2, 3, dtype=tg.int64, device="cpu", low=-1, high=2, exclude_zero=True)
    assert (t != 0).all().item()
    t = tg.testing.make_tensor(2, 6, dtype=tg.float32, device="cpu", noncontiguous=True)
    assert not t.is_contiguous() and t.shape == (2, 6)
    t = tg.testing.make_tensor(2, 3, 4, 5, dtype=tg.float32, device="cpu", memory_format=tg.channels_last)
    assert t.is_contiguous(memory_format=tg.channels_last)
    for L in (torch, tg):
        with pytest.raises(ValueError) as info:
            L.testing.make_tensor(2, dtype=L.float32, device="cpu", low=3, high=1)
        msgs = getattr(test_make_tensor, "msgs", [])
        msgs.append(str(info.value))
        test_make_tensor.msgs = msgs
    assert test_make_tensor.msgs[-1] == test_make_tensor.msgs[-2]


def test_assert_allclose_warns():
    with pytest.warns(FutureWarning, match="assert_allclose"):
        tg.testing.assert_allclose(tg.tensor([1.0]), [1.0])


def test_value_tests_replay_under_compile():
    """isclose, isin and unravel_index are recomputed by a tapegrad.compile replay (not baked in as constants)."""
    step = tg.compile(lambda a, b, i: ((tg.isclose(a, b).float() * a).sum() + tg.isin(a, b).float().sum()
                                       + tg.unravel_index(i, (2, 3))[1].sum()))
    for va, vi in (([1.0, 2.0, 3.0], [4, 1]), ([1.0, 5.0, 3.0], [5, 0])):
        got = step(tg.tensor(va), tg.tensor([1.0, 2.0, 3.0]), tg.tensor(vi))
        ta, tb, ti = torch.tensor(va), torch.tensor([1.0, 2.0, 3.0]), torch.tensor(vi)
        want = ((torch.isclose(ta, tb).float() * ta).sum() + torch.isin(ta, tb).float().sum()
                + torch.unravel_index(ti, (2, 3))[1].sum())
        assert got.item() == want.item()


def test_memory_format_of_clone_and_module_to():
    """clone(memory_format=) and Module.to(memory_format=) give torch's strides (values stay equal)."""
    seen = {}
    for lib in (torch, tg):
        lib.manual_seed(0)
        m = lib.nn.Conv2d(3, 4, 3).to(memory_format=lib.channels_last)
        x = lib.arange(2 * 3 * 5 * 5, dtype=lib.float32).reshape(2, 3, 5, 5)
        y = x.clone(memory_format=lib.channels_last)
        seen[lib] = (m.weight.stride(), m.bias.stride(), m.weight.is_contiguous(),
                     m.weight.is_contiguous(memory_format=lib.channels_last), y.stride(),
                     y.clone().stride(), y.clone(memory_format=lib.contiguous_format).stride(),
                     x.t().clone(memory_format=lib.preserve_format).stride() if x.dim() == 2 else None,
                     y.tolist() == x.tolist())
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
            lib.ones(2, 3).clone(memory_format=lib.channels_last)
    assert seen[tg] == seen[torch]


@pytest.mark.parametrize("shape", [(2, 4, 1, 1), (2, 1, 3, 3), (2, 3, 4, 5), (1, 3, 1, 5), (3, 1, 1, 1)])
def test_to_memory_format_takes_torchs_suggested_format(shape):
    """Tensor.to(memory_format=) returns the tensor itself where torch's suggest_memory_format already names that
    format (its rules for size-1 dimensions), else a copy (ToCopyBackward0) with the format's own strides; a dtype
    change keeps a dense layout (preserve_format); Module.to(memory_format=) follows it (1x1 convolutions)."""
    seen = {}
    for lib in (torch, tg):
        cl, contiguous = lib.channels_last, lib.contiguous_format
        x = lib.zeros(shape, requires_grad=True)
        y = x.to(memory_format=cl)
        seen[lib] = [y.stride(), y.grad_fn.name(), y.to(memory_format=cl) is y, y.to(memory_format=contiguous).stride(),
                     x.to(memory_format=contiguous) is x, x.to(lib.float64, memory_format=cl).stride(),
                     y.to(lib.float64).stride(), x.detach().permute(0, 2, 3, 1).to(memory_format=cl).stride(),
                     lib.nn.Conv2d(shape[1], 2, 1).to(memory_format=cl).weight.stride()]
        y.sum().backward()
        seen[lib].append(tuple(x.grad.shape))
    assert seen[tg] == seen[torch]
