/* The kernels' bits, variant by variant, without Python: a plain C99 program over the one
 * dispatch table (cyrbm/_kernels/kernels.h).  On fixed inputs made here from a fixed seed
 * (splitmix64), every variant of the build that this CPU runs takes
 *
 *   ais        AIS runs (SM08 Eq. 13-18) from the base-rate model to an RBM, and between
 *              two RBMs (ratio AIS), float32 and float64: cyrbm_ais_visible at beta 0,
 *              then cyrbm_ais_block over a schedule (log weights, final states, streams)
 *   tempered   block-Gibbs sweeps at per-run inverse temperatures (cyrbm_gibbs_tempered)
 *   cd         CD half-steps: products through the logistic function (cyrbm_rowsums, and
 *              cyrbm_subset_sums for dense states) and the eight-lane Bernoulli draws of
 *              cyrbm_bernoulli8
 *   gauss      AIS steps of a Gaussian-visible RBM (cyrbm_gauss_block), its hidden
 *              probabilities and weight gradient (cyrbm_gauss_hidden, _gradient)
 *   units      the unit-type table (kernels.h: cyrbm_unit_type): each visible unit
 *              type's instance of the one Gibbs driver (unit_gibbs_t.h) through the
 *              table, Gaussian units with p(h | v) at a step, lateral (SRBM) units over
 *              several runs, which must give the bits of the thin entries
 *              (cyrbm_gauss_block, cyrbm_srbm_steps run by run)
 *   stream     the random stream itself: xoshiro256++ outputs and the AIS lane seeding
 *
 * and prints, per variant and test, a 64-bit FNV-1a hash of the outputs' bytes and the
 * first values' bits.  Every variant must print the same lines (the README's promise:
 * the same bits everywhere); the program exits 1 when two variants it ran differ, and
 * .ci/run compares the lines of the x86-64 build with those of the aarch64 build run
 * under qemu-user.
 *
 * Build (the package's flags, no OpenMP; the variants as setup.py names them):
 *   for each ISA in the target's variants, and FAMILY in table gibbs anneal chib:
 *     cc -O3 -std=c99 -ffp-contract=off -DCYRBM_ISA_<ISA> [ISA flags] -Iinclude
 *        -Icyrbm/_kernels -c cyrbm/_kernels/FAMILY.c
 *   cc ... -DCYRBM_HAVE_<ISA>... -c cyrbm/_kernels/dispatch.c; cc ... -c common.c;
 *   cc ... tools/kernel_harness.c *.o -lm
 * (.ci/run does this for x86-64 and, with aarch64-linux-gnu-gcc -static, for aarch64.)
 *
 * Usage: kernel_harness [VARIANT ...]   (default: every variant of the build). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "kernels.h"

/* ---- fixed inputs: splitmix64 (not cyrbm's generator: only the inputs come from it) ---- */
static uint64_t sm_state;
static uint64_t sm_next(void) {
    uint64_t z = (sm_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
/* a uniform double in [lo, hi), 53 bits (sums of such values round, in float32 and in
 * float64, so that a changed summation order changes bits) */
static double sm_unif(double lo, double hi) {
    return lo + (hi - lo) * ((double)(sm_next() >> 11) * 0x1.0p-53);
}
static void sm_streams(cyrbm_rng *r, ptrdiff_t n) {
    ptrdiff_t i;
    int w;
    for (i = 0; i < n; i++)
        for (w = 0; w < 4; w++) r[i].s[w] = sm_next();
}

/* ---- output: FNV-1a 64 over the bytes of every output, plus the first values' bits ---- */
typedef struct {
    uint64_t h;
    char first[160];
    size_t nfirst;
} digest;
static void dg_init(digest *d) { d->h = 0xcbf29ce484222325ULL; d->first[0] = 0; d->nfirst = 0; }
static void dg_bytes(digest *d, const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) { d->h ^= c[i]; d->h *= 0x100000001b3ULL; }
}
static void dg_double(digest *d, const double *x, size_t n) {  /* also noted: x[0] */
    uint64_t b;
    dg_bytes(d, x, n * sizeof(double));
    if (n > 0 && d->nfirst < 3) {
        memcpy(&b, x, 8);
        d->nfirst += 1;
        sprintf(d->first + strlen(d->first), " %016llx", (unsigned long long)b);
    }
}

/* set by a test whose two routes to the same bits disagree */
static int harness_bad = 0;

/* the lines of one variant: "test hash first-values" */
#define MAX_LINES 32
static char lines[8][MAX_LINES][256];
static int n_lines[8];
static void emit(int vi, const char *isa, const char *name, digest *d) {
    char *o = lines[vi][n_lines[vi]++];
    sprintf(o, "%s %016llx%s", name, (unsigned long long)d->h, d->first);
    printf("%s %s\n", isa, o);
}

static void *xcalloc(size_t n) {
    void *p = calloc(n + 64, 1);
    if (p == NULL) { fprintf(stderr, "kernel_harness: out of memory\n"); exit(2); }
    return p;
}
/* 64-byte aligned view of a calloc'd block (the block itself kept for free) */
#define ALIGN64(p) ((void *)(((uintptr_t)(p) + 63) & ~(uintptr_t)63))

/* ---- parameters in the kernels' float type ---- */
static void put(int f32, void *buf, ptrdiff_t k, double x) {
    if (f32) ((float *)buf)[k] = (float)x; else ((double *)buf)[k] = x;
}
static double get(int f32, const void *buf, ptrdiff_t k) {
    return f32 ? (double)((const float *)buf)[k] : ((const double *)buf)[k];
}

/* ---- AIS pair and state: the engine's layout (cyrbm/_anneal.pyx, _ais_layout and
 * ais_set_rbm) without the subset tables (dense = 0) ---- */
static ptrdiff_t pad_rows(ptrdiff_t n) {
    ptrdiff_t m = (n + CYRBM_AK_PAD - 1) / CYRBM_AK_PAD * CYRBM_AK_PAD;
    if (m > 0 && (m / CYRBM_AK_PAD) % 2 == 0) m += CYRBM_AK_PAD;
    return m;
}
static void *take(char *base, size_t *total, size_t nbytes) {
    size_t at = (*total + 63) & ~(size_t)63;
    *total = at + nbytes + 64;
    return base == NULL ? NULL : (void *)(base + at);
}
static size_t ais_layout(cyrbm_ais_pair *P, cyrbm_ais_state *S, size_t R, char *base, size_t s) {
    size_t D = P->D, nA = P->nA, nB = P->nB, ldV = P->ldV, ldA = P->ldA, ldB = P->ldB;
    size_t ldA1 = ldA > 1 ? ldA : 1, ldB1 = ldB > 1 ? ldB : 1;
    size_t ldA16 = ldA > 16 ? ldA : 16, ldB16 = ldB > 16 ? ldB : 16, i32 = 4, t = 0;
    P->WA = take(base, &t, D * ldA1 * s);
    P->WAT = take(base, &t, (nA > 1 ? nA : 1) * ldV * s);
    P->aA = take(base, &t, ldA1 * s);
    P->bA = take(base, &t, ldV * s);
    P->WB = take(base, &t, D * ldB1 * s);
    P->WBT = take(base, &t, (nB > 1 ? nB : 1) * ldV * s);
    P->aB = take(base, &t, ldB1 * s);
    P->bB = take(base, &t, ldV * s);
    P->dbias = (const double *)take(base, &t, ldV * 8);
    S->v = (uint8_t *)take(base, &t, R * ldV);
    S->hA = (uint8_t *)take(base, &t, R * ldA16);
    S->hB = (uint8_t *)take(base, &t, R * ldB16);
    S->xA = take(base, &t, R * ldA16 * s);
    S->xB = take(base, &t, R * ldB16 * s);
    S->uA = take(base, &t, R * ldV * s);
    S->uB = take(base, &t, R * ldV * s);
    S->vlist = (int32_t *)take(base, &t, R * ldV * i32);
    S->vlist_off = (int32_t *)take(base, &t, R * ldV * i32);
    S->nv = (int32_t *)take(base, &t, R * i32);
    S->nv_off = (int32_t *)take(base, &t, R * i32);
    S->hlistA = (int32_t *)take(base, &t, R * ldA16 * i32);
    S->hlistA_off = (int32_t *)take(base, &t, R * ldA16 * i32);
    S->nhA = (int32_t *)take(base, &t, R * i32);
    S->nhA_off = (int32_t *)take(base, &t, R * i32);
    S->hlistB = (int32_t *)take(base, &t, R * ldB16 * i32);
    S->hlistB_off = (int32_t *)take(base, &t, R * ldB16 * i32);
    S->nhB = (int32_t *)take(base, &t, R * i32);
    S->nhB_off = (int32_t *)take(base, &t, R * i32);
    S->logw = (double *)take(base, &t, R * 8);
    S->rng = (uint64_t *)take(base, &t, R * CYRBM_AK_RNG_WORDS * 8);
    S->cur = (int32_t *)take(base, &t, R * (size_t)S->cur_stride * i32);
    S->sel_dense = (int32_t *)take(base, &t, R * i32);
    S->sel_sparse = (int32_t *)take(base, &t, R * i32);
    S->ustale = (uint8_t *)take(base, &t, R);
    return t;
}
static void *ais_alloc(cyrbm_ais_pair *P, cyrbm_ais_state *S, int f32, ptrdiff_t R,
                       ptrdiff_t D, ptrdiff_t nA, ptrdiff_t nB) {
    const ptrdiff_t tile_rows = CYRBM_AK_TILE_BYTES / CYRBM_AK_CHUNK_BYTES;
    const size_t s = f32 ? 4 : 8;
    void *block;
    memset(P, 0, sizeof *P);
    memset(S, 0, sizeof *S);
    P->D = D; P->nA = nA; P->nB = nB;
    P->ldV = pad_rows(D); P->ldA = pad_rows(nA); P->ldB = pad_rows(nB);
    S->cur_stride = 2 * ((nA + tile_rows - 1) / tile_rows + 1)
                  + 2 * ((nB + tile_rows - 1) / tile_rows + 1);
    P->gV = (D + 3) / 4; P->gA = (nA + 3) / 4; P->gB = (nB + 3) / 4;
    P->dense = 0;
    P->dense_x = CYRBM_AK_DENSE_X; P->dense_u = CYRBM_AK_DENSE_U;
    block = xcalloc(ais_layout(P, S, (size_t)R, NULL, s));
    ais_layout(P, S, (size_t)R, (char *)ALIGN64(block), s);
    return block;
}
/* RBM `which` (0: A, 1: B) of the pair from W (D x n, C order), vbias, hbias */
static void ais_set_rbm(cyrbm_ais_pair *P, int f32, int which, const double *W,
                        const double *vb, const double *hb) {
    const ptrdiff_t D = P->D, ldV = P->ldV, n = which ? P->nB : P->nA;
    const ptrdiff_t ld = which ? P->ldB : P->ldA, rows = n > 1 ? n : 1;
    const ptrdiff_t chunk = CYRBM_AK_CHUNK_BYTES / (f32 ? 4 : 8);
    void *Wr = (void *)(which ? P->WB : P->WA), *Wt = (void *)(which ? P->WBT : P->WAT);
    void *a = (void *)(which ? P->aB : P->aA), *b = (void *)(which ? P->bB : P->bA);
    double *db = (double *)P->dbias, bound = 0.0;
    ptrdiff_t i, j, s0;
    for (i = 0; i < D; i++) put(f32, b, i, vb[i]);
    for (j = 0; j < n; j++) put(f32, a, j, hb[j]);
    for (i = 0; i < D; i++)
        for (j = 0; j < n; j++) put(f32, Wr, i * ld + j, W[i * n + j]);
    for (s0 = 0; s0 < ldV; s0 += chunk) {   /* W^T in column chunks, each row-major */
        const ptrdiff_t width = s0 + chunk <= ldV ? chunk : ldV - s0;
        for (j = 0; j < n; j++)
            for (i = s0; i < (s0 + width < D ? s0 + width : D); i++)
                put(f32, Wt, rows * s0 + j * width + (i - s0), W[i * n + j]);
    }
    for (i = 0; i < ldV; i++) db[i] = get(f32, P->bA, i) - get(f32, P->bB, i);
    for (j = 0; j < n; j++) {   /* |x_j| <= |a_j| + sum_i |W_ij|, 1% margin */
        double x = fabs(get(f32, a, j));
        for (i = 0; i < D; i++) x += fabs(get(f32, Wr, i * ld + j));
        if (j == 0 || x > bound) bound = x;
    }
    if (n > 0) bound = bound * 1.01 + 1e-6;
    if (which) P->xboundB = bound; else P->xboundA = bound;
}
static void random_rbm(double *W, double *vb, double *hb, ptrdiff_t D, ptrdiff_t n, double scale) {
    ptrdiff_t i;
    for (i = 0; i < D * n; i++) W[i] = sm_unif(-scale, scale);
    for (i = 0; i < D; i++) vb[i] = sm_unif(-1.0, 1.0);
    for (i = 0; i < n; i++) hb[i] = sm_unif(-1.0, 1.0);
}
/* the runs' log weights, states, streams, and the inputs they keep: x = W^T v + a and
 * u = W h (a rounding change in u rarely changes a draw, so u is hashed itself) */
static void ais_digest(digest *d, const cyrbm_ais_pair *P, const cyrbm_ais_state *S,
                       ptrdiff_t R, int f32) {
    const size_t s = f32 ? 4 : 8;
    ptrdiff_t r;
    dg_double(d, S->logw, (size_t)R);
    dg_bytes(d, S->v, (size_t)(R * P->ldV));
    dg_bytes(d, S->hB, (size_t)(R * P->ldB));
    dg_bytes(d, S->rng, (size_t)R * CYRBM_AK_RNG_WORDS * 8);
    for (r = 0; r < R; r++) {
        dg_bytes(d, (const char *)S->xB + r * P->ldB * s, (size_t)P->nB * s);
        dg_bytes(d, (const char *)S->uB + r * P->ldV * s, (size_t)P->D * s);
        if (P->nA > 0) {
            dg_bytes(d, (const char *)S->xA + r * P->ldA * s, (size_t)P->nA * s);
            dg_bytes(d, (const char *)S->uA + r * P->ldV * s, (size_t)P->D * s);
        }
    }
}

/* AIS from A (nA hidden units; 0: the base-rate model, SM08 Eq. 18) to B over K + 1
 * betas, then (tempered) sweeps at per-run betas on the same state */
static void test_ais(int vi, const char *isa, int f32, ptrdiff_t nA) {
    const ptrdiff_t D = 37, nB = 45, R = 13, K = 60, sweeps = 9;
    cyrbm_ais_pair P;
    cyrbm_ais_state S;
    double *WA = malloc(sizeof(double) * D * 64), *WB = malloc(sizeof(double) * D * 64);
    double vA[64], hA[64], vB[64], hB[64], betas[61], tb[13];
    cyrbm_rng chain;
    void *block;
    digest d;
    char name[64];
    ptrdiff_t r, k;
    sm_state = 1000 + (uint64_t)nA;
    random_rbm(WA, vA, hA, D, nA, 0.3);
    random_rbm(WB, vB, hB, D, nB, 0.25);
    block = ais_alloc(&P, &S, f32, R, D, nA, nB);
    ais_set_rbm(&P, f32, 0, WA, vA, hA);
    ais_set_rbm(&P, f32, 1, WB, vB, hB);
    sm_streams(&chain, 1);
    for (r = 0; r < R; r++) cyrbm_rng_seed_run(&chain, S.rng + r * CYRBM_AK_RNG_WORDS);
    for (k = 0; k <= K; k++) betas[k] = (double)k / (double)K;
    betas[1] = 0.001;                       /* small first steps: the series of the weights */
    betas[2] = 0.0025;
    if (nA == 0) {                          /* step 0: the exact draw from the base */
        if (f32) cyrbm_ais_visible_f32(&P, &S, 0, R, 0.0);
        else cyrbm_ais_visible_f64(&P, &S, 0, R, 0.0);
    } else {                                /* ratio AIS: starting states given */
        for (r = 0; r < R; r++)
            for (k = 0; k < D; k++) S.v[r * P.ldV + k] = (uint8_t)(sm_next() >> 63);
    }
    /* two pieces, as the engine takes them (inputs refreshed at the first) */
    if (f32) {
        cyrbm_ais_block_f32(&P, &S, 0, R, betas, 1, 25, K, 1, 7, 1);
        cyrbm_ais_block_f32(&P, &S, 0, R, betas, 25, K + 1, K, 1, 7, 0);
    } else {
        cyrbm_ais_block_f64(&P, &S, 0, R, betas, 1, 25, K, 1, 7, 1);
        cyrbm_ais_block_f64(&P, &S, 0, R, betas, 25, K + 1, K, 1, 7, 0);
    }
    dg_init(&d);
    ais_digest(&d, &P, &S, R, f32);
    sprintf(name, "ais_%s_nA%d", f32 ? "f32" : "f64", (int)nA);
    emit(vi, isa, name, &d);
    for (r = 0; r < R; r++) tb[r] = 0.2 + 0.8 * (double)r / (double)(R - 1);
    if (f32) cyrbm_gibbs_tempered_f32(&P, &S, 0, R, tb, 0, sweeps, 4, 1, 0);
    else cyrbm_gibbs_tempered_f64(&P, &S, 0, R, tb, 0, sweeps, 4, 1, 0);
    dg_init(&d);
    ais_digest(&d, &P, &S, R, f32);
    sprintf(name, "tempered_%s_nA%d", f32 ? "f32" : "f64", (int)nA);
    emit(vi, isa, name, &d);
    free(block);
    free(WA);
    free(WB);
}

/* One half-step of R chains (R a multiple of 8): out = sigma(bias + the rows of A (lda =
 * ldo) listed in idx / cnt, or coded in `codes` when not NULL) in column blocks of at most
 * 4 x 64 bytes, as the engine takes them; then the draws of bernoulli8 into state, sidx,
 * scnt. */
static void half_step(int f32, void *out, ptrdiff_t ldo, const void *bias, const void *A,
                      ptrdiff_t n_cols, const int32_t *idx, ptrdiff_t n_src,
                      const int32_t *cnt, const uint8_t *codes, ptrdiff_t R, cyrbm_rng *st,
                      uint8_t *state, int32_t *sidx, int32_t *scnt) {
    const ptrdiff_t s = f32 ? 4 : 8, VL = 64 / s, nv = (n_cols + VL - 1) / VL;
    const ptrdiff_t G = (n_src + 3) / 4;
    ptrdiff_t c0, r;
    for (c0 = 0; c0 < nv; c0 += 4) {
        const int g = (int)(nv - c0 < 4 ? nv - c0 : 4);
        const ptrdiff_t o = c0 * VL;
        if (f32 && codes)
            cyrbm_subset_sums_f32((float *)out + o, ldo, (const float *)bias + o,
                                  (const float *)A + o, ldo, n_src, codes, G, R, g, 1);
        else if (f32)
            cyrbm_rowsums_f32((float *)out + o, ldo, (const float *)bias + o,
                              (const float *)A + o, ldo, idx, n_src, cnt, R, g, 1);
        else if (codes)
            cyrbm_subset_sums_f64((double *)out + o, ldo, (const double *)bias + o,
                                  (const double *)A + o, ldo, n_src, codes, G, R, g, 1);
        else
            cyrbm_rowsums_f64((double *)out + o, ldo, (const double *)bias + o,
                              (const double *)A + o, ldo, idx, n_src, cnt, R, g, 1);
    }
    for (r = 0; r < R; r += 8) {
        if (f32) cyrbm_bernoulli8_f32((const float *)out + r * ldo, ldo, n_cols, st + r,
                                      state + r * n_cols, sidx + r * n_cols, scnt + r);
        else cyrbm_bernoulli8_f64((const double *)out + r * ldo, ldo, n_cols, st + r,
                                  state + r * n_cols, sidx + r * n_cols, scnt + r);
    }
}

/* CD half-steps on R chains: p(h | v) by rowsums (sparse lists) or subset_sums (dense
 * codes) through sigma, h by bernoulli8; then p(v | h) from W^T, v by bernoulli8 */
static void test_cd(int vi, const char *isa, int f32) {
    const ptrdiff_t D = 53, M = 70, R = 16, s = f32 ? 4 : 8;
    const ptrdiff_t ldM = cyrbm_padded_ld(M, s), ldD = cyrbm_padded_ld(D, s);
    void *bW = xcalloc((size_t)(D * ldM * s)), *bWT = xcalloc((size_t)(M * ldD * s));
    void *bb = xcalloc((size_t)(ldD * s)), *bc = xcalloc((size_t)(ldM * s));
    void *bph = xcalloc((size_t)(R * ldM * s)), *bpv = xcalloc((size_t)(R * ldD * s));
    void *W = ALIGN64(bW), *WT = ALIGN64(bWT), *b = ALIGN64(bb), *c = ALIGN64(bc);
    void *ph = ALIGN64(bph), *pv = ALIGN64(bpv);
    uint8_t *v = xcalloc((size_t)(R * D)), *h = xcalloc((size_t)(R * M));
    uint8_t *codes = xcalloc((size_t)(R * ((D + 3) / 4)));
    int32_t *vidx = xcalloc((size_t)(R * D) * 4), *hidx = xcalloc((size_t)(R * M) * 4);
    int32_t vcnt[16], hcnt[16];
    cyrbm_rng st[16];
    digest d;
    char name[32];
    ptrdiff_t i, j, r, step;
    sm_state = 2000;
    for (i = 0; i < D; i++)
        for (j = 0; j < M; j++) {
            const double w = sm_unif(-0.4, 0.4);
            put(f32, W, i * ldM + j, w);
            put(f32, WT, j * ldD + i, w);
        }
    for (i = 0; i < D; i++) put(f32, b, i, sm_unif(-1.0, 1.0));
    for (j = 0; j < M; j++) put(f32, c, j, sm_unif(-1.0, 1.0));
    sm_streams(st, R);
    for (r = 0; r < R; r++) {
        vcnt[r] = 0;
        for (i = 0; i < D; i++)
            if ((v[r * D + i] = (uint8_t)(sm_next() >> 63))) vidx[r * D + vcnt[r]++] = (int32_t)i;
    }
    dg_init(&d);
    for (step = 0; step < 6; step++) {
        const int dense = step % 2;
        if (dense)
            for (r = 0; r < R; r++) cyrbm_state_codes(v + r * D, D, codes + r * ((D + 3) / 4));
        half_step(f32, ph, ldM, c, W, M, vidx, D, vcnt, dense ? codes : NULL, R, st, h, hidx,
                  hcnt);                                                    /* h | v */
        half_step(f32, pv, ldD, b, WT, D, hidx, M, hcnt, NULL, R, st, v, vidx, vcnt);  /* v | h */
        for (r = 0; r < R; r++) {
            dg_bytes(&d, (char *)ph + r * ldM * s, (size_t)(M * s));
            dg_bytes(&d, (char *)pv + r * ldD * s, (size_t)(D * s));
        }
        dg_bytes(&d, h, (size_t)(R * M));
        dg_bytes(&d, v, (size_t)(R * D));
    }
    dg_bytes(&d, st, sizeof st);
    {   /* the first probabilities' bits, as float64 */
        double first = get(f32, ph, 0);
        dg_double(&d, &first, 1);
    }
    sprintf(name, "cd_%s", f32 ? "f32" : "f64");
    emit(vi, isa, name, &d);
    free(bW); free(bWT); free(bb); free(bc); free(bph); free(bpv);
    free(v); free(h); free(codes); free(vidx); free(hidx);
}

/* Gaussian visible units (MS09 Sec. 5.2): AIS from N(mu, sd^2) to the RBM with log
 * weights, then the CD step's p(h | v) and weight gradient */
static void test_gauss(int vi, const char *isa, int f32) {
    const ptrdiff_t D = 13, M = 21, R = 19, K = 40, s = f32 ? 4 : 8;
    cyrbm_gauss_pair P;
    double mu[13], sd[13], betas[41], logw[19] = {0};
    void *W = xcalloc((size_t)(D * M * s)), *b = xcalloc((size_t)(D * s));
    void *c = xcalloc((size_t)(M * s)), *sg = xcalloc((size_t)(D * s));
    void *v = xcalloc((size_t)(R * D * s)), *p = xcalloc((size_t)(R * M * s));
    void *out = xcalloc((size_t)(D * M * s)), *Wt = xcalloc((size_t)(D * M * s));
    uint8_t *h = xcalloc((size_t)(R * M));
    uint64_t h_rows = 0;
    int wt;
    size_t wb = (cyrbm_gauss_work_bytes(D, M) + 63) / 64 * 64;
    size_t gb = (cyrbm_gauss_gradient_work_bytes(R) + 63) / 64 * 64;
    void *bwork = xcalloc(wb > gb ? wb : gb), *work = ALIGN64(bwork);
    cyrbm_rng st[19], st0[19];
    digest d;
    char name[32];
    ptrdiff_t i, k;
    sm_state = 3000;
    for (i = 0; i < D * M; i++) put(f32, W, i, sm_unif(-0.3, 0.3));
    for (i = 0; i < D; i++) {
        put(f32, b, i, sm_unif(-1.0, 1.0));
        put(f32, sg, i, sm_unif(0.5, 1.5));
        mu[i] = sm_unif(-0.5, 0.5);
        sd[i] = sm_unif(0.7, 1.3);
    }
    for (i = 0; i < M; i++) put(f32, c, i, sm_unif(-1.0, 1.0));
    P.D = D; P.M = M; P.W = W; P.b = b; P.c = c; P.s = sg; P.mu = mu; P.sd = sd;
    for (k = 0; k <= K; k++) betas[k] = (double)k / (double)K;
    sm_streams(st0, R);
    for (wt = 0; wt < 2; wt++) {    /* without W^T, then with it: the last block's 3 runs
                                     * then take u = W h side by side from W^T's rows */
        P.Wt = wt ? Wt : NULL;
        for (i = 0; i < D * M; i++) put(f32, Wt, (i % M) * D + i / M, get(f32, W, i));
        memset(v, 0, (size_t)(R * D * s));
        memset(logw, 0, sizeof logw);
        memcpy(st, st0, sizeof st);
        if (f32) cyrbm_gauss_block_f32(&P, v, h, 0, R, betas, 0, K + 1, 1, st, logw, NULL, 0, work);
        else cyrbm_gauss_block_f64(&P, v, h, 0, R, betas, 0, K + 1, 1, st, logw, NULL, 0, work);
        dg_init(&d);
        dg_double(&d, logw, (size_t)R);
        dg_bytes(&d, v, (size_t)(R * D * s));
        dg_bytes(&d, h, (size_t)(R * M));
        dg_bytes(&d, st, sizeof st);
        sprintf(name, "gauss_ais_%s%s", wt ? "wt_" : "", f32 ? "f32" : "f64");
        emit(vi, isa, name, &d);
        if (wt && d.h != h_rows) {
            fprintf(stderr, "variant %s: %s differs from u = W h through W's rows\n", isa, name);
            harness_bad = 1;
        }
        h_rows = d.h;
    }
    dg_init(&d);
    if (f32) {
        cyrbm_gauss_hidden_f32(&P, v, 0, R, p, work);
        cyrbm_gauss_gradient_f32(v, p, v, p, R, D, M, 0, D, out, work);
    } else {
        cyrbm_gauss_hidden_f64(&P, v, 0, R, p, work);
        cyrbm_gauss_gradient_f64(v, p, v, p, R, D, M, 0, D, out, work);
    }
    dg_bytes(&d, p, (size_t)(R * M * s));
    dg_bytes(&d, out, (size_t)(D * M * s));
    {
        double first = get(f32, p, 0);
        dg_double(&d, &first, 1);
    }
    sprintf(name, "gauss_cd_%s", f32 ? "f32" : "f64");
    emit(vi, isa, name, &d);
    free(W); free(b); free(c); free(sg); free(v); free(p); free(out); free(h); free(bwork);
    free(Wt);
}

/* The unit-type table: each type's instance of the one Gibbs driver must give the bits of
 * its thin entry; the line hashes the driver's outputs. */
static int units_bad = 0;
static void units_same(const char *what, const void *a, const void *b, size_t n) {
    if (memcmp(a, b, n) != 0) {
        fprintf(stderr, "kernel_harness: the unit-type table's %s differs from its entry\n", what);
        units_bad = 1;
    }
}
static void test_units(int vi, const char *isa, int f32) {
    const cyrbm_unit_type *G = &cyrbm_kernels()->units[CYRBM_UNIT_GAUSS];
    const cyrbm_unit_type *L = &cyrbm_kernels()->units[CYRBM_UNIT_SRBM];
    const ptrdiff_t D = 11, M = 17, R = 21, K = 30, s = f32 ? 4 : 8;
    double mu[11], sd[11], bA[11], betas[31], logw[2][21], y[2][21 * 11];
    void *W = xcalloc((size_t)(D * M * s)), *b = xcalloc((size_t)(D * s));
    void *c = xcalloc((size_t)(M * s)), *sg = xcalloc((size_t)(D * s));
    void *Lw = xcalloc((size_t)(D * D * s));
    void *v[2], *p[2];
    uint8_t *h[2], *vb[2];
    size_t wb = G->work_bytes(D, M) > L->work_bytes(D, M) ? G->work_bytes(D, M)
                                                         : L->work_bytes(D, M);
    void *bwork = xcalloc((wb + 63) / 64 * 64), *work = ALIGN64(bwork);
    cyrbm_rng st[2][21];
    cyrbm_gauss_pair P;
    cyrbm_srbm_pair Q;
    cyrbm_gibbs_runs S;
    digest d;
    char name[32];
    ptrdiff_t i, j, k, r;
    int t;
    sm_state = 5000;
    for (i = 0; i < D * M; i++) put(f32, W, i, sm_unif(-0.4, 0.4));
    for (i = 0; i < D; i++) {
        put(f32, b, i, sm_unif(-1.0, 1.0));
        put(f32, sg, i, sm_unif(0.5, 1.5));
        mu[i] = sm_unif(-0.5, 0.5);
        sd[i] = sm_unif(0.7, 1.3);
        bA[i] = sm_unif(-1.0, 1.0);
        for (j = 0; j < i; j++) {
            const double l = sm_unif(-0.5, 0.5);
            put(f32, Lw, i * D + j, l);
            put(f32, Lw, j * D + i, l);
        }
    }
    for (j = 0; j < M; j++) put(f32, c, j, sm_unif(-1.0, 1.0));
    for (k = 0; k <= K; k++) betas[k] = (double)k / (double)K;
    sm_streams(st[0], R);
    memcpy(st[1], st[0], sizeof st[0]);
    for (t = 0; t < 2; t++) {
        v[t] = xcalloc((size_t)(R * D * s));
        p[t] = xcalloc((size_t)(R * M * s));
        h[t] = xcalloc((size_t)(R * M));
        vb[t] = xcalloc((size_t)(R * D));
        for (r = 0; r < R; r++) logw[t][r] = 0.0;
    }
    /* Gaussian units: the entry (t = 0), then the table's driver (t = 1) */
    memset(&P, 0, sizeof P);        /* P.Wt NULL: u through W's rows */
    P.D = D; P.M = M; P.W = W; P.b = b; P.c = c; P.s = sg; P.mu = mu; P.sd = sd;
    if (f32) cyrbm_gauss_block_f32(&P, v[0], h[0], 0, R, betas, 0, K + 1, 1, st[0], logw[0],
                                   p[0], K / 2, work);
    else cyrbm_gauss_block_f64(&P, v[0], h[0], 0, R, betas, 0, K + 1, 1, st[0], logw[0],
                               p[0], K / 2, work);
    memset(&S, 0, sizeof S);
    S.v = v[1]; S.h = h[1]; S.streams = st[1]; S.logw = logw[1]; S.p = p[1]; S.p_step = K / 2;
    (f32 ? G->gibbs_f32 : G->gibbs_f64)(&P, &S, 0, R, betas, 0, K + 1, 1, work);
    units_same("Gaussian states", v[0], v[1], (size_t)(R * D * s));
    units_same("Gaussian p(h | v)", p[0], p[1], (size_t)(R * M * s));
    units_same("Gaussian hidden states", h[0], h[1], (size_t)(R * M));
    units_same("Gaussian log weights", logw[0], logw[1], sizeof logw[0]);
    units_same("Gaussian streams", st[0], st[1], sizeof st[0]);
    dg_init(&d);
    dg_double(&d, logw[1], (size_t)R);
    dg_bytes(&d, v[1], (size_t)(R * D * s));
    dg_bytes(&d, p[1], (size_t)(R * M * s));
    dg_bytes(&d, h[1], (size_t)(R * M));
    dg_bytes(&d, st[1], sizeof st[1]);
    sprintf(name, "unit_gauss_%s", f32 ? "f32" : "f64");
    emit(vi, isa, name, &d);
    /* lateral units: run by run through the entry, then all runs through the table */
    Q.D = D; Q.M = M; Q.W = W; Q.b = b; Q.c = c; Q.L = Lw; Q.bA = bA;
    for (t = 0; t < 2; t++) {
        for (r = 0; r < R; r++) logw[t][r] = 0.0;
        memset(h[t], 0, (size_t)(R * M));
        memset(y[t], 0, sizeof y[t]);
    }
    for (r = 0; r < R; r++) {
        if (f32) cyrbm_srbm_steps_f32(&Q, vb[0] + r * D, h[0] + r * M, y[0] + r * D, work,
                                      betas, 0, K + 1, 1, 1, &st[0][r], &logw[0][r]);
        else cyrbm_srbm_steps_f64(&Q, vb[0] + r * D, h[0] + r * M, y[0] + r * D, work,
                                  betas, 0, K + 1, 1, 1, &st[0][r], &logw[0][r]);
    }
    memset(&S, 0, sizeof S);
    S.v = vb[1]; S.h = h[1]; S.streams = st[1]; S.logw = logw[1]; S.y = y[1]; S.fresh = 1;
    (f32 ? L->gibbs_f32 : L->gibbs_f64)(&Q, &S, 0, R, betas, 0, K + 1, 1, work);
    units_same("lateral states", vb[0], vb[1], (size_t)(R * D));
    units_same("lateral hidden states", h[0], h[1], (size_t)(R * M));
    units_same("lateral fields", y[0], y[1], sizeof y[0]);
    units_same("lateral log weights", logw[0], logw[1], sizeof logw[0]);
    units_same("lateral streams", st[0], st[1], sizeof st[0]);
    dg_init(&d);
    dg_double(&d, logw[1], (size_t)R);
    dg_bytes(&d, vb[1], (size_t)(R * D));
    dg_bytes(&d, h[1], (size_t)(R * M));
    dg_bytes(&d, st[1], sizeof st[1]);
    sprintf(name, "unit_srbm_%s", f32 ? "f32" : "f64");
    emit(vi, isa, name, &d);
    for (t = 0; t < 2; t++) { free(v[t]); free(p[t]); free(h[t]); free(vb[t]); }
    free(W); free(b); free(c); free(sg); free(Lw); free(bwork);
}

/* the random stream itself: xoshiro256++ outputs, the 53-bit uniforms, the AIS lanes */
static void test_stream(int vi, const char *isa) {
    cyrbm_rng r;
    uint64_t run[CYRBM_AK_RNG_WORDS], x[64];
    double u[64];
    digest d;
    int i;
    sm_state = 4000;
    sm_streams(&r, 1);
    for (i = 0; i < 64; i++) x[i] = cyrbm_rng_next(&r);
    for (i = 0; i < 64; i++) u[i] = cyrbm_rng_uniform(&r);
    cyrbm_rng_seed_run(&r, run);
    dg_init(&d);
    dg_bytes(&d, x, sizeof x);
    dg_double(&d, u, 64);
    dg_bytes(&d, run, sizeof run);
    for (i = 0; i < 64; i++) x[i] = cyrbm_rng_next_lane(run, i % 8);
    dg_bytes(&d, x, sizeof x);
    emit(vi, isa, "stream", &d);
}

int main(int argc, char **argv) {
    static const char *all[] = {"avx512", "avx2", "neon", "sse2", "generic"};
    const char *want[8], *first = NULL;
    int n_want = 0, nv = 0, i, j, bad = 0;
    if (argc > 1) {
        for (i = 1; i < argc && n_want < 8; i++) want[n_want++] = argv[i];
    } else {
        for (i = 0; i < 5; i++) want[n_want++] = all[i];
    }
    for (i = 0; i < n_want; i++) {
        const char *isa = want[i];
        int f32;
        if (cyrbm_kernels_init(isa) != 0) {
            fprintf(stderr, "variant %s: not in this build or not runnable here\n", isa);
            if (argc > 1) return 2;
            continue;
        }
        cyrbm_kt = cyrbm_kernels();
        if (first == NULL) first = isa;
        n_lines[nv] = 0;
        test_stream(nv, isa);
        for (f32 = 1; f32 >= 0; f32--) {
            test_ais(nv, isa, f32, 0);
            test_ais(nv, isa, f32, 29);
            test_cd(nv, isa, f32);
            test_gauss(nv, isa, f32);
            test_units(nv, isa, f32);
        }
        if (nv > 0)
            for (j = 0; j < n_lines[nv]; j++)
                if (strcmp(lines[nv][j], lines[0][j]) != 0) {
                    fprintf(stderr, "variant %s differs from %s: %s\n", isa, first, lines[nv][j]);
                    bad = 1;
                }
        nv++;
    }
    if (nv == 0) {
        fprintf(stderr, "kernel_harness: no variant ran\n");
        return 2;
    }
    return bad || units_bad || harness_bad;
}
