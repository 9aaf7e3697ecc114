"""Generate kernels/elementwise.py from the derivative expressions of the elementwise ops in the registry.

Run `python -m tapegrad.kernels.codegen --write` after changing an elementwise op in ops/elementwise.py (without
`--write` it only checks; an unchanged file is never rewritten, so Numba's cache of it stays valid);
tests/test_engine.py fails when the generated file is out of date.
"""
import argparse
import pathlib
import re
import sys
import textwrap

from .. import registry

TARGET = pathlib.Path(__file__).with_name("elementwise.py")
HEADER = '''"""Adjoints of the elementwise ops. GENERATED from the op declarations (tapegrad/ops/elementwise.py) by
`python -m tapegrad.kernels.codegen`: do not edit by hand."""
from math import cos, cosh, exp, log, sin, sinh, sqrt  # noqa: F401

import numpy as np
from numba import njit
from numpy import uint64 as u64

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
    # strides each, kernels.runtime._split), or a[IA[k]] and b[IB[k]] when the index maps IA, IB are given;
    # c, c2: the row's scalar attributes (a derived op's, create_graph.py: pow_ts's rule reads its exponent)
    out = ["", "", "@njit(**JIT)",
           "def binary(op, A, B, Y, G, GA, GB, IA, IB, outer, inner, ao, aj, bo, bj, need_a, need_b, c, c2):",
           "    if IA.size == 0:",
           "        _strided(op, A, B, Y, G, GA, GB, outer, inner, ao, aj, bo, bj, need_a, need_b, c, c2)",
           "        return",
           "    # a broadcast two strides cannot say (rare): the inputs gathered by the maps, their adjoints made by the",
           "    # strided loops and added into place in the order of the elements, as a loop through the maps adds them",
           "    n = IA.size",
           "    A2, B2 = np.empty(n, A.dtype), np.empty(n, B.dtype)",
           "    for k in range(n):",
           "        A2[k] = A[IA[k]]",
           "        B2[k] = B[IB[k]]",
           "    GA2, GB2 = np.zeros(n, GA.dtype), np.zeros(n, GB.dtype)",
           "    _strided(op, A2, B2, Y, G, GA2, GB2, 1, n, 0, 1, 0, 1, need_a, need_b, c, c2)",
           "    for k in range(n):",
           "        if need_a:",
           "            GA[IA[k]] += GA2[k]",
           "        if need_b:",
           "            GB[IB[k]] += GB2[k]",
           "", "",
           "@njit(**JIT)",
           "def _strided(op, A, B, Y, G, GA, GB, outer, inner, ao, aj, bo, bj, need_a, need_b, c, c2):",
           "    # Each input's adjoint in a loop of its own, with unsigned positions, so that LLVM vectorizes it: a",
           "    # signed index costs a wraparound select per access, and a loop that may write both GA and GB is",
           "    # vectorized only where a runtime check finds their blocks apart, which an input that needs no",
           "    # adjoint's is not (the adjoint of x * a constant ran 5x slower than NumPy's). Each element's",
           "    # additions keep their order.",
           "    outer, inner, ao, aj, bo, bj = u64(outer), u64(inner), u64(ao), u64(aj), u64(bo), u64(bj)"]
    kw = "if"
    for op in ops:
        out.append(f"    {kw} op == {op.code}:  # {op.name}")
        for need, deriv, target, own in zip(("need_a", "need_b"), op.derivs, ("GA", "GB"), ("a", "b")):
            out.append(f"        if {need}:")
            out.append("            for o in range(outer):")
            out.append("                for j in range(inner):")
            out.append("                    k = o * inner + j")
            for v, pos, (po, pj) in (("a", "ia", ("ao", "aj")), ("b", "ib", ("bo", "bj"))):
                if v == own or re.search(rf"\b{v}\b", deriv):
                    out.append(f"                    {pos} = o * {po} + j * {pj}")
            for line in _loads(deriv, ("a", "b", "y", "g"), {"a": "ia", "b": "ib", "y": "k", "g": "k"}):
                out.append("                    " + line)
            out.append(f"                    {target}[i{own}] += {_compiled(deriv)}")
        kw = "elif"
    return out


def source():
    unary = [op for op in registry.OPS if op.kind == registry.K_UNARY]
    binary = [op for op in registry.OPS if op.kind == registry.K_BINARY]
    codes = ", ".join(f"{op.name!r}: {op.code}" for op in unary + binary)
    return (HEADER + "\n".join(_unary(unary) + _binary(binary)) + "\n\n\n"
            + "# The opcodes these kernels dispatch on (they follow the order the op modules declare their ops in):\n"
            + "# kernels.load() checks them against the registry, so a stale file raises instead of misrouting rows.\n"
            + "\n".join(textwrap.wrap("CODES = {" + codes + "}", 116, subsequent_indent="         ")) + "\n")


def write_if_changed(path, text):
    """Write text to path unless it already holds exactly that (an identical rewrite would still change
    the file's mtime, which tools such as Numba's cache take as a change); True if it wrote."""
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def generator_main(argv, prog, description, target, make_source, after_write=None):
    """The command line of a generator: check by default, write only with --write, --help writes nothing."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--write", action="store_true",
                        help=f"regenerate {target.name} (left untouched when already current)")
    args = parser.parse_args(argv)
    text = make_source()
    if not args.write:
        if target.exists() and target.read_text() == text:
            print(f"{target} is up to date")
            return 0
        print(f"{target} is out of date: run {prog} --write")
        return 1
    if write_if_changed(target, text):
        if after_write is not None:
            after_write()
        print(f"wrote {target}")
    else:
        print(f"{target} is up to date (not rewritten)")
    return 0


def _drop_runtime_cache():
    # Numba's cache of runtime.py (which inlines these kernels) does not notice that they changed.
    for stale in [*(TARGET.parent / "__pycache__").glob("runtime.*.nb[ic]"),
                  *(TARGET.parent / "__pycache__").glob("elementwise.*.nb[ic]")]:  # scalar.py inlined too
        stale.unlink(missing_ok=True)


def main(argv=None):
    return generator_main(argv, "python -m tapegrad.kernels.codegen", "Check (default) or regenerate (--write) "
                          "tapegrad/kernels/elementwise.py from the registry's derivatives.", TARGET, source,
                          _drop_runtime_cache)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
