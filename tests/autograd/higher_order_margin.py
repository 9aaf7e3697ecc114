"""The margin losses' rows (ops/metric_loss.py): soft_margin_loss against torch's own third derivative;
multi_margin_loss and multilabel_margin_loss, whose double backward torch does not implement, against the same
losses composed of torch ops."""
LABELS = [[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 3]]
SIGNS = [[1.0, -1.0, 1.0, -1.0], [-1.0, 1.0, 1.0, -1.0], [1.0, 1.0, -1.0, -1.0]]


def _multi_margin_composite(T, x, target, p, margin, reduction="mean"):
    t = T.tensor(target)
    z = (margin - x.gather(1, t[:, None]) + x).clamp_min(0) ** p
    z = z.masked_fill(T.arange(x.shape[1])[None, :] == t[:, None], 0)
    loss = z.sum(1) / x.shape[1]
    return loss.mean() if reduction == "mean" else loss


def _multilabel_composite(T, x, labels):
    t = T.tensor(labels)
    valid = (t >= 0).long().cumprod(1).bool()
    is_t = T.zeros(x.shape[0], x.shape[1] + 1, dtype=x.dtype).scatter(1, T.where(valid, t, x.shape[1]), 1.0)
    is_t = is_t[:, :-1]
    z = (1 - x[:, :, None] + x[:, None, :]).clamp_min(0) * is_t[:, :, None] * (1 - is_t)[:, None, :]
    return (z.sum((1, 2)) / x.shape[1]).mean()


CASES = [
    (("soft_margin_loss", lambda T, x: T.nn.functional.soft_margin_loss(x, T.tensor(SIGNS, dtype=T.float64)),
      [(3, 4)]), {}),
    (("multi_margin_loss", lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor([0, 3, 1]), p=2, margin=0.7),
      [(3, 4)]), {"torch_fn": lambda T, x: _multi_margin_composite(T, x, [0, 3, 1], 2, 0.7)}),
    (("multi_margin_loss_p1", lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor([2, 1, 1]),
                                                                               reduction="none"), [(3, 4)]),
     {"covers": ("multi_margin_loss",),
      "torch_fn": lambda T, x: _multi_margin_composite(T, x, [2, 1, 1], 1, 1.0, "none")}),
    (("multilabel_margin_loss", lambda T, x: T.nn.functional.multilabel_margin_loss(x, T.tensor(LABELS)), [(3, 4)]),
     {"torch_fn": lambda T, x: _multilabel_composite(T, x, LABELS)}),
]
EXEMPT = {}
