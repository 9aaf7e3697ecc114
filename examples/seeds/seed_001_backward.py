"""Seed 001: "Thoughts on torch.autograd.backward in PyTorch" (legacy torch 0.3 tutorial).

Run on tapegrad:  python examples/seeds/seed_001_backward.py
Run on PyTorch:   python examples/seeds/seed_001_backward.py torch

Deviations from the transcript, forced by modern PyTorch (2.x):
* the REPL echoes (``y.grad_fn``, ``z``, ...) are spelled ``print(...)``;
* ``from torch.autograd import Variable`` is spelled ``torch.autograd.Variable``
  (a ``from`` import would bypass the ``torch`` alias chosen on the command line);
* the RuntimeError of the non-scalar ``y.backward()`` is caught and printed;
* the first two ``y.backward(...)`` calls pass ``retain_graph=True``: in modern
  PyTorch ``x * 2`` saves the scalar operand, so a second backward through the
  same graph raises "Trying to backward through the graph a second time".
"""
import sys, importlib
torch = importlib.import_module(sys.argv[1] if len(sys.argv) > 1 else "tapegrad")

Variable = torch.autograd.Variable

x = Variable(torch.ones(2, 2), requires_grad=True)
y = x + 2
print(y.grad_fn)   # seed (torch 0.3): <torch.autograd.function.AddConstantBackward at 0x...>
print(y.grad)      # None (modern PyTorch also warns on stderr: y is not a leaf)
z = y * y * 3
print(z.grad_fn)   # seed (torch 0.3): <torch.autograd.function.MulConstantBackward at 0x...>
print(z)
out = z.mean()
print(out.grad_fn)  # seed (torch 0.3): <torch.autograd.function.MeanBackward at 0x...>
out.backward()      # out is a scalar, so no gradient argument is needed
print(x.grad)
print(out)          # seed (torch 0.3): a Variable "of size 1"; today a 0-dim tensor

x = Variable(torch.Tensor([2, 2, 2]), requires_grad=True)
y = x * 2
print(y)
try:
    y.backward()    # y is not a scalar: a gradient argument of the same length is required
except RuntimeError as e:
    print(f"RuntimeError: {e}")

y.backward(torch.FloatTensor([0.1, 1, 10]), retain_graph=True)
print(x.grad)       # 0.1, 1, 10 weight the gradients of the elements
y.backward(torch.FloatTensor([0.1, 1, 10]), retain_graph=True)
print(x.grad)       # gradients accumulate
print(x.grad.data.zero_())  # clear the accumulated gradient
print(x.grad)       # cleared
y.backward(torch.FloatTensor([0.1, 1, 10]))
print(x.grad)
