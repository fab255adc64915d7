/* The one Gibbs driver of a visible layer's unit type (SM08 Eq. 13-18 on the path
 * between a base A of independent visible units and the model B; at beta = 1 plain block
 * Gibbs sampling and the CD / PCD chains), written once over the unit-type protocol
 * below and included once per (float type x unit type): after float_t.h and the unit
 * type's header, which defines the protocol (anneal.c: unit_gauss_t.h, per instruction
 * set; common.c: unit_srbm_t.h, compiled once).  The binary RBM's engine (anneal_t.h)
 * is not an instance: see docs/architecture.md, "The unit types in C".
 *
 * The schedule, for each block of UNIT_LANES runs r0 <= r < r1 and each step k0 <= k < k1:
 * step 0 is the exact draw of v from the base; a step k >= 1 takes the hidden inputs
 * x = c + W^T f(v) of the current v, p(h | v) = sigma(x) at step S->p_step when S->p is
 * given, then with `weights` the log weight ln p*_k(v) - ln p*_{k-1}(v) (the visible
 * layer's energy and the hidden layer's softplus terms) and h ~ p_k(h | v), then the
 * visible inputs u = W h and v ~ p_k(v | h).
 *
 * The protocol (UF(x): the unit type's name for x, e.g. x_gauss_f32_avx2):
 *   UNIT_LANES      runs of a block, moved together (the Gaussian units: one run per
 *                   vector lane; the lateral ones: one run at a time)
 *   UNIT_PAIR       the parameters (kernels.h: cyrbm_gauss_pair, cyrbm_srbm_pair)
 *   UF(unit)        the per-call state: parameters, scratch, the block's states
 *   UF(unit_begin)(C, P, work)         lay the scratch out, per-call constants
 *   UF(unit_load)(C, S, b0, n)         the block of runs b0 .. b0 + n - 1 in
 *   UF(unit_store)(C, S, b0, n, drew_h) the block out (h only when a step drew it)
 *   UF(unit_base_draw)(C)              step 0: v from the base A
 *   UF(unit_hidden_inputs)(C, k, fresh) x = c + W^T f(v) (`fresh`: kept sums redone)
 *   UF(unit_hidden_probs)(C, S, b0, n) p(h | v) = sigma(x) into S->p
 *   UF(unit_hidden_draws)(C, beta, prev, weights)  log weight, h ~ p_beta(h | v)
 *   UF(unit_visible_inputs)(C)         u = W h
 *   UF(unit_visible_draw)(C, beta)     v ~ p_beta(v | h) */

void UF(cyrbm_gibbs)(const void *P, const cyrbm_gibbs_runs *S, ptrdiff_t r0, ptrdiff_t r1,
                     const double *betas, ptrdiff_t k0, ptrdiff_t k1, int weights,
                     void *work) {
    UF(unit) C;
    ptrdiff_t b0, k;
    UF(unit_begin)(&C, (const UNIT_PAIR *)P, work);
    for (b0 = r0; b0 < r1; b0 += UNIT_LANES) {
        const int n = (int)(r1 - b0 < UNIT_LANES ? r1 - b0 : UNIT_LANES);
        int drew_h = 0;
        UF(unit_load)(&C, S, b0, n);
        for (k = k0; k < k1; k++) {
            const double beta = betas[k];
            if (k == 0) {
                UF(unit_base_draw)(&C);
                continue;
            }
            UF(unit_hidden_inputs)(&C, k, k == k0 && S->fresh);
            if (S->p != NULL && k == S->p_step) UF(unit_hidden_probs)(&C, S, b0, n);
            UF(unit_hidden_draws)(&C, beta, betas[k - 1], weights);
            drew_h = 1;
            UF(unit_visible_inputs)(&C);
            UF(unit_visible_draw)(&C, beta);
        }
        UF(unit_store)(&C, S, b0, n, drew_h);
    }
}

#undef UF
#undef UNIT_LANES
#undef UNIT_PAIR
