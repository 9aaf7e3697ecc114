"""Grad mode, per thread as in PyTorch: no_grad, enable_grad, set_grad_enabled, inference_mode."""
import functools
import threading

class _State(threading.local):
    enabled = True  # a class default: each thread starts with grad mode on


_state = _State()


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
    def __init__(self, mode=True):
        self._enabled = not mode


def is_inference_mode_enabled():
    return False
