"""torch.utils.benchmark (Timer, Measurement, Compare) against torch 2.13: module paths and names, the
statistics and reprs of Measurements built from the same raw times, Compare's table text for the same
Measurements, and Timer's measurements (their shape only: timings are never compared with torch's)."""
import importlib
import random

import pytest
import torch

import tapegrad

NAMES = {
    "utils.benchmark": ["Timer", "Measurement", "Compare", "TaskSpec", "Language", "Colorize", "timer",
                        "select_unit", "unit_to_english", "trim_sigfig", "ordered_unique", "set_torch_threads"],
    "utils.benchmark.utils.common": ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
                                     "ordered_unique", "set_torch_threads"],
    "utils.benchmark.utils.timer": ["Timer", "timer", "Language"],
    "utils.benchmark.utils.compare": ["Compare", "Colorize"],
}


@pytest.mark.parametrize("path", sorted(NAMES))
def test_module_paths_and_names(path):
    mine = importlib.import_module("tapegrad." + path)
    theirs = importlib.import_module("torch." + path)
    for name in NAMES[path]:
        assert hasattr(theirs, name), (path, name)
        assert hasattr(mine, name), (path, name)
    for name in getattr(mine, "__all__", ()):
        assert name in theirs.__all__, (path, name)


def test_reached_as_attributes():
    assert tapegrad.utils.benchmark.Timer is tapegrad.utils.benchmark.utils.timer.Timer
    from tapegrad.utils.benchmark import Timer  # noqa: F401  (the recipes' import)
    assert [e.name for e in tapegrad.utils.benchmark.Language] == [e.name for e in torch.utils.benchmark.Language]


SPECS = [  # label, sub_label, description, num_threads, median-ish time, spread, n measurements, number_per_run
    ("add", "float", "n=1", 1, 3.2e-6, 0.05, 10, 100), ("add", "int", "n=1", 1, 5.7e-6, 0.5, 7, 100),
    ("add", "float", "n=100", 1, 1.3e-5, 0.02, 12, 10), ("add", "int", "n=100", 1, 4.1e-4, 0.3, 3, 10),
    ("add", "float", "n=1", 4, 2.2e-6, 0.01, 9, 1000), ("mul", None, "n=1", 1, 0.012, 0.1, 1, 1),
    ("add", "float", "n=1", 1, 3.0e-6, 0.05, 5, 100), ("matmul", "f", "big", 2, 2.5, 0.2, 4, 1),
    ("tiny", None, "a", 1, 4e-8, 0.0, 6, 10000),
]


def _measurements(lib, specs=SPECS):
    out = []
    for k, (label, sub, desc, threads, base, spread, n, per_run) in enumerate(specs):
        rng = random.Random(k)
        raw = [base * per_run * (1 + spread * rng.random()) for _ in range(n)]
        spec = lib.TaskSpec("x + y", "x = 1\ny = 2" if k % 2 else "x = y = 1", label=label, sub_label=sub,
                            description=desc, num_threads=threads)
        out.append(lib.Measurement(per_run, raw, spec))
    return out


@pytest.mark.parametrize("k", range(len(SPECS)))
def test_measurement_statistics_and_repr_equal_torchs(k):
    theirs, mine = _measurements(torch.utils.benchmark)[k], _measurements(tapegrad.utils.benchmark)[k]
    assert mine.times == theirs.times and mine.raw_times == theirs.raw_times
    assert mine.number_per_run == theirs.number_per_run
    assert mine.median == theirs.median
    assert mine.iqr == theirs.iqr
    assert mine.mean == pytest.approx(theirs.mean, rel=1e-14)
    assert mine.significant_figures == theirs.significant_figures
    assert mine.has_warnings == theirs.has_warnings and mine.meets_confidence() == theirs.meets_confidence()
    assert (mine.title, mine.label, mine.sub_label, mine.description, mine.num_threads, mine.env) == \
        (theirs.title, theirs.label, theirs.sub_label, theirs.description, theirs.num_threads, theirs.env)
    first, rest = repr(mine).split("\n", 1)
    assert first.startswith("<tapegrad.utils.benchmark.utils.common.Measurement object at 0x")
    assert rest == repr(theirs).split("\n", 1)[1]


def test_title_of_a_multiline_stmt_and_merge():
    for lib in (torch.utils.benchmark, tapegrad.utils.benchmark):
        spec = lib.TaskSpec("for _ in range(3):\n    x += 1", "x = 0", sub_label="loop")
        m = lib.Measurement(10, [1e-5, 2e-5, 1.5e-5, 1.2e-5], spec)
        merged = lib.Measurement.merge([m, lib.Measurement(1, [3e-6], spec)])
        if lib is torch.utils.benchmark:
            expected = (spec.title, repr(m).split("\n", 1)[1], merged[0].times, merged[0].number_per_run)
        else:
            assert (spec.title, repr(m).split("\n", 1)[1], merged[0].times, merged[0].number_per_run) == expected


@pytest.mark.parametrize("x", [3.14159, 0.000123456, 98765.4321, 1.0, 0.5, 10.0, 1000.0, 1e-3])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_helpers_equal_torchs(x, n):
    """(powers of ten: float32 log10's last bit decides the unit; NumPy's vector log10 gave 1e-6 -6.0000005 on an
    AVX-512 CPU, where torch's, libm's log10f, gives -6)"""
    ours, theirs = tapegrad.utils.benchmark, torch.utils.benchmark
    assert ours.trim_sigfig(x, n) == pytest.approx(theirs.trim_sigfig(x, n), rel=1e-6)
    assert ours.select_unit(x * 1e-6) == theirs.select_unit(x * 1e-6)
    assert ours.ordered_unique([3, 1, 3, 2, 1]) == theirs.ordered_unique([3, 1, 3, 2, 1])


@pytest.mark.parametrize("colorize", [None, False, True])
@pytest.mark.parametrize("trim", [False, True])
@pytest.mark.parametrize("highlight", [False, True])
def test_compare_text_equals_torchs(colorize, trim, highlight, capsys):
    tables = []
    for lib in (torch.utils.benchmark, tapegrad.utils.benchmark):
        c = lib.Compare(_measurements(lib))
        if trim:
            c.trim_significant_figures()
        if colorize is not None:
            c.colorize(rowwise=colorize)
        if highlight:
            c.highlight_warnings()
        c.print()
        tables.append((str(c), capsys.readouterr().out))
    assert tables[0] == tables[1]
    assert "Times are in microseconds (us)." in tables[1][0]


def test_compare_rejects_what_is_not_a_measurement():
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        tapegrad.utils.benchmark.Compare([1.0])


def test_timer_timeit_measurement():
    t = tapegrad.utils.benchmark.Timer("x.sum()", setup="x = torch.ones(8)", label="sum", sub_label="ones",
                                       description="n=8")
    m = t.timeit(50)
    assert isinstance(m, tapegrad.utils.benchmark.Measurement)
    assert m.number_per_run == 50 and len(m.times) == 1 and m.median > 0 and m.mean == m.median
    assert (m.label, m.sub_label, m.description, m.num_threads, m.title) == ("sum", "ones", "n=8", 1, "sum: ones")
    assert "1 measurement, 50 runs , 1 thread" in repr(m)


def test_timer_globals_are_copied_and_torch_is_tapegrad():
    g = {"x": tapegrad.ones(3)}
    t = tapegrad.utils.benchmark.Timer("y = torch.mul(x, 2)", globals=g)
    t.timeit(5)
    assert g == {"x": g["x"]}  # the caller's dict is not written to
    assert t._globals["torch"] is tapegrad


def test_blocked_autorange_and_adaptive_autorange():
    Timer = tapegrad.utils.benchmark.Timer
    seen = []
    m = Timer("a + b", setup="a = torch.ones(4); b = torch.ones(4)", num_threads=2).blocked_autorange(
        callback=lambda number, t: seen.append(number), min_run_time=0.02)
    assert m.number_per_run >= 1 and len(m.times) >= 1 and len(seen) == len(m.times) and m.median > 0
    assert sum(m.raw_times) >= 0.02 and m.num_threads == 2
    m = Timer("sum(range(50))").adaptive_autorange(threshold=0.5, min_run_time=0.01, max_run_time=0.5)
    assert m.number_per_run >= 1 and len(m.times) >= 4 and m.median > 0 and m.iqr >= 0
    assert m.significant_figures in (1, 2, 3, 4)
    c = tapegrad.utils.benchmark.Compare([m])  # no description: an empty column title (torch: TypeError)
    assert "sum(range(50))" in str(c) and "Times are in" in str(c)


def test_threads_restored():
    before = tapegrad.get_num_threads()
    tapegrad.utils.benchmark.Timer("pass", num_threads=1).timeit(3)
    assert tapegrad.get_num_threads() == before


def test_cpp_and_callgrind_raise():
    Timer = tapegrad.utils.benchmark.Timer
    for language in ("cpp", "c++", tapegrad.utils.benchmark.Language.CPP):
        with pytest.raises(NotImplementedError, match="C\\+\\+"):
            Timer("x;", language=language)
    with pytest.raises(NotImplementedError, match="collect_callgrind"):
        Timer("pass").collect_callgrind()
    with pytest.raises(ValueError, match="Invalid language"):
        Timer("pass", language="rust")
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        Timer("pass", global_setup="#include <x>")
    with pytest.raises(ValueError, match="only a `str` stmt"):
        Timer(lambda: None)
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        Timer("pass").repeat()


def test_import_torch_utils_benchmark_through_the_launcher_alias():
    from tapegrad.utils.benchmark import Timer as A
    from tapegrad.utils.benchmark.utils.timer import Timer as B
    assert A is B


@pytest.mark.parametrize("name", ["CallgrindStats", "FunctionCounts", "FunctionCount", "CopyIfCallgrind", "Fuzzer",
                                  "FuzzedParameter", "FuzzedTensor", "FuzzedSparseTensor", "ParameterAlias"])
def test_the_callgrind_and_fuzzer_names_import_and_refuse_to_be_made(name):
    import torch.utils.benchmark as theirs
    import tapegrad.utils.benchmark as ours
    assert hasattr(theirs, name) and hasattr(ours, name)
    with pytest.raises(NotImplementedError, match=f"torch.utils.benchmark.{name}: tapegrad"):
        getattr(ours, name)()
