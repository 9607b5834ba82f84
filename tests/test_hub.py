"""torchlite.hub: local repositories, "GitHub" repositories served as zipballs by a local HTTP
server on 127.0.0.1 (never the internet), trust prompts, the cache layout, and
load_state_dict_from_url with its hash check and safe loading."""
import hashlib
import http.server
import io
import os
import pickle
import threading
import zipfile

import numpy as np
import pytest

import torchlite as tl
from torchlite import hub

HUBCONF = '''
dependencies = ["numpy"]
import torchlite


def tiny(out_features=3, *, bias=True):
    """A small linear model from the hub."""
    return torchlite.nn.Linear(4, out_features, bias=bias)


def _private():
    return 1
'''


@pytest.fixture
def hub_dir(tmp_path, monkeypatch):
    d = tmp_path / "hub"
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setenv("TORCHLITE_HOME", str(tmp_path / "home"))
    hub.set_dir(d)
    yield d
    hub._hub_dir = None


@pytest.fixture
def server(tmp_path):
    www = tmp_path / "www"
    www.mkdir()
    served = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(www), **k)

        def log_message(self, *a):
            pass

        def do_GET(self):
            served.append(self.path)
            super().do_GET()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield www, f"http://127.0.0.1:{httpd.server_address[1]}", served
    finally:
        httpd.shutdown()
        httpd.server_close()
        t.join(10)


def test_get_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.delenv("TORCHLITE_HOME", raising=False)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert hub.get_dir() == str(tmp_path / "th" / "hub")
    monkeypatch.setenv("TORCHLITE_HOME", str(tmp_path / "tl"))
    assert hub.get_dir() == str(tmp_path / "tl" / "hub")
    monkeypatch.delenv("TORCHLITE_HOME")
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == str(tmp_path / "xdg" / "torchlite" / "hub")
    hub.set_dir(tmp_path / "mine")
    assert hub.get_dir() == str(tmp_path / "mine")


def test_load_from_a_local_repository(tmp_path, hub_dir):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(HUBCONF)
    m = hub.load(str(repo), "tiny", 5, source="local", bias=False)
    assert isinstance(m, tl.nn.Linear) and m.out_features == 5 and m.bias is None
    with pytest.raises(RuntimeError, match="Cannot find callable nope"):
        hub.load(str(repo), "nope", source="local")
    with pytest.raises(ValueError, match="Unknown source"):
        hub.load(str(repo), "tiny", source="gitlab")
    (repo / "hubconf.py").write_text(HUBCONF.replace('["numpy"]', '["numpy", "no_such_module_x"]'))
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_module_x"):
        hub.load(str(repo), "tiny", source="local")


def _zipball(www, owner, repo, ref, hubconf=HUBCONF):
    """GitHub's zipball layout: one top folder holding the repository."""
    path = www / owner / repo / "zipball"
    path.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path / ref, "w") as z:
        z.writestr(f"{owner}-{repo}-abc123/hubconf.py", hubconf)
        z.writestr(f"{owner}-{repo}-abc123/README.md", "hi")


def test_load_from_github_is_cached_and_trusted(hub_dir, server, monkeypatch):
    www, url, served = server
    monkeypatch.setattr(hub, "GITHUB", url)
    _zipball(www, "someone", "models", "main")
    _zipball(www, "someone", "models", "v2")
    with pytest.warns(UserWarning, match="untrusted repository"):
        m = hub.load("someone/models", "tiny")             # trust_repo=None: a warning
    assert isinstance(m, tl.nn.Linear)
    assert (hub_dir / "someone_models_main" / "hubconf.py").exists()
    n = len(served)
    hub.load("someone/models", "tiny", trust_repo=True)     # cached; now trusted
    assert len(served) == n
    assert "someone_models" in (hub_dir / "trusted_list").read_text()
    hub.load("someone/models:v2", "tiny", trust_repo="check")   # trusted: no prompt
    assert (hub_dir / "someone_models_v2").exists()
    hub.load("someone/models", "tiny", force_reload=True, trust_repo=True)
    assert len(served) == n + 2
    assert hub.list("someone/models", trust_repo=True) == ["tiny"]
    assert "small linear model" in hub.help("someone/models", "tiny", trust_repo=True)


def test_untrusted_repository_prompts(hub_dir, server, monkeypatch):
    www, url, _ = server
    monkeypatch.setattr(hub, "GITHUB", url)
    _zipball(www, "other", "repo", "main")
    answers = iter(["n"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    with pytest.raises(Exception, match="Untrusted repository"):
        hub.load("other/repo", "tiny", trust_repo=False)
    answers = iter(["y"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    assert isinstance(hub.load("other/repo", "tiny", trust_repo="check"), tl.nn.Linear)
    assert "other_repo" in (hub_dir / "trusted_list").read_text()
    with pytest.raises(ValueError, match="Invalid GitHub repo"):
        hub.load("not-a-repo", "tiny")


def test_zipball_members_cannot_escape(hub_dir, server, monkeypatch):
    www, url, _ = server
    monkeypatch.setattr(hub, "GITHUB", url)
    path = www / "evil" / "repo" / "zipball"
    path.mkdir(parents=True)
    with zipfile.ZipFile(path / "main", "w") as z:
        z.writestr("evil-repo-1/hubconf.py", HUBCONF)
        z.writestr("../../escaped.py", "x")
    with pytest.raises(RuntimeError, match="outside"):
        hub.load("evil/repo", "tiny", trust_repo=True)
    assert not (hub_dir.parent / "escaped.py").exists()


def _checkpoint_bytes(state):
    buf = io.BytesIO()
    tl.save(state, buf)
    return buf.getvalue()


def test_load_state_dict_from_url(hub_dir, server, tmp_path):
    www, url, served = server
    state = tl.nn.Linear(3, 2).state_dict()
    data = _checkpoint_bytes(state)
    sha = hashlib.sha256(data).hexdigest()
    name = f"linear-{sha[:8]}.pth"
    (www / name).write_bytes(data)
    got = hub.load_state_dict_from_url(f"{url}/{name}", check_hash=True, progress=False)
    assert set(got) == {"weight", "bias"}
    np.testing.assert_array_equal(got["weight"].numpy(), state["weight"].numpy())
    assert (hub_dir / "checkpoints" / name).exists()
    n = len(served)
    hub.load_state_dict_from_url(f"{url}/{name}", progress=False)       # from the cache
    assert len(served) == n
    (www / "linear-deadbeef.pth").write_bytes(data)
    with pytest.raises(RuntimeError, match="invalid hash value"):
        hub.load_state_dict_from_url(f"{url}/linear-deadbeef.pth", check_hash=True, progress=False)
    assert not (hub_dir / "checkpoints" / "linear-deadbeef.pth").exists()
    other = tmp_path / "models"
    hub.load_state_dict_from_url(f"{url}/{name}", model_dir=str(other), file_name="x.pth",
                                 progress=False)
    assert (other / "x.pth").exists()


def test_a_checkpoint_that_would_run_code_is_refused(hub_dir, server, tmp_path):
    www, url, _ = server

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(tmp_path / "pwned"),))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"w": Evil()}, protocol=2))
        z.writestr("archive/version", "3\n")
    (www / "evil.pth").write_bytes(buf.getvalue())
    with pytest.raises(Exception):
        hub.load_state_dict_from_url(f"{url}/evil.pth", progress=False)
    assert not (tmp_path / "pwned").exists()


def test_download_url_to_file_errors(tmp_path, server):
    www, url, _ = server
    (www / "f.bin").write_bytes(b"abc" * 1000)
    dst = tmp_path / "dl" / "f.bin"
    hub.download_url_to_file(f"{url}/f.bin", str(dst), hash_prefix=hashlib.sha256(b"abc" * 1000).hexdigest()[:10],
                             progress=False)
    assert dst.read_bytes() == b"abc" * 1000
    with pytest.raises(RuntimeError) as e:
        hub.download_url_to_file(f"{url}/missing.bin", str(tmp_path / "m.bin"), progress=False)
    assert "missing.bin" in str(e.value) and str(tmp_path / "m.bin") in str(e.value)
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".download")]


def test_entry_points_import_their_repositorys_modules(tmp_path, hub_dir):
    repo = tmp_path / "repo2"
    repo.mkdir()
    (repo / "helper_mod_for_hub_test.py").write_text("VALUE = 41\n")
    (repo / "hubconf.py").write_text("def lazy():\n    import helper_mod_for_hub_test as h\n"
                                     "    return h.VALUE + 1\n")
    assert hub.load(str(repo), "lazy", source="local") == 42
    assert str(repo) not in __import__("sys").path


def test_zipball_with_extra_top_level_entries_is_refused(hub_dir, server, monkeypatch):
    www, url, _ = server
    monkeypatch.setattr(hub, "GITHUB", url)
    path = www / "two" / "tops" / "zipball"
    path.mkdir(parents=True)
    with zipfile.ZipFile(path / "main", "w") as z:
        z.writestr("two-tops-1/hubconf.py", HUBCONF)
        z.writestr("trusted_list", "attacker_repo\n")
    with pytest.raises(RuntimeError, match="one top-level folder"):
        hub.load("two/tops", "tiny", trust_repo=True)
    assert "attacker_repo" not in (hub_dir / "trusted_list").read_text()


def test_default_branch_falls_back_to_master(hub_dir, server, monkeypatch):
    www, url, _ = server
    monkeypatch.setattr(hub, "GITHUB", url)
    _zipball(www, "old", "style", "master")
    assert isinstance(hub.load("old/style", "tiny", trust_repo=True), tl.nn.Linear)
    assert (hub_dir / "old_style_master" / "hubconf.py").exists()
