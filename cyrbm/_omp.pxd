# OpenMP or its single-thread stand-ins, from one header (cyrbm/_kernels/omp_compat.h).
cdef extern from "omp_compat.h" nogil:
    int CYRBM_HAVE_OPENMP
    int omp_get_max_threads()
    int omp_get_thread_num()
    int omp_get_num_threads()


cdef inline int cap_threads(int n_threads, Py_ssize_t work) noexcept nogil:
    """Threads for ``work`` independent items: at least 1, at most one per item."""
    if n_threads < 1:
        n_threads = 1
    if work < n_threads:
        return <int> (work if work > 0 else 1)
    return n_threads
