"""Table rows for tapegrad/ops/volumetric.py: 3-d max / average / adaptive pooling and max unpooling (values,
dtypes, grad_fn names, gradients, finite differences and second order against torch)."""
from optable import A, Case

TF = ("top", "F")
F = ("F",)

CASES = [
    Case("max_pool3d", [A((2, 2, 4, 5, 4))], {"kernel_size": 2}, paths=TF),
    Case("max_pool3d", [A((2, 4, 5, 6))], {"kernel_size": (2, 3, 2), "stride": (1, 2, 1), "padding": (1, 1, 0),
                                           "dilation": (1, 1, 2), "ceil_mode": True}, paths=F, id="geometry"),
    Case("max_pool3d_with_indices", [A((1, 2, 3, 4, 5))], {"kernel_size": 2, "stride": 1, "padding": 1}, paths=F),
    Case("avg_pool3d", [A((2, 2, 4, 5, 4))], {"kernel_size": 2, "stride": 1, "padding": 1}, paths=F),
    Case("avg_pool3d", [A((2, 4, 5, 6))], {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                                           "count_include_pad": False}, paths=F, id="exclude_pad"),
    Case("avg_pool3d", [A((1, 2, 4, 5, 6))], {"kernel_size": (2, 3, 2), "divisor_override": 5}, paths=F,
         id="divisor"),
    Case("adaptive_avg_pool3d", [A((1, 2, 5, 4, 6))], {"output_size": (2, 3, None)}, paths=F),
    Case("adaptive_max_pool3d", [A((1, 2, 5, 4, 6))], {"output_size": (2, 3, 4)}, paths=F),
    Case("adaptive_max_pool3d_with_indices", [A((2, 5, 4, 3))], {"output_size": 2}, paths=F),
    Case("max_unpool3d", [A((1, 2, 4, 4, 6))], paths=("fn",), id="of_max_pool",
         fn=lambda L, x: L.nn.functional.max_unpool3d(*L.nn.functional.max_pool3d(x, 2, return_indices=True), 2)),
]
