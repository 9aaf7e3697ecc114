"""torch.compiler: the user-facing switches of torch.compile (tapegrad.compile records a function once and replays
its tape: docs/compile.md)."""
from . import tape as _tape
from .tracing import BACKENDS, reset  # noqa: F401  (reset: forget every compiled function's traces)

__all__ = ["reset", "is_compiling", "is_dynamo_compiling", "disable", "allow_in_graph", "assume_constant_result",
           "cudagraph_mark_step_begin", "list_backends"]


_LISTED = ("cudagraphs", "inductor", "openxla", "tvm")  # (torch's list, less its debug and experimental names)


def list_backends(exclude_tags=("debug", "experimental")):
    """The backend names torch.compile accepts (each means a trace replayed by tapegrad); torch._dynamo's too."""
    return list(_LISTED) if exclude_tags else sorted(BACKENDS)


def is_compiling():
    """True while tapegrad.compile traces the calling function (torch: while dynamo traces it)."""
    return _tape._local.tracing is not None


is_dynamo_compiling = is_compiling


def disable(fn=None, recursive=True, *, reason=None):
    """The function runs eagerly: a compiled function that calls it is not traced (a graph break: tapegrad runs
    that whole call eagerly)."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)

    def eager(*args, **kwargs):
        _tape.untraceable(f"torch.compiler.disable: {getattr(fn, '__qualname__', fn)}"
                          + (f" ({reason})" if reason else ""))
        return fn(*args, **kwargs)
    eager.__wrapped__ = fn
    eager.__name__ = getattr(fn, "__name__", "eager")
    eager.__qualname__ = getattr(fn, "__qualname__", eager.__name__)
    eager.__doc__ = getattr(fn, "__doc__", None)
    return eager


def allow_in_graph(fn):
    """tapegrad.compile traces every function it reaches, as it records ops: `fn` as it is."""
    return fn


def assume_constant_result(fn):
    """torch lets dynamo fold the call's result into the graph; tapegrad's trace calls it at each trace, and a
    replay keeps what the trace recorded from it: `fn` as it is."""
    return fn


def cudagraph_mark_step_begin():
    """CUDA graphs' step marker: tapegrad has no CUDA graphs to mark (nothing to do on the CPU)."""
