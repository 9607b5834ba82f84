"""torch._dynamo.exc's errors, as torchlite.compile raises them."""
from __future__ import annotations

__all__ = ["Unsupported", "TorchDynamoException", "BackendCompilerFailed"]


class TorchDynamoException(RuntimeError):
    pass


class Unsupported(TorchDynamoException):
    """A graph break under fullgraph=True: the message names the construct and the line."""


class BackendCompilerFailed(TorchDynamoException):
    pass
