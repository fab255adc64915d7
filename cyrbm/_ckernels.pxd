# The private C kernel layer (cyrbm/_kernels/kernels.h): the dispatched kernels, the AIS
# buffers, the one random generator and the one exp/logistic/softplus.  Not public: the
# C/Cython API is capi.pxd and include/cyrbm/cyrbm.h.
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from cyrbm._random cimport cyrbm_rng

cdef extern from "kernels.h" nogil:
    # ---- generator (rng.h) and scalar math (vmath.h) ----
    uint64_t cyrbm_rng_next(cyrbm_rng *r)
    double cyrbm_rng_uniform(cyrbm_rng *r)
    uint64_t cyrbm_rng_next_lane(uint64_t *s, int l)
    void cyrbm_rng_seed_run(cyrbm_rng *chain, uint64_t *run)
    double cyrbm_exp_neg(double x)
    double cyrbm_softplus(double x)
    float cyrbm_softplusf(float x)
    double cyrbm_sigmoid(double x)
    float cyrbm_sigmoidf(float x)

    # ---- stopping on Ctrl-C / SIGTERM (common.c) ----
    void cyrbm_stop_watch_begin()
    int cyrbm_stop_watch_end()

    # ---- the one dispatch table (owned by cyrbm._dispatch; each engine module that calls
    # a kernel sets cyrbm_kt = kernel_table() when it is imported) ----
    ctypedef struct cyrbm_kernel_table:
        const char *isa
    const cyrbm_kernel_table *cyrbm_kt

    # ---- block Gibbs and CD/PCD (gibbs.c) ----
    Py_ssize_t cyrbm_padded_ld(Py_ssize_t n, Py_ssize_t itemsize)
    void cyrbm_add_rows_f32(float *out, const float *W, Py_ssize_t ldw,
                            const int32_t *rows, Py_ssize_t n_rows, Py_ssize_t n)
    void cyrbm_add_rows_f64(double *out, const double *W, Py_ssize_t ldw,
                            const int32_t *rows, Py_ssize_t n_rows, Py_ssize_t n)
    void cyrbm_rowsums_f32(float *out, Py_ssize_t ldo, const float *bias, const float *A,
                           Py_ssize_t lda, const int32_t *idx, Py_ssize_t ldi,
                           const int32_t *cnt, Py_ssize_t n_rows, int nvec, int expit)
    void cyrbm_rowsums_f64(double *out, Py_ssize_t ldo, const double *bias, const double *A,
                           Py_ssize_t lda, const int32_t *idx, Py_ssize_t ldi,
                           const int32_t *cnt, Py_ssize_t n_rows, int nvec, int expit)
    void cyrbm_rowdiffs_f32(float *out, Py_ssize_t ldo, Py_ssize_t ncols, const float *A,
                            const float *B, Py_ssize_t lda, const int32_t *pos,
                            const int32_t *npos, const int32_t *neg, const int32_t *nneg,
                            Py_ssize_t ldl, Py_ssize_t n_rows)
    void cyrbm_rowdiffs_f64(double *out, Py_ssize_t ldo, Py_ssize_t ncols, const double *A,
                            const double *B, Py_ssize_t lda, const int32_t *pos,
                            const int32_t *npos, const int32_t *neg, const int32_t *nneg,
                            Py_ssize_t ldl, Py_ssize_t n_rows)
    void cyrbm_subset_sums_f32(float *out, Py_ssize_t ldo, const float *bias, const float *A,
                               Py_ssize_t lda, Py_ssize_t n_src, const uint8_t *codes,
                               Py_ssize_t ldc, Py_ssize_t n_rows, int nvec, int expit)
    void cyrbm_subset_sums_f64(double *out, Py_ssize_t ldo, const double *bias,
                               const double *A, Py_ssize_t lda, Py_ssize_t n_src,
                               const uint8_t *codes, Py_ssize_t ldc, Py_ssize_t n_rows,
                               int nvec, int expit)
    void cyrbm_state_codes(const uint8_t *state, Py_ssize_t n, uint8_t *codes)
    void cyrbm_colsum_diff_f32(float *out, const float *A, const float *B, Py_ssize_t ld,
                               Py_ssize_t n_rows, Py_ssize_t n)
    void cyrbm_colsum_diff_f64(double *out, const double *A, const double *B, Py_ssize_t ld,
                               Py_ssize_t n_rows, Py_ssize_t n)
    void cyrbm_column_lists(const int32_t *idx, Py_ssize_t ldi, const int32_t *cnt,
                            Py_ssize_t n_rows, Py_ssize_t n_units, int32_t *col,
                            int32_t *ncol)
    void cyrbm_expit_f32(float *x, Py_ssize_t n)
    void cyrbm_expit_f64(double *x, Py_ssize_t n)
    int32_t cyrbm_bernoulli_f32(const float *p, Py_ssize_t n, cyrbm_rng *rng,
                                uint8_t *state, int32_t *idx)
    int32_t cyrbm_bernoulli_f64(const double *p, Py_ssize_t n, cyrbm_rng *rng,
                                uint8_t *state, int32_t *idx)
    void cyrbm_bernoulli8_f32(const float *p, Py_ssize_t ldp, Py_ssize_t n, cyrbm_rng *rng,
                              uint8_t *state, int32_t *idx, int32_t *cnt)
    void cyrbm_bernoulli8_f64(const double *p, Py_ssize_t ldp, Py_ssize_t n, cyrbm_rng *rng,
                              uint8_t *state, int32_t *idx, int32_t *cnt)
    int cyrbm_momentum_f32(float *W, float *vel, const float *dW, Py_ssize_t n,
                           float lr, float mom, float wd, float sc, float *copy)
    int cyrbm_momentum_f64(double *W, double *vel, const double *dW, Py_ssize_t n,
                           double lr, double mom, double wd, double sc, double *copy)
    void cyrbm_transpose_f32(float *dst, Py_ssize_t ldd, const float *src, Py_ssize_t lds,
                             Py_ssize_t rows, Py_ssize_t cols)
    void cyrbm_transpose_f64(double *dst, Py_ssize_t ldd, const double *src, Py_ssize_t lds,
                             Py_ssize_t rows, Py_ssize_t cols)
    void cyrbm_bern_row_f32(const float *a, Py_ssize_t n, cyrbm_rng *rng, uint8_t *h,
                            int full, double *sums)
    void cyrbm_bern_row_f64(const double *a, Py_ssize_t n, cyrbm_rng *rng, uint8_t *h,
                            int full, double *sums)
    int cyrbm_amh_hop_f32(const float *W, const float *b, const float *c, Py_ssize_t D,
                          Py_ssize_t M, const double *A, const double *AT, const double *sp,
                          const double *logH, const double *Hp, Py_ssize_t L, uint8_t *v,
                          cyrbm_rng *rng, void *work, double *terms)
    int cyrbm_amh_hop_f64(const double *W, const double *b, const double *c, Py_ssize_t D,
                          Py_ssize_t M, const double *A, const double *AT, const double *sp,
                          const double *logH, const double *Hp, Py_ssize_t L, uint8_t *v,
                          cyrbm_rng *rng, void *work, double *terms)

    # ---- AIS and exact enumeration (anneal.c) ----
    enum:
        CYRBM_AK_PAD
        CYRBM_AK_BLOCK
        CYRBM_AK_CHUNK_BYTES
        CYRBM_AK_TILE_BYTES
        CYRBM_AK_DENSE_X
        CYRBM_AK_DENSE_U
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
        const void *TVA
        const void *TVB
        const void *THA
        const void *THB
        const void *cVA
        const void *cVB
        const void *cHA
        const void *cHB
        Py_ssize_t gV, gA, gB
        int dense
        Py_ssize_t dense_x, dense_u
        const void *eB

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
        uint64_t *rng
        int32_t *cur
        Py_ssize_t cur_stride
        int32_t *sel_dense
        int32_t *sel_sparse
        uint8_t *ustale

    void cyrbm_ais_block_f32(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t r0,
                             Py_ssize_t r1, const double *betas, Py_ssize_t k0, Py_ssize_t k1,
                             Py_ssize_t k_end, int weights, Py_ssize_t refresh_every,
                             int force_refresh)
    void cyrbm_ais_block_f64(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t r0,
                             Py_ssize_t r1, const double *betas, Py_ssize_t k0, Py_ssize_t k1,
                             Py_ssize_t k_end, int weights, Py_ssize_t refresh_every,
                             int force_refresh)
    void cyrbm_gibbs_tempered_f32(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t r0,
                                  Py_ssize_t r1, const double *beta, Py_ssize_t s0,
                                  Py_ssize_t s1, Py_ssize_t refresh_every, int force_refresh)
    void cyrbm_gibbs_tempered_f64(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t r0,
                                  Py_ssize_t r1, const double *beta, Py_ssize_t s0,
                                  Py_ssize_t s1, Py_ssize_t refresh_every, int force_refresh)
    void cyrbm_ais_visible_f32(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t r0,
                               Py_ssize_t r1, double beta)
    void cyrbm_ais_visible_f64(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t r0,
                               Py_ssize_t r1, double beta)
    void cyrbm_pt_swaps_f32(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t m0,
                            Py_ssize_t m1, Py_ssize_t K1, const double *temps, int32_t *order,
                            double *beta, cyrbm_rng *streams, int64_t *accepted)
    void cyrbm_pt_swaps_f64(const cyrbm_ais_pair *P, cyrbm_ais_state *S, Py_ssize_t m0,
                            Py_ssize_t m1, Py_ssize_t K1, const double *temps, int32_t *order,
                            double *beta, cyrbm_rng *streams, int64_t *accepted)
    void cyrbm_exact_chunk(const double *Ws, Py_ssize_t ld, const double *cs, const double *co,
                           Py_ssize_t m, Py_ssize_t n_pad, uint64_t i0, uint64_t i1,
                           double *act, double *out, double *each)
    double cyrbm_pll_row(const double *W, const double *b, const double *a, Py_ssize_t D,
                         Py_ssize_t n_pad, const uint8_t *v, double *act)

    # ---- single-site Gibbs on a DBN's first hidden layer (chib.c) ----
    ctypedef struct cyrbm_chib_model:
        Py_ssize_t D, H1, H2
        Py_ssize_t ld1, ld2
        const void *W1T
        const void *E1
        const void *b1
        const void *W2
        const void *E2
        const void *c2
        const double *b2
        const double *c1
        const double *s1
        const double *s2
        Py_ssize_t K1, K2

    ctypedef struct cyrbm_chib_work:
        pass

    size_t cyrbm_chib_layout(const cyrbm_chib_model *M, Py_ssize_t S, size_t itemsize,
                             char *base, cyrbm_chib_work *W)
    void cyrbm_chib_items_f32(const cyrbm_chib_model *M, const uint8_t *v, const int32_t *vec,
                              Py_ssize_t i0, Py_ssize_t i1, Py_ssize_t S, int tilde_backward,
                              Py_ssize_t refresh_every, cyrbm_rng *streams, double *lpstar,
                              double *logphat, void *work)
    void cyrbm_chib_items_f64(const cyrbm_chib_model *M, const uint8_t *v, const int32_t *vec,
                              Py_ssize_t i0, Py_ssize_t i1, Py_ssize_t S, int tilde_backward,
                              Py_ssize_t refresh_every, cyrbm_rng *streams, double *lpstar,
                              double *logphat, void *work)
    void cyrbm_chib_ais_f32(const cyrbm_chib_model *M, const uint8_t *v, const int32_t *vec,
                            Py_ssize_t i0, Py_ssize_t i1, const double *betas,
                            Py_ssize_t n_betas, int base_q, Py_ssize_t refresh_every,
                            cyrbm_rng *streams, double *logw, void *work)
    void cyrbm_chib_ais_f64(const cyrbm_chib_model *M, const uint8_t *v, const int32_t *vec,
                            Py_ssize_t i0, Py_ssize_t i1, const double *betas,
                            Py_ssize_t n_betas, int base_q, Py_ssize_t refresh_every,
                            cyrbm_rng *streams, double *logw, void *work)
