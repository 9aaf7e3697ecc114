"""Fused LSTM cell step backward kernels: one pass over the (B, 4H) gate activations per row, instead of
about a dozen NumPy calls (each a pass and a temporary). (The forward stays in NumPy: its vectorised tanh
beats a compiled scalar exp/tanh loop.) Gate order i, f, g, o, as torch's. In its own module so
that only recurrent layers compile it."""
from numba import njit

from .memory import JIT


@njit(**JIT)
def lstm_backward_c(acts, cx, g, d, dcx):
    """The c' row: d (B, 4H) gets the i, f, g parts of dc' (o part 0); dcx = dc' f."""
    b, four = acts.shape
    H = four // 4
    for r in range(b):
        for j in range(H):
            i, f, gg = acts[r, j], acts[r, H + j], acts[r, 2 * H + j]
            gr = g[r, j]
            d[r, j] = gr * gg * i * (1 - i)
            d[r, H + j] = gr * cx[r, j] * f * (1 - f)
            d[r, 2 * H + j] = gr * i * (1 - gg * gg)
            d[r, 3 * H + j] = 0.0
            dcx[r, j] = gr * f


@njit(**JIT)
def lstm_backward_h(acts, tc, g, d, dcy):
    """The h' row: d (B, 4H) gets the o part of dh' (the rest 0); dcy = dh' o (1 - tanh(c')^2)."""
    b, four = acts.shape
    H = four // 4
    for r in range(b):
        for j in range(H):
            o, t, gr = acts[r, 3 * H + j], tc[r, j], g[r, j]
            d[r, j] = 0.0
            d[r, H + j] = 0.0
            d[r, 2 * H + j] = 0.0
            d[r, 3 * H + j] = gr * t * o * (1 - o)
            dcy[r, j] = gr * o * (1 - t * t)


@njit(**JIT)
def lstm_layer_step_backward(acts, tc, c_prev, g_h, dh, dc, d):
    """One step of a whole-sequence LSTM layer's backward: from the step's gate activations acts (B, 4H),
    tanh(c_t), c_{t-1}, the output's adjoint g_h and the recurrent adjoints dh, dc (B, H) arriving from step
    t+1, the gate pre-activations' adjoint d (B, 4H); dc becomes dc_{t-1} = dc_t f (dh_{t-1} = d W_hh is the
    caller's BLAS call)."""
    b, four = acts.shape
    H = four // 4
    for r in range(b):
        for j in range(H):
            i, f, gg, o = acts[r, j], acts[r, H + j], acts[r, 2 * H + j], acts[r, 3 * H + j]
            t = tc[r, j]
            dhr = dh[r, j] + g_h[r, j]
            dcr = dc[r, j] + dhr * o * (1 - t * t)
            d[r, j] = dcr * gg * i * (1 - i)
            d[r, H + j] = dcr * c_prev[r, j] * f * (1 - f)
            d[r, 2 * H + j] = dcr * i * (1 - gg * gg)
            d[r, 3 * H + j] = dhr * t * o * (1 - o)
            dc[r, j] = dcr * f
