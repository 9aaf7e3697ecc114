"""tapegrad.save / tapegrad.load: tensors and nested containers of them, in a file that runs no code on load.

The file is a NumPy .npz archive (a zip of uncompressed .npy members, readable with
`np.load(path, allow_pickle=False)`): one member per distinct array, `t0.npy`, `t1.npy`, ..., and a
manifest, `__tapegrad__.npy`, a uint8 array holding UTF-8 JSON that describes the structure:

    {"format": "tapegrad", "version": 1, "root": NODE}

NODE is JSON null / true / false / a string / a finite number (int or float, as JSON writes them), or
an object with one tag:
    {"float": "nan" | "inf" | "-inf"}
    {"list": [NODE, ...]}   {"tuple": [...]}   {"size": [int, ...]}
    {"dict": [[KEY, NODE], ...]}   {"odict": [...]}   {"counter": [...]}    (KEY: a hashable NODE)
    {"tensor": "t0", "requires_grad": bool, "parameter": bool, "id": int}
    {"ndarray": "t1"}   {"dtype": "float32"}
    {"module": "pkg.mod:Class", "id": int, "state": [[NAME, NODE], ...]}   {"module_ref": int}
    {"function": "tapegrad.mod:name"}    (one of tapegrad's own functions, e.g. a layer's activation)
    {"class": "pkg.mod:Class"}    (an nn.Module class, e.g. torchvision's `self._norm_layer = nn.BatchNorm2d`)
    {"partial": [NODE, NODE, NODE]}    (functools.partial of a class or function: func, args list, keywords dict)
Tensors with the same "id" load as one object; tensors naming the same member share storage.

A whole nn.Module (torch.save(model)) is stored as its class's name and its attribute dict (parameters,
buffers, submodules, plain attributes, tapegrad's own functions by name, nn.Module classes and functools.partial
of them); registered hooks, or attributes that are not data (other functions, open files, arbitrary objects), make
save raise. A class named by the file is resolved as a saved module's is (below). Loading makes the object with
object.__new__ and fills its __dict__: no __init__, __setstate__ or any other code of the class runs, and no
module is imported except tapegrad's own. The class must be tapegrad's own (tapegrad.nn), or allowed with
torch.serialization.add_safe_globals / safe_globals (as torch.load(weights_only=True) requires), or, with
weights_only=False (the caller trusts the file, as torch's unpickling does), a Module subclass of any module,
imported if it is not yet.

Loading never unpickles: the manifest is JSON, every array header is checked (numeric dtype, a shape
whose size matches the bytes actually stored) before any array is allocated, and only uncompressed
members whose sizes add up to no more than the file's size are accepted, so no declared size can make
the loader allocate more than the file holds.
"""
import contextlib
import functools
import io
import math
import os
import pickle
import sys
from collections import Counter, OrderedDict

import numpy as np

from . import _dtype
from .tensor import Size, Tensor, _new
from .device import as_device

__all__ = ["save", "load", "SerializationError", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals"]

FORMAT, VERSION = "tapegrad", 1
MANIFEST = "__tapegrad__.npy"
_MAX_DEPTH = 200  # containers nested deeper than this are refused (JSON parsing recurses)
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: saving the same object twice gives the same bytes
_ALLOWED_KINDS = "biuf"


class SerializationError(RuntimeError):
    """The file is not a valid tapegrad file (corrupt, truncated, foreign, or hostile); nothing was run."""


class UnsafeGlobalError(SerializationError, pickle.UnpicklingError):
    """A saved module's class is not allowed (torch.load raises pickle.UnpicklingError for it)."""


# -- safe globals: the classes a file may name (torch.serialization's allowlist) --------------------------
_safe_globals = []
_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_state_dict_hooks", "_load_state_dict_post_hooks")


def _check_safe_globals(entries):
    entries = list(entries)
    for e in entries:
        ok = (isinstance(e, tuple) and len(e) == 2 and isinstance(e[1], str)) or callable(e)
        if not ok:
            raise ValueError(f"Expected safe_globals to be a list of callables or tuples of (callable, str), "
                             f"but got {e!r}")
    return entries


def add_safe_globals(safe_globals):
    """Allow these classes to be named by files that torch.load / tapegrad.load reads."""
    _safe_globals.extend(_check_safe_globals(safe_globals))


def get_safe_globals():
    return list(_safe_globals)


def clear_safe_globals():
    _safe_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    """Allow these classes inside the with-block only."""
    saved = list(_safe_globals)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _safe_globals[:] = saved


def _class_name(cls):
    return f"{cls.__module__}:{cls.__qualname__}"


def _module_class(name, weights_only):
    """The class a saved module names, without running code from the file; a module other than tapegrad's own is
    imported only with weights_only=False."""
    from .nn.modules.module import Module
    for g in _safe_globals:
        obj, alias = g if isinstance(g, tuple) else (g, None)
        if isinstance(obj, type) and (_class_name(obj) == name or alias == name.replace(":", ".")):
            return obj
    modname, _, qualname = name.partition(":")
    dotted = name.replace(":", ".")
    if modname == "tapegrad.nn" or modname.startswith("tapegrad.nn."):
        import importlib
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            _fail(f"the file names {dotted}, which is not an nn.Module class")
    elif not weights_only:  # (the caller trusts the file: its class's module is imported, as unpickling does)
        import importlib
        mod = sys.modules.get(modname) or importlib.import_module(modname)
    else:
        raise UnsafeGlobalError(
            f"Weights only load failed: the file holds a module of class {dotted}, which is not an allowed "
            f"global by default. Please use `torch.serialization.add_safe_globals([{dotted}])` or the "
            f"`torch.serialization.safe_globals([{dotted}])` context manager to allowlist this global if you "
            f"trust this class (tapegrad makes it with object.__new__ and fills its attributes; none of its "
            f"code runs), or load it with weights_only=False if you trust the file")
    obj = mod
    for part in qualname.split("."):
        obj = getattr(obj, part, None) if part != "<locals>" else None
    if not (isinstance(obj, type) and issubclass(obj, Module)):
        _fail(f"the file names {dotted}, which is not an nn.Module class")
    return obj


def _tapegrad_function_name(fn):
    """"module:name" of one of tapegrad's own functions (a module's activation, F.relu), or None."""
    modname, name = getattr(fn, "__module__", None) or "", getattr(fn, "__name__", "")
    if callable(fn) and not isinstance(fn, type) and modname.split(".")[0] == "tapegrad" and \
            getattr(sys.modules.get(modname), name, None) is fn:
        return f"{modname}:{name}"
    return None


def _tapegrad_function(name):
    """The function a saved {"function": "tapegrad.mod:name"} node names: tapegrad's own, nothing else."""
    modname, _, attr = name.partition(":") if isinstance(name, str) else ("", "", "")
    if modname.split(".")[0] != "tapegrad":
        _fail(f"the file names a function outside tapegrad ({str(name)[:80]!r})")
    import importlib
    try:
        fn = getattr(importlib.import_module(modname), attr, None)
    except ImportError:
        fn = None
    if _tapegrad_function_name(fn) != name:
        _fail(f"the file names {str(name)[:80]!r}, which is not a tapegrad function")
    return fn


# -- save ----------------------------------------------------------------------------------------------
class _Writer:
    def __init__(self):
        self.arrays = []          # member index -> ndarray
        self.array_keys = {}      # id(ndarray) -> member name
        self.tensor_ids = {}      # id(tensor) -> small int
        self.keep = []            # keeps every object whose id() is used alive until the save ends
        self.active = set()
        self.module_ids = {}      # id(module) -> small int (a module saved twice loads as one object)

    def array_key(self, a):
        key = self.array_keys.get(id(a))
        if key is None:
            key = f"t{len(self.arrays)}"
            self.array_keys[id(a)] = key
            self.arrays.append(a)
            self.keep.append(a)
        return key

    def encode(self, obj, depth=0):
        if depth > _MAX_DEPTH:
            raise ValueError(f"tapegrad.save: the object is nested more than {_MAX_DEPTH} levels deep")
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, Tensor):
            from .nn.parameter import Parameter
            a = obj._data
            if obj.is_meta:  # (torch saves its shape alone; tapegrad's format stores values)
                raise NotImplementedError("tapegrad.save of a meta tensor (tensors without data) is not supported")
            _dtype.from_numpy_dtype(a.dtype)
            tid = self.tensor_ids.setdefault(id(obj), len(self.tensor_ids))
            self.keep.append(obj)
            node = {"tensor": self.array_key(a.view(np.uint16) if _dtype.is_bfloat16(a.dtype) else a),
                    "requires_grad": bool(obj._requires_grad), "parameter": isinstance(obj, Parameter), "id": tid}
            if _dtype.is_bfloat16(a.dtype):  # stored as its 16-bit patterns (.npy has no bfloat16)
                node["dtype"] = "bfloat16"
            return node
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind not in _ALLOWED_KINDS:
                raise TypeError(f"tapegrad.save cannot store arrays of dtype {obj.dtype} (numeric arrays only)")
            return {"ndarray": self.array_key(obj)}
        if isinstance(obj, _dtype.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, (int, np.integer)) and not isinstance(obj, np.bool_):
            return int(obj)
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, (float, np.floating)):
            f = float(obj)
            if math.isnan(f):
                return {"float": "nan"}
            if math.isinf(f):
                return {"float": "inf" if f > 0 else "-inf"}
            return f
        if isinstance(obj, (list, tuple, dict)):
            if id(obj) in self.active:
                raise ValueError("tapegrad.save: the object contains itself (a reference cycle)")
            self.active.add(id(obj))
            try:
                return self._container(obj, depth)
            finally:
                self.active.discard(id(obj))
        from .nn.modules.module import Module
        if isinstance(obj, Module):
            return self._module(obj, depth)
        if isinstance(obj, type) and issubclass(obj, Module):
            if "<locals>" in obj.__qualname__:
                raise TypeError(f"tapegrad.save cannot store the class {obj.__qualname__}, defined inside a function")
            return {"class": _class_name(obj)}
        if isinstance(obj, functools.partial):
            return {"partial": [self.encode(obj.func, depth + 1), self.encode(list(obj.args), depth + 1),
                                self.encode(dict(obj.keywords), depth + 1)]}
        name = _tapegrad_function_name(obj)
        if name is not None:
            return {"function": name}
        raise TypeError(f"tapegrad.save cannot store an object of type {type(obj).__module__}."
                        f"{type(obj).__qualname__}: only tensors, numeric NumPy arrays, numbers, strings, None, "
                        "dtypes and lists / tuples / dicts of them")

    def _module(self, m, depth):
        mid = self.module_ids.get(id(m))
        if mid is not None:
            return {"module_ref": mid}
        mid = self.module_ids[id(m)] = len(self.module_ids)
        self.keep.append(m)
        cls = type(m)
        if "<locals>" in cls.__qualname__:
            raise TypeError(f"tapegrad.save cannot store a module of class {cls.__qualname__}, defined inside a "
                            f"function: define it at a module's top level, or save its state_dict()")
        state = []
        transient = getattr(cls, "_transient", ())  # (what a module makes again when it needs it)
        for key, value in m.__dict__.items():
            if key in transient:
                continue
            if key in _HOOK_DICTS:
                if value:
                    raise TypeError(f"tapegrad.save cannot store a module with hooks ({cls.__qualname__}.{key}): "
                                    f"remove them, or save its state_dict()")
                continue
            if key == "_non_persistent_buffers_set":
                value = sorted(value)
            try:
                state.append([key, self.encode(value, depth + 1)])
            except TypeError as e:
                raise TypeError(f"{e} (in the attribute {cls.__qualname__}.{key}; save the module's "
                                f"state_dict() instead)") from None
        return {"module": _class_name(cls), "id": mid, "state": state}

    def _container(self, obj, depth):
        if isinstance(obj, Size):
            return {"size": [int(s) for s in obj]}
        if isinstance(obj, list):
            return {"list": [self.encode(v, depth + 1) for v in obj]}
        if isinstance(obj, tuple):
            return {"tuple": [self.encode(v, depth + 1) for v in obj]}
        tag = "odict" if isinstance(obj, OrderedDict) else "counter" if isinstance(obj, Counter) else "dict"
        items = []
        for k, v in obj.items():
            if not _is_key(k):
                raise TypeError(f"tapegrad.save: dict keys must be strings, numbers, None or tuples of them, got "
                                f"{type(k).__name__}")
            items.append([self.encode(k, depth + 1), self.encode(v, depth + 1)])
        return {tag: items}


def _is_key(k):
    if k is None or isinstance(k, (str, bool, int, float, np.integer, np.floating)):
        return True
    return isinstance(k, tuple) and all(_is_key(x) for x in k)


def _npy_bytes(a):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, a if a.flags.c_contiguous else np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save obj (tensors, numeric arrays, numbers, strings, None, lists/tuples/dicts of them) to a path or a
    binary file object. The pickle arguments exist for torch.save compatibility and are ignored."""
    import json
    import zipfile
    writer = _Writer()
    manifest = {"format": FORMAT, "version": VERSION, "root": writer.encode(obj)}
    text = json.dumps(manifest, allow_nan=False, separators=(",", ":")).encode("utf-8")
    members = [(MANIFEST, np.frombuffer(text, np.uint8))]
    members += [(f"t{i}.npy", a) for i, a in enumerate(writer.arrays)]
    own = isinstance(f, (str, bytes, os.PathLike))
    fh = open(f, "wb") if own else f
    try:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, a in members:
                info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
                info.compress_type = zipfile.ZIP_STORED
                info.external_attr = 0o644 << 16
                zf.writestr(info, _npy_bytes(a))
    finally:
        if own:
            fh.close()


# -- load ----------------------------------------------------------------------------------------------
def _fail(msg):
    raise SerializationError(f"tapegrad.load: {msg}")


def _open_source(f):
    """(a seekable binary file object, its size, whether we own it)."""
    if isinstance(f, (str, bytes, os.PathLike)):
        fh = open(f, "rb")
        return fh, os.fstat(fh.fileno()).st_size, True
    if not hasattr(f, "read"):
        raise TypeError(f"tapegrad.load expects a path or a binary file object, got {type(f).__name__}")
    if not (hasattr(f, "seek") and hasattr(f, "tell")) or (hasattr(f, "seekable") and not f.seekable()):
        data = f.read()
        if not isinstance(data, bytes):
            raise TypeError("tapegrad.load expects a file opened in binary mode")
        return io.BytesIO(data), len(data), True
    start = f.tell()
    f.seek(0, io.SEEK_END)
    size = f.tell() - start
    f.seek(start)
    if start:
        data = f.read()
        return io.BytesIO(data), len(data), True
    return f, size, False


def _check_magic(fh):
    head = fh.read(4)
    fh.seek(0)
    if isinstance(head, str):
        raise TypeError("tapegrad.load expects a file opened in binary mode")
    if head[:2] == b"PK":
        return
    if head[:1] == b"\x80" or head[:1] in (b"(", b"c", b"]", b"}"):
        _fail("the file is a pickle (for example a torch.save checkpoint or a plain pickle.dump). tapegrad never "
              "unpickles, because unpickling runs code from the file; re-save the object with tapegrad.save")
    if head == b"\x93NUM":
        _fail("the file is a single .npy array, not a tapegrad file; load it with numpy.load(allow_pickle=False)")
    _fail("not a tapegrad file (it is not a zip archive, or it is empty or truncated)")


def _read_header(fp, name):
    """Parse a .npy header (numpy's parser evaluates only literals); return (shape, fortran, dtype)."""
    import zipfile
    try:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp, max_header_size=10000)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp, max_header_size=10000)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except (SerializationError, zipfile.BadZipFile):
        raise
    except Exception as e:  # numpy's header parser evaluates literals only; any failure means a bad file
        _fail(f"member {name!r} has an invalid .npy header ({type(e).__name__}: {e})")
    if dtype.kind not in _ALLOWED_KINDS or dtype.fields is not None or dtype.subdtype is not None or \
            dtype.hasobject:
        _fail(f"member {name!r} has dtype {dtype}: only numeric arrays are allowed (object arrays would need "
              "pickle)")
    if not isinstance(shape, tuple) or not all(isinstance(s, int) and s >= 0 for s in shape) or len(shape) > 64:
        _fail(f"member {name!r} declares an invalid shape {shape!r}")
    return shape, fortran, dtype


def _read_array(zf, info, file_size):
    name = info.filename
    with zf.open(info) as fp:
        shape, fortran, dtype = _read_header(fp, name)
        count = 1
        for s in shape:
            count *= s
        header_len = fp.tell() if hasattr(fp, "tell") else None
        nbytes = count * dtype.itemsize
        if header_len is None or nbytes != info.file_size - header_len or nbytes > file_size:
            _fail(f"member {name!r} declares shape {shape} of {dtype} ({nbytes} bytes) but stores "
                  f"{info.file_size - (header_len or 0)} bytes: the file is corrupt or hostile")
        raw = fp.read(nbytes)  # the zip layer checks the CRC once the member is read to its end
        if fp.read(1):
            _fail(f"member {name!r} is longer than its header says")
    if len(raw) != nbytes:
        _fail(f"member {name!r} is truncated")
    a = np.frombuffer(raw, dtype=dtype, count=count).reshape(shape, order="F" if fortran else "C")
    return np.array(a, dtype=a.dtype.newbyteorder("="), order="C", copy=True)  # writeable, native, owned


class _Reader:
    def __init__(self, zf, members, file_size, weights_only=True):
        self.zf, self.members, self.file_size = zf, members, file_size
        self.weights_only = weights_only
        self.arrays = {}
        self.tensors = {}
        self.modules = {}
        self.nodes = 0

    def module(self, node, depth):
        if set(node) != {"module", "id", "state"} or not isinstance(node["module"], str) or \
                not isinstance(node["state"], list) or not isinstance(node["id"], int):
            _fail("invalid module node")
        cls = _module_class(node["module"], self.weights_only)
        m = object.__new__(cls)  # (no __init__ or __new__ of the class runs)
        self.modules[node["id"]] = m
        state = {}
        for pair in node["state"]:
            if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str):
                _fail("invalid module attribute")
            state[pair[0]] = self.decode(pair[1], depth + 1)
        for key in ("_parameters", "_buffers", "_modules"):
            if not isinstance(state.get(key), dict):
                _fail(f"a module without {key}")
        state["_non_persistent_buffers_set"] = set(state.get("_non_persistent_buffers_set", ()))
        for key in _HOOK_DICTS:
            state[key] = OrderedDict()
        m.__dict__.update(state)
        return m

    def array(self, key):
        if not isinstance(key, str) or key not in self.members or key == MANIFEST[:-4]:
            _fail(f"the manifest refers to a missing array {key!r}")
        a = self.arrays.get(key)
        if a is None:
            a = self.arrays[key] = _read_array(self.zf, self.members[key], self.file_size)
        return a

    def decode(self, node, depth=0):
        self.nodes += 1
        if depth > _MAX_DEPTH:
            _fail("the manifest is nested too deeply")
        if node is None or isinstance(node, (bool, str, int)):
            return node
        if isinstance(node, float):
            return node
        if isinstance(node, list) or not isinstance(node, dict) or len(node) == 0:
            _fail(f"invalid manifest node {str(node)[:80]!r}")
        if "tensor" in node:
            return self.tensor(node)
        if "module" in node:
            return self.module(node, depth)
        if "module_ref" in node:
            if len(node) != 1 or node["module_ref"] not in self.modules:
                _fail("invalid module reference")
            return self.modules[node["module_ref"]]
        if len(node) != 1:
            _fail(f"invalid manifest node {str(node)[:80]!r}")
        (tag, value), = node.items()
        if tag == "function":
            return _tapegrad_function(value)
        if tag == "class":
            if not isinstance(value, str):
                _fail("invalid class node")
            return _module_class(value, self.weights_only)
        if tag == "partial":
            if not isinstance(value, list) or len(value) != 3:
                _fail("invalid partial node")
            func, args, keywords = (self.decode(v, depth + 1) for v in value)
            if not callable(func) or not isinstance(args, list) or not isinstance(keywords, dict) or \
                    not all(isinstance(k, str) for k in keywords):
                _fail("invalid partial node")
            return functools.partial(func, *args, **keywords)
        if tag in ("list", "tuple", "size"):
            if not isinstance(value, list):
                _fail(f"invalid {tag} node")
            items = [self.decode(v, depth + 1) for v in value]
            if tag == "list":
                return items
            if tag == "size":
                if not all(isinstance(s, int) and not isinstance(s, bool) for s in items):
                    _fail("invalid size node")
                return Size(items)
            return tuple(items)
        if tag in ("dict", "odict", "counter"):
            if not isinstance(value, list):
                _fail(f"invalid {tag} node")
            out = OrderedDict() if tag == "odict" else Counter() if tag == "counter" else {}
            for pair in value:
                if not isinstance(pair, list) or len(pair) != 2:
                    _fail(f"invalid {tag} entry")
                key = self.decode(pair[0], depth + 1)
                if not _is_key(key):
                    _fail(f"invalid {tag} key")
                out[key] = self.decode(pair[1], depth + 1)
            return out
        if tag == "float":
            if value not in ("nan", "inf", "-inf"):
                _fail("invalid float node")
            return float(value)
        if tag == "ndarray":
            return self.array(value).copy()
        if tag == "dtype":
            if value not in {d.name for d in _dtype.ALL}:
                _fail(f"unknown dtype {value!r}")
            return getattr(_dtype, value)
        _fail(f"unknown manifest tag {tag!r}")

    def tensor(self, node):
        allowed = {"tensor", "requires_grad", "parameter", "id", "dtype"}
        if not set(node) <= allowed:
            _fail("invalid tensor node")
        tid = node.get("id")
        if tid is not None and (not isinstance(tid, int) or isinstance(tid, bool)):
            _fail("invalid tensor id")
        if tid is not None and tid in self.tensors:
            return self.tensors[tid]
        a = self.array(node["tensor"])
        if "dtype" in node:
            if node["dtype"] != "bfloat16" or a.dtype != np.uint16:
                _fail("invalid tensor dtype")
            a = a.view(_dtype.bfloat16_np())
        try:
            _dtype.from_numpy_dtype(a.dtype)
        except TypeError:
            _fail(f"a tensor has unsupported dtype {a.dtype}")
        requires_grad = node.get("requires_grad", False) is True
        if requires_grad and not _dtype.is_float(a.dtype):
            _fail("an integer tensor is marked requires_grad")
        if node.get("parameter", False) is True:
            from .nn.parameter import Parameter
            t = Parameter(_new(a), requires_grad=requires_grad)
        else:
            t = _new(a, requires_grad)
        if tid is not None:
            self.tensors[tid] = t
        return t


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load what tapegrad.save wrote, from a path or a binary file object. Runs no code from the file:
    anything that is not a well-formed tapegrad file raises SerializationError. Everything loads on the CPU:
    map_location may be None, "cpu", a CPU device, or a dict / callable (applied to CPU storages by torch,
    which they return unchanged here); a CUDA location raises torch's error. weights_only (default True, or
    False with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1, as torch) only decides which module classes a whole
    saved module may name (see the module docstring); nothing is ever unpickled."""
    import zipfile
    _check_map_location(map_location)
    if weights_only is None:
        weights_only = not _env_true("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD") or _env_true("TORCH_FORCE_WEIGHTS_ONLY_LOAD")
    fh, size, own = _open_source(f)
    try:
        _check_magic(fh)
        try:
            zf = zipfile.ZipFile(fh, "r")
        except Exception as e:  # zipfile parsing untrusted bytes: any failure means a broken file
            _fail(f"the file is not a valid zip archive (corrupt or truncated: {type(e).__name__}: {e})")
        with zf:
            try:
                members = _check_members(zf, size)
                manifest = _read_manifest(zf, members, size)
                return _Reader(zf, members, size, bool(weights_only)).decode(manifest["root"])
            except (SerializationError, ImportError):  # (weights_only=False: the class's module failed to import)
                raise
            except RecursionError:
                _fail("the manifest is nested too deeply")
            except Exception as e:  # e.g. zipfile's CRC check, a header that lies about an offset
                _fail(f"the file is corrupt ({type(e).__name__}: {e})")
    finally:
        if own:
            fh.close()


def _env_true(name):
    return os.environ.get(name, "0").lower() in ("1", "y", "yes", "true")


def _check_map_location(map_location):
    if map_location is None or callable(map_location) or isinstance(map_location, dict):
        return
    d = as_device(map_location)
    if d.type == "cuda":
        raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                           "False. If you are running on a CPU-only machine, please use torch.load with "
                           "map_location=torch.device('cpu') to map your storages to the CPU.")
    if d.type != "cpu":
        raise RuntimeError(f"torch.UntypedStorage(): Storage device not recognized: {d.type}")


def _is_member_name(name):
    """t0.npy, t1.npy, ...: digits without leading zeros."""
    digits = name[1:-4]
    return (name.startswith("t") and name.endswith(".npy") and 0 < len(digits) <= 9 and digits.isascii()
            and digits.isdigit() and (digits == "0" or digits[0] != "0"))


def _check_members(zf, size):
    import zipfile
    infos = zf.infolist()
    if any(info.filename.endswith(".pkl") for info in infos):
        _fail("the file is a torch.save checkpoint: it holds a pickle, and tapegrad never unpickles, because "
              "unpickling runs code from the file. Load it with torch.load(weights_only=True) and re-save it with "
              "tapegrad.save")
    if not any(info.filename == MANIFEST for info in infos):
        _fail("no manifest (__tapegrad__.npy) in the archive: not a tapegrad file (a plain .npz?)")
    members, total = {}, 0
    for info in infos:
        name = info.filename
        if name != MANIFEST and not _is_member_name(name):
            _fail(f"unexpected member {name!r}: not a tapegrad file")
        if name[:-4] in members:
            _fail(f"duplicate member {name!r}")
        if info.flag_bits & 0x1:
            _fail(f"member {name!r} is encrypted")
        if info.compress_type != zipfile.ZIP_STORED:
            _fail(f"member {name!r} is compressed; tapegrad files store arrays uncompressed, so a small file "
                  "cannot expand into a huge one")
        if info.file_size != info.compress_size:
            _fail(f"member {name!r} declares inconsistent sizes")
        total += info.file_size
        if total > size:
            _fail("the members declare more bytes than the file holds: the file is corrupt or hostile")
        members[name[:-4]] = info
    return members


def _read_manifest(zf, members, size):
    import json
    raw = _read_array(zf, members[MANIFEST[:-4]], size)
    if raw.dtype != np.uint8 or raw.ndim != 1:
        _fail("the manifest is not a byte array")
    try:
        manifest = json.loads(raw.tobytes().decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        _fail("the manifest is nested too deeply")
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as e:
        _fail(f"the manifest is not valid JSON ({e})")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or "root" not in manifest:
        _fail("the manifest does not describe a tapegrad file")
    if manifest.get("version") != VERSION:
        _fail(f"unsupported tapegrad file version {manifest.get('version')!r} (this tapegrad reads version "
              f"{VERSION})")
    return manifest


def _no_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")
