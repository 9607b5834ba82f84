"""torchlite.onnx: export a model to an ONNX file (PyTorch's torch.onnx.export).

    torchlite.onnx.export(model, (x,), "model.onnx", input_names=["input"],
                          output_names=["logits"], dynamic_axes={"input": {0: "batch"},
                                                                 "logits": {0: "batch"}})

The model is traced on the example arguments (torchlite.jit.trace: the example's branches and
loop counts are fixed, as in PyTorch), and each node becomes ONNX operators built with the
`onnx` package's helpers (torchlite/onnx/_symbolic.py lists what maps to what), checked with
onnx.checker before the file is written.  Opsets 17 to 21 (default 17).  An op with no ONNX
form raises UnsupportedOperatorError naming it and the module it came from.

Importing torchlite.onnx loads nothing; `export` needs `pip install 'torchlite-dl[onnx]'`."""
from __future__ import annotations

import enum
import threading
from typing import TYPE_CHECKING

from . import errors
from .errors import UnsupportedOperatorError
from ._export import OperatorExportTypes, SUPPORTED_OPSETS, TrainingMode

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from .._tensor import Tensor
    from ..nn.modules.module import Module

__all__ = ["export", "is_in_onnx_export", "OperatorExportTypes", "TrainingMode", "errors",
           "UnsupportedOperatorError", "SUPPORTED_OPSETS"]

_state = threading.local()


def is_in_onnx_export() -> bool:
    """True while torchlite.onnx.export is tracing a model."""
    return getattr(_state, "exporting", False)


def export(model: Module | Callable[..., Any], args: Tensor | tuple[Any, ...] = (), f: Any = None,
           input_names: Sequence[str] | None = None, output_names: Sequence[str] | None = None,
           dynamic_axes: Mapping[str, Mapping[int, str] | Sequence[int]] | None = None,
           opset_version: int | None = None, do_constant_folding: bool = True, export_params: bool = True,
           verbose: bool = False, kwargs: dict[str, Any] | None = None, training: TrainingMode = TrainingMode.EVAL,
           operator_export_type: OperatorExportTypes | None = None, keep_initializers_as_inputs: bool = False,
           **unused: Any) -> Any:
    """Write `model` run on `args` (a tensor or a tuple; `kwargs` a dict) as an ONNX model to
    f (a path or a binary file).  dynamic_axes: {input or output name: {dim: name} or [dims]}
    makes those dims symbolic (one file for every batch size).  Returns the onnx.ModelProto
    it wrote.  Accepted for PyTorch's signature and not used: do_constant_folding (the
    graph is written as traced; constants stay initializers), operator_export_type,
    keep_initializers_as_inputs (initializers are never graph inputs) and any other keyword
    of PyTorch's dynamo exporter (dynamo=, external_data=, ...)."""
    from ._export import export_model
    _state.exporting = True
    try:
        return export_model(model, args, f, input_names=input_names, output_names=output_names,
                            dynamic_axes=dynamic_axes, opset_version=opset_version,
                            export_params=export_params, verbose=verbose, kwargs=kwargs,
                            training=training)
    finally:
        _state.exporting = False
