"""Random draws on torch's CPU streams (tapegrad.random): torch.normal's four overloads, poisson, binomial,
randint_like, rrelu, and the feature / alpha dropouts; the F-level forms (F.rrelu, F.alpha_dropout,
F.feature_alpha_dropout, F.dropout3d, F.gumbel_softmax) are here too, under `functional_*` names that
nn/functional.py imports under torch's.

Each value is drawn in NumPy exactly as ATen's CPU kernel draws it, then joined to its inputs by recorded ops:
torch's normal and poisson have zero gradients (derivatives.yaml: zeros_like), written here as a `sign(x) * 0`
term (zero for every finite or infinite x, so the value is untouched); binomial's gradient raises torch's "not
implemented" error (a hook on the result); rrelu and the alpha dropouts are `x * noise (+ b)` with constant
noise, as torch's backward (grad * noise) is. The draws are not traced: a tapegrad.compile'd function that makes
them runs eagerly, as with any direct generator draw (tape.untraceable)."""
import math
import numbers
import warnings

import numpy as np

from .. import _dtype, random
from ..creation import _drawn, _finish, _float, _like_strides, _shape, zeros_like
from .. import _meta
from ..device import cpu_only as _cpu_only, is_meta as _is_meta
from ..grad_mode import is_grad_enabled, no_grad
from ..tensor import Tensor, _new
from ._common import _tensor, broadcast_shape
from .elementwise import add, mul, sign
from .out import write_out
from .._warnings import user_stacklevel

__all__ = ["normal", "poisson", "binomial", "randint_like", "rrelu", "rrelu_", "alpha_dropout", "alpha_dropout_",
           "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout", "feature_dropout_"]
INPLACE = ()


def _zero_grad_link(value, *inputs):
    """value (a fresh tensor) joined to the inputs that require grad by terms whose gradient is zero."""
    if not is_grad_enabled():
        return value
    for x in inputs:
        if isinstance(x, Tensor) and x._requires_grad:
            term = sign(x) * 0
            if term.dtype != value.dtype:
                term = term.to(value.dtype)
            value = value + term
    return value


def _float_kernel(x, kernel):
    if not _dtype.is_float(x._data.dtype):
        random._not_implemented_for(kernel, x._data.dtype)


# -- torch.normal ------------------------------------------------------------------------------------------------
class _Unset:
    """std not given (normal(mean_tensor) means std=1; normal(float) alone is torch's TypeError)."""

    def __repr__(self):
        return "<not given>"


_UNSET = _Unset()


def normal(mean, std=_UNSET, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False):
    """torch.normal: (Tensor mean, Tensor std), (Tensor mean, float std=1), (float mean, Tensor std) and
    (float mean, float std, size). ATen fills the output with normal_(0, 1) (normal_(0, std) for a float std),
    then multiplies by std and adds mean in place, in the output's dtype; gradients to mean and std are zero."""
    if device is not None:
        _cpu_only(device, "normal")
    if out is not None:
        if is_grad_enabled() and any(isinstance(t, Tensor) and t._requires_grad for t in (mean, std, out)):
            raise RuntimeError("normal(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        with no_grad():
            result = _normal(mean, std, size, generator, out.dtype, requires_grad, True)
        return write_out(out, result, "normal")
    return _normal(mean, std, size, generator, dtype, requires_grad, False)


def _normal(mean, std, size, generator, dtype, requires_grad, to_out):
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if std is _UNSET:
        if not mean_t:
            raise TypeError("normal() received an invalid combination of arguments - got (float), but expected "
                            "one of: (Tensor mean, Tensor std), (Tensor mean, float std), (float mean, Tensor std), "
                            "(float mean, float std, tuple of ints size)")
        std = 1.0
    if not mean_t and not std_t:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, float), but "
                            "expected one of: (float mean, float std, tuple of ints size, *, ...)")
        np_dtype = _float(dtype)
        shape = _shape((size,))
        mean, std = float(mean), float(std)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {random._g(std)}")
        return _drawn(_normal_fill, (shape, generator, np_dtype, mean, std), requires_grad)
    if size is not None:
        raise TypeError("normal() received an invalid combination of arguments: size is taken only with a float "
                        "mean and a float std")
    if mean_t and std_t:
        _check_std_tensor(std)
        shape = broadcast_shape(tuple(mean.shape), tuple(std.shape))
        out_dtype = mean._data.dtype if dtype is None or not to_out else dtype
    elif mean_t:
        std = float(std)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {random._g(std)}")
        shape, out_dtype = tuple(mean.shape), (mean._data.dtype if dtype is None or not to_out else dtype)
    else:
        _check_std_tensor(std)
        shape, out_dtype = tuple(std.shape), (std._data.dtype if dtype is None or not to_out else dtype)
    out_dtype = _dtype.to_numpy_dtype(out_dtype)
    if not _dtype.is_float(out_dtype):
        random._not_implemented_for("normal_kernel_cpu", out_dtype)
    with no_grad():
        if mean_t and not std_t:
            z = _new(random.normal(shape, generator, random.fill_dtype(out_dtype), mean=0.0, std=std))
            z.add_(mean.detach())
        else:
            z = _new(random.normal(shape, generator, random.fill_dtype(out_dtype)))
            z.mul_(std.detach())
            z.add_(mean.detach() if mean_t else _new(np.array(mean, out_dtype)))
    return _zero_grad_link(z, mean, std)


def _normal_fill(shape, generator, dtype, mean, std):
    return random.normal(shape, generator, dtype, mean=mean, std=std)


def _check_std_tensor(std):
    if std._data.dtype.kind == "c":
        raise RuntimeError("normal expects standard deviation to be non-complex")
    if std._data.size and not std._data.min() >= 0:
        raise RuntimeError("normal expects all elements of std >= 0.0")


# -- poisson, binomial, randint_like -----------------------------------------------------------------------------
def poisson(input, generator=None):
    """torch.poisson(input, generator=None): ATen's sample_poisson per element (tapegrad.random.poisson);
    the gradient to the rates is zero, as torch's."""
    x = _tensor(input)
    _float_kernel(x, "poisson_cpu")
    return _zero_grad_link(_new(random.poisson(x._data, generator)), x)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None, device=None,
                 requires_grad=False, memory_format=None):
    """torch.randint_like(input, high) / (input, low, high): empty_like(input, dtype).random_(low, high)."""
    meta = _is_meta(device) if device is not None else input.is_meta  # (None: the input's device)
    if high is None:
        low, high = 0, low
    np_dtype = _tensor(input)._data.dtype if dtype is None else _dtype.to_numpy_dtype(dtype)
    shape = tuple(input.shape)
    if meta:  # (nothing drawn, as torch's)
        return _finish(_meta.make(shape, np_dtype), None, requires_grad)
    low, high = _int_arg(low, "low"), _int_arg(high, "high")
    strides = _like_strides(_tensor(input), memory_format)  # (empty_like's, then random_: drawn in memory order)
    value = random.in_memory_order(shape, strides, lambda s: random.random_range(s, low, high, generator, np_dtype))
    t = _finish(value, None, requires_grad)
    t._strides = strides
    return t


def _int_arg(v, name):
    if isinstance(v, Tensor):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        if isinstance(v, numbers.Real) and float(v).is_integer():
            return int(v)
        raise TypeError(f"randint_like(): argument '{name}' must be int, not {type(v).__name__}")
    return int(v)


# -- rrelu -------------------------------------------------------------------------------------------------------
def _rrelu(input, lower, upper, training, generator, inplace):
    x = _tensor(input)
    lower, upper = float(lower), float(upper)
    if not lower <= upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    dt = x._data.dtype
    opmath = np.float64 if dt == np.float64 else np.float32
    if not training:
        if not _dtype.is_float(dt):
            random._not_implemented_for("leaky_relu_cpu", dt)
        # torch's leaky_relu(x, (lower + upper) / 2), forward and backward, is x * s and grad * s with s rounded
        # to the opmath type: a multiplication by a constant noise of s and 1 is exactly that.
        noise = np.where(x._data > 0, 1, opmath((lower + upper) / 2)).astype(opmath)
        return _times_noise(x, noise, inplace)
    if not _dtype.is_float(dt) or dt == np.float16:
        random._not_implemented_for("rrelu_with_noise_out_cpu", dt)
    return _times_noise(x, _rrelu_noise(x._data, lower, upper, generator, opmath), inplace)


def _times_noise(x, noise, inplace):
    """x * noise, noise in the opmath type: float32 for float16 / bfloat16 inputs (computed in float, rounded once,
    as torch's kernels)."""
    if _dtype.is_reduced_float(x._data.dtype):
        result = mul(x.to(_dtype.float32), _new(noise)).to(x.dtype)
        return x.copy_(result) if inplace else result
    noise = _new(noise.astype(x._data.dtype))
    return x.mul_(noise) if inplace else mul(x, noise)


def _rrelu_noise(data, lower, upper, generator, opmath):
    """rrelu_with_noise's CPU loop: for each element in C order, x <= 0 draws r = uniform(lower, upper) (one float64
    draw, u * (upper - lower) + lower, unfused, with lower and upper first rounded to the opmath type, float for
    float32) and writes x * r; others keep x (noise 1)."""
    flat = np.ascontiguousarray(data).reshape(-1)
    neg = flat <= 0
    u = random._gen(generator)._u53(int(neg.sum()))
    lower, upper = float(opmath(lower)), float(opmath(upper))
    noise = np.ones(flat.shape, opmath)
    noise[neg] = (u * (upper - lower) + lower).astype(opmath)
    return noise.reshape(data.shape)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """torch.rrelu(input, lower=1/8, upper=1/3, training=False, generator=None)."""
    return _rrelu(input, lower, upper, training, generator, False)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """torch.rrelu_ (F.rrelu_): rrelu written into input."""
    return _rrelu(input, lower, upper, training, generator, True)


def functional_rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """F.rrelu(input, lower=1/8, upper=1/3, training=False, inplace=False)."""
    return _rrelu(input, lower, upper, training, None, inplace)


# -- dropouts (ATen's _dropout_impl<feature, alpha, inplace>) ------------------------------------------------------
_ALPHA = 1.7580993408473766


def _dropout_impl(input, p, train, feature, alpha, inplace):
    x = _tensor(input)
    if not (p >= 0 and p <= 1):
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {random._g(p)}")
    if p == 0 or not train or x._data.size == 0:
        return x
    zero = _new(np.zeros((), x._data.dtype))
    if p == 1:
        return x.mul_(zero) if inplace else mul(x, zero)
    if feature:
        if x.ndim < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2)
    else:
        shape = tuple(x.shape)
    dt = x._data.dtype
    # noise.bernoulli_(1 - p) in the input's dtype (torch's serial kernel: one float64 draw an element)
    noise = _new(random.bernoulli_scalar(shape, 1 - p, None, dt))
    with no_grad():
        if alpha:
            a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
            b = noise.add(-1).mul_(_ALPHA * a).add_(_ALPHA * a * p)
            noise.mul_(a)
        else:
            noise.div_(1 - p)
    if inplace:
        x.mul_(noise)
        return x.add_(b) if alpha else x
    y = mul(x, noise)
    return add(y, b) if alpha else y


def alpha_dropout(input, p, train):
    """torch.alpha_dropout(input, p, train)."""
    return _dropout_impl(input, p, train, False, True, False)


def alpha_dropout_(input, p, train):
    return _dropout_impl(input, p, train, False, True, True)


def feature_alpha_dropout(input, p, train):
    """torch.feature_alpha_dropout(input, p, train): one alpha-dropout draw per (N, C) channel."""
    return _dropout_impl(input, p, train, True, True, False)


def feature_alpha_dropout_(input, p, train):
    return _dropout_impl(input, p, train, True, True, True)


def feature_dropout(input, p, train):
    """torch.feature_dropout(input, p, train): one dropout draw per (N, C) channel."""
    return _dropout_impl(input, p, train, True, False, False)


def feature_dropout_(input, p, train):
    return _dropout_impl(input, p, train, True, False, True)


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def functional_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """F.alpha_dropout(input, p=0.5, training=False, inplace=False)."""
    _check_p(p)
    return _dropout_impl(input, p, training, False, True, inplace)


def functional_feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """F.feature_alpha_dropout(input, p=0.5, training=False, inplace=False)."""
    _check_p(p)
    return _dropout_impl(input, p, training, True, True, inplace)


def functional_dropout3d(input, p=0.5, training=True, inplace=False):
    """F.dropout3d(input, p=0.5, training=True, inplace=False): feature dropout of (N, C, D, H, W), or of
    (C, D, H, W) as a batch of one."""
    _check_p(p)
    x = _tensor(input)
    dim = x.ndim
    if dim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {dim}-D input to dropout3d, which is deprecated and will result in "
                      f"an error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      f"inputs).", stacklevel=user_stacklevel())
    batched = dim == 5
    if not batched:
        x = x.unsqueeze_(0) if inplace else x.unsqueeze(0)
    result = _dropout_impl(x, p, training, True, False, inplace)
    if not batched:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


# -- gumbel_softmax ------------------------------------------------------------------------------------------------
def functional_gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """F.gumbel_softmax: torch's composition (empty_like(logits).exponential_().log() as the Gumbel noise;
    hard=True returns the one-hot y_hard - y_soft.detach() + y_soft, whose gradient is y_soft's)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=user_stacklevel())
    logits = _tensor(logits)
    gumbels = -_new(random.exponential(tuple(logits.shape), 1.0, None, logits._data.dtype)).log()
    gumbels = (logits + gumbels) / tau
    y_soft = gumbels.softmax(dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft


# -- binomial ----------------------------------------------------------------------------------------------------
_NO_DERIVATIVE = "derivative for aten::binomial is not implemented"


def binomial(count, prob, generator=None):
    """torch.binomial(count, prob, generator=None): ATen's sample_binomial per element (tapegrad.random.binomial),
    in count's dtype. As torch's, the result requires grad when an input does, and a backward through it raises."""
    for name, t in (("count", count), ("prob", prob)):
        if not isinstance(t, Tensor):
            raise TypeError(f"binomial(): argument '{name}' (position {1 if name == 'count' else 2}) must be Tensor, "
                            f"not {type(t).__name__}")
    for name, t in (("count", count), ("prob", prob)):
        if not _dtype.is_float(t._data.dtype):
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{_dtype.scalar_type_name(t._data.dtype)}")
    if prob._data.dtype != count._data.dtype:
        raise RuntimeError(f"Found dtype {_dtype.scalar_type_name(prob._data.dtype)} but expected "
                           f"{_dtype.scalar_type_name(count._data.dtype)}")
    if count._data.dtype not in (np.float32, np.float64):
        random._not_implemented_for("binomial_cpu", count._data.dtype)
    shape = broadcast_shape(tuple(count.shape), tuple(prob.shape))
    if shape != tuple(count.shape) and count._data.size:
        warnings.warn(f"An output with one or more elements was resized since it had shape {list(count.shape)}, "
                      f"which does not match the required output shape {list(shape)}. This behavior is deprecated, "
                      f"and in a future PyTorch release outputs will not be resized unless they have zero elements. "
                      f"You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
                      f"t.resize_(0).")
    value = _new(random.binomial(count._data, prob._data, generator))
    result = _zero_grad_link(value, count, prob)
    if result._requires_grad:  # (a gradient reaching it raises torch's error)
        result.register_hook(_refuse_gradient)
    return result


def _refuse_gradient(grad):
    raise RuntimeError(_NO_DERIVATIVE)
