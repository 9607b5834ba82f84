"""torchlite.nn.attention.flex_attention (PyTorch's FlexAttention API, run eagerly and densely):
against scaled_dot_product_attention and a NumPy softmax for the masks and modifications that
have a closed form, and against PyTorch's own eager flex_attention where installed (outputs,
log-sum-exp, block masks; gradients by gradcheck, including a captured bias's)."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn.functional as F
from torchlite.nn.attention import flex_attention as FA


def _qkv(seed=0, heads=(4, 4), shape=(2, 16, 8)):
    rng = np.random.default_rng(seed)
    b, n, e = shape
    return [rng.standard_normal((b, h, n, e)) for h in (heads[0], heads[1], heads[1])]


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def test_causal_block_mask_is_causal_attention():
    q, k, v = (tl.tensor(a) for a in _qkv())
    mask = FA.create_block_mask(causal, 2, 4, 16, 16, BLOCK_SIZE=8)
    got = FA.flex_attention(q, k, v, block_mask=mask)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    assert mask.shape == (2, 4, 16, 16) and mask.to_dense().shape == (2, 4, 2, 2)
    assert mask.sparsity() == 25.0 and mask.to_dense().dtype is tl.int32
    assert mask[0].shape == (1, 4, 16, 16) and mask[1, 2].shape == (1, 1, 16, 16)
    assert "sparsity=25.00%" in repr(mask)


def test_score_mod_and_lse_against_numpy():
    """(The indices are integer tensors: a float times one is float32, as in PyTorch, so the
    mod converts them to the scores' dtype to keep float64 throughout.)"""
    qn, kn, vn = _qkv(1)
    bias = np.random.default_rng(2).standard_normal(4)
    q, k, v, bb = (tl.tensor(a) for a in (qn, kn, vn, bias))
    def mod(s, b, h, qi, ki):
        return s + bb[h] - 0.1 * (qi - ki).abs().to(s.dtype)
    out, lse = FA.flex_attention(q, k, v, score_mod=mod, return_lse=True, scale=0.3)
    pos = np.arange(16)
    s = np.einsum("bhqe,bhke->bhqk", qn, kn) * 0.3 + bias[None, :, None, None] \
        - 0.1 * np.abs(pos[:, None] - pos[None, :])
    m = s.max(-1, keepdims=True)
    want_lse = (m + np.log(np.exp(s - m).sum(-1, keepdims=True)))[..., 0]
    want = np.einsum("bhqk,bhke->bhqe", np.exp(s - want_lse[..., None]), vn)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(lse.numpy(), want_lse, rtol=1e-12)


def test_fully_masked_rows_give_zero_and_masks_combine():
    q, k, v = (tl.tensor(a) for a in _qkv(3))
    nothing = FA.create_block_mask(lambda b, h, qi, ki: ki < 0, None, None, 16, 16, BLOCK_SIZE=8)
    out, lse = FA.flex_attention(q, k, v, block_mask=nothing, return_lse=True)
    assert (out.numpy() == 0).all() and np.isneginf(lse.numpy()).all()
    band = FA.and_masks(causal, lambda b, h, qi, ki: (qi - ki) <= 2)
    dense = FA.create_mask(band, 1, 1, 5, 5).numpy()[0, 0]
    assert dense.tolist() == (np.tril(np.ones((5, 5))) * np.triu(np.ones((5, 5)), -2)).astype(bool).tolist()
    either = FA.create_mask(FA.or_masks(causal, FA.noop_mask), 1, 1, 3, 3).numpy()
    assert either.all()
    with pytest.raises(RuntimeError, match="callable"):
        FA.and_masks(causal, 3)


def test_grouped_query_attention_and_errors():
    qn, kn, vn = _qkv(4, heads=(4, 2))
    q, k, v = (tl.tensor(a) for a in (qn, kn, vn))
    got = FA.flex_attention(q, k, v, enable_gqa=True)
    want = F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="enable_gqa"):
        FA.flex_attention(q, k, v)
    with pytest.raises(ValueError, match="block mask is for"):
        FA.flex_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1),
                          block_mask=FA.create_block_mask(causal, None, None, 8, 8))


def test_gradients_flow_to_inputs_and_captured_tensors():
    qn, kn, vn = _qkv(5, shape=(1, 6, 3))
    q, k, v = (tl.tensor(a, requires_grad=True) for a in (qn, kn, vn))
    bias = tl.zeros(4, dtype=tl.float64, requires_grad=True)
    mask = FA.create_block_mask(causal, None, None, 6, 6, BLOCK_SIZE=2)

    def f(q_, k_, v_, b_):
        return FA.flex_attention(q_, k_, v_, score_mod=lambda s, b, h, qi, ki: s + b_[h] * (qi - ki),
                                 block_mask=mask)
    assert tl.autograd.gradcheck(f, (q, k, v, bias))


def test_matches_pytorch_flex_attention():
    """Outputs, log-sum-exp and block maps equal PyTorch's (its CPU flex_attention has no
    backward: the gradients are checked by gradcheck above)."""
    torch = pytest.importorskip("torch")
    try:
        from torch.nn.attention import flex_attention as TFA
    except ImportError:
        pytest.skip("this PyTorch has no flex_attention")
    import warnings
    warnings.filterwarnings("ignore")
    qn, kn, vn = _qkv(6)
    bias = np.random.default_rng(7).standard_normal(4)
    results = []
    for lib, fa in ((tl, FA), (torch, TFA)):
        q, k, v, bb = (lib.tensor(a) for a in (qn, kn, vn, bias))
        window = fa.and_masks(causal, lambda b, h, qi, ki: (qi - ki) <= 5)
        mask = fa.create_block_mask(window, 2, 4, 16, 16, device="cpu", BLOCK_SIZE=8)
        out, lse = fa.flex_attention(q, k, v, score_mod=lambda s, b, h, qi, ki: s + bb[h] * 0.5,
                                     block_mask=mask, return_lse=True)
        results.append([out.numpy(), lse.numpy(), mask.to_dense().numpy(), np.float64(mask.sparsity())])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
