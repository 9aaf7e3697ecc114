"""BatchNorm1d/2d/3d, SyncBatchNorm, LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm and CrossMapLRN2d: torch's
parameters, buffers (running_mean, running_var, num_batches_tracked), momentum rule, eval mode and reprs."""
import functools
import numbers

import numpy as np

from ... import creation
from ...autograd import Function
from ...grad_mode import no_grad
from ...ops.volumetric import local_response_norm
from ...tape import _local as _tape_local, untraceable
from ...tensor import _new
from .. import functional as F, init
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LayerNorm", "GroupNorm", "RMSNorm",
           "LocalResponseNorm", "CrossMapLRN2d"]


class _NormBase(Module):
    """What BatchNorm and InstanceNorm share, as torch's _NormBase: parameters, running statistics, repr."""
    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(creation.empty(num_features, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(creation.empty(num_features, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", creation.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", creation.tensor(0, dtype=np.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # a state_dict of version < 2, or with no version (no _metadata: a dict rebuilt key by key, an old checkpoint)
        # may lack num_batches_tracked: torch fills it in (this module's own, or 0)
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                    and self.num_batches_tracked.device.type != "meta" else creation.tensor(0, dtype=np.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            if _tape_local.tracing is None:
                self.num_batches_tracked.add_(1)
            elif self.momentum is None:  # (its factor, 1 / num_batches_tracked, changes at every call)
                untraceable("BatchNorm with momentum=None in training mode (a cumulative average)")
            else:  # tapegrad.compile: each replay counts the batch after its rows
                _tape_local.tape.defer("call", self.num_batches_tracked.add_, (1,), [])
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        tracked = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if tracked else None, self.running_var if tracked else None,
                            self.weight, self.bias, use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class LayerNorm(Module):
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.empty(self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(creation.empty(self.normalized_shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return ("{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)
                + f", bias={self.bias is not None}")


class GroupNorm(Module):
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(creation.empty(num_channels, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(creation.empty(num_channels, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times weight (eps None: the
    dtype's machine epsilon, as torch)."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.empty(self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class BatchNorm3d(_BatchNorm):
    """torch.nn.BatchNorm3d: batch norm over (N, C, D, H, W)."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """torch.nn.SyncBatchNorm. As torch's on CPU: plain batch norm wherever no synchronization is needed (eval
    mode, or no initialized process group); in training with an initialized process group torch refuses CPU
    input, and so does this (tapegrad has no GPU)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        from ... import distributed
        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        if self.training and self.track_running_stats and self.num_batches_tracked is None:
            raise AssertionError("num_batches_tracked must not be None")
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        if bn_training and self.training and distributed.is_available() and distributed.is_initialized():
            raise ValueError("SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Every BatchNorm*d in module replaced by a SyncBatchNorm sharing its parameters and buffers (module itself,
        if it is one, returned as a new SyncBatchNorm), as torch's."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                          module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    module_output.weight = module.weight
                    module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output


class LocalResponseNorm(Module):
    """torch.nn.LocalResponseNorm (F.local_response_norm: torch's composition)."""

    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


@functools.cache
def _cross_map_lrn2d():
    """torch's CrossMapLRN2d autograd Function (torch/nn/modules/_functions.py), its running-window forward and
    hand-written backward reproduced on arrays (torch's backward is not the exact derivative of its forward at
    the channel edges; this one is torch's)."""
    class CrossMapLRN2d(Function):
        @staticmethod
        def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
            ctx.size, ctx.alpha, ctx.beta, ctx.k = size, alpha, beta, k
            if input.dim() != 4:
                raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
            x = input.detach().numpy()
            channels = x.shape[1]
            square = x * x
            pre_pad = int((size - 1) / 2 + 1)
            scale = np.empty_like(x)
            scale[:, 0] = square[:, :min(pre_pad, channels)].sum(axis=1)
            for c in range(1, channels):  # (torch's running window, with its edge behaviour)
                scale[:, c] = scale[:, c - 1]
                if c < channels - pre_pad + 1:
                    scale[:, c] += square[:, c + pre_pad - 1]
                if c > pre_pad:
                    scale[:, c] -= square[:, c - pre_pad]
            scale = scale * x.dtype.type(alpha / size) + x.dtype.type(k)
            out = np.power(scale, x.dtype.type(-beta)) * x
            ctx.scale = scale
            ctx.save_for_backward(input)
            ctx.out = out
            return _new(out)

        @staticmethod
        def backward(ctx, grad_output):
            (input,) = ctx.saved_tensors
            x, g, out, scale, size = input.detach().numpy(), grad_output.detach().numpy(), ctx.out, ctx.scale, ctx.size
            N, C, H, W = x.shape
            dt = x.dtype.type
            grad = np.power(scale, dt(-ctx.beta)) * g
            inverse_pre_pad = int(size - (size - 1) / 2)
            padded = np.zeros((N, C + size - 1, H, W), x.dtype)
            padded[:, inverse_pre_pad:inverse_pre_pad + C] = g * out / scale
            accum = padded[:, :size - 1].sum(axis=1)
            cache = dt(2 * ctx.alpha * ctx.beta / size)
            for c in range(C):
                accum = accum + padded[:, c + size - 1]
                grad[:, c] += -cache * x[:, c] * accum
                accum = accum - padded[:, c]
            return _new(grad), None, None, None, None

    return CrossMapLRN2d


class CrossMapLRN2d(Module):
    """torch.nn.CrossMapLRN2d (4-d input; torch's own autograd Function, first order only, as torch's)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return _cross_map_lrn2d().apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class _LazyNormBase(LazyModuleMixin, _NormBase):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        # affine, bias and running statistics off: nothing made that the first forward would replace
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = creation.tensor(0, dtype=np.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]  # (torch's: dim 1, for unbatched inputs too)
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """torch.nn.LazyBatchNorm1d: num_features from the first input's dimension 1."""

    cls_to_become = BatchNorm1d
    _check_input_dim = BatchNorm1d._check_input_dim


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """torch.nn.LazyBatchNorm2d: num_features from the first input's dimension 1."""

    cls_to_become = BatchNorm2d
    _check_input_dim = BatchNorm2d._check_input_dim


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """torch.nn.LazyBatchNorm3d: num_features from the first input's dimension 1."""

    cls_to_become = BatchNorm3d
    _check_input_dim = BatchNorm3d._check_input_dim
