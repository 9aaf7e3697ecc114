"""torch's NumPy spellings of two keywords: every torch function and Tensor method bound from C++ takes `axis` for
`dim` and `keepdims` for `keepdim` (python_arg_parser's numpy_compatibility_arg_names: `x.sum(axis=1,
keepdims=True)`, `torch.cumprod(a, axis=0)`), while those torch writes in Python (nn.functional's, torch.norm,
Tensor.split, ...) do not. install() wraps tapegrad's counterparts of the first kind: a call without the NumPy
names costs one plain call more."""
import functools
import inspect

ALIASES = {"axis": "dim", "keepdims": "keepdim"}

# names whose torch versions are Python functions (torch/functional.py, torch/_tensor.py): they keep torch's
# TypeError for `axis`
PYTHON_IN_TORCH = frozenset({
    "norm", "split", "unique", "unique_consecutive", "unflatten", "stft", "istft", "tensordot", "cdist", "lu",
    "chain_matmul", "einsum", "meshgrid", "block_diag", "broadcast_tensors", "cartesian_prod", "atleast_1d",
    "atleast_2d", "atleast_3d", "unravel_index", "align_to", "refine_names", "rename", "module_load"})


def _takes_dim(fn):
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "dim" in parameters or "keepdim" in parameters


def accepting_numpy_names(fn):
    """fn, taking axis= for dim= and keepdims= for keepdim=."""
    @functools.wraps(fn)
    def with_numpy_names(*args, **kwargs):
        if kwargs and not kwargs.keys().isdisjoint(ALIASES):
            for numpy_name, torch_name in ALIASES.items():
                if numpy_name in kwargs and torch_name in kwargs:  # (both spellings: torch knows only one)
                    raise TypeError(f"{fn.__name__}() got an unexpected keyword argument '{numpy_name}'")
            kwargs = {ALIASES.get(k, k): v for k, v in kwargs.items()}
        return fn(*args, **kwargs)
    return with_numpy_names


def install(tensor_class, namespace):
    """Wrap the Tensor methods and the namespace's functions that take dim or keepdim (torch's C++-bound ones)."""
    for name, value in list(vars(tensor_class).items()):
        if inspect.isfunction(value) and name not in PYTHON_IN_TORCH and not name.startswith("__") \
                and _takes_dim(value):
            setattr(tensor_class, name, accepting_numpy_names(value))
    for name, value in list(namespace.items()):
        if inspect.isfunction(value) and name not in PYTHON_IN_TORCH and not name.startswith("_") \
                and _takes_dim(value):
            namespace[name] = accepting_numpy_names(value)
