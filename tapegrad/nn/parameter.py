"""torch.nn.Parameter: a Tensor that a Module registers as one of its parameters; Buffer; and the lazy modules'
UninitializedParameter / UninitializedBuffer (torch.nn.parameter)."""
import numpy as np

from .. import _dtype, creation
from ..tape import NOT_A_SLOT
from ..tensor import Tensor, _new

__all__ = ["Parameter", "UninitializedParameter", "is_lazy", "Buffer", "UninitializedBuffer",
           "UninitializedTensorMixin"]


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
            if not _dtype.is_float(p._data.dtype):  # (float16 and bfloat16 too: ml_dtypes' kind is "V")
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


class UninitializedTensorMixin:
    """torch.nn.parameter.UninitializedTensorMixin: a tensor whose shape is decided later (materialize), then
    becoming `cls_to_become`. Until then it holds an empty array of its dtype."""

    def materialize(self, shape, device=None, dtype=None):
        """Create the storage (uninitialised values: the module's reset_parameters draws them) and turn into
        cls_to_become, keeping the object (so optimizers and state_dicts that hold it see the new data)."""
        if dtype is None:
            dtype = self.dtype
        new = creation.empty(tuple(shape), dtype=dtype, device=device)
        self._data = new._data
        self._slot = NOT_A_SLOT
        self._vc = None
        self._ensure_vc()
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes.")

    def numel(self):
        raise ValueError(_uninitialized_use(type(self).__name__, "<method 'numel' of 'torch._C.TensorBase' objects>"))

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize the "
            "parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


# torch lets an uninitialized tensor through __torch_function__ only for these (and its own slots); every other
# Tensor method raises its ValueError. tapegrad's functions read arrays directly, so the guard covers the methods
# (and operators) only: an F.* call on one computes on its empty array instead.
_ALLOWED = {"size", "copy_", "is_complex", "is_floating_point", "half", "float", "double", "char", "short", "int",
            "long", "cuda", "cpu", "to", "get_device", "materialize", "share_memory_", "numel"}
_OPERATORS = {"__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub", "__isub__": "sub_",
              "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div", "__itruediv__": "div_",
              "__matmul__": "matmul", "__rmatmul__": "matmul", "__pow__": "pow", "__neg__": "neg", "__abs__": "abs"}
_SLOTS = ("__getitem__", "__setitem__")


def _refuse(name, func):
    def method(self, *args, **kwargs):
        raise ValueError(_uninitialized_use(type(self).__name__, func))
    method.__name__ = name
    return method


def _install_guards():
    """Put the refusing methods on the mixin, once, at the first uninitialized tensor (so that the methods the op
    modules bind to Tensor after this module's import are covered too)."""
    if "_guarded" in UninitializedTensorMixin.__dict__:
        return
    for name, value in list(vars(Tensor).items()):
        if name in _ALLOWED or name in UninitializedTensorMixin.__dict__ or not callable(value) \
                or isinstance(value, (property, staticmethod, classmethod)):
            continue
        if name in _OPERATORS:
            func = f"<method '{_OPERATORS[name]}' of 'torch._C.TensorBase' objects>"
        elif name in _SLOTS:
            func = f"<slot wrapper '{name}' of 'torch._C.TensorBase' objects>"
        elif name.startswith("_"):
            continue
        else:
            func = f"<method '{name}' of 'torch._C.TensorBase' objects>"
        setattr(UninitializedTensorMixin, name, _refuse(name, func))
    UninitializedTensorMixin._guarded = True


def _uninitialized_use(cls_name, func):
    return (f"Attempted to use an uninitialized parameter in {func}. This error happens when you are using a "
            f"`LazyModule` or explicitly manipulating `torch.nn.parameter.{cls_name}` objects. When using LazyModules "
            f"Call `forward` with a dummy batch to initialize the parameters before calling torch functions")


def is_lazy(param):
    """torch.nn.parameter.is_lazy: whether param is an uninitialized parameter or buffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """torch.nn.parameter.UninitializedParameter: a Parameter whose shape the first forward decides."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        _install_guards()
        p = Parameter.__new__(cls, creation.empty(0, dtype=dtype, device=device), requires_grad)
        return p

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, None, self.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """torch.nn.parameter.UninitializedBuffer: a buffer whose shape the first forward decides; it becomes a plain
    Tensor."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        _install_guards()
        data = creation.empty(0, dtype=dtype, device=device)
        b = Tensor.__new__(cls)
        b._data = data._data
        b._vc = data._ensure_vc()
        b._requires_grad = bool(requires_grad)
        b.persistent = persistent
        b._is_buffer = True
        return b

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, None, self.dtype, self.persistent)
        memo[id(self)] = result
        return result
