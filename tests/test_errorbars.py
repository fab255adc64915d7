"""Every error bar cyrbm reports, tested two ways (issue 20, "Done when" 5).

1. Its formula: recomputed by hand in NumPy from the estimator's own raw outputs (the
   AIS log weights, RAISE's per-chain log weights, the bound's per-sample terms, the
   Chib repeats), to rounding.  A careless edit (ddof, m^2 for C m^2, a dropped term)
   fails here.
2. Its coverage: over many fixed seeds on models small enough to enumerate, the +-3
   sigma interval holds the truth (exact, by enumeration) in the expected share of
   seeds.  The tolerance is binomial: a correct error bar, whose standardized error
   (estimate - truth) / sigma-hat follows Student's t with the stated degrees of freedom
   (sigma-hat comes from that many samples; normal when large), fails a bound with
   probability below 1e-4.  Three checks per error bar:
   - misses of the +-3 sigma interval: at most k, k the 1 - 1e-4 binomial quantile;
   - hits of the +-1 sigma interval: inside the two-sided 1e-4 binomial range, so an
     error bar that is too wide fails too (intervals that always hold are not enough);
   - power: the +-1 sigma interval's misses (what +-3 sigma would give with sigma / 3)
     must exceed k, and the +-sqrt(10) sigma interval's hits (what +-1 sigma would give
     with sigma sqrt(10) times too large, e.g. RAISE's se divided by m^2 instead of
     C m^2 with C = 10 chains) must exceed the +-1 sigma range: the test is not vacuous.
   Estimators biased by construction (ln of an unbiased estimate is low by about
   var / 2; RAISE estimates the annealing model's p_ann(v), not p(v)) are run with
   enough runs, chains or betas that the bias is well below sigma, or against the
   quantity they are unbiased for (p_ann, computed exactly); each test says which.

The spreads over the test vectors (RAISE's ``data_se``, the bound's, the harmonic mean's
and the Chib-style estimator's ``stderr``) are covered against the expectation over
fresh test sets drawn from p(v) (issue 38, "Done when" 3).

Also: the low-ESS warning on both sides of its threshold, and the AIS/RAISE
disagreement threshold.
"""
import math

import numpy as np
import pytest
from scipy import optimize, stats

from cyrbm import DBN, BoundEstimator
from cyrbm.estimators.annealing import AISResult, Annealer, exact_log_partition, logmeanexp
from cyrbm.estimators.chib import ais_per_vector, chib_log_prob
from cyrbm.estimators.evaluation import ESS_WARN, SHARE_WARN, EvaluationResult, weight_diagnostics

from _reference import (all_states, annealing_model_distribution, dbn_exact,
                        dbn_variational_bound, exact_distribution, exact_draws,
                        exact_joint_conditionals, state_index, tiny_dbn, tiny_model)

#: A correct error bar fails one of the coverage bounds with probability below this.
FAIL_P = 1e-4
WIDE = math.sqrt(10.0)


# ----------------------------------------------------------------------------- helpers
def check_coverage(interval, truth, n, df=None, what=""):
    """Coverage of ``interval(i, k)`` (the reported interval number i at k sigma: one
    per seed, or per seed and vector) for ``truth`` (a number, or ``truth(i)``) over
    i = 0 .. n-1, with its power checks
    (see the module docstring).  ``df``: degrees of freedom of sigma-hat (None: normal)."""
    dist = stats.norm if df is None else stats.t(df)
    truth_of = truth if callable(truth) else (lambda i: truth)

    def hits(k):
        out = 0
        for i in range(n):
            lo, hi = interval(i, k)
            out += lo <= truth_of(i) <= hi
        return out

    p_miss3 = 2 * dist.sf(3.0)
    k3 = int(stats.binom.isf(FAIL_P, n, p_miss3))
    p1 = 1 - 2 * dist.sf(1.0)
    lo1, hi1 = int(stats.binom.ppf(FAIL_P, n, p1)), int(stats.binom.isf(FAIL_P, n, p1))
    h3, h1, hw = hits(3.0), hits(1.0), hits(WIDE)
    print(f"{what}: {n} intervals, +-3 sigma misses {n - h3} (at most {k3}), +-1 sigma hits "
          f"{h1} (within {lo1}..{hi1}); sigma/3 would miss {n - h1}, sigma*sqrt(10) "
          f"would hit {hw}")
    assert n - h3 <= k3, f"{what}: +-3 sigma missed the truth {n - h3} times of {n}"
    assert lo1 <= h1 <= hi1, f"{what}: +-1 sigma held the truth {h1} times of {n}"
    assert n - h1 > k3, f"{what}: power check: sigma / 3 would pass"
    assert hw > hi1, f"{what}: power check: sigma * sqrt(10) would pass"


def symmetric(mean, se, k):
    return (mean - k * se, mean + k * se)


def se_of_log_mean(log_w, axis=-1):
    """Delta-method standard error of ln mean(w): std(w, ddof=1) / sqrt(n) / mean(w)."""
    w = np.exp(log_w - np.max(log_w, axis=axis, keepdims=True))
    n = log_w.shape[axis]
    return np.std(w, axis=axis, ddof=1) / math.sqrt(n) / np.mean(w, axis=axis)


@pytest.fixture(scope="module")
def rbm():
    """An 8 x 6 RBM with its exact ln Z."""
    model = tiny_model(8, 6, scale=1.0, seed=0)
    return model, exact_log_partition(model)


@pytest.fixture(scope="module")
def dbn():
    """A 10-8-6 DBN, its exact p(v) and variational bound B(v) over all 1024 v, and the
    exact ln Z of its top RBM."""
    layers = tiny_dbn((10, 8, 6), seed=1)
    V = all_states(10)
    log_p, log_z = dbn_exact(layers, V)
    p = np.exp(log_p)
    return layers, V, log_p, p / p.sum(), dbn_variational_bound(layers, V, log_z), log_z


def draws(V, p, n, seed):
    """n exact draws from p over the rows of V, and their row indices."""
    idx = np.random.default_rng(seed).choice(len(V), size=n, p=p)
    return V[idx].astype(np.uint8), idx


# ------------------------------------------------------------------- AIS: formulas
def test_ais_error_bars_follow_eq_12_from_the_log_weights(rbm):
    """ln Z-hat, sigma-hat (SM08 Eq. 12: sample std of the weights with ddof 1, over
    sqrt(runs)), the +-k sigma intervals of ln Z and of the average log-probability,
    the ESS and the largest share, from the run's own log weights."""
    model, _ = rbm
    data = exact_draws(model, 30, 3)
    res = Annealer(runs=10, schedule="linear:20", seed=4, threads=1,
                   progress=False).log_partition(model, base_rate="data", data=data)
    w = np.exp(res.log_weights)                 # moderate here: no overflow
    R = w.size
    Z = math.exp(res.log_Z_base) * w.mean()
    sigma = math.exp(res.log_Z_base) * w.std(ddof=1) / math.sqrt(R)
    assert res.log_Z == pytest.approx(math.log(Z), abs=1e-12)
    assert res.log_sigma == pytest.approx(math.log(sigma), abs=1e-12)
    mean_lp = float(np.mean(model.log_unnormalized(data)))
    for k in (1.0, 3.0):
        lo, hi = res.log_Z_interval(k)
        want_lo = math.log(Z - k * sigma) if Z > k * sigma else -math.inf
        assert (lo, hi) == pytest.approx((want_lo, math.log(Z + k * sigma)), abs=1e-12)
        alo, ahi = res.avg_log_prob_interval(k)
        assert (alo, ahi) == pytest.approx((mean_lp - math.log(Z + k * sigma),
                                            mean_lp - want_lo), abs=1e-10)
    assert res.avg_log_prob == pytest.approx(mean_lp - math.log(Z), abs=1e-10)
    assert res.ess == pytest.approx(w.sum() ** 2 / (w * w).sum(), rel=1e-12)
    assert res.max_weight_share == pytest.approx(w.max() / w.sum(), rel=1e-12)
    d = res.to_dict()
    assert d["log_sigma"] == pytest.approx(math.log(sigma), abs=1e-12)
    assert d["log_Z_3sigma_interval"][1] == pytest.approx(math.log(Z + 3 * sigma), abs=1e-12)


def test_ratio_error_bars_follow_eq_12_from_the_log_weights():
    """ln(Z_B / Z_A)-hat, its sigma-hat and intervals, and the average of
    ln p_B(v) - ln p_A(v) with its interval, from the ratio run's log weights."""
    A, B = tiny_model(8, 4, seed=3), tiny_model(8, 6, seed=4)
    data = exact_draws(B, 20, 5)
    res = Annealer(runs=12, schedule="linear:30", seed=2, threads=1,
                   progress=False).log_ratio(A, B, data)
    w = np.exp(res.log_weights)
    r, s = w.mean(), w.std(ddof=1) / math.sqrt(w.size)
    assert res.log_ratio == pytest.approx(math.log(r), abs=1e-12)
    assert res.log_sigma_ratio == pytest.approx(math.log(s), abs=1e-12)
    diff = float(np.mean(B.log_unnormalized(data) - A.log_unnormalized(data)))
    for k in (1.0, 3.0):
        want_lo = math.log(r - k * s) if r > k * s else -math.inf
        assert res.log_ratio_interval(k) == pytest.approx((want_lo, math.log(r + k * s)),
                                                          abs=1e-12)
        assert res.avg_log_prob_interval(k) == pytest.approx(
            (diff - math.log(r + k * s), diff - want_lo), abs=1e-10)
    assert res.avg_log_prob == pytest.approx(diff - math.log(r), abs=1e-10)


# --------------------------------------------------------------- AIS: coverage
def test_ais_log_z_intervals_cover_the_exact_value(rbm):
    """ln(Z-hat +- k sigma-hat) against the exact ln Z over 200 seeds (50 runs, 50
    betas; df 49).  The interval is exactly |Z-hat - Z| <= k sigma-hat, and Z-hat is
    unbiased, so no bias correction is needed.  The average log-probability's interval
    is the same interval moved by mean ln p*(v): it holds its truth on the same seeds."""
    model, log_z = rbm
    data = exact_draws(model, 10, 7)
    mean_lp = float(np.mean(model.log_unnormalized(data)))
    res = [Annealer(runs=50, schedule="linear:50", seed=s, threads=1,
                    progress=False).log_partition(model, data=data) for s in range(200)]
    check_coverage(lambda i, k: res[i].log_Z_interval(k), log_z, len(res), df=49,
                   what="AIS ln Z")
    for r in res:
        for k in (1.0, 3.0):
            lo, hi = r.log_Z_interval(k)
            alo, ahi = r.avg_log_prob_interval(k)
            assert (lo <= log_z <= hi) == (alo <= mean_lp - log_z <= ahi)


def test_ratio_intervals_cover_the_exact_ratio():
    """ln(r-hat +- k sigma-hat) of ratio AIS from an 8 x 4 RBM to an 8 x 6 one (exact
    starting states) against the exact ln Z_B - ln Z_A, over 200 seeds (50 runs; df 49)."""
    A, B = tiny_model(8, 4, seed=3), tiny_model(8, 6, seed=4)
    truth = exact_log_partition(B) - exact_log_partition(A)
    res = [Annealer(runs=50, schedule="linear:50", seed=s, threads=1,
                    progress=False).log_ratio(A, B) for s in range(200)]
    assert all(r.extra["start"] == "exact" for r in res)
    check_coverage(lambda i, k: res[i].log_ratio_interval(k), truth, len(res), df=49,
                   what="AIS ln(Z_B/Z_A)")


# ------------------------------------------------------------------ RAISE: formulas
@pytest.fixture(scope="module")
def sandwich(rbm):
    """The sandwich on 10 exact draws of the 8 x 6 RBM from a uniform base rate, 50
    betas, 50 forward runs and 40 reverse chains per vector, for seeds 0..119; with the
    exact targets: mean ln p(v) for AIS, mean ln p_ann(v) for RAISE (the annealing
    model's probability, which RAISE's weights are unbiased for)."""
    model, log_z = rbm
    V = exact_draws(model, 10, 1)
    bA = np.zeros(8)
    betas = np.linspace(0.0, 1.0, 50)
    p_ann = annealing_model_distribution(model, bA, betas)
    truth_raise = float(np.mean(np.log(p_ann[[state_index(v) for v in V]])))
    truth_ais = float(np.mean(model.log_unnormalized(V))) - log_z
    res = [Annealer(runs=50, schedule=betas, seed=s, threads=1, progress=False).evaluate(
        model, V, base_rate=bA, chains=40) for s in range(120)]
    return res, truth_ais, truth_raise


def test_raise_and_gap_standard_errors_follow_their_formulas(sandwich):
    """raise_se = sqrt(sum_n var(w_n) / (C m_n^2)) / N (the delta method per vector,
    then the mean of N independent vectors); the interval is +-k of it; data_se is the
    spread of the per-vector estimates; ais_se = sigma-hat / Z-hat; gap_se =
    sqrt(ais_se^2 + raise_se^2) (independent runs); _subset_gap_se over the first n."""
    res = sandwich[0][0]
    lw = res.raise_log_weights
    N, C = lw.shape
    assert C == 40 and N == 10
    w = np.exp(lw)
    m = w.mean(axis=1)
    per = np.log(m)
    np.testing.assert_allclose(res.raise_per_vector, per, rtol=0, atol=1e-12)
    se = math.sqrt(np.sum(w.var(axis=1, ddof=1) / (C * m * m))) / N
    assert res.raise_se == pytest.approx(se, rel=1e-12)
    assert res.raise_se == pytest.approx(math.sqrt(np.sum(se_of_log_mean(lw) ** 2)) / N,
                                         rel=1e-12)
    assert res.raise_interval(3) == pytest.approx(symmetric(per.mean(), se, 3), abs=1e-12)
    assert res.raise_data_se == pytest.approx(per.std(ddof=1) / math.sqrt(N), rel=1e-12)
    wa = np.exp(res.ais.log_weights)
    ais_se = wa.std(ddof=1) / math.sqrt(wa.size) / wa.mean()
    assert res.ais_se == pytest.approx(ais_se, rel=1e-12)
    assert res.gap_se == pytest.approx(math.hypot(ais_se, se), rel=1e-12)
    sub = math.sqrt(np.sum((w.var(axis=1, ddof=1) / (C * m * m))[:4])) / 4
    assert res._subset_gap_se(4) == pytest.approx(math.hypot(ais_se, sub), rel=1e-12)
    d = res.to_dict()
    assert d["raise"]["se"] == pytest.approx(se, rel=1e-12)
    assert d["gap_se"] == pytest.approx(math.hypot(ais_se, se), rel=1e-12)
    mean_lp = float(np.mean(res.log_unnormalized))
    Z, s = math.exp(res.ais.log_Z), math.exp(res.ais.log_sigma)
    assert res.ais_interval(3) == pytest.approx(
        (mean_lp - math.log(Z + 3 * s), mean_lp - math.log(Z - 3 * s)), abs=1e-10)


# ------------------------------------------------------------------ RAISE: coverage
def test_raise_interval_covers_the_annealing_models_mean_log_probability(sandwich):
    """RAISE's +-k raise_se interval against mean ln p_ann(v), exact, over 120 seeds.
    ln of the mean of C = 40 weights is low by about var / (2C) per vector; with 50
    betas that is a tenth of raise_se here (the mean z-score is about -0.1)."""
    res, _, truth = sandwich
    check_coverage(lambda i, k: res[i].raise_interval(k), truth, len(res),
                   what="RAISE mean ln p")


def test_ais_interval_of_the_sandwich_covers_the_exact_mean(sandwich):
    """AIS's mean log-probability interval (ln(Z-hat +- k sigma-hat)) against the exact
    mean ln p(v) over 120 seeds (50 runs; df 49)."""
    res, truth, _ = sandwich
    check_coverage(lambda i, k: res[i].ais_interval(k), truth, len(res), df=49,
                   what="sandwich AIS mean ln p")


def test_gap_interval_covers_the_exact_gap(sandwich):
    """gap +- k gap_se against its exact expectation mean ln p(v) - mean ln p_ann(v)
    over 120 seeds: the two estimates are independent, so their variances add."""
    res, truth_ais, truth_raise = sandwich
    check_coverage(lambda i, k: symmetric(res[i].gap, res[i].gap_se, k),
                   truth_ais - truth_raise, len(res), what="AIS - RAISE gap")


def test_simulation_bounds_and_their_errors_follow_their_formulas(rbm):
    """The bidirectional check (evaluate(simulate=n)): log_Z_upper = mean over the
    simulated states of ln p*(v) - ln mean(w) over their RAISE chains, its se the
    spread of those n values / sqrt(n); log_Z_lower = ln Z-hat of forward AIS with
    se sigma-hat / Z-hat; the gap and the bound on AIS's error from them."""
    model, log_z = rbm
    res = Annealer(runs=20, schedule="linear:20", seed=3, threads=1, progress=False).evaluate(
        model, exact_draws(model, 4, 2), base_rate=np.zeros(8), chains=5, simulate=12)
    sim, lw, lp = res.simulation, res.simulation_log_weights, res.simulation_log_unnormalized
    assert lw.shape == (12, 5) and lp.shape == (12,) and sim["source"] == "exact"
    per = lp - np.log(np.mean(np.exp(lw), axis=1))
    assert sim["log_Z_upper"] == pytest.approx(per.mean(), abs=1e-10)
    assert sim["log_Z_upper_se"] == pytest.approx(per.std(ddof=1) / math.sqrt(12), rel=1e-10)
    wa = np.exp(res.ais.log_weights)
    assert sim["log_Z_lower"] == pytest.approx(res.ais.log_Z, abs=1e-12)
    assert sim["log_Z_lower_se"] == pytest.approx(wa.std(ddof=1) / math.sqrt(20) / wa.mean(),
                                                  rel=1e-10)
    assert sim["gap"] == pytest.approx(per.mean() - res.ais.log_Z, abs=1e-10)
    assert sim["exact_log_Z"] == pytest.approx(log_z, abs=1e-10)


def test_simulation_upper_bound_interval_covers_its_target(rbm):
    """log_Z_upper +- k log_Z_upper_se over 100 seeds (30 states drawn exactly from the
    model, 20 RAISE chains each, 50 betas; df 29) against its target ln Z +
    KL(p || p_ann), exact by enumeration.  ln mean(w) of 20 chains is low, so the
    upper bound is high, by about 0.4 of its se here: the safe side for an upper
    bound, and within the tolerance."""
    model, log_z = rbm
    bA, betas = np.zeros(8), np.linspace(0.0, 1.0, 50)
    V, p, _ = exact_distribution(model)
    target = log_z + float(np.sum(p * np.log(p / annealing_model_distribution(model, bA,
                                                                               betas))))
    one = np.zeros((1, 8), np.uint8)
    sims = [Annealer(runs=20, schedule=betas, seed=s, threads=1, progress=False).evaluate(
        model, one, base_rate=bA, chains=20, simulate=30).simulation for s in range(100)]
    check_coverage(lambda i, k: symmetric(sims[i]["log_Z_upper"], sims[i]["log_Z_upper_se"],
                                          k), target, len(sims), df=29,
                   what="simulation ln Z upper bound")


# ---------------------------------------------------------- the DBN bound: formulas
def test_bound_errors_follow_their_formulas(dbn):
    """The variational bound's stderr (spread of the per-vector values over N),
    mc_stderr (within each vector: sqrt(sum_n var_n / M) / N from the M sampled terms),
    log_Z_stderr (sigma-hat / Z-hat of the AIS run), total_stderr (the two added in
    quadrature, SM08 Sec. 5.2), the intervals and the JSON, from the result's own
    per-sample terms."""
    layers, V, _, p, _, _ = dbn
    data, _ = draws(V, p, 15, 3)
    ais = Annealer(runs=10, schedule="linear:20", seed=1, threads=1,
                   progress=False).log_partition(layers[1])
    res = BoundEstimator(DBN(layers), log_Z=ais, seed=2, threads=1).variational(data, 4)
    per = res.per_sample
    assert per.shape == (15, 4)
    np.testing.assert_allclose(res.values, per.mean(axis=1), rtol=0, atol=1e-12)
    N, M = per.shape
    mc = math.sqrt(np.sum(per.var(axis=1, ddof=1) / M)) / N
    se = res.values.std(ddof=1) / math.sqrt(N)
    wa = np.exp(ais.log_weights)
    lz_se = wa.std(ddof=1) / math.sqrt(wa.size) / wa.mean()
    assert res.mc_stderr == pytest.approx(mc, rel=1e-12)
    assert res.stderr == pytest.approx(se, rel=1e-12)
    assert res.log_Z_stderr == pytest.approx(lz_se, rel=1e-12)
    assert res.total_stderr == pytest.approx(math.hypot(se, lz_se), rel=1e-12)
    assert res.interval(3) == pytest.approx(symmetric(res.mean, se, 3), abs=1e-12)
    Z, s = math.exp(ais.log_Z), math.exp(ais.log_sigma)
    assert res.ais_interval(3) == pytest.approx(
        (-(math.log(Z + 3 * s) - math.log(Z)), -(math.log(Z - 3 * s) - math.log(Z))),
        abs=1e-10)
    d = res.to_dict()
    assert (d["mc_stderr"], d["stderr"], d["total_stderr"]) == pytest.approx(
        (mc, se, math.hypot(se, lz_se)), rel=1e-12)
    given = BoundEstimator(DBN(layers), log_Z=1.5, seed=2, threads=1).variational(data, 4)
    assert given.log_Z_stderr == 0.0 and given.total_stderr == pytest.approx(given.stderr)
    h = BoundEstimator(DBN(layers), log_Z=1.5, seed=2, threads=1).harmonic(data, 20)
    assert h.stderr == pytest.approx(h.values.std(ddof=1) / math.sqrt(N), rel=1e-12)


def test_chib_and_per_vector_ais_errors_follow_their_formulas(dbn):
    """Per vector: ln p-hat = ln mean over the repeats (runs) in p, its Monte Carlo
    error the delta method std(P) / sqrt(R) / mean(P); mc_stderr = the root of their
    summed squares / N; stderr the spread of the per-vector values; the same numbers
    through BoundEstimator.chib and .ais_per_vector (from ``per_sample``)."""
    layers, V, _, p, _, log_z = dbn
    data, _ = draws(V, p, 6, 4)
    for name, est in (("chib", chib_log_prob(layers, data, log_z, steps=5, repeats=7,
                                             seed=3, threads=1)),
                      ("ais", ais_per_vector(layers, data, log_z, runs=7,
                                             schedule="linear:20", seed=3, threads=1))):
        S = est.samples
        assert S.shape == (6, 7)
        np.testing.assert_allclose(est.log_probs, logmeanexp(S, axis=1), rtol=0, atol=1e-10)
        per = se_of_log_mean(S)
        np.testing.assert_allclose(est.mc_stderrs, per, rtol=1e-12)
        assert est.mc_stderr == pytest.approx(math.sqrt(np.sum(per ** 2)) / 6, rel=1e-12)
        assert est.stderr == pytest.approx(est.log_probs.std(ddof=1) / math.sqrt(6), rel=1e-12)
        assert est.mean_interval(3) == pytest.approx(symmetric(est.mean, est.stderr, 3))
        be = BoundEstimator(DBN(layers), log_Z=log_z, seed=3, threads=1)
        res = (be.chib(data, steps=5, repeats=7) if name == "chib" else
               be.ais_per_vector(data, runs=7, schedule="linear:20"))
        np.testing.assert_array_equal(res.per_sample, S)
        assert res.mc_stderr == pytest.approx(
            math.sqrt(np.sum(se_of_log_mean(res.per_sample) ** 2)) / 6, rel=1e-12)
        assert res.stderr == pytest.approx(res.values.std(ddof=1) / math.sqrt(6), rel=1e-12)


# ---------------------------------------------------------- the DBN bound: coverage
def test_bound_monte_carlo_error_covers_the_exact_bound(dbn):
    """mean +- k mc_stderr of the variational bound (M = 5 samples of Q, ln Z exact)
    on 10 fixed vectors against the mean of their exact bounds (Q summed out), over
    200 seeds of the sampling: the bound's value is linear in the samples, unbiased."""
    layers, V, _, p, B, log_z = dbn
    data, idx = draws(V, p, 10, 0)
    truth = float(B[idx].mean())
    res = [BoundEstimator(DBN(layers), log_Z=log_z, seed=s, threads=1).variational(data, 5)
           for s in range(200)]
    check_coverage(lambda i, k: symmetric(res[i].mean, res[i].mc_stderr, k), truth,
                   len(res), what="bound mc_stderr")


def test_bound_stderr_and_total_stderr_cover_the_expected_bound(dbn):
    """stderr and total_stderr against E_v[B(v)] = sum_v p(v) B(v) (exact over all 1024
    v), each seed drawing a new test set from p(v) and new samples of Q.  With ln Z
    exact, mean +- k stderr (df N - 1 = 19 vectors); with ln Z-hat from a short AIS run
    (50 runs, 5 betas) on 1000 vectors, whose error is then of the same size as the
    spread of the vectors, mean +- k total_stderr.  Power of the ln Z term: stderr
    alone is then too narrow, its +-1 sigma interval holding the truth in fewer seeds
    than a correct error bar could (total_stderr without the term fails)."""
    layers, V, _, p, B, log_z = dbn
    truth = float(p @ B)
    res = []
    for s in range(200):
        data, _ = draws(V, p, 20, 1000 + s)
        res.append(BoundEstimator(DBN(layers), log_Z=log_z, seed=s,
                                  threads=1).variational(data, 2))
    check_coverage(lambda i, k: res[i].interval(k), truth, len(res), df=19,
                   what="bound stderr")
    tot = []
    for s in range(200):
        data, _ = draws(V, p, 1000, 5000 + s)
        ais = Annealer(runs=50, schedule="linear:5", seed=s, threads=1,
                       progress=False).log_partition(layers[1])
        tot.append(BoundEstimator(DBN(layers), log_Z=ais, seed=s,
                                  threads=1).variational(data, 1))
    check_coverage(lambda i, k: symmetric(tot[i].mean, tot[i].total_stderr, k), truth,
                   len(tot), what="bound total_stderr")
    hits = sum(abs(r.mean - truth) <= r.stderr for r in tot)
    assert hits < stats.binom.ppf(FAIL_P, len(tot), 1 - 2 * stats.norm.sf(1.0)), hits


# ----------------------------------------------------- Chib and per-vector AIS: coverage
def check_mc_coverage(res, log_p, idx, what):
    """Coverage of the mean's mc_stderr (against the mean exact ln p of the vectors
    ``idx``) and of each vector's mc_stderrs (df 19: 20 repeats or runs), over the
    estimates ``res`` of one seed each."""
    n = len(idx)
    check_coverage(lambda i, k: symmetric(res[i].mean, res[i].mc_stderr, k),
                   float(log_p[idx].mean()), len(res), what=f"{what} mc_stderr")
    check_coverage(lambda i, k: symmetric(res[i // n].log_probs[i % n],
                                          res[i // n].mc_stderrs[i % n], k),
                   lambda i: log_p[idx[i % n]], n * len(res), df=19,
                   what=f"{what} per vector")


def test_chib_monte_carlo_errors_cover_the_exact_log_probabilities(dbn):
    """The Chib-style estimator (S = 20, R = 20 repeats averaged in p) on 10 fixed
    vectors, over 60 seeds: mean +- k mc_stderr against the mean exact ln p(v), and
    each vector's +- k mc_stderrs against its exact ln p(v) (600 intervals, df 19).
    The estimate is unbiased in p; ln of the mean of 20 repeats is low by about
    var / 40, a tenth of its error here."""
    layers, V, log_p, p, _, log_z = dbn
    data, idx = draws(V, p, 10, 0)
    res = [chib_log_prob(layers, data, log_z, steps=20, repeats=20, seed=s, threads=1)
           for s in range(60)]
    check_mc_coverage(res, log_p, idx, "Chib")


def test_chib_stderr_covers_the_expected_log_probability(dbn):
    """mean +- k stderr of the Chib-style estimate on a test set of 20 draws from p(v)
    (new each seed, 100 seeds; df 19) against E_v[ln p(v)] = sum_v p(v) ln p(v): the
    spread over vectors carries both the test set's and the Monte Carlo error."""
    layers, V, log_p, p, _, log_z = dbn
    truth = float(p @ log_p)
    res = []
    for s in range(100):
        data, _ = draws(V, p, 20, 2000 + s)
        res.append(chib_log_prob(layers, data, log_z, steps=10, repeats=5, seed=s,
                                 threads=1))
    check_coverage(lambda i, k: res[i].mean_interval(k), truth, len(res), df=19,
                   what="Chib stderr")


def test_per_vector_ais_errors_cover_the_exact_log_probabilities(dbn):
    """Per-vector AIS (20 runs of 100 betas from Q) on 10 fixed vectors over 60 seeds:
    the mean's mc_stderr and each vector's mc_stderrs (df 19) against the exact ln p(v);
    E[w] = Z p(v) exactly, and ln of the mean of 20 runs is low by a small fraction of
    the error here."""
    layers, V, log_p, p, _, log_z = dbn
    data, idx = draws(V, p, 10, 0)
    res = [ais_per_vector(layers, data, log_z, runs=20, schedule="linear:100", seed=s,
                          threads=1) for s in range(60)]
    check_mc_coverage(res, log_p, idx, "per-vector AIS")


# ------------------------------------------------- data_se and harmonic stderr: coverage
def test_raise_data_se_covers_the_expected_annealing_log_probability(rbm):
    """mean +- k raise_data_se (``data_se`` of ``--json``) of RAISE on a test set of 20
    exact draws from p(v), new each seed (100 seeds; df 19), against its expectation
    E_v[ln p_ann(v)] = sum_v p(v) ln p_ann(v), exact (the annealing model's distribution
    by enumeration: 8 x 6 RBM, uniform base rate, 50 betas).  The spread of the
    per-vector estimates carries both the test set's and the chains' error.  With 10
    chains ln mean(w) is low by about var / 20 per vector: 0.009 nats on average here,
    3% of data_se (0.29).  Expected: +-3 data_se misses with probability 2 t_19.sf(3) = 0.0074, +-1
    data_se holds with probability 0.67 (binomial tolerances at 1e-4 in check_coverage);
    the power check there is this test with data_se / 3 (and sqrt(10) data_se), which
    must fail."""
    model, _ = rbm
    bA = np.zeros(8)
    betas = np.linspace(0.0, 1.0, 50)
    V, p, _ = exact_distribution(model)
    truth = float(p @ np.log(annealing_model_distribution(model, bA, betas)))
    res = [Annealer(runs=2, schedule=betas, seed=s, threads=1, progress=False).evaluate(
        model, exact_draws(model, 20, 3000 + s), base_rate=bA, chains=10)
        for s in range(100)]
    assert res[0].to_dict()["raise"]["data_se"] == res[0].raise_data_se
    check_coverage(lambda i, k: symmetric(res[i].raise_mean_log_prob, res[i].raise_data_se,
                                          k), truth, len(res), df=19, what="RAISE data_se")


def expected_harmonic_of_two(model):
    """E[harmonic-mean estimate of ln p(v)] with M = 2 samples of h, for every visible
    state v of an RBM (the estimator's chain then samples p(h | v) exactly, every
    proposal accepted): sum over pairs (h, h') of p(h | v) p(h' | v)
    (-ln((1 / p(v | h) + 1 / p(v | h')) / 2)), by enumeration."""
    h_given_v, v_given_h = exact_joint_conditionals(model)
    out = np.empty(h_given_v.shape[0])
    for i in range(out.size):
        q, inv = h_given_v[i], 1.0 / v_given_h[:, i]
        out[i] = q @ -np.log((inv[:, None] + inv[None, :]) / 2.0) @ q
    return out


def test_harmonic_stderr_covers_the_expected_harmonic_estimate(rbm):
    """mean +- k stderr of the harmonic-mean estimate (M = 2) on a test set of 20 exact
    draws from p(v), new each seed (100 seeds; df 19), against its exact expectation
    E_v E[ln p-hat_HM(v)], enumerated over v and the two states of h (the estimate is
    biased high, MS09 Eq. 2: its stderr is the error of that mean, not of ln p).
    Expected: +-3 stderr misses with probability 0.0074, +-1 stderr holds with
    probability 0.67 (binomial tolerances at 1e-4 in check_coverage); the power check
    there is this test with stderr / 3 (and sqrt(10) stderr), which must fail."""
    model, log_z = rbm
    V, p, _ = exact_distribution(model)
    expected = expected_harmonic_of_two(model)
    truth = float(p @ expected)
    assert truth > float(p @ (model.log_unnormalized(V) - log_z))   # above E ln p(v)
    res = [BoundEstimator(DBN([model]), seed=s, threads=1).harmonic(
        exact_draws(model, 20, 4000 + s), samples=2) for s in range(100)]
    check_coverage(lambda i, k: res[i].interval(k), truth, len(res), df=19,
                   what="harmonic stderr")


# ------------------------------------------------------------------ warning thresholds
def weights_with_ess(n, ess):
    """Log weights of n runs, spread linearly, whose ESS is ``ess`` (to 1e-9)."""
    x = np.linspace(0.0, 1.0, n)

    def ess_of(a):
        w = np.exp(a * x - a)
        return w.sum() ** 2 / (w * w).sum()

    a = optimize.brentq(lambda a: ess_of(a) - ess, 0.0, 500.0, xtol=1e-12)
    lw = a * x
    assert abs(ess_of(a) - ess) < 1e-6
    return lw


@pytest.mark.parametrize("n, ess, warns", [
    (100, 20.0, False),             # between the extremes: well above the threshold 10
    (100, 10.2, False), (100, 9.8, True),       # min(ESS_WARN, n / 2) = 10
    (12, 6.2, False), (12, 5.8, True),          # min(ESS_WARN, n / 2) = 6
    (100, 60.0, False), (100, 5.0, True),
])
def test_low_ess_warning_on_both_sides_of_its_threshold(n, ess, warns):
    """The warning is given when ESS < min(ESS_WARN, runs / 2) (or one weight is more
    than half the total): at an ESS of 20 in 100 runs it is not, just below 10 it is;
    with 12 runs the threshold is 6.  Checked through weight_diagnostics, AISResult and
    the evaluate JSON."""
    assert ESS_WARN == 10.0 and SHARE_WARN == 0.5
    lw = weights_with_ess(n, ess)
    got_ess, share, warning = weight_diagnostics(lw)
    assert got_ess == pytest.approx(ess, rel=1e-6)
    assert share <= SHARE_WARN
    assert (warning is not None) == warns, (n, ess, warning)
    res = AISResult(kind="partition", log_weights=lw, log_Z_base=0.0, betas=2, runs=n,
                    seconds=0.0, threads=1, dtype=np.float64, seed=0, schedule="array")
    assert res.ess == pytest.approx(ess, rel=1e-6)
    assert (res.weight_warning is not None) == warns
    assert (res.to_dict()["weight_warning"] is not None) == warns
    if warns:
        assert f"only {ess:.1f} of {n} runs" in warning
    # weights are taken relative to the largest: one more run 1000 nats below the rest
    # changes nothing (relative to the smallest, exp(1000) would overflow)
    more = weight_diagnostics(np.concatenate([lw, [lw.min() - 1000.0]]))
    assert more[0] == pytest.approx(ess, rel=1e-6) and more[1] == pytest.approx(share)
    ev = EvaluationResult(ais=res, raise_log_weights=np.zeros((2, 3)),
                          log_unnormalized=np.zeros(2), schedule="array", chains=3,
                          raise_seconds=0.0)
    assert (ev.to_dict()["ais"]["weight_warning"] is not None) == warns


@pytest.mark.parametrize("other, warns", [(0.3, True), (0.34, False)])
def test_largest_share_warning_on_both_sides_of_half(other, warns):
    """Four runs, weights 1 and three of ``other``: the ESS (about 2.8 and 3.0) is above
    min(10, 4 / 2) = 2, so only the largest share (52.6% or 49.5%) decides."""
    lw = np.log([1.0, other, other, other])
    ess, share, warning = weight_diagnostics(lw)
    assert ess > 2.0
    assert (share > 0.5) == warns
    assert (warning is not None) == warns


@pytest.mark.parametrize("z, disagrees", [(2.9, False), (3.1, True), (-2.9, False),
                                          (-3.1, True)])
def test_disagreement_threshold_is_three_combined_standard_errors(z, disagrees):
    """The AIS/RAISE note appears when |gap| > 3 gap_se, on either side, and not
    below: a sandwich built from known weights with the gap at z * gap_se."""
    rng = np.random.default_rng(0)
    lw_ais = 0.3 * rng.standard_normal(50)
    ais = AISResult(kind="partition", log_weights=lw_ais, log_Z_base=0.0, betas=2, runs=50,
                    seconds=0.0, threads=1, dtype=np.float64, seed=0, schedule="array")
    lw_raise = 0.3 * rng.standard_normal((8, 10))
    base = EvaluationResult(ais=ais, raise_log_weights=lw_raise,
                            log_unnormalized=np.zeros(8), schedule="array", chains=10,
                            raise_seconds=0.0)
    # ais_mean = mean lp - ln Z-hat; move mean lp to set the gap (se does not change)
    shift = z * base.gap_se - base.gap
    ev = EvaluationResult(ais=ais, raise_log_weights=lw_raise,
                          log_unnormalized=np.full(8, shift), schedule="array", chains=10,
                          raise_seconds=0.0)
    assert ev.gap == pytest.approx(z * ev.gap_se)
    assert (ev.disagreement is not None) == disagrees
    assert (ev.to_dict()["disagreement"] is not None) == disagrees


# ------------------------------------------------------------------ through the command
def test_command_line_error_bars_follow_their_formulas(tmp_path, rbm, capsys):
    """What `cyrbm ais --json` and `cyrbm evaluate --json` print: ln Z's sigma and
    intervals and the average log-probability's from the printed log weights; the text
    output's intervals are those numbers; evaluate's AIS se from its log weights and
    gap_se from the two se's."""
    import json
    from cyrbm.cli import main
    model, _ = rbm
    model.save(tmp_path / "m.npz")
    data = exact_draws(model, 20, 9)
    np.save(tmp_path / "d.npy", data)
    base = ["ais", str(tmp_path / "m.npz"), "--runs", "10", "--schedule", "linear:20",
            "--data", str(tmp_path / "d.npy"), "--seed", "1", "--threads", "1"]
    assert main(base + ["--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    w = np.exp(np.array(r["log_weights"]))
    Z = math.exp(r["log_Z_base"]) * w.mean()
    s = math.exp(r["log_Z_base"]) * w.std(ddof=1) / math.sqrt(w.size)
    mean_lp = float(np.mean(model.log_unnormalized(data)))
    assert r["log_sigma"] == pytest.approx(math.log(s), abs=1e-10)
    assert r["log_Z_sigma_interval"] == pytest.approx([math.log(Z - s), math.log(Z + s)],
                                                      abs=1e-10)
    lo3 = math.log(Z - 3 * s) if Z > 3 * s else None
    assert r["log_Z_3sigma_interval"][1] == pytest.approx(math.log(Z + 3 * s), abs=1e-10)
    assert r["log_Z_3sigma_interval"][0] == (None if lo3 is None else pytest.approx(lo3))
    assert r["avg_log_prob_3sigma_interval"][0] == pytest.approx(mean_lp - math.log(Z + 3 * s),
                                                                 abs=1e-8)
    assert r["ess"] == pytest.approx(w.sum() ** 2 / (w * w).sum(), rel=1e-10)
    assert main(base) == 0
    text = capsys.readouterr().out
    assert f"{math.log(Z - s):.4f}, {math.log(Z + s):.4f}" in text, text
    assert main(["evaluate", str(tmp_path / "m.npz"), "--data", str(tmp_path / "d.npy"),
                 "--runs", "10", "--chains", "4", "--schedule", "linear:20", "--seed", "1",
                 "--threads", "1", "--json"]) == 0
    e = json.loads(capsys.readouterr().out)
    wa = np.exp(np.array(e["ais"]["log_weights"]))
    assert e["ais"]["se"] == pytest.approx(wa.std(ddof=1) / math.sqrt(10) / wa.mean(),
                                           rel=1e-10)
    assert e["gap_se"] == pytest.approx(math.hypot(e["ais"]["se"], e["raise"]["se"]),
                                        rel=1e-10)
    per = np.array(e["raise"]["log_prob_per_vector"])
    assert e["raise"]["data_se"] == pytest.approx(per.std(ddof=1) / math.sqrt(20), rel=1e-10)
    assert e["raise"]["mean_log_prob_3sigma_interval"] == pytest.approx(
        [per.mean() - 3 * e["raise"]["se"], per.mean() + 3 * e["raise"]["se"]], abs=1e-10)
