"""torch.func: composable function transforms (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap, linearize),
functional_call and stack_module_state, with torch's signatures, result structures and errors.

The autodiff transforms run on tapegrad's reverse mode (recorded gradients, so that they nest); forward
mode (jvp, jacfwd, linearize) is the double-vjp trick. vmap is a loop over the mapped dimension: torch's
values, not its speed. docs/compatibility.md ("torch.func and forward-mode AD") lists what differs.
"""
from ._batch_norm_replacement import replace_all_batch_norm_modules_
from ._functional_call import functional_call, stack_module_state
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ._vmap import vmap

__all__ = ["grad", "grad_and_value", "vmap", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "vjp",
           "functional_call", "stack_module_state", "replace_all_batch_norm_modules_"]
