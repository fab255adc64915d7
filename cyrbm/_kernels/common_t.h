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

/* Steps k0 <= k < k1 of one run between the base A and the Gaussian-visible RBM B of P
 * (kernels.h: cyrbm_gauss_pair; MS09 Sec. 5.2, SM08 Eq. 13-18).  Step 0 draws v exactly
 * from A (v_i = mu_i + sd_i z).  A step k >= 1 first adds, with `weights`,
 * ln p*_k(v) - ln p*_{k-1}(v) to *logw, then moves v by T_k, which leaves p_k invariant:
 * h_j ~ Bernoulli(sigma(beta_k x_j)), x = c + W^T (v / s), then each v_i from its
 * Gaussian conditional, of precision lam_i = (1 - beta)/sd_i^2 + beta/s_i^2 and mean
 * ((1 - beta) mu_i/sd_i^2 + beta (b_i/s_i^2 + (W h)_i/s_i)) / lam_i (at beta = 1:
 * b_i + s_i (W h)_i, sd s_i).  Sums in float64, in unit order; draws from the run's own
 * chain stream (cyrbm_rng_bernoulli for h, cyrbm_rng_normal for v, in unit order), so a
 * run's numbers depend on its stream alone.  x: scratch of M doubles. */
void TN(cyrbm_gauss_steps)(const cyrbm_gauss_pair *P, T *restrict v, uint8_t *restrict h,
                           double *restrict x, const double *betas, ptrdiff_t k0,
                           ptrdiff_t k1, int weights, cyrbm_rng *rng, double *logw) {
    const T *W = (const T *)P->W, *b = (const T *)P->b, *c = (const T *)P->c;
    const T *s = (const T *)P->s;
    const double *mu = P->mu, *sd = P->sd;
    const ptrdiff_t D = P->D, M = P->M;
    ptrdiff_t k, i, j;
    for (k = k0; k < k1; k++) {
        const double beta = betas[k];
        double lw = 0.0;
        if (k == 0) {
            for (i = 0; i < D; i++) v[i] = (T)(mu[i] + sd[i] * cyrbm_rng_normal(rng));
            continue;
        }
        for (j = 0; j < M; j++) x[j] = (double)c[j];
        for (i = 0; i < D; i++) {
            const double vi = (double)v[i] / (double)s[i];
            const T *row = W + i * M;
            for (j = 0; j < M; j++) x[j] += (double)row[j] * vi;
        }
        if (weights) {
            double q = 0.0;
            for (i = 0; i < D; i++) {
                const double dA = ((double)v[i] - mu[i]) / sd[i];
                const double dB = ((double)v[i] - (double)b[i]) / (double)s[i];
                q += 0.5 * (dA * dA - dB * dB);
            }
            lw = (beta - betas[k - 1]) * q;
        }
        cyrbm_hidden_half(x, M, beta, betas[k - 1], weights, lw, logw, rng, h);
        for (i = 0; i < D; i++) {
            const T *row = W + i * M;
            const double si = (double)s[i], pa = (1.0 - beta) / (sd[i] * sd[i]);
            double u = 0.0, lam, m;
            for (j = 0; j < M; j++)
                if (h[j]) u += (double)row[j];
            lam = pa + beta / (si * si);
            m = (pa * mu[i] + beta * ((double)b[i] / (si * si) + u / si)) / lam;
            v[i] = (T)(m + cyrbm_rng_normal(rng) / sqrt(lam));
        }
    }
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
    const T *W = (const T *)P->W, *b = (const T *)P->b, *c = (const T *)P->c;
    const T *L = (const T *)P->L;
    const double *bA = P->bA;
    const ptrdiff_t D = P->D, M = P->M;
    double *u = x + M;
    ptrdiff_t k, i, j, l;
    for (k = k0; k < k1; k++) {
        const double beta = betas[k];
        double lw = 0.0;
        if (k == 0) {
            for (i = 0; i < D; i++) v[i] = (uint8_t)cyrbm_rng_bernoulli(rng, cyrbm_sigmoid(bA[i]));
            TN(cyrbm_srbm_field)(L, v, D, y);
            continue;
        }
        if ((k == k0 && fresh) || k % CYRBM_SRBM_REFRESH == 0) TN(cyrbm_srbm_field)(L, v, D, y);
        for (j = 0; j < M; j++) x[j] = (double)c[j];
        for (i = 0; i < D; i++)
            if (v[i]) {
                const T *row = W + i * M;
                for (j = 0; j < M; j++) x[j] += (double)row[j];
            }
        if (weights) {
            double q = 0.0;
            for (i = 0; i < D; i++)
                if (v[i]) q += (double)b[i] + 0.5 * y[i] - bA[i];
            lw = (beta - betas[k - 1]) * q;
        }
        cyrbm_hidden_half(x, M, beta, betas[k - 1], weights, lw, logw, rng, h);
        for (i = 0; i < D; i++) {
            const T *row = W + i * M;
            double s = 0.0;
            for (j = 0; j < M; j++)
                if (h[j]) s += (double)row[j];
            u[i] = s;
        }
        for (i = 0; i < D; i++) {
            const double a = (1.0 - beta) * bA[i] + beta * ((double)b[i] + u[i] + y[i]);
            const uint8_t on = (uint8_t)cyrbm_rng_bernoulli(rng, cyrbm_sigmoid(a));
            if (on != v[i]) {                  /* a flip moves every other unit's field */
                const T *row = L + i * D;
                v[i] = on;
                if (on)
                    for (l = 0; l < D; l++) y[l] += (double)row[l];
                else
                    for (l = 0; l < D; l++) y[l] -= (double)row[l];
            }
        }
    }
}
