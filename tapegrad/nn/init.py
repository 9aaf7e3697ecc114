"""torch.nn.init: fill tensors in place (no history is recorded), with torch's formulas and errors."""
import math
import warnings

import numpy as np

from .. import _strides, random
from ..creation import empty_like
from ..grad_mode import no_grad
from ..ops.elementwise import where
from ..ops.shape import _check_writable, _written
from .._meta import MetaArray
from ..tensor import Tensor, VIEWS
from .._warnings import user_stacklevel

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_"]


def _write(tensor, values):
    """Store values into tensor's storage in place and bump its version, as torch's in-place fills do."""
    data = tensor._data
    if type(data) is MetaArray:
        return tensor  # (a meta tensor has no data: torch's init functions leave it as it is)
    if not data.flags.writeable:
        raise RuntimeError("tapegrad: this tensor's memory is read-only (it came from a read-only array)")
    _check_writable(tensor)
    np.copyto(data, values, casting="unsafe")
    tensor._bump_version()
    if tensor._window is not None or VIEWS:
        _written(tensor)  # (a view's base sees it: `init.orthogonal_(w[:n])`)
    return tensor


def _check(tensor):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"expected a Tensor, got {type(tensor).__name__}")


def _uniform_values(shape, a, b, dtype, generator):
    """torch's Tensor.uniform_(a, b) values for a tensor of this dtype (the same draws from the same seed)."""
    return random.uniform(shape, generator, random.fill_dtype(dtype), low=a, high=b)


def _normal_values(shape, mean, std, dtype, generator):
    return random.normal(shape, generator, random.fill_dtype(dtype), mean=mean, std=std)


def _meta(tensor):
    """A meta tensor: nothing to draw (the generator's state is left as it is, as torch's)."""
    return type(tensor._data) is MetaArray


def _uniform(tensor, a, b, generator):
    _check(tensor)
    if _meta(tensor):
        return tensor
    dtype = tensor._data.dtype  # (a tensor's fill walks its memory: random.in_memory_order)
    return _write(tensor, random.in_memory_order(tensor._data.shape, tensor._strides,
                                                 lambda s: _uniform_values(s, a, b, dtype, generator)))


def _normal(tensor, mean, std, generator):
    _check(tensor)
    if _meta(tensor):
        return tensor
    dtype = tensor._data.dtype
    serial = not _strides.is_contiguous(tensor._data.shape, tensor._strides)  # (torch's fill: contiguous ones)
    return _write(tensor, random.in_memory_order(tensor._data.shape, tensor._strides, lambda s: random.normal(
        s, generator, random.fill_dtype(dtype), mean=mean, std=std, serial=serial)))


def calculate_gain(nonlinearity, param=None):
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return _uniform(tensor, a, b, generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return _normal(tensor, mean, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """torch 2.13's algorithm in its own ops, so the same draws land in the same places: where [a, b] holds more
    than 0.3 of the mass, normal values, each rejected one replaced from a whole new draw (torch.where); else
    uniform candidates in [a, b] accepted by comparing a uniform's log with the log-density."""
    _check(tensor)
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=user_stacklevel())
    if _meta(tensor):
        return tensor

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    with no_grad():
        if norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std) > 0.3:
            lo, hi = tensor.new_tensor(a).item(), tensor.new_tensor(b).item()  # (the bounds in the tensor's dtype)
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                mask = (result < lo) | (result > hi)
                if not mask.any():
                    break
                # (torch's where keeps the tensor's layout, so its empty_like(result) is laid out as the tensor)
                result = where(mask, empty_like(tensor).normal_(mean, std, generator=generator), result)
            if tensor is not result:
                tensor.copy_(result)
            return tensor
        log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2
        candidates, accept_buf = empty_like(tensor), empty_like(tensor)
        tensor.uniform_(a, b, generator=generator)
        candidates.copy_(tensor)
        candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
        pending = accept_buf.uniform_(generator=generator).log_().gt(candidates)
        if pending.any():
            result = tensor
            while True:
                candidates.uniform_(a, b, generator=generator)
                result = where(pending, candidates, result)
                candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
                pending = where(pending, accept_buf.uniform_(generator=generator).log_().gt(candidates), pending)
                if not pending.any():
                    break
            tensor.copy_(result)
    return tensor


def constant_(tensor, val):
    _check(tensor)
    return _write(tensor, val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    _check(tensor)
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, np.eye(*tensor._data.shape))


def dirac_(tensor, groups=1):
    _check(tensor)
    dimensions = tensor.ndim
    if dimensions not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor._data.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    values = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _write(tensor, values)


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return tensor.shape[1] * receptive_field_size, tensor.shape[0] * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return _uniform(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _normal(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=user_stacklevel())
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(fan)
    return _uniform(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=user_stacklevel())
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    return _normal(tensor, 0, gain / math.sqrt(fan), generator)


def orthogonal_(tensor, gain=1, generator=None):
    _check(tensor)
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0 or _meta(tensor):
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    # torch draws in the tensor's dtype (its stream for float32 is not float64's) and factors that; the
    # factorisation here is float64's
    flat = _normal_values((rows, cols), 0.0, 1.0, tensor._data.dtype, generator).astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (gain * q).reshape(tensor._data.shape))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """torch's draws: normal values from `generator`, then each column's zeroed rows by randperm from the
    default generator (torch passes it no generator)."""
    _check(tensor)
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    if _meta(tensor):
        return tensor
    rows, cols = tensor._data.shape
    num_zeros = math.ceil(sparsity * rows)
    values = _normal_values((rows, cols), 0.0, std, tensor._data.dtype, generator)
    for col in range(cols):
        values[random.permutation(rows, None)[:num_zeros], col] = 0
    return _write(tensor, values)


def _deprecated(new):
    """torch's old names without the underscore: the same fill, with its FutureWarning."""
    old = new.__name__[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.", FutureWarning,
                      stacklevel=user_stacklevel())
        return new(*args, **kwargs)
    deprecated_init.__name__ = old
    deprecated_init.__doc__ = f"{old}(...): deprecated in favor of {new.__name__}."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
