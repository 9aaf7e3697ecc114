"""torch.backends.mha: whether TransformerEncoder (and MultiheadAttention) may take torch's inference fast path.
tapegrad computes the same values either way, except where the fast path's results differ from the general
path's: TransformerEncoder's padded positions, which the fast path returns as zeros (nn.TransformerEncoder)."""

_is_fastpath_enabled = True


def get_fastpath_enabled():
    return _is_fastpath_enabled


def set_fastpath_enabled(value):
    global _is_fastpath_enabled
    _is_fastpath_enabled = value
