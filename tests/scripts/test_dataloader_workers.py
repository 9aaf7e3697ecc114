"""DataLoader(num_workers > 0): worker processes as torch runs them, giving torch's batches for the same
seed, including what the dataset draws inside the workers (each worker's seeds), worker_init_fn,
get_worker_info, prefetch_factor, persistent_workers and errors raised in a worker."""
import random
import warnings

import numpy as np
import pytest
import torch

import tapegrad


class Noisy:
    """A map-style dataset that draws from the library's generator, NumPy's and Python's in each item."""

    def __init__(self, lib, n=10):
        self.lib, self.n = lib, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = self.lib.utils.data.get_worker_info()
        wid = -1 if info is None else info.id
        return (self.lib.tensor([float(i)]) + self.lib.rand(1), float(np.random.rand()), random.random(), wid)


class Shards:
    """The canonical IterableDataset: each worker yields its share, via get_worker_info()."""

    def __init__(self, lib, n=11):
        self.lib, self.n = lib, n

    def __iter__(self):
        info = self.lib.utils.data.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter([self.lib.tensor(i) for i in range(start, self.n, step)])


def as_lists(batches):
    out = []
    for b in batches:
        out.append([x.tolist() if hasattr(x, "tolist") else x for x in b] if isinstance(b, (list, tuple))
                   else b.tolist())
    return out


def loader(lib, dataset, **kw):
    lib.manual_seed(0)
    base = (lib.utils.data.IterableDataset,) if dataset is Shards else (lib.utils.data.Dataset,)
    ds = type(dataset.__name__, (dataset, *base), {})(lib)
    return lib.utils.data.DataLoader(ds, **kw)


@pytest.mark.parametrize("kw", [
    dict(batch_size=3, num_workers=2), dict(batch_size=3, shuffle=True, num_workers=2),
    dict(batch_size=2, shuffle=True, num_workers=3, prefetch_factor=1), dict(batch_size=None, num_workers=2),
    dict(batch_size=4, shuffle=True, num_workers=2, drop_last=True)])
def test_map_dataset_batches_match_torch(kw):
    got = as_lists(loader(tapegrad, Noisy, **kw))
    want = as_lists(loader(torch, Noisy, **kw))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g[0], w[0], rtol=1e-6)  # tensor + torch.rand in the worker
        assert g[1:] == w[1:]  # NumPy's and Python's draws in the worker, and which worker made the batch


def test_generator_decides_the_worker_seeds():
    def seeds(lib):
        g = lib.Generator().manual_seed(123)
        dl = loader(lib, Noisy, batch_size=5, num_workers=2, generator=g,
                    worker_init_fn=lambda wid: None)
        out = as_lists(dl)
        return [row[2] for row in out], [row[0] for row in out]
    (a, ta), (b, tb) = seeds(tapegrad), seeds(torch)
    assert a == b
    np.testing.assert_allclose(ta, tb, rtol=1e-6)


@pytest.mark.parametrize("kw", [dict(batch_size=2, num_workers=2), dict(batch_size=None, num_workers=3),
                                dict(batch_size=3, num_workers=2, drop_last=True)])
def test_iterable_dataset_batches_match_torch(kw):
    assert as_lists(loader(tapegrad, Shards, **kw)) == as_lists(loader(torch, Shards, **kw))


def test_persistent_workers_across_epochs_match_torch():
    def epochs(lib):
        dl = loader(lib, Noisy, batch_size=4, shuffle=True, num_workers=2, persistent_workers=True)
        out = [as_lists(dl) for _ in range(3)]
        it = dl._iterator
        return out, it
    (got, it), (want, _) = epochs(tapegrad), epochs(torch)
    for ge, we in zip(got, want):
        for g, w in zip(ge, we):
            np.testing.assert_allclose(g[0], w[0], rtol=1e-6)
            assert g[1:] == w[1:]
    assert all(w.is_alive() for w in it.workers)
    it.shutdown()
    assert not any(w.is_alive() for w in it.workers)


def test_persistent_iterable_restarts_each_epoch():
    def epochs(lib):
        dl = loader(lib, Shards, batch_size=2, num_workers=2, persistent_workers=True)
        return [as_lists(dl) for _ in range(2)]
    assert epochs(tapegrad) == epochs(torch)


def test_worker_init_fn_and_info(tmp_path):
    def record(lib):
        folder = tmp_path / lib.__name__
        folder.mkdir()

        def init(wid):
            info = lib.utils.data.get_worker_info()
            (folder / str(wid)).write_text(f"{info.id} {info.num_workers} {info.seed}")
        list(loader(lib, Noisy, batch_size=2, num_workers=3, worker_init_fn=init))
        return sorted(p.read_text() for p in folder.iterdir())
    assert record(tapegrad) == record(torch)
    assert tapegrad.utils.data.get_worker_info() is None


class Faulty:
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 4:
            raise ValueError("bad sample 4")
        return i


def test_worker_error_is_reraised_as_torch():
    def first_error(lib):
        dl = lib.utils.data.DataLoader(Faulty(), batch_size=2, num_workers=2)
        got = []
        try:
            for b in dl:
                got.append(b.tolist())
        except ValueError as e:
            return got, str(e).split("\n")[:2]
    assert first_error(tapegrad) == first_error(torch)


class MissingKey:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return {"a": 1}["label"]


def test_worker_key_error_prints_its_traceback_as_lines_as_torch():
    """torch wraps a worker's KeyError message (KeyErrorMessage) so that its traceback prints as lines, not as the
    repr of one string (a missing key in __getitem__ is a common dataset bug)."""
    def caught(lib):
        try:
            next(iter(lib.utils.data.DataLoader(MissingKey(), num_workers=1)))
        except KeyError as e:
            text = str(e)
            return text.splitlines()[0], "\\n" in text, text.strip().splitlines()[-1], repr(e.args[0])[:9]
    assert caught(tapegrad) == caught(torch)


@pytest.mark.parametrize("kw", [dict(num_workers=0, prefetch_factor=2), dict(num_workers=0, persistent_workers=True),
                                dict(num_workers=-1), dict(num_workers=1, prefetch_factor=-1)])
def test_bad_options_as_torch(kw):
    def err(lib):
        try:
            lib.utils.data.DataLoader(list(range(4)), **kw)
        except ValueError as e:
            return str(e)
    assert err(tapegrad) == err(torch) is not None


def test_pin_memory_warns_as_torch_without_an_accelerator():
    def caught(lib):
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = [b.tolist() for b in lib.utils.data.DataLoader(list(range(4)), batch_size=2, pin_memory=True)]
        return out, [str(x.message) for x in w if "pin_memory" in str(x.message)]
    assert caught(tapegrad) == caught(torch)


class Gated:
    """Items 0..n-1; fetching item 0 waits until the test creates `gate`: the batch holding it is held back."""

    def __init__(self, gate, n=20):
        self.gate, self.n = gate, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == 0:
            import os
            import time
            deadline = time.monotonic() + 60
            while not os.path.exists(self.gate):
                if time.monotonic() > deadline:
                    raise RuntimeError("the test never opened the gate")
                time.sleep(0.01)
        return i


@pytest.mark.parametrize("kw", [dict(batch_size=2, num_workers=2), dict(batch_size=3, num_workers=3, prefetch_factor=1),
                                dict(batch_size=2, shuffle=True, num_workers=2, drop_last=True)])
def test_out_of_order_delivers_every_batch_once_as_torch(kw, tmp_path):
    """in_order=False: a batch held up in its worker does not hold back the others (torch 2.13); every batch
    of the sampler's still comes exactly once. Which comes when after that is timing: compared as sets."""
    def run(lib):
        gate = tmp_path / f"gate_{lib.__name__}"
        lib.manual_seed(0)
        dl = lib.utils.data.DataLoader(Gated(str(gate)), in_order=False, **kw)
        it = iter(dl)
        first = next(it).tolist()  # item 0's batch is still waiting for the gate: this is another one
        gate.touch()
        return first, [first] + [b.tolist() for b in it]

    (first, got), (want_first, want) = run(tapegrad), run(torch)
    in_order = [b.tolist() for b in loader_in_order(kw)]
    assert sorted(got) == sorted(want) == sorted(in_order) and len(got) == len(in_order)
    if not kw.get("shuffle"):  # item 0's batch is the first sent: the first to come is another worker's first
        others = in_order[1:kw["num_workers"]]
        assert first in others and want_first in others
        assert got != in_order


def loader_in_order(kw):
    tapegrad.manual_seed(0)
    return tapegrad.utils.data.DataLoader(list(range(20)), **kw)


class ThreeLong(torch.utils.data.IterableDataset):
    def __iter__(self):
        return iter(range(3))

    def __len__(self):
        return 3


@pytest.mark.parametrize("num_workers", [0, 2])
def test_iterable_dataset_past_its_length_warns_as_torch(num_workers):
    """An IterableDataset whose replicas in the workers are not split yields more batches than the len() reported:
    torch warns at each one past it (the warning that tells users their workers duplicate samples)."""
    import re

    def run(lib):
        dataset = type("ThreeLong", (lib.utils.data.IterableDataset,), dict(ThreeLong.__dict__))()
        dl = lib.utils.data.DataLoader(dataset, batch_size=1, num_workers=num_workers)
        n = len(dl)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batches = list(dl)
        return n, len(batches), [(re.sub(" at 0x[0-9a-f]+", "", str(w.message)), w.filename) for w in caught]
    ours, theirs = run(tapegrad), run(torch)
    assert ours == theirs and len(ours[2]) == (3 if num_workers else 0)
