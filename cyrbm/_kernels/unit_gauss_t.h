/* The Gaussian visible unit type (MS09 Sec. 5.2) of the one Gibbs driver (unit_gibbs_t.h):
 * its operations, for one parameter type T, on gauss_t.h's products and draws (included
 * after gauss_t.h from anneal.c, so compiled once per instruction set; its GAUSS_*
 * macros are undefined at the end of this file).  Model and base: kernels.h,
 * cyrbm_gauss_pair; the lanes, the order of the draws and the log weight: gauss_t.h.
 *
 * A block is CYRBM_GAUSS_LANES = 16 runs, one per lane, kept transposed (unit-major):
 * f(v) = v / s, x = c + W^T (v / s) and u = W h are gauss_product's dense products (a
 * block of at most 8 runs: gauss_runs_product's, the runs side by side over the units,
 * the same bits at a fraction of the work); the hidden draws and the log weight go per
 * float64 vector of lanes; v_i | h is normal with precision lam_i = (1 - beta) / sd_i^2
 * + beta / s_i^2. */

#define UNIT_LANES CYRBM_GAUSS_LANES
#define UNIT_PAIR cyrbm_gauss_pair
#define UF(x) FN(x##_gauss)

typedef struct {
    const T *W, *Wt, *b, *c, *s;
    const double *mu, *sd;
    ptrdiff_t D, M;
    T *vt, *a, *x, *ht, *u;         /* the block: v, v / s, x, h (lanes), u = W h */
    uint64_t *st;                   /* the lanes' streams, 4 x 16 words */
    double *lw;                     /* the lanes' log weights */
    double *rsd, *rs;               /* 1 / sd, 1 / s */
    double *cA, *cB, *cC;           /* v_i = A_i + B_i u_i + C_i z at this beta */
    T *tailW, *tailWt;              /* D x VL, M x VL: the last M % VL columns of W, the last
                                     * D % VL of W^T, zeros after them (gauss_runs_product) */
    int n;                          /* the block's runs (lanes past them are empty) */
} UF(unit);

/* a block of at most GAUSS_RUN_MAX runs takes its products with the runs side by side
 * (gauss_runs_product), about GAUSS_RUN_VECS vectors of sums in registers */
#define GAUSS_RUN_MAX (GAUSS_GL / 2)
#define GAUSS_RUN_VECS (CYRBM_VBYTES == 64 ? 16 : 8)

CYRBM_INLINE void UF(unit_begin)(UF(unit) *C, const cyrbm_gauss_pair *P, void *work) {
    const ptrdiff_t D = P->D, M = P->M;
    size_t total = 0;
    ptrdiff_t i, j;
    int e;
    C->W = (const T *)P->W;
    C->Wt = (const T *)P->Wt;
    C->b = (const T *)P->b;
    C->c = (const T *)P->c;
    C->s = (const T *)P->s;
    C->mu = P->mu;
    C->sd = P->sd;
    C->D = D;
    C->M = M;
    C->vt = (T *)cyrbm_take((char *)work, &total, (size_t)(D * GAUSS_GL) * sizeof(T));
    C->a = (T *)cyrbm_take((char *)work, &total, (size_t)(D * GAUSS_GL) * sizeof(T));
    C->x = (T *)cyrbm_take((char *)work, &total, (size_t)(M * GAUSS_GL) * sizeof(T));
    C->ht = (T *)cyrbm_take((char *)work, &total, (size_t)(M * GAUSS_GL) * sizeof(T));
    C->st = (uint64_t *)cyrbm_take((char *)work, &total, 4 * GAUSS_GL * sizeof(uint64_t));
    C->lw = (double *)cyrbm_take((char *)work, &total, GAUSS_GL * sizeof(double));
    C->rsd = (double *)cyrbm_take((char *)work, &total, (size_t)D * sizeof(double));
    C->rs = (double *)cyrbm_take((char *)work, &total, (size_t)D * sizeof(double));
    C->cA = (double *)cyrbm_take((char *)work, &total, (size_t)D * sizeof(double));
    C->cB = (double *)cyrbm_take((char *)work, &total, (size_t)D * sizeof(double));
    C->cC = (double *)cyrbm_take((char *)work, &total, (size_t)D * sizeof(double));
    C->tailW = (T *)cyrbm_take((char *)work, &total, (size_t)(D * VL) * sizeof(T));
    C->tailWt = (T *)cyrbm_take((char *)work, &total, (size_t)(M * VL) * sizeof(T));
    C->n = GAUSS_GL;
    for (i = 0; i < D; i++)
        for (e = 0; e < VL; e++) {
            const ptrdiff_t col = M / VL * VL + e;
            C->tailW[i * VL + e] = col < M ? C->W[i * M + col] : (T)0;
        }
    if (C->Wt != NULL)
        for (j = 0; j < M; j++)
            for (e = 0; e < VL; e++) {
                const ptrdiff_t col = D / VL * VL + e;
                C->tailWt[j * VL + e] = col < D ? C->Wt[j * D + col] : (T)0;
            }
    C->u = C->a;                    /* W h reuses v / s's room (not needed then) */
    for (i = 0; i < D; i++) {
        C->rsd[i] = 1.0 / C->sd[i];
        C->rs[i] = 1.0 / (double)C->s[i];
    }
}

/* the block in: chains side by side; lanes past the last chain get zeros and a fixed
 * stream, and are never written back */
CYRBM_INLINE void UF(unit_load)(UF(unit) *C, const cyrbm_gibbs_runs *S, ptrdiff_t b0, int n) {
    const T *v = (const T *)S->v;
    const ptrdiff_t D = C->D;
    ptrdiff_t i;
    int l, w;
    for (i = 0; i < D; i++)
        for (l = 0; l < GAUSS_GL; l++)
            C->vt[i * GAUSS_GL + l] = l < n ? v[(b0 + l) * D + i] : (T)0;
    for (w = 0; w < 4; w++)
        for (l = 0; l < GAUSS_GL; l++)
            C->st[w * GAUSS_GL + l] = l < n ? S->streams[b0 + l].s[w]
                                            : 0x9E3779B97F4A7C15ULL * (uint64_t)(w + 1);
    for (l = 0; l < GAUSS_GL; l++) C->lw[l] = l < n ? S->logw[b0 + l] : 0.0;
    C->n = n;
    if (n <= GAUSS_RUN_MAX)   /* gauss_runs_product writes no empty lane of x */
        memset(C->x, 0, (size_t)(C->M * GAUSS_GL) * sizeof(T));
}

/* the block out */
CYRBM_INLINE void UF(unit_store)(UF(unit) *C, const cyrbm_gibbs_runs *S, ptrdiff_t b0, int n,
                                 int drew_h) {
    T *v = (T *)S->v;
    const ptrdiff_t D = C->D, M = C->M;
    ptrdiff_t i, j;
    int l, w;
    /* unit by unit, the block's row of lanes read once (the lanes' columns would be read
     * a cache line per element, v's and h's together more than L1 holds) */
    for (i = 0; i < D; i++)
        for (l = 0; l < n; l++) v[(b0 + l) * D + i] = C->vt[i * GAUSS_GL + l];
    if (drew_h)
        for (j = 0; j < M; j++)
            for (l = 0; l < n; l++) S->h[(b0 + l) * M + j] = C->ht[j * GAUSS_GL + l] != (T)0;
    for (l = 0; l < n; l++) {
        for (w = 0; w < 4; w++) S->streams[b0 + l].s[w] = C->st[w * GAUSS_GL + l];
        S->logw[b0 + l] = C->lw[l];
    }
}

/* the exact draw from the base: v_i = mu_i + sd_i z */
CYRBM_INLINE void UF(unit_base_draw)(UF(unit) *C) {
    FN(gauss_draw_visible)(C->st, C->vt, C->D, C->mu, NULL, C->sd, NULL);
}

/* A partial block of nr <= GAUSS_RUN_MAX runs takes its two products with the runs
 * side by side in registers, vectorised over the output units:
 *   out[n * GL + l] = init[n] + sum_{m < n_in} A[m * lda + n] in[m * GL + l]
 * for n < n_out and l < nr, in ascending m: x (A = W, in = v / s) one fused multiply-add
 * a term; u (`onoff`: A = W^T, in = h of 0 / 1, init NULL) acc + w h, where w h is w or 0
 * exactly, as the lanes' masked adds.  Each element's operations are the lanes' own, in
 * the same order (gauss_product), so the same bits; each row of A is read once for the
 * nr runs, at nr / GL of a block's multiply-adds.  The units past the last whole vector
 * read `tail` (n_in x VL: A's last n_out % VL columns, zeros after them).  A tile: units
 * n0 .. n0 + nv VL - 1 (at most n_out), their columns of A from a0 = A + n0. */
CYRBM_INLINE void FN(gauss_runs_tile)(const T *restrict a0, ptrdiff_t lda, int onoff,
                                      const T *restrict init, const T *restrict in,
                                      ptrdiff_t n_in, ptrdiff_t n0, T *restrict out,
                                      ptrdiff_t n_out, const int nr, const int nv) {
    VT acc[GAUSS_RUN_MAX][GAUSS_RUN_VECS];
    T lanes[VL];
    ptrdiff_t m;
    int v, e, l;
    for (v = 0; v < nv; v++) {
        VT c0;
        if (init == NULL) {
            c0 = BC_T((T)0);
        } else if (n0 + (v + 1) * VL <= n_out) {
            c0 = VLOAD(init + n0 + v * VL);
        } else {   /* the tail's biases */
            for (e = 0; e < VL; e++)
                lanes[e] = n0 + v * VL + e < n_out ? init[n0 + v * VL + e] : (T)0;
            c0 = VLOAD(lanes);
        }
        for (l = 0; l < nr; l++) acc[l][v] = c0;
    }
    for (m = 0; m < n_in; m++) {
        const T *a = a0 + m * lda;
        VT w[GAUSS_RUN_VECS];
        for (v = 0; v < nv; v++) w[v] = VLOAD(a + v * VL);
        for (l = 0; l < nr; l++) {
            const T x = in[m * GAUSS_GL + l];
            if (onoff)   /* w x is w or 0, exact: one rounding, no fused multiply-add */
                for (v = 0; v < nv; v++) acc[l][v] += w[v] * BC_T(x);
            else         /* (x w: the exact product of w x, so the lanes' bits) */
                for (v = 0; v < nv; v++) acc[l][v] = GAUSS_FMA(x, w[v], acc[l][v]);
        }
    }
    for (l = 0; l < nr; l++)
        for (v = 0; v < nv; v++) {
            VSTORE(lanes, acc[l][v]);
            for (e = 0; e < VL && n0 + v * VL + e < n_out; e++)
                out[(n0 + v * VL + e) * GAUSS_GL + l] = lanes[e];
        }
}

CYRBM_INLINE void FN(gauss_runs_all)(const T *restrict A, ptrdiff_t lda, int onoff,
                                     const T *restrict init, const T *restrict in,
                                     ptrdiff_t n_in, ptrdiff_t n_out, T *restrict out,
                                     const T *restrict tail, const int nr, const int nv) {
    const ptrdiff_t nfull = n_out / VL * VL;
    ptrdiff_t n0 = 0;
    /* nv vectors of units at a time, then one (counts the compiler knows, so that the
     * sums stay in registers), then the tail */
    for (; n0 + nv * VL <= nfull; n0 += nv * VL)
        FN(gauss_runs_tile)(A + n0, lda, onoff, init, in, n_in, n0, out, n_out, nr, nv);
    for (; n0 < nfull; n0 += VL)
        FN(gauss_runs_tile)(A + n0, lda, onoff, init, in, n_in, n0, out, n_out, nr, 1);
    if (nfull < n_out)
        FN(gauss_runs_tile)(tail, VL, onoff, init, in, n_in, nfull, out, n_out, nr, 1);
}

static void FN(gauss_runs_product)(const T *restrict A, ptrdiff_t lda, int onoff,
                                   const T *restrict init,
                                   const T *restrict in, ptrdiff_t n_in, ptrdiff_t n_out,
                                   int nr, T *restrict out, const T *restrict tail) {
    /* about GAUSS_RUN_VECS sums in registers, whatever nr */
#define GAUSS_RUNS_CASE(k, nv)                                                            \
    case k:                                                                               \
        FN(gauss_runs_all)(A, lda, onoff, init, in, n_in, n_out, out, tail, k, nv);       \
        break
    switch (nr) {
        GAUSS_RUNS_CASE(1, GAUSS_RUN_VECS);
        GAUSS_RUNS_CASE(2, GAUSS_RUN_VECS / 2);
        GAUSS_RUNS_CASE(3, GAUSS_RUN_VECS / 4);
        GAUSS_RUNS_CASE(4, GAUSS_RUN_VECS / 4);
        GAUSS_RUNS_CASE(5, GAUSS_RUN_VECS / 8);
        GAUSS_RUNS_CASE(6, GAUSS_RUN_VECS / 8);
        GAUSS_RUNS_CASE(7, GAUSS_RUN_VECS / 8);
    default:
        FN(gauss_runs_all)(A, lda, onoff, init, in, n_in, n_out, out, tail, 8,
                           GAUSS_RUN_VECS / 8);
        break;
    }
#undef GAUSS_RUNS_CASE
}

/* x = c + W^T (v / s) */
CYRBM_INLINE void UF(unit_hidden_inputs)(UF(unit) *C, ptrdiff_t k, int fresh) {
    const ptrdiff_t D = C->D;
    ptrdiff_t i;
    int g;
    (void)k;
    (void)fresh;
    for (i = 0; i < D; i++) {
        const VT si = BC_T(C->s[i]);
        for (g = 0; g < GAUSS_GV; g++)
            VSTORE(C->a + i * GAUSS_GL + g * VL, VLOAD(C->vt + i * GAUSS_GL + g * VL) / si);
    }
    if (C->n <= GAUSS_RUN_MAX) {
        FN(gauss_runs_product)(C->W, C->M, 0, C->c, C->a, D, C->M, C->n, C->x, C->tailW);
    } else {
        FN(gauss_product)(C->W, C->M, 0, C->c, C->a, D, 0, C->M, C->x);
    }
}

/* the model's p(h | v) = sigma(x), as cyrbm_gauss_hidden has it (the same product, the
 * same logistic), through ht before the draws fill it */
CYRBM_INLINE void UF(unit_hidden_probs)(UF(unit) *C, const cyrbm_gibbs_runs *S, ptrdiff_t b0,
                                        int n) {
    T *p = (T *)S->p;
    const ptrdiff_t M = C->M;
    ptrdiff_t j;
    int l, g;
    for (j = 0; j < M; j++)
        for (g = 0; g < GAUSS_GV; g++)
            VSTORE(C->ht + j * GAUSS_GL + g * VL, VSIG(VLOAD(C->x + j * GAUSS_GL + g * VL)));
    for (l = 0; l < n; l++)
        for (j = 0; j < M; j++) p[(b0 + l) * M + j] = C->ht[j * GAUSS_GL + l];
}

/* per float64 vector of lanes: the log weight, then the hidden draws */
CYRBM_INLINE void UF(unit_hidden_draws)(UF(unit) *C, double beta, double prev, int weights) {
    const ptrdiff_t D = C->D, M = C->M;
    const T *b = C->b;
    const double *mu = C->mu, *rsd = C->rsd, *rs = C->rs;
    uint64_t *st = C->st;
    const T *vt = C->vt, *x = C->x;
    T *ht = C->ht;
    ptrdiff_t i, j;
    int g;
    for (g = 0; g < GAUSS_GD; g++) {
        vq s0 = ld_q(st + g * VLD), s1 = ld_q(st + GAUSS_GL + g * VLD);
        vq s2 = ld_q(st + 2 * GAUSS_GL + g * VLD);
        vq s3 = ld_q(st + 3 * GAUSS_GL + g * VLD);
        vd q = BCD(0.0), pos = BCD(0.0), logs = BCD(0.0);
        vd prodk = BCD(1.0), prodp = BCD(1.0);
        if (weights) {
            for (i = 0; i < D; i++) {
                const vd vi = VLOADD(vt + i * GAUSS_GL + g * VLD);
                const vd dA = (vi - mu[i]) * rsd[i], dB = (vi - (double)b[i]) * rs[i];
                q = q + 0.5 * (dA * dA - dB * dB);
            }
        }
        for (j = 0; j < M; j++) {
            const vd xj = VLOADD(x + j * GAUSS_GL + g * VLD), y = beta * xj;
            const vd ax = ASD(ASQ(xj) & ~(vq){0} >> 1);   /* |x_j| */
            const vd e = vexp_d(BCD(0.0) - beta * ax);
            vd uu;
            vq on;
            if (weights) {
                pos = pos + ASD(~MASKQ(xj < 0.0) & ASQ(xj));
                prodk = prodk * (1.0 + e);
                /* e^-prev|x| = e e^d, d = (beta - prev) |x|: a lane with |d| <= 1/64
                 * takes the series (vexp_small_d), any other the full exp, so that a
                 * lane's bits are its own whatever shares its vector */
                const vd d = (beta - prev) * ax;
                const vq wide = MASKQ(ASD(ASQ(d) & ~(vq){0} >> 1) > 0.015625);
                vd ep = e * vexp_small_d(d);
                if (mask_bits_d(wide))
                    ep = ASD((wide & ASQ(vexp_d(BCD(0.0) - prev * ax))) | (~wide & ASQ(ep)));
                prodp = prodp * (1.0 + ep);
                if ((j & 63) == 63 || j == M - 1) {
                    logs = logs + (vlog_d(prodk) - vlog_d(prodp));
                    prodk = BCD(1.0);
                    prodp = BCD(1.0);
                }
            }
            GAUSS_U53(s0, s1, s2, s3, uu);
            on = CYRBM_DRAW_D(uu, y, e);
            VSTORED(ht + j * GAUSS_GL + g * VLD, ASD(on & ASQ(BCD(1.0))));
        }
        if (weights) {
            const vd add = (beta - prev) * (q + pos) + logs;
            st_d(C->lw + g * VLD, ld_d(C->lw + g * VLD) + add);
        }
        st_q(st + g * VLD, s0);
        st_q(st + GAUSS_GL + g * VLD, s1);
        st_q(st + 2 * GAUSS_GL + g * VLD, s2);
        st_q(st + 3 * GAUSS_GL + g * VLD, s3);
    }
}

/* u = W h: a block's lanes through W's rows; a partial block's runs side by side through
 * W^T's rows when the pair gives W^T (P->Wt) (the same bits) */
CYRBM_INLINE void UF(unit_visible_inputs)(UF(unit) *C) {
    if (C->Wt != NULL && C->n <= GAUSS_RUN_MAX) {
        FN(gauss_runs_product)(C->Wt, C->D, 1, NULL, C->ht, C->M, C->D, C->n, C->u,
                               C->tailWt);
    } else {
        FN(gauss_product)(C->W, C->M, 1, NULL, C->ht, C->M, 0, C->D, C->u);
    }
}

/* each v_i from its Gaussian conditional: precision lam_i = (1 - beta) / sd_i^2 +
 * beta / s_i^2, mean ((1 - beta) mu_i / sd_i^2 + beta (b_i / s_i^2 + u_i / s_i)) / lam_i:
 * v_i = A_i + B_i u_i + C_i z (at beta = 1: A = b, B = C = s) */
CYRBM_INLINE void UF(unit_visible_draw)(UF(unit) *C, double beta) {
    const ptrdiff_t D = C->D;
    const T *b = C->b, *s = C->s;
    const double *mu = C->mu, *sd = C->sd;
    double *cA = C->cA, *cB = C->cB, *cC = C->cC;
    ptrdiff_t i = 0;
    if (beta == 1.0) {
        for (i = 0; i < D; i++) {
            cA[i] = (double)b[i];
            cB[i] = cC[i] = (double)s[i];
        }
    } else {
        /* a float64 vector of units at a time, then one at a time: the same operations,
         * each correctly rounded (division and sqrt too), so the same bits */
        for (; i + VLD <= D; i += VLD) {
            const vd si = VLOADD(s + i), sdi = ld_d(sd + i);
            const vd pa = (1.0 - beta) / (sdi * sdi);
            const vd lam = pa + beta / (si * si);
            st_d(cA + i, (pa * ld_d(mu + i) + beta * VLOADD(b + i) / (si * si)) / lam);
            st_d(cB + i, beta / (si * lam));
            st_d(cC + i, 1.0 / vsqrt_d(lam));
        }
        for (; i < D; i++) {
            const double si = (double)s[i], pa = (1.0 - beta) / (sd[i] * sd[i]);
            const double lam = pa + beta / (si * si);
            cA[i] = (pa * mu[i] + beta * (double)b[i] / (si * si)) / lam;
            cB[i] = beta / (si * lam);
            cC[i] = 1.0 / sqrt(lam);
        }
    }
    FN(gauss_draw_visible)(C->st, C->vt, D, cA, cB, cC, C->u);
}

#undef GAUSS_GL
#undef GAUSS_GV
#undef GAUSS_GD
#undef GAUSS_TILE
#undef GAUSS_GROWS
#undef GAUSS_GCOLS
#undef GAUSS_FMA
#undef GAUSS_AHEAD
#undef GAUSS_U53
#undef GAUSS_NORMAL2
#undef GAUSS_RUN_MAX
#undef GAUSS_RUN_VECS
