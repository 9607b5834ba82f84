"""Variable-length sequence helpers (torch.nn.utils.rnn): padding, and PackedSequence, the
time-major packing of a batch of sequences of decreasing length that the RNN layers consume.

Packing and unpacking are one index_select each over precomputed row indices, so they are
differentiable with no extra code."""
from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING

from ... import _dtype as D
from ..._tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


def _creation():
    from ..._ops import creation
    return creation


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation tensor (None stays None)."""
    if permutation is None:
        return None
    c = _creation()
    out = c.empty_like(permutation)
    out.scatter_(0, permutation, c.arange(permutation.numel(), device=permutation.device))
    return out


class PackedSequence(namedtuple("PackedSequence_",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """A packed batch: data holds the time steps one after the other (at step t, the first
    batch_sizes[t] sequences of the length-sorted batch); sorted_indices[i] is the batch
    position of the i-th longest sequence (None when the batch was already sorted)."""

    def __new__(cls, data: Tensor | tuple[Tensor, Tensor], batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None, unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:           # the legacy form PackedSequence((data, batch_sizes))
            data, batch_sizes = data[0], data[1]
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence "
                             "should never be created manually. They should be instantiated by "
                             "functions like pack_sequence and pack_padded_sequences in "
                             "nn.utils.rnn. https://pytorch.org/docs/stable/nn.html#torch.nn."
                             "utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The same packing with data converted by Tensor.to (indices follow its device)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=D.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=D.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=D.float16)

    def bfloat16(self) -> PackedSequence:
        return self.to(dtype=D.bfloat16)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def _lengths_list(lengths):
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input: Tensor, lengths: Tensor | Iterable[int], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with batch_first) whose sequence b has
    lengths[b] valid steps.  enforce_sorted: lengths must already be decreasing; otherwise the
    batch is sorted here and the permutation kept in the result."""
    c = _creation()
    lens = _lengths_list(lengths)
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={batch})")
    sorted_indices = None
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                               "pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        order = list(range(batch))
    else:
        order = sorted(range(batch), key=lambda b: -lens[b])       # stable, as a sort should be
        sorted_indices = c.tensor(order, dtype=D.int64, device=input.device)
    lens_sorted = [lens[b] for b in order]
    if lens_sorted and lens_sorted[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if lens_sorted and lens_sorted[0] > steps:
        raise RuntimeError(f"pack_padded_sequence(): a length ({lens_sorted[0]}) exceeds the "
                           f"number of time steps of the input ({steps})")
    batch_sizes = _batch_sizes(lens_sorted)
    rows = [t * batch + order[i] for t, n in enumerate(batch_sizes) for i in range(n)]
    flat = input.reshape((steps * batch,) + tuple(input.shape[2:]))
    data = flat.index_select(0, c.tensor(rows, dtype=D.int64, device=input.device))
    return PackedSequence(data, c.tensor(batch_sizes, dtype=D.int64), sorted_indices, None)


def _batch_sizes(lens_sorted):
    """batch_sizes[t] = how many of the (decreasing) lengths exceed t."""
    sizes = []
    n = len(lens_sorted)
    for t in range(lens_sorted[0] if lens_sorted else 0):
        while n and lens_sorted[n - 1] <= t:
            n -= 1
        sizes.append(n)
    return sizes


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths (int64, in the
    original batch order)).  total_length pads the time dim to that length."""
    c = _creation()
    data = sequence.data
    batch_sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    max_len = len(batch_sizes)
    batch = batch_sizes[0] if batch_sizes else 0
    steps = max_len
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
        steps = total_length
    unsorted = (list(range(batch)) if sequence.unsorted_indices is None
                else [int(v) for v in sequence.unsorted_indices.tolist()])
    offsets = [0]
    for n in batch_sizes:
        offsets.append(offsets[-1] + n)
    pad_row = offsets[-1]                        # the row appended after data
    lengths = [sum(1 for n in batch_sizes if n > unsorted[b]) for b in range(batch)]

    def row(t, b):
        i = unsorted[b]
        return offsets[t] + i if t < max_len and i < batch_sizes[t] else pad_row

    if batch_first:
        rows = [row(t, b) for b in range(batch) for t in range(steps)]
        shape = (batch, steps)
    else:
        rows = [row(t, b) for t in range(steps) for b in range(batch)]
        shape = (steps, batch)
    rest = tuple(data.shape[1:])
    pad = c.full((1,) + rest, padding_value, dtype=data.dtype, device=data.device)
    from ..._ops.joining import cat
    padded = cat([data, pad]).index_select(0, c.tensor(rows, dtype=D.int64, device=data.device))
    return padded.view(shape + rest), c.tensor(lengths, dtype=D.int64)


def pad_sequence(sequences: Tensor | Iterable[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shapes (L_i, *) into (max L, B, *) (or (B, max L, *) with
    batch_first), filling the missing steps with padding_value on padding_side."""
    from ..._ops.joining import cat, stack
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences:
        if s.ndim == 0 or tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence(): every sequence must have shape (L, "
                               f"{', '.join(map(str, trailing)) or '*'}) like the first, but got "
                               f"{list(s.shape)}")
    c = _creation()
    max_len = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = max_len - s.shape[0]
        if missing:
            fill = c.full((missing,) + trailing, padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, fill] if padding_side == "right" else [fill, s])
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Iterable[int],
                   batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch back into its sequences (right padding), given their lengths."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences, _lengths_list(lengths))]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences (L_i, *) (decreasing lengths unless enforce_sorted=False)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
