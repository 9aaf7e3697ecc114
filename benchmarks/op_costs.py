"""What single small ops cost, tapegrad against torch in one process (one thread): the front ends' figures quoted
in docs/architecture.md ("What a recorded op costs"), the layer norm benchmark's step (L5 of benchmarks.layers)
split into its calls, as the README's layer table explains its miss, a linear row's backward by the compiled
replay's loops and by gemm (docs/architecture.md, runtime.linear_by_loops), and a policy-gradient episode's
forward and backward (softmax rows the replay runs itself: docs/architecture.md), a seq2seq decoder's (an
nn.GRU called one step at a time, as the translation tutorials' decoders call it), and what recording costs in a
small step (polynomial_autograd's forward with grad and without: the README's real-programs paragraph).

    python -m benchmarks.op_costs [ops] [l5] [linear] [policy] [decoder] [record]

Prints medians of perf_counter around each call (ops: 5,000 calls no-grad after 500; l5: 3,000 steps after 300;
linear: 1,000 backwards after 100; policy: 600 episodes after 100, forward and backward apart; decoder: 300
sequences after 50, the same; record: 5,000 forwards after 300, with grad and without).
"""
import math
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # (one thread, as torch's below: before NumPy loads its BLAS)
import numpy as np  # noqa: E402


def _median_us(f, n=5000, warm=500):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[warm:]) * 1e6


def _ops(L):
    F = L.nn.functional
    rng = np.random.default_rng(0)
    v = L.tensor(np.linspace(-math.pi, math.pi, 2000).astype(np.float32))
    x = L.tensor(rng.random((32, 64)).astype(np.float32))
    y = L.tensor(rng.random((32, 64)).astype(np.float32))
    probs, action = L.tensor(rng.random((1, 2)).astype(np.float32)), L.tensor(1)
    return {"sum of 2,000": lambda: v.sum(), "mean of 2,000": lambda: v.mean(),
            "x[:, :8] of 32 x 64": lambda: x[:, :8], "probs[0, action]": lambda: probs[0, action],
            "x.size(0)": lambda: x.size(0), "rand(32)": lambda: L.rand(32),
            "softmax of 32 x 64": lambda: F.softmax(x, dim=1), "max(x, 1) of 32 x 64": lambda: x.max(1),
            "tensor(0.0)": lambda: L.tensor(0.0), "x.t() of 32 x 64": lambda: x.t(),
            "x.add_(y, alpha=-0.01) of 32 x 64": lambda: x.add_(y, alpha=-0.01),  # (a manual SGD step's update)
            "softmax of 1 x 2": lambda: F.softmax(probs, dim=1), "log_softmax of 32 x 64": lambda: F.log_softmax(x, 1),
            "Categorical(p).log_prob(a), p 1 x 2": lambda: L.distributions.Categorical(probs).log_prob(action)}


def ops(torch, tapegrad):
    cases = {lib: _ops(lib) for lib in (torch, tapegrad)}
    for name in cases[torch]:
        a, b = _median_us(cases[torch][name]), _median_us(cases[tapegrad][name])
        print(f"{name:24s} torch {a:6.2f} us  tapegrad {b:6.2f} us  {b / a:5.2f}x")


def l5(L, steps=3000, warm=300):
    """The phases of L5's step: layer_norm, `* seed`, `.sum()`, backward (float32, 16 x 64 x 128)."""
    rng = np.random.default_rng(15)
    x = L.tensor(rng.standard_normal((16, 64, 128)).astype(np.float32), requires_grad=True)
    seed = L.tensor(rng.standard_normal((16, 64, 128)).astype(np.float32))
    ln = L.nn.LayerNorm(128)
    phases = [[], [], [], []]
    pc = time.perf_counter
    for _ in range(steps):
        for t in (x, ln.weight, ln.bias):
            t.grad = None
        t0 = pc(); out = ln(x); t1 = pc(); prod = out * seed; t2 = pc(); loss = prod.sum(); t3 = pc()
        loss.backward(); t4 = pc()
        for p, d in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            p.append(d)
    return [statistics.median(p[warm:]) * 1e6 for p in phases]


LINEAR_SHAPES = [(2000, 3, 1), (4096, 8, 1), (64, 128, 1), (16, 8, 8), (64, 16, 16), (32, 32, 32), (8, 64, 64)]


def linear(L, n, k, m, gemm=True, steps=1000, warm=100):
    """One `F.linear(x, w, b).sum()` backward, x (n, k), w (m, k), all requiring grad (float32); for tapegrad, with
    the replay's gemm or without one (runtime.BLAS zeroed: the loops, for rows of at most LINEAR_HERE_MAX)."""
    rng = np.random.default_rng(0)
    x, w, b = (L.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in ((n, k), (m, k), (m,)))
    if L.__name__ == "tapegrad":
        from tapegrad import kernels
        rt = kernels.load()
        blas, rt.BLAS = rt.BLAS, (rt.BLAS if gemm else np.zeros(2, np.int64))
    times = []
    try:
        for _ in range(steps):
            y = L.nn.functional.linear(x, w, b).sum()
            t0 = time.perf_counter()
            y.backward()
            times.append(time.perf_counter() - t0)
            x.grad = w.grad = b.grad = None
    finally:
        if L.__name__ == "tapegrad":
            rt.BLAS = blas
    return statistics.median(times[warm:]) * 1e6


def policy(L, episodes=600, warm=100):
    """A policy-gradient episode's graph (reinforce.py's kind): 20 steps of softmax(Linear(4, 2)(state)), the taken
    action's -log-probability times its return, summed; (forward, backward) medians in us."""
    L.manual_seed(0)
    lin = L.nn.Linear(4, 2)
    states = [L.randn(1, 4) for _ in range(20)]
    forward, backward = [], []
    for _ in range(episodes):
        t0 = time.perf_counter()
        terms = [-L.log(L.nn.functional.softmax(lin(s), dim=1)[0, 1]).unsqueeze(0) * 0.5 for s in states]
        loss = L.cat(terms).sum()
        t1 = time.perf_counter()
        loss.backward()
        forward.append(t1 - t0)
        backward.append(time.perf_counter() - t1)
    return statistics.median(forward[warm:]) * 1e6, statistics.median(backward[warm:]) * 1e6


def record(L, steps=5000, warm=300):
    """What recording costs in a small step: polynomial_autograd's forward (`a + b * x + c * x ** 2 + d * x ** 3`,
    its loss; 0-d parameters, 2,000 float32 points) with its parameters requiring grad (and a backward after each
    step) and without; (recorded, unrecorded) medians in us."""
    x = L.linspace(-math.pi, math.pi, 2000)
    y = L.sin(x)
    out = []
    for grad in (True, False):
        a, b, c, d = [L.tensor(v, requires_grad=grad) for v in (0.1, -0.2, 0.3, 0.05)]
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            loss = (a + b * x + c * x ** 2 + d * x ** 3 - y).pow(2).sum()
            times.append(time.perf_counter() - t0)
            if grad:
                loss.backward()
        out.append(statistics.median(times[warm:]) * 1e6)
    return tuple(out)


def decoder(L, sequences=300, warm=50, H=128):
    """A seq2seq decoder's graph (the translation tutorial's kind): 10 steps of embedding, relu, a one-step nn.GRU
    (batch 1), Linear, log_softmax and nll_loss, summed; (forward, backward) medians in us."""
    L.manual_seed(0)
    F = L.nn.functional
    emb, gru, out = L.nn.Embedding(50, H), L.nn.GRU(H, H), L.nn.Linear(H, 50)
    params = [*emb.parameters(), *gru.parameters(), *out.parameters()]
    targets = [3, 7, 1, 9, 4, 4, 2, 8, 5, 0]
    forward, backward = [], []
    for _ in range(sequences):
        t0 = time.perf_counter()
        h, loss, token = L.zeros(1, 1, H), 0, L.tensor([[0]])
        for t in targets:
            o, h = gru(F.relu(emb(token).view(1, 1, -1)), h)
            loss = loss + F.nll_loss(F.log_softmax(out(o[0]), dim=1), L.tensor([t]))
            token = L.tensor([[t]])
        t1 = time.perf_counter()
        loss.backward()
        forward.append(t1 - t0)
        backward.append(time.perf_counter() - t1)
        for p in params:
            p.grad = None
    return statistics.median(forward[warm:]) * 1e6, statistics.median(backward[warm:]) * 1e6


if __name__ == "__main__":
    import torch
    import tapegrad
    torch.set_num_threads(1)
    which = sys.argv[1:] or ["ops", "l5", "linear"]
    if "ops" in which:
        ops(torch, tapegrad)
    if "l5" in which:
        for lib in (torch, tapegrad):
            f, m, s, b = l5(lib)
            print(f"L5 {lib.__name__:8s} layer_norm {f:6.1f} us  * seed {m:5.1f}  .sum() {s:5.1f}  backward {b:6.1f}")
    if "linear" in which:
        for n, k, m in LINEAR_SHAPES:
            t, g, lp = linear(torch, n, k, m), linear(tapegrad, n, k, m), linear(tapegrad, n, k, m, gemm=False)
            print(f"linear backward {str((n, k, m)):15s} torch {t:6.1f} us  tapegrad loops {lp:6.1f}  gemm {g:6.1f}")
    if "policy" in which:
        for lib in (torch, tapegrad):
            f, b = policy(lib)
            print(f"policy episode {lib.__name__:8s} forward {f:6.1f} us  backward {b:6.1f} us")
    if "record" in which:
        for lib in (torch, tapegrad):
            with_grad, without = record(lib)
            print(f"polynomial forward {lib.__name__:8s} recorded {with_grad:6.1f} us  without grad {without:6.1f} us")
    if "decoder" in which:
        for lib in (torch, tapegrad):
            f, b = decoder(lib)
            print(f"decoder sequence {lib.__name__:8s} forward {f:6.1f} us  backward {b:6.1f} us")
