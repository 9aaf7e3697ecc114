"""torch.backends: the flags scripts set (they change nothing in tapegrad's NumPy/Numba compute, which is
deterministic and has no TF32 or cuDNN), and the availability queries (False for cuDNN, CUDA, MPS, oneDNN, oneMKL,
OpenMP and opt_einsum: tapegrad calls none of them)."""
from . import cpu, cuda, cudnn, mha, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401
