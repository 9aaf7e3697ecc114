"""Run under mpiexec -n N (N > 1, all on this machine): init_process_group gives each rank's BLAS its share of
the cores (cores // N threads, at least 1) unless a thread variable is set (argv[1] == "set": the BLAS keeps the
count it started with), and destroy_process_group gives the BLAS its threads back. Prints "OK rank r"."""
import os
import sys

import numpy as np
from threadpoolctl import threadpool_info

import tapegrad.distributed as dist


def blas_threads():
    np.ones((2, 2)) @ np.ones((2, 2))  # (the BLAS is loaded)
    return sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})


before = blas_threads()
dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
assert n > 1, n
during = blas_threads()
if sys.argv[1] == "set":
    assert os.environ["OMP_NUM_THREADS"] == "1", os.environ.get("OMP_NUM_THREADS")
    assert during == before, (before, during)
else:
    assert not any(os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"))
    share = max(1, len(os.sched_getaffinity(0)) // n)
    assert during == [share], (before, during, share)
dist.destroy_process_group()
assert blas_threads() == before, (before, blas_threads())
print(f"OK rank {r} BLAS threads before {before}, during {during}", flush=True)
