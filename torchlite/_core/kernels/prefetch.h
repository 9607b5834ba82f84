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

/* One request per 64-byte line of [p, p + nbytes): X86 and ARM are the instruction for the
 * two compilers' inline assembly, MSVC the intrinsic call for Microsoft's. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define TL_PREFETCH_FN(name, X86, ARM, MSVC)                                                 \
    static inline void name(const char *p, int64_t nbytes) {                                 \
        for (int64_t b = 0; b < nbytes; b += 64) __asm__ volatile(X86 " %0" : : "m"(*(p + b))); }
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define TL_PREFETCH_FN(name, X86, ARM, MSVC)                                                 \
    static inline void name(const char *p, int64_t nbytes) {                                 \
        for (int64_t b = 0; b < nbytes; b += 64) __asm__ volatile(ARM ", %0" : : "Q"(*(p + b))); }
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#define TL_PREFETCH_FN(name, X86, ARM, MSVC)                                                 \
    static inline void name(const char *p, int64_t nbytes) {                                 \
        for (int64_t b = 0; b < nbytes; b += 64) MSVC(p + b); }
#else
#define TL_PREFETCH_FN(name, X86, ARM, MSVC)                                                 \
    static inline void name(const char *p, int64_t nbytes) { (void)p; (void)nbytes; }
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#define TL_PF_MSVC_READ(a) _mm_prefetch((a), _MM_HINT_T1)
#define TL_PF_MSVC_WRITE(a) _m_prefetchw(a)
#endif

/* tl_prefetch_read: into L2 (and the levels below it), for reading.
 * tl_prefetch_write: for writing, the line fetched owned, so the store that follows does not
 * wait for it (PREFETCHW; a no-op on x86 processors without it). */
TL_PREFETCH_FN(tl_prefetch_read, "prefetcht1", "prfm pldl2keep", TL_PF_MSVC_READ)
TL_PREFETCH_FN(tl_prefetch_write, "prefetchw", "prfm pstl2keep", TL_PF_MSVC_WRITE)
#endif
