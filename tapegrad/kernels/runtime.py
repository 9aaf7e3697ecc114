"""The compiled half of backward: reachability, adjoint layout, and the reverse replay of the tape.

Everything here takes only ndarrays and scalars. Row kinds come from the registry's `kinds` table;
rows of kind PYTHON (and rows flagged STOP) make `replay` return, so Python can run them and resume.
"""
import numba
import numpy as np
from numba import njit
from numpy import uint64 as u64

from .memory import JIT, _voidptr, c_contiguous, data, dim, load_i64, ndim, size, typenum, view
from . import blas, elementwise, rnn, softmax

# Kinds of row, as declared in the registry.
K_LEAF, K_UNARY, K_BINARY, K_SUM, K_EXPAND, K_RESHAPE, K_GATHER, K_CAST, K_PYTHON = range(9)
# From K_RULE up: a PYTHON row whose rule this module also has, in registry.COMPILED_RULES' order (registry.K_RULE),
# run here when _rule_here says the row's arrays suit it.
K_LINEAR, K_MSE, K_SMOOTH_L1, K_HUBER, K_MATMUL, K_SOFTMAX, K_LOG_SOFTMAX, K_LSTM_C, K_LSTM_H = range(9, 18)
K_RULE = K_LINEAR
# K_LINEAR (x @ w.T + b) and K_MATMUL rows are differentiated by NumPy's gemm called from here (blas.py; BLAS, the
# int64 array of its addresses). A K_LINEAR row of at most LINEAR_HERE_MAX multiply-adds a product is differentiated
# by three loops here instead where there is no gemm (they cost less than returning to Python, about 10 us a row),
# or where it has one output (gemm's outer product g @ w is slow: see linear_by_loops).
LINEAR_HERE_MAX = 1 << 15
BLAS = blas.addresses()
# A pointwise loss row's reduction, in its iattr (ops/loss.py; 0, a row that recorded none, is none of them).
R_NONE, R_MEAN, R_SUM = 1, 2, 3
F_REQ, F_DEAD, F_STOP = 1, 2, 4
# plan's `own` of a leaf whose one adjoint comes from one row: that row runs in Python (the array its rule returns
# becomes the gradient), or is a K_LINEAR / K_MATMUL row the replay runs (it writes the leaf's block in the owned
# buffers, which hold nothing else: the gradient is a view of them, no copy, no adjoint-buffer memory kept)
OWN_PYTHON, OWN_BLOCK = 1, 2
OP_LEAF = 0  # the tape's opcode of a leaf row (a tensor that requires grad and has no history)
OP_CONST = 1  # the tape's opcode of a constant row
NUM_F32, NUM_F64, NUM_I64 = np.dtype(np.float32).num, np.dtype(np.float64).num, np.dtype(np.int64).num
SAVES_OUT = 128  # bit of the saves table: the op's backward reads its own output
SAVES_ALL = 64  # bit of the saves table: the op's backward reads every input, however many (a compiled call)
HOLDS_GRAD = 256  # bit of the saves table: a Python row's rule may keep its grad_output (registry.HOLDS_GRAD)


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
def free_graph(need, n, op, flags):
    """Tape.free_graph: mark the needed op rows (not leaves, not constants) dead. Returns them, and the length
    of the tape's n rows (need covers the first ones) past its last live row that is not a constant."""
    rows = np.empty(need.size, np.int64)
    k = 0
    end = 0
    for i in range(n):
        o = op[i]
        if i < need.size and need[i] and o != OP_LEAF and o != OP_CONST:
            flags[i] |= F_DEAD
            rows[k] = i
            k += 1
        elif (flags[i] & F_DEAD) == 0 and o != OP_CONST:
            end = i + 1
    return rows[:k], end


@njit(**JIT)
def cut(n, end, k, nargs, ids, ghost, obj, op, flags, dtypes, vaddr, outver, iattr, fattr, args, argver, argptr):
    """Tape._truncate's arrays: rows n..end and argument entries k..nargs cleared, and each cut row's value
    id (`ids`, Tape._ids) pushed onto its index's ghost ids, negated for a constant's row (Tape.slot)."""
    for r in range(n, end):
        for h in range(ghost.shape[0] - 1, 0, -1):
            ghost[h, r] = ghost[h - 1, r]
        ghost[0, r] = -ids[r - n] if op[r] == OP_CONST else ids[r - n]
        obj[r] = 0
        op[r] = 0
        flags[r] = 0
        dtypes[r] = 0
        vaddr[r] = 0
        outver[r] = 0
        iattr[r] = 0
        fattr[r, 0] = 0.0
        fattr[r, 1] = 0.0
        argptr[r + 1] = 0
    for j in range(k, nargs):
        args[j] = 0
        argver[j] = 0


@njit(**JIT)
def free_cut(need, n, floor, nargs, ghost, obj, op, flags, dtypes, vaddr, outver, iattr, fattr, args, argver,
             argptr):
    """free_graph, then the tail cut at max(end, floor) (cut's, each cut row's value id read from obj: the
    caller has no released value) in one call. Returns the freed rows below the cut, whose version cells it
    let go of and whose values Python drops, the cut row (-1: nothing was freed) and its first argument entry."""
    rows, end = free_graph(need, n, op, flags)
    if rows.size == 0:
        return rows, -1, 0
    tail = max(end, floor)
    k = 0
    while k < rows.size and rows[k] < tail:
        vaddr[rows[k]] = 0
        k += 1
    stranded = rows[:k]
    if tail >= n:
        return stranded, tail, argptr[n]
    first_arg = argptr[tail]
    cut(tail, n, first_arg, nargs, obj[tail:n], ghost, obj, op, flags, dtypes, vaddr, outver, iattr, fattr, args,
        argver, argptr)  # (each row's id is read before cut clears that row)
    return stranded, tail, first_arg


@njit(**JIT)
def plan(n, roots, targets, flags, op, kinds, saves, argptr, args, argver, obj, vaddr, outver, dtypes, iattr,
         reuse_min, gemm):
    """Mark the rows this backward needs and lay out their adjoints.

    need: rows reached from the roots that require grad (and, when targets are given, lie on a path to
    one). own: leaves whose one adjoint comes from one row (a weight's): OWN_PYTHON, a Python row's, which get no
    slot in the buffers, since Python hands that array on as it is (to the leaf, or out of run_planned); OWN_BLOCK,
    a linear or matmul row's that the replay runs, which get a block in the owned buffers (o32, o64 elements).
    Adjoints get a block each in row order, or, when some row's is large enough to share (reuse_min
    elements), blocks by liveness (_layout); recycle marks rows whose block a later row takes over, which
    the replay zeroes once the row has run.
    Returns (need, own, offsets, recycle, n32, n64, o32, o64, error_row, error_arg): error_row >= 0 names a needed
    row that is dead (freed, error_arg == -2), whose recorded dtype is not its value's (-3), or whose saved
    input (error_arg >= 0) or output (error_arg == -1) changed in place.
    """
    need = np.zeros(n, np.bool_)
    uses = np.zeros(n, np.int32)
    own = np.zeros(n, np.int8)
    for r in roots:
        need[r] = (flags[r] & F_REQ) != 0
        uses[r] = 2  # seeded: never owned
    for i in range(n - 1, -1, -1):
        if need[i]:
            kind = kinds[op[i]]
            # (a freed row's and its inputs' values may be gone: their obj ids are never read, and the loop below
            # reports the row)
            in_python = kind == K_PYTHON or (kind >= K_RULE and (flags[i] & F_DEAD) == 0 and not _rule_here(
                kind, i, argptr, args, obj, dtypes, iattr, gemm))
            owner = OWN_PYTHON if in_python else OWN_BLOCK if kind == K_LINEAR or kind == K_MATMUL else 0
            for k in range(argptr[i], argptr[i + 1]):
                a = args[k]
                if flags[a] & F_REQ:
                    need[a] = True
                    uses[a] += 1
                    own[a] = owner if op[a] == OP_LEAF else 0
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
    recycle = np.zeros(n, np.bool_)
    n32 = 0
    n64 = 0
    owned = np.zeros(2, np.int64)  # elements of the owned buffers, float32 and float64
    shared = False
    for i in range(n):
        if not need[i]:
            continue
        if flags[i] & F_DEAD:
            return need, own, offsets, recycle, 0, 0, 0, 0, i, -2
        t = typenum(obj[i])  # the row's dtype code must be its value's: it picks the buffer and the kernel
        if dtypes[i] != (0 if t == NUM_F32 else 1 if t == NUM_F64 else 2):
            return need, own, offsets, recycle, 0, 0, 0, 0, i, -3
        o = op[i]
        s = saves[o]
        for j in range(argptr[i + 1] - argptr[i]):
            k = argptr[i] + j
            a = args[k]
            if (s & SAVES_ALL or (j < 6 and (s >> j) & 1)) and vaddr[a] != 0 and load_i64(vaddr[a]) != argver[k]:
                return need, own, offsets, recycle, 0, 0, 0, 0, i, j
        if s & SAVES_OUT and vaddr[i] != 0 and load_i64(vaddr[i]) != outver[i]:
            return need, own, offsets, recycle, 0, 0, 0, 0, i, -1
        if uses[i] != 1:
            own[i] = 0
        if own[i] == OWN_PYTHON:
            continue
        if own[i] == OWN_BLOCK:
            offsets[i] = owned[dtypes[i]]
            owned[dtypes[i]] += size(obj[i])
            continue
        m = size(obj[i])  # a block per row, in row order: the layout when no block is large enough to share
        shared = shared or (m >= reuse_min and op[i] != OP_LEAF)
        if dtypes[i] == 0:
            offsets[i] = n32
            n32 += m
        else:
            offsets[i] = n64
            n64 += m
    if shared:
        n32, n64 = _layout(n, roots, targets, need, own, uses, op, kinds, saves, argptr, args, obj, dtypes,
                           reuse_min, offsets, recycle)
    return need, own, offsets, recycle, n32, n64, owned[0], owned[1], -1, 0


@njit(**JIT)
def _layout(n, roots, targets, need, own, uses, op, kinds, saves, argptr, args, obj, dtypes, reuse_min, offsets,
            recycle):
    """Offsets of the needed rows' adjoints in the two buffers (float32, float64); returns their lengths.

    In replay order (from the top root down), a row's block is taken when its first consumer runs and
    given back once the row itself has run: rows whose adjoints are never alive together share memory,
    as torch frees each gradient once it is used. Only blocks of at least reuse_min elements are shared
    (a small one costs more to track than it holds), and only between rows of one dtype: a row takes the
    smallest given-back block that holds it, and what it leaves of a larger one stays free (a transformer's
    logits' blocks then hold the blocks of the layers below them); leaves
    and targets keep theirs to the end, and so do the PYTHON rows whose rule gets a view of the block and may
    keep it (HOLDS_GRAD: a custom Function's backward may store its grad_output). A reused block is zeroed by
    the replay (or, for a PYTHON row, by replay._drive) when its row has run. A reshape whose input it is
    the only consumer of (`x @ w` viewed back to three dimensions, the logits flattened for a loss) hands
    its block on to that input: one adjoint, no copy, and the replay skips the row (_step).
    """
    sizes = np.full(n, -1, np.int64)  # -1: not placed yet
    keep = np.zeros(n, np.bool_)
    # a given-back block that merged its neighbours is several rows' blocks: a chain from the row free[f, 2]
    # names through `link`, marked recycled only when a row takes the block (one nobody takes is not zeroed)
    link = np.full(n, -1, np.int64)
    tail = np.arange(n)
    for t in targets:
        keep[t] = True
    free = np.empty((n, 3), np.int64)  # the given-back blocks: offset, size (with the dtype as sign), row
    used = np.zeros(3, np.int64)       # elements used in the float32 and float64 buffers; free blocks
    top = -1
    for r in roots:
        top = max(top, r)
        if need[r] and not own[r] and sizes[r] < 0:
            sizes[r] = _new_block(r, size(obj[r]), dtypes[r], offsets, used)
    for i in range(top, -1, -1):
        if not need[i] or kinds[op[i]] == K_LEAF:
            continue
        handed_on = False
        if kinds[op[i]] == K_RESHAPE and not keep[i]:
            a = args[argptr[i]]
            if (need[a] and uses[a] == 1 and not own[a] and not keep[a] and sizes[a] < 0 and op[a] != OP_LEAF
                    and dtypes[a] == dtypes[i]):
                offsets[a], sizes[a], handed_on = offsets[i], sizes[i], True
        for k in range(argptr[i], argptr[i + 1]):
            a = args[k]
            if not need[a] or own[a] or sizes[a] >= 0:
                continue
            m = sizes[a] = size(obj[a])
            if m >= reuse_min and op[a] != OP_LEAF and not keep[a]:
                sign = 1 if dtypes[a] == 0 else -1
                last = used[2] - 1
                best = -1
                for f in range(last, max(last - 64, -1), -1):  # the best fit among the most recently given back
                    if free[f, 1] * sign >= m and (best < 0 or free[f, 1] * sign < free[best, 1] * sign):
                        best = f
                        if free[f, 1] * sign == m:
                            break
                if best >= 0:
                    offsets[a] = free[best, 0]
                    r = free[best, 2]  # (those rows' whole blocks are zeroed once they have run)
                    while r >= 0:
                        recycle[r] = True
                        r = link[r]
                    rest = free[best, 1] * sign - m
                    if rest >= reuse_min:  # the rest of a larger block stays free, for a smaller adjoint
                        free[best, 0] += m
                        free[best, 1] = rest * sign
                    else:
                        free[best, 0], free[best, 1], free[best, 2] = free[last, 0], free[last, 1], free[last, 2]
                        used[2] = last
                    continue
            _new_block(a, m, dtypes[a], offsets, used)
        m = sizes[i]
        holds = kinds[op[i]] == K_PYTHON and saves[op[i]] & HOLDS_GRAD
        if m >= reuse_min and not own[i] and not keep[i] and not holds and not handed_on:
            _give_back(free, used, offsets[i], m, 1 if dtypes[i] == 0 else -1, i, link, tail)
    for i in range(n):  # (a needed row that no consumer reaches in replay order: none expected)
        if need[i] and not own[i] and sizes[i] < 0:
            sizes[i] = _new_block(i, size(obj[i]), dtypes[i], offsets, used)
    return used[0], used[1]


@njit(**JIT)
def _give_back(free, used, o, m, sign, row, link, tail):
    """Add row's block (offset o, m elements, dtype sign) to the free list, merged with a given-back block
    it adjoins: the merged block's rows are chained (link, tail), and all are zeroed if a row takes it."""
    merged = True
    while merged:
        merged = False
        last = used[2] - 1
        for f in range(last, max(last - 64, -1), -1):
            fm = free[f, 1] * sign
            if fm > 0 and (free[f, 0] + fm == o or o + m == free[f, 0]):
                o = min(o, free[f, 0])
                m += fm
                other = free[f, 2]
                link[tail[row]] = other
                tail[row] = tail[other]
                free[f, 0], free[f, 1], free[f, 2] = free[last, 0], free[last, 1], free[last, 2]
                used[2] = last
                merged = True
                break
    f = used[2]
    free[f, 0], free[f, 1], free[f, 2] = o, m * sign, row
    used[2] = f + 1


@njit(inline="always", **JIT)
def _new_block(row, m, dt, offsets, used):
    d = 0 if dt == 0 else 1
    offsets[row] = used[d]
    used[d] += m
    return m


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


_NO_MAP = np.empty(0, np.int64)


@njit(**JIT)
def _broadcast(y, x):
    """How input x meets each dimension of output y: -1 it does not matter (size 1), 1 broadcast, 0 in full."""
    nd = ndim(y)
    out = np.empty(nd, np.int8)
    for d in range(nd):
        e = d - (nd - ndim(x))
        out[d] = -1 if dim(y, d) == 1 else 1 if e < 0 or dim(x, e) == 1 else 0
    return out


@njit(**JIT)
def _reduced(x, mask):
    """The keepdim reduction of x over the axes in mask, seen as a broadcast: _broadcast's codes per axis."""
    out = np.empty(ndim(x), np.int8)
    for d in range(ndim(x)):
        out[d] = -1 if dim(x, d) == 1 else 1 if (mask >> d) & 1 else 0
    return out


@njit(**JIT)
def _split(y, px, pz):
    """Split y's dimensions into an outer and an inner part such that each of two inputs (their
    _broadcast codes px, pz) is either broadcast or in full along each part: then element
    k = o * inner + j of y pairs with x[o * xo + j * xj] and z[o * zo + j * zj]. Returns
    (outer, inner, xo, xj, zo, zj), or outer = -1 when no split does (x of shape (a, 1, c) against y of
    (a, b, c)). A bias (b,) added to (n, b) is outer broadcast, inner in full: x[j]."""
    nd = ndim(y)
    for s in range(nd + 1):
        xo = xi = zo = zi = -1  # each input's code in each part (-1: none seen yet)
        ok = True
        for d in range(nd):
            if d < s:
                ok = ok and (px[d] < 0 or xo < 0 or xo == px[d]) and (pz[d] < 0 or zo < 0 or zo == pz[d])
                xo = px[d] if px[d] >= 0 else xo
                zo = pz[d] if pz[d] >= 0 else zo
            else:
                ok = ok and (px[d] < 0 or xi < 0 or xi == px[d]) and (pz[d] < 0 or zi < 0 or zi == pz[d])
                xi = px[d] if px[d] >= 0 else xi
                zi = pz[d] if pz[d] >= 0 else zi
        if ok:
            outer = 1
            inner = 1
            for d in range(nd):
                if d < s:
                    outer *= dim(y, d)
                else:
                    inner *= dim(y, d)
            xj = 1 if xi == 0 else 0
            zj = 1 if zi == 0 else 0
            return (outer, inner, (inner if xj else 1) if xo == 0 else 0, xj,
                    (inner if zj else 1) if zo == 0 else 0, zj)
    return (-1, 0, 0, 0, 0, 0)


@njit(inline="always", **JIT)
def _block(adj, offset, n, dt):
    """adj[offset: offset + n] without a reference count (a slice's costs two atomic operations: a chain of
    small rows spends most of its time on them); plan laid every block out inside adj, and this checks it."""
    if offset < 0 or offset + n > adj.size:
        raise IndexError("tapegrad: an adjoint block lies outside its buffer")
    return numba.carray(_voidptr(adj.ctypes.data + offset * adj.itemsize), n, dt)


@njit(inline="always", **JIT)
def _step(i, kind, o, argptr, args, obj, fattr, iattr, need, offsets, adj, dt, num):
    """One row's adjoint, for rows whose inputs share the output's dtype (dt, NumPy type number num)."""
    y = obj[i]
    n = size(y)
    g = _block(adj, offsets[i], n, dt)
    a0 = args[argptr[i]]
    x = obj[a0]
    m = size(x)
    # an input that needs no adjoint has no block of its own (its offset is 0): a stand-in of no elements, which
    # the kernels never touch (a broadcast input may be larger than an empty output, and than the whole buffer)
    gx = _block(adj, offsets[a0], m if need[a0] else 0, dt)
    if kind == K_UNARY:
        if need[a0]:
                elementwise.unary(o, view(x, num, dt), view(y, num, dt), g, gx, fattr[i, 0], fattr[i, 1])
    elif kind == K_BINARY:
        a1 = args[argptr[i] + 1]
        z = obj[a1]
        p = size(z)
        gz = _block(adj, offsets[a1], p if need[a1] else 0, dt)
        if (m == n or m == 1) and (p == n or p == 1):  # each input whole or one element: no search
            split = (1, n, 0, 1 if m == n else 0, 0, 1 if p == n else 0)
        else:
            split = _split(y, _broadcast(y, x), _broadcast(y, z))
        if split[0] < 0:  # a broadcast that two strides per input cannot say: index maps
            elementwise.binary(o, view(x, num, dt), view(z, num, dt), view(y, num, dt), g, gx, gz,
                               broadcast_offsets(y, x), broadcast_offsets(y, z), 1, n, 0, 0, 0, 0, need[a0], need[a1],
                               fattr[i, 0], fattr[i, 1])
        elif split[1] >= 16 and ((need[a0] and split[3] == 0) or (need[a1] and split[5] == 0)):
            _binary_summed(o, view(x, num, dt), view(z, num, dt), view(y, num, dt), g, gx, gz, split, need[a0],
                           need[a1], fattr[i, 0], fattr[i, 1])
        else:
            elementwise.binary(o, view(x, num, dt), view(z, num, dt), view(y, num, dt), g, gx, gz, _NO_MAP, _NO_MAP,
                               split[0], split[1], split[2], split[3], split[4], split[5], need[a0], need[a1],
                               fattr[i, 0], fattr[i, 1])
    elif not need[a0]:
        return
    elif kind == K_SUM:
        c = fattr[i, 0]
        if n == 1:  # a full reduction: every input element gets the one output adjoint
            v = g[0] * c
            for k in range(m):
                gx[k] += v
        else:  # x's element o * inner + j reads g[o * go + j * gj] (see _split), or an offset map
            p = _reduced(x, iattr[i])
            outer, inner, go, gj = _split(x, p, p)[:4]
            if outer < 0:
                ix = reduce_offsets(x, iattr[i])
                for k in range(m):
                    gx[k] += g[ix[k]] * c
            else:  # (unsigned positions, as the elementwise kernels': LLVM then vectorizes the loop)
                outer, inner, go, gj = u64(outer), u64(inner), u64(go), u64(gj)
                for o in range(outer):
                    for j in range(inner):
                        gx[o * inner + j] += g[o * go + j * gj] * c
    elif kind == K_EXPAND:  # y's element o * inner + j adds into gx[o * xo + j * xj], or an offset map
        p = _broadcast(y, x)
        outer, inner, xo, xj = _split(y, p, p)[:4]
        if outer < 0:
            iy = broadcast_offsets(y, x)
            for k in range(n):
                gx[iy[k]] += g[k]
        else:
            outer, inner, xo, xj = u64(outer), u64(inner), u64(xo), u64(xj)
            if xj == 0 and inner >= 16:  # x broadcast along the inner part: each o's adjoints summed at once
                for o in range(outer):
                    gx[o * xo] += lane_sum(g, o * inner, inner)
            else:
                for o in range(outer):
                    for j in range(inner):
                        gx[o * xo + j * xj] += g[o * inner + j]
    elif kind == K_RESHAPE:
        if offsets[a0] != offsets[i]:  # (equal: the input's adjoint is this block, see _layout)
            for k in range(n):
                gx[k] += g[k]
    elif kind == K_GATHER:
        idx = view(iattr[i], NUM_I64, np.int64)
        if fattr[i, 0] == 1.0:  # a strided view (ops.shape._StridedView), not an index map
            _strided_add(g, gx, idx, n)
        else:
            for k in range(n):
                if idx[k] >= 0:
                    gx[idx[k]] += g[k]


@njit(**JIT)
def _rule_here(kind, i, argptr, args, obj, dtypes, iattr, gemm):
    """Whether the replay runs row i, of a kind from K_RULE up, itself (else Python runs the op's rule)."""
    if kind == K_LINEAR:
        return _linear_here(i, argptr, args, obj, dtypes, gemm)
    if kind == K_MATMUL:
        return _matmul_here(i, argptr, args, obj, dtypes, gemm)
    if kind == K_SOFTMAX or kind == K_LOG_SOFTMAX:
        return _softmax_here(i, argptr, args, obj, dtypes, iattr)
    if kind == K_LSTM_C or kind == K_LSTM_H:
        return _lstm_cell_here(i, argptr, args, obj, dtypes, iattr)
    return _loss_here(i, argptr, args, obj, dtypes, iattr)


@njit(**JIT)
def _rule(kind, i, argptr, args, obj, fattr, iattr, need, offsets, adj, dt, num, gemm, own, owned):
    """Row i's adjoints (_rule_here), added into their blocks of adj (dtype dt, NumPy type number num), or of
    owned for an OWN_BLOCK leaf (see plan)."""
    if kind == K_LINEAR:
        _linear_rule(i, argptr, args, obj, need, offsets, adj, dt, num, gemm, own, owned)
    elif kind == K_MATMUL:
        _matmul_rule(i, argptr, args, obj, need, offsets, adj, dt, num, gemm, own, owned)
    elif kind == K_SOFTMAX or kind == K_LOG_SOFTMAX:
        _softmax_rule(kind, i, argptr, args, obj, need, offsets, adj, dt, num)
    elif kind == K_LSTM_C or kind == K_LSTM_H:
        _lstm_cell_rule(kind, i, argptr, args, obj, iattr, need, offsets, adj, dt, num)
    else:
        _loss_rule(kind, i, argptr, args, obj, fattr, iattr, need, offsets, adj, dt, num)


@njit(**JIT)
def _linear_here(i, argptr, args, obj, dtypes, gemm):
    """Whether the replay runs K_LINEAR row i itself: y = x @ w.T (+ b), x (N, K), w (M, K), b (M,), all of the
    row's dtype (float32 or float64) and C-contiguous, with a gemm to call (gemm: BLAS's addresses) or at most
    LINEAR_HERE_MAX multiply-adds."""
    lo = argptr[i]
    na = argptr[i + 1] - lo
    if dtypes[i] == 2 or na < 2 or na > 3:
        return False
    y, x, w = obj[i], obj[args[lo]], obj[args[lo + 1]]
    num = typenum(y)
    if ndim(x) != 2 or ndim(w) != 2 or ndim(y) != 2 or typenum(x) != num or typenum(w) != num:
        return False
    if not (c_contiguous(x) and c_contiguous(w)) or dim(w, 1) != dim(x, 1) or dim(y, 0) != dim(x, 0) \
            or dim(y, 1) != dim(w, 0):
        return False
    if na == 3:
        b = obj[args[lo + 2]]
        if typenum(b) != num or ndim(b) != 1 or dim(b, 0) != dim(w, 0):
            return False
    n, k, m = dim(x, 0), dim(x, 1), dim(w, 0)
    return n > 0 and k > 0 and m > 0 and (gemm[dtypes[i]] != 0 or n * k * m <= LINEAR_HERE_MAX)


@njit(inline="always", **JIT)
def linear_by_loops(n, k, m, has_gemm):
    """Whether a linear row, x (n, k) and w (m, k), is differentiated by _linear_sums rather than gemm (the array rule
    asks the same, so that both give the same bits). One output (m = 1, a regression's head) makes x's gradient
    an outer product, which OpenBLAS's gemm does slowly (docs/architecture.md)."""
    return n * k * m <= LINEAR_HERE_MAX and (not has_gemm or m == 1)


@njit(**JIT)
def _linear_rule(i, argptr, args, obj, need, offsets, adj, dt, num, gemm, own, owned):
    """The adjoints of row i, y = x @ w.T (+ b) (_linear_here), added into their blocks by gemm as the array rule's
    `g @ w` and `g.T @ x`, and the bias's column sums as its `g.sum(0)`; or by _linear_sums (linear_by_loops)."""
    lo = argptr[i]
    a0, a1 = args[lo], args[lo + 1]
    x, w = obj[a0], obj[a1]
    n, k, m = dim(x, 0), dim(x, 1), dim(w, 0)
    has_b = argptr[i + 1] - lo == 3
    a2 = args[lo + 2] if has_b else a0
    g = _block(adj, offsets[i], n * m, dt)  # (also the unused stand-in for an adjoint not wanted)
    double = num == NUM_F64
    f = gemm[1 if double else 0]
    if linear_by_loops(n, k, m, f != 0):
        _linear_sums(g, view(x, num, dt), view(w, num, dt), n, k, m,
                     _input_block(adj, owned, own, offsets, a0, n * k, dt) if need[a0] else g,
                     _input_block(adj, owned, own, offsets, a1, m * k, dt) if need[a1] else g,
                     _input_block(adj, owned, own, offsets, a2, m, dt) if has_b and need[a2] else g,
                     need[a0], need[a1], has_b and need[a2])
        return
    at = g.ctypes.data
    if need[a0]:  # gx (n, k) += g (n, m) @ w (m, k)
        gx = _input_block(adj, owned, own, offsets, a0, n * k, dt)
        blas.gemm_add(f, double, _NO, _NO, n, k, m, at, m, data(w), k, gx.ctypes.data, k)
    if need[a1]:  # gw (m, k) += g.T @ x (n, k)
        gw = _input_block(adj, owned, own, offsets, a1, m * k, dt)
        blas.gemm_add(f, double, _T, _NO, m, k, n, at, m, data(x), k, gw.ctypes.data, k)
    if has_b and need[a2]:  # (NumPy's sum over the rows: each column's terms in row order, then added once)
        gb = _input_block(adj, owned, own, offsets, a2, m, dt)
        column = g[:m].copy()
        for r in range(1, n):
            for c in range(m):
                column[c] += g[r * m + c]
        for c in range(m):
            gb[c] += column[c]


_NO, _T = np.int32(blas.NO_TRANS), np.int32(blas.TRANS)


@njit(inline="always", **JIT)
def _input_block(adj, owned, own, offsets, a, n, dt):
    """The adjoint block of input row a: in the owned buffer for an OWN_BLOCK leaf, else in adj."""
    return _block(owned if own[a] == OWN_BLOCK else adj, offsets[a], n, dt)


@njit(**JIT)
def _matmul_here(i, argptr, args, obj, dtypes, gemm):
    """Whether the replay runs matmul (or matmul_fold) row i itself: y = a @ b, a (..., M, K) and b (K, N)
    C-contiguous (a transpose's value is a copy), no dimension 0, all of the row's dtype (float32 or float64), and a
    gemm to call. a's leading dimensions fold into M, as torch folds them."""
    lo = argptr[i]
    if dtypes[i] == 2 or argptr[i + 1] - lo != 2 or gemm[dtypes[i]] == 0:
        return False
    y, a, b = obj[i], obj[args[lo]], obj[args[lo + 1]]
    num = typenum(y)
    d = ndim(a)
    if d < 2 or ndim(b) != 2 or ndim(y) != d or typenum(a) != num or typenum(b) != num:
        return False
    for j in range(d - 1):
        if dim(y, j) != dim(a, j):
            return False
    k, n = dim(a, d - 1), dim(b, 1)
    if dim(b, 0) != k or dim(y, d - 1) != n or size(a) == 0 or n == 0:
        return False
    return c_contiguous(a) and c_contiguous(b)


@njit(**JIT)
def _matmul_rule(i, argptr, args, obj, need, offsets, adj, dt, num, gemm, own, owned):
    """The adjoints of row i, y = a @ b (_matmul_here; a's leading dimensions folded into M), added into their
    blocks by gemm: the array rule's `g @ b.T` and `a.T @ g`, as NumPy calls it."""
    lo = argptr[i]
    a0, a1 = args[lo], args[lo + 1]
    a, b = obj[a0], obj[a1]
    k, n = dim(b, 0), dim(b, 1)
    m = size(a) // k
    double = num == NUM_F64
    f = gemm[1 if double else 0]
    at = _block(adj, offsets[i], m * n, dt).ctypes.data
    if need[a0]:  # ga (m, k) += g (m, n) @ b.T
        ga = _input_block(adj, owned, own, offsets, a0, m * k, dt)
        blas.gemm_add(f, double, _NO, _T, m, k, n, at, n, data(b), n, ga.ctypes.data, k)
    if need[a1]:  # gb (k, n) += a.T @ g
        gb = _input_block(adj, owned, own, offsets, a1, k * n, dt)
        blas.gemm_add(f, double, _T, _NO, k, n, m, data(a), k, at, n, gb.ctypes.data, n)


@njit(**JIT)
def linear_grads(g, x, w, want_x, want_w, want_b):
    """The adjoints of y = x @ w.T + b (C-contiguous 2-D float arrays of one dtype, no dimension 0) as new arrays,
    each element the very sum _linear_rule adds into its block: the Python rule of a small linear row (anomaly
    mode, tapegrad.compile's recorded gradient) gives the replay's bits."""
    n, k, m = x.shape[0], x.shape[1], w.shape[0]
    gx = np.zeros(n * k if want_x else 0, x.dtype)
    gw = np.zeros(m * k if want_w else 0, x.dtype)
    gb = np.zeros(m if want_b else 0, x.dtype)
    _linear_sums(g.ravel(), x.ravel(), w.ravel(), n, k, m, gx, gw, gb, want_x, want_w, want_b)
    return gx.reshape((n if want_x else 0, k)), gw.reshape((m if want_w else 0, k)), gb


@njit(inline="always", **JIT)
def _linear_sums(G, X, W, n, k, m, gx, gw, gb, want_x, want_w, want_b):
    """Add the adjoints of y = x @ w.T + b (x (n, k), w (m, k), all dimensions at least 1; flat arrays) into gx,
    gw and gb: each element's terms summed first (_dot, four partial sums), then added once."""
    if want_x:
        for r in range(n):
            for c in range(k):
                gx[r * k + c] += _dot(G, r * m, 1, W, c, k, m)
    if want_w:
        for o in range(m):
            for c in range(k):
                gw[o * k + c] += _dot(G, o, m, X, c, k, n)
    if want_b:
        one = np.ones(1, G.dtype)  # (a column's sum as its dot with ones, stride 0: each term times 1 is exact)
        for o in range(m):
            gb[o] += _dot(G, o, m, one, 0, 0, n)


@njit(inline="always", **JIT)
def _dot(a, ia, sa, b, ib, sb, n):
    """The sum over t < n (n >= 1) of a[ia + t sa] * b[ib + t sb], in four interleaved partial sums: one running
    sum is a dependent add a term."""
    s0 = a[ia] * b[ib]
    if n < 4:
        for t in range(1, n):
            s0 += a[ia + t * sa] * b[ib + t * sb]
        return s0
    s1 = a[ia + sa] * b[ib + sb]
    s2 = a[ia + 2 * sa] * b[ib + 2 * sb]
    s3 = a[ia + 3 * sa] * b[ib + 3 * sb]
    t = 4
    while t + 4 <= n:
        s0 += a[ia + t * sa] * b[ib + t * sb]
        s1 += a[ia + (t + 1) * sa] * b[ib + (t + 1) * sb]
        s2 += a[ia + (t + 2) * sa] * b[ib + (t + 2) * sb]
        s3 += a[ia + (t + 3) * sa] * b[ib + (t + 3) * sb]
        t += 4
    while t < n:
        s0 += a[ia + t * sa] * b[ib + t * sb]
        t += 1
    return (s0 + s1) + (s2 + s3)


@njit(**JIT)
def _softmax_here(i, argptr, args, obj, dtypes, iattr):
    """Whether the replay runs (log_)softmax row i, y = softmax(x) over x's last dimension: its iattr records the
    dimension + 1 (ops/reduce.py), x and y of the row's dtype (float32 or float64), y C-contiguous, not empty and
    of at most softmax.MAX_SIZE elements (the array rule's own test: ops/reduce.py, _last_dim_rows)."""
    lo = argptr[i]
    if dtypes[i] == 2 or argptr[i + 1] - lo != 1:
        return False
    y, x = obj[i], obj[args[lo]]
    d = ndim(y)
    return (d >= 1 and iattr[i] == d and ndim(x) == d and typenum(x) == typenum(y) and 0 < size(y) <= softmax.MAX_SIZE
            and size(x) == size(y) and c_contiguous(y))


@njit(**JIT)
def _softmax_rule(kind, i, argptr, args, obj, need, offsets, adj, dt, num):
    """The input's adjoint of (log_)softmax row i (_softmax_here), added into its block by the kernel the array rule
    calls (kernels/softmax.py)."""
    a0 = args[argptr[i]]
    if not need[a0]:
        return
    y = obj[i]
    m = size(y)
    n = dim(y, ndim(y) - 1)
    softmax.backward(_block(adj, offsets[i], m, dt), view(y, num, dt), _block(adj, offsets[a0], m, dt), m // n, n,
                     kind == K_LOG_SOFTMAX)


@njit(**JIT)
def _lstm_cell_here(i, argptr, args, obj, dtypes, iattr):
    """Whether the replay runs LSTM cell row i (ops/rnn.py: c' or h' of one step from gx, gh (B, 4H) and c (B, H)):
    its iattr is the id of the context's int64 pair (ids of the gate activations (B, 4H) and tanh(c') (B, H),
    which the context holds while the row lives), all of the row's dtype (float32 or float64), C-contiguous."""
    lo = argptr[i]
    if dtypes[i] == 2 or argptr[i + 1] - lo != 3 or iattr[i] == 0:
        return False
    y = obj[i]
    num, m = typenum(y), size(y)
    if ndim(y) < 1 or m == 0:
        return False
    for k in range(3):
        a = obj[args[lo + k]]
        if typenum(a) != num or size(a) != (m if k == 2 else 4 * m) or not c_contiguous(a):
            return False
    ids = iattr[i]
    if typenum(ids) != NUM_I64 or size(ids) != 2:
        return False
    saved = view(ids, NUM_I64, np.int64)
    acts, tc = saved[0], saved[1]
    return (typenum(acts) == num and size(acts) == 4 * m and c_contiguous(acts) and typenum(tc) == num
            and size(tc) == m and c_contiguous(tc))


@njit(**JIT)
def _lstm_cell_rule(kind, i, argptr, args, obj, iattr, need, offsets, adj, dt, num):
    """The adjoints of LSTM cell row i (_lstm_cell_here), added into their blocks by rnn.lstm_cell_add: the array
    rule's terms (ops/rnn.py), rounded as it rounds them."""
    lo = argptr[i]
    a0, a1, a2 = args[lo], args[lo + 1], args[lo + 2]
    y = obj[i]
    m = size(y)
    H = dim(y, ndim(y) - 1)
    saved = view(iattr[i], NUM_I64, np.int64)
    g = _block(adj, offsets[i], m, dt)  # (also the unused stand-in for an adjoint not wanted)
    rnn.lstm_cell_add(view(saved[0], num, dt), view(saved[1], num, dt), view(obj[a2], num, dt), g,
                      _block(adj, offsets[a0], 4 * m, dt) if need[a0] else g,
                      _block(adj, offsets[a1], 4 * m, dt) if need[a1] else g,
                      _block(adj, offsets[a2], m, dt) if need[a2] else g,
                      m // H, H, kind == K_LSTM_C, need[a0], need[a1], need[a2])


@njit(**JIT)
def _loss_here(i, argptr, args, obj, dtypes, iattr):
    """Whether the replay runs pointwise loss row i, (input, target) -> loss: input and target of one shape, the
    row's dtype (float32 or float64) and C-contiguous, and a reduction it knows (R_NONE, R_MEAN, R_SUM)."""
    lo = argptr[i]
    r = iattr[i]
    if dtypes[i] == 2 or argptr[i + 1] - lo != 2 or r < R_NONE or r > R_SUM:
        return False
    y, x, t = obj[i], obj[args[lo]], obj[args[lo + 1]]
    num = typenum(y)
    if typenum(x) != num or typenum(t) != num or ndim(x) != ndim(t) or not (c_contiguous(x) and c_contiguous(t)):
        return False
    for d in range(ndim(x)):
        if dim(x, d) != dim(t, d):
            return False
    return size(y) == (size(x) if r == R_NONE else 1)


@njit(**JIT)
def _loss_rule(kind, i, argptr, args, obj, fattr, iattr, need, offsets, adj, dt, num):
    """The adjoints of pointwise loss row i (_loss_here), added into their blocks by _loss_terms."""
    lo = argptr[i]
    a0, a1 = args[lo], args[lo + 1]
    x, t = view(obj[a0], num, dt), view(obj[a1], num, dt)
    n = x.size
    g = _block(adj, offsets[i], size(obj[i]), dt)  # (also the unused stand-in for an adjoint not wanted)
    _loss_terms(kind, g, x, t, iattr[i], fattr[i, 0], _block(adj, offsets[a0], n, dt) if need[a0] else g,
               _block(adj, offsets[a1], n, dt) if need[a1] else g, need[a0], need[a1], dt)


@njit(**JIT)
def _loss_terms(kind, g, x, t, reduction, c, gx, gt, want_x, want_t, dt):
    """Add a pointwise loss's adjoints into gx (the input's) and subtract them from gt (the target's): x, t, gx, gt
    flat of n elements of dtype dt, g of n (R_NONE) or one; c the loss's beta or delta. Each term is rounded as
    ops/loss.py's array rule rounds it, so Python and the replay give the same bits: (x - t) * (2 g) (mse),
    (d / beta if |d| < beta else sign(d)) * g (smooth_l1), clip(d, -delta, delta) * g (huber); over n for R_MEAN."""
    n = x.size
    each = reduction == R_NONE
    mean = reduction == R_MEAN
    count, one, two, c = dt(n), dt(1.0), dt(2.0), dt(c)  # (NumPy rounds a Python number to the array's dtype)
    for k in range(n):
        d = x[k] - t[k]
        gk = g[k] if each else g[0]
        if kind == K_MSE:
            v = d * (two * gk)
        elif kind == K_SMOOTH_L1:
            if abs(d) < c:
                v = d / c * gk
            else:  # sign(d), NaN for NaN (np.sign's)
                v = (one if d > 0 else (-one if d < 0 else d)) * gk
        else:  # K_HUBER (np.clip keeps a NaN)
            v = (-c if d < -c else (c if d > c else d)) * gk
        if mean:
            v = v / count
        if want_x:
            gx[k] += v
        if want_t:
            gt[k] -= v


@njit(**JIT)
def _binary_summed(o, X, Z, Y, g, gx, gz, split, need_x, need_z, c, c2):
    """A binary row with an input broadcast along the whole inner part of the split (a 0-d parameter times a
    vector, a column): that input spread whole, its adjoint made whole in a scratch block by the elementwise
    kernel, and each outer index's terms added by lane_sum. Added in place one by one, they were a dependent
    add, store and reload an element (the adjoint block may alias the terms): 3 ns an element."""
    outer, inner, xo, xj, zo, zj = split
    sum_x, sum_z = need_x and xj == 0, need_z and zj == 0
    X2, GX, xo2, xj2 = (_spread(X, outer, inner, xo), np.zeros(outer * inner, gx.dtype), inner, 1) if sum_x \
        else (X, gx, xo, xj)
    Z2, GZ, zo2, zj2 = (_spread(Z, outer, inner, zo), np.zeros(outer * inner, gz.dtype), inner, 1) if sum_z \
        else (Z, gz, zo, zj)
    elementwise.binary(o, X2, Z2, Y, g, GX, GZ, _NO_MAP, _NO_MAP, outer, inner, xo2, xj2, zo2, zj2, need_x, need_z,
                       c, c2)
    for k in range(outer):
        if sum_x:
            gx[k * xo] += lane_sum(GX, k * inner, inner)
        if sum_z:
            gz[k * zo] += lane_sum(GZ, k * inner, inner)


@njit(**JIT)
def _spread(x, outer, inner, xo):
    """x broadcast along the inner part (x[o * xo] for every j), whole."""
    out = np.empty(outer * inner, x.dtype)
    for o in range(outer):
        v = x[o * xo]
        for j in range(inner):
            out[o * inner + j] = v
    return out


@njit(**JIT)
def lane_sum(t, lo, n):
    """t[lo] + ... + t[lo + n - 1] (n >= 8) as eight interleaved partial sums, which LLVM vectorizes without
    reassociating anything (one running sum is one dependent add an element)."""
    lo, n, w = u64(lo), u64(n), u64(8)  # (unsigned positions: no wraparound select per access)
    s0, s1, s2, s3, s4, s5, s6, s7 = t[lo], t[lo + 1], t[lo + 2], t[lo + 3], t[lo + 4], t[lo + 5], t[lo + 6], t[lo + 7]
    j, end = lo + w, lo + n
    while j + w <= end:
        s0 += t[j]
        s1 += t[j + u64(1)]
        s2 += t[j + u64(2)]
        s3 += t[j + u64(3)]
        s4 += t[j + u64(4)]
        s5 += t[j + u64(5)]
        s6 += t[j + u64(6)]
        s7 += t[j + u64(7)]
        j += w
    s = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
    while j < end:
        s += t[j]
        j += u64(1)
    return s


@njit(**JIT)
def _strided_add(g, gx, d, n):
    """gx[view] += g for the view d = (offset, ndim, shape..., strides...) of gx (in elements): each run
    along the last dimension at once, its start found from the outer index."""
    nd = d[1]
    if n == 0:
        return
    if nd == 0:
        gx[d[0]] += g[0]
        return
    inner = d[1 + nd]
    step = d[1 + 2 * nd]
    for o in range(n // inner):
        pos = d[0]
        rest = o
        for a in range(nd - 2, -1, -1):
            m = d[2 + a]
            pos += (rest % m) * d[2 + nd + a]
            rest //= m
        base = o * inner
        for j in range(inner):
            gx[pos + j * step] += g[base + j]


@njit(**JIT)
def _add_into(src, dst):
    for k in range(src.size):
        dst[k] += src[k]


@njit(**JIT)
def replay(start, resume, need, flags, op, kinds, argptr, args, obj, dtypes, fattr, iattr, offsets, recycle,
           adj32, adj64, gemm, own, own32, own64):
    """Run the needed rows from `start` down to 0; return the first row Python must run (a PYTHON row, a STOP
    row, a float16 or bfloat16 row whose rule reads values, a cast to one), or -1.
    With resume, the row at `start` runs here even if flagged STOP (Python has run its hooks). own32 and own64 are
    the owned buffers (plan's OWN_BLOCK leaves).
    A row's recycled block (see plan) is zeroed once the row has run: another row's adjoint takes it."""
    for i in range(start, -1, -1):
        if not need[i]:
            continue
        o = op[i]
        kind = kinds[o]
        if kind == K_LEAF:
            continue
        if kind == K_PYTHON or (flags[i] & F_STOP and not (resume and i == start)):
            return i
        if kind == K_CAST and dtypes[i] == 2:  # to float16 / bfloat16: Python rounds the gradient to it
            return i
        if kind >= K_RULE:
            if not _rule_here(kind, i, argptr, args, obj, dtypes, iattr, gemm):
                return i
            if dtypes[i] == 0:
                _rule(kind, i, argptr, args, obj, fattr, iattr, need, offsets, adj32, np.float32, NUM_F32, gemm, own,
                      own32)
            else:
                _rule(kind, i, argptr, args, obj, fattr, iattr, need, offsets, adj64, np.float64, NUM_F64, gemm, own,
                      own64)
        elif kind == K_CAST:  # adjoints of float32 rows are in adj32; of float64 and float16 rows, in adj64
            a = args[argptr[i]]
            if need[a]:
                n = size(obj[i])
                if dtypes[i] == 0 and dtypes[a] == 0:
                    _add_into(adj32[offsets[i]: offsets[i] + n], adj32[offsets[a]: offsets[a] + n])
                elif dtypes[i] == 0:
                    _add_into(adj32[offsets[i]: offsets[i] + n], adj64[offsets[a]: offsets[a] + n])
                elif dtypes[a] == 0:
                    _add_into(adj64[offsets[i]: offsets[i] + n], adj32[offsets[a]: offsets[a] + n])
                else:
                    _add_into(adj64[offsets[i]: offsets[i] + n], adj64[offsets[a]: offsets[a] + n])
        elif dtypes[i] == 0:
            _step(i, kind, o, argptr, args, obj, fattr, iattr, need, offsets, adj32, np.float32, NUM_F32)
        elif dtypes[i] == 1:
            _step(i, kind, o, argptr, args, obj, fattr, iattr, need, offsets, adj64, np.float64, NUM_F64)
        elif kind == K_UNARY or kind == K_BINARY:  # a float16 row's rule reads float16 values: Python runs it
            return i
        else:  # structural rows read no value: their float16 adjoints are float64 elements of adj64
            _step(i, kind, o, argptr, args, obj, fattr, iattr, need, offsets, adj64, np.float64, NUM_F64)
        if recycle[i]:
            m = size(obj[i])
            if dtypes[i] == 0:
                adj32[offsets[i]: offsets[i] + m] = 0
            else:
                adj64[offsets[i]: offsets[i] + m] = 0
    return -1


@njit(**JIT)
def run_pass(n, roots, targets, seed, flags, op, kinds, saves, argptr, args, argver, obj, vaddr, outver, dtypes,
             fattr, iattr, reuse_min, gemm):
    """A backward's usual start in one call (a compiled call's dispatch costs about as much as a tiny graph's
    arithmetic): plan, the adjoint buffers, `seed` added at the one root (a single element), and replay from it.
    Returns plan's results with the buffers, the needed leaves, replay's row (-1: done; also when plan reports
    an error, which replay then never ran) and the lowest row free_graph frees (-1: none)."""
    need, own, offsets, recycle, n32, n64, o32, o64, bad, arg = plan(
        n, roots, targets, flags, op, kinds, saves, argptr, args, argver, obj, vaddr, outver, dtypes, iattr, reuse_min,
        gemm)
    adj32 = np.zeros(n32, np.float32)
    adj64 = np.zeros(n64, np.float64)
    own32 = np.zeros(o32, np.float32)
    own64 = np.zeros(o64, np.float64)
    count = 0
    first = -1  # the lowest row free_graph would free (Tape.free_graph looks up the constants it registered)
    for i in range(n):
        if need[i] and op[i] == OP_LEAF:
            count += 1
        elif need[i] and op[i] != OP_CONST and first < 0:
            first = i
    leaves = np.empty(count, np.int64)
    count = 0
    for i in range(n):
        if need[i] and op[i] == OP_LEAF:
            leaves[count] = i
            count += 1
    r = roots[0]
    nxt = -1
    if bad < 0 and need[r]:
        if dtypes[r] == 0:
            _block(adj32, offsets[r], 1, np.float32)[0] += seed
        else:
            _block(adj64, offsets[r], 1, np.float64)[0] += seed
        nxt = replay(r, False, need, flags, op, kinds, argptr, args, obj, dtypes, fattr, iattr, offsets, recycle,
                     adj32, adj64, gemm, own, own32, own64)
    return need, own, offsets, recycle, adj32, adj64, own32, own64, leaves, bad, arg, nxt, first
