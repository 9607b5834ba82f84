"""MNIST and the datasets in its idx format: FashionMNIST, KMNIST, EMNIST (torchvision's
classes, folders and files: `root/<Class>/raw/train-images-idx3-ubyte`, ...)."""
from __future__ import annotations

import os
import shutil
import string
from typing import TYPE_CHECKING

import numpy as np

from ... import from_numpy
from .utils import check_integrity, download_and_extract_archive, extract_archive
from .vision import VisionDataset

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..._tensor import Tensor

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "EMNIST", "read_image_file", "read_label_file",
           "read_sn3_pascalvincent_tensor"]

# the idx format: magic = 0x00 0x00 <type> <ndim>, then ndim big-endian uint32 sizes, then data
_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_sn3_pascalvincent_tensor(path: str | os.PathLike[str], strict: bool = True) -> Tensor:
    """The array in an idx file (MNIST's format), as a tensor; ValueError for a file that is
    not one (bad magic, sizes that do not match the file's length)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise ValueError(f"{path} is not an idx file (magic {raw[:4]!r})")
    ndim = raw[3]
    if ndim < 1 or len(raw) < 4 + 4 * ndim:
        raise ValueError(f"{path}: bad idx header ({ndim} dims)")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_IDX_TYPES[raw[2]])
    count = int(np.prod(shape, dtype=np.int64))
    body = 4 + 4 * ndim
    if len(raw) - body != count * dtype.itemsize:
        raise ValueError(f"{path}: header says {shape} ({count * dtype.itemsize} bytes) but the "
                         f"file holds {len(raw) - body}")
    data = np.frombuffer(raw, dtype=dtype, offset=body).reshape(shape)
    return from_numpy(data.astype(dtype.newbyteorder("="), copy=True))


def read_image_file(path: str | os.PathLike[str]) -> Tensor:
    x = read_sn3_pascalvincent_tensor(path)
    if x.dtype.name != "uint8" or x.ndim != 3:
        raise ValueError(f"{path}: expected uint8 images (3 dims), got {x.dtype} {tuple(x.shape)}")
    return x


def read_label_file(path: str | os.PathLike[str]) -> Tensor:
    x = read_sn3_pascalvincent_tensor(path)
    if x.dtype.name != "uint8" or x.ndim != 1:
        raise ValueError(f"{path}: expected uint8 labels (1 dim), got {x.dtype} {tuple(x.shape)}")
    return x.long()


class MNIST(VisionDataset):
    """MNIST's handwritten digits: 60,000 training and 10,000 test images, 28x28 grayscale.
    Items are (PIL image, class index) before the transforms.  Files live in
    root/MNIST/raw/ as the idx files (gzipped downloads are unpacked there)."""

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"]
    resources = [("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
                 ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
                 ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
                 ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c")]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root: str | os.PathLike[str], train: bool = True, transform: Callable[..., Any] | None = None,
                 target_transform: Callable[..., Any] | None = None, download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError(f"Dataset not found. You can use download=True to download it "
                               f"(or put the files of {type(self).__name__} in {self.raw_folder})")
        self.data, self.targets = self._load_data()

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def processed_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "processed")

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    def _files(self):
        split = "train" if self.train else "t10k"
        return (os.path.join(self.raw_folder, f"{split}-images-idx3-ubyte"),
                os.path.join(self.raw_folder, f"{split}-labels-idx1-ubyte"))

    def _load_data(self):
        images, labels = self._files()
        data, targets = read_image_file(images), read_label_file(labels)
        if len(data) != len(targets):
            raise RuntimeError(f"{type(self).__name__}: {len(data)} images but {len(targets)} labels")
        return data, targets

    def _check_exists(self):
        return all(check_integrity(os.path.join(self.raw_folder, os.path.splitext(name)[0]))
                   for name, _ in self.resources)

    def download(self) -> None:
        """Download and unpack the files (from the first mirror that answers) unless present."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for name, md5 in self.resources:
            errors = []
            for mirror in self.mirrors:
                try:
                    download_and_extract_archive(f"{mirror}{name}", self.raw_folder, filename=name,
                                                 md5=md5)
                    break
                except RuntimeError as e:
                    errors.append(str(e))
            else:
                raise RuntimeError(f"Error downloading {name}: " + "; ".join(errors)
                                   + f". Without a network, put the file in {self.raw_folder}")

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        from .._pil import pil_image
        img = pil_image().fromarray(self.data[index].numpy(), mode="L")
        target = int(self.targets[index])
        return self._transformed(img, target)

    def __len__(self) -> int:
        return len(self.data)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: MNIST's format and sizes, ten kinds of clothing."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
                 ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
                 ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
                 ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310")]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
               "Bag", "Ankle boot"]


class KMNIST(MNIST):
    """Kuzushiji-MNIST: MNIST's format and sizes, ten cursive Japanese characters."""

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
                 ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
                 ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
                 ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134")]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


class EMNIST(MNIST):
    """EMNIST: handwritten digits and letters in MNIST's format, in six splits ('byclass',
    'bymerge', 'balanced', 'letters', 'digits', 'mnist'); files
    root/EMNIST/raw/emnist-<split>-<train|test>-images-idx3-ubyte.  (As in torchvision, the
    images are stored transposed.)"""

    url = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    _merged = set("cijklmopsuvwxyz")
    _all = set(string.digits + string.ascii_letters)
    classes_split_dict = {"byclass": sorted(_all), "bymerge": sorted(_all - _merged),
                          "balanced": sorted(_all - _merged),
                          "letters": ["N/A"] + list(string.ascii_lowercase),
                          "digits": list(string.digits), "mnist": list(string.digits)}

    def __init__(self, root: str | os.PathLike[str], split: str, **kwargs) -> None:
        if split not in self.splits:
            raise ValueError(f"Unknown value '{split}' for argument split. Valid values are "
                             f"{{{', '.join(repr(s) for s in self.splits)}}}.")
        self.split = split
        super().__init__(root, **kwargs)
        self.classes = self.classes_split_dict[split]

    def _files(self):
        prefix = f"emnist-{self.split}-{'train' if self.train else 'test'}"
        return (os.path.join(self.raw_folder, f"{prefix}-images-idx3-ubyte"),
                os.path.join(self.raw_folder, f"{prefix}-labels-idx1-ubyte"))

    def _check_exists(self):
        return all(check_integrity(f) for f in self._files())

    def download(self) -> None:
        """Download the one zip of every split and unpack its gzipped idx files."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        download_and_extract_archive(self.url, self.raw_folder, md5=self.md5)
        gz = os.path.join(self.raw_folder, "gzip")
        for name in os.listdir(gz):
            if name.endswith(".gz"):
                extract_archive(os.path.join(gz, name), self.raw_folder)
        shutil.rmtree(gz)
