"""nn.Module, nn.Parameter and the containers, against torch: the same code, the same results and errors."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import torch

import tapegrad as tg

LIBS = [tg, torch]


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e).__name__, str(e)
    return None


def same_error(fn):
    """fn(lib) raises the same exception type and message with tapegrad as with torch."""
    got, want = _error(lambda: fn(tg)), _error(lambda: fn(torch))
    assert want is not None, "torch did not raise: the test checks nothing"
    assert got == want


def net(lib):
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 4)
            self.act = lib.nn.Tanh()
            self.register_buffer("count", lib.zeros(1))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)

        def forward(self, x):
            return self.act(self.fc(x))

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.heads = lib.nn.ModuleList([lib.nn.Linear(4, 2), lib.nn.Linear(4, 2, bias=False)])
            self.scale = lib.nn.Parameter(lib.ones(()))
            self.missing = None

        def forward(self, x):
            h = self.block(x)
            return self.heads[0](h) * self.scale + self.heads[1](h)

    return Net()


def test_parameter_basics():
    for lib in LIBS:
        p = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        assert isinstance(p, lib.Tensor) and p.requires_grad and p.is_leaf
        assert not lib.nn.Parameter(lib.ones(2), requires_grad=False).requires_grad
    assert repr(tg.nn.Parameter(tg.tensor([[1.0, 2.5]]))) == repr(torch.nn.Parameter(torch.tensor([[1.0, 2.5]])))
    same_error(lambda lib: lib.nn.Parameter(lib.tensor([1, 2])))
    data = tg.tensor([1.0, 2.0])
    p = tg.nn.Parameter(data)
    with tg.no_grad():
        p.mul_(3)
    assert data.tolist() == [3.0, 6.0]        # shares storage with the tensor it wraps, as torch's does
    ops_result = p * 2
    assert type(ops_result) is tg.Tensor and ops_result.grad_fn is not None
    (p * p).sum().backward()
    assert p.grad.tolist() == [6.0, 12.0]
    q = copy.deepcopy(p)
    assert type(q) is tg.nn.Parameter and q.requires_grad and q.grad.tolist() == [6.0, 12.0]
    assert q._data is not p._data
    r = pickle.loads(pickle.dumps(tg.nn.Parameter(tg.ones(2), requires_grad=False)))
    assert type(r) is tg.nn.Parameter and not r.requires_grad


def test_names_and_traversal_match_torch():
    a, b = net(tg), net(torch)
    assert [n for n, _ in a.named_parameters()] == [n for n, _ in b.named_parameters()]
    assert [n for n, _ in a.named_buffers()] == [n for n, _ in b.named_buffers()]
    assert [n for n, _ in a.named_modules()] == [n for n, _ in b.named_modules()]
    assert [n for n, _ in a.named_children()] == [n for n, _ in b.named_children()]
    assert list(a.state_dict()) == list(b.state_dict())
    assert [n for n, _ in a.named_parameters(prefix="m", recurse=False)] == \
        [n for n, _ in b.named_parameters(prefix="m", recurse=False)]
    assert len(list(a.parameters())) == 6 and len(list(a.modules())) == 7
    assert repr(a) == repr(b)
    assert a.missing is None and a.block.fc.in_features == 3
    assert "scale" in dir(a) and "heads" in dir(a)


def test_shared_parameters_are_listed_once():
    for lib in LIBS:
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Linear(2, 2))
        m[1].weight = m[0].weight
        assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias", "1.bias"]
        assert len(list(m.named_parameters(remove_duplicate=False))) == 4
        assert list(m.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_parameters_walks_as_named_parameters_does():
    """parameters() walks the modules without building names: the same parameters in the same order as torch's,
    with a module shared twice, a parameter shared across modules, None entries, nesting and recurse=False; a
    subclass's own named_parameters still decides."""
    def build(lib):
        nn = lib.nn
        shared = nn.Linear(3, 3)
        inner = nn.Sequential(nn.Linear(3, 4), shared, nn.Sequential(nn.Linear(4, 2), shared))
        m = nn.Sequential(inner, nn.ReLU(), nn.Linear(2, 5, bias=False), shared)
        inner[2][0].bias = None
        m.register_parameter("extra", nn.Parameter(lib.ones(2)))
        m.register_parameter("absent", None)
        m.add_module("nothing", None)
        inner[0].weight2 = inner[0].weight  # the same Parameter under a second name
        return m

    def positions(lib, params):
        named = {}
        for n, p in build_cache[lib].named_parameters(remove_duplicate=False):
            named.setdefault(id(p), n)
        return [named[id(p)] for p in params]

    build_cache = {lib: build(lib) for lib in LIBS}
    for lib in LIBS:
        m = build_cache[lib]
        names = [n for n, _ in m.named_parameters()]
        assert positions(lib, m.parameters()) == names
        assert [id(p) for p in m.parameters()] == [id(p) for _, p in m.named_parameters()]
        assert [id(p) for p in m.parameters(recurse=False)] == [id(p) for _, p in m.named_parameters(recurse=False)]
        assert [id(p) for p in m[0].parameters()] == [id(p) for _, p in m[0].named_parameters()]
    assert [n for n, _ in build_cache[tg].named_parameters()] == [n for n, _ in build_cache[torch].named_parameters()]

    class OnlyWeights(tg.nn.Linear):
        def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
            yield "weight", self.weight
    only = OnlyWeights(2, 2)
    assert [id(p) for p in only.parameters()] == [id(only.weight)]


def test_state_dict_values_alias_the_parameters():
    m = tg.nn.Linear(2, 2)
    sd = m.state_dict()
    assert type(sd) is OrderedDict
    assert type(sd["weight"]) is tg.Tensor and not sd["weight"].requires_grad
    with tg.no_grad():
        m.weight.fill_(5.0)
    assert sd["weight"].tolist() == [[5.0, 5.0], [5.0, 5.0]]
    kept = m.state_dict(keep_vars=True)
    assert kept["weight"] is m.weight


def test_setattr_semantics_and_errors():
    for lib in LIBS:
        m = lib.nn.Linear(2, 3)
        m.weight = None
        assert m.weight is None and "weight" in m._parameters
        m.weight = lib.nn.Parameter(lib.ones(3, 2))
        m.extra = lib.nn.ReLU()
        assert "extra" in m._modules
        m.extra = None
        assert m.extra is None
        m.register_buffer("buf", lib.ones(1))
        m.buf = lib.zeros(2)                  # a tensor assigned to a buffer name stays a buffer
        assert m._buffers["buf"].shape == (2,)
        del m.buf
        assert "buf" not in m._buffers
        m.plain = 3
        assert m.plain == 3 and "plain" in m.__dict__
    same_error(lambda lib: setattr(lib.nn.Linear(2, 3), "weight", lib.ones(3, 2)))
    same_error(lambda lib: setattr(_with_child(lib), "child", 3))
    same_error(lambda lib: lib.nn.Linear(2, 3).register_buffer("a.b", None))
    same_error(lambda lib: lib.nn.Linear(2, 3).register_buffer("", None))
    same_error(lambda lib: lib.nn.Linear(2, 3).register_buffer("weight", lib.ones(1)))
    same_error(lambda lib: lib.nn.Linear(2, 3).register_buffer("x", 3))
    same_error(lambda lib: lib.nn.Linear(2, 3).register_parameter("x", lib.ones(1)))
    same_error(lambda lib: lib.nn.Linear(2, 3).register_parameter("x", lib.nn.Parameter(lib.ones(1)) * 2))
    same_error(lambda lib: lib.nn.Linear(2, 3).add_module("x", 3))
    same_error(lambda lib: lib.nn.Linear(2, 3).add_module("a.b", lib.nn.ReLU()))
    same_error(lambda lib: lib.nn.Linear(2, 3).nothing)
    same_error(lambda lib: lib.nn.Module()(1))
    same_error(lambda lib: _uninitialised(lib))
    same_error(lambda lib: lib.nn.Module().train("yes"))
    same_error(lambda lib: lib.nn.Linear(2, 3).get_submodule("a.b"))
    same_error(lambda lib: net(lib).get_parameter("block.act"))


def _with_child(lib):
    m = lib.nn.Module()
    m.child = lib.nn.ReLU()
    return m


def _uninitialised(lib):
    class Bad(lib.nn.Module):
        def __init__(self):
            self.w = lib.nn.Parameter(lib.ones(1))
    return Bad()


def test_get_submodule_parameter_buffer():
    m = net(tg)
    assert m.get_submodule("block.fc") is m.block.fc
    assert m.get_parameter("heads.1.weight") is m.heads[1].weight
    assert m.get_buffer("block.count") is m.block.count


def test_train_eval_apply_zero_grad():
    for lib in LIBS:
        m = net(lib)
        assert m.training and m.block.act.training
        assert m.eval() is m and not m.block.fc.training and not m.heads[1].training
        m.train()
        assert m.heads[0].training
        visited = []
        m.apply(lambda mod: visited.append(type(mod).__name__))
        assert visited == ["Linear", "Tanh", "Block", "Linear", "Linear", "ModuleList", "Net"]
    a, b = net(tg), net(torch)
    b.load_state_dict({k: torch.tensor(v.numpy()) for k, v in a.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    a(tg.tensor(x)).sum().backward()
    b(torch.tensor(x)).sum().backward()
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_allclose(pa.grad.numpy(), pb.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=na)
    a.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in a.parameters())
    a.zero_grad()
    assert all(p.grad is None for p in a.parameters())


def test_requires_grad_and_hooks():
    m = tg.nn.Linear(2, 2)
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre"))
    h2 = m.register_forward_hook(lambda mod, args, out: out * 0)
    out = m(tg.ones(1, 2))
    assert calls == ["pre"] and out.tolist() == [[0.0, 0.0]]
    h1.remove()
    h2.remove()
    assert m(tg.ones(1, 2)).abs().sum().item() > 0 and calls == ["pre"]


def test_dtype_conversion_keeps_parameter_objects():
    m = tg.nn.Sequential(tg.nn.Linear(2, 3), tg.nn.Embedding(4, 2))
    m.register_buffer("idx", tg.tensor([1, 2]))
    weight = m[0].weight
    m[0](tg.ones(1, 2)).sum().backward()
    assert m.double() is m
    assert m[0].weight is weight and weight.dtype is tg.float64 and weight.grad.dtype is tg.float64
    assert m.idx.dtype is tg.int64                           # integer buffers are left alone, as in torch
    out = m[0](tg.ones(1, 2, dtype=tg.float64))
    assert out.dtype is tg.float64
    out.sum().backward()                                     # the converted parameter is still a leaf that learns
    assert weight.grad.dtype is tg.float64
    m.to(tg.float32)
    assert weight.dtype is tg.float32
    m.float().to("cpu")
    assert m.cpu() is m
    same_error(lambda lib: lib.nn.Linear(2, 2).to(lib.int64))
    with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):  # torch's (CPU build)
        m.to("cuda")


def test_load_state_dict_errors_match_torch():
    def load(lib, mutate, strict=True):
        m = net(lib)
        sd = m.state_dict()
        mutate(lib, sd)
        return m.load_state_dict(sd, strict=strict)

    def drop(lib, sd):
        del sd["heads.1.weight"]
        del sd["block.count"]

    def add(lib, sd):
        sd["heads.5.weight"] = lib.ones(1)
        sd["block.nope"] = lib.ones(1)

    def resize(lib, sd):
        sd["block.fc.weight"] = lib.ones(5, 5)

    def not_a_tensor(lib, sd):
        sd["scale"] = 3.0

    for mutate in (drop, add, resize, not_a_tensor, lambda lib, sd: (drop(lib, sd), add(lib, sd))):
        same_error(lambda lib: load(lib, mutate))
    same_error(lambda lib: load(lib, resize, strict=False))
    same_error(lambda lib: net(lib).load_state_dict([1, 2]))
    for mutate in (drop, add):
        got, want = load(tg, mutate, strict=False), load(torch, mutate, strict=False)
        assert got.missing_keys == want.missing_keys and got.unexpected_keys == want.unexpected_keys
        assert repr(got) == repr(want)
    assert repr(load(tg, lambda lib, sd: None)) == "<All keys matched successfully>"


def test_load_state_dict_copies_values_in_place_and_casts():
    m = tg.nn.Linear(2, 2)
    weight = m.weight
    version = weight._version
    sd = {"weight": tg.ones(2, 2, dtype=tg.float64), "bias": tg.tensor([1.0, 2.0])}
    m.load_state_dict(sd)
    assert m.weight is weight and weight.dtype is tg.float32 and weight._version > version
    assert weight.tolist() == [[1.0, 1.0], [1.0, 1.0]] and weight.requires_grad
    sd["bias"].add_(1)
    assert m.bias.tolist() == [1.0, 2.0]                     # copied, not aliased
    m.load_state_dict({"weight": tg.zeros(2, 2), "bias": tg.zeros(2)}, assign=True)
    assert m.weight is not weight and isinstance(m.weight, tg.nn.Parameter) and m.weight.requires_grad


def test_deepcopy_and_pickle_of_a_module():
    m = net(tg)
    c = copy.deepcopy(m)
    assert [n for n, _ in c.named_parameters()] == [n for n, _ in m.named_parameters()]
    for p, q in zip(m.parameters(), c.parameters()):
        assert p is not q and p._data is not q._data and np.array_equal(p.numpy(force=True), q.numpy(force=True))
    x = tg.ones(2, 3)
    assert np.array_equal(m(x).detach().numpy(), c(x).detach().numpy())
    s = tg.nn.Sequential(tg.nn.Linear(3, 2), tg.nn.Tanh())
    d = pickle.loads(pickle.dumps(s))
    assert np.array_equal(s(x).detach().numpy(), d(x).detach().numpy())
    assert isinstance(d[0].weight, tg.nn.Parameter) and d[0].weight.requires_grad


def test_sequential_matches_torch():
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 1))

    a, b = build(tg), build(torch)
    assert repr(a) == repr(b) and len(a) == 3
    assert repr(a[1:]) == repr(b[1:]) and type(a[1:]) is tg.nn.Sequential
    assert type(a[-1]) is tg.nn.Linear
    same_error(lambda lib: build(lib)[3])
    for lib, s in ((tg, a), (torch, b)):
        s.append(lib.nn.Sigmoid())
        s.insert(0, lib.nn.Identity())
        s.extend([lib.nn.Tanh()])
        del s[1]
        s.pop(0)
        s[0] = lib.nn.ReLU()
    assert repr(a) == repr(b)
    assert repr(a + a) == repr(b + b)
    named = tg.nn.Sequential(OrderedDict([("first", tg.nn.Linear(1, 1)), ("act", tg.nn.ReLU())]))
    assert list(named._modules) == ["first", "act"] and named.first is named[0]
    assert named(tg.ones(4, 1)).shape == (4, 1)


def test_module_list_and_dict_match_torch():
    def build(lib):
        ml = lib.nn.ModuleList([lib.nn.ReLU(), lib.nn.ReLU(), lib.nn.Linear(2, 2)])
        ml.append(lib.nn.Tanh())
        ml.extend([lib.nn.Tanh(), lib.nn.Tanh()])
        ml.insert(1, lib.nn.Sigmoid())
        ml[0] = lib.nn.GELU()
        del ml[2]
        ml += lib.nn.ModuleList([lib.nn.Identity()])
        md = lib.nn.ModuleDict({"a": lib.nn.ReLU(), "b": lib.nn.Linear(1, 1)})
        md["c"] = lib.nn.Tanh()
        md.update([("d", lib.nn.Sigmoid())])
        md.pop("a")
        return lib.nn.ModuleDict({"list": ml, "dict": md, "empty": lib.nn.ModuleList()})

    a, b = build(tg), build(torch)
    assert repr(a) == repr(b)
    assert list(a["dict"].keys()) == list(b["dict"].keys()) and "c" in a["dict"]
    assert len(a["list"]) == len(b["list"]) and repr(a["list"][1:3]) == repr(b["list"][1:3])
    same_error(lambda lib: build(lib)["list"][10])
    same_error(lambda lib: lib.nn.ModuleList(3))
    same_error(lambda lib: lib.nn.ModuleDict({"a": lib.nn.ReLU()}).update([("a", lib.nn.ReLU(), 1)]))


def test_parameter_list_and_dict():
    pl = tg.nn.ParameterList([tg.nn.Parameter(tg.ones(2)), tg.zeros(3)])
    assert len(pl) == 2 and all(isinstance(p, tg.nn.Parameter) for p in pl)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pd = tg.nn.ParameterDict({"w": tg.ones(2, 2)})
    pd["b"] = tg.zeros(2)
    assert list(pd.keys()) == ["w", "b"] and [n for n, _ in pd.named_parameters()] == ["w", "b"]
    tp = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2)), torch.zeros(3)])
    assert repr(pl) == repr(tp)


def test_module_init_rejects_arguments_like_torch():
    same_error(lambda lib: lib.nn.Module(1))
    same_error(lambda lib: lib.nn.Module(foo=1))


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("swap", [False, True])
def test_future_conversion_settings(overwrite, swap):
    """torch.__future__'s settings for Module conversions: the default keeps the Parameter objects (their data and
    .grad converted in place), overwrite makes new Parameters (a converted .grad each), swap keeps the objects."""
    import importlib
    seen = []
    for lib in (torch, tg):
        fut = importlib.import_module(lib.__name__ + ".__future__")
        fut.set_overwrite_module_params_on_conversion(overwrite)
        fut.set_swap_module_params_on_conversion(swap)
        try:
            m = lib.nn.Linear(2, 3)
            w = m.weight
            m(lib.ones(1, 2)).sum().backward()
            g = m.weight.grad
            m.double()
            seen.append((fut.get_overwrite_module_params_on_conversion(), fut.get_swap_module_params_on_conversion(),
                         m.weight is w, str(m.weight.dtype), type(m.weight).__name__, str(m.weight.grad.dtype),
                         m.weight.grad is g, m.weight.requires_grad, str(w.dtype), m.weight.grad.tolist()))
        finally:
            fut.set_overwrite_module_params_on_conversion(False)
            fut.set_swap_module_params_on_conversion(False)
    assert seen[1] == seen[0]
