"""Recurrent layers: RNN, LSTM, GRU and their cells, with torch's parameter names (weight_ih_l0, ...,
_reverse), gate order (LSTM i, f, g, o; GRU r, z, n), init uniform(-1/sqrt(hidden), 1/sqrt(hidden)),
reprs, argument checks and error messages, so state_dicts load across.

A cell step is two linear rows (x W_ih^T + b_ih, h W_hh^T + b_hh) and the fused cell rows of ops/rnn.py; a
sequence layer projects every step's input in one linear row first; an LSTM layer (float32/float64, without
proj_size) then runs its whole recurrence as two rows (ops.rnn.lstm_layer: torch's MkldnnRnnLayerBackward0), a GRU
layer as one (ops.rnn.gru_layer), RNN step by step. float16 and bfloat16 layers go step by step through torch's
composite cells, except a bfloat16 LSTM layer (without proj_size), which torch runs in oneDNN
(ops.rnn.lstm_layer_reduced), and so does autocast, casting the layer's input, states and weights. A
PackedSequence input runs step t on the batch_sizes[t] sequences still going; an LSTM with proj_size projects
each h by weight_hr (one more row), step by step.
"""
import math
import numbers
import warnings

from ... import _dtype, creation, ops
from ...ops._common import _autocast_lower, autocast_state
from ...ops.rnn import gru_cell_step, gru_layer, lstm_cell_step, lstm_layer, lstm_layer_reduced, rnn_layer
from ...ops.shape import _row_copy, _transpose_as_in_place
from .. import functional as F, init
from ...tensor import Tensor
from ..parameter import Parameter
from .module import Module
from ..._warnings import user_stacklevel

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _step(mode, gx, h, c, w_hh, b_hh, w_hr=None):
    """One step from the projected input gx: (h', c') (c' None except for an LSTM; an LSTM with proj_size
    projects h' by w_hr)."""
    gh = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        h, c = lstm_cell_step(gx, gh, c)
        return (h if w_hr is None else F.linear(h, w_hr)), c
    if mode == "GRU":
        return gru_cell_step(gx, gh, h), None
    a = gx + gh
    return (ops.tanh(a) if mode == "RNN_TANH" else ops.relu(a)), None


def _onednn_reduced(x):
    """Whether torch's CPU LSTM runs input x in its oneDNN layer in a reduced float: bfloat16, or anything but float64
    under autocast, whose lower-precision list has mkldnn_rnn_layer (float16 without autocast runs composite)."""
    if autocast_state.dtype is not None:
        return x._data.dtype.char != "d"
    return _dtype.is_bfloat16(x._data.dtype)


class RNNBase(Module):
    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=user_stacklevel())
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        gate_size = _GATES[mode] * hidden_size
        num_directions = 2 if bidirectional else 1
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                shapes = [(gate_size, layer_input_size), (gate_size, real_hidden_size)]
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    shapes += [(gate_size,), (gate_size,)]
                if proj_size > 0:
                    names.append(f"weight_hr_l{layer}{suffix}")
                    shapes.append((proj_size, hidden_size))
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(creation.empty(shape, dtype=dtype, device=device)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        """torch packs the weights into one cuDNN buffer here; tapegrad keeps them as separate arrays, so
        there is nothing to pack."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward ----------------------------------------------------------------------------------------
    def _check_input(self, input, expected_dim=3):
        w = self._flat_weights[0]
        if input.dtype != w.dtype and autocast_state.dtype is None:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). "
                             f"Convert input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        if input.ndim != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.ndim}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")

    def _expected_hidden(self, batch, cell=False):
        size = self.proj_size if self.proj_size > 0 and not cell else self.hidden_size
        return ((2 if self.bidirectional else 1) * self.num_layers, batch, size)

    def _weights(self, k):
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of layer-direction k, None where absent."""
        names = self._all_weights[k]
        w = [getattr(self, n) for n in names]
        b_ih, b_hh = (w[2], w[3]) if self.bias else (None, None)
        return w[0], w[1], b_ih, b_hh, (w[-1] if self.proj_size > 0 else None)

    def _run(self, x, h0, c0):
        """x (T, B, I); h0, c0 (L * D, B, H): (output (T, B, D * H), h_n, c_n or None)."""
        lstm, D = self.mode == "LSTM", 2 if self.bidirectional else 1
        T = x.shape[0]
        hs, cs = [], []
        layer_input = x
        onednn = T and lstm and not self.proj_size and _onednn_reduced(x)
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                k = layer * D + d
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(k)
                h, c = h0[k], c0[k] if lstm else None  # (views: an in-place write to h0 is caught, as torch's)
                if onednn:  # torch's oneDNN layer in bfloat16 (under autocast its inputs cast, as there)
                    args = (layer_input, h, c, w_ih, w_hh, b_ih, b_hh)
                    out, h, c = lstm_layer_reduced(*(_autocast_lower(*args) if autocast_state.dtype else args),
                                                   reverse=bool(d))
                    outs.append(out)
                    hs.append(h)
                    cs.append(c)
                    continue
                gx_all = F.linear(layer_input, w_ih, b_ih)  # every step's input projection, one row
                if T and gx_all.dtype in (_dtype.float32, _dtype.float64) and (not lstm or w_hr is None):
                    # the whole recurrence: two rows for an LSTM, one otherwise (a proj_size LSTM goes step by step)
                    if lstm:
                        out, c = lstm_layer(gx_all, h, c, w_hh, b_hh, reverse=bool(d))
                    elif self.mode == "GRU":
                        out = gru_layer(gx_all, h, w_hh, b_hh, reverse=bool(d))
                    else:
                        out = rnn_layer(gx_all, h, w_hh, b_hh, reverse=bool(d), relu=self.mode == "RNN_RELU")
                    outs.append(out)
                    hs.append(_row_copy(out, 0 if d else T - 1))
                    cs.append(c)
                    continue
                steps = [None] * T
                for t in (range(T - 1, -1, -1) if d else range(T)):
                    h, c = _step(self.mode, gx_all[t], h, c, w_hh, b_hh, w_hr)
                    steps[t] = h
                outs.append(ops.stack(steps, 0) if T else creation.zeros((0,) + h.shape, dtype=x.dtype))
                hs.append(h)
                cs.append(c)
            layer_input = outs[0] if D == 1 else ops.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, ops.stack(hs, 0), (ops.stack(cs, 0) if lstm else None)

    def _run_packed(self, data, batch_sizes, h0, c0):
        """A packed batch: data (N, I), batch_sizes[t] sequences running at step t (longest first); h0, c0
        (L * D, B, H). Step t updates only the first batch_sizes[t] rows, so each sequence's final state is
        the one after its own last step (forward) or after step 0 (reverse, which starts each sequence at
        its own last step from h0). Returns (output data (N, D * H), h_n, c_n or None)."""
        lstm, D = self.mode == "LSTM", 2 if self.bidirectional else 1
        sizes = [int(b) for b in batch_sizes.tolist()]
        T, starts = len(sizes), [0]
        for b in sizes:
            starts.append(starts[-1] + b)
        hs, cs = [], []
        layer_input = data
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                k = layer * D + d
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(k)
                gx_all = F.linear(layer_input, w_ih, b_ih)  # every step's input projection, one row
                steps = [None] * T
                if d == 0:
                    h, c = h0[k], c0[k] if lstm else None
                    done_h, done_c = [], []  # rows whose sequences ended, last rows first
                    for t in range(T):
                        b = sizes[t]
                        if b < h.shape[0]:
                            done_h.append(h[b:])
                            h = h[:b]
                            if lstm:
                                done_c.append(c[b:])
                                c = c[:b]
                        h, c = _step(self.mode, gx_all[starts[t]:starts[t + 1]], h, c, w_hh, b_hh, w_hr)
                        steps[t] = h
                    h = ops.cat([h] + done_h[::-1], 0) if done_h else h
                    c = ops.cat([c] + done_c[::-1], 0) if done_c else c
                else:
                    h = h0[k][:sizes[-1]]
                    c = c0[k][:sizes[-1]] if lstm else None
                    for t in range(T - 1, -1, -1):
                        b, running = sizes[t], h.shape[0]
                        if b > running:  # sequences whose last step is t start here, from h0
                            h = ops.cat([h, h0[k][running:b]], 0)
                            c = ops.cat([c, c0[k][running:b]], 0) if lstm else None
                        h, c = _step(self.mode, gx_all[starts[t]:starts[t + 1]], h, c, w_hh, b_hh, w_hr)
                        steps[t] = h
                outs.append(ops.cat(steps, 0))
                hs.append(h)
                cs.append(c)
            layer_input = outs[0] if D == 1 else ops.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, ops.stack(hs, 0), (ops.stack(cs, 0) if lstm else None)

    def _forward_packed(self, packed, hx):
        """torch's PackedSequence path: the initial states are reordered by sorted_indices, the final ones
        back by unsorted_indices; the output is a PackedSequence with the input's batch_sizes and indices."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        lstm = self.mode == "LSTM"
        batch = int(batch_sizes[0])
        # torch checks RNN's and GRU's input and states here (LSTM's packed path checks none: a wrong state
        # shape there gives a broadcasting error or a crash; tapegrad gives its unpacked path's messages)
        self._check_input(data, expected_dim=2)
        expected = self._expected_hidden(batch)
        if hx is None:
            h0 = creation.zeros(expected, dtype=data.dtype)
            c0 = creation.zeros(self._expected_hidden(batch, cell=True), dtype=data.dtype) if lstm else None
        else:
            h0, c0 = hx if lstm else (hx, None)
            self._check_hidden(h0, expected, "Expected hidden[0] size" if lstm else "Expected hidden size")
            if lstm:
                self._check_hidden(c0, self._expected_hidden(batch, cell=True), "Expected hidden[1] size")
            if sorted_indices is not None:  # each state row belongs to the caller's sequence of that row
                h0 = h0.index_select(1, sorted_indices)
                c0 = c0.index_select(1, sorted_indices) if lstm else None
        out, h_n, c_n = self._run_packed(data, batch_sizes, h0, c0)
        if unsorted_indices is not None:
            h_n = h_n.index_select(1, unsorted_indices)
            c_n = c_n.index_select(1, unsorted_indices) if lstm else None
        return type(packed)(out, batch_sizes, sorted_indices, unsorted_indices), ((h_n, c_n) if lstm else h_n)

    @staticmethod
    def _check_hidden(h, expected, what):
        if tuple(h.shape) != expected:
            raise RuntimeError(f"{what} {expected}, got {list(h.shape)}")

    def _prepare(self, input, hx, name):
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D"
                             + (" tensor instead" if name == "RNN" else " instead"))
        batched = input.ndim == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        if self.batch_first:
            input = input.transpose(0, 1)
        return input, batched

    def _finish(self, out, batched):
        if not batched:
            return out.squeeze(1)
        if not self.batch_first:
            return out
        # (torch's RNN and GRU transpose their output in place, its LSTM out of place: the grad_fn's name differs)
        return out.transpose(0, 1) if self.mode == "LSTM" else _transpose_as_in_place(out, 0, 1)


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return self._single_state(input, hx, "RNN")

    def _single_state(self, input, hx, name):
        if hasattr(input, "batch_sizes"):
            return self._forward_packed(input, hx)
        x, batched = self._prepare(input, hx, name)
        if hx is not None:
            if batched and hx.ndim != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.ndim}-D tensor")
            if not batched:
                if hx.ndim != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.ndim}-D "
                                       f"tensor")
                hx = hx.unsqueeze(1)
        self._check_input(x)
        expected = self._expected_hidden(x.shape[1])
        if hx is None:
            hx = creation.zeros(expected, dtype=x.dtype)
        self._check_hidden(hx, expected, "Expected hidden size")
        out, h_n, _ = self._run(x, hx, None)
        out = self._finish(out, batched)
        return out, (h_n if batched else h_n.squeeze(1))


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        if hasattr(input, "batch_sizes"):
            return self._forward_packed(input, hx)
        x, batched = self._prepare(input, hx, "LSTM")
        if hx is not None:
            h0, c0 = hx[0], hx[1]  # (indexed, as torch's: a lone tensor given as hx fails as there)
            if batched and (h0.ndim != 3 or c0.ndim != 3):
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got ({h0.ndim}-D, "
                                   f"{c0.ndim}-D) tensors")
            if not batched:
                if h0.ndim != 2 or c0.ndim != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but got "
                                       f"({h0.ndim}-D, {c0.ndim}-D) tensors")
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        self._check_input(x)
        expected, cell = self._expected_hidden(x.shape[1]), self._expected_hidden(x.shape[1], cell=True)
        if hx is None:
            h0, c0 = creation.zeros(expected, dtype=x.dtype), creation.zeros(cell, dtype=x.dtype)
        else:
            self._check_hidden(h0, expected, "Expected hidden[0] size")
            self._check_hidden(c0, cell, "Expected hidden[1] size")
        out, h_n, c_n = self._run(x, h0, c0)
        out = self._finish(out, batched)
        if not batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return out, (h_n, c_n)


class GRU(RNN):
    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        RNNBase.__init__(self, "GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._single_state(input, hx, "GRU")


# -- cells --------------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(creation.empty((num_chunks * hidden_size, input_size), dtype=dtype, device=device))
        self.weight_hh = Parameter(creation.empty((num_chunks * hidden_size, hidden_size), dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(creation.empty(num_chunks * hidden_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(creation.empty(num_chunks * hidden_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += f", bias={self.bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, hx, name, states=1):
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        for h in (hx if states > 1 and hx is not None else (hx,)):
            if h is not None and h.ndim not in (1, 2):
                raise ValueError(f"{name}: Expected hx[0] to be 1D or 2D, got {h.ndim}D instead" if states > 1
                                 else f"{name}: Expected hidden to be 1D or 2D, got {h.ndim}D instead")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected {self.input_size}")
        return x, batched

    def _check_hidden(self, x, h, which):
        if h.shape[0] != x.shape[0]:
            raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{which} batch size "
                               f"{h.shape[0]}")
        if h.shape[1] != self.hidden_size:
            raise RuntimeError(f"hidden{which} has inconsistent hidden_size: got {h.shape[1]}, expected "
                               f"{self.hidden_size}")

    def _zeros(self, x):
        return creation.zeros((x.shape[0], self.hidden_size), dtype=x.dtype)

    def _is_batch(self, input, h):
        """Whether input is a (batch, input_size) tensor and h a (batch, hidden_size) one: the common call, which
        every check of _batched and _check_hidden passes (read from the arrays' shapes: no Size is built)."""
        if not (isinstance(input, Tensor) and isinstance(h, Tensor)):
            return False
        shape = input._data.shape
        return len(shape) == 2 and shape[1] == self.input_size and h._data.shape == (shape[0], self.hidden_size)


_RNN_CELL_MODES = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}


class RNNCell(RNNCellBase):
    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        mode = _RNN_CELL_MODES.get(self.nonlinearity) if type(self.nonlinearity) is str else None
        if mode is not None and self._is_batch(input, hx):  # (the common call: the checks below all pass)
            return _step(mode, F.linear(input, self.weight_ih, self.bias_ih), hx, None, self.weight_hh,
                         self.bias_hh)[0]
        x, batched = self._batched(input, hx, "RNNCell")
        h = self._zeros(x) if hx is None else hx if batched else hx.unsqueeze(0)
        self._check_hidden(x, h, 0)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        out, _ = _step(mode, F.linear(x, self.weight_ih, self.bias_ih), h, None, self.weight_hh, self.bias_hh)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, dtype=dtype)

    def forward(self, input, hx=None):
        if type(hx) is tuple and len(hx) == 2:  # the common call, a batch and its (h, c): no checks below can fail
            h, c = hx
            if self._is_batch(input, h) and isinstance(c, Tensor) and c._data.shape == h._data.shape:
                return _step("LSTM", F.linear(input, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                             self.bias_hh)
        x, batched = self._batched(input, hx, "LSTMCell", states=2)
        if hx is None:
            h = c = self._zeros(x)
        else:
            h, c = (hx[0], hx[1]) if batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        self._check_hidden(x, h, 0)
        self._check_hidden(x, c, 1)
        h, c = _step("LSTM", F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, dtype=dtype)

    def forward(self, input, hx=None):
        if self._is_batch(input, hx):  # (the common call: the checks below all pass)
            return _step("GRU", F.linear(input, self.weight_ih, self.bias_ih), hx, None, self.weight_hh,
                         self.bias_hh)[0]
        x, batched = self._batched(input, hx, "GRUCell")
        h = self._zeros(x) if hx is None else hx if batched else hx.unsqueeze(0)
        self._check_hidden(x, h, 0)
        out, _ = _step("GRU", F.linear(x, self.weight_ih, self.bias_ih), h, None, self.weight_hh, self.bias_hh)
        return out if batched else out.squeeze(0)
