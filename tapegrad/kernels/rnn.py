"""Fused LSTM and GRU step kernels, for a cell and for a whole layer's recurrence: one pass over the (B, 4H) or
(B, 3H) gates each way, instead of about a dozen NumPy calls (each a pass and a temporary). The forward's
sigmoid and tanh are vecmath's, which LLVM vectorises (NumPy's float64 tanh runs one element at a time: 15-30
ns each); an output that is also an input makes LLVM's alias check take the scalar loop, so none is. Gate order
i, f, g, o and r, z, n, as torch's. Values are stored before they are read again, so float32 rounds where torch's
float32 kernels do. In its own module so that only recurrent layers compile it."""
from numba import njit

from . import vecmath
from .memory import JIT


@njit(**JIT)
def lstm_forward(gx, gh, c, acts, cy, tc, hy):
    """One LSTM step from the pre-activation halves gx, gh (B, 4H) and the cell state c (B, H): acts gets the gate
    activations, cy = f c + i g, tc = tanh(cy), hy = o tanh(cy)."""
    b, four = acts.shape
    H = four // 4
    for r in range(b):
        for j in range(2 * H):
            acts[r, j] = vecmath.sigmoid(gx[r, j] + gh[r, j])
        for j in range(2 * H, 3 * H):
            acts[r, j] = vecmath.tanh(gx[r, j] + gh[r, j])
        for j in range(3 * H, four):
            acts[r, j] = vecmath.sigmoid(gx[r, j] + gh[r, j])
        for j in range(H):
            cy[r, j] = acts[r, H + j] * c[r, j] + acts[r, j] * acts[r, 2 * H + j]
            tc[r, j] = vecmath.tanh(cy[r, j])
            hy[r, j] = acts[r, 3 * H + j] * tc[r, j]


@njit(**JIT)
def gru_forward(gi, gh, h, rz, n, hy):
    """One GRU step from gi, gh (B, 3H) and h (B, H): rz (B, 2H) the reset and update gates,
    n = tanh(gi_n + r gh_n), hy = n + z (h - n)."""
    b, three = gi.shape
    H = three // 3
    for r in range(b):
        for j in range(2 * H):
            rz[r, j] = vecmath.sigmoid(gi[r, j] + gh[r, j])
        for j in range(H):
            n[r, j] = vecmath.tanh(gi[r, 2 * H + j] + rz[r, j] * gh[r, 2 * H + j])
            hy[r, j] = n[r, j] + rz[r, H + j] * (h[r, j] - n[r, j])


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
def lstm_cell_add(acts, tc, cx, g, gx, gh, gc, B, H, c_row, want_x, want_h, want_c):
    """An LSTM cell row's adjoints added into flat blocks, for the replay's compiled rule (runtime._lstm_cell_rule):
    gx and gh (B, 4H) each take d, gc (B, H) dcx (c_row: the c' row, lstm_backward_c's terms; else the h' row,
    lstm_backward_h's, which reads tanh(c') tc and not cx). Each term is that kernel's expression rounded to the dtype
    as its store rounds it, then added as the array rule's result is: the same bits either way."""
    one = acts.dtype.type
    for r in range(B):
        for j in range(H):
            a = r * 4 * H + j
            gr = g[r * H + j]
            if c_row:
                i, f, gg = acts[a], acts[a + H], acts[a + 2 * H]
                di = one(gr * gg * i * (1 - i))
                df = one(gr * cx[r * H + j] * f * (1 - f))
                dg = one(gr * i * (1 - gg * gg))
                if want_x:
                    gx[a] += di
                    gx[a + H] += df
                    gx[a + 2 * H] += dg
                if want_h:
                    gh[a] += di
                    gh[a + H] += df
                    gh[a + 2 * H] += dg
                if want_c:
                    gc[r * H + j] += one(gr * f)
            else:
                o, t = acts[a + 3 * H], tc[r * H + j]
                do = one(gr * t * o * (1 - o))
                if want_x:
                    gx[a + 3 * H] += do
                if want_h:
                    gh[a + 3 * H] += do
                if want_c:
                    gc[r * H + j] += one(gr * o * (1 - t * t))


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


@njit(**JIT)
def gru_layer_step_backward(rz, n, gh, h_prev, g_h, dh, dgi, dgh):
    """One step of a whole-sequence GRU layer's backward: from the step's gates rz (B, 2H), n (B, H), the recurrent
    pre-activations gh (B, 3H), h_{t-1}, the output's adjoint g_h and the adjoint dh arriving from step t+1, the
    adjoints of the step's input and recurrent pre-activations dgi, dgh (B, 3H); dh becomes the part of dh_{t-1}
    through z (the part through dgh W_hh is the caller's BLAS call)."""
    b, three = gh.shape
    H = three // 3
    for r in range(b):
        for j in range(H):
            rr, z, nn = rz[r, j], rz[r, H + j], n[r, j]
            gt = g_h[r, j] + dh[r, j]
            dn = gt * (1 - z) * (1 - nn * nn)
            dr = dn * gh[r, 2 * H + j] * rr * (1 - rr)
            dz = gt * (h_prev[r, j] - nn) * z * (1 - z)
            dgi[r, j] = dr
            dgi[r, H + j] = dz
            dgi[r, 2 * H + j] = dn
            dgh[r, j] = dr
            dgh[r, H + j] = dz
            dgh[r, 2 * H + j] = dn * rr
            dh[r, j] = gt * z
