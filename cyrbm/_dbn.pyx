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
threads).  The states are 0/1, so each block's products are binary products on padded
copies of the weights (cyrbm._gibbs.padded_product_path, the kernels of CD training): row
sums over the active units of sparse rows, sums of subset tables of four units for dense
ones, chosen by each row's own count (rows_product), in a fixed order, without BLAS: a
vector's terms depend only on it, its stream and the model.  Its elementwise terms are cyrbm_bern_row
(bound_t.h: the draws, softplus sums and entropies), and the blocks are shared among
OpenMP threads with a static schedule.  Vector n draws only from its own stream
(streams[n]), layer by layer and sample by sample in a fixed order, so results do not
depend on the number of threads.
"""
import numpy as np

from cython.parallel cimport prange, parallel
from cython cimport floating
from libc.stdint cimport uint8_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

from cyrbm._omp cimport cap_threads
from cyrbm._random cimport cyrbm_rng, check_streams
from libc.stdint cimport int32_t
from cyrbm._ckernels cimport k_bern_row, k_transpose, cyrbm_padded_ld
from cyrbm._gibbs cimport active_lists, padded_product_path, SOURCE_PADDED



cdef inline void bern_row(const floating *a, Py_ssize_t n, cyrbm_rng *rng, uint8_t *h,
                          int full, double *sums) noexcept nogil:
    k_bern_row(a, n, rng, h, full, sums)


cdef struct Padded:
    # the weights of a DBN as the binary products read them: rows of whole 64-byte lines
    # (cyrbm_padded_ld), for layer l: Wp (n_l x ld[l+1]), WTp (n_{l+1} x ld[l], below
    # the top only), bp (ld[l]), cp (ld[l+1]); zero in the padding
    void *Wp[CYRBM_MAX_LAYERS]
    void *WTp[CYRBM_MAX_LAYERS]
    void *bp[CYRBM_MAX_LAYERS]
    void *cp[CYRBM_MAX_LAYERS]
    Py_ssize_t ld[CYRBM_MAX_LAYERS + 1]


cdef inline char *align64(char *p) noexcept nogil:
    return p + (64 - <size_t> p % 64) % 64


cdef struct Work:
    # scratch of rows_product for a block of R rows (sizes up to maxw, rows of maxld)
    uint8_t *codes        # R x ceil(maxw / 4): subset codes
    void *Y               # R x maxld: the products of a mixed block, rows gathered
    uint8_t *state        # R x maxw: the states of its dense rows, gathered
    int32_t *idx          # R x maxw: the lists of its sparse rows, gathered
    int32_t *cnt          # R
    int32_t *pos          # R: where each gathered row goes


cdef void rows_product(floating *X, Py_ssize_t ld, const floating *bias, const floating *S,
                       Py_ssize_t n_src, Py_ssize_t n_cols, const uint8_t *state,
                       const int32_t *idx, const int32_t *cnt, Py_ssize_t n_rows,
                       Work *w) noexcept nogil:
    """X[r, :] = bias + state[r, :] @ S for 0/1 rows (S: n_src x n_cols; X, S and bias
    padded to ld), one thread.  Each row takes row sums over its active units, or subset
    tables of four units when it has more than 0.9 ceil(n_src / 4) of them, by its own
    count alone: a row's values do not depend on the other rows of its block."""
    cdef Py_ssize_t G = (n_src + 3) // 4, nd = 0, r, k, j
    cdef floating *Y = <floating *> w.Y
    for r in range(n_rows):
        nd += 10 * cnt[r] > 9 * G
    if nd == 0 or nd == n_rows:
        padded_product_path(X, ld, bias, S, ld, NULL, 0, SOURCE_PADDED, n_src, n_cols, state,
                            idx, cnt, w.codes, NULL, n_rows, False, 1, 1 if nd else 0)
        return
    k = 0
    j = nd
    for r in range(n_rows):
        if 10 * cnt[r] > 9 * G:
            memcpy(w.state + k * n_src, state + r * n_src, n_src)
            w.pos[k] = <int32_t> r
            k += 1
        else:
            memcpy(w.idx + (j - nd) * n_src, idx + r * n_src, cnt[r] * sizeof(int32_t))
            w.cnt[j - nd] = cnt[r]
            w.pos[j] = <int32_t> r
            j += 1
    padded_product_path(Y, ld, bias, S, ld, NULL, 0, SOURCE_PADDED, n_src, n_cols, w.state,
                        NULL, NULL, w.codes, NULL, nd, False, 1, 1)
    padded_product_path(Y + nd * ld, ld, bias, S, ld, NULL, 0, SOURCE_PADDED, n_src, n_cols,
                        NULL, w.idx, w.cnt, w.codes, NULL, n_rows - nd, False, 1, 0)
    for k in range(n_rows):
        memcpy(X + w.pos[k] * ld, Y + k * ld, ld * sizeof(floating))


cdef void bound_block(const floating **W, const floating **vb, const Padded *P,
                      const Py_ssize_t *sz, Py_ssize_t L, const uint8_t *V, Py_ssize_t n0,
                      Py_ssize_t n1, Py_ssize_t M, cyrbm_rng *streams, char *buf,
                      double *lpv, double *lrest, double *lq, double *ent) noexcept nogil:
    """The four terms for vectors n0 <= n < n1, each with its M samples (see the module
    docstring).  buf: 64-byte aligned scratch of block_scratch(...) bytes."""
    cdef Py_ssize_t nb = n1 - n0, R = nb * M, D = sz[0]
    cdef Py_ssize_t i, m, r, k, l, n, maxld = 0, maxw = 0
    cdef double s[3]
    cdef double acc
    cdef const uint8_t *Vb = V + n0 * D
    cdef uint8_t *H[CYRBM_MAX_LAYERS]              # H[l]: R x sz[l] 0/1, l = 1 .. L-1
    cdef int32_t *idx[CYRBM_MAX_LAYERS]            # idx[l], cnt[l]: their active units
    cdef int32_t *cnt[CYRBM_MAX_LAYERS]            # (l = 0: the data, nb rows)
    cdef floating *X
    cdef Work w
    cdef char *p = buf
    for l in range(L + 1):
        maxld = max(maxld, P.ld[l])
        maxw = max(maxw, sz[l])
    X = <floating *> p
    p = align64(p + R * maxld * sizeof(floating))
    w.Y = p
    p = align64(p + R * maxld * sizeof(floating))
    w.codes = <uint8_t *> p
    p = align64(p + R * ((maxw + 3) // 4))
    w.state = <uint8_t *> p
    p = align64(p + R * maxw)
    w.idx = <int32_t *> p
    p = align64(p + R * maxw * sizeof(int32_t))
    w.cnt = <int32_t *> p
    p = align64(p + R * sizeof(int32_t))
    w.pos = <int32_t *> p
    p = align64(p + R * sizeof(int32_t))
    for l in range(L):
        if l > 0:
            H[l] = <uint8_t *> p
            p = align64(p + R * sz[l])
        idx[l] = <int32_t *> p
        p = align64(p + (nb if l == 0 else R) * sz[l] * sizeof(int32_t))
        cnt[l] = <int32_t *> p
        p = align64(p + R * sizeof(int32_t))
    # Q(h_1 | v): one product per vector, M draws (SM08 Eq. 5 as the recognition model)
    active_lists(Vb, nb, D, idx[0], cnt[0], 1)
    rows_product(X, P.ld[1], <floating *> P.cp[0], <floating *> P.Wp[0], D, sz[1], Vb, idx[0],
                 cnt[0], nb, &w)
    for i in range(nb):
        n = n0 + i
        for m in range(M):
            r = i * M + m
            bern_row(X + i * P.ld[1], sz[1], &streams[n], H[1] + r * sz[1],
                     3, s)
            lq[n * M + m] = s[0] - s[1]
            ent[n * M + m] = s[1] - s[2]
            lrest[n * M + m] = 0.0
    active_lists(H[1], R, sz[1], idx[1], cnt[1], 1)
    # layers 1 .. L-2: draw h_{l+1} ~ Q(. | h_l), then the directed term ln p(h_l | h_{l+1})
    for l in range(1, L - 1):
        rows_product(X, P.ld[l + 1], <floating *> P.cp[l], <floating *> P.Wp[l], sz[l],
                     sz[l + 1], H[l], idx[l], cnt[l], R, &w)
        for r in range(R):
            n = n0 + r // M
            bern_row(X + r * P.ld[l + 1], sz[l + 1], &streams[n],
                     H[l + 1] + r * sz[l + 1], 3, s)
            lq[n0 * M + r] += s[0] - s[1]
            ent[n0 * M + r] += s[1] - s[2]
        active_lists(H[l + 1], R, sz[l + 1], idx[l + 1], cnt[l + 1], 1)
        rows_product(X, P.ld[l], <floating *> P.bp[l], <floating *> P.WTp[l], sz[l + 1], sz[l],
                     H[l + 1], idx[l + 1], cnt[l + 1], R, &w)
        for r in range(R):
            bern_row(X + r * P.ld[l], sz[l], NULL, H[l] + r * sz[l], 1, s)
            lrest[n0 * M + r] += s[0] - s[1]
    # ln p(v | h_1) (SM08 Eq. 6)
    rows_product(X, P.ld[0], <floating *> P.bp[0], <floating *> P.WTp[0], sz[1], D, H[1],
                 idx[1], cnt[1], R, &w)
    for r in range(R):
        bern_row(X + r * P.ld[0], D, NULL, <uint8_t *> Vb + (r // M) * D, 1,
                 s)
        lpv[n0 * M + r] = s[0] - s[1]
    # ln p*_top(h_{L-1}) = b.h + sum_j softplus(c_j + (W^T h)_j)  (SM08 Eq. 2)
    rows_product(X, P.ld[L], <floating *> P.cp[L - 1], <floating *> P.Wp[L - 1], sz[L - 1],
                 sz[L], H[L - 1], idx[L - 1], cnt[L - 1], R, &w)
    for r in range(R):
        bern_row(X + r * P.ld[L], sz[L], NULL, NULL, 0, s)
        acc = 0.0
        for k in range(cnt[L - 1][r]):
            acc += vb[L - 1][idx[L - 1][r * sz[L - 1] + k]]
        lrest[n0 * M + r] += acc + s[1]


cdef Py_ssize_t block_scratch(const Py_ssize_t *sz, const Py_ssize_t *ld, Py_ssize_t L,
                              Py_ssize_t bv, Py_ssize_t M, Py_ssize_t itemsize) noexcept nogil:
    """Bytes of bound_block's scratch for blocks of bv vectors (64 of slack per buffer)."""
    cdef Py_ssize_t R = bv * M, maxld = 0, maxw = 0, l, total
    for l in range(L + 1):
        maxld = max(maxld, ld[l])
        maxw = max(maxw, sz[l])
    total = 2 * R * maxld * itemsize + R * ((maxw + 3) // 4) + R * maxw * 5 + R * 8 + 6 * 64
    for l in range(L):
        total += (R * sz[l] + 64 if l > 0 else 0)
        total += (bv if l == 0 else R) * sz[l] * 4 + R * 4 + 128
    return total + 64


cdef int pad_weights(const floating **W, const floating **vb, const floating **hb,
                     const Py_ssize_t *sz, Py_ssize_t L, Padded *P) noexcept nogil:
    """Fill P with padded copies (malloc'd, 64-byte aligned; free_padded frees them):
    0, or -1 when memory runs out."""
    cdef Py_ssize_t l, i, f = sizeof(floating)
    cdef char *q
    memset(P, 0, sizeof(Padded))
    for l in range(L + 1):
        P.ld[l] = cyrbm_padded_ld(sz[l], f)
    for l in range(L):
        P.Wp[l] = malloc(sz[l] * P.ld[l + 1] * f + 64)
        P.bp[l] = malloc(P.ld[l] * f + 64)
        P.cp[l] = malloc(P.ld[l + 1] * f + 64)
        if l < L - 1:
            P.WTp[l] = malloc(sz[l + 1] * P.ld[l] * f + 64)
        if (P.Wp[l] == NULL or P.bp[l] == NULL or P.cp[l] == NULL
                or (l < L - 1 and P.WTp[l] == NULL)):
            return -1
        q = align64(<char *> P.Wp[l])
        memset(q, 0, sz[l] * P.ld[l + 1] * f)
        for i in range(sz[l]):
            memcpy(q + i * P.ld[l + 1] * f, W[l] + i * sz[l + 1], sz[l + 1] * f)
        q = align64(<char *> P.bp[l])
        memset(q, 0, P.ld[l] * f)
        memcpy(q, vb[l], sz[l] * f)
        q = align64(<char *> P.cp[l])
        memset(q, 0, P.ld[l + 1] * f)
        memcpy(q, hb[l], sz[l + 1] * f)
        if l < L - 1:
            q = align64(<char *> P.WTp[l])
            memset(q, 0, sz[l + 1] * P.ld[l] * f)
            k_transpose(<floating *> q, P.ld[l], W[l], sz[l + 1], sz[l], sz[l + 1])
    return 0


cdef void free_padded(Padded *P, Py_ssize_t L) noexcept nogil:
    cdef Py_ssize_t l
    for l in range(L):
        free(P.Wp[l])
        free(P.WTp[l])
        free(P.bp[l])
        free(P.cp[l])


cdef Padded aligned_view(Padded *P, Py_ssize_t L) noexcept nogil:
    """P with every pointer moved to its 64-byte boundary (what bound_block reads)."""
    cdef Padded A = P[0]
    cdef Py_ssize_t l
    for l in range(L):
        A.Wp[l] = align64(<char *> P.Wp[l])
        A.bp[l] = align64(<char *> P.bp[l])
        A.cp[l] = align64(<char *> P.cp[l])
        if P.WTp[l] != NULL:
            A.WTp[l] = align64(<char *> P.WTp[l])
    return A


cdef int bound_terms_raw(const floating **W, const floating **vb, const floating **hb,
                         const Py_ssize_t *sizes, Py_ssize_t L, const uint8_t *V,
                         Py_ssize_t N, Py_ssize_t M, cyrbm_rng *streams, Py_ssize_t block,
                         double *lpv, double *lrest, double *lq, double *ent,
                         int n_threads) noexcept nogil:
    """The bound's terms on raw buffers (see the module docstring and capi.pxd): 0, -1
    when memory runs out, -2 for invalid sizes."""
    cdef Py_ssize_t l, b, n0, n1, per, bv, n_blocks
    cdef char *buf
    cdef int nt, status
    cdef int failed[1]
    cdef Padded P
    cdef Padded A
    if L < 2 or L > CYRBM_MAX_LAYERS - 1 or N < 0 or M < 1 or block < 1:
        return -2
    for l in range(L + 1):
        if sizes[l] < 1 or sizes[l] > 2147483647 // 4:
            return -2
    if N == 0:
        return 0
    bv = max(1, block // M)                          # vectors per block
    n_blocks = (N + bv - 1) // bv
    nt = cap_threads(n_threads, n_blocks)
    status = pad_weights(W, vb, hb, sizes, L, &P)
    if status != 0:
        free_padded(&P, L)
        return -1
    A = aligned_view(&P, L)
    per = block_scratch(sizes, P.ld, L, bv, M, sizeof(floating))
    failed[0] = 0
    with parallel(num_threads=nt):
        buf = <char *> malloc(per)
        try:
            for b in prange(n_blocks, schedule='static'):   # every thread takes part
                if buf == NULL:
                    failed[0] = 1
                else:
                    n0 = b * bv
                    n1 = min(N, n0 + bv)
                    bound_block(W, vb, &A, sizes, L, V, n0, n1, M, streams,
                                align64(buf), lpv, lrest, lq, ent)
        finally:
            free(buf)
    free_padded(&P, L)
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
    if V.shape[1] != sz[0]:
        raise ValueError("data do not fit the layers")
    check_streams(streams, N, "streams")
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
    do not depend on ``n_threads``.
    """
    if Ws[0].dtype == np.float32:
        return _bound_terms[float](Ws, vbs, hbs, V, M, streams, n_threads, block, 0.0)
    return _bound_terms[double](Ws, vbs, hbs, V, M, streams, n_threads, block, 0.0)


# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._ckernels cimport cyrbm_kt
from cyrbm._dispatch cimport kernel_table
from cyrbm._dispatch import use_kernels, kernels_in_use
cyrbm_kt = kernel_table()
