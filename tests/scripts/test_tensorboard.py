"""torch.utils.tensorboard.SummaryWriter: the event files tapegrad writes read back (with TensorBoard's own
reader) as torch 2.13's do; without the optional package, a clear ImportError naming the extra."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import tapegrad

import tensorboard  # noqa: E402,F401  (the test extra installs it: CI must run these, never skip them)
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def log(lib, folder):
    from importlib import import_module
    tb = import_module(lib.__name__ + ".utils.tensorboard")
    lib.manual_seed(0)
    values = lib.linspace(-3, 3, 101) ** 3
    with tb.SummaryWriter(log_dir=str(folder)) as w:
        for step in range(5):
            w.add_scalar("loss/train", 1.0 / (step + 1), step)
            w.add_scalar("lr", lib.tensor(0.1 * step), global_step=step, new_style=True)
            w.add_scalars("run", {"a": step * 2.0, "b": -step}, step)
        w.add_histogram("weights", values, 3)
        w.add_histogram("weights_auto", values, 4, bins="auto")
        w.add_histogram("weights_few", values, 5, bins=10, max_bins=4)
        w.add_text("note", "hello tensorboard", 1)
        w.add_tensor("t", lib.arange(6).reshape(2, 3), 2)
        logdir = w.get_logdir()
    return logdir


def read(folder):
    acc = EventAccumulator(str(folder), size_guidance={"tensors": 0, "scalars": 0, "histograms": 0})
    acc.Reload()
    tags = acc.Tags()
    out = {"scalars": {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in tags["scalars"]},
           "histograms": {t: [(e.step, e.histogram_value) for e in acc.Histograms(t)] for t in tags["histograms"]},
           "tensors": {t: [(e.step, e.tensor_proto.SerializeToString()) for e in acc.Tensors(t)]
                       for t in tags["tensors"]}}
    return out


def test_event_files_read_back_as_torchs(tmp_path):
    assert log(tapegrad, tmp_path / "tg") == str(tmp_path / "tg")
    log(torch, tmp_path / "pt")
    got, want = read(tmp_path / "tg"), read(tmp_path / "pt")
    assert got["scalars"] == want["scalars"] and "loss/train" in got["scalars"]
    assert got["tensors"] == want["tensors"] and "note/text_summary" in got["tensors"]
    assert sorted(got["histograms"]) == sorted(want["histograms"]) == ["weights", "weights_auto", "weights_few"]
    for tag in got["histograms"]:
        (gs, g), = got["histograms"][tag]
        (ws, w), = want["histograms"][tag]
        assert gs == ws and g.num == w.num and list(g.bucket) == list(w.bucket)
        np.testing.assert_allclose(list(g.bucket_limit), list(w.bucket_limit), rtol=1e-6)
        np.testing.assert_allclose([g.min, g.max, g.sum, g.sum_squares], [w.min, w.max, w.sum, w.sum_squares],
                                   rtol=1e-5)
    # add_scalars: one sub-folder per scalar, named as torch names them
    def subfolders(p):
        return sorted(d for d in os.listdir(p) if os.path.isdir(p / d))
    assert subfolders(tmp_path / "tg") == subfolders(tmp_path / "pt") == ["run_a", "run_b"]
    for sub in ("run_a", "run_b"):
        assert read(tmp_path / "tg" / sub)["scalars"] == read(tmp_path / "pt" / sub)["scalars"]


def test_default_log_dir_and_purge_step(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from tapegrad.utils.tensorboard import SummaryWriter
    w = SummaryWriter(comment="_lr0.1", purge_step=2)
    w.add_scalar("x", 1.0, 3)
    w.close()
    w.close()  # a second close does nothing, as torch's
    runs = os.listdir(tmp_path / "runs")
    assert len(runs) == 1 and runs[0].endswith("_lr0.1")
    assert read(tmp_path / "runs" / runs[0])["scalars"] == {"x": [(3, 1.0)]}


def test_what_is_not_written_is_a_clear_error(tmp_path):
    from tapegrad.utils.tensorboard import SummaryWriter
    with SummaryWriter(str(tmp_path)) as w:
        for name in ("add_graph", "add_figure", "add_embedding", "add_audio", "add_video"):
            with pytest.raises(NotImplementedError, match=name):
                getattr(w, name)(None, None)


def log_images(lib, folder):
    from importlib import import_module
    tb = import_module(lib.__name__ + ".utils.tensorboard")
    rng = np.random.default_rng(0)
    chw = rng.random((3, 5, 7)).astype(np.float32) * 1.2 - 0.1  # out of [0, 1] on both sides: clipped
    with tb.SummaryWriter(log_dir=str(folder)) as w:
        w.add_image("chw_float", lib.tensor(chw), 1)
        w.add_image("hwc_uint8", lib.tensor(rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)), 2, dataformats="HWC")
        w.add_image("rgba_hwc_double", rng.random((4, 3, 4)), 3, dataformats="HWC")  # a NumPy array as well
        w.add_image("grey_1hw", lib.tensor(chw[:1]), 4)
        w.add_image("grey_hw", lib.tensor(chw[0]), 5, dataformats="HW")
        w.add_images("batch_nchw", lib.tensor(rng.random((10, 3, 2, 3)).astype(np.float32)), 6)
        w.add_images("batch_nhwc_grey", lib.tensor(rng.random((3, 2, 3, 1)).astype(np.float32)), 7,
                     dataformats="NHWC")


def read_images(folder):
    import io
    from PIL import Image
    acc = EventAccumulator(str(folder), size_guidance={"images": 0})
    acc.Reload()
    return {t: [(e.step, e.width, e.height, np.asarray(Image.open(io.BytesIO(e.encoded_image_string))))
                for e in acc.Images(t)] for t in acc.Tags()["images"]}


def test_images_read_back_as_torchs(tmp_path):
    log_images(tapegrad, tmp_path / "tg")
    log_images(torch, tmp_path / "pt")
    got, want = read_images(tmp_path / "tg"), read_images(tmp_path / "pt")
    assert sorted(got) == sorted(want) and len(got) == 7
    for tag in got:
        (gs, gw, gh, g), = got[tag]
        (ws, ww, wh, w), = want[tag]
        assert (gs, gw, gh) == (ws, ww, wh), tag
        assert g.dtype == w.dtype == np.uint8 and g.shape == w.shape, tag
        np.testing.assert_array_equal(g, w, err_msg=tag)  # the decoded pixels, exactly
    assert got["batch_nchw"][0][3].shape == (2 * 2, 3 * 8, 3)  # 10 images tiled 8 to a row


def log_hparams(lib, folder):
    from importlib import import_module
    tb = import_module(lib.__name__ + ".utils.tensorboard")
    with tb.SummaryWriter(log_dir=str(folder)) as w:
        w.add_hparams({"lr": 0.1, "bsize": 32, "optim": "adam", "nesterov": True, "skip": None,
                       "wd": lib.tensor([1e-4])}, {"hparam/accuracy": 0.9, "hparam/loss": 0.25},
                      hparam_domain_discrete={"optim": ["adam", "sgd"], "bsize": [16, 32]}, run_name="run0",
                      global_step=3)


def test_hparams_read_back_as_torchs(tmp_path):
    log_hparams(tapegrad, tmp_path / "tg")
    log_hparams(torch, tmp_path / "pt")
    for run in ("run0",):
        acc = {}
        for k in ("tg", "pt"):
            a = EventAccumulator(str(tmp_path / k / run), size_guidance={"tensors": 0, "scalars": 0})
            a.Reload()
            acc[k] = a
        assert acc["tg"].PluginTagToContent("hparams") == acc["pt"].PluginTagToContent("hparams")
        assert len(acc["tg"].PluginTagToContent("hparams")) == 3
        for tag in ("hparam/accuracy", "hparam/loss"):
            assert ([(e.step, e.value) for e in acc["tg"].Scalars(tag)]
                    == [(e.step, e.value) for e in acc["pt"].Scalars(tag)] != [])


def test_image_and_hparams_bad_input_as_torch(tmp_path):
    from tapegrad.utils.tensorboard import SummaryWriter as TgWriter
    from torch.utils.tensorboard import SummaryWriter as PtWriter
    calls = [lambda w, lib: w.add_image("x", lib.zeros(3, 4), 0),  # CHW asked, 2-d given
             lambda w, lib: w.add_image("x", lib.zeros(3, 4, 4), 0, dataformats="CCW"),
             lambda w, lib: w.add_hparams([1], {}),
             lambda w, lib: w.add_hparams({"a": [1]}, {"m": 1.0}),
             lambda w, lib: w.add_hparams({"a": 1}, {"m": 1.0}, hparam_domain_discrete={"a": ["x"]})]
    with TgWriter(str(tmp_path / "tg")) as tw, PtWriter(str(tmp_path / "pt")) as pw:
        for call in calls:
            with pytest.raises(Exception) as want:
                call(pw, torch)
            with pytest.raises(type(want.value)) as got:
                call(tw, tapegrad)
            assert " ".join(str(got.value).split()) == " ".join(str(want.value).split())


def test_without_tensorboard_the_error_names_the_extra():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "import tapegrad; tapegrad.install_as_torch()\n"
            "try:\n    from torch.utils.tensorboard import SummaryWriter\n"
            "except ImportError as e:\n    print(type(e).__name__, e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=root))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ImportError") and 'pip install "tapegrad[tensorboard]"' in r.stdout


def test_bfloat16_values_are_written_as_torch_writes_them(tmp_path):
    """torch converts bfloat16 to float16 before NumPy sees it; so does tapegrad (its .numpy() refuses it)."""
    def run(lib, folder):
        from importlib import import_module
        tb = import_module(lib.__name__ + ".utils.tensorboard")
        x = lib.linspace(0, 1, 48).reshape(3, 4, 4).to(lib.bfloat16)
        with tb.SummaryWriter(log_dir=str(folder)) as w:
            w.add_scalar("s", x[1, 2, 3], 0)
            w.add_histogram("h", x, 0, bins=5)
            w.add_image("i", x, 0)
    run(tapegrad, tmp_path / "tg")
    run(torch, tmp_path / "pt")
    got, want = read(tmp_path / "tg"), read(tmp_path / "pt")
    assert got["scalars"] == want["scalars"]
    assert [list(e.bucket) for _, e in got["histograms"]["h"]] == [list(e.bucket) for _, e in want["histograms"]["h"]]
    (_, _, _, gi), = read_images(tmp_path / "tg")["i"]
    (_, _, _, wi), = read_images(tmp_path / "pt")["i"]
    np.testing.assert_array_equal(gi, wi)
