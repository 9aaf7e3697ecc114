"""torch.autograd.graph's register_multi_grad_hook, get_gradient_edge, increment_version and
allow_mutation_on_saved_tensors; the autograd engine switches (set_multithreading_enabled,
enforce_grad_layout_policy); anomaly mode's in-place error; the deprecation warnings of autograd.grad's
only_inputs, backward(create_graph=True) and instantiating a Function; Generator.device. Compared with torch
2.13 (a warning that fires once per process runs in a subprocess)."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import tapegrad

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def both(fn):
    got, want = fn(tapegrad), fn(torch)
    assert got == want
    return got


def _multi_all(t):
    a = t.rand(2, 3, requires_grad=True)
    b = t.rand(2, 3, requires_grad=True)
    c, d = a * b, a * b
    calls = []
    h = t.autograd.graph.register_multi_grad_hook((a, b, c, d), lambda gs: calls.append(
        [None if g is None else tuple(g.shape) for g in gs]))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    (c + d).sum().backward(retain_graph=True)
    (a * 2).sum().backward()
    h.remove()
    c.sum().backward(retain_graph=True)
    return calls


def _multi_any(t):
    a = t.ones(2, 3, requires_grad=True)
    b = t.ones(2, 3, requires_grad=True)
    seen = []
    h = t.autograd.graph.register_multi_grad_hook((a, b), lambda g: seen.append(g.tolist()), mode="any")
    (a * b * 3).sum().backward()
    (a * 2).sum().backward()
    h.remove()
    (a * 2).sum().backward()
    return seen


def _multi_bad_mode(t):
    try:
        t.autograd.graph.register_multi_grad_hook((t.ones(1, requires_grad=True),), print, mode="some")
    except ValueError as e:
        return str(e)


CASES = {"multi_all": _multi_all, "multi_any": _multi_any, "multi_bad_mode": _multi_bad_mode}


@pytest.mark.parametrize("case", list(CASES))
def test_multi_grad_hook_as_torch(case):
    both(CASES[case])


def test_multi_grad_hook_values_as_torch():
    def run(t):
        x = t.tensor([1.0, 2.0], requires_grad=True)
        z = t.tensor([3.0, 4.0], requires_grad=True)
        y = x * 5
        seen = []
        t.autograd.graph.register_multi_grad_hook((y, z), lambda gs: seen.append(
            [None if g is None else g.tolist() for g in gs]))
        (y * z).sum().backward(retain_graph=True)
        t.autograd.grad((y * 2).sum(), y)
        return seen
    both(run)


def _edges(t):
    g = t.autograd.graph
    a = t.tensor([0.5, 1.0], requires_grad=True)
    y = a.exp()
    e = g.get_gradient_edge(y)
    ea = g.get_gradient_edge(a)
    out = [type(e).__name__, e.node.name(), e.output_nr, e.node is y.grad_fn, ea.node.name(), ea.output_nr,
           t.autograd.grad((y * 3).sum(), e, retain_graph=True)[0].tolist(),
           [round(v, 5) for v in t.autograd.grad(y.sum(), (ea, y), retain_graph=True)[0].tolist()],
           g.get_gradient_edge(t.ones(3, requires_grad=True).unbind()[1]).output_nr]
    try:
        g.get_gradient_edge(t.ones(2))
    except RuntimeError as exc:
        out.append(str(exc))
    return out


def _increment_version(t):
    g = t.autograd.graph
    v = t.ones(2)
    g.increment_version(v)
    out = [v._version]
    g.increment_version([v, v])
    out.append(v._version)
    x = t.ones(2, requires_grad=True)
    s = x.sigmoid()
    g.increment_version(s)
    try:
        s.sum().backward()
    except RuntimeError as exc:
        out.append(str(exc).split(" Hint")[0])
    return out


def test_gradient_edge_as_torch():
    got = both(_edges)
    assert got[6] == [3.0, 3.0]


def test_increment_version_as_torch():
    got = both(_increment_version)
    assert len(got) == 3


def test_allow_mutation_on_saved_tensors_raises_clearly():
    with pytest.raises(NotImplementedError, match="allow_mutation_on_saved_tensors"):
        with tapegrad.autograd.graph.allow_mutation_on_saved_tensors():
            pass


def _switches(t):
    a = t.autograd
    out = [a.is_multithreading_enabled(), a.is_view_replay_enabled()]
    with a.set_multithreading_enabled(False):
        out.append(a.is_multithreading_enabled())
    out.append(a.is_multithreading_enabled())
    a.set_multithreading_enabled(False)
    out.append(a.is_multithreading_enabled())
    a.set_multithreading_enabled(True)

    @a.set_multithreading_enabled(False)
    def f():
        return a.is_multithreading_enabled()
    out += [a.is_multithreading_enabled(), f()]
    a.set_multithreading_enabled(True)
    p = t.ones(3, 2).t().requires_grad_()
    with a.enforce_grad_layout_policy(False):
        (p * 2).sum().backward()
    out.append(p.grad.tolist())

    @a.enforce_grad_layout_policy(False)
    def g():
        return 1
    out += [g(), type(a.grad_mode.enforce_grad_layout_policy()).__name__]
    return out


def test_engine_switches_as_torch():
    both(_switches)


# -- anomaly mode's in-place error --------------------------------------------------------------------------------
def _anomaly_inplace(t, during_forward):
    msgs = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        x = t.ones(2, requires_grad=True)
        if during_forward:
            with t.autograd.detect_anomaly(check_nan=False):
                y = x.sigmoid(); y.mul_(2)  # noqa: E702  (the line the warning quotes)
                try:
                    y.sum().backward()
                except RuntimeError as e:
                    msgs.append(str(e))
        else:
            y = x.sigmoid()
            y.mul_(2)
            with t.autograd.detect_anomaly(check_nan=False):
                try:
                    y.sum().backward()
                except RuntimeError as e:
                    msgs.append(str(e))
    detected = [str(m.message) for m in w if "Error detected" in str(m.message)]
    return msgs, detected


@pytest.mark.parametrize("during_forward", [True, False])
def test_anomaly_inplace_error_as_torch(during_forward):
    (got, got_w), (want, want_w) = _anomaly_inplace(tapegrad, during_forward), _anomaly_inplace(torch, during_forward)
    assert got == want
    assert "Good luck!" in got[0]
    assert len(got_w) == len(want_w) == 1
    first = want_w[0].split(" (Triggered internally")[0]  # (torch's C++ warnings name their source)
    if during_forward:
        assert got_w[0].startswith("Error detected in SigmoidBackward0. Traceback of forward call that caused the "
                                   "error:\n")
        assert "y = x.sigmoid(); y.mul_(2)" in got_w[0] and "y = x.sigmoid(); y.mul_(2)" in first
    else:
        assert got_w[0] == first
    x = tapegrad.ones(2, requires_grad=True)  # (anomaly mode off: the hint that says to turn it on)
    y = x.sigmoid()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="Hint: enable anomaly detection"):
        y.sum().backward()




# -- warnings ---------------------------------------------------------------------------------------------------
def _warnings(t):
    out = []

    def run(label, fn):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn()
        out.append((label, [(x.category.__name__, str(x.message).split(" (Triggered internally")[0],
                             os.path.basename(x.filename)) for x in w]))
    x = t.ones(2, requires_grad=True)
    run("only_inputs=False", lambda: t.autograd.grad((x * 2).sum(), x, only_inputs=False))
    run("only_inputs=True", lambda: t.autograd.grad((x * 2).sum(), x, only_inputs=True))
    run("grad create_graph", lambda: t.autograd.grad((x ** 2).sum(), x, create_graph=True))

    class F(t.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class G(t.autograd.Function):
        def __init__(self):
            pass

    run("F()", lambda: F())
    run("G()", lambda: G())
    run("F.apply", lambda: F.apply(x))
    return [(label, [(c, m.replace("tapegrad", "torch"), f) for c, m, f in w]) for label, w in out]


def test_warnings_as_torch():
    got = _warnings(tapegrad)
    want = _warnings(torch)
    # torch attributes its C++ warnings to its own Python frame, tapegrad to the user's line
    assert got == want
    assert got[0][1][0][0] == "FutureWarning" and got[3][1][0][0] == "DeprecationWarning"


BACKWARD_CREATE_GRAPH = r"""
import warnings, sys
warnings.simplefilter("always")
import {lib} as t
x = t.ones(2, requires_grad=True)
for label, fn in [
        ("grad", lambda: t.autograd.grad((x ** 2).sum(), x, create_graph=True)),
        ("retain", lambda: (x ** 2).sum().backward(retain_graph=True)),
        ("first", lambda: (x ** 2).sum().backward(create_graph=True, inputs=[x])),
        ("again", lambda: t.autograd.backward((x ** 2).sum(), create_graph=True))]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    print(label, [(m.category.__name__, str(m.message).split(" (Triggered")[0]) for m in w])
"""


def test_backward_create_graph_warns_once_as_torch():
    out = []
    for lib in ("torch", "tapegrad"):
        r = subprocess.run([sys.executable, "-c", BACKWARD_CREATE_GRAPH.format(lib=lib)], capture_output=True,
                           text=True, cwd=ROOT, timeout=600)
        assert r.returncode == 0, r.stderr
        out.append(r.stdout)
    assert out[1] == out[0]
    assert "reference cycle" in out[1]


# -- Generator.device ---------------------------------------------------------------------------------------------
def _generator_device(t):
    out = []
    for d in ("cpu", t.device("cpu"), "cpu:0"):
        g = t.Generator(d)
        out.append((repr(g.device), g.device.type, g.device == t.device("cpu"), str(g.device)))
    out.append(repr(t.default_generator.device))
    try:
        t.Generator().device = "cpu"
    except AttributeError:
        out.append("read-only")
    return out


def test_generator_device_as_torch():
    both(_generator_device)
