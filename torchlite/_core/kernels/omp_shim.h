/* OpenMP entry points, or serial stand-ins when built without OpenMP. */
#ifndef TL_OMP_SHIM_H
#define TL_OMP_SHIM_H
#ifdef _OPENMP
#include <omp.h>
#define TL_HAVE_OPENMP 1
#else
#define TL_HAVE_OPENMP 0
static int omp_get_max_threads(void) { return 1; }
static void omp_set_num_threads(int n) { (void)n; }
static int omp_get_thread_num(void) { return 0; }
static int omp_get_num_procs(void) { return 1; }
#endif
#endif
