"""torch.autograd.graph's saved-tensor hooks: save_on_cpu passes through (every tensor is on the CPU: torch's
values and gradients), disable_saved_tensors_hooks refuses hooks as torch does, and saved_tensors_hooks itself,
whose pack/unpack tapegrad's tape never calls, raises NotImplementedError naming it."""
import numpy as np
import pytest
import torch

import tapegrad as tg


def test_save_on_cpu_gives_torchs_gradients():
    results = []
    for lib in (tg, torch):
        x = lib.tensor(np.arange(1.0, 4.0), requires_grad=True)
        with lib.autograd.graph.save_on_cpu(pin_memory=False):
            y = (x * x).sum() + x.exp().sum()
        y.backward()
        results.append(x.grad.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-15)


@pytest.mark.parametrize("hooks", ["save_on_cpu", "saved_tensors_hooks"])
def test_disable_saved_tensors_hooks_refuses_them_with_its_message(hooks):
    for lib in (tg, torch):
        G = lib.autograd.graph
        make = (lambda: G.save_on_cpu()) if hooks == "save_on_cpu" else (lambda: G.saved_tensors_hooks(id, id))
        with G.disable_saved_tensors_hooks("no hooks in this block"):
            with pytest.raises(RuntimeError, match="no hooks in this block"):
                with make():
                    pass
        with make() if hooks == "save_on_cpu" else G.save_on_cpu():  # (allowed again after the block)
            pass


def test_saved_tensors_hooks_raises_naming_itself():
    with pytest.raises(NotImplementedError, match="torch.autograd.graph.saved_tensors_hooks: tapegrad"):
        with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass
