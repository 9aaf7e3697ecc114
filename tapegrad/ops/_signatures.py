"""torch's Python signatures of its two-operand functions, for their number operands: torch's argument parser takes a
Python number only where a signature has a `Number` (its C++ `Scalar`), and the function form's first argument must be
a Tensor (`torch.atan2(t, 2)`, `torch.eq(2, t)` raise; `t + 2`, `2 - t`, `t.eq(2)` do not). A front-end declares
torch's signatures (their text, as torch prints them) and checks them only off its hot paths, when an operand is not a
Tensor (`Signatures.check`); `takes_number(position)` says, once at declaration, whether a hot path may take a number
there. Operands that are neither Tensors nor numbers (lists, arrays, None) are not judged here."""
import numbers

import numpy as np

from ..tensor import Tensor


def _kind(v):
    if isinstance(v, Tensor):
        return "Tensor"
    if isinstance(v, (numbers.Number, np.bool_)):
        return "Number"
    return None


def _type_name(v):
    """The name torch's messages give a Python value's type (`int`, `Tensor`, `numpy.float64`)."""
    tp = type(v)
    return f"numpy.{tp.__name__}" if tp.__module__ == "numpy" else tp.__name__


def _takes(param, value):
    """Whether a positional parameter of this type takes this value (as torch's parser)."""
    if param == "Tensor":
        return isinstance(value, Tensor)
    if param == "Number":
        return _kind(value) == "Number"
    if param == "int":
        return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if param == "bool":
        return isinstance(value, (bool, np.bool_))
    return False


class _Signature:
    __slots__ = ("text", "positional", "required", "count", "keywords")

    def __init__(self, text):
        self.text = text
        params = [p.strip() for p in text[1:-1].split(",") if p.strip()]
        self.keywords = "*" in params
        self.positional = []  # (type, name, has a default) of each parameter before `*`
        for p in params:
            if p == "*":
                break
            declared, _, default = p.partition(" = ")
            typ, name = declared.rsplit(" ", 1)
            self.positional.append((typ, name, bool(default)))
        self.required = sum(1 for _, _, d in self.positional if not d)
        self.count = len([p for p in params if p != "*"])  # (all of them: torch's parser counts keyword ones too)

    def takes(self, args):
        if not self.required <= len(args) <= len(self.positional):
            return False
        return all(_takes(typ, a) for (typ, _, _), a in zip(self.positional, args))


class Signatures:
    """torch's signatures of function `name` (the name its messages give: `special_zeta`), each as torch prints it,
    e.g. "(Tensor input, Number other, *, Tensor out = None)". `method`: the Tensor method's parser (self is not an
    argument: positions count from other)."""

    def __init__(self, name, *texts, method=False):
        self.name, self.method = name, method
        self.signatures = tuple(_Signature(t) for t in texts)

    def as_method(self):
        return Signatures(self.name, *(s.text for s in self.signatures), method=True)

    def takes_number(self, position):
        """Whether some signature takes a number at this position (0: input)."""
        return any(len(s.positional) > position and s.positional[position][0] == "Number" for s in self.signatures)

    def check(self, *args):
        """Raise torch's TypeError where no signature takes these positional arguments (Tensors and numbers)."""
        kinds = [_kind(a) for a in args]
        if None in kinds or any(s.takes(args) for s in self.signatures):
            return
        raise TypeError(self.message(args))

    def message(self, args):
        n = len(args) - (1 if self.method else 0)
        plausible = [s for s in self.signatures if s.required <= n + (1 if self.method else 0) <= s.count]
        if len(plausible) == 1:  # torch parses with that signature, and names the first argument it refuses
            s = plausible[0]
            for i, ((typ, name, _), a) in enumerate(zip(s.positional, args)):
                if not _takes(typ, a):
                    position = i if self.method else i + 1
                    return f"{self.name}(): argument '{name}' (position {position}) must be {typ}, not {_type_name(a)}"
        got = ", ".join(_type_name(a) for a in args)
        lines = [f"{self.name}() received an invalid combination of arguments - got ({got}), but expected one of:"]
        for s in self.signatures:
            lines.append(f" * {s.text}")
            if not s.keywords and s.count == len(args):  # (torch's note; it marks a number even where a Number is due)
                marked = ", ".join(_type_name(a) if typ == "Tensor" and isinstance(a, Tensor) else f"!{_type_name(a)}!"
                                   for (typ, _, _), a in zip(s.positional, args))
                lines.append(f"      didn't match because some of the arguments have invalid types: ({marked})")
        return "\n".join(lines) + "\n"


_BINARY = "(Tensor input, Tensor other, *, Tensor out = None)"
_NUMBER_OTHER = "(Tensor input, Number other, *, Tensor out = None)"


def tensors_only(name, other="other"):
    """A function of two Tensors only (`atan2`, `maximum`)."""
    return Signatures(name, f"(Tensor input, Tensor {other}, *, Tensor out = None)")


def number_other(name):
    """Tensor op Tensor or Tensor op Number (`eq`, `fmod`, `copysign`)."""
    return Signatures(name, _BINARY, _NUMBER_OTHER)


def number_either(name, other="other", out_for_number_self=True):
    """Tensor op Tensor, Number op Tensor or Tensor op Number, not two numbers (`pow`, `xlogy`, `bitwise_and`)."""
    out = ", *, Tensor out = None" if out_for_number_self else ""
    return Signatures(name, f"(Tensor input, Tensor {other}, *, Tensor out = None)", f"(Number self, Tensor {other}{out})",
                      f"(Tensor input, Number {other}, *, Tensor out = None)")
