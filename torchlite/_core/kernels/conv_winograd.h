/* The 3x3, stride-1 convolution by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray,
 * "Fast Algorithms for Convolutional Neural Networks", 2015): each 2x2 block of outputs
 * ("tile") of one output channel is A^T [ sum_c (G g_oc G^T) . (B^T d_c B) ] A, with d_c the
 * 4x4 input patch under the tile and g_oc the 3x3 kernel.  In the 4x4 transformed domain a
 * convolution is 16 independent matrix products ("xi" = 0..15, one per transformed
 * position) over the channels:
 *     M_xi[tile, o] = sum_c V_xi[tile, c] U_xi[c, o]
 * 16 multiplies per tile and channel pair instead of 36: 2.25x fewer flops, the rest is the
 * transforms, which are additions (and halvings in G).
 *
 * Layout (what makes the transforms cheap): the transforms vectorise across channels, so
 * they read and write channel-last data.  The work is split into bands of tile rows of one
 * image, sized so that a band's transformed inputs and products stay in L2; per band:
 *   1. the input rows it reads, transposed to (row, column, channel) with the padding as
 *      zeros (xb);
 *   2. the input transform, V_xi[tile, c] (tiles x C, one matrix per xi);
 *   3. the 16 products, with the GEMM's own micro-kernel (tl_gemm_kernel.tile reads A as
 *      rows of V and B as U_xi packed once per call into its panels), into M_xi[tile, o];
 *   4. the output transform (+ bias) into (row, column, channel) order (yb) and
 *   5. its transpose into the (N, O, OH, OW) output.
 * Bands are independent, so threads split them; every output element is computed by the
 * same operations whatever the thread count.  Rounding: float32 results differ from the
 * direct sum by a few ulp of the terms' magnitude (the transforms add before multiplying).
 * The bodies are compiled once per ISA level (conv_winograd_body.h) for the transforms'
 * vector loops, and tl_wino_install picks one, like the GEMM and im2col kernels. */
#ifndef TL_CONV_WINOGRAD_H
#define TL_CONV_WINOGRAD_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "isa.h"
#include "alloc.h"
#include "omp_shim.h"
#include "gemm.h"
#include "conv_im2col.h"

/* Bytes of transformed inputs and products (V and M) one band aims at: within L2. */
#define TL_WINO_BAND_BYTES (512 * 1024)

/* Whether a convolution of geometry g is one Winograd F(2x2, 3x3) computes: 3x3 kernel,
 * stride 1, no dilation, one group (the caller adds its own profitability test). */
static inline int tl_wino_applies(const tl_conv_geom *g) {
    return g->KH == 3 && g->KW == 3 && g->sh == 1 && g->sw == 1 && g->dh == 1 && g->dw == 1
           && g->G == 1 && g->C >= 1 && g->O >= 1 && g->OH >= 1 && g->OW >= 1;
}

/* Bytes of transformed weights (16 C O elements) above which each band would stream them
 * from memory: slower than im2col there (512 -> 512 channels at 7x7 on two threads measured
 * 10.9 against 9.3 ms; 256 -> 256 at 14x14, 4 MiB, 5.8 against 8.9 ms). */
#define TL_WINO_MAX_U_BYTES (4 << 20)

static inline int tl_wino_fits(const tl_conv_geom *g, int itemsize) {
    return 16.0 * (double)g->C * (double)g->O * itemsize <= (double)TL_WINO_MAX_U_BYTES;
}

typedef int (*tl_wino_f32_fn)(const tl_conv_geom *g, const float *x, const float *w,
                              const float *bias, int64_t bstride, float *y, const int64_t *ys,
                              int nthreads);
typedef int (*tl_wino_f64_fn)(const tl_conv_geom *g, const double *x, const double *w,
                              const double *bias, int64_t bstride, double *y, const int64_t *ys,
                              int nthreads);
typedef int (*tl_wino_wgrad_f32_fn)(const tl_conv_geom *g, const float *x, const float *gy,
                                    const int64_t *gys, float *dw, int nthreads);
typedef int (*tl_wino_wgrad_f64_fn)(const tl_conv_geom *g, const double *x, const double *gy,
                                    const int64_t *gys, double *dw, int nthreads);

#define TL_LEVEL_BODY "conv_winograd_body.h"
#include "isa_levels.h"
#undef TL_LEVEL_BODY

/* y = conv2d(x, w) + bias through Winograd; x (N, C, H, W) with strides g->xs, w C-contiguous
 * (O, C, 3, 3), bias (O,) with element stride bstride or NULL, y (N, O, OH, OW) with element
 * strides ys, dense: contiguous or channels_last (NHWC, written a row at a time: faster).
 * Returns 0, or -1 when a scratch buffer could not be allocated (y is then incomplete). */
static tl_wino_f32_fn tl_wino_forward_f32 = tl_wino_forward_f32_base;
static tl_wino_f64_fn tl_wino_forward_f64 = tl_wino_forward_f64_base;
/* dw (O, C, 3, 3), C-contiguous = the weight gradient of that convolution given gy, the
 * output's gradient, with element strides gys (N, O, OH, OW).  Returns 0 or -1 (no memory). */
static tl_wino_wgrad_f32_fn tl_wino_weight_grad_f32 = tl_wino_weight_grad_f32_base;
static tl_wino_wgrad_f64_fn tl_wino_weight_grad_f64 = tl_wino_weight_grad_f64_base;

/* Install the copies of ISA `level` (0, 3 or 4; clamped to what was compiled). */
static int tl_wino_install(int level) {
#if TL_X86_MULTIVERSION
    if (level >= 4) {
        tl_wino_forward_f32 = tl_wino_forward_f32_v4; tl_wino_forward_f64 = tl_wino_forward_f64_v4;
        tl_wino_weight_grad_f32 = tl_wino_weight_grad_f32_v4;
        tl_wino_weight_grad_f64 = tl_wino_weight_grad_f64_v4;
        return 4;
    }
    if (level >= 3) {
        tl_wino_forward_f32 = tl_wino_forward_f32_v3; tl_wino_forward_f64 = tl_wino_forward_f64_v3;
        tl_wino_weight_grad_f32 = tl_wino_weight_grad_f32_v3;
        tl_wino_weight_grad_f64 = tl_wino_weight_grad_f64_v3;
        return 3;
    }
#endif
    (void)level;
    tl_wino_forward_f32 = tl_wino_forward_f32_base; tl_wino_forward_f64 = tl_wino_forward_f64_base;
    tl_wino_weight_grad_f32 = tl_wino_weight_grad_f32_base;
    tl_wino_weight_grad_f64 = tl_wino_weight_grad_f64_base;
    return 0;
}
#endif
