"""torch.xpu (Intel GPUs) as a torch build without XPU has it: nothing is available, and what needs a device
raises torch's AssertionError("Torch not compiled with XPU enabled"). The answers that need no device are
torch.cuda's in a CPU-only build (seeding does nothing, memory queries answer 0), so they are the same functions."""
from .cuda import (device_count, empty_cache, is_available, is_bf16_supported, is_initialized,  # noqa: F401
                   manual_seed, manual_seed_all, max_memory_allocated, max_memory_reserved, memory_allocated,
                   memory_reserved, seed, seed_all)

_NOT_COMPILED = "Torch not compiled with XPU enabled"


def _fail(*args, **kwargs):
    raise AssertionError(_NOT_COMPILED)


def get_rng_state_all():
    return []  # (one state per device: none)


def set_rng_state_all(new_states):
    pass


init = synchronize = current_device = get_device_name = get_device_properties = get_device_capability = \
    mem_get_info = initial_seed = get_rng_state = set_rng_state = current_stream = set_device = _fail
