/* cyrbm's C API: its nogil kernels, callable from C extension code.
 *
 * Usage, in an extension module that includes this header (compile with
 * -I$(python -c "import cyrbm; print(cyrbm.get_include())")):
 *
 *     static const cyrbm_capi *cyrbm;
 *     PyMODINIT_FUNC PyInit_mymod(void) {
 *         cyrbm = cyrbm_capi_import();          // imports cyrbm.capi; NULL + exception on failure
 *         if (cyrbm == NULL) return NULL;
 *         ...
 *     }
 *     ... cyrbm->log_unnormalized_f64(W, vbias, hbias, n_visible, n_hidden, v, n, out, 1);
 *
 * Conventions: W is n_visible x n_hidden in C order; states are uint8 0/1 matrices in C
 * order, one row per chain or sample; every chain owns a cyrbm_rng stream (cyrbm_types.h), which
 * Python code creates with cyrbm.capi.make_streams(seed, n); an AIS run owns
 * CYRBM_AIS_STREAM_WORDS words (cyrbm.capi.make_ais_streams(seed, runs)).  Functions are
 * thread-safe, do not need the GIL, and return 0 on success, -1 when scratch memory
 * cannot be allocated, -2 for invalid sizes (or arguments).  The table only grows: a new entry bumps
 * CYRBM_CAPI_VERSION and existing entries never change.
 */
#ifndef CYRBM_H
#define CYRBM_H

#include <Python.h>
#include <stdint.h>
#include "cyrbm/cyrbm_types.h"

#define CYRBM_CAPI_VERSION 7

/* uint64 words of random state per AIS run (8 xoshiro256++ lanes of 4 words) */
#define CYRBM_AIS_STREAM_WORDS 32
/* largest smaller layer the exact ln Z enumerates (2^30 terms), as cyrbm.exact_log_partition */
#define CYRBM_EXACT_MAX_UNITS 30

/* Every entry exists for float64 parameters (suffix _f64) and float32 parameters (_f32),
 * from one signature: CYRBM_SIG_<ENTRY>(T, F) declares F with parameters of type T.
 * CYRBM_FN_TYPES(SIG, name) makes the two function types cyrbm_<name>_f64_fn and
 * cyrbm_<name>_f32_fn; CYRBM_PAIR(name) the table's two entries, f64 first. */
#define CYRBM_FN_TYPES(SIG, name) \
    typedef SIG(double, cyrbm_##name##_f64_fn); \
    typedef SIG(float, cyrbm_##name##_f32_fn);
#define CYRBM_PAIR(name) cyrbm_##name##_f64_fn name##_f64; cyrbm_##name##_f32_fn name##_f32;

/* steps block-Gibbs sweeps h ~ p(h|v), v ~ p(v|h) (SM08 Eq. 5-6) on n chains:
 * v (n x n_visible) in place, h (n x n_hidden) gets the last hidden states. */
#define CYRBM_SIG_GIBBS_SWEEPS(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, Py_ssize_t n_visible, \
             Py_ssize_t n_hidden, uint8_t *v, uint8_t *h, Py_ssize_t n, int steps, \
             cyrbm_rng *streams, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_GIBBS_SWEEPS, gibbs_sweeps)

/* out[r] = ln p*(v_r) (SM08 Eq. 2 with h summed out), float64 */
#define CYRBM_SIG_LOG_UNNORMALIZED(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, Py_ssize_t n_visible, \
             Py_ssize_t n_hidden, const uint8_t *v, Py_ssize_t n, double *out, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_LOG_UNNORMALIZED, log_unnormalized)

/* ---- version 2 ---- */

/* ln Z by annealed importance sampling from the base-rate model to the RBM (SM08
 * Eq. 13-18), as cyrbm.Annealer(runs, schedule=betas, seed).log_partition(model,
 * base_rate=...) with its default refresh (200): the same log weights, bit for bit,
 * when streams = cyrbm.capi.make_ais_streams(seed, runs) and the parameters (and
 * base_rate) are the model's, in its dtype.
 *   base_rate:    n_visible visible biases b_A of the base-rate model (NULL: zeros).
 *   betas:        n_betas inverse temperatures, 0 = beta_0 < ... < beta_K = 1.
 *   streams:      runs x CYRBM_AIS_STREAM_WORDS uint64 states, advanced in place.
 *   refresh_every: exact recomputation of the runs' inputs every so many steps
 *                 (>= 1; the Annealer's default is 200).
 *   log_weights:  out, runs float64 ln w; Z-hat = Z_A mean(w) (Eq. 11-12).
 *   log_Z_base:   out (or NULL), ln Z_A = n_hidden ln 2 + sum_i softplus(b_A,i) (Eq. 18).
 *   samples:      out (or NULL), runs x n_visible uint8, each run's final v.
 * Results do not depend on n_threads.  -2 when a size is < 1, a required pointer is
 * NULL or betas is not a finite, strictly increasing list from 0 to 1. */
#define CYRBM_SIG_AIS_LOG_PARTITION(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, Py_ssize_t n_visible, \
             Py_ssize_t n_hidden, const T *base_rate, const double *betas, \
             Py_ssize_t n_betas, Py_ssize_t runs, uint64_t *streams, \
             Py_ssize_t refresh_every, double *log_weights, double *log_Z_base, \
             uint8_t *samples, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_AIS_LOG_PARTITION, ais_log_partition)

/* *log_Z = exact ln Z (SM08 Eq. 3), summing over every state of the smaller layer in
 * float64 (float32 parameters are converted exactly), as cyrbm.exact_log_partition;
 * -2 when that layer has more than CYRBM_EXACT_MAX_UNITS units. */
#define CYRBM_SIG_EXACT_LOG_PARTITION(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, Py_ssize_t n_visible, \
             Py_ssize_t n_hidden, double *log_Z, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_EXACT_LOG_PARTITION, exact_log_partition)

/* ---- version 3 ---- */

/* out[i] = ln P-hat(v_i) for n test vectors v (n x n_visible uint8) of a two-layer DBN
 * by the Chib-style estimator of Murray & Salakhutdinov (2009, Figure 1): RBM1 (W1,
 * n_visible x n_hidden1; vbias1; hbias1, used by Q(h1 | v) only) under the top RBM
 * (W2, n_hidden1 x n_hidden2; vbias2 on h1; hbias2), with log_Z the top RBM's ln Z;
 * steps = S >= 1 Markov chain steps, repeats >= 1 independent runs per vector averaged
 * in P.  streams: n * repeats states (item i * repeats + r), advanced in place;
 * cyrbm.capi.make_chib_streams(seed, n, steps, repeats) gives those of
 * cyrbm.chib.chib_log_prob(dbn, v, log_Z, steps=S, repeats=R, seed=seed), whose
 * log_probs these are, bit for bit, for a DBN of that dtype (the f32 entry: every
 * |weight| <= 80).  -2 for invalid sizes or weights beyond 80 (f32) / 700 (f64). */
#define CYRBM_SIG_CHIB_LOG_PROB(T, F) \
    int (*F)(const T *W1, const T *vbias1, const T *hbias1, const T *W2, \
             const T *vbias2, const T *hbias2, Py_ssize_t n_visible, Py_ssize_t n_hidden1, \
             Py_ssize_t n_hidden2, const uint8_t *v, Py_ssize_t n, Py_ssize_t steps, \
             Py_ssize_t repeats, double log_Z, cyrbm_rng *streams, double *out, \
             int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_CHIB_LOG_PROB, chib_log_prob)

/* The terms of the DBN variational bound (SM08 Eq. 19-24), as cyrbm.BoundEstimator
 * computes them (bit for bit with streams = cyrbm.capi.make_bound_streams(seed, n)):
 * a DBN of n_layers >= 2 RBMs, layer l with W[l] (sizes[l] x sizes[l+1], C order),
 * vbias[l], hbias[l]; v: n x sizes[0] uint8 0/1; samples: M >= 1 draws of the
 * recognition model Q per vector (streams: n cyrbm_rng, one per vector, advanced).
 * Out, each n x M float64: lpv = ln p(v | h_1), lrest = the other directed terms plus
 * ln p*_top(h_{L-1}) (so ln p*(v, h) = lpv + lrest), lq = ln Q(h | v), ent = the
 * entropy of Q (per layer, given the sample below).  The bound of vector i is
 * mean_m(lpv + lrest + ent) - ln Z of the top RBM.  The products are cyrbm's own
 * binary products (no BLAS), on n_threads OpenMP threads.
 * -2 for n_layers outside 2..63 or a size < 1. */
#define CYRBM_SIG_DBN_BOUND_TERMS(T, F) \
    int (*F)(const T **W, const T **vbias, const T **hbias, const Py_ssize_t *sizes, \
             Py_ssize_t n_layers, const uint8_t *v, Py_ssize_t n, Py_ssize_t samples, \
             cyrbm_rng *streams, double *lpv, double *lrest, double *lq, double *ent, \
             int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_DBN_BOUND_TERMS, dbn_bound_terms)

/* ---- version 4 ---- */

/* steps rounds of parallel tempering (Cho, Raiko & Ilin 2010, Table I) on n ladders of
 * n_temps chains: each round one block-Gibbs sweep of every chain of the RBM
 * (t W, vbias, hbias) at its temperature t, then swaps of neighbouring temperatures
 * from the top down by the Metropolis rule (Eq. 5).
 *   temps:        n_temps temperatures, 0 <= t_0 < ... < t_K = 1 (else -2).
 *   v:            in/out, (n n_temps) x n_visible uint8: row m n_temps + k is ladder m's
 *                 chain at temps[k] (on return too; its T = 1 samples are the rows
 *                 m n_temps + n_temps - 1).
 *   streams:      n n_temps chain streams (advanced); swap_streams: n, one per ladder.
 *   accepted:     in/out (or NULL), n x (n_temps - 1) int64 counts of accepted swaps
 *                 of each pair (t_k, t_k+1).
 * With (streams, swap_streams) = cyrbm.capi.make_pt_streams(seed, n, n_temps) and v
 * as RBM.sample starts it, the T = 1 rows are RBM.sample(n, steps, seed=seed,
 * sampler="pt", temperatures=temps) bit for bit.  Results do not depend on n_threads. */
#define CYRBM_SIG_PT_SWEEPS(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, Py_ssize_t n_visible, \
             Py_ssize_t n_hidden, uint8_t *v, Py_ssize_t n, const double *temps, \
             Py_ssize_t n_temps, int steps, cyrbm_rng *streams, cyrbm_rng *swap_streams, \
             int64_t *accepted, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_PT_SWEEPS, pt_sweeps)

/* ---- version 5: the Gaussian RBM (Murray & Salakhutdinov 2009, Sec. 5.2) ----
 * Gaussian visible units of standard deviations sigma (n_visible, each > 0), binary
 * hidden units: E(v, h) = sum_i (v_i - b_i)^2 / (2 sigma_i^2) - c.h
 * - sum_ij (v_i / sigma_i) W_ij h_j.  Visible states are real, in the parameters'
 * float type (T), n x n_visible in C order; -2 also for a sigma that is not positive. */

/* steps block-Gibbs sweeps on n chains: h ~ p(h | v), then v ~ N(b + sigma (W h),
 * sigma^2).  v: in/out, the chains' states; h: out (or NULL), n x n_hidden uint8, the
 * last hidden states; streams: n cyrbm_rng (cyrbm.capi.make_streams(seed, n)), advanced.
 * The v returned is GaussianRBM.sample(n, steps, seed=seed, init=v) bit for bit.
 * Results do not depend on n_threads. */
#define CYRBM_SIG_GAUSS_GIBBS_SWEEPS(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, const T *sigma, \
             Py_ssize_t n_visible, Py_ssize_t n_hidden, T *v, uint8_t *h, Py_ssize_t n, \
             int steps, cyrbm_rng *streams, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_GAUSS_GIBBS_SWEEPS, gauss_gibbs_sweeps)

/* ln Z by AIS from independent Gaussians N(base_mean_i, base_sd_i^2) (its hidden units
 * free) to the Gaussian RBM, as cyrbm.Annealer(runs, schedule=betas,
 * seed).log_partition(model, base_rate=(base_mean, base_sd)): the same log weights,
 * bit for bit, with streams = cyrbm.capi.make_gauss_ais_streams(seed, runs).
 *   base_mean, base_sd: n_visible float64 each (base_sd > 0).
 *   betas:        n_betas inverse temperatures, 0 = beta_0 < ... < beta_K = 1.
 *   streams:      runs cyrbm_rng, advanced in place.
 *   log_weights:  out, runs float64 ln w; Z-hat = Z_A mean(w).
 *   log_Z_base:   out (or NULL), ln Z_A = n_hidden ln 2 + sum_i ln(sqrt(2 pi) base_sd_i).
 *   samples:      out (or NULL), runs x n_visible T, each run's final v. */
#define CYRBM_SIG_GAUSS_AIS_LOG_PARTITION(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, const T *sigma, \
             Py_ssize_t n_visible, Py_ssize_t n_hidden, const double *base_mean, \
             const double *base_sd, const double *betas, Py_ssize_t n_betas, \
             Py_ssize_t runs, cyrbm_rng *streams, double *log_weights, double *log_Z_base, \
             T *samples, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_GAUSS_AIS_LOG_PARTITION, gauss_ais_log_partition)

/* *log_Z = exact ln Z, v integrated out for each of the 2^n_hidden hidden states:
 * sum_i ln(sqrt(2 pi) sigma_i) + ln sum_h exp(c.h + sum_i (b_i u_i / sigma_i
 * + u_i^2 / 2)), u = W h, in float64, as GaussianRBM.log_partition (bit for bit, any
 * n_threads); -2 when n_hidden > CYRBM_EXACT_MAX_UNITS. */
#define CYRBM_SIG_GAUSS_EXACT_LOG_PARTITION(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, const T *sigma, \
             Py_ssize_t n_visible, Py_ssize_t n_hidden, double *log_Z, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_GAUSS_EXACT_LOG_PARTITION, gauss_exact_log_partition)

/* ---- version 6: the semi-restricted Boltzmann machine, and ratio AIS between two models
 * of one unit type (issue 35) ----
 * The SRBM (Osindero & Hinton 2008; MS09 Sec. 5.2): binary v with symmetric lateral
 * weights L (n_visible x n_visible, C order, zero diagonal), binary h, energy
 * -b.v - c.h - v^T W h - v^T L v / 2.  The SRBM's two entries run the engine's nogil
 * driver (no GIL taken since C API version 7; the same bits as before).  The drivers
 * behind the two ratio entries take arrays: those entries take the GIL
 * (PyGILState_Ensure; callable with or without it) to wrap the caller's buffers, and the
 * drivers release it for the runs themselves. */

/* steps sweeps on n chains: h ~ p(h | v) at once, then each v_i ~ p(v_i | h, v_-i) in
 * unit order.  v: in/out, n x n_visible uint8; h: out (or NULL), n x n_hidden uint8, the
 * last hidden states; streams: n cyrbm_rng (cyrbm.capi.make_streams(seed, n)), advanced.
 * The v returned is SRBM.sample(n, steps, seed=seed, init=v) bit for bit. */
#define CYRBM_SIG_SRBM_GIBBS_SWEEPS(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, const T *L, Py_ssize_t n_visible, \
             Py_ssize_t n_hidden, uint8_t *v, uint8_t *h, Py_ssize_t n, int steps, \
             cyrbm_rng *streams, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_SRBM_GIBBS_SWEEPS, srbm_gibbs_sweeps)

/* ln Z by AIS from independent visible units of log-odds base_rate (its hidden units
 * free) to the SRBM, beta scaling W, L and the hidden layer, as cyrbm.Annealer(runs,
 * schedule=betas, seed).log_partition(srbm, base_rate=base_rate): the same log weights,
 * bit for bit, with streams = cyrbm.capi.make_srbm_ais_streams(seed, runs).
 *   base_rate:    n_visible float64 log-odds (NULL: zeros).
 *   betas:        n_betas inverse temperatures, 0 = beta_0 < ... < beta_K = 1.
 *   streams:      runs cyrbm_rng, advanced in place.
 *   log_weights:  out, runs float64 ln w; Z-hat = Z_A mean(w).
 *   log_Z_base:   out (or NULL), ln Z_A = n_hidden ln 2 + sum_i softplus(base_rate_i).
 *   samples:      out (or NULL), runs x n_visible uint8, each run's final v. */
#define CYRBM_SIG_SRBM_AIS_LOG_PARTITION(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, const T *L, Py_ssize_t n_visible, \
             Py_ssize_t n_hidden, const double *base_rate, const double *betas, \
             Py_ssize_t n_betas, Py_ssize_t runs, cyrbm_rng *streams, double *log_weights, \
             double *log_Z_base, uint8_t *samples, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_SRBM_AIS_LOG_PARTITION, srbm_ais_log_partition)

/* ln(Z_B / Z_A) by ratio AIS (SM08 Sec. 3.2, Eq. 13-17, both hidden layers explicit)
 * between two Gaussian RBMs of one visible layer: A (W_a n_visible x n_hidden_a, vbias_a,
 * hbias_a, sigma_a) and B (the same with _b).  runs runs from the states v (runs x
 * n_visible float64, in/out: the final states on return; exact draws of A, or states of
 * Gibbs chains on A), each step k = 1..K adding ln p*_k(v) - ln p*_{k-1}(v) to its log
 * weight, then one sweep at beta_k (hA, hB, then v); run r draws from streams[r]
 * (cyrbm.capi.make_ratio_streams(seed, runs)), advanced.  log_weights (out, runs):
 * ln w + (n_hidden_b - n_hidden_a) ln 2, so ln(Z_B / Z_A) = ln mean(exp(log_weights));
 * with v the starting states of cyrbm.Annealer(runs, schedule=betas, seed).log_ratio(A,
 * B), its log_weights bit for bit.  In float64 (float32 parameters converted exactly);
 * -2 also for a sigma that is not positive. */
#define CYRBM_SIG_GAUSS_RATIO_AIS(T, F) \
    int (*F)(const T *W_a, const T *vbias_a, const T *hbias_a, const T *sigma_a, \
             Py_ssize_t n_hidden_a, const T *W_b, const T *vbias_b, const T *hbias_b, \
             const T *sigma_b, Py_ssize_t n_hidden_b, Py_ssize_t n_visible, double *v, \
             const double *betas, Py_ssize_t n_betas, Py_ssize_t runs, cyrbm_rng *streams, \
             double *log_weights, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_GAUSS_RATIO_AIS, gauss_ratio_ais)

/* The same between two SRBMs (L_a, L_b n_visible x n_visible; v runs x n_visible uint8):
 * v_i | hA, hB, v_-i one unit at a time, of log-odds (1 - beta) (b_a + W_a h_a + L_a v)_i
 * + beta (b_b + W_b h_b + L_b v)_i. */
#define CYRBM_SIG_SRBM_RATIO_AIS(T, F) \
    int (*F)(const T *W_a, const T *vbias_a, const T *hbias_a, const T *L_a, \
             Py_ssize_t n_hidden_a, const T *W_b, const T *vbias_b, const T *hbias_b, \
             const T *L_b, Py_ssize_t n_hidden_b, Py_ssize_t n_visible, uint8_t *v, \
             const double *betas, Py_ssize_t n_betas, Py_ssize_t runs, cyrbm_rng *streams, \
             double *log_weights, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_SRBM_RATIO_AIS, srbm_ratio_ais)

/* ---- version 7: parallel tempering of every unit type, and ratio AIS between two binary
 * RBMs (issue 35) ----
 * These entries run the engine's nogil drivers directly: no GIL is taken. */

/* steps rounds of parallel tempering (Cho, Raiko & Ilin 2010, Table I) of the Gaussian
 * RBM's tempered family
 *   ln p*_t(v) = -sum_i (v_i - b_i)^2 / (2 sigma_i^2) + sum_j softplus(t x_j),
 *   x = c + W^T (v / sigma)
 * (t scales W and c and keeps b and sigma; t = 0: independent N(b_i, sigma_i^2)) on n
 * ladders of n_temps chains: each round one Gibbs sweep of every chain at its t (h ~
 * p_t(h | v), v ~ N(b + t sigma (W h), sigma^2)), then per ladder the swaps of
 * neighbouring states from the top down by the Metropolis rule (Eq. 5), pair (t_k,
 * t_k+1) for k = K-1 .. 0, each with one uniform of the ladder's swap stream.
 *   temps:        n_temps temperatures, 0 <= t_0 < ... < t_K = 1 (else -2).
 *   v:            in/out, (n n_temps) x n_visible of T: row m n_temps + k is ladder m's
 *                 state at temps[k] (on return too; the samples are the rows
 *                 m n_temps + n_temps - 1).  States move between rows; chains do not.
 *   streams:      n n_temps chain streams (row r's sweeps), swap_streams: n (advanced by
 *                 n_temps - 1 draws a round); cyrbm.capi.make_pt_streams(seed, n, n_temps).
 *   accepted:     in/out (or NULL), n x (n_temps - 1) int64 counts of accepted swaps of
 *                 each pair, as pt_sweeps reports them (rate = accepted / rounds).
 * With v as GaussianRBM.sample starts it (init row m in rows m n_temps .. m n_temps +
 * n_temps - 1), the beta = 1 rows are GaussianRBM.sample(n, steps, seed=seed, init=init,
 * sampler="pt", temperatures=temps) bit for bit; the rounds are those of
 * Trainer(method="pt", visible="gaussian").  Results do not depend on n_threads;
 * -2 also for a sigma that is not positive. */
#define CYRBM_SIG_GAUSS_PT_SWEEPS(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, const T *sigma, \
             Py_ssize_t n_visible, Py_ssize_t n_hidden, T *v, Py_ssize_t n, \
             const double *temps, Py_ssize_t n_temps, int steps, cyrbm_rng *streams, \
             cyrbm_rng *swap_streams, int64_t *accepted, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_GAUSS_PT_SWEEPS, gauss_pt_sweeps)

/* The same for the SRBM's tempered family ln p*_t(v) = b.v + t v^T L v / 2 + sum_j
 * softplus(t (c + W^T v)_j) (t scales W, c and L; t = 0: independent units of log-odds
 * b): sweeps h ~ p_t(h | v) at once, then each v_i in unit order; v 0/1 uint8.  The
 * beta = 1 rows are SRBM.sample(..., sampler="pt", temperatures=temps) bit for bit. */
#define CYRBM_SIG_SRBM_PT_SWEEPS(T, F) \
    int (*F)(const T *W, const T *vbias, const T *hbias, const T *L, Py_ssize_t n_visible, \
             Py_ssize_t n_hidden, uint8_t *v, Py_ssize_t n, const double *temps, \
             Py_ssize_t n_temps, int steps, cyrbm_rng *streams, cyrbm_rng *swap_streams, \
             int64_t *accepted, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_SRBM_PT_SWEEPS, srbm_pt_sweeps)

/* ln(Z_B / Z_A) by ratio AIS (SM08 Sec. 3.2, Eq. 13-17) between two binary RBMs of one
 * visible layer: A (W_a n_visible x n_hidden_a, vbias_a, hbias_a) and B (the same with
 * _b), both hidden layers in each transition.  runs runs from the states v (runs x
 * n_visible uint8, in/out: the final states on return; exact draws of A, or states of
 * Gibbs chains on A), each step k = 1..K adding ln p*_k(v) - ln p*_{k-1}(v) to its log
 * weight, then (k < K) one transition at beta_k.
 *   streams:      runs x CYRBM_AIS_STREAM_WORDS uint64 (cyrbm.capi.make_ais_streams(seed,
 *                 runs)), advanced in place.
 *   refresh_every: exact recomputation of the inputs every so many steps (the
 *                 Annealer's default is 200).
 *   log_weights:  out, runs float64: ln w + (n_hidden_b - n_hidden_a) ln 2, so that
 *                 ln(Z_B / Z_A) = ln mean(exp(log_weights)).
 * With v the starting states of cyrbm.Annealer(runs, schedule=betas, seed).log_ratio(A,
 * B), its log_weights and samples bit for bit, for models of that dtype.  -2 when a size
 * is < 1, a pointer is NULL or betas is not a finite, strictly increasing list from 0
 * to 1. */
#define CYRBM_SIG_RATIO_AIS(T, F) \
    int (*F)(const T *W_a, const T *vbias_a, const T *hbias_a, Py_ssize_t n_hidden_a, \
             const T *W_b, const T *vbias_b, const T *hbias_b, Py_ssize_t n_hidden_b, \
             Py_ssize_t n_visible, uint8_t *v, const double *betas, Py_ssize_t n_betas, \
             Py_ssize_t runs, uint64_t *streams, Py_ssize_t refresh_every, \
             double *log_weights, int n_threads)
CYRBM_FN_TYPES(CYRBM_SIG_RATIO_AIS, ratio_ais)

typedef struct cyrbm_capi {
    int version;
    CYRBM_PAIR(gibbs_sweeps)
    CYRBM_PAIR(log_unnormalized)
    /* version 2 */
    CYRBM_PAIR(ais_log_partition)
    CYRBM_PAIR(exact_log_partition)
    /* version 3 */
    CYRBM_PAIR(chib_log_prob)
    CYRBM_PAIR(dbn_bound_terms)
    /* version 4 */
    CYRBM_PAIR(pt_sweeps)
    /* version 5 */
    CYRBM_PAIR(gauss_gibbs_sweeps)
    CYRBM_PAIR(gauss_ais_log_partition)
    CYRBM_PAIR(gauss_exact_log_partition)
    /* version 6 */
    CYRBM_PAIR(srbm_gibbs_sweeps)
    CYRBM_PAIR(srbm_ais_log_partition)
    CYRBM_PAIR(gauss_ratio_ais)
    CYRBM_PAIR(srbm_ratio_ais)
    /* version 7 */
    CYRBM_PAIR(gauss_pt_sweeps)
    CYRBM_PAIR(srbm_pt_sweeps)
    CYRBM_PAIR(ratio_ais)
} cyrbm_capi;

/* Import the function table from the Python module cyrbm.capi (needs the GIL). */
static const cyrbm_capi *cyrbm_capi_import(void) {
    const cyrbm_capi *api = (const cyrbm_capi *) PyCapsule_Import("cyrbm.capi._C_API", 0);
    if (api != NULL && api->version < CYRBM_CAPI_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "the installed cyrbm has C API version %d, this extension needs %d",
                     api->version, CYRBM_CAPI_VERSION);
        return NULL;
    }
    return api;
}

#endif
