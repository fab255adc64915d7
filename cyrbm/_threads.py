"""How many OpenMP threads a kernel call gets when the caller did not say.

A parallel region costs a few microseconds to start and end even on an idle machine,
and far more on a busy one: when another program holds a core, the region waits at its
barrier for the thread that was descheduled (on 2 cores with other programs running,
CD-1 on a 784 x 500 RBM took 4.6 s an epoch on 2 threads against 0.66 s on one).  So:

* work whose parallel regions are small (a mini-batch of an 8 x 8 digits model, a few
  Gibbs chains) runs on one thread: one thread per ``PER_THREAD`` multiply-adds of a
  region, up to the default (OMP_NUM_THREADS, else all cores);
* and no more threads than there are cores that other programs leave free right now
  (the runnable tasks of /proc/loadavg, where the system has it).

An explicit number of threads is used as given.  Results never depend on the number of
threads, so this choice changes only the speed.
"""
import time

from cyrbm._omp import max_threads, resolve_threads

#: multiply-adds of one parallel region that make a second thread worth starting
PER_THREAD = 2_000_000


def free_cores(cores):
    """Cores of ``cores`` not taken by other runnable tasks at this moment (at least 1);
    ``cores`` where the system does not tell (no /proc/loadavg)."""
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return cores
    others = max(0, running - 1)         # the reading task is this one
    return max(1, min(cores, cores - others))


def auto_threads(threads, work):
    """Threads for a kernel whose parallel regions each do about ``work`` multiply-adds.

    ``threads`` None or 0: chosen by ``work`` and the cores free now; otherwise
    ``resolve_threads(threads)``.
    """
    if threads is not None and threads != 0:
        return resolve_threads(threads)
    n = min(resolve_threads(None), int(work // PER_THREAD))
    if n <= 1:
        return 1
    return max(1, min(n, free_cores(n)))


def pieces(start, stop, first=1, most=None, step=1):
    """Consecutive ranges (a, b) that cover start <= i < stop, each sized for about 0.1 s
    of the caller's work on them (timed between yields: a piece, at most ``most`` long,
    grows towards 0.1 s, by at most 8 times, while one takes under 0.05 s, and halves over
    0.2 s), always a whole number of ``step`` (but the last).  Python answers Ctrl-C and
    SIGTERM between pieces, so a long compiled computation taken in them ends within about
    a second whatever the threads; the caller's results must not depend on where it is
    cut."""
    step = max(1, int(step))
    size = max(1, int(first) if most is None else min(int(first), int(most)))
    while start < stop:
        size = max(step, size // step * step)
        end = min(stop, start + size)
        t0 = time.perf_counter()
        yield start, end
        seconds = time.perf_counter() - t0
        start = end
        if seconds < 0.05:
            # few, large pieces when the work is fast: each call has a fixed cost
            size *= min(8, max(2, int(0.1 / max(seconds, 1e-6))))
            if most is not None:
                size = min(int(most), size)
        elif seconds > 0.2 and size > 1:
            size = max(1, size // 2)


__all__ = ["auto_threads", "free_cores", "max_threads", "pieces", "PER_THREAD"]
