"""torch.nn.functional: the ops, under functional's names and signatures."""
import warnings

from .. import _dtype, ops
from ..ops import (binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, gelu,  # noqa: F401
                   huber_loss, kl_div, l1_loss, linear, mse_loss, nll_loss, one_hot, sigmoid,  # noqa: F401
                   smooth_l1_loss, tanh)  # noqa: F401
from ..ops.conv import (adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d, avg_pool2d, batch_norm,  # noqa: F401
                        conv1d, conv2d, dropout1d, dropout2d, layer_norm, max_pool1d, max_pool1d_with_indices,  # noqa
                        max_pool2d, max_pool2d_with_indices)  # noqa: F401
from ..ops.padding import glu, group_norm, hardswish, mish, pad, prelu  # noqa: F401
from ..creation import full_like, zeros_like
from ..ops.composite import affine_grid, grid_sample  # noqa: F401
from ..methods import _inplace


def _maybe_inplace(input, result, inplace):
    # (written as the op's in-place form is: where its backward reads the input, the input's old row keeps a
    # copy, as torch keeps `original_self`)
    return _inplace(input, result) if inplace else result


def relu(input, inplace=False):
    return _maybe_inplace(input, ops.relu(input), inplace)


def relu_(input):
    return relu(input, inplace=True)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _maybe_inplace(input, ops.leaky_relu(input, negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False):
    return _maybe_inplace(input, ops.elu(input, alpha), inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _maybe_inplace(input, ops.hardtanh(input, min_val, max_val), inplace)


def silu(input, inplace=False):
    return _maybe_inplace(input, ops.silu(input), inplace)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


# -- activations composed of recorded ops (their gradients are those of the composition; torch's kernels give
# the same away from the break points, where torch's one-sided choices are the ones written here) ------------
_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _composed_inplace(input, fn, inplace):
    """fn(input), written into input when inplace: computed from a copy of input where one of its ops reads the
    value (selu's elu), as torch's single in-place kernel reads its own result."""
    if not inplace:
        return fn(input)
    return _inplace(input, fn(input.clone() if input.requires_grad else input))


def selu(input, inplace=False):
    return _composed_inplace(input, lambda x: ops.elu(x, _SELU_ALPHA) * _SELU_SCALE, inplace)


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    return _composed_inplace(input, lambda x: ops.elu(x / alpha, 1.0) * alpha, inplace)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def threshold(input, threshold, value, inplace=False):
    # (torch's `x <= threshold ? value : x`: NaN passes, with its gradient)
    return _composed_inplace(input, lambda x: ops.where(x <= threshold, full_like(x, value), x), inplace)


_threshold = threshold  # (its parameter shadows the name below)


def threshold_(input, threshold, value):
    return _threshold(input, threshold, value, inplace=True)


def hardsigmoid(input, inplace=False):
    return _composed_inplace(input, lambda x: ops.hardtanh(x + 3.0, 0.0, 6.0) / 6.0, inplace)


def softsign(input):
    return input / (ops.abs(input) + 1)


def tanhshrink(input):
    return input - ops.tanh(input)


def softshrink(input, lambd=0.5):
    x = ops._tensor(input)
    top = float(_dtype.finfo(x.dtype).max) if _dtype.is_float(x._data.dtype) else float("inf")
    if not 0 <= lambd <= top:  # (NaN too; torch's numbers as C++ prints them, as %g)
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype "
                           f"{_dtype.scalar_type_name(x._data.dtype)}, but found {float(lambd):g}")
    # (torch's kernel: `x * 0` inside the band, its sign kept; NaN passes, with its gradient)
    return ops.where((x >= -lambd) & (x <= lambd), x * 0, x - ops.clamp(x, -lambd, lambd))


def hardshrink(input, lambd=0.5):
    x = ops._tensor(input)
    return ops.where((x >= -lambd) & (x <= lambd), zeros_like(x), x)  # (torch's test: NaN passes)


def _implicit_dim(name, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an "
                  f"argument.", stacklevel=stacklevel)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        _implicit_dim("softmin", _stacklevel)
    return ops.softmax(-ops._tensor(input), dim, dtype)


def softplus(input, beta=1.0, threshold=20.0):
    return ops.softplus(input, beta, threshold)


def logsigmoid(input):
    return ops.log_sigmoid(input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        _implicit_dim("softmax", _stacklevel)
    return ops.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        _implicit_dim("log_softmax", _stacklevel)
    return ops.log_softmax(input, dim, dtype)


def dropout(input, p=0.5, training=True, inplace=False):
    return ops.dropout(input, p, training, inplace)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if padding_idx is not None:
        n = weight.shape[0]
        if padding_idx > 0:
            assert padding_idx < n, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -n, "Padding_idx must be within num_embeddings"
            padding_idx += n
    if max_norm is not None:
        _no_grad_embedding_renorm_(weight, input, max_norm, norm_type)
    return ops.embedding(weight, input, -1 if padding_idx is None else padding_idx, scale_grad_by_freq, sparse)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = ops.clamp_min(ops.norm(input, p, dim, keepdim=True), eps).expand_as(input)
    return input / denom


from ..ops.attention import scaled_dot_product_attention  # noqa: E402,F401
from ..ops.conv import conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d  # noqa: E402,F401
from ..ops.resample import (adaptive_max_pool1d, adaptive_max_pool1d_with_indices, adaptive_max_pool2d,  # noqa: E402
                            adaptive_max_pool2d_with_indices, fold, interpolate, max_unpool1d, max_unpool2d,  # noqa
                            pixel_shuffle, pixel_unshuffle, unfold, upsample, upsample_bilinear,  # noqa: F401
                            upsample_nearest)  # noqa: F401

# normalization, distances, bilinear, channel shuffle, embedding_bag and the margin / likelihood losses (issue 19)
from ..ops.layers import embedding_renorm_ as _no_grad_embedding_renorm_  # noqa: E402  (torch's name in F)
from ..ops.layers import (bilinear, channel_shuffle, cosine_similarity, embedding_bag,  # noqa: E402,F401
                          instance_norm, native_channel_shuffle, pairwise_distance, rms_norm)
from ..ops.ctc import ctc_loss  # noqa: E402,F401
from ..ops.metric_loss import (cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss,  # noqa: E402,F401
                               margin_ranking_loss, multilabel_soft_margin_loss, poisson_nll_loss,
                               triplet_margin_loss, triplet_margin_with_distance_loss)

from ..ops.metric_loss import multi_margin_loss, multilabel_margin_loss, soft_margin_loss  # noqa: E402,F401
from ..ops.metric_loss import linear_cross_entropy  # noqa: E402,F401


from ..ops.volumetric import (adaptive_avg_pool3d, adaptive_max_pool3d, adaptive_max_pool3d_with_indices,  # noqa: E402,F401
                               avg_pool3d, local_response_norm, lp_pool1d, lp_pool2d, lp_pool3d, max_pool3d,
                               max_pool3d_with_indices, max_unpool3d)
from ..ops.volumetric import (fractional_max_pool2d, fractional_max_pool2d_with_indices,  # noqa: E402,F401
                               fractional_max_pool3d, fractional_max_pool3d_with_indices)
from ..ops.sampling import (functional_alpha_dropout as alpha_dropout, functional_dropout3d as dropout3d,  # noqa: E402
                            functional_feature_alpha_dropout as feature_alpha_dropout,
                            functional_gumbel_softmax as gumbel_softmax, functional_rrelu as rrelu, rrelu_)

from ..ops.arrange import pdist  # noqa: E402,F401  (torch.nn.functional.pdist is torch.pdist)
from . import grad  # noqa: E402,F401  (torch.nn.functional.grad is torch.nn.grad)
