"""Layer speed suite (issue 19): forward + backward of single layers and whole training steps, tapegrad
(eager and ``tapegrad.compile``) against torch eager in the same process.

Run from the repository root::

    python -m benchmarks.layers                        # every case, one BLAS thread, 3 processes
    python -m benchmarks.layers --threads default      # the machine's default threads
    python -m benchmarks.layers --only L1,T1 --quick
    python -m benchmarks.layers --no-memory

Cases (float32; weights from fixed NumPy seeds, the same in both libraries):

====  =======================================================================================  ======
L1    LeNet-5 forward + cross_entropy + backward, 28x28, batch 64                             small
L2    Conv2d 64->64 3x3 padding 1 on 32x32, batch 32, forward + backward                      medium
L3    LSTM 2 layers, 200 -> 200, sequence 35, batch 20, forward + backward                    medium
L4    GPT block (pre-norm, embedding 128, 4 heads, causal SDPA, 4x GELU MLP), 16 x 64         medium
L5    LayerNorm(128) alone on 16 x 64 x 128                                                   small
L6    BatchNorm2d(64) alone (training mode) on 32 x 64 x 32 x 32                              medium
L7    Conv2d 32->3 9x9 padding 4 on 72x72, batch 4 (fast_neural_style's last layer)           medium
L8    Conv2d 64->32 3x3 padding 1 on 64x64, batch 4 (a decoder's narrowing layer)             medium
T1    CNN training step: LeNet-5, cross_entropy, SGD(momentum=0.9), batch 64
T2    LSTM training step: word LM (embedding 200, 2-layer LSTM 200, decoder to 1,000 words),
      35 x 20, clip_grad_norm_(0.25), SGD
T3    GPT training step: embedding 128 (1,000 words), 2 blocks as L4, head, 16 x 64, AdamW
S1-7  training steps of the real programs' kinds (../shared/realworld), as those scripts write them: a
      polynomial fit by nn.Sequential with a manual SGD under no_grad (S1), a custom autograd.Function
      (S2), a regression on fresh random batches with `p.data.add_` (S3), 0-d parameters with SGD
      momentum (S4), the quickstart MLP (S5), a VAE with Adam (S6), a REINFORCE episode (S7); issue 20's
      targets for real programs (eager ≤ 0.8x, compiled ≤ 0.4x torch)
====  =======================================================================================  ======

A layer case's backward seeds the output with a fixed random gradient (``out.backward(g)``; L1 takes
cross_entropy), so gradients that a ``.sum()`` would cancel (LayerNorm's input) are checked too.  Its
gradients are the input's and every parameter's.  A training step's are the parameters' of its first step.

What it does, as ``benchmarks.compare`` does for W1-W7:

1. Checks that tapegrad (eager and compiled) and torch agree on every gradient (np.allclose, rtol 1e-3,
   atol 1e-5 of the largest |gradient|: float32 sums over 10^4-10^5 terms in a different order; an
   LSTM's 35 steps compound them); a case that disagrees is not timed.
2. Times in ``--processes`` fresh subprocesses: every implementation is warmed up, calibrated to
   ``--target`` seconds per sample, then sampled interleaved (A, B, C, A, B, C, ...); each process
   reports medians, and each ratio is the median across processes of per-process ratios.
3. Peak memory of each training step (T1-T3): one fresh process per library, interleaved, peak RSS
   above RSS before the step (``compare``'s method: gc, malloc_trim, VmHWM reset).

"compiled" is the step's differentiable part (inputs -> ``autograd.grad(loss, inputs and parameters)``)
under ``tapegrad.compile(fullgraph=True)``; the optimizer step stays outside, as in W3-W7.  A function
that ``compile`` refuses is "error" in that column, with its reason printed above the table.

Threads: ``--threads 1`` (the default) pins OMP/NUMBA/MKL/OPENBLAS_NUM_THREADS and torch.set_num_threads
before NumPy or torch is imported; ``--threads default`` pins nothing (each library's own default).

Imports only the standard library at import time (asv imports every module of the package).
"""

import argparse
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

LIBS = ("tapegrad", "tapegrad.compile", "torch")
CASES = ("L1", "L2", "L3", "L4", "L5", "L6", "L7", "L8", "T1", "T2", "T3", "S1", "S2", "S3", "S4", "S5", "S6",
         "S7")
TRAINING = ("T1", "T2", "T3")
SCRIPTS = ("S1", "S2", "S3", "S4", "S5", "S6", "S7")
DESCRIPTIONS = {
    "L1": "LeNet-5 fwd+bwd, 28x28, batch 64",
    "L2": "Conv2d 64->64 3x3, 32x32, batch 32",
    "L3": "LSTM 2x200, seq 35, batch 20",
    "L4": "GPT block 128, 4 heads, 16x64",
    "L5": "LayerNorm 128, 16x64",
    "L6": "BatchNorm2d 64, 32x64x32x32",
    "L7": "Conv2d 32->3 9x9, 72x72, batch 4",
    "L8": "Conv2d 64->32 3x3, 64x64, batch 4",
    "T1": "CNN step: LeNet-5, SGD momentum",
    "T2": "LSTM LM step: 2x200, 35x20, clip, SGD",
    "T3": "GPT step: 2 blocks, 16x64, AdamW",
    "S1": "polynomial_nn: Linear(3,1), MSE sum, 2,000 points, manual SGD",
    "S2": "custom Function (Legendre P3), 4 scalars, 2,000 points, manual SGD",
    "S3": "regression: Linear(4,1), fresh randn batch of 32, smooth_l1, p.data.add_",
    "S4": "dynamic net: 5 scalars, x**5 terms, 2,000 points, SGD momentum",
    "S5": "quickstart MLP 784-512-512-10, batch 64, cross-entropy, SGD",
    "S6": "VAE 784-400-20, batch 128, BCE sum + KLD, Adam",
    "S7": "REINFORCE: policy 4-128-2, 20-step episode, Adam",
}
SIZE = {"L1": "small", "L2": "medium", "L3": "medium", "L4": "medium", "L5": "small", "L6": "medium",
        "L7": "medium", "L8": "medium"}
RESULT_MARKER = "@@LAYERS-RESULT@@ "
RTOL, ATOL_SCALE = 1e-3, 1e-5
MEMORY_WARMUP, MEMORY_STEPS = 3, 5


# --------------------------------------------------------------------------
# Models, written once against the PyTorch API (lib = tapegrad or torch)
# --------------------------------------------------------------------------

def _lenet(lib):
    nn = lib.nn

    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            F = lib.nn.functional
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = x.flatten(1)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    return LeNet5()


def _gpt_block(lib, d=128, heads=4):
    nn = lib.nn

    class Block(nn.Module):
        """nanoGPT's block: pre-norm causal self-attention and a 4x GELU MLP, each with a residual."""

        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d)
            self.c_attn = nn.Linear(d, 3 * d)
            self.c_proj = nn.Linear(d, d)
            self.ln_2 = nn.LayerNorm(d)
            self.c_fc = nn.Linear(d, 4 * d)
            self.mlp_proj = nn.Linear(4 * d, d)

        def forward(self, x):
            F = lib.nn.functional
            B, T, C = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q = q.view(B, T, heads, C // heads).transpose(1, 2)
            k = k.view(B, T, heads, C // heads).transpose(1, 2)
            v = v.view(B, T, heads, C // heads).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))

    return Block()


def _word_lm(lib, ntoken=1000, ninp=200, nhid=200, nlayers=2):
    nn = lib.nn

    class RNNModel(nn.Module):
        """pytorch/examples word_language_model's LSTM model (no dropout: gradients must agree)."""

        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, nlayers)
            self.decoder = nn.Linear(nhid, ntoken)

        def forward(self, tokens, h0, c0):
            out, _ = self.rnn(self.encoder(tokens), (h0, c0))
            return self.decoder(out)

    return RNNModel()


def _gpt(lib, vocab=1000, d=128, heads=4, blocks=2, block_size=64):
    nn = lib.nn

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, d)
            self.wpe = nn.Embedding(block_size, d)
            self.h = nn.ModuleList([_gpt_block(lib, d, heads) for _ in range(blocks)])
            self.ln_f = nn.LayerNorm(d)
            self.lm_head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx, pos):
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    return GPT()


def _init_weights(lib, model, seed):
    """Every floating parameter from NumPy (fixed seed, in named_parameters order), so both libraries
    start from the same weights; buffers keep their defaults."""
    import numpy as np
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for name, p in model.named_parameters():
            shape = tuple(p.shape)
            if len(shape) >= 2:
                bound = 1.0 / math.sqrt(math.prod(shape[1:]))
                arr = rng.uniform(-bound, bound, shape)
            else:
                arr = rng.uniform(-0.1, 0.1, shape) + (1.0 if name.endswith("weight") else 0.0)
            p.copy_(lib.tensor(arr.astype(np.float32)))


# --------------------------------------------------------------------------
# Cases: step() runs one measured unit and returns its gradients (fixed order)
# --------------------------------------------------------------------------

class _Case:
    """A forward + backward (or training step) for one library; ``compiled`` wraps the differentiable part
    (arguments -> autograd.grad of the loss) in lib.compile(fullgraph=True)."""

    seed = 0

    def __init__(self, lib, compiled=False):
        import numpy as np
        self.lib, self.np = lib, np
        self.rng = np.random.default_rng(self.seed)
        self.model = self.build()
        _init_weights(lib, self.model, self.seed + 1)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.args = self.inputs()
        grad_args = [i for i, a in enumerate(self.args) if getattr(a, "requires_grad", False)]
        self.wrt = [self.args[i] for i in grad_args] + self.params
        self.optimizer = self.make_optimizer()
        self.gradients = None
        if compiled:
            def gradients(*args):  # (under a trace the arguments are the trace's own tensors)
                return lib.autograd.grad(self.loss(*args), [args[i] for i in grad_args] + self.params)
            self.gradients = lib.compile(gradients, fullgraph=True)

    def tensor(self, arr, requires_grad=False):
        return self.lib.tensor(arr, requires_grad=requires_grad)

    def randn(self, *shape, requires_grad=False):
        return self.tensor(self.rng.standard_normal(shape).astype(self.np.float32), requires_grad)

    def make_optimizer(self):
        return None

    def step(self):
        if self.gradients is not None:
            grads = list(self.gradients(*self.args))
        else:
            for t in self.wrt:
                t.grad = None
            self.loss(*self.args).backward()
            grads = [t.grad for t in self.wrt]
        if self.optimizer is not None:
            self.update(grads)
        return grads

    def update(self, grads):
        for p, g in zip(self.params, grads[len(grads) - len(self.params):]):
            p.grad = g
        self.optimizer.step()


class _Layer(_Case):
    """out = layer(x); backward from a fixed random gradient (the loss (out * seed).sum())."""

    def inputs(self):
        x = self.randn(*self.x_shape, requires_grad=True)
        out = self.model(x)
        return [x, self.randn(*out.shape)]

    def loss(self, x, seed):
        return (self.model(x) * seed).sum()


class L1LeNet(_Case):
    seed = 11

    def build(self):
        return _lenet(self.lib)

    def inputs(self):
        return [self.randn(64, 1, 28, 28, requires_grad=True),
                self.tensor(self.rng.integers(0, 10, 64))]

    def loss(self, x, y):
        return self.lib.nn.functional.cross_entropy(self.model(x), y)


class L2Conv(_Layer):
    seed = 12
    x_shape = (32, 64, 32, 32)

    def build(self):
        return self.lib.nn.Conv2d(64, 64, 3, padding=1)


class L3LSTM(_Case):
    seed = 13

    def build(self):
        return self.lib.nn.LSTM(200, 200, 2)

    def inputs(self):
        x = self.randn(35, 20, 200, requires_grad=True)
        return [x, self.randn(2, 20, 200), self.randn(2, 20, 200), self.randn(35, 20, 200)]

    def loss(self, x, h0, c0, seed):  # (the output's gradient, as a language model's; c_n's is not taken)
        out, _ = self.model(x, (h0, c0))
        return (out * seed).sum()


class L4GPTBlock(_Layer):
    seed = 14
    x_shape = (16, 64, 128)

    def build(self):
        return _gpt_block(self.lib)


class L5LayerNorm(_Layer):
    seed = 15
    x_shape = (16, 64, 128)

    def build(self):
        return self.lib.nn.LayerNorm(128)


class L6BatchNorm(_Layer):
    seed = 16
    x_shape = (32, 64, 32, 32)

    def build(self):
        return self.lib.nn.BatchNorm2d(64)


class L7ConvToFew(_Layer):
    seed = 17
    x_shape = (4, 32, 72, 72)

    def build(self):
        return self.lib.nn.Conv2d(32, 3, 9, padding=4)


class L8ConvNarrowing(_Layer):
    seed = 18
    x_shape = (4, 64, 64, 64)

    def build(self):
        return self.lib.nn.Conv2d(64, 32, 3, padding=1)


class T1CNNStep(L1LeNet):
    seed = 21

    def inputs(self):
        return [self.randn(64, 1, 28, 28), self.tensor(self.rng.integers(0, 10, 64))]

    def make_optimizer(self):
        return self.lib.optim.SGD(self.params, lr=0.01, momentum=0.9)


class T2LSTMStep(_Case):
    seed = 22

    def build(self):
        return _word_lm(self.lib)

    def inputs(self):
        z = self.np.zeros((2, 20, 200), self.np.float32)
        return [self.tensor(self.rng.integers(0, 1000, (35, 20))), self.tensor(z), self.tensor(z),
                self.tensor(self.rng.integers(0, 1000, 35 * 20))]

    def loss(self, tokens, h0, c0, targets):
        out = self.model(tokens, h0, c0)
        return self.lib.nn.functional.cross_entropy(out.view(-1, 1000), targets)

    def make_optimizer(self):
        return self.lib.optim.SGD(self.params, lr=0.1)

    def update(self, grads):
        for p, g in zip(self.params, grads):
            p.grad = g
        self.lib.nn.utils.clip_grad_norm_(self.params, 0.25)
        self.optimizer.step()


class T3GPTStep(_Case):
    seed = 23

    def build(self):
        return _gpt(self.lib)

    def inputs(self):
        idx = self.rng.integers(0, 1000, (16, 65))
        return [self.tensor(idx[:, :-1]), self.tensor(self.np.arange(64)), self.tensor(idx[:, 1:].reshape(-1))]

    def loss(self, idx, pos, targets):
        return self.lib.nn.functional.cross_entropy(self.model(idx, pos).view(-1, 1000), targets)

    def make_optimizer(self):
        return self.lib.optim.AdamW(self.params, lr=1e-3)



# --------------------------------------------------------------------------
# S: the models and steps of the real programs' kinds (../shared/realworld), written as such scripts write
# them: their own update rules (a manual SGD under no_grad, `p.data.add_`), losses and sizes
# --------------------------------------------------------------------------

def _linspace_powers(lib, n=2000, degrees=(1, 2, 3)):
    x = lib.linspace(-math.pi, math.pi, n)
    return x, x.unsqueeze(-1).pow(lib.tensor(list(degrees)))


class _ScriptStep(_Case):
    """A training step as a tutorial script writes it: gradients into .grad, then its own update."""

    def update(self, grads):
        for p, g in zip(self.params, grads[len(grads) - len(self.params):]):
            p.grad = g
        self.script_update()

    def script_update(self):
        self.optimizer.step()


class S1PolynomialNN(_ScriptStep):
    seed = 31

    def build(self):
        nn = self.lib.nn
        return nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))

    def inputs(self):
        x, xx = _linspace_powers(self.lib)
        return [xx, self.lib.sin(x)]

    def loss(self, xx, y):
        return self.lib.nn.MSELoss(reduction="sum")(self.model(xx), y)

    def script_update(self):  # polynomial_nn.py: a manual SGD step under no_grad
        with self.lib.no_grad():
            for p in self.model.parameters():
                p -= 1e-6 * p.grad


class S2CustomFunction(_ScriptStep):
    seed = 32

    def build(self):
        lib = self.lib

        class LegendreP3(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return 0.5 * (5 * x ** 3 - 3 * x)

            @staticmethod
            def backward(ctx, grad_output):
                x, = ctx.saved_tensors
                return grad_output * 1.5 * (5 * x ** 2 - 1)

        class Model(lib.nn.Module):
            def __init__(self):
                super().__init__()
                for name in "abcd":
                    setattr(self, name, lib.nn.Parameter(lib.tensor(0.0)))

            def forward(self, x):
                return self.a + self.b * LegendreP3.apply(self.c + self.d * x)

        return Model()

    def inputs(self):
        x = self.lib.linspace(-math.pi, math.pi, 2000)
        return [x, self.lib.sin(x)]

    def loss(self, x, y):
        return (self.model(x) - y).pow(2).sum()

    def script_update(self):  # polynomial_custom_function.py
        with self.lib.no_grad():
            for p in self.params:
                p -= 5e-6 * p.grad


class S3Regression(_ScriptStep):
    seed = 33

    def build(self):
        return self.lib.nn.Linear(4, 1)

    def inputs(self):
        self.lib.manual_seed(0)  # (the same batches in both libraries: tapegrad draws torch's stream)
        w = self.tensor(self.rng.standard_normal((4, 1)).astype(self.np.float32) * 5)
        return [w, self.tensor(self.np.float32(self.rng.standard_normal() * 5))]

    def loss(self, w, b):  # regression/main.py: a fresh batch of 32 each step, then smooth_l1
        x = self.lib.randn(32).unsqueeze(1)
        features = self.lib.cat([x ** i for i in range(1, 5)], 1)
        return self.lib.nn.functional.smooth_l1_loss(self.model(features), features.mm(w) + b)

    def script_update(self):
        for p in self.model.parameters():
            p.data.add_(-0.1 * p.grad)


class S4DynamicNet(_ScriptStep):
    seed = 34

    def build(self):
        lib = self.lib

        class DynamicNet(lib.nn.Module):
            def __init__(self):
                super().__init__()
                for name in "abcde":
                    setattr(self, name, lib.nn.Parameter(lib.tensor(0.0)))

            def forward(self, x):  # dynamic_net.py draws 4 or 5 extra terms; this runs the longer graph
                y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
                for exp in range(4, 6):
                    y = y + self.e * x ** exp
                return y

        return DynamicNet()

    def inputs(self):
        x = self.lib.linspace(-math.pi, math.pi, 2000)
        return [x, self.lib.sin(x)]

    def loss(self, x, y):
        return self.lib.nn.MSELoss(reduction="sum")(self.model(x), y)

    def make_optimizer(self):
        return self.lib.optim.SGD(self.params, lr=1e-8, momentum=0.9)


class S5Quickstart(_ScriptStep):
    seed = 35

    def build(self):
        nn = self.lib.nn
        return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Linear(512, 10))

    def inputs(self):
        return [self.tensor(self.rng.random((64, 1, 28, 28), self.np.float32)),
                self.tensor(self.rng.integers(0, 10, 64))]

    def loss(self, x, y):
        return self.lib.nn.CrossEntropyLoss()(self.model(x), y)

    def make_optimizer(self):
        return self.lib.optim.SGD(self.params, lr=1e-3)


class S6VAE(_ScriptStep):
    seed = 36

    def build(self):
        lib = self.lib
        nn, F = lib.nn, lib.nn.functional

        class VAE(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc21, self.fc22 = nn.Linear(784, 400), nn.Linear(400, 20), nn.Linear(400, 20)
                self.fc3, self.fc4 = nn.Linear(20, 400), nn.Linear(400, 784)

            def forward(self, x):
                h1 = F.relu(self.fc1(x.view(-1, 784)))
                mu, logvar = self.fc21(h1), self.fc22(h1)
                z = mu + lib.randn_like(mu) * lib.exp(0.5 * logvar)
                return lib.sigmoid(self.fc4(F.relu(self.fc3(z)))), mu, logvar

        return VAE()

    def inputs(self):
        self.lib.manual_seed(0)  # (the same reparameterization noise in both libraries)
        return [self.tensor(self.rng.random((128, 1, 28, 28), self.np.float32))]

    def loss(self, x):
        recon, mu, logvar = self.model(x)
        bce = self.lib.nn.functional.binary_cross_entropy(recon, x.view(-1, 784), reduction="sum")
        return bce - 0.5 * self.lib.sum(1 + logvar - mu.pow(2) - logvar.exp())

    def make_optimizer(self):
        return self.lib.optim.Adam(self.params, lr=1e-3)


class S7Reinforce(_ScriptStep):
    seed = 37

    def build(self):
        lib = self.lib
        nn, F = lib.nn, lib.nn.functional

        class Policy(nn.Module):  # reinforce.py's, without its dropout (gradients must agree)
            def __init__(self):
                super().__init__()
                self.affine1, self.affine2 = nn.Linear(4, 128), nn.Linear(128, 2)

            def forward(self, x):
                return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=1)

        return Policy()

    def inputs(self):
        returns = self.np.cumsum(self.np.ones(20))[::-1].copy()
        returns = (returns - returns.mean()) / (returns.std(ddof=1) + 1e-7)
        return [self.tensor(self.rng.standard_normal((20, 1, 4)).astype(self.np.float32)),
                self.tensor(self.rng.integers(0, 2, 20)), self.tensor(returns.astype(self.np.float32))]

    def loss(self, states, actions, returns):  # an episode of 20 steps, one forward each, then REINFORCE
        policy_loss = []
        for t in range(20):
            probs = self.model(states[t])
            policy_loss.append(-self.lib.log(probs[0, actions[t]]).unsqueeze(0) * returns[t])
        return self.lib.cat(policy_loss).sum()

    def make_optimizer(self):
        return self.lib.optim.Adam(self.params, lr=1e-2)


CASE_CLASSES = {"L1": L1LeNet, "L2": L2Conv, "L3": L3LSTM, "L4": L4GPTBlock, "L5": L5LayerNorm,
                "L6": L6BatchNorm, "L7": L7ConvToFew, "L8": L8ConvNarrowing, "T1": T1CNNStep, "T2": T2LSTMStep,
                "T3": T3GPTStep,
                "S1": S1PolynomialNN, "S2": S2CustomFunction, "S3": S3Regression, "S4": S4DynamicNet,
                "S5": S5Quickstart, "S6": S6VAE, "S7": S7Reinforce}


def load_lib(name, threads):
    """Import tapegrad or torch (``tapegrad.compile`` imports tapegrad); threads None: leave torch's default."""
    import importlib
    mod = importlib.import_module("tapegrad" if name == "tapegrad.compile" else name)
    if name == "torch" and threads is not None:
        mod.set_num_threads(int(threads))
    return mod


def make(case, libname, lib=None, threads=None):
    if case not in CASE_CLASSES:
        raise KeyError(f"unknown case {case!r}; expected one of {CASES}")
    lib = lib if lib is not None else load_lib(libname, threads)
    return CASE_CLASSES[case](lib, compiled=libname == "tapegrad.compile")


def gradients(case, libname, lib=None):
    """The first step's gradients on a fresh instance, as one flat float64 NumPy array."""
    import numpy as np
    grads = make(case, libname, lib=lib).step()
    return np.concatenate([np.ravel(np.array(g.detach().numpy(), dtype=np.float64)) for g in grads])


def agree(got, ref):
    import numpy as np
    if got.shape != ref.shape:
        return False, float("inf")
    scale = float(np.max(np.abs(ref))) or 1.0
    err = float(np.max(np.abs(got - ref))) / scale
    return bool(np.allclose(got, ref, rtol=RTOL, atol=ATOL_SCALE * scale)), err


# --------------------------------------------------------------------------
# Workers (fresh subprocesses)
# --------------------------------------------------------------------------

def pin_threads(threads):
    if threads is not None:
        for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[var] = str(threads)


def _blas_limit(threads):
    if threads is not None:
        from benchmarks import workloads as W
        W.pin_blas_threads(threads)


def run_time_worker(spec):
    from benchmarks.compare import _sample
    threads = spec["threads"]
    _blas_limit(threads)
    mods = {name: load_lib(name, threads) for name in {n for libs in spec["libs"].values() for n in libs}}
    out = {}
    for case_id in spec["cases"]:
        cases, number, samples, errors = {}, {}, {}, {}
        for name in spec["libs"][case_id]:
            try:
                case = make(case_id, name, lib=mods[name])
                for _ in range(spec["warmup"]):
                    case.step()
                t0 = time.perf_counter()
                case.step()
                number[name] = max(1, math.ceil(spec["target"] / max(time.perf_counter() - t0, 1e-7)))
                cases[name], samples[name] = case, []
            except Exception as exc:  # noqa: BLE001 - report, keep timing the others
                errors[name] = f"{type(exc).__name__}: {exc}"
        for _ in range(spec["repeats"]):
            for name in list(cases):                      # interleaved A, B, C, A, B, C
                samples[name].append(_sample(cases[name], number[name], False)["total"])
        out[case_id] = {"times": {n: statistics.median(s) for n, s in samples.items()}, "errors": errors}
        cases.clear()
        gc.collect()
    print(RESULT_MARKER + json.dumps(out), flush=True)


def run_memory_worker(spec):
    from benchmarks.compare import _malloc_trim, _step_peak
    _blas_limit(spec["threads"])
    case = make(spec["case"], spec["lib"], threads=spec["threads"])
    for _ in range(MEMORY_WARMUP):
        case.step()
    trim = _malloc_trim()
    peaks = [_step_peak(case, trim) for _ in range(MEMORY_STEPS)]
    print(RESULT_MARKER + json.dumps({"peak": statistics.median(peaks)}), flush=True)


def spawn(spec):
    proc = subprocess.run([sys.executable, "-m", "benchmarks.layers", "--_worker", json.dumps(spec)],
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          env=dict(os.environ), capture_output=True, text=True, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARKER)), None)
    if proc.returncode != 0 or line is None:
        return None, proc
    return json.loads(line[len(RESULT_MARKER):]), proc


# --------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------

def targets(case_id):
    """[(text, variant, limit)]: issue 19's targets, ratios to torch eager."""
    if case_id in TRAINING:
        return [("eager ≤ 1.0x", "tapegrad", 1.0), ("compiled ≤ 0.5x", "tapegrad.compile", 0.5)]
    if case_id in SCRIPTS:  # issue 20's targets for real programs
        return [("eager ≤ 0.8x", "tapegrad", 0.8), ("compiled ≤ 0.4x", "tapegrad.compile", 0.4)]
    return [("≤ 1.0x" if SIZE[case_id] == "small" else "≤ 1.5x", "tapegrad",
             1.0 if SIZE[case_id] == "small" else 1.5)]


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.layers", description=__doc__.split("\n")[0])
    p.add_argument("--only", default=None, metavar="L1,T1", help="comma-separated cases (default: all)")
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--repeats", type=int, default=None, help="interleaved samples per process (default 11, --quick 5)")
    p.add_argument("--target", type=float, default=None, metavar="SECONDS",
                   help="duration of one sample (default 0.2, --quick 0.05)")
    p.add_argument("--threads", default="1", help="N, or 'default' (pin nothing)")
    p.add_argument("--memory-runs", type=int, default=3, help="fresh processes per library per training step")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--json", default=None, metavar="OUT.json")
    p.add_argument("--_worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.threads = None if args.threads == "default" else int(args.threads)
    args.repeats = args.repeats or (5 if args.quick else 11)
    args.target = args.target or (0.05 if args.quick else 0.2)
    return args


def main(argv=None):
    args = parse_args(argv)
    pin_threads(args.threads)
    if args._worker is not None:
        spec = json.loads(args._worker)
        (run_memory_worker if spec["kind"] == "memory" else run_time_worker)(spec)
        return 0
    from benchmarks.compare import fmt_bytes, fmt_time
    cases = [c.strip().upper() for c in args.only.split(",")] if args.only else list(CASES)
    bad = [c for c in cases if c not in CASE_CLASSES]
    if bad:
        print(f"error: unknown case(s) {bad}; choose from {','.join(CASES)}", file=sys.stderr)
        return 2
    _blas_limit(args.threads)
    mods, versions = {}, {}
    for name in ("tapegrad", "torch"):
        try:
            mods[name] = load_lib(name, args.threads)
            versions[name] = mods[name].__version__
        except ImportError as exc:
            versions[name] = f"n/a ({exc})"
    mods["tapegrad.compile"] = mods.get("tapegrad")
    if "torch" not in mods:
        print("error: torch is not installed: every ratio is to torch eager", file=sys.stderr)
        return 2
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus; "
          + ", ".join(f"{k} {v}" for k, v in versions.items()))
    from benchmarks.workloads import blas_kernels
    print(blas_kernels())
    print(f"threads={'default' if args.threads is None else args.threads} processes={args.processes} "
          f"repeats={args.repeats} target={args.target}s; load average {os.getloadavg()[0]:.2f} at start")

    print("checking agreement of gradients ...", file=sys.stderr, flush=True)
    libs, status = {}, {}
    for c in cases:
        ref = gradients(c, "torch", mods["torch"])
        libs[c], status[c] = ["torch"], {"torch": "ok"}
        for name in ("tapegrad", "tapegrad.compile"):
            try:
                ok, err = agree(gradients(c, name, mods[name]), ref)
            except Exception as exc:  # noqa: BLE001
                status[c][name] = "error"
                print(f"  {c}: {name} raised {type(exc).__name__}: {exc}")
                continue
            status[c][name] = "ok" if ok else "MISMATCH"
            if ok:
                libs[c].insert(len(libs[c]) - 1, name)
            else:
                print(f"  {c}: {name} DISAGREES with torch (max|diff|/max|ref| = {err:.3g}) -> not timed")

    per_process = []
    for i in range(args.processes):
        print(f"  timing process {i + 1}/{args.processes} ...", file=sys.stderr, flush=True)
        res, proc = spawn({"kind": "time", "cases": cases, "libs": libs, "threads": args.threads,
                           "repeats": args.repeats, "target": args.target, "warmup": 2})
        if res is None:
            print(f"  worker process {i + 1} failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}")
            continue
        per_process.append(res)
    memory = {}
    if not args.no_memory:
        from benchmarks.compare import memory_unsupported
        why = memory_unsupported()
        if why:
            print(f"  memory: not measured: {why}")
        for c in [c for c in cases if c in TRAINING and not why]:
            print(f"  memory {c} ...", file=sys.stderr, flush=True)
            runs = {"tapegrad": [], "torch": []}
            for _ in range(args.memory_runs):
                for name in runs:
                    res, proc = spawn({"kind": "memory", "case": c, "lib": name, "threads": args.threads})
                    if res is not None:
                        runs[name].append(res["peak"])
            memory[c] = {n: statistics.median(v) if v else None for n, v in runs.items()}
    load_end = os.getloadavg()

    header = ["case", "tapegrad", "compiled", "torch", "tapegrad/torch", "compiled/torch", "target", "met"]
    rows, raw = [], {}
    for c in cases:
        times, ratios = {}, {}
        for name in LIBS:
            vals = [r[c]["times"].get(name) for r in per_process]
            ok = [v for v in vals if v is not None]
            times[name] = statistics.median(ok) if ok else None
            if name != "torch":
                rs = [v / r[c]["times"]["torch"] for v, r in zip(vals, per_process)
                      if v is not None and r[c]["times"].get("torch")]
                ratios[name] = statistics.median(rs) if rs else None
            for r in per_process:
                if name in r[c]["errors"]:
                    print(f"  {c}: {name} failed while timing: {r[c]['errors'][name]}")
        raw[c] = {"times": times, "ratios": ratios, "status": status[c]}
        parts = targets(c)
        met = [ratios.get(v) is not None and ratios[v] <= lim for _, v, lim in parts]
        missed = [ratios.get(v) is not None and ratios[v] > lim for _, v, lim in parts]
        if any(ratios.get(v) is None for _, v, _ in parts):
            verdict = "no" if any(missed) else "n/a"
        elif all(met):
            verdict = "yes"
        elif len(parts) == 2 and any(met):
            verdict = "eager only" if met[0] else "compiled only"
        else:
            verdict = "no"

        def cell(name):
            if status[c].get(name) != "ok":
                return status[c].get(name, "n/a")
            return fmt_time(times[name]) if times[name] is not None else "error"

        rows.append([f"{c} {DESCRIPTIONS[c]}", cell("tapegrad"), cell("tapegrad.compile"), cell("torch"),
                     f"{ratios['tapegrad']:.2f}x" if ratios.get("tapegrad") else "n/a",
                     f"{ratios['tapegrad.compile']:.2f}x" if ratios.get("tapegrad.compile") else "n/a",
                     ", ".join(t for t, _, _ in parts), verdict])
    for c, m in memory.items():
        r = m["tapegrad"] / m["torch"] if m["tapegrad"] and m["torch"] else None
        raw[c]["memory"] = m
        rows.append([f"memory: {c} step peak", fmt_bytes(m["tapegrad"]), "—", fmt_bytes(m["torch"]),
                     f"{r:.2f}x" if r else "n/a", "—", "≤ 1.2x", "n/a" if r is None else ("yes" if r <= 1.2 else "no")])
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    print()
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|")
    for r in rows:
        print("| " + " | ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w)
                                for i, (x, w) in enumerate(zip(r, widths))) + " |")
    print()
    print(f"- times per step, median across {len(per_process)} processes of per-process medians of "
          f"{args.repeats} interleaved samples; ratios: median across processes of per-process ratios")
    print(f"- threads: {'each library default' if args.threads is None else args.threads}; "
          f"load average at end {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}")
    if memory:
        print("- memory: peak RSS during one step above RSS before it (after gc.collect, malloc_trim), "
              f"median of {MEMORY_STEPS} steps, then across {args.memory_runs} processes; MB = 10^6 bytes")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"versions": versions, "threads": args.threads, "cases": raw}, f, indent=2)
    return 0 if len(per_process) == args.processes else 1


if __name__ == "__main__":
    sys.exit(main())
