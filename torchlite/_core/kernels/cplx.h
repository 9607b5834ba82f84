/* Complex arithmetic and functions on tl_c64/tl_c128 (types.h).  The math is one source with
 * the CUDA kernels, cuda_kernels/tl_complex.cuh, included here as C99 (setup.py puts
 * cuda_kernels/ on the include path).  The elementwise loops (ewise_body.h), the complex
 * reductions and the eigenvalue code (eig.h) use it. */
#ifndef TL_CPLX_H
#define TL_CPLX_H
#include "types.h"

#define TL_CPLX_FN TL_INLINE
#define TL_CPLX_INFINITY INFINITY
#define TL_CPLX_NAN NAN
#include "tl_complex.cuh"

TL_DEF_COMPLEX(c64, tl_c64, float, f)
TL_DEF_COMPLEX(c128, tl_c128, double, )

/* complex32: its parts rounded to float16 (its math is complex64's, then rounded) */
TL_INLINE tl_c32 tl_c32_mk(float re, float im) {
    tl_c32 z; z.re = tl_float_to_half(re); z.im = tl_float_to_half(im); return z; }
TL_INLINE tl_c32 tl_c32_of_half(tl_half re) { tl_c32 z; z.re = re; z.im = 0; return z; }

#endif
