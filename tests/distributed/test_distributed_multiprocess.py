"""Collectives and DistributedDataParallel on 2 and 3 processes under mpiexec (the workers check every rank
against NumPy, and DDP against one process training on the whole batch)."""
import pytest

import tapegrad
from mpi_helpers import run_mpi


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    tapegrad.warmup()  # (compile or load the kernels once here, not in 2-3 workers at a time)


def passed(rc, out, n):
    assert rc == 0, out
    for r in range(n):
        assert f"OK rank {r}" in out, out


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_against_numpy(n):
    rc, out, _ = run_mpi(n, "worker_collectives.py", timeout=120)
    passed(rc, out, n)


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_training_equals_one_process(n):
    rc, out, _ = run_mpi(n, "worker_ddp.py", timeout=120)
    passed(rc, out, n)


def test_one_process_under_mpiexec():
    rc, out, _ = run_mpi(1, "worker_ddp.py", timeout=120)
    passed(rc, out, 1)


UNSET_THREADS = {"OMP_NUM_THREADS": None, "OPENBLAS_NUM_THREADS": None, "MKL_NUM_THREADS": None}


@pytest.mark.parametrize("n", [2, 3])
def test_ranks_share_the_cores_between_their_blas(n):
    rc, out, _ = run_mpi(n, "worker_threads.py", "unset", timeout=120, extra_env=UNSET_THREADS)
    passed(rc, out, n)


def test_a_thread_variable_is_left_alone():
    rc, out, _ = run_mpi(2, "worker_threads.py", "set", timeout=120)  # (mpi_helpers sets OMP_NUM_THREADS=1)
    passed(rc, out, 2)
