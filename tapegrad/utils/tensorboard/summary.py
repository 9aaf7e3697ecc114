"""The Summary protocol buffers SummaryWriter writes, built as torch.utils.tensorboard.summary builds them."""
import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ...tensor import Tensor


def make_np(x):
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        return x.detach().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def scalar(name, tensor, collections=None, new_style=False, double_precision=False):
    tensor = make_np(tensor).squeeze()
    if tensor.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {tensor.size} "
                             f"and {tensor.ndim} dimensions.")
    value = float(tensor)
    if new_style:
        proto = (TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision
                 else TensorProto(float_val=[value], dtype="DT_FLOAT"))
        smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
        return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=smd)])
    return Summary(value=[Summary.Value(tag=name, simple_value=value)])


_TENSOR_FIELDS = {np.dtype(np.float32): ("DT_FLOAT", "float_val"), np.dtype(np.float64): ("DT_DOUBLE", "double_val"),
                  np.dtype(np.int32): ("DT_INT32", "int_val"), np.dtype(np.int64): ("DT_INT64", "int64_val"),
                  np.dtype(np.int16): ("DT_INT16", "int_val"), np.dtype(np.int8): ("DT_INT8", "int_val"),
                  np.dtype(np.uint8): ("DT_UINT8", "int_val"), np.dtype(np.bool_): ("DT_BOOL", "bool_val")}


def tensor_proto(tag, tensor):
    a = make_np(tensor) if not isinstance(tensor, Tensor) else tensor.detach().numpy()
    if a.nbytes >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if a.dtype not in _TENSOR_FIELDS:
        raise ValueError(f"{tag} has unsupported tensor dtype {a.dtype}")
    dtype, field = _TENSOR_FIELDS[a.dtype]
    proto = TensorProto(dtype=dtype, tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=x) for x in a.shape]),
                        **{field: a.reshape(-1).tolist()})
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="tensor"))
    return Summary(value=[Summary.Value(tag=tag, metadata=smd, tensor=proto)])


def histogram(name, values, bins, max_bins=None):
    values = make_np(values)
    return Summary(value=[Summary.Value(tag=name, histo=make_histogram(values.astype(float), bins, max_bins))])


def make_histogram(values, bins, max_bins=None):
    """The histogram proto (TensorBoard's histogram.cc logic, as torch writes it)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    num_bins = len(counts)
    if max_bins is not None and num_bins > max_bins:
        subsampling = num_bins // max_bins
        remainder = num_bins % subsampling
        if remainder != 0:
            counts = np.pad(counts, pad_width=[[0, subsampling - remainder]], mode="constant", constant_values=0)
        counts = counts.reshape(-1, subsampling).sum(axis=-1)
        new_limits = np.empty((counts.size + 1,), limits.dtype)
        new_limits[:-1] = limits[:-1:subsampling]
        new_limits[-1] = limits[-1]
        limits = new_limits
    # the support: TensorBoard keeps right bin limits only, so one empty bin to the left is kept
    cum_counts = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum_counts, [0, cum_counts[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1: end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start: end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


def text(tag, text):
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=smd, tensor=proto)])
