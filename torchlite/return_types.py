"""Named tuples returned by ops with several results (max/min with a dim, sort, topk, ...),
as torch.return_types: fields by name or position, and a repr like PyTorch's."""
from __future__ import annotations

import collections

__all__ = []


def _make(name: str, fields: tuple[str, ...] = ("values", "indices")) -> type:
    cls = collections.namedtuple(name, fields)
    cls.__module__ = __name__          # pickle finds it here, by its plain name
    cls.__qualname__ = name

    def __repr__(self) -> str:
        body = ",\n".join(f"{f}={getattr(self, f)!r}" for f in fields)
        return f"torchlite.return_types.{name}(\n{body})"

    cls.__repr__ = __repr__
    globals()[name] = cls
    __all__.append(name)
    return cls


for _name in ("max", "min", "median", "nanmedian", "mode", "cummax", "cummin", "sort", "topk",
              "kthvalue"):
    _make(_name)
_make("aminmax", ("min", "max"))
_make("geqrf", ("a", "tau"))
