"""The strides and contiguity a torch user observes.

tapegrad's values are always C-contiguous arrays in logical order: a transpose, a slice or an expand holds a
copy, kept in agreement with its base's storage at every write (Tensor._window; docs/architecture.md). torch's
are views, so what torch reports (`stride()`, `is_contiguous()`) and
what follows from it (`view` on a transposed tensor raises) depend on the strides the view would have.
A Tensor keeps those as `_strides` (in elements; None: the contiguous strides of its shape), computed by
the data-movement ops as torch computes them; nothing reads them to find a value.
"""


def contiguous(shape):
    """torch's strides of a contiguous tensor of this shape (a size-0 dimension counts as 1)."""
    if type(shape) is not tuple:
        shape = tuple(shape)
    strides = _CONTIGUOUS.get(shape)
    if strides is None:
        out, step = [], 1
        for n in reversed(shape):
            out.append(step)
            step *= max(int(n), 1)
        strides = tuple(reversed(out))
        if len(_CONTIGUOUS) >= 4096:  # (a program's shapes are few; a bound for one that makes many)
            _CONTIGUOUS.clear()
        _CONTIGUOUS[shape] = strides
    return strides


_CONTIGUOUS = {}  # shape -> its contiguous strides: every view op asks (a dict lookup, a tenth of the loop)


def of(t):
    """t.stride(): its strides as torch would have them."""
    return contiguous(t._data.shape) if t._strides is None else t._strides


def is_contiguous(shape, strides):
    """torch's test: the dimensions longer than 1, innermost first, step by the sizes inside them."""
    if strides is None:
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


def normal(shape, strides):
    """What to store: None for the contiguous strides (the common case, nothing kept)."""
    if strides is None:
        return None
    strides = tuple(int(s) for s in strides)
    return None if strides == contiguous(shape) else strides


def of_numpy_view(x, v):
    """The strides of a NumPy view v of x's (C-contiguous) data, had x the strides it reports: each of v's
    steps is a step in x's dimensions (its C strides, outermost first), each worth x's own stride. None
    for a view NumPy walks backwards (flip: a copy in torch, so contiguous). Remembered: a program takes the same
    views of same-shaped values at every step, and working them out cost a recorded view 1 us."""
    a = x._data
    key = (v.strides, v.shape, a.shape, a.itemsize, x._strides)
    try:
        return _NUMPY_VIEWS[key]
    except KeyError:
        pass
    if len(_NUMPY_VIEWS) >= 4096:  # (a bound for a program that makes many shapes)
        _NUMPY_VIEWS.clear()
    strides = _NUMPY_VIEWS[key] = _of_numpy_view(x, v)
    return strides


_NUMPY_VIEWS = {}  # (v's byte strides and shape, x's shape, itemsize and strides) -> of_numpy_view's answer


def _of_numpy_view(x, v):
    item = x._data.itemsize
    steps = tuple([s // item for s in v.strides])
    if steps and min(steps) < 0:
        return None
    if x._strides is None:
        return None if steps == contiguous(v.shape) else steps
    c, own = contiguous(x._data.shape), x._strides
    out = []
    for step, n in zip(steps, v.shape):
        total = 0
        for ci, si, ni in zip(c, own, x._data.shape):
            if ni > 1 and step >= ci:
                k, step = divmod(step, ci)
                total += k * si
        out.append(total)
    return normal(v.shape, out)


def of_expand(x, shape):
    """expand: a new leading or a broadcast dimension has stride 0, the others keep x's."""
    own = of(x)
    lead = len(shape) - len(own)
    out = [0] * lead
    for i, s in enumerate(own):
        out.append(0 if x._data.shape[i] == 1 and shape[lead + i] != 1 else s)
    return normal(shape, out)


def of_view(oldshape, oldstride, newshape):
    """The strides `view(newshape)` gives a tensor of oldshape/oldstride, or None where torch's view
    raises (a new dimension would span two non-contiguous pieces). ATen's computeStride."""
    numel = 1
    for n in oldshape:
        numel *= n
    if numel == 0:
        return tuple(oldstride) if tuple(oldshape) == tuple(newshape) else contiguous(newshape)
    if not oldshape:
        return contiguous(newshape)
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base = oldstride[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1
                             and oldstride[tensor_d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base = oldstride[tensor_d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


VIEW_MESSAGE = ("view size is not compatible with input tensor's size and stride (at least one dimension spans "
                "across two contiguous subspaces). Use .reshape(...) instead.")


def memory_order(shape, strides):
    """The dimensions from outermost to innermost in memory, as torch's TensorIterator walks a tensor (a random
    fill's draws land in that order); None where it is the logical order (the dimensions longer than 1 in place)."""
    if strides is None:
        return None
    dims = [d for d, n in enumerate(shape) if n != 1]
    ordered = sorted(dims, key=lambda d: -strides[d])  # (stable: equal strides keep their order)
    if ordered == dims:
        return None
    return tuple(ordered) + tuple(d for d, n in enumerate(shape) if n == 1)


def is_dense(shape, strides):
    """Non-overlapping and dense: a permutation of some contiguous layout (torch's clone keeps those)."""
    expected = 1
    for s, n in sorted((s, n) for s, n in zip(strides, shape) if n != 1):
        if n == 0:
            return False
        if s != expected:
            return False
        expected *= n
    return True
