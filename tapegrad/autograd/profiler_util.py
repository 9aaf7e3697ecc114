"""torch.autograd.profiler_util: the profiler's events (FunctionEvent, FunctionEventAvg), their list (EventList:
key_averages, table, export_chrome_trace) and the table's layout, as torch's."""
import json
import math
from collections import defaultdict
from enum import Enum

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval", "DeviceType"]


class DeviceType(Enum):
    """torch.autograd.DeviceType (the members scripts compare against)."""
    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes):
    KB = 1024
    MB = 1024 * KB
    GB = 1024 * MB
    if abs(nbytes) >= GB:
        return f"{nbytes * 1.0 / GB:.2f} GB"
    if abs(nbytes) >= MB:
        return f"{nbytes * 1.0 / MB:.2f} MB"
    if abs(nbytes) >= KB:
        return f"{nbytes * 1.0 / KB:.2f} KB"
    return str(nbytes) + " B"


class Interval:
    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


class _FormattedTimes:
    """The `*_str` attributes and averages both event classes have."""

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0

    cuda_time = device_time

    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))
    device_time_str = property(lambda self: _format_time(self.device_time))
    device_time_total_str = property(lambda self: _format_time(self.device_time_total))
    self_device_time_total_str = property(lambda self: _format_time(self.self_device_time_total))

    # a CPU-only profiler: no device time or memory (torch's names, for sort_by="cuda_time_total" & co.)
    device_time_total = self_device_time_total = 0
    device_memory_usage = self_device_memory_usage = 0
    cuda_time_total = self_cuda_time_total = 0
    cuda_memory_usage = self_cuda_memory_usage = 0


class FunctionEvent(_FormattedTimes):
    """One op call, record_function range or backward: times in microseconds, as torch's."""

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, stack=None, cpu_memory_usage=0,
                 flops=None, is_user_annotation=False, use_device=None, category="cpu_op"):
        self.id = id
        self.name = name
        self.overload_name = ""
        self.thread = thread
        self.fwd_thread = thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.cpu_memory_usage = cpu_memory_usage
        self.flops = flops if flops is not None else 0
        self.is_user_annotation = is_user_annotation
        self.use_device = use_device
        self.cpu_children = []
        self.cpu_parent = None
        self.count = 1
        self.node_id = -1
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.device_type = DeviceType.CPU
        self.device_index = 0
        self.sequence_nr = -1
        self.scope = 0
        self.kernels = []
        self.trace_name = name
        if name.startswith("ProfilerStep#"):  # (torch's wildcard: the steps aggregate in the table; the trace
            self.name = "ProfilerStep*"       # keeps each step's name)
        self.category = category

    def append_cpu_child(self, child):
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        self.cpu_parent = parent

    @property
    def key(self):
        return self.name

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(child.cpu_memory_usage for child in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name} "
                f"device_type={self.device_type} node_id={self.node_id} cpu_time={self.cpu_time_str} "
                f"start_us={self.time_range.start} end_us={self.time_range.end} "
                f"cpu_children={str([child.id for child in self.cpu_children])} None_time={self.device_time_str} "
                f"name={self.name} thread={self.thread} input_shapes={str(self.input_shapes)} "
                f"cpu_memory_usage={self.cpu_memory_usage} None_memory_usage=0 "
                f"is_async={self.is_async} is_remote={self.is_remote} seq_nr={self.sequence_nr} "
                f"is_legacy={self.is_legacy}>")


class FunctionEventAvg(_FormattedTimes):
    """The events of one key (and input shapes, when grouped by them), summed."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.cpu_time_total = 0
        self.self_cpu_time_total = 0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.is_user_annotation = False
        self.flops = 0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.overload_name = other.overload_name
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.count += other.count
        self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str}  self_None_time=0.000us None_time=0.000us "
                f"input_shapes={str(self.input_shapes)} cpu_memory_usage={self.cpu_memory_usage} "
                f"None_memory_usage=0>")


class EventList(list):
    """A list of FunctionEvents (or FunctionEventAvgs) with torch's table, averages and trace export."""

    def __init__(self, *args, **kwargs):
        use_device = kwargs.pop("use_device", None)
        profile_memory = kwargs.pop("profile_memory", False)
        with_flops = kwargs.pop("with_flops", False)
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._tree_built = True

    def _build_tree(self):
        self._tree_built = True

    def __str__(self):
        return self.table()

    @property
    def self_cpu_time_total(self):
        return sum(event.self_cpu_time_total for event in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """Print an EventList as a nicely formatted table (torch's columns and layout)."""
        return _build_table(self, sort_by=sort_by, row_limit=row_limit,
                            max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, header=header,
                            profile_memory=self._profile_memory, with_flops=self._with_flops,
                            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path):
        """Export an EventList as a Chrome tracing tools file (a JSON list of complete events)."""
        out = [{"name": evt.trace_name, "ph": "X", "ts": evt.time_range.start, "dur": evt.time_range.elapsed_us(),
                "tid": evt.thread, "pid": "CPU functions", "args": {}} for evt in self if evt.trace_name is not None]
        with open(path, "w") as f:
            json.dump(out, f)

    def supported_export_stacks_metrics(self):
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total", "self_privateuse1_time_total"]

    def export_stacks(self, path, metric):
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: " + str(self.supported_export_stacks_metrics()))
        translate_table = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for evt in self:
                if evt.stack and len(evt.stack) > 0:
                    metric_value = getattr(evt, metric.replace("cuda", "device").replace("xpu", "device")
                                           .replace("privateuse1", "device"))
                    if int(metric_value) > 0:
                        stack_str = ";".join(entry.translate(translate_table) for entry in reversed(evt.stack))
                        f.write(stack_str + " " + str(int(metric_value)) + "\n")

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        """Averages all function events over their keys (and input shapes, top stack entries when asked)."""
        stats = defaultdict(FunctionEventAvg)
        for evt in self:
            key = [str(evt.key), str(evt.node_id), str(evt.device_type), str(evt.is_legacy),
                   str(evt.is_user_annotation)]
            if group_by_overload_name:
                key.append(evt.overload_name)
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            stats[tuple(key)].add(evt)
        avg_list = EventList(stats.values(), use_device=self._use_device, profile_memory=self._profile_memory,
                             with_flops=self._with_flops)
        for evt in avg_list:
            evt.stack = evt.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_overload_name:
                evt.overload_name = ""
        return avg_list

    def total_average(self):
        total_stat = FunctionEventAvg()
        for evt in self:
            total_stat += evt
            total_stat.key = None
        total_stat.key = "Total"
        return total_stat


def _build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                 max_name_column_width=55, max_shapes_column_width=80, with_flops=False, profile_memory=False,
                 top_level_events_only=False, time_unit=None):
    """torch.autograd.profiler_util._build_table, for CPU events."""
    if len(events) == 0:
        return ""
    has_input_shapes = any(evt.input_shapes is not None and len(evt.input_shapes) > 0 for evt in events)
    if sort_by is not None:
        events = EventList(sorted(events, key=lambda evt: getattr(
            evt, sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")),
            reverse=True), profile_memory=profile_memory, with_flops=with_flops)
    name_column_width = max(len(evt.key) for evt in events) + 4
    if max_name_column_width is not None:
        name_column_width = min(name_column_width, max_name_column_width)
    shapes_column_width = max(len(str(evt.input_shapes)) for evt in events) + 4
    if max_shapes_column_width is not None:
        shapes_column_width = min(shapes_column_width, max_shapes_column_width)
    DEFAULT_COLUMN_WIDTH = 12
    stacks = [evt.stack for evt in events if evt.stack is not None and len(evt.stack) > 0]
    has_stack = len(stacks) > 0
    src_column_width = None
    if has_stack:
        src_column_width = max(max(len(entry) for entry in stack) for stack in stacks) + 4
        if max_src_column_width is not None:
            src_column_width = min(src_column_width, max_src_column_width)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    SPACING_SIZE = 2
    fmt = {"row": "", "sep": "", "len": -SPACING_SIZE}

    def add_column(padding, text_dir=">"):
        fmt["row"] += "{: " + text_dir + str(padding) + "}" + " " * SPACING_SIZE
        fmt["sep"] += "-" * padding + " " * SPACING_SIZE
        fmt["len"] += padding + SPACING_SIZE

    add_column(name_column_width)
    for _ in headers[1:]:
        add_column(DEFAULT_COLUMN_WIDTH)
    if has_input_shapes:
        headers.append("Input Shapes")
        add_column(shapes_column_width)
    if has_stack:
        headers.append("Source Location")
        add_column(src_column_width, text_dir="<")
    flops_scale = 1.0
    if with_flops:
        raw_flops = [evt.flops for evt in events if evt.flops > 0]
        if raw_flops:
            names = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
            log_flops = max(0, min(math.log10(min(raw_flops)) / 3, float(len(names) - 1)))
            flops_scale = pow(10, math.floor(log_flops) * -3.0)
            headers.append(f"Total {names[int(log_flops)]}")
            add_column(DEFAULT_COLUMN_WIDTH)
        else:
            with_flops = False
    row_format, header_sep, line_length = fmt["row"], fmt["sep"], fmt["len"]
    result = []

    def append(s):
        result.append(s)
        result.append("\n")

    sum_self_cpu_time_total = sum(evt.self_cpu_time_total for evt in events)
    if header is not None:
        append("=" * line_length)
        append(header)
    if top_level_events_only:
        append("=" * line_length)
        append("This report only display top-level ops statistics")
    append(header_sep)
    append(row_format.format(*headers))
    append(header_sep)

    def trim_path(path, width):
        if len(path) > width:
            path = path[len(path) - width:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    def unit(time_us, default_str):
        if time_unit == "s":
            return f"{time_us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{time_us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{time_us:.3f}us"
        return default_str

    event_limit = 0
    for evt in events:
        if event_limit == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        event_limit += 1
        name = evt.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:(max_name_column_width - 3)] + "..."
        evt.self_cpu_percent = _format_time_share(evt.self_cpu_time_total, sum_self_cpu_time_total)
        evt.total_cpu_percent = _format_time_share(evt.cpu_time_total, sum_self_cpu_time_total)
        row_values = [name, evt.self_cpu_percent, unit(evt.self_cpu_time_total, evt.self_cpu_time_total_str),
                      evt.total_cpu_percent, unit(evt.cpu_time_total, evt.cpu_time_total_str),
                      unit(evt.cpu_time, evt.cpu_time_str)]
        if profile_memory:
            row_values += [_format_memory(evt.cpu_memory_usage), _format_memory(evt.self_cpu_memory_usage)]
        row_values.append(evt.count)
        if has_input_shapes:
            row_values.append(str(evt.input_shapes)[:shapes_column_width])
        if has_stack:
            row_values.append(trim_path(evt.stack[0], src_column_width) if len(evt.stack) > 0 else "")
        if with_flops:
            row_values.append("--" if evt.flops <= 0 else f"{evt.flops * flops_scale:8.3f}")
        append(row_format.format(*row_values))
        if has_stack:
            empty_headers = [""] * (len(headers) - 1)
            for entry in evt.stack[1:]:
                append(row_format.format(*(empty_headers + [trim_path(entry, src_column_width)])))
            empty_headers.append("")
            append(row_format.format(*empty_headers))
    append(header_sep)
    append(f"Self CPU time total: {unit(sum_self_cpu_time_total, _format_time(sum_self_cpu_time_total))}")
    return "".join(result)
