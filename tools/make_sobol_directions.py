"""Write torchlite/quasirandom_directions.txt.xz: the Sobol direction numbers of S. Joe and
F. Y. Kuo ("new-joe-kuo-6.21201", search criterion D(6), dimensions 2 to 21201), the table
PyTorch's and SciPy's Sobol engines use, so that torchlite's unscrambled sequences are theirs.

A development tool, run once (it needs PyTorch; torchlite itself never imports it): it reads
the 30 direction numbers v_j of every dimension from PyTorch's engine and recovers Joe and
Kuo's form of each dimension -- the degree s of its primitive polynomial, the polynomial's
inner coefficients a (a_1 .. a_{s-1}, a_1 the high bit) and the initial numbers m_0 .. m_{s-1}
-- checking that the recurrence reproduces all 30 numbers.  One line per dimension:
"s a m_0 ... m_{s-1}".

    python tools/make_sobol_directions.py
"""
import lzma
import os

import torch

MAXBIT, MAXDIM = 30, 21201
OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "torchlite",
                   "quasirandom_directions.txt.xz")


def degrees(count):
    """The degree of the primitive polynomial of dimensions 2, 3, ...: Joe and Kuo list the
    primitive polynomials by degree, phi(2^k - 1) / k of degree k."""
    def phi(n):
        result, p = n, 2
        while p * p <= n:
            if n % p == 0:
                while n % p == 0:
                    n //= p
                result -= result // p
            p += 1
        return result - result // n if n > 1 else result
    out, k = [], 1
    while len(out) < count:
        out += [k] * (phi(2 ** k - 1) // k)
        k += 1
    return out[:count]


def recurrence(s, a, m):
    """The MAXBIT numbers m_j of Sobol's recurrence from the first s."""
    m = list(m)
    for j in range(s, MAXBIT):
        x = m[j - s] ^ (m[j - s] << s)
        for k in range(1, s):
            if (a >> (s - 1 - k)) & 1:
                x ^= m[j - k] << k
        m.append(x)
    return m


def main():
    state = torch.zeros(MAXDIM, MAXBIT, dtype=torch.long)
    torch._sobol_engine_initialize_state_(state, MAXDIM)
    v = state.tolist()
    assert all(v[0][j] == 1 << (MAXBIT - 1 - j) for j in range(MAXBIT))
    lines = []
    for d, s in zip(range(1, MAXDIM), degrees(MAXDIM - 1)):
        m = [v[d][j] >> (MAXBIT - 1 - j) for j in range(MAXBIT)]
        # a_k from m_s: the term of a_k, m_{s-k} << k, has its lowest set bit at k (m is odd)
        rest, a = m[s] ^ m[0] ^ (m[0] << s), 0
        for k in range(1, s):
            if (rest >> k) & 1:
                rest ^= m[s - k] << k
                a |= 1 << (s - 1 - k)
        assert recurrence(s, a, m[:s]) == m, f"dimension {d + 1}: no (s, a) reproduces PyTorch's numbers"
        lines.append(" ".join(map(str, [s, a] + m[:s])))
    with lzma.open(OUT, "wt", preset=9) as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} dimensions written to {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
