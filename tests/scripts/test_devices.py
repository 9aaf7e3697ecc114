"""torch.device, Tensor.device and .to, the CPU-only errors, the default device and dtype: against torch 2.13."""
import pickle

import numpy as np
import pytest
import torch

import tapegrad


def outcome(fn, lib):
    try:
        return "ok", fn(lib)
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e).__name__, str(e).split("\n")[0]


def same(fn):
    got, want = outcome(fn, tapegrad), outcome(fn, torch)
    assert got == want, (got, want)
    return got


DEVICE_CASES = [
    lambda t: repr(t.device("cpu")), lambda t: repr(t.device("cpu", 0)), lambda t: str(t.device("cpu:0")),
    lambda t: repr(t.device("cuda")), lambda t: repr(t.device("cuda:1")), lambda t: t.device("cuda:3").index,
    lambda t: t.device("cuda:3").type, lambda t: t.device("cpu").index, lambda t: repr(t.device("mps")),
    lambda t: repr(t.device(type="cpu", index=None)), lambda t: repr(t.device(t.device("cpu", 2))),
    lambda t: t.device("foo"), lambda t: t.device("CPU"), lambda t: t.device("cpu:x"), lambda t: t.device("cuda:-1"),
    lambda t: t.device("cpu:0:1"), lambda t: t.device(" cpu"), lambda t: t.device("cpu", -1),
    lambda t: t.device("cuda", "1"), lambda t: t.device(0),
    lambda t: t.device("cpu") == t.device("cpu"), lambda t: t.device("cpu") == t.device("cpu", 0),
    lambda t: t.device("cpu", 0) == t.device("cpu:0"), lambda t: t.device("cpu") == "cpu",
    lambda t: t.device("cpu") != t.device("cuda"), lambda t: len({t.device("cpu"), t.device("cpu"), t.device("cuda")}),
    lambda t: repr(pickle.loads(pickle.dumps(t.device("cuda", 1)))),
]


@pytest.mark.parametrize("case", range(len(DEVICE_CASES)))
def test_device_objects(case):
    same(DEVICE_CASES[case])


TENSOR_CASES = [
    lambda t: repr(t.zeros(2).device), lambda t: t.zeros(2).device == t.device("cpu"), lambda t: t.zeros(2).is_cpu,
    lambda t: t.zeros(2).is_cuda, lambda t: t.zeros(2).get_device(),
    lambda t: repr(t.zeros(2).to("cpu")), lambda t: repr(t.zeros(2).to(t.device("cpu"), t.float64)),
    lambda t: repr(t.zeros(2).to("cpu", t.int32)), lambda t: repr(t.zeros(2).to(device="cpu:0")),
    lambda t: repr(t.zeros(2).to(t.zeros(1, dtype=t.int64))), lambda t: repr(t.zeros(2).to(t.float64, True, True)),
    lambda t: repr(t.zeros(2).to("cpu", non_blocking=True, copy=True)),
    lambda t: (lambda x: x.to("cpu") is x)(t.zeros(2)), lambda t: (lambda x: x.to(t.float32) is x)(t.zeros(2)),
    lambda t: (lambda x: x.to(t.float32, copy=True) is x)(t.zeros(2)),
    lambda t: repr(t.zeros(2, device="cpu:1")), lambda t: repr(t.ones(2, device=t.device("cpu"))),
    # a device other than the CPU: torch's own (CPU build) errors, never a silent CPU tensor
    lambda t: t.zeros(2).to("cuda"), lambda t: t.zeros(2).cuda(), lambda t: t.zeros(2, device="cuda"),
    lambda t: t.tensor([1.0], device="cuda:0"), lambda t: t.randn(2, device="cuda"),
    lambda t: t.arange(3, device="cuda"),
    lambda t: t.zeros(2).to("mps"), lambda t: t.zeros(2).to("xpu"), lambda t: t.zeros(2, device="xpu"),
    lambda t: t.zeros(2).to(0), lambda t: t.nn.Linear(2, 2).to("cuda"), lambda t: t.nn.Linear(2, 2).cuda(),
    lambda t: repr(t.zeros_like(t.zeros(2), device="cpu")),
]


@pytest.mark.parametrize("case", range(len(TENSOR_CASES)))
def test_tensor_devices(case):
    same(TENSOR_CASES[case])


def test_to_keeps_gradients_flowing():
    for lib in (tapegrad, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.to("cpu", lib.float64) * 3
        y.sum().backward()
        assert x.grad.tolist() == [3.0, 3.0] and y.dtype == lib.float64


def test_default_device_and_its_context():
    def script(t):
        out = [repr(t.get_default_device())]
        with t.device("cpu"):
            out.append(repr(t.zeros(1).device))
        t.set_default_device("cuda")
        try:
            out.append(outcome(lambda t: t.zeros(1), t))
            out.append(outcome(lambda t: t.get_default_device(), t))
            out.append(repr(t.zeros_like(t.tensor([1.0], device="cpu")).device))  # the input's device
        finally:
            t.set_default_device(None)
        out.append(repr(t.zeros(1).device))
        with t.device("cuda"):
            out.append(outcome(lambda t: t.ones(2), t))
        out.append(repr(t.ones(2)))
        return out
    assert script(tapegrad) == script(torch)


def test_default_dtype_float64_reaches_the_factories():
    def script(t):
        before = t.get_default_dtype()
        t.set_default_dtype(t.float64)
        try:
            t.manual_seed(0)
            lin = t.nn.Linear(2, 2)
            return [repr(before), repr(t.get_default_dtype()), repr(t.tensor([1.5])), repr(t.zeros(1).dtype),
                    repr(t.arange(0.0, 2)), repr((t.arange(2) * 1.5).dtype), repr(t.Tensor(2).dtype),
                    repr(t.full((1,), 2.0)), repr(t.arange(2).sin().dtype), repr(t.tensor(1.0).float()),
                    repr(lin.weight.dtype), repr(t.rand(1).dtype), repr(t.randn(3)), repr(t.linspace(0, 1, 3)),
                    repr(t.eye(2).dtype), repr(t.tensor(2).dtype), repr(t.ones(1) + 1)]
        finally:
            t.set_default_dtype(t.float32)
    assert script(tapegrad) == script(torch)
    assert repr(tapegrad.tensor([1.5])) == "tensor([1.5000])"  # restored


def test_default_dtype_errors():
    same(lambda t: t.set_default_dtype(t.int64))
    same(lambda t: t.set_default_dtype(float))
    with pytest.raises(NotImplementedError, match="float16"):
        tapegrad.set_default_dtype(tapegrad.float16)
    assert tapegrad.get_default_dtype() is tapegrad.float32


def test_model_on_the_chosen_device_trains_as_under_torch():
    """The usual device-agnostic idiom: pick cuda if available, else cpu, move the model and the data."""
    def script(t):
        t.manual_seed(0)
        device = t.device("cuda" if t.cuda.is_available() else "cpu")
        model = t.nn.Linear(3, 1).to(device)
        x, y = t.randn(5, 3).to(device, non_blocking=True), t.randn(5, 1).to(device)
        loss = t.nn.functional.mse_loss(model(x), y)
        loss.backward()
        return np.asarray(model.weight.grad.tolist()), str(device)
    (a, da), (b, db) = script(tapegrad), script(torch)
    assert da == db == "cpu"
    np.testing.assert_allclose(a, b, rtol=1e-6)


XPU_CALLS = ["is_available", "device_count", "is_initialized", "is_bf16_supported", "seed", "seed_all",
             "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
             "get_rng_state_all", "init", "synchronize", "current_device", "get_device_name", "get_device_properties",
             "get_device_capability", "mem_get_info", "initial_seed", "get_rng_state", "current_stream"]


@pytest.mark.parametrize("name", XPU_CALLS)
def test_xpu_as_a_build_without_it(name):
    """pytorch/examples' mnist_forward_forward asks torch.xpu.is_available() before choosing the CPU."""
    same(lambda t: getattr(t.xpu, name)())
    same(lambda t: (t.xpu.manual_seed(3), t.xpu.manual_seed_all(3), t.xpu.set_rng_state_all([]), t.rand(1).item()))
    same(lambda t: t.xpu.set_device(0))


def test_bfloat16_is_nameable():
    """(bfloat16 tensors: tests/scripts/test_bfloat16.py)"""
    assert repr(tapegrad.bfloat16) == repr(torch.bfloat16) == "torch.bfloat16"
    assert tapegrad.bfloat16.is_floating_point and tapegrad.bfloat16.itemsize == torch.bfloat16.itemsize
    assert pickle.loads(pickle.dumps(tapegrad.bfloat16)) is tapegrad.bfloat16


