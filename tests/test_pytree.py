"""torchlite.utils._pytree against PyTorch's torch.utils._pytree where installed, and by
round trips."""
from collections import OrderedDict, defaultdict, namedtuple

import pytest

import torchlite as tl
from torchlite.utils import _pytree as pt

Point = namedtuple("Point", "x y")
TREES = [
    1, None, (), [], {}, (1, 2), [1, (2, 3)], {"b": 1, "a": [2, 3]},
    OrderedDict([("z", 1), ("y", (2, None))]), defaultdict(list, {"k": [1, 2]}),
    Point(1, [2, 3]), [tl.ones(2), {"w": tl.zeros(1)}, "leaf", 3.5],
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_flatten_unflatten_round_trip(tree):
    leaves, spec = pt.tree_flatten(tree)
    back = pt.tree_unflatten(leaves, spec)
    assert type(back) is type(tree) and repr(back) == repr(tree)
    assert spec.num_leaves == len(leaves) == len(pt.tree_leaves(tree))
    assert pt.tree_structure(tree) == spec


def test_map_and_predicates():
    tree = {"a": [1, 2], "b": (3, Point(4, 5))}
    assert pt.tree_map(lambda x: x * 10, tree) == {"a": [10, 20], "b": (30, Point(40, 50))}
    assert pt.tree_map(lambda x, y: x + y, tree, tree)["b"][1] == Point(8, 10)
    with pytest.raises(ValueError, match="different structures"):
        pt.tree_map(lambda x, y: x, tree, [1, 2])
    assert pt.tree_map_only(str, str.upper, ["a", 1]) == ["A", 1]
    assert pt.tree_all(lambda x: x > 0, tree) and not pt.tree_any(lambda x: x > 5, tree)
    assert pt.tree_leaves([1, [2]], is_leaf=lambda x: isinstance(x, list) and len(x) == 1) == [1, [2]]
    with pytest.raises(ValueError, match="holds 2 items"):
        pt.tree_unflatten([1], pt.tree_structure((1, 2)))


def test_registered_types():
    class Box:
        def __init__(self, items, label):
            self.items, self.label = items, label
    pt.register_pytree_node(Box, lambda b: (b.items, b.label), lambda c, label: Box(c, label))
    leaves, spec = pt.tree_flatten([Box([1, 2], "x"), 3])
    assert leaves == [1, 2, 3]
    back = pt.tree_unflatten([4, 5, 6], spec)
    assert back[0].items == [4, 5] and back[0].label == "x" and back[1] == 6
    with pytest.raises(ValueError, match="already registered"):
        pt.register_pytree_node(Box, None, None)


def test_same_leaves_as_torch():
    torch_pytree = pytest.importorskip("torch.utils._pytree")
    for tree in TREES[:11]:
        assert pt.tree_leaves(tree) == torch_pytree.tree_leaves(tree)
