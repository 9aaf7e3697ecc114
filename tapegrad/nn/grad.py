"""torch.nn.grad (also torch.nn.functional.grad): the gradients of a convolution with respect to its input and its
weight, given the gradient of its output. A convolution is linear in each, so each is the backward of the
convolution from zeros in its place: exact, and differentiable where the other operands require grad."""
from .. import creation
from ..autograd import grad as _autograd_grad
from ..grad_mode import enable_grad, is_grad_enabled
from ..ops.conv import conv1d, conv2d, conv3d

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _input_grad(conv, input_size, weight, grad_output, stride, padding, dilation, groups):
    x = creation.zeros(tuple(input_size), dtype=grad_output.dtype, requires_grad=True)
    create_graph = is_grad_enabled() and (weight.requires_grad or grad_output.requires_grad)
    with enable_grad():
        out = conv(x, weight, None, stride, padding, dilation, groups)
        return _autograd_grad(out, x, grad_output, create_graph=create_graph)[0]


def _weight_grad(conv, input, weight_size, grad_output, stride, padding, dilation, groups):
    w = creation.zeros(tuple(weight_size), dtype=grad_output.dtype, requires_grad=True)
    create_graph = is_grad_enabled() and (input.requires_grad or grad_output.requires_grad)
    with enable_grad():
        out = conv(input, w, None, stride, padding, dilation, groups)
        return _autograd_grad(out, w, grad_output, create_graph=create_graph)[0]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(conv1d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(conv1d, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(conv2d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(conv2d, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(conv3d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(conv3d, input, weight_size, grad_output, stride, padding, dilation, groups)
