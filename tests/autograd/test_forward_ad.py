"""tapegrad.autograd.forward_ad against torch.autograd.forward_ad in the same process: dual levels, make_dual,
unpack_dual's (primal, tangent) with torch's values (float64, tight) and structure (UnpackedDualTensor, a
None tangent), through ops, nn.Module forwards and torch.func.functional_call; torch's errors."""
import numpy as np
import pytest
import torch

import tapegrad

RNG = np.random.default_rng(5)
A = RNG.uniform(-1, 1, (4,))
M = RNG.uniform(-1, 1, (4, 4))
X = RNG.uniform(-1, 1, (6, 3))


def T(lib, a, requires_grad=False):
    return lib.tensor(a, dtype=lib.float64, requires_grad=requires_grad)


def same(ours, theirs, requires_grad=True):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tapegrad.Tensor), type(ours)
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
        if requires_grad:
            assert ours.requires_grad == theirs.requires_grad, (ours.requires_grad, theirs.requires_grad)
        return
    if theirs is None or isinstance(theirs, (int, float, bool)):
        assert ours == theirs, (ours, theirs)
        return
    assert type(ours).__name__ == type(theirs).__name__, (type(ours), type(theirs))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        same(a, b, requires_grad)


def fw(lib):
    return lib.autograd.forward_ad


def _in_level(lib, body):
    with fw(lib).dual_level():
        return body(lib)


def _linear_params(lib, functional):
    model = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2)).double()
    rng = np.random.default_rng(1)
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.uniform(-1, 1, tuple(p.shape))))
    params = {k: v.detach() for k, v in model.named_parameters()}
    tangents = {k: T(lib, rng.uniform(-1, 1, tuple(v.shape))) for k, v in params.items()}
    with fw(lib).dual_level():
        duals = {k: fw(lib).make_dual(p, tangents[k]) for k, p in params.items()}
        if functional:
            out = lib.func.functional_call(model, duals, (T(lib, X),))
        else:
            for name, d in duals.items():
                mod_name, attr = name.split(".")
                sub = model[int(mod_name)]
                delattr(sub, attr)
                setattr(sub, attr, d)
            out = model(T(lib, X))
        return fw(lib).unpack_dual(out)


PROGRAMS = {
    "pointwise": lambda lib: _in_level(lib, lambda lib: fw(lib).unpack_dual(
        (fw(lib).make_dual(T(lib, A), T(lib, A[::-1].copy())).sin() ** 2).exp())),
    "two_duals": lambda lib: _in_level(lib, lambda lib: fw(lib).unpack_dual(
        fw(lib).make_dual(T(lib, M), T(lib, M.T.copy())) @ fw(lib).make_dual(T(lib, M * 2), T(lib, M)))),
    "reduction": lambda lib: _in_level(lib, lambda lib: fw(lib).unpack_dual(
        fw(lib).make_dual(T(lib, M), T(lib, M)).softmax(-1).sum(0))),
    "no_dual": lambda lib: _in_level(lib, lambda lib: fw(lib).unpack_dual(T(lib, A) * 2)),
    "outside_level": lambda lib: fw(lib).unpack_dual(T(lib, A)),
    "dual_itself": lambda lib: _in_level(lib, lambda lib: fw(lib).unpack_dual(
        fw(lib).make_dual(T(lib, A), T(lib, A * 3)))),
    "of_leaf": lambda lib: _in_level(lib, lambda lib: fw(lib).unpack_dual(
        fw(lib).make_dual(T(lib, A, True), T(lib, A)) ** 3)),
    "level_number": lambda lib: _in_level(lib, lambda lib: fw(lib).unpack_dual(
        fw(lib).make_dual(T(lib, A), T(lib, A), level=0).cos(), level=0)),
    "enter_exit": lambda lib: _enter_exit(lib),
    "module": lambda lib: _linear_params(lib, functional=False),
    "functional_call": lambda lib: _linear_params(lib, functional=True),
}


def _enter_exit(lib):
    level = fw(lib).enter_dual_level()
    y = fw(lib).make_dual(T(lib, A), T(lib, A)).tanh()
    out = fw(lib).unpack_dual(y)
    fw(lib).exit_dual_level()
    return level, out, fw(lib).unpack_dual(y).tangent


# torch's tangent of a Linear output requires grad where the weight does (its forward formula reads the
# weight's primal); tapegrad's requires grad where its value depends on a tensor that requires grad
REQUIRES_GRAD_DIFFERS = {"module", "functional_call"}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_as_torch(name):
    same(PROGRAMS[name](tapegrad), PROGRAMS[name](torch), requires_grad=name not in REQUIRES_GRAD_DIFFERS)


def test_unpack_dual_of_a_dual_is_its_tangent_and_a_namedtuple():
    with tapegrad.autograd.forward_ad.dual_level():
        t = T(tapegrad, A)
        d = tapegrad.autograd.forward_ad.make_dual(T(tapegrad, A), t)
        unpacked = tapegrad.autograd.forward_ad.unpack_dual(d)
        assert unpacked.tangent is t and unpacked[1] is t
        assert unpacked._fields == ("primal", "tangent")


def test_dual_level_is_a_decorator():
    @tapegrad.autograd.forward_ad.dual_level()
    def f(x):
        fwd = tapegrad.autograd.forward_ad
        return fwd.unpack_dual(fwd.make_dual(x, x * 0 + 1) * 2).tangent
    np.testing.assert_array_equal(f(T(tapegrad, A)).numpy(), np.full(4, 2.0))
    assert tapegrad.autograd.forward_ad._current_level == -1


ERRORS = {
    "make_dual_outside": lambda lib: fw(lib).make_dual(T(lib, A), T(lib, A)),
    "tangent_size": lambda lib: _in_level(lib, lambda lib: fw(lib).make_dual(T(lib, A), T(lib, M))),
    "int_primal": lambda lib: _in_level(lib, lambda lib: fw(lib).make_dual(lib.ones(4, dtype=lib.int64), T(lib, A))),
    "int_tangent": lambda lib: _in_level(lib, lambda lib: fw(lib).make_dual(T(lib, A), lib.ones(4, dtype=lib.int64))),
    "nested_level": lambda lib: _in_level(lib, lambda lib: fw(lib).enter_dual_level()),
    "exit_wrong_level": lambda lib: _in_level(lib, lambda lib: fw(lib).exit_dual_level(level=3)),
    "exit_no_level": lambda lib: fw(lib).exit_dual_level(),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_are_torchs(name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    with pytest.raises(type(theirs.value)) as ours:
        ERRORS[name](tapegrad)
    assert str(ours.value) == str(theirs.value)
    assert tapegrad.autograd.forward_ad._current_level == -1


def _jvp_functions(lib):
    class Exp(lib.autograd.Function):  # (the forward-mode AD tutorial's: a jvp and no backward)
        @staticmethod
        def forward(ctx, foo):
            result = lib.exp(foo)
            ctx.result = result
            return result

        @staticmethod
        def jvp(ctx, gI):
            gO = gI * ctx.result
            ctx.result = None
            return gO

    class Mix(lib.autograd.Function):  # two outputs, a non-tensor input; a backward that is not the derivative
        @staticmethod
        def forward(ctx, x, k, y):
            ctx.save_for_forward(x, y)
            ctx.k = k
            return x * y * k, x + y

        @staticmethod
        def backward(ctx, g1, g2):
            return g1, None, g2

        @staticmethod
        def jvp(ctx, tx, tk, ty):
            x, y = ctx.saved_tensors
            return ctx.k * (tx * y + x * ty), tx + ty

    class ExpSetup(lib.autograd.Function):  # setup_context style, through torch.func.jvp
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(output)

        @staticmethod
        def jvp(ctx, t):
            y, = ctx.saved_tensors
            return t * y
    return Exp, Mix, ExpSetup


def test_a_custom_functions_jvp_gives_its_forward_mode_tangent():
    """Forward AD through a custom Function calls its jvp (with what forward gave save_for_forward), as torch's does,
    whether or not it has a backward (and whatever that backward says); backward mode still uses backward."""
    results = []
    for lib in (torch, tapegrad):
        fwad = lib.autograd.forward_ad
        Exp, Mix, ExpSetup = _jvp_functions(lib)
        primal, tangent = lib.tensor([0., 1., 2.], dtype=lib.float64), lib.tensor([1., 0.5, 2.], dtype=lib.float64)
        row = []
        with fwad.dual_level():
            d = fwad.make_dual(primal, tangent)
            row.append(fwad.unpack_dual(Exp.apply(d)).tangent.tolist())
            a, b = Mix.apply(d, 3.0, fwad.make_dual(primal + 1, lib.ones(3, dtype=lib.float64)))
            row += [fwad.unpack_dual(a).tangent.tolist(), fwad.unpack_dual(b).tangent.tolist(),
                    fwad.unpack_dual((a * 2).sin()).tangent.tolist()]
        out, t = lib.func.jvp(ExpSetup.apply, (primal,), (tangent,))
        row += [out.tolist(), t.tolist()]
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(NotImplementedError, match="backward or vjp"):
            Exp.apply(x).sum().backward()
        Mix.apply(x, 2.0, x)[0].sum().backward()
        row.append(x.grad.tolist())
        results.append(row)
    np.testing.assert_allclose(np.concatenate([np.ravel(r) for r in results[1]]),
                               np.concatenate([np.ravel(r) for r in results[0]]), rtol=1e-12)
