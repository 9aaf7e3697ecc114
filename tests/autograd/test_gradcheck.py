"""gradcheck / gradgradcheck: same verdicts and same GradcheckError messages as torch's, on the same
user functions and custom Functions."""
import sys
import warnings

import numpy as np
import pytest
import torch

import tapegrad

X = np.array([0.3, -0.7, 1.2])
W = np.array([[0.5, -1.0, 0.25], [1.5, 0.75, -0.5]])


def make(lib, kind):
    """A function to check, defined against either library."""
    F = lib.autograd.Function

    class WrongCube(F):  # backward off by a factor
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 2 * x * x

    class Cube(F):  # right, and twice differentiable
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x * x

    class DetachedCube(F):  # right once, but its backward hides x from the second derivative
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * (x * x).detach()

    class IgnoresGrad(F):  # a right Jacobian for a scalar output, but not multiplied by grad_output
        @staticmethod
        def forward(ctx, x):
            return (x * 2).sum()

        @staticmethod
        def backward(ctx, g):
            return lib.ones(3, dtype=lib.float64) * 2

    class Noisy(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * (2 + lib.rand(3, dtype=lib.float64) * 1e-3)

    return {
        "ops": lambda x, w: ((w @ x).tanh() * x[0]).exp(),
        "two_outputs": lambda x, w: ((w * x).sin(), (x * x).sum()),
        "wrong": WrongCube.apply, "cube": Cube.apply, "detached": DetachedCube.apply,
        "ignores_grad": IgnoresGrad.apply, "noisy": Noisy.apply,
    }[kind]


def inputs(lib, kind, dtype=None, requires_grad=True):
    dtype = dtype or lib.float64
    x = lib.tensor(X, dtype=dtype, requires_grad=requires_grad)
    if kind in ("ops", "two_outputs"):
        return (x, lib.tensor(W, dtype=dtype, requires_grad=requires_grad))
    return (x,)


def outcome(lib, check, kind, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return getattr(lib.autograd, check)(make(lib, kind), inputs(lib, kind), **kw)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)


@pytest.mark.parametrize("check", ["gradcheck", "gradgradcheck"])
@pytest.mark.parametrize("kind", ["ops", "two_outputs", "wrong", "cube", "detached", "ignores_grad"])
def test_same_verdict_and_message_as_torch(check, kind):
    if check == "gradgradcheck":  # torch draws random grad_outputs: give both the same
        grad_outputs = {"ops": [np.linspace(-1, 1, 2)], "two_outputs": [W * 0.5, np.array(0.7)]}.get(
            kind, [np.array([0.4, -0.9, 0.6])] if kind != "ignores_grad" else [np.array(0.8)])
        ours = outcome(tapegrad, check, kind, grad_outputs=[tapegrad.tensor(g, dtype=tapegrad.float64,
                                                                            requires_grad=True)
                                                            for g in grad_outputs])
        theirs = outcome(torch, check, kind, grad_outputs=[torch.tensor(g, dtype=torch.float64, requires_grad=True)
                                                           for g in grad_outputs])
    else:
        ours, theirs = outcome(tapegrad, check, kind), outcome(torch, check, kind)
    if theirs is True:
        assert ours is True
    else:
        assert ours[0] == theirs[0]
        assert ours[1].split("\n")[0] == theirs[1].split("\n")[0]
        if theirs[1].startswith("Jacobian mismatch"):
            assert ours[1] == theirs[1]  # the printed Jacobians too


def test_gradcheck_error_is_exported_as_torch():
    from tapegrad.autograd.gradcheck import GradcheckError
    assert issubclass(GradcheckError, RuntimeError)
    with pytest.raises(GradcheckError, match=r"^Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"):
        tapegrad.autograd.gradcheck(make(tapegrad, "wrong"), inputs(tapegrad, "wrong"))


def test_raise_exception_false_returns_false(lib_name="tapegrad"):
    assert tapegrad.autograd.gradcheck(make(tapegrad, "wrong"), inputs(tapegrad, "wrong"),
                                       raise_exception=False) is False
    assert tapegrad.autograd.gradgradcheck(make(tapegrad, "detached"), inputs(tapegrad, "detached"),
                                           raise_exception=False) is False
    assert tapegrad.autograd.gradgradcheck(make(tapegrad, "cube"), inputs(tapegrad, "cube"))


def test_nondeterministic_backward_is_caught_unless_tolerated():
    ours = outcome(tapegrad, "gradcheck", "noisy", atol=1e-2)
    theirs = outcome(torch, "gradcheck", "noisy", atol=1e-2)
    assert ours[0] == theirs[0] == "GradcheckError"
    assert ours[1] == theirs[1]
    assert tapegrad.autograd.gradcheck(make(tapegrad, "noisy"), inputs(tapegrad, "noisy"), atol=1e-2,
                                       nondet_tol=1e-2)


def test_input_errors_and_warnings_as_torch():
    for lib in (tapegrad, torch):
        with pytest.raises(ValueError, match="^gradcheck expects at least one input tensor to require gradient, but "
                                             "none of them have requires_grad=True.$"):
            lib.autograd.gradcheck(make(lib, "cube"), inputs(lib, "cube", requires_grad=False))
    caught = {}
    for lib in (tapegrad, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.autograd.gradcheck(make(lib, "cube"), inputs(lib, "cube", dtype=lib.float32), atol=1e-2, rtol=1e-2,
                                   eps=1e-3)
        caught[lib] = [str(m.message) for m in w if "double precision" in str(m.message)]
    assert caught[tapegrad] == caught[torch] and len(caught[torch]) == 1


def test_gradcheck_module_is_importable_like_torchs():
    import tapegrad.autograd.gradcheck  # noqa: F401
    module = sys.modules["tapegrad.autograd.gradcheck"]
    assert module.gradcheck is tapegrad.autograd.gradcheck and hasattr(module, "GradcheckError")


ZERO_DIM_SCRIPT = r"""
import tapegrad as torch

class Exp(torch.autograd.Function):  # pytorch/tutorials' custom_function_double_backward
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return grad_out * result

x = torch.tensor(2., dtype=torch.double, requires_grad=True)
print(torch.autograd.gradcheck(lambda t: t ** 3, x), torch.autograd.gradgradcheck(lambda t: t ** 3, x),
      torch.autograd.gradcheck(Exp.apply, x), torch.autograd.gradgradcheck(Exp.apply, x))
"""


def test_gradgradcheck_of_zero_dim_inputs():
    """0-d inputs made gradgradcheck's grad_outputs NumPy scalars (0-d arithmetic returns one), which the compiled
    replay read as arrays by id: a crash or an internal error. In a subprocess: it could crash the interpreter."""
    import subprocess
    r = subprocess.run([sys.executable, "-c", ZERO_DIM_SCRIPT], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["True"] * 4


def test_a_tensor_never_holds_a_numpy_scalar():
    from tapegrad.tensor import _new
    t = _new(np.float64(2.0) * 2, requires_grad=True)  # (NumPy returns a scalar for 0-d arithmetic)
    assert type(t._data) is np.ndarray and t._data.shape == ()
    (t * 3).backward()
    assert t.grad.item() == 3.0


def _batched(L):
    L.manual_seed(0)
    x = L.randn(3, dtype=L.double, requires_grad=True)
    w = L.randn(3, 2, dtype=L.double, requires_grad=True)
    verdicts = [L.autograd.gradcheck(lambda a, b: ((a @ b).tanh(), a.sin()), (x, w), check_batched_grad=True),
                L.autograd.gradgradcheck(lambda a, b: (a @ b).tanh(), (x, w), check_batched_grad=True)]
    return verdicts, L.randn(2).tolist()  # (the check draws its grad_outputs as torch's: the stream after it too)


def test_check_batched_grad_runs_torchs_check():
    assert _batched(tapegrad) == _batched(torch)
