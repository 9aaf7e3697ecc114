"""torch.utils.benchmark: Timer, Measurement and Compare (Python statements; no C++ or Callgrind)."""
from .utils.common import *  # noqa: F401,F403
from .utils.timer import *  # noqa: F401,F403
from .utils.compare import *  # noqa: F401,F403
from .utils import common, compare, timer  # noqa: F401
