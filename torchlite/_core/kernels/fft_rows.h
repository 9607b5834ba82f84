/* Rows in and out of tiles of lanes (fft_lanes.h): an entry at a time through a row
 * description (tl_fft_src / tl_fft_dst, fft_job.h), and FFT_B rows at a time into or out
 * of the lanes of a tile.  The batched forms have three ways, chosen from the layout:
 *   rows of contiguous data (complex, real pairs, or reals): B x B transposes in registers
 *     (fft_transpose.h), whole cache lines in and out;
 *   rows side by side (row b at row 0 + b entries, the transform dim outside them): an
 *     entry's lanes are adjacent in memory, one vector load or store per part;
 *   anything else: entry by entry.
 * Zero-padding past the data and the odd end of real data read in pairs go entry by entry.
 * Included once per precision and ISA level like fft_lanes.h. */

#define FFT_R TL_FFT_R
#define FFT_B TL_FFT_B
#define FFT_E (2 * TL_FFT_B)

/* ---- one entry ---------------------------------------------------------------------- */
TL_FFT_INLINE void TL_FK(tl_fft_get)(const tl_fft_src *S, int64_t j, FFT_R *re, FFT_R *im) {
    const FFT_R *p = (const FFT_R *)S->p;
    FFT_R xr = j < S->len_re ? p[j * S->es] : 0;
    FFT_R xi = (S->has_im && j < S->len_im) ? p[j * S->es + S->ims] : 0;
    if (S->conj) xi = -xi;
    /* past the data the entry is a zero: mul (as long as the data) is not read there */
    if (S->mul != NULL && (j < S->len_re || (S->has_im && j < S->len_im))) {
        const FFT_R *m = (const FFT_R *)S->mul + 2 * j;
        const FFT_R t = xr * m[0] - xi * m[1];
        xi = xr * m[1] + xi * m[0];
        xr = t;
    }
    *re = xr;
    *im = xi;
}

TL_FFT_INLINE void TL_FK(tl_fft_put)(const tl_fft_dst *D, int64_t k, FFT_R re, FFT_R im) {
    FFT_R *p = (FFT_R *)D->p;
    const FFT_R sc = (FFT_R)D->scale;
    if (D->conj1) im = -im;
    if (D->mul != NULL) {
        const FFT_R *m = (const FFT_R *)D->mul + 2 * k;
        const FFT_R t = re * m[0] - im * m[1];
        im = re * m[1] + im * m[0];
        re = t;
    }
    if (D->conj2) im = -im;
    p[k * D->es] = re * sc;
    if (D->has_im) p[k * D->es + D->ims] = im * sc;
}

/* Whether rows 0..B-1 sit side by side: row b at p[0] + b * step. */
static int TL_FK(tl_fft_side_by_side)(const FFT_R *const *p, int nb, int64_t step) {
    int b;
    if (nb < FFT_B) return 0;
    for (b = 1; b < FFT_B; b++)
        if (p[b] != p[0] + b * step) return 0;
    return 1;
}

/* ---- B rows into the lanes of a tile --------------------------------------------------- */
/* Entries [0, count) of rows p[0..nb) (layout S; S->p and S->mul unused) into the lanes of
 * tile t; lanes >= nb get zeros. */
static void TL_FK(tl_fft_gather)(const tl_fft_src *S, const FFT_R *const *p, int nb, int64_t count,
                                 FFT_R *t) {
    static const FFT_R zeros[FFT_B];
    const FFT_R *rows[FFT_B];
    const int64_t nre = count < S->len_re ? count : S->len_re;
    const int64_t nim = !S->has_im ? 0 : count < S->len_im ? count : S->len_im;
    const int64_t whole = S->has_im ? (nre < nim ? nre : nim) : nre;   /* every part present */
    const int interleaved = S->has_im && S->ims == 1;
    int64_t j = 0, k;
    int b;
    if (interleaved && S->es == 2) {                       /* rows of complex numbers */
        for (; j + FFT_B / 2 <= whole; j += FFT_B / 2) {
            for (b = 0; b < FFT_B; b++) rows[b] = b < nb ? p[b] + 2 * j : zeros;
            TL_FK(tl_fft_tr_in)(rows, t + j * FFT_E, FFT_B);
        }
    } else if (!S->has_im && S->es == 1) {                 /* rows of reals */
        for (; j + FFT_B <= whole; j += FFT_B) {
            for (b = 0; b < FFT_B; b++) rows[b] = b < nb ? p[b] + j : zeros;
            TL_FK(tl_fft_tr_in)(rows, t + j * FFT_E, FFT_E);
            for (k = j; k < j + FFT_B; k++)
                for (b = 0; b < FFT_B; b++) t[k * FFT_E + FFT_B + b] = 0;
        }
    } else if (TL_FK(tl_fft_side_by_side)(p, nb, interleaved ? 2 : 1)) {
        const FFT_R *q = p[0];
        const int64_t es = S->es, ims = S->ims;
        for (; j < whole; j++) {
            const FFT_R *e = q + j * es;
            FFT_R *o = t + j * FFT_E;
            if (interleaved)
                for (b = 0; b < FFT_B; b++) {
                    o[b] = e[2 * b];
                    o[FFT_B + b] = e[2 * b + 1];
                }
            else if (S->has_im)
                for (b = 0; b < FFT_B; b++) {
                    o[b] = e[b];
                    o[FFT_B + b] = e[ims + b];
                }
            else
                for (b = 0; b < FFT_B; b++) {
                    o[b] = e[b];
                    o[FFT_B + b] = 0;
                }
        }
    }
    if (j < count)                                         /* the rest, entry by entry */
        for (b = 0; b < FFT_B; b++) {
            if (b < nb) {
                tl_fft_src s = *S;
                s.p = (const char *)p[b];
                s.mul = NULL;
                s.conj = 0;
                for (k = j; k < count; k++)
                    TL_FK(tl_fft_get)(&s, k, t + k * FFT_E + b, t + k * FFT_E + FFT_B + b);
            } else {
                for (k = j; k < count; k++) t[k * FFT_E + b] = t[k * FFT_E + FFT_B + b] = 0;
            }
        }
    if (S->conj)
        for (k = 0; k < count; k++)
            for (b = 0; b < FFT_B; b++) t[k * FFT_E + FFT_B + b] = -t[k * FFT_E + FFT_B + b];
}

/* Real parts times sr, imaginary parts times si, of entries [0, count) of tile t. */
static void TL_FK(tl_fft_scale_tile)(FFT_R *t, int64_t count, FFT_R sr, FFT_R si) {
    int64_t k;
    int b;
    if (sr == 1 && si == 1) return;
    for (k = 0; k < count; k++)
        for (b = 0; b < FFT_B; b++) {
            t[k * FFT_E + b] *= sr;
            t[k * FFT_E + FFT_B + b] *= si;
        }
}

/* ---- the lanes of a tile out to B rows ------------------------------------------------- */
/* Entries [0, count) of tile t's lanes to rows q[0..nb) (layout D; D->p, the conjugations,
 * mul and scale unused: the caller applied them in the tile). */
static void TL_FK(tl_fft_scatter)(const tl_fft_dst *D, FFT_R *const *q, int nb, int64_t count,
                                  const FFT_R *t) {
    FFT_R sink[FFT_B];                       /* where the rows past nb go */
    FFT_R *rows[FFT_B];
    const int interleaved = D->has_im && D->ims == 1;
    const int64_t es = D->es, ims = D->ims;
    int64_t j = 0, k;
    int b;
    if (interleaved && es == 2) {
        for (; j + FFT_B / 2 <= count; j += FFT_B / 2) {
            for (b = 0; b < FFT_B; b++) rows[b] = b < nb ? q[b] + 2 * j : sink;
            TL_FK(tl_fft_tr_out)(t + j * FFT_E, FFT_B, rows);
        }
    } else if (!D->has_im && es == 1) {
        for (; j + FFT_B <= count; j += FFT_B) {
            for (b = 0; b < FFT_B; b++) rows[b] = b < nb ? q[b] + j : sink;
            TL_FK(tl_fft_tr_out)(t + j * FFT_E, FFT_E, rows);
        }
    } else if (TL_FK(tl_fft_side_by_side)((const FFT_R *const *)q, nb, interleaved ? 2 : 1)) {
        FFT_R *o0 = q[0];
        for (; j < count; j++) {
            FFT_R *o = o0 + j * es;
            const FFT_R *e = t + j * FFT_E;
            if (interleaved)
                for (b = 0; b < FFT_B; b++) {
                    o[2 * b] = e[b];
                    o[2 * b + 1] = e[FFT_B + b];
                }
            else if (D->has_im)
                for (b = 0; b < FFT_B; b++) {
                    o[b] = e[b];
                    o[ims + b] = e[FFT_B + b];
                }
            else
                for (b = 0; b < FFT_B; b++) o[b] = e[b];
        }
    }
    for (b = 0; b < nb; b++) {
        FFT_R *o = q[b];
        for (k = j; k < count; k++) {
            o[k * es] = t[k * FFT_E + b];
            if (D->has_im) o[k * es + ims] = t[k * FFT_E + FFT_B + b];
        }
    }
}

#undef FFT_R
#undef FFT_B
#undef FFT_E
