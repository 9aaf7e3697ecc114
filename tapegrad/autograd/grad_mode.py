"""torch.autograd.grad_mode: the grad-mode state lives at the bottom of the package (tapegrad/grad_mode.py), so
that the engine and the ops read it without importing the autograd API. The engine's other per-thread switches
(multithreading, the gradient layout contract, view replay) are kept here for torch's getters: tapegrad's
backward runs on the calling thread, a .grad is contiguous, and a view's backward is its gather's adjoint,
whichever way they are set."""
import threading

from ..grad_mode import (_Mode, _state, enable_grad, inference_mode, is_grad_enabled,  # noqa: F401
                         is_inference_mode_enabled, no_grad, set_grad_enabled)

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "set_multithreading_enabled",
           "enforce_grad_layout_policy"]


class _Flags(threading.local):
    multithreading = True
    grad_layout = True
    view_replay = False


_flags = _Flags()


def is_multithreading_enabled():
    return _flags.multithreading


def is_view_replay_enabled():
    return _flags.view_replay


class _Flag(_Mode):
    """A switch set at construction and given back on exit, as torch's set_multithreading_enabled (also a
    decorator: each call sets it again)."""
    _name = None

    def __init__(self, mode):
        self.prev = getattr(_flags, self._name)
        setattr(_flags, self._name, bool(mode))
        self.mode = mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        setattr(_flags, self._name, self.prev)
        return False

    def clone(self):
        return self.__class__(self.mode)


class set_multithreading_enabled(_Flag):
    """Enables or disables multithreaded backward (torch's worker threads per device); tapegrad's backward runs
    on the calling thread either way."""
    _name = "multithreading"


class enforce_grad_layout_policy(_Flag):
    """Whether accumulated gradients are made to match their parameters' strides; tapegrad's are contiguous
    either way. As a decorator it gives the setting back at once and sets it around each call, as torch's."""
    _name = "grad_layout"

    def __init__(self, enable=True):
        super().__init__(enable)

    def __call__(self, fn):
        _flags.grad_layout = self.prev
        return super().__call__(fn)
