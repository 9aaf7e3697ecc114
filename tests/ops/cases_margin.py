"""Table rows for the margin losses' rows in tapegrad/ops/metric_loss.py (soft_margin_loss, multi_margin_loss,
multilabel_margin_loss): values, dtypes, grad_fn names, gradients against torch. torch has no double backward for
multi_margin / multilabel_margin (gg=False; tapegrad's second order: tests/nn/test_losses_lazy.py)."""
from optable import A, Case, I, V

F = ("F",)
SIGNS = [[1.0, -1.0, 1.0, -1.0], [-1.0, 1.0, 1.0, -1.0], [1.0, 1.0, -1.0, -1.0]]
LABELS = [[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 3]]
REPEATED = [[1, 1, -1, 0], [2, 2, 2, 2], [3, 0, 3, -1]]

CASES = [
    Case("soft_margin_loss", [A((3, 4)), V(SIGNS, grad=False)], paths=F),
    Case("soft_margin_loss", [A((3, 4)), V(SIGNS, grad=False)], {"reduction": "none"}, paths=F, id="none"),
    Case("soft_margin_loss", [A((3, 4)), V(SIGNS[0], grad=False)], {"reduction": "sum"}, paths=F, id="broadcast"),
    Case("multi_margin_loss", [A((3, 4)), V([0, 3, 1])], paths=F, gg=False),
    Case("multi_margin_loss", [A((3, 4)), V([2, 2, 0])], {"p": 2, "margin": 0.7, "reduction": "none"}, paths=F,
         gg=False, id="p2_none"),
    Case("multi_margin_loss", [A((3, 4)), V([1, 0, 3]), A((4,), "pos", grad=False)], {"reduction": "sum"}, paths=F,
         gg=False, id="weight", fn=lambda L, x, t, w: L.nn.functional.multi_margin_loss(x, t, weight=w,
                                                                                        reduction="sum")),
    Case("multi_margin_loss", [A((5,)), I((), 5)], paths=F, gg=False, id="vector"),
    Case("multilabel_margin_loss", [A((3, 4)), V(LABELS)], paths=F, gg=False),
    Case("multilabel_margin_loss", [A((3, 4)), V(LABELS)], {"reduction": "none"}, paths=F, gg=False, id="none"),
    Case("multilabel_margin_loss", [A((4,)), V([2, 0, -1, 3])], paths=F, gg=False, id="vector"),
    Case("multilabel_margin_loss", [A((3, 4)), V(REPEATED)], {"reduction": "sum"}, paths=F, gg=False, id="repeated"),
]
