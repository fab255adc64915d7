# cython: language_level=3
"""Exact enumeration of a binary RBM: ln Z (SM08 Eq. 3) over every state of the smaller
layer, exact draws from that layer's marginal, and the exact pseudo-log-likelihood.

* ``exact_log_partition`` sums over every state of the smaller layer (Gray-code order,
  float64, a stable log-sum-exp; chunks of fixed size combined in a fixed order, so the
  result does not depend on the number of threads); ``exact_chunk_range`` /
  ``exact_combine_chunks`` take it in pieces; its nogil drivers
  ``exact_log_partition_raw`` / ``exact_log_partition_rbm`` (the C API's).
* ``exact_sample_smaller_layer``: inverse-CDF draws over the same enumeration.
* ``pseudo_log_likelihood``: sum_i ln p(v_i | v_-i), all bits.

The loops are in cyrbm/_kernels/anneal.c (cyrbm_exact_chunk, cyrbm_pll_row).
"""
import numpy as np

from cython.parallel cimport prange, parallel
from cyrbm._omp cimport cap_threads
from libc.stdint cimport uint8_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.math cimport log, exp, INFINITY
from cython cimport floating

from cyrbm._ckernels cimport *
from cyrbm._anneal cimport _pad


cdef double exact_log_partition_raw(const double *Ws, Py_ssize_t ld, const double *cs,
                                    const double *co, Py_ssize_t m, Py_ssize_t n_pad,
                                    int chunk_bits, double *chunks, int n_threads) noexcept nogil:
    """ln sum_s exp(cs.s + sum_i softplus(co_i + (s Ws)_i)) over all s in {0,1}^m.

    Ws is m x n_pad (row k: the enumerated unit k's weights to the other layer, padded
    with zeros), co is n_pad long with pads at -1e4 (they then add nothing).  The 2^m
    states form 2^(m - chunk_bits) chunks of 2^chunk_bits consecutive Gray codes;
    ``chunks`` (2 doubles per chunk) receives each chunk's (max, sum) and the chunks are
    combined in order, so the result does not depend on ``n_threads``.
    """
    cdef int cb = chunk_bits if chunk_bits < m else <int> m
    cdef Py_ssize_t n_chunks = (<Py_ssize_t> 1) << (m - cb)
    cdef Py_ssize_t c
    cdef uint64_t size = (<uint64_t> 1) << cb
    cdef double *act = NULL
    cdef double mx, total
    cdef int nt = cap_threads(n_threads, n_chunks)
    with parallel(num_threads=nt):
        act = <double *> malloc(n_pad * sizeof(double) + 64)
        try:
            for c in prange(n_chunks, schedule='dynamic', chunksize=1):
                cyrbm_exact_chunk(Ws, ld, cs, co, m, n_pad, <uint64_t> c * size,
                                  <uint64_t> (c + 1) * size, act, chunks + 2 * c, NULL)
        finally:
            free(act)
    mx = -INFINITY
    for c in range(n_chunks):
        if chunks[2 * c] > mx:
            mx = chunks[2 * c]
    total = 0.0
    for c in range(n_chunks):
        total = total + chunks[2 * c + 1] * exp(chunks[2 * c] - mx)
    return mx + log(total)

cdef void _exact_operands(const floating *W, const floating *vbias, const floating *hbias,
                          Py_ssize_t n_visible, Py_ssize_t n_hidden, double *Ws, double *cs,
                          double *co) noexcept nogil:
    """The operands of ``exact_log_partition_raw`` for the RBM (W, vbias, hbias), in
    float64, enumerating the smaller layer (the hidden one when n_hidden <= n_visible):
    Ws (m x n_pad, row k: unit k's weights to the other layer, zero-padded), cs (m: its
    biases) and co (n_pad: the other layer's biases, pads at -1e4), n_pad = _pad(n)."""
    cdef bint hidden = n_hidden <= n_visible
    cdef Py_ssize_t m = n_hidden if hidden else n_visible
    cdef Py_ssize_t n = n_visible if hidden else n_hidden
    cdef Py_ssize_t n_pad = _pad(n), k, i
    for k in range(m):
        for i in range(n_pad):
            if i >= n:
                Ws[k * n_pad + i] = 0.0
            elif hidden:
                Ws[k * n_pad + i] = <double> W[i * n_hidden + k]
            else:
                Ws[k * n_pad + i] = <double> W[k * n_hidden + i]
        cs[k] = <double> (hbias[k] if hidden else vbias[k])
    for i in range(n_pad):
        co[i] = -1e4 if i >= n else <double> (vbias[i] if hidden else hbias[i])


cdef int exact_log_partition_rbm(const floating *W, const floating *vbias,
                                 const floating *hbias, Py_ssize_t n_visible,
                                 Py_ssize_t n_hidden, int chunk_bits, double *log_Z,
                                 int n_threads) noexcept nogil:
    """Exact ln Z (SM08 Eq. 3) of the RBM (W, vbias, hbias), parameters taken in float64,
    by ``exact_log_partition_raw`` over the smaller layer: the hidden one when n_hidden
    <= n_visible (Z = sum_h exp(a.h) prod_i (1 + exp(b_i + (W h)_i))), else the visible
    one.  Returns 0, -1 when memory runs out, -2 for invalid sizes (more than 62 units
    to enumerate)."""
    cdef bint hidden = n_hidden <= n_visible
    cdef Py_ssize_t m = n_hidden if hidden else n_visible
    cdef Py_ssize_t n = n_visible if hidden else n_hidden
    cdef Py_ssize_t n_pad, n_chunks
    cdef int cb
    cdef double *block
    cdef double *Ws
    cdef double *cs
    cdef double *co
    if n_visible < 1 or n_hidden < 1 or m > 62 or chunk_bits < 0 or log_Z == NULL \
            or W == NULL or vbias == NULL or hbias == NULL:
        return -2
    n_pad = _pad(n)
    cb = chunk_bits if chunk_bits < m else <int> m
    n_chunks = (<Py_ssize_t> 1) << (m - cb)
    if n_chunks > (<Py_ssize_t> 1) << 40:
        return -1
    block = <double *> malloc((m * n_pad + m + n_pad + 2 * n_chunks) * sizeof(double))
    if block == NULL:
        return -1
    Ws, cs = block, block + m * n_pad
    co = cs + m
    _exact_operands(W, vbias, hbias, n_visible, n_hidden, Ws, cs, co)
    log_Z[0] = exact_log_partition_raw(Ws, n_pad, cs, co, m, n_pad, cb, co + n_pad,
                                       n_threads)
    free(block)
    return 0


def exact_log_partition(W, vbias, hbias, int n_threads=1, int chunk_bits=12):
    """Exact ln Z of the RBM (W, vbias, hbias), summing over the smaller layer.

    Parameters are converted to float64 (see ``exact_log_partition_rbm``).
    """
    cdef double[:, ::1] Wv = np.ascontiguousarray(W, dtype=np.float64)
    cdef double[::1] b = np.ascontiguousarray(vbias, dtype=np.float64)
    cdef double[::1] a = np.ascontiguousarray(hbias, dtype=np.float64)
    cdef double result = 0.0
    cdef int status
    if Wv.shape[0] != b.shape[0] or Wv.shape[1] != a.shape[0] or Wv.shape[0] < 1 \
            or Wv.shape[1] < 1:
        raise ValueError("W must be n_visible x n_hidden with matching biases.")
    if min(Wv.shape[0], Wv.shape[1]) > 62:
        raise ValueError("cannot enumerate more than 62 units.")
    with nogil:
        status = exact_log_partition_rbm(&Wv[0, 0], &b[0], &a[0], Wv.shape[0], Wv.shape[1],
                                         chunk_bits, &result, n_threads)
    if status == -1:
        raise MemoryError("no memory for the exact ln Z scratch.")
    if status != 0:
        raise ValueError("invalid sizes for an exact ln Z.")
    return float(result)


def exact_chunk_range(W, vbias, hbias, double[::1] chunks, Py_ssize_t c0, Py_ssize_t c1,
                      int n_threads=1, int chunk_bits=12):
    """Chunks c0 <= c < c1 of ``exact_log_partition``'s enumeration, into ``chunks``
    (2 doubles per chunk: max and sum, as ``exact_log_partition_raw`` fills them), so a
    caller can take a long enumeration in pieces (and answer Ctrl-C between them);
    ``exact_combine_chunks`` then gives the same ln Z bit for bit."""
    cdef double[:, ::1] Wv = np.ascontiguousarray(W, dtype=np.float64)
    cdef double[::1] b = np.ascontiguousarray(vbias, dtype=np.float64)
    cdef double[::1] a = np.ascontiguousarray(hbias, dtype=np.float64)
    cdef Py_ssize_t D = Wv.shape[0], M = Wv.shape[1]
    cdef Py_ssize_t m = M if M <= D else D, n = D if M <= D else M
    if m < 1 or m > 62 or b.shape[0] != D or a.shape[0] != M:
        raise ValueError("W must be n_visible x n_hidden with matching biases, "
                         "at most 62 units in the smaller layer.")
    cdef int cb = chunk_bits if chunk_bits < m else <int> m
    cdef Py_ssize_t n_chunks = (<Py_ssize_t> 1) << (m - cb)
    if chunks.shape[0] != 2 * n_chunks or c0 < 0 or c1 > n_chunks:
        raise ValueError("chunks must hold 2 doubles for each of the enumeration's chunks.")
    cdef Py_ssize_t n_pad = _pad(n), c
    cdef double[:, ::1] Ws = np.empty((m, n_pad))
    cdef double[::1] cs = np.empty(m), co = np.empty(n_pad)
    cdef uint64_t size = (<uint64_t> 1) << cb
    cdef double *act = NULL
    cdef int nt = cap_threads(n_threads, c1 - c0)
    if c1 <= c0:
        return
    with nogil:
        _exact_operands(&Wv[0, 0], &b[0], &a[0], D, M, &Ws[0, 0], &cs[0], &co[0])
        with parallel(num_threads=nt):
            act = <double *> malloc(n_pad * sizeof(double) + 64)
            try:
                for c in prange(c0, c1, schedule='dynamic', chunksize=1):
                    cyrbm_exact_chunk(&Ws[0, 0], n_pad, &cs[0], &co[0], m, n_pad,
                                      <uint64_t> c * size, <uint64_t> (c + 1) * size, act,
                                      &chunks[2 * c], NULL)
            finally:
                free(act)


def pseudo_log_likelihood(W, vbias, hbias, const uint8_t[:, ::1] v, int n_threads=1):
    """sum_i ln p(v_i | v_-i) for each 0/1 row, exactly (all bits, no sampling), float64.

    Flipping bit i changes the hidden inputs by +-W[i, :], so each term costs O(n_hidden)
    exps, taken in vectors (``cyrbm_pll_row`` in anneal.c, on the one softplus sum of the
    exact enumeration): ln p(v_i | v_-i) = -softplus(ln p*(v with i flipped) - ln p*(v)).
    Rows in parallel; each row's result does not depend on the number of threads.
    """
    cdef Py_ssize_t n = v.shape[0], D = W.shape[0], M = W.shape[1]
    cdef Py_ssize_t n_pad = _pad(M), r
    out = np.zeros(n, dtype=np.float64)
    if n == 0:
        return out
    Wp = np.zeros((D, n_pad))
    Wp[:, :M] = W
    ap = np.full(n_pad, -1e4)
    ap[:M] = hbias
    cdef double[:, ::1] Wd = Wp
    cdef double[::1] a = ap, o = out
    cdef double[::1] b = np.ascontiguousarray(vbias, dtype=np.float64)
    cdef double *act
    with nogil, parallel(num_threads=cap_threads(n_threads, n)):
        act = <double *> malloc(n_pad * sizeof(double) + 64)
        try:
            for r in prange(n, schedule='static'):
                o[r] = cyrbm_pll_row(&Wd[0, 0], &b[0], &a[0], D, n_pad, &v[r, 0], act)
        finally:
            free(act)
    return out


def exact_combine_chunks(const double[::1] chunks):
    """ln Z from the chunks of ``exact_chunk_range``, combined in order exactly as
    ``exact_log_partition_raw`` does."""
    cdef Py_ssize_t n_chunks = chunks.shape[0] // 2, c
    cdef double mx = -INFINITY, total = 0.0
    for c in range(n_chunks):
        if chunks[2 * c] > mx:
            mx = chunks[2 * c]
    for c in range(n_chunks):
        total = total + chunks[2 * c + 1] * exp(chunks[2 * c] - mx)
    return float(mx + log(total))


def exact_sample_smaller_layer(W, vbias, hbias, uniforms, int n_threads=1, int chunk_bits=12):
    """Exact draws from the marginal of the smaller layer of an RBM, and its exact ln Z.

    The states s of the smaller layer (m units) have p(s) = exp(f(s)) / Z with f as in
    ``exact_log_partition_raw`` (the other layer summed out).  The 2^m states, in
    Gray-code order, form chunks of 2^chunk_bits; the chunks' totals come from the one
    enumeration of ``exact_log_partition``, and each uniform u picks the chunk and then
    (enumerating that chunk once more, state by state) the state where the cumulative
    probability, in that fixed order, first exceeds u: inverse-CDF sampling, exact up to
    float64 rounding.

    Returns
    -------
    states : uint8 array (len(uniforms), m)
        Bit k of a draw is unit k of the smaller layer (the hidden one when n_hidden <=
        n_visible).
    log_Z : float
    hidden : bool
        Whether the enumerated layer is the hidden one.
    """
    cdef double[:, ::1] Wv = np.ascontiguousarray(W, dtype=np.float64)
    cdef double[::1] b = np.ascontiguousarray(vbias, dtype=np.float64)
    cdef double[::1] a = np.ascontiguousarray(hbias, dtype=np.float64)
    u = np.ascontiguousarray(uniforms, dtype=np.float64).ravel()
    cdef Py_ssize_t D = Wv.shape[0], M = Wv.shape[1]
    cdef bint hidden = M <= D
    cdef Py_ssize_t m = M if hidden else D, n = D if hidden else M
    if m < 1 or m > 62 or b.shape[0] != D or a.shape[0] != M:
        raise ValueError("W must be n_visible x n_hidden with matching biases, "
                         "at most 62 units in the smaller layer.")
    if u.size and (np.any(u < 0) or np.any(u >= 1)):
        raise ValueError("uniforms must lie in [0, 1).")
    cdef Py_ssize_t n_pad = _pad(n)
    cdef int cb = chunk_bits if chunk_bits < m else <int> m
    cdef Py_ssize_t n_chunks = (<Py_ssize_t> 1) << (m - cb), size = (<Py_ssize_t> 1) << cb
    chunks_arr = np.empty(2 * n_chunks)
    cdef double[:, ::1] Ws = np.empty((m, n_pad))
    cdef double[::1] cs = np.empty(m), co = np.empty(n_pad), ch = chunks_arr
    cdef double log_z
    with nogil:
        _exact_operands(&Wv[0, 0], &b[0], &a[0], D, M, &Ws[0, 0], &cs[0], &co[0])
        log_z = exact_log_partition_raw(&Ws[0, 0], n_pad, &cs[0], &co[0], m, n_pad, cb,
                                        &ch[0], n_threads)
    mx = chunks_arr[0::2]
    top = float(np.max(mx))
    cum = np.cumsum(chunks_arr[1::2] * np.exp(mx - top))      # in units of exp(top)
    before_chunk = np.concatenate([[0.0], cum[:cum.size - 1]])
    targets = u * cum[cum.size - 1]
    which = np.minimum(np.searchsorted(cum, targets, side="right"), n_chunks - 1)
    states = np.zeros((u.size, m), dtype=np.uint8)
    each_arr = np.empty(size)
    act_arr = np.empty(n_pad)
    cdef double[::1] each = each_arr, act = act_arr
    cdef double[2] out
    cdef uint64_t c0
    for c in np.unique(which):
        c0 = <uint64_t> c * <uint64_t> size
        with nogil:
            cyrbm_exact_chunk(&Ws[0, 0], n_pad, &cs[0], &co[0], m, n_pad, c0,
                              c0 + <uint64_t> size, &act[0], out, &each[0])
        inner = np.cumsum(np.exp(each_arr - top))
        rows = np.flatnonzero(which == c)
        idx = np.minimum(np.searchsorted(inner, targets[rows] - before_chunk[c], side="right"),
                         size - 1)
        gray = (int(c0) + idx) ^ ((int(c0) + idx) >> 1)
        states[rows] = ((gray[:, None] >> np.arange(m)) & 1).astype(np.uint8)
    return states, float(log_z), bool(hidden)


# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._dispatch cimport kernel_table
cyrbm_kt = kernel_table()
