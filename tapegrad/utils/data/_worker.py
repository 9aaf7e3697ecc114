"""DataLoader worker processes, as torch runs them: worker i seeds Python's `random` and tapegrad's generator
with base_seed + i and NumPy's with torch's _generate_state(base_seed, i), runs worker_init_fn(i), then
fetches the batches whose indices the main process sends it (dataloader._MultiProcessingDataLoaderIter, which
yields them in order, or as they come with in_order=False)."""
import random as _pyrandom
import sys
import traceback
import warnings
from dataclasses import dataclass

import numpy as np


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
