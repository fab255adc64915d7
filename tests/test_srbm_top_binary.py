"""A binary DBN under a semi-restricted top (an SRBM on h1: what ``train_dbn(top="srbm")``
makes on binary data), measured by every estimator of a two-layer DBN but the harmonic
mean: the variational bound (SM08 Eq. 19-24), the Chib-style estimator (MS09 Figure 1)
and per-vector AIS (MS09 Sec. 5.1), on the scalar driver (cyrbm._chib_scalar.ScalarChibModel).

References are exact: ln p(v) = ln sum_h1 p(v | h1) P*(h1) - ln Z_top by enumerating h1
(checked to sum to 1 over every v), and the bound by enumerating Q's states.  Tolerances
are K = 4.5 of each vector's own Monte Carlo standard errors (the estimators are unbiased in
p(v), so their z-scores are taken in p; the bound's in its per-sample terms), with a
power check each: some vector's estimate is more than K standard errors from what a
driver that dropped the lateral term would give (the same DBN with L = 0, over the true
ln Z_top).
"""
import itertools
import math

import numpy as np
import pytest

from cyrbm import DBN, RBM, SRBM, BoundEstimator
from cyrbm.estimators.chib import ais_per_vector, chib_log_prob
from cyrbm.errors import CyrbmError
from cyrbm.estimators.gaussian_dbn import exact_log_prob, top_log_unnormalized
from _commands import one_error_line, run
from test_gaussian_dbn import z_scores as _z_and_se


def z_scores(samples, target):
    """(mean p-hat - p) / its standard error per vector, in p."""
    return _z_and_se(samples, target)[0]

#: standard errors: the z-scores of 10 repeats follow a t-distribution with heavy tails;
#: over 8 nearby data and chain seeds the largest of 12 vectors' was 4.03 (the Chib-style
#: estimator), 3.43 (AIS) and 2.97 (the bound), and the smallest power check's 6.42
K = 4.5


def lateral(n, rng, scale):
    L = np.triu(scale * rng.standard_normal((n, n)), 1)
    return L + L.T


def binary_dbn(D=10, H1=8, H2=4, seed=0, scale=0.6):
    rng = np.random.default_rng(seed)
    low = RBM(rng.normal(0, 1.0, (D, H1)), rng.normal(0, 0.5, D), rng.normal(0, 0.5, H1))
    top = SRBM(rng.normal(0, 1.0, (H1, H2)), rng.normal(0, 0.5, H1), rng.normal(0, 0.5, H2),
               lateral(H1, rng, scale))
    return low, top


def rows(D, n, seed):
    return (np.random.default_rng(seed).random((n, D)) < 0.5).astype(np.uint8)


def without_lateral(top):
    return SRBM(top.W, top.vbias, top.hbias, 0 * top.L)


def exact_without_lateral(low, top, v, log_Z):
    """ln p*(v) of the DBN with L = 0, normalised by the true ln Z_top."""
    lp, log_Z0 = exact_log_prob(low, without_lateral(top), v)
    return lp + log_Z0 - log_Z


def exact_bound(low, top, v, log_Z):
    """SM08's bound by enumerating h1: sum_h Q(h | v) [ln p(v | h) + ln P*(h) -
    ln Q(h | v)] - ln Z."""
    H1 = low.n_hidden
    h = np.array(list(itertools.product([0, 1], repeat=H1)), dtype=np.float64)
    u = h @ low.W.T + low.vbias
    lik = v @ u.T - np.sum(np.logaddexp(0.0, u), axis=1)[None, :]
    x = v @ low.W + low.hbias
    lq = x @ h.T - np.sum(np.logaddexp(0.0, x), axis=1)[:, None]
    lt = top_log_unnormalized(top, h, top.L)
    return np.sum(np.exp(lq) * (lik + lt[None, :] - lq), axis=1) - log_Z


def test_exact_probabilities_sum_to_one():
    low, top = binary_dbn()
    v = np.array(list(itertools.product([0, 1], repeat=low.n_visible)), dtype=np.uint8)
    lp, _ = exact_log_prob(low, top, v)
    assert abs(np.exp(lp).sum() - 1.0) < 1e-10
    # the lateral weights matter: the same DBN without them gives other numbers
    flat, _ = exact_log_prob(low, SRBM(top.W, top.vbias, top.hbias, 0 * top.L), v[:5])
    assert np.max(np.abs(flat - lp[:5])) > 0.1


@pytest.mark.parametrize("method", ["chib", "ais"])
def test_estimators_match_exact_and_not_a_different_model(method):
    low, top = binary_dbn()
    v = rows(low.n_visible, 12, 1)
    want, log_Z = exact_log_prob(low, top, v)
    other = exact_without_lateral(low, top, v, log_Z)
    if method == "chib":
        got = chib_log_prob([low, top], v, log_Z, steps=20, repeats=10, seed=3)
    else:
        got = ais_per_vector([low, top], v, log_Z, schedule="linear:300", runs=10, seed=3)
    assert 0 < got.mc_stderr < 0.05
    assert np.max(np.abs(z_scores(got.samples, want))) < K
    assert np.max(np.abs(z_scores(got.samples, other))) > K          # power
    # the same bits on any number of threads
    if method == "chib":
        again = chib_log_prob([low, top], v, log_Z, steps=20, repeats=10, seed=3, threads=2)
    else:
        again = ais_per_vector([low, top], v, log_Z, schedule="linear:300", runs=10, seed=3,
                               threads=2)
    np.testing.assert_array_equal(again.samples, got.samples)


@pytest.mark.parametrize("entropy", ["analytic", "sampled"])
def test_the_bound_matches_its_enumerated_value(entropy):
    low, top = binary_dbn()
    v = rows(low.n_visible, 12, 2)
    exact, log_Z = exact_log_prob(low, top, v)
    want = exact_bound(low, top, v.astype(np.float64), log_Z)
    other = exact_bound(low, without_lateral(top), v.astype(np.float64), log_Z)
    got = BoundEstimator(DBN([low, top]), log_Z=log_Z, seed=4).variational(
        v, samples=1000, entropy=entropy)
    se = got.per_sample.std(axis=1, ddof=1) / math.sqrt(got.per_sample.shape[1])
    assert np.max(np.abs(got.values - want) / se) < K
    assert np.max(np.abs(got.values - other) / se) > K               # power
    assert np.all(want <= exact + 1e-12)                              # a lower bound


def test_bound_estimator_and_command_line(tmp_path, capsys):
    """BoundEstimator's chib / ais_per_vector and ``cyrbm bound`` on a saved DBN; ln Z of
    the SRBM top by AIS when not given; the harmonic mean refused in one sentence."""
    import json
    low, top = binary_dbn()
    v = rows(low.n_visible, 8, 5)
    want, log_Z = exact_log_prob(low, top, v)
    dbn = DBN([low, top])
    est = BoundEstimator(dbn, log_Z=log_Z, seed=0)
    c = est.chib(v, steps=20, repeats=10)
    assert np.max(np.abs(z_scores(c.per_sample, want))) < K
    with pytest.raises(CyrbmError, match="harmonic-mean estimator is for binary DBNs with "
                                         "an RBM on top"):
        est.harmonic(v)
    dbn.save(tmp_path / "d.npz")
    np.save(tmp_path / "v.npy", v)
    code, out, err = run(["bound", tmp_path / "d.npz", "--data", tmp_path / "v.npy",
                          "--logz", repr(log_Z), "--method", "ais", "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert abs(res["mean"] - want.mean()) < K * res["mc_stderr"] + 1e-9
    # without --logz: the SRBM top's ln Z by AIS (its own error in the total)
    code, out, err = run(["bound", tmp_path / "d.npz", "--data", tmp_path / "v.npy",
                          "--method", "chib", "--repeats", "10", "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    # the samples' error and ln Z-hat's (not the spread over the rows: the same rows)
    assert abs(res["mean"] - want.mean()) < K * math.hypot(res["mc_stderr"],
                                                           res["log_Z_stderr"]), res
    code, out, err = run(["bound", tmp_path / "d.npz", "--data", tmp_path / "v.npy",
                          "--method", "harmonic"], capsys)
    assert code != 0
    one_error_line(err, "harmonic")
