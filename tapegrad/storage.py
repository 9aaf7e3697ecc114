"""torch.storage: a tensor's storage as torch shows it, over the memory tapegrad keeps. A tensor that is not a
view owns its value's array; a view's storage is its base's (its window lies in it: tensor.py), so storages
and data pointers compare as torch's do (`x.t().untyped_storage().data_ptr() == x.data_ptr()`).

UntypedStorage is the bytes, TypedStorage (Tensor.storage, deprecated in torch, with its warning) the elements.
Each reads the memory itself. Writing through a storage is refused (NotImplementedError): tapegrad's views hold
copies that a write must reach, and version counters it must bump, which only the tensors' own writes do.
Resizing, sharing across processes and the other storage methods torch has are not built: they raise
AttributeError naming them.
"""
import warnings

import numpy as np

from . import _dtype, _meta
from .device import CPU
from ._warnings import user_stacklevel

__all__ = ["TypedStorage", "UntypedStorage"]


class _Storage:
    __slots__ = ("_array",)

    def __init__(self, array):
        self._array = array  # (flat, C-contiguous: the owner's memory)

    device = property(lambda self: CPU)
    is_cuda = is_sparse = False

    def data_ptr(self):
        return self._array.__array_interface__["data"][0]

    def nbytes(self):
        return self._array.nbytes

    def element_size(self):
        return self._array.itemsize

    def size(self):
        return self._array.size

    def __len__(self):
        return self._array.size

    def __getitem__(self, i):
        return self._array[i].item() if isinstance(i, (int, np.integer)) else type(self)(self._array[i].copy())

    def __setitem__(self, i, value):
        raise NotImplementedError("tapegrad does not write through a tensor's storage: write the tensor itself "
                                  "(x[...] = value, x.copy_(...)), which its views and version counter follow")

    def tolist(self):
        return self._array.tolist()

    def __iter__(self):
        return iter(self.tolist())

    def _name(self):
        return f"{type(self).__module__.replace('tapegrad', 'torch')}.{type(self).__name__}"

    def __repr__(self):
        values = " " + "\n ".join(map(str, self.tolist()))
        return f"{values}\n[{self._name()}({self._what()}device=cpu) of size {len(self)}]"


class UntypedStorage(_Storage):
    """The bytes of a tensor's storage (torch.UntypedStorage): uint8 elements, element_size 1."""
    __slots__ = ()

    def _what(self):
        return ""


class TypedStorage(_Storage):
    """A tensor's storage as elements of its dtype (torch.TypedStorage)."""
    __slots__ = ()

    @property
    def dtype(self):
        return _dtype.from_numpy_dtype(self._array.dtype)

    def untyped(self):
        return UntypedStorage(self._array.view(np.uint8))

    def _what(self):
        return f"dtype={self.dtype}, "


def _owner_array(t):
    """The flat array of t's storage: its base's value for a view, else its own."""
    base = t if t._base is None else t._base
    data = base._data
    if type(data) is _meta.MetaArray:
        raise NotImplementedError(_meta.NO_DATA)
    return data.reshape(-1)


def untyped_storage(self):
    """Tensor.untyped_storage."""
    return UntypedStorage(_owner_array(self).view(np.uint8))


_warned = [False]


def storage(self):
    """Tensor.storage: torch's TypedStorage, with torch's deprecation warning (once a process, as torch's)."""
    if not _warned[0]:
        _warned[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
                      "only storage class. This should only matter to you if you are using storages directly.  To "
                      "access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=user_stacklevel())
    return TypedStorage(_owner_array(self))
