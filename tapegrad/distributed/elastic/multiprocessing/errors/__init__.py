"""torch.distributed.elastic.multiprocessing.errors.record: the decorator torchrun scripts put on main. It runs the
function and re-raises what it raises; with TORCHELASTIC_ERROR_FILE set (torchrun's agent sets it; tapegrad's
launcher does not) it first writes the error there as torch's ErrorHandler does, as JSON."""
import functools
import json
import os
import time
import traceback

__all__ = ["record"]


def record(fn, error_handler=None):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except SystemExit as e:
            if e.code == 0:  # (torch's: a zero exit of a run_path entrypoint returns)
                return None
            raise
        except Exception as e:
            _write_error_file(e)
            raise
    return wrapper


def _write_error_file(e):
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    data = {"message": {"message": f"{type(e).__name__}: {e}",
                        "extraInfo": {"py_callstack": traceback.format_exc(), "timestamp": str(int(time.time()))}}}
    with open(path, "w") as f:
        json.dump(data, f)
