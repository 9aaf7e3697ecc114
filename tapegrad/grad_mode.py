"""Grad mode, per thread as in PyTorch: no_grad, enable_grad, set_grad_enabled, inference_mode."""
import functools
import inspect
import sys
import threading
import warnings
from ._warnings import user_stacklevel

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
    """A context manager that is also a decorator, as torch's _DecoratorContextManager: each call of the decorated
    function enters a fresh copy (clone); a generator function's body runs under it between its yields."""
    _enabled = True

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set(self._enabled)

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def clone(self):
        return self.__class__()

    def __call__(self, fn):
        if inspect.isclass(fn):
            warnings.warn("Decorating classes is deprecated and will be disabled in future versions. You should only "
                          "decorate functions or methods. To preserve the current behavior of class decoration, you "
                          "can directly decorate the `__init__` method and nothing else.", FutureWarning, stacklevel=user_stacklevel())
            fn = (lambda cls: lambda *args, **kwargs: cls(*args, **kwargs))(fn)
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(self.clone, fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper


def _wrap_generator(mode, fn):
    """fn's generator, each of its steps (start, send, throw, close) under a fresh mode(), as torch's."""
    @functools.wraps(fn)
    def generator_context(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with mode():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with mode():
                        gen.close()
                    raise
                except BaseException:
                    with mode():
                        response = gen.throw(*sys.exc_info())
                else:
                    with mode():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value
    return generator_context


class _NoParamMode(_Mode):
    """A decorator with or without its parentheses (`@torch.no_grad` and `@torch.no_grad()`)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamMode):
    _enabled = False


class enable_grad(_NoParamMode):
    _enabled = True


class set_grad_enabled(_Mode):
    """Takes effect at construction, like torch's: `set_grad_enabled(False)` works as a plain call too; as a decorator
    it gives the mode back at once and sets it around each call."""

    def __init__(self, mode):
        self.prev = is_grad_enabled()
        self.mode = mode
        _set(mode)

    def __call__(self, fn):
        _set(self.prev)
        return super().__call__(fn)

    def __enter__(self):
        _set(self.mode)

    def __exit__(self, *exc):
        _set(self.prev)
        return False

    def clone(self):
        return self.__class__(self.mode)

    def __repr__(self):
        return f"torch.autograd.grad_mode.set_grad_enabled(mode={self.mode})"


class inference_mode(_Mode):
    """Grad mode off, and the tensors made under it inference tensors; inference_mode(False) turns both back on
    (grad mode even under no_grad), as torch's InferenceMode(false)."""

    def __new__(cls, mode_or_orig_func=True):
        if mode_or_orig_func is None or isinstance(mode_or_orig_func, bool):
            return super().__new__(cls)
        return cls()(mode_or_orig_func)  # (`@torch.inference_mode` without parentheses)

    def __init__(self, mode=True):
        self._mode = bool(mode)

    def clone(self):
        return self.__class__(self._mode)

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
