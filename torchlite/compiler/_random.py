"""Dropout inside fused kernels.  Eager dropout draws its mask with bernoulli_ from the default
generator (noise = mask / (1 - p), out = input * noise).  A compiled graph splits it into

    seed, base = philox_reserve(numel)               # the generator's blocks for the mask
    mask = bernoulli_at(seed, base, 1 - p, shape, dtype)
    out = input * (mask / (1 - p))

philox_reserve stays at dropout's place, so the generator advances exactly as in eager mode;
the rest are elementwise nodes, and the mask a random instruction of the fused program
(torchlite/_core/fused.pyx) that draws element i of the request at (seed, base) -- the very
words eager bernoulli_ turns into element i (kernels/random.h's layout).  So a compiled model
draws eager's masks, the dropout's multiply fuses with its neighbours, and the backward
program draws the mask again instead of saving it.  On CUDA the generated kernel draws the
same words (torchlite/cuda/_fused.py), from the device's generator, whose stream layout is
the CPU's."""
from .._core import random as _R
from .._ops.creation import empty as _empty, tensor as _tensor

__all__ = ["philox_reserve", "bernoulli_at", "BLOCKS_PER_GROUP", "GROUP_ELEMENTS"]

GROUP_ELEMENTS = 64         # elements of a one-word request per group (kernels/random.h)
BLOCKS_PER_GROUP = 16


def _as_int64(v):
    """A uint64 as the int64 with its bits (0-d int64 tensors carry seeds and offsets)."""
    return v - (1 << 64) if v >= (1 << 63) else v


def philox_reserve(numel, device="cpu"):
    """(seed, base) as 0-d int64 tensors on `device`: the stream of the device's default
    generator (a CUDA device's follows the CPU's layout) and the first of the blocks a
    Bernoulli request of numel elements takes, which the generator skips."""
    from .._ops.random import _gen
    blocks = (numel + GROUP_ELEMENTS - 1) // GROUP_ELEMENTS * BLOCKS_PER_GROUP
    seed, base = _gen(None, "dropout", device).reserve_blocks(blocks)
    return (_tensor(_as_int64(seed), device=device), _tensor(_as_int64(base), device=device))


def bernoulli_at(seed, base, p, shape, dtype):
    """A new tensor of `shape` and `dtype` (float32/float64) on seed's device: 1 with
    probability p, else 0, drawn from the request at (seed, base) -- what bernoulli_(p) draws
    with the generator there (the eager form of the fused random instruction)."""
    out = _empty(shape, dtype=dtype)
    _R.fill_bernoulli_at(out._data, int(seed.item()), int(base.item()), p)
    return out if seed.device.type == "cpu" else out.to(seed.device)
