# cython: language_level=3
"""The scalar float64 driver of the DBN estimators (Murray & Salakhutdinov 2009) when the
bottom layer has Gaussian visible units (MS09 Sec. 5.2) or the top layer lateral weights
(a semi-restricted top above either bottom): ``ScalarChibModel``, the Chib-style estimator,
per-vector AIS over h1 and the variational bound's samples on one driver, ``_g_run``
(scalar loops, compiled once: no vector code, so the bits depend on no kernel variant).
The binary DBN's vectorised driver is ``ChibModel`` in _chib.pyx.
"""
import numpy as np

from cython.parallel cimport prange
from cpython.exc cimport PyErr_CheckSignals
from libc.math cimport log, exp, INFINITY
from libc.stdint cimport uint8_t, int32_t, uint64_t
from libc.stdlib cimport malloc, free

from cyrbm._ckernels cimport *
from cyrbm._omp cimport cap_threads
from cyrbm._random cimport cyrbm_rng

from cyrbm._chib import _checked_items


# ---------------------------------------------------------------------------------------
# A DBN whose bottom layer has Gaussian visible units (MS09 Sec. 5.2), or whose top layer
# has lateral weights (a semi-restricted top above either bottom): the same two
# estimators and the variational bound's samples, on a typed driver in float64 (scalar
# loops, compiled once: no vector code, so the bits depend on no kernel variant).
#
# RBM1 (binary): ln p(v | h1) = sum_i v_i u_i - softplus(u_i), u = b1 + W1 h1, and
# Q(h1 | v) = sigma(c1 + W1^T v).  A chain keeps u in place of the residual, and
# p1 = sigma(u), so that the likelihood's change when unit j turns on is
#     (W1^T v)_j - sum_i ln(1 + p1_i expm1(w_ij))
# (+ sum_i ln(1 + p1_i expm1(-w_ij)) when it turns off), by the same blocks of
# logarithms as the top's term below.
#
# RBM1 (Gaussian): p(v | h1) = N(b1 + s (W1 h1), s^2), Q(h1 | v) = sigma(c1 + W1^T (v / s)),
# a = (v - b1) / s.  The top layer enters only through
#     ln P*(h1) = b2.h1 + h1^T L h1 / 2 + sum_k softplus(c2 + W2^T h1)_k
# (L symmetric with a zero diagonal, absent for an RBM top).  A chain keeps the residual
# r = a - W1 h1, x2 = c2 + W2^T h1 and l = L h1; a flip of unit j moves them by one
# column of W1, one row of W2 and one column of L, O(D + H2 + H1) per site.  It keeps
# p2 = sigma(x2) too, so that the top's change when unit j turns on,
#     sum_k softplus(x2_k + w_jk) - softplus(x2_k) = sum_k ln(1 + p2_k expm1(w_jk)),
# (and -sum_k ln(1 + p2_k expm1(-w_jk)) when it turns off) costs one logarithm per block
# of DELTA_BLOCK factors rather than two softplus per k; each factor lies in
# [exp(-|w|), exp(|w|)], so a block cannot overflow while |w| <= DELTA_MAX_W (past it, one
# logarithm per factor).

#: factors per logarithm in _g_delta, and the largest |w| of W2 for which blocks are safe
#: (DELTA_BLOCK * DELTA_MAX_W < 709, the exponent where a double overflows)
DELTA_BLOCK = 16
DELTA_MAX_W = 40.0


cdef struct gdbn_model:
    Py_ssize_t D, H1, H2
    bint binary            # RBM1's visible units: binary (else Gaussian)
    const double *E1on     # H1 x D: expm1(W1^T) (binary)
    const double *E1off    # H1 x D: expm1(-W1^T) (binary)
    Py_ssize_t block1      # factors per logarithm of the binary likelihood's term
    const double *W1T      # H1 x D: the columns of W1
    const double *n1       # H1: ||W1_j||^2
    const double *b1       # D
    const double *s        # D (Gaussian)
    const double *c1       # H1: Q's biases
    const double *W2       # H1 x H2
    const double *b2       # H1
    const double *c2       # H2
    const double *L        # H1 x H1 or NULL
    const double *E2on     # H1 x H2: expm1(W2)
    const double *E2off    # H1 x H2: expm1(-W2)
    Py_ssize_t block       # factors per logarithm in _g_delta
    double lnorm           # sum_i ln s_i + D ln sqrt(2 pi)


cdef struct gdbn_state:
    uint8_t *h
    double *r              # Gaussian: the residual a - W1 h1; binary: u = b1 + W1 h1
    double *x2
    double *l
    double *p2             # sigma(x2)
    double *p1             # sigma(u) (binary; else NULL)
    const double *vw       # (W1^T v)_j of the test vector (binary; else NULL)
    Py_ssize_t since


cdef inline size_t _g_state_doubles(const gdbn_model *M) noexcept nogil:
    return <size_t> (M.D + 2 * M.H2 + M.H1 + (M.D if M.binary else 0))


cdef inline gdbn_state _g_view(const gdbn_model *M, double *f, uint8_t *h,
                               const double *vw) noexcept nogil:
    cdef gdbn_state s
    s.h = h
    s.r = f
    s.x2 = f + M.D
    s.l = f + M.D + M.H2
    s.p2 = f + M.D + M.H2 + M.H1
    s.p1 = f + M.D + 2 * M.H2 + M.H1 if M.binary else NULL
    s.vw = vw
    s.since = 0
    return s


cdef inline void _g_copy(const gdbn_model *M, gdbn_state *dst,
                         const gdbn_state *src) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(M.H1):
        dst.h[i] = src.h[i]
    for i in range(M.D):
        dst.r[i] = src.r[i]
    for i in range(M.H2):
        dst.x2[i] = src.x2[i]
        dst.p2[i] = src.p2[i]
    for i in range(M.H1):
        dst.l[i] = src.l[i]
    if M.binary:
        for i in range(M.D):
            dst.p1[i] = src.p1[i]
    dst.since = src.since


cdef inline void _g_refresh(const gdbn_model *M, gdbn_state *s, const double *a) noexcept nogil:
    """r = a - W1 h1 (binary: u = b1 + W1 h1 and p1 = sigma(u)), x2 = c2 + W2^T h1,
    l = L h1, exactly (units in ascending order)."""
    cdef Py_ssize_t i, j
    cdef const double *w
    cdef double sg1 = 1.0 if M.binary else -1.0
    for i in range(M.D):
        s.r[i] = M.b1[i] if M.binary else a[i]
    for i in range(M.H2):
        s.x2[i] = M.c2[i]
    for i in range(M.H1):
        s.l[i] = 0.0
    for j in range(M.H1):
        if not s.h[j]:
            continue
        w = M.W1T + j * M.D
        for i in range(M.D):
            s.r[i] += sg1 * w[i]
        w = M.W2 + j * M.H2
        for i in range(M.H2):
            s.x2[i] += w[i]
        if M.L != NULL:
            w = M.L + j * M.H1
            for i in range(M.H1):
                s.l[i] += w[i]
    for i in range(M.H2):
        s.p2[i] = cyrbm_sigmoid(s.x2[i])
    if M.binary:
        for i in range(M.D):
            s.p1[i] = cyrbm_sigmoid(s.r[i])
    s.since = 0


cdef inline void _g_flip(const gdbn_model *M, gdbn_state *s, Py_ssize_t j, int on) noexcept nogil:
    cdef Py_ssize_t i
    cdef double sg = 1.0 if on else -1.0
    cdef double sr = sg if M.binary else -sg
    cdef const double *w = M.W1T + j * M.D
    s.h[j] = <uint8_t> on
    for i in range(M.D):
        s.r[i] += sr * w[i]
    if M.binary:
        for i in range(M.D):
            s.p1[i] = cyrbm_sigmoid(s.r[i])
    w = M.W2 + j * M.H2
    for i in range(M.H2):
        s.x2[i] += sg * w[i]
        s.p2[i] = cyrbm_sigmoid(s.x2[i])
    if M.L != NULL:
        w = M.L + j * M.H1
        for i in range(M.H1):
            s.l[i] += sg * w[i]


cdef inline double _g_log_blocks(const double *p, const double *e, Py_ssize_t n,
                                 Py_ssize_t block) noexcept nogil:
    """sum_k ln(1 + p_k e_k) as the logarithms of products over blocks of ``block``."""
    cdef Py_ssize_t i, k0 = 0, k1
    cdef double t = 0.0, prod
    while k0 < n:
        k1 = k0 + block
        if k1 > n:
            k1 = n
        prod = 1.0
        for i in range(k0, k1):
            prod *= 1.0 + p[i] * e[i]
        t += log(prod)
        k0 = k1
    return t


cdef inline double _g_delta(const gdbn_model *M, const gdbn_state *s, Py_ssize_t j) noexcept nogil:
    """ln p(v, h1 with h_j = 1) - ln p(v, h1 with h_j = 0), h2 summed out: the Gaussian
    likelihood's W1_j.r -+ ||W1_j||^2 / 2 (r with unit j as it is; binary: (W1^T v)_j and
    the blocks of 1 + p1_i expm1(+-w_ij), see the comment above), b2_j + (L h1)_j, and
    sum_k softplus(x2_k with j on) - softplus(x2_k with j off), as the logarithms of
    products of 1 + p2_k expm1(+-w_jk) over blocks of k (see the comment above)."""
    cdef Py_ssize_t i
    cdef const double *w = M.W1T + j * M.D
    cdef double d = 0.0, t
    cdef bint on = s.h[j] != 0
    if M.binary:
        t = _g_log_blocks(s.p1, (M.E1off if on else M.E1on) + j * M.D, M.D, M.block1)
        d = s.vw[j] + (t if on else -t)
    else:
        for i in range(M.D):
            d += w[i] * s.r[i]
        d += 0.5 * M.n1[j] if on else -0.5 * M.n1[j]
    t = _g_log_blocks(s.p2, (M.E2off if on else M.E2on) + j * M.H2, M.H2, M.block)
    d += (-t if on else t) + M.b2[j]
    if M.L != NULL:
        d += s.l[j]
    return d


cdef inline double _g_log_lik(const gdbn_model *M, const gdbn_state *s,
                              const double *a) noexcept nogil:
    """ln p(v | h1) = -||r||^2 / 2 - sum ln s - D ln sqrt(2 pi); binary: sum_i v_i u_i -
    softplus(u_i) (a = v)."""
    cdef Py_ssize_t i
    cdef double q = 0.0
    if M.binary:
        for i in range(M.D):
            q += a[i] * s.r[i] - cyrbm_softplus(s.r[i])
        return q
    for i in range(M.D):
        q += s.r[i] * s.r[i]
    return -0.5 * q - M.lnorm


cdef inline double _g_log_top(const gdbn_model *M, const gdbn_state *s) noexcept nogil:
    """ln P*(h1) = b2.h1 + h1^T L h1 / 2 + sum_k softplus(x2_k)."""
    cdef Py_ssize_t i
    cdef double b = 0.0, c = 0.0
    for i in range(M.H1):
        if s.h[i]:
            b += M.b2[i] + (0.5 * s.l[i] if M.L != NULL else 0.0)
    for i in range(M.H2):
        c += cyrbm_softplus(s.x2[i])
    return b + c


cdef inline void _g_inputs(const gdbn_model *M, const double *v, double *a,
                           double *x, double *vw) noexcept nogil:
    """a = (v - b1) / s and Q's log-odds x = c1 + W1^T (v / s) (RBM1's p(h1 | v), i
    ascending); binary: a = v, vw = W1^T v and x = c1 + vw."""
    cdef Py_ssize_t i, j
    cdef const double *w
    cdef double acc
    if M.binary:
        for i in range(M.D):
            a[i] = v[i]
        for j in range(M.H1):
            w = M.W1T + j * M.D
            acc = 0.0
            for i in range(M.D):
                acc += w[i] * v[i]
            vw[j] = acc
            x[j] = acc + M.c1[j]
        return
    for i in range(M.D):
        a[i] = (v[i] - M.b1[i]) / M.s[i]
    for j in range(M.H1):
        w = M.W1T + j * M.D
        acc = 0.0
        for i in range(M.D):
            acc += w[i] * (v[i] / M.s[i])
        x[j] = acc + M.c1[j]


cdef inline double _g_draw_q(const gdbn_model *M, const double *x, uint8_t *h,
                             cyrbm_rng *rng) noexcept nogil:
    """h ~ Q (unit j on when a uniform < sigma(x_j), j ascending); returns ln Q(h | v)."""
    cdef Py_ssize_t j
    cdef double lq = 0.0
    for j in range(M.H1):
        h[j] = 1 if cyrbm_rng_uniform(rng) < cyrbm_sigmoid(x[j]) else 0
        lq += (x[j] if h[j] else 0.0) - cyrbm_softplus(x[j])
    return lq


cdef inline void _g_sweep(const gdbn_model *M, gdbn_state *s, const double *x, double beta,
                          bint backward, cyrbm_rng *rng, double *lp, double *lq) noexcept nogil:
    """One sweep of single-site Gibbs updates of h1 (ascending: T; descending: T-tilde) at
    inverse temperature beta: unit j on with probability sigma(beta d_j + (1 - beta) x_j),
    leaving Q^(1 - beta) p(v, h1)^beta invariant; one uniform per unit.  lp and lq
    follow the flips when not NULL."""
    cdef Py_ssize_t k, j
    cdef double d
    cdef int on
    for k in range(M.H1):
        j = M.H1 - 1 - k if backward else k
        d = _g_delta(M, s, j)
        on = 1 if cyrbm_rng_uniform(rng) < cyrbm_sigmoid(beta * d + (1.0 - beta) * x[j]) else 0
        if on != s.h[j]:
            _g_flip(M, s, j, on)
            if lp != NULL:
                lp[0] += d if on else -d
            if lq != NULL:
                lq[0] += x[j] if on else -x[j]
    s.since += 1


cdef inline double _g_log_t(const gdbn_model *M, const gdbn_state *s, gdbn_state *w,
                            const uint8_t *hstar) noexcept nogil:
    """ln T(h* <- h) of the forward sweep (MS09 Eq. 11): walking a copy from h to h*."""
    cdef Py_ssize_t j
    cdef double d, lt = 0.0
    _g_copy(M, w, s)
    for j in range(M.H1):
        d = _g_delta(M, w, j)
        lt -= cyrbm_softplus(-d if hstar[j] else d)
        if w.h[j] != hstar[j]:
            _g_flip(M, w, j, hstar[j])
    return lt


cdef inline void _g_chib_item(const gdbn_model *M, const double *v, Py_ssize_t S,
                              bint tilde_backward, Py_ssize_t refresh, cyrbm_rng *rng,
                              double *work, uint8_t *hwork, double *lpstar,
                              double *logphat) noexcept nogil:
    """The estimator of MS09 (Figure 1) for one test vector, as cyrbm_chib_items: h* by a
    draw of Q and hill-climbing; s ~ U{1..S}; h(s) ~ T-tilde(. <- h*); T forward to S,
    T-tilde backward to 1; ln P*(v, h*) and ln((1/S) sum_s T(h* <- h(s))) out.
    Random numbers: H1 for Q, one for s, H1 per sweep."""
    cdef size_t n = _g_state_doubles(M)
    cdef double *a = work
    cdef double *x = work + M.D
    cdef double *vw = x + M.H1
    cdef double *logt = vw + M.H1
    cdef double *f = logt + S + 1
    cdef uint8_t *hstar = hwork
    cdef gdbn_state cur = _g_view(M, f, hwork + M.H1, vw)
    cdef gdbn_state sav = _g_view(M, f + n, hwork + 2 * M.H1, vw)
    cdef gdbn_state wk = _g_view(M, f + 2 * n, hwork + 3 * M.H1, vw)
    cdef Py_ssize_t j, t, s, p
    cdef int want, changed
    cdef double d, mx, sm
    _g_inputs(M, v, a, x, vw)
    _g_draw_q(M, x, cur.h, rng)
    _g_refresh(M, &cur, a)
    for p in range(10000):                  # climb to a local mode (strict ascent)
        changed = 0
        for j in range(M.H1):
            d = _g_delta(M, &cur, j)
            want = (d >= 0.0) if cur.h[j] else (d > 0.0)
            if want != cur.h[j]:
                _g_flip(M, &cur, j, want)
                changed = 1
        if not changed:
            break
        if refresh > 0 and (p + 1) % refresh == 0:
            _g_refresh(M, &cur, a)
    _g_refresh(M, &cur, a)
    for j in range(M.H1):
        hstar[j] = cur.h[j]
    lpstar[0] = _g_log_lik(M, &cur, a) + _g_log_top(M, &cur)
    s = 1 + <Py_ssize_t> (cyrbm_rng_uniform(rng) * <double> S)
    if s > S:
        s = S
    _g_sweep(M, &cur, x, 1.0, tilde_backward, rng, NULL, NULL)
    logt[s] = _g_log_t(M, &cur, &wk, hstar)
    _g_copy(M, &sav, &cur)
    t = s - 1
    while t >= 1:
        if refresh > 0 and cur.since >= refresh:
            _g_refresh(M, &cur, a)
        _g_sweep(M, &cur, x, 1.0, tilde_backward, rng, NULL, NULL)
        logt[t] = _g_log_t(M, &cur, &wk, hstar)
        t -= 1
    _g_copy(M, &cur, &sav)
    for t in range(s + 1, S + 1):
        if refresh > 0 and cur.since >= refresh:
            _g_refresh(M, &cur, a)
        _g_sweep(M, &cur, x, 1.0, False, rng, NULL, NULL)
        logt[t] = _g_log_t(M, &cur, &wk, hstar)
    mx = -INFINITY
    for t in range(1, S + 1):
        if logt[t] > mx:
            mx = logt[t]
    sm = 0.0
    for t in range(1, S + 1):
        sm += exp(logt[t] - mx)
    logphat[0] = mx + log(sm / <double> S)


cdef inline double _g_ais_item(const gdbn_model *M, const double *v, const double *betas,
                               Py_ssize_t nb, bint base_q, Py_ssize_t refresh, cyrbm_rng *rng,
                               double *work, uint8_t *hwork) noexcept nogil:
    """Per-vector AIS over h1 (as cyrbm_chib_ais): from Q(h1 | v) (or the uniform
    distribution) through Q^(1 - beta_k) p(v, h1)^beta_k, one forward sweep per
    intermediate beta; returns ln w = sum_k (beta_k - beta_{k-1}) (ln p(v, h_{k-1})
    - ln Q(h_{k-1} | v)), with ln p(v, h1) = ln p(v | h1) + ln P*(h1)."""
    cdef double *a = work
    cdef double *x = work + M.D
    cdef double *vw = x + M.H1
    cdef gdbn_state cur = _g_view(M, vw + M.H1, hwork, vw)
    cdef Py_ssize_t j, k
    cdef double lp, lq, lw = 0.0
    _g_inputs(M, v, a, x, vw)
    if not base_q:
        for j in range(M.H1):
            x[j] = 0.0
    lq = _g_draw_q(M, x, cur.h, rng)
    _g_refresh(M, &cur, a)
    lp = _g_log_lik(M, &cur, a) + _g_log_top(M, &cur)
    for k in range(1, nb):
        lw += (betas[k] - betas[k - 1]) * (lp - lq)
        if k == nb - 1:
            break
        if refresh > 0 and cur.since >= refresh:
            _g_refresh(M, &cur, a)
            lp = _g_log_lik(M, &cur, a) + _g_log_top(M, &cur)
            lq = 0.0
            for j in range(M.H1):
                lq += (x[j] if cur.h[j] else 0.0) - cyrbm_softplus(x[j])
        _g_sweep(M, &cur, x, betas[k], False, rng, &lp, &lq)
    return lw


cdef inline void _g_bound_item(const gdbn_model *M, const double *v, Py_ssize_t samples,
                               cyrbm_rng *rng, double *work, uint8_t *hwork, double *lpv,
                               double *ltop, double *lq) noexcept nogil:
    """The variational bound's samples (SM08 Eq. 23) of one vector: h^(m) ~ Q(h1 | v) (H1
    uniforms each, in order), and for each ln p(v | h^(m)), ln P*(h^(m)), ln Q(h^(m) | v)."""
    cdef double *a = work
    cdef double *x = work + M.D
    cdef double *vw = x + M.H1
    cdef gdbn_state cur = _g_view(M, vw + M.H1, hwork, vw)
    cdef Py_ssize_t m
    _g_inputs(M, v, a, x, vw)
    for m in range(samples):
        lq[m] = _g_draw_q(M, x, cur.h, rng)
        _g_refresh(M, &cur, a)
        lpv[m] = _g_log_lik(M, &cur, a)
        ltop[m] = _g_log_top(M, &cur)


cdef struct _g_job:
    int kind              # 0: Chib-style estimator, 1: per-vector AIS, 2: the bound's samples
    Py_ssize_t S
    bint tilde_backward
    const double *betas
    Py_ssize_t n_betas
    bint base_q
    Py_ssize_t samples
    Py_ssize_t refresh
    double *out1
    double *out2
    double *out3


cdef int _g_run(const gdbn_model *M, const _g_job *J, const double *v, const int32_t *vec,
                Py_ssize_t n_items, cyrbm_rng *streams, int n_threads) noexcept nogil:
    """The one driver of the scalar model's items: OpenMP over items, item t on the
    test vector vec[t] (a row of v) with stream streams[t] and its own scratch (malloc'd
    per item), so results do not depend on the number of threads."""
    cdef int nt = cap_threads(n_threads, n_items)
    cdef Py_ssize_t t, nd, nh
    cdef double *w
    cdef uint8_t *hw
    cdef int failed = 0
    if n_items <= 0:
        return 0
    nd = M.D + 2 * M.H1 + (J.S + 1 if J.kind == 0 else 0) + 3 * <Py_ssize_t> _g_state_doubles(M)
    nh = 4 * M.H1
    for t in prange(n_items, num_threads=nt, schedule='static', chunksize=1):
        w = <double *> malloc(nd * sizeof(double))
        hw = <uint8_t *> malloc(nh)
        if w == NULL or hw == NULL:
            failed += 1
        elif J.kind == 0:
            _g_chib_item(M, v + <Py_ssize_t> vec[t] * M.D, J.S, J.tilde_backward, J.refresh,
                         streams + t, w, hw, J.out1 + t, J.out2 + t)
        elif J.kind == 1:
            J.out1[t] = _g_ais_item(M, v + <Py_ssize_t> vec[t] * M.D, J.betas, J.n_betas,
                                    J.base_q, J.refresh, streams + t, w, hw)
        else:
            _g_bound_item(M, v + <Py_ssize_t> vec[t] * M.D, J.samples, streams + t, w, hw,
                          J.out1 + t * J.samples, J.out2 + t * J.samples,
                          J.out3 + t * J.samples)
        free(w)
        free(hw)
    return -1 if failed else 0


cdef class ScalarChibModel:
    """A two-layer DBN laid out for ``_g_run``, in float64: a Gaussian bottom layer (MS09
    Sec. 5.2), or a binary one under a top with lateral weights.

    Parameters: RBM1's W1 (D x H1), b1, c1 and sigma (D; None for binary visible units),
    the top layer's W2 (H1 x H2), b2 (H1), c2 (H2) and its lateral weights L (H1 x H1,
    symmetric, zero diagonal) or None.  The methods ``estimate`` and ``ais`` take the
    arguments of :class:`ChibModel`'s (v: rows as float64), so cyrbm.estimators.chib runs either model.
    """
    cdef gdbn_model m
    cdef object _keep
    cdef readonly Py_ssize_t D, H1, H2
    cdef readonly bint float32

    @property
    def delta_block(self):
        """Factors of the top's flip term per logarithm (DELTA_BLOCK, or 1 when some
        |W2| exceeds DELTA_MAX_W)."""
        return self.m.block

    @property
    def binary(self):
        """Whether RBM1's visible units are binary (else Gaussian)."""
        return bool(self.m.binary)

    def __init__(self, W1, b1, c1, sigma, W2, b2, c2, L=None):
        f = lambda x: np.ascontiguousarray(x, dtype=np.float64)
        binary = sigma is None
        if binary:
            sigma = np.ones(np.shape(b1))
        W1, b1, c1, sigma, W2, b2, c2 = (f(x) for x in (W1, b1, c1, sigma, W2, b2, c2))
        D, H1 = W1.shape
        H2 = W2.shape[1]
        if (W2.shape[0] != H1 or b1.shape != (D,) or sigma.shape != (D,) or c1.shape != (H1,)
                or b2.shape != (H1,) or c2.shape != (H2,) or min(D, H1, H2) < 1
                or (L is not None and np.shape(L) != (H1, H1))):
            raise ValueError("the two layers' parameters have inconsistent shapes.")
        W1T = f(W1.T)
        n1 = np.sum(W1T * W1T, axis=1)
        L = None if L is None else f(L)
        E2on, E2off = np.expm1(W2), np.expm1(-W2)
        # the binary likelihood's factors (tiny placeholders for a Gaussian bottom)
        E1on, E1off = (np.expm1(W1T), np.expm1(-W1T)) if binary else (np.zeros((1, 1)),) * 2
        self._keep = (W1T, n1, b1, sigma, c1, W2, b2, c2, L, E2on, E2off, E1on, E1off)
        self.D, self.H1, self.H2, self.float32 = D, H1, H2, False
        cdef double[::1] pn1 = n1, pb1 = b1, ps = sigma, pc1 = c1, pb2 = b2, pc2 = c2
        cdef double[:, ::1] pW1T = W1T, pW2 = W2, pE2on = E2on, pE2off = E2off
        cdef double[:, ::1] pE1on = E1on, pE1off = E1off
        cdef double[:, ::1] pL
        self.m.binary = binary
        self.m.E1on = &pE1on[0, 0]
        self.m.E1off = &pE1off[0, 0]
        self.m.block1 = DELTA_BLOCK if float(np.max(np.abs(W1))) <= DELTA_MAX_W else 1
        self.m.D = D
        self.m.H1 = H1
        self.m.H2 = H2
        self.m.W1T = &pW1T[0, 0]
        self.m.n1 = &pn1[0]
        self.m.b1 = &pb1[0]
        self.m.s = &ps[0]
        self.m.c1 = &pc1[0]
        self.m.W2 = &pW2[0, 0]
        self.m.b2 = &pb2[0]
        self.m.c2 = &pc2[0]
        self.m.E2on = &pE2on[0, 0]
        self.m.E2off = &pE2off[0, 0]
        self.m.block = DELTA_BLOCK if float(np.max(np.abs(W2))) <= DELTA_MAX_W else 1
        self.m.L = NULL
        if L is not None:
            pL = L
            self.m.L = &pL[0, 0]
        self.m.lnorm = 0.0 if binary else (float(np.sum(np.log(sigma)))
                                           + D * 0.5 * float(np.log(2.0 * np.pi)))

    def _items(self, v, vec, streams):
        return _checked_items(v, np.float64, self.D, vec, streams)

    cdef _go(self, _g_job *J, v, vec, uint64_t[:, ::1] streams, int n_threads):
        cdef const double[:, ::1] vv = v
        cdef const int32_t[::1] ix = vec
        cdef Py_ssize_t n = ix.shape[0]
        cdef int status = 0
        if n == 0:
            return
        cyrbm_stop_watch_begin()
        with nogil:
            status = _g_run(&self.m, J, &vv[0, 0], &ix[0], n, <cyrbm_rng *> &streams[0, 0],
                            n_threads)
        if cyrbm_stop_watch_end():
            PyErr_CheckSignals()
            raise KeyboardInterrupt
        if status != 0:
            raise MemoryError("no memory for the chains' scratch.")

    def estimate(self, v, vec, Py_ssize_t steps, uint64_t[:, ::1] streams, int n_threads=1,
                 Py_ssize_t refresh_every=10, bint tilde_backward=True):
        """The Chib-style estimator for items vec (rows of v), streams (INOUT, one per
        item): (ln p(v, h*) = ln p(v | h*) + ln P*(h*), ln p-hat(h* | v)) per item."""
        if steps < 1:
            raise ValueError("steps must be at least 1.")
        v, vec = self._items(v, vec, np.asarray(streams))
        lp, ph = np.empty(vec.shape[0]), np.empty(vec.shape[0])
        cdef double[::1] a = lp, b = ph
        cdef _g_job J
        J.kind = 0
        J.S = steps
        J.tilde_backward = tilde_backward
        J.refresh = refresh_every
        if vec.shape[0]:
            J.out1 = &a[0]
            J.out2 = &b[0]
        self._go(&J, v, vec, streams, n_threads)
        return lp, ph

    def ais(self, v, vec, const double[::1] betas, uint64_t[:, ::1] streams, int n_threads=1,
            Py_ssize_t refresh_every=10, bint base_q=True):
        """Per-vector AIS over h1 from Q(h1 | v) (base_q) or the uniform distribution: the
        log weight of each item."""
        if betas.shape[0] < 2:
            raise ValueError("an annealing schedule needs at least two betas.")
        v, vec = self._items(v, vec, np.asarray(streams))
        lw = np.empty(vec.shape[0])
        cdef double[::1] a = lw
        cdef _g_job J
        J.kind = 1
        J.S = 0
        J.betas = &betas[0]
        J.n_betas = betas.shape[0]
        J.base_q = base_q
        J.refresh = refresh_every
        if vec.shape[0]:
            J.out1 = &a[0]
        self._go(&J, v, vec, streams, n_threads)
        return lw

    def bound_samples(self, v, Py_ssize_t samples, uint64_t[:, ::1] streams, int n_threads=1):
        """For each row of v (stream streams[i]) ``samples`` draws h ~ Q(h1 | v): (ln p(v | h),
        ln P*(h), ln Q(h | v)), each (n, samples)."""
        if samples < 1:
            raise ValueError("samples must be at least 1.")
        vec = np.arange(np.shape(v)[0], dtype=np.int32)
        v, vec = self._items(v, vec, np.asarray(streams))
        out = [np.empty((vec.shape[0], samples)) for _ in range(3)]
        cdef double[:, ::1] o1 = out[0], o2 = out[1], o3 = out[2]
        cdef _g_job J
        J.kind = 2
        J.samples = samples
        J.S = 0
        if vec.shape[0]:
            J.out1 = &o1[0, 0]
            J.out2 = &o2[0, 0]
            J.out3 = &o3[0, 0]
        self._go(&J, v, vec, streams, n_threads)
        return tuple(out)


# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._dispatch cimport kernel_table
cyrbm_kt = kernel_table()
