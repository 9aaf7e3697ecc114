"""The Wengert tape: one row per value the gradient may need (a leaf, a constant, or an op's output).

Rows are a struct of arrays, so the compiled replay reads them directly. A row's value is the ndarray
in `values[row]`; the tape holds it (that is what keeps it alive for the replay) and stores only
`id(value)`: the replay reads the data pointer and shape from NumPy's array struct, which costs
nothing at record time (`ndarray.ctypes.data` costs 1.1 us, more than a small ufunc; measured).

Memory (docs/reliability.md): backward without retain_graph frees the rows it used and cuts the dead
tail. Rows that no live tensor reaches (forward passes without backward) are found by `sweep`, which
runs when the tape reaches SWEEP_ROWS rows, or sooner once the rows recorded since the last sweep hold
about SWEEP_BYTES of values (record() looks when the tape reaches `sweep_at`), and then compacts the
tape: live rows move down, keeping their order. A tensor whose row moved finds it again by its value (`locate`), so recording costs
nothing extra; compaction never moves a row onto an index that another row holding the same value
object had, so a stale row number can never be mistaken for a live one.

A large value that no backward rule reads (the output of `x @ w` once `+ b` has used it) is not held:
the tape keeps a placeholder of its shape and a weakref (`released`), so the value dies with its tensor
as in torch, and an op whose rule reads it later takes it back (see "values no rule reads" below).
"""
import sys
import threading
import warnings
import weakref
from itertools import repeat

import numpy as np

from . import kernels, registry
from .registry import SAVES_OUT, reads_input, tables

# Row opcodes the tape itself knows; ops get theirs from the registry.
OP_LEAF, OP_CONST, OP_FREED = 0, 1, 2
# Row flags.
F_REQ = 1    # an adjoint flows into this row (it requires grad)
F_DEAD = 2   # freed: by backward(retain_graph=False), or by the sweep when no live tensor reaches it
F_STOP = 4   # the replay returns to Python at this row (tensor hooks, retain_grad)
F_READ = 8   # a rule recorded so far reads this row's value: the tape must keep it (see release)
NOT_A_SLOT = 1 << 62  # a tensor's slot before it has one: fails the `slot < n` test without a branch

SWEEP_ROWS = 4096       # a sweep when the tape reaches this length (or twice its length after the last one),
SWEEP_BYTES = 64 << 20  # or sooner when the rows recorded since then hold values of about this many bytes,
SWEEP_CHECK = 256       # estimated (from a sample) every this many rows,
SWEEP_GAP_MIN = 16      # or as often as this when the estimate nears SWEEP_BYTES
GROWTH_MIN = 1024       # live rows below this never count as growth (a sweep that finds the live part 25%
GROWTH_SWEEPS = 2       # larger than the last one does): so many such sweeps in a row before the warning,
GROWTH_NO_FREED = 16384  # and one more and this many live rows when backward has freed none of it
GHOSTS = 4              # cut rows remembered per index (see _truncate)
RELEASE_BYTES = 64 << 10  # an op's value of at least this size that no rule reads is not held by the tape
# dicts keyed by row, remapped by compaction
_ROW_KEYED = ("aux", "watch", "cells", "registered", "released", "anomaly_traces", "guards")
_F32, _F64 = np.dtype(np.float32).num, np.dtype(np.float64).num  # the dtypes the replay knows: codes 0 and 1

THREAD_MESSAGE = (
    "tapegrad: this graph was recorded by thread {name!r}, which is still running. Each thread records "
    "its own tape, and only the recording thread may run backward through it while it is alive (it could "
    "be recording at the same time). Call backward in that thread, or after it has finished.")


class TapeGrowthWarning(UserWarning):
    """The part of the tape that live tensors reach keeps growing from sweep to sweep."""


GROWTH_MESSAGE = (
    "tapegrad: the live part of the autograd tape has grown at {sweeps} sweeps in a row, to {live} entries, "
    "most of them reachable from 0-dim tensors. A scalar that accumulates results across iterations keeps "
    "every iteration's graph alive: write `total_loss += loss.item()` (or `loss.detach()`, or "
    "`losses.append(loss.item())`) instead of `total_loss += loss`. If this is one large graph you mean "
    "to backpropagate, ignore this warning (category tapegrad.tape.TapeGrowthWarning).")
_growth_warned = False
_refcount = sys.getrefcount


class Watch:
    """A tape.watch entry: a non-leaf tensor with hooks or retain_grad. Calling it gives the tensor while
    it lives; afterwards, while its row does, a stand-in that still runs its hooks (torch keeps a tensor's
    hooks on its graph node: `h.register_hook(f)` inside a function that drops h still calls f)."""
    __slots__ = ("ref", "hooks")

    def __init__(self, t):
        self.ref = weakref.ref(t)
        self.hooks = t._hooks

    def __call__(self):
        t = self.ref()
        if t is None and self.hooks:
            return _Hooks(self.hooks)
        return t

    def alive(self):
        return self.ref() is not None


class _Hooks:
    __slots__ = ("_hooks",)
    _retains_grad = False

    def __init__(self, hooks):
        self._hooks = hooks


class _Lock:
    """The tape's lock, taken by backward. Its depth tells the sweep that row numbers are in use (a
    create_graph backward records onto the tape it replays); it refuses a thread other than the
    recording one while that thread is alive, since the recording thread does not take the lock."""
    __slots__ = ("_lock", "depth", "owner")

    def __init__(self, owner):
        self._lock = threading.RLock()
        self.depth = 0
        self.owner = owner

    def check_thread(self):
        owner = self.owner
        if owner is not threading.current_thread() and owner.is_alive():
            raise RuntimeError(THREAD_MESSAGE.format(name=owner.name))

    def acquire(self, blocking=True, timeout=-1):
        self.check_thread()
        got = self._lock.acquire(blocking, timeout)
        if got:
            self.depth += 1
        return got

    def release(self):
        self.depth -= 1
        self._lock.release()

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
        return False


class Tape:
    growth_pending = None  # the growth warning, once found, until the `+=` that keeps the graphs alive

    def __init__(self, capacity=1024):
        self.n = 0              # rows in use
        self.nargs = 0          # entries in use in the CSR argument arrays
        self.values = []        # the value of each row (None once freed)
        self.aux = {}           # row -> Python object an op needs (index map, context), or a leaf's weakref
        self.watch = {}         # row -> Watch of a non-leaf tensor with hooks or retain_grad
        self.cells = {}         # row -> the version cell vaddr[row] points at (kept alive here)
        self.registered = {}    # op row -> the first of the leaf/constant rows registered by its record
        self.released = {}      # row -> weakref to the value the tape let go of (values[row] holds its shape)
        self.shared_leaves = {}  # id -> weakref of a leaf another thread's tape registered too (leaf_rows)
        self.guards = {}        # row -> [(version cell, version, dtype, shape)] of the index, mask or target
                                # tensors its backward depends on (guard): backward checks them as saved
        self.owner = threading.current_thread()
        self.lock = _Lock(self.owner)
        self.sweep_at = SWEEP_CHECK  # record() calls check_sweep() when the tape reaches this length
        self._sweep_rows = SWEEP_ROWS  # the length at which a sweep runs whatever the values' sizes
        self._swept_n = 0              # the length after the last sweep
        self.sweeps = self.compactions = self.swept = 0
        self.last_adjoint_bytes = self.peak_adjoint_bytes = 0
        self._last_live = 0
        self._growth = 0
        self.cap = 0
        self.acap = 0
        self._grow(capacity)
        self._grow_args(2 * capacity)

    # -- storage ---------------------------------------------------------------------------------
    _ROW_ARRAYS = ("op", "flags", "dtype", "obj", "vaddr", "outver", "fattr", "iattr")

    def _grow(self, cap):
        def resized(a, shape, dtype):
            new = np.zeros(shape, dtype)
            if a is not None:
                new[: len(a)] = a
            return new
        cap = max(cap, 2 * self.cap)
        get = lambda name: getattr(self, name, None)  # noqa: E731
        self.op = resized(get("op"), cap, np.int16)
        self.flags = resized(get("flags"), cap, np.uint8)
        self.dtype = resized(get("dtype"), cap, np.int8)        # 0 float32, 1 float64, 2 other
        self.obj = resized(get("obj"), cap, np.int64)           # id() of the value ndarray
        self.vaddr = resized(get("vaddr"), cap, np.int64)       # address of the version cell, 0 if none
        self.outver = resized(get("outver"), cap, np.int64)     # version of the value when recorded
        self.fattr = resized(get("fattr"), (cap, 2), np.float64)  # scalar attributes (constants)
        self.iattr = resized(get("iattr"), cap, np.int64)       # integer attribute (axes mask, index map)
        self.argptr = resized(get("argptr"), cap + 1, np.int64)  # CSR: args of row i are args[argptr[i]:argptr[i+1]]
        ghost = np.zeros((GHOSTS, cap), np.int64)  # per index: ids of the values of the last rows cut there
        if get("ghost") is not None:
            ghost[:, : self.ghost.shape[1]] = self.ghost
        self.ghost = ghost
        self.cap = cap

    def _grow_args(self, cap):
        cap = max(cap, 2 * self.acap)
        for name, dt in (("args", np.int32), ("argver", np.int64)):
            new = np.zeros(cap, dt)
            old = getattr(self, name, None)
            if old is not None:
                new[: len(old)] = old
            setattr(self, name, new)
        self.acap = cap

    # -- recording -------------------------------------------------------------------------------
    def slot(self, t):
        """The row holding tensor t's current value, registering it as a leaf or constant if needed."""
        s = t._slot
        if t._tape is self:
            if self.holds(s, t._data):
                return s
            if s != NOT_A_SLOT and self.compactions:
                s = self.locate(t)
                if s >= 0:
                    return s
        elif t._tape is not None and not t._is_leaf:
            raise RuntimeError("tapegrad: this tensor's graph was recorded by another thread; each thread "
                               "records its own tape. Call backward in that thread, or pass t.detach().")
        if self.owner is not threading.current_thread():
            self.lock.check_thread()
        if t._requires_grad and not t._is_leaf:
            # Its history was freed (backward without retain_graph): a backward through it must say so.
            s = self._append(OP_FREED, t._data, F_REQ | F_DEAD)
        else:
            if sys.getrefcount(t._data) > 2 and (self.ghost[:, self.n] == id(t._data)).any():
                self._pad_past(t._data)  # t shares an array object (t = y.detach()) with a cut row here
            if t._requires_grad:
                if t._tape is not None and t._tape is not self:  # t's link moves here: each tape remembers
                    ref = weakref.ref(t)                         # that it may hold rows t no longer names
                    self.shared_leaves[id(t)] = t._tape.shared_leaves[id(t)] = ref
                s = self._append(OP_LEAF, t._data, F_REQ)
                self.aux[s] = weakref.ref(t)
            else:
                s = self._append(OP_CONST, t._data, 0)
        self.argptr[s + 1] = self.nargs
        if t._vc is not None:
            self.set_cell(s, t._vc)
            self.outver[s] = t._vc[0]
        t._tape, t._slot = self, s
        return s

    def target_rows(self, t):
        """The rows of this tape a gradient with respect to t sums: t's row, or, for a leaf that threads
        have used on several tapes (its link names only the last), every live leaf row of t here."""
        ref = self.shared_leaves.get(id(t))
        if ref is None or ref() is not t:
            return [self.slot(t)]
        op, flags = self.op, self.flags
        rows = [r for r, a in list(self.aux.items()) if r < self.n and op[r] == OP_LEAF and
                not flags[r] & F_DEAD and isinstance(a, weakref.ref) and a() is t]
        return sorted(rows) or [self.slot(t)]

    def _pad_past(self, data):
        """Pad while the next index is one where a cut row held `data`: the tensor that row was (y,
        whose graph backward freed) still names that index, and would take a row holding its array
        (t = y.detach()) for its own."""
        while (self.ghost[:, self.n] == id(data)).any():
            n = self.n
            if n + 2 >= self.cap:
                self._grow(2 * self.cap)
            self.op[n], self.flags[n], self.obj[n] = OP_FREED, F_DEAD, 0
            self.values.append(None)
            self.argptr[n + 1] = self.nargs
            self.n = n + 1

    def locate(self, t):
        """t's row on this tape, found again if a compaction moved it (and remembered), or -1."""
        s = t._slot
        if self.holds(s, t._data):
            return s
        s = self.find(t._data, t if t._is_leaf and t._requires_grad else "const" if t._is_leaf else "op")
        if s >= 0:
            t._slot = s
        return s

    def find(self, value, kind="op"):
        """The row holding the value object `value` since the last compaction moved it, or -1.

        kind: "op" for an op's result, "const" for a constant, or the leaf tensor itself. Of several
        rows holding one value (in-place ops write one storage), the newest of that kind is the one.
        """
        if not self.compactions:
            return -1  # rows never moved: a row number that fails `values[row] is value` is freed
        values, op = self.values, self.op
        if isinstance(kind, str) and kind == "op":  # a released row (only op rows are) holds it by weakref
            newest = max((r for r, w in self.released.items() if w() is value), default=-1)
            if newest >= 0 and not (self.obj[newest + 1: self.n] == id(value)).any():
                return newest
        for r in np.flatnonzero(self.obj[: self.n] == id(value))[::-1].tolist():
            if values[r] is not value:
                continue
            o = op[r]
            if not isinstance(kind, str):  # a leaf tensor: its row names it
                ref = self.aux.get(r) if o == OP_LEAF else None
                ok = ref is not None and ref() is kind
            elif kind == "const":
                ok = o == OP_CONST
            else:
                ok = o != OP_LEAF and o != OP_CONST
            if ok:
                return r
        return -1

    def _append(self, op, value, flags):
        n = self.n
        if n + 1 >= self.cap:
            self._grow(2 * self.cap)
        self.op[n] = op
        self.flags[n] = flags
        dt = value.dtype.num
        self.dtype[n] = 0 if dt == _F32 else 1 if dt == _F64 else 2  # float16 never requires grad
        self.obj[n] = id(value)
        self.values.append(value)
        self.n = n + 1
        return n

    def record(self, op, out, inputs, c=0.0, c2=0.0, iattr=0, aux=None):
        """Append one op row: opcode, input rows, output value. Returns the output's row.

        The hot path of every recorded op: `_append` is written out here, and attributes are read once.
        """
        n = self.n
        if n >= self.sweep_at and not self.lock.depth:
            self.check_sweep()  # before any input row is read: a sweep may move rows
            n = self.n
        elif n and _refcount(self.values[n - 1]) <= 2 and not self.lock.depth:
            # only the tape holds the last row's value: its tensor died (an evaluation's output, dropped)
            self.cut_dead_tail()
            n = self.n
        n0 = n
        k = self.nargs
        if k + len(inputs) >= self.acap:
            self._grow_args(2 * (k + len(inputs)))
        args, values = self.args, self.values
        for t in inputs:
            s = t._slot
            if not (t._tape is self and s < n and values[s] is t._data):
                s = self.slot(t)
                n = self.n
                if s in self.released:
                    self._reacquire(s, t._data, op, k - self.nargs)
            args[k] = s
            if t._vc is not None:
                self.argver[k] = t._vc[0]
            k += 1
        if n + 1 >= self.cap:
            self._grow(2 * self.cap)
        self.op[n] = op
        self.flags[n] = F_REQ
        dt = out.dtype.num
        self.dtype[n] = 0 if dt == _F32 else 1 if dt == _F64 else 2
        self.obj[n] = id(out)
        values.append(out)
        self.n = n + 1
        self.argptr[n + 1] = self.nargs = k
        if n > n0:
            self.registered[n] = n0  # inputs registered for this row: rows n0..n-1
        if c:
            self.fattr[n, 0] = c
        if c2:
            self.fattr[n, 1] = c2
        if iattr:
            self.iattr[n] = iattr
        if aux is not None:
            self.aux[n] = aux
        if out.nbytes >= RELEASE_BYTES:
            self._release_inputs(n)
        return n

    # -- values no rule reads --------------------------------------------------------------------
    # The tape holds each value for the rules that read it. The value of an op whose own rule does not
    # read it (matmul, add) and which no rule recorded so far reads either is not held: the tape keeps a
    # placeholder of its shape (the compiled replay reads sizes from it) and a weakref, so the value dies
    # with the user's tensor, as torch frees `x @ w` once `+ b` has used it. A later op whose rule reads
    # it takes it back from the tensor (_reacquire). Only large values: for a small one the bookkeeping
    # costs more than the memory.
    def holds(self, row, value):
        """Whether `value` is the value of `row` (held, or released by the tape while a tensor has it)."""
        if row >= self.n or value is None:
            return False
        if self.values[row] is value:
            return True
        w = self.released.get(row)
        return w is not None and w() is value

    def value_at(self, row):
        """The value of a row as tensors see it: the released array while it lives, else what the tape has."""
        w = self.released.get(row)
        v = w() if w is not None else None
        return self.values[row] if v is None else v

    def _release_inputs(self, row):
        saves = tables()[1]
        lo, hi = self.argptr[row], self.argptr[row + 1]
        reads = int(saves[self.op[row]])
        traces = self.__dict__.get("anomaly_traces") or ()  # (anomaly mode names a row by its value)
        for j, s in enumerate(self.args[lo:hi].tolist()):
            if reads_input(reads, j):
                continue  # this row's rule reads it
            v = self.values[s]
            o = int(self.op[s])
            if (o <= OP_FREED or v is None or self.flags[s] & (F_READ | F_DEAD) or s in self.aux
                    or s in self.released or self.vaddr[s] or v.base is not None or v.nbytes < RELEASE_BYTES
                    or v.dtype.kind != "f" or saves[o] & SAVES_OUT or s in traces):
                continue
            # rows recorded after s (this one included): does one of their rules read s?
            k0 = int(self.argptr[s + 1])
            entries = np.flatnonzero(self.args[k0: self.nargs] == s) + k0
            if entries.size:
                owners = np.searchsorted(self.argptr[: self.n + 1], entries, side="right") - 1
                pos = entries - self.argptr[owners]
                if reads_input(saves[self.op[owners]], pos).any():
                    self.flags[s] |= F_READ
                    continue
            self.released[s] = weakref.ref(v)
            shape = np.ndarray(v.shape, v.dtype, _nan(v.dtype), 0, (0,) * v.ndim)
            self.values[s], self.obj[s] = shape, id(shape)

    def _reacquire(self, row, value, op, j):
        """Op `op` takes the released row's value as its input j: hold it again if op's rule reads it."""
        if not reads_input(int(tables()[1][op]), j):
            return
        del self.released[row]
        self.values[row], self.obj[row] = value, id(value)
        self.flags[row] |= F_READ

    def _ids(self, lo, hi):
        """id() of each row's value in lo:hi, the released arrays' own (not their placeholders') where they live."""
        ids = self.obj[lo:hi].copy()
        for r, w in self.released.items():
            v = w() if lo <= r < hi else None
            if v is not None:
                ids[r - lo] = id(v)
        return ids

    def set_cell(self, row, cell):
        """Point a row at the version cell of its value's storage, so backward can check it."""
        self.vaddr[row] = cell.ctypes.data
        self.cells[row] = cell

    def row_args(self, row):
        return self.args[self.argptr[row]: self.argptr[row + 1]].tolist()

    def note_adjoint_bytes(self, nbytes):
        """Called by backward with the size of the adjoint buffers it allocated."""
        self.last_adjoint_bytes = nbytes
        if nbytes > self.peak_adjoint_bytes:
            self.peak_adjoint_bytes = nbytes

    # -- freeing ---------------------------------------------------------------------------------
    def free_graph(self, need):
        """Free the op rows a backward ran (`need`: its plan's rows), as free does, in one compiled pass.

        The tail it cuts also takes the constants first registered while the graph was recorded
        (per-iteration data: a constant whose row is cut registers again when used). Leaves keep their
        rows, so parameters are registered once."""
        # (all n rows: a hook under enable_grad may have recorded some while the backward ran)
        rows, end = kernels.load().free_graph(need, self.n, self.op, self.flags)
        if len(rows):
            first = int(rows[0])
            self._release(rows, max(end, self.registered.get(first, first)))

    def free(self, rows):
        """Mark rows dead and release their values, then cut the dead tail of the tape (a sweep's)."""
        self.flags[rows] |= F_DEAD
        self._release(rows, self._live_end())

    def _release(self, rows, tail):
        """Drop the values of dead rows below `tail`, then cut the tape at `tail`."""
        values, aux = self.values, self.aux
        stranded = rows[rows < tail]  # rows below a live row: interleaved graphs, or the sweep's
        self.vaddr[stranded] = 0      # their version cells are released below
        obj, released = self.obj, self.released
        for r in stranded.tolist():
            v = values[r]
            w = released.pop(r, None)
            if w is not None:  # (a placeholder): the row keeps the id of the value while a tensor has it
                v = w()
                obj[r] = 0 if v is None else id(v)
            elif v is not None and sys.getrefcount(v) <= 3:  # the list, v, the argument: it dies here,
                obj[r] = 0                                   # and its id may be reused (see compact)
            values[r] = None
            aux.pop(r, None)
            self.guards.pop(r, None)
            self.watch.pop(r, None)
            self.cells.pop(r, None)
        self._truncate(tail)

    def _live_end(self):
        n = self.n
        live = np.flatnonzero((self.flags[:n] & F_DEAD) == 0)
        return int(live[-1]) + 1 if len(live) else 0

    def _truncate(self, n):
        if n >= self.n:
            return
        k = int(self.argptr[n])
        # Remember the ids of the cut rows' values at their indices: a tensor may still hold one, and
        # its row number names this index, which another row may take (slot pads past it)
        kernels.load().cut(n, self.n, k, self.nargs, self._ids(n, self.n), self.ghost, self.obj, self.op,
                           self.flags, self.dtype, self.vaddr, self.outver, self.iattr, self.fattr, self.args,
                           self.argver, self.argptr)
        del self.values[n:]
        for name in _ROW_KEYED:
            table = getattr(self, name, None)
            if table:
                for r in [r for r in table if r >= n]:
                    del table[r]
        self.n, self.nargs = n, k

    def _owner_rows(self):
        """For each entry of the argument arrays, the row it belongs to."""
        n = self.n
        return np.repeat(np.arange(n, dtype=np.int64), np.diff(self.argptr[: n + 1]))

    def _held(self):
        """Rows whose value something besides the tape holds: a tensor, a view, a saved context.

        The reference count says so without any per-tensor bookkeeping on the recording path. A count
        above 2 (the tape's list, getrefcount's argument) makes a row a candidate; the tape's own other
        references are then subtracted for candidates only: one per further row holding the value (an
        in-place op's rows share one), one per view among the leaf, constant and reshape rows' values
        (a view holds its base; other ops' values are arrays of their own).
        """
        n = self.n
        values = self.values
        alive = (self.flags[:n] & F_DEAD) == 0
        refs = np.fromiter(map(sys.getrefcount, values), np.int64, n)
        held = (refs > 2) & alive
        cand = np.flatnonzero(held)
        if cand.size:
            ids = np.where(alive, self.obj[:n], 0)
            want = ids[cand]
            same = ids[np.isin(ids, want)]
            uniq, counts = np.unique(same, return_counts=True)
            internal = counts[np.searchsorted(uniq, want)]           # rows holding the value (itself included)
            kinds = registry.tables()[0][self.op[:n]]
            viewish = np.flatnonzero(alive & ((kinds == registry.K_LEAF) | (kinds == registry.K_RESHAPE)))
            bases = [id(b) for b in map(getattr, map(values.__getitem__, viewish.tolist()), repeat("base"),
                                        repeat(None)) if b is not None]
            if bases:
                b_uniq, b_counts = np.unique(np.asarray(bases, np.int64), return_counts=True)
                pos = np.minimum(np.searchsorted(b_uniq, want), len(b_uniq) - 1)
                internal = internal + np.where(b_uniq[pos] == want, b_counts[pos], 0)
            held[cand] = refs[cand] > internal + 1
        for r, w in self.watch.items():  # hooks and retain_grad keep rows whose tensors are alive
            if (w.alive() if isinstance(w, Watch) else w() is not None):
                held[r] = True
        for r, w in self.released.items():  # the tape does not hold these: a live one is held elsewhere
            if w() is not None and alive[r]:
                held[r] = True
        return held

    def _reachable(self, held, owners):
        """Rows that a held row reaches backwards through live rows (a dead row keeps nothing)."""
        from .kernels import load
        n = self.n
        args = self.args[: self.nargs]
        if owners.size:
            dead_entry = (self.flags[owners] & F_DEAD) != 0
            if dead_entry.any():
                args = args.copy()
                args[dead_entry] = owners[dead_entry]  # an entry of a dead row points at the row itself
        lost = load().unreachable(n, held, self.flags, self.argptr, args)
        return ~lost & ((self.flags[:n] & F_DEAD) == 0)

    def check_sweep(self):
        """Sweep if the tape has reached SWEEP_ROWS rows (twice its length after the last sweep, if more),
        or if the rows recorded since the last sweep hold about SWEEP_BYTES bytes of values (estimated
        from every 16th value); else say when to look again."""
        n, start = self.n, min(self._swept_n, self.n)
        if n < self._sweep_rows:
            sample = max((n - start + 15) // 16, 1)
            recorded = sum(map(getattr, self.values[start::16], repeat("nbytes"), repeat(0))) * (n - start) // sample
            if recorded < SWEEP_BYTES:
                per_row = max(recorded // max(n - start, 1), 1)
                gap = min(SWEEP_CHECK, max(SWEEP_GAP_MIN, (SWEEP_BYTES - recorded) // per_row))
                self.sweep_at = min(self._sweep_rows, n + gap)
                return
        self.sweep()

    def cut_dead_tail(self):
        """Free the rows at the tape's end that no tensor holds, from the last row down to the first op row
        held (record() calls it when the last row's tensor has died, as torch frees a graph with its last
        tensor), and cut them. No row above them is left to reach them, so nothing can; leaf and constant
        rows (registered while the pass ran) have no inputs, so a held one is stepped over and stays. A row
        counts as held when anything beyond the tape refers to its value (a tensor, a view, a saved context),
        its released value is alive, or its hooks' tensor is. A tail of less than RELEASE_BYTES of values is left to
        the sweep. O(rows walked)."""
        if self.owner is not threading.current_thread():
            return
        values, released, watch, flags, op = self.values, self.released, self.watch, self.flags, self.op
        dead, nbytes = [], 0
        for r in range(self.n - 1, -1, -1):
            if flags[r] & F_DEAD:
                continue
            w = released.get(r)
            held = w() is not None if w is not None else _refcount(values[r]) > 2  # (the list, the argument)
            if not held:
                w = watch.get(r)
                held = w is not None and (w.alive() if isinstance(w, Watch) else w() is not None)
            if held:
                if op[r] == OP_LEAF or op[r] == OP_CONST:
                    continue
                break
            dead.append(r)
            nbytes += getattr(values[r], "nbytes", 0)
        # A small dead tail waits for the sweep: a cut costs about 15 us, which a step of small ops (a compiled
        # second derivative of 1,000 elements: 35 us) would pay at each call; memory is what the cut is for.
        if dead and nbytes >= RELEASE_BYTES:
            self.swept += len(dead)
            self.free(np.array(dead[::-1], np.int64))
            self._swept_n = min(self._swept_n, self.n)

    def sweep(self):
        """Free the rows that no live tensor can reach (PyTorch frees an unreachable graph the same way),
        then compact the tape so that it stays as long as what is live."""
        if self.lock.depth:
            return  # a backward is using row numbers; the next record after it sweeps
        self.sweeps += 1
        n = self.n
        owners = self._owner_rows()
        reach = self._reachable(self._held(), owners)
        dead = np.flatnonzero(~reach & ((self.flags[:n] & F_DEAD) == 0))
        self.swept += len(dead)
        # Nothing holds their values: they die with their rows, and their ids may be reused (compact)
        self.flags[dead] |= F_DEAD
        self.obj[dead] = 0
        self.vaddr[dead] = 0
        if not self.compact():  # (it drops the dead rows' values and table entries itself)
            self.free(dead)
        self._truncate(self._live_end())
        live = int(np.count_nonzero((self.flags[: self.n] & F_DEAD) == 0))
        self._swept_n = self.n
        self._sweep_rows = max(SWEEP_ROWS, 2 * self.n)  # a large live part: O(1) per row recorded
        self.sweep_at = min(self._sweep_rows, self.n + SWEEP_CHECK)
        self._check_growth(live)

    # -- compaction ------------------------------------------------------------------------------
    def compact(self):
        """Move the live rows down over the dead ones, keeping their order.

        Dead rows that a live row names as an input stay, without inputs, so that a backward through
        them still raises. Rows from the first one whose context keeps row numbers (an aux object with
        `_row`, a custom Function's) upwards stay where they are. No row lands on an index where another
        row holding the same value object was: a tensor's stale row number then fails the tape's
        `values[row] is data` test, and `locate` finds its row.
        """
        if self.lock.depth:
            return False
        n = self.n
        if n == 0:
            return False
        flags = self.flags[:n]
        alive = (flags & F_DEAD) == 0
        owners = self._owner_rows()
        keep = alive.copy()
        keep[self.args[: self.nargs][alive[owners]]] = True
        pinned = [r for r, a in self.aux.items() if hasattr(a, "_row") and r < n and keep[r]]
        top = min(pinned) if pinned else n   # rows from here up do not move
        keep[top:] = True
        rows = np.flatnonzero(keep)
        m = len(rows)
        below = int(np.searchsorted(rows, top))  # kept rows below the pinned part
        if m == n or below == top:
            return False
        if m == 0:
            self._truncate(0)
            self.compactions += 1
            return True
        new = rows.copy()                         # rows from `top` up keep their index
        new[:below] = np.arange(below)
        # A kept row must not land on an index where another row had the same value object (a dead
        # row keeps its value's id only while something else held the value when it was freed).
        ids = self._ids(0, n)
        uniq, counts = np.unique(ids[ids != 0], return_counts=True)
        where = {}
        gk, gi = np.nonzero(self.ghost[:, :n])  # cut rows (see _truncate) count as rows that held their values
        gids = self.ghost[gk, gi]
        mine = np.isin(gids, ids[rows])
        for i, g in zip(gi[mine].tolist(), gids[mine].tolist()):
            where.setdefault(g, set()).add(i)
        shared = np.union1d(uniq[counts > 1], np.fromiter(where, np.int64, len(where)))
        if shared.size:
            for i in np.flatnonzero(np.isin(ids, shared)).tolist():
                where.setdefault(int(ids[i]), set()).add(i)
            bump = np.zeros(below, np.int64)
            pad = 0
            for j in np.flatnonzero(np.isin(ids[rows[:below]], shared)).tolist():
                r, target = int(rows[j]), j + pad
                olds = where[int(ids[r])]
                while target != r and target in olds:
                    pad += 1
                    target += 1
                    bump[j] += 1
            if pad:
                new[:below] += np.cumsum(bump)  # padding rows (dead, empty) before rows that would collide
                if below and new[below - 1] >= top:
                    return False  # no room below the pinned part: leave the tape as it is
        size = int(new[-1]) + 1
        if size >= self.cap:
            self._grow(size + 1)
        src = np.full(size, -1, np.int64)  # the old row at each new index (-1: padding)
        src[new] = rows
        new_of_old = np.full(n, -1, np.int64)
        new_of_old[rows] = new
        pad_rows = src < 0
        take = np.where(pad_rows, 0, src)
        live_src = ~pad_rows & alive[take]
        counts_new = np.where(live_src, np.diff(self.argptr[: n + 1])[take], 0)
        # arguments of the kept live rows, renumbered
        entry_live = keep[owners] & alive[owners]
        new_args = new_of_old[self.args[: self.nargs][entry_live]]
        new_argver = self.argver[: self.nargs][entry_live]
        assert (new_args >= 0).all()
        for name in self._ROW_ARRAYS:
            a = getattr(self, name)
            moved = a[take]
            moved[pad_rows] = 0
            a[:size] = moved
            a[size:n] = 0
        self.flags[:size][pad_rows] = F_DEAD
        self.op[:size][pad_rows] = OP_FREED
        dead_kept = ~pad_rows & ~alive[take]
        self.vaddr[:size][dead_kept] = 0
        k = len(new_args)
        self.args[:k] = new_args
        self.argver[:k] = new_argver
        self.args[k: self.nargs] = 0
        self.argver[k: self.nargs] = 0
        self.argptr[0] = 0
        self.argptr[1: size + 1] = np.cumsum(counts_new)
        self.argptr[size + 1: n + 1] = 0
        values = self.values
        keeps_value = np.where(pad_rows, False, alive[take]).tolist()
        self.values = [values[r] if ok else None for r, ok in zip(src.tolist(), keeps_value)]
        for name in _ROW_KEYED:
            table = getattr(self, name, None)
            if table:
                moved = {int(new_of_old[r]): v for r, v in table.items() if r < n and new_of_old[r] >= 0 and alive[r]}
                table.clear()
                table.update(moved)
        self.registered.clear()  # (its values are row numbers)
        self.n, self.nargs = size, k
        self.compactions += 1
        return True

    # -- growth of the live part (a scalar accumulating graphs across iterations) -------------------
    def _check_growth(self, live):
        """Warn once when the live part grows from sweep to sweep and 0-dim tensors reach most of it.

        A training loop's `total_loss += loss` keeps rows that backward has freed (the losses): that
        is a leak as soon as it grows. Without freed rows it may be an evaluation loop's leak or one
        large scalar graph about to be backpropagated, so the warning waits for more growth.
        """
        global _growth_warned
        if self.growth_pending is not None:  # no `+=` on a scalar since it was found: say it here
            self.warn_growth()
            return
        if live >= GROWTH_MIN and live * 4 >= self._last_live * 5:
            self._growth += 1
        else:
            self._growth = 0
        self._last_live = live
        if self._growth < GROWTH_SWEEPS or _growth_warned:
            return
        held = self._held()
        scalar = np.zeros(self.n, np.bool_)
        for r in np.flatnonzero(held).tolist():
            v = self.values[r]
            scalar[r] = v is not None and v.ndim == 0
        owners = self._owner_rows()
        reach = self._reachable(scalar, owners)
        reached = int(np.count_nonzero(reach))
        if 2 * reached < live:
            return
        inputs = self.args[: self.nargs][reach[owners]]
        freed = len(np.unique(inputs[(self.flags[inputs] & F_DEAD) != 0]))
        if 4 * freed < reached and (self._growth <= GROWTH_SWEEPS or live < GROWTH_NO_FREED):
            return
        _growth_warned = True
        # A sweep runs at whatever op fills the tape, usually in the forward: the warning waits for the
        # next in-place add on a 0-dim tensor (Tensor.__iadd__), so that it names the user's
        # `total_loss += loss` line, as the fix it suggests is written there.
        self.growth_pending = GROWTH_MESSAGE.format(sweeps=self._growth, live=live)

    def warn_growth(self):
        """Issue the pending growth warning, naming the user's line that is running now."""
        message, self.growth_pending = self.growth_pending, None
        warnings.warn(message, TapeGrowthWarning, stacklevel=_user_stacklevel())

    # -- inspection ------------------------------------------------------------------------------
    def stats(self):
        """Sizes: entries (rows), live entries, the bytes of the values the tape holds and of those a
        backward would read (saved), the tape's own arrays, and the last and peak adjoint buffers."""
        n = self.n
        flags = self.flags[:n]
        alive = (flags & F_DEAD) == 0
        values = self.values
        value_bytes = _distinct_bytes(v for v in values if v is not None)
        saved = np.zeros(n, np.bool_)
        kinds, saves = registry.tables()
        owners = self._owner_rows()
        if n:
            ops = self.op[:n]
            saves_of = saves[ops].astype(np.int64)
            entry = np.arange(self.nargs) - self.argptr[owners]  # position of each entry in its row
            live_entry = alive[owners] & registry.reads_input(saves_of[owners], entry)
            saved[self.args[: self.nargs][live_entry]] = True
            saved |= alive & ((saves_of & registry.SAVES_OUT) != 0) & (kinds[ops] != registry.K_LEAF)
        saved_bytes = _distinct_bytes(values[r] for r in np.flatnonzero(saved).tolist() if values[r] is not None)
        tape_bytes = sum(getattr(self, a).nbytes for a in self._ROW_ARRAYS + ("argptr", "args", "argver"))
        return {"entries": n, "live_entries": int(np.count_nonzero(alive)),
                "leaf_entries": int(np.count_nonzero(alive & (self.op[:n] == OP_LEAF))),
                "saved_bytes": saved_bytes, "value_bytes": value_bytes, "tape_bytes": int(tape_bytes),
                "capacity": self.cap, "last_adjoint_bytes": self.last_adjoint_bytes,
                "peak_adjoint_bytes": self.peak_adjoint_bytes, "sweeps": self.sweeps,
                "compactions": self.compactions, "swept_entries": self.swept, "sweep_at": self.sweep_at}

    def dump(self, file=None, rows=None):
        """Print the Wengert list: row, opcode name, torch grad_fn, input rows, shape, dtype, flags."""
        lines = [f"{'row':>6}  {'op':<16} {'grad_fn':<30} {'inputs':<16} {'shape':<14} {'dtype':<8} flags"]
        for r in (range(self.n) if rows is None else rows):
            o = int(self.op[r])
            op = registry.OPS[o] if o < len(registry.OPS) else None
            name = op.name if op else f"#{o}"
            grad_fn = getattr(self.aux.get(r), "grad_fn_name", None) or (op.grad_fn if op else None) or "-"
            if name == "leaf":
                grad_fn = "AccumulateGrad"
            v = self.values[r]
            shape = "-" if v is None else str(tuple(v.shape))
            dtype = "-" if v is None else str(v.dtype)
            f = int(self.flags[r])
            words = [w for bit, w in ((F_REQ, "REQ"), (F_DEAD, "DEAD"), (F_STOP, "STOP")) if f & bit]
            if v is None and not f & F_DEAD:
                words.append("NOVALUE")
            attrs = [f"c={self.fattr[r, 0]:g}" if self.fattr[r, 0] else "",
                     f"c2={self.fattr[r, 1]:g}" if self.fattr[r, 1] else ""]
            args = ",".join(map(str, self.row_args(r))) or "-"
            lines.append(f"{r:>6}  {name:<16} {grad_fn:<30} {args:<16} {shape:<14} {dtype:<8} "
                         f"{'|'.join(words) or '-'} {' '.join(a for a in attrs if a)}".rstrip())
        text = "\n".join(lines)
        print(text, file=file if file is not None else sys.stdout)
        return text


_NANS = {}


def guard(out, *saved):
    """Note the versions of the tensors that out's row's backward depends on but does not differentiate (an
    index, a mask, a class target), as torch saves them: a backward after one of them was modified in place
    raises torch's error instead of using the old or the new values. Returns out."""
    tape = out._tape
    if out._requires_grad and tape is not None and not out._is_leaf:
        entries = tape.guards.setdefault(out._slot, [])
        for t in saved:
            cell = t._ensure_vc()
            entries.append((cell, int(cell[0]), t._data.dtype, t._data.shape))
    return out


def _nan(dtype):
    """A read-only one-element NaN array: the buffer of the placeholders of released values (zero strides),
    so a rule that read one by mistake would give NaN, which the tests against torch catch."""
    a = _NANS.get(dtype)
    if a is None:
        a = _NANS[dtype] = np.full(1, np.nan, dtype)
        a.flags.writeable = False
    return a


def _distinct_bytes(arrays):
    """Bytes of the memory the arrays use, each buffer counted once (a view counts as its base)."""
    seen = {}
    for a in arrays:
        base = a
        while isinstance(base.base, np.ndarray):
            base = base.base
        seen[id(base)] = base.nbytes
    return int(sum(seen.values()))


def _user_stacklevel():
    """The stacklevel of the first frame outside tapegrad, so a warning names the user's line."""
    f, level = sys._getframe(1), 1
    while f is not None and f.f_globals.get("__name__", "").startswith("tapegrad"):
        f, level = f.f_back, level + 1
    return level


class _Local(threading.local):
    tape = None
    tracing = None  # while tapegrad.compile traces in this thread: the list of what a replay cannot repeat


class GraphBreak(BaseException):
    """Raised where a traced function does what a replay cannot repeat, before it does it: the trace stops there,
    so that nothing it does (a .grad accumulated, a hook registered) happens twice when the call runs eagerly. A
    BaseException, so that the function's own `except Exception` does not swallow it."""


def untraceable(reason):
    """Something a traced function is about to do that a replay cannot repeat: the trace stops and is dropped
    (tapegrad.compile), and the call runs eagerly."""
    breaks = _local.tracing
    if breaks is not None:
        breaks.append(reason)
        raise GraphBreak(reason)


_local = _Local()


def current():
    """This thread's tape."""
    t = _local.tape
    if t is None:
        t = _local.tape = Tape()
    return t
