"""View ops (torchlite/_ops/views.py over array.pyx): values against NumPy, view-vs-copy
rules and strides against PyTorch, shared storage (checked by writing through the view),
flip, as_strided bounds, view(dtype) and the errors."""
import numpy as np
import pytest

import torchlite as tl
from torchlite._core import array as _A

from helpers import ALL_DTYPES, NP_DTYPE, to_numpy, torch_or_skip


def _shares(a, b):
    return a._data.same_storage(b._data)


def _strides_match(a, b):
    """Strides equal on every dim of size > 1 (a size-1 dim's stride is never used)."""
    return all(sa == sb for sa, sb, n in zip(a.stride(), b.stride(), a.shape) if n > 1)


# ---------------------------------------------------------------------------------------
# view / reshape
# ---------------------------------------------------------------------------------------
def test_view_basics():
    t = tl.arange(12)
    v = t.view(3, 4)
    assert v.shape == (3, 4) and v.stride() == (4, 1) and _shares(v, t)
    assert t.view(-1, 6).shape == (2, 6) and t.view((2, -1, 3)).shape == (2, 2, 3)
    assert t.view([12]).shape == (12,) and t.view(tl.Size([4, 3])).shape == (4, 3)
    v[1, 1] = 100
    assert t[5].item() == 100
    assert tl.zeros(0, 3).view(5, 0, 7).shape == (5, 0, 7)
    assert tl.zeros(3, 1, 4).view(3, 4, 1).shape == (3, 4, 1)
    assert t.view_as(tl.zeros(6, 2)).shape == (6, 2)
    for bad in ((5, -1), (-1, -1), (13,), (3, 5)):
        with pytest.raises(RuntimeError):
            t.view(*bad)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        tl.arange(12).view(3, 4).t().view(12)
    with pytest.raises(TypeError):
        t.view(2.5, 4)


def test_zero_dim_view_and_reshape():
    s = tl.tensor(3.0)
    for shape in ((1,), (-1,), (1, 1), ()):
        v = s.view(*shape) if shape else s.view(())
        assert v.shape == tuple(1 if d == -1 else d for d in shape) and _shares(v, s)
        r = s.reshape(*shape) if shape else s.reshape(())
        assert r.tolist() == v.tolist() and _shares(r, s)
    s.view(1)[0] = 5.0
    assert s.item() == 5.0
    assert tl.tensor([3.0]).view(()).shape == ()
    assert s.flatten().shape == (1,)
    assert tl.atleast_1d(s).shape == (1,) and tl.atleast_2d(s).shape == (1, 1)
    assert tl.atleast_3d(s).shape == (1, 1, 1)
    with pytest.raises(RuntimeError):
        s.view(2)


def test_zero_dim_view_at_array_level():
    assert _A.empty((), 8).view((1,)).shape == (1,)
    assert _A.empty((), 8).view(()).shape == ()


def _view_cases():
    """(base shape, a view of it as (name, fn), target shapes)."""
    return [
        ((3, 4), ("t", lambda x: x.t()), [(12,), (4, 3), (2, 2, 3), (4, 1, 3), (1, 4, 3, 1)]),
        ((3, 4), ("cols", lambda x: x[:, :2]), [(6,), (3, 2, 1), (3, 1, 2), (1, 3, 2)]),
        ((3, 4), ("step", lambda x: x[:, ::2]), [(3, 1, 2), (6,), (3, 2)]),
        ((2, 3, 4), ("perm", lambda x: x.permute(1, 0, 2)), [(3, 8), (3, 2, 2, 2), (6, 4), (24,)]),
        ((4, 3), ("rows", lambda x: x[::2]), [(2, 3, 1), (6,), (2, 1, 3)]),
        ((4, 1, 3), ("rows1", lambda x: x[::2]), [(2, 3), (6,), (2, 3, 1, 1)]),
        ((2, 3, 4), ("sel", lambda x: x.transpose(0, 1)[:, :, 1]), [(6,), (3, 2), (2, 3)]),
        ((3, 4), ("exp", lambda x: x[:1].expand(5, 4)), [(20,), (5, 2, 2), (10, 2)]),
        ((6,), ("id", lambda x: x), [(2, 3), (3, 2, 1), (1, 6)]),
        ((2, 1, 3), ("size1", lambda x: x.permute(2, 1, 0)), [(3, 2), (6,), (3, 1, 2)]),
    ]


def test_view_fails_exactly_where_torch_fails():
    torch = torch_or_skip()
    for base_shape, (name, fn), targets in _view_cases():
        n = int(np.prod(base_shape))
        a = fn(tl.arange(n).view(*base_shape))
        b = fn(torch.arange(n).view(*base_shape))
        for shape in targets:
            try:
                want = b.view(*shape)
            except RuntimeError:
                want = None
            if want is None:
                with pytest.raises(RuntimeError):
                    a.view(*shape)
                r = a.reshape(*shape)                 # reshape copies instead
                assert not _shares(r, a) and r.is_contiguous()
            else:
                got = a.view(*shape)
                assert _shares(got, a) and _strides_match(got, want), (name, shape, got.stride(),
                                                                        want.stride())
                assert got.storage_offset() == want.storage_offset()
                r = a.reshape(*shape)
                assert _shares(r, a)
            assert a.reshape(*shape).tolist() == b.reshape(*shape).tolist(), (name, shape)


def test_hypothesis_view_matches_torch():
    torch = torch_or_skip()
    st = pytest.importorskip("hypothesis.strategies")
    from hypothesis import given, settings, HealthCheck

    @st.composite
    def case(draw):
        nd = draw(st.integers(1, 4))
        shape = draw(st.lists(st.integers(1, 4), min_size=nd, max_size=nd))
        perm = draw(st.permutations(list(range(nd))))
        steps = draw(st.lists(st.integers(1, 2), min_size=nd, max_size=nd))
        view_shape = [ (s + k - 1) // k for s, k in zip(shape, steps)]
        view_shape = [view_shape[p] for p in perm]
        n = int(np.prod(view_shape))
        # a target: split n into factors, in random order, maybe with a -1
        factors = []
        m = n
        for p in (2, 3, 2, 5, 7):
            while m % p == 0 and draw(st.booleans()):
                factors.append(p)
                m //= p
        factors.append(m)
        factors = draw(st.permutations(factors))
        ones = draw(st.integers(0, 2))
        target = list(factors) + [1] * ones
        target = draw(st.permutations(target))
        if draw(st.booleans()):
            target = list(target)
            target[draw(st.integers(0, len(target) - 1))] = -1
        return shape, perm, steps, list(target)

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case())
    def run(c):
        shape, perm, steps, target = c
        n = int(np.prod(shape))
        sl = tuple(slice(None, None, k) for k in steps)
        a = tl.arange(n).view(*shape)[sl].permute(*perm)
        b = torch.arange(n).view(*shape)[sl].permute(*perm)
        try:
            want = b.view(*target)
        except RuntimeError:
            want = None
        if want is None:
            with pytest.raises(RuntimeError):
                a.view(*target)
        else:
            got = a.view(*target)
            assert tuple(got.shape) == tuple(want.shape) and _strides_match(got, want)
            assert got.storage_offset() == want.storage_offset()
            assert got.tolist() == want.tolist()
        assert a.reshape(*target).tolist() == b.reshape(*target).tolist()

    run()


# ---------------------------------------------------------------------------------------
# every view shares storage: write through it, read the base
# ---------------------------------------------------------------------------------------
_VIEW_OPS = [
    ("view", lambda x: x.view(6, 4), lambda a: a.reshape(6, 4)),
    ("reshape", lambda x: x.reshape(4, 6), lambda a: a.reshape(4, 6)),
    ("permute", lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("transpose", lambda x: x.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("swapaxes", lambda x: x.swapaxes(1, 2), lambda a: a.swapaxes(1, 2)),
    ("swapdims", lambda x: tl.swapdims(x, 0, 1), lambda a: a.swapaxes(0, 1)),
    ("mT", lambda x: x.mT, lambda a: a.swapaxes(-1, -2)),
    ("t", lambda x: x[0].t(), lambda a: a[0].T),
    ("T2d", lambda x: x[1].T, lambda a: a[1].T),
    ("adjoint", lambda x: tl.adjoint(x), lambda a: a.swapaxes(-1, -2)),
    ("squeeze", lambda x: x[:, :1].squeeze(), lambda a: a[:, :1].squeeze()),
    ("squeeze_dim", lambda x: x[:, :1].squeeze(1), lambda a: a[:, :1].squeeze(1)),
    ("squeeze_dims", lambda x: x[:1, :1].squeeze((0, 1)), lambda a: a[:1, :1].squeeze((0, 1))),
    ("unsqueeze", lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    ("unsqueeze_neg", lambda x: x.unsqueeze(-1), lambda a: a[..., None]),
    ("flatten", lambda x: x.flatten(), lambda a: a.reshape(-1)),
    ("flatten_part", lambda x: x.flatten(1), lambda a: a.reshape(2, 12)),
    ("ravel", lambda x: x.ravel(), lambda a: a.ravel()),
    ("unflatten", lambda x: x.unflatten(2, (2, 2)), lambda a: a.reshape(2, 3, 2, 2)),
    ("narrow", lambda x: x.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    ("narrow_neg", lambda x: tl.narrow(x, -1, -2, 2), lambda a: a[:, :, 2:4]),
    ("select", lambda x: x.select(1, -1), lambda a: a[:, -1]),
    ("unbind", lambda x: x.unbind(2)[3], lambda a: a[:, :, 3]),
    ("diagonal", lambda x: x.diagonal(0, 1, 2), lambda a: np.diagonal(a, 0, 1, 2)),
    ("diagonal_off", lambda x: x.diagonal(1, 2, 1), lambda a: np.diagonal(a, 1, 2, 1)),
    ("diagonal_neg", lambda x: tl.diagonal(x, -1, 1, 2), lambda a: np.diagonal(a, -1, 1, 2)),
    ("as_strided", lambda x: x.as_strided((3, 2), (4, 2), 1), lambda a: np.lib.stride_tricks.as_strided(
        a.reshape(-1)[1:], (3, 2), (32, 16))),
    ("unfold", lambda x: x.unfold(2, 2, 1), lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, 2)),
    ("movedim", lambda x: x.movedim(0, 2), lambda a: np.moveaxis(a, 0, 2)),
    ("moveaxis", lambda x: tl.moveaxis(x, (0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0))),
    ("getitem", lambda x: x[1, ::2, 1:], lambda a: a[1, ::2, 1:]),
    ("ellipsis", lambda x: x[..., 1], lambda a: a[..., 1]),
    ("none", lambda x: x[None, :, None], lambda a: a[None, :, None]),
    ("atleast_3d", lambda x: tl.atleast_3d(x[0, 0]), lambda a: a[0, 0].reshape(1, 4, 1)),
    ("view_as", lambda x: x.view_as(tl.zeros(4, 6)), lambda a: a.reshape(4, 6)),
    ("expand_read", lambda x: x[:, :1].expand(2, 3, 4), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4))),
]


@pytest.mark.parametrize("name, op, ref", _VIEW_OPS, ids=[v[0] for v in _VIEW_OPS])
def test_views_share_storage(name, op, ref):
    base_np = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    base = tl.tensor(base_np)
    v = op(base)
    want = ref(base_np)
    assert _shares(v, base)
    np.testing.assert_array_equal(v.numpy(), want)
    if name.startswith("expand"):
        return                     # several elements share one location: not written here
    v.fill_(-7)
    # the elements written are those the same op selects from an array of flat indices
    hit = np.zeros(24, bool)
    hit[np.asarray(ref(np.arange(24, dtype=np.int64).reshape(2, 3, 4))).reshape(-1)] = True
    np.testing.assert_array_equal(base.numpy(), np.where(hit.reshape(2, 3, 4), -7, base_np))


def test_view_of_view_chains():
    a_np = np.arange(60.0).reshape(3, 4, 5)
    a = tl.tensor(a_np)
    v = a.permute(2, 0, 1)[1:, ::2].transpose(0, 2).unsqueeze(0)[0, 1]
    w = a_np.transpose(2, 0, 1)[1:, ::2].swapaxes(0, 2)[None][0, 1]
    np.testing.assert_array_equal(v.numpy(), w)
    v.mul_(0)
    w[...] = 0
    np.testing.assert_array_equal(a.numpy(), a_np)


def test_hypothesis_view_chains_match_numpy():
    st = pytest.importorskip("hypothesis.strategies")
    from hypothesis import given, settings, HealthCheck

    ops = st.sampled_from(["permute", "transpose", "slice", "select", "unsqueeze", "squeeze",
                           "diagonal", "narrow", "flip", "expand", "movedim"])

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.lists(ops, max_size=5),
           st.randoms(use_true_random=False))
    def run(shape, chain, rnd):
        a_np = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
        t = tl.tensor(a_np)
        copied = False
        for op in chain:
            nd = a_np.ndim
            if op == "permute" and nd:
                p = list(range(nd))
                rnd.shuffle(p)
                t, a_np = t.permute(*p), a_np.transpose(p)
            elif op == "transpose" and nd:
                i, j = rnd.randrange(nd), rnd.randrange(nd)
                t, a_np = t.transpose(i, j), a_np.swapaxes(i, j)
            elif op == "slice" and nd:
                d = rnd.randrange(nd)
                s = slice(rnd.randrange(-5, 5), rnd.choice([None, rnd.randrange(-5, 6)]), rnd.randrange(1, 4))
                idx = (slice(None),) * d + (s,)
                t, a_np = t[idx], a_np[idx]
            elif op == "select" and nd and a_np.shape[0]:
                i = rnd.randrange(-a_np.shape[0], a_np.shape[0])
                t, a_np = t.select(0, i), a_np[i]
            elif op == "unsqueeze" and nd < 6:
                d = rnd.randrange(-nd - 1, nd + 1)
                t, a_np = t.unsqueeze(d), np.expand_dims(a_np, d)
            elif op == "squeeze":
                t, a_np = t.squeeze(), a_np.squeeze()
            elif op == "diagonal" and nd >= 2:
                off = rnd.randrange(-3, 4)
                t, a_np = t.diagonal(off, 0, 1), np.diagonal(a_np, off, 0, 1)
            elif op == "narrow" and nd and a_np.shape[-1]:
                start = rnd.randrange(a_np.shape[-1])
                length = rnd.randrange(a_np.shape[-1] - start + 1)
                t, a_np = t.narrow(-1, start, length), a_np[..., start:start + length]
            elif op == "flip" and nd:
                d = rnd.randrange(nd)
                t, a_np = t.flip(d), np.flip(a_np, d).copy()
                copied = True
            elif op == "expand" and nd and a_np.shape[0] == 1:
                t, a_np = t.expand(3, *a_np.shape[1:]), np.broadcast_to(a_np, (3,) + a_np.shape[1:])
            elif op == "movedim" and nd:
                s, d = rnd.randrange(nd), rnd.randrange(nd)
                t, a_np = t.movedim(s, d), np.moveaxis(a_np, s, d)
            assert tuple(t.shape) == a_np.shape, (op, t.shape, a_np.shape)
            np.testing.assert_array_equal(t.numpy(), a_np)
            # the elements lie where the strides say: rebuild through as_strided
            if t.numel() and not copied:
                again = t.as_strided(tuple(t.shape), t.stride(), t.storage_offset())
                np.testing.assert_array_equal(again.numpy(), a_np)
        np.testing.assert_array_equal(t.contiguous().numpy(), a_np)
        np.testing.assert_array_equal(t.clone().numpy(), a_np)
        np.testing.assert_array_equal(t.reshape(-1).numpy(), a_np.reshape(-1))

    run()


# ---------------------------------------------------------------------------------------
# individual ops and their errors
# ---------------------------------------------------------------------------------------
def test_permute_transpose_errors():
    t = tl.zeros(2, 3, 4)
    assert t.permute(-1, 0, 1).shape == (4, 2, 3) and t.permute((2, 1, 0)).shape == (4, 3, 2)
    with pytest.raises(RuntimeError):
        t.permute(0, 1)
    with pytest.raises(RuntimeError, match="duplicate"):
        t.permute(0, 1, 1)
    with pytest.raises(IndexError, match="out of range"):
        t.permute(0, 1, 3)
    with pytest.raises(IndexError, match="out of range"):
        t.transpose(0, 3)
    s = tl.tensor(1.0)
    assert s.transpose(0, -1).shape == () and s.t().shape == () and s.T.shape == ()
    with pytest.raises(IndexError):
        s.transpose(0, 1)
    with pytest.raises(RuntimeError):
        t.t()
    with pytest.raises(RuntimeError):
        tl.zeros(3).mT


def test_squeeze_unsqueeze():
    t = tl.zeros(1, 3, 1, 2)
    assert t.squeeze().shape == (3, 2) and t.squeeze(0).shape == (3, 1, 2)
    assert t.squeeze(1).shape == (1, 3, 1, 2) and t.squeeze((0, 2)).shape == (3, 2)
    assert t.squeeze(-2).shape == (1, 3, 2)
    assert tl.squeeze(t, (1, 3)).shape == t.shape
    assert t.unsqueeze(4).shape == (1, 3, 1, 2, 1) and t.unsqueeze(-5).shape == (1, 1, 3, 1, 2)
    assert tl.tensor(3.0).unsqueeze(0).shape == (1,) and tl.tensor(3.0).squeeze().shape == ()
    assert tl.tensor(3.0).squeeze(0).shape == ()
    for fn in (lambda: t.unsqueeze(5), lambda: t.unsqueeze(-6), lambda: t.squeeze(4),
               lambda: tl.tensor(3.0).unsqueeze(2), lambda: tl.tensor(3.0).squeeze(1)):
        with pytest.raises(IndexError):
            fn()
    torch = pytest.importorskip("torch")
    b = torch.zeros(3, 4)[:, None, :]
    assert tl.zeros(3, 4)[:, None, :].stride() == b.stride()
    assert tl.zeros(3, 4).unsqueeze(2).stride() == torch.zeros(3, 4).unsqueeze(2).stride()


def test_zero_dim_dims():
    s = tl.tensor(2.0)
    for d in (0, -1, (0,), (-1,), (0, -1)):
        assert s.squeeze(d).shape == ()
    with pytest.raises(IndexError):
        s.squeeze(1)
    with pytest.raises((IndexError, RuntimeError)):
        s.diagonal(0, -1, 0)
    with pytest.raises(IndexError):
        s.diagonal()


def test_sixteen_dims_is_the_limit():
    t16 = tl.ones([1] * 15 + [2])
    assert (t16 + t16).shape == t16.shape and t16.permute(*range(15, -1, -1)).shape[0] == 2
    for fn in (lambda: t16.unsqueeze(0), lambda: t16[None], lambda: t16.view([1] * 17),
               lambda: t16.expand([1] * 17), lambda: t16.unfold(-1, 1, 1), lambda: tl.zeros([1] * 17),
               lambda: t16.unflatten(-1, (2, 1)), lambda: tl.broadcast_shapes([1] * 17, [2]),
               lambda: t16.as_strided([1] * 17, [1] * 17)):
        with pytest.raises(RuntimeError, match="16"):
            fn()
    assert tl.ones([1] * 14 + [3]).unfold(-1, 2, 1).shape == (1,) * 14 + (2, 2)


def test_flatten_unflatten():
    t = tl.arange(24).view(2, 3, 4)
    assert t.flatten().shape == (24,) and t.flatten(1).shape == (2, 12)
    assert t.flatten(0, 1).shape == (6, 4) and t.flatten(-2, -1).shape == (2, 12)
    assert t.flatten(1, 1) is t
    nc = t.transpose(0, 2)
    f = nc.flatten()
    assert f.tolist() == np.arange(24).reshape(2, 3, 4).transpose(2, 1, 0).reshape(-1).tolist()
    assert not _shares(f, nc)
    assert t.unflatten(1, (3, 1)).shape == (2, 3, 1, 4)
    assert t.unflatten(2, (-1, 2)).shape == (2, 3, 2, 2)
    assert nc.unflatten(0, (2, 2)).tolist() == np.arange(24).reshape(2, 3, 4).transpose(
        2, 1, 0).reshape(2, 2, 3, 2).tolist()
    with pytest.raises(RuntimeError):
        t.flatten(2, 1)
    with pytest.raises(RuntimeError):
        t.unflatten(2, (3, 2))
    with pytest.raises(IndexError):
        t.flatten(0, 3)


def test_narrow_select_unbind():
    t = tl.arange(24).view(2, 3, 4)
    assert t.narrow(2, -2, 2).tolist() == np.arange(24).reshape(2, 3, 4)[:, :, 2:].tolist()
    assert t.narrow(1, 3, 0).shape == (2, 0, 4)
    for fn in (lambda: t.narrow(2, 3, 2), lambda: t.narrow(0, 0, -1),
               lambda: tl.tensor(1.0).narrow(0, 0, 1), lambda: t.narrow(2, tl.tensor(True), 1),
               lambda: t.narrow(2, tl.tensor([1, 2]), 1), lambda: t.narrow(2, tl.tensor(1.0), 1)):
        with pytest.raises(RuntimeError):
            fn()
    # PyTorch's exception types: a start outside [-size, size] is an IndexError
    for fn in (lambda: t.narrow(5, 0, 1), lambda: t.narrow(2, 5, 0), lambda: t.narrow(2, -5, 0)):
        with pytest.raises(IndexError):
            fn()
    assert t.narrow(2, tl.tensor(1), 2).tolist() == np.arange(24).reshape(2, 3, 4)[:, :, 1:3].tolist()
    with pytest.raises(TypeError):
        t.narrow(2, 1.5, 1)
    assert t.select(1, -1).tolist() == np.arange(24).reshape(2, 3, 4)[:, -1].tolist()
    assert tl.select(t, 0, tl.tensor(1)).shape == (3, 4)
    for fn in (lambda: t.select(1, 3), lambda: t.select(1, -4), lambda: t.select(3, 0),
               lambda: tl.tensor(1.0).select(0, 0)):
        with pytest.raises(IndexError):
            fn()
    parts = t.unbind(1)
    assert len(parts) == 3 and all(p.shape == (2, 4) and _shares(p, t) for p in parts)
    assert tl.zeros(0, 2).unbind() == ()
    with pytest.raises(IndexError):
        tl.tensor(1.0).unbind()


def test_diagonal_matches_numpy():
    a = np.arange(60).reshape(3, 4, 5)
    t = tl.tensor(a)
    for off in range(-5, 7):
        for d1, d2 in ((0, 1), (1, 0), (1, 2), (2, 0), (-1, -3)):
            np.testing.assert_array_equal(t.diagonal(off, d1, d2).numpy(), np.diagonal(a, off, d1, d2))
    with pytest.raises(RuntimeError):
        t.diagonal(0, 1, 1)
    with pytest.raises(IndexError):
        t.diagonal(0, 0, 3)
    with pytest.raises(IndexError):
        tl.zeros(3).diagonal()


def test_unfold_matches_torch():
    torch = torch_or_skip()
    for shape, dim, size, step in (((10,), 0, 3, 2), ((2, 5), 1, 2, 1), ((4, 3), 0, 4, 1),
                                   ((4, 3), -2, 1, 3), ((10,), 0, 0, 2), ((), 0, 1, 1)):
        n = int(np.prod(shape))
        a = tl.arange(n).view(shape).unfold(dim, size, step)
        b = torch.arange(n).view(shape).unfold(dim, size, step)
        assert tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()
        assert a.tolist() == b.tolist()
    for args in ((0, 11, 2), (0, 3, 0), (0, -1, 1)):
        with pytest.raises(RuntimeError):
            tl.arange(10).unfold(*args)


def test_expand_and_broadcast():
    t = tl.arange(6).view(2, 3)
    e = t.expand(4, 2, 3)
    assert e.stride() == (0, 3, 1) and e.tolist() == [t.tolist()] * 4
    assert t.view(2, 1, 3).expand(2, 4, 3).stride() == (3, 0, 1)
    assert t.expand(-1, 3).shape == (2, 3) and t.expand_as(tl.zeros(5, 2, 3)).shape == (5, 2, 3)
    assert tl.tensor(7).expand(2, 2).tolist() == [[7, 7], [7, 7]]
    assert tl.broadcast_to(tl.arange(3), (2, 3)).stride() == (0, 1)
    assert t.broadcast_to((3, 2, 3)).shape == (3, 2, 3)
    a, b = tl.broadcast_tensors(tl.arange(3), tl.zeros(2, 1))
    assert a.shape == b.shape == (2, 3) and a.stride() == (0, 1) and b.stride() == (1, 0)
    assert tl.broadcast_shapes((2, 1), (3,), 1) == (2, 3)
    assert isinstance(tl.broadcast_shapes((1,), ()), tl.Size)
    for fn in (lambda: t.expand(3, 3), lambda: t.expand(3), lambda: t.expand(-1, 2, 3),
               lambda: tl.broadcast_shapes((2, 1), (3, 3)), lambda: tl.broadcast_tensors(
                   tl.zeros(2), tl.zeros(3))):
        with pytest.raises(RuntimeError):
            fn()


def test_movedim_matches_numpy():
    a = np.arange(120).reshape(2, 3, 4, 5)
    t = tl.tensor(a)
    for src, dst in ((0, 3), (-1, 0), ((0, 1), (2, 0)), ((3, 1), (0, 3)), ([], [])):
        np.testing.assert_array_equal(t.movedim(src, dst).numpy(), np.moveaxis(a, src, dst))
    with pytest.raises(RuntimeError):
        t.movedim((0, 1), (2,))
    with pytest.raises(RuntimeError):
        t.movedim((0, 0), (1, 2))
    with pytest.raises(IndexError):
        t.movedim(4, 0)


def test_atleast():
    s, v, m = tl.tensor(1.0), tl.tensor([1.0, 2.0]), tl.zeros(2, 3)
    assert tl.atleast_1d(v) is v and tl.atleast_2d(v).shape == (1, 2)
    assert tl.atleast_3d(v).shape == (1, 2, 1) and tl.atleast_3d(m).shape == (2, 3, 1)
    assert [x.shape for x in tl.atleast_1d(s, v)] == [(1,), (2,)]
    assert [x.shape for x in tl.atleast_2d([s, m])] == [(1, 1), (2, 3)]


# ---------------------------------------------------------------------------------------
# flip (a copy), contiguous, clone
# ---------------------------------------------------------------------------------------
def test_flip_matches_numpy():
    a = np.arange(60.0).reshape(3, 4, 5)
    for base, ref in ((tl.tensor(a), a), (tl.tensor(a).permute(2, 0, 1), a.transpose(2, 0, 1)),
                      (tl.tensor(a)[:, ::2], a[:, ::2]),
                      (tl.tensor(a[:1]).expand(3, 4, 5), np.broadcast_to(a[:1], (3, 4, 5)))):
        for dims in ((0,), (1,), (2,), (0, 2), (0, 1, 2), (-1,), (), [1, -1]):
            f = base.flip(dims)
            np.testing.assert_array_equal(f.numpy(), np.flip(ref, tuple(dims)) if dims else ref)
            assert not _shares(f, base)
    t = tl.tensor(a)
    assert t.flip(0).is_contiguous() and tl.fliplr(t[0]).tolist() == np.fliplr(a[0]).tolist()
    assert tl.flipud(t[0]).tolist() == np.flipud(a[0]).tolist()
    assert tl.tensor(3.0).flip(()).item() == 3.0 and tl.zeros(0, 2).flip(0).shape == (0, 2)
    with pytest.raises(RuntimeError):
        t.flip((0, 0))
    with pytest.raises(IndexError):
        t.flip(3)
    with pytest.raises(RuntimeError):
        tl.fliplr(tl.zeros(3))
    for dt in ALL_DTYPES:
        x = tl.tensor([0, 1, 1, 0]).to(dt)
        assert x.flip(0).tolist() == x.tolist()[::-1]


def test_contiguous_and_clone():
    t = tl.arange(6.0).view(2, 3)
    assert t.contiguous() is t
    c = t.t().contiguous()
    assert c.is_contiguous() and c.tolist() == t.t().tolist() and not _shares(c, t)
    k = t.t().clone()
    assert k.stride() == (1, 3) and not _shares(k, t)          # dense: strides kept
    k2 = t[:, ::2].clone()
    assert k2.is_contiguous() and k2.tolist() == [[0.0, 2.0], [3.0, 5.0]]
    e = tl.zeros(3).expand(2, 3).clone()
    assert e.is_contiguous()
    e.add_(1)                                                 # the clone is writable
    assert e.tolist() == [[1.0] * 3] * 2


# ---------------------------------------------------------------------------------------
# as_strided and view(dtype)
# ---------------------------------------------------------------------------------------
def test_as_strided_bounds():
    t = tl.arange(6)
    assert t.as_strided((2, 2), (1, 2)).tolist() == [[0, 2], [1, 3]]
    assert t.as_strided((2, 2), (1, 2), 2).tolist() == [[2, 4], [3, 5]]
    assert t.as_strided((3, 2), (0, 1)).tolist() == [[0, 1]] * 3
    assert t.as_strided((0, 100), (100, 100), 10).shape == (0, 100)
    assert t[2:].as_strided((4,), (1,)).tolist() == [2, 3, 4, 5]   # offset kept from the view
    assert t[2:].as_strided((2,), (1,), 0).tolist() == [0, 1]      # explicit offset is absolute
    for args in (((2, 4), (3, 1)), ((7,), (1,)), ((2,), (1,), 5), ((2, 2), (1, -1)),
                 ((2,), (1, 1)), ((1,), (1,), -1), ((2, 3), (1, 2), 2)):
        with pytest.raises(RuntimeError):
            t.as_strided(*args)
    with pytest.raises(RuntimeError):
        t[3:].as_strided((4,), (1,))


@pytest.mark.parametrize("src", ALL_DTYPES, ids=lambda d: d.name)
def test_view_dtype_matches_numpy(src):
    raw = np.arange(48, dtype=np.uint8).reshape(2, 24)
    base = tl.from_numpy(raw).view(src)
    for dst in ALL_DTYPES:
        if dst in (tl.bfloat16, tl.bool) or src in (tl.bfloat16,):
            v = base.view(dst)
            assert v.dtype is dst and _shares(v, base)
            assert v.shape[-1] * dst.itemsize == base.shape[-1] * src.itemsize
            continue
        v = base.view(dst)
        want = raw.view(NP_DTYPE[src.name]).view(NP_DTYPE[dst.name])
        assert v.shape == want.shape and v.dtype is dst and _shares(v, base)
        np.testing.assert_array_equal(to_numpy(v).view(np.uint8), want.view(np.uint8))


def test_view_dtype_rules():
    t = tl.arange(6, dtype=tl.int32)
    assert t.view(tl.float32).tolist() == np.arange(6, dtype=np.int32).view(np.float32).tolist()
    assert t.view(tl.int16).shape == (12,) and t.view(tl.int64).shape == (3,)
    assert t.view(2, 3).t().view(tl.float32).stride() == (1, 3)   # same size: any strides
    w = t.view(tl.int16)
    w[0] = 7
    assert t[0].item() == 7
    assert t[2:].view(tl.int64).tolist() == np.arange(6, dtype=np.int32)[2:].view(np.int64).tolist()
    assert tl.tensor(1, dtype=tl.int32).view(tl.float32).shape == ()
    for fn in (lambda: t.view(2, 3).t().view(tl.int16), lambda: t[1:].view(tl.int64),
               lambda: t[1:5].view(tl.int64), lambda: tl.tensor(1, dtype=tl.int32).view(tl.int16),
               lambda: t[::2].view(tl.int8)):
        with pytest.raises(RuntimeError):
            fn()


def test_as_strided_keeps_every_stride_with_a_zero_size_dim():
    v = tl.as_strided(tl.arange(6.0), (0, 3), (3, 1))
    assert v.shape == (0, 3) and v.stride() == (3, 1)
    w = tl.as_strided(tl.arange(6.0), (2, 0, 3), (3, 5, 1))
    assert w.stride() == (3, 5, 1)


@pytest.mark.parametrize("name,args", [("view", ((3, 2),)), ("permute", ((1, 0),)),
                                       ("t", ()), ("transpose", (0, 1)), ("unsqueeze", (1,)),
                                       ("expand", ((4, 2, 3),)), ("diagonal", ()),
                                       ("as_strided", ((2, 2), (1, 2))), ("detach", ())])
def test_copy_variants_are_contiguous_copies_of_the_view(name, args):
    a = np.arange(6.0).reshape(2, 3)
    x = tl.tensor(a, requires_grad=True)
    got = getattr(tl, f"{name}_copy")(x, *args)
    want = getattr(x, name)(*args)
    assert got.is_contiguous() and got.shape == want.shape
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    assert got.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    if name != "detach":
        got.sum().backward()
        assert x.grad is not None and x.grad.shape == x.shape
    parts = tl.unbind_copy(tl.tensor(a), 1)
    assert len(parts) == 3 and all(p.is_contiguous() for p in parts)
    np.testing.assert_array_equal(tl.alias_copy(tl.tensor(a)).numpy(), a)
