"""Fused recurrent cell steps: the gate nonlinearities and state update of an LSTM or GRU step as one tape row
each way (the gate pre-activations come from two linear rows, x W_ih^T + b_ih and h W_hh^T + b_hh).

An LSTM step is two rows, since a row has one output: `lstm_cell_c` (c' = f c + i g) and `lstm_cell_h`
(h' = o tanh(c')); both read the two pre-activation halves and share the gate values the first computed.
A GRU step is one row, `gru_cell`, with torch's n = tanh(W_in x + b_in + r (W_hn h + b_hn)). Gate order is
torch's: LSTM i, f, g, o; GRU r, z, n. A plain backward runs the array rules (an LSTM cell's two rows, the
replay's compiled copy of them: kernels/runtime.py, _lstm_cell_rule); create_graph runs the
same derivative written in Tensor ops, so it is recorded and second order works. Both directions of every
step run compiled kernels (kernels/rnn.py); an LSTM step's forward computes c' and h' together.

float16 and bfloat16 cells (and autocast's, whose gates are bfloat16 and states float32) run torch's composite cell
instead, op by op, each result rounded as torch's kernels round it; a bfloat16 LSTM layer runs as torch's oneDNN one
(lstm_layer_reduced: float32 gates, the states rounded each step).
"""
import contextlib

import numpy as np

from .. import kernels, registry
from ..registry import Ctx
from ..tape import FREED_MESSAGE
from ..tensor import _new
from ._common import OPS, _record, _tensor, _to_dtype, autocast_state
from .elementwise import _with_input, where
from .nn import linear
from .shape import _row_copy, cat, stack


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
    if gx._data.dtype.char not in "fd":
        return _lstm_cell_ops(gx, gh, cx)
    ctx = Ctx(H=H)
    cy = _lstm_c_forward(ctx, gx._data, gh._data, cx._data)
    # (iattr: the id of the pair of ids of the arrays both rows' backward reads, for the replay's compiled rule)
    c = _record(OPS["lstm_cell_c"], cy, (gx, gh, cx), iattr=id(ctx.saved), aux=ctx)
    hctx = Ctx(H=H, c_ctx=ctx)
    h = _record(OPS["lstm_cell_h"], _lstm_h_forward(hctx, gx._data, gh._data, c._data), (gx, gh, c),
                iattr=id(ctx.saved), aux=hctx)
    return h, c


def _lstm_cell_ops(gx, gh, cx):
    """torch's CPU LSTM cell in float16 and bfloat16, composed of ops, each result rounded to its dtype: under autocast
    c (float32) makes f c, c' and h' float32, as there."""
    i, f, g, o = (gh + gx).chunk(4, -1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy


def _lstm_c_forward(ctx, gx, gh, cx):
    """c' = f c + i g, and h' = o tanh(c') for the h row; keeps the gate activations and tanh(c') in ctx
    (both rows' compiled backward reads them), and their ids in ctx.saved, an int64 pair the rows' iattr names:
    the replay's compiled rule (kernels/runtime.py, _lstm_cell_rule) reads them through it. A replay of
    tapegrad.compile runs this again with the same ctx, and the pair takes the new arrays' ids in place."""
    H, dt = ctx.H, gx.dtype
    lead = gx.shape[:-1]
    gx2, gh2 = np.asanyarray(gx, order="C").reshape(-1, 4 * H), np.asanyarray(gh, order="C").reshape(-1, 4 * H)
    cx2 = np.asanyarray(cx, dt, order="C").reshape(-1, H)
    acts = np.empty_like(gx2)
    cy, tc, hy = np.empty_like(cx2), np.empty_like(cx2), np.empty_like(cx2)
    _kernels().lstm_forward(gx2, gh2, cx2, acts, cy, tc, hy)
    ctx.acts, ctx.tc, ctx.hy = acts, tc, hy.reshape(lead + (H,))
    saved = ctx.__dict__.get("saved")
    if saved is None:
        saved = ctx.saved = np.empty(2, np.int64)
    saved[0], saved[1] = id(acts), id(tc)
    return cy.reshape(lead + (H,))


def _lstm_h_forward(ctx, gx, gh, cy):
    """h' = o tanh(c'), computed by the c row's pass (which runs just before, in a replay too)."""
    c_ctx = ctx.c_ctx
    ctx.acts, ctx.tc = c_ctx.acts, c_ctx.tc
    hy, c_ctx.hy = c_ctx.hy, None  # (a context holding the h row's value would keep that row alive: a leak)
    return hy


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


# -- a whole LSTM layer (one direction): two rows, the output sequence and the last cell state -------------------
def lstm_layer(gx, h0, c0, w_hh, b_hh=None, reverse=False, dtype=None):
    """(out (T, B, H), c_T (B, H)) of one direction of an LSTM layer from every step's input projection
    gx = x W_ih^T + b_ih (T, B, 4H), the initial states (B, H) and the recurrent weights: torch's
    MkldnnRnnLayerBackward0, one row for the sequence (whose last step is h_T) and one for c_T, instead of
    three rows per step. The forward runs the recurrence over arrays (one BLAS call and a few NumPy passes a
    step); the backward runs it in reverse (one compiled pass and one BLAS call a step) and gets W_hh's
    gradient as one BLAS call over all steps. `reverse` runs from the last step to the first. `dtype` (float32
    inputs): the reduced dtype each step's h and c are rounded to, and the rows' values in it, the second row's
    (h_T, c_T) stacked (lstm_layer_reduced)."""
    inputs = (gx, h0, c0, w_hh) + (() if b_hh is None else (b_hh,))
    ctx = _LayerCtx(reverse=bool(reverse), dtype=dtype, g_last=None)
    out = _record(OPS["lstm_layer"], _lstm_layer_forward(ctx, *(t._data for t in inputs)), inputs, aux=ctx)
    cctx = Ctx(reverse=bool(reverse), seq_ctx=ctx, dtype=dtype)
    # (the c_T row's rule reads the hidden states too: an input of it, which keeps them while that row lives)
    inputs += (out,)
    c_last = _record(OPS["lstm_layer_c"], _lstm_layer_c_forward(cctx, *(t._data for t in inputs)), inputs, aux=cctx)
    if out._tape is not None:  # (one node in torch: a backward through either frees what both rows' rules read)
        out._tape.share_context(out._slot, ctx)
        out._tape.share_context(c_last._slot, ctx)
    return out, c_last


def lstm_layer_reduced(x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, reverse=False):
    """(out (T, B, H), h_T, c_T (B, H)) of one direction of a bfloat16 LSTM layer (x (T, B, I), all in one dtype;
    float16 under a float16 autocast, where torch's oneDNN raises) as torch's oneDNN layer (mkldnn_rnn_layer,
    autocast's too) computes it: the gates in float32 from x W_ih^T + h W_hh^T + (b_ih + b_hh rounded once),
    c' = f c + i g and h' = o tanh(c') in float32; h' (the output and the next step's h) and the c' carried on
    are rounded. Runs lstm_layer on float32 copies (casts, so the gradients are float32 ones rounded once), its
    projection outside any autocast region."""
    f32 = np.dtype(np.float32)
    with _no_autocast():
        b = None if b_ih is None else _to_dtype(b_ih + b_hh, f32)
        gx = linear(_to_dtype(x, f32), _to_dtype(w_ih, f32), b)
        out, last = lstm_layer(gx, _to_dtype(h0, f32), _to_dtype(c0, f32), _to_dtype(w_hh, f32), reverse=reverse,
                               dtype=x._data.dtype)
    return out, _row_copy(last, 0), _row_copy(last, 1)


@contextlib.contextmanager
def _no_autocast():
    """ops below torch's autocast dispatch (a region's thread-local dtype cleared for the block)."""
    saved, autocast_state.dtype = autocast_state.dtype, None
    try:
        yield
    finally:
        autocast_state.dtype = saved


def _rounding(step, dtype):
    """An LSTM layer's forward step, then rounded to dtype in place as torch's oneDNN reduced-float layer keeps it
    (its workspace): h', c' and the gate activations, and tanh(c') of the rounded c' (h' itself is o tanh(c') of
    the float32 values)."""
    def rounded(gx, gh, c, acts, cy, tc, hy):
        step(gx, gh, c, acts, cy, tc, hy)
        hy[...] = hy.astype(dtype)
        cy[...] = cy.astype(dtype)
        acts[...] = acts.astype(dtype)
        np.tanh(cy, out=tc)
    return rounded


def _rounding_backward(step, dtype):
    """An LSTM layer's backward step, its gate pre-activations' adjoint then rounded to dtype (oneDNN's
    reduced-float layer; the state adjoints stay float32)."""
    def rounded(acts, tc, c_prev, g_h, dh, dc, d):
        step(acts, tc, c_prev, g_h, dh, dc, d)
        d[...] = d.astype(dtype)
    return rounded


class _LayerCtx(Ctx):
    """The sequence row's context, which the c_T row's reads too (tape.share_context). It keeps no reference to the
    sequence row's own value (the hidden states: its rule is given them as `out`, the c_T row's as its last input),
    which would make the tape see that row held for as long as the row lives, and never free it: an nn.LSTM called
    without backward (an evaluation loop without no_grad) kept every call's graph."""

    def free_saved(self):
        self.acts = self.cs = self.tcs = self.h0 = self.c0 = self.g_last = None


def _recurrent_weight(w_hh, T, B):
    """W_hh^T as a layer's recurrence multiplies by it each step: a C-contiguous copy where the steps amortize it
    (BLAS reads the transposed view about 2x slower for a batch of 20, 200 wide), else the view itself: for one
    row a step (batch 1, gemv either way) or a few steps, such as a decoder's one step a call, the copy costs more
    than the steps gain (384 x 128: a 20-35 us copy for a 3-4 us product)."""
    return np.ascontiguousarray(w_hh.T) if B > 1 and T * B >= 64 else w_hh.T


def _steps(T, reverse):
    """A layer's steps in the recurrence's order, and the step before each (the first has none)."""
    order = list(range(T - 1, -1, -1)) if reverse else list(range(T))
    return order, {t: order[k - 1] for k, t in enumerate(order) if k}


def _layer_grads(d_in, dh, d_rec, h_prev, inputs, wanted):
    """A GRU or RNN layer row's array gradients: its input projection's d_in, h0's dh, W_hh's from every step's
    recurrent adjoint d_rec (T, B, G) and h_{t-1} (T, B, H) in one BLAS call, and b_hh's."""
    T, B, G = d_rec.shape
    grads = [d_in if wanted[0] else None, dh if wanted[1] else None,
             d_rec.reshape(T * B, G).T @ h_prev.reshape(T * B, h_prev.shape[-1]) if wanted[2] else None]
    if len(inputs) > 3:
        grads.append(d_rec.sum(axis=(0, 1)) if wanted[3] else None)
    return tuple(grads)


def _layer_vjp_result(d_steps, x, dh, gw, w_hh, gb, b):
    """A GRU or RNN layer row's Tensor-op gradients (create_graph): the steps' input adjoints stacked, h0's, W_hh's
    and b_hh's sums, zeros where a layer of no steps has none."""
    res = (stack(d_steps, 0) if d_steps else _zeros(x), dh, gw if gw is not None else _zeros(w_hh))
    return res + ((gb if gb is not None else _zeros(b),) if b is not None else ())


def _lstm_layer_forward(ctx, gx, h0, c0, w_hh, b_hh=None):
    T, B, G = gx.shape
    H, dt = G // 4, gx.dtype
    gx = np.asanyarray(gx, order="C")
    acts = np.empty((T, B, G), dt)  # (not gx + b_hh written over: a kernel writing its input runs unvectorised)
    hs, cs, tcs = np.empty((T, B, H), dt), np.empty((T, B, H), dt), np.empty((T, B, H), dt)
    w_t = _recurrent_weight(w_hh, T, B)
    h, c = h0, np.asanyarray(c0, dt, order="C")
    rec = np.empty((B, G), dt)
    step = _kernels().lstm_forward if ctx.dtype is None else _rounding(_kernels().lstm_forward, ctx.dtype)
    for t in (range(T - 1, -1, -1) if ctx.reverse else range(T)):
        np.matmul(h, w_t, out=rec)
        if b_hh is not None:
            rec += b_hh
        step(gx[t], rec, c, acts[t], cs[t], tcs[t], hs[t])
        h, c = hs[t], cs[t]
    ctx.acts, ctx.cs, ctx.tcs = acts, cs, tcs
    ctx.h0, ctx.c0 = np.asanyarray(h0, dt), np.asanyarray(c0, dt)
    return hs if ctx.dtype is None else hs.astype(ctx.dtype)


def _lstm_layer_c_forward(ctx, *inputs):
    """c_T, computed by the sequence row's pass (which runs just before, in a replay too). A reduced-float layer's
    row is (h_T, c_T) stacked: oneDNN's h_T is an output of its own, whose adjoint enters the recurrence unrounded
    (added to the last step's in float32), not the output's last step's."""
    seq = ctx.seq_ctx
    last = 0 if ctx.reverse else -1
    c = seq.cs[last] if seq.cs.shape[0] else seq.c0
    if ctx.dtype is None:
        return c.copy()
    hs = inputs[-1]
    return np.stack([(hs[last] if hs.shape[0] else seq.h0).astype(ctx.dtype), c.astype(ctx.dtype)])


def _lstm_layer_backward(seq, hs, g_hs, g_c, inputs, wanted, g_h=None):
    """Both rows' array rule: the reverse recurrence from the output's adjoint g_hs or c_T's g_c (hs: the hidden
    states; g_h: h_T's adjoint, a reduced-float layer's)."""
    w_hh = inputs[3]
    acts, cs, tcs = seq.acts, seq.cs, seq.tcs
    if acts is None:  # (the other row's backward freed them: _LayerCtx)
        raise RuntimeError(FREED_MESSAGE)
    T, B, G = acts.shape
    H, dt = G // 4, acts.dtype
    step = _kernels().lstm_layer_step_backward
    if seq.dtype is not None:  # (hs: the row's value, the rounded hidden states)
        hs, step = hs.astype(dt), _rounding_backward(step, seq.dtype)
    d = np.empty_like(acts)
    dh = np.zeros((B, H), dt) if g_h is None else np.array(g_h, dt)
    dc = np.zeros((B, H), dt) if g_c is None else np.array(g_c, dt).reshape(B, H)
    zero = np.zeros((B, H), dt)
    g_hs = None if g_hs is None else np.ascontiguousarray(g_hs, dt)
    order, prev = _steps(T, seq.reverse)
    for t in reversed(order):
        c_prev = cs[prev[t]] if t in prev else seq.c0
        step(acts[t], tcs[t], c_prev, zero if g_hs is None else g_hs[t], dh, dc, d[t])
        np.matmul(d[t], w_hh, out=dh)
    grads = [d if wanted[0] else None, dh if wanted[1] else None, dc if wanted[2] else None, None]
    if wanted[3]:
        h_prev = np.empty_like(hs)  # h_{t-1} of every step, in time order
        for t in order:
            h_prev[t] = hs[prev[t]] if t in prev else seq.h0
        grads[3] = d.reshape(T * B, G).T @ h_prev.reshape(T * B, H)
    if len(inputs) > 4:
        grads.append(d.sum(axis=(0, 1)) if wanted[4] else None)
    return tuple(grads)


def _lstm_layer_arrays(ctx, g, inputs, out, wanted):
    if ctx.dtype is None:
        return _lstm_layer_backward(ctx, out, g, None, inputs, wanted)
    last, ctx.g_last = ctx.g_last, None  # ((h_T, c_T)'s adjoint, from its row's rule: _lstm_layer_c_arrays)
    if last is None:
        return _lstm_layer_backward(ctx, out, g, None, inputs, wanted)
    return _lstm_layer_backward(ctx, out, g, last[1], inputs, wanted, last[0])


def _lstm_layer_c_arrays(ctx, g, inputs, out, wanted):
    """(inputs: the sequence row's, then its output, the hidden states, which get no gradient from c_T.)
    A reduced-float layer runs one reverse recurrence for all adjoints, as torch's (its rounding of each step's
    adjoint makes two runs' sum differ): this row, whose rule runs first, leaves (h_T, c_T)'s adjoint to the
    sequence row's rule and gives the hidden states a zero adjoint, so that that rule runs."""
    seq = ctx.seq_ctx
    if seq.dtype is None:
        return _lstm_layer_backward(seq, inputs[-1], None, g, inputs[:-1], wanted[:-1]) + (None,)
    seq.g_last = np.array(g, np.float32)
    return (None,) * (len(inputs) - 1) + (np.zeros(inputs[-1].shape, inputs[-1].dtype),)


def _vjp_lstm_layer_rule(reverse, g_hs, g_c, inputs, dtype=None, g_h=None):
    """The same reverse recurrence in tapegrad ops, the forward recomputed from the inputs (create_graph); dtype: the
    one h and the carried c round to (their casts pass gradients through unchanged), g_h h_T's adjoint."""
    gx, h, c, w_hh = inputs[:4]
    b = inputs[4] if len(inputs) > 4 else None
    T = gx.shape[0]
    order = _steps(T, reverse)[0]
    saved = {}
    for t in order:
        a = gx[t] + h.mm(w_hh.t())
        if b is not None:
            a = a + b
        ai, af, ag, ao = a.chunk(4, -1)
        i, f, gg, o = ai.sigmoid(), af.sigmoid(), ag.tanh(), ao.sigmoid()
        c_prev, h_prev = c, h
        c = f * c + i * gg
        tc = c.tanh()
        h = o * tc
        if dtype is not None:
            h, c = _to_dtype(_to_dtype(h, dtype), h._data.dtype), _to_dtype(_to_dtype(c, dtype), c._data.dtype)
        saved[t] = (i, f, gg, o, c_prev, tc, h_prev)
    dh = _zeros(h) if g_h is None else g_h
    dc = _zeros(c) if g_c is None else g_c
    ds, gw = [None] * T, None
    for t in reversed(order):
        i, f, gg, o, c_prev, tc, h_prev = saved[t]
        if g_hs is not None:
            dh = dh + g_hs[t]
        dc = dc + dh * o * (1 - tc * tc)
        d = cat([dc * gg * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - gg * gg), dh * tc * o * (1 - o)], -1)
        ds[t] = d
        gw = d.t().mm(h_prev) if gw is None else gw + d.t().mm(h_prev)
        dc = dc * f
        dh = d.mm(w_hh)
    dgx = stack(ds, 0) if T else _zeros(gx)
    res = (dgx, dh, dc, gw if gw is not None else _zeros(w_hh))
    return res + ((dgx.sum((0, 1)),) if b is not None else ())


def _vjp_lstm_layer(ctx, g, inputs, out):
    return _vjp_lstm_layer_rule(ctx.reverse, g, None, inputs, ctx.dtype)


def _vjp_lstm_layer_c(ctx, g, inputs, out):
    if ctx.dtype is None:
        return _vjp_lstm_layer_rule(ctx.reverse, None, g, inputs[:-1]) + (None,)
    return _vjp_lstm_layer_rule(ctx.reverse, None, g[1], inputs[:-1], ctx.dtype, g[0]) + (None,)


# -- GRU --------------------------------------------------------------------------------------------------
def gru_cell_step(gi, gh, hx):
    """h' of one GRU step from gi = x W_ih^T + b_ih, gh = h W_hh^T + b_hh (each (..., 3H)) and h."""
    gi, gh, hx = _tensor(gi), _tensor(gh), _tensor(hx)
    _check_pair(gi, gh, 3)
    H = gi.shape[-1] // 3
    if hx.shape != gi.shape[:-1] + (H,):
        raise RuntimeError(f"expected a hidden state of shape {gi.shape[:-1] + (H,)}, got {tuple(hx.shape)}")
    if gi._data.dtype.char not in "fd":
        return _gru_cell_ops(gi, gh, hx)
    ctx = Ctx(H=H)
    return _record(OPS["gru_cell"], _gru_forward(ctx, gi._data, gh._data, hx._data), (gi, gh, hx), aux=ctx)


def _gru_cell_ops(gi, gh, hx):
    """torch's CPU GRU cell in float16 and bfloat16, composed of ops as _lstm_cell_ops (autocast's float32 h makes
    h' float32)."""
    (ir, iz, i_n), (hr, hz, hn) = gi.chunk(3, -1), gh.chunk(3, -1)
    r, z = (hr + ir).sigmoid(), (hz + iz).sigmoid()
    n = (i_n + hn * r).tanh()
    return (hx - n) * z + n


def _gru_forward(ctx, a, b, h):
    H, dt = ctx.H, a.dtype
    lead = a.shape[:-1]
    a2, b2 = np.asanyarray(a, order="C").reshape(-1, 3 * H), np.asanyarray(b, order="C").reshape(-1, 3 * H)
    h2 = np.asanyarray(h, dt, order="C").reshape(-1, H)
    rz, n, hy = np.empty((h2.shape[0], 2 * H), dt), np.empty_like(h2), np.empty_like(h2)
    _kernels().gru_forward(a2, b2, h2, rz, n, hy)
    ctx.rz, ctx.n = rz.reshape(lead + (2 * H,)), n.reshape(lead + (H,))
    return hy.reshape(lead + (H,))


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


# -- a whole GRU layer (one direction): one row for the output sequence --------------------------------------------
def gru_layer(gi, h0, w_hh, b_hh=None, reverse=False):
    """The output (T, B, H) of one direction of a GRU layer from every step's input projection
    gi = x W_ih^T + b_ih (T, B, 3H), the initial state h0 (B, H) and the recurrent weights: one row instead of two
    a step (its last step is h_T). The forward runs the recurrence over arrays (one BLAS call and one compiled
    pass a step); the backward runs it in reverse on arrays and gets W_hh's gradient as one BLAS call over all
    steps. torch's CPU GRU is composed of ops whose output is stacked: the row shows StackBackward0."""
    inputs = (gi, h0, w_hh) + (() if b_hh is None else (b_hh,))
    ctx = Ctx(reverse=bool(reverse))
    return _record(OPS["gru_layer"], _gru_layer_forward(ctx, *(t._data for t in inputs)), inputs, aux=ctx)


def _gru_layer_forward(ctx, gi, h0, w_hh, b_hh=None):
    T, B, G = gi.shape
    H, dt = G // 3, gi.dtype
    gi = np.asanyarray(gi, order="C")
    ghs = np.empty((T, B, G), dt)  # h W_hh^T + b_hh of every step (the backward reads its n part)
    rzs, ns, hs = np.empty((T, B, 2 * H), dt), np.empty((T, B, H), dt), np.empty((T, B, H), dt)
    w_t = _recurrent_weight(w_hh, T, B)
    h = np.asanyarray(h0, dt, order="C")
    step = _kernels().gru_forward
    for t in (range(T - 1, -1, -1) if ctx.reverse else range(T)):
        np.matmul(h, w_t, out=ghs[t])
        if b_hh is not None:
            ghs[t] += b_hh
        step(gi[t], ghs[t], h, rzs[t], ns[t], hs[t])
        h = hs[t]
    ctx.ghs, ctx.rzs, ctx.ns, ctx.hs, ctx.h0 = ghs, rzs, ns, hs, np.asanyarray(h0, dt)
    # The row's value is a copy: a context holding the row's own value made the tape see the row held for as long
    # as it lived, so an nn.GRU called without backward kept every call's graph; and torch's output is no tensor its
    # backward reads (a stack of the steps'), so writing it in place changes no gradient, as here.
    return hs.copy()


def _gru_layer_arrays(ctx, g, inputs, out, wanted):
    """The reverse recurrence from the output's adjoint g (T, B, H): the step rule of _gru_arrays (one compiled
    pass a step), the hidden state's adjoint carried back through z and h W_hh^T (one BLAS call a step)."""
    w_hh = inputs[2]
    ghs, rzs, ns, hs = ctx.ghs, ctx.rzs, ctx.ns, ctx.hs
    T, B, G = ghs.shape
    H, dt = G // 3, ghs.dtype
    g = np.ascontiguousarray(g, dt)
    order, prev = _steps(T, ctx.reverse)
    dgi, dgh = np.empty((T, B, G), dt), np.empty((T, B, G), dt)
    h_prev = np.empty((T, B, H), dt)  # h_{t-1} of every step, in time order
    dh, rec = np.zeros((B, H), dt), np.empty((B, H), dt)
    step = _kernels().gru_layer_step_backward
    for t in reversed(order):
        h_prev[t] = hs[prev[t]] if t in prev else ctx.h0
        step(rzs[t], ns[t], ghs[t], h_prev[t], g[t], dh, dgi[t], dgh[t])
        np.matmul(dgh[t], w_hh, out=rec)
        dh += rec
    return _layer_grads(dgi, dh, dgh, h_prev, inputs, wanted)


def _vjp_gru_layer(ctx, g, inputs, out):
    """The same reverse recurrence in tapegrad ops, the forward recomputed from the inputs (create_graph)."""
    gi, h, w_hh = inputs[:3]
    b = inputs[3] if len(inputs) > 3 else None
    T = gi.shape[0]
    order = _steps(T, ctx.reverse)[0]
    saved = {}
    for t in order:
        gh = h.mm(w_hh.t()) if b is None else h.mm(w_hh.t()) + b
        saved[t] = (gi[t], gh, h)
        (ir, iz, i_n), (hr, hz, hn) = gi[t].chunk(3, -1), gh.chunk(3, -1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (i_n + r * hn).tanh()
        h = n + z * (h - n)
    dh = _zeros(h)
    dgis, gw, gb = [None] * T, None, None
    for t in reversed(order):
        gi_t, gh, h_prev = saved[t]
        dgi, dgh, dh_direct = _vjp_gru(None, g[t] + dh, (gi_t, gh, h_prev), None)
        dgis[t] = dgi
        dh = dh_direct + dgh.mm(w_hh)
        gw = dgh.t().mm(h_prev) if gw is None else gw + dgh.t().mm(h_prev)
        gb = dgh.sum(0) if gb is None else gb + dgh.sum(0)
    return _layer_vjp_result(dgis, gi, dh, gw, w_hh, gb, b)


# -- a whole Elman RNN layer (tanh or relu, one direction): one row ---------------------------------------------
def rnn_layer(gx, h0, w_hh, b_hh=None, reverse=False, relu=False):
    """The output (T, B, H) of one direction of an nn.RNN layer from every step's input projection
    gx = x W_ih^T + b_ih (T, B, H), the initial state h0 (B, H) and the recurrent weights: one row instead of
    four a step (its last step is h_T). Both directions run the recurrence over arrays: the forward three NumPy
    calls a step (torch's order: tanh(gx + (h W_hh^T + b_hh))), the backward a few and W_hh's gradient one BLAS call
    over all steps. torch's CPU RNN stacks its steps' outputs: the row shows StackBackward0."""
    inputs = (gx, h0, w_hh) + (() if b_hh is None else (b_hh,))
    ctx = Ctx(reverse=bool(reverse), relu=bool(relu))
    return _record(OPS["rnn_layer"], _rnn_layer_forward(ctx, *(t._data for t in inputs)), inputs, aux=ctx)


def _rnn_layer_forward(ctx, gx, h0, w_hh, b_hh=None):
    T, B, H = gx.shape
    hs = np.empty((T, B, H), gx.dtype)
    w_t = _recurrent_weight(w_hh, T, B)
    rec = np.empty((B, H), gx.dtype)
    h = np.asanyarray(h0, gx.dtype)
    for t in (range(T - 1, -1, -1) if ctx.reverse else range(T)):
        np.matmul(h, w_t, out=rec)
        if b_hh is not None:
            rec += b_hh
        np.add(gx[t], rec, out=hs[t])
        if ctx.relu:
            np.maximum(hs[t], 0, out=hs[t])
        else:
            np.tanh(hs[t], out=hs[t])
        h = hs[t]
    ctx.hs, ctx.h0 = hs, np.asanyarray(h0, gx.dtype)
    return hs.copy()  # (a context holding the row's own value would keep the row alive: see _gru_layer_forward)


def _rnn_layer_arrays(ctx, g, inputs, out, wanted):
    """The reverse recurrence from the output's adjoint g (T, B, H): each step's pre-activation adjoint
    (tanh's g (1 - y^2), relu's g where y > 0, as those ops' rules), carried back through W_hh."""
    w_hh, hs = inputs[2], ctx.hs
    T, B, H = hs.shape
    g = np.ascontiguousarray(g, hs.dtype)
    order, prev = _steps(T, ctx.reverse)
    da, h_prev = np.empty_like(hs), np.empty_like(hs)  # h_{t-1} of every step, in time order
    dh = np.zeros((B, H), hs.dtype)
    for t in reversed(order):
        h_prev[t] = hs[prev[t]] if t in prev else ctx.h0
        d, y = g[t] + dh, hs[t]
        da[t] = np.where(y <= 0, 0 * d, d) if ctx.relu else d * (1 - y * y)
        dh = da[t] @ w_hh
    return _layer_grads(da, dh, da, h_prev, inputs, wanted)


def _vjp_rnn_layer(ctx, g, inputs, out):
    """The same reverse recurrence in tapegrad ops, the forward recomputed from the inputs (create_graph)."""
    gx, h, w_hh = inputs[:3]
    b = inputs[3] if len(inputs) > 3 else None
    T = gx.shape[0]
    order = _steps(T, ctx.reverse)[0]
    saved = {}
    for t in order:
        a = gx[t] + (h.mm(w_hh.t()) if b is None else h.mm(w_hh.t()) + b)
        y = a.relu() if ctx.relu else a.tanh()
        saved[t] = (h, y)
        h = y
    dh = _zeros(h)
    das, gw, gb = [None] * T, None, None
    for t in reversed(order):
        h_prev, y = saved[t]
        d = g[t] + dh
        da = _with_input(where(y <= 0, 0 * d, d), y) if ctx.relu else d * (1 - y * y)  # (relu's rule, as ops')
        das[t] = da
        dh = da.mm(w_hh)
        gw = da.t().mm(h_prev) if gw is None else gw + da.t().mm(h_prev)
        gb = da.sum(0) if gb is None else gb + da.sum(0)
    return _layer_vjp_result(das, gx, dh, gw, w_hh, gb, b)


# (tapegrad.compile's replay recomputes a row with its forward, refreshing the context its backward reads)
# The cells' fused rows show the grad_fn of the last op of torch's CPU cell (composed of ops there):
# c = f * c + i * g (AddBackward0), h = o * tanh(c) (MulBackward0), GRU's h = n + z * (h - n) (AddBackward0)
registry.python("lstm_cell_c", "AddBackward0", _lstm_c_forward, _vjp_lstm_c,
                array_vjp=_lstm_c_arrays, compiled_rule="lstm_c")
registry.python("lstm_cell_h", "MulBackward0", _lstm_h_forward, _vjp_lstm_h,
                array_vjp=_lstm_h_arrays, compiled_rule="lstm_h")
registry.python("lstm_layer", "MkldnnRnnLayerBackward0", _lstm_layer_forward, _vjp_lstm_layer,
                array_vjp=_lstm_layer_arrays)
registry.python("lstm_layer_c", "MkldnnRnnLayerBackward0", _lstm_layer_c_forward, _vjp_lstm_layer_c,
                array_vjp=_lstm_layer_c_arrays)
registry.python("gru_cell", "AddBackward0", _gru_forward, _vjp_gru,
                array_vjp=_gru_arrays)
registry.python("gru_layer", "StackBackward0", _gru_layer_forward, _vjp_gru_layer,
                array_vjp=_gru_layer_arrays)
registry.python("rnn_layer", "StackBackward0", _rnn_layer_forward, _vjp_rnn_layer,
                array_vjp=_rnn_layer_arrays)

__all__ = []  # internal: nn.LSTMCell / GRUCell / LSTM / GRU / RNN call the cell steps and the layers
