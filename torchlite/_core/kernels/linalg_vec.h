/* Vector loops of the decompositions (linalg_decomp.pyx): dot product, axpy and plane
 * rotation of double rows, compiled once per SIMD level (kernels/isa.h) and picked at run
 * time through tl_lv (tl_lv_install).  The dot product sums in TL_LV_LANES fixed lanes
 * combined by a fixed tree, so its order of operations is the same at every level (FMA
 * contraction aside). */
#ifndef TL_LINALG_VEC_H
#define TL_LINALG_VEC_H
#include <stdint.h>
#include "isa.h"

#define TL_LV_LANES 8

#define TL_LV_FUNCS(SFX)                                                                    \
static double tl_lv_dot_##SFX(const double *x, const double *y, int64_t n) {                \
    double acc[TL_LV_LANES];                                                                \
    for (int j = 0; j < TL_LV_LANES; j++) acc[j] = 0.0;                                     \
    int64_t i = 0;                                                                          \
    for (; i + TL_LV_LANES <= n; i += TL_LV_LANES)                                          \
        for (int j = 0; j < TL_LV_LANES; j++) acc[j] += x[i + j] * y[i + j];                \
    for (int j = 0; j < 4; j++) acc[j] += acc[j + 4];                                       \
    acc[0] += acc[2]; acc[1] += acc[3];                                                     \
    double s = acc[0] + acc[1];                                                             \
    for (; i < n; i++) s += x[i] * y[i];                                                    \
    return s;                                                                               \
}                                                                                           \
static void tl_lv_axpy_##SFX(double a, const double *x, double *y, int64_t n) {             \
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];                                       \
}                                                                                           \
/* (x, y) <- (c x - s y, s x + c y) */                                                      \
static void tl_lv_rot_##SFX(double *x, double *y, double c, double s, int64_t n) {          \
    for (int64_t i = 0; i < n; i++) {                                                       \
        const double a = x[i], b = y[i];                                                    \
        x[i] = c * a - s * b;                                                               \
        y[i] = s * a + c * b;                                                               \
    }                                                                                       \
}

TL_LV_FUNCS(base)
#if TL_X86_MULTIVERSION
TL_BEGIN_TARGET_V3
TL_LV_FUNCS(v3)
TL_END_TARGET
TL_BEGIN_TARGET_V4
TL_LV_FUNCS(v4)
TL_END_TARGET
#endif

typedef struct {
    double (*dot)(const double *, const double *, int64_t);
    void (*axpy)(double, const double *, double *, int64_t);
    void (*rot)(double *, double *, double, double, int64_t);
} tl_lv_table;

static tl_lv_table tl_lv = {tl_lv_dot_base, tl_lv_axpy_base, tl_lv_rot_base};

static int tl_lv_install(int level) {
#if TL_X86_MULTIVERSION
    if (level >= 4) {
        tl_lv.dot = tl_lv_dot_v4; tl_lv.axpy = tl_lv_axpy_v4; tl_lv.rot = tl_lv_rot_v4;
        return 4;
    }
    if (level >= 3) {
        tl_lv.dot = tl_lv_dot_v3; tl_lv.axpy = tl_lv_axpy_v3; tl_lv.rot = tl_lv_rot_v3;
        return 3;
    }
#endif
    (void)level;
    tl_lv.dot = tl_lv_dot_base; tl_lv.axpy = tl_lv_axpy_base; tl_lv.rot = tl_lv_rot_base;
    return 0;
}
#endif
