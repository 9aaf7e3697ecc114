"""DistributedDataParallel: one model replica per process; gradients averaged across processes in backward.

Each parameter gets a tensor hook. tapegrad's backward hands leaves their gradients in one loop at the end of
the replay, one hook call per parameter: the hook writes the parameter's whole gradient (what .grad holds from
no_sync steps plus this backward's), divided by the world size, into its slot of a flat bucket (one per dtype,
about bucket_cap_mb each) and returns the slot, which becomes .grad (a view of the bucket, as torch's
gradient_as_bucket_view=True). The last expected parameter's hook sums the buckets across the ranks (MPI
all-reduces started in bucket order, then one wait for all). Since every gradient is ready only at the end of
the replay, an all-reduce cannot overlap the backward's compute (docs/distributed.md measures it).
"""
import contextlib
import functools
import zlib

import numpy as np

from ...grad_mode import is_grad_enabled, no_grad
from ...tape import F_REQ, OP_LEAF
from ...tensor import Tensor, _new
from ..modules.module import Module


UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This error indicates "
    "that your module has parameters that were not used in producing loss. You can enable unused parameter "
    "detection by passing the keyword argument `find_unused_parameters=True` to "
    "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function outputs participate "
    "in calculating loss. \nIf you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` function. Please include "
    "the loss function and the structure of the return value of `forward` of your module when reporting this "
    "issue (e.g. list, dict, iterable).\nParameter indices which did not receive grad for rank {rank}: {indices}")


class _Bucket:
    """Parameters reduced together: one dtype, one flat array per synchronized backward (a new one each time, so
    a .grad kept from the last step is not overwritten), `views` its parameter-shaped slots."""
    __slots__ = ("indices", "dtype", "offsets", "shapes", "size", "flat", "views")

    def __init__(self, indices, params):
        self.indices, self.dtype = indices, params[indices[0]]._data.dtype
        self.shapes = [params[i]._data.shape for i in indices]
        self.offsets = np.concatenate([[0], np.cumsum([params[i]._data.size for i in indices])]).tolist()
        self.size = self.offsets[-1]
        self.flat = self.views = None

    def allocate(self):
        flat = self.flat = np.empty(self.size, self.dtype)
        o = self.offsets
        self.views = [flat[o[k]: o[k + 1]].reshape(shape) for k, shape in enumerate(self.shapes)]


class _Iteration:
    """One synchronized backward's progress: which parameters got their gradient, how many of the expected."""
    __slots__ = ("ready", "expected", "count", "needed")

    def __init__(self, n, expected):
        self.ready, self.expected, self.count = [False] * n, expected, 0
        self.needed = n if expected is None else sum(expected)


def _tensors(obj, out):
    """The tensors in a forward's output (nested in tuples, lists and dicts), as torch's DDP finds them."""
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, out)
    return out


def _reachable_leaves(outputs):
    """ids of the leaf tensors the outputs' recorded history reaches (find_unused_parameters)."""
    found = set()
    for t in outputs:
        tape = t._tape
        if not t._requires_grad or tape is None:
            continue
        if t._is_leaf:
            found.add(id(t))
            continue
        row = tape.locate(t)
        stack, seen = [row] if row >= 0 else [], set()
        while stack:
            r = stack.pop()
            if r in seen or not tape.flags[r] & F_REQ:
                continue
            seen.add(r)
            if tape.op[r] == OP_LEAF:
                ref = tape.aux.get(r)
                leaf = ref() if ref is not None else None
                if leaf is not None:
                    found.add(id(leaf))
            else:
                stack.extend(tape.row_args(r))
    return found


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=None, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False, bucket_cap_mb_list=None, batched_grad_copy=False,
                 forward_sync_buffers=None):
        from ... import distributed as dist
        from ...distributed import distributed_c10d as c10d
        super().__init__()
        for name, value in (("delay_all_reduce_named_params", delay_all_reduce_named_params),
                            ("param_to_hook_all_reduce", param_to_hook_all_reduce),
                            ("mixed_precision", mixed_precision), ("device_mesh", device_mesh),
                            ("bucket_cap_mb_list", bucket_cap_mb_list)):
            if value is not None:
                raise NotImplementedError(f"tapegrad's DistributedDataParallel does not support {name}")
        if device_ids or output_device is not None:
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with single-device/"
                "multiple-device GPU modules or CPU modules, but got device_ids {}, output_device {}, and module "
                "parameters {{device(type='cpu')}}.".format(device_ids, output_device))
        pg = process_group if process_group is not None else c10d._default()
        params = [p for p in module.parameters() if p.requires_grad]
        for p in params:
            if p._data.dtype.name not in ("float32", "float64"):  # (tapegrad trains float16 nowhere else either)
                raise NotImplementedError(f"tapegrad's DistributedDataParallel averages float32 and float64 "
                                          f"gradients only; the module has a {p._data.dtype} parameter")
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        if any(type(m).__name__ == "SyncBatchNorm" for m in module.modules()):  # (torch's check, at construction)
            raise ValueError("SyncBatchNorm layers only work with GPU modules")
        self.module = module
        d = self.__dict__  # plain attributes (not submodules or parameters)
        d.update(process_group=pg, device_ids=None, output_device=None, dim=dim,
                 broadcast_buffers=True if broadcast_buffers is None else bool(broadcast_buffers),
                 find_unused_parameters=bool(find_unused_parameters), static_graph=bool(static_graph),
                 gradient_as_bucket_view=gradient_as_bucket_view,
                 bucket_bytes_cap=int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024),
                 require_backward_grad_sync=True, require_forward_param_sync=True,
                 _params=params, _world=pg.size(), _dist=dist, _c10d=c10d, _iteration=None,
                 modules_buffers=list(module.buffers()))  # (torch's name; fixed at construction, as torch's)
        self._verify_params_across_processes()
        if init_sync:
            with _no_grad():
                for t in list(module.parameters()) + list(module.buffers()):
                    dist.broadcast(t, src=pg.ranks[0], group=pg)
        self.__dict__["_buckets"], self.__dict__["_bucket_of"] = self._make_buckets(params)
        for i, p in enumerate(params):
            p.register_hook(functools.partial(self._grad_ready, i))

    # -- set-up ------------------------------------------------------------------------------------------
    def _verify_params_across_processes(self):
        """Every rank must hold the same parameters and buffers (count, shapes, dtypes): one fingerprint Allreduce
        (so the buffers' coalesced broadcast at each forward needs no check of its own)."""
        pg, c10d = self.process_group, self._c10d
        described = repr([[(tuple(t.shape), str(t._data.dtype)) for t in ts]
                          for ts in (self._params, self.modules_buffers)]).encode()
        digest = np.array([len(self._params), zlib.crc32(described)], np.int64)
        MPI = c10d._mpi()
        both = np.concatenate([digest, -digest])
        c10d._blocking(pg, "DistributedDataParallel's parameter check", pg.comm.Allreduce, MPI.IN_PLACE,
                       [both, MPI.INT64_T], MPI.MAX)
        if not np.array_equal(both[:2], -both[2:]):
            counts = np.empty(pg.size(), np.int64)
            c10d._blocking(pg, "the parameter report", pg.comm.Allgather,
                           [np.array([len(self._params)], np.int64), MPI.INT64_T], [counts, MPI.INT64_T])
            raise RuntimeError(
                f"DDP expects same model across all ranks, but the ranks' parameters or buffers differ in number, "
                f"shape or dtype: parameter counts by rank {counts.tolist()} (this is rank {self._dist.get_rank()}, "
                f"with shapes {[tuple(p.shape) for p in self._params]})")

    def _sync_buffers(self):
        """The buffers from the group's first rank: one broadcast per dtype of them all, packed into one array (as
        torch's coalesced broadcast), not one broadcast and one check per buffer (a BatchNorm network has three
        buffers per layer). Construction checked that every rank's buffers agree in shapes and dtypes."""
        pg, c10d = self.process_group, self._c10d
        MPI, root = c10d._mpi(), 0
        by_dtype = {}
        for b in self.modules_buffers:
            by_dtype.setdefault(b._data.dtype, []).append(b)
        for dtype, buffers in by_dtype.items():
            flat = np.concatenate([b._data.reshape(-1) for b in buffers]) if pg.rank() == root else \
                np.empty(sum(b._data.size for b in buffers), dtype)
            c10d._blocking(pg, "DistributedDataParallel's buffer broadcast", pg.comm.Bcast, c10d._buffer(flat), root)
            if pg.rank() != root:
                o = 0
                for b in buffers:
                    c10d._written(b, b._data, flat[o: o + b._data.size].reshape(b._data.shape))
                    o += b._data.size

    def _make_buckets(self, params):
        """Buckets of parameters in the order tapegrad's backward hands leaves their gradients (the order of
        their first use, which is the order of parameters() in a plain forward; torch's reverse order follows
        its graph walk), one dtype each, up to bucket_cap_mb. (torch's first bucket is smaller, 1 MiB, so that
        its all-reduce starts sooner; here nothing starts before the last gradient, and it would cost one more
        collective.)"""
        buckets, current, nbytes = [], {}, {}
        for i, p in enumerate(params):
            dt, nb = p._data.dtype, p._data.nbytes
            if dt in current and nbytes[dt] + nb > self.bucket_bytes_cap:
                buckets.append(_Bucket(current.pop(dt), params))
                nbytes[dt] = 0
            current.setdefault(dt, []).append(i)
            nbytes[dt] = nbytes.get(dt, 0) + nb
        buckets.extend(_Bucket(indices, params) for indices in current.values())
        bucket_of = [None] * len(params)
        for b, bucket in enumerate(buckets):
            for k, i in enumerate(bucket.indices):
                bucket_of[i] = (b, k)
        return buckets, bucket_of

    # -- forward -------------------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        syncing = self.require_backward_grad_sync and is_grad_enabled()
        it = self._iteration
        if syncing and it is not None and it.count:
            self.__dict__["_iteration"] = None
            missing = [i for i, ready in enumerate(it.ready) if not ready and (it.expected is None or it.expected[i])]
            raise RuntimeError(UNFINISHED.format(rank=self._dist.get_rank(), indices=" ".join(map(str, missing))))
        if self.broadcast_buffers and self.require_forward_param_sync and self.modules_buffers and self._world > 1:
            self._sync_buffers()
        out = self.module(*inputs, **kwargs)
        if syncing:
            expected = None  # every parameter
            if self.find_unused_parameters or self.static_graph:
                used = _reachable_leaves(_tensors(out, []))
                expected = [id(p) in used for p in self._params]
            self.__dict__["_iteration"] = _Iteration(len(self._params), expected)
            for bucket in self._buckets:
                bucket.flat = bucket.views = None
        elif is_grad_enabled():  # (under no_sync: its backward accumulates locally)
            self.__dict__["_iteration"] = None
        # (a forward under no_grad leaves the pending iteration alone, as torch's reducer: an EMA or logging forward
        # between a forward and its backward does not stop the gradients' averaging)
        return out

    def join(self, divide_by_initial_world_size=True, enable=True, throw_on_early_termination=False):
        raise NotImplementedError("tapegrad's DistributedDataParallel has no join() for uneven inputs: give every rank "
                                  "the same number of batches (DistributedSampler pads, or drop_last=True)")

    def register_comm_hook(self, state, hook):
        raise NotImplementedError("tapegrad's DistributedDataParallel has no communication hooks: its buckets are "
                                  "averaged by MPI's all-reduce")

    @contextlib.contextmanager
    def no_sync(self):
        """Gradients of the backward of a forward run inside accumulate in .grad without communication; the
        first synchronized backward after them averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.__dict__["require_backward_grad_sync"] = False
        try:
            yield
        finally:
            self.__dict__["require_backward_grad_sync"] = old

    # -- backward ------------------------------------------------------------------------------------------
    def _grad_ready(self, i, grad):
        """Hook of parameter i: its whole gradient (with what .grad holds from no_sync steps), divided by the world
        size, into its bucket slot (one pass, as torch's reducer); reduce full buckets; finish at the last. The
        replay makes the returned slot the parameter's .grad, so every .grad is a view of its bucket."""
        it = self._iteration
        if it is None:
            return None  # a forward under no_sync or no_grad: accumulate locally
        ready = it.ready
        if ready[i]:
            raise RuntimeError(
                f"Expected to mark a variable ready only once. This error is caused by one of the following "
                f"reasons: 1) Use of a module parameter outside the `forward` function, or 2) backward run more "
                f"than once in one iteration (retain_graph=True). Parameter at index {i} has been marked as ready "
                f"twice.")
        ready[i] = True
        b, k = self._bucket_of[i]
        bucket = self._buckets[b]
        if bucket.flat is None:
            bucket.allocate()
        slot = bucket.views[k]
        p = self._params[i]
        if p._grad is not None:
            np.add(p._grad._data, grad._data, out=slot)
            p._grad = None  # (the replay assigns the returned slot)
            if self._world > 1:
                slot *= 1 / self._world
        elif self._world > 1:
            np.multiply(grad._data, 1 / self._world, out=slot)
        else:
            np.copyto(slot, grad._data)
        if it.expected is None or it.expected[i]:
            it.count += 1
            if it.count == it.needed:
                self._finish(it)
        return _new(slot)

    def _finish(self, it):
        """All expected gradients are in: fill the slots of parameters this rank did not use (their accumulated
        .grad or zeros) and sum each bucket across the ranks, in bucket order. A parameter no rank used keeps .grad
        None. All at the end: nothing is left to overlap them with (every gradient arrives in the backward's last
        loop), and MPI (without an asynchronous progress thread, MPICH's default) moves a nonblocking collective's
        data only inside MPI calls, so starting a full bucket's earlier bought nothing. Nonblocking, with one wait
        for all: the ranks meet once, not once per bucket (on a loaded machine each meeting waits for the
        scheduler to run both ranks at once), and a long wait sleeps instead of holding the core (c10d._wait_all).
        Overlapping the all-reduces with the replay was built and measured no faster on 2 cores
        (docs/distributed.md)."""
        self.__dict__["_iteration"] = None
        params, ready, buckets = self._params, it.ready, self._buckets
        unused = [] if it.count == len(params) else [i for i in range(len(params)) if not ready[i]]
        for i in unused:
            b, k = self._bucket_of[i]
            bucket = buckets[b]
            if bucket.flat is None:
                bucket.allocate()
            slot, g = bucket.views[k], params[i]._grad
            if g is None:
                slot[...] = 0
            else:
                np.multiply(g._data, 1 / self._world, out=slot)
        if self._world == 1:
            return self._point_unused(unused, [params[i]._grad is not None for i in range(len(params))])
        pg, c10d = self.process_group, self._c10d
        MPI = c10d._mpi()
        requests = [pg.comm.Iallreduce(MPI.IN_PLACE, c10d._buffer(bucket.flat), MPI.SUM) for bucket in buckets]
        c10d._blocking(pg, "DistributedDataParallel's gradient all-reduce", c10d._wait_all, requests)
        if self.find_unused_parameters or self.static_graph:
            # which parameters some rank has a gradient for (every rank calls this, whatever it used)
            has_grad = np.array([ready[i] or params[i]._grad is not None for i in range(len(params))], np.int32)
            c10d._blocking(pg, "DistributedDataParallel's unused-parameter check", pg.comm.Allreduce, MPI.IN_PLACE,
                           [has_grad, MPI.INT32_T], MPI.MAX)
            self._point_unused(unused, has_grad.tolist())

    def _point_unused(self, unused, has_grad):
        for i in unused:
            if has_grad[i]:
                b, k = self._bucket_of[i]
                self._params[i]._grad = _new(self._buckets[b].views[k])

    def extra_repr(self):
        return ""


def _no_grad():
    return no_grad()
