/* AIS and exact-enumeration kernels for one instruction set (see kernels.h, simd.h).
 *
 * AIS runs between two RBMs A and B sharing their visible layer (Salakhutdinov & Murray
 * 2008, Eq. 13-17; A may have no hidden units: the base-rate model of Eq. 18) move by
 * block Gibbs transitions at each inverse temperature beta_k and accumulate their log
 * importance weights in float64 (anneal_t.h, once per parameter type).
 *
 * Speed.  Neighbouring betas change few units, so each run keeps its hidden inputs
 * x = W^T v + a and its visible inputs u = W h and updates them by the weight rows of the
 * units that flipped, recomputing them exactly every `refresh_every` steps (bounds float32
 * drift).  The few visible flips are summed per run from the rows of W, 8 vectors of
 * columns at a time in registers.  The many hidden flips come from W^T stored in column
 * chunks of 64 bytes, each chunk's rows taken in tiles of 32 KB: every run sums the rows
 * it needs from the tile in 8 accumulators while the tile is in L1, so a row of W^T comes
 * from L2 once per step and thread, not once per run.  Lists of flips are built 8 units at
 * a time from the draws' bit masks without a branch per unit (a table of bit positions);
 * the visible lists skip blocks (16 or 8 units) without flips, often rare there.  The sum over j of
 * softplus(c x_j) is c sum_j max(x_j, 0) + ln prod_j (1 + exp(-c |x_j|)), products kept
 * as mantissa x 2^exponent: one exp per unit and one log per run and step; the exp at the
 * previous beta is the current one times a short exact series when the step is small.
 *
 * Many flips.  Where many units flip in one step (early in a schedule, untrained models),
 * adding their rows costs more than recomputing the inputs from signed subset tables
 * ("four Russians"): with spins s = 2v - 1, W^T v + a = (a + sum_i w_i / 2) + sum over
 * groups of 4 units of (sum_k s_k w_k) / 2, and a group's term for its opposite spins is
 * its negation, so a table keeps, for each group, its 8 patterns with the first unit on
 * (twice the weights per direction, built once per model, in column chunks like W^T).  A
 * run whose flips exceed 20% of D (hidden inputs x) or 40% of n (visible inputs u)
 * recomputes that input as the offset plus one signed table row per group, all such runs
 * of a block together, tile by tile (cyrbm_ak_dense).  The choice depends only on the
 * run's own flips, so results stay independent of threads and variants; the pair's
 * `dense` field turns it off or forces it (for tests).  Tables beyond 16 MB are not built
 * (they would stream from memory at every step).
 *
 * Determinism.  Every per-lane partial result (the 8 partial sums and products of the
 * hidden layer, the 8 random streams of a run) has a fixed logical width of 8 float64
 * lanes, 64 bytes, made of 64 / CYRBM_VBYTES native vectors, so all variants give the same
 * bits.  Run r draws only from its own streams (rng.h's AIS layout), in an order fixed by
 * the layer sizes: per half-step, each hidden layer takes ceil(n/8) draws of the 8 lanes
 * (one u52 uniform per unit: unit u uses lane u % 8 of draw u / 8) and the visible layer
 * ceil(D/16) draws (u23 pairs) for float32 models or ceil(D/8) for float64 ones.  A unit
 * turns on when u (1 + t) < (y >= 0 ? 1 : t), t = exp(-|y|), i.e. u < sigma(y).  Block and
 * tile sizes are constants.  So results do not depend on threads or on how runs are
 * grouped.
 *
 * Memory layout (all C order).  Per-run rows are padded with zeros to an odd multiple of
 * 16 elements (ldV, ldA, ldB).  WA and WB are row-major D x ldA / D x ldB; WAT and WBT
 * (nA x ldV, nB x ldV) are stored in column chunks of CYRBM_AK_CHUNK_BYTES, each chunk
 * row-major (see cyrbm_ak_update in anneal_t.h). */
#include <math.h>
#define CYRBM_KERNEL_LIBRARY 1
#include "simd.h"
#include "kernels.h"

#define LN2 0.69314718055994530942

/* lanes that are within a layer of rem units: load from rem_ones + 8 - clamp(rem, 0, 8) */
static const int64_t cyrbm_ak_ones64[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                            0, 0, 0, 0, 0, 0, 0, 0};
static const int32_t cyrbm_ak_ones32[32] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                            -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0,
                                            0,  0,  0,  0,  0,  0, 0, 0, 0, 0};
CYRBM_INLINE vq CYRBM_K(cyrbm_ak_valid_f64)(ptrdiff_t rem) {
    rem = rem < 0 ? 0 : rem > 8 ? 8 : rem;
    return ld_q((const uint64_t *)(cyrbm_ak_ones64 + 8 - rem));
}
CYRBM_INLINE vu CYRBM_K(cyrbm_ak_valid_f32)(ptrdiff_t rem) {
    vu m;
    rem = rem < 0 ? 0 : rem > 16 ? 16 : rem;
    memcpy(&m, cyrbm_ak_ones32 + 16 - rem, sizeof m);
    return m;
}

/* The uniforms of native vector q of a visible block from its draws rb (rng.h's AIS
 * conventions): u52 per 64-bit lane for float64 models, u23 pairs for float32 ones. */
CYRBM_INLINE vd CYRBM_K(cyrbm_ak_unif_f64)(const vq *rb, int q) { return CYRBM_U52(ASD, rb[q]); }
CYRBM_INLINE vf CYRBM_K(cyrbm_ak_unif_f32)(const vq *rb, int q) {
#if CYRBM_VBYTES > 0
    return CYRBM_U23(ASF, ASU(rb[q]));      /* low half first */
#else
    return CYRBM_U23(ASF, (uint32_t)(rb[q / 2] >> (32 * (q % 2))));
#endif
}

/* The first and second of two consecutive int32 list entries (>= 0) read as one uint64 e
 * (memcpy): the first is at the lower address, the low half on a little-endian machine. */
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define CYRBM_AK_PAIR_LO(e) ((ptrdiff_t)((e) >> 32))
#define CYRBM_AK_PAIR_HI(e) ((ptrdiff_t)(uint32_t)(e))
#else
#define CYRBM_AK_PAIR_LO(e) ((ptrdiff_t)(uint32_t)(e))
#define CYRBM_AK_PAIR_HI(e) ((ptrdiff_t)((e) >> 32))
#endif

/* Multiply the running product *P (kept as mantissa * 2^*E) by f, exactly rescaled. */
static inline void cyrbm_ak_mulexp(double *P, double *E, double f) {
    int e;
    *P = frexp(*P * f, &e);
    *E += (double)e;
}


static inline int cyrbm_ak_ctz(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int k = 0;
    while (!(x & 1u)) { x >>= 1; k++; }
    return k;
#endif
}

/* (bA - bB).v for one run's 0/1 visible row v (D units; db = bA - bB in float64): unit i
 * in logical lane i % 8, each lane summed in unit order, the 8 lanes then in lane order,
 * so every variant gives the same bits.  Recomputed at every step that needs it (a few
 * vector operations per 8 units): no drift, and nothing to keep up to date with v. */
static const uint64_t cyrbm_ak_lanebit[8] = {1, 2, 4, 8, 16, 32, 64, 128};
static inline double cyrbm_ak_bias_dot(const uint8_t *v, const double *db, ptrdiff_t D) {
    vd a[NQD];
    double d = 0.0;
    ptrdiff_t i;
    int q, l;
    for (q = 0; q < NQD; q++) a[q] = BCD(0.0);
    for (i = 0; i < D; i += 8) {   /* (v and db are zero past D, to a multiple of 16) */
        uint64_t w;
        unsigned b;
        memcpy(&w, v + i, 8);
        b = bytes8_to_bits(w);
        for (q = 0; q < NQD; q++) {
            const vq on = MASKQ((((vq){0} + (uint64_t)(b >> (q * VLD))) &
                                 ld_q(cyrbm_ak_lanebit)) != 0);
            a[q] += ASD(on & ASQ(ld_d(db + i + q * VLD)));
        }
    }
    for (l = 0; l < 8; l++) d += LANE(a[l / VLD], l % VLD);
    return d;
}

/* Where each tile of `tile` rows starts in a run's ascending lists of units that turned
 * on (`on`, n_on entries) and off: bd[t] and bd[t + 1] bound tile t's entries of "on",
 * bd[ntiles + 1 + t] and bd[ntiles + 2 + t] those of "off" (ntiles = ceil(nrows / tile)). */
static inline void cyrbm_ak_tile_bounds(const int32_t *on, int32_t n_on, const int32_t *off,
                                        int32_t n_off, ptrdiff_t nrows, ptrdiff_t tile,
                                        int32_t *bd) {
    const ptrdiff_t ntiles = (nrows + tile - 1) / tile;
    int pass;
    for (pass = 0; pass < 2; pass++) {
        const int32_t *l = pass == 0 ? on : off;
        const int32_t n = pass == 0 ? n_on : n_off;
        int32_t *b = bd + pass * (ntiles + 1);
        int32_t q = 0;
        ptrdiff_t t;
        for (t = 0; t < ntiles; t++) {
            b[t] = q;
            while (q < n && l[q] < (t + 1) * tile) q++;
        }
        b[ntiles] = n;
    }
}

/* A run's list of n flipped units (rows of W^T) turned into the byte offsets of those rows
 * within a column chunk (row * CYRBM_AK_CHUNK_BYTES), the form cyrbm_ak_update reads: an
 * entry is then an address offset as it stands, no shift per row (rows < 2^25). */
static inline void cyrbm_ak_row_offsets(int32_t *l, int32_t n) {
    int32_t q;
    for (q = 0; q < n; q++) l[q] *= CYRBM_AK_CHUNK_BYTES;
}

/* The signed subset-table entries of a 0/1 row s (groups of 4 units, pads 0): with unit
 * 4g + k's state as bit k of the group's state c, list[g] = 2 (8 g + j) + neg, where the
 * pattern with the first unit on is used as it is (j = c >> 1, neg = 0) and otherwise
 * its opposite, negated (j = (15 - c) >> 1, neg = 1), for g < groups (ascending). */
static inline void cyrbm_ak_group_rows(const uint8_t *s, ptrdiff_t groups, int32_t *list) {
    ptrdiff_t g;
    for (g = 0; g < groups; g++) {
        const int32_t c = s[4 * g] | s[4 * g + 1] << 1 | s[4 * g + 2] << 2 | s[4 * g + 3] << 3;
        const int32_t neg = 1 - (c & 1);
        list[g] = (int32_t)(2 * (8 * g + ((c ^ (15 * neg)) >> 1)) + neg);
    }
}

#define CYRBM_FT 32
#include "float_t.h"
#include "anneal_t.h"
#include "gauss_t.h"
#include "unit_gauss_t.h"
#include "unit_gibbs_t.h"
#undef CYRBM_FT
#define CYRBM_FT 64
#include "float_t.h"
#include "anneal_t.h"
#include "gauss_t.h"
#include "unit_gauss_t.h"
#include "unit_gibbs_t.h"

/* The float64-only kernels below use the float64 instance of anneal_t.h's softplus sum
 * (cyrbm_ak_softplus_sum: the one the log weights use). */

/* ------------------------------------------------------------------------------------
 * Exact pseudo-log-likelihood of one 0/1 row v (D visible units):
 *   sum_i ln p(v_i | v_-i) = -sum_i softplus(f(v with bit i flipped) - f(v)),
 *   f(v) = b.v + sum_j softplus(a_j + sum_i v_i W_ij)   (ln p*(v), SM08 Eq. 2),
 * W in float64, D x n_pad (pads 0), a padded to n_pad with -1e4 (pads add nothing);
 * act (scratch, n_pad) = a + the rows of the active units, in unit order.  Flipping bit i
 * adds s W[i, :] to act, s = 1 - 2 v_i: O(n_hidden) exps per bit, in vectors.
 * ------------------------------------------------------------------------------------ */
double CYRBM_K(cyrbm_pll_row)(const double *W, const double *b, const double *a, ptrdiff_t D,
                              ptrdiff_t n_pad, const uint8_t *v, double *act) {
    ptrdiff_t i, c;
    double f0, total = 0.0;
    memcpy(act, a, (size_t)n_pad * sizeof(double));
    for (i = 0; i < D; i++)
        if (v[i])
            for (c = 0; c < n_pad; c++) act[c] += W[i * n_pad + c];
    f0 = CYRBM_K(cyrbm_ak_softplus_sum_f64)(act, NULL, n_pad, 1.0);
    for (i = 0; i < D; i++) {
        const double s = v[i] ? -1.0 : 1.0;
        const double fi = CYRBM_K(cyrbm_ak_softplus_sum_f64)(W + i * n_pad, act, n_pad, s);
        total -= cyrbm_softplus(s * b[i] + (fi - f0));
    }
    return total;
}

/* ------------------------------------------------------------------------------------
 * The swaps' hidden inputs of parallel tempering (CRI10 Eq. 5 on a GaussianRBM's or
 * SRBM's tempered family, cyrbm/_tempering.pyx):
 *   x[q M + j] = sum_i a[q D + i] W[i M + j] + c[j]
 * for the nr <= 4 rows of a (D each), W D x M and c M in C order, all float64.  Each sum
 * starts from 0 and adds its terms in unit order i, a multiply then an add (contraction
 * off), then c: the same bits as GaussianRBM._hidden_inputs' terms, whatever the vector
 * width.  Row-oriented: for i in order, x[q][j..] += a[q][i] W[i][j..], columns in blocks
 * of 4 native vectors held in registers for the 4 rows (each weight loaded once for the
 * four), then single vectors, then single columns.  Fewer than 4 rows repeat the last
 * one, whose sums are not stored.
 * ------------------------------------------------------------------------------------ */
void CYRBM_K(cyrbm_inputs_rows)(const double *a, ptrdiff_t D, const double *W,
                                const double *c, ptrdiff_t M, ptrdiff_t nr, double *x) {
    const double *ar[4];
    ptrdiff_t i, j = 0;
    int q, t;
    if (nr <= 0) return;
    for (q = 0; q < 4; q++) ar[q] = a + (q < nr ? q : nr - 1) * D;
    for (; j + 4 * VLD <= M; j += 4 * VLD) {
        vd s[4][4];
        for (q = 0; q < 4; q++)
            for (t = 0; t < 4; t++) s[q][t] = BCD(0.0);
        for (i = 0; i < D; i++) {
            const double *w = W + i * M + j;
            const vd w0 = ld_d(w), w1 = ld_d(w + VLD), w2 = ld_d(w + 2 * VLD),
                     w3 = ld_d(w + 3 * VLD);
            for (q = 0; q < 4; q++) {
                const vd b = BCD(ar[q][i]);
                s[q][0] = s[q][0] + b * w0;
                s[q][1] = s[q][1] + b * w1;
                s[q][2] = s[q][2] + b * w2;
                s[q][3] = s[q][3] + b * w3;
            }
        }
        for (q = 0; q < nr; q++)
            for (t = 0; t < 4; t++)
                st_d(x + q * M + j + t * VLD, s[q][t] + ld_d(c + j + t * VLD));
    }
    for (; j + VLD <= M; j += VLD) {
        vd s[4];
        for (q = 0; q < 4; q++) s[q] = BCD(0.0);
        for (i = 0; i < D; i++) {
            const vd w0 = ld_d(W + i * M + j);
            for (q = 0; q < 4; q++) s[q] = s[q] + BCD(ar[q][i]) * w0;
        }
        for (q = 0; q < nr; q++) st_d(x + q * M + j, s[q] + ld_d(c + j));
    }
    for (; j < M; j++) {
        double s[4] = {0.0, 0.0, 0.0, 0.0};
        for (i = 0; i < D; i++) {
            const double w0 = W[i * M + j];
            for (q = 0; q < 4; q++) s[q] = s[q] + ar[q][i] * w0;
        }
        for (q = 0; q < nr; q++) x[q * M + j] = s[q] + c[j];
    }
}

/* ------------------------------------------------------------------------------------
 * Exact ln Z: a chunk of the Gray-code enumeration of the smaller layer.
 *
 * States s of the enumerated layer (m units) are visited as g(i) = i ^ (i >> 1) for
 * i0 <= i < i1; neighbouring codes differ in bit ctz(i), so the other layer's inputs
 *   act = co + sum_k s_k Ws[k, :]   (n_pad entries, a multiple of 8; pads of co at -1e4)
 * change by one row of Ws per state.  They are recomputed exactly every 1024 states.
 *   f(s) = cs.s + sum_i softplus(act_i)
 * with the sum taken by cyrbm_ak_softplus_sum (8 lanes of max(act, 0) and of products of
 * 1 + exp(-|act|) per block of CYRBM_AK_BLOCK units), and out[0] = max f, out[1] = sum
 * exp(f - max), all in float64; each[i - i0] = f of state i when `each` is not NULL (exact sampling).
 * ------------------------------------------------------------------------------------ */
static void cyrbm_ak_exact_reset(const double *Ws, ptrdiff_t ld, const double *cs,
                                 const double *co, ptrdiff_t m, ptrdiff_t n_pad, uint64_t g,
                                 double *act, double *lin) {
    ptrdiff_t k, i;
    double s = 0.0;
    memcpy(act, co, (size_t)n_pad * sizeof(double));
    for (k = 0; k < m; k++) {
        if ((g >> k) & 1u) {
            const double *w = Ws + k * ld;
            for (i = 0; i < n_pad; i++) act[i] += w[i];
            s += cs[k];
        }
    }
    *lin = s;
}

void CYRBM_K(cyrbm_exact_chunk)(const double *Ws, ptrdiff_t ld, const double *cs,
                                const double *co, ptrdiff_t m, ptrdiff_t n_pad, uint64_t i0,
                                uint64_t i1, double *act, double *out, double *each) {
    uint64_t i, g = i0 ^ (i0 >> 1);
    double lin, mx = -INFINITY, sm = 0.0;
    ptrdiff_t c;
    cyrbm_ak_exact_reset(Ws, ld, cs, co, m, n_pad, g, act, &lin);
    for (i = i0; i < i1; i++) {
        double f;
        if (i > i0) {
            if (((i - i0) & 1023u) == 0) {
                g = i ^ (i >> 1);
                cyrbm_ak_exact_reset(Ws, ld, cs, co, m, n_pad, g, act, &lin);
            } else {
                const int k = cyrbm_ak_ctz(i);
                const double *w = Ws + (ptrdiff_t)k * ld;
                g ^= (uint64_t)1 << k;
                if ((g >> k) & 1u) {
                    for (c = 0; c < n_pad; c++) act[c] += w[c];
                    lin += cs[k];
                } else {
                    for (c = 0; c < n_pad; c++) act[c] -= w[c];
                    lin -= cs[k];
                }
            }
        }
        f = lin + CYRBM_K(cyrbm_ak_softplus_sum_f64)(act, NULL, n_pad, 1.0);
        if (each) each[i - i0] = f;
        /* the C library's exp (not vmath's): exact ln Z's bits were made with it
         * (tools/ais_fingerprint.py), and it runs once per state, after a softplus sum */
        if (f > mx) {
            sm = sm * exp(mx - f) + 1.0;
            mx = f;
        } else {
            sm += exp(f - mx);
        }
    }
    out[0] = mx;
    out[1] = sm;
}
