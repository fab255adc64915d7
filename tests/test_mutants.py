"""Tests that pin behaviours a mutation check of the suite found unpinned (issue 38, "Done
when" 7).  Each one-line mutant below changed behaviour and no test noticed; each test
here names the behaviour it pins and the mutant it kills (applied by hand, the test
seen to fail, then reverted):

(a) the Gaussian AIS base fitted with the variance instead of the standard deviation;
(b) ``SRBM.mean_field`` with the damping weights swapped (lambda <-> 1 - lambda);
(c) weight decay on an SRBM's lateral weights with the wrong sign;
(d) the harmonic-mean estimator taking the arithmetic mean of the chain's terms;
(e) the output check no longer spotting two outputs that are hard links of one file;
(f) ``sweep`` naming as best the configuration with the lowest test log-probability.
"""
import math
import os

import numpy as np
import pytest
from scipy.special import expit

from cyrbm import DBN, SRBM, Annealer, BoundEstimator, GaussianRBM, Trainer
from cyrbm.models.gaussian import gaussian_base

from _commands import one_error_line, run
from _reference import exact_distribution, exact_joint_conditionals, tiny_model


# ------------------------------------------------------------------- (a) Gaussian base
def test_gaussian_ais_base_has_the_datas_mean_and_standard_deviation():
    """AIS from independent Gaussians fitted to the data (base_rate="data"): the base's
    means and standard deviations are the data's per unit (ddof 0), and ln Z of the base
    in the AISResult is M ln 2 + sum_i ln sd_i + D ln sqrt(2 pi) with those standard
    deviations.  AIS stays unbiased with any base, so only the base itself shows a base
    fitted with the variance.  Kills mutant (a): ``data.var`` in place of ``data.std`` in
    cyrbm/models/gaussian.py's gaussian_base (the units' sd here are 0.3, 1.7 and 3.0, so
    the variance is off by factors 0.3, 1.7 and 3.0)."""
    rng = np.random.default_rng(0)
    sd_true = np.array([0.3, 1.7, 3.0])
    X = rng.normal([1.0, -2.0, 0.5], sd_true, size=(400, 3))
    model = GaussianRBM(0.1 * rng.standard_normal((3, 4)), np.zeros(3), np.zeros(4),
                        sigma=1.0, dtype=np.float64)
    mu, sd = gaussian_base(model, "data", X)
    np.testing.assert_allclose(mu, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(sd, X.std(axis=0), rtol=1e-12)
    assert np.all(np.abs(sd / sd_true - 1) < 0.15)
    res = Annealer(runs=4, schedule="linear:10", seed=0, threads=1,
                   progress=False).log_partition(model, base_rate="data", base_data=X)
    expected = 4 * math.log(2) + float(np.sum(np.log(X.std(axis=0)))) + \
        1.5 * math.log(2 * math.pi)
    assert res.log_Z_base == pytest.approx(expected, abs=1e-9)


# ------------------------------------------------------------ (b) SRBM mean-field damping
def test_srbm_mean_field_keeps_the_damping_share_of_the_old_estimate():
    """One damped mean-field step is m <- lambda m + (1 - lambda) sigma(b + W h + L m)
    (Osindero & Hinton 2008): lambda weights the old estimate.  Checked for one step and
    for ten against the update written out in NumPy, at lambda = 0.2 (the default) and
    0.7.  Both the update and its swap have the same fixed point, so only the path shows
    it.  Kills mutant (b): the weights swapped, (1 - lambda) m + lambda sigma(...), in
    SRBM.mean_field (cyrbm/models/srbm.py)."""
    rng = np.random.default_rng(1)
    D, M = 6, 4
    L = rng.normal(0, 0.8, (D, D))
    L = np.triu(L, 1) + np.triu(L, 1).T
    model = SRBM(rng.normal(0, 1, (D, M)), rng.normal(0, 0.5, D), rng.normal(0, 0.5, M), L,
                 dtype=np.float64)
    h = (rng.random((3, M)) < 0.5).astype(np.float64)
    m0 = rng.random((3, D))
    for lam in (0.2, 0.7):
        m = m0.copy()
        for steps in range(1, 11):
            m = lam * m + (1 - lam) * expit(model.vbias + h @ model.W.T + m @ model.L)
            if steps in (1, 10):
                np.testing.assert_allclose(model.mean_field(h, m0, damping=lam, steps=steps),
                                           m, rtol=1e-12, atol=1e-14)
    assert model.mean_field(h, m0, steps=1) == pytest.approx(
        0.2 * m0 + 0.8 * expit(model.vbias + h @ model.W.T + m0 @ model.L))


# ------------------------------------------------------- (c) weight decay on lateral L
def test_srbm_weight_decay_shrinks_the_lateral_weights():
    """Weight decay on an SRBM's lateral weights pulls them toward zero: the first
    update is L + eta (dL - decay L), so two runs from the same start, same seed, one
    with decay and one without, differ in L by exactly -eta decay L_start (the gradient
    dL is the same in both: it is computed before the update).  Checked for CD with the
    mean-field and the Gibbs reconstruction, one update (one batch of all the rows).
    Kills mutant (c): + decay L in srbm_cd_update (cyrbm/models/srbm.py)."""
    rng = np.random.default_rng(2)
    D, M = 6, 3
    L = rng.normal(0, 0.5, (D, D))
    L = np.triu(L, 1) + np.triu(L, 1).T
    start = SRBM(rng.normal(0, 0.3, (D, M)), np.zeros(D), np.zeros(M), L, dtype=np.float64)
    data = (rng.random((50, D)) < 0.4).astype(np.uint8)
    lr, decay = 0.05, 0.5
    for reconstruction in ("mean-field", "gibbs"):
        fits = [Trainer(M, epochs=1, batch_size=50, learning_rate=lr, momentum=0.5,
                        weight_decay=wd, seed=0, threads=1, dtype=np.float64, lateral=True,
                        reconstruction=reconstruction, monitor_size=0,
                        progress=False).fit(data, model=start.copy())
                for wd in (0.0, decay)]
        np.testing.assert_allclose(fits[1].L - fits[0].L, -lr * decay * L, rtol=1e-9,
                                   atol=1e-12)
        # and the decayed lateral weights are the smaller ones
        assert np.sum(fits[1].L ** 2) < np.sum(fits[0].L ** 2)


# ------------------------------------------------------------- (d) harmonic mean
def test_harmonic_mean_estimate_tends_to_the_exact_log_probability():
    """The harmonic-mean estimate is -ln of the mean of 1 / p(v | h) over the chain's
    states (MS09 Eq. 2): on an RBM (the chain samples p(h | v) exactly) it tends to the
    exact ln p(v) as the chain grows, since E_{p(h|v)}[1 / p(v | h)] = 1 / p(v).  On 10
    vectors of an 8 x 6 RBM with M = 4000 states each, the mean error against the exact
    ln p(v) (plus the estimator's known upward bias, var / (2 M) in relative terms,
    computed exactly) is within 4 standard errors (the delta method on the exact
    variance of 1 / p(v | h)), on both sides (here z = +0.63, 4 standard errors 0.032
    nats).  The arithmetic mean of p(v | h) tends to ln E[p(v | h)] instead, 0.39 nats
    higher on average here (z about +49).  Kills mutant (d):
    ``logmeanexp(chain)`` for ``-logmeanexp(-chain)`` in BoundEstimator.harmonic
    (cyrbm/estimators/bounds.py)."""
    model = tiny_model(8, 6, scale=1.0, seed=0)
    V, p, log_z = exact_distribution(model)
    idx = np.random.default_rng(3).choice(len(V), size=10, p=p)
    h_given_v, v_given_h = exact_joint_conditionals(model)
    M = 4000
    bias, var = np.empty(10), np.empty(10)
    for n, i in enumerate(idx):
        q, inv = h_given_v[i], 1.0 / v_given_h[:, i]
        mean = q @ inv
        rel = (q @ (inv - mean) ** 2) / mean ** 2          # var(1/p(v|h)) / E^2
        bias[n], var[n] = rel / (2 * M), rel / M
    log_p = np.log(p[idx])
    arithmetic = np.array([np.log(h_given_v[i] @ v_given_h[:, i]) for i in idx])
    res = BoundEstimator(DBN([model]), seed=5, threads=1).harmonic(V[idx], samples=M)
    err = float(np.mean(res.values - log_p - bias))
    se = math.sqrt(var.sum()) / 10
    assert abs(err) <= 4 * se, (err, se)
    # the arithmetic mean's limit is far outside that tolerance (power of the test)
    assert float(np.mean(arithmetic - log_p)) > 10 * 4 * se


# -------------------------------------------------------------- (e) hard-linked outputs
def test_two_outputs_that_are_hard_links_of_one_file_are_refused(tmp_path, capsys):
    """Two outputs of one command that are one file through a hard link (different
    names, the same device and inode) are refused before any work, in one sentence
    naming both, and the file keeps its bytes.  Kills mutant (e): the output check
    (cyrbm/_io.py's check_outputs) comparing only the outputs' resolved paths (which
    catches a symlink, not a hard link)."""
    data = tmp_path / "data.npy"
    np.save(data, (np.random.default_rng(0).random((20, 5)) < 0.5).astype(np.uint8))
    out = tmp_path / "model.npz"
    out.write_bytes(b"keep me")
    os.link(out, tmp_path / "linked.npz")
    code, _, err = run(["train", data, "-o", out, "--checkpoint", tmp_path / "linked.npz",
                        "--hidden", "3", "--epochs", "1"], capsys)
    assert code == 1
    one_error_line(err, "are the same file")
    assert "model.npz" in err and "linked.npz" in err
    assert out.read_bytes() == b"keep me"
    # a symlink is refused alike (the path check)
    os.symlink(out, tmp_path / "soft.npz")
    code, _, err = run(["train", data, "-o", out, "--checkpoint", tmp_path / "soft.npz",
                        "--hidden", "3", "--epochs", "1"], capsys)
    assert code == 1
    one_error_line(err, "are the same file")


# ------------------------------------------------------------------ (f) sweep's best
def test_sweep_names_as_best_the_highest_test_log_probability():
    """``sweep``'s best is the configuration with the highest average test
    log-probability: here three configurations (1, 4 and 12 hidden units), the highest and
    the lowest average apart by more than their 3-sigma intervals; the best named in the
    result is the row with the largest avg_log_prob, not the smallest.  Kills mutant (f):
    argmin for argmax in cyrbm/sweep.py."""
    from cyrbm import load_data
    from cyrbm.sweep import sweep
    X = load_data("digits:train")[:300]
    T = load_data("digits:test")[:100]
    res = sweep(X, T, {"n_hidden": [1, 12, 4]},
                fixed={"epochs": 3, "learning_rate": 0.1, "batch_size": 20}, seed=1,
                runs=16, schedule="linear:200")
    rows = {r["name"]: r for r in res["rows"]}
    scores = {name: r["avg_log_prob"] for name, r in rows.items()}
    top = max(scores, key=scores.get)
    assert res["best"] == top
    assert res["best"] != min(scores, key=scores.get)
    low, high = rows[min(scores, key=scores.get)], rows[top]
    assert low["avg_log_prob_3sigma_high"] < high["avg_log_prob_3sigma_low"], (low, high)
