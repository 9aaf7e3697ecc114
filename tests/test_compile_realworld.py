"""Training steps of ../shared/realworld's CNN, LSTM and Transformer language models (their own model code,
loaded unchanged with `torch` resolved to tapegrad) under tapegrad.compile(fullgraph=True): one compiled call per
step (forward with dropout in train mode, nll_loss, backward into .grad, clipping, the optimizer's update) equal
to the same step run eagerly, over steps with new data (and new dropout masks)."""
import ast
import builtins
import copy
import importlib
import pathlib

import numpy as np
import pytest

import tapegrad as tg

PROGRAMS = pathlib.Path(__file__).resolve().parents[2] / "shared" / "realworld" / "programs" / "pytorch-examples"
pytestmark = pytest.mark.skipif(not PROGRAMS.is_dir(), reason="../shared/realworld is not checked out")


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    """`import torch...` inside the programs' code resolves to tapegrad."""
    if name == "torch" or name.startswith("torch."):
        module = importlib.import_module("tapegrad" + name[5:])
        return module if fromlist else tg
    return builtins.__import__(name, globals, locals, fromlist, level)


def _load(path, keep=None):
    """The program's top-level definitions (only the imports and the classes named in `keep`, when given)."""
    tree = ast.parse(path.read_text())
    if keep is not None:
        tree.body = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) and all(
            a.name.split(".")[0] in ("torch", "math") for a in n.names) and (
            not isinstance(n, ast.ImportFrom) or n.module.split(".")[0] in ("torch", "math"))
            or isinstance(n, ast.ClassDef) and n.name in keep]
    env = {"__name__": "realworld_program", "__builtins__": {**vars(builtins), "__import__": _import}}
    exec(compile(tree, str(path), "exec"), env)
    return env


def _twins(make):
    """The model twice with equal weights: one for the compiled step, one for the eager one."""
    tg.manual_seed(0)
    a = make()
    b = copy.deepcopy(a)
    return a, b


def _step(model, opt, clip):
    F = tg.nn.functional

    def step(data, target, *hidden):
        opt.zero_grad()
        if hidden:
            output, hidden = model(data, hidden)
        else:
            output = model(data)
        loss = F.nll_loss(output.view(-1, output.shape[-1]), target)
        loss.backward()
        if clip:
            tg.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        return (loss, *hidden)
    return step


def _run(models, opts, clip, batches, hidden=None, exact=True, traces=1):
    compiled = tg.compile(_step(models[0], opts[0], clip), fullgraph=True)
    eager = _step(models[1], opts[1], clip)
    hs = [hidden, hidden]
    for k, (data, target) in enumerate(batches):
        outs = []
        for f, h in zip((compiled, eager), hs):
            tg.manual_seed(100 + k)  # (the same dropout masks for both)
            outs.append(f(data, target, *(h or ())))
        assert compiled.traces == min(k + 1, traces)
        np.testing.assert_allclose(outs[0][0].detach().numpy(), outs[1][0].detach().numpy(), rtol=0 if exact else 1e-6)
        if hidden is not None:
            hs = [tuple(h.detach() for h in o[1:]) for o in outs]  # (the program's repackage_hidden)
            for a, b in zip(*hs):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
        for p, q in zip(models[0].parameters(), models[1].parameters()):
            if exact:
                np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
            else:  # (a gradient's summands added in another order than eagerly: float32 rounding)
                np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
    return compiled


def test_mnist_cnn_step_with_dropout_and_nll_loss_compiles():
    Net = _load(PROGRAMS / "mnist" / "main.py", keep={"Net"})["Net"]
    models = _twins(Net)
    opts = [tg.optim.Adadelta(m.parameters(), lr=1.0) if hasattr(tg.optim, "Adadelta") else
            tg.optim.SGD(m.parameters(), lr=0.1) for m in models]
    r = np.random.default_rng(0)
    batches = [(tg.tensor(r.standard_normal((8, 1, 28, 28)).astype(np.float32)), tg.tensor(r.integers(0, 10, 8)))
               for _ in range(3)]
    _run(models, opts, 0, batches)


def _word_lm(*args):
    return _load(PROGRAMS / "word_language_model" / "model.py")


def test_word_language_model_lstm_step_compiles():
    env = _word_lm()
    models = _twins(lambda: env["RNNModel"]("LSTM", 50, 16, 16, 2, 0.2))
    opts = [tg.optim.SGD(m.parameters(), lr=0.5) for m in models]
    r = np.random.default_rng(1)
    batches = [(tg.tensor(r.integers(0, 50, (7, 4))), tg.tensor(r.integers(0, 50, 28))) for _ in range(3)]
    hidden = tuple(tg.zeros(2, 4, 16) for _ in range(2))
    _run(models, opts, 0.25, batches, hidden)


def test_word_language_model_transformer_step_compiles():
    env = _word_lm()
    models = _twins(lambda: env["TransformerModel"](50, 16, 2, 32, 2, 0.2))
    opts = [tg.optim.SGD(m.parameters(), lr=0.5) for m in models]  # (the program: p.data.add_(p.grad, alpha=-lr))
    r = np.random.default_rng(2)
    batches = [(tg.tensor(r.integers(0, 50, (7, 4))), tg.tensor(r.integers(0, 50, 28))) for _ in range(3)]
    # (two traces: the model's src_mask attribute, None at the first call, is the mask it made from then on, and a
    # changed attribute is a new trace, as torch.compile's guard on it; the second trace then serves every step)
    _run(models, opts, 0.25, batches, exact=False, traces=2)
