# Block Gibbs sampling of an RBM on the Gibbs engine (cyrbm/_engine.pyx), for the C API.
# A published signature here is an ABI.
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from cython cimport floating
from cyrbm._random cimport cyrbm_rng

from cyrbm._ckernels cimport *


cdef int gibbs_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                      Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, uint8_t *h,
                      Py_ssize_t n, int steps, cyrbm_rng *streams,
                      int n_threads, bint check_signals=*) noexcept nogil
