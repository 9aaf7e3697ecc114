"""`torch` resolved to tapegrad: a meta-path finder that maps `torch` and `torch.X.Y` to the module
objects `tapegrad` and `tapegrad.X.Y` (the same objects, so `torch.nn is tapegrad.nn`).

Used by `python -m tapegrad script.py` and `tapegrad.install_as_torch()`. A submodule tapegrad lacks
raises ModuleNotFoundError naming the torch module, as a missing module does for any import.
"""
import importlib
import importlib.abc
import importlib.util
import sys

_PREFIX = "torch"


class _AliasLoader(importlib.abc.Loader):
    """Hands back the tapegrad module itself; no second copy is executed."""

    def __init__(self, module):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        module.__spec__ = self.spec  # the import system set the alias's spec on it: restore tapegrad's


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != _PREFIX and not fullname.startswith(_PREFIX + "."):
            return None
        target_name = "tapegrad" + fullname[len(_PREFIX):]
        try:
            module = importlib.import_module(target_name)
        except ModuleNotFoundError as e:
            # Only "tapegrad.X lacks Y" becomes "No module named 'torch.X.Y'"; a dependency missing
            # inside a tapegrad module (an optional extra) keeps its own error.
            if e.name is not None and (target_name == e.name or target_name.startswith(e.name + ".")):
                raise ModuleNotFoundError(f"No module named '{fullname}'", name=fullname) from None
            raise
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module),
                                               is_package=hasattr(module, "__path__"))


def _real_torch_imported():
    mod = sys.modules.get(_PREFIX)
    if mod is None:
        return None
    if getattr(mod, "__name__", None) == "tapegrad":
        return None
    return mod


def install_as_torch():
    """Make `import torch` (and every `import torch.X.Y`) resolve to tapegrad in this process, as
    `pymysql.install_as_MySQLdb()` does for MySQLdb. Call it before anything imports torch; idempotent."""
    real = _real_torch_imported()
    if real is not None:
        raise RuntimeError(
            f"tapegrad.install_as_torch(): the real PyTorch is already imported in this process (from "
            f"{getattr(real, '__file__', '?')}); call install_as_torch() before anything imports torch, or "
            f"run the script with `python -m tapegrad script.py`")
    if not any(isinstance(f, TorchAliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TorchAliasFinder())  # ahead of PathFinder, which would find real torch
