# cyrbm's public Cython API: nogil kernels on raw C buffers.
#
#   from cyrbm.capi cimport gibbs_sweeps, log_unnormalized, cyrbm_rng
#
# Each entry is declared once, over Cython's fused type ``floating`` (float64 or float32
# parameters: the call's pointer types choose); ``entry[double]`` / ``entry[float]`` are
# its two instances, the ones the C API's table holds (entry_f64 / entry_f32 in
# include/cyrbm/cyrbm.h).  The typed names of versions 1-7 (gibbs_sweeps_f64, ...) are
# kept for cimporting code, as inline aliases of the instances (generated at build time
# into _capi_typed.pxi, installed beside this file):
#
#   from cyrbm.capi cimport log_unnormalized_f64, gibbs_sweeps_f32, cyrbm_rng
#
# Compile the cimporting extension with include_dirs=[cyrbm.get_include()].  Sizes and
# layout: W is n_visible x n_hidden (C order), states are uint8 0/1 rows; each chain owns
# a cyrbm_rng stream (make them with cyrbm.capi.make_streams).  Return 0 on success, -1
# when memory runs out, -2 for invalid sizes.  These signatures are an ABI: they change
# only with a version bump (CYRBM_CAPI_VERSION in include/cyrbm/cyrbm.h).
from libc.stdint cimport uint8_t, int64_t, uint64_t
from cython cimport floating
from cyrbm._random cimport cyrbm_rng

# steps block-Gibbs sweeps h ~ p(h|v), v ~ p(v|h) (SM08 Eq. 5-6) on n chains: v (n x
# n_visible) in place, h (n x n_hidden) the last hidden states; streams: n cyrbm_rng.
cdef int gibbs_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                      Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, uint8_t *h,
                      Py_ssize_t n, int steps, cyrbm_rng *streams,
                      int n_threads) noexcept nogil
# out[r] = ln p*(v_r) (SM08 Eq. 2 with h summed out), float64.
cdef int log_unnormalized(const floating *W, const floating *vbias, const floating *hbias,
                          Py_ssize_t n_visible, Py_ssize_t n_hidden, const uint8_t *v,
                          Py_ssize_t n, double *out, int n_threads) noexcept nogil

# ---- version 2: partition functions (SM08 Sec. 3) ----
# AIS from the base-rate model to the RBM (Eq. 13-18): Annealer.log_partition in one call.
# base_rate: n_visible biases b_A (NULL: zeros); betas: n_betas values, 0 = beta_0 < ... <
# beta_K = 1; streams: runs x 32 uint64 (cyrbm.capi.make_ais_streams(seed, runs)), advanced
# in place; refresh_every >= 1 (the Annealer's default is 200).  Out: log_weights (runs,
# float64); log_Z_base = ln Z_A (Eq. 18) and samples (runs x n_visible uint8, the final
# v), each optional (NULL).  Bit-identical to Annealer(runs, schedule=betas,
# seed=seed).log_partition(model, base_rate=...).log_weights for a model of that dtype;
# independent of n_threads.
cdef int ais_log_partition(const floating *W, const floating *vbias, const floating *hbias,
                           Py_ssize_t n_visible, Py_ssize_t n_hidden,
                           const floating *base_rate, const double *betas,
                           Py_ssize_t n_betas, Py_ssize_t runs, uint64_t *streams,
                           Py_ssize_t refresh_every, double *log_weights,
                           double *log_Z_base, uint8_t *samples,
                           int n_threads) noexcept nogil
# Exact ln Z (Eq. 3) over the smaller layer, in float64, as cyrbm.exact_log_partition;
# -2 above cyrbm.capi.EXACT_MAX_UNITS (30) units in that layer.
cdef int exact_log_partition(const floating *W, const floating *vbias,
                             const floating *hbias, Py_ssize_t n_visible,
                             Py_ssize_t n_hidden, double *log_Z, int n_threads) noexcept nogil

# ---- version 3: the Chib-style estimator of a two-layer DBN (MS09 Figure 1) ----
# out[i] = ln P-hat(v_i) (repeats averaged in P); streams: n * repeats cyrbm_rng states,
# cyrbm.capi.make_chib_streams(seed, n, steps, repeats); bit-identical to
# cyrbm.estimators.chib.chib_log_prob(...).log_probs for a DBN of that dtype.  -2 for invalid sizes
# or weights beyond 80 (f32) / 700 (f64) in magnitude.
cdef int chib_log_prob(const floating *W1, const floating *vbias1, const floating *hbias1,
                       const floating *W2, const floating *vbias2, const floating *hbias2,
                       Py_ssize_t n_visible, Py_ssize_t n_hidden1, Py_ssize_t n_hidden2,
                       const uint8_t *v, Py_ssize_t n, Py_ssize_t steps, Py_ssize_t repeats,
                       double log_Z, cyrbm_rng *streams, double *out,
                       int n_threads) noexcept nogil
# ---- version 3: the DBN variational bound's terms (SM08 Eq. 19-24) ----
# W[l], vbias[l], hbias[l]: layer l (sizes[l] x sizes[l+1]); v: n x sizes[0] 0/1; streams:
# n (cyrbm.capi.make_bound_streams(seed, n)); out (n x samples float64): lpv, lrest, lq,
# ent as cyrbm.BoundEstimator uses them (see include/cyrbm/cyrbm.h).  No BLAS.
cdef int dbn_bound_terms(const floating **W, const floating **vbias,
                         const floating **hbias, const Py_ssize_t *sizes, Py_ssize_t n_layers,
                         const uint8_t *v, Py_ssize_t n, Py_ssize_t samples,
                         cyrbm_rng *streams, double *lpv, double *lrest, double *lq,
                         double *ent, int n_threads) noexcept nogil

# ---- version 4: parallel tempering (Cho, Raiko & Ilin 2010, Table I) ----
# steps rounds on n ladders of n_temps chains (temps: 0 <= t_0 < ... < t_K = 1): a tempered
# sweep of every chain (the RBM (t W, b, c)), then swaps of neighbours by Eq. 5.  v: (n
# n_temps) x n_visible, row m n_temps + k at temps[k] (in and out); streams: n n_temps chain
# streams, swap_streams: n (cyrbm.capi.make_pt_streams(seed, n, n_temps)); accepted: n x
# (n_temps - 1) int64 counts or NULL.  The T = 1 rows equal RBM.sample(n, steps, seed=seed,
# sampler="pt", temperatures=temps) bit for bit.
cdef int pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                   Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, Py_ssize_t n,
                   const double *temps, Py_ssize_t n_temps, int steps, cyrbm_rng *streams,
                   cyrbm_rng *swap_streams, int64_t *accepted, int n_threads) noexcept nogil

# ---- version 5: the Gaussian RBM (MS09 Sec. 5.2: Gaussian visible units of standard
# deviations sigma, binary hidden units) ----
# steps block-Gibbs sweeps h ~ p(h|v), v ~ N(b + sigma (W h), sigma^2) on n chains from
# v (n x n_visible, the parameters' float type, in place); h (n x n_hidden uint8, or
# NULL) the last hidden states; streams: n (cyrbm.capi.make_streams(seed, n)).  Equals
# GaussianRBM.sample(n, steps, seed=seed, init=v) bit for bit.
cdef int gauss_gibbs_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                            const floating *sigma, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                            floating *v, uint8_t *h, Py_ssize_t n, int steps,
                            cyrbm_rng *streams, int n_threads) noexcept nogil
# AIS from independent Gaussians N(base_mean, base_sd^2) (hidden units free) to the
# Gaussian RBM: Annealer.log_partition(model, base_rate=(base_mean, base_sd)) in one
# call.  streams: runs (cyrbm.capi.make_gauss_ais_streams(seed, runs)), advanced.  Out:
# log_weights (runs); log_Z_base = ln Z_A and samples (runs x n_visible, each run's final
# v), each optional (NULL).
cdef int gauss_ais_log_partition(const floating *W, const floating *vbias,
                                 const floating *hbias, const floating *sigma,
                                 Py_ssize_t n_visible, Py_ssize_t n_hidden,
                                 const double *base_mean, const double *base_sd,
                                 const double *betas, Py_ssize_t n_betas, Py_ssize_t runs,
                                 cyrbm_rng *streams, double *log_weights, double *log_Z_base,
                                 floating *samples, int n_threads) noexcept nogil
# Exact ln Z over the 2^n_hidden hidden states (a Gaussian integral each), float64, as
# GaussianRBM.log_partition, bit for bit; -2 above EXACT_MAX_UNITS (30) hidden units.
cdef int gauss_exact_log_partition(const floating *W, const floating *vbias,
                                   const floating *hbias, const floating *sigma,
                                   Py_ssize_t n_visible, Py_ssize_t n_hidden, double *log_Z,
                                   int n_threads) noexcept nogil

# ---- version 6: every unit type's samplers and ratio AIS (issue 35) ----
# The semi-restricted Boltzmann machine (Osindero & Hinton 2008; MS09 Sec. 5.2: binary v
# with symmetric lateral weights L, n_visible x n_visible, zero diagonal; binary h).
# steps sweeps (h | v at once, then v | h one unit at a time) on n chains from v (n x
# n_visible uint8, in place); h (n x n_hidden uint8, or NULL) the last hidden states;
# streams: n (cyrbm.capi.make_streams(seed, n)).  Equals SRBM.sample(n, steps, seed=seed,
# init=v) bit for bit.
cdef int srbm_gibbs_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                           const floating *L, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                           uint8_t *v, uint8_t *h, Py_ssize_t n, int steps,
                           cyrbm_rng *streams, int n_threads) noexcept nogil
# AIS from independent visible units of log-odds base_rate (n_visible float64, NULL:
# zeros; hidden units free) to the SRBM: Annealer.log_partition(srbm,
# base_rate=base_rate) in one call.  streams: runs (cyrbm.capi.make_srbm_ais_streams(seed,
# runs)), advanced.  Out: log_weights (runs); log_Z_base = M ln 2 + sum_i softplus(base_i)
# and samples (runs x n_visible uint8, the final v), each optional (NULL).
cdef int srbm_ais_log_partition(const floating *W, const floating *vbias,
                                const floating *hbias, const floating *L,
                                Py_ssize_t n_visible, Py_ssize_t n_hidden,
                                const double *base_rate, const double *betas,
                                Py_ssize_t n_betas, Py_ssize_t runs, cyrbm_rng *streams,
                                double *log_weights, double *log_Z_base, uint8_t *samples,
                                int n_threads) noexcept nogil
# Ratio AIS (SM08 Sec. 3.2, Eq. 13-17, both hidden layers explicit) from the Gaussian RBM A
# (W_a n_visible x n_hidden_a, vbias_a, hbias_a, sigma_a) to B (the same with _b): runs
# runs from the states v (runs x n_visible float64, INOUT: the final states on return),
# steps k = 1 .. K of betas (0 = beta_0 < ... < beta_K = 1); streams: runs
# (cyrbm.capi.make_ratio_streams(seed, runs)).  log_weights (out, runs): ln w +
# (n_hidden_b - n_hidden_a) ln 2, the log_weights of Annealer.log_ratio(A, B) when v are
# its starting states, so that ln(Z_B / Z_A) = ln mean(exp(log_weights)).  In float64
# (float32 parameters are converted exactly).
cdef int gauss_ratio_ais(const floating *W_a, const floating *vbias_a, const floating *hbias_a,
                         const floating *sigma_a, Py_ssize_t n_hidden_a, const floating *W_b,
                         const floating *vbias_b, const floating *hbias_b,
                         const floating *sigma_b, Py_ssize_t n_hidden_b, Py_ssize_t n_visible,
                         double *v, const double *betas, Py_ssize_t n_betas, Py_ssize_t runs,
                         cyrbm_rng *streams, double *log_weights, int n_threads) noexcept nogil
# The same between two SRBMs (L_a, L_b: n_visible x n_visible; v: runs x n_visible uint8):
# v | hA, hB one unit at a time, of log-odds (1 - beta) (b_a + W_a h_a + L_a v)_i
# + beta (b_b + W_b h_b + L_b v)_i.
cdef int srbm_ratio_ais(const floating *W_a, const floating *vbias_a, const floating *hbias_a,
                        const floating *L_a, Py_ssize_t n_hidden_a, const floating *W_b,
                        const floating *vbias_b, const floating *hbias_b, const floating *L_b,
                        Py_ssize_t n_hidden_b, Py_ssize_t n_visible, uint8_t *v,
                        const double *betas, Py_ssize_t n_betas, Py_ssize_t runs,
                        cyrbm_rng *streams, double *log_weights, int n_threads) noexcept nogil


# ---- version 7: parallel tempering of every unit type, binary ratio AIS (issue 35) ----
# steps rounds of parallel tempering (CRI10 Table I, Eq. 5) of a Gaussian RBM's tempered
# family (beta scaling W and c, keeping b and sigma) on n ladders of n_temps chains: v (n
# n_temps x n_visible, the float type) row m n_temps + k at temps[k], in and out (states
# swap, chains keep their temperature and stream); streams n n_temps, swap_streams n
# (cyrbm.capi.make_pt_streams(seed, n, n_temps)); accepted n x (n_temps - 1) int64 or
# NULL.  The beta = 1 rows equal GaussianRBM.sample(n, steps, seed=seed, init=...,
# sampler="pt", temperatures=temps) bit for bit.
cdef int gauss_pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                         const floating *sigma, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                         floating *v, Py_ssize_t n, const double *temps, Py_ssize_t n_temps,
                         int steps, cyrbm_rng *streams, cyrbm_rng *swap_streams,
                         int64_t *accepted, int n_threads) noexcept nogil
# The same for an SRBM's family (beta scaling W, c and L, keeping b; v 0/1 uint8).
cdef int srbm_pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                        const floating *L, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                        uint8_t *v, Py_ssize_t n, const double *temps, Py_ssize_t n_temps,
                        int steps, cyrbm_rng *streams, cyrbm_rng *swap_streams,
                        int64_t *accepted, int n_threads) noexcept nogil
# Ratio AIS between two binary RBMs (SM08 Sec. 3.2, A's and B's hidden layers in one
# transition) from the states v (runs x n_visible uint8, in and out: the final states),
# steps k = 1 .. K of betas; streams runs x 32 uint64 (cyrbm.capi.make_ais_streams(seed,
# runs)), advanced; log_weights (out, runs): ln w + (n_hidden_b - n_hidden_a) ln 2, the
# log_weights of Annealer.log_ratio(A, B) bit for bit when v are its starting states.
cdef int ratio_ais(const floating *W_a, const floating *vbias_a, const floating *hbias_a,
                   Py_ssize_t n_hidden_a, const floating *W_b, const floating *vbias_b,
                   const floating *hbias_b, Py_ssize_t n_hidden_b, Py_ssize_t n_visible,
                   uint8_t *v, const double *betas, Py_ssize_t n_betas, Py_ssize_t runs,
                   uint64_t *streams, Py_ssize_t refresh_every, double *log_weights,
                   int n_threads) noexcept nogil

# ---- the typed names of versions 1-7 (kept for cimporting code): entry_f64 / entry_f32,
# inline aliases of entry[double] / entry[float], generated by setup.py from the entries
# above (capi_declarations) ----
include "_capi_typed.pxi"
