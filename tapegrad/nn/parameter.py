"""torch.nn.Parameter: a Tensor that a Module registers as one of its parameters."""
import numpy as np

from ..tensor import Tensor, _new


class Parameter(Tensor):
    """A leaf Tensor that requires grad by default and that Modules collect in `parameters()`.

    `Parameter(data)` shares `data`'s storage (and version counter), as torch's does.
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _new(np.zeros((0,), np.float32))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        p = Tensor.__new__(cls)
        p._data = data._data
        p._vc = data._ensure_vc()
        if requires_grad:
            if p._data.dtype.kind != "f":
                raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
            p._requires_grad = True
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        p = Parameter(_new(self._data.copy()), self._requires_grad)
        if self._grad is not None:
            p._grad = _new(self._grad._data.copy())
        memo[id(self)] = p
        return p

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self._data, self._requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(_new(data), requires_grad)


class Buffer(Tensor):
    """torch.nn.Buffer: marks a tensor assigned to a Module attribute as a buffer."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _new(np.zeros((0,), np.float32))
        b = Tensor.__new__(cls)
        b._data = data._data
        b._vc = data._ensure_vc()
        b.persistent = persistent
        return b

    def __init__(self, data=None, *, persistent=True):
        pass
