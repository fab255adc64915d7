# cython: language_level=3
"""Compiled kernels of annealed importance sampling (AIS) and exact partition functions.

Notation follows Salakhutdinov & Murray (2008): an RBM with weights W (n_visible x
n_hidden), visible biases b and hidden biases a has p*(v) = exp(b.v) prod_j (1 + exp(a_j +
sum_i W_ij v_i)) (Eq. 2) and Z = sum_v p*(v) (Eq. 3).

* ``exact_log_partition`` sums over every state of the smaller layer (Gray-code order,
  float64, a stable log-sum-exp; chunks of fixed size combined in a fixed order, so the
  result does not depend on the number of threads).
* ``AISEngine`` holds the runs of AIS between two RBMs A and B that share their visible
  units (Eq. 13-17); A without hidden units is the base-rate model of Eq. 18.  Each run
  draws only from its own random streams, so results do not depend on the number of
  threads.

The loops themselves are in include/cyrbm/anneal_kernels.h.
"""
import numpy as np

from cython.parallel cimport prange, parallel
from libc.stdint cimport uint8_t, int32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.math cimport log, exp, INFINITY


cdef inline int _cap(int n_threads, Py_ssize_t work) noexcept nogil:
    if n_threads < 1:
        n_threads = 1
    if work < n_threads:
        return <int> (work if work > 0 else 1)
    return n_threads


cdef void ais_steps(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32, Py_ssize_t runs,
                    const double *betas, Py_ssize_t k0, Py_ssize_t k1, Py_ssize_t k_end,
                    int weights, Py_ssize_t refresh_every, int force_refresh,
                    int n_threads) noexcept nogil:
    """Steps k0 <= k < k1 of the schedule ``betas`` for all runs (see cyrbm_ais_block in
    include/cyrbm/anneal_kernels.h): log weights if ``weights``, and a block-Gibbs
    transition at beta_k while k < k_end.

    The runs are split into one contiguous block per thread, each taken through all the
    steps with no synchronisation; each run's arithmetic and random numbers are the same
    whatever the split.
    """
    cdef int nt = _cap(n_threads, runs)
    cdef Py_ssize_t t, r0, r1
    if runs <= 0 or k1 <= k0:
        return
    for t in prange(nt, num_threads=nt, schedule='static'):
        r0 = t * runs // nt
        r1 = (t + 1) * runs // nt
        if float32:
            cyrbm_ais_block_f32(P, S, r0, r1, betas, k0, k1, k_end, weights, refresh_every,
                                force_refresh)
        else:
            cyrbm_ais_block_f64(P, S, r0, r1, betas, k0, k1, k_end, weights, refresh_every,
                                force_refresh)


cdef void ais_visible(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32,
                      Py_ssize_t runs, double beta, int n_threads) noexcept nogil:
    """A visible half-step at ``beta`` for all runs (see cyrbm_ais_visible)."""
    cdef int nt = _cap(n_threads, runs)
    cdef Py_ssize_t t, r0, r1
    if runs <= 0:
        return
    for t in prange(nt, num_threads=nt, schedule='static'):
        r0 = t * runs // nt
        r1 = (t + 1) * runs // nt
        if float32:
            cyrbm_ais_visible_f32(P, S, r0, r1, beta)
        else:
            cyrbm_ais_visible_f64(P, S, r0, r1, beta)


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
    cdef int nt = _cap(n_threads, n_chunks)
    with parallel(num_threads=nt):
        act = <double *> malloc(n_pad * sizeof(double) + 64)
        try:
            for c in prange(n_chunks, schedule='dynamic', chunksize=1):
                cyrbm_exact_chunk(Ws, ld, cs, co, m, n_pad, <uint64_t> c * size,
                                  <uint64_t> (c + 1) * size, act, chunks + 2 * c)
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


def _pad(Py_ssize_t n):
    return ((n + CYRBM_AK_PAD - 1) // CYRBM_AK_PAD) * CYRBM_AK_PAD


def _pad_rows(Py_ssize_t n):
    """Row width for per-run arrays: a multiple of 16 elements, and an odd multiple, so
    that the rows of many runs do not all fall in the same few cache sets."""
    cdef Py_ssize_t m = _pad(n)
    if m > 0 and (m // CYRBM_AK_PAD) % 2 == 0:
        m += CYRBM_AK_PAD
    return m


def exact_log_partition(W, vbias, hbias, int n_threads=1, int chunk_bits=12):
    """Exact ln Z of the RBM (W, vbias, hbias), summing over the smaller layer.

    Parameters are converted to float64.  Enumerates the hidden layer when n_hidden <=
    n_visible (Z = sum_h exp(a.h) prod_i (1 + exp(b_i + (W h)_i))), else the visible one.
    """
    W = np.asarray(W, dtype=np.float64)
    b = np.asarray(vbias, dtype=np.float64)
    a = np.asarray(hbias, dtype=np.float64)
    if W.shape[1] <= W.shape[0]:
        Ws, cs, co = W.T, a, b
    else:
        Ws, cs, co = W, b, a
    cdef Py_ssize_t m = Ws.shape[0], n = Ws.shape[1]
    if m > 62:
        raise ValueError("cannot enumerate more than 62 units.")
    cdef Py_ssize_t n_pad = _pad(n)
    cdef double[:, ::1] Wp = np.zeros((m, n_pad), dtype=np.float64)
    np.asarray(Wp)[:, :n] = Ws
    cdef double[::1] cp = np.ascontiguousarray(cs, dtype=np.float64)
    cdef double[::1] op = np.full(n_pad, -1e4, dtype=np.float64)
    np.asarray(op)[:n] = co
    cdef int cb = <int> min(chunk_bits, m)
    cdef double[::1] chunks = np.empty(2 * (1 << (m - cb)), dtype=np.float64)
    cdef double result
    with nogil:
        result = exact_log_partition_raw(&Wp[0, 0], n_pad, &cp[0], &op[0], m, n_pad, cb,
                                         &chunks[0], n_threads)
    return float(result)


cdef class AISEngine:
    """The state of ``runs`` AIS runs between RBMs A and B (SM08 Eq. 13-17).

    A is given by its visible biases ``bA`` and, optionally, weights ``WA`` (n_visible x
    nA) and hidden biases ``aA``; with no hidden units it is the base-rate model (Eq. 18).
    ``streams`` holds 32 uint64 words per run (8 xoshiro256++ lanes), advanced in place.
    All parameters are stored (padded) in ``dtype``, float32 or float64; log weights are
    float64.
    """
    cdef cyrbm_ais_pair pair
    cdef cyrbm_ais_state st
    cdef readonly Py_ssize_t runs, D, nA, nB
    cdef readonly bint float32
    cdef public int n_threads
    cdef public Py_ssize_t refresh_every
    cdef dict arrays

    def __init__(self, bA, WA, aA, WB, bB, aB, streams, *, dtype=np.float32, n_threads=1,
                 refresh_every=200):
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise ValueError("dtype must be float32 or float64.")
        self.float32 = dtype == np.float32
        bA = np.asarray(bA, dtype=np.float64)
        WB = np.asarray(WB, dtype=np.float64)
        D = WB.shape[0]
        nB = WB.shape[1]
        if WA is None:
            WA = np.zeros((D, 0))
            aA = np.zeros(0)
        WA = np.asarray(WA, dtype=np.float64)
        nA = WA.shape[1]
        streams = np.ascontiguousarray(streams, dtype=np.uint64)
        R = streams.shape[0]
        if streams.shape != (R, CYRBM_AK_RNG_WORDS):
            raise ValueError(f"streams must have shape (runs, {CYRBM_AK_RNG_WORDS}).")
        self.runs, self.D, self.nA, self.nB = R, D, nA, nB
        self.n_threads = n_threads
        self.refresh_every = refresh_every
        ldV, ldA, ldB = _pad_rows(D), _pad_rows(nA), _pad_rows(nB)

        def padded(x, shape):
            out = np.zeros(tuple(max(s, 1) for s in shape), dtype=dtype)
            x = np.asarray(x, dtype=np.float64)
            out[tuple(slice(0, s) for s in x.shape)] = x
            return out

        chunk = CYRBM_AK_CHUNK_BYTES // dtype.itemsize

        def blocked(x, shape):
            # column chunks, each stored row-major (see cyrbm_ak_update)
            full = padded(x, shape)
            if full.shape[1] == 0 or shape[1] == 0:
                return full
            parts = [full[:, s:s + chunk].ravel() for s in range(0, shape[1], chunk)]
            return np.ascontiguousarray(np.concatenate(parts))

        A = self.arrays = {}
        A["WA"] = padded(WA, (D, ldA))          # row-major: x is updated row by row
        A["WAT"] = blocked(WA.T, (nA, ldV))
        A["aA"] = padded(aA, (ldA,))
        A["bA"] = padded(bA, (ldV,))
        A["WB"] = padded(WB, (D, ldB))
        A["WBT"] = blocked(WB.T, (nB, ldV))
        A["aB"] = padded(aB, (ldB,))
        A["bB"] = padded(bB, (ldV,))
        # bA - bB of the stored (rounded) parameters, in float64
        A["dbias"] = A["bA"].astype(np.float64) - A["bB"].astype(np.float64)
        A["v"] = np.zeros((R, max(ldV, 1)), dtype=np.uint8)
        A["hA"] = np.zeros((R, max(ldA, 16)), dtype=np.uint8)
        A["hB"] = np.zeros((R, max(ldB, 16)), dtype=np.uint8)
        A["xA"] = np.zeros((R, max(ldA, 16)), dtype=dtype)
        A["xB"] = np.zeros((R, max(ldB, 16)), dtype=dtype)
        A["uA"] = np.zeros((R, max(ldV, 16)), dtype=dtype)
        A["uB"] = np.zeros((R, max(ldV, 16)), dtype=dtype)
        for name, ld in (("v", ldV), ("hA", ldA), ("hB", ldB)):
            key = "vlist" if name == "v" else "hlist" + name[1]
            count = "nv" if name == "v" else "nh" + name[1]
            A[key] = np.zeros((R, max(ld, 16)), dtype=np.int32)
            A[key + "_off"] = np.zeros((R, max(ld, 16)), dtype=np.int32)
            A[count] = np.zeros(R, dtype=np.int32)
            A[count + "_off"] = np.zeros(R, dtype=np.int32)
        A["logw"] = np.zeros(R, dtype=np.float64)
        A["dot"] = np.zeros(R, dtype=np.float64)
        A["rng"] = streams.copy()
        tile_rows = CYRBM_AK_TILE_BYTES // CYRBM_AK_CHUNK_BYTES
        cur_stride = 2 * (-(-max(D, nA, nB, 1) // tile_rows) + 2)
        A["cur"] = np.zeros(R * cur_stride, dtype=np.int32)
        A["xs_counts"] = np.zeros(R * 2 * (D + 1), dtype=np.int32)
        A["xs_entries"] = np.zeros(R * 2 * D, dtype=np.int32)

        self.pair.D, self.pair.nA, self.pair.nB = D, nA, nB
        self.pair.ldV, self.pair.ldA, self.pair.ldB = ldV, ldA, ldB
        self.pair.WA = _ptr(A["WA"])
        self.pair.WAT = _ptr(A["WAT"])
        self.pair.aA = _ptr(A["aA"])
        self.pair.bA = _ptr(A["bA"])
        self.pair.WB = _ptr(A["WB"])
        self.pair.WBT = _ptr(A["WBT"])
        self.pair.aB = _ptr(A["aB"])
        self.pair.bB = _ptr(A["bB"])
        self.pair.dbias = <const double *> _ptr(A["dbias"])
        # |x_j| <= |a_j| + sum_i |W_ij| for every 0/1 v (of the stored values; +1% margin)
        self.pair.xboundA = _xbound(A["WA"][:D, :nA], A["aA"][:nA])
        self.pair.xboundB = _xbound(A["WB"][:D, :nB], A["aB"][:nB])
        self.st.v = <uint8_t *> _ptr(A["v"])
        self.st.hA = <uint8_t *> _ptr(A["hA"])
        self.st.hB = <uint8_t *> _ptr(A["hB"])
        self.st.xA = _ptr(A["xA"])
        self.st.xB = _ptr(A["xB"])
        self.st.uA = _ptr(A["uA"])
        self.st.uB = _ptr(A["uB"])
        self.st.vlist = <int32_t *> _ptr(A["vlist"])
        self.st.vlist_off = <int32_t *> _ptr(A["vlist_off"])
        self.st.nv = <int32_t *> _ptr(A["nv"])
        self.st.nv_off = <int32_t *> _ptr(A["nv_off"])
        self.st.hlistA = <int32_t *> _ptr(A["hlistA"])
        self.st.hlistA_off = <int32_t *> _ptr(A["hlistA_off"])
        self.st.nhA = <int32_t *> _ptr(A["nhA"])
        self.st.nhA_off = <int32_t *> _ptr(A["nhA_off"])
        self.st.hlistB = <int32_t *> _ptr(A["hlistB"])
        self.st.hlistB_off = <int32_t *> _ptr(A["hlistB_off"])
        self.st.nhB = <int32_t *> _ptr(A["nhB"])
        self.st.nhB_off = <int32_t *> _ptr(A["nhB_off"])
        self.st.logw = <double *> _ptr(A["logw"])
        self.st.dot = <double *> _ptr(A["dot"])
        self.st.rng = <uint64_t *> _ptr(A["rng"])
        self.st.cur = <int32_t *> _ptr(A["cur"])
        self.st.cur_stride = cur_stride
        self.st.xs_counts = <int32_t *> _ptr(A["xs_counts"])
        self.st.xs_entries = <int32_t *> _ptr(A["xs_entries"])

    # ------------------------------------------------------------------ states
    @property
    def log_weights(self):
        """The runs' log importance weights (float64), a copy."""
        return self.arrays["logw"].copy()

    @property
    def streams(self):
        """The runs' random stream states (runs x 32 uint64), a copy."""
        return self.arrays["rng"].copy()

    def visible(self):
        """The runs' visible states, runs x n_visible uint8 (a copy)."""
        return self.arrays["v"][:, :self.D].copy()

    def set_visible(self, v):
        """Set the runs' visible states (runs x n_visible 0/1); the next ``steps`` call
        must use force_refresh."""
        v = np.asarray(v, dtype=np.uint8)
        if v.shape != (self.runs, self.D):
            raise ValueError(f"visible states must have shape {(self.runs, self.D)}.")
        self.arrays["v"][:, :self.D] = v
        self.arrays["nv"][:] = 0
        self.arrays["nv_off"][:] = 0

    def reset_weights(self):
        self.arrays["logw"][:] = 0.0

    # ------------------------------------------------------------------ kernels
    def sample_visible(self, double beta=0.0):
        """Draw every run's visible layer at ``beta`` from its current inputs; with A
        the base-rate model and beta = 0, exact independent samples from p_A."""
        with nogil:
            ais_visible(&self.pair, &self.st, self.float32, self.runs, beta, self.n_threads)

    def steps(self, const double[::1] betas, Py_ssize_t k0, Py_ssize_t k1, Py_ssize_t k_end,
              bint weights=True, bint force_refresh=False):
        """Steps k0 <= k < k1 of the schedule ``betas`` (transitions while k < k_end)."""
        if k0 < 0 or k1 > betas.shape[0] or (weights and k0 < 1):
            raise ValueError("steps outside the schedule.")
        with nogil:
            ais_steps(&self.pair, &self.st, self.float32, self.runs, &betas[0], k0, k1, k_end,
                      1 if weights else 0, self.refresh_every, 1 if force_refresh else 0,
                      self.n_threads)

    def gibbs_a(self, Py_ssize_t n_steps, bint force_refresh=True):
        """``n_steps`` block-Gibbs sweeps of every run under model A alone (beta = 0):
        hA ~ p(hA | v), v ~ p(v | hA).  Used to draw AIS starting states from A."""
        if n_steps <= 0:
            return
        betas = np.zeros(n_steps, dtype=np.float64)
        cdef double[::1] bv = betas
        cdef Py_ssize_t saved = self.pair.nB
        self.pair.nB = 0
        try:
            with nogil:
                ais_steps(&self.pair, &self.st, self.float32, self.runs, &bv[0], 0, n_steps,
                          n_steps + 1, 0, self.refresh_every, 1 if force_refresh else 0,
                          self.n_threads)
        finally:
            self.pair.nB = saved


def _xbound(W, a):
    if W.size == 0:
        return 0.0
    b = np.abs(np.asarray(a, dtype=np.float64)) + np.abs(np.asarray(W, dtype=np.float64)).sum(axis=0)
    return float(b.max()) * 1.01 + 1e-6


cdef void *_ptr(object arr) except NULL:
    cdef Py_ssize_t address = arr.__array_interface__["data"][0]
    if address == 0:
        raise ValueError("empty buffer")
    return <void *> address


def xoshiro_lanes(uint64_t[:, ::1] streams, Py_ssize_t n_draws):
    """``n_draws`` 64-bit outputs of each run's 8 lanes (runs x n_draws x 8), advancing
    the states in place: the raw stream, for tests against a reference implementation."""
    cdef Py_ssize_t R = streams.shape[0], r, k, l
    out = np.empty((R, n_draws, 8), dtype=np.uint64)
    cdef uint64_t[:, :, ::1] o = out
    cdef uint64_t *s
    cdef uint64_t result, t
    for r in range(R):
        s = &streams[r, 0]
        for k in range(n_draws):
            for l in range(8):
                result = _rotl(s[l] + s[24 + l], 23) + s[l]
                t = s[8 + l] << 17
                s[16 + l] ^= s[l]
                s[24 + l] ^= s[8 + l]
                s[8 + l] ^= s[16 + l]
                s[l] ^= s[24 + l]
                s[16 + l] ^= t
                s[24 + l] = _rotl(s[24 + l], 45)
                o[r, k, l] = result
    return out


cdef inline uint64_t _rotl(uint64_t x, int k) noexcept nogil:
    return (x << k) | (x >> (64 - k))


def _engine_array(AISEngine engine, name):
    """One of the engine's internal arrays (for tests and diagnostics)."""
    return engine.arrays[name]


cdef extern from *:
    """
    #if defined(CYRBM_AK_PROFILE) && defined(__x86_64__)
    static void cyrbm_ak_prof_get(uint64_t *out) { int i; for (i = 0; i < 8; i++) { out[i] = cyrbm_ak_prof[i]; cyrbm_ak_prof[i] = 0; } }
    #else
    static void cyrbm_ak_prof_get(uint64_t *out) { int i; for (i = 0; i < 8; i++) out[i] = 0; }
    #endif
    """
    void cyrbm_ak_prof_get(uint64_t *out)


def _profile():
    """Cycles spent per phase since the last call (builds with -DCYRBM_AK_PROFILE only)."""
    cdef uint64_t out[8]
    cyrbm_ak_prof_get(out)
    return [int(out[i]) for i in range(8)]
