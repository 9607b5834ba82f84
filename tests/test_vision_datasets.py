"""torchlite.vision.datasets: small files written in each dataset's own format (idx, CIFAR's
pickled batches, SVHN's .mat, class folders) read back and checked value by value; downloads
through a local HTTP server on 127.0.0.1 (MD5 checks, unpacking, mirrors, the error without a
network); tampered files refused."""
import gzip
import hashlib
import http.server
import io
import os
import pickle
import socket
import tarfile
import threading
import zipfile

import numpy as np
import pytest

import torchlite as tl
from torchlite.vision import datasets as D
from torchlite.vision.datasets import utils as U

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402


def md5(path):
    return hashlib.md5(open(path, "rb").read()).hexdigest()


def idx_bytes(arr):
    arr = np.asarray(arr)
    code = {np.uint8: 0x08, np.int32: 0x0C}[arr.dtype.type]
    head = bytes([0, 0, code, arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
    return head + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def write_mnist(folder, n_train=5, n_test=3, seed=0, gz=False):
    g = np.random.default_rng(seed)
    out = {}
    for split, n in (("train", n_train), ("t10k", n_test)):
        imgs = g.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = g.integers(0, 10, n, dtype=np.uint8)
        for kind, arr in (("images-idx3", imgs), ("labels-idx1", labels)):
            name = os.path.join(folder, f"{split}-{kind}-ubyte")
            data = idx_bytes(arr)
            if gz:
                with gzip.open(name + ".gz", "wb") as f:
                    f.write(data)
            else:
                with open(name, "wb") as f:
                    f.write(data)
        out[split] = (imgs, labels)
    return out


# ---- MNIST and its family ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [D.MNIST, D.FashionMNIST, D.KMNIST])
def test_mnist_family_reads_torchvision_layout(tmp_path, cls):
    raw = tmp_path / cls.__name__ / "raw"
    raw.mkdir(parents=True)
    want = write_mnist(raw)
    for train, split in ((True, "train"), (False, "t10k")):
        ds = cls(tmp_path, train=train)
        imgs, labels = want[split]
        assert len(ds) == len(imgs)
        assert ds.data.dtype is tl.uint8 and tuple(ds.data.shape) == imgs.shape
        np.testing.assert_array_equal(ds.data.numpy(), imgs)
        np.testing.assert_array_equal(ds.targets.numpy(), labels)
        img, target = ds[1]
        assert isinstance(img, Image.Image) and img.mode == "L" and img.size == (28, 28)
        np.testing.assert_array_equal(np.asarray(img), imgs[1])
        assert target == int(labels[1]) and isinstance(target, int)
    assert ds.class_to_idx[ds.classes[3]] == 3 and len(ds.classes) == 10
    assert "Split: Test" in repr(ds) and f"Dataset {cls.__name__}" in repr(ds)


def test_mnist_transforms_and_missing_files(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    want = write_mnist(raw)
    ds = D.MNIST(tmp_path, transform=lambda im: np.asarray(im).sum(), target_transform=lambda t: t + 100)
    x, y = ds[0]
    assert x == want["train"][0][0].sum() and y == int(want["train"][1][0]) + 100
    with pytest.raises(RuntimeError, match="download=True"):
        D.MNIST(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="Only transforms or transform"):
        D.vision.VisionDataset(tmp_path, transforms=lambda a, b: (a, b), transform=lambda a: a)


def test_idx_reader_refuses_bad_files(tmp_path):
    bad = tmp_path / "x"
    bad.write_bytes(b"\x00\x00\x08\x03" + (5).to_bytes(4, "big") * 3 + b"\x00" * 10)
    with pytest.raises(ValueError, match="header says"):
        D.mnist.read_sn3_pascalvincent_tensor(str(bad))
    bad.write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(ValueError, match="not an idx file"):
        D.mnist.read_sn3_pascalvincent_tensor(str(bad))
    ints = tmp_path / "i"
    ints.write_bytes(idx_bytes(np.arange(6, dtype=np.int32).reshape(2, 3)))
    np.testing.assert_array_equal(D.mnist.read_sn3_pascalvincent_tensor(str(ints)).numpy(),
                                  np.arange(6).reshape(2, 3))


def test_emnist_split(tmp_path):
    raw = tmp_path / "EMNIST" / "raw"
    raw.mkdir(parents=True)
    g = np.random.default_rng(1)
    imgs = g.integers(0, 256, (4, 28, 28), dtype=np.uint8)
    labels = np.array([1, 2, 3, 26], np.uint8)
    (raw / "emnist-letters-train-images-idx3-ubyte").write_bytes(idx_bytes(imgs))
    (raw / "emnist-letters-train-labels-idx1-ubyte").write_bytes(idx_bytes(labels))
    ds = D.EMNIST(tmp_path, split="letters")
    assert len(ds) == 4 and ds.classes[0] == "N/A" and ds.classes[26] == "z"
    np.testing.assert_array_equal(np.asarray(ds[3][0]), imgs[3])
    with pytest.raises(ValueError, match="split"):
        D.EMNIST(tmp_path, split="nope")


# ---- CIFAR ------------------------------------------------------------------------------------------
def write_cifar(root, cls, n_per_batch=4, seed=0):
    """Batches in CIFAR's pickled format; returns a subclass of cls whose MD5 lists are the
    files'."""
    g = np.random.default_rng(seed)
    folder = os.path.join(root, cls.base_folder)
    os.makedirs(folder, exist_ok=True)
    label_key = "labels" if cls is D.CIFAR10 else "fine_labels"
    names = [n for n, _ in cls.train_list + cls.test_list]
    batches = {}
    for name in names:
        data = g.integers(0, 256, (n_per_batch, 3072), dtype=np.uint8)
        labels = [int(v) for v in g.integers(0, 10, n_per_batch)]
        with open(os.path.join(folder, name), "wb") as f:
            pickle.dump({b"data": data, label_key.encode(): labels, b"batch_label": b"x"}, f, protocol=2)
        batches[name] = (data, labels)
    meta_key = cls.meta["key"]
    classes = [f"class{i}" for i in range(10 if cls is D.CIFAR10 else 100)]
    with open(os.path.join(folder, cls.meta["filename"]), "wb") as f:
        pickle.dump({meta_key: classes}, f, protocol=2)
    sub = type(cls.__name__, (cls,), {
        "train_list": [[n, md5(os.path.join(folder, n))] for n, _ in cls.train_list],
        "test_list": [[n, md5(os.path.join(folder, n))] for n, _ in cls.test_list],
        "meta": dict(cls.meta, md5=md5(os.path.join(folder, cls.meta["filename"])))})
    return sub, batches, classes


@pytest.mark.parametrize("base", [D.CIFAR10, D.CIFAR100])
def test_cifar_reads_pickled_batches(tmp_path, base):
    cls, batches, classes = write_cifar(tmp_path, base)
    ds = cls(tmp_path, train=True)
    train = [batches[n] for n, _ in base.train_list]
    data = np.concatenate([d for d, _ in train])
    assert len(ds) == len(data) and ds.data.shape == (len(data), 32, 32, 3)
    np.testing.assert_array_equal(ds.data, data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    assert ds.targets == [t for _, ts in train for t in ts]
    img, target = ds[2]
    assert img.mode == "RGB" and img.size == (32, 32)
    np.testing.assert_array_equal(np.asarray(img), data[2].reshape(3, 32, 32).transpose(1, 2, 0))
    assert ds.classes == classes and ds.class_to_idx["class3"] == 3
    test = cls(tmp_path, train=False)
    assert len(test) == len(batches[base.test_list[0][0]][0])


def test_cifar_refuses_a_pickle_that_would_run_code(tmp_path):
    cls, _, _ = write_cifar(tmp_path, D.CIFAR10)

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(tmp_path / "pwned"),))
    path = os.path.join(tmp_path, cls.base_folder, "data_batch_1")
    with open(path, "wb") as f:
        pickle.dump({b"data": Evil(), b"labels": []}, f, protocol=2)
    evil = type("CIFAR10", (cls,), {"train_list": [["data_batch_1", md5(path)]]})
    with pytest.raises(RuntimeError, match="os.system|posix.system|nt.system"):
        evil(tmp_path)
    assert not (tmp_path / "pwned").exists()
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        D.CIFAR10(tmp_path)           # the real MD5s do not match the synthetic files


# ---- SVHN -------------------------------------------------------------------------------------------
def test_svhn_mat_files(tmp_path):
    scipy_io = pytest.importorskip("scipy.io")
    g = np.random.default_rng(2)
    X = g.integers(0, 256, (32, 32, 3, 5), dtype=np.uint8)
    y = np.array([[10], [1], [2], [10], [9]], np.uint8)
    scipy_io.savemat(str(tmp_path / "test_32x32.mat"), {"X": X, "y": y})
    sub = type("SVHN", (D.SVHN,), {"split_list": dict(D.SVHN.split_list, test=[
        "http://127.0.0.1:1/x", "test_32x32.mat", md5(tmp_path / "test_32x32.mat")])})
    ds = sub(tmp_path, split="test")
    assert len(ds) == 5 and ds.data.shape == (5, 3, 32, 32)
    np.testing.assert_array_equal(ds.labels, [0, 1, 2, 0, 9])
    img, t = ds[1]
    np.testing.assert_array_equal(np.asarray(img), X[:, :, :, 1])
    assert t == 1
    with pytest.raises(ValueError, match="split"):
        D.SVHN(tmp_path, split="bad")


# ---- folders ----------------------------------------------------------------------------------------
def test_image_folder(tmp_path):
    g = np.random.default_rng(3)
    want = {}
    for cls in ("dog", "cat"):
        (tmp_path / cls / "sub").mkdir(parents=True)
        for i, ext in enumerate((".png", ".bmp")):
            arr = g.integers(0, 256, (5, 7, 3), dtype=np.uint8)
            p = tmp_path / cls / ("sub" if i else "") / f"{i}{ext}"
            Image.fromarray(arr).save(p)
            want[str(p)] = arr
        (tmp_path / cls / "notes.txt").write_text("not an image")
    ds = D.ImageFolder(tmp_path)
    assert ds.classes == ["cat", "dog"] and ds.class_to_idx == {"cat": 0, "dog": 1}
    assert len(ds) == 4 and ds.targets == [0, 0, 1, 1] and ds.imgs == ds.samples
    for i, (path, target) in enumerate(ds.samples):
        img, t = ds[i]
        assert t == target and img.mode == "RGB"
        np.testing.assert_array_equal(np.asarray(img), want[path])
    only_png = D.ImageFolder(tmp_path, is_valid_file=lambda p: p.endswith(".png"))
    assert len(only_png) == 2
    (tmp_path / "empty_class").mkdir()
    with pytest.raises(FileNotFoundError, match="empty_class"):
        D.ImageFolder(tmp_path)
    assert len(D.ImageFolder(tmp_path, allow_empty=True)) == 4
    folder = D.DatasetFolder(tmp_path, loader=lambda p: open(p).read(), extensions=(".txt",),
                             allow_empty=True)
    assert [s for s, _ in folder] == ["not an image", "not an image"]
    with pytest.raises(ValueError, match="Both extensions and is_valid_file"):
        D.DatasetFolder(tmp_path, loader=print)


def test_fake_data_is_deterministic():
    ds = D.FakeData(size=4, image_size=(3, 6, 5), num_classes=3, random_offset=7)
    a, ta = ds[2]
    b, tb = ds[2]
    assert a.size == (5, 6) and a.mode == "RGB" and 0 <= ta < 3
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert ta == tb and len(ds) == 4
    assert not np.array_equal(np.asarray(ds[1][0]), np.asarray(a))
    with pytest.raises(IndexError):
        ds[4]
    gray = D.FakeData(size=1, image_size=(1, 4, 4))[0][0]
    assert gray.mode == "L"


# ---- downloads through a local server ---------------------------------------------------------------
@pytest.fixture
def server(tmp_path):
    """A static HTTP server on 127.0.0.1 over tmp_path/www; stopped after the test."""
    www = tmp_path / "www"
    www.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(www), **k)

        def log_message(self, *a):
            pass
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield www, f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        t.join(10)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_mnist_download_from_mirrors(tmp_path, server):
    www, url = server
    want = write_mnist(www, gz=True)
    resources = [(n, md5(www / n)) for n, _ in D.MNIST.resources]
    dead = f"http://127.0.0.1:{free_port()}/"
    cls = type("MNIST", (D.MNIST,), {"mirrors": [dead, url], "resources": resources})
    ds = cls(tmp_path / "data", download=True)
    np.testing.assert_array_equal(ds.data.numpy(), want["train"][0])
    assert (tmp_path / "data" / "MNIST" / "raw" / "train-images-idx3-ubyte").exists()
    cls(tmp_path / "data", download=True)                  # present: no second download
    bad = type("MNIST", (D.MNIST,), {"mirrors": [url], "resources": [(resources[0][0], "0" * 32)]})
    with pytest.raises(RuntimeError, match="Error downloading"):
        bad(tmp_path / "other", download=True)
    offline = type("MNIST", (D.MNIST,), {"mirrors": [dead]})
    with pytest.raises(RuntimeError) as e:
        offline(tmp_path / "off", download=True)
    assert dead in str(e.value) and str(tmp_path / "off") in str(e.value)


def test_cifar_download_and_extract(tmp_path, server):
    www, url = server
    src = tmp_path / "src"
    cls, batches, _ = write_cifar(src, D.CIFAR10)
    archive = www / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / D.CIFAR10.base_folder, arcname=D.CIFAR10.base_folder)
    dl = type("CIFAR10", (cls,), {"url": url + "cifar-10-python.tar.gz", "tgz_md5": md5(archive)})
    ds = dl(tmp_path / "root", download=True)
    assert len(ds) == 5 * 4


def test_archives_cannot_escape_their_folder(tmp_path):
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        data = b"x"
        info = tarfile.TarInfo("../outside.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (tmp_path / "out").mkdir()
    with pytest.raises(RuntimeError, match="outside"):
        U.extract_archive(str(evil), str(tmp_path / "out"))
    assert not (tmp_path / "outside.txt").exists()
    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("../../zipped.txt", "x")
    with pytest.raises(RuntimeError, match="outside"):
        U.extract_archive(str(z), str(tmp_path / "out"))
    with pytest.raises(RuntimeError, match="Unsupported archive"):
        U.extract_archive(str(tmp_path / "x.rar"))


def test_integrity_helpers(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"hello")
    assert U.calculate_md5(str(p)) == hashlib.md5(b"hello").hexdigest()
    assert U.check_integrity(str(p), hashlib.md5(b"hello").hexdigest())
    assert not U.check_integrity(str(p), "0" * 32) and not U.check_integrity(str(tmp_path / "no"))
    g = tmp_path / "f.gz"
    with gzip.open(g, "wb") as f:
        f.write(b"inner")
    out = U.extract_archive(str(g))
    assert open(out, "rb").read() == b"inner"


def test_cifar_batch_of_the_wrong_kind_is_refused(tmp_path):
    cls, _, _ = write_cifar(tmp_path, D.CIFAR10)
    path = os.path.join(tmp_path, cls.base_folder, "data_batch_1")
    for bad in ({b"data": np.zeros((4, 3072), np.float32), b"labels": [0] * 4},
                {b"data": np.zeros((4, 1000), np.uint8), b"labels": [0] * 4},
                {b"data": np.zeros((4, 3072), np.uint8), b"labels": [0] * 3},
                {b"labels": [0] * 4}):
        with open(path, "wb") as f:
            pickle.dump(bad, f, protocol=2)
        sub = type("CIFAR10", (cls,), {"train_list": [["data_batch_1", md5(path)]] + cls.train_list[1:]})
        with pytest.raises(RuntimeError, match="data_batch_1"):
            sub(tmp_path)
