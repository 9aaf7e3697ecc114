"""The README's example runs and prints what its comments say; its test command is what .ci/run runs."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_examples_print_what_they_say():
    code = "\n".join(re.findall(r"```python\n(.*?)```", README, re.S))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    printed = out.stdout.splitlines()
    expected = [m.group(1) for m in re.finditer(r"print\(.*\)\s+# (.*)", code)]
    assert len(printed) == len(expected)
    for got, want in zip(printed, expected):
        pattern = re.escape(want).replace(r"\.\.\.", ".*")  # "..." in a comment stands for any text
        assert re.fullmatch(pattern, got), (got, want)


def test_ci_runs_the_readme_test_command():
    block = re.search(r"<!-- test-command -->\n```\n(.*?)\n```\n<!-- /test-command -->", README, re.S)
    assert block and "pytest" in block.group(1)
    assert "<!-- test-command -->" in (ROOT / ".ci" / "run").read_text()
