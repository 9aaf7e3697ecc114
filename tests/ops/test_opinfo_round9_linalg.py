"""Round 9 (torch's OpInfo samples): linear algebra and the matmul family against torch: values, shapes, dtypes,
gradients, and errors' types and messages (empty matrices, solve_ex's info, vander of a 0-d input, the nuclear
norm, svd_lowrank and pca_lowrank, tensordot's size-1 dims, integer and bool addmv/addbmm/baddbmm/addr, lstsq's
residuals, householder_product without reflectors)."""
import numpy as np
import pytest

import tapegrad

import torch  # noqa: E402  (the oracle: CI requires it)

RNG = np.random.default_rng(9)
M34 = RNG.standard_normal((3, 4))
M234 = RNG.standard_normal((2, 3, 4))


def _run(m, fn):
    """fn(m)'s outputs as (shape, dtype, values), or the error it raised (type, message)."""
    try:
        r = fn(m)
    except Exception as e:  # noqa: BLE001  (the error is what is compared)
        return ("error", type(e).__name__, str(e))
    rs = tuple(r) if isinstance(r, tuple) else (r,)
    return [(tuple(x.shape), str(x.dtype).replace("tapegrad", "torch"), np.asarray(x.detach().numpy()))
            for x in rs]


def _same(got, want):
    assert type(got) is type(want), (got, want)
    if isinstance(want, tuple):
        assert got == want
        return
    assert len(got) == len(want)
    for (gs, gd, gv), (ws, wd, wv) in zip(got, want):
        assert (gs, gd) == (ws, wd)
        np.testing.assert_allclose(gv.astype(np.float64), wv.astype(np.float64), rtol=1e-6, atol=1e-6)


T = lambda m, *a, **k: m.tensor(*a, **k)  # noqa: E731

VALUES = {
    # empty (0 x 0) matrices: the factor and an info of the batch's shape
    "cholesky_ex 0x0": lambda m: m.linalg.cholesky_ex(m.zeros(0, 0)),
    "cholesky_ex 2x0x0 upper": lambda m: m.linalg.cholesky_ex(m.zeros(2, 0, 0), upper=True),
    "inv_ex 0x0": lambda m: m.linalg.inv_ex(m.zeros(0, 0)),
    "inv_ex 1x1x0x0": lambda m: m.linalg.inv_ex(m.zeros(1, 1, 0, 0, dtype=m.float64)),
    "ldl_solve 0x0": lambda m: m.linalg.ldl_solve(m.zeros(0, 0), m.zeros(0, dtype=m.int32), m.zeros(0, 5)),
    "lu_unpack 0 pivots": lambda m: m.lu_unpack(m.zeros(2, 0, 0), m.zeros(2, 0, dtype=m.int32)),
    # solve_ex's info: A's batch shape
    "solve_ex batch": lambda m: m.linalg.solve_ex(m.eye(3).expand(2, 3, 3), m.ones(2, 3)),
    "solve_ex 2x2 batch": lambda m: m.linalg.solve_ex(m.eye(3).expand(2, 2, 3, 3), m.ones(2, 2, 3)),
    "solve_ex empty batch": lambda m: m.linalg.solve_ex(m.zeros(0, 5, 5), m.zeros(0, 5)),
    "solve_ex broadcast B": lambda m: m.linalg.solve_ex(m.eye(3).expand(1, 3, 3), m.ones(4, 3, 2)),
    # a singular A: info names getrf's first zero pivot (no error without check_errors); torch's messages
    "solve_ex singular": lambda m: m.linalg.solve_ex(m.eye(3).expand(2, 3, 3) * T(m, [1.0, 0.0]).reshape(2, 1, 1),
                                                     m.ones(2, 3)).info,
    "solve_ex singular check_errors": lambda m: m.linalg.solve_ex(m.zeros(2, 3, 3), m.ones(2, 3), check_errors=True),
    "solve singular batch": lambda m: m.linalg.solve(m.eye(3).expand(2, 3, 3) * T(m, [1.0, 0.0]).reshape(2, 1, 1),
                                                     m.ones(2, 3)),
    "solve XA = B vector": lambda m: m.linalg.solve(m.eye(3), m.ones(3), left=False),
    "solve XA = B batched vector": lambda m: m.linalg.solve(m.eye(3).expand(2, 3, 3), m.ones(2, 3), left=False),
    # svdvals of an empty batch: min(m, n) values each
    "svdvals 0x5x5": lambda m: m.linalg.svdvals(m.zeros(0, 5, 5)),
    "svdvals 0x5x2": lambda m: m.linalg.svdvals(m.zeros(0, 5, 2)),
    # vander reads a 0-d input as one element
    "vander 0-d": lambda m: m.linalg.vander(T(m, -4.8), N=3),
    "vander 0-d int": lambda m: m.linalg.vander(T(m, 3), N=2),
    "pow 0-d odd": lambda m: T(m, -4.8) ** 5,
    # torch.norm with a string p: the nuclear norm, or linalg.matrix_norm's errors
    "norm nuc": lambda m: m.norm(T(m, M34), p="nuc"),
    "norm nuc dims keepdim": lambda m: m.norm(T(m, M234), p="nuc", dim=(0, 2), keepdim=True),
    "norm nuc method": lambda m: T(m, M234).norm(p="nuc", dim=(2, 1)),
    "norm nuc 3-d": lambda m: m.norm(T(m, M234), p="nuc"),
    "norm nuc one dim": lambda m: m.norm(T(m, M234), p="nuc", dim=1),
    "norm fro 3 dims": lambda m: m.norm(T(m, M234), p="fro", dim=(0, 1, 2)),
    "matrix_norm same dims": lambda m: m.linalg.matrix_norm(T(m, M234), "nuc", dim=(0, 0)),
    "matrix_norm 3 dims": lambda m: m.linalg.matrix_norm(T(m, M234), "fro", dim=(0, 1, 2)),
    "matrix_norm int": lambda m: m.linalg.matrix_norm(m.ones(2, 2, dtype=m.int64), 1),
    "matrix_norm half nuc": lambda m: m.linalg.matrix_norm(m.ones(2, 2, dtype=m.float16), "nuc"),
    "matrix_norm int dtype": lambda m: m.linalg.matrix_norm(T(m, M34), 1, dtype=m.int64),
    "matrix_norm 1 dtype": lambda m: m.linalg.matrix_norm(T(m, M34, dtype=m.float32), 1, dtype=m.float64),
    # tensordot: a contracted dim of size 1 against another is summed first (torch's broadcast)
    "tensordot size 1": lambda m: m.tensordot(T(m, [[[2.0]]], dtype=m.float64), T(m, M234[:, :1, :2]),
                                              dims=([0, 1], [2, 0])),
    "tensordot dtypes": lambda m: m.tensordot(m.ones(2, 3), m.ones(3, 3, dtype=m.float64), dims=([0], [0])),
    "tensordot size 1 right": lambda m: m.tensordot(T(m, M234[:, :2, :1]), T(m, [[[3.0]], [[1.0]]]).reshape(1, 1, 2),
                                                    dims=([0, 1], [2, 0])),
    "tensordot int size 1": lambda m: m.tensordot(T(m, [[[2]]]), T(m, [[[1, 2]], [[3, 4]]]), dims=([0, 1], [2, 0])),
    # integer products: beta and alpha converted to the dtype (truncated), bool ones or'ed
    "addmv int": lambda m: m.addmv(T(m, [5, 5]), m.ones(2, 3, dtype=m.int64), m.ones(3, dtype=m.int64),
                                   beta=-1.7, alpha=-2.5),
    "addmv int 0.2": lambda m: m.addmv(T(m, [5, 5]), m.ones(2, 3, dtype=m.int64), m.ones(3, dtype=m.int64),
                                       beta=0.2, alpha=0.6),
    "baddbmm int": lambda m: m.baddbmm(3 * m.ones(1, 2, 2, dtype=m.int64), m.ones(1, 2, 3, dtype=m.int64),
                                       m.ones(1, 3, 2, dtype=m.int64), beta=1.7, alpha=2.5),
    "addbmm int": lambda m: m.addbmm(3 * m.ones(2, 2, dtype=m.int64), m.ones(2, 2, 3, dtype=m.int64),
                                     m.ones(2, 3, 2, dtype=m.int64), beta=0.6, alpha=0.2),
    "addr bool": lambda m: m.addr(T(m, [[True, False], [False, False]]), T(m, [True, False]), T(m, [True, True]),
                                  beta=3, alpha=2),
    "addr int float alpha": lambda m: m.addr(m.ones(2, 2, dtype=m.int64), T(m, [1, 0]), T(m, [1, 1]), alpha=1.5),
    "addr bool float beta": lambda m: m.addr(m.ones(2, 2, dtype=m.bool), T(m, [True, False]), T(m, [True, True]),
                                             beta=0.5),
}


@pytest.mark.parametrize("name", list(VALUES))
def test_values_against_torch(name):
    _same(_run(tapegrad, VALUES[name]), _run(torch, VALUES[name]))


def _grads(m, fn, arrays, cot_seed=0):
    """fn's outputs and the gradients of sum(out * cotangent) (fixed random cotangents) for float64 leaves."""
    xs = [m.tensor(a, requires_grad=True) for a in arrays]
    outs = fn(m, *xs)
    outs = tuple(outs) if isinstance(outs, tuple) else (outs,)
    rng = np.random.default_rng(cot_seed)
    total = sum((o * m.tensor(rng.standard_normal(tuple(o.shape)))).sum() for o in outs if o.requires_grad)
    total.backward()
    return ([o.detach().numpy() for o in outs], [None if x.grad is None else x.grad.numpy() for x in xs],
            [o.requires_grad for o in outs])


GRADS = {
    "vector_norm 0-d ord 6": (lambda m, x: m.linalg.vector_norm(x, 6), [np.array(-4.8)]),
    "norm nuc": (lambda m, x: m.norm(x, p="nuc"), [M34]),
    "norm nuc dims keepdim": (lambda m, x: m.norm(x, p="nuc", dim=(0, 2), keepdim=True), [M234]),
    "lstsq gels residuals": (lambda m, a, b: m.linalg.lstsq(a, b, driver="gels")[:2],
                             [RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))]),
    "lstsq gelsd batch residuals": (lambda m, a, b: m.linalg.lstsq(a, b, driver="gelsd")[:2],
                                    [RNG.standard_normal((2, 5, 3)), RNG.standard_normal((1, 5, 4))]),
    "lstsq gelss vector residuals": (lambda m, a, b: m.linalg.lstsq(a, b, driver="gelss")[:2],
                                     [RNG.standard_normal((5, 3)), RNG.standard_normal(5)]),
    "solve_ex singular (nan_to_num)": (lambda m, a, b: m.linalg.solve_ex(a * T(m, [[[1.0]], [[0.0]]]), b)
                                       .result.nan_to_num(0.0, 0.0, 0.0),
                                       [RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3),
                                        RNG.standard_normal((2, 3, 2))]),
    "householder_product no reflectors": (lambda m, a, t: m.linalg.householder_product(a, t),
                                          [RNG.standard_normal((5, 5)), np.zeros(0)]),
    "householder_product 0x0": (lambda m, a, t: m.linalg.householder_product(a, t), [np.zeros((0, 0)), np.zeros(0)]),
    "tensordot size 1": (lambda m, a, b: m.tensordot(a, b, dims=([0, 1], [2, 0])),
                         [RNG.standard_normal((1, 1, 1)), RNG.standard_normal((2, 1, 2))]),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_against_torch(name):
    fn, arrays = GRADS[name]
    got, want = _grads(tapegrad, fn, arrays), _grads(torch, fn, arrays)
    assert got[2] == want[2]  # which outputs require grad
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)


def _lowrank(m, name, a, seed, **kwargs):
    """U, S, V of m.name(a) after m.manual_seed(seed), with V's (and U's) column signs made those of U's largest
    entries (singular vectors are unique up to sign: MKL's and OpenBLAS's gesdd choose differently), and the
    gradient of a sign-invariant function of them (U diag(S) V^T, U U^T)."""
    x = m.tensor(a, requires_grad=True)
    m.manual_seed(seed)
    U, S, V = getattr(m, name)(x, **kwargs)
    ((U * S.unsqueeze(-2)) @ V.mT).pow(2).sum().add((U @ U.mT).sum()).backward()
    u, s, v = (t.detach().numpy() for t in (U, S, V))
    idx = np.abs(u).argmax(-2)[..., None, :]
    sign = np.sign(np.take_along_axis(u, idx, -2))
    return u * sign, s, v * sign, x.grad.numpy()


@pytest.mark.parametrize("name, shape, kwargs", [
    ("svd_lowrank", (6, 4), {}),
    ("svd_lowrank", (5, 7), {"q": 3, "niter": 1}),
    ("svd_lowrank", (2, 5, 3), {"q": 2}),
    ("pca_lowrank", (7, 5), {}),
    ("pca_lowrank", (2, 6, 4), {"q": 2, "center": False}),
])
def test_lowrank_against_torch(name, shape, kwargs):
    a = RNG.standard_normal(shape)
    for g, w in zip(_lowrank(tapegrad, name, a, 42, **kwargs), _lowrank(torch, name, a, 42, **kwargs)):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)


def test_lowrank_svd_with_mean_against_torch():
    a, mean = RNG.standard_normal((5, 4)), RNG.standard_normal((1, 4))
    out = []
    for m in (tapegrad, torch):
        m.manual_seed(3)
        U, S, V = m.svd_lowrank(m.tensor(a), q=3, M=m.tensor(mean))
        out.append(((U * S.unsqueeze(-2)) @ V.mT).numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda m: m.pca_lowrank(m.ones(3, 4), q=5),
    lambda m: m.pca_lowrank(m.ones(3, 4), niter=-1),
])
def test_lowrank_errors_against_torch(call):
    assert _run(tapegrad, call) == _run(torch, call)


def test_lowrank_in_torch_functional():
    assert tapegrad.functional.svd_lowrank is tapegrad.svd_lowrank
    assert tapegrad.functional.pca_lowrank is tapegrad.pca_lowrank
    assert {"svd_lowrank", "pca_lowrank"} <= set(tapegrad.functional.__all__)

