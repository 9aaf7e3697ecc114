"""torch's functions composed of other ops (ops/composite.py), the activations and padding modules composed in
nn, torch's aliases, limits (finfo/iinfo) and constants, and the random in-place fills, against torch 2.13:
values, gradients (float32 and float64), reprs, random streams and errors."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tapegrad as tg
import tapegrad.nn.functional as GF

RNG = np.random.default_rng(2026)
# away from every function's break points (0, +-lambda, the thresholds), where one-sided choices differ
X = np.array([[-3.7, -2.2, -1.4, -0.8, -0.3], [0.2, 0.7, 1.3, 2.6, 4.1]])

# name: (function of (F, lib, *tensors), input arrays); every float input gets a gradient
CASES = {
    "selu": (lambda F, L, x: F.selu(x), [X]),
    "celu": (lambda F, L, x: F.celu(x, 0.7), [X]),
    "threshold": (lambda F, L, x: F.threshold(x, 0.5, -3.0), [X]),
    "hardsigmoid": (lambda F, L, x: F.hardsigmoid(x * 2), [X]),
    "softsign": (lambda F, L, x: F.softsign(x), [X]),
    "tanhshrink": (lambda F, L, x: F.tanhshrink(x), [X]),
    "softshrink": (lambda F, L, x: F.softshrink(x, 1.0), [X]),
    "hardshrink": (lambda F, L, x: F.hardshrink(x, 1.0), [X]),
    "softmin": (lambda F, L, x: F.softmin(x, 1), [X]),
    "relu6": (lambda F, L, x: F.relu6(x * 3), [X]),
    "addcmul": (lambda F, L, a, b, c: L.addcmul(a, b, c, value=0.5), [X, X[::-1], X.T.reshape(2, 5)]),
    "addcdiv": (lambda F, L, a, b, c: L.addcdiv(a, b, c.exp(), value=-2), [X, X[::-1], X.T.reshape(2, 5)]),
    "addmm": (lambda F, L, a, b, c: L.addmm(a, b, c, beta=0.5, alpha=2), [X[:, :4], X[:, 1:3], X[::-1, :4]]),
    "addmm_plain": (lambda F, L, a, b, c: L.addmm(a[0], b, c), [X[:, :4], X[:, 1:3], X[::-1, :4]]),
    "addmm_beta0": (lambda F, L, a, b, c: L.addmm(a, b, c, beta=0), [X[:, :4], X[:, 1:3], X[::-1, :4]]),
    "masked_select": (lambda F, L, x: L.masked_select(x, L.tensor(X[0] > -1)), [X]),
    "tile": (lambda F, L, x: L.tile(x, (2, 1, 2)), [X]),
    "tile_method": (lambda F, L, x: x.tile(3), [X]),
    "multiply": (lambda F, L, a, b: L.multiply(a, b), [X, X[::-1]]),
    "subtract": (lambda F, L, a, b: L.subtract(a, b, alpha=2), [X, X[::-1]]),
    "divide": (lambda F, L, a, b: L.divide(a, b.exp()), [X, X[::-1]]),
    "leaky_relu_inplace": (lambda F, L, x: F.leaky_relu(x + 1, 0.2, inplace=True), [X]),
    "elu_": (lambda F, L, x: F.elu_(x * 2), [X]),
    "hardtanh_": (lambda F, L, x: F.hardtanh_(x * 1.0, -2.0, 2.0), [X]),
    "selu_inplace": (lambda F, L, x: F.selu(x * 1.0, inplace=True), [X]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name, dtype):
    fn, arrays = CASES[name]
    got = {}
    for lib, F in ((torch, TF), (tg, GF)):
        xs = [lib.tensor(np.ascontiguousarray(a, dtype), requires_grad=True) for a in arrays]
        out = fn(F, lib, *xs)
        seed = np.linspace(-1, 2, out.numel()).reshape(tuple(out.shape)).astype(dtype)
        (out * lib.tensor(seed)).sum().backward()
        got[lib.__name__] = [out.detach().numpy()] + [x.grad.numpy() for x in xs]
    # (torch's celu and hardsigmoid kernels use float32 constants in float64 arithmetic: 1/6 = 0.16666667)
    tol = 1e-5 if dtype == np.float32 else 1e-7 if name in ("celu", "hardsigmoid") else 1e-12
    for a, b in zip(got["tapegrad"], got["torch"]):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


MODULES = ["SELU()", "CELU(0.5, inplace=True)", "Threshold(0.1, 20)", "Hardsigmoid()", "Softsign()", "Tanhshrink()",
           "Softshrink(0.3)", "Hardshrink()", "Softmin(dim=1)", "KLDivLoss(reduction='batchmean', log_target=True)",
           "ReflectionPad1d(2)", "ReflectionPad2d((1, 0, 2, 1))", "ReplicationPad1d((1, 2))", "ReplicationPad2d(1)",
           "ZeroPad1d(3)", "ZeroPad2d((1, 2, 3, 4))", "ConstantPad1d(2, 3.5)", "ConstantPad2d((0, 1, 1, 0), -1.0)",
           "CircularPad1d(1)", "CircularPad2d((1, 1, 0, 2))"]


@pytest.mark.parametrize("spec", MODULES)
def test_modules_repr_module_path_and_output(spec):
    a, b = eval("torch.nn." + spec), eval("tg.nn." + spec)
    assert repr(a) == repr(b)
    assert type(b).__module__.replace("tapegrad", "torch") == type(a).__module__
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    if "Pad1d" in spec:
        x = x[0]
    args = (x,) if "Loss" not in spec else (np.log(np.full((2, 3), 0.2, np.float32)), x[0, :2, 0, :3])
    want = a(*[torch.tensor(v) for v in args]).numpy()
    got = b(*[tg.tensor(v) for v in args]).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_data_parallel_on_cpu_calls_the_module_and_prefixes_its_keys():
    torch.manual_seed(0)
    tg.manual_seed(0)
    a, b = torch.nn.DataParallel(torch.nn.Linear(3, 2)), tg.nn.DataParallel(tg.nn.Linear(3, 2))
    assert list(a.state_dict()) == list(b.state_dict()) == ["module.weight", "module.bias"]
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(b(tg.tensor(x)).detach().numpy(), a(torch.tensor(x)).detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("input", [X, X > 0, np.array(3.0), np.zeros((2, 0)), np.array([[0, 1], [2, 0]])])
def test_nonzero(input):
    want, got = torch.nonzero(torch.tensor(input)), tg.nonzero(tg.tensor(input))
    assert got.dtype == tg.int64 and tuple(got.shape) == tuple(want.shape)
    assert got.tolist() == want.tolist()
    wt, gt = torch.tensor(input).nonzero(as_tuple=True), tg.tensor(input).nonzero(as_tuple=True)
    assert [t.tolist() for t in gt] == [t.tolist() for t in wt]


def test_limits_and_constants():
    for d in ("float16", "float32", "float64", "bfloat16"):
        if d == "bfloat16":
            pytest.importorskip("ml_dtypes")
        assert repr(tg.finfo(getattr(tg, d))) == repr(torch.finfo(getattr(torch, d)))
        for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
            assert getattr(tg.finfo(getattr(tg, d)), attr) == getattr(torch.finfo(getattr(torch, d)), attr)
    assert tg.finfo().eps == torch.finfo().eps
    for d in ("uint8", "int8", "int16", "int32", "int64"):
        assert repr(tg.iinfo(getattr(tg, d))) == repr(torch.iinfo(getattr(torch, d)))
        assert (tg.iinfo(getattr(tg, d)).max, tg.iinfo(getattr(tg, d)).bits) == (
            torch.iinfo(getattr(torch, d)).max, torch.iinfo(getattr(torch, d)).bits)
    for lib_call in ("finfo(L.int32)", "iinfo(L.float32)", "iinfo(L.bool)"):
        with pytest.raises(TypeError) as want:
            eval("torch." + lib_call.replace("L.", "torch."))
        with pytest.raises(TypeError) as got:
            eval("tg." + lib_call.replace("L.", "tg."))
        assert str(got.value) == str(want.value)
    assert (tg.pi, tg.e, tg.inf, tg.newaxis) == (torch.pi, torch.e, torch.inf, torch.newaxis)
    assert np.isnan(tg.nan)


def test_tensor_properties_and_predicates():
    for lib in (torch, tg):
        x = lib.zeros(2, 3, dtype=lib.float64)
        assert (x.ndimension(), x.nbytes, x.itemsize) == (2, 48, 8)
        assert lib.is_floating_point(x) and not lib.is_floating_point(lib.zeros(2, dtype=lib.int64))
        assert lib.is_nonzero(lib.tensor([2.0])) and not lib.tensor(0).is_nonzero()
    for bad in ([], [1.0, 2.0]):
        with pytest.raises(RuntimeError) as want:
            torch.is_nonzero(torch.tensor(bad))
        with pytest.raises(RuntimeError) as got:
            tg.is_nonzero(tg.tensor(bad))
        assert str(got.value) == str(want.value)
    with pytest.raises(RuntimeError, match="expected BoolTensor for mask"):
        tg.masked_select(tg.zeros(3), tg.zeros(3))


FILLS = [lambda t: t.uniform_(), lambda t: t.uniform_(-0.1, 0.1), lambda t: t.normal_(), lambda t: t.normal_(2.0, 0.02),
         lambda t: t.bernoulli_(0.3), lambda t: t.bernoulli_(), lambda t: t.uniform_(**{"from": -2, "to": 3})]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k", range(len(FILLS)))
def test_random_fills_draw_torchs_streams(k, dtype):
    """The same values from the same seed, and the stream left where torch leaves it (a draw after matches)."""
    got = []
    for lib in (torch, tg):
        lib.manual_seed(7)
        t = lib.empty(3, 17, dtype=getattr(lib, dtype))
        out = FILLS[k](t)
        assert out is t
        got.append((t.numpy().copy(), lib.rand(4).numpy()))
    np.testing.assert_array_equal(got[1][0], got[0][0])
    np.testing.assert_array_equal(got[1][1], got[0][1])


def test_bernoulli_of_probabilities():
    p = RNG.random((4, 9))
    for dtype in (np.float32, np.float64):
        torch.manual_seed(3)
        tg.manual_seed(3)
        want = torch.bernoulli(torch.tensor(p.astype(dtype)))
        got = tg.tensor(p.astype(dtype)).bernoulli()
        assert got.dtype == getattr(tg, np.dtype(dtype).name)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_a_refused_fill_draws_nothing_and_a_recorded_one_cuts_the_gradient():
    w = tg.zeros(3, requires_grad=True)
    tg.manual_seed(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        w.uniform_()
    assert tg.rand(2).tolist() == (tg.manual_seed(1), tg.rand(2).tolist())[1]
    with tg.no_grad():
        w.normal_()  # (as nn.init does)
    assert w._version == 1
    y = w * 2
    y.uniform_()
    y.sum().backward()
    assert w.grad.tolist() == [0.0, 0.0, 0.0]


def test_inplace_optimizer_arithmetic():
    """An optimizer's step as older scripts write it: addcmul_ / addcdiv_ under no_grad."""
    for lib in (torch, tg):
        p, m, v = (lib.tensor(a.astype(np.float32)) for a in (X, X[::-1], np.abs(X.T.reshape(2, 5))))
        with lib.no_grad():
            m.mul_(0.9).add_(p, alpha=0.1)
            v.mul_(0.99).addcmul_(p, p, value=0.01)
            p.addcdiv_(m, v.sqrt().add_(1e-8), value=-0.01)
            p.multiply_(2).subtract_(0.5).divide_(3)
        if lib is torch:
            want = p.numpy().copy()
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-6)


def test_deprecated_alpha_first_overload_of_add_and_sub(monkeypatch):
    """Old tutorials' `p.data.add_(-learning_rate, p.grad.data)`: torch's values, and its deprecation warning once
    per process (torch's state is the test process's: only tapegrad's warning is checked)."""
    import tapegrad._deprecated
    monkeypatch.setattr(tapegrad._deprecated, "_warned", [])
    got = []
    for lib in (torch, tg):
        p, g = lib.ones(3), lib.full((3,), 2.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p.add_(-0.5, g)
            q = p.sub(3, g)
            r = p.add(2, g)
        got.append((p.tolist(), q.tolist(), r.tolist()))
    assert [str(w.message) for w in caught] == [
        "This overload of add_ is deprecated:\n\tadd_(Number alpha, Tensor other)\nConsider using one of the "
        "following signatures instead:\n\tadd_(Tensor other, *, Number alpha = 1)"]
    assert got[0] == got[1]


@pytest.mark.parametrize("call", ["unsqueeze_(-1)", "unsqueeze_(0)", "squeeze_()", "squeeze_(0)", "t_()",
                                  "transpose_(0, 1)", "swapdims_(1, 0)", "swapaxes_(0, 1)"])
def test_inplace_view_methods(call):
    got = []
    for lib in (torch, tg):
        x = lib.tensor(np.arange(6.0).reshape(1, 6) if "squeeze" in call and "un" not in call else
                       np.arange(6.0).reshape(2, 3))
        out = eval("x." + call)
        assert out is x
        got.append((tuple(x.shape), x.tolist()))
    assert got[0] == got[1]
    a = tg.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        eval("a." + call)
    with pytest.raises(NotImplementedError, match=r"Tensor\.\w+_ on a tensor that requires grad"):
        eval("(a * 2)." + call)


@pytest.mark.parametrize("shape", [(5, 8), (8, 5), (3, 4, 2), (4, 4)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_orthogonal_init_draws_in_the_tensors_dtype(shape, dtype):
    """torch factors normals drawn in the tensor's dtype (float32's stream is not float64's past 16 values)."""
    got = []
    for lib in (torch, tg):
        lib.manual_seed(5)
        w = lib.empty(*shape, dtype=getattr(lib, dtype))
        lib.nn.init.orthogonal_(w, gain=1.5)
        got.append(w.numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=0, atol=2e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode, padding_mode", [("bilinear", "zeros"), ("bilinear", "border"), ("bilinear", "reflection"),
                                                ("nearest", "zeros"), ("nearest", "border"), ("nearest", "reflection"),
                                                ("bicubic", "zeros"), ("bicubic", "border"), ("bicubic", "reflection")])
def test_spatial_transformer_affine_grid_and_grid_sample(mode, padding_mode, align_corners, dtype):
    """The spatial transformer tutorial's pair: values and gradients for the input and theta (random maps, so that
    no sample falls on a pixel's edge, where bilinear's gradient jumps and nearest's choice is a rounding's)."""
    x = RNG.standard_normal((2, 3, 5, 6)).astype(dtype)
    theta = (np.eye(2, 3) + 0.3 * RNG.standard_normal((2, 2, 3))).astype(dtype)
    seed = RNG.standard_normal((2, 3, 4, 7)).astype(dtype)
    got = []
    for lib in (torch, tg):
        tx, tt = lib.tensor(x, requires_grad=True), lib.tensor(theta, requires_grad=True)
        grid = lib.nn.functional.affine_grid(tt, (2, 3, 4, 7), align_corners=align_corners)
        y = lib.nn.functional.grid_sample(tx, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        (y * lib.tensor(seed)).sum().backward()
        got.append([grid.detach().numpy(), y.detach().numpy(), tx.grad.numpy(), tt.grad.numpy()])
    tol = 2e-5 if dtype == np.float32 else 1e-10
    for a, b in zip(got[1], got[0]):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_is_torchs_bit_for_bit_and_so_is_the_tutorials_gradient(align_corners, dtype):
    """The spatial transformer tutorial starts from the identity map, whose grid samples exactly on pixel centres:
    there grid_sample's gradient is one-sided, and a grid one ulp off gave theta a wholly different gradient."""
    x = RNG.standard_normal((2, 3, 7, 28)).astype(dtype)
    theta = np.tile(np.eye(2, 3), (2, 1, 1)).astype(dtype)
    got = []
    for lib in (torch, tg):
        tt = lib.tensor(theta, requires_grad=True)
        grids = [lib.nn.functional.affine_grid(tt, (2, 3) + hw, align_corners=align_corners).detach().numpy()
                 for hw in ((1, 5), (7, 28), (13, 6), (28, 28))]
        grid = lib.nn.functional.affine_grid(tt, (2, 3, 7, 28), align_corners=align_corners)
        lib.nn.functional.grid_sample(lib.tensor(x), grid, align_corners=align_corners).sum().backward()
        got.append((grids, tt.grad.numpy()))
    for a, b in zip(got[1][0], got[0][0]):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4)


def test_grid_sample_warnings_and_errors():
    x, theta = tg.zeros(1, 1, 3, 3), tg.tensor([[[1.0, 0, 0], [0, 1, 0]]])
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has changed"):
        grid = tg.nn.functional.affine_grid(theta, (1, 1, 3, 3))
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3"):
        tg.nn.functional.affine_grid(tg.zeros(1, 3, 3), (1, 1, 3, 3), align_corners=False)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic'"):
        tg.nn.functional.grid_sample(x, grid, mode="linear", align_corners=False)


@pytest.mark.parametrize("x_shape, grid_shape, theta_shape, mode", [
    ((1, 1, 3, 3), (2, 3, 3, 2), None, "bilinear"), ((1, 1, 3, 3), (1, 3, 3, 3), None, "bilinear"),
    ((1, 1, 3, 3), (1, 2, 3, 3, 2), None, "bilinear"), ((1, 1, 2, 3, 3), (1, 3, 3, 2), None, "bilinear"),
    ((1, 1, 3), (1, 3, 1), None, "bilinear"), ((1, 1, 0, 3), (1, 3, 3, 2), None, "bilinear"),
    ((1, 1, 2, 0, 3), (1, 2, 3, 3, 3), None, "nearest"), ((1, 1, 2, 3, 3), (1, 2, 3, 3, 3), None, "bicubic"),
    (None, None, (2, 2, 3), None), (None, None, (2, 3, 3), None)])
def test_grid_sampler_and_affine_grid_errors_in_torchs_order(x_shape, grid_shape, theta_shape, mode):
    got = []
    for lib in (torch, tg):
        try:
            if theta_shape is None:
                lib.nn.functional.grid_sample(lib.zeros(*x_shape), lib.zeros(*grid_shape), mode=mode,
                                              align_corners=False)
            else:
                lib.nn.functional.affine_grid(lib.zeros(*theta_shape), (2, 1, 2, 3, 4), align_corners=False)
            got.append(None)
        except Exception as e:  # noqa: BLE001 (the exception is what is compared)
            got.append((type(e).__name__, str(e).replace("torch.Size", "Size")))
    assert got[1] == got[0] and got[0] is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5, 6), (2, 1, 1, 3, 2)])
def test_volumetric_affine_grid_and_grid_sample(size, align_corners, dtype):
    """3-D spatial transformers: affine_grid of N x 3 x 4 maps over (N, C, D, H, W), and grid_sample of 5-D inputs
    (trilinear and nearest, every padding), values and gradients of the input and theta against torch's."""
    rng = np.random.default_rng(size[2] + 2 * align_corners)
    theta = (np.eye(3, 4) + 0.3 * rng.standard_normal((size[0], 3, 4))).astype(dtype)
    x = rng.standard_normal(size).astype(dtype)
    got = []
    for lib in (torch, tg):
        tt, tx = lib.tensor(theta, requires_grad=True), lib.tensor(x, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch's warning for a unit-size grid with align_corners)
            grid = lib.nn.functional.affine_grid(tt, size, align_corners=align_corners)
        outs = [lib.nn.functional.grid_sample(tx, grid, mode=mode, padding_mode=padding, align_corners=align_corners)
                for mode in ("bilinear", "nearest") for padding in ("zeros", "border", "reflection")]
        sum((out * (k + 1)).sum() for k, out in enumerate(outs)).backward()
        got.append([grid.detach().numpy()] + [o.detach().numpy() for o in outs] + [tt.grad.numpy(), tx.grad.numpy()])
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for a, b in zip(got[1], got[0]):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode, padding_mode", [("bilinear", "border"), ("bilinear", "reflection"), ("bicubic", "zeros"),
                                                ("bicubic", "border"), ("bicubic", "reflection")])
@pytest.mark.parametrize("shape", [(2, 3, 5, 6), (1, 2, 1, 4), (1, 2, 4, 1), (1, 1, 1, 1)])
def test_grid_sample_padding_on_borders_and_mirrors(shape, mode, padding_mode, align_corners, dtype):
    """Coordinates far outside (mirrored several times), and on quarter pixels, so that samples fall exactly on the
    borders and the mirrors, where torch's kernel gives the gradient multipliers that clamp does not (0 at a border,
    +1 at a mirror); a size-1 side with align_corners reflects everything to 0, with no gradient. Bicubic pads each
    of its 16 taps instead."""
    rng = np.random.default_rng(len(shape) + shape[-1])
    grid = np.round((rng.random((shape[0], 7, 4, 2)) * 8 - 4) * 4) / 4
    grid[0, 0] = [[-1, -1], [1, 1], [0, 0], [-3, 3]]
    x, grid, seed = rng.random(shape).astype(dtype), grid.astype(dtype), rng.random((shape[0], shape[1], 7, 4))
    got = []
    for lib in (torch, tg):
        tx, tgrid = lib.tensor(x, requires_grad=True), lib.tensor(grid, requires_grad=True)
        y = lib.nn.functional.grid_sample(tx, tgrid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        (y * lib.tensor(seed.astype(dtype))).sum().backward()
        got.append([y.detach().numpy(), tx.grad.numpy(), tgrid.grad.numpy()])
    tol = (2e-6 if mode == "bilinear" else 2e-5) if dtype == np.float32 else 1e-13
    for a, b in zip(got[1], got[0]):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("shape, args", [((10,), (0, 3, 2)), ((10,), (0, 10, 1)), ((10,), (-1, 1, 5)),
                                         ((2, 3, 8, 8), (2, 4, 4)), ((2, 3, 8, 8), (3, 3, 2)), ((), (0, 1, 1))])
def test_tensor_unfold(shape, args):
    """Vision transformers' patches: x.unfold(2, p, p).unfold(3, p, p); values and gradients."""
    a = RNG.standard_normal(shape)
    got = []
    for lib in (torch, tg):
        x = lib.tensor(a, requires_grad=True)
        y = x.unfold(*args)
        (y * lib.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)))).sum().backward()
        got.append((y.detach().numpy(), x.grad.numpy()))
    for a_, b_ in zip(got[1], got[0]):
        assert a_.shape == b_.shape
        np.testing.assert_allclose(a_, b_, rtol=1e-12, atol=1e-12)
    for bad in ((0, 11, 1), (0, 3, 0)):
        with pytest.raises(RuntimeError) as want:
            torch.arange(10.0).unfold(*bad)
        with pytest.raises(RuntimeError) as have:
            tg.arange(10.0).unfold(*bad)
        assert str(have.value) == str(want.value)


def test_hub_tqdm_is_tqdms_where_installed(monkeypatch):
    """torch.hub.tqdm is tqdm's own class when tqdm is installed, a silent counter otherwise (both checked: a
    stand-in module plays the installed tqdm)."""
    import importlib
    import sys
    import types
    import tapegrad.hub as hub
    fake = types.ModuleType("tqdm")
    fake.tqdm = type("tqdm", (), {})
    try:
        monkeypatch.setitem(sys.modules, "tqdm", fake)
        assert importlib.reload(hub).tqdm is fake.tqdm
        monkeypatch.setitem(sys.modules, "tqdm", None)  # (import fails: not installed)
        bar = importlib.reload(hub).tqdm(total=3)
        bar.update(2)
        assert bar.n == 2
    finally:
        monkeypatch.undo()
        importlib.reload(hub)


SHAPE_CASES = {
    "diff": lambda L, a, b: [L.diff(a), L.diff(a, n=2), a.diff(prepend=L.tensor([0.0])), L.diff(b, dim=0),
                             L.diff(b, n=2, dim=1, append=L.tensor([[1.0], [2.0]]))],
    "meshgrid_ij": lambda L, a, b: list(L.meshgrid(a[:3], a[2:], indexing="ij")),
    "meshgrid_xy": lambda L, a, b: list(L.meshgrid([a[:3], a[1:], b[0]], indexing="xy")),
    "broadcast": lambda L, a, b: list(L.broadcast_tensors(a[:3], b)) + [L.broadcast_to(a[:3], (2, 3)),
                                                                          a[:3].broadcast_to((4, 3))],
    "repeat_interleave": lambda L, a, b: [L.repeat_interleave(b, 2), b.repeat_interleave(2, dim=0),
                                          L.repeat_interleave(b, L.tensor([1, 3]), dim=0),
                                          b.repeat_interleave(L.tensor([1, 0, 2]), dim=1), a.repeat_interleave(3)],
}


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
def test_shape_composites(name):
    got = []
    for lib in (torch, tg):
        a = lib.tensor([1.0, 4.0, 9.0, 16.0, 20.0], requires_grad=True)
        b = lib.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]], requires_grad=True)
        outs = SHAPE_CASES[name](lib, a, b)
        sum((o * lib.arange(float(o.numel())).reshape(o.shape)).sum() for o in outs).backward()
        got.append(([o.detach().numpy() for o in outs], [None if t.grad is None else t.grad.numpy() for t in (a, b)]))
    for x, y in zip(got[1][0] + got[1][1], got[0][0] + got[0][1]):
        assert (x is None) == (y is None)
        if x is not None:
            assert x.shape == y.shape
            np.testing.assert_array_equal(x, y)


def test_shape_composites_edges_and_errors():
    assert tg.repeat_interleave(tg.tensor([2, 0, 1])).tolist() == torch.repeat_interleave(torch.tensor([2, 0, 1])).tolist()
    assert tg.broadcast_shapes((2, 1), (3,), 1) == torch.broadcast_shapes((2, 1), (3,), 1)
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        tg.meshgrid(tg.arange(2), tg.arange(3))
    b = tg.zeros(2, 3)
    for call in ("L.diff(L.tensor(1.0))", "L.repeat_interleave(L.zeros(2, 3), L.tensor([1, 2, 3]), dim=0)",
                 "L.meshgrid(L.zeros(2), L.zeros(2), indexing='yx')", "L.diff(L.zeros(3), n=-1)"):
        with pytest.raises(RuntimeError) as want:
            eval(call.replace("L.", "torch."))
        with pytest.raises(RuntimeError) as have:
            eval(call.replace("L.", "tg."))
        assert str(have.value) == str(want.value)


LINALG = ["L.norm(A)", "L.norm(v)", "L.norm(v, 1)", "L.norm(v, math.inf)", "L.norm(A, dim=1)", "L.norm(A, dim=(0, 2))",
          "L.norm(A[0], 'fro')", "L.norm(A[0], 1)", "L.norm(A[0], -math.inf)", "L.matrix_norm(A)",
          "L.matrix_norm(A, 1)", "L.matrix_norm(A, -1, keepdim=True)", "L.matrix_norm(A, math.inf, dim=(0, 2))",
          "L.vector_norm(A, 3, dim=-1)", "L.norm(A, 1, dim=2, keepdim=True)", "L.norm(A.float(), dtype=lib.float64)"]


@pytest.mark.parametrize("call", LINALG)
def test_linalg_norms(call):
    import math  # noqa: F401  (the calls' math.inf)
    a, b = RNG.standard_normal((3, 4, 5)), RNG.standard_normal(6)
    got = []
    for lib in (torch, tg):
        A, v, L = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True), lib.linalg
        out = eval(call)
        (out * (1 + lib.arange(float(out.numel())).reshape(out.shape))).sum().backward()
        got.append([out.detach().numpy()] + [None if t.grad is None else t.grad.numpy() for t in (A, v)])
    for x, y in zip(got[1], got[0]):
        assert (x is None) == (y is None)
        if x is not None:
            assert x.shape == y.shape and x.dtype == y.dtype
            # (through .float(), the gradient is float32's: one rounding of it may differ)
            tol = 1e-6 if x.dtype == np.float32 or "float()" in call else 1e-12
            np.testing.assert_allclose(x, y, rtol=tol, atol=1e-12)


def test_linalg_errors():
    for call in ("L.norm(L_ones(3, 4, 5), 2)", "L.matrix_norm(L_ones(3))", "L.matrix_norm(L_ones(3, 3), 'foo')",
                 "L.matrix_norm(L_ones(3, 3), 3)"):
        with pytest.raises(RuntimeError) as want:
            eval(call.replace("L_ones", "torch.ones").replace("L.", "torch.linalg."))
        with pytest.raises(RuntimeError) as have:
            eval(call.replace("L_ones", "tg.ones").replace("L.", "tg.linalg."))
        assert str(have.value) == str(want.value)
    m = np.array([[2.0, -1.0, 0.5], [0.0, 3.0, 1.0], [1.0, 1.0, -2.0]])
    for order in ("nuc", 2, -2):  # (by the singular values: tapegrad.linalg's svd)
        np.testing.assert_allclose(tg.linalg.matrix_norm(tg.tensor(m), order).item(),
                                   torch.linalg.matrix_norm(torch.tensor(m), order).item(), rtol=1e-10)


# -- ops/pointwise.py and ops/arrange.py: integer dtypes, in-place forms, namedtuples, errors -------------------------
def _same(got, want):
    """got (tapegrad) equals want (torch): dtype, shape and values (NaN where torch's is)."""
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    if not isinstance(want, torch.Tensor):
        assert str(got) == str(want)  # (bools, and dtypes: tapegrad's print as torch's)
        return
    assert str(got.dtype) == str(want.dtype), (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-7, equal_nan=True)


XI = np.array([[7, -7, 9, 0, -3], [12, 5, -8, 1, 6]])
YI = np.array([[3, 2, -4, 5, 7], [-5, -2, 3, 1, 4]])
XF = np.array([[1.5, -2.5, 3.0, -0.0, 0.5], [np.inf, -np.inf, np.nan, 2.0, -7.25]], np.float32)


@pytest.mark.parametrize("call", [
    lambda L, a, b: L.fmod(a, b), lambda L, a, b: L.remainder(a, b), lambda L, a, b: a % b,
    lambda L, a, b: a % 3, lambda L, a, b: 7 % b, lambda L, a, b: L.remainder(-7, b), lambda L, a, b: a // b,
    lambda L, a, b: -9 // b, lambda L, a, b: L.floor_divide(a, 2.5), lambda L, a, b: L.fmod(a, 2.5),
    lambda L, a, b: L.gcd(a, b), lambda L, a, b: L.lcm(a, b), lambda L, a, b: a.bitwise_and(b),
    lambda L, a, b: L.bitwise_or(a, b), lambda L, a, b: L.bitwise_xor(a, 5), lambda L, a, b: L.bitwise_not(a),
    lambda L, a, b: a << b.abs(), lambda L, a, b: L.bitwise_right_shift(a, b.abs()), lambda L, a, b: 1 << b.abs(),
    lambda L, a, b: L.deg2rad(a), lambda L, a, b: L.rad2deg(a), lambda L, a, b: L.float_power(a, b),
    lambda L, a, b: L.asinh(a), lambda L, a, b: L.hypot(a.float(), b), lambda L, a, b: L.fmax(a, b),
    lambda L, a, b: L.ldexp(a.double(), b.abs()), lambda L, a, b: a[:, :2].trace(), lambda L, a, b: L.vander(a[0]),
    lambda L, a, b: L.kron(a, b), lambda L, a, b: L.block_diag(a, b.int()), lambda L, a, b: L.nan_to_num(a),
    lambda L, a, b: L.copysign(a, b), lambda L, a, b: L.sgn(a), lambda L, a, b: L.signbit(a),
    lambda L, a, b: L.heaviside(a, b), lambda L, a, b: (a.byte(), a.char(), a.short(), a.is_signed(), a.is_complex()),
    lambda L, a, b: (L.result_type(a, 1.0), L.result_type(a.int(), a.short()), L.promote_types(L.uint8, L.int8),
                     L.can_cast(L.float, L.int), L.can_cast(L.int32, L.int8), L.can_cast(L.int, L.bool)),
    lambda L, a, b: (L.isreal(a), L.positive(a), L.absolute(a), L.negative(a), L.is_same_size(a, b)),
])
def test_integer_inputs_as_torch(call):
    _same(call(tg, tg.tensor(XI), tg.tensor(YI)), call(torch, torch.tensor(XI), torch.tensor(YI)))


@pytest.mark.parametrize("call", [
    lambda L, x: L.nan_to_num(x), lambda L, x: L.nan_to_num(x, nan=1.0, posinf=2.0), lambda L, x: L.signbit(x),
    lambda L, x: L.isneginf(x), lambda L, x: L.isposinf(x), lambda L, x: L.frexp(x), lambda L, x: L.fmax(x, x.flip(1)),
    lambda L, x: L.fmin(x, x.flip(0)), lambda L, x: L.copysign(x.flip(1), x), lambda L, x: L.heaviside(x, x.flip(1)),
    lambda L, x: L.nextafter(x, x.flip(1)), lambda L, x: x.sgn(), lambda L, x: L.fmod(x, 1.5),
    lambda L, x: L.remainder(x, -1.5), lambda L, x: L.floor_divide(x, 0.75), lambda L, x: L.logaddexp(x, x.flip(0)),
    lambda L, x: L.hypot(x, x.flip(0)), lambda L, x: x.frac(), lambda L, x: L.ldexp(x, L.tensor([3])),
])
def test_special_values_as_torch(call):
    _same(call(tg, tg.tensor(XF)), call(torch, torch.tensor(XF)))


def test_frexp_namedtuple_and_exponent_dtype():
    m, e = tg.frexp(tg.tensor([3.0, -0.25, 0.0]))
    r = tg.frexp(tg.tensor([3.0]))
    assert r.mantissa is r[0] and r.exponent.dtype == tg.int32 and type(r).__name__ == "frexp"
    tm, te = torch.frexp(torch.tensor([3.0, -0.25, 0.0]))
    _same((m, e), (tm, te))
    assert repr(r).startswith("torch.return_types.frexp(")


@pytest.mark.parametrize("name,args", [
    ("eq_", (2.0,)), ("ne_", (2.0,)), ("lt_", ("t",)), ("le_", ("t",)), ("gt_", (0.0,)), ("ge_", ("t",)),
    ("greater_", ("t",)), ("less_equal_", (1.0,)), ("not_equal_", ("t",)), ("logical_and_", ("t",)),
    ("logical_or_", ("t",)), ("logical_xor_", ("t",)), ("logical_not_", ()), ("fmod_", (1.5,)),
    ("remainder_", (1.5,)), ("floor_divide_", (0.5,)), ("copysign_", (-1.0,)), ("frac_", ()), ("fix_", ()),
    ("sgn_", ()), ("nan_to_num_", ()), ("deg2rad_", ()), ("rad2deg_", ()), ("asinh_", ()), ("atanh_", ()),
    ("arcsinh_", ()), ("hypot_", ("t",)), ("ldexp_", ("t",)), ("nextafter_", ("t",)), ("absolute_", ()),
    ("negative_", ()), ("arctan2_", ("t",)), ("arcsin_", ()),
])
def test_inplace_forms_keep_selfs_dtype(name, args):
    base = np.array([[0.5, 2.0, -0.25], [0.0, 0.75, -0.5]], np.float32)
    out = []
    for L in (torch, tg):
        x = L.tensor(base)
        other = L.tensor(base[::-1].copy())
        r = getattr(x, name)(*[other if a == "t" else a for a in args])
        assert r is x
        out.append(x)
    _same(out[1], out[0])


def test_inplace_integer_comparisons_and_bitwise_keep_selfs_dtype():
    for name, arg in [("eq_", 0), ("lt_", 3), ("bitwise_and_", 6), ("bitwise_not_", None), ("gcd_", "t"),
                      ("bitwise_left_shift_", 1)]:
        out = []
        for L in (torch, tg):
            x = L.tensor(XI.copy())
            arg_ = L.tensor(YI) if arg == "t" else arg
            getattr(x, name)(*(() if arg_ is None else (arg_,)))
            out.append(x)
        _same(out[1], out[0])


def test_inplace_of_a_leaf_that_requires_grad_refuses():
    x = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.fmod_(2.0)


@pytest.mark.parametrize("name, call", [
    ("remainder", lambda L, x: L.remainder(2.0, x)), ("floor_divide", lambda L, x: L.floor_divide(x, 2.0)),
    ("floor_divide", lambda L, x: x // 2), ("floor_divide", lambda L, x: L.floor_divide(L.tensor(2.0), x)),
    ("heaviside", lambda L, x: L.heaviside(x, L.tensor(0.5))), ("heaviside", lambda L, x: L.heaviside(L.ones(3), x))])
def test_ops_without_a_derivative_require_grad_and_refuse_backward(name, call):
    """torch's remainder(number, tensor), floor_divide and heaviside have no derivative: their result requires grad
    (grad_fn NotImplemented) and a backward through it raises torch's error; under no_grad it is a constant."""
    got = []
    for L in (torch, tg):
        x = L.tensor([1.5, -2.0, 0.0], requires_grad=True)
        y = call(L, x)
        with pytest.raises(RuntimeError, match=f"derivative for aten::{name} is not implemented"):
            y.sum().backward()
        with L.no_grad():
            constant = call(L, x).requires_grad
        got.append((np.nan_to_num(y.detach().numpy(), nan=7.0).tolist(), y.requires_grad, type(y.grad_fn).__name__,
                    constant))
    assert got[1] == got[0]


def test_float_power_is_float64_and_its_gradient_keeps_the_input_dtype():
    for L in (torch, tg):
        x = L.tensor([1.5, 2.0], requires_grad=True)
        y = L.float_power(x, 3)
        assert y.dtype == L.float64
        y.sum().backward()
        assert x.grad.dtype == L.float32
        np.testing.assert_allclose(x.grad.numpy(), [6.75, 12.0])


@pytest.mark.parametrize("call", [
    lambda L: L.fmod(L.tensor([1, 2]), L.tensor([1, 0])), lambda L: L.tensor([1, 2]) // 0,
    lambda L: L.gcd(L.tensor([1.0]), L.tensor([2.0])), lambda L: L.bitwise_not(L.tensor([1.0])),
    lambda L: L.tensor([1.0]) << 1, lambda L: L.frac(L.tensor([1])), lambda L: L.frexp(L.tensor([1])),
    lambda L: L.heaviside(L.tensor([1.0]), L.tensor([1.0], dtype=L.float64)),
    lambda L: L.positive(L.tensor([True])), lambda L: L.floor_divide(L.tensor([True]), L.tensor([True])),
    lambda L: L.rot90(L.ones(3)), lambda L: L.rot90(L.ones(2, 2), 1, (0, 0)), lambda L: L.rot90(L.ones(2, 2), 1, (0,)),
    lambda L: L.fliplr(L.ones(3)), lambda L: L.flipud(L.tensor(1.0)), lambda L: L.hsplit(L.ones(2, 3), 2),
    lambda L: L.vsplit(L.ones(3), 1), lambda L: L.dsplit(L.ones(2, 2), 1),
    lambda L: L.vdot(L.ones(3, 1), L.ones(3)), lambda L: L.ones(2, 3).sum_to_size(4),
    lambda L: L.block_diag(L.ones(2, 2, 2)), lambda L: L.vander(L.ones(2, 2)), lambda L: L.pdist(L.ones(3)),
    lambda L: L.ones(3).trace(),
    lambda L: L.cdist(L.ones(3), L.ones(3)), lambda L: L.cdist(L.ones(2, 3), L.ones(2, 4)),
    lambda L: L.renorm(L.ones(2, 3), 2, 0, -1.0), lambda L: L.split_with_sizes(L.ones(3), [1, 1]),
    lambda L: L.narrow_copy(L.ones(3), 0, 1, 5), lambda L: L.combinations(L.ones(3, 1)),
    lambda L: L.cartesian_prod(L.ones(2, 2)), lambda L: L.tensordot(L.ones(2, 3), L.ones(2, 3), ([1], [0])),
    lambda L: L.tensor_split(L.ones(3), 0),
])
def test_errors_as_torch(call):
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(type(want.value)) as got:
        call(tg)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("call", [
    lambda L, x: L.tensor_split(x, 3), lambda L, x: L.tensor_split(x, [2, 1, 9]),
    lambda L, x: L.tensor_split(x, L.tensor([1, 4])), lambda L, x: L.tensor_split(x, L.tensor(2)),
    lambda L, x: L.hsplit(x, [1]), lambda L, x: L.atleast_1d(x, x), lambda L, x: L.atleast_3d((x[0], x)),
    lambda L, x: L.combinations(x[:, 0], 0), lambda L, x: L.combinations(x[:2, 0], 3),
    lambda L, x: L.cartesian_prod(x[:, 0]), lambda L, x: L.logspace(0, 2, 5), lambda L, x: L.logspace(0, 3, 4, base=2),
    lambda L, x: L.logspace(-1, 1, 3, dtype=L.float64), lambda L, x: L.rot90(x, -3), lambda L, x: L.rot90(x[:0]),
    lambda L, x: L.kron(x[0], x), lambda L, x: L.block_diag(), lambda L, x: L.cdist(x[:0], x),
    lambda L, x: L.pdist(x[:1]), lambda L, x: L.tensordot(x, x.t(), 1), lambda L, x: x[:0].trace(),
    lambda L, x: x.t().ravel(), lambda L, x: L.dstack([x[0], x[1]]), lambda L, x: L.column_stack((x[0, 0], x[1, 0])),
])
def test_shape_functions_edges(call):
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3) - 5.5
    _same(call(tg, tg.tensor(x)), call(torch, torch.tensor(x)))


def test_chain_matmul_warns_once_as_deprecated(monkeypatch):
    import tapegrad.ops.arrange
    monkeypatch.setattr(tapegrad.ops.arrange, "_warned_chain_matmul", [False])  # (an earlier test may have warned)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tg.chain_matmul(tg.ones(2, 3), tg.ones(3, 2))
        tg.chain_matmul(tg.ones(2, 3), tg.ones(3, 2))
    assert [str(w.message)[:37] for w in caught] == ["torch.chain_matmul is deprecated and "]


def test_nn_aliases_at_top_level_take_torchs_argument_order():
    x = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    for call in [lambda L, t: L.batch_norm(t, L.ones(4), L.zeros(4), L.zeros(4), L.ones(4), False, 0.1, 1e-5, False),
                 lambda L, t: L.instance_norm(t, None, None, None, None, True, 0.1, 1e-5, False),
                 lambda L, t: L.group_norm(t, 2, L.ones(4), None, 1e-5, False), lambda L, t: L.prelu(t, L.ones(4) / 4),
                 lambda L, t: L.cosine_embedding_loss(t[0], t[1], L.tensor([1.0, -1, 1, 1]), 0.1, 2),
                 lambda L, t: L.cosine_embedding_loss(t[0], t[1], L.tensor([1.0, -1, 1, 1]))]:
        _same(call(tg, tg.tensor(x)), call(torch, torch.tensor(x)))


def test_tensor_split_gives_views_and_compile_traces_the_pointwise_rows():
    x = tg.arange(6.0)
    a, b = x.tensor_split(2)
    a[0] = 10.0
    assert float(x[0]) == 10.0
    w = tg.tensor([0.5, 2.0, -1.5], requires_grad=True)

    def f(v):
        return (tg.fmod(v * 3, 1.25) + tg.hypot(v, v + 1) + tg.asinh(v)).sum()

    compiled = tg.compile(f)
    for v in ([0.5, 2.0, -1.5], [1.0, -3.0, 0.25]):
        w = tg.tensor(v, requires_grad=True)
        t = torch.tensor(v, requires_grad=True)
        got, want = compiled(w), (torch.fmod(t * 3, 1.25) + torch.hypot(t, t + 1) + torch.asinh(t)).sum()
        got.backward()
        want.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), t.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("call", ["selu(x)", "celu(x, 0.5)", "hardshrink(x, 1.0)", "threshold(x, 0.5, -2.0)",
                                  "selu_(x.clone())", "celu_(x.clone())", "threshold_(x.clone(), 0.5, -2.0)",
                                  "relu_(x.clone())", "trace(x[:, :2])"])
def test_top_level_names_of_functional_activations_and_trace(call):
    got = [eval("lib." + call, {"lib": lib, "x": lib.tensor(X)}).numpy() for lib in (torch, tg)]
    np.testing.assert_allclose(got[1], got[0], rtol=1e-6)
