"""glibc's malloc, told to keep the memory a training step frees for the next step.

A step allocates its activations, their gradients and the backward's adjoint blocks (megabytes each for a CNN),
frees them, and allocates them again. glibc serves a block above its mmap threshold with fresh pages, and gives
the top of its heap back to the system once more than its trim threshold of it is free, so each step faults all
of that memory in again: a LeNet-5 training step at batch 64 took 8.7 ms with 2,900 page faults a step, and 4.6
ms with none under the thresholds below (benchmarks.layers' T1 case, one thread). glibc raises both itself after
it frees a large block, up to these same ceilings (32 MiB and twice that), so a process that has run torch, or
anything else that frees large blocks, already runs so; tapegrad sets them when it is imported. A process that
chose its own (the MALLOC_* environment variables, GLIBC_TUNABLES) keeps them, and other C libraries are left
as they are. The cost: up to 64 MiB of freed memory stays with the process.
"""
import ctypes
import os

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: the most its own adjustment reaches
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what glibc's adjustment sets with it
_OWN_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


def keep_freed_memory():
    """Set glibc's thresholds (above); False where the C library is not glibc or the process chose its own."""
    if any(v in os.environ for v in _OWN_SETTINGS) or "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return False
        mallopt = ctypes.CDLL(None).mallopt
    except (ValueError, OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
