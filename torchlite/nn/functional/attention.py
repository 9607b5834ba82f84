"""Attention: scaled_dot_product_attention and multi_head_attention_forward (the functional
form of nn.MultiheadAttention), with PyTorch's signatures, mask conventions and messages.

Both are compositions of differentiable Tensor ops, so autograd (and double backward) needs no
extra code.  Every head of every batch element is one matrix of a (B*H, L, E) batch: the
scores are one baddbmm (scale and additive mask folded into the GEMM), then softmax, dropout
and one bmm with the values.

Masks.  scaled_dot_product_attention takes a bool mask with True = "may attend" or a float mask
that is added to the scores; multi_head_attention_forward (PyTorch's MHA convention) takes a
bool mask with True = "may NOT attend" or a float mask.  A query row that may attend to nothing
gives 0 in scaled_dot_product_attention, as PyTorch's does (its "safe softmax"); the
need_weights=True path of multi_head_attention_forward uses a plain softmax there and gives NaN,
as PyTorch's does."""
from __future__ import annotations

import math
import threading
import warnings

from ... import _dtype as D
from ..._tensor import Tensor
from ..._ops import creation as _C
from ..._ops import joining as _J
from ..._ops import linalg as _LA
from ..._ops import elementwise as _P
from ..._ops import reduction as _R
from ..._dispatch import matmul as _mm
from .dropout import dropout as _dropout
from .linear import linear as _linear
from .vision import pad as _pad
from ..._autocast_state import entry as _autocast, run as _autocast_run

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

# The backends torch.nn.attention.sdpa_kernel allows in this thread (None: all).  torchlite has
# one implementation; PyTorch's CPU build runs the MATH and FLASH_ATTENTION backends, so on the
# CPU one of those must be allowed (as there); on CUDA any choice runs torchlite's kernels.
_sdpa_backends = threading.local()
_CPU_BACKENDS = frozenset(("MATH", "FLASH_ATTENTION"))


def _check_backend_allowed(query):
    allowed = getattr(_sdpa_backends, "allowed", None)
    if allowed is None or query.device.type != "cpu" or allowed & _CPU_BACKENDS:
        return
    raise RuntimeError(f"No viable backend for scaled_dot_product_attention was found: "
                       f"sdpa_kernel allows {sorted(allowed)}, and on the CPU only MATH and "
                       f"FLASH_ATTENTION run")

_NEG_INF = float("-inf")
_CNAME = _mm.C_NAMES            # "float", "double", "long int", ...: PyTorch's C++ type names


# ---- the attention kernel both entry points share -----------------------------------------
def _attention(q, k, v, bias, dead, scale, dropout_p):
    """softmax(scale * q @ k^T + bias) @ v over (B, L, E), (B, S, E), (B, S, Ev) batches.

    bias: None or an additive mask broadcastable to (B, L, S) (at most 3-D); dead: None or a
    bool (..., L, 1) marking query rows that may attend to nothing (their bias row must hold
    finite values so the softmax stays finite); those rows of the output are 0.  Returns
    (output (B, L, Ev), attention probabilities after dropout (B, L, S))."""
    kt = k.transpose(1, 2)
    if bias is None:
        # beta=0: the addend is ignored, so a 0-d zero stands in for it
        scores = _LA.baddbmm(_C.zeros((), dtype=q.dtype, device=q.device), q, kt, beta=0, alpha=scale)
    else:
        scores = _LA.baddbmm(bias, q, kt, alpha=scale)
    probs = _R.softmax(scores, -1)
    if dropout_p > 0.0:
        probs = _dropout(probs, dropout_p, True)
    out = _LA.bmm(probs, v)
    if dead is not None:
        out = out.masked_fill(dead, 0.0)
    return out, probs


# ---- scaled_dot_product_attention ---------------------------------------------------------
def _size_mismatch(a, b, dim):
    return RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                        f"non-singleton dimension {dim}")


def _broadcast_batch(sa, sb):
    """The broadcast of two batch shapes, with PyTorch's message for a mismatch."""
    n = max(len(sa), len(sb))
    sa = (1,) * (n - len(sa)) + tuple(sa)
    sb = (1,) * (n - len(sb)) + tuple(sb)
    out = []
    for i in range(n):
        if sa[i] != sb[i] and sa[i] != 1 and sb[i] != 1:
            raise _size_mismatch(sa[i], sb[i], i)
        out.append(sa[i] if sb[i] == 1 else sb[i])
    return tuple(out)


def _check_sdpa(query, key, value, attn_mask, dropout_p, is_causal):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, "
                            f"not {type(t).__name__}")
    if attn_mask is not None and not isinstance(attn_mask, Tensor):
        raise TypeError(f"scaled_dot_product_attention(): argument 'attn_mask' must be Tensor, "
                        f"not {type(attn_mask).__name__}")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but "
                           f"got query.dim: {query.dim()} key.dim: {key.dim()} and value.dim: "
                           f"{value.dim()} instead.")
    qd, kd, vd = query._data.dtype, key._data.dtype, value._data.dtype
    if not qd == kd == vd:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_CNAME[qd]} key.dtype: {_CNAME[kd]} and value.dtype: "
                           f"{_CNAME[vd]} instead.")
    if not query.is_floating_point():
        raise RuntimeError(f"scaled_dot_product_attention: expected floating point query, key "
                           f"and value, but got {query.dtype}")
    if attn_mask is not None:
        md = attn_mask._data.dtype
        if md not in (D.bool.code, D.float32.code, qd):
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {_CNAME[md]} and  query.dtype: "
                               f"{_CNAME[qd]} instead.")
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
    if dropout_p > 1.0:             # PyTorch lets a negative p through (no dropout)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")


def _repeat_kv_heads(query, key, value):
    """enable_gqa: key and value heads (dim -3) repeated to match the query's."""
    hq, hk, hv = query.size(-3), key.size(-3), value.size(-3)
    if hk == 0 or hv == 0 or hq % hk or hq % hv:
        raise RuntimeError("Number of heads in key and value must divide the number of heads "
                           "in query")
    if hk != hq:
        key = key.repeat_interleave(hq // hk, -3)
    if hv != hq:
        value = value.repeat_interleave(hq // hv, -3)
    return key, value


def _check_mask_shape(mask, full):
    """mask must broadcast to `full` (the scores' shape) without enlarging it."""
    ms = tuple(mask.shape)
    n = len(full)
    if len(ms) > n:
        big = _broadcast_batch(ms, full)
        raise RuntimeError(f"output with shape {list(full)} doesn't match the broadcast shape "
                           f"{list(big)}")
    for i in range(1, len(ms) + 1):
        if ms[-i] != 1 and ms[-i] != full[-i]:
            if full[-i] == 1:
                big = _broadcast_batch(ms, full)
                raise RuntimeError(f"output with shape {list(full)} doesn't match the broadcast "
                                   f"shape {list(big)}")
            raise _size_mismatch(full[-i], ms[-i], n - i)


def _sdpa_bias(attn_mask, is_causal, L, S, dtype, device):
    """The additive float mask (on `device`) and the dead-row marker (see _attention) in the
    mask's own (broadcastable) shape, or (None, None)."""
    if is_causal:
        # top-left aligned: query i attends to keys 0..i; row 0 always has key 0, so no row is dead
        above = _C.ones((L, S), dtype=D.bool, device=device).triu(1)
        return _C.zeros((L, S), dtype=dtype, device=device).masked_fill(above, _NEG_INF), None
    if attn_mask is None:
        return None, None
    if attn_mask.dtype == D.bool:
        dead = _R.any(attn_mask, -1, keepdim=True).logical_not()
        allowed = attn_mask | dead if _R.any(dead).item() else attn_mask
        bias = _P.where(allowed, _C.zeros((), dtype=dtype, device=device),
                        _C.full((), _NEG_INF, dtype=dtype, device=device))
        return bias, (dead if allowed is not attn_mask else None)
    bias = attn_mask if attn_mask.dtype == dtype else attn_mask.to(dtype)
    dead = _R.all(bias == _NEG_INF, -1, keepdim=True)
    if not _R.any(dead).item():
        return bias, None
    return bias.masked_fill(dead, 0.0), dead


def _as_batch(t, batch, nb):
    """t (..., X, Y), broadcastable to batch + (X, Y), as one (nb, X, Y) batch (a view when
    the layout allows)."""
    tail = tuple(t.shape[-2:])
    if tuple(t.shape[:-2]) != batch:
        t = t.expand(batch + tail)
    return t.reshape((nb,) + tail)


def _mask_as_batch(m, batch, nb):
    """A mask for (..., L, S) scores as at most 3-D: one without batch dims of its own stays
    as it is (baddbmm and masked_fill broadcast it)."""
    while m.dim() > 2 and m.shape[0] == 1:
        m = m.squeeze(0)
    return m if m.dim() <= 2 else _as_batch(m, batch, nb)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, *,
                                 scale: float | None = None, enable_gqa: bool = False) -> Tensor:
    """softmax(query @ key^T * scale + mask) @ value over the last two dims, any leading
    (broadcasting) batch dims.

    query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev).  attn_mask: bool
    (True = may attend) or float (added to the scores), broadcastable to (..., L, S).
    is_causal: query i attends to keys 0..i (top-left aligned; an error with attn_mask).
    scale defaults to 1/sqrt(E); dropout_p drops attention probabilities (always, as
    PyTorch's does: pass 0 in evaluation).  enable_gqa: key/value with fewer heads (dim -3)
    than query have them repeated.  Rows that may attend to nothing give 0."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(scaled_dot_product_attention, locals())
    if hasattr(attn_mask, "_materialize"):        # nn.attention.bias's CausalBias: its mask
        attn_mask = attn_mask._materialize(query.device)
    _check_sdpa(query, key, value, attn_mask, dropout_p, is_causal)
    _check_backend_allowed(query)
    if enable_gqa:
        key, value = _repeat_kv_heads(query, key, value)
    L, E = query.shape[-2], query.shape[-1]
    S, Ev = key.shape[-2], value.shape[-1]
    batch = _broadcast_batch(_broadcast_batch(query.shape[:-2], key.shape[:-2]),
                             value.shape[:-2])
    nb = math.prod(batch)
    if key.shape[-1] != E:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{nb}, {E}] but got: [{nb}, {key.shape[-1]}].")
    if value.shape[-2] != S:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{nb}, {S}] but got: [{nb}, {value.shape[-2]}].")
    if attn_mask is not None:
        _check_mask_shape(attn_mask, batch + (L, S))
    bias, dead = _sdpa_bias(attn_mask, is_causal, L, S, query.dtype, query.device)
    if bias is not None:
        bias = _mask_as_batch(bias, batch, nb)
    if dead is not None:
        dead = _mask_as_batch(dead, batch, nb)
    q3, k3, v3 = (_as_batch(t, batch, nb) for t in (query, key, value))
    if scale is None:
        scale = 1.0 / math.sqrt(E) if E > 0 else math.inf
    out, _ = _attention(q3, k3, v3, bias, dead, scale, dropout_p)
    return out.view(batch + (L, Ev))


# ---- multi_head_attention_forward ---------------------------------------------------------
def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """PyTorch's checks of the input ranks; True when the input is batched (3-D query, key
    and value, 2-D key_padding_mask), False when it is not (one rank less)."""
    nd = query.dim()
    if nd not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{nd}-D query tensor")
    batched = nd == 3
    which = "For batched (3-D) `query`" if batched else "For unbatched (2-D) `query`"
    if key.dim() != nd or value.dim() != nd:
        raise AssertionError(f"{which}, expected `key` and `value` to be {nd}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != nd - 1:
        raise AssertionError(f"{which}, expected `key_padding_mask` to be `None` or {nd - 1}-D "
                             f"but found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None and attn_mask.dim() not in (2, 3):
        raise AssertionError(f"{which}, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                             f"{attn_mask.dim()}-D tensor instead")
    if not batched and attn_mask is not None and attn_mask.dim() == 3:
        expected = (num_heads, query.shape[0], key.shape[0])
        if tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                 f"{attn_mask.shape}")
    return batched


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = masked) as a float mask of target_type (-inf where masked); a
    float mask unchanged.  Warns, as PyTorch does, when mask and the other mask differ in
    dtype."""
    if mask is None:
        return None
    is_float = mask.is_floating_point()
    if mask.dtype != D.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      f"same type for both instead.", stacklevel=2)
    if is_float:
        return mask
    return _P.where(mask, _C.full((), _NEG_INF, dtype=target_type, device=mask.device),
                    _C.zeros((), dtype=target_type, device=mask.device))


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _in_projection_packed(q, k, v, w, b=None):
    """q, k, v projected by the packed (3E, E) weight (rows in q, k, v order).  Self-attention
    is one GEMM and encoder-decoder attention two; each result is laid out contiguously, so
    its heads fold into a (N*H, L, E/H) batch without a copy."""
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = _linear(q, w, b).unflatten(-1, (3, E)).movedim(-2, 0).contiguous()
            return proj.unbind(0)
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        kv = _linear(k, w_kv, b_kv).unflatten(-1, (2, E)).movedim(-2, 0).contiguous()
        k_proj, v_proj = kv.unbind(0)
        return _linear(q, w_q, b_q), k_proj, v_proj
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return _linear(q, w_q, b_q), _linear(k, w_k, b_k), _linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    """q, k, v projected by separate weights (E, Eq), (E, Ek), (E, Ev)."""
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    for what, t, shape in (("query weights", w_q, (Eq, Eq)), ("key weights", w_k, (Eq, Ek)),
                           ("value weights", w_v, (Eq, Ev)), ("query bias", b_q, (Eq,)),
                           ("key bias", b_k, (Eq,)), ("value bias", b_v, (Eq,))):
        if t is not None and tuple(t.shape) != shape:
            raise AssertionError(f"expecting {what} shape of {shape}, but got {t.shape}")
    return _linear(q, w_q, b_q), _linear(k, w_k, b_k), _linear(v, w_v, b_v)


def _check_2d_3d_mask(attn_mask, tgt_len, src_len, bsz, num_heads):
    """The attention mask as (1 or N*H, L, S), with PyTorch's messages for a wrong shape."""
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                               f"{(tgt_len, src_len)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                               f"{(bsz * num_heads, tgt_len, src_len)}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _static_kv(static, name, bsz, num_heads, head_dim):
    if static.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got "
                             f"{static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {static.size(2)}")
    return static


def _project_inputs(query, key, value, num_heads, in_proj_weight, in_proj_bias,
                    use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight):
    """The in-projection, with PyTorch's checks of the weights and key/value shapes."""
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        for name, w in (("q_proj_weight", q_proj_weight), ("k_proj_weight", k_proj_weight),
                        ("v_proj_weight", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name} is None")
        biases = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        return _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight,
                              *biases)
    if key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if in_proj_weight is None:
        raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
    return _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)


def _merge_padding_mask(attn_mask, key_padding_mask, bsz, num_heads, src_len):
    """attn_mask (1 or N*H, L, S) plus the (N, S) key padding mask, per head: (N*H, 1 or L, S)."""
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                             f"{key_padding_mask.shape[0]}")
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                             f"{key_padding_mask.shape[1]}")
    kpm = (key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
           .reshape(bsz * num_heads, 1, src_len))
    return kpm if attn_mask is None else attn_mask + kpm


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int,
                                 num_heads: int, in_proj_weight: Tensor | None, in_proj_bias: Tensor | None,
                                 bias_k: Tensor | None, bias_v: Tensor | None, add_zero_attn: bool,
                                 dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None,
                                 training: bool = True, key_padding_mask: Tensor | None = None,
                                 need_weights: bool = True, attn_mask: Tensor | None = None,
                                 use_separate_proj_weight: bool = False, q_proj_weight: Tensor | None = None,
                                 k_proj_weight: Tensor | None = None, v_proj_weight: Tensor | None = None,
                                 static_k: Tensor | None = None, static_v: Tensor | None = None,
                                 average_attn_weights: bool = True,
                                 is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """The forward pass of nn.MultiheadAttention (PyTorch's signature and semantics).

    query (L, N, E) or (L, E), key/value (S, N, Ek/Ev) or (S, Ek/Ev) (sequence first).  Masks:
    bool (True = not allowed) or float (added): attn_mask (L, S) or (N*num_heads, L, S),
    key_padding_mask (N, S) or (S,).  Returns (attn_output (L, N, E) or (L, E), weights):
    weights (N, L, S) averaged over heads, (N, num_heads, L, S) otherwise, or None when
    need_weights is False."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        # run as a batch of one: keep key is value is query for the packed projection
        same_kv = key is value
        same_qk = query is key
        query = query.unsqueeze(1)
        key = query if same_qk else key.unsqueeze(1)
        value = key if same_kv else value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None            # the hint alone makes the mask (PyTorch's SDPA path)
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False       # the merged mask is no longer causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got "
                             f"{embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    q, k, v = _project_inputs(query, key, value, num_heads, in_proj_weight, in_proj_bias,
                              use_separate_proj_weight, q_proj_weight, k_proj_weight,
                              v_proj_weight)
    src_len = key.shape[0]
    if attn_mask is not None:
        attn_mask = _check_2d_3d_mask(attn_mask, tgt_len, src_len, bsz, num_heads)
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = _J.cat([k, bias_k.repeat(1, bsz, 1)])
        v = _J.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = None if attn_mask is None else _pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else _pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # heads fold into the batch: (L, N, E) -> (N*H, L, E/H), row n*H + h
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        k = _static_kv(static_k, "static_k", bsz, num_heads, head_dim)
    if static_v is None:
        v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        v = _static_kv(static_v, "static_v", bsz, num_heads, head_dim)
    if add_zero_attn:
        k = _J.cat([k, _C.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)], 1)
        v = _J.cat([v, _C.zeros((bsz * num_heads, 1, head_dim), dtype=v.dtype, device=v.device)], 1)
        attn_mask = None if attn_mask is None else _pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else _pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        attn_mask = _merge_padding_mask(attn_mask, key_padding_mask, bsz, num_heads, src_len)
    if not training:
        dropout_p = 0.0
    scale = 1.0 / math.sqrt(head_dim)

    if need_weights:
        # PyTorch's math path: a plain softmax (a fully masked row gives NaN, as there)
        out, weights = _attention(q, k, v, attn_mask, None, scale, dropout_p)
    else:
        # as PyTorch's SDPA (is_causal only counts without a mask): a row that may attend
        # to nothing gives 0; PyTorch goes through SDPA's backend choice here too
        _check_backend_allowed(q)
        bias, dead = _sdpa_bias(attn_mask, is_causal and attn_mask is None, tgt_len, src_len,
                                q.dtype, q.device)
        out, weights = _attention(q, k, v, bias, dead, scale, dropout_p)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.view(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(dim=1)
    if not is_batched:
        weights = weights.squeeze(0)
    return out, weights
