"""The C API's entry of the Chib-style estimator (version 3): a downstream C extension
built against cyrbm/cyrbm.h gives cyrbm.estimators.chib.chib_log_prob's answers bit for bit."""
import numpy as np
import pytest

import cyrbm
from cyrbm.capi import make_chib_streams
from cyrbm.estimators.chib import chib_log_prob

from _capi_client import build_client, c_source
from _reference import tiny_dbn

pytest.importorskip("setuptools")

BODY = r'''
/* chib(W1, b1, c1, W2, b2, c2, v, streams (writable), D, H1, H2, n, S, R, log_Z, f32,
 *      n_threads) -> (status, out bytes) */
static PyObject *chib(PyObject *self, PyObject *args) {
    Py_buffer W1, b1, c1, W2, b2, c2, v, s;
    Py_ssize_t D, H1, H2, n, S, R; double log_z; int f32, nt, status;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*w*nnnnnndii", &W1, &b1, &c1, &W2, &b2, &c2,
                          &v, &s, &D, &H1, &H2, &n, &S, &R, &log_z, &f32, &nt)) return NULL;
    double *out = PyMem_Malloc(sizeof(double) * (n > 0 ? n : 1));
    Py_BEGIN_ALLOW_THREADS
    if (f32)
        status = api->chib_log_prob_f32(W1.buf, b1.buf, c1.buf, W2.buf, b2.buf, c2.buf, D, H1,
                                        H2, v.buf, n, S, R, log_z, s.buf, out, nt);
    else
        status = api->chib_log_prob_f64(W1.buf, b1.buf, c1.buf, W2.buf, b2.buf, c2.buf, D, H1,
                                        H2, v.buf, n, S, R, log_z, s.buf, out, nt);
    Py_END_ALLOW_THREADS
    PyObject *res = Py_BuildValue("iy#", status, (const char *) out,
                                  (Py_ssize_t) sizeof(double) * (status == 0 ? n : 0));
    PyMem_Free(out);
    PyBuffer_Release(&W1); PyBuffer_Release(&b1); PyBuffer_Release(&c1);
    PyBuffer_Release(&W2); PyBuffer_Release(&b2); PyBuffer_Release(&c2);
    PyBuffer_Release(&v); PyBuffer_Release(&s);
    return res;
}

'''


@pytest.fixture(scope="module")
def chib_c(tmp_path_factory):
    yield from build_client(tmp_path_factory, "chib_c", c_source("chib_c", BODY, ("chib",)))


def _call(mod, layers, V, S, R, log_z, seed, threads=2, dtype=np.float64):
    low, top = (m.astype(dtype) for m in layers)
    streams = make_chib_streams(seed, len(V), S, R)
    status, out = mod.chib(low.W.tobytes(), low.vbias.tobytes(), low.hbias.tobytes(),
                           top.W.tobytes(), top.vbias.tobytes(), top.hbias.tobytes(),
                           np.ascontiguousarray(V, np.uint8).tobytes(), streams,
                           low.n_visible, low.n_hidden, top.n_hidden, len(V), S, R, log_z,
                           int(dtype == np.float32), threads)
    return status, np.frombuffer(out, dtype=np.float64), streams


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_c_entry_matches_the_python_api(chib_c, dtype):
    layers = tiny_dbn((13, 9, 7), seed=3)
    V = (np.random.default_rng(0).random((6, 13)) < 0.4).astype(np.uint8)
    ref = chib_log_prob([m.astype(dtype) for m in layers], V, -1.5, steps=4, repeats=3,
                        seed=9)
    for threads in (1, 2):
        status, out, streams = _call(chib_c, layers, V, 4, 3, -1.5, 9, threads, dtype)
        assert status == 0
        np.testing.assert_array_equal(out, ref.log_probs)
        assert not np.array_equal(streams, make_chib_streams(9, 6, 4, 3))   # advanced


def test_c_entry_refuses_bad_arguments(chib_c):
    layers = tiny_dbn((13, 9, 7), seed=3)
    V = np.zeros((2, 13), np.uint8)
    assert _call(chib_c, layers, V, 0, 1, 0.0, 0)[0] == -2          # S < 1
    assert _call(chib_c, layers, V, 2, 0, 0.0, 0)[0] == -2          # R < 1
    big = [cyrbm.RBM(layers[0].W * 200, layers[0].vbias, layers[0].hbias), layers[1]]
    assert _call(chib_c, big, V, 2, 1, 0.0, 0, dtype=np.float32)[0] == -2
    assert _call(chib_c, big, V, 2, 1, 0.0, 0)[0] == 0
