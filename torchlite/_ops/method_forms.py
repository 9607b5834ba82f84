"""The top-level spellings PyTorch also gives some Tensor methods: torch.detach(x) is
x.detach(), torch.arccos_(x) is x.arccos_(), torch.fill_(x, v) is x.fill_(v), ... .  Each is
the method itself, called on its first argument (one home: the method)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._kit import tensor_arg

if TYPE_CHECKING:
    from typing import Any

    from .._tensor import Tensor

_NAMES = ("detach", "detach_", "fill_", "index_put_", "resize_as_", "negative_", "fix_",
          "logit_", "xlogy_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
          "is_complex", "is_signed", "is_inference", "get_device")


def _method_form(name):
    def form(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        tensor_arg(input, name, "input", pos=1)
        return getattr(input, name)(*args, **kwargs)
    form.__name__ = form.__qualname__ = name
    form.__doc__ = f"input.{name}(...) (torch.{name})."
    return form


for _name in _NAMES:
    globals()[_name] = _method_form(_name)

__all__ = list(_NAMES)
