"""torch.nn.utils.stateless: the older home of functional_call, deprecated by PyTorch since
2.0 for torch.func.functional_call.  The logic lives in torchlite.func; this module only keeps
PyTorch's older spelling (args=None, a FutureWarning) working."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from ..._tensor import Tensor
    from ..modules.module import Module

__all__ = ["functional_call"]


def functional_call(module: Module, parameters_and_buffers: dict[str, Tensor],
                    args: Any | tuple[Any, ...] | None = None, kwargs: dict[str, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """module(*args, **kwargs) with its parameters and buffers replaced, for this call only,
    by the tensors of parameters_and_buffers (keyed by state_dict name); see
    torchlite.func.functional_call."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    from ..parallel.data_parallel import DataParallel
    from ...func import functional_call as _functional_call
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
