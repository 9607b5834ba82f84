"""F.pairwise_distance, F.cosine_similarity, F.pdist and their modules: values against NumPy,
gradients by gradcheck, shapes and reprs against PyTorch."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.autograd import gradcheck


def _np(t):
    return t.detach().numpy().astype(np.float64)


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, float("inf")])
def test_pairwise_distance(p):
    a, b = tl.randn(4, 5), tl.randn(4, 5)
    d = np.abs(_np(a) - _np(b) + 1e-6)
    ref = d.max(-1) if p == float("inf") else (d ** p).sum(-1) ** (1 / p)
    np.testing.assert_allclose(F.pairwise_distance(a, b, p).numpy(), ref, rtol=1e-5)
    assert F.pairwise_distance(a, b, p, keepdim=True).shape == (4, 1)
    assert F.pairwise_distance(tl.randn(5), tl.randn(5)).shape == ()
    assert F.pairwise_distance(tl.randn(2, 3, 5), tl.randn(3, 5)).shape == (2, 3)


def test_cosine_similarity():
    a, b = tl.randn(3, 6, 2), tl.randn(3, 6, 2)
    x, y = _np(a), _np(b)
    ref = (x * y).sum(1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
    np.testing.assert_allclose(F.cosine_similarity(a, b).numpy(), ref, rtol=1e-5, atol=1e-6)
    assert F.cosine_similarity(tl.randn(2, 3, 4), tl.randn(1, 3, 4), dim=-1).shape == (2, 3)
    assert F.cosine_similarity(tl.zeros(3, 4), tl.randn(3, 4)).tolist() == [0.0, 0.0, 0.0]


def test_pdist():
    x = tl.randn(5, 3)
    xn = _np(x)
    ref = [np.linalg.norm(xn[i] - xn[j]) for i in range(5) for j in range(i + 1, 5)]
    np.testing.assert_allclose(F.pdist(x).numpy(), ref, rtol=1e-5)
    ref1 = [np.abs(xn[i] - xn[j]).sum() for i in range(5) for j in range(i + 1, 5)]
    np.testing.assert_allclose(F.pdist(x, 1).numpy(), ref1, rtol=1e-5)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
        F.pdist(tl.randn(3))


CASES = {
    "pairwise_distance": lambda a, b: F.pairwise_distance(a, b),
    "pairwise_distance_p1": lambda a, b: F.pairwise_distance(a, b, 1.5),
    "cosine_similarity": lambda a, b: F.cosine_similarity(a, b, dim=0),
    "pdist": lambda a, b: F.pdist(a + b),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    a = tl.randn(3, 4, dtype=tl.float64).t().requires_grad_()
    b = tl.randn(4, 3, dtype=tl.float64, requires_grad=True)
    assert gradcheck(CASES[name], (a, b))


def test_modules_and_reprs_match_torch():
    torch = pytest.importorskip("torch")
    for ours, theirs in [(nn.PairwiseDistance(), torch.nn.PairwiseDistance()),
                         (nn.CosineSimilarity(dim=0), torch.nn.CosineSimilarity(dim=0)),
                         (nn.PairwiseDistance(p=1, keepdim=True), torch.nn.PairwiseDistance(p=1, keepdim=True))]:
        assert repr(ours) == repr(theirs)
        x, y = np.random.randn(3, 4).astype(np.float32), np.random.randn(3, 4).astype(np.float32)
        np.testing.assert_allclose(ours(tl.from_numpy(x), tl.from_numpy(y)).numpy(),
                                   theirs(torch.from_numpy(x), torch.from_numpy(y)).numpy(),
                                   rtol=1e-5, atol=1e-6)
