"""The C API's version 5 (issue 22): the Gaussian RBM's block Gibbs sampling, AIS from
independent Gaussians and exact ln Z.  A downstream C extension built against
cyrbm/cyrbm.h gives the Python API's answers bit for bit (GaussianRBM.sample,
Annealer.log_partition, GaussianRBM.log_partition), for float64 and float32 parameters
and one or two threads; bad arguments return -2.  A tiny model (D = 5, M = 4)."""
import os

import numpy as np
import pytest

import cyrbm
from cyrbm import Annealer, GaussianRBM
from cyrbm.capi import make_gauss_ais_streams, make_streams

from _capi_client import build_client, c_source
from _reference import all_states, logsumexp

pytest.importorskip("setuptools")

BODY = r'''
/* gibbs(W, b, c, s, v (writable), streams (writable), D, M, n, steps, f32, nt)
 *   -> (status, h bytes) */
static PyObject *gibbs(PyObject *self, PyObject *args) {
    Py_buffer W, b, c, s, v, st;
    Py_ssize_t D, M, n; int steps, f32, nt, status;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*w*nnniii", &W, &b, &c, &s, &v, &st, &D, &M, &n,
                          &steps, &f32, &nt)) return NULL;
    uint8_t *h = PyMem_Malloc(n * M + 1);
    Py_BEGIN_ALLOW_THREADS
    if (f32)
        status = api->gauss_gibbs_sweeps_f32(W.buf, b.buf, c.buf, s.buf, D, M, v.buf, h, n,
                                             steps, st.buf, nt);
    else
        status = api->gauss_gibbs_sweeps_f64(W.buf, b.buf, c.buf, s.buf, D, M, v.buf, h, n,
                                             steps, st.buf, nt);
    Py_END_ALLOW_THREADS
    PyObject *res = Py_BuildValue("iy#", status, (const char *) h, status == 0 ? n * M : 0);
    PyMem_Free(h);
    PyBuffer_Release(&W); PyBuffer_Release(&b); PyBuffer_Release(&c); PyBuffer_Release(&s);
    PyBuffer_Release(&v); PyBuffer_Release(&st);
    return res;
}

/* ais(W, b, c, s, mu, sd, betas, streams (writable), D, M, n_betas, runs, f32, nt)
 *   -> (status, log weights bytes, ln Z_A, samples bytes) */
static PyObject *ais(PyObject *self, PyObject *args) {
    Py_buffer W, b, c, s, mu, sd, be, st;
    Py_ssize_t D, M, K, R; int f32, nt, status;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*w*nnnnii", &W, &b, &c, &s, &mu, &sd, &be, &st,
                          &D, &M, &K, &R, &f32, &nt)) return NULL;
    size_t item = f32 ? sizeof(float) : sizeof(double);
    double *lw = PyMem_Malloc(sizeof(double) * (R > 0 ? R : 1));
    char *samples = PyMem_Malloc(item * (R > 0 ? R : 1) * D);
    double lzb = 0.0;
    Py_BEGIN_ALLOW_THREADS
    if (f32)
        status = api->gauss_ais_log_partition_f32(W.buf, b.buf, c.buf, s.buf, D, M, mu.buf,
                                                  sd.buf, be.buf, K, R, st.buf, lw, &lzb,
                                                  (float *) samples, nt);
    else
        status = api->gauss_ais_log_partition_f64(W.buf, b.buf, c.buf, s.buf, D, M, mu.buf,
                                                  sd.buf, be.buf, K, R, st.buf, lw, &lzb,
                                                  (double *) samples, nt);
    Py_END_ALLOW_THREADS
    PyObject *res = Py_BuildValue("iy#dy#", status, (const char *) lw,
                                  (Py_ssize_t) (status == 0 ? sizeof(double) * R : 0), lzb,
                                  samples, (Py_ssize_t) (status == 0 ? item * R * D : 0));
    PyMem_Free(lw); PyMem_Free(samples);
    PyBuffer_Release(&W); PyBuffer_Release(&b); PyBuffer_Release(&c); PyBuffer_Release(&s);
    PyBuffer_Release(&mu); PyBuffer_Release(&sd); PyBuffer_Release(&be); PyBuffer_Release(&st);
    return res;
}

/* exact(W, b, c, s, D, M, f32, nt) -> (status, ln Z) */
static PyObject *exact(PyObject *self, PyObject *args) {
    Py_buffer W, b, c, s;
    Py_ssize_t D, M; int f32, nt, status; double lz = 0.0;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nnii", &W, &b, &c, &s, &D, &M, &f32, &nt))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    if (f32)
        status = api->gauss_exact_log_partition_f32(W.buf, b.buf, c.buf, s.buf, D, M, &lz, nt);
    else
        status = api->gauss_exact_log_partition_f64(W.buf, b.buf, c.buf, s.buf, D, M, &lz, nt);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&W); PyBuffer_Release(&b); PyBuffer_Release(&c); PyBuffer_Release(&s);
    return Py_BuildValue("id", status, lz);
}

'''

BETAS = np.concatenate([np.linspace(0.0, 0.5, 60, endpoint=False), np.linspace(0.5, 1.0, 141)])


@pytest.fixture(scope="module")
def gauss_c(tmp_path_factory):
    yield from build_client(tmp_path_factory, "gauss_c",
                            c_source("gauss_c", BODY, ("gibbs", "ais", "exact")))


def model_of(dtype, D=5, M=4, seed=3):
    rng = np.random.default_rng(seed)
    return GaussianRBM(0.6 * rng.standard_normal((D, M)), rng.standard_normal(D),
                       0.5 * rng.standard_normal(M), rng.uniform(0.6, 1.5, D), dtype=dtype)


def params(m):
    return m.W.tobytes(), m.vbias.tobytes(), m.hbias.tobytes(), m.sigma.tobytes()


def test_version_5_keeps_the_old_entries():
    assert cyrbm.capi.C_API_VERSION >= 5
    header = open(os.path.join(cyrbm.get_include(), "cyrbm", "cyrbm.h")).read()
    table = header.split("typedef struct cyrbm_capi {")[1].split("}")[0]
    names = [line.split("(")[1].rstrip(")") for line in table.split("\n")
             if "CYRBM_PAIR(" in line]
    assert names[:10] == ["gibbs_sweeps", "log_unnormalized", "ais_log_partition",
                          "exact_log_partition", "chib_log_prob", "dbn_bound_terms",
                          "pt_sweeps", "gauss_gibbs_sweeps", "gauss_ais_log_partition",
                          "gauss_exact_log_partition"]  # appended: the old layout unchanged


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gibbs_sweeps_match_sample(gauss_c, dtype):
    m = model_of(dtype)
    init = np.random.default_rng(1).standard_normal((7, 5)).astype(dtype)
    ref = m.sample(7, steps=6, seed=4, init=init)
    for threads in (1, 2):
        v = init.copy()
        streams = make_streams(4, 7)
        status, h = gauss_c.gibbs(*params(m), v, streams, 5, 4, 7, 6,
                                  int(dtype == np.float32), threads)
        assert status == 0
        np.testing.assert_array_equal(v, ref)
        assert len(h) == 7 * 4 and set(h) <= {0, 1}
        assert not np.array_equal(streams, make_streams(4, 7))      # advanced


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ais_matches_the_annealer_and_exact_ln_z(gauss_c, dtype):
    m = model_of(dtype)
    mu, sd = np.full(5, 0.3), np.full(5, 1.2)
    res = Annealer(runs=64, schedule=BETAS, seed=9, progress=False, threads=2).log_partition(
        m, base_rate=(mu, sd))
    for threads in (1, 2):
        streams = make_gauss_ais_streams(9, 64)
        status, lw, lzb, samples = gauss_c.ais(*params(m), mu.tobytes(), sd.tobytes(),
                                               BETAS.tobytes(), streams, 5, 4, BETAS.size, 64,
                                               int(dtype == np.float32), threads)
        assert status == 0
        np.testing.assert_array_equal(np.frombuffer(lw, np.float64), res.log_weights)
        np.testing.assert_array_equal(np.frombuffer(samples, dtype).reshape(64, 5),
                                      res.samples)
        assert lzb == pytest.approx(res.log_Z_base, abs=1e-12)
    # exact ln Z: the Python API's bits, and an independent sum over h with v integrated
    status, log_z = gauss_c.exact(*params(m), 5, 4, int(dtype == np.float32), 2)
    assert status == 0 and log_z == m.log_partition()
    assert gauss_c.exact(*params(m), 5, 4, int(dtype == np.float32), 1)[1] == log_z
    W, b, c, s = (np.asarray(a, np.float64) for a in (m.W, m.vbias, m.hbias, m.sigma))
    H = all_states(4).astype(np.float64)
    U = H @ W.T
    independent = (np.sum(np.log(np.sqrt(2 * np.pi) * s))
                   + logsumexp(H @ c + U @ (b / s) + 0.5 * np.sum(U * U, axis=1)))
    assert log_z == pytest.approx(independent, abs=1e-10)
    # and the AIS estimate (the same weights) lands within 3 sigma-hat of it
    lo, hi = res.log_Z_interval(3)
    assert lo < log_z < hi, (res.log_Z, lo, hi, log_z)


def test_bad_arguments_return_minus_2(gauss_c):
    m = model_of(np.float64)
    bad = GaussianRBM(m.W, m.vbias, m.hbias, m.sigma)
    bad.sigma = bad.sigma.copy()
    bad.sigma[2] = 0.0
    v = np.zeros((2, 5))
    assert gauss_c.gibbs(*params(bad), v, make_streams(0, 2), 5, 4, 2, 1, 0, 1)[0] == -2
    assert gauss_c.exact(*params(bad), 5, 4, 0, 1)[0] == -2
    mu, sd = np.zeros(5), np.ones(5)
    args = (mu.tobytes(), sd.tobytes())
    for betas in (np.array([0.0, 0.5, 0.4, 1.0]), np.array([0.1, 1.0]), np.array([0.0])):
        assert gauss_c.ais(*params(m), *args, betas.tobytes(), make_gauss_ais_streams(0, 2),
                           5, 4, betas.size, 2, 0, 1)[0] == -2
    assert gauss_c.ais(*params(m), mu.tobytes(), (-sd).tobytes(), BETAS.tobytes(),
                       make_gauss_ais_streams(0, 2), 5, 4, BETAS.size, 2, 0, 1)[0] == -2
    assert gauss_c.gibbs(*params(m), v, make_streams(0, 2), 5, 4, 2, -1, 0, 1)[0] == -2
    big = GaussianRBM(np.zeros((2, 31)), np.zeros(2), np.zeros(31))
    assert gauss_c.exact(*params(big), 2, 31, 0, 1)[0] == -2
