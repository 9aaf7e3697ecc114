"""The pytrees of torch.utils._pytree that torch.func's transforms take and return: tuples, lists, dicts,
OrderedDicts and namedtuples nest; anything else (a Tensor, a number, None) is a leaf. A TreeSpec prints
as torch's does, since torch's error messages show it."""
import collections

__all__ = ["TreeSpec", "tree_flatten", "tree_unflatten", "tree_map", "broadcast_to_and_flatten",
           "treespec_pprint"]


class _NamedTuple:
    """The node type of a namedtuple (torch's spec names it `namedtuple`, its context is the class)."""
    __name__ = "namedtuple"


_NAMEDTUPLE = _NamedTuple()


def _node_type(tree):
    cls = type(tree)
    if cls is tuple or cls is list or cls is dict or cls is collections.OrderedDict:
        return cls
    if isinstance(tree, tuple) and hasattr(cls, "_fields"):
        return _NAMEDTUPLE
    return None


def _children(tree, kind):
    """(children, context) of a node."""
    if kind is tuple or kind is list:
        return list(tree), None
    if kind is _NAMEDTUPLE:
        return list(tree), type(tree)
    keys = list(tree.keys())
    return [tree[k] for k in keys], keys


def _build(kind, context, children):
    if kind is tuple:
        return tuple(children)
    if kind is list:
        return list(children)
    if kind is _NAMEDTUPLE:
        return context(*children)
    return kind(zip(context, children))


class TreeSpec:
    """The structure of a pytree: a node's type, its context (a dict's keys, a namedtuple's class) and
    its children's specs; a leaf's spec prints `*`."""
    __slots__ = ("type", "_context", "_children", "num_leaves")

    def __init__(self, kind, context, children):
        self.type, self._context, self._children = kind, context, children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)

    @property
    def num_children(self):
        return len(self._children)

    def is_leaf(self):
        return self.type is None

    def __eq__(self, other):
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (self.type is other.type and self._context == other._context
                and self._children == other._children)

    def __hash__(self):
        return hash((id(self.type), len(self._children)))

    def __repr__(self, indent=0):
        if self.type is None:
            return "*"
        text = f"TreeSpec({self.type.__name__}, {self._context}, ["
        if self._children:
            indent += 2
            text += self._children[0].__repr__(indent)
            text += "," if len(self._children) > 1 else ""
            text += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self._children[1:])
        return text + "])"


_LEAF = TreeSpec(None, None, [])


def tree_flatten(tree):
    """(leaves, spec)."""
    leaves = []

    def visit(node):
        kind = _node_type(node)
        if kind is None:
            leaves.append(node)
            return _LEAF
        children, context = _children(node, kind)
        return TreeSpec(kind, context, [visit(c) for c in children])
    return leaves, visit(tree)


def tree_unflatten(leaves, spec):
    it = iter(leaves)

    def build(s):
        if s.type is None:
            return next(it)
        return _build(s.type, s._context, [build(c) for c in s._children])
    return build(spec)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_to_and_flatten(prefix, spec):
    """The leaves of `prefix` repeated over the leaves of the tree of `spec` it is a prefix of (torch's
    in_dims / out_dims), or None where `prefix` is not a prefix of that structure."""
    out = []

    def visit(p, s):
        kind = _node_type(p)
        if kind is None:
            out.extend([p] * s.num_leaves)
            return True
        if kind is not s.type:
            return False
        children, context = _children(p, kind)
        if len(children) != len(s._children):
            return False
        if kind is _NAMEDTUPLE and context is not s._context:
            return False
        if kind is dict or kind is collections.OrderedDict:
            if set(context) != set(s._context):
                return False
            by_key = dict(zip(context, children))
            children = [by_key[k] for k in s._context]
        return all(visit(c, cs) for c, cs in zip(children, s._children))
    return out if visit(prefix, spec) else None


class _Asterisk(str):
    def __repr__(self):
        return "*"


def treespec_pprint(spec):
    """The structure as a tree of `*` (torch's treespec_pprint): `(*, *)`, `{'a': *}`."""
    return repr(tree_unflatten([_Asterisk("*")] * spec.num_leaves, spec))
