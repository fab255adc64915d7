# The Gaussian visible layer's drivers on raw buffers (cyrbm/_gauss.pyx), for the C API.
# A published signature here is an ABI.
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from cython cimport floating
from cyrbm._random cimport cyrbm_rng

from cyrbm._ckernels cimport *


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
