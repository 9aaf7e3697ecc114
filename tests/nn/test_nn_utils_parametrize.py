"""torch.nn.utils parametrize / parametrizations / weight_norm / spectral_norm / fusion / skip_init /
clip_grads_with_norm_ / stateless.functional_call against torch 2.13: values, gradients, state_dicts loaded both
ways, reprs, errors."""
import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import tapegrad as tg

LIBS = (torch, tg)


def _np(t):
    return np.asarray(t.detach().numpy())


def _close(a, b, atol=1e-5, rtol=1e-5):
    np.testing.assert_allclose(_np(b), _np(a), atol=atol, rtol=rtol)


def _both(build, seed=0):
    """build(lib) run with torch and with tapegrad from the same seed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        a = build(torch)
        tg.manual_seed(seed)
        b = build(tg)
    return a, b


def _error(fn, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(lib)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
    return None


def _same_error(fn):
    theirs, mine = _error(fn, torch), _error(fn, tg)
    assert theirs is not None
    assert mine == theirs


def _transfer(sd, lib):
    """A state_dict carried to the other library through numpy arrays."""
    return {k: lib.tensor(_np(v)) for k, v in sd.items()}


def _check_state_dicts(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        _close(sa[k], sb[k])


def _check_forward_backward(a, b, x, calls=1, atol=1e-5):
    for _ in range(calls):
        ya, yb = a(torch.tensor(x)), b(tg.tensor(x))
        _close(ya, yb, atol=atol)
    (ya * ya).sum().backward()
    (yb * yb).sum().backward()
    na, nb = dict(a.named_parameters()), dict(b.named_parameters())
    assert list(na) == list(nb)
    for k in na:
        assert (na[k].grad is None) == (nb[k].grad is None), k
        if na[k].grad is not None:
            _close(na[k].grad, nb[k].grad, atol=atol)


def _round_trip(a, b, build, seed=1):
    """torch's state_dict into a fresh tapegrad module and tapegrad's into a fresh torch one."""
    a2, b2 = _both(build, seed=seed)
    b2.load_state_dict(_transfer(a.state_dict(), tg))
    a2.load_state_dict(_transfer(b.state_dict(), torch))
    _check_state_dicts(a, b2)
    _check_state_dicts(a2, b)
    return a2, b2


X4 = np.random.RandomState(0).randn(3, 4).astype(np.float32)


# -- parametrize -------------------------------------------------------------------------------------------
def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()
    return Symmetric


def _scale(lib):
    class Scale(lib.nn.Module):
        def forward(self, X):
            return 2.0 * X

        def right_inverse(self, A):
            return A / 2.0
    return Scale


def _rank_one(lib):
    class RankOne(lib.nn.Module):
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, Z):
            return Z[:, 0].clone(), Z[0, :].clone() / Z[0, 0]
    return RankOne


def _sym_linear(lib):
    m = lib.nn.Linear(4, 4)
    return lib.nn.utils.parametrize.register_parametrization(m, "weight", _symmetric(lib)())


def test_register_parametrization_values_grads_state_dict_repr():
    a, b = _both(_sym_linear)
    assert repr(a) == repr(b)
    assert type(b).__name__ == "ParametrizedLinear" and type(b).__bases__[0] is tg.nn.Linear
    assert repr(b.parametrizations.weight) == repr(a.parametrizations.weight)
    _close(a.weight, b.weight)
    _check_state_dicts(a, b)
    assert list(b.state_dict()) == ["bias", "parametrizations.weight.original"]
    _check_forward_backward(a, b, X4)
    _round_trip(a, b, _sym_linear)
    P = tg.nn.utils.parametrize
    assert P.is_parametrized(b) and P.is_parametrized(b, "weight") and not P.is_parametrized(b, "bias")
    assert not P.is_parametrized(tg.nn.Linear(2, 2))
    assert P.type_before_parametrizations(b) is tg.nn.Linear
    assert P.type_before_parametrizations(tg.nn.Linear(2, 2)) is tg.nn.Linear
    assert isinstance(b.parametrizations.weight, P.ParametrizationList)
    assert "weight" not in dict(b.named_parameters())


def test_assignment_goes_through_right_inverse_and_keeps_the_parameter():
    def build(lib):
        m = lib.nn.Linear(3, 3)
        P = lib.nn.utils.parametrize
        P.register_parametrization(m, "weight", _scale(lib)())
        P.register_parametrization(m, "weight", _symmetric(lib)())
        return m
    a, b = _both(build)
    assert repr(a) == repr(b)
    original = b.parametrizations.weight.original
    v = np.arange(9, dtype=np.float32).reshape(3, 3)
    a.weight = torch.tensor(v)
    b.weight = tg.tensor(v)
    assert b.parametrizations.weight.original is original
    _check_state_dicts(a, b)
    _close(a.weight, b.weight)
    _check_forward_backward(a, b, X4[:, :3])


def test_right_inverse_with_several_tensors():
    def build(lib):
        m = lib.nn.Linear(3, 3)
        return lib.nn.utils.parametrize.register_parametrization(m, "weight", _rank_one(lib)(), unsafe=True)
    a, b = _both(build)
    assert list(b.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    _check_state_dicts(a, b)
    _check_forward_backward(a, b, X4[:, :3])
    _round_trip(a, b, build)
    assert b.parametrizations.weight.ntensors == 2 and not b.parametrizations.weight.is_tensor


def test_parametrized_buffer():
    def build(lib):
        m = lib.nn.BatchNorm1d(4)
        return lib.nn.utils.parametrize.register_parametrization(m, "running_var", _scale(lib)())
    a, b = _both(build)
    assert list(a.state_dict()) == list(b.state_dict())
    assert "parametrizations.running_var.original" in b.state_dict()
    _close(a.running_var, b.running_var)


def test_cached_computes_once():
    for lib in LIBS:
        calls = []

        class Counting(lib.nn.Module):
            def forward(self, X):
                calls.append(1)
                return X * 1.0
        m = lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "weight", Counting())
        calls.clear()
        with lib.nn.utils.parametrize.cached():
            w1, w2 = m.weight, m.weight
        assert w1 is w2 and len(calls) == 1
        m.weight
        assert len(calls) == 2


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations_restores_a_plain_parameter(leave):
    a, b = _both(_sym_linear)
    original = b.parametrizations.weight.original
    P = tg.nn.utils.parametrize
    torch.nn.utils.parametrize.remove_parametrizations(a, "weight", leave_parametrized=leave)
    P.remove_parametrizations(b, "weight", leave_parametrized=leave)
    assert type(b) is tg.nn.Linear and not hasattr(b, "parametrizations")
    assert isinstance(b.weight, tg.nn.Parameter) and b.weight is original
    assert repr(a) == repr(b)
    _check_state_dicts(a, b)
    assert list(b.state_dict()) == list(a.state_dict())
    _check_forward_backward(a, b, X4)


def test_remove_parametrizations_of_several_tensors():
    def build(lib):
        m = lib.nn.Linear(3, 3)
        return lib.nn.utils.parametrize.register_parametrization(m, "weight", _rank_one(lib)(), unsafe=True)
    a, b = _both(build)
    _same_error(lambda lib: lib.nn.utils.parametrize.remove_parametrizations(
        a if lib is torch else b, "weight", leave_parametrized=False))
    torch.nn.utils.parametrize.remove_parametrizations(a, "weight")
    tg.nn.utils.parametrize.remove_parametrizations(b, "weight")
    assert isinstance(b.weight, tg.nn.Parameter) and type(b) is tg.nn.Linear
    _check_state_dicts(a, b)


def test_parametrized_module_copies_and_refuses_pickle():
    a, b = _both(_sym_linear)
    c = copy.deepcopy(b)
    _close(b.weight, c.weight)
    assert c.parametrizations.weight.original is not b.parametrizations.weight.original
    for m in (a, b):
        with pytest.raises(RuntimeError) as e:
            pickle.dumps(m)
        assert str(e.value).startswith("Serialization of parametrized modules is only supported through state_dict()")


def test_transfer_parametrizations_and_params():
    def build(lib):
        src = _sym_linear(lib)
        dst = lib.nn.Linear(4, 4)
        lib.nn.utils.parametrize.transfer_parametrizations_and_params(src, dst)
        return src, dst
    (sa, da), (sb, db) = _both(build)
    assert repr(da) == repr(db)
    assert db.parametrizations.weight.original is sb.parametrizations.weight.original
    _close(da.weight, db.weight)
    _check_state_dicts(da, db)


def test_register_parametrization_errors():
    def shape_changer(lib):
        class Sum(lib.nn.Module):
            def forward(self, X):
                return X.sum(0)
        return Sum()

    def dtype_changer(lib):
        class Double(lib.nn.Module):
            def forward(self, X):
                return X.double()
        return Double()

    def bad_inverse(lib):
        class Bad(lib.nn.Module):
            def forward(self, X):
                return X

            def right_inverse(self, X):
                return 3
        return Bad()

    _same_error(lambda lib: lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "nope",
                                                                              _scale(lib)()))
    _same_error(lambda lib: lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 3), "weight",
                                                                              shape_changer(lib)))
    _same_error(lambda lib: lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 3), "weight",
                                                                              dtype_changer(lib)))
    _same_error(lambda lib: lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 3), "weight",
                                                                              bad_inverse(lib)))
    _same_error(lambda lib: lib.nn.utils.parametrize.register_parametrization(
        _sym_linear(lib), "weight", shape_changer(lib)))
    _same_error(lambda lib: lib.nn.utils.parametrize.remove_parametrizations(lib.nn.Linear(2, 2), "weight"))

    def no_inverse(lib):
        class Id(lib.nn.Module):
            def forward(self, X):
                return X
        m = lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "weight", Id())
        m.weight = lib.zeros(2, 2)
    _same_error(no_inverse)


# -- parametrizations -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, None])
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_parametrizations_weight_norm(dim, kind):
    def build(lib):
        m = lib.nn.Linear(4, 3) if kind == "linear" else lib.nn.Conv2d(2, 3, 2)
        return lib.nn.utils.parametrizations.weight_norm(m, dim=dim)
    a, b = _both(build)
    assert repr(a) == repr(b)
    keys = list(b.state_dict())
    assert keys == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    _check_state_dicts(a, b)
    x = X4 if kind == "linear" else np.random.RandomState(1).randn(2, 2, 4, 4).astype(np.float32)
    _check_forward_backward(a, b, x)
    _round_trip(a, b, build)
    # remove_parametrizations leaves a plain weight holding g * v / ||v||
    torch.nn.utils.parametrize.remove_parametrizations(a, "weight")
    tg.nn.utils.parametrize.remove_parametrizations(b, "weight")
    assert isinstance(b.weight, tg.nn.Parameter) and type(b).__name__ == type(a).__name__
    _check_state_dicts(a, b)


def test_parametrizations_weight_norm_loads_the_old_weight_g_weight_v_keys():
    def old(lib):
        return lib.nn.utils.weight_norm(lib.nn.Linear(4, 3))
    a_old, b_old = _both(old, seed=3)

    def new(lib):
        return lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(4, 3))
    a, b = _both(new)
    a.load_state_dict(_transfer(b_old.state_dict(), torch))
    b.load_state_dict(_transfer(a_old.state_dict(), tg))
    _check_state_dicts(a, b)
    _close(a.weight, b.weight)


@pytest.mark.parametrize("kind", ["linear", "conv", "convT", "vector"])
def test_parametrizations_spectral_norm_train_and_eval(kind):
    def build(lib):
        if kind == "linear":
            m = lib.nn.Linear(4, 5)
        elif kind == "conv":
            m = lib.nn.Conv2d(2, 3, 2)
        elif kind == "convT":
            m = lib.nn.ConvTranspose2d(2, 3, 2)
        else:
            m = lib.nn.Linear(4, 5)
            return lib.nn.utils.parametrizations.spectral_norm(m, "bias")
        return lib.nn.utils.parametrizations.spectral_norm(m, n_power_iterations=2)
    a, b = _both(build)
    assert repr(a) == repr(b)
    _check_state_dicts(a, b)
    if kind != "vector":
        assert list(b.state_dict())[-2:] == ["parametrizations.weight.0._u", "parametrizations.weight.0._v"]
        dim = 1 if kind == "convT" else 0
        assert b.parametrizations.weight[0].dim == dim
    x = X4 if kind in ("linear", "vector") else np.random.RandomState(1).randn(2, 2, 4, 4).astype(np.float32)
    _check_forward_backward(a, b, x, calls=3)
    _check_state_dicts(a, b)  # the power iteration moved u and v alike
    if kind == "vector":
        return
    u = b.parametrizations.weight[0]._u.clone()
    a.eval()
    b.eval()
    _check_forward_backward(a, b, x, calls=2)
    np.testing.assert_array_equal(_np(b.parametrizations.weight[0]._u), _np(u))  # eval: no iteration
    _check_state_dicts(a, b)
    a.train()
    b.train()
    _round_trip(a, b, build)


def test_parametrizations_spectral_norm_errors():
    _same_error(lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2), n_power_iterations=0))
    _same_error(lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2), dim=2))
    _same_error(lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2), "nope"))


@pytest.mark.parametrize("shape,omap,triv", [
    ((4, 4), None, True), ((4, 6), None, True), ((4, 2), None, True), ((4, 6), "cayley", True),
    ((4, 4), "cayley", True), ((4, 2), "matrix_exp", True), ((4, 6), "householder", False),
    ((4, 3), "householder", False), ((4, 4), "householder", True)])
def test_parametrizations_orthogonal(shape, omap, triv):
    def build(lib):
        m = lib.nn.Linear(*shape)
        return lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=omap, use_trivialization=triv)
    a, b = _both(build)
    assert repr(a) == repr(b)
    _check_state_dicts(a, b)
    w = _np(b.weight).astype(np.float64)
    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(gram.shape[0]), atol=1e-5)
    _check_forward_backward(a, b, X4, calls=2, atol=5e-5)
    # assigning an orthogonal matrix stores it (right_inverse)
    q = np.linalg.qr(np.random.RandomState(2).randn(max(shape), min(shape)))[0].astype(np.float32)
    q = q if a.weight.shape[0] >= a.weight.shape[1] else q.T
    if triv or omap == "householder":
        with torch.no_grad():
            a.weight = torch.tensor(q)
        with tg.no_grad():
            b.weight = tg.tensor(q)
        _close(a.weight, b.weight, atol=1e-5)
        np.testing.assert_allclose(_np(b.weight), q, atol=1e-5)


def test_parametrizations_orthogonal_errors():
    _same_error(lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 2), orthogonal_map="nope"))
    _same_error(lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 2), "bias"))
    _same_error(lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 2), "nope"))

    def cayley_assign(lib):
        m = lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3), orthogonal_map="cayley",
                                                     use_trivialization=False)
        m.weight = lib.eye(3)
    _same_error(cayley_assign)


# -- the old hook-based weight_norm and spectral_norm -----------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, None])
def test_old_weight_norm(dim):
    def build(lib):
        return lib.nn.utils.weight_norm(lib.nn.Conv2d(2, 3, 2), dim=dim)
    for lib in LIBS:
        with pytest.warns(FutureWarning, match=r"`torch.nn.utils.weight_norm` is deprecated in favor of "
                                               r"`torch.nn.utils.parametrizations.weight_norm`\."):
            lib.nn.utils.weight_norm(lib.nn.Linear(2, 2))
    a, b = _both(build)
    assert repr(a) == repr(b)
    assert list(b.state_dict()) == list(a.state_dict()) == ["bias", "weight_g", "weight_v"]
    _check_state_dicts(a, b)
    x = np.random.RandomState(1).randn(2, 2, 4, 4).astype(np.float32)
    _check_forward_backward(a, b, x)
    _round_trip(a, b, build)
    torch.nn.utils.remove_weight_norm(a)
    tg.nn.utils.remove_weight_norm(b)
    assert isinstance(b.weight, tg.nn.Parameter) and not b._forward_pre_hooks
    assert list(b.state_dict()) == list(a.state_dict())
    _check_state_dicts(a, b)
    _same_error(lambda lib: lib.nn.utils.remove_weight_norm(lib.nn.Linear(2, 2)))
    _same_error(lambda lib: lib.nn.utils.weight_norm(lib.nn.utils.weight_norm(lib.nn.Linear(2, 2))))


@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
def test_old_spectral_norm_train_eval_state_dict_remove(kind):
    def build(lib):
        m = {"linear": lambda: lib.nn.Linear(4, 5), "conv": lambda: lib.nn.Conv2d(2, 3, 2),
             "convT": lambda: lib.nn.ConvTranspose2d(2, 3, 2)}[kind]()
        return lib.nn.utils.spectral_norm(m)
    a, b = _both(build)
    assert repr(a) == repr(b)
    assert list(b.state_dict()) == list(a.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    _check_state_dicts(a, b)
    x = X4 if kind == "linear" else np.random.RandomState(1).randn(2, 2, 4, 4).astype(np.float32)
    _check_forward_backward(a, b, x, calls=3)
    _check_state_dicts(a, b)
    u = _np(b.weight_u).copy()
    a.eval()
    b.eval()
    _check_forward_backward(a, b, x, calls=2)
    np.testing.assert_array_equal(_np(b.weight_u), u)
    _close(a.weight, b.weight)
    assert (b.state_dict()._metadata[""]["spectral_norm"] == a.state_dict()._metadata[""]["spectral_norm"]
            == {"weight.version": 1})
    a.train()
    b.train()
    _round_trip(a, b, build)
    torch.nn.utils.remove_spectral_norm(a)
    tg.nn.utils.remove_spectral_norm(b)
    assert isinstance(b.weight, tg.nn.Parameter) and not b._forward_pre_hooks
    assert list(b.state_dict()) == list(a.state_dict())
    _check_state_dicts(a, b)
    _check_forward_backward(a, b, x)


def test_old_spectral_norm_loads_a_version_0_state_dict():
    """A state_dict without the version and with `weight` but no `weight_v` (torch < 1.1): v is solved for."""
    def build(lib):
        return lib.nn.utils.spectral_norm(lib.nn.Linear(4, 5))
    a, b = _both(build)
    a.eval()
    b.eval()
    a(torch.tensor(X4))
    b(tg.tensor(X4))
    sd = {k: _np(v) for k, v in a.state_dict().items()}
    sd.pop("weight_v")
    sd["weight"] = _np(a.weight)
    a2, b2 = _both(build, seed=5)
    a2.load_state_dict({k: torch.tensor(v) for k, v in sd.items()})
    b2.load_state_dict({k: tg.tensor(v) for k, v in sd.items()})
    _check_state_dicts(a2, b2)


def test_old_spectral_norm_errors():
    _same_error(lambda lib: lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2), n_power_iterations=0))
    _same_error(lambda lib: lib.nn.utils.spectral_norm(lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2))))
    _same_error(lambda lib: lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2, bias=False), "bias"))
    _same_error(lambda lib: lib.nn.utils.remove_spectral_norm(lib.nn.Linear(2, 2)))


# -- fusion, skip_init, clip_grads_with_norm_, functional_call ---------------------------------------------
@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval(transpose):
    x = np.random.RandomState(1).randn(2, 2, 5, 5).astype(np.float32)

    def build(lib):
        conv = lib.nn.ConvTranspose2d(2, 3, 2) if transpose else lib.nn.Conv2d(2, 3, 2)
        bn = lib.nn.BatchNorm2d(3)
        with lib.no_grad():
            bn.weight.uniform_()
            bn.bias.uniform_()
        bn(conv(lib.tensor(x)))  # running statistics
        conv.eval()
        bn.eval()
        fused = lib.nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
        return fused, bn(conv(lib.tensor(x)))
    (fa, ra), (fb, rb) = _both(build)
    assert repr(fa) == repr(fb)
    assert isinstance(fb.weight, tg.nn.Parameter) and fb.weight.requires_grad
    _close(fa.weight, fb.weight)
    _close(fa.bias, fb.bias)
    _close(fb(tg.tensor(x)), rb, atol=1e-5)
    _check_forward_backward(fa, fb, x)
    _same_error(lambda lib: lib.nn.utils.fuse_conv_bn_eval(lib.nn.Conv2d(2, 3, 2), lib.nn.BatchNorm2d(3)))


def test_fuse_linear_bn_eval_and_weights():
    def build(lib):
        lin = lib.nn.Linear(4, 3)
        bn = lib.nn.BatchNorm1d(3)
        bn(lin(lib.tensor(X4)))
        lin.eval()
        bn.eval()
        return lib.nn.utils.fuse_linear_bn_eval(lin, bn), bn(lin(lib.tensor(X4)))
    (fa, ra), (fb, rb) = _both(build)
    assert repr(fa) == repr(fb)
    _close(fb(tg.tensor(X4)), rb)
    _check_forward_backward(fa, fb, X4)
    _same_error(lambda lib: lib.nn.utils.fuse_linear_bn_eval(lib.nn.Linear(4, 3).eval(),
                                                             lib.nn.BatchNorm1d(2).eval()))
    # the weight functions without a conv bias / bn affine
    w = np.random.RandomState(3).randn(3, 2, 2, 2).astype(np.float32)
    rm, rv = np.arange(3, dtype=np.float32), np.arange(1, 4, dtype=np.float32)
    out = [lib.nn.utils.fuse_conv_bn_weights(lib.tensor(w), None, lib.tensor(rm), lib.tensor(rv), 1e-5, None, None)
           for lib in LIBS]
    for t1, t2 in zip(*out):
        _close(t1, t2)
        assert t1.requires_grad == t2.requires_grad


def test_skip_init():
    for lib in LIBS:
        lib.manual_seed(0)
        m = lib.nn.utils.skip_init(lib.nn.Linear, 5, 3, bias=True)
        assert isinstance(m, lib.nn.Linear) and m.weight.shape == (3, 5) and isinstance(m.weight, lib.nn.Parameter)
        assert m.weight.requires_grad
        bn = lib.nn.utils.skip_init(lib.nn.BatchNorm1d, 4)
        assert bn.running_mean.shape == (4,)
    torch.manual_seed(0)
    tg.manual_seed(0)
    torch.nn.utils.skip_init(torch.nn.Linear, 5, 3)
    tg.nn.utils.skip_init(tg.nn.Linear, 5, 3)
    np.testing.assert_array_equal(_np(tg.randn(4)), _np(torch.randn(4)))  # no random numbers drawn
    _same_error(lambda lib: lib.nn.utils.skip_init(int))

    def no_device(lib):
        class M(lib.nn.Module):
            def __init__(self, n):
                super().__init__()
        return lib.nn.utils.skip_init(M, 3)
    _same_error(no_device)


@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grads_with_norm_(max_norm):
    def build(lib):
        ps = [lib.nn.Parameter(lib.randn(3, 2)), lib.nn.Parameter(lib.randn(4))]
        for p in ps:
            p.grad = lib.randn(p.shape)
        norm = lib.nn.utils.get_total_norm([p.grad for p in ps])
        out = lib.nn.utils.clip_grads_with_norm_(ps, max_norm, norm)
        return ps, norm, out
    (pa, na, oa), (pb, nb, ob) = _both(build)
    assert oa is None and ob is None
    _close(na, nb)
    for p, q in zip(pa, pb):
        _close(p.grad, q.grad)
    _same_error(lambda lib: lib.nn.utils.clip_grads_with_norm_([build(lib)[0][0]], 1.0, 2.0))


def test_stateless_functional_call():
    def build(lib):
        m = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(3))
        w = lib.randn(3, 4, requires_grad=True)
        return m, w
    (ma, wa), (mb, wb) = _both(build)
    before = _np(mb[0].weight).copy()
    outs = []
    for lib, m, w in ((torch, ma, wa), (tg, mb, wb)):
        with pytest.warns(FutureWarning, match="torch.func.functional_call"):
            y = lib.nn.utils.stateless.functional_call(m, {"0.weight": w}, (lib.tensor(X4),))
        y.pow(2).sum().backward()
        outs.append(y)
    _close(*outs)
    _close(wa.grad, wb.grad)
    assert mb[0].weight.grad is None
    np.testing.assert_array_equal(_np(mb[0].weight), before)
    _check_state_dicts(ma, mb)  # the running statistics were updated in the call, as torch's are
    _same_error(lambda lib: lib.nn.utils.stateless.functional_call(
        lib.nn.Linear(2, 2), {"nope": lib.zeros(1)}, lib.zeros(1, 2), strict=True))

    def tied(lib):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2, bias=False), lib.nn.Linear(2, 2, bias=False))
        m[1].weight = m[0].weight
        return m
    for lib in LIBS:
        m = tied(lib)
        w = lib.ones(2, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = lib.nn.utils.stateless.functional_call(m, {"0.weight": w}, lib.ones(1, 2))
        np.testing.assert_allclose(_np(y), [[4.0, 4.0]])
    _same_error(lambda lib: lib.nn.utils.stateless.functional_call(
        tied(lib), {"0.weight": lib.ones(2, 2), "1.weight": lib.zeros(2, 2)}, lib.ones(1, 2)))


def test_names_torch_has():
    for name in torch.nn.utils.__all__:
        if name in ("convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"):
            continue
        assert hasattr(tg.nn.utils, name), name
    for mod in ("parametrize", "parametrizations", "stateless"):
        for name in getattr(torch.nn.utils, mod).__all__:
            assert hasattr(getattr(tg.nn.utils, mod), name), (mod, name)


@pytest.mark.parametrize("shape,omap,triv", [((2, 4, 3), None, True), ((2, 3, 3), None, True),
                                             ((2, 3, 5), "householder", False)])
def test_parametrizations_orthogonal_batch_of_matrices(shape, omap, triv):
    def build(lib):
        m = lib.nn.Module()
        m.weight = lib.nn.Parameter(lib.randn(*shape))
        return lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=omap, use_trivialization=triv)
    a, b = _both(build)
    _check_state_dicts(a, b)
    _close(a.weight, b.weight, atol=5e-5)
    c = np.random.RandomState(4).randn(*shape).astype(np.float32)
    (a.weight * torch.tensor(c)).sum().backward()
    (b.weight * tg.tensor(c)).sum().backward()
    _close(a.parametrizations.weight.original.grad, b.parametrizations.weight.original.grad, atol=5e-5)
