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
