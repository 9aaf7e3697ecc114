"""torch.futures: Future, collect_all, wait_all, as torch's Python API has them. tapegrad runs everything in the
calling thread, so a Future is completed by whoever holds it (`set_result`, `torch.jit.fork`'s eager call) and
`wait` never blocks on another thread: waiting on one that nobody completed raises instead of hanging."""

__all__ = ["Future", "collect_all", "wait_all"]

_PENDING = object()


class Future:
    """A value that is set once (`set_result` / `set_exception`); callbacks run when it is."""

    def __init__(self, *, devices=None):
        self._value, self._error, self._callbacks = _PENDING, None, []

    def done(self):
        return self._value is not _PENDING or self._error is not None

    def wait(self):
        if not self.done():
            raise RuntimeError("Future.wait(): the Future is not completed, and tapegrad runs no other thread that "
                               "could complete it (set_result first)")
        return self.value()

    def value(self):
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback):
        """A Future of callback(self), completed when this one is."""
        out = Future()

        def run(fut):
            try:
                out.set_result(callback(fut))
            except Exception as e:  # noqa: BLE001  (torch hands the callback's error to the chained Future)
                out.set_exception(RuntimeError(f"Got the following error when running the callback: "
                                               f"{type(e).__name__}: {e}"))
        self.add_done_callback(run)
        return out

    def add_done_callback(self, callback):
        if self.done():
            callback(self)
        else:
            self._callbacks.append(callback)

    def set_result(self, result):
        self._complete(result, None)

    def set_exception(self, result):
        if not isinstance(result, Exception):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(_PENDING, result)

    def _complete(self, value, error):
        if self.done():
            raise RuntimeError("Attempting to mark a completed Future as complete again. Note that a Future can "
                               "only be marked completed once.")
        self._value, self._error = value, error
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def __repr__(self):
        return f"<torch.jit.Future object at {hex(id(self))}>"


def collect_all(futures):
    """A Future of the list of `futures`, completed once all are."""
    out = Future()
    if not futures:
        out.set_result([])
        return out
    left = [len(futures)]

    def one_done(_):
        left[0] -= 1
        if left[0] == 0:
            out.set_result(list(futures))
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures):
    """The values of `futures`, in order (the first error raised)."""
    return [f.wait() for f in futures]
