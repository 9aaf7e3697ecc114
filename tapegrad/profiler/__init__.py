"""torch.profiler: tapegrad's CPU profiler (profile, record_function, schedule, tensorboard_trace_handler).

Events are tapegrad's op calls, named as torch names them (`aten::mul`), record_function ranges and backward
calls; see tapegrad/autograd/profiler.py for how they are seen and what is approximate. CPU only: CUDA in
`activities` is dropped with torch's warning on a CPU build ("CUDA is not available, disabling CUDA profiling").
"""
from ..autograd.profiler import DeviceType, kineto_available, record_function  # noqa: F401
from .profiler import (ExecutionTraceObserver, ProfilerAction, ProfilerActivity, _KinetoProfile,  # noqa: F401
                       profile, schedule, supported_activities, tensorboard_trace_handler)
from . import itt  # noqa: F401

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "DeviceType", "record_function", "ExecutionTraceObserver"]
