"""What a Python op's backward rules read, found in their source: an op's `saves` (which input values, and
whether its output, the tape keeps for its backward) is derived here from `vjp(ctx, g, inputs, out)` and
`array_vjp(ctx, g, inputs, out, wanted)`, as an elementwise op's is from its expression, so the two cannot
disagree (a value the tape let go of reads as NaN). A use of a value's shape, dtype or size alone does not
count: a released value keeps them. Whatever the analysis cannot follow counts as reading every input.

`python -m tapegrad.rule_reads --write` stores every op's in rule_saves.py, so that no program pays for the
analysis (tests/test_generators.py checks it is current); the op table derives an op missing there when
first asked. Imports no other tapegrad module at module level."""
import ast
import inspect
import pathlib
import textwrap

ALL, OUT = 64, 128   # registry.SAVES_ALL, registry.SAVES_OUT
METADATA = {"shape", "dtype", "ndim", "size", "numel", "dim", "device", "requires_grad", "is_floating_point",
            "is_complex", "layout", "is_sparse", "_slot"}


def saves(*rules):
    """The saves bits of an op whose backward may run any of `rules` (None entries are skipped)."""
    bits = 0
    for rule in rules:
        if rule is not None:
            bits |= _reads(rule, set())
    return bits


def _reads(fn, seen, inputs_at=2, out_at=3):
    """Bits for fn, whose positional parameter `inputs_at` is the rule's inputs and `out_at` its output
    (None: not passed)."""
    key = (getattr(fn, "__code__", None), inputs_at, out_at)
    if key in seen:
        return 0
    seen.add(key)
    node = _parse(fn)
    if node is None:
        return ALL | (OUT if out_at is not None else 0)
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    inputs = params[inputs_at] if inputs_at is not None and inputs_at < len(params) else None
    out = params[out_at] if out_at is not None and out_at < len(params) else None
    parents = {child: parent for parent in ast.walk(node) for child in ast.iter_child_nodes(parent)}
    bound, followed = _bound(node, inputs)   # name -> the input index it holds
    bits = 0
    for name in ast.walk(node):
        if not (isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load)):
            continue
        if name.id == inputs:
            if name not in followed:
                bits |= _use_of_inputs(name, parents, fn, seen, out)
        elif name.id in bound and not _metadata_only(name, parents):
            bits |= 1 << bound[name.id] if bound[name.id] < 6 else ALL
        elif name.id == out and out is not None:
            if not _metadata_only(name, parents):
                bits |= _passed(name, parents, fn, seen, out, role="out")
    return bits


def _parse(fn):
    """The function's (or lambda's) AST node, or None where its source cannot be read unambiguously."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    code = fn.__code__
    params = list(code.co_varnames[:code.co_argcount])
    if code.co_name != "<lambda>":
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return None
        found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == code.co_name]
        return found[0] if len(found) == 1 else None
    found = []   # a lambda's source is the line(s) it is on: parse from each `lambda` to where it ends
    for start in [k for k in range(len(source)) if source.startswith("lambda", k)]:
        for end in range(len(source), start, -1):
            try:
                node = ast.parse(source[start:end], mode="eval").body
            except SyntaxError:
                continue
            if isinstance(node, ast.Lambda):
                if [a.arg for a in node.args.args] == params:
                    found.append(node)
                break
    return found[0] if len(found) == 1 else None


def _bound(node, inputs):
    """Names assigned from the inputs (`x, w = inputs`, `x = inputs[0]`, `x, w = inputs[0], inputs[1]`): name ->
    index, and the nodes so followed."""
    found, followed = {}, set()
    for stmt in ast.walk(node):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, ast.Tuple) and _is(value, inputs):
            if all(isinstance(t, ast.Name) for t in target.elts):
                found.update((t.id, k) for k, t in enumerate(target.elts))
                followed.add(value)
            continue
        pairs = (zip(target.elts, value.elts) if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                 and len(target.elts) == len(value.elts) else [(target, value)])
        for t, v in pairs:
            k = _index(v, inputs)
            if isinstance(t, ast.Name) and k is not None:
                found[t.id] = k
                followed.add(v.value)
    return found, followed


def _is(node, name):
    return isinstance(node, ast.Name) and node.id == name


def _index(node, inputs):
    """k where node is `inputs[k]` with a constant k >= 0."""
    if isinstance(node, ast.Subscript) and _is(node.value, inputs):
        s = node.slice
        if isinstance(s, ast.Constant) and isinstance(s.value, int) and s.value >= 0:
            return s.value
    return None


def _metadata_only(node, parents):
    """node is used for its shape, dtype or size only (x.shape, x._data.dtype, len(x), x is None)."""
    parent = parents.get(node)
    if isinstance(parent, ast.Attribute) and parent.attr == "_data":
        node, parent = parent, parents.get(parent)
    if isinstance(parent, ast.Attribute):
        return parent.attr in METADATA
    if isinstance(parent, ast.Call) and _is(parent.func, "len") and node in parent.args:
        return True
    return isinstance(parent, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in parent.ops)


def _use_of_inputs(name, parents, fn, seen, out):
    parent = parents.get(name)
    k = _index(parent, name.id)
    if k is not None:
        return 0 if _metadata_only(parent, parents) else (1 << k if k < 6 else ALL)
    if _metadata_only(name, parents):
        return 0
    return _passed(name, parents, fn, seen, out, role="inputs")


def _passed(name, parents, fn, seen, out, role):
    """The inputs (or output, whose name in fn is `out`) handed whole to another rule of the module: what that
    one reads."""
    call = parents.get(name)
    every = ALL if role == "inputs" else OUT
    if not (isinstance(call, ast.Call) and name in call.args and isinstance(call.func, ast.Name)):
        return every
    callee = fn.__globals__.get(call.func.id)
    if not inspect.isfunction(callee):
        return every
    position = call.args.index(name)
    if role == "inputs":
        out_arg = [k for k, a in enumerate(call.args) if out is not None and _is(a, out)]
        return _reads(callee, seen, position, out_arg[0] if out_arg else None)
    return _reads(callee, seen, None, position) & OUT


TARGET = pathlib.Path(__file__).with_name("rule_saves.py")


def source():
    """rule_saves.py's text: the derived saves of every op declared without them."""
    import tapegrad  # noqa: F401  (every op module declares its ops)
    from tapegrad.registry import OPS
    rows = "".join(f"    {op.name!r}: {saves(op.vjp, op.array_vjp)},\n" for op in OPS if op.declared_saves is None)
    return ('"""Generated by `python -m tapegrad.rule_reads --write` from each op\'s backward rules: the inputs\n'
            '(bit j) and whether the output (128) its backward reads; 64: every input. Do not edit."""\n'
            "SAVES = {\n" + rows + "}\n")


def main(argv=None):
    from tapegrad.kernels.codegen import generator_main
    return generator_main(argv, "python -m tapegrad.rule_reads", "Check (default) or regenerate (--write) "
                          "tapegrad/rule_saves.py, what each op's backward reads.", TARGET, source)


if __name__ == "__main__":
    raise SystemExit(main())
