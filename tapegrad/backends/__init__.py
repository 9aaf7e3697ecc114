"""torch.backends: the flags scripts set (they change nothing in tapegrad's NumPy/Numba compute, which is
deterministic and has no TF32 or cuDNN), and the availability queries (False for cuDNN, CUDA and MPS)."""
from . import cuda, cudnn, mha, mps  # noqa: F401
