# The Chib-style estimator and per-vector AIS on a two-layer DBN's first hidden layer, on
# raw buffers (cyrbm/_kernels/chib.c and chib_t.h hold the loops).  A published signature
# here is an ABI.
from libc.stdint cimport uint8_t, int32_t
from cython cimport floating
from cyrbm._random cimport cyrbm_rng

from cyrbm._ckernels cimport *


# A DBN's tables in one malloc'd block: the single layout of the kernels' model, used by
# ChibModel and by the C/Cython API (cyrbm.capi).
cdef struct chib_buffers:
    cyrbm_chib_model m
    void *block          # what chib_alloc took (NULL when nothing is held)
    bint float32

cdef int chib_alloc(chib_buffers *B, const floating *W1, const floating *b1,
                    const floating *c1, const floating *W2, const floating *b2,
                    const floating *c2, Py_ssize_t D, Py_ssize_t H1,
                    Py_ssize_t H2) noexcept nogil

cdef void chib_free(chib_buffers *B) noexcept nogil

cdef int chib_run(chib_buffers *B, const uint8_t *v, const int32_t *vec, Py_ssize_t n_items,
                  Py_ssize_t S, int tilde_backward, Py_ssize_t refresh_every,
                  cyrbm_rng *streams, double *lpstar, double *logphat,
                  int n_threads) noexcept nogil

cdef int chib_ais_run(chib_buffers *B, const uint8_t *v, const int32_t *vec,
                      Py_ssize_t n_items, const double *betas, Py_ssize_t n_betas,
                      int base_q, Py_ssize_t refresh_every, cyrbm_rng *streams, double *logw,
                      int n_threads) noexcept nogil

cdef void chib_combine(const double *a, const double *b, Py_ssize_t n, Py_ssize_t R,
                       double log_Z, double *out) noexcept nogil
