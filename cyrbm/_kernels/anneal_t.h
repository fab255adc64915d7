/* AIS kernels for one parameter type: included by anneal.c once per type through
 * float_t.h.  See anneal.c for the algorithm, the determinism rules and the layout. */

/* W^T column chunk: CHUNK elements (64 bytes), NQC native vectors */
#define CHUNK (CYRBM_AK_CHUNK_BYTES / (ptrdiff_t)sizeof(T))
#define NQC (CHUNK / VL)
/* a visible block: one draw of the 8 stream lanes (16 float32 or 8 float64 units) */
#define VB (64 / (ptrdiff_t)sizeof(T))
/* the column block of the engine's x row sums: 512 bytes (a multiple of add_cols' 8
 * native vectors), so a block's slice of W (D rows) stays in L2 */
#define XCOLS (512 / (ptrdiff_t)sizeof(T))
/* a tile of a subset table: DENSE_G groups (8 rows each) of DENSE_C chunks; DENSE_C only
 * sets how many columns a run sums at a time (in registers), not the arithmetic */
#define DENSE_G CYRBM_AK_DENSE_GROUPS
/* prefetching the next tile pays for float64 tables (twice the bytes), not for float32 */
#define DENSE_PREFETCH (sizeof(T) == 8)
#ifdef CYRBM_AK_DENSE_CHUNKS
#define DENSE_C CYRBM_AK_DENSE_CHUNKS
#else
#define DENSE_C (CYRBM_VBYTES >= 64 ? 8 : CYRBM_VBYTES == 32 ? 4 : CYRBM_VBYTES == 16 ? 2 : 1)
#endif

/* Bring the inputs of R runs up to date with their flipped units:
 *   out[r, :] += sum_{i in on_r} W[i, :] - sum_{i in off_r} W[i, :]     (INOUT out)
 * where on_r / off_r (ascending, lists + r*ldl) are the units of run r that turned on /
 * off, cut into tiles by bounds + r*bstride (cyrbm_ak_tile_bounds), each entry given as
 * its row's byte offset in a chunk, i * CYRBM_AK_CHUNK_BYTES (cyrbm_ak_row_offsets, after
 * the bounds).  On refresh, out[r, :] is first set to 0 and on_r lists all the active
 * units.  The runs are sel[0..R-1] (offsets from the base pointers), or 0..R-1 when sel
 * is NULL.
 *
 * W (nrows x ld) is stored in column chunks of CHUNK columns (64 bytes), each chunk
 * row-major: chunk b holds columns [b CHUNK, (b + 1) CHUNK) of every row, row i at offset
 * b CHUNK nrows + i CHUNK.  Chunks are taken one at a time and their rows in tiles of
 * `tile` rows (32 KB: L1), and every run adds the rows it needs from the tile while it is
 * in L1; the next tile is prefetched a slice per run.  For each column, a run sums a
 * tile's rows in 8 accumulators, list entry e (counted from the tile's first) going to
 * accumulator e % 8, then adds ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) to out:
 * the arithmetic depends only on the lists and the tile size. */
CYRBM_INLINE void FN(cyrbm_ak_update)(const T *Wb, ptrdiff_t nrows, ptrdiff_t ld,
                                      ptrdiff_t tile, const int32_t *on, const int32_t *off,
                                      ptrdiff_t ldl, const int32_t *bounds, ptrdiff_t bstride,
                                      T *out, ptrdiff_t ldo, const int32_t *sel, ptrdiff_t R,
                                      int refresh) {
    const ptrdiff_t ntiles = (nrows + tile - 1) / tile, nch = ld / CHUNK;
    ptrdiff_t b, t, k, r, q, qe, qq;
    int pass;
    for (b = 0; b < nch; b++) {
        const T *blk = Wb + b * CHUNK * nrows;
        if (refresh)
            for (k = 0; k < R; k++)
                memset(out + (sel ? sel[k] : k) * ldo + b * CHUNK, 0, (size_t)CHUNK * sizeof(T));
        for (t = 0; t < ntiles; t++) {
            /* the next tile (of this chunk or the next one) on its way to the cache */
            const T *nxt = t + 1 < ntiles ? blk + (t + 1) * tile * CHUNK
                                          : (b + 1 < nch ? blk + nrows * CHUNK : NULL);
            const ptrdiff_t nbytes = (ptrdiff_t)sizeof(T) * CHUNK *
                                     (t + 1 < ntiles ? (nrows - (t + 1) * tile < tile
                                                            ? nrows - (t + 1) * tile : tile)
                                                     : (nrows < tile ? nrows : tile));
            for (k = 0; k < R; k++) {
                T *o;
                r = sel ? sel[k] : k;
                o = out + r * ldo + b * CHUNK;
                if (nxt) {
                    const ptrdiff_t p0 = nbytes * k / R / 64 * 64, p1 = nbytes * (k + 1) / R;
                    ptrdiff_t pb;
                    for (pb = p0; pb < p1; pb += 64) CYRBM_PREFETCH((const char *)nxt + pb);
                }
                for (pass = 0; pass < 2; pass++) {
                    const int32_t *l = (pass == 0 ? on : off) + r * ldl;
                    const int32_t *bd = bounds + r * bstride + pass * (ntiles + 1);
                    const ptrdiff_t q0 = bd[t];
                    qe = bd[t + 1];
                    if (qe == q0) continue;
                    for (qq = 0; qq < NQC; qq++) {   /* native vectors of the chunk */
                        const char *bq = (const char *)(blk + qq * VL);
                        VT a0 = (VT){0}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
                           a7 = a0;
                        for (q = q0; q + 8 <= qe; q += 8) {
                            /* the 8 entries in 4 loads of two: a row costs one load of
                             * W^T and half a load of the list, and its offset is used as
                             * it stands (the loads and the index arithmetic are what
                             * bound this loop; bench/lower_bound_update.c) */
                            uint64_t e01, e23, e45, e67;
                            memcpy(&e01, l + q, 8);
                            memcpy(&e23, l + q + 2, 8);
                            memcpy(&e45, l + q + 4, 8);
                            memcpy(&e67, l + q + 6, 8);
                            a0 += VLOAD((const T *)(bq + CYRBM_AK_PAIR_LO(e01)));
                            a1 += VLOAD((const T *)(bq + CYRBM_AK_PAIR_HI(e01)));
                            a2 += VLOAD((const T *)(bq + CYRBM_AK_PAIR_LO(e23)));
                            a3 += VLOAD((const T *)(bq + CYRBM_AK_PAIR_HI(e23)));
                            a4 += VLOAD((const T *)(bq + CYRBM_AK_PAIR_LO(e45)));
                            a5 += VLOAD((const T *)(bq + CYRBM_AK_PAIR_HI(e45)));
                            a6 += VLOAD((const T *)(bq + CYRBM_AK_PAIR_LO(e67)));
                            a7 += VLOAD((const T *)(bq + CYRBM_AK_PAIR_HI(e67)));
                        }
                        if (q < qe) a0 += VLOAD((const T *)(bq + l[q]));
                        if (q + 1 < qe) a1 += VLOAD((const T *)(bq + l[q + 1]));
                        if (q + 2 < qe) a2 += VLOAD((const T *)(bq + l[q + 2]));
                        if (q + 3 < qe) a3 += VLOAD((const T *)(bq + l[q + 3]));
                        if (q + 4 < qe) a4 += VLOAD((const T *)(bq + l[q + 4]));
                        if (q + 5 < qe) a5 += VLOAD((const T *)(bq + l[q + 5]));
                        if (q + 6 < qe) a6 += VLOAD((const T *)(bq + l[q + 6]));
                        a0 = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
                        if (pass == 0) VSTORE(o + qq * VL, VLOAD(o + qq * VL) + a0);
                        else VSTORE(o + qq * VL, VLOAD(o + qq * VL) - a0);
                    }
                }
            }
        }
    }
}

/* Many flips: recompute the inputs of runs sel[0..R-1] (0..R-1 when sel is NULL) from a
 * signed subset table Tab (8 groups rows x ld, in column chunks like W^T; see "Many
 * flips" in anneal.c):
 *   out[r, :] = init + sum_{g < groups} (-1)^neg Tab[row, :],   l_r[g] = 2 row + neg
 * where l_r = lists + r * ldl holds run r's entry of each group (cyrbm_ak_group_rows).
 * Each column's sum is taken from init in group order, one addition at a time (a
 * negation is a sign flip, exact), so its bits depend on nothing but the entries.  Only
 * the chunks holding the first ncols columns are computed (the padding beyond them is 0
 * in Tab and init, and stays 0 in out).  The chunks go in passes of at most DENSE_C,
 * spread evenly (so that every pass has several independent sums in flight), and each
 * pass in tiles of DENSE_G groups; every run adds its rows of the tile while the tile is
 * in cache (about runs / 8 runs share each row), in registers. */
CYRBM_INLINE void FN(cyrbm_ak_dense_tile)(const T *blk, ptrdiff_t cstride, const int32_t *l,
                                          ptrdiff_t g0, ptrdiff_t g1, T *o, const T *start,
                                          const int nc) {
    VT a[DENSE_C * NQC];
    ptrdiff_t g;
    int c, q;
    for (c = 0; c < nc; c++)
        for (q = 0; q < NQC; q++) a[c * NQC + q] = VLOAD(start + c * CHUNK + q * VL);
    for (g = g0; g < g1; g++) {
        const T *row = blk + (ptrdiff_t)(l[g] >> 1) * CHUNK;
        const VUT sign = (VUT){0} + (UT)(SIGN_BIT & ((UT)0 - (UT)(l[g] & 1)));
        for (c = 0; c < nc; c++)
            for (q = 0; q < NQC; q++)
                a[c * NQC + q] += AS_T(AS_UT(VLOAD(row + c * cstride + q * VL)) ^ sign);
    }
    for (c = 0; c < nc; c++)
        for (q = 0; q < NQC; q++) VSTORE(o + c * CHUNK + q * VL, a[c * NQC + q]);
}

CYRBM_INLINE void FN(cyrbm_ak_dense)(const T *Tab, ptrdiff_t groups, ptrdiff_t ncols,
                                     const int32_t *lists, ptrdiff_t ldl, T *out,
                                     ptrdiff_t ldo, const int32_t *sel, ptrdiff_t R,
                                     const T *init) {
    const ptrdiff_t nrows = 8 * groups, nch = (ncols + CHUNK - 1) / CHUNK;
    const ptrdiff_t cstride = CHUNK * nrows, npass = (nch + DENSE_C - 1) / DENSE_C;
    ptrdiff_t p, g0, k;
    for (p = 0; p < npass; p++) {
        const ptrdiff_t b0 = p * nch / npass, nc = (p + 1) * nch / npass - b0;
        const T *blk = Tab + b0 * cstride;
        for (g0 = 0; g0 < groups; g0 += DENSE_G) {
            const ptrdiff_t g1 = g0 + DENSE_G < groups ? g0 + DENSE_G : groups;
            /* the next tile: these chunks' next groups, or the next pass's first ones */
            const T *nxt = g1 < groups ? blk + 8 * g1 * CHUNK
                                       : (p + 1 < npass ? Tab + (p + 1) * nch / npass * cstride
                                                        : NULL);
            const ptrdiff_t nbytes = (ptrdiff_t)sizeof(T) * CHUNK * 8 * DENSE_G;
            for (k = 0; k < R; k++) {
                const ptrdiff_t r = sel ? sel[k] : k;
                const int32_t *l = lists + r * ldl;
                T *o = out + r * ldo + b0 * CHUNK;
                const T *start = g0 > 0 ? o : init + b0 * CHUNK;
                if (DENSE_PREFETCH && nxt) {
                    const ptrdiff_t p0 = nbytes * k / R / 64 * 64, p1 = nbytes * (k + 1) / R;
                    ptrdiff_t pb;
                    int c;
                    for (c = 0; c < nc; c++)
                        for (pb = p0; pb < p1; pb += 64)
                            CYRBM_PREFETCH((const char *)(nxt + c * cstride) + pb);
                }
                /* a constant chunk count per call, so the sums stay in registers */
#define CYRBM_AK_DENSE_CASE(m)                                                              \
    case m:                                                                                 \
        if (m <= DENSE_C) FN(cyrbm_ak_dense_tile)(blk, cstride, l, g0, g1, o, start, m);   \
        break;
                switch (nc) {
                    CYRBM_AK_DENSE_CASE(1)
                    CYRBM_AK_DENSE_CASE(2)
                    CYRBM_AK_DENSE_CASE(3)
                    CYRBM_AK_DENSE_CASE(4)
                    CYRBM_AK_DENSE_CASE(5)
                    CYRBM_AK_DENSE_CASE(6)
                    CYRBM_AK_DENSE_CASE(7)
                    CYRBM_AK_DENSE_CASE(8)
                    default: {
                        ptrdiff_t c;
                        for (c = 0; c < nc; c++)
                            FN(cyrbm_ak_dense_tile)(blk + c * cstride, cstride, l, g0, g1,
                                                    o + c * CHUNK, start + c * CHUNK, 1);
                    }
                }
#undef CYRBM_AK_DENSE_CASE
            }
        }
    }
}

/* Bring the inputs of run r up to date with its few flipped units (INOUT o):
 *   o += sum_{i in on} W[i, :] - sum_{i in off} W[i, :]
 * with W row-major (rows of ld elements, ld a multiple of 16).  On refresh, o starts from
 * init and "on" lists all the active units.  Each column's "on" rows are summed in list
 * order and added to o, then its "off" rows likewise subtracted; 8 vectors of columns at
 * a time in registers. */
/* Columns [c0, c1) only (c0 a multiple of 8 VL; c1 one too, or ld): the same arithmetic
 * per column, so a caller may take the columns in blocks, every run's block while that
 * slice of W sits in cache. */
CYRBM_INLINE void FN(cyrbm_ak_add_cols)(const T *W, ptrdiff_t ld, ptrdiff_t c0, ptrdiff_t c1,
                                        const int32_t *on, int32_t n_on, const int32_t *off,
                                        int32_t n_off, T *o, int refresh, const T *init) {
    ptrdiff_t c, q;
    int pass, k;
    if (refresh) memcpy(o + c0, init + c0, (size_t)(c1 - c0) * sizeof(T));
    for (pass = 0; pass < 2; pass++) {
        const int32_t *l = pass == 0 ? on : off;
        const int32_t n = pass == 0 ? n_on : n_off;
        if (n == 0) continue;
        for (c = c0; c + 8 * VL <= c1; c += 8 * VL) {
            VT a[8];
            for (k = 0; k < 8; k++) a[k] = (VT){0};
            for (q = 0; q < n; q++) {
                const T *w = W + (ptrdiff_t)l[q] * ld + c;
                for (k = 0; k < 8; k++) a[k] += VLOAD(w + k * VL);
            }
            if (pass == 0)
                for (k = 0; k < 8; k++) VSTORE(o + c + k * VL, VLOAD(o + c + k * VL) + a[k]);
            else
                for (k = 0; k < 8; k++) VSTORE(o + c + k * VL, VLOAD(o + c + k * VL) - a[k]);
        }
        for (; c < c1; c += VL) {      /* the last, narrower block */
            VT a0 = (VT){0};
            for (q = 0; q < n; q++) a0 += VLOAD(W + (ptrdiff_t)l[q] * ld + c);
            if (pass == 0) VSTORE(o + c, VLOAD(o + c) + a0);
            else VSTORE(o + c, VLOAD(o + c) - a0);
        }
    }
}

CYRBM_INLINE void FN(cyrbm_ak_add_rows)(const T *W, ptrdiff_t ld, const int32_t *on,
                                        int32_t n_on, const int32_t *off, int32_t n_off,
                                        T *o, int refresh, const T *init) {
    FN(cyrbm_ak_add_cols)(W, ld, 0, ld, on, n_on, off, n_off, o, refresh, init);
}

/* Hidden half of step k for run r, once its pre-activations x are current:
 *   weights:    the log-weight increment ln p*_k(v) - ln p*_{k-1}(v), added to logw[r];
 *   transition: hA ~ Bernoulli(sigma((1-beta_k) xA)), hB ~ Bernoulli(sigma(beta_k xB))
 *               (SM08 Eq. 15-16), the flipped units listed in hlistA / hlistB.
 * For each hidden layer with share c of the inverse temperature (1 - beta for A, beta for
 * B), sum_j softplus(c x_j) = c sum_j max(x_j, 0) + ln prod_j (1 + exp(-c |x_j|)), unit j
 * in logical lane j % 8; the products are kept as mantissa * 2^exponent, in float64.  The
 * visible biases add (beta_k - beta_{k-1}) (bB - bA).v (cyrbm_ak_bias_dot).
 * weights == 2 (CRI10's tempered configuration, the PT tracker's sums): logw[r] is set to
 * sum_j softplus(bc x_j + c_j) + dbias.v of the current v, summed as cyrbm_tempered_sums
 * sums it (the same bits), from the exps the draws take anyway. */
CYRBM_INLINE void FN(cyrbm_ak_hidden_run)(const cyrbm_ais_pair *P, cyrbm_ais_state *S,
                                          ptrdiff_t r, double bp, double bc, int weights,
                                          int transition) {
    const ptrdiff_t ldV = P->ldV;
    uint64_t *rng = S->rng + r * CYRBM_AK_RNG_WORDS;
    double dl = 0.0;
    int L;
    S->nv[r] = S->nv_off[r] = 0;   /* visible flips consumed by the update of x */
    for (L = 0; L < 2; L++) {
        const ptrdiff_t n = L == 0 ? P->nA : P->nB, ld = L == 0 ? P->ldA : P->ldB;
        const T *x = (const T *)(L == 0 ? S->xA : S->xB) + r * ld;
        /* B's unscaled hidden biases (CRI10's family (beta W, b, c)): the draws use
         * beta x + e instead of beta x; no log weights then */
        const T *e = L == 1 ? (const T *)P->eB : NULL;
        uint8_t *h = (L == 0 ? S->hA : S->hB) + r * ld;
        int32_t *fon = (L == 0 ? S->hlistA : S->hlistB) + r * ld;
        int32_t *foff = (L == 0 ? S->hlistA_off : S->hlistB_off) + r * ld;
        int32_t non = 0, noff = 0;
        const double cp = L == 0 ? 1.0 - bp : bp, cc = L == 0 ? 1.0 - bc : bc;
        const double cx = e != NULL ? 1.0 : cc;   /* the share applied to -|x| below */
        /* exp(-cp |x|) = exp(-cc |x|) exp(d), d = (cc - cp) |x|: when |d| <= 1/64 for every
         * unit (|x| is at most xbound), exp(d) by its Taylor polynomial of degree 6
         * (remainder < 5e-17) instead of a second full exp */
        const double dc = cc - cp;
        const int series = weights == 1 &&
                           fabs(dc) * (L == 0 ? P->xboundA : P->xboundB) <= 0.015625;
        double relu = 0.0, Pp = 1.0, Ep = 0.0, Pc = 1.0, Ec = 0.0;
        vq s0[NQD], s1[NQD], s2[NQD], s3[NQD];
        ptrdiff_t j0, j;
        int q, l;
        if (n == 0) continue;
        for (q = 0; q < NQD; q++) {   /* (stored back only after a transition) */
            s0[q] = ld_q(rng + q * VLD);
            s1[q] = ld_q(rng + 8 + q * VLD);
            s2[q] = ld_q(rng + 16 + q * VLD);
            s3[q] = ld_q(rng + 24 + q * VLD);
        }
        for (j0 = 0; j0 < n; j0 += CYRBM_AK_BLOCK) {
            const ptrdiff_t j1 = j0 + CYRBM_AK_BLOCK < n ? j0 + CYRBM_AK_BLOCK : n;
            vd rl[NQD], pp[NQD], pc[NQD];
            double qp = 1.0, qc = 1.0;
            for (q = 0; q < NQD; q++) {
                rl[q] = BCD(0.0);
                pp[q] = pc[q] = BCD(1.0);
            }
            for (j = j0; j < j1; j += 8) {
                unsigned nbits = 0;   /* the 8 units' new states, unit j + l at bit l */
                for (q = 0; q < NQD; q++) {
                    const ptrdiff_t jq = j + q * VLD;
                    vd xd = VLOADD(x + jq);
                    if (e != NULL) xd = cc * xd + VLOADD(e + jq);
                    const vq valid = CYRBM_K(cyrbm_ak_valid_f64)(n - jq);
                    const vd na = ASD(ASQ(xd) | 0x8000000000000000ULL);   /* -|x| */
                    /* exp(-c |x|), 0 in lanes past the layer's end */
                    const vd ec = ASD(ASQ(vexp_d(cx * na)) & valid);
                    if (weights == 2) {
                        rl[q] += ASD(MASKQ(xd > 0.0) & ASQ(xd) & valid);
                        pc[q] *= 1.0 + ec;
                    } else if (weights) {
                        vd ep;
                        if (series) {
                            ep = ec * vexp_small_d(dc * (BCD(0.0) - na));
                        } else {
                            ep = ASD(ASQ(vexp_d(cp * na)) & valid);
                        }
                        rl[q] += ASD(MASKQ(xd > 0.0) & ASQ(xd));
                        pp[q] *= 1.0 + ep;
                        pc[q] *= 1.0 + ec;
                    }
                    if (transition) {
                        vq rb;
                        vd u;
                        CYRBM_XOSHIRO_STEP(vq, s0[q], s1[q], s2[q], s3[q], rb);
                        u = CYRBM_U52(ASD, rb);
                        nbits |= mask_bits_d(CYRBM_DRAW_D(u, xd, ec) & valid) << (q * VLD);
                    }
                }
                if (transition) {
                    uint64_t ow;
                    unsigned fl;
                    const uint64_t nw = bits_to_bytes8(nbits);
                    memcpy(&ow, h + j, 8);
                    memcpy(h + j, &nw, 8);
                    fl = bytes8_to_bits(ow) ^ nbits;
                    cyrbm_emit8(fl & nbits, (int32_t)j, fon, &non);
                    cyrbm_emit8(fl & ~nbits, (int32_t)j, foff, &noff);
                }
            }
            if (weights) {
                for (l = 0; l < 8; l++) {
                    relu += LANE(rl[l / VLD], l % VLD);
                    qp *= LANE(pp[l / VLD], l % VLD);
                    qc *= LANE(pc[l / VLD], l % VLD);
                }
                cyrbm_ak_mulexp(&Pp, &Ep, qp);
                cyrbm_ak_mulexp(&Pc, &Ec, qc);
            }
        }
        if (transition) {
            for (q = 0; q < NQD; q++) {
                st_q(rng + q * VLD, s0[q]);
                st_q(rng + 8 + q * VLD, s1[q]);
                st_q(rng + 16 + q * VLD, s2[q]);
                st_q(rng + 24 + q * VLD, s3[q]);
            }
            (L == 0 ? S->nhA : S->nhB)[r] = non;
            (L == 0 ? S->nhA_off : S->nhB_off)[r] = noff;
        }
        if (weights == 2)
            dl += relu + log(Pc) + Ec * LN2;
        else if (weights)
            dl += (cc - cp) * relu + (log(Pc) - log(Pp)) + (Ec - Ep) * LN2;
    }
    if (weights == 2)
        S->logw[r] = dl + cyrbm_ak_bias_dot(S->v + r * ldV, P->dbias, P->D);
    else if (weights)
        S->logw[r] += dl + (bp - bc) * cyrbm_ak_bias_dot(S->v + r * ldV, P->dbias, P->D);
}

/* Visible half-step of run r at inverse temperature beta from the current inputs:
 * v_i ~ Bernoulli(sigma(y_i)), y = (1 - beta)(uA + bA) + beta (uB + bB) (SM08 Eq. 17),
 * one draw of the 8 stream lanes per block of VB units.  Flipped units are listed in
 * vlist (ascending). */
CYRBM_INLINE void FN(cyrbm_ak_visible_run)(const cyrbm_ais_pair *P, cyrbm_ais_state *S,
                                           ptrdiff_t r, double beta) {
    const T *bA = (const T *)P->bA, *bB = (const T *)P->bB;
    const ptrdiff_t D = P->D, nA = P->nA, nB = P->nB, ldV = P->ldV;
    const T *uA = (const T *)S->uA + r * ldV, *uB = (const T *)S->uB + r * ldV;
    uint8_t *v = S->v + r * ldV;
    uint64_t *rng = S->rng + r * CYRBM_AK_RNG_WORDS;
    int32_t *fon = S->vlist + r * ldV, *foff = S->vlist_off + r * ldV;
    const T ca = (T)(1.0 - beta), cb = (T)beta;
    ptrdiff_t i;
    int32_t non = 0, noff = 0;
    vq s0[NQD], s1[NQD], s2[NQD], s3[NQD];
    int q, w;
    for (q = 0; q < NQD; q++) {
        s0[q] = ld_q(rng + q * VLD);
        s1[q] = ld_q(rng + 8 + q * VLD);
        s2[q] = ld_q(rng + 16 + q * VLD);
        s3[q] = ld_q(rng + 24 + q * VLD);
    }
    for (i = 0; i < D; i += VB) {
        vq rb[NQD];
        unsigned nbits = 0, obits = 0, fl;   /* new / old states, unit i + l at bit l */
        uint64_t nw[VB / 8], ow[VB / 8];
        for (q = 0; q < NQD; q++) CYRBM_XOSHIRO_STEP(vq, s0[q], s1[q], s2[q], s3[q], rb[q]);
        for (q = 0; q < VB / VL; q++) {   /* native vectors of the block */
            const ptrdiff_t iq = i + q * VL;
            VT ya = VLOAD(bA + iq), yb = VLOAD(bB + iq), y, t, u;
            u = FN(cyrbm_ak_unif)(rb, (int)q);
            if (nA > 0) ya += VLOAD(uA + iq);
            if (nB > 0) yb += VLOAD(uB + iq);
            y = ca * ya + cb * yb;
            t = VEXP(AS_T(AS_UT(y) | SIGN_BIT));                       /* exp(-|y|) */
            nbits |= MASK_BITS_T(DRAW_T(u, y, t) & FN(cyrbm_ak_valid)(D - iq)) << (q * VL);
        }
        memcpy(ow, v + i, VB);
        for (w = 0; w < VB / 8; w++) obits |= bytes8_to_bits(ow[w]) << (8 * w);
        fl = obits ^ nbits;
        if (fl) {   /* the 0/1 bytes are rewritten only in a block where a unit flipped
                     * (most blocks near beta = 1 have none) */
            for (w = 0; w < VB / 8; w++) nw[w] = bits_to_bytes8(nbits >> (8 * w));
            memcpy(v + i, nw, VB);
            for (w = 0; w < VB / 8; w++) {   /* (a list has room for 8 entries past the
                                              * block: i + VB <= ldV) */
                cyrbm_emit8((fl & nbits) >> (8 * w), (int32_t)(i + 8 * w), fon, &non);
                cyrbm_emit8((fl & ~nbits) >> (8 * w), (int32_t)(i + 8 * w), foff, &noff);
            }
        }
    }
    for (q = 0; q < NQD; q++) {
        st_q(rng + q * VLD, s0[q]);
        st_q(rng + 8 + q * VLD, s1[q]);
        st_q(rng + 16 + q * VLD, s2[q]);
        st_q(rng + 24 + q * VLD, s3[q]);
    }
    S->nv[r] = non;
    S->nv_off[r] = noff;
    S->nhA[r] = S->nhB[r] = S->nhA_off[r] = S->nhB_off[r] = 0;   /* consumed by the update of u */
}

/* Visible half-step at beta for runs [r0, r1) from the current inputs.  With no hidden
 * units in A and beta = 0 it draws exact independent samples from the base-rate model
 * p_A(v) = prod_i sigma(bA_i) (SM08 Eq. 18).  The next ais_block call must set
 * force_refresh (the inputs were not kept up to date with these flips' history). */
void FN(cyrbm_ais_visible)(const cyrbm_ais_pair *P, cyrbm_ais_state *S, ptrdiff_t r0,
                           ptrdiff_t r1, double beta) {
    ptrdiff_t r;
    for (r = r0; r < r1; r++) FN(cyrbm_ak_visible_run)(P, S, r, beta);
}

/* x += rows of W for the flipped visible units of runs [r0, r1) (each run's own sums),
 * recomputed from all the active units when `refresh`; runs where many flipped (or every
 * run, dense == 2) recompute x from the visible subset tables instead, all together, chunk
 * by chunk (see "Many flips" in anneal.c).  The row sums go a column block (XCOLS) at a
 * time through every run, so that the block's slice of W stays in cache from run to run;
 * each column's arithmetic is the run's own.  The visible flip lists stay as they were
 * (on refresh: every active unit); the hidden half-step consumes them. */
CYRBM_INLINE void FN(cyrbm_ak_inputs)(const cyrbm_ais_pair *P, cyrbm_ais_state *S,
                                      ptrdiff_t r0, ptrdiff_t r1, int refresh) {
    const ptrdiff_t D = P->D, nA = P->nA, nB = P->nB;
    const ptrdiff_t ldV = P->ldV, ldA = P->ldA, ldB = P->ldB;
    int32_t *dsel = S->sel_dense + r0, *ssel = S->sel_sparse + r0;
    ptrdiff_t r, k, nd = 0, ns = 0;
    int L;
    for (r = r0; r < r1; r++) {
        if (refresh) {
            S->nv[r] = cyrbm_active_units(S->v + r * ldV, D, S->vlist + r * ldV);
            S->nv_off[r] = 0;
        }
        if (P->dense &&
            (P->dense == 2 || 100 * (ptrdiff_t)(S->nv[r] + S->nv_off[r]) > P->dense_x * D))
            dsel[nd++] = (int32_t)(r - r0);
        else
            ssel[ns++] = (int32_t)(r - r0);
    }
    for (L = 0; L < 2; L++) {
        const ptrdiff_t n = L == 0 ? nA : nB, ld = L == 0 ? ldA : ldB;
        const T *W = (const T *)(L == 0 ? P->WA : P->WB), *a = (const T *)(L == 0 ? P->aA : P->aB);
        T *x = (T *)(L == 0 ? S->xA : S->xB);
        ptrdiff_t c0;
        if (n == 0) continue;
        for (c0 = 0; c0 < ld; c0 += XCOLS) {
            const ptrdiff_t c1 = c0 + XCOLS < ld ? c0 + XCOLS : ld;
            for (k = 0; k < ns; k++) {
                r = r0 + ssel[k];
                FN(cyrbm_ak_add_cols)(W, ld, c0, c1, S->vlist + r * ldV, S->nv[r],
                                      S->vlist_off + r * ldV, S->nv_off[r], x + r * ld,
                                      refresh, a);
            }
        }
    }
    if (nd > 0) {
        for (k = 0; k < nd; k++)   /* the visible lists are free until the next half-step */
            cyrbm_ak_group_rows(S->v + (r0 + dsel[k]) * ldV, P->gV,
                                S->vlist + (r0 + dsel[k]) * ldV);
        if (nA > 0)
            FN(cyrbm_ak_dense)((const T *)P->TVA, P->gV, nA, S->vlist + r0 * ldV, ldV,
                               (T *)S->xA + r0 * ldA, ldA, dsel, nd, (const T *)P->cVA);
        if (nB > 0)
            FN(cyrbm_ak_dense)((const T *)P->TVB, P->gV, nB, S->vlist + r0 * ldV, ldV,
                               (T *)S->xB + r0 * ldB, ldB, dsel, nd, (const T *)P->cVB);
    }
}

/* Recompute the inputs x = W^T v + a of runs [r0, r1) exactly as a refreshing step does
 * (cyrbm_ak_inputs), leaving no visible flips pending: the next step may then pass
 * refresh = 2 (x current, only u recomputed) and give the same numbers as a refreshing
 * step.  Between the two, the kept inputs are those of the current parameters (the PT
 * tracker's free energies at a new update, cyrbm_tempered_sums). */
void FN(cyrbm_ais_refresh_inputs)(const cyrbm_ais_pair *P, cyrbm_ais_state *S, ptrdiff_t r0,
                                  ptrdiff_t r1) {
    ptrdiff_t r;
    if (r1 <= r0) return;
    FN(cyrbm_ak_inputs)(P, S, r0, r1, 1);
    for (r = r0; r < r1; r++) S->nv[r] = S->nv_off[r] = 0;
}

/* sum_j softplus(t x_j + e_j) over the n hidden units of one run, float64 (x: its kept
 * inputs, e: unscaled biases or NULL), as the log weights sum it: t x + e in logical lane
 * j % 8, max(z, 0) summed and prod (1 + exp(-|z|)) kept as mantissa * 2^exponent per
 * block of CYRBM_AK_BLOCK units, so every variant gives the same bits. */
CYRBM_INLINE double FN(cyrbm_ak_softplus_sum)(const T *x, const T *e, ptrdiff_t n, double t) {
    double relu = 0.0, Pm = 1.0, Ex = 0.0;
    ptrdiff_t j0, j;
    int q, l;
    for (j0 = 0; j0 < n; j0 += CYRBM_AK_BLOCK) {
        const ptrdiff_t j1 = j0 + CYRBM_AK_BLOCK < n ? j0 + CYRBM_AK_BLOCK : n;
        vd rl[NQD], pp[NQD];
        double qp = 1.0;
        for (q = 0; q < NQD; q++) {
            rl[q] = BCD(0.0);
            pp[q] = BCD(1.0);
        }
        for (j = j0; j < j1; j += 8)
            for (q = 0; q < NQD; q++) {
                const ptrdiff_t jq = j + q * VLD;
                vd z = t * VLOADD(x + jq);
                if (e != NULL) z = z + VLOADD(e + jq);
                const vq valid = CYRBM_K(cyrbm_ak_valid_f64)(n - jq);
                const vd na = ASD(ASQ(z) | 0x8000000000000000ULL);
                rl[q] += ASD(MASKQ(z > 0.0) & ASQ(z) & valid);
                pp[q] *= 1.0 + ASD(ASQ(vexp_d(na)) & valid);
            }
        for (l = 0; l < 8; l++) {
            relu += LANE(rl[l / VLD], l % VLD);
            qp *= LANE(pp[l / VLD], l % VLD);
        }
        cyrbm_ak_mulexp(&Pm, &Ex, qp);
    }
    return relu + log(Pm) + Ex * LN2;
}

/* One step of the engine for runs [r0, r1): the log-weight increment and/or one
 * block-Gibbs transition, run r at inverse temperatures (bp[r], bc[r]) when `per_run`,
 * else all runs at (bp[0], bc[0]).
 *   weights:     logw += ln p*_bc(v) - ln p*_bp(v)   (float64);
 *   transition:  hA ~ p(hA | v) at 1 - bc, hB ~ p(hB | v) at bc (Eq. 15-16), then
 *                v ~ p(v | hA, hB) (Eq. 17): T_bc, which leaves p_bc invariant.
 * Inputs x = W^T v + a and u = W h follow the flips, recomputed exactly when `refresh`
 * (2: x is current already, cyrbm_ais_refresh_inputs; only u is recomputed). */
CYRBM_INLINE void FN(cyrbm_ak_step)(const cyrbm_ais_pair *P, cyrbm_ais_state *S, ptrdiff_t r0,
                                    ptrdiff_t r1, const double *bp, const double *bc,
                                    int per_run, int weights, int transition, int refresh) {
    const ptrdiff_t D = P->D, nA = P->nA, nB = P->nB;
    const ptrdiff_t ldV = P->ldV, ldA = P->ldA, ldB = P->ldB;
    const ptrdiff_t tile = CYRBM_AK_TILE_BYTES / CYRBM_AK_CHUNK_BYTES;
    const ptrdiff_t offB = 2 * ((nA + tile - 1) / tile + 1);   /* B's bounds after A's */
    const ptrdiff_t bs = S->cur_stride;
    int32_t *dsel = S->sel_dense + r0, *ssel = S->sel_sparse + r0;
    ptrdiff_t r, nd, ns;
    int L;
    if (refresh != 2) FN(cyrbm_ak_inputs)(P, S, r0, r1, refresh);
    refresh = refresh != 0;
    /* log weights and hidden draws; with weights == 2 and S->top_on, the runs at
     * S->top_from also leave in logw_top their sums at S->top_beta (the PT tracker's ln Z
     * at the top through the states one temperature down), summed as cyrbm_tempered_sums
     * sums them (the same bits) */
    for (r = r0; r < r1; r++) {
        const double b = bc[per_run ? r : 0];
        FN(cyrbm_ak_hidden_run)(P, S, r, bp[per_run ? r : 0], b, weights, transition);
        if (weights == 2 && S->top_on && b == S->top_from)
            S->logw_top[r] = FN(cyrbm_ak_softplus_sum)((const T *)S->xB + r * ldB,
                                                       (const T *)P->eB, nB, S->top_beta) +
                             cyrbm_ak_bias_dot(S->v + r * ldV, P->dbias, D);
    }
    if (!transition) return;
    /* u += rows of W^T for the flipped hidden units: chunk by chunk, tile by tile, all runs
     * of the block; runs where many flipped recompute u from the hidden subset tables.
     * In the tempered configuration a run at beta 0 draws v from the visible biases alone
     * (y = bA + 0 uB), so its uB is not kept (ustale[r] = 1: the visible draw then adds a
     * finite old u times 0, the same draws); a stale run at beta > 0 recomputes its uB from
     * all its active units, with the tables when there are any, else by the row sums, as a
     * refresh would. */
    for (L = 0; L < 2; L++) {
        const ptrdiff_t n = L == 0 ? nA : nB, ld = L == 0 ? ldA : ldB;
        const ptrdiff_t groups = L == 0 ? P->gA : P->gB;
        const uint8_t *h = L == 0 ? S->hA : S->hB;
        int32_t *on = L == 0 ? S->hlistA : S->hlistB, *off = L == 0 ? S->hlistA_off : S->hlistB_off;
        int32_t *non = L == 0 ? S->nhA : S->nhB, *noff = L == 0 ? S->nhA_off : S->nhB_off;
        int32_t *bd0 = S->cur + (L == 0 ? 0 : offB);
        T *u = (T *)(L == 0 ? S->uA : S->uB);
        ptrdiff_t nr = 0;   /* stale runs recomputed by the row sums (in dsel: no tables) */
        if (n == 0) continue;
        nd = ns = 0;
        for (r = r0; r < r1; r++) {
            int fresh = refresh;
            if (L == 1 && P->eB != NULL) {
                if (bc[per_run ? r : 0] == 0.0) {
                    S->ustale[r] = 1;
                    continue;
                }
                if (S->ustale[r]) fresh = 1;
                S->ustale[r] = 0;
            }
            if (fresh) {
                non[r] = cyrbm_active_units(h + r * ld, n, on + r * ld);
                noff[r] = 0;
            }
            if (P->dense && (P->dense == 2 || fresh > refresh ||
                             100 * (ptrdiff_t)(non[r] + noff[r]) > P->dense_u * n)) {
                dsel[nd++] = (int32_t)(r - r0);
                cyrbm_ak_group_rows(h + r * ld, groups, on + r * ld);
            } else {
                if (fresh > refresh) dsel[nr++] = (int32_t)(r - r0);
                else ssel[ns++] = (int32_t)(r - r0);
                cyrbm_ak_tile_bounds(on + r * ld, non[r], off + r * ld, noff[r], n, tile,
                                     bd0 + r * bs);
                cyrbm_ak_row_offsets(on + r * ld, non[r]);
                cyrbm_ak_row_offsets(off + r * ld, noff[r]);
            }
        }
        if (ns > 0)
            FN(cyrbm_ak_update)((const T *)(L == 0 ? P->WAT : P->WBT), n, ldV, tile, on + r0 * ld,
                                off + r0 * ld, ld, bd0 + r0 * bs, bs, u + r0 * ldV, ldV, ssel, ns,
                                refresh);
        if (nr > 0)
            FN(cyrbm_ak_update)((const T *)(L == 0 ? P->WAT : P->WBT), n, ldV, tile, on + r0 * ld,
                                off + r0 * ld, ld, bd0 + r0 * bs, bs, u + r0 * ldV, ldV, dsel, nr,
                                1);
        if (nd > 0)
            FN(cyrbm_ak_dense)((const T *)(L == 0 ? P->THA : P->THB), groups, D, on + r0 * ld,
                               ld, u + r0 * ldV, ldV, dsel, nd,
                               (const T *)(L == 0 ? P->cHA : P->cHB));
    }
    /* visible draws */
    for (r = r0; r < r1; r++) FN(cyrbm_ak_visible_run)(P, S, r, bc[per_run ? r : 0]);
}

/* Steps k0 <= k < k1 of an annealing schedule betas[0..k_end] for runs [r0, r1)
 * (SM08 Sec. 3.1-3.3).  At step k: if weights (k >= 1) the log-weight increment from
 * beta_{k-1} to beta_k; if k < k_end one transition T_{beta_k} (cyrbm_ak_step).  Inputs
 * are recomputed exactly at steps with k % refresh_every == 0 and at k0 when
 * force_refresh is set (needed whenever the states were set from outside).  Runs are
 * independent: any split of runs between calls or threads gives the same numbers. */
void FN(cyrbm_ais_block)(const cyrbm_ais_pair *P, cyrbm_ais_state *S, ptrdiff_t r0,
                         ptrdiff_t r1, const double *betas, ptrdiff_t k0, ptrdiff_t k1,
                         ptrdiff_t k_end, int weights, ptrdiff_t refresh_every,
                         int force_refresh) {
    ptrdiff_t k;
    if (r1 <= r0) return;
    for (k = k0; k < k1; k++)
        FN(cyrbm_ak_step)(P, S, r0, r1, weights ? betas + k - 1 : betas + k, betas + k, 0,
                          weights, k < k_end,
                          (force_refresh && k == k0) ||
                          (refresh_every > 0 && k % refresh_every == 0));
}

/* Sweeps s0 <= s < s1 of tempered block Gibbs for runs [r0, r1): run r moves by T_beta[r]
 * (cyrbm_ak_step at its own inverse temperature, no weights), leaving its own p_beta[r]
 * invariant; with B empty and beta = 0, plain block Gibbs on A (SM08 Eq. 5-6).  Inputs
 * are recomputed exactly at sweeps with s % refresh_every == 0 and at s0 when
 * force_refresh is set (2: x was just recomputed by cyrbm_ais_refresh_inputs, the same
 * numbers); the sweep numbers make a chain taken in pieces equal one call.  weights == 2
 * (with force_refresh): the first sweep also sets logw[r] to the PT tracker's sum of the
 * run's state before it moves (cyrbm_ak_hidden_run), in CRI10's configuration.
 * Parallel tempering and RBM.sample are schedules of this transition. */
void FN(cyrbm_gibbs_tempered)(const cyrbm_ais_pair *P, cyrbm_ais_state *S, ptrdiff_t r0,
                              ptrdiff_t r1, const double *beta, ptrdiff_t s0, ptrdiff_t s1,
                              ptrdiff_t refresh_every, int force_refresh, int weights) {
    ptrdiff_t s;
    if (r1 <= r0) return;
    for (s = s0; s < s1; s++)
        FN(cyrbm_ak_step)(P, S, r0, r1, beta, beta, 1,
                          weights == 2 && force_refresh && s == s0 ? 2 : 0, 1,
                          force_refresh && s == s0 ? force_refresh
                          : refresh_every > 0 && s % refresh_every == 0);
}

/* Parallel-tempering swaps (Cho, Raiko & Ilin 2010, Table I step 4b, Eq. 5) for the
 * ladders [m0, m1) of an engine in CRI10's configuration: A without hidden units, B the
 * RBM with zero stored hidden biases and its biases c in eB, bA = bB = b, so that the run
 * at beta moves by the RBM (beta W, b, c).  Ladder m holds the K1 runs m K1 .. m K1 + K1 - 1;
 * order[m K1 + k] (INOUT) is the run at temperature temps[k] (0 <= temps[0] < ... <
 * temps[K1 - 1] = 1).  First each run's hidden inputs are brought up to date with its last
 * visible flips (the next step then has none to add: the same bits as without swaps).
 * Then for k = K1 - 1 down to 1 the runs at temps[k] and temps[k - 1] swap temperatures
 * with probability min(1, p_{k-1}(x_k) p_k(x_{k-1}) / (p_k(x_k) p_{k-1}(x_{k-1}))), where
 * ln p_t(v) = b.v + sum_j softplus(t (W^T v)_j + c_j) (b.v cancels), one uniform of the
 * ladder's stream streams[m] per pair.  beta[run] (OUT) receives each run's temperature;
 * accepted[m (K1 - 1) + k - 1] (INOUT) counts the accepted swaps of pair (k - 1, k).
 * terms (OUT, when not NULL; 3 K1 - 1 per ladder, row m) receives what the sums give the
 * PT tracker of ln Z (DCB11), with f_t(x) = ln p_t(x) - b.x: terms[k] = f_{t_k} of the
 * state left at temps[k]; terms[K1 + k - 1] = f_{t_k}(x) - f_{t_{k-1}}(x) and
 * terms[2 K1 - 1 + k - 1] = f_{t_{k-1}}(y) - f_{t_k}(y) for the states x at temps[k - 1]
 * and y at temps[k] when the pair (k - 1, k) was tried (the bridge sampling weights of
 * that pair, both ways); terms[3 K1 - 2] = f_1 of the state left at temps[K1 - 2] (one
 * more sum a ladder, the rest at no further cost). */
void FN(cyrbm_pt_swaps)(const cyrbm_ais_pair *P, cyrbm_ais_state *S, ptrdiff_t m0,
                        ptrdiff_t m1, ptrdiff_t K1, const double *temps, int32_t *order,
                        double *beta, cyrbm_rng *streams, int64_t *accepted, double *terms) {
    const ptrdiff_t ldV = P->ldV, ldA = P->ldA, ldB = P->ldB;
    const T *eB = (const T *)P->eB;
    ptrdiff_t m, k;
    /* at t = 0, t x_j + c_j is c_j whatever x (finite x: 0 x + c = c, and a zero's sign
     * changes neither max(z, 0) nor exp(-|z|)): one sum serves every run */
    const double f_zero = temps[0] == 0.0 && m1 > m0
        ? FN(cyrbm_ak_softplus_sum)((const T *)S->xB + m0 * K1 * ldB, eB, P->nB, 0.0) : 0.0;
    for (m = m0; m < m1; m++) {
        int32_t *o = order + m * K1;
        double f_top;
        for (k = 0; k < K1; k++) {
            const ptrdiff_t r = m * K1 + k;
            if (P->nA > 0)
                FN(cyrbm_ak_add_rows)((const T *)P->WA, ldA, S->vlist + r * ldV, S->nv[r],
                                      S->vlist_off + r * ldV, S->nv_off[r],
                                      (T *)S->xA + r * ldA, 0, (const T *)P->aA);
            if (P->nB > 0)
                FN(cyrbm_ak_add_rows)((const T *)P->WB, ldB, S->vlist + r * ldV, S->nv[r],
                                      S->vlist_off + r * ldV, S->nv_off[r],
                                      (T *)S->xB + r * ldB, 0, (const T *)P->aB);
            S->nv[r] = S->nv_off[r] = 0;
        }
        f_top = FN(cyrbm_ak_softplus_sum)((const T *)S->xB + o[K1 - 1] * ldB, eB, P->nB,
                                          temps[K1 - 1]);
        for (k = K1 - 1; k >= 1; k--) {
            const int32_t ra = o[k], rb = o[k - 1];
            const T *xa = (const T *)S->xB + ra * ldB, *xb = (const T *)S->xB + rb * ldB;
            const int zero = temps[k - 1] == 0.0;
            const double fa_lo = zero ? f_zero
                                      : FN(cyrbm_ak_softplus_sum)(xa, eB, P->nB, temps[k - 1]);
            const double fb_lo = zero ? f_zero
                                      : FN(cyrbm_ak_softplus_sum)(xb, eB, P->nB, temps[k - 1]);
            const double fb_hi = FN(cyrbm_ak_softplus_sum)(xb, eB, P->nB, temps[k]);
            const double log_r = (fa_lo + fb_hi) - (f_top + fb_lo);
            const double u = cyrbm_rng_uniform(&streams[m]);
            const int swap = log_r >= 0.0 || u < cyrbm_exp_neg(log_r);
            if (terms != NULL) {
                double *tm = terms + m * (3 * K1 - 1);
                tm[k] = swap ? fb_hi : f_top;
                tm[K1 + k - 1] = fb_hi - fb_lo;
                tm[2 * K1 - 1 + k - 1] = fa_lo - f_top;
            }
            if (swap) {
                o[k] = rb;
                o[k - 1] = ra;
                accepted[m * (K1 - 1) + k - 1] += 1;
                f_top = fa_lo;
            } else {
                f_top = fb_lo;
            }
        }
        if (terms != NULL) {
            terms[m * (3 * K1 - 1)] = f_top;
            terms[m * (3 * K1 - 1) + 3 * K1 - 2] = FN(cyrbm_ak_softplus_sum)(
                (const T *)S->xB + o[K1 - 2] * ldB, eB, P->nB, temps[K1 - 1]);
        }
        for (k = 0; k < K1; k++) beta[o[k]] = temps[k];
    }
}

/* The PT tracker's free energies from the kept inputs of an engine in CRI10's
 * configuration (current: after cyrbm_pt_swaps or cyrbm_ais_refresh_inputs):
 * out[i] = sum_j softplus(beta[i] (W^T v)_j + c_j) + dbias.v for run runs[i], i in
 * [i0, i1), summed as the swaps sum them (cyrbm_ak_softplus_sum), dbias (float64, D) or
 * NULL for none. */
void FN(cyrbm_tempered_sums)(const cyrbm_ais_pair *P, const cyrbm_ais_state *S,
                             ptrdiff_t i0, ptrdiff_t i1, const int32_t *runs,
                             const double *beta, const double *dbias, double *out) {
    const T *eB = (const T *)P->eB;
    ptrdiff_t i;
    for (i = i0; i < i1; i++) {
        const ptrdiff_t r = runs[i];
        out[i] = FN(cyrbm_ak_softplus_sum)((const T *)S->xB + r * P->ldB, eB, P->nB, beta[i]) +
                 (dbias != NULL ? cyrbm_ak_bias_dot(S->v + r * P->ldV, dbias, P->D) : 0.0);
    }
}

#undef CHUNK
#undef NQC
#undef VB
#undef XCOLS
#undef DENSE_G
#undef DENSE_PREFETCH
#undef DENSE_C

