"""The front ends' fast paths (issue 20: per-op cost) give torch's answers and errors, as the general paths do:
integer powers of negative bases, cat of one dtype and rank, F.linear's 2-D case, sum, item, broadcasting."""
import math

import numpy as np
import pytest
import torch

import tapegrad


def _both(fn, *arrays, requires_grad=False):
    """fn on torch tensors and on tapegrad tensors made from the same arrays; returns both results and inputs."""
    ts = [torch.tensor(a, requires_grad=requires_grad) for a in arrays]
    gs = [tapegrad.tensor(a, requires_grad=requires_grad) for a in arrays]
    return fn(torch, *ts), fn(tapegrad, *gs), ts, gs


SPECIAL = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, -1.0, 1.0, -1e-30, 1e30, -3.5, 2.25], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 4, 5, 7, -1, -2, -3, 4.0, 5.0, -5.0, 12])
def test_integer_power_of_negative_bases_matches_torch(dtype, n):
    x = np.concatenate([np.linspace(-math.pi, math.pi, 2001), SPECIAL]).astype(dtype)
    t, g, _, _ = _both(lambda lib, a: a ** n, x)
    expect, got = t.numpy(), g.detach().numpy()
    assert got.dtype == expect.dtype
    finite = np.isfinite(expect) & (np.abs(expect) > np.finfo(dtype).tiny)
    np.testing.assert_allclose(got[finite], expect[finite], rtol=4 * np.finfo(dtype).eps, atol=0)
    rest = ~finite  # zeros (signed), infinities, NaN and underflow exactly as torch's
    np.testing.assert_array_equal(got[rest], expect[rest])
    signed = rest & ~np.isnan(expect)  # (a NaN's sign bit is torch's SIMD path's: -nan on Zen 3, nan on Zen 5)
    assert np.array_equal(np.signbit(got[signed]), np.signbit(expect[signed]))


def test_integer_power_is_correctly_rounded_for_float32():
    x = np.linspace(-4, -0.01, 4001).astype(np.float32)
    for n in (4, 5, 7, -3):
        got = (tapegrad.tensor(x) ** n).numpy().astype(np.float64)
        exact = x.astype(np.float64) ** n  # exact enough: float64 rounding is far below a float32 ulp
        assert (np.abs(got - exact) / np.spacing(np.abs(got).astype(np.float32))).max() <= 0.5 + 1e-6


@pytest.mark.parametrize("n", [4, 5, -3, 6.0])
def test_integer_power_gradient_matches_torch(n):
    x = np.linspace(-2, 2, 101).astype(np.float32)
    x = x[x != 0]
    t, g, ts, gs = _both(lambda lib, a: (a ** n).sum(), x, requires_grad=True)
    t.backward(), g.backward()
    np.testing.assert_allclose(gs[0].grad.numpy(), ts[0].grad.numpy(), rtol=1e-5)


def test_non_integer_and_tensor_exponents_unchanged():
    x = np.array([-2.0, -0.5, 0.0, 0.5, 3.0], np.float32)
    for e in (2.5, -0.5, 0.5, 1e300):
        t, g, _, _ = _both(lambda lib, a: a ** e, x)
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-6, equal_nan=True)
    t, g, _, _ = _both(lambda lib, a, b: a ** b, x, np.array([4.0, 3, 2, 1, 5], np.float32))
    np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_cat_same_dtype_values_and_gradients(dim):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(3)]
    if dim in (1, -1):
        arrays[1] = rng.standard_normal((3, 4)).astype(np.float32)
    else:
        arrays[1] = rng.standard_normal((5, 2)).astype(np.float32)
    t, g, ts, gs = _both(lambda lib, *a: lib.cat(list(a), dim), *arrays, requires_grad=True)
    np.testing.assert_array_equal(g.detach().numpy(), t.detach().numpy())
    assert g.grad_fn.name() == t.grad_fn.name()
    w = rng.standard_normal(t.shape).astype(np.float32)
    (t * torch.tensor(w)).sum().backward()
    (g * tapegrad.tensor(w)).sum().backward()
    for a, b in zip(gs, ts):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_cat_general_cases_still_promote_skip_and_raise():
    f32, i64 = np.ones((2, 2), np.float32), np.arange(4).reshape(2, 2)
    t, g, _, _ = _both(lambda lib, a, b: lib.cat([a, b], 1), f32, i64)
    assert str(g.dtype) == str(t.dtype) and np.array_equal(g.numpy(), t.numpy())
    t, g, _, _ = _both(lambda lib, a, b: lib.cat([a, b]), f32, np.zeros(0, np.float32))  # legacy empty 1-D
    assert tuple(g.shape) == tuple(t.shape)
    for bad in ([np.ones((2, 3), np.float32), np.ones((3, 3), np.float32)], [np.ones((2, 2), np.float32),
                                                                            np.ones(2, np.float32)]):
        with pytest.raises(RuntimeError) as te:
            torch.cat([torch.tensor(a) for a in bad], 1)
        with pytest.raises(RuntimeError) as ge:
            tapegrad.cat([tapegrad.tensor(a) for a in bad], 1)
        assert str(ge.value) == str(te.value)
    with pytest.raises(IndexError):
        tapegrad.cat([tapegrad.ones(2, 2)], 2)


@pytest.mark.parametrize("bias_shape", [(4,), (5, 4), (1,), (), None])
def test_linear_fast_path_matches_torch(bias_shape):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    arrays = [x, w] + ([] if bias_shape is None else [rng.standard_normal(bias_shape).astype(np.float32)])
    t, g, ts, gs = _both(lambda lib, *a: lib.nn.functional.linear(*a), *arrays, requires_grad=True)
    np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-6)
    assert g.grad_fn.name() == t.grad_fn.name()
    t.sum().backward(), g.sum().backward()
    for a, b in zip(gs, ts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, m", [(97, 204), (1, 5), (6, 1), (0, 3)])
@pytest.mark.parametrize("op", ["linear", "addmm", "mm", "matmul", "matmul of a strided column"])
def test_products_with_one_inner_column_are_exact_outer_products(op, n, m, dtype):
    """(n, 1) @ (1, m) (an LSTMCell(1, H)'s input product) is an elementwise outer product, not NumPy's matmul
    (its own loop for such strides: 21 us against 8): the same bits as NumPy's matmul, torch's values and
    gradients."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, 2 if op.endswith("column") else 1)).astype(dtype)
    w = rng.standard_normal((m, 1)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)

    def program(lib, x, w, b):
        F = lib.nn.functional
        if op.endswith("column"):
            x = x[:, 1:]
        return {"linear": lambda: F.linear(x, w), "addmm": lambda: F.linear(x, w, b), "mm": lambda: x.mm(w.t()),
                "matmul": lambda: x @ w.t(), "matmul of a strided column": lambda: x @ w.t()}[op]()
    t, g, ts, gs = _both(program, x, w, b, requires_grad=True)
    xs = x[:, 1:] if op.endswith("column") else x
    exact = np.matmul(xs, w.T) + (b if op == "addmm" else 0)
    np.testing.assert_array_equal(g.detach().numpy(), exact)
    np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=2 * np.finfo(dtype).eps)
    seed = rng.standard_normal((n, m)).astype(dtype)
    (t * torch.tensor(seed)).sum().backward(), (g * tapegrad.tensor(seed)).sum().backward()
    tol = 1e-5 if dtype == np.float32 else 1e-12  # (x's gradient sums m products: relative to their scale)
    for a, e in zip(gs, ts):
        if e.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), e.grad.numpy(), rtol=tol,
                                       atol=tol * max(1.0, float(np.abs(e.grad.numpy()).max(initial=0))))


def test_a_views_offset_from_its_key_is_numpys():
    """getitem's fast paths (x[i], x[a:b], x[:, a:b], x[i, j]) take a view's first element from the key instead of
    reading both arrays' addresses (1 us each): the offset equals NumPy's for every key of ints in bounds and plain
    slices over random shapes (empty views read the addresses)."""
    import random
    from tapegrad.ops.shape import _key_offset
    rng = random.Random(0)
    checked = 0
    for _ in range(20000):
        shape = tuple(rng.randint(0, 5) for _ in range(rng.randint(1, 4)))
        a = np.zeros(shape, np.float32)
        key = []
        for n in shape[:rng.randint(1, len(shape))]:
            if n and rng.random() < 0.4:
                key.append(rng.randint(-n, n - 1))
            else:
                key.append(slice(rng.choice([None, *range(-7, 8)]), rng.choice([None, *range(-7, 8)]),
                                 rng.choice([None, 1, 2, 3])))
        v = a[tuple(key) + (Ellipsis,)]
        offset = _key_offset(shape, tuple(key))
        if offset is None or not v.size:
            continue
        checked += 1
        assert offset * 4 == v.__array_interface__["data"][0] - a.__array_interface__["data"][0], (shape, key)
    assert checked > 5000


def test_indexing_views_record_torchs_gradients():
    x = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    for key in (1, -1, slice(1, None), slice(None, None, 2), (0, 1), (slice(None), 2), (-1, slice(1, 3), 2),
                (slice(None), slice(None), slice(1, 4, 2))):
        t, g, ts, gs = _both(lambda lib, a: (a[key] * 3.0).sum(), x, requires_grad=True)
        t.backward(), g.backward()
        np.testing.assert_array_equal(gs[0].grad.numpy(), ts[0].grad.numpy(), err_msg=str(key))


@pytest.mark.parametrize("dtypes", [("float32", "float32", None), ("float32", "float64", None),
                                    ("float64", "float32", None), ("float16", "float32", None),
                                    ("float64", "float32", "float32"), ("float32", "float64", "float64"),
                                    ("float64", "float32", "float64"), ("float32", "float32", "float64")])
@pytest.mark.parametrize("shapes", [((2, 3), (4, 3)), ((2, 3), (4, 2))])
def test_linear_errors_match_torch(dtypes, shapes):
    """torch's mm error without a bias, addmm's (the bias is `self`: dtypes checked before shapes) with one."""
    xd, wd, bd = dtypes
    if shapes[1] == (4, 3) and xd == wd and bd in (None, xd):
        return  # no error to compare
    for lib in (torch, tapegrad):
        args = [lib.ones(shapes[0], dtype=getattr(lib, xd)), lib.ones(shapes[1], dtype=getattr(lib, wd))]
        if bd is not None:
            args.append(lib.ones(4, dtype=getattr(lib, bd)))
        with pytest.raises(RuntimeError) as e:
            lib.nn.functional.linear(*args)
        if lib is torch:
            expected = str(e.value)
    assert str(e.value) == expected


@pytest.mark.parametrize("value,dtype", [(1.5, "float32"), (2.5, "float64"), (3, "float16"), (7, "int64"),
                                         (True, "bool"), (200, "uint8"), (-3, "int8")])
def test_item_matches_torch(value, dtype):
    t = torch.tensor([[value]], dtype=getattr(torch, dtype)).item()
    g = tapegrad.tensor([[value]], dtype=getattr(tapegrad, dtype)).item()
    assert type(g) is type(t) and g == t
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        tapegrad.ones(2).item()


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), ((0, 1), False), (-1, False)])
def test_sum_matches_torch(dim, keepdim):
    a = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    for arr in (a, a.astype(np.float64), (a > 0), (a * 10).astype(np.int32)):
        kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
        t, g, _, _ = _both(lambda lib, x: x.sum(**kw), arr)
        assert str(g.dtype) == str(t.dtype)
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-6)
    assert tapegrad.tensor(2.5).sum().item() == 2.5


@pytest.mark.parametrize("n", [8191, 8192, 131073])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_a_float32_arrays_whole_sum_is_compiled_in_float64_and_replayed_the_same(op, n):
    """A float32 array summed whole, from ops/reduce.py's _COMPILED_SUM (8,192) elements, is summed in float64 lanes
    (kernels/reduce.py): within one float32 rounding of the exact value (math.fsum), NumPy's pairwise float32 sum
    is not always; NaN and infinities as torch's; keepdim; tapegrad.compile's replay gives the same bits."""
    g = np.random.default_rng(n)
    x0 = (g.standard_normal(n) * 1000).astype(np.float32)
    x0 = x0.reshape(-1, 1) if n % 2 else x0.reshape(2, -1)
    exact = math.fsum(x0.astype(np.float64).ravel()) / (n if op == "mean" else 1)
    got = getattr(tapegrad.tensor(x0), op)().item()
    if n >= 8192:  # (NumPy's sums of these arrays are 1.2 and 414 float32 roundings off)
        assert abs(got - exact) <= np.spacing(np.float32(abs(exact))), (got, exact)
    kept = getattr(tapegrad.tensor(x0), op)(dim=(0, 1), keepdim=True)
    assert tuple(kept.shape) == (1, 1) and kept.item() == got
    f = tapegrad.compile(lambda t: getattr(t * 1.0, op)(), fullgraph=True)
    for _ in range(2):
        assert f(tapegrad.tensor(x0)).item() == got
    # a 0-d parameter times the array: a traced gradient sums it by sum_to_shape, whose replay is checked against
    # the eager op's bits when the function is traced (it raised "sum_to_shape's replay differs from its op")
    a = tapegrad.tensor(0.5, requires_grad=True)
    grad = tapegrad.compile(lambda a, t: tapegrad.autograd.grad(getattr(a * t, op)(), [a]), fullgraph=True)
    first = grad(a, tapegrad.tensor(x0))[0].item()
    assert grad(a, tapegrad.tensor(x0))[0].item() == first
    scale = np.abs(x0.astype(np.float64)).sum() / (n if op == "mean" else 1)  # (the terms' float32 rounding)
    np.testing.assert_allclose(first, exact, rtol=1e-6, atol=1e-6 * scale)
    for special in (np.nan, np.inf, -np.inf):
        y0 = x0.copy()
        y0.flat[n // 2] = special
        want = getattr(torch.tensor(y0), op)().item()
        assert np.isnan(want) and np.isnan(getattr(tapegrad.tensor(y0), op)().item()) or \
            getattr(tapegrad.tensor(y0), op)().item() == want
    y0 = x0.copy()
    y0.flat[1], y0.flat[2] = np.inf, -np.inf
    assert np.isnan(getattr(tapegrad.tensor(y0), op)().item())


def test_broadcast_errors_unchanged():
    for a, b in (((2, 3), (3, 3)), ((2, 1, 3), (4, 2)), ((5,), (4,))):
        with pytest.raises(RuntimeError) as te:
            torch.ones(a) + torch.ones(b)
        with pytest.raises(RuntimeError) as ge:
            tapegrad.ones(a) + tapegrad.ones(b)
        assert str(ge.value) == str(te.value)
    assert tuple((tapegrad.ones(2, 1, 3) * tapegrad.ones(2, 4, 1)).shape) == (2, 4, 3)


# -- the small ops of a policy-gradient step (reinforce, actor-critic): torch's values, gradients and errors ------
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_gather_positions_and_gradients_match_torch(dim):
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7
    idx = np.array([[[3, 0], [1, 1]], [[0, 2], [2, 2]]]) % (x.shape[dim] if dim >= 0 else 4)
    t, g, ts, gs = _both(lambda lib, a: a.gather(dim, lib.tensor(idx)), x, requires_grad=True)
    np.testing.assert_array_equal(g.detach().numpy(), t.detach().numpy())
    t.pow(2).sum().backward(), g.pow(2).sum().backward()
    np.testing.assert_array_equal(gs[0].grad.numpy(), ts[0].grad.numpy())


def test_gather_of_a_vector_by_a_0d_index_is_0d_as_torchs():
    for lib in (torch, tapegrad):
        out = lib.gather(lib.tensor([1.0, 2.0, 3.0]), 0, lib.tensor(2))
        assert out.shape == () and out.item() == 3.0
    for lib in (torch, tapegrad):
        with pytest.raises(RuntimeError, match="^index 3 is out of bounds for dimension 0 with size 3$"):
            lib.gather(lib.tensor([1.0, 2.0, 3.0]), 0, lib.tensor([3]))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_clamping_an_integer_tensor_to_integers_keeps_its_dtype(dtype):
    x = np.array([1, 3, 5, 200], dtype)
    for kw in ({"max": 4}, {"min": 2}, {"min": 2, "max": 4}, {"max": 4.5}):
        t, g, _, _ = _both(lambda lib, a: a.clamp(**kw), x)
        assert str(g.dtype) == str(t.dtype), kw
        np.testing.assert_array_equal(g.numpy(), t.numpy())


def test_a_conversion_to_the_tensors_own_dtype_is_the_tensor_itself():
    for lib in (torch, tapegrad):
        x, y, z = lib.zeros(2), lib.zeros(2, dtype=lib.float64), lib.zeros(2, dtype=lib.long)
        assert x.float() is x and y.double() is y and z.long() is z
        assert x.long() is not x and x.long().dtype == lib.long and z.float().dtype == lib.float32


def test_multinomial_checks_its_rows_as_torch():
    for rows in ([[0.5, float("nan")]], [[0.5, float("inf")]], [[0.5, -0.1]], [[0.0, 0.0]], [[]], []):
        for replacement in (True, False):
            errors = []
            for lib in (torch, tapegrad):
                with pytest.raises(RuntimeError) as e:
                    lib.multinomial(lib.tensor(rows), 1, replacement)
                errors.append(str(e.value))
            assert errors[0] == errors[1], (rows, replacement)


@pytest.mark.parametrize("value_shape", [(3,), (5, 3), (1,)])
def test_categorical_log_prob_matches_torch(value_shape):
    logits = np.random.default_rng(3).standard_normal((3, 4))
    value = np.random.default_rng(4).integers(0, 4, value_shape)
    results = []
    for lib in (torch, tapegrad):
        s = lib.tensor(logits, requires_grad=True)
        dist = lib.distributions.Categorical(lib.nn.functional.softmax(s, dim=1))
        lp = dist.log_prob(lib.tensor(value))
        (lp * lib.arange(1.0, 1 + lp.numel(), dtype=lib.float64).reshape(lp.shape)).sum().backward()
        results.append((lp.detach().numpy(), s.grad.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 2), (64, 10), (3, 5, 33), (7,), (40, 64)])
def test_last_dim_softmax_replay_rule_gives_the_array_rules_bits_and_torchs_values(name, dtype, shape):
    """The replay's compiled rule (runtime._softmax_rule) and the array rule (anomaly mode runs it) call one kernel:
    the same bits; both within rounding of torch's, values and gradients, with a NaN row and -inf entries."""
    x = np.random.default_rng(5).standard_normal(shape).astype(dtype) * 4
    seed = np.random.default_rng(6).standard_normal(shape).astype(dtype)
    rows = x.reshape(-1, shape[-1])
    if rows.shape[0] >= 3:
        rows[0] = np.nan
        rows[1, 0] = -np.inf
    out = []
    for lib, anomaly in ((torch, False), (tapegrad, False), (tapegrad, True)):
        t = lib.tensor(x, requires_grad=True)
        with lib.autograd.set_detect_anomaly(anomaly, check_nan=False):
            y = getattr(lib.nn.functional, name)(t, dim=-1)
            (y * lib.tensor(seed)).sum().backward()
        out.append((y.detach().numpy(), t.grad.numpy()))
    for a, b in zip(out[1], out[2]):
        np.testing.assert_array_equal(a, b)
    tol = 4 * np.finfo(dtype).eps
    for a, b in zip(out[1], out[0]):
        np.testing.assert_allclose(a, b, rtol=tol * 10, atol=tol * 10, equal_nan=True)


INDEX_KEYS = [(0, slice(None, 4)), (slice(None), slice(0, 4)), (slice(None), slice(None)), (slice(None), slice(None, 10)),
              (slice(0, 3), 1), (1, slice(0, None)), (slice(-3, None), slice(None)), (slice(None), slice(-4, 4)),
              (slice(None, 3),), (slice(None, 2), slice(0, 4)), (slice(None), slice(None, -1)), (slice(None, None, 2),),
              (Ellipsis, slice(0, 5)), (Ellipsis, slice(0, 4)), (None, slice(0, 3)), (slice(0, 3), None, slice(0, 4)),
              (Ellipsis, slice(0, 4), slice(None)), (0, Ellipsis, slice(None, 5)), ([0, 1], slice(0, 4)),
              (slice(0, 3), [0, 1]), (slice(0, 3), slice(0, 4), slice(0, 5)), (slice(0, 3), slice(0, 4), slice(0, 6)),
              slice(0, 3), slice(None), 1]


@pytest.mark.parametrize("key", INDEX_KEYS, ids=repr)
def test_indexing_names_the_last_step_torch_did_not_skip(key):
    """In a tuple key torch skips a slice from 0 to the end (or past it), step 1, and names the result after the
    last step it took (AliasBackward0 if none); a lone slice it always takes (actor_critic's printed
    `weight[0, :4]` read SliceBackward0 where torch's reads SelectBackward0)."""
    a = np.random.default_rng(2).standard_normal((3, 4, 5))
    t, g = torch.tensor(a, requires_grad=True), tapegrad.tensor(a, requires_grad=True)
    assert g[key].grad_fn.name() == t[key].grad_fn.name()
    np.testing.assert_array_equal(g[key].detach().numpy(), t[key].detach().numpy())
