"""What a backward rule reads, derived from its source (tapegrad/rule_reads.py): the values an op's row keeps
for its backward. Missing a read would let the tape release a value the rule then reads as NaN (a silent
wrong gradient), so whatever the analysis cannot follow must count as reading every input."""
import numpy as np

from tapegrad import rule_reads
from tapegrad.registry import BY_NAME

ALL, OUT = rule_reads.ALL, rule_reads.OUT


def unpacked(ctx, g, inputs, out):
    x, t = inputs
    return g * x, -g * t.shape[0]        # t: its shape only


def indexed(ctx, g, inputs, out):
    w = inputs[1]
    return None, g * w, g * inputs[2]


def shapes_only(ctx, g, inputs, out):
    x, = inputs
    return (np.zeros(x.shape, x._data.dtype) + g.sum() * len(x) + (x is None),)


def reads_out(ctx, g, inputs, out):
    return (g * out,)


def _helper(ctx, g, arrays, result, wanted):
    return (g * arrays[2] * result,)


def hands_on(ctx, g, inputs, out, wanted):
    return _helper(ctx, g, inputs, out, wanted)


def iterates(ctx, g, inputs, out):
    return tuple(g * x for x in inputs)


def by_variable_index(ctx, g, inputs, out):
    return (g * inputs[ctx.k],)


def test_the_reads_each_form_of_rule_makes():
    assert rule_reads.saves(unpacked) == 1
    assert rule_reads.saves(indexed) == 2 | 4
    assert rule_reads.saves(shapes_only) == 0
    assert rule_reads.saves(reads_out) == OUT
    assert rule_reads.saves(None, hands_on) == 4 | OUT    # followed into the helper it hands them to
    assert rule_reads.saves(None, lambda ctx, g, inputs, out, wanted: (g * inputs[1],)) == 2


def test_what_it_cannot_follow_reads_everything():
    assert rule_reads.saves(iterates) == ALL
    assert rule_reads.saves(by_variable_index) == ALL
    two_on_a_line = [lambda ctx, g, inputs, out: inputs[0], lambda ctx, g, inputs, out: inputs[1]]
    assert rule_reads.saves(two_on_a_line[0]) == ALL | OUT   # ambiguous source: assume the worst
    assert rule_reads.saves(eval("lambda ctx, g, inputs, out: g")) == ALL | OUT   # no source


def test_the_ops_rules_read_what_the_derivation_says():
    """Spot checks on real rules: conv's create_graph rule reads its input (columns serve the plain one),
    softmax reads only its output, a sum reads nothing."""
    assert BY_NAME["conv"].saves & 3 == 3
    assert BY_NAME["softmax"].saves == OUT
    assert BY_NAME["sum"].saves == 0 and BY_NAME["mse_loss"].saves == 3
