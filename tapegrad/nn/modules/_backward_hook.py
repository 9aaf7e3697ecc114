"""A module's backward hooks (torch.utils.hooks.BackwardHook and nn.modules._functions.BackwardHookFunction): the
forward's tensor inputs and outputs pass through an identity Function whose backward runs the hooks."""
import warnings
import weakref

import numpy as np

from ...autograd.function import Function
from ...grad_mode import is_grad_enabled
from ...tape import untraceable
from ...tensor import Tensor, _new
from ..._warnings import user_stacklevel


_VIEW_MODIFIED = ("Output {} of BackwardHookFunction is a view and is being modified inplace. This view was created "
                  "inside a custom Function (or because an input was returned as-is) and the autograd logic to handle "
                  "view+inplace would override the custom backward associated with the custom Function, leading to "
                  "incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the "
                  "custom Function.")


class BackwardHookFunction(Function):
    """torch.nn.modules._functions.BackwardHookFunction: the identity over a module's tensor inputs (or outputs),
    whose backward runs the module's backward hooks with all their gradients at once."""

    @staticmethod
    def forward(ctx, hook, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        if hook is None:
            return args
        # the outputs' side: a first output nobody reads leads, so that each real output's gradient arrives
        # as its own (None where none flowed, as torch's node shows it) rather than as the leading row's
        ctx.set_materialize_grads(False)
        return (_new(np.zeros((), np.float32)),) + args

    @staticmethod
    def backward(ctx, *grads):
        hook = ctx._hook
        if ctx._side == "output":
            return (None,) + hook.output_backward(grads[1:])
        return (None,) + hook.input_backward(grads)


class _BackwardHook:
    """One call's backward hooks (torch.utils.hooks.BackwardHook): the inputs and outputs pass through
    BackwardHookFunction, whose backward at the outputs runs the pre-hooks and keeps grad_output, and at the inputs
    runs the hooks with grad_input and that grad_output. A module whose hooks are the deprecated kind
    (register_backward_hook) runs them the same way (torch hooks them on its output's last node instead)."""

    def __init__(self, module, user_hooks, user_pre_hooks, full):
        untraceable("a module backward hook")  # (tapegrad.compile: the call runs eagerly)
        self.module, self.user_hooks, self.user_pre_hooks, self.full = module, user_hooks, user_pre_hooks, full
        self.grad_outputs = None
        self.n_outputs = self.n_inputs = -1
        self.output_tensors_index = self.input_tensors_index = None
        self.inputs = self.outputs = ()

    def _apply_on_tensors(self, side, args):
        """args with their tensors through BackwardHookFunction, the tensors' positions, the new tensors and their
        versions; (args, None, (), ()) where no tensor requires grad or grad mode is off."""
        tensors_idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in tensors_idx]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return args, None, ()
        fn = BackwardHookFunction
        new = fn.apply(None, *tensors) if side == "input" else fn.apply(self, *tensors)[1:]
        if len(new) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input Tensors.")
        grad_fns = [t.grad_fn for t in new if t.grad_fn is not None]
        if not grad_fns:
            raise RuntimeError("Error while setting up backward hooks. Please open an issue with a code sample to "
                               "reproduce this.")
        ctx = grad_fns[0]
        ctx._hook, ctx._side = self, side
        if side == "input":
            self.input_ctx = ctx
        arg_list = list(args)
        for i, t in zip(tensors_idx, new):
            arg_list[i] = t
        out = tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)
        return out, tensors_idx, tuple((weakref.ref(t), t._version) for t in new)

    def setup_input_hook(self, args):
        res, self.input_tensors_index, self.inputs = self._apply_on_tensors("input", args)
        self.n_inputs = len(args)
        return res

    def check_inputs(self):
        """torch refuses an in-place write into the forward's inputs (views made by BackwardHookFunction) when it
        happens; tapegrad, once forward returns."""
        _check_versions(self.inputs)

    def setup_output_hook(self, args):
        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, self.output_tensors_index, self.outputs = self._apply_on_tensors("output", args)
        self.n_outputs = len(args)
        return res if is_tuple else res[0]

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for i, v in zip(indices, values):
            res[i] = v
        return tuple(res)

    def output_backward(self, grads):
        # torch refuses an in-place write into the forward's outputs when it happens; tapegrad, in backward
        _check_versions(self.outputs)
        self.grad_outputs = self._pack_with_none(self.output_tensors_index, grads, self.n_outputs)
        if self.user_pre_hooks:
            expected = len(self.grad_outputs)
            for hook in self.user_pre_hooks:
                out = hook(self.module, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != expected:
                    raise RuntimeError("Backward pre hook returned an invalid number of grad_output, got "
                                       f"{len(out)}, but expected {expected}")
                self.grad_outputs = out
        local_grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:  # no input requires grad: the hooks run here (torch warns)
            if self.full and self.user_hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                              "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
                              "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more "
                              "details.", stacklevel=user_stacklevel())
            grad_inputs = self._pack_with_none([], [], self.n_inputs)
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(local_grad_outputs[i] for i in self.output_tensors_index)

    def input_backward(self, grads):
        if self.grad_outputs is None:  # (the gradient reached the inputs without passing through the outputs)
            return grads
        res = self._pack_with_none(self.input_tensors_index, grads, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, got "
                                   f"{len(out)}, but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_tensors_index)

    def warn_non_full(self, inputs, result):
        """torch's FutureWarnings for the deprecated hooks (Module._maybe_warn_non_full_backward_hook), given the
        forward's own inputs and result: judged on the graph as it would be without BackwardHookFunction, which torch
        does not put there for these hooks."""
        var = result
        while not isinstance(var, Tensor):
            if isinstance(var, dict):
                var = next(v for v in var.values() if isinstance(v, Tensor))
            else:
                var = var[0]
        grad_fn = var.grad_fn
        if grad_fn is None:
            return
        originals = inputs
        if not isinstance(result, Tensor):
            if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
                warnings.warn("Using non-full backward hooks on a Module that does not return a single Tensor or a "
                              "tuple of Tensors is deprecated and will be removed in future versions. This hook will "
                              "be missing some of the grad_output. Please use register_full_backward_hook to get the "
                              "documented behavior.", FutureWarning, stacklevel=user_stacklevel())
                return
        else:
            result = (result,)
        if not isinstance(originals, Tensor):
            if not (isinstance(originals, tuple) and all(isinstance(i, Tensor) for i in originals)):
                warnings.warn("Using non-full backward hooks on a Module that does not take as input a single Tensor "
                              "or a tuple of Tensors is deprecated and will be removed in future versions. This hook "
                              "will be missing some of the grad_input. Please use register_full_backward_hook to get "
                              "the documented behavior.", FutureWarning, stacklevel=user_stacklevel())
                return
        else:
            originals = (originals,)
        out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
        if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
            warnings.warn("Using a non-full backward hook when outputs are nested in python data structure is "
                          "deprecated and will be removed in future versions. This hook will be missing some "
                          "grad_output.", FutureWarning, stacklevel=user_stacklevel())
        elif len(out_grad_fn) > 1:
            warnings.warn("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
                          "deprecated and will be removed in future versions. This hook will be missing some "
                          "grad_output. Please use register_full_backward_hook to get the documented behavior.",
                          FutureWarning, stacklevel=user_stacklevel())
        else:
            inputs_grad_fn = {i.grad_fn for i in originals if i.grad_fn is not None}
            next_functions = set()
            for n, _ in grad_fn.next_functions:
                if n is not None and n is self.__dict__.get("input_ctx"):  # the inputs' own edges, as without it
                    next_functions.update(i.grad_fn if i.grad_fn is not None else object()
                                          for i in originals if i.requires_grad)
                else:
                    next_functions.add(n)
            if inputs_grad_fn != next_functions:
                warnings.warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is "
                              "deprecated and will be removed in future versions. This hook will be missing some "
                              "grad_input. Please use register_full_backward_hook to get the documented behavior.",
                              FutureWarning, stacklevel=user_stacklevel())


def _check_versions(tensors):
    for i, (ref, version) in enumerate(tensors):
        t = ref()
        if t is not None and t._version != version:
            raise RuntimeError(_VIEW_MODIFIED.format(i))
