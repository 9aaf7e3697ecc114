"""End-to-end training against torch, and torch.utils.data's Dataset / DataLoader API."""
import math
from collections import namedtuple

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import tapegrad as tg
import tapegrad.utils.data as tgd

LIBS = [tg, torch]


def _classifier(lib):
    return lib.nn.Sequential(
        lib.nn.Linear(10, 32), lib.nn.ReLU(),
        lib.nn.Linear(32, 32), lib.nn.GELU(),
        lib.nn.Linear(32, 4),
    )


def _dataset(lib, n=203):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, 10)).astype(np.float32)
    y = x[:, :4].argmax(1)
    return lib.utils.data.TensorDataset(lib.tensor(x), lib.tensor(y))


def _run(lib, make_opt, epochs=4, clip=None):
    """Seed, build, shuffle, train, schedule: everything drawn from the library's own generator."""
    lib.manual_seed(0)
    model = _classifier(lib)
    loader = lib.utils.data.DataLoader(_dataset(lib), batch_size=32, shuffle=True,
                                       generator=lib.Generator().manual_seed(1))
    opt = make_opt(lib, model)
    sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = lib.nn.CrossEntropyLoss()
    losses, norms = [], []
    init = [p.detach().numpy().copy() for p in model.parameters()]
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            if clip is not None:
                norms.append(lib.nn.utils.clip_grad_norm_(model.parameters(), clip).item())
            opt.step()
            losses.append(loss.item())
        sched.step()
    model.eval()
    with lib.no_grad():
        x, y = _dataset(lib).tensors
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    return np.array(losses), norms, init, accuracy


@pytest.mark.parametrize("make_opt, clip", [
    (lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, nesterov=True), None),
    (lambda lib, m: lib.optim.Adam(m.parameters(), lr=1e-2), 1.0),
    (lambda lib, m: lib.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.05), None),
], ids=["sgd-nesterov", "adam-clip", "adamw"])
def test_training_script_matches_torch_step_by_step(make_opt, clip):
    ours, norms_a, init_a, acc_a = _run(tg, make_opt, clip=clip)
    theirs, norms_b, init_b, acc_b = _run(torch, make_opt, clip=clip)
    for a, b in zip(init_a, init_b):
        assert np.array_equal(a, b)                    # the same seed gives the same initial weights
    assert len(ours) == len(theirs) == 4 * 7
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    np.testing.assert_allclose(norms_a, norms_b, rtol=1e-5)
    assert ours[-1] < 0.7 * ours[0] and acc_a > 0.75 and abs(acc_a - acc_b) <= 1 / 203 + 1e-9


def test_training_with_copied_weights_float64():
    """The same initial weights copied into both; float64 agrees to ~1e-12."""
    torch.manual_seed(3)
    ref = _classifier(torch).double()
    model = _classifier(tg).double()
    model.load_state_dict({k: tg.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 10))
    y = rng.integers(0, 4, 64)
    losses = {}
    for lib, m in ((tg, model), (torch, ref)):
        opt = lib.optim.Adam(m.parameters(), lr=1e-2, amsgrad=True)
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
        out = []
        for _ in range(10):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(m(lib.tensor(x)), lib.tensor(y), label_smoothing=0.1)
            loss.backward()
            opt.step()
            sched.step()
            out.append(loss.item())
        losses[lib.__name__] = out
    np.testing.assert_allclose(losses["tapegrad"], losses["torch"], rtol=1e-11)


def test_embedding_model_with_padding_trains_like_torch():
    def run(lib):
        lib.manual_seed(4)
        emb = lib.nn.Embedding(12, 6, padding_idx=0)
        head = lib.nn.Linear(6, 3)
        opt = lib.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.5, momentum=0.8)
        rng = np.random.default_rng(1)
        tokens = lib.tensor(rng.integers(0, 12, (8, 5)))
        labels = lib.tensor(rng.integers(0, 3, 8))
        out = []
        for _ in range(6):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(head(emb(tokens).mean(1)), labels)
            loss.backward()
            opt.step()
            out.append(loss.item())
        return out, emb.weight.detach().numpy()[0].copy()
    (a, pad_a), (b, pad_b) = run(tg), run(torch)
    np.testing.assert_allclose(a, b, rtol=1e-5)
    assert not pad_a.any() and not pad_b.any()


# -- utils.data --------------------------------------------------------------------------------------------
def _batches(loader):
    out = []
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            out.append([b.tolist() if hasattr(b, "tolist") else b for b in batch])
        else:
            out.append(batch.tolist())
    return out


@pytest.mark.parametrize("kwargs", [
    {}, {"batch_size": 4}, {"batch_size": 4, "drop_last": True}, {"batch_size": 5, "shuffle": True},
    {"batch_size": 3, "shuffle": True, "drop_last": True}, {"batch_size": 64, "shuffle": True},
    {"batch_size": None},
])
@pytest.mark.parametrize("with_generator", [False, True])
def test_dataloader_batches_match_torch(kwargs, with_generator):
    x = np.arange(22 * 3, dtype=np.float32).reshape(22, 3)
    y = np.arange(22) % 5
    got = {}
    for lib in LIBS:
        lib.manual_seed(9)
        extra = {"generator": lib.Generator().manual_seed(2)} if with_generator else {}
        loader = lib.utils.data.DataLoader(lib.utils.data.TensorDataset(lib.tensor(x), lib.tensor(y)), **kwargs,
                                           **extra)
        got[lib.__name__] = (len(loader), _batches(loader), _batches(loader), lib.rand(3).tolist())
    assert got["tapegrad"] == got["torch"]      # batches, the next epoch's order, and the global RNG after


def test_dataloader_collates_like_torch():
    Point = namedtuple("Point", "x y")

    class Samples:
        def __init__(self, lib):
            self.lib = lib

        def __len__(self):
            return 6

        def __getitem__(self, i):
            lib = self.lib
            return {"t": lib.full((2,), float(i)), "n": np.array([i, i + 1], np.int32), "f": i / 2, "i": i,
                    "s": f"s{i}", "nested": [lib.tensor(i), (i, 2.0)], "pt": Point(i, lib.tensor([i])),
                    "b": bool(i % 2), "np_scalar": np.float32(i)}

    def normalise(obj):
        if isinstance(obj, (tg.Tensor, torch.Tensor)):
            return ("tensor", repr(obj.dtype), obj.tolist())
        if isinstance(obj, dict):
            return {k: normalise(v) for k, v in obj.items()}
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return ("namedtuple", type(obj).__name__, [normalise(v) for v in obj])
        if isinstance(obj, (list, tuple)):
            return (type(obj).__name__, [normalise(v) for v in obj])
        return obj

    for kwargs in ({"batch_size": 4}, {"batch_size": None}):
        a = [normalise(b) for b in tgd.DataLoader(Samples(tg), **kwargs)]
        b = [normalise(b) for b in tud.DataLoader(Samples(torch), **kwargs)]
        assert a == b
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        tgd.default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        tgd.default_collate([[1, 2], [3]])


def test_dataloader_samplers_and_errors():
    ds = tgd.TensorDataset(tg.arange(10))
    sampler = tgd.SequentialSampler(ds)
    assert [b[0].tolist() for b in tgd.DataLoader(ds, batch_size=4, sampler=sampler)] == \
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    batch_sampler = tgd.BatchSampler(range(10), batch_size=3, drop_last=False)
    assert [b[0].tolist() for b in tgd.DataLoader(ds, batch_sampler=batch_sampler)][-1] == [9]
    batches = list(tgd.DataLoader(ds, batch_size=4, collate_fn=lambda s: [x[0].item() + 1 for x in s]))
    assert batches == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        tgd.DataLoader(ds, sampler=sampler, shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        tgd.DataLoader(ds, batch_sampler=batch_sampler, batch_size=2)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        tgd.DataLoader(ds, batch_size=0)
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        tgd.TensorDataset(tg.ones(3), tg.ones(4))
    g1, g2 = tg.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    assert list(tgd.RandomSampler(range(9), generator=g1)) == list(tud.RandomSampler(range(9), generator=g2))
    assert list(tgd.RandomSampler(range(5), replacement=True, num_samples=40, generator=g1)) == \
        list(tud.RandomSampler(range(5), replacement=True, num_samples=40, generator=g2))
    assert list(tgd.SubsetRandomSampler([3, 5, 7, 9], generator=g1)) == \
        list(tud.SubsetRandomSampler([3, 5, 7, 9], generator=g2))


def test_random_split_subset_concat_and_iterable():
    a = tgd.random_split(range(10), [3, 7], generator=tg.Generator().manual_seed(1))
    b = tud.random_split(range(10), [3, 7], generator=torch.Generator().manual_seed(1))
    assert [list(s) for s in a] == [list(s) for s in b]
    a = tgd.random_split(range(10), [0.5, 0.3, 0.2], generator=tg.Generator().manual_seed(2))
    b = tud.random_split(range(10), [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(2))
    assert [list(s) for s in a] == [list(s) for s in b]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        tgd.random_split(range(10), [3, 3])
    concat = tgd.TensorDataset(tg.arange(3)) + tgd.TensorDataset(tg.arange(10, 12))
    assert len(concat) == 5 and concat[3][0].item() == 10 and concat[-1][0].item() == 11
    assert tgd.Subset(concat, [4, 0])[0][0].item() == 11

    class Stream(tgd.IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in tgd.DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in tgd.DataLoader(Stream(), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="IterableDataset"):
        tgd.DataLoader(Stream(), shuffle=True)


def test_stack_and_chain_datasets_as_torch():
    def build(lib, data):
        class Stream(data.IterableDataset):
            def __init__(self, lo, hi):
                self.lo, self.hi = lo, hi

            def __iter__(self):
                return iter(range(self.lo, self.hi))

            def __len__(self):
                return self.hi - self.lo
        x, y = lib.arange(6).float().reshape(3, 2), lib.arange(3)
        stack = data.StackDataset(data.TensorDataset(x), y)
        named = data.StackDataset(image=x, label=y)
        chain = data.ChainDataset([Stream(0, 3), Stream(10, 12)])
        added = Stream(0, 2) + Stream(5, 6)  # IterableDataset + IterableDataset: a ChainDataset
        batches = [sorted((k, v.tolist()) for k, v in b.items()) for b in data.DataLoader(named, batch_size=2)]
        return (len(stack), [(a[0].tolist(), b.item()) for a, b in stack], len(named), named[1]["label"].item(),
                list(chain), len(chain), type(added).__name__, list(added), batches)
    assert build(tg, tgd) == build(torch, tud)
    for args, kwargs in (((), {}), ((tg.arange(2),), {"b": tg.arange(2)}), ((tg.arange(2), tg.arange(3)), {})):
        got = []
        for lib, data in ((tg, tgd), (torch, tud)):
            conv = [lib.arange(len(a)) for a in args]
            with pytest.raises(ValueError) as e:
                data.StackDataset(*conv, **{k: lib.arange(len(v)) for k, v in kwargs.items()})
            got.append(str(e.value))
        assert got[0] == got[1]
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(tgd.ChainDataset([tgd.TensorDataset(tg.arange(2))]))


def test_tensor_dataset_fast_path_returns_fresh_tensors():
    x = tg.arange(12).float().reshape(6, 2)
    loader = tgd.DataLoader(tgd.TensorDataset(x, tg.arange(6)), batch_size=4)
    xb, yb = next(iter(loader))
    assert xb.shape == (4, 2) and yb.dtype is tg.int64 and xb.numpy().flags.c_contiguous
    xb.add_(100)
    assert x[0].tolist() == [0.0, 1.0]
    assert len(loader) == math.ceil(6 / 4)


def test_subset_sampler_without_generator_and_collating_unequal_or_mixed_tensors_are_torchs():
    """SubsetRandomSampler without a generator permutes with the default generator itself (only RandomSampler
    seeds a fresh one); default_collate stacks as torch.stack does: its dtype promotion, and its RuntimeError for
    tensors of unequal sizes (variable-length sequences without a collate_fn), arrays and dicts of them too."""
    def program(L, data):
        out = []
        L.manual_seed(0)
        out.append(list(data.SubsetRandomSampler([0, 2, 4, 6, 8])))
        out.append(str(data.default_collate([L.zeros(2), L.zeros(2, dtype=L.int64)]).dtype))
        out.append(str(data.default_collate([np.zeros(2, np.float32), np.zeros(2, np.int64)]).dtype))
        for batch in ([L.zeros(2), L.zeros(3)], [np.zeros(2), np.zeros(3)], [{"a": L.zeros(2)}, {"a": L.zeros(3)}]):
            with pytest.raises(RuntimeError) as e:
                data.default_collate(batch)
            out.append(str(e.value))
        return out
    assert program(tg, tgd) == program(torch, tud)


def test_more_workers_than_cpus_warns_as_torch():
    import os
    import warnings
    n = len(os.sched_getaffinity(0)) + 3 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) + 3
    seen = []
    for L, data in ((torch, tud), (tg, tgd)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            data.DataLoader(data.TensorDataset(L.zeros(8, 2)), batch_size=2, num_workers=n)
            data.DataLoader(data.TensorDataset(L.zeros(8, 2)), batch_size=2, num_workers=1)
        seen.append([str(x.message) for x in w])
    assert seen[1] == seen[0] and len(seen[0]) == 1
