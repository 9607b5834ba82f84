"""F.scaled_dot_product_attention, F.multi_head_attention_forward and nn.MultiheadAttention:
forward against NumPy references written here and against PyTorch (weights copied across),
gradients by gradcheck in float64, masks (bool/float, causal, padding, fully masked rows),
shapes (batched, unbatched, batch_first), dropout, reprs, initialisation and errors."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.autograd import gradcheck, gradgradcheck


def _t(a, requires_grad=False):
    return tl.tensor(np.asarray(a)).requires_grad_(requires_grad)


def _np(t):
    return t.detach().numpy().astype(np.float64)


def _rand(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# ---- NumPy references ---------------------------------------------------------------------
def _np_softmax(s, safe):
    """Softmax over the last axis; a row of -inf gives 0 when safe (SDPA), NaN otherwise."""
    m = s.max(-1, keepdims=True, initial=-np.inf)
    dead = np.isneginf(m)
    e = np.exp(s - np.where(dead, 0.0, m))
    p = e / np.where(dead, 1.0, e.sum(-1, keepdims=True))
    return np.where(dead, 0.0, p) if safe else np.where(dead, np.nan, p)


def np_sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    """The definition: softmax(q k^T * scale + mask) v, bool mask True = may attend."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    L, S = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    allowed = np.tril(np.ones((L, S), bool)) if is_causal else np.ones((L, S), bool)
    if mask is not None and mask.dtype == np.bool_:
        allowed = allowed & mask
    elif mask is not None:
        s = s + mask
    s = np.where(allowed, s, -np.inf)
    return _np_softmax(s, safe=True) @ v


def _np_params(m):
    return {k: _np(v) for k, v in m.state_dict().items()}


def np_mha(query, key, value, w, num_heads, key_padding_mask=None, attn_mask=None,
           add_zero_attn=False, need_weights=True, average_attn_weights=True):
    """MultiheadAttention on sequence-first batched input (L, N, E) in NumPy; w: the module's
    state_dict as float64 arrays.  Masks: bool True = NOT allowed, or float (added)."""
    E = query.shape[-1]
    hd = E // num_heads
    if "in_proj_weight" in w:
        wq, wk, wv = np.split(w["in_proj_weight"], 3)
    else:
        wq, wk, wv = w["q_proj_weight"], w["k_proj_weight"], w["v_proj_weight"]
    bq, bk, bv = np.split(w.get("in_proj_bias", np.zeros(3 * E)), 3)
    q = query @ wq.T + bq
    k = key @ wk.T + bk
    v = value @ wv.T + bv
    L, N = q.shape[:2]
    S = k.shape[0]
    bias = np.zeros((N, num_heads, L, S))
    if attn_mask is not None:
        am = np.where(attn_mask, -np.inf, 0.0) if attn_mask.dtype == np.bool_ else attn_mask
        bias = bias + (am.reshape(N, num_heads, L, S) if am.ndim == 3 else am)
    if key_padding_mask is not None:
        kp = (np.where(key_padding_mask, -np.inf, 0.0) if key_padding_mask.dtype == np.bool_
              else key_padding_mask)
        bias = bias + kp[:, None, None, :]
    if "bias_k" in w:
        k = np.concatenate([k, np.broadcast_to(w["bias_k"], (1, N, E))])
        v = np.concatenate([v, np.broadcast_to(w["bias_v"], (1, N, E))])
        bias = np.concatenate([bias, np.zeros((N, num_heads, L, 1))], -1)
    heads = lambda x: x.reshape(x.shape[0], N, num_heads, hd).transpose(1, 2, 0, 3)
    qh, kh, vh = heads(q), heads(k), heads(v)
    if add_zero_attn:
        kh = np.concatenate([kh, np.zeros((N, num_heads, 1, hd))], 2)
        vh = np.concatenate([vh, np.zeros((N, num_heads, 1, hd))], 2)
        bias = np.concatenate([bias, np.zeros((N, num_heads, L, 1))], -1)
    p = _np_softmax(qh @ np.swapaxes(kh, -1, -2) / math.sqrt(hd) + bias, safe=not need_weights)
    o = (p @ vh).transpose(2, 0, 1, 3).reshape(L, N, E)
    out = o @ w["out_proj.weight"].T + w.get("out_proj.bias", 0.0)
    if not need_weights:
        return out, None
    return out, (p.mean(1) if average_attn_weights else p)


# ---- scaled_dot_product_attention: forward -------------------------------------------------
def _bool(rng, *shape, p=0.7):
    return rng.random(shape) < p


# name: (query, key, value shapes, mask maker or None, keyword arguments)
SDPA_CASES = {
    "4d": ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), None, {}),
    "2d_unbatched": ((4, 8), (5, 8), (5, 6), None, {}),
    "3d": ((3, 4, 8), (3, 5, 8), (3, 5, 8), None, {}),
    "5d": ((2, 1, 2, 3, 4), (2, 1, 2, 5, 4), (2, 1, 2, 5, 4), None, {}),
    "broadcast_batch": ((2, 3, 4, 8), (3, 5, 8), (1, 3, 5, 6), None, {}),
    "scale": ((2, 4, 8), (2, 5, 8), (2, 5, 3), None, {"scale": 0.3}),
    "causal_square": ((2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4), None, {"is_causal": True}),
    "causal_L<S": ((2, 3, 4), (2, 6, 4), (2, 6, 4), None, {"is_causal": True}),
    "causal_L>S": ((2, 6, 4), (2, 3, 4), (2, 3, 4), None, {"is_causal": True}),
    "bool_mask_2d": ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6),
                     lambda r: _bool(r, 4, 5), {}),
    "bool_mask_4d": ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6),
                     lambda r: _bool(r, 2, 3, 4, 5), {}),
    "bool_mask_padding": ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6),
                          lambda r: _bool(r, 2, 1, 1, 5), {}),
    "bool_mask_dead_rows": ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6),
                            lambda r: np.array([[1, 0, 1, 1, 0], [0] * 5, [1] * 5, [0] * 5],
                                               bool), {}),
    "float_mask": ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6),
                   lambda r: _rand(r, 3, 4, 5), {}),
    "float_mask_dead_rows": ((2, 4, 4), (2, 5, 4), (2, 5, 4),
                             lambda r: np.where(_bool(r, 2, 4, 5) & (np.arange(4) != 2)[:, None],
                                                0.0, -np.inf).astype(np.float32), {}),
    "gqa": ((2, 6, 4, 8), (2, 3, 5, 8), (2, 2, 5, 6), None, {"enable_gqa": True}),
    "empty_keys": ((2, 4, 8), (2, 0, 8), (2, 0, 6), None, {}),
    "empty_queries": ((2, 0, 8), (2, 5, 8), (2, 5, 6), None, {}),
    "empty_batch": ((0, 3, 4, 8), (0, 3, 5, 8), (0, 3, 5, 6), None, {}),
    "single": ((1, 1, 1), (1, 1, 1), (1, 1, 1), None, {}),
}


def _gqa_np(q, k, v):
    r = q.shape[-3]
    return q, np.repeat(k, r // k.shape[-3], -3), np.repeat(v, r // v.shape[-3], -3)


@pytest.mark.parametrize("name", list(SDPA_CASES))
def test_sdpa_matches_numpy(name, threads):
    qs, ks, vs, mk, kw = SDPA_CASES[name]
    rng = np.random.default_rng(1)
    q, k, v = _rand(rng, *qs), _rand(rng, *ks), _rand(rng, *vs)
    mask = None if mk is None else mk(rng)
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v),
                                         None if mask is None else _t(mask), **kw)
    nq, nk, nv = _gqa_np(q, k, v) if kw.get("enable_gqa") else (q, k, v)
    ref = np_sdpa(nq, nk, nv, mask, kw.get("is_causal", False), kw.get("scale"))
    assert tuple(out.shape) == ref.shape
    assert out.dtype == tl.float32
    np.testing.assert_allclose(_np(out), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["4d", "broadcast_batch", "causal_L>S", "bool_mask_dead_rows",
                                  "float_mask_dead_rows", "gqa", "empty_keys", "scale"])
def test_sdpa_matches_torch(name):
    torch = pytest.importorskip("torch")
    qs, ks, vs, mk, kw = SDPA_CASES[name]
    rng = np.random.default_rng(2)
    q, k, v = _rand(rng, *qs), _rand(rng, *ks), _rand(rng, *vs)
    mask = None if mk is None else mk(rng)
    ours = F.scaled_dot_product_attention(_t(q), _t(k), _t(v),
                                          None if mask is None else _t(mask), **kw)
    ref = torch.nn.functional.scaled_dot_product_attention(
        torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v),
        None if mask is None else torch.from_numpy(mask), **kw)
    np.testing.assert_allclose(_np(ours), ref.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype, tol", [("float16", 3e-3), ("bfloat16", 2.5e-2),
                                         ("float32", 1e-5), ("float64", 1e-12)])
def test_sdpa_dtypes(dtype, tol):
    rng = np.random.default_rng(20)
    q, k, v = (rng.standard_normal((2, 3, 4, 8)) for _ in range(3))
    mask = _bool(rng, 4, 4, p=0.6)
    mask[:, 0] = True
    conv = lambda a: tl.tensor(a.astype(np.float32)).to(getattr(tl, dtype))  # noqa: E731
    tq, tk, tv = conv(q), conv(k), conv(v)
    out = F.scaled_dot_product_attention(tq, tk, tv, _t(mask))
    assert out.dtype == getattr(tl, dtype)
    ref = np_sdpa(*(_np(t.double()) for t in (tq, tk, tv)), mask)
    np.testing.assert_allclose(_np(out.double()), ref, rtol=tol, atol=tol)


@settings(max_examples=30, deadline=None)
@given(batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
       L=st.integers(1, 5), S=st.integers(1, 5), E=st.integers(1, 6),
       masked=st.sampled_from(["none", "bool", "float", "causal"]),
       transposed=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_sdpa_property_shapes_and_strides(batch, L, S, E, masked, transposed, seed):
    """Random batch shapes, lengths and masks, inputs stored transposed or not."""
    rng = np.random.default_rng(seed)
    batch = tuple(batch)

    def make(n, e):
        a = rng.standard_normal(batch + (n, e)).astype(np.float32)
        if not transposed:
            return a, _t(a)
        return a, _t(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    (q, tq), (k, tk), (v, tv) = make(L, E), make(S, E), make(S, 3)
    mask, kw = None, {}
    if masked == "bool":
        mask = _bool(rng, L, S, p=0.5)
    elif masked == "float":
        mask = _rand(rng, *batch[-1:], L, S)
    elif masked == "causal":
        kw["is_causal"] = True
    out = F.scaled_dot_product_attention(tq, tk, tv, None if mask is None else _t(mask), **kw)
    ref = np_sdpa(q, k, v, mask, masked == "causal")
    np.testing.assert_allclose(_np(out), ref, rtol=1e-5, atol=1e-5)


def test_sdpa_non_contiguous_inputs():
    rng = np.random.default_rng(3)
    base_q = _rand(rng, 4, 2, 3, 8)         # (L, N, H, E) viewed as (N, H, L, E)
    base_k = _rand(rng, 5, 2, 3, 16)        # every other feature
    v = _rand(rng, 2, 3, 6, 5)[:, :, ::1, :].copy()
    q = _t(base_q).permute(1, 2, 0, 3)
    k = _t(base_k).permute(1, 2, 0, 3)[..., ::2]
    vt = _t(v).expand(2, 3, 6, 5)[:, :, 1:, :]   # a slice of a (no-op) expand
    mask = _t(_bool(rng, 5, 4)).t()              # transposed bool mask
    assert not q.is_contiguous() and not k.is_contiguous() and not mask.is_contiguous()
    out = F.scaled_dot_product_attention(q, k, vt, mask)
    ref = np_sdpa(base_q.transpose(1, 2, 0, 3), base_k.transpose(1, 2, 0, 3)[..., ::2],
                  v[:, :, 1:], _np(mask).astype(bool))
    np.testing.assert_allclose(_np(out), ref, rtol=1e-5, atol=1e-5)


def test_sdpa_float64_and_expanded_mask():
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    m = _t(_rand(rng, 1, 3)).expand(3, 3)         # float32 mask with float64 query: allowed
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), m)
    assert out.dtype == tl.float64
    np.testing.assert_allclose(_np(out), np_sdpa(q, k, v, _np(m)), rtol=1e-6, atol=1e-6)


def test_sdpa_dropout_scales_kept_probabilities():
    """With value = identity the output is the attention matrix after dropout: every entry is
    0 or the reference probability / (1 - p), both kinds occur, and p=0 keeps all."""
    rng = np.random.default_rng(5)
    q, k = _rand(rng, 4, 16, 8), _rand(rng, 4, 16, 8)
    eye = np.broadcast_to(np.eye(16, dtype=np.float32), (4, 16, 16)).copy()
    probs = np_sdpa(q, k, eye)
    tl.manual_seed(0)
    out = _np(F.scaled_dot_product_attention(_t(q), _t(k), _t(eye), dropout_p=0.5))
    kept = out != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(out[kept], probs[kept] / 0.5, rtol=1e-5)
    full = _np(F.scaled_dot_product_attention(_t(q), _t(k), _t(eye), dropout_p=0.0))
    np.testing.assert_allclose(full, probs, rtol=1e-5, atol=1e-6)
    zero = _np(F.scaled_dot_product_attention(_t(q), _t(k), _t(eye), dropout_p=1.0))
    assert not zero.any()


# ---- scaled_dot_product_attention: gradients ----------------------------------------------
# name: (query, key, value shapes, mask maker or None, keyword arguments), float64
SDPA_GRAD_CASES = {
    "plain": ((2, 3, 4), (2, 2, 4), (2, 2, 3), None, {}),
    "4d_broadcast": ((2, 2, 3, 2), (2, 2, 2), (1, 2, 2, 2), None, {}),
    "causal": ((1, 3, 2), (1, 3, 2), (1, 3, 2), None, {"is_causal": True}),
    "bool_mask_dead_row": ((2, 3, 2), (2, 3, 2), (2, 3, 2),
                           lambda: _t(np.array([[1, 0, 1], [0, 0, 0], [1, 1, 0]], bool)), {}),
    "float_mask_with_grad": ((2, 3, 2), (2, 3, 2), (2, 3, 2),
                             lambda: _t(np.random.default_rng(0).standard_normal((3, 3)), True),
                             {}),
    "gqa_scale": ((1, 4, 2, 2), (1, 2, 2, 2), (1, 1, 2, 2), None,
                  {"enable_gqa": True, "scale": 0.7}),
}


@pytest.mark.parametrize("name", list(SDPA_GRAD_CASES))
def test_sdpa_gradcheck(name):
    qs, ks, vs, mk, kw = SDPA_GRAD_CASES[name]
    rng = np.random.default_rng(6)
    # non-contiguous leaves: transposed views of their storage
    q, k, v = (_t(rng.standard_normal(s[:-2] + (s[-1], s[-2])), True).transpose(-1, -2)
               for s in (qs, ks, vs))
    inputs = [q, k, v]
    mask = None if mk is None else mk()
    if mask is not None and mask.requires_grad:
        inputs.append(mask)
    fn = lambda *a: F.scaled_dot_product_attention(  # noqa: E731
        a[0], a[1], a[2], a[3] if len(a) > 3 else mask, **kw)
    assert gradcheck(fn, inputs)


def test_sdpa_gradgradcheck():
    rng = np.random.default_rng(7)
    q, k, v = (_t(rng.standard_normal((1, 2, 2)), True) for _ in range(3))
    assert gradgradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c,
                                                                        is_causal=True),
                         (q, k, v))


def test_sdpa_dead_rows_have_zero_finite_gradients():
    rng = np.random.default_rng(8)
    q, k, v = (_t(_rand(rng, 3, 4), True) for _ in range(3))
    mask = _t(np.array([[1, 1, 0], [0, 0, 0], [1, 0, 0]], bool))
    F.scaled_dot_product_attention(q, k, v, mask).sum().backward()
    for t in (q, k, v):
        assert np.isfinite(_np(t.grad)).all()
    assert not _np(q.grad)[1].any()
    torch = pytest.importorskip("torch")
    tq, tk, tv = (torch.from_numpy(_np(t)).float().requires_grad_() for t in (q, k, v))
    torch.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, torch.from_numpy(_np(mask).astype(bool))).sum().backward()
    for ours, theirs in ((q, tq), (k, tk), (v, tv)):
        np.testing.assert_allclose(_np(ours.grad), theirs.grad.numpy(), rtol=1e-5, atol=1e-6)


# ---- scaled_dot_product_attention: errors -------------------------------------------------
def _sdpa_error_cases(lib):
    """(name, thunk) pairs that must fail the same way in torchlite and in torch."""
    f = lib.nn.functional.scaled_dot_product_attention
    z = lambda *s, dtype=None: lib.zeros(*s, dtype=dtype)  # noqa: E731
    return {
        "1d": lambda: f(z(8), z(8), z(8)),
        "dtype": lambda: f(z(2, 4, 8), z(2, 5, 8), z(2, 5, 6, dtype=lib.float64)),
        "mask_dtype": lambda: f(z(2, 4, 8), z(2, 5, 8), z(2, 5, 6),
                                z(4, 5, dtype=lib.int64)),
        "mask_double": lambda: f(z(2, 4, 8), z(2, 5, 8), z(2, 5, 6),
                                 z(4, 5, dtype=lib.float64)),
        "causal_and_mask": lambda: f(z(2, 4, 8), z(2, 5, 8), z(2, 5, 6), z(4, 5),
                                     is_causal=True),
        "dropout_p": lambda: f(z(2, 4, 8), z(2, 5, 8), z(2, 5, 6), dropout_p=1.5),
        "key_features": lambda: f(z(2, 3, 4, 8), z(2, 3, 5, 7), z(2, 3, 5, 6)),
        "value_length": lambda: f(z(2, 3, 4, 8), z(2, 3, 5, 8), z(2, 3, 4, 6)),
        "batch": lambda: f(z(2, 3, 4, 8), z(2, 2, 5, 8), z(2, 2, 5, 6)),
        "gqa_heads": lambda: f(z(2, 6, 4, 8), z(2, 4, 5, 8), z(2, 4, 5, 6), enable_gqa=True),
        "mask_shape": lambda: f(z(2, 3, 4, 8), z(2, 3, 5, 8), z(2, 3, 5, 6), z(3, 5)),
        "mask_too_big": lambda: f(z(1, 4, 8), z(1, 5, 8), z(1, 5, 6), z(2, 1, 4, 5)),
        "scale_positional": lambda: f(z(4, 8), z(5, 8), z(5, 6), None, 0.0, False, 0.5),
    }


@pytest.mark.parametrize("name", list(_sdpa_error_cases(tl)))
def test_sdpa_errors_match_torch(name):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        _sdpa_error_cases(torch)[name]()
    with pytest.raises(type(theirs.value)) as ours:
        _sdpa_error_cases(tl)[name]()
    if name != "scale_positional":           # TypeError texts name Python internals
        expected = str(theirs.value).replace("torch.", "torchlite.")
        assert str(ours.value).startswith(expected.strip()[:60])


def test_sdpa_rejects_integer_inputs():
    x = tl.zeros(2, 3, dtype=tl.int64)
    with pytest.raises(RuntimeError, match="floating point"):
        F.scaled_dot_product_attention(x, x, x)


# ---- multi-head attention: forward against NumPy ------------------------------------------
# name: (constructor keyword arguments, forward keyword-argument makers, query/key lengths)
MHA_CASES = {
    "plain": ({}, {}),
    "no_bias": ({"bias": False}, {}),
    "bias_kv": ({"add_bias_kv": True}, {}),
    "zero_attn": ({"add_zero_attn": True}, {}),
    "bias_kv_zero_attn_masks": ({"add_bias_kv": True, "add_zero_attn": True},
                                {"attn_mask": "bool2d", "key_padding_mask": "bool"}),
    "kdim_vdim": ({"kdim": 5, "vdim": 3}, {}),
    "kdim_vdim_masks": ({"kdim": 5, "vdim": 3}, {"attn_mask": "float3d",
                                                 "key_padding_mask": "float"}),
    "bool_attn_mask": ({}, {"attn_mask": "bool2d"}),
    "bool_3d_attn_mask": ({}, {"attn_mask": "bool3d"}),
    "float_attn_mask": ({}, {"attn_mask": "float2d"}),
    "padding_mask": ({}, {"key_padding_mask": "bool"}),
    "both_masks_no_weights": ({}, {"attn_mask": "bool2d", "key_padding_mask": "bool",
                                   "need_weights": False}),
    "per_head_weights": ({}, {"average_attn_weights": False}),
    "no_weights": ({}, {"need_weights": False}),
}

N_, L_, S_, E_, H_ = 3, 4, 5, 8, 2


def _mha_masks(rng, spec):
    """Forward keyword arguments (torchlite tensors) and their NumPy values."""
    makers = {
        "bool2d": lambda: _bool(rng, L_, S_, p=0.3),
        "bool3d": lambda: _bool(rng, N_ * H_, L_, S_, p=0.3),
        "float2d": lambda: _rand(rng, L_, S_),
        "float3d": lambda: _rand(rng, N_ * H_, L_, S_),
        "bool": lambda: np.array([[0, 0, 0, 1, 1], [0] * 5, [0, 1, 0, 1, 0]], bool),
        "float": lambda: _rand(rng, N_, S_),
    }
    kw, ref = {}, {}
    for name, v in spec.items():
        if isinstance(v, str):
            ref[name] = makers[v]()
            kw[name] = _t(ref[name])
        else:
            kw[name] = ref[name] = v
    return kw, ref


def _mha_inputs(rng, m):
    q = _rand(rng, L_, N_, E_)
    k = _rand(rng, S_, N_, m.kdim)
    v = _rand(rng, S_, N_, m.vdim)
    return q, k, v


@pytest.mark.parametrize("name", list(MHA_CASES))
def test_mha_matches_numpy(name, threads):
    ctor, spec = MHA_CASES[name]
    tl.manual_seed(0)
    m = nn.MultiheadAttention(E_, H_, **ctor)
    with tl.no_grad():                       # non-zero biases, so they are tested
        for p in m.parameters():
            if p.dim() == 1:
                p.uniform_(-0.5, 0.5)
    rng = np.random.default_rng(9)
    q, k, v = _mha_inputs(rng, m)
    kw, ref_kw = _mha_masks(rng, spec)
    out, w = m(_t(q), _t(k), _t(v), **kw)
    ref_out, ref_w = np_mha(q, k, v, _np_params(m), H_, add_zero_attn=m.add_zero_attn, **ref_kw)
    assert tuple(out.shape) == (L_, N_, E_)
    np.testing.assert_allclose(_np(out), ref_out, rtol=1e-5, atol=1e-5)
    if ref_w is None:
        assert w is None
    else:
        assert tuple(w.shape) == ref_w.shape
        np.testing.assert_allclose(_np(w), ref_w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("self_attention", [False, True])
def test_mha_layouts_batch_first_and_unbatched(batch_first, self_attention):
    tl.manual_seed(1)
    m = nn.MultiheadAttention(E_, H_, batch_first=batch_first)
    rng = np.random.default_rng(10)
    q = _rand(rng, L_, N_, E_)
    k = q if self_attention else _rand(rng, S_, N_, E_)
    kpm = np.array([[0, 0, 1, 1] + [0] * (k.shape[0] - 4)] * N_, bool)
    ref_out, ref_w = np_mha(q, k, k, _np_params(m), H_, key_padding_mask=kpm)
    tq = _t(q.transpose(1, 0, 2).copy()) if batch_first else _t(q)
    tk = tq if self_attention else (_t(k.transpose(1, 0, 2).copy()) if batch_first else _t(k))
    out, w = m(tq, tk, tk, key_padding_mask=_t(kpm))
    got = _np(out).transpose(1, 0, 2) if batch_first else _np(out)
    np.testing.assert_allclose(got, ref_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(w), ref_w, rtol=1e-5, atol=1e-6)
    # unbatched (batch_first does not apply): each batch element on its own
    for n in range(N_):
        ub = _t(q[:, n].copy())
        ubk = ub if self_attention else _t(k[:, n].copy())
        o, wn = m(ub, ubk, ubk, key_padding_mask=_t(kpm[n]), average_attn_weights=False)
        assert tuple(o.shape) == (L_, E_) and tuple(wn.shape) == (H_, L_, k.shape[0])
        np.testing.assert_allclose(_np(o), ref_out[:, n], rtol=1e-5, atol=1e-5)


def test_mha_fully_masked_rows_nan_with_weights_zero_without():
    """As PyTorch: the need_weights path uses a plain softmax (NaN rows), the SDPA path gives
    0 for a query that may attend to nothing."""
    tl.manual_seed(2)
    m = nn.MultiheadAttention(E_, H_)
    rng = np.random.default_rng(11)
    q, k, v = _mha_inputs(rng, m)
    kpm = np.zeros((N_, S_), bool)
    kpm[1] = True
    out_w, _ = m(_t(q), _t(k), _t(v), key_padding_mask=_t(kpm))
    out_n, _ = m(_t(q), _t(k), _t(v), key_padding_mask=_t(kpm), need_weights=False)
    assert np.isnan(_np(out_w)[:, 1]).all() and np.isfinite(_np(out_w)[:, [0, 2]]).all()
    bias = _np(m.out_proj.bias)
    np.testing.assert_allclose(_np(out_n)[:, 1], np.broadcast_to(bias, (L_, E_)), atol=1e-6)
    ref, _ = np_mha(q, k, v, _np_params(m), H_, key_padding_mask=kpm, need_weights=False)
    np.testing.assert_allclose(_np(out_n), ref, rtol=1e-5, atol=1e-5)


def test_mha_is_causal_hint():
    tl.manual_seed(3)
    m = nn.MultiheadAttention(E_, H_)
    rng = np.random.default_rng(12)
    x = _rand(rng, L_, N_, E_)
    causal = np.triu(np.ones((L_, L_), bool), 1)
    ref, _ = np_mha(x, x, x, _np_params(m), H_, attn_mask=causal, need_weights=False)
    tx = _t(x)
    out, _ = m(tx, tx, tx, attn_mask=_t(causal), is_causal=True, need_weights=False)
    np.testing.assert_allclose(_np(out), ref, rtol=1e-5, atol=1e-5)
    # without need_weights and padding the hint alone decides (the mask is not read)
    out2, _ = m(tx, tx, tx, attn_mask=_t(np.zeros((L_, L_), bool)), is_causal=True,
                need_weights=False)
    np.testing.assert_allclose(_np(out2), ref, rtol=1e-5, atol=1e-5)


def test_mha_static_kv_functional():
    tl.manual_seed(4)
    m = nn.MultiheadAttention(E_, H_)
    rng = np.random.default_rng(13)
    q = _rand(rng, L_, N_, E_)
    sk, sv = _rand(rng, N_ * H_, S_, E_ // H_), _rand(rng, N_ * H_, S_, E_ // H_)
    out, w = F.multi_head_attention_forward(
        _t(q), _t(q), _t(q), E_, H_, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0,
        m.out_proj.weight, m.out_proj.bias, static_k=_t(sk), static_v=_t(sv))
    p = _np_params(m)
    qh = (q @ np.split(p["in_proj_weight"], 3)[0].T + np.split(p["in_proj_bias"], 3)[0])
    qh = qh.reshape(L_, N_ * H_, E_ // H_).transpose(1, 0, 2)
    attn = _np_softmax(qh @ sk.transpose(0, 2, 1) / math.sqrt(E_ // H_), safe=False)
    o = (attn @ sv).transpose(1, 0, 2).reshape(L_, N_, E_)
    ref = o @ p["out_proj.weight"].T + p["out_proj.bias"]
    np.testing.assert_allclose(_np(out), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(w), attn.reshape(N_, H_, L_, S_).mean(1), atol=1e-6)


# ---- multi-head attention: against PyTorch ------------------------------------------------
def _copy_to_torch(torch, m, tm):
    tm.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                        for k, v in m.state_dict().items()})


TORCH_MHA_OPTIONS = [
    {}, {"bias": False}, {"add_bias_kv": True}, {"add_zero_attn": True}, {"kdim": 5, "vdim": 3},
    {"batch_first": True}, {"add_bias_kv": True, "add_zero_attn": True, "batch_first": True},
]


@pytest.mark.parametrize("opts", TORCH_MHA_OPTIONS, ids=lambda o: "-".join(o) or "default")
def test_mha_matches_torch_every_option(opts):
    torch = pytest.importorskip("torch")
    tl.manual_seed(5)
    m = nn.MultiheadAttention(E_, H_, **opts)
    tm = torch.nn.MultiheadAttention(E_, H_, **opts)
    assert list(m.state_dict()) == list(tm.state_dict())
    _copy_to_torch(torch, m, tm)
    rng = np.random.default_rng(14)
    q, k, v = _mha_inputs(rng, m)
    if opts.get("batch_first"):
        q, k, v = (x.transpose(1, 0, 2).copy() for x in (q, k, v))
    masks = [{}, {"key_padding_mask": _bool(rng, N_, S_, p=0.3)},
             {"attn_mask": _bool(rng, L_, S_, p=0.3), "need_weights": False},
             {"attn_mask": _rand(rng, N_ * H_, L_, S_),
              "key_padding_mask": _rand(rng, N_, S_), "average_attn_weights": False}]
    for mk in masks:
        kw = {a: _t(b) if isinstance(b, np.ndarray) else b for a, b in mk.items()}
        tkw = {a: torch.from_numpy(b) if isinstance(b, np.ndarray) else b for a, b in mk.items()}
        out, w = m(_t(q), _t(k), _t(v), **kw)
        tout, tw = tm(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v), **tkw)
        np.testing.assert_allclose(_np(out), tout.detach().numpy(), rtol=1e-5, atol=1e-5,
                                   equal_nan=True)
        assert (w is None) == (tw is None)
        if w is not None:
            np.testing.assert_allclose(_np(w), tw.detach().numpy(), rtol=1e-5, atol=1e-6,
                                       equal_nan=True)


def test_mha_gradients_match_torch():
    torch = pytest.importorskip("torch")
    tl.manual_seed(6)
    m = nn.MultiheadAttention(E_, H_, add_bias_kv=True)
    tm = torch.nn.MultiheadAttention(E_, H_, add_bias_kv=True)
    _copy_to_torch(torch, m, tm)
    rng = np.random.default_rng(15)
    q, k, _ = _mha_inputs(rng, m)
    am = _bool(rng, L_, S_, p=0.2)
    tq, tk = _t(q, True), _t(k, True)
    out, w = m(tq, tk, tk, attn_mask=_t(am))
    (out.sum() + (w * w).sum()).backward()
    rq, rk = torch.from_numpy(q).requires_grad_(), torch.from_numpy(k).requires_grad_()
    rout, rw = tm(rq, rk, rk, attn_mask=torch.from_numpy(am))
    (rout.sum() + (rw * rw).sum()).backward()
    np.testing.assert_allclose(_np(tq.grad), rq.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(tk.grad), rk.grad.numpy(), rtol=1e-4, atol=1e-5)
    theirs = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        np.testing.assert_allclose(_np(p.grad), theirs[name].grad.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_mha_repr_and_parameters_match_torch():
    torch = pytest.importorskip("torch")
    for opts in TORCH_MHA_OPTIONS:
        m, tm = nn.MultiheadAttention(E_, H_, **opts), torch.nn.MultiheadAttention(E_, H_, **opts)
        assert repr(m) == repr(tm)
        ours = {k: tuple(v.shape) for k, v in m.named_parameters()}
        assert ours == {k: tuple(v.shape) for k, v in tm.named_parameters()}
        for attr in ("embed_dim", "kdim", "vdim", "num_heads", "head_dim", "batch_first",
                     "dropout", "add_zero_attn", "_qkv_same_embed_dim"):
            assert getattr(m, attr) == getattr(tm, attr), attr
        assert (m.bias_k is None) == (tm.bias_k is None)
        assert (m.in_proj_weight is None) == (tm.in_proj_weight is None)


# ---- multi-head attention: gradcheck ------------------------------------------------------
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_functional_gradcheck(need_weights):
    rng = np.random.default_rng(16)
    E, H, L, S, N = 4, 2, 2, 3, 2
    g = lambda *s: _t(rng.standard_normal(s) * 0.5, True)  # noqa: E731
    q, k = g(L, N, E), g(S, N, E)
    # non-contiguous parameters: transposed storage
    w_in = _t(rng.standard_normal((E, 3 * E)) * 0.5, True).t()
    b_in, w_out, b_out = g(3 * E), g(E, E), g(E)
    bk, bv = g(1, 1, E), g(1, 1, E)
    kpm = _t(np.array([[0, 0, -np.inf], [-np.inf, 0, 0]]))
    am = _t(rng.standard_normal((L, S)))

    def fn(q, k, w_in, b_in, bk, bv, w_out, b_out):
        out, w = F.multi_head_attention_forward(
            q, k, k, E, H, w_in, b_in, bk, bv, True, 0.0, w_out, b_out,
            key_padding_mask=kpm, attn_mask=am, need_weights=need_weights)
        return (out, w) if need_weights else out
    assert gradcheck(fn, (q, k, w_in, b_in, bk, bv, w_out, b_out))


def test_mha_separate_weights_gradcheck():
    """kdim/vdim != embed_dim: q/k/v_proj_weight (the module's layout), bias sliced in three."""
    rng = np.random.default_rng(17)
    g = lambda *s: _t(rng.standard_normal(s) * 0.5, True)  # noqa: E731
    q, k, v = g(2, 2, 4), g(3, 2, 3), g(3, 2, 2)
    wq, wk, wv, b_in, w_out = g(4, 4), g(4, 3), g(4, 2), g(12), g(4, 4)

    def fn(q, k, v, wq, wk, wv, b_in, w_out):
        return F.multi_head_attention_forward(
            q, k, v, 4, 2, None, b_in, None, None, False, 0.0, w_out, None,
            need_weights=False, use_separate_proj_weight=True, q_proj_weight=wq,
            k_proj_weight=wk, v_proj_weight=wv)[0]
    assert gradcheck(fn, (q, k, v, wq, wk, wv, b_in, w_out))


# ---- multi-head attention: dropout, init, errors ------------------------------------------
def test_mha_dropout_only_in_training():
    tl.manual_seed(8)
    m = nn.MultiheadAttention(E_, H_, dropout=0.5)
    rng = np.random.default_rng(18)
    q, k, v = (_t(x) for x in _mha_inputs(rng, m))
    ref, ref_w = np_mha(_np(q), _np(k), _np(v), _np_params(m), H_)
    m.eval()
    out, w = m(q, k, v)
    np.testing.assert_allclose(_np(out), ref, rtol=1e-5, atol=1e-5)
    m.train()
    _, w_train = m(q, k, v, average_attn_weights=False)
    wt = _np(w_train)
    per_head = np_mha(_np(q), _np(k), _np(v), _np_params(m), H_, average_attn_weights=False)[1]
    kept = wt != 0
    assert 0.2 < kept.mean() < 0.8
    np.testing.assert_allclose(wt[kept], per_head[kept] * 2, rtol=1e-5)


def test_mha_initialisation():
    tl.manual_seed(9)
    E = 64
    m = nn.MultiheadAttention(E, 4, add_bias_kv=True)
    w = _np(m.in_proj_weight)
    bound = math.sqrt(6.0 / (E + 3 * E))                  # xavier_uniform_ on (3E, E)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    assert not _np(m.in_proj_bias).any() and not _np(m.out_proj.bias).any()
    ow = _np(m.out_proj.weight)                            # Linear's default
    assert np.abs(ow).max() <= 1 / math.sqrt(E)
    bk = np.concatenate([_np(m.bias_k).ravel(), _np(m.bias_v).ravel()])
    # xavier_normal_ on (1, 1, E): fan_in = fan_out = E, std = sqrt(2 / (2E))
    assert abs(bk.std() - math.sqrt(1.0 / E)) < 0.35 * math.sqrt(1.0 / E)
    sep = nn.MultiheadAttention(E, 4, kdim=32)
    kb = math.sqrt(6.0 / (E + 32))
    assert np.abs(_np(sep.k_proj_weight)).max() <= kb


def test_mha_constructor_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0, got "
                                         "embed_dim=0 and num_heads=2 instead"):
        nn.MultiheadAttention(0, 2)


def _mha_error_cases(lib):
    """(name -> thunk) for bad forward calls, built for torch or torchlite alike."""
    z = lambda *s, dtype=None: lib.zeros(*s, dtype=dtype)  # noqa: E731
    m = lib.nn.MultiheadAttention(4, 2)
    q3, q2 = z(3, 2, 4), z(3, 4)
    return {
        "attn_mask_2d": lambda: m(q3, q3, q3, attn_mask=z(4, 4, dtype=lib.bool)),
        "attn_mask_3d": lambda: m(q3, q3, q3, attn_mask=z(2, 3, 3)),
        "attn_mask_4d": lambda: m(q3, q3, q3, attn_mask=z(1, 4, 3, 3)),
        "kpm_batch": lambda: m(q3, q3, q3, key_padding_mask=z(3, 3, dtype=lib.bool)),
        "kpm_length": lambda: m(q3, q3, q3, key_padding_mask=z(2, 4, dtype=lib.bool)),
        "kpm_rank": lambda: m(q3, q3, q3, key_padding_mask=z(2, dtype=lib.bool)),
        "key_rank": lambda: m(q3, q2, q2),
        "unbatched_key_rank": lambda: m(q2, q3, q3),
        "unbatched_kpm_rank": lambda: m(q2, q2, q2, key_padding_mask=z(2, 3, dtype=lib.bool)),
        "unbatched_3d_mask": lambda: m(q2, q2, q2, attn_mask=z(3, 3, 3)),
        "query_rank": lambda: m(z(4), z(4), z(4)),
        "embed_dim": lambda: m(z(3, 2, 6), z(3, 2, 6), z(3, 2, 6)),
        "kv_shape": lambda: m(q3, z(3, 2, 4), z(2, 2, 4)),
        "causal_without_mask": lambda: m(q3, q3, q3, is_causal=True),
        "int_mask": lambda: m(q3, q3, q3, attn_mask=z(3, 3, dtype=lib.int64)),
    }


@pytest.mark.parametrize("name", list(_mha_error_cases(tl)))
def test_mha_errors_match_torch(name):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        _mha_error_cases(torch)[name]()
    with pytest.raises(type(theirs.value)) as ours:
        _mha_error_cases(tl)[name]()
    # torchlite names the layer first ("MultiheadAttention(...): "), then torch's message
    assert str(ours.value).endswith(str(theirs.value).replace("torch.", "torchlite."))


def test_mha_2d_mask_message():
    m = nn.MultiheadAttention(4, 2)
    x = tl.zeros(3, 2, 4)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is "
                                           r"torchlite.Size\(\[4, 4\]\), but should be \(3, 3\)\."):
        m(x, x, x, attn_mask=tl.zeros(4, 4, dtype=tl.bool))


def test_mha_mismatched_mask_types_warn():
    m = nn.MultiheadAttention(4, 2)
    x = tl.zeros(3, 2, 4)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask "
                                         "is deprecated"):
        m(x, x, x, key_padding_mask=tl.zeros(2, 3, dtype=tl.bool), attn_mask=tl.zeros(3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m(x, x, x, key_padding_mask=tl.zeros(2, 3), attn_mask=tl.zeros(3, 3))


def test_sdpa_kernel_limits_the_backends_as_pytorch_cpu():
    """nn.attention.sdpa_kernel: MATH or FLASH_ATTENTION run on the CPU (PyTorch's CPU build
    has those two); a choice of neither raises PyTorch's error; the choice ends with the
    context."""
    from torchlite.nn.attention import SDPBackend, sdpa_kernel
    q = tl.randn(1, 2, 4, 8)
    want = F.scaled_dot_product_attention(q, q, q)
    for choice in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION,
                   [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        with sdpa_kernel(choice):
            assert tl.equal(F.scaled_dot_product_attention(q, q, q), want)
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        with pytest.raises(RuntimeError, match="No viable backend"):
            F.scaled_dot_product_attention(q, q, q)
    assert tl.equal(F.scaled_dot_product_attention(q, q, q), want)
    mha, x = nn.MultiheadAttention(8, 2, batch_first=True), tl.randn(1, 4, 8)
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        mha(x, x, x)                                  # need_weights: PyTorch's math path runs
        with pytest.raises(RuntimeError, match="No viable backend"):
            mha(x, x, x, need_weights=False)          # through SDPA, as PyTorch's
    with pytest.raises(AssertionError, match="SDPBackend"):
        with sdpa_kernel("MATH"):
            pass
    assert str(SDPBackend.MATH) == "SDPBackend.MATH" and int(SDPBackend.CUDNN_ATTENTION) == 3
    pytest.importorskip("torch")
    from torch.nn.attention import SDPBackend as TorchBackend
    assert {m.name: int(m) for m in SDPBackend} == {n: int(m) for n, m in TorchBackend.__members__.items()}


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
def test_causal_biases_for_unequal_lengths(shape):
    """nn.attention.bias: upper-left is is_causal's mask, lower-right aligns the last query with
    the last key (NumPy's tril with the offset S - L); either as attn_mask equals its
    materialised mask, and PyTorch's where installed."""
    import warnings
    from torchlite.nn.attention import bias as B
    L, S = shape
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        upper, lower = B.causal_upper_left(L, S), B.causal_lower_right(L, S)
    assert bool(caught) == (L > S)            # lower-right with more queries warns, as PyTorch's
    ones = np.ones((L, S), dtype=bool)
    assert upper._materialize().numpy().tolist() == np.tril(ones).tolist()
    assert lower._materialize().numpy().tolist() == np.tril(ones, S - L).tolist()
    rng = np.random.default_rng(L * 10 + S)
    qn, kn, vn = rng.standard_normal((1, 2, L, 4)), rng.standard_normal((1, 2, S, 4)), rng.standard_normal((1, 2, S, 4))
    q, k, v = tl.tensor(qn), tl.tensor(kn), tl.tensor(vn)
    for bias in (upper, lower):
        got = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        want = F.scaled_dot_product_attention(q, k, v, attn_mask=bias._materialize())
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    if L == S:
        np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v, attn_mask=upper).numpy(),
                                   F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy(), rtol=1e-12)
    with pytest.raises(AssertionError, match="2D"):
        B.causal_lower_right(2, 3, 4)
    torch = pytest.importorskip("torch")
    from torch.nn.attention import bias as TB
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("causal_upper_left", "causal_lower_right"):
            ours = F.scaled_dot_product_attention(q, k, v, attn_mask=getattr(B, name)(L, S))
            theirs = torch.nn.functional.scaled_dot_product_attention(
                torch.tensor(qn), torch.tensor(kn), torch.tensor(vn), attn_mask=getattr(TB, name)(L, S))
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)
