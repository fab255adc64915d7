/* Mode-hopping proposals of AMH-p (Hu & Yu, "Learning RBMs using mode-hopping MCMC",
 * Sec. 4, Eq. 6-7) for one chain, once per parameter type T (float_t.h).  Included from
 * gibbs.c after both types' gibbs_t.h and bound_t.h: it is made of their row sums
 * (cyrbm_add_rows), the softplus sum of a factorial row (cyrbm_bern_row) and the
 * Bernoulli draws of common.c; the proposal kernels are float64 whatever T is.
 *
 * The proposal kernels of a mode set of L modes m_i (cyrbm.modehop.ModeSet), with
 * a_i = b + W h*_i, h*_i = argmax_h P(h | m_i), g~(i, v) = prod_d sigma(a_id)^v_d
 * (1 - sigma(a_id))^(1 - v_d):
 *   P   (L x D)  sigma(a_i), the draws' probabilities
 *   AT  (D x L)  A transposed: sum_{d: v_d = 1} AT[d, :] = (v.a_i)_i for all modes at once
 *   sp  (L)      sum_d softplus(a_id), so ln g~(i, v) = v.a_i - sp_i
 *   logH, Hp (L x L)  ln H(i, j) (-inf on the diagonal) and H(i, j)
 * A hop from v: i ~ g^(v, .) = g~(., v) / sum_k g~(k, v) (Eq. 7, p(i) = 1 / L),
 * j ~ H(i, .), v' ~ g~(j, .), accepted with probability Eq. 6,
 *   min{1, P*(v') g^(v', j) H(j, i) g~(i, v) / (P*(v) g^(v, i) H(i, j) g~(j, v'))},
 * ln P*(v) = b.v + sum_k softplus(c_k + (W^T v)_k) (SM08 Eq. 2).  Every term is the same
 * function of its state and mode in both directions, so the move keeps P invariant.
 * Random numbers come from the chain's stream in this order: the pick of i, of j, the
 * acceptance uniform, then v' (cyrbm_bernoulli_f64: D draws, one per unit in unit
 * order): the order of the NumPy reference (tests/_reference.py). */

#define AMH_ROWS_D CYRBM_K(cyrbm_add_rows_f64)

/* ln P*(v) from the active units of v (x: scratch of M elements) */
CYRBM_INLINE double FN(cyrbm_amh_log_pstar)(const T *W, const T *b, const T *c, ptrdiff_t M,
                                            const int32_t *on, int32_t n_on, T *x) {
    double bv = 0.0, s[3];
    int32_t k;
    memcpy(x, c, (size_t)M * sizeof(T));
    FN(cyrbm_add_rows)(x, W, M, on, n_on, M);
    for (k = 0; k < n_on; k++) bv += (double)b[on[k]];
    FN(cyrbm_bern_row)(x, M, NULL, NULL, 0, s);
    return bv + s[1];
}

/* lg[i] = ln g~(i, v) for every mode, and ln of the normaliser of g^(v, .) (returned) */
CYRBM_INLINE double FN(cyrbm_amh_log_g)(const double *AT, const double *sp, ptrdiff_t L,
                                        const int32_t *on, int32_t n_on, double *lg) {
    double top, s = 0.0;
    ptrdiff_t i;
    memset(lg, 0, (size_t)L * sizeof(double));
    AMH_ROWS_D(lg, AT, L, on, n_on, L);
    top = lg[0] - sp[0];
    for (i = 0; i < L; i++) {
        lg[i] -= sp[i];
        if (lg[i] > top) top = lg[i];
    }
    for (i = 0; i < L; i++) s += cyrbm_exp_neg(lg[i] - top);
    return top + log(s);
}

/* The index drawn from weights w[0..L) (not all 0) by the inverse CDF at u */
CYRBM_INLINE ptrdiff_t FN(cyrbm_amh_pick)(const double *w, ptrdiff_t L, double u, double *cdf) {
    ptrdiff_t i, k = 0;
    double s = 0.0;
    for (i = 0; i < L; i++) cdf[i] = s += w[i];
    for (i = 0; i < L; i++) k += cdf[i] < u * s;
    return k < L - 1 ? k : L - 1;
}

/* One AMH proposal for the chain v (INOUT, D units), accepted by Eq. 6; returns 1 when
 * accepted (v then holds v').  work: scratch of 32 L + M sizeof(T) + 9 D bytes,
 * 8-byte aligned; terms (OUT, or NULL): the eight logarithms of Eq. 6, ln P*(v'), ln g^(v', j),
 * ln H(j, i), ln g~(i, v), ln P*(v), ln g^(v, i), ln H(i, j), ln g~(j, v'). */
int FN(cyrbm_amh_hop)(const T *W, const T *b, const T *c, ptrdiff_t D, ptrdiff_t M,
                      const double *P, const double *AT, const double *sp, const double *logH,
                      const double *Hp, ptrdiff_t L, uint8_t *v, cyrbm_rng *rng, void *work,
                      double *terms) {
    double *lg = (double *)work, *lgn = lg + L, *w = lgn + L, *cdf = w + L;
    T *x = (T *)(cdf + L);                       /* M */
    int32_t *on = (int32_t *)(x + M), *onn = on + D;
    uint8_t *vn = (uint8_t *)(onn + D);          /* D: v' */
    const double u_i = cyrbm_rng_uniform(rng), u_j = cyrbm_rng_uniform(rng);
    const double u_a = cyrbm_rng_uniform(rng);
    double norm, normn, t[8], log_r;
    ptrdiff_t i, j, k;
    int32_t n_on, n_onn;
    n_on = cyrbm_active_units(v, D, on);
    norm = FN(cyrbm_amh_log_g)(AT, sp, L, on, n_on, lg);
    for (k = 0; k < L; k++) w[k] = cyrbm_exp_neg(lg[k] - norm);
    i = FN(cyrbm_amh_pick)(w, L, u_i, cdf);
    j = FN(cyrbm_amh_pick)(Hp + i * L, L, u_j, cdf);
    n_onn = cyrbm_bernoulli_f64(P + j * D, D, rng, vn, onn);
    normn = FN(cyrbm_amh_log_g)(AT, sp, L, onn, n_onn, lgn);
    t[0] = FN(cyrbm_amh_log_pstar)(W, b, c, M, onn, n_onn, x);
    t[1] = lgn[j] - normn;
    t[2] = logH[j * L + i];
    t[3] = lg[i];
    t[4] = FN(cyrbm_amh_log_pstar)(W, b, c, M, on, n_on, x);
    t[5] = lg[i] - norm;
    t[6] = logH[i * L + j];
    t[7] = lgn[j];
    if (terms != NULL) memcpy(terms, t, sizeof t);
    log_r = ((t[0] + t[1]) + (t[2] + t[3])) - ((t[4] + t[5]) + (t[6] + t[7]));
    if (!(log(u_a > 1e-300 ? u_a : 1e-300) < log_r)) return 0;
    memcpy(v, vn, (size_t)D);
    return 1;
}

#undef AMH_ROWS_D
