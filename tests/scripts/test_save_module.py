"""torch.save(model) of a whole module and torch.load's weights_only / map_location / safe_globals, against
torch 2.13 where torch's behaviour is the reference, and tapegrad's no-code-on-load guarantees."""
import io
import pickle
import sys
import types

import numpy as np
import pytest
import torch

import tapegrad


def define_model_class(t, name):
    class Net(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = t.nn.Linear(3, 4)
            self.act = t.nn.Tanh()
            self.decoder = t.nn.Linear(4, 3)
            self.decoder.weight = self.encoder.weight.__class__(self.encoder.weight.detach().t().clone())
            self.tied = self.encoder  # the same submodule twice
            self.nhid, self.kind, self.sizes = 4, "tanh", (3, 4)
            self.register_buffer("scale", t.full((3,), 2.0))
            self.register_buffer("scratch", t.zeros(1), persistent=False)

        def forward(self, x):
            return self.decoder(self.act(self.encoder(x))) * self.scale
    Net.__qualname__ = Net.__name__ = name
    Net.__module__ = __name__
    globals()[name] = Net  # (torch pickles a class by its module and name)
    return Net


TapeNet, TorchNet = define_model_class(tapegrad, "TapeNet"), define_model_class(torch, "TorchNet")


def make_model_class(t):
    return TapeNet if t is tapegrad else TorchNet


def roundtrip(t, Net, **load_kwargs):
    t.manual_seed(0)
    m = Net()
    buf = io.BytesIO()
    t.save(m, buf)
    buf.seek(0)
    with t.serialization.safe_globals([Net, t.nn.Linear, t.nn.Tanh]):
        m2 = t.load(buf, **load_kwargs)
    x = t.linspace(-1, 1, 6).reshape(2, 3)
    return m, m2, x


@pytest.mark.parametrize("load_kwargs", [{}, {"weights_only": True}, {"map_location": "cpu"},
                                         {"map_location": lambda storage, loc: storage}])
def test_whole_module_roundtrip_matches_torch(load_kwargs):
    got = roundtrip(tapegrad, make_model_class(tapegrad), **load_kwargs)
    want = roundtrip(torch, make_model_class(torch), **load_kwargs)
    for (m, m2, x), lib in ((got, tapegrad), (want, torch)):
        assert type(m2) is type(m) and m2 is not m
        assert m2.tied is m2.encoder and m2.nhid == 4 and m2.kind == "tanh" and m2.sizes == (3, 4)
        assert m2.training and list(m2.state_dict()) == list(m.state_dict())
        np.testing.assert_array_equal(np.asarray(m2(x).tolist()), np.asarray(m(x).tolist()))
        assert isinstance(m2.encoder.weight, lib.nn.Parameter) and m2.encoder.weight.requires_grad
    assert repr(got[1]).replace("TapeNet", "TorchNet") == repr(want[1])
    assert list(got[1].state_dict()) == list(want[1].state_dict())
    np.testing.assert_allclose(np.asarray(got[1](got[2]).tolist()), np.asarray(want[1](want[2]).tolist()),
                               rtol=1e-6)


def test_loaded_module_trains():
    m, m2, x = roundtrip(tapegrad, make_model_class(tapegrad))
    opt = tapegrad.optim.SGD(m2.parameters(), lr=0.1)
    m2(x).sum().backward()
    opt.step()
    assert m2.encoder.weight.grad is not None


def test_class_not_allowed_is_torchs_error_type():
    for t in (tapegrad, torch):
        Net = make_model_class(t)
        buf = io.BytesIO()
        t.save(Net(), buf)
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError, match=r"add_safe_globals\(\[test_save_module\.T[a-z]+Net\]\)"):
            t.load(buf)
    assert tapegrad.serialization.get_safe_globals() == []


def test_add_safe_globals_persists_until_cleared():
    Net = make_model_class(tapegrad)
    buf = io.BytesIO()
    tapegrad.save(Net(), buf)
    tapegrad.serialization.add_safe_globals([Net])
    try:
        assert Net in tapegrad.serialization.get_safe_globals()
        buf.seek(0)
        assert type(tapegrad.load(buf)) is Net
    finally:
        tapegrad.serialization.clear_safe_globals()
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        tapegrad.load(buf)


def test_weights_only_false_imports_the_classs_module(tmp_path, monkeypatch):
    """weights_only=False: the caller trusts the file, so the class's module is imported when it is not yet, as
    torch's unpickling imports it (pytorch/examples' word_language_model/generate.py loads a model saved by
    main.py without importing `model`); weights_only=True never imports it."""
    name = "tapegrad_test_models_xyz"
    (tmp_path / f"{name}.py").write_text(
        "import tapegrad\n"
        "class ElsewhereNet(tapegrad.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = tapegrad.nn.Linear(2, 3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    mod = importlib.import_module(name)
    buf = io.BytesIO()
    tapegrad.save(mod.ElsewhereNet(), buf)
    del sys.modules[name]  # (as in a fresh process that never imported it)
    try:
        buf.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="weights_only=False"):
            tapegrad.load(buf)
        assert name not in sys.modules
        buf.seek(0)
        net = tapegrad.load(buf, weights_only=False)
        assert type(net).__module__ == name and name in sys.modules and net.fc.weight.shape == (3, 2)
    finally:
        sys.modules.pop(name, None)
    monkeypatch.syspath_prepend(str(tmp_path / "elsewhere"))
    (tmp_path / f"{name}.py").unlink()
    buf.seek(0)
    with pytest.raises(ModuleNotFoundError, match=name):  # (what unpickling a class of a missing module raises)
        tapegrad.load(buf, weights_only=False)


def test_no_code_of_the_class_runs_on_load():
    calls = []

    class Loud(tapegrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = tapegrad.nn.Linear(2, 2)

        def __setstate__(self, state):
            calls.append("setstate")

        def __new__(cls, *args, **kwargs):
            calls.append("new")
            return super().__new__(cls)
    Loud.__qualname__ = "Loud"
    m = Loud()
    calls.clear()
    buf = io.BytesIO()
    tapegrad.save(m, buf)
    buf.seek(0)
    with tapegrad.serialization.safe_globals([Loud]):
        m2 = tapegrad.load(buf)
    assert calls == [] and type(m2) is Loud and m2.lin.weight.shape == (2, 2)


def test_what_cannot_be_saved_is_a_clear_error():
    m = tapegrad.nn.Linear(2, 2)
    m.register_forward_hook(lambda *a: None)
    with pytest.raises(TypeError, match="hooks"):
        tapegrad.save(m, io.BytesIO())
    m = tapegrad.nn.Linear(2, 2)
    m.callback = print
    with pytest.raises(TypeError, match=r"Linear\.callback"):
        tapegrad.save(m, io.BytesIO())

    def local():
        class Inner(tapegrad.nn.Module):
            pass
        return Inner()
    with pytest.raises(TypeError, match="inside a function"):
        tapegrad.save(local(), io.BytesIO())


@pytest.mark.parametrize("where", ["cuda", "cuda:0", "mps"])
def test_map_location_elsewhere_is_torchs_error(where):
    def f(t):
        buf = io.BytesIO()
        t.save({"w": t.ones(2)}, buf)
        buf.seek(0)
        try:
            t.load(buf, map_location=where)
        except RuntimeError as e:
            return str(e)
    assert f(tapegrad) == f(torch)
    assert f(tapegrad)


def test_safe_globals_validation():
    with pytest.raises(ValueError):
        tapegrad.serialization.add_safe_globals([1])
    assert tapegrad.serialization.get_safe_globals() == []


def test_a_layer_holding_one_of_tapegrads_functions_saves_whole_and_loads():
    """TransformerEncoderLayer keeps F.relu as an attribute (word_language_model saves the whole model)."""
    tapegrad.manual_seed(0)
    layer = tapegrad.nn.TransformerEncoderLayer(8, 2, 16).eval()
    buf = io.BytesIO()
    tapegrad.save(layer, buf)
    buf.seek(0)
    loaded = tapegrad.load(buf, weights_only=False)
    assert loaded.activation is tapegrad.nn.functional.relu
    x = tapegrad.randn(5, 3, 8)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), layer(x).detach().numpy())


@pytest.mark.parametrize("name", ["os:system", "tapegrad.nn.functional:__import__", "numpy:load",
                                  "tapegrad.nn.functional:no_such_function", 3])
def test_a_function_node_resolves_only_to_tapegrads_own_functions(name, tmp_path):
    import json
    import zipfile
    manifest = json.dumps({"format": "tapegrad", "version": 1, "root": {"function": name}}).encode()
    path = tmp_path / "f.pt"
    with zipfile.ZipFile(path, "w") as zf:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.frombuffer(manifest, np.uint8), allow_pickle=False)
        zf.writestr("__tapegrad__.npy", buf.getvalue())
    with pytest.raises(tapegrad.serialization.SerializationError, match="function"):
        tapegrad.load(path, weights_only=False)
