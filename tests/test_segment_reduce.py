"""torchlite.segment_reduce (torch.segment_reduce): each reduction against a NumPy loop over
the segments, with lengths or offsets, batched lengths, empty segments, `initial`, `unsafe`
lengths that stop short of the axis, gradients by finite differences, and PyTorch."""
import numpy as np
import pytest

import torchlite as tl

from helpers import torch_or_skip

EMPTY = {"sum": 0.0, "prod": 1.0, "mean": np.nan, "max": -np.inf, "min": np.inf}
NP = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "max": np.max, "min": np.min}


def _oracle(x, lengths, reduce, initial=None):
    """segments along axis 0 of x (lengths 1-d)."""
    out, start = [], 0
    for n in lengths:
        seg = x[start:start + n]
        start += n
        if n == 0:
            out.append(np.full(x.shape[1:], EMPTY[reduce] if initial is None else initial))
        elif initial is None:
            out.append(NP[reduce](seg, axis=0))
        elif reduce == "mean":
            out.append((initial + seg.sum(0)) / n)
        else:
            out.append(NP[reduce](np.concatenate([np.full((1,) + x.shape[1:], initial), seg]), axis=0))
    return np.stack(out)


@pytest.mark.parametrize("reduce", sorted(EMPTY))
@pytest.mark.parametrize("initial", [None, 2.5])
def test_against_numpy(reduce, initial):
    g = np.random.default_rng(0)
    x = g.standard_normal((9, 2, 3))
    lengths = np.array([2, 0, 4, 3])
    got = tl.segment_reduce(tl.tensor(x), reduce, lengths=tl.tensor(lengths), initial=initial)
    np.testing.assert_allclose(got.numpy(), _oracle(x, lengths, reduce, initial), rtol=1e-12)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    again = tl.segment_reduce(tl.tensor(x), reduce, offsets=tl.tensor(offsets), initial=initial)
    np.testing.assert_allclose(again.numpy(), got.numpy(), rtol=0)


def test_batched_lengths_and_unsafe():
    x = np.arange(12.0).reshape(2, 6)
    lengths = np.array([[2, 4], [3, 3]])
    got = tl.segment_reduce(tl.tensor(x), "sum", lengths=tl.tensor(lengths), axis=1).numpy()
    np.testing.assert_array_equal(got, [[1.0, 14.0], [21.0, 30.0]])
    # unsafe: lengths that stop short leave the rest of the axis out
    short = tl.segment_reduce(tl.arange(6.0), "sum", lengths=tl.tensor([2, 2]), unsafe=True)
    assert short.tolist() == [1.0, 5.0]
    with pytest.raises(RuntimeError, match="sum to data.size"):
        tl.segment_reduce(tl.arange(6.0), "sum", lengths=tl.tensor([2, 2]))
    with pytest.raises(RuntimeError, match="negative"):
        tl.segment_reduce(tl.arange(6.0), "sum", lengths=tl.tensor([8, -2]))
    with pytest.raises(RuntimeError, match="Either lengths or offsets"):
        tl.segment_reduce(tl.arange(6.0), "sum")
    with pytest.raises(RuntimeError, match="unsupported reduction"):
        tl.segment_reduce(tl.arange(6.0), "median", lengths=tl.tensor([6]))
    with pytest.raises(RuntimeError, match="last dimension of lengths"):
        tl.segment_reduce(tl.ones(2, 6), "sum", lengths=tl.tensor([6]), axis=1)


@pytest.mark.parametrize("reduce", sorted(EMPTY))
def test_gradcheck(reduce):
    g = np.random.default_rng(1)
    x = tl.tensor(g.standard_normal((7, 3)) + 3.0, requires_grad=True)
    lengths = tl.tensor([3, 0, 4])
    initial = None if reduce in ("mean", "max", "min") else 0.5
    assert tl.autograd.gradcheck(
        lambda x: tl.segment_reduce(x, reduce, lengths=lengths, initial=initial)[[0, 2]], (x,))


def test_matches_torch():
    torch = torch_or_skip()
    x = np.random.default_rng(2).standard_normal((10, 4))
    lengths = np.array([1, 2, 0, 6, 1])
    for reduce in sorted(EMPTY):
        for initial in (None, 1.0):
            want = torch.segment_reduce(torch.tensor(x), reduce, lengths=torch.tensor(lengths),
                                        initial=initial).numpy()
            got = tl.segment_reduce(tl.tensor(x), reduce, lengths=tl.tensor(lengths),
                                    initial=initial).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-12)
