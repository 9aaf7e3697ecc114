"""torch.multiprocessing: Python's multiprocessing, with tensors sent through shared memory (shared.py), torch's
`spawn` and its sharing-strategy functions."""
import multiprocessing
import traceback
from multiprocessing import *  # noqa: F401,F403

from . import shared  # noqa: F401  (registers how multiprocessing sends tensors)

__all__ = multiprocessing.__all__ + ["ProcessContext", "ProcessExitedException", "ProcessRaisedException",
                                     "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy",
                                     "spawn", "start_processes"]

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = ["file_descriptor"]


def get_all_sharing_strategies():
    return set(_STRATEGIES)


def get_sharing_strategy():
    return _strategy[0]


def set_sharing_strategy(new_strategy):
    """Accepted for torch's scripts; tapegrad shares through named segments whichever is set."""
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"Sharing strategy {new_strategy} not in {_STRATEGIES}")
    _strategy[0] = new_strategy


class ProcessException(Exception):
    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A process started by spawn raised: its traceback is the message."""


class ProcessExitedException(ProcessException):
    """A process started by spawn exited with a nonzero code (or by a signal)."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        raise SystemExit(1)


class ProcessContext:
    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Wait for the processes (all, or until one fails); True when all have exited cleanly. A failed one ends
        the others and raises ProcessRaisedException (its traceback) or ProcessExitedException."""
        sentinels = {p.sentinel: i for i, p in enumerate(self.processes) if p.exitcode is None}
        while sentinels:
            ready = multiprocessing.connection.wait(list(sentinels), timeout=timeout)
            if not ready:
                return False
            for sentinel in ready:
                i = sentinels.pop(sentinel)
                process = self.processes[i]
                process.join()
                if process.exitcode != 0:
                    self._fail(i)
        return True

    def _fail(self, i):
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        process, queue = self.processes[i], self.error_queues[i]
        if not queue.empty():
            raise ProcessRaisedException(f"\n\n-- Process {i} terminated with the following error:\n{queue.get()}",
                                         i, process.pid)
        code = process.exitcode
        if code < 0:
            import signal  # (only to name a signal)
            name = signal.Signals(-code).name
            raise ProcessExitedException(f"process {i} terminated with signal {name}", i, process.pid, code, name)
        raise ProcessExitedException(f"process {i} terminated with exit code {code}", i, process.pid, code)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run fn(i, *args) in nprocs processes; join them (raising where one failed), or return their context."""
    context = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        queue = context.SimpleQueue()
        process = context.Process(target=_wrap, args=(fn, i, args, queue), daemon=daemon)
        process.start()
        processes.append(process)
        queues.append(queue)
    pc = ProcessContext(processes, queues)
    if not join:
        return pc
    while not pc.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    return start_processes(fn, args, nprocs, join, daemon, start_method)
