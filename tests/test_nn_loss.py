"""torchlite.nn.functional's losses and the loss Modules.

CASES lists every loss of nn/functional/loss.py (with its main options) once: gradcheck in
float64 on contiguous, transposed, strided and expanded inputs, gradgradcheck where twice
differentiable, values and gradients compared with PyTorch's.  Forward values are also checked
against NumPy references written here, for every reduction; then the fused nll/cross-entropy
kernel (torchlite/_core/loss.pyx) at 1 and 2 threads, its error cases, and the Modules."""
import math
import warnings

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.nn.functional import loss as _loss
from helpers import Case, case_table_tests, missing_ops, assert_values


def _f(L):
    return L.nn.functional


def _t(L, values, dtype=None):
    return L.tensor(values, dtype=dtype)


_IDX3 = [2, 0, 1]                # class indices for a batch of 3 (4 classes)
_IDX_IGN = [2, -100, 1]          # with an ignored entry
_SIGNS = [1.0, -1.0, 1.0]
_P = [[0.2, 0.9, 0.5, 0.7], [0.1, 0.4, 0.6, 0.3], [0.8, 0.5, 0.2, 0.9]]     # in [0, 1]
_W4 = [0.5, 2.0, 1.0, 1.5]


# ---- the gradient table --------------------------------------------------------------------------
CASES = [
    Case("mse_loss", lambda L, x, y: _f(L).mse_loss(x, y), (2, 3), (2, 3)),
    Case("l1_loss", lambda L, x, y: _f(L).l1_loss(x, y, reduction="sum"), (2, 3), (2, 3),
         double=False),
    Case("smooth_l1_loss", lambda L, x, y: _f(L).smooth_l1_loss(x, y, beta=0.5), (2, 3), (2, 3),
         double=False),
    Case("huber_loss", lambda L, x, y: _f(L).huber_loss(x, y, reduction="none", delta=0.6),
         (2, 3), (2, 3), double=False),
    Case("cross_entropy", lambda L, x: _f(L).cross_entropy(x, _t(L, _IDX3)), (3, 4)),
    Case("cross_entropy_weight_ignore", lambda L, x: _f(L).cross_entropy(
        x, _t(L, _IDX_IGN), weight=_t(L, _W4, L.float64), reduction="sum"), (3, 4)),
    Case("cross_entropy_none_kdim", lambda L, x: _f(L).cross_entropy(
        x, _t(L, [[1, 0], [3, 3]]), reduction="none"), (2, 4, 2), layouts=("contig", "step", "expand")),
    Case("cross_entropy_smoothing", lambda L, x: _f(L).cross_entropy(
        x, _t(L, _IDX_IGN), label_smoothing=0.2), (3, 4)),
    Case("cross_entropy_probs", lambda L, x, p: _f(L).cross_entropy(x, p.softmax(1)), (3, 4),
         (3, 4)),
    Case("nll_loss", lambda L, x: _f(L).nll_loss(x, _t(L, _IDX_IGN), _t(L, _W4, L.float64)),
         (3, 4)),
    Case("binary_cross_entropy", lambda L, x, y: _f(L).binary_cross_entropy(
        x.sigmoid(), y.sigmoid()), (2, 3), (2, 3)),
    Case("binary_cross_entropy_with_logits", lambda L, x, y: _f(L).binary_cross_entropy_with_logits(
        x, y.sigmoid(), pos_weight=_t(L, [0.5, 2.0, 1.5], L.float64), reduction="sum"), (2, 3),
        (2, 3)),
    Case("kl_div", lambda L, x, y: _f(L).kl_div(x, y.exp(), reduction="batchmean"), (2, 3), (2, 3)),
    Case("cosine_embedding_loss", lambda L, x, y: _f(L).cosine_embedding_loss(
        x, y, _t(L, [1.0, -1.0]), margin=-0.5), (2, 3), (2, 3)),
    Case("margin_ranking_loss", lambda L, x, y: _f(L).margin_ranking_loss(
        x, y, _t(L, [[1.0, -1.0, 1.0]] * 2, L.float64), margin=0.1), (2, 3), (2, 3), double=False),
    Case("triplet_margin_loss", lambda L, a, p, n: _f(L).triplet_margin_loss(a, p, n, margin=3.0),
         (2, 3), (2, 3), (2, 3)),
    Case("soft_margin_loss", lambda L, x: _f(L).soft_margin_loss(
        x, _t(L, [_SIGNS, _SIGNS[::-1]], L.float64)), (2, 3)),
    Case("hinge_embedding_loss", lambda L, x: _f(L).hinge_embedding_loss(
        x, _t(L, [_SIGNS, _SIGNS[::-1]], L.float64), margin=0.5), (2, 3), double=False),
    Case("poisson_nll_loss", lambda L, x, y: _f(L).poisson_nll_loss(x, y.exp()), (2, 3), (2, 3)),
    Case("gaussian_nll_loss", lambda L, x, y, v: _f(L).gaussian_nll_loss(x, y, v.exp()), (2, 3),
         (2, 3), (2, 3)),
    Case("multi_margin_loss", lambda L, x: _f(L).multi_margin_loss(
        x, _t(L, [2, 0]), p=2, margin=0.7, weight=_t(L, [0.5, 2.0, 1.0], L.float64)), (2, 3)),
    Case("multilabel_margin_loss", lambda L, x: _f(L).multilabel_margin_loss(
        x * 0.3, _t(L, [[2, -1, 0], [1, 0, -1]]), reduction="none"), (2, 3), double=False),
    Case("multilabel_soft_margin_loss", lambda L, x, y: _f(L).multilabel_soft_margin_loss(
        x, y.sigmoid(), weight=_t(L, [0.5, 2.0, 1.0], L.float64)), (2, 3), (2, 3)),
    Case("triplet_margin_with_distance_loss", lambda L, a, p, n:
         _f(L).triplet_margin_with_distance_loss(a, p, n, margin=3.0, swap=True), (2, 3), (2, 3),
         (2, 3)),
]

test_gradcheck, test_gradgradcheck, test_matches_torch = case_table_tests(CASES)


def test_every_loss_has_a_case():
    assert missing_ops(CASES, _loss.__all__) == []


# ---- forward values against NumPy, every reduction ----------------------------------------------
def _np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def _np_nll(lp, t, w=None, ignore=-100):
    """Per-element losses and weights of log-probabilities lp [N, C, ...] at targets t."""
    w = np.ones(lp.shape[1]) if w is None else np.asarray(w)
    keep = t != ignore
    tt = np.where(keep, t, 0)
    picked = np.take_along_axis(lp, tt[:, None], axis=1)[:, 0]
    wt = w[tt] * keep
    return -picked * wt, wt


def _np_reduce(loss, reduction, denom=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.asarray(loss.sum())
    with np.errstate(invalid="ignore"):
        return np.asarray(loss.sum() / (loss.size if denom is None else denom))


def _np_cross_entropy(x, t, w, reduction, ignore=-100):
    loss, wt = _np_nll(_np_log_softmax(x, 1), t, w, ignore)
    return _np_reduce(loss, reduction, wt.sum())


RNG = np.random.default_rng(7)
X = RNG.standard_normal((5, 4))
T = np.array([3, 0, 1, -100, 2])
X3 = RNG.standard_normal((2, 4, 3))
T3 = np.array([[0, 3, -100], [2, 2, 1]])
A, B = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
PR = RNG.uniform(0.05, 0.95, (3, 4))
TB = RNG.uniform(0, 1, (3, 4))
SG = np.where(RNG.standard_normal((3, 4)) > 0, 1.0, -1.0)


def _softplus(x):
    return np.logaddexp(0, x)


def _cos(a, b):
    return (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))


NP_CASES = {
    "cross_entropy": (lambda r: F.cross_entropy(tl.tensor(X), tl.tensor(T), reduction=r),
                      lambda r: _np_cross_entropy(X, T, None, r)),
    "cross_entropy_weight": (
        lambda r: F.cross_entropy(tl.tensor(X), tl.tensor(T), tl.tensor(_W4, dtype=tl.float64),
                                  reduction=r),
        lambda r: _np_cross_entropy(X, T, _W4, r)),
    "cross_entropy_kdim": (lambda r: F.cross_entropy(tl.tensor(X3), tl.tensor(T3), reduction=r),
                           lambda r: _np_cross_entropy(X3, T3, None, r)),
    "cross_entropy_probs": (lambda r: F.cross_entropy(tl.tensor(A), tl.tensor(TB), reduction=r),
                            lambda r: _np_reduce(-(_np_log_softmax(A, 1) * TB).sum(1), r)),
    "nll_loss": (lambda r: F.nll_loss(tl.tensor(X), tl.tensor(T), reduction=r),
                 lambda r: _np_reduce(*_np_nll_with_denom(X, T, r))),
    "mse_loss": (lambda r: F.mse_loss(tl.tensor(A), tl.tensor(B), reduction=r),
                 lambda r: _np_reduce((A - B) ** 2, r)),
    "l1_loss": (lambda r: F.l1_loss(tl.tensor(A), tl.tensor(B), reduction=r),
                lambda r: _np_reduce(np.abs(A - B), r)),
    "smooth_l1_loss": (lambda r: F.smooth_l1_loss(tl.tensor(A), tl.tensor(B), reduction=r, beta=0.7),
                       lambda r: _np_reduce(_np_huber(A - B, 0.7) / 0.7, r)),
    "huber_loss": (lambda r: F.huber_loss(tl.tensor(A), tl.tensor(B), reduction=r, delta=0.7),
                   lambda r: _np_reduce(_np_huber(A - B, 0.7), r)),
    "binary_cross_entropy": (
        lambda r: F.binary_cross_entropy(tl.tensor(PR), tl.tensor(TB), reduction=r),
        lambda r: _np_reduce(-(TB * np.log(PR) + (1 - TB) * np.log(1 - PR)), r)),
    "binary_cross_entropy_with_logits": (
        lambda r: F.binary_cross_entropy_with_logits(tl.tensor(A), tl.tensor(TB), reduction=r),
        lambda r: _np_reduce((1 - TB) * A + _softplus(-A), r)),
    "kl_div": (lambda r: F.kl_div(tl.tensor(A), tl.tensor(PR), reduction=r),
               lambda r: _np_reduce(PR * (np.log(PR) - A), r)),
    "cosine_embedding_loss": (
        lambda r: F.cosine_embedding_loss(tl.tensor(A), tl.tensor(B), tl.tensor(SG[:, 0]),
                                          margin=0.1, reduction=r),
        lambda r: _np_reduce(np.where(SG[:, 0] == 1, 1 - _cos(A, B),
                                      np.maximum(_cos(A, B) - 0.1, 0)), r)),
    "margin_ranking_loss": (
        lambda r: F.margin_ranking_loss(tl.tensor(A), tl.tensor(B), tl.tensor(SG), 0.2, reduction=r),
        lambda r: _np_reduce(np.maximum(-SG * (A - B) + 0.2, 0), r)),
    "triplet_margin_loss": (
        lambda r: F.triplet_margin_loss(tl.tensor(A), tl.tensor(B), tl.tensor(PR), reduction=r),
        lambda r: _np_reduce(np.maximum(1 + np.linalg.norm(A - B + 1e-6, axis=1)
                                        - np.linalg.norm(A - PR + 1e-6, axis=1), 0), r)),
    "soft_margin_loss": (lambda r: F.soft_margin_loss(tl.tensor(A), tl.tensor(SG), reduction=r),
                         lambda r: _np_reduce(np.log1p(np.exp(-SG * A)), r)),
    "hinge_embedding_loss": (
        lambda r: F.hinge_embedding_loss(tl.tensor(A), tl.tensor(SG), 0.5, reduction=r),
        lambda r: _np_reduce(np.where(SG == 1, A, np.maximum(0.5 - A, 0)), r)),
    "poisson_nll_loss": (lambda r: F.poisson_nll_loss(tl.tensor(A), tl.tensor(PR), reduction=r),
                         lambda r: _np_reduce(np.exp(A) - PR * A, r)),
    "multi_margin_loss": (
        lambda r: F.multi_margin_loss(tl.tensor(A), tl.tensor([3, 0, 1]), margin=0.5, reduction=r),
        lambda r: _np_reduce(_np_multi_margin(A, np.array([3, 0, 1]), 0.5), r)),
    "multilabel_margin_loss": (
        lambda r: F.multilabel_margin_loss(tl.tensor(A), tl.tensor(_ML), reduction=r),
        lambda r: _np_reduce(_np_multilabel_margin(A, _ML), r)),
    "multilabel_soft_margin_loss": (
        lambda r: F.multilabel_soft_margin_loss(tl.tensor(A), tl.tensor(TB), reduction=r),
        lambda r: _np_reduce(((1 - TB) * A + _softplus(-A)).mean(1), r)),
    "triplet_margin_with_distance_loss": (
        lambda r: F.triplet_margin_with_distance_loss(
            tl.tensor(A), tl.tensor(B), tl.tensor(PR), distance_function=lambda u, v: (u - v).abs().sum(-1),
            margin=2.0, reduction=r),
        lambda r: _np_reduce(np.maximum(2 + np.abs(A - B).sum(1) - np.abs(A - PR).sum(1), 0), r)),
    "gaussian_nll_loss": (
        lambda r: F.gaussian_nll_loss(tl.tensor(A), tl.tensor(B), tl.tensor(PR), reduction=r),
        lambda r: _np_reduce(0.5 * (np.log(PR) + (A - B) ** 2 / PR), r)),
}


def _np_nll_with_denom(x, t, r):
    loss, wt = _np_nll(x, t)
    return loss, r, wt.sum()


_ML = np.array([[3, 0, -1, 2], [1, -1, 3, 3], [0, 1, 2, 3]])


def _np_multi_margin(x, t, margin):
    out = []
    for row, y in zip(x, t):
        h = np.maximum(0, margin - row[y] + row)
        h[y] = 0
        out.append(h.sum() / len(row))
    return np.array(out)


def _np_multilabel_margin(x, t):
    out = []
    for row, ts in zip(x, t):
        listed = []
        for v in ts:
            if v < 0:
                break
            listed.append(v)
        others = [k for k in range(len(row)) if k not in listed]
        out.append(sum(max(0, 1 - row[j] + row[k]) for j in listed for k in others) / len(row))
    return np.array(out)


def _np_huber(d, delta):
    ad = np.abs(d)
    return np.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))


def test_every_loss_has_a_numpy_reference():
    assert [n for n in _loss.__all__ if n not in NP_CASES] == []


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", sorted(NP_CASES))
def test_forward_matches_numpy(name, reduction):
    ours, ref = NP_CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_values(ours(reduction), ref(reduction), rtol=1e-12, atol=1e-12, msg=name)


# ---- cross_entropy / nll_loss: options, dtypes, threads ------------------------------------------
def _ce_both(x, t, **kw):
    """(value, gradient) of cross_entropy in torchlite and torch for the same arrays."""
    torch = pytest.importorskip("torch")
    out = []
    for L in (tl, torch):
        xx = L.tensor(x, requires_grad=True)
        opts = {k: (L.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        y = L.nn.functional.cross_entropy(xx, L.tensor(t), **opts)
        g, = L.autograd.grad(y.sum(), xx)
        out.append((y.detach().numpy(), g.numpy()))
    return out


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(6, 5), (5,), (2, 5, 3), (2, 5, 2, 2), (2, 5, 2, 1, 2)])
def test_cross_entropy_layouts_match_torch(shape, reduction):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = rng.integers(0, shape[1 if len(shape) > 1 else 0], tshape)
    w = rng.random(shape[1 if len(shape) > 1 else 0])
    (a, ga), (b, gb) = _ce_both(x, t, weight=w, reduction=reduction)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ga, gb, rtol=1e-10, atol=1e-12)


def test_cross_entropy_on_a_non_contiguous_input():
    x = np.random.default_rng(1).standard_normal((4, 6))
    t = np.array([1, 0, 3, 2, 1, 0])
    (a, ga), (b, gb) = _ce_both(x.T.copy(), t)
    xt = tl.tensor(x, requires_grad=True)
    y = F.cross_entropy(xt.t(), tl.tensor(t))
    g, = tl.autograd.grad(y, xt)
    np.testing.assert_allclose(y.item(), b, rtol=1e-12)
    np.testing.assert_allclose(g.numpy().T, gb, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("N,C", [(64, 10), (4096, 20)])
def test_cross_entropy_kernel_thread_counts(threads, N, C):
    """The fused kernel (4096 x 20 runs its backward in parallel) gives the same loss and
    gradient at 1 and 2 threads, equal to NumPy's."""
    rng = np.random.default_rng(N)
    x = rng.standard_normal((N, C)).astype(np.float32)
    t = rng.integers(0, C, N)
    t[::7] = -100
    xx = tl.tensor(x, requires_grad=True)
    y = F.cross_entropy(xx, tl.tensor(t))
    y.backward()
    ref = _np_cross_entropy(x.astype(np.float64), t, None, "mean")
    np.testing.assert_allclose(y.item(), ref, rtol=1e-6)
    lp = _np_log_softmax(x.astype(np.float64), 1)
    keep = t != -100
    grad = np.exp(lp) * keep[:, None]
    grad[np.arange(N)[keep], t[keep]] -= 1
    np.testing.assert_allclose(xx.grad.numpy(), grad / keep.sum(), rtol=1e-5, atol=1e-8)


def test_cross_entropy_deterministic_across_thread_counts():
    rng = np.random.default_rng(2)
    x = tl.tensor(rng.standard_normal((4096, 20)).astype(np.float32), requires_grad=True)
    t = tl.tensor(rng.integers(0, 20, 4096))
    res = []
    old = tl.get_num_threads()
    try:
        for th in (1, 2):
            tl.set_num_threads(th)
            x.grad = None
            y = F.cross_entropy(x, t, reduction="sum")
            y.backward()
            res.append((y.item(), x.grad.numpy().copy()))
    finally:
        tl.set_num_threads(old)
    assert res[0][0] == res[1][0]
    np.testing.assert_array_equal(res[0][1], res[1][1])


@pytest.mark.parametrize("dtype,tol", [(tl.float16, 2e-3), (tl.bfloat16, 1.6e-2), (tl.float32, 1e-6)])
def test_cross_entropy_reduced_precision(dtype, tol):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 5))
    t = rng.integers(0, 5, 8)
    xx = tl.tensor(x).to(dtype).requires_grad_()
    y = F.cross_entropy(xx, tl.tensor(t))
    assert y.dtype is dtype
    y.backward()
    assert xx.grad.dtype is dtype
    held = xx.detach().double().numpy()
    np.testing.assert_allclose(y.float().item(), _np_cross_entropy(held, t, None, "mean"), rtol=tol)


def test_uint8_targets_and_ignore_index_in_range():
    x = np.random.default_rng(4).standard_normal((4, 3))
    t = np.array([0, 2, 1, 2])
    a = F.cross_entropy(tl.tensor(x), tl.tensor(t).to(tl.uint8), ignore_index=2)
    np.testing.assert_allclose(a.item(), _np_cross_entropy(x, t, None, "mean", ignore=2), rtol=1e-12)


def test_all_ignored_targets():
    x = tl.randn(3, 4, dtype=tl.float64, requires_grad=True)
    t = tl.tensor([-100, -100, -100])
    y = F.cross_entropy(x, t)
    assert math.isnan(y.item())
    y.backward()
    assert_values(x.grad, np.zeros((3, 4)))
    g, = tl.autograd.grad(F.cross_entropy(x, t), x, create_graph=True)
    assert_values(g.detach(), np.zeros((3, 4)))
    assert F.cross_entropy(x, t, reduction="sum").item() == 0.0
    assert F.nll_loss(x, t, reduction="none").tolist() == [0.0, 0.0, 0.0]
    assert math.isnan(F.cross_entropy(tl.empty(0, 4), tl.empty(0, dtype=tl.int64)).item())
    empty = tl.empty(0, 4, 3, requires_grad=True)
    assert F.cross_entropy(empty, tl.empty(0, 3, dtype=tl.int64), reduction="none").shape == (0, 3)
    F.cross_entropy(empty, tl.empty(0, 3, dtype=tl.int64), reduction="sum").backward()
    assert empty.grad.shape == (0, 4, 3)


def test_weighted_mean_divides_by_the_weights_of_kept_targets():
    lp = tl.tensor([[1.0, 2.0], [3.0, 4.0]])
    t = tl.tensor([0, 1])
    w = tl.tensor([2.0, 3.0])
    assert F.nll_loss(lp, t, w).item() == pytest.approx(-(2 * 1 + 3 * 4) / 5)
    assert F.nll_loss(lp, t, w, ignore_index=0).item() == pytest.approx(-4.0)


def test_double_backward_of_cross_entropy_is_the_softmax_hessian():
    x = tl.tensor([[0.3, -1.0, 2.0]], dtype=tl.float64, requires_grad=True)
    g, = tl.autograd.grad(F.cross_entropy(x, tl.tensor([1]), reduction="sum"), x, create_graph=True)
    v = tl.tensor([[1.0, 2.0, -1.0]], dtype=tl.float64)
    hv, = tl.autograd.grad((g * v).sum(), x)
    p = _softmax(x.detach().numpy()[0])
    hess = np.diag(p) - np.outer(p, p)
    np.testing.assert_allclose(hv.numpy()[0], hess @ v.numpy()[0], rtol=1e-12)


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def test_target_changed_in_place_after_forward_is_caught():
    x = tl.randn(3, 4, requires_grad=True)
    t = tl.tensor([0, 1, 2])
    y = F.cross_entropy(x, t)
    t[0] = 3
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: F.cross_entropy(tl.randn(4, 5), tl.tensor([0, 1, 5, 2])), IndexError,
     "Target 5 is out of bounds."),
    (lambda: F.cross_entropy(tl.randn(4, 5), tl.tensor([0, 1, -1, 2])), IndexError,
     "Target -1 is out of bounds."),
    (lambda: F.nll_loss(tl.randn(2, 3, 2), tl.tensor([[0, 7], [1, 1]])), IndexError,
     "Target 7 is out of bounds."),
    (lambda: F.cross_entropy(tl.randn(4, 5), tl.tensor([0, 1, 2, 3], dtype=tl.int32)), RuntimeError,
     "expected target dtype to be Long or Byte, but got Int"),
    (lambda: F.cross_entropy(tl.randn(4, 5), tl.tensor([0, 1, 2])), ValueError,
     r"Expected input batch_size \(4\) to match target batch_size \(3\)."),
    (lambda: F.cross_entropy(tl.randn(4, 5), tl.rand(4, 4)), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda: F.cross_entropy(tl.randn(2, 3, 4), tl.zeros(2, 5, dtype=tl.int64)), RuntimeError,
     r"Expected target size \[2, 4\], got \[2, 5\]"),
    (lambda: F.nll_loss(tl.randn(2, 3, 4, 4), tl.zeros(2, 4, dtype=tl.int64)), RuntimeError,
     "only batches of spatial targets supported"),
    (lambda: F.cross_entropy(tl.randn(4, 5), tl.tensor([0, 1, 2, 3]), weight=tl.rand(4)),
     RuntimeError, "weight tensor should be defined either for all 5 classes"),
    (lambda: F.nll_loss(tl.randn(4, 5), tl.tensor([0, 1, 2, 3]), weight=tl.rand(5).double()),
     RuntimeError, "expected scalar type Float but found Double"),
    (lambda: F.cross_entropy(tl.randn(4, 5), tl.tensor([0, 1, 2, 3]), reduction="avg"), ValueError,
     "avg is not a valid value for reduction"),
    (lambda: F.cross_entropy(tl.randn(4, 5), tl.tensor([0, 1, 2, 3]), label_smoothing=1.5),
     RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    (lambda: F.cross_entropy(tl.randn(4, 5), tl.rand(4, 5), ignore_index=1), RuntimeError,
     "ignore_index is not supported for floating point target"),
    (lambda: F.cross_entropy(tl.tensor(1.0), tl.tensor(0)), RuntimeError,
     "Expected floating point type for target with class probabilities, got Long"),
    (lambda: F.nll_loss(tl.tensor(1.0), tl.tensor(0)), ValueError, "Expected 1 or more dimensions"),
    (lambda: F.nll_loss(tl.randn(5), tl.tensor([1, 2])), ValueError,
     "For 1D input, 1D target must have size 1"),
    (lambda: F.nll_loss(tl.ones(2, 3, dtype=tl.int64), tl.tensor([0, 1])), NotImplementedError,
     "not implemented for 'Long'"),
    (lambda: F.cross_entropy(tl.randn(2, 3), tl.tensor([0, 1]),
                             weight=tl.rand(3, requires_grad=True)), RuntimeError,
     "not differentiable with respect to argument 'weight'"),
])
def test_nll_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_cross_entropy_error_raised_before_any_gradient_is_recorded():
    x = tl.randn(3, 4, requires_grad=True)
    with pytest.raises(IndexError):
        F.cross_entropy(x, tl.tensor([0, 4, 1]))
    assert x.grad is None


# ---- binary cross-entropy ------------------------------------------------------------------------
def test_bce_clamps_logs_at_minus_100():
    x = tl.tensor([0.0, 1.0, 0.5, 1e-30], dtype=tl.float64)
    t = tl.tensor([1.0, 0.0, 0.3, 1.0], dtype=tl.float64)
    out = F.binary_cross_entropy(x, t, reduction="none")
    assert_values(out, [100.0, 100.0, -(0.3 * math.log(0.5) + 0.7 * math.log(0.5)),
                        -math.log(1e-30)], rtol=1e-12)
    leaf = x.clone().requires_grad_()
    g, = tl.autograd.grad(F.binary_cross_entropy(leaf, t, reduction="sum"), leaf)
    assert g.numpy()[:2].tolist() == [-1e12, 1e12]


def test_bce_with_logits_is_stable_for_large_logits():
    x = tl.tensor([-1000.0, 1000.0, 0.0], requires_grad=True)
    t = tl.tensor([1.0, 0.0, 1.0])
    y = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    assert_values(y.detach(), [1000.0, 1000.0, math.log(2)], rtol=1e-6)
    y.sum().backward()
    assert_values(x.grad, [-1.0, 1.0, -0.5], rtol=1e-6)


def test_bce_weights_broadcast_and_are_not_differentiable():
    torch = pytest.importorskip("torch")
    res = []
    for L in (tl, torch):
        x = L.tensor(PR, requires_grad=True)
        y = L.nn.functional.binary_cross_entropy(x, L.tensor(TB), weight=L.tensor([1.0, 2.0, 0.5, 3.0],
                                                                                    dtype=L.float64))
        res.append((y.item(), L.autograd.grad(y, x)[0].numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-10)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        F.binary_cross_entropy(tl.tensor(PR), tl.tensor(TB), weight=tl.ones(4, dtype=tl.float64,
                                                                             requires_grad=True))
    with pytest.raises(RuntimeError, match="argument 'pos_weight'"):
        F.binary_cross_entropy_with_logits(tl.tensor(A), tl.tensor(TB),
                                           pos_weight=tl.ones(4, dtype=tl.float64, requires_grad=True))


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: F.binary_cross_entropy(tl.tensor([1.5]), tl.tensor([0.5])), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(tl.tensor([math.nan]), tl.tensor([0.5])), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(tl.rand(3), tl.rand(3, 1)), ValueError,
     "that is different to the input size"),
    (lambda: F.binary_cross_entropy_with_logits(tl.rand(3), tl.rand(3, 1)), ValueError,
     r"Target size \(torchlite.Size\(\[3, 1\]\)\) must be the same as input size"),
])
def test_binary_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


# ---- the other losses: options and checks -------------------------------------------------------------
def test_legacy_size_average_and_reduce():
    x, y = tl.tensor(A), tl.tensor(B)
    with pytest.warns(UserWarning, match="reduction='sum' instead"):
        s = F.mse_loss(x, y, size_average=False)
    assert s.item() == pytest.approx(((A - B) ** 2).sum())
    with pytest.warns(UserWarning, match="reduction='none' instead"):
        assert F.l1_loss(x, y, reduce=False).shape == (3, 4)
    with pytest.warns(UserWarning, match="reduction='mean' instead"):
        m = nn.NLLLoss(size_average=True)
    assert m.reduction == "mean"


def test_weighted_mse_and_l1_divide_by_the_weight_sum():
    w = PR
    got = F.mse_loss(tl.tensor(A), tl.tensor(B), weight=tl.tensor(w))
    assert got.item() == pytest.approx(((A - B) ** 2 * w).sum() / w.sum())
    got = F.l1_loss(tl.tensor(A), tl.tensor(B), weight=tl.tensor(w), reduction="sum")
    assert got.item() == pytest.approx((np.abs(A - B) * w).sum())
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        F.mse_loss(tl.tensor(A), tl.tensor(B), weight=tl.ones(4))


def test_size_mismatch_warns_and_broadcasts():
    with pytest.warns(UserWarning, match="different to the input size"):
        out = F.mse_loss(tl.tensor(A), tl.tensor(B[0]))
    assert out.item() == pytest.approx(((A - B[0]) ** 2).mean())


def test_kl_div_modes():
    x, t = tl.tensor(A), tl.tensor(PR)
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(x, t)
    bm = F.kl_div(x, t, reduction="batchmean")
    assert bm.item() == pytest.approx((PR * (np.log(PR) - A)).sum() / 3)
    lt = F.kl_div(x, tl.tensor(np.log(PR)), reduction="sum", log_target=True)
    assert lt.item() == pytest.approx((PR * (np.log(PR) - A)).sum())
    zero = F.kl_div(x, tl.zeros(3, 4, dtype=tl.float64), reduction="none")
    assert not zero.isnan().any()


def test_poisson_full_and_gaussian_variants_match_torch():
    torch = pytest.importorskip("torch")
    tgt = np.array([[0.0, 1.0, 2.5, 4.0], [3.0, 0.5, 1.0, 6.0], [2.0, 2.0, 0.0, 1.5]])
    for L in (tl, torch):
        Fn = L.nn.functional
        vals = [Fn.poisson_nll_loss(L.tensor(PR), L.tensor(tgt), log_input=False, full=True),
                Fn.gaussian_nll_loss(L.tensor(A), L.tensor(B), L.tensor(PR[:, :1]), full=True),
                Fn.gaussian_nll_loss(L.tensor(A), L.tensor(B), L.tensor(PR[:, 0])),
                Fn.gaussian_nll_loss(L.tensor(A), L.tensor(B), 0.5, reduction="sum"),
                Fn.gaussian_nll_loss(L.tensor(A), L.tensor(B), L.tensor(PR * 0), eps=1e-3)]
        if L is tl:
            ours = [v.item() for v in vals]
        else:
            np.testing.assert_allclose(ours, [v.item() for v in vals], rtol=1e-12)
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(tl.tensor(A), tl.tensor(B), -tl.tensor(PR))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(tl.tensor(A), tl.tensor(B), tl.ones(2, 2, dtype=tl.float64))


def test_gaussian_var_clamp_keeps_the_gradient():
    v = tl.tensor([[1e-9, 2.0]], dtype=tl.float64, requires_grad=True)
    loss = F.gaussian_nll_loss(tl.zeros(1, 2, dtype=tl.float64), tl.ones(1, 2, dtype=tl.float64), v,
                               reduction="sum")
    g, = tl.autograd.grad(loss, v)
    assert g.numpy()[0, 0] != 0


def test_triplet_swap_and_margin_checks():
    torch = pytest.importorskip("torch")
    vals = []
    for L in (tl, torch):
        vals.append(L.nn.functional.triplet_margin_loss(L.tensor(A), L.tensor(B), L.tensor(PR),
                                                        margin=2.0, p=1, swap=True).item())
    assert vals[0] == pytest.approx(vals[1], rel=1e-12)
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_loss(tl.tensor(A), tl.tensor(B), tl.tensor(PR), margin=0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        F.triplet_margin_loss(tl.tensor(A), tl.tensor(B), tl.tensor(PR[0]))
    with pytest.raises(RuntimeError, match="All input tensors should have same dimension"):
        F.margin_ranking_loss(tl.tensor(A), tl.tensor(B), tl.tensor(SG[0]))
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input tensors"):
        F.cosine_embedding_loss(tl.tensor(A[0]), tl.tensor(B[0]), tl.tensor(SG[0]))


def test_other_losses_accept_float32_and_keep_it():
    x, y = tl.tensor(A).float(), tl.tensor(B).float()
    for fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.soft_margin_loss):
        out = fn(x, y.sign() if fn is F.soft_margin_loss else y)
        assert out.dtype is tl.float32
    assert F.binary_cross_entropy(tl.tensor(PR).float(), tl.tensor(TB).float()).dtype is tl.float32


# ---- modules -------------------------------------------------------------------------------------------
LOSS_MODULES = ["MSELoss()", "L1Loss(reduction='sum')", "SmoothL1Loss(beta=0.5)", "HuberLoss(delta=2.0)",
                "CrossEntropyLoss(label_smoothing=0.1)", "NLLLoss(ignore_index=1)", "BCELoss()",
                "BCEWithLogitsLoss()", "KLDivLoss(reduction='batchmean')", "CosineEmbeddingLoss(0.2)",
                "MarginRankingLoss(0.3)", "TripletMarginLoss(p=1.0)", "SoftMarginLoss()",
                "HingeEmbeddingLoss(0.5)", "PoissonNLLLoss(full=True)", "GaussianNLLLoss(eps=1e-3)",
                "MultiMarginLoss(p=2)", "MultiLabelMarginLoss()", "MultiLabelSoftMarginLoss()"]


@pytest.mark.parametrize("spec", LOSS_MODULES)
def test_loss_module_repr_matches_torch(spec):
    torch = pytest.importorskip("torch")  # noqa: F841  (eval below reads it)
    assert repr(eval("nn." + spec)) == repr(eval("torch.nn." + spec))


def test_loss_modules_compute_their_functional():
    x, t = tl.tensor(X), tl.tensor(T)
    w = tl.tensor(_W4, dtype=tl.float64)
    m = nn.CrossEntropyLoss(weight=w, reduction="sum", label_smoothing=0.1)
    assert m(x, t).item() == F.cross_entropy(x, t, w, reduction="sum", label_smoothing=0.1).item()
    assert [k for k, _ in m.named_buffers()] == ["weight"]
    assert list(m.state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    b = nn.BCEWithLogitsLoss(pos_weight=tl.ones(4, dtype=tl.float64))
    assert [k for k, _ in b.named_buffers()] == ["pos_weight"]
    assert b(tl.tensor(A), tl.tensor(TB)).item() == pytest.approx(
        F.binary_cross_entropy_with_logits(tl.tensor(A), tl.tensor(TB)).item())
    n = nn.NLLLoss(ignore_index=0)
    assert n(x, t.clamp(min=0)).item() == F.nll_loss(x, t.clamp(min=0), ignore_index=0).item()
    g = nn.GaussianNLLLoss(full=True)
    assert g(tl.tensor(A), tl.tensor(B), tl.tensor(PR)).item() == pytest.approx(
        F.gaussian_nll_loss(tl.tensor(A), tl.tensor(B), tl.tensor(PR), full=True).item())
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=-1.0)


def test_hypothesis_cross_entropy_shapes_and_layouts():
    """cross_entropy and nll_loss over random (N, C, d...) shapes, permuted and stepped input
    layouts, ignored targets and class weights: value and gradient against NumPy."""
    st = pytest.importorskip("hypothesis.strategies")
    from hypothesis import given, settings, HealthCheck

    @st.composite
    def cases(draw):
        nd = draw(st.integers(1, 4))
        shape = draw(st.lists(st.integers(1, 4), min_size=nd, max_size=nd))
        steps = draw(st.lists(st.integers(1, 2), min_size=nd, max_size=nd))
        perm = draw(st.permutations(list(range(nd))))
        reduction = draw(st.sampled_from(["mean", "sum", "none"]))
        weighted = draw(st.booleans())
        seed = draw(st.integers(0, 2 ** 16))
        return shape, steps, perm, reduction, weighted, seed

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cases())
    def run(case):
        shape, steps, perm, reduction, weighted, seed = case
        rng = np.random.default_rng(seed)
        nd = len(shape)
        cdim = 1 if nd > 1 else 0
        C = shape[cdim]
        # a buffer laid out in `perm` order and stepped, viewed back as `shape`
        bshape = [shape[p] * steps[p] for p in perm]
        buf = rng.standard_normal(bshape)
        view = tl.tensor(buf)[tuple(slice(None, None, steps[p]) for p in perm)]
        inv = np.argsort(perm)
        x = view.permute(*inv).requires_grad_() if nd > 1 else view.requires_grad_()
        xa = x.detach().numpy().copy()
        tshape = () if nd == 1 else (shape[0],) + tuple(shape[2:])
        t = rng.integers(0, C, tshape)
        if t.size:
            t.reshape(-1)[rng.integers(0, t.size)] = -100
        w = rng.random(C) if weighted else None
        y = F.cross_entropy(x, tl.tensor(t), tl.tensor(w) if weighted else None,
                            reduction=reduction)
        xs = xa if nd > 1 else xa[None]
        ts = t if nd > 1 else np.asarray(t)[None]
        lp = _np_log_softmax(xs, 1)
        loss, wt = _np_nll(lp, ts, w)
        ref = _np_reduce(loss, reduction, wt.sum())
        if reduction == "none" and nd == 1:
            ref = ref[0]
        assert_values(y.detach(), ref, rtol=1e-10, atol=1e-12)
        go = rng.standard_normal(y.shape)
        g, = tl.autograd.grad((y * tl.tensor(go)).sum(), x)
        # d loss / d x = (softmax - onehot) * w[t] * grad (/ total weight for the mean)
        with np.errstate(all="ignore"):
            scale = np.broadcast_to(np.asarray(go), ts.shape) if reduction == "none" else \
                np.full(ts.shape, float(go) / (wt.sum() if reduction == "mean" else 1.0))
            k = (wt * scale)[:, None]
        onehot = np.zeros_like(lp)
        np.put_along_axis(onehot, np.where(ts == -100, 0, ts)[:, None], 1.0, axis=1)
        ref_g = (np.exp(lp) - onehot) * k
        ref_g = ref_g if nd > 1 else ref_g[0]
        if reduction == "mean" and wt.sum() == 0:
            ref_g = np.zeros_like(ref_g)
        np.testing.assert_allclose(g.numpy(), ref_g, rtol=1e-9, atol=1e-12)

    run()


def test_multi_class_margin_errors():
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(tl.tensor(A), tl.tensor([0, 1, 2]), p=3)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(tl.tensor(A), tl.tensor([0, 1, 4]))
    with pytest.raises(RuntimeError, match="inconsistent weight size"):
        F.multi_margin_loss(tl.tensor(A), tl.tensor([0, 1, 2]), weight=tl.ones(3, dtype=tl.float64))
    with pytest.raises(RuntimeError, match="'target' is out of range"):
        F.multilabel_margin_loss(tl.tensor(A), tl.tensor([[0, 5, -1, 0]] * 3))
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_with_distance_loss(tl.tensor(A), tl.tensor(B), tl.tensor(PR), margin=0.0)
    m = nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: (u - v).abs().sum(-1))
    assert m(tl.tensor(A), tl.tensor(B), tl.tensor(PR)).item() == pytest.approx(
        np.maximum(1 + np.abs(A - B).sum(1) - np.abs(A - PR).sum(1), 0).mean())
