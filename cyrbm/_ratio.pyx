# cython: language_level=3
"""Ratio AIS between two models of one unit type with different hidden layers (Salakhutdinov
& Murray 2008, "SM08", Sec. 3.2, Eq. 13-17), for Gaussian visible units and for
semi-restricted (lateral) visible units, in compiled code.

The intermediate distributions keep both hidden layers explicit (SM08 Eq. 13)::

    p_k(v, hA, hB) ~ exp(-(1 - beta_k) E_A(v, hA) - beta_k E_B(v, hB)),

so hA | v and hB | v are Bernoulli at the inputs of A and B scaled by 1 - beta_k and beta_k
(Eq. 15-16), and v | hA, hB is the visible layer of the mixed energy (Eq. 17):

* Gaussian units (E(v, h) = sum_i (v_i - b_i)^2 / (2 s_i^2) - c.h - sum_ij (v_i / s_i) W_ij h_j):
  v_i | hA, hB ~ N(eta_i / lambda_i, 1 / lambda_i) with the precision
  lambda_i = (1 - beta) / sA_i^2 + beta / sB_i^2 and
  eta_i = (1 - beta) (bA_i / sA_i^2 + (WA hA)_i / sA_i) + beta (bB_i / sB_i^2 + (WB hB)_i / sB_i);
* lateral units (E(v, h) = -b.v - c.h - v^T W h - v^T L v / 2): v_i | hA, hB, v_-i is
  Bernoulli of log-odds (1 - beta) (bA + WA hA + LA v)_i + beta (bB + WB hB + LB v)_i, one
  unit at a time in order.

Summing both hidden layers out, ln p*_k(v) = (1 - beta_k) lnq_A(v) + beta_k lnq_B(v)
+ sum_j softplus((1 - beta_k) xA_j) + sum_j softplus(beta_k xB_j), with lnq the visible
layer's own term (-sum (v - b)^2 / (2 s^2), or b.v + v^T L v / 2) and x the hidden inputs
(c + W^T (v / s), or c + W^T v).  A run's log weight adds ln p*_k(v_k) - ln p*_{k-1}(v_k) at
step k, then takes one sweep at beta_k (hA, hB, then v).

Run r draws only from its own chain stream streams[r] (cyrbm's one generator, rng.h: u53
uniforms, a Bernoulli draw U < p, normals by Box-Muller's cosine and sine of two uniforms
as gauss_t.h, an odd last unit the cosine), its numbers in a fixed order (hA, hB, then v),
every sum in a fixed order: the result does not depend on the number of threads.  Runs are
shared among OpenMP threads (prange, a static schedule).  All arithmetic in float64.
"""
import numpy as np

from cython.parallel cimport prange
from libc.stdint cimport uint8_t, uint64_t
from libc.math cimport sqrt

from cyrbm._omp cimport cap_threads, omp_get_thread_num
from cyrbm._random cimport cyrbm_rng, check_streams
from cyrbm._ckernels cimport cyrbm_rng_uniform, cyrbm_softplus, cyrbm_sigmoid

cdef extern from "kernels.h" nogil:
    double cyrbm_log_pos(double x)
    void cyrbm_sincos2pi(double u, double *cs, double *sn)


cdef inline void draw_hidden(const double *x, Py_ssize_t M, double scale, cyrbm_rng *rng,
                             uint8_t *h) noexcept nogil:
    """h_j = 1 with probability sigma(scale x_j), in order j = 0 .. M-1."""
    cdef Py_ssize_t j
    for j in range(M):
        h[j] = cyrbm_rng_uniform(rng) < cyrbm_sigmoid(scale * x[j])


cdef inline double softplus_sum(const double *x, Py_ssize_t M, double scale) noexcept nogil:
    cdef Py_ssize_t j
    cdef double s = 0.0
    for j in range(M):
        s = s + cyrbm_softplus(scale * x[j])
    return s


cdef inline double log_weight(double qa, double qb, const double *xa, Py_ssize_t MA,
                              const double *xb, Py_ssize_t MB, double beta, double prev,
                              int variant) noexcept nogil:
    """ln p*_k(v) - ln p*_{k-1}(v) from the visible terms qa, qb and hidden inputs xa, xb
    (``variant`` 2, a power check only: A's hidden term left out)."""
    cdef double lp1 = (1.0 - beta) * qa + beta * qb + softplus_sum(xb, MB, beta)
    cdef double lp0 = (1.0 - prev) * qa + prev * qb + softplus_sum(xb, MB, prev)
    if variant != 2:
        lp1 = lp1 + softplus_sum(xa, MA, 1.0 - beta)
        lp0 = lp0 + softplus_sum(xa, MA, 1.0 - prev)
    return lp1 - lp0


cdef struct Scratch:
    # a thread's work: hidden inputs xa (MA), xb (MB), top-down inputs ua, ub (D each),
    # hidden states ha (MA), hb (MB)
    double *xa
    double *xb
    double *ua
    double *ub
    uint8_t *ha
    uint8_t *hb


cdef inline Scratch carve(double *work, uint8_t *states, Py_ssize_t D, Py_ssize_t MA,
                          Py_ssize_t MB) noexcept nogil:
    """A thread's Scratch from its row of doubles (2 D + MA + MB) and of states."""
    cdef Scratch t
    t.xa = work
    t.xb = work + MA
    t.ua = work + MA + MB
    t.ub = work + MA + MB + D
    t.ha = states
    t.hb = states + MA
    return t


cdef inline void draw_hidden_layers(const double *WA, const double *WB, Py_ssize_t D,
                                    Py_ssize_t MA, Py_ssize_t MB, double beta,
                                    cyrbm_rng *rng, Scratch *t) noexcept nogil:
    """hA at 1 - beta, then hB at beta (Eq. 15-16), and their top-down inputs WA hA, WB hB."""
    draw_hidden(t.xa, MA, 1.0 - beta, rng, t.ha)
    draw_hidden(t.xb, MB, beta, rng, t.hb)
    w_times_h(WA, D, MA, t.ha, t.ua)
    w_times_h(WB, D, MB, t.hb, t.ub)


cdef inline void w_times_h(const double *W, Py_ssize_t D, Py_ssize_t M, const uint8_t *h,
                           double *out) noexcept nogil:
    """out_i = (W h)_i, the sum over j in order."""
    cdef Py_ssize_t i, j
    cdef double s
    for i in range(D):
        s = 0.0
        for j in range(M):
            if h[j]:
                s = s + W[i * M + j]
        out[i] = s


# ------------------------------------------------------------------ Gaussian units
cdef inline double gauss_inputs(const double *W, const double *b, const double *c,
                              const double *s, Py_ssize_t D, Py_ssize_t M, const double *v,
                              double *x) noexcept nogil:
    """x = c + W^T (v / s); returns -sum_i (v_i - b_i)^2 / (2 s_i^2)."""
    cdef Py_ssize_t i, j
    cdef double z, t = 0.0
    for j in range(M):
        x[j] = c[j]
    for i in range(D):
        z = v[i] / s[i]
        for j in range(M):
            x[j] = x[j] + W[i * M + j] * z
        z = (v[i] - b[i]) / s[i]
        t = t - 0.5 * z * z
    return t


cdef inline void gauss_draw(double *v, Py_ssize_t i, const double *bA, const double *sA,
                            const double *bB, const double *sB, const double *ua, const double *ub,
                            double beta, double z, int variant) noexcept nogil:
    """v_i = eta_i / lambda_i + z / sqrt(lambda_i) (the mixed energy's Gaussian)."""
    cdef double pa = (1.0 - beta) / (sA[i] * sA[i]), pb = beta / (sB[i] * sB[i])
    cdef double eta = ((1.0 - beta) * (bA[i] / (sA[i] * sA[i]) + ua[i] / sA[i])
                       + beta * (bB[i] / (sB[i] * sB[i]) + ub[i] / sB[i]))
    cdef double lam = pa + pb
    if variant == 1:
        lam = 1.0 / (sB[i] * sB[i])
    v[i] = eta / lam + z / sqrt(lam)


def gauss_ratio_run(const double[:, ::1] WA, const double[::1] bA, const double[::1] cA,
                    const double[::1] sA, const double[:, ::1] WB, const double[::1] bB,
                    const double[::1] cB, const double[::1] sB, double[:, ::1] v,
                    const double[::1] betas, Py_ssize_t k0, Py_ssize_t k1, bint weights,
                    uint64_t[:, ::1] streams, double[::1] logw, int n_threads=1,
                    int variant=0):
    """Steps k0 <= k < k1 (k0 >= 1) of R ratio-AIS runs from the Gaussian RBM A
    (WA, bA, cA, sA) to B (WB, bB, cB, sB): at step k, with ``weights``, ln w (``logw``,
    INOUT) gains ln p*_k(v) - ln p*_{k-1}(v), then one sweep at beta_k draws hA, hB and v
    (``v``, R x D, INOUT).  Run r draws from streams[r] (INOUT, (R, 4) uint64) alone.

    ``variant`` is for the tests' power checks only: 1 draws v with B's precision
    1 / sB^2 alone (the wrong mixed precision), 2 leaves A's hidden term out of ln p*_k."""
    cdef Py_ssize_t R = v.shape[0], D = WA.shape[0], MA = WA.shape[1], MB = WB.shape[1]
    if (WB.shape[0] != D or v.shape[1] != D or bA.shape[0] != D or bB.shape[0] != D
            or sA.shape[0] != D or sB.shape[0] != D or cA.shape[0] != MA
            or cB.shape[0] != MB or logw.shape[0] != R):
        raise ValueError("gauss_ratio_run: the shapes of the models, runs and weights do not match.")
    check_streams(streams, R, "gauss_ratio_run: streams")
    if not (1 <= k0 <= k1 <= betas.shape[0]) and k0 != k1:
        raise ValueError("gauss_ratio_run: the steps are not within the schedule (from 1).")
    if R == 0 or k0 == k1 or D == 0:
        return
    cdef int nt = cap_threads(n_threads, R)
    cdef Py_ssize_t r, k, i, n_buf = 2 * (MA + MB) + 2 * D + 2
    cdef Scratch t
    cdef double qa = 0.0, qb = 0.0, beta, prev, z1, z2, rad, u1, u2
    cdef double *vr
    cdef cyrbm_rng *rng
    cdef double[:, ::1] scratch = np.zeros((nt, n_buf))
    cdef uint8_t[:, ::1] hidden = np.zeros((nt, MA + MB + 1), dtype=np.uint8)
    with nogil:
        for r in prange(R, schedule="static", num_threads=nt):
            t = carve(&scratch[omp_get_thread_num(), 0],
                      &hidden[omp_get_thread_num(), 0], D, MA, MB)
            vr = &v[r, 0]
            rng = <cyrbm_rng *> &streams[r, 0]
            for k in range(k0, k1):
                beta = betas[k]
                prev = betas[k - 1]
                qa = gauss_inputs(&WA[0, 0] if MA > 0 else NULL, &bA[0],
                                  &cA[0] if MA > 0 else NULL, &sA[0], D, MA, vr, t.xa)
                qb = gauss_inputs(&WB[0, 0] if MB > 0 else NULL, &bB[0],
                                  &cB[0] if MB > 0 else NULL, &sB[0], D, MB, vr, t.xb)
                if weights:
                    logw[r] += log_weight(qa, qb, t.xa, MA, t.xb, MB, beta, prev, variant)
                draw_hidden_layers(&WA[0, 0] if MA > 0 else NULL, &WB[0, 0] if MB > 0 else NULL,
                                   D, MA, MB, beta, rng, &t)
                i = 0
                while i < D:
                    u1 = cyrbm_rng_uniform(rng)
                    u2 = cyrbm_rng_uniform(rng)
                    rad = sqrt(-2.0 * cyrbm_log_pos(1.0 - u1))
                    cyrbm_sincos2pi(u2, &z1, &z2)
                    z1 = rad * z1
                    z2 = rad * z2
                    gauss_draw(vr, i, &bA[0], &sA[0], &bB[0], &sB[0], t.ua, t.ub, beta, z1,
                               variant)
                    if i + 1 < D:
                        gauss_draw(vr, i + 1, &bA[0], &sA[0], &bB[0], &sB[0], t.ua, t.ub,
                                   beta, z2, variant)
                    i = i + 2


# ------------------------------------------------------------------- lateral units
cdef inline double srbm_inputs(const double *W, const double *b, const double *c,
                             const double *L, Py_ssize_t D, Py_ssize_t M, const uint8_t *v,
                             double *x) noexcept nogil:
    """x = c + W^T v; returns b.v + v^T L v / 2."""
    cdef Py_ssize_t i, j
    cdef double t = 0.0, s
    for j in range(M):
        x[j] = c[j]
    for i in range(D):
        if v[i]:
            for j in range(M):
                x[j] = x[j] + W[i * M + j]
            s = 0.0
            for j in range(D):
                if v[j]:
                    s = s + L[i * D + j]
            t = t + b[i] + 0.5 * s
    return t


def srbm_ratio_run(const double[:, ::1] WA, const double[::1] bA, const double[::1] cA,
                   const double[:, ::1] LA, const double[:, ::1] WB, const double[::1] bB,
                   const double[::1] cB, const double[:, ::1] LB, uint8_t[:, ::1] v,
                   const double[::1] betas, Py_ssize_t k0, Py_ssize_t k1, bint weights,
                   uint64_t[:, ::1] streams, double[::1] logw, int n_threads=1,
                   int variant=0):
    """Steps k0 <= k < k1 (k0 >= 1) of R ratio-AIS runs from the SRBM A (WA, bA, cA, LA)
    to B (WB, bB, cB, LB): the weight ln p*_k(v) - ln p*_{k-1}(v) (with ``weights``), then
    hA, hB given v and v given both one unit at a time, unit i of log-odds
    (1 - beta) (bA + WA hA + LA v)_i + beta (bB + WB hB + LB v)_i (``v`` R x D 0/1, INOUT).
    Run r draws from streams[r] alone.  ``variant`` (power checks only): 2 leaves A's
    hidden term out of ln p*_k; 1 leaves A's lateral field out of the unit updates."""
    cdef Py_ssize_t R = v.shape[0], D = WA.shape[0], MA = WA.shape[1], MB = WB.shape[1]
    if (WB.shape[0] != D or v.shape[1] != D or bA.shape[0] != D or bB.shape[0] != D
            or LA.shape[0] != D or LA.shape[1] != D or LB.shape[0] != D
            or LB.shape[1] != D or cA.shape[0] != MA or cB.shape[0] != MB
            or logw.shape[0] != R):
        raise ValueError("srbm_ratio_run: the shapes of the models, runs and weights do not match.")
    check_streams(streams, R, "srbm_ratio_run: streams")
    if not (1 <= k0 <= k1 <= betas.shape[0]) and k0 != k1:
        raise ValueError("srbm_ratio_run: the steps are not within the schedule (from 1).")
    if R == 0 or k0 == k1 or D == 0:
        return
    cdef int nt = cap_threads(n_threads, R)
    cdef Py_ssize_t r, k, i, j, n_buf = (MA + MB) + 2 * D + 2
    cdef Scratch t
    cdef double qa = 0.0, qb = 0.0, beta, prev, f, la
    cdef uint8_t *vr
    cdef cyrbm_rng *rng
    cdef double[:, ::1] scratch = np.zeros((nt, n_buf))
    cdef uint8_t[:, ::1] hidden = np.zeros((nt, MA + MB + 1), dtype=np.uint8)
    with nogil:
        for r in prange(R, schedule="static", num_threads=nt):
            t = carve(&scratch[omp_get_thread_num(), 0],
                      &hidden[omp_get_thread_num(), 0], D, MA, MB)
            vr = &v[r, 0]
            rng = <cyrbm_rng *> &streams[r, 0]
            for k in range(k0, k1):
                beta = betas[k]
                prev = betas[k - 1]
                qa = srbm_inputs(&WA[0, 0] if MA > 0 else NULL, &bA[0],
                                 &cA[0] if MA > 0 else NULL, &LA[0, 0], D, MA, vr, t.xa)
                qb = srbm_inputs(&WB[0, 0] if MB > 0 else NULL, &bB[0],
                                 &cB[0] if MB > 0 else NULL, &LB[0, 0], D, MB, vr, t.xb)
                if weights:
                    logw[r] += log_weight(qa, qb, t.xa, MA, t.xb, MB, beta, prev, variant)
                draw_hidden_layers(&WA[0, 0] if MA > 0 else NULL, &WB[0, 0] if MB > 0 else NULL,
                                   D, MA, MB, beta, rng, &t)
                la = 0.0 if variant == 1 else 1.0 - beta
                for i in range(D):
                    f = (1.0 - beta) * (bA[i] + t.ua[i]) + beta * (bB[i] + t.ub[i])
                    for j in range(D):
                        if vr[j]:
                            f = f + la * LA[i, j] + beta * LB[i, j]
                    vr[i] = cyrbm_rng_uniform(rng) < cyrbm_sigmoid(f)
