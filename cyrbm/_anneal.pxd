# Annealed importance sampling and exact partition functions on raw buffers.
#
# The C kernels live in include/cyrbm/anneal_kernels.h (see it for the algorithm, the
# memory layout and the order in which random numbers are drawn); the cdef functions
# below run them over OpenMP threads.  A published signature here is an ABI.
from libc.stdint cimport uint8_t, int32_t, uint64_t

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
        int32_t *xs_counts
        int32_t *xs_entries

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
                           double *act, double *out)


cdef void ais_steps(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32, Py_ssize_t runs,
                    const double *betas, Py_ssize_t k0, Py_ssize_t k1, Py_ssize_t k_end,
                    int weights, Py_ssize_t refresh_every, int force_refresh,
                    int n_threads) noexcept nogil

cdef void ais_visible(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32,
                      Py_ssize_t runs, double beta, int n_threads) noexcept nogil

cdef double exact_log_partition_raw(const double *Ws, Py_ssize_t ld, const double *cs,
                                    const double *co, Py_ssize_t m, Py_ssize_t n_pad,
                                    int chunk_bits, double *chunks, int n_threads) noexcept nogil
