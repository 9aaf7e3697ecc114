"""`torch` for processes that `python -m tapegrad` starts with multiprocessing's spawn or forkserver method.

Those children copy the parent's sys.path but not its import hooks, and re-import the script; the launcher
puts this folder's parent on sys.path (after the script's folder) so that their `import torch` lands here:
this module installs the hook and hands over tapegrad in its place, as in the parent.
"""
import sys

del sys.modules["torch"]  # (this stand-in module: not a real torch, which install_as_torch refuses)
import tapegrad  # noqa: E402
from tapegrad._torch_alias import install_as_torch  # noqa: E402

install_as_torch()
sys.modules["torch"] = tapegrad  # the import statement that loaded this module returns tapegrad
