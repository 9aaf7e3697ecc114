"""torch.jit without TorchScript. What model code calls in eager mode is torch's own eager behaviour, which passes
through: the decorators (`ignore`, `unused`, `export`, `interface`, `script_if_tracing`, `_overload_method`),
`is_scripting()` / `is_tracing()` (False), `annotate`, `Attribute`, `Final`, and `fork`/`wait` (run in the calling
thread, as torch's eager fork). The compilers and the archive format (`script`, `trace`, `save`, `load`, `freeze`,
`ScriptModule`, ...) raise NotImplementedError naming TorchScript: tapegrad has none (`torch.compile`, which is
tapegrad.compile, records and replays a function instead)."""
import collections
import typing
import warnings

from .futures import Future

__all__ = ["Attribute", "Final", "Future", "ScriptFunction", "ScriptModule", "annotate", "export", "fork", "freeze",
           "ignore", "interface", "is_scripting", "is_tracing", "load", "optimize_for_inference", "save", "script",
           "script_if_tracing", "script_method", "trace", "trace_module", "unused", "wait"]

Final = typing.Final
Attribute = collections.namedtuple("Attribute", ["value", "type"])


class FunctionModifiers:
    """The marks torch's decorators leave on a function (`fn._torchscript_modifier`), with torch's texts."""
    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"


def is_scripting():
    """False: nothing runs under TorchScript here (as in torch's eager mode)."""
    return False


def is_tracing():
    return False


def annotate(the_type, the_value):
    return the_value


def ignore(drop=False, **kwargs):
    """Marks a function for TorchScript to leave to Python; in eager mode it runs as it is (torch's checks and
    warnings)."""
    if callable(drop):
        drop._torchscript_modifier = FunctionModifiers.IGNORE
        return drop
    if not isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}")
    drop_on_export = kwargs.pop("drop_on_export", None)
    if drop_on_export:
        warnings.warn("ignore(drop_on_export=True) has been deprecated. TorchScript will now drop the function call on "
                      "compilation. Use torch.jit.unused now. {}", stacklevel=2, category=FutureWarning)
        drop = drop_on_export
    elif drop:
        warnings.warn("ignore(True) has been deprecated. TorchScript will now drop the function call on compilation. "
                      "Use torch.jit.unused now. {}", stacklevel=2, category=FutureWarning)

    def decorator(fn):
        fn._torchscript_modifier = FunctionModifiers.UNUSED if drop else FunctionModifiers.IGNORE
        return fn
    return decorator


def unused(fn):
    if isinstance(fn, property):
        fn.fget._torchscript_modifier = FunctionModifiers.UNUSED
        if fn.fset:
            fn.fset._torchscript_modifier = FunctionModifiers.UNUSED
        return fn
    fn._torchscript_modifier = FunctionModifiers.UNUSED
    return fn


def export(fn):
    fn._torchscript_modifier = FunctionModifiers.EXPORT
    return fn


def interface(obj):
    return obj


def script_if_tracing(fn):
    """Scripts `fn` only under a trace, which never happens here: `fn` itself."""
    return fn


def _overload(func):
    return func


def _overload_method(func):
    return func


def fork(func, *args, **kwargs):
    """func(*args, **kwargs) run now, in this thread, its result in a completed Future (an error raises here)."""
    warnings.warn("`torch.jit.fork` is deprecated. Please use `torch.compile` instead.", DeprecationWarning)
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future):
    warnings.warn("`torch.jit.wait` is deprecated. Please use `torch.compile` instead.", DeprecationWarning)
    return future.wait()


def _no_torchscript(name):
    def refuse(*args, **kwargs):
        raise NotImplementedError(
            f"torch.jit.{name}: tapegrad has no TorchScript (no compiler to its IR, no .pt archives of it). "
            "Call the module or function itself, torch.compile (tapegrad.compile) to record and replay it, and "
            "torch.save / torch.load for its state_dict")
    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"TorchScript's {name}: raises NotImplementedError (tapegrad has no TorchScript)."
    return refuse


script = _no_torchscript("script")
trace = _no_torchscript("trace")
trace_module = _no_torchscript("trace_module")
script_method = _no_torchscript("script_method")
save = _no_torchscript("save")
load = _no_torchscript("load")
freeze = _no_torchscript("freeze")
optimize_for_inference = _no_torchscript("optimize_for_inference")


class ScriptModule:
    """torch.jit.ScriptModule: a subclass's construction raises NotImplementedError (no TorchScript here)."""

    def __init__(self, *args, **kwargs):
        _no_torchscript("ScriptModule")()


class ScriptFunction:
    """torch.jit.ScriptFunction, for isinstance checks: nothing here is one."""

    def __init__(self, *args, **kwargs):
        _no_torchscript("ScriptFunction")()


RecursiveScriptModule = ScriptModule
