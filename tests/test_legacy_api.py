"""torch's legacy API that older scripts still use, against torch 2.13: the tensor types (torch.FloatTensor, ...)
as classes (isinstance, construction, `x.type(T)`), `torch.Tensor()` and `torch.Tensor(torch.Size)`, and the
pre-1.0 reduction name 'elementwise_mean'."""
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

TYPES = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
         "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", TYPES)
def test_tensor_types_are_classes_as_torchs(name):
    def facts(lib):
        T = getattr(lib, name)
        x = T([1, 0, 2])
        return (repr(T), T.__name__, str(T.dtype), T.is_cuda, T.is_sparse, isinstance(x, T), str(x.dtype),
                x.tolist(), isinstance(lib.ones(2), T), tuple(T(2, 3).shape), tuple(T(lib.Size([4])).shape),
                tuple(T().shape), x.type(), str(lib.arange(3).type(T).dtype),
                str(lib.arange(3).type("torch." + name).dtype))
    assert facts(tg) == facts(torch)


def test_a_parameter_and_a_tensor_that_requires_grad_are_instances_of_their_type():
    for lib in (tg, torch):
        assert isinstance(lib.nn.Parameter(lib.ones(2)), lib.FloatTensor)
        assert isinstance(lib.ones(2, dtype=lib.float64, requires_grad=True), lib.DoubleTensor)
        assert not isinstance(lib.ones(2), lib.DoubleTensor)


@pytest.mark.parametrize("arg, error", [("float", ValueError), ("FloatTensor", ValueError), (3, TypeError)])
def test_type_refuses_what_torch_refuses(arg, error):
    for lib in (tg, torch):
        with pytest.raises(error) as e:
            lib.ones(2).type(arg)
        msgs = str(e.value)
    assert str(e.value) == msgs


def test_the_legacy_constructor_takes_sizes_a_size_or_nothing():
    for args in [(), (tg.Size([2, 3]),), ((2, 3),), ([2.5, 3],), (2, 3)]:
        theirs = torch.Tensor(*[torch.Size(a) if isinstance(a, tg.Size) else a for a in args])
        ours = tg.Tensor(*args)
        assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)


@pytest.mark.parametrize("loss", ["nll_loss", "mse_loss", "l1_loss", "cross_entropy"])
def test_elementwise_mean_is_mean_with_torchs_warning(loss):
    x = np.array([[-1.0, -2.0, -0.5], [-0.3, -1.5, -2.5]])
    results = []
    for lib in (tg, torch):
        a = lib.tensor(x, requires_grad=True)
        b = lib.tensor([0, 1]) if loss in ("nll_loss", "cross_entropy") else lib.tensor(x + 1)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = getattr(lib.nn.functional, loss)(a, b, reduction="elementwise_mean")
        out.backward()
        results.append((out.item(), a.grad.numpy(), [str(m.message) for m in w]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)
    assert results[0][2] == results[1][2] == ["reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead."]


# -- pre-1.0 code that still runs under torch 2.13 (older versions of the examples and tutorials) ------------------
LEGACY = {  # name -> code run with `torch` bound to the library; each prints what it found
    "isinstance_variable": "Variable = torch.autograd.Variable\nh = torch.zeros(2)\nprint(isinstance(h, Variable), "
                           "isinstance(3, Variable), type(Variable(h)) == Variable)\nv = Variable(h)\n"
                           "print(v is h, v.requires_grad, v.is_leaf, Variable(h, requires_grad=True).requires_grad)",
    "variable_needs_a_tensor": "Variable = torch.autograd.Variable\nVariable([1, 2])",
    "volatile": "Variable = torch.autograd.Variable\nv = Variable(torch.zeros(2), volatile=True)\n"
                "print(v.requires_grad, v.volatile)",
    "cuda_types": "x = torch.zeros(2)\nprint(isinstance(x, torch.cuda.FloatTensor), isinstance(x, torch.FloatTensor), "
                  "torch.cuda.LongTensor.dtype, repr(torch.cuda.HalfTensor), torch.cuda.FloatTensor.is_cuda)\n"
                  "torch.cuda.FloatTensor(2)",
    "value_first_overloads": "a = torch.zeros(2); t = torch.ones(2); m = torch.ones(2, 2)\n"
                             "print(a.clone().addcmul_(2, t, t), a.clone().addcdiv_(2, t, t), torch.addcmul(a, 2, t, t),"
                             " a.addcdiv(3, t, t), torch.addmm(1, m, 2, m, m), torch.addmm(0.5, m, m, m), "
                             "m.clone().addmm_(1, 2, m, m), torch.add(a, 2, t), torch.sub(a, 2, t), "
                             "a.clone().sub_(2, t), torch.add(a, t, alpha=3))",
    "module_type": "m = torch.nn.Linear(2, 2)\nprint(m.type(torch.DoubleTensor) is m, m.weight.dtype, "
                   "m.type('torch.FloatTensor').weight.dtype, m.type(torch.float64).bias.dtype)",
    "range": "print(torch.range(0, 3), torch.range(0, 1, 0.3), torch.range(0, 3, dtype=torch.int64), "
             "torch.range(1, 2, requires_grad=True))\ntorch.range(5, 1)",
    "set_default_tensor_type": "torch.set_default_tensor_type(torch.DoubleTensor)\nprint(torch.zeros(1).dtype)\n"
                               "torch.set_default_tensor_type('torch.FloatTensor')\nprint(torch.zeros(1).dtype)",
    "zero_dim_index": "torch.nn.functional.mse_loss(torch.zeros(2), torch.ones(2)).data[0]",
    "resize": "x = torch.arange(6.)\nprint(x.resize_(2, 3), x.resize_(4), torch.ones(2, 2).resize_(5)[:4], "
              "torch.ones(3).resize_as_(torch.zeros(2, 2)).shape)\ntorch.ones(2, requires_grad=True).resize_(3)",
    "apply": "print(torch.zeros(2).apply_(lambda v: v + 1), torch.arange(3).apply_(lambda v: v * 2.5))\n"
             "torch.ones(2, requires_grad=True).apply_(lambda v: v)",
    "warnings": "import warnings\nF = torch.nn.functional\nwith warnings.catch_warnings(record=True) as w:\n"
                "    warnings.simplefilter('always')\n"
                "    F.nll_loss(torch.zeros(2, 3), torch.tensor([0, 1]), size_average=False)\n"
                "    F.log_softmax(torch.zeros(2, 3)); F.softmax(torch.zeros(2, 3)); F.softmin(torch.zeros(2, 3))\n"
                "    torch.nn.Softmax()(torch.zeros(2, 3))\n"
                "print([str(x.message) for x in w])",
    "data_parallel_function": "print(type(torch.nn.parallel.data_parallel).__name__)\n"
                              "torch.nn.parallel.data_parallel(torch.nn.Linear(2, 2), torch.ones(1, 2))",
}


def _run_legacy(lib, code):
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(code, {"torch": lib})
            error = None
        except Exception as e:  # noqa: BLE001  (the outcome compared with torch's)
            error = (type(e).__name__, str(e))
    return out.getvalue().replace("tapegrad", "torch"), error


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_legacy_code_runs_as_under_torch(name):
    default = tg.get_default_dtype(), torch.get_default_dtype()
    try:
        got, want = _run_legacy(tg, LEGACY[name]), _run_legacy(torch, LEGACY[name])
    finally:
        tg.set_default_dtype(default[0])
        torch.set_default_dtype(default[1])
    assert got[0] == want[0]
    assert (got[1] is None) == (want[1] is None)
    if want[1] is not None:
        assert got[1][0] == want[1][0]
        if name not in ("cuda_types",):
            assert got[1][1] == want[1][1]


def test_the_deprecated_overload_warning_comes_once_per_process_as_torchs():
    import subprocess
    import sys
    code = ("import warnings\nwarnings.simplefilter('always')\nimport {lib} as torch\na = torch.zeros(2); t = torch.ones(2)\n"
            "with warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n"
            "    a.addcmul_(2, t, t); a.add_(2, t); torch.addmm(1, torch.ones(2, 2), 1, torch.ones(2, 2), torch.ones(2, 2))\n"
            "print([str(x.message).split(' (Triggered internally')[0] for x in w])\n")
    outs = [subprocess.run([sys.executable, "-c", code.format(lib=lib)], capture_output=True, text=True, timeout=300)
            for lib in ("tapegrad", "torch")]
    assert outs[0].returncode == 0, outs[0].stderr
    assert outs[0].stdout == outs[1].stdout


def test_a_replaced_print_before_the_first_compiled_kernel_in_a_subprocess():
    """torchvision's references replace builtins.print (setup_for_distributed) before any tensor op: Numba, imported
    by the first backward, registers print by its module and name, and failed on the replacement."""
    import subprocess
    import sys
    code = ("import builtins, tapegrad as torch\nreal = builtins.print\n"
            "def setup():\n    def print(*a, **k):\n        real(*a, **k)\n    builtins.print = print\n"
            "setup()\nx = torch.ones(2, requires_grad=True)\n(x * 3).sum().backward()\nprint(x.grad.tolist())\n"
            "print(builtins.print.__qualname__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[3.0,", "3.0]", "setup.<locals>.print"]
