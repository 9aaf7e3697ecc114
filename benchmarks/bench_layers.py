"""asv suite: issue 19's layers (``layers.py``): forward + backward of LeNet-5, Conv2d, LSTM, a GPT block,
LayerNorm and BatchNorm2d, whole training steps of a small CNN, LSTM and GPT, and the training steps of the
real programs' kinds (S1-S7: their models and update rules), eager and (``*Compiled``) under ``tapegrad.compile``.

The library is $TAPEGRAD_BENCH_LIB (default ``tapegrad``; ``tapegrad,torch`` runs both, so torch's column
sits beside tapegrad's).  A library that cannot be imported is skipped (n/a), not failed; so is a compiled
suite for torch, and a case that ``tapegrad.compile`` cannot replay yet.  Threads: $TAPEGRAD_BENCH_THREADS
(default 1).
"""

import os

_THREADS = os.environ.get("TAPEGRAD_BENCH_THREADS", "1")
for _var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = _THREADS

import sys

try:  # asv imports this file as benchmarks.bench_layers (package import)
    from . import layers as L
    from . import workloads as W
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks import layers as L
    from benchmarks import workloads as W


def _make(case_id, libname):
    W.pin_blas_threads(int(_THREADS))  # NumPy was imported (by asv_runner) before the variables were set
    try:
        lib = L.load_lib(libname, int(_THREADS))
    except Exception as exc:  # not installed -> asv reports n/a
        raise NotImplementedError(f"{libname} unavailable: {exc}") from exc
    try:
        case = L.make(case_id, libname, lib=lib)
        case.step()   # Numba compilation (and compile's trace), untimed
        case.step()
    except RuntimeError as exc:  # compile cannot replay it (yet): n/a, with the reason in the log
        raise NotImplementedError(f"{case_id} on {libname}: {exc}") from exc
    return case


class _Suite:
    case_id = None
    compiled = False
    params = [[s.strip() for s in W.bench_lib_name().split(",") if s.strip()]]
    param_names = ["lib"]
    timeout = 600
    warmup_time = 0.1

    def setup(self, libname):
        if self.compiled and libname != "tapegrad":
            raise NotImplementedError(f"no compiled variant for {libname}")
        self.case = _make(self.case_id, "tapegrad.compile" if self.compiled else libname)


class _LayerSuite(_Suite):
    def time_step(self, libname):
        self.case.step()


class L1LeNet(_LayerSuite):
    """LeNet-5 forward + cross_entropy + backward, 28x28, batch 64."""

    case_id = "L1"


class L2Conv2d(_LayerSuite):
    """Conv2d 64->64 3x3, 32x32, batch 32, forward + backward."""

    case_id = "L2"


class L3LSTM(_LayerSuite):
    """LSTM 2 layers hidden 200, sequence 35, batch 20, forward + backward."""

    case_id = "L3"


class L4GPTBlock(_LayerSuite):
    """A GPT block (embedding 128, 4 heads, causal), 16 x 64, forward + backward."""

    case_id = "L4"


class L5LayerNorm(_LayerSuite):
    """LayerNorm(128) on 16 x 64 x 128, forward + backward."""

    case_id = "L5"


class L6BatchNorm2d(_LayerSuite):
    """BatchNorm2d(64) on 32 x 64 x 32 x 32 (training mode), forward + backward."""

    case_id = "L6"


class L7ConvToFew(_LayerSuite):
    """Conv2d 32->3 9x9 padding 4 on 72x72, batch 4 (fast_neural_style's last layer), forward + backward."""

    case_id = "L7"


class L8ConvNarrowing(_LayerSuite):
    """Conv2d 64->32 3x3 padding 1 on 64x64, batch 4, forward + backward."""

    case_id = "L8"


class T1CNNStep(_LayerSuite):
    """LeNet-5 training step, SGD with momentum."""

    case_id = "T1"


class T2LSTMStep(_LayerSuite):
    """Word-LM training step: embedding, LSTM 2x200, decoder to 1,000 words, clip_grad_norm_, SGD."""

    case_id = "T2"


class T3GPTStep(_LayerSuite):
    """GPT training step: 2 blocks, 16 x 64, AdamW."""

    case_id = "T3"


class T1CNNStepCompiled(T1CNNStep):
    compiled = True


class T2LSTMStepCompiled(T2LSTMStep):
    compiled = True


class T3GPTStepCompiled(T3GPTStep):
    compiled = True



# The S cases: training steps of the real programs' kinds (layers.py), each eager and compiled.
for _id in L.SCRIPTS:
    _name = L.CASE_CLASSES[_id].__name__
    globals()[_name] = type(_name, (_LayerSuite,), {"case_id": _id, "__doc__": L.DESCRIPTIONS[_id] + "."})
    globals()[_name + "Compiled"] = type(_name + "Compiled", (globals()[_name],), {"compiled": True})

class _MemSuite(_Suite):
    """Peak memory (max RSS of the process) of one training step, the case made in setup."""

    timeout = 600

    def peakmem_step(self, libname):
        self.case.step()


class T1CNNStepMemory(_MemSuite):
    case_id = "T1"


class T2LSTMStepMemory(_MemSuite):
    case_id = "T2"


class T3GPTStepMemory(_MemSuite):
    case_id = "T3"
