/* What one FFT call asks of the kernels, whatever the precision: the job (which rows, where
 * they are, which transform), and the descriptions of one row's source and destination that
 * the transform kernels read and write through.  fft.pyx fills a job after checking every
 * argument; the kernels trust it.
 *
 * Rows: the input and the output are seen as a batch of rows along the transformed dim; the
 * batch dims are every other dim (and, for complex data, not the trailing (real, imag) dim).
 * All strides here count reals (elements of the dtype), and may be negative or zero. */
#ifndef TL_FFT_JOB_H
#define TL_FFT_JOB_H
#include <stdint.h>

#if defined(_MSC_VER)
#define TL_FFT_RESTRICT __restrict
#define TL_FFT_INLINE static __forceinline
#else
#define TL_FFT_RESTRICT __restrict__
#define TL_FFT_INLINE static inline __attribute__((always_inline))
#endif

enum { TL_FFT_C2C = 0, TL_FFT_R2C = 1, TL_FFT_C2R = 2 };

#define TL_FFT_MAX_N ((int64_t)1 << 40)   /* longer transforms are refused before planning */
#define TL_FFT_LANES_MAX 8192               /* longest transform run on a tile of lanes */
#define TL_FFT_FOURSTEP_MIN 256            /* shortest transform that gets a four-step split */
#define TL_FFT_MAX_GENERIC 101             /* largest prime factor done by a direct butterfly */
#define TL_FFT_MAX_PASSES 48               /* n <= 2^40: at most 40 passes */
#define TL_FFT_JOB_DIMS 16
#define TL_FFT_CHUNK 2048                  /* entries per block of the split/merge stages */

/* Facts about a plan that do not depend on its precision; the first member of each plan. */
typedef struct {
    int64_t n;          /* transform length */
    int64_t bytes;      /* memory the plan holds, sub-plans included */
    int stockham;       /* 1: Stockham passes are set up (it can run on a tile of lanes) */
    int64_t n1, n2;     /* four-step split n = n1 * n2; 0 when there is none */
    int64_t bm;         /* Bluestein's convolution length; 0 for a direct plan */
    const void *sub;    /* Bluestein: the info of the sub-plan of length bm */
} tl_fft_plan_info;

typedef struct {
    int op;             /* TL_FFT_C2C, TL_FFT_R2C, TL_FFT_C2R */
    int inverse;        /* c2c: exp(+2 pi i jk / n) */
    int prec;           /* 0 float32, 1 float64 */
    int half;           /* real transform of even n, through the complex plan of n / 2 */
    int big;            /* rows go one at a time through the four-step stages */
    int nbd;            /* batch dims */
    int64_t n;          /* transform length */
    int64_t len_in;     /* entries read along dim (the rest, up to n, are zeros) */
    int64_t len_out;    /* entries written along dim */
    int64_t rows;       /* product of the batch dims */
    double scale;
    const void *plan;   /* the complex plan: of n, or of n / 2 when half */
    int64_t bshape[TL_FFT_JOB_DIMS], bsin[TL_FFT_JOB_DIMS], bsout[TL_FFT_JOB_DIMS];
    int64_t sin, sout;  /* strides along dim */
    const char *in;
    char *out;
} tl_fft_job;

/* Where row r (numbered over the batch dims, last fastest) starts, in reals. */
static inline void tl_fft_row_offsets(const tl_fft_job *j, int64_t r, int64_t *ioff, int64_t *ooff) {
    int64_t i = 0, o = 0, c;
    int d;
    for (d = j->nbd - 1; d >= 0; d--) {
        c = r % j->bshape[d];
        r /= j->bshape[d];
        i += c * j->bsin[d];
        o += c * j->bsout[d];
    }
    *ioff = i;
    *ooff = o;
}

/* A row read as complex entries: entry j's real part at p[j*es], its imaginary part at
 * p[j*es + ims] (none when !has_im: zero); real parts exist for j < len_re, imaginary parts
 * for j < len_im, zeros beyond (zero-padding, and the odd end of real data read in pairs).
 * Each entry is conjugated when conj, then multiplied by mul[j] (complex, interleaved). */
typedef struct {
    const char *p;
    int64_t es, ims, len_re, len_im;
    int has_im, conj;
    const void *mul;
} tl_fft_src;

/* A row written as complex entries, for k < count: v -> conj if conj1, times mul[k], conj if
 * conj2, times scale; the real part to p[k*es], the imaginary part to p[k*es + ims] (dropped
 * when !has_im). */
typedef struct {
    char *p;
    int64_t es, ims, count;
    int has_im, conj1, conj2;
    const void *mul;
    double scale;
} tl_fft_dst;

/* The stages of one row's four-step run (fft_fourstep.h): an optional split stage, the core
 * (2 steps, or 4 for Bluestein: forward, times kernel, forward again), an optional merge. */
enum { TL_FFT_ST_PRE, TL_FFT_ST_HERM, TL_FFT_ST_S1, TL_FFT_ST_S2, TL_FFT_ST_POST };

/* The facts of the job's (complex) plan. */
static inline const tl_fft_plan_info *tl_fft_job_plan(const tl_fft_job *j) {
    return (const tl_fft_plan_info *)j->plan;
}

/* The four-step plan's facts: the Bluestein sub-plan's, or the plan's own. */
static inline const tl_fft_plan_info *tl_fft_job_fourstep(const tl_fft_job *j) {
    const tl_fft_plan_info *c = tl_fft_job_plan(j);
    return c->bm ? (const tl_fft_plan_info *)c->sub : c;
}

static inline int tl_fft_lanes_of(int prec) { return prec ? 8 : 16; }

static inline int tl_fft_big_nstages(const tl_fft_job *j) {
    return (j->op == TL_FFT_C2R) + (tl_fft_job_plan(j)->bm ? 4 : 2) +
           (j->op == TL_FFT_R2C && j->half);
}

/* Stage s's kind; *core_step gets the core step (0..3) of S1/S2 stages. */
static inline int tl_fft_big_stage_kind(const tl_fft_job *j, int s, int *core_step) {
    const int ncore = tl_fft_job_plan(j)->bm ? 4 : 2;
    *core_step = -1;
    if (j->op == TL_FFT_C2R) {
        if (s == 0) return j->half ? TL_FFT_ST_PRE : TL_FFT_ST_HERM;
        s--;
    }
    if (s < ncore) {
        *core_step = s;
        return s % 2 == 0 ? TL_FFT_ST_S1 : TL_FFT_ST_S2;
    }
    return TL_FFT_ST_POST;
}

static inline int64_t tl_fft_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Independent blocks of stage s (each may run on its own thread). */
static inline int64_t tl_fft_big_blocks(const tl_fft_job *j, int s) {
    const tl_fft_plan_info *f = tl_fft_job_fourstep(j), *c = tl_fft_job_plan(j);
    const int lanes = tl_fft_lanes_of(j->prec);
    int step;
    switch (tl_fft_big_stage_kind(j, s, &step)) {
    case TL_FFT_ST_S1: return tl_fft_cdiv(f->n2, lanes);
    case TL_FFT_ST_S2: return tl_fft_cdiv(f->n1, lanes);
    case TL_FFT_ST_PRE: return tl_fft_cdiv(c->n, TL_FFT_CHUNK);
    case TL_FFT_ST_HERM: return tl_fft_cdiv(c->n, TL_FFT_CHUNK);
    default: return tl_fft_cdiv(c->n + 1, TL_FFT_CHUNK);
    }
}

/* Scratch (in reals) of one run: per thread, and shared by the threads working on one row
 * of the four-step path (laid out as Y, then A for Bluestein, then Z for the real
 * transforms' split/merge). */
static inline void tl_fft_scratch_reals(const tl_fft_job *j, int64_t *per_thread, int64_t *shared,
                                        int64_t *aoff, int64_t *zoff) {
    const tl_fft_plan_info *c = tl_fft_job_plan(j), *f = tl_fft_job_fourstep(j);
    const int64_t lanes = tl_fft_lanes_of(j->prec), e = 2 * lanes;
    if (!j->big) {
        *per_thread = 2 * ((c->bm ? c->bm : c->n) + 1) * e;   /* two tiles, one spare entry */
        *shared = *aoff = *zoff = 0;
        return;
    }
    *per_thread = (2 * f->n1 > f->n2 ? 2 * f->n1 : f->n2) * e;
    *aoff = tl_fft_cdiv(f->n1, lanes) * f->n2 * e;                 /* Y */
    *zoff = *aoff + (c->bm ? 2 * c->bm : 0);                       /* A */
    *shared = *zoff + ((j->op == TL_FFT_C2R || j->half) ? 2 * c->n : 0);   /* Z */
}

/* The input row as it is: complex entries (c2c, c2r). */
static inline tl_fft_src tl_fft_input_src(const tl_fft_job *j, int64_t ioff, int isz) {
    tl_fft_src s;
    s.p = j->in + ioff * isz;
    s.es = j->sin;
    s.ims = 1;
    s.has_im = 1;
    s.conj = 0;
    s.mul = 0;
    s.len_re = s.len_im = j->len_in;
    return s;
}

/* The row's data as the core transform's first source: the input row (c2c, r2c), or the
 * split stage's output Z (c2r). */
static inline tl_fft_src tl_fft_first_src(const tl_fft_job *j, int64_t ioff, int isz, const char *z) {
    tl_fft_src s;
    s.p = j->in + ioff * isz;
    s.mul = 0;
    s.conj = 0;
    s.has_im = 1;
    s.ims = 1;
    s.es = j->sin;
    s.len_re = s.len_im = j->len_in;
    if (j->op == TL_FFT_C2C) {
        s.conj = j->inverse;
    } else if (j->op == TL_FFT_R2C && j->half) {       /* reals in pairs */
        s.es = 2 * j->sin;
        s.ims = j->sin;
        s.len_re = (j->len_in + 1) / 2;
        s.len_im = j->len_in / 2;
    } else if (j->op == TL_FFT_R2C) {
        s.has_im = 0;
    } else {
        s.p = z;
        s.es = 2;
        s.len_re = s.len_im = tl_fft_job_plan(j)->n;
    }
    return s;
}

/* The output row as complex entries, times the job's scale (c2c, r2c). */
static inline tl_fft_dst tl_fft_output_dst(const tl_fft_job *j, int64_t ooff, int isz) {
    tl_fft_dst d;
    d.p = j->out + ooff * isz;
    d.es = j->sout;
    d.ims = 1;
    d.has_im = 1;
    d.count = j->len_out;
    d.conj1 = 0;
    d.conj2 = 0;
    d.mul = 0;
    d.scale = j->scale;
    return d;
}

/* The row's output as the core transform's last destination: the output row, or Z for the
 * merge stage of an even r2c. */
static inline tl_fft_dst tl_fft_final_dst(const tl_fft_job *j, int64_t ooff, int isz, char *z) {
    tl_fft_dst d = tl_fft_output_dst(j, ooff, isz);
    if (j->op == TL_FFT_C2C) {
        d.conj2 = j->inverse;
    } else if (j->op == TL_FFT_R2C && j->half) {
        d.p = z;
        d.es = 2;
        d.count = tl_fft_job_plan(j)->n;
        d.scale = 1.0;
    } else if (j->op == TL_FFT_C2R && j->half) {     /* reals in pairs, conjugated back */
        d.es = 2 * j->sout;
        d.ims = j->sout;
        d.count = tl_fft_job_plan(j)->n;
        d.conj2 = 1;
    } else if (j->op == TL_FFT_C2R) {
        d.has_im = 0;
        d.count = j->n;
    }
    return d;
}
#endif
