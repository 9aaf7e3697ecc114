"""The compiled half of backward: reachability, adjoint layout, and the reverse replay of the tape.

Everything here takes only ndarrays and scalars. Row kinds come from the registry's `kinds` table;
rows of kind PYTHON (and rows flagged STOP) make `replay` return, so Python can run them and resume.
"""
import numpy as np
from numba import njit

from .memory import JIT, dim, load_i64, ndim, size, view
from . import elementwise

# Kinds of row, as declared in the registry.
K_LEAF, K_UNARY, K_BINARY, K_SUM, K_EXPAND, K_RESHAPE, K_GATHER, K_CAST, K_PYTHON = range(9)
F_REQ, F_DEAD, F_STOP = 1, 2, 4
OP_LEAF = 0  # the tape's opcode of a leaf row (a tensor that requires grad and has no history)
SAVES_OUT = 128  # bit of the saves table: the op's backward reads its own output


@njit(**JIT)
def unreachable(n, held, flags, argptr, args):
    """Rows that no held row reaches backwards, and that are not already dead."""
    live = held.copy()
    for i in range(n - 1, -1, -1):
        if live[i]:
            for k in range(argptr[i], argptr[i + 1]):
                live[args[k]] = True
    out = np.zeros(n, np.bool_)
    for i in range(n):
        out[i] = not live[i] and (flags[i] & F_DEAD) == 0
    return out


@njit(**JIT)
def plan(n, roots, targets, flags, op, kinds, saves, argptr, args, argver, obj, vaddr, outver, dtypes):
    """Mark the rows this backward needs and lay out their adjoints.

    need: rows reached from the roots that require grad (and, when targets are given, lie on a path to
    one). own: leaves whose one adjoint comes from a Python row (a weight's matmul gradient): they get no
    slot in the buffers, since Python hands that array to the leaf as it is (only without targets).
    Returns (need, own, offsets, n32, n64, error_row, error_arg): error_row >= 0 names a needed row that
    is dead (freed), or whose saved input (error_arg >= 0) or output (error_arg == -1) changed in place.
    """
    need = np.zeros(n, np.bool_)
    uses = np.zeros(n, np.int32)
    own = np.zeros(n, np.bool_)
    for r in roots:
        need[r] = (flags[r] & F_REQ) != 0
        uses[r] = 2  # seeded: never owned
    for i in range(n - 1, -1, -1):
        if need[i]:
            for k in range(argptr[i], argptr[i + 1]):
                a = args[k]
                if flags[a] & F_REQ:
                    need[a] = True
                    uses[a] += 1
                    own[a] = kinds[op[i]] == K_PYTHON and op[a] == OP_LEAF and targets.size == 0
    if targets.size:
        leads = np.zeros(n, np.bool_)
        for t in targets:
            leads[t] = True
        for i in range(n):
            if not leads[i]:
                for k in range(argptr[i], argptr[i + 1]):
                    if leads[args[k]]:
                        leads[i] = True
                        break
        for i in range(n):
            need[i] = need[i] and leads[i]
    offsets = np.zeros(n, np.int64)
    n32 = 0
    n64 = 0
    for i in range(n):
        if not need[i]:
            continue
        if flags[i] & F_DEAD:
            return need, own, offsets, n32, n64, i, -2
        o = op[i]
        s = saves[o]
        for j in range(argptr[i + 1] - argptr[i]):
            k = argptr[i] + j
            a = args[k]
            if (s >> j) & 1 and vaddr[a] != 0 and load_i64(vaddr[a]) != argver[k]:
                return need, own, offsets, n32, n64, i, j
        if s & SAVES_OUT and vaddr[i] != 0 and load_i64(vaddr[i]) != outver[i]:
            return need, own, offsets, n32, n64, i, -1
        own[i] = own[i] and uses[i] == 1
        if own[i]:
            continue
        m = size(obj[i])
        if dtypes[i] == 0:
            offsets[i] = n32
            n32 += m
        else:
            offsets[i] = n64
            n64 += m
    return need, own, offsets, n32, n64, -1, 0


@njit(**JIT)
def _walk(shape, strides, n):
    """The flat offsets (sum of index * stride) of the n elements of `shape`, in C order: an odometer."""
    out = np.empty(n, np.int64)
    idx = np.zeros(shape.size, np.int64)
    off = 0
    for k in range(n):
        out[k] = off
        for d in range(shape.size - 1, -1, -1):
            idx[d] += 1
            off += strides[d]
            if idx[d] < shape[d]:
                break
            off -= strides[d] * shape[d]
            idx[d] = 0
    return out


@njit(**JIT)
def broadcast_offsets(it, src):
    """For each element of array `it` (C order), the flat index of the element of `src` that
    broadcasting (or a keepdim reduction of `it` onto `src`) pairs it with."""
    nd = ndim(it)
    sd = ndim(src)
    shape = np.empty(nd, np.int64)
    strides = np.zeros(nd, np.int64)
    st = 1
    for d in range(nd - 1, -1, -1):
        shape[d] = dim(it, d)
        e = d - (nd - sd)
        if e >= 0:
            m = dim(src, e)
            if m != 1:
                strides[d] = st
            st *= m
    return _walk(shape, strides, size(it))


@njit(**JIT)
def reduce_offsets(it, mask):
    """For each element of `it`, its flat index in the keepdim reduction of `it` over the axes in mask."""
    nd = ndim(it)
    shape = np.empty(nd, np.int64)
    strides = np.zeros(nd, np.int64)
    st = 1
    for d in range(nd - 1, -1, -1):
        shape[d] = dim(it, d)
        if not (mask >> d) & 1:
            strides[d] = st
            st *= shape[d]
    return _walk(shape, strides, size(it))


@njit(**JIT)
def _same_shape(a, b):
    if ndim(a) != ndim(b):
        return False
    for d in range(ndim(a)):
        if dim(a, d) != dim(b, d):
            return False
    return True


@njit(**JIT)
def _step(i, kind, o, argptr, args, obj, fattr, iattr, need, offsets, adj, dt):
    """One row's adjoint, for rows whose inputs share the output's dtype."""
    y = obj[i]
    n = size(y)
    g = adj[offsets[i]: offsets[i] + n]
    a0 = args[argptr[i]]
    x = obj[a0]
    m = size(x)
    gx = adj[offsets[a0]: offsets[a0] + m]
    if kind == K_UNARY:
        if need[a0]:
                elementwise.unary(o, view(x, m, dt), view(y, n, dt), g, gx, fattr[i, 0], fattr[i, 1])
    elif kind == K_BINARY:
        a1 = args[argptr[i] + 1]
        z = obj[a1]
        p = size(z)
        gz = adj[offsets[a1]: offsets[a1] + p]
        same = _same_shape(x, y) and _same_shape(z, y)
        ix = np.empty(0, np.int64) if same else broadcast_offsets(y, x)
        iz = np.empty(0, np.int64) if same else broadcast_offsets(y, z)
        elementwise.binary(o, view(x, m, dt), view(z, p, dt), view(y, n, dt), g, gx, gz,
                           ix, iz, same, need[a0], need[a1])
    elif not need[a0]:
        return
    elif kind == K_SUM:
        c = fattr[i, 0]
        if n == 1:  # a full reduction: every input element gets the one output adjoint
            v = g[0] * c
            for k in range(m):
                gx[k] += v
        else:
            ix = reduce_offsets(x, iattr[i])
            for k in range(m):
                gx[k] += g[ix[k]] * c
    elif kind == K_EXPAND:
        iy = broadcast_offsets(y, x)
        for k in range(n):
            gx[iy[k]] += g[k]
    elif kind == K_RESHAPE:
        for k in range(n):
            gx[k] += g[k]
    elif kind == K_GATHER:
        idx = view(iattr[i], n, np.int64)
        for k in range(n):
            if idx[k] >= 0:
                gx[idx[k]] += g[k]


@njit(**JIT)
def _add_into(src, dst):
    for k in range(src.size):
        dst[k] += src[k]


@njit(**JIT)
def replay(start, resume, need, flags, op, kinds, argptr, args, obj, dtypes, fattr, iattr, offsets, adj32, adj64):
    """Run the needed rows from `start` down to 0; return the first row Python must run, or -1.
    With resume, the row at `start` runs here even if flagged STOP (Python has run its hooks)."""
    for i in range(start, -1, -1):
        if not need[i]:
            continue
        o = op[i]
        kind = kinds[o]
        if kind == K_LEAF:
            continue
        if kind == K_PYTHON or (flags[i] & F_STOP and not (resume and i == start)):
            return i
        if kind == K_CAST:
            a = args[argptr[i]]
            if need[a]:
                n = size(obj[i])
                if dtypes[i] == 0:
                    _add_into(adj32[offsets[i]: offsets[i] + n], adj64[offsets[a]: offsets[a] + n])
                else:
                    _add_into(adj64[offsets[i]: offsets[i] + n], adj32[offsets[a]: offsets[a] + n])
        elif dtypes[i] == 0:
            _step(i, kind, o, argptr, args, obj, fattr, iattr, need, offsets, adj32, np.float32)
        else:
            _step(i, kind, o, argptr, args, obj, fattr, iattr, need, offsets, adj64, np.float64)
    return -1
