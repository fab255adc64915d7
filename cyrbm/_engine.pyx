# cython: language_level=3
"""cyrbm's Gibbs engine from Python (``GibbsEngine``: its runs between two RBMs A and B,
SM08 Eq. 13-17) and block Gibbs sampling of an RBM on it (SM08 Eq. 5-6: ``gibbs_sample``,
its nogil driver ``gibbs_sweeps`` shared with the C API).

The buffers and the one loop of the engine's transitions are in _anneal.pyx
(``ais_alloc``, ``engine_run``, ``ais_anneal``); parallel tempering's swaps in
_tempering.pyx.
"""
import numpy as np

from cyrbm._omp cimport raise_set_error
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, memset
from cython cimport floating

from cyrbm._random cimport cyrbm_rng, check_streams
from cyrbm._ckernels cimport *
from cyrbm._anneal cimport (ais_buffers, ais_alloc, ais_free, ais_set_rbm, ais_set_tempered,
                            ais_visible, ais_anneal, ais_refresh_inputs, engine_run,
                            valid_ladder, GIBBS_REFRESH)
from cyrbm._tempering cimport pt_swaps, tempered_sums


cdef int gibbs_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                      Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, uint8_t *h,
                      Py_ssize_t n, int steps, cyrbm_rng *streams,
                      int n_threads, bint check_signals=False) noexcept nogil:
    """``steps`` block-Gibbs sweeps h ~ p(h|v), v ~ p(v|h) (SM08 Eq. 5-6) on n chains, on
    the Gibbs engine (the RBM as model A, inputs updated by the flipped units' weight
    rows and recomputed every GIBBS_REFRESH sweeps).

    v (n x n_visible, INOUT) is updated in place; h (n x n_hidden, OUT) receives the last
    hidden states; chain r's 8 engine lanes are seeded from streams[r] (INOUT, advanced
    by 32 draws, cyrbm_rng_seed_run).  Returns 0, -1 when memory runs out, -2 for
    invalid sizes, and with ``check_signals`` (the Python wrapper; not the C API) -3 when a
    Python signal handler raised (see signal_raised; v, h and streams are then unchanged)."""
    cdef ais_buffers B
    cdef double *beta = NULL
    cdef Py_ssize_t r, ldV, ldA
    cdef int status
    if n <= 0 or steps <= 0:
        return 0 if n >= 0 and steps >= 0 else -2
    B.block = NULL
    status = ais_alloc(&B, floating is float, n, n_visible, n_hidden, 0)
    if status != 0:
        return status
    beta = <double *> calloc(n, sizeof(double))          # every chain at beta = 0: A alone
    if beta == NULL:
        ais_free(&B)
        return -1
    ais_set_rbm(&B, 0, W, vbias, hbias)
    ais_set_rbm(&B, 1, <const floating *> NULL, vbias, <const floating *> NULL)
    ldV, ldA = B.pair.ldV, B.pair.ldA
    for r in range(n):
        cyrbm_rng_seed_run(&streams[r], B.st.rng + r * CYRBM_AK_RNG_WORDS)
        memcpy(B.st.v + r * ldV, v + r * n_visible, n_visible)
    status = engine_run(&B, False, beta, 0, steps, 0, 0, GIBBS_REFRESH, 1, n_threads,
                        check_signals, 1)
    if status == 0:
        for r in range(n):
            memcpy(v + r * n_visible, B.st.v + r * ldV, n_visible)
            if h != NULL and n_hidden > 0:
                memcpy(h + r * n_hidden, B.st.hA + r * ldA, n_hidden)
    free(beta)
    ais_free(&B)
    return status


def gibbs_sample(const floating[:, ::1] W, const floating[::1] vbias,
                 const floating[::1] hbias, uint8_t[:, ::1] v, uint8_t[:, ::1] h, int steps,
                 uint64_t[:, ::1] streams, int n_threads=1):
    """``steps`` block-Gibbs sweeps of the chains ``v`` (INOUT), the last hidden states
    in ``h`` (OUT), chain r seeded from streams[r] (INOUT, (n, 4) uint64): gibbs_sweeps."""
    cdef Py_ssize_t n = v.shape[0], D = W.shape[0], M = W.shape[1]
    cdef int status
    if v.shape[1] != D or h.shape[0] != n or h.shape[1] != M or vbias.shape[0] != D \
            or hbias.shape[0] != M:
        raise ValueError("chain, bias and weight shapes do not match.")
    check_streams(streams, n, "gibbs_sample: streams")
    if n == 0 or steps <= 0:
        return
    with nogil:
        status = gibbs_sweeps(&W[0, 0], &vbias[0], &hbias[0], D, M, &v[0, 0],
                              &h[0, 0] if M > 0 else NULL, n, steps,
                              <cyrbm_rng *> &streams[0, 0], n_threads, True)
    if status == -3:
        raise_set_error()
    if status == -1:
        raise MemoryError("no memory for the Gibbs chains.")
    if status != 0:
        raise ValueError(f"invalid Gibbs sizes: {n} chains, {D} visible, {M} hidden.")

cdef void _store_models(ais_buffers *B, const floating[:, ::1] WA, const floating[::1] bA,
                        const floating[::1] aA, const floating[:, ::1] WB,
                        const floating[::1] bB, const floating[::1] aB):
    """Store RBMs A and B (``ais_set_rbm``), given in the buffers' own float type."""
    ais_set_rbm(B, 0, &WA[0, 0] if WA.shape[1] > 0 else NULL, &bA[0],
                &aA[0] if aA.shape[0] > 0 else NULL)
    ais_set_rbm(B, 1, &WB[0, 0] if WB.shape[1] > 0 else NULL, &bB[0],
                &aB[0] if aB.shape[0] > 0 else NULL)

cdef class GibbsEngine:
    """cyrbm's Gibbs engine: the state of ``runs`` chains between RBMs A and B, and its
    transitions (SM08 Eq. 13-17).

    Each chain (an AIS run, a Gibbs chain) keeps its binary layers, its inputs (updated
    by the weight rows of the units that flip) and its own 8 random stream lanes.
    Transitions: ``steps`` (annealing with log importance weights, all chains at the
    schedule's beta), ``sweep`` (block Gibbs with each chain at its own beta: tempering),
    ``sample_visible`` (a visible half-step).  AIS, ratio AIS's starting chains and
    RBM.sample are schedules of these transitions.

    A is given by its visible biases ``bA`` and, optionally, weights ``WA`` (n_visible x
    nA) and hidden biases ``aA``; with no hidden units it is the base-rate model (Eq. 18).
    ``streams`` holds 32 uint64 words per run (8 xoshiro256++ lanes), advanced in place.
    All parameters are stored (padded) in ``dtype``, float32 or float64; log weights are
    float64.  The buffers are those of ``ais_alloc`` / ``ais_set_rbm``, the layout the C
    and Cython API use too.
    """
    cdef ais_buffers buf
    cdef readonly Py_ssize_t runs, D, nA, nB
    cdef readonly bint float32
    cdef public int n_threads
    cdef public Py_ssize_t refresh_every

    def __cinit__(self):
        self.buf.block = NULL

    def __dealloc__(self):
        ais_free(&self.buf)

    def __init__(self, bA, WA, aA, WB, bB, aB, streams, *, dtype=np.float32, n_threads=1,
                 refresh_every=200):
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise ValueError("dtype must be float32 or float64.")
        # parameters converted once to the engine's float type (a float64 model in a
        # float32 engine is rounded as a C cast would: the same values), then stored by
        # plain row copies
        dt = np.float32 if dtype == np.float32 else np.float64
        if WA is None:
            WA = np.zeros((np.shape(WB)[0], 0))
            aA = np.zeros(0)
        WAx, bAx, aAx, WBx, bBx, aBx = (np.ascontiguousarray(x, dtype=dt)
                                        for x in (WA, bA, aA, WB, bB, aB))
        cdef Py_ssize_t D = WBx.shape[0], nB = WBx.shape[1], nA = WAx.shape[1]
        cdef int status
        streams = np.ascontiguousarray(streams, dtype=np.uint64)
        R = streams.shape[0]
        if streams.shape != (R, CYRBM_AK_RNG_WORDS):
            raise ValueError(f"streams must have shape (runs, {CYRBM_AK_RNG_WORDS}).")
        if (WAx.ndim != 2 or WBx.ndim != 2 or bAx.shape != (D,) or bBx.shape != (D,)
                or WAx.shape[0] != D or aAx.shape != (nA,) or aBx.shape != (nB,)):
            raise ValueError("the two models' parameters have inconsistent shapes.")
        ais_free(&self.buf)
        status = ais_alloc(&self.buf, dtype == np.float32, R, D, nA, nB)
        if status == -1:
            raise MemoryError("no memory for the AIS runs.")
        if status != 0:
            raise ValueError(f"invalid AIS sizes: {R} runs, {D} visible, {nA} and {nB} hidden.")
        self.float32 = dtype == np.float32
        self.runs, self.D, self.nA, self.nB = R, D, nA, nB
        self.n_threads = n_threads
        self.refresh_every = refresh_every
        if self.float32:
            _store_models[float](&self.buf, WAx, bAx, aAx, WBx, bBx, aBx)
        else:
            _store_models[double](&self.buf, WAx, bAx, aAx, WBx, bBx, aBx)
        self._view_rng()[:] = streams

    cdef _view_rng(self):
        return np.asarray(<uint64_t[:self.runs, :CYRBM_AK_RNG_WORDS]> self.buf.st.rng)

    cdef _view_v(self):
        return np.asarray(<uint8_t[:self.runs, :self.buf.pair.ldV]> self.buf.st.v)

    # ------------------------------------------------------------------ states
    @property
    def log_weights(self):
        """The runs' log importance weights (float64), a copy."""
        return np.asarray(<double[:self.runs]> self.buf.st.logw).copy()

    @property
    def top_log_weights(self):
        """The top sums of the last ``sweep(top=...)`` (float64, one per run), a copy."""
        return np.asarray(<double[:self.runs]> self.buf.st.logw_top).copy()

    @property
    def streams(self):
        """The runs' random stream states (runs x 32 uint64), a copy."""
        return self._view_rng().copy()

    def visible(self, rows=None):
        """The runs' visible states, runs x n_visible uint8 (a copy), or those of the
        runs ``rows``."""
        if rows is None:
            return self._view_v()[:, :self.D].copy()
        return np.ascontiguousarray(self._view_v()[np.asarray(rows, dtype=np.intp), :self.D])

    def inputs(self):
        """The chains' kept inputs, copies in the engine's dtype: (xA, xB, uA, uB), the
        hidden pre-activations W^T v + a of A and B (runs x nA, runs x nB) and the visible
        inputs W h from A's and B's hidden units (runs x n_visible).  They are updated by
        the flipped units' weight rows, so they show any change of summation order.  In
        the tempered configuration (``set_tempered``) the uB of a run whose last sweep was
        at beta = 0 is not kept (its visible draw does not use it; it is recomputed when
        the run's beta becomes nonzero)."""
        return (self._input(<char *> self.buf.st.xA, self.buf.pair.ldA, self.nA),
                self._input(<char *> self.buf.st.xB, self.buf.pair.ldB, self.nB),
                self._input(<char *> self.buf.st.uA, self.buf.pair.ldV, self.D if self.nA else 0),
                self._input(<char *> self.buf.st.uB, self.buf.pair.ldV, self.D if self.nB else 0))

    def hidden_inputs_b(self, rows):
        """B's kept hidden inputs x = W^T v + a_B of the runs ``rows`` (a copy in the
        engine's dtype, len(rows) x nB), without copying the others.  In the tempered
        configuration (a_B = 0) and after ``swap`` (which brings them up to date with the
        last visible flips) they are W^T v of the runs' current states."""
        dt = np.float32 if self.float32 else np.float64
        cdef Py_ssize_t f = 4 if self.float32 else 8, R = self.runs, ld = self.buf.pair.ldB
        rows = np.asarray(rows, dtype=np.intp)
        if rows.size and (rows.min() < 0 or rows.max() >= R):
            raise ValueError("run index out of range.")
        if self.nB == 0:
            return np.zeros((rows.size, 0), dt)
        full = np.asarray(<char[:R * ld * f]> <char *> self.buf.st.xB).view(dt).reshape(R, ld)
        return np.ascontiguousarray(full[rows, :self.nB])

    cdef _input(self, char *ptr, Py_ssize_t ld, Py_ssize_t n):
        dt = np.float32 if self.float32 else np.float64
        cdef Py_ssize_t f = 4 if self.float32 else 8, R = self.runs
        if n == 0 or ptr == NULL:
            return np.zeros((R, 0), dt)
        return np.asarray(<char[:R * ld * f]> ptr).view(dt).reshape(R, ld)[:, :n].copy()

    def set_visible(self, v):
        """Set the runs' visible states (runs x n_visible 0/1); the next ``steps`` call
        must use force_refresh."""
        v = np.asarray(v, dtype=np.uint8)
        if v.shape != (self.runs, self.D):
            raise ValueError(f"visible states must have shape {(self.runs, self.D)}.")
        self._view_v()[:, :self.D] = v
        memset(self.buf.st.nv, 0, self.runs * sizeof(int32_t))
        memset(self.buf.st.nv_off, 0, self.runs * sizeof(int32_t))

    def reset_weights(self):
        memset(self.buf.st.logw, 0, self.runs * sizeof(double))

    # ------------------------------------------------------------------ kernels
    def sample_visible(self, double beta=0.0):
        """Draw every run's visible layer at ``beta`` from its current inputs; with A
        the base-rate model and beta = 0, exact independent samples from p_A."""
        with nogil:
            ais_visible(&self.buf.pair, &self.buf.st, self.float32, self.runs, beta,
                        self.n_threads)

    def steps(self, const double[::1] betas, Py_ssize_t k0, Py_ssize_t k1, Py_ssize_t k_end,
              bint weights=True, bint force_refresh=False):
        """Steps k0 <= k < k1 of the schedule ``betas`` (transitions while k < k_end)."""
        if k0 < 0 or k1 > betas.shape[0] or (weights and k0 < 1):
            raise ValueError("steps outside the schedule.")
        if weights and self.buf.pair.eB != NULL:
            raise ValueError("the tempered (CRI10) configuration has no log weights.")
        cdef int status
        with nogil:
            status = engine_run(&self.buf, True, &betas[0], k0, k1, k_end,
                                1 if weights else 0, self.refresh_every,
                                1 if force_refresh else 0, self.n_threads, True)
        if status == -3:
            raise_set_error()       # the runs are left part-way

    def anneal(self, const double[::1] betas, Py_ssize_t k0, Py_ssize_t k1):
        """Steps k0 <= k < k1 of AIS over the schedule ``betas`` (ais_anneal, the driver
        the C API runs too): k = 0 draws the runs' v exactly from A (the base-rate model),
        each k >= 1 adds to the log weights and, before the last beta, moves the runs."""
        cdef Py_ssize_t K = betas.shape[0] - 1
        cdef int status
        if k0 < 0 or k1 > K + 1 or K < 1:
            raise ValueError("steps outside the schedule.")
        if self.buf.pair.eB != NULL:
            raise ValueError("the tempered (CRI10) configuration has no log weights.")
        with nogil:
            status = ais_anneal(&self.buf, &betas[0], K, k0, k1, self.refresh_every,
                                self.n_threads, True)
        if status == -3:
            raise_set_error()       # the runs are left part-way

    def sweep(self, Py_ssize_t n_steps, beta=None, force_refresh=True,
              Py_ssize_t start=0, bint a_only=False, bint tempered_sums=False, top=None):
        """``n_steps`` tempered block-Gibbs sweeps, chain r at inverse temperature beta[r]
        (a number for all, or one per chain; default 0): each sweep leaves chain r's
        p_beta[r] invariant, p_beta(v) ~ sum exp(-(1 - beta) E_A - beta E_B).  With
        ``a_only`` model B is left out (beta must be 0): plain block Gibbs on A.

        The sweeps are numbered from ``start`` (inputs are recomputed exactly at sweeps
        that are multiples of ``refresh_every``), so a long chain taken in pieces, with
        ``force_refresh`` only on the first, equals the chain taken in one call.
        ``force_refresh="inputs"``: the runs' inputs x were just recomputed by
        ``refresh_inputs`` (with the current parameters), so the first sweep refreshes
        only the rest: the same numbers as ``force_refresh=True``.  ``tempered_sums``
        (CRI10's configuration, with force_refresh): the first sweep also leaves in
        ``log_weights`` each run's ``tempered_sums`` at its beta, of its state before the
        sweep moved it, with ``set_bias_change``'s dbias: the same numbers, from the exps
        the hidden draws take anyway.  ``top=(beta_from, beta_to)`` with them: the runs
        at beta_from also leave in ``top_log_weights`` their ``tempered_sums`` at beta_to
        (the same numbers; the others' entries are left as they were)."""
        cdef int mode = 2 if force_refresh == "inputs" else (1 if force_refresh else 0)
        if n_steps <= 0:
            return
        if top is not None:
            if not (tempered_sums and mode):
                raise ValueError("top sums come with a sweep's tempered_sums.")
            top_from, top_beta = (float(t) for t in top)
            if not (0.0 <= top_from <= 1.0 and 0.0 <= top_beta <= 1.0):
                raise ValueError("inverse temperatures must lie in [0, 1].")
        if start < 0:
            raise ValueError("start must be >= 0.")
        b = np.zeros(self.runs) if beta is None else np.broadcast_to(
            np.asarray(beta, dtype=np.float64), (self.runs,))
        if not np.all((b >= 0) & (b <= 1)):
            raise ValueError("inverse temperatures must lie in [0, 1].")
        if a_only and np.any(b != 0):
            raise ValueError("a_only sweeps run at beta = 0.")
        cdef double[::1] bv = np.array(b, dtype=np.float64)   # a writable copy
        cdef Py_ssize_t saved = self.buf.pair.nB
        if a_only:
            self.buf.pair.nB = 0
        if top is not None:
            self.buf.st.top_from, self.buf.st.top_beta = top_from, top_beta
            self.buf.st.top_on = 1
        cdef int status
        try:
            with nogil:
                status = engine_run(&self.buf, False, &bv[0], start, start + n_steps, 0,
                                    2 if tempered_sums and mode else 0,
                                    self.refresh_every, mode, self.n_threads, True)
        finally:
            self.buf.pair.nB = saved
            self.buf.st.top_on = 0
        if status == -3:
            raise_set_error()       # the chains are left part-way

    # ------------------------------------------------------- parallel tempering
    def set_tempered(self, W, vbias, hbias):
        """(Re)store the RBM (W, vbias, hbias) in CRI10's tempered configuration (the
        engine must have been made with no hidden units in A and n_hidden in B): a chain
        at beta then moves by the RBM (beta W, b, c) (ais_set_tempered).  The next sweep
        must use force_refresh (the chains' kept inputs belong to the old parameters)."""
        dt = np.float32 if self.float32 else np.float64
        cdef float[:, ::1] W32
        cdef float[::1] b32, c32
        cdef double[:, ::1] W64
        cdef double[::1] b64, c64
        if self.nA != 0 or np.shape(W) != (self.D, self.nB) or np.shape(vbias) != (self.D,) \
                or np.shape(hbias) != (self.nB,):
            raise ValueError("a tempered engine needs no hidden units in A and the RBM's in B.")
        if self.float32:
            W32 = np.ascontiguousarray(W, dt)
            b32 = np.ascontiguousarray(vbias, dt)
            c32 = np.ascontiguousarray(hbias, dt)
            with nogil:
                ais_set_tempered(&self.buf, &W32[0, 0], &b32[0], &c32[0])
        else:
            W64 = np.ascontiguousarray(W, dt)
            b64 = np.ascontiguousarray(vbias, dt)
            c64 = np.ascontiguousarray(hbias, dt)
            with nogil:
                ais_set_tempered(&self.buf, &W64[0, 0], &b64[0], &c64[0])

    def refresh_inputs(self):
        """Recompute every run's inputs x = W^T v + a exactly as a refreshing sweep does,
        no flips left pending (cyrbm_ais_refresh_inputs): the next ``sweep`` may then
        take ``force_refresh="inputs"``.  In the tempered configuration, after
        ``set_tempered``, the kept inputs are then W^T v of the new parameters
        (``tempered_sums``)."""
        if self.runs == 0:
            return
        with nogil:
            ais_refresh_inputs(&self.buf, self.n_threads)

    def set_bias_change(self, dbias):
        """The dbias (n_visible, float64) of the next sweep's ``tempered_sums`` in CRI10's
        configuration (``set_tempered`` resets it to 0)."""
        if self.buf.pair.eB == NULL:
            raise ValueError("a bias change needs the tempered configuration (set_tempered).")
        d = np.ascontiguousarray(dbias, dtype=np.float64)
        if d.shape != (self.D,):
            raise ValueError(f"dbias must have {self.D} entries.")
        cdef const double[::1] dv = d
        cdef double *db = <double *> self.buf.pair.dbias
        memcpy(db, &dv[0], self.D * sizeof(double))

    def tempered_sums(self, rows, beta, dbias=None):
        """The PT tracker's free-energy terms of the runs ``rows`` from the kept inputs
        (current after ``swap`` or ``refresh_inputs``), in CRI10's tempered configuration:
        sum_j softplus(beta[i] (W^T v)_j + c_j) + dbias.v (float64; dbias of n_visible,
        or None for 0), each summed as the swaps sum it (cyrbm_tempered_sums)."""
        if self.buf.pair.eB == NULL:
            raise ValueError("tempered sums need the tempered configuration (set_tempered).")
        cdef const int32_t[::1] rv = np.ascontiguousarray(rows, dtype=np.int32)
        cdef const double[::1] bv = np.array(np.broadcast_to(
            np.asarray(beta, np.float64), (rv.shape[0],)))
        cdef Py_ssize_t n = rv.shape[0]
        cdef const double[::1] db
        cdef const double *dp = NULL
        out = np.zeros(n)
        cdef double[::1] ov = out
        if n and (np.min(rows) < 0 or np.max(rows) >= self.runs):
            raise ValueError("run index out of range.")
        if dbias is not None:
            db = np.ascontiguousarray(dbias, dtype=np.float64)
            if db.shape[0] != self.D:
                raise ValueError(f"dbias must have {self.D} entries.")
            dp = &db[0]
        if n == 0:
            return out
        with nogil:
            tempered_sums(&self.buf.pair, &self.buf.st, self.float32, n, &rv[0], &bv[0], dp,
                          &ov[0], self.n_threads)
        return out

    def swap(self, const double[::1] temps, int32_t[:, ::1] order, double[::1] beta,
             uint64_t[:, ::1] streams, int64_t[:, ::1] accepted, terms=None):
        """Swaps of neighbouring temperatures in every ladder (CRI10 Table I step 4b,
        Eq. 5; cyrbm_pt_swaps), after at least one sweep since the chains were set.
        Ladder m is runs m K1 .. m K1 + K1 - 1 (K1 = len(temps)); order[m, k] (INOUT) is
        its run at temps[k]; beta (OUT, one per run) the runs' new temperatures, ready
        for ``sweep``; streams (INOUT, (ladders, 4)) the swap uniforms; accepted (INOUT,
        (ladders, K1 - 1)) counts accepted swaps per pair; terms (OUT, (ladders, 3 K1 -
        1) float64, or None) the PT tracker's terms of cyrbm_pt_swaps."""
        cdef double[:, ::1] tv
        cdef double *tp = NULL
        cdef Py_ssize_t K1 = temps.shape[0], n = order.shape[0]
        if self.buf.pair.eB == NULL:
            raise ValueError("swaps need the tempered configuration (set_tempered).")
        if K1 < 2 or order.shape[1] != K1 or n * K1 != self.runs or beta.shape[0] != self.runs \
                or accepted.shape[0] != n or accepted.shape[1] != K1 - 1:
            raise ValueError("ladder, temperature and count shapes do not match.")
        check_streams(streams, n, "swap: streams")
        if not valid_ladder(&temps[0], K1):
            raise ValueError("temperatures must rise strictly from t_0 >= 0 to exactly 1.")
        o = np.asarray(order)
        if not np.array_equal(np.sort(o, axis=1),
                              np.arange(self.runs, dtype=np.int32).reshape(n, K1)):
            raise ValueError("order must hold each ladder's own runs once.")
        if terms is not None:
            tv = terms
            if tv.shape[0] != n or tv.shape[1] != 3 * K1 - 1:
                raise ValueError("terms must have shape (ladders, 3 K1 - 1).")
            tp = &tv[0, 0]
        with nogil:
            pt_swaps(&self.buf.pair, &self.buf.st, self.float32, n, K1, &temps[0],
                     &order[0, 0], &beta[0], <cyrbm_rng *> &streams[0, 0], &accepted[0, 0],
                     self.n_threads, tp)


# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._dispatch cimport kernel_table
cyrbm_kt = kernel_table()
