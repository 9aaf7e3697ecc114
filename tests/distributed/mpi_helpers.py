"""Start worker scripts under mpiexec (the one installed with mpich next to this Python), bounded by timeouts."""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    import shutil
    found = shutil.which("mpiexec")
    assert found, 'mpiexec not found: install the test extra (pip install -e ".[test]" brings mpi4py and mpich)'
    return found


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    e["OMP_NUM_THREADS"] = e["OPENBLAS_NUM_THREADS"] = e["MKL_NUM_THREADS"] = "1"  # 2 cores, up to 3 ranks
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        e.pop(k, None)
    return e


def run(args, timeout, extra_env=None):
    """Run a command; returns (returncode, output, seconds). A run past `timeout` fails the test (no hang).
    extra_env's entries are added to the environment, or removed from it where their value is None."""
    e = env()
    for k, v in (extra_env or {}).items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    start = time.monotonic()
    try:
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                           env=e, cwd=ROOT)
    except subprocess.TimeoutExpired as exc:
        out = exc.output or ""
        raise AssertionError(f"{args} did not finish within {timeout} s (a hang):\n{out}") from None
    return p.returncode, p.stdout, time.monotonic() - start


def run_mpi(n, script, *args, timeout=90, extra_env=None):
    return run([mpiexec(), "-n", str(n), sys.executable, os.path.join(HERE, script), *map(str, args)], timeout,
               extra_env)


def run_python(code, timeout=60, extra_env=None):
    return run([sys.executable, "-c", code], timeout, extra_env)
