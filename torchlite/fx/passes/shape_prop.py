"""ShapeProp: run a GraphModule on example inputs and record, in each node's
meta['tensor_meta'], the shape, dtype, requires_grad and strides of the tensor it produced
(PyTorch's torch.fx.passes.shape_prop)."""
from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING

from ..interpreter import Interpreter
from ..node import map_aggregate

if TYPE_CHECKING:
    from typing import Any

__all__ = ["ShapeProp", "TensorMetadata"]

TensorMetadata = namedtuple("TensorMetadata", ["shape", "dtype", "requires_grad", "stride",
                                               "memory_format", "is_quantized", "qparams"])


def _extract(t):
    import torchlite
    fmt = None
    if t.is_contiguous():
        fmt = getattr(torchlite, "contiguous_format", "contiguous_format")
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, t.stride(), fmt, False, {})


class ShapeProp(Interpreter):
    """ShapeProp(gm).propagate(*args) runs gm and fills node.meta['tensor_meta'] (a
    TensorMetadata, or a structure of them for nodes returning several tensors) and
    node.meta['type']."""

    def run_node(self, n: Any) -> Any:
        import torchlite
        result = super().run_node(n)
        found = []

        def meta(x):
            if isinstance(x, torchlite.Tensor):
                found.append(True)
                return _extract(x)
            return x
        m = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = m
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args) -> Any:
        return super().run(*args)
