"""Train a small MLP on scikit-learn's handwritten digits with tapegrad: `python -m tapegrad.demo`.

The data set (1,797 8x8 images, shipped inside scikit-learn: no download) is split 80/20 with a fixed
seed; a 64-128-64-10 ReLU MLP is trained with Adam and a cosine learning-rate schedule, using only
`import tapegrad as torch`-style code (nn.Sequential, nn.CrossEntropyLoss, optim.Adam, DataLoader).
It prints a progress bar with the running loss, the held-out accuracy and the time per training step,
and saves the loss curve as a PNG (matplotlib comes with the `demo` extra) in the temporary directory,
printing its path. The same seed gives the same run.

Options: --epochs N (default 30), --seed S, --batch-size B, --lr LR, --plot PATH, --no-plot.
"""
import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

INSTALL_HINT = 'pip install "tapegrad[demo]"'
# Outside any working tree: a run from a clone leaves nothing for git to see.
DEFAULT_PLOT = os.path.join(tempfile.gettempdir(), "tapegrad-demo-loss.png")
COMPILE_NOTICE = ("compiling tapegrad's kernels (the first run in a new environment does this once: about 2-3 minutes; "
                  "later runs load them from Numba's cache)")
NOTICE_AFTER_S = 2.0  # loading cached kernels takes well under this; compiling takes far longer


def load_digits_split(seed, test_fraction=0.2):
    """(x_train, y_train, x_test, y_test) as NumPy arrays: pixels scaled to [0, 1], a seeded split."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise SystemExit(f"The demo trains on scikit-learn's handwritten digits, and scikit-learn is not "
                         f"installed. Install the demo's extra with:\n    {INSTALL_HINT}") from None
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(len(x) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


class ProgressBar:
    """A plain carriage-return progress bar on stderr (one line per epoch when stderr is not a terminal)."""

    def __init__(self, total, width=30, stream=None):
        self.total, self.width = total, width
        self.stream = stream or sys.stderr
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()

    def _line(self, epoch, epochs, done, loss):
        filled = int(self.width * done / self.total)
        bar = "=" * filled + (">" if filled < self.width else "") + " " * (self.width - filled - 1)
        return f"epoch {epoch:>3}/{epochs} [{bar[:self.width]}] {done:>3}/{self.total} loss {loss:.4f}"

    def notice(self, message):
        """A line that stays: on a terminal after clearing the transient status, otherwise as it is."""
        self.status("")
        self.stream.write(message + "\n")
        self.stream.flush()

    def status(self, message):
        """A transient line on a terminal (cleared by the next one); nothing otherwise."""
        if self.live:
            self.stream.write("\r" + message.ljust(getattr(self, "_last_status", 0)))
            self.stream.write("\r" if not message else "")
            self._last_status = len(message)
            self.stream.flush()

    def update(self, epoch, epochs, done, loss):
        if self.live and (done % 4 == 0 or done == self.total):
            self.stream.write("\r" + self._line(epoch, epochs, done, loss))
            self.stream.flush()

    def end_epoch(self, epoch, epochs, loss, extra=""):
        line = self._line(epoch, epochs, self.total, loss) + extra
        self.stream.write(("\r" + line if self.live else line) + "\n")
        self.stream.flush()


def save_loss_plot(losses, steps_per_epoch, path):
    """Save the loss curve as a PNG; returns the path, or None (with the reason) if matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    steps = np.arange(1, len(losses) + 1)
    ax.plot(steps, losses, lw=0.8, alpha=0.5, label="batch loss")
    if len(losses) >= steps_per_epoch:
        per_epoch = np.asarray(losses[: len(losses) // steps_per_epoch * steps_per_epoch])
        means = per_epoch.reshape(-1, steps_per_epoch).mean(1)
        ax.plot(np.arange(1, len(means) + 1) * steps_per_epoch, means, "o-", lw=1.5, ms=3, label="epoch mean")
    ax.set_xlabel("training step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_yscale("log")
    ax.set_title("tapegrad: MLP on scikit-learn digits")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def train(epochs=30, seed=0, batch_size=64, lr=3e-3, quiet=False):
    """Run the demo's training; returns a dict of results (losses, accuracy, timings)."""
    import tapegrad as torch
    from tapegrad import nn

    x_train, y_train, x_test, y_test = load_digits_split(seed)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x_train), torch.tensor(y_train)),
                                         batch_size=batch_size, shuffle=True,
                                         generator=torch.Generator().manual_seed(seed))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()

    bar = None if quiet else ProgressBar(len(loader))
    t0 = time.perf_counter()
    with _notice_if_slow(bar):
        torch.warmup()
    warmup_s = time.perf_counter() - t0
    losses, step_times = [], []
    for epoch in range(1, epochs + 1):
        model.train()
        running = 0.0
        for i, (xb, yb) in enumerate(loader, 1):
            t = time.perf_counter()
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            step_times.append(time.perf_counter() - t)
            value = loss.item()
            losses.append(value)
            running += (value - running) / i
            if bar:
                bar.update(epoch, epochs, i, running)
        scheduler.step()
        if bar:
            bar.end_epoch(epoch, epochs, running)

    model.eval()
    with torch.no_grad():
        predictions = model(torch.tensor(x_test)).argmax(dim=1)
        accuracy = (predictions == torch.tensor(y_test)).float().mean().item()
    return {"losses": losses, "accuracy": accuracy, "n_test": len(y_test), "n_train": len(y_train),
            "steps": len(losses), "step_ms": 1e3 * statistics.median(step_times), "first_step_s": step_times[0],
            "train_s": sum(step_times), "warmup_s": warmup_s, "steps_per_epoch": len(loader), "model": model}


class _notice_if_slow:
    """While the kernels load: if that takes longer than loading from the cache does (so they are being
    compiled), say so once on stderr, whether or not it is a terminal (CI logs and pipes see it too)."""

    def __init__(self, bar):
        self.bar = bar
        self.timer = None

    def __enter__(self):
        if self.bar is not None:
            self.bar.status("loading the compiled kernels")
            self.timer = threading.Timer(NOTICE_AFTER_S, self.bar.notice, (COMPILE_NOTICE,))
            self.timer.daemon = True
            self.timer.start()
        return self

    def __exit__(self, *exc):
        if self.timer is not None:
            self.timer.cancel()
            self.timer.join()
            self.bar.status("")


def _one_blas_thread():
    """Run BLAS single-threaded: threads only add overhead on the demo's 64x128 matrices (and on a busy
    machine they can make each product 50x slower). threadpoolctl comes with scikit-learn."""
    try:
        from threadpoolctl import threadpool_limits
        return threadpool_limits(limits=1, user_api="blas")
    except ImportError:
        import contextlib
        return contextlib.nullcontext()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tapegrad.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=30, help="training epochs (default 30)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the split, the weights and the shuffling")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's initial learning rate")
    parser.add_argument("--plot", default=DEFAULT_PLOT,
                        help=f"where to save the loss curve (PNG; default {DEFAULT_PLOT})")
    parser.add_argument("--no-plot", action="store_true", help="do not save the loss curve")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")

    print(f"tapegrad demo: a 64-128-64-10 MLP on scikit-learn's handwritten digits ({args.epochs} epoch"
          f"{'s' if args.epochs != 1 else ''}, seed {args.seed})", flush=True)
    with _one_blas_thread():
        r = train(args.epochs, args.seed, args.batch_size, args.lr)
    print(f"train {r['n_train']} / test {r['n_test']} images; {r['steps']} steps of batch {args.batch_size}")
    last_epoch = r["losses"][-r["steps_per_epoch"]:]
    print(f"training loss, mean over the last epoch: {sum(last_epoch) / len(last_epoch):.6f} "
          f"(its last batch: {r['losses'][-1]:.6f})")
    print(f"held-out accuracy: {100 * r['accuracy']:.2f}% ({round(r['accuracy'] * r['n_test'])}/{r['n_test']})")
    # The median: the first steps also load (or, in a new environment, compile) the kernels of the rows and the
    # optimizer pass that warmup() does not run, which a mean would spread over every step.
    print(f"time per training step: {r['step_ms']:.3f} ms (median; forward + backward + Adam; {r['train_s']:.2f} s "
          f"in all, the first step {r['first_step_s']:.2f} s; kernel loading {r['warmup_s']:.2f} s)")
    if args.no_plot:
        return r
    path = save_loss_plot(r["losses"], r["steps_per_epoch"], args.plot)
    if path is None:
        print(f"matplotlib is not installed: skipping the loss-curve plot (it comes with {INSTALL_HINT})")
    else:
        print(f"loss curve saved to {os.path.abspath(path)}")
    return r


if __name__ == "__main__":
    main()
