"""tapegrad's random numbers against torch's CPU generator, bit for bit.

Both libraries are seeded alike and must then produce identical bits (float compare on the raw bytes, so
-0.0 vs 0.0 counts as a difference) and leave their generators in identical states (compared through the
5056-byte get_state()).
"""
import os
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch

import tapegrad
from tapegrad import random as R

REPO = Path(__file__).resolve().parents[1]
SEEDS = [0, 1, 42, 2 ** 32 + 7, 2 ** 63 + 5, -1]
SIZES = [(), (1,), (2,), (15,), (16,), (17,), (33,), (1000,), (3, 5, 7), (0,), (4, 0)]
DTYPES = [(torch.float32, tapegrad.float32), (torch.float64, tapegrad.float64), (torch.float16, tapegrad.float16)]


def arr(t):
    return np.asarray(t.detach().numpy())


def assert_same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if got.dtype.kind == "f":
        got, want = got.reshape(-1).view(f"u{got.itemsize}"), want.reshape(-1).view(f"u{want.itemsize}")
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} of {got.size} differ, first at {bad[:5]}"


def assert_same_state(tg_gen=None, torch_gen=None):
    tg_state = (tg_gen or R.default_generator).get_state()
    torch_state = (torch_gen or torch.default_generator).get_state()
    assert_same_bits(arr(tg_state), arr(torch_state))


def seed_both(seed):
    torch.manual_seed(seed)
    tapegrad.manual_seed(seed)


# ------------------------------------------------------------------------------ rand / randn


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtypes", DTYPES, ids=["float32", "float64", "float16"])
@pytest.mark.parametrize("fn", ["rand", "randn"])
def test_rand_randn_match_torch(fn, dtypes, size, seed):
    seed_both(seed)
    want = getattr(torch, fn)(size, dtype=dtypes[0])
    got = getattr(tapegrad, fn)(size, dtype=dtypes[1])
    assert_same_bits(arr(got), arr(want))
    assert_same_state()


def test_randn_default_dtype_and_size_keyword():
    seed_both(3)
    assert_same_bits(arr(tapegrad.randn(size=(4, 5))), arr(torch.randn(size=(4, 5))))
    assert_same_bits(arr(tapegrad.rand((2, 9))), arr(torch.rand((2, 9))))
    assert_same_bits(arr(tapegrad.randn([20])), arr(torch.randn([20])))


@pytest.mark.parametrize("seed", range(6))
def test_call_sequence_matches_torch(seed):
    seed_both(seed)
    steps = [
        ("randn", (3,), "float32"), ("rand", (20,), "float32"), ("randn", (5, 3), "float32"),
        ("randn", (1,), "float64"), ("randn", (17,), "float64"), ("randn", (), "float32"),
        ("rand", (3,), "float64"), ("randn", (7,), "float32"), ("randn", (64,), "float32"),
        ("randn", (2,), "float64"), ("rand", (1,), "float16"), ("randn", (31,), "float16"),
    ]
    for fn, size, dt in steps:
        want = getattr(torch, fn)(size, dtype=getattr(torch, dt))
        got = getattr(tapegrad, fn)(size, dtype=getattr(tapegrad, dt))
        assert_same_bits(arr(got), arr(want))
        assert_same_state()
    assert_same_bits(arr(tapegrad.randint(-3, 11, (9,))), arr(torch.randint(-3, 11, (9,))))
    assert_same_bits(arr(tapegrad.randperm(50)), arr(torch.randperm(50)))
    assert_same_bits(arr(tapegrad.randn(5)), arr(torch.randn(5)))
    assert_same_state()


def test_box_muller_cache_carries_over_between_calls():
    seed_both(11)
    # An odd count leaves the second value of the last pair cached; the 16+ path neither reads nor clears it.
    for size in [(1,), (16,), (1,), (3,), (40,), (2,), (1,)]:
        for dt in ("float32", "float64"):
            assert_same_bits(arr(tapegrad.randn(size, dtype=getattr(tapegrad, dt))),
                             arr(torch.randn(size, dtype=getattr(torch, dt))))
    assert_same_state()


def test_like_constructors():
    seed_both(5)
    x_tg, x_t = tapegrad.zeros(4, 6, dtype=tapegrad.float64), torch.zeros(4, 6, dtype=torch.float64)
    assert_same_bits(arr(tapegrad.randn_like(x_tg)), arr(torch.randn_like(x_t)))
    assert_same_bits(arr(tapegrad.rand_like(x_tg)), arr(torch.rand_like(x_t)))


# ------------------------------------------------------------------------------ generators


@pytest.mark.parametrize("seed", [0, 7, 2 ** 40 + 1])
def test_generator_objects_are_independent_of_the_default(seed):
    seed_both(123)
    g_tg, g_t = tapegrad.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    for size in [(3,), (20,), (5, 3)]:
        assert_same_bits(arr(tapegrad.randn(*size, generator=g_tg)), arr(torch.randn(*size, generator=g_t)))
        assert_same_bits(arr(tapegrad.rand(*size)), arr(torch.rand(*size)))
        assert_same_bits(arr(tapegrad.rand(*size, generator=g_tg, dtype=tapegrad.float64)),
                         arr(torch.rand(*size, generator=g_t, dtype=torch.float64)))
    assert_same_bits(arr(tapegrad.randint(0, 100, (12,), generator=g_tg)),
                     arr(torch.randint(0, 100, (12,), generator=g_t)))
    assert_same_bits(arr(tapegrad.randperm(30, generator=g_tg)), arr(torch.randperm(30, generator=g_t)))
    assert_same_state(g_tg, g_t)
    assert_same_state()
    assert g_tg.initial_seed() == g_t.initial_seed()


def test_unseeded_generator_uses_torchs_default_seed():
    g_tg, g_t = tapegrad.Generator(), torch.Generator()
    assert g_tg.initial_seed() == g_t.initial_seed() == 67280421310721
    assert_same_bits(arr(tapegrad.randn(20, generator=g_tg)), arr(torch.randn(20, generator=g_t)))
    assert_same_state(g_tg, g_t)


@pytest.mark.parametrize("seed", [-1, -2 ** 63, 2 ** 64 - 1, 2 ** 32, 12345])
def test_seed_values_wrap_like_torch(seed):
    assert tapegrad.manual_seed(seed) is R.default_generator
    torch.manual_seed(seed)
    assert tapegrad.initial_seed() == torch.initial_seed()
    assert_same_bits(arr(tapegrad.rand(5)), arr(torch.rand(5)))


@pytest.mark.parametrize("seed", [2 ** 64, -2 ** 63 - 1])
def test_seed_out_of_range_raises_like_torch(seed):
    with pytest.raises(ValueError) as want:
        torch.manual_seed(seed)
    with pytest.raises(ValueError) as got:
        tapegrad.manual_seed(seed)
    assert str(got.value) == str(want.value)


def test_seed_picks_a_fresh_seed():
    s = tapegrad.seed()
    assert tapegrad.initial_seed() == s and 0 <= s < 2 ** 64
    g = tapegrad.Generator()
    assert g.seed() == g.initial_seed()
    torch_gen = torch.Generator().manual_seed(s)
    tapegrad.manual_seed(s)
    assert_same_bits(arr(tapegrad.rand(4)), arr(torch.rand(4, generator=torch_gen)))


def test_state_round_trips_between_libraries():
    seed_both(9)
    tapegrad.randn(3)
    torch.randn(3)
    assert_same_state()
    saved = R.get_rng_state()
    first = arr(tapegrad.randn(25, dtype=tapegrad.float64))
    R.set_rng_state(saved)
    assert_same_bits(arr(tapegrad.randn(25, dtype=tapegrad.float64)), first)

    # torch's state (with a cached normal) loaded into tapegrad, and tapegrad's into torch
    torch.randn(5)
    g_tg = tapegrad.Generator().set_state(tapegrad.tensor(arr(torch.get_rng_state())))
    want = arr(torch.randn(7))
    assert_same_bits(arr(tapegrad.randn(7, generator=g_tg)), want)
    torch_gen = torch.Generator()
    torch_gen.set_state(torch.from_numpy(arr(g_tg.get_state()).copy()))
    assert_same_bits(arr(torch.rand(700, generator=torch_gen)), arr(tapegrad.rand(700, generator=g_tg)))


def test_state_after_block_boundaries():
    seed_both(21)
    for n in (621, 3, 1, 624, 1248, 2):
        tapegrad.rand(n)
        torch.rand(n)
        assert_same_state()


def test_set_state_errors_like_torch():
    g = tapegrad.Generator()
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 5056 but found the input "
                                           "RNG state size to be 10"):
        g.set_state(tapegrad.tensor(np.zeros(10, np.uint8)))
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(tapegrad.zeros(5056))
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        g.set_state(tapegrad.tensor(np.zeros(5056, np.uint8)))
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        torch.Generator().set_state(torch.zeros(5056, dtype=torch.uint8))


# ------------------------------------------------------------------------------ uniform_ / normal_ (nn.init)


@pytest.mark.parametrize("dtypes", DTYPES, ids=["float32", "float64", "float16"])
@pytest.mark.parametrize("bounds", [(-0.3, 0.3), (1.7, 3.9), (-2.2, 1.3), (0.1, 0.1000001), (1e8, 1e8 + 8), (2.0, 2.0)])
@pytest.mark.parametrize("n", [5, 16, 1000])
def test_uniform_bounds_match_uniform_(n, bounds, dtypes):
    seed_both(7)
    np_dtype = arr(torch.empty(0, dtype=dtypes[0])).dtype
    try:
        want = torch.empty(n, dtype=dtypes[0]).uniform_(*bounds)
    except RuntimeError as e:   # 1e8 is out of float16's range
        with pytest.raises(RuntimeError) as got:
            R.uniform((n,), None, np_dtype, *bounds)
        assert str(got.value) == str(e).split("\n")[0]
        return
    assert_same_bits(R.uniform((n,), None, np_dtype, *bounds), arr(want))
    assert_same_state()


@pytest.mark.parametrize("dtypes", DTYPES, ids=["float32", "float64", "float16"])
@pytest.mark.parametrize("params", [(0.0, 1.0), (0.3, 2.7), (-5.0, 0.02), (0.0, 0.02), (1.5, 0.0)])
@pytest.mark.parametrize("n", [1, 5, 16, 17, 1000])
def test_normal_mean_std_match_normal_(n, params, dtypes):
    seed_both(13)
    want = torch.empty(n, dtype=dtypes[0]).normal_(*params)
    got = R.normal((n,), None, arr(want).dtype, *params)
    assert_same_bits(got, arr(want))
    assert_same_state()


def test_uniform_and_normal_argument_errors_match_torch():
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=1"):
        R.uniform((3,), None, np.float32, 2.0, 1.0)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        R.normal((3,), None, np.float32, 0.0, -1.0)
    with pytest.raises(RuntimeError, match="uniform_ expects to return"):
        torch.empty(3).uniform_(2, 1)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        torch.empty(3).normal_(0, -1)


# ------------------------------------------------------------------------------ the compiled fused multiply-adds


def _round_f32(x):
    """The float32 nearest the Fraction x, ties to even (float(x) then float32 could round twice)."""
    f = np.float32(float(x))
    best = f
    for g in (np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(-np.inf))):
        d_best, d_g = abs(Fraction(float(best)) - x), abs(Fraction(float(g)) - x)
        if d_g < d_best or (d_g == d_best and int(g.view(np.int32)) % 2 == 0):
            best = g
    return best


def _fma_cases(dtype):
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(300).astype(dtype) for _ in range(3))
    one = dtype(1.0)
    if dtype == np.float32:
        # a * b = 1 + 2**-11 + 2**-24 is a float32 midpoint; a tiny c decides the rounding, which the float64
        # sum alone loses (it rounds back onto the midpoint).
        h = np.float32(1 + 2 ** -12)
        extra = [(h, h, np.float32(s * 2.0 ** -60)) for s in (1, -1)] + [(-h, h, np.float32(s * 2.0 ** -60)) for s in (1, -1)]
    else:
        h = 1 + 2.0 ** -27
        extra = [(h, h, s * 2.0 ** -200) for s in (1, -1)] + [(h, -h, s) for s in (1.0, -1.0)]
    extra += [(one, one, dtype(0.0)), (dtype(0.5), dtype(3.0), dtype(-1.5))]
    return list(zip(a, b, c)) + extra


def test_fma32_is_a_single_rounding():
    from tapegrad.kernels.rng import fma32
    for a, b, c in _fma_cases(np.float32):
        want = _round_f32(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))
        got = fma32(a, b, c)
        assert np.float32(got).view(np.int32) == want.view(np.int32), (a, b, c, got, want)


def test_fma64_is_a_single_rounding():
    from tapegrad.kernels.rng import fma64
    for a, b, c in _fma_cases(np.float64):
        want = float(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))
        got = fma64(float(a), float(b), float(c))
        assert np.float64(got).view(np.int64) == np.float64(want).view(np.int64), (a, b, c, got, want)


def test_importing_and_seeding_load_no_rng_kernel():
    # (the first draw loads Numba and the kernels: not `import tapegrad`)
    code = "import sys, tapegrad; tapegrad.manual_seed(3); assert 'numba' not in sys.modules, 'numba imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


# ------------------------------------------------------------------------------ randint / randperm


@pytest.mark.filterwarnings("ignore:to - 1 is out of bounds", "ignore:from is out of bounds")
@pytest.mark.parametrize("low,high", [(0, 10), (-5, 7), (0, 2 ** 33), (-2 ** 40, 2 ** 40), (3, 1000), (0, 1),
                                      (-2 ** 33 - 1, 5), (2 ** 34 + 3, 2 ** 35 + 1)])
@pytest.mark.parametrize("dtypes", [(torch.int64, tapegrad.int64), (torch.float32, tapegrad.float32),
                                    (torch.float64, tapegrad.float64)], ids=["int64", "float32", "float64"])
def test_randint_matches_torch(low, high, dtypes):
    seed_both(5)
    assert_same_bits(arr(tapegrad.randint(low, high, (50,), dtype=dtypes[1])),
                     arr(torch.randint(low, high, (50,), dtype=dtypes[0])))
    assert_same_bits(arr(tapegrad.randint(high, (2, 3))), arr(torch.randint(high, (2, 3))))
    assert_same_state()


def test_randint_int32_and_empty():
    seed_both(2)
    assert_same_bits(arr(tapegrad.randint(3, 1000, (40,), dtype=tapegrad.int32)),
                     arr(torch.randint(3, 1000, (40,), dtype=torch.int32)))
    assert_same_bits(arr(tapegrad.randint(0, 5, (0,))), arr(torch.randint(0, 5, (0,))))
    assert_same_state()


def test_randint_empty_range_raises_like_torch():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=5"):
        R.integers(5, 5, (3,))
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=5"):
        torch.randint(5, 5, (3,))


@pytest.mark.parametrize("n", [0, 1, 2, 5, 100, 1000, 100000])
def test_randperm_matches_torch(n):
    seed_both(9)
    assert_same_bits(arr(tapegrad.randperm(n)), arr(torch.randperm(n)))
    assert_same_state()


# ------------------------------------------------------------------------------ bernoulli / dropout


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bernoulli_tensor_p_matches_torch(dtype):
    p = np.random.default_rng(0).random(1000).astype(dtype)
    p[:3] = [0.0, 1.0, 0.5]
    seed_both(3)
    assert_same_bits(R.bernoulli(p), arr(torch.bernoulli(torch.from_numpy(p))))
    g_tg, g_t = tapegrad.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    assert_same_bits(R.bernoulli(p.reshape(10, 100), g_tg),
                     arr(torch.bernoulli(torch.from_numpy(p.reshape(10, 100)), generator=g_t)))
    assert_same_state()
    assert_same_state(g_tg, g_t)


@pytest.mark.parametrize("dtypes", [(torch.float32, np.float32), (torch.float64, np.float64)])
def test_bernoulli_scalar_matches_bernoulli_(dtypes):
    seed_both(3)
    assert_same_bits(R.bernoulli_scalar((7, 9), 0.3, None, dtypes[1]),
                     arr(torch.empty(7, 9, dtype=dtypes[0]).bernoulli_(0.3)))
    assert_same_state()


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        R.bernoulli_scalar((2,), 1.5)
    with pytest.raises(RuntimeError, match=r"Expected p_in >= 0 && p_in <= 1 to be true"):
        R.bernoulli(np.array([1.5], np.float32))


@pytest.mark.parametrize("p", [0.0, 0.2, 0.5, 1.0])
@pytest.mark.parametrize("dtypes", [(torch.float32, np.float32), (torch.float64, np.float64)])
def test_dropout_mask_reproduces_torch_dropout(p, dtypes):
    x = np.random.default_rng(1).standard_normal((6, 50)).astype(dtypes[1])
    seed_both(17)
    want = arr(torch.nn.functional.dropout(torch.from_numpy(x), p, training=True))
    mask = R.dropout_mask(x.shape, p, None, dtypes[1])
    got = x * (mask / dtypes[1](1 - p)) if p < 1 else x * mask
    assert_same_bits(got, want)
    assert_same_state()
    # feature dropout draws one value per (N, C)
    want = arr(torch.nn.functional.dropout2d(torch.from_numpy(x.reshape(2, 3, 5, 10)), p, training=True))
    mask = R.dropout_mask((2, 3, 1, 1), p, None, dtypes[1])
    got = x.reshape(2, 3, 5, 10) * (mask / dtypes[1](1 - p)) if p < 1 else x.reshape(2, 3, 5, 10) * mask
    assert_same_bits(got, want)
    assert_same_state()


# ------------------------------------------------------------------------------ torch's scalar kernels


def test_scalar_cpu_kernels_match_torch_with_default_capability():
    """ATEN_CPU_CAPABILITY=default makes torch use its scalar kernels (libm logf/cosf/sinf, no FMA
    contraction); tapegrad reads the same variable. Run in a fresh process: torch reads it once."""
    script = textwrap.dedent("""
        import numpy as np, torch, tapegrad
        from tapegrad import random as R
        assert torch.backends.cpu.get_cpu_capability() == "DEFAULT", torch.backends.cpu.get_cpu_capability()
        assert R._KERNEL == "default" and not R._FUSED
        bad = []
        for seed in (0, 5):
            for n in (5, 16, 17, 200):
                for tdt, ndt in ((torch.float32, np.float32), (torch.float64, np.float64), (torch.float16, np.float16)):
                    for mean, std in ((0.0, 1.0), (0.3, 2.7)):
                        torch.manual_seed(seed); tapegrad.manual_seed(seed)
                        want = torch.empty(n, dtype=tdt).normal_(mean, std).numpy()
                        if not np.array_equal(R.normal((n,), None, ndt, mean, std), want):
                            bad.append(("normal", seed, n, str(tdt), mean))
                        want = torch.empty(n, dtype=tdt).uniform_(-mean, std).numpy()
                        if not np.array_equal(R.uniform((n,), None, ndt, -mean, std), want):
                            bad.append(("uniform", seed, n, str(tdt), mean))
        print(bad)
        assert not bad
    """)
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", script], check=False, env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_bernoulli_scalar_takes_the_serial_kernel_on_every_cpu():
    """torch 2.13's released builds never take MKL's bernoulli (DistributionKernels.cpp compiles it out,
    pytorch#132395), whatever the CPU's vendor or vector width; the stream is one float64 draw per element.
    Forcing another ATen capability must not change torch's answer (checked in a fresh process)."""
    script = textwrap.dedent("""
        import numpy as np, torch
        from tapegrad import random as R
        torch.manual_seed(9); R.manual_seed(9)
        want = torch.empty(3000, dtype=torch.float32).bernoulli_(0.37).numpy()
        assert np.array_equal(R.bernoulli_scalar((3000,), 0.37, None, np.float32), want)
        print(torch.backends.cpu.get_cpu_capability())
    """)
    for capability in ("default", "avx2", ""):
        env = dict(os.environ, ATEN_CPU_CAPABILITY=capability, PYTHONPATH=str(REPO))
        done = subprocess.run([sys.executable, "-c", script], check=False, env=env, cwd=REPO, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr


# -- fills of tensors that are not contiguous: torch walks their memory ---------------------------------------------
LAYOUTS = {
    "transpose": lambda L, dt: L.ones(4, 5, 8, dtype=dt).transpose(0, 1),
    "t": lambda L, dt: L.ones(7, 20, dtype=dt).t(),
    "permute": lambda L, dt: L.ones(2, 3, 4, 5, dtype=dt).permute(0, 2, 3, 1),
    "strided": lambda L, dt: L.ones(40, 3, dtype=dt)[::2],
    "contiguous": lambda L, dt: L.ones(6, 7, dtype=dt),
}
FILLS = {
    "uniform_": lambda L, t: t.uniform_(-1, 2),
    "normal_": lambda L, t: t.normal_(0.5, 2.0),
    "bernoulli_": lambda L, t: t.bernoulli_(0.3),
    "bernoulli_tensor": lambda L, t: t.bernoulli_(L.linspace(0, 1, t.numel(), dtype=t.dtype).reshape(t.shape)),
    "random_": lambda L, t: t.random_(0, 100),
    "exponential_": lambda L, t: t.exponential_(),
    "dropout": lambda L, t: L.nn.functional.dropout(t, 0.4),
    "rand_like": lambda L, t: L.rand_like(t),
    "randn_like": lambda L, t: L.randn_like(t),
    "randint_like": lambda L, t: L.randint_like(t, 10),
    "init.normal_": lambda L, t: L.nn.init.normal_(t, 0, 2),
    "init.uniform_": lambda L, t: L.nn.init.uniform_(t),
    "init.trunc_normal_": lambda L, t: L.nn.init.trunc_normal_(t, std=0.5, a=-0.6, b=0.4),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("fill", sorted(FILLS))
def test_fills_walk_a_tensors_memory_as_torchs(fill, layout, dtype):
    """A fill's draws land in the tensor's memory order (torch's TensorIterator), and normal_ of a tensor that is
    not contiguous draws one double at a time (its serial kernel): a transposed tensor's dropout mask, a
    batch_first attention output's (the vision transformer example's), differed from torch's."""
    results = []
    for L in (torch, tapegrad):
        L.manual_seed(11)
        t = LAYOUTS[layout](L, getattr(L, dtype))
        out = FILLS[fill](L, t)
        results.append((arr(out), out.stride(), L.rand(3)))
    assert_same_bits(results[1][0], results[0][0])
    if fill != "dropout":  # (x * mask: tapegrad's elementwise results are contiguous, docs/compatibility.md)
        assert results[1][1] == results[0][1]
    assert_same_bits(arr(results[1][2]), arr(results[0][2]))  # (the generators moved alike)


def test_samplers_of_0d_tensors_keep_their_shape_as_torch():
    """poisson and bernoulli of a 0-d tensor are 0-d (NumPy's ascontiguousarray made them 1-d)."""
    seen = []
    for L in (tapegrad, torch):
        L.manual_seed(3)
        draws = [L.poisson(L.tensor(3.5)), L.bernoulli(L.tensor(0.5)), L.bernoulli(L.tensor(0.5, dtype=L.float64)),
                 L.binomial(L.tensor(5.0), L.tensor(0.3))]
        seen.append([(tuple(d.shape), d.item()) for d in draws])
    assert seen[0] == seen[1]


INTEGER_SAMPLERS = {"normal_": lambda L, t: t.normal_(), "uniform_": lambda L, t: t.uniform_(),
                    "bernoulli": lambda L, t: L.bernoulli(t), "standard_gamma": lambda L, t: L._standard_gamma(t),
                    "dirichlet": lambda L, t: L._sample_dirichlet(t),
                    "Normal": lambda L, t: L.distributions.Normal(t, 1.0).sample()}


@pytest.mark.parametrize("name", sorted(INTEGER_SAMPLERS))
def test_float_samplers_refuse_integer_tensors_as_torch(name):
    """torch's NotImplementedError, before any draw (the generator stays in step); they filled integers."""
    seen = []
    for L in (tapegrad, torch):
        L.manual_seed(0)
        row = []
        for dtype in (L.long, L.int32, L.bool):
            try:
                INTEGER_SAMPLERS[name](L, L.ones(3, dtype=dtype))
                row.append(None)
            except NotImplementedError as e:
                row.append(str(e))
        seen.append((row, L.rand(2).tolist()))
    assert seen[0] == seen[1] and None not in seen[0][0]


def test_fork_rng_restores_the_stream_as_torch():
    def run(L):
        L.manual_seed(0)
        with L.random.fork_rng():
            L.manual_seed(5)
            inside = L.rand(1).item()
        after = L.rand(1).item()
        with L.random.fork_rng(enabled=False):
            L.rand(1)
        try:
            with L.random.fork_rng(devices=[]):
                L.rand(3)
                raise ValueError
        except ValueError:
            pass
        return inside, after, L.rand(1).item()
    assert run(tapegrad) == run(torch)


def test_snapshot_and_restore_put_back_every_part_of_the_state():
    """tapegrad.compile saves a drawing call's generator state by Generator._snapshot (NumPy's raw MT19937 struct,
    checked once against NumPy's reported state) and puts it back by _restore: the draws after it, Box-Muller's
    cached second value and get_state all come back."""
    g = tapegrad.Generator().manual_seed(11)
    tapegrad.randn(3, generator=g)
    tapegrad.normal(0.0, 1.0, (1,), generator=g)  # (a scalar path that may cache Box-Muller's second value)
    snap, state = g._snapshot(), g.get_state()

    def draws():
        return [tapegrad.randn(5, generator=g), tapegrad.rand(4, generator=g),
                tapegrad.normal(0.0, 1.0, (1,), generator=g)]
    first = draws()
    g._restore(snap)
    assert tapegrad.equal(g.get_state(), state)
    again = draws()
    for a, b in zip(first, again):
        assert tapegrad.equal(a, b)
