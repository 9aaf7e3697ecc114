"""The real programs' training steps (PyTorch's polynomial tutorials, dynamic_net, regression and
time_sequence_prediction's LSTM, from issue 20's realworld corpus), rebuilt here and split into phases, timed in CPU time of this thread (time.thread_time: a loaded machine's other processes
do not count), tapegrad and torch in one process, one thread.

    python -m benchmarks.realworld_phases [autograd custom nn optim module dynamic regression sequence]

Prints per program the median µs of forward / zero_grad / backward / optimizer update, their sum, and tapegrad's
sum over torch's. The programs themselves, timed end to end, are run by the corpus's run.sh.
"""
import math
import random
import statistics
import sys
import time


def build(T, name):
    x = T.linspace(-math.pi, math.pi, 2000); y = T.sin(x)
    if name == 'autograd':
        a,b,c,d = [T.randn((), requires_grad=True) for _ in range(4)]
        def fwd():
            y_pred = a + b * x + c * x ** 2 + d * x ** 3
            return (y_pred - y).pow(2).sum()
        def opt():
            with T.no_grad():
                for p in (a,b,c,d): p -= 1e-6 * p.grad
                for p in (a,b,c,d): p.grad = None
        return fwd, (lambda: None), opt
    if name == 'custom':
        class P3F(T.autograd.Function):
            @staticmethod
            def forward(ctx, input):
                ctx.save_for_backward(input); return 0.5 * (5 * input ** 3 - 3 * input)
            @staticmethod
            def backward(ctx, g):
                input, = ctx.saved_tensors; return g * 1.5 * (5 * input ** 2 - 1)
        a,b,c,d = [T.full((), v, requires_grad=True) for v in (0.0,-1.0,0.0,0.3)]
        def fwd():
            y_pred = a + b * P3F.apply(c + d * x)
            return (y_pred - y).pow(2).sum()
        def opt():
            with T.no_grad():
                for p in (a,b,c,d): p -= 5e-6 * p.grad
                for p in (a,b,c,d): p.grad = None
        return fwd, (lambda: None), opt
    if name in ('nn', 'optim'):
        p = T.tensor([1,2,3]); xx = x.unsqueeze(-1).pow(p)
        model = T.nn.Sequential(T.nn.Linear(3,1), T.nn.Flatten(0,1))
        loss_fn = T.nn.MSELoss(reduction='sum')
        def fwd(): return loss_fn(model(xx), y)
        if name == 'nn':
            def opt():
                with T.no_grad():
                    for param in model.parameters(): param -= 1e-6 * param.grad
            return fwd, model.zero_grad, opt
        o = T.optim.SGD(model.parameters(), lr=1e-6)
        return fwd, o.zero_grad, o.step
    if name in ('module', 'dynamic'):
        class M(T.nn.Module):
            def __init__(self):
                super().__init__()
                for n in 'abcde': setattr(self, n, T.nn.Parameter(T.randn(())))
            def forward(self, x):
                y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
                if name == 'dynamic':
                    for exp in range(4, random.randint(4, 6)): y = y + self.e * x ** exp
                return y
        model = M(); crit = T.nn.MSELoss(reduction='sum')
        o = T.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9 if name=='dynamic' else 0)
        def fwd(): return crit(model(x), y)
        return fwd, o.zero_grad, o.step
    if name == 'regression':  # pytorch/examples regression: a fresh batch each step (inside fwd here)
        W_target, b_target = T.randn(4, 1) * 5, T.randn(1) * 5
        fc = T.nn.Linear(4, 1)
        def fwd():
            r = T.randn(32).unsqueeze(1)
            bx = T.cat([r ** i for i in range(1, 5)], 1)
            by = bx.mm(W_target) + b_target.item()
            return T.nn.functional.smooth_l1_loss(fc(bx), by)
        def opt():
            for param in fc.parameters():
                param.data.add_(-0.1 * param.grad)
        return fwd, fc.zero_grad, opt
    if name == 'sequence':  # time_sequence_prediction: two LSTMCells and a Linear unrolled 999 steps, float64
        class Sequence(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm1 = T.nn.LSTMCell(1, 51); self.lstm2 = T.nn.LSTMCell(51, 51); self.linear = T.nn.Linear(51, 1)
            def forward(self, input):
                outputs = []
                h_t, c_t, h_t2, c_t2 = (T.zeros(input.size(0), 51, dtype=T.double) for _ in range(4))
                for input_t in input.split(1, dim=1):
                    h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                    h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                    outputs += [self.linear(h_t2)]
                return T.cat(outputs, dim=1)
        T.manual_seed(0)
        waves = math.pi * 2 * (T.arange(1000, dtype=T.double) / 20 + T.arange(97, dtype=T.double).unsqueeze(1) / 7)
        data = T.sin(waves)
        inp, target = data[:, :-1], data[:, 1:]
        seq = Sequence().double(); crit = T.nn.MSELoss()
        o = T.optim.SGD(seq.parameters(), lr=0.01)  # (the script's LBFGS calls this closure: forward, backward)
        def fwd(): return crit(seq(inp), target)
        return fwd, o.zero_grad, o.step
STEPS = {'sequence': 9}  # (a second a step: the others take 300)


def run(T, name, n=300):
    n = STEPS.get(name, n)
    fwd, zg, opt = build(T, name)
    tf=[];tz=[];tb=[];to=[]
    pc = time.thread_time
    for i in range(n):
        random.seed(i)
        t0=pc(); loss=fwd(); t1=pc(); zg(); t2=pc(); loss.backward(); t3=pc(); opt(); t4=pc()
        if i % 100 == 99: loss.item()
        tf.append(t1-t0); tz.append(t2-t1); tb.append(t3-t2); to.append(t4-t3)
    m=lambda v: statistics.median(v[min(20, n // 3):])*1e6
    return m(tf), m(tz), m(tb), m(to)
if __name__ == '__main__':
    import torch, tapegrad
    torch.set_num_threads(1)
    names = sys.argv[1:] or ['autograd','custom','nn','optim','module','dynamic','regression','sequence']
    for name in names:
        rt = run(torch, name); rg = run(tapegrad, name)
        print(f"{name:9s} torch f/z/b/o {rt[0]:6.1f} {rt[1]:5.1f} {rt[2]:6.1f} {rt[3]:5.1f} sum {sum(rt):6.1f} | tg {rg[0]:6.1f} {rg[1]:5.1f} {rg[2]:6.1f} {rg[3]:5.1f} sum {sum(rg):6.1f} ratio {sum(rg)/sum(rt):.2f}")
