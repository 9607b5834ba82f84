"""torchlite.save / torchlite.load: PyTorch's checkpoint format both ways, loading safety
(restricted unpickler, sizes checked before allocation), corrupt files, map_location, mmap,
the legacy format, and safetensors.

Reading torch's files is tested without torch through tests/fixtures (written by
tests/fixtures/make_torch_fixtures.py); the tests that need torch itself skip without it."""
import io
import json
import os
import pickle
import pickletools
import struct
import subprocess
import sys
import zipfile
from collections import Counter, OrderedDict, namedtuple

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import torchlite as tl
from torchlite.serialization import load, save

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
LOAD_ERRORS = (RuntimeError, pickle.UnpicklingError, ValueError)
DTYPES = [tl.bool, tl.uint8, tl.int8, tl.int16, tl.int32, tl.int64, tl.float16, tl.bfloat16,
          tl.float32, tl.float64]


# -----------------------------------------------------------------------------------------
# helpers
# -----------------------------------------------------------------------------------------
def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf, **load_kwargs)


def values(t):
    """t's elements as a NumPy array (bfloat16 as its uint16 bits)."""
    t = t.detach()
    if t.dtype is tl.bfloat16:
        return t.view(tl.int16).numpy().view(np.uint16)
    return t.numpy()


def sample(dtype, shape=(2, 3), seed=0):
    rng = np.random.default_rng(seed)
    # np.array: a 0-d result would otherwise be a NumPy scalar, not an array
    if dtype is tl.bool:
        return tl.from_numpy(np.array(rng.random(shape) > 0.5))
    if dtype.is_floating_point:
        return tl.from_numpy(np.array(rng.standard_normal(shape), np.float32)).to(dtype)
    info = np.iinfo(dtype.name)
    return tl.from_numpy(np.array(rng.integers(info.min, info.max, size=shape,
                                               dtype=dtype.name, endpoint=True)))


def assert_same(a, b, storages=None):
    """a and b are the same object tree; tensors equal in dtype, shape, stride, offset,
    values, requires_grad and type; tensors sharing a storage in `a` share it in `b`."""
    storages = {} if storages is None else storages
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, tl.Tensor):
        assert a.dtype is b.dtype
        assert a.shape == b.shape and a.stride() == b.stride()
        assert a.storage_offset() == b.storage_offset()
        assert a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(values(a), values(b))
        if a.numel():
            pa, pb = a.untyped_storage().data_ptr(), b.untyped_storage().data_ptr()
            assert storages.setdefault(("a", pa), pb) == pb
            assert storages.setdefault(("b", pb), pa) == pa
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k], storages)
        assert getattr(a, "__dict__", {}) == getattr(b, "__dict__", {})
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y, storages)
    elif isinstance(a, float) and a != a:
        assert b != b
    else:
        assert a == b


class Pk:
    """Pickle opcodes by hand, to craft checkpoints a pickler would never write."""

    @staticmethod
    def glob(module, name):
        return b"c" + f"{module}\n{name}\n".encode()

    @staticmethod
    def str(s):
        b = s.encode()
        return b"X" + struct.pack("<I", len(b)) + b

    @staticmethod
    def int(i):
        if -2 ** 31 <= i < 2 ** 31:
            return b"J" + struct.pack("<i", i)
        enc = pickle.encode_long(i)
        if len(enc) < 256:
            return b"\x8a" + bytes([len(enc)]) + enc              # LONG1
        return b"\x8b" + struct.pack("<i", len(enc)) + enc        # LONG4

    @staticmethod
    def tuple(*items):
        return b"(" + b"".join(items) + b"t"

    @classmethod
    def obj(cls, x):
        if isinstance(x, bytes):
            return x
        if isinstance(x, bool):
            return b"\x88" if x else b"\x89"
        if isinstance(x, int):
            return cls.int(x)
        if isinstance(x, float):
            return b"G" + struct.pack(">d", x)
        if isinstance(x, str):
            return cls.str(x)
        if isinstance(x, tuple):
            return cls.tuple(*[cls.obj(v) for v in x])
        raise TypeError(x)

    @classmethod
    def storage(cls, key="0", numel=4, storage_type="FloatStorage", location="cpu"):
        return cls.tuple(cls.str("storage"), cls.glob("torch", storage_type), cls.str(key),
                         cls.str(location), cls.int(numel)) + b"Q"

    @classmethod
    def tensor(cls, size=(4,), stride=(1,), offset=0, requires_grad=False, extra=(),
               **storage):
        args = [cls.storage(**storage), cls.obj(offset), cls.obj(tuple(size)),
                cls.obj(tuple(stride)), cls.obj(requires_grad),
                cls.glob("collections", "OrderedDict") + b")R"] + [cls.obj(e) for e in extra]
        return cls.glob("torch._utils", "_rebuild_tensor_v2") + cls.tuple(*args) + b"R"

    @staticmethod
    def program(body):
        return b"\x80\x02" + body + b"."


def checkpoint(pickled, records=None):
    """A zip checkpoint with this data.pkl and these data/<key> records."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", pickled)
        zf.writestr("archive/byteorder", sys.byteorder)
        for key, data in (records or {}).items():
            zf.writestr(f"archive/data/{key}", data)
        zf.writestr("archive/version", "3\n")
    buf.seek(0)
    return buf


FLOATS4 = np.arange(4, dtype=np.float32).tobytes()


def saved_bytes(obj):
    buf = io.BytesIO()
    save(obj, buf)
    return buf.getvalue()


# -----------------------------------------------------------------------------------------
# reading torch's files (committed fixtures: no torch needed)
# -----------------------------------------------------------------------------------------
with open(os.path.join(FIXTURES, "expected.json")) as _fh:
    EXPECTED = json.load(_fh)["fixtures"]
ARRAYS = np.load(os.path.join(FIXTURES, "expected.npz"))


def check_description(obj, desc, storages):
    """obj (loaded by torchlite) matches desc (what torch.load gave, expected.json)."""
    (kind, content), = [(k, v) for k, v in desc.items() if k not in ("class", "metadata")]
    if kind == "tensor":
        assert isinstance(obj, tl.Tensor)
        assert obj.dtype.name == content["dtype"]
        assert list(obj.shape) == content["shape"] and list(obj.stride()) == content["stride"]
        assert obj.storage_offset() == content["storage_offset"]
        assert obj.requires_grad == content["requires_grad"]
        assert isinstance(obj, tl.nn.Parameter) == content["parameter"]
        np.testing.assert_array_equal(values(obj), ARRAYS[content["values"]])
        # the same storage in torch <-> the same storage here
        ptr = obj.untyped_storage().data_ptr()
        assert storages.setdefault(("torch", content["storage"]), ptr) == ptr
        assert storages.setdefault(("torchlite", ptr), content["storage"]) == content["storage"]
    elif kind == "dict":
        assert type(obj).__name__ == desc["class"]
        assert len(obj) == len(content)
        for (kdesc, vdesc), (k, v) in zip(content, obj.items()):
            check_description(k, kdesc, storages)
            check_description(v, vdesc, storages)
        if "metadata" in desc:
            check_description(dict(obj._metadata), desc["metadata"], storages)
    elif kind in ("list", "tuple"):
        assert type(obj).__name__ == kind and len(obj) == len(content)
        for x, d in zip(obj, content):
            check_description(x, d, storages)
    else:
        assert type(obj).__name__ == kind and obj == content


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("mode", ["default", "mmap", "weights_only_false"])
def test_reads_torch_fixtures(name, mode):
    kwargs = {"mmap": {"mmap": True}, "weights_only_false": {"weights_only": False}}.get(
        mode, {})
    path = os.path.join(FIXTURES, name + ".pt")
    if mode == "mmap" and name == "legacy_format":
        with pytest.raises(RuntimeError, match="mmap can only be used"):
            load(path, **kwargs)
        return
    obj = load(path, **kwargs)
    check_description(obj, EXPECTED[name], {})


def test_torch_fixture_views_share_memory():
    obj = load(os.path.join(FIXTURES, "shared_views.pt"))
    base, row, col, tr = obj["base"], obj["row"], obj["column"], obj["transposed"]
    assert row.data_ptr() == base.data_ptr() + 6 * 4
    row[2] = -1.0                          # base[1, 2]
    assert base[1, 2].item() == -1.0 and col[1].item() == -1.0 and tr[2, 1].item() == -1.0
    assert obj["same_view_twice"][0] is obj["same_view_twice"][1] is row


def test_torch_fixture_state_dict_loads_into_a_torchlite_model():
    sd = load(os.path.join(FIXTURES, "sequential_state_dict.pt"))
    assert sd["1.num_batches_tracked"].dtype is tl.int64
    assert sd["1.num_batches_tracked"].item() == 1
    assert sd._metadata["1"] == {"version": 2}
    model = tl.nn.Sequential(tl.nn.Linear(4, 3), tl.nn.BatchNorm1d(3))
    model.load_state_dict(sd)
    np.testing.assert_array_equal(model[1].running_var.numpy(), sd["1.running_var"].numpy())


def test_torch_fixture_optimizer_state():
    state = load(os.path.join(FIXTURES, "adam_state.pt"))
    assert sorted(state["state"]) == [0, 1]
    group, = state["param_groups"]
    assert group["params"] == [0, 1] and group["betas"] == (0.9, 0.999)
    assert state["state"][0]["step"].item() == 2.0


# -----------------------------------------------------------------------------------------
# round trips through torchlite
# -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_roundtrip_every_dtype(dtype):
    obj = {"x": sample(dtype), "scalar": sample(dtype, ()), "empty": sample(dtype, (0, 3)),
           "empty_last": sample(dtype, (3, 0)), "view": sample(dtype, (4, 5)).t()[1:, ::2]}
    assert_same(obj, roundtrip(obj))


def test_roundtrip_special_float_values():
    x = tl.tensor([float("inf"), float("-inf"), float("nan"), -0.0, 1e-45])
    for dtype in (tl.float16, tl.bfloat16, tl.float32, tl.float64):
        y = x.to(dtype)
        np.testing.assert_array_equal(values(roundtrip(y)), values(y))


def test_views_keep_strides_offset_and_the_whole_storage():
    base = tl.arange(30.0).reshape(5, 6)
    views = {"slice": base[1:3], "step": base[::2, 1::2], "t": base.t(), "row": base[4],
             "expanded": tl.arange(3.0).expand(4, 3), "offset_scalar": base[2, 3]}
    loaded = roundtrip(views)
    assert_same(views, loaded)
    assert loaded["expanded"].stride() == (0, 1)
    assert loaded["row"].storage_offset() == 24
    # the whole storage goes to the file (as torch does): 30 floats for every view of base
    zf = zipfile.ZipFile(io.BytesIO(saved_bytes({"row": base[4]})))
    assert zf.getinfo("archive/data/0").file_size == 30 * 4


def test_views_of_one_storage_share_memory_after_loading():
    base = tl.arange(12.0).reshape(3, 4)
    a, b = base[1], base[:, 2]
    la, lb, lbase = roundtrip([a, b, base])
    assert la.data_ptr() == lbase.data_ptr() + 4 * 4
    assert lb.data_ptr() == lbase.data_ptr() + 2 * 4
    la.fill_(-7.0)                                 # writes base[1, :]
    assert lb[1].item() == -7.0 and lbase[1, 0].item() == -7.0
    assert lbase[0, 0].item() == 0.0
    zf = zipfile.ZipFile(io.BytesIO(saved_bytes([a, b, base])))
    assert [n for n in zf.namelist() if "/data/" in n] == ["archive/data/0"]


def test_tensor_data_alias_is_one_storage():
    x = tl.arange(4.0)
    lx, ldata = roundtrip([x, x.data])
    assert lx.data_ptr() == ldata.data_ptr()


def test_same_tensor_twice_loads_as_one_object():
    x = tl.ones(3)
    a, b = roundtrip([x, x])
    assert a is b


def test_roundtrip_nested_containers_and_scalars():
    obj = {"ints": [0, -1, 2 ** 31, -2 ** 63, 2 ** 70], "floats": (0.5, -1e300, float("inf"),
                                                                    float("nan")),
           "strings": ["", "é ü 漢", "a" * 300], "none": None, "bools": (True, False),
           "bytes": b"\x00\xffabc", "nested": {"a": [{"b": ({"c": tl.ones(2)},)}]},
           "set": {1, 2, 3}, "frozenset": frozenset({"x"}), "complex": 1 + 2j,
           "bytearray": bytearray(b"xy"), "counter": Counter("aab"), 7: "int key",
           (1, 2): "tuple key", "size": tl.Size([2, 3]), "dtype": tl.bfloat16,
           "device": tl.device("cpu")}
    assert_same(obj, roundtrip(obj))


def test_roundtrip_state_dict_metadata():
    sd = OrderedDict([("w", tl.ones(2, 2)), ("b", tl.zeros(2))])
    sd._metadata = OrderedDict([("", {"version": 1}), ("0", {"version": 2})])
    loaded = roundtrip(sd)
    assert type(loaded) is OrderedDict and list(loaded) == ["w", "b"]
    assert loaded._metadata == sd._metadata


def test_roundtrip_optimizer_style_state():
    state = {"state": {0: {"step": tl.tensor(2.0), "exp_avg": tl.randn(2, 3)},
                       1: {"step": tl.tensor(2.0), "exp_avg": tl.randn(3)}},
             "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                               "weight_decay": 0, "amsgrad": False, "foreach": None,
                               "params": [0, 1]}]}
    assert_same(state, roundtrip(state))


def test_roundtrip_parameters_and_requires_grad():
    p = tl.nn.Parameter(tl.randn(3))
    frozen = tl.nn.Parameter(tl.randn(2), requires_grad=False)
    tagged = tl.nn.Parameter(tl.randn(2))
    tagged.note = "kept"
    x = tl.randn(2).requires_grad_()
    lp, lfrozen, ltagged, lx, lbase = roundtrip([p, frozen, tagged, x, p.detach()[1:]])
    assert type(lp) is tl.nn.Parameter and lp.requires_grad
    assert type(lfrozen) is tl.nn.Parameter and not lfrozen.requires_grad
    assert ltagged.note == "kept"
    assert type(lx) is tl.Tensor and lx.requires_grad and lx.is_leaf
    assert lbase.data_ptr() == lp.data_ptr() + 4        # a view of the parameter's storage
    np.testing.assert_array_equal(lp.detach().numpy(), p.detach().numpy())


def test_paths_files_and_unseekable_writers(tmp_path):
    obj = {"x": tl.arange(5), "v": tl.arange(6.0).reshape(2, 3).t()}
    for target in (str(tmp_path / "a.pt"), tmp_path / "b.pt"):
        save(obj, target)
        assert_same(obj, load(target))
    with open(tmp_path / "c.pt", "wb") as fh:
        save(obj, fh)
    with open(tmp_path / "c.pt", "rb") as fh:
        assert_same(obj, load(fh))

    class Unseekable(io.RawIOBase):
        def __init__(self):
            self.chunks = []

        def writable(self):
            return True

        def write(self, b):
            self.chunks.append(bytes(b))
            return len(b)

    out = Unseekable()
    save(obj, out)
    assert_same(obj, load(io.BytesIO(b"".join(out.chunks))))
    # a checkpoint written after other data in the same file
    for fmt in ("zip", "legacy"):
        buf = io.BytesIO(b"some header")
        buf.seek(0, io.SEEK_END)
        if fmt == "zip":
            save(obj, buf)
        else:
            with open(os.path.join(FIXTURES, "legacy_format.pt"), "rb") as fh:
                buf.write(fh.read())
        buf.seek(len(b"some header"))
        loaded = load(buf)
        if fmt == "zip":
            assert_same(obj, loaded)
        else:
            check_description(loaded, EXPECTED["legacy_format"], {})


@pytest.mark.parametrize("protocol", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("weights_only", [True, False])
def test_pickle_protocols(protocol, weights_only):
    obj = {"x": tl.arange(6.0).reshape(2, 3)[:, 1:], "p": tl.nn.Parameter(tl.ones(2)),
           "misc": [b"by", {1, 2}, frozenset([3]), 2 ** 80, 2 ** 3000, "s", 1.5, None,
                    tl.int16, bytearray(b"ba"), (), {}]}
    buf = io.BytesIO()
    save(obj, buf, pickle_protocol=protocol)
    buf.seek(0)
    assert_same(obj, load(buf, weights_only=weights_only))


Point = namedtuple("Point", "x y")


def test_weights_only_false_loads_other_objects_weights_only_true_refuses():
    obj = {"point": Point(1, tl.ones(2))}
    data = saved_bytes(obj)
    loaded = load(io.BytesIO(data), weights_only=False)
    assert isinstance(loaded["point"], Point) and loaded["point"].x == 1
    with pytest.raises(pickle.UnpicklingError, match="test_serialization.Point"):
        load(io.BytesIO(data))


def test_save_errors(tmp_path):
    x = tl.arange(4, dtype=tl.int32)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        save([x, x.view(tl.float32)], io.BytesIO())
    with pytest.raises(ValueError, match="pickle_protocol"):
        save(x, io.BytesIO(), pickle_protocol=0)
    with pytest.raises(TypeError, match="pickle_protocol"):
        save(x, io.BytesIO(), pickle_protocol="2")
    with pytest.raises(TypeError, match="path or a writable"):
        save(x, 42)
    with pytest.raises(ValueError, match="pickle_module"):
        save(x, io.BytesIO(), pickle_module=json)
    # an object that cannot be pickled leaves no file behind
    with pytest.raises((pickle.PicklingError, TypeError, AttributeError)):
        save({"f": lambda: 0}, tmp_path / "bad.pt")
    assert not (tmp_path / "bad.pt").exists()


def test_save_into_a_missing_folder_names_it(tmp_path):
    # PyTorch's message, naming the parent that is missing, and no file or folder is made
    target = tmp_path / "no" / "such" / "model.pt"
    with pytest.raises(RuntimeError, match=r"^Parent directory .*no.such does not exist\.$"):
        save({"w": tl.ones(2)}, target)
    assert not (tmp_path / "no").exists()
    save({"w": tl.ones(2)}, str(tmp_path / "model.pt"))          # an existing folder: saved
    assert (tmp_path / "model.pt").exists()


class TinyNet(tl.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = tl.nn.Linear(3, 2)


@pytest.mark.parametrize("make", [lambda: tl.nn.Linear(3, 2), TinyNet])
def test_a_pickled_whole_module_is_refused_with_the_state_dict_way(make, tmp_path):
    model = make()
    save(model, tmp_path / "whole.pt")
    with pytest.raises(pickle.UnpicklingError) as e:
        load(tmp_path / "whole.pt")
    msg = str(e.value)
    assert type(model).__name__ in msg and "nn.Module" in msg
    assert "state_dict()" in msg and "load_state_dict" in msg and "weights_only=False" in msg
    # the two ways the message offers both work
    back = load(tmp_path / "whole.pt", weights_only=False)
    assert type(back) is type(model)
    save(model.state_dict(), tmp_path / "weights.pt")
    fresh = make()
    fresh.load_state_dict(load(tmp_path / "weights.pt"))
    for a, b in zip(fresh.parameters(), model.parameters()):
        assert tl.equal(a, b)


class NotAModule:
    pass


@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize("obj", [{"a": 1}, NotAModule, np.arange(3)], ids=["dict", "class", "numpy"])
def test_a_raw_pickle_is_no_checkpoint_whatever_weights_only_says(obj, weights_only):
    # the header is read without running the pickle, and the message does not blame
    # weights_only=True when the caller passed False
    buf = io.BytesIO()
    pickle.dump(obj, buf)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="invalid magic number; the file is not a PyTorch "
                                           "checkpoint") as e:
        load(buf, weights_only=weights_only)
    assert "weights_only=True" not in str(e.value)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=0, max_size=4), st.data())
def test_roundtrip_random_views(shape, data):
    base = tl.arange(float(np.prod(shape, dtype=np.int64))).reshape(shape) if shape \
        else tl.tensor(3.0)
    view = base
    if shape:
        perm = data.draw(st.permutations(range(len(shape))))
        view = base.permute(perm)
        d = data.draw(st.integers(0, len(shape) - 1))
        step = data.draw(st.integers(1, 3))
        start = data.draw(st.integers(0, 2))
        view = view.narrow(d, min(start, view.shape[d]), max(view.shape[d] - start, 0))
        view = view[(slice(None),) * d + (slice(None, None, step),)]
    lview, lbase = roundtrip([view, base])
    assert_same([view, base], [lview, lbase])


PLAIN_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(-2 ** 600, 2 ** 600) |
    st.floats(allow_nan=False) | st.text() | st.binary() | st.binary().map(bytearray),
    lambda children: (st.lists(children) | st.tuples(children, children) |
                      st.dictionaries(st.text() | st.integers(), children) |
                      st.frozensets(st.integers() | st.text()) | st.sets(st.integers())),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(PLAIN_DATA, st.integers(0, pickle.HIGHEST_PROTOCOL))
def test_weights_only_vm_matches_pickle_on_plain_data(obj, protocol):
    # Python's own unpickler is the oracle; the object is also stored twice, so that the
    # second copy comes from the memo
    pickled = pickle.dumps([obj, obj], protocol=protocol)
    loaded = load(checkpoint(pickled))
    assert loaded == pickle.loads(pickled)
    if isinstance(obj, (list, dict, bytearray)):
        assert loaded[0] is loaded[1]


# -----------------------------------------------------------------------------------------
# the file layout
# -----------------------------------------------------------------------------------------
def record_data_offsets(raw):
    """name -> offset of the record's first byte, from each local header."""
    zf = zipfile.ZipFile(io.BytesIO(raw))
    out = {}
    for info in zf.infolist():
        name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:
                                                        info.header_offset + 30])
        out[info.filename] = info.header_offset + 30 + name_len + extra_len
    return zf, out


def test_zip_layout_matches_torch(tmp_path):
    path = tmp_path / "model.v1.pt"
    save({"w": tl.ones(3), "i": tl.arange(200), "h": tl.ones(7, dtype=tl.float16)}, path)
    raw = path.read_bytes()
    zf, offsets = record_data_offsets(raw)
    names = zf.namelist()
    assert names == ["model.v1/data.pkl", "model.v1/.format_version",
                     "model.v1/.storage_alignment", "model.v1/byteorder", "model.v1/data/0",
                     "model.v1/data/1", "model.v1/data/2", "model.v1/version",
                     "model.v1/.data/serialization_id"]
    assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
    assert all(off % 64 == 0 for off in offsets.values())
    assert zf.read("model.v1/byteorder") == b"little"
    assert zf.read("model.v1/version") == b"3\n"
    assert zf.read("model.v1/.format_version") == b"1"
    assert zf.read("model.v1/.storage_alignment") == b"64"
    sid = zf.read("model.v1/.data/serialization_id")
    assert len(sid) == 40 and sid.isdigit()
    assert raw[offsets["model.v1/data/1"]:][:16] == np.arange(2, dtype=np.int64).tobytes()
    assert zipfile.ZipFile(io.BytesIO(saved_bytes(1))).namelist()[0] == "archive/data.pkl"


def test_pickle_names_torch_globals():
    zf = zipfile.ZipFile(io.BytesIO(saved_bytes(OrderedDict(
        w=tl.ones(2), p=tl.nn.Parameter(tl.ones(1)), i=tl.ones(1, dtype=tl.int64)))))
    pickled = zf.read("archive/data.pkl")
    ops = list(pickletools.genops(pickled))
    assert ops[0][0].name == "PROTO" and ops[0][1] == 2
    globals_ = {arg for op, arg, _ in ops if op.name == "GLOBAL"}
    assert globals_ == {"collections OrderedDict", "torch._utils _rebuild_tensor_v2",
                        "torch._utils _rebuild_parameter", "torch FloatStorage",
                        "torch LongStorage"}
    assert any(op.name == "BINPERSID" for op, _, _ in ops)
    assert b"torchlite" not in pickled


def test_saving_and_loading_never_import_torch(tmp_path):
    code = ("import sys; sys.modules['torch'] = None\n"
            "import torchlite as tl\n"
            "from torchlite.serialization import save, load\n"
            f"save({{'x': tl.ones(2)}}, {str(tmp_path / 'x.pt')!r})\n"
            f"print(load({str(tmp_path / 'x.pt')!r})['x'].sum().item())\n"
            f"print(load({os.path.join(FIXTURES, 'dtypes.pt')!r})['int8'].tolist())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["2.0", "[-128, 0, 127]"]


# -----------------------------------------------------------------------------------------
# PyTorch reads torchlite's files and the other way round (skip without torch)
# -----------------------------------------------------------------------------------------
def torch_values(t):
    torch = pytest.importorskip("torch")
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def assert_matches_torch(ours, theirs, storages):
    torch = pytest.importorskip("torch")
    if isinstance(ours, tl.Tensor):
        assert isinstance(theirs, torch.Tensor)
        assert str(theirs.dtype) == "torch." + ours.dtype.name
        assert tuple(theirs.shape) == ours.shape and theirs.stride() == ours.stride()
        assert theirs.storage_offset() == ours.storage_offset()
        assert theirs.requires_grad == ours.requires_grad
        assert isinstance(theirs, torch.nn.Parameter) == isinstance(ours, tl.nn.Parameter)
        np.testing.assert_array_equal(torch_values(theirs), values(ours))
        if ours.numel():
            po, pt = ours.untyped_storage().data_ptr(), theirs.untyped_storage().data_ptr()
            assert storages.setdefault(("ours", po), pt) == pt
            assert storages.setdefault(("theirs", pt), po) == po
    elif isinstance(ours, tl.Size):
        assert tuple(theirs) == tuple(ours) and type(theirs) is torch.Size
    elif isinstance(ours, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for k in ours:
            assert_matches_torch(ours[k], theirs[k], storages)
        assert getattr(ours, "_metadata", None) == getattr(theirs, "_metadata", None)
    elif isinstance(ours, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_matches_torch(a, b, storages)
    elif isinstance(ours, tl.dtype):
        assert str(theirs) == "torch." + ours.name
    elif isinstance(ours, tl.device):
        assert str(theirs) == str(ours)
    else:
        assert ours == theirs


def interop_object():
    base = tl.arange(24.0).reshape(4, 6)
    sd = OrderedDict([("0.weight", tl.randn(3, 4)), ("0.bias", tl.randn(3)),
                      ("1.num_batches_tracked", tl.tensor(5))])
    sd._metadata = OrderedDict([("", {"version": 1}), ("1", {"version": 2})])
    return {"sd": sd, "dtypes": [sample(d, (2, 3), i) for i, d in enumerate(DTYPES)],
            "views": [base, base[1], base.t(), base[::2, 1::3], tl.ones(3).expand(2, 3)],
            "scalar": tl.tensor(1.5), "empty": tl.zeros(0, 2),
            "param": tl.nn.Parameter(tl.randn(2)), "frozen": tl.nn.Parameter(tl.randn(2), False),
            "grad": tl.ones(2).requires_grad_(), "opt": {"state": {0: {"step": tl.tensor(3.0)}},
                                                         "param_groups": [{"lr": 0.1,
                                                                           "params": [0]}]},
            "misc": [1, 2.5, "s", None, True, b"by", {1, 2}, 1 + 2j, tl.Size([2, 3]),
                     tl.float16, tl.device("cpu")]}


@pytest.mark.parametrize("mmap", [False, True])
def test_torch_reads_torchlite_files(tmp_path, mmap):
    torch = pytest.importorskip("torch")
    obj = interop_object()
    save(obj, tmp_path / "x.pt")
    theirs = torch.load(tmp_path / "x.pt", weights_only=True, mmap=mmap)
    assert_matches_torch(obj, theirs, {})
    # shared storage is shared in torch too
    base, row = theirs["views"][0], theirs["views"][1]
    row[0] = -5.0
    assert base[1, 0].item() == -5.0


def test_torchlite_reads_live_torch_files(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3),
                                torch.nn.Flatten(), torch.nn.Linear(12, 2))
    base = torch.arange(10.0)
    obj = {"sd": model.state_dict(), "views": [base, base[2:7:2]],
           "bf16": torch.randn(3).to(torch.bfloat16), "p": torch.nn.Parameter(torch.ones(2)),
           "size": torch.Size([1, 2]), "dtype": torch.int8, "dev": torch.device("cpu")}
    for protocol in (2, 4):
        torch.save(obj, tmp_path / "t.pt", pickle_protocol=protocol)
        ours = load(tmp_path / "t.pt")
        assert_matches_torch(ours, obj, {})
    torch.save(obj, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    assert_matches_torch(load(tmp_path / "legacy.pt"), obj, {})


# -----------------------------------------------------------------------------------------
# hostile files: nothing from the file runs, nothing unchecked is allocated or viewed
# -----------------------------------------------------------------------------------------
class Evil:
    def __init__(self, reduce_value):
        self.reduce_value = reduce_value

    def __reduce__(self):
        return self.reduce_value


def test_pickle_calling_os_system_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    pickled = pickle.dumps(Evil((os.system, (f"touch {marker}",))), protocol=2)
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global.*system"):
        load(checkpoint(pickled))
    assert not marker.exists()


@pytest.mark.parametrize("target", [(eval, ("1+1",)), (exec, ("x=1",)), (getattr, (1, "real")),
                                    (__import__, ("os",)), (subprocess.call, (["true"],)),
                                    (os.remove, ("/nonexistent",))])
def test_pickle_calling_builtins_is_refused(target):
    name = f"{target[0].__module__}.{target[0].__qualname__}".replace("builtins.", "")
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        try:
            load(checkpoint(pickle.dumps(Evil(target), protocol=2)))
        except pickle.UnpicklingError as e:
            assert name.split(".")[-1] in str(e)
            raise


def test_torch_globals_off_the_allow_list_are_refused_even_without_weights_only():
    pickled = Pk.program(Pk.glob("torch.nn.modules.linear", "Linear") + b")R")
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.linear.Linear"):
        load(checkpoint(pickled))
    with pytest.raises(pickle.UnpicklingError, match="torch never imports|never imports"):
        load(checkpoint(pickled), weights_only=False)
    with pytest.raises(pickle.UnpicklingError, match="no dtype torch.float8_e4m3fn"):
        load(checkpoint(Pk.program(Pk.glob("torch", "float8_e4m3fn"))))
    assert load(checkpoint(Pk.program(Pk.glob("torch", "complex32")))) is tl.complex32
    with pytest.raises(pickle.UnpicklingError, match="storage type torch.ComplexHalfStorage"):
        load(checkpoint(Pk.program(Pk.tensor(storage_type="ComplexHalfStorage"))),
             map_location="cpu")


def test_rebuild_from_type_v2():
    # torch's path for tensors with attributes and tensor subclasses
    def rebuild(new_type, state):
        return Pk.program(Pk.glob("torch._tensor", "_rebuild_from_type_v2") + b"(" +
                          Pk.glob("torch._utils", "_rebuild_tensor_v2") + new_type +
                          Pk.tensor()[len(Pk.glob("torch._utils", "_rebuild_tensor_v2")):-1] +
                          state + b"tR")
    plain = load(checkpoint(rebuild(Pk.glob("torch", "Tensor"), b"}"), {"0": FLOATS4}))
    assert type(plain) is tl.Tensor and plain.tolist() == [0.0, 1.0, 2.0, 3.0]
    param = load(checkpoint(rebuild(Pk.glob("torch.nn.parameter", "Parameter"),
                                    b"}" + Pk.str("tag") + Pk.int(5) + b"s"), {"0": FLOATS4}))
    assert type(param) is tl.nn.Parameter and param.tag == 5
    with pytest.raises(pickle.UnpicklingError, match="cannot restore attributes"):
        load(checkpoint(rebuild(Pk.glob("torch", "Tensor"), b"}" + Pk.str("tag") + b"Ns"),
                        {"0": FLOATS4}))
    evil = rebuild(Pk.glob("torch", "Tensor"), b"}").replace(
        Pk.glob("torch._utils", "_rebuild_tensor_v2"), Pk.glob("builtins", "set"), 1)
    with pytest.raises(pickle.UnpicklingError, match="unsupported function"):
        load(checkpoint(evil, {"0": FLOATS4}))


def test_allowed_constructors():
    body = b"(" + Pk.glob("torch", "Size") + Pk.tuple(Pk.tuple(Pk.int(2), Pk.int(3))) + b"R" + \
        Pk.glob("torch", "device") + Pk.tuple(Pk.str("cuda"), Pk.int(1)) + b"R" + \
        Pk.glob("collections", "Counter") + b"(}" + Pk.str("a") + Pk.int(2) + b"stR" + \
        Pk.glob("builtins", "complex") + Pk.tuple(Pk.int(1), Pk.int(2)) + b"R" + b"l"
    size, dev, counter, z = load(checkpoint(Pk.program(body)))
    assert type(size) is tl.Size and size == (2, 3)
    assert dev == tl.device("cuda", 1)
    assert type(counter) is Counter and counter == Counter("aa") and z == 1 + 2j
    with pytest.raises(pickle.UnpicklingError, match="torch.Size takes a tuple of ints"):
        load(checkpoint(Pk.program(Pk.glob("torch", "Size") + Pk.tuple(Pk.tuple(Pk.str("x")))
                                   + b"R")))


def test_build_cannot_change_allowed_objects():
    # BUILD (None, {'code': 99}) on the float32 dtype singleton
    state = b"N" + b"}" + Pk.str("itemsize") + Pk.int(99) + b"s" + b"\x86"
    with pytest.raises(pickle.UnpicklingError, match="can only restore the state"):
        load(checkpoint(Pk.program(Pk.glob("torch", "float32") + state + b"b")))
    assert tl.float32.itemsize == 4
    # BUILD planting a special method on an OrderedDict
    planted = Pk.glob("collections", "OrderedDict") + b")R" + b"}" + Pk.str("__reduce_ex__") + \
        Pk.glob("builtins", "set") + b"sb"
    with pytest.raises(pickle.UnpicklingError, match="__reduce_ex__"):
        load(checkpoint(Pk.program(planted)))
    # BUILD on a tensor with slot state
    tensor_build = Pk.tensor() + b"N}" + Pk.str("_data") + Pk.int(1) + b"s\x86b"
    with pytest.raises(pickle.UnpicklingError, match="can only restore the state"):
        load(checkpoint(Pk.program(tensor_build), {"0": FLOATS4}))


@pytest.mark.parametrize("body, match", [
    (Pk.glob("torch", "Tensor") + Pk.tuple(Pk.int(10 ** 12)) + b"R", "not an allowed function"),
    (Pk.glob("builtins", "bytearray") + Pk.tuple(Pk.int(10 ** 12)) + b"R", "bytearray"),
    (Pk.glob("builtins", "bytes") + Pk.tuple(Pk.int(10 ** 12)) + b"R", "bytes is only"),
    (Pk.glob("_codecs", "encode") + Pk.tuple(Pk.str("x"), Pk.str("utf-16")) + b"R", "_codecs"),
    (Pk.glob("collections", "OrderedDict") + b")\x81", "cannot create a new"),
    (b"i" + b"os\nsystem\n", "opcode INST"),
    (b"\x82\x01", "opcode EXT1"),
    (b"(" + Pk.str("x") + b"o", "opcode OBJ"),
    (Pk.tuple(Pk.str("module"), Pk.str("x")) + b"Q", "Only persistent_load of storage"),
    (Pk.str("x") + b"Q", "persistent id must be"),
    (Pk.tuple(Pk.str("storage"), Pk.glob("torch", "float32"), Pk.str("0"), Pk.str("cpu"),
              Pk.int(1)) + b"Q", "unsupported storage type"),
    (b"}" + b"]" + b"a", "APPEND on a dict"),
    (b"]" + Pk.int(1) + Pk.int(2) + b"s", "SETITEM on a list"),
    (b"\x80\x07", "unsupported pickle protocol"),
    (b"Z", "unknown opcode"),
    (b"(" + Pk.int(1), "unbalanced stack"),
    (Pk.str("abc")[:6], "truncated"),
    (b"h\x05", "corrupt pickle data"),
])
def test_hostile_or_broken_pickles(body, match):
    with pytest.raises(pickle.UnpicklingError, match=match):
        load(checkpoint(b"\x80\x02" + body + b"."), map_location="cpu")


def test_copying_constructors_have_a_budget():
    # one 20000-element list (memo 0), then set(list) over and over, each set appended to a
    # list that keeps it alive: quadratic memory from a small file
    call = Pk.glob("builtins", "set") + b"h\x00\x85R" + b"a"
    pickled = b"\x80\x02" + b"]" + b"(" + b"K\x01" * 20000 + b"e" + b"q\x00" + b"0" + b"]" + \
        call * 2000 + b"."
    with pytest.raises(pickle.UnpicklingError, match="copies more than"):
        load(checkpoint(pickled))


@pytest.mark.parametrize("kwargs, match", [
    ({"size": (-1,), "stride": (1,)}, "negative"),
    ({"size": (2,), "stride": (-1,)}, "negative"),
    ({"offset": -1}, "negative"),
    ({"size": (2 ** 63,), "stride": (1,)}, "int64 range"),
    ({"size": (2 ** 31, 2 ** 32), "stride": (0, 0)}, "more than 2\\*\\*62"),
    ({"size": (2 ** 61,), "stride": (1,)}, "reach"),
    ({"size": (2, 2), "stride": (2 ** 62, 1)}, "reach"),
    ({"size": (2 ** 40, 2 ** 40), "stride": (0, 0)}, "more than 2\\*\\*62"),
    ({"size": (5,), "stride": (1,)}, "reach 20 bytes"),
    ({"size": (2,), "stride": (1,), "offset": 3}, "reach"),
    ({"size": (2,), "stride": (4,)}, "reach 20 bytes"),
    ({"size": (2, 2), "stride": (1,)}, "differ in length"),
    ({"size": (1,) * 17, "stride": (1,) * 17}, "dimensions"),
    ({"size": (2.0,)}, "must be an int"),
    ({"size": ("2",)}, "must be an int"),
    ({"size": (True,)}, "must be an int"),
    ({"offset": 2 ** 62}, "reach"),
    ({"offset": 2 ** 62, "size": (0,)}, "too large"),
    ({"offset": 2 ** 70}, "int64 range"),
    ({"size": (2 ** 800000,)}, "int64 range"),
    ({"requires_grad": 1}, "requires_grad must be a bool"),
    ({"extra": ({"neg": True},)}, "metadata"),
])
def test_hostile_tensor_metadata(kwargs, match):
    extra = kwargs.pop("extra", ())
    body = Pk.tensor(extra=(), **kwargs)
    if extra:
        body = body[:-2] + b"}" + Pk.str("neg") + b"\x88s" + b"tR"
    with pytest.raises(RuntimeError, match=match):
        load(checkpoint(Pk.program(body), {"0": FLOATS4}))


def test_requires_grad_on_an_integer_tensor_is_refused():
    body = Pk.tensor(storage_type="LongStorage", numel=1, requires_grad=True, size=(1,))
    with pytest.raises(RuntimeError, match="floating point"):
        load(checkpoint(Pk.program(body), {"0": b"\x00" * 8}))


@pytest.mark.parametrize("numel, record, match", [
    (5, FLOATS4, "declares 5 elements"),           # the record is shorter than declared
    (2 ** 60, FLOATS4, "declares"),                 # absurd: refused before any allocation
    (2 ** 62 + 1, b"", "declares"),
    (4, None, "no data for storage"),
])
def test_storage_sizes_are_checked_against_the_record(numel, record, match):
    records = {} if record is None else {"0": record}
    with pytest.raises(RuntimeError, match=match):
        load(checkpoint(Pk.program(Pk.tensor(numel=numel, size=(1,))), records))


def test_invalid_storage_numel_and_key():
    for storage in ({"numel": -1}, {"key": 0}):
        body = Pk.tensor(**storage) if "key" not in storage else Pk.tensor().replace(
            Pk.str("0"), Pk.int(0), 1)
        with pytest.raises(pickle.UnpicklingError, match="invalid storage id"):
            load(checkpoint(Pk.program(body), {"0": FLOATS4}))


def test_bool_storage_bytes_are_normalized():
    body = Pk.tensor(storage_type="BoolStorage", numel=4, size=(4,))
    t = load(checkpoint(Pk.program(body), {"0": bytes([0, 1, 2, 255])}))
    assert t.tolist() == [False, True, True, True]
    assert t.view(tl.uint8).tolist() == [0, 1, 1, 1]
    assert t.sum().item() == 3


def test_storage_reused_with_another_dtype_stays_in_bounds():
    # one 16-byte record referenced as 4 floats and as 2 doubles: both views fit
    body = b"(" + Pk.tensor() + Pk.tensor(storage_type="DoubleStorage", numel=2, size=(2,)) + \
        b"l"
    a, b = load(checkpoint(Pk.program(body), {"0": FLOATS4}))
    assert a.data_ptr() == b.data_ptr() and b.dtype is tl.float64
    body = Pk.tensor(storage_type="DoubleStorage", numel=3, size=(3,))
    with pytest.raises(RuntimeError, match="declares 3 elements"):
        load(checkpoint(Pk.program(body), {"0": FLOATS4}))


# -----------------------------------------------------------------------------------------
# corrupt and truncated files
# -----------------------------------------------------------------------------------------
def small_checkpoint():
    base = tl.arange(6.0).reshape(2, 3)
    return {"a": base, "b": base[1], "c": tl.tensor([1, 2], dtype=tl.int64),
            "d": [1.5, "x"]}


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_truncated_files(fmt):
    if fmt == "zip":
        raw = saved_bytes(small_checkpoint())
    else:
        with open(os.path.join(FIXTURES, "legacy_format.pt"), "rb") as fh:
            raw = fh.read()
    cuts = sorted(set(range(0, len(raw), max(1, len(raw) // 60))) | {1, 4, 30, len(raw) - 1,
                                                                      len(raw) - 22})
    for cut in cuts:
        with pytest.raises(LOAD_ERRORS):
            load(io.BytesIO(raw[:cut]))


def test_every_flipped_byte_fails_cleanly_or_changes_nothing():
    obj = small_checkpoint()
    raw = saved_bytes(obj)
    zf, offsets = record_data_offsets(raw)
    # every byte of the pickle and of the storages is covered by a CRC-32
    checked = {i for info in zf.infolist() if info.filename.split("/")[1] in ("data.pkl", "data")
               for i in range(offsets[info.filename], offsets[info.filename] + info.file_size)}
    assert len(checked) > 300
    for i in range(len(raw)):
        bad = bytearray(raw)
        bad[i] ^= 0xFF
        try:
            loaded = load(io.BytesIO(bytes(bad)))
        except LOAD_ERRORS:
            continue
        assert i not in checked
        assert_same(obj, loaded)            # a byte no reader looks at (padding, dates...)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1,
                max_size=8))
def test_random_corruption_fails_cleanly_or_changes_nothing(edits):
    obj = small_checkpoint()
    raw = bytearray(saved_bytes(obj))
    for pos, value in edits:
        raw[pos % len(raw)] = value
    try:
        loaded = load(io.BytesIO(bytes(raw)))
    except LOAD_ERRORS:
        return
    assert_same(obj, loaded)


def legacy_checkpoint(keys=("0",), counts=(4,), numel=4, view=None, magic=None):
    """A legacy-format file holding one float tensor over storage '0'."""
    body = Pk.tensor(numel=numel)
    if view is not None:       # the sixth entry of the legacy persistent id
        body = body.replace(b"tQ", view + b"tQ", 1)
    else:
        body = body.replace(b"tQ", b"NtQ", 1)
    out = pickle.dumps(0x1950a86a20f9469cfc6c if magic is None else magic, protocol=2)
    out += pickle.dumps(1001, protocol=2)
    out += pickle.dumps({"protocol_version": 1001, "little_endian": True}, protocol=2)
    out += Pk.program(body) + pickle.dumps(list(keys), protocol=2)
    for count in counts:
        out += struct.pack("<q", count) + FLOATS4
    return io.BytesIO(out)


def test_legacy_format_checks():
    assert load(legacy_checkpoint()).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="do not fill"):
        load(legacy_checkpoint(counts=(3,)))
    with pytest.raises(RuntimeError, match="keys does not match"):
        load(legacy_checkpoint(keys=("1",)))
    with pytest.raises(RuntimeError, match="more than the file holds"):
        load(legacy_checkpoint(numel=2 ** 40))
    with pytest.raises(pickle.UnpicklingError, match="storage views"):
        load(legacy_checkpoint(view=Pk.tuple(Pk.str("0"), Pk.int(0), Pk.int(4))))
    with pytest.raises(RuntimeError, match="magic number"):
        load(legacy_checkpoint(magic=12345))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1,
                max_size=6))
def test_mutated_pickles_fail_cleanly(edits):
    # the pickle itself is damaged (its record's CRC is right): the VM must refuse it cleanly
    obj = small_checkpoint()
    zf = zipfile.ZipFile(io.BytesIO(saved_bytes(obj)))
    pickled = bytearray(zf.read("archive/data.pkl"))
    for pos, value in edits:
        pickled[pos % len(pickled)] = value
    records = {n.split("/")[-1]: zf.read(n) for n in zf.namelist() if "/data/" in n}
    try:
        load(checkpoint(bytes(pickled), records))
    except LOAD_ERRORS:
        pass


@pytest.mark.parametrize("raw, match", [
    (b"", "empty"),
    (b"garbage that is no checkpoint", "not a PyTorch checkpoint"),
    (b"PK\x03\x04" + b"\x00" * 100, "zip structure"),
    (b"\x80\x02K\x01.", "magic number"),
])
def test_not_a_checkpoint(raw, match):
    with pytest.raises(RuntimeError, match=match):
        load(io.BytesIO(raw))


def test_compressed_and_incomplete_archives():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("archive/data.pkl", pickle.dumps(1, protocol=2))
    with pytest.raises(RuntimeError, match="compressed"):
        load(io.BytesIO(buf.getvalue()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/version", "3\n")
    with pytest.raises(RuntimeError, match="no record data.pkl"):
        load(io.BytesIO(buf.getvalue()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("data.pkl", pickle.dumps(1, protocol=2))
    with pytest.raises(RuntimeError, match="not in the archive's folder"):
        load(io.BytesIO(buf.getvalue()))


def test_big_endian_checkpoints_are_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", pickle.dumps(1, protocol=2))
        zf.writestr("archive/byteorder", "big")
    with pytest.raises(RuntimeError, match="big-endian"):
        load(io.BytesIO(buf.getvalue()))


# -----------------------------------------------------------------------------------------
# map_location, mmap, arguments
# -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("map_location", [None, "cpu", tl.device("cpu"), {"cpu": "cpu"},
                                          lambda s, loc: s, lambda s, loc: None,
                                          lambda s, loc: s.clone()])
def test_map_location_to_cpu(map_location):
    obj = small_checkpoint()
    loaded = roundtrip(obj, map_location=map_location)
    assert_same(obj, loaded)


def cuda_available():
    try:
        from torchlite import cuda
    except ImportError:
        return False
    return cuda.is_available()


@pytest.mark.skipif(cuda_available(), reason="needs a machine without CUDA")
def test_cuda_locations_without_cuda():
    cuda_file = Pk.program(Pk.tensor(location="cuda:0"))
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        load(checkpoint(cuda_file, {"0": FLOATS4}))
    with pytest.raises(RuntimeError, match="CUDA device"):
        roundtrip(tl.ones(2), map_location="cuda")
    for ok in ("cpu", {"cuda:0": "cpu"}, lambda s, loc: s):
        t = load(checkpoint(cuda_file, {"0": FLOATS4}), map_location=ok)
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0] and t.device.type == "cpu"
    with pytest.raises(RuntimeError, match="tagged with mps"):
        load(checkpoint(Pk.program(Pk.tensor(location="mps")), {"0": FLOATS4}))


def test_bad_map_location():
    with pytest.raises(TypeError, match="map_location"):
        roundtrip(tl.ones(2), map_location=3)
    with pytest.raises(RuntimeError, match="map_location returned"):
        roundtrip(tl.ones(2), map_location=lambda s, loc: 5)


def test_mmap_is_copy_on_write(tmp_path):
    path = tmp_path / "m.pt"
    obj = small_checkpoint()
    save(obj, path)
    before = path.read_bytes()
    loaded = load(path, mmap=True)
    assert_same(obj, loaded)
    loaded["b"].fill_(42.0)
    assert loaded["a"][1, 0].item() == 42.0
    assert path.read_bytes() == before
    with pytest.raises(ValueError, match="file path"):
        load(io.BytesIO(before), mmap=True)


def test_load_arguments():
    data = saved_bytes(tl.ones(2))
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        load(io.BytesIO(data), pickle_module=pickle, weights_only=True)
    # as torch.load: a pickle_module makes the default weights_only False
    assert load(io.BytesIO(data), pickle_module=pickle).tolist() == [1, 1]
    assert load(io.BytesIO(data), pickle_module=pickle, weights_only=False).tolist() == [1, 1]
    with pytest.raises(TypeError, match="unexpected arguments"):
        load(io.BytesIO(data), fix_imports=False)
    with pytest.raises(TypeError, match="path or a readable"):
        load(42)

    class Unseekable(io.BytesIO):
        def seekable(self):
            return False

    with pytest.raises(io.UnsupportedOperation, match="seekable"):
        load(Unseekable(data))
    # Python 2 strings decode with `encoding` (utf-8 by default, as torch.load)
    py2 = checkpoint(b"\x80\x02U\x03\xc3\xa9x.")
    assert load(py2) == "éx"
    py2.seek(0)
    assert load(py2, encoding="bytes") == b"\xc3\xa9x"


# -----------------------------------------------------------------------------------------
# safetensors
# -----------------------------------------------------------------------------------------
def test_safetensors_roundtrip(tmp_path):
    pytest.importorskip("safetensors")
    from torchlite.serialization import load_safetensors, save_safetensors
    tensors = {d.name: sample(d, (2, 3), i) for i, d in enumerate(DTYPES)}
    tensors["view"] = tl.arange(12.0).reshape(3, 4).t()[1:]
    tensors["scalar"] = tl.tensor(3.0)
    tensors["empty"] = tl.zeros(0, 4)
    path = tmp_path / "x.safetensors"
    save_safetensors(tensors, path, metadata={"format": "pt"})
    loaded = load_safetensors(path)
    assert sorted(loaded) == sorted(tensors)
    for name, t in tensors.items():
        assert loaded[name].dtype is t.dtype and loaded[name].shape == t.shape
        assert loaded[name].is_contiguous()
        np.testing.assert_array_equal(values(loaded[name]), values(t))
    from safetensors import safe_open
    with safe_open(str(path), framework="np") as fh:
        assert fh.metadata() == {"format": "pt"}
    with pytest.raises(TypeError, match="not a tensor"):
        save_safetensors({"a": 1}, path)
    with pytest.raises(TypeError, match="metadata"):
        save_safetensors({"a": tl.ones(1)}, path, metadata={"a": 1})


def test_safetensors_interop_with_torch(tmp_path):
    pytest.importorskip("safetensors")
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file
    from torchlite.serialization import load_safetensors, save_safetensors
    ours = {"bf16": sample(tl.bfloat16, (3,)), "b": sample(tl.bool, (2, 2)),
            "f": sample(tl.float32, (2,))}
    save_safetensors(ours, tmp_path / "ours.safetensors")
    theirs = load_file(str(tmp_path / "ours.safetensors"))
    for k in ours:
        np.testing.assert_array_equal(torch_values(theirs[k]), values(ours[k]))
    save_file({"h": torch.randn(4).half(), "i": torch.arange(3)},
              str(tmp_path / "theirs.safetensors"))
    back = load_safetensors(tmp_path / "theirs.safetensors")
    theirs = load_file(str(tmp_path / "theirs.safetensors"))
    for k in back:
        np.testing.assert_array_equal(values(back[k]), torch_values(theirs[k]))


def test_safetensors_missing_library(monkeypatch, tmp_path):
    from torchlite.serialization import save_safetensors
    monkeypatch.setitem(sys.modules, "safetensors", None)
    with pytest.raises(ImportError, match="pip install safetensors"):
        save_safetensors({"a": tl.ones(1)}, tmp_path / "x.safetensors")


def test_pytorchs_private_save_flags_are_taken(tmp_path):
    p = str(tmp_path / "x.pt")
    tl.save({"a": tl.ones(2)}, p, _use_new_zipfile_serialization=False, _disable_byteorder_record=False)
    assert tl.load(p)["a"].tolist() == [1.0, 1.0]
