"""torch.hub: the cache folder and URL downloads that libraries built on torch use at start-up.
Loading a model from a GitHub hubconf (hub.load/list/help) is not implemented: it would run torch code."""
import os
import shutil
import tempfile
import urllib.request
from urllib.parse import urlparse

_hub_dir = None


def _torch_home():
    return os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"),
                                                                    "torch")))


def get_dir():
    return _hub_dir if _hub_dir is not None else os.path.join(_torch_home(), "hub")


def set_dir(d):
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    import hashlib
    req = urllib.request.Request(url, headers={"User-Agent": "torch.hub"})
    folder = os.path.dirname(os.path.abspath(dst))
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".partial")
    try:
        sha = hashlib.sha256()
        with urllib.request.urlopen(req) as u, os.fdopen(fd, "wb") as f:
            while True:
                chunk = u.read(8192)
                if not chunk:
                    break
                f.write(chunk)
                sha.update(chunk)
        if hash_prefix is not None and not sha.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{sha.hexdigest()}")')
        shutil.move(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    from .serialization import load
    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        download_url_to_file(url, cached, None, progress=progress)
    return load(cached, map_location=map_location, weights_only=weights_only)


def _no_hubconf(*args, **kwargs):
    raise NotImplementedError("tapegrad: torch.hub.load/list/help are not implemented (they import a "
                              "repository's hubconf.py, written for torch)")


load = list = help = _no_hubconf  # noqa: A001


class _SilentTqdm:
    """The minimal progress bar torch.hub falls back to; here it counts silently."""

    def __init__(self, total=None, disable=False, unit=None, *args, **kwargs):
        self.total, self.n = total, 0

    def update(self, n):
        self.n += n

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


try:  # torch.hub's progress bar is tqdm's where it is installed (scripts import it from here), as in torch
    from tqdm import tqdm
except ImportError:
    tqdm = _SilentTqdm
