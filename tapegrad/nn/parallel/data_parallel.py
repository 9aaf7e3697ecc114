"""DataParallel: on a machine without CUDA (tapegrad's case) torch's DataParallel wraps the module and calls it."""
from ..modules.module import Module


class DataParallel(Module):
    """torch.nn.DataParallel as torch runs it without CUDA: device_ids becomes [] and forward calls the module.
    Use DistributedDataParallel (one process per replica) for parallel training."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.__dict__.update(device_ids=[], output_device=None, dim=dim)

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
