"""The Transformer of "Attention Is All You Need": encoder and decoder layers, their stacks and
the full encoder-decoder model, with PyTorch's constructor arguments, defaults and submodule
names (a PyTorch state_dict loads directly).

Every call runs the composed path (PyTorch's "slow path").  PyTorch's inference fast path
(eval mode without autograd, batch_first) is not reproduced; its results equal this path's up
to rounding, except that the encoder's nested-tensor path (src_key_padding_mask given) returns
exact zeros (then the final norm of them) at padded positions, where this path returns what
the layers compute there."""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from ..._ops.creation import full as _full
from ..._ops import reduction as _R
from .. import functional as F
from ..functional import attention as _FA
from .. import init
from .activation import ReLU, GELU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..._device import device
    from ..._dtype import dtype
    from ..._tensor import Tensor

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """(sz, sz) float mask: 0 on and below the diagonal, -inf above (position i sees 0..i)."""
    return _full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)


def _get_seq_len(src, batch_first):
    if src.dim() == 2:
        return src.size(0)
    return src.size(1 if batch_first else 0)


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    """is_causal when given; with None, whether mask equals the square subsequent mask."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.size(-2)
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        if mask.size() == causal.size():
            make_causal = bool(_R.all(mask == causal))
        else:
            make_causal = False
    return make_causal


def _get_clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


_F_RELU, _F_GELU = F.relu, F.gelu


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _resolve_activation(activation):
    """The feed-forward activation: a callable as given, "relu"/"gelu" by name."""
    return _get_activation_fn(activation) if isinstance(activation, str) else activation


def _norms(n, d_model, eps, bias, kw):
    return [LayerNorm(d_model, eps=eps, bias=bias, **kw) for _ in range(n)]


def _feed_forward_layers(d_model, dim_feedforward, dropout, bias, kw):
    """(linear1, dropout, linear2) of a layer's feed-forward block, in PyTorch's order."""
    return (Linear(d_model, dim_feedforward, bias=bias, **kw), Dropout(dropout),
            Linear(dim_feedforward, d_model, bias=bias, **kw))


def _feed_forward(layer, x):
    """linear2(dropout(activation(linear1(x)))): a layer's feed-forward block before its
    residual dropout."""
    act = layer.activation
    # F.relu/F.gelu are looked up when called, not as stored at construction, so that a
    # wrapper torchlite.func.vmap puts on them is seen
    act = getattr(F, act.__name__) if act in (_F_RELU, _F_GELU) else act
    return layer.linear2(layer.dropout(act(layer.linear1(x))))


def _attention_output(attn, x, memory, attn_mask, key_padding_mask, is_causal):
    """The output of attention block attn (queries x, keys and values memory), without the
    attention weights."""
    return attn(x, memory, memory, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                need_weights=False, is_causal=is_causal)[0]


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block (linear1, activation, dropout, linear2), each
    with dropout, a residual connection and LayerNorm: after the residual (post-norm, the
    default) or on the block's input (norm_first=True, pre-norm)."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, device: str | device | int | None = None,
                 dtype: dtype | None = None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1, self.dropout, self.linear2 = _feed_forward_layers(
            d_model, dim_feedforward, dropout, bias, kw)
        self.norm_first = norm_first
        self.norm1, self.norm2 = _norms(2, d_model, layer_norm_eps, bias, kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        activation = _resolve_activation(activation)
        # PyTorch records which of its fused activations (if any) this is
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        if not hasattr(self, "activation"):
            self.activation = F.relu

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """src (S, N, E), (N, S, E) with batch_first, or (S, E); src_mask (S, S) or
        (N*nhead, S, S); src_key_padding_mask (N, S) or (S,): bool (True = masked) or float."""
        src_key_padding_mask = _FA._canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                                   _FA._none_or_dtype(src_mask), "src_mask",
                                                   src.dtype)
        src_mask = _FA._canonical_mask(src_mask, "src_mask", None, "", src.dtype,
                                       check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        return self.dropout1(_attention_output(self.self_attn, x, x, attn_mask,
                                               key_padding_mask, is_causal))

    def _ff_block(self, x):
        return self.dropout2(_feed_forward(self, x))


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention to the encoder's output (memory), then the
    feed-forward block; each with dropout, a residual connection and LayerNorm (post-norm by
    default, pre-norm with norm_first=True)."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, device: str | device | int | None = None,
                 dtype: dtype | None = None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **kw)
        self.linear1, self.dropout, self.linear2 = _feed_forward_layers(
            d_model, dim_feedforward, dropout, bias, kw)
        self.norm_first = norm_first
        self.norm1, self.norm2, self.norm3 = _norms(3, d_model, layer_norm_eps, bias, kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _resolve_activation(activation)

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.setdefault("activation", F.relu)
        super().__setstate__(state)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """tgt (T, N, E), memory (S, N, E) ((N, *, E) with batch_first; unbatched without N);
        tgt_mask (T, T), memory_mask (T, S); padding masks (N, T) and (N, S)."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        return self.dropout1(_attention_output(self.self_attn, x, x, attn_mask,
                                               key_padding_mask, is_causal))

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        return self.dropout2(_attention_output(self.multihead_attn, x, mem, attn_mask,
                                               key_padding_mask, is_causal))

    def _ff_block(self, x):
        return self.dropout3(_feed_forward(self, x))


def _why_no_sparsity_fast_path(layer):
    """PyTorch's reason (if any) why an encoder stack cannot use nested tensors: kept so
    use_nested_tensor holds PyTorch's value (torchlite has no such path either way)."""
    if not isinstance(layer, TransformerEncoderLayer):
        return "encoder_layer was not TransformerEncoderLayer"
    attn = layer.self_attn
    if layer.norm_first:
        return "encoder_layer.norm_first was True"
    if not attn.batch_first:
        return "encoder_layer.self_attn.batch_first was not True"
    if not attn._qkv_same_embed_dim:
        return "encoder_layer.self_attn._qkv_same_embed_dim was not True"
    if attn.in_proj_bias is None:
        return "encoder_layer.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return "encoder_layer.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return "encoder_layer.norm1.eps was not equal to encoder_layer.norm2.eps"
    if attn.num_heads % 2 == 1:
        return "encoder_layer.self_attn.num_heads is odd"
    return ""


class TransformerEncoder(Module):
    """num_layers deep copies of encoder_layer (in `layers`), applied in turn, then `norm`
    (optional).  enable_nested_tensor and mask_check are kept for PyTorch compatibility
    (torchlite has no nested tensors; padded positions are computed, not zeroed)."""

    __constants__ = ["norm"]

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor and not _why_no_sparsity_fast_path(
            encoder_layer)
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """src through every layer (and the final norm).  is_causal=None detects a square
        subsequent mask."""
        src_key_padding_mask = _FA._canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                                   _FA._none_or_dtype(mask), "mask", src.dtype)
        mask = _FA._canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        seq_len = _get_seq_len(src, self.layers[0].self_attn.batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """num_layers deep copies of decoder_layer (in `layers`), each attending to memory, then
    `norm` (optional)."""

    __constants__ = ["norm"]

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """tgt through every layer with memory (and the final norm).  tgt_is_causal=None
        detects a square subsequent tgt_mask."""
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """Encoder (num_encoder_layers layers and a final LayerNorm) and decoder
    (num_decoder_layers layers and a final LayerNorm); every weight matrix Xavier-uniform.
    forward(src, tgt) returns the decoder's output, shaped like tgt."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu,
                 custom_encoder: Any | None = None, custom_decoder: Any | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, device: str | device | int | None = None,
                 dtype: dtype | None = None) -> None:
        kw = {"device": device, "dtype": dtype}
        super().__init__()
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **kw), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **kw), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """src (S, N, E) and tgt (T, N, E) ((N, *, E) with batch_first, no N unbatched) ->
        (T, N, E).  Masks as in TransformerEncoder/TransformerDecoder."""
        is_batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if is_batched and src.size(batch_dim) != tgt.size(batch_dim):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: str | device | int | None = None,
                                        dtype: dtype | None = None) -> Tensor:
        """(sz, sz) float mask with -inf above the diagonal and 0 elsewhere."""
        return _generate_square_subsequent_mask(sz, dtype=dtype, device=device)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
