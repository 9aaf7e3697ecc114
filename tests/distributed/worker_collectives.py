"""Run under mpiexec -n N: every collective against NumPy on every rank (float32/float64/int64, contiguous and
not), async work, point to point, objects, subgroups, mismatch errors, destroy and re-init. Prints "OK rank r"."""
import datetime
import time
import warnings

import numpy as np

import tapegrad as torch
import tapegrad.distributed as dist
from tapegrad.tensor import _new

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
DTYPES = (np.float32, np.float64, np.int64)
checks = 0


def value(rank, dtype, shape=(3, 4), salt=0):
    """What rank `rank` contributes: small integers, so float sums and products are exact in any order."""
    rng = np.random.default_rng(1000 * rank + 17 * salt)
    return rng.integers(-4, 5, size=shape).astype(dtype)


def tensor(a, contiguous):
    """A tensor holding a copy of a: C-contiguous, or a strided view into a larger array."""
    if contiguous:
        return _new(a.copy())
    big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    view = big[..., ::2]
    view[...] = a
    assert not view.flags.c_contiguous
    return _new(view)  # (the view keeps `big` alive)


def same(t, expected, what):
    global checks
    got = t.detach().numpy() if isinstance(t, torch.Tensor) else t
    assert got.dtype == np.asarray(expected).dtype, (what, got.dtype, np.asarray(expected).dtype)
    assert got.shape == np.asarray(expected).shape, (what, got.shape)
    np.testing.assert_allclose(got, expected, rtol=1e-6 if got.dtype == np.float32 else 1e-12, err_msg=what)
    checks += 1


every = range(n)
for dt in DTYPES:
    for contiguous in (True, False):
        case = f"{np.dtype(dt).name} {'contiguous' if contiguous else 'strided'}"
        mine = value(r, dt)
        all_values = [value(k, dt) for k in every]
        # all_reduce, each op
        ops = [(dist.ReduceOp.SUM, np.sum), (dist.ReduceOp.PRODUCT, np.prod), (dist.ReduceOp.MIN, np.min),
               (dist.ReduceOp.MAX, np.max)]
        if dt != np.int64:
            ops.append((dist.ReduceOp.AVG, np.mean))
        for op, ref in ops:
            t = tensor(mine, contiguous)
            assert dist.all_reduce(t, op=op) is None
            same(t, ref(np.stack(all_values), axis=0).astype(dt), f"all_reduce {op.name} {case}")
        # async all_reduce
        t = tensor(mine, contiguous)
        work = dist.all_reduce(t, async_op=True)
        assert work.wait() is True and work.is_completed()
        same(t, np.sum(all_values, axis=0).astype(dt), f"async all_reduce {case}")
        # broadcast from the last rank
        t = tensor(mine, contiguous)
        dist.broadcast(t, src=n - 1)
        same(t, all_values[-1], f"broadcast {case}")
        t = tensor(mine, contiguous)
        dist.broadcast(t, src=0, async_op=True).wait()
        same(t, all_values[0], f"async broadcast {case}")
        # reduce to rank 1 % n
        dst = 1 % n
        t = tensor(mine, contiguous)
        dist.reduce(t, dst=dst, op=dist.ReduceOp.MAX)
        if r == dst:
            same(t, np.max(all_values, axis=0), f"reduce {case}")
        # all_gather into a list, and into one tensor
        outs = [tensor(np.zeros((3, 4), dt), contiguous) for _ in every]
        dist.all_gather(outs, tensor(mine, contiguous))
        for k in every:
            same(outs[k], all_values[k], f"all_gather [{k}] {case}")
        out = _new(np.zeros((3 * n, 4), dt))
        dist.all_gather_into_tensor(out, tensor(mine, contiguous))
        same(out, np.concatenate(all_values), f"all_gather_into_tensor {case}")
        out = _new(np.zeros((n, 3, 4), dt))
        dist.all_gather_into_tensor(out, tensor(mine, contiguous), async_op=True).wait()
        same(out, np.stack(all_values), f"all_gather_into_tensor stacked {case}")
        # gather to the last rank
        gl = [tensor(np.zeros((3, 4), dt), contiguous) for _ in every] if r == n - 1 else None
        dist.gather(tensor(mine, contiguous), gl, dst=n - 1)
        if r == n - 1:
            for k in every:
                same(gl[k], all_values[k], f"gather [{k}] {case}")
        # scatter from rank 0
        parts = [value(k, dt, salt=7) for k in every]
        t = tensor(np.zeros((3, 4), dt), contiguous)
        dist.scatter(t, [tensor(p, contiguous) for p in parts] if r == 0 else None, src=0)
        same(t, parts[r], f"scatter {case}")
        # reduce_scatter_tensor
        big = [value(k, dt, (2 * n, 4), salt=3) for k in every]
        t = tensor(np.zeros((2, 4), dt), contiguous)
        dist.reduce_scatter_tensor(t, tensor(big[r], contiguous))
        same(t, np.sum(big, axis=0)[2 * r: 2 * r + 2], f"reduce_scatter_tensor {case}")
        # all_to_all_single, equal and uneven splits (rank k sends j + k + 1 rows to rank j)
        t = tensor(np.zeros((2 * n, 4), dt), contiguous)
        dist.all_to_all_single(t, tensor(big[r], contiguous))
        same(t, np.concatenate([big[k][2 * r: 2 * r + 2] for k in every]), f"all_to_all_single {case}")
        sends = {k: [j + k + 1 for j in every] for k in every}
        rows = {k: value(k, dt, (sum(sends[k]), 4), salt=5) for k in every}
        starts = {k: np.concatenate([[0], np.cumsum(sends[k])]) for k in every}
        t = tensor(np.zeros((sum(sends[k][r] for k in every), 4), dt), contiguous)
        dist.all_to_all_single(t, tensor(rows[r], contiguous), [sends[k][r] for k in every], sends[r])
        same(t, np.concatenate([rows[k][starts[k][r]: starts[k][r + 1]] for k in every]), f"all_to_all uneven {case}")
        # point to point around the ring
        t = tensor(np.zeros((3, 4), dt), contiguous)
        if n > 1:
            send = dist.isend(tensor(mine, contiguous), dst=(r + 1) % n)
            assert dist.recv(t, src=(r - 1) % n) == (r - 1) % n
            send.wait()
            same(t, all_values[(r - 1) % n], f"isend/recv {case}")
            t = tensor(np.zeros((3, 4), dt), contiguous)
            work = dist.irecv(t, src=(r + 1) % n)
            dist.send(tensor(mine, contiguous), dst=(r - 1) % n)
            work.wait()
            same(t, all_values[(r + 1) % n], f"send/irecv {case}")

# float16 is reduced in float32
t = _new(value(r, np.float16))
dist.all_reduce(t)
same(t, np.sum([value(k, np.float16) for k in every], axis=0).astype(np.float16), "all_reduce float16")

# a 0-d tensor and a tensor that requires grad (its version is bumped, as an in-place op's)
s = torch.tensor(float(r + 1))
dist.all_reduce(s)
same(s, np.float32(n * (n + 1) / 2), "all_reduce 0-d")
w = torch.ones(2, requires_grad=True)
v0 = w._version
with torch.no_grad():
    dist.all_reduce(w)
assert w._version > v0
same(w, np.full(2, n, np.float32), "all_reduce of a leaf")

# Work.wait with a timeout: a receive nobody sends to times out, stays pending, and completes later
if n > 1:
    t = torch.zeros(2)
    work = dist.irecv(t, src=(r + 1) % n, tag=7)
    try:
        work.wait(timeout=datetime.timedelta(milliseconds=50))
        raise AssertionError("Work.wait(timeout) did not time out")
    except RuntimeError as e:
        assert "did not complete within 0:00:00.050000" in str(e), e
    assert not work.is_completed()
    dist.barrier()  # (nobody sends before every rank's wait has timed out)
    dist.send(torch.full((2,), float(r)), dst=(r - 1) % n, tag=7)
    work.wait(timeout=30)
    same(t, np.full(2, (r + 1) % n, np.float32), "irecv after a timed-out wait")

# a wait that outlasts its spin sleeps between tests (_wait_all): a late rank's data still arrives, and an irecv
# from any rank still learns its sender
if n > 1:
    t = torch.full((3,), float(r + 1))
    if r == n - 1:
        time.sleep(0.05)
    dist.all_reduce(t, async_op=True).wait()
    same(t, np.full(3, n * (n + 1) / 2, np.float32), "async all_reduce with a late rank")
    if r == 0:
        time.sleep(0.05)
        dist.send(torch.full((2,), 5.0), dst=n - 1, tag=9)
    elif r == n - 1:
        t = torch.zeros(2)
        dist.irecv(t, tag=9).wait()
        same(t, np.full(2, 5.0, np.float32), "irecv from any rank, sent late")

# objects
objs = [None] * n
dist.all_gather_object(objs, {"rank": r, "tag": "x" * r})
assert objs == [{"rank": k, "tag": "x" * k} for k in every], objs
lst = [r, "from", r] if r == n - 1 else [None, None, None]
dist.broadcast_object_list(lst, src=n - 1)
assert lst == [n - 1, "from", n - 1], lst

# a subgroup of the first and last rank: every rank calls new_group, members use it
sub = dist.new_group(sorted({0, n - 1}))
if r in (0, n - 1):
    t = torch.tensor([float(r)])
    dist.all_reduce(t, group=sub)
    same(t, np.array([float(n - 1)], np.float32), "all_reduce in a subgroup")
    assert dist.get_world_size(sub) == (2 if n > 1 else 1)
    dist.broadcast(t, src=n - 1, group=sub)
else:
    assert sub is dist.GroupMember.NON_GROUP_MEMBER
    assert dist.get_rank(sub) == -1 and dist.get_world_size(sub) == -1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist.all_reduce(torch.ones(1), group=sub)
    assert "does not belong to the given group" in str(caught[0].message)
dist.barrier()
dist.barrier(async_op=True).wait()

# mismatches: every rank raises the same clear error, and the group stays usable
if n > 1:
    for _ in range(2):  # the second time each rank's fingerprint comes from its cache
        try:
            dist.all_reduce(torch.ones(2 + r))
            raise AssertionError("a shape mismatch was not detected")
        except RuntimeError as e:
            assert "Detected mismatch between collectives on ranks" in str(e) and "TensorShape=[2]" in str(e), e
    try:
        dist.all_reduce(torch.ones(2), op=dist.ReduceOp.MAX if r == 0 else dist.ReduceOp.SUM)
        raise AssertionError("a reduce op mismatch was not detected")
    except RuntimeError as e:
        assert "ReduceOp=MAX" in str(e) and "ReduceOp=SUM" in str(e), e
    t = torch.ones(2)
    dist.all_reduce(t)  # the cached fingerprints of matching calls still match
    same(t, np.full(2, n, np.float32), "all_reduce after mismatches")
    try:
        dist.broadcast(torch.ones(3, dtype=torch.float64 if r == 0 else torch.float32), src=0)
        raise AssertionError("a dtype mismatch was not detected")
    except RuntimeError as e:
        assert "TensorDtype=float64" in str(e) and "TensorDtype=float32" in str(e), e
    try:
        if r == 0:
            dist.all_reduce(torch.ones(3))
        else:
            dist.broadcast(torch.ones(3), src=0)
        raise AssertionError("different collectives were not detected")
    except RuntimeError as e:
        assert "OpType=ALL_REDUCE" in str(e) and "OpType=BROADCAST" in str(e), e
    for make in (lambda: torch.ones(3, dtype=torch.float64 if r == n - 1 else torch.float32),
                 lambda: torch.ones(2, dtype=torch.int64 if r == 0 else torch.float64)):
        try:
            dist.all_reduce(make())
            raise AssertionError("a dtype mismatch in all_reduce was not detected")
        except RuntimeError as e:
            assert "Detected mismatch between collectives on ranks" in str(e), e
            assert f"rank {n - 1} is running OpType=ALL_REDUCE, TensorShape=[3], TensorDtype=float64" in str(e) or \
                "rank 0 is running OpType=ALL_REDUCE, TensorShape=[2], TensorDtype=int64" in str(e), e
    mine = torch.int64 if r == 0 else torch.int32  # (each rank's output list agrees with its own input)
    try:
        dist.all_gather([torch.zeros(2, dtype=mine) for _ in every], torch.ones(2, dtype=mine))
        raise AssertionError("a dtype mismatch in all_gather was not detected")
    except RuntimeError as e:
        assert "rank 0 is running OpType=ALL_GATHER, TensorShape=[2], TensorDtype=int64" in str(e) and \
            f"rank {n - 1} is running OpType=ALL_GATHER, TensorShape=[2], TensorDtype=int32" in str(e), e

# point to point: a message of another dtype (the same number of bytes, which MPI alone would accept) is
# reported by recv, recv from any rank and irecv's wait; one of another size raises before writing anything
if n > 1:
    right, left = (r + 1) % n, (r - 1) % n
    sent = np.arange(4, dtype=np.float64) + r
    for kind in ("recv", "recv any", "irecv"):
        send = dist.isend(torch.tensor(sent), dst=right, tag=11)
        t = torch.zeros(4, dtype=torch.int64)
        try:
            if kind == "irecv":
                dist.irecv(t, src=left, tag=11).wait()
            else:
                dist.recv(t, src=None if kind == "recv any" else left, tag=11)
            raise AssertionError(f"a dtype mismatch in {kind} was not detected")
        except RuntimeError as e:
            assert str(e) == (f"{kind.split()[0]}: rank {left} sent a tensor of another dtype: it sent TensorShape="
                              f"[4], TensorDtype=float64; this rank received into TensorShape=[4], "
                              f"TensorDtype=int64"), e
        send.wait()
    send = dist.isend(torch.ones(3), dst=right, tag=12)
    t = torch.full((2,), -1.0)
    try:
        dist.recv(t, src=left, tag=12)
        raise AssertionError("a size mismatch in recv was not detected")
    except RuntimeError as e:
        assert str(e) == f"recv: rank {left} sent 12 bytes, but the receiving tensor ([2], float32) holds 8", e
    same(t, np.full(2, -1, np.float32), "recv leaves the tensor alone on a size mismatch")
    send.wait()
    dist.send(torch.tensor(sent), dst=right, tag=12)  # the refused message was consumed: this one comes next
    t = torch.zeros(4, dtype=torch.float64)
    assert dist.recv(t, src=left, tag=12) == left
    same(t, np.arange(4, dtype=np.float64) + left, "recv after refused messages")
    send = dist.isend(torch.zeros(0, dtype=torch.int64), dst=right, tag=13)  # an empty message still carries its header
    t = torch.zeros(0, dtype=torch.int64)
    assert dist.recv(t, src=left, tag=13) == left and t.shape == (0,)
    send.wait()
try:
    dist.all_gather([torch.zeros(2)] * (n + 1), torch.zeros(2))
    raise AssertionError("a wrong list length was not detected")
except RuntimeError as e:
    assert f"expected length {n}, got {n + 1}" in str(e), e
t = torch.ones(1)
dist.all_reduce(t)
same(t, np.array([n], np.float32), "all_reduce after the mismatches")

# destroy: the process stays usable, and a new group can be made
dist.destroy_process_group()
assert not dist.is_initialized()
x = torch.ones(3, requires_grad=True)
(x * x).sum().backward()
same(x.grad, np.full(3, 2, np.float32), "autograd after destroy_process_group")
dist.init_process_group()
t = torch.ones(1)
dist.all_reduce(t)
same(t, np.array([n], np.float32), "all_reduce after a second init_process_group")
dist.destroy_process_group()
print(f"OK rank {r} checks {checks}", flush=True)
