/* Single-site Gibbs on the first hidden layer of a two-layer DBN, for one parameter
 * type: included by chib.c once per type through float_t.h.  See chib.c for the
 * algorithms (MS09 Figure 1, per-vector AIS), the layout and the determinism rules. */

/* logical lanes: 512 bytes (128 floats, 64 doubles), made of NQ native vectors and visited
 * NG native vectors at a time: NG independent product chains in every variant (the lanes'
 * products do not depend on the order the groups are visited in) */
#define NL (512 / (ptrdiff_t)sizeof(T))
#define NQ (NL / VL)
#define NG 8

/* One chain's state: h1, the logistic pairs of the visible layer's input y = W1 h1 + b1
 * and of the top layer's input z = W2^T h1 + c2, and y and z themselves as of the last
 * refresh (a flip moves the pairs, not y and z).  The pairs are kept unnormalised:
 * p : q = sigma(.) : sigma(-.), p + q in [1, 2) (exactly 1 after a refresh), with each
 * layer's normaliser N = prod_i (p_i + q_i) = nm 2^nx. */
typedef struct {
    uint8_t *h;
    T *y, *p1, *q1, *z, *p2, *q2;
    double nm1, nm2;        /* the normalisers' mantissas ... */
    int64_t nx1, nx2;       /* ... and exponents (visible layer: 1, top layer: 2) */
    ptrdiff_t since;        /* sweeps since the inputs were last recomputed exactly */
} FN(chib_state);

#ifndef CYRBM_CHIB_PRODS
#define CYRBM_CHIB_PRODS        /* once for both float types */
/* a site's two products (m1 2^x1: the visible layer's, m2 2^x2: the top layer's), which
 * are the normalisers of the pairs if its unit flips */
typedef struct {
    double m1, m2;
    int64_t x1, x2;
} chib_prods;
#endif

CYRBM_INLINE FN(chib_state) FN(chib_view)(const cyrbm_chib_model *M, const cyrbm_chib_work *W,
                                          int k) {
    FN(chib_state) s;
    T *f = (T *)W->f[k];
    s.h = W->h[k];
    s.y = f;
    s.p1 = f + M->ld1;
    s.q1 = f + 2 * M->ld1;
    s.z = f + 3 * M->ld1;
    s.p2 = s.z + M->ld2;
    s.q2 = s.z + 2 * M->ld2;
    s.nm1 = s.nm2 = 1.0;
    s.nx1 = s.nx2 = 0;
    s.since = 0;
    return s;
}

/* h1 and the pairs (what the chain goes on from: y and z are recomputed before use) */
CYRBM_INLINE void FN(chib_copy)(const cyrbm_chib_model *M, FN(chib_state) *dst,
                                const FN(chib_state) *src) {
    memcpy(dst->h, src->h, (size_t)M->H1);
    memcpy(dst->p1, src->p1, (size_t)(2 * M->ld1) * sizeof(T));
    memcpy(dst->p2, src->p2, (size_t)(2 * M->ld2) * sizeof(T));
    dst->nm1 = src->nm1;
    dst->nm2 = src->nm2;
    dst->nx1 = src->nx1;
    dst->nx2 = src->nx2;
    dst->since = src->since;
}

/* p = sigma(x), q = sigma(-x) for n values (a multiple of VL): e = exp(-|x|), the smaller
 * of the two e / (1 + e), the larger 1 minus it, never overflowing.  The smaller (at most
 * 1/2) keeps its relative precision, and so does the larger (at least 1/2), and p + q
 * rounds to exactly 1: the normaliser of fresh pairs is 1. */
CYRBM_INLINE void FN(chib_pairs)(const T *x, T *p, T *q, ptrdiff_t n) {
    ptrdiff_t i;
    for (i = 0; i < n; i += VL) {
        const VT xv = VLOAD(x + i);
        const VT e = VEXP(AS_T(AS_UT(xv) | SIGN_BIT));
        const VT one = (VT){0} + (T)1;
        const VT small = e * (one / (one + e)), big = one - small;
        const VUT neg = MASK_T(xv < (VT){0});
        VSTORE(p + i, SEL_T(neg, small, big));
        VSTORE(q + i, SEL_T(neg, big, small));
    }
}

/* The pairs of an input x moved by +w (on) or -w, from e = e^w and no exp or division:
 *   sigma(x + w) : sigma(-x - w) = p e : q,   sigma(x - w) : sigma(w - x) = p : q e,
 * then both scaled by the power of two 2^-E that brings their sum f (q + p e or p + q e,
 * rounded as the site's product rounds its factor) into [1, 2): exact.  Returns sum E
 * over the n elements, so that the new normaliser is the product of the f, which the
 * site has just computed, times 2^-(sum E). */
CYRBM_INLINE int64_t FN(chib_move)(T *p, T *q, const T *e, ptrdiff_t n, int on) {
    T *const u = on ? p : q, *const o = on ? q : p;     /* the one moved, the other */
    const VUT top = (VUT){0} + (UT)(2 * EXP_BIAS);
    VUT es = (VUT){0};
    ptrdiff_t i;
    for (i = 0; i < n; i += VL) {
        const VT ue = VLOAD(u + i) * VLOAD(e + i), ov = VLOAD(o + i);
        const VUT ef = AS_UT(ov + ue) >> EXP_SHIFT;     /* E + EXP_BIAS (the sum is > 0) */
        const VT scale = AS_T((top - ef) << EXP_SHIFT);             /* 2^-E */
        VSTORE(u + i, ue * scale);
        VSTORE(o + i, ov * scale);
        es += ef;       /* below 2^32 in all: n <= 2^24 (the driver's limit), ef < 256 */
    }
    return (int64_t)HSUM_UT(es) - (int64_t)n * EXP_BIAS;
}

/* Unit j of h1 turns on (on = 1) or off: the pairs move by row j of e^(W1^T) and of e^W2,
 * O(D + H2), and the normalisers become the site's products pr over the same factors. */
CYRBM_INLINE void FN(chib_flip)(const cyrbm_chib_model *M, FN(chib_state) *s, ptrdiff_t j,
                                int on, const chib_prods *pr) {
    s->h[j] = (uint8_t)on;
    s->nm1 = pr->m1;
    s->nx1 = pr->x1 - FN(chib_move)(s->p1, s->q1, (const T *)M->E1 + j * M->ld1, M->ld1, on);
    s->nm2 = pr->m2;
    s->nx2 = pr->x2 - FN(chib_move)(s->p2, s->q2, (const T *)M->E2 + j * M->ld2, M->ld2, on);
}

/* The inputs recomputed exactly from h1: y = b1 + sum_{j on} W1T[j], z = c2 + sum_{j on}
 * W2[j], rows added in ascending j (element by element: the same bits in every variant). */
CYRBM_INLINE void FN(chib_refresh)(const cyrbm_chib_model *M, FN(chib_state) *s) {
    const ptrdiff_t ld1 = M->ld1, ld2 = M->ld2;
    ptrdiff_t j, i;
    memcpy(s->y, M->b1, (size_t)ld1 * sizeof(T));
    memcpy(s->z, M->c2, (size_t)ld2 * sizeof(T));
    for (j = 0; j < M->H1; j++) {
        if (!s->h[j]) continue;
        {
            const T *w1 = (const T *)M->W1T + j * ld1, *w2 = (const T *)M->W2 + j * ld2;
            for (i = 0; i < ld1; i += VL) VSTORE(s->y + i, VLOAD(s->y + i) + VLOAD(w1 + i));
            for (i = 0; i < ld2; i += VL) VSTORE(s->z + i, VLOAD(s->z + i) + VLOAD(w2 + i));
        }
    }
    FN(chib_pairs)(s->y, s->p1, s->q1, ld1);
    FN(chib_pairs)(s->z, s->p2, s->q2, ld2);
    s->nm1 = s->nm2 = 1.0;
    s->nx1 = s->nx2 = 0;
    s->since = 0;
}

/* prod_{i < n} (A_i + B_i e_i) = m 2^x (returned: m; *x), n a multiple of 32: element i
 * multiplies logical lane i % NL (in T), in NG independent chains; every K blocks of NL
 * each lane is split into a mantissa in [1, 2) and its exponent (kept apart as an
 * integer), K chosen from the weights' range so that no lane overflows or leaves the
 * normal range.  The lanes' mantissas are then multiplied in float64 in a fixed tree
 * (lane l with lane l + NL/2, then halves again), the same in every variant. */
CYRBM_INLINE double FN(chib_prod)(const T *A, const T *B, const T *e, ptrdiff_t n,
                                  ptrdiff_t K, int64_t *x) {
    T lane[NL];
    vd u[NL / 2 / VLD];
    VT P[NG];
    VUT X[NG];
    int64_t ex = 0, nres = 0;
    ptrdiff_t g, i, h, l;
    int q;
    for (g = 0; g < NQ; g += NG) {
        for (q = 0; q < NG; q++) {
            P[q] = (VT){0} + (T)1;
            X[q] = (VUT){0};
        }
        nres = 0;
        for (i = 0; i < n;) {
            const ptrdiff_t stop = n - i > K * NL ? i + K * NL : n;
            for (; i + NL <= stop; i += NL)
                for (q = 0; q < NG; q++) {
                    const ptrdiff_t o = i + (g + q) * VL;
                    P[q] *= VLOAD(A + o) + VLOAD(B + o) * VLOAD(e + o);
                }
            if (i < stop) {         /* the last, partial block (whole native vectors) */
                for (q = 0; q < NG; q++) {
                    const ptrdiff_t o = i + (g + q) * VL;
                    if (o < stop) P[q] *= VLOAD(A + o) + VLOAD(B + o) * VLOAD(e + o);
                }
                i = stop;
            }
            for (q = 0; q < NG; q++) {
                const VUT b = AS_UT(P[q]);
                X[q] += (b >> EXP_SHIFT) & EXP_BITS;
                P[q] = AS_T((b & MANT_KEEP) | ONE_BITS);
            }
            nres++;
        }
        {
            VUT xs = (VUT){0};      /* integer sums: exact in any order (below 2^32:
                                     * n <= 2^24, fields < 256) */
            for (q = 0; q < NG; q++) {
                VSTORE(lane + (g + q) * VL, P[q]);
                xs += X[q];
            }
            ex += (int64_t)HSUM_UT(xs);
        }
    }
    /* the fold in float64 vectors: lane l times lane l + NL / 2, the halves again while
     * they are whole vectors, then the last vector's lanes by the same tree (hmul_d).
     * Where one group holds all the lanes (AVX-512: NQ = NG = 8) the first products are
     * taken from the chains' registers (VPART_D: VLD of a chain's lanes as float64),
     * else from the lane array (after a barrier: the chains stay in registers in the
     * loop above); the same lanes either way. */
#if defined(VPART_D)
    if (NQ == NG) {
        for (l = 0; l < NL / 2 / VLD; l++)
            u[l] = VPART_D(P[l * VLD / VL], l * VLD % VL)
                   * VPART_D(P[(l * VLD + NL / 2) / VL], l * VLD % VL);
    } else
#endif
    {
        CYRBM_COMPILER_BARRIER();
        for (l = 0; l < NL / 2 / VLD; l++)
            u[l] = VLOADD(lane + l * VLD) * VLOADD(lane + l * VLD + NL / 2);
    }
    for (h = NL / 4 / VLD; h >= 1; h /= 2)
        for (l = 0; l < h; l++) u[l] = u[l] * u[l + h];
    *x = ex - nres * NL * EXP_BIAS;
    return hmul_d(u[0]);
}

/* The log-odds of unit j of h1 given v and the other units, the top layer summed out:
 *   ln P*(v, h1 with h_j = 1) - ln P*(v, h1 with h_j = 0)
 *   = (W1^T v)_j + b2_j - sum_i [sp(y_i^on) - sp(y_i^off)] + sum_k [sp(z_k^on) - sp(z_k^off)]
 * (sp = softplus).  From the current pairs: sp(y + w) - sp(y) = ln((q + p e^w) / (p + q))
 * and sp(y - w) - sp(y) = ln((p + q e^w) / (p + q)) - w, with e^w from the table E: the
 * products of the factors over each layer (kept in pr for a flip) divided by the layer's
 * normaliser, and one log of their ratio.  In parts: the products (kept in pr for a flip)
 * and their ratio rho with the power of two k (chib_ratio), so that d = c_j + ln rho +
 * k ln 2 (chib_log_odds, c_j = (W1^T v)_j + b2_j, less s1_j and plus s2_j when h_j = 1),
 * or e^d = e^c_j rho 2^k without a log (chib_odds). */
CYRBM_INLINE double FN(chib_ratio)(const cyrbm_chib_model *M, const FN(chib_state) *s,
                                   ptrdiff_t j, chib_prods *pr, int64_t *k) {
    const T *e1 = (const T *)M->E1 + j * M->ld1, *e2 = (const T *)M->E2 + j * M->ld2;
    if (!s->h[j]) {
        pr->m1 = FN(chib_prod)(s->q1, s->p1, e1, M->ld1, M->K1, &pr->x1);
        pr->m2 = FN(chib_prod)(s->q2, s->p2, e2, M->ld2, M->K2, &pr->x2);
        *k = pr->x2 - pr->x1 + s->nx1 - s->nx2;
        return (pr->m2 * s->nm1) / (pr->m1 * s->nm2);
    }
    pr->m1 = FN(chib_prod)(s->p1, s->q1, e1, M->ld1, M->K1, &pr->x1);
    pr->m2 = FN(chib_prod)(s->p2, s->q2, e2, M->ld2, M->K2, &pr->x2);
    *k = pr->x1 - pr->x2 + s->nx2 - s->nx1;
    return (pr->m1 * s->nm2) / (pr->m2 * s->nm1);
}

CYRBM_INLINE double FN(chib_log_odds)(const cyrbm_chib_model *M, const FN(chib_state) *s,
                                      ptrdiff_t j, double vw, double rho, int64_t k) {
    if (!s->h[j]) return vw + M->b2[j] + (log(rho) + (double)k * LN2);
    return vw + M->b2[j] + (log(rho) + (double)k * LN2) - M->s1[j] + M->s2[j];
}

CYRBM_INLINE double FN(chib_delta)(const cyrbm_chib_model *M, const FN(chib_state) *s,
                                   ptrdiff_t j, double vw, chib_prods *pr) {
    int64_t k;
    const double rho = FN(chib_ratio)(M, s, j, pr, &k);
    return FN(chib_log_odds)(M, s, j, vw, rho, k);
}

/* e^d = ec[2 j + h_j] rho 2^k (ec: chib_inputs' e^c_j for h_j = 0 and 1), or 0 when it
 * leaves [2^-1000, 2^1000], when |k| > 1000 or when e^c_j rho is not a normal number (or
 * e^c_j was not kept): then the caller takes d's log.  The power of two is exact (its
 * bits built; a result in range is exact too). */
CYRBM_INLINE double FN(chib_odds)(const FN(chib_state) *s, ptrdiff_t j, const double *ec,
                                  double rho, int64_t k) {
    double x, o;
    if (k < -1000 || k > 1000) return 0.0;
    x = ec[2 * j + s->h[j]] * rho;
    if (!(x >= 0x1p-1022 && x <= 0x1p1023)) return 0.0;   /* (NaN fails too) */
    o = x * cyrbm_q2d((uint64_t)(1023 + k) << 52);
    return o >= 0x1p-1000 && o <= 0x1p1000 ? o : 0.0;
}

/* ln P*(v, h1) = sum_i [v_i y_i - sp(y_i)] + b2.h1 + sum_k sp(z_k), float64, from inputs
 * that were just recomputed (element by element with vmath's softplus, in unit order:
 * not the AIS kernels' lane-wise softplus sum, whose other order gives other bits; the
 * estimators' results are made with this one) */
CYRBM_INLINE double FN(chib_logjoint)(const cyrbm_chib_model *M, const FN(chib_state) *s,
                                      const uint8_t *v) {
    double a = 0.0, b = 0.0, c = 0.0;
    ptrdiff_t i;
    for (i = 0; i < M->D; i++) {
        const double y = (double)s->y[i];
        a += (v[i] ? y : 0.0) - cyrbm_softplus(y);
    }
    for (i = 0; i < M->H1; i++)
        if (s->h[i]) b += M->b2[i];
    for (i = 0; i < M->H2; i++) c += cyrbm_softplus((double)s->z[i]);
    return a + b + c;
}

/* vw = W1^T v (float64, i ascending) and Q's log-odds x = vw + c1 (SM08's factorial Q).
 * Only the visible units that are on add a term: they are listed (cyrbm_active_units) a
 * chunk of v at a time and each unit's sum goes on through the chunk's list (the same
 * additions, in the same order, as a pass over all of v), four units at a time. */
#ifndef CHIB_V_CHUNK
#define CHIB_V_CHUNK 256       /* visible units per list of those on */
#endif
CYRBM_INLINE void FN(chib_inputs)(const cyrbm_chib_model *M, const uint8_t *v, double *vw,
                                  double *x, double *ec) {
    const ptrdiff_t ld1 = M->ld1;
    int32_t on[CHIB_V_CHUNK];
    ptrdiff_t i0, j, k, n;
    for (j = 0; j < M->H1; j++) vw[j] = 0.0;
    for (i0 = 0; i0 < M->D; i0 += CHIB_V_CHUNK) {
        n = cyrbm_active_units(v + i0, M->D - i0 < CHIB_V_CHUNK ? M->D - i0 : CHIB_V_CHUNK, on);
        if (n == 0) continue;
        for (j = 0; j + 4 <= M->H1; j += 4) {
            const T *w = (const T *)M->W1T + j * ld1 + i0;  /* list entries count from i0 */
            double a0 = vw[j], a1 = vw[j + 1], a2 = vw[j + 2], a3 = vw[j + 3];
            for (k = 0; k < n; k++) {
                const ptrdiff_t o = on[k];
                a0 += (double)w[o];
                a1 += (double)w[ld1 + o];
                a2 += (double)w[2 * ld1 + o];
                a3 += (double)w[3 * ld1 + o];
            }
            vw[j] = a0;
            vw[j + 1] = a1;
            vw[j + 2] = a2;
            vw[j + 3] = a3;
        }
        for (; j < M->H1; j++) {
            const T *w = (const T *)M->W1T + j * ld1 + i0;
            double a = vw[j];
            for (k = 0; k < n; k++) a += (double)w[on[k]];
            vw[j] = a;
        }
    }
    for (j = 0; j < M->H1; j++) x[j] = vw[j] + M->c1[j];
    /* e^c_j for chib_odds, c_j as chib_log_odds adds it up (vmath's exp of -|c|: its
     * reciprocal for c > 0; 0, not kept, beyond |c| = 700) */
    for (j = 0; j < M->H1; j++) {
        int h;
        for (h = 0; h < 2; h++) {
            const double c = h ? vw[j] + M->b2[j] - M->s1[j] + M->s2[j] : vw[j] + M->b2[j];
            ec[2 * j + h] = !(fabs(c) <= 700.0) ? 0.0
                            : c <= 0.0 ? cyrbm_exp_neg(c) : 1.0 / cyrbm_exp_neg(-c);
        }
    }
}

/* h ~ Q(h1 | v): unit j on when a uniform < sigma(x_j), j ascending */
CYRBM_INLINE void FN(chib_draw_q)(const cyrbm_chib_model *M, const double *x, uint8_t *h,
                                  cyrbm_rng *rng) {
    ptrdiff_t j;
    for (j = 0; j < M->H1; j++) h[j] = (uint8_t)cyrbm_rng_bernoulli(rng, cyrbm_sigmoid(x[j]));
}

/* One site of a sweep of single-site Gibbs updates of h1 (a sweep visits the sites in
 * ascending order, T, or in descending order, T-tilde; its caller counts it in `since`)
 * at inverse temperature beta:
 * unit j is on with probability sigma(beta delta_j + (1 - beta) x_j), which leaves
 * Q(h1 | v)^(1 - beta) P*(v, h1)^beta invariant (beta = 1: P(h1 | v)).  One uniform.  lp
 * (ln P*) and lq (ln Q) follow the flip when not NULL.  At beta = 1 the probability is
 * o / (1 + o) from the odds o = e^delta_j (chib_odds: no log, no exp), delta_j's log
 * taken only for lp after a flip. */
CYRBM_INLINE void FN(chib_sweep_site)(const cyrbm_chib_model *M, FN(chib_state) *s,
                                      ptrdiff_t j, const double *vw, const double *x,
                                      const double *ec, double beta, cyrbm_rng *rng,
                                      double *lp, double *lq) {
    chib_prods pr;
    int64_t k;
    const double rho = FN(chib_ratio)(M, s, j, &pr, &k);
    const double o = beta == 1.0 ? FN(chib_odds)(s, j, ec, rho, k) : 0.0;
    double d = 0.0;
    int on;
    if (o > 0.0) {
        on = cyrbm_rng_bernoulli(rng, o / (1.0 + o));
        if (lp && on != s->h[j]) d = FN(chib_log_odds)(M, s, j, vw[j], rho, k);
    } else {
        d = FN(chib_log_odds)(M, s, j, vw[j], rho, k);
        on = cyrbm_rng_bernoulli(rng, cyrbm_sigmoid(beta * d + (1.0 - beta) * x[j]));
    }
    if (on != s->h[j]) {
        FN(chib_flip)(M, s, j, on, &pr);
        if (lp) *lp += on ? d : -d;
        if (lq) *lq += on ? x[j] : -x[j];
    }
}

/* Site j of ln T(h* <- h) for the forward sweep T (MS09 Eq. 11), walking a copy w of the
 * state from h to h* in ascending j: ln P(h*_j | h*_{<j}, h_{>j}, v) (returned as its
 * negative, the softplus: ln(1 + o) or ln(1 + 1/o) from the odds o = e^d, chib_odds),
 * then unit j set to h*_j. */
CYRBM_INLINE double FN(chib_log_t_site)(const cyrbm_chib_model *M, FN(chib_state) *w,
                                        ptrdiff_t j, const uint8_t *hstar, const double *vw,
                                        const double *ec) {
    chib_prods pr;
    int64_t k;
    const double rho = FN(chib_ratio)(M, w, j, &pr, &k);
    const double o = FN(chib_odds)(w, j, ec, rho, k);
    double sp;
    if (o > 0.0) {
        sp = log1p(hstar[j] ? 1.0 / o : o);
    } else {
        const double d = FN(chib_log_odds)(M, w, j, vw[j], rho, k);
        sp = cyrbm_softplus(hstar[j] ? -d : d);
    }
    if (w->h[j] != hstar[j]) FN(chib_flip)(M, w, j, hstar[j], &pr);
    return sp;
}

/* Hill-climbing site j (strict ascent in ln P*(v, h1)): 1 when unit j flipped. */
CYRBM_INLINE int FN(chib_climb_site)(const cyrbm_chib_model *M, FN(chib_state) *s,
                                     ptrdiff_t j, const double *vw) {
    chib_prods pr;
    const double d = FN(chib_delta)(M, s, j, vw[j], &pr);
    const int want = s->h[j] ? d >= 0.0 : d > 0.0;
    if (want == s->h[j]) return 0;
    FN(chib_flip)(M, s, j, want, &pr);
    return 1;
}

CYRBM_INLINE void FN(chib_maybe_refresh)(const cyrbm_chib_model *M, FN(chib_state) *s,
                                         ptrdiff_t refresh_every) {
    if (refresh_every > 0 && s->since >= refresh_every) FN(chib_refresh)(M, s);
}

/* One item of the estimator in flight (a slot of cyrbm_chib_items): its scratch and chain
 * states, where it is in Figure 1, and the pass it makes next (a hill-climbing pass, a
 * sweep, or the walk of ln T). */
#ifndef CYRBM_CHIB_PASSES
#define CYRBM_CHIB_PASSES       /* once for both float types */
enum { CHIB_CLIMB, CHIB_SWEEP, CHIB_LOGT };
/* sites an item visits before the next item takes the same sites: their table rows
 * (16 x 11 KB for 784-500-2000 in float32) stay in L2 for the others, while each item's
 * own logistic pairs stay in L1 */
#define CHIB_SITE_BLOCK 16
#endif
typedef struct {
    cyrbm_chib_work W;
    FN(chib_state) cur, sav, wk;
    const uint8_t *v;
    cyrbm_rng *rng;
    ptrdiff_t it;               /* the item; -1: the slot is empty */
    ptrdiff_t pass, s, t;       /* climbing passes made; s ~ Uniform{1..S}; the step t */
    int kind, backward;         /* the next pass and its direction */
    int changed, forward;       /* the climbing pass flipped a unit; t > s */
    double lt;                  /* ln T(h* <- h(t)) so far */
} FN(chib_slot);

/* An item enters its slot: h ~ Q(h1 | v), inputs exact, the first climbing pass next. */
CYRBM_INLINE void FN(chib_slot_start)(const cyrbm_chib_model *M, FN(chib_slot) *q,
                                      const uint8_t *v, const int32_t *vec, ptrdiff_t it,
                                      cyrbm_rng *streams) {
    q->it = it;
    q->v = v + (ptrdiff_t)vec[it] * M->D;
    q->rng = streams + it;
    FN(chib_inputs)(M, q->v, q->W.vw, q->W.x, q->W.ec);
    FN(chib_draw_q)(M, q->W.x, q->cur.h, q->rng);
    FN(chib_refresh)(M, &q->cur);
    q->pass = 0;
    q->kind = CHIB_CLIMB;
    q->backward = 0;
    q->changed = 0;
    q->forward = 0;
}

/* Site j of the slot's pass */
CYRBM_INLINE void FN(chib_slot_site)(const cyrbm_chib_model *M, FN(chib_slot) *q, ptrdiff_t j) {
    if (q->kind == CHIB_CLIMB)
        q->changed |= FN(chib_climb_site)(M, &q->cur, j, q->W.vw);
    else if (q->kind == CHIB_SWEEP)
        FN(chib_sweep_site)(M, &q->cur, j, q->W.vw, q->W.x, q->W.ec, 1.0, q->rng, NULL,
                              NULL);
    else
        q->lt -= FN(chib_log_t_site)(M, &q->wk, j, q->W.hstar, q->W.vw, q->W.ec);
}

/* The next sweep of the chain, at step t (the inputs refreshed first when due) */
CYRBM_INLINE void FN(chib_slot_sweep)(const cyrbm_chib_model *M, FN(chib_slot) *q,
                                      ptrdiff_t refresh_every, int backward) {
    FN(chib_maybe_refresh)(M, &q->cur, refresh_every);
    q->kind = CHIB_SWEEP;
    q->backward = backward;
}

/* After the slot's pass: Figure 1's bookkeeping, and the next pass.  Returns 1 when the
 * item is finished (lpstar and logphat written). */
CYRBM_INLINE int FN(chib_slot_after)(const cyrbm_chib_model *M, FN(chib_slot) *q, ptrdiff_t S,
                                     int tilde_backward, ptrdiff_t refresh_every,
                                     double *lpstar, double *logphat) {
    if (q->kind == CHIB_CLIMB) {
        if (q->changed && q->pass + 1 < 10000) {        /* climb on */
            if (refresh_every > 0 && (q->pass + 1) % refresh_every == 0)
                FN(chib_refresh)(M, &q->cur);
            q->pass++;
            q->changed = 0;
            return 0;
        }
        FN(chib_refresh)(M, &q->cur);                   /* h* reached */
        memcpy(q->W.hstar, q->cur.h, (size_t)M->H1);
        lpstar[q->it] = FN(chib_logjoint)(M, &q->cur, q->v);
        q->s = 1 + (ptrdiff_t)(cyrbm_rng_uniform(q->rng) * (double)S);
        if (q->s > S) q->s = S;
        q->t = q->s;
        q->kind = CHIB_SWEEP;                           /* h(s) ~ T-tilde(. <- h*) */
        q->backward = tilde_backward;
        return 0;
    }
    if (q->kind == CHIB_SWEEP) {                        /* then ln T of the new state */
        q->cur.since++;
        FN(chib_copy)(M, &q->wk, &q->cur);
        q->lt = 0.0;
        q->kind = CHIB_LOGT;
        q->backward = 0;
        return 0;
    }
    q->W.logt[q->t] = q->lt;
    if (q->t == q->s) FN(chib_copy)(M, &q->sav, &q->cur);
    if (!q->forward) {                                  /* backward to 1 with T-tilde */
        q->t--;
        if (q->t >= 1) {
            FN(chib_slot_sweep)(M, q, refresh_every, tilde_backward);
            return 0;
        }
        FN(chib_copy)(M, &q->cur, &q->sav);             /* then forward from h(s) */
        q->forward = 1;
        q->t = q->s;
    }
    q->t++;
    if (q->t <= S) {
        FN(chib_slot_sweep)(M, q, refresh_every, 0);
        return 0;
    }
    {
        double mx = -INFINITY, sm = 0.0;
        ptrdiff_t t;
        for (t = 1; t <= S; t++)
            if (q->W.logt[t] > mx) mx = q->W.logt[t];
        /* the C library's exp (not vmath's): the estimator's published bits were made
         * with it (tools/ais_fingerprint.py), and S terms per item cost nothing */
        for (t = 1; t <= S; t++) sm += exp(q->W.logt[t] - mx);
        logphat[q->it] = mx + log(sm / (double)S);
    }
    return 1;
}

/* The estimator of MS09 (Figure 1) for items [i0, i1): item t is test vector vec[t] (row
 * of v, D bytes) with its own stream streams[t].  Out: lpstar[t] = ln P*(v, h*) and
 * logphat[t] = ln((1/S) sum_s T(h* <- h(s))), so ln P-hat(v) = lpstar - ln Z - logphat.
 *   h*: h ~ Q(h1 | v), then hill-climbing in ln P*(v, h1) (unit by unit, ascending, until a
 *       whole sweep changes nothing);
 *   s ~ Uniform{1..S}; h(s) ~ T-tilde(. <- h*); forward to S with T, backward to 1 with
 *       T-tilde (tilde_backward = 0 makes T-tilde the forward sweep: a deliberately wrong
 *       reverse operator, for tests).
 * Random numbers: H1 for Q, one for s, H1 per sweep, in that order.
 * Up to CYRBM_CHIB_SLOTS items are in flight at once (work holds that many scratch
 * blocks of cyrbm_chib_layout's size, each rounded up to 64 bytes); a round makes one
 * pass for every item going ascending, then one for every item going descending, each
 * pass CHIB_SITE_BLOCK sites of one item then the same sites of the next, so each row of
 * the e^W tables is read once from memory for them all.  An item's own operations and
 * random numbers are those it makes alone: the results do not depend on which items share
 * the passes. */
void FN(cyrbm_chib_items)(const cyrbm_chib_model *M, const uint8_t *v, const int32_t *vec,
                          ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t S, int tilde_backward,
                          ptrdiff_t refresh_every, cyrbm_rng *streams, double *lpstar,
                          double *logphat, void *work) {
    FN(chib_slot) slot[CYRBM_CHIB_SLOTS];
    FN(chib_slot) *go[CYRBM_CHIB_SLOTS];
    const size_t bytes = (cyrbm_chib_layout(M, S, sizeof(T), NULL, &slot[0].W) + 63) &
                         ~(size_t)63;
    ptrdiff_t next = i0, k, k0;
    int q, n, dir, busy;
    for (q = 0; q < CYRBM_CHIB_SLOTS; q++) {
        FN(chib_slot) *z = &slot[q];
        cyrbm_chib_layout(M, S, sizeof(T), (char *)work + (size_t)q * bytes, &z->W);
        z->cur = FN(chib_view)(M, &z->W, 0);
        z->sav = FN(chib_view)(M, &z->W, 1);
        z->wk = FN(chib_view)(M, &z->W, 2);
        z->it = -1;
        if (next < i1) FN(chib_slot_start)(M, z, v, vec, next++, streams);
    }
    for (busy = 1; busy;) {
        if (cyrbm_stop_requested) return;               /* Ctrl-C */
        busy = 0;
        for (dir = 0; dir < 2; dir++) {     /* the ascending passes, then the descending */
            for (n = 0, q = 0; q < CYRBM_CHIB_SLOTS; q++)
                if (slot[q].it >= 0 && slot[q].backward == dir) go[n++] = &slot[q];
            if (n == 0) continue;
            busy = 1;
            for (k0 = 0; k0 < M->H1; k0 += CHIB_SITE_BLOCK) {
                const ptrdiff_t k1 = k0 + CHIB_SITE_BLOCK < M->H1 ? k0 + CHIB_SITE_BLOCK : M->H1;
                for (q = 0; q < n; q++)
                    for (k = k0; k < k1; k++)
                        FN(chib_slot_site)(M, go[q], dir ? M->H1 - 1 - k : k);
            }
            for (q = 0; q < n; q++)
                if (FN(chib_slot_after)(M, go[q], S, tilde_backward, refresh_every, lpstar,
                                        logphat)) {
                    go[q]->it = -1;
                    if (next < i1) FN(chib_slot_start)(M, go[q], v, vec, next++, streams);
                }
        }
    }
}

/* ln P*(v, h1) and ln Q(h1 | v) of a state whose inputs were just recomputed */
CYRBM_INLINE void FN(chib_ais_logs)(const cyrbm_chib_model *M, const FN(chib_state) *s,
                                    const uint8_t *v, const double *x, double *lp, double *lq) {
    ptrdiff_t j;
    *lp = FN(chib_logjoint)(M, s, v);
    *lq = 0.0;
    for (j = 0; j < M->H1; j++) *lq += (s->h[j] ? x[j] : 0.0) - cyrbm_softplus(x[j]);
}

/* Per-vector AIS over h1 for items [i0, i1) (MS09 Sec. 5.1's gold standard): from
 * p_0 = Q(h1 | v) (base_q; else the uniform distribution; normalized, drawn exactly) through p_k ~ Q^(1 - beta_k) P*(v, h1)^beta_k
 * to P(h1 | v), with one forward sweep of the tempered single-site T at each intermediate
 * beta.  logw[t] = sum_k (beta_k - beta_{k-1}) (ln P*(v, h_{k-1}) - ln Q(h_{k-1} | v)), so
 * mean(w) estimates sum_h1 P*(v, h1) = Z P(v) without bias.  ln P* and ln Q follow the
 * flips and are recomputed exactly with the inputs every refresh_every sweeps.
 * Up to CYRBM_CHIB_SLOTS items at once, as cyrbm_chib_items runs them (work: that many
 * blocks of cyrbm_chib_layout(M, 1, ...) rounded up to 64 bytes): every item makes the
 * same sweeps, so they go through the betas together, CHIB_SITE_BLOCK sites of one item
 * then the same sites of the next; each item's own operations are in its own order. */
void FN(cyrbm_chib_ais)(const cyrbm_chib_model *M, const uint8_t *v, const int32_t *vec,
                        ptrdiff_t i0, ptrdiff_t i1, const double *betas, ptrdiff_t n_betas,
                        int base_q, ptrdiff_t refresh_every, cyrbm_rng *streams, double *logw,
                        void *work) {
    cyrbm_chib_work W[CYRBM_CHIB_SLOTS];
    FN(chib_state) cur[CYRBM_CHIB_SLOTS];
    const uint8_t *vv[CYRBM_CHIB_SLOTS];
    double lp[CYRBM_CHIB_SLOTS], lq[CYRBM_CHIB_SLOTS], lw[CYRBM_CHIB_SLOTS];
    const size_t bytes = (cyrbm_chib_layout(M, 1, sizeof(T), NULL, &W[0]) + 63) & ~(size_t)63;
    ptrdiff_t it0, k, k0, k1, j;
    int q, n;
    for (it0 = i0; it0 < i1; it0 += CYRBM_CHIB_SLOTS) {
        n = i1 - it0 < CYRBM_CHIB_SLOTS ? (int)(i1 - it0) : CYRBM_CHIB_SLOTS;
        for (q = 0; q < n; q++) {
            cyrbm_chib_layout(M, 1, sizeof(T), (char *)work + (size_t)q * bytes, &W[q]);
            cur[q] = FN(chib_view)(M, &W[q], 0);
            vv[q] = v + (ptrdiff_t)vec[it0 + q] * M->D;
            FN(chib_inputs)(M, vv[q], W[q].vw, W[q].x, W[q].ec);
            if (!base_q)                   /* the uniform base: every log-odds 0 */
                for (j = 0; j < M->H1; j++) W[q].x[j] = 0.0;
            FN(chib_draw_q)(M, W[q].x, cur[q].h, streams + it0 + q);
            FN(chib_refresh)(M, &cur[q]);
            FN(chib_ais_logs)(M, &cur[q], vv[q], W[q].x, &lp[q], &lq[q]);
            lw[q] = 0.0;
        }
        for (k = 1; k < n_betas; k++) {
            if ((k & 255) == 0 && cyrbm_stop_requested) return;     /* Ctrl-C */
            for (q = 0; q < n; q++) lw[q] += (betas[k] - betas[k - 1]) * (lp[q] - lq[q]);
            if (k == n_betas - 1) break;
            for (q = 0; q < n; q++)
                if (refresh_every > 0 && cur[q].since >= refresh_every) {
                    FN(chib_refresh)(M, &cur[q]);
                    FN(chib_ais_logs)(M, &cur[q], vv[q], W[q].x, &lp[q], &lq[q]);
                }
            for (k0 = 0; k0 < M->H1; k0 += CHIB_SITE_BLOCK) {
                k1 = k0 + CHIB_SITE_BLOCK < M->H1 ? k0 + CHIB_SITE_BLOCK : M->H1;
                for (q = 0; q < n; q++)
                    for (j = k0; j < k1; j++)
                        FN(chib_sweep_site)(M, &cur[q], j, W[q].vw, W[q].x, W[q].ec,
                                            betas[k], streams + it0 + q, &lp[q], &lq[q]);
            }
            for (q = 0; q < n; q++) cur[q].since++;
        }
        for (q = 0; q < n; q++) logw[it0 + q] = lw[q];
    }
}

#undef NL
#undef NQ
#undef NG
