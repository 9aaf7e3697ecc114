"""torch.cuda as a CPU-only torch build has it: nothing is available, and what needs a GPU raises
torch's own AssertionError("Torch not compiled with CUDA enabled").

manual_seed / manual_seed_all / seed / seed_all do nothing, as in a CPU-only torch (where they are queued
for a CUDA initialisation that never comes): they do not touch the CPU generator, so a script seeds the
same streams as under torch.
"""
from . import amp  # noqa: F401
from .. import _dtype
from ..creation import _TensorType

_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _fail(*args, **kwargs):
    raise AssertionError(_NOT_COMPILED)


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def manual_seed(seed):
    pass


def manual_seed_all(seed):
    pass


def seed():
    pass


def seed_all():
    pass


def empty_cache():
    pass


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def memory_reserved(device=None):
    return 0


def max_memory_reserved(device=None):
    return 0


init = synchronize = current_device = get_device_name = get_device_properties = get_device_capability = \
    mem_get_info = initial_seed = get_rng_state = set_rng_state = get_rng_state_all = set_rng_state_all = \
    current_stream = default_stream = set_device = reset_peak_memory_stats = _fail


class device:
    """torch.cuda.device(idx): a context manager that selects a GPU; entering it raises."""

    def __init__(self, device):
        self.idx = device

    def __enter__(self):
        raise RuntimeError("PyTorch was compiled without CUDA support")

    def __exit__(self, *exc):
        return False


class Event:
    def __init__(self, *args, **kwargs):
        _fail()


class Stream:
    def __init__(self, *args, **kwargs):
        _fail()


class _CudaTensorType(_TensorType):
    """torch.cuda's legacy tensor types (torch.cuda.FloatTensor, ...): no tensor is one of them, and making one
    raises torch's TypeError of a CPU-only build (old scripts test `isinstance(x, torch.cuda.FloatTensor)`)."""

    def __instancecheck__(cls, obj):
        return False

    def __call__(cls, *args):
        raise TypeError(f"type torch.cuda.{cls.__name__} not available. Torch not compiled with CUDA enabled.")

    def __repr__(cls):
        return f"<class 'torch.cuda.{cls.__name__}'>"


for _name, _dt in (("FloatTensor", "float32"), ("DoubleTensor", "float64"), ("HalfTensor", "float16"),
                   ("BFloat16Tensor", "bfloat16"), ("LongTensor", "int64"), ("IntTensor", "int32"),
                   ("ShortTensor", "int16"), ("CharTensor", "int8"), ("ByteTensor", "uint8"), ("BoolTensor", "bool")):
    globals()[_name] = _CudaTensorType(_name, (), {"dtype": getattr(_dtype, _dt), "is_cuda": True, "is_sparse": False,
                                                   "__module__": "torch.cuda"})
