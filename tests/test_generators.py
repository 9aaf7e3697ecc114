"""The generators' command lines (docs/ops.md, kernels/elementwise.py, rule_saves.py, derived_rules.py): --help and a plain run write
nothing, and --write leaves a current file untouched (a rewrite would invalidate Numba's kernel cache)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tapegrad import derivatives, docs_ops, rule_reads
from tapegrad.kernels import codegen

REPO = Path(__file__).resolve().parents[1]
GENERATORS = [("tapegrad.docs_ops", docs_ops.TARGET), ("tapegrad.kernels.codegen", codegen.TARGET),
              ("tapegrad.rule_reads", rule_reads.TARGET), ("tapegrad.derivatives", derivatives.TARGET)]


def _run(module, *args):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


def _stamp(path):
    st = path.stat()
    return st.st_mtime_ns, st.st_ino, path.read_bytes()


@pytest.mark.parametrize("module,target", GENERATORS)
def test_help_check_and_identical_write_leave_the_file_alone(module, target):
    before = _stamp(target)
    proc = _run(module, "--help")
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: python -m {module}") and "--write" in proc.stdout
    proc = _run(module)                                     # the default only checks
    assert proc.returncode == 0 and proc.stdout.strip() == f"{target} is up to date"
    proc = _run(module, "--write")                          # current already: not rewritten
    assert proc.returncode == 0 and "not rewritten" in proc.stdout
    assert _stamp(target) == before


def test_check_reports_a_stale_file_and_write_regenerates_it(tmp_path, capsys):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    ran = []
    args = ("python -m gen", "a generator", target, lambda: "new\n", lambda: ran.append(1))
    assert codegen.generator_main([], *args) == 1
    assert capsys.readouterr().out.strip() == f"{target} is out of date: run python -m gen --write"
    assert target.read_text() == "old\n" and ran == []
    assert codegen.generator_main(["--write"], *args) == 0
    assert target.read_text() == "new\n" and ran == [1]      # written, and the stale kernel cache dropped
    stamp = _stamp(target)
    assert codegen.generator_main(["--write"], *args) == 0
    assert _stamp(target) == stamp and ran == [1]            # identical: not touched, cache kept
    with pytest.raises(SystemExit):
        codegen.generator_main(["--bogus"], *args)
