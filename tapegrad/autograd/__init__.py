"""torch.autograd: backward, grad, Variable, grad modes."""
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, no_grad,  # noqa: F401
                        set_grad_enabled)
from ..anomaly import detect_anomaly, set_detect_anomaly  # noqa: F401
from .api import Variable, backward, grad  # noqa: F401
from .function import Function  # noqa: F401
from . import functional  # noqa: F401
from . import forward_ad  # noqa: F401
from .gradcheck import gradcheck, gradgradcheck  # noqa: F401
from .inspect import dump, tape_stats  # noqa: F401
from . import profiler, profiler_util  # noqa: F401  (torch.autograd.profiler: the CPU profiler torch.profiler builds on)
