"""torch.utils.data.dataloader: DataLoader, default_collate, default_convert, get_worker_info.

num_workers > 0 runs worker processes as torch does (_worker.py): the same worker seeds, worker_init_fn,
prefetch_factor, persistent_workers, and batches in the sampler's order (as they come with in_order=False).

A DataLoader over a TensorDataset with the default collate gathers each batch with one NumPy fancy
index per tensor instead of stacking samples one by one (the result is the same).
"""
import collections.abc
import math
import os
import warnings

import numpy as np

from ... import random
from ...tensor import Tensor, _new
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler
from ._worker import MultiProcessingIter, WorkerInfo, get_worker_info, warn_past_length  # noqa: F401
from ... import ops
from ..._warnings import user_stacklevel

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


# -- collation -----------------------------------------------------------------------------------------
_COLLATE_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _stack(tensors):
    first = tensors[0]._data
    if any(t._requires_grad or t._data.shape != first.shape or t._data.dtype != first.dtype for t in tensors):
        return ops.stack(tensors, 0)  # (torch.stack's dtype promotion and its error for unequal sizes)
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
        return _stack([_new(np.ascontiguousarray(b)) for b in batch])  # (torch: as_tensor each, then stack)
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
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._iterator = None
        self._IterableDataset_len_called = None
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
        self.check_worker_number_rationality()

    def check_worker_number_rationality(self):
        """torch's warning when more worker processes than the CPUs this process may use are asked for."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        suggest = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if suggest is None or self.num_workers > suggest:
            limit = ("DataLoader is not able to compute a suggested max number of worker in current system."
                     if suggest is None else
                     f"Our suggested max number of worker in current system is {suggest}"
                     f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is smaller than "
                     f"what this DataLoader is going to create.")
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {limit} Please "
                          f"be aware that excessive worker creation might get DataLoader running slow or even freeze, "
                          f"lower the worker number to avoid potential slowness/freeze if necessary.", stacklevel=user_stacklevel())

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or self._iterable and self.batch_size is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if self._iterable:
            n = self._IterableDataset_len_called = len(self.dataset)  # (an iterator made after warns past it)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        return len(self._index_sampler)

    def __iter__(self):
        if self.pin_memory:  # (torch's warning: there is no accelerator to pin memory for)
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.")  # (at this line, as torch's at its: shown once a process)
        # torch's loader iterator draws a worker base seed from the loader's generator (or the default one)
        # every time it is made, before the sampler draws anything: do the same, to stay in step
        if self.num_workers > 0:
            if self.persistent_workers and self._iterator is not None:
                self._iterator.reset()  # (the same workers, and no new base seed, as torch)
                return self._iterator
            self.check_worker_number_rationality()
            base_seed = int(random.integers(0, 2 ** 63, (), self.generator))
            it = MultiProcessingIter(self, base_seed)
            if self.persistent_workers:
                self._iterator = it
            return it
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
        batches = self.batch_sampler._index_arrays()
        if batches is None:  # (a sampler too long to draw at once: its batches one at a time)
            batches = (np.asarray(b, np.int64) for b in self.batch_sampler)
        for idx in batches:
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
        reported = self._IterableDataset_len_called
        for yielded, batch in enumerate(self._iterable_batches(), 1):
            if reported is not None and yielded > reported:
                warn_past_length(self.dataset, reported, yielded, 0, 3)
            yield batch

    def _iterable_batches(self):
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
