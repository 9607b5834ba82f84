"""Downloading and unpacking datasets (torchvision.datasets.utils' names): MD5 checks,
archives (tar, tar.gz, tgz, tar.xz, tar.bz2, zip, gz) unpacked without letting a member escape
its folder, and torchlite.hub's downloader (progress bar, a clear error without a network)."""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import zipfile

from ...hub import download_url_to_file, _safe_member

__all__ = ["calculate_md5", "check_md5", "check_integrity", "download_url", "extract_archive",
           "download_and_extract_archive"]


def calculate_md5(fpath: str | os.PathLike[str], chunk_size: int = 1024 * 1024) -> str:
    md5 = hashlib.md5(usedforsecurity=False)
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            md5.update(chunk)
    return md5.hexdigest()


def check_md5(fpath: str | os.PathLike[str], md5: str, **kwargs) -> bool:
    return md5 == calculate_md5(fpath, **kwargs)


def check_integrity(fpath: str | os.PathLike[str], md5: str | None = None) -> bool:
    """True when the file exists and (with md5) its MD5 matches."""
    if not os.path.isfile(fpath):
        return False
    return md5 is None or check_md5(fpath, md5)


def download_url(url: str, root: str | os.PathLike[str], filename: str | None = None, md5: str | None = None,
                 max_redirect_hops: int = 3) -> None:
    """Download url into root/filename (default: the URL's last part), unless a file with the
    right MD5 is there already; RuntimeError when the download's MD5 is wrong, or, without a
    network, naming the URL and the file to fill by hand.  Redirects are followed by urllib's
    own rule (up to 10 hops): max_redirect_hops is accepted for torchvision's signature only."""
    root = os.path.expanduser(os.fspath(root))
    filename = filename or os.path.basename(url.split("?")[0])
    fpath = os.path.join(root, filename)
    os.makedirs(root, exist_ok=True)
    if check_integrity(fpath, md5):
        return
    download_url_to_file(url, fpath, progress=True)
    if not check_integrity(fpath, md5):
        os.remove(fpath)
        raise RuntimeError(f"File not found or corrupted: {url} (MD5 {md5} expected)")


def _extract_tar(src, dst, mode):
    with tarfile.open(src, mode) as tar:
        for m in tar.getmembers():
            _safe_member(dst, m.name)
            if m.issym() or m.islnk():
                _safe_member(dst, os.path.join(os.path.dirname(m.name), m.linkname))
        tar.extractall(dst, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(dst)


def _extract_zip(src, dst):
    with zipfile.ZipFile(src) as z:
        for name in z.namelist():
            _safe_member(dst, name)
        z.extractall(dst)


_TAR_MODES = {".tar": "r:", ".tar.gz": "r:gz", ".tgz": "r:gz", ".tar.xz": "r:xz",
              ".tar.bz2": "r:bz2", ".tbz": "r:bz2"}


def extract_archive(from_path: str | os.PathLike[str], to_path: str | os.PathLike[str] | None = None,
                    remove_finished: bool = False) -> str:
    """Unpack an archive (by its suffix) into to_path (default: its folder); a lone .gz
    becomes the file without the suffix.  Returns to_path (the file, for a .gz)."""
    from_path = os.fspath(from_path)
    to_path = os.path.dirname(from_path) if to_path is None else os.fspath(to_path)
    lower = from_path.lower()
    for suffix, mode in _TAR_MODES.items():
        if lower.endswith(suffix):
            _extract_tar(from_path, to_path, mode)
            break
    else:
        if lower.endswith(".zip"):
            _extract_zip(from_path, to_path)
        elif lower.endswith(".gz"):
            out = os.path.join(to_path, os.path.basename(from_path)[:-3])
            with gzip.open(from_path, "rb") as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
            to_path = out
        else:
            raise RuntimeError(f"Unsupported archive: {from_path} (tar, tar.gz, tgz, tar.xz, "
                               f"tar.bz2, zip or gz)")
    if remove_finished:
        os.remove(from_path)
    return to_path


def download_and_extract_archive(url: str, download_root: str | os.PathLike[str],
                                 extract_root: str | os.PathLike[str] | None = None, filename: str | None = None,
                                 md5: str | None = None, remove_finished: bool = False) -> None:
    """download_url, then extract_archive into extract_root (default download_root)."""
    download_root = os.path.expanduser(os.fspath(download_root))
    extract_root = download_root if extract_root is None else extract_root
    filename = filename or os.path.basename(url.split("?")[0])
    download_url(url, download_root, filename, md5)
    archive = os.path.join(download_root, filename)
    extract_archive(archive, extract_root, remove_finished)
