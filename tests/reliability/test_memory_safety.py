"""Memory safety of the compiled replay (issue 16): a row's recorded dtype always agrees with its value; float16
values inside a graph are read as float16; every compiled view takes its length and dtype from the array
itself, so NUMBA_BOUNDSCHECK=1 sees an overrun and a wrong dtype raises instead of reading past a buffer.
Anything that could crash the interpreter runs in a subprocess, which must exit normally (no signal).

.ci/run runs this file with NUMBA_BOUNDSCHECK=1.
"""
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import tapegrad

REPO = Path(__file__).resolve().parents[2]


def run_isolated(script, timeout=300, **env):
    """Run a script in a fresh interpreter; a signal (SIGSEGV, SIGBUS, SIGABRT) fails the test by name."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, PYTHONPATH=str(REPO), **env))
    if done.returncode < 0:
        pytest.fail(f"the interpreter died of {signal.Signals(-done.returncode).name}:\n{done.stderr[-3000:]}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


# -- 1. an in-place op whose result dtype differs from the tensor written into --------------------------------
IN_PLACE = {
    "div_": lambda a, b: a.div_(b), "mul_": lambda a, b: a.mul_(b), "add_": lambda a, b: a.add_(b),
    "sub_": lambda a, b: a.sub_(b), "copy_": lambda a, b: a.copy_(b), "pow_": lambda a, b: a.pow_(b),
    "setitem": lambda a, b: a.__setitem__(slice(None), b)}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
@pytest.mark.parametrize("into,operand", [("float32", "float64"), ("float64", "float32")])
def test_an_in_place_op_of_another_result_dtype_gives_torchs_gradient(name, into, operand):
    b0 = np.linspace(1, 2, 7)

    def run(L):
        a = L.ones(7, dtype=getattr(L, into)) * 2
        b = L.tensor(b0, dtype=getattr(L, operand), requires_grad=True)
        IN_PLACE[name](a, b)
        ((a * 1.5).sum() + (b * 3).sum()).backward()
        return a.detach().numpy(), str(a.dtype), b.grad.numpy(), str(b.grad.dtype)

    got, want = run(tapegrad), run(torch)
    assert got[1] == want[1] and got[3] == want[3]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)


def test_the_issues_in_place_crash_computes_torchs_gradient_in_a_subprocess():
    out = run_isolated("""
        import numpy as np, tapegrad as torch
        n = 3_000_000
        big = torch.ones(4 * n, requires_grad=True)
        a = torch.ones(n) * 2
        b = torch.tensor(np.linspace(1, 2, n), dtype=torch.float64, requires_grad=True)
        a.div_(b); ((a * 1.0).sum() + (big * 3).sum()).backward()
        want = -2.0 / np.linspace(1, 2, n) ** 2
        assert b.grad.dtype == torch.float64
        np.testing.assert_allclose(b.grad.numpy(), want, rtol=1e-6)
        assert (big.grad.numpy() == 3).all()
        print("ok")
    """)
    assert "ok" in out


# -- 2. float16 values inside a recorded graph -----------------------------------------------------------------
HALF_GRAPHS = {
    "square": lambda L, h: h * h,
    "sin_exp": lambda L, h: h.sin() * h.exp(),
    "tanh_add": lambda L, h: h.tanh() + h,
    "broadcast": lambda L, h: h.reshape(2, 4) * h.reshape(2, 4)[:1],
    "sum_div": lambda L, h: h / (h.sum() + 1),
    "relu_sigmoid": lambda L, h: L.relu(h - 0.3).sigmoid(),
}


@pytest.mark.parametrize("name", sorted(HALF_GRAPHS))
@pytest.mark.parametrize("leaf_dtype", ["float32", "float64"])
def test_float16_values_inside_a_graph_give_torchs_gradient(name, leaf_dtype):
    x0 = np.linspace(-1, 1.5, 8)

    def run(L):
        x = L.tensor(x0, dtype=getattr(L, leaf_dtype), requires_grad=True)
        h = x.to(L.float16)
        y = HALF_GRAPHS[name](L, h)
        assert y.dtype == L.float16
        y.to(getattr(L, leaf_dtype)).sum().backward()
        return y.detach().numpy().astype(np.float64), x.grad.numpy(), str(x.grad.dtype)

    (v, g, d), (tv, tg, td) = run(tapegrad), run(torch)
    assert d == td
    np.testing.assert_allclose(v, tv, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(g, tg, rtol=1e-2, atol=1e-2)  # float16 rounding of torch's per-op gradients


def test_the_issues_float16_graph_in_a_subprocess():
    out = run_isolated("""
        import numpy as np, tapegrad as torch
        x = torch.tensor([1., 2., 3., 4.], requires_grad=True)
        h = x.to(torch.float16); (h * h).float().sum().backward()
        assert x.grad.tolist() == [2., 4., 6., 8.], x.grad
        x = torch.ones(20_000_000, requires_grad=True)
        h = x.to(torch.float16); (h * h).float().sum().backward()
        assert (x.grad.numpy() == 2).all()
        print("ok")
    """)
    assert "ok" in out


def test_gemm_called_from_the_replay_in_a_subprocess():
    """The compiled replay calls NumPy's OpenBLAS gemm by address (kernels/blas.py): products of every shape the
    rule takes (a dimension of 1, sizes past one BLAS block, float32 and float64, linear with and without bias,
    a folded 3-d left operand) in a fresh interpreter, each gradient against NumPy's own products; the
    interpreter must exit normally."""
    out = run_isolated("""
        import numpy as np, tapegrad as torch
        from tapegrad.kernels import runtime
        torch.ones(1, requires_grad=True).sum().backward()
        assert runtime.BLAS.all(), runtime.BLAS
        rng = np.random.default_rng(0)
        shapes = [(1, 1, 1), (1, 7, 1), (5, 1, 3), (3, 700, 2), (300, 40, 600), (64, 64, 16)]
        for dt, tol in ((np.float32, 1e-4), (np.float64, 1e-12)):
            for m, k, n in shapes:
                a0, b0, g0 = rng.standard_normal((m, k)).astype(dt), rng.standard_normal((k, n)).astype(dt), \\
                    rng.standard_normal((m, n)).astype(dt)
                a, b = torch.tensor(a0, requires_grad=True), torch.tensor(b0, requires_grad=True)
                ((a @ b) * torch.tensor(g0)).sum().backward()
                np.testing.assert_allclose(a.grad.numpy(), g0 @ b0.T, rtol=tol, atol=tol)
                np.testing.assert_allclose(b.grad.numpy(), a0.T @ g0, rtol=tol, atol=tol)
                w0, c0 = np.ascontiguousarray(b0.T), rng.standard_normal(n).astype(dt)
                x, w, c = (torch.tensor(v, requires_grad=True) for v in (a0, w0, c0))
                (torch.nn.functional.linear(x, w, c) * torch.tensor(g0)).sum().backward()
                np.testing.assert_allclose(x.grad.numpy(), g0 @ w0, rtol=tol, atol=tol)
                np.testing.assert_allclose(w.grad.numpy(), g0.T @ a0, rtol=tol, atol=tol)
                np.testing.assert_allclose(c.grad.numpy(), g0.sum(0), rtol=tol, atol=tol)
            x0, w0, g1 = (rng.standard_normal(s).astype(dt) for s in ((4, 33, 20), (20, 16), (4, 33, 16)))
            x, w = torch.tensor(x0, requires_grad=True), torch.tensor(w0, requires_grad=True)
            ((x @ w) * torch.tensor(g1)).sum().backward()  # (matmul_fold: x folded to (132, 20))
            np.testing.assert_allclose(x.grad.numpy(), g1 @ w0.T, rtol=tol, atol=tol)
            np.testing.assert_allclose(w.grad.numpy(), x0.reshape(-1, 20).T @ g1.reshape(-1, 16), rtol=tol, atol=tol)
        print("ok")
    """)
    assert "ok" in out


def test_a_backward_into_a_freed_compiled_rule_row_raises_in_a_subprocess():
    """A second backward that reaches rows the first one freed, through a row that was not freed (a 2-layer LSTM's
    last cell state after the output's backward: layer 2's input projection, a linear row the replay runs itself,
    was freed): the plan once asked that row's freed inputs for their shapes (ids of values gone) and the
    interpreter died of SIGSEGV; now torch's error, as for any freed row."""
    out = run_isolated("""
        import numpy as np, tapegrad as torch
        lstm = torch.nn.LSTM(4, 5, 2)
        x = torch.tensor(np.random.default_rng(0).standard_normal((3, 2, 4)).astype(np.float32))
        for last in ("c", "h"):
            out, (h, c) = lstm(x)
            out.sum().backward()
            try:
                (c if last == "c" else h).sum().backward()
            except RuntimeError as e:
                assert "backward through the graph a second time" in str(e), e
            else:
                raise AssertionError("no error")
        print("ok")
    """)
    assert "ok" in out


# -- 3. a row's dtype, shape and value agree before the replay reads it ------------------------------------------
def test_a_row_whose_dtype_code_disagrees_with_its_value_raises_before_any_kernel_runs():
    x = tapegrad.ones(5, requires_grad=True)
    y = x.sin()
    tape, row = y._tape, y._slot
    tape.dtype[row] = 1  # a float32 value recorded as float64: the replay would read 40 bytes of a 20-byte buffer
    with pytest.raises(RuntimeError, match="internal error: row .* records dtype code 1 but holds a float32"):
        y.sum().backward()
    tape.dtype[row] = 0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(np.ones(5)), rtol=1e-6)


def test_bounds_checking_sees_a_length_error_in_the_compiled_replay():
    """Under NUMBA_BOUNDSCHECK=1 a view as long as its array makes an overrun an IndexError: a row whose
    input holds fewer elements than its output (the tape corrupted by hand) must raise, not read on."""
    out = run_isolated("""
        import numpy as np, tapegrad
        x = tapegrad.ones(1000, requires_grad=True)
        y = x.sin()
        tape = y._tape
        short = np.ones(10, np.float32)
        tape.values[x._slot], tape.obj[x._slot] = short, id(short)  # x's value: 10 elements, y's: 1000
        try:
            y.backward(tapegrad.ones(1000))
        except IndexError as e:
            print("IndexError:", e)
    """, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(REPO / ".numba-boundscheck"), timeout=600)
    assert "IndexError: index is out of bounds" in out, out
