"""asv suite: startup cost in a fresh process (timeraw_).

``timeraw_import``: ``import <lib>``; ``timeraw_import_first_backward``:
import, build a 16-element tensor, one tiny forward and the first
``backward()`` (for tapegrad this includes loading or compiling the Numba
replay).  asv runs each returned statement in a fresh ``python`` process and
times the statement only (not interpreter startup).  The library is
$TAPEGRAD_BENCH_LIB as in bench_workloads.
"""

import os

_THREADS = os.environ.get("TAPEGRAD_BENCH_THREADS", "1")
for _var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = _THREADS   # inherited by the timed child processes

import importlib.util
import subprocess
import sys

try:
    from . import workloads as W
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks import workloads as W

_FIRST_BACKWARD = """
import numpy as np
import {lib} as lib
x = lib.tensor(np.linspace(-1.0, 1.0, 16, dtype=np.float32), requires_grad=True)
lib.tanh(x * 2.0 + 1.0).sum().backward()
assert x.grad is not None
"""


class Startup:
    params = [[s.strip() for s in W.bench_lib_name().split(",") if s.strip()]]
    param_names = ["lib"]
    timeout = 600
    repeat = 5           # fresh processes per round (one sample each)
    # A fresh process's import time follows the machine's load of the moment: four rounds (asv interleaves
    # them with the other commit's in `asv continuous`) spread each result's samples over four windows, so
    # its confidence interval covers the load's drift and an unchanged commit is not flagged (with two
    # rounds, `import tapegrad` once read 242±100 ms against 492±40 ms, both the same code).
    rounds = 4

    def setup(self, libname):
        # Skip (n/a) rather than fail when the library is not usable; checked in a
        # child, which also runs the first backward once: a sample measures a warm
        # Numba cache (compare.py's "import + first backward, warm cache"), never
        # the compilation that follows each reinstall of the package by asv.
        probe = _FIRST_BACKWARD.format(lib=libname)
        if importlib.util.find_spec(libname) is None or subprocess.run(
                [sys.executable, "-c", probe], capture_output=True, check=False).returncode != 0:
            raise NotImplementedError(f"{libname} is not importable")

    def timeraw_import(self, libname):
        return f"import {libname}"

    def timeraw_import_first_backward(self, libname):
        return _FIRST_BACKWARD.format(lib=libname)
