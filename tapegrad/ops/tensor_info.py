"""What torch's complex-number and memory API gives on real CPU tensors (tapegrad has no complex dtype, no
pinned memory and no accelerator): conj and friends answer self as torch does for a real tensor, H / mH /
adjoint are transposes; dtype and type queries (is_complex, is_signed, typename); the legacy Tensor.new;
storage_offset, storage and untyped_storage (storage.py); and torch's top-level in-place functions (torch.exp_(x)
is x.exp_())."""
import warnings

import numpy as np

from .. import _dtype
from ..creation import _shape, empty_strided
from ..device import cpu_only as _check_device
from ..storage import storage as _storage, untyped_storage as _untyped_storage
from ..tensor import Size, Tensor, _new, as_array, storage_of
from .._warnings import user_stacklevel
from ._signatures import Signatures

__all__ = ["adjoint", "conj", "conj_physical", "conj_physical_", "is_complex", "is_conj", "is_neg",
           "is_signed", "resolve_conj", "resolve_neg", "typename"]
INPLACE = ("exp2", "log2")  # (x.exp2_(), x.log2_(): methods.py makes them from these ops)


def _need_tensor(fn, input, name="input"):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position 1) must be Tensor, not {type(input).__name__}")


# -- conjugation: a real tensor is its own conjugate (torch returns the tensor itself) --------------------------
def _answer(name, doc, answer):
    """torch.`name` of a real tensor: `answer(input)` (the tensor itself, or False)."""
    def fn(input):
        _need_tensor(name, input)
        return answer(input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: {doc}"
    return fn


def _itself(input):
    return input


def _false(input):
    return False


conj = _answer("conj", "for a real tensor, the tensor itself.", _itself)
resolve_conj = _answer("resolve_conj", "no conjugate bit on a real tensor, so the tensor itself.", _itself)
resolve_neg = _answer("resolve_neg", "no negative bit on a real tensor, so the tensor itself.", _itself)
conj_physical = _answer("conj_physical", "for a real tensor, the tensor itself (torch copies only complex values).",
                        _itself)
conj_physical_ = _answer("conj_physical_", "nothing to conjugate in a real tensor; returns it.", _itself)
is_conj = _answer("is_conj", "False: a real tensor has no conjugate bit.", _false)
is_neg = _answer("is_neg", "False: a real tensor has no negative bit.", _false)
is_complex = _answer("is_complex", "tapegrad has no complex dtypes, so False for every tensor.", _false)


def is_signed(input):
    """torch.is_signed: whether the dtype holds negative values (all but uint8 and bool)."""
    _need_tensor("is_signed", input)
    return input.is_signed()


def _zero_d(x, what):
    warnings.warn(f"{what} is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=user_stacklevel())
    return x


def adjoint(input):
    """torch.adjoint: the conjugate transpose of the last two dimensions (a transpose for real tensors)."""
    _need_tensor("adjoint", input)
    nd = input._data.ndim
    if nd == 0:
        return _zero_d(input, "adjoint()")
    if nd < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got {nd}-D tensor.")
    return input.transpose(-2, -1)


def _H(self):
    nd = self._data.ndim
    if nd == 0:
        return _zero_d(self, "Tensor.H")
    if nd != 2:
        more = " For batches of matrices, consider using tensor.mH" if nd > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {nd}-D tensor.{more}")
    return self.transpose(0, 1)


def _mH(self):
    nd = self._data.ndim
    if nd == 0:
        return _zero_d(self, "Tensor.mH")
    if nd < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {nd}-D tensor.")
    return self.transpose(-2, -1)


# -- types ---------------------------------------------------------------------------------------------------------
def typename(obj):
    """torch.typename: a tensor's type() ('torch.FloatTensor'), else the object's module-qualified name (tapegrad's
    modules named as the torch modules they stand for)."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    name = qualname if module in {"", "builtins"} else f"{module}.{qualname}"
    if name in _TORCH_NAMES:
        return _TORCH_NAMES[name]
    if name == "tapegrad" or name.startswith("tapegrad."):
        name = "torch" + name[len("tapegrad"):]
    return name


# tapegrad's classes that stand for torch's, by the names torch gives them
_TORCH_NAMES = {"tapegrad._dtype.dtype": "torch.dtype", "tapegrad.tensor.Tensor": "torch.Tensor",
                "tapegrad.tensor.Size": "torch.Size", "tapegrad.tensor.memory_format": "torch.memory_format",
                "tapegrad.device.device": "torch.device"}


# -- memory ----------------------------------------------------------------------------------------------------------
def _storage_offset(self):
    """Tensor.storage_offset: where a view starts in its base's storage, in elements (0 for a tensor of its own)."""
    w = self._window
    if w is None:
        return 0
    start = w.__array_interface__["data"][0] - storage_of(w).__array_interface__["data"][0]
    return int(start // w.itemsize)


def _pin_memory(self, device=None):
    """Tensor.pin_memory: pinned memory needs an accelerator; torch's CPU-only build raises this."""
    raise RuntimeError("Cannot access accelerator device when none is available.")


def _is_pinned(self, device=None):
    return False


# -- Tensor.new: the legacy constructor, in self's dtype ---------------------------------------------------------
_NEW_SIGNATURES = (" * (*, torch.device device = None)\n"
                   " * (torch.Storage storage)\n"
                   " * (Tensor other)\n"
                   " * (tuple of ints size, *, torch.device device = None)\n"
                   " * (object data, *, torch.device device = None)\n")


def _options(np_dtype):
    return (f"TensorOptions(dtype={_dtype.cpp_type_name(np_dtype)}, device=cpu, layout=Strided, requires_grad=false "
            f"(default), pinned_memory=false (default), memory_format=(nullopt))")


def _new_legacy(self, *args, **kwargs):
    """Tensor.new(): new() is empty, new(*sizes) / new(torch.Size) uninitialized (zeroed here), new(data) a copy of
    data, new(tensor) an alias of a tensor of the same dtype; always of self's dtype."""
    extra = sorted(k for k in kwargs if k != "device")
    if extra:
        got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(kwargs[k]).__name__}" for k in extra])
        if any(k == "dtype" for k in extra):
            got = got.replace("dtype=dtype", "dtype=torch.dtype")
        raise TypeError(f"new() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        f"{_NEW_SIGNATURES.splitlines()[0]}\n      didn't match because some of the keywords were "
                        f"incorrect: {', '.join(extra)}\n" + "\n".join(_NEW_SIGNATURES.splitlines()[1:]) + "\n")
    if kwargs.get("device") is not None:
        _check_device(kwargs["device"], "Tensor.new")
    dt = self._data.dtype
    if not args:
        return _new(np.zeros(0, dt))
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if "device" in kwargs:
            raise RuntimeError("Legacy tensor new of the form tensor.new(tensor, device=device) is not supported.  "
                               "Use torch.as_tensor(...) instead.")
        if other._data.dtype != dt:
            raise TypeError(f"expected {_options(dt)} (got {_options(other._data.dtype)})")
        return other.detach()
    if len(args) == 1 and isinstance(args[0], Size) or all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        return _new(np.zeros(_shape(tuple(args[0]) if isinstance(args[0], Size) else args), dt))
    if len(args) == 1:
        data = args[0]
        if not isinstance(data, (list, tuple, np.ndarray)):
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
        return _new(as_array(data, dt))
    raise TypeError("new(): invalid data type")


# -- torch's top-level in-place functions: torch.exp_(x) is x.exp_() -------------------------------------------------
_INPLACE_FUNCTIONS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "asin_",
    "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_",
    "detach_", "erf_", "erfc_", "exp_", "exp2_", "expm1_", "fill_", "fix_", "floor_", "frac_", "gcd_", "i0_",
    "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_",
    "rad2deg_", "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_",
    "tanh_", "trunc_", "xlogy_", "zero_")


# torch's signatures of those that take two operands (`_signatures.py`): its words for a number where they take none
_INPLACE_SIGNATURES = {
    **{n: Signatures(n, "(Tensor input, Tensor other)") for n in ("gcd_", "lcm_", "ldexp_")},
    **{n: Signatures(n, f"(Tensor input, Tensor {b})", f"(Tensor input, Number {b})")
       for n, b in (("clamp_min_", "min"), ("clamp_max_", "max"))},
    **{n: Signatures(n, "(Tensor input, Tensor min = None, Tensor max = None)",
                     "(Tensor input, Number min = None, Number max = None)") for n in ("clamp_", "clip_")},
    "xlogy_": Signatures("xlogy_", "(Tensor input, Tensor other)", "(Tensor input, Number other)"),
}


def _inplace_function(name):
    signatures = _INPLACE_SIGNATURES.get(name)

    def fn(input, *args, **kwargs):
        if signatures is not None and args and not kwargs:
            signatures.check(input, *args)
        _need_tensor(name, input)
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(input, ...): input.{name}(...), in place."
    return fn


for _name in _INPLACE_FUNCTIONS:
    globals()[_name] = _inplace_function(_name)
__all__ += list(_INPLACE_FUNCTIONS)
del _name

Tensor.conj = conj
Tensor.resolve_conj = resolve_conj
Tensor.resolve_neg = resolve_neg
Tensor.conj_physical = conj_physical
Tensor.conj_physical_ = conj_physical_
Tensor.is_conj = is_conj
Tensor.is_neg = is_neg
Tensor.adjoint = adjoint
Tensor.H = property(_H)
Tensor.mH = property(_mH)
Tensor.storage_offset = _storage_offset
Tensor.storage, Tensor.untyped_storage = _storage, _untyped_storage
Tensor.pin_memory = _pin_memory
Tensor.is_pinned = _is_pinned
Tensor.new = _new_legacy


def _new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=False,
                       requires_grad=False):
    """Tensor.new_empty_strided: torch.empty_strided in self's dtype unless dtype is given."""
    return empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype, device=device,
                         requires_grad=requires_grad)


Tensor.new_empty_strided = _new_empty_strided
