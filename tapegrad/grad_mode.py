"""Grad mode, per thread as in PyTorch: no_grad, enable_grad, set_grad_enabled, inference_mode."""
import functools
import threading

class _State(threading.local):
    enabled = True     # a class default: each thread starts with grad mode on
    inference = False  # inference_mode's: tensors made under it are inference tensors (Tensor.is_inference)


_state = _State()
INFERENCE_ON = [0]  # how many inference modes are entered, in any thread: while 0, a new tensor skips the check


def is_grad_enabled():
    return _state.enabled


def _set(enabled):
    _state.enabled = bool(enabled)


class _Mode:
    """A context manager that is also a decorator, like torch's _DecoratorContextManager."""
    _enabled = True

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set(self._enabled)

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__.__new__(self.__class__)._clone(self):
                return fn(*args, **kwargs)
        return wrapper

    def _clone(self, other):
        self.__dict__.update({k: v for k, v in other.__dict__.items() if k != "_prev"})
        return self


class no_grad(_Mode):
    _enabled = False


class enable_grad(_Mode):
    _enabled = True


class set_grad_enabled(_Mode):
    """Takes effect at construction, like torch's: `set_grad_enabled(False)` works as a plain call too."""

    def __init__(self, mode):
        self._prev = is_grad_enabled()
        self._enabled = bool(mode)
        _set(mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set(self._prev)
        return False


class inference_mode(_Mode):
    """Grad mode off, and the tensors made under it inference tensors; inference_mode(False) turns both back on
    (grad mode even under no_grad), as torch's InferenceMode(false)."""

    def __init__(self, mode=True):
        self._mode = bool(mode)

    def __enter__(self):
        self._prev = is_grad_enabled(), _state.inference
        _set(not self._mode)
        if self._mode:
            INFERENCE_ON[0] += 1
        _state.inference = self._mode

    def __exit__(self, *exc):
        if self._mode:
            INFERENCE_ON[0] -= 1
        _set(self._prev[0])
        _state.inference = self._prev[1]
        return False


def is_inference_mode_enabled():
    return _state.inference
