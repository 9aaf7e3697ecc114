"""asv suite: peak memory (peakmem_: max RSS of the benchmark process).

* ``MLPStepBatch1024.peakmem_step``: one W3 MLP training step at batch 1,024.
* ``ForwardNoBackward.peakmem_forward_x1000``: 1,000 W3 forward passes
  (batch 64, grad mode ON, no ``no_grad``) whose losses are dropped without
  ever calling ``backward()``: memory must not grow with the number of passes
  (a tape that keeps dropped graphs alive shows up here).

Each lives in its own class so one setup does not inflate the other's peak.
The value includes the interpreter, NumPy and the library itself (compare a
library with itself across commits).  The library is $TAPEGRAD_BENCH_LIB.
"""

import os

_THREADS = os.environ.get("TAPEGRAD_BENCH_THREADS", "1")
for _var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = _THREADS

import sys

try:
    from . import workloads as W
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks import workloads as W


def _load(libname):
    # NumPy is already imported by asv_runner (via pympler) before this module's
    # os.environ pinning runs, so limit its BLAS pool at runtime too.
    W.pin_blas_threads(int(_THREADS))
    try:
        return W.load_lib(libname, threads=int(_THREADS))
    except Exception as exc:
        raise NotImplementedError(f"{libname} unavailable: {exc}") from exc


class _MemSuite:
    params = [[s.strip() for s in W.bench_lib_name().split(",") if s.strip()]]
    param_names = ["lib"]
    timeout = 600


class MLPStepBatch1024(_MemSuite):
    def setup(self, libname):
        self.case = W.make("W3", libname, lib=_load(libname), batch=1024)
        self.case.step()   # Numba compilation (untimed, but its memory is in the peak)

    def peakmem_step(self, libname):
        self.case.step()


class ForwardNoBackward(_MemSuite):
    passes = 1000

    def setup(self, libname):
        self.case = W.make("W3", libname, lib=_load(libname), batch=64)
        self.case.step()   # compile forward and backward kernels once

    def peakmem_forward_x1000(self, libname):
        forward = self.case.forward
        for _ in range(self.passes):
            loss = forward()
        del loss
