"""iter(DataLoader) against torch: torch's iterator objects (_SingleProcessDataLoaderIter and
_MultiProcessingDataLoaderIter, both _BaseDataLoaderIter from torch.utils.data.dataloader) with len(),
_num_yielded and StopIteration after the end, made at the same points of the random streams as torch's."""
import importlib
import pickle

import pytest
import torch

import tapegrad


def _dl_module(lib):
    return importlib.import_module(lib.__name__ + ".utils.data.dataloader")


class Items:
    """A map-style dataset of 10 floats."""

    def __init__(self, lib):
        self.lib = lib

    def __len__(self):
        return 10

    def __getitem__(self, i):
        return self.lib.tensor(float(i))


class Stream:
    """An IterableDataset of 7 items that reports a length of 3 (len(loader) is then 3, or 2 batches of 2)."""

    def __iter__(self):
        return iter(range(7))

    def __len__(self):
        return 3


class DrawingStream:
    """An IterableDataset whose __iter__ draws its items at once: torch calls it when iter(loader) makes the
    iterator, not at the first batch."""

    def __iter__(self):
        return iter(self.lib.rand(5).tolist())


class EagerSampler:
    """A sampler whose __iter__ draws its permutation at once (not a generator): torch calls it before it draws
    the loader's base seed."""

    def __init__(self, lib):
        self.lib = lib

    def __iter__(self):
        return iter(self.lib.randperm(10).tolist())

    def __len__(self):
        return 10


def _dataset(lib, kind):
    if kind == "tensors":
        return lib.utils.data.TensorDataset(lib.arange(10.0), lib.arange(10))
    if kind == "stream":
        return type("Stream", (Stream, lib.utils.data.IterableDataset), {})()
    if kind == "drawing stream":
        return type("DrawingStream", (DrawingStream, lib.utils.data.IterableDataset), {"lib": lib})()
    return Items(lib)


def _plain(batch):
    if isinstance(batch, (list, tuple)):
        return [_plain(b) for b in batch]
    return batch.tolist() if hasattr(batch, "tolist") else batch


CASES = [
    ("items", dict(batch_size=3)), ("items", dict(batch_size=3, drop_last=True)), ("items", dict(batch_size=None)),
    ("items", dict(batch_size=4, shuffle=True)), ("tensors", dict(batch_size=3)),
    ("tensors", dict(batch_size=4, shuffle=True, drop_last=True)), ("items", dict(batch_size=2, sampler="eager")),
    ("items", dict(batch_size=3, num_workers=2)), ("tensors", dict(batch_size=4, shuffle=True, num_workers=2)),
    ("stream", dict(batch_size=2)), ("stream", dict(batch_size=None)), ("stream", dict(batch_size=2, num_workers=2)),
    ("drawing stream", dict(batch_size=2)),
]


def _walk(lib, kind, kw):
    """Everything observable of one pass: the iterator's type and len, _num_yielded after each batch, the
    batches, the default generator's draws between them, and what next() does at the end."""
    kw = dict(kw)
    if kw.get("sampler") == "eager":
        kw["sampler"] = EagerSampler(lib)
    lib.manual_seed(0)
    dl = lib.utils.data.DataLoader(_dataset(lib, kind), **kw)
    it = iter(dl)
    mod = _dl_module(lib)
    want_type = mod._MultiProcessingDataLoaderIter if kw.get("num_workers") else mod._SingleProcessDataLoaderIter
    out = [type(it).__name__, isinstance(it, mod._BaseDataLoaderIter), isinstance(it, want_type), iter(it) is it,
           it._num_yielded, lib.rand(2).tolist()]
    try:
        out.append(len(it))
    except TypeError as e:
        out.append(str(e))
    for batch in it:
        out.append((_plain(batch), it._num_yielded))
    for _ in range(2):
        try:
            next(it)
            out.append("no StopIteration")
        except StopIteration:
            out.append("StopIteration")
    out.append(lib.rand(2).tolist())
    return out


@pytest.mark.filterwarnings("ignore:Length of IterableDataset")
@pytest.mark.parametrize("kind,kw", CASES, ids=[f"{k}-{kw}" for k, kw in CASES])
def test_iterator_walk_matches_torch(kind, kw):
    assert _walk(tapegrad, kind, kw) == _walk(torch, kind, kw)


def test_persistent_workers_iterator_is_reset_each_epoch_as_torch():
    def run(lib):
        lib.manual_seed(0)
        dl = lib.utils.data.DataLoader(Items(lib), batch_size=4, shuffle=True, num_workers=2, persistent_workers=True)
        seen, first = [], None
        for _ in range(2):
            it = iter(dl)
            first = it if first is None else first
            seen.append((it is first, type(it).__name__, len(it), it._num_yielded,
                         [(_plain(b), it._num_yielded) for b in it]))
        first._shutdown_workers()
        return seen
    assert run(tapegrad) == run(torch)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_loader_sampler_attributes_as_torch(num_workers):
    def run(lib):
        dl = lib.utils.data.DataLoader(_dataset(lib, "stream"), batch_size=2, num_workers=num_workers)
        it = iter(dl)
        names = type(dl.sampler).__name__, type(dl.batch_sampler).__name__, dl._index_sampler is it._index_sampler
        return names, [_plain(b) for b in it]
    assert run(tapegrad) == run(torch)


def test_errors_as_torch():
    def errors(lib):
        out = []
        try:
            iter(lib.utils.data.DataLoader(Items(lib), timeout=2))
        except AssertionError as e:
            out.append(str(e))
        try:
            pickle.dumps(iter(lib.utils.data.DataLoader(Items(lib))))
        except NotImplementedError as e:
            out.append(e.args)
        return out
    got, want = errors(tapegrad), errors(torch)
    assert got == want and len(want) == 2
