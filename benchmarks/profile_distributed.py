"""Where a data-parallel W3 step's time goes: median phase times of one rank (forward, backward, the all-reduce
where it is separate, optimizer step), or a cProfile of rank 0. Run under mpiexec:

    OMP_NUM_THREADS=1 mpiexec -n 2 python -m benchmarks.profile_distributed ddp 1024 400
    OMP_NUM_THREADS=1 mpiexec -n 2 python -m benchmarks.profile_distributed flat 1024 400
    OMP_NUM_THREADS=1 mpiexec -n 2 python -m benchmarks.profile_distributed independent 1024 400
    OMP_NUM_THREADS=1 mpiexec -n 2 python -m benchmarks.profile_distributed ddp 1024 400 --profile
    OMP_NUM_THREADS=1 mpiexec -n 1 python -m benchmarks.profile_distributed ddp 16 2000 --cpu   # DDP's own CPU
    OMP_NUM_THREADS=1 mpiexec -n 1 python -m benchmarks.profile_distributed independent 16 2000 --cpu
    OMP_NUM_THREADS=1 mpiexec -n 2 python -m benchmarks.profile_distributed ddp 256 20 \
        --sizes 64,1024,1024,1024,10 --bucket-mb 2        # a larger MLP, 8.4 MB of gradients in 5 buckets

Modes: `ddp` (DistributedDataParallel), `flat` (no DDP: after backward every gradient is copied into one flat
array, summed by one MPI Allreduce and copied back divided by the world size: about the least a synchronous step
can cost), `independent` (each rank trains
on its half of the batch with no communication: the machine's ceiling for two processes). Each rank takes
1 / world of the global batch, as benchmarks/bench_distributed.py. Figures are medians over the steps, in µs.
"""
import argparse
import json
import time

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("ddp", "flat", "independent"))
    p.add_argument("batch", type=int, help="global batch")
    p.add_argument("steps", type=int)
    p.add_argument("--bucket-mb", type=float, default=None, help="DDP's bucket_cap_mb")
    p.add_argument("--sizes", default=None, help="the MLP's layer sizes, e.g. 64,1024,1024,1024,10 for a model of "
                   "several buckets (default W3's: 64,128,128,10)")
    p.add_argument("--profile", action="store_true", help="cProfile rank 0's steps instead of timing them")
    p.add_argument("--cpu", action="store_true", help="CPU time of the rank's thread (time.thread_time), not wall "
                   "time: on one rank, what DDP's own work costs whatever the machine's load")
    a = p.parse_args()

    import tapegrad as torch
    import tapegrad.distributed as dist
    from benchmarks.workloads import W3_SIZES, w3_data
    from mpi4py import MPI

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    sizes = W3_SIZES if a.sizes is None else tuple(int(v) for v in a.sizes.split(","))
    d = w3_data(a.batch, sizes)
    shard = slice(rank * a.batch // world, (rank + 1) * a.batch // world)
    x, y = torch.tensor(d["x"][shard]), torch.tensor(d["y"][shard])

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for k in range(1, len(sizes)):
                setattr(self, f"w{k}", torch.nn.Parameter(torch.tensor(d[f"w{k}"])))
                setattr(self, f"b{k}", torch.nn.Parameter(torch.tensor(d[f"b{k}"])))

        def forward(self, x):
            for k in range(1, len(sizes) - 1):
                x = torch.tanh(x @ getattr(self, f"w{k}") + getattr(self, f"b{k}"))
            k = len(sizes) - 1
            return x @ getattr(self, f"w{k}") + getattr(self, f"b{k}")

    model = MLP()
    net = model
    if a.mode == "ddp":
        net = torch.nn.parallel.DistributedDataParallel(
            model, **({} if a.bucket_mb is None else {"bucket_cap_mb": a.bucket_mb}))
    params = list(model.parameters())
    comm = MPI.COMM_WORLD.Dup()
    flat = np.empty(sum(p.numel() for p in params), np.float32)
    times = {"forward": [], "backward": [], "all-reduce": [], "optimizer": [], "step": []}

    clock = time.thread_time if a.cpu else time.perf_counter

    def step():
        t0 = clock()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        t1 = clock()
        loss.backward()
        t2 = clock()
        if a.mode == "flat":
            o = 0
            for p in params:
                n = p.numel()
                flat[o: o + n] = p.grad._data.reshape(-1)
                o += n
            comm.Allreduce(MPI.IN_PLACE, flat, MPI.SUM)
            o = 0
            for p in params:
                n = p.numel()
                np.divide(flat[o: o + n].reshape(p.grad.shape), world, out=p.grad._data)
                o += n
        t3 = clock()
        with torch.no_grad():
            for p in params:
                p -= 0.01 * p.grad
                p.grad = None
        t4 = clock()
        for k, v in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0)):
            times[k].append(v)

    for _ in range(30):
        step()
    for v in times.values():
        v.clear()
    if a.profile:
        import cProfile
        import pstats
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(a.steps):
            step()
        profiler.disable()
        if rank == 0:
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    else:
        comm.Barrier()
        t = time.perf_counter()
        for _ in range(a.steps):
            step()
        comm.Barrier()
        rate = a.steps / (time.perf_counter() - t)
        if rank == 0:
            print(json.dumps({"mode": a.mode, "world": world, "steps_per_s": round(rate, 1),
                              **{k: round(float(np.median(v)) * 1e6, 1) for k, v in times.items()}}))
    comm.Free()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
