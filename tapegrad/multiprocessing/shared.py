"""Tensors in shared memory (torch's `share_memory_`, `is_shared`), and how multiprocessing sends them.

share_memory_ moves a tensor's values into a `multiprocessing.shared_memory` segment; the tensor keeps its
identity (Module.share_memory shares parameters, buffers and gradients in place). Processes started afterwards,
by fork, spawn or forkserver, map the segment: an in-place write in one (an optimizer's step) is seen by all,
which is Hogwild training. multiprocessing's ForkingPickler (Process arguments, Queues) sends a shared tensor as
its segment's name, offset and strides, and any other by value, as torch's registered reductions do; plain
pickle, copy and tapegrad.save are unaffected. A segment lives until the process that made it exits (torch frees
one with its last reference)."""
import atexit
from multiprocessing import reduction, shared_memory

import numpy as np

from ..nn.parameter import Parameter
from ..tensor import Tensor, _new

_SEGMENTS = {}   # name -> (SharedMemory, first byte's address), made or mapped by this process
_MADE = []       # the names this process made, unlinked when it exits


def _address(a):
    return a.__array_interface__["data"][0]


def _segment_of(a):
    """(name, byte offset) of the segment holding array a, or None."""
    start = _address(a)
    for name, (shm, base) in _SEGMENTS.items():
        if base <= start < base + shm.size:
            return name, start - base
    return None


def is_shared(t):
    return _segment_of(t._data) is not None


def share_memory_(t):
    """Move t's values into a shared segment in place (nothing to do where they are already)."""
    if t.is_sparse:
        raise NotImplementedError("tapegrad: share_memory_ of a sparse tensor is not implemented")
    if t._base is not None or t._window is not None:
        raise NotImplementedError("tapegrad: share_memory_ of a view is not implemented (share the tensor it views)")
    if is_shared(t):
        return t
    a = t._data
    shm = shared_memory.SharedMemory(create=True, size=max(a.nbytes, 1))
    if not _MADE:
        atexit.register(_unlink_made)
    _MADE.append(shm.name)
    shared = np.ndarray(a.shape, a.dtype, buffer=shm.buf)
    _SEGMENTS[shm.name] = (shm, _address(shared))
    shared[...] = a
    t.data = _new(shared)  # (the tensor keeps its identity; rows recorded before see the old array: `.data =`)
    return t


def _unlink_made():
    for name in _MADE:
        try:
            _SEGMENTS[name][0].unlink()
        except FileNotFoundError:
            pass


def _rebuild_shared(cls, name, offset, shape, dtype, strides, requires_grad):
    if name not in _SEGMENTS:
        shm = shared_memory.SharedMemory(name=name)
        _SEGMENTS[name] = (shm, _address(np.frombuffer(shm.buf, np.uint8)))
    a = np.ndarray(shape, np.dtype(dtype), buffer=_SEGMENTS[name][0].buf, offset=offset, strides=strides)
    if cls is Parameter:
        return Parameter(_new(a), requires_grad)
    t = _new(a)
    t._requires_grad = requires_grad
    return t


def _reduce(t):
    where = _segment_of(t._data)
    if where is None:
        return t.__reduce_ex__(2)  # (by value, as plain pickle)
    a = t._data
    return _rebuild_shared, (type(t), *where, a.shape, a.dtype.str, a.strides, t._requires_grad)


for _cls in (Tensor, Parameter):
    reduction.ForkingPickler.register(_cls, _reduce)
