"""tapegrad.distributed and nn.parallel in one process, against torch 2.13: names, errors before
init_process_group, DataParallel, the launcher, and MPI never imported by `import tapegrad`. Runs that start MPI
go to subprocesses (MPI starts once per process)."""
import os
import sys

import pytest
import torch as real_torch

import tapegrad as torch
import tapegrad.distributed as dist
from mpi_helpers import HERE, ROOT, run, run_python


def message(f):
    with pytest.raises(Exception) as info:
        f()
    return type(info.value), str(info.value)


def test_mpi4py_is_installed_and_found():
    assert dist.is_available()  # the test extra installs mpi4py and mpich: never skipped
    import mpi4py  # noqa: F401


def test_import_tapegrad_does_not_start_mpi():
    rc, out, _ = run_python("import sys, tapegrad, tapegrad.distributed, tapegrad.nn.parallel; "
                            "print(sorted(m for m in sys.modules if m.startswith('mpi4py')))")
    assert rc == 0 and out.strip() == "[]", out


@pytest.mark.parametrize("call", [lambda d: d.get_rank(), lambda d: d.get_world_size(),
                                  lambda d: d.all_reduce(d_tensor(d)), lambda d: d.barrier(),
                                  lambda d: d.get_backend(), lambda d: d.broadcast(d_tensor(d), 0),
                                  lambda d: d.new_group([0])])
def test_errors_before_init_match_torch(call):
    assert not dist.is_initialized() and not real_torch.distributed.is_initialized()
    assert message(lambda: call(dist)) == message(lambda: call(real_torch.distributed))


def d_tensor(d):
    return (real_torch if d is real_torch.distributed else torch).ones(2)


def test_destroy_before_init_matches_torch():
    assert message(dist.destroy_process_group) == message(real_torch.distributed.destroy_process_group)


def test_ddp_needs_a_process_group_as_torch():
    assert message(lambda: torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))) == \
        message(lambda: real_torch.nn.parallel.DistributedDataParallel(real_torch.nn.Linear(2, 2)))


def test_reduce_op_names_match_torch():
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        ours, theirs = getattr(dist.ReduceOp, name), getattr(real_torch.distributed.ReduceOp, name)
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs) and int(ours) == int(theirs)
    assert dist.group.WORLD is None and dist.GroupMember.NON_GROUP_MEMBER == -100


def test_deprecated_reduce_op_warns_and_names_reduce_ops_as_torch():
    import warnings
    seen = []
    for d in (dist, real_torch.distributed):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            names = [str(getattr(d.reduce_op, n)) for n in ("SUM", "PRODUCT", "MIN", "MAX", "BAND")]
        seen.append((names, sorted({(m.category.__name__, str(m.message)) for m in w})))
    assert seen[0] == seen[1]


def test_data_parallel_is_torch_cpu_behaviour():
    real_torch.manual_seed(0)
    theirs = real_torch.nn.parallel.DataParallel(real_torch.nn.Linear(3, 2))
    ours = torch.nn.parallel.DataParallel(torch.nn.Linear(3, 2))
    ours.load_state_dict({k: torch.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["module.weight", "module.bias"]
    assert ours.device_ids == theirs.device_ids == []
    assert repr(ours) == repr(theirs)
    x = [[1.0, 2.0, 3.0]]
    assert torch.allclose(ours(torch.tensor(x)), torch.tensor(theirs(real_torch.tensor(x)).detach().numpy()))


def test_one_process_without_mpiexec():
    code = ("import tapegrad as torch, tapegrad.distributed as dist\n"
            "dist.init_process_group('gloo')\n"
            "ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))\n"
            "x = torch.ones(2); dist.all_reduce(x)\n"
            "ddp(torch.ones(3, 2)).sum().backward()\n"
            "print(dist.get_rank(), dist.get_world_size(), dist.get_backend(), x.tolist(),\n"
            "      ddp.module.weight.grad.tolist(), list(ddp.state_dict()))\n"
            "dist.destroy_process_group(); print(dist.is_initialized())\n")
    rc, out, _ = run_python(code)
    assert rc == 0, out
    assert out.split("\n")[:2] == ["0 1 mpi [1.0, 1.0] [[3.0, 3.0]] ['module.weight', 'module.bias']", "False"]


def test_ddp_refuses_gradients_mpi_cannot_average():
    code = ("import tapegrad as torch, tapegrad.distributed as dist\n"
            "dist.init_process_group('gloo')\n"
            "m = torch.nn.Linear(2, 1)\n"
            "m.extra = torch.nn.Parameter(torch.ones(2, dtype=torch.float16))\n"
            "torch.nn.parallel.DistributedDataParallel(m)\n")
    rc, out, _ = run_python(code)
    assert rc != 0
    assert "NotImplementedError: tapegrad's DistributedDataParallel averages float32 and float64 gradients only; " \
           "the module has a float16 parameter" in out, out


def test_environment_that_disagrees_with_mpi_is_refused():
    code = "import tapegrad.distributed as dist; dist.init_process_group(init_method='env://')"
    rc, out, _ = run_python(code, extra_env={"RANK": "1", "WORLD_SIZE": "2"})
    assert rc != 0
    assert "ValueError: init_process_group: environment variable RANK is 1, but MPI started this process as " \
           "rank 0 of 1" in out, out
    rc, out, _ = run_python("import tapegrad.distributed as dist; dist.init_process_group(world_size=4)")
    assert "world_size is 4, but MPI started 1 process" in out, out
    rc, out, _ = run_python("import tapegrad.distributed as dist; dist.init_process_group('nccl')")
    assert "RuntimeError: Distributed package doesn't have NCCL built in" in out, out


def test_without_mpi4py_the_error_names_the_extra():
    code = ("import sys; sys.modules['mpi4py'] = None\n"
            "import tapegrad.distributed as dist\n"
            "print(dist.is_available())\n"
            "dist.init_process_group()\n")
    rc, out, _ = run_python(code)
    assert rc != 0 and out.startswith("False"), out
    assert 'RuntimeError: tapegrad.distributed needs mpi4py and an MPI library: pip install ' \
           '"tapegrad[distributed]"' in out, out


@pytest.mark.parametrize("omp", [None, "2"])
def test_launcher_sets_torchrun_variables(omp):
    """As torchrun: OMP_NUM_THREADS=1 for each process (with torchrun's warning) unless the user set it."""
    script = f"{HERE}/worker_launch.py"
    rc, out, _ = run([sys.executable, "-m", "tapegrad.distributed.run", "--nproc-per-node", "2", script, "--flag",
                      "x"], timeout=60, extra_env={"OMP_NUM_THREADS": omp})
    assert rc == 0, out
    for r in range(2):  # (mpiexec interleaves the ranks' lines: look for each, not for whole lines)
        assert f"rank {r} of 2: RANK={r} LOCAL_RANK={r} WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 " \
               f"MASTER_PORT=29500 OMP_NUM_THREADS={omp or 1} argv=['--flag', 'x'] sum=3.0" in out, out
    warning = "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default"
    assert (warning in out) == (omp is None), out


def test_launcher_refuses_several_nodes():
    rc, out, _ = run([sys.executable, "-m", "tapegrad.distributed.run", "--nnodes", "2", "x.py"], timeout=30)
    assert rc != 0 and "this machine only (--nnodes 1)" in out, out


def test_a_script_without_init_runs_as_one_process():
    code = ("import tapegrad as torch, tapegrad.distributed as dist\n"
            "from tapegrad.nn.parallel import DistributedDataParallel as DDP\n"
            "print(dist.is_available(), dist.is_initialized(), torch.ones(2).sum().item())\n")
    rc, out, _ = run_python(code)
    assert rc == 0 and out.strip() == "True False 2.0", out


def test_readme_example_on_two_processes(tmp_path):
    import re
    readme = open(f"{HERE}/../../README.md").read()
    code = re.search(r"<!-- distributed-example -->\n```py\n(.*?)```\n<!-- /distributed-example -->", readme, re.S)
    script = tmp_path / "train.py"
    script.write_text(code.group(1))
    rc, out, _ = run([sys.executable, "-m", "tapegrad.distributed.run", "--nproc-per-node", "2", str(script)],
                     timeout=90)
    assert rc == 0, out
    sums = dict(re.findall(r"rank (\d) of 2: weight sum (-?\d+\.\d+)", out))
    assert sorted(sums) == ["0", "1"] and sums["0"] == sums["1"], out  # the replicas stayed equal


@pytest.mark.parametrize("as_module", [False, True])
def test_launcher_runs_a_torch_script_on_tapegrad(tmp_path, as_module):
    """A script that imports torch, started by the launcher (as a file or with -m), gets tapegrad, as under
    `python -m tapegrad`: never the real torch installed beside it. torch's backend queries for a CPU script."""
    script = tmp_path / "torch_script.py"
    script.write_text("import torch, torch.distributed as dist\n"
                      "dist.init_process_group(dist.get_default_backend_for_device(torch.device('cpu')))\n"
                      "x = torch.ones(1) * (dist.get_rank() + 1)\n"
                      "dist.all_reduce(x)\n"
                      "print(f'rank {dist.get_rank()}: {torch.__name__} gloo={dist.is_gloo_available()} sum={x.item()}',"
                      " flush=True)\n"
                      "dist.destroy_process_group()\n")
    target = ["-m", "torch_script"] if as_module else [str(script)]
    rc, out, _ = run([sys.executable, "-m", "tapegrad.distributed.run", "--nproc-per-node", "2", *target],
                     timeout=90, extra_env={"PYTHONPATH": os.pathsep.join([str(tmp_path), ROOT])})
    assert rc == 0, out
    for r in range(2):
        assert f"rank {r}: tapegrad gloo=True sum=3.0" in out, out


def test_elastic_record_decorator_as_torchs():
    """torchrun scripts' @record: returns the function's result, re-raises its error, a zero SystemExit returns
    None."""
    results = []
    for lib in ("torch", "tapegrad"):
        errors = __import__("importlib").import_module(lib + ".distributed.elastic.multiprocessing.errors")

        @errors.record
        def twice(x):
            return 2 * x

        @errors.record
        def bad():
            raise ValueError("boom")

        @errors.record
        def done():
            raise SystemExit(0)
        with pytest.raises(ValueError, match="boom"):
            bad()
        results.append((twice(3), done(), twice.__name__))
    assert results[0] == results[1]


def test_ddp_refusals_of_one_process():
    """On one process (no mpiexec): SyncBatchNorm refused at construction with torch's ValueError; join() and
    register_comm_hook raise NotImplementedError naming what to do instead."""
    code = ("import tapegrad as torch, tapegrad.distributed as dist\n"
            "from tapegrad.nn.parallel import DistributedDataParallel as DDP\n"
            "dist.init_process_group('gloo')\n"
            "m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))\n"
            "try:\n"
            "    DDP(torch.nn.SyncBatchNorm.convert_sync_batchnorm(m))\n"
            "except ValueError as e:\n"
            "    print('sync:', e)\n"
            "ddp = DDP(torch.nn.Linear(2, 2))\n"
            "for call in (lambda: ddp.join(), lambda: ddp.register_comm_hook(None, None)):\n"
            "    try:\n"
            "        call()\n"
            "    except NotImplementedError as e:\n"
            "        print('refused:', str(e).split(':')[0])\n"
            "dist.destroy_process_group()\n")
    rc, out, _ = run_python(code)
    assert rc == 0, out
    assert "sync: SyncBatchNorm layers only work with GPU modules" in out, out
    assert out.count("refused: tapegrad's DistributedDataParallel has no") == 2, out


SPAWNED = """
import os, tapegrad as torch, tapegrad.distributed as dist, tapegrad.multiprocessing as mp
def demo(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
if __name__ == "__main__":
    mp.spawn(demo, args=(2,), nprocs=2, join=True)
"""


@pytest.mark.parametrize("under_mpiexec", [False, True])
def test_the_ddp_tutorials_mp_spawn_is_refused_with_what_to_run(tmp_path, under_mpiexec):
    """The DDP tutorial's form (mp.spawn, then init_process_group by rank): refused in each child before MPI starts
    (under mpiexec a child would inherit its parent's MPI rank and MPICH would abort), naming the launcher to use."""
    from mpi_helpers import mpiexec
    script = tmp_path / "spawned.py"
    script.write_text(SPAWNED)
    command = [sys.executable, str(script)]
    if under_mpiexec:
        command = [mpiexec(), "-n", "2"] + command
    rc, out, _ = run(command, timeout=120)
    assert rc != 0, out
    assert "started by torch.multiprocessing (mp.spawn) for a group of 2" in out and \
        "python -m tapegrad.distributed.run --nproc-per-node 2 script.py" in out, out
    assert "PMI" not in out and "Abort" not in out, out
