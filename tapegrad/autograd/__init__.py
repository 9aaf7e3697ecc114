"""torch.autograd: backward, grad, Variable, grad modes."""
from .grad_mode import (enable_grad, enforce_grad_layout_policy, inference_mode, is_grad_enabled,  # noqa: F401
                        is_multithreading_enabled, is_view_replay_enabled, no_grad, set_grad_enabled,
                        set_multithreading_enabled)
from ..anomaly import detect_anomaly, set_detect_anomaly  # noqa: F401
from .api import Variable, backward, grad  # noqa: F401
from .function import Function  # noqa: F401
from . import functional  # noqa: F401
from . import forward_ad  # noqa: F401
from .gradcheck import gradcheck, gradgradcheck  # noqa: F401
from .inspect import dump, tape_stats  # noqa: F401
from . import profiler, profiler_util  # noqa: F401  (torch.autograd.profiler: the CPU profiler torch.profiler builds on)
