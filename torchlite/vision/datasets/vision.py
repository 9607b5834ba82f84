"""VisionDataset: what every dataset of torchlite.vision.datasets shares (torchvision's)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ...utils.data import Dataset

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["VisionDataset", "StandardTransform"]


class StandardTransform:
    """transform on the input and target_transform on the target, as one callable."""

    def __init__(self, transform: Callable[..., Any] | None = None,
                 target_transform: Callable[..., Any] | None = None) -> None:
        self.transform, self.target_transform = transform, target_transform

    def __call__(self, input: Any, target: Any) -> tuple[Any, Any]:
        if self.transform is not None:
            input = self.transform(input)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return input, target

    def __repr__(self) -> str:
        lines = [type(self).__name__]
        for name, t in (("Transform", self.transform), ("Target transform", self.target_transform)):
            if t is not None:
                lines.append(f"{name}: {t!r}")
        return "\n".join(lines)


class VisionDataset(Dataset):
    """A dataset kept under `root`: `transform` is applied to each image, `target_transform` to
    each target, or `transforms` (one callable of both; not together with the other two)."""

    _repr_indent = 4

    def __init__(self, root: str | os.PathLike[str] | None = None, transforms: Callable[..., Any] | None = None,
                 transform: Callable[..., Any] | None = None,
                 target_transform: Callable[..., Any] | None = None) -> None:
        self.root = os.path.expanduser(os.fspath(root)) if root is not None else None
        has_separate = transform is not None or target_transform is not None
        if transforms is not None and has_separate:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform, self.target_transform = transform, target_transform
        self.transforms = StandardTransform(transform, target_transform) if has_separate else transforms

    def _transformed(self, sample, target):
        """(sample, target) through `transforms` (or transform / target_transform)."""
        if self.transforms is not None:
            return self.transforms(sample, target)
        return sample, target

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        body = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if self.transforms is not None:
            body += repr(self.transforms).splitlines()
        pad = " " * self._repr_indent
        return "\n".join([f"Dataset {type(self).__name__}"] + [pad + line for line in body])
