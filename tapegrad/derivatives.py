"""Reverse-mode differentiation of the registry's derivative expressions, by their syntax trees: the rules of
create_graph's derived ops (create_graph.py, "fused derivative rows"). An elementwise op's derivative that reads
two tensors (`g * (1 - y * y)`: g and y) becomes a binary op `a * (1 - b * b)` whose own two derivatives are
found here.

`python -m tapegrad.derivatives --write` stores every rule in derived_rules.py, keyed by the expression, so
that importing tapegrad does no symbolic work (tests/test_generators.py checks it is current); an expression
missing there (an op added since) is derived when its op is declared. Imports only the op table."""
import ast
import pathlib
import sys

from . import registry

TARGET = pathlib.Path(__file__).with_name("derived_rules.py")


class NotFusable(Exception):
    pass


# d/du of the functions the registry's expressions use, in `u`; sign is piecewise constant (no derivative);
# where, _select and _with_input are differentiated by their structure
_CHAIN = {"exp": "exp(u)", "log": "1 / u", "sqrt": "1 / (2 * sqrt(u))", "sin": "cos(u)", "cos": "-sin(u)",
          "sinh": "cosh(u)", "cosh": "sinh(u)", "sigmoid": "sigmoid(u) * (1 - sigmoid(u))",
          "erf": "1.1283791670955126 * exp(-(u * u))"}
FUNCTIONS = frozenset(_CHAIN) | {"sign", "where", "_select", "_with_input"}


def template(text, **subs):
    """An expression node from a template, its names replaced by the given nodes."""
    class Substitute(ast.NodeTransformer):
        def visit_Name(self, node):
            return subs.get(node.id, node)
    return Substitute().visit(ast.parse(text, mode="eval").body)


def _vjp_terms(node, var, G):
    """The terms of G * d(node)/d(var), as expression nodes ([] when node does not depend on var other than
    through a condition)."""
    if isinstance(node, ast.Name):
        return [G] if node.id == var else []
    if isinstance(node, (ast.Constant, ast.Compare, ast.BoolOp)):
        return []
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _vjp_terms(node.operand, var, template("-G", G=G) if isinstance(node.op, ast.USub) else G)
    if isinstance(node, ast.BinOp):
        u, v, op = node.left, node.right, node.op
        if isinstance(op, (ast.BitAnd, ast.BitOr)):  # (of comparisons: a condition)
            return []
        if isinstance(op, ast.Add):
            return _vjp_terms(u, var, G) + _vjp_terms(v, var, G)
        if isinstance(op, ast.Sub):
            return _vjp_terms(u, var, G) + _vjp_terms(v, var, template("-G", G=G))
        if isinstance(op, ast.Mult):
            return _vjp_terms(u, var, template("G * v", G=G, v=v)) + _vjp_terms(v, var, template("G * u", G=G, u=u))
        if isinstance(op, ast.Div):
            return (_vjp_terms(u, var, template("G / v", G=G, v=v))
                    + _vjp_terms(v, var, template("-G * u / (v * v)", G=G, u=u, v=v)))
        if isinstance(op, ast.Pow):
            return (_vjp_terms(u, var, template("G * (v * u ** (v - 1))", G=G, u=u, v=v))
                    + _vjp_terms(v, var, template("G * u ** v * log(u)", G=G, u=u, v=v)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        name, args = node.func.id, node.args
        if name in ("where", "_select") and len(args) == 3:
            cond, p, q = args
            return (_vjp_terms(p, var, template(f"{name}(k, G, 0 * G)", k=cond, G=G))
                    + _vjp_terms(q, var, template(f"{name}(k, 0 * G, G)", k=cond, G=G)))
        if name == "_with_input" and len(args) == 2:  # v, with a zero derivative for its input (registry)
            return _vjp_terms(args[0], var, G) + _vjp_terms(args[1], var, template("0 * G", G=G))
        if name == "sign":
            return []
        if name in _CHAIN and len(args) == 1:
            return _vjp_terms(args[0], var, template(f"G * ({_CHAIN[name]})", G=G, u=args[0]))
    raise NotFusable(ast.unparse(node))


def _vjp_expression(expr, var):
    """g * d(expr)/d(var) as an expression string (g: the adjoint), or None where expr reads var only in a
    condition."""
    terms = _vjp_terms(ast.parse(expr, mode="eval").body, var, ast.Name("g", ast.Load()))
    if not terms:
        return None
    total = terms[0]
    for t in terms[1:]:
        total = ast.BinOp(total, ast.Add(), t)
    return ast.unparse(total)


def _tensor_names(expr):
    tree = ast.parse(expr, mode="eval")
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    if calls - FUNCTIONS:
        raise NotFusable(expr)
    return sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - calls - {"c", "c2"})


def derive(d):
    """(its two tensors' names, the expression in a and b, d/da, d/db) of a derivative expression d that reads
    exactly two tensors and whose own derivatives are known; None for any other."""
    try:
        names = _tensor_names(d)
        if len(names) != 2:
            return None  # (one tensor: the rule is a row already; three: evaluated op by op)
        expr = registry._subst(d, {names[0]: "a", names[1]: "b"})
        da, db = _vjp_expression(expr, "a"), _vjp_expression(expr, "b")
    except NotFusable:
        return None
    if da is None or db is None:
        return None  # (an input read only in a condition: no gradient, as op by op; not a binary op's)
    return tuple(names), expr, da, db


def source():
    from .create_graph import DERIVED_NAMES  # (a generator's run: every op declared, the derived ones known)
    exprs = sorted({d for op in registry.OPS if op.kind in (registry.K_UNARY, registry.K_BINARY)
                    and op.name not in DERIVED_NAMES for d in op.derivs})
    lines = ['"""Generated by `python -m tapegrad.derivatives --write`: each elementwise derivative expression of the',
             "op table -> (its two tensors, the expression in a and b, d/da, d/db), or None where it is not a derived op.",
             'Do not edit by hand."""', "RULES = {"]
    lines += [f"    {d!r}: {derive(d)!r}," for d in exprs]
    return "\n".join(lines + ["}", ""])


def main(argv=None):
    from .kernels.codegen import generator_main
    return generator_main(argv, "python -m tapegrad.derivatives", "Check (default) or regenerate (--write) "
                          "tapegrad/derived_rules.py from the op table's derivative expressions.", TARGET, source)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
