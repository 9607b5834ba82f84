"""The steps of synchronised batch norm as top-level functions (torchlite.batch_norm_stats,
batch_norm_gather_stats(_with_counts), batch_norm_elemt, batch_norm_backward_reduce,
batch_norm_backward_elemt, batch_norm_update_stats; torchlite/nn/functional/sync_batch_norm.py),
checked against NumPy in float64: split a batch into "ranks", run the steps as SyncBatchNorm
does, and compare with the statistics and gradients of the whole batch.  PyTorch runs most of
these on CUDA only; batch_norm_update_stats is compared with its CPU kernel where installed."""
import numpy as np
import pytest

import torchlite as tl
from helpers import torch_or_skip

EPS = 1e-5


def _batch(shape=(6, 3, 4, 2), seed=0):
    return np.random.default_rng(seed).standard_normal(shape) * 2 + 0.5


def _np_stats(x):
    dims = (0,) + tuple(range(2, x.ndim))
    return x.mean(dims), 1 / np.sqrt(x.var(dims) + EPS)


@pytest.mark.parametrize("shape", [(6, 3, 4, 2), (5, 4), (2, 2, 7)])
def test_stats_are_the_channel_mean_and_invstd(shape):
    x = _batch(shape)
    mean, invstd = tl.batch_norm_stats(tl.tensor(x), EPS)
    m, i = _np_stats(x)
    np.testing.assert_allclose(mean.numpy(), m, rtol=1e-12)
    np.testing.assert_allclose(invstd.numpy(), i, rtol=1e-12)
    assert mean.dtype is tl.float64 and mean.shape == (shape[1],)


def test_half_input_gives_float32_statistics():
    x = _batch((4, 3, 5)).astype(np.float16)
    mean, invstd = tl.batch_norm_stats(tl.tensor(x), EPS)
    assert mean.dtype is tl.float32 and invstd.dtype is tl.float32
    m, i = _np_stats(x.astype(np.float64))
    np.testing.assert_allclose(mean.numpy(), m, rtol=1e-5)
    np.testing.assert_allclose(invstd.numpy(), i, rtol=1e-5)


@pytest.mark.parametrize("sizes", [(2, 2, 2), (1, 4, 3), (3, 0, 3)])
def test_gather_merges_ranks_into_the_whole_batch(sizes):
    """Ranks of unequal (even empty) shards merge into the whole batch's statistics, and the
    running statistics move toward its mean and unbiased variance."""
    x = _batch((sum(sizes), 3, 4))
    parts, start = [], 0
    for k in sizes:
        parts.append(x[start:start + k])
        start += k
    means, invstds, counts = [], [], []
    for p in parts:
        if p.shape[0]:
            m, i = tl.batch_norm_stats(tl.tensor(p), EPS)
        else:
            m, i = tl.zeros(3, dtype=tl.float64), tl.ones(3, dtype=tl.float64)
        means.append(m)
        invstds.append(i)
        counts.append(p.shape[0] * p.shape[2])
    rm, rv = tl.zeros(3, dtype=tl.float64), tl.ones(3, dtype=tl.float64)
    mean, invstd = tl.batch_norm_gather_stats_with_counts(
        tl.tensor(x), tl.stack(means), tl.stack(invstds), rm, rv, 0.1, EPS,
        tl.tensor(counts, dtype=tl.float64))
    m, i = _np_stats(x)
    np.testing.assert_allclose(mean.numpy(), m, rtol=1e-10)
    np.testing.assert_allclose(invstd.numpy(), i, rtol=1e-10)
    np.testing.assert_allclose(rm.numpy(), 0.1 * m, rtol=1e-10)
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * x.var((0, 2), ddof=1), rtol=1e-10)


def test_gather_with_one_count_for_all():
    x = _batch((4, 2, 3))
    halves = [tl.batch_norm_stats(tl.tensor(h), EPS) for h in (x[:2], x[2:])]
    mean, invstd = tl.batch_norm_gather_stats(
        tl.tensor(x), tl.stack([h[0] for h in halves]), tl.stack([h[1] for h in halves]),
        None, None, 0.1, EPS, 6)
    m, i = _np_stats(x)
    np.testing.assert_allclose(mean.numpy(), m, rtol=1e-10)
    np.testing.assert_allclose(invstd.numpy(), i, rtol=1e-10)


def test_elemt_normalises_and_is_differentiable():
    x = _batch((3, 2, 4))
    w, b = np.array([0.5, 2.0]), np.array([-1.0, 0.25])
    m, i = _np_stats(x)
    y = tl.batch_norm_elemt(tl.tensor(x), tl.tensor(w), tl.tensor(b), tl.tensor(m), tl.tensor(i), EPS)
    expect = (x - m[:, None]) * i[:, None] * w[:, None] + b[:, None]
    np.testing.assert_allclose(y.numpy(), expect, rtol=1e-12)
    args = [tl.tensor(a, requires_grad=True) for a in (x, w, b, m, i)]
    assert tl.autograd.gradcheck(lambda *a: tl.batch_norm_elemt(*a[:5], EPS), args)


def test_backward_steps_give_batch_norms_input_gradient():
    """Two "ranks": each reduces, the sums are added (the all_reduce), each computes its
    shard's input gradient; together they equal batch_norm's gradient over the whole batch."""
    x, g = _batch((6, 3, 5)), _batch((6, 3, 5), seed=1)
    w = np.array([0.5, 1.5, -2.0])
    xt = tl.tensor(x, requires_grad=True)
    wt = tl.tensor(w, requires_grad=True)
    tl.nn.functional.batch_norm(xt, None, None, wt, None, training=True, eps=EPS).backward(tl.tensor(g))
    m, i = (tl.tensor(a) for a in _np_stats(x))
    shards = [slice(0, 2), slice(2, 6)]
    reduced = [tl.batch_norm_backward_reduce(tl.tensor(g[s]), tl.tensor(x[s]), m, i, tl.tensor(w),
                                             True, True, True) for s in shards]
    sum_dy = reduced[0][0] + reduced[1][0]
    sum_dy_xmu = reduced[0][1] + reduced[1][1]
    grad_w = reduced[0][2] + reduced[1][2]
    np.testing.assert_allclose(grad_w.numpy(), wt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose((reduced[0][3] + reduced[1][3]).numpy(), g.sum((0, 2)), rtol=1e-10)
    counts = tl.tensor([10, 20], dtype=tl.int32)
    for s in shards:
        gi = tl.batch_norm_backward_elemt(tl.tensor(g[s]), tl.tensor(x[s]), m, i, tl.tensor(w),
                                          sum_dy, sum_dy_xmu, counts)
        np.testing.assert_allclose(gi.numpy(), xt.grad.numpy()[s], rtol=1e-9, atol=1e-12)


def test_backward_reduce_leaves_out_what_is_not_asked_for():
    x = tl.tensor(_batch((2, 2, 3)))
    m, i = tl.batch_norm_stats(x, EPS)
    out = tl.batch_norm_backward_reduce(x, x, m, i, None, False, False, True)
    assert out[0] is None and out[1] is None and out[2] is None and out[3].shape == (2,)


def test_update_stats_returns_biased_var_and_updates_with_unbiased():
    x = _batch((4, 3, 5))
    rm, rv = tl.zeros(3, dtype=tl.float64), tl.ones(3, dtype=tl.float64)
    mean, var = tl.batch_norm_update_stats(tl.tensor(x), rm, rv, 0.2)
    np.testing.assert_allclose(mean.numpy(), x.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), x.var((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(rm.numpy(), 0.2 * x.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.8 + 0.2 * x.var((0, 2), ddof=1), rtol=1e-12)
    torch = torch_or_skip()
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    tmean, tvar = torch.batch_norm_update_stats(torch.from_numpy(x), trm, trv, 0.2)
    np.testing.assert_allclose(var.numpy(), tvar.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-12)


def test_statistics_have_no_gradient():
    x = tl.tensor(_batch((2, 2, 3)), requires_grad=True)
    mean, invstd = tl.batch_norm_stats(x, EPS)
    assert mean.requires_grad
    with pytest.raises(RuntimeError, match="batch_norm_stats"):
        mean.sum().backward()


def test_bad_arguments_raise():
    x = tl.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match="at least 2 dims"):
        tl.batch_norm_stats(tl.randn(3), EPS)
    with pytest.raises(NotImplementedError):
        tl.batch_norm_stats(tl.ones(2, 3, dtype=tl.int64), EPS)
    m, i = tl.batch_norm_stats(x, EPS)
    with pytest.raises(RuntimeError, match="one per channel"):
        tl.batch_norm_elemt(x, None, None, m[:2], i, EPS)
    with pytest.raises(RuntimeError, match="world_size, channels"):
        tl.batch_norm_gather_stats_with_counts(x, m, i, None, None, 0.1, EPS, tl.ones(1))
    with pytest.raises(RuntimeError, match="one element per row"):
        tl.batch_norm_gather_stats_with_counts(x, m[None], i[None], None, None, 0.1, EPS, tl.ones(3))


def test_a_process_with_no_elements_adds_nothing():
    """A rank whose local batch is empty reports NaN statistics with a count of 0: the merge
    leaves it out (the NaNs do not spread), as PyTorch's kernel skips it."""
    x = _batch((4, 3))
    m, i = tl.batch_norm_stats(tl.tensor(x), EPS)
    em, ei = tl.batch_norm_stats(tl.zeros(0, 3, dtype=tl.float64), EPS)
    assert np.isnan(em.numpy()).all()
    mean, invstd = tl.batch_norm_gather_stats_with_counts(
        tl.tensor(x), tl.stack([m, em]), tl.stack([i, ei]), None, None, 0.1, EPS,
        tl.tensor([4.0, 0.0], dtype=tl.float64))
    want_m, want_i = _np_stats(x)
    np.testing.assert_allclose(mean.numpy(), want_m, rtol=1e-12)
    np.testing.assert_allclose(invstd.numpy(), want_i, rtol=1e-12)


def test_update_stats_keeps_the_input_dtype_and_refuses_empty_input():
    x = _batch((4, 3, 5)).astype(np.float16)
    mean, var = tl.batch_norm_update_stats(tl.tensor(x), None, None, 0.1)
    assert mean.dtype is tl.float16 and var.dtype is tl.float16
    np.testing.assert_allclose(var.numpy(), x.astype(np.float64).var((0, 2)), rtol=2e-3)
    with pytest.raises(RuntimeError, match="at least one element"):
        tl.batch_norm_update_stats(tl.zeros(0, 3, 2), None, None, 0.1)
