"""Linear algebra: matmul in its torch cases (dot, mv, mm, batched), bmm, outer, einsum, norm."""
import math

import numpy as np

from .. import _dtype, registry
from ..tensor import Tensor
from ..registry import Ctx
from ._common import (OPS, _array_rule_dtype, _autocast_lower, _dims, _in_float32, _new, _record,
                      _record_undefined_gradient, _sum_to_np, _tensor, _to_dtype, autocast_state, broadcast_shape)
from .elementwise import where
from .reduce import _keep, sum_to_shape


def _same_dtype(a, b):
    if a._data.dtype != b._data.dtype:  # (torch names the C++ types: long int, c10::BFloat16, ...)
        if a._data.ndim == 1 and b._data.ndim == 1:  # (matmul of two vectors is torch's dot)
            raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                               f"{_dtype.scalar_type_name(a._data.dtype)} and {_dtype.scalar_type_name(b._data.dtype)}")
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_dtype.cpp_type_name(a._data.dtype)} "
                           f"!= {_dtype.cpp_type_name(b._data.dtype)}")


def _matmul(a, b):
    """np.matmul; for bfloat16, products summed in float32 and rounded once, as torch's CPU kernels do."""
    if _dtype.is_reduced_float(a.dtype):
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    return np.matmul(a, b)


def _batch_error(a_batch, k, b_batch, kb):
    raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{a_batch}, {k}] but got: "
                       f"[{b_batch}, {kb}].")


def matmul(input, other):
    a, b = _tensor(input), _tensor(other)
    if autocast_state.dtype is not None:
        a, b = _autocast_lower(a, b)
    return _matmul_tensors(a, b)


def _mm(a, b):
    """a @ b of 2-d arrays. With one inner column it is their outer product, which NumPy's matmul computes slowly
    (measured, float64: (97, 1) @ (1, 204) 21 us, (97, 2) @ (2, 204) 4.7); the product takes 8 us and gives the
    same bits (one product an element, as gemm's)."""
    if a.shape[1] == 1 and type(a) is np.ndarray and type(b) is np.ndarray:
        return np.multiply(a, b)
    return np.matmul(a, b)


def _matmul_tensors(a, b):
    da, db = a._data, b._data
    if (da.ndim == 2 and db.ndim == 2 and da.dtype == db.dtype and da.dtype.kind == "f"
            and da.shape[1] == db.shape[0]):  # the hot path (x @ w): every check below passes, and it is "matmul"
        return _record(_MATMUL, np.asanyarray(_mm(da, db), order="C"), (a, b))
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
    _same_dtype(a, b)
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        if a.ndim == 1 and b.ndim == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the same "
                               f"number of elements, but got {ka} and {kb} elements respectively")
        if b.ndim == 1:
            rows = math.prod(a.shape[:-1])
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{ka}), vec ({kb})")
        if b.ndim == 2 or a.ndim == 1 and b.ndim == 2:
            rows = math.prod(a.shape[:-1]) if a.ndim > 1 else 1
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{ka} and {kb}x{b.shape[-1]})")
        broadcast_shape(a.shape[:-2], b.shape[:-2])
        _batch_error(math.prod(broadcast_shape(a.shape[:-2], b.shape[:-2])), ka, math.prod(b.shape[:-2]), kb)
    if a.ndim > 2 or b.ndim > 2:
        broadcast_shape(a.shape[:-2] if a.ndim > 1 else (), b.shape[:-2] if b.ndim > 1 else ())
    value = _matmul(a._data, b._data)
    if a._data.dtype.kind != "f" and not _dtype.is_bfloat16(a._data.dtype):
        return _new(np.asanyarray(value))
    if a.ndim == 1 and b.ndim == 1:
        name = "dot"
    elif b.ndim == 1:
        name = "mv" if a.ndim == 2 else "matmul_fold"
    elif a.ndim == 1:
        name = "vecmat" if b.ndim == 2 else "matmul_fold"
    elif a.ndim <= 2 and b.ndim <= 2:
        name = "matmul"
    elif b.ndim >= 3 and all(n == 1 for n in a.shape[:-2]):  # torch folds b and transposes: a copy
        name = "matmul_bcast"
    else:
        name = "matmul_fold"
    return _record(OPS[name], np.asanyarray(value, order="C"), (a, b))


def dot(input, other):
    a, b = _tensor(input), _tensor(other)
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    return _matmul_tensors(a, b)  # (not on torch's autocast list)


def inner(input, other):
    """The sum over both inputs' last dimension, for each pair of their other indices (dot of 1-d inputs; a 0-d
    input multiplies)."""
    a, b = _tensor(input), _tensor(other)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(a.shape)} and {list(b.shape)}")
    if a.ndim == 1 and b.ndim == 1:
        return dot(a, b)
    k = a.shape[-1]
    return matmul(a.reshape(-1, k), b.reshape(-1, k).t()).reshape(a.shape[:-1] + b.shape[:-1])


def mm(input, mat2):
    a, b = _tensor(input), _tensor(mat2)
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return matmul(a, b)


def mv(input, vec):
    a, b = _tensor(input), _tensor(vec)
    if a.ndim != 2 or b.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.ndim}, {b.ndim}")
    return _matmul_tensors(a, b)  # (not on torch's autocast list)


def bmm(input, mat2):
    a, b = _tensor(input), _tensor(mat2)
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b.shape[0] != a.shape[0] or b.shape[1] != a.shape[2]:
        _batch_error(a.shape[0], a.shape[2], b.shape[0], b.shape[1])
    if autocast_state.dtype is not None:
        a, b = _autocast_lower(a, b)
    if a._data.dtype != b._data.dtype:  # (bmm's words)
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(a._data.dtype)} but found "
                           f"{_dtype.scalar_type_name(b._data.dtype)}")
    value = _matmul(a._data, b._data)
    if a._data.dtype.kind != "f" and not _dtype.is_bfloat16(a._data.dtype):
        return _new(value)
    return _record(OPS["bmm"], value, (a, b))


def outer(input, vec2):
    a, b = _tensor(input), _tensor(vec2)
    for name, v in (("self", a), ("vec2", b)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return a.reshape(-1, 1) * b


ger = outer


# -- einsum ------------------------------------------------------------------------------------------------
def _parse_einsum(equation, operands):
    """Explicit subscripts (ellipses replaced by capital letters) for each operand and the output."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(subs) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    for s in subs + [rhs]:
        for ch in s.replace("...", ""):
            if not ch.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(ch)} in the equation "
                                   f"string, subscripts must be in [a-zA-Z]")
    n_ell = 0
    for s, x in zip(subs, operands):
        n = len(s.replace("...", ""))
        if "..." in s:
            n_ell = max(n_ell, x.ndim - n)
        elif n != x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) does not match the number "
                               f"of dimensions ({x.ndim}) for operand {subs.index(s)} and no ellipsis was given")
    used = set(eq)
    pool = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used]
    ell = "".join(pool[:n_ell])
    out_subs = []
    for s, x in zip(subs, operands):
        if "..." in s:
            k = x.ndim - len(s.replace("...", ""))
            s = s.replace("...", ell[n_ell - k:] if k else "")
        out_subs.append(s)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {}
        for s in out_subs:
            for ch in s:
                counts[ch] = counts.get(ch, 0) + 1
        out = ell + "".join(sorted(ch for ch, c in counts.items() if c == 1 and ch not in ell))
    sizes = {}
    for i, (s, x) in enumerate(zip(out_subs, operands)):
        for ch, n in zip(s, x.shape):
            if ch in sizes and sizes[ch] != n and n != 1 and sizes[ch] != 1:
                raise RuntimeError(f"einsum(): subscript {ch} has size {n} for operand {i} which does not broadcast "
                                   f"with previously seen size {sizes[ch]}")
            sizes[ch] = n if ch not in sizes or sizes[ch] == 1 else sizes[ch]
    for ch in out:
        if ch not in sizes:
            raise RuntimeError(f"einsum(): output subscript {ch} does not appear in the equation for any input operand")
    return out_subs, out


def einsum(equation, *operands):
    if not isinstance(equation, str):  # the sublist form: einsum(op1, [0, 1], op2, [1, 2], [0, 2])
        equation, operands = _sublist_equation((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    xs = [_tensor(x) for x in operands]
    if autocast_state.dtype is not None:
        xs = list(_autocast_lower(*xs))
    subs, out = _parse_einsum(equation, xs)
    dt = _dtype.result_type(*[x._data for x in xs])
    xs = [_to_dtype(x, dt) for x in xs]
    value = _einsum_forward((subs, out), *[x._data for x in xs])
    if not _dtype.is_float(dt):
        return _new(value)
    return _record(OPS["einsum"], value, tuple(xs), aux=(subs, out))


def _sublist_equation(args):
    """(equation, operands) of einsum's sublist form: each operand followed by its subscripts (ints below 52 or
    Ellipsis), then optionally the output's."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

    def word(sublist):
        out = ""
        for s in sublist:
            if s is Ellipsis:
                out += "..."
            elif isinstance(s, (int, np.integer)) and 0 <= s < 52:
                out += letters[s]
            else:
                raise ValueError("einsum(): expected subscript to be within the range [0, 52), but got " + str(s))
        return out
    operands, subscripts = args[0:len(args) - len(args) % 2:2], args[1:len(args) - len(args) % 2:2]
    equation = ",".join(word(s) for s in subscripts)
    if len(args) % 2:
        equation += "->" + word(args[-1])
    return equation, operands


def _einsum_forward(ctx, *arrays):
    if _dtype.is_reduced_float(arrays[0].dtype):  # (float16, bfloat16: in float32, rounded once, as torch's)
        return _in_float32(lambda *a: _einsum_forward(ctx, *a), *arrays)
    subs, out = ctx
    value = np.einsum(",".join(subs) + "->" + out, *arrays, optimize=len(arrays) > 1)
    return np.asanyarray(value, dtype=np.result_type(*arrays), order="C")


def _broadcast_letters(shape, target, size):
    """The gradient's sizes over `target`: a letter of size 1 in one operand broadcasts against the others
    (the engine sums it back), and one of size 1 in the others is expanded to the operand's."""
    return [n if n > size[ch] else size[ch] for n, ch in zip(shape, target)]


def _kept(uniq, target, full, size=None):
    """Sizes over the operand's letters: the gradient's where it has the letter, else 1 (size=None) or the
    operand's own size (letters summed by the forward come back by expand)."""
    at = dict(zip(target, full))
    return [at[ch] if ch in at else 1 if size is None else size[ch] for ch in uniq]


def _einsum_grads(ctx, g, inputs):
    """The gradient of operand k is einsum of g with the other operands onto k's subscripts. Letters only k
    has were summed by the forward and come back by expand; repeated letters (diagonals) come back through
    identity matrices."""
    subs, out_subs = ctx
    grads = []
    for k, x in enumerate(inputs):
        others = [(s, t) for j, (s, t) in enumerate(zip(subs, inputs)) if j != k]
        have = set(out_subs).union(*[set(s) for s, _ in others])
        uniq = "".join(dict.fromkeys(subs[k]))
        size = {ch: n for ch, n in zip(subs[k], x.shape)}
        target = "".join(ch for ch in uniq if ch in have)
        gk = einsum(",".join([out_subs] + [s for s, _ in others]) + "->" + target, g, *[t for _, t in others])
        full = _broadcast_letters(gk.shape, target, size)
        if list(gk.shape) != full:
            gk = gk.expand(full)
        if target != uniq:
            gk = gk.reshape(_kept(uniq, target, full)).expand(_kept(uniq, target, full, size))
        if uniq != subs[k]:
            renamed, repeats = _renamed_repeats(subs[k], out_subs)
            deltas = [(spec, _new(np.eye(size[spec[0]], dtype=x._data.dtype))) for spec in repeats]
            gk = einsum(",".join([uniq] + [d for d, _ in deltas]) + "->" + renamed, gk, *[e for _, e in deltas])
        grads.append(gk)
    return tuple(grads)


def _renamed_repeats(sub, out_subs):
    """An operand's letters with each repeat renamed to a free letter, and the (letter, new letter) pairs: the
    gradient of a repeated letter (a diagonal) is the unrepeated one times identity matrices over those pairs."""
    free = iter(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in sub and c not in out_subs)
    renamed, seen, repeats = "", set(), []
    for ch in sub:
        if ch in seen:
            new = next(free)
            repeats.append(ch + new)
            renamed += new
        else:
            seen.add(ch)
            renamed += ch
    return renamed, repeats


def _einsum_arrays(ctx, g, inputs, out, wanted):
    """_einsum_grads on arrays, step for step (each einsum as the front end's forward, each expand a copy)."""
    if not _array_rule_dtype(g, *inputs):
        return None
    subs, out_subs = ctx

    def ein(lhs, target, *arrays):
        return _einsum_forward((lhs, target), *arrays)
    grads = []
    for k, x in enumerate(inputs):
        if not wanted[k]:
            grads.append(None)
            continue
        others = [(s, t) for j, (s, t) in enumerate(zip(subs, inputs)) if j != k]
        have = set(out_subs).union(*[set(s) for s, _ in others])
        uniq = "".join(dict.fromkeys(subs[k]))
        size = {ch: n for ch, n in zip(subs[k], x.shape)}
        target = "".join(ch for ch in uniq if ch in have)
        gk = ein([out_subs] + [s for s, _ in others], target, g, *[t for _, t in others])
        full = _broadcast_letters(gk.shape, target, size)
        if list(gk.shape) != full:
            gk = np.array(np.broadcast_to(gk, full), order="C")
        if target != uniq:
            gk = np.array(np.broadcast_to(gk.reshape(_kept(uniq, target, full)),
                                          _kept(uniq, target, full, size)), order="C")
        if uniq != subs[k]:
            renamed, repeats = _renamed_repeats(subs[k], out_subs)
            deltas = [(spec, np.eye(size[spec[0]], dtype=x.dtype)) for spec in repeats]
            gk = ein([uniq] + [d for d, _ in deltas], renamed, gk, *[e for _, e in deltas])
        grads.append(gk)
    return grads


# -- norms ---------------------------------------------------------------------------------------------------------
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm as torch/functional.py chooses: a string p other than 'fro' over at most two dims (the nuclear
    norm, or an error) is linalg.matrix_norm over dim (all dims when None); else a vector norm over dim."""
    x = _tensor(input)
    if isinstance(p, str) and not (p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2)):
        return _matrix_norm(x, p, tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) else dim,
                           keepdim, dtype=dtype)
    if p == "fro" or p is None:
        p = 2.0
    return vector_norm(x, p, dim, keepdim, dtype=dtype)


def _singular_values(x):
    """linalg.svdvals of a floating x (ndim >= 2), recorded as its op (declared by ops/decompositions.py, which
    imports this module: looked up when called)."""
    d = x._data
    s = (np.linalg.svd(d, compute_uv=False) if d.size
         else np.zeros(d.shape[:-2] + (min(d.shape[-2:]),), d.dtype))
    return _record(OPS["linalg_svd_S"], s, (x,), aux=Ctx(full=False))


def _matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """torch.linalg.matrix_norm: 'fro' (the square root of the sum of squares), 1 / -1 (the largest / smallest
    column sum of |A|), inf / -inf (rows'); 'nuc', 2 and -2: the sum, largest and smallest of the singular values;
    with torch's checks in its order (ord, A, dim, dtype)."""
    x = _tensor(A)
    if isinstance(ord, str) and ord not in ("fro", "nuc") or not isinstance(ord, str) and abs(ord) not in (
            1, 2, math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if x.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    svd_based = ord in ("nuc", 2, -2)
    if not _dtype.is_float(x._data.dtype):
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype.scalar_type_name(x._data.dtype)}")
    if svd_based and _dtype.is_reduced_float(x._data.dtype):
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got "
                           f"{_dtype.scalar_type_name(x._data.dtype)}")
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    rows, cols = _dims(dim[0], x.ndim)[0], _dims(dim[1], x.ndim)[0]
    if rows == cols:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({rows}, {cols})")
    if dtype is not None:
        to = _dtype.to_numpy_dtype(dtype)
        if not _dtype.is_float(to):
            raise RuntimeError(f"linalg.matrix_norm: dtype should be floating point or complex, but got "
                               f"{_dtype.scalar_type_name(to)}")
        if np.promote_types(x._data.dtype, to) != to:
            raise RuntimeError(f"linalg.matrix_norm: the dtype of the input ({_dtype.scalar_type_name(x._data.dtype)})"
                               f" should be convertible without narrowing to the specified dtype "
                               f"({_dtype.scalar_type_name(to)})")
    if svd_based:
        if dtype is not None:
            x = _to_dtype(x, _dtype.to_numpy_dtype(dtype))
        s = _singular_values(x.movedim((rows, cols), (-2, -1)))
        out = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
        if keepdim:
            for d in sorted((rows, cols)):
                out = out.unsqueeze(d)
        return out
    if ord == "fro":
        return vector_norm(x, 2, (rows, cols), keepdim, dtype=dtype)
    if dtype is not None:
        x = _to_dtype(x, _dtype.to_numpy_dtype(dtype))
    summed, picked = (rows, cols) if abs(ord) == 1 else (cols, rows)  # 1: columns' sums; inf: rows'
    sums = x.abs().sum(summed, keepdim=True)
    out = sums.amax(picked, keepdim=True) if ord > 0 else sums.amin(picked, keepdim=True)
    return out if keepdim else out.squeeze(max(rows, cols)).squeeze(min(rows, cols))


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    return _vector_norm(x, ord, dim, keepdim, dtype, "vector_norm")


def _vector_norm(x, ord, dim, keepdim, dtype, name):
    """vector_norm recorded as OPS[name] (its grad_fn: pairwise_distance's is ATen norm's, NormBackward1)."""
    x = _tensor(x)
    if dtype is not None:
        x = _to_dtype(x, _dtype.to_numpy_dtype(dtype))
    if not _dtype.is_float(x._data.dtype):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype.from_numpy_dtype(x._data.dtype).name.capitalize().replace('Int64', 'Long')}")
    p = float(ord)
    if isinstance(dim, (tuple, list)) and not dim:  # (dim=[]: every dim, as torch)
        dim = None
    dims = tuple(range(x.ndim)) if dim is None else (() if x.ndim == 0 else tuple(sorted(_dims(dim, x.ndim))))
    data = x._data
    if math.isinf(p) and any(x.shape[d] == 0 for d in dims) or math.isinf(p) and data.size == 0:
        if dim is None:
            raise RuntimeError("linalg.vector_norm cannot compute the inf norm on an empty tensor because the "
                               "operation does not have an identity")
        d = next(d for d in dims if x.shape[d] == 0)
        raise RuntimeError(f"linalg.vector_norm cannot compute the inf norm on the dimension {d}because this "
                           f"dimension is empty and the operation does not have an identity")

    out = _vector_norm_forward(Ctx(p=p, dims=dims), data, keepdim)
    keep = tuple(1 if d in dims else s for d, s in enumerate(x.shape))
    if p == 2 and dim is None and not keepdim:  # the registry's plain 2-norm
        return _record(OPS["norm"], out, (x,))
    if p == 0:  # torch's norm_backward returns an undefined gradient for p=0: x gets none (not zeros)
        return _record_undefined_gradient(OPS[name], out, (x,), Ctx(
            p=p, dims=dims, keep=keep, unreplayable="norm with p=0 (its row has no input: no gradient flows)"))
    return _record(OPS[name], out, (x,), aux=Ctx(p=p, dims=dims, keep=keep))


def _vector_norm_forward(ctx, data, keepdim=True):
    p, dims = ctx.p, ctx.dims

    def red(fn, a):
        return np.asanyarray(fn(a) if a.ndim == 0 else fn(a, axis=dims, keepdims=keepdim))
    a = np.abs(data)
    if a.dtype == np.float16 or _dtype.is_bfloat16(a.dtype):  # torch accumulates a half norm in float32
        # (300 ** 2 overflows float16)
        a = a.astype(np.float32)
    with np.errstate(all="ignore"):
        if p == 2:
            out = np.sqrt(red(np.sum, a * a))
        elif p == 1:
            out = red(np.sum, a)
        elif p == math.inf:
            out = red(np.max, a)
        elif p == -math.inf:
            out = red(np.min, a)
        elif p == 0:
            out = red(np.sum, (a != 0).astype(a.dtype))
        else:
            out = red(np.sum, a ** a.dtype.type(p)) ** a.dtype.type(1.0 / p)
    return out.astype(data.dtype, copy=False)


# == Declarations: each op's derivative rule and its forward on arrays (tapegrad.compile) ==================
def _mm_forward(ctx, a, b):
    return np.matmul(a, b)


def _vjp_matmul(ctx, g, inputs, out):
    a, b = inputs
    if a.ndim == 1 and b.ndim == 1:
        return g * b, g * a
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = g2.unsqueeze(-2)
    if b.ndim == 1:
        g2 = g2.unsqueeze(-1)
    ga = g2 @ b2.transpose(-1, -2)
    gb = a2.transpose(-1, -2) @ g2
    ga = sum_to_shape(ga, a2.shape).reshape(a.shape)
    gb = sum_to_shape(gb, b2.shape).reshape(b.shape)
    return ga, gb


def _matmul_arrays(ctx, g, inputs, out, wanted):
    """Plain backward of every matrix product (mm, mv, dot, bmm, broadcast matmul): BLAS on transposed views,
    only the wanted side (no gradient for the data x of x @ w), broadcast dims summed away."""
    a, b = inputs
    if not _array_rule_dtype(a, b, g):
        return None
    if a.ndim >= 2 and b.ndim == 2 and a.shape[:-1] == g.shape[:-1]:  # (matmul_fold's, folded as torch folds it)
        (k, n), m = b.shape, math.prod(a.shape[:-1])
        a2, g2 = a.reshape(m, k), g.reshape(m, n)
        return (g2 @ b.T).reshape(a.shape) if wanted[0] else None, a2.T @ g2 if wanted[1] else None
    if a.ndim == 1 and b.ndim == 1:
        return g * b if wanted[0] else None, g * a if wanted[1] else None
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = g[..., None, :] if a.ndim == 1 else g
    g2 = g2[..., None] if b.ndim == 1 else g2
    ga = _sum_to_np(g2 @ np.swapaxes(b2, -1, -2), a2.shape).reshape(a.shape) if wanted[0] else None
    gb = _sum_to_np(np.swapaxes(a2, -1, -2) @ g2, b2.shape).reshape(b.shape) if wanted[1] else None
    return ga, gb


def _norm_forward(x):
    return np.sqrt(np.sum(np.square(x, dtype=x.dtype)))


def _vjp_norm(ctx, g, inputs, out):
    x, = inputs
    return (where(out == 0, 0.0 * x, x * (g / out)),)  # torch: zero gradient at the origin


def _vjp_vector_norm(ctx, g, inputs, out):
    """torch's norm_backward, for each p: zero gradient where the norm is 0."""
    x, = inputs
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    p = ctx.p
    if p == 1:
        return (x.sign() * g,)
    if p == 2:
        return (where(y == 0, 0.0, g / y) * x,)
    if math.isinf(p):
        mask = (x.abs() == y).to(x.dtype)  # a NaN row matches nothing: zeros, as torch (not 0 / 0)
        return (x.sign() * mask * (g / mask.sum(ctx.dims, keepdim=True).clamp_min(1.0)),)
    if p < 1:
        scaled = where(x == 0, 0.0, x.sign() * x.abs() ** (p - 1))
        return (scaled * g * y ** (1 - p),)
    scaled = x.sign() * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)
    return (scaled * where(y == 0, 0.0, g / y ** (p - 1)),)


def _norm_arrays(ctx, g, inputs, out, wanted):
    x, = inputs
    if not _array_rule_dtype(x):
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.where(out == 0, 0.0 * x, x * (g / out)),)  # torch: zero gradient at the origin


def _vector_norm_arrays(ctx, g, inputs, out, wanted):
    """The 1- and 2-norms on arrays (the others take the Tensor rule)."""
    x, = inputs
    if not _array_rule_dtype(x) or ctx.p not in (1, 2):
        return None
    g, y = _keep(g, ctx.keep), _keep(out, ctx.keep)
    if ctx.p == 1:
        return (np.sign(x) * g,)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.where(y == 0, 0.0, g / y) * x,)


_NORM2 = Ctx(p=2.0, dims=None)  # (all dims: a 0-d result)


def _vjp_einsum(ctx, g, inputs, out):
    return _einsum_grads(ctx, g, inputs)


registry.python("matmul", "MmBackward0", _mm_forward, _vjp_matmul, array_vjp=_matmul_arrays, compiled_rule="matmul")
_MATMUL = OPS["matmul"]  # (_matmul_tensors's hot path)
registry.python("mv", "MvBackward0", _mm_forward, _vjp_matmul, array_vjp=_matmul_arrays)
registry.python("bmm", "BmmBackward0", _mm_forward, _vjp_matmul, array_vjp=_matmul_arrays)
registry.python("dot", "DotBackward0", _mm_forward, _vjp_matmul, array_vjp=_matmul_arrays)
registry.python("matmul_fold", "UnsafeViewBackward0", _mm_forward, _vjp_matmul, array_vjp=_matmul_arrays,
                compiled_rule="matmul")
registry.python("matmul_bcast", "CloneBackward0", _mm_forward, _vjp_matmul, array_vjp=_matmul_arrays)
registry.python("vecmat", "SqueezeBackward4", _mm_forward, _vjp_matmul, array_vjp=_matmul_arrays)
registry.python("norm", "LinalgVectorNormBackward0", lambda ctx, x: _vector_norm_forward(_NORM2, x, False), _vjp_norm,
                array_vjp=_norm_arrays)
registry.python("vector_norm", "LinalgVectorNormBackward0", _vector_norm_forward, _vjp_vector_norm,
                array_vjp=_vector_norm_arrays)
registry.python("einsum", "EinsumBackward0", _einsum_forward, _vjp_einsum, array_vjp=_einsum_arrays)


__all__ = [n for n, v in list(globals().items()) if callable(v) and getattr(v, "__module__", None) == __name__
           and not n.startswith("_")]


# Tensor's methods for this module's front-ends (grep `Tensor.<name> =`)
Tensor.__matmul__ = matmul
Tensor.__rmatmul__ = lambda self, other: matmul(other, self)
Tensor.matmul = matmul
Tensor.mm = mm
Tensor.dot = dot
Tensor.norm = norm
Tensor.bmm = bmm
Tensor.mv = mv
Tensor.outer = outer
Tensor.ger = outer
Tensor.inner = inner
