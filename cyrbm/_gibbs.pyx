# cython: language_level=3
"""Compiled kernels of a binary RBM: conditionals, sampling, CD/PCD statistics.

Notation follows Salakhutdinov & Murray (2008), Eq. 1-7: ``W`` is n_visible x n_hidden,
``vbias`` (b) and ``hbias`` (a).  p(h_j = 1 | v) = sigma(sum_i W_ij v_i + a_j) (Eq. 5),
p(v_i = 1 | h) = sigma(sum_j W_ij h_j + b_i) (Eq. 6).

Because states are 0/1, ``v @ W`` is the sum of the rows of ``W`` picked by the active
units; the products below use that (include/cyrbm/kernels.h), column block by column
block, so a block of weights stays in cache while the whole batch is processed.

Determinism: every output element is computed by one thread in a fixed order, and each
chain (row) draws only from its own random stream, so results are bit-identical for any
number of threads.
"""
import numpy as np

from cython.parallel cimport prange, parallel
from libc.stdint cimport uint8_t, int32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from libc.math cimport isfinite
from cython cimport floating

from cyrbm._random cimport cyrbm_rng, cyrbm_rng_uniform

# Rows processed per call of the chunked kernels (bounds scratch memory).
cdef Py_ssize_t CHUNK_ROWS = 2048


cdef void add_rows(floating *out, const floating *W, Py_ssize_t ldw,
                   const int32_t *rows, Py_ssize_t n_rows, Py_ssize_t n) noexcept nogil:
    """out[0:n] += sum_r W[rows[r], 0:n] (in order r = 0, 1, ...)."""
    if floating is float:
        cyrbm_add_rows_f32(out, W, ldw, rows, n_rows, n)
    else:
        cyrbm_add_rows_f64(out, W, ldw, rows, n_rows, n)


cdef void sub_rows(floating *out, const floating *W, Py_ssize_t ldw,
                   const int32_t *rows, Py_ssize_t n_rows, Py_ssize_t n) noexcept nogil:
    """out[0:n] -= sum_r W[rows[r], 0:n]."""
    if floating is float:
        cyrbm_sub_rows_f32(out, W, ldw, rows, n_rows, n)
    else:
        cyrbm_sub_rows_f64(out, W, ldw, rows, n_rows, n)


cdef inline floating sigmoid(floating x) noexcept nogil:
    if floating is float:
        return cyrbm_sigmoidf(x)
    else:
        return cyrbm_sigmoid(x)


cdef inline int cap_threads(int n_threads, Py_ssize_t work) noexcept nogil:
    if n_threads < 1:
        n_threads = 1
    if work < n_threads:
        return <int> (work if work > 0 else 1)
    return n_threads


cdef void active_lists(const uint8_t *state, Py_ssize_t n_rows, Py_ssize_t n_units,
                       int32_t *idx, int32_t *cnt, int n_threads) noexcept nogil:
    """idx[r, 0:cnt[r]] = the units with state[r, u] != 0, ascending."""
    cdef Py_ssize_t r, u
    cdef int32_t c
    for r in prange(n_rows, num_threads=cap_threads(n_threads, n_rows // 64),
                    schedule='static'):
        c = 0
        for u in range(n_units):
            if state[r * n_units + u]:
                idx[r * n_units + c] = <int32_t> u
                c = c + 1
        cnt[r] = c


cdef inline Py_ssize_t block_width(Py_ssize_t n_in, Py_ssize_t n_out, Py_ssize_t itemsize,
                                   int n_threads) noexcept nogil:
    """Columns per block: a multiple of 64 (the register tile of kernels.h) such that a
    block of W (n_in x width) sits in about 256 KB of cache, with enough blocks to keep
    every thread busy."""
    cdef Py_ssize_t width = (256 * 1024) // (n_in * itemsize + 1)
    width = (width // 64) * 64
    if width < 64:
        width = 64
    if width > 1024:
        width = 1024
    while width > 64 and (n_out + width - 1) // width < 2 * n_threads:
        width = width - 64
    return width


cdef void binary_product(const floating *W, Py_ssize_t n_in, Py_ssize_t n_out,
                         const int32_t *idx, Py_ssize_t ld_idx, const int32_t *cnt,
                         Py_ssize_t n_rows, const floating *bias, floating *out,
                         int n_threads) noexcept nogil:
    """out[r, :] = bias + sum of W[i, :] over the active inputs i of row r.

    W is n_in x n_out (C order), out is n_rows x n_out.  Parallel over column blocks.
    """
    cdef Py_ssize_t width = block_width(n_in, n_out, sizeof(floating), n_threads)
    cdef Py_ssize_t n_blocks = (n_out + width - 1) // width
    cdef Py_ssize_t b, r, j, j0, j1
    cdef floating *o
    for b in prange(n_blocks, num_threads=cap_threads(n_threads, n_blocks),
                    schedule='dynamic', chunksize=1):
        j0 = b * width
        j1 = j0 + width
        if j1 > n_out:
            j1 = n_out
        for r in range(n_rows):
            o = out + r * n_out + j0
            for j in range(j1 - j0):
                o[j] = bias[j0 + j]
            add_rows(o, W + j0, n_out, idx + r * ld_idx, cnt[r], j1 - j0)


cdef void sample_bernoulli(floating *act, Py_ssize_t n_rows, Py_ssize_t n_units,
                           cyrbm_rng *streams, uint8_t *state, int32_t *idx, int32_t *cnt,
                           int n_threads) noexcept nogil:
    """Turn activations into probabilities in place and draw states from them.

    Row r uses stream r; unit u of row r is on when uniform < sigma(act[r, u]).
    """
    cdef Py_ssize_t r, u
    cdef int32_t c
    cdef floating p
    cdef floating *a
    for r in prange(n_rows, num_threads=cap_threads(n_threads, n_rows // 8),
                    schedule='static'):
        a = act + r * n_units
        c = 0
        for u in range(n_units):
            p = sigmoid(a[u])
            a[u] = p
            if cyrbm_rng_uniform(&streams[r]) < p:
                state[r * n_units + u] = 1
                idx[r * n_units + c] = <int32_t> u
                c = c + 1
            else:
                state[r * n_units + u] = 0
        cnt[r] = c


cdef void sigmoid_inplace(floating *act, Py_ssize_t n, int n_threads) noexcept nogil:
    cdef Py_ssize_t k
    for k in prange(n, num_threads=cap_threads(n_threads, n // 4096), schedule='static'):
        act[k] = sigmoid(act[k])


cdef void transpose(const floating *A, Py_ssize_t n_rows, Py_ssize_t n_cols, floating *AT,
                    int n_threads) noexcept nogil:
    """AT (n_cols x n_rows) = A.T, in 32 x 32 tiles, parallel over tile rows of A."""
    cdef Py_ssize_t n_tiles = (n_rows + 31) // 32
    cdef Py_ssize_t t, i, j, i1, j0, j1
    for t in prange(n_tiles, num_threads=cap_threads(n_threads, n_tiles // 4),
                    schedule='static'):
        i1 = (t + 1) * 32
        if i1 > n_rows:
            i1 = n_rows
        j0 = 0
        while j0 < n_cols:
            j1 = j0 + 32
            if j1 > n_cols:
                j1 = n_cols
            for i in range(t * 32, i1):
                for j in range(j0, j1):
                    AT[j * n_rows + i] = A[i * n_cols + j]
            j0 = j1


def _check_streams(uint64_t[:, ::1] streams, Py_ssize_t n_rows):
    if streams.shape[0] < n_rows or streams.shape[1] != 4:
        raise ValueError(f"need {n_rows} random streams of 4 words, got shape "
                         f"{tuple(streams.shape)[:2]}")


def transposed(const floating[:, ::1] W, int n_threads=1):
    """W.T as a new C-contiguous array (the layout the visible-side products read)."""
    out = np.empty((W.shape[1], W.shape[0]), dtype=np.float32 if floating is float else np.float64)
    cdef floating[:, ::1] o = out
    with nogil:
        transpose(&W[0, 0], W.shape[0], W.shape[1], &o[0, 0], n_threads)
    return out


def update_transposed(const floating[:, ::1] W, floating[:, ::1] WT, int n_threads=1):
    """Refresh WT = W.T in place."""
    with nogil:
        transpose(&W[0, 0], W.shape[0], W.shape[1], &WT[0, 0], n_threads)


def hidden_probs_binary(const floating[:, ::1] W, const floating[::1] hbias,
                        const uint8_t[:, ::1] v, int n_threads=1):
    """p(h = 1 | v) for 0/1 rows v (SM08 Eq. 5)."""
    cdef Py_ssize_t n = v.shape[0], D = W.shape[0], M = W.shape[1]
    out = np.empty((n, M), dtype=np.float32 if floating is float else np.float64)
    if n == 0:
        return out
    cdef floating[:, ::1] o = out
    cdef int32_t[:, ::1] idx = np.empty((n, D), dtype=np.int32)
    cdef int32_t[::1] cnt = np.empty(n, dtype=np.int32)
    with nogil:
        active_lists(&v[0, 0], n, D, &idx[0, 0], &cnt[0], n_threads)
        binary_product(&W[0, 0], D, M, &idx[0, 0], D, &cnt[0], n, &hbias[0], &o[0, 0],
                       n_threads)
        sigmoid_inplace(&o[0, 0], n * M, n_threads)
    return out


cdef int log_unnormalized_rows(const floating *W, const floating *vbias, const floating *hbias,
                               Py_ssize_t n_visible, Py_ssize_t n_hidden, const uint8_t *v,
                               Py_ssize_t n, double *out, int n_threads) noexcept nogil:
    """out[r] = ln p*(v_r) = b.v_r + sum_j softplus(a_j + sum_i W_ij v_ri) (SM08 Eq. 2).

    Accumulated in float64; rows in chunks of CHUNK_ROWS.  Returns 0, or -1 when scratch
    memory cannot be allocated.
    """
    cdef Py_ssize_t rows = n if n < CHUNK_ROWS else CHUNK_ROWS
    cdef Py_ssize_t start, m, r, j
    cdef double s
    cdef floating *act
    cdef int32_t *idx
    cdef int32_t *cnt
    if n <= 0:
        return 0
    act = <floating *> malloc(rows * n_hidden * sizeof(floating))
    idx = <int32_t *> malloc(rows * n_visible * sizeof(int32_t))
    cnt = <int32_t *> malloc(rows * sizeof(int32_t))
    if act == NULL or idx == NULL or cnt == NULL:
        free(act)
        free(idx)
        free(cnt)
        return -1
    start = 0
    while start < n:
        m = min(rows, n - start)
        active_lists(v + start * n_visible, m, n_visible, idx, cnt, n_threads)
        binary_product(W, n_visible, n_hidden, idx, n_visible, cnt, m, hbias, act, n_threads)
        for r in prange(m, num_threads=cap_threads(n_threads, m // 4), schedule='static'):
            s = 0.0
            for j in range(cnt[r]):
                s = s + vbias[idx[r * n_visible + j]]
            for j in range(n_hidden):
                s = s + cyrbm_softplus(act[r * n_hidden + j])
            out[start + r] = s
        start = start + m
    free(act)
    free(idx)
    free(cnt)
    return 0


def log_unnormalized(const floating[:, ::1] W, const floating[::1] vbias,
                     const floating[::1] hbias, const uint8_t[:, ::1] v, int n_threads=1):
    """ln p*(v) for each 0/1 row of ``v``, float64 (minus the free energy)."""
    cdef Py_ssize_t n = v.shape[0]
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    cdef int status = 0
    if n > 0:
        with nogil:
            status = log_unnormalized_rows(&W[0, 0], &vbias[0], &hbias[0], W.shape[0], W.shape[1],
                                           &v[0, 0], n, &o[0], n_threads)
    if status != 0:
        raise MemoryError("out of memory in log_unnormalized")
    return out


def pseudo_log_likelihood(const floating[:, ::1] W, const floating[::1] vbias,
                          const floating[::1] hbias, const uint8_t[:, ::1] v,
                          int n_threads=1):
    """sum_i ln p(v_i | v_{-i}) for each row, exactly (all bits, no sampling), float64.

    Flipping bit i changes the hidden activations by +-W[i, :], so each term costs
    O(n_hidden): ln p(v_i | v_-i) = -softplus(ln p*(v with i flipped) - ln p*(v)).
    """
    cdef Py_ssize_t n = v.shape[0], D = W.shape[0], M = W.shape[1]
    out = np.zeros(n, dtype=np.float64)
    cdef double[::1] o = out
    cdef Py_ssize_t r, i, j
    cdef double *act
    cdef double *sp
    cdef double base, delta, s, total, sign
    if n == 0:
        return out
    with nogil, parallel(num_threads=cap_threads(n_threads, n)):
        act = <double *> malloc(M * sizeof(double))
        sp = <double *> malloc(M * sizeof(double))
        try:
            for r in prange(n, schedule='static'):
                for j in range(M):
                    act[j] = hbias[j]
                for i in range(D):
                    if v[r, i]:
                        for j in range(M):
                            act[j] = act[j] + W[i, j]
                for j in range(M):
                    sp[j] = cyrbm_softplus(act[j])
                total = 0.0
                for i in range(D):
                    sign = 1.0 - 2.0 * v[r, i]
                    delta = sign * vbias[i]
                    for j in range(M):
                        delta = delta + cyrbm_softplus(act[j] + sign * W[i, j]) - sp[j]
                    total = total - cyrbm_softplus(delta)
                o[r] = total
        finally:
            free(act)
            free(sp)
    return out


cdef int gibbs_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                      Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, uint8_t *h,
                      Py_ssize_t n, int steps, cyrbm_rng *streams,
                      int n_threads) noexcept nogil:
    """``steps`` block-Gibbs sweeps h ~ p(h|v), v ~ p(v|h) (SM08 Eq. 5-6) on n chains.

    v (n x n_visible) is updated in place; h (n x n_hidden) receives the last hidden
    states; chain r draws from streams[r] only (advanced in place).  Returns 0, or -1
    when scratch memory cannot be allocated.
    """
    cdef Py_ssize_t rows = n if n < CHUNK_ROWS else CHUNK_ROWS
    cdef Py_ssize_t start, m
    cdef int t, status = 0
    cdef floating *WT
    cdef floating *act_h
    cdef floating *act_v
    cdef int32_t *vidx
    cdef int32_t *vcnt
    cdef int32_t *hidx
    cdef int32_t *hcnt
    if n <= 0 or steps <= 0:
        return 0
    WT = <floating *> malloc(n_visible * n_hidden * sizeof(floating))
    act_h = <floating *> malloc(rows * n_hidden * sizeof(floating))
    act_v = <floating *> malloc(rows * n_visible * sizeof(floating))
    vidx = <int32_t *> malloc(rows * n_visible * sizeof(int32_t))
    vcnt = <int32_t *> malloc(rows * sizeof(int32_t))
    hidx = <int32_t *> malloc(rows * n_hidden * sizeof(int32_t))
    hcnt = <int32_t *> malloc(rows * sizeof(int32_t))
    if (WT == NULL or act_h == NULL or act_v == NULL or vidx == NULL or vcnt == NULL
            or hidx == NULL or hcnt == NULL):
        status = -1
    else:
        transpose(W, n_visible, n_hidden, WT, n_threads)
        start = 0
        while start < n:
            m = min(rows, n - start)
            active_lists(v + start * n_visible, m, n_visible, vidx, vcnt, n_threads)
            for t in range(steps):
                binary_product(W, n_visible, n_hidden, vidx, n_visible, vcnt, m, hbias, act_h,
                               n_threads)
                sample_bernoulli(act_h, m, n_hidden, streams + start, h + start * n_hidden,
                                 hidx, hcnt, n_threads)
                binary_product(WT, n_hidden, n_visible, hidx, n_hidden, hcnt, m, vbias, act_v,
                               n_threads)
                sample_bernoulli(act_v, m, n_visible, streams + start, v + start * n_visible,
                                 vidx, vcnt, n_threads)
            start = start + m
    free(WT)
    free(act_h)
    free(act_v)
    free(vidx)
    free(vcnt)
    free(hidx)
    free(hcnt)
    return status


def gibbs_sample(const floating[:, ::1] W, const floating[::1] vbias,
                 const floating[::1] hbias, uint8_t[:, ::1] v, uint8_t[:, ::1] h, int steps,
                 uint64_t[:, ::1] streams, int n_threads=1):
    """Run ``steps`` block-Gibbs sweeps on every row of ``v`` (in place); ``h`` gets the
    last hidden states; row r uses stream r (see gibbs_sweeps)."""
    cdef Py_ssize_t n = v.shape[0]
    _check_streams(streams, n)
    if v.shape[1] != W.shape[0] or h.shape[0] != n or h.shape[1] != W.shape[1]:
        raise ValueError("v must be n x n_visible and h n x n_hidden")
    cdef int status = 0
    if n > 0 and steps > 0:
        with nogil:
            status = gibbs_sweeps(&W[0, 0], &vbias[0], &hbias[0], W.shape[0], W.shape[1],
                                  &v[0, 0], &h[0, 0], n, steps, <cyrbm_rng *> &streams[0, 0],
                                  n_threads)
    if status != 0:
        raise MemoryError("out of memory in gibbs_sample")


def cd_statistics(const floating[:, ::1] W, const floating[:, ::1] WT,
                  const floating[::1] vbias, const floating[::1] hbias,
                  const uint8_t[:, ::1] v_data, uint8_t[:, ::1] v_chain, bint persistent,
                  int k, uint64_t[:, ::1] streams,
                  floating[:, ::1] dW, floating[::1] dvbias, floating[::1] dhbias,
                  int n_threads=1):
    """Sums over a mini-batch of the CD-k / PCD-k gradient (SM08 Eq. 7; Hu & Yu Sec. 3).

    dW = sum_n v_n p(h | v_n)^T - sum_n v~_n p(h | v~_n)^T, likewise for the biases, where
    v~ is the visible state after k block-Gibbs sweeps: started at the data (CD-k,
    ``persistent`` false) or at the persistent chains ``v_chain`` (PCD-k, also called SML;
    ``v_chain`` is advanced in place).  For CD the final states are written to
    ``v_chain`` too, so callers can inspect them.  Chain n uses stream n.
    The sums are not divided by the batch size.
    """
    cdef Py_ssize_t B = v_data.shape[0], D = W.shape[0], M = W.shape[1]
    _check_streams(streams, B)
    if k < 1:
        raise ValueError("k must be at least 1")
    if v_chain.shape[0] != B or v_chain.shape[1] != D or v_data.shape[1] != D:
        raise ValueError("v_data and v_chain must both be batch x n_visible")
    dt = np.float32 if floating is float else np.float64
    cdef floating[:, ::1] ph0 = np.empty((B, M), dtype=dt)
    cdef floating[:, ::1] act_h = np.empty((B, M), dtype=dt)
    cdef floating[:, ::1] act_v = np.empty((B, D), dtype=dt)
    cdef uint8_t[:, ::1] h = np.empty((B, M), dtype=np.uint8)
    cdef int32_t[:, ::1] hidx = np.empty((B, M), dtype=np.int32)
    cdef int32_t[::1] hcnt = np.empty(B, dtype=np.int32)
    cdef int32_t[:, ::1] vidx = np.empty((B, D), dtype=np.int32)
    cdef int32_t[::1] vcnt = np.empty(B, dtype=np.int32)
    cdef int32_t[:, ::1] kidx = np.empty((B, D), dtype=np.int32)
    cdef int32_t[::1] kcnt = np.empty(B, dtype=np.int32)
    cdef int32_t[:, ::1] colpos = np.empty((D, B), dtype=np.int32)
    cdef int32_t[::1] npos = np.zeros(D, dtype=np.int32)
    cdef int32_t[:, ::1] colneg = np.empty((D, B), dtype=np.int32)
    cdef int32_t[::1] nneg = np.zeros(D, dtype=np.int32)
    cdef cyrbm_rng *st = <cyrbm_rng *> &streams[0, 0]
    cdef Py_ssize_t n, i, j, c
    cdef int t
    if B == 0:
        dW[:, :] = 0
        dvbias[:] = 0
        dhbias[:] = 0
        return
    with nogil:
        # positive phase: p(h | data)
        active_lists(&v_data[0, 0], B, D, &vidx[0, 0], &vcnt[0], n_threads)
        binary_product(&W[0, 0], D, M, &vidx[0, 0], D, &vcnt[0], B, &hbias[0],
                       &ph0[0, 0], n_threads)
        if persistent:
            active_lists(&v_chain[0, 0], B, D, &kidx[0, 0], &kcnt[0], n_threads)
            binary_product(&W[0, 0], D, M, &kidx[0, 0], D, &kcnt[0], B, &hbias[0],
                           &act_h[0, 0], n_threads)
            sigmoid_inplace(&ph0[0, 0], B * M, n_threads)
        else:
            memcpy(&act_h[0, 0], &ph0[0, 0], B * M * sizeof(floating))
            sigmoid_inplace(&ph0[0, 0], B * M, n_threads)
        # k block-Gibbs sweeps; act_h holds the current hidden activations
        for t in range(k):
            sample_bernoulli(&act_h[0, 0], B, M, st, &h[0, 0], &hidx[0, 0], &hcnt[0],
                             n_threads)
            binary_product(&WT[0, 0], M, D, &hidx[0, 0], M, &hcnt[0], B, &vbias[0],
                           &act_v[0, 0], n_threads)
            sample_bernoulli(&act_v[0, 0], B, D, st, &v_chain[0, 0], &kidx[0, 0],
                             &kcnt[0], n_threads)
            binary_product(&W[0, 0], D, M, &kidx[0, 0], D, &kcnt[0], B, &hbias[0],
                           &act_h[0, 0], n_threads)
        sigmoid_inplace(&act_h[0, 0], B * M, n_threads)   # p(h | v~)
        # column lists: which batch rows have visible unit i on, data and chains
        for n in range(B):
            for c in range(vcnt[n]):
                i = vidx[n, c]
                colpos[i, npos[i]] = <int32_t> n
                npos[i] += 1
            for c in range(kcnt[n]):
                i = kidx[n, c]
                colneg[i, nneg[i]] = <int32_t> n
                nneg[i] += 1
        for i in prange(D, num_threads=cap_threads(n_threads, D // 16), schedule='static'):
            for j in range(M):
                dW[i, j] = 0
            add_rows(&dW[i, 0], &ph0[0, 0], M, &colpos[i, 0], npos[i], M)
            sub_rows(&dW[i, 0], &act_h[0, 0], M, &colneg[i, 0], nneg[i], M)
            dvbias[i] = <floating> (npos[i] - nneg[i])
        for j in range(M):
            dhbias[j] = 0
        for n in range(B):
            for j in range(M):
                dhbias[j] = dhbias[j] + (ph0[n, j] - act_h[n, j])


def apply_update(floating[:, ::1] W, floating[:, ::1] WT, floating[::1] vbias,
                 floating[::1] hbias, const floating[:, ::1] dW,
                 const floating[::1] dvbias, const floating[::1] dhbias,
                 floating[:, ::1] vel_W, floating[::1] vel_vbias, floating[::1] vel_hbias,
                 double learning_rate, double momentum, double weight_decay,
                 double scale, int n_threads=1):
    """One momentum step: vel = momentum*vel + lr*(scale*grad - weight_decay*W); W += vel.

    Weight decay (L2) applies to W only.  WT is refreshed.  Returns False if any
    parameter became non-finite (the caller then restores its last good state).
    """
    cdef Py_ssize_t D = W.shape[0], M = W.shape[1], i, j
    cdef floating lr = <floating> learning_rate, mom = <floating> momentum
    cdef floating wd = <floating> weight_decay, sc = <floating> scale
    cdef floating x
    cdef int bad = 0
    cdef uint8_t[::1] row_bad = np.zeros(D, dtype=np.uint8)
    with nogil:
        for i in prange(D, num_threads=cap_threads(n_threads, D // 16), schedule='static'):
            for j in range(M):
                vel_W[i, j] = mom * vel_W[i, j] + lr * (sc * dW[i, j] - wd * W[i, j])
                W[i, j] = W[i, j] + vel_W[i, j]
            for j in range(M):
                if not isfinite(W[i, j]):
                    row_bad[i] = 1
                    break
        for i in range(D):
            vel_vbias[i] = mom * vel_vbias[i] + lr * sc * dvbias[i]
            vbias[i] = vbias[i] + vel_vbias[i]
            if row_bad[i] or not isfinite(vbias[i]):
                bad = 1
        for j in range(M):
            vel_hbias[j] = mom * vel_hbias[j] + lr * sc * dhbias[j]
            hbias[j] = hbias[j] + vel_hbias[j]
            if not isfinite(hbias[j]):
                bad = 1
        transpose(&W[0, 0], D, M, &WT[0, 0], n_threads)
    return not bad
