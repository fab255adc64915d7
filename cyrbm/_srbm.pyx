# cython: language_level=3
"""The semi-restricted Boltzmann machine's one driver (Osindero & Hinton 2008; MS09 Sec.
5.2): ``srbm_run`` (its nogil driver ``srbm_engine``, shared with the C API), h | v at once and v | h one unit at a time, for AIS from a base rate,
Gibbs sampling and training's sequential-Gibbs negative phase.  The loop is
cyrbm_srbm_steps in cyrbm/_kernels/common_t.h.
"""
from cython.parallel cimport prange, parallel
from cyrbm._omp cimport cap_threads
from libc.stdint cimport uint8_t, uint64_t
from libc.stdlib cimport malloc, free
from cython cimport floating

from cyrbm._random cimport cyrbm_rng, check_streams
from cyrbm._ckernels cimport *


cdef int srbm_engine(const floating *W, const floating *vbias, const floating *hbias,
                     const floating *L, const double *base, Py_ssize_t R, Py_ssize_t D,
                     Py_ssize_t M, uint8_t *v, uint8_t *h, double *y, const double *betas,
                     Py_ssize_t k0, Py_ssize_t k1, bint weights, bint fresh,
                     cyrbm_rng *streams, double *logw, int n_threads) noexcept nogil:
    """The SRBM's one driver on raw buffers (srbm_run, the C API's srbm_* entries):
    steps k0 <= k < k1 of the R runs (v, h, y: R x D, R x M, R x D; see srbm_run), run r
    on streams[r] alone, runs shared among the threads.  0, or -1 when memory runs out."""
    cdef Py_ssize_t r
    cdef double *x
    cdef int bad = 0
    cdef cyrbm_srbm_pair P
    if R == 0 or k0 == k1:
        return 0
    P.D, P.M = D, M
    P.W, P.b, P.c, P.L = W, vbias, hbias, L
    P.bA = base
    with parallel(num_threads=cap_threads(n_threads, R * (k1 - k0) * D * (M + D) // 50000)):
        x = <double *> malloc((M + D + 1) * sizeof(double))
        for r in prange(R, schedule='static'):
            if x == NULL:
                bad += 1
                continue
            k_srbm_steps(floating is float, &P, v + r * D, h + r * M, y + r * D, x, betas,
                         k0, k1, weights, fresh, &streams[r], &logw[r])
        free(x)
    return -1 if bad else 0


def srbm_run(const floating[:, ::1] W, const floating[::1] vbias, const floating[::1] hbias,
             const floating[:, ::1] L, const double[::1] base, uint8_t[:, ::1] v,
             uint8_t[:, ::1] h, double[:, ::1] y, const double[::1] betas, Py_ssize_t k0,
             Py_ssize_t k1, bint weights, bint fresh, uint64_t[:, ::1] streams,
             double[::1] logw, int n_threads=1):
    """Steps k0 <= k < k1 of R runs between independent visible units of log-odds
    ``base`` and the semi-restricted Boltzmann machine (W, vbias, hbias, L)
    (cyrbm_srbm_steps, common_t.h): h | v at once, v | h one unit at a time.  The SRBM's
    one driver (srbm_engine), for AIS (``weights``: ln w in ``logw``, INOUT), Gibbs
    sampling and training's sequential-Gibbs negative phase (every beta 1).

    ``v`` (R x n_visible, INOUT) 0/1 states, ``h`` (R x n_hidden, OUT) the last hidden
    states, ``y`` (R x n_visible, INOUT) each run's lateral field L v, recomputed from v
    first when ``fresh``; run r draws from streams[r] alone (INOUT, (R, 4) uint64), so
    the result does not depend on ``n_threads``."""
    cdef Py_ssize_t R = v.shape[0], D = W.shape[0], M = W.shape[1]
    cdef int status
    if (v.shape[1] != D or h.shape[0] != R or h.shape[1] != M or vbias.shape[0] != D
            or hbias.shape[0] != M or L.shape[0] != D or L.shape[1] != D
            or base.shape[0] != D or y.shape[0] != R or y.shape[1] != D
            or logw.shape[0] != R):
        raise ValueError("srbm_run: the shapes of the model, base, runs and weights do not match.")
    check_streams(streams, R, "srbm_run: streams")
    if not (0 <= k0 <= k1 <= betas.shape[0]):
        raise ValueError("srbm_run: the steps are not within the schedule.")
    if R == 0 or k0 == k1:
        return
    with nogil:
        status = srbm_engine(&W[0, 0], &vbias[0], &hbias[0], &L[0, 0], &base[0], R, D, M,
                             &v[0, 0], &h[0, 0], &y[0, 0], &betas[0], k0, k1, weights, fresh,
                             <cyrbm_rng *> &streams[0, 0], &logw[0], n_threads)
    if status:
        raise MemoryError("out of memory in srbm_run")


# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._dispatch cimport kernel_table
cyrbm_kt = kernel_table()
