"""torch.optim.Muon is not implemented: its Newton-Schulz iteration runs in bfloat16 matrix products, whose
rounding tapegrad cannot reproduce in NumPy."""

__all__ = ["Muon"]


class Muon:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.optim.Muon is not supported by tapegrad (its Newton-Schulz orthogonalization "
                                  "runs in bfloat16); use SGD, Adam or AdamW")
