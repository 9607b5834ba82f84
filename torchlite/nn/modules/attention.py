"""MultiheadAttention, with PyTorch's parameters (names, shapes, initialisation), masks,
shapes and messages; its forward is nn.functional.multi_head_attention_forward.

PyTorch's inference fast path (native fused kernels and nested tensors, taken in eval mode
without autograd) is not reproduced: every call runs the composed path, whose results equal
the fast path's up to rounding."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..._ops.creation import empty as _empty
from .. import functional as F
from ..functional import attention as _FA
from .. import init
from ..parameter import Parameter
from .linear import Linear
from .module import Module

if TYPE_CHECKING:
    from typing import Any

    from ..._device import device
    from ..._dtype import dtype
    from ..._tensor import Tensor

__all__ = ["MultiheadAttention"]


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under another name: MultiheadAttention's out_proj, named as in PyTorch (where
    the name keeps dynamic quantization away from it) so reprs and state dicts match."""


class MultiheadAttention(Module):
    """Attention over num_heads heads of embed_dim // num_heads features each:
    softmax(Q_h K_h^T / sqrt(head_dim) + mask) V_h per head, concatenated, then out_proj.

    Parameters as PyTorch's: in_proj_weight (3E, E) when kdim == vdim == embed_dim, else
    q_proj_weight (E, E), k_proj_weight (E, kdim), v_proj_weight (E, vdim); in_proj_bias (3E)
    when bias; out_proj (a Linear); bias_k, bias_v (1, 1, E) when add_bias_kv.

    forward(query, key, value) takes (L, N, E) sequence-first input ((N, L, E) with
    batch_first, (L, E) unbatched) and returns (attn_output, attn_weights or None)."""

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: device | str | int | None = None,
                 dtype: dtype | None = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(_empty((3 * embed_dim, embed_dim), **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(_empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(_empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(_empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(_empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(_empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        """PyTorch's initialisation: Xavier-uniform projections, zero biases, Xavier-normal
        bias_k/bias_v (out_proj.weight keeps Linear's default)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # checkpoints pickled before this attribute existed were all packed-projection ones
        state.setdefault("_qkv_same_embed_dim", True)
        super().__setstate__(state)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None,
                average_attn_weights: bool = True, is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """(attn_output, attn_weights): output shaped like query (with embed_dim features);
        weights (N, L, S) averaged over heads, (N, num_heads, L, S) when not
        average_attn_weights, without N for unbatched input, None unless need_weights.

        key_padding_mask (N, S) / (S,): True (or -inf) marks keys to ignore.  attn_mask (L, S)
        or (N*num_heads, L, S): True marks pairs that may not attend; a float mask is added."""
        is_batched = query.dim() == 3
        key_padding_mask = _FA._canonical_mask(key_padding_mask, "key_padding_mask",
                                               _FA._none_or_dtype(attn_mask), "attn_mask",
                                               query.dtype)
        attn_mask = _FA._canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                        check_other=False)
        if self.batch_first and is_batched:
            query, key, value = _seq_first(query, key, value)
        separate = {}
        if not self._qkv_same_embed_dim:
            separate = {"use_separate_proj_weight": True, "q_proj_weight": self.q_proj_weight,
                        "k_proj_weight": self.k_proj_weight, "v_proj_weight": self.v_proj_weight}
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            average_attn_weights=average_attn_weights, is_causal=is_causal, **separate)
        if self.batch_first and is_batched:
            out = out.transpose(1, 0)
        return out, weights

    def merge_masks(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                    query: Tensor) -> tuple[Tensor | None, int | None]:
        """PyTorch's helper: the masks combined into one (batch, num_heads, L, L) mask with
        mask type 2, or the single mask given with type 0 (attn_mask) / 1 (padding mask)."""
        mask_type, merged = None, None
        if key_padding_mask is not None:
            mask_type, merged = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                expanded = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                expanded = attn_mask.view(1, 1, seq_len, seq_len).expand(
                    batch_size, self.num_heads, -1, -1)
            merged = expanded
            if key_padding_mask is not None:
                merged = expanded + key_padding_mask.view(batch_size, 1, 1, seq_len).expand(
                    -1, self.num_heads, -1, -1)
        return merged, mask_type


def _seq_first(query, key, value):
    """(N, L, E) inputs as (L, N, E) views, keeping which of them are the same tensor (the
    in-projection packs self-attention into one GEMM)."""
    if key is value:
        if query is key:
            query = key = value = query.transpose(1, 0)
        else:
            query, key = (x.transpose(1, 0) for x in (query, key))
            value = key
    else:
        query, key, value = (x.transpose(1, 0) for x in (query, key, value))
    return query, key, value
