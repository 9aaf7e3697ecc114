"""Seed 002: d2l "automatic differentiation" chapter (Chinese edition notebook).

Run on tapegrad:  python examples/seeds/seed_002_d2l_autograd.py
Run on PyTorch:   python examples/seeds/seed_002_d2l_autograd.py torch

The notebook cells are run in the order they appear in the transcript; REPL echoes
are spelled ``print(...)``.  ``torch.manual_seed(0)`` is called before ``randn``,
so ``a`` (and hence ``d``) differ from the transcript's -0.1460; the transcript's
``b.norm()`` shows the obsolete ``grad_fn=<CopyBackwards>``, modern PyTorch prints
``grad_fn=<LinalgVectorNormBackward0>``.
"""
import sys, importlib
torch = importlib.import_module(sys.argv[1] if len(sys.argv) > 1 else "tapegrad")

x = torch.arange(4.0, requires_grad=True)
y = 2 * torch.dot(x, x)

y.backward()

print(x.grad)

print(x.grad == 4 * x)

print(x.grad.zero_())  # a gradient exists only after y.backward(); only then can it be zeroed

y = x.sum()
y.backward()
print(x.grad)

x = torch.arange(4.0, requires_grad=True)
y = 2 * torch.dot(x, x)
y.backward()
# PyTorch accumulates gradients by default; the previous value has to be cleared.
# Calling 'backward' on a non-scalar needs a 'gradient' argument.
x.grad.zero_()

print(x)

y = x * x  # y is a vector here, not a scalar
print(y)

print(y.sum())

# equivalent to y.backward(torch.ones(len(x)))
y.sum().backward()  # y.sum() turns the vector into a scalar
print(x.grad)

x = torch.arange(4.0, requires_grad=True)
y = 2 * torch.dot(x, x)
y.backward()
x.grad.zero_()
y = x * x
print(y)

u = y.detach()  # y.detach() treats y as a constant rather than a function of x
print(u)

z = u * x

print(z)

z.sum().backward()

print(x.grad == u)


def f(a):
    b = a * 2
    while b.norm() < 1000:  # norm is the L2 norm
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c


torch.manual_seed(0)
a = torch.randn(size=(), requires_grad=True)
print(a)

b = 2 * a
print(b.norm())

print(b * 2)

d = f(a)
print(d)

d.backward()
print(a.grad)

print(d / a)

print(a.grad == d / a)  # d is linear in a, so the derivative is the slope d/a
