"""Constructor checks of torch's OptimizerInfo error inputs (torch.testing._internal.common_optimizers) that tapegrad
missed: Adam's and AdamW's lr and betas given as Tensors. Each against torch: the exception's type and message, or
the same parameters after two steps."""
import numpy as np
import pytest
import torch

import tapegrad as tg


def _outcome(L, cls, make_kwargs):
    w = L.tensor(np.linspace(-1.0, 1.0, 6), requires_grad=True)
    try:
        opt = getattr(L.optim, cls)([w], **make_kwargs(L))
        for _ in range(2):
            opt.zero_grad()
            (w ** 2).sum().backward()
            opt.step()
        return w.detach().numpy().round(12).tolist()
    except Exception as e:  # (the exception is the result compared)
        return (type(e).__name__, str(e))


CASES = {
    "lr tensor foreach": lambda L: {"lr": L.tensor(0.001), "foreach": True},
    "lr tensor": lambda L: {"lr": L.tensor(0.01)},
    "lr tensor of two": lambda L: {"lr": L.tensor([0.01, 0.02])},
    "betas float and tensor": lambda L: {"betas": (0.9, L.tensor(0.99))},
    "betas tensor and float": lambda L: {"betas": (L.tensor(0.9), 0.99)},
    "betas tensors foreach": lambda L: {"betas": (L.tensor(0.9), L.tensor(0.99)), "foreach": True},
    "betas tensors": lambda L: {"betas": (L.tensor(0.9), L.tensor(0.99))},
    "betas int": lambda L: {"betas": (0, 0.99)},
    "betas out of range": lambda L: {"betas": (1.0, 0.99)},
    "betas tensor of two": lambda L: {"betas": (L.tensor([0.9, 0.8]), L.tensor(0.99))},
}


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_adam_lr_and_betas_checks_as_torch(cls, case):
    expected, got = _outcome(torch, cls, CASES[case]), _outcome(tg, cls, CASES[case])
    if isinstance(expected, list) and isinstance(got, list):
        # (torch computes with a float32 Tensor lr in float32: lr / bias correction, 1 - lr * weight_decay; tapegrad
        # in float64)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    else:
        assert got == expected
