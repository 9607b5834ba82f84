"""torchlite.hub: models and weights from a GitHub repository, a local folder or a URL
(PyTorch's torch.hub).

    model = torchlite.hub.load("owner/repo:branch", "resnet18", weights=None)
    model = torchlite.hub.load("/path/to/repo", "mymodel", source="local")
    state = torchlite.hub.load_state_dict_from_url(url, check_hash=True)

The cache has PyTorch's layout under get_dir(): repositories in `<owner>_<repo>_<ref>/`,
checkpoints in `checkpoints/`, and `trusted_list`.  get_dir() is $TORCHLITE_HOME/hub, else
$TORCH_HOME/hub, else $XDG_CACHE_HOME/torchlite/hub (~/.cache/torchlite/hub); set_dir() overrides
it.  A repository's `hubconf.py` lists its entry points (callables) and `dependencies` (modules
that must import).  Loading a hub repo runs its code, so a repository not trusted before asks
first (trust_repo=None), as PyTorch does; checkpoints load through torchlite.load with
weights_only=True, which never runs code from the file."""
from __future__ import annotations

import contextlib
import hashlib
import http.client
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import warnings
import zipfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, List     # List: this module's own `list` shadows the builtin

__all__ = ["load", "list", "help", "load_state_dict_from_url", "download_url_to_file", "get_dir",
           "set_dir"]

_hub_dir = None
GITHUB = "https://github.com"            # where source='github' repositories are fetched from
_HASH_IN_NAME = re.compile(r"-([a-f0-9]*)\.")
_CHUNK = 1 << 16
_TRUSTED_OWNERS = ("pytorch", "facebookresearch", "facebookincubator", "fairinternal")  # PyTorch's


# ---- the cache folder ------------------------------------------------------------------------------
def get_dir() -> str:
    """The hub cache folder (see the module docstring for how it is chosen)."""
    if _hub_dir is not None:
        return _hub_dir
    for var in ("TORCHLITE_HOME", "TORCH_HOME"):
        if os.environ.get(var):
            return os.path.join(os.path.expanduser(os.environ[var]), "hub")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return os.path.join(os.path.expanduser(cache), "torchlite", "hub")


def set_dir(d: str | os.PathLike[str]) -> None:
    """Use folder d for the hub cache from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


# ---- downloading -----------------------------------------------------------------------------------
def download_url_to_file(url: str, dst: str | os.PathLike[str], hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Download url to the file dst (written to a temporary file beside it, moved into place
    when complete).  hash_prefix: the start of the file's SHA-256, checked (RuntimeError on a
    mismatch).  Without a network (or with a bad URL) a RuntimeError names the URL and dst, so
    the file can be put there by hand."""
    dst = os.path.expanduser(os.fspath(dst))
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    try:
        response = urllib.request.urlopen(urllib.request.Request(
            url, headers={"User-Agent": "torchlite.hub"}), timeout=60)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise RuntimeError(f"could not download {url} ({e}); without a network, put the file at "
                           f"{dst} by hand") from None
    total = response.headers.get("Content-Length")
    total = int(total) if total and total.isdigit() else None
    sha = hashlib.sha256()
    tmp = tempfile.NamedTemporaryFile(delete=False, dir=folder, prefix=".download-")
    try:
        try:
            with response, tmp, _progress(total, progress, os.path.basename(dst)) as bar:
                while True:
                    chunk = response.read(_CHUNK)
                    if not chunk:
                        break
                    tmp.write(chunk)
                    sha.update(chunk)
                    bar(len(chunk))
        except (OSError, http.client.HTTPException) as e:      # a stalled or reset transfer
            raise RuntimeError(f"download of {url} failed ({e}); without a network, put the "
                               f"file at {dst} by hand") from None
        if total is not None and os.path.getsize(tmp.name) != total:
            raise RuntimeError(f"download of {url} stopped after {os.path.getsize(tmp.name)} of "
                               f"{total} bytes")
        if hash_prefix is not None and not sha.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                               f'"{sha.hexdigest()}") for {url}')
        shutil.move(tmp.name, dst)
    finally:
        if os.path.exists(tmp.name):
            os.remove(tmp.name)


class _progress:
    """A progress bar on stderr (tqdm's when it is installed), updated with byte counts."""

    def __init__(self, total, enabled, name):
        self.total, self.enabled, self.name = total, enabled, name
        self.done, self.bar = 0, None

    def __enter__(self):
        if self.enabled:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=self.total, unit="B", unit_scale=True, unit_divisor=1024,
                                desc=self.name, file=sys.stderr)
            except ImportError:
                self.bar = None
        return self.update

    def update(self, n):
        self.done += n
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(n)
        elif self.total:
            sys.stderr.write(f"\r{self.name}: {100 * self.done // self.total}%")

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        elif self.enabled and self.total:
            sys.stderr.write("\n")
        return False


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None, weights_only: bool = True) -> dict[str, Any]:
    """The state dict in the checkpoint at url, downloaded once into model_dir (default
    get_dir()/checkpoints).  check_hash: the file name's hash part (`name-<sha256 prefix>.ext`)
    must match the file's SHA-256.  Loaded with torchlite.load (weights_only=True: no code from
    the file runs)."""
    from .serialization import load as _load
    model_dir = os.path.join(get_dir(), "checkpoints") if model_dir is None else model_dir
    os.makedirs(model_dir, exist_ok=True)
    name = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    if not name:
        raise ValueError(f"load_state_dict_from_url: no file name in {url!r}; pass file_name")
    cached = os.path.join(model_dir, name)
    if not os.path.exists(cached):
        m = _HASH_IN_NAME.search(name) if check_hash else None
        download_url_to_file(url, cached, m.group(1) if m else None, progress=progress)
    if zipfile.is_zipfile(cached) and _is_legacy_zip(cached):
        cached = _extract_legacy_zip(cached, model_dir)
    return _load(cached, map_location=map_location, weights_only=weights_only)


def _is_legacy_zip(path):
    """PyTorch 1.6's zipped checkpoint files hold one file that is itself the checkpoint."""
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        return len(names) == 1 and not names[0].endswith("/") and "/" not in names[0]


def _extract_legacy_zip(path, folder):
    with zipfile.ZipFile(path) as z:
        (name,) = z.namelist()
        target = os.path.join(folder, name)
        if not os.path.exists(target):
            z.extract(name, folder)
    return target


# ---- repositories ----------------------------------------------------------------------------------
def _parse_repo(github):
    if ":" in github:
        owner_repo, ref = github.split(":", 1)
    else:
        owner_repo, ref = github, None
    parts = owner_repo.split("/")
    if len(parts) != 2 or not all(parts) or not all(re.fullmatch(r"[\w.-]+", p) for p in parts):
        raise ValueError(f'Invalid GitHub repo "{github}": expected "repo_owner/repo_name[:ref]"')
    if ref is not None and not re.fullmatch(r"[\w./-]+", ref):
        raise ValueError(f"Invalid ref {ref!r} in {github!r}")
    return parts[0], parts[1], ref


def _check_trust(owner, repo, trust_repo, calling_fn):
    """PyTorch's rule.  True: trusted from now on (written to get_dir()/trusted_list).
    'check': asks unless already trusted.  False: asks.  None (the default): warns unless
    already trusted and goes on, without adding it.  A "no" raises."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    listing = os.path.join(hub_dir, "trusted_list")
    trusted = set()
    if os.path.exists(listing):
        with open(listing) as f:
            trusted = {line.strip() for line in f if line.strip()}
    key = f"{owner}_{repo}"
    is_trusted = key in trusted or owner in _TRUSTED_OWNERS
    if trust_repo is None:
        if not is_trusted:
            warnings.warn(f"You are about to download and run code from an untrusted repository "
                          f"({owner}/{repo}). Call {calling_fn}(..., trust_repo=False) to be asked "
                          f"once and trust it, {calling_fn}(..., trust_repo=True) to trust it "
                          f"without asking, or trust_repo='check' to be asked only when it is not "
                          f"trusted yet.")
        return
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        answer = input(f"The repository {owner}/{repo} does not belong to the list of trusted "
                       f"repositories and as such cannot be downloaded. Do you trust this "
                       f"repository and wish to add it to the trusted list of repositories (y/N)?")
        if answer.strip().lower() not in ("y", "yes"):
            raise Exception("Untrusted repository.")
    if not is_trusted:
        with open(listing, "a") as f:
            f.write(key + "\n")


def _github_dir(github, force_reload, trust_repo, calling_fn, skip_validation, verbose=True):
    owner, repo, ref = _parse_repo(github)
    _check_trust(owner, repo, trust_repo, calling_fn)
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    refs = [ref] if ref is not None else ["main", "master"]     # PyTorch's default branches
    for r in refs:
        folder = os.path.join(hub_dir, f"{owner}_{repo}_{r.replace('/', '_')}")
        if os.path.isdir(folder) and not force_reload:
            if verbose:
                sys.stderr.write(f"Using cache found in {folder}\n")
            return folder
    staging = tempfile.mkdtemp(prefix=".zipball-", dir=hub_dir)
    try:
        archive = os.path.join(staging, "repo.zip")
        for i, r in enumerate(refs):
            try:
                download_url_to_file(f"{GITHUB}/{owner}/{repo}/zipball/{r}", archive, progress=False)
                break
            except RuntimeError:
                if i + 1 == len(refs):
                    raise
        folder = os.path.join(hub_dir, f"{owner}_{repo}_{r.replace('/', '_')}")
        _unpack_zipball(archive, staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _unpack_zipball(archive, staging, folder):
    """Put a repository zipball's one top-level folder at `folder`.  It is unpacked in a
    fresh folder of its own first, so no member can land anywhere else in the cache (the
    trusted list, cached checkpoints)."""
    unpacked = os.path.join(staging, "unpacked")
    os.makedirs(unpacked)
    try:
        with zipfile.ZipFile(archive) as z:
            for n in z.namelist():
                _safe_member(unpacked, n)
            z.extractall(unpacked)
    except zipfile.BadZipFile as e:
        raise RuntimeError(f"hub: {archive} is not a zip archive ({e})") from None
    tops = os.listdir(unpacked)
    if len(tops) != 1 or not os.path.isdir(os.path.join(unpacked, tops[0])):
        raise RuntimeError(f"hub: a repository zipball should hold one top-level folder, not "
                           f"{sorted(tops)}")
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    shutil.move(os.path.join(unpacked, tops[0]), folder)


def _safe_member(root, name):
    """RuntimeError for an archive member that would land outside root."""
    target = os.path.realpath(os.path.join(root, name))
    if not (target == os.path.realpath(root) or target.startswith(os.path.realpath(root) + os.sep)):
        raise RuntimeError(f"archive member {name!r} would be written outside {root}")


def _repo_dir(repo_or_dir, source, force_reload, trust_repo, calling_fn, skip_validation,
              verbose=True):
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        if not os.path.isdir(repo_or_dir):
            raise FileNotFoundError(f"hub: {repo_or_dir} is not a folder")
        return repo_or_dir
    return _github_dir(repo_or_dir, force_reload, trust_repo, calling_fn, skip_validation,
                       verbose)


@contextlib.contextmanager
def _on_path(folder):
    """folder first on sys.path for the block: a hubconf and its entry points import the
    repository's own modules (PyTorch keeps it there while the entry point runs)."""
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        try:
            sys.path.remove(folder)
        except ValueError:
            pass


def _hubconf(folder):
    """The hubconf.py of folder, imported (this runs the repository's code), its
    dependencies checked; call it inside _on_path(folder)."""
    path = os.path.join(folder, "hubconf.py")
    if not os.path.exists(path):
        raise FileNotFoundError(f"hub: no hubconf.py in {folder}")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    missing = [d for d in getattr(module, "dependencies", []) if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entry(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    fn = getattr(module, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def list(github: str, force_reload: bool = False, skip_validation: bool = False, trust_repo: bool | str | None = None,
         verbose: bool = True) -> List[str]:
    """The entry points (public callables) of a GitHub repository's hubconf.py."""
    folder = _repo_dir(github, "github", force_reload, trust_repo, "list", skip_validation, verbose)
    with _on_path(folder):
        module = _hubconf(folder)
    return [n for n in dir(module) if callable(getattr(module, n)) and not n.startswith("_")]


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,
         trust_repo: bool | str | None = None) -> str | None:
    """The docstring of an entry point of a GitHub repository's hubconf.py."""
    folder = _repo_dir(github, "github", force_reload, trust_repo, "help", skip_validation)
    with _on_path(folder):
        return _entry(_hubconf(folder), model).__doc__


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github", trust_repo: bool | str | None = None,
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False,
         **kwargs: Any) -> Any:
    """Call entry point `model` of the hubconf.py in a GitHub repository ("owner/repo[:ref]",
    downloaded into the cache once) or a local folder (source='local') with *args/**kwargs,
    and return what it returns (a model)."""
    folder = _repo_dir(repo_or_dir, source, force_reload, trust_repo, "load", skip_validation,
                       verbose)
    with _on_path(folder):
        return _entry(_hubconf(folder), model)(*args, **kwargs)
