"""skip_init: build a module without initializing its parameters and buffers."""
import inspect

from ... import creation
from ...random import get_rng_state, set_rng_state
from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) with its parameters and buffers left uninitialized (torch.empty's values).

    torch builds the module on the meta device (no data, so its initializers draw no random numbers) and then
    allocates empty storage. tapegrad has no meta device: it builds the module on the CPU with the default
    generator's state saved and restored around the constructor (so, as in torch, no random numbers are
    consumed), then gives every parameter and buffer fresh uninitialized storage."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = final_device
    state = get_rng_state()
    try:
        module = module_cls(*args, **kwargs)
    finally:
        set_rng_state(state)
    return module._apply(creation.empty_like)
