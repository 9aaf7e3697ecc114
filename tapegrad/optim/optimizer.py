"""torch.optim.Optimizer: param_groups, per-parameter state, zero_grad, state_dict / load_state_dict.

Optimizers update each parameter's NumPy storage in place with vectorised NumPy (nothing is recorded on
the tape), and bump the parameter's version counter as torch's in-place updates do.
"""
import copy
from collections import OrderedDict, defaultdict
from itertools import chain

import numpy as np

from .. import _dtype, kernels
from ..grad_mode import enable_grad
from ..tape import _local as _tape_local
from ..ops.shape import _written
from ..tensor import VIEWS, Tensor, _new, tensor_type_name
from ..utils.hooks import RemovableHandle
from .._warnings import user_stacklevel

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

_global_optimizer_pre_hooks = OrderedDict()  # (torch's: run before every optimizer's own step pre hooks)
_global_optimizer_post_hooks = OrderedDict()  # (and after its post hooks)


def register_optimizer_step_pre_hook(hook):
    """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook):
    """hook(optimizer, args, kwargs), after every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    if isinstance(obj, Tensor):
        return tensor_type_name(obj._data)
    module, name = type(obj).__module__, type(obj).__qualname__
    return name if module == "builtins" else f"{module}.{name}"


def _scalar(v):
    return v.item() if isinstance(v, Tensor) else v


def _bump(p, times=1):
    """times: the in-place operations torch's single-tensor update applies to the parameter."""
    vc = p._vc
    if vc is not None:
        vc[0] += times


_HOOK_DICTS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
               "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
               "_optimizer_load_state_dict_post_hooks")  # (torch's attribute names)


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        for name in _HOOK_DICTS:
            setattr(self, name, OrderedDict())
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in _HOOK_DICTS:
            self.__dict__.setdefault(name, OrderedDict())

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        if len({id(p) for p in tensors}) != len(tensors):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=user_stacklevel())
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current} to the optimizer")
        if any(id(p) in seen for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        if _tape_local.tracing is not None:  # tapegrad.compile: run by each replay, in its place
            return _tape_local.tape.defer("zero_grad", self.zero_grad, (set_to_none,), self._params())
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                elif g.is_sparse:  # (torch: zero_() leaves no entries)
                    g.zero_()
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g._data.fill(0)
                    g._bump_version()

    def step(self, closure=None):
        raise NotImplementedError

    def _params(self):
        return [p for group in self.param_groups for p in group["params"]]

    def _closure(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _add_hook(self, name, hook, prepend=False):
        hooks = self.__dict__.setdefault(name, OrderedDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs): args are step's, self first (torch's)."""
        return self._add_hook("_optimizer_step_pre_hooks", hook)

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs), after the step."""
        return self._add_hook("_optimizer_step_post_hooks", hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer), before state_dict() packs the state."""
        return self._add_hook("_optimizer_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or the state_dict to return instead."""
        return self._add_hook("_optimizer_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """hook(optimizer, state_dict) -> None or the state_dict to load instead."""
        return self._add_hook("_optimizer_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """hook(optimizer), after load_state_dict() has loaded the state."""
        return self._add_hook("_optimizer_load_state_dict_post_hooks", hook, prepend)

    def _stepped(self, step, args, kwargs):
        """The subclass's step(*args, **kwargs) (args[0] the optimizer); it wrote the parameters' arrays in place
        (NumPy or a compiled pass, past the ops' write path), so their live views are given the new values, as
        torch's share its memory."""
        out = step(*args, **kwargs)
        if VIEWS:
            for group in self.param_groups:
                for p in group["params"]:
                    _written(p)
        return out

    def __init_subclass__(cls, **kwargs):
        """Wrap each subclass's step so that step hooks run around it (only when some are registered)."""
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is None or getattr(step, "_hooked", False):
            return

        def hooked_step(self, *args, **kwargs):
            if _tape_local.tracing is not None:  # tapegrad.compile: run by each replay, after the traced rows
                return _tape_local.tape.defer("step", getattr(self, "step"), args, self._params(), kwargs)
            args = (self,) + args  # (the hooks' args, as torch's: the optimizer first)
            if not (self._optimizer_step_pre_hooks or self._optimizer_step_post_hooks or _global_optimizer_pre_hooks
                    or _global_optimizer_post_hooks) or \
                    self.__dict__.get("_in_hooked_step"):  # a subclass's step calling super().step()
                return self._stepped(step, args, kwargs)
            self._in_hooked_step = True
            try:
                for hook in list(chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values())):
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2):
                            raise RuntimeError(f"{step} must return None or a tuple of (new_args, new_kwargs), but "
                                               f"got {result}.")
                        args, kwargs = result  # (torch calls step(*args): args[0] the optimizer it runs on)
                out = self._stepped(step, args, kwargs)
                for hook in list(chain(self._optimizer_step_post_hooks.values(),
                                       _global_optimizer_post_hooks.values())):
                    hook(self, args, kwargs)
            finally:
                self._in_hooked_step = False
            return out

        hooked_step._hooked = True
        hooked_step.__doc__ = step.__doc__
        hooked_step.__name__ = "step"
        hooked_step.__qualname__ = step.__qualname__
        cls.step = hooked_step

    # -- state dicts --------------------------------------------------------------------------------
    def state_dict(self):
        for hook in list(self.__dict__.get("_optimizer_state_dict_pre_hooks", {}).values()):
            hook(self)
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for hook in list(self.__dict__.get("_optimizer_state_dict_post_hooks", {}).values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict):
        state_dict = state_dict.copy()
        for hook in list(self.__dict__.get("_optimizer_load_state_dict_pre_hooks", {}).values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, Tensor) and value.is_sparse:  # (SGD's momentum buffer of a sparse gradient)
                dtype = param.dtype if _dtype.is_float(param._data.dtype) and value.dtype.is_floating_point else None
                return (value if dtype is None else value.to(dtype)).clone()
            if isinstance(value, Tensor):
                data = value._data
                if key != "step" and _dtype.is_float(param._data.dtype) and _dtype.is_float(data.dtype):
                    data = data.astype(param._data.dtype)
                return _new(np.array(data, copy=True))
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v, key=key) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__setstate__({"state": state,
                           "param_groups": [update_group(g, ng) for g, ng in zip(groups, saved_groups)]})
        for hook in list(self.__dict__.get("_optimizer_load_state_dict_post_hooks", {}).values()):
            hook(self)


# -- torch's hyper-parameter checks, each written once ------------------------------------------------------
_CHECK_WORDS = {"eps": "epsilon"}  # torch says "Invalid epsilon value", but "Invalid momentum value"


def _check_lr_size(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


def _check_lr_tensor(lr, foreach, capturable):
    """Adam's check of an lr given as a Tensor (before the values' checks, as torch orders them)."""
    if isinstance(lr, Tensor) and foreach and not capturable:
        raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")


def _check_betas_tensors(betas, foreach, capturable):
    """Adam's checks of betas given as Tensors (after the values' checks, as torch orders them)."""
    if not (all(isinstance(b, float) for b in betas) or all(isinstance(b, Tensor) for b in betas)):
        raise ValueError("betas must be either both floats or both Tensors")
    for i, b in enumerate(betas):
        if isinstance(b, Tensor):
            if not capturable and foreach:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
            if b.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")


def _check_hyperparameters(*, allow_nan=False, **values):
    """torch's constructor checks, in the order given and in torch's words: lr (a number or a 1-element
    Tensor), betas (each in [0, 1)), rho (in [0, 1]) and every other value (>= 0). allow_nan: SGD writes its
    checks as `value < 0.0`, which a NaN passes."""
    for name, value in values.items():
        if name == "lr":
            _check_lr_size(value)
        if name == "betas":
            for i in (0, 1):
                if not 0.0 <= value[i] < 1.0:
                    raise ValueError(f"Invalid beta parameter at index {i}: {value[i]}")
            continue
        if name == "rho" and value > 1.0:
            raise ValueError(f"Invalid rho value: {value}")
        if (value < 0.0) if allow_nan else not 0.0 <= value:
            what = "learning rate" if name == "lr" else f"{_CHECK_WORDS.get(name, name)} value"
            raise ValueError(f"Invalid {what}: {value}")


# -- shared pieces of the update rules ---------------------------------------------------------------
# Each rule runs a few whole-array NumPy calls per parameter, in torch's single-tensor (CPU) operation order,
# so float32 stays float32 and results agree with torch to rounding.

_CAPTURABLE_DEVICES = ["cuda", "xpu", "hpu", "privateuseone", "xla"]


def _check_capturable(group, what="params and state_steps", supports_xla=True):
    """torch's CPU answer to capturable=True: its kernels only capture on accelerators."""
    if group.get("capturable"):
        devices = _CAPTURABLE_DEVICES if supports_xla else _CAPTURABLE_DEVICES[:-1]
        raise AssertionError(f"If capturable=True, {what} must be on supported devices: {devices}.")


def _check_differentiable(group):
    """differentiable=True records the update on the autograd graph; tapegrad's updates are not recorded."""
    if group.get("differentiable"):
        if any(p.requires_grad and p.is_leaf for p in group["params"]):
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        raise NotImplementedError("differentiable=True (an optimizer step recorded for autograd) is not supported "
                                  "by tapegrad's optimizers")


def _check_fused_options(fused, foreach, differentiable):
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _check_fused_params(group):
    if group.get("fused"):
        for p in group["params"]:
            if p._data.dtype.kind != "f":
                raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported "
                                   "devices: ['mps', 'cuda', 'xpu', 'hpu', 'cpu', 'mtia', 'privateuseone'] but "
                                   f"{p.dtype} and cpu")


def _grads_of(optimizer_name, group):
    """(param, grad array) for each parameter of the group that has a gradient; sparse gradients refused."""
    out = []
    for p in group["params"]:
        g = p._grad
        if g is None:
            continue
        if getattr(g, "is_sparse", False):
            raise RuntimeError(f"{optimizer_name} does not support sparse gradients")
        out.append((p, g._data))
    return out


def _step_tensor(value=0.0, fused=False):
    """torch's scalar state (step, mu_product, eta...): float32, or float64 when that is the default dtype
    (fused optimizers keep float32)."""
    from .. import get_default_dtype  # at call time: the package imports optim
    dtype = np.float64 if not fused and str(get_default_dtype()) == "torch.float64" else np.float32
    return _new(np.asarray(value, dtype))


def _group_defaults(optimizer, **defaults):
    """__setstate__: options that state pickled by an older torch lacks, at torch's defaults."""
    for group in optimizer.param_groups:
        for key, value in defaults.items():
            group.setdefault(key, value)


def _steps_to_tensors(optimizer, keys=("step",)):
    """__setstate__: state saved with Python-number steps (old torch) gets torch's float32 0-d tensors."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            p_state = optimizer.state.get(p, {})
            for key in keys:
                if key in p_state and not isinstance(p_state[key], Tensor):
                    p_state[key] = _step_tensor(float(p_state[key]))


def _lerp_(a, end, weight):
    """a.lerp_(end, weight) with torch's two formulas (small weight from a, large weight from end)."""
    w = a.dtype.type(weight)
    diff = end - a
    if abs(w) < 0.5:
        diff *= w
        a += diff
    else:
        diff *= a.dtype.type(1) - w
        np.subtract(end, diff, out=a)


def _addcmul_(a, t1, t2, value=1.0):
    """a.addcmul_(t1, t2, value): a + value * t1 * t2."""
    tmp = t1 * value if value != 1 else t1.copy()
    tmp *= t2
    a += tmp


def _addcdiv_(a, t1, t2, value=1.0):
    """a.addcdiv_(t1, t2, value): a + value * t1 / t2."""
    tmp = t1 * value if value != 1 else t1.copy()
    tmp /= t2
    a += tmp


def _add_scaled_(a, t, alpha):
    """a.add_(t, alpha=alpha)."""
    if alpha == 1:
        a += t
    elif alpha == -1:
        a -= t
    else:
        a += t * alpha


def _with_weight_decay(grad, param, weight_decay):
    """grad.add(param, alpha=weight_decay) (a new array)."""
    return grad + param * weight_decay if weight_decay != 1 else grad + param


# -- foreach / fused: one compiled pass per parameter group (kernels/optim.py) ---------------------------------
# foreach=None takes the compiled pass too: measured faster than the loop of NumPy calls from one parameter up
# (benchmarks/bench_optim.py, docs/optim.md). foreach=False keeps torch's single-tensor loop, in NumPy.
COMPILED_WHEN_UNSET = True
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_LIKE = {dt: np.empty(0, dt) for dt in _FLOATS}  # a kernel's dtype argument: one compiled version per dtype
_kernels = []  # kernels/optim.py, once loaded (Numba is imported only when a compiled step first runs)


def _optim_kernels():
    if not _kernels:
        _kernels.append(kernels.module("optim"))
    return _kernels[0]


def _compiled_batch(group):
    """(params, grad arrays) of the group's parameters with a gradient, for one compiled pass; None where
    the group asks for torch's single-tensor loop (foreach=False, not fused) or holds what the kernels do not
    take (sparse, mixed-dtype, non-float or non-contiguous parameters or gradients): then the NumPy loop runs."""
    foreach = group.get("foreach")
    if not group.get("fused") and (foreach is False or (foreach is None and not COMPILED_WHEN_UNSET)):
        return None
    params, grads = [], []
    dtype = None
    for p in group["params"]:
        g = p._grad
        if g is None:
            continue
        if getattr(g, "is_sparse", False):  # (before its _data: a sparse gradient's holds no dense array)
            return None
        d, gd = p._data, g._data
        if dtype is None:
            dtype = d.dtype
            if dtype not in _FLOATS:
                return None
        if d.dtype != dtype or gd.dtype != dtype or gd.shape != d.shape \
                or not (d.flags.c_contiguous and d.flags.writeable and gd.flags.c_contiguous):
            return None
        params.append(p)
        grads.append(gd)
    return (params, grads) if params else None


def _fits(array, like):
    """A state array the kernels may read and write as they read `like` (a parameter's array)."""
    return array.dtype == like.dtype and array.shape == like.shape and array.flags.c_contiguous and \
        array.flags.writeable


def _cell(p):
    """The address of p's version cell, 0 where it has none yet (nothing has read its version)."""
    vc = p._vc
    return 0 if vc is None else id(vc)


def _dtype_args(array):
    """A kernel's dtype arguments for arrays like `array`: a sample of the dtype and its NumPy number."""
    return _LIKE[array.dtype], array.dtype.num


def _step_fits(step, first):
    """A 0-d step tensor's array the kernels may increment: a float, of the dtype of the group's first."""
    return step.dtype in _FLOATS and step.size == 1 and step.flags.writeable and step.dtype == first.dtype


def _compiled_update(state, batch, kernel, arrays, scalars, *hyper):
    """The batch's update by kernels/optim.py's `kernel`, whose table has per parameter: param, grad, the state
    arrays named in `arrays`, the 0-d states named in `scalars` (all of one float dtype), version cell. False,
    having changed nothing, where a state tensor is not one the kernel can take (a loaded one of another dtype,
    shape or layout): the NumPy loop runs then."""
    params, grads = batch
    rows, first = [], None
    for p, g in zip(params, grads):
        s, d = state[p], p._data
        row = [id(d), id(g)]
        for key in arrays:
            a = s[key]._data
            if not _fits(a, d):
                return False
            row.append(id(a))
        for key in scalars:
            a = s[key]._data
            first = a if first is None else first
            if not _step_fits(a, first):
                return False
            row.append(id(a))
        row.append(_cell(p))
        rows.append(row)
    getattr(_optim_kernels(), kernel)(np.array(rows, np.int64), *_dtype_args(params[0]._data), *_dtype_args(first),
                                      *hyper)
    return True
