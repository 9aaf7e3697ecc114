"""torch.optim.swa_utils against torch 2.13: AveragedModel (SWA by default, EMA by avg_fn or multi_avg_fn, with and
without use_buffers), SWALR's annealing (cos and linear) and state_dict, update_bn's BatchNorm statistics."""
import importlib

import numpy as np
import pytest
import torch

import tapegrad


def _run(lib, strategy, anneal_epochs):
    swa_utils = importlib.import_module(lib.__name__ + ".optim.swa_utils")
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1)).double()
    gen = np.random.default_rng(1)
    X, Y = lib.tensor(gen.standard_normal((32, 4))), lib.tensor(gen.standard_normal((32, 1)))
    loader = [(X[i:i + 8], Y[i:i + 8]) for i in range(0, 32, 8)]
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    averaged = [swa_utils.AveragedModel(model),
                swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9)),
                swa_utils.AveragedModel(model, avg_fn=swa_utils.get_ema_avg_fn(0.8), use_buffers=True),
                swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_swa_multi_avg_fn())]
    sched = swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    seen = []
    for _ in range(5):
        for x, y in loader:
            opt.zero_grad()
            lib.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        for a in averaged:
            a.update_parameters(model)
        sched.step()
        seen.append(sched.get_last_lr() + [int(averaged[0].n_averaged)] +
                    [np.concatenate([p.detach().numpy().ravel() for p in a.parameters()]) for a in averaged])
    swa_utils.update_bn(loader, averaged[0])
    averaged[0].eval()
    seen.append([averaged[0].module[1].running_mean.numpy(), averaged[0].module[1].running_var.numpy(),
                 averaged[0].module[1].momentum, averaged[0](X[:4]).detach().numpy(),
                 list(averaged[0].state_dict()), sorted(k for k in sched.state_dict() if k != "_last_lr")])
    return seen


@pytest.mark.parametrize("strategy, anneal_epochs", [("cos", 3), ("linear", 2), ("cos", 0)])
def test_swa_utils_as_torchs(strategy, anneal_epochs):
    ours, theirs = _run(tapegrad, strategy, anneal_epochs), _run(torch, strategy, anneal_epochs)
    for row_a, row_b in zip(ours, theirs):
        for a, b in zip(row_a, row_b):
            if isinstance(b, np.ndarray):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
            else:
                assert a == b


def test_swa_utils_errors_as_torchs():
    for lib in (torch, tapegrad):
        swa_utils = importlib.import_module(lib.__name__ + ".optim.swa_utils")
        opt = lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=0.1)
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got exp"):
            swa_utils.SWALR(opt, 0.05, anneal_strategy="exp")
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
            swa_utils.SWALR(opt, 0.05, anneal_epochs=-1)
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided"):
            swa_utils.get_ema_avg_fn(1.5)
