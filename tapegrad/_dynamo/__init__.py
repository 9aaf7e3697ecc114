"""torch._dynamo's user-facing parts for tapegrad.compile: `config` (recompile_limit, error_on_recompile),
`exc.RecompileError`, `reset()`."""
import types

from .tracing import RecompileError, config, reset  # noqa: F401

exc = types.SimpleNamespace(RecompileError=RecompileError)
