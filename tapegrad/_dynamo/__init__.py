"""torch._dynamo's user-facing parts for tapegrad.compile: `config` (recompile_limit, error_on_recompile),
`exc.RecompileError`, `exc.Unsupported` (fullgraph=True refusing a function), `reset()`, `is_compiling()`,
`disable`, and `eval_frame.OptimizedModule`."""
import types

from ..compiler import disable, is_compiling, list_backends  # noqa: F401
from ..tracing import BACKENDS, InvalidBackend, RecompileError, Unsupported, config, reset  # noqa: F401
from . import eval_frame  # noqa: F401

exc = types.SimpleNamespace(RecompileError=RecompileError, InvalidBackend=InvalidBackend, Unsupported=Unsupported)

