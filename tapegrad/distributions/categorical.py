"""torch.distributions.Categorical."""
import functools
import math

import numpy as np

from . import constraints
from ..ops.sort import multinomial
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits
from .._dtype import to_numpy_dtype
from ..tensor import _new

__all__ = ["Categorical"]


@functools.lru_cache(maxsize=None)
def _min_real(dtype):
    """torch.finfo(dtype).min, as a float."""
    return float(np.finfo(to_numpy_dtype(dtype)).min)


class Categorical(Distribution):
    """A categorical distribution over {0, ..., K-1} parameterized by `probs` or `logits` (not both).

    sample() draws as torch.multinomial(probs_2d, n, True) does on the CPU (the same stream for the same seed).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        param_shape = self._param.size()
        self._num_events = param_shape[-1]
        batch_shape = param_shape[:-1] if len(param_shape) > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = tuple(batch_shape)
        param_shape = batch_shape + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        from .. import full
        return full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        from .. import full
        return full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        n = int(np.prod(sample_shape, dtype=np.int64)) if sample_shape else 1
        probs_2d = self.probs.detach()._data.reshape(-1, self._num_events)
        samples_2d = multinomial(_new(probs_2d), n, True)._data.T
        return _new(np.ascontiguousarray(samples_2d).reshape(tuple(self._extended_shape(sample_shape))))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        log_pmf = self.logits
        if value.shape[:-1] != log_pmf.shape[:-1]:  # (torch's broadcast_tensors: only what differs is expanded)
            shape = np.broadcast_shapes(tuple(value.shape), tuple(log_pmf.shape))
            if log_pmf.shape != shape:
                log_pmf = log_pmf.expand(shape)
            if value.shape != shape[:-1] + (1,):
                value = value.expand(shape[:-1] + (1,))
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=_min_real(self.logits.dtype))
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        from .. import arange, long
        values = arange(self._num_events, dtype=long)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
