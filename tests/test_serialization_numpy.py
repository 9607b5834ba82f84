"""torchlite.load(weights_only=True) of files holding NumPy arrays and scalars (what scripts
write with torch.save(numpy_array)): plain dtypes load by default, rebuilt from checked bytes
(torchlite/_numpy_pickle.py); object, structured and other dtypes, and every misuse of
NumPy's pickle functions a crafted file could attempt, raise UnpicklingError before NumPy
runs; PyTorch's TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD / TORCH_FORCE_WEIGHTS_ONLY_LOAD overrides.
Oracles: the arrays saved (NumPy's own equality), and torch.save / torch.load where PyTorch
is installed."""
import collections
import io
import pickle
import warnings

import numpy as np
import pytest

import torchlite as tl
from helpers import saved_buffer
from torchlite import serialization as S


@pytest.fixture(autouse=True)
def no_overrides(monkeypatch):
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", raising=False)
    S.clear_safe_globals()
    yield
    S.clear_safe_globals()


_saved = saved_buffer


PLAIN = {
    "f32": np.arange(12, dtype=np.float32).reshape(3, 4),
    "f64_fortran": np.asfortranarray(np.linspace(-1, 1, 6).reshape(2, 3)),
    "f16": np.array([1.5, -2.25], dtype=np.float16),
    "i8": np.array([-128, 127], dtype=np.int8),
    "u64": np.array([2 ** 64 - 1], dtype=np.uint64),
    "big_endian": np.array([1, 2 ** 20], dtype=">i4"),
    "bool": np.array([[True, False]]),
    "c128": np.array([1 + 2j, -3j]),
    "str": np.array(["ab", "c"]),
    "bytes": np.array([b"xyz", b""]),
    "empty": np.zeros((0, 5), np.float32),
    "0d": np.array(3.5),
    "scalar_i64": np.int64(-7),
    "scalar_f32": np.float32(0.25),
    "scalar_bool": np.bool_(True),
    "scalar_c64": np.complex64(1 - 1j),
}


def _same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    assert a.dtype == b.dtype
    if isinstance(a, np.ndarray):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_plain_arrays_and_scalars_load_by_default(name):
    """What Python's own unpickler makes of the same pickle is the reference (NumPy hands
    back a big-endian array in native byte order, for one)."""
    got = tl.load(_saved(PLAIN[name]))
    _same(got, pickle.loads(pickle.dumps(PLAIN[name], protocol=2)))
    np.testing.assert_array_equal(got, PLAIN[name])
    if isinstance(got, np.ndarray):
        assert got.flags.writeable


def test_arrays_inside_containers_and_beside_tensors():
    obj = {"data": PLAIN["f32"], "labels": [np.int64(1), np.int64(2)], "w": tl.ones(2),
           "pair": (PLAIN["str"], PLAIN["f32"])}
    got = tl.load(_saved(obj))
    _same(got["data"], obj["data"])
    assert [int(v) for v in got["labels"]] == [1, 2]
    assert got["w"].tolist() == [1.0, 1.0]
    _same(got["pair"][0], obj["pair"][0])


def test_files_written_by_torch_save():
    torch = pytest.importorskip("torch")
    for name, value in PLAIN.items():
        buf = io.BytesIO()
        torch.save({"v": value, "t": torch.arange(3)}, buf)
        buf.seek(0)
        got = tl.load(buf)
        buf.seek(0)     # PyTorch's own loader (trusting the file) is the reference
        _same(got["v"], torch.load(buf, weights_only=False)["v"])
        np.testing.assert_array_equal(got["v"], value)
        assert got["t"].tolist() == [0, 1, 2]


@pytest.mark.parametrize("value", [np.array([1, None], dtype=object),
                                   np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")]),
                                   np.zeros(2, dtype=[("a", "<f4", (3,))]),
                                   np.zeros(2, dtype="V8")],
                         ids=["object", "structured", "subarray_field", "void"])
def test_other_dtypes_are_refused(value):
    with pytest.raises(pickle.UnpicklingError, match="not a plain one"):
        tl.load(_saved(value))
    got = tl.load(_saved(value), weights_only=False)       # the user's explicit choice
    assert got.dtype == value.dtype and got.shape == value.shape


class _Crafted:
    """An object whose pickle is whatever (callable, args) or (callable, args, state) it is
    given: a stand-in for a hand-edited file."""

    def __init__(self, *reduce_value):
        self.reduce_value = reduce_value

    def __reduce__(self):
        return self.reduce_value


def _reconstruct():
    return np.ndarray.__reduce__(np.zeros(1))[0]


def _dtype_state(dt):
    return dt.__reduce__()[2]


@pytest.mark.parametrize("crafted, message", [
    # calling the ndarray class would allocate whatever the file asks
    (_Crafted(np.ndarray, ((1 << 40,),)), "not an allowed function"),
    (_Crafted(_reconstruct(), (np.ndarray, (1 << 40,), b"b")), "_reconstruct is only allowed"),
    (_Crafted(_reconstruct(), (collections.OrderedDict, (0,), b"b")), "_reconstruct is only allowed"),
    # a byte count that does not match the shape
    (_Crafted(_reconstruct(), (np.ndarray, (0,), b"b"),
              (1, (1 << 40,), np.dtype("f4"), False, b"\0" * 8)), "needs"),
    (_Crafted(_reconstruct(), (np.ndarray, (0,), b"b"),
              (1, (-1,), np.dtype("f4"), False, b"")), "shape"),
    # an array state that names an object dtype, or holds objects instead of bytes
    (_Crafted(_reconstruct(), (np.ndarray, (0,), b"b"),
              (1, (2,), np.dtype("O"), False, [1, 2])), "not a plain one"),
    (_Crafted(_reconstruct(), (np.ndarray, (0,), b"b"),
              (1, (1,), np.dtype("f8"), False, [1.0])), "invalid NumPy array state"),
    # dtype strings and states
    (_Crafted(np.dtype, ("O", False, True)), "not a plain one"),
    (_Crafted(np.dtype, ("not a dtype", False, True)), "numpy.dtype"),
    (_Crafted(np.dtype, (["a"], False, True)), "short type string"),
    (_Crafted(np.dtype, ("f4", False, True), (3, "<", None, ("a",), {"a": 1}, -1, -1, 0)),
     "byte order"),
    (_Crafted(np.dtype, ("U2", False, True), (3, "<", None, None, None, -4, 4, 8)),
     "sizes or flags"),
    (_Crafted(np.dtype, ("S1", False, True), (3, "|", None, None, None, 1 << 30, 1, 0)),
     "sizes or flags"),
    # flags 1 would mark an int64 dtype as holding objects
    (_Crafted(np.dtype, ("i8", False, True), (3, "<", None, None, None, -1, -1, 1)),
     "sizes or flags"),
    # zero-size elements: a huge array from no bytes
    (_Crafted(_reconstruct(), (np.ndarray, (0,), b"b"),
              (1, (10 ** 15,), np.dtype("S0"), False, b"")), "must be empty"),
    # a scalar with the wrong byte count
    (_Crafted(np.float64(1).__reduce__()[0], (np.dtype("f8"), b"\0" * 4)), "needs 8 bytes"),
])
def test_crafted_numpy_pickles_are_refused(crafted, message):
    with pytest.raises(pickle.UnpicklingError, match=message):
        tl.load(_saved({"x": crafted}))


def test_a_dtype_build_never_changes_numpy_s_shared_dtypes():
    """copy=False in the file would hand NumPy's cached float32 dtype to BUILD: the loader
    always makes a fresh copy."""
    crafted = _Crafted(np.dtype, ("f4", False, False), _dtype_state(np.dtype(">f4")))
    got = tl.load(_saved(crafted))
    assert got == np.dtype(">f4")
    assert np.dtype("f4").byteorder == "="


def test_an_array_state_cannot_be_restored_twice():
    arr_state = (1, (2,), np.dtype("f4"), False, b"\0" * 8)
    crafted = _Crafted(_reconstruct(), (np.ndarray, (0,), b"b"), arr_state)
    got = tl.load(_saved({"a": crafted}))["a"]
    assert got.shape == (2,)
    # BUILD on the same array again (a file can reference a memoised object twice)
    with pytest.raises(pickle.UnpicklingError, match="only be restored once"):
        from torchlite import _numpy_pickle
        _numpy_pickle.build(got, arr_state)


def test_torch_force_no_weights_only_load(monkeypatch):
    value = np.array([1, None], dtype=object)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected"):
        got = tl.load(_saved(value))
    assert got.tolist() == [1, None]
    with pytest.raises(pickle.UnpicklingError):     # an explicit argument wins
        tl.load(_saved(value), weights_only=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tl.load(_saved(value), weights_only=False).tolist() == [1, None]


def test_torch_force_weights_only_load(monkeypatch):
    value = np.array([1, None], dtype=object)
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "true")
    with pytest.raises(pickle.UnpicklingError):
        tl.load(_saved(value), weights_only=False)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RuntimeError, match="Only one of"):
        tl.load(_saved(value))


def test_overrides_agree_with_pytorch(monkeypatch):
    torch = pytest.importorskip("torch")
    value = np.array([1, None], dtype=object)
    buf = io.BytesIO()
    torch.save(value, buf)
    for env, kw in [({"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}, {}),
                    ({"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}, {"weights_only": True}),
                    ({"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1"}, {"weights_only": False}),
                    ({}, {})]:
        for k in ("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_WEIGHTS_ONLY_LOAD"):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        outcomes = []
        for loader in (torch.load, tl.load):
            buf.seek(0)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    outcomes.append(("ok", loader(buf, **kw).tolist(), len(caught)))
                except pickle.UnpicklingError:
                    outcomes.append(("refused",))
        assert outcomes[0] == outcomes[1], (env, kw, outcomes)


def test_safe_globals_still_hand_numpy_its_own_functions():
    """With NumPy's names on the user's allow-list the loader calls NumPy's functions, as
    PyTorch does (here for a structured array, which the built-in path refuses)."""
    value = np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])
    rec = _reconstruct()
    with S.safe_globals([rec, np.ndarray, np.dtype, type(value.dtype)]):
        got = tl.load(_saved(value))
    assert got.dtype == value.dtype


def test_a_dtype_rebuilt_after_an_array_used_it_does_not_reach_the_array():
    """A file may BUILD the same (memoised) dtype again after an array was made with it: the
    array has its own dtype object, so only the byte order of the file's copy can change."""
    dt = np.dtype("S1", False, True)
    state = (1, (4,), dt, False, b"abcd")
    crafted = [_Crafted(_reconstruct(), (np.ndarray, (0,), b"b"), state)]
    got = tl.load(_saved(crafted))[0]
    assert got.dtype == np.dtype("S1") and got.nbytes == 4
    assert got.tolist() == [b"a", b"b", b"c", b"d"]


def test_a_pickle_module_makes_the_default_weights_only_false():
    """As PyTorch's _default_to_weights_only: load(f, pickle_module=pickle) trusts the file."""
    value = np.array([1, None], dtype=object)
    assert tl.load(_saved(value), pickle_module=pickle).tolist() == [1, None]
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        tl.load(_saved(value), pickle_module=pickle, weights_only=True)
