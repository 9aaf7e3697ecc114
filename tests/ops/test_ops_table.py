"""Every op of the training op set against torch, from one table: values, dtypes, grad_fn names and
gradients (float32 and float64, each access path: tapegrad.X, Tensor.X, nn.functional.X), gradients
against central finite differences (float64), and second derivatives (create_graph) against torch.

Adding an op = adding rows to CASES below (or to its area's tests/ops/cases_*.py)."""
import importlib
import pathlib

import numpy as np
import pytest

from optable import A, B, Case, I, V, check_case, check_finite_differences, check_second_order, params

TMF = ("top", "method", "F")
TM = ("top", "method")
F = ("F",)
ZERO_GRAD = {"sign", "floor", "ceil", "round", "trunc", "angle"}

CASES = []


def add(*cases):
    CASES.extend(cases)


# -- elementwise, unary --------------------------------------------------------------------------------------------
UNARY = {"neg": "any", "exp": "any", "log": "pos", "sqrt": "pos", "sin": "any", "cos": "any", "tan": "small",
         "tanh": "any", "sigmoid": "any", "relu": "any", "abs": "any", "reciprocal": "pos", "square": "any",
         "rsqrt": "pos", "log1p": "pos", "expm1": "any", "log2": "pos", "exp2": "any", "asin": "unit",
         "acos": "unit", "atan": "any", "sinh": "any", "cosh": "any", "erf": "any", "sign": "any",
         "floor": "any", "ceil": "any", "round": "any", "trunc": "any", "angle": "any"}
for name, domain in UNARY.items():
    paths = TMF if name in ("relu", "tanh", "sigmoid") else TM
    add(Case(name, [A((3, 4), domain)], paths=paths),
        Case(name, [A((), domain)], id="0d"),
        Case(name, [A((0, 3), domain)], id="empty", fd=False))
add(Case("clone", [A((3, 4))], paths=TM),
    Case("round", [A((5,), "big")], {"decimals": 1}, id="decimals", paths=TM),
    Case("round", [A((5,), "big")], {"decimals": -1}, id="decimals_neg"))

ACTIVATIONS = [("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("softplus", {}),
               ("softplus", {"beta": 2.0, "threshold": 1.0}), ("leaky_relu", {}),
               ("leaky_relu", {"negative_slope": 0.2}),
               ("elu", {}), ("elu", {"alpha": 0.5}), ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}),
               ("relu", {}), ("tanh", {}), ("sigmoid", {}), ("logsigmoid", {})]
for name, kw in ACTIVATIONS:
    add(Case(name, [A((4, 5))], kw, paths=F, id="-".join(f"{k}={v}" for k, v in kw.items()) or None),
        Case(name, [A(())], kw, paths=F, id="0d"))

# -- elementwise, binary (broadcasting, 0-d, Python numbers) ---------------------------------------------------------
BINARY = {"add": "any", "sub": "any", "mul": "any", "div": "pos", "pow": "pos", "maximum": "any",
          "minimum": "any", "atan2": "any"}
for name, domain in BINARY.items():
    add(Case(name, [A((3, 4), domain), A((3, 4), domain)], paths=TM),
        Case(name, [A((3, 1), domain), A((4,), domain)], id="broadcast"),
        Case(name, [A((), domain), A((2, 3), domain)], id="0d"),
        Case(name, [A((2, 3), domain), A((2, 3), domain, grad=False)], id="const"),
        Case(name, [A((0, 3), domain), A((3,), domain)], id="empty", fd=False))
add(Case("sub", [A((3,))], fn=lambda L, x: x - 2.5, id="scalar"),
    Case("rsub", [A((3,))], fn=lambda L, x: 2.5 - x, id="scalar"),
    Case("div", [A((3,), "pos")], fn=lambda L, x: x / 3.0, id="scalar"),
    Case("div", [A((3,), "pos")], fn=lambda L, x: 3.0 / x, id="rscalar", grad_fn=False),
    Case("pow", [A((3,), "pos")], fn=lambda L, x: x ** 2.5, id="scalar"),
    Case("pow", [A((4,))], fn=lambda L, x: x ** 2, id="square"),   # the compiled rule multiplies for 1, 2, 3
    Case("pow", [A((4,))], fn=lambda L, x: x ** 3, id="cube"),
    Case("pow", [A((4,))], fn=lambda L, x: x ** 1.0, id="one"),
    Case("pow", [A((3,))], fn=lambda L, x: 2.0 ** x, id="rscalar"),
    Case("mul", [A((2, 3))], fn=lambda L, x: 1.5 * x + x * 2, id="scalar"),
    Case("sub", [A((2, 3)), A((2, 3))], fn=lambda L, x, y: x.subtract(y), id="alias"),
    Case("div", [A((2, 3)), A((2, 3), "pos")], fn=lambda L, x, y: x.divide(y), id="alias"))

# -- clamp, where, lerp ----------------------------------------------------------------------------------------------
add(Case("clamp", [A((3, 4))], {"min": -0.5, "max": 0.5}, paths=TM),
    Case("clamp", [A((3, 4))], {"min": 0.0}, id="min"),
    Case("clamp", [A((3, 4))], {"max": 0.1}, id="max"),
    Case("clip", [A((3, 4))], {"min": -0.5, "max": 0.5}, paths=TM),
    Case("clamp", [A((3, 4)), A((3, 4)), A((4,))], fn=lambda L, x, lo, hi: L.clamp(x, lo, hi + 1), id="tensor"),
    Case("clamp", [A((3, 4)), A((1, 4))], fn=lambda L, x, lo: x.clamp(min=lo), id="tensor_min"),
    Case("clamp", [A((3, 4)), A((3, 4))], fn=lambda L, x, hi: L.clamp(x, max=hi), id="tensor_max"),
    Case("clamp", [A((3, 4)), A((3, 4)), A((3, 4))], fn=lambda L, x, lo, hi: L.clamp(x, lo, hi), id="crossed",
         fd=False),
    Case("clamp_min", [A((3, 4))], fn=lambda L, x: L.clamp_min(x, 0.2), id="number"),
    Case("clamp_max", [A((3, 4)), A((4,))], fn=lambda L, x, m: x.clamp_max(m), id="tensor"),
    Case("where", [B((3, 4)), A((3, 4)), A((4,))], fn=lambda L, c, a, b: L.where(c, a, b)),
    Case("where", [B((3, 1)), A((3, 4))], fn=lambda L, c, a: L.where(c, a, 0.5), id="scalar"),
    Case("where", [B((3, 4)), A((3, 4)), A((3, 4))], fn=lambda L, c, a, b: a.where(c, b), id="method"),
    Case("lerp", [A((3, 4)), A((3, 4))], {"weight": 0.3}, paths=TM),
    Case("lerp", [A((3, 4)), A((3, 4))], {"weight": 0.8}, id="high"),
    Case("lerp", [A((3, 4)), A((4,)), A((3, 4), "prob")], paths=TM, id="tensor"))

# -- comparisons and logic: bool results, no gradient ----------------------------------------------------------------
for name in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"):
    add(Case(name, [A((3, 4), grad=False), A((4,), grad=False)], paths=TM))
    if not name.startswith("logical"):
        add(Case(name, [A((3, 4))], fn=lambda L, x, n=name: getattr(L, n)(x, 0.0), id="number"))
add(Case("logical_not", [B((3, 4))], paths=TM),
    Case("compare", [A((3, 4))], fn=lambda L, x: (x > 0, x <= 0.5, x == x, x != 1.0, ~(x < 0), (x > 0) & (x < 1),
                                                  (x > 0) | (x < -1))))

# -- reductions ------------------------------------------------------------------------------------------------------
for name in ("sum", "mean"):
    add(Case(name, [A((3, 4))], paths=TM),
        Case(name, [A((3, 4))], {"dim": 1}, id="dim"),
        Case(name, [A((2, 3, 4))], {"dim": (0, -1), "keepdim": True}, id="dims_keepdim"),
        Case(name, [A((2, 3))], {"dim": -2}, id="negdim"),
        Case(name, [A(())], id="0d"),
        Case(name, [A(())], {"dim": 0}, id="0d_dim"),
        Case(name, [A((0, 3))], {"dim": 1}, id="empty", fd=False))
add(Case("sum", [A((0, 3))], id="empty_all", fd=False),
    Case("sum", [I((3, 4), 5)], id="int"),
    Case("sum", [B((3, 4))], {"dim": 0}, id="bool"),
    Case("sum", [A((3, 4))], {"dtype": None}, id="dtype"))
add(Case("prod", [A((3, 4))], paths=TM),
    Case("prod", [A((3, 4))], {"dim": 1}, id="dim"),
    Case("prod", [A((3, 4))], {"dim": -1, "keepdim": True}, id="keepdim"),
    Case("prod", [V([[1.0, 0.0, 2.0], [3.0, 0.0, 0.0], [1.0, 2.0, 3.0]])], {"dim": 1}, id="zeros"),
    Case("prod", [V([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]])], id="one_zero"),
    Case("prod", [V([[1.0, 0.0, 2.0], [3.0, 4.0, 0.0]])], id="two_zeros"),
    Case("prod", [V([[1.0, 0.0], [0.0, 5.0]])], {"dim": 0}, id="zeros_dim0"),
    Case("prod", [A(())], id="0d"),
    Case("prod", [I((3, 4), 4)], {"dim": 0}, id="int"))
for name in ("var", "std"):
    add(Case(name, [A((3, 4))], paths=TM),
        Case(name, [A((3, 4))], {"dim": 1}, id="dim"),
        Case(name, [A((2, 3, 4))], {"dim": (0, 2), "keepdim": True}, id="dims_keepdim"),
        Case(name, [A((3, 4))], {"dim": 0, "correction": 0}, id="correction0"),
        Case(name, [A((3, 4))], {"dim": 1, "correction": 2}, id="correction2"),
        Case(name, [A((3, 4))], {"unbiased": False}, id="biased"),
        Case(name, [A((3, 4))], fn=lambda L, x, n=name: getattr(x, n)(1, True, True), id="legacy_positional"),
        Case(name, [V([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]])], {"dim": 1}, id="constant_row", fd=False))
for name in ("amax", "amin"):
    add(Case(name, [A((3, 4))], paths=TM),
        Case(name, [A((3, 4))], {"dim": 1}, id="dim"),
        Case(name, [A((2, 3, 4))], {"dim": (0, -1), "keepdim": True}, id="dims_keepdim"),
        Case(name, [V([[1.0, 3.0, 3.0], [-2.0, -2.0, 1.0]])], {"dim": 1}, id="ties", fd=False),
        Case(name, [V([[1.0, 3.0, 3.0], [3.0, -2.0, 1.0]])], id="ties_all", fd=False),
        Case(name, [A(())], id="0d"),
        Case(name, [I((3, 4), 9)], {"dim": 0}, id="int"))
for name in ("max", "min"):
    add(Case(name, [A((3, 4))], paths=TM),
        Case(name, [A((3, 4))], {"dim": 1}, id="dim"),
        Case(name, [A((3, 4))], {"dim": -2, "keepdim": True}, id="keepdim"),
        Case(name, [A((3, 4)), A((4,))], id="binary"),
        Case(name, [V([[1.0, 3.0, 3.0], [3.0, -2.0, 3.0]])], id="ties", fd=False),
        Case(name, [V([[1.0, 3.0, 3.0], [3.0, 3.0, -3.0]])], {"dim": 1}, id="ties_dim", fd=False),
        Case(name, [A(())], {"dim": 0}, id="0d_dim"),
        Case(name, [A((0, 3))], {"dim": 1}, id="empty_dim", fd=False),
        Case(name, [I((3, 4), 9)], {"dim": 1}, id="int"),
        Case(name, [A((3, 4))], fn=lambda L, x, n=name: getattr(x, n)(1).values * 2 + getattr(x, n)(1)[1], id="fields"))
for name in ("argmax", "argmin"):
    add(Case(name, [A((3, 4))], paths=TM),
        Case(name, [A((3, 4))], {"dim": 1}, id="dim"),
        Case(name, [A((3, 4))], {"dim": 0, "keepdim": True}, id="keepdim"),
        Case(name, [A((3, 4))], {"keepdim": True}, id="all_keepdim"),
        Case(name, [A(())], id="0d"))
add(Case("logsumexp", [A((3, 4))], {"dim": 1}, paths=TM),
    Case("logsumexp", [A((2, 3, 4))], {"dim": (0, 2), "keepdim": True}, id="dims_keepdim"),
    Case("logsumexp", [A((3, 4), "big")], {"dim": -1}, id="big"),
    Case("logsumexp", [V([[-np.inf, -np.inf], [0.0, -np.inf]])], {"dim": 1}, id="neginf", fd=False, gg=False),
    Case("logsumexp", [A(())], {"dim": 0}, id="0d"),
    Case("logsumexp", [I((3, 4), 5)], {"dim": 1}, id="int"))
for name in ("softmax", "log_softmax"):
    add(Case(name, [A((3, 4))], {"dim": 1}, paths=TMF),
        Case(name, [A((2, 3, 4))], {"dim": 0}, id="dim0", paths=TMF),
        Case(name, [A((2, 3, 4))], {"dim": -1}, id="negdim"),
        Case(name, [A((3, 4), "big")], {"dim": 1}, id="big"),
        Case(name, [A((3, 4))], fn=lambda L, x, n=name: getattr(L.nn.functional, n)(x), id="implicit_dim"),
        Case(name, [A((3, 4))], {"dim": 1, "dtype": None}, id="dtype"),
        Case(name, [A(())], {"dim": 0}, id="0d"),
        Case(name, [A((0, 3))], {"dim": 1}, id="empty", fd=False))
add(Case("softmax", [A((3, 4), grad=False)], fn=lambda L, x: L.softmax(x, 1, dtype=L.float64), id="to_double"),
    Case("cumsum", [A((3, 4))], {"dim": 1}, paths=TM),
    Case("cumsum", [A((3, 4))], {"dim": -2}, id="negdim"),
    Case("cumsum", [A(())], {"dim": 0}, id="0d"),
    Case("cumsum", [I((3, 4), 5)], {"dim": 1}, id="int"))
NORMS = [{}, {"p": 1}, {"p": 3}, {"p": 0.5}, {"p": 1.5}, {"p": float("inf")}, {"p": -float("inf")}, {"p": 0},
         {"dim": 1}, {"p": 1, "dim": 0, "keepdim": True}, {"p": "fro", "dim": (0, 1)}, {"p": float("inf"), "dim": 1}]
for kw in NORMS:
    add(Case("norm", [A((3, 4))], kw, paths=TM, id="-".join(f"{k}={v}" for k, v in kw.items()) or None,
             fd=kw.get("p") != 0))
add(Case("norm", [V([0.0, 0.0, 0.0])], id="zero", fd=False, gg=False),  # torch's 2nd derivative: nan
    Case("norm", [V([[0.0, 0.0], [1.0, 2.0]])], {"p": 3, "dim": 1}, id="zero_row", fd=False),
    Case("norm", [V([3.0, -3.0, 1.0])], {"p": float("inf")}, id="inf_ties", fd=False),
    Case("norm", [A(())], id="0d"))

# -- shape and data movement -----------------------------------------------------------------------------------------
add(Case("reshape", [A((3, 4))], fn=lambda L, x: x.reshape(2, -1, 2) * 1, id="method"),
    Case("reshape", [A((3, 4))], fn=lambda L, x: L.reshape(x, (12,))),
    Case("view", [A((3, 4))], fn=lambda L, x: x.view(4, 3)),
    Case("view", [A((3, 4))], fn=lambda L, x: x.view(-1)),
    Case("flatten", [A((2, 3, 4))], paths=TM),
    Case("flatten", [A((2, 3, 4))], {"start_dim": 1}, id="start"),
    Case("flatten", [A((2, 3, 4, 2))], {"start_dim": 1, "end_dim": -2}, id="middle"),
    Case("flatten", [A(())], id="0d"),
    Case("squeeze", [A((1, 3, 1))], paths=TM),
    Case("squeeze", [A((1, 3, 1))], {"dim": -1}, id="dim"),
    Case("squeeze", [A((1, 3, 1))], {"dim": (0, 2)}, id="dims"),
    Case("squeeze", [A((2, 3))], {"dim": 0}, id="noop"),
    Case("unsqueeze", [A((2, 3))], {"dim": 1}, paths=TM),
    Case("unsqueeze", [A((2, 3))], {"dim": -1}, id="negdim"),
    Case("unsqueeze", [A(())], {"dim": 0}, id="0d"),
    Case("transpose", [A((2, 3, 4))], {"dim0": 0, "dim1": -1}, paths=TM),
    Case("transpose", [A((2, 3))], {"dim0": 1, "dim1": 1}, id="same"),
    Case("permute", [A((2, 3, 4))], fn=lambda L, x: x.permute(2, 0, 1)),
    Case("permute", [A((2, 3, 4))], fn=lambda L, x: L.permute(x, (-1, 0, 1)), id="top"),
    Case("t", [A((2, 3))], paths=TM),
    Case("t", [A((3,))], id="1d"),
    Case("T", [A((2, 3, 4))], fn=lambda L, x: x.T if x.ndim == 2 else x.permute(2, 1, 0)),
    Case("T", [A((2, 3))], fn=lambda L, x: x.T, id="2d"),
    Case("mT", [A((2, 3, 4))], fn=lambda L, x: x.mT),
    Case("expand", [A((3, 1))], fn=lambda L, x: x.expand(2, 3, 4)),
    Case("expand", [A((3, 1))], fn=lambda L, x: x.expand(-1, 5), id="minus1"),
    Case("expand_as", [A((4,)), A((3, 4), grad=False)], fn=lambda L, x, y: x.expand_as(y)),
    Case("repeat", [A((2, 3))], fn=lambda L, x: x.repeat(2, 1, 3)),
    Case("repeat", [A((2, 3))], fn=lambda L, x: x.repeat(1, 1), id="ones"),
    Case("flip", [A((2, 3, 4))], {"dims": (0, 2)}, paths=TM),
    Case("flip", [A((2, 3))], fn=lambda L, x: x.flip(-1), id="varargs"),
    Case("cat", [A((2, 3)), A((4, 3)), A((1, 3), grad=False)], fn=lambda L, a, b, c: L.cat([a, b, c])),
    Case("cat", [A((2, 3)), A((2, 1))], fn=lambda L, a, b: L.cat((a, b), dim=-1), id="negdim"),
    Case("cat", [A((2, 3)), A((0,))], fn=lambda L, a, b: L.cat([a, b]), id="legacy_empty"),
    Case("cat", [A((2, 3)), A((2, 3))], fn=lambda L, a, b: L.cat([a, b.double()], 1), id="promote",
         dtypes=("float32",), grad_fn=False),
    Case("stack", [A((2, 3)), A((2, 3))], fn=lambda L, a, b: L.stack([a, b])),
    Case("stack", [A((2, 3)), A((2, 3)), A((2, 3), grad=False)], fn=lambda L, a, b, c: L.stack([a, b, c], -1),
         id="negdim"),
    Case("split", [A((5, 3))], fn=lambda L, x: x.split(2)),
    Case("split", [A((5, 3))], fn=lambda L, x: L.split(x, [1, 4], dim=0), id="sizes"),
    Case("split", [A((2, 5))], fn=lambda L, x: x.split([2, 0, 3], -1), id="sizes_zero"),
    Case("chunk", [A((5, 3))], fn=lambda L, x: x.chunk(3)),
    Case("chunk", [A((2, 6))], fn=lambda L, x: L.chunk(x, 4, dim=1), id="dim"),
    Case("narrow", [A((4, 5))], {"dim": 1, "start": 1, "length": 3}, paths=TM),
    Case("narrow", [A((4, 5))], {"dim": 0, "start": -2, "length": 2}, id="negstart"),
    Case("select", [A((4, 5))], {"dim": 1, "index": -1}, paths=TM),
    Case("unbind", [A((3, 2))], paths=TM),
    Case("unbind", [A((3, 2))], {"dim": 1}, id="dim"),
    Case("diagonal", [A((4, 5))], paths=TM),
    Case("diagonal", [A((2, 4, 5))], {"offset": 1, "dim1": -1, "dim2": 1}, id="offset"),
    Case("diagonal", [A((4, 5))], {"offset": -2}, id="below"),
    Case("tril", [A((4, 5))], paths=TM),
    Case("tril", [A((2, 4, 5))], {"diagonal": -1}, id="batch"),
    Case("triu", [A((4, 5))], paths=TM),
    Case("triu", [A((4, 5))], {"diagonal": 2}, id="diag"))

# -- ordering and layout ops scripts use (issue 18): gathers whose gradient scatters back ------------------------------
add(Case("sort", [A((3, 5))], fn=lambda L, x: L.sort(x).values),
    Case("sort", [A((3, 5))], fn=lambda L, x: x.sort(0, descending=True).values, id="desc_dim0"),
    Case("sort", [A((3, 5))], fn=lambda L, x: L.sort(x, stable=True, descending=True)[0], id="stable"),
    Case("sort", [A(())], fn=lambda L, x: L.sort(x).values, id="0d"),
    Case("msort", [A((4, 3))], paths=TM),
    Case("topk", [A((3, 6))], fn=lambda L, x: L.topk(x, 3).values),
    Case("topk", [A((4, 3))], fn=lambda L, x: x.topk(2, dim=0, largest=False).values, id="smallest"),
    Case("topk", [A((5,))], fn=lambda L, x: L.topk(x, 0).values, id="k0", fd=False),
    Case("roll", [A((3, 4))], {"shifts": 2}, paths=TM),
    Case("roll", [A((3, 4))], {"shifts": (1, -3), "dims": (0, 1)}, id="dims"),
    Case("roll", [A((3, 4))], {"shifts": -1, "dims": -1}, id="negdim"),
    Case("diag", [A((4,))], paths=TM),
    Case("diag", [A((3,))], {"diagonal": 2}, id="vec_offset"),
    Case("diag", [A((3,))], {"diagonal": -1}, id="vec_below"),
    Case("diag", [A((4, 5))], {"diagonal": 1}, id="matrix", grad_fn=False),  # torch: DiagonalBackward0_copy
    Case("diag", [A((4, 3))], {"diagonal": -2}, id="matrix_below", grad_fn=False))

# -- indexing --------------------------------------------------------------------------------------------------------
KEYS = {"int": 1, "negint": -1, "slice": slice(1, 3), "step": slice(None, None, 2), "tuple": (1, slice(0, 3)),
        "col": (slice(None), 2), "ellipsis": (Ellipsis, 1), "none": None,
        "none_mid": (slice(None), None, slice(1, None)),
        "ellipsis_only": Ellipsis, "full": slice(None), "list": [0, 2, 2], "pair": ([0, 1], [1, 3]),
        "int_list": (0, [0, 3]), "slice_list": (slice(1, None), [True, False, True, False]),
        "empty_slice": slice(2, 1), "neg_slice": slice(-2, None), "int_none": (1, None)}
for key_id, key in KEYS.items():
    add(Case("getitem", [A((3, 4))], fn=lambda L, x, k=key: x[k], id=key_id))
add(Case("getitem", [A((3, 4)), I((5,), 3)], fn=lambda L, x, i: x[i], id="tensor_index"),
    Case("getitem", [A((3, 4)), I((2, 2), 4)], fn=lambda L, x, i: x[:, i], id="tensor_2d"),
    Case("getitem", [A((3, 4)), B((3, 4))], fn=lambda L, x, m: x[m], id="mask"),
    Case("getitem", [A((3, 4)), B((3,))], fn=lambda L, x, m: x[m, 1:], id="mask_row"),
    Case("getitem", [A((3, 4))], fn=lambda L, x: x[x > 0], id="mask_expr"),
    Case("getitem", [A((2, 3, 4))], fn=lambda L, x: x[1, ..., ::3], id="3d"),
    Case("getitem", [A((2, 3, 4)), I((2,), 3, dtype=np.int32)], fn=lambda L, x, i: x[:, i, 0], id="int32"),
    Case("getitem", [A((4,))], fn=lambda L, x: x[L.tensor(2)], id="0d_tensor"),
    Case("getitem", [A((4,))], fn=lambda L, x: x[-4:100], id="clipped"))

# -- gather, scatter_add, index_select, masked_fill ------------------------------------------------------------------
add(Case("gather", [A((3, 4)), I((3, 2), 4)], fn=lambda L, x, i: L.gather(x, 1, i)),
    Case("gather", [A((3, 4)), I((2, 4), 3)], fn=lambda L, x, i: x.gather(0, i), id="dim0"),
    Case("gather", [A((3, 4)), I((2, 2), 3)], fn=lambda L, x, i: x.gather(-2, i), id="smaller"),
    Case("gather", [A((3, 4)), I((3, 6), 4)], fn=lambda L, x, i: x.gather(1, i), id="repeats"),
    Case("scatter_add", [A((3, 4)), I((3, 2), 4), A((3, 2))], fn=lambda L, x, i, s: L.scatter_add(x, 1, i, s)),
    Case("scatter_add", [A((3, 4)), I((5, 4), 3), A((5, 4))], fn=lambda L, x, i, s: x.scatter_add(0, i, s), id="dim0"),
    Case("index_select", [A((3, 4)), I((5,), 3)], fn=lambda L, x, i: L.index_select(x, 0, i)),
    Case("index_select", [A((3, 4)), I((2,), 4, dtype=np.int32)], fn=lambda L, x, i: x.index_select(-1, i), id="int32"),
    Case("index_select", [A((3, 4)), I((), 4)], fn=lambda L, x, i: x.index_select(1, i), id="0d_index"),
    Case("masked_fill", [A((3, 4)), B((3, 4))], fn=lambda L, x, m: L.masked_fill(x, m, 0.5)),
    Case("masked_fill", [A((3, 4)), B((4,))], fn=lambda L, x, m: x.masked_fill(m, -1.0), id="broadcast"),
    Case("masked_fill", [A((3, 4)), B((3, 4)), A(())], fn=lambda L, x, m, v: x.masked_fill(m, v), id="tensor_value"))

# -- linear algebra --------------------------------------------------------------------------------------------------
MATMUL = {"dot": ((3,), (3,)), "mv": ((2, 3), (3,)), "vm": ((3,), (3, 4)), "mm": ((2, 3), (3, 4)),
          "fold": ((2, 2, 3), (3, 4)), "batched": ((2, 2, 3), (2, 3, 4)), "mat_batch": ((2, 3), (5, 3, 4)),
          "broadcast": ((2, 1, 2, 3), (3, 3, 4)), "unit_batch": ((1, 2, 3), (4, 3, 2)),
          "batch_vec": ((2, 2, 3), (3,)), "vec_batch": ((3,), (2, 3, 4))}
for mid, (sa, sb) in MATMUL.items():
    add(Case("matmul", [A(sa), A(sb)], paths=TM, id=mid),
        Case("matmul", [A(sa), A(sb)], fn=lambda L, a, b: a @ b, id=mid + "-operator"))
add(Case("mm", [A((2, 3)), A((3, 4))], paths=TM),
    Case("bmm", [A((2, 2, 3)), A((2, 3, 4))], paths=TM),
    Case("outer", [A((3,)), A((4,))], paths=TM),
    Case("dot", [A((3,)), A((3,))], paths=TM),
    Case("matmul", [I((2, 3), 5), I((3, 2), 5)], id="int"))
EINSUM = {"mm": ("ij,jk->ik", [(2, 3), (3, 4)]), "sum": ("ij->j", [(2, 3)]), "inner": ("ij,ij->", [(2, 3), (2, 3)]),
          "bmm": ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), "outer": ("i,j->ij", [(3,), (4,)]),
          "diag": ("ii->i", [(3, 3)]), "trace": ("ii", [(3, 3)]),
          "ellipsis": ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
          "transpose": ("ij->ji", [(2, 3)]), "total": ("ijk->", [(2, 3, 2)]), "implicit": ("ij,jk", [(2, 3), (3, 4)]),
          "three": ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), "only_one_side": ("ij,k->i", [(2, 3), (4,)]),
          "spaces": ("i j , j k -> i k", [(2, 3), (3, 4)])}
for eid, (eq, shapes) in EINSUM.items():
    add(Case("einsum", [A(s) for s in shapes], fn=lambda L, *xs, e=eq: L.einsum(e, *xs), id=eid, grad_fn=False))
add(Case("einsum", [A((2, 3)), A((3, 4))], fn=lambda L, a, b: L.einsum("ij,jk->ik", [a, b]), id="list",
         grad_fn=False))

# -- nn.functional ---------------------------------------------------------------------------------------------------
add(Case("linear", [A((5, 3)), A((4, 3)), A((4,))], paths=F),
    Case("linear", [A((5, 3)), A((4, 3))], paths=F, id="nobias"),
    Case("linear", [A((2, 5, 3)), A((4, 3)), A((4,))], paths=F, id="3d"),
    Case("linear", [A((3,)), A((4, 3)), A((4,))], paths=F, id="1d"),
    Case("linear", [A((5, 3)), A((4, 3), grad=False), A((4,), grad=False)], paths=F, id="input_only"),
    Case("dropout", [A((3, 4))], {"p": 0.0}, paths=F, id="p0"),
    Case("dropout", [A((3, 4))], {"p": 0.5, "training": False}, paths=F, id="eval"),
    Case("dropout", [A((3, 4))], {"p": 1.0}, paths=F, id="p1"))
for red in ("mean", "sum", "none"):
    add(Case("mse_loss", [A((3, 4)), A((3, 4))], {"reduction": red}, paths=F, id=red),
        Case("l1_loss", [A((3, 4)), A((3, 4))], {"reduction": red}, paths=F, id=red),
        Case("smooth_l1_loss", [A((3, 4)), A((3, 4))], {"reduction": red, "beta": 0.7}, paths=F, id=red),
        Case("cross_entropy", [A((4, 5)), I((4,), 5)], {"reduction": red}, paths=F, id=red),
        Case("cross_entropy", [A((4, 5)), I((4,), 5)], {"reduction": red, "weight": None}, paths=F,
             fn=lambda L, x, t, r=red: L.nn.functional.cross_entropy(x, t, weight=L.tensor([1.0, 2.0, 0.5, 1.0, 3.0],
                                                                                        dtype=x.dtype), reduction=r),
             id=red + "-weight"),
        Case("cross_entropy", [A((4, 5)), V([0, -100, 3, 1])], {"reduction": red, "ignore_index": -100}, paths=F,
             id=red + "-ignore"),
        Case("cross_entropy", [A((4, 5)), V([0, 2, 3, 2])], {"reduction": red, "ignore_index": 2}, paths=F,
             id=red + "-ignore2"),
        Case("cross_entropy", [A((4, 5)), I((4,), 5)], {"reduction": red, "label_smoothing": 0.1}, paths=F,
             id=red + "-smoothing", grad_fn=False),
        Case("cross_entropy", [A((4, 5)), V([0, -100, 3, 1])], paths=F, id=red + "-smoothing-weight-ignore",
             grad_fn=False,
             fn=lambda L, x, t, r=red: L.nn.functional.cross_entropy(
                 x, t, weight=L.tensor([1.0, 2.0, 0.5, 1.0, 3.0], dtype=x.dtype), label_smoothing=0.2, reduction=r)),
        Case("cross_entropy", [A((4, 5)), A((4, 5), "prob")], {"reduction": red}, paths=F, id=red + "-probs"),
        Case("cross_entropy", [A((4, 5)), A((4, 5), "prob", grad=False)], {"reduction": red, "label_smoothing": 0.3},
             paths=F, id=red + "-probs-smoothing"),
        Case("cross_entropy", [A((2, 3, 4)), I((2, 4), 3)], {"reduction": red}, paths=F, id=red + "-3d"),
        Case("cross_entropy", [A((2, 3, 2, 2)), I((2, 2, 2), 3)], {"reduction": red}, paths=F, id=red + "-4d"),
        Case("nll_loss", [A((4, 5)), I((4,), 5)], {"reduction": red}, paths=F, id=red),
        Case("nll_loss", [A((4, 5)), V([0, -100, 3, 1])], {"reduction": red}, paths=F, id=red + "-ignore"),
        Case("nll_loss", [A((2, 3, 2, 2)), I((2, 2, 2), 3)], {"reduction": red}, paths=F, id=red + "-4d"),
        Case("binary_cross_entropy", [A((3, 4), "prob"), A((3, 4), "prob")], {"reduction": red}, paths=F, id=red),
        Case("binary_cross_entropy", [A((3, 4), "prob"), A((3, 4), "prob"), A((4,), "pos", grad=False)],
             {"reduction": red}, paths=F, id=red + "-weight", fn=lambda L, x, t, w, r=red:
             L.nn.functional.binary_cross_entropy(x, t, weight=w, reduction=r)),
        Case("binary_cross_entropy_with_logits", [A((3, 4)), A((3, 4), "prob")], {"reduction": red}, paths=F, id=red),
        Case("binary_cross_entropy_with_logits", [A((3, 4)), A((3, 4), "prob"), A((4,), "pos", grad=False),
                                                  A((4,), "pos", grad=False)], paths=F, id=red + "-weights",
             fn=lambda L, z, t, w, pw, r=red: L.nn.functional.binary_cross_entropy_with_logits(
                 z, t, weight=w, pos_weight=pw, reduction=r)))
add(Case("cross_entropy", [A((5,)), V(3)], paths=F, id="1d"),
    Case("cross_entropy", [A((5,)), V(3)], {"reduction": "none"}, paths=F, id="1d-none"),
    Case("cross_entropy", [A((4, 5), "big"), I((4,), 5)], paths=F, id="big"),
    Case("cross_entropy", [A((4, 5)), V([-100, -100, -100, -100])], {"reduction": "sum"}, paths=F, id="all_ignored"),
    Case("cross_entropy", [A((4, 5)), V([-100, -100, -100, -100])], paths=F, id="all_ignored_mean",
         fd=False),  # the loss is 0 / 0 (NaN), its gradient 0
    Case("cross_entropy", [A((4, 5)), I((4,), 5, dtype=np.uint8)], paths=F, id="byte_target"),
    Case("binary_cross_entropy_with_logits", [A((3, 4), "big"), A((3, 4), "prob")], paths=F, id="big"),
    Case("binary_cross_entropy_with_logits", [A((3, 4)), A((3, 4), "prob"), A((4,), "pos", grad=False)],
         paths=F, id="pos_weight", fn=lambda L, z, t, pw: L.nn.functional.binary_cross_entropy_with_logits(
             z, t, pos_weight=pw)),
    Case("binary_cross_entropy", [V([0.0, 1.0, 0.5]), V([0.0, 1.0, 1.0], grad=False)], paths=F, id="edges",
         fd=False, gg=False),
    Case("smooth_l1_loss", [A((3, 4)), A((3, 4))], {"beta": 0.0}, paths=F, id="beta0"),
    Case("huber_loss", [A((3, 4)), A((3, 4))], {"delta": 0.5}, paths=F),
    Case("huber_loss", [A((3, 4)), A((3, 4))], {"reduction": "none"}, paths=F, id="none"),
    Case("huber_loss", [A((3, 4)), A((4,))], {"delta": 2.0, "reduction": "sum"}, paths=F, id="broadcast_sum"),
    Case("kl_div", [A((3, 4)), A((3, 4), "prob")], {"reduction": "batchmean"}, paths=F, grad_fn=False),
    Case("kl_div", [A((3, 4)), A((3, 4))], {"reduction": "sum", "log_target": True}, paths=F, id="log_target",
         grad_fn=False),
    Case("mse_loss", [A((3, 4)), A((4,))], paths=F, id="broadcast"),
    Case("embedding", [I((2, 3), 5), A((5, 4))], paths=F),
    # padding_idx: torch defines the padding row's gradient as 0, which finite differences do not see
    Case("embedding", [V([[0, 2, 0], [1, 2, 4]]), A((5, 4))], {"padding_idx": 2}, paths=F, id="padding", fd=False),
    Case("embedding", [V([0, 4, 4]), A((5, 4))], {"padding_idx": -1}, paths=F, id="padding_neg", fd=False),
    Case("embedding", [V([[0, 2, 0], [1, 2, 4]]), A((5, 4))], paths=F, id="int32_rows", seed=3),
    Case("one_hot", [V([0, 3, 1])], paths=F),
    Case("one_hot", [V([[0, 3], [1, 1]])], {"num_classes": 5}, paths=F, id="classes"),
    Case("normalize", [A((3, 4))], paths=F),
    Case("normalize", [A((3, 4))], {"p": 1, "dim": 0}, paths=F, id="p1"))



# -- the layers' fused rows (the rest of their coverage: tests/nn/) ----------------------------------------------
def _cell(kind):
    """An LSTM/GRU cell step with fixed weights, differentiated with respect to its input and state."""
    def fn(L, x, *state):
        gates = 4 if kind == "LSTMCell" else 3
        cell = getattr(L.nn, kind)(3, 2)
        cell = cell.double() if x.dtype == L.float64 else cell
        with L.no_grad():
            for i, p in enumerate(cell.parameters()):
                p.copy_(L.tensor(np.linspace(-0.5, 0.5, p.numel()).reshape(tuple(p.shape)) * (i + 1),
                                 dtype=x.dtype))
        assert cell.weight_ih.shape[0] == gates * 2
        out = cell(x, tuple(state) if kind == "LSTMCell" else state[0])
        return out if kind == "GRUCell" else out[0] * 1.5 + out[1]
    return fn


def _lstm(output):
    """A one-layer LSTM over a sequence with fixed weights (the lstm_layer rows): its output, or c_n."""
    def fn(L, x, h0, c0):
        lstm = L.nn.LSTM(3, 2)
        lstm = lstm.double() if x.dtype == L.float64 else lstm
        with L.no_grad():
            for i, p in enumerate(lstm.parameters()):
                p.copy_(L.tensor(np.linspace(-0.5, 0.5, p.numel()).reshape(tuple(p.shape)) * (i + 1),
                                 dtype=x.dtype))
        out, (h, c) = lstm(x, (h0, c0))
        return out if output == "out" else c
    return fn


# torch's float64 CPU LSTM is composed of ops (its output StackBackward0); its float32 one is MkldnnRnnLayerBackward0
add(Case("lstm_layer", [A((3, 2, 3)), A((1, 2, 2)), A((1, 2, 2))], fn=_lstm("out"), dtypes=("float32",)),
    Case("lstm_layer", [A((3, 2, 3)), A((1, 2, 2)), A((1, 2, 2))], fn=_lstm("out"), dtypes=("float64",),
         grad_fn=False, id="float64"),
    Case("lstm_layer_c", [A((3, 2, 3)), A((1, 2, 2)), A((1, 2, 2))], fn=_lstm("c_n")))


def _gru(L, x, h0):
    """A one-layer GRU over a sequence with fixed weights (the gru_layer row): its output and h_n."""
    gru = L.nn.GRU(3, 2)
    gru = gru.double() if x.dtype == L.float64 else gru
    with L.no_grad():
        for i, p in enumerate(gru.parameters()):
            p.copy_(L.tensor(np.linspace(-0.5, 0.5, p.numel()).reshape(tuple(p.shape)) * (i + 1), dtype=x.dtype))
    out, h = gru(x, h0)
    return out * 1.5 + h


add(Case("gru_layer", [A((3, 2, 3)), A((1, 2, 2))], fn=_gru))


def _rnn(nonlinearity, batch_first=False):
    """A one-layer nn.RNN over a sequence with fixed weights (the rnn_layer row): its output and h_n (batch_first:
    the output's transpose under torch's in-place name, TransposeBackward1)."""
    def fn(L, x, h0):
        rnn = L.nn.RNN(3, 2, nonlinearity=nonlinearity, batch_first=batch_first)
        rnn = rnn.double() if x.dtype == L.float64 else rnn
        with L.no_grad():
            for i, p in enumerate(rnn.parameters()):
                p.copy_(L.tensor(np.linspace(-0.5, 0.5, p.numel()).reshape(tuple(p.shape)) * (i + 1),
                                 dtype=x.dtype))
        out, h = rnn(x, h0)
        return out if batch_first else out * 1.5 + h
    return fn


add(Case("rnn_layer", [A((3, 2, 3)), A((1, 2, 2))], fn=_rnn("tanh")),
    Case("rnn_layer", [A((3, 2, 3)), A((1, 2, 2))], fn=_rnn("relu"), id="relu"),
    Case("transpose_", [A((2, 3, 3)), A((1, 2, 2))], fn=_rnn("tanh", batch_first=True)))
add(Case("conv2d", [A((2, 3, 5, 5)), A((4, 3, 3, 3)), A((4,))], paths=F),
    Case("pad", [A((2, 3, 4))], {"pad": (1, 2)}, paths=F, id="constant_pad_nd"),
    Case("pad", [A((2, 3, 4))], {"pad": (2, 1), "mode": "reflect"}, paths=F, id="reflection_pad1d"),
    Case("pad", [A((1, 2, 3, 4))], {"pad": (1, 2, 2, 1), "mode": "reflect"}, paths=F, id="reflection_pad2d"),
    Case("pad", [A((1, 1, 3, 3, 4))], {"pad": (1, 2, 2, 1, 1, 1), "mode": "reflect"}, paths=F,
         id="reflection_pad3d"),
    Case("pad", [A((2, 3, 4))], {"pad": (2, 1), "mode": "replicate"}, paths=F, id="replication_pad1d"),
    Case("pad", [A((1, 2, 3, 4))], {"pad": (1, 2, 2, 1), "mode": "replicate"}, paths=F, id="replication_pad2d"),
    Case("pad", [A((1, 1, 3, 3, 4))], {"pad": (1, 2, 2, 1, 1, 1), "mode": "replicate"}, paths=F,
         id="replication_pad3d"),
    Case("channel_shuffle", [A((2, 6, 2, 3))], {"groups": 3}, paths=F),
    Case("prelu", [A((2, 3, 4)), A((3,))], paths=F),
    Case("hardswish", [A((3, 4), "big")], paths=F),
    Case("mish", [A((3, 4))], paths=F),
    Case("glu", [A((3, 4))], {"dim": 1}, paths=F),
    # torch's ctc_loss has no double backward (tapegrad's raises its error: tests/nn/test_ctc_loss.py)
    Case("ctc_loss", [A((6, 2, 4))], gg=False, paths=("fn",), fn=lambda L, x: L.nn.functional.ctc_loss(
        x.log_softmax(2), L.tensor([[1, 2, 2], [3, 1, 0]]), [6, 5], [3, 2], reduction="none")),
    Case("avg_pool2d", [A((1, 2, 5, 4))], {"kernel_size": 2, "stride": 1, "padding": 1}, paths=F),
    Case("adaptive_avg_pool2d", [A((1, 2, 5, 4))], {"output_size": (2, 3)}, paths=F),
    Case("conv3d", [A((2, 4, 3, 4, 3)), A((2, 2, 2, 3, 2)), A((2,))], {"padding": 1, "groups": 2}, paths=F),
    Case("max_pool2d", [A((2, 3, 6, 6))], {"kernel_size": 2}, paths=F),
    Case("layer_norm", [A((2, 3, 4))], fn=lambda L, x: L.nn.functional.layer_norm(x, (4,))),
    # gelu of 512+ float elements is its own compiled row (ops.nn._GELU_ROW_MIN)
    Case("gelu", [A((8, 64))], paths=F, id="row"),
    # 4-d, no mask: one row, torch's flash row, which has no double backward (tests/nn/test_sdpa_row.py
    # checks tapegrad's against torch's math backend)
    Case("scaled_dot_product_attention", [A((2, 2, 3, 4)), A((2, 2, 5, 4)), A((2, 2, 5, 4))], {"is_causal": True},
         paths=F, gg=False, id="row"),
    Case("batch_norm", [A((5, 3))], fn=lambda L, x: L.nn.functional.batch_norm(x, None, None, training=True)),
    Case("lstm_cell", [A((2, 3)), A((2, 2)), A((2, 2))], fn=_cell("LSTMCell"), gg=False),
    # torch's CPU GRUCell is composed of ops (AddBackward0); tapegrad's is one fused row
    Case("gru_cell", [A((2, 3)), A((2, 2))], fn=_cell("GRUCell"), gg=False),
    Case("clamp_min", [A((3, 4)), A((4,))], fn=lambda L, x, m: x.clamp_min(m), id="tensor"),
    Case("clamp_max", [A((3, 4))], fn=lambda L, x: L.clamp_max(x, 0.2), id="number"))
add(Case("unfold", [A((2, 3, 5, 5))], {"kernel_size": 2}, paths=F),
    Case("fold", [A((2, 12, 16))], {"output_size": (5, 5), "kernel_size": 2}, paths=F),
    Case("pixel_shuffle", [A((1, 8, 2, 3))], {"upscale_factor": 2}, paths=F),
    Case("pixel_unshuffle", [A((1, 2, 4, 6))], {"downscale_factor": 2}, paths=F),
    Case("interpolate", [A((1, 2, 4))], {"scale_factor": 2, "mode": "nearest"}, paths=F, id="nearest1d"),
    Case("interpolate", [A((1, 2, 3, 4))], {"scale_factor": 2, "mode": "nearest"}, paths=F, id="nearest2d"),
    Case("interpolate", [A((1, 2, 4))], {"size": 7, "mode": "nearest-exact"}, paths=F, id="exact1d"),
    Case("interpolate", [A((1, 2, 3, 4))], {"size": (5, 7), "mode": "nearest-exact"}, paths=F, id="exact2d"),
    Case("interpolate", [A((1, 2, 4))], {"size": 7, "mode": "linear"}, paths=F, id="linear"),
    Case("interpolate", [A((1, 2, 3, 4))], {"size": (5, 7), "mode": "bilinear", "align_corners": True}, paths=F,
         id="bilinear"),
    Case("interpolate", [A((1, 2, 3, 4))], {"size": (5, 7), "mode": "bicubic"}, paths=F, id="bicubic"),
    Case("interpolate", [A((1, 2, 3, 4))], {"size": (5, 2), "mode": "bicubic", "align_corners": True}, paths=F,
         id="bicubic_align"),
    Case("interpolate", [A((1, 2, 2, 3, 4))], {"size": (3, 4, 5), "mode": "trilinear"}, paths=F, id="trilinear"),
    Case("interpolate", [A((1, 2, 7, 6))], {"size": (3, 4), "mode": "bilinear", "antialias": True}, paths=F,
         id="bilinear_aa"),
    Case("interpolate", [A((1, 2, 7, 6))], {"size": (3, 4), "mode": "bicubic", "antialias": True}, paths=F,
         id="bicubic_aa"),
    Case("interpolate", [A((1, 2, 9, 7))], {"size": (4, 3), "mode": "lanczos", "antialias": True}, paths=F,
         id="lanczos_aa"),
    Case("interpolate", [A((1, 2, 2, 3, 2))], {"scale_factor": 2}, paths=F, id="nearest3d"),
    Case("interpolate", [A((1, 2, 2, 3, 2))], {"size": (3, 4, 3), "mode": "nearest-exact"}, paths=F, id="exact3d"),
    Case("interpolate", [A((1, 2, 4, 3, 5))], {"size": (2, 2, 3), "mode": "area"}, paths=F, id="area3d"),
    Case("adaptive_max_pool2d", [A((1, 2, 5, 5))], {"output_size": 2}, paths=F),
    # torch's embedding_bag has no double backward (tapegrad's: tests/autograd/test_higher_order.py)
    Case("embedding_bag", [V([0, 2, 4, 1, 3]), A((5, 3)), V([0, 2])], paths=F, gg=False),
    Case("embedding_bag_weighted", [A((5, 3)), A((5,))], gg=False, paths=("fn",), fn=lambda L, w, p: (
        L.nn.functional.embedding_bag(L.tensor([0, 2, 4, 1, 3]), w, L.tensor([0, 2]), mode="sum",
                                      per_sample_weights=p))),
    Case("max_unpool2d", [A((1, 2, 4, 4))], paths=("fn",), id="of_max_pool",
         fn=lambda L, x: L.nn.functional.max_unpool2d(*L.nn.functional.max_pool2d(x, 2, return_indices=True), 2)))


def _written_through_views(L, x, w):
    y = x * 1.5
    y[1:, ::2].copy_(w * 3.0)   # (CopySlices rows: the in-place writes through views)
    y[:2, 1].mul_(w[0])
    return y


def _gather_gradient(L, x):
    """A gather's gradient with create_graph: a scatter_flat row (duplicate indices), whose own backward gathers."""
    return L.autograd.grad((x[L.tensor([0, 0, 3, 1, 3])] ** 3).sum(), x, create_graph=True)[0]


add(Case("group_norm", [A((3, 4, 5, 2)), A((4,)), A((4,))], fn=lambda L, x, w, b: L.nn.functional.group_norm(x, 2, w, b)),
    Case("group_norm", [A((2, 6))], fn=lambda L, x: L.nn.functional.group_norm(x, 3, eps=1e-3), id="no_affine_2d"))
add(Case("pairwise_distance", [A((3, 4)), A((3, 4))], paths=F),   # (its norm: NormBackward1, as ATen's)
    Case("pairwise_distance", [A((3, 4)), A((4,))], {"p": 1.0, "keepdim": True}, paths=F, id="p1_broadcast"))


# the engine's own Python rows (in-place writes, a gather's recorded adjoint): their plain backward too
add(Case("copy_slices", [A((3, 4)), A((2, 2))], fn=_written_through_views, gg=False),
    # (no finite differences: the function takes a gradient; torch names this row by the gather it undoes,
    # IndexPutImplBackward0 here, where scatter_flat serves every gather)
    Case("scatter_flat", [A((5,))], fn=_gather_gradient, gg=False, fd=False, grad_fn=False))

# the op areas' rows, one module each (tests/ops/cases_*.py, each a CASES list of its own)
for _path in sorted(pathlib.Path(__file__).parent.glob("cases_*.py")):
    add(*importlib.import_module(_path.stem).CASES)


@pytest.mark.parametrize("case,path,dtype", params(CASES))
def test_against_torch(case, path, dtype):
    check_case(case, path, dtype)


# Piecewise-constant ops (floor, sign, ...) have no finite-difference check: torch defines their gradient as
# 0, and test_against_torch compares that zero with torch's.
FD_CASES = [c for c in CASES if c.fd and "float64" in c.dtypes and c.name not in ZERO_GRAD]


@pytest.mark.parametrize("case,path,dtype", [p for p in params(FD_CASES) if p.values[2] == "float64"
                                             and p.values[1] in ("top", "fn", "F")])
def test_finite_differences(case, path, dtype):
    check_finite_differences(case, path)


GG_CASES = [c for c in CASES if c.gg and "float64" in c.dtypes]


@pytest.mark.parametrize("case,path,dtype", [p for p in params(GG_CASES) if p.values[2] == "float64"
                                             and p.values[1] in ("top", "fn", "F")])
def test_second_order(case, path, dtype):
    check_second_order(case, path)


def _first_path(cases):
    return [p for c in cases for p in params([c]) if p.values[2] == "float64"][:1]


@pytest.mark.parametrize("case,path,dtype", [p for c in GG_CASES for p in _first_path([c])])
def test_what_a_rule_reads_is_kept(case, path, dtype, monkeypatch):
    """Each op takes clones of the leaves, and every value no rule reads is released (the `saves` the
    registry derives from the op's rules): gradients, plain and second order, still equal torch's."""
    from tapegrad import tape
    monkeypatch.setattr(tape, "RELEASE_BYTES", 0)
    check_case(case, path, dtype, intermediate=True)
    check_second_order(case, path, intermediate=True)


def test_every_elementwise_op_is_covered():
    """Each elementwise op of the registry appears in the table (by the name it is called by); create_graph's
    derived ops are recorded by the cases' gradients (tests/ops/test_registry.py::test_every_op_has_a_test_row)."""
    from tapegrad import registry
    from tapegrad.create_graph import DERIVED_NAMES
    called = {c.name for c in CASES} | {"log_sigmoid", "gelu_tanh", "round_decimals", "copy", "_div_scalar",
                                          "_mul_scalar"}
    missing = [op.name for op in registry.OPS if op.kind in (registry.K_UNARY, registry.K_BINARY)
               and not op.name.endswith(("_ts", "_st")) and op.name not in called | DERIVED_NAMES]
    assert not missing, f"elementwise ops without test cases: {missing}"
