"""Padding modules: each calls F.pad with its mode (torch.nn.modules.padding)."""
from .. import functional as F
from .module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]


def _padding(padding, dims):
    """An int pads every side of the last `dims` dimensions; a sequence is F.pad's (left, right, top, ...)."""
    return (padding,) * (2 * dims) if isinstance(padding, int) else tuple(padding)


class _PadNd(Module):
    mode = None
    dims = 0

    def __init__(self, padding):
        super().__init__()
        self.padding = _padding(padding, self.dims)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    mode = "constant"

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


def _family(base, mode, name):
    return [type(f"{name}{d}d", (base,), {"dims": d, "mode": mode, "__module__": __name__}) for d in (1, 2, 3)]


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input):
        if input.dim() not in (self.dims + 1, self.dims + 2):  # (torch's _check_input_dim, before F.pad's)
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, self.mode)


CircularPad1d, CircularPad2d, CircularPad3d = _family(_CircularPadNd, "circular", "CircularPad")
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = _family(_PadNd, "reflect", "ReflectionPad")
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = _family(_PadNd, "replicate", "ReplicationPad")
ConstantPad1d, ConstantPad2d, ConstantPad3d = _family(_ConstantPadNd, "constant", "ConstantPad")
ZeroPad1d, ZeroPad2d, ZeroPad3d = _family(_ZeroPadNd, "constant", "ZeroPad")
