"""Data-parallel speed: the W3 MLP step (64-128-128-10 tanh, cross-entropy, SGD; workloads.W3MLP) at a global
batch of 256 and 1,024 on 1 process and on 2 processes under DistributedDataParallel (each rank takes half of the
batch), next to 2 processes that each train on their half without communicating (the ceiling: what the machine
gives two processes at once), and one all_reduce of 1 MB and 100 MB over loopback next to mpi4py's own Allreduce.

    python -m benchmarks.bench_distributed            # prints a Markdown table (about a minute)

Every process runs with one BLAS thread (as benchmarks/compare.py), so 2 processes use the machine's 2 cores; the
1-process row with 2 BLAS threads is the other way to use them. Each round runs every configuration once, in
fresh processes started with mpiexec, one after the other (so that a load from elsewhere falls on all of them);
a figure is the median of ROUNDS rounds. The "ready window" is the share of the backward (from .backward() to its
return) after DDP's first gradient hook: what an all-reduce could overlap.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ROUNDS = 3
STEPS = {256: 300, 1024: 100}


def _mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.access(here, os.X_OK) else "mpiexec"


def _launch(n, args, threads=1):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    cmd = [_mpiexec(), "-n", str(n), sys.executable, "-m", "benchmarks.bench_distributed", "--worker", *args]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
                         timeout=300)
    if out.returncode:
        raise RuntimeError(out.stdout)
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


# -- workers (under mpiexec) --------------------------------------------------------------------------------
def _step_worker(batch, steps, ddp=True):
    import tapegrad as torch
    import tapegrad.distributed as dist
    from benchmarks.workloads import W3_SIZES, w3_data

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    d = w3_data(batch)
    shard = slice(rank * batch // world, (rank + 1) * batch // world)
    x, y = torch.tensor(d["x"][shard]), torch.tensor(d["y"][shard])

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for k in range(1, len(W3_SIZES)):
                setattr(self, f"w{k}", torch.nn.Parameter(torch.tensor(d[f"w{k}"])))
                setattr(self, f"b{k}", torch.nn.Parameter(torch.tensor(d[f"b{k}"])))

        def forward(self, x):
            h1 = torch.tanh(x @ self.w1 + self.b1)
            h2 = torch.tanh(h1 @ self.w2 + self.b2)
            return h2 @ self.w3 + self.b3

    model = MLP()
    net = torch.nn.parallel.DistributedDataParallel(model) if world > 1 and ddp else model
    params = list(model.parameters())
    first_hook = []
    for p in params:  # registered after DDP's: each runs right after DDP's hook of the same parameter
        p.register_hook(lambda g: first_hook.append(time.perf_counter()) if not first_hook else None)

    def step():
        loss = torch.nn.functional.cross_entropy(net(x), y)
        first_hook.clear()
        t0 = time.perf_counter()
        loss.backward()
        t1 = time.perf_counter()
        with torch.no_grad():
            for p in params:
                p -= 0.01 * p.grad
                p.grad = None
        return (t1 - first_hook[0]) / (t1 - t0) if first_hook else 0.0

    for _ in range(20):
        step()
    dist.barrier()
    t = time.perf_counter()
    windows = [step() for _ in range(steps)]
    dist.barrier()
    if rank == 0:
        print(json.dumps({"steps_per_s": steps / (time.perf_counter() - t), "ready_window": float(np.median(windows))}))
    dist.destroy_process_group()


def _allreduce_worker():
    import tapegrad as torch
    import tapegrad.distributed as dist
    from mpi4py import MPI

    dist.init_process_group("mpi")
    comm = MPI.COMM_WORLD
    result = {}
    for mb, reps in ((1, 200), (100, 5)):
        n = mb * (1 << 20) // 4
        t = torch.ones(n)
        raw = np.ones(n, np.float32)
        ours, theirs = [], []
        for _ in range(reps + 1):
            comm.Barrier()
            s = time.perf_counter()
            dist.all_reduce(t)
            ours.append(time.perf_counter() - s)
            comm.Barrier()
            s = time.perf_counter()
            comm.Allreduce(MPI.IN_PLACE, raw, MPI.SUM)
            theirs.append(time.perf_counter() - s)
        result[f"{mb} MB"] = (float(np.median(ours[1:])), float(np.median(theirs[1:])))
    if comm.rank == 0:
        print(json.dumps(result))
    dist.destroy_process_group()


# -- the driver ------------------------------------------------------------------------------------------
def _fmt(seconds):
    return f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--worker", nargs="*")
    a = p.parse_args()
    if a.worker is not None:
        if a.worker[0] in ("step", "independent"):
            return _step_worker(int(a.worker[1]), int(a.worker[2]), ddp=a.worker[0] == "step")
        return _allreduce_worker()
    print(f"load average before: {os.getloadavg()[0]:.2f}, cores: {os.cpu_count()}")
    rows = ["| global batch | 1 process | 1 process, 2 BLAS threads | 2 processes (DDP) | 2 processes / 1 process "
            "| 2 processes, no communication (ceiling) | DDP / ceiling | ready window (2 processes) |",
            "|--:|--:|--:|--:|--:|--:|--:|--:|"]
    runs = {}
    for _ in range(ROUNDS):
        for batch in (256, 1024):
            args = [str(batch), str(STEPS[batch])]
            for name, n, kind, threads in (("one", 1, "step", 1), ("one_2t", 1, "step", 2), ("two", 2, "step", 1),
                                           ("ceiling", 2, "independent", 1)):
                runs.setdefault((batch, name), []).append(_launch(n, [kind, *args], threads=threads))
    for batch in (256, 1024):
        rate = {name: float(np.median([r["steps_per_s"] for r in runs[batch, name]]))
                for name in ("one", "one_2t", "two", "ceiling")}
        window = float(np.median([r["ready_window"] for r in runs[batch, "two"]]))
        rows.append(f"| {batch} | {rate['one']:.0f} steps/s | {rate['one_2t']:.0f} steps/s | {rate['two']:.0f} steps/s "
                    f"| {rate['two'] / rate['one']:.2f}x | {rate['ceiling']:.0f} steps/s "
                    f"({rate['ceiling'] / rate['one']:.2f}x) | {rate['two'] / rate['ceiling']:.2f} | {window:.1%} |")
    print("\n".join(rows))
    ar = _launch(2, ["allreduce"])
    print("\n| all_reduce, 2 processes, float32 | tapegrad.distributed.all_reduce | mpi4py Allreduce | ratio |")
    print("|--:|--:|--:|--:|")
    for size, (ours, theirs) in ar.items():
        print(f"| {size} | {_fmt(ours)} | {_fmt(theirs)} | {ours / theirs:.2f}x |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
