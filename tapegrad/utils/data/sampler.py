"""torch.utils.data.sampler: the index samplers, drawing the same index streams as torch's for a seed."""
import numpy as np

from ... import random
from ...ops.sort import multinomial
from ..._dtype import float64
from ...creation import as_tensor

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


# -- samplers -------------------------------------------------------------------------------------------
def _randperm(n, generator):
    return np.asarray(random.permutation(n, generator), np.int64)


def _fresh_generator():
    """A generator seeded from the default one (torch: RandomSampler without a generator)."""
    seed = int(random.integers(0, 2 ** 63, (), None))  # torch: empty((), int64).random_(), random64() % 2**63
    return random.Generator().manual_seed(seed)


_AT_ONCE = 1 << 24  # more indices than this are drawn lazily, never held in one array


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
        """All the indices at once (the fast TensorDataset path); None when there are too many to hold."""
        if self.num_samples > _AT_ONCE:
            return None
        return np.fromiter(iter(self), np.int64)  # (to exhaustion: torch draws a last, empty-sliced permutation)

    def __iter__(self):
        # drawn lazily, in torch's order: chunks of 32 with replacement (num_samples may be 10**10),
        # one permutation per pass over the data without
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from random.integers(0, n, (32,), generator).tolist()
            yield from random.integers(0, n, (self.num_samples % 32,), generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _randperm(n, generator).tolist()
            yield from _randperm(n, generator).tolist()[: self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):  # (torch.randperm from the default generator itself: only RandomSampler seeds a fresh one)
        for i in _randperm(len(self.indices), self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Indices drawn with the given weights: torch.multinomial(weights, num_samples, replacement), as torch."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        draws = multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)._data
        yield from draws.tolist()

    def __len__(self):
        return self.num_samples


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
            if order is None:
                return None
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
