"""The C API's version 7 (issue 35): parallel tempering of a Gaussian RBM and of an SRBM
(CRI10 Table I on each class's tempered family, swap counts as pt_sweeps reports them)
and ratio AIS between two binary RBMs (SM08 Sec. 3.2).

A downstream C extension built against cyrbm/cyrbm.h gives the Python API's answers bit
for bit (GaussianRBM.sample / SRBM.sample with sampler="pt", TemperedStates' swap counts,
Annealer.log_ratio with exact starts) for float64 and float32 parameters and one or two
threads; the PT marginals of tiny models match enumeration by their moments (|z| <= 4),
and a wrong swap rule or a wrong family fails the same tolerance; the ratio lands within
4 sigma of the exact one, a shifted model's does not; bad arguments return -2.  The
entries of versions 1-6 keep their places in the table."""
import os

import numpy as np
import pytest

import cyrbm
from cyrbm import Annealer, GaussianRBM, RBM, SRBM, _tempering
from cyrbm.capi import make_ais_streams, make_pt_streams
from cyrbm.models import tempering

from _capi_client import build_client, c_source
from _reference import all_states, slightly_different
from test_tempering_units import gauss_moments, srbm_probs

pytest.importorskip("setuptools")

Z = 4.0

BODY = r'''
/* pt(kind, W, b, c, x, v (writable), temps, streams (writable), swaps (writable),
 *    accepted (writable, empty for NULL), D, M, n, n_temps, steps, f32, nt) -> status;
 * kind 0: a Gaussian RBM (x = sigma, v of the float type), 1: an SRBM (x = L, v uint8) */
static PyObject *pt(PyObject *self, PyObject *args) {
    Py_buffer W, b, c, x, v, te, st, sw, acc;
    Py_ssize_t D, M, n, K1; int kind, steps, f32, nt, status;
    if (!PyArg_ParseTuple(args, "iy*y*y*y*w*y*w*w*w*nnnniii", &kind, &W, &b, &c, &x, &v,
                          &te, &st, &sw, &acc, &D, &M, &n, &K1, &steps, &f32, &nt))
        return NULL;
    int64_t *a = acc.len ? acc.buf : NULL;
    Py_BEGIN_ALLOW_THREADS
    if (kind == 0 && f32)
        status = api->gauss_pt_sweeps_f32(W.buf, b.buf, c.buf, x.buf, D, M, v.buf, n, te.buf,
                                          K1, steps, st.buf, sw.buf, a, nt);
    else if (kind == 0)
        status = api->gauss_pt_sweeps_f64(W.buf, b.buf, c.buf, x.buf, D, M, v.buf, n, te.buf,
                                          K1, steps, st.buf, sw.buf, a, nt);
    else if (f32)
        status = api->srbm_pt_sweeps_f32(W.buf, b.buf, c.buf, x.buf, D, M, v.buf, n, te.buf,
                                         K1, steps, st.buf, sw.buf, a, nt);
    else
        status = api->srbm_pt_sweeps_f64(W.buf, b.buf, c.buf, x.buf, D, M, v.buf, n, te.buf,
                                         K1, steps, st.buf, sw.buf, a, nt);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&W); PyBuffer_Release(&b); PyBuffer_Release(&c); PyBuffer_Release(&x);
    PyBuffer_Release(&v); PyBuffer_Release(&te); PyBuffer_Release(&st); PyBuffer_Release(&sw);
    PyBuffer_Release(&acc);
    return PyLong_FromLong(status);
}

/* ratio(WA, bA, cA, MA, WB, bB, cB, MB, D, v (writable), betas, streams (writable),
 *       n_betas, runs, refresh, f32, nt) -> (status, log weights bytes) */
static PyObject *ratio(PyObject *self, PyObject *args) {
    Py_buffer WA, bA, cA, WB, bB, cB, v, be, st;
    Py_ssize_t MA, MB, D, K, R, refresh; int f32, nt, status;
    if (!PyArg_ParseTuple(args, "y*y*y*ny*y*y*nnw*y*w*nnnii", &WA, &bA, &cA, &MA, &WB, &bB,
                          &cB, &MB, &D, &v, &be, &st, &K, &R, &refresh, &f32, &nt))
        return NULL;
    double *lw = PyMem_Malloc(sizeof(double) * (R > 0 ? R : 1));
    Py_BEGIN_ALLOW_THREADS
    if (f32)
        status = api->ratio_ais_f32(WA.buf, bA.buf, cA.buf, MA, WB.buf, bB.buf, cB.buf, MB, D,
                                    v.buf, be.buf, K, R, st.buf, refresh, lw, nt);
    else
        status = api->ratio_ais_f64(WA.buf, bA.buf, cA.buf, MA, WB.buf, bB.buf, cB.buf, MB, D,
                                    v.buf, be.buf, K, R, st.buf, refresh, lw, nt);
    Py_END_ALLOW_THREADS
    PyObject *res = Py_BuildValue("iy#", status, (const char *) lw,
                                  (Py_ssize_t) (status == 0 ? sizeof(double) * R : 0));
    PyMem_Free(lw);
    PyBuffer_Release(&WA); PyBuffer_Release(&bA); PyBuffer_Release(&cA);
    PyBuffer_Release(&WB); PyBuffer_Release(&bB); PyBuffer_Release(&cB);
    PyBuffer_Release(&v); PyBuffer_Release(&be); PyBuffer_Release(&st);
    return res;
}
'''

TEMPS = np.array([0.0, 0.3, 0.6, 0.8, 1.0])
BETAS = np.concatenate([np.linspace(0.0, 0.5, 60, endpoint=False), np.linspace(0.5, 1.0, 141)])


@pytest.fixture(scope="module")
def v7(tmp_path_factory):
    yield from build_client(tmp_path_factory, "capi_v7", c_source("capi_v7", BODY, ("pt", "ratio")))


def gauss_of(dtype=np.float64, D=3, M=5, seed=0, scale=1.2):
    rng = np.random.default_rng(seed)
    return GaussianRBM(scale * rng.standard_normal((D, M)), 0.5 * rng.standard_normal(D),
                       rng.standard_normal(M) - 1.0, sigma=rng.uniform(0.6, 1.2, D),
                       dtype=dtype)


def srbm_of(dtype=np.float64, D=5, M=3, seed=0, scale=1.2):
    rng = np.random.default_rng(seed)
    L = 1.5 * rng.standard_normal((D, D))
    L = np.triu(L, 1) + np.triu(L, 1).T
    return SRBM(scale * rng.standard_normal((D, M)), 0.5 * rng.standard_normal(D),
                rng.standard_normal(M), L, dtype=dtype)


def kind_of(model):
    return 0 if isinstance(model, GaussianRBM) else 1


def params(model):
    other = model.sigma if isinstance(model, GaussianRBM) else model.L
    return tuple(a.tobytes() for a in (model.W, model.vbias, model.hbias, other))


def f32(dtype):
    return int(np.dtype(dtype) == np.float32)


def run_pt(v7, model, v, temps, steps, seed, threads, accepted=True):
    """The C entry on ladders started at ``v``: (status, v, streams, swaps, accepted)."""
    n = v.shape[0] // temps.size
    streams, swaps = make_pt_streams(seed, n, temps.size)
    acc = np.zeros((n, temps.size - 1), np.int64)
    status = v7.pt(kind_of(model), *params(model), v, temps.tobytes(), streams, swaps,
                   acc if accepted else bytearray(), model.n_visible, model.n_hidden, n, temps.size,
                   steps, f32(model.dtype), threads)
    return status, v, streams, swaps, acc


def test_version_7_appends_to_the_table():
    assert cyrbm.capi.C_API_VERSION == 7
    header = open(os.path.join(cyrbm.get_include(), "cyrbm", "cyrbm.h")).read()
    table = header.split("typedef struct cyrbm_capi {")[1].split("}")[0]
    names = [line.split("(")[1].rstrip(")") for line in table.split("\n")
             if "CYRBM_PAIR(" in line]
    assert names == ["gibbs_sweeps", "log_unnormalized", "ais_log_partition",
                     "exact_log_partition", "chib_log_prob", "dbn_bound_terms", "pt_sweeps",
                     "gauss_gibbs_sweeps", "gauss_ais_log_partition",
                     "gauss_exact_log_partition", "srbm_gibbs_sweeps",
                     "srbm_ais_log_partition", "gauss_ratio_ais",
                     "srbm_ratio_ais",                              # versions 1-6, unchanged
                     "gauss_pt_sweeps", "srbm_pt_sweeps", "ratio_ais"]


# ------------------------------------------------------------- PT: the same bits
@pytest.mark.parametrize("make", [gauss_of, srbm_of])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pt_sweeps_match_sample_and_the_ladders_swap_counts(v7, make, dtype):
    model = make(dtype, D=7, M=4, seed=3, scale=0.7)
    n, steps = 21, 9
    rng = np.random.default_rng(1)
    init = (rng.standard_normal((n, 7)) if kind_of(model) == 0
            else (rng.random((n, 7)) < 0.5)).astype(model._state_dtype)
    ref = model.sample(n, steps, seed=4, init=init, sampler="pt", temperatures=TEMPS)
    start = np.ascontiguousarray(init[np.arange(n * TEMPS.size) // TEMPS.size])
    # the swap counts of training's ladders (TemperedStates) on the same start
    streams, swaps = make_pt_streams(4, n, TEMPS.size)
    ladders = tempering.TemperedStates(TEMPS, n, state={
        "chains": start, "streams": streams, "swap_streams": swaps})
    ladders.step(model, rounds=steps)
    assert 0 < ladders.accepted.sum() < ladders.accepted.size * steps
    for threads in (1, 2):
        status, v, streams, swaps, acc = run_pt(v7, model, start.copy(), TEMPS, steps, 4,
                                                threads)
        assert status == 0
        np.testing.assert_array_equal(v[TEMPS.size - 1::TEMPS.size], ref)
        np.testing.assert_array_equal(v, ladders.v)
        np.testing.assert_array_equal(acc, ladders.accepted)
        np.testing.assert_array_equal(streams, ladders.streams)
        np.testing.assert_array_equal(swaps, ladders.swap_streams)
    # accepted NULL: the same states
    status, v, *_ = run_pt(v7, model, start.copy(), TEMPS, steps, 4, 1, accepted=False)
    assert status == 0
    np.testing.assert_array_equal(v, ladders.v)


# ------------------------------------------------------- PT: against enumeration
def srbm_moments(model, beta=1.0, scale_L=True):
    """E[v] and E[v v^T] of the SRBM family at beta by enumerating v (test_tempering_units'
    srbm_probs); ``scale_L=False``: a wrong family (L unscaled)."""
    p = srbm_probs(model, beta, scale_L)
    V = all_states(model.n_visible).astype(np.float64)
    return p @ V, np.einsum("v,vi,vj->ij", p, V, V)


def z_scores(v, m1, m2):
    """z of the means and second moments of independent draws ``v``."""
    v = np.asarray(v, np.float64)
    iu = np.triu_indices(v.shape[1])
    stats = np.concatenate([v, (v[:, :, None] * v[:, None, :])[:, iu[0], iu[1]]], axis=1)
    exact = np.concatenate([m1, m2[iu]])
    sd = stats.std(0, ddof=1)
    keep = sd > 0                 # a 0/1 unit's square is the unit itself: skip exact ties
    return (stats.mean(0) - exact)[keep] / (sd[keep] / np.sqrt(v.shape[0]))


def beta_zero_start(model, n, seed):
    v = np.zeros((n * TEMPS.size, model.n_visible), dtype=model._state_dtype)
    model._sweeps(v, cyrbm._random.sample_streams(seed, n * TEMPS.size), 0, 1, 2)
    return v


@pytest.mark.parametrize("make, moments, wrong_family, wrong_swaps", [
    (gauss_of, gauss_moments, {"c_scaled": False}, 1),
    (srbm_of, srbm_moments, {"scale_L": False}, 2),
])
def test_pt_marginals_match_enumeration_and_wrong_variants_fail(v7, make, moments,
                                                                wrong_family, wrong_swaps):
    """Independent ladders through the C entry: the beta = 1 rows have the model's
    moments and the rows at beta = 0.6 those of p_0.6 (|z| <= 4).  Power: the rows at
    0.6 fail the moments of the wrong family (c or L unscaled: a wrong conditional), and
    the same driver with a wrong swap rule (1: the untempered ln p*_1 at both rungs; 2:
    the lateral term left out) fails at beta = 1."""
    model = make(seed=2)
    n, steps = 6000, 25
    status, v, *_ = run_pt(v7, model, beta_zero_start(model, n, 5), TEMPS, steps, 5, 2)
    assert status == 0
    top, mid = v[TEMPS.size - 1::TEMPS.size], v[2::TEMPS.size]
    z_top, z_mid = z_scores(top, *moments(model)), z_scores(mid, *moments(model, 0.6))
    print("max |z| at beta 1, 0.6:", np.max(np.abs(z_top)), np.max(np.abs(z_mid)))
    assert np.max(np.abs(z_top)) <= Z and np.max(np.abs(z_mid)) <= Z
    z_family = z_scores(mid, *moments(model, 0.6, **wrong_family))
    assert np.max(np.abs(z_family)) > Z, z_family
    bad = beta_zero_start(model, n, 5)
    streams, swaps = make_pt_streams(5, n, TEMPS.size)
    other = model.sigma if kind_of(model) == 0 else model.L
    run = _tempering.gauss_pt_sample if kind_of(model) == 0 else _tempering.srbm_pt_sample
    run(model.W, model.vbias, model.hbias, other, bad, TEMPS, steps, streams, swaps,
        np.zeros((n, TEMPS.size - 1), np.int64), 2, wrong_swaps)
    z_swaps = z_scores(bad[TEMPS.size - 1::TEMPS.size], *moments(model))
    print("wrong family, wrong swaps: max |z|", np.max(np.abs(z_family)),
          np.max(np.abs(z_swaps)))
    assert np.max(np.abs(z_swaps)) > Z, z_swaps


# -------------------------------------------------------------- binary ratio AIS
def rbm_of(dtype, M, seed, D=8):
    rng = np.random.default_rng(seed)
    return RBM(0.8 * rng.standard_normal((D, M)), 0.4 * rng.standard_normal(D),
               0.4 * rng.standard_normal(M), dtype=dtype)


def rbm_params(m):
    return m.W.tobytes(), m.vbias.tobytes(), m.hbias.tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ratio_ais_matches_log_ratio_and_the_exact_ratio(v7, dtype):
    A, B = rbm_of(dtype, 4, 5), rbm_of(dtype, 6, 6)
    ann = Annealer(runs=48, schedule=BETAS, seed=11, progress=False, threads=2, chunk=37)
    res = ann.log_ratio(A, B, start="exact")
    starts, _ = ann._exact_starts(A)
    for threads in (1, 2):
        v = np.array(starts, dtype=np.uint8)
        streams = make_ais_streams(11, 48)
        status, lw = v7.ratio(*rbm_params(A), 4, *rbm_params(B), 6, 8, v, BETAS.tobytes(),
                              streams, BETAS.size, 48, 200, f32(dtype), threads)
        assert status == 0
        np.testing.assert_array_equal(np.frombuffer(lw, np.float64), res.log_weights)
        np.testing.assert_array_equal(v, res.samples)               # the final states
    exact = cyrbm.exact_log_partition(B) - cyrbm.exact_log_partition(A)
    lo, hi = res.log_ratio_interval(4)
    print("ln r", res.log_ratio, "exact", exact, "4 sigma", (lo, hi))
    assert lo < exact < hi
    # power: a shifted B's exact ratio falls outside the same interval
    shifted = cyrbm.exact_log_partition(slightly_different(B, 0.3)) \
        - cyrbm.exact_log_partition(A)
    assert not lo < shifted < hi, (shifted, lo, hi)


# ------------------------------------------------------------------ bad arguments
def test_bad_arguments_return_minus_2(v7):
    g, s = gauss_of(), srbm_of()
    for model in (g, s):
        n = 2
        v = beta_zero_start(model, n, 0)
        D, M = model.n_visible, model.n_hidden

        def pt(temps=TEMPS, steps=3, D=D, n=n, K1=TEMPS.size, p=params(model)):
            streams, swaps = make_pt_streams(0, n, TEMPS.size)
            return v7.pt(kind_of(model), *p, v, np.asarray(temps, np.float64).tobytes(),
                         streams, swaps, bytearray(), D, M, n, K1, steps, 0, 1)
        assert pt() == 0
        assert pt(steps=-1) == -2
        assert pt(D=0) == -2
        assert pt(n=-1) == -2
        for temps in ([0.0, 0.6, 0.3, 0.8, 1.0], [0.0, 0.3, 0.6, 0.8, 0.9],
                      [-0.1, 0.3, 0.6, 0.8, 1.0], [0.0, 0.3, np.nan, 0.8, 1.0]):
            assert pt(temps=temps) == -2
    bad = list(params(g))
    bad[3] = np.array([1.0, -1.0, 1.0]).tobytes()                  # a negative sigma
    streams, swaps = make_pt_streams(0, 2, TEMPS.size)
    assert v7.pt(0, *bad, beta_zero_start(g, 2, 0), TEMPS.tobytes(), streams, swaps, bytearray(),
                 3, 5, 2, TEMPS.size, 3, 0, 1) == -2
    A, B = rbm_of(np.float64, 4, 5), rbm_of(np.float64, 6, 6)
    v = np.zeros((4, 8), np.uint8)

    def ratio(betas=BETAS, runs=4, refresh=200, MA=4):
        return v7.ratio(*rbm_params(A), MA, *rbm_params(B), 6, 8, v,
                        np.asarray(betas, np.float64).tobytes(), make_ais_streams(0, 4),
                        len(betas), runs, refresh, 0, 1)[0]
    assert ratio() == 0
    assert ratio(betas=BETAS[1:]) == -2                             # not from 0
    assert ratio(betas=BETAS[:-1]) == -2                            # not to 1
    assert ratio(betas=[0.0]) == -2
    assert ratio(runs=0) == -2
    assert ratio(refresh=0) == -2
    assert ratio(MA=0) == -2
