"""torch.nn.parallel: DistributedDataParallel (gradients averaged across processes over MPI) and DataParallel."""
from .data_parallel import DataParallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401
