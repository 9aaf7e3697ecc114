"""F.pad (constant, reflect, replicate, circular), GroupNorm's function, and the activations a model zoo reaches
for (prelu, hardswish, mish, glu). Padding is one gather from the input with a constant appended (the constant's
positions read it), so it is differentiable to any order and replayable; group_norm is layer_norm per group,
then the affine; each activation is one row under torch's name, with a NumPy backward and a create_graph rule in
tapegrad ops."""
import builtins
import math
import numbers

import numpy as np

from .. import _dtype, registry
from .._meta import MetaArray as _MetaArray, make as _make_meta
from ..tensor import _new
from ._common import OPS, _autocast_lower, _in_float32, _record, _tensor, _to_dtype, autocast_state
from ..registry import Ctx
from .conv import _affine, _norm_arrays, _normalized, _vjp_norm, batch_norm as _batch_norm, layer_norm
from .elementwise import _sigmoid, _with_input
from .shape import _VIEW_MAPS, _gather_forward, _vjp_gather, _remember_map

__all__ = []  # torch.nn.functional's only (nn/functional.py binds them)

_COMBOS = ("Supported combinations for non-constant padding:\n"
           "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
           "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
           "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _sources(n, lo, hi, mode, dim, shape, pad):
    """For each output position along one dim: the input index it reads, or -1 (the constant)."""
    if not (lo or hi):  # (an unpadded dim is read whole, even an empty one: a batch of none)
        return np.arange(n, dtype=np.int64)
    if mode == "circular":
        return _circular_sources(n, lo, hi)
    i = np.arange(-lo, n + hi, dtype=np.int64)
    if mode == "constant":
        return np.where((i >= 0) & (i < n), i, -1)
    if mode == "reflect":
        if lo >= n or hi >= n:
            raise RuntimeError(f"Argument #{4 + 2 * (len(shape) - 1 - dim)}: Padding size should be less than the "
                               f"corresponding input dimension, "
                               f"but got: padding ({pad[0]}, {pad[1]}) at dimension {dim} of input {list(shape)}")
        i = np.abs(i)
        return np.where(i >= n, 2 * (n - 1) - i, i)
    return np.clip(i, 0, n - 1)  # replicate


def _circular_sources(n, lo, hi):
    """torch's circular padding: a negative pad narrows the input first, and the positive pads wrap around what is
    left (m elements), so each may be at most m (torch refuses a longer one, or reads memory it never wrote)."""
    if lo > n or hi > n:
        raise RuntimeError("Padding value causes wrapping around more than once.")
    if n + lo + hi < 0:
        raise RuntimeError("Negative padding value is resulting in an empty dimension")
    m = n + builtins.min(lo, 0) + builtins.min(hi, 0)
    if n + lo + hi == 0:
        return np.zeros(0, np.int64)
    if lo > m or hi > m:
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor refer "
                           "to a single memory location. Please clone() the tensor before performing the operation.")
    return np.arange(-builtins.max(lo, 0), m + builtins.max(hi, 0), dtype=np.int64) % m + builtins.max(-lo, 0)


# each mode's gather row under torch's grad_fn name (circular stays a plain gather, IndexBackward0: torch's
# circular padding is slicing copies, whose CopySlices node the gather is not)
for _name, _grad_fn in (("constant_pad_nd", "ConstantPadNdBackward0"),
                        ("reflection_pad1d", "ReflectionPad1DBackward0"),
                        ("reflection_pad2d", "ReflectionPad2DBackward0"),
                        ("reflection_pad3d", "ReflectionPad3DBackward0"),
                        ("replication_pad1d", "ReplicationPad1DBackward0"),
                        ("replication_pad2d", "ReplicationPad2DBackward0"),
                        ("replication_pad3d", "ReplicationPad3DBackward0")):
    registry.structural(_name, registry.K_GATHER, _grad_fn, _vjp_gather, forward=_gather_forward)


def aten_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """torch.layer_norm: F.layer_norm's arguments and torch's cudnn_enable (no cuDNN here: it changes nothing)."""
    _normalized_shape_given(normalized_shape)
    return layer_norm(input, normalized_shape, weight, bias, eps)


def _normalized_shape_given(normalized_shape):
    if not isinstance(normalized_shape, numbers.Integral) and len(normalized_shape) == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")


# -- torch's native_* normalizations: the output and the statistics torch's kernels save -----------------------------
def _stats(a, axes, eps, dt):
    """The mean and 1 / sqrt(biased variance + eps) of a over axes (kept), as values (torch's saved statistics)."""
    a = np.asarray(a, np.float64)
    mean = a.mean(axis=axes, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=axes, keepdims=True)
    return mean.astype(dt), (1.0 / np.sqrt(var + eps)).astype(dt)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """torch.native_layer_norm: (layer_norm's output, mean, rstd), the statistics with the normalized dims kept as
    1 (not differentiable, as torch's)."""
    x = _tensor(input)
    _normalized_shape_given(normalized_shape)
    out = layer_norm(x, normalized_shape, weight, bias, eps)
    k = 1 if isinstance(normalized_shape, numbers.Integral) else len(normalized_shape)
    mean, rstd = _stats(x._data, tuple(range(x.ndim - k, x.ndim)), float(eps), out._data.dtype)
    return out, _new(mean), _new(rstd)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """torch.native_batch_norm: (batch_norm's output, save_mean, save_invstd): the batch's per-channel mean and
    1 / sqrt(biased variance + eps) in training (the running statistics updated, as batch_norm's), empty in
    evaluation (not differentiable, as torch's)."""
    x = _tensor(input)
    out = _batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    dt = out._data.dtype
    if not training:
        return out, _new(np.zeros(0, dt)), _new(np.zeros(0, dt))
    mean, invstd = _stats(x._data, (0,) + tuple(range(2, x.ndim)), float(eps), dt)
    return out, _new(mean.reshape(-1)), _new(invstd.reshape(-1))


def _native_batch_norm_legit(input, weight, bias, *args):
    """torch._native_batch_norm_legit: native_batch_norm's, with running statistics (input, weight, bias,
    running_mean, running_var, training, momentum, eps) or without them (input, weight, bias, training, momentum,
    eps)."""
    if len(args) == 3:
        return native_batch_norm(input, weight, bias, None, None, *args)
    return native_batch_norm(input, weight, bias, *args)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """torch.native_group_norm: (group_norm's output, mean, rstd) with the statistics (N, group) recorded ops, so
    differentiable, as torch's."""
    x = _tensor(input)
    if x.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements, but got {x.numel()}")
    out = group_norm(x, group, weight, bias, eps)
    xg = x.reshape(N, group, -1)
    mean = xg.mean(-1)
    var = (xg - mean.unsqueeze(-1)).square().mean(-1)
    return out, mean, (var + float(eps)).rsqrt()


def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """torch._softmax_backward_data: softmax's input gradient from its output y and the output's gradient g,
    y * (g - sum(g * y, dim)), in g's dtype."""
    g, y = _tensor(grad_output), _tensor(output)
    return y * (g - (g * y).sum(dim, keepdim=True))


def _pad_op(mode, k):
    if mode == "constant":
        return OPS["constant_pad_nd"]
    if mode == "circular":
        return None
    return OPS[f"{'reflection' if mode == 'reflect' else 'replication'}_pad{k}d"]


def pad(input, pad, mode="constant", value=None):
    from . import _gather, cat
    x = _tensor(input)
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode == "constant":
        if k > x.ndim:
            raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but "
                               f"got padding length {len(pad)} and input of dimension {x.ndim}")
    else:
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        if k not in (1, 2, 3) or x.ndim not in (k + 1, k + 2):
            raise NotImplementedError(f"Padding size {len(pad)} is not supported for {x.ndim}D input tensor.\n"
                                      + _COMBOS)
        if mode != "circular" and 0 in x.shape[1 if x.ndim == k + 2 else 0:]:
            raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
                               f"other non-zero dimensions for input, but got: {list(x.shape)}")
    shape = tuple(x.shape)
    widths = [(pad[2 * j], pad[2 * j + 1]) if j < k else (0, 0) for j in range(x.ndim - 1, -1, -1)]
    index = _pad_map(shape, tuple(widths), mode)  # (remembered: a training step pads the same shapes each time)
    op = _pad_op(mode, k)
    fast = None
    if pad and builtins.min(pad) >= 0 and x.numel():  # NumPy pads in slices, far faster than the gather (no cropping)
        fast = _padded(x._data, widths, mode, 0 if value is None else value)
    if mode != "constant" or not pad or builtins.max(pad) <= 0:  # (no output element reads the constant)
        return _gather(x, index, op, out=fast)
    constant = _new(np.full(1, 0 if value is None else value, x._data.dtype))
    return _gather(cat([x.reshape(-1), constant]), index, op, out=fast)


def _padded(a, widths, mode, value):
    """a padded by the (lo, hi) >= 0 widths of each dim, by slice copies (np.pad's method, without its 60-90 us of
    Python): the input into the middle, then each dim's borders from what is already there, dim by dim (the dims
    before d over their whole padded length, those after over the input's)."""
    shape = tuple(n + lo + hi for n, (lo, hi) in zip(a.shape, widths))
    if type(a) is _MetaArray:  # (no values to place; the copies below would write them into a real array)
        return _make_meta(shape, a.dtype)
    out = np.empty(shape, a.dtype)
    inner = tuple(slice(lo, lo + n) for n, (lo, _) in zip(a.shape, widths))
    out[inner] = a
    for d, (lo, hi) in enumerate(widths):
        if not (lo or hi):
            continue
        n = a.shape[d]
        at = list(inner)

        def put(dst, src):
            at[d] = dst
            target = tuple(at)
            if src is None:
                out[target] = value
            else:
                at[d] = src
                out[target] = out[tuple(at)]
        if mode == "constant":
            put(slice(0, lo), None)
            put(slice(lo + n, lo + n + hi), None)
        elif mode == "reflect":  # (lo, hi < n)
            put(slice(0, lo), slice(2 * lo, lo, -1))
            put(slice(lo + n, lo + n + hi), slice(lo + n - 2, lo + n - 2 - hi if lo + n - 2 - hi >= 0 else None, -1))
        elif mode == "replicate":
            put(slice(0, lo), slice(lo, lo + 1))
            put(slice(lo + n, lo + n + hi), slice(lo + n - 1, lo + n))
        else:  # circular (lo, hi <= n)
            put(slice(0, lo), slice(n, n + lo))
            put(slice(lo + n, lo + n + hi), slice(lo, lo + hi))
        inner = inner[:d] + (slice(None),) + inner[d + 1:]
    return out


def _pad_map(shape, widths, mode):
    """The flat input index of each output element (the input's size where it reads the constant), torch's errors
    for sizes it refuses."""
    key = ("pad", shape, widths, mode)
    m = _VIEW_MAPS.get(key)
    if m is not None:
        return m
    srcs = [None] * len(shape)
    for d in range(len(shape) - 1, -1, -1):  # (torch checks the last dim first)
        lo, hi = widths[d]
        # (torch narrows by each negative pad; circular padding's own checks are _circular_sources')
        if mode != "circular" and shape[d] + builtins.min(lo, 0) + builtins.min(hi, 0) < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        srcs[d] = _sources(shape[d], lo, hi, mode, d, shape, (lo, hi))
    n = math.prod(shape)
    index = np.zeros(tuple(len(s) for s in srcs), np.int64)
    outside = np.zeros(index.shape, bool)
    stride = 1
    for d in range(len(shape) - 1, -1, -1):
        view = (1,) * d + (-1,) + (1,) * (len(shape) - d - 1)
        s = srcs[d].reshape(view)
        index += np.maximum(s, 0) * stride
        outside |= s < 0
        stride *= shape[d]
    index[outside] = n  # the appended constant
    return _remember_map(key, index)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """One row (NativeGroupNormBackward0, as torch's): the statistics of each group of channels (with the spatial
    dims), then the per-channel affine; the norm rows' rules on the input seen as (N, groups, C / groups, rest)."""
    x = _tensor(input)
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    size = [x.shape[0] * x.shape[1] // num_groups, num_groups] + list(x.shape[2:])  # (torch's _verify_batch_size)
    if size[0] * math.prod(size[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    if x.shape[1] % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(x.shape)} and num_groups={num_groups}")
    N, C = x.shape[0], x.shape[1]
    rest = math.prod(x.shape[2:])
    if x.numel() == 0:  # (nothing to normalize: the composition, whose rows handle empty values)
        return _group_norm_composed(x, num_groups, weight, bias, eps, N, C, rest)
    G = int(num_groups)
    dt = x._data.dtype
    ctx = Ctx(shape4=(N, G, C // G, rest), axes=(2, 3), paxes=(0, 3), pshape=(1, G, C // G, 1), eps=float(eps),
              training=True, layout=None)
    affine = [_affine(t, dt) for t in (weight, bias)]
    for name, t in zip(("weight", "bias"), affine):
        if t is not None and (t.ndim != 1 or t.numel() != C):  # (torch shows the weight's shape for either)
            shown = list(affine[0].shape) if affine[0] is not None else [0]
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {shown} and input of shape {list(x.shape)}")
    ctx.has_w, ctx.has_b = affine[0] is not None, affine[1] is not None
    given = tuple(t for t in affine if t is not None)
    return _record(OPS["group_norm"], _group_norm_forward(ctx, x._data, *[t._data for t in given]), (x,) + given,
                   aux=ctx)


def _group_norm_composed(x, num_groups, weight, bias, eps, N, C, rest):
    y = layer_norm(x.reshape(N, num_groups, (C // num_groups) * rest), ((C // num_groups) * rest,), eps=eps)
    y = y.reshape(x.shape)
    view = (1, C) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * _tensor(weight).reshape(view)
    if bias is not None:
        y = y + _tensor(bias).reshape(view)
    return y


def _group_norm_forward(ctx, xd, *affine):
    w = affine[0] if ctx.has_w else None
    b = affine[-1] if ctx.has_b else None
    return _normalized(ctx, xd.reshape(ctx.shape4), w, b).reshape(xd.shape)


def _group_norm_arrays(ctx, g, inputs, out, wanted):
    x = inputs[0]
    grads = _norm_arrays(ctx, g.reshape(ctx.shape4), [x.reshape(ctx.shape4)] + list(inputs[1:]), out, wanted)
    return (None if grads[0] is None else grads[0].reshape(x.shape),) + tuple(grads[1:])


def _vjp_group_norm(ctx, g, inputs, out):
    x = inputs[0]
    grads = _vjp_norm(ctx, g.reshape(ctx.shape4), [x.reshape(ctx.shape4)] + list(inputs[1:]), out)
    return (grads[0].reshape(x.shape),) + tuple(grads[1:])


# prelu, hardswish, mish, glu: one row each under torch's grad_fn name; the plain backward is NumPy, the
# create_graph rule the same derivative in tapegrad ops (so every order works)


def _prelu_view(x_shape, w):
    return w.reshape((1, -1) + (1,) * (len(x_shape) - 2)) if len(x_shape) >= 2 and w.size != 1 else w.reshape(())


def _prelu_forward(ctx, x, w):
    return np.where(x > 0, x, _prelu_view(x.shape, w) * x)


def _prelu_arrays(ctx, g, inputs, out, wanted):
    x, w = inputs
    wv = _prelu_view(x.shape, w)
    gx = np.where(x > 0, g, wv * g) if wanted[0] else None
    gw = None
    if wanted[1]:
        part = np.where(x > 0, 0, x * g)
        axes = tuple(i for i in range(x.ndim) if not (i == 1 and w.size != 1 and x.ndim >= 2))
        gw = part.sum(axes).reshape(w.shape).astype(w.dtype, copy=False)
    return gx, gw


def _vjp_prelu(ctx, g, inputs, out):
    from . import where
    x, w = inputs
    wv = w.reshape((1, -1) + (1,) * (x.ndim - 2)) if x.ndim >= 2 and w.numel() != 1 else w.reshape(())
    positive = x > 0
    gx = _with_input(where(positive, g, wv * g), x)  # (x's second derivative: zeros, not none, as torch's)
    part = where(positive, 0.0, x * g)
    axes = tuple(i for i in range(x.ndim) if not (i == 1 and w.numel() != 1 and x.ndim >= 2))
    return gx, (part.sum(axes) if axes else part).reshape(tuple(w.shape))


def _hardswish_forward(ctx, x):
    return x * np.clip(x + 3, 0, 6) / 6


def _hardswish_arrays(ctx, g, inputs, out, wanted):
    x = inputs[0]
    return (g * np.where(x <= -3, 0, np.where(x < 3, x / 3 + 0.5, 1)).astype(g.dtype, copy=False),)  # (torch 2.13:
    # the outer values at -3 and 3)


def _vjp_hardswish(ctx, g, inputs, out):
    from . import where
    x = inputs[0]
    return (g * where(x <= -3, 0.0, where(x < 3, x / 3 + 0.5, 1.0)),)


def _mish_forward(ctx, x):
    return x * np.tanh(np.logaddexp(0, x)).astype(x.dtype, copy=False)


def _mish_arrays(ctx, g, inputs, out, wanted):
    x = inputs[0]
    t = np.tanh(np.logaddexp(0, x))
    return ((g * (t + x * _sigmoid(x) * (1 - t * t))).astype(g.dtype, copy=False),)


def _vjp_mish(ctx, g, inputs, out):
    from . import softplus
    x = inputs[0]
    t = softplus(x).tanh()
    return (g * (t + x * x.sigmoid() * (1 - t * t)),)


def _glu_halves(ctx, x):
    n = x.shape[ctx.dim] // 2
    index = [slice(None)] * x.ndim
    a = x[tuple(index[:ctx.dim] + [slice(0, n)])]
    b = x[tuple(index[:ctx.dim] + [slice(n, None)])]
    return a, b


def _glu_forward(ctx, x):
    a, b = _glu_halves(ctx, x)
    return a * _sigmoid(b)


def _glu_arrays(ctx, g, inputs, out, wanted):
    a, b = _glu_halves(ctx, inputs[0])
    s = _sigmoid(b)
    return (np.concatenate([g * s, g * a * s * (1 - s)], ctx.dim).astype(g.dtype, copy=False),)


def _vjp_glu(ctx, g, inputs, out):
    from . import cat
    a, b = _glu_halves(ctx, inputs[0])
    s = b.sigmoid()
    return (cat([g * s, g * a * s * (1 - s)], ctx.dim),)


registry.python("prelu", "PreluKernelBackward0", _prelu_forward, _vjp_prelu, array_vjp=_prelu_arrays)
registry.python("hardswish", "HardswishBackward0", _hardswish_forward, _vjp_hardswish,
                array_vjp=_hardswish_arrays)
registry.python("mish", "MishBackward0", _mish_forward, _vjp_mish, array_vjp=_mish_arrays)
registry.python("glu", "GluBackward0", _glu_forward, _vjp_glu, array_vjp=_glu_arrays)
registry.python("group_norm", "NativeGroupNormBackward0", _group_norm_forward, _vjp_group_norm,
                array_vjp=_group_norm_arrays)


def prelu(input, weight):
    x, w = _tensor(input), _tensor(weight)
    if autocast_state.dtype is not None:
        x, w = _autocast_lower(x, w)
    if x._data.dtype != w._data.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_dtype.scalar_type_name(x._data.dtype)} and "
                           f"{_dtype.scalar_type_name(w._data.dtype)}")
    if w.numel() != 1:
        if x.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        C = x.shape[1] if x.ndim >= 2 else 1
        if w.numel() != C:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{w.numel()} and channel size = {C}.")
    if w.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}")
    return _record(OPS["prelu"], _prelu_forward(None, x._data, w._data), (x, w))


def hardswish(input, inplace=False):
    x = _tensor(input)
    out = _record(OPS["hardswish"], _in_float32(lambda a: _hardswish_forward(None, a), x._data)
                  if _dtype.is_reduced_float(x._data.dtype) else _hardswish_forward(None, x._data), (x,))
    return x.copy_(out) if inplace else out


def mish(input, inplace=False):
    x = _tensor(input)
    out = _record(OPS["mish"], _mish_forward(None, x._data), (x,))
    return x.copy_(out) if inplace else out


def glu(input, dim=-1):
    from . import _dim
    x = _tensor(input)
    d = _dim(dim, x.ndim)
    if x.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {x.shape[d]}")
    ctx = registry.Ctx(dim=d)
    return _record(OPS["glu"], _glu_forward(ctx, x._data), (x,), aux=ctx)
