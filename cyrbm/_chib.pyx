# cython: language_level=3
"""Compiled parts of the Chib-style estimator (Murray & Salakhutdinov 2009) and of
per-vector AIS over a two-layer DBN's first hidden layer.

* ``chib_alloc`` / ``chib_free`` (cdef, nogil, malloc-based): the one layout of the
  kernels' model buffers (W1^T and e^(W1^T), W2 and e^W2 padded to 32 elements, biases,
  row sums, rescaling periods), used by ``ChibModel`` and by the C API's entry.
* ``chib_run`` / ``chib_ais_run`` on one driver, ``_run_items``: OpenMP over items (a
  test vector and a repeat), one scratch block per thread, one random stream per item, so
  results do not depend on the number of threads.  ``chib_combine`` averages the repeats of each vector in P.

The loops themselves are in cyrbm/_kernels/chib.c and chib_t.h.
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
#: largest |weight| the tables take: e^w must be finite in the kernel's float type
MAX_WEIGHT_F32 = 80.0
MAX_WEIGHT_F64 = 700.0


cdef inline Py_ssize_t _pad32(Py_ssize_t n) noexcept nogil:
    return ((n + 31) // 32) * 32


cdef inline double _exp(double w) noexcept nogil:
    """e^w through vmath's exp of non-positive arguments (1 / e^-w for w > 0)."""
    return cyrbm_exp_neg(w) if w <= 0.0 else 1.0 / cyrbm_exp_neg(-w)


cdef inline Py_ssize_t _period(double wmax, double budget) noexcept nogil:
    """Blocks between rescalings: a lane's product moves by at most 2^(wmax log2 e) per
    block, so after K blocks it stays within 2^(+-budget)."""
    cdef double k
    if wmax <= 0.0:
        return 1 << 20
    k = budget / (wmax * _LOG2E)
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


cdef char *_work(chib_buffers *B, Py_ssize_t S, int nt, size_t *stride) noexcept nogil:
    """One scratch block per thread (64-byte aligned strides); NULL when memory runs out."""
    cdef cyrbm_chib_work W
    cdef size_t nbytes = cyrbm_chib_layout(&B.m, S, 4 if B.float32 else 8, NULL, &W)
    stride[0] = (nbytes + 127) & ~(<size_t> 63)
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
    """The one driver of the items (chib_run, chib_ais_run): OpenMP over items, item t on
    the test vector vec[t] (a row of v, n x D) with stream streams[t], one scratch block
    per thread, so results do not depend on the number of threads."""
    cdef int nt = cap_threads(n_threads, n_items)
    cdef size_t stride
    cdef char *block
    cdef char *w
    cdef Py_ssize_t t
    if n_items <= 0:
        return 0
    block = _work(B, 1 if J.ais else J.S, nt, &stride)
    if block == NULL:
        return -1
    for t in prange(n_items, num_threads=nt, schedule='static', chunksize=1):
        w = <char *> ((<uintptr_t> block + 63) & ~(<uintptr_t> 63)) + threadid() * stride
        if J.ais:
            k_chib_ais(B.float32, &B.m, v, vec, t, t + 1, J.betas, J.n_betas, J.base_q,
                       refresh_every, streams, J.out1, w)
        else:
            k_chib_items(B.float32, &B.m, v, vec, t, t + 1, J.S, J.tilde_backward,
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


# ---------------------------------------------------------------------------------------
# A DBN whose bottom layer has Gaussian visible units (MS09 Sec. 5.2), or whose top layer
# has lateral weights (a semi-restricted top above either bottom): the same two
# estimators and the variational bound's samples, on a typed driver in float64 (scalar
# loops, compiled once: no vector code, so the bits depend on no kernel variant).
#
# RBM1 (binary): ln p(v | h1) = sum_i v_i u_i - softplus(u_i), u = b1 + W1 h1, and
# Q(h1 | v) = sigma(c1 + W1^T v).  A chain keeps u in place of the residual, and
# p1 = sigma(u), so that the likelihood's change when unit j turns on is
#     (W1^T v)_j - sum_i ln(1 + p1_i expm1(w_ij))
# (+ sum_i ln(1 + p1_i expm1(-w_ij)) when it turns off), by the same blocks of
# logarithms as the top's term below.
#
# RBM1 (Gaussian): p(v | h1) = N(b1 + s (W1 h1), s^2), Q(h1 | v) = sigma(c1 + W1^T (v / s)),
# a = (v - b1) / s.  The top layer enters only through
#     ln P*(h1) = b2.h1 + h1^T L h1 / 2 + sum_k softplus(c2 + W2^T h1)_k
# (L symmetric with a zero diagonal, absent for an RBM top).  A chain keeps the residual
# r = a - W1 h1, x2 = c2 + W2^T h1 and l = L h1; a flip of unit j moves them by one
# column of W1, one row of W2 and one column of L, O(D + H2 + H1) per site.  It keeps
# p2 = sigma(x2) too, so that the top's change when unit j turns on,
#     sum_k softplus(x2_k + w_jk) - softplus(x2_k) = sum_k ln(1 + p2_k expm1(w_jk)),
# (and -sum_k ln(1 + p2_k expm1(-w_jk)) when it turns off) costs one logarithm per block
# of DELTA_BLOCK factors rather than two softplus per k; each factor lies in
# [exp(-|w|), exp(|w|)], so a block cannot overflow while |w| <= DELTA_MAX_W (past it, one
# logarithm per factor).

#: factors per logarithm in _g_delta, and the largest |w| of W2 for which blocks are safe
#: (DELTA_BLOCK * DELTA_MAX_W < 709, the exponent where a double overflows)
DELTA_BLOCK = 16
DELTA_MAX_W = 40.0


cdef struct gdbn_model:
    Py_ssize_t D, H1, H2
    bint binary            # RBM1's visible units: binary (else Gaussian)
    const double *E1on     # H1 x D: expm1(W1^T) (binary)
    const double *E1off    # H1 x D: expm1(-W1^T) (binary)
    Py_ssize_t block1      # factors per logarithm of the binary likelihood's term
    const double *W1T      # H1 x D: the columns of W1
    const double *n1       # H1: ||W1_j||^2
    const double *b1       # D
    const double *s        # D (Gaussian)
    const double *c1       # H1: Q's biases
    const double *W2       # H1 x H2
    const double *b2       # H1
    const double *c2       # H2
    const double *L        # H1 x H1 or NULL
    const double *E2on     # H1 x H2: expm1(W2)
    const double *E2off    # H1 x H2: expm1(-W2)
    Py_ssize_t block       # factors per logarithm in _g_delta
    double lnorm           # sum_i ln s_i + D ln sqrt(2 pi)


cdef struct gdbn_state:
    uint8_t *h
    double *r              # Gaussian: the residual a - W1 h1; binary: u = b1 + W1 h1
    double *x2
    double *l
    double *p2             # sigma(x2)
    double *p1             # sigma(u) (binary; else NULL)
    const double *vw       # (W1^T v)_j of the test vector (binary; else NULL)
    Py_ssize_t since


cdef inline size_t _g_state_doubles(const gdbn_model *M) noexcept nogil:
    return <size_t> (M.D + 2 * M.H2 + M.H1 + (M.D if M.binary else 0))


cdef inline gdbn_state _g_view(const gdbn_model *M, double *f, uint8_t *h,
                               const double *vw) noexcept nogil:
    cdef gdbn_state s
    s.h = h
    s.r = f
    s.x2 = f + M.D
    s.l = f + M.D + M.H2
    s.p2 = f + M.D + M.H2 + M.H1
    s.p1 = f + M.D + 2 * M.H2 + M.H1 if M.binary else NULL
    s.vw = vw
    s.since = 0
    return s


cdef inline void _g_copy(const gdbn_model *M, gdbn_state *dst,
                         const gdbn_state *src) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(M.H1):
        dst.h[i] = src.h[i]
    for i in range(M.D):
        dst.r[i] = src.r[i]
    for i in range(M.H2):
        dst.x2[i] = src.x2[i]
        dst.p2[i] = src.p2[i]
    for i in range(M.H1):
        dst.l[i] = src.l[i]
    if M.binary:
        for i in range(M.D):
            dst.p1[i] = src.p1[i]
    dst.since = src.since


cdef inline void _g_refresh(const gdbn_model *M, gdbn_state *s, const double *a) noexcept nogil:
    """r = a - W1 h1 (binary: u = b1 + W1 h1 and p1 = sigma(u)), x2 = c2 + W2^T h1,
    l = L h1, exactly (units in ascending order)."""
    cdef Py_ssize_t i, j
    cdef const double *w
    cdef double sg1 = 1.0 if M.binary else -1.0
    for i in range(M.D):
        s.r[i] = M.b1[i] if M.binary else a[i]
    for i in range(M.H2):
        s.x2[i] = M.c2[i]
    for i in range(M.H1):
        s.l[i] = 0.0
    for j in range(M.H1):
        if not s.h[j]:
            continue
        w = M.W1T + j * M.D
        for i in range(M.D):
            s.r[i] += sg1 * w[i]
        w = M.W2 + j * M.H2
        for i in range(M.H2):
            s.x2[i] += w[i]
        if M.L != NULL:
            w = M.L + j * M.H1
            for i in range(M.H1):
                s.l[i] += w[i]
    for i in range(M.H2):
        s.p2[i] = cyrbm_sigmoid(s.x2[i])
    if M.binary:
        for i in range(M.D):
            s.p1[i] = cyrbm_sigmoid(s.r[i])
    s.since = 0


cdef inline void _g_flip(const gdbn_model *M, gdbn_state *s, Py_ssize_t j, int on) noexcept nogil:
    cdef Py_ssize_t i
    cdef double sg = 1.0 if on else -1.0
    cdef double sr = sg if M.binary else -sg
    cdef const double *w = M.W1T + j * M.D
    s.h[j] = <uint8_t> on
    for i in range(M.D):
        s.r[i] += sr * w[i]
    if M.binary:
        for i in range(M.D):
            s.p1[i] = cyrbm_sigmoid(s.r[i])
    w = M.W2 + j * M.H2
    for i in range(M.H2):
        s.x2[i] += sg * w[i]
        s.p2[i] = cyrbm_sigmoid(s.x2[i])
    if M.L != NULL:
        w = M.L + j * M.H1
        for i in range(M.H1):
            s.l[i] += sg * w[i]


cdef inline double _g_log_blocks(const double *p, const double *e, Py_ssize_t n,
                                 Py_ssize_t block) noexcept nogil:
    """sum_k ln(1 + p_k e_k) as the logarithms of products over blocks of ``block``."""
    cdef Py_ssize_t i, k0 = 0, k1
    cdef double t = 0.0, prod
    while k0 < n:
        k1 = k0 + block
        if k1 > n:
            k1 = n
        prod = 1.0
        for i in range(k0, k1):
            prod *= 1.0 + p[i] * e[i]
        t += log(prod)
        k0 = k1
    return t


cdef inline double _g_delta(const gdbn_model *M, const gdbn_state *s, Py_ssize_t j) noexcept nogil:
    """ln p(v, h1 with h_j = 1) - ln p(v, h1 with h_j = 0), h2 summed out: the Gaussian
    likelihood's W1_j.r -+ ||W1_j||^2 / 2 (r with unit j as it is; binary: (W1^T v)_j and
    the blocks of 1 + p1_i expm1(+-w_ij), see the comment above), b2_j + (L h1)_j, and
    sum_k softplus(x2_k with j on) - softplus(x2_k with j off), as the logarithms of
    products of 1 + p2_k expm1(+-w_jk) over blocks of k (see the comment above)."""
    cdef Py_ssize_t i
    cdef const double *w = M.W1T + j * M.D
    cdef double d = 0.0, t
    cdef bint on = s.h[j] != 0
    if M.binary:
        t = _g_log_blocks(s.p1, (M.E1off if on else M.E1on) + j * M.D, M.D, M.block1)
        d = s.vw[j] + (t if on else -t)
    else:
        for i in range(M.D):
            d += w[i] * s.r[i]
        d += 0.5 * M.n1[j] if on else -0.5 * M.n1[j]
    t = _g_log_blocks(s.p2, (M.E2off if on else M.E2on) + j * M.H2, M.H2, M.block)
    d += (-t if on else t) + M.b2[j]
    if M.L != NULL:
        d += s.l[j]
    return d


cdef inline double _g_log_lik(const gdbn_model *M, const gdbn_state *s,
                              const double *a) noexcept nogil:
    """ln p(v | h1) = -||r||^2 / 2 - sum ln s - D ln sqrt(2 pi); binary: sum_i v_i u_i -
    softplus(u_i) (a = v)."""
    cdef Py_ssize_t i
    cdef double q = 0.0
    if M.binary:
        for i in range(M.D):
            q += a[i] * s.r[i] - cyrbm_softplus(s.r[i])
        return q
    for i in range(M.D):
        q += s.r[i] * s.r[i]
    return -0.5 * q - M.lnorm


cdef inline double _g_log_top(const gdbn_model *M, const gdbn_state *s) noexcept nogil:
    """ln P*(h1) = b2.h1 + h1^T L h1 / 2 + sum_k softplus(x2_k)."""
    cdef Py_ssize_t i
    cdef double b = 0.0, c = 0.0
    for i in range(M.H1):
        if s.h[i]:
            b += M.b2[i] + (0.5 * s.l[i] if M.L != NULL else 0.0)
    for i in range(M.H2):
        c += cyrbm_softplus(s.x2[i])
    return b + c


cdef inline void _g_inputs(const gdbn_model *M, const double *v, double *a,
                           double *x, double *vw) noexcept nogil:
    """a = (v - b1) / s and Q's log-odds x = c1 + W1^T (v / s) (RBM1's p(h1 | v), i
    ascending); binary: a = v, vw = W1^T v and x = c1 + vw."""
    cdef Py_ssize_t i, j
    cdef const double *w
    cdef double acc
    if M.binary:
        for i in range(M.D):
            a[i] = v[i]
        for j in range(M.H1):
            w = M.W1T + j * M.D
            acc = 0.0
            for i in range(M.D):
                acc += w[i] * v[i]
            vw[j] = acc
            x[j] = acc + M.c1[j]
        return
    for i in range(M.D):
        a[i] = (v[i] - M.b1[i]) / M.s[i]
    for j in range(M.H1):
        w = M.W1T + j * M.D
        acc = 0.0
        for i in range(M.D):
            acc += w[i] * (v[i] / M.s[i])
        x[j] = acc + M.c1[j]


cdef inline double _g_draw_q(const gdbn_model *M, const double *x, uint8_t *h,
                             cyrbm_rng *rng) noexcept nogil:
    """h ~ Q (unit j on when a uniform < sigma(x_j), j ascending); returns ln Q(h | v)."""
    cdef Py_ssize_t j
    cdef double lq = 0.0
    for j in range(M.H1):
        h[j] = 1 if cyrbm_rng_uniform(rng) < cyrbm_sigmoid(x[j]) else 0
        lq += (x[j] if h[j] else 0.0) - cyrbm_softplus(x[j])
    return lq


cdef inline void _g_sweep(const gdbn_model *M, gdbn_state *s, const double *x, double beta,
                          bint backward, cyrbm_rng *rng, double *lp, double *lq) noexcept nogil:
    """One sweep of single-site Gibbs updates of h1 (ascending: T; descending: T-tilde) at
    inverse temperature beta: unit j on with probability sigma(beta d_j + (1 - beta) x_j),
    leaving Q^(1 - beta) p(v, h1)^beta invariant; one uniform per unit.  lp and lq
    follow the flips when not NULL."""
    cdef Py_ssize_t k, j
    cdef double d
    cdef int on
    for k in range(M.H1):
        j = M.H1 - 1 - k if backward else k
        d = _g_delta(M, s, j)
        on = 1 if cyrbm_rng_uniform(rng) < cyrbm_sigmoid(beta * d + (1.0 - beta) * x[j]) else 0
        if on != s.h[j]:
            _g_flip(M, s, j, on)
            if lp != NULL:
                lp[0] += d if on else -d
            if lq != NULL:
                lq[0] += x[j] if on else -x[j]
    s.since += 1


cdef inline double _g_log_t(const gdbn_model *M, const gdbn_state *s, gdbn_state *w,
                            const uint8_t *hstar) noexcept nogil:
    """ln T(h* <- h) of the forward sweep (MS09 Eq. 11): walking a copy from h to h*."""
    cdef Py_ssize_t j
    cdef double d, lt = 0.0
    _g_copy(M, w, s)
    for j in range(M.H1):
        d = _g_delta(M, w, j)
        lt -= cyrbm_softplus(-d if hstar[j] else d)
        if w.h[j] != hstar[j]:
            _g_flip(M, w, j, hstar[j])
    return lt


cdef inline void _g_chib_item(const gdbn_model *M, const double *v, Py_ssize_t S,
                              bint tilde_backward, Py_ssize_t refresh, cyrbm_rng *rng,
                              double *work, uint8_t *hwork, double *lpstar,
                              double *logphat) noexcept nogil:
    """The estimator of MS09 (Figure 1) for one test vector, as cyrbm_chib_items: h* by a
    draw of Q and hill-climbing; s ~ U{1..S}; h(s) ~ T-tilde(. <- h*); T forward to S,
    T-tilde backward to 1; ln P*(v, h*) and ln((1/S) sum_s T(h* <- h(s))) out.
    Random numbers: H1 for Q, one for s, H1 per sweep."""
    cdef size_t n = _g_state_doubles(M)
    cdef double *a = work
    cdef double *x = work + M.D
    cdef double *vw = x + M.H1
    cdef double *logt = vw + M.H1
    cdef double *f = logt + S + 1
    cdef uint8_t *hstar = hwork
    cdef gdbn_state cur = _g_view(M, f, hwork + M.H1, vw)
    cdef gdbn_state sav = _g_view(M, f + n, hwork + 2 * M.H1, vw)
    cdef gdbn_state wk = _g_view(M, f + 2 * n, hwork + 3 * M.H1, vw)
    cdef Py_ssize_t j, t, s, p
    cdef int want, changed
    cdef double d, mx, sm
    _g_inputs(M, v, a, x, vw)
    _g_draw_q(M, x, cur.h, rng)
    _g_refresh(M, &cur, a)
    for p in range(10000):                  # climb to a local mode (strict ascent)
        changed = 0
        for j in range(M.H1):
            d = _g_delta(M, &cur, j)
            want = (d >= 0.0) if cur.h[j] else (d > 0.0)
            if want != cur.h[j]:
                _g_flip(M, &cur, j, want)
                changed = 1
        if not changed:
            break
        if refresh > 0 and (p + 1) % refresh == 0:
            _g_refresh(M, &cur, a)
    _g_refresh(M, &cur, a)
    for j in range(M.H1):
        hstar[j] = cur.h[j]
    lpstar[0] = _g_log_lik(M, &cur, a) + _g_log_top(M, &cur)
    s = 1 + <Py_ssize_t> (cyrbm_rng_uniform(rng) * <double> S)
    if s > S:
        s = S
    _g_sweep(M, &cur, x, 1.0, tilde_backward, rng, NULL, NULL)
    logt[s] = _g_log_t(M, &cur, &wk, hstar)
    _g_copy(M, &sav, &cur)
    t = s - 1
    while t >= 1:
        if refresh > 0 and cur.since >= refresh:
            _g_refresh(M, &cur, a)
        _g_sweep(M, &cur, x, 1.0, tilde_backward, rng, NULL, NULL)
        logt[t] = _g_log_t(M, &cur, &wk, hstar)
        t -= 1
    _g_copy(M, &cur, &sav)
    for t in range(s + 1, S + 1):
        if refresh > 0 and cur.since >= refresh:
            _g_refresh(M, &cur, a)
        _g_sweep(M, &cur, x, 1.0, False, rng, NULL, NULL)
        logt[t] = _g_log_t(M, &cur, &wk, hstar)
    mx = -INFINITY
    for t in range(1, S + 1):
        if logt[t] > mx:
            mx = logt[t]
    sm = 0.0
    for t in range(1, S + 1):
        sm += exp(logt[t] - mx)
    logphat[0] = mx + log(sm / <double> S)


cdef inline double _g_ais_item(const gdbn_model *M, const double *v, const double *betas,
                               Py_ssize_t nb, bint base_q, Py_ssize_t refresh, cyrbm_rng *rng,
                               double *work, uint8_t *hwork) noexcept nogil:
    """Per-vector AIS over h1 (as cyrbm_chib_ais): from Q(h1 | v) (or the uniform
    distribution) through Q^(1 - beta_k) p(v, h1)^beta_k, one forward sweep per
    intermediate beta; returns ln w = sum_k (beta_k - beta_{k-1}) (ln p(v, h_{k-1})
    - ln Q(h_{k-1} | v)), with ln p(v, h1) = ln p(v | h1) + ln P*(h1)."""
    cdef double *a = work
    cdef double *x = work + M.D
    cdef double *vw = x + M.H1
    cdef gdbn_state cur = _g_view(M, vw + M.H1, hwork, vw)
    cdef Py_ssize_t j, k
    cdef double lp, lq, lw = 0.0
    _g_inputs(M, v, a, x, vw)
    if not base_q:
        for j in range(M.H1):
            x[j] = 0.0
    lq = _g_draw_q(M, x, cur.h, rng)
    _g_refresh(M, &cur, a)
    lp = _g_log_lik(M, &cur, a) + _g_log_top(M, &cur)
    for k in range(1, nb):
        lw += (betas[k] - betas[k - 1]) * (lp - lq)
        if k == nb - 1:
            break
        if refresh > 0 and cur.since >= refresh:
            _g_refresh(M, &cur, a)
            lp = _g_log_lik(M, &cur, a) + _g_log_top(M, &cur)
            lq = 0.0
            for j in range(M.H1):
                lq += (x[j] if cur.h[j] else 0.0) - cyrbm_softplus(x[j])
        _g_sweep(M, &cur, x, betas[k], False, rng, &lp, &lq)
    return lw


cdef inline void _g_bound_item(const gdbn_model *M, const double *v, Py_ssize_t samples,
                               cyrbm_rng *rng, double *work, uint8_t *hwork, double *lpv,
                               double *ltop, double *lq) noexcept nogil:
    """The variational bound's samples (SM08 Eq. 23) of one vector: h^(m) ~ Q(h1 | v) (H1
    uniforms each, in order), and for each ln p(v | h^(m)), ln P*(h^(m)), ln Q(h^(m) | v)."""
    cdef double *a = work
    cdef double *x = work + M.D
    cdef double *vw = x + M.H1
    cdef gdbn_state cur = _g_view(M, vw + M.H1, hwork, vw)
    cdef Py_ssize_t m
    _g_inputs(M, v, a, x, vw)
    for m in range(samples):
        lq[m] = _g_draw_q(M, x, cur.h, rng)
        _g_refresh(M, &cur, a)
        lpv[m] = _g_log_lik(M, &cur, a)
        ltop[m] = _g_log_top(M, &cur)


cdef struct _g_job:
    int kind              # 0: Chib-style estimator, 1: per-vector AIS, 2: the bound's samples
    Py_ssize_t S
    bint tilde_backward
    const double *betas
    Py_ssize_t n_betas
    bint base_q
    Py_ssize_t samples
    Py_ssize_t refresh
    double *out1
    double *out2
    double *out3


cdef int _g_run(const gdbn_model *M, const _g_job *J, const double *v, const int32_t *vec,
                Py_ssize_t n_items, cyrbm_rng *streams, int n_threads) noexcept nogil:
    """The one driver of the scalar model's items: OpenMP over items, item t on the
    test vector vec[t] (a row of v) with stream streams[t] and its own scratch (malloc'd
    per item), so results do not depend on the number of threads."""
    cdef int nt = cap_threads(n_threads, n_items)
    cdef Py_ssize_t t, nd, nh
    cdef double *w
    cdef uint8_t *hw
    cdef int failed = 0
    if n_items <= 0:
        return 0
    nd = M.D + 2 * M.H1 + (J.S + 1 if J.kind == 0 else 0) + 3 * <Py_ssize_t> _g_state_doubles(M)
    nh = 4 * M.H1
    for t in prange(n_items, num_threads=nt, schedule='static', chunksize=1):
        w = <double *> malloc(nd * sizeof(double))
        hw = <uint8_t *> malloc(nh)
        if w == NULL or hw == NULL:
            failed += 1
        elif J.kind == 0:
            _g_chib_item(M, v + <Py_ssize_t> vec[t] * M.D, J.S, J.tilde_backward, J.refresh,
                         streams + t, w, hw, J.out1 + t, J.out2 + t)
        elif J.kind == 1:
            J.out1[t] = _g_ais_item(M, v + <Py_ssize_t> vec[t] * M.D, J.betas, J.n_betas,
                                    J.base_q, J.refresh, streams + t, w, hw)
        else:
            _g_bound_item(M, v + <Py_ssize_t> vec[t] * M.D, J.samples, streams + t, w, hw,
                          J.out1 + t * J.samples, J.out2 + t * J.samples,
                          J.out3 + t * J.samples)
        free(w)
        free(hw)
    return -1 if failed else 0


cdef class ScalarChibModel:
    """A two-layer DBN laid out for ``_g_run``, in float64: a Gaussian bottom layer (MS09
    Sec. 5.2), or a binary one under a top with lateral weights.

    Parameters: RBM1's W1 (D x H1), b1, c1 and sigma (D; None for binary visible units),
    the top layer's W2 (H1 x H2), b2 (H1), c2 (H2) and its lateral weights L (H1 x H1,
    symmetric, zero diagonal) or None.  The methods ``estimate`` and ``ais`` take the
    arguments of :class:`ChibModel`'s (v: rows as float64), so cyrbm.chib runs either model.
    """
    cdef gdbn_model m
    cdef object _keep
    cdef readonly Py_ssize_t D, H1, H2
    cdef readonly bint float32

    @property
    def delta_block(self):
        """Factors of the top's flip term per logarithm (DELTA_BLOCK, or 1 when some
        |W2| exceeds DELTA_MAX_W)."""
        return self.m.block

    @property
    def binary(self):
        """Whether RBM1's visible units are binary (else Gaussian)."""
        return bool(self.m.binary)

    def __init__(self, W1, b1, c1, sigma, W2, b2, c2, L=None):
        f = lambda x: np.ascontiguousarray(x, dtype=np.float64)
        binary = sigma is None
        if binary:
            sigma = np.ones(np.shape(b1))
        W1, b1, c1, sigma, W2, b2, c2 = (f(x) for x in (W1, b1, c1, sigma, W2, b2, c2))
        D, H1 = W1.shape
        H2 = W2.shape[1]
        if (W2.shape[0] != H1 or b1.shape != (D,) or sigma.shape != (D,) or c1.shape != (H1,)
                or b2.shape != (H1,) or c2.shape != (H2,) or min(D, H1, H2) < 1
                or (L is not None and np.shape(L) != (H1, H1))):
            raise ValueError("the two layers' parameters have inconsistent shapes.")
        W1T = f(W1.T)
        n1 = np.sum(W1T * W1T, axis=1)
        L = None if L is None else f(L)
        E2on, E2off = np.expm1(W2), np.expm1(-W2)
        # the binary likelihood's factors (tiny placeholders for a Gaussian bottom)
        E1on, E1off = (np.expm1(W1T), np.expm1(-W1T)) if binary else (np.zeros((1, 1)),) * 2
        self._keep = (W1T, n1, b1, sigma, c1, W2, b2, c2, L, E2on, E2off, E1on, E1off)
        self.D, self.H1, self.H2, self.float32 = D, H1, H2, False
        cdef double[::1] pn1 = n1, pb1 = b1, ps = sigma, pc1 = c1, pb2 = b2, pc2 = c2
        cdef double[:, ::1] pW1T = W1T, pW2 = W2, pE2on = E2on, pE2off = E2off
        cdef double[:, ::1] pE1on = E1on, pE1off = E1off
        cdef double[:, ::1] pL
        self.m.binary = binary
        self.m.E1on = &pE1on[0, 0]
        self.m.E1off = &pE1off[0, 0]
        self.m.block1 = DELTA_BLOCK if float(np.max(np.abs(W1))) <= DELTA_MAX_W else 1
        self.m.D = D
        self.m.H1 = H1
        self.m.H2 = H2
        self.m.W1T = &pW1T[0, 0]
        self.m.n1 = &pn1[0]
        self.m.b1 = &pb1[0]
        self.m.s = &ps[0]
        self.m.c1 = &pc1[0]
        self.m.W2 = &pW2[0, 0]
        self.m.b2 = &pb2[0]
        self.m.c2 = &pc2[0]
        self.m.E2on = &pE2on[0, 0]
        self.m.E2off = &pE2off[0, 0]
        self.m.block = DELTA_BLOCK if float(np.max(np.abs(W2))) <= DELTA_MAX_W else 1
        self.m.L = NULL
        if L is not None:
            pL = L
            self.m.L = &pL[0, 0]
        self.m.lnorm = 0.0 if binary else (float(np.sum(np.log(sigma)))
                                           + D * 0.5 * float(np.log(2.0 * np.pi)))

    def _items(self, v, vec, streams):
        return _checked_items(v, np.float64, self.D, vec, streams)

    cdef _go(self, _g_job *J, v, vec, uint64_t[:, ::1] streams, int n_threads):
        cdef const double[:, ::1] vv = v
        cdef const int32_t[::1] ix = vec
        cdef Py_ssize_t n = ix.shape[0]
        cdef int status = 0
        if n == 0:
            return
        cyrbm_stop_watch_begin()
        with nogil:
            status = _g_run(&self.m, J, &vv[0, 0], &ix[0], n, <cyrbm_rng *> &streams[0, 0],
                            n_threads)
        if cyrbm_stop_watch_end():
            PyErr_CheckSignals()
            raise KeyboardInterrupt
        if status != 0:
            raise MemoryError("no memory for the chains' scratch.")

    def estimate(self, v, vec, Py_ssize_t steps, uint64_t[:, ::1] streams, int n_threads=1,
                 Py_ssize_t refresh_every=10, bint tilde_backward=True):
        """The Chib-style estimator for items vec (rows of v), streams (INOUT, one per
        item): (ln p(v, h*) = ln p(v | h*) + ln P*(h*), ln p-hat(h* | v)) per item."""
        if steps < 1:
            raise ValueError("steps must be at least 1.")
        v, vec = self._items(v, vec, np.asarray(streams))
        lp, ph = np.empty(vec.shape[0]), np.empty(vec.shape[0])
        cdef double[::1] a = lp, b = ph
        cdef _g_job J
        J.kind = 0
        J.S = steps
        J.tilde_backward = tilde_backward
        J.refresh = refresh_every
        if vec.shape[0]:
            J.out1 = &a[0]
            J.out2 = &b[0]
        self._go(&J, v, vec, streams, n_threads)
        return lp, ph

    def ais(self, v, vec, const double[::1] betas, uint64_t[:, ::1] streams, int n_threads=1,
            Py_ssize_t refresh_every=10, bint base_q=True):
        """Per-vector AIS over h1 from Q(h1 | v) (base_q) or the uniform distribution: the
        log weight of each item."""
        if betas.shape[0] < 2:
            raise ValueError("an annealing schedule needs at least two betas.")
        v, vec = self._items(v, vec, np.asarray(streams))
        lw = np.empty(vec.shape[0])
        cdef double[::1] a = lw
        cdef _g_job J
        J.kind = 1
        J.S = 0
        J.betas = &betas[0]
        J.n_betas = betas.shape[0]
        J.base_q = base_q
        J.refresh = refresh_every
        if vec.shape[0]:
            J.out1 = &a[0]
        self._go(&J, v, vec, streams, n_threads)
        return lw

    def bound_samples(self, v, Py_ssize_t samples, uint64_t[:, ::1] streams, int n_threads=1):
        """For each row of v (stream streams[i]) ``samples`` draws h ~ Q(h1 | v): (ln p(v | h),
        ln P*(h), ln Q(h | v)), each (n, samples)."""
        if samples < 1:
            raise ValueError("samples must be at least 1.")
        vec = np.arange(np.shape(v)[0], dtype=np.int32)
        v, vec = self._items(v, vec, np.asarray(streams))
        out = [np.empty((vec.shape[0], samples)) for _ in range(3)]
        cdef double[:, ::1] o1 = out[0], o2 = out[1], o3 = out[2]
        cdef _g_job J
        J.kind = 2
        J.samples = samples
        J.S = 0
        if vec.shape[0]:
            J.out1 = &o1[0, 0]
            J.out2 = &o2[0, 0]
            J.out3 = &o3[0, 0]
        self._go(&J, v, vec, streams, n_threads)
        return tuple(out)
