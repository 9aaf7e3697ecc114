"""torch.device, the default device, and the checks that keep every tensor on the CPU or the meta device.

tapegrad computes on the CPU only; the meta device holds tensors without data (_meta.py). A device object of
any type can be made (as in a CPU-only torch build); making or moving a tensor to another device raises the
error a CPU-only torch raises ("Torch not compiled with CUDA enabled"), never a silent CPU tensor.
"""
_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
          "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_NO_ACCELERATOR = "Cannot access accelerator device when none is available."


class device:
    """torch.device(type, index=None) / torch.device("type:index") / torch.device(other_device)."""
    __slots__ = ("_type", "_index", "_previous")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): argument 'type' (position 1) must be str, not torch.device")
            self._type, self._index = type._type, type._index
            return
        if isinstance(type, int) and not isinstance(type, bool):
            raise RuntimeError(_NO_ACCELERATOR)  # torch.device(0) means "accelerator 0"
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({type.__class__.__name__}), "
                            f"but expected one of:\n * (torch.device device)\n * (str type, int index = -1)\n")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            raise TypeError(f"device(): argument 'index' (position 2) must be int, not "
                            f"{index.__class__.__name__}")
        name, sep, idx = type.partition(":")
        if name not in _TYPES:
            if not name.isalpha() or not name:
                raise RuntimeError(f"Invalid device string: '{type}'")
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of device string: "
                               f"{type}")
        if sep:
            if not idx.isdigit() or (len(idx) > 1 and idx[0] == "0"):
                raise RuntimeError(f"Invalid device string: '{type}'")
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed "
                                   f"explicitly: {type}")
            index = int(idx)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self._type, self._index = name, index

    @property
    def type(self):
        return self._type

    @property
    def index(self):
        return self._index

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self):
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __eq__(self, other):
        return isinstance(other, device) and (self._type, self._index) == (other._type, other._index)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((self._type, self._index))

    def __reduce__(self):
        return (device, (self._type, self._index))

    # `with torch.device("cpu"):` makes it the default device of the factory functions inside
    def __enter__(self):
        global _default
        self._previous = _default
        _default = self
        return self

    def __exit__(self, *exc):
        global _default
        _default = self._previous
        return False


CPU = device("cpu")
META = device("meta")
_default = CPU


def default_type():
    """The default device's type ("cpu", "meta", ...), without get_default_device's refusal of an unavailable one."""
    return _default._type


def get_default_device():
    if _default._type not in ("cpu", "meta"):
        raise unavailable(_default)  # (torch makes a tensor there to find the index: its error)
    return _default


def set_default_device(dev):
    """torch.set_default_device: the device of tensors made without device=. None means the CPU."""
    global _default
    _default = CPU if dev is None else as_device(dev)


def as_device(dev):
    if isinstance(dev, device):
        return dev
    if isinstance(dev, str):
        return device(dev)
    if isinstance(dev, int) and not isinstance(dev, bool):
        raise RuntimeError(_NO_ACCELERATOR)
    raise TypeError(f"expected a torch.device or a device string, got {type(dev).__name__}")


def unavailable(dev):
    """The error a CPU-only torch build raises for a tensor on dev."""
    kind = dev.type
    if kind == "cuda":
        return AssertionError("Torch not compiled with CUDA enabled")
    if kind == "xpu":
        return AssertionError("Torch not compiled with XPU enabled")
    return RuntimeError(f"PyTorch is not linked with support for {kind} devices")


def check(dev):
    """Resolve a device= argument (None: the default device) and raise unless it is the CPU or meta. A caller
    that makes a tensor must make a meta one for meta (`is_meta`)."""
    d = _default if dev is None else as_device(dev)
    if d._type != "cpu" and d._type != "meta":
        raise unavailable(d)
    return d


def cpu_only(dev, name):
    """check(dev) for a factory not built for the meta device: its clear error there."""
    if check(dev)._type == "meta":
        raise NotImplementedError(f"tapegrad has no meta-device version of {name} (tensors without data)")


def is_meta(dev):
    """check(dev), and whether it is the meta device."""
    return check(dev)._type == "meta"
