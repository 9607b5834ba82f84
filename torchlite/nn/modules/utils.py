"""torch.nn.modules.utils: the tuple helpers layers use for their size arguments
(`_single`, `_pair`, `_triple`, `_quadruple`, `_ntuple`), which custom layers written for
PyTorch import by these names."""
from __future__ import annotations

import collections.abc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = []      # private names, as in PyTorch


def ntuple(x: Any, n: int) -> tuple[Any, ...]:
    """x as an n-tuple: an iterable as a tuple, anything else repeated n times."""
    if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
        return tuple(x)
    return (x,) * n


def _ntuple(n, name="parse"):
    """A function turning x into an n-tuple as ntuple does (PyTorch's factory)."""
    def parse(x):
        return ntuple(x, n)
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")
