"""Threads: grad mode and the tape are per thread. Concurrent training matches sequential training bit for
bit; a graph is backpropagated by the thread that records it (or after that thread has finished), and any
other use raises a clear error instead of corrupting a tape."""
import sys
import threading

import numpy as np
import pytest

import tapegrad
from tapegrad import tape as tape_mod


@pytest.fixture
def fast_switching():
    """Switch threads as often as the interpreter can, so that their steps interleave."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def run_in_thread(fn, *args):
    out = {}

    def target():
        try:
            out["result"] = fn(*args)
        except BaseException as e:  # noqa: BLE001  (re-raised in the caller)
            out["error"] = e
    t = threading.Thread(target=target)
    t.start()
    return t, out


def train(seed, steps, barrier=None, evaluate=False):
    """A small MLP trained by SGD; returns its losses and final parameters. With evaluate, forward passes
    without no_grad are interleaved, so the thread's tape sweeps and compacts as it trains."""
    g = np.random.default_rng(seed)
    w1 = tapegrad.tensor(g.standard_normal((8, 16)).astype(np.float32) * 0.3, requires_grad=True)
    b1 = tapegrad.tensor(np.zeros(16, np.float32), requires_grad=True)
    w2 = tapegrad.tensor(g.standard_normal((16, 1)).astype(np.float32) * 0.3, requires_grad=True)
    x = tapegrad.tensor(g.standard_normal((32, 8)).astype(np.float32))
    y = tapegrad.tensor(g.standard_normal((32, 1)).astype(np.float32))
    params, losses = [w1, b1, w2], []
    for step in range(steps):
        if barrier is not None:
            barrier.wait()
        loss = (((x @ w1 + b1).tanh() @ w2 - y) ** 2).mean()
        if evaluate:
            for _ in range(20):
                ((x @ w1 + b1).sigmoid() @ w2).sum()
        if step % 7 == 3:
            with tapegrad.no_grad():  # this thread's grad mode only
                assert not tapegrad.is_grad_enabled()
                (x @ w1).sum()
        loss.backward()
        with tapegrad.no_grad():
            for p in params:
                p -= 0.05 * p.grad
                p.grad = None
        losses.append(loss.item())
    return np.array(losses), [p.detach().numpy().copy() for p in params]


@pytest.mark.parametrize("evaluate", [False, True], ids=["train", "train+evaluate"])
def test_two_threads_training_concurrently_match_sequential_training(fast_switching, evaluate):
    steps = 150
    sequential = [train(seed, steps, evaluate=evaluate) for seed in (1, 2)]
    barrier = threading.Barrier(2)
    runs = [run_in_thread(train, seed, steps, barrier, evaluate) for seed in (1, 2)]
    for t, out in runs:
        t.join()
        if "error" in out:
            raise out["error"]
    for (losses, params), (_, out) in zip(sequential, runs):
        c_losses, c_params = out["result"]
        np.testing.assert_array_equal(c_losses, losses)
        for a, b in zip(c_params, params):
            np.testing.assert_array_equal(a, b)
    assert sequential[0][0][-1] < sequential[0][0][0]


def test_each_thread_records_its_own_tape_and_grad_mode():
    seen = {}
    started, release = threading.Event(), threading.Event()

    def worker():
        with tapegrad.no_grad():
            started.set()
            release.wait(10)
            x = tapegrad.ones(2, requires_grad=True)
            seen["worker_records"] = (x * 2).requires_grad
        seen["tape"] = tape_mod.current()

    t, out = run_in_thread(worker)
    started.wait(10)
    x = tapegrad.ones(2, requires_grad=True)
    assert tapegrad.is_grad_enabled() and (x * 2).requires_grad  # the worker's no_grad is its own
    release.set()
    t.join()
    assert seen["worker_records"] is False
    assert seen["tape"] is not tape_mod.current()


def test_backward_from_another_thread_while_the_recording_thread_lives_raises_clearly():
    made, done = threading.Event(), threading.Event()
    box = {}

    def recorder():
        x = tapegrad.tensor([1.0, 2.0], requires_grad=True)
        box["x"], box["y"] = x, (x * x).sum()
        made.set()
        done.wait(10)  # alive, and it could be recording

    t, out = run_in_thread(recorder)
    made.wait(10)
    tape = box["y"]._tape
    n = tape.n
    with pytest.raises(RuntimeError, match="recorded by thread .* still running"):
        box["y"].backward()
    with pytest.raises(RuntimeError, match="recorded by thread .* still running"):
        tapegrad.autograd.grad(box["y"], box["x"])
    assert box["x"].grad is None and tape.n == n  # nothing changed
    done.set()
    t.join()
    box["y"].backward()  # the recording thread has finished: its tape is free to use
    np.testing.assert_allclose(box["x"].grad.numpy(), [2.0, 4.0])


def test_a_graph_recorded_in_another_thread_cannot_be_extended_here():
    box = {}
    t, out = run_in_thread(lambda: box.setdefault("y", tapegrad.ones(2, requires_grad=True) * 3))
    t.join()
    with pytest.raises(RuntimeError, match="recorded by another thread"):
        box["y"] * 2
    z = box["y"].detach() * 2  # the way across
    assert not z.requires_grad


def test_a_leaf_shared_by_threads_gets_every_threads_gradient(fast_switching):
    """Two threads backpropagate into one leaf at once (Hogwild style): no accumulation is lost, the
    first one (which creates .grad) included."""
    w = tapegrad.tensor(np.ones(64), requires_grad=True)
    barrier = threading.Barrier(2, timeout=30)
    failures = []

    def worker(k):
        for _ in range(200):
            y = (w * float(k)).sum()
            barrier.wait()   # both start from .grad = None
            y.backward()
            barrier.wait()
            if k == 1:
                if w.grad is None or not (w.grad.numpy() == 3.0).all():
                    failures.append(None if w.grad is None else w.grad.numpy().copy())
                w.grad = None
            barrier.wait()

    runs = [run_in_thread(worker, k) for k in (1, 2)]
    for t, out in runs:
        t.join()
        assert "error" not in out, out.get("error")
    assert failures == []
