/* Aligned host allocation.  Blocks of 2 MiB and more are 2 MiB aligned and advised as huge
 * pages (Linux), which cuts the page faults a fresh large tensor would otherwise take. */
#ifndef TL_ALLOC_H
#define TL_ALLOC_H
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <malloc.h>
static void *tl_aligned_alloc(size_t align, size_t n) { return _aligned_malloc(n ? n : align, align); }
static void tl_aligned_free(void *p) { _aligned_free(p); }
static void tl_advise_huge(void *p, size_t n) { (void)p; (void)n; }
#else
#include <sys/mman.h>
static void *tl_aligned_alloc(size_t align, size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, align, n ? n : align) != 0) return NULL;
    return p;
}
static void tl_aligned_free(void *p) { free(p); }
static void tl_advise_huge(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
    madvise(p, n, MADV_HUGEPAGE);
#else
    (void)p; (void)n;
#endif
}
#endif
#endif
