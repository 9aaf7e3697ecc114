"""Weight normalization (https://arxiv.org/abs/1602.07868), torch's deprecated hook-based form:
`weight_g` and `weight_v` parameters and a forward pre-hook that recomputes `weight` before every forward.

`norm_except_dim` and `_weight_norm` are torch's `torch.norm_except_dim` / `torch._weight_norm`, composed of
tapegrad's ops (so they are differentiable, to any order); parametrizations.weight_norm uses them too.
"""
import warnings

from ..parameter import Parameter, UninitializedParameter
from ..._warnings import user_stacklevel

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def norm_except_dim(v, pow=2, dim=0):
    """torch.norm_except_dim: the p-norm of v over every dimension but `dim` (keeping them as size 1);
    dim=-1 is the norm of the whole tensor (a 0-d tensor)."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        output_size = (v.size(0),) + (1,) * (v.dim() - 1)
        return v.contiguous().reshape(v.size(0), -1).norm(pow, 1).reshape(output_size)
    if dim == v.dim() - 1:
        output_size = (1,) * (v.dim() - 1) + (v.size(v.dim() - 1),)
        return v.contiguous().reshape(-1, v.size(v.dim() - 1)).norm(pow, 0).reshape(output_size)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm(v, g, dim=0):
    """torch._weight_norm: v * (g / ||v||), the norm over every dimension but `dim`."""
    return v * (g / norm_except_dim(v, 2, dim))


_DEPRECATION = ("`torch.nn.utils.weight_norm` is deprecated in favor of "
                "`torch.nn.utils.parametrizations.weight_norm`.")


class WeightNorm:
    name: str
    dim: int

    def __init__(self, name, dim):
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn(_DEPRECATION, FutureWarning, stacklevel=user_stacklevel())
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Replace `module.<name>` by `<name>_g * <name>_v / ||<name>_v||` (norm over all dims but `dim`; dim=None:
    the whole tensor), recomputed by a forward pre-hook. Deprecated (FutureWarning), as in torch."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: `module.<name>` is a plain Parameter again, holding the current normalized value."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")

