"""SVHN (Street View House Numbers) from its MATLAB files (torchvision's layout:
root/train_32x32.mat, test_32x32.mat, extra_32x32.mat), read with SciPy's loadmat."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from .utils import check_integrity, download_url
from .vision import VisionDataset

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["SVHN"]


class SVHN(VisionDataset):
    """SVHN digits, 32x32 color; split 'train', 'test' or 'extra'.  Label 10 of the files
    (the digit 0) is 0 here, as in torchvision.  Items are (PIL image, digit)."""

    split_list = {
        "train": ["http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat",
                  "e26dedcc434d2e4c54c9b2d4a06d8373"],
        "test": ["http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat",
                 "eb5a983be6a315427106f1b164d9cef3"],
        "extra": ["http://ufldl.stanford.edu/housenumbers/extra_32x32.mat", "extra_32x32.mat",
                  "a93ce644f1a588dc4d68dda5feec44a7"]}

    def __init__(self, root: str | os.PathLike[str], split: str = "train", transform: Callable[..., Any] | None = None,
                 target_transform: Callable[..., Any] | None = None, download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        if split not in self.split_list:
            raise ValueError(f"Unknown value '{split}' for argument split. Valid values are "
                             f"{{'train', 'test', 'extra'}}.")
        self.split = split
        self.url, self.filename, self.file_md5 = self.split_list[split]
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(f"Dataset not found or corrupted. You can use download=True to "
                               f"download it (or put {self.filename} in {self.root})")
        try:
            from scipy.io import loadmat
        except ImportError:
            raise ImportError("SVHN reads MATLAB files with SciPy: pip install scipy") from None
        mat = loadmat(os.path.join(self.root, self.filename))
        self.data = np.ascontiguousarray(np.transpose(mat["X"], (3, 2, 0, 1)))   # N, C, H, W
        labels = mat["y"].astype(np.int64).reshape(-1)
        labels[labels == 10] = 0
        self.labels = labels

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from .._pil import pil_image
        img = pil_image().fromarray(np.transpose(self.data[index], (1, 2, 0)))
        target = int(self.labels[index])
        return self._transformed(img, target)

    def __len__(self) -> int:
        return len(self.data)

    def _check_integrity(self):
        return check_integrity(os.path.join(self.root, self.filename), self.file_md5)

    def download(self) -> None:
        download_url(self.url, self.root, self.filename, self.file_md5)

    def extra_repr(self) -> str:
        return f"Split: {self.split}"
