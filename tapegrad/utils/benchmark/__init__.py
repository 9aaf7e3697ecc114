"""torch.utils.benchmark: Timer, Measurement and Compare (Python statements; no C++ or Callgrind)."""
from .utils.common import *  # noqa: F401,F403
from .utils.timer import *  # noqa: F401,F403
from .utils.compare import *  # noqa: F401,F403
from .utils.fuzzer import *  # noqa: F401,F403  (names only: making one raises)
from .utils.valgrind_wrapper.timer_interface import *  # noqa: F401,F403  (names only: no Callgrind)
from .utils import common, compare, timer  # noqa: F401
