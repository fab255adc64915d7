# Annealed importance sampling and exact partition functions on raw buffers.
#
# The C kernels live in cyrbm/_kernels/anneal.c and anneal_t.h (see them for the
# algorithm, the memory layout and the order in which random numbers are drawn); the cdef functions
# below run them over OpenMP threads.  A published signature here is an ABI.
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from cython cimport floating
from cyrbm._random cimport cyrbm_rng

from cyrbm._ckernels cimport *


cdef int gibbs_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                      Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, uint8_t *h,
                      Py_ssize_t n, int steps, cyrbm_rng *streams,
                      int n_threads, bint check_signals=*) noexcept nogil

cdef void ais_visible(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32,
                      Py_ssize_t runs, double beta, int n_threads) noexcept nogil

cdef double exact_log_partition_raw(const double *Ws, Py_ssize_t ld, const double *cs,
                                    const double *co, Py_ssize_t m, Py_ssize_t n_pad,
                                    int chunk_bits, double *chunks, int n_threads) noexcept nogil


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

# The Gaussian visible layer's one driver (gauss_run and the C API): steps k0 <= k < k1 of
# R runs v (R x D) between N(mu, sd^2) and the Gaussian RBM (p: NULL, or OUT p(h | v) at
# step k0); 0, -1 (memory), -3 (signal).
cdef int gauss_engine(const floating *W, const floating *vbias, const floating *hbias,
                      const floating *sigma, const double *mu, const double *sd,
                      Py_ssize_t R, Py_ssize_t D, Py_ssize_t M, floating *v, uint8_t *h,
                      const double *betas, Py_ssize_t k0, Py_ssize_t k1, bint weights,
                      cyrbm_rng *streams, double *logw, floating *p, int n_threads,
                      bint check_signals) noexcept nogil

# Exact ln Z of a Gaussian RBM over its 2^M hidden states (float64; 0, -1, -2 for M > 40).
cdef int gauss_exact_log_partition(const floating *W, const floating *vbias,
                                   const floating *hbias, const floating *sigma,
                                   Py_ssize_t D, Py_ssize_t M, double *log_Z,
                                   int n_threads) noexcept nogil

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

cdef int exact_log_partition_rbm(const floating *W, const floating *vbias,
                                 const floating *hbias, Py_ssize_t n_visible,
                                 Py_ssize_t n_hidden, int chunk_bits, double *log_Z,
                                 int n_threads) noexcept nogil

# Parallel tempering (Cho, Raiko & Ilin 2010): the engine in CRI10's configuration (the
# run at temperature t moves by the RBM (t W, b, c)), swaps of neighbours over ladders.
cdef void ais_set_tempered(ais_buffers *B, const floating *W, const floating *vbias,
                           const floating *hbias) noexcept nogil

cdef void pt_swaps(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32,
                   Py_ssize_t ladders, Py_ssize_t K1, const double *temps, int32_t *order,
                   double *beta, cyrbm_rng *streams, int64_t *accepted,
                   int n_threads) noexcept nogil

cdef int pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                   Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, Py_ssize_t n,
                   const double *temps, Py_ssize_t n_temps, int steps, cyrbm_rng *streams,
                   cyrbm_rng *swap_streams, int64_t *accepted, int n_threads,
                   bint check_signals=*) noexcept nogil
