# cython: language_level=3
"""Compiled kernels of a binary RBM: conditionals, products, Bernoulli draws, free energies
and mode-hopping proposals (AMH); the CD/PCD step on them is in _cd.pyx.

Notation follows Salakhutdinov & Murray (2008), Eq. 1-7: ``W`` is n_visible x n_hidden,
``vbias`` (b) and ``hbias`` (a).  p(h_j = 1 | v) = sigma(sum_i W_ij v_i + a_j) (Eq. 5),
p(v_i = 1 | h) = sigma(sum_j W_ij h_j + b_i) (Eq. 6).

Because states are 0/1, ``v @ W`` is the sum of the rows of ``W`` picked by the active
units; the products below use that (cyrbm/_kernels/gibbs_t.h), column block by column
block, so a block of weights stays in cache while the whole batch is processed.

Determinism: every output element is computed by one thread in a fixed order, and each
chain (row) draws only from its own random stream, so results are bit-identical for any
number of threads.
"""
import numpy as np

from cython.parallel cimport prange, parallel
from cyrbm._omp cimport cap_threads
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free, realloc
from libc.string cimport memcpy
from libc.math cimport isfinite
from cython cimport floating

from cyrbm._random cimport cyrbm_rng, check_streams

# Rows processed per call of the chunked kernels (bounds scratch memory).
cdef Py_ssize_t CHUNK_ROWS = 2048


# the kernels run through the one dispatch table (cyrbm._dispatch); the variant switch is
# there, these names are kept for callers of this module's
from cyrbm._dispatch cimport kernel_table
from cyrbm._dispatch import use_kernels, kernels_in_use, kernels_built, kernels_runnable
cyrbm_kt = kernel_table()


cdef void add_rows(floating *out, const floating *W, Py_ssize_t ldw,
                   const int32_t *rows, Py_ssize_t n_rows, Py_ssize_t n) noexcept nogil:
    """out[0:n] += sum_r W[rows[r], 0:n] (in order r = 0, 1, ...)."""
    k_add_rows(out, W, ldw, rows, n_rows, n)


cdef inline floating sigmoid(floating x) noexcept nogil:
    if floating is float:
        return cyrbm_sigmoidf(x)
    else:
        return cyrbm_sigmoid(x)


cdef void active_lists(const uint8_t *state, Py_ssize_t n_rows, Py_ssize_t n_units,
                       int32_t *idx, int32_t *cnt, int n_threads) noexcept nogil:
    """idx[r, 0:cnt[r]] = the units with state[r, u] != 0, ascending (cyrbm_active_units)."""
    cdef Py_ssize_t r
    for r in prange(n_rows, num_threads=cap_threads(n_threads, n_rows // 8),
                    schedule='static'):
        cnt[r] = cyrbm_active_units(state + r * n_units, n_units, idx + r * n_units)


cdef inline Py_ssize_t block_width(Py_ssize_t n_in, Py_ssize_t n_out, Py_ssize_t itemsize,
                                   int n_threads) noexcept nogil:
    """Columns per block: a multiple of 64 (the register tile of gibbs_t.h) such that a
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


cdef void sigmoid_inplace(floating *act, Py_ssize_t n, int n_threads) noexcept nogil:
    """sigma in place on act[0:n]: the vector kernel (cyrbm_expit) on blocks of 4096, the
    scalar sigmoid of the same template on the last n % 64 bytes' worth (the same bits)."""
    cdef Py_ssize_t VL = 64 // sizeof(floating), n_vec = n // VL * VL, k, b
    cdef Py_ssize_t n_blocks = (n_vec + 4095) // 4096
    for b in prange(n_blocks, num_threads=cap_threads(n_threads, n_blocks), schedule='static'):
        k_expit(act + b * 4096, min(4096, n_vec - b * 4096))
    for k in range(n_vec, n):
        act[k] = sigmoid(act[k])


cdef void transpose(const floating *A, Py_ssize_t n_rows, Py_ssize_t n_cols, floating *AT,
                    int n_threads) noexcept nogil:
    """AT (n_cols x n_rows) = A.T: 8 x 8 register blocks (gibbs_t.h), parallel over
    blocks of 64 rows of A (so threads never share a cache line of AT)."""
    cdef Py_ssize_t n_blocks = (n_rows + 63) // 64
    cdef Py_ssize_t b, i0, i1
    for b in prange(n_blocks, num_threads=cap_threads(n_threads, n_blocks // 2),
                    schedule='static'):
        i0 = b * 64
        i1 = min(i0 + 64, n_rows)
        k_transpose(AT + i0, n_rows, A + i0 * n_cols, n_cols, i1 - i0, n_cols)


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
    return binary_inputs(W, hbias, v, n_threads, True)


def binary_inputs(const floating[:, ::1] W, const floating[::1] bias,
                  const uint8_t[:, ::1] v, int n_threads=1, bint sigmoid=False):
    """bias + v W for 0/1 rows v (W: n_in x n_out, C order): the inputs of the layer W
    maps v to (hidden inputs for W, visible ones for W.T), or sigma of them."""
    cdef Py_ssize_t n = v.shape[0], D = W.shape[0], M = W.shape[1]
    if v.shape[1] != D or bias.shape[0] != M:
        raise ValueError("binary_inputs: shapes of W, bias and v do not match.")
    out = np.empty((n, M), dtype=np.float32 if floating is float else np.float64)
    if n == 0:
        return out
    cdef floating[:, ::1] o = out
    cdef int32_t[:, ::1] idx = np.empty((n, D), dtype=np.int32)
    cdef int32_t[::1] cnt = np.empty(n, dtype=np.int32)
    with nogil:
        active_lists(&v[0, 0], n, D, &idx[0, 0], &cnt[0], n_threads)
        binary_product(&W[0, 0], D, M, &idx[0, 0], D, &cnt[0], n, &bias[0], &o[0, 0],
                       n_threads)
        if sigmoid:
            sigmoid_inplace(&o[0, 0], n * M, n_threads)
    return out


def amh_hops(const floating[:, ::1] W, const floating[::1] vbias, const floating[::1] hbias,
             proposal, uint8_t[:, ::1] chains, const int64_t[::1] rows,
             uint64_t[:, ::1] streams, double[:, ::1] terms=None, int n_threads=1):
    """One mode-hopping proposal (Hu & Yu Sec. 4, Eq. 6-7) for each chain in ``rows``
    (cyrbm/_kernels/modehop_t.h), from its own stream: ``chains`` (INOUT) rows of 0/1,
    ``streams`` (INOUT) one per chain, ``proposal`` = (A, AT, sp, logH, Hp), the mode
    set's float64 proposal kernels (cyrbm.training.modehop.ModeSet.update_proposal; A holds
    the draws' probabilities sigma(a_i), AT the a_i as columns); ``terms``
    (OUT, len(rows) x 8, or None) the logarithms of Eq. 6.  Chains in parallel; the
    result does not depend on ``n_threads``.  Returns the number accepted."""
    A_, AT_, sp_, logH_, Hp_ = proposal
    cdef const double[:, ::1] A = A_
    cdef const double[:, ::1] AT = AT_
    cdef const double[::1] sp = sp_
    cdef const double[:, ::1] logH = logH_
    cdef const double[:, ::1] Hp = Hp_
    cdef Py_ssize_t D = W.shape[0], M = W.shape[1], L = A.shape[0], n = rows.shape[0]
    cdef Py_ssize_t k, r
    if (A.shape[1] != D or AT.shape[0] != D or AT.shape[1] != L or sp.shape[0] != L
            or logH.shape[0] != L or logH.shape[1] != L or Hp.shape[0] != L
            or Hp.shape[1] != L or chains.shape[1] != D or vbias.shape[0] != D
            or hbias.shape[0] != M):
        raise ValueError("amh_hops: the shapes of the model, proposal and chains do not match.")
    check_streams(streams, chains.shape[0], "amh_hops: streams")
    if terms is not None and (terms.shape[0] != n or terms.shape[1] != 8):
        raise ValueError("amh_hops: terms must be len(rows) x 8.")
    for k in range(n):
        if rows[k] < 0 or rows[k] >= chains.shape[0]:
            raise ValueError("amh_hops: a row index is out of range.")
    if n == 0 or L < 2:
        return 0
    cdef size_t work_bytes = 32 * L + M * sizeof(floating) + 9 * D + 64
    cdef int nt = cap_threads(n_threads, n // 4)
    cdef int accepted = 0, bad = 0
    cdef void *work
    cdef double *tbase = &terms[0, 0] if terms is not None else NULL
    cdef double *tp
    with nogil, parallel(num_threads=nt):
        work = malloc(work_bytes)
        try:
            for k in prange(n, schedule='static'):      # every thread takes part
                if work == NULL:
                    bad += 1
                    continue
                r = rows[k]
                tp = tbase + 8 * k if tbase != NULL else NULL
                accepted += k_amh_hop(&W[0, 0], &vbias[0], &hbias[0], D, M,
                                      &A[0, 0], &AT[0, 0], &sp[0], &logH[0, 0],
                                      &Hp[0, 0], L, &chains[r, 0],
                                      <cyrbm_rng *> &streams[r, 0], work, tp)
        finally:
            free(work)
    if bad:
        raise MemoryError("out of memory in amh_hops")
    return accepted


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


# ---------------------------------------------------------------------------------------
# Products and Bernoulli draws on aligned, padded buffers (cyrbm/_kernels/gibbs_t.h), for
# the CD/PCD step (_cd.pyx) and the DBN bound (_dbn.pyx)
# ---------------------------------------------------------------------------------------

cdef char *aligned_buffer(list keep, Py_ssize_t nbytes) except NULL:
    """Zeroed memory of nbytes starting on a 64-byte boundary, owned by a NumPy array
    appended to ``keep``."""
    buf = np.zeros(nbytes + 64, dtype=np.uint8)
    keep.append(buf)
    cdef uint8_t[::1] view = buf
    cdef char *p = <char *> &view[0]
    return p + (64 - <size_t> p % 64) % 64


cdef bint use_subset_tables(const int32_t *cnt, Py_ssize_t n_rows,
                                   Py_ssize_t n_src) noexcept nogil:
    """The rule of padded_product: subset tables when the active entries exceed
    0.9 (n_rows + 15) ceil(n_src / 4)."""
    cdef Py_ssize_t total = 0, r
    for r in range(n_rows):
        total += cnt[r]
    return total * 10 > 9 * (n_rows + 15) * ((n_src + 3) // 4)


cdef void padded_product(floating *out, Py_ssize_t ldo, const floating *bias,
                         const floating *A, Py_ssize_t lda, const floating *W, Py_ssize_t ldw,
                         int source, Py_ssize_t n_src, Py_ssize_t n_cols,
                         const uint8_t *state, const int32_t *idx, const int32_t *cnt,
                         uint8_t *codes, char **panels, Py_ssize_t n_rows, bint expit,
                         int n_threads) noexcept nogil:
    """padded_product_path with its rule choosing row sums or subset tables."""
    padded_product_path(out, ldo, bias, A, lda, W, ldw, source, n_src, n_cols, state, idx,
                        cnt, codes, panels, n_rows, expit, n_threads, -1)


cdef void padded_product_path(floating *out, Py_ssize_t ldo, const floating *bias,
                              const floating *A, Py_ssize_t lda, const floating *W,
                              Py_ssize_t ldw, int source, Py_ssize_t n_src, Py_ssize_t n_cols,
                              const uint8_t *state, const int32_t *idx, const int32_t *cnt,
                              uint8_t *codes, char **panels, Py_ssize_t n_rows, bint expit,
                              int n_threads, int path) noexcept nogil:
    """out[r, 0:n_cols] = bias + state[r, :] @ S for 0/1 rows ``state`` (n_rows x n_src),
    also given as lists idx[r, 0:cnt[r]] (row stride n_src), on padded aligned ``out``
    and ``bias`` (columns up to the next whole vector are computed too); with ``expit``,
    sigma of that (applied before the store: the same values as cyrbm_expit after).

    S (n_src x n_cols) is, by ``source``: SOURCE_PADDED, A (aligned rows, stride lda);
    SOURCE_TRANSPOSE, W.T for W (n_cols x n_src, stride ldw): each block of four column
    vectors is transposed from W (64 whole rows of W, read in order) into the thread's
    panel (n_src x 4 vectors, 256 bytes a row: 128 KB for 500 hidden units, so it stays
    in L2), and W.T is never stored whole.  (Copying W into A by column blocks inside
    the product was tried: reading W 256 bytes a row defeats the prefetchers and cost
    0.45 ms against 0.15 ms for a row-by-row copy.)

    Each thread takes a contiguous range of 64-byte column vectors and walks it four
    vectors at a time over all rows, so its block of S is reused by the whole batch while
    it sits in L2.  Sparse states: row sums over the active units (cyrbm_rowsums), in
    unit order.  Dense states: sums of subset tables of four units (cyrbm_subset_sums):
    n_rows table rows per group of four units plus 15 to build its table, each costing
    about what a list entry costs (0.77 against 0.86 ns per 64-byte vector, measured),
    so they are used when the active entries exceed 0.9 (n_rows + 15) ceil(n_src / 4)
    (about a quarter of the units on, for 100 rows).  The choice depends on the states
    only and the split never changes a result, so results do not depend on threads.
    ``codes``: scratch of n_rows x ceil(n_src / 4) bytes; ``panels``: one per thread
    (n_threads of them) for SOURCE_TRANSPOSE.  ``path``: -1 this rule, 0 row sums
    (``state`` and ``codes`` unused), 1 subset tables (``idx`` and ``cnt`` unused).
    """
    cdef Py_ssize_t VL = 64 // sizeof(floating)
    cdef Py_ssize_t G = (n_src + 3) // 4
    cdef Py_ssize_t nv = (n_cols + VL - 1) // VL
    cdef Py_ssize_t r, v, v1, g, ncv, lds
    cdef int nt = cap_threads(n_threads, nv), t
    cdef bint dense = use_subset_tables(cnt, n_rows, n_src) if path < 0 else path == 1
    cdef const floating *S
    if dense:
        for r in range(n_rows):
            cyrbm_state_codes(state + r * n_src, n_src, codes + r * G)
    for t in prange(nt, num_threads=nt, schedule='static'):
        v = t * nv // nt
        v1 = (t + 1) * nv // nt
        while v < v1:
            g = min(4, v1 - v)
            ncv = min(g * VL, n_cols - v * VL)    # real columns in this block
            if source == SOURCE_TRANSPOSE:
                S = <floating *> panels[t]
                lds = 4 * VL
                k_transpose(<floating *> panels[t], lds, W + v * VL * ldw, ldw,
                            ncv, n_src)
            else:
                S = A + v * VL
                lds = lda
            if dense:
                k_subset_sums(out + v * VL, ldo, bias + v * VL, S, lds, n_src,
                              codes, G, n_rows, <int> g, expit)
            else:
                k_rowsums(out + v * VL, ldo, bias + v * VL, S, lds, idx, n_src,
                          cnt, n_rows, <int> g, expit)
            v = v + g


cdef void padded_sample(const floating *P, Py_ssize_t ldp, Py_ssize_t n_units,
                        Py_ssize_t n_rows, cyrbm_rng *streams, uint8_t *state,
                        int32_t *idx, int32_t *cnt, int n_threads) noexcept nogil:
    """Row r: Bernoulli(P[r]) states from stream r, written to state[r, 0:n_units] and as
    the list idx[r, 0:cnt[r]].

    Rows go eight at a time through cyrbm_bernoulli8 (the eight streams in the lanes of
    one vector; the same numbers as one row at a time), a last group of fewer rows one by
    one.  Threads take contiguous runs of whole groups.
    """
    cdef Py_ssize_t n_groups = (n_rows + 7) // 8
    cdef int nt = cap_threads(n_threads, n_groups // 2), t
    cdef Py_ssize_t r, r0, r1
    for t in prange(nt, num_threads=nt, schedule='static'):
        r0 = 8 * (t * n_groups // nt)
        r1 = min(n_rows, 8 * ((t + 1) * n_groups // nt))
        r = r0
        while r + 8 <= r1:
            k_bernoulli8(P + r * ldp, ldp, n_units, &streams[r],
                         state + r * n_units, idx + r * n_units, cnt + r)
            r = r + 8
        while r < r1:
            cnt[r] = k_bernoulli(P + r * ldp, n_units, &streams[r],
                                 state + r * n_units, idx + r * n_units)
            r = r + 1
