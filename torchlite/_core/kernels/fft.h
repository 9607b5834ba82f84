/* torchlite's FFT: plans (fft_plan.h, fft_planner.h), transforms on tiles of lanes
 * (fft_lanes.h), rows in and out of tiles (fft_transpose.h, fft_rows.h), batches of rows
 * (fft_tiles.h) and long rows in four-step stages (fft_fourstep.h).  fft.pyx checks the
 * arguments, keeps the plan cache and runs the tiles or stages over OpenMP threads through
 * the functions at the end of this file.
 *
 * Each precision's kernels are compiled once per ISA level (kernels/isa.h) and the best one
 * the CPU has is installed at import (tl_fft_install).  Plans hold data only, so a plan made
 * under one level runs under any other. */
#ifndef TL_FFT_H
#define TL_FFT_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "isa.h"
#include "fft_roots.h"
#include "fft_job.h"
#if TL_X86_MULTIVERSION
#include <immintrin.h>
#endif

typedef void (*tl_fft_tile_fn)(const tl_fft_job *J, int64_t tile, void *scratch);
typedef void (*tl_fft_stage_fn)(const tl_fft_job *J, int64_t row, int stage, int64_t blk,
                                void *tscr, void *shared);

/* ---- float32 ---------------------------------------------------------------------------- */
#define TL_FFT_R float
#define TL_FFT_B 16
#define TL_FP(name) name##_f32
#include "fft_plan.h"
#define TL_FK(name) name##_f32_base
#define TL_FFT_ISA 0
#include "fft_lanes.h"
#include "fft_transpose.h"
#include "fft_rows.h"
#include "fft_tiles.h"
#include "fft_fourstep.h"
#undef TL_FFT_ISA
#undef TL_FK
#if TL_X86_MULTIVERSION
TL_BEGIN_TARGET_V3
#define TL_FK(name) name##_f32_v3
#define TL_FFT_ISA 3
#include "fft_lanes.h"
#include "fft_transpose.h"
#include "fft_rows.h"
#include "fft_tiles.h"
#include "fft_fourstep.h"
#undef TL_FFT_ISA
#undef TL_FK
TL_END_TARGET
TL_BEGIN_TARGET_V4
#define TL_FK(name) name##_f32_v4
#define TL_FFT_ISA 4
#include "fft_lanes.h"
#include "fft_transpose.h"
#include "fft_rows.h"
#include "fft_tiles.h"
#include "fft_fourstep.h"
#undef TL_FFT_ISA
#undef TL_FK
TL_END_TARGET
#endif
static tl_fft_tile_fn tl_fft_tile_impl_f32 = tl_fft_tile_f32_base;
static tl_fft_stage_fn tl_fft_stage_impl_f32 = tl_fft_stage_f32_base;
#include "fft_planner.h"
#undef TL_FP
#undef TL_FFT_B
#undef TL_FFT_R

/* ---- float64 ---------------------------------------------------------------------------- */
#define TL_FFT_R double
#define TL_FFT_B 8
#define TL_FP(name) name##_f64
#include "fft_plan.h"
#define TL_FK(name) name##_f64_base
#define TL_FFT_ISA 0
#include "fft_lanes.h"
#include "fft_transpose.h"
#include "fft_rows.h"
#include "fft_tiles.h"
#include "fft_fourstep.h"
#undef TL_FFT_ISA
#undef TL_FK
#if TL_X86_MULTIVERSION
TL_BEGIN_TARGET_V3
#define TL_FK(name) name##_f64_v3
#define TL_FFT_ISA 3
#include "fft_lanes.h"
#include "fft_transpose.h"
#include "fft_rows.h"
#include "fft_tiles.h"
#include "fft_fourstep.h"
#undef TL_FFT_ISA
#undef TL_FK
TL_END_TARGET
TL_BEGIN_TARGET_V4
#define TL_FK(name) name##_f64_v4
#define TL_FFT_ISA 4
#include "fft_lanes.h"
#include "fft_transpose.h"
#include "fft_rows.h"
#include "fft_tiles.h"
#include "fft_fourstep.h"
#undef TL_FFT_ISA
#undef TL_FK
TL_END_TARGET
#endif
static tl_fft_tile_fn tl_fft_tile_impl_f64 = tl_fft_tile_f64_base;
static tl_fft_stage_fn tl_fft_stage_impl_f64 = tl_fft_stage_f64_base;
#include "fft_planner.h"
#undef TL_FP
#undef TL_FFT_B
#undef TL_FFT_R

/* Install the kernels of ISA `level` (0, 3 or 4; clamped to what was compiled); returns the
 * level installed. */
static int tl_fft_install(int level) {
#if TL_X86_MULTIVERSION
    if (level >= 4) {
        tl_fft_tile_impl_f32 = tl_fft_tile_f32_v4;
        tl_fft_stage_impl_f32 = tl_fft_stage_f32_v4;
        tl_fft_tile_impl_f64 = tl_fft_tile_f64_v4;
        tl_fft_stage_impl_f64 = tl_fft_stage_f64_v4;
        return 4;
    }
    if (level >= 3) {
        tl_fft_tile_impl_f32 = tl_fft_tile_f32_v3;
        tl_fft_stage_impl_f32 = tl_fft_stage_f32_v3;
        tl_fft_tile_impl_f64 = tl_fft_tile_f64_v3;
        tl_fft_stage_impl_f64 = tl_fft_stage_f64_v3;
        return 3;
    }
#endif
    (void)level;
    tl_fft_tile_impl_f32 = tl_fft_tile_f32_base;
    tl_fft_stage_impl_f32 = tl_fft_stage_f32_base;
    tl_fft_tile_impl_f64 = tl_fft_tile_f64_base;
    tl_fft_stage_impl_f64 = tl_fft_stage_f64_base;
    return 0;
}

/* ---- what fft.pyx calls (precision-generic) --------------------------------------------- */
/* The plan of length n in precision prec (0 float32, 1 float64), or NULL when out of memory. */
static void *tl_fft_plan_create(int64_t n, int prec) {
    return prec ? (void *)tl_fft_plan_new_f64(n, 1, 0) : (void *)tl_fft_plan_new_f32(n, 1, 0);
}

static void tl_fft_plan_free(void *plan, int prec) {
    if (prec)
        tl_fft_plan_destroy_f64((tl_fft_plan_f64 *)plan);
    else
        tl_fft_plan_destroy_f32((tl_fft_plan_f32 *)plan);
}

static const tl_fft_plan_info *tl_fft_plan_info_of(const void *plan) {
    return (const tl_fft_plan_info *)plan;
}

/* A Bluestein plan's sub-plan (of length bm), seen the same way. */
static const tl_fft_plan_info *tl_fft_sub_info(const tl_fft_plan_info *info) {
    return (const tl_fft_plan_info *)info->sub;
}

/* Whether a job on this plan with `rows` rows runs the four-step stages (one row at a time)
 * rather than tiles of rows: when the plan cannot run on tiles, or when the rows are too few
 * to fill half the lanes of one tile.  A function of the shapes only, never of the number
 * of threads, so results do not depend on it. */
static int tl_fft_use_big(const void *plan, int prec, int64_t rows) {
    const tl_fft_plan_info *c = (const tl_fft_plan_info *)plan;
    const tl_fft_plan_info *f = c->bm ? (const tl_fft_plan_info *)c->sub : c;
    if (f->n1 == 0) return 0;
    return !f->stockham || 2 * rows < tl_fft_lanes_of(prec);
}

static inline void tl_fft_run_tile(const tl_fft_job *J, int64_t tile, void *scratch) {
    if (J->prec)
        tl_fft_tile_impl_f64(J, tile, scratch);
    else
        tl_fft_tile_impl_f32(J, tile, scratch);
}

static inline void tl_fft_run_stage(const tl_fft_job *J, int64_t row, int stage, int64_t blk,
                                    void *tscr, void *shared) {
    if (J->prec)
        tl_fft_stage_impl_f64(J, row, stage, blk, tscr, shared);
    else
        tl_fft_stage_impl_f32(J, row, stage, blk, tscr, shared);
}

/* Every stage of one row, in order, on this thread. */
static inline void tl_fft_run_row(const tl_fft_job *J, int64_t row, void *tscr, void *shared) {
    int s;
    int64_t b;
    for (s = 0; s < tl_fft_big_nstages(J); s++)
        for (b = 0; b < tl_fft_big_blocks(J, s); b++) tl_fft_run_stage(J, row, s, b, tscr, shared);
}
#endif
