"""The ops torch.distributions calls that tapegrad's op table lacks, kept private to this package.

Each follows ATen's CPU code, so values, gradients and random draws are torch's:

- lgamma, digamma, xlogy, gammainc: the public ops (tapegrad.ops.special), re-exported for the distributions.
- standard_gamma (torch._standard_gamma) and sample_dirichlet (torch._sample_dirichlet): ATen's sample_gamma
  (Marsaglia-Tsang, from NumPy) fed by the generator's float64 uniforms and Box-Muller normals, in the same
  order, so the streams are torch's; their reparameterized gradients are ATen's standard_gamma_grad_one and
  dirichlet_grad_one.
- multinomial(probs_2d, n, replacement=True): ATen's CPU algorithm (one sample or no replacement: argmax /
  top-n of p / Exp(1) draws; several with replacement: a binary search of the normalised cumulative sum per
  float64 uniform).
- normal(mean, std), bernoulli(p) with tensor parameters; tapegrad.linalg's cholesky and solve_triangular.

The loops are per element in Python: a Gamma, Beta or Dirichlet variate costs about 3-5 us.
"""
import math

import numpy as np

from .. import random as _random
from ..autograd.function import Function, once_differentiable
from ..linalg import cholesky, solve_triangular  # noqa: F401  (cholesky re-exported: multivariate_normal uses it)
from ..ops.special import digamma, lgamma, xlogy  # noqa: F401  (re-exported: beta, gamma, dirichlet, kl use them)
from ..ops.special import special_gammainc as gammainc  # noqa: F401  (re-exported: Gamma.cdf)
from ..tensor import _new

_f32 = np.float32


# ---------------------------------------------------------------------------------------------- gamma


class _Draws:
    """The generator's float64 uniforms and Box-Muller normals for a per-element loop, one Python int at a
    time: raw words are fetched in blocks, and `close()` puts the generator exactly where drawing them one by
    one would have left it (the words consumed, the cached second normal)."""

    _BLOCK = 4096

    def __init__(self, gen):
        self.gen = gen
        self.state = gen._bits.state
        self.words = []
        self.pos = 0        # next unread word in self.words
        self.consumed = 0   # words consumed before self.words
        self.next_normal = gen._next_normal

    def uniform(self):
        """at::uniform_real_distribution<double>(0, 1): 53 low bits of random64() (high word first)."""
        if self.pos + 2 > len(self.words):
            self.words = self.words[self.pos:] + self.gen._bits.random_raw(self._BLOCK).tolist()
            self.consumed += self.pos
            self.pos = 0
        hi, lo = self.words[self.pos], self.words[self.pos + 1]
        self.pos += 2
        return (((hi << 32) | lo) & 0x1FFFFFFFFFFFFF) * 2.0 ** -53

    def normal(self):
        """at::normal_distribution<double>(0, 1), with the generator's cached second value."""
        if self.next_normal is not None:
            v, self.next_normal = self.next_normal, None
            return v
        u1 = self.uniform()
        u2 = self.uniform()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self.next_normal = r * math.sin(theta)
        return r * math.cos(theta)

    def close(self):
        self.gen._bits.state = self.state
        self.gen._u32(self.consumed + self.pos)
        self.gen._next_normal = self.next_normal


_ONE_THIRD_F = float(_f32(1.0) / _f32(3.0))   # the literal 1.0f / 3.0f
_C0331_F = float(_f32(0.0331))                 # the literal 0.0331f


def _sample_gamma(alpha, draws, single):
    """ATen's sample_gamma<scalar_t, double> for one alpha (a Python float holding a scalar_t value); `single`
    when scalar_t is float (the few operations ATen does in scalar_t are then done in float32)."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        inv = float(_f32(1.0) / _f32(alpha)) if single else 1.0 / alpha
        scale *= math.pow(1.0 - draws.uniform(), inv)
        alpha = float(_f32(alpha) + _f32(1.0)) if single else alpha + 1.0
    d = float(_f32(alpha) - _f32(_ONE_THIRD_F)) if single else alpha - _ONE_THIRD_F
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = draws.normal()
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1.0 - draws.uniform()
        xx = x * x
        if u < 1.0 - _C0331_F * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def _gammas(alphas, generator, single):
    """One sample_gamma per alpha, in order, from the generator's stream."""
    draws = _Draws(_random._gen(generator))
    try:
        return [_sample_gamma(a, draws, single) for a in alphas]
    finally:
        draws.close()


def standard_gamma_np(alpha, generator=None):
    """torch._standard_gamma on the CPU: one sample per element in C order, max(sample, tiny) in alpha's dtype."""
    alpha = np.asarray(alpha)
    vals = _gammas(np.ascontiguousarray(alpha).reshape(-1).tolist(), generator, alpha.dtype == _f32)
    out = np.array(vals, np.float64).astype(alpha.dtype).reshape(alpha.shape)
    return np.maximum(out, np.finfo(alpha.dtype).tiny)


def sample_dirichlet_np(alpha, generator=None):
    """torch._sample_dirichlet on the CPU: float64 gamma draws, normalised over the last dim, clamped into
    [tiny, nextafter(1, 0)] of alpha's dtype. The normalising sum is taken in order, as torch's is for fewer
    than 4 categories; for more, torch's vectorised sum may round differently (by an ulp, CPU-dependent)."""
    alpha = np.asarray(alpha)
    vals = _gammas(np.ascontiguousarray(alpha, np.float64).reshape(-1).tolist(), generator, False)
    gamma = np.maximum(np.array(vals, np.float64).reshape(alpha.shape), np.finfo(np.float64).tiny)
    total = gamma.sum(-1, keepdims=True)
    out = (gamma / total).astype(alpha.dtype)
    return np.clip(out, np.finfo(alpha.dtype).tiny, np.nextafter(alpha.dtype.type(1), alpha.dtype.type(0)))


def _digamma_scalar(x):
    """ATen's digamma_one<double> (Distributions.h)."""
    if x == 0:
        return math.inf
    additional = 0.0
    if x < 0:
        if x == math.floor(x):
            return math.inf
        additional = -math.pi / math.tan(math.pi * x)
        x = 1 - x
    result = 0.0
    while x < 10:
        result -= 1 / x
        x += 1
    if x == 10:
        return result + 2.25175258906672110764 + additional
    coef = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
            -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
            8.33333333333333333333E-2)
    y = 0.0
    if x < 1.0e17:
        z = 1.0 / (x * x)
        p = 0.0
        for c in coef:
            p = p * z + c
        y = z * p
    return result + math.log(x) - (0.5 / x) - y + additional


_GAMMA_UV = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
             (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915,
              -0.00058392623),
             (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326,
              0.00085092367, -1.5247877e-07))


def _standard_gamma_grad_one(alpha, x):
    """ATen's standard_gamma_grad_one<scalar_t, double>: d sample / d alpha for x ~ Gamma(alpha, 1)."""
    if x < 0.8:
        numer, denom = 1.0, alpha
        series1 = numer / denom
        series2 = numer / (denom * denom)
        for i in range(1, 6):
            numer *= -x / i
            denom += 1
            series1 += numer / denom
            series2 += numer / (denom * denom)
        pow_x_alpha = math.pow(x, alpha)
        gamma_pdf = math.pow(x, alpha - 1) * math.exp(-x)
        gamma_cdf = pow_x_alpha * series1
        gamma_cdf_alpha = (math.log(x) - _digamma_scalar(alpha)) * gamma_cdf - pow_x_alpha * series2
        try:
            result = -gamma_cdf_alpha / gamma_pdf
        except ZeroDivisionError:
            result = math.nan if gamma_cdf_alpha == 0 else -math.copysign(math.inf, gamma_cdf_alpha)
        return 0.0 if math.isnan(result) else result
    if alpha > 8.0:
        if 0.9 * alpha <= x <= 1.1 * alpha:
            numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
            numer_2 = (1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
                       + alpha * (107 + 3600 * x))
            denom = 1244160 * (alpha * alpha) * (alpha * alpha)
            return numer_1 * numer_2 / denom
        denom = math.sqrt(8 * alpha)
        term2 = denom / (alpha - x)
        term3 = math.pow(x - alpha - alpha * math.log(x / alpha), -1.5)
        term23 = term2 - term3 if x < alpha else term2 + term3
        term1 = math.log(x / alpha) * term23 - math.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        return -stirling * (x * term1) / denom
    u = math.log(x / alpha)
    v = math.log(alpha)
    c = [_GAMMA_UV[0][i] + u * (_GAMMA_UV[1][i] + u * _GAMMA_UV[2][i]) for i in range(8)]
    p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
    q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
    return math.exp(p / q)


def standard_gamma_grad_np(alpha, x):
    alpha, x = np.broadcast_arrays(np.asarray(alpha), np.asarray(x))
    vals = [_standard_gamma_grad_one(a, s) for a, s in zip(alpha.reshape(-1).tolist(), x.reshape(-1).tolist())]
    return np.array(vals, np.float64).astype(x.dtype).reshape(x.shape)


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha):
        x = _new(standard_gamma_np(alpha._data))
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * _new(standard_gamma_grad_np(alpha._data, x._data))


def standard_gamma(alpha):
    return _StandardGamma.apply(alpha)


def _beta_grad_alpha_small(x, alpha, beta):
    factor = _digamma_scalar(alpha) - _digamma_scalar(alpha + beta) - math.log(x)
    numer = 1.0
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer *= (i - beta) * x / i
        denom = alpha + i
        series += numer / denom * (factor + 1 / denom)
    result = x * math.pow(1 - x, -beta) * series
    return 0.0 if math.isnan(result) else result


def _beta_grad_beta_small(x, alpha, beta):
    factor = _digamma_scalar(alpha + beta) - _digamma_scalar(beta)
    numer, betas, dbetas, series = 1.0, 1.0, 0.0, factor / alpha
    for i in range(1, 9):
        numer *= -x / i
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series += numer / (alpha + i) * (dbetas + factor * betas)
    result = -math.pow(1 - x, 1 - beta) * series
    return 0.0 if math.isnan(result) else result


def _beta_grad_alpha_mid(x, alpha, beta):
    total = alpha + beta
    mean = alpha / total
    std = math.sqrt(alpha * beta / (total + 1)) / total
    if mean - 0.1 * std <= x <= mean + 0.1 * std:
        poly = (47 * x * (beta * beta) * (beta * beta) + alpha * (
                (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
                3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                8 * (1 - x) * (135 * beta - 11))))))
        prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
        prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
        return prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / math.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1_den = math.sqrt(2 * alpha / beta) * math.pow(total, 1.5) * axbx * axbx
    term1 = term1_num / term1_den
    term2 = 0.5 * math.log(alpha / (total * x))
    term3_num = math.sqrt(8 * alpha * beta / total)
    term3_den = beta * x + alpha * (x - 1)
    term3 = term3_num / term3_den
    term4_base = beta * math.log(beta / (total * (1 - x))) + alpha * math.log(alpha / (total * x))
    term4 = math.pow(term4_base, -1.5)
    term1234 = term1 + term2 * (term3 + (term4 if x < mean else -term4))
    return stirling * prefactor * term1234


_DIRICHLET_C = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))),
)


def _dirichlet_grad_one(x, alpha, total):
    """ATen's dirichlet_grad_one<scalar_t, double> (evaluated in float64)."""
    beta = total - alpha
    boundary = total * x * (1 - x)
    if x <= 0.5 and boundary < 2.5:
        return _beta_grad_alpha_small(x, alpha, beta)
    if x >= 0.5 and boundary < 0.75:
        return -_beta_grad_beta_small(1 - x, beta, alpha)
    if alpha > 6 and beta > 6:
        return _beta_grad_alpha_mid(x, alpha, beta)
    u = math.log(x)
    a = math.log(alpha) - u
    b = math.log(total) - a
    pow_u = (1.0, u, u * u)
    pow_a = (1.0, a, a * a)
    p = q = 0.0
    for i in range(3):
        for j in range(3):
            ua = pow_u[i] * pow_a[j]
            c0, c1 = _DIRICHLET_C[0][i][j], _DIRICHLET_C[1][i][j]
            p += ua * (c0[0] + b * (c0[1] + b * (c0[2] + b * c0[3])))
            q += ua * (c1[0] + b * (c1[1] + b * (c1[2] + b * c1[3])))
    approx = x * (_digamma_scalar(total) - _digamma_scalar(alpha)) / beta
    return p / q * approx


def dirichlet_grad_np(x, alpha, total):
    x, alpha, total = np.broadcast_arrays(np.asarray(x), np.asarray(alpha), np.asarray(total))
    vals = [_dirichlet_grad_one(*t) for t in zip(x.reshape(-1).tolist(), alpha.reshape(-1).tolist(),
                                                   total.reshape(-1).tolist())]
    return np.array(vals, np.float64).astype(x.dtype).reshape(x.shape)


class _Dirichlet(Function):
    """torch.distributions.dirichlet._Dirichlet: a sample whose gradient is the implicit reparameterization."""

    @staticmethod
    def forward(ctx, concentration):
        x = _new(sample_dirichlet_np(concentration._data))
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        c = concentration._data
        total = np.broadcast_to(c.sum(-1, keepdims=True), c.shape)
        grad = _new(dirichlet_grad_np(x._data, c, total))
        return grad * (grad_output - (x * grad_output).sum(-1, True))


def rsample_dirichlet(concentration):
    return _Dirichlet.apply(concentration)


# ---------------------------------------------------------------------------------------------- sampling


def normal_np(mean, std):
    """torch.normal(mean, std) for arrays: a standard normal of the broadcast shape, times std, plus mean."""
    mean, std = np.asarray(mean), np.asarray(std)
    _random.require_float("normal_kernel_cpu", np.result_type(mean, std))
    if std.size and not (std >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    shape = mean.shape if mean.shape == std.shape else np.broadcast_shapes(mean.shape, std.shape)
    dtype = np.result_type(mean, std)
    out = _random.normal(shape, None, dtype)
    out = out * std.astype(dtype)
    return (out + mean.astype(dtype)).astype(dtype)


def bernoulli_np(p):
    return _random.bernoulli(np.ascontiguousarray(p))


def solve_lower(L, B):
    """torch.linalg.solve_triangular(L, B, upper=False): L^-1 B."""
    return solve_triangular(L, B, upper=False)
