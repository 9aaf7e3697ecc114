"""torch.amp beyond autocast itself: custom_fwd / custom_bwd on custom autograd Functions in CPU autocast regions
(inputs cast and autocast off with cast_inputs, the forward's state in backward), the CPU GradScaler (scale, unscale_
with the inf/NaN check per optimizer, the skipped step, update's growth and backoff, state_dict, pickling, its
errors), the deprecated torch.cuda.amp / torch.cpu.amp spellings and the torch.amp.* module paths. Compared with
torch 2.13, exactly: the models use elementwise ops and two-term sums, correctly rounded on both sides."""
import os
import pickle
import subprocess
import sys
import warnings

import pytest
import torch

import tapegrad

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def plain(v):
    """Tensors (nested in lists, tuples and dicts) as (dtype, values) for comparing the two libraries."""
    if isinstance(v, (tapegrad.Tensor, torch.Tensor)):
        return str(v.dtype), plain(v.detach().double().tolist())
    if isinstance(v, float) and v != v:
        return "nan"  # (equal to itself)
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def same(fn):
    got, want = fn(tapegrad), fn(torch)
    assert plain(got) == plain(want)
    return got


def caught(fn):
    """fn()'s result, or its exception's type and message."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)


def warned(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    return r, [(x.category.__name__, str(x.message)) for x in w]


# -- custom_fwd / custom_bwd -----------------------------------------------------------------------------------------
def functions(t, cast_inputs):
    """A matmul Function decorated with custom_fwd(cast_inputs) / custom_bwd; its forward and backward report the
    autocast state they ran under."""
    seen = []

    class MatMul(t.autograd.Function):
        @staticmethod
        @t.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, a, pair, scale=1.0, extra=None):
            b, c = pair
            seen.append(("fwd", t.is_autocast_enabled("cpu"), str(t.get_autocast_dtype("cpu")), str(a.dtype),
                         str(b.dtype), str(c.dtype), str(extra["w"].dtype) if extra else None))
            ctx.save_for_backward(a, b)
            return (a @ b) * scale + c

        @staticmethod
        @t.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            seen.append(("bwd", t.is_autocast_enabled("cpu"), str(t.get_autocast_dtype("cpu"))))
            return g @ b.t(), None, None, None

    return MatMul, seen


A = [[0.5, -1.25, 2.0, 0.75], [1.5, 0.25, -0.5, 1.0], [-2.0, 0.125, 0.5, -0.75]]
B = [[1.0, -0.5], [0.25, 2.0], [-1.5, 0.75], [0.5, 0.5]]


@pytest.mark.parametrize("cast_inputs", [None, "float32", "bfloat16", "float16"])
@pytest.mark.parametrize("region", [None, "bfloat16", "float16", "off"])
def test_custom_fwd_bwd_in_autocast_as_torch(cast_inputs, region):
    def f(t):
        MatMul, seen = functions(t, cast_inputs and getattr(t, cast_inputs))
        a = t.tensor(A, requires_grad=True)
        b, c = t.tensor(B, dtype=t.bfloat16), t.tensor([0.5, -1.0])
        extra = {"w": t.ones(2, dtype=t.float64)}
        if region is None:
            y = MatMul.apply(a, [b.float(), c], 2.0, extra)
        else:
            dtype = t.bfloat16 if region == "off" else getattr(t, region)
            with t.autocast("cpu", dtype=dtype, enabled=region != "off"):
                y = MatMul.apply(a, (b if region == "bfloat16" else b.float(), c), 2.0, extra)
        y.float().pow(2).sum().backward()
        return [y, a.grad, seen, y.grad_fn is not None]
    same(lambda t: caught(lambda: f(t)))


def test_custom_fwd_records_the_state_on_ctx_as_torch():
    def f(t):
        out = []

        class Id(t.autograd.Function):
            @staticmethod
            @t.amp.custom_fwd(device_type="cpu")
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            @t.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                out.append((ctx._fwd_used_autocast, str(ctx._dtype)))
                return g

        x = t.ones(2, requires_grad=True)
        with t.autocast("cpu", dtype=t.float16):
            Id.apply(x).sum().backward()
        Id.apply(x).sum().backward()
        return out
    same(f)


def test_custom_fwd_bwd_decorator_forms_and_errors_as_torch():
    for t in (tapegrad, torch):
        assert callable(t.amp.custom_fwd(device_type="cpu")) and callable(t.amp.custom_bwd(device_type="cpu"))
        assert t.amp.custom_fwd(len, device_type="cpu").__name__ == "len"
        assert not hasattr(t.cpu.amp, "custom_fwd")
    same(lambda t: caught(lambda: t.amp.custom_fwd(device_type=1)))
    same(lambda t: caught(lambda: t.amp.custom_bwd(device_type=None)))
    same(lambda t: caught(lambda: t.amp.custom_fwd(len)))
    same(lambda t: caught(lambda: t.amp.custom_bwd(len)))


def test_cuda_amp_custom_fwd_bwd_warn_and_pass_through_as_torch():
    def f(t):
        class Twice(t.autograd.Function):
            @staticmethod
            @t.cuda.amp.custom_fwd(cast_inputs=t.float16)
            def forward(ctx, x):
                return x * 2

            @staticmethod
            @t.cuda.amp.custom_bwd
            def backward(ctx, g):
                return g * 2

        x = t.tensor([1.5, -2.0], requires_grad=True)
        with t.autocast("cpu", dtype=t.bfloat16):
            y = Twice.apply(x)
        y.sum().backward()
        return [y, x.grad]
    same(lambda t: warned(lambda: f(t)))
    same(lambda t: warned(lambda: t.cuda.amp.custom_fwd(len).__name__))


def test_autocast_without_dtype_takes_the_regions_as_torch():
    def f(t):
        x = t.ones(2, 2)
        out = []
        with t.autocast("cpu", dtype=t.float16):
            with t.autocast("cpu"):
                out.append([str(t.get_autocast_dtype("cpu")), x @ x])
            with t.autocast("cpu", enabled=False):
                out.append(str(t.get_autocast_dtype("cpu")))
            with t.cpu.amp.autocast():
                out.append([str(t.get_autocast_dtype("cpu")), x @ x])
        out.append(str(t.get_autocast_dtype("cpu")))
        return out
    same(lambda t: warned(lambda: f(t)))
    same(lambda t: caught(lambda: t.autocast("meta")))
    same(lambda t: caught(lambda: t.autocast("meta", dtype=t.float16)))
    same(lambda t: [caught(lambda: t.get_autocast_dtype("lazy")), t.set_autocast_dtype("meta", t.float16)])
    same(lambda t: caught(lambda: t.autocast("foo", dtype=t.float16)))


# -- GradScaler ------------------------------------------------------------------------------------------------------
X = [[0.5, 1.0], [-1.0, 0.25], [2.0, -0.5], [0.75, -1.5]]


def training(t, make, steps=6, bad=None, unscale_at=(), optimizer="sgd", dtype="float32"):
    """A float32 model trained with a GradScaler: a loss made inf or NaN at the steps in bad, unscale_ (and a
    gradient clip) called by hand at those in unscale_at. Returns everything a step changes. (Elementwise ops and
    two-term sums only: their float32 results are correctly rounded on both sides, whatever the values.)"""
    bad = bad or {}
    scaler, msgs = warned(lambda: make(t))
    w = t.nn.Parameter(t.tensor([0.5, -0.25], dtype=getattr(t, dtype)))
    b = t.nn.Parameter(t.tensor(0.25, dtype=getattr(t, dtype)))
    if optimizer == "sgd":
        opt = t.optim.SGD([w, b], lr=0.125, momentum=0.5)
    else:
        opt = t.optim.SGD([w, b], lr=0.25, momentum=0.75, nesterov=True, weight_decay=0.5)
    out = [msgs, type(scaler).__name__, scaler.is_enabled(), scaler.get_scale(), scaler.state_dict()]
    for i in range(steps):
        opt.zero_grad()
        loss = ((t.tensor(X[i % len(X)], dtype=w.dtype) * w).sum() + b) ** 2
        if i in bad:
            loss = loss * float(bad[i])
        scaled = scaler.scale(loss)
        scaled.backward()
        row = [scaled, w.grad.clone()]
        if i in unscale_at:
            scaler.unscale_(opt)
            row.append(w.grad.clone())
            w.grad.clamp_(-1.0, 1.0)  # (what a gradient clip needs: the unscaled gradient)
        row += [scaler.step(opt), scaler._get_growth_tracker()]
        scaler.update()
        scale = getattr(scaler, "_scale", None)
        row += [scaler.get_scale(), scaler._get_growth_tracker(), w.detach().clone(), b.detach().clone(),
                scaler.state_dict(), scale if scale is None else scale.clone()]
        out.append(row)
    out.append({k: v for k, v in opt.state[b].items()})
    return out


@pytest.mark.parametrize("make, kw", [
    (lambda t: t.amp.GradScaler("cpu", init_scale=16.0, growth_interval=2), dict(bad={1: "inf"})),
    (lambda t: t.amp.GradScaler("cpu", init_scale=16.0, growth_interval=2), dict(bad={1: "inf", 4: "nan"},
                                                                                  unscale_at=(1, 2, 5))),
    (lambda t: t.amp.GradScaler("cpu", init_scale=3.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=1),
     dict(bad={2: "-inf"}, unscale_at=(2, 3))),
    (lambda t: t.amp.GradScaler("cpu", init_scale=1.0, growth_interval=3), dict(bad={0: "nan"}, steps=8)),
    (lambda t: t.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2), dict(bad={3: "inf"},
                                                                                 optimizer="nesterov", dtype="float64")),
    (lambda t: t.amp.GradScaler(device="cpu"), dict(bad={1: "inf"})),
    (lambda t: t.cpu.amp.GradScaler(init_scale=4.0, growth_interval=1), dict(bad={1: "inf"})),
    (lambda t: t.amp.GradScaler("cpu", enabled=False), dict()),
    (lambda t: t.amp.GradScaler("cuda", init_scale=4.0), dict()),
])
def test_grad_scaler_training_loop_as_torch(make, kw):
    same(lambda t: training(t, make, **kw))


def test_grad_scaler_unscales_reduced_and_double_gradients_as_torch():
    def f(t, dtype, scale):
        p = t.tensor([0.3, -1.7, 2.9], dtype=dtype, requires_grad=True)
        opt = t.optim.SGD([p], lr=1.0)
        scaler = t.amp.GradScaler("cpu", init_scale=scale)
        scaler.scale((p * p).sum()).backward()
        scaled = p.grad.clone()
        return [scaled, scaler.step(opt), p.grad, p, scaler.get_scale()]
    for dtype in ("bfloat16", "float64", "float32"):
        for scale in (3.0, 1024.0, 1.0):
            same(lambda t: f(t, getattr(t, dtype), scale))

    def half(t):
        p = t.zeros(2, dtype=t.float16, requires_grad=True)
        scaler = t.amp.GradScaler("cpu")
        scaler.scale(p.float().sum()).backward()
        return caught(lambda: scaler.unscale_(t.optim.SGD([p], lr=1.0)))
    same(half)


def test_grad_scaler_scales_tensors_and_nests_as_torch():
    def f(t):
        s = t.amp.GradScaler("cpu", init_scale=4.0)
        return [s.scale(t.tensor(2.0)), s.scale([t.tensor(2.0), (t.tensor([1.0, 2.0], dtype=t.float64),)]),
                s.scale(t.tensor([1.5, -2.0], dtype=t.bfloat16)), s.scale(t.tensor([1, 2])),
                caught(lambda: s.scale(3.0)), caught(lambda: s.scale([3.0])), s._scale, s._growth_tracker]
    same(f)


def test_grad_scaler_two_optimizers_one_skipped_as_torch():
    def f(t):
        a, b = t.ones(2, requires_grad=True), t.ones(2, requires_grad=True)
        oa, ob = t.optim.SGD([a], lr=0.5), t.optim.SGD([b], lr=0.5)
        s = t.amp.GradScaler("cpu", init_scale=8.0, growth_interval=1)
        s.scale((a * 2).sum() + (b * float("inf")).sum()).backward()
        out = [s.step(oa), s.step(ob)]
        s.update()
        return out + [a, b, s.get_scale(), s.state_dict()]
    same(f)


def test_grad_scaler_growth_that_overflows_is_dropped_as_torch():
    def f(t):
        s = t.amp.GradScaler("cpu", init_scale=3e38, growth_interval=1)
        p = t.ones(2, requires_grad=True)
        s.scale(p.sum()).backward()
        s.step(t.optim.SGD([p], lr=1e-40))
        s.update()
        return [s.get_scale(), s.state_dict()]
    same(f)


def test_grad_scaler_errors_as_torch():
    def f(t):
        s = t.amp.GradScaler("cpu")
        p = t.ones(2, requires_grad=True)
        opt = t.optim.SGD([p], lr=0.5)
        out = [caught(lambda: s.unscale_(opt)), caught(lambda: s.update()), caught(lambda: s.step(opt))]
        s.scale(p.sum()).backward()
        s.unscale_(opt)
        out += [caught(lambda: s.unscale_(opt)), s.step(opt), caught(lambda: s.step(opt)),
                caught(lambda: s.unscale_(opt)), caught(lambda: s.step(opt, closure=lambda: 0))]
        s.update()
        out += [s.get_scale(), caught(lambda: s.update())]
        s.update(new_scale=128.0)
        out.append(s.get_scale())
        s.update(new_scale=t.tensor(64.0))
        out += [s.get_scale(), caught(lambda: s.update(new_scale=t.tensor([1.0, 2.0]))),
                caught(lambda: s.update(new_scale=t.tensor(1.0, requires_grad=True))),
                caught(lambda: s.update(new_scale=3)),
                caught(lambda: t.amp.GradScaler("cpu", growth_factor=1.0)),
                caught(lambda: t.amp.GradScaler("cpu", backoff_factor=1.0)),
                caught(lambda: s.load_state_dict({})),
                caught(lambda: s.step(t.optim.SGD([t.zeros(2, requires_grad=True)], lr=1.0)))]
        return out
    same(f)


def test_grad_scaler_state_dict_and_pickle_as_torch():
    def f(t):
        s = t.amp.GradScaler("cpu", init_scale=32.0, growth_interval=3)
        out = [s.state_dict(), s._get_growth_tracker()]
        p = t.ones(2, requires_grad=True)
        opt = t.optim.SGD([p], lr=0.5)
        for _ in range(2):
            s.scale(p.sum()).backward()
            s.step(opt)
            s.update()
        sd = s.state_dict()
        fresh = t.amp.GradScaler("cpu")
        fresh.load_state_dict(sd)
        used = t.amp.GradScaler("cpu", init_scale=2.0)
        used.scale(p.sum())
        used.load_state_dict(sd)
        copy = pickle.loads(pickle.dumps(s))
        s.scale(p.sum()).backward()
        s.unscale_(opt)
        out += [sd, fresh.state_dict(), fresh.get_scale(), used.state_dict(), used._scale, used._growth_tracker,
                copy.state_dict(), copy._scale, caught(lambda: pickle.dumps(s)),
                t.amp.GradScaler("cpu", enabled=False).state_dict(),
                [s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()]]
        s.set_growth_factor(4.0)
        s.set_backoff_factor(0.125)
        s.set_growth_interval(7)
        return out + [s.state_dict()]
    same(f)


def test_grad_scaler_names_and_warnings_as_torch():
    same(lambda t: warned(lambda: [t.cpu.amp.GradScaler().is_enabled(), t.cuda.amp.GradScaler().is_enabled(),
                                   t.amp.GradScaler().is_enabled(), t.amp.GradScaler("cpu").is_enabled()]))
    for t in (tapegrad, torch):
        assert issubclass(t.cpu.amp.GradScaler, t.amp.GradScaler) and issubclass(t.cuda.amp.GradScaler,
                                                                                  t.amp.GradScaler)
        assert t.cpu.amp.GradScaler.__name__ == "GradScaler" and t.amp.grad_scaler.GradScaler is t.amp.GradScaler
        assert t.amp.autocast_mode.autocast is t.amp.autocast is t.autocast
        assert t.amp.autocast_mode.custom_fwd is t.amp.custom_fwd
        assert [m.name for m in t.amp.grad_scaler.OptState] == ["READY", "UNSCALED", "STEPPED"]
        scaler, _ = warned(lambda: t.cpu.amp.GradScaler(enabled=False))
        assert pickle.loads(pickle.dumps(scaler)).is_enabled() is False
    same(lambda t: [sorted(t.amp.__all__), t.amp.autocast_mode.__all__, t.amp.grad_scaler.__all__])


def test_module_paths_import_as_torch_under_the_alias(tmp_path):
    """`import torch.amp.grad_scaler`, `from torch.cpu.amp import ...` as a script run by `python -m tapegrad`."""
    script = tmp_path / "paths.py"
    script.write_text(
        "import warnings\nwarnings.simplefilter('ignore')\n"
        "import torch.amp.grad_scaler, torch.amp.autocast_mode\n"
        "from torch.amp.grad_scaler import GradScaler, OptState\n"
        "from torch.amp.autocast_mode import autocast, custom_fwd, custom_bwd\n"
        "from torch.cpu.amp import autocast as cpu_autocast, GradScaler as CpuGradScaler\n"
        "from torch.cuda.amp import custom_fwd as cfwd, custom_bwd as cbwd\n"
        "import torch.cpu.amp\n"
        "s = CpuGradScaler(init_scale=8.0)\n"
        "with cpu_autocast():\n"
        "    print(torch.is_autocast_enabled('cpu'), torch.get_autocast_dtype('cpu'))\n"
        "print(GradScaler is torch.amp.GradScaler, OptState.STEPPED, s.get_scale(), torch.cpu.amp.GradScaler.__name__)\n")
    want = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    got = subprocess.run([sys.executable, "-m", "tapegrad", str(script)], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
    assert want.returncode == 0, want.stderr
    assert (got.returncode, got.stdout) == (0, want.stdout), got.stderr
