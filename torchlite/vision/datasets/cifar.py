"""CIFAR-10 and CIFAR-100 from the Python version of their files (torchvision's folders:
root/cifar-10-batches-py/data_batch_1 ... test_batch, batches.meta; root/cifar-100-python/
train, test, meta).  The batches are pickles; they are read with an unpickler that builds
only NumPy arrays, lists, dicts, strings and numbers, so a tampered file cannot run code."""
from __future__ import annotations

import os
import pickle
from typing import TYPE_CHECKING

import numpy as np

from .utils import check_integrity, download_and_extract_archive
from .vision import VisionDataset

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["CIFAR10", "CIFAR100"]

# the globals a CIFAR batch pickle (NumPy arrays pickled by Python 2) may name
_ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
            ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
            ("numpy._core.multiarray", "scalar"),
            ("_codecs", "encode")}          # how Python 3's protocol 2 writes bytes (a pure function)


class _ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a CIFAR batch file may not name {module}.{name}: refused "
                                     f"(the file is not a CIFAR batch, or was tampered with)")


def load_batch(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The dict in a CIFAR batch file, its keys as str."""
    with open(path, "rb") as f:
        try:
            entry = _ArrayUnpickler(f, encoding="latin1").load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as e:
            raise RuntimeError(f"{path} is not a readable CIFAR batch: {e}") from None
    if not isinstance(entry, dict):
        raise RuntimeError(f"{path} is not a CIFAR batch (it holds a {type(entry).__name__})")
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in entry.items()}


def _checked_batch(entry, path):
    """(data, labels) of a batch: data a uint8 N x 3072 array, labels N integers; anything
    else is a RuntimeError naming the file (never a silent cast)."""
    data = entry.get("data")
    labels = entry.get("labels", entry.get("fine_labels"))
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 \
            or data.shape[1] != 3072:
        what = f"{data.dtype} {data.shape}" if isinstance(data, np.ndarray) else type(data).__name__
        raise RuntimeError(f"{path}: 'data' should be a uint8 N x 3072 array, got {what}")
    if labels is None or len(labels) != len(data):
        raise RuntimeError(f"{path}: {len(data)} images but "
                           f"{'no' if labels is None else len(labels)} labels")
    try:
        return data, [int(t) for t in labels]
    except (TypeError, ValueError):
        raise RuntimeError(f"{path}: the labels are not integers") from None


class CIFAR10(VisionDataset):
    """CIFAR-10: 50,000 training and 10,000 test 32x32 color images in ten classes.  Items are
    (PIL image, class index) before the transforms; `data` is the N x 32 x 32 x 3 uint8 array,
    `targets` the list of labels, `classes` the names from the meta file."""

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [["data_batch_1", "c99cafc152244af753f735de768cd75f"],
                  ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
                  ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
                  ["data_batch_4", "634d18415352ddfa80567beed471001a"],
                  ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"]]
    test_list = [["test_batch", "40351d587109b95175f43aff81a1287e"]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": "5ff9c542aee3614f3951f8cda6e48888"}

    def __init__(self, root: str | os.PathLike[str], train: bool = True, transform: Callable[..., Any] | None = None,
                 target_transform: Callable[..., Any] | None = None, download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(f"Dataset not found or corrupted. You can use download=True to "
                               f"download it (or put CIFAR's files in "
                               f"{os.path.join(self.root, self.base_folder)})")
        data, self.targets = [], []
        for name, _ in (self.train_list if train else self.test_list):
            path = os.path.join(self.root, self.base_folder, name)
            batch, labels = _checked_batch(load_batch(path), path)
            data.append(batch)
            self.targets.extend(labels)
        data = np.concatenate(data) if data else np.zeros((0, 3072), np.uint8)
        if data.ndim != 2 or data.shape[1] != 3072 or len(data) != len(self.targets):
            raise RuntimeError(f"{type(self).__name__}: the batches hold {data.shape} images and "
                               f"{len(self.targets)} labels (expected N x 3072 and N)")
        self.data = np.ascontiguousarray(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
        self._load_meta()

    def _load_meta(self):
        path = os.path.join(self.root, self.base_folder, self.meta["filename"])
        if not check_integrity(path, self.meta["md5"]):
            raise RuntimeError("Dataset metadata file not found or corrupted. You can use "
                               "download=True to download it")
        self.classes = [str(c) for c in load_batch(path)[self.meta["key"]]]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from .._pil import pil_image
        img, target = pil_image().fromarray(self.data[index]), self.targets[index]
        return self._transformed(img, target)

    def __len__(self) -> int:
        return len(self.data)

    def _check_integrity(self):
        return all(check_integrity(os.path.join(self.root, self.base_folder, name), md5)
                   for name, md5 in self.train_list + self.test_list)

    def download(self) -> None:
        """Download and unpack the archive unless the files are there and intact."""
        if self._check_integrity():
            return
        download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100: CIFAR-10's images in 100 classes (`targets` are the fine labels)."""

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [["train", "16019d7e3df5f24257cddd939b257f8d"]]
    test_list = [["test", "f0ef6b0ae62326f3e7ffdfab6717acfc"]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": "7973b15100ade9c7d40fb424638fde48"}
