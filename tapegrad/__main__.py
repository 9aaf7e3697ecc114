"""python -m tapegrad script.py [args]   |   python -m tapegrad -m module [args]

Runs a PyTorch program with `torch` resolved to tapegrad, as `python script.py` / `python -m module`
would run it: sys.argv, `__name__ == "__main__"`, sys.path[0] (the script's folder), exit codes and
tracebacks (the launcher's own frames are left out of them).
"""
import os
import runpy
import sys

USAGE = """usage: python -m tapegrad script.py [args ...]
       python -m tapegrad -m module [args ...]

Runs a PyTorch program with `import torch` (and every `torch.X.Y`) resolved to tapegrad."""

_OWN_FILES = (os.path.abspath(__file__),)


def _is_launcher_frame(code):
    name = code.co_filename
    return os.path.abspath(name) in _OWN_FILES or "runpy" in os.path.basename(name)


def _run(fn):
    try:
        fn()
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as e:  # report it as the interpreter would, from the program's first frame on
        tb = e.__traceback__
        while tb is not None and tb.tb_next is not None and _is_launcher_frame(tb.tb_frame.f_code):
            tb = tb.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)  # (3.11+ prints e.__traceback__)
        return 1
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    from ._torch_alias import install_as_torch
    install_as_torch()
    # processes started with multiprocessing's spawn/forkserver copy sys.path, not import hooks: a stand-in
    # `torch` package right after the script's folder hands them tapegrad too (DataLoader workers, ...)
    sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_spawn_shim"))
    if argv[0] == "-m":
        if len(argv) < 2:
            print("Argument expected for the -m option", file=sys.stderr)
            return 2
        module = argv[1]
        sys.argv = [module] + argv[2:]  # run_module sets argv[0] to the module's file, as python -m does
        return _run(lambda: runpy.run_module(module, run_name="__main__", alter_sys=True))
    path = argv[0]
    if not os.path.exists(path):
        print(f"{os.path.basename(sys.executable)}: can't open file {os.path.abspath(path)!r}: "
              f"[Errno 2] No such file or directory", file=sys.stderr)
        return 2
    sys.argv = argv
    # python script.py puts the script's folder (symlinks resolved) first on sys.path, not the cwd
    sys.path[0] = path if os.path.isdir(path) else os.path.dirname(os.path.realpath(path))
    path = os.path.abspath(path)  # (__file__ is absolute, as python makes it)
    return _run(lambda: runpy.run_path(path, run_name="__main__"))


if __name__ == "__main__":
    sys.exit(main())
