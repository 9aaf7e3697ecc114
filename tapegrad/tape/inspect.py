"""What the tape holds, for people: sizes (`stats`, torch.autograd.tape_stats) and a listing of its rows (`dump`)."""
import sys

import numpy as np

from .. import registry
from .. import tape as T  # (the package: its tunable thresholds are read at call time, as tests change them)


class Inspection:
    """Tape's methods for this concern (tape/__init__.py composes them)."""

    def stats(self):
        """Sizes: entries (rows), live entries, the bytes of the values the tape holds and of those a
        backward would read (saved), the tape's own arrays, and the last and peak adjoint buffers."""
        n = self.n
        flags = self.flags[:n]
        alive = (flags & T.F_DEAD) == 0
        values = self.values
        released = self.released  # (a released row's value is a placeholder: the tape holds no memory for it)
        value_bytes = _distinct_bytes(v for r, v in enumerate(values) if v is not None and r not in released)
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
                "leaf_entries": int(np.count_nonzero(alive & (self.op[:n] == T.OP_LEAF))),
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
            words = [w for bit, w in ((T.F_REQ, "REQ"), (T.F_DEAD, "DEAD"), (T.F_STOP, "STOP")) if f & bit]
            if v is None and not f & T.F_DEAD:
                words.append("NOVALUE")
            attrs = [f"c={self.fattr[r, 0]:g}" if self.fattr[r, 0] else "",
                     f"c2={self.fattr[r, 1]:g}" if self.fattr[r, 1] else ""]
            args = ",".join(map(str, self.row_args(r))) or "-"
            lines.append(f"{r:>6}  {name:<16} {grad_fn:<30} {args:<16} {shape:<14} {dtype:<8} "
                         f"{'|'.join(words) or '-'} {' '.join(a for a in attrs if a)}".rstrip())
        text = "\n".join(lines)
        print(text, file=file if file is not None else sys.stdout)
        return text


def _distinct_bytes(arrays):
    """Bytes of the memory the arrays use, each buffer counted once (a view counts as its base)."""
    seen = {}
    for a in arrays:
        base = a
        while isinstance(base.base, np.ndarray):
            base = base.base
        seen[id(base)] = base.nbytes
    return int(sum(seen.values()))
