"""The C API's version 6 (issue 35): the SRBM's Gibbs sampling and AIS, and ratio AIS
between two Gaussian RBMs and between two SRBMs.  A downstream C extension built against
cyrbm/cyrbm.h gives the Python API's answers bit for bit (SRBM.sample,
Annealer.log_partition, Annealer.log_ratio with exact starts), for float64 and float32
parameters and one or two threads; the estimates land within their stated error of the
exact answers (small models, enumerated); bad arguments return -2.  The entries of
versions 1-5 keep their places in the table."""
import os

import numpy as np
import pytest

import cyrbm
from cyrbm import Annealer, GaussianRBM, SRBM
from cyrbm.capi import make_ratio_streams, make_srbm_ais_streams, make_streams

from _capi_client import build_client, c_source

pytest.importorskip("setuptools")

BODY = r'''
#define F32(x) ((x) ? 1 : 0)
/* srbm_gibbs(W, b, c, L, v (writable), streams (writable), D, M, n, steps, f32, nt)
 *   -> (status, h bytes) */
static PyObject *srbm_gibbs(PyObject *self, PyObject *args) {
    Py_buffer W, b, c, L, v, st;
    Py_ssize_t D, M, n; int steps, f32, nt, status;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*w*nnniii", &W, &b, &c, &L, &v, &st, &D, &M, &n,
                          &steps, &f32, &nt)) return NULL;
    uint8_t *h = PyMem_Malloc(n * M + 1);
    Py_BEGIN_ALLOW_THREADS
    if (f32)
        status = api->srbm_gibbs_sweeps_f32(W.buf, b.buf, c.buf, L.buf, D, M, v.buf, h, n,
                                            steps, st.buf, nt);
    else
        status = api->srbm_gibbs_sweeps_f64(W.buf, b.buf, c.buf, L.buf, D, M, v.buf, h, n,
                                            steps, st.buf, nt);
    Py_END_ALLOW_THREADS
    PyObject *res = Py_BuildValue("iy#", status, (const char *) h, status == 0 ? n * M : 0);
    PyMem_Free(h);
    PyBuffer_Release(&W); PyBuffer_Release(&b); PyBuffer_Release(&c); PyBuffer_Release(&L);
    PyBuffer_Release(&v); PyBuffer_Release(&st);
    return res;
}

/* srbm_ais(W, b, c, L, base (b"" for NULL), betas, streams (writable), D, M, n_betas,
 *          runs, f32, nt) -> (status, log weights bytes, ln Z_A, samples bytes) */
static PyObject *srbm_ais(PyObject *self, PyObject *args) {
    Py_buffer W, b, c, L, base, be, st;
    Py_ssize_t D, M, K, R; int f32, nt, status;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*w*nnnnii", &W, &b, &c, &L, &base, &be, &st,
                          &D, &M, &K, &R, &f32, &nt)) return NULL;
    double *lw = PyMem_Malloc(sizeof(double) * (R > 0 ? R : 1));
    uint8_t *samples = PyMem_Malloc((R > 0 ? R : 1) * D);
    const double *bp = base.len ? base.buf : NULL;
    double lzb = 0.0;
    Py_BEGIN_ALLOW_THREADS
    if (f32)
        status = api->srbm_ais_log_partition_f32(W.buf, b.buf, c.buf, L.buf, D, M, bp, be.buf,
                                                 K, R, st.buf, lw, &lzb, samples, nt);
    else
        status = api->srbm_ais_log_partition_f64(W.buf, b.buf, c.buf, L.buf, D, M, bp, be.buf,
                                                 K, R, st.buf, lw, &lzb, samples, nt);
    Py_END_ALLOW_THREADS
    PyObject *res = Py_BuildValue("iy#dy#", status, (const char *) lw,
                                  (Py_ssize_t) (status == 0 ? sizeof(double) * R : 0), lzb,
                                  (const char *) samples, (Py_ssize_t) (status == 0 ? R * D : 0));
    PyMem_Free(lw); PyMem_Free(samples);
    PyBuffer_Release(&W); PyBuffer_Release(&b); PyBuffer_Release(&c); PyBuffer_Release(&L);
    PyBuffer_Release(&base); PyBuffer_Release(&be); PyBuffer_Release(&st);
    return res;
}

/* ratio(kind, WA, bA, cA, xA, MA, WB, bB, cB, xB, MB, D, v (writable), betas,
 *       streams (writable), n_betas, runs, f32, nt) -> (status, log weights bytes);
 * kind 0: two Gaussian RBMs (x = sigma, v float64), 1: two SRBMs (x = L, v uint8) */
static PyObject *ratio(PyObject *self, PyObject *args) {
    Py_buffer WA, bA, cA, xA, WB, bB, cB, xB, v, be, st;
    Py_ssize_t MA, MB, D, K, R; int kind, f32, nt, status;
    if (!PyArg_ParseTuple(args, "iy*y*y*y*ny*y*y*y*nnw*y*w*nnii", &kind, &WA, &bA, &cA, &xA,
                          &MA, &WB, &bB, &cB, &xB, &MB, &D, &v, &be, &st, &K, &R, &f32, &nt))
        return NULL;
    double *lw = PyMem_Malloc(sizeof(double) * (R > 0 ? R : 1));
    Py_BEGIN_ALLOW_THREADS
    if (kind == 0 && f32)
        status = api->gauss_ratio_ais_f32(WA.buf, bA.buf, cA.buf, xA.buf, MA, WB.buf, bB.buf,
                                          cB.buf, xB.buf, MB, D, v.buf, be.buf, K, R, st.buf,
                                          lw, nt);
    else if (kind == 0)
        status = api->gauss_ratio_ais_f64(WA.buf, bA.buf, cA.buf, xA.buf, MA, WB.buf, bB.buf,
                                          cB.buf, xB.buf, MB, D, v.buf, be.buf, K, R, st.buf,
                                          lw, nt);
    else if (f32)
        status = api->srbm_ratio_ais_f32(WA.buf, bA.buf, cA.buf, xA.buf, MA, WB.buf, bB.buf,
                                         cB.buf, xB.buf, MB, D, v.buf, be.buf, K, R, st.buf,
                                         lw, nt);
    else
        status = api->srbm_ratio_ais_f64(WA.buf, bA.buf, cA.buf, xA.buf, MA, WB.buf, bB.buf,
                                         cB.buf, xB.buf, MB, D, v.buf, be.buf, K, R, st.buf,
                                         lw, nt);
    Py_END_ALLOW_THREADS
    PyObject *res = Py_BuildValue("iy#", status, (const char *) lw,
                                  (Py_ssize_t) (status == 0 ? sizeof(double) * R : 0));
    PyMem_Free(lw);
    PyBuffer_Release(&WA); PyBuffer_Release(&bA); PyBuffer_Release(&cA); PyBuffer_Release(&xA);
    PyBuffer_Release(&WB); PyBuffer_Release(&bB); PyBuffer_Release(&cB); PyBuffer_Release(&xB);
    PyBuffer_Release(&v); PyBuffer_Release(&be); PyBuffer_Release(&st);
    return res;
}
'''

BETAS = np.concatenate([np.linspace(0.0, 0.5, 60, endpoint=False), np.linspace(0.5, 1.0, 141)])
D = 6


@pytest.fixture(scope="module")
def v6(tmp_path_factory):
    yield from build_client(tmp_path_factory, "capi_v6",
                            c_source("capi_v6", BODY, ("srbm_gibbs", "srbm_ais", "ratio")))


def srbm_of(dtype, M=4, seed=3, scale=0.5):
    rng = np.random.default_rng(seed)
    L = scale * rng.standard_normal((D, D))
    L = np.triu(L, 1) + np.triu(L, 1).T
    return SRBM(scale * rng.standard_normal((D, M)), 0.5 * rng.standard_normal(D),
                0.5 * rng.standard_normal(M), L, dtype=dtype)


def gauss_of(dtype, M=4, seed=3):
    rng = np.random.default_rng(seed)
    return GaussianRBM(0.4 * rng.standard_normal((D, M)), rng.standard_normal(D),
                       0.5 * rng.standard_normal(M), rng.uniform(0.6, 1.5, D), dtype=dtype)


def srbm_params(m):
    return m.W.tobytes(), m.vbias.tobytes(), m.hbias.tobytes(), m.L.tobytes()


def gauss_params(m):
    return m.W.tobytes(), m.vbias.tobytes(), m.hbias.tobytes(), m.sigma.tobytes()


def f32(dtype):
    return int(dtype == np.float32)


def test_version_6_appends_to_the_table():
    assert cyrbm.capi.C_API_VERSION >= 6
    header = open(os.path.join(cyrbm.get_include(), "cyrbm", "cyrbm.h")).read()
    table = header.split("typedef struct cyrbm_capi {")[1].split("}")[0]
    names = [line.split("(")[1].rstrip(")") for line in table.split("\n")
             if "CYRBM_PAIR(" in line]
    assert names[:14] == ["gibbs_sweeps", "log_unnormalized", "ais_log_partition",
                     "exact_log_partition", "chib_log_prob", "dbn_bound_terms", "pt_sweeps",
                     "gauss_gibbs_sweeps", "gauss_ais_log_partition",
                     "gauss_exact_log_partition",                   # versions 1-5, unchanged
                     "srbm_gibbs_sweeps", "srbm_ais_log_partition", "gauss_ratio_ais",
                     "srbm_ratio_ais"]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_srbm_gibbs_sweeps_match_sample(v6, dtype):
    m = srbm_of(dtype)
    init = (np.random.default_rng(1).random((9, D)) < 0.5).astype(np.uint8)
    ref = m.sample(9, steps=7, seed=4, init=init)
    assert not np.array_equal(ref, init)
    for threads in (1, 2):
        v = init.copy()
        streams = make_streams(4, 9)
        status, h = v6.srbm_gibbs(*srbm_params(m), v, streams, D, 4, 9, 7, f32(dtype), threads)
        assert status == 0
        np.testing.assert_array_equal(v, ref)
        assert len(h) == 9 * 4 and set(h) <= {0, 1}
        assert not np.array_equal(streams, make_streams(4, 9))      # advanced


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_srbm_ais_matches_the_annealer_and_exact_ln_z(v6, dtype):
    m = srbm_of(dtype)
    base = np.random.default_rng(2).normal(0.0, 0.5, D)
    res = Annealer(runs=64, schedule=BETAS, seed=9, progress=False, threads=2).log_partition(
        m, base_rate=base)
    for threads in (1, 2):
        streams = make_srbm_ais_streams(9, 64)
        status, lw, lzb, samples = v6.srbm_ais(*srbm_params(m), base.tobytes(),
                                               BETAS.tobytes(), streams, D, 4, BETAS.size,
                                               64, f32(dtype), threads)
        assert status == 0
        np.testing.assert_array_equal(np.frombuffer(lw, np.float64), res.log_weights)
        np.testing.assert_array_equal(np.frombuffer(samples, np.uint8).reshape(64, D),
                                      res.samples)
        assert lzb == res.log_Z_base
    lo, hi = res.log_Z_interval(4)
    assert lo < m.log_partition() < hi, (res.log_Z, lo, hi, m.log_partition())
    # base_rate NULL: a base of zeros, ln Z_A = M ln 2 + D ln 2
    status, lw0, lzb0, _ = v6.srbm_ais(*srbm_params(m), b"", BETAS.tobytes(),
                                       make_srbm_ais_streams(9, 8), D, 4, BETAS.size, 8,
                                       f32(dtype), 1)
    assert status == 0 and lzb0 == pytest.approx((4 + D) * np.log(2.0), abs=1e-12)
    ref0 = Annealer(runs=8, schedule=BETAS, seed=9, progress=False).log_partition(
        m, base_rate=np.zeros(D))
    np.testing.assert_array_equal(np.frombuffer(lw0, np.float64), ref0.log_weights)


def exact_starts(annealer, A):
    """The starting states of Annealer.log_ratio(A, B, start="exact")
    (cyrbm.estimators.ratio.own_log_ratio: its generator of key 3)."""
    rng = annealer._generator(3)
    return A._start_draws(rng.random(annealer.runs), rng)


@pytest.mark.parametrize("kind", ["gaussian", "srbm"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ratio_ais_matches_log_ratio_and_the_exact_ratio(v6, kind, dtype):
    make, params = (gauss_of, gauss_params) if kind == "gaussian" else (srbm_of, srbm_params)
    A, B = make(dtype, M=3, seed=5), make(dtype, M=5, seed=6)
    ann = Annealer(runs=48, schedule=BETAS, seed=11, progress=False, threads=2)
    res = ann.log_ratio(A, B, start="exact")
    starts = exact_starts(ann, A)
    for threads in (1, 2):
        v = np.array(starts, dtype=np.float64 if kind == "gaussian" else np.uint8)  # a copy
        streams = make_ratio_streams(11, 48)
        status, lw = v6.ratio(int(kind == "srbm"), *params(A), 3, *params(B), 5, D, v,
                              BETAS.tobytes(), streams, BETAS.size, 48, f32(dtype), threads)
        assert status == 0
        np.testing.assert_array_equal(np.frombuffer(lw, np.float64), res.log_weights)
        np.testing.assert_array_equal(v, res.samples)               # the final states
    exact = B.log_partition() - A.log_partition()
    lo, hi = res.log_ratio_interval(4)
    assert lo < exact < hi, (res.log_ratio, lo, hi, exact)


def test_bad_arguments_return_minus_2(v6):
    m = srbm_of(np.float64)
    v = np.zeros((2, D), dtype=np.uint8)
    assert v6.srbm_gibbs(*srbm_params(m), v, make_streams(0, 2), D, 4, 2, -1, 0, 1)[0] == -2
    assert v6.srbm_gibbs(*srbm_params(m), v, make_streams(0, 2), 0, 4, 2, 1, 0, 1)[0] == -2
    for betas in (np.array([0.0, 0.5, 0.4, 1.0]), np.array([0.1, 1.0]), np.array([0.0])):
        assert v6.srbm_ais(*srbm_params(m), b"", betas.tobytes(), make_srbm_ais_streams(0, 2),
                           D, 4, betas.size, 2, 0, 1)[0] == -2
    nan_base = np.full(D, np.nan)
    assert v6.srbm_ais(*srbm_params(m), nan_base.tobytes(), BETAS.tobytes(),
                       make_srbm_ais_streams(0, 2), D, 4, BETAS.size, 2, 0, 1)[0] == -2
    g = gauss_of(np.float64)
    bad = GaussianRBM(g.W, g.vbias, g.hbias, g.sigma)
    bad.sigma = bad.sigma.copy()
    bad.sigma[1] = -1.0
    x = np.zeros((2, D))
    assert v6.ratio(0, *gauss_params(g), 4, *gauss_params(bad), 4, D, x, BETAS.tobytes(),
                    make_ratio_streams(0, 2), BETAS.size, 2, 0, 1)[0] == -2
    assert v6.ratio(1, *srbm_params(m), 4, *srbm_params(m), 4, D, v, BETAS[:-1].tobytes(),
                    make_ratio_streams(0, 2), BETAS.size - 1, 2, 0, 1)[0] == -2
    assert v6.ratio(1, *srbm_params(m), 4, *srbm_params(m), 4, D, v, BETAS.tobytes(),
                    make_ratio_streams(0, 2), BETAS.size, 0, 0, 1)[0] == -2
