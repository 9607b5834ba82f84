"""torchlite.nn.attention.bias: PyTorch's causal attention biases for scaled_dot_product_attention
when the query and key lengths differ (torch.nn.attention.bias): causal_upper_left(L, S) lets
query i see keys 0..i (the mask is_causal=True means), causal_lower_right(L, S) aligns the
last query with the last key (query i sees keys 0..i + S - L: decoding with a key/value cache).
Pass one as attn_mask; it stands for its bool mask (_materialize)."""
from __future__ import annotations

import enum
import warnings

from ... import _dtype as D
from ..._ops.creation import ones as _ones

__all__ = ["CausalVariant", "CausalBias", "causal_upper_left", "causal_lower_right"]


class CausalVariant(enum.IntEnum):
    """Where the causal diagonal starts: the top-left corner or the bottom-right one."""
    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias:
    """A causal mask for seq_len_q queries and seq_len_kv keys (made by causal_upper_left or
    causal_lower_right), usable wherever scaled_dot_product_attention takes attn_mask."""

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        if not isinstance(variant, CausalVariant):
            raise AssertionError("variant must be a CausalVariant")
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if variant is CausalVariant.LOWER_RIGHT and seq_len_q > seq_len_kv:
            warnings.warn("Lower right causal bias will produce NaNs in the output when "
                          "seq_len_q > seq_len_kv!", stacklevel=2)

    def _materialize(self, device=None):
        """The bool mask (True: may attend), (seq_len_q, seq_len_kv)."""
        full = _ones(self.seq_len_q, self.seq_len_kv, dtype=D.bool, device=device)
        offset = 0 if self.variant is CausalVariant.UPPER_LEFT else self.seq_len_kv - self.seq_len_q
        return full.tril(offset)

    def __repr__(self) -> str:
        return repr(self._materialize())


def _two_sizes(size, name):
    if len(size) != 2:
        raise AssertionError(f"{name} only supports 2D tensors")
    return size


def causal_upper_left(*size) -> CausalBias:
    """The causal mask of is_causal=True for (seq_len_q, seq_len_kv)."""
    return CausalBias(CausalVariant.UPPER_LEFT, *_two_sizes(size, "causal_upper_left"))


def causal_lower_right(*size) -> CausalBias:
    """The causal mask aligned at the bottom right for (seq_len_q, seq_len_kv)."""
    return CausalBias(CausalVariant.LOWER_RIGHT, *_two_sizes(size, "causal_lower_right"))
