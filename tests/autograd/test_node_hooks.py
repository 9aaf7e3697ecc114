"""Hooks on autograd nodes (grad_fn.register_hook / register_prehook, and a leaf's AccumulateGrad's) are not
implemented: each raises NotImplementedError naming the call and what to use instead, never AttributeError
and never a hook silently not called. torch 2.13 runs them (the values a script would see are checked below)."""
import pytest
import torch

import tapegrad


def _torch_runs_them():
    x = torch.ones(3, requires_grad=True)
    b = x.clone()
    seen = []
    b.grad_fn.register_prehook(lambda go: seen.append("pre") or (go[0] * 2,))
    b.grad_fn.register_hook(lambda gi, go: seen.append("post"))
    b.sum().backward()
    return seen, x.grad.tolist()


CALLS = {
    "grad_fn.register_hook": lambda y: y.grad_fn.register_hook(lambda gi, go: None),
    "grad_fn.register_prehook": lambda y: y.grad_fn.register_prehook(lambda go: None),
    "AccumulateGrad.register_hook": lambda y: y.grad_fn.next_functions[0][0].register_hook(lambda gi, go: None),
    "AccumulateGrad.register_prehook": lambda y: y.grad_fn.next_functions[0][0].register_prehook(lambda go: None),
}


@pytest.mark.parametrize("what", list(CALLS))
def test_node_hook_raises_not_implemented(what):
    assert _torch_runs_them() == (["pre", "post"], [2.0, 2.0, 2.0])
    y = tapegrad.ones(3, requires_grad=True).exp()
    with pytest.raises(NotImplementedError, match=rf"tapegrad: {what} \(a hook on an autograd node\) is not "
                                                  rf"implemented.*tensor.register_hook"):
        CALLS[what](y)
