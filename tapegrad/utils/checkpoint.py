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

Selective checkpointing (`context_fn=functools.partial(create_selective_checkpoint_contexts, policy)`) takes torch's
API, but tapegrad cannot tell the ops apart inside a checkpoint (it has no dispatcher to intercept them): the
recompute runs every op, as plain checkpointing does (create_selective_checkpoint_contexts says what follows).
"""
import enum
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
           "check_backward_validity", "noop_context_fn", "CheckpointPolicy", "SelectiveCheckpointContext",
           "create_selective_checkpoint_contexts"]

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


# -- selective activation checkpointing: torch's API ------------------------------------------------------------
class SelectiveCheckpointContext:
    """What torch passes a policy function with each op: is_recompute (always False) and op_output."""

    def __init__(self, *, is_recompute, op_output=None):
        self.is_recompute = is_recompute
        self.op_output = op_output


class CheckpointPolicy(enum.Enum):
    """Whether an op's output is saved by the forward (*_SAVE) or recomputed in the backward (*_RECOMPUTE);
    MUST_* may not be overridden by torch.compile. tapegrad recomputes every op whatever the policy says
    (create_selective_checkpoint_contexts)."""
    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


class _CachingTorchDispatchMode(_NullContext):
    """The forward's context of the pair (torch's class name); in torch it asks the policy about each op."""

    def __init__(self, policy_fn, storage):
        self.policy_fn, self.storage = policy_fn, storage


class _CachedTorchDispatchMode(_NullContext):
    """The recompute's context of the pair (torch's class name); in torch it hands back the saved outputs."""

    def __init__(self, policy_fn, storage, allow_cache_entry_mutation=False):
        self.storage, self.allow_cache_entry_mutation = storage, allow_cache_entry_mutation


_OP_TYPES = ("OpOverload", "HigherOrderOperator")  # (torch.ops.aten.mm.default's kinds; tapegrad has no such ops)


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The (forward, recompute) contexts of selective checkpointing, for checkpoint(..., use_reentrant=False,
    context_fn=functools.partial(create_selective_checkpoint_contexts, policy)): policy is a function
    policy(ctx, op, *args, **kwargs) -> CheckpointPolicy (or bool), or a list of ops to save.

    tapegrad cannot tell ops apart inside a checkpoint, so its recompute runs every op, as a policy answering
    PREFER_RECOMPUTE for all does, and the policy function is never called. Values and gradients are torch's for
    any policy: the recomputed ops give the numbers the saved ones hold (the CPU generator's state restored),
    and tapegrad's tape keeps the forward's values for the backward whatever the checkpoint does. What differs:
    a policy's own side effects; an op torch would hand back from its cache runs again (a BatchNorm's running
    statistics are updated by the recompute, as in plain checkpointing); and torch's errors for a second
    backward through saved ops or for a mutated saved tensor are not raised."""
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            kind = type(op).__name__
            if kind not in _OP_TYPES:
                extra = ("Please update the OpOverloadPacket to a specific OpOverload.For example, if you have "
                         "`torch.ops.aten.mm`, change it to `torch.ops.aten.mm.default`."
                         if kind == "OpOverloadPacket" else "")
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} of type {type(op)}. "
                                 f"{extra}")
        ops = policy_fn_or_list

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in ops else CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage = {}
    return (_CachingTorchDispatchMode(policy_fn, storage),
            _CachedTorchDispatchMode(None, storage, allow_cache_entry_mutation))
