"""Fused recurrent cell steps: the gate nonlinearities and state update of an LSTM or GRU step as one tape row
each way (the gate pre-activations come from two linear rows, x W_ih^T + b_ih and h W_hh^T + b_hh).

An LSTM step is two rows, since a row has one output: `lstm_cell_c` (c' = f c + i g) and `lstm_cell_h`
(h' = o tanh(c')); both read the two pre-activation halves and share the gate values the first computed.
A GRU step is one row, `gru_cell`, with torch's n = tanh(W_in x + b_in + r (W_hn h + b_hn)). Gate order is
torch's: LSTM i, f, g, o; GRU r, z, n. A plain backward runs the NumPy array rules; create_graph runs the
same derivative written in Tensor ops, so it is recorded and second order works. The LSTM rows' backward
runs compiled kernels (kernels/rnn.py); their forward computes c' and h' together.
"""
import numpy as np

from .. import kernels, registry
from ..registry import Ctx
from ..tensor import _new
from ._common import OPS, _record, _tensor
from .shape import cat


def _sigmoid(a):
    # 0.5 (1 + tanh(a / 2)): no overflow warning for large |a|, and it keeps float32 float32
    return 0.5 * (1 + np.tanh(0.5 * a))


def _check_pair(gx, gh, k):
    if gx.shape != gh.shape or gx.ndim < 1 or gx.shape[-1] % k:
        raise RuntimeError(f"expected gate pre-activations of equal shape (..., {k} * hidden_size), "
                           f"got {tuple(gx.shape)} and {tuple(gh.shape)}")
    if gx._data.dtype != gh._data.dtype:
        raise RuntimeError(f"expected gate pre-activations of one dtype, got {gx.dtype} and {gh.dtype}")


# -- LSTM -------------------------------------------------------------------------------------------------
def lstm_cell_step(gx, gh, cx):
    """(h', c') of one LSTM step from gx = x W_ih^T + b_ih, gh = h W_hh^T + b_hh (each (..., 4H)) and c."""
    gx, gh, cx = _tensor(gx), _tensor(gh), _tensor(cx)
    _check_pair(gx, gh, 4)
    H = gx.shape[-1] // 4
    if cx.shape != gx.shape[:-1] + (H,):
        raise RuntimeError(f"expected a cell state of shape {gx.shape[:-1] + (H,)}, got {tuple(cx.shape)}")
    ctx = Ctx(H=H)
    c = _record(OPS["lstm_cell_c"], _lstm_c_forward(ctx, gx._data, gh._data, cx._data), (gx, gh, cx), aux=ctx)
    hctx = Ctx(H=H, c_ctx=ctx)
    h = _record(OPS["lstm_cell_h"], _lstm_h_forward(hctx, gx._data, gh._data, c._data), (gx, gh, c), aux=hctx)
    return h, c


def _lstm_c_forward(ctx, gx, gh, cx):
    """c' = f c + i g, and h' = o tanh(c') for the h row; keeps the gate activations and tanh(c') in ctx
    (both rows' compiled backward reads them)."""
    H, dt = ctx.H, gx.dtype
    lead = gx.shape[:-1]
    gx2, gh2 = np.ascontiguousarray(gx).reshape(-1, 4 * H), np.ascontiguousarray(gh).reshape(-1, 4 * H)
    cx2 = np.ascontiguousarray(cx, dt).reshape(-1, H)
    # NumPy's vectorised tanh here: the compiled scalar exp/tanh loop was slower (0.56 ms at 20 x 800)
    acts = gx2 + gh2
    acts[:, :2 * H] = _sigmoid(acts[:, :2 * H])
    acts[:, 2 * H:3 * H] = np.tanh(acts[:, 2 * H:3 * H])
    acts[:, 3 * H:] = _sigmoid(acts[:, 3 * H:])
    cy = acts[:, H:2 * H] * cx2
    cy += acts[:, :H] * acts[:, 2 * H:3 * H]
    tc = np.tanh(cy)
    hy = acts[:, 3 * H:] * tc
    ctx.acts, ctx.tc, ctx.hy = acts, tc, hy.reshape(lead + (H,))
    return cy.reshape(lead + (H,))


def _lstm_h_forward(ctx, gx, gh, cy):
    """h' = o tanh(c'), computed by the c row's pass (which runs just before, in a replay too)."""
    c_ctx = ctx.c_ctx
    ctx.acts, ctx.tc = c_ctx.acts, c_ctx.tc
    return c_ctx.hy


def _lstm_c_arrays(ctx, g, inputs, out, wanted):
    H, acts = ctx.H, ctx.acts
    d, dcx = np.empty_like(acts), np.empty_like(ctx.tc)
    cx = np.ascontiguousarray(inputs[2], acts.dtype).reshape(-1, H)
    _kernels().lstm_backward_c(acts, cx, np.ascontiguousarray(g, acts.dtype).reshape(-1, H), d, dcx)
    d = d.reshape(g.shape[:-1] + (4 * H,))
    return d, d, (dcx.reshape(g.shape) if wanted[2] else None)


def _lstm_h_arrays(ctx, g, inputs, out, wanted):
    H, acts = ctx.H, ctx.acts
    d, dcy = np.empty_like(acts), np.empty_like(ctx.tc)
    _kernels().lstm_backward_h(acts, ctx.tc, np.ascontiguousarray(g, acts.dtype).reshape(-1, H), d, dcy)
    d = d.reshape(g.shape[:-1] + (4 * H,))
    return d, d, (dcy.reshape(g.shape) if wanted[2] else None)




def _kernels():
    return kernels.module("rnn")


def _gates(gx, gh, k):
    return (gx + gh).chunk(k, -1)


def _zeros(like):
    return _new(np.zeros(like.shape, like._data.dtype))


def _vjp_lstm_c(ctx, g, inputs, out):
    gx, gh, cx = inputs
    ai, af, ag, ao = _gates(gx, gh, 4)
    i, f, gg = ai.sigmoid(), af.sigmoid(), ag.tanh()
    d = cat([g * gg * i * (1 - i), g * cx * f * (1 - f), g * i * (1 - gg * gg), _zeros(ao)], -1)
    return d, d.clone(), g * f


def _vjp_lstm_h(ctx, g, inputs, out):
    gx, gh, cy = inputs
    ai, af, ag, ao = _gates(gx, gh, 4)
    o, tc = ao.sigmoid(), cy.tanh()
    z = _zeros(ai)
    d = cat([z, z, z, g * tc * o * (1 - o)], -1)
    return d, d.clone(), g * o * (1 - tc * tc)


# -- GRU --------------------------------------------------------------------------------------------------
def gru_cell_step(gi, gh, hx):
    """h' of one GRU step from gi = x W_ih^T + b_ih, gh = h W_hh^T + b_hh (each (..., 3H)) and h."""
    gi, gh, hx = _tensor(gi), _tensor(gh), _tensor(hx)
    _check_pair(gi, gh, 3)
    H = gi.shape[-1] // 3
    if hx.shape != gi.shape[:-1] + (H,):
        raise RuntimeError(f"expected a hidden state of shape {gi.shape[:-1] + (H,)}, got {tuple(hx.shape)}")
    ctx = Ctx(H=H)
    return _record(OPS["gru_cell"], _gru_forward(ctx, gi._data, gh._data, hx._data), (gi, gh, hx), aux=ctx)


def _gru_forward(ctx, a, b, h):
    H = ctx.H
    h = h.astype(a.dtype, copy=False)
    rz = _sigmoid(a[..., :2 * H] + b[..., :2 * H])
    n = np.tanh(a[..., 2 * H:] + rz[..., :H] * b[..., 2 * H:])
    ctx.rz, ctx.n = rz, n
    return n + rz[..., H:] * (h - n)


def _gru_arrays(ctx, g, inputs, out, wanted):
    H, n = ctx.H, ctx.n
    r, z = ctx.rz[..., :H], ctx.rz[..., H:]
    gh, hx = inputs[1], inputs[2]
    dn = g * (1 - z) * (1 - n * n)
    dgi = np.empty(r.shape[:-1] + (3 * H,), g.dtype)
    dgi[..., :H] = dn * gh[..., 2 * H:] * r * (1 - r)
    dgi[..., H:2 * H] = g * (hx - n) * z * (1 - z)
    dgi[..., 2 * H:] = dn
    dgh = None
    if wanted[1]:
        dgh = dgi.copy()
        dgh[..., 2 * H:] = dn * r
    return dgi, dgh, (g * z if wanted[2] else None)


def _vjp_gru(ctx, g, inputs, out):
    gi, gh, hx = inputs
    ir, iz, i_n = gi.chunk(3, -1)
    hr, hz, hn = gh.chunk(3, -1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (i_n + r * hn).tanh()
    dn = g * (1 - z) * (1 - n * n)
    dr = dn * hn * r * (1 - r)
    dz = g * (hx - n) * z * (1 - z)
    return cat([dr, dz, dn], -1), cat([dr, dz, dn * r], -1), g * z


# (tapegrad.compile's replay recomputes a row with its forward, refreshing the context its backward reads)
registry.python("lstm_cell_c", "ThnnFusedLstmCellBackward0", _lstm_c_forward, _vjp_lstm_c,
                array_vjp=_lstm_c_arrays)
registry.python("lstm_cell_h", "ThnnFusedLstmCellBackward0", _lstm_h_forward, _vjp_lstm_h,
                array_vjp=_lstm_h_arrays)
registry.python("gru_cell", "ThnnFusedGruCellBackward0", _gru_forward, _vjp_gru,
                array_vjp=_gru_arrays)

__all__ = []  # internal: nn.LSTMCell / GRUCell / LSTM / GRU call lstm_cell_step and gru_cell_step
