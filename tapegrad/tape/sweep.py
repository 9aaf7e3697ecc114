"""Rows no live tensor can reach (forward passes never backpropagated): found by a sweep, freed, and the live
rows compacted downwards; and the warning when the live part keeps growing (a scalar accumulating graphs)."""
import sys
import warnings
from itertools import repeat

import numpy as np

from .. import kernels, registry
from .. import tape as T  # (the package: its tunable thresholds are read at call time, as tests change them)
from .._warnings import user_stacklevel


class Sweep:
    """Tape's methods for this concern (tape/__init__.py composes them)."""

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
        alive = (self.flags[:n] & T.F_DEAD) == 0
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
            if (w.alive() if isinstance(w, T.Watch) else w() is not None):
                held[r] = True
        for r, w in self.released.items():  # the tape does not hold these: a live one is held elsewhere
            if w() is not None and alive[r]:
                held[r] = True
        return held

    def _reachable(self, held, owners):
        """Rows that a held row reaches backwards through live rows (a dead row keeps nothing)."""
        n = self.n
        args = self.args[: self.nargs]
        if owners.size:
            dead_entry = (self.flags[owners] & T.F_DEAD) != 0
            if dead_entry.any():
                args = args.copy()
                args[dead_entry] = owners[dead_entry]  # an entry of a dead row points at the row itself
        lost = kernels.load().unreachable(n, held, self.flags, self.argptr, args)
        return ~lost & ((self.flags[:n] & T.F_DEAD) == 0)

    def check_sweep(self):
        """Sweep if the tape has reached SWEEP_ROWS rows (twice its length after the last sweep, if more),
        or if the rows recorded since the last sweep hold about SWEEP_BYTES bytes of values (estimated
        from every 16th value); else say when to look again."""
        n, start = self.n, min(self._swept_n, self.n)
        if n < self._sweep_rows:
            sample = max((n - start + 15) // 16, 1)
            recorded = sum(map(getattr, self.values[start::16], repeat("nbytes"), repeat(0))) * (n - start) // sample
            if recorded < T.SWEEP_BYTES:
                per_row = max(recorded // max(n - start, 1), 1)
                gap = min(T.SWEEP_CHECK, max(T.SWEEP_GAP_MIN, (T.SWEEP_BYTES - recorded) // per_row))
                self.sweep_at = min(self._sweep_rows, n + gap)
                return
        self.sweep()

    def sweep(self):
        """Free the rows that no live tensor can reach (PyTorch frees an unreachable graph the same way),
        then compact the tape so that it stays as long as what is live."""
        if self.lock.depth:
            return  # a backward is using row numbers; the next record after it sweeps
        self.sweeps += 1
        self._walked = 0
        n = self.n
        owners = self._owner_rows()
        reach = self._reachable(self._held(), owners)
        dead = np.flatnonzero(~reach & ((self.flags[:n] & T.F_DEAD) == 0))
        self.swept += len(dead)
        # Nothing holds their values: they die with their rows, and their ids may be reused (compact)
        self.flags[dead] |= T.F_DEAD
        self.obj[dead] = 0
        self.vaddr[dead] = 0
        if not self.compact():  # (it drops the dead rows' values and table entries itself)
            self.free(dead)
        self._truncate(self._live_end())
        live = int(np.count_nonzero((self.flags[: self.n] & T.F_DEAD) == 0))
        self._swept_n = self.n
        self._sweep_rows = max(T.SWEEP_ROWS, 2 * self.n)  # a large live part: O(1) per row recorded
        self.sweep_at = min(self._sweep_rows, self.n + T.SWEEP_CHECK)
        self._check_growth(live)

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
        alive = (flags & T.F_DEAD) == 0
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
        gids = np.abs(self.ghost[gk, gi])  # (a constant's row's id is negated: Tape.slot)
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
        self.flags[:size][pad_rows] = T.F_DEAD
        self.op[:size][pad_rows] = T.OP_FREED
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
        for name in T._ROW_KEYED:
            table = getattr(self, name, None)
            if table:
                moved = {int(new_of_old[r]): v for r, v in table.items() if r < n and new_of_old[r] >= 0 and alive[r]}
                table.clear()
                table.update(moved)
        self.registered.clear()  # (its values are row numbers)
        self._chain_top = -1
        self._chains.clear()
        self._small_tail = None
        self.n, self.nargs = size, k
        moved = np.flatnonzero(new[:below] != rows[:below])  # (rows from `top` up kept their index)
        if moved.size:
            low = int(new[moved[0]])
            self.moved_from = min(self.moved_from, low) if self.moved_below else low
            self.moved_below = max(self.moved_below, int(new[below - 1]) + 1)
        self.compactions += 1
        return True

    def _check_growth(self, live):
        """Warn once when the live part grows from sweep to sweep and 0-dim tensors reach most of it.

        A training loop's `total_loss += loss` keeps rows that backward has freed (the losses): that
        is a leak as soon as it grows. Without freed rows it may be an evaluation loop's leak or one
        large scalar graph about to be backpropagated, so the warning waits for more growth.
        """
        if self.growth_pending is not None:  # no `+=` on a scalar since it was found: say it here
            self.warn_growth()
            return
        if live >= T.GROWTH_MIN and live * 4 >= self._last_live * 5:
            self._growth += 1
        else:
            self._growth = 0
        self._last_live = live
        if self._growth < T.GROWTH_SWEEPS or T._growth_warned:
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
        freed = len(np.unique(inputs[(self.flags[inputs] & T.F_DEAD) != 0]))
        if 4 * freed < reached and (self._growth <= T.GROWTH_SWEEPS or live < T.GROWTH_NO_FREED):
            return
        T._growth_warned = True
        # A sweep runs at whatever op fills the tape, usually in the forward: the warning waits for the
        # next in-place add on a 0-dim tensor (Tensor.__iadd__), so that it names the user's
        # `total_loss += loss` line, as the fix it suggests is written there.
        self.growth_pending = T.GROWTH_MESSAGE.format(sweeps=self._growth, live=live)

    def warn_growth(self):
        """Issue the pending growth warning, naming the user's line that is running now."""
        message, self.growth_pending = self.growth_pending, None
        warnings.warn(message, T.TapeGrowthWarning, stacklevel=user_stacklevel())

