# cython: language_level=3
"""Compiled parts of the Chib-style estimator (Murray & Salakhutdinov 2009) and of
per-vector AIS over a two-layer DBN's first hidden layer.

* ``chib_alloc`` / ``chib_free`` (cdef, nogil, malloc-based): the one layout of the
  kernels' model buffers (W1^T and e^(W1^T), W2 and e^W2 padded to 32 elements, biases,
  row sums, rescaling periods), used by ``ChibModel`` and by the C API's entry.
* ``chib_run`` / ``chib_ais_run`` on one driver, ``_run_items``: OpenMP over items (a
  test vector and a repeat), one scratch block per thread, one random stream per item, so
  results do not depend on the number of threads.  ``chib_combine`` averages the repeats of each vector in P.

The loops themselves are in cyrbm/_kernels/chib.c and chib_t.h.  A Gaussian bottom layer
or a semi-restricted top runs on ``ScalarChibModel`` (_chib_scalar.pyx).
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport prange, threadid
from libc.stdint cimport uint8_t, int32_t, uint64_t, uintptr_t
from libc.stdlib cimport malloc, calloc, free
from libc.math cimport log, exp, fabs, INFINITY, isfinite

from cyrbm._omp cimport cap_threads
from cyrbm._random cimport cyrbm_rng
from cyrbm._ckernels cimport *
from cpython.exc cimport PyErr_CheckSignals

cdef double _LOG2E = 1.4426950408889634
#: items (of the estimator or of per-vector AIS) a thread runs side by side (kernels.h's
#: CYRBM_CHIB_SLOTS): callers give a call whole groups of them per thread
ITEMS_IN_FLIGHT = CYRBM_CHIB_SLOTS
#: largest |weight| the tables take: e^w must be finite in the kernel's float type
MAX_WEIGHT_F32 = 80.0
MAX_WEIGHT_F64 = 700.0


cdef inline Py_ssize_t _pad32(Py_ssize_t n) noexcept nogil:
    return ((n + 31) // 32) * 32


cdef inline double _exp(double w) noexcept nogil:
    """e^w through vmath's exp of non-positive arguments (1 / e^-w for w > 0)."""
    return cyrbm_exp_neg(w) if w <= 0.0 else 1.0 / cyrbm_exp_neg(-w)


cdef inline Py_ssize_t _period(double wmax, double budget) noexcept nogil:
    """Blocks between rescalings: a factor (q + p e^w or p + q e^w, p + q in [1, 2)) lies
    in [2^(-wmax log2 e), 2^(wmax log2 e + 1)), so after K blocks a lane's product stays
    within 2^(+-budget)."""
    cdef double k
    k = budget / (wmax * _LOG2E + 1.0)
    if k < 1.0:
        return 1
    if k > (1 << 20):
        return 1 << 20
    return <Py_ssize_t> k


cdef inline double _max_abs(const floating *W, Py_ssize_t n, double limit) noexcept nogil:
    """The largest |W[i]|, i < n; -1 when one is beyond ``limit`` (or NaN)."""
    cdef Py_ssize_t i
    cdef double w, mx = 0.0
    for i in range(n):
        w = fabs(<double> W[i])
        if not (w <= limit):
            return -1.0
        if w > mx:
            mx = w
    return mx


cdef inline double _table_row(floating *w, floating *e, Py_ssize_t ld, const floating *src,
                              Py_ssize_t n, Py_ssize_t stride) noexcept nogil:
    """One row of a layer's tables: w[i] = src[i stride] and e[i] = e^w[i] for i < n, e = 1
    in the padding up to ld; returns the row's sum (float64, in order)."""
    cdef Py_ssize_t i
    cdef double acc = 0.0
    for i in range(ld):
        e[i] = 1
    for i in range(n):
        w[i] = src[i * stride]
        e[i] = <floating> _exp(<double> src[i * stride])
        acc += <double> src[i * stride]
    return acc


cdef int chib_alloc(chib_buffers *B, const floating *W1, const floating *b1,
                    const floating *c1, const floating *W2, const floating *b2,
                    const floating *c2, Py_ssize_t D, Py_ssize_t H1,
                    Py_ssize_t H2) noexcept nogil:
    """Lay out a two-layer DBN for the kernels: RBM1 (W1, D x H1, C order; visible biases
    b1; hidden biases c1, used by Q only) and the top RBM (W2, H1 x H2; biases b2 on h1,
    c2 on h2).  One calloc'd block (``chib_free`` releases it).  Returns 0, -1 when
    memory runs out, -2 for invalid sizes, -3 when a weight's magnitude exceeds
    MAX_WEIGHT_F32 / _F64 (e^w would not be finite in the float type)."""
    cdef cyrbm_chib_model *M = &B.m
    cdef bint f32 = floating is float
    cdef size_t s = sizeof(floating), total = 0
    cdef Py_ssize_t ld1, ld2, i, j
    cdef double wmax1, wmax2, limit = 80.0 if f32 else 700.0
    cdef char *base
    cdef floating *W1T
    cdef floating *E1
    cdef floating *pb1
    cdef floating *pW2
    cdef floating *E2
    cdef floating *pc2
    cdef double *pb2
    cdef double *pc1
    cdef double *s1
    cdef double *s2
    B.block = NULL
    B.float32 = f32
    if D < 1 or H1 < 1 or H2 < 1 or D > (1 << 24) or H1 > (1 << 24) or H2 > (1 << 24):
        return -2
    wmax1 = _max_abs(W1, D * H1, limit)
    wmax2 = _max_abs(W2, H1 * H2, limit) if wmax1 >= 0.0 else -1.0
    if wmax1 < 0.0 or wmax2 < 0.0:
        return -3
    ld1, ld2 = _pad32(D), _pad32(H2)
    for k in range(2):
        total = 0
        base = NULL if k == 0 else <char *> ((<uintptr_t> B.block + 63) & ~(<uintptr_t> 63))
        W1T = <floating *> cyrbm_take(base, &total, H1 * ld1 * s)
        E1 = <floating *> cyrbm_take(base, &total, H1 * ld1 * s)
        pb1 = <floating *> cyrbm_take(base, &total, ld1 * s)
        pW2 = <floating *> cyrbm_take(base, &total, H1 * ld2 * s)
        E2 = <floating *> cyrbm_take(base, &total, H1 * ld2 * s)
        pc2 = <floating *> cyrbm_take(base, &total, ld2 * s)
        pb2 = <double *> cyrbm_take(base, &total, H1 * sizeof(double))
        pc1 = <double *> cyrbm_take(base, &total, H1 * sizeof(double))
        s1 = <double *> cyrbm_take(base, &total, H1 * sizeof(double))
        s2 = <double *> cyrbm_take(base, &total, H1 * sizeof(double))
        if k == 0:
            B.block = calloc(total + 64, 1)
            if B.block == NULL:
                return -1
    for j in range(H1):
        s1[j] = _table_row(W1T + j * ld1, E1 + j * ld1, ld1, W1 + j, D, H1)
        s2[j] = _table_row(pW2 + j * ld2, E2 + j * ld2, ld2, W2 + j * H2, H2, 1)
        pb2[j] = b2[j]
        pc1[j] = c1[j]
    for i in range(D):
        pb1[i] = b1[i]
    for i in range(H2):
        pc2[i] = c2[i]
    M.D, M.H1, M.H2, M.ld1, M.ld2 = D, H1, H2, ld1, ld2
    M.W1T, M.E1, M.b1, M.W2, M.E2, M.c2 = W1T, E1, pb1, pW2, E2, pc2
    M.b2, M.c1, M.s1, M.s2 = pb2, pc1, s1, s2
    M.K1 = _period(wmax1, 100.0 if f32 else 900.0)
    M.K2 = _period(wmax2, 100.0 if f32 else 900.0)
    return 0


cdef void chib_free(chib_buffers *B) noexcept nogil:
    free(B.block)
    B.block = NULL


cdef char *_work(chib_buffers *B, Py_ssize_t S, int slots, int nt,
                 size_t *stride) noexcept nogil:
    """One scratch block per thread of ``slots`` items' layouts (each rounded up to 64
    bytes, as the kernel lays them out; 64-byte aligned strides); NULL when memory runs
    out."""
    cdef cyrbm_chib_work W
    cdef size_t nbytes = cyrbm_chib_layout(&B.m, S, 4 if B.float32 else 8, NULL, &W)
    stride[0] = ((nbytes + 63) & ~(<size_t> 63)) * slots + 64
    return <char *> malloc(stride[0] * nt + 64)


cdef struct _chib_job:
    # what each item runs: per-vector AIS (cyrbm_chib_ais: betas, n_betas, base_q; out1 =
    # logw) or the estimator (cyrbm_chib_items: S, tilde_backward; out1 = lpstar, out2 =
    # logphat)
    bint ais
    Py_ssize_t S
    int tilde_backward
    const double *betas
    Py_ssize_t n_betas
    int base_q
    double *out1
    double *out2


cdef int _run_items(chib_buffers *B, const _chib_job *J, const uint8_t *v, const int32_t *vec,
                    Py_ssize_t n_items, Py_ssize_t refresh_every, cyrbm_rng *streams,
                    int n_threads) noexcept nogil:
    """The one driver of the items (chib_run, chib_ais_run): OpenMP over chunks of up to
    CYRBM_CHIB_SLOTS items, which the kernels run side by side; item t on the test vector
    vec[t] (a row of v, n x D) with stream streams[t], one scratch block per thread, so
    results do not depend on the number of threads."""
    cdef int nt = cap_threads(n_threads, n_items)
    # chunks of up to CYRBM_CHIB_SLOTS, fewer when that leaves a thread without one
    cdef Py_ssize_t per = max(1, min(<Py_ssize_t> CYRBM_CHIB_SLOTS, (n_items + nt - 1) // nt))
    cdef Py_ssize_t n_chunks = (n_items + per - 1) // per
    cdef size_t stride
    cdef char *block
    cdef char *w
    cdef Py_ssize_t c, t0, t1
    if n_items <= 0:
        return 0
    block = _work(B, 1 if J.ais else J.S, CYRBM_CHIB_SLOTS, nt, &stride)
    if block == NULL:
        return -1
    for c in prange(n_chunks, num_threads=nt, schedule='dynamic', chunksize=1):
        w = <char *> ((<uintptr_t> block + 63) & ~(<uintptr_t> 63)) + threadid() * stride
        t0 = c * per
        t1 = min(t0 + per, n_items)
        if J.ais:
            k_chib_ais(B.float32, &B.m, v, vec, t0, t1, J.betas, J.n_betas, J.base_q,
                       refresh_every, streams, J.out1, w)
        else:
            k_chib_items(B.float32, &B.m, v, vec, t0, t1, J.S, J.tilde_backward,
                         refresh_every, streams, J.out1, J.out2, w)
    free(block)
    return 0


cdef int chib_run(chib_buffers *B, const uint8_t *v, const int32_t *vec, Py_ssize_t n_items,
                  Py_ssize_t S, int tilde_backward, Py_ssize_t refresh_every,
                  cyrbm_rng *streams, double *lpstar, double *logphat,
                  int n_threads) noexcept nogil:
    """The estimator (MS09 Figure 1) for n_items items, item t on the test vector
    vec[t] (a row of v, n x D) with stream streams[t]: see cyrbm_chib_items."""
    cdef _chib_job J
    J.ais, J.S, J.tilde_backward, J.out1, J.out2 = False, S, tilde_backward, lpstar, logphat
    return _run_items(B, &J, v, vec, n_items, refresh_every, streams, n_threads)


cdef int chib_ais_run(chib_buffers *B, const uint8_t *v, const int32_t *vec,
                      Py_ssize_t n_items, const double *betas, Py_ssize_t n_betas,
                      int base_q, Py_ssize_t refresh_every, cyrbm_rng *streams, double *logw,
                      int n_threads) noexcept nogil:
    """Per-vector AIS over h1 for n_items items, from Q(h1 | v) (base_q) or the uniform
    distribution (see cyrbm_chib_ais)."""
    cdef _chib_job J
    J.ais, J.betas, J.n_betas, J.base_q, J.out1 = True, betas, n_betas, base_q, logw
    return _run_items(B, &J, v, vec, n_items, refresh_every, streams, n_threads)


cdef void chib_combine(const double *a, const double *b, Py_ssize_t n, Py_ssize_t R,
                       double log_Z, double *out) noexcept nogil:
    """out[i] = ln((1/R) sum_r exp(a[i R + r] - b[i R + r])) - log_Z: repeats averaged in
    P (so the average stays unbiased in P), relative to the largest term."""
    cdef Py_ssize_t i, r
    cdef double mx, sm, x
    for i in range(n):
        mx = -INFINITY
        for r in range(R):
            x = a[i * R + r] - b[i * R + r]
            if x > mx:
                mx = x
        sm = 0.0
        if isfinite(mx):
            for r in range(R):
                sm += exp(a[i * R + r] - b[i * R + r] - mx)
            out[i] = mx + log(sm / R) - log_Z
        else:
            out[i] = mx - log_Z


def _checked_items(v, dtype, Py_ssize_t D, vec, streams):
    """(v as C-contiguous ``dtype`` rows of D columns, vec as int32) for items vec (rows
    of v) with one stream each (``streams``: (items, 4) uint64); a ValueError else."""
    v = np.ascontiguousarray(v, dtype=dtype)
    vec = np.ascontiguousarray(vec, dtype=np.int32)
    if v.ndim != 2 or v.shape[1] != D:
        raise ValueError(f"v must have {D} columns.")
    if vec.size and (vec.min() < 0 or vec.max() >= v.shape[0]):
        raise ValueError("item vector indices outside v.")
    if streams.shape != (vec.shape[0], 4) or streams.dtype != np.uint64:
        raise ValueError(f"streams must be a ({vec.shape[0]}, 4) uint64 array.")
    return v, vec


cdef class ChibModel:
    """A two-layer DBN laid out for the kernels (``chib_alloc``), in float32 or float64.

    Parameters are RBM1's (W1, b1, c1) and the top RBM's (W2, b2, c2); see chib_alloc.
    """
    cdef chib_buffers buf
    cdef readonly bint float32
    cdef readonly Py_ssize_t D, H1, H2

    def __cinit__(self):
        self.buf.block = NULL

    def __dealloc__(self):
        chib_free(&self.buf)

    def __init__(self, W1, b1, c1, W2, b2, c2, dtype=np.float64):
        dtype = np.dtype(np.float32 if np.dtype(dtype) == np.float32 else np.float64)
        self._init(*(np.ascontiguousarray(a, dtype=dtype) for a in (W1, b1, c1, W2, b2, c2)))

    def _init(self, const floating[:, ::1] W1, const floating[::1] b1, const floating[::1] c1,
              const floating[:, ::1] W2, const floating[::1] b2, const floating[::1] c2):
        self._check(W1.shape[0], W1.shape[1], W2.shape[0], W2.shape[1], b1.shape[0],
                    c1.shape[0], b2.shape[0], c2.shape[0])
        chib_free(&self.buf)
        self._status(chib_alloc(&self.buf, &W1[0, 0], &b1[0], &c1[0], &W2[0, 0], &b2[0],
                                &c2[0], W1.shape[0], W1.shape[1], W2.shape[1]))

    def _check(self, D, H1, H1b, H2, nb1, nc1, nb2, nc2):
        if H1b != H1 or nb1 != D or nc1 != H1 or nb2 != H1 or nc2 != H2 or min(D, H1, H2) < 1:
            raise ValueError("the two layers' parameters have inconsistent shapes.")
        self.D, self.H1, self.H2 = D, H1, H2

    def _status(self, int status):
        if status == -1:
            raise MemoryError("no memory for the DBN's tables.")
        if status == -3:
            raise ValueError("a weight is too large in magnitude for e^w to be finite.")
        if status != 0:
            raise ValueError("invalid DBN sizes.")
        self.float32 = self.buf.float32

    def _items(self, v, vec, streams):
        return _checked_items(v, np.uint8, self.D, vec, streams)

    def estimate(self, v, vec, Py_ssize_t steps, uint64_t[:, ::1] streams, int n_threads=1,
                 Py_ssize_t refresh_every=10, bint tilde_backward=True):
        """The estimator for items vec (indices into rows of v), streams (INOUT, one per
        item): (ln P*(v, h*), ln p-hat(h* | v)) per item, float64 arrays."""
        if steps < 1:
            raise ValueError("steps must be at least 1.")
        v, vec = self._items(v, vec, np.asarray(streams))
        cdef const uint8_t[:, ::1] vv = v
        cdef const int32_t[::1] ix = vec
        cdef Py_ssize_t n = ix.shape[0]
        lp_arr, ph_arr = np.empty(n), np.empty(n)
        cdef double[::1] lp = lp_arr, ph = ph_arr
        cdef int status = 0
        if n == 0:
            return lp_arr, ph_arr
        cyrbm_stop_watch_begin()        # a chain of S steps can be long: Ctrl-C stops it
        with nogil:
            status = chib_run(&self.buf, &vv[0, 0], &ix[0], n, steps,
                              1 if tilde_backward else 0, refresh_every,
                              <cyrbm_rng *> &streams[0, 0], &lp[0], &ph[0], n_threads)
        if cyrbm_stop_watch_end():     # the outputs are unfinished: never return them
            PyErr_CheckSignals()
            raise KeyboardInterrupt
        if status != 0:
            raise MemoryError("no memory for the estimator's chains.")
        return lp_arr, ph_arr

    def ais(self, v, vec, const double[::1] betas, uint64_t[:, ::1] streams,
            int n_threads=1, Py_ssize_t refresh_every=10, bint base_q=True):
        """Per-vector AIS over h1 from Q(h1 | v) (base_q) or the uniform distribution:
        the log weight of each item (float64)."""
        v, vec = self._items(v, vec, np.asarray(streams))
        cdef const uint8_t[:, ::1] vv = v
        cdef const int32_t[::1] ix = vec
        cdef Py_ssize_t n = ix.shape[0]
        lw_arr = np.empty(n)
        cdef double[::1] lw = lw_arr
        cdef int status = 0
        if betas.shape[0] < 2:
            raise ValueError("an annealing schedule needs at least two betas.")
        if n == 0:
            return lw_arr
        cyrbm_stop_watch_begin()
        with nogil:
            status = chib_ais_run(&self.buf, &vv[0, 0], &ix[0], n, &betas[0], betas.shape[0],
                                  1 if base_q else 0, refresh_every, <cyrbm_rng *> &streams[0, 0], &lw[0],
                                  n_threads)
        if cyrbm_stop_watch_end():     # the outputs are unfinished: never return them
            PyErr_CheckSignals()
            raise KeyboardInterrupt
        if status != 0:
            raise MemoryError("no memory for the AIS chains.")
        return lw_arr


def combine(const double[::1] a, const double[::1] b, Py_ssize_t repeats, double log_Z):
    """Per-vector ln P-hat from items i * repeats + r: chib_combine."""
    cdef Py_ssize_t n = a.shape[0] // repeats
    out_arr = np.empty(n)
    cdef double[::1] out = out_arr
    if a.shape[0] != b.shape[0] or n * repeats != a.shape[0]:
        raise ValueError("the items do not make whole repeats.")
    if n > 0:
        chib_combine(&a[0], &b[0], n, repeats, log_Z, &out[0])
    return out_arr


# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._dispatch cimport kernel_table
from cyrbm._dispatch import use_kernels, kernels_in_use
cyrbm_kt = kernel_table()
