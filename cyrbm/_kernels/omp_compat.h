/* OpenMP, or single-thread stand-ins, from one source.
 * Compiled with -fopenmp (the macro _OPENMP is then defined) the real runtime is used;
 * without it the functions below say "one thread" and cyrbm runs serially. */
#ifndef CYRBM_OMP_COMPAT_H
#define CYRBM_OMP_COMPAT_H

#ifdef _OPENMP
#include <omp.h>
#define CYRBM_HAVE_OPENMP 1
#else
#define CYRBM_HAVE_OPENMP 0
static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_get_num_threads(void) { return 1; }
#endif

#endif
