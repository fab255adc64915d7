"""How many OpenMP threads a kernel call gets when the caller did not say.

A parallel region costs a few microseconds to start and end even on an idle machine,
and far more on a busy one: when another program holds a core, the region waits at its
barrier for the thread that was descheduled.  So a kernel whose parallel regions are
small (a mini-batch of an 8 x 8 digits model, a few Gibbs chains) runs on one thread,
and larger work gets one thread per ``PER_THREAD`` multiply-adds of a region, up to the
default (OMP_NUM_THREADS, else all cores).  An explicit number of threads is used as
given.  Results never depend on the number of threads.
"""
from cyrbm._omp import max_threads, resolve_threads

#: multiply-adds of one parallel region that make a second thread worth starting
PER_THREAD = 2_000_000


def auto_threads(threads, work):
    """Threads for a kernel whose parallel regions each do about ``work`` multiply-adds.

    ``threads`` None or 0: chosen by ``work``; otherwise ``resolve_threads(threads)``.
    """
    if threads is not None and threads != 0:
        return resolve_threads(threads)
    n = int(work // PER_THREAD)
    return max(1, min(resolve_threads(None), n))


__all__ = ["auto_threads", "max_threads", "PER_THREAD"]
