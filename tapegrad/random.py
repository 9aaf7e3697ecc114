"""Random numbers: one generator per process (torch.manual_seed), and torch.Generator objects."""
import numpy as np


class Generator:
    def __init__(self, device="cpu"):
        self._rng = np.random.default_rng()

    def manual_seed(self, seed):
        self._rng = np.random.default_rng(int(seed))
        self._seed = int(seed)
        return self

    def seed(self):
        s = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return getattr(self, "_seed", 0)

    def get_state(self):
        from .tensor import _new
        import json
        state = json.dumps(self._rng.bit_generator.state).encode()
        return _new(np.frombuffer(state, np.uint8).copy())

    def set_state(self, state):
        import json
        self._rng.bit_generator.state = json.loads(bytes(state._data.tolist()).decode())


default_generator = Generator().manual_seed(0)


def manual_seed(seed):
    default_generator.manual_seed(seed)
    return default_generator


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def _rng(generator):
    return (generator or default_generator)._rng


def uniform(shape, generator=None):
    return _rng(generator).random(shape)


def normal(shape, generator=None):
    return _rng(generator).standard_normal(shape)


def integers(low, high, shape, generator=None):
    return _rng(generator).integers(low, high, shape)


def permutation(n, generator=None):
    return _rng(generator).permutation(n)
