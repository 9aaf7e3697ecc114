"""torch.nn.modules.lazy.LazyModuleMixin: the base of the Lazy modules (LazyLinear in linear.py, LazyConv* in conv.py,
LazyBatchNorm* in normalization.py, LazyInstanceNorm* in instancenorm.py, where torch keeps them): parameters whose
shapes the first forward infers, after which the module turns into its ordinary class (`cls_to_become`) and draws
its initial values as that class does, in torch's order, so that the values after `manual_seed` equal torch's."""
import itertools

from ...grad_mode import no_grad
from ..parameter import is_lazy
from .module import Module

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """torch.nn.modules.lazy.LazyModuleMixin: a forward pre-hook calls `initialize_parameters(*input)` at the first
    call, checks that nothing is left uninitialized, removes itself and turns the module into `cls_to_become`.
    `load_state_dict` into an uninitialized module materializes its parameters and buffers first, with the shapes
    of the loaded tensors."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # torch registers this with with_kwargs=True; tapegrad's pre-hooks take the positional arguments, which
        # are all that the Lazy modules' initialize_parameters read
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)

    def __call__(self, *args, **kwargs):
        if kwargs and "_initialize_hook" in self.__dict__:
            # tapegrad's forward pre-hooks take the positional arguments only: a call that passes the input by
            # keyword infers the shapes here, with the keywords, as torch's with_kwargs hook does
            self._infer_parameters(self, args, kwargs)
        return Module.__call__(self, *args, **kwargs)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # uninitialized entries go in as they are (detach() would make an ordinary empty tensor of them)
        for name, param in self._parameters.items():
            if param is not None:
                if not (is_lazy(param) or keep_vars):
                    param = param.detach()
                destination[prefix + name] = param
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                if not (is_lazy(buf) or keep_vars):
                    buf = buf.detach()
                destination[prefix + name] = buf

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # torch's _lazy_load_hook (a load_state_dict pre-hook there): materialize with the loaded shapes, then load
        hidden = {}
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                if not is_lazy(state_dict[key]):
                    with no_grad():
                        param.materialize(state_dict[key].shape)
                else:  # both uninitialized: torch leaves it as it is and counts the key as loaded
                    hidden[name] = param
        if hidden:
            state_dict = {k: v for k, v in state_dict.items() if k[len(prefix):] not in hidden}
            for name in hidden:
                (self._parameters if name in self._parameters else self._buffers)[name] = None
        try:
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                          error_msgs)
        finally:
            for name, param in hidden.items():
                (self._parameters if name in self._parameters else self._buffers)[name] = param

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self):
        for param in itertools.chain(self._parameters.values(), self._buffers.values()):
            if is_lazy(param):
                return True
        return False

    def _infer_parameters(self, module, args, kwargs=None):
        kwargs = kwargs if kwargs else {}
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        delattr(module, "_initialize_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")
