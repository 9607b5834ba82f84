/* Software prefetch of byte ranges, one request per 64-byte line.
 *
 * The requests are inline assembly on x86-64 and AArch64: GCC 12 at -O3 reduces a loop whose
 * body is only __builtin_prefetch to its first prefetch (it counts the builtin as free of side
 * effects; checked in the assembly), so the portable builtin would prefetch one line of a
 * range here.  Elsewhere the functions do nothing.
 * Prefetches never fault, so a range past an array's end is harmless. */
#ifndef TL_PREFETCH_H
#define TL_PREFETCH_H
#include <stdint.h>
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

/* into L2 (and the levels below it), for reading */
static inline void tl_prefetch_read(const char *p, int64_t nbytes) {
    for (int64_t b = 0; b < nbytes; b += 64) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
        __asm__ volatile("prefetcht1 %0" : : "m"(*(const char *)(p + b)));
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
        __asm__ volatile("prfm pldl2keep, %0" : : "Q"(*(const char *)(p + b)));
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
        _mm_prefetch(p + b, _MM_HINT_T1);
#else
        (void)p;
#endif
    }
}

/* for writing: the line is fetched owned, so the store that follows does not wait for it
 * (PREFETCHW; a no-op on x86 processors without it) */
static inline void tl_prefetch_write(const char *p, int64_t nbytes) {
    for (int64_t b = 0; b < nbytes; b += 64) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
        __asm__ volatile("prefetchw %0" : : "m"(*(const char *)(p + b)));
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
        __asm__ volatile("prfm pstl2keep, %0" : : "Q"(*(const char *)(p + b)));
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
        _m_prefetchw(p + b);
#else
        (void)p;
#endif
    }
}
#endif
