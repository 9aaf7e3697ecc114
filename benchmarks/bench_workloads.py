"""asv suite: W1-W7 step times, W1's forward and backward apart, and the
``tapegrad.compile`` step times of W1, W2, W3, W5, W6 and W7 (``*Compiled``).

The library is $TAPEGRAD_BENCH_LIB (default ``tapegrad``; ``torch`` benchmarks
the peer; ``tapegrad,torch`` runs both).  It is an asv parameter named
``lib``, so results for different libraries never mix.  A library that
cannot be imported is skipped (n/a), not failed; so is a compiled suite for a
library other than tapegrad.
"""

import os

# Pin threads before NumPy / Numba / torch are imported (override with
# $TAPEGRAD_BENCH_THREADS).
_THREADS = os.environ.get("TAPEGRAD_BENCH_THREADS", "1")
for _var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = _THREADS

import sys

try:  # asv imports this file as benchmarks.bench_workloads (package import)
    from . import workloads as W
except ImportError:  # imported as a top-level module: put the repo root on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks import workloads as W


def _libs():
    return [s.strip() for s in W.bench_lib_name().split(",") if s.strip()]


def _load(libname):
    # NumPy is already imported by asv_runner (via pympler) before this module's
    # os.environ pinning runs, so limit its BLAS pool at runtime too.
    W.pin_blas_threads(int(_THREADS))
    try:
        return W.load_lib(libname, threads=int(_THREADS))
    except Exception as exc:  # not installed / not usable yet -> asv reports n/a
        raise NotImplementedError(f"{libname} unavailable: {exc}") from exc


class _WorkloadSuite:
    workload = None
    params = [_libs()]
    param_names = ["lib"]
    timeout = 600           # generous: Numba compilation happens in setup on a slow machine
    warmup_time = 0.1

    def setup(self, libname):
        self.case = W.make(self.workload, libname, lib=_load(libname))
        self.case.step()    # one full iteration: triggers Numba compilation, untimed

    def time_step(self, libname):
        self.case.step()


class W1Chain(_WorkloadSuite):
    """16 f32, 500 x y = tanh(y*1.0001 + 0.001) (1,500 ops), y.sum().backward()."""

    workload = "W1"


class _W1Split:
    """W1's forward and backward timed apart (per op / per node: divide by 1,500). These are asv
    ``time_`` benchmarks, not ``track_`` figures: asv keeps their samples and confidence interval, so
    ``asv continuous`` and ``asv compare`` see their noise and flag only a change beyond it (a bare
    track value, one median with no spread, moved 1.6x under load on an unchanged commit).

    Each sample is one call (``number = 1``) after a fresh ``setup``: the backward needs a graph of its
    own every time. The case (and its Numba compilation) is made once per process, not per sample."""

    workload = "W1"
    params = _WorkloadSuite.params
    param_names = _WorkloadSuite.param_names
    timeout = _WorkloadSuite.timeout
    number = 1                  # one forward / one backward per sample
    repeat = (10, 40, 10.0)     # at least 10 samples, at most 40 or 10 s: enough for asv's statistics
    warmup_time = 0             # a warm-up call would reuse the sample's graph (backward twice)
    _cases = {}

    def _case(self, libname):
        if libname not in self._cases:
            case = W.make(self.workload, libname, lib=_load(libname))
            case.step()         # Numba compilation, untimed
            self._cases[libname] = case
        return self._cases[libname]


class W1Forward(_W1Split):
    """W1's 1,500 recorded ops, no backward (the graph is dropped)."""

    def setup(self, libname):
        self.case = self._case(libname)

    def time_forward(self, libname):
        self.case.forward()


class W1Backward(_W1Split):
    """W1's backward through 1,500 nodes, from a forward made in setup."""

    def setup(self, libname):
        self.case = self._case(libname)
        self.loss = self.case.forward()

    def time_backward(self, libname):
        self.case.backward(self.loss)


class W2Scalar(_WorkloadSuite):
    """0-d tensors: 50 neurons x 20 inputs, tanh, sum, backward."""

    workload = "W2"


class W3MLP(_WorkloadSuite):
    """One SGD step of a 64-128-128-10 tanh MLP, batch 64, cross_entropy."""

    workload = "W3"


class W4Matmul(_WorkloadSuite):
    """(a @ b).sum().backward(), a, b 512x512 f32."""

    workload = "W4"


class W5SecondDerivative(_WorkloadSuite):
    """grad(sum(tanh(x)**3), x, create_graph=True), then .sum().backward(); 1,000 f64."""

    workload = "W5"


class W6Recurrent(_WorkloadSuite):
    """20 steps of h = tanh(x @ Wx + h @ Wh + b) (batch 8, 16 -> 32, shared weights), backward, SGD."""

    workload = "W6"


class W7ScalarParameters(_WorkloadSuite):
    """A cubic a + bx + cx² + dx³ (0-d parameters) fitted to sin on 50 points: one SGD step."""

    workload = "W7"


class _CompiledSuite(_WorkloadSuite):
    """The workload's tapegrad step with its differentiable part under tapegrad.compile(fullgraph=True)."""

    def setup(self, libname):
        if libname != "tapegrad":   # the compiled variant exists for tapegrad only -> n/a
            raise NotImplementedError(f"no compiled variant for {libname}")
        self.case = W.make(self.workload, "tapegrad.compile", lib=_load(libname))
        self.case.step()    # traces the function and compiles Numba kernels, untimed
        self.case.step()    # first replay of the trace, untimed


class W1ChainCompiled(_CompiledSuite):
    """W1 with the 500-step chain under tapegrad.compile (one replayed row forward, one backward)."""

    workload = "W1"


class W2ScalarCompiled(_CompiledSuite):
    """W2 with the graph and its gradients (x -> autograd.grad) under tapegrad.compile."""

    workload = "W2"


class W3MLPCompiled(_CompiledSuite):
    """W3 with the loss and its gradients (x, y -> autograd.grad) under tapegrad.compile; SGD step as W3MLP."""

    workload = "W3"


class W5SecondDerivativeCompiled(_CompiledSuite):
    """W5 with both gradients (autograd.grad, the first with create_graph) under tapegrad.compile."""

    workload = "W5"


class W6RecurrentCompiled(_CompiledSuite):
    """W6's whole training step (zero_grad, loop, backward, optim.SGD's step) under tapegrad.compile."""

    workload = "W6"


class W7ScalarParametersCompiled(_CompiledSuite):
    """W7's whole training step (zero_grad, loss, backward, optim.SGD's step) under tapegrad.compile."""

    workload = "W7"
