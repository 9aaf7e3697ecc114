"""Compare tapegrad (eager and ``tapegrad.compile``) against torch, hand-written NumPy (the floor) and micrograd.

Run from the repository root::

    python -m benchmarks.compare                 # W1-W7, 3 processes
    python -m benchmarks.compare --quick --only W1,W3
    python -m benchmarks.compare --plot bench.png --json bench.json
    python -m benchmarks.compare --no-startup --no-memory   # workloads only

What it does:

1. Checks that the implementations agree: every library's gradients (the
   column "compiled" is ``tapegrad.compile(fullgraph=True)`` of the same step;
   in W2-W7 the compiled part takes the gradients itself; in W6-W7 it is the
   whole training step, optim.SGD's update included) are
   compared with the NumPy reference (np.allclose, rtol 1e-4 for float32,
   1e-6 for float64, atol relative to the gradient's scale).  A workload
   where any library disagrees is *not timed* (the row says which).  A
   library that is not installed is a column of "n/a"; one that raises is
   "error" for that workload only.
2. Times in ``--processes`` fresh subprocesses (default 3).  In each one every
   implementation is warmed up (untimed runs: Numba compilation happens
   there), the loop count is calibrated so one sample lasts ~``--target``
   seconds, then samples are taken interleaved (A, B, C, A, B, C, ...) and
   each process reports the median of its samples.  The table shows the
   median across processes.  As with ``timeit``, the garbage collector is
   disabled inside a sample and run between samples.
3. Startup: ``python -c "import X"`` and import + first backward, each in a
   fresh process, median of several (interleaved), after one untimed run
   (which fills any Numba on-disk cache, and writes the .pyc files a user's
   first import writes: PYTHONDONTWRITEBYTECODE is dropped for these runs).
4. Prints one Markdown table, the README's: each library's time, tapegrad/torch,
   compiled/torch, best/numpy (the faster tapegrad variant over the floor), the
   project's target for the row and whether it is met ("yes (compiled)": only
   under tapegrad.compile).  Ratios are time ratios: < 1 means tapegrad (or
   compiled tapegrad) is faster; for workloads, the median across processes
   of per-process ratios.
5. Memory (the table's last row): peak memory of one W3 step at batch 1,024
   for tapegrad, torch and NumPy, each in its own fresh process (interleaved,
   ``--startup-runs`` processes per library, median across them).  After 3
   warm-up steps, each of 5 steps is preceded by ``gc.collect()``,
   ``malloc_trim(0)`` (glibc: hand freed heap pages back, so RSS counts only
   live memory) and a reset of the kernel's RSS high-water mark (``5`` into
   ``/proc/self/clear_refs``); the step's peak is VmHWM after it minus VmRSS
   before it, and a process reports the median of its 5.  RSS, not
   ``tracemalloc``: torch allocates outside Python's allocator, which
   tracemalloc cannot see.  Linux only (``n/a`` elsewhere).  The ratio is the
   ratio of medians.

Threads are pinned (OMP/NUMBA/MKL/OPENBLAS_NUM_THREADS and
torch.set_num_threads) to ``--threads`` (default 1) before NumPy or torch is
imported, in this process and in every child.

This module imports only the standard library at import time (asv imports
every module of the ``benchmarks`` package during discovery).
"""

import argparse
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

THREAD_VARS = ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULT_MARKER = "@@COMPARE-RESULT@@ "
COLUMNS = ("tapegrad", "tapegrad.compile", "torch", "numpy", "micrograd")
LABELS = {"tapegrad.compile": "compiled"}   # column name in the table (default: the library name)

MEMORY_WORKLOAD, MEMORY_BATCH = "W3", 1024   # the target: MLP step at batch 1,024
MEMORY_WARMUP, MEMORY_STEPS = 3, 5
MEMORY_LIBS = ("tapegrad", "torch", "numpy")

STARTUP_FIRST_BACKWARD = """\
import numpy as np
import {lib} as lib
x = lib.tensor(np.linspace(-1.0, 1.0, 16, dtype=np.float32), requires_grad=True)
lib.tanh(x * 2.0 + 1.0).sum().backward()
assert x.grad is not None
"""


def pin_threads(n):
    for var in THREAD_VARS:
        os.environ[var] = str(n)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.compare",
        description="Time W1-W7 on tapegrad, tapegrad.compile, torch, NumPy (hand-written backward) "
                    "and micrograd.")
    p.add_argument("--processes", type=int, default=3, metavar="N",
                   help="fresh timing subprocesses; the median across them is reported (default 3)")
    p.add_argument("--only", default=None, metavar="W1,W3",
                   help="comma-separated workloads to run (default: all)")
    p.add_argument("--quick", action="store_true",
                   help="fewer repeats / shorter samples / fewer startup runs")
    p.add_argument("--repeats", type=int, default=None,
                   help="interleaved samples per implementation per process (default 15, --quick 5)")
    p.add_argument("--target", type=float, default=None, metavar="SECONDS",
                   help="approximate duration of one sample (default 0.05, --quick 0.01)")
    p.add_argument("--threads", type=int, default=1,
                   help="value for OMP/NUMBA/MKL/OPENBLAS_NUM_THREADS and torch.set_num_threads (default 1)")
    p.add_argument("--startup-runs", type=int, default=None, metavar="K",
                   help="fresh processes per startup measurement and per library for the "
                        "memory measurement (default 7, --quick 3)")
    p.add_argument("--no-startup", action="store_true", help="skip the startup measurements")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement")
    p.add_argument("--plot", default=None, metavar="OUT.png",
                   help="write a bar chart (needs matplotlib)")
    p.add_argument("--json", default=None, metavar="OUT.json", help="write the raw results as JSON")
    p.add_argument("--_worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.repeats is None:
        args.repeats = 5 if args.quick else 15
    if args.target is None:
        args.target = 0.01 if args.quick else 0.05
    if args.startup_runs is None:
        args.startup_runs = 3 if args.quick else 7
    if args.processes < 1 or args.repeats < 1 or args.threads < 1:
        p.error("--processes, --repeats and --threads must be >= 1")
    return args


# --------------------------------------------------------------------------
# Worker (runs in a fresh subprocess)
# --------------------------------------------------------------------------

def _sample(case, number, split):
    """One timing sample: seconds per step (and forward/backward for split)."""
    gc.collect()
    gc.disable()
    try:
        if split:
            fwd = bwd = 0.0
            clock = time.perf_counter
            for _ in range(number):
                t0 = clock()
                loss = case.forward()
                t1 = clock()
                case.backward(loss)
                t2 = clock()
                fwd += t1 - t0
                bwd += t2 - t1
            del loss
            return {"total": (fwd + bwd) / number, "forward": fwd / number, "backward": bwd / number}
        step = case.step
        t0 = time.perf_counter()
        for _ in range(number):
            step()
        t1 = time.perf_counter()
        return {"total": (t1 - t0) / number}
    finally:
        gc.enable()


def run_worker(spec):
    threads = spec["threads"]
    pin_threads(threads)
    from benchmarks import workloads as W  # imports numpy (after pinning)
    W.pin_blas_threads(threads)            # belt and braces: runtime limit as well

    mods = {}
    for name in W.AUTOGRAD_LIBS:
        if any(name in libs for libs in spec["libs"].values()):
            mods[name] = W.load_lib(name, threads=threads)

    out = {}
    for wl in spec["workloads"]:
        libs = spec["libs"][wl]
        split = wl in SPLIT
        cases, number, samples, errors = {}, {}, {}, {}
        for name in libs:
            try:
                case = W.make(wl, name, lib=mods.get(name))
                for _ in range(spec["warmup"]):          # untimed: Numba compiles here
                    case.step()
                t0 = time.perf_counter()
                case.step()
                one = max(time.perf_counter() - t0, 1e-7)
                number[name] = max(1, math.ceil(spec["target"] / one))
                cases[name] = case
                samples[name] = []
            except Exception as exc:  # noqa: BLE001 - report, keep timing the others
                errors[name] = f"{type(exc).__name__}: {exc}"
        for _ in range(spec["repeats"]):
            for name in list(cases):                      # interleaved A, B, C, A, B, C
                try:
                    samples[name].append(_sample(cases[name], number[name], split))
                except Exception as exc:  # noqa: BLE001
                    errors[name] = f"{type(exc).__name__}: {exc}"
                    del cases[name]
        res = {}
        for name, ss in samples.items():
            if name in errors or not ss:
                continue
            res[name] = {k: statistics.median(s[k] for s in ss) for k in ss[0]}
            res[name]["number"] = number[name]
        out[wl] = {"times": res, "errors": errors}
        cases.clear()
        gc.collect()
    print(RESULT_MARKER + json.dumps(out), flush=True)


def _proc_status_kib(key):
    """One ``/proc/self/status`` field (VmRSS, VmHWM), in KiB."""
    with open("/proc/self/status") as f:
        for ln in f:
            if ln.startswith(key + ":"):
                return int(ln.split()[1])
    raise OSError(f"no {key} in /proc/self/status")


def _reset_peak_rss():
    """Reset VmHWM to the current RSS (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _malloc_trim():
    """glibc's ``malloc_trim`` (returns freed heap pages to the OS), or None."""
    try:
        import ctypes
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl, Windows)
        return None


def memory_unsupported():
    """Why the peak-memory measurement cannot run here, or None if it can."""
    if not sys.platform.startswith("linux"):
        return f"needs Linux /proc/self/clear_refs and VmHWM (platform is {sys.platform})"
    try:
        _proc_status_kib("VmRSS")
        _proc_status_kib("VmHWM")
    except OSError as exc:
        return f"cannot read VmRSS/VmHWM from /proc/self/status ({exc})"
    try:
        _reset_peak_rss()
    except OSError as exc:  # read-only /proc, or a kernel older than 4.0 (EINVAL)
        return f"cannot reset the peak RSS via /proc/self/clear_refs ({exc})"
    return None


def _step_peak(case, trim):
    """Bytes by which RSS rose above its pre-step value during one ``case.step()``."""
    gc.collect()
    if trim is not None:
        trim(0)
    _reset_peak_rss()
    before = _proc_status_kib("VmRSS")
    case.step()
    return max(0, _proc_status_kib("VmHWM") - before) * 1024


def run_memory_worker(spec):
    """Peak memory of MEMORY_STEPS steps of one library's W3 at batch 1,024 (fresh process)."""
    from benchmarks import workloads as W  # imports numpy (after pinning)
    W.pin_blas_threads(spec["threads"])
    name = spec["lib"]
    lib = W.load_lib(name, threads=spec["threads"]) if name in W.AUTOGRAD_LIBS else None
    case = W.make(MEMORY_WORKLOAD, name, lib=lib, batch=MEMORY_BATCH)
    for _ in range(MEMORY_WARMUP):
        case.step()
    trim = _malloc_trim()
    peaks = [_step_peak(case, trim) for _ in range(MEMORY_STEPS)]
    print(RESULT_MARKER + json.dumps({"peaks": peaks, "trim": trim is not None}), flush=True)


# --------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------

def spawn_worker(spec):
    """Run ``--_worker spec`` in a fresh process: (parsed result or None, CompletedProcess)."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.compare", "--_worker", json.dumps(spec)],
        cwd=REPO_ROOT, env=dict(os.environ), capture_output=True, text=True, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARKER)), None)
    if proc.returncode != 0 or line is None:
        return None, proc
    return json.loads(line[len(RESULT_MARKER):]), proc


def try_import(name, threads):
    from benchmarks import workloads as W
    try:
        return W.load_lib(name, threads=threads), None
    except Exception as exc:  # noqa: BLE001 - ImportError, or a broken package
        return None, f"{type(exc).__name__}: {exc}"


def check_agreement(workloads, mods):
    """Return {wl: {"status": {lib: ok|n/a|error|mismatch}, "msgs": [...], "refused": bool}}."""
    from benchmarks import workloads as W
    report = {}
    for wl in workloads:
        status, msgs = {}, []
        try:
            ref = W.gradients(wl, "numpy")
        except Exception as exc:  # noqa: BLE001
            report[wl] = {"status": {c: "error" for c in W.libs_for(wl)}, "refused": True,
                          "msgs": [f"{wl}: NumPy reference failed: {type(exc).__name__}: {exc}"]}
            continue
        status["numpy"] = "ok"
        for name in W.libs_for(wl):
            if name == "numpy":
                continue
            if name in W.AUTOGRAD_LIBS and mods.get(name) is None:
                status[name] = "n/a"
                continue
            try:
                got = W.gradients(wl, name, lib=mods.get(name))
            except Exception as exc:  # noqa: BLE001
                status[name] = "error"
                msgs.append(f"{wl}: {name} raised {type(exc).__name__}: {exc}")
                continue
            if W.agree(got, ref):
                status[name] = "ok"
            else:
                status[name] = "mismatch"
                msgs.append(f"{wl}: {name} DISAGREES with the NumPy reference "
                            f"(max|diff|/max|ref| = {W.max_rel_err(got, ref):.3g}, "
                            f"rtol/atol = {W.tolerances(ref)}, shapes {got.shape} vs {ref.shape})")
        refused = any(s == "mismatch" for s in status.values())
        if refused:
            msgs.append(f"{wl}: results disagree -> NOT timed")
        report[wl] = {"status": status, "msgs": msgs, "refused": refused}
    return report


def run_workers(args, workloads, libs_by_wl):
    spec = {"kind": "time", "workloads": workloads, "libs": libs_by_wl, "repeats": args.repeats,
            "target": args.target, "threads": args.threads, "warmup": 2}
    per_process, worker_errors = [], []
    for i in range(args.processes):
        print(f"  timing process {i + 1}/{args.processes} ...", file=sys.stderr, flush=True)
        res, proc = spawn_worker(spec)
        if res is None:
            worker_errors.append(f"process {i + 1} failed (rc={proc.returncode}):\n"
                                 + proc.stderr[-3000:])
            continue
        per_process.append(res)
    agg = {}
    for wl in workloads:
        agg[wl] = {"times": {}, "errors": {}}
        for res in per_process:
            agg[wl]["errors"].update(res[wl]["errors"])
        for name in libs_by_wl[wl]:
            runs = [res[wl]["times"].get(name) for res in per_process]   # None where missing
            ok = [r for r in runs if r is not None]
            if ok and name not in agg[wl]["errors"]:
                keys = [k for k in ok[0] if k != "number"]
                agg[wl]["times"][name] = {k: statistics.median(r[k] for r in ok) for k in keys}
                # per-process values, aligned by process index, for per-process ratios
                agg[wl]["times"][name]["per_process"] = {
                    k: [r[k] if r is not None else None for r in runs] for k in keys}
    return agg, worker_errors


def ratio(t_a, t_b, key="total"):
    """tapegrad/peer time ratio: median over processes of the per-process ratio.

    Each process interleaves the libraries, so its ratio is robust to load that
    changes between processes; falls back to the ratio of medians.
    """
    if not t_a or not t_b:
        return None
    pa, pb = t_a.get("per_process", {}).get(key), t_b.get("per_process", {}).get(key)
    if pa and pb:
        rs = [a / b for a, b in zip(pa, pb) if a is not None and b]
        if rs:
            return statistics.median(rs)
    return t_a[key] / t_b[key] if t_b[key] else None


def measure_startup(args, available):
    """Median wall time of fresh `python -c ...` processes, interleaved across libraries."""
    cmds = {("baseline", "python -c pass"): "pass", ("numpy", "import"): "import numpy"}
    for name in ("tapegrad", "torch"):
        if available.get(name):
            cmds[(name, "import")] = f"import {name}"
            cmds[(name, "first_backward")] = STARTUP_FIRST_BACKWARD.format(lib=name)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (a user's first import writes the .pyc files that later ones read)
    failures = {}

    def once(code):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, check=False)
        dt = time.perf_counter() - t0
        return dt, proc

    for key, code in cmds.items():  # untimed first run: fills Numba's on-disk cache, .pyc files, OS page cache
        _, proc = once(code)
        if proc.returncode != 0:
            failures[key] = proc.stderr.strip().splitlines()[-1:] or ["failed"]
    times = {key: [] for key in cmds if key not in failures}
    for _ in range(args.startup_runs):
        for key, ts in times.items():
            dt, _ = once(cmds[key])
            ts.append(dt)
    return {key: statistics.median(v) for key, v in times.items()}, failures


def measure_memory(args, available):
    """Peak memory of one W3 step at batch 1,024 per library; fresh processes, interleaved.

    Returns {"peak_bytes": {lib: median across processes}, "per_process": {lib: [...]},
    "errors": {lib: msg}, "unavailable": reason or None, "trim": bool, ...}.
    """
    out = {"workload": MEMORY_WORKLOAD, "batch": MEMORY_BATCH, "steps": MEMORY_STEPS,
           "peak_bytes": {}, "per_process": {}, "errors": {}, "unavailable": memory_unsupported(),
           "trim": None}
    if out["unavailable"]:
        return out
    libs = [name for name in MEMORY_LIBS if available.get(name)]
    runs = {name: [] for name in libs}
    trims = set()
    for _ in range(args.startup_runs):
        for name in libs:                         # interleaved A, B, C, A, B, C
            if name in out["errors"]:
                continue
            res, proc = spawn_worker({"kind": "memory", "lib": name, "threads": args.threads})
            if res is None:
                out["errors"][name] = (proc.stderr.strip().splitlines()[-1:] or
                                       [f"failed (rc={proc.returncode})"])[0]
                continue
            runs[name].append(statistics.median(res["peaks"]))
            trims.add(res["trim"])
    for name, vals in runs.items():
        if vals and name not in out["errors"]:
            out["per_process"][name] = vals
            out["peak_bytes"][name] = statistics.median(vals)
    out["trim"] = all(trims) if trims else None
    return out


def fmt_bytes(b):
    if b is None:
        return "n/a"
    return f"{b / 1e6:.2f} MB"


def fmt_time(s):
    if s is None:
        return "n/a"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1.0:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_ratio(a, b=1.0):
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.2f}x"


# The table's columns (the README's benchmark table has exactly these). micrograd is timed for W2 only,
# so it is named in W2's label rather than given a column of dashes.
TABLE_LIBS = ("tapegrad", "tapegrad.compile", "torch", "numpy")
HEADER = (["workload"] + [LABELS.get(c, c) for c in TABLE_LIBS]
          + ["tapegrad/torch", "compiled/torch", "best/numpy", "target", "met"])

# The project's targets per row: (text, test). A test gets {"tapegrad": x, "compiled": x} of the quantity
# the target names (a ratio to torch or to the floor, or an absolute value) and says whether x meets it.
TARGETS = {
    "W1": [("≤ 0.10x torch", "torch", lambda r: r <= 0.10)],
    "W1 forward": [("≤ 1.3x numpy", "numpy", lambda r: r <= 1.3)],
    "W1 backward": [("≤ 0.1 µs/node", "value", lambda v: v <= 0.1e-6 * W1_NODES)],
    "W2": [("≤ 0.25x torch", "torch", lambda r: r <= 0.25), ("< micrograd", "micrograd", lambda r: r < 1.0)],
    "W3": [("≤ 0.5x torch", "torch", lambda r: r <= 0.5), ("≤ 1.3x numpy", "numpy", lambda r: r <= 1.3)],
    "W4": [("≤ 1.05x numpy", "numpy", lambda r: r <= 1.05)],
    "W5": [("≤ 0.5x torch", "torch", lambda r: r <= 0.5)],
    # issue 20's targets, one per variant (the 4th field): both must be met
    "W6": [("eager ≤ 0.7x", "torch", lambda r: r <= 0.7, "tapegrad"),
           ("compiled ≤ 0.3x torch", "torch", lambda r: r <= 0.3, "compiled")],
    "W7": [("eager ≤ 0.3x", "torch", lambda r: r <= 0.3, "tapegrad"),
           ("compiled ≤ 0.1x torch", "torch", lambda r: r <= 0.1, "compiled")],
    "import": [("≤ 0.3 s", "value", lambda v: v <= 0.3)],
    "first_backward": [("≤ 1.2 s", "value", lambda v: v <= 1.2)],
    "memory": [("≤ 1.2x torch", "torch", lambda r: r <= 1.2)],
}
W1_NODES = 1500
# workloads timed as forward and backward apart: per row, (part, unit, divisor of the seconds)
SPLIT = {"W1": (("forward", "µs/op", W1_NODES), ("backward", "µs/node", W1_NODES)),
         "W8": (("forward", "µs/op recorded", 3), ("backward", "µs/backward", 1))}


def target_cells(key, measured):
    """(target, met) for a row: measured[variant][quantity] -> number or None, variant tapegrad/compiled.
    Met is "yes" when eager tapegrad meets every part, "yes (compiled)" when only the compiled variant
    does, "no" when neither, "n/a" when a needed number is missing. A part with a 4th field applies to
    that variant only; a row of such parts is met ("yes") when each variant meets its own, else it says
    which variant missed."""
    parts = TARGETS.get(key)
    if not parts:
        return "—", "—"
    text = ", ".join(part[0] for part in parts)

    def meets(variant):
        mine = [part for part in parts if len(part) < 4 or part[3] == variant]
        vals = [measured.get(variant, {}).get(part[1]) for part in mine]
        if any(v is None for v in vals):
            return None
        return all(part[2](v) for part, v in zip(mine, vals))

    eager, compiled = meets("tapegrad"), meets("compiled")
    if any(len(part) == 4 for part in parts):
        if eager is None or compiled is None:
            return text, "n/a"
        return text, {(True, True): "yes", (True, False): "eager only", (False, True): "compiled only",
                      (False, False): "no"}[eager, compiled]
    if eager:
        return text, "yes"
    if compiled:
        return text, "yes (compiled)"
    if eager is None and compiled is None:
        return text, "n/a"
    return text, "no"


def memory_row(memory, available):
    """The table row for ``measure_memory``'s result (ratios are ratios of medians)."""
    vals, row = {}, [f"memory: {memory['workload']} step peak at batch {memory['batch']:,}"]
    for name in TABLE_LIBS:
        vals[name] = None
        if name not in MEMORY_LIBS:
            row.append("—")
        elif memory["unavailable"] or not available.get(name, True):
            row.append("n/a")
        elif name in memory["errors"]:
            row.append("error")
        else:
            vals[name] = memory["peak_bytes"].get(name)
            row.append(fmt_bytes(vals[name]))
    to_torch = vals["tapegrad"] / vals["torch"] if vals["tapegrad"] and vals["torch"] else None
    return row + [fmt_ratio(vals["tapegrad"], vals["torch"]), "—", fmt_ratio(vals["tapegrad"], vals["numpy"]),
                  *target_cells("memory", {"tapegrad": {"torch": to_torch}})]


def build_table(workloads, check, agg, startup, startup_fail, descriptions, available, memory=None):
    """The Markdown table: HEADER's columns, one row per workload (W1 also split into forward and
    backward), the startup rows and the memory row."""
    rows = []
    compiled = "tapegrad.compile"

    def min_or_none(*xs):
        xs = [x for x in xs if x is not None]
        return min(xs) if xs else None

    def measured(cells, times, key="total", scale=1.0):
        """Per variant: its ratio to torch, to the floor, to micrograd, and its own value."""
        out = {}
        for name, variant in (("tapegrad", "tapegrad"), (compiled, "compiled")):
            if cells[name] == "—" or times[name] is None:
                continue
            out[variant] = {"torch": ratio(times[name], times["torch"], key),
                            "numpy": ratio(times[name], times["numpy"], key),
                            "micrograd": ratio(times[name], times["micrograd"], key),
                            "value": times[name][key] * scale}
        return out

    def ratio_cells(m):
        """tapegrad/torch, compiled/torch, best/numpy (the faster tapegrad variant over the floor)."""
        eager, comp = m.get("tapegrad", {}), m.get("compiled")
        best = min_or_none(eager.get("numpy"), comp.get("numpy") if comp else None)
        return [fmt_ratio(eager.get("torch")), fmt_ratio(comp.get("torch")) if comp else "—",
                fmt_ratio(best)]

    def cell_for(wl, name):
        st = check[wl]["status"].get(name)
        if st is None:
            return "—", None                      # implementation does not exist (micrograd but W2)
        if st == "n/a":
            return "n/a", None
        if st == "error":
            return "error", None
        if st == "mismatch":
            return "MISMATCH", None
        if check[wl]["refused"]:
            return "not timed", None
        t = agg.get(wl, {}).get("times", {}).get(name)
        if t is None:
            return "error", None
        return fmt_time(t["total"]), t

    for wl in workloads:
        cells, times = {}, {}
        for name in COLUMNS:
            cells[name], times[name] = cell_for(wl, name)
        label = f"{wl} {descriptions[wl]}"
        if cells["micrograd"] != "—":
            label += f" (micrograd: {cells['micrograd']})"
        if check[wl]["refused"]:
            label += " (REFUSED: results disagree)"
        m = measured(cells, times)
        target, met = target_cells(wl, m)
        if wl == "W2" and met.startswith("yes"):
            variant = "tapegrad" if met == "yes" else "compiled"
            met = met.rstrip(")") + ("; " if met != "yes" else " (") + \
                f"{m[variant]['micrograd']:.2f}x micrograd)"
        rows.append([label] + [cells[c] for c in TABLE_LIBS] + ratio_cells(m) + [target, met])
        if wl in SPLIT:
            for part, unit, divisor in SPLIT[wl]:
                row = [f"{wl} {part} ({unit})"]
                for name in TABLE_LIBS:
                    t = times[name]
                    if cells[name] == "—":
                        row.append("—")
                    elif t is None:
                        row.append(cells[name] if cells[name] in ("n/a", "error", "MISMATCH", "not timed") else "n/a")
                    else:
                        row.append(f"{t[part] / divisor * 1e6:.3f}")
                pm = measured(cells, times, part)
                rows.append(row + ratio_cells(pm) + list(target_cells(f"{wl} {part}", pm)))
    if startup is not None:
        for what, label in (("import", 'startup: python -c "import X"'),
                            ("first_backward", "startup: import + first backward")):
            vals, row = {}, [label]
            for name in TABLE_LIBS:
                key = (name, what)
                if name == compiled or (name == "numpy" and what == "first_backward"):
                    row.append("—")
                    vals[name] = None
                elif not available.get(name, True):
                    row.append("n/a")
                    vals[name] = None
                elif key in startup_fail:
                    row.append("error")
                    vals[name] = None
                else:
                    vals[name] = startup.get(key)
                    row.append(fmt_time(vals[name]))
            row += [fmt_ratio(vals["tapegrad"], vals["torch"]), "—", "—",
                    *target_cells(what, {"tapegrad": {"value": vals["tapegrad"]}})]
            rows.append(row)
    if memory is not None:
        rows.append(memory_row(memory, available))

    header = HEADER
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
             "|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                                       for i, (c, w) in enumerate(zip(r, widths))) + " |")
    return "\n".join(lines)


def plot(path, workloads, agg, check):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(COLUMNS)
    fig, ax = plt.subplots(figsize=(1.8 * len(workloads) + 2, 4.5))
    width = 0.8 / len(names)
    for j, name in enumerate(names):
        xs, ys = [], []
        for i, wl in enumerate(workloads):
            t = agg.get(wl, {}).get("times", {}).get(name)
            if t is not None and not check[wl]["refused"]:
                xs.append(i + (j - (len(names) - 1) / 2) * width)
                ys.append(t["total"] * 1e3)
        if xs:
            ax.bar(xs, ys, width, label=LABELS.get(name, name))
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels(workloads)
    ax.set_yscale("log")
    ax.set_ylabel("time per step (ms, log scale)")
    ax.set_title("tapegrad vs torch vs NumPy floor (median across processes)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    args = parse_args(argv)
    pin_threads(args.threads)           # before numpy / numba / torch are imported
    if args._worker is not None:
        spec = json.loads(args._worker)
        (run_memory_worker if spec.get("kind") == "memory" else run_worker)(spec)
        return 0

    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("error: --plot needs matplotlib, which is not installed "
                  "(pip install matplotlib), or run without --plot", file=sys.stderr)
            return 2

    import numpy as np

    from benchmarks import workloads as W

    if args.only:
        workloads = [w.strip().upper() for w in args.only.split(",") if w.strip()]
        bad = [w for w in workloads if w not in W.WORKLOADS]
        if bad:
            print(f"error: unknown workload(s) {bad}; choose from {','.join(W.WORKLOADS)}", file=sys.stderr)
            return 2
    else:
        workloads = list(W.WORKLOADS)

    mods, versions, available = {}, {"numpy": np.__version__}, {"numpy": True, "micrograd": True}
    for name in W.AUTOGRAD_LIBS:
        mod, err = try_import(name, args.threads)
        mods[name] = mod
        available[name] = mod is not None
        if name not in W.LIB_MODULES:   # tapegrad.compile: the tapegrad module, already listed
            versions[name] = getattr(mod, "__version__", "?") if mod is not None else f"n/a ({err})"
    try:
        import numba
        versions["numba"] = numba.__version__
    except ImportError:
        versions["numba"] = "n/a"

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus; "
          + ", ".join(f"{k} {v}" for k, v in versions.items()))
    from benchmarks.workloads import blas_kernels
    print(blas_kernels())
    print(f"threads={args.threads} processes={args.processes} repeats={args.repeats} "
          f"target={args.target}s startup_runs={args.startup_runs}")

    print("checking agreement of gradients ...", file=sys.stderr, flush=True)
    check = check_agreement(workloads, mods)
    for wl in workloads:
        for msg in check[wl]["msgs"]:
            print("  " + msg)

    libs_by_wl = {wl: [n for n, s in check[wl]["status"].items() if s == "ok"]
                  for wl in workloads if not check[wl]["refused"]}
    agg, worker_errors = {}, []
    timed = [wl for wl in workloads if wl in libs_by_wl]
    if timed:
        print(f"timing {','.join(timed)} ...", file=sys.stderr, flush=True)
        agg, worker_errors = run_workers(args, timed, libs_by_wl)
        for err in worker_errors:
            print("  worker " + err)
        for wl in timed:
            for name, msg in agg[wl]["errors"].items():
                print(f"  {wl}: {name} failed while timing: {msg}")

    startup, startup_fail = None, {}
    if not args.no_startup:
        print("measuring startup ...", file=sys.stderr, flush=True)
        startup, startup_fail = measure_startup(args, available)
        for (name, what), msg in startup_fail.items():
            print(f"  startup {what} for {name} failed: {' '.join(msg)}")

    memory = None
    if not args.no_memory:
        print("measuring memory ...", file=sys.stderr, flush=True)
        memory = measure_memory(args, available)
        if memory["unavailable"]:
            print(f"  memory: not measured: {memory['unavailable']}")
        for name, msg in memory["errors"].items():
            print(f"  memory for {name} failed: {msg}")

    print()
    print(build_table(workloads, check, agg, startup, startup_fail, W.DESCRIPTIONS, available, memory))
    print()
    notes = [("times are per step, median across processes of per-process medians; "
              "ratios are time ratios (< 1: tapegrad faster), median across processes of "
              "per-process ratios (startup: ratio of medians)"),
             "numpy = hand-written forward+backward (the floor); micrograd = pure-Python scalar peer (W2 only)",
             ("compiled = the tapegrad step with its differentiable part under tapegrad.compile(fullgraph=True) "
              "(traced in warm-up, replayed when timed; in W2-W5 it takes the gradients itself with "
              "autograd.grad, so the backward is replayed with the forward; in W6-W7 it is the whole training "
              "step: zero_grad, loss.backward(), optim.SGD's step)")]
    if startup is not None and ("baseline", "python -c pass") in startup:
        notes.append(f"startup times include interpreter startup: python -c pass = "
                     f"{fmt_time(startup[('baseline', 'python -c pass')])}")
    if memory is not None and memory["peak_bytes"]:
        notes.append(f"memory: peak RSS during one {memory['workload']} step at batch {memory['batch']:,} "
                     f"above RSS before it (after gc.collect and malloc_trim), median of {memory['steps']} "
                     f"steps per process, then across {args.startup_runs} "
                     f"{'process' if args.startup_runs == 1 else 'processes'} per library; "
                     "ratios are memory ratios of medians; MB = 10^6 bytes")
        if not memory["trim"]:
            notes.append("memory: malloc_trim was unavailable (not glibc): freed heap memory may stay "
                         "resident and be reused, so peaks can be underestimated")
    for n in notes:
        print(f"- {n}")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"versions": versions, "args": {k: v for k, v in vars(args).items() if k != "_worker"},
                       "check": check, "times": agg,
                       "startup": {f"{k[0]}:{k[1]}": v for k, v in (startup or {}).items()},
                       "memory": memory},
                      f, indent=2, default=str)
    if args.plot:
        if agg:
            plot(args.plot, timed, agg, check)
            print(f"- plot written to {args.plot}")
        else:
            print("- nothing timed, no plot written")
    return 1 if worker_errors else 0


if __name__ == "__main__":
    sys.exit(main())
