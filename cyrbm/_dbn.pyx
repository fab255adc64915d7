# cython: language_level=3
"""The terms of the DBN variational bound (Salakhutdinov & Murray 2008, Eq. 19-24), per
data vector and per sample of the recognition model Q, in compiled code.

A DBN of L >= 2 layers (RBMs 0 .. L-1, bottom first; h_0 = v) has the directed
conditionals p(h_l | h_{l+1}) = sigma(W_l h_{l+1} + b_l) for l < L-1 and the top RBM
(W_{L-1}, b_{L-1}, c_{L-1}) over (h_{L-1}, h_L); its factorial recognition model is
Q(h_{l+1} | h_l) = sigma(W_l^T h_l + c_l).  For each data vector v and each of its M
samples h = (h_1, .., h_{L-1}) ~ Q(. | v) this module returns

    lpv   ln p(v | h_1)                                   (layer 0, SM08 Eq. 6)
    lrest sum_{0<l<L-1} ln p(h_l | h_{l+1}) + ln p*_top(h_{L-1})   (h_L summed out)
    lq    ln Q(h | v) = sum_l ln Q(h_{l+1} | h_l)
    ent   H(Q(h_1 | v)) + sum_{0<l<L-1} H(Q(h_{l+1} | h_l))  (each given the sample)

so that ln p*(v, h) = lpv + lrest (Eq. 22), and the bound is the mean of lpv + lrest + ent
(or of lpv + lrest - lq) minus ln Z of the top RBM.

Work.  Vectors are taken in blocks of a fixed number of rows (``block``, whatever the
threads); each block's products are dense single-threaded BLAS calls (scipy's
cython_blas; the caller holds BLAS to one thread) and its elementwise terms are
cyrbm_bern_row (bound_t.h: the draws, softplus sums and entropies), and the blocks are
shared among OpenMP threads with a static schedule.  Vector n draws only from its own
stream (streams[n]), layer by layer and sample by sample in a fixed order, so results do
not depend on the number of threads.
"""
import numpy as np

from cython.parallel cimport prange, parallel
from cython cimport floating
from libc.stdint cimport uint8_t, uint64_t
from libc.stdlib cimport malloc, free
from scipy.linalg.cython_blas cimport sgemm, dgemm

from cyrbm._omp cimport cap_threads
from cyrbm._random cimport cyrbm_rng
from cyrbm._ckernels cimport cyrbm_bern_row_f32, cyrbm_bern_row_f64



cdef inline void gemm_rows(bint trans_b, int m, int n, int k, const floating *A, int lda,
                           const floating *B, int ldb, floating *C, int ldc) noexcept nogil:
    """Row-major C (m x n) = A (m x k) B, with B stored k x n, or (trans_b) C = A B^T
    with B stored n x k.  (Column-major BLAS computes C^T = B^T A^T.)"""
    cdef char ta = b'T' if trans_b else b'N'
    cdef char tb = b'N'
    cdef float one_f = 1.0, zero_f = 0.0
    cdef double one_d = 1.0, zero_d = 0.0
    if floating is float:
        sgemm(&ta, &tb, &n, &m, &k, &one_f, <float *> B, &ldb, <float *> A, &lda,
              &zero_f, <float *> C, &ldc)
    else:
        dgemm(&ta, &tb, &n, &m, &k, &one_d, <double *> B, &ldb, <double *> A, &lda,
              &zero_d, <double *> C, &ldc)


cdef inline void bern_row(const floating *a, const floating *bias, Py_ssize_t n,
                          cyrbm_rng *rng, floating *h, int full, double *sums) noexcept nogil:
    if floating is float:
        cyrbm_bern_row_f32(a, bias, n, rng, h, full, sums)
    else:
        cyrbm_bern_row_f64(a, bias, n, rng, h, full, sums)


cdef void bound_block(const floating **W, const floating **vb, const floating **hb,
                      const Py_ssize_t *sz, Py_ssize_t L, const uint8_t *V, Py_ssize_t n0,
                      Py_ssize_t n1, Py_ssize_t M, cyrbm_rng *streams, floating *buf,
                      Py_ssize_t maxw, double *lpv, double *lrest, double *lq,
                      double *ent) noexcept nogil:
    """The four terms for vectors n0 <= n < n1, each with its M samples (see the module
    docstring).  buf: scratch of block_scratch(...) elements."""
    cdef Py_ssize_t nb = n1 - n0, R = nb * M, D = sz[0]
    cdef Py_ssize_t i, m, r, j, l, n
    cdef double s[3]
    cdef double acc
    cdef floating *vf = buf
    cdef floating *a1 = vf + nb * D
    cdef floating *X = a1 + nb * sz[1]
    cdef floating *H[CYRBM_MAX_LAYERS]             # H[l]: R x sz[l], l = 1 .. L-1
    cdef floating *p = X + R * maxw
    cdef const floating *hl
    for l in range(1, L):
        H[l] = p
        p += R * sz[l]
    for i in range(nb * D):
        vf[i] = V[n0 * D + i]
    # Q(h_1 | v): one product per vector, M draws (SM08 Eq. 5 as the recognition model)
    gemm_rows(False, <int> nb, <int> sz[1], <int> D, vf, <int> D, W[0], <int> sz[1], a1,
              <int> sz[1])
    for i in range(nb):
        n = n0 + i
        for m in range(M):
            r = i * M + m
            bern_row(a1 + i * sz[1], hb[0], sz[1], &streams[n], H[1] + r * sz[1], 3, s)
            lq[n * M + m] = s[0] - s[1]
            ent[n * M + m] = s[1] - s[2]
            lrest[n * M + m] = 0.0
    # layers 1 .. L-2: draw h_{l+1} ~ Q(. | h_l), then the directed term ln p(h_l | h_{l+1})
    for l in range(1, L - 1):
        gemm_rows(False, <int> R, <int> sz[l + 1], <int> sz[l], H[l], <int> sz[l], W[l],
                  <int> sz[l + 1], X, <int> sz[l + 1])
        for r in range(R):
            n = n0 + r // M
            bern_row(X + r * sz[l + 1], hb[l], sz[l + 1], &streams[n], H[l + 1] + r * sz[l + 1],
                     3, s)
            lq[n0 * M + r] += s[0] - s[1]
            ent[n0 * M + r] += s[1] - s[2]
        gemm_rows(True, <int> R, <int> sz[l], <int> sz[l + 1], H[l + 1], <int> sz[l + 1], W[l],
                  <int> sz[l + 1], X, <int> sz[l])
        for r in range(R):
            bern_row(X + r * sz[l], vb[l], sz[l], NULL, H[l] + r * sz[l], 1, s)
            lrest[n0 * M + r] += s[0] - s[1]
    # ln p(v | h_1) (SM08 Eq. 6)
    gemm_rows(True, <int> R, <int> D, <int> sz[1], H[1], <int> sz[1], W[0], <int> sz[1], X,
              <int> D)
    for r in range(R):
        bern_row(X + r * D, vb[0], D, NULL, vf + (r // M) * D, 1, s)
        lpv[n0 * M + r] = s[0] - s[1]
    # ln p*_top(h_{L-1}) = b.h + sum_j softplus(c_j + (W^T h)_j)  (SM08 Eq. 2)
    gemm_rows(False, <int> R, <int> sz[L], <int> sz[L - 1], H[L - 1], <int> sz[L - 1], W[L - 1],
              <int> sz[L], X, <int> sz[L])
    for r in range(R):
        bern_row(X + r * sz[L], hb[L - 1], sz[L], NULL, NULL, 0, s)
        acc = 0.0
        hl = H[L - 1] + r * sz[L - 1]
        for j in range(sz[L - 1]):
            if hl[j] != 0:
                acc += vb[L - 1][j]
        lrest[n0 * M + r] += acc + s[1]


cdef int bound_terms_raw(const floating **W, const floating **vb, const floating **hb,
                         const Py_ssize_t *sizes, Py_ssize_t L, const uint8_t *V,
                         Py_ssize_t N, Py_ssize_t M, cyrbm_rng *streams, Py_ssize_t block,
                         double *lpv, double *lrest, double *lq, double *ent,
                         int n_threads) noexcept nogil:
    """The bound's terms on raw buffers (see the module docstring and capi.pxd): 0, -1
    when memory runs out, -2 for invalid sizes."""
    cdef Py_ssize_t l, b, n0, n1, maxw = 0, per, bv, n_blocks
    cdef floating *buf
    cdef int nt
    cdef int failed[1]
    if L < 2 or L > CYRBM_MAX_LAYERS - 1 or N < 0 or M < 1 or block < 1:
        return -2
    for l in range(L + 1):
        if sizes[l] < 1 or sizes[l] > 2147483647 // 4:
            return -2
        maxw = max(maxw, sizes[l])
    if N == 0:
        return 0
    bv = max(1, block // M)                          # vectors per block
    n_blocks = (N + bv - 1) // bv
    nt = cap_threads(n_threads, n_blocks)
    per = bv * (sizes[0] + sizes[1]) + bv * M * maxw
    for l in range(1, L):
        per += bv * M * sizes[l]
    failed[0] = 0
    with parallel(num_threads=nt):
        buf = <floating *> malloc(per * sizeof(floating))
        try:
            for b in prange(n_blocks, schedule='static'):   # every thread takes part
                if buf == NULL:
                    failed[0] = 1
                else:
                    n0 = b * bv
                    n1 = min(N, n0 + bv)
                    bound_block(W, vb, hb, sizes, L, V, n0, n1, M, streams, buf, maxw,
                                lpv, lrest, lq, ent)
        finally:
            free(buf)
    return -1 if failed[0] else 0


cdef object _bound_terms(list Ws, list vbs, list hbs, const uint8_t[:, ::1] V, Py_ssize_t M,
                         uint64_t[:, ::1] streams, int n_threads, Py_ssize_t block,
                         floating dummy):
    cdef Py_ssize_t L = len(Ws), N = V.shape[0], l
    cdef Py_ssize_t sz[CYRBM_MAX_LAYERS + 1]
    cdef const floating *W[CYRBM_MAX_LAYERS]
    cdef const floating *vb[CYRBM_MAX_LAYERS]
    cdef const floating *hb[CYRBM_MAX_LAYERS]
    cdef const floating[:, ::1] w2
    cdef const floating[::1] w1
    cdef int status
    if L < 2 or L > CYRBM_MAX_LAYERS - 1:
        raise ValueError(f"the bound kernel takes 2 to {CYRBM_MAX_LAYERS - 1} layers")
    for l in range(L):
        w2 = Ws[l]
        W[l] = &w2[0, 0]
        sz[l] = w2.shape[0]
        sz[l + 1] = w2.shape[1]
        w1 = vbs[l]
        vb[l] = &w1[0]
        w1 = hbs[l]
        hb[l] = &w1[0]
    if V.shape[1] != sz[0] or streams.shape[0] != N or streams.shape[1] != 4:
        raise ValueError("data or streams do not fit the layers")
    lpv = np.zeros((N, M))
    lrest = np.zeros((N, M))
    lq = np.zeros((N, M))
    ent = np.zeros((N, M))
    cdef double[:, ::1] o_lpv = lpv, o_lrest = lrest, o_lq = lq, o_ent = ent
    if N == 0:
        return lpv, lrest, lq, ent
    with nogil:
        status = bound_terms_raw(W, vb, hb, sz, L, &V[0, 0], N, M,
                                 <cyrbm_rng *> &streams[0, 0], block, &o_lpv[0, 0],
                                 &o_lrest[0, 0], &o_lq[0, 0], &o_ent[0, 0], n_threads)
    if status == -1:
        raise MemoryError("not enough memory for the bound's scratch buffers")
    if status != 0:
        raise ValueError("invalid sizes for the bound kernel")
    return lpv, lrest, lq, ent


def bound_terms(list Ws, list vbs, list hbs, const uint8_t[:, ::1] V, Py_ssize_t M,
                uint64_t[:, ::1] streams, int n_threads=1, Py_ssize_t block=512):
    """(lpv, lrest, lq, ent), each (N, M) float64: see the module docstring.

    Ws, vbs, hbs: the L >= 2 layers' W (n_l x n_{l+1}), b (n_l) and c (n_{l+1}), C order,
    all float32 or all float64.  V: (N, n_0) 0/1.  streams: (N, 4) uint64, one per vector
    (advanced in place).  block: rows (vectors x samples) per block, fixed so that results
    do not depend on ``n_threads``.  The caller must hold BLAS to one thread.
    """
    if Ws[0].dtype == np.float32:
        return _bound_terms[float](Ws, vbs, hbs, V, M, streams, n_threads, block, 0.0)
    return _bound_terms[double](Ws, vbs, hbs, V, M, streams, n_threads, block, 0.0)


from cyrbm._ckernels cimport cyrbm_gibbs_kernels_init, cyrbm_gibbs_kernels_isa


def use_kernels(name=None):
    """Choose this module's kernel variant (see cyrbm._gibbs.use_kernels); every variant
    gives the same bits."""
    b = (name or "").encode()
    if cyrbm_gibbs_kernels_init(b) != 0:
        raise ValueError(f"kernel variant {name!r} is not in this build or this CPU cannot "
                         f"run it.")
    return cyrbm_gibbs_kernels_isa().decode()


def kernels_in_use():
    """The kernel variant this module runs."""
    return cyrbm_gibbs_kernels_isa().decode()


use_kernels(__import__("os").environ.get("CYRBM_FORCE_ISA") or None)
