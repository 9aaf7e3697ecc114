"""Generate kernels/elementwise.py from the registry's derivative expressions.

Run `python -m tapegrad.kernels.codegen` after changing an elementwise op in registry.py;
tests/test_registry.py fails when the generated file is out of date.
"""
import pathlib
import re

from .. import registry

TARGET = pathlib.Path(__file__).with_name("elementwise.py")
HEADER = '''"""Adjoints of the elementwise ops. GENERATED from tapegrad/registry.py by
`python -m tapegrad.kernels.codegen`: do not edit by hand."""
from math import cos, cosh, exp, log, sin, sinh, sqrt  # noqa: F401

from numba import njit

from .memory import JIT
from .scalar import _select, _with_input, erf, power, sigmoid, sign, where  # noqa: F401
'''


def _compiled(expr):
    """`u ** (v - 1)` becomes power(u, v - 1), which multiplies for small integer exponents."""
    return re.sub(r"(\w+) \*\* \(([^()]*)\)", r"power(\1, \2)", expr)


def _loads(expr, names, index):
    return [f"{v} = {v.upper()}[{index[v]}]" for v in names if re.search(rf"\b{v}\b", expr)]


def _unary(ops):
    out = ["", "", "@njit(**JIT)", "def unary(op, X, Y, G, GX, c, c2):", "    n = G.size"]
    kw = "if"
    for op in ops:
        dx, = op.derivs
        out.append(f"    {kw} op == {op.code}:  # {op.name}")
        out.append("        for i in range(n):")
        for line in _loads(dx, ("x", "y", "g"), {"x": "i", "y": "i", "g": "i"}):
            out.append("            " + line)
        out.append(f"            GX[i] += {_compiled(dx)}")
        kw = "elif"
    return out


def _binary(ops):
    # Output element k = o * inner + j reads a[o * ao + j * aj] and b[o * bo + j * bj] (broadcasting as two
    # strides each), or a[IA[k]] and b[IB[k]] when the index maps IA, IB are given (kernels.runtime._split)
    out = ["", "", "@njit(**JIT)",
           "def binary(op, A, B, Y, G, GA, GB, IA, IB, outer, inner, ao, aj, bo, bj, need_a, need_b):",
           "    mapped = IA.size > 0"]
    kw = "if"
    for op in ops:
        da, db = op.derivs
        both = da + " " + db
        out.append(f"    {kw} op == {op.code}:  # {op.name}")
        out.append("        for o in range(outer):")
        out.append("            for j in range(inner):")
        out.append("                k = o * inner + j")
        out.append("                ia = IA[k] if mapped else o * ao + j * aj")
        out.append("                ib = IB[k] if mapped else o * bo + j * bj")
        for line in _loads(both, ("a", "b", "y", "g"), {"a": "ia", "b": "ib", "y": "k", "g": "k"}):
            out.append("                " + line)
        out.append(f"                if need_a:\n                    GA[ia] += {_compiled(da)}")
        out.append(f"                if need_b:\n                    GB[ib] += {_compiled(db)}")
        kw = "elif"
    return out


def source():
    unary = [op for op in registry.OPS if op.kind == registry.K_UNARY]
    binary = [op for op in registry.OPS if op.kind == registry.K_BINARY]
    return HEADER + "\n".join(_unary(unary) + _binary(binary)) + "\n"


if __name__ == "__main__":
    TARGET.write_text(source())
    print(f"wrote {TARGET}")
    # Numba's cache of runtime.py (which inlines these kernels) does not notice that they changed.
    for stale in [*(TARGET.parent / "__pycache__").glob("runtime.*.nb[ic]"),
                  *(TARGET.parent / "__pycache__").glob("elementwise.*.nb[ic]")]:  # scalar.py inlined too
        stale.unlink(missing_ok=True)
