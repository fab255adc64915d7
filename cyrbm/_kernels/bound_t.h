/* The per-row terms of the DBN variational bound (Salakhutdinov & Murray 2008, Eq. 19-24)
 * and of the factorial recognition model Q, once per parameter type (float_t.h), included
 * from gibbs.c.
 *
 * A row holds the pre-activations a_0 .. a_{n-1} of one factorial binary layer, whose
 * units are on with probability sigma(a_j) (SM08 Eq. 5-6).  For 0/1 states h of that layer
 *   ln P(h)  = sum_j h_j a_j - sum_j softplus(a_j)
 *   H(P)     = sum_j softplus(a_j) - sum_j sigma(a_j) a_j          (the entropy)
 * and the kernel returns the three sums.  softplus(a) = max(a, 0) + ln(1 + e), sigma(a) =
 * (a < 0 ? e : 1) / (1 + e), e = exp(-|a|) from vmath.h; the logarithms are taken of
 * products of (1 + e) over blocks of 128 units (a log per block: not the AIS kernels'
 * softplus sum, cyrbm_ak_softplus_sum, which keeps one rescaled product and so gives
 * other bits; the bound's results are made with this one, so both stay).  Unit j is in
 * logical lane j % 8 of 64 bytes (NQD native vectors), and the lanes are combined in the order 0..7, so every
 * variant gives the same bits.  Sums are in float64 whatever T is. */

#include <math.h>

#define CYRBM_BR_PAD (-1000.0)   /* pre-activation of lanes past the row: adds 0 to every sum */

/* a: n pre-activations (IN), summed in float64.
 * rng: draw h_j = [U_j < sigma(a_j)], U_j = cyrbm_rng_uniform, one draw per unit in unit
 * order (the draws of cyrbm_bernoulli_*), writing the 0/1 bytes h (OUT); or
 * NULL: h holds given 0/1 bytes (IN), or is NULL too (then sums[0] = 0).
 * full: bit 1 also sums[0], bit 2 also sums[2] (else they are 0).
 * sums (OUT): [0] sum_j h_j a_j, [1] sum_j softplus(a_j), [2] sum_j sigma(a_j) a_j. */
void FN(cyrbm_bern_row)(const T *restrict a, ptrdiff_t n,
                        cyrbm_rng *rng, uint8_t *restrict h,
                        int full, double *restrict sums) {
    double ad[8], hd[8], ud[8];
    double hx = 0.0, relu = 0.0, lg = 0.0, sa = 0.0;
    ptrdiff_t b0, j0;
    int l, q;
    for (b0 = 0; b0 < n; b0 += 128) {
        const ptrdiff_t b1 = b0 + 128 < n ? b0 + 128 : n;
        vd vhx[NQD], vrl[NQD], vpr[NQD], vsa[NQD];
        double prod = 1.0;
        for (q = 0; q < NQD; q++) {
            vhx[q] = vrl[q] = vsa[q] = BCD(0.0);
            vpr[q] = BCD(1.0);
        }
        for (j0 = b0; j0 < b1; j0 += 8) {
            const int nv = b1 - j0 < 8 ? (int)(b1 - j0) : 8;
            const int whole = nv == 8;      /* else the row's tail, through ad / hd */
            if (!whole) {
                for (l = 0; l < nv; l++) ad[l] = (double)a[j0 + l];
                for (; l < 8; l++) ad[l] = CYRBM_BR_PAD;
            }
            if (rng == NULL && h != NULL && (full & 1)) {
                for (l = 0; l < nv; l++) hd[l] = (double)h[j0 + l];
                for (; l < 8; l++) hd[l] = 0.0;
            }
            if (rng != NULL) {
                for (l = 0; l < nv; l++) ud[l] = cyrbm_rng_uniform(rng);
                for (; l < 8; l++) ud[l] = 2.0;
            }
            for (q = 0; q < NQD; q++) {
                vd x, na, e, num, hv = BCD(0.0);
                vq pos;
                x = whole ? VLOADD(a + j0 + q * VLD) : ld_d(ad + q * VLD);
                na = ASD(ASQ(x) | 0x8000000000000000ULL);     /* -|x| */
                e = vexp_d(na);
                pos = MASKQ(x >= 0.0);
                vrl[q] += ASD(MASKQ(x > 0.0) & ASQ(x));
                vpr[q] *= 1.0 + e;
                num = SELD(pos, BCD(1.0), e);
                if (rng != NULL) {
                    const vd u = ld_d(ud + q * VLD);
                    hv = ASD(CYRBM_DRAW_D(u, x, e) & ASQ(BCD(1.0)));
                    st_d(hd + q * VLD, hv);
                } else if (h != NULL && (full & 1)) {
                    hv = ld_d(hd + q * VLD);
                }
                if (full & 1) vhx[q] += hv * x;
                if (full & 2) vsa[q] += (num / (1.0 + e)) * x;
            }
            if (rng != NULL)
                for (l = 0; l < nv; l++) h[j0 + l] = (uint8_t)(hd[l] != 0.0);
        }
        for (l = 0; l < 8; l++) {
            hx += LANE(vhx[l / VLD], l % VLD);
            relu += LANE(vrl[l / VLD], l % VLD);
            sa += LANE(vsa[l / VLD], l % VLD);
            prod *= LANE(vpr[l / VLD], l % VLD);
        }
        lg += log(prod);
    }
    sums[0] = hx;
    sums[1] = relu + lg;
    sums[2] = sa;
}

#undef CYRBM_BR_PAD
