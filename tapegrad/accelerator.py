"""torch.accelerator: no accelerator is present (tapegrad runs on the CPU)."""
_NONE = "Cannot access accelerator device when none is available."


def is_available():
    return False


def device_count():
    return 0


def current_accelerator(check_available=False):
    return None


def _fail(*args, **kwargs):
    raise RuntimeError(_NONE)


synchronize = current_device_index = set_device_index = current_device_idx = set_device_idx = _fail
