"""torch.nn.modules.linear_cross_entropy_options: the options of linear_cross_entropy's chunked path."""
import dataclasses

__all__ = ["LinearCrossEntropyOptions"]


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """torch.nn.LinearCrossEntropyOptions: the chunking of linear_cross_entropy's chunked path (torch's fields and
    defaults). tapegrad's linear_cross_entropy computes the same values whole, so these change no result."""
    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None
