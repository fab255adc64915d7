# cython: language_level=3
"""The Gibbs engine's buffers and its one loop, and annealed importance sampling (AIS).

Notation follows Salakhutdinov & Murray (2008): an RBM with weights W (n_visible x
n_hidden), visible biases b and hidden biases a has p*(v) = exp(b.v) prod_j (1 + exp(a_j +
sum_i W_ij v_i)) (Eq. 2) and Z = sum_v p*(v) (Eq. 3).

* ``ais_alloc`` / ``ais_set_rbm`` / ``ais_free`` (cdef, nogil, malloc-based) are the one
  layout of the kernels' buffers: R runs between two RBMs A and B that share their visible
  units (Eq. 13-17), A without hidden units the base-rate model of Eq. 18; used by
  ``GibbsEngine`` (cyrbm/_engine.pyx), parallel tempering (_tempering.pyx, with
  ``ais_set_tempered``) and the C/Cython API (cyrbm.capi).
* ``engine_run`` is the one loop of the engine's transitions (pieces of steps times
  blocks of runs, Ctrl-C answered between pieces); ``ais_anneal`` the one driver of AIS
  on it; ``base_rate_log_partition`` ln Z_A of Eq. 18.  Each run draws only from its own
  random streams, so results do not depend on the number of threads.

The Gaussian visible layer's driver is in _gauss.pyx, the SRBM's in _srbm.pyx, exact
enumeration in _exact.pyx.  ``chain_uniforms``: uniforms from chain streams for
samplers written in NumPy.  The loops themselves are in cyrbm/_kernels/anneal.c.
"""
import numpy as np

from cython.parallel cimport prange, parallel
from cyrbm._omp cimport cap_threads, seconds_now, signal_raised, raise_set_error, time_to_check
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t, uintptr_t
from cyrbm._random cimport check_streams
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy, memset
from libc.math cimport log, exp, fabs, isfinite, INFINITY

cdef double _LN2 = 0.6931471805599453
# limits that keep every size computation far from overflow (int32 unit indices)
cdef Py_ssize_t _MAX_UNITS = 1 << 24
cdef Py_ssize_t _MAX_RUNS = 1 << 28
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
    block-Gibbs sweeps, run r at betas[r] (cyrbm_gibbs_tempered; ``weights`` 2: the first
    sweep's PT tracker sums in the log weights).

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
            k_gibbs_tempered(f32, P, S, r0, r1, betas, s0, s1, refresh_every, force_refresh,
                             weights)


cdef void _gauss_steps(gauss_buffers *G, bint f32, Py_ssize_t first, Py_ssize_t runs,
                       const double *betas, Py_ssize_t s0, Py_ssize_t s1,
                       int n_threads) noexcept nogil:
    """Steps s0 <= s < s1 of the Gaussian runs first <= r < runs, split evenly among the
    threads, each thread's in blocks of CYRBM_GAUSS_LANES runs (a block's chains share
    each weight load) and a last, partial block whose few runs take their products side
    by side over the units (unit_gauss_t.h); the split changes no number.  Each thread
    on its own scratch."""
    cdef Py_ssize_t L = CYRBM_GAUSS_LANES, n = runs - first, nb = (n + L - 1) // L
    cdef int nt = cap_threads(n_threads, nb)
    cdef Py_ssize_t t, r0, r1
    for t in prange(nt, num_threads=nt, schedule='static'):
        r0 = first + t * n // nt
        r1 = first + (t + 1) * n // nt
        if f32:
            k_gauss_block(&G.pair, <float *> G.v, G.h, r0, r1, betas, s0, s1, G.weights,
                          G.streams, G.logw, <float *> G.p, G.p_step, G.work + t * G.work_bytes)
        else:
            k_gauss_block(&G.pair, <double *> G.v, G.h, r0, r1, betas, s0, s1, G.weights,
                          G.streams, G.logw, <double *> G.p, G.p_step, G.work + t * G.work_bytes)


cdef void ais_refresh_inputs(ais_buffers *B, int n_threads) noexcept nogil:
    """Every run's inputs recomputed as a refreshing step does (cyrbm_ais_refresh_inputs),
    in the blocks of runs that ``engine_run``'s sweeps take (``_run_block``: a block's
    flip lists stay in cache across the column blocks of W), each split among the
    threads.  Runs are independent: the same numbers for any split."""
    cdef Py_ssize_t runs = B.runs, lo = 0, hi, n, t
    cdef Py_ssize_t block = _run_block(runs, n_threads)
    cdef int nt
    while lo < runs:
        hi = min(runs, lo + block)
        n = hi - lo
        nt = cap_threads(n_threads, n)
        for t in prange(nt, num_threads=nt, schedule='static'):
            k_ais_refresh_inputs(B.float32, &B.pair, &B.st, lo + t * n // nt,
                                 lo + (t + 1) * n // nt)
        lo = hi


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

cdef bint valid_ladder(const double *temps, Py_ssize_t n) noexcept nogil:
    """0 <= temps[0] < ... < temps[n - 1] = 1, all finite."""
    cdef Py_ssize_t k
    if temps == NULL or n < 1 or not (temps[0] >= 0.0) or temps[n - 1] != 1.0:
        return False
    for k in range(1, n):
        if not (temps[k] > temps[k - 1]) or not isfinite(temps[k]):
            return False
    return True

# ------------------------------------------------------------------------- layouts
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
    """The next buffer of ``nbytes`` of a layout, from the one aligned bump allocator
    (kernels.h: cyrbm_take): 64-byte aligned, with 64 zero bytes after it.  With
    ``base`` NULL only ``total`` (the bytes needed) advances."""
    return cyrbm_take(base, total, nbytes + 64)


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
    S.logw_top = <double *> _take(base, &total, R * sizeof(double))
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

def base_rate_log_z(base_rate, Py_ssize_t n_hidden):
    """ln Z_A of the base-rate model (SM08 Eq. 18), see ``base_rate_log_partition``."""
    cdef double[::1] b = np.ascontiguousarray(base_rate, dtype=np.float64)
    if b.shape[0] == 0:
        return float(n_hidden * _LN2)
    return float(base_rate_log_partition(&b[0], b.shape[0], n_hidden))


def chain_uniforms(uint64_t[:, ::1] streams, Py_ssize_t n):
    """``n`` uniforms in [0, 1) (53 bits, cyrbm_rng_uniform) from each chain stream
    (streams: (R, 4) uint64, advanced in place): an (R, n) float64 array.  For the
    acceptance tests and proposals of samplers written over chains in NumPy (mode
    hopping), so they draw from cyrbm's one generator."""
    check_streams(streams, streams.shape[0], "chain_uniforms: streams")
    out = np.empty((streams.shape[0], max(n, 0)))
    cdef double[:, ::1] o = out
    cdef Py_ssize_t c, k
    with nogil:
        for c in range(streams.shape[0]):
            for k in range(n):
                o[c, k] = cyrbm_rng_uniform(<cyrbm_rng *> &streams[c, 0])
    return out

cdef inline Py_ssize_t _run_block(Py_ssize_t runs, int n_threads) noexcept nogil:
    """Runs per kernel call of GibbsEngine.steps and .sweep: a sixteenth of them (at
    least 64 per thread), so that a call whose one step over all the runs takes seconds
    (784 x 500 units, 20,000 runs) still checks for Ctrl-C every 0.1-0.2 s.  Runs are
    independent, so the blocks change no number."""
    cdef Py_ssize_t least = 64 * (n_threads if n_threads > 0 else 1)
    cdef Py_ssize_t b = (runs + 15) // 16
    return b if b > least else least


# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._dispatch cimport kernel_table
from cyrbm._dispatch import use_kernels, kernels_in_use
cyrbm_kt = kernel_table()
