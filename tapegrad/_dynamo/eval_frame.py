"""torch._dynamo.eval_frame: the module torch.compile's wrapper of a module is found in."""
from ..tracing import OptimizedModule  # noqa: F401
