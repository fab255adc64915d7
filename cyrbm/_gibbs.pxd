# Conditionals, Bernoulli sampling and block-Gibbs steps of a binary RBM, on raw buffers.
#
# States are kept two ways at once: a 0/1 uint8 matrix (n_rows x n_units) and, per row,
# the list of active units (idx[row, 0:cnt[row]], ascending), which is what the
# binary-aware products consume.  All functions are nogil and noexcept; a published
# signature here is an ABI (see include/cyrbm/).
from libc.stdint cimport uint8_t, int32_t
from cython cimport floating
from cyrbm._random cimport cyrbm_rng

cdef extern from "cyrbm/kernels.h" nogil:
    void cyrbm_add_rows_f32(float *out, const float *W, Py_ssize_t ldw,
                            const int32_t *rows, Py_ssize_t n_rows, Py_ssize_t n)
    void cyrbm_add_rows_f64(double *out, const double *W, Py_ssize_t ldw,
                            const int32_t *rows, Py_ssize_t n_rows, Py_ssize_t n)
    void cyrbm_sub_rows_f32(float *out, const float *W, Py_ssize_t ldw,
                            const int32_t *rows, Py_ssize_t n_rows, Py_ssize_t n)
    void cyrbm_sub_rows_f64(double *out, const double *W, Py_ssize_t ldw,
                            const int32_t *rows, Py_ssize_t n_rows, Py_ssize_t n)

cdef extern from "cyrbm/mathutil.h" nogil:
    double cyrbm_softplus(double x)
    float cyrbm_softplusf(float x)
    double cyrbm_sigmoid(double x)
    float cyrbm_sigmoidf(float x)

cdef void add_rows(floating *out, const floating *W, Py_ssize_t ldw,
                   const int32_t *rows, Py_ssize_t n_rows, Py_ssize_t n) noexcept nogil

cdef void active_lists(const uint8_t *state, Py_ssize_t n_rows, Py_ssize_t n_units,
                       int32_t *idx, int32_t *cnt, int n_threads) noexcept nogil

cdef void binary_product(const floating *W, Py_ssize_t n_in, Py_ssize_t n_out,
                         const int32_t *idx, Py_ssize_t ld_idx, const int32_t *cnt,
                         Py_ssize_t n_rows, const floating *bias, floating *out,
                         int n_threads) noexcept nogil

cdef void sample_bernoulli(floating *act, Py_ssize_t n_rows, Py_ssize_t n_units,
                           cyrbm_rng *streams, uint8_t *state, int32_t *idx, int32_t *cnt,
                           int n_threads) noexcept nogil

cdef int log_unnormalized_rows(const floating *W, const floating *vbias, const floating *hbias,
                               Py_ssize_t n_visible, Py_ssize_t n_hidden, const uint8_t *v,
                               Py_ssize_t n, double *out, int n_threads) noexcept nogil

cdef int gibbs_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                      Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, uint8_t *h,
                      Py_ssize_t n, int steps, cyrbm_rng *streams,
                      int n_threads) noexcept nogil
# Kernels of a training step on aligned, padded buffers (include/cyrbm/cdkernels.h).
cdef extern from "cyrbm/cdkernels.h" nogil:
    Py_ssize_t cyrbm_padded_ld(Py_ssize_t n, Py_ssize_t itemsize)
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

# out[r, :] = bias + state[r, :] @ S (or sigma of it) on padded buffers (S = A with
# aligned rows, source 0, or W.T, source 1), by row sums over the active units (sparse
# states) or subset tables (dense states).
cdef void padded_product(floating *out, Py_ssize_t ldo, const floating *bias,
                         const floating *A, Py_ssize_t lda, const floating *W, Py_ssize_t ldw,
                         int source, Py_ssize_t n_src, Py_ssize_t n_cols,
                         const uint8_t *state, const int32_t *idx, const int32_t *cnt,
                         uint8_t *codes, char **panels, Py_ssize_t n_rows, bint expit,
                         int n_threads) noexcept nogil
