"""torch.utils.checkpoint: `checkpoint` and `checkpoint_sequential`, torch's two variants.

`use_reentrant=True` (torch's default, with its warning when the flag is not given) is torch's CheckpointFunction:
the function runs under no_grad, so nothing it computes stays on the tape, and the Function's backward runs it
again with grad (the CPU generator's state restored when `preserve_rng_state`) and backpropagates through the
recomputed graph into the parameters' `.grad` and the inputs' gradients. As torch's, it cannot be used with
`autograd.grad` or `backward(inputs=...)`, and an output requires grad only if an input does.

`use_reentrant=False`, torch's recommended variant, is built as torch builds it, on saved-tensor hooks: the function
runs with its graph recorded and each saved tensor packed as its index; the first unpack of a backward runs the
function again (generator state restored) under hooks that collect the recomputed saved tensors, and each unpack
returns its own. It works with `autograd.grad` and with inputs that need no gradient, and its side effects are
torch's (a BatchNorm's running statistics updated again by the recompute). tapegrad's tape keeps the values a
backward reads whatever the hooks do (docs/architecture.md), so this variant saves no memory here.
"""
import warnings

from ..autograd.api import backward as _backward
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks
from ..grad_mode import enable_grad, no_grad
from ..random import get_rng_state, set_rng_state
from ..replay import is_checkpoint_valid
from ..tensor import Tensor
from .._warnings import user_stacklevel

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointFunction", "CheckpointError", "detach_variable",
           "check_backward_validity", "noop_context_fn"]

NO_FLAG = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
           "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
           "recommended, but if you need to preserve the current default behavior, you can pass use_reentrant=True. "
           "Refer to docs for more details on the differences between the two variants.")
NO_INPUT_GRAD = "None of the inputs have requires_grad=True. Gradients will be None"
NOT_VALID = ("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an `inputs` "
             "parameter to .backward(). To resolve this error, you can either set use_reentrant=False, or call "
             ".backward() without passing the `inputs` argument.")


def noop_context_fn():
    return _NullContext(), _NullContext()


class _NullContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def detach_variable(inputs):
    """Each tensor detached, keeping whether it requires grad (torch's helper)."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for x in inputs:
        if not isinstance(x, Tensor):
            out.append(x)
            continue
        d = x.detach()
        d.requires_grad = x.requires_grad
        out.append(d)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        warnings.warn(NO_INPUT_GRAD, stacklevel=user_stacklevel())


class CheckpointFunction(Function):
    """torch's reentrant checkpoint: forward without a graph, backward by recomputing it."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function, ctx.preserve_rng_state = run_function, preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
        ctx.inputs, ctx.tensor_indices, tensors = [], [], []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensors)
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not is_checkpoint_valid():
            raise RuntimeError(NOT_VALID)
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        state = get_rng_state()
        try:
            if ctx.preserve_rng_state:
                set_rng_state(ctx.fwd_cpu_state)
            with enable_grad():
                outputs = ctx.run_function(*detached)
        finally:
            set_rng_state(state)  # (torch's fork_rng: the caller's stream goes on where it was)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in detached)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, preserve_rng_state=True, **kwargs):
    """torch.utils.checkpoint.checkpoint (module docstring)."""
    if use_reentrant is None:
        warnings.warn(NO_FLAG, stacklevel=user_stacklevel())
        use_reentrant = True
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    frame = _Frame(function, args, kwargs, preserve_rng_state, recompute_context)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return function(*args, **kwargs)


class _Frame:
    """One non-reentrant checkpoint call: its saved tensors by index, recomputed at the first unpack."""

    def __init__(self, function, args, kwargs, preserve_rng_state, recompute_context):
        self.function, self.args, self.kwargs, self.recompute_context = function, args, kwargs, recompute_context
        self.rng_state = get_rng_state() if preserve_rng_state else None
        self.count = 0
        self.recomputed = None

    def pack(self, t):
        self.count += 1
        return self.count - 1

    def unpack(self, index):
        if self.recomputed is None:
            self.recomputed = []
            collect = lambda t: self.recomputed.append(t.detach()) or len(self.recomputed) - 1  # noqa: E731
            state = get_rng_state()
            try:
                if self.rng_state is not None:
                    set_rng_state(self.rng_state)
                with enable_grad(), saved_tensors_hooks(collect, _no_unpack), self.recompute_context:
                    self.function(*self.args, **self.kwargs)
            finally:
                set_rng_state(state)
        if index >= len(self.recomputed):
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have different "
                                  f"metadata than during the forward pass: the forward saved {self.count} tensors, "
                                  f"the recompute {len(self.recomputed)}")
        return self.recomputed[index]


def _no_unpack(index):
    raise CheckpointError("torch.utils.checkpoint: a tensor saved while recomputing was used by a backward")


class CheckpointError(RuntimeError):
    """torch.utils.checkpoint.CheckpointError: the recompute did not give the forward's saved tensors."""


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """torch.utils.checkpoint.checkpoint_sequential: `functions` (a Sequential or a list of modules) in `segments`
    chunks, each but the last checkpointed."""
    if use_reentrant is None:
        warnings.warn(NO_FLAG, stacklevel=user_stacklevel())
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)

