"""torchlite.serialization's allow-list for load(weights_only=True): add_safe_globals,
get_safe_globals, clear_safe_globals, the safe_globals context manager and
get_unsafe_globals_in_checkpoint, checked against the objects saved and, where PyTorch is
installed, against torch.serialization's own answers on the same files."""
import io
import pickle

import numpy as np
import pytest

import torchlite as tl
from helpers import saved_buffer
from torchlite import serialization as S


class Point:                      # a plain class: pickled as NEWOBJ + BUILD of its __dict__
    def __init__(self, x, y):
        self.x, self.y = x, y


class Scaled:                     # its own __setstate__
    def __init__(self, w):
        self.w = w

    def __getstate__(self):
        return {"w": self.w, "version": 2}

    def __setstate__(self, state):
        self.w = state["w"] * 1
        self.restored_from = state["version"]


class Slotted:                    # slots only: BUILD's (None, slots) form
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


class Pair:                       # rebuilt by calling the class (REDUCE)
    def __init__(self, left, right):
        self.left, self.right = left, right

    def __reduce__(self):
        return (Pair, (self.left, self.right))


class Other:
    pass


@pytest.fixture(autouse=True)
def empty_allow_list():
    S.clear_safe_globals()
    yield
    S.clear_safe_globals()


_saved = saved_buffer


def _load(buf, **kw):
    buf.seek(0)
    return tl.load(buf, **kw)


def test_an_unknown_class_is_refused_and_the_error_says_how_to_allow_it():
    buf = _saved({"p": Point(1, 2)})
    with pytest.raises(pickle.UnpicklingError, match=r"Point.*add_safe_globals"):
        _load(buf)


def test_add_safe_globals_lets_load_build_the_class():
    t = tl.arange(6.0).reshape(2, 3)
    buf = _saved({"p": Point(t, "name"), "w": tl.ones(2)})
    S.add_safe_globals([Point])
    out = _load(buf)
    assert type(out["p"]) is Point and out["p"].y == "name"
    np.testing.assert_array_equal(out["p"].x.numpy(), t.numpy())
    np.testing.assert_array_equal(out["w"].numpy(), np.ones(2, np.float32))
    assert S.get_safe_globals() == [Point]
    S.clear_safe_globals()
    assert S.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match="Point"):
        _load(buf)


def test_setstate_slots_and_reduce_forms():
    S.add_safe_globals([Scaled, Slotted, Pair])
    out = _load(_saved([Scaled(3.5), Slotted(1, (2, 3)), Pair([1], {"k": 2})]))
    assert out[0].w == 3.5 and out[0].restored_from == 2
    assert (out[1].a, out[1].b) == (1, (2, 3))
    assert type(out[2]) is Pair and out[2].left == [1] and out[2].right == {"k": 2}


def test_allowing_one_class_does_not_allow_another():
    S.add_safe_globals([Point])
    with pytest.raises(pickle.UnpicklingError, match="Other"):
        _load(_saved([Point(1, 2), Other()]))


def test_safe_globals_context_manager_allows_inside_the_block_only():
    buf = _saved(Point(3, 4))
    S.add_safe_globals([Scaled])
    with S.safe_globals([Point, Scaled]):
        assert _load(buf).x == 3
        assert set(map(id, S.get_safe_globals())) == {id(Point), id(Scaled)}
    # Scaled was there before the block and stays; Point goes again
    assert S.get_safe_globals() == [Scaled]
    with pytest.raises(pickle.UnpicklingError):
        _load(buf)


def test_a_name_can_be_given_for_the_object():
    # (obj, "module.name"): the checkpoint names the class under another path
    data = pickle.dumps(Point(5, 6), protocol=2).replace(
        f"{__name__}\nPoint".encode(), b"old_package.geometry\nPoint")
    buf = io.BytesIO()
    import zipfile
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", data)
        zf.writestr("archive/version", "3\n")
    with pytest.raises(pickle.UnpicklingError, match="old_package.geometry.Point"):
        _load(buf)
    S.add_safe_globals([(Point, "old_package.geometry.Point")])
    assert _load(buf).y == 6
    assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(buf.getvalue())) == []


@pytest.mark.parametrize("entry, exc, msg", [
    ((Point, "a.b", "c"), ValueError, "tuple of length 2"),
    ((Point, 3), TypeError, "str of callable full path"),
    (3, TypeError, "not a class or function"),
])
def test_bad_entries_are_refused(entry, exc, msg):
    with pytest.raises(exc, match=msg):
        S.add_safe_globals([entry])
    assert S.get_safe_globals() == []


def test_get_unsafe_globals_in_checkpoint_lists_what_load_would_refuse():
    sd = {"w": tl.randn(3), "b": tl.nn.Parameter(tl.zeros(2))}
    assert S.get_unsafe_globals_in_checkpoint(_saved(sd)) == []
    buf = _saved({"p": Point(1, 2), "q": [Pair(1, 2)], "t": tl.ones(1)})
    assert S.get_unsafe_globals_in_checkpoint(buf) == [f"{__name__}.Pair", f"{__name__}.Point"]
    S.add_safe_globals([Point])
    assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(buf.getvalue())) == [f"{__name__}.Pair"]


def test_get_unsafe_globals_follows_stack_global_through_the_memo():
    # protocol 4 names a class with two memoized strings and STACK_GLOBAL
    data = pickle.dumps([Point(1, 2), Point(3, 4), Other()], protocol=4)
    assert S._globals_named_in(data) >= {f"{__name__}.Point", f"{__name__}.Other"}


def test_get_unsafe_globals_refuses_what_is_not_a_zip_checkpoint(tmp_path):
    with pytest.raises(ValueError, match="checkpoint returned by torch.save"):
        S.get_unsafe_globals_in_checkpoint(io.BytesIO(pickle.dumps({"a": 1}, protocol=2)))


def test_the_names_are_exported():
    for name in ("add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
                 "get_unsafe_globals_in_checkpoint"):
        assert name in S.__all__ and callable(getattr(S, name))


def test_agrees_with_pytorch_on_a_torch_checkpoint():
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save({"p": Point(torch.arange(3.0), 1), "s": Slotted(1, 2), "w": torch.ones(2)}, buf)
    data = buf.getvalue()
    theirs = sorted(torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)))
    assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == theirs
    S.add_safe_globals([Point, Slotted])
    out = tl.load(io.BytesIO(data))
    np.testing.assert_array_equal(out["p"].x.numpy(), [0.0, 1.0, 2.0])
    assert (out["s"].a, out["s"].b) == (1, 2)
    with torch.serialization.safe_globals([Point, Slotted]):
        ref = torch.load(io.BytesIO(data), weights_only=True)
    assert ref["p"].y == out["p"].y == 1
