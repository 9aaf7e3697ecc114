"""torch.nn.functional: the ops, under torch's functional names."""
from ..ops import (binary_cross_entropy_with_logits, elu, gelu, hardtanh, leaky_relu, relu,  # noqa: F401
                   sigmoid, silu, softplus, tanh)
