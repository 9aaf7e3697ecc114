"""What a newcomer from PyTorch meets (issue 22): torch's warnings, grad_fn reprs and edges, the contiguity a
user observes and the errors that follow from it, and torch's messages. Each is compared with torch 2.13."""
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import tapegrad
from tapegrad import tape as tape_mod

REPO = Path(__file__).resolve().parents[1]
LIBS = [torch, tapegrad]


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def _torch_text(message):
    """torch's message without the "(Triggered internally at <its C++ source>)" it appends."""
    return re.sub(r" \(Triggered internally at .*\)$", "", message, flags=re.S)


# -- warnings ---------------------------------------------------------------------------------------------
def test_reading_grad_of_a_non_leaf_warns_as_torch():
    seen = {}
    for lib in LIBS:
        y = lib.ones(3, requires_grad=True) * 2
        _, caught = _caught(lambda: y.grad)
        line = sys._getframe().f_lineno - 1
        assert [(c, f, n) for c, _, f, n in caught] == [(UserWarning, __file__, line)]  # names the user's line
        seen[lib] = _torch_text(caught[0][1])
        y.retain_grad()
        assert _caught(lambda: y.grad)[1] == []                      # retained: no warning
        leaf = lib.ones(2, requires_grad=True)
        assert _caught(lambda: leaf.grad)[1] == []
    assert seen[torch] == seen[tapegrad]


SCALAR_SCRIPT = """
import sys, warnings
warnings.simplefilter("always")
lib = __import__(sys.argv[1])
s = lib.tensor(2.0, requires_grad=True)
for label, convert in [("int", int), ("item", lambda t: t.item()), ("bool", bool), ("tolist", lambda t: t.tolist()),
                       ("format", lambda t: f"{t:.1f}"), ("float", float), ("float again", float),
                       ("complex", complex), ("percent", lambda t: "%f" % t)]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        convert(s)
    print(label, [(w.category.__name__, w.message.args[0].split(" (Triggered")[0]) for w in caught])
with lib.no_grad():
    pass
"""


def _scalar_run(name, prelude=""):
    script = SCALAR_SCRIPT.replace("s = lib.tensor", prelude + "s = lib.tensor")
    proc = subprocess.run([sys.executable, "-c", script, name], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_converting_a_tensor_that_requires_grad_to_a_scalar_warns_once_as_torch():
    """float() (and complex(), "%f", which call it) warns, once per process; int(), item(), bool() do not."""
    out = _scalar_run("tapegrad")
    assert out == _scalar_run("torch")
    assert "float [('UserWarning', 'Converting a tensor with requires_grad=True to a scalar" in out
    assert "float again []" in out and "int []" in out and "item []" in out


def test_no_scalar_warning_under_no_grad():
    for lib in LIBS:
        s = lib.tensor(2.0, requires_grad=True)
        with lib.no_grad():
            assert _caught(lambda: float(s))[1] == []


def test_total_loss_plus_equals_loss_warning_names_the_plus_equals_line(monkeypatch):
    # a fresh tape: when the sweeps come (and so whether this loop's growth is seen in time) depends on the
    # thread tape's history, which the tests before this one make
    monkeypatch.setattr(tape_mod._local, "tape", tape_mod.Tape())
    monkeypatch.setattr(tape_mod, "_growth_warned", False)
    w = tapegrad.randn(32, 8, requires_grad=True)
    x = tapegrad.randn(16, 32)
    total_loss = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5000):
            loss = (x @ w).tanh().pow(2).mean()
            loss.backward()
            total_loss += loss
            plus_line = sys._getframe().f_lineno - 1
    growth = [c for c in caught if issubclass(c.category, tape_mod.TapeGrowthWarning)]
    assert len(growth) == 1 and growth[0].filename == __file__ and growth[0].lineno == plus_line


# -- grad_fn reprs and next_functions ------------------------------------------------------------------------
def _functions(lib):
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return MyFn


def test_custom_function_grad_fn_repr_has_torchs_module():
    for lib in LIBS:
        y = _functions(lib).apply(lib.ones(2, requires_grad=True))
        assert re.fullmatch(r"<torch\.autograd\.function\.MyFnBackward object at 0x[0-9a-f]+>", repr(y.grad_fn))
        assert y.grad_fn.name() == "MyFnBackward" and repr(y).endswith("grad_fn=<MyFnBackward>)")


def test_compiled_function_grad_fn_repr_is_torch_compiles():
    w = tapegrad.randn(3, 2, requires_grad=True)
    out = tapegrad.compile(lambda x: (x @ w).tanh().sum())(tapegrad.randn(4, 3))
    # torch.compile (AOTAutograd) gives <torch.autograd.function.CompiledFunctionBackward object at 0x...>
    assert re.fullmatch(r"<torch\.autograd\.function\.CompiledFunctionBackward object at 0x[0-9a-f]+>",
                        repr(out.grad_fn))


NEXT_CASES = {
    "x * 2": lambda lib, a: a * 2, "2 * x": lambda lib, a: 2 * a, "x + 1": lambda lib, a: a + 1,
    "1 + x": lambda lib, a: 1 + a, "x - 1": lambda lib, a: a - 1, "1 - x": lambda lib, a: 1 - a,
    "x / 2": lambda lib, a: a / 2, "x ** 2": lambda lib, a: a ** 2, "x * c": lambda lib, a: a * lib.ones(3),
    "c * x": lambda lib, a: lib.ones(3) * a, "where": lambda lib, a: lib.where(a > 0, a, lib.zeros(3)),
    "where scalar": lambda lib, a: lib.where(a > 0, a, 0.0), "exp": lambda lib, a: (a * 2).exp(),
    "sum": lambda lib, a: a.sum(), "cat": lambda lib, a: lib.cat([a, lib.zeros(2)]),
}


@pytest.mark.parametrize("case", NEXT_CASES)
def test_next_functions_list_torchs_edges(case):
    def edges(lib):
        a = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        fn = NEXT_CASES[case](lib, a).grad_fn
        return fn.name(), [(None if f is None else f.name(), i) for f, i in fn.next_functions]
    assert edges(tapegrad) == edges(torch)


# -- strides and contiguity ------------------------------------------------------------------------------
STRIDE_CASES = {
    "t": lambda lib, x, m: m.t(), "t.t": lambda lib, x, m: m.t().t(), "transpose": lambda lib, x, m: x.transpose(0, 2),
    "permute": lambda lib, x, m: x.permute(2, 0, 1), "movedim": lambda lib, x, m: x.movedim(0, -1),
    "slice": lambda lib, x, m: x[:, 1:], "slice step": lambda lib, x, m: x[:, ::2],
    "slice last": lambda lib, x, m: x[..., 1:3], "int": lambda lib, x, m: x[1], "int mid": lambda lib, x, m: x[:, 1],
    "none": lambda lib, x, m: x[None], "row": lambda lib, x, m: m[0:1],
    "expand": lambda lib, x, m: lib.ones(3, 1).expand(3, 4), "expand lead": lambda lib, x, m: lib.ones(4).expand(2, 4),
    "expand.t": lambda lib, x, m: lib.ones(3, 1).expand(3, 4).t(), "narrow": lambda lib, x, m: x.narrow(2, 1, 2),
    "select": lambda lib, x, m: x.select(1, 0), "chunk": lambda lib, x, m: x.chunk(2, dim=2)[1],
    "unbind": lambda lib, x, m: x.unbind(2)[0], "diagonal": lambda lib, x, m: m.diagonal(),
    "flip": lambda lib, x, m: m.flip(0), "t.reshape": lambda lib, x, m: m.t().reshape(6),
    "t.reshape(3, 2)": lambda lib, x, m: m.t().reshape(3, 2), "permute.reshape": lambda lib, x, m: x.permute(1, 0, 2).reshape(3, 8),
    "permute.flatten": lambda lib, x, m: x.permute(0, 2, 1).flatten(1), "t.unsqueeze": lambda lib, x, m: m.t().unsqueeze(0),
    "t.contiguous": lambda lib, x, m: m.t().contiguous(), "t.clone": lambda lib, x, m: m.t().clone(),
    "slice.reshape": lambda lib, x, m: x[:, :, :2].reshape(2, 6), "t.detach": lambda lib, x, m: m.t().detach(),
    "contiguous": lambda lib, x, m: x,
}


@pytest.mark.parametrize("case", STRIDE_CASES)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_strides_contiguity_and_view_errors_are_torchs(case, requires_grad):
    def observe(lib):
        x = lib.arange(24.0).reshape(2, 3, 4).requires_grad_(requires_grad)
        m = lib.arange(6.0).reshape(2, 3).requires_grad_(requires_grad)
        t = STRIDE_CASES[case](lib, x, m)
        try:
            viewed = ("ok", t.view(-1).tolist() if not requires_grad else t.view(-1).detach().tolist())
        except RuntimeError as e:
            viewed = ("error", str(e))
        return tuple(t.shape), t.stride(), t.is_contiguous(), viewed, t.stride(-1) if t.ndim else None
    assert observe(tapegrad) == observe(torch)


def test_transposed_view_raises_torchs_error_and_contiguous_is_a_clone():
    for lib in LIBS:
        x = lib.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], requires_grad=True)
        with pytest.raises(RuntimeError, match=r"^view size is not compatible with input tensor's size and stride "
                                               r"\(at least one dimension spans across two contiguous subspaces\)\. "
                                               r"Use \.reshape\(\.\.\.\) instead\.$"):
            x.t().view(6)
        c = x.t().contiguous()
        assert c.is_contiguous() and c.grad_fn.name() == "CloneBackward0" and c.view(6).shape == (6,)
        c.view(6).sum().backward()
        assert x.grad.tolist() == [[1.0] * 3] * 2
        y = x.detach()
        assert y.contiguous() is y


# -- messages ----------------------------------------------------------------------------------------------
def _error(fn):
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    return None


@pytest.mark.parametrize("how", ["factory", "tensor", "attribute", "method"])
def test_integer_requires_grad_messages_are_torchs(how):
    make = {"factory": lambda lib: lib.zeros(2, dtype=lib.int64, requires_grad=True),
            "tensor": lambda lib: lib.tensor([1, 2], requires_grad=True),
            "attribute": lambda lib: setattr(lib.tensor([1, 2]), "requires_grad", True),
            "method": lambda lib: lib.tensor([1, 2]).requires_grad_()}[how]
    message = _error(lambda: make(tapegrad))
    assert message is not None and message == _error(lambda: make(torch))


INPLACE_CASES = {
    "saved input, then written": lambda lib, x, y: _inplace_run(lambda: x.sin(), lambda a: (a * y, a.add_(1))[0]),
    "written twice": lambda lib, x, y: _inplace_run(lambda: x.sin(), lambda a: (a * y, a.add_(1), a.mul_(2))[0]),
    "saved output (exp)": lambda lib, x, y: _inplace_run(lambda: (x * 1).exp(), lambda b: (b, b.add_(1))[0]),
    "saved output (tanh)": lambda lib, x, y: _inplace_run(lambda: x.exp(), lambda a: (a.add_(1), a.tanh(), a.mul_(2))[1]),
    "saved constant": lambda lib, x, y: _inplace_run(lambda: lib.ones(3), lambda w: (x * w, w.add_(1))[0]),
}


def _inplace_run(make, use):
    out = use(make())
    return _error(lambda: out.sum().backward())


@pytest.mark.parametrize("case", INPLACE_CASES)
def test_inplace_modification_errors_name_torchs_node(case):
    def message(lib):
        x = lib.tensor([0.1, 0.2, 0.3], requires_grad=True)
        y = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        return INPLACE_CASES[case](lib, x, y)
    got = message(tapegrad)
    assert got is not None and got == message(torch)
