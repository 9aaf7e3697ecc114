"""The five seed tutorials (/work/shared/seeds) as tests.

Every test runs twice through the ``lib`` fixture: once against ``tapegrad`` and
once against PyTorch, which is the oracle.  Where a seed shows output of an
obsolete PyTorch (``Variable containing:``, ``AddConstantBackward``,
``CopyBackwards``, a scalar "of size 1"), the tests assert what modern PyTorch
does instead.  Numbers are compared through ``t.detach().numpy()``, which both
libraries support.

``test_seed_script_output`` runs each program in ``examples/seeds/`` with both
libraries and compares what they print.
"""
import importlib
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS_DIR = REPO / "examples" / "seeds"
SCRIPTS = [
    "seed_001_backward.py",
    "seed_002_d2l_autograd.py",
    "seed_003_autograd_note.py",
    "seed_004_autograd_tutorial.py",
]
LIBS = ["tapegrad", "torch"]

GRAD_FN_STR = r"<{}Backward0 object at 0x[0-9a-fA-F]+>"


def _import(name):
    mod = importlib.import_module(name)
    if getattr(mod, "__file__", None) is None:
        # An empty ``tapegrad/`` directory on sys.path imports as a namespace package.
        raise ImportError(f"{name!r} is a bare namespace package (no __init__.py)")
    return mod


@pytest.fixture(params=LIBS)
def lib(request):
    return _import(request.param)


def arr(t):
    return np.asarray(t.detach().numpy())


def grad_fn_name(t):
    return type(t.grad_fn).__name__


def nonleaf_grad(t):
    # Modern PyTorch warns when .grad of a non-leaf is read; that warning is not asserted.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.grad


# ---------------------------------------------------------------- seed 001


def test_001_variable_returns_tensor(lib):
    v = lib.autograd.Variable(lib.ones(2, 2), requires_grad=True)
    assert isinstance(v, lib.Tensor)
    assert v.requires_grad
    assert v.is_leaf
    assert v.grad_fn is None
    assert v.grad is None
    assert tuple(v.shape) == (2, 2)
    assert repr(v) == "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"

    plain = lib.autograd.Variable(lib.Tensor([2, 2, 2]))
    assert isinstance(plain, lib.Tensor)
    assert not plain.requires_grad
    np.testing.assert_array_equal(arr(plain), [2.0, 2.0, 2.0])


def test_001_mean_backward(lib):
    x = lib.autograd.Variable(lib.ones(2, 2), requires_grad=True)
    y = x + 2
    # seed (torch 0.3): <torch.autograd.function.AddConstantBackward at 0x...>
    assert grad_fn_name(y) == "AddBackward0"
    assert re.fullmatch(GRAD_FN_STR.format("Add"), str(y.grad_fn))
    assert re.fullmatch(GRAD_FN_STR.format("Add"), repr(y.grad_fn))
    assert nonleaf_grad(y) is None
    assert not y.is_leaf

    z = y * y * 3
    # seed: MulConstantBackward
    assert grad_fn_name(z) == "MulBackward0"
    np.testing.assert_array_equal(arr(z), np.full((2, 2), 27.0))
    # seed: "Variable containing: 27 27 27 27 [torch.FloatTensor of size 2x2]"
    assert repr(z) == "tensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>)"

    out = z.mean()
    # seed: MeanBackward
    assert grad_fn_name(out) == "MeanBackward0"
    out.backward()
    np.testing.assert_allclose(arr(x.grad), np.full((2, 2), 4.5))
    assert repr(x.grad) == "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"
    # seed: a Variable "of size 1"; modern scalars are 0-dim
    assert tuple(out.shape) == ()
    assert out.item() == 27.0
    assert repr(out) == "tensor(27., grad_fn=<MeanBackward0>)"
    assert nonleaf_grad(y) is None  # still None after backward


def _seed001_vector(lib):
    x = lib.autograd.Variable(lib.Tensor([2, 2, 2]), requires_grad=True)
    y = x * 2
    return x, y


def test_001_nonscalar_backward_raises(lib):
    x, y = _seed001_vector(lib)
    assert x.dtype == lib.float32
    assert repr(y) == "tensor([4., 4., 4.], grad_fn=<MulBackward0>)"
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar outputs$"):
        y.backward()
    assert x.grad is None


def test_001_gradient_argument_accumulates_and_zero(lib):
    x, y = _seed001_vector(lib)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()  # the failed call leaves the graph usable
    g = lib.FloatTensor([0.1, 1, 10])
    assert g.dtype == lib.float32

    # The seed calls y.backward(g) three times without retain_graph (torch 0.3);
    # modern PyTorch needs retain_graph=True for the repeated calls.
    y.backward(lib.FloatTensor([0.1, 1, 10]), retain_graph=True)
    np.testing.assert_allclose(arr(x.grad), [0.2, 2.0, 20.0], rtol=1e-6)
    assert repr(x.grad) == "tensor([ 0.2000,  2.0000, 20.0000])"

    y.backward(lib.FloatTensor([0.1, 1, 10]), retain_graph=True)
    np.testing.assert_allclose(arr(x.grad), [0.4, 4.0, 40.0], rtol=1e-6)
    assert repr(x.grad) == "tensor([ 0.4000,  4.0000, 40.0000])"

    grad = x.grad
    zeroed = x.grad.data.zero_()
    assert repr(zeroed) == "tensor([0., 0., 0.])"
    np.testing.assert_array_equal(arr(x.grad), [0.0, 0.0, 0.0])  # zeroed in place
    np.testing.assert_array_equal(arr(grad), [0.0, 0.0, 0.0])
    assert repr(x.grad) == "tensor([0., 0., 0.])"

    y.backward(lib.FloatTensor([0.1, 1, 10]))
    np.testing.assert_allclose(arr(x.grad), [0.2, 2.0, 20.0], rtol=1e-6)
    assert repr(x.grad) == "tensor([ 0.2000,  2.0000, 20.0000])"


def test_001_second_backward_without_retain_graph_raises(lib):
    # What the seed's code does verbatim on modern PyTorch: x * 2 saves the
    # scalar operand, which the first backward frees.
    x, y = _seed001_vector(lib)
    y.backward(lib.FloatTensor([0.1, 1, 10]))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward(lib.FloatTensor([0.1, 1, 10]))
    np.testing.assert_allclose(arr(x.grad), [0.2, 2.0, 20.0], rtol=1e-6)


# ---------------------------------------------------------------- seed 002


def test_002_dot_backward_and_zero(lib):
    x = lib.arange(4.0, requires_grad=True)
    assert repr(x) == "tensor([0., 1., 2., 3.], requires_grad=True)"
    assert x.dtype == lib.float32
    y = 2 * lib.dot(x, x)
    assert y.item() == 28.0
    assert x.grad is None
    y.backward()
    np.testing.assert_array_equal(arr(x.grad), [0.0, 4.0, 8.0, 12.0])
    assert repr(x.grad) == "tensor([ 0.,  4.,  8., 12.])"
    eq = x.grad == 4 * x
    np.testing.assert_array_equal(arr(eq), [True, True, True, True])
    assert repr(eq) == "tensor([True, True, True, True])"

    zeroed = x.grad.zero_()
    assert repr(zeroed) == "tensor([0., 0., 0., 0.])"
    np.testing.assert_array_equal(arr(x.grad), [0.0, 0.0, 0.0, 0.0])

    y = x.sum()
    y.backward()
    np.testing.assert_array_equal(arr(x.grad), [1.0, 1.0, 1.0, 1.0])
    assert repr(x.grad) == "tensor([1., 1., 1., 1.])"


def _seed002_fresh(lib):
    x = lib.arange(4.0, requires_grad=True)
    y = 2 * lib.dot(x, x)
    y.backward()
    x.grad.zero_()
    return x


def test_002_nonscalar_via_sum(lib):
    x = _seed002_fresh(lib)
    assert repr(x) == "tensor([0., 1., 2., 3.], requires_grad=True)"
    y = x * x
    assert repr(y) == "tensor([0., 1., 4., 9.], grad_fn=<MulBackward0>)"
    s = y.sum()
    assert repr(s) == "tensor(14., grad_fn=<SumBackward0>)"
    assert grad_fn_name(s) == "SumBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [0.0, 2.0, 4.0, 6.0])
    assert repr(x.grad) == "tensor([0., 2., 4., 6.])"

    # "equivalent to y.backward(torch.ones(len(x)))"
    x2 = _seed002_fresh(lib)
    (x2 * x2).backward(lib.ones(len(x2)))
    np.testing.assert_array_equal(arr(x2.grad), [0.0, 2.0, 4.0, 6.0])


def test_002_detach(lib):
    x = _seed002_fresh(lib)
    y = x * x
    u = y.detach()
    assert repr(u) == "tensor([0., 1., 4., 9.])"
    assert not u.requires_grad
    assert u.grad_fn is None
    assert u.is_leaf
    z = u * x
    assert repr(z) == "tensor([ 0.,  1.,  8., 27.], grad_fn=<MulBackward0>)"
    z.sum().backward()
    eq = x.grad == u
    assert repr(eq) == "tensor([True, True, True, True])"
    np.testing.assert_array_equal(arr(x.grad), [0.0, 1.0, 4.0, 9.0])


def f(a):
    b = a * 2
    while b.norm() < 1000:  # norm is the L2 norm
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c


def f_slope(a0):
    """d f(a) / d a at a0: f is linear in a with slope 2**k or 100 * 2**k."""
    b = np.float32(a0) * np.float32(2)
    slope = 2.0
    while abs(float(b)) < 1000:
        b = b * np.float32(2)
        slope *= 2
    return slope if b > 0 else 100 * slope


@pytest.mark.parametrize(
    "a0, slope, d_repr",
    [
        (-0.1460, 819200.0, "tensor(-119603.1953, grad_fn=<MulBackward0>)"),  # the seed's a
        (1.5410, 1024.0, "tensor(1577.9840, grad_fn=<MulBackward0>)"),
    ],
    ids=["seed_a", "positive_a"],
)
def test_002_control_flow_fixed(lib, a0, slope, d_repr):
    assert f_slope(a0) == slope
    a = lib.tensor(a0, requires_grad=True)
    d = f(a)
    assert repr(d) == d_repr
    assert grad_fn_name(d) == "MulBackward0"
    d.backward()
    assert tuple(a.grad.shape) == ()
    assert a.grad.item() == slope
    assert repr(a.grad) == f"tensor({slope:.0f}.)"
    ratio = d / a
    assert grad_fn_name(ratio) == "DivBackward0"
    assert repr(ratio) == f"tensor({slope:.0f}., grad_fn=<DivBackward0>)"
    eq = a.grad == d / a
    assert repr(eq) == "tensor(True)"
    assert bool(eq)


def test_002_norm_and_mul_repr(lib):
    a = lib.tensor(-0.1460, requires_grad=True)
    b = 2 * a
    n = b.norm()
    # seed (older torch): tensor(0.2920, grad_fn=<CopyBackwards>)
    assert repr(n) == "tensor(0.2920, grad_fn=<LinalgVectorNormBackward0>)"
    assert repr(b * 2) == "tensor(-0.5840, grad_fn=<MulBackward0>)"


def test_002_control_flow_randn(lib):
    lib.manual_seed(0)
    a = lib.randn(size=(), requires_grad=True)
    assert tuple(a.shape) == ()
    assert a.dtype == lib.float32
    assert a.is_leaf and a.requires_grad
    assert re.fullmatch(r"tensor\(-?\d+\.\d{4}, requires_grad=True\)", repr(a))
    d = f(a)
    d.backward()
    slope = f_slope(a.item())
    assert a.grad.item() == slope
    np.testing.assert_allclose(arr(d / a), slope, rtol=1e-6)
    np.testing.assert_allclose(arr(a.grad), arr(d / a), rtol=1e-6)


# ---------------------------------------------------------------- seed 003


def test_003_requires_grad_flip(lib):
    lib.manual_seed(0)
    a = lib.randn(2, 2)
    a = ((a * 3) / (a - 1))
    assert a.requires_grad is False
    ret = a.requires_grad_(True)
    assert ret is a
    assert a.requires_grad is True
    assert a.is_leaf
    assert a.grad_fn is None


def test_003_grad_fn_only_for_results(lib, capsys):
    x = lib.tensor(1.0, requires_grad=True)
    y = lib.tensor(2.0, requires_grad=True)
    z = x + y
    print(x, y, z)
    assert capsys.readouterr().out == (
        "tensor(1., requires_grad=True) tensor(2., requires_grad=True) "
        "tensor(3., grad_fn=<AddBackward0>)\n"
    )
    assert x.grad_fn is None and y.grad_fn is None
    assert x.is_leaf and y.is_leaf and not z.is_leaf
    assert grad_fn_name(z) == "AddBackward0"
    assert z.requires_grad
    assert nonleaf_grad(z) is None


@pytest.mark.parametrize("via", ["method", "function"])
def test_003_scalar_backward(lib, capsys, via):
    x = lib.tensor(3.0, requires_grad=True)
    y = lib.tensor(7.0, requires_grad=True)
    z = x + y
    if via == "method":
        z.backward()
    else:  # "torch.autograd.backward(tensor) and tensor.backward() are equivalent"
        lib.autograd.backward(z)
    print(x.grad, y.grad, z)
    assert capsys.readouterr().out == "tensor(1.) tensor(1.) tensor(10., grad_fn=<AddBackward0>)\n"
    assert x.grad.item() == 1.0 and y.grad.item() == 1.0
    assert nonleaf_grad(z) is None


@pytest.mark.parametrize(
    "make_grad, expected",
    [
        (lambda lib, z: lib.ones_like(z), [1.0, 1.0, 1.0, 1.0]),
        (lambda lib, z: lib.Tensor([1, 2, 3, 4]), [1.0, 2.0, 3.0, 4.0]),
        (lambda lib, z: lib.tensor([1.0, 2.0, 3.0, 4.0]), [1.0, 2.0, 3.0, 4.0]),
    ],
    ids=["ones_like", "Tensor", "tensor"],
)
def test_003_vector_backward(lib, make_grad, expected):
    x = lib.ones(4, requires_grad=True)
    z = x + 2
    np.testing.assert_array_equal(arr(z), [3.0, 3.0, 3.0, 3.0])
    z.backward(make_grad(lib, z))
    np.testing.assert_array_equal(arr(x.grad), expected)
    assert repr(x.grad) == "tensor([{}])".format(", ".join(f"{v:.0f}." for v in expected))


def test_003_Tensor_vs_tensor(lib):
    # torch.Tensor is the default (float32) tensor type; torch.tensor infers the dtype.
    assert lib.Tensor([1, 2, 3, 4]).dtype == lib.float32
    assert lib.tensor([1, 2, 3, 4]).dtype == lib.int64
    assert lib.tensor([1.0, 2.0, 3.0, 4.0]).dtype == lib.float32
    assert lib.ones(4, requires_grad=True).dtype == lib.float32


def test_003_type_string(lib):
    # The seed's comment "#print(x.type()) torch.FloatTensor".
    assert lib.ones(4, requires_grad=True).type() == "torch.FloatTensor"


# ---------------------------------------------------------------- seed 004


def _seed004(lib):
    lib.manual_seed(0)
    x = lib.ones(5)  # input tensor
    y = lib.zeros(3)  # expected output
    w = lib.randn(5, 3, requires_grad=True)
    b = lib.randn(3, requires_grad=True)
    z = lib.matmul(x, w) + b
    loss = lib.nn.functional.binary_cross_entropy_with_logits(z, y)
    return x, y, w, b, z, loss


def test_004_grad_fn_names(lib):
    x, y, w, b, z, loss = _seed004(lib)
    assert type(z.grad_fn).__name__ == "AddBackward0"
    assert type(loss.grad_fn).__name__ == "BinaryCrossEntropyWithLogitsBackward0"
    assert re.fullmatch(
        r"Gradient function for z = <AddBackward0 object at 0x[0-9a-fA-F]+>",
        f"Gradient function for z = {z.grad_fn}",
    )
    assert re.fullmatch(
        r"Gradient function for loss = <BinaryCrossEntropyWithLogitsBackward0 object at 0x[0-9a-fA-F]+>",
        f"Gradient function for loss = {loss.grad_fn}",
    )
    assert x.grad_fn is None and w.grad_fn is None and b.grad_fn is None
    assert w.is_leaf and b.is_leaf and not z.is_leaf and not loss.is_leaf
    assert tuple(z.shape) == (3,) and tuple(loss.shape) == ()


def test_004_loss_and_gradients_closed_form(lib):
    x, y, w, b, z, loss = _seed004(lib)
    xn, yn = arr(x).astype(np.float64), arr(y).astype(np.float64)
    wn, bn = arr(w).astype(np.float64), arr(b).astype(np.float64)
    zn = xn @ wn + bn
    np.testing.assert_allclose(arr(z), zn, rtol=1e-5, atol=1e-6)
    expected_loss = np.mean(np.maximum(zn, 0) - zn * yn + np.log1p(np.exp(-np.abs(zn))))
    np.testing.assert_allclose(loss.item(), expected_loss, rtol=1e-5)

    loss.backward()
    g = (1.0 / (1.0 + np.exp(-zn)) - yn) / 3
    assert tuple(w.grad.shape) == (5, 3) and tuple(b.grad.shape) == (3,)
    assert w.grad.dtype == lib.float32 and b.grad.dtype == lib.float32
    np.testing.assert_allclose(arr(w.grad), np.outer(xn, g), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(arr(b.grad), g, rtol=1e-5, atol=1e-7)
    # x is all ones: every row of w.grad equals b.grad, as the seed's print shows
    for row in arr(w.grad):
        np.testing.assert_array_equal(row, arr(b.grad))
    assert x.grad is None and y.grad is None


def test_004_backward_without_argument_is_tensor_one(lib):
    # "backward() without argument is the same as backward(torch.tensor(1.0))"
    _, _, w1, b1, _, loss1 = _seed004(lib)
    loss1.backward()
    _, _, w2, b2, _, loss2 = _seed004(lib)
    loss2.backward(lib.tensor(1.0))
    np.testing.assert_array_equal(arr(w1.grad), arr(w2.grad))
    np.testing.assert_array_equal(arr(b1.grad), arr(b2.grad))


def test_004_no_grad_and_detach(lib):
    x, y, w, b, _, _ = _seed004(lib)
    z = lib.matmul(x, w) + b
    assert z.requires_grad is True

    with lib.no_grad():
        z = lib.matmul(x, w) + b
    assert z.requires_grad is False
    assert z.grad_fn is None

    z = lib.matmul(x, w) + b  # tracking is back on after the block
    assert z.requires_grad is True
    z_det = z.detach()
    assert z_det.requires_grad is False
    assert z_det.grad_fn is None
    assert z_det.is_leaf
    np.testing.assert_array_equal(arr(z_det), arr(z))
    assert z.requires_grad is True  # detach() leaves z alone


FIRST = np.ones((5, 5)) * 2 + np.eye(5) * 2


def test_004_retain_graph_accumulation(lib):
    inp = lib.eye(5, requires_grad=True)
    out = (inp + 1).pow(2)
    assert grad_fn_name(out) == "PowBackward0"

    out.backward(lib.ones_like(inp), retain_graph=True)
    np.testing.assert_array_equal(arr(inp.grad), FIRST)  # 4 on the diagonal, 2 elsewhere
    assert f"First call\n{inp.grad}" == (
        "First call\n"
        "tensor([[4., 2., 2., 2., 2.],\n"
        "        [2., 4., 2., 2., 2.],\n"
        "        [2., 2., 4., 2., 2.],\n"
        "        [2., 2., 2., 4., 2.],\n"
        "        [2., 2., 2., 2., 4.]])"
    )

    out.backward(lib.ones_like(inp), retain_graph=True)
    np.testing.assert_array_equal(arr(inp.grad), 2 * FIRST)  # accumulated: 8 and 4
    assert str(inp.grad).startswith("tensor([[8., 4., 4., 4., 4.],\n        [4., 8., 4., 4., 4.],")

    inp.grad.zero_()
    np.testing.assert_array_equal(arr(inp.grad), np.zeros((5, 5)))
    out.backward(lib.ones_like(inp), retain_graph=True)
    np.testing.assert_array_equal(arr(inp.grad), FIRST)


# ---------------------------------------------------------------- leaves and non-leaves


def test_leaf_and_nonleaf(lib):
    x = lib.ones(3, requires_grad=True)
    c = lib.ones(3)
    y = x * 2
    assert x.is_leaf and c.is_leaf and not y.is_leaf
    assert x.grad_fn is None and c.grad_fn is None
    assert y.grad_fn is not None
    assert nonleaf_grad(y) is None
    y.sum().backward()
    assert nonleaf_grad(y) is None  # non-leaf grads are not retained
    assert c.grad is None  # no requires_grad: no gradient
    np.testing.assert_array_equal(arr(x.grad), [2.0, 2.0, 2.0])
    assert x.grad.grad_fn is None and not x.grad.requires_grad


# ---------------------------------------------------------------- the example scripts

ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# Class-path differences tolerated between the tapegrad and the PyTorch output,
# as (regex, replacement) pairs applied to both.  Deliberately empty: no
# difference is tolerated.  The only place a class could be printed with its
# module path is a grad_fn (str(z.grad_fn)), and PyTorch prints
# "<AddBackward0 object at 0x...>" with no module, which tapegrad must match
# (test_001_mean_backward, test_004_grad_fn_names).
CLASS_PATH_REWRITES = ()


def _normalise(text):
    text = ADDRESS.sub("0x?", text)
    for pattern, replacement in CLASS_PATH_REWRITES:
        text = re.sub(pattern, replacement, text)
    return text


def _run_script(script, libname):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS_DIR / script), libname],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, f"{script} failed under {libname}:\n{proc.stderr}"
    return proc.stdout


@pytest.mark.parametrize("script", SCRIPTS)
def test_seed_script_output(script):
    expected = _run_script(script, "torch")
    assert expected.strip()
    _import("tapegrad")  # fail with ImportError, not a subprocess traceback, while it is missing
    actual = _run_script(script, "tapegrad")
    assert _normalise(actual) == _normalise(expected)

