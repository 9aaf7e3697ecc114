"""The README's first command, `python -m tapegrad.demo`: it runs, learns the digits, and repeats itself."""
import io
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tapegrad import demo

REPO = Path(__file__).resolve().parents[1]
# The demo's data ships inside scikit-learn, which the `test` extra installs: these tests never skip.


def test_command_line_run(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "tapegrad.demo", "--epochs", "2", "--plot", "curve.png"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"held-out accuracy: \d+\.\d\d% \(\d+/359\)", out)
    assert re.search(r"time per training step: \d+\.\d+ ms", out)
    assert "epoch   1/2 [" in proc.stderr and "epoch   2/2 [" in proc.stderr and "loss " in proc.stderr
    plotted = (tmp_path / "curve.png").exists()
    assert ("loss curve saved to " + str(tmp_path / "curve.png")) in out if plotted else \
        "matplotlib is not installed: skipping the loss-curve plot" in out


def test_default_plot_goes_outside_the_working_tree_and_its_path_is_printed(tmp_path):
    """The default PNG goes to the temporary directory, not the current one (a clone's working tree)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "cwd").mkdir()
    proc = subprocess.run([sys.executable, "-m", "tapegrad.demo", "--epochs", "1"], cwd=tmp_path / "cwd", env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "cwd").iterdir()) == []
    assert f"loss curve saved to {tmp_path / 'tmp' / 'tapegrad-demo-loss.png'}" in proc.stdout
    assert (tmp_path / "tmp" / "tapegrad-demo-loss.png").read_bytes()[:4] == b"\x89PNG"
    assert "training loss, mean over the last epoch: " in proc.stdout and "final training loss" not in proc.stdout


def test_compilation_is_announced_once_on_stderr_when_not_a_terminal(monkeypatch):
    """A kernel load slower than a cache hit (a compilation) is announced on a plain stream too."""
    import tapegrad
    stream = io.StringIO()
    monkeypatch.setattr(demo, "NOTICE_AFTER_S", 0.05)
    monkeypatch.setattr(tapegrad, "warmup", lambda: __import__("time").sleep(0.5))
    bar = demo.ProgressBar(4, stream=stream)
    with demo._notice_if_slow(bar):
        tapegrad.warmup()
    assert stream.getvalue() == demo.COMPILE_NOTICE + "\n"
    assert "about 2-3 minutes" in demo.COMPILE_NOTICE
    fast = io.StringIO()
    bar = demo.ProgressBar(4, stream=fast)
    monkeypatch.setattr(demo, "NOTICE_AFTER_S", 5.0)
    with demo._notice_if_slow(bar):
        pass                                                      # a cache hit: nothing said
    assert fast.getvalue() == ""


def test_demo_extra_brings_matplotlib_and_the_readme_shows_its_plot():
    import tomllib
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[ ]", req)[0] for req in extras["demo"]}
    assert {"scikit-learn", "matplotlib"} <= names
    readme = (REPO / "README.md").read_text()
    assert "![" in readme and "(docs/demo-loss.png)" in readme
    assert (REPO / "docs" / "demo-loss.png").read_bytes()[:4] == b"\x89PNG"


def test_full_demo_reaches_95_percent_and_is_repeatable(capsys):
    result = demo.main(["--no-plot"])
    assert result["accuracy"] >= 0.95
    assert result["n_test"] == 359 and result["steps"] == 30 * 23
    assert result["losses"][-1] < 0.1 < result["losses"][0]
    again = demo.train(epochs=2, quiet=True)
    once_more = demo.train(epochs=2, quiet=True)
    assert again["losses"] == once_more["losses"]                  # seeded: the same run twice
    assert demo.train(epochs=2, seed=1, quiet=True)["losses"] != again["losses"]
    out = capsys.readouterr().out
    assert "held-out accuracy: " in out and "time per training step: " in out
    last_epoch = result["losses"][-23:]
    assert (f"training loss, mean over the last epoch: {sum(last_epoch) / 23:.6f} "
            f"(its last batch: {result['losses'][-1]:.6f})") in out


def test_missing_scikit_learn_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(SystemExit) as exc:
        demo.main(["--epochs", "1"])
    assert 'pip install "tapegrad[demo]"' in str(exc.value.code)


def test_missing_matplotlib_is_skipped_with_a_message(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    demo.main(["--epochs", "1", "--plot", str(tmp_path / "x.png")])
    assert "matplotlib is not installed: skipping the loss-curve plot" in capsys.readouterr().out
    assert not (tmp_path / "x.png").exists()


def test_plot_is_saved_where_it_says(monkeypatch, capsys, tmp_path):
    """With a stand-in matplotlib that records the calls (the real one is an optional install)."""
    saved = []

    class Axes:
        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    class Figure:
        def tight_layout(self):
            pass

        def savefig(self, path):
            saved.append(path)
            Path(path).write_bytes(b"\x89PNG fake")

    pyplot = types.ModuleType("matplotlib.pyplot")
    pyplot.subplots = lambda *args, **kwargs: (Figure(), Axes())
    pyplot.close = lambda fig: None
    matplotlib = types.ModuleType("matplotlib")
    matplotlib.use = lambda backend: None
    matplotlib.pyplot = pyplot
    monkeypatch.setitem(sys.modules, "matplotlib", matplotlib)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    target = tmp_path / "loss.png"
    demo.main(["--epochs", "2", "--plot", str(target)])
    assert saved == [str(target)] and target.exists()
    assert f"loss curve saved to {target}" in capsys.readouterr().out


def test_progress_bar_on_a_terminal_redraws_in_place():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    bar = demo.ProgressBar(8, width=10, stream=stream)
    for i in range(1, 9):
        bar.update(1, 3, i, 0.5)
    bar.end_epoch(1, 3, 0.25)
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.endswith("epoch   1/3 [==========]   8/8 loss 0.2500\n")
    assert "epoch   1/3 [=====>    ]   4/8 loss 0.5000" in text
    plain = io.StringIO()
    bar = demo.ProgressBar(8, stream=plain)
    bar.update(1, 3, 4, 0.5)
    bar.end_epoch(1, 3, 0.25)
    assert "\r" not in plain.getvalue() and plain.getvalue().count("\n") == 1
