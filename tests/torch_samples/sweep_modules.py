"""torch's ModuleInfo samples (torch.testing._internal.common_modules.module_db) under torch and tapegrad: repr,
state_dict keys, forward values, input and parameter gradients (torch's parameters loaded into tapegrad's module),
train and eval, and the modules' error inputs. A sweep, not a test (see sweep_ops.py).

    python tests/torch_samples/sweep_modules.py OUT.jsonl [nn.Name,...]"""
import os, sys, json, math, signal, traceback, warnings, re
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
warnings.filterwarnings("ignore")
import numpy as np
import torch
import tapegrad as tg
from torch.testing._internal.common_modules import module_db
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_ops import to_tg, flat, close, np_of, Timeout
torch.set_num_threads(1)

def resolve(root, name):
    obj = root
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj

def grads_of(lib, outs, inputs, params, cots):
    pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
    if not pairs:
        return None
    total = sum((o * c).sum() for o, c in pairs)
    return lib.autograd.grad(total, list(inputs) + list(params), allow_unused=True)

def leaves(x, T):
    out = []
    def walk(v):
        if isinstance(v, (list, tuple)):
            for u in v: walk(u)
        elif isinstance(v, dict):
            for u in v.values(): walk(u)
        elif isinstance(v, T) and v.requires_grad:
            out.append(v)
    walk(x)
    return out

def check(mi, dtype, training, results):
    name = mi.name
    try:
        gcls = resolve(tg, name)
    except AttributeError:
        results.append({"op": name, "dtype": str(dtype), "kind": "missing", "msg": f"tapegrad.{name}"}); return
    try:
        inputs = mi.module_inputs_func(mi, device="cpu", dtype=dtype, requires_grad=True, training=training)
    except Exception as e:
        results.append({"op": name, "dtype": str(dtype), "kind": "harness", "msg": f"{type(e).__name__}: {e}"[:200]}); return
    for i, mi_in in enumerate(inputs[:10]):
        ci, fi = mi_in.constructor_input, mi_in.forward_input
        rec = {"op": name, "dtype": str(dtype), "sample": i, "training": training,
               "desc": f"ctor args={ci.args!r:.150} kwargs={ci.kwargs!r:.150} | fwd {mi_in.desc}"}
        if fi is None:
            continue
        try:
            gci = (to_tg(ci.args), to_tg(ci.kwargs)); gfi = (to_tg(fi.args), to_tg(fi.kwargs))
        except Exception:
            continue
        signal.alarm(30)
        try:
            torch.manual_seed(0)
            try:
                tm = mi.module_cls(*ci.args, **ci.kwargs).to(dtype)
            except Exception as e:
                continue
            tm.train(training)
            try:
                tg.manual_seed(0)
                gm = gcls(*gci[0], **gci[1]).to(getattr(tg, str(dtype).split(".")[1]))
                gm.train(training)
            except Timeout:
                raise
            except Exception as e:
                rec.update(kind="ctor", msg=f"{type(e).__name__}: {str(e)[:200]}", tb=traceback.format_exception(e)[-2][:300]); results.append(rec); continue
            if repr(tm) != repr(gm):
                results.append(dict(rec, kind="repr", msg=f"{repr(tm)[:120]!r} vs {repr(gm)[:120]!r}"))
            tsd, gsd = tm.state_dict(), gm.state_dict()
            if list(tsd.keys()) != list(gsd.keys()):
                rec.update(kind="state_dict", msg=f"{list(tsd.keys())} vs {list(gsd.keys())}"[:300]); results.append(rec); continue
            init_diff = [k for k in tsd if tsd[k].shape == tuple(gsd[k].shape) and tsd[k].dtype.is_floating_point and close(tsd[k], gsd[k], dtype)]
            if init_diff:
                results.append(dict(rec, kind="init", msg=f"initial values differ: {init_diff[:4]}"))
            try:
                gm.load_state_dict({k: tg.tensor(v.detach().numpy().copy()) for k, v in tsd.items()})
            except Timeout:
                raise
            except Exception as e:
                rec.update(kind="load", msg=f"{type(e).__name__}: {str(e)[:200]}"); results.append(rec); continue
            torch.manual_seed(1)
            try:
                tout = tm(*fi.args, **fi.kwargs)
            except Exception as e:
                continue
            tg.manual_seed(1)
            try:
                gout = gm(*gfi[0], **gfi[1])
            except Timeout:
                raise
            except Exception as e:
                rec.update(kind="error", msg=f"{type(e).__name__}: {str(e)[:200]}", tb=traceback.format_exception(e)[-2][:300]); results.append(rec); continue
            tf, gf = flat(tout, torch), flat(gout, tg)
            if len(tf) != len(gf):
                rec.update(kind="value", msg=f"n outputs {len(tf)} vs {len(gf)}"); results.append(rec); continue
            bad = False
            for k, (a, b) in enumerate(zip(tf, gf)):
                d = close(a, b, dtype)
                if d:
                    rec.update(kind="value", msg=f"out{k}: {d}"); results.append(rec); bad = True; break
            if bad:
                continue
            tin, gin = leaves((fi.args, fi.kwargs), torch.Tensor), leaves((gfi[0], gfi[1]), tg.Tensor)
            tp = [p for p in tm.parameters() if p.requires_grad]; gp = [p for p in gm.parameters() if p.requires_grad]
            touts = [o for o in tf if isinstance(o, torch.Tensor) and o.requires_grad]
            gouts = [o for o in gf if isinstance(o, tg.Tensor) and o.requires_grad]
            if len(touts) != len(gouts) or len(tin) != len(gin) or len(tp) != len(gp):
                rec.update(kind="grad", msg=f"requires_grad counts outs {len(touts)}/{len(gouts)} ins {len(tin)}/{len(gin)} params {len(tp)}/{len(gp)}"); results.append(rec); continue
            if not touts:
                continue
            rng = np.random.default_rng(i)
            cn = [rng.standard_normal(o.shape).astype(np.float64 if o.dtype == torch.float64 else np.float32) for o in touts]
            try:
                ta = grads_of(torch, touts, tin, tp, [torch.tensor(c) for c in cn])
            except Exception:
                continue
            try:
                ga = grads_of(tg, gouts, gin, gp, [tg.tensor(c) for c in cn])
            except Timeout:
                raise
            except Exception as e:
                rec.update(kind="grad_error", msg=f"{type(e).__name__}: {str(e)[:200]}", tb=traceback.format_exception(e)[-2][:300]); results.append(rec); continue
            names = [f"input{j}" for j in range(len(tin))] + [n for n, p in tm.named_parameters() if p.requires_grad]
            for nm, a, b in zip(names, ta, ga):
                if a is None and b is None:
                    continue
                if a is None or b is None:
                    za = a is None or not np.any(np_of(a)); zb = b is None or not np.any(np_of(b))
                    if not (za and zb):
                        rec.update(kind="grad", msg=f"{nm}: None vs value"); results.append(rec); break
                    continue
                d = close(a, b, dtype)
                if d:
                    rec.update(kind="grad", msg=f"{nm}: {d}"); results.append(rec); break
        except Timeout:
            rec.update(kind="timeout", msg="30 s"); results.append(rec)
        except Exception as e:
            rec.update(kind="harness", msg=f"{type(e).__name__}: {str(e)[:200]}"); results.append(rec)
        finally:
            signal.alarm(0)

def errors(mi, results):
    if mi.module_error_inputs_func is None:
        return
    try:
        gcls = resolve(tg, mi.name)
        eis = mi.module_error_inputs_func(mi, device="cpu", dtype=torch.float32, requires_grad=False, training=True)
    except Exception:
        return
    for i, ei in enumerate(eis):
        mi_in = ei.module_error_input
        ci, fi = mi_in.constructor_input, mi_in.forward_input
        rec = {"op": mi.name, "dtype": "err", "sample": i, "desc": f"ctor {ci.args!r:.150} {ci.kwargs!r:.100} stage {ei.error_on}"}
        try:
            gci = (to_tg(ci.args), to_tg(ci.kwargs)); gfi = (to_tg(fi.args), to_tg(fi.kwargs)) if fi is not None else None
        except Exception:
            continue
        signal.alarm(30)
        try:
            try:
                gm = gcls(*gci[0], **gci[1])
                if gfi is not None:
                    gm(*gfi[0], **gfi[1])
                rec.update(kind="err_accepts", msg=f"torch {ei.error_type.__name__}: {ei.error_regex[:150]}"); results.append(rec)
            except Timeout:
                raise
            except Exception as e:
                if not isinstance(e, ei.error_type) and type(e).__name__ != ei.error_type.__name__:
                    rec.update(kind="err_type", msg=f"torch {ei.error_type.__name__}: {ei.error_regex[:100]} | tg {type(e).__name__}: {str(e)[:120]}"); results.append(rec)
                elif not re.search(ei.error_regex, str(e)):
                    rec.update(kind="err_msg", msg=f"torch {ei.error_regex[:120]} | tg {str(e)[:140]}"); results.append(rec)
        except Timeout:
            rec.update(kind="timeout", msg="err 30 s"); results.append(rec)
        except Exception as e:
            rec.update(kind="harness", msg=f"{type(e).__name__}: {str(e)[:200]}"); results.append(rec)
        finally:
            signal.alarm(0)

if __name__ == "__main__":
    out = sys.argv[1]
    wanted = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
    _w = tg.randn(3, requires_grad=True); (_w.abs() * 2).sum().backward()
    with open(out, "w") as f:
        for mi in module_db:
            if wanted and mi.name not in wanted:
                continue
            results = []
            for dtype in (torch.float64, torch.float32):
                for training in (True, False):
                    check(mi, dtype, training, results)
            errors(mi, results)
            for r in results:
                f.write(json.dumps(r) + "\n")
            f.flush()
            print(mi.name, len(results), flush=True)
