/* The pieces of a block-Gibbs half-step and of a CD/PCD update, for one float type:
 * included by gibbs.c once per type through float_t.h (T, VT, VL, FN, ...).
 *
 * Summation order, everywhere: out = bias, then + row 0, + row 1, ... in list order
 * (resp. 0 + positive rows - negative rows), column by column, so results depend neither
 * on the vector width, nor on how columns are split between threads, nor on padding. */

/* ------------------------------------------------------------------------------------
 * out[0:n] += sum_r W[rows[r], 0:n] (rows of stride ldw, OP +), four
 * vectors of columns at a time in registers across all the rows; the last 1 to 4
 * vectors' worth of columns in one pass at offsets that may overlap (an element covered
 * twice is computed twice from the same start with the same additions: the same bits).
 * ------------------------------------------------------------------------------------ */
#define CYRBM_DEFINE_ROWSUM(NAME, OP)                                                     \
    void FN(NAME)(T *restrict out, const T *restrict W, ptrdiff_t ldw,                    \
                  const int32_t *restrict rows, ptrdiff_t n_rows, ptrdiff_t n) {          \
        ptrdiff_t c0 = 0, n_full, b, r;                                                   \
        if (n < VL) {                                                                     \
            for (ptrdiff_t c = 0; c < n; c++) {                                           \
                T a = out[c];                                                             \
                for (r = 0; r < n_rows; r++) a = a OP W[(ptrdiff_t)rows[r] * ldw + c];    \
                out[c] = a;                                                               \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        n_full = n / (4 * VL);                                                            \
        if (n_full > 0 && n - n_full * 4 * VL < VL && n - n_full * 4 * VL > 0) n_full--;  \
        for (b = 0; b < n_full; b++, c0 += 4 * VL) {                                      \
            VT a0 = VLOAD(out + c0), a1 = VLOAD(out + c0 + VL);                           \
            VT a2 = VLOAD(out + c0 + 2 * VL), a3 = VLOAD(out + c0 + 3 * VL);              \
            for (r = 0; r < n_rows; r++) {                                                \
                const T *w = W + (ptrdiff_t)rows[r] * ldw + c0;                           \
                a0 = a0 OP VLOAD(w);                                                      \
                a1 = a1 OP VLOAD(w + VL);                                                 \
                a2 = a2 OP VLOAD(w + 2 * VL);                                             \
                a3 = a3 OP VLOAD(w + 3 * VL);                                             \
            }                                                                             \
            VSTORE(out + c0, a0);                                                         \
            VSTORE(out + c0 + VL, a1);                                                    \
            VSTORE(out + c0 + 2 * VL, a2);                                                \
            VSTORE(out + c0 + 3 * VL, a3);                                                \
        }                                                                                 \
        if (c0 < n) { /* VL <= n - c0 < 5 VL */                                           \
            ptrdiff_t o[5], k = 0, m, c;                                                  \
            VT a0, a1, a2, a3, a4;                                                        \
            for (c = c0; c + VL <= n && k < 5; c += VL) o[k++] = c;                       \
            if (k < 5 && o[k - 1] + VL < n) o[k++] = n - VL;                              \
            for (m = k; m < 5; m++) o[m] = o[0];                                          \
            a0 = VLOAD(out + o[0]); a1 = VLOAD(out + o[1]); a2 = VLOAD(out + o[2]);       \
            a3 = VLOAD(out + o[3]); a4 = VLOAD(out + o[4]);                               \
            for (r = 0; r < n_rows; r++) {                                                \
                const T *w = W + (ptrdiff_t)rows[r] * ldw;                                \
                a0 = a0 OP VLOAD(w + o[0]);                                               \
                a1 = a1 OP VLOAD(w + o[1]);                                               \
                a2 = a2 OP VLOAD(w + o[2]);                                               \
                a3 = a3 OP VLOAD(w + o[3]);                                               \
                a4 = a4 OP VLOAD(w + o[4]);                                               \
            }                                                                             \
            VSTORE(out + o[4], a4); VSTORE(out + o[3], a3); VSTORE(out + o[2], a2);       \
            VSTORE(out + o[1], a1); VSTORE(out + o[0], a0);                               \
        }                                                                                 \
    }
CYRBM_DEFINE_ROWSUM(cyrbm_add_rows, +)
#undef CYRBM_DEFINE_ROWSUM

/* sigma in place on x[0:n], n a multiple of 64 bytes' worth (a padded row) */
void FN(cyrbm_expit)(T *restrict x, ptrdiff_t n) {
    for (ptrdiff_t j = 0; j < n; j += VL) VSTORE(x + j, VSIG(VLOAD(x + j)));
}

/* ------------------------------------------------------------------------------------
 * Binary products on padded buffers (rows 64-byte aligned, cyrbm_padded_ld).
 * Columns are given in 64-byte units (nvec, 1..4: what a caller's block of work spans)
 * and taken KMAX native vectors at a time, each group through all the rows.
 *
 * rowsums(out, ldo, bias, A, lda, idx, ldi, cnt, n_rows, nvec, expit):
 *   for r < n_rows: out[r, :] = bias + sum_k A[idx[r*ldi + k], :] (k < cnt[r], in order),
 *   or sigma of that when `expit` (applied in registers: the same values as expit after).
 * rowdiffs(out, ldo, ncols, A, B, lda, pos, npos, neg, nneg, ldl, n_rows):
 *   for r < n_rows: out[r, 0:ncols] = 0 + sum_k A[pos[r*ldl + k], :] - sum_k B[neg[...], :];
 *   out may be any array and ncols (1 .. 4 x 64 bytes) need not fill a vector.
 * subset_sums(out, ldo, bias, A, lda, n_src, codes, ldc, n_rows, nvec, expit):
 *   the same products for dense states ("Four Russians"): for each group g of four
 *   source rows the 16 sums of its subsets are tabulated (T_g[s] = 0 + A[4g + k, :] + ...
 *   over the set bits k of s, rows >= n_src count as zero), and
 *   out[r, :] = bias + T_0[codes[r, 0]] + T_1[codes[r, 1]] + ... in this order (through
 *   sigma when `expit`); four groups' tables (16 KB) are built at a time and applied to
 *   every row while they sit in L1.  codes: cyrbm_state_codes.
 * ------------------------------------------------------------------------------------ */
#if CYRBM_VBYTES >= 64
#define KMAX 4
#define CYRBM_GROUP_CASES_5_8(GROUP)
#else
#define KMAX 8
#define CYRBM_GROUP_CASES_5_8(GROUP) \
    case 5: GROUP(5); break; case 6: GROUP(6); break; case 7: GROUP(7); break; \
    case 8: GROUP(8); break;
#endif
/* The one choice of a column group's width: GROUP(K) for the group of K = n native
 * vectors (1..KMAX), K a constant in each call, so that each width gets its own unrolled
 * instance. */
#define CYRBM_GROUP_SWITCH(n, GROUP)                                                      \
    switch (n) {                                                                          \
    case 1: GROUP(1); break; case 2: GROUP(2); break; case 3: GROUP(3); break;            \
    case 4: GROUP(4); break; CYRBM_GROUP_CASES_5_8(GROUP)                                 \
    default: break;                                                                       \
    }
#define CYRBM_SUBSET_CHUNK 4

CYRBM_INLINE void FN(cyrbm_store_group)(T *o, VT *a, int K, int expit) {
    int q;
    if (expit)
        for (q = 0; q < K; q++) a[q] = VSIG(a[q]);
    for (q = 0; q < K; q++) VSTORE(o + q * VL, a[q]);
}

CYRBM_INLINE void FN(cyrbm_rowsums_group)(T *restrict out, ptrdiff_t ldo,
                                          const T *restrict bias, const T *restrict A,
                                          ptrdiff_t lda, const int32_t *restrict idx,
                                          ptrdiff_t ldi, const int32_t *restrict cnt,
                                          ptrdiff_t n_rows, const int K, int expit) {
    ptrdiff_t r, k;
    int q;
    for (r = 0; r < n_rows; r++) {
        const int32_t *ix = idx + r * ldi;
        const ptrdiff_t c = cnt[r];
        VT a[KMAX];
        for (q = 0; q < K; q++) a[q] = VLOAD(bias + q * VL);
        for (k = 0; k < c; k++) {
            const T *w = A + (ptrdiff_t)ix[k] * lda;
            for (q = 0; q < K; q++) a[q] = a[q] + VLOAD(w + q * VL);
        }
        FN(cyrbm_store_group)(out + r * ldo, a, K, expit);
    }
}

void FN(cyrbm_rowsums)(T *restrict out, ptrdiff_t ldo, const T *restrict bias,
                       const T *restrict A, ptrdiff_t lda, const int32_t *restrict idx,
                       ptrdiff_t ldi, const int32_t *restrict cnt, ptrdiff_t n_rows,
                       int nvec, int expit) {
    const ptrdiff_t nn = (ptrdiff_t)nvec * (64 / (ptrdiff_t)sizeof(T)) / VL;
    ptrdiff_t c0;
    for (c0 = 0; c0 < nn; c0 += KMAX) {
        const ptrdiff_t o = c0 * VL;
#define GROUP(K) FN(cyrbm_rowsums_group)(out + o, ldo, bias + o, A + o, lda, idx, ldi, cnt, n_rows, K, expit)
        CYRBM_GROUP_SWITCH(nn - c0 < KMAX ? (int)(nn - c0) : KMAX, GROUP)
#undef GROUP
    }
}

CYRBM_INLINE void FN(cyrbm_rowdiffs_group)(T *restrict out, ptrdiff_t ldo, ptrdiff_t ncols,
                                           const T *restrict A, const T *restrict B,
                                           ptrdiff_t lda, const int32_t *restrict pos,
                                           const int32_t *restrict npos,
                                           const int32_t *restrict neg,
                                           const int32_t *restrict nneg, ptrdiff_t ldl,
                                           ptrdiff_t n_rows, const int K) {
    ptrdiff_t r, k;
    int q;
    for (r = 0; r < n_rows; r++) {
        const int32_t *ip = pos + r * ldl, *in = neg + r * ldl;
        const ptrdiff_t cp = npos[r], cn = nneg[r];
        VT a[KMAX];
        T *o = out + r * ldo;
        for (q = 0; q < K; q++) a[q] = (VT){0};
        for (k = 0; k < cp; k++) {
            const T *w = A + (ptrdiff_t)ip[k] * lda;
            for (q = 0; q < K; q++) a[q] = a[q] + VLOAD(w + q * VL);
        }
        for (k = 0; k < cn; k++) {
            const T *w = B + (ptrdiff_t)in[k] * lda;
            for (q = 0; q < K; q++) a[q] = a[q] - VLOAD(w + q * VL);
        }
        if (ncols == K * VL) {
            for (q = 0; q < K; q++) VSTORE(o + q * VL, a[q]);
        } else {
            memcpy(o, a, (size_t)ncols * sizeof(T));
        }
    }
}

void FN(cyrbm_rowdiffs)(T *restrict out, ptrdiff_t ldo, ptrdiff_t ncols, const T *restrict A,
                        const T *restrict B, ptrdiff_t lda, const int32_t *restrict pos,
                        const int32_t *restrict npos, const int32_t *restrict neg,
                        const int32_t *restrict nneg, ptrdiff_t ldl, ptrdiff_t n_rows) {
    const ptrdiff_t nn = (ncols + VL - 1) / VL;
    ptrdiff_t c0;
    for (c0 = 0; c0 < nn; c0 += KMAX) {
        const ptrdiff_t o = c0 * VL, w = ncols - o < KMAX * VL ? ncols - o : KMAX * VL;
#define GROUP(K) FN(cyrbm_rowdiffs_group)(out + o, ldo, w, A + o, B + o, lda, pos, npos, neg, nneg, ldl, n_rows, K)
        CYRBM_GROUP_SWITCH(nn - c0 < KMAX ? (int)(nn - c0) : KMAX, GROUP)
#undef GROUP
    }
}

CYRBM_INLINE void FN(cyrbm_subset_group)(T *restrict out, ptrdiff_t ldo, const T *restrict bias,
                                         const T *restrict A, ptrdiff_t lda, ptrdiff_t n_src,
                                         const uint8_t *restrict codes, ptrdiff_t ldc,
                                         ptrdiff_t n_rows, const int K, int expit_last,
                                         T *restrict tab) {
    const ptrdiff_t n_groups = (n_src + 3) / 4;
    const ptrdiff_t TW = KMAX * VL;      /* table row width */
    ptrdiff_t g0, g, r;
    int q, s;
    for (g0 = 0; g0 < n_groups; g0 += CYRBM_SUBSET_CHUNK) {
        const ptrdiff_t ng = n_groups - g0 < CYRBM_SUBSET_CHUNK ? n_groups - g0
                                                                : CYRBM_SUBSET_CHUNK;
        for (g = 0; g < ng; g++) {
            T *t = tab + g * 16 * TW;
            for (q = 0; q < K; q++) VSTORE(t + q * VL, (VT){0});
            for (s = 1; s < 16; s++) {
                const int k = s >= 8 ? 3 : s >= 4 ? 2 : s >= 2 ? 1 : 0;   /* highest set bit */
                const T *prev = t + (s ^ (1 << k)) * TW;
                T *cur = t + s * TW;
                const ptrdiff_t row = 4 * (g0 + g) + k;
                for (q = 0; q < K; q++)
                    VSTORE(cur + q * VL, row < n_src
                           ? VLOAD(prev + q * VL) + VLOAD(A + row * lda + q * VL)
                           : VLOAD(prev + q * VL));
            }
        }
        for (r = 0; r < n_rows; r++) {
            const uint8_t *code = codes + r * ldc + g0;
            T *o = out + r * ldo;
            const T *src = g0 == 0 ? bias : o;
            VT a[KMAX];
            for (q = 0; q < K; q++) a[q] = VLOAD(src + q * VL);
            for (g = 0; g < ng; g++) {
                const T *t = tab + (g * 16 + code[g]) * TW;
                for (q = 0; q < K; q++) a[q] = a[q] + VLOAD(t + q * VL);
            }
            FN(cyrbm_store_group)(o, a, K, expit_last && g0 + ng == n_groups);
        }
    }
}

void FN(cyrbm_subset_sums)(T *restrict out, ptrdiff_t ldo, const T *restrict bias,
                           const T *restrict A, ptrdiff_t lda, ptrdiff_t n_src,
                           const uint8_t *restrict codes, ptrdiff_t ldc, ptrdiff_t n_rows,
                           int nvec, int expit) {
    T tab[CYRBM_SUBSET_CHUNK * 16 * KMAX * VL] CYRBM_ALIGN64;
    const ptrdiff_t nn = (ptrdiff_t)nvec * (64 / (ptrdiff_t)sizeof(T)) / VL;
    ptrdiff_t c0;
    for (c0 = 0; c0 < nn; c0 += KMAX) {
        const ptrdiff_t o = c0 * VL;
#define GROUP(K) FN(cyrbm_subset_group)(out + o, ldo, bias + o, A + o, lda, n_src, codes, ldc, n_rows, K, expit, tab)
        CYRBM_GROUP_SWITCH(nn - c0 < KMAX ? (int)(nn - c0) : KMAX, GROUP)
#undef GROUP
    }
}
#undef KMAX
#undef CYRBM_GROUP_CASES_5_8
#undef CYRBM_GROUP_SWITCH

/* out[j] = 0 + (A[0, j] - B[0, j]) + (A[1, j] - B[1, j]) + ... for j < n, in row order:
 * the hidden-bias gradient. */
void FN(cyrbm_colsum_diff)(T *restrict out, const T *restrict A, const T *restrict B,
                           ptrdiff_t ld, ptrdiff_t n_rows, ptrdiff_t n) {
    ptrdiff_t j, r;
    for (j = 0; j < n; j++) out[j] = 0;
    for (r = 0; r < n_rows; r++)
        for (j = 0; j < n; j++) out[j] = out[j] + (A[r * ld + j] - B[r * ld + j]);
}

/* ------------------------------------------------------------------------------------
 * One row of the momentum step (SGD with momentum and L2 decay on W):
 *   vel = mom * vel + lr * (sc * dW - wd * W);  W = W + vel
 * in this order for every element; the new row also goes to `copy` unless NULL.
 * Returns 1 when every new W is finite (w - w == 0), 0 otherwise.
 * ------------------------------------------------------------------------------------ */
int FN(cyrbm_momentum)(T *restrict W, T *restrict vel, const T *restrict dW, ptrdiff_t n,
                       T lr, T mom, T wd, T sc, T *restrict copy) {
    ptrdiff_t j = 0;
    int ok = 1;
#if CYRBM_VBYTES > 0
    VM bad = {0};
    int q;
    for (; j + VL <= n; j += VL) {
        VT w = VLOAD(W + j), v = VLOAD(vel + j), d = VLOAD(dW + j);
        v = mom * v + lr * (sc * d - wd * w);
        w = w + v;
        VSTORE(vel + j, v);
        VSTORE(W + j, w);
        if (copy) VSTORE(copy + j, w);
        bad |= (VM)(w - w != 0);
    }
    for (q = 0; q < VL; q++) ok &= !bad[q];
#endif
    for (; j < n; j++) {
        T v = mom * vel[j] + lr * (sc * dW[j] - wd * W[j]);
        T w = W[j] + v;
        vel[j] = v;
        W[j] = w;
        if (copy) copy[j] = w;
        ok &= (w - w == 0);
    }
    return ok;
}

#if !CYRBM_CAT(CYRBM_VEC8X8, CYRBM_FT)
/* the plain 8 x 8 transpose, where the variant has no register form for T (gibbs.c) */
CYRBM_INLINE void FN(cyrbm_transpose8x8)(T *restrict d, ptrdiff_t ldd, const T *restrict s,
                                         ptrdiff_t lds) {
    int i, j;
    for (i = 0; i < 8; i++)
        for (j = 0; j < 8; j++) d[j * ldd + i] = s[i * lds + j];
}
#endif

/* dst[j, i] = src[i, j] for i < rows, j < cols (dst is cols x rows with stride ldd), in
 * 8 x 8 blocks (register transposes where the variant has them, see gibbs.c), rows of
 * src outermost, 16 rows at a time when there are that many so that the two 8-row blocks
 * fill the same output cache lines back to back. */
void FN(cyrbm_transpose)(T *restrict dst, ptrdiff_t ldd, const T *restrict src,
                         ptrdiff_t lds, ptrdiff_t rows, ptrdiff_t cols) {
    ptrdiff_t i0 = 0, j0, k;
    for (; i0 + 16 <= rows; i0 += 16) {
        for (j0 = 0; j0 + 8 <= cols; j0 += 8) {
            FN(cyrbm_transpose8x8)(dst + j0 * ldd + i0, ldd, src + i0 * lds + j0, lds);
            FN(cyrbm_transpose8x8)(dst + j0 * ldd + i0 + 8, ldd, src + (i0 + 8) * lds + j0, lds);
        }
        for (; j0 < cols; j0++)
            for (k = 0; k < 16; k++) dst[j0 * ldd + i0 + k] = src[(i0 + k) * lds + j0];
    }
    for (; i0 + 8 <= rows; i0 += 8) {
        for (j0 = 0; j0 + 8 <= cols; j0 += 8)
            FN(cyrbm_transpose8x8)(dst + j0 * ldd + i0, ldd, src + i0 * lds + j0, lds);
        for (; j0 < cols; j0++)
            for (k = 0; k < 8; k++) dst[j0 * ldd + i0 + k] = src[(i0 + k) * lds + j0];
    }
    for (; i0 < rows; i0++)
        for (j0 = 0; j0 < cols; j0++) dst[j0 * ldd + i0] = src[i0 * lds + j0];
}

/* Eight chains at once: the same draws as eight calls of cyrbm_bernoulli_* on rows
 * p + k*ldp (k < 8) with streams rng[k], outputs at state + k*n, idx + k*n, cnt[k].
 * Where vectors hold eight uint64 lanes the eight xoshiro256++ streams advance together
 * (each lane sees exactly its own numbers); each block of 8 x 8 draws is transposed so
 * that a chain's 8 numbers sit in one vector, converted to the same 53-bit uniforms
 * (rng.h, CYRBM_U53) and compared with 8 probabilities at once.  Units past the last
 * whole block of 8 are drawn one by one. */
void FN(cyrbm_bernoulli8)(const T *restrict p, ptrdiff_t ldp, ptrdiff_t n, cyrbm_rng *rng,
                          uint8_t *restrict state, int32_t *restrict idx,
                          int32_t *restrict cnt) {
#if CYRBM_VBYTES >= 64
    vq s0, s1, s2, s3;
    int32_t c[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    ptrdiff_t u0 = 0;
    int k, j;
    for (k = 0; k < 8; k++) {
        s0[k] = rng[k].s[0]; s1[k] = rng[k].s[1];
        s2[k] = rng[k].s[2]; s3[k] = rng[k].s[3];
    }
    for (; u0 + 8 <= n; u0 += 8) {
        vq x[8], y[8];
        for (j = 0; j < 8; j++) CYRBM_XOSHIRO_STEP(vq, s0, s1, s2, s3, x[j]);
        CYRBM_K(cyrbm_transpose8x8_u64)(y, x);   /* y[k][j] = x[j][k] */
        for (k = 0; k < 8; k++) {
            const vd u = CYRBM_U53(ASD, y[k]);
            const vq on = MASKQ(u < VLOADD(p + k * ldp + u0));
            const unsigned mask = mask_bits_d(on);   /* bit j: unit u0 + j on */
            const uint64_t bytes = bits_to_bytes8(mask);
            memcpy(state + k * n + u0, &bytes, 8);
            cyrbm_emit8(mask, (int32_t)u0, idx + k * n, &c[k]);
        }
    }
    for (k = 0; k < 8; k++) {
        int32_t q;
        rng[k].s[0] = s0[k]; rng[k].s[1] = s1[k];
        rng[k].s[2] = s2[k]; rng[k].s[3] = s3[k];
        cnt[k] = c[k] + TN(cyrbm_bernoulli)(p + k * ldp + u0, n - u0, &rng[k],
                                            state + k * n + u0, idx + k * n + c[k]);
        for (q = c[k]; q < cnt[k]; q++) idx[k * n + q] += (int32_t)u0;
    }
#else
    int k;
    for (k = 0; k < 8; k++)
        cnt[k] = TN(cyrbm_bernoulli)(p + k * ldp, n, &rng[k], state + k * n, idx + k * n);
#endif
}
