"""A rank that raises, is killed, hangs, exits early, or calls a collective with another shape: the job ends
with a clear error well within its timeout, never hangs (each run is bounded by a subprocess timeout)."""
import pytest

from mpi_helpers import run_mpi

TIMEOUT = 4  # the process group's timeout, seconds, where the others must time out
LONG = 120  # the timeout where they must not need it: the job ends long before


def run_failing_job(n, mode, group_timeout, timeout):
    """worker_failures.py under mpiexec, run again (three tries in all) while mpiexec reports nothing at all:
    two CI runs on a fresh clone saw an empty output with a failing exit code for the early-exiting rank, once
    twice in a row (not reproduced in dozens of runs alone or under load; see docs/distributed.md). Three
    silent runs fail the test: the job must end with a clear error."""
    silent = []
    for _ in range(3):
        rc, out, seconds = run_mpi(n, "worker_failures.py", mode, group_timeout, timeout=timeout)
        if rc == 0 or out.strip():
            return rc, out, seconds
        silent.append((rc, round(seconds, 1)))
    return rc, f"(mpiexec printed nothing in {len(silent)} runs: exit codes and seconds {silent})", seconds


@pytest.mark.parametrize("n", [2, 3])
def test_a_raising_rank_aborts_every_rank(n):
    rc, out, seconds = run_failing_job(n, "raise", LONG, timeout=90)
    assert rc != 0, out
    assert f"ValueError: boom on rank {n - 1}" in out, out
    assert f"uncaught ValueError on rank {n - 1}; aborting all ranks (MPI_Abort)" in out, out
    assert "finished without noticing" not in out
    assert seconds < LONG / 2, seconds  # at once: the abort does not wait for the timeout


def test_a_killed_rank_ends_the_job():
    rc, out, seconds = run_failing_job(2, "kill", LONG, timeout=90)
    assert rc != 0, out
    assert "signal 9" in out or "Killed" in out, out
    assert "finished without noticing" not in out
    assert seconds < LONG / 2, seconds


@pytest.mark.parametrize("mode", ["hang", "exit"])
def test_a_silent_rank_times_the_others_out(mode):
    rc, out, seconds = run_failing_job(2, mode, TIMEOUT, timeout=60)
    assert rc != 0, out
    assert "all_reduce (collective #2) did not complete within the process group's timeout (0:00:04)" in out, out
    assert "Aborting all ranks (MPI_Abort)" in out, out
    assert "finished without noticing" not in out
    assert TIMEOUT <= seconds < TIMEOUT + 30, seconds


def test_a_shape_mismatch_is_reported_on_every_rank():
    rc, out, seconds = run_failing_job(2, "mismatch", TIMEOUT, timeout=60)
    assert rc != 0, out
    assert "RuntimeError: Detected mismatch between collectives on ranks" in out, out
    assert "rank 0 is running OpType=ALL_REDUCE, TensorShape=[4]" in out, out
    assert "rank 1 is running OpType=ALL_REDUCE, TensorShape=[5]" in out, out
    assert "finished without noticing" not in out


def test_a_dtype_mismatch_is_reported_on_every_rank():
    rc, out, seconds = run_failing_job(2, "dtype_mismatch", TIMEOUT, timeout=60)
    assert rc != 0, out
    assert "RuntimeError: Detected mismatch between collectives on ranks" in out, out
    assert "rank 0 is running OpType=ALL_REDUCE, TensorShape=[4], TensorDtype=float32" in out, out
    assert "rank 1 is running OpType=ALL_REDUCE, TensorShape=[4], TensorDtype=float64" in out, out
    assert "finished without noticing" not in out


@pytest.mark.parametrize("n", [2, 3])
def test_a_recv_of_another_dtype_ends_the_job_with_its_error(n):
    rc, out, seconds = run_failing_job(n, "recv_dtype_mismatch", LONG, timeout=90)
    assert rc != 0, out
    assert (f"RuntimeError: recv: rank 0 sent a tensor of another dtype: it sent TensorShape=[4], "
            f"TensorDtype=float64; this rank received into TensorShape=[4], TensorDtype=int64") in out, out
    assert f"uncaught RuntimeError on rank {n - 1}; aborting all ranks (MPI_Abort)" in out, out
    assert "finished without noticing" not in out
    assert seconds < LONG / 2, seconds  # at once, not at the timeout
