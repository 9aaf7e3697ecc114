"""torch.autograd.gradcheck and gradgradcheck: a function's gradients (and gradients of its gradients)
against central finite differences, with torch's signatures, checks and GradcheckError messages.

Both run torch's slow mode: the full Jacobian, one backward per output element, each computed twice
(backward must be deterministic up to nondet_tol). `fast_mode=True` is accepted and runs the same full
check. tapegrad's forward mode (autograd.forward_ad) is the double-vjp trick over the same backward, with
no forward derivatives of its own to check: `check_forward_ad` / `check_batched_forward_grad` raise
NotImplementedError. `check_batched_grad` runs torch's check (two random grad_outputs, drawn as torch draws them,
their backwards against one vmap of the backward); tapegrad's vmap is a loop of the same backwards, so it finds what
a loop can: a backward that fails or differs between calls.
"""
import warnings

import numpy as np
from .._dtype import float64
from ..creation import rand, randn_like, zeros
from ..ops import allclose, stack
from ..tensor import _new as new, Tensor
from .api import grad
from .._warnings import user_stacklevel

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    r"""Error raised by :func:`gradcheck` and :func:`gradgradcheck`."""


FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""


def _Tensor():
    return Tensor


def _new(data, requires_grad=False):
    return new(data, requires_grad)


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_diff_input(x):
    return isinstance(x, _Tensor()) and x.requires_grad


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if isinstance(o, _Tensor()) and o.requires_grad)


def _check_inputs(tupled_inputs):
    any_input_requiring_grad = False
    for idx, inp in enumerate(tupled_inputs):
        if _is_diff_input(inp):
            if inp._data.dtype != np.float64:
                warnings.warn(f"Input #{idx} requires gradient and is not a double precision floating point or "
                              f"complex. This check will likely fail if all the inputs are not of double precision "
                              f"floating point or complex. ", stacklevel=user_stacklevel())
            any_input_requiring_grad = True
    if not any_input_requiring_grad:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")


# -- numerical Jacobians ----------------------------------------------------------------------------------------
def _numerical_jacobians(func, inputs, n_outputs, eps):
    """numerical[j][i]: d output_i / d (differentiable) input_j as (input numel, output numel), central
    differences of func evaluated on perturbed copies of the inputs."""
    result = []
    for j, inp in enumerate(inputs):
        if not _is_diff_input(inp):
            continue
        base = inp._data
        columns = [[] for _ in range(n_outputs)]
        for k in range(base.size):
            outs = []
            for sign in (1, -1):
                data = base.copy()
                data.reshape(-1)[k] += sign * eps
                args = list(inputs)
                args[j] = _new(data, requires_grad=True)
                outs.append(_as_tuple(func(*args)))
            for i in range(n_outputs):
                plus, minus = outs[0][i], outs[1][i]
                if not isinstance(plus, _Tensor()):
                    columns[i].append(None)
                    continue
                if plus.shape != minus.shape or plus.dtype != minus.dtype:
                    raise ValueError(f"Expected `func` to return outputs with the same dtype and shape when inputs "
                                     f"are perturbed on index {k} by {eps}, but got: dtypes {plus.dtype} and "
                                     f"{minus.dtype}, shapes {plus.shape} and {minus.shape}.")
                p = plus._data.astype(np.float64).reshape(-1)
                m = minus._data.astype(np.float64).reshape(-1)
                columns[i].append((p - m) / (2 * eps))
        per_output = []
        for i in range(n_outputs):
            if not columns[i] or columns[i][0] is None:
                per_output.append(None)
                continue
            per_output.append(_new(np.stack(columns[i]).astype(base.dtype).reshape(base.size, -1)))
        result.append(per_output)
    return result


# -- analytical Jacobians ---------------------------------------------------------------------------------------
def _analytical_jacobian(diff_inputs, output, nondet_tol, check_grad_dtypes):

    def rows():
        cols = [[] for _ in diff_inputs]
        sizes_ok, types_ok = True, True
        for k in range(output.numel()):
            seed = np.zeros(output._data.size, output._data.dtype)
            seed[k] = 1
            grads = grad(output, diff_inputs, _new(seed.reshape(output._data.shape)), retain_graph=True,
                         allow_unused=True)
            for j, (g, x) in enumerate(zip(grads, diff_inputs)):
                if g is None:
                    cols[j].append(np.zeros(x._data.size, np.float64))
                    continue
                if g.shape != x.shape:
                    sizes_ok = False
                    cols[j].append(np.zeros(x._data.size, np.float64))
                    continue
                types_ok = types_ok and g._data.dtype == x._data.dtype
                cols[j].append(g._data.astype(np.float64).reshape(-1))
        jac = [np.stack(c, axis=1) if c else np.zeros((x._data.size, 0)) for c, x in zip(cols, diff_inputs)]
        return jac, sizes_ok, types_ok

    jac1, sizes_ok, types_ok = rows()
    jac2, _, _ = rows()
    reentrant = all(a.shape == b.shape and (a.size == 0 or np.max(np.abs(a - b)) <= nondet_tol)
                    for a, b in zip(jac1, jac2))
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError("Backward is not reentrant, i.e., running backward with same input and grad_output "
                             "multiple times gives different values, although analytical gradient matches numerical "
                             f"gradient.The tolerance for nondeterminism was {nondet_tol}." + FAILED_NONDET_MSG)
    return [_new(a.astype(x._data.dtype)) for a, x in zip(jac1, diff_inputs)]


def _allclose(a, n, rtol, atol):
    a, n = a._data.astype(np.float64), n._data.astype(np.float64)
    return bool(np.all(np.abs(a - n) <= atol + rtol * np.abs(n)))


def _notallclose_msg(analytical, numerical, output_idx, input_idx):
    return (f"Jacobian mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
            f"numerical:{numerical}\nanalytical:{analytical}\n")


# -- the checks -------------------------------------------------------------------------------------------------
def _slow_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol):
    func_out = _as_tuple(func_out)
    numerical = _numerical_jacobians(func, inputs, len(func_out), eps)
    if not outputs:
        for per_input in numerical:
            for n in per_input:
                if n is not None and not np.all(n._data == 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    diff_inputs = [x for x in inputs if _is_diff_input(x)]
    out_index = [i for i, o in enumerate(func_out) if isinstance(o, _Tensor()) and o.requires_grad]
    for i, (o, src) in enumerate(zip(outputs, out_index)):
        analytical = _analytical_jacobian(diff_inputs, o, nondet_tol, check_grad_dtypes)
        for j, a in enumerate(analytical):
            n = numerical[j][src]
            if not _allclose(a, n, rtol, atol):
                raise GradcheckError(_notallclose_msg(a, n, i, j))
    return True


def _test_backward_mul_by_grad_output(outputs, inputs):
    diff_inputs = [x for x in inputs if _is_diff_input(x)]
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")
    grads_input = grad(outputs, diff_inputs, [_new(np.zeros_like(o._data)) for o in outputs], allow_unused=True)
    for gi, di in zip(grads_input, diff_inputs):
        if gi is None:
            continue
        if not np.all(gi._data == 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi._data.dtype != di._data.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.shape != di.shape:
            raise GradcheckError("grad is incorrect size")
    return True


def _test_undefined_backward_mode(func, inputs):
    """tapegrad has no undefined gradients: all-zero output gradients stand in for them."""
    diff_inputs = [x for x in inputs if _is_diff_input(x)]
    if not diff_inputs:
        raise GradcheckError("no Tensors requiring grad found in input")

    def warn_bc_breaking():
        warnings.warn("Backwards compatibility: New undefined gradient support checking feature is enabled by "
                      "default, but it may break existing callers of this function. If this is true for you, you can "
                      'call this function with "check_undefined_grad=False" to disable the feature', stacklevel=user_stacklevel())

    outputs = _differentiable_outputs(func(*inputs))
    try:
        grads_input = grad(outputs, diff_inputs, [_new(np.zeros_like(o._data)) for o in outputs], allow_unused=True)
    except RuntimeError as e:
        warn_bc_breaking()
        raise GradcheckError('Expected backward function to handle undefined output grads. Please look at "Notes '
                             'about undefined output gradients" in "tools/autograd/derivatives.yaml"') from e
    for gi in grads_input:
        if gi is not None and not np.all(gi._data == 0):
            warn_bc_breaking()
            raise GradcheckError('Expected all input grads to be undefined or zero when all output grads are undefined '
                                 'or zero. Please look at "Notes about undefined output gradients" in '
                                 '"tools/autograd/derivatives.yaml"')
    return True


FAILED_BATCHED_GRAD_MSG = """
gradcheck or gradgradcheck failed while testing batched gradient computation.
This could have been invoked in a number of ways (via a test that calls
gradcheck/gradgradcheck directly or via an autogenerated test).

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `check_batched_grad=False` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `check_batched_grad=False` and/or `check_batched_gradgrad=False`.

If you're modifying an existing operator that supports batched grad computation,
or wish to make a new operator work with batched grad computation, please read
the following.

To compute batched grads (e.g., jacobians, hessians), we vmap over the backward
computation. The most common failure case is if there is a 'vmap-incompatible
operation' in the backward pass. Please see
NOTE: [How to write vmap-compatible backward formulas]
in the codebase for an explanation of how to fix this.
""".strip()


def _test_batched_grad(inputs, output, output_idx):
    """torch's _test_batched_grad: the backwards of two random grad_outputs (torch's randn_like draws) against the
    vmap of the backward over both."""
    from ..func import vmap
    diff_inputs = [x for x in inputs if _is_diff_input(x)]

    def vjp(v):
        results = grad(output, diff_inputs, v, retain_graph=True, allow_unused=True)
        return tuple(g if g is not None else zeros((), dtype=x.dtype).expand(x.shape)
                     for g, x in zip(results, diff_inputs))
    grad_outputs = [randn_like(output) for _ in range(2)]
    expected = [stack(shards) for shards in zip(*[vjp(g) for g in grad_outputs])]
    try:
        result = vmap(vjp)(stack(grad_outputs))
    except RuntimeError as ex:
        raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n{FAILED_BATCHED_GRAD_MSG}") from ex
    for input_idx, (res, exp) in enumerate(zip(result, expected)):
        if not allclose(res, exp):
            raise GradcheckError(f"For output {output_idx} and input {input_idx}:\n\n{FAILED_BATCHED_GRAD_MSG}\n\n"
                                 f"Got:\n{res}\n\nExpected:\n{exp}")
    return True


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Check the gradients of func at inputs (those that require grad) against finite differences.

    Returns True, or raises GradcheckError (returns False with raise_exception=False)."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    if check_forward_ad:
        raise NotImplementedError("gradcheck(check_forward_ad=True) is not supported: tapegrad's forward mode is the "
                                  "double-vjp trick over its backward, with no forward derivatives of its own to check")
    try:
        tupled_inputs = _as_tuple(inputs)
        _check_inputs(tupled_inputs)
        func_out = func(*tupled_inputs)
        outputs = _differentiable_outputs(func_out)
        _slow_gradcheck(func, func_out, tupled_inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol)
        if check_batched_grad:
            for i, o in enumerate(outputs):
                _test_batched_grad(tupled_inputs, o, i)
        if outputs:
            _test_backward_mul_by_grad_output(outputs, tupled_inputs)
            if check_undefined_grad:
                _test_undefined_backward_mode(func, tupled_inputs)
        return True
    except GradcheckError:
        if raise_exception:
            raise
        return False


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_grad_dtypes=False, check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True,
                  fast_mode=False, masked=False):
    """Check the second derivatives of func: gradcheck of (inputs, grad_outputs) -> the gradients of func."""
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(  # uniform in [-1, 1), as torch.testing.make_tensor
            _new((rand(tuple(x.shape), dtype=float64)._data * 2 - 1)
                 .astype(x._data.dtype if x.is_floating_point() else np.float64), requires_grad=True)
            for x in outputs)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_input_args_indices = {i for i, x in enumerate(tupled_inputs) if _is_diff_input(x)}
    diff_grad_output_indices = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args):
        input_args = tuple(x.requires_grad_() if i in diff_input_args_indices else x
                           for i, x in enumerate(args[:-num_outputs]))
        outputs = _differentiable_outputs(func(*input_args))
        grad_outputs = tuple(x.requires_grad_() if i in diff_grad_output_indices else x
                             for i, x in enumerate(args[-num_outputs:]))
        diff_input_args = tuple(x for i, x in enumerate(input_args) if i in diff_input_args_indices)
        grad_inputs = grad(outputs, diff_input_args, grad_outputs, create_graph=True, allow_unused=True)
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev, masked=masked)
