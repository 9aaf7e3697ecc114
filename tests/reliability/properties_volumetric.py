"""Property cases for the 3-d pooling rows (tapegrad/ops/volumetric.py)."""


def _distinct(L, x):
    """x with its ties broken (a ramp far below the spacing of distinct values)."""
    return x + L.arange(x.numel(), dtype=x.dtype).reshape(x.shape) * 1e-6


def _F(L):
    return L.nn.functional


def _window(x):
    return (1, min(2, x.shape[0]), min(2, x.shape[1]))


CASES = {
    "max_pool3d": lambda L, x, R: _F(L).max_pool3d(_distinct(L, x)[None, None, None], _window(x), 1)[0, 0, 0],
    "avg_pool3d": lambda L, x, R: _F(L).avg_pool3d(x[None, None], _window(x), 1, (0, 1, 1))[0, 0],
    "adaptive_max_pool3d": lambda L, x, R: _F(L).adaptive_max_pool3d(_distinct(L, x)[None, None], (1, 2, 2))[0, 0, 0],
    "max_unpool3d": lambda L, x, R: _F(L).max_unpool3d(
        *_F(L).max_pool3d(_distinct(L, x)[None, None, None], _window(x), return_indices=True), _window(x),
        output_size=(1,) + tuple(x.shape))[0, 0, 0],
}
NOT_RECORDED = {}
