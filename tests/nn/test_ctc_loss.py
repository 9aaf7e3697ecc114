"""F.ctc_loss / nn.CTCLoss against torch 2.13: losses and gradients (float32/float64) for padded and
concatenated targets, every reduction, blank other than 0, sequences shorter than the input, impossible
alignments (inf, and zero_infinity), unbatched input; grad_fn names, repr, torch's errors and its refusal of a
second derivative."""
import numpy as np
import pytest
import torch

import tapegrad as tg

T, N, C = 7, 3, 5
TARGETS = np.array([[1, 2, 2], [3, 1, 0], [4, 4, 4]])
FLAT = np.array([1, 2, 2, 3, 1, 4])
CASES = {  # name: (targets, input_lengths, target_lengths, kwargs)
    "mean": (TARGETS, [7, 5, 6], [3, 2, 1], {}),
    "sum": (TARGETS, [7, 5, 6], [3, 2, 1], dict(reduction="sum")),
    "none_blank2": (np.array([[1, 3, 3], [3, 1, 0], [4, 4, 4]]), [7, 5, 6], [3, 2, 1], dict(reduction="none", blank=2)),
    "flat_targets": (FLAT, [7, 5, 6], [3, 2, 1], {}),
    "repeats_need_a_blank": (np.array([[2, 2, 2], [1, 1, 0], [3, 3, 3]]), [7, 7, 5], [3, 2, 2], dict(reduction="none")),
    "empty_target": (TARGETS, [7, 5, 6], [3, 2, 0], dict(reduction="none")),
    "impossible": (TARGETS, [2, 5, 6], [3, 2, 1], dict(reduction="none")),
    "impossible_zero_infinity": (TARGETS, [2, 5, 6], [3, 2, 1], dict(zero_infinity=True)),
    "impossible_zero_infinity_none": (TARGETS, [2, 5, 6], [3, 2, 1], dict(zero_infinity=True, reduction="none")),
}


def _log_probs(dtype, seed=0):
    logits = np.random.default_rng(seed).standard_normal((T, N, C))
    return (logits - np.log(np.exp(logits).sum(-1, keepdims=True))).astype(dtype)


def _run(lib, lp, targets, il, tl, kwargs, g, as_tensors=True):
    x = lib.tensor(lp, requires_grad=True)
    lengths = (lib.tensor(il), lib.tensor(tl)) if as_tensors else (il, tl)
    out = lib.nn.functional.ctc_loss(x, lib.tensor(targets), *lengths, **kwargs)
    (out * lib.tensor(np.asarray(g, lp.dtype).reshape(tuple(out.shape)))).sum().backward()
    return out.detach().numpy(), x.grad.numpy(), out.grad_fn.name()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_ctc_loss_matches_torch(name, dtype):
    targets, il, tl, kwargs = CASES[name]
    lp = _log_probs(dtype)
    g = np.random.default_rng(1).standard_normal(N) if kwargs.get("reduction") == "none" else 1.0
    ours = _run(tg, lp, targets, il, tl, kwargs, g)
    theirs = _run(torch, lp, targets, il, tl, kwargs, g, as_tensors=name != "sum")  # (lists too)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ours[0], theirs[0], **tol)
    if "impossible" in name and "zero_infinity" not in name:
        assert np.isinf(ours[0][0])
        ours, theirs = (ours[0], ours[1][:, 1:], ours[2]), (theirs[0], theirs[1][:, 1:], theirs[2])  # (torch: nan)
    np.testing.assert_allclose(ours[1], theirs[1], **tol)
    assert ours[2] == theirs[2]


def test_unbatched_and_module():
    lp = _log_probs(np.float64)[:, 0]
    results = []
    for lib in (tg, torch):
        x = lib.tensor(lp, requires_grad=True)
        loss = lib.nn.CTCLoss(blank=1)(x, lib.tensor([2, 3, 3]), lib.tensor(7), lib.tensor(3))
        loss.backward()
        results.append((loss.item(), x.grad.numpy(), tuple(loss.shape)))
        assert repr(lib.nn.CTCLoss(reduction="sum")) == "CTCLoss()"
    assert results[0][2] == results[1][2] == ()
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10, atol=1e-12)


def test_no_second_derivative_as_torch():
    for lib in (tg, torch):
        x = lib.tensor(_log_probs(np.float64), requires_grad=True)
        loss = lib.nn.functional.ctc_loss(x, lib.tensor(TARGETS), [7, 5, 6], [3, 2, 1])
        g, = lib.autograd.grad(loss, x, create_graph=True)
        assert g.grad_fn.name().endswith("NotImplemented")  # (torch's: torch::autograd::NotImplemented)
        with pytest.raises(RuntimeError, match="derivative for aten::_ctc_loss_backward is not implemented"):
            g.sum().backward()


ERRORS = [
    lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(TARGETS[:, :2]), [7, 5, 6], [3, 2, 1]),
    lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(TARGETS), [7, 8, 6], [3, 2, 1]),
    lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(TARGETS), [7, 5], [3, 2, 1]),
    lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(TARGETS), [7, 5, 6], [3, 2]),
    lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(TARGETS), [7, 5, 6], [3, 2, 1], blank=5),
    lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(FLAT[:5]), [7, 5, 6], [3, 2, 1]),
    lambda L, x: L.nn.functional.ctc_loss(x, L.tensor(TARGETS), [7, 5, 6], [3, 2, 1], reduction="avg"),
    lambda L, x: L.nn.functional.ctc_loss(x[None], L.tensor(TARGETS), [7], [3]),
    lambda L, x: L.nn.functional.ctc_loss(x[:, 0, 0], L.tensor([1]), [7], [1]),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    lp = _log_probs(np.float32)
    with pytest.raises(Exception) as theirs:
        ERRORS[i](torch, torch.tensor(lp))
    with pytest.raises(type(theirs.value)) as ours:
        ERRORS[i](tg, tg.tensor(lp))
    assert str(ours.value) == str(theirs.value)
