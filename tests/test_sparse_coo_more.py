"""Sparse COO against torch 2.13, beyond graph networks' products (tests/ops/test_ops_scripts.py): to_sparse_coo,
torch.sparse.softmax / log_softmax / spdiags / as_sparse_gradcheck, sparse leaves that require grad themselves (their
.grad sparse or dense as torch's), sparse * dense, index_select, narrow_copy, smm, hspmm, sparse_mask, bmm, and
sparse_coo_tensor's lazy invariant checks."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

LIBS = (torch, tg)
IND = [[1, 0, 1, 0, 2], [0, 2, 0, 1, 2]]   # uncoalesced: (1, 0) twice
VAL = [1.0, 2.0, -3.0, 4.0, -1.0]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def sp(L, coalesce=False, dtype=None, **kw):
    s = L.sparse_coo_tensor(L.tensor(IND), L.tensor(VAL, dtype=dtype), (3, 3), **kw)
    return s.coalesce() if coalesce else s


def W(L, shape=(3, 3), dtype=None, grad=False):
    n = int(np.prod(shape))
    return L.tensor(np.linspace(-1.5, 2.0, n).reshape(shape), dtype=dtype or L.float32, requires_grad=grad)


def _np(t):
    return t.detach().numpy()


def same(a, b, tol=1e-6):
    """Equal results: a sparse tensor by its repr (indices, values, size, nnz, dtype) and coalesced flag; a dense
    one by its values, shape and dtype; or both None."""
    if a is None or b is None:
        assert a is None and b is None
        return
    assert a.is_sparse == b.is_sparse and str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape)
    if a.is_sparse:
        assert a.is_coalesced() == b.is_coalesced()
        np.testing.assert_array_equal(_np(a._indices()), _np(b._indices()))
        np.testing.assert_allclose(_np(a._values()), _np(b._values()), rtol=tol, atol=tol)
    else:
        np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def both(f):
    return [f(L) for L in LIBS]


def raises_same(f):
    errors = []
    for L in LIBS:
        with pytest.raises(Exception) as e:
            f(L)
        errors.append(e.value)
    assert type(errors[0]) is type(errors[1]), errors
    assert str(errors[1]) in str(errors[0]) or str(errors[0]) in str(errors[1]), errors


# -- forward values --------------------------------------------------------------------------------------------------
FORWARD = {
    "to_sparse_coo": lambda L: W(L).to_sparse_coo(),
    "sparse.to_sparse_coo": lambda L: sp(L).to_sparse_coo(),
    "softmax dim 1": lambda L: L.sparse.softmax(sp(L), 1),
    "softmax dim 0": lambda L: L.sparse.softmax(sp(L), 0),
    "softmax -1 float64": lambda L: L.sparse.softmax(sp(L), -1, dtype=L.float64),
    "log_softmax": lambda L: L.sparse.log_softmax(sp(L), 1),
    "log_softmax 3-d": lambda L: L.sparse.log_softmax(W(L, (2, 3, 2)).relu().to_sparse(), 1),
    "spdiags": lambda L: L.sparse.spdiags(W(L, (2, 3)), L.tensor([0, -1]), (3, 3)),
    "spdiags wide": lambda L: L.sparse.spdiags(W(L, (2, 3)), L.tensor([1, -1]), (2, 4)),
    "sparse * dense": lambda L: sp(L) * W(L),
    "dense * sparse": lambda L: W(L) * sp(L),
    "sparse.mul(dense)": lambda L: sp(L, coalesce=True).mul(W(L)),
    "sparse * row": lambda L: sp(L) * W(L, (3,)),
    "long sparse * float": lambda L: sp(L).long() * W(L),
    "sparse * float64": lambda L: sp(L) * W(L, dtype=L.float64),
    "index_select 0": lambda L: sp(L).index_select(0, L.tensor([2, 1, 1])),
    "index_select 1": lambda L: L.index_select(sp(L), 1, L.tensor([0])),
    "index_select coalesced": lambda L: sp(L, True).index_select(0, L.tensor([1, 2])),
    "index_select one": lambda L: sp(L, True).index_select(0, L.tensor([1])),
    "index_select negative": lambda L: sp(L).index_select(0, L.tensor([-1])),
    "narrow_copy": lambda L: sp(L).narrow_copy(1, 1, 2),
    "narrow_copy coalesced": lambda L: sp(L, True).narrow_copy(0, 0, 2),
    "smm": lambda L: L.smm(sp(L), W(L, (3, 2))),
    "smm empty row": lambda L: L.smm(L.sparse_coo_tensor(L.tensor([[2, 0, 2], [0, 1, 1]]), L.tensor([1., 2, 3]),
                                                         (3, 2)), W(L, (2, 2))),
    "hspmm": lambda L: L.hspmm(sp(L), W(L, (3, 2))),
    "hspmm empty row": lambda L: L.hspmm(L.sparse_coo_tensor(L.tensor([[2, 0, 2], [0, 1, 1]]), L.tensor([1., 2, 3]),
                                                             (3, 2)), W(L, (2, 2))),
    "sparse_mask": lambda L: W(L).sparse_mask(sp(L)),
    "sparse_mask coalesced": lambda L: W(L).sparse_mask(sp(L, True)),
    "sparse_mask long": lambda L: W(L).long().sparse_mask(sp(L)),
    "bmm": lambda L: L.bmm(W(L, (2, 3, 3)).relu().to_sparse(), W(L, (2, 3, 2))),
    "Tensor.bmm": lambda L: W(L, (2, 3, 3)).relu().to_sparse().bmm(W(L, (2, 3, 2))),
    "out of range index": lambda L: L.sparse_coo_tensor(L.tensor([[0, 5]]), L.tensor([1.0, 2.0]), (3,)),
}


@pytest.mark.parametrize("name", sorted(FORWARD))
def test_forward_as_torch(name):
    same(*both(FORWARD[name]))


ERRORS = {
    "softmax long": lambda L: L.sparse.softmax(sp(L).long(), 0),
    "softmax dim": lambda L: L.sparse.softmax(sp(L), 2),
    "spdiags count": lambda L: L.sparse.spdiags(W(L, (2, 3)), L.tensor([0]), (3, 3)),
    "spdiags strided": lambda L: L.sparse.spdiags(W(L, (2, 3)), L.tensor([1, -1]), (2, 4), layout=L.strided),
    "spdiags duplicates": lambda L: L.sparse.spdiags(W(L, (2, 3)), L.tensor([0, 0]), (3, 3)),
    "mul sizes": lambda L: sp(L) * L.ones(4, 3),
    "index_select dim": lambda L: sp(L).index_select(2, L.tensor([0])),
    "index_select range": lambda L: sp(L).index_select(0, L.tensor([5])),
    "narrow_copy range": lambda L: sp(L).narrow_copy(0, 2, 3),
    "narrow_copy dim": lambda L: sp(L).narrow_copy(-1, 0, 1),
    "smm sizes": lambda L: L.smm(sp(L), L.ones(4, 2)),
    "smm dense": lambda L: L.smm(L.ones(3, 3), L.ones(3, 2)),
    "hspmm sizes": lambda L: L.hspmm(sp(L), L.ones(4, 2)),
    "sparse_mask sizes": lambda L: L.ones(2, 3).sparse_mask(sp(L)),
    "bmm sparse dims": lambda L: L.bmm(sp(L), L.ones(3, 2)),
    "bmm sizes": lambda L: L.bmm(L.ones(2, 3, 3).to_sparse(), L.ones(2, 4, 2)),
    "requires_grad long": lambda L: sp(L, dtype=L.int64, requires_grad=True),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_as_torch(name):
    raises_same(ERRORS[name])


def test_zeros_like_method_free_form():
    """torch.zeros_like(sparse) is an empty coalesced sparse tensor (ops.sparse.zeros_like, creation's sparse case)."""
    from tapegrad.ops.sparse import zeros_like
    same(torch.zeros_like(sp(torch)), zeros_like(sp(tg)))
    same(torch.zeros_like(sp(torch), dtype=torch.float64), zeros_like(sp(tg), dtype=tg.float64))


# -- gradients -------------------------------------------------------------------------------------------------------
LEAF = {  # a sparse leaf that requires grad: torch's .grad, sparse (masked, coalesced indices) or dense
    "sparse.mm": lambda L, s, d: L.sparse.mm(s, d),
    "sparse.addmm": lambda L, s, d: L.sparse.addmm(L.ones(3, 2), s, d),
    "torch.mm": lambda L, s, d: L.mm(s, d),
    "@": lambda L, s, d: s @ d,
    "spmm": lambda L, s, d: L.spmm(s, d),
    "matmul vector": lambda L, s, d: L.matmul(s, d[:, 0]),
    "dense @ sparse": lambda L, s, d: d.t() @ s,
    "to_dense": lambda L, s, d: s.to_dense() * W(L),
    "mul scalar": lambda L, s, d: (s * 2).to_dense(),
    "neg": lambda L, s, d: (-s).to_dense(),
    "sparse * dense": lambda L, s, d: (s * W(L)).to_dense(),
    "sum": lambda L, s, d: L.sparse.sum(s),
    "coalesce values": lambda L, s, d: s.coalesce().values() * L.arange(4.0),
    "softmax": lambda L, s, d: L.sparse.softmax(s, 1).to_dense() * W(L),
    "log_softmax": lambda L, s, d: L.sparse.log_softmax(s, 0).to_dense() * W(L),
    "dense + sparse": lambda L, s, d: (W(L) + s) * W(L),
    "dense - sparse": lambda L, s, d: (W(L) - s) * W(L),
    "double": lambda L, s, d: s.double().to_dense(),
    "sparse.mm then @": lambda L, s, d: L.sparse.mm(s, d) + s @ d,
}


@pytest.mark.parametrize("coalesced", [False, True])
@pytest.mark.parametrize("name", sorted(LEAF))
def test_sparse_leaf_gradient(name, coalesced):
    def run(L):
        s = sp(L, coalesced).detach().requires_grad_() if coalesced else sp(L, requires_grad=True)
        assert s.requires_grad and s.is_leaf and s.grad is None
        d = W(L, (3, 2), grad=True)
        out = LEAF[name](L, s, d)
        (out * out.detach().sign()).sum().backward()
        return s.grad, d.grad
    (gs_t, gd_t), (gs_g, gd_g) = both(run)
    same(gs_t.coalesce() if gs_t.is_sparse else gs_t, gs_g.coalesce() if gs_g.is_sparse else gs_g, 1e-5)
    same(gd_t, gd_g, 1e-5)


def test_sparse_mm_docstring_example():
    def run(L):
        a = L.tensor([[1., 0, 2], [0, 3, 0]]).to_sparse().requires_grad_()
        b = L.tensor([[0, 1.], [2, 0], [0, 0]], requires_grad=True)
        y = L.sparse.mm(a, b)
        y.sum().backward()
        return repr(a), repr(y.detach()), repr(a.grad), repr(b.grad)
    t, g = both(run)
    assert t == g


def test_sparse_leaf_accumulates_and_resets():
    def run(L):
        s = sp(L, True).detach().requires_grad_()
        d = W(L, (3, 2))
        L.sparse.mm(s, d).sum().backward()
        first = s.grad
        L.sparse.mm(s, d).sum().backward()
        kept = s.grad is first
        sparse_twice = s.grad
        (s @ d).sum().backward()   # a dense gradient added: dense
        dense = s.grad
        s.grad = None
        return kept, sparse_twice, dense, s.grad
    t, g = both(run)
    assert t[0] == g[0]
    for a, b in zip(t[1:], g[1:]):
        same(a, b, 1e-5)


def test_sparse_leaf_leaves_its_source_alone():
    for L in LIBS:
        v = L.tensor(VAL)
        s = L.sparse_coo_tensor(L.tensor(IND), v, (3, 3), requires_grad=True)
        x = W(L)
        t = x.to_sparse().requires_grad_()
        assert s.requires_grad and not v.requires_grad and t.requires_grad and not x.requires_grad


DENSE_GRAD = {  # gradients of the dense operand
    "sparse * dense": lambda L, d: (sp(L) * d).to_dense(),
    "dense * sparse": lambda L, d: (d * sp(L, True)).to_dense(),
    "sparse_mask": lambda L, d: d.sparse_mask(sp(L)).to_dense(),
    "bmm": lambda L, d: L.bmm(W(L, (3, 3, 3)).relu().to_sparse(), d.reshape(3, 3, 1)),
}


@pytest.mark.parametrize("name", sorted(DENSE_GRAD))
def test_dense_operand_gradient(name):
    def run(L):
        d = W(L, grad=True)
        out = DENSE_GRAD[name](L, d)
        (out * L.arange(float(out.numel())).reshape(out.shape)).sum().backward()
        return out, d.grad
    (ot, gt), (og, gg) = both(run)
    same(ot, og, 1e-5)
    same(gt, gg, 1e-5)


@pytest.mark.parametrize("call", [lambda L, d: L.smm(sp(L), d), lambda L, d: L.hspmm(sp(L), d),
                                  lambda L, d: L.sparse.spdiags(d.t(), L.tensor([0, 1]), (3, 3))])
def test_no_derivative_as_torch(call):
    def run(L):
        out = call(L, W(L, (3, 2), grad=True))
        assert out.requires_grad
        out.to_dense().sum().backward()
    raises_same(run)


def test_as_sparse_gradcheck():
    for L in LIBS:
        gradcheck = L.sparse.as_sparse_gradcheck(L.autograd.gradcheck)
        x = L.tensor([[0, 1], [2, 3]], dtype=L.float64).to_sparse_coo().requires_grad_(True)
        d = L.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=L.float64)
        assert gradcheck(lambda x: L.sparse.mm(x, d), x)
        assert gradcheck(lambda x: (x * 3).to_dense(), x)
        assert gradcheck(lambda x: L.sparse.softmax(x, 1), x, masked=True)
