"""Resident-memory growth of an evaluation loop without no_grad (issue 16): a 1024-1024-1024 MLP at batch 512,
forward passes whose outputs are dropped at once (`model(x).sum().item()`), and forward passes whose output is
kept until the next pass reassigns it (`out = model(x)`); and the kept case for a transformer encoder layer
(d_model 128, 4 heads, feed-forward 256, batch 16 x 64 tokens: a pass of many chains of ops), on tapegrad and on
torch, each in a fresh process with one BLAS thread. Prints the growth of the peak RSS over the passes after
three warm-up passes.

    python -m benchmarks.eval_memory [--steps 60]
"""
import argparse
import os
import subprocess
import sys

SCRIPT = """
import gc, os, sys, numpy as np
lib, kept = sys.argv[1], sys.argv[3] == "kept"
if lib == "torch":
    import torch as L
    L.set_num_threads(1)
else:
    import tapegrad as L
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
g = np.random.default_rng(0)
w1, w2 = (L.tensor(g.standard_normal((1024, 1024)).astype(np.float32) * 0.03, requires_grad=True) for _ in range(2))
b1, b2 = (L.zeros(1024, requires_grad=True) for _ in range(2))
x = L.tensor(g.standard_normal((512, 1024)).astype(np.float32))
def model(x):
    return ((x @ w1 + b1).relu() @ w2 + b2).tanh()
if sys.argv[4] == "transformer":
    L.manual_seed(0)
    model = L.nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True)
    x = L.tensor(g.standard_normal((16, 64, 128)).astype(np.float32))
out = None
for _ in range(3):
    out = model(x) if kept else model(x).sum().item()
gc.collect()
start = peak = rss()
for _ in range(int(sys.argv[2])):
    out = model(x) if kept else model(x).sum().item()  # kept: the last pass's graph lives until reassigned
    peak = max(peak, rss())
print(f"{peak - start:.1f}")
"""


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.eval_memory", description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60)
    args = p.parse_args(argv)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    for model, case, words in (("mlp", "dropped", "MLP, outputs dropped"),
                               ("mlp", "kept", "MLP, output kept until the next pass"),
                               ("transformer", "kept", "transformer layer, output kept until the next pass")):
        for lib in ("tapegrad", "torch"):
            out = subprocess.run([sys.executable, "-c", SCRIPT, lib, str(args.steps), case, model],
                                 capture_output=True, text=True, env=env, check=True).stdout.strip()
            print(f"{lib}, {words}: resident memory grew by {out} MiB over {args.steps} passes")


if __name__ == "__main__":
    main()
