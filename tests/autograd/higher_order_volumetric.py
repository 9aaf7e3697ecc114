"""3-d pooling rows (tapegrad/ops/volumetric.py): third derivatives through the pools' backward rows."""

CASES = [
    (("max_pool3d", lambda T, x: T.nn.functional.max_pool3d(x, 2, 1, 1) ** 2, [(1, 2, 3, 4, 3)]), {}),
    (("avg_pool3d", lambda T, x: T.nn.functional.avg_pool3d(x, 2, 1, 1, count_include_pad=False) ** 3,
      [(1, 2, 3, 4, 3)]), {}),
    (("adaptive_max_pool3d", lambda T, x: T.nn.functional.adaptive_max_pool3d(x, (2, 3, 2)) ** 2,
      [(1, 2, 3, 5, 4)]), {}),
    (("max_unpool3d", lambda T, x: T.nn.functional.max_unpool3d(
        *T.nn.functional.max_pool3d(x, 2, return_indices=True), 2) ** 2, [(1, 2, 4, 4, 2)]), {}),
]
