"""Compiled kernels, loaded on first use: importing tapegrad compiles (and imports) nothing of Numba.

`load()` picks a writable cache directory before Numba is imported: the package's own __pycache__ when
it is writable, else NUMBA_CACHE_DIR if set, else a per-user cache directory; if none can be written,
caching is off and kernels compile in memory. Numba invalidates a cached function only when its own file
changes, not when a kernel it calls from another file does (adding an op renumbers elementwise.py's
opcodes, which runtime.py's cached replay has compiled in): `load()` clears every cached kernel of this
folder when any of its files has changed since they were cached (`_clear_stale_cache`).
"""
import builtins
import os
import pathlib
import sys

from .. import registry

_PRINT = builtins.print  # (the builtin, as at `import tapegrad`: see _import_numba)

_runtime = None


def _writable(path):
    import tempfile  # (not at import tapegrad: this module is imported then)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path):
            return True
    except OSError:
        return False


def _choose_cache_dir():
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    here = pathlib.Path(__file__).parent / "__pycache__"
    if _writable(here):
        return
    user = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "tapegrad-numba"
    if _writable(user):
        os.environ["NUMBA_CACHE_DIR"] = str(user)
    else:
        os.environ["NUMBA_DISABLE_CACHING"] = "1"  # nowhere to write: compile in memory, never fail


def _reachable(f):
    return getattr(sys.modules.get(getattr(f, "__module__", None) or ""), getattr(f, "__name__", ""), None) is f


def _print(*args, **kwargs):  # (a stand-in for print that Numba can find by its module and name)
    return builtins.print(*args, **kwargs)


def _import_numba():
    """Import Numba, after _choose_cache_dir. Numba types `print` by the object builtins.print is when it is
    imported, which must be reachable by its module and name: a script that replaced print (torchvision's
    references' setup_for_distributed does) made that import fail, so the builtin stands in meanwhile."""
    user = builtins.print
    if not _reachable(user):
        builtins.print = _PRINT if _reachable(_PRINT) else _print
    try:
        import numba  # noqa: F401
    finally:
        builtins.print = user


def _check_codes(codes):
    declared = {op.name: op.code for op in registry.OPS if op.kind in (registry.K_UNARY, registry.K_BINARY)}
    if codes != declared:
        raise RuntimeError("tapegrad/kernels/elementwise.py does not match the declared elementwise ops: run "
                           "`python -m tapegrad.kernels.codegen --write`")


def sources_stamp(folder=pathlib.Path(__file__).parent):
    """A digest of the kernel sources: the names and contents of the folder's .py files (they import nothing
    compiled from outside it)."""
    import hashlib
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _clear_stale_cache(cache_dir, stamp):
    """Delete the cached kernels (.nbi indexes, .nbc code) in cache_dir unless they were cached from the sources
    whose stamp is `stamp`; then record it. Processes starting together (mpiexec) take turns under a lock."""
    try:
        import fcntl
    except ImportError:  # (not POSIX: no lock)
        fcntl = None
    cache_dir = pathlib.Path(cache_dir)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with open(cache_dir / "tapegrad-kernels.lock", "a") as lock:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)
            recorded = cache_dir / "tapegrad-kernels.stamp"
            if recorded.exists() and recorded.read_text() == stamp:
                return
            for path in list(cache_dir.glob("*.nbi")) + list(cache_dir.glob("*.nbc")):
                path.unlink(missing_ok=True)
            recorded.write_text(stamp)
    except OSError:  # (a cache Numba cannot write either: it compiles in memory)
        pass


def load():
    """The compiled runtime module (imports Numba and loads or compiles the kernels on first call)."""
    global _runtime
    if _runtime is None:
        _choose_cache_dir()
        _import_numba()
        from . import elementwise, memory, runtime
        cache_dir = getattr(runtime.plan._cache, "_cache_path", None)  # (None: caching is off)
        if cache_dir is not None:
            _clear_stale_cache(cache_dir, sources_stamp())
        memory.check_layout()
        _check_codes(elementwise.CODES)
        _runtime = runtime
    return _runtime


_modules = {}
_refusal = []  # (array type, error) once the meta device is in use: guarded modules refuse such arrays


def module(name):
    """kernels/<name>.py, imported once load() has chosen where Numba caches (for kernels only some ops or
    optimizers use, kept out of the runtime); a dict lookup after the first call, as ops call it per use."""
    m = _modules.get(name)
    if m is None:
        import importlib
        load()
        m = importlib.import_module(f"{__name__}.{name}")
        m = _modules[name] = _Guarded(m) if _refusal else m
    return m


def refuse(array_type, error):
    """From now on, every kernel module's functions raise error(function name) when given an array of array_type
    (the meta device's: Numba's own dispatch types an ndarray subclass by the table its plain arrays filled, so it
    cannot be told to refuse one)."""
    if not _refusal:
        _refusal.append((array_type, error))
        for name, m in list(_modules.items()):
            _modules[name] = _Guarded(m)


class _Guarded:
    """A kernel module whose functions check their arguments for a refused array type first."""

    def __init__(self, m):
        self._module = m

    def __getattr__(self, name):
        f = getattr(self._module, name)
        if not callable(f):
            return f
        refused, error = _refusal[0]

        def checked(*args, **kwargs):
            for a in args:
                if type(a) is refused:
                    raise error(name)
            return f(*args, **kwargs)
        setattr(self, name, checked)  # (looked up once)
        return checked
