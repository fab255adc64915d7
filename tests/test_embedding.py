"""Embedding: a downstream Cython extension (cimport) and a C extension (cyrbm/cyrbm.h)
are built in a temporary directory and must give the Python API's answers exactly."""
import importlib
import os

import numpy as np
import pytest

import cyrbm
from cyrbm.estimators.annealing import EXACT_MAX_UNITS, Annealer
from cyrbm.capi import make_ais_streams, make_streams
from _capi_client import built
from _reference import ais_streams_reference

pytest.importorskip("Cython")
pytest.importorskip("setuptools")

CYTHON_SRC = '''
# cython: language_level=3
import numpy as np
from libc.stdint cimport uint8_t, uint64_t
from cyrbm.capi cimport log_unnormalized_f64, gibbs_sweeps_f32, cyrbm_rng
from cyrbm.capi cimport ais_log_partition_f32, exact_log_partition_f64
from cyrbm.capi cimport dbn_bound_terms_f64
from libc.stdlib cimport malloc, free

def bound64(list Ws, list bs, list cs, uint8_t[:, ::1] v, Py_ssize_t M,
            uint64_t[:, ::1] streams, int n_threads):
    cdef Py_ssize_t L = len(Ws), l, n = v.shape[0]
    cdef const double **W = <const double **> malloc(3 * L * sizeof(double *))
    cdef const double **b = W + L
    cdef const double **c = W + 2 * L
    cdef Py_ssize_t *sizes = <Py_ssize_t *> malloc((L + 1) * sizeof(Py_ssize_t))
    cdef double[:, ::1] w2
    cdef double[::1] w1
    out = [np.zeros((n, M)) for _ in range(4)]
    cdef double[:, ::1] o0 = out[0], o1 = out[1], o2 = out[2], o3 = out[3]
    cdef int status
    for l in range(L):
        w2 = Ws[l]; W[l] = &w2[0, 0]; sizes[l] = w2.shape[0]; sizes[l + 1] = w2.shape[1]
        w1 = bs[l]; b[l] = &w1[0]
        w1 = cs[l]; c[l] = &w1[0]
    with nogil:
        status = dbn_bound_terms_f64(W, b, c, sizes, L, &v[0, 0], n, M,
                                     <cyrbm_rng *> &streams[0, 0], &o0[0, 0], &o1[0, 0],
                                     &o2[0, 0], &o3[0, 0], n_threads)
    free(W)
    free(sizes)
    return status, out

from cyrbm.capi cimport pt_sweeps_f32
from libc.stdint cimport int64_t

def pt32(float[:, ::1] W, float[::1] b, float[::1] a, uint8_t[:, ::1] v, double[::1] temps,
         int steps, uint64_t[:, ::1] streams, uint64_t[:, ::1] swap_streams, int n_threads):
    cdef Py_ssize_t n = v.shape[0] // temps.shape[0]
    acc = np.zeros((max(n, 1), max(temps.shape[0] - 1, 1)), dtype=np.int64)
    cdef int64_t[:, ::1] av = acc
    cdef int status
    with nogil:
        status = pt_sweeps_f32(&W[0, 0], &b[0], &a[0], W.shape[0], W.shape[1], &v[0, 0], n,
                               &temps[0], temps.shape[0], steps, <cyrbm_rng *> &streams[0, 0],
                               <cyrbm_rng *> &swap_streams[0, 0], &av[0, 0], n_threads)
    return status, acc

def logp(double[:, ::1] W, double[::1] b, double[::1] a, uint8_t[:, ::1] v):
    out = np.empty(v.shape[0])
    cdef double[::1] o = out
    cdef int status
    with nogil:
        status = log_unnormalized_f64(&W[0, 0], &b[0], &a[0], W.shape[0], W.shape[1],
                                      &v[0, 0], v.shape[0], &o[0], 2)
    assert status == 0
    return out

def sample(float[:, ::1] W, float[::1] b, float[::1] a, uint8_t[:, ::1] v, int steps,
           uint64_t[:, ::1] streams):
    h = np.empty((v.shape[0], W.shape[1]), dtype=np.uint8)
    cdef uint8_t[:, ::1] hv = h
    cdef int status
    with nogil:
        status = gibbs_sweeps_f32(&W[0, 0], &b[0], &a[0], W.shape[0], W.shape[1], &v[0, 0],
                                  &hv[0, 0], v.shape[0], steps, <cyrbm_rng *> &streams[0, 0], 1)
    assert status == 0
    return h

def ais32(float[:, ::1] W, float[::1] b, float[::1] a, base, double[::1] betas,
          uint64_t[:, ::1] streams, Py_ssize_t runs, Py_ssize_t refresh, int n_threads):
    lw = np.zeros(max(runs, 1))
    samples = np.zeros((max(runs, 1), W.shape[0]), dtype=np.uint8)
    cdef double[::1] lwv = lw
    cdef uint8_t[:, ::1] sv = samples
    cdef float[::1] bv
    cdef const float *bp = NULL
    cdef double lzb = 0.0
    cdef int status
    if base is not None:
        bv = base
        bp = &bv[0]
    with nogil:
        status = ais_log_partition_f32(&W[0, 0], &b[0], &a[0], W.shape[0], W.shape[1], bp,
                                       &betas[0], betas.shape[0], runs, &streams[0, 0],
                                       refresh, &lwv[0], &lzb, &sv[0, 0], n_threads)
    return status, lw, lzb, samples

def exact64(double[:, ::1] W, double[::1] b, double[::1] a, int n_threads):
    cdef double log_z = 0.0
    cdef int status
    with nogil:
        status = exact_log_partition_f64(&W[0, 0], &b[0], &a[0], W.shape[0], W.shape[1],
                                         &log_z, n_threads)
    return status, log_z
'''

C_SRC = r'''
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "cyrbm/cyrbm.h"

static const cyrbm_capi *api;

/* logp(W: bytes-like float64 C order, b, a, v: uint8, n_visible, n_hidden, n) -> list */
static PyObject *logp(PyObject *self, PyObject *args) {
    Py_buffer W, b, a, v;
    Py_ssize_t nv, nh, n;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nnn", &W, &b, &a, &v, &nv, &nh, &n)) return NULL;
    double *out = PyMem_Malloc(sizeof(double) * (n > 0 ? n : 1));
    int status = api->log_unnormalized_f64(W.buf, b.buf, a.buf, nv, nh, v.buf, n, out, 1);
    PyBuffer_Release(&W); PyBuffer_Release(&b); PyBuffer_Release(&a); PyBuffer_Release(&v);
    if (status != 0) { PyMem_Free(out); return PyErr_Format(PyExc_RuntimeError, "status %d", status); }
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; i < n; i++) PyList_SET_ITEM(list, i, PyFloat_FromDouble(out[i]));
    PyMem_Free(out);
    return list;
}

/* sample(W f64, b, a, v (writable uint8), streams (writable uint64 n x 4), nv, nh, n, steps) */
static PyObject *sample(PyObject *self, PyObject *args) {
    Py_buffer W, b, a, v, s;
    Py_ssize_t nv, nh, n; int steps;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*nnni", &W, &b, &a, &v, &s, &nv, &nh, &n, &steps)) return NULL;
    uint8_t *h = PyMem_Malloc(n * nh + 1);
    int status = api->gibbs_sweeps_f64(W.buf, b.buf, a.buf, nv, nh, v.buf, h, n, steps,
                                       (cyrbm_rng *) s.buf, 2);
    PyMem_Free(h);
    PyBuffer_Release(&W); PyBuffer_Release(&b); PyBuffer_Release(&a); PyBuffer_Release(&v);
    PyBuffer_Release(&s);
    if (status != 0) return PyErr_Format(PyExc_RuntimeError, "status %d", status);
    Py_RETURN_NONE;
}

/* ais(W, b, a, base or None, betas (float64), streams (writable uint64), nv, nh, runs,
 *     f32, n_threads) -> (status, log weights bytes, ln Z_A); parameters in f32 or f64 */
static PyObject *ais(PyObject *self, PyObject *args) {
    Py_buffer W, b, a, betas, s, base = {0};
    PyObject *base_obj;
    Py_ssize_t nv, nh, runs; int f32, nt, status;
    double lzb = 0.0;
    if (!PyArg_ParseTuple(args, "y*y*y*Oy*w*nnnii", &W, &b, &a, &base_obj, &betas, &s, &nv,
                          &nh, &runs, &f32, &nt)) return NULL;
    if (base_obj != Py_None && PyObject_GetBuffer(base_obj, &base, PyBUF_SIMPLE) != 0) return NULL;
    double *lw = PyMem_Malloc(sizeof(double) * (runs > 0 ? runs : 1));
    Py_ssize_t n_betas = betas.len / (Py_ssize_t) sizeof(double);
    Py_BEGIN_ALLOW_THREADS
    if (f32)
        status = api->ais_log_partition_f32(W.buf, b.buf, a.buf, nv, nh, base.buf, betas.buf,
                                            n_betas, runs, s.buf, 200, lw, &lzb, NULL, nt);
    else
        status = api->ais_log_partition_f64(W.buf, b.buf, a.buf, nv, nh, base.buf, betas.buf,
                                            n_betas, runs, s.buf, 200, lw, &lzb, NULL, nt);
    Py_END_ALLOW_THREADS
    PyObject *out = Py_BuildValue("iy#d", status, (const char *) lw,
                                  (Py_ssize_t) sizeof(double) * (status == 0 ? runs : 0), lzb);
    PyMem_Free(lw);
    if (base.obj != NULL) PyBuffer_Release(&base);
    PyBuffer_Release(&W); PyBuffer_Release(&b); PyBuffer_Release(&a); PyBuffer_Release(&betas);
    PyBuffer_Release(&s);
    return out;
}

/* exact(W, b, a, nv, nh, f32, n_threads) -> (status, ln Z) */
static PyObject *exact(PyObject *self, PyObject *args) {
    Py_buffer W, b, a;
    Py_ssize_t nv, nh; int f32, nt, status;
    double log_z = 0.0;
    if (!PyArg_ParseTuple(args, "y*y*y*nnii", &W, &b, &a, &nv, &nh, &f32, &nt)) return NULL;
    status = f32 ? api->exact_log_partition_f32(W.buf, b.buf, a.buf, nv, nh, &log_z, nt)
                 : api->exact_log_partition_f64(W.buf, b.buf, a.buf, nv, nh, &log_z, nt);
    PyBuffer_Release(&W); PyBuffer_Release(&b); PyBuffer_Release(&a);
    return Py_BuildValue("id", status, log_z);
}

static PyMethodDef methods[] = {
    {"logp", logp, METH_VARARGS, NULL}, {"sample", sample, METH_VARARGS, NULL},
    {"ais", ais, METH_VARARGS, NULL}, {"exact", exact, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "downstream_c", NULL, -1, methods};

PyMODINIT_FUNC PyInit_downstream_c(void) {
    api = cyrbm_capi_import();
    if (api == NULL) return NULL;
    return PyModule_Create(&moduledef);
}
'''

SETUP = '''
import numpy, cyrbm
from setuptools import Extension, setup
from Cython.Build import cythonize
inc = [cyrbm.get_include(), numpy.get_include()]
setup(name="downstream", ext_modules=cythonize(
    [Extension("downstream_cy", ["downstream_cy.pyx"], include_dirs=inc)],
    language_level=3, quiet=True) + [
    Extension("downstream_c", ["downstream_c.c"], include_dirs=inc)])
'''


@pytest.fixture(scope="module")
def downstream(tmp_path_factory):
    with built(tmp_path_factory, "downstream", {"downstream_cy.pyx": CYTHON_SRC,
                                                "downstream_c.c": C_SRC, "setup.py": SETUP}):
        yield importlib.import_module("downstream_cy"), importlib.import_module("downstream_c")


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    return cyrbm.RBM(0.3 * rng.standard_normal((30, 17)), rng.standard_normal(30),
                     rng.standard_normal(17), dtype=np.float64)


def test_get_include_holds_the_public_headers_only():
    inc = cyrbm.get_include()
    found = sorted(os.listdir(os.path.join(inc, "cyrbm")))
    assert found == ["cyrbm.h", "cyrbm_types.h"]


def test_cython_extension_cimports_the_kernels(downstream, model):
    cy, _ = downstream
    v = (np.random.default_rng(1).random((25, 30)) < 0.4).astype(np.uint8)
    np.testing.assert_array_equal(cy.logp(model.W, model.vbias, model.hbias, v),
                                  model.log_unnormalized(v))
    m32 = model.astype(np.float32)
    v0 = v.copy()
    cy.sample(m32.W, m32.vbias, m32.hbias, v, 7, make_streams(3, 25))
    np.testing.assert_array_equal(v, m32.sample(25, steps=7, seed=3, init=v0))


def test_c_extension_uses_the_header(downstream, model):
    _, c = downstream
    v = (np.random.default_rng(2).random((9, 30)) < 0.4).astype(np.uint8)
    got = c.logp(model.W.tobytes(), model.vbias.tobytes(), model.hbias.tobytes(), v.tobytes(),
                 30, 17, 9)
    np.testing.assert_array_equal(np.array(got), model.log_unnormalized(v))
    state = v.copy()
    streams = make_streams(5, 9)
    c.sample(model.W.tobytes(), model.vbias.tobytes(), model.hbias.tobytes(), state, streams,
             30, 17, 9, 4)
    np.testing.assert_array_equal(state, model.sample(9, steps=4, seed=5, init=v))


# --------------------------------------------------------------- version 2: ln Z
BETAS = np.concatenate([np.linspace(0.0, 0.5, 100, endpoint=False), np.linspace(0.5, 1.0, 201)])


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(4)
    model = cyrbm.RBM(0.5 * rng.standard_normal((12, 8)), rng.standard_normal(12),
                      rng.standard_normal(8), dtype=np.float64)
    return model, 0.4 * rng.standard_normal(12)


def _annealer_result(model, base, seed=11, **kw):
    kw.setdefault("threads", 2)
    return Annealer(runs=16, schedule=BETAS, seed=seed, progress=False, **kw).log_partition(
        model, base_rate=base)


def test_capi_version_and_constants():
    assert cyrbm.capi.C_API_VERSION == 7
    assert cyrbm.capi.EXACT_MAX_UNITS == EXACT_MAX_UNITS
    # the documented layout, derived from numpy's SeedSequence directly (the Annealer's
    # own streams are checked through its log weights in test_cython_ais_matches_the_annealer)
    np.testing.assert_array_equal(make_ais_streams(3, 5), ais_streams_reference(3, 5))
    np.testing.assert_array_equal(make_ais_streams(0, 1), ais_streams_reference(0, 1))


def test_cython_ais_matches_the_annealer(downstream, small):
    cy, _ = downstream
    model, base = small
    m = model.astype(np.float32)
    b32 = base.astype(np.float32)
    for base_rate, arg in ((None, None), (base, b32)):
        res = _annealer_result(m, base_rate, chunk=37)     # chunked in Python, one C call
        for threads in (1, 2):
            streams = make_ais_streams(11, 16)
            status, lw, lzb, samples = cy.ais32(m.W, m.vbias, m.hbias, arg, BETAS, streams,
                                                16, 200, threads)
            assert status == 0
            np.testing.assert_array_equal(lw, res.log_weights)
            np.testing.assert_array_equal(samples, res.samples)
            assert lzb == res.log_Z_base
            assert not np.array_equal(streams, make_ais_streams(11, 16))   # advanced
    res = _annealer_result(m, base, refresh=7)
    status, lw, _, _ = cy.ais32(m.W, m.vbias, m.hbias, b32, BETAS, make_ais_streams(11, 16),
                                16, 7, 2)
    assert status == 0
    np.testing.assert_array_equal(lw, res.log_weights)


def test_cython_ais_refuses_bad_sizes(downstream, small):
    cy, _ = downstream
    m = small[0].astype(np.float32)
    s = make_ais_streams(0, 4)

    def status(betas=BETAS, runs=4, refresh=200):
        return cy.ais32(m.W, m.vbias, m.hbias, None, np.asarray(betas, dtype=np.float64), s,
                        runs, refresh, 1)[0]

    assert status() == 0
    assert status(runs=0) == -2
    assert status(refresh=0) == -2
    assert status(betas=BETAS[1:]) == -2                  # does not start at 0
    assert status(betas=BETAS[:-1]) == -2                 # does not end at 1
    assert status(betas=[0.0, 0.5, 0.5, 1.0]) == -2       # not strictly increasing
    assert status(betas=[0.0, np.nan, 1.0]) == -2
    assert status(betas=[0.0]) == -2


def test_cython_exact_matches_the_python_api(downstream, small):
    cy, _ = downstream
    model = small[0]
    for m in (model, cyrbm.RBM(model.W.T.copy(), model.hbias, model.vbias, dtype=np.float64)):
        for threads in (1, 2):
            assert cy.exact64(m.W, m.vbias, m.hbias, threads) == (0, cyrbm.exact_log_partition(m))
    rng = np.random.default_rng(0)
    n = EXACT_MAX_UNITS + 1
    for shape in ((n + 5, n), (n, n + 5)):
        W = 0.01 * rng.standard_normal(shape)
        assert cy.exact64(W, np.zeros(shape[0]), np.zeros(shape[1]), 1)[0] == -2


def test_c_ais_and_exact_match_the_python_api(downstream, small):
    _, c = downstream
    model, base = small
    for dtype in (np.float64, np.float32):
        m = model.astype(dtype)
        f32 = int(dtype == np.float32)
        res = _annealer_result(m, base, seed=5)
        streams = make_ais_streams(5, 16)
        status, lw, lzb = c.ais(m.W.tobytes(), m.vbias.tobytes(), m.hbias.tobytes(),
                                base.astype(dtype).tobytes(), BETAS.tobytes(), streams, 12, 8,
                                16, f32, 2)
        assert status == 0
        np.testing.assert_array_equal(np.frombuffer(lw), res.log_weights)
        assert lzb == res.log_Z_base
        assert c.exact(m.W.tobytes(), m.vbias.tobytes(), m.hbias.tobytes(), 12, 8, f32, 2) == \
            (0, cyrbm.exact_log_partition(m))
    args = (model.W.tobytes(), model.vbias.tobytes(), model.hbias.tobytes(), None)
    s = make_ais_streams(0, 4)
    assert c.ais(*args, BETAS.tobytes(), s, 12, 8, 0, 0, 1)[0] == -2            # runs < 1
    assert c.ais(*args, BETAS[::-1].tobytes(), s, 12, 8, 4, 0, 1)[0] == -2      # 1 -> 0
    assert c.ais(*args, BETAS.tobytes(), s, 0, 8, 4, 0, 1)[0] == -2             # n_visible
    assert c.exact(b"", b"", b"", 0, 8, 0, 1)[0] == -2
    n = EXACT_MAX_UNITS + 1
    assert c.exact(np.zeros(n * n).tobytes(), np.zeros(n).tobytes(), np.zeros(n).tobytes(),
                   n, n, 0, 1)[0] == -2


# ------------------------------------------------------- version 3: the DBN bound
def test_cython_bound_terms_match_the_estimator(downstream):
    from cyrbm.estimators.bounds import BoundEstimator
    cy, _ = downstream
    rng = np.random.default_rng(2)
    dbn = cyrbm.DBN([cyrbm.RBM(rng.standard_normal((11, 7)), rng.standard_normal(11),
                               rng.standard_normal(7), dtype=np.float64),
                     cyrbm.RBM(rng.standard_normal((7, 5)), rng.standard_normal(7),
                               rng.standard_normal(5), dtype=np.float64)])
    v = (rng.random((300, 11)) < 0.5).astype(np.uint8)
    want = BoundEstimator(dbn, log_Z=0.0, seed=8)._terms(dbn.layers, v, 3, None)
    for threads in (1, 2):
        streams = cyrbm.capi.make_bound_streams(8, 300)
        status, got = cy.bound64([r.W for r in dbn.layers], [r.vbias for r in dbn.layers],
                                 [r.hbias for r in dbn.layers], v, 3, streams, threads)
        assert status == 0
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    status, _ = cy.bound64([dbn.layers[0].W], [dbn.layers[0].vbias], [dbn.layers[0].hbias],
                           v, 3, cyrbm.capi.make_bound_streams(8, 300), 1)
    assert status == -2                   # one layer: not a DBN bound


# --------------------------------------------------------- version 4: parallel tempering
def test_cython_pt_matches_rbm_sample(downstream, model):
    cy, _ = downstream
    m32 = model.astype(np.float32)
    temps = np.array([0.0, 0.3, 0.7, 1.0])
    n, K1 = 6, 4
    init = (np.random.default_rng(3).random((n, 30)) < 0.5).astype(np.uint8)
    v = np.ascontiguousarray(np.repeat(init, K1, axis=0))      # as RBM.sample starts it
    streams, swap_streams = cyrbm.capi.make_pt_streams(9, n, K1)
    status, acc = cy.pt32(m32.W, m32.vbias, m32.hbias, v, temps, 12, streams, swap_streams, 2)
    assert status == 0 and acc.sum() > 0
    want = m32.sample(n, steps=12, seed=9, init=init, sampler="pt", temperatures=temps)
    np.testing.assert_array_equal(v[K1 - 1::K1], want)
    bad = np.array([0.0, 0.7, 0.3, 1.0])
    assert cy.pt32(m32.W, m32.vbias, m32.hbias, v, bad, 1, streams, swap_streams, 1)[0] == -2
