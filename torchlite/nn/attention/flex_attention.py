"""torchlite.nn.attention.flex_attention: PyTorch's FlexAttention API -- attention whose scores
a Python function rewrites (score_mod) and whose pattern a Python predicate masks (mask_mod,
made into a BlockMask by create_block_mask).

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx
    block_mask = create_block_mask(causal, B, H, L, S)
    out = flex_attention(q, k, v, score_mod=lambda s, b, h, q, kv: s + bias[h], block_mask=block_mask)

How it runs here: eagerly and densely.  score_mod and mask_mod are called once, on index
tensors that broadcast to (B, H, L, S) -- b of shape (B, 1, 1, 1), h (1, H, 1, 1), q_idx
(1, 1, L, 1), kv_idx (1, 1, 1, S), int64 -- which gives the same values as PyTorch's element-
by-element vmap for the mods written with tensor arithmetic, comparisons, torch.where and
indexing of captured tensors (what FlexAttention's mods are); a mod that reads a value in
Python (`if q_idx > 3:`) fails, as it does under PyTorch's vmap.  The scores are one batched
matrix product, the mask and the modification are applied to all of them, and the softmax and
the second product follow: memory of the full (B, H, L, S) scores, no skipping of masked
blocks (PyTorch's speed comes from its compiled kernel, which skips them; the values are the
same).  Rows with no allowed key give 0 and a log-sum-exp of -inf, as PyTorch's.  Everything
is differentiable, also with respect to tensors a score_mod captures."""
from __future__ import annotations

import inspect
import math
from typing import TYPE_CHECKING

from ... import _dtype as D
from ..._ops.creation import arange as _arange, full as _full
from ..._tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..._device import device

__all__ = ["flex_attention", "create_block_mask", "create_mask", "BlockMask", "and_masks",
           "or_masks", "noop_mask"]

_DEFAULT_BLOCK = 128


def noop_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
    """The mask_mod that allows everything."""
    return _full((), True, dtype=D.bool, device=b.device)


def and_masks(*mask_mods: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """A mask_mod allowing what every one of mask_mods allows."""
    return _combined(mask_mods, True, lambda x, y: x & y)


def or_masks(*mask_mods: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """A mask_mod allowing what any one of mask_mods allows."""
    return _combined(mask_mods, False, lambda x, y: x | y)


def _combined(mask_mods, start, join):
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def combined(b, h, q_idx, kv_idx):
        result = _full((), start, dtype=D.bool, device=b.device)
        for m in mask_mods:
            result = join(result, m(b, h, q_idx, kv_idx))
        return result
    return combined


def _indices(B, H, L, S, device):
    """b, h, q_idx, kv_idx as int64 tensors broadcasting to (B, H, L, S)."""
    return (_arange(B, device=device).view(B, 1, 1, 1), _arange(H, device=device).view(1, H, 1, 1),
            _arange(L, device=device).view(1, 1, L, 1), _arange(S, device=device).view(1, 1, 1, S))


def _n_params(fn):
    try:
        return len([p for p in inspect.signature(fn).parameters.values()
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):
        return 4


def create_mask(mod_fn: Callable[..., Tensor], B: int | None, H: int | None, Q_LEN: int, KV_LEN: int,
                device: device | str | int | None = None) -> Tensor:
    """The dense (B, H, Q_LEN, KV_LEN) tensor a mod gives (B or H None counts as 1): a bool
    mask for a mask_mod (4 arguments), the modified zero scores for a score_mod (5)."""
    B, H = B or 1, H or 1
    b, h, q, kv = _indices(B, H, Q_LEN, KV_LEN, device)
    if _n_params(mod_fn) == 5:
        out = mod_fn(_full((B, H, Q_LEN, KV_LEN), 0.0, device=device), b, h, q, kv)
    else:
        out = mod_fn(b, h, q, kv)
    return out.expand(B, H, Q_LEN, KV_LEN).contiguous()


class BlockMask:
    """Which (query, key) pairs may attend, from a mask_mod: create_block_mask makes it.
    shape (B, H, Q_LEN, KV_LEN); BLOCK_SIZE the (query, key) block of PyTorch's kernel, which
    to_dense() and sparsity() report on: to_dense() is the (B, H, query blocks, key blocks)
    int32 map of the blocks with an allowed pair, sparsity() the percentage of blocks with
    none.  Index it by batch and head (block_mask[b], block_mask[b, h]) for a part."""

    def __init__(self, mask: Tensor, block_size: tuple[int, int], mask_mod: Callable[..., Tensor],
                 seq_lengths: tuple[int, int]) -> None:
        self._mask = mask                           # bool (B, H, Q_LEN, KV_LEN)
        self.BLOCK_SIZE = block_size
        self.mask_mod = mask_mod
        self.seq_lengths = seq_lengths

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._mask.shape[:2]) + tuple(self.seq_lengths)

    def to_dense(self) -> Tensor:
        bq, bk = self.BLOCK_SIZE
        B, H, L, S = self._mask.shape
        nq, nk = -(-L // bq), -(-S // bk)
        padded = _full((B, H, nq * bq, nk * bk), False, dtype=D.bool, device=self._mask.device)
        padded[:, :, :L, :S] = self._mask
        blocks = padded.view(B, H, nq, bq, nk, bk).any(5).any(3)
        return blocks.to(D.int32)

    def sparsity(self) -> float:
        dense = self.to_dense()
        return 100.0 * (1.0 - dense.sum().item() / max(dense.numel(), 1))

    def __getitem__(self, index: Any) -> BlockMask:
        part = self._mask[index]
        while part.dim() < 4:
            part = part.unsqueeze(0)
        return BlockMask(part, self.BLOCK_SIZE, self.mask_mod, self.seq_lengths)

    def to_string(self, grid_size: tuple[int, int] = (20, 20), limit: int = 4) -> str:
        dense = self.to_dense()
        lines = []
        shown = 0
        for b in range(dense.shape[0]):
            for h in range(dense.shape[1]):
                if shown == limit:
                    lines.append("...")
                    return "\n".join(lines)
                lines.append(f"({b}, {h})")
                rows = dense[b, h].tolist()[:grid_size[0]]
                lines += ["".join("██" if v else "  " for v in row[:grid_size[1]]) for row in rows]
                lines.append("")
                shown += 1
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
                f"{self.to_string()}\n)")


def create_block_mask(mask_mod: Callable[..., Tensor], B: int | None, H: int | None, Q_LEN: int, KV_LEN: int,
                      device: device | str | int | None = None,
                      BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_BLOCK, _compile: bool = False,
                      **kwargs) -> BlockMask:
    """The BlockMask of mask_mod(b, h, q_idx, kv_idx) over B batches and H heads (None: one,
    broadcasting over them) of Q_LEN queries and KV_LEN keys."""
    if _n_params(mask_mod) != 4:
        raise RuntimeError("create_block_mask takes a mask_mod of 4 arguments (b, h, q_idx, "
                           "kv_idx); a score_mod cannot make a block mask")
    block = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
    mask = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)
    if mask.dtype is not D.bool:
        raise RuntimeError(f"mask_mod must return a bool tensor, got {mask.dtype}")
    return BlockMask(mask, block, mask_mod, (Q_LEN, KV_LEN))


def flex_attention(query: Tensor, key: Tensor, value: Tensor, score_mod: Callable[..., Tensor] | None = None,
                   block_mask: BlockMask | None = None, scale: float | None = None, enable_gqa: bool = False,
                   return_lse: bool = False, kernel_options: dict[str, Any] | None = None, *,
                   return_aux: AuxRequest | None = None) -> Tensor | tuple[Tensor, Tensor] | tuple[Tensor, _Aux]:
    """softmax(score_mod(query @ key^T * scale) masked by block_mask) @ value, per batch and
    head.  query (B, Hq, L, E), key (B, Hkv, S, E), value (B, Hkv, S, Ev) -> (B, Hq, L, Ev);
    with enable_gqa, Hq a multiple of Hkv (each key/value head serves Hq / Hkv query heads).
    return_lse: also the log-sum-exp of each query's scores, (B, Hq, L).  kernel_options
    choose among PyTorch's compiled kernels and change nothing here."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor) or t.dim() != 4:
            raise ValueError(f"flex_attention: expected {name} to be a 4-d tensor (B, H, L, E), got "
                             f"{type(t).__name__ if not isinstance(t, Tensor) else list(t.shape)}")
    B, Hq, L, E = query.shape
    Bk, Hkv, S, Ek = key.shape
    if value.shape[0] != Bk or value.shape[1] != Hkv or value.shape[2] != S:
        raise ValueError(f"flex_attention: key {list(key.shape)} and value {list(value.shape)} "
                         f"must agree in batch, heads and length")
    if Ek != E:
        raise ValueError(f"flex_attention: query's embedding dim {E} and key's {Ek} differ")
    if B != Bk and Bk != 1 and B != 1:
        raise ValueError(f"flex_attention: batch sizes {B} (query) and {Bk} (key) do not broadcast")
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"flex_attention: query has {Hq} heads and key/value {Hkv}; pass "
                             f"enable_gqa=True for grouped-query attention")
        if Hq % Hkv:
            raise ValueError(f"flex_attention: with enable_gqa the query's {Hq} heads must be a "
                             f"multiple of the key/value's {Hkv}")
        key = key.repeat_interleave(Hq // Hkv, dim=1)
        value = value.repeat_interleave(Hq // Hkv, dim=1)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * scale
    Bo = scores.shape[0]
    if score_mod is not None:
        b, h, q, kv = _indices(Bo, Hq, L, S, query.device)
        scores = score_mod(scores, b, h, q, kv)
    if block_mask is not None:
        if tuple(block_mask.seq_lengths) != (L, S):
            raise ValueError(f"flex_attention: the block mask is for {block_mask.seq_lengths[0]} "
                             f"queries and {block_mask.seq_lengths[1]} keys, the inputs have {L} "
                             f"and {S}")
        scores = scores.masked_fill(~block_mask._mask, float("-inf"))
    lse = scores.logsumexp(-1)
    weights = (scores - lse.unsqueeze(-1)).exp()
    # a row with no allowed key: lse -inf, weights NaN -> 0 (PyTorch's output is 0 there)
    weights = weights.masked_fill(lse.unsqueeze(-1) == float("-inf"), 0.0)
    out = weights.to(value.dtype).matmul(value)
    if return_aux is not None:
        return out, _Aux(lse if getattr(return_aux, "lse", False) else None)
    return (out, lse) if return_lse else out


class AuxRequest:
    """What flex_attention's return_aux asks for besides the output: lse (the log-sum-exp)."""

    def __init__(self, lse=False, max_scores=False):
        self.lse = lse
        self.max_scores = max_scores


class _Aux:
    def __init__(self, lse):
        self.lse = lse
        self.max_scores = None
