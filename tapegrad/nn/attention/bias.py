"""torch.nn.attention.bias: causal masks that scaled_dot_product_attention takes as attn_mask."""
import enum

from ...ops.attention import CausalBias

__all__ = ["CausalVariant", "CausalBias", "causal_upper_left", "causal_lower_right"]


class CausalVariant(enum.IntEnum):
    UPPER_LEFT = 1
    LOWER_RIGHT = 2


def _causal(variant, name, size):
    if len(size) != 2:
        raise AssertionError(f"{name} only supports 2D tensors")
    return CausalBias(variant, *size)


def causal_upper_left(*size):
    """The causal mask aligned at the upper left: query i attends to keys 0..i."""
    return _causal(CausalVariant.UPPER_LEFT, "causal_upper_left", size)


def causal_lower_right(*size):
    """The causal mask aligned at the lower right: the last query attends to every key."""
    return _causal(CausalVariant.LOWER_RIGHT, "causal_lower_right", size)
