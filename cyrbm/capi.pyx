# cython: language_level=3
"""cyrbm's public C and Cython API (see capi.pxd and include/cyrbm/cyrbm.h).

Cython code cimports the functions below; C code gets the same functions through the
capsule ``cyrbm.capi._C_API`` with ``cyrbm_capi_import()`` from ``cyrbm/cyrbm.h``.
Both run exactly the kernels behind the Python API, so they give the same answers.
Version 2 adds ln Z: ``ais_log_partition_f32/f64`` (AIS from a base-rate model, SM08
Eq. 13-18, with streams from ``make_ais_streams``) and ``exact_log_partition_f32/f64``.
Version 3 adds the DBNs' estimators: ``chib_log_prob_f32/f64``, the Chib-style estimator
of a two-layer DBN's test log-probabilities (Murray & Salakhutdinov 2009, streams from
``make_chib_streams``), and ``dbn_bound_terms_f32/f64``, the terms of the variational
bound (SM08 Eq. 19-24, streams from ``make_bound_streams``).
Version 4 adds parallel tempering: ``pt_sweeps_f32/f64`` (Cho, Raiko & Ilin 2010, Table I,
with streams from ``make_pt_streams``).
"""
from cpython.pycapsule cimport PyCapsule_New
from libc.stdint cimport uint8_t, int64_t, uint64_t

from cyrbm._random cimport cyrbm_rng
from cyrbm cimport _gibbs
from cyrbm cimport _anneal
from cyrbm cimport _chib
from cython cimport floating
from libc.stdint cimport int32_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from cyrbm cimport _dbn

from cyrbm._random import make_streams as _make_streams
from cyrbm._random import (ais_streams, bound_streams, chib_streams, pt_swap_streams,
                           sample_streams)


cdef extern from "cyrbm/cyrbm.h":
    int CYRBM_CAPI_VERSION
    int CYRBM_AIS_STREAM_WORDS
    int CYRBM_EXACT_MAX_UNITS
    # the entries' function types, each declared from one signature in cyrbm.h (its
    # CYRBM_SIG_* macros); opaque here: the table takes the fused entries' instances
    # cast to them, and tests/test_embedding.py builds C code against the header
    ctypedef void *gibbs_sweeps_f64_fn "cyrbm_gibbs_sweeps_f64_fn"
    ctypedef void *gibbs_sweeps_f32_fn "cyrbm_gibbs_sweeps_f32_fn"
    ctypedef void *log_unnormalized_f64_fn "cyrbm_log_unnormalized_f64_fn"
    ctypedef void *log_unnormalized_f32_fn "cyrbm_log_unnormalized_f32_fn"
    ctypedef void *ais_log_partition_f64_fn "cyrbm_ais_log_partition_f64_fn"
    ctypedef void *ais_log_partition_f32_fn "cyrbm_ais_log_partition_f32_fn"
    ctypedef void *exact_log_partition_f64_fn "cyrbm_exact_log_partition_f64_fn"
    ctypedef void *exact_log_partition_f32_fn "cyrbm_exact_log_partition_f32_fn"
    ctypedef void *chib_log_prob_f64_fn "cyrbm_chib_log_prob_f64_fn"
    ctypedef void *chib_log_prob_f32_fn "cyrbm_chib_log_prob_f32_fn"
    ctypedef void *dbn_bound_terms_f64_fn "cyrbm_dbn_bound_terms_f64_fn"
    ctypedef void *dbn_bound_terms_f32_fn "cyrbm_dbn_bound_terms_f32_fn"
    ctypedef void *pt_sweeps_f64_fn "cyrbm_pt_sweeps_f64_fn"
    ctypedef void *pt_sweeps_f32_fn "cyrbm_pt_sweeps_f32_fn"
    ctypedef struct cyrbm_capi:
        int version
        gibbs_sweeps_f64_fn gibbs_sweeps_f64
        gibbs_sweeps_f32_fn gibbs_sweeps_f32
        log_unnormalized_f64_fn log_unnormalized_f64
        log_unnormalized_f32_fn log_unnormalized_f32
        ais_log_partition_f64_fn ais_log_partition_f64
        ais_log_partition_f32_fn ais_log_partition_f32
        exact_log_partition_f64_fn exact_log_partition_f64
        exact_log_partition_f32_fn exact_log_partition_f32
        chib_log_prob_f64_fn chib_log_prob_f64
        chib_log_prob_f32_fn chib_log_prob_f32
        dbn_bound_terms_f64_fn dbn_bound_terms_f64
        dbn_bound_terms_f32_fn dbn_bound_terms_f32
        pt_sweeps_f64_fn pt_sweeps_f64
        pt_sweeps_f32_fn pt_sweeps_f32


cdef inline bint _bad_sizes(Py_ssize_t n_visible, Py_ssize_t n_hidden, Py_ssize_t n) noexcept nogil:
    return n_visible < 1 or n_hidden < 1 or n < 0


# One implementation per entry, over the fused type ``floating``; the table holds the two
# instances of each (entry[double] as entry_f64, entry[float] as entry_f32).
cdef int gibbs_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                      Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, uint8_t *h,
                      Py_ssize_t n, int steps, cyrbm_rng *streams,
                      int n_threads) noexcept nogil:
    if _bad_sizes(n_visible, n_hidden, n) or steps < 0:
        return -2
    return _anneal.gibbs_sweeps(W, vbias, hbias, n_visible, n_hidden, v, h, n, steps, streams,
                                n_threads)


cdef int log_unnormalized(const floating *W, const floating *vbias, const floating *hbias,
                          Py_ssize_t n_visible, Py_ssize_t n_hidden, const uint8_t *v,
                          Py_ssize_t n, double *out, int n_threads) noexcept nogil:
    if _bad_sizes(n_visible, n_hidden, n):
        return -2
    return _gibbs.log_unnormalized_rows(W, vbias, hbias, n_visible, n_hidden, v, n, out,
                                        n_threads)


# ------------------------------------------------------------------ version 2: ln Z
cdef int ais_log_partition(const floating *W, const floating *vbias, const floating *hbias,
                           Py_ssize_t n_visible, Py_ssize_t n_hidden,
                           const floating *base_rate, const double *betas,
                           Py_ssize_t n_betas, Py_ssize_t runs, uint64_t *streams,
                           Py_ssize_t refresh_every, double *log_weights,
                           double *log_Z_base, uint8_t *samples,
                           int n_threads) noexcept nogil:
    """AIS from the base-rate model to the RBM (W, vbias, hbias): SM08 Eq. 13-18.

    The driver ``ais_anneal`` (as ``Annealer.log_partition`` runs it) in one call, from
    the base-rate model (visible biases ``base_rate``, NULL for zeros; M free hidden
    units): exact samples of it, then one block-Gibbs transition at each beta_k, k =
    1..K-1, and ln p*_k(v_k) - ln p*_{k-1}(v_k) added to the log weights for k = 1..K
    (Eq. 11-12).
    ``streams`` (runs x 32 uint64, from ``annealing.ais_streams``) advance in place.
    Outputs: ``log_weights`` (runs, float64); if not NULL, ``log_Z_base`` = ln Z_A
    (Eq. 18) and ``samples`` (runs x n_visible uint8, the runs' final visible states).
    Returns 0, -1 when memory runs out, -2 for invalid sizes or schedule.
    """
    cdef _anneal.ais_buffers B
    cdef Py_ssize_t K = n_betas - 1, r
    cdef int status
    if (n_visible < 1 or n_hidden < 1 or runs < 1 or refresh_every < 1 or W == NULL
            or vbias == NULL or hbias == NULL or streams == NULL or log_weights == NULL
            or n_betas < 2 or not _anneal.valid_ladder(betas, n_betas) or betas[0] != 0.0):
        return -2
    status = _anneal.ais_alloc(&B, floating is float, runs, n_visible, 0, n_hidden)
    if status != 0:
        return status
    if base_rate != NULL:
        _anneal.ais_set_rbm(&B, 0, <const floating *> NULL, base_rate, <const floating *> NULL)
    _anneal.ais_set_rbm(&B, 1, W, vbias, hbias)
    memcpy(B.st.rng, streams, runs * _anneal.CYRBM_AK_RNG_WORDS * sizeof(uint64_t))
    _anneal.ais_anneal(&B, betas, K, 0, K + 1, refresh_every, n_threads, False)
    memcpy(log_weights, B.st.logw, runs * sizeof(double))
    memcpy(streams, B.st.rng, runs * _anneal.CYRBM_AK_RNG_WORDS * sizeof(uint64_t))
    if samples != NULL:
        for r in range(runs):
            memcpy(samples + r * n_visible, B.st.v + r * B.pair.ldV, n_visible)
    if log_Z_base != NULL:
        log_Z_base[0] = _anneal.base_rate_log_partition(base_rate, n_visible, n_hidden)
    _anneal.ais_free(&B)
    return 0


cdef int exact_log_partition(const floating *W, const floating *vbias,
                             const floating *hbias, Py_ssize_t n_visible,
                             Py_ssize_t n_hidden, double *log_Z, int n_threads) noexcept nogil:
    if _bad_sizes(n_visible, n_hidden, 0) or min(n_visible, n_hidden) > CYRBM_EXACT_MAX_UNITS:
        return -2
    return _anneal.exact_log_partition_rbm(W, vbias, hbias, n_visible, n_hidden, 12, log_Z,
                                           n_threads)


# ------------------------------------------------- version 3: the Chib-style estimator
cdef int chib_log_prob(const floating *W1, const floating *vbias1, const floating *hbias1,
                       const floating *W2, const floating *vbias2, const floating *hbias2,
                       Py_ssize_t n_visible, Py_ssize_t n_hidden1, Py_ssize_t n_hidden2,
                       const uint8_t *v, Py_ssize_t n, Py_ssize_t steps, Py_ssize_t repeats,
                       double log_Z, cyrbm_rng *streams, double *out,
                       int n_threads) noexcept nogil:
    """cyrbm.chib.chib_log_prob in one call: the same layout (chib_alloc), items i * R + r,
    the same refresh (10) and the same combination of the repeats (chib_combine)."""
    cdef _chib.chib_buffers B
    cdef Py_ssize_t items, i
    cdef int32_t *vec = NULL
    cdef double *lp = NULL
    cdef double *ph = NULL
    cdef int status
    if (W1 == NULL or vbias1 == NULL or hbias1 == NULL or W2 == NULL or vbias2 == NULL
            or hbias2 == NULL or streams == NULL or out == NULL or n < 0 or steps < 1
            or repeats < 1 or (n > 0 and v == NULL) or n > (1 << 28) // repeats):
        return -2
    if n == 0:
        return 0
    status = _chib.chib_alloc(&B, W1, vbias1, hbias1, W2, vbias2, hbias2, n_visible,
                              n_hidden1, n_hidden2)
    if status != 0:
        return -1 if status == -1 else -2
    items = n * repeats
    vec = <int32_t *> malloc(items * sizeof(int32_t))
    lp = <double *> malloc(items * sizeof(double))
    ph = <double *> malloc(items * sizeof(double))
    status = -1
    if vec != NULL and lp != NULL and ph != NULL:
        for i in range(items):
            vec[i] = <int32_t> (i // repeats)
        status = _chib.chib_run(&B, v, vec, items, steps, 1, 10, streams, lp, ph, n_threads)
        if status == 0:
            _chib.chib_combine(lp, ph, n, repeats, log_Z, out)
    free(vec)
    free(lp)
    free(ph)
    _chib.chib_free(&B)
    return status


# ------------------------------------------------- version 3: the DBN bound's terms
# (blocks of 512 rows, vectors x samples: cyrbm.bounds.BLOCK_ROWS, so the same bits)
cdef int dbn_bound_terms(const floating **W, const floating **vbias,
                         const floating **hbias, const Py_ssize_t *sizes, Py_ssize_t n_layers,
                         const uint8_t *v, Py_ssize_t n, Py_ssize_t samples,
                         cyrbm_rng *streams, double *lpv, double *lrest, double *lq,
                         double *ent, int n_threads) noexcept nogil:
    return _dbn.bound_terms_raw(W, vbias, hbias, sizes, n_layers, v, n, samples, streams,
                                512, lpv, lrest, lq, ent, n_threads)


# ------------------------------------------------- version 4: parallel tempering
cdef int pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                   Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, Py_ssize_t n,
                   const double *temps, Py_ssize_t n_temps, int steps, cyrbm_rng *streams,
                   cyrbm_rng *swap_streams, int64_t *accepted, int n_threads) noexcept nogil:
    if _bad_sizes(n_visible, n_hidden, n) or steps < 0 or W == NULL or v == NULL \
            or streams == NULL or swap_streams == NULL:
        return -2
    return _anneal.pt_sweeps(W, vbias, hbias, n_visible, n_hidden, v, n, temps, n_temps,
                             steps, streams, swap_streams, accepted, n_threads)


cdef cyrbm_capi _table
_table.version = CYRBM_CAPI_VERSION
_table.gibbs_sweeps_f64 = <gibbs_sweeps_f64_fn> gibbs_sweeps[double]
_table.gibbs_sweeps_f32 = <gibbs_sweeps_f32_fn> gibbs_sweeps[float]
_table.log_unnormalized_f64 = <log_unnormalized_f64_fn> log_unnormalized[double]
_table.log_unnormalized_f32 = <log_unnormalized_f32_fn> log_unnormalized[float]
_table.ais_log_partition_f64 = <ais_log_partition_f64_fn> ais_log_partition[double]
_table.ais_log_partition_f32 = <ais_log_partition_f32_fn> ais_log_partition[float]
_table.exact_log_partition_f64 = <exact_log_partition_f64_fn> exact_log_partition[double]
_table.exact_log_partition_f32 = <exact_log_partition_f32_fn> exact_log_partition[float]
_table.chib_log_prob_f64 = <chib_log_prob_f64_fn> chib_log_prob[double]
_table.chib_log_prob_f32 = <chib_log_prob_f32_fn> chib_log_prob[float]
_table.dbn_bound_terms_f64 = <dbn_bound_terms_f64_fn> dbn_bound_terms[double]
_table.dbn_bound_terms_f32 = <dbn_bound_terms_f32_fn> dbn_bound_terms[float]
_table.pt_sweeps_f64 = <pt_sweeps_f64_fn> pt_sweeps[double]
_table.pt_sweeps_f32 = <pt_sweeps_f32_fn> pt_sweeps[float]

_C_API = PyCapsule_New(<void *> &_table, "cyrbm.capi._C_API", NULL)
C_API_VERSION = CYRBM_CAPI_VERSION


def make_streams(seed, Py_ssize_t n, purpose="sample"):
    """States of ``n`` random streams (a (n, 4) uint64 array) for the C/Cython kernels.

    With the default purpose these are the streams ``RBM.sample(n, seed=seed)`` uses, so
    an embedding pipeline can reproduce the Python API's answers bit for bit.
    """
    return _make_streams(seed, purpose, n)


def make_ais_streams(seed, Py_ssize_t runs):
    """States of the random streams of ``runs`` AIS runs (a (runs, 32) uint64 array) for
    ``ais_log_partition_f32/f64``: exactly those ``Annealer(runs=runs, seed=seed)`` uses,
    so the C/Cython entry gives that annealer's log weights bit for bit."""
    return ais_streams(seed, runs)


def make_chib_streams(seed, Py_ssize_t n, Py_ssize_t steps, Py_ssize_t repeats=1):
    """States of the n * repeats random streams (a (n * repeats, 4) uint64 array) of
    ``chib_log_prob_f32/f64``: exactly those ``cyrbm.chib.chib_log_prob(dbn, v, log_Z,
    steps=steps, repeats=repeats, seed=seed)`` uses for n test vectors."""
    return chib_streams(seed, n * repeats, steps)
def make_bound_streams(seed, Py_ssize_t n):
    """States of the ``n`` per-vector streams (a (n, 4) uint64 array) of
    ``dbn_bound_terms_f32/f64``: those ``BoundEstimator(..., seed=seed)`` draws Q with."""
    return bound_streams(seed, n)


def make_pt_streams(seed, Py_ssize_t n, Py_ssize_t n_temps):
    """(streams, swap_streams) for ``pt_sweeps_f32/f64`` on ``n`` ladders of ``n_temps``
    chains: (n n_temps, 4) and (n, 4) uint64 arrays, exactly those
    ``RBM.sample(n, seed=seed, sampler="pt", temperatures=...)`` uses, so the entry gives
    its samples bit for bit."""
    return sample_streams(seed, n * n_temps), pt_swap_streams(seed, n)


#: Largest smaller layer ``exact_log_partition_f32/f64`` enumerate (else they return -2);
#: the default limit of ``cyrbm.exact_log_partition``.
EXACT_MAX_UNITS = CYRBM_EXACT_MAX_UNITS
