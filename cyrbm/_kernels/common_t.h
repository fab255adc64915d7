/* The typed kernels with no vector code (compiled once, in common.c), for one parameter
 * type T: included through float_t.h once per type. */

/* Bernoulli draws for one chain: unit u is on when U_u < p[u], U_u = cyrbm_rng_uniform
 * (53 bits) whatever the precision of p, so float32 and float64 runs with one seed see
 * the same numbers; the lists are written without a branch (see kernels.h). */
int32_t TN(cyrbm_bernoulli)(const T *restrict p, ptrdiff_t n, cyrbm_rng *rng,
                            uint8_t *restrict state, int32_t *restrict idx) {
    int32_t c = 0;
    ptrdiff_t u;
    for (u = 0; u < n; u++) {
        const int on = cyrbm_rng_bernoulli(rng, (double)p[u]);
        if (state) state[u] = (uint8_t)on;
        if (idx) idx[c] = (int32_t)u;
        c += on;
    }
    return c;
}

/* y = L v exactly (the lateral field of every visible unit), summed over the active
 * units in ascending order; L symmetric, so row i of L is its column i. */
static void TN(cyrbm_srbm_field)(const T *restrict L, const uint8_t *restrict v,
                                 ptrdiff_t D, double *restrict y) {
    ptrdiff_t i, l;
    for (l = 0; l < D; l++) y[l] = 0.0;
    for (i = 0; i < D; i++)
        if (v[i]) {
            const T *row = L + i * D;
            for (l = 0; l < D; l++) y[l] += (double)row[l];
        }
}

/* Steps k0 <= k < k1 of one run between the base A and the semi-restricted Boltzmann
 * machine B of P (kernels.h: cyrbm_srbm_pair; Osindero & Hinton 2008, MS09 Sec. 5.2,
 * SM08 Eq. 13-18).  Step 0 draws v exactly from A (v_i ~ Bernoulli(sigma(bA_i))).  A
 * step k >= 1 first adds, with `weights`, ln p*_k(v) - ln p*_{k-1}(v) =
 * (beta_k - beta_{k-1}) (b.v + v^T L v / 2 - bA.v) + sum_j [softplus(beta_k x_j) -
 * softplus(beta_{k-1} x_j)] to *logw, then moves v by T_k, which leaves p_k invariant:
 * h_j ~ Bernoulli(sigma(beta_k x_j)), x = c + W^T v, all at once; then v_i, i = 0 .. D-1
 * in turn, ~ Bernoulli(sigma((1 - beta) bA_i + beta (b_i + (W h)_i + y_i))), y = L v of
 * the current v.  y is kept up to date by the flips (unit i turning on adds row i of L,
 * turning off subtracts it: O(D) a flip, not O(D) a unit), recomputed exactly when
 * `fresh` at k0 and at every step k that is a multiple of CYRBM_SRBM_REFRESH (so pieces
 * of a run give the one call's bits).  Sums in float64, in unit order; draws from the
 * run's own chain stream (cyrbm_rng_bernoulli, in unit order), so a run's numbers depend
 * on its stream alone.  y: D doubles (INOUT, L v of v); x: scratch of M + D doubles. */
#ifndef CYRBM_SRBM_REFRESH
#define CYRBM_SRBM_REFRESH 128
#endif
void TN(cyrbm_srbm_steps)(const cyrbm_srbm_pair *P, uint8_t *restrict v, uint8_t *restrict h,
                          double *restrict y, double *restrict x, const double *betas,
                          ptrdiff_t k0, ptrdiff_t k1, int weights, int fresh, cyrbm_rng *rng,
                          double *logw) {
    /* the lateral unit type's instance of the one Gibbs driver (unit_gibbs_t.h over
     * unit_srbm_t.h, included after this file), on the one run given */
    const cyrbm_gibbs_runs S = {.v = v, .h = h, .streams = rng, .logw = logw, .y = y,
                                .fresh = fresh};
    TN(cyrbm_gibbs_srbm)(P, &S, 0, 1, betas, k0, k1, weights, x);
}
