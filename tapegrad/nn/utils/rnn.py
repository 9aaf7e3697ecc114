"""torch.nn.utils.rnn: pad_sequence, and PackedSequence with pack_padded_sequence / pad_packed_sequence /
pack_sequence. A packed batch's data is one gather of the padded rows (time-major, longest first), so
gradients flow back through it; RNN/LSTM/GRU take a PackedSequence and return one (nn/modules/rnn.py)."""
from collections import namedtuple

import numpy as np

from ... import _dtype, creation, ops
from ...tape import _local as _tape_local
from ...tensor import Tensor
from ...ops.sort import torch_order

__all__ = ["PackedSequence", "pad_sequence", "unpad_sequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpack_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    rest, dt = tuple(sequences[0].shape[1:]), sequences[0].dtype
    rows = []
    for s in sequences:
        if tuple(s.shape[1:]) != rest:
            raise RuntimeError(f"The size of tensor a ({rest[0] if rest else 0}) must match the size of tensor b "
                               f"({s.shape[1] if s.ndim > 1 else 0}) at non-singleton dimension 1")
        n = longest - s.shape[0]
        if n:
            pad = creation.full((n,) + rest, padding_value, dtype=dt)
            s = ops.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    return ops.stack(rows, 0 if batch_first else 1)


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """Sequences of different lengths, time-major: data holds the batch_sizes[t] running sequences of step t
    (longest first), one step after another."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    # torch's conversions: of `data`, and of the index tensors to data's device (batch_sizes stays as it is)
    def pin_memory(self):
        return type(self)(self.data.pin_memory(), self.batch_sizes, _bind(self.sorted_indices, Tensor.pin_memory),
                          _bind(self.unsorted_indices, Tensor.pin_memory))

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = lambda t: t.to(data.device)  # noqa: E731
        return type(self)(data, self.batch_sizes, _bind(self.sorted_indices, move), _bind(self.unsorted_indices, move))

    def cuda(self, *args, **kwargs):
        return self.to(*args, **{"device": "cuda", **kwargs}) if not args else self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to(*args, **{"device": "cpu", **kwargs}) if not args else self.to(*args, **kwargs)

    def double(self):
        return self.to(dtype=_dtype.float64)

    def float(self):
        return self.to(dtype=_dtype.float32)

    def half(self):
        return self.to(dtype=_dtype.float16)

    def long(self):
        return self.to(dtype=_dtype.int64)

    def int(self):
        return self.to(dtype=_dtype.int32)

    def short(self):
        return self.to(dtype=_dtype.int16)

    def char(self):
        return self.to(dtype=_dtype.int8)

    def byte(self):
        return self.to(dtype=_dtype.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def _bind(optional, fn):
    return None if optional is None else fn(optional)


def _values(t):
    """An index tensor's values; while tapegrad.compile traces, each read is a guard (a replay whose lengths or
    order differ traces again: the packed layout depends on them)."""
    if _tape_local.tracing is not None:
        return np.asarray([int(v) for v in t.reshape(-1).tolist()], np.int64).reshape(t.shape)
    return t.numpy()


def _invert(perm):
    p = _values(perm) if isinstance(perm, Tensor) else np.asarray(perm)
    out = np.empty_like(p)
    out[p] = np.arange(len(p))
    return creation.tensor(out)


def _lengths(lengths):
    a = _values(lengths) if isinstance(lengths, Tensor) else np.asarray(lengths)
    return a.astype(np.int64).reshape(-1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    lens = _lengths(lengths)
    x = input.transpose(0, 1) if batch_first else input
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        order = None
    else:
        order = torch_order(lens, 0, True)  # (torch.sort(lengths, descending=True): its order of equal lengths)
        lens = lens[order]
        x = x.index_select(1, creation.tensor(order))
    if len(lens) and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if len(lens) and lens[0] > x.shape[0]:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to {lens[0]}, but got "
                           f"{x.shape[0]}")  # (torch's check, on the longest length)
    T = int(lens[0]) if len(lens) else 0
    batch_sizes = np.array([(lens > t).sum() for t in range(T)], np.int64)
    t_idx = np.concatenate([np.full(b, t) for t, b in enumerate(batch_sizes)]) if T else np.zeros(0, np.int64)
    b_idx = np.concatenate([np.arange(b) for b in batch_sizes]) if T else np.zeros(0, np.int64)
    data = x[creation.tensor(t_idx), creation.tensor(b_idx)]
    sorted_indices = None if order is None else creation.tensor(order)
    return PackedSequence(data, creation.tensor(batch_sizes), sorted_indices,
                          None if order is None else _invert(order))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    data, batch_sizes = sequence.data, _lengths(sequence.batch_sizes)
    T, B = len(batch_sizes), int(batch_sizes[0]) if len(batch_sizes) else 0
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {T}")
        T = total_length
    lens = np.array([(batch_sizes > b).sum() for b in range(B)], np.int64)
    rest = tuple(data.shape[1:])
    # each padded cell's row in data, or the padding row appended at the end
    where = np.full((T, B), data.shape[0], np.int64)
    offset = 0
    for t, b in enumerate(batch_sizes):
        where[t, :b] = np.arange(offset, offset + b)
        offset += b
    pad = creation.full((1,) + rest, padding_value, dtype=data.dtype)
    padded = ops.cat([data, pad], 0)[creation.tensor(where)]
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lens = lens[_lengths(sequence.unsorted_indices)]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, creation.tensor(lens)


def pack_sequence(sequences, enforce_sorted=True):
    lengths = creation.tensor([s.shape[0] for s in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences of a padded batch, each cut to its length (torch's: it transposes a time-major batch in place)."""
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    idx = creation.arange(padded_sequences.shape[1])
    if len(padded_sequences) != len(lengths):
        raise ValueError(f"zip() argument 2 is {'shorter' if len(lengths) < len(padded_sequences) else 'longer'} "
                         "than argument 1")
    return [seq[idx < length] for seq, length in zip(padded_sequences, lengths)]


def unpack_sequence(packed_sequences):
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
