"""torch.nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal, built on parametrize.

Composed of tapegrad's ops, so gradients flow to the originals (`parametrizations.weight.original`, or
`original0` / `original1` for weight_norm's g and v, as torch names them).
"""
from enum import Enum, auto

import numpy as np

from ... import _dtype, creation, linalg, ops
from ...grad_mode import no_grad
from ...tensor import Tensor, _new
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d  # (tapegrad has no ConvTranspose3d)
from ..modules.module import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_orthogonal(Q, eps=None):
    n, k = Q.size(-2), Q.size(-1)
    Id = creation.eye(k, dtype=Q.dtype)
    eps = 10.0 * n * _dtype.finfo(Q.dtype).eps
    return bool(ops.allclose(Q.mH @ Q, Id, atol=eps))


def _make_orthogonal(A):
    """A tall: the Q of A = QR with diag(R) >= 0 (torch: geqrf + householder_product, LAPACK's geqrf + orgqr,
    which is what linalg.qr runs)."""
    Q, R = linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _householder_product(A, tau):
    """torch.linalg.householder_product of real A (..., n, k) and tau (..., k): the first k columns of
    H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^T, v_i = (0, ..., 0, 1, A[i+1:, i]). Differentiable in A and tau."""
    n, k = A.size(-2), A.size(-1)
    Q = creation.eye(n, k, dtype=A.dtype).expand(*A.shape[:-2], n, k)
    rows = np.arange(n)
    for i in reversed(range(k)):
        below = _new((rows > i).astype(A._data.dtype))
        unit = _new((rows == i).astype(A._data.dtype))
        v = A[..., :, i] * below + unit                       # (..., n)
        vtQ = v.unsqueeze(-2) @ Q                             # (..., 1, k)
        Q = Q - tau[..., i].unsqueeze(-1).unsqueeze(-1) * (v.unsqueeze(-1) @ vtQ)
    return Q


def _geqrf(A):
    """torch.geqrf of real A (..., m, n) (LAPACK's geqrf, as numpy's qr(mode='raw') returns it)."""
    a = A._data
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    hs, taus = [], []
    for m in flat:
        h, tau = np.linalg.qr(m, mode="raw")
        hs.append(h.T)
        taus.append(tau)
    k = min(a.shape[-2:])
    h = np.stack(hs).reshape(a.shape).astype(a.dtype) if hs else np.zeros(a.shape, a.dtype)
    tau = np.stack(taus).reshape(batch + (k,)).astype(a.dtype) if taus else np.zeros(batch + (k,), a.dtype)
    return _new(np.ascontiguousarray(h)), _new(tau)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    base: Tensor

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        if weight.is_complex():
            raise NotImplementedError("tapegrad: orthogonal() of a complex tensor (unitary parametrization) is "
                                      "not supported")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map == _OrthMaps.matrix_exp or self.orthogonal_map == _OrthMaps.cayley:
            X = X.tril()
            if n != k:
                X = ops.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = ops.matrix_exp(A)
            else:
                Id = creation.eye(n, dtype=A.dtype)
                Q = linalg.solve(ops.add(Id, A, alpha=-0.5), ops.add(Id, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map == _OrthMaps.cayley or self.orthogonal_map == _OrthMaps.matrix_exp:
                    raise NotImplementedError("It is not possible to assign to the matrix exponential "
                                              "or the Cayley parametrizations when use_trivialization=False.")
                A, tau = _geqrf(Q)
                a = A._data
                d = np.arange(min(a.shape[-2:]))
                diag = np.sign(a[..., d, d])
                diag[tau._data == 0.0] *= -1
                a[..., d, d] = diag
                return A.mT if transpose else A
            if n == k:
                if not _is_orthogonal(Q):
                    Q = _make_orthogonal(Q)
                else:
                    Q = Q.clone()
            else:
                N = creation.randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype)
                Q = ops.cat([Q, N], dim=-1)
                Q = _make_orthogonal(Q)
            self.base = Q
            neg_id = np.zeros(Q_init.shape, Q_init._data.dtype)
            d = np.arange(min(Q_init.shape[-2:]))
            neg_id[..., d, d] = -1.0
            return _new(neg_id)


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Make `module.<name>` (a matrix or a batch of them) orthogonal: Q^T Q = I (m >= n) or Q Q^T = I, through
    matrix_exp / cayley (default for square matrices) or householder (default otherwise). Real tensors only."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.size(-2) == weight.size(-1) or weight.is_complex()
                          else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        weight_g = norm_except_dim(weight, 2, self.dim)
        weight_v = weight
        return weight_g, weight_v


def weight_norm(module, name="weight", dim=0):
    """`module.<name>` = g * v / ||v|| (norm over every dim but `dim`; dim=None: the whole tensor), with g and v
    as `parametrizations.<name>.original0` / `original1`; loads the old `<name>_g` / `<name>_v` state_dicts."""
    _weight_norm_module = _WeightNorm(dim)
    parametrize.register_parametrization(module, name, _weight_norm_module, unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs):
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            with no_grad():  # (torch draws them from a weight that may require grad: normal_ records nothing)
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if weight.ndim <= 1:
            raise AssertionError(f"Expected weight to have more than 1 dimension, got {weight.ndim}")
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        """n_power_iterations steps of the power method, updating the buffers _u and _v in place (torch's
        F.normalize(..., out=)), so that replicas sharing their storage see the update."""
        if weight_mat.ndim <= 1:
            raise AssertionError(f"Expected weight_mat to have more than 1 dimension, got {weight_mat.ndim}")
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ops.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ops.mv(weight_mat.mH, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = ops.vdot(u, ops.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """`module.<name>` = W / sigma(W), sigma estimated by power iteration (n_power_iterations steps at each
    access in training mode; u, v in the parametrization's buffers `_u`, `_v`). dim: 1 for ConvTranspose."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
