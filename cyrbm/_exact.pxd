# Exact enumeration of a binary RBM's ln Z on raw buffers (cyrbm/_exact.pyx), for the C API.
# A published signature here is an ABI.
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from cython cimport floating

from cyrbm._ckernels cimport *


cdef double exact_log_partition_raw(const double *Ws, Py_ssize_t ld, const double *cs,
                                    const double *co, Py_ssize_t m, Py_ssize_t n_pad,
                                    int chunk_bits, double *chunks, int n_threads) noexcept nogil

cdef int exact_log_partition_rbm(const floating *W, const floating *vbias,
                                 const floating *hbias, Py_ssize_t n_visible,
                                 Py_ssize_t n_hidden, int chunk_bits, double *log_Z,
                                 int n_threads) noexcept nogil
