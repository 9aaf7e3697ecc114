"""Anomaly detection: a NaN made by a backward names its op, as torch's message does, and a failing
backward warns with the file and line where the op was recorded. Off, recording is untouched."""
import importlib
import warnings

import numpy as np
import pytest
import torch

import tapegrad
from tapegrad import tape as tape_mod
from tapegrad.autograd import anomaly


@pytest.fixture(params=["tapegrad", "torch"])
def lib(request):
    return importlib.import_module(request.param)


@pytest.fixture(autouse=True)
def _restore():
    yield
    anomaly._set(False)
    torch.autograd.set_detect_anomaly(False)


def run_and_catch(fn):
    """(exception message, list of warning messages)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(Exception) as err:
            fn()
    return str(err.value), [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def error_warnings(messages):
    return [m for m in messages if m.startswith("Error detected in")]


@pytest.mark.parametrize("program", ["div", "sqrt", "log_of_negative_in_double_backward", "matmul"])
def test_nan_in_backward_names_the_op_as_torch(program):
    def run(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mode = lib.autograd.detect_anomaly()
        with mode, np.errstate(all="ignore"):
            x = lib.tensor([0.0, 1.0], dtype=lib.float64, requires_grad=True)
            if program == "div":
                (x / x).sum().backward()
            elif program == "sqrt":
                (x.sqrt() * 0).sum().backward()  # 0 * inf in SqrtBackward0
            elif program == "log_of_negative_in_double_backward":
                g, = lib.autograd.grad((x * x).sum(), x, create_graph=True)
                (g.log() * 0).sum().backward()
            elif program == "matmul":
                m = lib.tensor([[float("nan"), 1.0], [0.0, 1.0]], dtype=lib.float64)
                (m @ x).sum().backward()
    theirs, _ = run_and_catch(lambda: run(torch))
    ours, _ = run_and_catch(lambda: run(tapegrad))
    assert ours == theirs


def test_failed_backward_warns_with_the_forward_file_and_line():
    x = tapegrad.tensor([0.0, 1.0], requires_grad=True)
    with tapegrad.autograd.set_detect_anomaly(True), np.errstate(all="ignore"):
        y = x / x  # the line the warning must name
        line = _line_of("y = x / x  # the line the warning must name")
        message, warned = run_and_catch(lambda: y.sum().backward())
    assert message == "Function 'DivBackward0' returned nan values in its 1th output."
    warning, = error_warnings(warned)
    assert warning.startswith("Error detected in DivBackward0. Traceback of forward call that caused the error:\n")
    assert f'File "{__file__}", line {line}, in test_failed_backward_warns_with_the_forward_file_and_line' in warning
    assert "y = x / x" in warning
    assert "tapegrad" + "/ops" not in warning  # only the user's frames


def _line_of(text):
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line and "_line_of" not in line)


def test_custom_function_error_names_the_function_and_its_apply_line():
    class Boom(tapegrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = tapegrad.tensor([1.0, 2.0], requires_grad=True)
    with tapegrad.autograd.set_detect_anomaly(True):
        z = Boom.apply(x)  # recorded here
        message, warned = run_and_catch(lambda: z.sum().backward())
    assert message == "boom"
    warning, = error_warnings(warned)
    assert warning.startswith("Error detected in BoomBackward. Traceback of forward call that caused the error:\n")
    assert "z = Boom.apply(x)  # recorded here" in warning


def test_forward_recorded_without_anomaly_mode_says_so(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with np.errstate(all="ignore"):
        y = x / x
    with lib.autograd.set_detect_anomaly(True):
        message, warned = run_and_catch(lambda: y.sum().backward())
    assert message == "Function 'DivBackward0' returned nan values in its 1th output."
    warning, = error_warnings(warned)
    assert warning.startswith("Error detected in DivBackward0. No forward pass information available. Enable detect "
                              "anomaly during forward pass for more information.")


def test_double_backward_error_names_what_induced_it():
    class RootAbs(tapegrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x.abs().sqrt()  # recorded under create_graph: induced by RootAbsBackward

    x = tapegrad.tensor([0.0, 1.0], dtype=tapegrad.float64, requires_grad=True)
    with tapegrad.autograd.set_detect_anomaly(True), np.errstate(all="ignore"):
        y = RootAbs.apply(x).sum()  # the op whose backward records the failing rows
        g, = tapegrad.autograd.grad(y, x, create_graph=True)
        message, warned = run_and_catch(lambda: (g * 0).sum().backward())  # 0 / 0 in SqrtBackward0
    assert message == "Function 'SqrtBackward0' returned nan values in its 0th output."
    warning, induced = [m for m in warned if "Anomaly Detection has been enabled" not in m]
    assert warning.startswith("Error detected in SqrtBackward0. Traceback of forward call that caused the error:\n")
    assert "return g * x.abs().sqrt()  # recorded under create_graph" in warning
    assert induced.startswith("\n\nPrevious calculation was induced by RootAbsBackward. Traceback of forward call "
                              "that induced the previous calculation:\n")
    assert "y = RootAbs.apply(x).sum()  # the op whose backward" in induced


def test_check_nan_false_lets_nan_through(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with lib.autograd.set_detect_anomaly(True, check_nan=False), np.errstate(all="ignore"):
        (x / x).sum().backward()
    assert np.isnan(x.grad.detach().numpy()[0])


def test_modes_restore_and_report_like_torch(lib):
    is_on = anomaly.is_anomaly_enabled if lib is tapegrad else torch.is_anomaly_enabled
    assert not is_on()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly():
            assert is_on()
    assert not is_on()
    assert [str(w.message) for w in caught] == [
        "Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled for "
        "debugging."]
    lib.autograd.set_detect_anomaly(True)
    assert is_on()
    lib.autograd.set_detect_anomaly(False)
    assert not is_on()


def test_recording_path_is_untouched_when_off():
    assert tape_mod.Tape.record is anomaly._plain_record
    with tapegrad.autograd.set_detect_anomaly(True):
        assert tape_mod.Tape.record is not anomaly._plain_record
    assert tape_mod.Tape.record is anomaly._plain_record
    x = tapegrad.tensor([1.0], requires_grad=True)
    y = x * 2
    traces = tape_mod.current().__dict__.get("anomaly_traces", {})
    assert anomaly._trace(tape_mod.current(), y._slot) is None or y._slot not in traces


def test_results_are_the_same_with_anomaly_mode_on():
    def grads():
        x = tapegrad.tensor([0.3, -1.2, 2.0], dtype=tapegrad.float64, requires_grad=True)
        w = tapegrad.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=tapegrad.float64, requires_grad=True)
        h = (w @ x).tanh()
        h.retain_grad()
        ((h * h).sum() + x.exp().sum()).backward()
        return x.grad.numpy().copy(), w.grad.numpy().copy(), h.grad.numpy().copy()
    plain = grads()
    with tapegrad.autograd.set_detect_anomaly(True):
        traced = grads()
    for a, b in zip(plain, traced):
        np.testing.assert_array_equal(a, b)
