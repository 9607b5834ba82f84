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

#endif
