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
import itertools
import sys
import threading
import weakref

import numpy as np


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
SWEEP_GAP_MIN = 16      # or as often as this when the estimate nears SWEEP_BYTES,
SWEEP_WALKED = 1024     # or when walks for dead rows went over this many rows more than the tape holds
GROWTH_MIN = 1024       # live rows below this never count as growth (a sweep that finds the live part 25%
GROWTH_SWEEPS = 2       # larger than the last one does): so many such sweeps in a row before the warning,
GROWTH_NO_FREED = 16384  # and one more and this many live rows when backward has freed none of it
GHOSTS = 4              # cut rows remembered per index (see _truncate)
RELEASE_BYTES = 64 << 10  # an op's value of at least this size that no rule reads is not held by the tape
CUT_ROWS = 64           # a dead tail is cut when it holds RELEASE_BYTES of values, or spans this many rows
CHAINS_WATCHED = 256    # chains of ops of at least RELEASE_BYTES watched for their top's death (chain_starts)
# dicts keyed by row, remapped by compaction
_ROW_KEYED = ("aux", "watch", "cells", "registered", "released", "anomaly_traces", "guards", "packed", "shared",
              "node_hooks")  # (node_hooks, anomaly_traces: made on first use; autograd.graph's, anomaly's)
_F32, _F64 = np.dtype(np.float32).num, np.dtype(np.float64).num  # the dtypes the replay knows: codes 0 and 1

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward.")

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


# Tape's methods by concern, beyond storage and recording (here): each module reads the constants above from
# this package at call time
from .release import Release  # noqa: E402
from .sweep import Sweep  # noqa: E402
from .inspect import Inspection  # noqa: E402


class Tape(Release, Sweep, Inspection):
    growth_pending = None  # the growth warning, once found, until the `+=` that keeps the graphs alive

    def __init__(self, capacity=1024):
        self.n = 0              # rows in use
        self.nargs = 0          # entries in use in the CSR argument arrays
        self.values = []        # the value of each row (None once freed)
        self.aux = {}           # row -> Python object an op needs (index map, context), or a leaf's weakref
        self.shared = {}        # row -> a context it shares with another row (tape.share_context)
        self.watch = {}         # row -> Watch of a non-leaf tensor with hooks or retain_grad
        self.cells = {}         # row -> the version cell vaddr[row] points at (kept alive here)
        self.registered = {}    # op row -> the first of the leaf/constant rows registered by its record
        self.released = {}      # row -> weakref to the value the tape let go of (values[row] holds its shape)
        self.shared_leaves = {}  # id -> weakref of a leaf another thread's tape registered too (leaf_rows)
        self.guards = {}        # row -> [(version cell, version, dtype, shape)] of the index, mask or target
                                # tensors its backward depends on (guard): backward checks them as saved
        self.packed = {}        # row -> its saved values as saved_tensors_hooks packed them (saved_tensors.py)
        self.owner = threading.current_thread()
        self.lock = _Lock(self.owner)
        self.sweep_at = SWEEP_CHECK  # record() calls check_sweep() when the tape reaches this length
        self._sweep_rows = SWEEP_ROWS  # the length at which a sweep runs whatever the values' sizes
        self._swept_n = 0              # the length after the last sweep
        self.sweeps = self.compactions = self.swept = 0
        self.moved_from = self.moved_below = 0  # rows from..below may hold values a compaction moved (find)
        self.last_adjoint_bytes = self.peak_adjoint_bytes = 0
        self._last_live = 0
        self._growth = 0
        self._chain_top = -1     # the last row of the last chain of ops (see chain_starts)
        self._chain_bytes = 0    # the op rows' bytes since it
        self._chains = []        # the chains watched: [low, top, read by a later row]
        self._chain_clock = 0    # chain starts since they were last looked at
        self._walked = 0                         # rows walked for dead rows in vain since the last sweep
        self._small_tail = None                  # see cut_dead_tail
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
            if s != NOT_A_SLOT and self.moved_below:
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
            if not isinstance(t._data, np.ndarray):  # (never a NumPy scalar: the compiled replay reads arrays by id)
                t._data = np.asarray(t._data)
            if sys.getrefcount(t._data) > 2 and self._collides(t._data, t._requires_grad):
                self._pad_past(t._data, t._requires_grad)  # t shares an array (t = y.detach()) with a cut row here
            if t._requires_grad:
                if t._tape is not None and t._tape is not self:  # t's link moves here: each tape remembers
                    ref = weakref.ref(t)                         # that it may hold rows t no longer names
                    self.shared_leaves[id(t)] = t._tape.shared_leaves[id(t)] = ref
                s = self._append(OP_LEAF, t._data, F_REQ)
                self.aux[s] = weakref.ref(t)
            else:
                s = self._append(OP_CONST, t._data, 0)
        self.argptr[s + 1] = self.nargs
        if t._vc is None and t._base is not None:
            t._ensure_vc()  # (a view's cell is made when a row first reads it: Tensor._ensure_vc)
        if t._vc is not None:
            self.set_cell(s, t._vc, current=True)
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

    def leaf_row(self, t):
        """The newest live leaf row of leaf tensor t holding its current value, or NOT_A_SLOT."""
        values, aux = self.values, self.aux
        for r in np.flatnonzero(self.obj[: self.n] == id(t._data))[::-1].tolist():
            ref = aux.get(r) if self.op[r] == OP_LEAF and values[r] is t._data else None
            if ref is not None and ref() is t and not self.flags[r] & F_DEAD:
                return r
        return NOT_A_SLOT

    def _collides(self, data, leaf):
        """Whether a row cut at the next index held `data`, so that the tensor that row was (y, whose graph
        backward freed) still names that index and would take a new row holding its array (t = y.detach())
        for its own. A constant's cut row (its id negated) collides only with a leaf's: a constant named
        by it reads the same array from a new constant's row (a script's data, registered again at the
        same index every step, is not padded past), but would take a leaf's row for its own."""
        ghosts = self.ghost[:, self.n].tolist()  # (4 ids: a list test costs a fifth of NumPy's compare-and-any)
        i = id(data)
        return i in ghosts or (leaf and -i in ghosts)

    def _pad_past(self, data, leaf):
        """Pad while the next index is one `data` collides at (_collides)."""
        while self._collides(data, leaf):
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
        if not self.moved_below:
            return -1  # no row now on the tape was moved: a row number that fails `values[row] is value` is freed
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
        top, chained = n - 1, False
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
            if s == top:
                chained = True
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
        nbytes = out.nbytes
        if nbytes >= RELEASE_BYTES:
            self._release_inputs(n)
        if not chained and top >= 0:  # a new chain starts above the tape's last row: see cut_dead_chain
            self.chain_starts(top)
        self._chain_bytes += nbytes
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


    def _ids(self, lo, hi):
        """id() of each row's value in lo:hi, the released arrays' own (not their placeholders') where they live."""
        ids = self.obj[lo:hi].copy()
        for r, w in self.released.items():
            v = w() if lo <= r < hi else None
            if v is not None:
                ids[r - lo] = id(v)
        return ids

    # -- what other modules change in a row: only through these ------------------------------------
    def set_cell(self, row, cell, current=False):
        """Point a row at the version cell of its value's storage, so backward can check it (`current`: and
        take the version it has now as the row's, for a value an in-place op or a view just gave it)."""
        known = getattr(cell, "_address", None)  # (a VersionCell's, read once: see new_version_cell)
        self.vaddr[row] = known[1] if known is not None and known[0] == id(cell) else cell.ctypes.data
        self.cells[row] = cell
        if current:
            self.outver[row] = cell[0]

    def new_cell(self, row, view_row):
        """A new version cell (version 0) for a row's value and a view of it recorded at view_row."""
        cell = new_version_cell()
        self.vaddr[row] = self.vaddr[view_row] = cell._address[1]
        self.cells[row] = self.cells[view_row] = cell
        self.outver[view_row] = 0
        return cell

    def drop_cell(self, row):
        self.vaddr[row] = 0
        self.cells.pop(row, None)

    def set_value(self, row, value):
        """The row's value is now `value` (an in-place op's storage, or a copy of an input it overwrites)."""
        self.values[row], self.obj[row] = value, id(value)

    def mark(self, rows, flag):
        self.flags[rows] |= flag

    def unmark(self, rows, flag):
        self.flags[rows] &= np.uint8(~flag & 0xFF)

    def row_args(self, row):
        return self.args[self.argptr[row]: self.argptr[row + 1]].tolist()

    def note_adjoint_bytes(self, nbytes):
        """Called by backward with the size of the adjoint buffers it allocated."""
        self.last_adjoint_bytes = nbytes
        if nbytes > self.peak_adjoint_bytes:
            self.peak_adjoint_bytes = nbytes


class VersionCell(np.ndarray):
    """A storage's version counter: one int64 that the compiled backward reads by its address (`vaddr`)."""


class _CellBlock:
    """Zeroed version cells cut from one array, whose address is read once: a cell of its own took 1.3 us (the
    allocation and `ctypes.data`), one cut from a block 0.2 us, and a view makes one. `next(taken)` is atomic
    under the GIL, so two threads never take one cell."""
    SIZE = 512

    def __init__(self):
        self.cells = np.zeros(self.SIZE, np.int64).view(VersionCell)
        self.address = self.cells.ctypes.data
        self.taken = itertools.count()


_cell_block = _CellBlock()


def new_version_cell():
    """A zeroed version cell that remembers its address: the tape stores it at every registration of a tensor
    that has one (a parameter updated in place, a view), and `ndarray.ctypes.data` costs about 1 us a read. The
    address is kept with the cell's id, so a copy of the cell (which carries its attributes) reads its own."""
    global _cell_block
    block = _cell_block
    i = next(block.taken)
    if i >= _CellBlock.SIZE:
        block = _cell_block = _CellBlock()
        i = next(block.taken)
    cell = block.cells[i:i + 1]
    cell._address = (id(cell), block.address + 8 * i)
    return cell


def guard(out, *saved, remap=None):
    """Note the versions of the tensors that out's row's backward depends on but does not differentiate (an
    index, a mask, a class target), as torch saves them: a backward after one of them was modified in place
    raises torch's error instead of using the old or the new values. Returns out.

    While tapegrad.compile traces, out's row depends on those tensors' values: `remap(*their arrays)` rewrites
    in place what the row's context derived from them (an index map, a mask), so that a replay recomputes it
    from the tensors it binds then; without one, the row cannot be replayed."""
    if _local.tracing is not None and out._tape is _local.tape:
        _local.tape.note_values_read(out, saved, remap)
    tape = out._tape
    if out._requires_grad and tape is not None and not out._is_leaf:
        entries = tape.guards.setdefault(out._slot, [])
        for t in saved:
            cell = t._ensure_vc()
            entries.append((cell, int(cell[0]), t._data.dtype, t._data.shape))
    return out


def traced_value(t, fn, *inputs):
    """t: a result with no gradient that an op computed from its inputs' values (argmax, sort's indices); while
    tapegrad.compile traces, recorded as a row that a replay recomputes as fn(*their arrays). Returns t."""
    if _local.tracing is not None:
        _local.tape.record_value(fn, t, inputs)
    return t


def follow_indices(values, indices, flat, flat_of):
    """values, a gather of its input at the index map `flat`, took the positions that `indices` (a traced_value)
    names: while tapegrad.compile traces, a replay rewrites flat = flat_of(indices' array) in place. Returns values."""
    if _local.tracing is not None and values._tape is _local.tape:
        def remap(idx):
            flat[...] = flat_of(idx)
        remap.writes = (flat,)
        _local.tape.note_values_read(values, [indices], remap)
    return values


class _Local(threading.local):
    tape = None
    pack_hooks = ()  # the saved_tensors_hooks entered in this thread, innermost last (saved_tensors.py)
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


def made_in_trace(t):
    """t was made by a factory from Python values (zeros, tensor, arange, ...): while tapegrad.compile traces,
    a constant of the trace, which a replay may keep (its value depends on nothing a later call changes)."""
    if _local.tracing is not None:
        _local.tape.note_made(t)
    return t


def current():
    """This thread's tape."""
    t = _local.tape
    if t is None:
        t = _local.tape = Tape()
    return t
