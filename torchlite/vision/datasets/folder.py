"""DatasetFolder and ImageFolder: one sub-folder per class (root/dog/xxx.png,
root/cat/yyy.png), as torchvision lays them out."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .vision import VisionDataset

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "default_loader", "pil_loader",
           "find_classes", "make_dataset", "has_file_allowed_extension", "is_image_file"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename: str, extensions: str | tuple[str, ...]) -> bool:
    """Whether filename ends with one of extensions (a string or a tuple; case-insensitive)."""
    return filename.lower().endswith(extensions if isinstance(extensions, str) else tuple(extensions))


def is_image_file(filename: str) -> bool:
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory: str | os.PathLike[str]) -> tuple[list[str], dict[str, int]]:
    """(sorted class names, {name: index}) from the sub-folders of directory."""
    classes = sorted(e.name for e in os.scandir(directory) if e.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {c: i for i, c in enumerate(classes)}


def make_dataset(directory: str | os.PathLike[str], class_to_idx: dict[str, int] | None = None,
                 extensions: str | tuple[str, ...] | None = None, is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False) -> list[tuple[str, int]]:
    """[(path, class index)] of the files under each class folder (walked in sorted order,
    symbolic links followed), kept by extension or by is_valid_file (exactly one of them)."""
    directory = os.path.expanduser(os.fspath(directory))
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    if extensions is not None:
        def is_valid_file(path):
            return has_file_allowed_extension(path, extensions)
    samples, found = [], set()
    for cls in sorted(class_to_idx):
        folder = os.path.join(directory, cls)
        if not os.path.isdir(folder):
            continue
        for root, _, names in sorted(os.walk(folder, followlinks=True)):
            for name in sorted(names):
                path = os.path.join(root, name)
                if is_valid_file(path):
                    samples.append((path, class_to_idx[cls]))
                    found.add(cls)
    empty = set(class_to_idx) - found
    if empty and not allow_empty:
        msg = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            msg += f"Supported extensions are: {extensions if isinstance(extensions, str) else ', '.join(extensions)}"
        raise FileNotFoundError(msg)
    return samples


def pil_loader(path: str | os.PathLike[str]) -> Any:
    from .._pil import pil_image
    with open(path, "rb") as f:
        img = pil_image().open(f)
        return img.convert("RGB")


def default_loader(path: str | os.PathLike[str]) -> Any:
    return pil_loader(path)


class DatasetFolder(VisionDataset):
    """Samples from class folders: loader(path) gives the sample, the folder its class.
    `classes`, `class_to_idx`, `samples` ([(path, class)]) and `targets` as in torchvision."""

    def __init__(self, root: str | os.PathLike[str], loader: Callable[[str], Any],
                 extensions: str | tuple[str, ...] | None = None, transform: Callable[..., Any] | None = None,
                 target_transform: Callable[..., Any] | None = None, is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx, extensions, is_valid_file,
                                    allow_empty=allow_empty)
        self.loader, self.extensions = loader, extensions
        self.classes, self.class_to_idx = classes, class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]

    @staticmethod
    def make_dataset(directory: str | os.PathLike[str], class_to_idx: dict[str, int],
                     extensions: str | tuple[str, ...] | None = None,
                     is_valid_file: Callable[[str], bool] | None = None,
                     allow_empty: bool = False) -> list[tuple[str, int]]:
        if class_to_idx is None:
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty)

    def find_classes(self, directory: str | os.PathLike[str]) -> tuple[list[str], dict[str, int]]:
        return find_classes(directory)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        path, target = self.samples[index]
        sample = self.loader(path)
        return self._transformed(sample, target)

    def __len__(self) -> int:
        return len(self.samples)


class ImageFolder(DatasetFolder):
    """Images in class folders (IMG_EXTENSIONS), loaded with Pillow as RGB."""

    def __init__(self, root: str | os.PathLike[str], transform: Callable[..., Any] | None = None,
                 target_transform: Callable[..., Any] | None = None, loader: Callable[[str], Any] = default_loader,
                 is_valid_file: Callable[[str], bool] | None = None, allow_empty: bool = False) -> None:
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None,
                         transform=transform, target_transform=target_transform,
                         is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
