"""torch.profiler and torch.autograd.profiler against torch 2.13, where their behaviour is deterministic: module
paths and names, record_function ranges, op event names and counts for elementwise ops, the table's columns,
the Chrome trace, schedules and on_trace_ready, CUDA on a CPU build, and no state left behind."""
import collections
import importlib
import json
import os
import re
import sys
import warnings

import pytest
import torch

import tapegrad

PATHS = {
    "profiler": ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
                 "tensorboard_trace_handler", "supported_activities", "kineto_available", "DeviceType",
                 "ExecutionTraceObserver"],
    "profiler.profiler": ["profile", "schedule", "ProfilerAction", "tensorboard_trace_handler",
                          "supported_activities", "ExecutionTraceObserver"],
    "autograd.profiler": ["profile", "record_function", "emit_nvtx", "emit_itt", "EventList", "FunctionEvent"],
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_module_paths_have_torchs_names(path):
    mine = importlib.import_module("tapegrad." + path)
    theirs = importlib.import_module("torch." + path)
    for name in PATHS[path]:
        assert hasattr(theirs, name), (path, name)
        assert hasattr(mine, name), (path, name)
    assert tapegrad.profiler.record_function is tapegrad.autograd.profiler.record_function


def test_enums_are_torchs():
    for name in ("ProfilerAction", "ProfilerActivity"):
        mine, theirs = getattr(tapegrad.profiler, name), getattr(torch.profiler, name)
        assert {k: v.value for k, v in mine.__members__.items()} == {k: v.value for k, v in theirs.__members__.items()}
    assert {a.name for a in tapegrad.profiler.supported_activities()} == \
        {a.name for a in torch.profiler.supported_activities()} == {"CPU"}


def _program(t, x, y, w):
    a = x * y
    b = x + y
    c = x - y
    d = x / y
    e = x.exp()
    f = t.sin(x)
    g = -x
    h = t.tanh(x) + t.sigmoid(x)
    i = x.relu()
    j = t.mul(x, 3.0)
    k = x.mean()
    m = x.sqrt()
    n = x @ w
    return a, b, c, d, e, f, g, h, i, j, k, m, n


def _run(t, fn, **kw):
    x = t.rand(3, 4, requires_grad=True)
    y = t.rand(3, 4) + 1
    w = t.rand(4, 2)
    with t.profiler.profile(**kw) as p:
        fn(t, x, y, w)
    return p


# aten names and counts checked against torch for these ops (torch's aten::sum and aten::abs also run inside other
# ops; tapegrad's add with alpha multiplies first: those are left out)
CHECKED = {"aten::mul", "aten::add", "aten::sub", "aten::div", "aten::exp", "aten::sin", "aten::neg", "aten::tanh",
           "aten::sigmoid", "aten::relu", "aten::mean", "aten::sqrt", "aten::matmul"}


def test_op_events_have_torchs_names_and_counts():
    counts = []
    top = []
    for t in (tapegrad, torch):
        events = _run(t, _program).events()
        counts.append(collections.Counter(e.name for e in events if e.name in CHECKED))
        top.append([e.name for e in events if e.cpu_parent is None and e.name in CHECKED])
    assert counts[0] == counts[1]
    assert top[0] == top[1]
    assert set(counts[0]) == CHECKED


def test_input_shapes_and_key_averages_fields():
    def fn(t, x, y, w):
        x * y
        x * 2
        x @ w
    for t in (tapegrad, torch):
        p = _run(t, fn, record_shapes=True)
        grouped = {(e.key, str(e.input_shapes)): e.count for e in p.key_averages(group_by_input_shape=True)
                   if e.key in ("aten::mul", "aten::matmul")}
        assert grouped == {("aten::mul", "[[3, 4], [3, 4]]"): 1, ("aten::mul", "[[3, 4], []]"): 1,
                           ("aten::matmul", "[[3, 4], [4, 2]]"): 1}, t
        avg = {e.key: e for e in p.key_averages()}["aten::mul"]
        assert avg.count == 2 and avg.input_shapes == ""
        assert 0 <= avg.self_cpu_time_total <= avg.cpu_time_total
        assert avg.cpu_time == pytest.approx(avg.cpu_time_total / 2)
        assert p.key_averages().self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in p.events()))


def test_record_function_labels_counts_and_nesting():
    def fn(t, x, y, w):
        for _ in range(3):
            with t.profiler.record_function("outer"):
                with t.autograd.profiler.record_function("inner"):
                    x * y
                x + y
    for t in (tapegrad, torch):
        p = _run(t, fn)
        events = p.events()
        labels = collections.Counter(e.name for e in events if e.name in ("outer", "inner"))
        assert labels == {"outer": 3, "inner": 3}
        for e in events:
            assert e.self_cpu_time_total <= e.cpu_time_total + 1e-6
            if e.name == "inner":
                assert e.cpu_parent.name == "outer"
            if e.name == "aten::mul":
                assert e.cpu_parent.name == "inner"
            if e.name == "aten::add":
                assert e.cpu_parent.name == "outer"
        outer = {e.key: e for e in p.key_averages()}["outer"]
        inner = {e.key: e for e in p.key_averages()}["inner"]
        assert outer.count == 3 and outer.self_cpu_time_total <= outer.cpu_time_total
        assert inner.cpu_time_total <= outer.cpu_time_total


def test_record_function_as_decorator_and_outside_a_profile():
    @tapegrad.profiler.record_function("decorated")
    def f(x):
        return x * 2
    assert f(tapegrad.ones(2)).tolist() == [2.0, 2.0]  # (no profiler: nothing recorded, nothing raised)
    with tapegrad.profiler.profile() as p:
        f(tapegrad.ones(2))
    assert [e.name for e in p.events()] == ["aten::ones", "decorated", "aten::mul"]


def _columns(line):
    return re.split(r"\s{2,}", line.strip())


def test_table_has_torchs_layout():
    def fn(t, x, y, w):
        with t.profiler.record_function("label"):
            x * y
    tables = []
    for t in (tapegrad, torch):
        p = _run(t, fn, record_shapes=True)
        plain = p.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
        shapes = p.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total", row_limit=10,
                                                                  header="HEADER", top_level_events_only=True)
        legacy = p.events().table()
        assert isinstance(plain, str)
        tables.append((plain.splitlines(), shapes.splitlines(), legacy.splitlines()))
    for mine, theirs in zip(tables[0], tables[1]):
        sep = [i for i, line in enumerate(theirs) if set(line.strip()) <= {"-", " "} and line.strip()]
        sep_mine = [i for i, line in enumerate(mine) if set(line.strip()) <= {"-", " "} and line.strip()]
        assert sep_mine[:2] == sep[:2]
        assert _columns(mine[sep[0] + 1]) == _columns(theirs[sep[0] + 1])
        assert mine[:sep[0]] == theirs[:sep[0]] or mine[0].startswith("=")
        assert mine[-1].startswith("Self CPU time total: ") and theirs[-1].startswith("Self CPU time total: ")
    header_row = next(line for line in tables[0][1] if line.strip().startswith("Name"))
    assert "Input Shapes" in _columns(header_row)
    assert "This report only display top-level ops statistics" in tables[0][1]


def test_table_row_limit_and_sort():
    with tapegrad.profiler.profile() as p:
        for _ in range(4):
            tapegrad.ones(3) * 2
    rows = p.key_averages().table(sort_by="count", row_limit=1).splitlines()
    assert len(rows) == 6 and rows[3].split()[0] in ("aten::ones", "aten::mul")
    assert rows[3].split()[-1] == "4"


def test_chrome_trace_is_valid_json(tmp_path):
    def fn(t, x, y, w):
        with t.profiler.record_function("label"):
            x * y
    for t in (tapegrad, torch):
        p = _run(t, fn)
        path = tmp_path / f"{t.__name__}.json"
        p.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
        complete = [e for e in events if e.get("ph") == "X"]
        names = {e["name"] for e in complete}
        assert {"label", "aten::mul"} <= names
        for e in complete:
            assert {"name", "ph", "ts", "dur"} <= set(e)
        label = next(e for e in complete if e["name"] == "label")
        mul = next(e for e in complete if e["name"] == "aten::mul")
        assert label["ts"] <= mul["ts"] and mul["ts"] + mul["dur"] <= label["ts"] + label["dur"] + 1e-3


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")  # (torch's, at the second cycle)
def test_tensorboard_trace_handler_writes_traces(tmp_path):
    x = tapegrad.ones(3, requires_grad=True)
    with tapegrad.profiler.profile(schedule=tapegrad.profiler.schedule(wait=0, warmup=1, active=1, repeat=2),
                                   on_trace_ready=tapegrad.profiler.tensorboard_trace_handler(str(tmp_path),
                                                                                            worker_name="w")) as p:
        for _ in range(5):
            (x * 2).sum().backward()
            p.step()
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 2 and all(f.startswith("w.") and f.endswith(".pt.trace.json") for f in files)
    for f in files:
        names = {e["name"] for e in json.loads((tmp_path / f).read_text())["traceEvents"]}
        assert "aten::mul" in names and "autograd::backward" in names


SCHEDULES = [dict(wait=1, warmup=1, active=3, repeat=2), dict(wait=1, warmup=1, active=2, repeat=1),
             dict(wait=0, warmup=1, active=1), dict(wait=2, warmup=0, active=2, repeat=3, skip_first=3),
             dict(wait=3, warmup=2, active=1, repeat=0, skip_first=1), dict(wait=5, warmup=1, active=2, skip_first=4,
                                                                           skip_first_wait=1)]


@pytest.mark.parametrize("kw", SCHEDULES)
def test_schedule_actions_and_trace_ready_steps_are_torchs(kw):
    results = []
    for t in (tapegrad, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn = t.profiler.schedule(**kw)
        actions = [fn(s).name for s in range(30)]
        ready, steps = [], []

        def on_ready(p):
            ready.append(p.step_num)
            steps.append([e.name for e in p.events() if e.name.startswith("ProfilerStep")])
        x = t.ones(2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with t.profiler.profile(schedule=t.profiler.schedule(**kw), on_trace_ready=on_ready) as p:
                for _ in range(17):
                    x * 2
                    p.step()
        results.append((actions, ready, steps, [str(w.message) for w in caught]))
    assert results[0] == results[1]


def test_default_schedule_records_everything_and_step_adds_no_marker():
    for t in (tapegrad, torch):
        with t.profiler.profile() as p:
            for _ in range(3):
                t.ones(2) * 2
                p.step()
        assert p.step_num == 3
        assert sum(e.name == "aten::mul" for e in p.events()) == 3
        assert not any(e.name.startswith("ProfilerStep") for e in p.events())


def test_cuda_activity_on_a_cpu_build_is_torchs():
    def outcome(t, make):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with make(t) as p:
                    t.ones(2) * 2
            except AssertionError as e:
                return "AssertionError: " + str(e), [str(w.message) for w in caught]
        names = [e.name for e in (p.events() if hasattr(p, "events") else p.function_events)]
        return "aten::mul" in names, [(w.category.__name__, str(w.message)) for w in caught]
    cases = [lambda t: t.profiler.profile(activities=[t.profiler.ProfilerActivity.CPU,
                                                      t.profiler.ProfilerActivity.CUDA]),
             lambda t: t.profiler.profile(activities=[t.profiler.ProfilerActivity.CUDA]),
             lambda t: t.autograd.profiler.profile(use_cuda=True),
             lambda t: t.autograd.profiler.profile(use_device="cuda"),
             lambda t: t.profiler.profile(use_cuda=True)]
    for make in cases:
        assert outcome(tapegrad, make) == outcome(torch, make)


def test_legacy_profile_as_the_tutorial_uses_it():
    x = tapegrad.rand(4, requires_grad=True)
    with tapegrad.autograd.profiler.profile(use_cuda=False) as prf:
        y = (x * x).sum()
        y.backward()
    table = prf.key_averages().table(sort_by="self_cpu_time_total")
    assert "aten::mul" in table and "autograd::backward" in table
    assert prf.self_cpu_time_total > 0
    assert x.grad is not None
    for t in (tapegrad, torch):
        with t.autograd.profiler.profile(enabled=False) as off:
            t.ones(1) * 2
        assert off is None


def test_emit_nvtx_and_itt_raise_clearly():
    with pytest.raises(RuntimeError, match="emit_nvtx"):
        with tapegrad.autograd.profiler.emit_nvtx():
            pass
    with pytest.raises(RuntimeError, match="emit_itt"):
        with tapegrad.autograd.profiler.emit_itt():
            pass
    with tapegrad.autograd.profiler.emit_nvtx(enabled=False):
        pass


def test_no_state_left_behind():
    before = sys.getprofile()
    x = tapegrad.tensor([1.0, 2.0], requires_grad=True)
    with tapegrad.profiler.profile(record_shapes=True, profile_memory=True, with_stack=True) as p:
        with tapegrad.profiler.record_function("r"):
            (x * x).sum().backward()
    assert sys.getprofile() is before
    assert x.grad.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError):
        with tapegrad.profiler.profile():
            x @ tapegrad.ones(3)  # (an op raising inside the profile: its event is closed)
    assert sys.getprofile() is before
    y = x * 3
    assert y.requires_grad and y.grad_fn is not None
    y.sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]
    assert {e.name for e in p.events()} >= {"r", "aten::mul", "aten::sum", "autograd::backward"}


def test_nested_profilers_both_record():
    with tapegrad.profiler.profile() as outer:
        tapegrad.ones(2) * 2
        with tapegrad.profiler.profile() as inner:
            tapegrad.ones(2) + 1
    assert sys.getprofile() is None
    assert [e.name for e in inner.events()] == ["aten::ones", "aten::add"]
    assert [e.name for e in outer.events()] == ["aten::ones", "aten::mul", "aten::ones", "aten::add"]


def test_profiling_a_compiled_function():
    def f(a, b):
        return (a * b + 1).relu().sum()
    compiled = tapegrad.compile(f)
    a = tapegrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    b = tapegrad.tensor([2.0, 2.0, -1.0])
    with tapegrad.profiler.profile() as p:
        outs = [compiled(a, b) for _ in range(3)]
        outs[-1].backward()
    assert [o.item() for o in outs] == [f(a, b).item()] * 3
    assert a.grad.tolist() == [2.0, 0.0, 0.0]
    regions = [e for e in p.events() if e.name == "Torch-Compiled Region"]
    assert len(regions) == 3
    assert not regions[-1].cpu_children  # (a replay runs no Python op: one event)
    assert compiled(a, b).item() == f(a, b).item()


def test_memory_and_optimizer_events():
    model = tapegrad.nn.Linear(4, 2)
    opt = tapegrad.optim.SGD(model.parameters(), lr=0.1)
    with tapegrad.profiler.profile(profile_memory=True) as p:
        opt.zero_grad()
        model(tapegrad.ones(3, 4)).sum().backward()
        opt.step()
    names = {e.key: e for e in p.key_averages()}
    assert "Optimizer.step#SGD.step" in names and "Optimizer.zero_grad#SGD.zero_grad" in names
    assert names["aten::linear"].cpu_memory_usage == 3 * 2 * 4
    assert "CPU Mem" in p.key_averages().table()
