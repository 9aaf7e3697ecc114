"""torch's OptimizerInfo configurations (torch.testing._internal.common_optimizers.optim_db) under torch and tapegrad:
six steps of each configuration (and its foreach / fused forms) on the same float64 problem, parameters compared to
1e-9, the state's and param_groups' keys, and the optimizers' error inputs. A sweep, not a test (see sweep_ops.py).

    python tests/torch_samples/sweep_optimizers.py OUT.jsonl"""
import os, sys, json, math, warnings, re, traceback
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
warnings.filterwarnings("ignore")
import numpy as np
import torch
import tapegrad as tg
from torch.testing._internal.common_optimizers import optim_db
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_ops import to_tg
torch.set_num_threads(1)

def run(L, cls_name, kwargs, steps=6, closure=False):
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((5, 4)); b0 = rng.standard_normal(4); x = rng.standard_normal((3, 5))
    w = L.tensor(w0, requires_grad=True); b = L.tensor(b0, requires_grad=True)
    opt = getattr(L.optim, cls_name)([w, b], **kwargs)
    X = L.tensor(x)
    def loss_fn():
        opt.zero_grad()
        loss = ((X @ w + b).tanh() ** 2).sum() + (w ** 4).sum() * 0.01
        loss.backward()
        return loss
    for _ in range(steps):
        if closure:
            opt.step(loss_fn)
        else:
            loss_fn(); opt.step()
    return [w.detach().numpy().copy(), b.detach().numpy().copy()], opt

def main(out):
    res = []
    for oi in optim_db:
        name = oi.optim_cls.__name__
        if name in ("SparseAdam",):
            continue
        if not hasattr(tg.optim, name):
            res.append({"op": name, "kind": "missing", "msg": f"tapegrad.optim.{name}"}); continue
        try:
            inputs = oi.optim_inputs_func(device="cpu", dtype=torch.float64)
        except Exception as e:
            res.append({"op": name, "kind": "harness", "msg": str(e)[:200]}); continue
        for i, oin in enumerate(inputs):
            kw = dict(oin.kwargs)
            for impl in [None] + [k for k in ("foreach", "fused") if k in oi.supported_impls]:
                kwi = dict(kw)
                if impl:
                    kwi[impl] = True
                kwi.pop("capturable", None) if kwi.get("capturable") else None
                if kwi.get("differentiable"):
                    continue
                rec = {"op": name, "sample": i, "desc": f"{oin.desc} {kwi}"[:300]}
                try:
                    tkw = kwi
                    tp, topt = run(torch, name, tkw, closure=oi.step_requires_closure)
                except Exception as e:
                    continue
                try:
                    gp, gopt = run(tg, name, to_tg(kwi), closure=oi.step_requires_closure)
                except Exception as e:
                    rec.update(kind="error", msg=f"{type(e).__name__}: {str(e)[:200]}", tb=traceback.format_exception(e)[-2][:300]); res.append(rec); continue
                for k, (a, b) in enumerate(zip(tp, gp)):
                    if not np.allclose(a, b, rtol=1e-9, atol=1e-12):
                        rec.update(kind="value", msg=f"param{k} maxdiff {np.abs(a - b).max():.3g}"); res.append(rec); break
                else:
                    # state_dict keys of the optimizer
                    try:
                        ts, gs = topt.state_dict(), gopt.state_dict()
                        tk = sorted(ts["state"][0].keys()) if ts["state"] else []
                        gk = sorted(gs["state"][0].keys()) if gs["state"] else []
                        if tk != gk:
                            rec.update(kind="state", msg=f"state keys {tk} vs {gk}"); res.append(rec)
                        tpg = sorted(ts["param_groups"][0].keys()); gpg = sorted(gs["param_groups"][0].keys())
                        if tpg != gpg:
                            rec.update(kind="param_groups", msg=f"{sorted(set(tpg) ^ set(gpg))}"); res.append(rec)
                    except Exception as e:
                        rec.update(kind="state_error", msg=f"{type(e).__name__}: {str(e)[:200]}"); res.append(rec)
        # errors
        if oi.optim_error_inputs_func is not None:
            try:
                eis = oi.optim_error_inputs_func(device="cpu", dtype=torch.float64)
            except Exception:
                eis = []
            for j, ei in enumerate(eis):
                oin = ei.optimizer_error_input
                rec = {"op": name, "sample": j, "desc": f"err {oin.desc} {oin.kwargs}"[:300]}
                try:
                    params = to_tg(oin.params) if oin.params is not None else [tg.zeros(2, requires_grad=True)]
                    kw = to_tg(oin.kwargs)
                except Exception:
                    continue
                try:
                    o = getattr(tg.optim, name)(params, **kw)
                    if str(ei.error_on).endswith("STEP_ERROR"):
                        for p in (params if isinstance(params, list) and params and isinstance(params[0], tg.Tensor) else []):
                            p.grad = tg.zeros_like(p)
                        o.step() if not oi.step_requires_closure else o.step(lambda: tg.tensor(0.0))
                    rec.update(kind="err_accepts", msg=f"torch {ei.error_type.__name__}: {ei.error_regex[:150]}"); res.append(rec)
                except Exception as e:
                    if not isinstance(e, ei.error_type) and type(e).__name__ != ei.error_type.__name__:
                        rec.update(kind="err_type", msg=f"torch {ei.error_type.__name__}: {ei.error_regex[:100]} | tg {type(e).__name__}: {str(e)[:120]}"); res.append(rec)
                    elif not re.search(ei.error_regex, str(e)):
                        rec.update(kind="err_msg", msg=f"torch {ei.error_regex[:120]} | tg {str(e)[:140]}"); res.append(rec)
        print(name, flush=True)
    with open(out, "w") as f:
        for r in res:
            f.write(json.dumps(r) + "\n")

if __name__ == "__main__":
    main(sys.argv[1])
