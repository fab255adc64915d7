# Annealed importance sampling and exact partition functions on raw buffers.
#
# The C kernels live in include/cyrbm/anneal_kernels.h (see it for the algorithm, the
# memory layout and the order in which random numbers are drawn); the cdef functions
# below run them over OpenMP threads.  A published signature here is an ABI.
from libc.stdint cimport uint8_t, int32_t, uint64_t
from cython cimport floating

cdef extern from "cyrbm/anneal_kernels.h" nogil:
    enum:
        CYRBM_AK_PAD
        CYRBM_AK_BLOCK
        CYRBM_AK_CHUNK_BYTES
        CYRBM_AK_TILE_BYTES
        CYRBM_AK_RNG_WORDS

    ctypedef struct cyrbm_ais_pair:
        Py_ssize_t D, nA, nB
        Py_ssize_t ldV, ldA, ldB
        const void *WA
        const void *WAT
        const void *aA
        const void *bA
        const void *WB
        const void *WBT
        const void *aB
        const void *bB
        const double *dbias
        double xboundA, xboundB

    ctypedef struct cyrbm_ais_state:
        uint8_t *v
        uint8_t *hA
        uint8_t *hB
        void *xA
        void *xB
        void *uA
        void *uB
        int32_t *vlist
        int32_t *vlist_off
        int32_t *nv
        int32_t *nv_off
        int32_t *hlistA
        int32_t *hlistA_off
        int32_t *nhA
        int32_t *nhA_off
        int32_t *hlistB
        int32_t *hlistB_off
        int32_t *nhB
        int32_t *nhB_off
        double *logw
        double *dot
        uint64_t *rng
        int32_t *cur
        Py_ssize_t cur_stride

    void cyrbm_ais_block_f32(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t r0,
                             Py_ssize_t r1, const double *betas, Py_ssize_t k0, Py_ssize_t k1,
                             Py_ssize_t k_end, int weights, Py_ssize_t refresh_every,
                             int force_refresh)
    void cyrbm_ais_block_f64(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t r0,
                             Py_ssize_t r1, const double *betas, Py_ssize_t k0, Py_ssize_t k1,
                             Py_ssize_t k_end, int weights, Py_ssize_t refresh_every,
                             int force_refresh)
    void cyrbm_ais_visible_f32(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t r0,
                               Py_ssize_t r1, double beta)
    void cyrbm_ais_visible_f64(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t r0,
                               Py_ssize_t r1, double beta)
    void cyrbm_exact_chunk(const double *Ws, Py_ssize_t ld, const double *cs, const double *co,
                           Py_ssize_t m, Py_ssize_t n_pad, uint64_t i0, uint64_t i1,
                           double *act, double *out, double *each)


cdef void ais_steps(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32, Py_ssize_t runs,
                    const double *betas, Py_ssize_t k0, Py_ssize_t k1, Py_ssize_t k_end,
                    int weights, Py_ssize_t refresh_every, int force_refresh,
                    int n_threads) noexcept nogil

cdef void ais_visible(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32,
                      Py_ssize_t runs, double beta, int n_threads) noexcept nogil

cdef double exact_log_partition_raw(const double *Ws, Py_ssize_t ld, const double *cs,
                                    const double *co, Py_ssize_t m, Py_ssize_t n_pad,
                                    int chunk_bits, double *chunks, int n_threads) noexcept nogil


cdef extern from "cyrbm/mathutil.h" nogil:
    double cyrbm_softplus(double x)


# The buffers of R AIS runs between RBMs A and B, in one malloc'd block: the single layout
# of the kernels' inputs, used by AISEngine and by the C/Cython API (cyrbm.capi).
cdef struct ais_buffers:
    cyrbm_ais_pair pair
    cyrbm_ais_state st
    void *block          # what ais_alloc took (NULL when nothing is held)
    Py_ssize_t runs
    bint float32

cdef int ais_alloc(ais_buffers *B, bint float32, Py_ssize_t runs, Py_ssize_t n_visible,
                   Py_ssize_t nA, Py_ssize_t nB) noexcept nogil

cdef void ais_free(ais_buffers *B) noexcept nogil

cdef void ais_set_rbm(ais_buffers *B, int which, const floating *W, const floating *vbias,
                      const floating *hbias) noexcept nogil

cdef double base_rate_log_partition(const floating *base_rate, Py_ssize_t n_visible,
                                    Py_ssize_t n_hidden) noexcept nogil

cdef int ais_log_partition(const floating *W, const floating *vbias, const floating *hbias,
                           Py_ssize_t n_visible, Py_ssize_t n_hidden,
                           const floating *base_rate, const double *betas,
                           Py_ssize_t n_betas, Py_ssize_t runs, uint64_t *streams,
                           Py_ssize_t refresh_every, double *log_weights,
                           double *log_Z_base, uint8_t *samples,
                           int n_threads) noexcept nogil

cdef int exact_log_partition_rbm(const floating *W, const floating *vbias,
                                 const floating *hbias, Py_ssize_t n_visible,
                                 Py_ssize_t n_hidden, int chunk_bits, double *log_Z,
                                 int n_threads) noexcept nogil
