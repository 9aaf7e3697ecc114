"""torch.version and torch.__version__: a str that compares as a version, as torch's TorchVersion does
(`torch.__version__ >= "2.0"`, `>= (2, 0)`). tapegrad implements torch 2.13's API, so that is the version
scripts see; tapegrad's own release is `tapegrad.version.tapegrad`."""
import re

tapegrad = "0.1.0"
_VERSION_RE = re.compile(r"^v?(\d+(?:\.\d+)*)(?:(a|b|rc|\.?dev|\.?post)(\d*))?(?:\+(.+))?$")
_PHASE = {"dev": -3, ".dev": -3, "a": -2, "b": -1, "rc": 0, None: 1, "post": 2, ".post": 2}


def _key(v):
    """A sortable key for a PEP 440-like version (release numbers, then dev < a < b < rc < final < post);
    None when v is not one."""
    if isinstance(v, (tuple, list)):
        v = ".".join(str(x) for x in v)
    elif not isinstance(v, str):
        v = str(v)  # e.g. a packaging.version.Version
    m = _VERSION_RE.match(v.strip().lower())
    if m is None:
        return None
    release = [int(x) for x in m.group(1).split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    local = () if m.group(4) is None else (1, m.group(4))  # (a local label sorts after the public version)
    return (tuple(release), _PHASE[m.group(2)], int(m.group(3) or 0), local)


class TorchVersion(str):
    """A str that compares with strings, tuples and Version objects as versions (falling back to string
    comparison for something that is not a version)."""
    __slots__ = ()

    def _cmp(self, other, op, str_op):
        a, b = _key(str(self)), _key(other)
        if a is None or b is None:
            return getattr(str, str_op)(self, other)
        return op(a, b)

    def __lt__(self, other):
        return self._cmp(other, lambda a, b: a < b, "__lt__")

    def __le__(self, other):
        return self._cmp(other, lambda a, b: a <= b, "__le__")

    def __gt__(self, other):
        return self._cmp(other, lambda a, b: a > b, "__gt__")

    def __ge__(self, other):
        return self._cmp(other, lambda a, b: a >= b, "__ge__")

    def __eq__(self, other):
        return self._cmp(other, lambda a, b: a == b, "__eq__")

    def __ne__(self, other):
        return not self == other

    __hash__ = str.__hash__


__version__ = TorchVersion("2.13.0+tapegrad" + tapegrad)
cuda = None
hip = None
xpu = None
debug = False
git_version = "tapegrad-" + tapegrad
