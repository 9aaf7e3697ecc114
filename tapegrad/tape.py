"""The Wengert tape: one row per value the gradient may need (a leaf, a constant, or an op's output).

Rows are a struct of arrays, so the compiled replay reads them directly. A row's value is the ndarray
in `values[row]`; the tape holds it (that is what keeps it alive for the replay) and stores only
`id(value)`: the replay reads the data pointer and shape from NumPy's array struct, which costs
nothing at record time (`ndarray.ctypes.data` costs 1.1 us, more than a small ufunc; measured).
"""
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
NOT_A_SLOT = 1 << 62  # a tensor's slot before it has one: fails the `slot < n` test without a branch


class Tape:
    def __init__(self, capacity=1024):
        self.n = 0              # rows in use
        self.nargs = 0          # entries in use in the CSR argument arrays
        self.values = []        # the value of each row (None once freed)
        self.aux = {}           # row -> Python object an op needs (index map, context), or a leaf's weakref
        self.watch = {}         # row -> weakref of a non-leaf tensor with hooks or retain_grad
        self.cells = {}         # row -> the version cell vaddr[row] points at (kept alive here)
        self.lock = threading.RLock()
        self.sweep_at = 4096    # sweep unreachable rows when the tape reaches this length
        self.cap = 0
        self.acap = 0
        self._grow(capacity)
        self._grow_args(2 * capacity)

    # -- storage ---------------------------------------------------------------------------------
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
        if t._tape is self and s < self.n and self.values[s] is t._data:
            return s
        if t._tape is not None and t._tape is not self and not t._is_leaf:
            raise RuntimeError("tapegrad: this tensor's graph was recorded by another thread; each thread "
                               "records its own tape. Call backward in that thread, or pass t.detach().")
        if t._requires_grad and not t._is_leaf:
            # Its history was freed (backward without retain_graph): a backward through it must say so.
            s = self._append(OP_FREED, t._data, F_REQ | F_DEAD)
        elif t._requires_grad:
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

    def _append(self, op, value, flags):
        n = self.n
        if n + 1 >= self.cap:
            self._grow(2 * self.cap)
        if n >= self.sweep_at:
            self.sweep()
            n = self.n
        self.op[n] = op
        self.flags[n] = flags
        dt = value.dtype
        self.dtype[n] = (dt.itemsize >> 3) if dt.kind == "f" else 2  # float32 0, float64 1 (float16 never requires grad)
        self.obj[n] = id(value)
        self.values.append(value)
        self.n = n + 1
        return n

    def record(self, op, out, inputs, c=0.0, c2=0.0, iattr=0, aux=None):
        """Append one op row: opcode, input rows, output value. Returns the output's row."""
        k = self.nargs
        if k + len(inputs) >= self.acap:
            self._grow_args(2 * (k + len(inputs)))
        args, values = self.args, self.values
        for t in inputs:
            s = t._slot
            if not (t._tape is self and s < self.n and values[s] is t._data):
                s = self.slot(t)
            args[k] = s
            if t._vc is not None:
                self.argver[k] = t._vc[0]
            k += 1
        n = self._append(op, out, F_REQ)
        self.argptr[n + 1] = self.nargs = k
        if c:
            self.fattr[n, 0] = c
        if c2:
            self.fattr[n, 1] = c2
        if iattr:
            self.iattr[n] = iattr
        if aux is not None:
            self.aux[n] = aux
        return n

    def set_cell(self, row, cell):
        """Point a row at the version cell of its value's storage, so backward can check it."""
        self.vaddr[row] = cell.ctypes.data
        self.cells[row] = cell

    def row_args(self, row):
        return self.args[self.argptr[row]: self.argptr[row + 1]].tolist()

    # -- freeing ---------------------------------------------------------------------------------
    def free(self, rows):
        """Mark rows dead and release their values, then cut the dead tail of the tape."""
        values, aux = self.values, self.aux
        self.flags[rows] |= F_DEAD
        tail = self._live_end()
        for r in rows[rows < tail].tolist():  # rows stranded below a live row: rare (interleaved graphs)
            values[r] = None
            aux.pop(r, None)
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
        del self.values[n:]
        for table in (self.aux, self.watch, self.cells):
            for r in [r for r in table if r >= n]:
                del table[r]
        k = self.argptr[n]
        for a in (self.op, self.flags, self.dtype, self.obj, self.vaddr, self.outver, self.iattr):
            a[n: self.n] = 0
        self.fattr[n: self.n] = 0.0
        self.args[k: self.nargs] = 0
        self.argver[k: self.nargs] = 0
        self.argptr[n + 1: self.n + 1] = 0
        self.n, self.nargs = n, int(k)

    def sweep(self):
        """Free the rows that no live tensor can reach (PyTorch frees an unreachable graph the same way).

        A row is a root when something besides the tape holds its value: a tensor, or a view of it. The
        reference count says so without any per-tensor bookkeeping on the recording path.
        """
        from .kernels import runtime
        n = self.n
        held = np.fromiter((sys.getrefcount(v) > 3 for v in self.values), np.bool_, n)
        for r, w in self.watch.items():  # hooks and retain_grad keep rows whose tensors are alive
            if w() is not None:
                held[r] = True
        dead = runtime.unreachable(n, held, self.flags, self.argptr, self.args)
        self.free(np.flatnonzero(dead))
        self.sweep_at = max(4096, 2 * self.n)

    def stats(self):
        n = self.n
        live = int(np.count_nonzero((self.flags[:n] & F_DEAD) == 0))
        saved = sum(v.nbytes for v in self.values if v is not None)
        return {"entries": n, "live_entries": live, "saved_bytes": saved, "capacity": self.cap}


_local = threading.local()


def current():
    """This thread's tape."""
    t = getattr(_local, "tape", None)
    if t is None:
        t = _local.tape = Tape()
    return t
