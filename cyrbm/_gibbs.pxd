# Conditionals, Bernoulli sampling and block-Gibbs steps of a binary RBM, on raw buffers.
#
# States are kept two ways at once: a 0/1 uint8 matrix (n_rows x n_units) and, per row,
# the list of active units (idx[row, 0:cnt[row]], ascending), which is what the
# binary-aware products consume.  All functions are nogil and noexcept; a published
# signature here is an ABI (see include/cyrbm/).  The C loops are in cyrbm/_kernels/gibbs_t.h.
from libc.stdint cimport uint8_t, int32_t
from cython cimport floating
from cyrbm._random cimport cyrbm_rng

from cyrbm._ckernels cimport *

cdef void add_rows(floating *out, const floating *W, Py_ssize_t ldw,
                   const int32_t *rows, Py_ssize_t n_rows, Py_ssize_t n) noexcept nogil

cdef void active_lists(const uint8_t *state, Py_ssize_t n_rows, Py_ssize_t n_units,
                       int32_t *idx, int32_t *cnt, int n_threads) noexcept nogil

cdef void binary_product(const floating *W, Py_ssize_t n_in, Py_ssize_t n_out,
                         const int32_t *idx, Py_ssize_t ld_idx, const int32_t *cnt,
                         Py_ssize_t n_rows, const floating *bias, floating *out,
                         int n_threads) noexcept nogil

cdef int log_unnormalized_rows(const floating *W, const floating *vbias, const floating *hbias,
                               Py_ssize_t n_visible, Py_ssize_t n_hidden, const uint8_t *v,
                               Py_ssize_t n, double *out, int n_threads) noexcept nogil

# Where padded_product finds the weights S it multiplies by
cdef enum:
    SOURCE_PADDED = 0     # S = A: aligned rows, stride lda
    SOURCE_TRANSPOSE = 1  # S = W.T, transposed block by block into per-thread panels

# out[r, :] = bias + state[r, :] @ S (or sigma of it) on padded buffers (S = A with
# aligned rows, source 0, or W.T, source 1), by row sums over the active units (sparse
# states) or subset tables (dense states).
cdef void padded_product(floating *out, Py_ssize_t ldo, const floating *bias,
                         const floating *A, Py_ssize_t lda, const floating *W, Py_ssize_t ldw,
                         int source, Py_ssize_t n_src, Py_ssize_t n_cols,
                         const uint8_t *state, const int32_t *idx, const int32_t *cnt,
                         uint8_t *codes, char **panels, Py_ssize_t n_rows, bint expit,
                         int n_threads) noexcept nogil

# Zeroed memory of nbytes on a 64-byte boundary, owned by a NumPy array appended to keep
cdef char *aligned_buffer(list keep, Py_ssize_t nbytes) except NULL

# padded_product with the path given: -1 its rule, 0 row sums, 1 subset tables
cdef void padded_product_path(floating *out, Py_ssize_t ldo, const floating *bias,
                              const floating *A, Py_ssize_t lda, const floating *W,
                              Py_ssize_t ldw, int source, Py_ssize_t n_src, Py_ssize_t n_cols,
                              const uint8_t *state, const int32_t *idx, const int32_t *cnt,
                              uint8_t *codes, char **panels, Py_ssize_t n_rows, bint expit,
                              int n_threads, int path) noexcept nogil

# padded_product's rule: subset tables when the states are dense
cdef bint use_subset_tables(const int32_t *cnt, Py_ssize_t n_rows,
                            Py_ssize_t n_src) noexcept nogil

# Row r: Bernoulli(P[r]) states from stream r, as 0/1 rows and lists (eight rows at a time)
cdef void padded_sample(const floating *P, Py_ssize_t ldp, Py_ssize_t n_units,
                        Py_ssize_t n_rows, cyrbm_rng *streams, uint8_t *state,
                        int32_t *idx, int32_t *cnt, int n_threads) noexcept nogil

# AT (n_cols x n_rows) = A.T, in parallel over blocks of 64 rows of A
cdef void transpose(const floating *A, Py_ssize_t n_rows, Py_ssize_t n_cols, floating *AT,
                    int n_threads) noexcept nogil

# sigma in place on act[0:n] (any n), by the vector kernel
cdef void sigmoid_inplace(floating *act, Py_ssize_t n, int n_threads) noexcept nogil
