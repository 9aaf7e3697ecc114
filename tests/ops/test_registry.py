"""The op table is complete: every opcode carries what the compiled replay, create_graph, tapegrad.compile,
the docs and the tests read from it, so that adding an op is one declaration beside its front-end (and a
test row)."""
import pathlib

import numpy as np
import pytest
from optable import arrays, differentiable, flat_outputs, grads, seeds_for, tensors
from test_ops_table import CASES

import tapegrad
from tapegrad import registry, tape as tape_mod
from tapegrad.create_graph import DERIVED_NAMES

OPS = [op for op in registry.OPS if op.name not in ("const", "freed")]
ROOT = pathlib.Path(__file__).resolve().parents[2]
# Rows the engine makes itself, not a front-end: a program that records each (run on a tape of its own).
def _leaf2x3():
    return tapegrad.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], requires_grad=True)


def _grad_of_gather():  # a gather's adjoint under create_graph
    a = _leaf2x3()
    return tapegrad.autograd.grad((a[:, 1:] ** 2).sum(), a, create_graph=True)


def _grad_of_broadcast():  # a broadcast's adjoint under create_graph
    a, b = _leaf2x3(), tapegrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    return tapegrad.autograd.grad(((a * b) ** 2).sum(), b, create_graph=True)


class _Pair(tapegrad.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2, a * 3

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 * 2 + g2 * 3


class _Once(tapegrad.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    @tapegrad.autograd.function.once_differentiable
    def backward(ctx, g):
        return g * 2


def _once_under_create_graph():
    a, v = _leaf2x3(), tapegrad.ones(2, 3, requires_grad=True)
    return tapegrad.autograd.grad(_Once.apply(a), a, grad_outputs=v, create_graph=True)


def _ctc_under_create_graph():
    x = tapegrad.randn(4, 1, 3, requires_grad=True)
    loss = tapegrad.nn.functional.ctc_loss(x.log_softmax(2), tapegrad.tensor([[1, 2]]), [4], [2])
    return tapegrad.autograd.grad(loss, x, create_graph=True)


def _compiled_call():
    f = tapegrad.compile(lambda a: (a * a).sum())
    f(_leaf2x3())
    return f(_leaf2x3())


def _sparse_product():
    return tapegrad.sparse.mm(_leaf2x3().to_sparse(), tapegrad.ones(3, 2))


def _sparse_embedding():  # (its gradient is sparse, which the op table's dense comparison does not take: the torch
    # comparisons are tests/test_embedding_sparse.py)
    return tapegrad.nn.functional.embedding(tapegrad.tensor([0, 1]), _leaf2x3(), sparse=True)


def _write_through_views():
    """An in-place op through a view gives the base CopySlices; the other views read the base again
    (tests/reliability/test_views_inplace.py)."""
    h = _leaf2x3() * 2
    row, flat, whole = h[1], h.view(6), h.view(3, 2)
    row.mul_(3)
    flat.mul_(2)
    return h, row, flat, whole


MADE_BY_THE_ENGINE = {
    "leaf": lambda: _leaf2x3() * 2, "scatter_flat": _grad_of_gather, "sum_to_shape": _grad_of_broadcast,
    "function": lambda: _Pair.apply(_leaf2x3()), "function_output": lambda: _Pair.apply(_leaf2x3()),
    "delayed_error": _once_under_create_graph, "compiled": _compiled_call,
    "gather_flat": _sparse_product, "sparse_mm": _sparse_product, "ctc_loss_backward": _ctc_under_create_graph,
    "sparse_mul_dense": lambda: (_leaf2x3().detach().to_sparse() * _leaf2x3()).to_dense(),
    "no_derivative": lambda: tapegrad.smm(tapegrad.ones(2, 3).to_sparse(), _leaf2x3().t()),
    "copy_slices": _write_through_views, "copy_slices_view": _write_through_views, "as_strided": _write_through_views,
    "as_strided_view": _write_through_views, "embedding_sparse": _sparse_embedding,
}
# recorded on tapegrad.compile's private tape when it traces autograd.grad without create_graph (tests/test_trace.py::
# test_autograd_grad_inside_is_traced_and_replayed_with_each_calls_targets); a comparison recorded there
# (tests/test_compile_guards.py::test_a_mask_from_a_comparison_is_recomputed), a factory's random draw (::
# test_random_draws_advance_the_generator_as_eager_calls_do)
ON_A_PRIVATE_TAPE = {"traced_rule", "traced_compare", "traced_draw", "traced_value"}
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


def test_every_op_is_in_the_docs():
    doc = (ROOT / "docs" / "ops.md").read_text()
    missing = [op.name for op in OPS if op.kind != registry.K_LEAF and f"| `{op.name}` |" not in doc]
    assert not missing, "run `python -m tapegrad.docs_ops --write`"


def _recorded(program):
    """The op names a program records (on a tape of its own, which no earlier test has filled: a sweep there
    could move its rows), and what it returned (kept alive until the rows are read)."""
    saved, tape = tape_mod._local.tape, tape_mod.Tape()
    tape_mod._local.tape = tape
    try:
        out = program()
        return {registry.OPS[int(o)].name for o in tape.op[:tape.n]}, out
    finally:
        tape_mod._local.tape = saved


def _case_program(case):
    def program():
        xs = tensors(tapegrad, case, arrays(case, "float64" if "float64" in case.dtypes else case.dtypes[0]))
        return case.call(tapegrad, case.paths[0], xs)
    return program


def _case_gradient_program(case):
    """The case's forward and its gradient under create_graph, as test_ops_table's second-order check takes it:
    what records create_graph's derived rows (create_graph.py: `tanh_backward` for tanh's `g * (1 - y * y)`)."""
    def program():
        xs = tensors(tapegrad, case, arrays(case, "float64" if "float64" in case.dtypes else case.dtypes[0]))
        outs = differentiable(flat_outputs(case.call(tapegrad, case.paths[0], xs)))
        return grads(tapegrad, outs, xs, seeds_for(outs, np.random.default_rng(5)), create_graph=True)
    return program


def test_every_op_has_a_test_row():
    """Each op is recorded by at least one case of the op table (tests/ops/test_ops_table.py: values, grad_fn,
    gradients, finite differences and second order against torch; a derived op of create_graph by a case's
    gradient, which that second-order check differentiates), or is a row the engine makes itself
    (MADE_BY_THE_ENGINE names the test that meets it)."""
    seen = set()
    for case in CASES:
        seen |= _recorded(_case_program(case))[0]
    derived = set(DERIVED_NAMES)
    seen |= {d for d in derived if d.rsplit("_backward", 1)[0] in NO_FRONT_END}  # (no front-end records its base)
    for case in CASES:
        if derived - seen:
            seen |= _recorded(_case_gradient_program(case))[0]
    missing = sorted(op.name for op in OPS if op.name not in seen | NO_FRONT_END | set(MADE_BY_THE_ENGINE)
                     | ON_A_PRIVATE_TAPE)
    assert not missing, f"ops no table case records: {missing}"


def test_every_recorded_value_is_c_contiguous():
    """The compiled replay reads a row's value (an op's output, a constant an op saved) as a flat C-ordered
    array: a strided one (`np.cross` along an inner axis, a broadcast view) would give wrong adjoints silently.
    Each table case's rows, checked."""
    strided = {}
    for case in CASES:
        saved, tape = tape_mod._local.tape, tape_mod.Tape()
        tape_mod._local.tape = tape
        try:
            _case_program(case)()
            for i in range(tape.n):
                v = tape.values[i]  # (a released value's placeholder, a broadcast view of its shape, is not read)
                if isinstance(v, np.ndarray) and not v.flags.c_contiguous and i not in tape.released:
                    strided.setdefault(registry.OPS[int(tape.op[i])].name, set()).add(case.name)
        finally:
            tape_mod._local.tape = saved
    assert not strided, f"rows whose value is not C-contiguous (op: the cases recording it): {strided}"


@pytest.mark.parametrize("name", sorted(MADE_BY_THE_ENGINE))
def test_the_engines_own_rows_are_recorded_where_said(name):
    assert name in _recorded(MADE_BY_THE_ENGINE[name])[0]


def test_compile_fullgraph_names_an_ops_reason():
    x = tapegrad.ones(3, requires_grad=True)
    index = tapegrad.tensor([2, 0])

    def f(x):
        return x.scatter_add(0, index, x[:2] * 2).sum()

    with pytest.raises(Exception, match="scatter_add has no replay rule: it reads a tensor that is not one of its"):
        tapegrad.compile(f, fullgraph=True)(x)
    assert np.isfinite(tapegrad.compile(f)(x).item())


# Python rows whose plain backward has no rule on arrays, so it runs the Tensor rule under no_grad (about 3 µs a
# Tensor op). By design: a custom Function's backward is the user's Python; compile's own rows and CTC's
# gradient row only raise (no second derivative). Every other Python op has one (issue 20), and a new op must too
# (tests/ops/test_array_rules.py compares the last ones issue 20 gave one with their Tensor rules, bit for bit).
NO_ARRAY_RULE_BY_DESIGN = {"function", "function_output", "delayed_error", "traced_rule", "traced_compare",
                           "traced_draw", "traced_value", "ctc_loss_backward"}
NO_ARRAY_RULE_YET = set()


def test_every_python_rule_runs_on_arrays_in_a_plain_backward():
    missing = {op.name for op in OPS if op.kind == registry.K_PYTHON and op.array_vjp is None}
    assert missing <= NO_ARRAY_RULE_BY_DESIGN | NO_ARRAY_RULE_YET, (
        f"give these ops an array_vjp: {sorted(missing - NO_ARRAY_RULE_BY_DESIGN - NO_ARRAY_RULE_YET)}")
    assert not NO_ARRAY_RULE_YET - missing, f"these have one now: {sorted(NO_ARRAY_RULE_YET - missing)}"
