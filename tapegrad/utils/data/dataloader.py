"""torch.utils.data.dataloader: DataLoader, default_collate, default_convert, get_worker_info.

iter(loader) returns torch's iterator objects, _SingleProcessDataLoaderIter or _MultiProcessingDataLoaderIter
(both _BaseDataLoaderIter: len(), _num_yielded), made at the same points of the random streams as torch's.
num_workers > 0 runs worker processes as torch does (_worker.py): the same worker seeds, worker_init_fn,
prefetch_factor, persistent_workers, and batches in the sampler's order (as they come with in_order=False).

A DataLoader over a TensorDataset with the default collate gathers each batch with one NumPy fancy
index per tensor instead of stacking samples one by one (the result is the same).
"""
import collections.abc
import itertools
import math
import os
import queue
import warnings

import numpy as np

from ... import random
from ...tensor import Tensor, _new
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from ._worker import (ExceptionWrapper, WorkerInfo, _Fetcher, _IterableStop, _Resume,  # noqa: F401
                      get_worker_info, warn_past_length, worker_loop)
from ... import ops
from ..._warnings import user_stacklevel

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

_POLL_S = 5.0  # how often a waiting main process checks that its workers are alive


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
        if sampler is None:
            if self._iterable:  # (torch's: None for each sample; len() of it raises, as torch's)
                sampler = _InfiniteConstantSampler()
            else:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
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
        return self.batch_sampler is not None

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
        # a new iterator each time (it draws the worker base seed from the loader's generator, or the default one,
        # as torch's does), but persistent workers' one only once, and reset at each later call (no new seed)
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset's loader: None forever (the dataset itself says what comes next)."""

    def __iter__(self):
        while True:
            yield None


# -- the iterators ------------------------------------------------------------------------------------------
class _BaseDataLoaderIter:
    """One pass over a loader, as torch's: __next__ counts _num_yielded (and warns past an IterableDataset's
    reported length), len() is the loader's index sampler's."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory:  # (torch's warning: there is no accelerator to pin memory for)
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.")  # (at this line, as torch's at its: shown once a process)
        self._pin_memory = False
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)  # (before the base seed, as torch's)
        self._base_seed = int(random.integers(0, 2 ** 63, (), loader.generator))
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # (StopIteration at the end)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if self._iterable and self._IterableDataset_len_called is not None and \
                self._num_yielded > self._IterableDataset_len_called:
            warn_past_length(self._dataset, self._IterableDataset_len_called, self._num_yielded, self._num_workers, 3)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)  # (torch's message, as it is)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """num_workers=0: the batches fetched in this process. Over a TensorDataset with the default collate and
    sampler, each batch is one NumPy fancy index per tensor (the module docstring)."""

    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._dataset_fetcher = _Fetcher(self._dataset, self._iterable, self._auto_collation, self._collate_fn,
                                         loader.batch_size, self._drop_last)
        batch_sampler = loader.batch_sampler
        self._fast = (isinstance(self._dataset, TensorDataset) and self._collate_fn is default_collate
                      and type(batch_sampler) is BatchSampler
                      and type(batch_sampler.sampler) in (RandomSampler, SequentialSampler)
                      and not any(t._requires_grad for t in self._dataset.tensors))
        self._tensor_batches = self._gather() if self._fast else None

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._tensor_batches = self._gather() if self._fast else None

    def _gather(self):
        arrays = [t._data for t in self._dataset.tensors]
        batches = self._index_sampler._index_arrays()
        if batches is None:  # (a sampler too long to draw at once: its batches one at a time)
            batches = (np.asarray(b, np.int64) for b in self._sampler_iter)
        for idx in batches:
            yield [_new(a[idx]) for a in arrays]

    def _next_data(self):
        if self._tensor_batches is not None:
            return next(self._tensor_batches)
        return self._dataset_fetcher.fetch(self._next_index())  # (StopIteration at the end)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Worker processes (_worker.py) fed index batches round-robin, prefetch_factor per worker; results in
    order, or as they arrive with in_order=False, a new batch then going only to a worker with fewer than its
    share of the outstanding tasks (torch's)."""

    def __init__(self, loader):
        import multiprocessing
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context()
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self._data_queue = ctx.Queue()
        self._index_queues, self.workers = [], []
        for i in range(self._num_workers):
            q = ctx.Queue()
            q.cancel_join_thread()
            w = ctx.Process(target=worker_loop, daemon=True, args=(
                self._dataset, q, self._data_queue, self._iterable, self._auto_collation, self._collate_fn,
                loader.batch_size, self._drop_last, self._base_seed, loader.worker_init_fn, i, self._num_workers))
            w.start()
            self._index_queues.append(q)
            self.workers.append(w)
        self._shutdown = False
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = self._rcvd_idx = 0
        self._task_info = {}
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # (persistent workers: each restarts its iterable, and answers)
            for q in self._index_queues:
                q.put(_Resume())
            pending = self._num_workers
            while pending:
                idx, _ = self._get_data()
                if isinstance(idx, _Resume):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        max_tasks = self._prefetch_factor * self._num_workers
        for _ in range(self._num_workers):
            worker = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker] and (
                    self._in_order or self._workers_num_tasks[worker] < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._workers_num_tasks[worker] += 1
        self._send_idx += 1

    def _get_data(self):
        waited = 0.0
        while True:
            step = _POLL_S if self._timeout <= 0 else min(_POLL_S, self._timeout - waited)
            try:
                return self._data_queue.get(timeout=step)
            except queue.Empty:
                waited += step
                dead = [w.pid for i, w in enumerate(self.workers) if self._workers_status[i] and not w.is_alive()]
                if dead:
                    self.shutdown()
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(map(str, dead))}) exited "
                                       f"unexpectedly") from None
                if self._timeout > 0 and waited >= self._timeout:
                    self.shutdown()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self.shutdown()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker)
            idx, data = self._get_data()
            if isinstance(idx, _Resume):
                continue
            if isinstance(data, _IterableStop):
                self._workers_status[data.worker_id] = False
                self._task_info.pop(idx, None)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:  # (the slot it leaves is skipped when _rcvd_idx reaches it)
                    return self._process_data(data, self._task_info.pop(idx)[0])
                self._task_info[idx] += (data,)
                continue
            worker = self._task_info.pop(idx)[0]
            self._rcvd_idx += 1
            return self._process_data(data, worker)

    def _process_data(self, data, worker):
        self._workers_num_tasks[worker] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def shutdown(self):
        if self._shutdown:
            return
        self._shutdown = True
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self.workers:
            w.join(timeout=5.0)
            if w.is_alive():
                w.terminate()
        for q in self._index_queues:
            q.close()
        self._data_queue.cancel_join_thread()
        self._data_queue.close()

    _shutdown_workers = shutdown  # (torch's name: training libraries call it on a persistent loader's iterator)

    def __del__(self):
        if os.getpid is not None and "_shutdown" in self.__dict__:  # (not at interpreter shutdown, nor half made)
            try:
                self.shutdown()
            except Exception:
                pass
