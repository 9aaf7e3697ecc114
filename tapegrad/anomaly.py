"""Anomaly detection: torch.autograd.detect_anomaly / set_detect_anomaly.

While it is on, backward checks the gradients each row returns for NaN and names the op that made
them ("Function 'DivBackward0' returned nan values in its 0th output."), and a backward that fails
warns with the user's stack at the time that op was recorded. The stack is captured by a recording
wrapper swapped into `Tape.record` only while anomaly mode is on, and kept in a side table of the tape
(`tape.anomaly_traces`): the normal recording path runs no extra instruction.
"""
import functools
import os
import sys
import threading
import traceback
import warnings
import weakref

import numpy as np

from . import _dtype, registry, tape as tape_mod
from ._warnings import user_stacklevel

_enabled = False       # global, as torch's
_check_nan = True
_plain_record = tape_mod.Tape.record
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_local = threading.local()  # the row whose create_graph backward is running (it "induces" new rows)


def is_anomaly_enabled():
    return _enabled


def is_anomaly_check_nan_enabled():
    return _check_nan


def _set(mode, check_nan=True):
    global _enabled, _check_nan
    _enabled, _check_nan = bool(mode), bool(check_nan)
    tape_mod.Tape.record = _record_with_trace if _enabled else _plain_record


class detect_anomaly:
    """Context manager (and decorator) that enables anomaly detection for the autograd engine."""

    def __init__(self, check_nan=True):
        self.prev, self.prev_check_nan = _enabled, _check_nan
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                      "be enabled for debugging.", stacklevel=user_stacklevel())

    def __enter__(self):
        _set(True, self.check_nan)

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turns anomaly detection on or off; takes effect at construction, or for a `with` block."""

    def __init__(self, mode, check_nan=True):
        self.prev, self.prev_check_nan = _enabled, _check_nan
        _set(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)
        return False


# -- where each op was recorded ----------------------------------------------------------------------------
def _record_with_trace(self, op, out, inputs, *args, **kwargs):
    row = _plain_record(self, op, out, inputs, *args, **kwargs)
    traces = self.__dict__.get("anomaly_traces")
    if traces is None:
        traces = self.anomaly_traces = {}
    try:
        ref = weakref.ref(out)
    except TypeError:
        ref = functools.partial(lambda v: v, out)
    traces[row] = (ref, _user_stack(), getattr(_local, "inducer", None))
    return row


def _user_stack():
    """The caller's stack, outermost first, without tapegrad's own frames (as torch's shows user code)."""
    frames = traceback.StackSummary.extract(traceback.walk_stack(sys._getframe(2)), lookup_lines=False)
    return traceback.StackSummary.from_list([f for f in reversed(frames) if not f.filename.startswith(_PACKAGE)])


def _trace(tape, row):
    traces = tape.__dict__.get("anomaly_traces")
    entry = traces.get(row) if traces else None
    if entry is None or row >= tape.n or entry[0]() is not tape.values[row]:
        return None  # not recorded in anomaly mode (or the row was reused since)
    return entry


class inducing:
    """While a create_graph backward runs one row, rows recorded are "induced" by it (torch's wording)."""

    def __init__(self, tape, row, name):
        entry = _trace(tape, row)
        self.parent = (name, entry[1], entry[2]) if entry is not None else (name, None, None)

    def __enter__(self):
        self.prev = getattr(_local, "inducer", None)
        _local.inducer = self.parent

    def __exit__(self, *exc):
        _local.inducer = self.prev
        return False


def warn_error(tape, row, name):
    """torch's warning when a backward fails at a row: where its forward was recorded."""
    entry = _trace(tape, row)
    if entry is None:
        msg = (f"Error detected in {name}. No forward pass information available. Enable detect anomaly during "
               f"forward pass for more information.")
    else:
        msg = f"Error detected in {name}. Traceback of forward call that caused the error:\n"
        msg += "".join(entry[1].format())
    warnings.warn(msg, UserWarning, stacklevel=user_stacklevel())
    parent = entry[2] if entry is not None else None
    while parent is not None:  # one more warning per backward that recorded the failing row, as torch
        pname, frames, parent = parent
        warnings.warn(f"\n\nPrevious calculation was induced by {pname}. Traceback of forward call that induced the "
                      f"previous calculation:\n" + ("".join(frames.format()) if frames is not None else ""),
                      UserWarning, stacklevel=user_stacklevel())


def nan_message(name, index):
    return f"Function '{name}' returned nan values in its {index}th output."


# -- naming a row in errors (torch's node names) ----------------------------------------------------------
def has_nan(g):
    if g is None:
        return False
    data = np.asarray(getattr(g, "_data", g))  # (a Tensor's array, or an array)
    return _dtype.is_float(data.dtype) and bool(np.isnan(data).any())


def run_named(tape, row, fn, *args):
    """Run one row's backward; if it fails, warn where the row was recorded (anomaly mode), and re-raise."""
    try:
        return fn(*args)
    except Exception:
        warn_error(tape, row, row_name(tape, row))
        raise


def row_name(tape, row):
    """torch's name of a row's backward node: the registry's, or the custom Function's (from its ctx)."""
    name = getattr(tape.aux.get(row), "grad_fn_name", None)
    return name or registry.OPS[tape.op[row]].grad_fn
