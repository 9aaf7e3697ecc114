"""torch.func.replace_all_batch_norm_modules_: batch norms that keep no running statistics, for vmap."""
from ..nn.modules.batchnorm import _BatchNorm


def batch_norm_without_running_stats(module):
    if isinstance(module, _BatchNorm) and module.track_running_stats:
        module.running_mean = None
        module.running_var = None
        module.num_batches_tracked = None
        module.track_running_stats = False


def replace_all_batch_norm_modules_(root):
    """In place, sets running_mean and running_var to None and track_running_stats to False for every
    nn.BatchNorm module in root; returns root."""
    batch_norm_without_running_stats(root)
    for obj in root.modules():
        batch_norm_without_running_stats(obj)
    return root
