"""torch.backends.cudnn: unavailable; its flags are plain attributes, as in a CPU-only torch build."""
enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10


def is_available():
    return False


def version():
    return None
