# cython: language_level=3
"""Compiled kernels of a binary RBM: conditionals, sampling, CD/PCD statistics.

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

from cyrbm._random cimport cyrbm_rng

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
    set's float64 proposal kernels (cyrbm.modehop.ModeSet.update_proposal; A holds
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
            or hbias.shape[0] != M or streams.shape[0] != chains.shape[0]
            or streams.shape[1] != 4):
        raise ValueError("amh_hops: the shapes of the model, proposal, chains and streams "
                         "do not match.")
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
# One CD-k / PCD-k step on aligned, padded buffers (cyrbm/_kernels/gibbs_t.h)
# ---------------------------------------------------------------------------------------

cdef char *aligned_buffer(list keep, Py_ssize_t nbytes) except NULL:
    """Zeroed memory of nbytes starting on a 64-byte boundary, owned by a NumPy array
    appended to ``keep``."""
    buf = np.zeros(nbytes + 64, dtype=np.uint8)
    keep.append(buf)
    cdef uint8_t[::1] view = buf
    cdef char *p = <char *> &view[0]
    return p + (64 - <size_t> p % 64) % 64


cdef enum:
    # visible units whose gradient rows cd_update computes and applies at a time (in L1)
    GRADIENT_ROWS = 16


cdef struct Scratch:
    # the buffers of a Workspace, as plain C for the nogil step functions
    Py_ssize_t batch, ldv, ldh
    char *Wp              # n_visible x ldh: W with padded rows
    char *vb              # ldv: visible biases, zero padded
    char *hb              # ldh: hidden biases, zero padded
    char *ph0             # batch x ldh: p(h | data)
    char *act_h           # batch x ldh: hidden activations / probabilities of the chains
    char *act_v           # batch x ldv: visible activations / probabilities
    char *hsum            # ldh: sum over the batch of p(h|data) - p(h|chains)
    int32_t *vidx         # batch x n_visible: active visible units of the data
    int32_t *vcnt
    int32_t *kidx         # batch x n_visible: active visible units of the chains
    int32_t *kcnt
    int32_t *hidx         # batch x n_hidden: active hidden units of the chains
    int32_t *hcnt
    uint8_t *hstate       # batch x n_hidden: hidden states of the chains
    uint8_t *codes        # batch x ceil(max(n_visible, n_hidden) / 4): subset codes
    int32_t *colpos       # n_visible x batch: data rows in which visible unit i is on
    int32_t *npos
    int32_t *colneg       # n_visible x batch: chains in which visible unit i is on
    int32_t *nneg
    char **panels         # per thread: a block of W.T (n_hidden x 4 vectors), or gradient rows


cdef struct cd_settings:
    # the scalars of a CD-k / PCD-k step (a dict with these keys at the Python boundary)
    int k                   # block-Gibbs sweeps of the chains
    bint persistent         # PCD (chains persist) rather than CD (chains start at the data)
    double learning_rate
    double momentum
    double weight_decay     # L2 on W
    double scale            # applied to the gradient sums (1 / batch size)
    int n_threads


cdef class Workspace:
    """Scratch memory of ``cd_statistics`` / ``cd_update`` for one problem size, reused
    across mini-batches.

    ``Workspace(batch_size, n_visible, n_hidden, dtype)``.  Holding one across calls
    avoids allocating (and the kernel zeroing) a few MB per mini-batch.  Nothing in it
    carries over from one call to the next.  Rows are padded to an odd number of whole
    64-byte lines (``cyrbm_padded_ld``) so the products read aligned weight rows that do
    not pile up in a few cache sets.
    """
    cdef readonly Py_ssize_t batch_size, n_visible, n_hidden
    cdef readonly object dtype
    cdef Scratch s
    cdef Py_ssize_t panel_bytes, n_panels
    cdef list _keep, _panels

    def __cinit__(self, Py_ssize_t batch_size, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                  dtype=np.float32):
        dt = np.dtype(dtype)
        if dt != np.float32 and dt != np.float64:
            raise ValueError(f"dtype must be float32 or float64, not {dt}.")
        if batch_size < 1 or n_visible < 1 or n_hidden < 1:
            raise ValueError("a workspace needs a positive batch size and layer sizes.")
        self.batch_size, self.n_visible, self.n_hidden = batch_size, n_visible, n_hidden
        self.dtype = dt
        cdef Py_ssize_t B = batch_size, D = n_visible, M = n_hidden, f = dt.itemsize
        cdef Py_ssize_t i4 = sizeof(int32_t)
        cdef Scratch *s = &self.s
        s.batch = B
        s.ldv = cyrbm_padded_ld(D, f)
        s.ldh = cyrbm_padded_ld(M, f)
        self._keep = []
        k = self._keep
        s.Wp = aligned_buffer(k, D * s.ldh * f)
        s.vb = aligned_buffer(k, s.ldv * f)
        s.hb = aligned_buffer(k, s.ldh * f)
        s.ph0 = aligned_buffer(k, B * s.ldh * f)
        s.act_h = aligned_buffer(k, B * s.ldh * f)
        s.act_v = aligned_buffer(k, B * s.ldv * f)
        s.hsum = aligned_buffer(k, s.ldh * f)
        s.vidx = <int32_t *> aligned_buffer(k, B * D * i4)
        s.vcnt = <int32_t *> aligned_buffer(k, B * i4)
        s.kidx = <int32_t *> aligned_buffer(k, B * D * i4)
        s.kcnt = <int32_t *> aligned_buffer(k, B * i4)
        s.hidx = <int32_t *> aligned_buffer(k, B * M * i4)
        s.hcnt = <int32_t *> aligned_buffer(k, B * i4)
        s.hstate = <uint8_t *> aligned_buffer(k, B * M)
        s.codes = <uint8_t *> aligned_buffer(k, B * ((max(D, M) + 3) // 4))
        s.colpos = <int32_t *> aligned_buffer(k, D * B * i4)
        s.npos = <int32_t *> aligned_buffer(k, D * i4)
        s.colneg = <int32_t *> aligned_buffer(k, D * B * i4)
        s.nneg = <int32_t *> aligned_buffer(k, D * i4)
        # a panel holds a block of W.T (n_hidden x 256 bytes) or GRADIENT_ROWS rows of dW
        self.panel_bytes = max(M * 4 * 64, GRADIENT_ROWS * s.ldh * f)
        self._panels = []
        s.panels = NULL
        self.n_panels = 0

    def __dealloc__(self):
        free(self.s.panels)

    cdef int ensure_panels(self, Py_ssize_t n) except -1:
        """At least n per-thread panels."""
        if n <= self.n_panels:
            return 0
        cdef char **p = <char **> realloc(self.s.panels, n * sizeof(char *))
        if p == NULL:
            raise MemoryError()
        self.s.panels = p
        while self.n_panels < n:
            self.s.panels[self.n_panels] = aligned_buffer(self._panels, self.panel_bytes)
            self.n_panels += 1
        return 0

    def __repr__(self):
        return (f"Workspace(batch_size={self.batch_size}, n_visible={self.n_visible}, "
                f"n_hidden={self.n_hidden}, dtype={self.dtype.name})")

    def matches(self, Py_ssize_t batch_size, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                dtype):
        """True when this workspace fits a problem of these sizes and dtype."""
        return (batch_size == self.batch_size and n_visible == self.n_visible
                and n_hidden == self.n_hidden and np.dtype(dtype) == self.dtype)




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


cdef void given_probs(floating *out, Py_ssize_t ldo, const floating *x, const floating *hb,
                      Py_ssize_t M) noexcept nogil:
    """out[0:ldo] = sigma(x + hb) on a padded row (pads: sigma(0), as the products)."""
    cdef Py_ssize_t j
    for j in range(M):
        out[j] = x[j] + hb[j]
    for j in range(M, ldo):
        out[j] = 0
    k_expit(out, ldo)


cdef void cd_phase(Scratch *s, const floating *W, Py_ssize_t D, Py_ssize_t M,
                   const floating *vbias, const floating *hbias, const uint8_t *v_data,
                   uint8_t *v_chain, bint persistent, int k, cyrbm_rng *st,
                   int n_threads, const floating *xin=NULL) noexcept nogil:
    """Everything of a CD-k / PCD-k step but the weight gradient itself: p(h | data) in
    ph0, k block-Gibbs sweeps of the chains (v_chain, stream n for chain n), p(h | chains)
    in act_h, the column lists of data and chains (colpos, colneg) and hsum.  ``xin``
    (k = 0 only, or NULL): the chains' W^T v (batch x n_hidden) as their sampler kept
    it, so p(h | chains) = sigma(xin + hbias) without a product."""
    cdef Py_ssize_t B = s.batch, ldv = s.ldv, ldh = s.ldh, i
    cdef floating *Wp = <floating *> s.Wp
    cdef floating *vb = <floating *> s.vb
    cdef floating *hb = <floating *> s.hb
    cdef floating *ph0 = <floating *> s.ph0
    cdef floating *act_h = <floating *> s.act_h
    cdef floating *act_v = <floating *> s.act_v
    cdef floating *hsum = <floating *> s.hsum
    cdef floating *ph = ph0      # p(h | current chain state)
    cdef int t
    # W with aligned rows, for the hidden-side products
    for i in prange(D, num_threads=cap_threads(n_threads, D // 64), schedule='static'):
        memcpy(Wp + i * ldh, W + i * M, M * sizeof(floating))
    memcpy(vb, vbias, D * sizeof(floating))
    memcpy(hb, hbias, M * sizeof(floating))
    # positive phase: p(h | data)
    active_lists(v_data, B, D, s.vidx, s.vcnt, n_threads)
    padded_product(ph0, ldh, hb, Wp, ldh, W, M, SOURCE_PADDED, D, M, v_data, s.vidx,
                   s.vcnt, s.codes, s.panels, B, True, n_threads)
    if persistent:
        active_lists(v_chain, B, D, s.kidx, s.kcnt, n_threads)
        if xin != NULL and k == 0:
            for i in prange(B, num_threads=cap_threads(n_threads, B // 16), schedule='static'):
                given_probs(act_h + i * ldh, ldh, xin + i * M, hb, M)
        else:
            padded_product(act_h, ldh, hb, Wp, ldh, W, M, SOURCE_PADDED, D, M, v_chain,
                           s.kidx, s.kcnt, s.codes, s.panels, B, True, n_threads)
        ph = act_h
    # k block-Gibbs sweeps
    for t in range(k):
        padded_sample(ph, ldh, M, B, st, s.hstate, s.hidx, s.hcnt, n_threads)
        padded_product(act_v, ldv, vb, Wp, ldh, W, M, SOURCE_TRANSPOSE, M, D, s.hstate,
                       s.hidx, s.hcnt, s.codes, s.panels, B, True, n_threads)
        padded_sample(act_v, ldv, D, B, st, v_chain, s.kidx, s.kcnt, n_threads)
        padded_product(act_h, ldh, hb, Wp, ldh, W, M, SOURCE_PADDED, D, M, v_chain, s.kidx,
                       s.kcnt, s.codes, s.panels, B, True, n_threads)
        ph = act_h
    # which batch rows have visible unit i on, data and chains
    cyrbm_column_lists(s.vidx, D, s.vcnt, B, D, s.colpos, s.npos)
    cyrbm_column_lists(s.kidx, D, s.kcnt, B, D, s.colneg, s.nneg)
    k_colsum_diff(hsum, ph0, act_h, ldh, B, M)


cdef void gradient_rows(const Scratch *s, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t v0,
                        Py_ssize_t v1, Py_ssize_t M, floating *out,
                        Py_ssize_t ldo) noexcept nogil:
    """out[i - r0, cols] = dW[i, cols] for visible units r0 <= i < r1 and the column
    vectors v0 <= v < v1 (cols = v*VL ...), four vectors at a time: the sum of p(h | data)
    over the data rows with v_i = 1, minus that of p(h | chains) over the chains with
    v_i = 1, in list order (cyrbm_rowdiffs).  The same values however it is called."""
    cdef Py_ssize_t VL = 64 // sizeof(floating), v = v0, g, B = s.batch
    cdef floating *ph0 = <floating *> s.ph0
    cdef floating *act_h = <floating *> s.act_h
    while v < v1:
        g = min(4, v1 - v)
        k_rowdiffs(out + v * VL, ldo, min(g * VL, M - v * VL), ph0 + v * VL,
                   act_h + v * VL, s.ldh, s.colpos + r0 * B, s.npos + r0,
                   s.colneg + r0 * B, s.nneg + r0, B, r1 - r0)
        v = v + g


cdef Workspace _checked_workspace(Workspace workspace, Py_ssize_t B, Py_ssize_t D,
                                  Py_ssize_t M, dt, int n_threads):
    if workspace is None:
        workspace = Workspace(B, D, M, dt)
    elif not workspace.matches(B, D, M, dt):
        raise ValueError(f"{workspace!r} does not fit batch {B}, {D} visible, {M} hidden, "
                         f"{np.dtype(dt).name}")
    workspace.ensure_panels(max(1, min(n_threads, (max(D, M) + 7) // 8)))
    return workspace


def _check_step(Py_ssize_t B, Py_ssize_t D, Py_ssize_t M, Py_ssize_t nvb, Py_ssize_t nhb,
                v_chain_shape, Py_ssize_t v_data_cols, int k, streams, bint persistent=False):
    _check_streams(streams, B)
    if k < 0 or (k == 0 and not persistent):
        raise ValueError("k must be at least 1 (0 only for persistent chains)")
    if v_chain_shape[0] != B or v_chain_shape[1] != D or v_data_cols != D:
        raise ValueError("v_data and v_chain must both be batch x n_visible")
    if nvb != D or nhb != M:
        raise ValueError("bias shapes do not match W")


def _cd_statistics(const floating[:, ::1] W,        # IN  n_visible x n_hidden
                   const floating[::1] vbias,         # IN
                   const floating[::1] hbias,         # IN
                   const uint8_t[:, ::1] v_data,      # IN  batch x n_visible
                   uint8_t[:, ::1] v_chain,           # INOUT chains
                   uint64_t[:, ::1] streams,          # INOUT one per chain
                   floating[:, ::1] dW,               # OUT
                   floating[::1] dvbias,              # OUT
                   floating[::1] dhbias,              # OUT
                   dict settings, Workspace workspace):
    """Sums over a mini-batch of the CD-k / PCD-k gradient (SM08 Eq. 7; Hu & Yu Sec. 3).

    dW = sum_n v_n p(h | v_n)^T - sum_n v~_n p(h | v~_n)^T, likewise for the biases, where
    v~ is the visible state after k block-Gibbs sweeps: started at the data (CD-k,
    ``persistent`` false) or at the persistent chains ``v_chain`` (PCD-k, also called SML;
    ``v_chain`` is advanced in place).  With ``persistent`` and k = 0, v~ is ``v_chain``
    as given: the negative phase of samples drawn by another transition (the T = 1 chains
    of parallel tempering, mode-hopping chains).  For CD the final states are written to
    ``v_chain`` too, so callers can inspect them.  Chain n uses stream n.
    The sums are not divided by the batch size.

    ``workspace``: a ``Workspace(batch, n_visible, n_hidden, dtype)`` to reuse across
    calls (one is made for the call when None).  ``cd_update`` does this and
    ``apply_update`` in one pass.
    """
    cdef cd_settings cfg = _settings(settings)
    cdef Py_ssize_t B = v_data.shape[0], D = W.shape[0], M = W.shape[1], i
    cdef int n_threads = cfg.n_threads
    _check_step(B, D, M, vbias.shape[0], hbias.shape[0], v_chain.shape, v_data.shape[1],
                cfg.k, streams, cfg.persistent)
    if dW.shape[0] != D or dW.shape[1] != M or dvbias.shape[0] != D or dhbias.shape[0] != M:
        raise ValueError("gradient shapes do not match W")
    if B == 0:
        dW[:, :] = 0
        dvbias[:] = 0
        dhbias[:] = 0
        return
    cdef Workspace ws = _checked_workspace(workspace, B, D, M,
                                           np.float32 if floating is float else np.float64,
                                           n_threads)
    cdef Scratch *s = &ws.s
    cdef Py_ssize_t VL = 64 // sizeof(floating), nv = (M + VL - 1) // VL
    cdef int nt = cap_threads(n_threads, nv), t
    with nogil:
        cd_phase(s, &W[0, 0], D, M, &vbias[0], &hbias[0], &v_data[0, 0], &v_chain[0, 0],
                 cfg.persistent, cfg.k, <cyrbm_rng *> &streams[0, 0], n_threads)
        # each thread: all visible units, a contiguous range of column vectors
        for t in prange(nt, num_threads=nt, schedule='static'):
            gradient_rows(s, 0, D, t * nv // nt, (t + 1) * nv // nt, M, &dW[0, 0], M)
        for i in range(D):
            dvbias[i] = <floating> (s.npos[i] - s.nneg[i])
        memcpy(&dhbias[0], s.hsum, M * sizeof(floating))


cdef int update_biases(floating *vbias, floating *vel_vbias, const floating *dvbias,
                       Py_ssize_t D, floating *hbias, floating *vel_hbias,
                       const floating *dhbias, Py_ssize_t M, floating lr, floating mom,
                       floating sc) noexcept nogil:
    """The momentum step of the biases (no weight decay); the number of non-finite ones."""
    cdef Py_ssize_t i
    cdef int bad = 0
    for i in range(D):
        vel_vbias[i] = mom * vel_vbias[i] + lr * sc * dvbias[i]
        vbias[i] = vbias[i] + vel_vbias[i]
        if not isfinite(vbias[i]):
            bad = bad + 1
    for i in range(M):
        vel_hbias[i] = mom * vel_hbias[i] + lr * sc * dhbias[i]
        hbias[i] = hbias[i] + vel_hbias[i]
        if not isfinite(hbias[i]):
            bad = bad + 1
    return bad


cdef inline int momentum_row(floating *W, floating *vel, const floating *d, Py_ssize_t M,
                             floating lr, floating mom, floating wd,
                             floating sc) noexcept nogil:
    return k_momentum(W, vel, d, M, lr, mom, wd, sc, NULL)


def _cd_update(floating[:, ::1] W,                   # INOUT parameters
               floating[::1] vbias,                    # INOUT
               floating[::1] hbias,                    # INOUT
               floating[:, ::1] vel_W,                 # INOUT velocities
               floating[::1] vel_vbias,                # INOUT
               floating[::1] vel_hbias,                # INOUT
               const uint8_t[:, ::1] v_data,           # IN  batch x n_visible
               uint8_t[:, ::1] v_chain,                # INOUT chains
               uint64_t[:, ::1] streams,               # INOUT one per chain
               dict settings, Workspace workspace,
               chain_inputs):                          # IN  batch x n_hidden or None
    """One CD-k / PCD-k training step: ``cd_statistics`` then ``apply_update`` (same
    arguments), bit-identical to them, but without storing the weight gradient.
    ``chain_inputs`` (k = 0 only): the chains' W^T v as kept by their sampler (see
    cd_phase), or None.

    Each thread computes the gradient rows of GRADIENT_ROWS visible units into a buffer
    that stays in L1 and applies the momentum step to those rows of W and vel at once;
    writing and re-reading a 1.5 MB dW (784 x 500 float32) cost about 0.4 ms per
    mini-batch, as much as the gradient itself.  Returns False if any parameter became
    non-finite.
    """
    cdef cd_settings cfg = _settings(settings)
    cdef Py_ssize_t B = v_data.shape[0], D = W.shape[0], M = W.shape[1], i, b, r1
    cdef int n_threads = cfg.n_threads
    _check_step(B, D, M, vbias.shape[0], hbias.shape[0], v_chain.shape, v_data.shape[1],
                cfg.k, streams, cfg.persistent)
    if (vel_W.shape[0] != D or vel_W.shape[1] != M or vel_vbias.shape[0] != D
            or vel_hbias.shape[0] != M):
        raise ValueError("velocity shapes do not match W")
    if B == 0:
        return True
    dt = np.float32 if floating is float else np.float64
    cdef Workspace ws = _checked_workspace(workspace, B, D, M, dt, n_threads)
    cdef Scratch *s = &ws.s
    cdef floating lr = <floating> cfg.learning_rate, mom = <floating> cfg.momentum
    cdef floating wd = <floating> cfg.weight_decay, sc = <floating> cfg.scale
    cdef Py_ssize_t VL = 64 // sizeof(floating), nv = (M + VL - 1) // VL
    cdef Py_ssize_t n_blocks = (D + GRADIENT_ROWS - 1) // GRADIENT_ROWS
    cdef int nt = cap_threads(n_threads, n_blocks // 2), t
    cdef int bad = 0
    cdef floating *buf
    cdef floating *dvb = <floating *> ws.s.act_v      # batch x ldv >= n_visible, free now
    cdef const floating[:, ::1] xin
    cdef const floating *xp = NULL
    if chain_inputs is not None:
        if cfg.k != 0 or not cfg.persistent:
            raise ValueError("chain inputs are for the negative phase of given samples (k = 0).")
        xin = chain_inputs
        if xin.shape[0] != B or xin.shape[1] != M:
            raise ValueError("chain inputs must be batch x n_hidden.")
        xp = &xin[0, 0]
    with nogil:
        cd_phase(s, &W[0, 0], D, M, &vbias[0], &hbias[0], &v_data[0, 0], &v_chain[0, 0],
                 cfg.persistent, cfg.k, <cyrbm_rng *> &streams[0, 0], n_threads, xp)
        # each thread: contiguous runs of GRADIENT_ROWS visible units, all columns
        for t in prange(nt, num_threads=nt, schedule='static'):
            buf = <floating *> s.panels[t]
            for b in range(t * n_blocks // nt, (t + 1) * n_blocks // nt):
                r1 = min((b + 1) * GRADIENT_ROWS, D)
                gradient_rows(s, b * GRADIENT_ROWS, r1, 0, nv, M, buf, s.ldh)
                for i in range(b * GRADIENT_ROWS, r1):
                    bad += 1 - momentum_row(&W[i, 0], &vel_W[i, 0],
                                            buf + (i - b * GRADIENT_ROWS) * s.ldh, M,
                                            lr, mom, wd, sc)
        for i in range(D):
            dvb[i] = <floating> (s.npos[i] - s.nneg[i])
        bad = bad + update_biases(&vbias[0], &vel_vbias[0], dvb, D, &hbias[0], &vel_hbias[0],
                                  <floating *> s.hsum, M, lr, mom, sc)
    return bad == 0


def _apply_update(floating[:, ::1] W,                # INOUT parameters
                  floating[::1] vbias,                 # INOUT
                  floating[::1] hbias,                 # INOUT
                  const floating[:, ::1] dW,           # IN  gradient sums
                  const floating[::1] dvbias,          # IN
                  const floating[::1] dhbias,          # IN
                  floating[:, ::1] vel_W,              # INOUT velocities
                  floating[::1] vel_vbias,             # INOUT
                  floating[::1] vel_hbias,             # INOUT
                  dict settings,
                  floating[:, ::1] WT):                # OUT W.T unless None
    """One momentum step: vel = momentum*vel + lr*(scale*grad - weight_decay*W); W += vel.

    Weight decay (L2) applies to W only.  WT, unless None, is refreshed to W.T
    (``cd_statistics`` does not need it).  Returns False if any parameter became
    non-finite (the caller then restores its last good state).
    """
    cdef cd_settings cfg = _settings(settings)
    cdef Py_ssize_t D = W.shape[0], M = W.shape[1], i
    if (dW.shape[0] != D or dW.shape[1] != M or vel_W.shape[0] != D or vel_W.shape[1] != M
            or vbias.shape[0] != D or dvbias.shape[0] != D or vel_vbias.shape[0] != D
            or hbias.shape[0] != M or dhbias.shape[0] != M or vel_hbias.shape[0] != M):
        raise ValueError("parameter, gradient and velocity shapes do not match")
    cdef bint refresh = WT is not None
    if refresh and (WT.shape[0] != M or WT.shape[1] != D):
        raise ValueError("WT must be n_hidden x n_visible")
    cdef floating lr = <floating> cfg.learning_rate, mom = <floating> cfg.momentum
    cdef floating wd = <floating> cfg.weight_decay, sc = <floating> cfg.scale
    cdef int n_threads = cfg.n_threads
    cdef int bad = 0
    if D == 0 or M == 0:
        return True
    with nogil:
        for i in prange(D, num_threads=cap_threads(n_threads, D // 16), schedule='static'):
            bad += 1 - momentum_row(&W[i, 0], &vel_W[i, 0], &dW[i, 0], M, lr, mom, wd, sc)
        bad = bad + update_biases(&vbias[0], &vel_vbias[0], &dvbias[0], D, &hbias[0],
                                  &vel_hbias[0], &dhbias[0], M, lr, mom, sc)
        if refresh:
            transpose(&W[0, 0], D, M, &WT[0, 0], n_threads)
    return bad == 0


_SETTINGS = ("k", "persistent", "learning_rate", "momentum", "weight_decay", "scale",
             "n_threads")


cdef cd_settings _settings(dict settings) except *:
    missing = [key for key in _SETTINGS if key not in settings]
    if missing:
        raise ValueError(f"CD settings lack {', '.join(missing)}.")
    cdef cd_settings cfg
    cfg.k = settings["k"]
    cfg.persistent = settings["persistent"]
    cfg.learning_rate = settings["learning_rate"]
    cfg.momentum = settings["momentum"]
    cfg.weight_decay = settings["weight_decay"]
    cfg.scale = settings["scale"]
    cfg.n_threads = settings["n_threads"]
    return cfg


def cd_statistics(params, v_data, v_chain, streams, grads, dict settings, Workspace workspace=None):
    """Sums over a mini-batch of the CD-k / PCD-k gradient (SM08 Eq. 7; Hu & Yu Sec. 3).

    ``params`` = (W, vbias, hbias) (IN); ``grads`` = (dW, dvbias, dhbias) (OUT, same
    dtype); ``v_data`` (IN) and ``v_chain`` (INOUT) batch x n_visible uint8; ``streams``
    (INOUT) one per chain; ``settings``: a dict of k, persistent, learning_rate, momentum,
    weight_decay, scale, n_threads (only k, persistent and n_threads are used here).
    See _cd_statistics for the arithmetic."""
    return _cd_statistics(*params, v_data, v_chain, streams, *grads, settings, workspace)


def cd_update(params, velocity, v_data, v_chain, streams, dict settings,
              Workspace workspace=None, chain_inputs=None):
    """One CD-k / PCD-k training step: ``cd_statistics`` then ``apply_update``,
    bit-identical to them, without storing the weight gradient.

    ``params`` = (W, vbias, hbias) and ``velocity`` = (vel_W, vel_vbias, vel_hbias) are
    updated in place (INOUT); ``v_data`` (IN), ``v_chain`` (INOUT), ``streams`` (INOUT) as
    for cd_statistics; ``settings`` as for cd_statistics, all keys used.
    ``chain_inputs`` (IN, with k = 0 and persistent chains only): W^T v of the given
    chains (batch x n_hidden, W's dtype), kept by the sampler that drew them (parallel
    tempering's engine), so the negative phase takes sigma(chain_inputs + hbias) instead
    of a product.  Returns False if any parameter became non-finite."""
    return _cd_update(*params, *velocity, v_data, v_chain, streams, settings, workspace,
                      chain_inputs)


def apply_update(params, grads, velocity, dict settings, WT=None):
    """One momentum step: vel = momentum*vel + lr*(scale*grad - weight_decay*W); W += vel.

    ``params`` (INOUT), ``grads`` (IN), ``velocity`` (INOUT) as for cd_update; weight
    decay (L2) applies to W only; ``WT``, unless None, is refreshed to W.T (OUT).  Returns
    False if any parameter became non-finite (the caller then restores its last good
    state)."""
    return _apply_update(*params, *grads, *velocity, settings, WT)
