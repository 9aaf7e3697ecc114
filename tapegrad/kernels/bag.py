"""embedding_bag's forward and adjoints: each bag's (weighted) sum or maximum of weight rows, in one pass over
the entries, and the scatter back. In its own module so that only embedding_bag compiles it."""
from numba import njit

from .memory import JIT


@njit(**JIT)
def bag_sum(weight, index, bag, scale, out):
    """out (B, D), zeroed: out[bag[e]] += scale[e] * weight[index[e]] for every entry e."""
    D = weight.shape[1]
    for e in range(index.shape[0]):
        b, i, s = bag[e], index[e], scale[e]
        for d in range(D):
            out[b, d] += s * weight[i, d]


@njit(**JIT)
def bag_sum_adjoint(g, index, bag, scale, gw):
    """gw (V, D), zeroed: gw[index[e]] += scale[e] * g[bag[e]]."""
    D = g.shape[1]
    for e in range(index.shape[0]):
        b, i, s = bag[e], index[e], scale[e]
        for d in range(D):
            gw[i, d] += s * g[b, d]


@njit(**JIT)
def bag_scale_adjoint(g, weight, index, bag, gs):
    """gs (E,): gs[e] = <g[bag[e]], weight[index[e]]>, the gradient of a per-sample weight."""
    D = g.shape[1]
    for e in range(index.shape[0]):
        b, i = bag[e], index[e]
        acc = g.dtype.type(0)
        for d in range(D):
            acc += g[b, d] * weight[i, d]
        gs[e] = acc


@njit(**JIT)
def bag_max(weight, index, starts, out, argmax):
    """out, argmax (B, D): each bag's maximum per column and the weight row it came from (torch's rule: the
    first maximum; an empty bag gives 0 and argmax -1). Bag b holds entries starts[b]:starts[b + 1]."""
    B, D = out.shape
    for b in range(B):
        for d in range(D):
            out[b, d] = 0
            argmax[b, d] = -1
        for e in range(starts[b], starts[b + 1]):
            i = index[e]
            for d in range(D):
                v = weight[i, d]
                if e == starts[b] or v > out[b, d]:
                    out[b, d] = v
                    argmax[b, d] = i


@njit(**JIT)
def bag_max_adjoint(g, argmax, gw):
    """gw (V, D), zeroed: each bag's gradient to the row its maximum came from."""
    B, D = g.shape
    for b in range(B):
        for d in range(D):
            i = argmax[b, d]
            if i >= 0:
                gw[i, d] += g[b, d]
