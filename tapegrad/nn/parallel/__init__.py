"""torch.nn.parallel: DistributedDataParallel (gradients averaged across processes over MPI) and DataParallel."""
from .data_parallel import DataParallel, data_parallel  # noqa: F401  (the function shadows its module, as torch's)
from .distributed import DistributedDataParallel  # noqa: F401
