# cython: language_level=3
"""Parallel tempering (Cho, Raiko & Ilin 2010) on the Gibbs engine: the swaps of
neighbouring temperatures (``pt_swaps``, CRI10 Table I step 4b, Eq. 5) and the sampler
``pt_sample`` (its nogil driver ``pt_sweeps``, shared with the C API): tempered
block-Gibbs sweeps of the RBMs (t W, b, c) through ``engine_run`` (_anneal.pyx), then
swaps.  The loops are in cyrbm/_kernels/anneal_t.h (cyrbm_pt_swaps).

The same for the other unit types' tempered families (ln p*_beta(v) = g + beta e +
sum_j softplus(beta x_j): beta scales W, the hidden biases and L, keeps the visible
biases and sigma): ``gauss_pt_sample`` / ``srbm_pt_sample`` (nogil drivers
``gauss_pt_sweeps`` / ``srbm_pt_sweeps``, shared with the C API, on the one driver
``_states_pt``): each round every chain's sweep at its beta on the class's own kernel
(cyrbm_gauss_block, gauss_t.h; cyrbm_srbm_steps, common_t.h), then per ladder the swaps
of states from the top down (``_ladder_swaps``), the numbers of
models.tempering.TemperedStates' former NumPy round.

``bar_pairs``: Bennett's acceptance ratio of every neighbouring pair at once, and
``importance_rows``: the importance-sampling ratios of an update at every temperature,
for the PT tracker of ln Z (training.pt_tracking; DCB11 Sec. 3.1-3.2).
"""
import numpy as np
from cython.parallel cimport prange
from cyrbm._omp cimport cap_threads, seconds_now, signal_raised, raise_set_error, time_to_check
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy, memset
from libc.math cimport exp, log, log1p, fabs, isnan, NAN
from cython cimport floating

from cyrbm._random cimport cyrbm_rng, check_streams
from cyrbm._ckernels cimport *
from cyrbm._anneal cimport (ais_buffers, ais_alloc, ais_free, ais_set_tempered, engine_run,
                            valid_ladder, GIBBS_REFRESH)


cdef void pt_swaps(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32,
                   Py_ssize_t ladders, Py_ssize_t K1, const double *temps, int32_t *order,
                   double *beta, cyrbm_rng *streams, int64_t *accepted,
                   int n_threads, double *terms=NULL) noexcept nogil:
    """The swaps of neighbouring temperatures (CRI10 Table I step 4b, Eq. 5) of every
    ladder (see cyrbm_pt_swaps; ``terms``, when not NULL, the PT tracker's bridge terms):
    one contiguous block of ladders per thread; a ladder draws only from its own stream,
    so the result does not depend on the threads."""
    cdef int nt = cap_threads(n_threads, ladders)
    cdef Py_ssize_t t, m0, m1
    if ladders <= 0 or K1 < 2:
        return
    for t in prange(nt, num_threads=nt, schedule='static'):
        m0 = t * ladders // nt
        m1 = (t + 1) * ladders // nt
        k_pt_swaps(float32, P, S, m0, m1, K1, temps, order, beta, streams, accepted, terms)


cdef void tempered_sums(const cyrbm_ais_pair *P, const cyrbm_ais_state *S, bint float32,
                        Py_ssize_t n, const int32_t *runs, const double *beta,
                        const double *dbias, double *out, int n_threads) noexcept nogil:
    """out[i] = sum_j softplus(beta[i] x_j + c_j) + dbias.v of run runs[i] from the kept
    inputs x (cyrbm_tempered_sums), one contiguous block of rows per thread (each row's
    own sum: the same numbers for any number of threads)."""
    cdef int nt = cap_threads(n_threads, n)
    cdef Py_ssize_t t
    if n <= 0:
        return
    for t in prange(nt, num_threads=nt, schedule='static'):
        k_tempered_sums(float32, P, S, t * n // nt, (t + 1) * n // nt, runs, beta, dbias, out)

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
    _check_states_pt(R, D, M, v.shape[1], K1, (vbias.shape[0], hbias.shape[0]), streams,
                     swap_streams, accepted)
    if R == 0 or steps <= 0:
        return
    with nogil:
        status = pt_sweeps(&W[0, 0], &vbias[0], &hbias[0], D, M, &v[0, 0], n, &temps[0], K1,
                           steps, <cyrbm_rng *> &streams[0, 0],
                           <cyrbm_rng *> &swap_streams[0, 0], &accepted[0, 0], n_threads,
                           True)
    _raise_states_pt(status)


# ------------------------------------------------ the tempered families of other unit types
cdef double pairwise_sum(const double *a, Py_ssize_t n) noexcept nogil:
    """sum a[0 .. n-1] in NumPy's pairwise order (np.sum along a contiguous row: 8
    partial sums in blocks of at most 128, halves above), so a sum here is NumPy's."""
    cdef Py_ssize_t i, n2
    cdef double r0, r1, r2, r3, r4, r5, r6, r7, res
    if n < 8:
        res = 0.0
        for i in range(n):
            res = res + a[i]
        return res
    if n <= 128:
        r0, r1, r2, r3 = a[0], a[1], a[2], a[3]
        r4, r5, r6, r7 = a[4], a[5], a[6], a[7]
        i = 8
        while i < n - (n % 8):
            r0 = r0 + a[i]
            r1 = r1 + a[i + 1]
            r2 = r2 + a[i + 2]
            r3 = r3 + a[i + 3]
            r4 = r4 + a[i + 4]
            r5 = r5 + a[i + 5]
            r6 = r6 + a[i + 6]
            r7 = r7 + a[i + 7]
            i = i + 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res = res + a[i]
            i = i + 1
        return res
    n2 = n // 2
    n2 = n2 - n2 % 8
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2)


cdef double _softplus_sum(double beta, const double *x, Py_ssize_t M,
                          double *tmp) noexcept nogil:
    """S(beta, x) = sum_j softplus(beta x_j) as models.tempering._softplus_sum has it:
    max(y, 0) + ln(1 + e^-|y|) per unit, summed in NumPy's order (tmp: M doubles)."""
    cdef Py_ssize_t j
    cdef double y
    for j in range(M):
        y = beta * x[j]
        tmp[j] = (y if (y >= 0.0 or isnan(y)) else 0.0) + log1p(exp(-fabs(y)))
    return pairwise_sum(tmp, M)


cdef inline double _cached_S(double *cache, Py_ssize_t k, const double *temps,
                             const double *x, Py_ssize_t M, double *tmp) noexcept nogil:
    """A state's S(temps[k], x), computed once a round (cache: its K1 values, NaN unknown)."""
    if isnan(cache[k]):
        cache[k] = _softplus_sum(temps[k], x, M, tmp)
    return cache[k]


cdef inline void _swap_bytes(char *a, char *b, size_t n) noexcept nogil:
    cdef size_t i
    cdef char t
    for i in range(n):
        t = a[i]
        a[i] = b[i]
        b[i] = t


cdef void _ladder_swaps(Py_ssize_t m0, Py_ssize_t m1, Py_ssize_t n, Py_ssize_t K1,
                        const double *temps, char *v, size_t row_bytes, double *e,
                        double *x, Py_ssize_t M, double *cache, cyrbm_rng *swap_streams,
                        int64_t *accepted, double *tmp, int variant) noexcept nogil:
    """The swaps of ladders m0 <= m < m1 (states temperature-major: ladder m's state at
    temps[k] is row k n + m of v, e, x and cache): ladder m draws K = K1 - 1 uniforms
    u_0 .. u_{K-1} from swap_streams[m], then for k = K-1 .. 0 the states at temps[k]
    and temps[k+1] trade places when u_{K-1-k} < exp(min(ln r, 0)), CRI10 Eq. 5 for the
    family ln p*_t = g + t e + S(t, x) (models.tempering.swap_log_ratio, in its order):
    ln r = (t_k - t_k+1) (e_hi - e_lo) + S(t_k, x_hi) + S(t_k+1, x_lo) - S(t_k, x_lo)
    - S(t_k+1, x_hi).  accepted[m (K1 - 1) + k] counts the swaps taken.  ``variant``
    is for the tests' power checks only: 1 takes ln r of the untempered ln p*_1 at
    both rungs, 2 leaves e out."""
    cdef Py_ssize_t m, i, k, lo, hi, K = K1 - 1
    cdef double *u = tmp + M
    cdef double log_r
    for m in range(m0, m1):
        for i in range(K):
            u[i] = cyrbm_rng_uniform(&swap_streams[m])
        for i in range(K):
            k = K - 1 - i
            lo, hi = k * n + m, (k + 1) * n + m
            log_r = ((temps[k] - temps[k + 1]) * (e[hi] - e[lo])
                     + _cached_S(cache + hi * K1, k, temps, x + hi * M, M, tmp)
                     + _cached_S(cache + lo * K1, k + 1, temps, x + lo * M, M, tmp)
                     - _cached_S(cache + lo * K1, k, temps, x + lo * M, M, tmp)
                     - _cached_S(cache + hi * K1, k + 1, temps, x + hi * M, M, tmp))
            if variant == 1:
                log_r = (_softplus_sum(1.0, x + hi * M, M, tmp)
                         + _softplus_sum(1.0, x + lo * M, M, tmp)
                         - _softplus_sum(1.0, x + lo * M, M, tmp)
                         - _softplus_sum(1.0, x + hi * M, M, tmp))
            elif variant == 2:
                log_r = log_r - (temps[k] - temps[k + 1]) * (e[hi] - e[lo])
            if u[i] < exp(log_r if log_r < 0.0 else 0.0):
                _swap_bytes(v + lo * row_bytes, v + hi * row_bytes, row_bytes)
                _swap_bytes(<char *> (x + lo * M), <char *> (x + hi * M), M * sizeof(double))
                _swap_bytes(<char *> (cache + lo * K1), <char *> (cache + hi * K1),
                            K1 * sizeof(double))
                e[lo], e[hi] = e[hi], e[lo]
                accepted[m * K + k] += 1


cdef void _gauss_parts(const floating *v, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t D,
                       Py_ssize_t M, const double *W64, const double *c64,
                       const double *s64, double *x, double *e, double *cache,
                       Py_ssize_t K1, double *tmp) noexcept nogil:
    """x_r = W^T (v_r / sigma) + c in float64 for rows r0 <= r < r1 (the kernel
    cyrbm_inputs_rows, anneal.c, four rows at a time; tmp: 4 D doubles), e_r = 0, their
    S cache cleared."""
    cdef Py_ssize_t r, q, i, j, nr
    for r in range(r0, r1, 4):
        nr = min(4, r1 - r)
        for q in range(nr):
            for i in range(D):
                tmp[q * D + i] = <double> v[(r + q) * D + i] / s64[i]
        cyrbm_inputs_rows(tmp, D, W64, c64, M, nr, x + r * M)
        for q in range(nr):
            e[r + q] = 0.0
            for j in range(K1):
                cache[(r + q) * K1 + j] = NAN


cdef void _srbm_parts(const uint8_t *v, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t D,
                      Py_ssize_t M, const double *W64, const double *c64, const double *L64,
                      double *x, double *e, double *cache, Py_ssize_t K1,
                      double *tmp) noexcept nogil:
    """x_r = W^T v_r + c (cyrbm_inputs_rows) and e_r = v_r^T L v_r / 2 in float64 for 0/1
    rows r0 <= r < r1 (SRBM._tempered_parts: (L v)_i v_i summed in NumPy's order), their S
    cache cleared (tmp: 5 D doubles)."""
    cdef Py_ssize_t r, q, i, l, j, nr
    cdef double s
    cdef double *t = tmp + 4 * D
    cdef const uint8_t *vr
    for r in range(r0, r1, 4):
        nr = min(4, r1 - r)
        for q in range(nr):
            for i in range(D):
                tmp[q * D + i] = v[(r + q) * D + i]
        cyrbm_inputs_rows(tmp, D, W64, c64, M, nr, x + r * M)
        for q in range(nr):
            vr = v + (r + q) * D
            for i in range(D):
                s = 0.0
                if vr[i]:
                    for l in range(D):
                        if vr[l]:
                            s = s + L64[l * D + i]
                t[i] = s
            e[r + q] = 0.5 * pairwise_sum(t, D)
            for j in range(K1):
                cache[(r + q) * K1 + j] = NAN


cdef void _sweep_items(bint gauss, const cyrbm_gauss_pair *G, const cyrbm_srbm_pair *P,
                       char *vt, uint8_t *h, cyrbm_rng *st, double *lw, const double *bb,
                       double *y, Py_ssize_t n, Py_ssize_t K1, Py_ssize_t nbk,
                       Py_ssize_t items, Py_ssize_t i0, Py_ssize_t i1, char *work,
                       double *scratch, floating *kind) noexcept nogil:
    """One sweep at its beta of the chains of items i0 <= i < i1 (temperature-major rows
    k n + m): a Gaussian item is a block of up to 16 chains of one temperature
    (cyrbm_gauss_block, step 1 of the schedule (beta_k, beta_k), no weights), an SRBM item
    one chain (cyrbm_srbm_steps, its lateral field recomputed first)."""
    cdef Py_ssize_t i, k, r0, r1, D, M
    if gauss:
        D, M = G.D, G.M
        for i in range(i0, i1):
            k = i // nbk
            r0 = k * n + (i % nbk) * CYRBM_GAUSS_LANES
            r1 = min(k * n + n, r0 + CYRBM_GAUSS_LANES)
            k_gauss_block(G, <floating *> vt, h, r0, r1, bb + 2 * k, 1, 2, 0, st, lw,
                          <floating *> NULL, 0, work)
    else:
        D, M = P.D, P.M
        for i in range(i0, i1):
            k = i // n
            k_srbm_steps(floating is float, P, <uint8_t *> vt + i * D, h + i * M, y + i * D,
                         scratch, bb + 2 * k, 1, 2, 0, 1, st + i, lw + i)


cdef int _states_pt(bint gauss, const floating *W, const floating *vbias,
                    const floating *hbias, const floating *other, Py_ssize_t D,
                    Py_ssize_t M, void *v, Py_ssize_t n, const double *temps, Py_ssize_t K1,
                    int steps, cyrbm_rng *streams, cyrbm_rng *swap_streams,
                    int64_t *accepted, int n_threads, bint check_signals,
                    int variant) noexcept nogil:
    """``steps`` rounds of parallel tempering of a Gaussian RBM (``gauss``: ``other`` is
    sigma, v of the float type) or an SRBM (``other`` is L, v 0/1 uint8) on n ladders of
    K1 chains (gauss_pt_sweeps, srbm_pt_sweeps: the layout and the returns)."""
    cdef Py_ssize_t R = n * K1, r, m, k, t, s, i, items, nbk, r0, r1, q
    cdef Py_ssize_t L16 = CYRBM_GAUSS_LANES
    cdef size_t vb = D * sizeof(floating) if gauss else D
    cdef size_t gw = (cyrbm_gauss_work_bytes(D, M) + 63) // 64 * 64
    cdef size_t tw = <size_t> (5 * D + 2 * M + K1 + 1) * sizeof(double)
    cdef int nt = n_threads if n_threads > 0 else 1
    cdef int ns, nx, nw
    cdef char *block = NULL
    cdef char *vt
    cdef char *work
    cdef uint8_t *h
    cdef cyrbm_rng *st
    cdef double *W64
    cdef double *c64
    cdef double *o64
    cdef double *b64
    cdef double *x
    cdef double *e
    cdef double *cache
    cdef double *bb
    cdef double *lw
    cdef double *y
    cdef double *tmp
    cdef int64_t *acc = accepted
    cdef cyrbm_gauss_pair G
    cdef cyrbm_srbm_pair P
    cdef double last
    cdef int status = 0
    if n < 0 or steps < 0 or D < 1 or M < 1 or not valid_ladder(temps, K1):
        return -2
    if n == 0 or steps == 0:
        return 0
    cdef size_t nbytes = (R * vb + R * M + R * sizeof(cyrbm_rng)
                          + (D * M + M + D + (D if gauss else D * D) + 2 * K1 + R * M + 2 * R
                             + R * K1 + (0 if gauss else R * D)) * sizeof(double)
                          + nt * (gw if gauss else 0) + nt * tw + 16 * 64)
    block = <char *> malloc(nbytes)
    if acc == NULL:
        acc = <int64_t *> calloc(max(n * (K1 - 1), 1), sizeof(int64_t))
    if block == NULL or acc == NULL:
        free(block)
        if accepted == NULL:
            free(acc)
        return -1
    # one block, 64-byte aligned pieces
    cdef size_t used = 0
    st = <cyrbm_rng *> cyrbm_take(block, &used, R * sizeof(cyrbm_rng))
    W64 = <double *> cyrbm_take(block, &used, D * M * sizeof(double))
    c64 = <double *> cyrbm_take(block, &used, M * sizeof(double))
    o64 = <double *> cyrbm_take(block, &used, (D if gauss else D * D) * sizeof(double))
    b64 = <double *> cyrbm_take(block, &used, D * sizeof(double))
    bb = <double *> cyrbm_take(block, &used, 2 * K1 * sizeof(double))
    x = <double *> cyrbm_take(block, &used, R * M * sizeof(double))
    e = <double *> cyrbm_take(block, &used, R * sizeof(double))
    lw = <double *> cyrbm_take(block, &used, R * sizeof(double))
    cache = <double *> cyrbm_take(block, &used, R * K1 * sizeof(double))
    y = <double *> cyrbm_take(block, &used, (0 if gauss else R * D) * sizeof(double))
    h = <uint8_t *> cyrbm_take(block, &used, R * M)
    vt = <char *> cyrbm_take(block, &used, R * vb)
    work = <char *> cyrbm_take(block, &used, nt * (gw if gauss else 0))
    tmp = <double *> cyrbm_take(block, &used, nt * tw)
    for i in range(D * M):
        W64[i] = W[i]
    for i in range(M):
        c64[i] = hbias[i]
    for i in range(D if gauss else D * D):
        o64[i] = other[i]
    for k in range(K1):                  # a constant beta: the kernels read betas[1]
        bb[2 * k] = temps[k]
        bb[2 * k + 1] = temps[k]
    for r in range(R):                   # in: ladder-major rows to temperature-major
        m, k = r // K1, r % K1
        memcpy(vt + (k * n + m) * vb, <char *> v + r * vb, vb)
        st[k * n + m] = streams[r]
        lw[r] = 0.0
    for i in range(D):
        b64[i] = vbias[i]
    # the base of the family's runs (beta = 0): N(b, sigma^2), or log-odds b
    G.D, G.M, G.W, G.b, G.c, G.s, G.mu, G.sd = D, M, W, vbias, hbias, other, b64, o64
    G.Wt = NULL                         # u = W h through W's rows
    P.D, P.M, P.W, P.b, P.c, P.L, P.bA = D, M, W, vbias, hbias, other, b64
    nbk = (n + L16 - 1) // L16
    items = K1 * nbk if gauss else R
    ns = cap_threads(nt, items)
    nx = cap_threads(nt, R)
    nw = cap_threads(nt, n)
    last = seconds_now()
    for s in range(steps):
        for t in prange(ns, num_threads=ns, schedule='static'):
            _sweep_items(gauss, &G, &P, vt, h, st, lw, bb, y, n, K1, nbk, items,
                         t * items // ns, (t + 1) * items // ns, work + t * gw,
                         <double *> (<char *> tmp + t * tw), <floating *> NULL)
        if K1 > 1:
            for t in prange(nx, num_threads=nx, schedule='static'):
                r0 = t * R // nx
                r1 = (t + 1) * R // nx
                if gauss:
                    _gauss_parts(<floating *> vt, r0, r1, D, M, W64, c64, o64, x, e, cache,
                                 K1, <double *> (<char *> tmp + t * tw))
                else:
                    _srbm_parts(<uint8_t *> vt, r0, r1, D, M, W64, c64, o64, x, e, cache,
                                K1, <double *> (<char *> tmp + t * tw))
            for t in prange(nw, num_threads=nw, schedule='static'):
                _ladder_swaps(t * n // nw, (t + 1) * n // nw, n, K1, temps, vt, vb, e, x,
                              M, cache, swap_streams, acc,
                              <double *> (<char *> tmp + t * tw), variant)
        if check_signals and s + 1 < steps and time_to_check(&last) and signal_raised():
            status = -3                  # the rounds so far are kept
            break
    for r in range(R):                   # out
        m, k = r // K1, r % K1
        memcpy(<char *> v + r * vb, vt + (k * n + m) * vb, vb)
        streams[r] = st[k * n + m]
    if accepted == NULL:
        free(acc)
    free(block)
    return status


cdef int gauss_pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                         const floating *sigma, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                         floating *v, Py_ssize_t n, const double *temps, Py_ssize_t n_temps,
                         int steps, cyrbm_rng *streams, cyrbm_rng *swap_streams,
                         int64_t *accepted, int n_threads, bint check_signals=False,
                         int variant=0) noexcept nogil:
    """``steps`` rounds of parallel tempering (CRI10 Table I, swaps by Eq. 5) of the
    Gaussian RBM's tempered family ln p*_t(v) = -sum_i (v_i - b_i)^2 / (2 sigma_i^2) +
    sum_j softplus(t (c_j + sum_i W_ij v_i / sigma_i)) on ``n`` ladders of K1 =
    ``n_temps`` chains (GaussianRBM.sample(sampler="pt"), Trainer(method="pt"), the C
    API): each round one Gibbs sweep of every chain at its t (cyrbm_gauss_block between
    N(b, sigma^2) and the model at the constant beta t), then per ladder the swaps of
    states from the top down (_ladder_swaps).

    v (n K1 x n_visible, INOUT): row m K1 + k is ladder m's state at temps[k]; chain
    m K1 + k stays at temps[k] on streams[m K1 + k] (the states move, the streams do
    not); ladder m's swap uniforms come from swap_streams[m] (K1 - 1 a round).
    accepted (n x (K1 - 1), INOUT, or NULL) counts accepted swaps per pair.  Returns 0,
    -1 when memory runs out, -2 for invalid sizes or temperatures (not 0 <= t_0 < ... <
    t_K = 1), -3 when a Python signal handler raised (``check_signals``; the rounds done
    so far are kept: every array then holds their result).  ``variant``: a wrong swap
    rule for the tests' power checks (_ladder_swaps), 0 otherwise."""
    if sigma == NULL:
        return -2
    return _states_pt(True, W, vbias, hbias, sigma, n_visible, n_hidden, v, n, temps,
                      n_temps, steps, streams, swap_streams, accepted, n_threads,
                      check_signals, variant)


cdef int srbm_pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                        const floating *L, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                        uint8_t *v, Py_ssize_t n, const double *temps, Py_ssize_t n_temps,
                        int steps, cyrbm_rng *streams, cyrbm_rng *swap_streams,
                        int64_t *accepted, int n_threads, bint check_signals=False,
                        int variant=0) noexcept nogil:
    """The same for the SRBM's family ln p*_t(v) = b.v + t v^T L v / 2 + sum_j
    softplus(t (c + W^T v)_j) (SRBM.sample(sampler="pt"), Trainer(method="pt",
    lateral=True), the C API): sweeps by cyrbm_srbm_steps (h | v at once, v | h one unit
    at a time, the field L v recomputed each round), v 0/1 uint8."""
    if L == NULL:
        return -2
    return _states_pt(False, W, vbias, hbias, L, n_visible, n_hidden, v, n, temps, n_temps,
                      steps, streams, swap_streams, accepted, n_threads, check_signals,
                      variant)


def _check_states_pt(Py_ssize_t R, Py_ssize_t D, Py_ssize_t M, Py_ssize_t vD, Py_ssize_t K1,
                     tuple shapes, streams, swap_streams, accepted):
    n = R // K1 if K1 > 0 else 0
    if K1 < 1 or R != n * K1 or vD != D or shapes != (D, M):
        raise ValueError("chain, temperature, bias and weight shapes do not match.")
    check_streams(streams, R, "streams")
    check_streams(swap_streams, n, "swap streams")
    if accepted.shape[0] != n or accepted.shape[1] != max(K1 - 1, 1):
        raise ValueError(f"accepted must have shape ({n}, {max(K1 - 1, 1)}).")
    return n


def _raise_states_pt(int status):
    if status == -3:
        raise_set_error()
    if status == -1:
        raise MemoryError("no memory for the tempered chains.")
    if status != 0:
        raise ValueError("temperatures must rise strictly from t_0 >= 0 to exactly 1.")


def gauss_pt_sample(const floating[:, ::1] W, const floating[::1] vbias,
                    const floating[::1] hbias, const floating[::1] sigma, floating[:, ::1] v,
                    const double[::1] temps, int steps, uint64_t[:, ::1] streams,
                    uint64_t[:, ::1] swap_streams, int64_t[:, ::1] accepted, int n_threads=1,
                    int variant=0):
    """``steps`` rounds of parallel tempering of a Gaussian RBM (gauss_pt_sweeps) on
    len(v) / len(temps) ladders: v (INOUT, the model's dtype, ladder-major: row m K1 + k
    at temps[k]), streams (INOUT, one per chain), swap_streams (INOUT, one per ladder),
    accepted (INOUT, ladders x (K1 - 1)).  Ctrl-C is answered between rounds."""
    cdef Py_ssize_t K1 = temps.shape[0], D = W.shape[0], M = W.shape[1], R = v.shape[0]
    cdef Py_ssize_t n = _check_states_pt(R, D, M, v.shape[1], K1,
                         (vbias.shape[0] if sigma.shape[0] == D else -1, hbias.shape[0]),
                         streams, swap_streams, accepted)
    if R == 0 or steps <= 0 or D == 0 or M == 0:
        return
    cdef int status
    with nogil:
        status = gauss_pt_sweeps(&W[0, 0], &vbias[0], &hbias[0], &sigma[0], D, M, &v[0, 0],
                                 n, &temps[0], K1, steps, <cyrbm_rng *> &streams[0, 0],
                                 <cyrbm_rng *> &swap_streams[0, 0], &accepted[0, 0],
                                 n_threads, True, variant)
    _raise_states_pt(status)


def srbm_pt_sample(const floating[:, ::1] W, const floating[::1] vbias,
                   const floating[::1] hbias, const floating[:, ::1] L, uint8_t[:, ::1] v,
                   const double[::1] temps, int steps, uint64_t[:, ::1] streams,
                   uint64_t[:, ::1] swap_streams, int64_t[:, ::1] accepted, int n_threads=1,
                   int variant=0):
    """The same for an SRBM (srbm_pt_sweeps): v 0/1 uint8."""
    cdef Py_ssize_t K1 = temps.shape[0], D = W.shape[0], M = W.shape[1], R = v.shape[0]
    cdef Py_ssize_t n = _check_states_pt(R, D, M, v.shape[1], K1,
                         (vbias.shape[0] if L.shape[0] == D and L.shape[1] == D else -1,
                          hbias.shape[0]), streams, swap_streams, accepted)
    if R == 0 or steps <= 0 or D == 0 or M == 0:
        return
    cdef int status
    with nogil:
        status = srbm_pt_sweeps(&W[0, 0], &vbias[0], &hbias[0], &L[0, 0], D, M, &v[0, 0], n,
                                &temps[0], K1, steps, <cyrbm_rng *> &streams[0, 0],
                                <cyrbm_rng *> &swap_streams[0, 0], &accepted[0, 0],
                                n_threads, True, variant)
    _raise_states_pt(status)


# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._dispatch cimport kernel_table
cyrbm_kt = kernel_table()


def swap_inputs(const double[:, ::1] a, const double[:, ::1] W, const double[::1] c):
    """The swaps' float64 hidden inputs x = a W + c of the rows of ``a`` (N x D, W D x M),
    as ``_gauss_parts`` / ``_srbm_parts`` take them (cyrbm_inputs_rows, four rows at a
    time): each sum from 0 over the units in order, then c.  For tests."""
    cdef Py_ssize_t N = a.shape[0], D = a.shape[1], M = W.shape[1], r
    if W.shape[0] != D or c.shape[0] != M:
        raise ValueError("the rows, weight and bias shapes do not match.")
    out = np.zeros((N, M), dtype=np.float64)
    cdef double[:, ::1] x = out
    if N == 0 or M == 0:
        return out
    with nogil:
        for r in range(0, N, 4):
            cyrbm_inputs_rows(&a[r, 0] if D > 0 else NULL, D, &W[0, 0] if D > 0 else NULL,
                              &c[0], M, min(4, N - r), &x[r, 0])
    return out


# --------------------------------------------- Bennett's acceptance ratio of the ladders' pairs
cdef double _log_mean_exp(const double *w, Py_ssize_t n, double sign) noexcept nogil:
    """ln mean exp(sign w) over n entries, the largest taken out first."""
    cdef Py_ssize_t i
    cdef double m = sign * w[0], s = 0.0
    for i in range(1, n):
        if sign * w[i] > m:
            m = sign * w[i]
    for i in range(n):
        s += exp(sign * w[i] - m)
    return m + log(s / n)


cdef double _bar_balance(const double *wf, const double *wr, Py_ssize_t n, double d,
                         double *u, double *v, double *slope) noexcept nogil:
    """sum_i u_i - sum_i v_i with u_i = sigma(wf_i - d), v_i = sigma(wr_i + d) (kept in
    u, v): decreasing in d, zero at BAR's root; ``slope`` its derivative."""
    cdef Py_ssize_t i
    cdef double a = 0.0, b = 0.0, s = 0.0
    for i in range(n):
        u[i] = cyrbm_sigmoid(wf[i] - d)     # vmath.h's logistic
        v[i] = cyrbm_sigmoid(wr[i] + d)
        a += u[i]
        b += v[i]
        s += u[i] * (1.0 - u[i]) + v[i] * (1.0 - v[i])
    slope[0] = -s
    return a - b


cdef void _bar_pair(const double *wf, const double *wr, Py_ssize_t n, double *delta,
                    double *overlap, double *influence, Py_ssize_t ldi,
                    double *u, double *v) noexcept nogil:
    """One pair of ``bar_pairs``: the root by Newton's method inside the bisection's
    bracket (started from the one-sided estimates, widened until they bracket it), then
    the overlap and the draws' influence (column ``influence[i ldi]``), from the sigmoids
    u, v (n each, scratch) at the last point evaluated."""
    cdef Py_ssize_t i, it
    cdef double one_f = _log_mean_exp(wf, n, 1.0), one_r = -_log_mean_exp(wr, n, -1.0)
    cdef double lo = one_f if one_f < one_r else one_r
    cdef double hi = one_r if one_f < one_r else one_f
    cdef double width = hi - lo if hi - lo > 1.0 else 1.0
    cdef double d, f, slope, step, new, su, sv
    while _bar_balance(wf, wr, n, lo, u, v, &slope) < 0:
        lo -= width
        width *= 2
    while _bar_balance(wf, wr, n, hi, u, v, &slope) > 0:
        hi += width
        width *= 2
    d = 0.5 * (lo + hi)
    for it in range(200):
        f = _bar_balance(wf, wr, n, d, u, v, &slope)
        if f > 0:
            lo = d
        else:
            hi = d
        step = d - f / slope if slope < 0 else NAN
        new = step if (step >= lo and step <= hi) else 0.5 * (lo + hi)
        if fabs(new - d) <= 1e-13 * (1.0 + fabs(d)):
            break       # d is the root to within 1e-13 (u, v are at d)
        d = new
    # the overlap 4 mean sigma(x) sigma(-x) = -4 slope / 2n; the influence u / mean u -
    # v / mean v, at d
    overlap[0] = -2.0 * slope / n if -2.0 * slope / n < 1.0 else 1.0
    delta[0] = d
    su = sv = 0.0
    for i in range(n):
        su += u[i]
        sv += v[i]
    for i in range(n):
        influence[i * ldi] = u[i] / (su / n) - v[i] / (sv / n)


def bar_pairs(const double[:, ::1] w_forward, const double[:, ::1] w_reverse):
    """Bennett's acceptance ratio for the K rows of the K x n log weights (w_F = ln p*_B -
    ln p*_A at n draws of A, w_R = ln p*_A - ln p*_B at n draws of B): the root Delta of
    sum_F sigma(w_F - Delta) = sum_R sigma(w_R + Delta) (Bennett 1976; Newton's method
    kept inside the bisection's bracket), the overlap 4 mean(e^-|x| / (1 + e^-|x|)^2)
    over x = Delta - w_F and w_R + Delta (at most 1; Shirts et al. 2003), and each pair of
    draws' influence u / mean u - v / mean v, u = sigma(w_F - Delta), v = sigma(w_R +
    Delta) (Meng & Wong 1996).  Returns (Delta (K), overlap (K), influence (n x K)); the
    sums in a fixed order, so the numbers do not depend on threads or kernels."""
    cdef Py_ssize_t K = w_forward.shape[0], n = w_forward.shape[1], j
    if w_reverse.shape[0] != K or w_reverse.shape[1] != n or n < 1:
        raise ValueError("Bennett's acceptance ratio of pairs needs forward and reverse "
                         "log weights of the same shape, at least one draw each.")
    if not (np.all(np.isfinite(w_forward)) and np.all(np.isfinite(w_reverse))):
        raise ValueError("Bennett's acceptance ratio needs finite log weights.")
    delta, overlap, influence = np.empty(K), np.empty(K), np.empty((n, K))
    cdef double[::1] dv = delta, ov = overlap
    cdef double[:, ::1] iv = influence
    cdef double[::1] scratch = np.empty(2 * n)
    if K == 0:
        return delta, overlap, influence
    with nogil:
        for j in range(K):
            _bar_pair(&w_forward[j, 0], &w_reverse[j, 0], n, &dv[j], &ov[j], &iv[0, j], K,
                      &scratch[0], &scratch[n])
    return delta, overlap, influence


def importance_rows(const double[:, ::1] log_w):
    """For each row of log weights ln p*'(x) - ln p*(x) at n draws x of p (DCB11 Eq. 5):
    ln Z'/Z = ln mean exp(log_w) (the largest taken out first), each draw's influence
    w_i / mean w - 1 (the delta method), and the effective sample size over n, (sum w)^2 /
    (n sum w^2) (Kong 1992).  Returns (ratio (K), influence (K x n), ess (K)); the sums in
    a fixed order."""
    cdef Py_ssize_t K = log_w.shape[0], n = log_w.shape[1], k, i
    cdef double m, s, s2, w
    if n < 1:
        raise ValueError("an importance-sampling ratio needs at least one draw.")
    ratio, influence, ess = np.empty(K), np.empty((K, n)), np.empty(K)
    cdef double[::1] rv = ratio, ev = ess
    cdef double[:, ::1] iv = influence
    with nogil:
        for k in range(K):
            m = log_w[k, 0]
            for i in range(1, n):
                if log_w[k, i] > m:
                    m = log_w[k, i]
            s = s2 = 0.0
            for i in range(n):
                w = exp(log_w[k, i] - m)
                iv[k, i] = w
                s += w
                s2 += w * w
            rv[k] = m + log(s / n)
            ev[k] = s * s / (n * s2)
            for i in range(n):
                iv[k, i] = iv[k, i] / (s / n) - 1.0
    return ratio, influence, ess
