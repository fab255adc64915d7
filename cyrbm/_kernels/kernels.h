/* cyrbm's private kernel layer: what the Cython modules call (through _ckernels.pxd).
 *
 *   gibbs.c    binary products (row sums over active units, subset tables), the logistic
 *              function, Bernoulli draws, the momentum step, transposes: the pieces of a
 *              block-Gibbs half-step and of a CD/PCD update
 *   anneal.c   AIS runs between two RBMs, exact-enumeration chunks, the float64 hidden
 *              inputs of parallel tempering's swaps (GaussianRBM, SRBM)
 *   chib.c     single-site Gibbs on a DBN's first hidden layer (Chib-style, per-vector AIS)
 *   common.c   the few loops that have no vector code (compiled once)
 *   dispatch.c the one dispatch table and the run-time choice of variant
 *
 * gibbs.c, anneal.c and chib.c are compiled once per instruction set (simd.h: AVX-512,
 * AVX2+FMA, SSE2, NEON, plain C) into static libraries, each function then existing as
 * name_<isa>.  These files define CYRBM_KERNEL_LIBRARY before including this header.
 * The library (every variant, common.c, dispatch.c) is linked into one extension,
 * cyrbm._dispatch, whose one table (cyrbm_kernel_table) holds one variant of every kernel:
 * the widest the CPU runs, or the one named by CYRBM_FORCE_ISA or cyrbm._dispatch.
 * use_kernels.  The engine calls cyrbm_<name>(...) through that table (see the end of
 * this file).  Every variant gives the same bits.
 *
 * Buffers are marked IN (read), OUT (written) or INOUT. */
#ifndef CYRBM_KERNELS_H
#define CYRBM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "cyrbm/cyrbm_types.h"
#include "rng.h"
#include "vmath.h"
#include "omp_compat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- stopping on Ctrl-C / SIGTERM (common.c) ----
 * A kernel whose single work item can run for long (the Chib-style estimator's chain of
 * S steps, per-vector AIS over many betas) polls cyrbm_stop_requested between steps and
 * returns early, its outputs unfinished, when it is set.  cyrbm_stop_watch_begin installs,
 * for SIGINT and SIGTERM where Python (not SIG_DFL or SIG_IGN) handles them, a handler
 * that sets the flag and then calls Python's, so Python raises on its next check;
 * cyrbm_stop_watch_end restores the previous handlers, clears the flag and returns
 * whether it was set.  Call both from the main thread around the kernel; the flag is
 * never set when no signal came, so no result changes. */
#ifdef CYRBM_KERNEL_LIBRARY
extern volatile int cyrbm_stop_requested;
#endif

/* ---- layout ---- */

/* Elements per row of a padded buffer holding rows of n elements of `itemsize` bytes:
 * a whole, odd number of 64-byte lines (rows aligned, successive rows in different cache
 * sets). */
static inline ptrdiff_t cyrbm_padded_ld(ptrdiff_t n, ptrdiff_t itemsize) {
    ptrdiff_t lines = (n * itemsize + 63) / 64;
    if (lines % 2 == 0) lines += 1;
    return lines * (64 / itemsize);
}

/* The one aligned bump allocator of a layout: the next buffer of nbytes, 64-byte aligned,
 * at base + its offset; with base NULL only *total (the bytes needed so far) advances. */
static inline void *cyrbm_take(char *base, size_t *total, size_t nbytes) {
    const size_t at = (*total + 63) & ~(size_t)63;
    *total = at + nbytes;
    return base ? (void *)(base + at) : NULL;
}

#define CYRBM_AK_PAD 16          /* AIS row padding, in elements */
#define CYRBM_AK_BLOCK 128       /* hidden units per partial product (a multiple of 16) */
#define CYRBM_AK_CHUNK_BYTES 64  /* W^T is stored in column chunks this wide */
#ifndef CYRBM_AK_TILE_BYTES
#define CYRBM_AK_TILE_BYTES 32768 /* rows of a chunk taken at a time (L1 cache) */
#endif
#define CYRBM_AK_RNG_WORDS CYRBM_RNG_RUN_WORDS
/* A run recomputes its inputs from the subset tables instead of adding the weight rows
 * of its flipped units when 100 flips > CYRBM_AK_DENSE_X D (hidden inputs x) or
 * 100 flips > CYRBM_AK_DENSE_U n_hidden (visible inputs u), percentages measured on
 * bench/ais_dense.py and bench/ais_speed.py (see bench/README.md). */
#define CYRBM_AK_DENSE_X 20
#define CYRBM_AK_DENSE_U 40
#ifndef CYRBM_AK_DENSE_GROUPS
#define CYRBM_AK_DENSE_GROUPS 16 /* groups of a subset-table tile (8 rows each) */
#endif

/* The two RBMs of an annealing run, sharing the D visible units (SM08 Eq. 13-14):
 *   ln p*_k(v) = (1-beta_k) bA.v + beta_k bB.v
 *              + sum_j softplus((1-beta_k) xA_j) + sum_j softplus(beta_k xB_j). */
typedef struct {
    ptrdiff_t D, nA, nB;            /* visible units, hidden units of A and of B */
    ptrdiff_t ldV, ldA, ldB;        /* padded widths */
    const void *WA, *WAT, *aA, *bA; /* D x ldA, nA x ldV, ldA, ldV (bA: base biases) */
    const void *WB, *WBT, *aB, *bB; /* D x ldB, nB x ldV, ldB, ldV */
    const double *dbias;            /* ldV: bA - bB in float64 */
    double xboundA, xboundB;        /* bounds on |x| = |W^T v + a| over all v and units */
    /* Signed subset tables for steps where many units flip (NULL: none; anneal.c, "Many
     * flips"): for each group of 4 units of a layer and each of the 8 sign patterns
     * (+1, s1, s2, s3) of its units, half the signed sum of their weight rows, in column
     * chunks like WAT, and the offsets the recomputed inputs start from:
     *   TVA, TVB  visible groups -> inputs x of A's / B's hidden units (8 gV x ldA / ldB)
     *   THA, THB  A's / B's hidden groups -> the visible inputs u (8 gA / 8 gB x ldV)
     *   cVA, cVB  a + (sum of all visible units' rows) / 2     (ldA / ldB)
     *   cHA, cHB  (sum of all hidden units' rows) / 2           (ldV) */
    const void *TVA, *TVB, *THA, *THB, *cVA, *cVB, *cHA, *cHB;
    ptrdiff_t gV, gA, gB;           /* groups: ceil(D / 4), ceil(nA / 4), ceil(nB / 4) */
    int dense;                      /* 0: never use the tables, 1: when cheaper, 2: always */
    ptrdiff_t dense_x, dense_u;     /* thresholds, percent: CYRBM_AK_DENSE_X, _U */
    const void *eB;                 /* ldB or NULL: B's hidden biases added after beta,
                                     * sigma(beta xB + eB) (CRI10's family; no weights) */
} cyrbm_ais_pair;

/* The state of R runs (row r of each array belongs to run r). */
typedef struct {
    uint8_t *v, *hA, *hB;           /* R x ldV, R x ldA, R x ldB: 0/1 states (pads 0) */
    void *xA, *xB;                  /* R x ldA, R x ldB: hidden pre-activations W^T v + a */
    void *uA, *uB;                  /* R x ldV: visible inputs from the hiddens, W h */
    /* units that turned on / off in the last half-step (ascending), and their counts;
     * on refresh the "on" lists hold all active units */
    int32_t *vlist, *vlist_off, *nv, *nv_off;             /* R x ldV, R x ldV, R, R */
    int32_t *hlistA, *hlistA_off, *nhA, *nhA_off;         /* R x ldA, ..., R, R */
    int32_t *hlistB, *hlistB_off, *nhB, *nhB_off;         /* R x ldB, ..., R, R */
    double *logw;                   /* R: log importance weights */
    /* R: with top_on, a tempered sweep's weights == 2 also set logw_top[r] of the runs r
     * at beta top_from to their sums at top_beta (cyrbm_ak_step; the PT tracker's) */
    double *logw_top;
    double top_from, top_beta;
    int top_on;
    uint64_t *rng;                  /* R x 32: the runs' random streams (rng.h layout) */
    int32_t *cur;                   /* R x cur_stride: tile bounds of the hidden lists */
    ptrdiff_t cur_stride;           /* 2 (ceil(nA / tile) + 1) + 2 (ceil(nB / tile) + 1) */
    int32_t *sel_dense, *sel_sparse;  /* R, R: runs of a block taking each path */
    uint8_t *ustale;                /* R: 1 while run r's uB is not kept (tempered runs
                                     * at beta 0, whose visible draws do not use it) */
} cyrbm_ais_state;

/* ---- the dispatched kernels: X(return type, name, parameters, arguments) ----
 * Each kernel of a float type is listed once, with FT for the type and FS for its suffix
 * (f32 / f64); CYRBM_EACH_TYPE(LIST, X) expands a list for float and for double, so the
 * table, the variants' declarations and the engine's entry points all hold both
 * instances (cyrbm_add_rows_f32, cyrbm_add_rows_f64, ...) from one line each. */
#define CYRBM_EACH_TYPE(LIST, X) LIST(X, float, f32) LIST(X, double, f64)

#define CYRBM_GIBBS_KERNELS(X, FT, FS)                                                    \
    /* out[0:n] += sum_r W[rows[r], 0:n], rows in order (INOUT out) */                   \
    X(void, add_rows_##FS, (FT *out, const FT *W, ptrdiff_t ldw, const int32_t *rows,     \
                            ptrdiff_t n_rows, ptrdiff_t n), (out, W, ldw, rows, n_rows, n)) \
    /* padded products, see gibbs_t.h */                                                  \
    X(void, rowsums_##FS, (FT *out, ptrdiff_t ldo, const FT *bias, const FT *A,           \
                           ptrdiff_t lda, const int32_t *idx, ptrdiff_t ldi,              \
                           const int32_t *cnt, ptrdiff_t n_rows, int nvec, int expit),    \
      (out, ldo, bias, A, lda, idx, ldi, cnt, n_rows, nvec, expit))                       \
    X(void, rowdiffs_##FS, (FT *out, ptrdiff_t ldo, ptrdiff_t ncols, const FT *A,         \
                            const FT *B, ptrdiff_t lda, const int32_t *pos,               \
                            const int32_t *npos, const int32_t *neg, const int32_t *nneg, \
                            ptrdiff_t ldl, ptrdiff_t n_rows),                             \
      (out, ldo, ncols, A, B, lda, pos, npos, neg, nneg, ldl, n_rows))                    \
    X(void, subset_sums_##FS, (FT *out, ptrdiff_t ldo, const FT *bias, const FT *A,       \
                               ptrdiff_t lda, ptrdiff_t n_src, const uint8_t *codes,      \
                               ptrdiff_t ldc, ptrdiff_t n_rows, int nvec, int expit),     \
      (out, ldo, bias, A, lda, n_src, codes, ldc, n_rows, nvec, expit))                   \
    X(void, colsum_diff_##FS, (FT *out, const FT *A, const FT *B, ptrdiff_t ld,           \
                               ptrdiff_t n_rows, ptrdiff_t n), (out, A, B, ld, n_rows, n)) \
    X(void, expit_##FS, (FT *x, ptrdiff_t n), (x, n))                                     \
    X(void, bernoulli8_##FS, (const FT *p, ptrdiff_t ldp, ptrdiff_t n, cyrbm_rng *rng,    \
                              uint8_t *state, int32_t *idx, int32_t *cnt),                \
      (p, ldp, n, rng, state, idx, cnt))                                                  \
    X(int, momentum_##FS, (FT *W, FT *vel, const FT *dW, ptrdiff_t n, FT lr, FT mom,      \
                           FT wd, FT sc, FT *copy), (W, vel, dW, n, lr, mom, wd, sc, copy)) \
    X(void, transpose_##FS, (FT *dst, ptrdiff_t ldd, const FT *src, ptrdiff_t lds,        \
                             ptrdiff_t rows, ptrdiff_t cols), (dst, ldd, src, lds, rows, cols)) \
    /* one factorial layer's row: draws and the sums of ln Q, softplus, entropy (bound_t.h) */ \
    X(void, bern_row_##FS, (const FT *a, ptrdiff_t n, cyrbm_rng *rng, uint8_t *h,         \
                            int full, double *sums), (a, n, rng, h, full, sums))          \
    /* one mode-hopping proposal of AMH-p for one chain (modehop_t.h; INOUT v, rng) */    \
    X(int, amh_hop_##FS, (const FT *W, const FT *b, const FT *c, ptrdiff_t D,             \
                          ptrdiff_t M, const double *A, const double *AT, const double *sp, \
                          const double *logH, const double *Hp, ptrdiff_t L, uint8_t *v,  \
                          cyrbm_rng *rng, void *work, double *terms),                     \
      (W, b, c, D, M, A, AT, sp, logH, Hp, L, v, rng, work, terms))

#define CYRBM_ANNEAL_KERNELS(X, FT, FS)                                                   \
    /* AIS steps k0 <= k < k1 for runs [r0, r1), see anneal.c (INOUT S) */                \
    X(void, ais_block_##FS, (const cyrbm_ais_pair *P, cyrbm_ais_state *S, ptrdiff_t r0,   \
                             ptrdiff_t r1, const double *betas, ptrdiff_t k0, ptrdiff_t k1, \
                             ptrdiff_t k_end, int weights, ptrdiff_t refresh_every,       \
                             int force_refresh),                                          \
      (P, S, r0, r1, betas, k0, k1, k_end, weights, refresh_every, force_refresh))        \
    /* tempered block-Gibbs sweeps s0 <= s < s1, run r at beta[r] (INOUT S) */            \
    X(void, gibbs_tempered_##FS, (const cyrbm_ais_pair *P, cyrbm_ais_state *S,            \
                                  ptrdiff_t r0, ptrdiff_t r1, const double *beta,         \
                                  ptrdiff_t s0, ptrdiff_t s1, ptrdiff_t refresh_every,    \
                                  int force_refresh, int weights),                        \
      (P, S, r0, r1, beta, s0, s1, refresh_every, force_refresh, weights))                \
    X(void, ais_visible_##FS, (const cyrbm_ais_pair *P, cyrbm_ais_state *S, ptrdiff_t r0, \
                               ptrdiff_t r1, double beta), (P, S, r0, r1, beta))          \
    /* parallel-tempering swaps of ladders [m0, m1), see anneal_t.h (INOUT S, order,     \
     * streams, accepted; OUT beta) */                                                    \
    X(void, pt_swaps_##FS, (const cyrbm_ais_pair *P, cyrbm_ais_state *S, ptrdiff_t m0,    \
                            ptrdiff_t m1, ptrdiff_t K1, const double *temps, int32_t *order, \
                            double *beta, cyrbm_rng *streams, int64_t *accepted,         \
                            double *terms),                                               \
      (P, S, m0, m1, K1, temps, order, beta, streams, accepted, terms))                  \
    /* the inputs x of runs [r0, r1) recomputed as a refreshing step does, no flips     \
     * pending (INOUT S; the next step may pass refresh 2) */                            \
    X(void, ais_refresh_inputs_##FS, (const cyrbm_ais_pair *P, cyrbm_ais_state *S,        \
                                      ptrdiff_t r0, ptrdiff_t r1), (P, S, r0, r1))        \
    /* the PT tracker's sums of softplus(beta x + c) (+ dbias.v) of runs[i0 .. i1) from  \
     * the kept inputs (OUT out) */                                                      \
    X(void, tempered_sums_##FS, (const cyrbm_ais_pair *P, const cyrbm_ais_state *S,       \
                                 ptrdiff_t i0, ptrdiff_t i1, const int32_t *runs,         \
                                 const double *beta, const double *dbias, double *out),   \
      (P, S, i0, i1, runs, beta, dbias, out))                                             \
    /* Gaussian visible units: steps k0 <= k < k1 of runs [r0, r1), see gauss_t.h       \
     * (INOUT v, streams, logw; OUT h; OUT p, runs x M, when not NULL: p(h | v) at step   \
     * p_step; scratch work of cyrbm_gauss_work_bytes) */                                 \
    X(void, gauss_block_##FS, (const cyrbm_gauss_pair *P, FT *v, uint8_t *h, ptrdiff_t r0, \
                               ptrdiff_t r1, const double *betas, ptrdiff_t k0,           \
                               ptrdiff_t k1, int weights, cyrbm_rng *streams,             \
                               double *logw, FT *p, ptrdiff_t p_step, void *work),        \
      (P, v, h, r0, r1, betas, k0, k1, weights, streams, logw, p, p_step, work))         \
    /* the same, as the Gaussian unit type's instance of the one Gibbs driver over the  \
     * runs S (unit_gibbs_t.h; the unit-type table: cyrbm_unit_type) */                  \
    X(void, gibbs_gauss_##FS, (const void *P, const cyrbm_gibbs_runs *S, ptrdiff_t r0,    \
                               ptrdiff_t r1, const double *betas, ptrdiff_t k0,           \
                               ptrdiff_t k1, int weights, void *work),                    \
      (P, S, r0, r1, betas, k0, k1, weights, work))                                       \
    /* the CD step's p(h | v) of runs [r0, r1) (OUT p, runs x M; scratch work) */        \
    X(void, gauss_hidden_##FS, (const cyrbm_gauss_pair *P, const FT *v, ptrdiff_t r0,     \
                                ptrdiff_t r1, FT *p, void *work), (P, v, r0, r1, p, work)) \
    /* the CD step's weight gradient, rows [i0, i1) (OUT out, (i1 - i0) x M; scratch     \
     * work of cyrbm_gauss_gradient_work_bytes) */                                       \
    X(void, gauss_gradient_##FS, (const FT *a, const FT *p, const FT *b, const FT *q,     \
                                  ptrdiff_t B, ptrdiff_t D, ptrdiff_t M, ptrdiff_t i0,    \
                                  ptrdiff_t i1, FT *out, void *work),                     \
      (a, p, b, q, B, D, M, i0, i1, out, work))

/* kernels of float64 alone, with vector code (anneal.c) */
#define CYRBM_DOUBLE_KERNELS(X)                                                           \
    /* exact-enumeration chunk, see anneal.c (OUT out, each; scratch act) */              \
    X(void, exact_chunk, (const double *Ws, ptrdiff_t ld, const double *cs,               \
                          const double *co, ptrdiff_t m, ptrdiff_t n_pad, uint64_t i0,    \
                          uint64_t i1, double *act, double *out, double *each),           \
      (Ws, ld, cs, co, m, n_pad, i0, i1, act, out, each))                                 \
    /* exact pseudo-log-likelihood of one row, see anneal.c (scratch act) */              \
    X(double, pll_row, (const double *W, const double *b, const double *a, ptrdiff_t D,   \
                        ptrdiff_t n_pad, const uint8_t *v, double *act),                  \
      (W, b, a, D, n_pad, v, act))                                                      \
    /* x[q M + j] = sum_i a[q D + i] W[i M + j] + c[j] for the nr <= 4 rows of a (the    \
     * swaps' hidden inputs of parallel tempering), see anneal.c (OUT x, nr x M) */       \
    X(void, inputs_rows, (const double *a, ptrdiff_t D, const double *W, const double *c, \
                          ptrdiff_t M, ptrdiff_t nr, double *x), (a, D, W, c, M, nr, x))
/* A two-layer DBN for single-site Gibbs on h1 (chib.c): RBM1 (v, h1) and the top RBM
 * (h1, h2), parameters in the kernel's float type T except where marked double. */
typedef struct {
    ptrdiff_t D, H1, H2;            /* visible units, first and top hidden layers */
    ptrdiff_t ld1, ld2;             /* padded widths of the D and H2 rows (multiples of 32) */
    const void *W1T, *E1, *b1;      /* H1 x ld1: W1's columns as rows, e^(W1^T); b1: ld1 */
    const void *W2, *E2, *c2;       /* H1 x ld2: W2 and e^W2; c2: ld2 (top hidden biases) */
    const double *b2, *c1;          /* H1: the top RBM's visible biases, Q's hidden biases */
    const double *s1, *s2;          /* H1: row sums of W1^T and of W2 */
    ptrdiff_t K1, K2;               /* blocks between rescalings of the products */
} cyrbm_chib_model;

/* A thread's scratch for one item at a time: three chain states (current, saved, the
 * copy walked to h*), h*, W1^T v, Q's log-odds, e^c_j of the log-odds' constant part (for
 * h_j = 0 and 1: chib_t.h, chib_odds) and ln T(h* <- h(s)) for s = 1..S. */
typedef struct {
    uint8_t *h[3];
    void *f[3];                     /* each: y, p1, q1 (ld1 each), z, p2, q2 (ld2 each) */
    uint8_t *hstar;
    double *vw, *x, *ec, *logt;     /* H1, H1, 2 H1, S + 1 */
} cyrbm_chib_work;

/* items in flight at once in one call of chib_items or chib_ais (their passes share the
 * reads of the e^W tables): the work holds this many cyrbm_chib_layout blocks, each
 * rounded up to 64 bytes */
#define CYRBM_CHIB_SLOTS 8

#define CYRBM_CHIB_KERNELS(X, FT, FS)                                                     \
    /* the estimator of MS09 (Figure 1) for items [i0, i1), see chib_t.h (OUT lpstar,   \
     * logphat; INOUT streams) */                                                         \
    X(void, chib_items_##FS, (const cyrbm_chib_model *M, const uint8_t *v,                \
                              const int32_t *vec, ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t S, \
                              int tilde_backward, ptrdiff_t refresh_every,                \
                              cyrbm_rng *streams, double *lpstar, double *logphat,        \
                              void *work),                                                \
      (M, v, vec, i0, i1, S, tilde_backward, refresh_every, streams, lpstar, logphat, work)) \
    /* per-vector AIS over h1 for items [i0, i1) (OUT logw; INOUT streams) */             \
    X(void, chib_ais_##FS, (const cyrbm_chib_model *M, const uint8_t *v, const int32_t *vec, \
                            ptrdiff_t i0, ptrdiff_t i1, const double *betas,              \
                            ptrdiff_t n_betas, int base_q, ptrdiff_t refresh_every,       \
                            cyrbm_rng *streams, double *logw, void *work),                \
      (M, v, vec, i0, i1, betas, n_betas, base_q, refresh_every, streams, logw, work))

/* A Gaussian-visible RBM B and the base model A it is annealed from (MS09 Sec. 5.2; SM08
 * Eq. 13-18 with Gaussian visible units).  B: energy sum_i (v_i - b_i)^2 / (2 s_i^2)
 * - c.h - sum_ij (v_i / s_i) W_ij h_j; A: independent Gaussians N(mu_i, sd_i^2), its
 * hidden units free; between them
 *   ln p*_beta(v) = -(1 - beta) sum_i (v_i - mu_i)^2 / (2 sd_i^2)
 *                   - beta sum_i (v_i - b_i)^2 / (2 s_i^2) + sum_j softplus(beta x_j),
 * x = c + W^T (v / s).  Sampling and training use beta = 1 (A then has no weight). */
typedef struct {
    ptrdiff_t D, M;                 /* visible and hidden units */
    const void *W, *b, *c, *s;      /* the kernel's float type: D x M (C order), D, M, D */
    const double *mu, *sd;          /* D each: the base's means and standard deviations */
    const void *Wt;                 /* NULL, or W^T (M x D, C order): a partial block's
                                     * runs then take u = W h side by side from its rows
                                     * (unit_gauss_t.h; the same bits as through W) */
} cyrbm_gauss_pair;

/* A semi-restricted Boltzmann machine B (Osindero & Hinton 2008; MS09 Sec. 5.2) and the
 * base A it is annealed from.  B: binary v with symmetric lateral weights L (zero
 * diagonal), binary h, energy -b.v - c.h - v^T W h - v^T L v / 2; A: independent visible
 * units of log-odds bA, its hidden units free; between them (SM08 Eq. 13-18)
 *   ln p*_beta(v) = (1 - beta) bA.v + beta (b.v + v^T L v / 2) + sum_j softplus(beta x_j),
 * x = c + W^T v.  Sampling and training use beta = 1 (bA then only starts a chain). */
typedef struct {
    ptrdiff_t D, M;                 /* visible and hidden units */
    const void *W, *b, *c, *L;      /* the kernel's float type: D x M, D, M, D x D (C order) */
    const double *bA;               /* D: the base's visible log-odds */
} cyrbm_srbm_pair;

/* The runs of a visible layer's one Gibbs driver (unit_gibbs_t.h), any unit type: row r
 * of each array belongs to run r.  The unit types read what they have (NULL otherwise). */
typedef struct {
    void *v;                        /* R x D visible states (INOUT): the unit type's (T for
                                     * Gaussian units, uint8_t 0 / 1 for lateral ones) */
    uint8_t *h;                     /* R x M hidden states (OUT, when a step drew them) */
    cyrbm_rng *streams;             /* R chain streams (INOUT) */
    double *logw;                   /* R log weights (INOUT; read when `weights`) */
    void *p;                        /* R x M of T or NULL: p(h | v) at step p_step (OUT) */
    ptrdiff_t p_step;
    double *y;                      /* R x D: the lateral field L v (INOUT; SRBM) */
    int fresh;                      /* recompute kept sums (y) from v at the first step */
} cyrbm_gibbs_runs;

/* Runs of a Gaussian block (gauss_t.h): one chain per lane, 16 whatever the vector width */
#define CYRBM_GAUSS_LANES 16
/* The bytes of a thread's scratch for cyrbm_gauss_block on D visible and M hidden units
 * (a block's states, inputs and streams, five float64 constants a visible unit, the
 * padded last columns of W and W^T; enough for float64). */
static inline size_t cyrbm_gauss_work_bytes(ptrdiff_t D, ptrdiff_t M) {
    return (size_t)(2 * D + 2 * M + 5) * CYRBM_GAUSS_LANES * 8 + (size_t)(5 * D) * 8 +
           (size_t)(D + M) * 64 + 13 * 64;
}
/* The bytes of a thread's scratch for cyrbm_gauss_gradient on a batch of B rows: a
 * panel of at most four vectors (of at most 64 bytes) a row. */
static inline size_t cyrbm_gauss_gradient_work_bytes(ptrdiff_t B) {
    return (size_t)B * 4 * 64 + 64;
}
/* The bytes of a thread's scratch for the lateral unit type's driver (cyrbm_srbm_steps'
 * x: M + D doubles, and one spare). */
static inline size_t cyrbm_srbm_work_bytes(ptrdiff_t D, ptrdiff_t M) {
    return (size_t)(M + D + 1) * sizeof(double);
}

/* ---- no vector code, compiled once (common.c) ----
 * column_lists: col[u*n_rows + 0 .. ncol[u]-1] = the rows r (ascending) whose list
 *   idx[r*ldi + 0 .. cnt[r]-1] holds u (OUT col, ncol).
 * active_units: the active units of a 0/1 row, ascending, in list (OUT, room for n);
 *   returns their number.
 * state_codes: codes[g] = state[4g] | state[4g+1] << 1 | state[4g+2] << 2 | state[4g+3] << 3.
 * bernoulli: draws for one chain: unit u is on when cyrbm_rng_uniform < p[u], one draw
 *   per unit in unit order; writes the 0/1 states and the active units (each unless NULL)
 *   and returns their number (OUT state, idx; INOUT rng).
 * chib_layout: point the buffers of W into base for a model M, S chain steps and floats
 *   of itemsize bytes (64-byte aligned); returns the bytes needed (base NULL: only
 *   measures).
 * stop_watch_begin / _end: see "stopping on Ctrl-C" above.
 * srbm_steps: steps k0 <= k < k1 of one run between the two models of a cyrbm_srbm_pair
 *   (common_t.h): h | v at once, v | h one unit at a time (INOUT v, h, y = L v, rng,
 *   logw; `fresh`: recompute y from v first; scratch x of M + D doubles).
 * gibbs_srbm: the same for the runs [r0, r1) of S, one after another: the lateral unit
 *   type's instance of the one Gibbs driver (unit_gibbs_t.h; scratch of
 *   cyrbm_srbm_work_bytes). */
#define CYRBM_COMMON_TYPED_KERNELS(X, FT, FS)                                             \
    X(int32_t, bernoulli_##FS, (const FT *p, ptrdiff_t n, cyrbm_rng *rng, uint8_t *state, \
                                int32_t *idx), (p, n, rng, state, idx))                   \
    X(void, srbm_steps_##FS, (const cyrbm_srbm_pair *P, uint8_t *v, uint8_t *h, double *y, \
                              double *x, const double *betas, ptrdiff_t k0, ptrdiff_t k1, \
                              int weights, int fresh, cyrbm_rng *rng, double *logw),      \
      (P, v, h, y, x, betas, k0, k1, weights, fresh, rng, logw))                         \
    X(void, gibbs_srbm_##FS, (const void *P, const cyrbm_gibbs_runs *S, ptrdiff_t r0,     \
                              ptrdiff_t r1, const double *betas, ptrdiff_t k0,            \
                              ptrdiff_t k1, int weights, void *work),                     \
      (P, S, r0, r1, betas, k0, k1, weights, work))
#define CYRBM_COMMON_KERNELS(X)                                                           \
    CYRBM_EACH_TYPE(CYRBM_COMMON_TYPED_KERNELS, X)                                        \
    X(void, stop_watch_begin, (void), ())                                                 \
    X(int, stop_watch_end, (void), ())                                                    \
    X(void, column_lists, (const int32_t *idx, ptrdiff_t ldi, const int32_t *cnt,         \
                           ptrdiff_t n_rows, ptrdiff_t n_units, int32_t *col, int32_t *ncol), \
      (idx, ldi, cnt, n_rows, n_units, col, ncol))                                        \
    X(int32_t, active_units, (const uint8_t *state, ptrdiff_t n, int32_t *list),          \
      (state, n, list))                                                                   \
    X(void, state_codes, (const uint8_t *state, ptrdiff_t n, uint8_t *codes),             \
      (state, n, codes))                                                                  \
    X(size_t, chib_layout, (const cyrbm_chib_model *M, ptrdiff_t S, size_t itemsize,      \
                            char *base, cyrbm_chib_work *W), (M, S, itemsize, base, W))

/* every kernel with vector code, each compiled once per instruction set */
#define CYRBM_VARIANT_KERNELS(X)                                                          \
    CYRBM_EACH_TYPE(CYRBM_GIBBS_KERNELS, X) CYRBM_EACH_TYPE(CYRBM_ANNEAL_KERNELS, X)      \
    CYRBM_EACH_TYPE(CYRBM_CHIB_KERNELS, X) CYRBM_DOUBLE_KERNELS(X)

/* ---- the unit types of the visible layer (the per-unit-type table) ----
 * One Gibbs driver (unit_gibbs_t.h) is written once over a small protocol of the
 * operations that differ by unit type, and specialised at compile time for each type by
 * its header: unit_gauss_t.h (Gaussian units, per instruction set, in anneal.c) and
 * unit_srbm_t.h (binary units with lateral weights, compiled once, in common.c).
 * CYRBM_UNIT_TYPES(U) lists them, U(name, NAME, lanes, work_bytes): the kernels
 * gibbs_<name>_f32 / _f64 (in the lists above), the runs a block moves together (a
 * thread takes whole blocks), a thread's scratch for D visible and M hidden units.  The
 * binary RBM's engine (anneal_t.h: flips followed, subset tables) is not an instance. */
typedef void (*cyrbm_gibbs_driver)(const void *P, const cyrbm_gibbs_runs *S, ptrdiff_t r0,
                                   ptrdiff_t r1, const double *betas, ptrdiff_t k0,
                                   ptrdiff_t k1, int weights, void *work);
typedef struct cyrbm_unit_type {
    const char *name;               /* "gauss", "srbm" */
    ptrdiff_t lanes;                /* runs of a block */
    size_t (*work_bytes)(ptrdiff_t D, ptrdiff_t M);
    cyrbm_gibbs_driver gibbs_f32, gibbs_f64;  /* the driver's instances (P: the type's pair) */
} cyrbm_unit_type;
#define CYRBM_UNIT_TYPES(U)                                                               \
    U(gauss, GAUSS, CYRBM_GAUSS_LANES, cyrbm_gauss_work_bytes)                            \
    U(srbm, SRBM, 1, cyrbm_srbm_work_bytes)
#define CYRBM_UNIT_ENUM(name, NAME, lanes, work) CYRBM_UNIT_##NAME,
enum cyrbm_unit_id { CYRBM_UNIT_TYPES(CYRBM_UNIT_ENUM) CYRBM_UNIT_COUNT };

/* The one dispatch table: every kernel, the variant's where it has variants (dispatch.c
 * fills it with one variant for all families at once), the unit-type table over those
 * kernels (units[CYRBM_UNIT_<NAME>], filled with them), and the name of that variant. */
#define CYRBM_TABLE_MEMBER(RET, NAME, PARAMS, ARGS) RET(*NAME) PARAMS;
typedef struct cyrbm_kernel_table {
    CYRBM_VARIANT_KERNELS(CYRBM_TABLE_MEMBER)
    CYRBM_COMMON_KERNELS(CYRBM_TABLE_MEMBER)
    cyrbm_unit_type units[CYRBM_UNIT_COUNT];
    const char *isa;
} cyrbm_kernel_table;

/* dispatch.c (called by cyrbm._dispatch alone, which links the library): fill the table
 * with one variant for every family: `force` names it (avx512, avx2, sse2, neon,
 * generic), or is NULL / "" for the widest this CPU runs.  Returns 0, or -1 (the table
 * unchanged) when the named variant is not in this build or the CPU cannot run it. */
int cyrbm_kernels_init(const char *force);
/* The table, and the variants this build holds (comma-separated, widest first). */
const cyrbm_kernel_table *cyrbm_kernels(void);
const char *cyrbm_kernels_built(void);

#ifdef CYRBM_KERNEL_LIBRARY
/* ---- inside the kernel library: the functions themselves ---- */
#define CYRBM_DECLARE_COMMON(RET, NAME, PARAMS, ARGS) RET cyrbm_##NAME PARAMS;
CYRBM_COMMON_KERNELS(CYRBM_DECLARE_COMMON)
#else
/* ---- in the engine (the Cython modules): every kernel through the one table ----
 * The library is linked into one extension, cyrbm._dispatch, which owns the table; each
 * engine module points its cyrbm_kt at that table when it is imported, and calls
 * cyrbm_<name>(...), one indirect call. */
static const cyrbm_kernel_table *cyrbm_kt;
#define CYRBM_RETURN_void
#define CYRBM_RETURN_int return
#define CYRBM_RETURN_int32_t return
#define CYRBM_RETURN_double return
#define CYRBM_RETURN_size_t return
#define CYRBM_CALL(RET, NAME, PARAMS, ARGS) \
    static inline RET cyrbm_##NAME PARAMS { CYRBM_RETURN_##RET cyrbm_kt->NAME ARGS; }
CYRBM_VARIANT_KERNELS(CYRBM_CALL)
CYRBM_COMMON_KERNELS(CYRBM_CALL)
#endif

#ifdef __cplusplus
}
#endif

#endif
