# The semi-restricted Boltzmann machine's driver on raw buffers (cyrbm/_srbm.pyx), for the
# C API.  A published signature here is an ABI.
from libc.stdint cimport uint8_t
from cython cimport floating
from cyrbm._random cimport cyrbm_rng

from cyrbm._ckernels cimport *


# Steps k0 <= k < k1 of R runs between independent units of log-odds base and the SRBM
# (W, vbias, hbias, L): v, h, y (= L v) R x D, R x M, R x D INOUT; 0, or -1 (memory).
cdef int srbm_engine(const floating *W, const floating *vbias, const floating *hbias,
                     const floating *L, const double *base, Py_ssize_t R, Py_ssize_t D,
                     Py_ssize_t M, uint8_t *v, uint8_t *h, double *y, const double *betas,
                     Py_ssize_t k0, Py_ssize_t k1, bint weights, bint fresh,
                     cyrbm_rng *streams, double *logw, int n_threads) noexcept nogil
