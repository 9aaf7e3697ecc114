"""``repr`` of a tensor, byte-for-byte as PyTorch prints it.

A port of ``torch/_tensor_str.py`` (strided, real, CPU tensors), under the options of
``set_printoptions``, that works on plain NumPy arrays.  Function names mirror
torch's so the two can be compared side by side.
"""

import math

import numpy as np



class _PrintOptions:
    """torch's PRINT_OPTS; the defaults are torch.set_printoptions(profile="default")."""

    def __init__(self):
        self.precision = 4
        self.threshold = 1000  # summarize when numel exceeds this
        self.edgeitems = 3
        self.linewidth = 80
        self.sci_mode = None   # None: chosen per tensor


PRINT_OPTS = _PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """torch.set_printoptions: a profile first, then the options given; sci_mode is always set (None: auto)."""
    if profile is not None and profile in _PROFILES:  # (torch ignores an unknown profile name)
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    return dict(vars(PRINT_OPTS))

_PREFIX = "tensor("
# dtypes whose name torch leaves out of a non-empty repr, besides the default.
_IMPLIED_DTYPES = ("torch.int64", "torch.bool")


class _Formatter:
    """Chooses one number style and column width for a whole tensor."""

    def __init__(self, data):
        self.floating = data.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = data.reshape(-1)

        if not self.floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
            return

        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return  # only zeros / nan / inf: keep int-style defaults

        # torch measures the spread in double precision.
        absvals = np.abs(vals).astype(np.float64)
        vmin, vmax = absvals.min(), absvals.max()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        self.sci_mode = (bool(vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4)
                         if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode)

        if self.sci_mode:
            fmt, extra = f"{{:.{PRINT_OPTS.precision}e}}", 0
        elif self.int_mode:
            fmt, extra = "{:.0f}", 1  # +1 for the trailing "." of "3."
        else:
            fmt, extra = f"{{:.{PRINT_OPTS.precision}f}}", 0
        for value in vals.tolist():
            self.max_width = max(self.max_width, len(fmt.format(value)) + extra)

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."  # marks the tensor as floating
            else:
                ret = f"{value:.{PRINT_OPTS.precision}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _edge_indices(n, summarize):
    edge = PRINT_OPTS.edgeitems
    if summarize and n > 2 * edge:
        return list(range(edge)) + list(range(n - edge, n))
    return list(range(n))


def _get_summarized_data(data):
    # Only the printed elements decide the format (torch's get_summarized_data).
    if data.ndim == 0:
        return data
    return data[np.ix_(*(_edge_indices(n, True) for n in data.shape))]


def _vector_str(data, indent, summarize, formatter):
    element_length = formatter.width() + 2  # ", " between elements
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    fmt = formatter.format
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        items = ["..."]
    elif summarize and data.shape[0] > 2 * edge:
        items = (
            [fmt(v) for v in data[:edge].tolist()]
            + [" ..."]
            + [fmt(v) for v in data[-edge:].tolist()]
        )
    else:
        items = [fmt(v) for v in data.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(data, indent, summarize, formatter):
    if data.ndim == 0:
        return formatter.format(data.item())
    if data.ndim == 1:
        return _vector_str(data, indent, summarize, formatter)
    n = data.shape[0]
    slices = [
        _tensor_str_with_formatter(data[i], indent + 1, summarize, formatter)
        for i in _edge_indices(n, summarize)
    ]
    if summarize and n > 2 * PRINT_OPTS.edgeitems:
        slices.insert(PRINT_OPTS.edgeitems, "...")
    # Higher dims are separated by ndim-1 newlines (blank lines between blocks).
    return "[" + ("," + "\n" * (data.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _tensor_str(data, indent):
    if data.size == 0:
        return "[]"
    summarize = data.size > PRINT_OPTS.threshold
    formatter = _Formatter(_get_summarized_data(data) if summarize else data)
    return _tensor_str_with_formatter(data, indent, summarize, formatter)


def _add_suffixes(tensor_str, suffixes, indent, force_newline=False):
    parts = [tensor_str]
    # torch's arithmetic (overcounts by 2 when there is no newline); kept
    # verbatim because it decides where suffixes wrap.
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if force_newline or last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
            force_newline = False
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def format_tensor(data, dtype_name, is_default_dtype, suffixes):
    """Return what ``repr(torch.tensor(data))`` prints.

    data: NumPy array (float32/float64/int64/int32/bool).
    dtype_name: torch spelling, e.g. ``"torch.float64"``.
    is_default_dtype: whether the dtype equals the default floating dtype
        (``torch.get_default_dtype()``, normally float32).  int64 and bool
        are additionally left unnamed for non-empty tensors, as torch does;
        an empty tensor names every dtype but the default one.
    suffixes: already-formatted trailing items, e.g. ``"requires_grad=True"``
        or ``"grad_fn=<MulBackward0>"``, appended in order.
    """
    data = np.asarray(data)
    if data.dtype.name == "bfloat16":  # (ml_dtypes'): printed from its float32 values, as torch prints it
        data = data.astype(np.float32)
    indent = len(_PREFIX)
    head = []
    if data.size == 0:
        # torch prints the shape unless it is (0,), like NumPy.
        if data.ndim != 1:
            head.append(f"size={tuple(data.shape)}")
        if not is_default_dtype:
            head.append(f"dtype={dtype_name}")
        tensor_str = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            head.append(f"size={tuple(data.shape)}")
        if not (is_default_dtype or dtype_name in _IMPLIED_DTYPES):
            head.append(f"dtype={dtype_name}")
        tensor_str = _tensor_str(data, indent)
    return _add_suffixes(_PREFIX + tensor_str, head + list(suffixes), indent)


def format_sparse(indices, values, size, dtype_name, is_default_dtype, suffixes):
    """What ``repr`` of a sparse COO tensor prints (indices, values, then size, nnz, dtype, layout, grad)."""
    indent = len(_PREFIX)
    ind_str = _tensor_str(indices, indent + len("indices=tensor("))
    if indices.size == 0:
        ind_str += f", size={tuple(indices.shape)}"
    val_str = _tensor_str(values, indent + len("values=tensor("))
    if values.size == 0:
        val_str += f", size={tuple(values.shape)}"
    head = [f"size={tuple(size)}", f"nnz={indices.shape[1]}"]
    if not is_default_dtype:
        head.append(f"dtype={dtype_name}")
    body = f"indices=tensor({ind_str}),\n" + " " * indent + f"values=tensor({val_str})"
    return _add_suffixes(_PREFIX + body, head + ["layout=torch.sparse_coo"] + list(suffixes), indent, True)
