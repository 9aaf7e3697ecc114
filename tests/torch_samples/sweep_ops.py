"""torch's OpInfo samples (torch.testing._internal.common_methods_invocations.op_db) under torch and tapegrad, side
by side: each op's sample inputs in float64, float32, int64 and bool (values, dtypes, shapes), the gradient of
sum(out * cotangent), optionally the second derivative (GRADGRAD=1) or the extended reference inputs (REFERENCE=1),
and the ops' error inputs (exception type, and message against torch's regex). A sweep, not a test: torch's samples
change between versions and some differences are the harness's (OpInfo wrappers calling torch's private APIs,
uninitialised `empty`, eigenvector signs); triage each with show.py, reproduce it in plain code, and test the fix
in tests/. Needs `pip install expecttest` (torch's testing package imports it).

    python tests/torch_samples/sweep_ops.py START END OUT.jsonl     # op_db[START:END] (702 entries in torch 2.13)
    python tests/torch_samples/sweep_ops.py --only NAME[,NAME] OUT.jsonl
    python tests/torch_samples/show.py OUT.jsonl [NAME-SUBSTRING]    # one line per difference

Each entry is rebuilt for tapegrad by copying its tensors; a Python wrapper of torch's testing code is called with
its torch module globals swapped for tapegrad's (falling back to tapegrad's function of the op's name)."""
import os, sys, json, math, signal, traceback, warnings
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
warnings.filterwarnings("ignore")
import numpy as np
import types
import torch
import tapegrad as tg
from torch.testing._internal.common_methods_invocations import op_db
torch.set_num_threads(1)

MAX_SAMPLES = 12
SKIP_NAMES = ("fft.", "sparse.", "_refs", "masked.", "signal.", "nn.functional.scaled_dot_product_attention_")

class Timeout(Exception): pass
import re
ARTEFACT = re.compile(r"torch\._C|must be Tensor, not Tensor|but got Tensor|backend_registration|ops' has no attribute 'aten'")
def _alarm(*a): raise Timeout()
signal.signal(signal.SIGALRM, _alarm)

def resolve(root, name):
    obj = root
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj

def _tg_module(mod):
    name = mod.__name__
    if not name.startswith("torch"):
        return None
    try:
        return resolve(tg, name[len("torch."):]) if name != "torch" else tg
    except AttributeError:
        return None

def rebind(f):
    """f (a Python function of torch's testing code) with its torch module globals swapped for tapegrad's."""
    g = dict(f.__globals__)
    changed = False
    for k, v in list(g.items()):
        if isinstance(v, types.ModuleType) and v.__name__.startswith("torch"):
            m = _tg_module(v)
            if m is not None:
                g[k] = m; changed = True
    if "wrapper_set_seed" in g:
        def seeded(op, *a, **k):
            tg.manual_seed(42)
            return op(*a, **k)
        g["wrapper_set_seed"] = seeded
    if not changed:
        return None
    return types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)

def to_tg(x):
    if isinstance(x, torch.Tensor):
        if x.is_complex() or x.is_sparse or x.layout != torch.strided or x.dtype in (torch.bfloat16,) :
            raise NotImplementedError("sample: complex/sparse/bf16")
        a = x.detach().numpy().copy()
        t = tg.tensor(a, requires_grad=x.requires_grad)
        return t
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.dtype):
        return getattr(tg, str(x).split(".")[1])
    if isinstance(x, torch.device):
        return "cpu"
    if isinstance(x, torch.memory_format):
        return getattr(tg, str(x).split(".")[1])
    if isinstance(x, torch.Generator):
        raise NotImplementedError("sample: generator")
    if isinstance(x, (list, tuple)):
        return type(x)(to_tg(v) for v in x)
    if isinstance(x, dict):
        return {k: to_tg(v) for k, v in x.items()}
    if callable(x) and not isinstance(x, type):
        raise NotImplementedError("sample: callable")
    return x

def flat(out, lib):
    T = torch.Tensor if lib is torch else tg.Tensor
    if isinstance(out, T):
        return [out]
    if isinstance(out, (list, tuple)):
        r = []
        for o in out:
            r.extend(flat(o, lib))
        return r
    return [out]

def np_of(x):
    if isinstance(x, torch.Tensor):
        if x._is_zerotensor():  # (torch's symbolic zero gradient)
            return np.zeros(tuple(x.shape), str(x.dtype).split(".")[1])
        return x.detach().numpy()
    if isinstance(x, tg.Tensor):
        d = x.detach().numpy()
        return d
    return x

def close(a, b, dtype):
    a, b = np_of(a), np_of(b)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray):
            return f"type {type(a).__name__} vs {type(b).__name__}"
        if a.shape != b.shape:
            return f"shape {a.shape} vs {b.shape}"
        if str(a.dtype) != str(b.dtype):
            return f"dtype {a.dtype} vs {b.dtype}"
        if a.dtype.kind in "fc":
            tol = 1e-4 if dtype == torch.float32 else 1e-7
            if not np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True):
                d = np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64))) if a.size else 0
                return f"values maxdiff {d:.3g}"
        elif not np.array_equal(a, b):
            return "values (exact)"
        return None
    if isinstance(a, float) and isinstance(b, float):
        return None if (a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-6 * max(1, abs(a))) else f"scalar {a} vs {b}"
    if a != b and not (isinstance(a, (int, float, bool)) and isinstance(b, (int, float, bool)) and float(a) == float(b)):
        return f"other {a!r:.40} vs {b!r:.40}"
    return None

def grad_inputs(sample_flat, lib):
    T = torch.Tensor if lib is torch else tg.Tensor
    return [x for x in sample_flat if isinstance(x, T) and x.requires_grad]

def leaves(s):
    out = []
    def walk(x):
        if isinstance(x, (list, tuple)):
            for v in x: walk(v)
        elif isinstance(x, dict):
            for v in x.values(): walk(v)
        else:
            out.append(x)
    walk((s[0], s[1], s[2]))
    return out

GRADGRAD = os.environ.get("GRADGRAD") == "1"

def _second(lib, outs, inputs, cots, ws):
    total = sum((o * c).sum() for o, c in zip(outs, cots))
    gs = lib.autograd.grad(total, inputs, create_graph=True, allow_unused=True)
    s = None
    for g, w in zip(gs, ws):
        if g is not None and g.requires_grad:
            term = (g * w).sum()
            s = term if s is None else s + term
    if s is None:
        return None
    return lib.autograd.grad(s, inputs, allow_unused=True)

def gradgrad(rec, results, touts, tin, gouts, gin, cn, dtype, i):
    rng = np.random.default_rng(100 + i)
    ws = [rng.standard_normal(tuple(x.shape)).astype(np.float64 if x.dtype == torch.float64 else np.float32) for x in tin]
    try:
        ta = _second(torch, touts, tin, [torch.tensor(c) for c in cn], [torch.tensor(w) for w in ws])
    except Exception:
        return
    try:
        ga = _second(tg, gouts, gin, [tg.tensor(c) for c in cn], [tg.tensor(w) for w in ws])
    except Timeout:
        raise
    except Exception as e:
        results.append(dict(rec, kind="gg_error", msg=f"{type(e).__name__}: {str(e)[:200]}", tb=traceback.format_exception(e)[-2][:300]))
        return
    if ta is None:
        return
    if ga is None:
        if any(a is not None and np.any(np_of(a)) for a in ta):
            results.append(dict(rec, kind="gradgrad", msg="second derivative: None vs value"))
        return
    for k, (a, b) in enumerate(zip(ta, ga)):
        if a is None and b is None:
            continue
        if a is None or b is None:
            za = a is None or not np.any(np_of(a)); zb = b is None or not np.any(np_of(b))
            if za and zb:
                continue
            results.append(dict(rec, kind="gradgrad", msg=f"gg{k}: None vs value")); return
        d = close(a, b, dtype)
        if d:
            results.append(dict(rec, kind="gradgrad", msg=f"gg{k}: {d}")); return

def run_one(fn, sample, lib):
    inp, args, kwargs = sample
    return fn(inp, *args, **kwargs)

def backward(lib, outs, inputs, cots):
    pairs = [(o, c) for o, c in zip(outs, cots) if c is not None and o.requires_grad]
    if not pairs or not inputs:
        return None
    total = sum((o * c).sum() for o, c in pairs)
    return lib.autograd.grad(total, inputs, allow_unused=True, retain_graph=GRADGRAD)

def check(op, dtype, results):
    name = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
    if name.startswith(SKIP_NAMES) or op.name.startswith(SKIP_NAMES):
        return
    if dtype not in op.supported_dtypes("cpu"):
        return
    try:
        tfn = op.op
        try:
            gfn = resolve(tg, op.name) if not op.name.startswith("__") and op.name not in ("H", "T", "mT", "mH") else None
        except AttributeError:
            gfn = None
        method = op.method_variant
        mname = getattr(method, "__name__", None) if method is not None else None
        is_lambda = getattr(tfn, "__name__", "") == "<lambda>"
        rebound = rebind(tfn) if isinstance(tfn, types.FunctionType) else None
        byname = None
        if rebound is not None:
            byname = gfn
            gfn, is_lambda = rebound, False
        if gfn is None and mname is None:
            results.append({"op": name, "dtype": str(dtype), "kind": "missing", "msg": f"tapegrad.{op.name}"})
            return
        sampler = op.reference_inputs if os.environ.get("REFERENCE") == "1" else op.sample_inputs
        samples = list(sampler("cpu", dtype, requires_grad=op.supports_autograd and dtype.is_floating_point))
        if os.environ.get("REFERENCE") == "1":
            base = len(list(op.sample_inputs("cpu", dtype, requires_grad=op.supports_autograd and dtype.is_floating_point)))
            samples = samples[base:base + 3 * MAX_SAMPLES]  # (the reference samples beyond the plain ones)
        else:
            samples = samples[:MAX_SAMPLES]
    except Exception as e:
        results.append({"op": name, "dtype": str(dtype), "kind": "harness", "msg": f"{type(e).__name__}: {e}"[:200]})
        return
    for i, s in enumerate(samples):
        rec = {"op": name, "dtype": str(dtype), "sample": i, "lambda": is_lambda,
               "desc": repr(s)[:300]}
        try:
            sg = (to_tg(s.input), to_tg(s.args), to_tg(s.kwargs))
        except Exception as e:
            continue
        st = (s.input, s.args, s.kwargs)
        use_method = gfn is None or (is_lambda and mname is not None)
        if use_method:
            tcall = lambda inp, *a, **k: getattr(inp, mname)(*a, **k)
            gcall = tcall
            via = "method"
        else:
            tcall, gcall, via = tfn, gfn, "function"
        rec["via"] = via
        signal.alarm(20)
        try:
            try:
                tout = run_one(tcall, st, torch)
            except Exception as e:
                tout, terr = None, e
            else:
                terr = None
            try:
                gout = run_one(gcall, sg, tg)
            except Timeout:
                raise
            except Exception as e:
                gout, gerr = None, e
                if byname is not None and ARTEFACT.search(f"{type(e).__name__}: {e}"):
                    rec["via"] = "byname"
                    try:
                        gout, gerr = run_one(byname, sg, tg), None
                    except Timeout:
                        raise
                    except Exception as e2:
                        gout, gerr = None, e2
            else:
                gerr = None
            if terr is not None and gerr is not None:
                if type(terr).__name__ != type(gerr).__name__:
                    rec.update(kind="errtype", msg=f"torch {type(terr).__name__}: {str(terr)[:120]} | tg {type(gerr).__name__}: {str(gerr)[:120]}")
                    results.append(rec)
                continue
            if terr is not None:
                rec.update(kind="tg_accepts", msg=f"torch {type(terr).__name__}: {str(terr)[:160]}")
                results.append(rec); continue
            if gerr is not None:
                rec.update(kind="error", msg=f"{type(gerr).__name__}: {str(gerr)[:200]}", tb=traceback.format_exception(gerr)[-2][:300])
                results.append(rec); continue
            tf, gf = flat(tout, torch), flat(gout, tg)
            if len(tf) != len(gf):
                rec.update(kind="value", msg=f"n outputs {len(tf)} vs {len(gf)}"); results.append(rec); continue
            for k, (a, b) in enumerate(zip(tf, gf)):
                d = close(a, b, dtype)
                if d:
                    rec.update(kind="value", msg=f"out{k}: {d}"); results.append(rec); break
            else:
                # gradients
                tin = grad_inputs(leaves(st), torch)
                gin = grad_inputs(leaves(sg), tg)
                if not tin or not op.supports_autograd:
                    continue
                touts = [o for o in tf if isinstance(o, torch.Tensor) and o.dtype.is_floating_point and o.requires_grad]
                gouts = [o for o in gf if isinstance(o, tg.Tensor) and o.requires_grad]
                if len(touts) != len(gouts):
                    rec.update(kind="grad", msg=f"requires_grad outputs {len(touts)} vs {len(gouts)}"); results.append(rec); continue
                if not touts:
                    continue
                rng = np.random.default_rng(i)
                cn = [rng.standard_normal(o.shape).astype(np.float64 if o.dtype == torch.float64 else np.float32) for o in touts]
                try:
                    tg_ = backward(torch, touts, tin, [torch.tensor(c) for c in cn])
                except Exception as e:
                    continue
                try:
                    gg_ = backward(tg, gouts, gin, [tg.tensor(c) for c in cn])
                except Timeout:
                    raise
                except Exception as e:
                    rec.update(kind="grad_error", msg=f"{type(e).__name__}: {str(e)[:200]}", tb=traceback.format_exception(e)[-2][:300]); results.append(rec); continue
                if tg_ is None:
                    continue
                for k, (a, b) in enumerate(zip(tg_, gg_)):
                    if a is None and b is None:
                        continue
                    if a is None or b is None:
                        za = a is None or not np.any(np_of(a)); zb = b is None or not np.any(np_of(b))
                        if za and zb:
                            continue
                        rec.update(kind="grad", msg=f"grad{k}: {'torch' if a is None else 'tapegrad'} None, the other a value"); results.append(rec); break
                    d = close(a, b, dtype)
                    if d:
                        rec.update(kind="grad", msg=f"grad{k}: {d}"); results.append(rec); break
                else:
                    if GRADGRAD and op.supports_gradgrad:
                        gradgrad(rec, results, touts, tin, gouts, gin, cn, dtype, i)
        except Timeout:
            rec.update(kind="timeout", msg="20 s"); results.append(rec)
        except Exception as e:
            rec.update(kind="harness", msg=f"{type(e).__name__}: {str(e)[:200]}"); results.append(rec)
        finally:
            signal.alarm(0)

def errors(op, results):
    name = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
    if name.startswith(SKIP_NAMES):
        return
    try:
        try:
            gfn = resolve(tg, op.name)
        except AttributeError:
            return
        eis = list(op.error_inputs("cpu"))
    except Exception:
        return
    for i, ei in enumerate(eis[:20]):
        s = ei.sample_input
        try:
            sg = (to_tg(s.input), to_tg(s.args), to_tg(s.kwargs))
        except Exception:
            continue
        rec = {"op": name, "dtype": "err", "sample": i, "desc": repr(s)[:300]}
        signal.alarm(20)
        try:
            try:
                gfn(sg[0], *sg[1], **sg[2])
                rec.update(kind="err_accepts", msg=f"torch {ei.error_type.__name__}: {ei.error_regex[:150]}")
                results.append(rec)
            except Timeout:
                raise
            except Exception as e:
                import re
                if type(e).__name__ != ei.error_type.__name__ and not isinstance(e, ei.error_type):
                    rec.update(kind="err_type", msg=f"torch {ei.error_type.__name__}: {ei.error_regex[:100]} | tg {type(e).__name__}: {str(e)[:120]}")
                    results.append(rec)
                elif not re.search(ei.error_regex, str(e)):
                    rec.update(kind="err_msg", msg=f"torch {ei.error_regex[:120]} | tg {str(e)[:140]}")
                    results.append(rec)
        except Timeout:
            rec.update(kind="timeout", msg="err 20 s"); results.append(rec)
        except Exception as e:
            rec.update(kind="harness", msg=f"{type(e).__name__}: {str(e)[:200]}"); results.append(rec)
        finally:
            signal.alarm(0)

if __name__ == "__main__":
    if sys.argv[1] == "--only":  # python opinfo.py --only name[,name...] OUT.jsonl (names as the jsonl's "op")
        wanted = set(sys.argv[2].split(","))
        selected = [op for op in op_db if op.name in wanted or op.name + "." + op.variant_test_name in wanted]
        out = sys.argv[3]
    else:
        start, end, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
        selected = op_db[start:end]
    _w = tg.randn(3, requires_grad=True); (_w.abs() * 2).sum().backward()
    with open(out, "w") as f:
        for op in selected:
            results = []
            tg.set_default_dtype(tg.float32); torch.set_default_dtype(torch.float32)
            for dtype in (torch.float64, torch.float32, torch.int64, torch.bool):
                check(op, dtype, results)
            errors(op, results)
            for r in results:
                f.write(json.dumps(r) + "\n")
            f.flush()
            print(op.name, len(results), flush=True)
