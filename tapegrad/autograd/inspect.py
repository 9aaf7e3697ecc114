"""Looking at the tape: its sizes (`tape_stats`) and its rows (`dump`), for memory questions and debugging.

    >>> import tapegrad as torch
    >>> x = torch.ones(3, requires_grad=True)
    >>> y = (x * 2).sum()
    >>> torch.autograd.tape_stats()["live_entries"] >= 3
    True
    >>> _ = torch.autograd.dump(y)   # prints: row, op, grad_fn, input rows, shape, dtype, flags
"""
from .. import tape as _tape_mod


def _tape_of(obj):
    if obj is None:
        return _tape_mod.current()
    if isinstance(obj, _tape_mod.Tape):
        return obj
    tape = getattr(obj, "_tape", None)
    return tape if tape is not None else _tape_mod.current()


def tape_stats(of=None):
    """The sizes of a tape (this thread's, or the one a tensor was recorded on), as a dict:

    entries (rows in use), live_entries (not freed), leaf_entries, value_bytes (the memory of every
    value the tape keeps alive, each buffer once), saved_bytes (the part a backward would read:
    torch's saved tensors), tape_bytes (the tape's own arrays), capacity, last_adjoint_bytes and
    peak_adjoint_bytes (the adjoint buffers of the last and the largest compiled backward), sweeps,
    compactions, swept_entries and sweep_at (the row count that triggers the next sweep).
    """
    return _tape_of(of).stats()


def dump(of=None, file=None, rows=None):
    """Print the Wengert list of a tape (this thread's, or a tensor's), one row per line:
    row, opcode name, torch's grad_fn name, input rows, shape, dtype, flags (REQ: requires grad,
    DEAD: freed, STOP: the replay stops there for hooks) and scalar attributes. Returns the text."""
    return _tape_of(of).dump(file=file, rows=rows)
