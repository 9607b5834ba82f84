"""Memory formats: contiguous_format, channels_last(_3d), preserve_format on contiguous,
clone, to, empty, *_like, is_contiguous and Module.to (strides against PyTorch's rules)."""
import pickle

import numpy as np
import pytest

import torchlite as tl

CL_STRIDES = (60, 1, 15, 3)          # a (2, 3, 4, 5) tensor in NHWC order


def test_format_objects():
    assert repr(tl.channels_last) == "torchlite.channels_last"
    assert isinstance(tl.contiguous_format, tl.memory_format)
    assert pickle.loads(pickle.dumps(tl.channels_last)) is tl.channels_last


def test_contiguous_and_is_contiguous():
    x = tl.randn(2, 3, 4, 5)
    c = x.contiguous(memory_format=tl.channels_last)
    assert c.stride() == CL_STRIDES
    assert c.is_contiguous(memory_format=tl.channels_last) and not c.is_contiguous()
    assert x.is_contiguous() and not x.is_contiguous(memory_format=tl.channels_last)
    np.testing.assert_array_equal(c.numpy(), x.numpy())
    assert c.contiguous(memory_format=tl.channels_last) is c          # already laid out
    assert c.contiguous().stride() == (60, 20, 5, 1)
    assert tl.randn(3).is_contiguous(memory_format=tl.channels_last) is False
    v = tl.randn(2, 3, 4, 5, 6).contiguous(memory_format=tl.channels_last_3d)
    assert v.stride() == (360, 1, 90, 18, 3)
    with pytest.raises(RuntimeError, match="rank 4"):
        tl.randn(2, 3).contiguous(memory_format=tl.channels_last)
    with pytest.raises(RuntimeError, match="preserve"):
        x.contiguous(memory_format=tl.preserve_format)
    with pytest.raises(TypeError):
        x.contiguous(memory_format="channels_last")


def test_clone_to_empty_and_like():
    x = tl.randn(2, 3, 4, 5)
    c = x.clone(memory_format=tl.channels_last)
    assert c.stride() == CL_STRIDES and c.data_ptr() != x.data_ptr()
    assert c.clone().stride() == CL_STRIDES                          # preserve_format
    assert c.clone(memory_format=tl.contiguous_format).stride() == (60, 20, 5, 1)
    assert x.to(memory_format=tl.channels_last).stride() == CL_STRIDES
    assert x.to(tl.float64, memory_format=tl.channels_last).stride() == CL_STRIDES
    assert tl.empty(2, 3, 4, 5, memory_format=tl.channels_last).stride() == CL_STRIDES
    assert tl.empty_like(c).stride() == CL_STRIDES
    assert tl.zeros_like(c, memory_format=tl.contiguous_format).stride() == (60, 20, 5, 1)
    assert tl.ones_like(x, memory_format=tl.channels_last).stride() == CL_STRIDES
    assert tl.full_like(x, 2.0, memory_format=tl.channels_last).stride() == CL_STRIDES


def test_gradients_flow_through_layout_changes():
    x = tl.randn(2, 3, 4, 5, dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(lambda t: t.contiguous(memory_format=tl.channels_last) * 2, (x,))
    assert tl.autograd.gradcheck(lambda t: t.to(memory_format=tl.channels_last).sin(), (x,))


def test_module_to_channels_last_and_conv():
    conv = tl.nn.Conv2d(3, 8, 3)
    conv.to(memory_format=tl.channels_last)
    assert conv.weight.is_contiguous(memory_format=tl.channels_last)
    assert conv.bias.is_contiguous()                                   # 1-d: unchanged
    x = tl.randn(2, 3, 8, 8)
    y1 = conv(x.contiguous(memory_format=tl.channels_last))
    y2 = conv(x)
    np.testing.assert_allclose(y1.detach().numpy(), y2.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_strides_match_torch():
    torch = pytest.importorskip("torch")
    x = tl.randn(2, 3, 4, 5)
    xt = torch.tensor(x.numpy())
    for fmt in ("channels_last", "contiguous_format"):
        assert x.contiguous(memory_format=getattr(tl, fmt)).stride() == \
            xt.contiguous(memory_format=getattr(torch, fmt)).stride()
    one = tl.randn(1, 3, 1, 5).contiguous(memory_format=tl.channels_last)
    onet = torch.randn(1, 3, 1, 5).contiguous(memory_format=torch.channels_last)
    assert one.stride() == onet.stride()
    assert one.is_contiguous(memory_format=tl.channels_last) == \
        onet.is_contiguous(memory_format=torch.channels_last)


# ---- PyTorch's empty_like rule for every *_like op and clone ------------------------------------
def _like_ops(tl_or_torch):
    """(name, fn(tensor, memory_format)) for the ops that lay a new tensor out like another."""
    m = tl_or_torch
    return [("empty_like", lambda a, f: m.empty_like(a, memory_format=f)),
            ("zeros_like", lambda a, f: m.zeros_like(a, memory_format=f)),
            ("full_like", lambda a, f: m.full_like(a, 2, memory_format=f)),
            ("clone", lambda a, f: a.clone(memory_format=f)),
            ("rand_like", lambda a, f: m.rand_like(a, memory_format=f)),
            ("randn_like", lambda a, f: m.randn_like(a, memory_format=f)),
            ("randint_like", lambda a, f: m.randint_like(a, 7, memory_format=f))]


def _random_layouts(torch, seed, count):
    """torch tensors of 0 to 5 dims with permuted, stepped, expanded, sliced-channels_last and
    size-0/size-1 layouts (dense ones, non-dense ones and overlapping ones)."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        nd = int(rng.integers(0, 6))
        shape = [int(rng.choice([0, 1, 2, 3])) if rng.random() < 0.3 else int(rng.integers(1, 5))
                 for _ in range(nd)]
        t = torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape)
        t = t.permute(rng.permutation(nd).tolist())
        t = t[tuple(slice(None, None, int(rng.choice([1, 1, 2]))) for _ in range(nd))]
        if nd and rng.random() < 0.3:
            d = int(rng.integers(nd))
            if t.shape[d] == 1:
                t = t.expand(*[3 if i == d else -1 for i in range(nd)])
        if nd == 4 and rng.random() < 0.3:
            t = t.contiguous(memory_format=torch.channels_last)[:, ::2, :, 1::2]
        yield t


def _tl_view_of(t):
    """The same view (shape, strides, offset) of a torchlite copy of t's storage."""
    storage = np.frombuffer(bytes(t.untyped_storage()), dtype=np.float32).copy()
    return tl.tensor(storage).as_strided(tuple(t.shape), t.stride(), t.storage_offset())


FORMATS = ("preserve_format", "contiguous_format", "channels_last", "channels_last_3d")


def test_like_ops_strides_match_torch_on_random_layouts():
    """empty_like, zeros_like, full_like, clone, rand_like, randn_like and randint_like give
    PyTorch's strides (or its exception type) for every format: a dense input keeps its
    strides exactly (size-1 dims' too), a non-dense one gets dense strides in its own dim order
    (ATen's infer_dense_strides), channels_last of an empty tensor has PyTorch's 0 strides."""
    torch = pytest.importorskip("torch")
    for t in _random_layouts(torch, 0, 400):
        x = _tl_view_of(t)
        for fmt in FORMATS:
            for (name, ft), (_, fl) in zip(_like_ops(torch), _like_ops(tl)):
                try:
                    want = ft(t, getattr(torch, fmt)).stride()
                except RuntimeError as e:
                    want = type(e)
                try:
                    r = fl(x, getattr(tl, fmt))
                    got = r.stride()
                    if name == "clone":
                        np.testing.assert_array_equal(r.numpy(), t.numpy())
                except RuntimeError as e:
                    got = type(e)
                assert got == want, (name, fmt, tuple(t.shape), t.stride())


def test_preserve_format_of_non_dense_channels_last_stays_channels_last():
    """A channels_last tensor sliced with a step is not dense; PyTorch's preserve_format still
    gives a channels_last result (dense strides in the input's dim order), as NumPy's
    order='K' copy of the same view does."""
    torch = pytest.importorskip("torch")
    x = tl.randn(2, 3, 8, 10).contiguous(memory_format=tl.channels_last)
    xt = torch.tensor(x.numpy()).contiguous(memory_format=torch.channels_last)
    for view, view_t in [(x[:, :, ::2], xt[:, :, ::2]), (x[:, :, :, ::2], xt[:, :, :, ::2]),
                         (x[:, ::2], xt[:, ::2]), (x[:, :, ::2, ::3], xt[:, :, ::2, ::3])]:
        for (name, ft), (_, fl) in zip(_like_ops(torch), _like_ops(tl)):
            r = fl(view, tl.preserve_format)
            assert r.stride() == ft(view_t, torch.preserve_format).stride(), name
            assert r.is_contiguous(memory_format=tl.channels_last), name
        c = view.clone()
        np.testing.assert_array_equal(c.numpy(), view.numpy())
        k = np.copy(view.numpy(), order="K")          # NumPy keeps the dim order too
        assert c.stride() == tuple(s // k.itemsize for s in k.strides)
    # a transposed slice keeps its transposed order
    t = tl.randn(4, 6).t()[::2]
    assert tl.empty_like(t).stride() == (1, 3) == t.clone().stride()


def test_rand_like_family_honours_memory_format():
    """rand_like, randn_like and randint_like lay their result out as empty_like would
    (before: always row-major)."""
    x = tl.randn(2, 3, 4, 5).contiguous(memory_format=tl.channels_last)
    for make in (lambda a, **k: tl.rand_like(a, **k), lambda a, **k: tl.randn_like(a, **k),
                 lambda a, **k: tl.randint_like(a, 3, 9, **k)):
        assert make(x).stride() == CL_STRIDES                                    # preserve
        assert make(x, memory_format=tl.preserve_format).stride() == CL_STRIDES
        assert make(x, memory_format=tl.contiguous_format).stride() == (60, 20, 5, 1)
        assert make(x.contiguous(), memory_format=tl.channels_last).stride() == CL_STRIDES
        assert make(x.contiguous()[:, :, ::2], memory_format=tl.channels_last).is_contiguous(
            memory_format=tl.channels_last)
        with pytest.raises(RuntimeError, match="rank 4"):
            make(tl.ones(3, 4), memory_format=tl.channels_last)
        with pytest.raises(TypeError, match="memory_format"):
            make(x, memory_format="channels_last")
    v = tl.randint_like(x, 3, 9, dtype=tl.int16).numpy()
    assert v.min() >= 3 and v.max() < 9
    assert 0 <= tl.rand_like(x).numpy().min() and tl.rand_like(x).numpy().max() < 1
    # an empty channels_last input (0 strides, which the fill must not refuse)
    e = tl.empty(2, 0, 4, 5, memory_format=tl.channels_last)
    assert tl.rand_like(e).shape == e.shape and tl.randint_like(e, 4).stride() == e.stride()


def test_rand_like_values_are_seeded_and_layout_independent():
    """One seed gives the same values whatever the layout: the fill draws element i in
    row-major order, as torchlite's in-place fills do (PyTorch draws uniform/randint in memory
    order, so there a channels_last rand_like equals the permuted NHWC rand; its values differ
    from torchlite's generator anyway).  The values equal rand(shape)'s and those of
    empty_like(x).uniform_() -- the relation PyTorch's rand_like is defined by."""
    x = tl.randn(2, 3, 4, 5).contiguous(memory_format=tl.channels_last)
    for like, plain in [(tl.rand_like, lambda: tl.rand(2, 3, 4, 5)),
                        (tl.randn_like, lambda: tl.randn(2, 3, 4, 5)),
                        (lambda a: tl.randint_like(a, 0, 100), lambda: tl.randint(0, 100, (2, 3, 4, 5)))]:
        tl.manual_seed(11)
        a = like(x)
        tl.manual_seed(11)
        b = like(x)
        tl.manual_seed(11)
        c = plain()
        assert a.stride() == CL_STRIDES
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(a.numpy(), c.numpy().astype(a.numpy().dtype))
    tl.manual_seed(12)
    u = tl.rand_like(x[:, :, ::2])
    tl.manual_seed(12)
    np.testing.assert_array_equal(u.numpy(), tl.empty_like(x[:, :, ::2]).uniform_().numpy())


def test_is_contiguous_formats_match_torch():
    """is_contiguous(memory_format=...) as PyTorch: preserve_format asks the row-major question
    (True/False, no error), channels_last(_3d) of an empty tensor has no shortcut, the format is
    keyword-only and anything but a memory_format (None included) is a TypeError."""
    torch = pytest.importorskip("torch")
    for t in _random_layouts(torch, 1, 300):
        x = _tl_view_of(t)
        for fmt in FORMATS:
            got = x.is_contiguous(memory_format=getattr(tl, fmt))
            assert got is t.is_contiguous(memory_format=getattr(torch, fmt)), (fmt, tuple(t.shape), t.stride())
    x = tl.randn(2, 3, 4, 5)
    assert x.is_contiguous(memory_format=tl.preserve_format) is True
    assert x.contiguous(memory_format=tl.channels_last).is_contiguous(memory_format=tl.preserve_format) is False
    assert tl.empty(0, 3, 4, 5).is_contiguous(memory_format=tl.channels_last) is False       # as torch
    for bad in (None, 1, "channels_last", tl.float32):
        with pytest.raises(TypeError, match="must be torchlite.memory_format"):
            x.is_contiguous(memory_format=bad)
    with pytest.raises(TypeError):
        x.is_contiguous(tl.channels_last)                      # keyword-only, as in PyTorch
    with pytest.raises(TypeError):
        torch.empty(2).is_contiguous(torch.channels_last)


def test_empty_channels_last_strides_of_empty_tensors_match_torch():
    torch = pytest.importorskip("torch")
    for shape, fmt in [((2, 3, 0, 5), "channels_last"), ((2, 0, 4, 5), "channels_last"),
                       ((0, 3, 4, 5), "channels_last"), ((2, 3, 0, 5, 2), "channels_last_3d")]:
        want = torch.empty(shape, memory_format=getattr(torch, fmt)).stride()
        assert tl.empty(*shape, memory_format=getattr(tl, fmt)).stride() == want
        assert tl.zeros(*shape).contiguous(memory_format=getattr(tl, fmt)).stride() == \
            torch.zeros(shape).contiguous(memory_format=getattr(torch, fmt)).stride()
