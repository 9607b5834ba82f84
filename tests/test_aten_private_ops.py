"""The underscore ATen functions PyTorch exposes at its top level and programs (FSDP, the
decompositions) call: torch._chunk_cat, _unsafe_masked_index,
_unsafe_masked_index_put_accumulate and _softmax_backward_data, checked against NumPy and
against torchlite's own autograd."""
import numpy as np
import pytest

import torchlite as tl


def _np_chunk_cat(arrays, dim, n):
    pieces = []
    for a in arrays:
        size = a.shape[dim]
        chunk = -(-size // n)
        pad = [(0, 0)] * a.ndim
        pad[dim] = (0, chunk * n - size)
        a = np.pad(a, pad)
        pieces.append(a.reshape(a.shape[:dim] + (n, -1)))
    return np.concatenate(pieces, dim + 1)


@pytest.mark.parametrize("shapes, dim, n", [
    ([(2, 3), (2, 2)], 1, 2), ([(4, 5, 6), (4, 2)], 1, 3), ([(7,), (3,)], 0, 4),
    ([(2, 3, 5)], -1, 5), ([(3, 8), (3, 1, 2)], 1, 2)])
def test_chunk_cat_matches_numpy_and_is_differentiable(shapes, dim, n):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    ts = [tl.tensor(a, requires_grad=True) for a in arrays]
    out = tl._chunk_cat(ts, dim, n)
    np.testing.assert_array_equal(out.detach().numpy(), _np_chunk_cat(arrays, dim % len(shapes[0]), n))
    out.sum().backward()
    for t in ts:                 # every input element lands once in the output
        np.testing.assert_array_equal(t.grad.numpy(), np.ones(t.shape))


@pytest.mark.parametrize("call, msg", [
    (lambda: tl._chunk_cat([], 0, 1), "non-empty input tensor list"),
    (lambda: tl._chunk_cat([tl.ones(2, 3), tl.ones(4)], -1, 3), "non-negative dim"),
    (lambda: tl._chunk_cat([tl.ones(2, 3), tl.ones(4)], 1, 3), "dim < ndim"),
    (lambda: tl._chunk_cat([tl.ones(2, 3, 4), tl.ones(4, 3)], 1, 3), "same sizes of 0"),
    (lambda: tl._chunk_cat([tl.ones(2)], 0, 0), "positive num_chunks"),
    (lambda: tl._chunk_cat([tl.ones(0), tl.ones(3)], 0, 1), "non-empty tensor"),
])
def test_chunk_cat_errors(call, msg):
    with pytest.raises(RuntimeError, match=msg):
        call()


def test_unsafe_masked_index_reads_where_the_mask_is_true():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5))
    rows = np.array([[0, 3, 9], [2, -5, 1]])          # out of range where masked off
    cols = np.array([[4, 0, 1], [7, 2, 3]])
    mask = np.array([[True, True, False], [False, False, True]])
    out = tl._unsafe_masked_index(tl.tensor(x), tl.tensor(mask),
                                  [tl.tensor(rows), tl.tensor(cols)], -1.0)
    ref = np.where(mask, x[np.clip(rows, 0, 3), np.clip(cols, 0, 4)], -1.0)
    np.testing.assert_array_equal(out.numpy(), ref)
    # a whole dim (None) keeps its size; the mask broadcasts against the result
    part = tl._unsafe_masked_index(tl.tensor(x), tl.tensor([[True], [False]]),
                                   [tl.tensor([1, 8]), None], 0.0)
    np.testing.assert_array_equal(part.numpy(), np.stack([x[1], np.zeros(5)]))
    empty = tl._unsafe_masked_index(tl.zeros(3, 0), tl.tensor([True, False]),
                                    [tl.tensor([0, 1])], 2.0)
    assert empty.shape == (2, 0)


def test_unsafe_masked_index_put_accumulate_adds_only_unmasked_values():
    x = np.arange(12.0).reshape(3, 4)
    rows = np.array([0, 2, 7, 0])
    mask = np.array([[True], [True], [False], [True]])      # broadcasts against the values
    vals = np.array([[1.0], [10.0], [100.0], [1000.0]])
    out = tl._unsafe_masked_index_put_accumulate(
        tl.tensor(x), tl.tensor(mask), [tl.tensor(rows), None], tl.tensor(vals))
    ref = x.copy()
    for r, m, v in zip(rows, mask[:, 0], vals[:, 0]):
        if m:
            ref[r] += v
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(x, np.arange(12.0).reshape(3, 4))     # input unchanged


def test_softmax_backward_data_is_softmaxs_gradient():
    rng = np.random.default_rng(2)
    x = tl.tensor(rng.standard_normal((3, 6)), requires_grad=True)
    g = tl.tensor(rng.standard_normal((3, 6)))
    y = tl.softmax(x, 1)
    (expected,) = tl.autograd.grad(y, x, g)
    got = tl._softmax_backward_data(g, y.detach(), 1, tl.float64)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12, atol=1e-15)
    assert tl._softmax_backward_data(g.float(), y.detach().float(), 1, tl.float32).dtype is tl.float32


@pytest.mark.parametrize("pattern, vshape, mshape", [
    ((None, [0, 3, 1], None), (3, 3, 5), (3, 1)),
    (([1, 2], None, [0, 4]), (2, 4), (2, 4)),
    ((None, None, [[0], [4]]), (3, 4, 2, 1), (2, 1)),
])
def test_unsafe_masked_index_put_accumulate_with_whole_dims_matches_pytorch(pattern, vshape, mshape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, v, m = rng.standard_normal((3, 4, 5)), rng.standard_normal(vshape), rng.random(mshape) > 0.3
    ref = torch.ops.aten._unsafe_masked_index_put_accumulate(
        torch.tensor(x), torch.tensor(m), [None if i is None else torch.tensor(i) for i in pattern],
        torch.tensor(v))
    got = tl._unsafe_masked_index_put_accumulate(
        tl.tensor(x), tl.tensor(m), [None if i is None else tl.tensor(i) for i in pattern], tl.tensor(v))
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=0, atol=1e-12)
