# cython: language_level=3
"""cyrbm's public C and Cython API (see capi.pxd and include/cyrbm/cyrbm.h).

Cython code cimports the functions below; C code gets the same functions through the
capsule ``cyrbm.capi._C_API`` with ``cyrbm_capi_import()`` from ``cyrbm/cyrbm.h``.
Both run exactly the kernels behind the Python API, so they give the same answers.
"""
from cpython.pycapsule cimport PyCapsule_New
from libc.stdint cimport uint8_t, uint64_t

from cyrbm._random cimport cyrbm_rng
from cyrbm cimport _gibbs

from cyrbm._random import make_streams as _make_streams


cdef extern from "cyrbm/cyrbm.h":
    int CYRBM_CAPI_VERSION
    ctypedef int (*gibbs_f64_t)(const double *, const double *, const double *, Py_ssize_t,
                                Py_ssize_t, uint8_t *, uint8_t *, Py_ssize_t, int,
                                cyrbm_rng *, int) noexcept nogil
    ctypedef int (*gibbs_f32_t)(const float *, const float *, const float *, Py_ssize_t,
                                Py_ssize_t, uint8_t *, uint8_t *, Py_ssize_t, int,
                                cyrbm_rng *, int) noexcept nogil
    ctypedef int (*logp_f64_t)(const double *, const double *, const double *, Py_ssize_t,
                               Py_ssize_t, const uint8_t *, Py_ssize_t, double *,
                               int) noexcept nogil
    ctypedef int (*logp_f32_t)(const float *, const float *, const float *, Py_ssize_t,
                               Py_ssize_t, const uint8_t *, Py_ssize_t, double *,
                               int) noexcept nogil
    ctypedef struct cyrbm_capi:
        int version
        gibbs_f64_t gibbs_sweeps_f64
        gibbs_f32_t gibbs_sweeps_f32
        logp_f64_t log_unnormalized_f64
        logp_f32_t log_unnormalized_f32


cdef inline bint _bad_sizes(Py_ssize_t n_visible, Py_ssize_t n_hidden, Py_ssize_t n) noexcept nogil:
    return n_visible < 1 or n_hidden < 1 or n < 0


cdef int gibbs_sweeps_f64(const double *W, const double *vbias, const double *hbias,
                          Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, uint8_t *h,
                          Py_ssize_t n, int steps, cyrbm_rng *streams,
                          int n_threads) noexcept nogil:
    if _bad_sizes(n_visible, n_hidden, n) or steps < 0:
        return -2
    return _gibbs.gibbs_sweeps(W, vbias, hbias, n_visible, n_hidden, v, h, n, steps, streams,
                               n_threads)


cdef int gibbs_sweeps_f32(const float *W, const float *vbias, const float *hbias,
                          Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, uint8_t *h,
                          Py_ssize_t n, int steps, cyrbm_rng *streams,
                          int n_threads) noexcept nogil:
    if _bad_sizes(n_visible, n_hidden, n) or steps < 0:
        return -2
    return _gibbs.gibbs_sweeps(W, vbias, hbias, n_visible, n_hidden, v, h, n, steps, streams,
                               n_threads)


cdef int log_unnormalized_f64(const double *W, const double *vbias, const double *hbias,
                              Py_ssize_t n_visible, Py_ssize_t n_hidden, const uint8_t *v,
                              Py_ssize_t n, double *out, int n_threads) noexcept nogil:
    if _bad_sizes(n_visible, n_hidden, n):
        return -2
    return _gibbs.log_unnormalized_rows(W, vbias, hbias, n_visible, n_hidden, v, n, out,
                                        n_threads)


cdef int log_unnormalized_f32(const float *W, const float *vbias, const float *hbias,
                              Py_ssize_t n_visible, Py_ssize_t n_hidden, const uint8_t *v,
                              Py_ssize_t n, double *out, int n_threads) noexcept nogil:
    if _bad_sizes(n_visible, n_hidden, n):
        return -2
    return _gibbs.log_unnormalized_rows(W, vbias, hbias, n_visible, n_hidden, v, n, out,
                                        n_threads)


cdef cyrbm_capi _table
_table.version = CYRBM_CAPI_VERSION
_table.gibbs_sweeps_f64 = gibbs_sweeps_f64
_table.gibbs_sweeps_f32 = gibbs_sweeps_f32
_table.log_unnormalized_f64 = log_unnormalized_f64
_table.log_unnormalized_f32 = log_unnormalized_f32

_C_API = PyCapsule_New(<void *> &_table, "cyrbm.capi._C_API", NULL)
C_API_VERSION = CYRBM_CAPI_VERSION


def make_streams(seed, Py_ssize_t n, purpose="sample"):
    """States of ``n`` random streams (a (n, 4) uint64 array) for the C/Cython kernels.

    With the default purpose these are the streams ``RBM.sample(n, seed=seed)`` uses, so
    an embedding pipeline can reproduce the Python API's answers bit for bit.
    """
    return _make_streams(seed, purpose, n)
