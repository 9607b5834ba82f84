/* B x B transposes between rows (one per lane) and the lanes of a tile, the step that turns
 * a batch of contiguous rows into lane vectors and back.  Done an entry at a time, each real
 * costs a load and a store to a different cache line; in registers, a 16 x 16 float block
 * (8 complex entries of 16 rows) costs 64 shuffles.  AVX-512 and AVX2 copies use
 * intrinsics, the baseline copy a plain loop.  Included once per precision and ISA level
 * (TL_FFT_ISA 0, 3 or 4) like fft_lanes.h.
 *
 *   tl_fft_tr_in(rows, t, ts):   t[c * ts + b] = rows[b][c]     (b, c < FFT_B)
 *   tl_fft_tr_out(t, ts, rows):  rows[b][c] = t[c * ts + b]
 *
 * With ts = FFT_B, a block of rows of interleaved complex numbers becomes FFT_B / 2 whole
 * tile entries (real lanes, imaginary lanes, next entry...): the tile's own layout. */

#define FFT_R TL_FFT_R
#define FFT_B TL_FFT_B

#if TL_FFT_ISA == 4 && TL_FFT_B == 16
/* 16 x 16 floats: unpack pairs of rows (32-bit, then 64-bit), then a 4 x 4 transpose of the
 * 128-bit blocks with two rounds of shuffle_f32x4. */
TL_FFT_INLINE void TL_FK(tl_fft_tr_regs)(__m512 *r) {
    __m512 t[16], u[16];
    int i, c;
    for (i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 4; i++) {        /* u[4g + c], block k = rows 4g..4g+3 at column 4k + c */
        u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[4 * i]),
                                                       _mm512_castps_pd(t[4 * i + 2])));
        u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[4 * i]),
                                                           _mm512_castps_pd(t[4 * i + 2])));
        u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[4 * i + 1]),
                                                           _mm512_castps_pd(t[4 * i + 3])));
        u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[4 * i + 1]),
                                                           _mm512_castps_pd(t[4 * i + 3])));
    }
    for (c = 0; c < 4; c++) {
        const __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44);
        const __m512 v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xEE);
        const __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
        const __m512 v3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xEE);
        r[c] = _mm512_shuffle_f32x4(v0, v2, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
        r[8 + c] = _mm512_shuffle_f32x4(v1, v3, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
    }
}

TL_FFT_INLINE void TL_FK(tl_fft_tr_in)(const FFT_R *const *rows, FFT_R *t, int64_t ts) {
    __m512 r[16];
    int i;
    for (i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(rows[i]);
    TL_FK(tl_fft_tr_regs)(r);
    for (i = 0; i < 16; i++) _mm512_storeu_ps(t + i * ts, r[i]);
}

TL_FFT_INLINE void TL_FK(tl_fft_tr_out)(const FFT_R *t, int64_t ts, FFT_R *const *rows) {
    __m512 r[16];
    int i;
    for (i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(t + i * ts);
    TL_FK(tl_fft_tr_regs)(r);
    for (i = 0; i < 16; i++) _mm512_storeu_ps(rows[i], r[i]);
}

#elif TL_FFT_ISA == 4 && TL_FFT_B == 8
/* 8 x 8 doubles: unpack pairs of rows, then the 4 x 4 transpose of 128-bit blocks. */
TL_FFT_INLINE void TL_FK(tl_fft_tr_regs)(__m512d *r) {
    __m512d t[8];
    int i, c;
    for (i = 0; i < 4; i++) {        /* t[2i + c], block k = rows 2i, 2i+1 at column 2k + c */
        t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
    }
    for (c = 0; c < 2; c++) {
        const __m512d v0 = _mm512_shuffle_f64x2(t[c], t[2 + c], 0x44);
        const __m512d v1 = _mm512_shuffle_f64x2(t[c], t[2 + c], 0xEE);
        const __m512d v2 = _mm512_shuffle_f64x2(t[4 + c], t[6 + c], 0x44);
        const __m512d v3 = _mm512_shuffle_f64x2(t[4 + c], t[6 + c], 0xEE);
        r[c] = _mm512_shuffle_f64x2(v0, v2, 0x88);
        r[2 + c] = _mm512_shuffle_f64x2(v0, v2, 0xDD);
        r[4 + c] = _mm512_shuffle_f64x2(v1, v3, 0x88);
        r[6 + c] = _mm512_shuffle_f64x2(v1, v3, 0xDD);
    }
}

TL_FFT_INLINE void TL_FK(tl_fft_tr_in)(const FFT_R *const *rows, FFT_R *t, int64_t ts) {
    __m512d r[8];
    int i;
    for (i = 0; i < 8; i++) r[i] = _mm512_loadu_pd(rows[i]);
    TL_FK(tl_fft_tr_regs)(r);
    for (i = 0; i < 8; i++) _mm512_storeu_pd(t + i * ts, r[i]);
}

TL_FFT_INLINE void TL_FK(tl_fft_tr_out)(const FFT_R *t, int64_t ts, FFT_R *const *rows) {
    __m512d r[8];
    int i;
    for (i = 0; i < 8; i++) r[i] = _mm512_loadu_pd(t + i * ts);
    TL_FK(tl_fft_tr_regs)(r);
    for (i = 0; i < 8; i++) _mm512_storeu_pd(rows[i], r[i]);
}

#elif TL_FFT_ISA == 3 && TL_FFT_B == 16
/* 16 x 16 floats as four 8 x 8 blocks of __m256: block (I, J) of the output is the
 * transpose of block (J, I) of the input. */
TL_FFT_INLINE void TL_FK(tl_fft_tr8)(__m256 *r) {
    __m256 t[8], u[8];
    int i, c;
    for (i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 2; i++) {        /* u[4g + c]: rows 4g..4g+3 at columns c and 4 + c */
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (c = 0; c < 4; c++) {
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

TL_FFT_INLINE void TL_FK(tl_fft_tr_in)(const FFT_R *const *rows, FFT_R *t, int64_t ts) {
    __m256 r[8];
    int I, J, i;
    for (I = 0; I < 2; I++)
        for (J = 0; J < 2; J++) {     /* input rows 8J.., columns 8I.. -> output rows 8I.. */
            for (i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(rows[8 * J + i] + 8 * I);
            TL_FK(tl_fft_tr8)(r);
            for (i = 0; i < 8; i++) _mm256_storeu_ps(t + (8 * I + i) * ts + 8 * J, r[i]);
        }
}

TL_FFT_INLINE void TL_FK(tl_fft_tr_out)(const FFT_R *t, int64_t ts, FFT_R *const *rows) {
    __m256 r[8];
    int I, J, i;
    for (I = 0; I < 2; I++)
        for (J = 0; J < 2; J++) {     /* tile rows 8I.., lanes 8J.. -> rows 8J.., columns 8I.. */
            for (i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(t + (8 * I + i) * ts + 8 * J);
            TL_FK(tl_fft_tr8)(r);
            for (i = 0; i < 8; i++) _mm256_storeu_ps(rows[8 * J + i] + 8 * I, r[i]);
        }
}

#elif TL_FFT_ISA == 3 && TL_FFT_B == 8
/* 8 x 8 doubles as four 4 x 4 blocks of __m256d. */
TL_FFT_INLINE void TL_FK(tl_fft_tr4)(__m256d *r) {
    const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

TL_FFT_INLINE void TL_FK(tl_fft_tr_in)(const FFT_R *const *rows, FFT_R *t, int64_t ts) {
    __m256d r[4];
    int I, J, i;
    for (I = 0; I < 2; I++)
        for (J = 0; J < 2; J++) {
            for (i = 0; i < 4; i++) r[i] = _mm256_loadu_pd(rows[4 * J + i] + 4 * I);
            TL_FK(tl_fft_tr4)(r);
            for (i = 0; i < 4; i++) _mm256_storeu_pd(t + (4 * I + i) * ts + 4 * J, r[i]);
        }
}

TL_FFT_INLINE void TL_FK(tl_fft_tr_out)(const FFT_R *t, int64_t ts, FFT_R *const *rows) {
    __m256d r[4];
    int I, J, i;
    for (I = 0; I < 2; I++)
        for (J = 0; J < 2; J++) {
            for (i = 0; i < 4; i++) r[i] = _mm256_loadu_pd(t + (4 * I + i) * ts + 4 * J);
            TL_FK(tl_fft_tr4)(r);
            for (i = 0; i < 4; i++) _mm256_storeu_pd(rows[4 * J + i] + 4 * I, r[i]);
        }
}

#else
TL_FFT_INLINE void TL_FK(tl_fft_tr_in)(const FFT_R *const *rows, FFT_R *t, int64_t ts) {
    int b, c;
    for (b = 0; b < FFT_B; b++)
        for (c = 0; c < FFT_B; c++) t[c * ts + b] = rows[b][c];
}

TL_FFT_INLINE void TL_FK(tl_fft_tr_out)(const FFT_R *t, int64_t ts, FFT_R *const *rows) {
    int b, c;
    for (b = 0; b < FFT_B; b++)
        for (c = 0; c < FFT_B; c++) rows[b][c] = t[c * ts + b];
}
#endif

#undef FFT_R
#undef FFT_B
