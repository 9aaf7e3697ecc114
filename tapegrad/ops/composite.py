"""torch functions composed of other ops: no rows, rules or kernels of their own (a gradient is that of the ops
they call), as tinygrad builds its wide API on a small set of primitives; and torch's aliases."""
import itertools
import warnings

import numpy as np

from .. import _dtype, random
from ..creation import _linspace
from ..grad_mode import is_grad_enabled
from ..tape import untraceable
from ..tensor import Size, Tensor, _new
from ._common import _dim, _sizes, _sizes_or_keyword, _tensor, broadcast_shape, scalar_to_dtype
from .elementwise import div, logical_xor, mul, sub, where
from .arrange import _scaled_sum, autocast_input
from .linalg import matmul
from .shape import cat, index_select, masked_fill
from .._warnings import user_stacklevel

__all__ = ["addcdiv", "addcmul", "addmm", "bernoulli", "broadcast_shapes", "broadcast_tensors", "broadcast_to", "diff",
           "divide", "gradient", "is_floating_point", "is_nonzero", "masked_select", "meshgrid", "multiply", "nonzero",
           "repeat_interleave", "subtract", "tile"]

multiply, subtract, divide = mul, sub, div
INPLACE = ()  # (methods with in-place forms, made by methods.py)


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2 (in torch's order: (value * tensor1) * tensor2)."""
    t1 = _tensor(tensor1)
    if type(value) in (int, float) and value != 1:  # (an integer result's value a Scalar in its dtype, as torch's)
        value = scalar_to_dtype(value, _dtype.result_type(_tensor(input)._data, t1._data, _tensor(tensor2)._data))
    return _tensor(input) + (t1 if value == 1 else t1 * value) * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (in torch's order: (value * tensor1) / tensor2)."""
    t1 = _tensor(tensor1)
    return _tensor(input) + (t1 if value == 1 else t1 * value) / tensor2


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2)."""
    m1, m2 = _tensor(mat1), _tensor(mat2)
    if m1.dim() != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {m1.dim()}-D tensor")
    if m2.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {m2.dim()}-D tensor")
    return _scaled_sum(autocast_input(input), matmul(m1, m2), beta, alpha)


def nonzero(input, *, as_tuple=False):
    """The indices of the nonzero elements, int64: (n, ndim), or one tensor per dimension (a 0-d input counts as
    1-d there, as in torch)."""
    a = _tensor(input)._data
    if as_tuple:
        return tuple(_new(i.astype(np.int64)) for i in np.nonzero(np.atleast_1d(a)))
    return _new(np.argwhere(a).astype(np.int64))


def masked_select(input, mask):
    """The elements of input where mask (broadcast with it) is True, as a 1-d tensor."""
    x, m = _tensor(input), _tensor(mask)
    if m._data.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shape(x._data.shape, m._data.shape)
    if x._data.shape != shape:
        x = x.expand(shape)
    if m._data.shape != shape:
        m = _new(np.broadcast_to(m._data, shape))
    return x[m]


def tile(input, *sizes, dims=None):
    """repeat, with dims padded by leading ones to the input's rank (torch.tile(x, dims), x.tile(*dims))."""
    x = _tensor(input)
    dims = _sizes(_sizes_or_keyword(sizes, dims, "tile", "dims"))
    return x.repeat(*((1,) * (x.dim() - len(dims)) + dims))


def unfold(self, dimension, size, step):
    """Tensor.unfold: the windows of `size` every `step` along a dimension, as a new last dimension (a copy, where
    torch's is a view: writes into it do not reach self)."""
    x = self
    d = _dim(dimension, max(x.dim(), 1))
    n = x.shape[d] if x.dim() else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if not x.dim():  # (a 0-d tensor's one window)
        return x.reshape(1)
    count = (n - size) // step + 1
    taken = index_select(x, d, _new((np.arange(count)[:, None] * step + np.arange(size)).reshape(-1)))
    windows = taken.reshape(tuple(x.shape[:d]) + (count, size) + tuple(x.shape[d + 1:]))
    return windows.movedim(d + 1, -1)


def broadcast_shapes(*shapes):
    out = ()
    for shape in shapes:
        out = broadcast_shape(out, (shape,) if isinstance(shape, int) else tuple(shape))
    return Size(out)


def broadcast_to(input, size):
    return _tensor(input).expand(*size)


def broadcast_tensors(*tensors):
    tensors = tuple(_tensor(t) for t in tensors)
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t if t.shape == shape else t.expand(*shape) for t in tensors)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 1-d tensors (expands: gradients sum back), 'ij' (the default) or 'xy'."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=user_stacklevel())
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    ts = [_tensor(t) for t in tensors]
    for t in ts:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    grids = [t.reshape(*[-1 if i == k else 1 for i in range(len(ts))]).expand(*shape) for k, t in enumerate(ts)]
    if swap:  # (the first two inputs swapped, then their grids: shape (len(y), len(x), ...))
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (prepend/append joined first)."""
    x = _tensor(input)
    if x.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _dim(dim, x.dim())
    parts = [_tensor(p) for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = cat(parts, d)
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        # (bool: torch's logical_xor, as `-` of two bool tensors is an error)
        x = (logical_xor if x._data.dtype == np.bool_ else sub)(x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1))
    return x


def gradient(input, *, spacing=None, dim=None, edge_order=1):
    """torch.gradient: the derivative of input estimated by central differences inside and one-sided (edge_order 1)
    or second-order (2) differences at the ends, along dim (an int, a list, or None: every dim); spacing: a number
    (the sample distance), a list of numbers (one per dim) or a list of 1-d coordinate tensors. A tuple, one tensor
    per dim; ATen's formulas in its order of operations (ReduceOps.cpp), so the gradients are those of the ops."""
    x = _tensor(input)
    listed = isinstance(dim, (list, tuple))
    dims = [int(d) for d in dim] if listed else [int(dim)] if dim is not None else list(range(x.ndim))
    if isinstance(spacing, Tensor):
        raise TypeError(f"gradient() received an invalid combination of arguments - got (Tensor, "
                        f"{'dim=' + type(dim).__name__ + ', ' if dim is not None else ''}spacing=Tensor)")
    if isinstance(spacing, (list, tuple)):
        spacing = list(spacing)
        if dim is None and len(spacing) != x.ndim:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to 'self.dim() = {x.ndim}', since dim argument was not given, but got a list "
                               f"of length {len(spacing)}")
        if dim is not None and len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                               f"arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
    else:
        spacing = [1.0 if spacing is None else spacing] * len(dims)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    wrapped = [_dim(d, x.ndim) for d in dims]
    for d in wrapped:
        if wrapped.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    for d in wrapped:
        if x.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    out = []
    for d, h in zip(wrapped, spacing):
        def at(start, stop=None, n=x.shape[d]):  # (x[..., start:stop] along d)
            start, stop = start + n if start < 0 else start, n if stop is None else stop + n if stop < 0 else stop
            return x.narrow(d, start, stop - start)
        if isinstance(h, Tensor):
            if h.ndim != 1:
                raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, but got "
                                   f"an element with {h.ndim} dimensions!")
            shape = [1] * x.ndim
            shape[d] = -1
            ax = h.diff(1, 0)
            dx1, dx2 = ax[:-1], ax[1:]
            a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
            b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
            c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
            center = a * at(0, -2) + b * at(1, -1) + c * at(2)
            if edge_order == 1:
                first = (at(1, 2) - at(0, 1)) / ax[0]
                last = (at(-1) - at(-2, -1)) / ax[-1]
            else:
                a = -(2.0 * ax[0] + ax[1]) / (ax[0] * (ax[0] + ax[1]))
                b = (ax[0] + ax[1]) / (ax[0] * ax[1])
                c = (-ax[0]) / (ax[1] * (ax[0] + ax[1]))
                first = a * at(0, 1) + b * at(1, 2) + c * at(2, 3)
                a = ax[-1] / (ax[-2] * (ax[-1] + ax[-2]))
                b = -(ax[-1] + ax[-2]) / (ax[-1] * ax[-2])
                c = (2 * ax[-1] + ax[-2]) / (ax[-1] * (ax[-1] + ax[-2]))
                last = a * at(-3, -2) + b * at(-2, -1) + c * at(-1)
        else:
            center = div(at(2) - at(0, -2), h) / 2
            if edge_order == 1:
                first = div(at(1, 2) - at(0, 1), h)
                last = div(at(-1) - at(-2, -1), h)
            else:
                first = div(at(0, 1) * -1.5 + at(1, 2) * 2.0 - at(2, 3) * 0.5, h)
                last = div(at(-3, -2) * 0.5 + at(-2, -1) * -2.0 + at(-1) * 1.5, h)
        out.append(cat([first, center, last], d))
    return tuple(out)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (or slice along dim) repeated `repeats` times; an index_select, so gradients sum back."""
    if repeats is None:  # torch.repeat_interleave(repeats): the indices repeated by their counts
        counts = _tensor(input)._data
        return _new(np.repeat(np.arange(counts.size, dtype=np.int64), counts.reshape(-1)))
    x = _tensor(input)
    if dim is None:
        x, d = x.reshape(-1), 0
    else:
        d = _dim(dim, max(x.dim(), 1))
    n = x.shape[d] if x.dim() else 1
    if isinstance(repeats, Tensor):
        untraceable("repeat_interleave by a tensor of counts (its output's shape is the counts' values)")
        counts = repeats._data.reshape(-1)
    else:
        counts = np.asanyarray(repeats).reshape(-1)
    if counts.size not in (1, n):
        raise RuntimeError("repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{counts.size} and input.size({d}) = {n}")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    index = np.repeat(np.arange(n, dtype=np.int64), np.broadcast_to(counts, (n,)))
    return index_select(x if x.dim() else x.reshape(1), d, _new(index))


def is_floating_point(input):
    return _tensor(input).is_floating_point()


def is_nonzero(input):
    x = _tensor(input)
    if x.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if x.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return x.item() != 0  # (.item(): a value read, which tapegrad.compile sees)


def bernoulli(input, p=None, *, generator=None):
    """0/1 draws with the probabilities in input (or the float p), in input's dtype: torch's streams."""
    x = _tensor(input)
    untraceable("a random draw (bernoulli)")
    if p is not None:
        return _new(random.bernoulli_scalar(x._data.shape, float(p), generator, x._data.dtype))
    random.require_float("bernoulli_tensor_cpu_p_", x._data.dtype)
    out = _new(random.bernoulli(x._data, generator))
    if is_grad_enabled() and x._requires_grad:  # (torch's BernoulliBackward0: a zero gradient)
        return out + mul(x, 0)
    return out


Tensor.addcmul = addcmul
Tensor.addcdiv = addcdiv
Tensor.addmm = addmm
Tensor.nonzero = nonzero
Tensor.masked_select = masked_select
Tensor.tile = tile
Tensor.diff = diff
Tensor.repeat_interleave = repeat_interleave
Tensor.broadcast_to = broadcast_to
Tensor.unfold = unfold
Tensor.is_nonzero = is_nonzero
Tensor.bernoulli = bernoulli
Tensor.ndimension = Tensor.dim
Tensor.nbytes = property(lambda self: self._data.nbytes)
Tensor.itemsize = property(lambda self: self._data.itemsize)


# -- spatial transformers: F.affine_grid and F.grid_sample (2-D), composed of matmul, indexing and arithmetic -----
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _base_coords(steps, align_corners, dtype):
    """The normalized centres of `steps` pixels, as torch's affine_grid_generator lays them out."""
    if steps <= 1:
        return np.zeros(max(steps, 0), dtype)
    # torch.linspace's values, then `* (steps - 1) / steps` rounded twice, as torch's linspace_from_neg_one: a grid
    # one ulp off moves a sample at a pixel centre to the other side of it, and grid_sample's gradient with it
    c = _linspace(-1, 1, steps, dtype) if dtype in (np.float32, np.float64) else np.linspace(-1, 1, steps, dtype=dtype)
    return c if align_corners else c * dtype(steps - 1) / dtype(steps)


def affine_grid(theta, size, align_corners=None):
    """Sampling grids (N, H, W, 2) of the affine maps theta (N, 2, 3) over an output of size (N, C, H, W), or
    (N, D, H, W, 3) of theta (N, 3, 4) over (N, C, D, H, W)."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=user_stacklevel())
        align_corners = False
    t = _tensor(theta)
    if not t.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {t.dtype}")
    given, size = size, tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {given}.")
    d = len(size) - 2  # (2-D maps are N x 2 x 3, 3-D ones N x 3 x 4)
    if t.dim() != 3 or t.shape[-2] != d or t.shape[-1] != d + 1:
        raise ValueError(f"Expected a batch of {d}D affine matrices of shape Nx{d}x{d + 1} for size {given}. Got "
                         f"{t.shape}.")
    if align_corners and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=user_stacklevel())
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {given}")
    n, spatial = size[0], size[2:]
    dt = t._data.dtype.type
    base = np.empty((n,) + spatial + (d + 1,), t._data.dtype)
    for k in range(d):  # (component k, x then y then z, runs along spatial axis d - 1 - k)
        axis = d - 1 - k
        base[..., k] = _base_coords(spatial[axis], align_corners, dt).reshape((-1,) + (1,) * (d - 1 - axis))
    base[..., d] = 1
    return matmul(_new(base.reshape(n, -1, d + 1)), t.transpose(1, 2)).reshape(n, *spatial, d)


def _unnormalize(coord, steps, align_corners):
    """Pixel coordinates as torch's CPU grid sampler computes them (GridSamplerKernel.cpp): (c + 1) times half the
    size less one, or (c + 1) times half the size less 0.5, fused where torch's kernel is (random._madd: its AVX2
    build, not its baseline one). Where a sample lies on a pixel centre (the spatial transformer's identity map)
    the last bit picks the side of its one-sided gradient."""
    shifted = coord + 1
    if align_corners:
        return shifted * ((steps - 1) / 2)
    out = shifted * (steps / 2) - 0.5
    if out._data.dtype in (np.float32, np.float64):  # (the sub's rule reads no value: rewritten before a row does)
        out._data[...] = random._madd(shifted._data, steps / 2, -0.5, out._data.dtype)
    return out


def _clipped(c, size):
    """torch's clip_coordinates (GridSamplerKernel.cpp) of an array: into [0, size - 1], NaN to 0."""
    return np.where(np.isnan(c), 0, np.clip(c, 0, size - 1)).astype(c.dtype)


def _clip(coord, size):
    """_clipped of a coordinate tensor; its gradient passes strictly inside only (the kernel counts the borders as
    out of bounds, where clamp's passes them)."""
    c = coord._data
    return where(_new((c > 0) & (c < size - 1)), coord, _new(_clipped(c, size)))


def _reflect(coord, size, align_corners):
    """torch's reflect_coordinates: mirrored at the pixel centres of the borders (align_corners) or at their edges
    until it lies inside, then clipped; each mirror multiplies the gradient by -1, with the kernel's sign at the
    mirror itself (+1, where abs's gradient is 0)."""
    c = coord._data
    if align_corners and size <= 1:  # (an empty span: every coordinate is 0, with no gradient)
        return where(_new(np.ones(c.shape, np.bool_)), _new(np.zeros_like(c)), coord)
    low, twice_span = (0.0, 2.0 * (size - 1)) if align_corners else (-0.5, 2.0 * size)
    span = c.dtype.type(twice_span)
    shifted = coord - low if low else coord
    d = shifted._data
    distance = shifted * _new(np.where(d < 0, -1, 1).astype(c.dtype))
    extra = distance - _new(np.trunc(distance._data / span) * span)
    mirrored = twice_span - extra
    out = where(_new(extra._data > mirrored._data), mirrored, extra)
    return _clip(out + low if low else out, size)


def _bicubic(x, ix, iy, padding_mode, align_corners):
    """grid_sample's bicubic mode as torch's kernel: the 4 x 4 taps around each sample (each padded on its own),
    weighted by cubic convolution along x, then along y; gradients for the input and (through the weights) the grid."""
    n, c, h, w = x.shape
    pixels = x.permute(0, 2, 3, 1)
    batch = np.arange(n).reshape(n, 1, 1)
    x0, y0 = np.floor(ix._data), np.floor(iy._data)
    wx = _cubic_coefficients(ix - _new(x0))
    wy = _cubic_coefficients(iy - _new(y0))
    out = None
    for i in range(4):
        ys = _tap_coordinates(y0 + (i - 1), h, padding_mode, align_corners)
        row = None
        for j in range(4):
            xs = _tap_coordinates(x0 + (j - 1), w, padding_mode, align_corners)
            with np.errstate(invalid="ignore"):  # (a NaN or infinite coordinate reads nothing: masked out)
                xi, yi = xs.astype(np.int64), ys.astype(np.int64)
                inside = (xs > -1) & (xs < w) & (ys > -1) & (ys < h)
            values = pixels[batch, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]
            term = values * (wx[j] * _new(inside.astype(x._data.dtype))).unsqueeze(-1)
            row = term if row is None else row + term
        term = row * wy[i].unsqueeze(-1)
        out = term if out is None else out + term
    return out.permute(0, 3, 1, 2)


def _tap_coordinates(c, size, padding_mode, align_corners):
    """torch's compute_coordinates on a bicubic tap's coordinate (an array: no gradient flows through a tap's
    position): clipped (border), or mirrored then clipped (reflection), or as it is (zeros)."""
    if padding_mode == "zeros":
        return c
    if padding_mode == "reflection":
        if align_corners and size <= 1:
            return np.zeros_like(c)
        low, twice_span = (0.0, 2.0 * (size - 1)) if align_corners else (-0.5, 2.0 * size)
        span = c.dtype.type(twice_span)
        distance = np.abs(c - c.dtype.type(low))
        extra = distance - np.trunc(distance / span) * span
        c = np.minimum(extra, span - extra) + c.dtype.type(low)
    return _clipped(c, size)


def _cubic_coefficients(t):
    """torch's get_cubic_upsample_coefficients (A = -0.75) of the fractional offsets t, in its order of operations."""
    A = -0.75
    x = t + 1
    far_left = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    near_left = ((A + 2) * t - (A + 3)) * t * t + 1
    x = 1 - t
    near_right = ((A + 2) * x - (A + 3)) * x * x + 1
    x = 2 - t
    far_right = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return far_left, near_left, near_right, far_right


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """input (N, C, H, W) read at grid (N, Ho, Wo, 2) (x, y in [-1, 1]): bilinear, nearest or bicubic; zeros, border
    or reflection padding (torch's kernel's coordinates and gradient multipliers); gradients for input and (bilinear,
    bicubic) grid."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=user_stacklevel())
        align_corners = False
    x, g = _tensor(input), _tensor(grid)
    untraceable("grid_sample (the pixels it reads are chosen by the grid's values)")
    _check_grid_sampler(x, g, mode)
    n, spatial = x.shape[0], tuple(x.shape[2:])
    d = len(spatial)
    # coords[k] is the grid's k-th component (x, y, z) in pixels: it indexes spatial axis d - 1 - k (W, H, D)
    coords = [_unnormalize(g[..., k], spatial[d - 1 - k], align_corners) for k in range(d)]
    if mode == "bicubic":  # (padding applies to each tap, not to the sample's coordinate)
        return _bicubic(x, coords[0], coords[1], padding_mode, align_corners)
    if padding_mode == "border":
        coords = [_clip(c, spatial[d - 1 - k]) for k, c in enumerate(coords)]
    elif padding_mode == "reflection":
        coords = [_reflect(c, spatial[d - 1 - k], align_corners) for k, c in enumerate(coords)]
    pixels = x.permute(0, *range(2, d + 2), 1)  # (N, *spatial, C): one advanced index per corner gives (N, *out, C)
    batch = np.arange(n).reshape((n,) + (1,) * d)

    def read(index):  # index[k]: integer coordinates along the grid's k-th component
        inside = np.ones(index[0].shape, np.bool_)
        for k, i in enumerate(index):
            inside &= (i >= 0) & (i < spatial[d - 1 - k])
        at = tuple(np.clip(index[k], 0, spatial[d - 1 - k] - 1) for k in reversed(range(d)))
        return pixels[(batch,) + at], _new(inside.astype(x._data.dtype)[..., None])

    back = (0, d + 1) + tuple(range(1, d + 1))  # (N, *out, C) -> (N, C, *out)
    if mode == "nearest":  # (the grid's gradient is zeros, as torch's: a term of zeros that reads no value of it)
        values, inside = read([np.rint(c._data).astype(np.int64) for c in coords])
        zeros = masked_fill(g[..., :1], _new(np.ones(g.shape[:-1] + (1,), np.bool_)), 0)
        return (values * inside + zeros).permute(*back)
    low = [np.floor(c._data) for c in coords]
    below = [c - _new(f) for c, f in zip(coords, low)]  # (distances to the lower and the upper corner: weights)
    above = [_new(f + 1) - c for c, f in zip(coords, low)]
    out = None
    for corner in itertools.product((0, 1), repeat=d):  # (z, y, x) with x fastest, as torch sums its corners
        upper = corner[::-1]  # upper[k]: the corner's side along the grid's k-th component
        weight = None
        for k in range(d):
            factor = below[k] if upper[k] else above[k]
            weight = factor if weight is None else weight * factor
        values, inside = read([(low[k] + upper[k]).astype(np.int64) for k in range(d)])
        term = values * (weight.unsqueeze(-1) * inside)
        out = term if out is None else out + term
    return out.permute(*back)


def _check_grid_sampler(x, g, mode):
    """torch's checks (GridSamplerUtils.h), in its order."""
    sizes = f"input with sizes {list(x.shape)} and grid with sizes {list(g.shape)}"
    if x.dim() and g.dim() and g.shape[0] != x.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got {sizes}")
    if not g.dim() or g.shape[-1] != x.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {x.dim() - 2} in last dimension, but got grid "
                           f"with sizes {list(g.shape)}")
    for i in range(2, x.dim()):
        if x.shape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(x.shape)} with dimension {i} being empty")
    dims = 4 if x.dim() == 4 else 5
    if x.dim() != dims or g.dim() != dims:
        raise RuntimeError(f"grid_sampler(): expected {dims}D input and grid with same number of dimensions, but got "
                           f"{sizes}")
    if dims == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")

