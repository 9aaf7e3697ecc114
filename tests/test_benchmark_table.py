"""benchmarks.compare prints the README's benchmark table: the same columns, targets judged per row."""
import re
from pathlib import Path

from benchmarks import compare

REPO = Path(__file__).resolve().parents[1]
LIBS = ("tapegrad", "tapegrad.compile", "torch", "numpy", "micrograd")


def _readme_header():
    line = next(l for l in (REPO / "README.md").read_text().splitlines() if l.startswith("| workload |"))
    return [c.strip() for c in line.strip("|").split("|")]


def _times(total, fwd=None, bwd=None):
    t = {"total": total, "forward": fwd or total / 2, "backward": bwd or total / 2}
    t["per_process"] = {k: [v] for k, v in t.items()}
    return t


def _table(times_by_wl, startup=None, memory=None):
    check = {wl: {"status": {n: "ok" for n in times if n != "micrograd" or wl == "W2"}, "refused": False}
             for wl, times in times_by_wl.items()}
    agg = {wl: {"times": times} for wl, times in times_by_wl.items()}
    available = {n: True for n in LIBS}
    return compare.build_table(list(times_by_wl), check, agg, startup, {}, {w: "x" for w in times_by_wl},
                               available, memory)


def _rows(table):
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()]


def test_header_is_the_readmes():
    table = _table({"W4": {n: _times(1e-3) for n in LIBS}})
    assert _rows(table)[0] == _readme_header() == compare.HEADER


def test_targets_and_ratios_are_judged_per_row():
    w1 = {"tapegrad": _times(4e-3, 2.5e-3, 0.3e-3), "tapegrad.compile": _times(0.2e-3, 0.05e-3, 0.1e-3),
          "torch": _times(10e-3, 4e-3, 6e-3), "numpy": _times(2e-3, 1e-3, 1e-3)}
    w2 = {"tapegrad": _times(8e-3), "tapegrad.compile": _times(0.8e-3), "torch": _times(16e-3),
          "numpy": _times(1e-5), "micrograd": _times(2e-3)}
    w4 = {"tapegrad": _times(9.1e-3), "tapegrad.compile": _times(8.7e-3), "torch": _times(9.4e-3),
          "numpy": _times(8.6e-3)}
    startup = {("tapegrad", "import"): 0.24, ("torch", "import"): 1.7, ("numpy", "import"): 0.1,
               ("tapegrad", "first_backward"): 1.3, ("torch", "first_backward"): 1.6}
    memory = {"workload": "W3", "batch": 1024, "peak_bytes": {"tapegrad": 3.4e6, "torch": 4.4e6, "numpy": 3.3e6},
              "errors": {}, "unavailable": None}
    rows = {r[0]: r[1:] for r in _rows(_table({"W1": w1, "W2": w2, "W4": w4}, startup, memory))[2:]}
    assert rows["W1 x"][4:] == ["0.40x", "0.02x", "0.10x", "≤ 0.10x torch", "yes (compiled)"]
    assert rows["W1 forward (µs/op)"][:2] == ["1.667", "0.033"]
    assert rows["W1 forward (µs/op)"][-2:] == ["≤ 1.3x numpy", "yes (compiled)"]
    assert rows["W1 backward (µs/node)"][-2:] == ["≤ 0.1 µs/node", "yes (compiled)"]   # 0.067 µs
    assert rows["W2 x (micrograd: 2.00 ms)"][-2:] == ["≤ 0.25x torch, < micrograd", "yes (compiled; 0.40x micrograd)"]
    assert rows["W4 x"][4:] == ["0.97x", "0.93x", "1.01x", "≤ 1.05x numpy", "yes (compiled)"]   # eager 1.06x
    assert rows['startup: python -c "import X"'][-2:] == ["≤ 0.3 s", "yes"]
    assert rows["startup: import + first backward"][-2:] == ["≤ 1.2 s", "no"]
    assert rows["memory: W3 step peak at batch 1,024"][4:] == ["0.77x", "—", "1.03x", "≤ 1.2x torch", "yes"]
    assert all(len(r) == len(compare.HEADER) - 1 for r in rows.values())
    assert not any(re.search("micrograd", c) for c in compare.HEADER)


def test_w8_rows_are_an_ops_recording_cost_and_a_backwards_fixed_cost():
    w8 = {"tapegrad": _times(60e-6, 9e-6, 51e-6), "torch": _times(40e-6, 6e-6, 34e-6),
          "numpy": _times(2e-6, 0.3e-6, 1.7e-6)}
    rows = {r[0]: r[1:] for r in _rows(_table({"W8": w8}))[2:]}
    assert rows["W8 forward (µs/op recorded)"][:5] == ["3.000", "—", "2.000", "0.100", "1.50x"]  # 3 ops recorded
    assert rows["W8 backward (µs/backward)"][:5] == ["51.000", "—", "34.000", "1.700", "1.50x"]
