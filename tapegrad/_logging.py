"""torch._logging.set_logs for tapegrad.compile: `set_logs(recompiles=True)` logs why each retrace happens
(as TAPEGRAD_LOGS=recompiles or TORCH_LOGS=recompiles in the environment)."""
from .tracing import config


def set_logs(*, recompiles=None, **others):
    if others:
        raise NotImplementedError(f"tapegrad._logging.set_logs: only recompiles= is logged (not {sorted(others)})")
    if recompiles is not None:
        config.log_recompiles = bool(recompiles)
