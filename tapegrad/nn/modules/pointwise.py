"""PReLU, Hardswish, Mish, GLU (torch's parameters, init and reprs)."""
from ... import creation
from .. import functional as F, init
from ..parameter import Parameter
from .module import Module

__all__ = ["PReLU", "Hardswish", "Mish", "GLU"]


class PReLU(Module):
    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters, self.init = num_parameters, init
        super().__init__()
        self.weight = Parameter(creation.empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Hardswish(Module):
    __constants__ = ["inplace"]

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class Mish(Module):
    __constants__ = ["inplace"]

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.mish(input, self.inplace)


class GLU(Module):
    __constants__ = ["dim"]

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"
