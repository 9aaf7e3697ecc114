"""Forward + backward of a small step through rows that run array rules in a plain backward (prod, einsum, tensor-bound
clamp, lerp, bce_with_logits with pos_weight, embedding with padding_idx, huber_loss): median step time over 300 steps,
three alternating rounds, one thread, and the ratio to torch measured in the same process.
Run: PYTHONPATH=$PWD python benchmarks/array_rules_vs_torch.py"""
import time
import numpy as np
import torch
import tapegrad
torch.set_num_threads(1)

def step(L, x, w, e, lo, hi, z, t, pw, emb):
    y = L.prod(x, 1).sum()
    y = y + L.einsum("ij,jk->ik", x, w).sum()
    y = y + L.clamp(x, lo, hi).sum() + L.lerp(x, e, 0.3).sum()
    y = y + L.nn.functional.binary_cross_entropy_with_logits(z, t, pos_weight=pw)
    y = y + L.nn.functional.embedding(L.tensor([0, 2, 2, 1]), emb, padding_idx=1).sum()
    y = y + L.nn.functional.huber_loss(z, t)
    y.backward()

def timeit(L, reps=300):
    r = np.random.default_rng(0)
    mk = lambda *s: L.tensor(r.standard_normal(s).astype(np.float32), requires_grad=True)
    x, w, e, z, emb = mk(8, 16), mk(16, 8), mk(8, 16), mk(8, 16), mk(4, 16)
    lo, hi = mk(16), mk(8, 1)
    t = L.tensor(r.random((8, 16)).astype(np.float32)); pw = L.tensor(r.random(16).astype(np.float32))
    for _ in range(20):
        step(L, x, w, e, lo, hi, z, t, pw, emb)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); step(L, x, w, e, lo, hi, z, t, pw, emb); ts.append(time.perf_counter() - t0)
    return float(np.median(ts))

res = {"tapegrad": [], "torch": []}
for rnd in range(3):
    res["torch"].append(timeit(torch)); res["tapegrad"].append(timeit(tapegrad))
tg, th = np.median(res["tapegrad"]), np.median(res["torch"])
print(f"tapegrad {tg*1e6:.0f} us  torch {th*1e6:.0f} us  ratio {tg/th:.2f}")
