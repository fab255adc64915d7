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


# Ctrl-C and SIGTERM during long nogil loops: the loop checks between pieces of about
# 0.1 s of work (timed on the calling thread, outside any parallel region) whether a
# Python signal handler has raised.  If one has, the exception is left set: the loop
# stops and returns its "interrupted" status, and its Python wrapper raises the exception.
cdef extern from "Python.h":
    int _check_signals "PyErr_CheckSignals" ()      # no `except`: the error stays set

cdef extern from *:
    """
    #include <time.h>
    static CYTHON_INLINE double cyrbm_seconds_now(void) {     /* timing pieces of work */
        struct timespec t;
    #if defined(_WIN32)
        timespec_get(&t, TIME_UTC);
    #else
        clock_gettime(CLOCK_MONOTONIC, &t);
    #endif
        return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
    }
    """
    double seconds_now "cyrbm_seconds_now" () noexcept nogil


cdef inline bint signal_raised() noexcept nogil:
    """Run Python's pending signal handlers; True when one raised (KeyboardInterrupt, or
    the CLI's SIGTERM handler): its exception is then set, for the caller to raise."""
    cdef int status
    with gil:
        status = _check_signals()
    return status != 0


cdef inline int raise_set_error() except -1:
    """Raise the exception a signal handler left set (see signal_raised)."""
    return -1


cdef inline bint time_to_check(double *last) noexcept nogil:
    """True, and ``*last`` set to now, when 0.1 s have passed since ``*last``."""
    cdef double t = seconds_now()
    if t - last[0] < 0.1:
        return False
    last[0] = t
    return True
