"""tapegrad: reverse-mode automatic differentiation for NumPy arrays with PyTorch's autograd API.

Every op appends a row to a linear (Wengert) tape; backward replays the tape in reverse in one
Numba-compiled call. `import tapegrad as torch` runs the PyTorch code it covers unchanged.
Importing compiles nothing: kernels load on first backward (or `tapegrad.warmup()`).
"""
import warnings as _warnings

# torch computes log(0) = -inf and sqrt(-1) = nan silently; NumPy warns. Silence only NumPy's floating-point
# messages raised from tapegrad's own op code (a filter costs nothing until a warning fires; np.errstate costs
# 1 us/op): tapegrad's own RuntimeWarnings (torch's, e.g. an ambiguous kl_divergence) still show.
_warnings.filterwarnings("ignore", message=r"(divide by zero|overflow|underflow|invalid value) encountered in",
                         category=RuntimeWarning, module=r"tapegrad\.")

from ._allocator import keep_freed_memory as _keep_freed_memory
_keep_freed_memory()  # (a training step's freed blocks reused, not faulted in again: _allocator.py)

from ._dtype import (bool, double, dtype, float, float16, float32, float64, half, int, int8, int16,  # noqa: F401
                     int32, int64, long, uint8)
from ._dtype import bfloat16  # noqa: F401,E402  (its tensors need the optional ml_dtypes, imported lazily)
from ._dtype import finfo, iinfo  # noqa: F401,E402
from math import e, inf, nan, pi  # noqa: F401,E402  (torch's constants are Python's floats)
newaxis = None
from .tensor import Size, Tensor  # noqa: F401
from . import methods as _methods  # noqa: F401  (binds Tensor's methods)
from .ops import *  # noqa: F401,F403
from .ops import abs, pow, round, sum  # noqa: F401  (names that shadow builtins, exported on purpose)
from .creation import *  # noqa: F401,F403
from .creation import ones
# tensor features scripts use: out= on torch's functions, print options, sparse COO (issue 18)
from .ops.out import *  # noqa: F401,F403,E402
from .creation import _range as range  # noqa: E402,F401  (torch.range; shadows the builtin here, as in torch)
from . import _deprecated  # noqa: E402  (torch's deprecated overloads with a leading number: `add(x, 2, y)`)
add, sub, addcmul, addcdiv, addmm = (_deprecated.wrap_function(globals()[_n], _n)  # noqa: E402
                                     for _n in ("add", "sub", "addcmul", "addcdiv", "addmm"))
from ._format import get_printoptions, set_printoptions  # noqa: F401,E402
from . import sparse  # noqa: F401,E402  (torch.sparse)
from .ops.sparse import layout, sparse_coo, strided  # noqa: F401,E402
from .random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed,  # noqa: F401
                     set_rng_state)
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, no_grad,  # noqa: F401
                                 set_grad_enabled, is_inference_mode_enabled)
from . import autograd  # noqa: F401
from .anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: F401
from . import nn  # noqa: F401
from .ops.layers import (bilinear, channel_shuffle, cosine_similarity, embedding_renorm_,  # noqa: F401
                          native_channel_shuffle, pairwise_distance, rms_norm)  # (torch.X: the signatures of torch.nn.functional's)
from .nn.functional import (celu, celu_, hardshrink, relu_, selu, selu_, threshold,  # noqa: F401,E402
                            threshold_)  # (torch.X: nn.functional's, as torch exposes them)
from . import functional, linalg, optim, special, utils  # noqa: F401
from ._lowrank import pca_lowrank, svd_lowrank  # noqa: F401,E402  (torch/_lowrank.py's randomized SVD)
from . import distributions  # noqa: F401
from . import distributed  # noqa: F401  (imports no MPI: init_process_group does)
from . import profiler  # noqa: F401,E402  (torch.profiler: tapegrad's ops on the CPU, as torch names them)
from . import futures, jit  # noqa: F401,E402  (torch.jit: the eager pass-throughs; no TorchScript)
from . import func  # noqa: F401,E402  (torch.func: the transforms over the tape; vmap is a loop)
from .func import vmap  # noqa: F401,E402
from .serialization import load, save  # noqa: F401
from . import storage  # noqa: F401,E402  (torch.storage; Tensor.storage / untyped_storage: ops/tensor_info.py)
from .storage import TypedStorage, UntypedStorage  # noqa: F401,E402

# -- running PyTorch scripts: devices, the environment, the launcher (see docs/compatibility.md) --------------
from .version import __version__  # noqa: E402,F401  (torch's API version, a TorchVersion str)
from . import version  # noqa: E402,F401
from .device import device, get_default_device, set_default_device  # noqa: E402,F401
from . import accelerator, amp, backends, cpu, cuda, mps, xpu  # noqa: E402,F401
from . import __future__  # noqa: E402,F401  (torch.__future__: nn.Module's conversion settings)
from .amp import (autocast, clear_autocast_cache, get_autocast_cpu_dtype, get_autocast_dtype,  # noqa: E402,F401
                  get_autocast_gpu_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled, is_autocast_enabled,
                  set_autocast_cache_enabled, set_autocast_cpu_dtype, set_autocast_cpu_enabled, set_autocast_dtype,
                  set_autocast_enabled, set_autocast_gpu_dtype)
from ._runtime import set_default_tensor_type  # noqa: E402,F401
from ._runtime import (are_deterministic_algorithms_enabled, get_default_dtype,  # noqa: E402,F401
                       get_float32_matmul_precision, get_num_interop_threads, get_num_threads, set_default_dtype,
                       set_float32_matmul_precision, set_num_interop_threads, set_num_threads,
                       use_deterministic_algorithms)
from ._torch_alias import install_as_torch  # noqa: E402,F401
_LAZY_SUBMODULES = ("onnx", "hub", "serialization", "_dynamo", "_logging",  # (_dynamo, _logging: compile)
                    "multiprocessing", "compiler", "_C")


def __getattr__(name):  # torch.onnx / torch.hub load on first use, as `import torch.onnx` would
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'tapegrad' has no attribute '{name}'")


def warmup():
    """Load (or compile, the first time) the compiled kernels now instead of at the first backward."""
    from . import kernels
    x = ones(2, requires_grad=True)
    for dt in (float32, float64):
        y = x.to(dt)
        ((y * y).tanh() + y).sum().backward()
    return kernels.load()


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_inference(input):
    return input.is_inference()


def _standard_gamma(input, generator=None):
    """torch._standard_gamma: Gamma(alpha, 1) draws, differentiable in alpha (torch's implicit gradient)."""
    from .distributions import _ops  # (torch.distributions: its modules load on first use)
    random.require_float("gamma_cpu", input._data.dtype)
    if generator is not None or not input.requires_grad:
        return tensor(_ops.standard_gamma_np(input._data, generator))
    return _ops.standard_gamma(input)


def _sample_dirichlet(input, generator=None):
    """torch._sample_dirichlet: Dirichlet(alpha) draws (torchvision's RandomMixup / RandomCutmix)."""
    from .distributions import _ops  # (torch.distributions: its modules load on first use)
    random.require_float("dirichlet", input._data.dtype)
    return tensor(_ops.sample_dirichlet_np(input._data, generator))


def numel(input):
    return input.numel()


from .tracing import compile  # noqa: E402,F401  (torch.compile: trace once, replay the tape)
from .tensor import (channels_last, channels_last_3d, contiguous_format, memory_format,  # noqa: E402,F401
                     preserve_format)  # (torch's memory formats: the strides a tensor reports)
from ._runtime import is_warn_always_enabled, set_flush_denormal, set_warn_always  # noqa: E402,F401
from . import testing  # noqa: E402,F401  (torch.testing: assert_close, make_tensor)
from .ops.metric_loss import (aten_hinge_embedding_loss as hinge_embedding_loss,  # noqa: E402,F401
                              aten_margin_ranking_loss as margin_ranking_loss,  # (torch.X: reduction an int)
                              aten_poisson_nll_loss as poisson_nll_loss, aten_triplet_margin_loss as triplet_margin_loss)
from .ops.metric_loss import (  # noqa: E402,F401  (torch.X: aten's argument order, reduction an int)
    aten_binary_cross_entropy_with_logits as binary_cross_entropy_with_logits, aten_kl_div as kl_div)
from .ops.padding import aten_layer_norm as layer_norm  # noqa: E402,F401  (torch.layer_norm: with cudnn_enable)
from .ops.padding import (_native_batch_norm_legit, _softmax_backward_data, native_batch_norm,  # noqa: E402,F401
                          native_group_norm, native_layer_norm)
from .ops.ctc import aten_ctc_loss as ctc_loss  # noqa: E402,F401  (torch.ctc_loss: reduction an int)
from ._foreach import *  # noqa: E402,F401,F403  (torch._foreach_*: list-wise ops)
from . import _numpy_names  # noqa: E402  (last: axis= / keepdims= on every function and method torch binds from C++)
_numpy_names.install(Tensor, globals())
