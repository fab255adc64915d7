"""Embedding: a downstream Cython extension (cimport) and a C extension (cyrbm/cyrbm.h)
are built in a temporary directory and must give the Python API's answers exactly."""
import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cyrbm
from cyrbm.capi import make_streams

pytest.importorskip("Cython")
pytest.importorskip("setuptools")

CYTHON_SRC = '''
# cython: language_level=3
import numpy as np
from libc.stdint cimport uint8_t, uint64_t
from cyrbm.capi cimport log_unnormalized_f64, gibbs_sweeps_f32, cyrbm_rng

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

static PyMethodDef methods[] = {
    {"logp", logp, METH_VARARGS, NULL}, {"sample", sample, METH_VARARGS, NULL}, {NULL, NULL, 0, NULL}};
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
    d = tmp_path_factory.mktemp("downstream")
    (d / "downstream_cy.pyx").write_text(CYTHON_SRC)
    (d / "downstream_c.c").write_text(C_SRC)
    (d / "setup.py").write_text(SETUP)
    env = dict(os.environ)
    # the build must see the same cyrbm as this test run
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(cyrbm.__file__)))
    result = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=d,
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    sys.path.insert(0, str(d))
    try:
        yield importlib.import_module("downstream_cy"), importlib.import_module("downstream_c")
    finally:
        sys.path.remove(str(d))


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    return cyrbm.RBM(0.3 * rng.standard_normal((30, 17)), rng.standard_normal(30),
                     rng.standard_normal(17), dtype=np.float64)


def test_get_include_holds_the_headers():
    inc = cyrbm.get_include()
    for header in ("cyrbm.h", "rng.h", "kernels.h", "mathutil.h", "omp_compat.h"):
        assert os.path.isfile(os.path.join(inc, "cyrbm", header)), header


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
