"""torchlite.quasirandom: Sobol sequences (PyTorch's torch.quasirandom.SobolEngine).

A Sobol sequence fills [0, 1)^d more evenly than random points: every block of 2^m consecutive
points (from the start) puts one point in each of the dyadic boxes of volume 2^-m that its
(t, m, d)-net structure allows.  Coordinate d of point i is the XOR of the direction numbers
v_{d,j} (30 bits, MAXBIT) picked out by the Gray code of i, times 2^-30; consecutive points
differ by one direction number, so drawing is one XOR per coordinate and point.

The direction numbers are those of S. Joe and F. Y. Kuo ("new-joe-kuo-6.21201", search
criterion D(6), up to dimension 21201), the table PyTorch's and SciPy's engines use, so the
unscrambled points are PyTorch's exactly.  They ship as quasirandom_directions.txt.xz (one line
per dimension from the second: the degree s of its primitive polynomial, the polynomial's inner
coefficients a, the initial numbers m_0 .. m_{s-1}; tools/make_sobol_directions.py made it);
the other numbers follow from Sobol's recurrence.

Scrambling (scramble=True) is Owen's: Matousek's linear matrix scrambling (each dimension's
direction numbers multiplied, as bit vectors, by a random lower-triangular binary matrix with
unit diagonal) and a random digital shift (the first point).  It keeps the net property and
makes the points uniformly distributed.  Its random bits come from torchlite's generator
(seeded with `seed`), so a seed gives the same points on every run of torchlite but not
PyTorch's points, which come from PyTorch's generator."""
from __future__ import annotations

import lzma
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._dtype import dtype
    from ._tensor import Tensor

__all__ = ["SobolEngine"]

_DIRECTIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quasirandom_directions.txt.xz")
_table: list[str] | None = None          # the file's lines, read on first use


def _direction_numbers(dimension, maxbit):
    """(dimension, maxbit) int64 NumPy array: v[d, j] = m_{d,j} << (maxbit - 1 - j)."""
    import numpy as np
    global _table
    if _table is None and dimension > 1:
        with lzma.open(_DIRECTIONS, "rt") as f:
            _table = f.read().split("\n")
    m = np.zeros((dimension, maxbit), np.int64)
    m[0] = 1                                       # the first coordinate: van der Corput
    for d in range(1, dimension):
        s, a, *first = map(int, _table[d - 1].split())
        row = first + [0] * (maxbit - s)
        for j in range(s, maxbit):                 # Sobol's recurrence
            x = row[j - s] ^ (row[j - s] << s)
            for k in range(1, s):
                if (a >> (s - 1 - k)) & 1:
                    x ^= row[j - k] << k
            row[j] = x
        m[d] = row
    return m << (maxbit - 1 - np.arange(maxbit))


def _gray_columns(start, n):
    """For steps start .. start+n-1: the (0-based) position of each step's rightmost zero bit,
    the direction number its Gray code step flips."""
    import numpy as np
    i = np.arange(start, start + n, dtype=np.int64)
    low = (i + 1) & ~i                             # the rightmost zero bit, as a power of two
    return np.frexp(low.astype(np.float64))[1] - 1


class SobolEngine:
    """An engine for (scrambled) Sobol sequences in [0, 1)^dimension, PyTorch's API.

    >>> engine = torchlite.quasirandom.SobolEngine(dimension=3)
    >>> engine.draw(4)        # (0, 0, 0), (0.5, 0.5, 0.5), (0.75, 0.25, 0.25), (0.25, 0.75, 0.75)

    dimension: 1 to MAXDIM (21201).  scramble: Owen's scrambling (see the module docstring).
    seed: the scrambling's seed (a random one when None).  State: `sobolstate` (the direction
    numbers, int64 (dimension, MAXBIT)), `shift`, `quasi` (the last point as integers) and
    `num_generated`."""

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        import numpy as np

        from ._ops.creation import tensor
        if not isinstance(dimension, int) or isinstance(dimension, bool) or \
                not 1 <= dimension <= self.MAXDIM:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        self.seed, self.scramble, self.dimension = seed, scramble, dimension
        v = _direction_numbers(dimension, self.MAXBIT)
        shift = np.zeros(dimension, np.int64)
        if scramble:
            v, shift = self._scrambled(v)
        self.sobolstate = tensor(v)
        self.shift = tensor(shift)
        self.quasi = self.shift.clone()
        self._first_point = (self.quasi / 2 ** self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    def _scrambled(self, v):
        """(L v, shift): each dimension's direction numbers as bit vectors (bit MAXBIT-1, the
        first binary digit, first) times a random lower-triangular matrix with unit diagonal,
        and a random MAXBIT-bit digital shift."""
        import numpy as np

        from ._ops.random import Generator, randint
        g = Generator()
        if self.seed is not None:
            g.manual_seed(self.seed)
        else:
            g.seed()
        d, b = self.dimension, self.MAXBIT
        shift_bits = randint(0, 2, (d, b), generator=g).numpy()
        ltm = np.tril(randint(0, 2, (d, b, b), generator=g).numpy().astype(np.uint8))
        ltm[:, np.arange(b), np.arange(b)] = 1
        weights = np.int64(1) << (b - 1 - np.arange(b))             # digit r has weight 2^(b-1-r)
        digits = ((v[:, :, None] >> (b - 1 - np.arange(b))) & 1).astype(np.uint8)   # (d, j, c)
        mixed = np.einsum("drc,djc->djr", ltm, digits, dtype=np.int64) & 1
        shift = (shift_bits.astype(np.int64) << np.arange(b)).sum(1)
        return (mixed * weights).sum(2), shift

    def _advance(self, start, n):
        """The n points after the current one (Gray code steps start .. start+n-1) as an int64
        (n, dimension) array; the state moves to the last."""
        import numpy as np
        if n <= 0:
            return np.zeros((0, self.dimension), np.int64)
        cols = self.sobolstate.numpy().T[_gray_columns(start, n)]     # (n, dimension)
        pts = np.bitwise_xor.accumulate(cols, axis=0) ^ self.quasi.numpy()
        self.quasi.copy_(self.quasi.new_tensor(pts[-1]))
        return pts

    def draw(self, n: int = 1, out: Tensor | None = None, dtype: dtype | None = None) -> Tensor:
        """The next n points, (n, dimension), in dtype (the default dtype when None).  The
        first draw starts at the sequence's first point (0 unscrambled, the shift scrambled)."""
        import numpy as np

        from ._dtype import get_default_dtype
        from ._ops.creation import from_numpy
        dtype = get_default_dtype() if dtype is None else dtype
        n = self._count(n, "draw")
        if self.num_generated == 0:
            pts = self._advance(0, n - 1)
            if n > 0:
                pts = np.concatenate([self.shift.numpy()[None, :], pts])
        else:
            pts = self._advance(self.num_generated - 1, n)
        self.num_generated += n
        result = from_numpy(pts.astype(np.float64) * 2.0 ** -self.MAXBIT).to(dtype)
        if out is not None:
            out.resize_(result.shape).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: Tensor | None = None, dtype: dtype | None = None) -> Tensor:
        """The next 2**m points; the total drawn must stay a power of two (the balance
        properties hold for such prefixes only), else ValueError."""
        n = 2 ** m
        total_n = self.num_generated + n
        if total_n & (total_n - 1) != 0:
            raise ValueError("The balance properties of Sobol' points require n to be a power of 2. "
                             f"{self.num_generated} points have been previously generated, then: "
                             f"n={self.num_generated}+2**{m}={total_n}. If you still want to do this, "
                             "please use 'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> SobolEngine:
        """Back to the state before the first draw."""
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skip n points, as drawing them would (in time independent of n: point k is the
        shift XOR the direction numbers of the set bits of k's Gray code k ^ (k >> 1))."""
        import numpy as np
        n = self._count(n, "fast_forward")
        if n:
            k = self.num_generated + n - 1                  # the index of the last point skipped
            gray = k ^ (k >> 1)
            bits = [j for j in range(self.MAXBIT) if (gray >> j) & 1]
            point = self.shift.numpy().copy()
            if bits:
                point ^= np.bitwise_xor.reduce(self.sobolstate.numpy()[:, bits], axis=1)
            self.quasi.copy_(self.quasi.new_tensor(point))
        self.num_generated += n
        return self

    def _count(self, n, op):
        """n as a count of points: non-negative, and within the 2**MAXBIT points the 30-bit
        direction numbers define."""
        n = int(n)
        if n < 0:
            raise ValueError(f"SobolEngine.{op}: n must be non-negative, got {n}")
        if self.num_generated + n > 2 ** self.MAXBIT:
            raise ValueError(f"SobolEngine.{op}: a Sobol sequence of {self.MAXBIT}-bit direction numbers "
                             f"has 2**{self.MAXBIT} points; {self.num_generated} drawn, {n} more asked")
        return n

    def __repr__(self) -> str:
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(parts)})"
