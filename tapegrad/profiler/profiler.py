"""torch.profiler.profiler: the scheduled profiler (`profile`), its schedule and trace handlers.

The recording itself is torch.autograd.profiler's (tapegrad/autograd/profiler.py), as in torch; this module
is torch's state machine over it: the same ProfilerAction sequence from `schedule(wait, warmup, active,
repeat, skip_first)`, the same transitions between actions, `on_trace_ready` called at the same steps, the
`ProfilerStep#N` ranges when a schedule is given. A WARMUP step records nothing here (Kineto's warm-up has no
CPU events either).
"""
import json
import os
import time
from enum import Enum
from functools import partial
from warnings import warn

from ..autograd import profiler as prof
from .._warnings import user_stacklevel

__all__ = ["supported_activities", "ProfilerAction", "schedule", "tensorboard_trace_handler", "profile",
           "ExecutionTraceObserver"]

PROFILER_STEP_NAME = "ProfilerStep"
_WARNINGS_SHOWN = set()


def _warn_once(msg, category=UserWarning, stacklevel=user_stacklevel()):
    if msg not in _WARNINGS_SHOWN:
        _WARNINGS_SHOWN.add(msg)
        warn(msg, category=category, stacklevel=stacklevel)


class ProfilerActivity(Enum):
    """torch.profiler.ProfilerActivity: tapegrad records CPU only (supported_activities())."""
    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerAction(Enum):
    """Profiler actions that can be taken at the specified intervals."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def supported_activities():
    """The activities the profiler can record: {ProfilerActivity.CPU} (tapegrad runs on the CPU only)."""
    return {ProfilerActivity.CPU}


def _parse_activities(activities):
    result, filters = set(), {}
    for item in activities:
        if isinstance(item, ProfilerActivity):
            if item in result:
                raise ValueError(f"Activity {item} specified more than once")
            result.add(item)
        elif isinstance(item, dict):
            for key, types in item.items():
                if key in result:
                    raise ValueError(f"Activity {key} specified more than once")
                result.add(key)
                filters[key] = set(types)
        else:
            raise TypeError(f"Expected ProfilerActivity or dict, but got {type(item).__name__}")
    return result, filters


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """Returns a callable that can be used as profiler ``schedule`` argument: skip the first ``skip_first``
    steps, then wait ``wait`` steps, warm up ``warmup`` steps, record ``active`` steps, and repeat the cycle
    (``repeat`` times; 0: until profiling ends). ``skip_first_wait``: the first cycle skips its wait."""

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=user_stacklevel())
    return schedule_fn


def _default_schedule_fn(_):
    """Default profiler behavior: records every step."""
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """Writes each trace to ``dir_name`` as ``{worker_name}.{time_ns}.pt.trace.json`` (``.gz`` with use_gzip),
    the files TensorBoard's profiler plugin reads; worker_name defaults to ``{hostname}_{pid}``."""

    def handler_fn(p):
        import socket  # noqa: PLC0415  (stdlib, only for the default worker name)
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name = file_name + ".gz"
        p.export_chrome_trace(os.path.join(dir_name, file_name), use_python_export=use_python_export)

    return handler_fn


class ExecutionTraceObserver:
    """torch's execution trace (a graph of the run for replay tools): not recorded by tapegrad."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.profiler.ExecutionTraceObserver: tapegrad records no execution traces "
                                  "(use profile's export_chrome_trace)")

    @staticmethod
    def build_execution_trace_obs_from_env():
        return None


class _KinetoProfile:
    """The low-level profiler: start(), stop(), and the results of the last recorded span."""

    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, custom_trace_id_callback=None, post_processing_timeout_s=None):
        if activities is not None:
            self.activities, self.activity_filters = _parse_activities(activities)
        else:
            self.activities, self.activity_filters = supported_activities(), {}
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        if execution_trace_observer is not None:
            raise NotImplementedError("torch.profiler.profile(execution_trace_observer=...): tapegrad records no "
                                      "execution traces")
        self.execution_trace_observer = None
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.post_processing_timeout_s = post_processing_timeout_s
        self.profiler = None
        self.has_cudagraphs = False
        self.mem_tl = None
        self.use_device = None
        for activity, device in ((ProfilerActivity.CUDA, "cuda"), (ProfilerActivity.XPU, "xpu"),
                                 (ProfilerActivity.MTIA, "mtia"), (ProfilerActivity.HPU, "hpu"),
                                 (ProfilerActivity.PrivateUse1, "privateuseone")):
            if activity in self.activities:
                self.use_device = device
                break
        self.preset_metadata = {}
        self._trace_metadata = {}

    def start(self):
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        self.stop_trace()

    def prepare_trace(self):
        if self.profiler is not None and not self.acc_events:
            _warn_once("Warning: Profiler clears events at the end of each cycle. Only events from the current "
                       "cycle will be reported. To keep events across cycles, set acc_events=True.")
        if self.profiler is None or not self.acc_events:
            self.profiler = prof.profile(
                use_cpu=(ProfilerActivity.CPU in self.activities), use_device=self.use_device,
                record_shapes=self.record_shapes, with_flops=self.with_flops, profile_memory=self.profile_memory,
                with_stack=self.with_stack, with_modules=self.with_modules, use_kineto=True,
                experimental_config=self.experimental_config, acc_events=self.acc_events,
                custom_trace_id_callback=self.custom_trace_id_callback,
                post_processing_timeout_s=self.post_processing_timeout_s)
        self.profiler._prepare_trace()

    def start_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        self.profiler._start_trace()
        for flag in ("profile_memory", "with_stack", "record_shapes", "with_modules", "with_flops"):
            if getattr(self, flag):
                self.add_metadata_json(flag, "1")
        for k, v in self.preset_metadata.items():
            self.add_metadata_json(k, v)

    def stop_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        self.profiler.__exit__(None, None, None)

    def export_chrome_trace(self, path, use_python_export=False):
        """Exports the collected trace in Chrome JSON format (chrome://tracing, Perfetto, TensorBoard); a path
        ending in .gz is gzipped. Only the last cycle of a schedule is exported."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting chrome trace")
        metadata = {k: json.loads(v) for k, v in self._trace_metadata.items()}
        return self.profiler.export_chrome_trace(path, metadata=metadata)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting stacks")
        return self.profiler.export_stacks(path, metric)

    def toggle_collection_dynamic(self, enable, activities):
        raise NotImplementedError("torch.profiler.profile.toggle_collection_dynamic: not supported by tapegrad's "
                                  "profiler (use a schedule, or start() and stop())")

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """Averages events, grouping them by operator name and (optionally) input shapes, stack and overload
        name; an EventList of FunctionEventAvg."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.profiler.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def events(self):
        """The list of unaggregated FunctionEvents, for the trace callback or after profiling has finished."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before accessing events")
        return self.profiler.function_events

    def add_metadata(self, key, value):
        self._trace_metadata[key] = '"' + value.replace('"', '\\"') + '"'

    def add_metadata_json(self, key, value):
        self._trace_metadata[key] = value

    def preset_metadata_json(self, key, value):
        self.preset_metadata[key] = value

    def export_memory_timeline(self, path, device=None):
        raise NotImplementedError("torch.profiler.profile.export_memory_timeline: tapegrad's profiler records no "
                                  "memory timeline (profile_memory=True gives each op's allocated bytes)")


def _unreachable_transition(prev, cur):
    raise AssertionError(f"Unreachable transition ({prev}, {cur})")


class profile(_KinetoProfile):
    """Profiler context manager: records tapegrad's ops on the CPU (see the module docstring of
    tapegrad/autograd/profiler.py), with torch's schedule, on_trace_ready and step()."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        if activities is not None:
            activities_set = set()
            for item in activities:
                if isinstance(item, ProfilerActivity):
                    activities_set.add(item)
                elif isinstance(item, dict):
                    activities_set.update(item.keys())
        else:
            activities_set = supported_activities()
        if use_cuda is not None:
            warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning, stacklevel=user_stacklevel())
            if use_cuda:
                activities_set.add(ProfilerActivity.CUDA)
            elif ProfilerActivity.CUDA in activities_set:
                activities_set.remove(ProfilerActivity.CUDA)
        if len(activities_set) == 0:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config, execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events, custom_trace_id_callback=custom_trace_id_callback,
                         post_processing_timeout_s=post_processing_timeout_s)
        if schedule:
            self.schedule = schedule
            self.record_steps = True  # (step markers in the trace and table)
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn = None
        schedule_action = self.schedule(self.step_num)
        if schedule_action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be "
                             "returned by a user-provided schedule")
        self.current_action = schedule_action
        self._prev_schedule_action = schedule_action
        A = ProfilerAction
        self.action_map = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [partial(warn, "Incorrect schedule: WARMUP followed by NONE"), self.start_trace,
                                 self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [partial(warn, "Incorrect schedule: RECORD followed by NONE"), self.stop_trace],
            (A.RECORD, A.WARMUP): [partial(warn, "Incorrect schedule: RECORD followed by WARMUP"), self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready, self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                            self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                                     self.start_trace],
            (A.NONE, A.DEVICE_STOPPED): [partial(_unreachable_transition, "NONE", "DEVICE_STOPPED")],
            (A.RECORD_AND_SAVE, A.DEVICE_STOPPED): [partial(_unreachable_transition, "RECORD_AND_SAVE",
                                                            "DEVICE_STOPPED")],
            # used for exit action
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
            (A.DEVICE_STOPPED, None): [],
        }
        prof.KinetoStepTracker.init_step_count(PROFILER_STEP_NAME)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        prof.KinetoStepTracker.erase_step_count(PROFILER_STEP_NAME)

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)
        self.current_action = self._prev_schedule_action

    def step(self):
        """Signals the profiler that the next profiling step has started."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        next_step = self.step_num + 1
        schedule_action = self.schedule(next_step)
        if schedule_action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be "
                             "returned by a user-provided schedule")
        self.step_num = next_step
        self.current_action = schedule_action
        self._prev_schedule_action = schedule_action
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def set_custom_trace_id_callback(self, callback):
        self.custom_trace_id_callback = callback

    def get_trace_id(self):
        if self.profiler is None:
            return None
        return self.profiler.trace_id

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action):
        action_list = self.action_map.get((prev_action, current_action))
        if action_list:
            for action in action_list:
                action()
