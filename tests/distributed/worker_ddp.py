"""Run under mpiexec -n N: K steps of DistributedDataParallel training equal one process training on the whole
batch (float64, 1e-10), with SGD and Adam, no_sync accumulation and uneven last batches. Each rank trains the
one-process reference itself, on the whole batch, and compares after every step. Prints "OK rank r"."""
import datetime

import numpy as np

import tapegrad as torch
import tapegrad.distributed as dist
from tapegrad.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
r, n = dist.get_rank(), dist.get_world_size()
nn = torch.nn
SAMPLES, BATCH, STEPS = 11, 4, 3  # batches of 4, 4, 3: the last one uneven, split unevenly over the ranks


class Net(nn.Module):
    def __init__(self, unused=False, scale=1.0):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh())
        self.head = nn.Linear(16, 2)
        if unused:
            self.spare = nn.Linear(16, 2)  # never used by forward
        self.register_buffer("scale", torch.full((2,), scale, dtype=torch.float64))

    def forward(self, x):
        return self.head(self.body(x)) * self.scale


def make(seed, unused=False, scale=1.0):
    torch.manual_seed(seed)
    return Net(unused, scale).double()


def replica(unused=False):
    """This rank's replica before DDP: rank 0's equals the reference; the others differ, parameters and buffer."""
    return make(0, unused) if r == 0 else make(100 + r, unused, scale=1.0 + r)


rng = np.random.default_rng(0)
X = torch.tensor(rng.standard_normal((SAMPLES, 5)))
Y = torch.tensor(rng.standard_normal((SAMPLES, 2)))


def batches():
    """(indices of the whole batch, this rank's shard of it) per step: explicit, uneven shards."""
    order = np.arange(SAMPLES)
    for step in range(STEPS):
        idx = order[(step * BATCH) % SAMPLES:][:BATCH]
        yield idx, np.array_split(idx, n)[r]


def loss_of(model, idx, total):
    """Summed squared error of the samples idx over `total` samples: the whole batch's mean once summed."""
    return ((model(X[idx]) - Y[idx]) ** 2).sum() / total


def check(reference, ddp, what):
    for (name, a), b in zip(reference.named_parameters(), ddp.module.parameters()):
        diff = np.abs(a.detach().numpy() - b.detach().numpy()).max()
        assert diff < 1e-10, f"{what}: parameter {name} differs from one process's by {diff}"


def optimizer(kind, params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9) if kind == "sgd" else torch.optim.Adam(params, lr=0.05)


for kind in ("sgd", "adam"):
    for accumulate in (False, True):
        for unused in (False, True):
            what = f"{kind}{' no_sync' if accumulate else ''}{' find_unused' if unused else ''}"
            reference = make(0, unused)
            model = replica(unused)  # DDP broadcasts rank 0's parameters and buffers
            ddp = DDP(model, find_unused_parameters=unused)
            assert np.all(model.scale.numpy() == 1.0), "buffers come from rank 0"
            check(reference, ddp, what + ", after construction")
            opt_ref, opt = optimizer(kind, reference.parameters()), optimizer(kind, ddp.parameters())
            for idx, shard in batches():
                opt_ref.zero_grad()
                opt.zero_grad()
                total = len(idx)
                if accumulate:  # two micro-batches: the first under no_sync, the second synchronises
                    halves = np.array_split(idx, 2)
                    for half in halves:
                        loss_of(reference, half, total).backward()
                    mine = [np.array_split(h, n)[r] for h in halves]
                    with ddp.no_sync():
                        (loss_of(ddp, mine[0], total) * n).backward()
                    assert all(p.grad is not None for p in model.body.parameters())
                    (loss_of(ddp, mine[1], total) * n).backward()
                else:
                    loss_of(reference, idx, total).backward()
                    (loss_of(ddp, shard, total) * n).backward()  # DDP averages: scale by n for the sum
                if unused:
                    assert model.spare.weight.grad is None and reference.spare.weight.grad is None
                opt_ref.step()
                opt.step()
                check(reference, ddp, what)

# a forward under no_grad between a forward and its backward (an EMA or logging forward) leaves the pending
# averaging alone, as torch's reducer: the gradients are still the whole batch's
reference, model = make(0), replica()
ddp = DDP(model, broadcast_buffers=False)  # (a second forward's broadcast would write the buffer the first saved)
idx, shard = next(iter(batches()))
loss_of(reference, idx, len(idx)).backward()
loss = loss_of(ddp, shard, len(idx)) * n
with torch.no_grad():
    ddp(X)
loss.backward()
for (name, a), b in zip(reference.named_parameters(), model.parameters()):
    assert np.allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12), ("no_grad forward", name)

# the torch error for a parameter no loss used, without find_unused_parameters
ddp = DDP(make(0, unused=True))
ddp(X).sum().backward()
try:
    ddp(X)
    raise AssertionError("an unfinished reduction was not reported")
except RuntimeError as e:
    assert str(e).startswith("Expected to have finished reduction in the prior iteration") and \
        f"Parameter indices which did not receive grad for rank {r}: 6 7" in str(e), e

# buffers follow rank 0's at every forward (one broadcast per dtype), unless broadcast_buffers=False
for broadcast in (True, False):
    model = make(0)
    model.register_buffer("seen", torch.zeros(3, dtype=torch.int64))
    ddp = DDP(model, broadcast_buffers=broadcast)
    model.scale.fill_(5.0 + r)
    model.seen.fill_(7 + r)
    ddp(X)
    mine = 0 if broadcast else r
    assert np.all(model.scale.numpy() == 5.0 + mine) and np.all(model.seen.numpy() == 7 + mine), \
        (broadcast, model.scale, model.seen)
if n > 1:  # buffers of other shapes are refused at construction, as other parameters are
    model = make(0)
    model.register_buffer("seen", torch.zeros(3 + r, dtype=torch.int64))
    try:
        DDP(model, init_sync=False)
        raise AssertionError("different buffers were not detected")
    except RuntimeError as e:
        assert "DDP expects same model across all ranks" in str(e), e

# state_dict keys and the module attribute, as torch's
model = make(0)
ddp = DDP(model)
assert ddp.module is model
assert list(ddp.state_dict()) == ["module." + k for k in model.state_dict()]

# a model whose parameters differ across ranks is refused on every rank
if n > 1:
    try:
        DDP(nn.Linear(3, 2 + r).double())
        raise AssertionError("different models were not detected")
    except RuntimeError as e:
        assert "DDP expects same model across all ranks" in str(e), e

# buckets: a small cap makes several; results are unchanged
reference, model = make(0), replica()
ddp = DDP(model, bucket_cap_mb=0.001)
assert len(ddp._buckets) > 1, len(ddp._buckets)
opt_ref, opt = optimizer("sgd", reference.parameters()), optimizer("sgd", ddp.parameters())
for idx, shard in batches():
    opt_ref.zero_grad()
    opt.zero_grad()
    loss_of(reference, idx, len(idx)).backward()
    (loss_of(ddp, shard, len(idx)) * n).backward()
    opt_ref.step()
    opt.step()
    check(reference, ddp, "small buckets")
dist.destroy_process_group()
print(f"OK rank {r}", flush=True)
