/* AIS kernels for one parameter type: included by anneal_kernels.h once with
 * CYRBM_AK_T = float (names ending _f32) and once with double (_f64).  Not a header to
 * include on its own.  See anneal_kernels.h for the algorithm and the memory layout. */
#define T CYRBM_AK_T
#define FN CYRBM_AK_NAME

#if CYRBM_AK_VECTOR
#if CYRBM_AK_IS_F32
#define VT cyrbm_v16f
#define IT cyrbm_v16i
#define BT cyrbm_v16c
#define VL 16
#define VLD cyrbm_ak_ld16f
#define VST cyrbm_ak_st16f
#define VEXP cyrbm_ak_exp16f
#define VUNIF cyrbm_ak_unif16f
#define VSIGN ((int32_t)0x80000000u)
#else
#define VT cyrbm_v8d
#define IT cyrbm_v8l
#define BT cyrbm_v8c
#define VL 8
#define VLD cyrbm_ak_ld8d
#define VST cyrbm_ak_st8d
#define VEXP cyrbm_ak_exp8d
#define VUNIF cyrbm_ak_unif8d
#define VSIGN INT64_MIN
#endif
#endif

/* Bring the inputs of R runs up to date with their flipped units:
 *   out[r, :] += sum_{i in on_r} W[i, :] - sum_{i in off_r} W[i, :]
 * where on_r / off_r (ascending, lists + r*ldl) are the units of run r that turned on /
 * off, cut into tiles by bounds + r*bstride (cyrbm_ak_tile_bounds).  On refresh, out[r, :]
 * is first set to 0 and on_r lists all the active units.
 *
 * W (nrows x ld) is stored in column chunks of CHUNK = CYRBM_AK_CHUNK_BYTES / sizeof(T)
 * columns (one 64-byte vector), each chunk row-major: chunk b holds columns
 * [b CHUNK, (b + 1) CHUNK) of every row, row i at offset b CHUNK nrows + i CHUNK.  Chunks
 * are taken one at a time and their rows in tiles of `tile` rows (32 KB: L1 cache), and
 * every run adds the rows it needs from the tile while the tile is in L1, so a row comes
 * from L2 once per step rather than once per run; the next tile is prefetched a slice per
 * run.  Each run sums a tile's rows in 8 accumulators, list entry e (counted from the
 * tile's first) going to accumulator e % 8, then adds ((a0 + a1) + (a2 + a3)) + ((a4 +
 * a5) + (a6 + a7)) to out: the arithmetic depends only on the lists and the tile size,
 * not on how runs or chunks are shared between threads. */
CYRBM_AK_INLINE void FN(cyrbm_ak_update)(const T *Wb, ptrdiff_t nrows, ptrdiff_t ld,
                                         ptrdiff_t tile, const int32_t *on,
                                         const int32_t *off, ptrdiff_t ldl,
                                         const int32_t *bounds, ptrdiff_t bstride, T *out,
                                         ptrdiff_t ldo, ptrdiff_t R, int refresh) {
    const ptrdiff_t CHUNK = CYRBM_AK_CHUNK_BYTES / (ptrdiff_t)sizeof(T);
    const ptrdiff_t ntiles = (nrows + tile - 1) / tile, nch = ld / CHUNK;
    ptrdiff_t b, t, r, q, qe;
    int pass;
    for (b = 0; b < nch; b++) {
        const T *blk = Wb + b * CHUNK * nrows;
        if (refresh)
            for (r = 0; r < R; r++) memset(out + r * ldo + b * CHUNK, 0, (size_t)CHUNK * sizeof(T));
        for (t = 0; t < ntiles; t++) {
            /* the next tile (of this chunk or the next one) on its way to the cache */
            const T *nxt = t + 1 < ntiles ? blk + (t + 1) * tile * CHUNK
                                          : (b + 1 < nch ? blk + nrows * CHUNK : NULL);
            const ptrdiff_t nbytes = (ptrdiff_t)sizeof(T) * CHUNK *
                                     (t + 1 < ntiles ? (nrows - (t + 1) * tile < tile
                                                            ? nrows - (t + 1) * tile : tile)
                                                     : (nrows < tile ? nrows : tile));
            for (r = 0; r < R; r++) {
                T *o = out + r * ldo + b * CHUNK;
                if (nxt) {
                    const ptrdiff_t p0 = nbytes * r / R / 64 * 64, p1 = nbytes * (r + 1) / R;
                    ptrdiff_t pb;
                    for (pb = p0; pb < p1; pb += 64) CYRBM_AK_PREFETCH((const char *)nxt + pb);
                }
                for (pass = 0; pass < 2; pass++) {
                    const int32_t *l = (pass == 0 ? on : off) + r * ldl;
                    const int32_t *bd = bounds + r * bstride + pass * (ntiles + 1);
                    q = bd[t];
                    qe = bd[t + 1];
                    if (qe == q) continue;
#if CYRBM_AK_VECTOR
                    {
                        const VT zero = {0};
                        VT a0 = zero, a1 = zero, a2 = zero, a3 = zero;
                        VT a4 = zero, a5 = zero, a6 = zero, a7 = zero;
                        for (; q + 8 <= qe; q += 8) {
                            a0 += VLD(blk + (ptrdiff_t)l[q] * CHUNK);
                            a1 += VLD(blk + (ptrdiff_t)l[q + 1] * CHUNK);
                            a2 += VLD(blk + (ptrdiff_t)l[q + 2] * CHUNK);
                            a3 += VLD(blk + (ptrdiff_t)l[q + 3] * CHUNK);
                            a4 += VLD(blk + (ptrdiff_t)l[q + 4] * CHUNK);
                            a5 += VLD(blk + (ptrdiff_t)l[q + 5] * CHUNK);
                            a6 += VLD(blk + (ptrdiff_t)l[q + 6] * CHUNK);
                            a7 += VLD(blk + (ptrdiff_t)l[q + 7] * CHUNK);
                        }
                        if (q < qe) a0 += VLD(blk + (ptrdiff_t)l[q] * CHUNK);
                        if (q + 1 < qe) a1 += VLD(blk + (ptrdiff_t)l[q + 1] * CHUNK);
                        if (q + 2 < qe) a2 += VLD(blk + (ptrdiff_t)l[q + 2] * CHUNK);
                        if (q + 3 < qe) a3 += VLD(blk + (ptrdiff_t)l[q + 3] * CHUNK);
                        if (q + 4 < qe) a4 += VLD(blk + (ptrdiff_t)l[q + 4] * CHUNK);
                        if (q + 5 < qe) a5 += VLD(blk + (ptrdiff_t)l[q + 5] * CHUNK);
                        if (q + 6 < qe) a6 += VLD(blk + (ptrdiff_t)l[q + 6] * CHUNK);
                        a0 = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
                        if (pass == 0) VST(o, VLD(o) + a0);
                        else VST(o, VLD(o) - a0);
                    }
#else
                    {
                        ptrdiff_t c, p;
                        for (c = 0; c < CHUNK; c++) {
                            T a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, sum;
                            for (p = q; p < qe; p++)
                                a[(p - q) % 8] += blk[(ptrdiff_t)l[p] * CHUNK + c];
                            sum = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
                            if (pass == 0) o[c] += sum;
                            else o[c] -= sum;
                        }
                    }
#endif
                }
            }
        }
    }
}

/* Bring the inputs of run r up to date with its few flipped units:
 *   o += sum_{i in on} W[i, :] - sum_{i in off} W[i, :]
 * with W row-major (rows of ld elements, ld a multiple of 16) and on / off the units
 * that turned on / off (n_on, n_off entries).  On refresh, o starts from init and "on"
 * lists all the active units.  Taken 8 vectors of columns at a time: each column's "on"
 * rows are summed in list order, added to o, then its "off" rows likewise subtracted. */
CYRBM_AK_INLINE void FN(cyrbm_ak_add_rows)(const T *W, ptrdiff_t ld, const int32_t *on,
                                           int32_t n_on, const int32_t *off, int32_t n_off,
                                           T *o, int refresh, const T *init) {
    ptrdiff_t c, q;
    int pass;
    if (refresh) memcpy(o, init, (size_t)ld * sizeof(T));
    for (pass = 0; pass < 2; pass++) {
        const int32_t *l = pass == 0 ? on : off;
        const int32_t n = pass == 0 ? n_on : n_off;
        if (n == 0) continue;
#if CYRBM_AK_VECTOR
        for (c = 0; c + 8 * VL <= ld; c += 8 * VL) {
            const VT zero = {0};
            VT a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            VT a4 = zero, a5 = zero, a6 = zero, a7 = zero;
            for (q = 0; q < n; q++) {
                const T *w = W + (ptrdiff_t)l[q] * ld + c;
                a0 += VLD(w);
                a1 += VLD(w + VL);
                a2 += VLD(w + 2 * VL);
                a3 += VLD(w + 3 * VL);
                a4 += VLD(w + 4 * VL);
                a5 += VLD(w + 5 * VL);
                a6 += VLD(w + 6 * VL);
                a7 += VLD(w + 7 * VL);
            }
            if (pass == 0) {
                VST(o + c, VLD(o + c) + a0);
                VST(o + c + VL, VLD(o + c + VL) + a1);
                VST(o + c + 2 * VL, VLD(o + c + 2 * VL) + a2);
                VST(o + c + 3 * VL, VLD(o + c + 3 * VL) + a3);
                VST(o + c + 4 * VL, VLD(o + c + 4 * VL) + a4);
                VST(o + c + 5 * VL, VLD(o + c + 5 * VL) + a5);
                VST(o + c + 6 * VL, VLD(o + c + 6 * VL) + a6);
                VST(o + c + 7 * VL, VLD(o + c + 7 * VL) + a7);
            } else {
                VST(o + c, VLD(o + c) - a0);
                VST(o + c + VL, VLD(o + c + VL) - a1);
                VST(o + c + 2 * VL, VLD(o + c + 2 * VL) - a2);
                VST(o + c + 3 * VL, VLD(o + c + 3 * VL) - a3);
                VST(o + c + 4 * VL, VLD(o + c + 4 * VL) - a4);
                VST(o + c + 5 * VL, VLD(o + c + 5 * VL) - a5);
                VST(o + c + 6 * VL, VLD(o + c + 6 * VL) - a6);
                VST(o + c + 7 * VL, VLD(o + c + 7 * VL) - a7);
            }
        }
        for (; c < ld; c += VL) {      /* the last, narrower block */
            const VT zero = {0};
            VT a0 = zero;
            for (q = 0; q < n; q++) a0 += VLD(W + (ptrdiff_t)l[q] * ld + c);
            if (pass == 0) VST(o + c, VLD(o + c) + a0);
            else VST(o + c, VLD(o + c) - a0);
        }
#else
        for (c = 0; c < ld; c++) {
            T a0 = 0;
            for (q = 0; q < n; q++) a0 += W[(ptrdiff_t)l[q] * ld + c];
            if (pass == 0) o[c] += a0;
            else o[c] -= a0;
        }
#endif
    }
}

/* Hidden half of step k for run r, once its pre-activations x are current:
 *   weights:    the log-weight increment ln p*_k(v) - ln p*_{k-1}(v), added to logw[r];
 *   transition: hA ~ Bernoulli(sigma((1-beta_k) xA)), hB ~ Bernoulli(sigma(beta_k xB))
 *               (SM08 Eq. 15-16), the flipped units listed in hlistA / hlistB.
 * For each hidden layer with share c of the inverse temperature (1 - beta for A, beta
 * for B), sum_j softplus(c x_j) = c sum_j max(x_j, 0) + ln prod_j (1 + exp(-c |x_j|)); the
 * products are kept as mantissa * 2^exponent, in float64. */
CYRBM_AK_INLINE void FN(cyrbm_ak_hidden_run)(const cyrbm_ais_pair *P, cyrbm_ais_state *S,
                                             ptrdiff_t r, double bp, double bc, int weights,
                                             int transition, int refresh) {
    const ptrdiff_t ldV = P->ldV;
    uint64_t *rng = S->rng + r * CYRBM_AK_RNG_WORDS;
    double dl = 0.0;
    int L;
    if (weights && refresh) {
        const uint8_t *v = S->v + r * ldV;
        double d = 0.0;
        ptrdiff_t i;
        for (i = 0; i < P->D; i++)
            if (v[i]) d += P->dbias[i];
        S->dot[r] = d;
    }
    S->nv[r] = S->nv_off[r] = 0;   /* visible flips consumed by the update of x */
    for (L = 0; L < 2; L++) {
        const ptrdiff_t n = L == 0 ? P->nA : P->nB, ld = L == 0 ? P->ldA : P->ldB;
        const T *x = (const T *)(L == 0 ? S->xA : S->xB) + r * ld;
        uint8_t *h = (L == 0 ? S->hA : S->hB) + r * ld;
        int32_t *fon = (L == 0 ? S->hlistA : S->hlistB) + r * ld;
        int32_t *foff = (L == 0 ? S->hlistA_off : S->hlistB_off) + r * ld;
        int32_t non = 0, noff = 0;
        const double cp = L == 0 ? 1.0 - bp : bp, cc = L == 0 ? 1.0 - bc : bc;
        /* exp(-cp |x|) = exp(-cc |x|) exp(d), d = (cc - cp) |x|: when |d| <= 1/64 for every
         * unit (|x| is at most xbound), exp(d) by its Taylor polynomial of degree 6
         * (remainder < 5e-17) instead of a second full exp */
        const double dc = cc - cp;
        const int series = weights && fabs(dc) * (L == 0 ? P->xboundA : P->xboundB) <= 0.015625;
        double relu = 0.0, Pp = 1.0, Ep = 0.0, Pc = 1.0, Ec = 0.0;
        ptrdiff_t j0, j;
        if (n == 0) continue;
#if CYRBM_AK_VECTOR
        {
            const cyrbm_v8d zero = {0}, one = zero + 1.0;
            cyrbm_v8q s[4];
            int l;
            if (transition) cyrbm_ak_rng_load(s, rng);
            for (j0 = 0; j0 < n; j0 += CYRBM_AK_BLOCK) {
                const ptrdiff_t j1 = j0 + CYRBM_AK_BLOCK < n ? j0 + CYRBM_AK_BLOCK : n;
                cyrbm_v8d rl = zero, pp = one, pc = one;
                (void)zero;
                double qp = 1.0, qc = 1.0;
                for (j = j0; j < j1; j += 8) {
#if CYRBM_AK_IS_F32
                    const cyrbm_v8d xd = cyrbm_ak_ld8f_as_d(x + j);
#else
                    const cyrbm_v8d xd = cyrbm_ak_ld8d(x + j);
#endif
                    const cyrbm_v8l valid = cyrbm_ak_valid8(n - j);
                    const cyrbm_v8d na = (cyrbm_v8d)((cyrbm_v8l)xd | INT64_MIN);   /* -|x| */
                    /* exp(-c |x|), 0 in lanes past the layer's end */
                    const cyrbm_v8d ec = (cyrbm_v8d)((cyrbm_v8l)cyrbm_ak_exp8d(cc * na) & valid);
                    if (weights) {
                        cyrbm_v8d ep;
                        if (series) {
                            const cyrbm_v8d d = dc * (zero - na), d2 = d * d;
                            ep = ec * (((1.0 + d) + d2 * (0.5 + d * (1.0 / 6.0))) +
                                       (d2 * d2) * ((1.0 / 24.0 + d * (1.0 / 120.0)) +
                                                    d2 * (1.0 / 720.0)));
                        } else {
                            ep = (cyrbm_v8d)((cyrbm_v8l)cyrbm_ak_exp8d(cp * na) & valid);
                        }
                        rl += (cyrbm_v8d)((xd > 0.0) & (cyrbm_v8l)xd);
                        pp *= 1.0 + ep;
                        pc *= 1.0 + ec;
                    }
                    if (transition) {
                        const cyrbm_v8d u = cyrbm_ak_unif8d(cyrbm_ak_next(s));
                        const cyrbm_v8l on =
                            (u * (1.0 + ec) <
                             CYRBM_AK_SEL(cyrbm_v8d, cyrbm_v8l, xd >= 0.0, one, ec)) & valid;
                        const cyrbm_v8c b = __builtin_convertvector(on, cyrbm_v8c) & 1;
                        uint64_t nw, ow, fl, nb;
                        memcpy(&nw, &b, 8);
                        memcpy(&ow, h + j, 8);
                        memcpy(h + j, &nw, 8);
                        fl = cyrbm_ak_pack8(nw ^ ow);
                        nb = cyrbm_ak_pack8(nw);
                        cyrbm_ak_emit8((unsigned)(fl & nb), (int32_t)j, fon, &non);
                        cyrbm_ak_emit8((unsigned)(fl & ~nb), (int32_t)j, foff, &noff);
                    }
                }
                if (weights) {
                    for (l = 0; l < 8; l++) {
                        relu += rl[l];
                        qp *= pp[l];
                        qc *= pc[l];
                    }
                    cyrbm_ak_mulexp_d(&Pp, &Ep, qp);
                    cyrbm_ak_mulexp_d(&Pc, &Ec, qc);
                }
            }
            if (transition) cyrbm_ak_rng_store(rng, s);
        }
#else
        {
            int l;
            for (j0 = 0; j0 < n; j0 += CYRBM_AK_BLOCK) {
                const ptrdiff_t j1 = j0 + CYRBM_AK_BLOCK < n ? j0 + CYRBM_AK_BLOCK : n;
                double rl[8] = {0, 0, 0, 0, 0, 0, 0, 0}, pp[8] = {1, 1, 1, 1, 1, 1, 1, 1};
                double pc[8] = {1, 1, 1, 1, 1, 1, 1, 1}, qp = 1.0, qc = 1.0;
                for (j = j0; j < j1; j += 8) {
                    uint64_t r8[8];
                    if (transition)
                        for (l = 0; l < 8; l++) r8[l] = cyrbm_ak_next_lane(rng, l);
                    for (l = 0; l < 8; l++) {
                        const double xd = (double)x[j + l], na = -fabs(xd);
                        const double ec = cyrbm_ak_exp_scalar(cc * na);
                        const int valid = j + l < n;
                        if (weights) {
                            rl[l] += xd > 0.0 ? xd : 0.0;
                            if (valid) {
                                double ep;
                                if (series) {
                                    const double d = dc * (-na), d2 = d * d;
                                    ep = ec * (((1.0 + d) + d2 * (0.5 + d * (1.0 / 6.0))) +
                                               (d2 * d2) * ((1.0 / 24.0 + d * (1.0 / 120.0)) +
                                                            d2 * (1.0 / 720.0)));
                                } else {
                                    ep = cyrbm_ak_exp_scalar(cp * na);
                                }
                                pp[l] *= 1.0 + ep;
                                pc[l] *= 1.0 + ec;
                            }
                        }
                        if (transition) {
                            uint64_t bits = (r8[l] >> 12) | 0x3FF0000000000000ULL;
                            double u;
                            uint8_t on;
                            memcpy(&u, &bits, 8);
                            u -= 1.0;
                            on = (uint8_t)(valid && u * (1.0 + ec) < (xd >= 0.0 ? 1.0 : ec));
                            if (on != h[j + l]) {
                                if (on) fon[non++] = (int32_t)(j + l);
                                else foff[noff++] = (int32_t)(j + l);
                            }
                            h[j + l] = on;
                        }
                    }
                }
                if (weights) {
                    for (l = 0; l < 8; l++) {
                        relu += rl[l];
                        qp *= pp[l];
                        qc *= pc[l];
                    }
                    cyrbm_ak_mulexp_d(&Pp, &Ep, qp);
                    cyrbm_ak_mulexp_d(&Pc, &Ec, qc);
                }
            }
        }
#endif
        if (transition) {
            (L == 0 ? S->nhA : S->nhB)[r] = non;
            (L == 0 ? S->nhA_off : S->nhB_off)[r] = noff;
        }
        if (weights)
            dl += (cc - cp) * relu + (log(Pc) - log(Pp)) + (Ec - Ep) * 0.69314718055994530942;
    }
    if (weights) S->logw[r] += dl + (bp - bc) * S->dot[r];
}

/* Visible half-step of run r at inverse temperature beta from the current inputs:
 * v_i ~ Bernoulli(sigma(y_i)), y = (1 - beta)(uA + bA) + beta (uB + bB) (SM08 Eq. 17).
 * Flipped units are listed in vlist (ascending); dot = (bA - bB).v follows v, a 64-unit
 * window at a time: + the window's "on" flips, then - its "off" flips, ascending. */
CYRBM_AK_INLINE void FN(cyrbm_ak_visible_run)(const cyrbm_ais_pair *P, cyrbm_ais_state *S,
                                              ptrdiff_t r, double beta) {
    const T *bA = (const T *)P->bA, *bB = (const T *)P->bB;
    const double *db = P->dbias;
    const ptrdiff_t D = P->D, nA = P->nA, nB = P->nB, ldV = P->ldV;
    const T *uA = (const T *)S->uA + r * ldV, *uB = (const T *)S->uB + r * ldV;
    uint8_t *v = S->v + r * ldV;
    uint64_t *rng = S->rng + r * CYRBM_AK_RNG_WORDS;
    int32_t *fon = S->vlist + r * ldV, *foff = S->vlist_off + r * ldV;
    const T ca = (T)(1.0 - beta), cb = (T)beta;
    double dot = S->dot[r];
    ptrdiff_t i;
    int32_t non = 0, noff = 0;
#if CYRBM_AK_VECTOR
    {
        const VT zero = {0}, one = zero + (T)1;
        cyrbm_v8q s[4];
        uint64_t mon = 0, moff = 0;   /* flips of the current 64-unit window */
        cyrbm_ak_rng_load(s, rng);
        for (i = 0; i < D; i += VL) {
            VT ya = VLD(bA + i), yb = VLD(bB + i), y, t, u;
            IT on;
            BT b;
            uint64_t nw[VL / 8], ow[VL / 8], fl, nb;
            const int sh = (int)(i & 63);
            int w;
            if (nA > 0) ya += VLD(uA + i);
            if (nB > 0) yb += VLD(uB + i);
            y = ca * ya + cb * yb;
            t = VEXP((VT)((IT)y | VSIGN));                     /* exp(-|y|) */
            u = VUNIF(cyrbm_ak_next(s));
#if CYRBM_AK_IS_F32
            on = (u * (one + t) < CYRBM_AK_SEL(VT, IT, y >= (T)0, one, t)) &
                 cyrbm_ak_valid16(D - i);
#else
            on = (u * (one + t) < CYRBM_AK_SEL(VT, IT, y >= (T)0, one, t)) &
                 cyrbm_ak_valid8(D - i);
#endif
            b = __builtin_convertvector(on, BT) & 1;
            memcpy(nw, &b, VL);
            memcpy(ow, v + i, VL);
            memcpy(v + i, nw, VL);
            for (w = 0; w < VL / 8; w++) {
                fl = cyrbm_ak_pack8(nw[w] ^ ow[w]);
                nb = cyrbm_ak_pack8(nw[w]);
                mon |= (fl & nb) << (sh + 8 * w);
                moff |= (fl & ~nb) << (sh + 8 * w);
            }
            if (sh + VL == 64 || i + VL >= D) {
                const int32_t n0 = non, f0 = noff;
                int32_t q;
                cyrbm_ak_emit(mon, i - sh, fon, &non);
                cyrbm_ak_emit(moff, i - sh, foff, &noff);
                for (q = n0; q < non; q++) dot += db[fon[q]];
                for (q = f0; q < noff; q++) dot -= db[foff[q]];
                mon = moff = 0;
            }
        }
        cyrbm_ak_rng_store(rng, s);
    }
#else
    {
        int l;
        int32_t n0 = 0, f0 = 0;       /* where the current 64-unit window's flips start */
        /* one float64 uniform per draw, or two float32 ones (low half first) */
        const ptrdiff_t step = CYRBM_AK_IS_F32 ? 16 : 8;
        for (i = 0; i < D; i += step) {
            uint64_t r8[8];
            for (l = 0; l < 8; l++) r8[l] = cyrbm_ak_next_lane(rng, l);
            for (l = 0; l < step; l++) {
                const ptrdiff_t unit = i + l;
                T u, y, t;
                uint8_t on;
#if CYRBM_AK_IS_F32
                uint32_t bits = ((uint32_t)(r8[l / 2] >> (32 * (l % 2))) >> 9) | 0x3F800000u;
                memcpy(&u, &bits, 4);
                u -= 1.0f;
#else
                uint64_t bits = (r8[l] >> 12) | 0x3FF0000000000000ULL;
                memcpy(&u, &bits, 8);
                u -= 1.0;
#endif
                if (unit >= D) break;
                y = ca * (bA[unit] + (nA > 0 ? uA[unit] : (T)0)) +
                    cb * (bB[unit] + (nB > 0 ? uB[unit] : (T)0));
#if CYRBM_AK_IS_F32
                t = cyrbm_ak_expf_scalar(-fabsf(y));
#else
                t = cyrbm_ak_exp_scalar(-fabs(y));
#endif
                on = (uint8_t)(u * ((T)1 + t) < (y >= (T)0 ? (T)1 : t));
                if (on != v[unit]) {
                    if (on) fon[non++] = (int32_t)unit;
                    else foff[noff++] = (int32_t)unit;
                }
                v[unit] = on;
            }
            if ((i + step) % 64 == 0 || i + step >= D) {   /* the window's flips, in order */
                int32_t q;
                for (q = n0; q < non; q++) dot += db[fon[q]];
                for (q = f0; q < noff; q++) dot -= db[foff[q]];
                n0 = non;
                f0 = noff;
            }
        }
    }
#endif
    S->nv[r] = non;
    S->nv_off[r] = noff;
    S->dot[r] = dot;
    S->nhA[r] = S->nhB[r] = S->nhA_off[r] = S->nhB_off[r] = 0;   /* consumed by the update of u */
}

/* Visible half-step at beta for runs [r0, r1) from the current inputs.  With no hidden
 * units in A and beta = 0 it draws exact independent samples from the base-rate model
 * p_A(v) = prod_i sigma(bA_i) (SM08 Eq. 18).  The next cyrbm_ais_block call must set
 * force_refresh (the inputs were not kept up to date with these flips' history). */
CYRBM_AK_CLONES static void FN(cyrbm_ais_visible)(const cyrbm_ais_pair *P, cyrbm_ais_state *S,
                                                  ptrdiff_t r0, ptrdiff_t r1, double beta) {
    ptrdiff_t r;
    for (r = r0; r < r1; r++) FN(cyrbm_ak_visible_run)(P, S, r, beta);
}

/* The active units of a 0/1 row, ascending. */
CYRBM_AK_INLINE int32_t FN(cyrbm_ak_active)(const uint8_t *s, ptrdiff_t n, int32_t *list) {
    int32_t c = 0;
    ptrdiff_t i;
    for (i = 0; i < n; i++) {
        list[c] = (int32_t)i;
        c += s[i] != 0;
    }
    return c;
}

/* Steps k0 <= k < k1 of an annealing schedule betas[0..k_end] for runs [r0, r1)
 * (SM08 Sec. 3.1-3.3).  At step k:
 *   if weights (k >= 1):  logw += ln p*_k(v) - ln p*_{k-1}(v)   (float64);
 *   if k < k_end:         one block-Gibbs transition T_k leaving p_k invariant:
 *                         hA ~ p(hA | v) at 1 - beta_k, hB ~ p(hB | v) at beta_k
 *                         (Eq. 15-16), then v ~ p(v | hA, hB) (Eq. 17).
 * Inputs x = W^T v + a and u = W h follow the flips; they are recomputed exactly at steps
 * with k % refresh_every == 0 and at k0 when force_refresh is set (needed whenever the
 * states were set from outside).  Runs are independent: any split of runs between
 * calls or threads gives the same numbers. */
CYRBM_AK_CLONES static void FN(cyrbm_ais_block)(const cyrbm_ais_pair *P, cyrbm_ais_state *S,
                                                ptrdiff_t r0, ptrdiff_t r1,
                                                const double *betas, ptrdiff_t k0,
                                                ptrdiff_t k1, ptrdiff_t k_end, int weights,
                                                ptrdiff_t refresh_every, int force_refresh) {
    const ptrdiff_t D = P->D, nA = P->nA, nB = P->nB;
    const ptrdiff_t ldV = P->ldV, ldA = P->ldA, ldB = P->ldB;
    const ptrdiff_t tile = CYRBM_AK_TILE_BYTES / CYRBM_AK_CHUNK_BYTES;
    const ptrdiff_t offB = 2 * ((nA + tile - 1) / tile + 1);   /* B's bounds after A's */
    const ptrdiff_t bs = S->cur_stride;
    ptrdiff_t k, r;
    if (r1 <= r0) return;
    for (k = k0; k < k1; k++) {
        const double bc = betas[k], bp = weights ? betas[k - 1] : bc;
        const int transition = k < k_end;
        const int refresh = (force_refresh && k == k0) ||
                            (refresh_every > 0 && k % refresh_every == 0);
        CYRBM_AK_PROF_START;
        /* x += rows of W for the flipped visible units (few), run by run */
        for (r = r0; r < r1; r++) {
            if (refresh) {
                S->nv[r] = FN(cyrbm_ak_active)(S->v + r * ldV, D, S->vlist + r * ldV);
                S->nv_off[r] = 0;
            }
#ifdef CYRBM_AK_PROFILE
            cyrbm_ak_prof[5] += (uint64_t)(S->nv[r] + S->nv_off[r]);
#endif
            if (nA > 0)
                FN(cyrbm_ak_add_rows)((const T *)P->WA, ldA, S->vlist + r * ldV, S->nv[r],
                                      S->vlist_off + r * ldV, S->nv_off[r],
                                      (T *)S->xA + r * ldA, refresh, (const T *)P->aA);
            if (nB > 0)
                FN(cyrbm_ak_add_rows)((const T *)P->WB, ldB, S->vlist + r * ldV, S->nv[r],
                                      S->vlist_off + r * ldV, S->nv_off[r],
                                      (T *)S->xB + r * ldB, refresh, (const T *)P->aB);
        }
        CYRBM_AK_PROF_LAP(0);
        /* log weights and hidden draws */
        for (r = r0; r < r1; r++)
            FN(cyrbm_ak_hidden_run)(P, S, r, bp, bc, weights, transition, refresh);
        CYRBM_AK_PROF_LAP(1);
        if (!transition) continue;
        /* where each tile of rows starts in the lists of hidden flips */
        for (r = r0; r < r1; r++) {
            int32_t *bd = S->cur + r * bs;
#ifdef CYRBM_AK_PROFILE
            cyrbm_ak_prof[4] += (uint64_t)(S->nhB[r] + S->nhB_off[r]);
#endif
            if (nA > 0) {
                if (refresh) {
                    S->nhA[r] = FN(cyrbm_ak_active)(S->hA + r * ldA, nA, S->hlistA + r * ldA);
                    S->nhA_off[r] = 0;
                }
                cyrbm_ak_tile_bounds(S->hlistA + r * ldA, S->nhA[r], S->hlistA_off + r * ldA,
                                     S->nhA_off[r], nA, tile, bd);
            }
            if (nB > 0) {
                if (refresh) {
                    S->nhB[r] = FN(cyrbm_ak_active)(S->hB + r * ldB, nB, S->hlistB + r * ldB);
                    S->nhB_off[r] = 0;
                }
                cyrbm_ak_tile_bounds(S->hlistB + r * ldB, S->nhB[r], S->hlistB_off + r * ldB,
                                     S->nhB_off[r], nB, tile, bd + offB);
            }
        }
        /* u += rows of W^T for the flipped hidden units (many): chunk by chunk, tile by
         * tile, all runs of the block */
        if (nA > 0)
            FN(cyrbm_ak_update)((const T *)P->WAT, nA, ldV, tile, S->hlistA + r0 * ldA,
                                S->hlistA_off + r0 * ldA, ldA, S->cur + r0 * bs, bs,
                                (T *)S->uA + r0 * ldV, ldV, r1 - r0, refresh);
        if (nB > 0)
            FN(cyrbm_ak_update)((const T *)P->WBT, nB, ldV, tile, S->hlistB + r0 * ldB,
                                S->hlistB_off + r0 * ldB, ldB, S->cur + r0 * bs + offB, bs,
                                (T *)S->uB + r0 * ldV, ldV, r1 - r0, refresh);
        CYRBM_AK_PROF_LAP(2);
        /* visible draws */
        for (r = r0; r < r1; r++) FN(cyrbm_ak_visible_run)(P, S, r, bc);
        CYRBM_AK_PROF_LAP(3);
    }
}

#undef T
#undef FN
#if CYRBM_AK_VECTOR
#undef VT
#undef IT
#undef BT
#undef VL
#undef VLD
#undef VST
#undef VEXP
#undef VUNIF
#undef VSIGN
#endif
