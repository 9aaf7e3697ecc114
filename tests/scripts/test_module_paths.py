"""The module paths PyTorch scripts import, and the data utilities behind them, against torch 2.13."""
import importlib

import numpy as np
import pytest
import torch

import tapegrad

PATHS = {
    "utils.data.dataloader": ["DataLoader", "default_collate", "get_worker_info"],
    "utils.data.dataset": ["Dataset", "TensorDataset", "IterableDataset", "ConcatDataset", "Subset", "random_split",
                           "StackDataset", "ChainDataset"],
    "utils.data.sampler": ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler",
                           "WeightedRandomSampler"],
    "utils.data.distributed": ["DistributedSampler"],
    "utils.data": ["DataLoader", "DistributedSampler", "TensorDataset"],
    "nn.modules": ["Module", "Linear", "ReLU", "Sequential", "MSELoss"],
    "nn.modules.linear": ["Linear", "Identity"], "nn.modules.loss": ["MSELoss", "CrossEntropyLoss"],
    "nn.modules.activation": ["ReLU", "Tanh", "Softmax"], "nn.modules.module": ["Module"],
    "nn.modules.container": ["Sequential", "ModuleList"], "nn.modules.dropout": ["Dropout"],
    "nn.modules.sparse": ["Embedding"], "nn.modules.flatten": ["Flatten"],
    "nn.utils": ["clip_grad_norm_", "parameters_to_vector", "weight_norm", "spectral_norm", "skip_init"],
    "nn.utils.parametrize": ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached"],
    "nn.utils.parametrizations": ["weight_norm", "spectral_norm", "orthogonal"],
    "nn.utils.stateless": ["functional_call"], "nn.utils.prune": ["l1_unstructured", "global_unstructured", "remove"],
    "utils.benchmark": ["Timer", "Measurement", "Compare"], "profiler": ["profile", "record_function", "schedule"],
    "autograd.profiler": ["profile", "record_function"], "xpu": ["is_available", "device_count"], "nn.init": ["xavier_uniform_", "sparse_", "xavier_uniform"],
    "functional": ["einsum", "split", "meshgrid", "norm", "unique", "tensordot", "broadcast_tensors", "cdist",
                   "atleast_1d", "block_diag", "cartesian_prod", "chain_matmul", "unravel_index"],
    "nn.functional": ["relu", "mse_loss", "pdist"], "nn.parameter": ["Parameter"],
    "optim.lr_scheduler": ["StepLR", "LambdaLR"], "optim": ["SGD", "Adam", "swa_utils"],
    "optim.swa_utils": ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
                        "get_ema_avg_fn", "get_swa_avg_fn"],
    "autograd.function": ["Function"], "autograd.functional": ["jacobian", "hessian"],
    "autograd.grad_mode": ["no_grad", "enable_grad", "set_grad_enabled"],
    "serialization": ["save", "load", "safe_globals", "add_safe_globals", "get_safe_globals"],
    "backends": ["cudnn", "mha", "mps", "cuda"],
    "backends.cudnn": ["benchmark", "deterministic", "is_available", "flags", "set_flags"],
    "backends.mha": ["get_fastpath_enabled", "set_fastpath_enabled"],
    "__future__": ["get_overwrite_module_params_on_conversion", "set_overwrite_module_params_on_conversion",
                   "get_swap_module_params_on_conversion", "set_swap_module_params_on_conversion"],
    "nn.grad": ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"],
    "nn.utils.rnn": ["pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence", "PackedSequence"],
    "backends.mps": ["is_available", "is_built"], "onnx": ["export"],
    "hub": ["get_dir", "set_dir", "load_state_dict_from_url", "download_url_to_file"],
    "cuda": ["is_available", "manual_seed_all", "amp"], "cuda.amp": ["GradScaler", "autocast"],
    "amp": ["GradScaler", "autocast"], "accelerator": ["is_available", "current_accelerator"],
    "mps": ["is_available", "manual_seed"], "cpu": ["is_available"], "version": ["cuda", "__version__"],
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_module_path_exists_with_torchs_names(path):
    mine = importlib.import_module("tapegrad." + path)
    theirs = importlib.import_module("torch." + path)
    for name in PATHS[path]:
        assert hasattr(theirs, name), (path, name)  # (the list itself is checked against torch)
        assert hasattr(mine, name), (path, name)


def test_nn_modules_classes_are_the_nn_classes():
    import tapegrad.nn.modules.linear as lin
    assert lin.Linear is tapegrad.nn.Linear
    from tapegrad.utils.data.dataloader import DataLoader
    assert DataLoader is tapegrad.utils.data.DataLoader


@pytest.mark.parametrize("n,replicas,shuffle,drop_last,seed,epoch", [
    (10, 3, True, False, 0, 0), (10, 3, True, True, 0, 0), (10, 3, False, False, 0, 0), (11, 4, True, False, 7, 2),
    (3, 5, True, False, 1, 1), (100, 8, True, True, 42, 5), (5, 1, True, False, 0, 3)])
def test_distributed_sampler_gives_torchs_shares(n, replicas, shuffle, drop_last, seed, epoch):
    def shares(t):
        out = []
        for rank in range(replicas):
            s = t.utils.data.DistributedSampler(list(range(n)), num_replicas=replicas, rank=rank, shuffle=shuffle,
                                                seed=seed, drop_last=drop_last)
            s.set_epoch(epoch)
            out.append((list(s), len(s), s.total_size))
        return out
    assert shares(tapegrad) == shares(torch)


def test_distributed_sampler_bad_rank():
    for t in (tapegrad, torch):
        with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
            t.utils.data.DistributedSampler(list(range(4)), num_replicas=3, rank=3)


def test_distributed_sampler_defaults_come_from_the_process_group():
    try:
        importlib.import_module("tapegrad.distributed")
    except ImportError:
        with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
            tapegrad.utils.data.DistributedSampler(list(range(4)))
    else:  # (with tapegrad.distributed: torch's error when no process group is initialised)
        with pytest.raises(ValueError) as got:
            tapegrad.utils.data.DistributedSampler(list(range(4)))
        with pytest.raises(ValueError) as want:
            torch.utils.data.DistributedSampler(list(range(4)))
        assert str(got.value) == str(want.value)


def test_distributed_sampler_in_a_loader_matches_torch():
    def batches(t):
        ds = t.utils.data.TensorDataset(t.arange(20.0).reshape(10, 2), t.arange(10))
        s = t.utils.data.DistributedSampler(ds, num_replicas=2, rank=1, seed=3)
        out = []
        for epoch in range(2):
            s.set_epoch(epoch)
            out += [[b.tolist() for b in batch] for batch in t.utils.data.DataLoader(ds, batch_size=2, sampler=s)]
        return out
    assert batches(tapegrad) == batches(torch)


@pytest.mark.parametrize("replacement", [True, False])
def test_huge_random_sampler_draws_lazily_as_torch(replacement):
    """num_samples=10**10 must not allocate; the first indices are torch's for the same seed."""
    def first(t):
        g = t.Generator().manual_seed(5)
        s = t.utils.data.RandomSampler(range(7), replacement=replacement, num_samples=10 ** 10, generator=g)
        it = iter(s)
        return [next(it) for _ in range(100)], len(s)
    assert first(tapegrad) == first(torch)


@pytest.mark.parametrize("num_samples", [None, 5, 33, 64, 70])
@pytest.mark.parametrize("replacement", [True, False])
def test_random_sampler_stream_and_what_follows_it(num_samples, replacement):
    """The indices and the generator's state after them (torch draws a last, empty-sliced permutation)."""
    if num_samples is None and replacement:
        num_samples = 13
    def run(t):
        t.manual_seed(11)
        s = t.utils.data.RandomSampler(range(16), replacement=replacement, num_samples=num_samples)
        return list(s), list(s), t.rand(2).tolist()
    assert run(tapegrad) == run(torch)


def test_huge_random_sampler_in_a_loader():
    def first_batches(t):
        t.manual_seed(0)
        ds = t.utils.data.TensorDataset(t.arange(10))
        s = t.utils.data.RandomSampler(ds, replacement=True, num_samples=10 ** 10)
        it = iter(t.utils.data.DataLoader(ds, batch_size=4, sampler=s))
        return [next(it)[0].tolist() for _ in range(3)]
    assert first_batches(tapegrad) == first_batches(torch)


@pytest.mark.parametrize("replacement,num_samples", [(True, 50), (False, 5), (True, 1), (False, 1)])
@pytest.mark.parametrize("with_generator", [True, False])
def test_weighted_random_sampler_matches_torch(replacement, num_samples, with_generator):
    def draws(t):
        t.manual_seed(3)
        g = t.Generator().manual_seed(9) if with_generator else None
        s = t.utils.data.WeightedRandomSampler([0.1, 0.9, 0.4, 0.7, 3.0, 0.0, 1.2], num_samples, replacement, g)
        return list(s), list(s), len(s), t.rand(2).tolist()
    assert draws(tapegrad) == draws(torch)


@pytest.mark.parametrize("args", [([1.0, 2.0], 0), ([1.0, 2.0], 2, 1), ([[1.0, 2.0]], 2)])
def test_weighted_random_sampler_errors(args):
    def err(t):
        try:
            t.utils.data.WeightedRandomSampler(*args)
        except ValueError as e:
            return str(e)
    assert err(tapegrad) == err(torch) is not None


def test_every_nn_class_is_where_torch_keeps_it():
    """Scripts name layers by torch's module path (torch.nn.modules.activation.MultiheadAttention in a
    safe_globals list): each torch.nn class tapegrad has is also found in tapegrad's copy of that module."""
    import torch
    missing = []
    for name in dir(torch.nn):
        cls = getattr(torch.nn, name)
        if not (isinstance(cls, type) and hasattr(tapegrad.nn, name)) or not cls.__module__.startswith("torch.nn."):
            continue
        path = "tapegrad" + cls.__module__[len("torch"):]
        try:
            module = importlib.import_module(path)
        except ImportError:
            missing.append(f"{path} (module)")
            continue
        if getattr(module, name, None) is not getattr(tapegrad.nn, name):
            missing.append(f"{path}.{name}")
    assert missing == []
