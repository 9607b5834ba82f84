"""torchlite.masked (torch.masked's reductions and normalizations with a mask), against NumPy's
masked arrays (numpy.ma) and explicit formulas, gradients by finite differences, PyTorch's
semantics at fully masked-out slices, and torch.masked where PyTorch is installed."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.masked as M

from helpers import torch_or_skip

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5))
MASK = RNG.random((3, 4, 5)) > 0.4
MASK[1, 2, :] = False                  # one fully masked-out slice along dim 2


def _ma():
    return np.ma.masked_array(X, ~MASK)


def _t(a=X):
    return tl.tensor(a)


@pytest.mark.parametrize("name, dims", [("sum", (2,)), ("sum", (0, 2)), ("sum", None),
                                        ("prod", (1,)), ("amax", (2,)), ("amin", (0, 1)),
                                        ("mean", (2,)), ("mean", None)])
def test_reductions_against_numpy_ma(name, dims):
    got = getattr(M, name)(_t(), dims, mask=tl.tensor(MASK)).numpy()
    ma_fn = {"sum": np.ma.sum, "prod": np.ma.prod, "amax": np.ma.max, "amin": np.ma.min,
             "mean": np.ma.mean}[name]
    want = ma_fn(_ma(), axis=dims)
    fill = {"sum": 0.0, "prod": 1.0, "amax": -np.inf, "amin": np.inf, "mean": np.nan}[name]
    want = np.ma.filled(want, fill) if np.ma.isMaskedArray(want) else want
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_fully_masked_slices_give_the_identities():
    m = tl.tensor(MASK)
    x = _t()
    assert M.sum(x, 2, mask=m)[1, 2].item() == 0.0
    assert M.prod(x, 2, mask=m)[1, 2].item() == 1.0
    assert M.amax(x, 2, mask=m)[1, 2].item() == -np.inf
    assert M.logsumexp(x, 2, mask=m)[1, 2].item() == -np.inf
    assert np.isnan(M.mean(x, 2, mask=m)[1, 2].item())
    assert np.isnan(M.median(x, 2, mask=m)[1, 2].item())
    assert np.isnan(M.softmax(x, 2, mask=m)[1, 2].numpy()).all()    # exp(-inf) / 0
    assert M.amax(tl.tensor([[1, 2]], dtype=tl.int32), 1, mask=tl.tensor([[False, False]])).item() \
        == np.iinfo(np.int32).min
    with pytest.raises(ValueError, match="no fully masked out rows"):
        M.median(tl.tensor([[1, 2]]), 1, mask=tl.tensor([[False, False]]))


def test_var_std_norm_median_logsumexp_against_formulas():
    m = tl.tensor(MASK)
    for corr in (0, 1):
        got = M.var(_t(), 2, correction=corr, mask=m).numpy()
        for i in range(3):
            for j in range(4):
                kept = X[i, j][MASK[i, j]]
                if kept.size > corr:
                    np.testing.assert_allclose(got[i, j], kept.var(ddof=corr), rtol=1e-12)
                else:                                  # nothing left to divide by: 0 / 0
                    assert np.isnan(got[i, j]) or np.isinf(got[i, j])
    np.testing.assert_allclose(M.std(_t(), 2, mask=m).numpy() ** 2,
                               M.var(_t(), 2, mask=m).numpy(), rtol=1e-12)
    np.testing.assert_allclose(M.norm(_t(), 3.0, (2,), mask=m).numpy(),
                               (np.abs(X * MASK) ** 3).sum(2) ** (1 / 3), rtol=1e-12)
    np.testing.assert_allclose(M.norm(_t(), -np.inf, 2, mask=m).numpy()[0],
                               np.ma.min(np.abs(_ma()), axis=2)[0], rtol=1e-12)
    med = M.median(_t(), 1, mask=m).numpy()
    for i in range(3):
        for k in range(5):                      # PyTorch's median: the lower middle value
            kept = np.sort(X[i, :, k][MASK[i, :, k]])
            want = kept[(kept.size - 1) // 2] if kept.size else np.nan
            np.testing.assert_allclose(med[i, k], want, rtol=1e-12)
    lse = M.logsumexp(_t(), 2, mask=m).numpy()
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(lse, np.log((np.exp(X) * MASK).sum(2)), rtol=1e-12)


def test_normalizations():
    m = tl.tensor(MASK)
    sm = M.softmax(_t(), 2, mask=m).numpy()
    e = np.exp(X) * MASK
    with np.errstate(invalid="ignore"):
        want = e / e.sum(2, keepdims=True)
    np.testing.assert_allclose(sm, want, rtol=1e-12)           # NaN where the slice is empty
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(M.log_softmax(_t(), 2, mask=m).numpy()[0], np.log(want[0]),
                                   rtol=1e-12)
    smin = M.softmin(_t(), 0, mask=m).numpy()
    e = np.exp(-X) * MASK
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(smin, e / e.sum(0, keepdims=True), rtol=1e-12)
    nz = M.normalize(_t(), 2.0, 2, mask=m).numpy()
    nrm = np.sqrt(((X * MASK) ** 2).sum(2, keepdims=True))
    np.testing.assert_allclose(nz, X * MASK / np.maximum(nrm, 1e-12), rtol=1e-12)
    np.testing.assert_allclose(M.cumsum(_t(), 1, mask=m).numpy(), np.cumsum(X * MASK, 1),
                               rtol=1e-12)
    np.testing.assert_allclose(M.cumprod(_t(), 1, mask=m).numpy(),
                               np.cumprod(np.where(MASK, X, 1.0), 1), rtol=1e-12)
    other = RNG.standard_normal((3, 4, 5))
    om = RNG.random((3, 4, 5)) > 0.5
    got = M.logaddexp(_t(), tl.tensor(other), input_mask=m, other_mask=tl.tensor(om)).numpy()
    with np.errstate(divide="ignore"):
        want = np.logaddexp(np.where(MASK, X, -np.inf), np.where(om, other, -np.inf))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_masks_broadcast_dtypes_and_arguments():
    x = tl.tensor([[1, 2, 3], [4, 5, 6]], dtype=tl.int32)
    row = tl.tensor([True, False, True])                      # broadcast over the rows
    s = M.sum(x, 1, mask=row)
    assert s.dtype is tl.int64 and s.tolist() == [4, 10]
    assert M.argmax(x, 1, mask=row).tolist() == [2, 2]
    assert M.sum(_t(), mask=None).item() == pytest.approx(X.sum())
    with pytest.raises(ValueError, match="Could not infer output dtype"):
        M.mean(x, 1, mask=row)
    assert M.mean(x, 1, dtype=tl.float64, mask=row).tolist() == [2.0, 5.0]
    with pytest.raises(IndexError, match="mask dimensionality higher"):
        M.sum(tl.ones(3), 0, mask=tl.ones(2, 3, dtype=tl.bool))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        M.sum(_t(), (1, 1), mask=tl.tensor(MASK))
    with pytest.raises(IndexError, match="Dimension out of range"):
        M.amax(_t(), 3, mask=tl.tensor(MASK))


@pytest.mark.parametrize("name, call", [
    ("sum", lambda x, m: M.sum(x, 1, mask=m)),
    ("mean", lambda x, m: M.mean(x, (0, 2), mask=m)),
    ("var", lambda x, m: M.var(x, 2, mask=m)),
    ("norm", lambda x, m: M.norm(x, 2.0, 2, mask=m)),
    ("logsumexp", lambda x, m: M.logsumexp(x, 1, mask=m)),
    ("softmax", lambda x, m: M.softmax(x, 1, mask=m)),
    ("normalize", lambda x, m: M.normalize(x, 2.0, 1, mask=m)),
    ("prod", lambda x, m: M.prod(x, 1, mask=m)),
])
def test_gradcheck(name, call):
    g = np.random.default_rng(1)
    x = tl.tensor(g.standard_normal((2, 3, 4)) + 2.0, requires_grad=True)
    m = tl.tensor(g.random((2, 3, 4)) > 0.3)
    m[0, 0, :] = True
    m[:, 0, 0] = True                      # every slice the ops reduce keeps something
    assert tl.autograd.gradcheck(lambda x: call(x, m), (x,))


def test_matches_torch_masked():
    torch = torch_or_skip()
    tx, tm = torch.tensor(X), torch.tensor(MASK)
    for name in ("sum", "amax", "mean", "logsumexp", "var"):
        want = getattr(torch.masked, name)(tx, 2, mask=tm).numpy()
        got = getattr(M, name)(_t(), 2, mask=tl.tensor(MASK)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(M.softmax(_t(), 1, mask=tl.tensor(MASK)).numpy(),
                               torch.masked.softmax(tx, 1, mask=tm).numpy(), rtol=1e-12,
                               equal_nan=True)
