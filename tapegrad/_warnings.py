"""Where tapegrad's warnings point: at the first frame outside tapegrad, the user's line, as torch's C++
warnings do and as its Python ones do when called from user code (one rule, however deep the call)."""
import sys


def user_stacklevel():
    """The stacklevel that makes `warnings.warn`, called by this function's caller, name the user's line."""
    f, level = sys._getframe(1), 1
    while f is not None and f.f_globals.get("__name__", "").startswith("tapegrad"):
        f, level = f.f_back, level + 1
    return level
