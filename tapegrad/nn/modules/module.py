"""torch.nn.Module: parameters, buffers and submodules registered by attribute assignment."""
import functools
import itertools
import types
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import numpy as np

from ... import __future__ as _future, _dtype
from ...creation import empty_like
from ...grad_mode import no_grad
from ...tape import NOT_A_SLOT, _local as _tape_local
from ...tensor import Tensor, tensor_type_name
from ...utils.hooks import RemovableHandle
from ..parameter import Buffer, Parameter
from ._backward_hook import _BackwardHook
from ...device import check
from ..._warnings import user_stacklevel

__all__ = ["Module", "register_module_backward_hook", "register_module_forward_hook",
           "register_module_forward_pre_hook", "register_module_full_backward_hook",
           "register_module_full_backward_pre_hook"]


def _typename(obj):
    if isinstance(obj, Tensor):
        return tensor_type_name(obj._data)
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"
_NO_HOOKS = types.MappingProxyType({})  # (the class's stand-in for a hook dict a module loaded from an older file lacks)


class _WrappedHook:
    """torch's: a load_state_dict pre-hook, given the module (held weakly) as its first argument when with_module."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = False
        if module is not None:
            self.module = weakref.ref(module)
            self.with_module = True

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self):
        result = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            result["module"] = self.module()
        return result

    def __setstate__(self, state):
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line if line.strip() else "" for line in s]
    return first + "\n" + "\n".join(s)


class Module:
    """Base class for all neural network modules (torch.nn.Module)."""

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False
    # __call__ takes its hook path (_call_impl) only while this is true: set by registering a forward (pre-)hook
    # or a backward (pre-)hook, or by compile(), and cleared by that path once all of them are gone, so that a
    # call of a module without hooks tests one attribute
    _call_hooked = False
    _compiled_call_impl = None
    _is_full_backward_hook = None
    _backward_hooks = _backward_pre_hooks = _state_dict_pre_hooks = _load_state_dict_pre_hooks = _NO_HOOKS

    def __init__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_backward_pre_hooks"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_is_full_backward_hook"] = None
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = OrderedDict()  # (hook id -> True: torch's marks of how each hook is called)
        d["_forward_hooks_always_called"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()

    def forward(self, *input):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        if not (self._call_hooked or _global_hooked):  # (no hooks, not compiled: the hot path)
            return self.forward(*args, **kwargs)
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    _wrapped_call_impl = __call__

    def _call_impl(self, *args, **kwargs):
        """torch's: forward pre-hooks, the backward hooks' wrapping of the inputs, forward, forward hooks, the
        wrapping of the outputs."""
        backward_hooks, backward_pre_hooks = self._backward_hooks, self._backward_pre_hooks
        if not (self._forward_pre_hooks or self._forward_hooks or backward_hooks or backward_pre_hooks
                or _any_global_hooks()):
            if self._compiled_call_impl is None:
                self.__dict__["_call_hooked"] = False  # (all removed: back to the hot path)
            return self.forward(*args, **kwargs)
        pre_kwargs = self._hook_marks("_forward_pre_hooks_with_kwargs")
        for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
            if hook_id in pre_kwargs:
                out = hook(self, args, kwargs)
                if out is not None:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {out}.")
                    args, kwargs = out
                continue
            out = hook(self, args)
            if out is not None:
                args = out if isinstance(out, tuple) else (out,)
        if self._hook_marks("_forward_hooks_always_called") or _global_forward_hooks_always_called:
            return self._call_with_always_called_hooks(args, kwargs)
        return self._call_rest(args, kwargs)

    def _hook_marks(self, name):
        return self.__dict__.get(name) or ()

    def _forward_hook_marks(self, name):
        """This module's marks (with_kwargs, always_call) of its forward hooks, and the global hooks' ones."""
        marks, global_marks = self._hook_marks(name), _GLOBAL_MARKS[name]
        return {**global_marks, **(marks or {})} if global_marks else marks

    def _call_with_always_called_hooks(self, args, kwargs):
        """torch's: forward hooks registered with always_call=True run even where the call raised (those it had
        not run yet, with a result of None; an exception of theirs is a warning), and the call's error is raised."""
        called = set()
        try:
            return self._call_rest(args, kwargs, called)
        except Exception:
            always, with_kwargs, result = self._forward_hook_marks("_forward_hooks_always_called"), \
                self._forward_hook_marks("_forward_hooks_with_kwargs"), None
            for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                if hook_id in always and hook_id not in called:
                    try:
                        out = hook(self, args, kwargs, result) if hook_id in with_kwargs else hook(self, args, result)
                        if out is not None:
                            result = out
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an exception that was "
                                      f"silenced as another error was raised in forward: {str(e)}")
            raise

    def _call_rest(self, args, kwargs, called=None):
        """_call_impl after the forward pre-hooks: the backward hooks' wrapping, forward, the forward hooks."""
        backward_hooks = [*_global_backward_hooks.values(), *self._backward_hooks.values()]
        backward_pre_hooks = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
        bw_hook = None
        if backward_hooks or backward_pre_hooks:
            full = (self._is_full_backward_hook if self._backward_hooks else _global_is_full_backward_hook)
            bw_hook = _BackwardHook(self, backward_hooks, backward_pre_hooks, full is not False)
            given = args
            args = bw_hook.setup_input_hook(args)
        result = self.forward(*args, **kwargs)
        if bw_hook is not None:
            bw_hook.check_inputs()
        with_kwargs = self._forward_hook_marks("_forward_hooks_with_kwargs")
        always = self._forward_hook_marks("_forward_hooks_always_called") if called is not None else ()
        for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
            if hook_id in always:
                called.add(hook_id)
            out = hook(self, args, kwargs, result) if hook_id in with_kwargs else hook(self, args, result)
            if out is not None:
                result = out
        if bw_hook is not None:
            if (bw_hook.full or backward_pre_hooks) and not isinstance(result, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(result)}", stacklevel=user_stacklevel())
            if backward_hooks and not bw_hook.full:
                bw_hook.warn_non_full(given, result)
            result = bw_hook.setup_output_hook(result)
        return result

    def compile(self, *args, **kwargs):
        """torch's Module.compile: later calls of this module go through tapegrad.compile of its call (hooks
        included)."""
        from ...tracing import compile as _compile  # (tracing imports nn: a local import)
        self._compiled_call_impl = _compile(self._call_impl, *args, **kwargs)
        self.__dict__["_call_hooked"] = True

    def _add_hook(self, name, hook, prepend=False, on_call=False, marks=()):
        """Register hook in this module's hook dict `name` (made if it lacks one: a module loaded from a file saved
        before it had one); on_call: a hook __call__ runs, so calls take the hooked path from now on; marks: the
        names of the dicts that mark it (with_kwargs, always_call), which its handle's remove clears too."""
        hooks = self.__dict__.get(name)
        if hooks is None:
            hooks = self.__dict__[name] = OrderedDict()
        extras = [self.__dict__.setdefault(mark, OrderedDict()) for mark in marks]
        handle = RemovableHandle(hooks, extra_dict=extras)
        hooks[handle.id] = hook
        for extra in extras:
            extra[handle.id] = True
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        if on_call:
            self.__dict__["_call_hooked"] = True
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) (with_kwargs: hook(module, args, kwargs, output)) -> None or a new output;
        always_call: it runs even where the call raises."""
        marks = (("_forward_hooks_with_kwargs",) if with_kwargs else ()) + \
            (("_forward_hooks_always_called",) if always_call else ())
        return self._add_hook("_forward_hooks", hook, prepend, on_call=True, marks=marks)

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args (with_kwargs: hook(module, args, kwargs) -> None or (args, kwargs))."""
        marks = ("_forward_pre_hooks_with_kwargs",) if with_kwargs else ()
        return self._add_hook("_forward_pre_hooks", hook, prepend, on_call=True, marks=marks)

    # -- backward hooks (torch's) -------------------------------------------------------------------------
    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> tuple of Tensors or None: called with the gradients of the forward's
        tensor outputs; what it returns replaces them."""
        return self._add_hook("_backward_pre_hooks", hook, prepend, on_call=True)

    def register_backward_hook(self, hook):
        """Deprecated (torch's): use register_full_backward_hook."""
        self._backward_hook_kind(full=False)
        return self._add_hook("_backward_hooks", hook, on_call=True)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> tuple of Tensors or None: called with the gradients of the
        forward's positional tensor inputs and of its tensor outputs; what it returns replaces grad_input."""
        self._backward_hook_kind(full=True)
        return self._add_hook("_backward_hooks", hook, prepend, on_call=True)

    def _backward_hook_kind(self, full):
        if self._is_full_backward_hook is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self.__dict__["_is_full_backward_hook"] = full

    # -- state-dict hooks (torch's) -----------------------------------------------------------------------
    def _register_state_dict_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None or a new state_dict (respected only at the
        module state_dict() is called on)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        return self._add_hook("_state_dict_hooks", hook)

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None: may modify state_dict in place."""
        hook._from_public_api = True
        return self._add_hook("_state_dict_hooks", hook)

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) -> None, before state_dict() saves this module."""
        return self._add_hook("_state_dict_pre_hooks", hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """hook([module,] state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs),
        before _load_from_state_dict loads this module; the module is passed only with_module."""
        return self._add_hook("_load_state_dict_pre_hooks", _WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        return self._add_hook("_load_state_dict_post_hooks", hook)

    # -- registration ------------------------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        elif param.grad_fn:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        else:
            self._parameters[name] = param

    def add_module(self, name, module):
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name, module):
        self.add_module(name, module)

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_extra_state(self):
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug.")

    def set_extra_state(self, state):
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. "
            "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
            "to report this bug.")

    def set_submodule(self, target, module, strict=False):
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError("`" + "module" + f"` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]):
            mod = getattr(parent, atoms[-1])
            if not isinstance(mod, Module):
                raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target):
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return getattr(mod, buffer_name)

    # -- attribute protocol (torch's) ------------------------------------------------------------------
    def __getattr__(self, name):
        d = self.__dict__
        try:  # (an initialized module has all three dicts: read them without testing __dict__ for each first)
            params = d["_parameters"]
            if name in params:
                return params[name]
            buffers = d["_buffers"]
            if name in buffers:
                return buffers[name]
            modules = d["_modules"]
        except KeyError:
            modules = None
        if modules is None:  # (before Module.__init__, or unpickled without one of them; raised outside the except)
            return _member_of_partial_module(self, name)
        if name in modules:
            return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        "(torch.nn.Buffer, torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                        value = value.detach()
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        for key in ("_forward_hooks", "_forward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                    "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_backward_hooks",
                    "_backward_pre_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                    "_forward_pre_hooks_with_kwargs"):
            self.__dict__.setdefault(key, OrderedDict())
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)
        if "_call_hooked" not in state:
            self.__dict__["_call_hooked"] = bool(self._forward_hooks or self._forward_pre_hooks or
                                                 self._backward_hooks or self._backward_pre_hooks)

    def __dir__(self):
        attrs = dir(self.__class__)
        keys = (list(self.__dict__) + list(self._parameters) + list(self._modules) + list(self._buffers))
        return sorted(set(a for a in attrs + keys if not a[:1].isdigit()))

    # -- traversal --------------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        if type(self).named_parameters is not Module.named_parameters:  # (a subclass's own names decide)
            for _, param in self.named_parameters(recurse=recurse):
                yield param
            return
        # named_parameters' walk and order without building the names: 2.6 -> 1.4 us for a Sequential of two
        # modules, which training loops pay twice a step (zero_grad, the update's loop)
        seen, done, stack = set(), set(), [self]
        while stack:
            module = stack.pop()
            if id(module) in done:
                continue
            done.add(id(module))
            for param in module._parameters.values():
                if param is not None and id(param) not in seen:
                    seen.add(id(param))
                    yield param
            if recurse and module._modules:
                stack.extend(reversed([m for m in module._modules.values() if m is not None]))

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            submodule_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    def __hash__(self):
        return id(self)

    # -- modes ------------------------------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        if _tape_local.tracing is not None:  # tapegrad.compile: run by each replay, in its place
            return _tape_local.tape.defer("zero_grad", self.zero_grad, (set_to_none,), list(self.parameters()))
        for p in self.parameters():
            if p._grad is not None:
                if set_to_none:
                    p._grad = None
                else:
                    g = p._grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g._data.fill(0)
                    g._bump_version()

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- conversion -------------------------------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        """Replace every parameter's and buffer's data by fn(tensor), keeping the Parameter objects."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        overwrite = _future.get_overwrite_module_params_on_conversion() and \
            not _future.get_swap_module_params_on_conversion()
        with no_grad():
            for key, p in self._parameters.items():
                if p is None:
                    continue
                if overwrite:  # (torch.__future__: a new Parameter, its .grad converted with it)
                    new = self._parameters[key] = Parameter(fn(p), p.requires_grad)
                    if p._grad is not None:
                        new.grad = fn(p._grad).requires_grad_(p._grad.requires_grad)
                    continue
                _set_data(p, fn(p))
                if p._grad is not None:
                    _set_data(p._grad, fn(p._grad))
            for key, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        tensor = kwargs.get("tensor")
        for a in args:
            if isinstance(a, _dtype.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                tensor = a
            else:
                device = a
        if tensor is not None:
            dtype = tensor.dtype
        if device is not None and _check_device(device)._type == "meta":  # (the CPU to meta: no data moves)
            self._apply(lambda t: t.to("meta"))
        elif device is not None and any(t.is_meta for t in itertools.chain(self.parameters(), self.buffers())):
            raise NotImplementedError("Cannot copy out of meta tensor; no data! Please use torch.nn.Module.to_empty() "
                                      "instead of torch.nn.Module.to() when moving module from meta to a different "
                                      "device.")
        fmt = kwargs.get("memory_format")
        if fmt is not None:  # (torch: the 4-d and 5-d parameters and buffers take the format's strides)
            self._apply(lambda t: t.to(memory_format=fmt) if t.dim() in (4, 5) else t)
        if dtype is None:
            return self
        if not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.to(_dtype.float16) if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.to(_dtype.bfloat16) if t.is_floating_point() else t)

    def type(self, dst_type):
        """Every parameter and buffer converted as Tensor.type converts (a dtype, torch.DoubleTensor, a type's
        name)."""
        return self._apply(lambda t: t.type(dst_type))

    def cpu(self):
        return self

    def share_memory(self):
        """Move parameters, buffers and gradients into shared memory in place (torch.multiprocessing)."""
        return self._apply(lambda t: t.share_memory_())

    def cuda(self, device=None):
        return self._to_accelerator("cuda")

    def ipu(self, device=None):
        return self._to_accelerator("ipu")

    def xpu(self, device=None):
        return self._to_accelerator("xpu")

    def mtia(self, device=None):
        return self._to_accelerator("mtia")

    def _to_accelerator(self, device):
        """torch moves each parameter and buffer (a CPU-only build raises at the first); a module with none (a loss,
        an activation) is returned as it is."""
        if next(itertools.chain(self.parameters(), self.buffers()), None) is None:
            return self
        if device == "mtia":
            raise AssertionError("Torch not compiled with MTIA enabled. Ensure you have `import "
                                 "mtia.host_runtime.torch_mtia.dynamic_library` in your python src file and include "
                                 "`//mtia/host_runtime/torch_mtia:torch_mtia` as your target dependency!")
        _check_device(device)

    def to_empty(self, *, device, recurse=True):
        """Parameters and buffers replaced by uninitialized tensors of their shapes and dtypes on `device`."""
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    # -- state dicts ------------------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:  # the deprecated positional form: state_dict(destination, prefix, keep_vars)
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                          " for details.", FutureWarning, stacklevel=user_stacklevel())
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if result is not None:  # (the private form's new dict; a submodule's caller drops it, as torch)
                    destination = result
            elif result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent_buffers.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(input_param)}")
                continue
            if param.ndim == 0 and input_param.ndim == 1 and input_param.shape[0] == 1:
                input_param = input_param[0]
            if input_param.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param, requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        if param.is_meta and not input_param.is_meta:
                            warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint to a meta "
                                          f"parameter in the current model, which is a no-op. (Did you mean to pass "
                                          f"`assign=True` to assign items in the state dictionary to their "
                                          f"corresponding key in the module instead of copying them in place?)",
                                          UserWarning, stacklevel=user_stacklevel())
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{param.size()} and whose dimensions in the checkpoint are "
                                  f"{input_param.size()}, an exception occurred : {ex.args}.")
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)
            incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not expected to return new "
                        "values, if incompatible_keys need to be modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # -- printing ---------------------------------------------------------------------------------------
    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str


# -- global module hooks (torch.nn.modules.module.register_module_*_hook): every module's calls run them, before
# its own hooks of the same kind
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
_global_is_full_backward_hook = None
_GLOBAL_MARKS = {"_forward_hooks_with_kwargs": _global_forward_hooks_with_kwargs,
                 "_forward_hooks_always_called": _global_forward_hooks_always_called}
_global_hooked = False  # (whether any may be registered: Module.__call__ then takes the hooked path)


def _any_global_hooks():
    global _global_hooked
    _global_hooked = bool(_global_forward_pre_hooks or _global_forward_hooks or _global_backward_pre_hooks
                          or _global_backward_hooks)
    return _global_hooked


def _add_global_hook(hooks, hook, marks=()):
    global _global_hooked
    handle = RemovableHandle(hooks, extra_dict=list(marks))
    hooks[handle.id] = hook
    for mark in marks:
        mark[handle.id] = True
    _global_hooked = True
    return handle


def register_module_forward_pre_hook(hook):
    """A forward pre-hook of every module: hook(module, args) -> None or new args, before each module's own."""
    return _add_global_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """A forward hook of every module: hook(module, args, output) (with_kwargs: hook(module, args, kwargs,
    output)) -> None or a new output, before each module's own; always_call: it runs where the call raises too."""
    marks = ((_global_forward_hooks_with_kwargs,) if with_kwargs else ()) + \
        ((_global_forward_hooks_always_called,) if always_call else ())
    return _add_global_hook(_global_forward_hooks, hook, marks)


def register_module_full_backward_pre_hook(hook):
    """A backward pre-hook of every module: hook(module, grad_output) -> None or new grad_output."""
    return _add_global_hook(_global_backward_pre_hooks, hook)


def _global_backward_hook_kind(full):
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                           "Please use only one of them.")
    _global_is_full_backward_hook = full


def register_module_full_backward_hook(hook):
    """A backward hook of every module: hook(module, grad_input, grad_output) -> None or new grad_input."""
    _global_backward_hook_kind(full=True)
    return _add_global_hook(_global_backward_hooks, hook)


def register_module_backward_hook(hook):
    """Deprecated (torch's): use register_module_full_backward_hook."""
    _global_backward_hook_kind(full=False)
    return _add_global_hook(_global_backward_hooks, hook)


def _member_of_partial_module(module, name):
    """Module.__getattr__ where the module's __dict__ lacks one of its member dicts: whichever it has."""
    d = module.__dict__
    for members in ("_parameters", "_buffers", "_modules"):
        if members in d and name in d[members]:
            return d[members][name]
    raise AttributeError(f"'{type(module).__name__}' object has no attribute '{name}'")


def _set_data(t, new):
    """Point t at new's storage (Module._apply): torch's `param.data = fn(param)`."""
    data = new._data if isinstance(new, Tensor) else np.asarray(new)
    if data is not t._data:
        t._data = data
        t._slot = NOT_A_SLOT
        t._strides = new._strides if isinstance(new, Tensor) else None  # (what stride() reports: memory formats)


def _check_device(device):
    return check(device)  # torch's error for a device other than the CPU and meta
