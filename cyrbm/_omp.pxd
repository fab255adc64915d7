# OpenMP or its single-thread stand-ins, from one header (include/cyrbm/omp_compat.h).
cdef extern from "cyrbm/omp_compat.h" nogil:
    int CYRBM_HAVE_OPENMP
    int omp_get_max_threads()
    int omp_get_thread_num()
    int omp_get_num_threads()
