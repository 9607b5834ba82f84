"""The exceptions of torchlite.onnx (PyTorch's torch.onnx.errors)."""
from __future__ import annotations

__all__ = ["OnnxExporterError", "UnsupportedOperatorError"]


class OnnxExporterError(RuntimeError):
    """Export failed."""


class UnsupportedOperatorError(OnnxExporterError):
    """A traced op has no ONNX form here; the message names it and its module."""
