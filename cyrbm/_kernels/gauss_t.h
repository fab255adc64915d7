/* The Gaussian visible layer of the engine (MS09 Sec. 5.2; SM08 Eq. 13-18 with Gaussian
 * visible units), for one parameter type T: included through float_t.h once per type
 * from anneal.c, so compiled once per instruction set (see kernels.h, cyrbm_gauss_pair).
 *
 * Runs go in blocks of CYRBM_GAUSS_LANES = 16 chains, one chain per lane: a block's
 * states are kept transposed (unit-major, 16 lanes of a unit side by side), so that
 *   x_j = c_j + sum_i W_ij (v_i / s_i)    and    u_i = sum_j W_ij h_j
 * are dense products (real-valued v has no flips to follow) in which each weight W_ij,
 * loaded once and broadcast, serves the 16 chains, several hidden units (x) or visible
 * units (u) at a time in registers.  Each lane's sum runs over i (for x) or j (for u) in
 * ascending order, one fused multiply-add a term (simd.h's vfma_*: one rounding, in every
 * variant; contraction is otherwise off), so a chain's numbers depend neither on the
 * vector width nor on which chains share its block.  u reads the rows of W (masked
 * adds); a partial block of at most 8 chains takes both products with its chains side
 * by side over the units instead (unit_gauss_t.h, gauss_runs_product: the same terms in
 * the same order), u then from W^T's rows when the caller gives W^T (P->Wt).
 *
 * Random numbers: lane l is chain r's own stream (cyrbm_rng, four words), advanced as
 * vectors of 64-bit lanes; in a step each chain draws, in this order, one u53 uniform per
 * hidden unit (h_j = 1 when U < sigma(beta x_j): simd.h's draw from log-odds) and two per
 * pair of visible units 2i, 2i + 1 (their normals, Box-Muller's cosine and sine:
 * z_2i = r cos(2 pi U2), z_2i+1 = r sin(2 pi U2), r = sqrt(-2 ln(1 - U1)), vmath.h's ln,
 * cos and sin in float64; an odd last unit takes the cosine).  The log weight of step k,
 *   ln p*_k(v) - ln p*_{k-1}(v) = (beta_k - beta_{k-1}) (q(v) + sum_j max(x_j, 0))
 *       + sum_j [ln(1 + e^-beta_k|x_j|) - ln(1 + e^-beta_{k-1}|x_j|)],
 * q(v) = sum_i ((v_i - mu_i)^2 / sd_i^2 - (v_i - b_i)^2 / s_i^2) / 2, takes each sum of
 * logs as the log of a product over 64 units at a time (factors in [1, 2]): two logs per
 * 64 units; e^-beta_{k-1}|x_j| = e^-beta_k|x_j| e^d, d = (beta_k - beta_{k-1}) |x_j|, by
 * the series of vmath.h's vexp_small_d when |d| <= 1/64 (the lane's own test), else a
 * full exp.  All of it in float64 per lane. */

#define GAUSS_GL CYRBM_GAUSS_LANES
#define GAUSS_GV (GAUSS_GL / VL)        /* native T vectors per block row */
#define GAUSS_GD (GAUSS_GL / VLD)       /* native float64 vectors per block row */
/* hidden (x) or visible (u) units per register tile: 16 accumulator vectors with
 * AVX-512's 32 registers (x then takes a whole 64-byte line of a row of W at a time),
 * about 8 with 16 */
#define GAUSS_TILE (CYRBM_VBYTES == 64 ? 16 / GAUSS_GV : GAUSS_GV >= 8 ? 1 : 8 / GAUSS_GV)
/* the weight gradient's register tile: GAUSS_GROWS rows times GAUSS_GCOLS vectors of
 * columns, twice (data and chains): 24 accumulators with AVX-512's 32 registers (one
 * vector of columns, so that each a_ni feeds one multiply that broadcasts it from
 * memory), 8 with 16 */
#define GAUSS_GROWS (CYRBM_VBYTES == 64 ? 12 : 2)
#define GAUSS_GCOLS (CYRBM_VBYTES == 64 ? 1 : 2)

/* acc + w x for a lane vector x of 0 / 1 (the hidden states of u = W h): with AVX-512 an
 * add of w in the lanes where x is 1 (one instruction), elsewhere w x added; the same
 * bits, since w 1 = w and acc + (+-0) = acc (acc starts at +0 and is never -0). */
CYRBM_INLINE VT FN(gauss_add_on)(VT acc, T w, VT x) {
#if defined(CYRBM_ISA_AVX512) && CYRBM_FT == 32
    return (VT)_mm512_mask_add_ps((__m512)acc, _mm512_cmpneq_ps_mask((__m512)x, _mm512_setzero_ps()),
                                  (__m512)acc, _mm512_set1_ps(w));
#elif defined(CYRBM_ISA_AVX512)
    return (VT)_mm512_mask_add_pd((__m512d)acc, _mm512_cmpneq_pd_mask((__m512d)x, _mm512_setzero_pd()),
                                  (__m512d)acc, _mm512_set1_pd(w));
#else
    return acc + w * x;
#endif
}

/* acc + w x with one rounding, w a scalar: the products' one multiply-add (simd.h's vfma_*, the same
 * bits in every variant) */
#if CYRBM_FT == 32
#define GAUSS_FMA(w, x, acc) vfma_f(vsplat_f(w), x, acc)
#else
#define GAUSS_FMA(w, x, acc) vfma_d(vsplat_d(w), x, acc)
#endif
/* rows of A read ahead of the one in use by the product's prefetches (4 rows ahead: the
 * hardware's prefetchers do not follow a stride of a whole row of W) */
#define GAUSS_AHEAD 4

/* GAUSS_TILE (or, R = 1, one) output units n .. n + R - 1 of gauss_product */
CYRBM_INLINE void FN(gauss_product_tile)(const T *restrict A, ptrdiff_t lda, int rowwise,
                                         const T *restrict init, const T *restrict in,
                                         ptrdiff_t n_in, ptrdiff_t n, int R, T *restrict out) {
    VT acc[GAUSS_TILE][GAUSS_GV];
    ptrdiff_t m;
    int t, g;
    for (t = 0; t < R; t++)
        for (g = 0; g < GAUSS_GV; g++) acc[t][g] = BC_T(init ? init[n + t] : (T)0);
    for (m = 0; m < n_in; m++) {
        VT x[GAUSS_GV];
        for (g = 0; g < GAUSS_GV; g++) x[g] = VLOAD(in + m * GAUSS_GL + g * VL);
        if (rowwise) {
            for (t = 0; t < R; t++)
                for (g = 0; g < GAUSS_GV; g++)
                    acc[t][g] = FN(gauss_add_on)(acc[t][g], A[(n + t) * lda + m], x[g]);
        } else {
            const T *a = A + m * lda + n;           /* R weights side by side */
            CYRBM_PREFETCH(a + GAUSS_AHEAD * lda);
            for (t = 0; t < R; t++)                 /* (a broadcast load each) */
                for (g = 0; g < GAUSS_GV; g++) acc[t][g] = GAUSS_FMA(a[t], x[g], acc[t][g]);
        }
    }
    for (t = 0; t < R; t++)
        for (g = 0; g < GAUSS_GV; g++) VSTORE(out + (n + t) * GAUSS_GL + g * VL, acc[t][g]);
}

/* out[n * GL + l] = init[n] + sum_{m < n_in} A(n, m) in[m * GL + l] for n0 <= n < n1, each
 * lane's terms in ascending m, one fused multiply-add a term (GAUSS_FMA); A(n, m) =
 * A[m * lda + n] (x: A = W, lda = M; u: A = W^T, lda = D) or A[n * lda + m] (u: A = W,
 * lda = M, `rowwise`, `in` 0 / 1: gauss_add_on, the same bits as W^T's: w 1 + acc and
 * w 0 + acc = acc are exact before the rounding); init NULL: 0.  Tiles of GAUSS_TILE
 * units; a last, partial tile is moved back to end at n1 (its first units computed
 * twice, to the same bits). */
static void FN(gauss_product)(const T *restrict A, ptrdiff_t lda, int rowwise,
                              const T *restrict init, const T *restrict in, ptrdiff_t n_in,
                              ptrdiff_t n0, ptrdiff_t n1, T *restrict out) {
    ptrdiff_t n;
    if (n1 - n0 >= GAUSS_TILE) {
        for (n = n0; n < n1; n += GAUSS_TILE)
            FN(gauss_product_tile)(A, lda, rowwise, init, in, n_in,
                                   n + GAUSS_TILE <= n1 ? n : n1 - GAUSS_TILE, GAUSS_TILE, out);
    } else {
        for (n = n0; n < n1; n++) FN(gauss_product_tile)(A, lda, rowwise, init, in, n_in, n, 1, out);
    }
}

/* the next u53 uniform of VLD chain streams held as lanes (rng.h's chain stream) */
#define GAUSS_U53(s0, s1, s2, s3, u)                                                      \
    do {                                                                                  \
        vq r_;                                                                            \
        CYRBM_XOSHIRO_STEP(vq, s0, s1, s2, s3, r_);                                       \
        (u) = CYRBM_U53(ASD, r_);                                                         \
    } while (0)

/* two normal draws for the lanes: Box-Muller's cosine and sine from two u53 uniforms
 * (rng.h), z1 = r cos(2 pi U2), z2 = r sin(2 pi U2), r = sqrt(-2 ln(1 - U1)) */
#define GAUSS_NORMAL2(s0, s1, s2, s3, z1, z2)                                             \
    do {                                                                                  \
        vd u1_, u2_, r_;                                                                  \
        GAUSS_U53(s0, s1, s2, s3, u1_);                                                   \
        GAUSS_U53(s0, s1, s2, s3, u2_);                                                   \
        r_ = vsqrt_d(-2.0 * vlog_d(1.0 - u1_));                                           \
        vsincos2pi_d(u2_, &(z1), &(z2));                                                  \
        (z1) = r_ * (z1);                                                                 \
        (z2) = r_ * (z2);                                                                 \
    } while (0)

/* Every lane's visible units drawn from their Gaussians, v_i = A_i + B_i u_i + C_i z_i
 * (z from GAUSS_NORMAL2, two units a pair of uniforms, an odd last unit the cosine), or
 * v_i = A_i + C_i z_i when u is NULL (the base's exact draw: A = mu, C = sd); the
 * lanes' streams st advanced in place. */
CYRBM_INLINE void FN(gauss_draw_visible)(uint64_t *st, T *vt, ptrdiff_t D, const double *A,
                                         const double *B, const double *C, const T *u) {
    ptrdiff_t i;
    int g;
    for (g = 0; g < GAUSS_GD; g++) {
        vq s0 = ld_q(st + g * VLD), s1 = ld_q(st + GAUSS_GL + g * VLD);
        vq s2 = ld_q(st + 2 * GAUSS_GL + g * VLD);
        vq s3 = ld_q(st + 3 * GAUSS_GL + g * VLD);
        for (i = 0; i < D; i += 2) {
            vd z[2];
            int t;
            GAUSS_NORMAL2(s0, s1, s2, s3, z[0], z[1]);
            for (t = 0; t < 2 && i + t < D; t++) {
                const ptrdiff_t at = (i + t) * GAUSS_GL + g * VLD;
                if (u)
                    VSTORED(vt + at, A[i + t] + B[i + t] * VLOADD(u + at) + C[i + t] * z[t]);
                else
                    VSTORED(vt + at, A[i + t] + C[i + t] * z[t]);
            }
        }
        st_q(st + g * VLD, s0);
        st_q(st + GAUSS_GL + g * VLD, s1);
        st_q(st + 2 * GAUSS_GL + g * VLD, s2);
        st_q(st + 3 * GAUSS_GL + g * VLD, s3);
    }
}

/* Steps k0 <= k < k1 of the runs r0 <= r < r1 (kernels.h: gauss_block): the Gaussian
 * unit type's instance of the one Gibbs driver (unit_gibbs_t.h over unit_gauss_t.h,
 * included after this file), its runs given as arrays. */
void FN(cyrbm_gibbs_gauss)(const void *P, const cyrbm_gibbs_runs *S, ptrdiff_t r0,
                           ptrdiff_t r1, const double *betas, ptrdiff_t k0, ptrdiff_t k1,
                           int weights, void *work);
void FN(cyrbm_gauss_block)(const cyrbm_gauss_pair *P, T *v, uint8_t *h, ptrdiff_t r0,
                           ptrdiff_t r1, const double *betas, ptrdiff_t k0, ptrdiff_t k1,
                           int weights, cyrbm_rng *streams, double *logw, T *p,
                           ptrdiff_t p_step, void *work) {
    const cyrbm_gibbs_runs S = {.v = v, .h = h, .streams = streams, .logw = logw, .p = p,
                                .p_step = p_step};
    FN(cyrbm_gibbs_gauss)(P, &S, r0, r1, betas, k0, k1, weights, work);
}

/* p[r * M + j] = sigma(x_rj), x = c + W^T (v_r / s), for the runs r0 <= r < r1: the
 * hidden probabilities of the CD step's two phases, from the same product as the
 * transitions' x (so the same bits), the logistic function vmath.h's in T. */
void FN(cyrbm_gauss_hidden)(const cyrbm_gauss_pair *P, const T *v, ptrdiff_t r0,
                            ptrdiff_t r1, T *p, void *work) {
    const T *W = (const T *)P->W, *c = (const T *)P->c, *s = (const T *)P->s;
    const ptrdiff_t D = P->D, M = P->M;
    size_t total = 0;
    T *a = (T *)cyrbm_take((char *)work, &total, (size_t)(D * GAUSS_GL) * sizeof(T));
    T *x = (T *)cyrbm_take((char *)work, &total, (size_t)(M * GAUSS_GL) * sizeof(T));
    ptrdiff_t b0, i, j;
    int l, g;
    for (b0 = r0; b0 < r1; b0 += GAUSS_GL) {
        const int n = (int)(r1 - b0 < GAUSS_GL ? r1 - b0 : GAUSS_GL);
        for (i = 0; i < D; i++)
            for (l = 0; l < GAUSS_GL; l++)
                a[i * GAUSS_GL + l] = l < n ? v[(b0 + l) * D + i] / s[i] : (T)0;
        FN(gauss_product)(W, M, 0, c, a, D, 0, M, x);
        for (j = 0; j < M; j++)
            for (g = 0; g < GAUSS_GV; g++)
                VSTORE(x + j * GAUSS_GL + g * VL, VSIG(VLOAD(x + j * GAUSS_GL + g * VL)));
        for (l = 0; l < n; l++)
            for (j = 0; j < M; j++) p[(b0 + l) * M + j] = x[j * GAUSS_GL + l];
    }
}

/* R rows i .. i + R - 1 of the CD weight gradient on one panel (see below): GAUSS_GCOLS
 * vectors of columns, sum_n a_ni p_n - sum_n b_ni q_n for each row (R a constant at each
 * call, so the accumulators stay in registers; with one vector of columns each a_ni is
 * used once, a multiply-add that broadcasts it from memory). */
CYRBM_INLINE void FN(gauss_gradient_rows)(const T *a, const T *b, ptrdiff_t lda,
                                          const T *panel, ptrdiff_t B, ptrdiff_t i, int R,
                                          int w, T *out, ptrdiff_t ldo) {
    enum { C = GAUSS_GCOLS, PW = 2 * GAUSS_GCOLS * VL };
    VT g[GAUSS_GROWS][GAUSS_GCOLS], h[GAUSS_GROWS][GAUSS_GCOLS];
    ptrdiff_t n;
    int r, v, c;
    for (r = 0; r < R; r++)
        for (v = 0; v < C; v++) g[r][v] = h[r][v] = BC_T(0);
    for (n = 0; n < B; n++) {
        const T *pn = panel + n * PW, *an = a + n * lda + i, *bn = b + n * lda + i;
        VT pv[GAUSS_GCOLS], qv[GAUSS_GCOLS];
        for (v = 0; v < C; v++) {
            pv[v] = VLOAD(pn + v * VL);
            qv[v] = VLOAD(pn + (C + v) * VL);
        }
        CYRBM_PREFETCH(an + GAUSS_AHEAD * lda);
        CYRBM_PREFETCH(bn + GAUSS_AHEAD * lda);
        for (r = 0; r < R; r++)
            for (v = 0; v < C; v++) {
                g[r][v] = GAUSS_FMA(an[r], pv[v], g[r][v]);
                h[r][v] = GAUSS_FMA(bn[r], qv[v], h[r][v]);
            }
    }
    for (r = 0; r < R; r++) {
        T *o = out + r * ldo;
        if (w == C * VL) {
            for (v = 0; v < C; v++) VSTORE(o + v * VL, g[r][v] - h[r][v]);
        } else {                                    /* the last, partial chunk */
            T tail[GAUSS_GCOLS * VL];
            for (v = 0; v < C; v++) VSTORE(tail + v * VL, g[r][v] - h[r][v]);
            for (c = 0; c < w; c++) o[c] = tail[c];
        }
    }
}

/* The CD / PCD weight gradient's rows i0 <= i < i1 (Gaussian visible units):
 *   out[(i - i0) * M + j] = sum_n a_ni p_nj - sum_n b_ni q_nj,
 * a and p the data's scaled states v / s (B x D) and hidden probabilities (B x M), b and
 * q the chains', each sum over n in ascending order, one fused multiply-add a term,
 * vectors across j: the same bits whatever the vector width, thread or BLAS.  Columns go
 * in chunks of GAUSS_GCOLS vectors: the chunk's columns of p and q are first copied into
 * a panel (row n: p's vectors, then q's; columns past M zero, computed and not stored),
 * which every tile of GAUSS_GROWS rows then reads in order from L1 (a last, partial tile
 * is moved back to end at i1: its rows computed twice, to the same bits). */
void FN(cyrbm_gauss_gradient)(const T *a, const T *p, const T *b, const T *q, ptrdiff_t B,
                              ptrdiff_t D, ptrdiff_t M, ptrdiff_t i0, ptrdiff_t i1, T *out,
                              void *work) {
    enum { CW = GAUSS_GCOLS * VL };                 /* a chunk's columns */
    size_t total = 0;
    T *panel = (T *)cyrbm_take((char *)work, &total, (size_t)B * 2 * CW * sizeof(T));
    ptrdiff_t i, j, n;
    int c;
    for (j = 0; j < M; j += CW) {
        const int w = (int)(M - j < CW ? M - j : CW);
        for (n = 0; n < B; n++)
            for (c = 0; c < CW; c++) {
                panel[n * 2 * CW + c] = c < w ? p[n * M + j + c] : (T)0;
                panel[n * 2 * CW + CW + c] = c < w ? q[n * M + j + c] : (T)0;
            }
        if (i1 - i0 >= GAUSS_GROWS)
            for (i = i0; i < i1; i += GAUSS_GROWS) {
                const ptrdiff_t t = i + GAUSS_GROWS <= i1 ? i : i1 - GAUSS_GROWS;
                FN(gauss_gradient_rows)(a, b, D, panel, B, t, GAUSS_GROWS, w,
                                        out + (t - i0) * M + j, M);
            }
        else
            for (i = i0; i < i1; i++)
                FN(gauss_gradient_rows)(a, b, D, panel, B, i, 1, w, out + (i - i0) * M + j, M);
    }
}

/* the GAUSS_* macros stay defined for unit_gauss_t.h, which undefines them */
