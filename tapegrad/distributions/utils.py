"""torch.distributions.utils: broadcasting parameters, probabilities <-> logits, lazy properties."""
from functools import lru_cache, update_wrapper
from numbers import Number

import numpy as np
from .. import random as _random
from .._dtype import finfo, to_numpy_dtype
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor, _new

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property", "tril_matrix_to_vec",
           "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler Mascheroni Constant


def _tg():
    import tapegrad
    return tapegrad


def broadcast_all(*values):
    """Broadcast tensors and numbers to one shape; numbers become tensors of the first tensor's dtype (or the
    default dtype)."""
    if _tensors_of_one_shape(values):  # (the common call: nothing to convert or expand)
        return values
    tg = _tg()
    if not all(isinstance(v, (tg.Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects implementing "
                         "__torch_function__.")
    if not all(isinstance(v, tg.Tensor) for v in values):
        dtype = tg.get_default_dtype()
        for v in values:
            if isinstance(v, tg.Tensor):
                dtype = v.dtype
                break
        values = [v if isinstance(v, tg.Tensor) else tg.tensor(v, dtype=dtype) for v in values]
    shape = np.broadcast_shapes(*(tuple(v.shape) for v in values))
    return tuple(v if tuple(v.shape) == shape else v.expand(shape) for v in values)


def _tensors_of_one_shape(values):
    if not values or not isinstance(values[0], Tensor):
        return False
    shape = values[0].shape
    for v in values[1:]:
        if not isinstance(v, Tensor) or v.shape != shape:
            return False
    return True


def _standard_normal(shape, dtype, device=None):
    """torch.empty(shape, dtype=dtype).normal_()."""
    return _new(_random.normal(tuple(shape), None, to_numpy_dtype(dtype)))


def _sum_rightmost(value, dim):
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


@lru_cache(maxsize=None)
def _eps(dtype):
    return float(finfo(dtype).eps)  # (torch.finfo's: NumPy's finfo refuses ml_dtypes' bfloat16)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return _tg().sigmoid(logits)
    return _tg().nn.functional.softmax(logits, dim=-1)


def clamp_probs(probs):
    eps = _eps(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    tg = _tg()
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return tg.log(ps_clamped) - tg.log1p(-ps_clamped)
    return tg.log(ps_clamped)


class lazy_property:
    """A property computed once, on first access, with grad enabled, then stored on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:  # (read on the class by every validating __init__: made once)
            view = self.__dict__.get("_class_view")
            if view is None:
                view = self.__dict__["_class_view"] = _lazy_property_and_property(self.wrapped)
            return view
        if is_grad_enabled():
            value = self.wrapped(instance)
        else:
            with _tg().enable_grad():
                value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _tril_mask(n, diag):
    arange = np.arange(n)
    return arange < arange.reshape(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The lower-triangular elements of a (batch of) D x D matrix, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tg().tensor(_tril_mask(n, diag))]


def vec_to_tril_matrix(vec, diag=0):
    """A (batch of) lower-triangular D x D matrix filled row by row from the last dim of vec."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    mat[..., _tg().tensor(_tril_mask(n, diag))] = vec
    return mat
