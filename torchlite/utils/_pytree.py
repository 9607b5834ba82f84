"""Nested containers as trees of leaves (PyTorch's torch.utils._pytree).

tree_flatten turns a structure of tuples, lists, dicts, OrderedDicts, defaultdicts and
namedtuples (and any type registered with register_pytree_node) into its leaves in order and
a TreeSpec that rebuilds it: tree_unflatten(leaves, spec).  tree_map applies a function to
every leaf (of several trees of one structure at once).  None is a leaf, as in PyTorch 2.x."""
from collections import OrderedDict, defaultdict, namedtuple

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves",
           "tree_structure", "tree_map", "tree_map_only", "tree_all", "tree_any",
           "register_pytree_node", "treespec_pprint"]

NodeDef = namedtuple("NodeDef", ["type", "flatten_fn", "unflatten_fn"])
SUPPORTED_NODES = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None):
    """Make `cls` a node: flatten_fn(obj) -> (children, context); unflatten_fn(children,
    context) -> obj."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


register_pytree_node(tuple, lambda t: (list(t), None), lambda c, _: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda c, _: list(c))
register_pytree_node(dict, lambda d: (list(d.values()), list(d.keys())),
                     lambda c, keys: dict(zip(keys, c)))
register_pytree_node(OrderedDict, lambda d: (list(d.values()), list(d.keys())),
                     lambda c, keys: OrderedDict(zip(keys, c)))
register_pytree_node(defaultdict,
                     lambda d: (list(d.values()), (d.default_factory, list(d.keys()))),
                     lambda c, ctx: defaultdict(ctx[0], zip(ctx[1], c)))


def _node_type(x):
    if _is_namedtuple(x):
        return "namedtuple"
    t = type(x)
    return t if t in SUPPORTED_NODES else None


class TreeSpec:
    """How a tree is built: its node type, the node's context (dict keys, ...) and its
    children's specs.  A leaf's spec is LeafSpec()."""

    def __init__(self, type, context, children_specs):
        self.type, self.context, self.children_specs = type, context, list(children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self):
        return False

    def __eq__(self, other):
        return isinstance(other, TreeSpec) and not other.is_leaf() and \
            (self.type, self.context, self.children_specs) == \
            (other.type, other.context, other.children_specs)

    def __repr__(self):
        name = self.type if isinstance(self.type, str) else self.type.__name__
        inner = ", ".join(repr(c) for c in self.children_specs)
        return f"TreeSpec({name}, {self.context!r}, [{inner}])"

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)


class LeafSpec(TreeSpec):
    def __init__(self):
        self.type, self.context, self.children_specs = None, None, []
        self.num_leaves, self.num_children = 1, 0

    def is_leaf(self):
        return True

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __repr__(self):
        return "*"


def _flatten(tree, leaves, is_leaf):
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return LeafSpec()
    kind = _node_type(tree)
    if kind is None:
        leaves.append(tree)
        return LeafSpec()
    if kind == "namedtuple":
        children, context = list(tree), type(tree)
    else:
        children, context = SUPPORTED_NODES[kind].flatten_fn(tree)
    return TreeSpec(kind, context, [_flatten(c, leaves, is_leaf) for c in children])


def tree_flatten(tree, is_leaf=None):
    """(the leaves in order, the TreeSpec that rebuilds tree from them)."""
    leaves = []
    spec = _flatten(tree, leaves, is_leaf)
    return leaves, spec


def _build(it, spec):
    if spec.is_leaf():
        return next(it)
    children = [_build(it, c) for c in spec.children_specs]
    if spec.type == "namedtuple":
        return spec.context(*children)
    return SUPPORTED_NODES[spec.type].unflatten_fn(children, spec.context)


def tree_unflatten(leaves, treespec):
    """The tree of treespec with these leaves (as many as the spec has)."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance "
                        f"of TreeSpec but got item of type {type(treespec)}.")
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the "
                         f"spec refers to a pytree that holds {treespec.num_leaves} items "
                         f"({treespec}).")
    return _build(iter(leaves), treespec)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """The tree with func applied to each leaf (func(leaf, *the leaves of rests at the same
    place), the rests having tree's structure)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = []
    for r in rests:
        r_leaves, r_spec = tree_flatten(r, is_leaf)
        if r_spec != spec:
            raise ValueError(f"tree_map: the trees have different structures: {spec} and "
                             f"{r_spec}")
        others.append(r_leaves)
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """tree_map, func applied only to leaves of the given type(s)."""
    return tree_map(lambda x: func(x) if isinstance(x, type_or_types) else x, tree,
                    is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_any(pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_leaves(tree, is_leaf))


def treespec_pprint(treespec):
    return repr(treespec)
