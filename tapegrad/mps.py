"""torch.mps: Apple's GPU backend, absent here as in any non-macOS torch build. manual_seed and seed do
nothing (they do not touch the CPU generator), as in torch without MPS."""


def is_available():
    return False


def device_count():
    return 0


def manual_seed(seed):
    pass


def seed():
    pass


def synchronize():
    raise RuntimeError("Cannot execute deviceSynchronize() without MPS backend.")


def empty_cache():
    raise RuntimeError("Cannot execute emptyCache() without MPS backend.")
