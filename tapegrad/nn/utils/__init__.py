"""torch.nn.utils: gradient clipping, parameter/vector conversion, parametrizations (weight_norm, spectral_norm,
orthogonal), their hook-based predecessors, conv/linear + BatchNorm fusion, skip_init, stateless calls."""
from . import parametrizations, parametrize, rnn, stateless  # noqa: F401
from . import prune  # noqa: F401
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,  # noqa: F401
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401
from .init import skip_init  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401
