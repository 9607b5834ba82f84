"""FakeData: random images for trying a pipeline without a dataset (torchvision's)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import Generator, randint, rand
from .vision import VisionDataset

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["FakeData"]


class FakeData(VisionDataset):
    """`size` random images of image_size (C, H, W), each with a random class below
    num_classes; item i is the same every time (drawn from a generator seeded with
    i + random_offset).  Items are (PIL image, class) before the transforms."""

    def __init__(self, size: int = 1000, image_size: tuple[int, int, int] = (3, 224, 224), num_classes: int = 10,
                 transform: Callable[..., Any] | None = None, target_transform: Callable[..., Any] | None = None,
                 random_offset: int = 0) -> None:
        super().__init__(None, transform=transform, target_transform=target_transform)
        if size < 0 or num_classes < 1 or len(image_size) != 3 or min(image_size) < 1:
            raise ValueError(f"FakeData: bad size {size}, image_size {image_size} or "
                             f"num_classes {num_classes}")
        self.size, self.num_classes = size, num_classes
        self.image_size, self.random_offset = tuple(image_size), random_offset

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        if index >= len(self) or index < -len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        index %= len(self)
        g = Generator().manual_seed(index + self.random_offset)
        img = rand(*self.image_size, generator=g)
        target = int(randint(0, self.num_classes, (1,), generator=g))
        from .._pil import pil_image
        arr = (img * 255).round().clamp(0, 255).byte().permute(1, 2, 0).numpy()
        img = pil_image().fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr)
        return self._transformed(img, target)

    def __len__(self) -> int:
        return self.size
