# The random draws the fused program interpreter (fused.pyx) makes inside a kernel, from the
# same Philox stream layout as the eager fills (kernels/random.h), so a fused dropout draws
# the mask eager dropout draws.
from libc.stdint cimport int64_t, uint64_t

# out[0 .. n) = elements first .. first + n - 1 of a Bernoulli(p) request that starts at block
# `base` of the stream `seed` (1.0 / 0.0; float32 for dtype code 8, float64 for 9)
cdef void bernoulli_range(uint64_t seed, uint64_t base, double p, int64_t first, int64_t n,
                          int dtype, char* out) noexcept nogil
