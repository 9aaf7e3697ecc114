"""Bad input raises torch's exception type with torch's message (its first line, or the key phrase given)."""
import numpy as np
import pytest

from optable import check_error


def t(L, *shape, dtype=None, grad=False):
    a = np.random.default_rng(0).standard_normal(shape)
    x = L.tensor(a, dtype=dtype or L.float32)
    return x.requires_grad_() if grad else x


def ix(L, *values):
    return L.tensor(list(values))


def F(L):
    return L.nn.functional


ERRORS = {
    # elementwise
    "broadcast": (lambda L: t(L, 2, 3) + t(L, 4), None),
    "broadcast_sub": (lambda L: L.sub(t(L, 2, 3), t(L, 2, 4)), None),
    "clamp_none": (lambda L: L.clamp(t(L, 3)), None),
    "where_not_bool": (lambda L: L.where(t(L, 3), t(L, 3), t(L, 3)), "where expected condition to be a boolean"),
    "gelu_approximate": (lambda L: F(L).gelu(t(L, 3), approximate="fast"), None),
    "lerp_dtype": (lambda L: L.lerp(t(L, 3), t(L, 3, dtype=L.float64), 0.5), "expected dtype"),
    # reductions
    "sum_dim": (lambda L: t(L, 2, 3).sum(2), None),
    "mean_negdim": (lambda L: t(L, 2, 3).mean(-3), None),
    "mean_int": (lambda L: L.tensor([1, 2]).mean(), None),
    "sum_dup_dims": (lambda L: t(L, 2, 3).sum((0, 0)), None),
    "prod_dim": (lambda L: t(L, 2, 3).prod(3), None),
    "prod_tuple": (lambda L: t(L, 2, 3).prod((0,)), "prod() received an invalid combination of arguments"),
    "var_int": (lambda L: L.tensor([1, 2]).var(), None),
    "std_dim": (lambda L: t(L, 2, 3).std(5), None),
    "amax_dim": (lambda L: t(L, 2, 3).amax(2), None),
    "amax_empty": (lambda L: L.zeros(0, 3).amax(0), None),
    "amin_empty_all": (lambda L: L.zeros(0, 3).amin(), None),
    "max_empty": (lambda L: L.zeros(0, 3).max(), None),
    "max_empty_dim": (lambda L: L.zeros(0, 3).max(0), None),
    "max_dim": (lambda L: t(L, 3).max(1), None),
    "argmax_empty": (lambda L: L.zeros(0).argmax(), None),
    "argmax_empty_dim": (lambda L: L.zeros(0, 3).argmax(0), None),
    "argmin_dim": (lambda L: t(L, 2, 3).argmin(-3), None),
    "logsumexp_dim": (lambda L: t(L, 2, 3).logsumexp(2), None),
    "softmax_dim": (lambda L: t(L, 2, 3).softmax(2), None),
    "softmax_tuple": (lambda L: L.softmax(t(L, 2, 3), (0,)), "must be int, not tuple"),
    "log_softmax_dim": (lambda L: F(L).log_softmax(t(L, 2, 3), -3), None),
    "cumsum_dim": (lambda L: t(L, 3).cumsum(1), None),
    "norm_int": (lambda L: L.tensor([1, 2]).norm(), None),
    "norm_inf_empty": (lambda L: L.zeros(0).norm(float("inf")), None),
    "norm_dim": (lambda L: t(L, 2, 3).norm(dim=2), None),
    # shapes
    "reshape": (lambda L: t(L, 2, 3).reshape(4, 2), None),
    "reshape_two_inferred": (lambda L: t(L, 2, 3).reshape(-1, -1), None),
    "view": (lambda L: t(L, 2, 3).view(5), None),
    "view_infer": (lambda L: t(L, 2, 3).view(4, -1), None),
    "flatten_order": (lambda L: t(L, 2, 3, 4).flatten(2, 1), None),
    "squeeze_dim": (lambda L: t(L, 2, 3).squeeze(2), None),
    "unsqueeze_dim": (lambda L: t(L, 2, 3).unsqueeze(3), None),
    "transpose_dim": (lambda L: t(L, 2, 3).transpose(0, 2), None),
    "permute_len": (lambda L: t(L, 2, 3).permute(0), None),
    "permute_dup": (lambda L: t(L, 2, 3).permute(0, 0), None),
    "t_3d": (lambda L: t(L, 2, 3, 4).t(), None),
    "mT_1d": (lambda L: t(L, 3).mT, None),
    "expand_size": (lambda L: t(L, 2, 3).expand(3, 3), None),
    "expand_fewer": (lambda L: t(L, 2, 3).expand(3), None),
    "repeat_fewer": (lambda L: t(L, 2, 3).repeat(2), None),
    "flip_dup": (lambda L: t(L, 2, 3).flip(0, 0), None),
    "cat_empty": (lambda L: L.cat([]), None),
    "cat_ndim": (lambda L: L.cat([t(L, 2, 3), t(L, 3)]), None),
    "cat_sizes": (lambda L: L.cat([t(L, 2, 3), t(L, 2, 4)]), None),
    "cat_dim": (lambda L: L.cat([t(L, 2, 3), t(L, 2, 3)], 2), None),
    "cat_0d": (lambda L: L.cat([L.tensor(1.0), L.tensor(2.0)]), None),
    "stack_empty": (lambda L: L.stack([]), None),
    "stack_sizes": (lambda L: L.stack([t(L, 2, 3), t(L, 2, 4)]), None),
    "stack_dim": (lambda L: L.stack([t(L, 2, 3), t(L, 2, 3)], 3), None),
    "split_sizes": (lambda L: t(L, 2, 3).split([1, 2]), None),
    "split_zero": (lambda L: t(L, 2, 3).split(0), None),
    "chunk_zero": (lambda L: t(L, 2, 3).chunk(0), None),
    "narrow_length": (lambda L: t(L, 2, 3).narrow(1, 2, 2), None),
    "narrow_start": (lambda L: t(L, 2, 3).narrow(1, 4, 0), None),
    "narrow_negative": (lambda L: t(L, 2, 3).narrow(1, 0, -1), None),
    "select_index": (lambda L: t(L, 2, 3).select(0, 5), None),
    "tril_1d": (lambda L: t(L, 3).tril(), None),
    "triu_1d": (lambda L: L.triu(t(L, 3)), None),
    # indexing
    "index_int": (lambda L: t(L, 2, 3)[5], None),
    "index_int_dim1": (lambda L: t(L, 2, 3)[0, 5], None),
    "index_negative": (lambda L: t(L, 2, 3)[-3], None),
    "index_too_many": (lambda L: t(L, 2, 3)[0, 0, 0], None),
    "index_float": (lambda L: t(L, 2, 3)[1.5], None),
    "index_negative_step": (lambda L: t(L, 2, 3)[::-1], None),
    "index_zero_step": (lambda L: t(L, 2, 3)[:, ::0], None),
    "index_float_tensor": (lambda L: t(L, 2, 3)[L.tensor([1.0])], None),
    "index_tensor_bounds": (lambda L: t(L, 2, 3)[L.tensor([5])], None),
    "index_list_bounds": (lambda L: t(L, 2, 3)[[0, 5]], None),
    "index_tensor_negative": (lambda L: t(L, 2, 3)[0][L.tensor([-4])], None),
    "index_mask_shape": (lambda L: t(L, 2, 3)[L.tensor([True, False, True])], None),
    "index_mask_dim1": (lambda L: t(L, 2, 3)[:, L.tensor([True, False])], None),
    "index_mask_2d": (lambda L: t(L, 2, 3)[L.ones(3, 2, dtype=L.bool)], None),
    "setitem_leaf": (lambda L: t(L, 2, 3, grad=True).__setitem__(0, 1.0), "leaf Variable that requires grad"),
    "setitem_shape": (lambda L: t(L, 2, 3).__setitem__([0, 1], t(L, 3, 3)), None),
    "setitem_expand": (lambda L: t(L, 2, 3).__setitem__(0, t(L, 2)), None),
    "setitem_bounds": (lambda L: t(L, 2, 3).__setitem__(5, 1.0), None),
    # gather, scatter_add, index_select, masked_fill
    "gather_ndim": (lambda L: t(L, 2, 3).gather(1, ix(L, 0, 1)), None),
    "gather_bounds": (lambda L: t(L, 2, 3).gather(1, L.tensor([[0], [3]])), None),
    "gather_negative": (lambda L: t(L, 2, 3).gather(1, L.tensor([[0], [-1]])), None),
    "gather_size": (lambda L: t(L, 2, 3).gather(0, L.tensor([[0, 1, 1, 1]])), None),
    "gather_float": (lambda L: t(L, 2, 3).gather(1, t(L, 2, 1)), "Expected dtype int32/int64 for index"),
    "gather_dim": (lambda L: t(L, 2, 3).gather(2, L.tensor([[0], [1]])), None),
    "scatter_add_bounds": (lambda L: t(L, 2, 3).scatter_add(1, L.tensor([[0], [5]]), t(L, 2, 3)), None),
    "index_select_2d": (lambda L: t(L, 2, 3).index_select(0, L.tensor([[0]])), None),
    "index_select_bounds": (lambda L: t(L, 2, 3).index_select(0, ix(L, 5)), None),
    "index_select_float": (lambda L: t(L, 2, 3).index_select(0, L.tensor([1.0])), None),
    "masked_fill_float_mask": (lambda L: t(L, 2, 3).masked_fill(L.ones(2, 3), 0.0),
                               "masked_fill_ only supports boolean masks"),
    "masked_fill_value_dim": (lambda L: t(L, 2, 3).masked_fill(L.ones(2, 3, dtype=L.bool), L.ones(2)), None),
    "masked_fill_shape": (lambda L: t(L, 2, 3).masked_fill(L.ones(4, dtype=L.bool), 0.0), None),
    # linear algebra
    "matmul_0d": (lambda L: L.matmul(L.tensor(1.0), t(L, 3)), None),
    "matmul_mm": (lambda L: t(L, 2, 3) @ t(L, 4, 5), None),
    "matmul_dot": (lambda L: t(L, 3) @ t(L, 4), None),
    "matmul_mv": (lambda L: t(L, 2, 3) @ t(L, 4), None),
    "matmul_vm": (lambda L: t(L, 3) @ t(L, 4, 5), None),
    "matmul_fold": (lambda L: t(L, 2, 2, 3) @ t(L, 4, 5), None),
    "matmul_batched": (lambda L: t(L, 2, 2, 3) @ t(L, 2, 4, 5), None),
    "matmul_batch_broadcast": (lambda L: t(L, 2, 2, 3) @ t(L, 3, 3, 5), None),
    "matmul_dtype": (lambda L: t(L, 2, 3) @ t(L, 3, 4, dtype=L.float64), None),
    "mm_1d": (lambda L: L.mm(t(L, 3), t(L, 3, 3)), None),
    "mm_mat2": (lambda L: L.mm(t(L, 3, 3), t(L, 3)), None),
    "bmm_2d": (lambda L: L.bmm(t(L, 2, 3), t(L, 2, 3)), None),
    "bmm_sizes": (lambda L: L.bmm(t(L, 2, 2, 3), t(L, 2, 4, 5)), None),
    "bmm_batch": (lambda L: L.bmm(t(L, 2, 2, 3), t(L, 3, 3, 5)), None),
    "dot_2d": (lambda L: L.dot(t(L, 3, 1), t(L, 3)), None),
    "outer_2d": (lambda L: L.outer(t(L, 2, 2), t(L, 3)), None),
    "einsum_size": (lambda L: L.einsum("ij,jk", t(L, 2, 3), t(L, 4, 5)), None),
    "einsum_operands": (lambda L: L.einsum("ij,jk->ik", t(L, 2, 3)), None),
    "einsum_ndim": (lambda L: L.einsum("ijk->i", t(L, 2, 3)), None),
    # nn.functional
    "linear_shape": (lambda L: F(L).linear(t(L, 2, 3), t(L, 4, 5)), None),
    "linear_3d_shape": (lambda L: F(L).linear(t(L, 2, 2, 3), t(L, 4, 5)), None),
    "dropout_p": (lambda L: F(L).dropout(t(L, 3), 1.5), None),
    "mse_shape": (lambda L: F(L).mse_loss(t(L, 3), t(L, 4)), None),
    "loss_reduction": (lambda L: F(L).mse_loss(t(L, 3), t(L, 3), reduction="bad"), None),
    "smooth_l1_beta": (lambda L: F(L).smooth_l1_loss(t(L, 3), t(L, 3), beta=-1.0), None),
    "ce_target_bounds": (lambda L: F(L).cross_entropy(t(L, 3, 4), ix(L, 0, 1, 5)), None),
    "ce_target_negative": (lambda L: F(L).cross_entropy(t(L, 3, 4), ix(L, 0, 1, -3)), None),
    "ce_batch": (lambda L: F(L).cross_entropy(t(L, 3, 4), ix(L, 0, 1)), None),
    "ce_2d_target": (lambda L: F(L).cross_entropy(t(L, 3, 4), L.tensor([[0, 1, 2]])), None),
    "ce_float_target_shape": (lambda L: F(L).cross_entropy(t(L, 3, 4), t(L, 3, 5)), None),
    "ce_probs_ignore": (lambda L: F(L).cross_entropy(t(L, 3, 4), t(L, 3, 4), ignore_index=1), None),
    "ce_weight_size": (lambda L: F(L).cross_entropy(t(L, 3, 4), ix(L, 0, 1, 2), weight=L.ones(3)), None),
    "ce_int_target": (lambda L: F(L).cross_entropy(t(L, 3, 4), L.tensor([0, 1, 2], dtype=L.int32)), None),
    "ce_smoothing": (lambda L: F(L).cross_entropy(t(L, 3, 4), ix(L, 0, 1, 2), label_smoothing=1.5), None),
    "ce_nd_target": (lambda L: F(L).cross_entropy(t(L, 2, 3, 4), L.zeros(2, 5, dtype=L.int64)), None),
    "ce_weight_grad": (lambda L: F(L).cross_entropy(t(L, 3, 4), ix(L, 0, 1, 2), weight=L.ones(4).requires_grad_()),
                       "is not differentiable with respect to argument 'weight'"),
    "nll_0d": (lambda L: F(L).nll_loss(L.tensor(1.0), L.tensor(0)), None),
    "nll_float_target": (lambda L: F(L).nll_loss(t(L, 3, 4), t(L, 3)), None),
    "bce_shape": (lambda L: F(L).binary_cross_entropy(t(L, 3).sigmoid(), t(L, 3, 1).sigmoid()), None),
    "bce_range": (lambda L: F(L).binary_cross_entropy(t(L, 3).sigmoid() + 1, t(L, 3).sigmoid()), None),
    "bce_dtype": (lambda L: F(L).binary_cross_entropy(t(L, 3, dtype=L.float64).sigmoid(), t(L, 3).sigmoid()), None),
    "bce_weight_grad": (lambda L: F(L).binary_cross_entropy(t(L, 3).sigmoid(), t(L, 3).sigmoid(),
                                                            weight=L.ones(3).requires_grad_()), None),
    "bce_logits_shape": (lambda L: F(L).binary_cross_entropy_with_logits(t(L, 3), t(L, 3, 1)), None),
    "bce_logits_pos_weight_grad": (lambda L: F(L).binary_cross_entropy_with_logits(
        t(L, 3), t(L, 3), pos_weight=L.ones(3).requires_grad_()), None),
    "embedding_bounds": (lambda L: F(L).embedding(ix(L, 5), t(L, 3, 2)), None),
    "embedding_float": (lambda L: F(L).embedding(L.tensor([1.0]), t(L, 3, 2)), None),
    "embedding_padding": (lambda L: F(L).embedding(ix(L, 1), t(L, 3, 2), padding_idx=5), None),
    "one_hot_bounds": (lambda L: F(L).one_hot(ix(L, 5), 3), None),
    "one_hot_negative": (lambda L: F(L).one_hot(ix(L, -1), 3), None),
    "one_hot_float": (lambda L: F(L).one_hot(L.tensor([1.0]), 3), None),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_matches_torch(name):
    fn, key = ERRORS[name]
    check_error(fn, key)
