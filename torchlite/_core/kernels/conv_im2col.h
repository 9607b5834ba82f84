/* im2col and col2im of one image (and one group) for the convolution kernels (conv.pyx).
 *
 * im2col:  col[(c*KH + ki)*KW + kj, oh*OW + ow] = x[c, oh*sh - ph + ki*dh, ow*sw - pw + kj*dw]
 *          (zero where that falls in the padding); x is read through its strides, and the
 *          rows of col are ldc elements apart (ldc > L: one image's block of a wider matrix
 *          that holds several images side by side, for one GEMM over them all).
 * col2im:  the adjoint: dx[c, ih, iw] += col[...] over every (ki, kj, oh, ow) reading (ih, iw),
 *          always in the same order; dx is C-contiguous (Cg, H, W).
 *
 * A row of col (fixed c, ki, kj, oh) is a strided run of an input row with zeros at its
 * ends.  Rows are short (OW is often 8 to 32), so with a unit step a row is one masked
 * vector load (AVX2 or AVX-512; the padding lanes read as zero) and one plain store, the
 * window and the valid rows being worked out once per (c, ki, kj).  Masked stores are slow
 * on some CPUs, so a short row is stored whole when the buffer has room after it (`slack`)
 * and the next row overwrites the excess; col2im adds zeros to the lanes it does not own.  The bodies are compiled once per ISA level
 * (conv_im2col_body.h) and tl_conv_install picks one, like the GEMM kernels. */
#ifndef TL_CONV_IM2COL_H
#define TL_CONV_IM2COL_H
#include <stdint.h>
#include <string.h>
#include "isa.h"
#include "gemm.h"           /* the per-level register transposes tl_conv_transpose uses */
#if TL_X86_MULTIVERSION
#include <immintrin.h>
#endif

typedef struct {
    int64_t N, C, H, W;          /* the convolution's input (C counts every group) */
    int64_t O, KH, KW;           /* output channels (every group) and kernel size */
    int64_t OH, OW;              /* the convolution's output size */
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t G, Cg, Og;           /* groups, channels per group in and out */
    int64_t CKK, L;              /* rows (Cg*KH*KW) and columns (OH*OW) of one im2col matrix */
    int64_t xs[4];               /* element strides of the input (N, C, H, W) */
} tl_conv_geom;

/* The output columns ow in [lo, hi) whose input column ow*sw + off lies in [0, W). */
static inline void tl_conv_valid_cols(const tl_conv_geom *g, int64_t off, int64_t *lo, int64_t *hi) {
    int64_t a = off >= 0 ? 0 : (-off + g->sw - 1) / g->sw;
    int64_t b = g->W - 1 - off < 0 ? 0 : (g->W - 1 - off) / g->sw + 1;
    if (b > g->OW) b = g->OW;
    if (a > b) a = b;
    *lo = a;
    *hi = b;
}

/* Small outputs (rows of at most TL_CONV_SMALL_OW elements, the late stages of a CNN on
 * small images) spend more on working out each row's window than on its few elements.  For
 * them the windows are worked out once per call: table[t * L + l] is the offset of the input
 * element that output position l reads through kernel tap t (t = ki * KW + kj), with the
 * strides sH, sW, or -1 where it reads padding.  The same for every channel. */
#define TL_CONV_SMALL_OW 4
#define TL_CONV_SMALL_TABLE 4096
static inline int tl_conv_small(const tl_conv_geom *g) {
    return g->OW <= TL_CONV_SMALL_OW && g->KH * g->KW * g->L <= TL_CONV_SMALL_TABLE;
}

static inline void tl_conv_tap_table(const tl_conv_geom *g, int64_t sH, int64_t sW, int64_t *table) {
    for (int64_t ki = 0; ki < g->KH; ki++)
        for (int64_t kj = 0; kj < g->KW; kj++) {
            int64_t *row = table + (ki * g->KW + kj) * g->L;
            for (int64_t oh = 0; oh < g->OH; oh++) {
                const int64_t ih = oh * g->sh - g->ph + ki * g->dh;
                for (int64_t ow = 0; ow < g->OW; ow++) {
                    const int64_t iw = ow * g->sw - g->pw + kj * g->dw;
                    row[oh * g->OW + ow] = (ih >= 0 && ih < g->H && iw >= 0 && iw < g->W)
                                               ? ih * sH + iw * sW : -1;
                }
            }
        }
}

/* What the GEMM's B-packing callback reads (tl_im2col_pack_*): the geometry and the first
 * image's channel block of this group; the other images follow at g->xs[0].  The callback
 * takes panels of at most TL_CONV_PACK_MAX_NR columns (the callers check the kernel's). */
typedef struct {
    const tl_conv_geom *g;
    const void *x;
} tl_conv_pack_ctx;
#define TL_CONV_PACK_MAX_NR 64
#define TL_CONV_PACK_ROWS 256     /* rows of a block worked out at once */
typedef void (*tl_im2col_pack_fn)(const void *ctx, void *dst, int nr, int64_t r0, int64_t kc,
                                  int64_t j0, int64_t nc);

typedef void (*tl_im2col_f32_fn)(const tl_conv_geom *g, const float *x, float *col, int64_t ldc,
                                 int64_t slack);
typedef void (*tl_im2col_f64_fn)(const tl_conv_geom *g, const double *x, double *col, int64_t ldc,
                                 int64_t slack);
typedef void (*tl_conv_transpose_f32_fn)(float *dst, int64_t ldd, const float *src, int64_t rs,
                                         int64_t cs, int64_t rows, int64_t cols);
typedef void (*tl_conv_transpose_f64_fn)(double *dst, int64_t ldd, const double *src, int64_t rs,
                                         int64_t cs, int64_t rows, int64_t cols);
typedef void (*tl_col2im_f32_fn)(const tl_conv_geom *g, const float *col, int64_t ldc, float *dx);
typedef void (*tl_col2im_f64_fn)(const tl_conv_geom *g, const double *col, int64_t ldc, double *dx);

#define TL_LEVEL_BODY "conv_im2col_body.h"
#include "isa_levels.h"
#undef TL_LEVEL_BODY

static tl_im2col_f32_fn tl_im2col_f32 = tl_im2col_f32_base;
static tl_im2col_f64_fn tl_im2col_f64 = tl_im2col_f64_base;
static tl_col2im_f32_fn tl_col2im_f32 = tl_col2im_f32_base;
static tl_col2im_f64_fn tl_col2im_f64 = tl_col2im_f64_base;
static tl_im2col_pack_fn tl_im2col_pack_f32 = tl_im2col_pack_f32_base;
static tl_im2col_pack_fn tl_im2col_pack_f64 = tl_im2col_pack_f64_base;
static tl_conv_transpose_f32_fn tl_conv_transpose_f32 = tl_conv_transpose_f32_base;
static tl_conv_transpose_f64_fn tl_conv_transpose_f64 = tl_conv_transpose_f64_base;

/* Install the copies of ISA `level` (0, 3 or 4; clamped to what was compiled). */
static int tl_conv_install(int level) {
#if TL_X86_MULTIVERSION
    if (level >= 4) {
        tl_im2col_f32 = tl_im2col_f32_v4; tl_im2col_f64 = tl_im2col_f64_v4;
        tl_col2im_f32 = tl_col2im_f32_v4; tl_col2im_f64 = tl_col2im_f64_v4;
        tl_im2col_pack_f32 = tl_im2col_pack_f32_v4; tl_im2col_pack_f64 = tl_im2col_pack_f64_v4;
        tl_conv_transpose_f32 = tl_conv_transpose_f32_v4; tl_conv_transpose_f64 = tl_conv_transpose_f64_v4;
        return 4;
    }
    if (level >= 3) {
        tl_im2col_f32 = tl_im2col_f32_v3; tl_im2col_f64 = tl_im2col_f64_v3;
        tl_col2im_f32 = tl_col2im_f32_v3; tl_col2im_f64 = tl_col2im_f64_v3;
        tl_im2col_pack_f32 = tl_im2col_pack_f32_v3; tl_im2col_pack_f64 = tl_im2col_pack_f64_v3;
        tl_conv_transpose_f32 = tl_conv_transpose_f32_v3; tl_conv_transpose_f64 = tl_conv_transpose_f64_v3;
        return 3;
    }
#endif
    (void)level;
    tl_im2col_f32 = tl_im2col_f32_base; tl_im2col_f64 = tl_im2col_f64_base;
    tl_col2im_f32 = tl_col2im_f32_base; tl_col2im_f64 = tl_col2im_f64_base;
    tl_im2col_pack_f32 = tl_im2col_pack_f32_base; tl_im2col_pack_f64 = tl_im2col_pack_f64_base;
    tl_conv_transpose_f32 = tl_conv_transpose_f32_base; tl_conv_transpose_f64 = tl_conv_transpose_f64_base;
    return 0;
}
#endif
