"""Benchmark workloads W1-W7, written once against the PyTorch autograd API.

Every workload is a class taking a library module ``lib`` (``tapegrad`` or
``torch``: same API).  Each has a hand-written NumPy twin (forward AND the
backward pass written out by hand, no autograd): the floor.  W2 also has a
micrograd-style pure-Python peer (``Value`` below).  Each also has a
``tapegrad.compile`` variant (library name ``"tapegrad.compile"``, module
``tapegrad``): the same computation with its differentiable part wrapped in
``lib.compile(..., fullgraph=True)`` (traced once, then replayed).  In W2-W5
that part takes the gradients itself with ``autograd.grad``, so that the
backward is traced and replayed with the forward, as torch.compile's
AOTAutograd traces one joint graph.

Interface shared by every implementation (``make(workload, libname)``)::

    case = make("W3", "torch")
    grads = case.step()          # one full step; returns the gradients
    flat = flat_grads(grads)     # -> one 1-d float NumPy array, fixed order

W1 additionally has ``forward()`` -> loss and ``backward(loss)`` -> grads so
the two halves can be timed separately; W3 has ``forward()`` (loss only, no
backward) for the memory benchmark.

Data is created with NumPy from fixed seeds, then converted with
``lib.tensor(...)``.  Nothing here pins threads or imports torch/tapegrad at
import time: callers (``compare.py``, ``bench_*.py``) pin threads first and
then call ``load_lib``.

Module-level names deliberately avoid asv's benchmark prefixes (``time``,
``track``, ``mem``, ``peakmem``, ``timeraw``) because asv imports every
module of the ``benchmarks`` package during discovery.
"""

import importlib
import math
import os

import numpy as np

WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8")
AUTOGRAD_LIBS = ("tapegrad", "tapegrad.compile", "torch")
ALL_LIBS = ("tapegrad", "tapegrad.compile", "torch", "numpy", "micrograd")
LIB_MODULES = {"tapegrad.compile": "tapegrad"}   # library name -> module it imports (default: itself)

DESCRIPTIONS = {
    "W1": "chain: 16 f32, 500 x tanh(y*1.0001+0.001), 1,500 ops",
    "W2": "scalar graph: 0-d tensors, 50 neurons x 20 inputs",
    "W3": "MLP step: batch 64, 64-128-128-10 tanh, CE, SGD",
    "W4": "big matmul: (a@b).sum() 512x512 f32",
    "W5": "2nd derivative: grad(create_graph) of tanh(x)**3, 1,000 f64",
    "W6": "recurrent loop: 20 x tanh(x@Wx + h@Wh + b), batch 8, 16->32, SGD",
    "W7": "0-d parameters: cubic fit a+bx+cx²+dx³ to sin, 50 f32 points, SGD",
    "W8": "fixed costs: (a*x+b)*c on 0-d f32 (3 ops recorded), backward into 3 leaves",
}

W1_OPS = 1500  # 500 x (mul, add, tanh)

# Seeds: one per workload, fixed.
SEEDS = {"W1": 1, "W2": 2, "W3": 3, "W4": 4, "W5": 5, "W6": 6, "W7": 7, "W8": 8}


class NotAvailable(Exception):
    """The requested (workload, library) pair does not exist (e.g. micrograd W1)."""


def bench_lib_name():
    """Library benchmarked by the asv suites: $TAPEGRAD_BENCH_LIB, default tapegrad."""
    return os.environ.get("TAPEGRAD_BENCH_LIB", "tapegrad")


_BLAS_SETTERS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
                 "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
                 "MKL_Set_Num_Threads", "bli_thread_set_num_threads")


def blas_kernels():
    """NumPy's BLAS and the kernels it runs. OpenBLAS picks them from the CPU when NumPy loads, unless
    OPENBLAS_CORETYPE names a family: some machines set it (and OPENBLAS_L2_SIZE) for older OpenBLAS builds, which
    fail on their CPUs, and a current NumPy then runs older, slower kernels than a user's would (on this Zen 5:
    Haswell's AVX2 ones instead of SkylakeX's AVX-512). Benchmarks name both, so a table says what it measured."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS: unknown (threadpoolctl not installed)"
    found = [f"{i['internal_api']} {i['version']} ({i.get('architecture', '?')} kernels)" for i in threadpool_info()
             if i["user_api"] == "blas"]
    forced = [f"{v}={os.environ[v]}" for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if v in os.environ]
    return "BLAS: " + (", ".join(found) or "none found") + ("; " + ", ".join(forced) if forced else "")


def pin_blas_threads(n=1):
    """Limit the BLAS thread pools already loaded in this process to ``n`` threads.

    Setting OPENBLAS_NUM_THREADS & co. only works *before* NumPy is first
    imported.  Under asv it is too late: asv_runner imports pympler, which
    imports NumPy, before any benchmark module runs, so NumPy's OpenBLAS
    starts with one thread per core (and, on a loaded 2-core machine, W3/W4
    ran 10-100x slower under asv than standalone).  This sets the limit at
    runtime: threadpoolctl if installed, else the BLAS setter functions
    looked up with ctypes in the shared libraries mapped into the process
    (Linux).  Returns a list describing what was limited.
    """
    done = []
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=int(n), user_api="blas")   # persists (not used as a context)
        return ["threadpoolctl"]
    except Exception:  # noqa: BLE001,S110 - not installed / no BLAS found: fall back to ctypes
        pass
    try:
        import ctypes
        with open("/proc/self/maps") as f:
            paths = sorted({ln.split()[-1] for ln in f
                            if any(k in ln.lower() for k in ("blas", "mkl_rt", "blis"))
                            and ln.split()[-1].startswith("/")})
        for path in paths:
            try:
                cdll = ctypes.CDLL(path)
            except OSError:
                continue
            for sym in _BLAS_SETTERS:
                fn = getattr(cdll, sym, None)
                if fn is not None:
                    fn(ctypes.c_int(int(n)))
                    done.append(f"{os.path.basename(path)}:{sym}")
                    break
    except OSError:
        pass
    return done


def load_lib(name, threads=None):
    """Import an autograd library by name; for torch also pin its intra-op threads.

    ``"tapegrad.compile"`` imports ``tapegrad`` (``LIB_MODULES``).
    """
    if name not in AUTOGRAD_LIBS:
        raise ValueError(f"not an autograd library: {name!r}")
    mod = importlib.import_module(LIB_MODULES.get(name, name))
    if not hasattr(mod, "tensor"):
        # e.g. an empty source directory imported as a namespace package
        raise ImportError(f"{name} imported from {list(getattr(mod, '__path__', []))} "
                          f"but has no 'tensor' (not a usable autograd library)")
    if name == "torch":
        if threads is None:
            threads = int(os.environ.get("OMP_NUM_THREADS", "1") or 1)
        mod.set_num_threads(int(threads))
    return mod


def to_numpy(t):
    """Gradient (lib tensor, ndarray, float or None) -> NumPy array copy."""
    if t is None:
        raise ValueError("gradient is None")
    if isinstance(t, np.ndarray):
        return np.array(t, copy=True)
    if isinstance(t, (float, int, np.generic)):
        return np.asarray(t)
    if hasattr(t, "detach"):
        t = t.detach()
    if hasattr(t, "numpy"):
        return np.array(t.numpy(), copy=True)
    return np.array(t, copy=True)


def flat_grads(grads):
    """List of gradients -> one 1-d NumPy array (concatenated in order)."""
    return np.concatenate([np.ravel(to_numpy(g)) for g in grads])


def tolerances(ref):
    """(rtol, atol) for comparing against a reference gradient vector.

    rtol 1e-4 for float32, 1e-6 for float64; atol is relative to the scale of
    the whole vector (1e-2 * rtol * max|ref|) so that entries that cancel to
    ~0 (sums of +/- terms) do not fail on rounding alone.
    """
    rtol = 1e-4 if ref.dtype == np.float32 else 1e-6
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    return rtol, 1e-2 * rtol * scale + 1e-30


def agree(got, ref):
    """True when ``got`` matches ``ref`` (both flat arrays) within tolerances()."""
    if got.shape != ref.shape:
        return False
    rtol, atol = tolerances(ref)
    return bool(np.allclose(got.astype(np.float64), ref.astype(np.float64),
                            rtol=rtol, atol=atol))


def max_rel_err(got, ref):
    if got.shape != ref.shape:
        return float("inf")
    scale = float(np.max(np.abs(ref))) or 1.0
    return float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) / scale


# --------------------------------------------------------------------------
# Data (NumPy, fixed seeds)
# --------------------------------------------------------------------------

def w1_data(size=16):
    rng = np.random.default_rng(SEEDS["W1"])
    return {"x": rng.standard_normal(size).astype(np.float32)}


def w2_data(neurons=50, inputs=20):
    rng = np.random.default_rng(SEEDS["W2"])
    return {
        "w": rng.uniform(-1.0, 1.0, (neurons, inputs)),       # float64
        "b": rng.uniform(-1.0, 1.0, neurons),
        "x": rng.uniform(-1.0, 1.0, inputs),
    }


W3_SIZES = (64, 128, 128, 10)


def w3_data(batch=64, sizes=W3_SIZES):
    rng = np.random.default_rng(SEEDS["W3"])
    d = {
        "x": rng.standard_normal((batch, sizes[0])).astype(np.float32),
        "y": rng.integers(0, sizes[-1], batch).astype(np.int64),
    }
    for k in range(1, len(sizes)):
        fan_in = sizes[k - 1]
        d[f"w{k}"] = (rng.standard_normal((fan_in, sizes[k])) / math.sqrt(fan_in)).astype(np.float32)
        d[f"b{k}"] = rng.uniform(-0.1, 0.1, sizes[k]).astype(np.float32)
    return d


def w4_data(n=512):
    rng = np.random.default_rng(SEEDS["W4"])
    return {"a": rng.standard_normal((n, n)).astype(np.float32),
            "b": rng.standard_normal((n, n)).astype(np.float32)}


def w5_data(n=1000):
    rng = np.random.default_rng(SEEDS["W5"])
    return {"x": rng.uniform(-2.0, 2.0, n)}  # float64


# --------------------------------------------------------------------------
# W1 chain
# --------------------------------------------------------------------------

class W1Chain:
    """x (16 f32, requires grad); 500 x y = tanh(y*1.0001 + 0.001); y.sum().backward()."""

    ops = W1_OPS

    def __init__(self, lib, size=16, steps=500):
        self.lib = lib
        self.steps = steps
        self.x = lib.tensor(w1_data(size)["x"], requires_grad=True)

    def forward(self):
        lib = self.lib
        self.x.grad = None
        y = self.x
        for _ in range(self.steps):
            y = lib.tanh(y * 1.0001 + 0.001)
        return y.sum()

    def backward(self, loss):
        loss.backward()
        return [self.x.grad]

    def step(self):
        return self.backward(self.forward())


class W1ChainCompiled(W1Chain):
    """W1Chain with the chain (x -> y.sum()) under lib.compile(fullgraph=True)."""

    def __init__(self, lib, size=16, steps=500):
        super().__init__(lib, size, steps)

        def chain(x):
            y = x
            for _ in range(steps):
                y = lib.tanh(y * 1.0001 + 0.001)
            return y.sum()
        self.chain = lib.compile(chain, fullgraph=True)

    def forward(self):
        self.x.grad = None
        return self.chain(self.x)


class W1ChainNumpy:
    ops = W1_OPS

    def __init__(self, size=16, steps=500):
        self.steps = steps
        self.x = w1_data(size)["x"]
        self._tape = None

    def forward(self):
        y = self.x
        tape = []
        for _ in range(self.steps):
            y = np.tanh(y * 1.0001 + 0.001)
            tape.append(y)
        self._tape = tape
        return y.sum()

    def backward(self, loss):
        g = np.ones_like(self.x)
        for t in reversed(self._tape):
            # d tanh(u)/du = 1 - t^2 ; du/dy = 1.0001
            g = g * (1.0 - t * t) * 1.0001
        self._tape = None
        return [g]

    def step(self):
        return self.backward(self.forward())


# --------------------------------------------------------------------------
# W2 scalar graph
# --------------------------------------------------------------------------

class W2Scalar:
    """0-d tensors: 50 neurons x 20 inputs, act = sum_i w*x + b, tanh, sum, backward."""

    def __init__(self, lib, neurons=50, inputs=20):
        self.lib = lib
        d = w2_data(neurons, inputs)
        self.w = [[lib.tensor(np.array(d["w"][n, i]), requires_grad=True) for i in range(inputs)]
                  for n in range(neurons)]
        self.b = [lib.tensor(np.array(d["b"][n]), requires_grad=True) for n in range(neurons)]
        self.x = [lib.tensor(np.array(d["x"][i])) for i in range(inputs)]
        self.params = [p for row in self.w for p in row] + self.b

    def output(self, *x):
        outs = []
        for wn, bn in zip(self.w, self.b):
            act = sum(wi * xi for wi, xi in zip(wn, x)) + bn
            outs.append(act.tanh())
        return sum(outs)

    def step(self):
        for p in self.params:
            p.grad = None
        out = self.output(*self.x)
        out.backward()
        return [p.grad for p in self.params]


class W2ScalarCompiled(W2Scalar):
    """W2Scalar with the graph and its gradients (autograd.grad) under lib.compile(fullgraph=True): the 20
    inputs are positional arguments, weights and biases closure parameters."""

    def __init__(self, lib, neurons=50, inputs=20):
        super().__init__(lib, neurons, inputs)
        output = self.output
        self.gradients = lib.compile(lambda *x: lib.autograd.grad(output(*x), self.params), fullgraph=True)

    def step(self):
        return list(self.gradients(*self.x))


class W2ScalarNumpy:
    """Floor: the same function vectorised, backward by hand."""

    def __init__(self, neurons=50, inputs=20):
        d = w2_data(neurons, inputs)
        self.w, self.b, self.x = d["w"], d["b"], d["x"]

    def step(self):
        act = self.w @ self.x + self.b
        t = np.tanh(act)
        _out = t.sum()
        dact = 1.0 - t * t
        dw = np.outer(dact, self.x)
        db = dact
        return [dw, db]


class Value:
    """Minimal micrograd-style scalar: +, *, tanh, backward (topological sort)."""

    __slots__ = ("data", "grad", "_prev", "_backward")

    def __init__(self, data, _prev=()):
        self.data = data
        self.grad = 0.0
        self._prev = _prev
        self._backward = None

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other))

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    __radd__ = __add__

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other))

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    __rmul__ = __mul__

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,))

        def _backward():
            self.grad += (1.0 - t * t) * out.grad
        out._backward = _backward
        return out

    def backward(self):
        topo = []
        visited = set()

        def build(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build(child)
                topo.append(v)
        build(self)
        self.grad = 1.0
        for v in reversed(topo):
            if v._backward is not None:
                v._backward()


class W2ScalarMicrograd:
    def __init__(self, neurons=50, inputs=20):
        d = w2_data(neurons, inputs)
        self.w = [[Value(float(d["w"][n, i])) for i in range(inputs)] for n in range(neurons)]
        self.b = [Value(float(d["b"][n])) for n in range(neurons)]
        self.x = [Value(float(d["x"][i])) for i in range(inputs)]
        self.params = [p for row in self.w for p in row] + self.b

    def step(self):
        for p in self.params:
            p.grad = 0.0
        x = self.x
        outs = []
        for wn, bn in zip(self.w, self.b):
            act = sum(wi * xi for wi, xi in zip(wn, x)) + bn
            outs.append(act.tanh())
        out = sum(outs)
        out.backward()
        return [np.float64(p.grad) for p in self.params]


# --------------------------------------------------------------------------
# W3 MLP training step
# --------------------------------------------------------------------------

class W3MLP:
    """64-128-128-10 tanh MLP, cross_entropy(class indices), backward, SGD (no_grad)."""

    lr = 0.01

    def __init__(self, lib, batch=64, sizes=W3_SIZES):
        self.lib = lib
        d = w3_data(batch, sizes)
        self.x = lib.tensor(d["x"])
        self.y = lib.tensor(d["y"])
        self.nlayers = len(sizes) - 1
        self.params = []
        for k in range(1, len(sizes)):
            self.params.append(lib.tensor(d[f"w{k}"], requires_grad=True))
            self.params.append(lib.tensor(d[f"b{k}"], requires_grad=True))

    def loss(self, x, y):
        lib = self.lib
        w1, b1, w2, b2, w3, b3 = self.params
        h1 = lib.tanh(x @ w1 + b1)
        h2 = lib.tanh(h1 @ w2 + b2)
        logits = h2 @ w3 + b3
        return lib.nn.functional.cross_entropy(logits, y)

    def forward(self):
        return self.loss(self.x, self.y)

    def step(self):
        loss = self.forward()
        loss.backward()
        grads = [p.grad for p in self.params]
        lr = self.lr
        with self.lib.no_grad():
            for p in self.params:
                p -= lr * p.grad
                p.grad = None
        return grads


class W3MLPCompiled(W3MLP):
    """W3MLP with the loss and its gradients (x, y -> autograd.grad(cross_entropy, params)) under
    lib.compile(fullgraph=True); parameters are closure variables, updated in place by the same SGD step."""

    def __init__(self, lib, batch=64, sizes=W3_SIZES):
        super().__init__(lib, batch, sizes)

        def gradients(x, y):
            return lib.autograd.grad(self.loss(x, y), self.params)
        self.gradients = lib.compile(gradients, fullgraph=True)

    def step(self):
        grads = self.gradients(self.x, self.y)
        lr = self.lr
        with self.lib.no_grad():
            for p, g in zip(self.params, grads):
                p -= lr * g
        return grads


class W3MLPNumpy:
    lr = 0.01

    def __init__(self, batch=64, sizes=W3_SIZES):
        d = w3_data(batch, sizes)
        self.x, self.y = d["x"], d["y"]
        self.params = [d[k] for k in ("w1", "b1", "w2", "b2", "w3", "b3")]
        self.rows = np.arange(batch)

    def forward(self):
        w1, b1, w2, b2, w3, b3 = self.params
        h1 = np.tanh(self.x @ w1 + b1)
        h2 = np.tanh(h1 @ w2 + b2)
        logits = h2 @ w3 + b3
        m = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - m)
        s = e.sum(axis=1, keepdims=True)
        p = e / s
        loss = -np.mean(np.log(p[self.rows, self.y]))
        return loss, (h1, h2, p)

    def step(self):
        _w1, _b1, w2, _b2, w3, _b3 = self.params
        _loss, (h1, h2, p) = self.forward()
        batch = self.x.shape[0]
        dlogits = p
        dlogits[self.rows, self.y] -= 1.0
        dlogits /= batch
        dw3 = h2.T @ dlogits
        db3 = dlogits.sum(axis=0)
        dz2 = (dlogits @ w3.T) * (1.0 - h2 * h2)
        dw2 = h1.T @ dz2
        db2 = dz2.sum(axis=0)
        dz1 = (dz2 @ w2.T) * (1.0 - h1 * h1)
        dw1 = self.x.T @ dz1
        db1 = dz1.sum(axis=0)
        grads = [dw1, db1, dw2, db2, dw3, db3]
        lr = self.lr
        for prm, g in zip(self.params, grads):
            prm -= lr * g
        return grads


# --------------------------------------------------------------------------
# W4 big matmul
# --------------------------------------------------------------------------

class W4Matmul:
    def __init__(self, lib, n=512):
        d = w4_data(n)
        self.a = lib.tensor(d["a"], requires_grad=True)
        self.b = lib.tensor(d["b"], requires_grad=True)

    def step(self):
        self.a.grad = None
        self.b.grad = None
        (self.a @ self.b).sum().backward()
        return [self.a.grad, self.b.grad]


class W4MatmulCompiled(W4Matmul):
    """W4Matmul with (a @ b).sum() and its gradients (autograd.grad) under lib.compile(fullgraph=True)."""

    def __init__(self, lib, n=512):
        super().__init__(lib, n)
        self.f = lib.compile(lambda a, b: lib.autograd.grad((a @ b).sum(), (a, b)), fullgraph=True)

    def step(self):
        return list(self.f(self.a, self.b))


class W4MatmulNumpy:
    def __init__(self, n=512):
        d = w4_data(n)
        self.a, self.b = d["a"], d["b"]

    def step(self):
        c = self.a @ self.b
        _s = c.sum()
        g = np.ones_like(c)
        da = g @ self.b.T
        db = self.a.T @ g
        return [da, db]


# --------------------------------------------------------------------------
# W5 second derivative
# --------------------------------------------------------------------------

class W5Second:
    """y = sum(tanh(x)**3); g = grad(y, x, create_graph=True); g.sum().backward()."""

    def __init__(self, lib, n=1000):
        self.lib = lib
        self.x = lib.tensor(w5_data(n)["x"], requires_grad=True)

    def step(self):
        x = self.x
        x.grad = None
        y = (x.tanh() ** 3).sum()
        g, = self.lib.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
        return [g, x.grad]


class W5SecondCompiled(W5Second):
    """W5Second with both gradients under lib.compile(fullgraph=True): the second as autograd.grad of g.sum()
    (what g.sum().backward() leaves in x.grad)."""

    def __init__(self, lib, n=1000):
        super().__init__(lib, n)

        def second(x):
            g, = lib.autograd.grad((x.tanh() ** 3).sum(), x, create_graph=True)
            return g, lib.autograd.grad(g.sum(), x)[0]
        self.second = lib.compile(second, fullgraph=True)

    def step(self):
        return list(self.second(self.x))


class W5SecondNumpy:
    def __init__(self, n=1000):
        self.x = w5_data(n)["x"]

    def step(self):
        # t * t * t, not t ** 3: x ** 3 is what torch and tapegrad compute it as, and libm's pow (NumPy's
        # ** 3) takes 60x as long here (62 against 1 us), which made this floor mostly pow
        t = np.tanh(self.x)
        t3 = t * t * t
        _y = t3.sum()
        one_m_t2 = 1.0 - t * t
        g = 3.0 * t * t * one_m_t2                     # d/dx tanh^3
        h = (6.0 * t - 12.0 * t3) * one_m_t2           # d2/dx2 (diagonal)
        return [g, h]


# --------------------------------------------------------------------------
# W6 recurrent loop (shared weights)
# --------------------------------------------------------------------------

def w6_data(steps=20, batch=8, inputs=16, width=32):
    rng = np.random.default_rng(SEEDS["W6"])
    return {"xs": rng.standard_normal((steps, batch, inputs)).astype(np.float32),
            "wx": (rng.standard_normal((inputs, width)) / math.sqrt(inputs)).astype(np.float32),
            "wh": (rng.standard_normal((width, width)) / math.sqrt(width)).astype(np.float32),
            "b": rng.uniform(-0.1, 0.1, width).astype(np.float32)}


class W6Recurrent:
    """h = tanh(x_t @ Wx + h @ Wh + b) over the steps from h = 0, loss (h * h).mean(), backward, SGD."""

    lr = 0.01

    def __init__(self, lib, steps=20, batch=8, inputs=16, width=32):
        self.lib = lib
        d = w6_data(steps, batch, inputs, width)
        self.xs = [lib.tensor(x) for x in d["xs"]]
        self.h0 = lib.zeros(batch, width)
        self.params = [lib.tensor(d[k], requires_grad=True) for k in ("wx", "wh", "b")]

    def loss(self, h, *xs):
        wx, wh, b = self.params
        for x in xs:
            h = (x @ wx + h @ wh + b).tanh()
        return (h * h).mean()

    def step(self):
        self.loss(self.h0, *self.xs).backward()
        grads = [p.grad for p in self.params]
        with self.lib.no_grad():
            for p in self.params:
                p -= self.lr * p.grad
                p.grad = None
        return grads


class W6RecurrentCompiled(W6Recurrent):
    """W6Recurrent's whole training step under lib.compile(fullgraph=True), as a user writes it: zero_grad, the
    loop, loss.backward() and optim.SGD's step (the same update as the eager loop's) in one compiled call; h0 and
    the inputs are arguments, the weights closure parameters."""

    def __init__(self, lib, **kwargs):
        super().__init__(lib, **kwargs)
        opt = lib.optim.SGD(self.params, lr=self.lr)

        def train_step(h, *xs):
            opt.zero_grad()
            self.loss(h, *xs).backward()
            opt.step()
        self.train_step = lib.compile(train_step, fullgraph=True)

    def step(self):
        self.train_step(self.h0, *self.xs)
        return [p.grad for p in self.params]


class W6RecurrentNumpy:
    """Floor: the loop forward, backpropagation through time by hand."""

    lr = 0.01

    def __init__(self, steps=20, batch=8, inputs=16, width=32):
        d = w6_data(steps, batch, inputs, width)
        self.xs = d["xs"]
        self.params = [d["wx"], d["wh"], d["b"]]
        self.h0 = np.zeros((batch, width), np.float32)

    def step(self):
        wx, wh, b = self.params
        hs = [self.h0]
        for x in self.xs:
            hs.append(np.tanh(x @ wx + hs[-1] @ wh + b))
        h = hs[-1]
        dh = h * np.float32(2.0 / h.size)
        dwx, dwh, db = np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(b)
        for t in range(len(self.xs), 0, -1):
            dz = dh * (1 - hs[t] * hs[t])
            dwx += self.xs[t - 1].T @ dz
            dwh += hs[t - 1].T @ dz
            db += dz.sum(axis=0)
            dh = dz @ wh.T
        grads = [dwx, dwh, db]
        for p, g in zip(self.params, grads):
            p -= self.lr * g
        return grads


# --------------------------------------------------------------------------
# W7 training loop on 0-d parameters (PyTorch's polynomial tutorial, small)
# --------------------------------------------------------------------------

def w7_data(points=50):
    rng = np.random.default_rng(SEEDS["W7"])
    x = np.linspace(-math.pi, math.pi, points, dtype=np.float32)
    return {"x": x, "y": np.sin(x), "abcd": rng.standard_normal(4).astype(np.float32)}


class W7Scalars:
    """y_pred = a + b x + c x**2 + d x**3 (a, b, c, d 0-d tensors); loss = (y_pred - y).pow(2).sum();
    backward; SGD on each parameter."""

    lr = 1e-4

    def __init__(self, lib, points=50):
        self.lib = lib
        d = w7_data(points)
        self.x, self.y = lib.tensor(d["x"]), lib.tensor(d["y"])
        self.params = [lib.tensor(v, requires_grad=True) for v in d["abcd"]]

    def loss(self, x, y):
        a, b, c, d = self.params
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        return (y_pred - y).pow(2).sum()

    def step(self):
        self.loss(self.x, self.y).backward()
        grads = [p.grad for p in self.params]
        with self.lib.no_grad():
            for p in self.params:
                p -= self.lr * p.grad
                p.grad = None
        return grads


class W7ScalarsCompiled(W7Scalars):
    """W7Scalars' whole training step under lib.compile(fullgraph=True), as a user writes it: zero_grad, the
    loss, loss.backward() and optim.SGD's step (the same update as the eager loop's) in one compiled call."""

    def __init__(self, lib, points=50):
        super().__init__(lib, points)
        opt = lib.optim.SGD(self.params, lr=self.lr)

        def train_step(x, y):
            opt.zero_grad()
            self.loss(x, y).backward()
            opt.step()
        self.train_step = lib.compile(train_step, fullgraph=True)

    def step(self):
        self.train_step(self.x, self.y)
        return [p.grad for p in self.params]


class W7ScalarsNumpy:
    lr = 1e-4

    def __init__(self, points=50):
        d = w7_data(points)
        self.x, self.y = d["x"], d["y"]
        self.params = [np.array(v) for v in d["abcd"]]   # 0-d float32 arrays, updated in place

    def step(self):
        a, b, c, d = self.params
        x = self.x
        x2 = x * x
        x3 = x2 * x
        r = a + b * x + c * x2 + d * x3 - self.y
        _loss = (r * r).sum()
        g = 2 * r
        grads = [g.sum(), (g * x).sum(), (g * x2).sum(), (g * x3).sum()]
        for p, gp in zip(self.params, grads):
            p -= self.lr * gp
        return grads


# --------------------------------------------------------------------------
# W8 fixed costs: what recording one op and running one backward cost, apart from the arithmetic
# --------------------------------------------------------------------------

W8_OPS = 3  # a * x, + b, * c


def w8_data():
    rng = np.random.default_rng(SEEDS["W8"])
    return {k: np.float32(v) for k, v in zip("abcx", rng.standard_normal(4))}


class W8Fixed:
    """loss = (a * x + b) * c on 0-d float32 tensors (a, b, c leaves, x a constant): its forward is the
    recording cost of 3 ops, its backward a backward's fixed cost (plan, buffers, replay of 3 rows, 3 leaves'
    .grad, freeing). Timed apart, as W1 (forward, backward)."""

    ops = W8_OPS

    def __init__(self, lib):
        self.lib = lib
        d = w8_data()
        self.params = [lib.tensor(d[k], requires_grad=True) for k in "abc"]
        self.x = lib.tensor(d["x"])

    def forward(self):
        a, b, c = self.params
        for p in self.params:
            p.grad = None
        return (a * self.x + b) * c

    def backward(self, loss):
        loss.backward()
        return [p.grad for p in self.params]

    def step(self):
        return self.backward(self.forward())


class W8FixedNumpy:
    """The floor: the same arithmetic and its gradients on NumPy float32 scalars."""

    ops = W8_OPS

    def __init__(self):
        d = w8_data()
        self.a, self.b, self.c, self.x = d["a"], d["b"], d["c"], d["x"]

    def forward(self):
        self.u = self.a * self.x + self.b
        return self.u * self.c

    def backward(self, loss):
        gu = self.c
        return [np.asarray(gu * self.x), np.asarray(gu), np.asarray(self.u)]

    def step(self):
        return self.backward(self.forward())


# --------------------------------------------------------------------------
# Factory
# --------------------------------------------------------------------------

_LIB_CLASSES = {"W1": W1Chain, "W2": W2Scalar, "W3": W3MLP, "W4": W4Matmul, "W5": W5Second,
                "W6": W6Recurrent, "W7": W7Scalars, "W8": W8Fixed}
_NUMPY_CLASSES = {"W1": W1ChainNumpy, "W2": W2ScalarNumpy, "W3": W3MLPNumpy,
                  "W4": W4MatmulNumpy, "W5": W5SecondNumpy, "W6": W6RecurrentNumpy, "W7": W7ScalarsNumpy,
                  "W8": W8FixedNumpy}
_MICROGRAD_CLASSES = {"W2": W2ScalarMicrograd}
_COMPILED_CLASSES = {"W1": W1ChainCompiled, "W2": W2ScalarCompiled, "W3": W3MLPCompiled,
                     "W4": W4MatmulCompiled, "W5": W5SecondCompiled, "W6": W6RecurrentCompiled,
                     "W7": W7ScalarsCompiled}


def libs_for(workload):
    """Implementations that exist for a workload, in table order."""
    libs = ["tapegrad"]
    if workload in _COMPILED_CLASSES:
        libs.append("tapegrad.compile")
    libs += ["torch", "numpy"]
    if workload in _MICROGRAD_CLASSES:
        libs.append("micrograd")
    return libs


def make(workload, libname, lib=None, **kwargs):
    """Build a workload instance for ``libname`` (tapegrad, tapegrad.compile, torch, numpy, micrograd).

    ``lib`` may be passed for the autograd libraries (an already imported module);
    otherwise it is imported with ``load_lib``.
    """
    if workload not in _LIB_CLASSES:
        raise KeyError(f"unknown workload {workload!r}; expected one of {WORKLOADS}")
    if libname == "numpy":
        return _NUMPY_CLASSES[workload](**kwargs)
    if libname == "micrograd":
        if workload not in _MICROGRAD_CLASSES:
            raise NotAvailable(f"no micrograd version of {workload}")
        return _MICROGRAD_CLASSES[workload](**kwargs)
    if libname == "tapegrad.compile" and workload not in _COMPILED_CLASSES:
        raise NotAvailable(f"no compiled version of {workload}")
    if lib is None:
        lib = load_lib(libname)
    if libname == "tapegrad.compile":
        return _COMPILED_CLASSES[workload](lib, **kwargs)
    return _LIB_CLASSES[workload](lib, **kwargs)


def gradients(workload, libname, lib=None, **kwargs):
    """One step on a fresh instance; gradients as one flat NumPy array."""
    return flat_grads(make(workload, libname, lib=lib, **kwargs).step())
