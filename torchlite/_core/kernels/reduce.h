/* Reduction, softmax, scan and median kernels: the tables reduction.pyx calls through.
 *
 * Every reduction runs on one of two canonical layouts (reduction.pyx brings any input to one):
 *   rows  [A, R]     R contiguous: each of the A rows reduces to one value (SIMD lanes
 *                    across the row);
 *   cols  [A, R, B]  B contiguous: R rows of B columns are accumulated into a vector of B
 *                    accumulators (SIMD across the columns), never a strided walk per output.
 * A kernel reduces one piece of fixed size (a row chunk, or a block of rows and columns) to
 * 8-byte partials: double for float32/float64 inputs, int64 for int64 inputs.  The driver
 * combines the partials of the pieces in a fixed order, so the result is the same for any
 * thread count.
 *
 * The float32 sums accumulate in 64 float32 lanes for at most TL_RFLUSH elements (rows) or
 * TL_RCFLUSH rows (cols) and then flush into float64, which keeps 2^25 float32 ones exact
 * (each lane holds at most 64 elements, a row block at most 4096).
 *
 * reduce_body.h is compiled once per ISA level (like ewise.h); the integer kernels, scans
 * and median (reduce_scan.h) only in the baseline copy. */
#ifndef TL_REDUCE_H
#define TL_REDUCE_H
#include <stdlib.h>
#include "types.h"
#include "isa.h"
#include "vmath.h"

#define TL_RL 64          /* float32 lanes of a row reduction */
#define TL_RL64 32        /* float64 / int64 lanes */
#define TL_RFLUSH 4096    /* float32 row elements summed in float32 before a float64 flush */
#define TL_RCB 1024       /* columns per block of a column reduction */
#define TL_RCFLUSH 64     /* float32 rows summed in float32 before a float64 flush */
#define TL_SMCB 256       /* columns per block of a softmax over a non-innermost dim */
#define TL_SMG 16         /* short softmax rows per group (log_softmax: one vector of logs) */

/* dtype slots of the tables */
enum { TL_RS_F32 = 0, TL_RS_F64 = 1, TL_RS_I64 = 2, TL_RS_N = 3 };

/* Reduction kinds: a map applied to each element, then a combine. */
#define TL_RED_KINDS(X) \
    X(SUM) X(NANSUM) X(SUMABS) X(SUMSQ) X(SUMSQDEV) X(SUMPOW) X(SUMEXPDEV) X(COUNTNZ) \
    X(COUNTNOTNAN) X(PROD) X(MAX) X(MIN) X(MAXABS) X(MINABS) X(ANY) X(ALL)
#define TL_RK_ENUM(n) TL_RK_##n,
enum { TL_RED_KINDS(TL_RK_ENUM) TL_RK_N };

/* Reduce pieces of x to 8-byte partials.
 * rows: nrows rows (row i at x + i*rstride bytes) of n contiguous elements -> out[i];
 *       center[i] is row i's center (SUMSQDEV, SUMEXPDEV) and p the exponent (SUMPOW).
 * cols: nrows rows (stride rstride bytes) of n contiguous columns -> out[j], center[j]. */
typedef void (*tl_red_fn)(const char *x, int64_t nrows, int64_t rstride, int64_t n,
                          const double *center, double p, void *out);
/* argmax/argmin of the same two layouts: the best value (8-byte partial) and its index,
 * the first one on ties; NaN counts as the largest (and smallest) value. */
typedef void (*tl_arg_fn)(const char *x, int64_t nrows, int64_t rstride, int64_t n,
                          void *val, int64_t *idx);
/* softmax (logmode 0) or log_softmax (1).  rows: nrows contiguous rows of n elements.
 * cols: nc columns of R rows whose row stride is ld elements, in x and y alike. */
typedef void (*tl_softmax_rows_fn)(const char *x, char *y, int64_t nrows, int64_t n, int logmode);
typedef void (*tl_softmax_cols_fn)(const char *x, char *y, int64_t R, int64_t ld, int64_t nc,
                                   int logmode);
/* their gradients over nrows contiguous rows of n elements, from the result y and the
 * result's gradient g: softmax dx = y (g - sum(g y)), log_softmax dx = g - exp(y) sum(g) */
typedef void (*tl_softmax_back_rows_fn)(const char *y, const char *g, char *dx, int64_t nrows,
                                        int64_t n, int logmode);

static tl_red_fn tl_red_rows[TL_RK_N][TL_RS_N];
static tl_red_fn tl_red_cols[TL_RK_N][TL_RS_N];
static tl_arg_fn tl_arg_rows[2][TL_RS_N];      /* [is_min][slot] */
static tl_arg_fn tl_arg_cols[2][TL_RS_N];
static tl_softmax_rows_fn tl_sm_rows[2];       /* [slot]: float32, float64 */
static tl_softmax_cols_fn tl_sm_cols[2];
static tl_softmax_back_rows_fn tl_smb_rows[2];  /* [slot]: float32, float64 */

/* element maps (v: the element, c: its center, p: the exponent) */
#define TL_M_ID(v, c) (v)
#define TL_M_NANZERO(v, c) ((v) != (v) ? 0 : (v))
#define TL_M_SQ(v, c) ((v) * (v))
#define TL_M_SQDEV(v, c) (((v) - (c)) * ((v) - (c)))
#define TL_M_NZ(v, c) ((v) != 0 ? 1 : 0)
#define TL_M_NOTNAN(v, c) ((v) == (v) ? 1 : 0)
#define TL_M_ABS32(v, c) fabsf(v)
#define TL_M_ABS64(v, c) fabs(v)
#define TL_M_POW32(v, c) powf(fabsf(v), (float)p)
#define TL_M_POW64(v, c) pow(fabs(v), p)
#define TL_M_EXP32(v, c) tl_expf((v) - (c))
#define TL_M_EXP64(v, c) exp((v) - (c))

/* combines; max/min keep the first NaN they meet (NaN propagates) */
#define TL_C_ADD(a, b) ((a) + (b))
#define TL_C_MUL(a, b) ((a) * (b))
#define TL_C_MAX(a, b) (((b) != (b) || (b) > (a)) ? (b) : (a))
#define TL_C_MIN(a, b) (((b) != (b) || (b) < (a)) ? (b) : (a))
/* plain max/min (one instruction; a NaN b is dropped), for lanes checked separately */
#define TL_C_FMAX(a, b) ((b) > (a) ? (b) : (a))
#define TL_C_FMIN(a, b) ((b) < (a) ? (b) : (a))
/* argmax/argmin: does v replace the current best b? */
#define TL_TAKE_MAX(b, v) ((v) > (b) || ((v) != (v) && (b) == (b)))
#define TL_TAKE_MIN(b, v) ((v) < (b) || ((v) != (v) && (b) == (b)))

#define TL_RBODY_FULL 1
#define TL_RSFX(name) name##_base
#include "reduce_body.h"
#undef TL_RSFX
#undef TL_RBODY_FULL

#if TL_X86_MULTIVERSION
#define TL_RBODY_FULL 0
TL_BEGIN_TARGET_V3
#define TL_RSFX(name) name##_v3
#include "reduce_body.h"
#undef TL_RSFX
TL_END_TARGET
TL_BEGIN_TARGET_V4
#define TL_RSFX(name) name##_v4
#include "reduce_body.h"
#undef TL_RSFX
TL_END_TARGET
#undef TL_RBODY_FULL
#endif

#include "reduce_scan.h"

/* Install the kernels of ISA `level` (0, 3 or 4; clamped to what was compiled); returns the
 * level installed.  The baseline copy is installed first: it alone has the integer loops. */
static int tl_reduce_install(int level) {
    memset(tl_red_rows, 0, sizeof(tl_red_rows));
    memset(tl_red_cols, 0, sizeof(tl_red_cols));
    memset(tl_arg_rows, 0, sizeof(tl_arg_rows));
    memset(tl_arg_cols, 0, sizeof(tl_arg_cols));
    tl_reduce_register_base();
#if TL_X86_MULTIVERSION
    if (level >= 4) {
        tl_reduce_register_v4();
        return 4;
    }
    if (level >= 3) {
        tl_reduce_register_v3();
        return 3;
    }
#endif
    (void)level;
    return 0;
}
#endif
