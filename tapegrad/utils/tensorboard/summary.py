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
        if x.dtype.name == "bfloat16":  # (NumPy has none of its own: float16, as torch converts it)
            x = x.half()
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
    a = make_np(tensor)
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


def convert_to_hwc(a, input_format):
    """An image (or a batch of them, tiled into one grid) as height x width x channels, as torch's
    convert_to_HWC lays it out."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {input_format}")
    if len(a.shape) != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. tensor shape: {a.shape}, "
                             f"input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        return make_grid(a.transpose([input_format.find(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(input_format) == 3:
        hwc = a.transpose([input_format.find(c) for c in "HWC"])
        return np.concatenate([hwc, hwc, hwc], 2) if hwc.shape[2] == 1 else hwc
    if len(input_format) == 2:
        hw = a.transpose([input_format.find(c) for c in "HW"])
        return np.stack([hw, hw, hw], 2)


def make_grid(batch, ncols=8):
    """N x C x H x W images tiled row by row into one 3 x H' x W' canvas (grayscale repeated to RGB)."""
    if batch.shape[1] == 1:
        batch = np.concatenate([batch, batch, batch], 1)
    if batch.ndim != 4 or batch.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, h, w = batch.shape
    ncols = min(n, ncols)
    nrows = int(np.ceil(float(n) / ncols))
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=batch.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = batch[i]
    return canvas


def encode_png(hwc):
    """A uint8 height x width x channels (1, 3 or 4) array as PNG bytes: 8 bits a sample, every row
    unfiltered, zlib-compressed (the standard library's; torch goes through Pillow, TensorBoard decodes both)."""
    import struct
    import zlib
    height, width, channels = hwc.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]  # grey, grey+alpha, RGB, RGBA

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = np.concatenate([np.zeros((height, 1), np.uint8), np.ascontiguousarray(hwc).reshape(height, -1)], axis=1)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """An image summary as torch writes it: float values in [0, 1] scaled by 255 (uint8 kept as is),
    clipped, truncated to uint8 and PNG-encoded."""
    a = convert_to_hwc(make_np(tensor), dataformats)
    scale_factor = 1 if a.dtype == np.uint8 else 255
    a = (a.astype(np.float32) * scale_factor).clip(0, 255).astype(np.uint8)
    if rescale != 1:
        raise NotImplementedError("tapegrad: image summaries with rescale != 1 are not implemented")
    height, width, channels = a.shape
    img = Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=encode_png(a))
    return Summary(value=[Summary.Value(tag=tag, image=img)])


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The three summaries of TensorBoard's hparams plugin (experiment, session start, session end),
    built as torch's summary.hparams builds them."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.metadata import (EXPERIMENT_TAG, PLUGIN_DATA_VERSION, PLUGIN_NAME,
                                                      SESSION_END_INFO_TAG, SESSION_START_INFO_TAG)
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in hparam_domain_discrete.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")

    def discrete(k, field):
        if k not in hparam_domain_discrete:
            return None
        return struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in hparam_domain_discrete[k]])

    hps, ssi = [], SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        # bool is an int, so a bool lands in the number branch first, as in torch
        if isinstance(v, (int, float)):
            ssi.hparams[k].number_value = v
            hps.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64"),
                                  domain_discrete=discrete(k, "number_value")))
        elif isinstance(v, str):
            ssi.hparams[k].string_value = v
            hps.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_STRING"),
                                  domain_discrete=discrete(k, "string_value")))
        elif isinstance(v, Tensor):
            ssi.hparams[k].number_value = make_np(v)[0]
            hps.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64")))
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")

    def plugin_summary(tag, **content):
        data = HParamsPluginData(version=PLUGIN_DATA_VERSION, **content)
        smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=PLUGIN_NAME,
                                                                     content=data.SerializeToString()))
        return Summary(value=[Summary.Value(tag=tag, metadata=smd)])

    exp = Experiment(hparam_infos=hps, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (plugin_summary(EXPERIMENT_TAG, experiment=exp),
            plugin_summary(SESSION_START_INFO_TAG, session_start_info=ssi),
            plugin_summary(SESSION_END_INFO_TAG,
                           session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))))
