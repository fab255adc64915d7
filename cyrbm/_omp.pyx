# cython: language_level=3
"""Whether this build of cyrbm has OpenMP, and how many threads it would use."""
from cyrbm._omp cimport CYRBM_HAVE_OPENMP, omp_get_max_threads


def openmp_enabled():
    """True when the compiled kernels were built with OpenMP."""
    return bool(CYRBM_HAVE_OPENMP)


def max_threads():
    """Threads a parallel kernel uses by default (OMP_NUM_THREADS, else all cores)."""
    return int(omp_get_max_threads())


def resolve_threads(n_threads=None):
    """Number of threads for a kernel call: None or 0 means the default, capped at >= 1."""
    if n_threads is None or n_threads == 0:
        return int(omp_get_max_threads())
    n = int(n_threads)
    if n < 0:
        raise ValueError(f"threads must be a positive number, not {n_threads}.")
    if not CYRBM_HAVE_OPENMP:
        return 1
    return n
