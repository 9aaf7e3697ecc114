"""torch.jit and torch.futures as eager PyTorch code meets them: the pass-throughs behave as torch's (the same
results, marks, warnings and errors), and TorchScript itself raises NotImplementedError naming it."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg


def _model_code(lib):
    """Model code written for TorchScript, run eagerly (torchvision's and timm's idioms)."""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.count = lib.jit.Attribute(0, int)

        @lib.jit.unused
        def debug(self, x):
            return x * 100

        @lib.jit.ignore
        def python_only(self, x):
            return x + 1

        @lib.jit.export
        def extra(self, x):
            return x - 1

        def forward(self, x):
            if lib.jit.is_scripting() or lib.jit.is_tracing():
                return self.debug(x)
            acc = lib.jit.annotate(list, [])
            acc.append(self.python_only(self.fc(x)))
            fut = lib.jit.fork(self.extra, acc[0])
            return lib.jit.wait(fut)

    return Block


def _run(lib):
    lib.manual_seed(0)
    m = _model_code(lib)()
    x = lib.arange(6.0).reshape(2, 3)
    y = m(x)
    y.sum().backward()
    return y.detach().numpy(), m.fc.weight.grad.numpy(), m.count, m.debug._torchscript_modifier, \
        m.python_only._torchscript_modifier, m.extra._torchscript_modifier


def test_model_code_written_for_torchscript_runs_eagerly_as_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ours, theirs = _run(tg), _run(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    assert tuple(ours[2]) == tuple(theirs[2]) == (0, int)
    assert ours[3:] == theirs[3:]


@pytest.mark.parametrize("name", ["fork", "wait"])
def test_fork_and_wait_warn_as_torch(name):
    def call(lib):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fut = lib.jit.fork(lambda a, b=1: a + b, 2, b=3)
            value = lib.jit.wait(fut)
        return value, [(c.category, str(c.message)) for c in w if name in str(c.message)]
    assert call(tg) == call(torch)


def test_fork_raises_the_functions_error_at_once():
    def boom():
        raise ValueError("boom")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for lib in (tg, torch):
            with pytest.raises(ValueError, match="boom"):
                lib.jit.fork(boom)


def test_ignore_checks_and_warnings_match_torch():
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="Argument to @torch.jit.ignore must be a bool or a function but got 3"):
            lib.jit.ignore(3)
        with pytest.warns(FutureWarning, match=r"ignore\(True\) has been deprecated"):
            f = lib.jit.ignore(True)(lambda: 1)
        assert f._torchscript_modifier.startswith("unused")
        p = lib.jit.unused(property(lambda self: 1))
        assert p.fget._torchscript_modifier.startswith("unused")


@pytest.mark.parametrize("name", ["script", "trace", "trace_module", "save", "load", "freeze",
                                  "optimize_for_inference", "script_method"])
def test_torchscript_itself_raises_naming_it(name):
    with pytest.raises(NotImplementedError, match=f"torch.jit.{name}: tapegrad has no TorchScript"):
        getattr(tg.jit, name)(tg.nn.Linear(2, 2))


def test_a_script_module_subclass_raises_at_construction():
    class M(tg.jit.ScriptModule):
        pass
    with pytest.raises(NotImplementedError, match="tapegrad has no TorchScript"):
        M()


def test_futures_as_torch():
    def run(lib):
        F = lib.futures
        out = []
        fu = F.Future()
        out.append(fu.done())
        g = fu.then(lambda f: f.value() + 1)
        fu.set_result(3)
        out += [fu.wait(), fu.value(), fu.done(), g.wait()]
        out.append([f.value() for f in F.collect_all([fu, g]).wait()])
        out.append(F.wait_all([fu, g]))
        with pytest.raises(RuntimeError, match="Attempting to mark a completed Future as complete again"):
            fu.set_result(4)
        fe = F.Future()
        fe.set_exception(ValueError("bad"))
        with pytest.raises(ValueError, match="bad"):
            fe.wait()
        chained = fe.then(lambda f: f.value())
        with pytest.raises(RuntimeError, match="Got the following error when running the callback: ValueError: bad"):
            chained.wait()
        return out
    assert run(tg) == run(torch)


def test_waiting_on_a_future_nobody_completes_raises_instead_of_hanging():
    with pytest.raises(RuntimeError, match="not completed"):
        tg.futures.Future().wait()
