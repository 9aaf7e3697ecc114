"""DataParallel: on a machine without CUDA (tapegrad's case) torch's DataParallel wraps the module and calls it;
its functional form raises torch's error there."""
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


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """torch.nn.parallel.data_parallel: without CUDA, torch's error (it finds no device type to replicate onto)."""
    raise RuntimeError("device type could not be determined")
