"""Seed 004: the PyTorch autograd tutorial (torch.autograd, Chinese translation).

Run on tapegrad:  python examples/seeds/seed_004_autograd_tutorial.py
Run on PyTorch:   python examples/seeds/seed_004_autograd_tutorial.py torch

``torch.manual_seed(0)`` is called before ``randn``, so w.grad and b.grad differ
from the transcript's numbers (they equal (sigmoid(z) - y) / 3 broadcast).
"""
import sys, importlib
torch = importlib.import_module(sys.argv[1] if len(sys.argv) > 1 else "tapegrad")

torch.manual_seed(0)

x = torch.ones(5)  # input tensor
y = torch.zeros(3)  # expected output
w = torch.randn(5, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)

# references to the backward functions
print(f"Gradient function for z = {z.grad_fn}")
print(f"Gradient function for loss = {loss.grad_fn}")

# loss.backward() computes the gradients
loss.backward()
print(w.grad)
print(b.grad)

# disabling gradient tracking
z = torch.matmul(x, w) + b
print(z.requires_grad)

with torch.no_grad():
    z = torch.matmul(x, w) + b

print(z.requires_grad)

# the other way: detach()
z = torch.matmul(x, w) + b
z_det = z.detach()
print(z_det.requires_grad)

inp = torch.eye(5, requires_grad=True)
out = (inp+1).pow(2)
out.backward(torch.ones_like(inp), retain_graph=True)
print(f"First call\n{inp.grad}")
# PyTorch accumulates the gradients during backward
out.backward(torch.ones_like(inp), retain_graph=True)
print(f"\nSecond call\n{inp.grad}")
inp.grad.zero_()
out.backward(torch.ones_like(inp), retain_graph=True)
print(f"\nCall after zeroing gradients\n{inp.grad}")
