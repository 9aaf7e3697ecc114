"""EmbeddingBag forward + backward against torch: 100k entries into 10k bags of a 50000 x 64 float32 table, one
thread, median of 5 steps after one warm-up. Run: PYTHONPATH=$PWD python benchmarks/embedding_bag_vs_torch.py"""
import time

import numpy as np


def main():
    import torch
    import tapegrad as tg
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    V, D, n, B = 50000, 64, 100000, 10000
    idx = rng.integers(0, V, n)
    offsets = np.concatenate([[0], np.sort(rng.choice(n, B - 1, replace=False))])
    w0 = rng.standard_normal((V, D)).astype(np.float32)
    for mode in ("sum", "mean", "max"):
        for lib in (torch, tg):
            w, i, o = lib.tensor(w0, requires_grad=True), lib.tensor(idx), lib.tensor(offsets)
            times = []
            for _ in range(6):
                t = time.perf_counter()
                lib.nn.functional.embedding_bag(i, w, o, mode=mode).sum().backward()
                times.append(time.perf_counter() - t)
            print(f"{mode:4s} {lib.__name__:8s} {1000 * np.median(times[1:]):7.1f} ms")


if __name__ == "__main__":
    main()
