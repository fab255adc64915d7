# The Gibbs engine's buffers, its one loop and annealed importance sampling, on raw buffers.
#
# The C kernels live in cyrbm/_kernels/anneal.c and anneal_t.h (see them for the
# algorithm, the memory layout and the order in which random numbers are drawn); the cdef functions
# below run them over OpenMP threads.  A published signature here is an ABI.
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from cython cimport floating
from cyrbm._random cimport cyrbm_rng

from cyrbm._ckernels cimport *

# block-Gibbs chains recompute their inputs exactly every so many sweeps (float32 drift)
cdef enum:
    GIBBS_REFRESH = 200

# n rounded up to a multiple of CYRBM_AK_PAD elements (the kernels' padded rows)
cdef inline Py_ssize_t _pad(Py_ssize_t n) noexcept nogil:
    return ((n + CYRBM_AK_PAD - 1) // CYRBM_AK_PAD) * CYRBM_AK_PAD

cdef void ais_visible(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32,
                      Py_ssize_t runs, double beta, int n_threads) noexcept nogil

# The buffers of R AIS runs between RBMs A and B, in one malloc'd block: the single layout
# of the kernels' inputs, used by GibbsEngine and by the C/Cython API (cyrbm.capi).
# Gaussian visible units (gauss_run): the pair, the runs' states (given by the caller)
# and the threads' scratch blocks of work_bytes each.
cdef struct gauss_buffers:
    cyrbm_gauss_pair pair
    void *v              # runs x D, the kernels' float type
    uint8_t *h           # runs x M
    cyrbm_rng *streams   # one chain stream a run
    double *logw         # runs
    bint weights
    void *p              # NULL, or runs x M of the float type: p(h | v) at step p_step
    Py_ssize_t p_step
    char *work
    size_t work_bytes

cdef struct ais_buffers:
    cyrbm_ais_pair pair
    cyrbm_ais_state st
    void *block          # what ais_alloc took (NULL when nothing is held)
    Py_ssize_t runs
    bint float32
    void *ebuf           # ldB elements: B's unscaled hidden biases (ais_set_tempered)
    gauss_buffers *gauss # not NULL: the runs have Gaussian visible units (gauss_run)

# The one loop of the engine's transitions (GibbsEngine, the samplers, the C API): steps
# s0 <= s < s1 of every run, AIS steps (anneal) or tempered block-Gibbs sweeps; 0 or -3.
cdef void ais_refresh_inputs(ais_buffers *B, int n_threads) noexcept nogil
cdef int engine_run(ais_buffers *B, bint anneal, const double *betas, Py_ssize_t s0,
                    Py_ssize_t s1, Py_ssize_t k_end, int weights, Py_ssize_t refresh_every,
                    int force_refresh, int n_threads, bint check_signals,
                    Py_ssize_t piece=*) noexcept nogil

cdef int ais_alloc(ais_buffers *B, bint float32, Py_ssize_t runs, Py_ssize_t n_visible,
                   Py_ssize_t nA, Py_ssize_t nB) noexcept nogil

cdef void ais_free(ais_buffers *B) noexcept nogil

cdef void ais_set_rbm(ais_buffers *B, int which, const floating *W, const floating *vbias,
                      const floating *hbias, bint bound_x=*) noexcept nogil

cdef double base_rate_log_partition(const floating *base_rate, Py_ssize_t n_visible,
                                    Py_ssize_t n_hidden) noexcept nogil

# 0 <= temps[0] < ... < temps[n - 1] = 1, all finite (ladders and AIS schedules)
cdef bint valid_ladder(const double *temps, Py_ssize_t n) noexcept nogil

# The one driver of AIS (SM08 Eq. 13-18): steps k0 <= k < k1 of the schedule beta_0..K
# on the buffers' runs (k = 0: the exact draw from the base rate); 0, or -3 on a signal.
cdef int ais_anneal(ais_buffers *B, const double *betas, Py_ssize_t K, Py_ssize_t k0,
                    Py_ssize_t k1, Py_ssize_t refresh_every, int n_threads,
                    bint check_signals) noexcept nogil

# Parallel tempering (Cho, Raiko & Ilin 2010): the engine in CRI10's configuration (the
# run at temperature t moves by the RBM (t W, b, c)); the swaps are in _tempering.pxd.
cdef void ais_set_tempered(ais_buffers *B, const floating *W, const floating *vbias,
                           const floating *hbias) noexcept nogil
