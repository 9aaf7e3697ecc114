"""tapegrad: reverse-mode automatic differentiation for NumPy arrays with PyTorch's autograd API.

Every op appends a row to a linear (Wengert) tape; backward replays the tape in reverse in one
Numba-compiled call. `import tapegrad as torch` runs the PyTorch code it covers unchanged.
Importing compiles nothing: kernels load on first backward (or `tapegrad.warmup()`).
"""
import warnings as _warnings

# torch computes log(0) = -inf and sqrt(-1) = nan silently; NumPy warns. Silence only warnings raised
# from tapegrad's own op code (a filter costs nothing until a warning fires; np.errstate costs 1 us/op).
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tapegrad\.")

from ._dtype import (bool, double, dtype, float, float16, float32, float64, half, int, int8, int16,  # noqa: F401
                     int32, int64, long, uint8)
from .tensor import Size, Tensor  # noqa: F401
from . import methods as _methods  # noqa: F401  (binds Tensor's methods)
from .ops import *  # noqa: F401,F403
from .ops import abs, pow, round, sum  # noqa: F401  (names that shadow builtins, exported on purpose)
from .creation import *  # noqa: F401,F403
from .creation import ones
# tensor features scripts use: out= on torch's functions, print options, sparse COO (issue 18)
from .ops.out import *  # noqa: F401,F403,E402
from ._format import get_printoptions, set_printoptions  # noqa: F401,E402
from . import sparse  # noqa: F401,E402  (torch.sparse)
from .ops.sparse import layout, sparse_coo, strided  # noqa: F401,E402
from .random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed,  # noqa: F401
                     set_rng_state)
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled, no_grad,  # noqa: F401
                                 set_grad_enabled, is_inference_mode_enabled)
from . import autograd  # noqa: F401
from .autograd.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: F401
from . import nn  # noqa: F401
from . import optim, utils  # noqa: F401
from . import distributions  # noqa: F401
from . import distributed  # noqa: F401  (imports no MPI: init_process_group does)
from .serialization import load, save  # noqa: F401

__version__ = "0.1.0"


def warmup():
    """Load (or compile, the first time) the compiled kernels now instead of at the first backward."""
    from . import kernels
    x = ones(2, requires_grad=True)
    for dt in (float32, float64):
        y = x.to(dt)
        ((y * y).tanh() + y).sum().backward()
    return kernels.load()


def get_default_dtype():
    return float32


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):
    return input.numel()


from .trace import compile  # noqa: E402,F401  (torch.compile: trace once, replay the tape)
