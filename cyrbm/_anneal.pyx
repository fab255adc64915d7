# cython: language_level=3
"""Compiled kernels of annealed importance sampling (AIS) and exact partition functions.

Notation follows Salakhutdinov & Murray (2008): an RBM with weights W (n_visible x
n_hidden), visible biases b and hidden biases a has p*(v) = exp(b.v) prod_j (1 + exp(a_j +
sum_i W_ij v_i)) (Eq. 2) and Z = sum_v p*(v) (Eq. 3).

* ``exact_log_partition`` sums over every state of the smaller layer (Gray-code order,
  float64, a stable log-sum-exp; chunks of fixed size combined in a fixed order, so the
  result does not depend on the number of threads).
* ``GibbsEngine`` holds the runs of AIS between two RBMs A and B that share their visible
  units (Eq. 13-17); A without hidden units is the base-rate model of Eq. 18.  Each run
  draws only from its own random streams, so results do not depend on the number of
  threads.
* ``ais_alloc`` / ``ais_set_rbm`` / ``ais_free`` (cdef, nogil, malloc-based) are the one
  layout of the kernels' buffers, used by ``GibbsEngine`` and by the C/Cython API
  (cyrbm.capi: its ``ais_log_partition`` runs ``ais_anneal`` on them).

The loops themselves are in cyrbm/_kernels/anneal.c.
"""
import numpy as np

from cython.parallel cimport prange, parallel
from cyrbm._omp cimport cap_threads, seconds_now, signal_raised, raise_set_error, time_to_check
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t, uintptr_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy, memset
from libc.math cimport log, exp, fabs, isfinite, INFINITY

cdef double _LN2 = 0.6931471805599453
# limits that keep every size computation far from overflow (int32 unit indices)
cdef Py_ssize_t _MAX_UNITS = 1 << 24
cdef Py_ssize_t _MAX_RUNS = 1 << 28
# block-Gibbs chains recompute their inputs exactly every so many sweeps (float32 drift)
cdef Py_ssize_t GIBBS_REFRESH = 200
# subset tables for steps with many flips: 0 never, 1 when cheaper (default), 2 always.
# Every run streams all the tables through its core's caches at every step, so they pay
# only while they stay in the shared cache: not built beyond 16 MB (a float32 784 x 500
# model's take 12.8 MB; in float64 they measured slower than the row updates on 2 threads)
cdef int _dense_mode = 1
cdef size_t _MAX_TABLE_BYTES = (<size_t> 1) << 24
cdef Py_ssize_t _dense_x = CYRBM_AK_DENSE_X, _dense_u = CYRBM_AK_DENSE_U


def _dense_thresholds(x=None, u=None):
    """Tuning hook (bench/README.md): the percentages of a layer's units whose flips make
    a run recompute its inputs from the tables; returns the previous pair."""
    global _dense_x, _dense_u
    previous = (_dense_x, _dense_u)
    if x is not None:
        _dense_x = x
    if u is not None:
        _dense_u = u
    return previous


def use_dense_tables(mode):
    """Set when the engines made from now on recompute inputs from subset tables
    ("never", "auto": when many units flip, "always"); returns the previous mode.  The
    numbers depend on the mode (it changes summation orders), never on the variant or the
    threads; "never" and "always" exist for tests of both paths."""
    global _dense_mode
    names = ("never", "auto", "always")
    if mode not in names:
        raise ValueError(f"mode must be one of {names}, not {mode!r}.")
    previous = names[_dense_mode]
    _dense_mode = names.index(mode)
    return previous


cdef void _run_steps(ais_buffers *B, bint anneal, Py_ssize_t first, Py_ssize_t runs,
                     const double *betas, Py_ssize_t s0, Py_ssize_t s1, Py_ssize_t k_end,
                     int weights, Py_ssize_t refresh_every, int force_refresh,
                     int n_threads) noexcept nogil:
    """Steps s0 <= s < s1 of the runs first <= r < runs: AIS steps of the schedule
    ``betas`` (``anneal``, cyrbm_ais_block in cyrbm/_kernels/anneal_t.h: log weights if
    ``weights``, a block-Gibbs transition at beta_s while s < k_end) or tempered
    block-Gibbs sweeps, run r at betas[r] (cyrbm_gibbs_tempered).

    With Gaussian visible units (``B.gauss``): steps of cyrbm_gauss_block (gauss_t.h),
    the transition at every step, log weights if the buffers ask for them.

    The runs are split into one contiguous block per thread, each taken through all the
    steps with no synchronisation; each run's arithmetic and random numbers are the same
    whatever the split.
    """
    cdef int nt = cap_threads(n_threads, runs - first)
    cdef Py_ssize_t t, r0, r1, n = runs - first
    cdef const cyrbm_ais_pair *P = &B.pair
    cdef cyrbm_ais_state *S = &B.st
    cdef bint f32 = B.float32
    if n <= 0 or s1 <= s0:
        return
    if B.gauss != NULL:
        _gauss_steps(B.gauss, f32, first, runs, betas, s0, s1, n_threads)
        return
    for t in prange(nt, num_threads=nt, schedule='static'):
        r0 = first + t * n // nt
        r1 = first + (t + 1) * n // nt
        if anneal:
            k_ais_block(f32, P, S, r0, r1, betas, s0, s1, k_end, weights, refresh_every,
                        force_refresh)
        else:
            k_gibbs_tempered(f32, P, S, r0, r1, betas, s0, s1, refresh_every, force_refresh)


cdef void _gauss_steps(gauss_buffers *G, bint f32, Py_ssize_t first, Py_ssize_t runs,
                       const double *betas, Py_ssize_t s0, Py_ssize_t s1,
                       int n_threads) noexcept nogil:
    """Steps s0 <= s < s1 of the Gaussian runs first <= r < runs: whole blocks of
    CYRBM_GAUSS_LANES runs split among the threads (a block's chains share each weight
    load; the split changes no number), each thread on its own scratch."""
    cdef Py_ssize_t L = CYRBM_GAUSS_LANES, nb = (runs - first + L - 1) // L
    cdef int nt = cap_threads(n_threads, nb)
    cdef Py_ssize_t t, r0, r1
    for t in prange(nt, num_threads=nt, schedule='static'):
        r0 = first + (t * nb // nt) * L
        r1 = min(runs, first + ((t + 1) * nb // nt) * L)
        if f32:
            k_gauss_block(&G.pair, <float *> G.v, G.h, r0, r1, betas, s0, s1, G.weights,
                          G.streams, G.logw, <float *> G.p, G.p_step, G.work + t * G.work_bytes)
        else:
            k_gauss_block(&G.pair, <double *> G.v, G.h, r0, r1, betas, s0, s1, G.weights,
                          G.streams, G.logw, <double *> G.p, G.p_step, G.work + t * G.work_bytes)


cdef void ais_visible(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32,
                      Py_ssize_t runs, double beta, int n_threads) noexcept nogil:
    """A visible half-step at ``beta`` for all runs (see cyrbm_ais_visible)."""
    cdef int nt = cap_threads(n_threads, runs)
    cdef Py_ssize_t t, r0, r1
    if runs <= 0:
        return
    for t in prange(nt, num_threads=nt, schedule='static'):
        r0 = t * runs // nt
        r1 = (t + 1) * runs // nt
        k_ais_visible(float32, P, S, r0, r1, beta)


cdef int engine_run(ais_buffers *B, bint anneal, const double *betas, Py_ssize_t s0,
                    Py_ssize_t s1, Py_ssize_t k_end, int weights, Py_ssize_t refresh_every,
                    int force_refresh, int n_threads, bint check_signals,
                    Py_ssize_t piece=0) noexcept nogil:
    """The one driver of the engine's transitions, for the Python API (GibbsEngine) and
    the C API alike: steps s0 <= s < s1 of every run, either AIS steps (``anneal``:
    over the schedule ``betas``, transitions while s < k_end, log weights if ``weights``)
    or tempered block-Gibbs sweeps, run r at betas[r] (_run_steps).

    With ``check_signals`` the work is cut into pieces of about 0.1 s, pieces of steps
    (the first ``piece`` long, 0 for all; then grown or shrunk by their time; step
    numbers carry over, ``force_refresh`` applies to the first) times blocks of runs
    (_run_block), and -3 is returned when a Python signal handler raised between
    two pieces (the runs are then left part-way, see signal_raised); without it, one
    call.  Runs are independent, so the pieces change no number.  Returns 0 or -3."""
    cdef Py_ssize_t runs = B.runs, lo, hi, s, e
    cdef Py_ssize_t block = _run_block(runs, n_threads) if check_signals else runs
    cdef double last, t0
    if s1 <= s0 or runs <= 0:
        return 0
    if B.gauss != NULL:     # whole blocks of Gaussian runs (gauss_t.h)
        block = (block + CYRBM_GAUSS_LANES - 1) // CYRBM_GAUSS_LANES * CYRBM_GAUSS_LANES
    if piece < 1 or not check_signals:
        piece = s1 - s0
    last = seconds_now()
    s = s0
    while s < s1:
        e = min(s1, s + piece)
        t0 = seconds_now()
        lo = 0
        while lo < runs:
            hi = min(runs, lo + block)
            _run_steps(B, anneal, lo, hi, betas, s, e, k_end, weights, refresh_every,
                       force_refresh if s == s0 else 0, n_threads)
            lo = hi
            if check_signals and (lo < runs or e < s1) and time_to_check(&last) \
                    and signal_raised():
                return -3
        s = e
        t0 = seconds_now() - t0
        if t0 < 0.05:
            piece *= 2
        elif t0 > 0.2 and piece > 1:
            piece //= 2
    return 0


cdef int ais_anneal(ais_buffers *B, const double *betas, Py_ssize_t K, Py_ssize_t k0,
                    Py_ssize_t k1, Py_ssize_t refresh_every, int n_threads,
                    bint check_signals) noexcept nogil:
    """The one driver of AIS (SM08 Eq. 13-18; ratio AIS, Sec. 3.2): steps k0 <= k < k1 of
    the schedule beta_0 .. beta_K.  Step 0 draws every run's v exactly from A at beta_0 =
    0 (A the base-rate model, Eq. 18; ratio AIS sets its starting states instead and
    begins at k = 1); step k >= 1 adds ln p*_k(v) - ln p*_{k-1}(v) to the log weights
    and, while k < K, takes the transition T_k, inputs recomputed exactly at k = 1.
    Annealer.log_partition and log_ratio take it in pieces (progress, Ctrl-C), the C
    API's ais_log_partition in one call: the same numbers.  Returns 0 or -3 (engine_run)."""
    if k0 == 0 and k1 > 0:
        ais_visible(&B.pair, &B.st, B.float32, B.runs, 0.0, n_threads)
        k0 = 1
    return engine_run(B, True, betas, k0, k1, K, 1, refresh_every, 1 if k0 == 1 else 0,
                      n_threads, check_signals)


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
    if streams.shape[0] != n or streams.shape[1] != 4:
        raise ValueError(f"streams must have shape ({n}, 4).")
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


cdef void ais_set_tempered(ais_buffers *B, const floating *W, const floating *vbias,
                           const floating *hbias) noexcept nogil:
    """Store the RBM (W, vbias, hbias) in CRI10's tempered configuration (``B`` laid out
    with nA = 0, nB = n_hidden): A is the visible biases alone, B the RBM with its hidden
    biases moved to ``ebuf`` (P.eB), so a run at beta draws h ~ sigma(beta W^T v + c) and
    v ~ sigma(b + beta W h): the RBM (beta W, b, c) of Cho, Raiko & Ilin (2010), Table I
    (SM08's family would scale c too).  No log weights in this configuration."""
    cdef cyrbm_ais_pair *P = &B.pair
    cdef Py_ssize_t j
    ais_set_rbm(B, 0, <const floating *> NULL, vbias, <const floating *> NULL)
    ais_set_rbm(B, 1, W, vbias, hbias, False)
    for j in range(P.nB):
        _store(B, B.ebuf, j, _load(B, P.aB, j))
        _store(B, <void *> P.aB, j, 0.0)
    _table_offset(B, 1)
    P.eB = B.ebuf


cdef void pt_swaps(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32,
                   Py_ssize_t ladders, Py_ssize_t K1, const double *temps, int32_t *order,
                   double *beta, cyrbm_rng *streams, int64_t *accepted,
                   int n_threads) noexcept nogil:
    """The swaps of neighbouring temperatures (CRI10 Table I step 4b, Eq. 5) of every
    ladder (see cyrbm_pt_swaps): one contiguous block of ladders per thread; a ladder
    draws only from its own stream, so the result does not depend on the threads."""
    cdef int nt = cap_threads(n_threads, ladders)
    cdef Py_ssize_t t, m0, m1
    if ladders <= 0 or K1 < 2:
        return
    for t in prange(nt, num_threads=nt, schedule='static'):
        m0 = t * ladders // nt
        m1 = (t + 1) * ladders // nt
        k_pt_swaps(float32, P, S, m0, m1, K1, temps, order, beta, streams, accepted)


cdef bint valid_ladder(const double *temps, Py_ssize_t n) noexcept nogil:
    """0 <= temps[0] < ... < temps[n - 1] = 1, all finite."""
    cdef Py_ssize_t k
    if temps == NULL or n < 1 or not (temps[0] >= 0.0) or temps[n - 1] != 1.0:
        return False
    for k in range(1, n):
        if not (temps[k] > temps[k - 1]) or not isfinite(temps[k]):
            return False
    return True


cdef int pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                   Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, Py_ssize_t n,
                   const double *temps, Py_ssize_t n_temps, int steps, cyrbm_rng *streams,
                   cyrbm_rng *swap_streams, int64_t *accepted, int n_threads,
                   bint check_signals=False) noexcept nogil:
    """``steps`` rounds of parallel tempering (Cho, Raiko & Ilin 2010, Table I) on ``n``
    ladders of K1 = ``n_temps`` chains, on the Gibbs engine: each round one tempered
    block-Gibbs sweep of every chain at its temperature (the RBM (t W, b, c)), then the
    swaps of neighbours from the top down by Eq. 5 (pt_swaps).

    v (n K1 x n_visible, INOUT): row m K1 + k is ladder m's chain at temps[k] (on return
    too; the T = 1 samples are rows m K1 + K1 - 1).  Chain r's engine lanes are seeded
    from streams[r] (n K1 streams, advanced by 32 draws), ladder m's swap uniforms come
    from swap_streams[m] (n, advanced by one draw per pair and round).  accepted (n x
    (K1 - 1), INOUT, or NULL) counts accepted swaps per pair.  Returns 0, -1 when memory
    runs out, -2 for invalid sizes or temperatures (not 0 <= t_0 < ... < t_K = 1), -3 when
    a Python signal handler raised, if ``check_signals`` (see signal_raised; v and the
    streams are then as given,
    the swap streams and ``accepted`` advanced)."""
    cdef ais_buffers B
    cdef Py_ssize_t R = n * n_temps, r, s, ldV
    cdef double *beta = NULL
    cdef int32_t *order = NULL
    cdef int64_t *acc = accepted
    cdef double last
    cdef int status
    if n < 0 or steps < 0 or n_visible < 1 or n_hidden < 1 or not valid_ladder(temps, n_temps):
        return -2
    if n == 0 or steps == 0:
        return 0
    B.block = NULL
    status = ais_alloc(&B, floating is float, R, n_visible, 0, n_hidden)
    if status != 0:
        return status
    beta = <double *> malloc(R * sizeof(double))
    order = <int32_t *> malloc(R * sizeof(int32_t))
    if acc == NULL:
        acc = <int64_t *> calloc(n * n_temps, sizeof(int64_t))
    if beta == NULL or order == NULL or acc == NULL:
        free(beta)
        free(order)
        if accepted == NULL:
            free(acc)
        ais_free(&B)
        return -1
    ais_set_tempered(&B, W, vbias, hbias)
    ldV = B.pair.ldV
    for r in range(R):
        order[r] = <int32_t> r
        beta[r] = temps[r % n_temps]
        cyrbm_rng_seed_run(&streams[r], B.st.rng + r * CYRBM_AK_RNG_WORDS)
        memcpy(B.st.v + r * ldV, v + r * n_visible, n_visible)
    last = seconds_now()
    for s in range(steps):
        engine_run(&B, False, beta, s, s + 1, 0, 0, GIBBS_REFRESH, 1 if s == 0 else 0,
                   n_threads, False)
        pt_swaps(&B.pair, &B.st, floating is float, n, n_temps, temps, order, beta,
                 swap_streams, acc, n_threads)
        if check_signals and s + 1 < steps and time_to_check(&last) and signal_raised():
            status = -3             # v is left as given
            break
    if status == 0:
        for r in range(R):
            memcpy(v + r * n_visible, B.st.v + order[r] * ldV, n_visible)
    free(beta)
    free(order)
    if accepted == NULL:
        free(acc)
    ais_free(&B)
    return status


def pt_sample(const floating[:, ::1] W, const floating[::1] vbias,
              const floating[::1] hbias, uint8_t[:, ::1] v, const double[::1] temps,
              int steps, uint64_t[:, ::1] streams, uint64_t[:, ::1] swap_streams,
              int64_t[:, ::1] accepted, int n_threads=1):
    """``steps`` rounds of parallel tempering on len(v) / len(temps) ladders (pt_sweeps):
    v (INOUT, ladder-major, row m K1 + k at temps[k]), streams (INOUT, one per chain),
    swap_streams (INOUT, one per ladder), accepted (INOUT, ladders x (K1 - 1))."""
    cdef Py_ssize_t K1 = temps.shape[0], D = W.shape[0], M = W.shape[1]
    cdef Py_ssize_t R = v.shape[0], n = R // K1 if K1 > 0 else 0
    cdef int status
    if K1 < 1 or R != n * K1 or v.shape[1] != D or vbias.shape[0] != D or hbias.shape[0] != M:
        raise ValueError("chain, temperature, bias and weight shapes do not match.")
    if streams.shape[0] != R or streams.shape[1] != 4 or swap_streams.shape[0] != n \
            or swap_streams.shape[1] != 4:
        raise ValueError(f"streams must have shape ({R}, 4) and swap streams ({n}, 4).")
    if accepted.shape[0] != n or accepted.shape[1] != max(K1 - 1, 1):
        raise ValueError(f"accepted must have shape ({n}, {max(K1 - 1, 1)}).")
    if R == 0 or steps <= 0:
        return
    with nogil:
        status = pt_sweeps(&W[0, 0], &vbias[0], &hbias[0], D, M, &v[0, 0], n, &temps[0], K1,
                           steps, <cyrbm_rng *> &streams[0, 0],
                           <cyrbm_rng *> &swap_streams[0, 0], &accepted[0, 0], n_threads,
                           True)
    if status == -3:
        raise_set_error()
    if status == -1:
        raise MemoryError("no memory for the tempered chains.")
    if status != 0:
        raise ValueError("temperatures must rise strictly from t_0 >= 0 to exactly 1.")


cdef int gauss_engine(const floating *W, const floating *vbias, const floating *hbias,
                      const floating *sigma, const double *mu, const double *sd,
                      Py_ssize_t R, Py_ssize_t D, Py_ssize_t M, floating *v, uint8_t *h,
                      const double *betas, Py_ssize_t k0, Py_ssize_t k1, bint weights,
                      cyrbm_rng *streams, double *logw, floating *p, int n_threads,
                      bint check_signals) noexcept nogil:
    """The Gaussian visible layer's one driver (gauss_run, the C API's gauss_* entries):
    steps k0 <= k < k1 of the R runs ``v`` (R x D, INOUT) between N(mu, sd^2) and the
    Gaussian RBM (W, vbias, hbias, sigma) through engine_run, with the threads'
    scratch blocks; ``p`` (R x M, OUT) NULL, or the model's p(h | v) at step k0 (the
    CD step's data term, from the product the step makes anyway).  0, -1 when memory
    runs out, -3 on a signal (``check_signals``; the runs are left part-way)."""
    cdef ais_buffers B
    cdef gauss_buffers G
    cdef int nt = n_threads if n_threads > 0 else 1
    cdef int status
    if R == 0 or k0 == k1 or D == 0:
        return 0
    memset(&B, 0, sizeof(ais_buffers))
    B.runs, B.float32, B.gauss = R, floating is float, &G
    G.pair.D, G.pair.M = D, M
    G.pair.W, G.pair.b, G.pair.c, G.pair.s = W, vbias, hbias, sigma
    G.pair.mu, G.pair.sd = mu, sd
    G.v, G.h = v, h
    G.streams, G.logw, G.weights = streams, logw, weights
    G.p, G.p_step = p, k0
    G.work_bytes = (cyrbm_gauss_work_bytes(D, M) + 63) // 64 * 64
    G.work = <char *> malloc(nt * G.work_bytes)
    if G.work == NULL:
        return -1
    status = engine_run(&B, True, betas, k0, k1, 0, weights, 0, 0, nt, check_signals)
    free(G.work)
    return status


def gauss_run(const floating[:, ::1] W, const floating[::1] vbias, const floating[::1] hbias,
              const floating[::1] sigma, const double[::1] mu, const double[::1] sd,
              floating[:, ::1] v, uint8_t[:, ::1] h, const double[::1] betas,
              Py_ssize_t k0, Py_ssize_t k1, bint weights, uint64_t[:, ::1] streams,
              double[::1] logw, int n_threads=1, p_first=None):
    """Steps k0 <= k < k1 of R runs between independent Gaussians N(mu, sd^2) and the
    Gaussian-visible RBM (W, vbias, hbias, sigma) (cyrbm_gauss_block, gauss_t.h): the
    Gaussian visible layer of the engine, taken through its one loop (engine_run: pieces
    of steps times blocks of runs, Ctrl-C answered between pieces), for AIS
    (``weights``: ln w in ``logw``, INOUT), Gibbs sampling and training's negative phase
    (every beta 1).  Step 0 draws v exactly from the base.

    ``v`` (R x n_visible, INOUT) real-valued states, ``h`` (R x n_hidden, OUT) the last
    hidden states; run r draws from streams[r] alone (INOUT, (R, 4) uint64), so the
    result depends neither on ``n_threads`` nor on the kernel variant.  ``p_first``
    (R x n_hidden, the model's dtype, OUT), if given, receives p(h | v) at step k0: with
    the runs started at a batch, the CD step's data term (gauss_cd_products' own bits)."""
    cdef Py_ssize_t R = v.shape[0], D = W.shape[0], M = W.shape[1]
    cdef floating[:, ::1] p_view
    cdef floating *p_ptr = NULL
    if p_first is not None:
        p_view = p_first
        if p_view.shape[0] != R or p_view.shape[1] != M:
            raise ValueError("gauss_run: p_first must have one row of n_hidden a run.")
        if R > 0 and M > 0:
            p_ptr = &p_view[0, 0]
    if (v.shape[1] != D or h.shape[0] != R or h.shape[1] != M or vbias.shape[0] != D
            or sigma.shape[0] != D or hbias.shape[0] != M or mu.shape[0] != D
            or sd.shape[0] != D or logw.shape[0] != R):
        raise ValueError("gauss_run: the shapes of the model, base, runs and weights do not match.")
    if streams.shape[0] != R or streams.shape[1] != 4:
        raise ValueError(f"gauss_run: streams must have shape ({R}, 4).")
    if not (0 <= k0 <= k1 <= betas.shape[0]):
        raise ValueError("gauss_run: the steps are not within the schedule.")
    if R == 0 or k0 == k1 or D == 0:
        return
    cdef int status
    with nogil:
        status = gauss_engine(&W[0, 0] if M > 0 else NULL, &vbias[0],
                              &hbias[0] if M > 0 else NULL, &sigma[0], &mu[0], &sd[0], R, D,
                              M, &v[0, 0], &h[0, 0] if M > 0 else NULL, &betas[0], k0, k1,
                              weights, <cyrbm_rng *> &streams[0, 0], &logw[0], p_ptr,
                              n_threads, True)
    if status == -1:
        raise MemoryError("out of memory in gauss_run")
    if status == -3:
        raise_set_error()       # the runs are left part-way


def gauss_cd_products(const floating[:, ::1] W, const floating[::1] hbias,
                      const floating[::1] sigma, const floating[:, ::1] data,
                      const floating[:, ::1] chains, floating[:, ::1] p0,
                      floating[:, ::1] pk, floating[:, ::1] dW, floating[::1] db,
                      floating[::1] dc, int n_threads=1, bint have_p0=False):
    """The statistics of a CD / PCD step of a Gaussian RBM on the engine's kernels
    (gauss_t.h), so that no number depends on BLAS, threads or the kernel variant:
    ``p0`` = p(h | data) (OUT, B x M; IN with ``have_p0``, as gauss_run's ``p_first``
    gives it) and ``pk`` = p(h | chains) (OUT; cyrbm_gauss_hidden, the transitions' own
    product x = c + W^T (v / s)); the weight gradient
    ``dW`` = sum_n (v_n / s) p0_n^T - sum_n (v~_n / s) pk_n^T (OUT, D x M;
    cyrbm_gauss_gradient, sums over n in order); ``db`` = sum_n (v_n - v~_n) / s^2 and
    ``dc`` = sum_n p0_n - sum_n pk_n (OUT; sums over n in order in float64)."""
    cdef Py_ssize_t B = data.shape[0], D = W.shape[0], M = W.shape[1]
    if (chains.shape[0] != B or data.shape[1] != D or chains.shape[1] != D
            or hbias.shape[0] != M or sigma.shape[0] != D or p0.shape[0] != B
            or pk.shape[0] != B or p0.shape[1] != M or pk.shape[1] != M
            or dW.shape[0] != D or dW.shape[1] != M or db.shape[0] != D
            or dc.shape[0] != M):
        raise ValueError("gauss_cd_products: the shapes of the model, rows and outputs do "
                         "not match.")
    if D == 0 or M == 0 or B == 0:
        dW[:, :] = 0
        db[:] = 0
        dc[:] = 0
        return
    cdef cyrbm_gauss_pair P
    memset(&P, 0, sizeof(cyrbm_gauss_pair))
    P.D, P.M, P.W, P.c, P.s = D, M, &W[0, 0], &hbias[0], &sigma[0]
    cdef Py_ssize_t L = CYRBM_GAUSS_LANES, nb = (B + L - 1) // L, t, r0, r1, n, i, j
    cdef int nt = cap_threads(n_threads, nb)
    cdef int ng = cap_threads(n_threads, D // 16)
    cdef size_t bytes = (cyrbm_gauss_work_bytes(D, M) + 63) // 64 * 64
    cdef size_t g_bytes = (cyrbm_gauss_gradient_work_bytes(B) + 63) // 64 * 64
    cdef size_t scaled = (<size_t> (B * D) * sizeof(floating) + 63) // 64 * 64
    cdef char *work = <char *> malloc(max(nt * bytes, ng * g_bytes) + 2 * scaled
                                      + <size_t> (D + 2 * M) * sizeof(double))
    if work == NULL:
        raise MemoryError("out of memory in gauss_cd_products")
    cdef floating *a = <floating *> (work + max(nt * bytes, ng * g_bytes))
    cdef floating *b = <floating *> (<char *> a + scaled)
    cdef double *sums = <double *> (<char *> b + scaled)
    cdef double si
    with nogil:
        for t in prange(nt, num_threads=nt, schedule='static'):
            r0 = (t * nb // nt) * L
            r1 = min(B, ((t + 1) * nb // nt) * L)
            if not have_p0:
                k_gauss_hidden(&P, &data[0, 0], r0, r1, &p0[0, 0], work + t * bytes)
            k_gauss_hidden(&P, &chains[0, 0], r0, r1, &pk[0, 0], work + t * bytes)
        # the scaled states v / s (as the transitions' product has them), and the
        # bias statistics, each sum over n in order
        memset(sums, 0, <size_t> (D + 2 * M) * sizeof(double))
        for n in range(B):
            for i in range(D):
                a[n * D + i] = data[n, i] / sigma[i]
                b[n * D + i] = chains[n, i] / sigma[i]
                sums[i] += <double> data[n, i] - <double> chains[n, i]
            for j in range(M):
                sums[D + j] += <double> p0[n, j]
                sums[D + M + j] += <double> pk[n, j]
        for i in range(D):
            si = sigma[i]
            db[i] = <floating> (sums[i] / (si * si))
        for j in range(M):
            dc[j] = <floating> (sums[D + j] - sums[D + M + j])
        for t in prange(ng, num_threads=ng, schedule='static'):
            r0 = t * D // ng
            r1 = (t + 1) * D // ng
            k_gauss_gradient(a, &p0[0, 0], b, &pk[0, 0], B, D, M, r0, r1,
                             &dW[0, 0] + r0 * M, work + t * g_bytes)
    free(work)


def srbm_run(const floating[:, ::1] W, const floating[::1] vbias, const floating[::1] hbias,
             const floating[:, ::1] L, const double[::1] base, uint8_t[:, ::1] v,
             uint8_t[:, ::1] h, double[:, ::1] y, const double[::1] betas, Py_ssize_t k0,
             Py_ssize_t k1, bint weights, bint fresh, uint64_t[:, ::1] streams,
             double[::1] logw, int n_threads=1):
    """Steps k0 <= k < k1 of R runs between independent visible units of log-odds
    ``base`` and the semi-restricted Boltzmann machine (W, vbias, hbias, L)
    (cyrbm_srbm_steps, common_t.h): h | v at once, v | h one unit at a time.  The SRBM's
    one driver, for AIS (``weights``: ln w in ``logw``, INOUT), Gibbs sampling and
    training's sequential-Gibbs negative phase (every beta 1).

    ``v`` (R x n_visible, INOUT) 0/1 states, ``h`` (R x n_hidden, OUT) the last hidden
    states, ``y`` (R x n_visible, INOUT) each run's lateral field L v, recomputed from v
    first when ``fresh``; run r draws from streams[r] alone (INOUT, (R, 4) uint64), so
    the result does not depend on ``n_threads``."""
    cdef Py_ssize_t R = v.shape[0], D = W.shape[0], M = W.shape[1], r
    if (v.shape[1] != D or h.shape[0] != R or h.shape[1] != M or vbias.shape[0] != D
            or hbias.shape[0] != M or L.shape[0] != D or L.shape[1] != D
            or base.shape[0] != D or y.shape[0] != R or y.shape[1] != D
            or logw.shape[0] != R):
        raise ValueError("srbm_run: the shapes of the model, base, runs and weights do not match.")
    if streams.shape[0] != R or streams.shape[1] != 4:
        raise ValueError(f"srbm_run: streams must have shape ({R}, 4).")
    if not (0 <= k0 <= k1 <= betas.shape[0]):
        raise ValueError("srbm_run: the steps are not within the schedule.")
    if R == 0 or k0 == k1:
        return
    cdef cyrbm_srbm_pair P
    P.D, P.M = D, M
    P.W, P.b, P.c, P.L = &W[0, 0], &vbias[0], &hbias[0], &L[0, 0]
    P.bA = &base[0]
    cdef double *x
    cdef int bad = 0
    with nogil, parallel(num_threads=cap_threads(n_threads, R * (k1 - k0) * D * (M + D) // 50000)):
        x = <double *> malloc((M + D + 1) * sizeof(double))
        for r in prange(R, schedule='static'):
            if x == NULL:
                bad += 1
                continue
            k_srbm_steps(floating is float, &P, &v[r, 0], &h[r, 0], &y[r, 0], x, &betas[0],
                         k0, k1, weights, fresh, <cyrbm_rng *> &streams[r, 0], &logw[r])
        free(x)
    if bad:
        raise MemoryError("out of memory in srbm_run")


def chain_uniforms(uint64_t[:, ::1] streams, Py_ssize_t n):
    """``n`` uniforms in [0, 1) (53 bits, cyrbm_rng_uniform) from each chain stream
    (streams: (R, 4) uint64, advanced in place): an (R, n) float64 array.  For the
    acceptance tests and proposals of samplers written over chains in NumPy (mode
    hopping), so they draw from cyrbm's one generator."""
    if streams.shape[1] != 4:
        raise ValueError("streams must have shape (R, 4).")
    out = np.empty((streams.shape[0], max(n, 0)))
    cdef double[:, ::1] o = out
    cdef Py_ssize_t c, k
    with nogil:
        for c in range(streams.shape[0]):
            for k in range(n):
                o[c, k] = cyrbm_rng_uniform(<cyrbm_rng *> &streams[c, 0])
    return out


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


# ------------------------------------------------------------------------- layouts
cdef inline Py_ssize_t _pad(Py_ssize_t n) noexcept nogil:
    """n rounded up to a multiple of CYRBM_AK_PAD elements."""
    return ((n + CYRBM_AK_PAD - 1) // CYRBM_AK_PAD) * CYRBM_AK_PAD


cdef inline Py_ssize_t _pad_rows(Py_ssize_t n) noexcept nogil:
    """Row width for per-run arrays: a multiple of 16 elements, and an odd multiple, so
    that the rows of many runs do not all fall in the same few cache sets."""
    cdef Py_ssize_t m = _pad(n)
    if m > 0 and (m // CYRBM_AK_PAD) % 2 == 0:
        m += CYRBM_AK_PAD
    return m


cdef inline Py_ssize_t _at_least(Py_ssize_t n, Py_ssize_t m) noexcept nogil:
    return n if n > m else m


cdef inline void *_take(char *base, size_t *total, size_t nbytes) noexcept nogil:
    """The next buffer of ``nbytes`` of a layout: 64-byte aligned, 64 zero bytes after
    it.  With ``base`` NULL only ``total`` (the bytes needed) advances."""
    cdef size_t at = (total[0] + 63) & ~(<size_t> 63)
    total[0] = at + nbytes + 64
    return NULL if base == NULL else <void *> (base + at)


cdef size_t _ais_layout(ais_buffers *B, char *base, size_t s) noexcept nogil:
    """Point every buffer of ``B`` into ``base`` (sizes from B.pair and B.runs; s bytes
    per float); returns the bytes the layout takes.  With ``base`` NULL, only measures."""
    cdef cyrbm_ais_pair *P = &B.pair
    cdef cyrbm_ais_state *S = &B.st
    cdef size_t R = B.runs, D = P.D, nA = P.nA, nB = P.nB
    cdef size_t ldV = P.ldV, ldA = P.ldA, ldB = P.ldB
    cdef size_t ldA1 = ldA if ldA > 1 else 1, ldB1 = ldB if ldB > 1 else 1
    cdef size_t ldA16 = ldA if ldA > 16 else 16, ldB16 = ldB if ldB > 16 else 16
    cdef size_t i32 = sizeof(int32_t), total = 0
    # parameters: W row-major (D x ld), W^T in column chunks (n x ldV), biases
    P.WA = _take(base, &total, D * ldA1 * s)
    P.WAT = _take(base, &total, (nA if nA > 1 else 1) * ldV * s)
    P.aA = _take(base, &total, ldA1 * s)
    P.bA = _take(base, &total, ldV * s)
    P.WB = _take(base, &total, D * ldB1 * s)
    P.WBT = _take(base, &total, (nB if nB > 1 else 1) * ldV * s)
    P.aB = _take(base, &total, ldB1 * s)
    P.bB = _take(base, &total, ldV * s)
    P.dbias = <const double *> _take(base, &total, ldV * sizeof(double))
    # signed subset tables (8 rows per group of 4 units) and their offsets, when used
    if P.dense:
        P.TVA = _take(base, &total, 8 * P.gV * ldA * s) if nA > 0 else NULL
        P.THA = _take(base, &total, 8 * P.gA * ldV * s) if nA > 0 else NULL
        P.TVB = _take(base, &total, 8 * P.gV * ldB * s) if nB > 0 else NULL
        P.THB = _take(base, &total, 8 * P.gB * ldV * s) if nB > 0 else NULL
        P.cVA = _take(base, &total, ldA * s) if nA > 0 else NULL
        P.cHA = _take(base, &total, ldV * s) if nA > 0 else NULL
        P.cVB = _take(base, &total, ldB * s) if nB > 0 else NULL
        P.cHB = _take(base, &total, ldV * s) if nB > 0 else NULL
    # per-run states: rows of ldV / ldA / ldB elements (hidden rows at least 16)
    S.v = <uint8_t *> _take(base, &total, R * ldV)
    S.hA = <uint8_t *> _take(base, &total, R * ldA16)
    S.hB = <uint8_t *> _take(base, &total, R * ldB16)
    S.xA = _take(base, &total, R * ldA16 * s)
    S.xB = _take(base, &total, R * ldB16 * s)
    S.uA = _take(base, &total, R * ldV * s)
    S.uB = _take(base, &total, R * ldV * s)
    S.vlist = <int32_t *> _take(base, &total, R * ldV * i32)
    S.vlist_off = <int32_t *> _take(base, &total, R * ldV * i32)
    S.nv = <int32_t *> _take(base, &total, R * i32)
    S.nv_off = <int32_t *> _take(base, &total, R * i32)
    S.hlistA = <int32_t *> _take(base, &total, R * ldA16 * i32)
    S.hlistA_off = <int32_t *> _take(base, &total, R * ldA16 * i32)
    S.nhA = <int32_t *> _take(base, &total, R * i32)
    S.nhA_off = <int32_t *> _take(base, &total, R * i32)
    S.hlistB = <int32_t *> _take(base, &total, R * ldB16 * i32)
    S.hlistB_off = <int32_t *> _take(base, &total, R * ldB16 * i32)
    S.nhB = <int32_t *> _take(base, &total, R * i32)
    S.nhB_off = <int32_t *> _take(base, &total, R * i32)
    S.logw = <double *> _take(base, &total, R * sizeof(double))
    S.rng = <uint64_t *> _take(base, &total, R * CYRBM_AK_RNG_WORDS * sizeof(uint64_t))
    S.cur = <int32_t *> _take(base, &total, R * <size_t> S.cur_stride * i32)
    S.sel_dense = <int32_t *> _take(base, &total, R * i32)
    S.sel_sparse = <int32_t *> _take(base, &total, R * i32)
    S.ustale = <uint8_t *> _take(base, &total, R)
    B.ebuf = _take(base, &total, ldB1 * s)     # P.eB stays NULL until ais_set_tempered
    return total


cdef int ais_alloc(ais_buffers *B, bint float32, Py_ssize_t runs, Py_ssize_t n_visible,
                   Py_ssize_t nA, Py_ssize_t nB) noexcept nogil:
    """Lay out, zeroed, the parameters and states of ``runs`` AIS runs between an RBM A
    (nA hidden units) and an RBM B (nB) on ``n_visible`` shared visible units.

    The one layout of the kernels' buffers (see cyrbm/_kernels/anneal.c): rows
    padded to ``_pad_rows`` elements, W^T in column chunks of CYRBM_AK_CHUNK_BYTES,
    scratch sized from CYRBM_AK_TILE_BYTES.  Everything lives in one calloc'd block,
    each buffer 64-byte aligned and followed by 64 zero bytes; ``ais_free`` releases it.
    Parameters are all zero until ``ais_set_rbm``; the random streams (``B.st.rng``,
    runs x CYRBM_AK_RNG_WORDS) must be filled by the caller.
    Returns 0, -1 when memory runs out, -2 for invalid sizes.
    """
    cdef cyrbm_ais_pair *P = &B.pair
    cdef cyrbm_ais_state *S = &B.st
    cdef Py_ssize_t tile_rows
    cdef size_t s = sizeof(float) if float32 else sizeof(double)
    cdef size_t total, table_bytes
    memset(P, 0, sizeof(cyrbm_ais_pair))
    memset(S, 0, sizeof(cyrbm_ais_state))
    B.block = NULL
    B.gauss = NULL
    B.runs = 0
    B.float32 = float32
    if runs < 1 or runs > _MAX_RUNS or n_visible < 1 or n_visible > _MAX_UNITS or nA < 0 \
            or nA > _MAX_UNITS or nB < 0 or nB > _MAX_UNITS:
        return -2
    P.D, P.nA, P.nB = n_visible, nA, nB
    P.ldV, P.ldA, P.ldB = _pad_rows(n_visible), _pad_rows(nA), _pad_rows(nB)
    tile_rows = CYRBM_AK_TILE_BYTES // CYRBM_AK_CHUNK_BYTES
    S.cur_stride = 2 * ((nA + tile_rows - 1) // tile_rows + 1) \
        + 2 * ((nB + tile_rows - 1) // tile_rows + 1)
    P.gV, P.gA, P.gB = (n_visible + 3) // 4, (nA + 3) // 4, (nB + 3) // 4
    P.dense_x, P.dense_u = _dense_x, _dense_u
    table_bytes = 8 * s * (<size_t> P.gV * (P.ldA + P.ldB) + <size_t> (P.gA + P.gB) * P.ldV)
    P.dense = _dense_mode if table_bytes <= _MAX_TABLE_BYTES or _dense_mode == 2 else 0
    B.runs = runs
    total = _ais_layout(B, NULL, s)
    B.block = calloc(total + 64, 1)
    if B.block == NULL:
        B.runs = 0
        return -1
    _ais_layout(B, <char *> ((<uintptr_t> B.block + 63) & ~(<uintptr_t> 63)), s)
    return 0


cdef void ais_free(ais_buffers *B) noexcept nogil:
    """Release what ``ais_alloc`` took (safe to call twice, or after a failed alloc)."""
    free(B.block)
    B.block = NULL
    B.runs = 0


cdef void _store(ais_buffers *B, void *buf, Py_ssize_t k, double x) noexcept nogil:
    if B.float32:
        (<float *> buf)[k] = <float> x
    else:
        (<double *> buf)[k] = x


cdef inline double _load(const ais_buffers *B, const void *buf, Py_ssize_t k) noexcept nogil:
    if B.float32:
        return <double> (<const float *> buf)[k]
    return (<const double *> buf)[k]


cdef void ais_set_rbm(ais_buffers *B, int which, const floating *W, const floating *vbias,
                      const floating *hbias, bint bound_x=True) noexcept nogil:
    """Store RBM A (``which`` = 0) or B (1) of ``B``: W (n_visible x n_hidden, C order),
    its visible and hidden biases, rounded to the buffers' float type.

    With no hidden units, W and hbias are not read (may be NULL): A is then the base-rate
    model of SM08 Eq. 18 with visible biases ``vbias``.  Also sets the float64 bias
    difference bA - bB of the stored values and the bound |x_j| <= |a_j| + sum_i |W_ij|
    (of the stored values, +1% margin) that the kernels use to choose their series of
    the log weights; without ``bound_x`` (no log weights: the tempered configuration) the
    bound is infinite and not computed.
    """
    cdef cyrbm_ais_pair *P = &B.pair
    cdef Py_ssize_t D = P.D, ldV = P.ldV
    cdef Py_ssize_t n = P.nA if which == 0 else P.nB
    cdef Py_ssize_t ld = P.ldA if which == 0 else P.ldB
    cdef void *Wr = <void *> (P.WA if which == 0 else P.WB)
    cdef void *Wt = <void *> (P.WAT if which == 0 else P.WBT)
    cdef void *a = <void *> (P.aA if which == 0 else P.aB)
    cdef void *b = <void *> (P.bA if which == 0 else P.bB)
    cdef Py_ssize_t chunk = CYRBM_AK_CHUNK_BYTES // (sizeof(float) if B.float32 else sizeof(double))
    cdef Py_ssize_t rows = _at_least(n, 1)
    cdef Py_ssize_t i, j, s0, width
    cdef double x, bound, colsum
    cdef double *db = <double *> P.dbias
    cdef void *V
    cdef void *H
    cdef void *cH
    cdef floating *Wr_t = <floating *> Wr
    cdef floating *Wt_t = <floating *> Wt
    cdef double *colsums = NULL
    # parameters of the buffers' own type (every training update of parallel tempering
    # stores them): plain row copies, W read row by row, the same values
    cdef bint same
    if floating is float:
        same = B.float32
    else:
        same = not B.float32
    same = same and n > 0 and W != NULL
    if same and bound_x:
        colsums = <double *> calloc(n, sizeof(double))
        same = colsums != NULL
    for i in range(D):
        _store(B, b, i, vbias[i])
    for j in range(n):
        _store(B, a, j, hbias[j])
    if same:
        for i in range(D):
            memcpy(Wr_t + i * ld, W + i * n, n * sizeof(floating))
    else:
        for i in range(D):
            for j in range(n):
                _store(B, Wr, i * ld + j, W[i * n + j])
    # W^T (n x ldV) in column chunks of `chunk` elements, each chunk row-major
    s0 = 0
    while s0 < ldV:
        width = chunk if s0 + chunk <= ldV else ldV - s0
        if same:      # a whole 64-byte row of the chunk at a time
            for j in range(n):
                for i in range(s0, s0 + width if s0 + width < D else D):
                    Wt_t[rows * s0 + j * width + (i - s0)] = W[i * n + j]
        else:
            for j in range(n):
                for i in range(s0, s0 + width if s0 + width < D else D):
                    _store(B, Wt, rows * s0 + j * width + (i - s0), W[i * n + j])
        s0 += chunk
    for i in range(ldV):
        db[i] = _load(B, P.bA, i) - _load(B, P.bB, i)
    bound = 0.0
    if same and bound_x:  # each column summed over i in order, as below, a row at a time
        for i in range(D):
            for j in range(n):
                colsums[j] = colsums[j] + fabs(<double> Wr_t[i * ld + j])
    if not bound_x:
        bound = INFINITY
    elif n > 0:
        for j in range(n):
            colsum = 0.0
            if same:
                colsum = colsums[j]
            else:
                for i in range(D):
                    colsum = colsum + fabs(_load(B, Wr, i * ld + j))
            x = fabs(_load(B, a, j)) + colsum
            if j == 0 or x > bound:
                bound = x
        bound = bound * 1.01 + 1e-6
    free(colsums)
    if which == 0:
        P.xboundA = bound
    else:
        P.xboundB = bound
    if P.dense and n > 0:
        V = <void *> (P.TVA if which == 0 else P.TVB)
        H = <void *> (P.THA if which == 0 else P.THB)
        cH = <void *> (P.cHA if which == 0 else P.cHB)
        if B.float32:
            _subset_table(<float *> V, <float *> NULL, <const float *> Wr, NULL, ld, D, n,
                          P.gV, True, ld, True)
            _subset_table(<float *> H, <float *> cH, <const float *> Wr, NULL, ld, D, n,
                          P.gA if which == 0 else P.gB, False, ldV, True)
        else:
            _subset_table(<double *> V, <double *> NULL, <const double *> Wr, NULL, ld, D, n,
                          P.gV, True, ld, True)
            _subset_table(<double *> H, <double *> cH, <const double *> Wr, NULL, ld, D, n,
                          P.gA if which == 0 else P.gB, False, ldV, True)
        _table_offset(B, which)


cdef void _table_offset(ais_buffers *B, int which) noexcept nogil:
    """The offset a + (1/2) sum_i W[i, :] that recomputed hidden inputs start from
    (P.cVA / P.cVB, see _subset_table), from the stored weights and hidden biases: again
    whenever those biases change (ais_set_tempered)."""
    cdef cyrbm_ais_pair *P = &B.pair
    cdef Py_ssize_t n = P.nA if which == 0 else P.nB
    cdef Py_ssize_t ld = P.ldA if which == 0 else P.ldB
    if not P.dense or n == 0:
        return
    if B.float32:
        _subset_table(<float *> NULL, <float *> (P.cVA if which == 0 else P.cVB),
                      <const float *> (P.WA if which == 0 else P.WB),
                      <const float *> (P.aA if which == 0 else P.aB), ld, P.D, n, P.gV,
                      True, ld, False)
    else:
        _subset_table(<double *> NULL, <double *> (P.cVA if which == 0 else P.cVB),
                      <const double *> (P.WA if which == 0 else P.WB),
                      <const double *> (P.aA if which == 0 else P.aB), ld, P.D, n, P.gV,
                      True, ld, False)


cdef void _subset_table(floating *out, floating *offset, const floating *Wr,
                        const floating *a, Py_ssize_t ld, Py_ssize_t D, Py_ssize_t n,
                        Py_ssize_t groups, bint visible, Py_ssize_t width,
                        bint table) noexcept nogil:
    """The signed subset table of one layer's groups of 4 units (anneal.c, "Many flips").

    With spins s = 2 v - 1, the inputs W^T v + a = offset + sum_g (1/2) sum_k s_k w_k over
    the groups g (units 4g + k, weight rows w_k), offset = a + (1/2) sum_i w_i; a group's
    term for the spins (s_0, s_1, s_2, s_3) is minus its term for the opposite spins, so
    the table keeps the 8 patterns with s_0 = +1: row 8 g + c holds
    (1/2)(w_0 + sum_{k=1..3} (2 bit_{k-1}(c) - 1) w_k), computed in float64 from the
    stored weights and rounded once to the stored type (the same bits in every variant).
    ``visible``: groups of visible units, columns the hidden units (row i of W, stored
    D x ld; ``a`` the hidden biases); else groups of hidden units, columns the visible
    units (column j of W; ``a`` NULL: no bias).  Stored in column chunks of
    CYRBM_AK_CHUNK_BYTES like W^T; ``width`` (a multiple of the chunk) columns, those past
    the layer zero, as are the weights of the padding units of the last group.  With
    ``table`` false only ``offset`` is (re)computed (after the biases change).""" 
    cdef Py_ssize_t chunk = CYRBM_AK_CHUNK_BYTES // sizeof(floating)
    cdef Py_ssize_t rows = 8 * groups, b, g, c, col, j, k, unit
    cdef Py_ssize_t units = D if visible else n
    cdef floating *blk
    cdef double w[4]
    cdef double t, half
    for b in range(width // chunk):
        blk = out + b * chunk * rows if table else NULL
        for col in range(chunk):
            j = b * chunk + col
            half = 0.0
            for g in range(groups):
                for k in range(4):
                    unit = 4 * g + k
                    if unit >= units:
                        w[k] = 0.0
                    elif visible:
                        w[k] = Wr[unit * ld + j]
                    else:
                        w[k] = Wr[j * ld + unit] if j < D else 0.0
                half = half + ((w[0] + w[1]) + (w[2] + w[3]))
                if not table:
                    continue
                for c in range(8):
                    t = w[0]
                    for k in range(1, 4):
                        t = t + (w[k] if (c >> (k - 1)) & 1 else -w[k])
                    blk[(8 * g + c) * chunk + col] = <floating> (0.5 * t)
            if offset != NULL:
                offset[j] = <floating> ((<double> a[j] if a != NULL else 0.0) + 0.5 * half)


cdef double base_rate_log_partition(const floating *base_rate, Py_ssize_t n_visible,
                                    Py_ssize_t n_hidden) noexcept nogil:
    """ln Z_A = M ln 2 + sum_i softplus(b_A,i) of the base-rate model (SM08 Eq. 18) with
    M = ``n_hidden`` free hidden units; a NULL ``base_rate`` means all zeros."""
    cdef Py_ssize_t i
    cdef double total = 0.0
    for i in range(n_visible):
        total = total + cyrbm_softplus(<double> base_rate[i] if base_rate != NULL else 0.0)
    return <double> n_hidden * _LN2 + total


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


def base_rate_log_z(base_rate, Py_ssize_t n_hidden):
    """ln Z_A of the base-rate model (SM08 Eq. 18), see ``base_rate_log_partition``."""
    cdef double[::1] b = np.ascontiguousarray(base_rate, dtype=np.float64)
    if b.shape[0] == 0:
        return float(n_hidden * _LN2)
    return float(base_rate_log_partition(&b[0], b.shape[0], n_hidden))


cdef void _store_models(ais_buffers *B, const floating[:, ::1] WA, const floating[::1] bA,
                        const floating[::1] aA, const floating[:, ::1] WB,
                        const floating[::1] bB, const floating[::1] aB):
    """Store RBMs A and B (``ais_set_rbm``), given in the buffers' own float type."""
    ais_set_rbm(B, 0, &WA[0, 0] if WA.shape[1] > 0 else NULL, &bA[0],
                &aA[0] if aA.shape[0] > 0 else NULL)
    ais_set_rbm(B, 1, &WB[0, 0] if WB.shape[1] > 0 else NULL, &bB[0],
                &aB[0] if aB.shape[0] > 0 else NULL)


cdef inline Py_ssize_t _run_block(Py_ssize_t runs, int n_threads) noexcept nogil:
    """Runs per kernel call of GibbsEngine.steps and .sweep: a sixteenth of them (at
    least 64 per thread), so that a call whose one step over all the runs takes seconds
    (784 x 500 units, 20,000 runs) still checks for Ctrl-C every 0.1-0.2 s.  Runs are
    independent, so the blocks change no number."""
    cdef Py_ssize_t least = 64 * (n_threads if n_threads > 0 else 1)
    cdef Py_ssize_t b = (runs + 15) // 16
    return b if b > least else least


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

    def sweep(self, Py_ssize_t n_steps, beta=None, bint force_refresh=True,
              Py_ssize_t start=0, bint a_only=False):
        """``n_steps`` tempered block-Gibbs sweeps, chain r at inverse temperature beta[r]
        (a number for all, or one per chain; default 0): each sweep leaves chain r's
        p_beta[r] invariant, p_beta(v) ~ sum exp(-(1 - beta) E_A - beta E_B).  With
        ``a_only`` model B is left out (beta must be 0): plain block Gibbs on A.

        The sweeps are numbered from ``start`` (inputs are recomputed exactly at sweeps
        that are multiples of ``refresh_every``), so a long chain taken in pieces, with
        ``force_refresh`` only on the first, equals the chain taken in one call."""
        if n_steps <= 0:
            return
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
        cdef int status
        try:
            with nogil:
                status = engine_run(&self.buf, False, &bv[0], start, start + n_steps, 0, 0,
                                    self.refresh_every, 1 if force_refresh else 0,
                                    self.n_threads, True)
        finally:
            self.buf.pair.nB = saved
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

    def swap(self, const double[::1] temps, int32_t[:, ::1] order, double[::1] beta,
             uint64_t[:, ::1] streams, int64_t[:, ::1] accepted):
        """Swaps of neighbouring temperatures in every ladder (CRI10 Table I step 4b,
        Eq. 5; cyrbm_pt_swaps), after at least one sweep since the chains were set.
        Ladder m is runs m K1 .. m K1 + K1 - 1 (K1 = len(temps)); order[m, k] (INOUT) is
        its run at temps[k]; beta (OUT, one per run) the runs' new temperatures, ready
        for ``sweep``; streams (INOUT, (ladders, 4)) the swap uniforms; accepted (INOUT,
        (ladders, K1 - 1)) counts accepted swaps per pair."""
        cdef Py_ssize_t K1 = temps.shape[0], n = order.shape[0]
        if self.buf.pair.eB == NULL:
            raise ValueError("swaps need the tempered configuration (set_tempered).")
        if K1 < 2 or order.shape[1] != K1 or n * K1 != self.runs or beta.shape[0] != self.runs \
                or streams.shape[0] != n or streams.shape[1] != 4 \
                or accepted.shape[0] != n or accepted.shape[1] != K1 - 1:
            raise ValueError("ladder, temperature, stream and count shapes do not match.")
        if not valid_ladder(&temps[0], K1):
            raise ValueError("temperatures must rise strictly from t_0 >= 0 to exactly 1.")
        o = np.asarray(order)
        if not np.array_equal(np.sort(o, axis=1),
                              np.arange(self.runs, dtype=np.int32).reshape(n, K1)):
            raise ValueError("order must hold each ladder's own runs once.")
        with nogil:
            pt_swaps(&self.buf.pair, &self.buf.st, self.float32, n, K1, &temps[0],
                     &order[0, 0], &beta[0], <cyrbm_rng *> &streams[0, 0], &accepted[0, 0],
                     self.n_threads)


cdef int gauss_exact_log_partition(const floating *W, const floating *vbias,
                                   const floating *hbias, const floating *sigma,
                                   Py_ssize_t D, Py_ssize_t M, double *log_Z,
                                   int n_threads) noexcept nogil:
    """Exact ln Z of a Gaussian RBM (MS09 Sec. 5.2's energy), v integrated out for each
    of the 2^M hidden states:

        ln Z = sum_i ln(sqrt(2 pi) sigma_i)
               + ln sum_h exp(c.h + sum_i (b_i u_i / sigma_i + u_i^2 / 2)),  u = W h,

    in float64: blocks of 2^min(M, 12) states, u computed exactly at each block's start
    and then moved by one column of W per state (Gray-code order); each block's
    log-sum-exp, then the blocks' in a fixed order, so the result does not depend on
    ``n_threads``.  0, -1 when memory runs out, -2 for M > 40 or D < 1."""
    cdef Py_ssize_t low = min(M, 12), nb, t, s, i, j, k, g
    cdef double *Wt
    cdef double *bs
    cdef double *c
    cdef double *terms
    cdef double *u
    cdef double *e
    cdef double ch, x, mx, acc, sign
    cdef int bad = 0
    if D < 1 or M < 0 or M > 40:
        return -2
    nb = (<Py_ssize_t> 1) << (M - low)
    Wt = <double *> malloc((M * D + D + M + 1) * sizeof(double))
    terms = <double *> malloc(nb * sizeof(double))
    if Wt == NULL or terms == NULL:
        free(Wt)
        free(terms)
        return -1
    bs, c = Wt + M * D, Wt + M * D + D
    for i in range(D):
        bs[i] = <double> vbias[i] / <double> sigma[i]
        for j in range(M):
            Wt[j * D + i] = W[i * M + j]           # column j of W, contiguous
    for j in range(M):
        c[j] = hbias[j]
    with parallel(num_threads=cap_threads(n_threads, (nb << low) * D // 20000)):
        u = <double *> malloc((D + ((<Py_ssize_t> 1) << low)) * sizeof(double))
        for t in prange(nb, schedule='static'):
            if u == NULL:
                bad += 1
                continue
            e = u + D
            ch = 0.0
            for i in range(D):
                u[i] = 0.0
            for k in range(M - low):               # the block's high bits, exactly
                if (t >> k) & 1:
                    ch = ch + c[low + k]
                    for i in range(D):
                        u[i] = u[i] + Wt[(low + k) * D + i]
            for s in range((<Py_ssize_t> 1) << low):
                if s > 0:                          # Gray code: one low bit flips
                    j = 0
                    while not ((s >> j) & 1):
                        j = j + 1
                    g = s ^ (s >> 1)
                    sign = 1.0 if (g >> j) & 1 else -1.0
                    ch = ch + sign * c[j]
                    for i in range(D):
                        u[i] = u[i] + sign * Wt[j * D + i]
                x = ch
                for i in range(D):
                    x = x + u[i] * (bs[i] + 0.5 * u[i])
                e[s] = x
            mx = e[0]
            for s in range(1, (<Py_ssize_t> 1) << low):
                if e[s] > mx:
                    mx = e[s]
            acc = 0.0
            for s in range((<Py_ssize_t> 1) << low):
                acc = acc + exp(e[s] - mx)
            terms[t] = mx + log(acc)
        free(u)
    if bad:
        free(Wt)
        free(terms)
        return -1
    mx = terms[0]
    for t in range(1, nb):
        if terms[t] > mx:
            mx = terms[t]
    acc = 0.0
    for t in range(nb):
        acc = acc + exp(terms[t] - mx)
    x = mx + log(acc) + D * 0.9189385332046727        # ln sqrt(2 pi) per unit
    for i in range(D):
        x = x + log(<double> sigma[i])
    log_Z[0] = x
    free(Wt)
    free(terms)
    return 0


def gauss_log_partition(const floating[:, ::1] W, const floating[::1] vbias,
                        const floating[::1] hbias, const floating[::1] sigma,
                        int n_threads=1):
    """Exact ln Z of the Gaussian RBM (W, vbias, hbias, sigma) over its 2^M hidden
    states (gauss_exact_log_partition; GaussianRBM.log_partition, the C API's
    gauss_exact_log_partition): float64, the same bits for any ``n_threads``."""
    cdef Py_ssize_t D = W.shape[0], M = W.shape[1]
    cdef double out = 0.0
    cdef int status
    if vbias.shape[0] != D or sigma.shape[0] != D or hbias.shape[0] != M or D < 1:
        raise ValueError("gauss_log_partition: the shapes of W, vbias, hbias and sigma do "
                         "not match.")
    if M > 40:
        raise ValueError(f"gauss_log_partition: 2^{M} hidden states are too many.")
    with nogil:
        status = gauss_exact_log_partition(&W[0, 0] if M > 0 else &vbias[0], &vbias[0],
                                           &hbias[0] if M > 0 else &vbias[0], &sigma[0], D,
                                           M, &out, n_threads)
    if status == -1:
        raise MemoryError("out of memory in gauss_log_partition")
    return out


# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._dispatch cimport kernel_table
from cyrbm._dispatch import use_kernels, kernels_in_use
cyrbm_kt = kernel_table()
