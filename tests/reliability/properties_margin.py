"""Property cases for the margin losses' rows (ops/metric_loss.py)."""


def _targets(L, x):
    """A class index per row of x, spread over its columns (a constant)."""
    return L.tensor([i % x.shape[1] for i in range(x.shape[0])])


def _labels(L, x):
    """Row i's targets: its first i % C + 1 classes in reverse order, then -1 (a constant)."""
    c = x.shape[1]
    rows = [[k for k in reversed(range(i % c + 1))] + [-1] * (c - i % c - 1) for i in range(x.shape[0])]
    return L.tensor(rows)


CASES = {
    "soft_margin_loss": lambda L, x, R: L.nn.functional.soft_margin_loss(x, R.const(x.shape), reduction="none"),
    "multi_margin_loss": lambda L, x, R: L.nn.functional.multi_margin_loss(x * 3, _targets(L, x), p=2,
                                                                           reduction="none"),
    "multilabel_margin_loss": lambda L, x, R: L.nn.functional.multilabel_margin_loss(x * 3, _labels(L, x),
                                                                                     reduction="none"),
}

NOT_RECORDED = {}
