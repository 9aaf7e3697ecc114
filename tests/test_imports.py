"""Imports run one way: from the shared state and the op table at the bottom, up through the kernels, tape,
Tensor, ops, replay, autograd, methods and trace, to nn/optim/utils and `__init__` (README, "Layout").

No module-level import cycle inside the package, and an import inside a function only where one of the
reasons below says why (start-up time, or a call up the layering that a module-level import would make a
cycle)."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "tapegrad"

# A function-level import is allowed when the module it imports is...
LAZY_TARGETS = {
    "tapegrad.kernels": "Numba: the compiled kernels load on first use, never at `import tapegrad`",
    "tapegrad.distributed": "MPI: loaded by the first distributed call",
    "tapegrad.serialization": "torch.save / torch.load: loaded on first use",
    "tapegrad.multiprocessing": "Python's multiprocessing and shared memory: loaded by the first share_memory_",
    "tapegrad._torch_alias": "the launcher's `import torch` alias: loaded on first use",
    "tapegrad.rule_reads": "the analysis of a rule's source: only for an op declared since rule_saves.py was "
                           "generated",
    "tapegrad.distributions": "torch.distributions: its modules load on first use (`import tapegrad` stays fast)",
    "tapegrad.derivatives": "the symbolic differentiation of a derivative expression: only for an op declared "
                            "since derived_rules.py was generated",
}
# ...or when the importing module is a command that imports what it runs...
COMMANDS = {"tapegrad.docs_ops", "tapegrad.kernels.codegen", "tapegrad.rule_reads", "tapegrad.derivatives",
            "tapegrad.demo",
            "tapegrad.__main__"}
# ...or one of these calls up the layering, resolved at call time (each would close a cycle at module level).
CALLS_UP = {
    ("tapegrad.tensor", "tapegrad.ops"): "Tensor sits below the ops: its few methods that call an op (dim "
                                         "checks, clone, to)",
    ("tapegrad.tensor", "tapegrad.autograd"): "Tensor.backward calls the autograd API",
    ("tapegrad.autograd.gradcheck", "tapegrad.func"): "check_batched_grad's vmap (torch.func's transforms call the "
                                                      "autograd API)",
    ("tapegrad.tensor", "tapegrad.autograd.graph"): "Tensor.grad_fn builds the API's node view",
    ("tapegrad.ops.reduce", "tapegrad.ops.shape"): "reduce and shape call each other (max along a dim is a "
                                                    "gather; shape's expand_as is reduce's expand)",
    ("tapegrad.ops.conv", "tapegrad.ops"): "a layer composes ops of the package that imports it",
    ("tapegrad.ops.padding", "tapegrad.ops"): "padding composes ops of the package that imports it",
    ("tapegrad.ops.out", "tapegrad.ops"): "out= wraps the package's public ops by name",
    ("tapegrad.optim.optimizer", "tapegrad"): "optimizers call the package's public ops (torch.X)",
    ("tapegrad.autograd.profiler", "tapegrad"): "the profiler's table of the package's public ops (torch.X, "
                                                "nn.functional, Tensor methods), built at the first profile",
    ("tapegrad.nn.modules.transformer", "tapegrad.nn"): "a layer built of the package's other layers",
    ("tapegrad.nn.modules.module", "tapegrad.tracing"): "Module.compile wraps its call in tapegrad.compile, which "
                                                        "traces Modules",
    ("tapegrad.utils.data._worker", "tapegrad"): "a DataLoader worker process imports the package",
    ("tapegrad.serialization", "tapegrad.nn.modules.module"): "torch.save of a Module (serialization sits "
                                                              "below nn: torch.save is tapegrad.save)",
    ("tapegrad.serialization", "tapegrad.nn.parameter"): "torch.load of a Parameter",
}
# Distributions call the package's public functions (torch.X), as torch's own distributions do.
CALLS_UP_FROM = {"tapegrad.distributions": "a distribution calls the package's public functions (torch.X), "
                                           "as torch's own do; the package imports distributions"}


def _modules():
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(modules):
    """(importer, imported module, line, at module level) for every import of a tapegrad module."""
    found = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())

        def visit(node, in_function):
            for child in ast.iter_child_nodes(node):
                inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.ImportFrom) and child.level:
                    base = package.split(".")
                    base = ".".join(base[:len(base) - child.level + 1])
                    target = base + ("." + child.module if child.module else "")
                    for alias in child.names:
                        sub = f"{target}.{alias.name}"
                        found.append((name, sub if sub in modules else target, child.lineno, not in_function))
                elif isinstance(child, ast.Import):
                    for alias in child.names:
                        if alias.name.split(".")[0] == "tapegrad":
                            found.append((name, alias.name, child.lineno, not in_function))
                visit(child, inner)
        visit(tree, False)
    return found


def _reason(importer, target):
    for lazy, why in LAZY_TARGETS.items():
        if target == lazy or target.startswith(lazy + "."):
            return why
    if importer in COMMANDS:
        return "a command imports what it runs"
    if (importer, target) in CALLS_UP:
        return CALLS_UP[(importer, target)]
    for prefix, why in CALLS_UP_FROM.items():
        if importer.startswith(prefix + "."):
            return why
    return None


def test_no_module_level_import_cycle():
    modules = _modules()
    edges = {m: set() for m in modules}
    for importer, target, _, top in _imports(modules):
        if not top or target not in modules or importer.startswith(target + "."):
            continue  # (a submodule depends on its own package anyway: importing it runs the package first)
        edges[importer].add(target)
        parts = target.split(".")  # importing a submodule runs its packages' __init__ first
        for k in range(2, len(parts)):
            parent = ".".join(parts[:k])
            if not (importer == parent or importer.startswith(parent + ".")):
                edges[importer].add(parent)
    # Tarjan's strongly connected components
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))
    for v in modules:
        if v not in index:
            connect(v)
    assert not cycles, f"module-level import cycles: {cycles}"


def test_function_level_imports_have_a_reason():
    unexplained = sorted({f"{importer} -> {target} (line {line})" for importer, target, line, top
                          in _imports(_modules()) if not top and _reason(importer, target) is None})
    assert not unexplained, ("import at module level, or add the reason to tests/test_imports.py: "
                             + "; ".join(unexplained))


def test_every_stated_reason_is_still_needed():
    used = {(importer, target) for importer, target, _, top in _imports(_modules()) if not top}
    stale = [pair for pair in CALLS_UP if pair not in used]
    assert not stale, f"reasons for imports that are gone: {stale}"


def test_the_bottom_imports_nothing_above_it():
    """The op table, grad mode, the dtype table, where warnings point, NumPy's bundled OpenBLAS (_openblas.py,
    which kernels/blas.py and ops/decompositions.py share) and Cephes' Bessel coefficients (_cephes.py, which
    ops/special.py and kernels/special_functions.py share) import no other tapegrad module but the op table's own
    derived data (rule_saves.py and derived_rules.py, which import none; rule_reads.py and derivatives.py for an op
    missing there) and grad mode's warnings (_warnings.py)."""
    allowed = {"registry": {"rule_saves", "rule_reads", "RULES", "derive"}, "grad_mode": {"user_stacklevel"}}
    for name in ("registry", "grad_mode", "_dtype", "rule_saves", "rule_reads", "_warnings", "_openblas", "_cephes"):
        tree = ast.parse((ROOT / f"{name}.py").read_text())
        inner = {alias.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level
                 for alias in n.names}
        top_level = {alias.name for n in tree.body if isinstance(n, ast.Import) for alias in n.names
                     if alias.name.startswith("tapegrad")}
        assert inner <= allowed.get(name, set()) and not top_level, f"{name}.py imports {inner | top_level}"


def test_openblas_search_is_one_numba_free_module():
    """NumPy's bundled OpenBLAS is searched for in one place (_openblas.py), which imports no Numba (ops/decompositions.py
    calls it at `import tapegrad`'s level; kernels/blas.py, which imports Numba, calls it too)."""
    tree = ast.parse((ROOT / "_openblas.py").read_text())
    imported = {alias.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for alias in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"ctypes", "glob", "os", "numpy"}, imported
    for path in ROOT.rglob("*.py"):
        if path.name != "_openblas.py":
            assert "openblas64*" not in path.read_text(), f"{path} searches for NumPy's OpenBLAS itself"
