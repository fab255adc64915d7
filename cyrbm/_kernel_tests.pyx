# cython: language_level=3
"""Test-only hooks: cyrbm's private kernels on plain arrays, for tests/ (not public API).

Like numpy's _multiarray_tests, this extension ships with the package but nothing in
cyrbm imports it; tests check each kernel through it against slow references.
"""
import numpy as np

from libc.stdint cimport uint8_t, int32_t, uint64_t
from libc.string cimport memcpy
from cython cimport floating

from cyrbm._random cimport cyrbm_rng
from cyrbm._ckernels cimport cyrbm_padded_ld, cyrbm_rng_uniform, cyrbm_rng_next_lane
# the kernels themselves only through _gibbs (they are linked into that extension alone)
from cyrbm._gibbs cimport (aligned_buffer, active_lists, padded_product, padded_sample,
                           use_subset_tables, sigmoid_inplace, SOURCE_PADDED,
                           SOURCE_TRANSPOSE)
from cyrbm._random cimport check_streams


def product(const floating[:, ::1] S, const floating[::1] bias, const uint8_t[:, ::1] states,
             bint transposed=False, int n_threads=1, bint expit=False):
    """(bias + states @ S, whether subset tables were used), through padded_product
    (sigma of it with ``expit``).

    S is n_src x n_cols; with ``transposed`` it is given as W = S.T (n_cols x n_src) and
    read through the block-by-block transpose.
    """
    cdef Py_ssize_t n_rows = states.shape[0], n_src = states.shape[1]
    cdef Py_ssize_t n_cols = S.shape[0] if transposed else S.shape[1]
    if (S.shape[1] if transposed else S.shape[0]) != n_src or bias.shape[0] != n_cols:
        raise ValueError("shapes do not match")
    if n_rows == 0 or n_src == 0 or n_cols == 0:
        return np.tile(np.asarray(bias), (n_rows, 1)), False
    cdef Py_ssize_t f = sizeof(floating), ld = cyrbm_padded_ld(n_cols, f), i
    cdef int nt = max(1, n_threads)
    keep = []
    cdef floating *A = <floating *> aligned_buffer(keep, n_src * ld * f)
    cdef floating *b = <floating *> aligned_buffer(keep, ld * f)
    cdef floating *out = <floating *> aligned_buffer(keep, max(n_rows, 1) * ld * f)
    cdef int32_t *idx = <int32_t *> aligned_buffer(keep, n_rows * n_src * sizeof(int32_t))
    cdef int32_t *cnt = <int32_t *> aligned_buffer(keep, n_rows * sizeof(int32_t))
    cdef uint8_t *codes = <uint8_t *> aligned_buffer(keep, n_rows * ((n_src + 3) // 4))
    cdef char **panels = <char **> aligned_buffer(keep, nt * sizeof(char *))
    for i in range(nt):
        panels[i] = aligned_buffer(keep, n_src * 4 * 64)
    if not transposed:
        for i in range(n_src):
            memcpy(A + i * ld, &S[i, 0], n_cols * f)
    memcpy(b, &bias[0], n_cols * f)
    with nogil:
        active_lists(&states[0, 0], n_rows, n_src, idx, cnt, n_threads)
        padded_product(out, ld, b, A, ld, &S[0, 0], S.shape[1],
                       SOURCE_TRANSPOSE if transposed else SOURCE_PADDED, n_src, n_cols,
                       &states[0, 0], idx, cnt, codes, panels, n_rows, expit, n_threads)
    dense = use_subset_tables(cnt, n_rows, n_src)
    dt = np.float32 if floating is float else np.float64
    result = np.empty((n_rows, n_cols), dtype=dt)
    cdef floating[:, ::1] r = result
    for i in range(n_rows):
        memcpy(&r[i, 0], out + i * ld, n_cols * f)
    return result, dense


def expit(const floating[::1] x):
    """sigma(x) through sigmoid_inplace (the vectorized cyrbm_expit, scalar tail)."""
    out = np.array(x, dtype=np.float32 if floating is float else np.float64)
    cdef floating[::1] o = out
    if o.shape[0]:
        sigmoid_inplace(&o[0], o.shape[0], 1)
    return out


def bernoulli(const floating[:, ::1] P, uint64_t[:, ::1] streams, int n_threads=1):
    """(states, lists) for Bernoulli(P) rows through padded_sample; row r uses stream r
    (advanced in place).  lists[r] are the active units of row r."""
    cdef Py_ssize_t n_rows = P.shape[0], n = P.shape[1], i
    check_streams(streams, n_rows, "bernoulli: streams", at_least=True)
    cdef Py_ssize_t f = sizeof(floating), ld = cyrbm_padded_ld(n, f)
    keep = []
    cdef floating *buf = <floating *> aligned_buffer(keep, max(n_rows, 1) * ld * f)
    cdef int32_t *cnt = <int32_t *> aligned_buffer(keep, max(n_rows, 1) * sizeof(int32_t))
    states = np.zeros((n_rows, n), dtype=np.uint8)
    idx = np.zeros((n_rows, n), dtype=np.int32)
    cdef uint8_t[:, ::1] st = states
    cdef int32_t[:, ::1] ix = idx
    for i in range(n_rows):
        memcpy(buf + i * ld, &P[i, 0], n * f)
    if n_rows > 0 and n > 0:
        with nogil:
            padded_sample(buf, ld, n, n_rows, <cyrbm_rng *> &streams[0, 0], &st[0, 0],
                          &ix[0, 0], cnt, n_threads)
    return states, [idx[i, :cnt[i]].copy() for i in range(n_rows)]


def uniform(uint64_t[:, ::1] states, Py_ssize_t n):
    """``n`` uniforms in [0, 1) (cyrbm_rng_uniform) from each chain stream, advancing the
    states in place."""
    cdef Py_ssize_t c, k, n_chains = states.shape[0]
    out = np.empty((n_chains, n), dtype=np.float64)
    cdef double[:, ::1] o = out
    for c in range(n_chains):
        for k in range(n):
            o[c, k] = cyrbm_rng_uniform(<cyrbm_rng *> &states[c, 0])
    return out


def xoshiro_lanes(uint64_t[:, ::1] streams, Py_ssize_t n_draws):
    """``n_draws`` 64-bit outputs of each AIS run's 8 lanes (runs x n_draws x 8),
    advancing the states in place: the raw stream (rng.h's AIS layout)."""
    cdef Py_ssize_t R = streams.shape[0], r, k
    cdef int l
    out = np.empty((R, n_draws, 8), dtype=np.uint64)
    cdef uint64_t[:, :, ::1] o = out
    for r in range(R):
        for k in range(n_draws):
            for l in range(8):
                o[r, k, l] = cyrbm_rng_next_lane(&streams[r, 0], l)
    return out
