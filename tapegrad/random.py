"""Random numbers that reproduce PyTorch's CPU generator bit for bit.

torch's CPU generator is a 32-bit MT19937 seeded with ``init_genrand(seed & 0xffffffff)``; one draw is one
32-bit output (``random()``), ``random64()`` is two draws, the first one the high word. The distributions
below mirror ATen's CPU kernels (aten/src/ATen/native/cpu/DistributionTemplates.h, core/DistributionsHelper.h,
core/TransformationHelper.h) and consume exactly the draws torch consumes, so any interleaving of calls
stays in step with torch. The draws come from NumPy's ``MT19937.random_raw`` in blocks; the transforms of
uniform and normal are compiled Numba kernels (kernels/rng.py, loaded on first use), the rest vectorised NumPy.

Functions (``generator=None`` means the default generator; shapes are tuples of ints; arrays returned are
fresh, C-contiguous NumPy arrays):

    uniform(shape, generator=None, dtype=np.float32, low=0.0, high=1.0)   torch.rand / Tensor.uniform_(low, high)
    normal(shape, generator=None, dtype=np.float32, mean=0.0, std=1.0)    torch.randn / Tensor.normal_(mean, std)
    integers(low, high, shape, generator=None, dtype=np.int64) -> int64   torch.randint(low, high, shape)
    permutation(n, generator=None) -> int64                               torch.randperm(n)
    bernoulli(p, generator=None) -> 0/1 in p's dtype                      torch.bernoulli(p), p a float32/float64 array
    bernoulli_scalar(shape, p, generator=None, dtype=np.float32)          Tensor.bernoulli_(p) with a float p
    exponential / cauchy / log_normal / geometric(shape, ..., generator=None, dtype)   the Tensor fills of those names
    random_bits(shape, generator, dtype), random_range(shape, low, high, generator, dtype)   Tensor.random_'s overloads
    poisson(rates, generator=None)                                        torch.poisson (ATen's sample_poisson)
    dropout_mask(shape, p, generator=None, dtype=np.float32)              the 0/1 keep-mask of F.dropout (CPU);
        torch draws ``noise.bernoulli_(1 - p)`` of the input's shape (feature dropout: (N, C, 1, ..., 1)), then
        returns ``input * (noise / (1 - p))`` computed in the input's dtype; p == 0, p == 1 or eval mode draw nothing.

Where torch's result depends on the machine, this module follows what torch does on the machine it runs on:
float32 ``normal`` with 16 or more elements is torch's AVX2 kernel (Cephes polynomials, with the FMAs GCC
fuses) on x86-64 CPUs with AVX2 and FMA (AVX512 CPUs too: torch does not dispatch normal to AVX512), and the
scalar kernel (libm ``logf``/``cosf``/``sinf``) elsewhere or under ``ATEN_CPU_CAPABILITY=default``.
``bernoulli_(float p)`` (hence dropout) is the same on every CPU: torch's released builds compile MKL's
bernoulli out (aten/src/ATen/native/cpu/DistributionKernels.cpp, "Disable MKL rng until
https://github.com/pytorch/pytorch/issues/132395 is addressed"), so Intel and AMD CPUs, with or without
AVX-512, run the serial kernel: one float64 draw per element.
"""
import contextlib
import ctypes
import functools
import math
import operator
import os
import platform

import numpy as np

from . import _dtype, _libm, _strides, kernels
from .device import device as _device
from .tape import untraceable
from .tensor import _new

_DEFAULT_SEED = 67280421310721  # torch.Generator()'s seed
_N = 624
_STATE_BYTES = 5056  # sizeof(CPUGeneratorImplState)
_TWO_PI = 2.0 * math.pi
_f32 = np.float32


# ---------------------------------------------------------------------------------------------- capability


def _x86_has_avx2_fma():
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
        return bool(feats.get("AVX2")) and bool(feats.get("FMA3"))
    except ImportError:
        try:
            with open("/proc/cpuinfo") as f:
                flags = next((line.split() for line in f if line.startswith("flags")), [])
            return "avx2" in flags and "fma" in flags
        except OSError:
            return False


def _capability():
    machine = platform.machine().lower()
    forced_default = os.environ.get("ATEN_CPU_CAPABILITY", "").lower() == "default"
    if machine in ("x86_64", "amd64", "x86", "i386", "i686"):
        if not forced_default and _x86_has_avx2_fma():
            return "avx2", True
        return "default", False   # x86 baseline: no FMA, so no contraction
    return "default", True        # aarch64 etc.: FMA is baseline and compilers contract a * b + c


# Which float32 normal kernel torch runs, and whether its compiler fused a * b + c into an FMA.
_KERNEL, _FUSED = _capability()


# ---------------------------------------------------------------------------------------------- exact FMAs


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _fma32(a, b, c):
    """float32 fma(a, b, c): a * b is exact in float64; a float64 sum that lands on a float32 midpoint
    (the only case where rounding twice differs) is moved one float64 ulp towards the exact sum."""
    p = np.multiply(a, b, dtype=np.float64)
    s = p + np.asarray(c, np.float64)
    s = np.asarray(s)
    out = s.astype(_f32)
    mid = (s.view(np.int64) & 0x1FFFFFFF) == 0x10000000
    if mid.any():
        _, err = _two_sum(p, np.asarray(c, np.float64) + np.zeros_like(s))
        fix = mid & (err != 0)
        out = np.where(fix, np.nextafter(s, s + err).astype(_f32), out)
    return out


def _fma64(a, b, c):
    """float64 fma(a, b, c) (Boldo & Melquiond: exact product, then a sum rounded to odd)."""
    a, b, c = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64))
    uh = a * b
    t = 134217729.0 * a
    ah = t - (t - a)
    al = a - ah
    t = 134217729.0 * b
    bh = t - (t - b)
    bl = b - bh
    ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl
    th, tl = _two_sum(c, uh)
    v, e = _two_sum(tl, ul)
    v = np.where((e != 0) & ((v.view(np.int64) & 1) == 0), np.nextafter(v, v + e), v)
    return th + v


def _fma(a, b, c, dtype):
    """fma(a, b, c) in dtype (float32 or float64) for an array a and scalars b, c."""
    if c == 0 or b == 1:   # the unfused result is the fused one
        return np.asarray(a * dtype.type(b) + dtype.type(c), dtype)
    return _fma32(a, _f32(b), _f32(c)) if dtype == np.float32 else _fma64(a, b, c)


def _madd(a, b, c, dtype):
    """a * b + c as torch's compiled code computes it (fused where the compiler fuses)."""
    if _FUSED:
        return _fma(a, b, c, dtype)
    return np.asarray(a * dtype.type(b) + dtype.type(c), dtype)


# ---------------------------------------------------------------------------------------------- kernels



def _rng():
    return kernels.module("rng")


# ---------------------------------------------------------------------------------------------- generator


def _seed_value(seed):
    seed = operator.index(seed)
    if not -(1 << 63) <= seed < (1 << 64):
        raise ValueError("Overflow when unpacking long long")
    return seed & ((1 << 64) - 1)


def _init_genrand(seed):
    key = [seed & 0xFFFFFFFF]
    for i in range(1, _N):
        prev = key[-1]
        key.append((1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF)
    return np.array(key, np.uint32)


def _os_random_64():
    """64 random bits from the OS, as `secrets.randbits(64)` (whose import, with hmac and hashlib, costs
    9 ms of `import tapegrad`)."""
    return int.from_bytes(os.urandom(8), "little")


_CPU = _device("cpu")


_MT_STATE_BYTES = 624 * 4 + 4  # NumPy's mt19937_state: uint32 key[624], int pos (numpy/random/src/mt19937)
_raw_state_checked = None


def _raw_state_ok(bits):
    """Whether NumPy's MT19937 state struct is laid out as _MT_STATE_BYTES says: checked once, on a generator of
    its own, against the state NumPy reports (else snapshots go through get_state)."""
    global _raw_state_checked
    if _raw_state_checked is None:
        probe = np.random.MT19937(7)
        probe.random_raw(5)
        raw = ctypes.string_at(probe.ctypes.state_address, _MT_STATE_BYTES)
        st = probe.state["state"]
        want = st["key"].astype("<u4").tobytes() + int(st["pos"]).to_bytes(4, "little", signed=True)
        _raw_state_checked = raw == want
    return _raw_state_checked


class Generator:
    """torch.Generator for the CPU: manual_seed, seed, initial_seed, get_state, set_state."""

    def __init__(self, device="cpu"):
        if str(device) not in ("cpu", "cpu:0"):
            raise RuntimeError(f"tapegrad has only the CPU generator, got device {device!r}")
        self._bits = np.random.MT19937()
        self._reseed(_DEFAULT_SEED)

    @property
    def device(self):
        """torch.device('cpu') (read-only, as torch's)."""
        return _CPU

    def _reseed(self, seed):
        self._seed = seed
        self._set_key(_init_genrand(seed), _N)
        self._next_normal = None        # torch's next_double_normal_sample (Box-Muller's second value)
        self._next_float_normal = None  # torch's next_float_normal_sample (kept only for get/set_state)
        self._fresh = True

    def _set_key(self, key, pos):
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}

    def manual_seed(self, seed):
        self._reseed(_seed_value(seed))
        return self

    def seed(self):
        s = _os_random_64()
        self._reseed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """A 5056-byte uint8 tensor laid out as torch's CPUGeneratorImplState (padding zeroed)."""
        st = self._bits.state["state"]
        pos = int(st["pos"])
        buf = np.zeros(_STATE_BYTES, np.uint8)
        buf[0:8] = np.frombuffer(np.uint64(self._seed).tobytes(), np.uint8)
        buf[8:16] = np.frombuffer(np.array([_N + 1 - pos, 1], np.int32).tobytes(), np.uint8)
        nxt = 0 if (pos == _N and self._fresh) else pos
        buf[16:24] = np.frombuffer(np.uint64(nxt).tobytes(), np.uint8)
        buf[24:24 + 8 * _N] = np.frombuffer(st["key"].astype(np.uint64).tobytes(), np.uint8)
        if self._next_normal is not None:
            buf[5024:5032] = np.frombuffer(np.float64(self._next_normal).tobytes(), np.uint8)
            buf[5040:5044] = np.frombuffer(np.int32(1).tobytes(), np.uint8)
        if self._next_float_normal is not None:
            buf[5048:5052] = np.frombuffer(_f32(self._next_float_normal).tobytes(), np.uint8)
            buf[5052] = 1
        return _new(buf)

    def _snapshot(self):
        """The generator's whole state, to be put back by _restore (tapegrad.compile saves it at every replayed
        call that draws): get_state's layout costs 30 us, NumPy's MT19937.state alone 25, this 0.5."""
        if not _raw_state_ok(self._bits):
            return self.get_state()
        return (ctypes.string_at(self._bits.ctypes.state_address, _MT_STATE_BYTES), self._seed, self._next_normal,
                self._next_float_normal, self._fresh)

    def _restore(self, snapshot):
        if type(snapshot) is not tuple:
            self.set_state(snapshot)
            return
        raw, self._seed, self._next_normal, self._next_float_normal, self._fresh = snapshot
        ctypes.memmove(self._bits.ctypes.state_address, raw, _MT_STATE_BYTES)

    def set_state(self, new_state):
        data = getattr(new_state, "_data", None)
        if data is None or data.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if data.size != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input "
                               f"RNG state size to be {data.size}")
        raw = np.ascontiguousarray(data).reshape(-1).tobytes()
        seed = int(np.frombuffer(raw, np.uint64, 1, 0)[0])
        left, seeded = (int(v) for v in np.frombuffer(raw, np.int32, 2, 8))
        nxt = int(np.frombuffer(raw, np.uint64, 1, 16)[0])
        if not (seeded and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        key = np.frombuffer(raw, np.uint64, _N, 24).astype(np.uint32)  # torch keeps the low 32 bits too
        self._seed = seed
        self._set_key(key, _N + 1 - left)
        self._fresh = left == 1 and nxt == 0
        valid = int(np.frombuffer(raw, np.int32, 1, 5040)[0])
        self._next_normal = float(np.frombuffer(raw, np.float64, 1, 5024)[0]) if valid else None
        self._next_float_normal = float(np.frombuffer(raw, np.float32, 1, 5048)[0]) if raw[5052] else None
        return self

    # -- draws

    def _u32(self, n):
        """n raw 32-bit draws (torch's random()), as uint64."""
        untraceable("a random draw")
        if n:
            self._fresh = False
        return self._bits.random_raw(n)

    def _u24(self, n):
        """n float32 uniforms in [0, 1): 24 low bits of one draw each."""
        return _rng().u24(self._u32(n))

    def _u64(self, n):
        """n random64() values: two draws each, the first the high word."""
        r = self._u32(2 * n).reshape(n, 2)
        return (r[:, 0] << np.uint64(32)) | r[:, 1]

    def _u53(self, n):
        """n float64 uniforms in [0, 1): 53 low bits of random64()."""
        return _rng().u53(self._u32(2 * n))

    def _normal_double(self):
        """One at::normal_distribution<double> sample before its mean/std transform (Box-Muller with cache)."""
        if self._next_normal is not None:
            v, self._next_normal = self._next_normal, None
            return v
        u1, u2 = self._u53(2).tolist()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = _TWO_PI * u1
        self._next_normal = r * math.sin(theta)
        return r * math.cos(theta)


default_generator = Generator().manual_seed(_os_random_64())  # torch seeds its default from the OS


def manual_seed(seed):
    default_generator.manual_seed(_seed_value(int(seed)))
    return default_generator


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """torch.random.fork_rng: the default generator's state restored on leaving the block (a CPU build has no
    device generators to fork)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def in_memory_order(shape, strides, draw, *arrays):
    """draw(shape, *arrays) for a tensor of these strides, its draws laid in the tensor's memory order as torch's
    fills lay them (a transposed tensor's first draws go down its columns); `arrays` (of `shape`, such as
    bernoulli's probabilities) are permuted with it. The result is in logical (C) order."""
    order = _strides.memory_order(shape, strides)
    if order is None:
        return draw(shape, *arrays)
    drawn = draw(tuple(shape[d] for d in order), *(np.transpose(a, order) for a in arrays))
    return np.ascontiguousarray(np.transpose(drawn, np.argsort(order)))


def _gen(generator):
    return default_generator if generator is None else generator


def fill_dtype(dtype):
    """The dtype torch's in-place fills (uniform_, normal_) draw in for a tensor of `dtype`: its own float dtype
    (bfloat16 included: drawn as float16 is); float64 for any other, then cast."""
    dtype = np.dtype(dtype)
    return dtype if dtype in (np.float16, np.float32, np.float64) or dtype.name == "bfloat16" else np.dtype(np.float64)


def _numel(shape):
    return int(math.prod(shape))  # (np.prod's Python wrapper costs about 5 µs a draw)


def _g(x):
    """A double as C++'s ostream prints it (torch's messages)."""
    return f"{x:g}"


# ---------------------------------------------------------------------------------------------- uniform


def uniform(shape, generator=None, dtype=np.float32, low=0.0, high=1.0):
    """torch.rand(shape) / torch.empty(shape).uniform_(low, high): one draw per float32 or float16 element
    (24 bits), two per float64 element (53 bits); x * (high - low) + low."""
    dtype = np.dtype(dtype)
    default = low == 0.0 and high == 1.0 and dtype.char in "fd"  # (rand's: no bounds to check, none reached)
    if not default:
        _check_uniform(dtype, low, high)
    gen = _gen(generator)
    n = _numel(shape)
    if dtype == np.float64:
        return _rng().uniform_f64(gen._u32(2 * n), float(low), float(high), _FUSED).reshape(shape)
    elif dtype in (np.float32, np.float16) or dtype.name == "bfloat16":  # (computed in float32, then rounded)
        out = _rng().uniform_f32(gen._u32(n), _f32(low), _f32(high), _FUSED).astype(dtype, copy=False)
    else:
        raise TypeError(f"uniform: unsupported dtype {dtype}")
    if default:  # (24 bits over 2 ** 24: below 1)
        return out.reshape(shape)
    # torch keeps [from, to): a value that rounded up to `to` (in the tensor's dtype) becomes `from`.
    out = np.where(out >= dtype.type(high), dtype.type(low), out)
    return np.ascontiguousarray(out, dtype).reshape(shape)


# ---------------------------------------------------------------------------------------------- fast draws
# torch.randn(n) / rand(n) of the default float32 dtype, as the factories call them most (a fresh batch each
# step): the kernel called at once on the generator's raw draws, without uniform's / normal's argument
# handling (1.9 of randn(32)'s 2.9 us were Python). The same draws and the same kernels as `normal` and
# `uniform` below take for these arguments, so the streams are those. The caller (creation.py) has checked
# what only it knows: no trace running, the default dtype float32, the CPU the default device.

_fast_kernels = None   # (normal_avx2, uniform_f32), bound on the first fast draw (kernels load on first use)


def _bind_fast_kernels():
    global _fast_kernels
    rng = _rng()
    _fast_kernels = (rng.normal_avx2, rng.uniform_f32)
    return _fast_kernels


def _fast_numel(size):
    """The number of elements of a shape of one to eight exact ints, each below 2 ** 31 (torch's checks cannot fail
    for them); None for anything else (the general path parses and checks it)."""
    if not 1 <= len(size) <= 8:
        return None
    n = 1
    for s in size:
        if type(s) is not int or not 0 <= s < 2147483648:
            return None
        n *= s
    return n if n < 2 ** 62 else None


def randn_f32(size, generator=None):
    """torch.randn(*size) in float32, for int sizes (or one tuple of them) of 16 or more elements where torch runs
    its AVX2 kernel (normal's first branch), from the default generator or a Generator given; None where that is
    not the case (the caller takes the general path)."""
    if len(size) == 1 and type(size[0]) is tuple:   # randn((2, 3))
        size = size[0]
    n = _fast_numel(size)
    if n is None or n < 16 or _KERNEL != "avx2" or not (generator is None or type(generator) is Generator):
        return None
    gen = default_generator if generator is None else generator
    kernels_ = _fast_kernels or _bind_fast_kernels()
    gen._fresh = False  # (Generator._u32 without its untraceable check: the caller has checked there is no trace)
    out = kernels_[0](gen._bits.random_raw(n + 16 if n % 16 else n), n, _F32_ZERO, _F32_ONE)
    return out if len(size) == 1 else out.reshape(size)


def rand_f32(size, generator=None):
    """torch.rand(*size) in float32, for int sizes (or one tuple of them): uniform's default branch (one draw an
    element, no clamp needed); None for other arguments."""
    if len(size) == 1 and type(size[0]) is tuple:   # rand((2, 3))
        size = size[0]
    n = _fast_numel(size)
    if n is None or not (generator is None or type(generator) is Generator):
        return None
    gen = default_generator if generator is None else generator
    kernels_ = _fast_kernels or _bind_fast_kernels()
    if n:
        gen._fresh = False
    out = kernels_[1](gen._bits.random_raw(n), _F32_ZERO, _F32_ONE, _FUSED)
    return out if len(size) == 1 else out.reshape(size)


def _check_uniform(dtype, low, high):
    """torch's errors for uniform_'s bounds in this dtype."""
    bf16 = dtype.name == "bfloat16"  # (ml_dtypes'): drawn as float16 is, in float32 then rounded
    if bf16:
        limit, name = 3.3895313892515355e+38, "c10::BFloat16"
    if dtype.kind == "f":
        limit = float(np.finfo(dtype).max)
        name = {2: "c10::Half", 4: "float", 8: "double"}[dtype.itemsize]
        for what, v in (("from", low), ("to", high)):
            if not -limit <= v <= limit:
                raise RuntimeError(f"{what} is out of bounds for {name}")
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_g(low)} > to={_g(high)}")
    if (dtype.kind == "f" or bf16) and high - low > limit:
        name = "BFloat16" if bf16 else {2: "Half", 4: "Float", 8: "Double"}[dtype.itemsize]
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{name}>::max(), but found "
                           f"to={_g(high)} and from={_g(low)} which result in to-from to exceed the limit")


# ---------------------------------------------------------------------------------------------- normal


_F32_DTYPE, _F32_ZERO, _F32_ONE = np.dtype(np.float32), np.float32(0.0), np.float32(1.0)


def normal(shape, generator=None, dtype=np.float32, mean=0.0, std=1.0, serial=False):
    """torch.randn(shape) / torch.empty(shape).normal_(mean, std). serial: one double a draw, as torch's kernel
    fills a tensor that is not contiguous (or of fewer than 16 elements)."""
    if dtype is _F32_DTYPE and _KERNEL == "avx2" and mean == 0.0 and std == 1.0 and not serial:  # (randn's)
        n = _numel(shape)
        if n >= 16:
            gen = default_generator if generator is None else generator
            out = _rng().normal_avx2(gen._u32(n + 16 if n % 16 else n), n, _F32_ZERO, _F32_ONE)
            return out if len(shape) == 1 else out.reshape(shape)
    dtype = np.dtype(dtype)
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
    gen = _gen(generator)
    n = _numel(shape)
    if n < 16 or serial:
        return _normal_serial(shape, gen, dtype, mean, std)
    elif dtype == np.float64:
        out = _rng().normal_f64(gen._u32(2 * _normal_draws(n)), n, float(mean), float(std))
    elif dtype == np.float32 and _KERNEL == "avx2":  # (the kernel's array is n float32: torch.randn(n) as it is)
        out = _rng().normal_avx2(gen._u32(_normal_draws(n)), n, _f32(mean), _f32(std))
        return out if len(shape) == 1 else out.reshape(shape)
    elif dtype == np.float32:
        out = _normal_fill(gen, n, lambda d: _box_muller16_f32(d, _f32(mean), _f32(std)))
    elif dtype == np.float16 or dtype.name == "bfloat16":
        # torch 2.13 draws ceil(n / 16) * 16 uniforms, transforms them in float32, and keeps all but the
        # elements just before the last 16.
        fill = _rng().box_muller16_avx2 if _KERNEL == "avx2" else _box_muller16_f32
        padded = fill(gen._u24(-(-n // 16) * 16).reshape(-1, 16), _f32(mean), _f32(std)).reshape(-1)
        out = np.concatenate([padded[:n - 16], padded[-16:]]).astype(dtype)
    else:
        raise TypeError(f"normal: unsupported dtype {dtype}")
    return np.ascontiguousarray(out, dtype).reshape(shape)


def _normal_serial(shape, gen, dtype, mean, std):
    """cpu_serial_kernel over at::normal_distribution<double>: one Box-Muller pair every second element (the cached
    value carries over between calls), then a cast to the tensor's dtype."""
    vals = np.array([gen._normal_double() for _ in range(_numel(shape))], np.float64)
    return np.ascontiguousarray(_madd(vals, std, mean, np.dtype(np.float64)).astype(dtype)).reshape(shape)


def _normal_draws(n):
    """How many elements' draws normal_fill takes for n >= 16: n, and 16 more when n % 16 (see _normal_fill)."""
    return n + 16 if n % 16 else n


def _normal_fill(gen, n, box_muller16):
    """normal_fill of n >= 16 float32 without AVX2: n uniforms, transformed 16 at a time (8 pairs: j and j + 8);
    when n % 16 != 0 the last 16 elements are redrawn and transformed again."""
    data = gen._u24(n)
    full = n // 16 * 16
    out = np.empty(n, _f32)
    out[:full] = box_muller16(data[:full].reshape(-1, 16)).reshape(-1)
    if n % 16:
        out[n - 16:] = box_muller16(gen._u24(16).reshape(1, 16)).reshape(-1)
    return out


def _libm_map(fn, x):
    flat = x.reshape(-1)
    return np.fromiter(map(fn, flat.tolist()), x.dtype, flat.size).reshape(x.shape)


@functools.cache
def _libm32():
    """libm's logf, cosf, sinf (torch's scalar float kernel calls them); NumPy's where libm cannot be loaded."""
    fns = [_libm.function(name, single=True) for name in ("logf", "cosf", "sinf")]
    if None in fns:
        return np.log, np.cos, np.sin
    return tuple(lambda x, fn=fn: _libm_map(fn, x) for fn in fns)


def _box_muller16_f32(d, mean, std):
    """normal_fill_16<float> (torch's scalar kernel)."""
    logf, cosf, sinf = _libm32()
    radius = np.sqrt(_f32(-2) * logf(_f32(1) - d[:, :8]))
    theta = (_TWO_PI * d[:, 8:].astype(np.float64)).astype(_f32)
    out = np.empty_like(d)
    out[:, :8] = _fma(radius * cosf(theta), std, mean, np.dtype(_f32))
    out[:, 8:] = _fma(radius * sinf(theta), std, mean, np.dtype(_f32))
    return out


# torch's AVX2 kernel (avx_mathfun.h's Cephes log256_ps and sincos256_ps) and the float64 kernel are
# compiled: kernels/rng.py.


# ---------------------------------------------------------------------------------------------- integers


def integers(low, high, shape, generator=None, dtype=np.int64):
    """torch.randint(low, high, shape): random() % (high - low) + low, or random64() when the range is
    2**28 or more (_WIDE, any dtype). No rejection: torch keeps the modulo bias."""
    low, high = int(low), int(high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dtype = np.dtype(dtype)
    if dtype.kind == "f":   # torch's update_from / update_to: low + 1 and high - 1 must survive a cast to dtype
        digits = np.finfo(dtype).nmant + 1
        low_plus_1 = int(np.array(low + 1, np.int64).astype(dtype))
        if low_plus_1 < low:
            low = low_plus_1 + (1 << (abs(low + 1).bit_length() - 1 - digits + 1))
        high_minus_1 = int(np.array(high - 1, np.int64).astype(dtype))
        if high_minus_1 >= high:
            high = high_minus_1 - (1 << (abs(high - 1).bit_length() - 1 - digits + 1))
        if low >= high:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, "
                               f"but got from={low} >= to={high}")
    gen = _gen(generator)
    n = _numel(shape)
    span = high - low
    raw = gen._u64(n) if span >= _WIDE else gen._u32(n)
    return ((raw % np.uint64(span)).astype(np.int64) + np.int64(low)).reshape(shape)


# uniform_int_from_to_distribution (ATen/core/DistributionsHelper.h): torch's released builds draw random64() for
# every dtype once the range reaches 2 ** 28 ("allow approx 5% skew"); only FBCODE builds keep the older 2 ** 32
# rule for int64 / float / double / bfloat16.
_WIDE = 1 << 28


def permutation(n, generator=None):
    """torch.randperm(n): Fisher-Yates from the front, swapping i with i + random() % (n - i)."""
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if n >= (1 << 32) // 20:
        raise NotImplementedError("randperm: n >= 2**32 / 20 (torch's random64 branch) is not supported")
    gen = _gen(generator)
    if n < 2:
        return np.arange(n, dtype=np.int64)
    offsets = (gen._u32(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
    perm = list(range(n))
    for i, z in enumerate(offsets):
        j = i + z
        perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm, np.int64)


# ---------------------------------------------------------------------------------------------- bernoulli


def bernoulli(p, generator=None):
    """torch.bernoulli(p) for a float32 or float64 array p: u < p with one float32 draw (24 bits) per element
    for float32 p, one float64 draw (53 bits) for float64 p. Returns 0/1 in p's dtype."""
    p = np.asarray(p)  # (not ascontiguousarray: it makes a 0-d array 1-d)
    if p.dtype not in (np.float32, np.float64):
        raise TypeError(f"bernoulli: p must be float32 or float64, got {p.dtype}")
    if p.size and not ((p >= 0).all() and (p <= 1).all()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                           "message be improved?  If so, please report an enhancement request to PyTorch.)")
    gen = _gen(generator)
    u = gen._u53(p.size) if p.dtype == np.float64 else gen._u24(p.size)
    return (u.reshape(p.shape) < p).astype(p.dtype)


def bernoulli_scalar(shape, p, generator=None, dtype=np.float32):
    """torch.empty(shape, dtype=dtype).bernoulli_(p) for a float p: torch's serial kernel,
    at::bernoulli_distribution<double>, one float64 draw (53 bits) per element, u < p."""
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")
    gen = _gen(generator)
    return (gen._u53(_numel(shape)) < p).astype(dtype).reshape(shape)


def dropout_mask(shape, p, generator=None, dtype=np.float32):
    """The keep-mask (0/1 in dtype) torch's CPU dropout draws: bernoulli_(1 - p) over shape; nothing is drawn
    for p == 0 (all ones) or p == 1 (all zeros)."""
    if p == 0:
        return np.ones(shape, dtype)
    if p == 1:
        return np.zeros(shape, dtype)
    return bernoulli_scalar(shape, 1 - p, generator, dtype)


# ---------------------------------------------------------------------------------------------- other fills
# torch's CPU kernels for these (DistributionTemplates.h's exponential/cauchy/log_normal/geometric kernels) are
# serial loops over at::*_distribution<double>: one float64 uniform (53 bits of random64()) or one cached
# Box-Muller normal per element, transformed in double with libm's functions, then cast to the tensor's dtype.
# math's functions are libm's (NumPy's may be its own SIMD versions, which can differ in the last bit).


def _check_continuous(dtype, name, cpp):
    dtype = np.dtype(dtype)
    if dtype.kind != "f" and dtype.name != "bfloat16":
        shown = _dtype.cpp_type_name(dtype) if cpp else _dtype.scalar_type_name(dtype)
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {shown}")


def _cast(x, dtype):
    """static_cast<scalar_t> of doubles or int64s: to float16 / bfloat16 through float (c10::Half's and
    c10::BFloat16's constructors take a float)."""
    dtype = np.dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # (out-of-range values overflow as torch's casts do)
        if dtype == np.float16 or dtype.name == "bfloat16":
            x = np.asarray(x).astype(np.float32)
        return np.asarray(x).astype(dtype)


def _not_implemented_for(kernel, dtype):
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype.scalar_type_name(dtype)}'")


def exponential(shape, lambd=1.0, generator=None, dtype=np.float32):
    """Tensor.exponential_(lambd): -1 / lambd * log1p(-u) per element (u a float64 uniform)."""
    if not (lambd > 0 and not math.isnan(lambd)):
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    _check_continuous(dtype, "Exponential", False)
    u = _gen(generator)._u53(_numel(shape))
    return _cast((-1.0 / lambd) * _libm_map(math.log1p, -u), dtype).reshape(shape)


def cauchy(shape, median=0.0, sigma=1.0, generator=None, dtype=np.float32):
    """Tensor.cauchy_(median, sigma): median + sigma * tan(pi * (u - 0.5))."""
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_g(sigma)}")
    _check_continuous(dtype, "Cauchy", True)
    u = _gen(generator)._u53(_numel(shape))
    t = _libm_map(math.tan, math.pi * (u - 0.5))
    return _cast(_madd(t, sigma, median, np.dtype(np.float64)), dtype).reshape(shape)


def log_normal(shape, mean=1.0, std=2.0, generator=None, dtype=np.float32):
    """Tensor.log_normal_(mean, std): exp(normal * std + mean), normal from at::normal_distribution<double>
    (Box-Muller pairs, the second value cached on the generator, as torch.randn's small fills)."""
    dtype = np.dtype(dtype)
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")
    if dtype.kind != "f" and dtype.name != "bfloat16":
        _not_implemented_for("log_normal_cpu", dtype)
    gen = _gen(generator)
    vals = np.array([gen._normal_double() for _ in range(_numel(shape))], np.float64)
    return _cast(_libm_map(math.exp, _madd(vals, std, mean, np.dtype(np.float64))), dtype).reshape(shape)


def geometric(shape, p, generator=None, dtype=np.float32):
    """Tensor.geometric_(p): ceil(log(u) / log1p(-p)) (any dtype but bool)."""
    dtype = np.dtype(dtype)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")
    if dtype == np.bool_:
        _not_implemented_for("geometric_cpu", dtype)
    u = _gen(generator)._u53(_numel(shape))
    logs = _libm_map(lambda v: math.log(v) if v > 0 else -math.inf, u)
    with np.errstate(all="ignore"):
        return _cast(np.ceil(logs / math.log1p(-p)), dtype).reshape(shape)


# random_: torch's random_kernel (no bounds), random_from_to_kernel and random_full_64_bits_range_kernel.

def _digits(dtype):
    """std::numeric_limits<T>::digits of a floating dtype."""
    return 8 if dtype.name == "bfloat16" else np.finfo(dtype).nmant + 1


def random_bits(shape, generator=None, dtype=np.int64):
    """Tensor.random_() with no bounds: uniform_int<T>: random64() for int64 and float64, random() otherwise;
    modulo max + 1 (integers), 2 ** digits + 1 (floats), & 1 (bool)."""
    dtype = np.dtype(dtype)
    gen = _gen(generator)
    n = _numel(shape)
    raw = gen._u64(n) if dtype in (np.int64, np.float64) else gen._u32(n)
    if dtype == np.bool_:
        return (raw & np.uint64(1)).astype(np.bool_).reshape(shape)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        span = (1 << _digits(dtype)) + 1
    elif dtype.kind in "iu":
        span = int(np.iinfo(dtype).max) + 1
    else:
        _not_implemented_for("random_kernel_cpu", dtype)
    return _cast((raw % np.uint64(span)).astype(np.int64), dtype).reshape(shape)


def _check_in_range(value, name, dtype):
    """torch's check_from_to_in_range for one bound (and its warning for floats past 2 ** digits)."""
    if dtype.kind == "f" or dtype.name == "bfloat16":
        lo, hi = -float(_limits_max(dtype)), float(_limits_max(dtype))
    elif dtype == np.bool_:
        lo, hi = 0, 1
    else:
        lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    if not lo <= value <= hi:
        raise RuntimeError(f"{name} is out of bounds for {_dtype.cpp_type_name(dtype)}")


def _warn_in_range(value, name, dtype):
    if dtype.kind == "f" or dtype.name == "bfloat16":
        d = _digits(dtype)
        if value < -(1 << d) or value > (1 << d):
            import warnings
            warnings.warn(f"{name} is out of bounds [-(2^{d}), 2^{d}]. Due to precision limitations "
                          f"{_dtype.cpp_type_name(dtype)} can support discrete uniform distribution only within "
                          f"this range. This warning will become an error in version 1.7 release, please fix the "
                          f"code in advance")


def _limits_max(dtype):
    return 3.3895313892515355e+38 if dtype.name == "bfloat16" else np.finfo(dtype).max


def _as_int64(v, dtype):
    """static_cast<int64_t>(static_cast<scalar_t>(v)); a value past the dtype's range (inf) gives x86's
    0x8000000000000000, as torch's conversion does there."""
    with np.errstate(all="ignore"):
        f = float(_cast(np.array(v, np.int64), dtype))
    return int(f) if math.isfinite(f) and -2.0 ** 63 <= f < 2.0 ** 63 else -(1 << 63)


def _update_from(low, dtype):
    digits = _digits(dtype)
    cast = _as_int64(low + 1, dtype)
    if cast < low:
        low = cast + (1 << (abs(low + 1).bit_length() - 1 - digits + 1))
    return low


def _update_to(high, dtype):
    digits = _digits(dtype)
    cast = _as_int64(high - 1, dtype)
    if cast >= high:
        high = cast - (1 << (abs(high - 1).bit_length() - 1 - digits + 1))
    return high


def random_range(shape, low, high=None, generator=None, dtype=np.int64):
    """Tensor.random_(from, to) (to=None: up to the dtype's largest integer, or its 2 ** digits for floats;
    from = -2**63 with to=None: the full 64-bit range), torch's checks and warnings in its order."""
    dtype = np.dtype(dtype)
    low = operator.index(low)
    is_float = dtype.kind == "f" or dtype.name == "bfloat16"
    if high is not None:
        high = operator.index(high)
        if low >= high:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
        if is_float:
            low, high = _update_from(low, dtype), _update_to(high, dtype)
            if low >= high:
                raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, "
                                   f"but got from={low} >= to={high}")
        to_inc = high - 1
    elif low != -(1 << 63):
        if is_float:
            to_inc = min(1 << _digits(dtype), (1 << 63) - 1)
            low = _update_from(low, dtype)
            if low >= to_inc:
                raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' "
                                   f"casted to dtype, but got from={low} > to_inc={to_inc}")
        elif dtype == np.bool_:
            to_inc = 1
        else:
            to_inc = int(np.iinfo(dtype).max)
    else:
        if dtype not in (np.int64, np.float64, np.float32) and dtype.name != "bfloat16":
            if dtype == np.bool_ or dtype == np.float16:
                _not_implemented_for("random_full_64_bits_range_kernel_cpu", dtype)
            raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, double, float and bfloat16")
        n = _numel(shape)
        return _cast(_gen(generator)._u64(n).astype(np.int64), dtype).reshape(shape)
    _check_in_range(low, "from", dtype)
    _check_in_range(to_inc, "to - 1", dtype)
    _warn_in_range(low, "from", dtype)
    _warn_in_range(to_inc, "to - 1", dtype)
    span = to_inc - low + 1
    gen = _gen(generator)
    n = _numel(shape)
    raw = gen._u64(n) if span >= _WIDE else gen._u32(n)
    vals = (raw % np.uint64(span)).astype(np.int64) + np.int64(low)   # (wraps as torch's int64 sum)
    return _cast(vals, dtype).reshape(shape)


# ---------------------------------------------------------------------------------------------- poisson


def _lgamma(x):
    """libm's lgamma (std::lgamma; math.lgamma is CPython's own)."""
    return (_libm.function("lgamma") or math.lgamma)(x)


def _floor_int64(v):
    """(int64_t)std::floor(v); x86's conversion gives 0x8000000000000000 for what int64 cannot hold."""
    return math.floor(v) if math.isfinite(v) and -2.0 ** 63 <= v < 2.0 ** 63 else -(1 << 63)


def _sample_poisson(lam, u53):
    """ATen's sample_poisson (native/Distributions.cpp), in double, compiled without FMA contraction: the
    transformed rejection method (Hoermann, 1993) for lam >= 10, multiplying uniforms below."""
    if not lam >= 0:  # (checked element by element, after the earlier elements' draws, as torch)
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if lam >= 10:
        slam = math.sqrt(lam)
        loglam = math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            U = u53() - 0.5
            V = u53()
            us = 0.5 - abs(U)
            k = _floor_int64((2 * a / us + b) * U + lam + 0.43)
            if us >= 0.07 and V <= vr:
                return k
            if k < 0 or (us < 0.013 and V > us):
                continue
            lhs = (math.log(V) if V > 0 else -math.inf) + math.log(invalpha) - math.log(a / (us * us) + b)
            if lhs <= -lam + k * loglam - _lgamma(k + 1.0):
                return k
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    x, prod = 0, 1.0
    while True:
        prod *= u53()
        if prod > enlam:
            x += 1
        else:
            return x


def require_float(kernel, dtype):
    """torch's refusal of a floating-point sampler on an integer or bool tensor (before any draw: the stream stays)."""
    if not _dtype.is_float(np.dtype(dtype)):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype.scalar_type_name(np.dtype(dtype))}\'')


def poisson(rates, generator=None):
    """torch.poisson(rates): one sample_poisson per element in C order (float64 uniforms drawn one at a time
    as it asks), cast to rates' dtype."""
    rates = np.asarray(rates)  # (not ascontiguousarray: it makes a 0-d array 1-d)
    flat = rates.reshape(-1).astype(np.float64).tolist()
    gen = _gen(generator)
    u53 = lambda: float(gen._u53(1)[0])  # noqa: E731
    out = [_sample_poisson(r, u53) for r in flat]
    return _cast(np.array(out, np.int64), rates.dtype).reshape(rates.shape)


# ---------------------------------------------------------------------------------------------- binomial
# ATen's sample_binomial<scalar_t, double> (native/Distributions.h, from TensorFlow's random_binomial_op): BTRS
# for count * p >= 10, inversion below, with the arithmetic in the types C++ gives each expression: scalar_t
# (float32 for float tensors) where both operands are scalar_t, double where a double meets it; compiled without
# FMA contraction. Python floats are the doubles, NumPy float32 scalars the floats.

def _log1pf(x):
    """std::log1p(float): libm's log1pf."""
    fn = _libm.function("log1pf", single=True)
    return _f32(fn(float(x))) if fn is not None else _f32(np.log1p(_f32(x)))


_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
         0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k):
    """stirling_approx_tail<double>(k)."""
    if k < 10:
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _binomial_inversion(count, prob, u53, T):
    logprob = float(_log1pf(-prob)) if T is _f32 else math.log1p(-prob)
    geom_sum = 0.0
    num_geom = T(0)
    while True:
        U = u53()
        geom = math.ceil(math.log(U) / logprob) if U > 0 else math.inf
        geom_sum += geom
        if geom_sum > float(count):
            break
        num_geom = T(num_geom + T(1))
    return num_geom


def _btrs(count, prob, u53, T):
    one = T(1)
    stddev = float(np.sqrt(T(T(count * prob) * T(one - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * float(prob)
    c = float(T(count * prob)) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(T(prob / T(one - prob)))
    alpha = (2.83 + 5.1 / b) * stddev
    m = float(np.floor(T(T(count + one) * prob)))
    fcount = float(count)
    while True:
        U = u53() - 0.5
        V = u53()
        us = 0.5 - abs(U)
        t = (2 * a / us + b) * U + c
        k = T(math.floor(t)) if math.isfinite(t) else T(t)   # static_cast<scalar_t>(floor(double))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and V <= v_r:
            return k
        V = math.log(V * alpha / (a / (us * us) + b)) if V > 0 else -math.inf
        fk = float(k)
        upperbound = ((m + 0.5) * math.log((m + 1) / (r * (fcount - m + 1)))
                      + float(T(count + one)) * math.log((fcount - m + 1) / float(T(T(count - k) + one)))
                      + (fk + 0.5) * math.log(r * float(T(T(count - k) + one)) / float(T(k + one)))
                      + _stirling_tail(m) + _stirling_tail(fcount - m)
                      - _stirling_tail(fk) - _stirling_tail(float(T(count - k))))
        if V <= upperbound:
            return k


def _sample_binomial(count, prob, u53, T):
    if count <= 0.0 or prob <= 0.0:
        return T(0)
    if prob >= 1.0:
        return count
    if not math.isfinite(count):  # (torch's inversion never ends for these; its BTRS loops too)
        return count
    if prob <= 0.5:
        if T(count * prob) >= 10.0:
            return _btrs(count, prob, u53, T)
        return _binomial_inversion(count, prob, u53, T)
    if prob > 0.5:
        qprob = T(1.0 - float(prob))
        if T(count * qprob) >= 10.0:
            return T(count - _btrs(count, qprob, u53, T))
        return T(count - _binomial_inversion(count, qprob, u53, T))
    return T(math.nan)


def binomial(count, prob, generator=None):
    """torch.binomial(count, prob): one sample_binomial per element of count's (broadcast) shape, in C order, in
    count's dtype (float32 or float64), the float64 uniforms drawn one at a time as it asks. A non-finite count
    returns itself (torch's sampler does not end there)."""
    count, prob = np.asarray(count), np.asarray(prob)
    T = _f32 if count.dtype == np.float32 else np.float64
    c, p = np.broadcast_arrays(count, prob)
    gen = _gen(generator)
    u53 = lambda: float(gen._u53(1)[0])  # noqa: E731
    with np.errstate(all="ignore"):
        out = [_sample_binomial(T(cv), T(pv), u53, T) for cv, pv in zip(c.reshape(-1).tolist(), p.reshape(-1).tolist())]
    return np.array(out, count.dtype).reshape(c.shape)
