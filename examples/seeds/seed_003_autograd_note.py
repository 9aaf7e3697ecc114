"""Seed 003: "[PyTorch] Note 02: Autograd" (from the PyTorch 1.4 tutorial).

Run on tapegrad:  python examples/seeds/seed_003_autograd_note.py
Run on PyTorch:   python examples/seeds/seed_003_autograd_note.py torch

The transcript's ``(a  1)`` lost its minus sign (the PyTorch tutorial has
``(a - 1)``).  The two commented-out alternatives of section 2.2
(``z.backward(torch.Tensor([1,2,3,4]))`` and ``z.backward(torch.tensor([1.,2.,3.,4.]))``)
are run as well, each on a fresh ``x``, since the transcript shows their output.
"""
import sys, importlib
torch = importlib.import_module(sys.argv[1] if len(sys.argv) > 1 else "tapegrad")

torch.manual_seed(0)

# 1 Tensor: requires_grad defaults to False
a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)

# grad_fn: only results of operations have one
x = torch.tensor(1.0, requires_grad=True)
y = torch.tensor(2.0, requires_grad=True)
z = x + y
print(x, y, z)

# 2.1 the result node is a scalar
x = torch.tensor(3.0, requires_grad=True)
y = torch.tensor(7.0, requires_grad=True)
z = x + y
z.backward()
# Returns the gradient of x, y, and the value of z
print(x.grad, y.grad, z)

# 2.2 the result node is a vector
x = torch.ones(4, requires_grad=True)  # x=[x1,x2,x3,x4]
#print(x.type()) torch.FloatTensor
z = x + 2  # z=[x1+2,x2+2,x3+2,x4+2]
# If all incoming are 1
z.backward(torch.ones_like(z))
print(x.grad)

# If the incoming is set by yourself
x = torch.ones(4, requires_grad=True)
z = x + 2
z.backward(torch.Tensor([1, 2, 3, 4]))  # z=[x1+2,2(x2+2),3(x3+2),4(x4+2)]; torch.Tensor is a FloatTensor
print(x.grad)

x = torch.ones(4, requires_grad=True)
z = x + 2
z.backward(torch.tensor([1., 2., 3., 4.]))  # z=[x1+2,2(x2+2),3(x3+2),4(x4+2)]
print(x.grad)
