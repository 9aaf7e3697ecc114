"""Run under mpiexec -n N with a mode: one rank fails after a first collective; the others must not hang."""
import datetime
import os
import signal
import sys
import time

import tapegrad as torch
import tapegrad.distributed as dist

mode = sys.argv[1]
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=float(sys.argv[2])))
r, n = dist.get_rank(), dist.get_world_size()
x = torch.ones(4)
dist.all_reduce(x)
if r == n - 1:
    if mode == "raise":
        raise ValueError(f"boom on rank {r}")
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang":
        time.sleep(600)
    if mode == "exit":
        sys.exit(0)
if mode == "mismatch":
    dist.all_reduce(torch.ones(4 + (r == n - 1)))  # not caught: the error ends every rank
if mode == "dtype_mismatch":
    dist.all_reduce(torch.ones(4, dtype=torch.float64 if r == n - 1 else torch.float32))
if mode == "recv_dtype_mismatch":  # only the receiver raises; its abort ends the sender too
    if r == 0:
        dist.send(torch.ones(4, dtype=torch.float64), dst=n - 1)
    elif r == n - 1:
        dist.recv(torch.zeros(4, dtype=torch.int64), src=0)
dist.all_reduce(x)
dist.all_reduce(x)
print(f"rank {r} finished without noticing", flush=True)
