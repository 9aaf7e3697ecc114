"""torch.utils.benchmark.utils: the modules scripts import (common, timer, compare)."""
