"""A torchrun-like launcher on MPI: `python -m tapegrad.distributed.run --nproc-per-node N train.py [args]`.

It becomes `mpiexec -n N python -m tapegrad.distributed.run --mpi-worker train.py [args]`; each worker sets
torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) from
the MPI launcher's own (MPICH's PMI_RANK, Open MPI's OMPI_COMM_WORLD_RANK, PMIx's PMIX_RANK) and then execs the
script in its place, so the script is __main__ of its process as under torchrun and MPI's launch channel (inherited
environment and descriptors) reaches it. `mpiexec -n N python train.py` works as well, without the variables.
As torchrun, it sets OMP_NUM_THREADS=1 for N > 1 unless the variable is set (init_process_group shares the cores
out under a bare mpiexec too).
"""
import argparse
import os
import shutil
import sys

_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")
_LOCAL_RANK_VARS = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK")
_LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")


def _parser():
    p = argparse.ArgumentParser(prog="python -m tapegrad.distributed.run",
                                description="Start N processes of a training script under MPI (torchrun's options).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes to start (an integer; torchrun's 'cpu' and 'auto' mean os.cpu_count())")
    p.add_argument("--nnodes", default="1", help="only 1: for several machines run the site's mpiexec directly")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true", help="accepted (a single machine is the only mode)")
    p.add_argument("-m", "--module", action="store_true", help="run the script argument as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the script as an executable")
    p.add_argument("--mpiexec", default=None, help="the MPI launcher (default: next to this Python, then PATH)")
    p.add_argument("--mpi-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _first(names, default=None):
    for name in names:
        v = os.environ.get(name)
        if v not in (None, ""):
            return v
    return default


def _command(args):
    if args.no_python:
        return [args.training_script, *args.training_script_args]
    # (through tapegrad's launcher: a script's `import torch` is tapegrad, as under `python -m tapegrad`)
    if args.module:
        return [sys.executable, "-m", "tapegrad", "-m", args.training_script, *args.training_script_args]
    return [sys.executable, "-m", "tapegrad", args.training_script, *args.training_script_args]


def _worker(args):
    rank = _first(_RANK_VARS)
    if rank is None:
        sys.exit("tapegrad.distributed.run: --mpi-worker runs under mpiexec (no MPI rank variable is set: "
                 f"{', '.join(_RANK_VARS)})")
    size = _first(_SIZE_VARS, os.environ.get("WORLD_SIZE", "1"))
    os.environ.update(RANK=rank, WORLD_SIZE=size, GROUP_RANK="0", ROLE_RANK=rank, ROLE_WORLD_SIZE=size,
                      LOCAL_RANK=_first(_LOCAL_RANK_VARS, rank), LOCAL_WORLD_SIZE=_first(_LOCAL_SIZE_VARS, size))
    command = _command(args)
    os.execvp(command[0], command)


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.mpi_worker:
        return _worker(args)
    if str(args.nnodes) not in ("1", "1:1"):
        sys.exit("tapegrad.distributed.run starts processes on this machine only (--nnodes 1). For several "
                 "machines, start the script with the site's MPI launcher, e.g. mpiexec -hosts a,b -n 16 python "
                 "train.py (docs/distributed.md).")
    n = args.nproc_per_node
    n = os.cpu_count() if n in ("cpu", "auto", "gpu") else int(n)
    if n < 1:
        sys.exit(f"--nproc-per-node must be at least 1, got {n}")
    mpiexec = args.mpiexec or _find_mpiexec()
    if "OMP_NUM_THREADS" not in os.environ and n > 1:  # torchrun's default and warning (the BLAS reads it too)
        sys.stderr.write("\n*****************************************\nSetting OMP_NUM_THREADS environment variable "
                         "for each process to be 1 in default, to avoid your system being overloaded, please further "
                         "tune the variable for optimal performance in your application as needed. \n"
                         "*****************************************\n")
        os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.update(MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port), WORLD_SIZE=str(n),
                      LOCAL_WORLD_SIZE=str(n))
    worker = [sys.executable, "-m", "tapegrad.distributed.run", "--mpi-worker"]
    worker += ["-m"] if args.module else ["--no-python"] if args.no_python else []
    command = [mpiexec, "-n", str(n), *worker, args.training_script, *args.training_script_args]
    sys.stdout.flush()
    os.execvp(command[0], command)


def _find_mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = here if os.access(here, os.X_OK) else shutil.which("mpiexec")
    if found is None:
        from .distributed_c10d import EXTRA_HINT
        sys.exit(f"tapegrad.distributed.run: no mpiexec found next to {sys.executable} or on PATH. {EXTRA_HINT}")
    return found


if __name__ == "__main__":
    main()
