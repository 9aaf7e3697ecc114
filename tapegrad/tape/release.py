"""The tape's memory: a value no backward rule reads is let go of (released) while a tensor has it, and taken
back if a later op's rule reads it; backward without retain_graph frees the rows it ran (free_graph), and the
dead tail of the tape is cut (_truncate, cut_dead_tail), as torch frees a graph with its last tensor."""
import sys
import threading
import weakref

import numpy as np

from .. import kernels
from ..registry import OPS, SAVES_OUT, reads_every_input, reads_input, tables
from .. import tape as T  # (the package: its tunable thresholds are read at call time, as tests change them)

_FREED, _READ = "freed", "read"  # (cut_dead_chain's outcomes)


class Release:
    """Tape's methods for this concern (tape/__init__.py composes them)."""

    def _release_inputs(self, row):
        saves = tables()[1]
        lo, hi = self.argptr[row], self.argptr[row + 1]
        reads = int(saves[self.op[row]])
        if reads_every_input(reads, int(hi - lo)):
            return  # none to release
        traces = self.__dict__.get("anomaly_traces") or ()  # (anomaly mode names a row by its value)
        for j, s in enumerate(self.args[lo:hi].tolist()):
            if reads_input(reads, j):
                continue  # this row's rule reads it
            v = self.values[s]
            o = int(self.op[s])
            if (o <= T.OP_FREED or v is None or self.flags[s] & (T.F_READ | T.F_DEAD) or s in self.released
                    or (OPS[o].holds_grad and s in self.aux) or v.nbytes < T.RELEASE_BYTES
                    or v.dtype.kind != "f" or saves[o] & SAVES_OUT or s in traces):
                continue
            # rows recorded after s (this one included): does one of their rules read s?
            k0 = int(self.argptr[s + 1])
            entries = np.flatnonzero(self.args[k0: self.nargs] == s) + k0
            if entries.size:
                owners = np.searchsorted(self.argptr[: self.n + 1], entries, side="right") - 1
                pos = entries - self.argptr[owners]
                if reads_input(saves[self.op[owners]], pos).any():
                    self.flags[s] |= T.F_READ
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
        self.flags[row] |= T.F_READ

    def free_graph(self, need, first=-1):
        """Free the op rows a backward ran (`need`: its plan's rows), as free does, in one compiled pass.

        The tail it cuts also takes the constants first registered while the graph was recorded
        (per-iteration data: a constant whose row is cut registers again when used). Leaves keep their
        rows, so parameters are registered once. `first`, the lowest row it frees when the caller knows it
        (replay's run_pass), lets freeing and the cut be one compiled call when no value is released."""
        # (all n rows: a hook under enable_grad may have recorded some while the backward ran)
        self._small_tail = None
        if self.shared:
            for r in [r for r in self.shared if r < len(need) and need[r]]:
                self.shared.pop(r).free_saved()
        if first >= 0 and not self.released:
            stranded, tail, k = kernels.load().free_cut(
                need, self.n, self.registered.get(first, first), self.nargs, self.ghost, self.obj, self.op,
                self.flags, self.dtype, self.vaddr, self.outver, self.iattr, self.fattr, self.args, self.argver,
                self.argptr)
            if len(stranded):
                self._drop_values(stranded)
            if 0 <= tail < self.n:
                self._cut_rows(tail, int(k))
            return
        rows, end = kernels.load().free_graph(need, self.n, self.op, self.flags)
        if len(rows):
            first = int(rows[0])
            self._release(rows, max(end, self.registered.get(first, first)))

    def share_context(self, row, ctx):
        """Row's context is also another row's: in torch both are one node (an LSTM layer's output and last cell
        state, MkldnnRnnLayerBackward0). A backward that frees either row frees the context's saved arrays
        (ctx.free_saved()), so they do not live on with the other row's tensor (a language model's hidden state,
        kept from step to step: 9 MB a step of benchmarks.layers' T2 until a sweep), and a backward through the
        other raises torch's error. A row that dies unused (swept) leaves the context to the other."""
        self.shared[row] = ctx

    def free(self, rows):
        """Mark rows dead and release their values, then cut the dead tail of the tape (a sweep's)."""
        self.flags[rows] |= T.F_DEAD
        self._release(rows, self._live_end())

    def _release(self, rows, tail):
        """Drop the values of dead rows below `tail`, then cut the tape at `tail`."""
        self._small_tail = None
        stranded = rows[rows < tail]  # rows below a live row: interleaved graphs, or the sweep's
        self.vaddr[stranded] = 0      # their version cells are released below
        self._drop_values(stranded)
        self._truncate(tail)

    def _drop_values(self, stranded):
        """The values and row-keyed entries of freed rows that stay on the tape (below its cut)."""
        values, aux = self.values, self.aux
        obj, released = self.obj, self.released
        node_hooks = self.__dict__.get("node_hooks") or {}  # (grad_fn.register_hook's, made on first use)
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
            self.packed.pop(r, None)
            self.shared.pop(r, None)
            self.watch.pop(r, None)
            self.cells.pop(r, None)
            node_hooks.pop(r, None)

    def _live_end(self):
        n = self.n
        live = np.flatnonzero((self.flags[:n] & T.F_DEAD) == 0)
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
        self._cut_rows(n, k)

    def _cut_rows(self, n, k):
        """_truncate's Python half, once the compiled cut has cleared rows n.. and argument entries k..."""
        self._small_tail = None  # (rows it names may be gone)
        del self.values[n:]
        if self._chain_top >= n:  # (row numbers that no longer name their rows: see chain_starts)
            self._chain_top = -1
        if self._chains:
            self._chains[:] = [c for c in self._chains if c[1] < n]
        for name in T._ROW_KEYED:
            table = getattr(self, name, None)
            if table:
                for r in [r for r in table if r >= n]:
                    del table[r]
        self.n, self.nargs = n, k
        self.moved_below = 0 if n <= self.moved_from else min(self.moved_below, n)

    def chain_starts(self, top):
        """record() saw an op that does not take the tape's last row (`top`): the chain of ops that ended there
        may be a graph's output that lives on (`out = model(x)`, kept until the next pass reassigns it). Chains
        whose ops' values come to RELEASE_BYTES or more are watched (the newest CHAINS_WATCHED). At each chain start
        the one before the newest is looked at, and every so often (a quarter of their number of chain starts, so
        O(1) a start) all of them: those whose top has died are freed with their rows (cut_dead_chain), newest
        first, and a cut looks on at the older ones. Once `out` is reassigned, its pass's graph goes within a pass, as
        torch's goes when its last tensor does, however many chains the pass made (attention's q, k and v each
        start one; their rows' contexts hold values of the chains before, which a cut then lets go). A chain that
        a live row recorded later reads waits until a cut has freed rows. A smaller chain is not watched (its cut
        would be left to the sweep): a forward of small ops starts one at every `+ c * x ** 2`, and looking at
        each cost a fifth of such a step."""
        chains = self._chains
        if self._chain_bytes >= T.RELEASE_BYTES:
            chains.append([self._chain_top, top, False])  # (the rows low+1..top; whether a later row reads them)
            if len(chains) > T.CHAINS_WATCHED:
                del chains[0]  # (left to the sweep)
        self._chain_top, self._chain_bytes = top, 0
        if len(chains) < 2 or self.lock.depth or self.owner is not threading.current_thread():
            return
        self._chain_clock += 1
        every = self._chain_clock >= max(2, len(chains) >> 2)
        if every:
            self._chain_clock = 0
        cut, done, last = False, [], len(chains) - 2
        for i in range(last, -1, -1):  # (the newest may be a pass's output still in use)
            if i < last and not (every or cut):
                break  # (between the looks at them all, the chain before the newest, and what its cut frees)
            entry = chains[i]
            while True:
                low, t, read = entry
                if (read and not cut) or self._row_held(t):
                    break
                outcome, stop = self.cut_dead_chain(t, low)
                if outcome is _READ:
                    entry[2] = True
                    break
                cut = cut or outcome is _FREED
                if outcome is _FREED and stop > low:  # (the walk stopped at a held row: a context of the rows
                    entry[1], entry[2] = stop, False  # just freed may have held it; the rest is looked at again)
                    continue
                done.append(i)
                break
        for i in done:  # (descending)
            del chains[i]

    def _row_held(self, r):
        """Whether anything beyond the tape holds row r: a tensor, a view or a saved context refers to its
        value, its released value is alive, or its hooks' tensor is."""
        w = self.released.get(r)
        if w is not None:
            if w() is not None:
                return True
        elif T._refcount(self.values[r]) > 2:  # (the list, the argument)
            return True
        w = self.watch.get(r)
        return w is not None and (w.alive() if isinstance(w, T.Watch) else w() is not None)

    def _dead_rows(self, top, low):
        """The rows from `top` down to `low` (excluded) that nothing holds, stopping at the first held op row
        (held leaf and constant rows have no inputs: they are stepped over and stay), their bytes, and the
        row the walk stopped at (`low` when it went all the way)."""
        flags, op, values = self.flags, self.op, self.values
        dead, nbytes = [], 0
        for r in range(top, low, -1):
            if flags[r] & T.F_DEAD:
                continue
            if self._row_held(r):
                if op[r] == T.OP_LEAF or op[r] == T.OP_CONST:
                    continue
                return dead, nbytes, r
            dead.append(r)
            nbytes += getattr(values[r], "nbytes", 0)
        return dead, nbytes, low

    def cut_dead_chain(self, top, low):
        """Free the rows from `top` down (to `low`, excluded) that nothing holds, as cut_dead_tail does at the
        tape's end, when no live row above `top` takes one of them as an input: then nothing can reach them. The
        rows stay, marked dead, until a sweep compacts the tape; their values go now. O(rows walked). Returns
        (_FREED, _READ (a live row recorded since reads one of them: a graph, not dead rows) or None (none dead,
        or too few bytes: left to the sweep); the row the walk stopped at, a held one, or `low`)."""
        dead, nbytes, stop = self._dead_rows(top, low)
        if not dead:
            return None, stop
        rows = np.array(dead[::-1], np.int64)
        n, k = self.n, int(self.argptr[top + 1])
        since = self.args[k: self.nargs]  # (the inputs of the live rows recorded since)
        since = since[np.repeat((self.flags[top + 1: n] & T.F_DEAD) == 0, np.diff(self.argptr[top + 1: n + 1]))]
        if since.size and (rows[np.searchsorted(rows, since) % len(rows)] == since).any():  # (rows is sorted)
            return _READ, stop
        if nbytes < T.RELEASE_BYTES:
            self._left_to_sweep(top - stop)  # (dead, and small: the sweep takes them with others)
            return None, stop
        self.swept += len(dead)
        self.free(rows)
        return _FREED, stop

    def cut_dead_tail(self):
        """Free the rows at the tape's end that no tensor holds, from the last row down to the first op row
        held (record() calls it when the last row's tensor has died, as torch frees a graph with its last
        tensor), and cut them. No row above them is left to reach them, so nothing can; leaf and constant
        rows (registered while the pass ran) have no inputs, so a held one is stepped over and stays. A row
        counts as held when anything beyond the tape refers to its value (a tensor, a view, a saved context),
        its released value is alive, or its hooks' tensor is. A tail of less than RELEASE_BYTES of values and
        CUT_ROWS rows is left to the sweep. O(rows walked)."""
        if self.owner is not threading.current_thread():
            return
        n = self.n
        known = self._small_tail
        if known is not None and known[0] < n:
            # The walk a call before this one left to the sweep (too few bytes to cut): only the rows
            # recorded since are walked, so that small ops on a kept tensor (a loss evaluated again and
            # again without backward) cost O(1) each instead of a walk over every dead row before them.
            top, chunks, nbytes, stop = known
            dead, more, stop_new = self._dead_rows(n - 1, top)
            walked = 0  # (rows no walk saw before)
            if stop_new == top:  # all dead down to the known tail: it continues below them
                below, b, stop = self._dead_rows(stop, -1) if stop >= 0 else ([], 0, stop)
                chunks.extend(c for c in (dead, below) if c)
                nbytes += more + b
            else:
                chunks, nbytes, stop = [dead], more, stop_new
        else:
            dead, nbytes, stop = self._dead_rows(n - 1, -1)
            chunks, walked = [dead], n - 1 - stop
        # A small dead tail waits for the sweep: a cut costs about 15 us, which a step of small ops (a compiled
        # second derivative of 1,000 elements: 35 us) would pay at each call; memory is what the cut is for. A
        # long one is cut (CUT_ROWS: the cut's cost spread over them): a seq2seq decoder's last hidden state,
        # which no loss reads, kept each sequence's freed rows on the tape until a sweep (1 ms) every few.
        if any(chunks) and (nbytes >= T.RELEASE_BYTES or n - 1 - stop >= T.CUT_ROWS):
            self.swept += sum(map(len, chunks))
            self.free(np.sort(np.concatenate([np.asarray(c, np.int64) for c in chunks])))
            self._swept_n = min(self._swept_n, self.n)
            if self.n and T._refcount(self.values[self.n - 1]) <= 2:
                self.cut_dead_tail()  # (what held the row the walk stopped at may have gone with the rows freed)
        else:
            self._small_tail = (n - 1, chunks, nbytes, stop)
            if any(chunks):  # (a walk that found no dead row leaves nothing to the sweep)
                self._left_to_sweep(walked)

    def _left_to_sweep(self, walked):
        """A walk found only a few bytes of dead rows, and left them to the sweep. A training loop whose tape
        stays short never reaches the sweep's length, and its every step would walk again the dead rows that
        passes without backward left below it (585 rows: 150 us a step): once walks that may have seen their
        rows before (`walked` of them) have covered the tape's length and SWEEP_WALKED rows more, the next
        record sweeps (the sweep is O(rows) too, after a fixed cost of about as many rows walked)."""
        self._walked += walked
        if self._walked > self.n + T.SWEEP_WALKED:
            self._sweep_rows = self.sweep_at = 0


_NANS = {}


def _nan(dtype):
    """A read-only one-element NaN array: the buffer of the placeholders of released values (zero strides),
    so a rule that read one by mistake would give NaN, which the tests against torch catch."""
    a = _NANS.get(dtype)
    if a is None:
        a = _NANS[dtype] = np.full(1, np.nan, dtype)
        a.flags.writeable = False
    return a
