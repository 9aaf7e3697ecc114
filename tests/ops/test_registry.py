"""The op table is complete: every opcode carries what the compiled replay, create_graph, tapegrad.compile,
the docs and the tests read from it, so that adding an op is one declaration beside its front-end (and a
test row)."""
import pathlib

import numpy as np
import pytest
from optable import arrays, tensors
from test_ops_table import CASES

import tapegrad
from tapegrad import registry, tape as tape_mod

OPS = [op for op in registry.OPS if op.name not in ("const", "freed")]
ROOT = pathlib.Path(__file__).resolve().parents[2]
# Rows the engine makes itself, never a front-end: what each stands for, and the test that meets it.
MADE_BY_THE_ENGINE = {
    "leaf": "a tensor that requires grad",
    "scatter_flat": "a gather's adjoint under create_graph (tests/autograd/test_create_graph.py)",
    "delayed_error": "a @once_differentiable backward under create_graph (tests/autograd/test_custom_function.py)",
    "traced_rule": "a gradient tapegrad.compile traces without create_graph (tests/test_trace.py)",
    "compiled": "an output of a tapegrad.compile'd call (tests/test_trace.py)",
    "function": "a custom autograd.Function (tests/autograd/test_custom_function.py)",
    "function_output": "a custom autograd.Function's further outputs (tests/autograd/test_custom_function.py)",
    "sum_to_shape": "a broadcast's adjoint under create_graph (tests/autograd/test_create_graph.py)",
    "gather_flat": "the values of a sparse tensor's entries (tests/ops/test_ops_scripts.py)",
    "sparse_mm": "sparse @ dense (tests/ops/test_ops_scripts.py)",
}
# A binary op's variant with a Python number where torch takes none (maximum, atan2), or that the front-end
# never needs (a number first, for a commutative op, is the number-second row).
NO_FRONT_END = {"add_st", "mul_st", "maximum_st", "maximum_ts", "minimum_st", "minimum_ts", "atan2_st", "atan2_ts"}


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_every_op_declares_its_name_rule_and_replay(op):
    assert op.grad_fn, "a torch grad_fn name"
    assert registry.BY_NAME[op.name] is op and registry.OPS[op.code] is op
    if op.kind == registry.K_LEAF:
        return
    # the derivative: an expression (compiled, and evaluated on Tensors under create_graph) or a vjp in ops
    if op.kind in (registry.K_UNARY, registry.K_BINARY):
        assert op.derivs and op.forward is not None and op.vjp is None
    else:
        assert callable(op.vjp), "a vjp written in tapegrad ops (create_graph records it)"
    # tapegrad.compile's replay: a forward on arrays, the kind's own, or the reason there is none
    if op.kind in (registry.K_PYTHON, registry.K_GATHER):
        assert callable(op.forward) != bool(op.unreplayable), (
            "a forward on arrays, or (only then) the reason it cannot be replayed")
    else:
        assert op.unreplayable is None


def test_an_op_cannot_be_declared_twice():
    with pytest.raises(ValueError, match="declared twice"):
        registry.python("softmax", "SoftmaxBackward0", None, None)


def test_the_registry_imports_no_other_tapegrad_module():
    source = (ROOT / "tapegrad" / "registry.py").read_text()
    assert "from ." not in source and "import tapegrad" not in source


def test_every_op_is_in_the_docs():
    doc = (ROOT / "docs" / "ops.md").read_text()
    missing = [op.name for op in OPS if op.kind != registry.K_LEAF and f"| `{op.name}` |" not in doc]
    assert not missing, "run `python -m tapegrad.docs_ops --write`"


def _recorded_ops(case):
    """The op names the tapegrad side of an op table case records (on a tape of its own, which no earlier test
    has filled: a sweep there could move its rows)."""
    saved, tape = tape_mod._local.tape, tape_mod.Tape()
    tape_mod._local.tape = tape
    try:
        xs = tensors(tapegrad, case, arrays(case, "float64" if "float64" in case.dtypes else case.dtypes[0]))
        out = case.call(tapegrad, case.paths[0], xs)
        return {registry.OPS[int(o)].name for o in tape.op[:tape.n]}, out
    finally:
        tape_mod._local.tape = saved


def test_every_op_has_a_test_row():
    """Each op is recorded by at least one case of the op table (tests/ops/test_ops_table.py: values, grad_fn,
    gradients, finite differences and second order against torch), or is a row the engine makes itself
    (MADE_BY_THE_ENGINE names the test that meets it)."""
    seen = set()
    for case in CASES:
        seen |= _recorded_ops(case)[0]
    missing = sorted(op.name for op in OPS if op.name not in seen | NO_FRONT_END | set(MADE_BY_THE_ENGINE))
    assert not missing, f"ops no table case records: {missing}"


def test_compile_fullgraph_names_an_ops_reason():
    x = tapegrad.ones(3, requires_grad=True)
    index = tapegrad.tensor([2, 0])

    def f(x):
        return x.index_select(0, index).sum()

    with pytest.raises(Exception, match="index_select has no replay rule: its index map is computed from the values"):
        tapegrad.compile(f, fullgraph=True)(x)
    assert np.isfinite(tapegrad.compile(f)(x).item())
