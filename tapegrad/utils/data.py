"""torch.utils.data: Dataset, TensorDataset, samplers, default_collate and DataLoader (in-process loading).

`num_workers` is accepted for compatibility; batches are always produced in the calling process.
A DataLoader over a TensorDataset with the default collate gathers each batch with one NumPy fancy
index per tensor instead of stacking samples one by one (the result is the same).
"""
import bisect
import collections.abc
import math
import warnings

import numpy as np

from .. import random
from ..tensor import Tensor, _new

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "default_convert", "get_worker_info"]


# -- datasets ---------------------------------------------------------------------------------------------
class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        raise TypeError("IterableDataset does not support concatenation")


class TensorDataset(Dataset):
    """Samples are tuples (t[i] for t in tensors): all tensors share their first dimension."""

    def __init__(self, *tensors):
        if not all(tensors[0].size(0) == t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping Subsets of the given lengths (or fractions summing to 1)."""
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths = [int(math.floor(n * frac)) for frac in lengths]
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        remainder = n - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = _randperm(n, generator).tolist()
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, indices[offset: offset + length]))
        offset += length
    return out


# -- samplers -------------------------------------------------------------------------------------------
def _randperm(n, generator):
    return np.asarray(random.permutation(n, generator), np.int64)


def _fresh_generator():
    """A generator seeded from the default one (torch: RandomSampler without a generator)."""
    seed = int(random.integers(0, 2 ** 63, (), None))  # torch: empty((), int64).random_(), random64() % 2**63
    return random.Generator().manual_seed(seed)


class Sampler:
    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def _indices(self):
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            return np.asarray(random.integers(0, n, (self.num_samples,), generator), np.int64)
        parts = [_randperm(n, generator) for _ in range(self.num_samples // n)]
        parts.append(_randperm(n, generator)[: self.num_samples % n])
        return np.concatenate(parts)

    def __iter__(self):
        return iter(self._indices().tolist())

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        generator = self.generator if self.generator is not None else _fresh_generator()
        for i in _randperm(len(self.indices), generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def _index_arrays(self):
        """Batches as int64 arrays (one permutation, then slices): what the fast TensorDataset path uses."""
        s = self.sampler
        if type(s) is RandomSampler:
            order = s._indices()
        elif type(s) is SequentialSampler:
            order = np.arange(len(s.data_source), dtype=np.int64)
        else:
            return None
        bs, n = self.batch_size, len(order)
        stop = n - n % bs if self.drop_last else n
        return [order[i: i + bs] for i in range(0, stop, bs)]

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


# -- collation -----------------------------------------------------------------------------------------
_COLLATE_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _stack(tensors):
    if any(t._requires_grad for t in tensors):
        from .. import ops
        return ops.stack(tensors, 0)
    return _new(np.stack([t._data for t in tensors]))


def default_collate(batch):
    """Merge a list of samples into a batch, as torch's default_collate does."""
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return _stack(batch)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OSUV":
            raise TypeError(_COLLATE_ERR.format(elem.dtype))
        return _new(np.ascontiguousarray(np.stack(batch)))
    if isinstance(elem, np.generic) and elem.dtype.kind not in "OSUV":
        return _new(np.ascontiguousarray(np.asarray(batch)))
    if isinstance(elem, bool):
        return _new(np.asarray(batch, np.bool_))
    if isinstance(elem, float):
        return _new(np.asarray(batch, np.float64))
    if isinstance(elem, int):
        return _new(np.asarray(batch, np.int64))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return elem_type(collated)
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_COLLATE_ERR.format(elem_type))


def default_convert(data):
    """Convert NumPy arrays in a sample to tensors (no batching): the collate when batch_size=None."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OSUV":
        return _new(np.ascontiguousarray(data))
    if isinstance(data, np.generic) and data.dtype.kind not in "OSUV":
        return _new(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return [default_convert(d) for d in data]
    return data


def get_worker_info():
    return None


# -- the loader ------------------------------------------------------------------------------------------
class DataLoader:
    """Iterate over a dataset in batches: DataLoader(dataset, batch_size=1, shuffle=False, ...)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if isinstance(shuffle, bool) and shuffle:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or self._iterable and self.batch_size is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        return len(self._index_sampler)

    def __iter__(self):
        # torch's loader iterator draws a worker base seed from the loader's generator (or the default one)
        # every time iteration starts, before the sampler draws anything: do the same, to stay in step
        random.integers(0, 2 ** 63, (), self.generator)
        if self._iterable:
            return self._iter_iterable()
        fast = (isinstance(self.dataset, TensorDataset) and self.collate_fn is default_collate
                and isinstance(self.batch_sampler, BatchSampler) and type(self.batch_sampler) is BatchSampler
                and not any(t._requires_grad for t in self.dataset.tensors))
        if fast and type(self.batch_sampler.sampler) in (RandomSampler, SequentialSampler):
            return self._iter_tensor_batches()
        return self._iter_map()

    def _iter_tensor_batches(self):
        arrays = [t._data for t in self.dataset.tensors]
        for idx in self.batch_sampler._index_arrays():
            yield [_new(a[idx]) for a in arrays]

    def _iter_map(self):
        dataset, collate = self.dataset, self.collate_fn
        if self._auto_collation:
            for indices in self.batch_sampler:
                yield collate([dataset[i] for i in indices])
        else:
            for i in self.sampler:
                yield collate(dataset[i])

    def _iter_iterable(self):
        collate = self.collate_fn
        if self.batch_size is None:
            for sample in self.dataset:
                yield collate(sample)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield collate(batch)
                batch = []
        if batch and not self.drop_last:
            yield collate(batch)

