"""torch.cuda / accelerator / mps / cpu / backends / amp / autocast / version / threads, against torch 2.13
(a CPU-only build: the test oracle)."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

import tapegrad
from test_devices import same

QUERIES = [
    lambda t: t.cuda.is_available(), lambda t: t.cuda.device_count(), lambda t: t.cuda.is_initialized(),
    lambda t: t.cuda.is_bf16_supported(), lambda t: t.cuda.memory_allocated(), lambda t: t.cuda.max_memory_allocated(),
    lambda t: t.cuda.memory_reserved(), lambda t: t.cuda.empty_cache(), lambda t: t.cuda.manual_seed(1),
    lambda t: t.cuda.manual_seed_all(1), lambda t: t.cuda.seed(),
    lambda t: t.cuda.synchronize(), lambda t: t.cuda.current_device(), lambda t: t.cuda.get_device_name(),
    lambda t: t.cuda.get_device_properties(0), lambda t: t.cuda.get_device_capability(),
    lambda t: t.cuda.mem_get_info(),
    lambda t: t.cuda.initial_seed(), lambda t: t.cuda.get_rng_state(), lambda t: t.cuda.current_stream(),
    lambda t: t.accelerator.is_available(), lambda t: t.accelerator.device_count(),
    lambda t: t.accelerator.current_accelerator(), lambda t: t.accelerator.current_accelerator(check_available=True),
    lambda t: t.accelerator.synchronize(), lambda t: t.accelerator.current_device_index(),
    lambda t: t.mps.is_available(), lambda t: t.mps.device_count(), lambda t: t.mps.manual_seed(3),
    lambda t: t.mps.synchronize(), lambda t: t.mps.empty_cache(),
    lambda t: t.cpu.is_available(), lambda t: t.cpu.device_count(), lambda t: t.cpu.current_device(),
    lambda t: t.cpu.synchronize(),
    lambda t: t.backends.cudnn.is_available(), lambda t: t.backends.cudnn.version(), lambda t: t.backends.cudnn.enabled,
    lambda t: t.backends.cudnn.benchmark, lambda t: t.backends.cudnn.deterministic,
    lambda t: t.backends.cudnn.allow_tf32,
    lambda t: t.backends.mps.is_available(), lambda t: t.backends.mps.is_built(), lambda t: t.backends.cuda.is_built(),
    lambda t: t.backends.cuda.matmul.allow_tf32,
    lambda t: t.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
    lambda t: t.is_autocast_enabled(), lambda t: t.version.cuda, lambda t: t.version.hip,
    lambda t: t.set_num_threads(0), lambda t: t.set_num_threads(-1), lambda t: t.set_num_threads(1.5),
    lambda t: t.get_float32_matmul_precision(),
]


@pytest.mark.parametrize("case", range(len(QUERIES)))
def test_environment_queries(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(QUERIES[case])


def _flag_values(t):
    c = t.backends.cudnn
    return (c.enabled, c.benchmark, c.deterministic, c.allow_tf32, c.fp32_precision, t.backends.mha.get_fastpath_enabled())


def test_cudnn_flags_and_mha_fastpath_set_and_restore_as_torchs():
    """backends.cudnn.flags (a context manager whose `enabled` defaults to False), set_flags (returns the previous
    flags), backends.mha.set_fastpath_enabled: the values torch reports inside and after."""
    def f(t):
        seen = [_flag_values(t)]
        with t.backends.cudnn.flags(allow_tf32=False):
            seen.append(_flag_values(t))
            with t.backends.cudnn.flags(enabled=True, deterministic=True):
                seen.append(_flag_values(t))
            seen.append(_flag_values(t))
        seen.append(_flag_values(t))
        orig = t.backends.cudnn.set_flags(_benchmark=True)
        seen += [orig, _flag_values(t)]
        t.backends.cudnn.set_flags(*orig)
        t.backends.mha.set_fastpath_enabled(False)
        seen.append(_flag_values(t))
        t.backends.mha.set_fastpath_enabled(True)
        return seen + [_flag_values(t)]
    same(f)


def test_cuda_and_mps_seeding_leave_the_cpu_stream_alone():
    """In a CPU-only torch, torch.cuda.manual_seed(_all) and torch.mps.manual_seed do not seed the CPU
    generator: a script's CPU stream comes from torch.manual_seed alone."""
    def draws(t):
        t.manual_seed(1)
        t.cuda.manual_seed(2)
        t.cuda.manual_seed_all(3)
        t.mps.manual_seed(4)
        return t.rand(4).tolist()
    assert draws(tapegrad) == draws(torch)


def test_cuda_device_context_raises_on_entry():
    def f(t):
        with t.cuda.device(0):
            pass
    same(f)


def grad_scaler_script(t, make):
    """The AMP training idiom, with the scaler disabled (or, for CUDA, unavailable and so disabled)."""
    t.manual_seed(0)
    model = t.nn.Linear(3, 1)
    opt = t.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler = make(t)
    out = [scaler.is_enabled(), scaler.get_scale(), scaler.state_dict(), [str(w.message) for w in caught]]
    for _ in range(3):
        with t.autocast(device_type="cuda", dtype=t.float16, enabled=False):
            loss = model(t.randn(4, 3)).pow(2).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        out.append(round(loss.item(), 6))
    scaler.load_state_dict(scaler.state_dict())  # (a disabled scaler's is a no-op: the amp recipe's checkpoint)
    scaler.load_state_dict({})
    return out


@pytest.mark.parametrize("make", [lambda t: t.amp.GradScaler("cuda"), lambda t: t.amp.GradScaler(),
                                  lambda t: t.amp.GradScaler("cuda", enabled=False),
                                  lambda t: t.cuda.amp.GradScaler(), lambda t: t.cuda.amp.GradScaler(enabled=False),
                                  lambda t: t.amp.GradScaler("cpu", enabled=False)])
def test_grad_scaler_passes_through(make):
    assert grad_scaler_script(tapegrad, make) == grad_scaler_script(torch, make)


def test_autocast_cuda_is_disabled_with_torchs_warning():
    def f(t):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with t.autocast("cuda"):
                y = t.ones(2, 2) @ t.ones(2, 2)
            with t.cuda.amp.autocast():
                pass
        return repr(y.dtype), [(w.category.__name__, str(w.message)) for w in caught]
    assert f(tapegrad) == f(torch)


def test_cpu_amp_autocast_disabled_warns_as_torch():
    def f(t):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with t.cpu.amp.autocast(enabled=False):
                y = t.ones(2) * 2
        return y.tolist(), [(w.category.__name__, str(w.message)) for w in caught]
    assert f(tapegrad) == f(torch)


def test_autocast_disabled_on_cpu_passes_through_and_decorates():
    for t in (tapegrad, torch):
        @t.autocast("cpu", enabled=False)
        def f(x):
            return x @ x
        with t.autocast(device_type="cpu", enabled=False):
            assert f(t.ones(2, 2)).dtype == t.float32


def test_what_amp_lacks_is_a_clear_error():
    """autocast("cpu") works (tests/scripts/test_autocast.py), and so does an enabled CPU GradScaler
    (tests/scripts/test_amp_scaler.py); another device's autocast says that tapegrad lacks it."""
    with pytest.raises(NotImplementedError, match="autocast"):
        with tapegrad.autocast("mps"):
            pass
    same(lambda t: t.autocast(0))


@pytest.mark.parametrize("other", ["2.0", "2.13", "2.13.0", "2.13.1", "2.14", "3", "1.13.1", "2.12.0+cu118",
                                   (2, 0), (2, 13), (2, 13, 0), (2, 14), [1, 9]])
def test_version_compares_as_torchs(other):
    def cmps(t):
        v = t.__version__
        return [v >= other, v > other, v < other, v <= other, isinstance(v, str)]
    assert cmps(tapegrad) == cmps(torch)


def test_version_strings():
    assert tapegrad.__version__.startswith("2.13.0") and tapegrad.version.__version__ is tapegrad.__version__
    assert tapegrad.__version__.split("+")[0] == torch.__version__.split("+")[0]
    assert tapegrad.version.tapegrad == "0.1.0"
    assert tapegrad.__version__ == "2.13.0+tapegrad0.1.0" and tapegrad.__version__ != "parrot"
    assert (tapegrad.__version__ > "parrot") == ("2.13.0+tapegrad0.1.0" > "parrot")  # not a version: as str


def test_threads_in_a_subprocess():
    """set_num_threads sets Numba's and (threadpoolctl installed) the BLAS's threads."""
    code = ("import tapegrad as t, numba\n"
            "from threadpoolctl import threadpool_info\n"
            "t.set_num_threads(1)\n"
            "print(t.get_num_threads(), numba.get_num_threads(), "
            "sorted({i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'}))\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=root))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "1", "[1]"]


def test_import_stays_light():
    code = ("import sys, tapegrad\n"
            "print(sorted(m for m in ('numba', 'threadpoolctl', 'ml_dtypes', 'tensorboard', 'torch') "
            "if m in sys.modules))")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=root))
    assert r.stdout.strip() == "[]", r.stderr


def test_onnx_export_and_hub_load_are_clear_errors():
    with pytest.raises(NotImplementedError, match="torch.onnx.export"):
        tapegrad.onnx.export(None, None, "m.onnx")
    with pytest.raises(NotImplementedError, match="torch.hub.load"):
        tapegrad.hub.load("pytorch/vision", "resnet18")
    assert tapegrad.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export() is False


def test_hub_dir_follows_torch_home(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    assert tapegrad.hub.get_dir() == torch.hub.get_dir() == os.path.join(str(tmp_path), "hub")
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert tapegrad.hub.get_dir() == torch.hub.get_dir()


def test_hub_downloads_and_loads_a_state_dict(tmp_path):
    src = tmp_path / "weights.pt"
    tapegrad.save({"w": tapegrad.arange(3.0)}, str(src))
    url = src.as_uri()  # (file:// : no network in the tests)
    dst = tmp_path / "copy.pt"
    tapegrad.hub.download_url_to_file(url, str(dst))
    assert dst.read_bytes() == src.read_bytes()
    with pytest.raises(RuntimeError, match="invalid hash value"):
        tapegrad.hub.download_url_to_file(url, str(tmp_path / "bad.pt"), hash_prefix="0000")
    assert not (tmp_path / "bad.pt").exists()
    state = tapegrad.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "cache"))
    assert state["w"].tolist() == [0.0, 1.0, 2.0] and (tmp_path / "cache" / "weights.pt").exists()


@pytest.mark.parametrize("omp", [None, "1", "64", "abc", "0"])
def test_get_num_threads_reads_omp_num_threads_as_torch(omp):
    """Before set_num_threads: OMP_NUM_THREADS where it is a positive integer, at most the CPUs, else the CPUs."""
    code = "import {lib} as t; print(t.get_num_threads())"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if omp is not None:
        env["OMP_NUM_THREADS"] = omp
    outs = [subprocess.run([sys.executable, "-c", code.format(lib=lib)], capture_output=True, text=True, timeout=120,
                           env=dict(env, PYTHONPATH=root)).stdout for lib in ("torch", "tapegrad")]
    assert outs[1] == outs[0] and outs[0].strip()


def test_cpu_library_backends_and_torch_c_entries():
    """torch.backends.mkldnn / mkl / openmp / cpu / opt_einsum (tapegrad calls none of those libraries: not available,
    their flags settable), torch._C's entries that code outside torch calls (torchvision's _log_api_usage_once), and
    a clear AttributeError for the rest; torch.is_inference, torch._standard_gamma / _sample_dirichlet (torchvision's
    mixup) drawing torch's streams."""
    b = tapegrad.backends
    assert [b.mkldnn.is_available(), b.mkl.is_available(), b.openmp.is_available()] == [False, False, False]
    assert b.cpu.get_cpu_capability() == "DEFAULT" and b.opt_einsum.is_available() is False
    with b.mkldnn.flags(enabled=False):
        assert b.mkldnn.enabled is False
    assert b.mkldnn.enabled is True
    with b.mkldnn.verbose(b.mkldnn.VERBOSE_ON), b.mkl.verbose(b.mkl.VERBOSE_ON):
        pass
    with pytest.raises(ValueError, match="opt_einsum is not available"):
        b.opt_einsum.set_flags(True)
    assert tapegrad._C._log_api_usage_once("torchvision.models.resnet.ResNet") is None
    assert tapegrad._C._get_tracing_state() is None
    with pytest.raises(AttributeError, match=r"tapegrad has no C\+\+ extension"):
        tapegrad._C._cuda_getDeviceCount
    alpha = [[0.5, 1.0, 2.0], [3.0, 0.2, 1.0]]
    for L in (tapegrad, torch):
        L.manual_seed(0)
    draws = [[L._sample_dirichlet(L.tensor(alpha)), L._standard_gamma(L.tensor(alpha)),
              L._standard_gamma(L.tensor(alpha, dtype=L.float64), L.Generator().manual_seed(5))]
             for L in (tapegrad, torch)]
    for ours, theirs in zip(*draws):
        assert str(ours.dtype) == str(theirs.dtype)
        assert ours.tolist() == theirs.tolist()
    assert [torch.is_inference(torch.ones(1)), tapegrad.is_inference(tapegrad.ones(1))] == [False, False]
    with tapegrad.inference_mode():
        assert tapegrad.is_inference(tapegrad.ones(1))
