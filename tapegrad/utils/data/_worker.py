"""DataLoader worker processes, as torch runs them: worker i seeds Python's `random` and tapegrad's generator
with base_seed + i and NumPy's with torch's _generate_state(base_seed, i), runs worker_init_fn(i), then
fetches the batches whose indices the main process sends it; the main process yields them in order (or as
they come, with in_order=False)."""
import itertools
import os
import queue
import random as _pyrandom
import sys
import traceback
import warnings
from dataclasses import dataclass

import numpy as np

_POLL_S = 5.0  # how often a waiting main process checks that its workers are alive


@dataclass(frozen=True)
class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, seed, dataset."""
    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info = None


def get_worker_info():
    """Inside a DataLoader worker, its WorkerInfo; in the main process, None."""
    return _worker_info


class KeyErrorMessage(str):
    """A str whose repr is itself (torch._utils.KeyErrorMessage), so that a KeyError's message prints as lines."""
    __slots__ = ()

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception raised in a worker, re-raised in the main process with torch's message."""

    def __init__(self, where):
        exc_type, value, tb = sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, value, tb))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:  # (KeyError prints its argument's repr: the traceback on one line)
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):  # (an exception whose first argument is not its message)
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


def warn_past_length(dataset, reported, yielded, num_workers, stacklevel):
    """torch's warning when an IterableDataset yields more batches than the len() it reported (its replicas in the
    workers not split: each worker yields the whole dataset)."""
    message = (f"Length of IterableDataset {dataset} was reported to be {reported}(when accessing len(dataloader)), "
               f"but {yielded} samples have been fetched. ")
    if num_workers > 0:
        message += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                    "IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
    warnings.warn(message, stacklevel=stacklevel)


class _IterableStop:
    def __init__(self, worker_id):
        self.worker_id = worker_id


class _Resume:
    """Sent to persistent workers at the start of each later epoch (they restart their iterable)."""


def generate_state(base_seed, worker_id):
    """NumPy's seed for a worker: torch.utils.data._utils.worker._generate_state, the same four words."""
    INIT_A, MULT_A, INIT_B, MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    MIX_MULT_L, MIX_MULT_R, XSHIFT, MASK32 = 0xCA01F9DD, 0x4973F715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    pool = [0] * 4
    hash_const_a = INIT_A

    def hash_(value):
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & MASK32
        hash_const_a = (hash_const_a * MULT_A) & MASK32
        value = (value * hash_const_a) & MASK32
        return (value ^ (value >> XSHIFT)) & MASK32

    def mix(x, y):
        result = ((MIX_MULT_L * x) & MASK32) - ((MIX_MULT_R * y) & MASK32)
        result &= MASK32
        return (result ^ (result >> XSHIFT)) & MASK32

    for i in range(4):
        pool[i] = hash_(entropy[i])
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash_(pool[i_src]))
    hash_const_b = INIT_B
    state = []
    for i_dst in range(4):
        data_val = (pool[i_dst] ^ hash_const_b) & MASK32
        hash_const_b = (hash_const_b * MULT_B) & MASK32
        data_val = (data_val * hash_const_b) & MASK32
        state.append((data_val ^ (data_val >> XSHIFT)) & MASK32)
    return state


class _Fetcher:
    def __init__(self, dataset, iterable, auto_collation, collate_fn, batch_size, drop_last):
        self.dataset, self.iterable, self.auto_collation = dataset, iterable, auto_collation
        self.collate_fn, self.batch_size, self.drop_last = collate_fn, batch_size, drop_last
        self.it = iter(dataset) if iterable else None
        self.ended = False

    def fetch(self, index):
        if not self.iterable:
            if self.auto_collation:
                return self.collate_fn([self.dataset[i] for i in index])
            return self.collate_fn(self.dataset[index])
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.it))
        batch = []
        for _ in range(self.batch_size):
            try:
                batch.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not batch or (self.drop_last and len(batch) < self.batch_size):
            raise StopIteration
        return self.collate_fn(batch)


def worker_loop(dataset, index_queue, data_queue, iterable, auto_collation, collate_fn, batch_size, drop_last,
                base_seed, init_fn, worker_id, num_workers):
    global _worker_info
    from ... import manual_seed
    seed = base_seed + worker_id
    _pyrandom.seed(seed)
    manual_seed(seed)
    np.random.seed(generate_state(base_seed, worker_id))
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error, fetcher = None, None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = _Fetcher(dataset, iterable, auto_collation, collate_fn, batch_size, drop_last)
    except Exception:
        init_error = ExceptionWrapper(where)
    iteration_end = False
    try:
        while True:
            r = index_queue.get()
            if r is None:
                break
            if isinstance(r, _Resume):
                data_queue.put((r, None))
                iteration_end = False
                if init_error is None:
                    fetcher = _Fetcher(dataset, iterable, auto_collation, collate_fn, batch_size, drop_last)
                continue
            if iteration_end:
                continue
            idx, index = r
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if not iterable:
                        data = ExceptionWrapper(where)
                    else:
                        data, iteration_end = _IterableStop(worker_id), True
                except Exception:
                    data = ExceptionWrapper(where)
            data_queue.put((idx, data))
    except KeyboardInterrupt:
        pass
    data_queue.cancel_join_thread()
    data_queue.close()


class MultiProcessingIter:
    """The main process's side: dispatches index batches round-robin, prefetch_factor per worker, and
    yields results in order, or as they arrive with in_order=False, a new batch then going only to a worker
    with fewer than its share of the outstanding tasks (torch's _MultiProcessingDataLoaderIter)."""

    def __init__(self, loader, base_seed):
        import multiprocessing
        self.loader = loader
        self.num_workers = loader.num_workers
        self.prefetch_factor = loader.prefetch_factor
        self.iterable = loader._iterable
        self.persistent = loader.persistent_workers
        self.timeout = loader.timeout
        self.in_order = loader.in_order
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context()
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self.data_queue = ctx.Queue()
        self.index_queues, self.workers = [], []
        for i in range(self.num_workers):
            q = ctx.Queue()
            q.cancel_join_thread()
            w = ctx.Process(target=worker_loop, daemon=True, args=(
                loader.dataset, q, self.data_queue, self.iterable, loader._auto_collation, loader.collate_fn,
                loader.batch_size, loader.drop_last, base_seed, loader.worker_init_fn, i, self.num_workers))
            w.start()
            self.index_queues.append(q)
            self.workers.append(w)
        self.shut_down = False
        self.reset(first=True)

    def _indices(self):
        if self.iterable:
            return itertools.repeat(None)  # (each worker draws from its own copy of the iterable)
        return iter(self.loader._index_sampler)

    def reset(self, first=False):
        self.num_yielded, self.reported_length = 0, self.loader._IterableDataset_len_called
        self.sampler_iter = self._indices()
        self.send_idx = self.rcvd_idx = 0
        self.task_info = {}
        self.workers_status = [True] * self.num_workers
        self.workers_num_tasks = [0] * self.num_workers
        self.worker_cycle = itertools.cycle(range(self.num_workers))
        if not first:
            for q in self.index_queues:
                q.put(_Resume())
            pending = self.num_workers
            while pending:
                idx, _ = self._get_data()
                if isinstance(idx, _Resume):
                    pending -= 1
        for _ in range(self.prefetch_factor * self.num_workers):
            self._try_put_index()

    def _try_put_index(self):
        try:
            index = next(self.sampler_iter)
        except StopIteration:
            return
        max_tasks = self.prefetch_factor * self.num_workers
        for _ in range(self.num_workers):
            worker = next(self.worker_cycle)
            if self.workers_status[worker] and (
                    self.in_order or self.workers_num_tasks[worker] < max_tasks // sum(self.workers_status)):
                break
        else:
            return
        self.index_queues[worker].put((self.send_idx, index))
        self.task_info[self.send_idx] = (worker,)
        self.workers_num_tasks[worker] += 1
        self.send_idx += 1

    def _get_data(self):
        waited = 0.0
        while True:
            step = _POLL_S if self.timeout <= 0 else min(_POLL_S, self.timeout - waited)
            try:
                return self.data_queue.get(timeout=step)
            except queue.Empty:
                waited += step
                dead = [w.pid for i, w in enumerate(self.workers) if self.workers_status[i] and not w.is_alive()]
                if dead:
                    self.shutdown()
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(map(str, dead))}) exited "
                                       f"unexpectedly") from None
                if self.timeout > 0 and waited >= self.timeout:
                    self.shutdown()
                    raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds") from None

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            while self.rcvd_idx < self.send_idx:
                info = self.task_info.get(self.rcvd_idx)
                if info is not None and (len(info) == 2 or self.workers_status[info[0]]):
                    break
                self.task_info.pop(self.rcvd_idx, None)
                self.rcvd_idx += 1
            else:
                if not self.persistent:
                    self.shutdown()
                raise StopIteration
            if len(self.task_info[self.rcvd_idx]) == 2:
                worker, data = self.task_info.pop(self.rcvd_idx)
                self.rcvd_idx += 1
                return self._process(data, worker)
            idx, data = self._get_data()
            if isinstance(idx, _Resume):
                continue
            if isinstance(data, _IterableStop):
                self.workers_status[data.worker_id] = False
                self.task_info.pop(idx, None)
                self._try_put_index()
                continue
            if idx != self.rcvd_idx:
                if not self.in_order:  # (the slot it leaves is skipped when rcvd_idx reaches it)
                    return self._process(data, self.task_info.pop(idx)[0])
                self.task_info[idx] += (data,)
                continue
            worker = self.task_info.pop(idx)[0]
            self.rcvd_idx += 1
            return self._process(data, worker)

    def _process(self, data, worker):
        self.workers_num_tasks[worker] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        self.num_yielded += 1
        if self.iterable and self.reported_length is not None and self.num_yielded > self.reported_length:
            warn_past_length(self.loader.dataset, self.reported_length, self.num_yielded, self.num_workers, 4)
        return data

    def shutdown(self):
        if self.shut_down:
            return
        self.shut_down = True
        for q in self.index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self.workers:
            w.join(timeout=5.0)
            if w.is_alive():
                w.terminate()
        for q in self.index_queues:
            q.close()
        self.data_queue.cancel_join_thread()
        self.data_queue.close()

    def __del__(self):
        if os.getpid is not None:  # (not at interpreter shutdown)
            try:
                self.shutdown()
            except Exception:
                pass
