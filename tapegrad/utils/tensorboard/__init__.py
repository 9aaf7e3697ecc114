"""torch.utils.tensorboard: SummaryWriter writing TensorBoard event files through the optional `tensorboard`
package (pip install "tapegrad[tensorboard]"), readable by TensorBoard."""
try:
    import tensorboard as _tensorboard  # noqa: F401
except ImportError as e:
    raise ImportError("torch.utils.tensorboard needs the optional `tensorboard` package: "
                      "pip install \"tapegrad[tensorboard]\" (or pip install tensorboard)", name=e.name) from e

from .writer import FileWriter, SummaryWriter  # noqa: E402,F401
from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402,F401

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
