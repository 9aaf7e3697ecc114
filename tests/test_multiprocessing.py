"""torch.multiprocessing: tensors moved into shared memory keep their identity and are written through by the
processes that receive them (Hogwild training), spawn's errors, against torch where torch answers."""
import multiprocessing
import pickle

import numpy as np
import pytest
import torch

import tapegrad as tg
import tapegrad.multiprocessing as tmp


def _add_rank(rank, t):
    t[rank] += rank + 1  # (an in-place write into the parent's tensor)


def _hogwild(rank, model, steps):
    tg.manual_seed(rank)
    opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    for _ in range(steps):
        opt.zero_grad()
        x = tg.randn(8, 4)
        tg.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True)).backward()
        opt.step()


def _raise(rank):
    if rank == 1:
        raise ValueError("rank one fails")


def _exit(rank):
    raise SystemExit(3)


def test_share_memory_keeps_the_tensor_and_its_values():
    for lib in (torch, tg):
        t = lib.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
        assert not t.is_shared()
        assert t.share_memory_() is t and t.is_shared()
        assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        assert pickle.loads(pickle.dumps(t)).tolist() == t.tolist()  # (plain pickle: by value)
        m = lib.nn.Linear(3, 2)
        w = m.weight
        assert m.share_memory() is m and m.weight is w and w.is_shared() and m.bias.is_shared()
    with pytest.raises(NotImplementedError, match="share_memory_ of a view"):
        tg.arange(6.0).reshape(2, 3).share_memory_()


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_processes_write_into_a_shared_tensor(method):
    t = tg.zeros(3).share_memory_()
    tmp.spawn(_add_rank, args=(t,), nprocs=3, start_method=method)
    assert t.tolist() == [1.0, 2.0, 3.0]


def test_a_queue_sends_a_shared_tensor_by_reference():
    ctx = tmp.get_context("spawn")
    t = tg.zeros(4).share_memory_()
    q = ctx.SimpleQueue()
    q.put(t)
    got = q.get()
    got[1:] += 2.0
    assert t.tolist() == [0.0, 2.0, 2.0, 2.0]


def test_hogwild_training_updates_the_parents_model():
    """mnist_hogwild's shape: the model shared, trained by processes started with spawn, read by the parent."""
    tg.manual_seed(0)
    model = tg.nn.Linear(4, 1)
    model.share_memory()
    before = model.weight.detach().numpy().copy()
    processes = []
    ctx = tmp.get_context("spawn")
    for rank in range(2):
        p = ctx.Process(target=_hogwild, args=(rank, model, 20))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
        assert p.exitcode == 0
    x = tg.randn(64, 4)
    loss = tg.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True)).item()
    assert not np.allclose(model.weight.detach().numpy(), before)
    assert loss < 0.5  # (20 steps of two processes on a linear target: trained, where the start is about 4)


def test_spawn_reports_a_raising_process_and_an_exit_code():
    with pytest.raises(tmp.ProcessRaisedException, match="(?s)-- Process 1 terminated with the following error:.*"
                                                         "ValueError: rank one fails"):
        tmp.spawn(_raise, nprocs=2)
    with pytest.raises(tmp.ProcessExitedException, match="process 0 terminated with exit code 3"):
        tmp.spawn(_exit, nprocs=1)


def test_the_module_is_pythons_multiprocessing_with_torchs_additions():
    assert tmp.Process is multiprocessing.Process and tmp.get_context is multiprocessing.get_context
    assert tmp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    tmp.set_sharing_strategy("file_system")
    assert tmp.get_sharing_strategy() == "file_system"
    tmp.set_sharing_strategy("file_descriptor")
    assert tg.multiprocessing is tmp
