"""python -m tapegrad script.py and tapegrad.install_as_torch(), run in subprocesses (real torch 2.13 is
installed beside tapegrad in the test environment, as in a user's): the script sees tapegrad as `torch`
exactly as `python script.py` would see torch."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(args, cwd, env_extra=None):
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONWARNINGS="ignore")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


PROBE = """
    import sys
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data.dataloader import DataLoader
    from torch.utils.data import TensorDataset
    from torch.nn.modules.linear import Linear
    import helper
    print("argv", sys.argv[1:], "name", __name__, "path0", sys.path[0] == helper.HERE)
    torch.manual_seed(0)
    model = nn.Sequential(Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=4):
        loss = F.mse_loss(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("loss %.5f" % loss.item())
    print(torch.device("cpu"), x.device, torch.cuda.is_available(), torch.__version__ >= "2.0")
    sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""


@pytest.fixture
def project(tmp_path):
    write(tmp_path / "pkg" / "helper.py", "import os\nHERE = os.path.dirname(os.path.abspath(__file__))\n")
    write(tmp_path / "pkg" / "train.py", PROBE)
    return tmp_path


def test_script_runs_as_under_torch(project):
    """The same script, the same output: under real torch (python script.py) and tapegrad (-m tapegrad)."""
    got = run(["-m", "tapegrad", "pkg/train.py", "0", "--flag"], cwd=project)
    want = run(["pkg/train.py", "0", "--flag"], cwd=project)
    assert want.returncode == 0, want.stderr
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    assert "argv ['0', '--flag'] name __main__ path0 True" in got.stdout


def test_exit_code_passes_through(project):
    assert run(["-m", "tapegrad", "pkg/train.py", "3"], cwd=project).returncode == 3


def test_which_torch_the_script_sees(project):
    write(project / "which.py", """
        import torch, tapegrad, torch.nn, torch.optim.lr_scheduler, torch.autograd.function
        import torch.utils.data.sampler, torch.utils.data.dataset, torch.utils.data.distributed
        import torch.nn.modules.loss, torch.nn.modules.activation, torch.nn.init, torch.nn.utils
        import torch.autograd.functional, torch.autograd.grad_mode, torch.serialization
        import torch.backends.cudnn, torch.onnx, torch.hub, torch.cuda.amp, torch.amp
        print(torch is tapegrad, torch.nn is tapegrad.nn, torch.nn.Linear is tapegrad.nn.Linear,
              torch.__spec__.name, torch.nn.__name__)
    """)
    r = run(["-m", "tapegrad", "which.py"], cwd=project)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True", "tapegrad", "tapegrad.nn"]


def test_traceback_is_the_scripts(project):
    write(project / "fails.py", """
        def inner():
            raise ValueError("boom")
        inner()
    """)
    got = run(["-m", "tapegrad", "fails.py"], cwd=project)
    want = run(["fails.py"], cwd=project)
    assert got.returncode == want.returncode == 1
    assert got.stderr == want.stderr  # no launcher or runpy frames


def test_missing_submodule_names_the_torch_module(project):
    write(project / "missing.py", """
        try:
            import torch.no_such_module
        except ModuleNotFoundError as e:
            print(type(e).__name__, e.name, str(e))
        try:
            from torch import no_such_module
        except ImportError as e:
            print(type(e).__name__, str(e).split(" (")[0])
    """)
    got = run(["-m", "tapegrad", "missing.py"], cwd=project)
    want = run(["missing.py"], cwd=project)
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0] == want.stdout.splitlines()[0] == (
        "ModuleNotFoundError torch.no_such_module No module named 'torch.no_such_module'")
    assert got.stdout.splitlines()[1] == "ImportError cannot import name 'no_such_module' from 'tapegrad'"


def test_missing_file_is_reported_as_python_does(project):
    got = run(["-m", "tapegrad", "nope.py"], cwd=project)
    want = run(["nope.py"], cwd=project)
    assert got.returncode == want.returncode == 2
    assert got.stderr.split(":", 1)[1] == want.stderr.split(":", 1)[1]


def test_run_a_module(project):
    write(project / "mod_pkg" / "__init__.py", "")
    write(project / "mod_pkg" / "entry.py", """
        import sys, torch
        print(torch.__name__, __name__, sys.argv[1:], sys.argv[0].endswith("entry.py"))
        sys.exit(5)
    """)
    r = run(["-m", "tapegrad", "-m", "mod_pkg.entry", "x"], cwd=project)
    assert r.returncode == 5, r.stderr
    assert r.stdout.split() == ["tapegrad", "__main__", "['x']", "True"]


def test_usage_without_a_script(project):
    r = run(["-m", "tapegrad"], cwd=project)
    assert r.returncode == 2 and "usage: python -m tapegrad script.py" in r.stderr


def test_install_as_torch_in_process(project):
    write(project / "nb.py", """
        import tapegrad
        tapegrad.install_as_torch()
        tapegrad.install_as_torch()  # idempotent
        import torch
        from torch.nn.modules.linear import Linear
        print(torch is tapegrad, Linear is tapegrad.nn.Linear)
    """)
    r = run(["nb.py"], cwd=project)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]


def test_install_after_real_torch_is_a_clear_error(project):
    write(project / "late.py", """
        import torch
        import tapegrad
        try:
            tapegrad.install_as_torch()
        except RuntimeError as e:
            print(str(e))
    """)
    r = run(["late.py"], cwd=project)
    assert r.returncode == 0, r.stderr
    assert "the real PyTorch is already imported in this process" in r.stdout


def test_a_missing_optional_dependency_keeps_its_own_error(project):
    """A module tapegrad has, failing on its own import of an absent package, is not reported as
    "No module named 'torch.X'"."""
    write(project / "opt.py", """
        import sys, tapegrad
        sys.modules["tapegrad._probe_dep"] = None  # a tapegrad module whose import fails inside
        import importlib.abc, importlib.util
        class Finder(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "tapegrad.needs_dep":
                    return importlib.util.spec_from_loader(name, Loader())
        class Loader(importlib.abc.Loader):
            def create_module(self, spec): return None
            def exec_module(self, module): import absent_optional_package_xyz  # noqa
        sys.meta_path.append(Finder())
        tapegrad.install_as_torch()
        try:
            import torch.needs_dep
        except ModuleNotFoundError as e:
            print(e.name)
    """)
    r = run(["opt.py"], cwd=project)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["absent_optional_package_xyz"]


def test_spawned_processes_see_tapegrad_too(project):
    """multiprocessing's spawn children re-import the script without the parent's import hook: a
    DataLoader's spawned workers must still get tapegrad as torch (and tensors of tapegrad's type)."""
    write(project / "spawned.py", """
        import multiprocessing as mp
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Items(Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                return torch.tensor([float(i)])

        def child_torch_name(q):
            import torch
            q.put(torch.__name__)

        if __name__ == "__main__":
            batches = [b.tolist() for b in DataLoader(Items(), batch_size=2, num_workers=2,
                                                      multiprocessing_context="spawn")]
            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            p = ctx.Process(target=child_torch_name, args=(q,))
            p.start()
            print(torch.__name__, q.get(timeout=60), batches)
            p.join()
    """)
    r = run(["-m", "tapegrad", "spawned.py"], cwd=project)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "tapegrad tapegrad [[[0.0], [1.0]], [[2.0], [3.0]]]"
