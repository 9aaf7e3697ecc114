"""F.interpolate / nn.Upsample on integer input, as torch 2.13 has it: uint8 images resample by nearest and
nearest-exact (1-d, 2-d, 3-d; values and dtype equal torch's), every other integer or bool dtype, and uint8 in the
modes that average, get torch's NotImplementedError with its message."""
import numpy as np
import pytest
import torch

import tapegrad as tg

LIBS = (torch, tg)


def _both(fn, shape, dtype="uint8", seed=0):
    values = np.random.default_rng(seed).integers(0, 256, shape).astype(dtype)
    return [fn(lib, lib.tensor(values)) for lib in LIBS]


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("shape,kwargs", [
    ((2, 3, 7), {"scale_factor": 2}), ((1, 2, 7), {"size": 4}), ((1, 1, 5), {"scale_factor": 1.7}),
    ((2, 3, 4, 5), {"scale_factor": 2}), ((1, 3, 7, 5), {"size": (3, 9)}), ((1, 1, 6, 6), {"scale_factor": (0.5, 1.5)}),
    ((1, 2, 3, 4, 5), {"scale_factor": 2}), ((1, 1, 4, 5, 3), {"size": (2, 7, 5)})])
def test_uint8_nearest_equals_torch(mode, shape, kwargs):
    theirs, ours = _both(lambda lib, x: lib.nn.functional.interpolate(x, mode=mode, **kwargs), shape)
    assert str(ours.dtype) == str(theirs.dtype) == "torch.uint8"
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_upsample_module_on_uint8():
    theirs, ours = _both(lambda lib, x: lib.nn.Upsample(scale_factor=3, mode="nearest")(x), (1, 3, 4, 4))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


_REFUSED = [(mode, nd, dtype) for dtype in ("int8", "int16", "int32", "int64", "bool")
            for mode, nd in (("nearest", 1), ("nearest", 2), ("nearest", 3), ("nearest-exact", 2),
                             ("nearest-exact", 3), ("linear", 1), ("bilinear", 2), ("bicubic", 2), ("trilinear", 3),
                             ("area", 1), ("area", 2), ("area", 3))]
_REFUSED += [("linear", 1, "uint8"), ("trilinear", 3, "uint8"), ("area", 2, "uint8"), ("area", 3, "uint8")]


@pytest.mark.parametrize("mode,nd,dtype", _REFUSED)
def test_refused_integer_input_raises_torchs_error(mode, nd, dtype):
    shape = (1, 2) + (4,) * nd
    values = np.ones(shape, dtype)
    messages = []
    for lib in LIBS:
        with pytest.raises(NotImplementedError) as err:
            lib.nn.functional.interpolate(lib.tensor(values), scale_factor=2, mode=mode)
        messages.append(str(err.value))
    assert messages[1] == messages[0]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_on_integer_input_raises_torchs_error(mode):
    messages = []
    for lib in LIBS:
        with pytest.raises(NotImplementedError) as err:
            lib.nn.functional.interpolate(lib.ones(1, 1, 4, 4, dtype=lib.int64), size=(2, 3), mode=mode,
                                          antialias=True)
        messages.append(str(err.value))
    assert messages[1] == messages[0]
