"""parameters_to_vector / vector_to_parameters."""
import numpy as np

from ...tensor import Tensor
from ... import ops


def parameters_to_vector(parameters):
    """One flat tensor of all parameters' values (recorded: it is differentiable, as torch's)."""
    return ops.cat([ops.reshape(p, (-1,)) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of vec into the parameters' storage."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    data = vec._data.reshape(-1)
    for param in parameters:
        n = param._data.size
        if data[pointer: pointer + n].size != n:  # (torch's view_as error)
            raise RuntimeError(f"shape '{list(param._data.shape)}' is invalid for input of size "
                               f"{data[pointer: pointer + n].size}")
        np.copyto(param._data, data[pointer: pointer + n].reshape(param._data.shape), casting="unsafe")
        param._bump_version()
        pointer += n
