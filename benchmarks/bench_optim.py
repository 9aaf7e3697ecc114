"""asv suite and same-run comparison: one optimizer step (gradients already in place) over a parameter set.

Implementations, all updating the same parameters from the same gradients:
  tapegrad          the default (foreach=None): one compiled pass per parameter group
  tapegrad-loop     foreach=False: torch's single-tensor order, a loop of NumPy calls per parameter
  torch             torch 2.13, its CPU default (foreach=False: the single-tensor loop)
  torch-foreach     torch with foreach=True (its multi-tensor ops)
  numpy             a hand-written loop of in-place NumPy ufuncs per parameter (the floor a user writes)

Parameter sets: "mlp" (64-128-128-10: two weights and biases per layer, 6 tensors, 26,122 elements),
"scalars" (8 0-d parameters: a curve fit), "large" (two 512 x 512).

    python -m benchmarks.bench_optim [--threads N (0: the machine's defaults; default 1)] [--rounds R]

prints the median time per step of each over R interleaved rounds and the ratios to torch and to numpy
(in one process, so the ratios share the machine's load). Under asv (`asv run --bench bench_optim`):
`OptimStep.time_step` per (optimizer, parameter set, implementation).
"""
import os
import sys

_THREADS = os.environ.get("TAPEGRAD_BENCH_THREADS", "1")
if __name__ == "__main__" and "--threads" in sys.argv:
    _THREADS = sys.argv[sys.argv.index("--threads") + 1]
PINNED = _THREADS != "0"  # --threads 0: the machine's defaults
for _var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    if PINNED:
        os.environ[_var] = _THREADS

import time  # noqa: E402

import numpy as np  # noqa: E402

# asv runs each of OptimStep's 180 parameter combinations in a process of its own; under `--launch-method forkserver`
# (CI's smoke run) they are forked from one that imported this module, so the libraries are imported here, once.
import tapegrad  # noqa: E402,F401
try:
    import torch  # noqa: F401
except ImportError:  # the peer is optional: its combinations report n/a
    pass

SHAPES = {"mlp": [(128, 64), (128,), (128, 128), (128,), (10, 128), (10,)],
          "scalars": [()] * 8,
          "large": [(512, 512), (512, 512)]}
OPTIMIZERS = {
    "sgd": ("SGD", {"lr": 0.01}),
    "sgd-nesterov-wd": ("SGD", {"lr": 0.01, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-4}),
    "adam": ("Adam", {"lr": 1e-3}),
    "adamw-amsgrad": ("AdamW", {"lr": 1e-3, "amsgrad": True}),
    "rmsprop": ("RMSprop", {"lr": 1e-3}),
    "adagrad": ("Adagrad", {"lr": 1e-2}),
    "adamax": ("Adamax", {"lr": 2e-3}),
    "nadam": ("NAdam", {"lr": 2e-3}),
    "radam": ("RAdam", {"lr": 1e-3}),
    "adadelta": ("Adadelta", {"lr": 1.0}),
    "rprop": ("Rprop", {"lr": 1e-2}),
    "asgd": ("ASGD", {"lr": 1e-2}),
}
IMPLS = ["tapegrad", "tapegrad-loop", "torch", "torch-foreach", "numpy"]


def _arrays(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


class _NumpyLoop:
    """What a user writes in NumPy: per parameter, in-place ufuncs (out=) and a scratch array."""

    def __init__(self, params, grads, name, kw):
        self.params, self.grads, self.name, self.kw, self.t = params, grads, name, kw, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.vmax = [np.zeros_like(p) for p in params]
        self.tmp = [np.empty_like(p) for p in params]
        self.tmp2 = [np.empty_like(p) for p in params]
        if name == "Rprop":  # v: the step sizes
            for v in self.v:
                v.fill(kw["lr"])
        self.eta, self.mu, self.mu_product = kw["lr"], 1.0, 1.0  # ASGD's and NAdam's scalars

    def step(self):
        kw, self.t = self.kw, self.t + 1
        lr = kw["lr"]
        other = getattr(self, "_" + self.name.lower(), None)
        if other is not None:
            for arrays in zip(self.params, self.grads, self.m, self.v, self.tmp, self.tmp2):
                other(lr, *arrays)
            if self.name == "ASGD":
                self.eta = lr / (1 + 1e-4 * lr * self.t) ** 0.75
                self.mu = 1 / max(1, self.t - 1e6)
            return
        if self.name == "SGD":
            mom, wd = kw.get("momentum", 0), kw.get("weight_decay", 0)
            for p, g, b, tmp, tmp2 in zip(self.params, self.grads, self.m, self.tmp, self.v):
                if mom:
                    np.multiply(p, wd, out=tmp)
                    tmp += g                            # d = g + wd p
                    b *= mom
                    b += tmp                            # b = mom b + d
                    np.multiply(b, mom, out=tmp2)
                    tmp += tmp2                         # nesterov: d + mom b
                    tmp *= lr
                    p -= tmp
                else:
                    np.multiply(g, lr, out=tmp)
                    p -= tmp
            return
        b1, b2 = kw.get("betas", (0.9, 0.999))
        eps = kw.get("eps", 1e-8)
        for p, g, m, v, vmax, tmp in zip(self.params, self.grads, self.m, self.v, self.vmax, self.tmp):
            if self.name == "RMSprop":
                v *= 0.99
                np.multiply(g, g, out=tmp)
                tmp *= 0.01
                v += tmp
                np.sqrt(v, out=tmp)
                tmp += eps
                np.divide(g, tmp, out=tmp)
                tmp *= lr
                p -= tmp
                continue
            if self.name == "AdamW":
                p *= 1 - lr * kw.get("weight_decay", 1e-2)
            m *= b1
            np.multiply(g, 1 - b1, out=tmp)
            m += tmp
            v *= b2
            np.multiply(g, g, out=tmp)
            tmp *= 1 - b2
            v += tmp
            if kw.get("amsgrad"):
                np.maximum(vmax, v, out=vmax)
            np.sqrt(vmax if kw.get("amsgrad") else v, out=tmp)
            tmp /= (1 - b2 ** self.t) ** 0.5
            tmp += eps
            np.divide(m, tmp, out=tmp)
            tmp *= lr / (1 - b1 ** self.t)
            p -= tmp

    # Each of these: one parameter, torch's defaults; m and v its two state arrays, tmp and tmp2 scratch.
    def _adagrad(self, lr, p, g, m, v, tmp, tmp2):
        np.multiply(g, g, out=tmp)
        v += tmp
        np.sqrt(v, out=tmp)
        tmp += 1e-10
        np.divide(g, tmp, out=tmp)
        tmp *= lr
        p -= tmp

    def _adamax(self, lr, p, g, m, v, tmp, tmp2):
        m *= 0.9
        np.multiply(g, 0.1, out=tmp)
        m += tmp
        v *= 0.999
        np.abs(g, out=tmp)
        tmp += 1e-8
        np.maximum(v, tmp, out=v)
        np.divide(m, v, out=tmp)
        tmp *= lr / (1 - 0.9 ** self.t)
        p -= tmp

    def _moments(self, g, m, v, tmp):
        m *= 0.9
        np.multiply(g, 0.1, out=tmp)
        m += tmp
        v *= 0.999
        np.multiply(g, g, out=tmp)
        tmp *= 0.001
        v += tmp

    def _nadam(self, lr, p, g, m, v, tmp, tmp2):
        self._moments(g, m, v, tmp)
        t = self.t
        mu, mu_next = (0.9 * (1 - 0.5 * 0.96 ** (k * 4e-3)) for k in (t, t + 1))
        if p is self.params[0]:
            self.mu_product *= mu
        np.divide(v, 1 - 0.999 ** t, out=tmp)
        np.sqrt(tmp, out=tmp)
        tmp += 1e-8
        np.divide(g, tmp, out=tmp2)
        tmp2 *= lr * (1 - mu) / (1 - self.mu_product)
        p -= tmp2
        np.divide(m, tmp, out=tmp2)
        tmp2 *= lr * mu_next / (1 - self.mu_product * mu_next)
        p -= tmp2

    def _radam(self, lr, p, g, m, v, tmp, tmp2):
        self._moments(g, m, v, tmp)
        t, rho_inf = self.t, 2 / 0.001 - 1
        bc1, bc2 = 1 - 0.9 ** t, 1 - 0.999 ** t
        rho_t = rho_inf - 2 * t * 0.999 ** t / bc2
        if rho_t > 5:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            np.sqrt(v, out=tmp)
            tmp += 1e-8
            np.divide(m, tmp, out=tmp)
            tmp *= lr * rect * bc2 ** 0.5 / bc1
        else:
            np.multiply(m, lr / bc1, out=tmp)
        p -= tmp

    def _adadelta(self, lr, p, g, m, v, tmp, tmp2):  # m: acc_delta, v: square_avg
        v *= 0.9
        np.multiply(g, g, out=tmp)
        tmp *= 0.1
        v += tmp
        np.add(v, 1e-6, out=tmp)
        np.sqrt(tmp, out=tmp)
        np.add(m, 1e-6, out=tmp2)
        np.sqrt(tmp2, out=tmp2)
        tmp2 /= tmp
        tmp2 *= g
        m *= 0.9
        np.multiply(tmp2, tmp2, out=tmp)
        tmp *= 0.1
        m += tmp
        tmp2 *= lr
        p -= tmp2

    def _rprop(self, lr, p, g, m, v, tmp, tmp2):  # m: prev, v: step sizes
        np.multiply(g, m, out=tmp)
        tmp2.fill(1.0)
        np.copyto(tmp2, 1.2, where=tmp > 0)
        np.copyto(tmp2, 0.5, where=tmp < 0)
        v *= tmp2
        np.clip(v, 1e-6, 50, out=v)
        np.copyto(m, g)
        np.copyto(m, 0, where=tmp < 0)
        np.sign(m, out=tmp)
        tmp *= v
        p -= tmp

    def _asgd(self, lr, p, g, m, v, tmp, tmp2):  # m: ax
        p *= 1 - 1e-4 * self.eta
        np.multiply(g, self.eta, out=tmp)
        p -= tmp
        if self.mu != 1:
            np.subtract(p, m, out=tmp)
            tmp *= self.mu
            m += tmp
        else:
            np.copyto(m, p)


def make(impl, opt, shapes):
    """A zero-argument step function of `impl` for optimizer `opt` on parameter set `shapes`."""
    name, kw = OPTIMIZERS[opt]
    params, grads = _arrays(SHAPES[shapes]), _arrays(SHAPES[shapes], seed=1)
    if impl == "numpy":
        return _NumpyLoop(params, grads, name, kw).step
    if impl.startswith("torch"):
        import torch
        if PINNED:
            torch.set_num_threads(int(_THREADS))
        lib, extra = torch, {"foreach": impl == "torch-foreach"}
    else:
        import tapegrad
        lib, extra = tapegrad, {"foreach": False} if impl == "tapegrad-loop" else {}
    ps = [lib.nn.Parameter(lib.tensor(p)) for p in params]
    for p, g in zip(ps, grads):
        p.grad = lib.tensor(g)
    optimizer = getattr(lib.optim, name)(ps, **kw, **extra)
    if lib.__name__ == "torch":
        step = optimizer.step

        def torch_step():
            with torch.no_grad():
                step()
        return torch_step
    return optimizer.step


class OptimStep:
    params = [list(OPTIMIZERS), list(SHAPES), IMPLS]
    param_names = ["optimizer", "parameters", "impl"]
    timeout = 300
    warmup_time = 0.1

    def setup(self, opt, shapes, impl):
        if PINNED:
            from benchmarks.workloads import pin_blas_threads
            pin_blas_threads(int(_THREADS))
        try:
            self.step = make(impl, opt, shapes)
        except ImportError as exc:
            raise NotImplementedError(f"{impl} unavailable: {exc}") from exc
        self.step()  # compiles (or loads from cache) the kernel, untimed

    def time_step(self, opt, shapes, impl):
        self.step()


def _per_step(step, budget=0.01):
    n, start = 0, time.perf_counter()
    while True:
        step()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= budget:
            return elapsed / n


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default=_THREADS, help="pinned thread count; 0: the machine's defaults")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="", help="comma-separated optimizer names")
    args = ap.parse_args(argv)
    if PINNED:
        from benchmarks.workloads import pin_blas_threads
        pin_blas_threads(int(_THREADS))
    import numba
    import torch
    opts = [o for o in OPTIMIZERS if not args.only or o in args.only.split(",")]
    print(f"threads: {_THREADS if PINNED else 'defaults'} (OMP/NUMBA/MKL/OPENBLAS_NUM_THREADS, torch.get_num_threads()={torch.get_num_threads()},"
          f" numba.get_num_threads()={numba.get_num_threads()}); median of {args.rounds} interleaved rounds, "
          f"~10 ms of steps each\n")
    print("| optimizer | parameters | " + " | ".join(f"{i} µs" for i in IMPLS) +
          " | tapegrad / torch | tapegrad / numpy | loop / torch |")
    print("|---" * (len(IMPLS) + 5) + "|")
    for opt in opts:
        for shapes in SHAPES:
            steps = {impl: make(impl, opt, shapes) for impl in IMPLS}
            for s in steps.values():
                s()
            times = {impl: [] for impl in IMPLS}
            for r in range(args.rounds):
                order = IMPLS if r % 2 == 0 else IMPLS[::-1]  # interleaved, alternating order
                for impl in order:
                    times[impl].append(_per_step(steps[impl]))
            med = {impl: float(np.median(t)) * 1e6 for impl, t in times.items()}
            print(f"| {opt} | {shapes} | " + " | ".join(f"{med[i]:.1f}" for i in IMPLS) +
                  f" | {med['tapegrad'] / med['torch']:.2f} | {med['tapegrad'] / med['numpy']:.2f}"
                  f" | {med['tapegrad-loop'] / med['torch']:.2f} |", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
