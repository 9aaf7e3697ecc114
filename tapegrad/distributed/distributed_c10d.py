"""torch.distributed's process groups and collectives, carried by MPI (mpi4py).

Tensors travel through MPI's buffer interface on their NumPy arrays (no pickling; no copy where the array is
C-contiguous; a non-contiguous one goes through a contiguous copy that is written back). mpi4py is imported at
init_process_group, never at `import tapegrad`.

Failures never hang: every blocking MPI call runs under a watchdog thread that calls MPI_Abort (ending every
rank, with a message naming the call) when the call outlives the group's timeout; an exception that escapes a
rank's script aborts all ranks at once (sys.excepthook); a rank that dies is reported by mpiexec, which ends
the others. Before each collective the ranks compare a fingerprint of it (operation, dtype, shape, root, reduce
op) in one small Allreduce, so mismatched tensors are reported as an error on every rank instead of corrupting
memory or hanging.
"""
import datetime
import enum
import multiprocessing
import os
import pickle
import sys
import threading
import time
import traceback
import warnings

import numpy as np

from .. import _runtime
from ..tensor import Tensor
from .._warnings import user_stacklevel

EXTRA_HINT = ('tapegrad.distributed needs mpi4py and an MPI library: pip install "tapegrad[distributed]" '
              '(installs mpi4py and mpich)')
NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."
default_pg_timeout = datetime.timedelta(minutes=30)  # torch's default for CPU process groups


def is_available():
    """Whether mpi4py can be imported (checked without importing it: importing mpi4py.MPI starts MPI)."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def is_mpi_available():
    return is_available()


def is_gloo_available():
    """True where MPI is: init_process_group takes "gloo" (a CPU script's backend) and runs it over MPI."""
    return is_available()


def get_default_backend_for_device(device):
    """torch's name of the default backend for a device type (gloo for the CPU; tapegrad runs it over MPI)."""
    device_type = device.type if hasattr(device, "type") else str(device).split(":")[0]
    backend = {"cpu": "gloo", "cuda": "nccl", "xpu": "xccl"}.get(device_type)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device_type}")
    return backend


def is_nccl_available():
    return False


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


_mpi_module = None  # mpi4py.MPI once imported (an import statement per collective costs ~1 µs)


def _mpi():
    global _mpi_module
    if _mpi_module is None:
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise RuntimeError(EXTRA_HINT) from e
        _mpi_module = MPI
    return _mpi_module


class Backend(str):
    """The backend's name. "gloo" and None select MPI too (CPU scripts name gloo); "nccl" needs CUDA."""
    UNDEFINED, GLOO, NCCL, MPI = "undefined", "gloo", "nccl", "mpi"

    def __new__(cls, name):
        return super().__new__(cls, name.lower())


class ReduceOp:
    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8

        def __str__(self):  # (torch's enum prints its type's name; an IntEnum's prints the number)
            return f"RedOpType.{self.name}"

        def __format__(self, spec):
            return format(str(self), spec)

    SUM, AVG, PRODUCT, MIN, MAX = RedOpType.SUM, RedOpType.AVG, RedOpType.PRODUCT, RedOpType.MIN, RedOpType.MAX
    BAND, BOR, BXOR, PREMUL_SUM = RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR, RedOpType.PREMUL_SUM


class _reduce_op:
    """torch's deprecated `torch.distributed.reduce_op`: ReduceOp's members, each read warning as torch's."""

    def __init__(self):
        for k, v in ReduceOp.RedOpType.__members__.items():
            setattr(self, k, v)
        self.__members__ = ReduceOp.RedOpType.__members__

    def __getattribute__(self, key):
        warnings.warn("`torch.distributed.reduce_op` is deprecated, please use `torch.distributed.ReduceOp` "
                      "instead", FutureWarning, stacklevel=user_stacklevel())
        return object.__getattribute__(self, key)


reduce_op = _reduce_op()


class ProcessGroup:
    """A set of ranks with its own MPI communicator. rank()/size() are this process's rank in it and its size."""

    def __init__(self, comm, ranks, timeout, name):
        self.comm, self.ranks, self.timeout, self.group_name = comm, list(ranks), timeout, name
        self._index = {g: i for i, g in enumerate(self.ranks)}
        self._rank, self._size = comm.Get_rank(), comm.Get_size()

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def name(self):
        return "mpi"

    def __repr__(self):
        return f"<tapegrad.distributed.ProcessGroup {self.group_name!r} ranks={self.ranks}>"


class _NonGroupMember:
    def __repr__(self):
        return "-100"

    def __eq__(self, other):
        return other is self or other == -100

    __hash__ = object.__hash__


class _GroupNamespace:
    """torch's `group.WORLD` / `GroupMember.WORLD`: the default group (None before init_process_group)."""
    NON_GROUP_MEMBER = _NonGroupMember()

    @property
    def WORLD(self):
        return _state.world


group = GroupMember = _GroupNamespace()


class _State:
    def __init__(self):
        self.world = None      # the default ProcessGroup
        self.groups = []       # every ProcessGroup this process created (freed by destroy_process_group)
        self.watchdog = None
        self.excepthook = None
        self.seq = 0           # collectives run on the default group (named in timeout and mismatch errors)
        self.blas_limit = None  # threadpoolctl's limiter while ranks share this machine's cores (_share_cores)


_state = _State()


def _default():
    if _state.world is None:
        raise ValueError(NOT_INITIALIZED)
    return _state.world


def _group(group):
    """The ProcessGroup for a `group` argument, or None where this rank is not a member (torch warns, skips)."""
    pg = _default()
    if group is None or group is pg:
        return pg
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup returned by new_group, got {type(group).__name__}")
    if group.comm is None:
        raise ValueError("the process group has been destroyed")
    return group


def _not_in_group(name):
    warnings.warn(f"Running {name} on global rank {get_rank()} which does not belong to the given group.",
                  stacklevel=user_stacklevel())


def _root(pg, name, rank, group_rank):
    """The group rank of a src/dst given as a global rank (torch's src=) or a group rank (group_src=)."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"Can only specify one of the global rank and the group rank in {name}")
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
        return group_rank
    if rank is None:
        rank = 0
    r = pg._index.get(rank)
    if r is None:
        raise RuntimeError(f"ProcessGroupMPI::{name}: invalid root rank: {rank}")
    return r


# -- the watchdog: no blocking call outlives the timeout ---------------------------------------------------------
class _Watchdog(threading.Thread):
    """Aborts every rank (MPI_Abort) when a blocking call on this rank outlives its timeout: a rank blocked
    inside MPI cannot raise, and a peer that failed, exited or called another collective would block it forever.
    The main thread only sets `self.call` before and after a call (two attribute stores)."""

    def __init__(self, rank, interval):
        super().__init__(name="tapegrad.distributed watchdog", daemon=True)
        self.rank, self.interval = rank, interval
        self.call = None  # (what, started, timeout seconds, collective number or None)
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(self.interval):
            call = self.call
            if call is not None and time.monotonic() - call[1] > call[2]:
                what, _, timeout, seq = call
                if seq is not None:
                    what = f"{what} (collective #{seq})"
                sys.stderr.write(
                    f"[rank{self.rank}]: tapegrad.distributed: {what} did not complete within the process group's "
                    f"timeout ({datetime.timedelta(seconds=timeout)}): another rank failed, exited, or called a "
                    f"different collective. Aborting all ranks (MPI_Abort).\n")
                sys.stderr.flush()
                _mpi().COMM_WORLD.Abort(1)


def _blocking(pg, what, fn, *args, seq=None):
    """fn(*args) (a blocking MPI call) under the watchdog, with pg's timeout. `seq`, a collective's number, is
    added to `what` only if the call times out (no string is formatted per call)."""
    wd = _state.watchdog
    if wd is None:
        return fn(*args)
    wd.call = (what, time.monotonic(), pg.timeout, seq)
    try:
        return fn(*args)
    finally:
        wd.call = None


SPIN_SECONDS = 1e-3  # how long a wait spins before it sleeps between tests (_wait_all)


def _wait_all(requests, statuses=None):
    """MPI_Waitall, except that a wait longer than SPIN_SECONDS sleeps between tests instead of spinning. MPI spins
    while it waits, holding its core; where ranks share a machine's cores with other work, the rank waited for is
    often the one another process pushed off a core, and a waiter that sleeps gives that rank a core back. (DDP's
    step under a load average of 11-13: 246 steps/s against 159 with MPI's spin, interleaved, docs/distributed.md.) Within the spin nothing changes: a rank that arrives in time sees no sleep."""
    MPI = _mpi()
    test = MPI.Request.Testall
    if test(requests, statuses):
        return
    deadline = time.perf_counter() + SPIN_SECONDS
    while not test(requests, statuses):
        if time.perf_counter() > deadline:
            time.sleep(1e-5)  # (about 60 µs with Linux's default timer slack)


def _abort_on_uncaught(exc_type, exc, tb):
    """sys.excepthook while a process group exists: print as usual, then end every rank (the others would block
    in their next collective until the timeout)."""
    hook = _state.excepthook or sys.__excepthook__
    if _state.world is None or issubclass(exc_type, KeyboardInterrupt):
        return hook(exc_type, exc, tb)
    rank = _mpi().COMM_WORLD.Get_rank()
    notice = (f"[rank{rank}]: tapegrad.distributed: uncaught {exc_type.__name__} on rank {rank}; "
              f"aborting all ranks (MPI_Abort).\n")
    sys.stderr.flush()
    if hook is sys.__excepthook__:  # one write, so that the ranks' reports do not interleave on a shared stderr
        report = "".join(traceback.format_exception(exc_type, exc, tb)) + notice
        os.write(sys.stderr.fileno(), report.encode(errors="replace"))
    else:
        hook(exc_type, exc, tb)
        sys.stderr.write(notice)
        sys.stderr.flush()
    _mpi().COMM_WORLD.Abort(1)


# -- set-up and tear-down ---------------------------------------------------------------------------------
def _env_int(name):
    v = os.environ.get(name)
    return None if v in (None, "") else int(v)


def _refuse_spawned_group(world_size):
    """A process that torch.multiprocessing started (mp.spawn, the DDP tutorial's form) asking for a group of several:
    MPI cannot join processes started so (MPICH's singletons do not connect, and under mpiexec a child inherits its
    parent's MPI rank, which MPI then refuses with its own abort). Said before MPI starts, with what to run instead."""
    asked = world_size if world_size not in (None, -1) else _env_int("WORLD_SIZE")
    if asked in (None, -1) or asked <= 1 or multiprocessing.parent_process() is None:
        return
    raise ValueError(f"init_process_group: this process was started by torch.multiprocessing (mp.spawn) for a group of "
                     f"{asked}; tapegrad's processes and ranks come from MPI's launcher, which cannot join processes "
                     f"started so. Start the script without mp.spawn, each process calling init_process_group once: "
                     f"python -m tapegrad.distributed.run --nproc-per-node {asked} script.py (or mpiexec -n {asked} "
                     f"python -m tapegrad script.py)")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the default process group: every process mpiexec started (rank and size come from MPI). rank,
    world_size and the env:// variables (RANK, WORLD_SIZE, LOCAL_RANK) are accepted where they agree with MPI.
    A process started without mpiexec is a group of one."""
    if _state.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = "mpi" if backend is None else str(backend).lower()
    if "nccl" in name:
        raise RuntimeError("Distributed package doesn't have NCCL built in")
    if name not in ("mpi", "gloo", "cpu:gloo", "cpu:mpi", "undefined"):
        raise ValueError(f"Invalid backend: '{backend}'")
    if store is not None:
        raise NotImplementedError("tapegrad.distributed: a Store is not supported; MPI does the rendezvous")
    if init_method is not None and not str(init_method).startswith(("env://", "tcp://", "file://")):
        raise ValueError(f"Invalid init_method: '{init_method}'")
    if not is_available():
        raise RuntimeError(EXTRA_HINT)
    _refuse_spawned_group(world_size)
    MPI = _mpi()
    world = MPI.COMM_WORLD
    actual_rank, actual_size = world.Get_rank(), world.Get_size()
    launch = "(ranks come from the MPI launcher: mpiexec -n N python script.py, or python -m tapegrad.distributed.run)"
    for what, value in (("rank", rank), ("environment variable RANK", _env_int("RANK"))):
        if value not in (None, -1) and value != actual_rank:
            raise ValueError(f"init_process_group: {what} is {value}, but MPI started this process as rank "
                             f"{actual_rank} of {actual_size} {launch}")
    for what, value in (("world_size", world_size), ("environment variable WORLD_SIZE", _env_int("WORLD_SIZE"))):
        if value not in (None, -1) and value != actual_size:
            raise ValueError(f"init_process_group: {what} is {value}, but MPI started {actual_size} process"
                             f"{'es' if actual_size != 1 else ''} {launch}")
    if timeout is None:
        timeout = default_pg_timeout
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    if seconds <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    comm = world.Dup()  # a communicator of its own: the user's own mpi4py messages never meet ours
    pg = ProcessGroup(comm, range(actual_size), seconds, group_name or "default_pg")
    _state.world, _state.groups, _state.seq = pg, [pg], 0
    if actual_size > 1:
        _state.blas_limit = _share_cores(world)
        _state.watchdog = _Watchdog(actual_rank, min(1.0, max(0.02, seconds / 20)))
        _state.watchdog.start()
        _state.excepthook, sys.excepthook = sys.excepthook, _abort_on_uncaught


_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def _share_cores(world):
    """Ranks on one machine share its cores: each BLAS gets cores // ranks-here threads (at least 1), through
    threadpoolctl (the `distributed` extra installs it), unless the user chose a count (a thread variable, as
    torchrun's OMP_NUM_THREADS=1, or set_num_threads). Every rank's BLAS starting a thread per core oversubscribes
    the machine, and its spinning threads then stall the ranks' collectives: the W3 step on 2 ranks of a 2-core
    machine ran 100x slower with 2 BLAS threads each (docs/distributed.md). Returns the limiter, or None."""
    if _runtime._num_threads is not None or any(os.environ.get(v) for v in _THREAD_VARS):
        return None
    local = world.Split_type(_mpi().COMM_TYPE_SHARED)
    here = local.Get_size()
    local.Free()
    if here <= 1:
        return None
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        warnings.warn(f"tapegrad.distributed: {here} ranks share this machine's cores, but threadpoolctl is not "
                      f"installed to give each rank's BLAS its share (pip install \"tapegrad[distributed]\"); set "
                      f"OMP_NUM_THREADS={max(1, _runtime._cpu_count() // here)} to avoid oversubscribing the cores",
                      stacklevel=user_stacklevel())
        return None
    return threadpool_limits(limits=max(1, _runtime._cpu_count() // here), user_api="blas")


def is_initialized():
    return _state.world is not None


def destroy_process_group(group=None):
    """Free the group's communicator (all of them for None). MPI itself stays up, so the process can keep
    working and call init_process_group again."""
    if _state.world is None and group is None:
        raise AssertionError("Process group cannot be None")
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group is None or group is _state.world:
        for pg in _state.groups:
            if pg.comm is not None:
                pg.comm.Free()
                pg.comm = None
        if _state.watchdog is not None:
            _state.watchdog.stopped.set()
            _state.watchdog.join()
        if sys.excepthook is _abort_on_uncaught:
            sys.excepthook = _state.excepthook or sys.__excepthook__
        if _state.blas_limit is not None:
            _state.blas_limit.restore_original_limits()
        _state.__init__()
        return
    if group.comm is not None:
        group.comm.Free()
        group.comm = None
    if group in _state.groups:
        _state.groups.remove(group)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None, sort_ranks=True):
    """A group of some ranks (every rank of the default group must call it, as in torch). Returns the group on
    its members and GroupMember.NON_GROUP_MEMBER on the others."""
    world = _default()
    size = world.size()
    ranks = list(range(size)) if ranks is None else [int(r) for r in ranks]
    if sort_ranks:
        ranks = sorted(ranks)
    for r in ranks:
        if not 0 <= r < size:
            raise ValueError(f"Invalid rank {r}, world size is {size}")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks must be distinct, got {ranks}")
    base = world.comm.Get_group()
    sub = base.Incl(ranks)
    comm = _blocking(world, "new_group", world.comm.Create, sub)
    sub.Free()
    base.Free()
    if comm == _mpi().COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    seconds = world.timeout if timeout is None else (
        timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout))
    pg = ProcessGroup(comm, ranks, seconds, group_desc or f"group{len(_state.groups)}")
    _state.groups.append(pg)
    return pg


def get_rank(group=None):
    pg = _group(group)
    if pg is None:
        return -1
    return pg.ranks[pg.rank()]


def get_world_size(group=None):
    pg = _group(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None):
    _group(group)
    return Backend("mpi")


def get_process_group_ranks(group):
    pg = _group(group)
    return list(pg.ranks)


def get_global_rank(group, group_rank):
    pg = _group(group)
    return pg.ranks[group_rank]


def get_group_rank(group, global_rank):
    pg = _group(group)
    if global_rank not in pg._index:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return pg._index[global_rank]


# -- buffers -------------------------------------------------------------------------------------------------
_DTYPE_CODES = {np.dtype(d): i for i, d in enumerate(
    ("float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool", "complex64",
     "complex128"))}
_MPI_TYPES = {"float32": "FLOAT", "float64": "DOUBLE", "int64": "INT64_T", "int32": "INT32_T",
              "int16": "INT16_T", "int8": "INT8_T", "uint8": "UINT8_T", "bool": "C_BOOL",
              "complex64": "C_FLOAT_COMPLEX", "complex128": "C_DOUBLE_COMPLEX"}
_MPI_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
            ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}


def _array(t, name):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument 'tensor' must be Tensor, not {type(t).__name__}")
    return t._data


def _contiguous(a):
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


_mpi_types = {}  # numpy dtype -> its MPI datatype (None: moved as bytes); filled as dtypes are met


def _buffer(a):
    """mpi4py's buffer spec for a C-contiguous array: its own MPI type, or bytes for types MPI lacks."""
    try:
        mtype = _mpi_types[a.dtype]
    except KeyError:
        name = _MPI_TYPES.get(a.dtype.name)
        mtype = _mpi_types[a.dtype] = None if name is None else getattr(_mpi(), name)
    if mtype is None:
        return [a, a.nbytes, _mpi().BYTE]
    return [a, mtype]


def _reduce_dtype(a):
    """float16 (which MPI cannot add) is reduced in float32."""
    return np.float32 if a.dtype == np.float16 else None


_mpi_ops = {}  # ReduceOp (or its int) -> the MPI op, once met


def _mpi_op(op, name):
    try:
        return _mpi_ops[op]
    except (KeyError, TypeError):
        pass
    mop = _mpi_op_slow(op, name)
    _mpi_ops[op] = mop
    return mop


def _mpi_op_slow(op, name):
    if isinstance(op, int) and not isinstance(op, ReduceOp.RedOpType) and 0 <= op <= 8:
        op = ReduceOp.RedOpType(op)
    if op == ReduceOp.PREMUL_SUM:
        raise NotImplementedError("tapegrad.distributed: ReduceOp.PREMUL_SUM is not supported")
    if op not in _MPI_OPS:
        raise ValueError(f"{name}: invalid reduce op {op!r}")
    return getattr(_mpi(), _MPI_OPS[op])


def _written(t, a, result):
    """t now holds result (the array MPI wrote): copy back where a contiguous stand-in was used; bump t's
    version as any in-place write does."""
    if result is not a:
        a[...] = result
    t._bump_version()


def _average(a, n):
    if a.dtype.kind in "fc":
        a /= n
    else:
        np.floor_divide(a, n, out=a)


# -- the fingerprint check --------------------------------------------------------------------------------
_OPS = ("broadcast", "all_reduce", "reduce", "all_gather", "all_gather_into_tensor", "gather", "scatter",
        "reduce_scatter_tensor", "all_to_all_single", "barrier", "DistributedDataParallel", "send")
_FP_DIMS = 6


def _fingerprint(op, a=None, root=-1, redop=-1):
    f = np.full(4 + _FP_DIMS, -1, np.int64)
    f[0], f[2], f[3] = _OPS.index(op), root, int(redop)
    if a is not None:
        f[1] = _DTYPE_CODES.get(a.dtype, 99)
        f[4] = a.ndim
        shape = a.shape[:_FP_DIMS - 1] + ((int(np.prod(a.shape[_FP_DIMS - 1:])),) if a.ndim >= _FP_DIMS else ())
        f[5:5 + len(shape)] = shape
    return f


def _describe(f):
    dtypes = list(_DTYPE_CODES) + [None]
    shape = f[5:5 + min(int(f[4]), _FP_DIMS)].tolist() if f[4] >= 0 else None
    dtype = dtypes[min(int(f[1]), len(dtypes) - 1)] if f[1] >= 0 else None
    out = f"OpType={_OPS[int(f[0])].upper()}"
    if shape is not None:
        out += f", TensorShape={shape}, TensorDtype={dtype}"
    if f[2] >= 0:
        out += f", Root={int(f[2])}"
    if f[3] >= 0:
        out += f", ReduceOp={ReduceOp.RedOpType(int(f[3])).name}"
    return out


# (op, dtype, shape, root, reduce op) -> (f, the bytes of [f, -f]): a training loop repeats a few calls, and
# building the fingerprint was most of the check's CPU (11 µs a call before, 3 now: docs/distributed.md)
_fingerprints = {}


def _check(pg, op, a=None, root=-1, redop=-1):
    """Every rank of pg must be calling the same collective on tensors of one dtype and shape: compare
    fingerprints in one Allreduce (max of f and of -f: equal everywhere iff min == max, that is iff the result is
    [f, -f] itself), and on a mismatch gather them all to name each rank's call. Every rank sees the same result,
    so all raise together."""
    key = (op, root, redop) if a is None else (op, root, redop, a.dtype, a.shape)
    known = _fingerprints.get(key)
    if known is None:
        if len(_fingerprints) >= 4096:
            _fingerprints.clear()
        f = _fingerprint(op, a, root, redop)
        both = np.concatenate([f, -f])
        known = _fingerprints[key] = (f, both, both.tobytes())
    f, both, expected = known
    both = both.copy()
    MPI = _mpi()
    _state.seq += 1
    _blocking(pg, op, pg.comm.Allreduce, MPI.IN_PLACE, [both, MPI.INT64_T], MPI.MAX, seq=_state.seq)
    if both.tobytes() == expected:
        return
    n = len(f)
    every = np.empty((pg.size(), n), np.int64)
    _blocking(pg, "the mismatch report", pg.comm.Allgather, [f, MPI.INT64_T], [every, MPI.INT64_T])
    lines = [f"rank {pg.ranks[r]} is running {_describe(every[r])}" for r in range(pg.size())]
    raise RuntimeError(f"Detected mismatch between collectives on ranks (collective #{_state.seq}): "
                       + "; ".join(lines))


# -- the work handle ------------------------------------------------------------------------------------------
class Work:
    """An operation started with async_op=True (or isend/irecv): wait() blocks until it is done (under the
    group's timeout), is_completed() tests without blocking."""

    def __init__(self, pg, what, requests, finish=None, statuses=None):
        self._pg, self._what, self._requests, self._finish = pg, what, requests, finish
        self._statuses = statuses  # (MPI.Status per request, where finish needs the sender)
        self._done, self._buffer = False, None

    def _complete(self):
        self._done = True
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def wait(self, timeout=None):
        """Block until done (under the group's timeout). With `timeout` (a timedelta or seconds), raise
        RuntimeError if it is not done by then; the operation stays pending and may be waited for again."""
        if not self._done:
            MPI = _mpi()
            if timeout is None:
                _blocking(self._pg, self._what, _wait_all, self._requests, self._statuses)
            else:
                seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
                deadline = time.monotonic() + seconds
                while not MPI.Request.Testall(self._requests, self._statuses):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"Work.wait: {self._what} did not complete within {timeout}")
                    time.sleep(0)
            self._complete()
        return True

    def is_completed(self):
        if not self._done and _mpi().Request.Testall(self._requests, self._statuses):
            self._complete()
        return self._done

    def is_success(self):
        return self.is_completed()

    def exception(self):
        return None

    def __repr__(self):
        return f"<tapegrad.distributed.Work {self._what} {'completed' if self._done else 'pending'}>"


def _run(pg, what, blocking, start, finish, async_op):
    """Run one MPI operation: blocking(), or with async_op the nonblocking start() (a Request) and a Work."""
    if async_op:
        return Work(pg, what, [start()], finish)
    _blocking(pg, what, blocking)
    if finish is not None:
        finish()
    return None


# -- collectives ---------------------------------------------------------------------------------------------
def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    pg = _group(group)
    if pg is None:
        return _not_in_group("barrier")
    _check(pg, "barrier")
    return _run(pg, "barrier", pg.comm.Barrier, pg.comm.Ibarrier, None, async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    a = _array(tensor, "broadcast")
    pg = _group(group)
    if pg is None:
        return _not_in_group("broadcast")
    root = _root(pg, "broadcast", src, group_src)
    _check(pg, "broadcast", a, root)
    buf = _contiguous(a)
    spec = _buffer(buf)
    return _run(pg, "broadcast", lambda: pg.comm.Bcast(spec, root), lambda: pg.comm.Ibcast(spec, root),
                lambda: _written(tensor, a, buf), async_op)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    a = _array(tensor, "all_reduce")
    pg = _group(group)
    if pg is None:
        return _not_in_group("all_reduce")
    mop = _mpi_op(op, "all_reduce")
    _check(pg, "all_reduce", a, -1, op)
    up = _reduce_dtype(a)
    if not async_op and up is None and a.flags.c_contiguous:  # the common call, without closures (a few µs)
        _blocking(pg, "all_reduce", pg.comm.Allreduce, _mpi().IN_PLACE, _buffer(a), mop)
        if op == ReduceOp.AVG:
            _average(a, pg.size())
        _written(tensor, a, a)
        return None
    buf = a.astype(up) if up is not None else _contiguous(a)
    spec, n = _buffer(buf), pg.size()
    IN_PLACE = _mpi().IN_PLACE

    def finish():
        if op == ReduceOp.AVG:
            _average(buf, n)
        _written(tensor, a, buf)
    return _run(pg, "all_reduce", lambda: pg.comm.Allreduce(IN_PLACE, spec, mop),
                lambda: pg.comm.Iallreduce(IN_PLACE, spec, mop), finish, async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    a = _array(tensor, "reduce")
    pg = _group(group)
    if pg is None:
        return _not_in_group("reduce")
    root = _root(pg, "reduce", dst, group_dst)
    mop = _mpi_op(op, "reduce")
    _check(pg, "reduce", a, root, op)
    up = _reduce_dtype(a)
    buf = a.astype(up) if up is not None else _contiguous(a)
    spec, n, mine = _buffer(buf), pg.size(), pg.rank() == root
    send, recv = (_mpi().IN_PLACE, spec) if mine else (spec, None)

    def finish():
        if mine:
            if op == ReduceOp.AVG:
                _average(buf, n)
            _written(tensor, a, buf)
    return _run(pg, "reduce", lambda: pg.comm.Reduce(send, recv, mop, root),
                lambda: pg.comm.Ireduce(send, recv, mop, root), finish, async_op)


def _check_list(name, tensors, a, n, what="output tensor list"):
    if len(tensors) != n:
        raise RuntimeError(f"ProcessGroupMPI::{name}: invalid {what} (expected length {n}, got {len(tensors)})")
    for i, t in enumerate(tensors):
        b = _array(t, name)
        if b.shape != a.shape:
            raise RuntimeError(f"ProcessGroupMPI::{name}: invalid tensor size at index {i} (expected "
                               f"({', '.join(map(str, a.shape))}), got ({', '.join(map(str, b.shape))}))")
        if b.dtype != a.dtype:
            raise RuntimeError(f"ProcessGroupMPI::{name}: invalid tensor type at index {i} (expected {a.dtype}, "
                               f"got {b.dtype})")


def _scatter_out(tensors, stacked):
    for t, part in zip(tensors, stacked):
        _written(t, t._data, part)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    a = _array(tensor, "all_gather")
    pg = _group(group)
    if pg is None:
        return _not_in_group("all_gather")
    _check_list("allgather", tensor_list, a, pg.size())
    _check(pg, "all_gather", a)
    send = _contiguous(a)
    out = np.empty((pg.size(),) + a.shape, a.dtype)
    s, r = _buffer(send), _buffer(out)
    return _run(pg, "all_gather", lambda: pg.comm.Allgather(s, r), lambda: pg.comm.Iallgather(s, r),
                lambda: _scatter_out(tensor_list, out), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    a, o = _array(input_tensor, "all_gather_into_tensor"), _array(output_tensor, "all_gather_into_tensor")
    pg = _group(group)
    if pg is None:
        return _not_in_group("all_gather_into_tensor")
    n = pg.size()
    if o.size != n * a.size or o.dtype != a.dtype:
        raise ValueError(f"output tensor must have {n} times the elements of the input tensor and its dtype: "
                         f"got output {list(o.shape)} {o.dtype}, input {list(a.shape)} {a.dtype}")
    _check(pg, "all_gather_into_tensor", a)
    send, out = _contiguous(a), _contiguous(o)
    s, r = _buffer(send), _buffer(out)
    return _run(pg, "all_gather_into_tensor", lambda: pg.comm.Allgather(s, r), lambda: pg.comm.Iallgather(s, r),
                lambda: _written(output_tensor, o, out), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    a = _array(tensor, "gather")
    pg = _group(group)
    if pg is None:
        return _not_in_group("gather")
    root = _root(pg, "gather", dst, group_dst)
    mine = pg.rank() == root
    if mine:
        if gather_list is None:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        if len(gather_list) != pg.size():
            raise RuntimeError(f"ProcessGroupMPI::gather: Incorrect output list size {len(gather_list)}. Output "
                               f"list size should be {pg.size()}, same as size of the process group.")
        _check_list("gather", gather_list, a, pg.size())
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    _check(pg, "gather", a, root)
    send = _contiguous(a)
    out = np.empty((pg.size(),) + a.shape, a.dtype) if mine else None
    s, r = _buffer(send), (_buffer(out) if mine else None)
    return _run(pg, "gather", lambda: pg.comm.Gather(s, r, root), lambda: pg.comm.Igather(s, r, root),
                (lambda: _scatter_out(gather_list, out)) if mine else None, async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    a = _array(tensor, "scatter")
    pg = _group(group)
    if pg is None:
        return _not_in_group("scatter")
    root = _root(pg, "scatter", src, group_src)
    mine = pg.rank() == root
    if mine:
        if scatter_list is None:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        if len(scatter_list) != pg.size():
            raise RuntimeError(f"ProcessGroupMPI::scatter: Incorrect input list size {len(scatter_list)}. Input "
                               f"list size should be {pg.size()}, same as size of the process group.")
        _check_list("scatter", scatter_list, a, pg.size(), "input tensor list")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    _check(pg, "scatter", a, root)
    send = np.stack([t._data for t in scatter_list]) if mine else None
    out = _contiguous(a)
    s, r = (_buffer(send) if mine else None), _buffer(out)
    return _run(pg, "scatter", lambda: pg.comm.Scatter(s, r, root), lambda: pg.comm.Iscatter(s, r, root),
                lambda: _written(tensor, a, out), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    o, a = _array(output, "reduce_scatter_tensor"), _array(input, "reduce_scatter_tensor")
    pg = _group(group)
    if pg is None:
        return _not_in_group("reduce_scatter_tensor")
    n = pg.size()
    mop = _mpi_op(op, "reduce_scatter_tensor")
    if a.size != n * o.size or o.dtype != a.dtype:
        raise ValueError(f"input tensor must have {n} times the elements of the output tensor and its dtype: "
                         f"got input {list(a.shape)} {a.dtype}, output {list(o.shape)} {o.dtype}")
    _check(pg, "reduce_scatter_tensor", o, -1, op)
    up = _reduce_dtype(a)
    send = a.astype(up) if up is not None else _contiguous(a)
    out = o.astype(up) if up is not None else _contiguous(o)
    s, r = _buffer(send), _buffer(out)

    def finish():
        if op == ReduceOp.AVG:
            _average(out, n)
        _written(output, o, out)
    return _run(pg, "reduce_scatter_tensor", lambda: pg.comm.Reduce_scatter_block(s, r, mop),
                lambda: pg.comm.Ireduce_scatter_block(s, r, mop), finish, async_op)


def _splits(name, what, sizes, rows, n):
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise ValueError(f"{name}: the {what} tensor's first dimension ({rows}) must divide by the group size "
                             f"({n}) when no split sizes are given")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != rows or min(sizes) < 0:
        raise ValueError(f"{name}: {what}_split_sizes {sizes} must have {n} non-negative entries summing to the "
                         f"{what} tensor's first dimension ({rows})")
    return sizes


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    o, a = _array(output, "all_to_all_single"), _array(input, "all_to_all_single")
    pg = _group(group)
    if pg is None:
        return _not_in_group("all_to_all_single")
    n = pg.size()
    if o.dtype != a.dtype or o.shape[1:] != a.shape[1:]:
        raise ValueError(f"all_to_all_single: input {list(a.shape)} {a.dtype} and output {list(o.shape)} {o.dtype} "
                         f"must agree in dtype and in every dimension but the first")
    row = int(np.prod(a.shape[1:], dtype=np.int64))
    send_counts = np.array(_splits("all_to_all_single", "input", input_split_sizes, a.shape[0], n), np.int64) * row
    recv_counts = np.array(_splits("all_to_all_single", "output", output_split_sizes, o.shape[0], n), np.int64) * row
    _check(pg, "all_to_all_single", a[:0].reshape(-1))  # dtype only: the split sizes may differ per rank
    MPI = _mpi()
    # each rank's output split must equal what the peer sends it: exchange the counts, agree on the verdict
    told = np.empty(n, np.int64)
    _blocking(pg, "all_to_all_single", pg.comm.Alltoall, [send_counts, MPI.INT64_T], [told, MPI.INT64_T])
    bad = np.array([int(not np.array_equal(told, recv_counts))], np.int64)
    _blocking(pg, "all_to_all_single", pg.comm.Allreduce, MPI.IN_PLACE, [bad, MPI.INT64_T], MPI.MAX)
    if bad[0]:
        raise RuntimeError(f"all_to_all_single: split sizes disagree across ranks: rank {get_rank()} expects "
                           f"{(recv_counts // max(row, 1)).tolist()} rows from the ranks, which send it "
                           f"{(told // max(row, 1)).tolist()}")
    send, out = _contiguous(a), _contiguous(o)
    t = _buffer(send)[-1]
    if t is MPI.BYTE:
        send_counts, recv_counts = send_counts * a.itemsize, recv_counts * a.itemsize
    sd = np.concatenate([[0], np.cumsum(send_counts)[:-1]])
    rd = np.concatenate([[0], np.cumsum(recv_counts)[:-1]])
    s, r = [send, (send_counts, sd), t], [out, (recv_counts, rd), t]
    return _run(pg, "all_to_all_single", lambda: pg.comm.Alltoallv(s, r), lambda: pg.comm.Ialltoallv(s, r),
                lambda: _written(output, o, out), async_op)


# -- point to point ------------------------------------------------------------------------------------------
def _peer(pg, name, rank, group_rank):
    if group_rank is not None:
        return group_rank
    if rank is None:
        raise ValueError(f"{name}: a peer rank must be given")
    r = pg._index.get(rank)
    if r is None:
        raise ValueError(f"Global rank {rank} is not part of group {pg}")
    if r == pg.rank():
        raise ValueError("Invalid destination rank: should not be the same as rank of the current process.")
    return r


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def _message(header, buf):
    """One point-to-point message: a header (the sender's dtype and shape: a fingerprint) and the tensor's bytes,
    sent from or received into both arrays where they are (an MPI struct type at their addresses: no copy). The
    header lets the receiver check the dtype, which MPI itself never compares."""
    MPI = _mpi()
    t = MPI.Datatype.Create_struct([header.size, buf.nbytes], [MPI.Get_address(header), MPI.Get_address(buf)],
                                   [MPI.INT64_T, MPI.BYTE]).Commit()
    return [MPI.BOTTOM, 1, t], t


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    a = _array(tensor, "send")
    pg = _group(group)
    if pg is None:
        return _not_in_group("send")
    peer = _peer(pg, "send", dst, group_dst)
    buf, header = _contiguous(a), _fingerprint("send", a)
    spec, datatype = _message(header, buf)
    work = Work(pg, f"send to rank {pg.ranks[peer]}", [pg.comm.Isend(spec, peer, tag)])
    datatype.Free()  # (MPI keeps it for the pending send)
    work._buffer = (buf, header)  # (they must outlive the send)
    return work


def _check_received(pg, a, header, source, what):
    """The sender's header against the receiving tensor: a different dtype raises, naming both (MPI moves the bytes
    whatever they mean)."""
    if header[1] != _DTYPE_CODES.get(a.dtype, 99):
        raise RuntimeError(f"{what}: rank {pg.ranks[source]} sent a tensor of another dtype: it sent "
                           f"{_describe(header).split(', ', 1)[1]}; this rank received into TensorShape="
                           f"{list(a.shape)}, TensorDtype={a.dtype}")


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into tensor (from any rank where src is None); returns the sender's rank. A message of another size
    than the tensor's raises, naming both, before anything is written; one of another dtype raises once received
    (the tensor then holds the sender's bytes: the message goes straight into it)."""
    a = _array(tensor, "recv")
    pg = _group(group)
    if pg is None:
        _not_in_group("recv")
        return -1
    MPI = _mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, "recv", src, group_src)
    status = MPI.Status()
    msg = _blocking(pg, "recv", pg.comm.Mprobe, peer, tag, status)
    source, header = status.Get_source(), np.empty(4 + _FP_DIMS, np.int64)
    got = status.Get_count(MPI.BYTE) - header.nbytes
    if got != a.nbytes:
        msg.Recv([header, MPI.INT64_T] if got < 0 else [np.empty(got + header.nbytes, np.uint8), MPI.BYTE])
        raise RuntimeError(f"recv: rank {pg.ranks[source]} sent {got} bytes, but the receiving tensor "
                           f"({list(a.shape)}, {a.dtype}) holds {a.nbytes}")
    buf = _contiguous(a)
    spec, datatype = _message(header, buf)
    try:
        _blocking(pg, "recv", msg.Recv, spec)
    finally:
        datatype.Free()
    _written(tensor, a, buf)
    _check_received(pg, a, header, source, "recv")
    return pg.ranks[source]


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """A nonblocking recv: wait() raises as recv does for a message of another dtype."""
    a = _array(tensor, "irecv")
    pg = _group(group)
    if pg is None:
        return _not_in_group("irecv")
    MPI = _mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, "irecv", src, group_src)
    buf, header, status = _contiguous(a), np.empty(4 + _FP_DIMS, np.int64), MPI.Status()
    spec, datatype = _message(header, buf)
    request = pg.comm.Irecv(spec, peer, tag)
    datatype.Free()

    def finish():
        _check_received(pg, a, header, status.Get_source(), "irecv")
        _written(tensor, a, buf)
    work = Work(pg, "irecv", [request], finish, [status])
    work._buffer = (buf, header)
    return work


# -- Python objects (pickled, as torch does) -------------------------------------------------------------------
def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    pg = _group(group)
    if pg is None:
        return _not_in_group("broadcast_object_list")
    root = _root(pg, "broadcast_object_list", src, group_src)
    MPI = _mpi()
    data = pickle.dumps(list(object_list)) if pg.rank() == root else b""
    size = np.array([len(data)], np.int64)
    _blocking(pg, "broadcast_object_list", pg.comm.Bcast, [size, MPI.INT64_T], root)
    buf = np.frombuffer(data, np.uint8).copy() if pg.rank() == root else np.empty(int(size[0]), np.uint8)
    _blocking(pg, "broadcast_object_list", pg.comm.Bcast, [buf, MPI.BYTE], root)
    if pg.rank() != root:
        objs = pickle.loads(buf.tobytes())
        if len(objs) != len(object_list):
            raise RuntimeError(f"broadcast_object_list: rank {pg.ranks[root]} sent {len(objs)} objects, this rank's "
                               f"list holds {len(object_list)}")
        object_list[:] = objs


def _gather_bytes(pg, what, data):
    MPI = _mpi()
    sizes = np.empty(pg.size(), np.int64)
    _blocking(pg, what, pg.comm.Allgather, [np.array([len(data)], np.int64), MPI.INT64_T], [sizes, MPI.INT64_T])
    out = np.empty(int(sizes.sum()), np.uint8)
    displs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    _blocking(pg, what, pg.comm.Allgatherv, [np.frombuffer(data, np.uint8), MPI.BYTE],
              [out, (sizes, displs), MPI.BYTE])
    return [out[d: d + s].tobytes() for d, s in zip(displs, sizes)]


def all_gather_object(object_list, obj, group=None):
    pg = _group(group)
    if pg is None:
        return _not_in_group("all_gather_object")
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have the group's size ({pg.size()}) entries, "
                         f"got {len(object_list)}")
    parts = _gather_bytes(pg, "all_gather_object", pickle.dumps(obj))
    object_list[:] = [pickle.loads(p) for p in parts]


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    pg = _group(group)
    if pg is None:
        return _not_in_group("gather_object")
    root = _root(pg, "gather_object", dst, group_dst)
    parts = _gather_bytes(pg, "gather_object", pickle.dumps(obj))
    if pg.rank() == root:
        object_gather_list[:] = [pickle.loads(p) for p in parts]
