# cyrbm's public Cython API: nogil kernels on raw C buffers.
#
#   from cyrbm.capi cimport log_unnormalized_f64, gibbs_sweeps_f64, cyrbm_rng
#
# Compile the cimporting extension with include_dirs=[cyrbm.get_include()].  Sizes and
# layout: W is n_visible x n_hidden (C order), states are uint8 0/1 rows; each chain owns
# a cyrbm_rng stream (make them with cyrbm.capi.make_streams).  Return 0 on success, -1
# when memory runs out, -2 for invalid sizes.  These signatures are an ABI: they change
# only with a version bump (CYRBM_CAPI_VERSION in include/cyrbm/cyrbm.h).
from libc.stdint cimport uint8_t, uint64_t
from cyrbm._random cimport cyrbm_rng

cdef int gibbs_sweeps_f64(const double *W, const double *vbias, const double *hbias,
                          Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, uint8_t *h,
                          Py_ssize_t n, int steps, cyrbm_rng *streams,
                          int n_threads) noexcept nogil
cdef int gibbs_sweeps_f32(const float *W, const float *vbias, const float *hbias,
                          Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, uint8_t *h,
                          Py_ssize_t n, int steps, cyrbm_rng *streams,
                          int n_threads) noexcept nogil
cdef int log_unnormalized_f64(const double *W, const double *vbias, const double *hbias,
                              Py_ssize_t n_visible, Py_ssize_t n_hidden, const uint8_t *v,
                              Py_ssize_t n, double *out, int n_threads) noexcept nogil
cdef int log_unnormalized_f32(const float *W, const float *vbias, const float *hbias,
                              Py_ssize_t n_visible, Py_ssize_t n_hidden, const uint8_t *v,
                              Py_ssize_t n, double *out, int n_threads) noexcept nogil
