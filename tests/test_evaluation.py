"""Tests for cyrbm.estimators.evaluation: RAISE, the AIS/RAISE sandwich, the bidirectional check,
adaptive schedules, weight diagnostics and the ``cyrbm evaluate`` command.

RAISE is checked against the exact probability of the annealing model (a product of
enumerated transition matrices), with tolerances in standard errors and fixed seeds; a
deliberately wrong reverse step (the forward order: weight, then move) must fail the
same check.
"""
import json
import math

import numpy as np
import pytest

import cyrbm
from cyrbm import RBM, _anneal, _engine
from cyrbm.estimators.annealing import Annealer, ais_streams, exact_log_partition, make_schedule
from cyrbm.errors import CyrbmError
from cyrbm.estimators.evaluation import (adaptive_schedule, raise_log_weights, save_schedule,
                              weight_diagnostics)
from _reference import (annealing_model_distribution, exact_distribution,
                        ratio_annealing_model_distribution, tiny_model)


def raise_weights(model, v, bA, betas, chains, seed=1, **kw):
    return np.exp(raise_log_weights(model, v[None, :], bA, betas, chains=chains, seed=seed,
                                    **kw)[0])


def forward_order_weights(model, v, bA, betas, chains, seed=1):
    """The deliberately wrong reverse chain: from v, weight then move (the forward AIS
    order) over the reversed schedule, with no first transition at beta_K."""
    eng = _engine.GibbsEngine(bA, None, None, model.W, model.vbias, model.hbias,
                              ais_streams(seed, chains, 4), dtype=model.dtype)
    eng.set_visible(np.repeat(v[None, :], chains, axis=0))
    rev = np.ascontiguousarray(betas[::-1])
    K = rev.size - 1
    eng.steps(rev, 1, K + 1, K, True, True)
    return np.exp(eng.log_weights + model.log_unnormalized(v[None, :])[0]
                  - _anneal.base_rate_log_z(bA, model.n_hidden))


def z_score(w, target):
    return (np.mean(w) - target) / (np.std(w, ddof=1) / math.sqrt(w.size))


@pytest.fixture(scope="module")
def small():
    model = tiny_model(6, 4, scale=1.5, seed=3)
    bA = 0.3 * np.random.default_rng(1).standard_normal(6)
    return model, bA


# ------------------------------------------------------------------ exact RAISE
@pytest.mark.parametrize("betas", [np.linspace(0, 1, 2), np.linspace(0, 1, 4),
                                   np.array([0.0, 0.1, 0.5, 0.8, 1.0])])
def test_raise_mean_weight_is_the_annealing_models_probability(small, betas):
    model, bA = small
    p_ann = annealing_model_distribution(model, bA, betas)
    V = exact_distribution(model)[0]
    for idx in (0, 5, 37, 63):
        w = raise_weights(model, V[idx], bA, betas, chains=20000)
        assert abs(z_score(w, p_ann[idx])) < 3, (idx, np.mean(w), p_ann[idx])
        # E[ln w] <= ln p_ann(v) (Jensen): the conservative side
        assert np.mean(np.log(w)) <= math.log(p_ann[idx])


def test_forward_order_reverse_step_fails(small):
    model, bA = small
    betas = np.linspace(0, 1, 4)
    p_ann = annealing_model_distribution(model, bA, betas)
    V = exact_distribution(model)[0]
    for idx in (5, 37, 63):
        w = forward_order_weights(model, V[idx], bA, betas, chains=20000)
        assert abs(z_score(w, p_ann[idx])) > 10


def test_raise_float32_model(small):
    model, bA = small
    m32 = model.astype(np.float32)
    b32 = bA.astype(np.float32).astype(np.float64)
    betas = np.linspace(0, 1, 4)
    p_ann = annealing_model_distribution(m32, b32, betas)
    V = exact_distribution(m32)[0]
    for idx in (5, 63):
        w = raise_weights(m32, V[idx], b32, betas, chains=20000)
        assert abs(z_score(w, p_ann[idx])) < 3


@pytest.mark.parametrize("path", ["base_rate", "ratio"])
def test_raise_same_bits_for_threads_and_batches(path):
    """From a base rate, and on a ratio's path (base RBM A; float32 B with float64 A:
    the runs in float64)."""
    model = tiny_model(20, 9, scale=0.7, seed=5)
    base, kw = np.zeros(20), {}
    if path == "ratio":
        model = model.astype(np.float32)
        base, kw = tiny_model(20, 3, scale=0.5, seed=2), {"log_Z_base": 1.5}
    v = (np.random.default_rng(0).random((13, 20)) < 0.4).astype(np.uint8)
    betas = np.linspace(0, 1, 57)
    one = raise_log_weights(model, v, base, betas, chains=3, threads=1, chunk=500, **kw)
    two = raise_log_weights(model, v, base, betas, chains=3, threads=2, batch=7, chunk=11,
                            refresh=200, **kw)
    np.testing.assert_array_equal(one, two)
    if path == "ratio":
        with pytest.raises(CyrbmError, match="ln Z"):
            raise_log_weights(model, v, base, betas, chains=1)


# ------------------------------------------------------- RAISE on a ratio's path
@pytest.fixture(scope="module")
def pair_small():
    """RBMs A (6 x 2) and B (6 x 4), and the exact ln Z_A."""
    A = tiny_model(6, 2, scale=1.0, seed=7)
    B = tiny_model(6, 4, scale=1.5, seed=3)
    return A, B, exact_log_partition(A)


def ratio_forward_order_weights(A, B, log_z_a, v, betas, chains, seed=1):
    """The deliberately wrong reverse chain on the ratio path: weight, then move."""
    eng = _engine.GibbsEngine(A.vbias, A.W, A.hbias, B.W, B.vbias, B.hbias,
                              ais_streams(seed, chains, 4), dtype=np.float64)
    eng.set_visible(np.repeat(v[None, :], chains, axis=0))
    rev = np.ascontiguousarray(betas[::-1])
    K = rev.size - 1
    eng.steps(rev, 1, K + 1, K, True, True)
    return np.exp(eng.log_weights + B.log_unnormalized(v[None, :])[0] - log_z_a
                  + (A.n_hidden - B.n_hidden) * math.log(2.0))


@pytest.mark.parametrize("betas", [np.linspace(0, 1, 2), np.linspace(0, 1, 4),
                                   np.array([0.0, 0.1, 0.5, 0.8, 1.0])])
def test_raise_on_ratio_path_mean_weight_is_the_annealing_models_probability(pair_small,
                                                                             betas):
    """From base model A: x_0 ~ p_A, the ratio transitions T_1 .. T_K (both hidden
    layers), normalized by ln Z_A and the 2^(nA - nB) of the free hidden layers."""
    A, B, log_z_a = pair_small
    p_ann = ratio_annealing_model_distribution(A, B, betas)
    V = exact_distribution(B)[0]
    for idx in (0, 5, 37, 63):
        lw = raise_log_weights(B, V[idx][None, :], A, betas, log_Z_base=log_z_a,
                               chains=20000, seed=1)[0]
        assert abs(z_score(np.exp(lw), p_ann[idx])) < 3, (idx, p_ann[idx])
        assert np.mean(lw) <= math.log(p_ann[idx])
    # without the hidden-layer factor the weights would be off by 2^(nB - nA) = 4
    assert abs(z_score(np.exp(lw) * 4.0, p_ann[idx])) > 10


def test_forward_order_reverse_step_fails_on_ratio_path(pair_small):
    A, B, log_z_a = pair_small
    betas = np.linspace(0, 1, 4)
    p_ann = ratio_annealing_model_distribution(A, B, betas)
    V = exact_distribution(B)[0]
    for idx in (5, 37, 63):
        w = ratio_forward_order_weights(A, B, log_z_a, V[idx], betas, chains=20000)
        assert abs(z_score(w, p_ann[idx])) > 10


# ------------------------------------------------------------------ the sandwich
@pytest.fixture(scope="module")
def sandwich_case():
    """A 64 x 12 RBM trained on the bundled digits (exact ln Z: 2^12 terms) and 100
    held-out digits."""
    X, Xt = cyrbm.load_data("digits:train"), cyrbm.load_data("digits:test")[:100]
    model = cyrbm.Trainer(12, epochs=20, learning_rate=0.1, seed=0, progress=False,
                          monitor_size=0).fit(X).astype(np.float64)
    log_z = exact_log_partition(model)
    exact_mean = float(np.mean(model.log_unnormalized(Xt))) - log_z
    return model, Xt, exact_mean, log_z, cyrbm.estimators.annealing.base_rate_biases(X)


def test_sandwich_brackets_the_exact_mean_and_converges(sandwich_case):
    model, test, exact_mean, _, bA = sandwich_case
    gaps, errs = [], []
    for K in (3, 30, 300):
        res = Annealer(runs=200, schedule=f"linear:{K}", seed=3, threads=2).evaluate(
            model, test, base_rate=bA, chains=10)
        assert res.raise_mean_log_prob <= exact_mean                   # conservative
        assert res.ais_mean_log_prob >= exact_mean - 3 * res.ais_se     # optimistic
        assert res.gap >= -3 * res.gap_se                               # AIS >= RAISE
        gaps.append(abs(res.gap))
        errs.append(max(abs(res.ais_mean_log_prob - exact_mean),
                        abs(res.raise_mean_log_prob - exact_mean)))
        if K == 3:      # a short schedule: AIS over RAISE by far more than their errors
            assert res.gap > 3 * res.gap_se
    assert gaps[0] > gaps[1] > gaps[2] and errs[0] > errs[1] > errs[2]
    assert gaps[0] > 0.5 and errs[2] < 0.05 and gaps[2] < 0.05


def test_disagreement_sentence(sandwich_case):
    model, test, _, _, bA = sandwich_case
    short = Annealer(runs=200, schedule="linear:3", seed=3).evaluate(model, test,
                                                                     base_rate=bA, chains=10)
    assert short.gap > 3 * short.gap_se
    assert short.disagreement.startswith("AIS (optimistic) and RAISE (conservative) differ")
    long = Annealer(runs=100, schedule="linear:300", seed=0).evaluate(model, test,
                                                                      base_rate=bA, chains=5)
    assert long.disagreement is None
    d = long.to_dict()
    json.dumps(d)
    assert set(d["ais"]) >= {"mean_log_prob", "se", "mean_log_prob_3sigma_interval",
                             "ess", "max_weight_share", "weight_warning"}
    assert set(d["raise"]) >= {"mean_log_prob", "se", "mean_log_prob_3sigma_interval",
                               "chains", "n_vectors"}
    lo, hi = d["raise"]["mean_log_prob_3sigma_interval"]
    assert lo < d["raise"]["mean_log_prob"] < hi
    assert d["gap"] == pytest.approx(d["ais"]["mean_log_prob"] - d["raise"]["mean_log_prob"])


def test_simulate_brackets_exact_log_z(sandwich_case):
    model, test, _, log_z, bA = sandwich_case
    for K, tight in ((3, False), (100, True)):
        res = Annealer(runs=100, schedule=f"linear:{K}", seed=1).evaluate(
            model, test, base_rate=bA, chains=5, simulate=200)
        sim = res.simulation
        assert sim["source"] == "exact"
        assert sim["exact_log_Z"] == pytest.approx(log_z, abs=1e-9)
        assert sim["log_Z_lower"] - 3 * sim["log_Z_lower_se"] <= log_z
        assert log_z <= sim["log_Z_upper"] + 3 * sim["log_Z_upper_se"]
        assert sim["log_Z_error_bound"] == pytest.approx(max(0.0, sim["gap"]))
        assert (sim["log_Z_error_bound"] < 0.1) == tight


def test_simulate_from_ais_end_states():
    model = tiny_model(24, 22, scale=0.3, seed=4)          # 22 units: no exact draws
    test = (np.random.default_rng(0).random((10, 24)) < 0.5).astype(np.uint8)
    ann = Annealer(runs=30, schedule="linear:50", seed=2)
    few = ann.evaluate(model, test, chains=2, simulate=20).simulation
    more = ann.evaluate(model, test, chains=2, simulate=40).simulation
    for sim in (few, more):
        assert sim["source"] == "ais" and sim["exact_log_Z"] is None
        assert sim["log_Z_lower"] <= sim["log_Z_upper"] + 3 * sim["log_Z_upper_se"]
        assert "forward AIS runs" in sim["summary"]
    assert few["n"] == 20 and more["n"] == 40


@pytest.fixture(scope="module")
def ratio_case(sandwich_case):
    """Base model A: a 64 x 2 RBM with tiny random weights, far from the 64 x 12 B."""
    rng = np.random.default_rng(0)
    A = RBM(0.01 * rng.standard_normal((64, 2)), np.zeros(64), np.zeros(2))
    return A, exact_log_partition(A)


def test_sandwich_on_ratio_path_brackets_the_exact_mean_and_converges(sandwich_case,
                                                                       ratio_case):
    model, test, exact_mean, _, _ = sandwich_case
    A, log_z_a = ratio_case
    gaps, errs = [], []
    for K in (3, 30, 1000):
        ann = Annealer(runs=200, schedule=f"linear:{K}", seed=3, threads=2)
        res = ann.evaluate(model, test, base_model=A, chains=10)
        assert res.base["kind"] == "model" and res.base["log_Z_source"] == "exact"
        assert res.base["start"] == "exact" and res.ais.log_Z_base == log_z_a
        # the forward half is the ratio run itself, bit for bit
        ratio = ann.log_ratio(A, model, test)
        np.testing.assert_array_equal(res.ais.log_weights, ratio.log_weights)
        assert res.raise_mean_log_prob <= exact_mean + 3 * res.raise_se   # conservative
        assert res.ais_mean_log_prob >= exact_mean - 3 * res.ais_se       # optimistic
        assert res.gap >= -3 * res.gap_se                                  # AIS >= RAISE
        gaps.append(abs(res.gap))
        errs.append(max(abs(res.ais_mean_log_prob - exact_mean),
                        abs(res.raise_mean_log_prob - exact_mean)))
        if K == 3:
            assert res.gap > 3 * res.gap_se and res.disagreement is not None
    assert gaps[0] > gaps[1] > gaps[2] and errs[0] > errs[1] > errs[2]
    assert gaps[0] > 5 and errs[2] < 0.05 and gaps[2] < 0.05


def test_ratio_path_gap_does_not_depend_on_log_z_a(sandwich_case, ratio_case):
    model, test, _, _, _ = sandwich_case
    A, log_z_a = ratio_case
    ann = Annealer(runs=50, schedule="linear:20", seed=1)
    given = ann.evaluate(model, test, base_model=A, base_log_Z=log_z_a + 5.0, chains=2,
                         start="gibbs", burn_in=10)
    exact = ann.evaluate(model, test, base_model=A, chains=2, start="gibbs", burn_in=10)
    assert given.base["log_Z_source"] == "given" and exact.base["log_Z_source"] == "exact"
    assert given.base["start"] == "gibbs" and given.base["burn_in"] == 10
    assert given.gap == pytest.approx(exact.gap, abs=1e-9)
    assert given.ais_mean_log_prob == pytest.approx(exact.ais_mean_log_prob - 5.0, abs=1e-9)
    assert given.raise_mean_log_prob == pytest.approx(exact.raise_mean_log_prob - 5.0,
                                                      abs=1e-9)
    d = given.to_dict()
    json.dumps(d)
    assert d["base"]["kind"] == "model" and d["base"]["n_hidden"] == 2
    assert d["ais"]["log_Z_base"] == pytest.approx(log_z_a + 5.0)
    with pytest.raises(CyrbmError):
        ann.evaluate(model, test, base_model=A, base_log_Z=float("nan"))
    with pytest.raises(CyrbmError):
        ann.evaluate(model, test, base_log_Z=1.0)
    with pytest.raises(CyrbmError):
        ann.evaluate(model, test, base_model=RBM(np.zeros((5, 2)), np.zeros(5), np.zeros(2)))
    with pytest.raises(TypeError):
        ann.evaluate(model, test, base_model="a.npz")


def test_ratio_path_log_z_a_by_ais_and_simulate():
    """A base model too big to enumerate (22 x 22): ln Z_A by base-rate AIS, once; the
    bidirectional check runs on the ratio's path too."""
    A = tiny_model(22, 22, scale=0.1, seed=8)
    B = tiny_model(22, 12, scale=0.4, seed=9)
    test = (np.random.default_rng(0).random((10, 22)) < 0.5).astype(np.uint8)
    ann = Annealer(runs=40, schedule="linear:200", seed=2)
    res = ann.evaluate(B, test, base_model=A, chains=2, burn_in=50, simulate=30)
    assert res.base["log_Z_source"] == "ais" and res.base["start"] == "gibbs"
    log_z_a = exact_log_partition(A)
    lo, hi = res.base["log_Z_3sigma_interval"]
    assert lo <= log_z_a <= hi and res.base["log_Z_ess"] > 10
    # ln Z_B's bracket on exact draws of B, less the error of the estimated ln Z_A
    sim = res.simulation
    shift = res.base["log_Z"] - log_z_a
    assert sim["source"] == "exact"
    assert sim["log_Z_lower"] - shift - 3 * sim["log_Z_lower_se"] <= sim["exact_log_Z"]
    assert sim["exact_log_Z"] <= sim["log_Z_upper"] - shift + 3 * sim["log_Z_upper_se"]


def test_evaluate_refuses_bad_input(sandwich_case):
    model, test, _, _, _ = sandwich_case
    ann = Annealer(runs=10, schedule="linear:5")
    for kw in ({"chains": 0}, {"chains": 1.5}):
        with pytest.raises(CyrbmError):
            ann.evaluate(model, test, **kw)
    with pytest.raises(CyrbmError):
        ann.evaluate(model, test[:, :4])
    with pytest.raises(CyrbmError):
        ann.evaluate(model, None)


# ------------------------------------------------------------------ schedules
def test_adaptive_schedule_reduces_variance_and_round_trips(tmp_path, sandwich_case):
    model, _, _, _, bA = sandwich_case
    K = 100
    tuned = adaptive_schedule(model, K, bA, seed=0)
    assert tuned.size == K and tuned[0] == 0.0 and tuned[-1] == 1.0
    assert np.all(np.diff(tuned) > 0)
    ann_args = dict(runs=2000, seed=7, threads=2)

    def var_and_se(schedule):
        lw = Annealer(schedule=schedule, **ann_args).log_partition(model,
                                                                   base_rate=bA).log_weights
        c = lw - np.mean(lw)
        var = np.mean(c * c)
        return var, math.sqrt((np.mean(c ** 4) - var * var) / lw.size)  # 4th moments
    var_u, se_u = var_and_se(f"linear:{K}")
    var_a, se_a = var_and_se(tuned)
    assert var_a < 0.85 * var_u and var_u - var_a > 3 * math.hypot(se_u, se_a)
    path = tmp_path / "betas.txt"
    save_schedule(path, tuned)
    np.testing.assert_array_equal(make_schedule(str(path)), tuned)


# ------------------------------------------------------------------ diagnostics
def test_weight_diagnostics():
    ess, share, warning = weight_diagnostics(np.zeros(100))
    assert ess == pytest.approx(100) and share == pytest.approx(0.01) and warning is None
    ess, share, warning = weight_diagnostics(np.r_[10.0, np.zeros(99)])
    assert ess < 2 and share > 0.99
    assert warning.startswith("only 1.") and "cannot be trusted" in warning


@pytest.fixture(scope="module")
def uneven_pair(tmp_path_factory):
    """Two RBMs of very different sizes on the same visible units."""
    d = tmp_path_factory.mktemp("pair")
    rng = np.random.default_rng(0)
    A = RBM(0.1 * rng.standard_normal((24, 3)), rng.standard_normal(24),
            rng.standard_normal(3))
    B = RBM(1.5 * rng.standard_normal((24, 60)), rng.standard_normal(24),
            rng.standard_normal(60))
    A.save(d / "a.npz")
    B.save(d / "b.npz")
    return A, B, d


def test_ratio_of_uneven_models_on_a_short_schedule_warns(uneven_pair):
    A, B, _ = uneven_pair
    res = Annealer(runs=100, schedule="linear:20", seed=0).log_ratio(A, B, start="exact")
    assert res.weight_warning is not None and res.ess < 10
    d = res.to_dict()
    assert d["weight_warning"] == res.weight_warning and d["max_weight_share"] > 0.1
    good = Annealer(runs=100, schedule="linear:3000", seed=0).log_ratio(A, B, start="exact")
    assert good.weight_warning is None


class Ran:
    def __init__(self, code, out, err):
        self.returncode, self.stdout, self.stderr = code, out, err


@pytest.fixture
def run_cli(capsys):
    from cyrbm.cli import main

    def run(*args):
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return Ran(code, out, err)
    return run


def test_cli_ratio_and_ais_print_the_warning(uneven_pair, run_cli):
    _, _, d = uneven_pair
    r = run_cli("ratio", d / "a.npz", d / "b.npz", "--runs", 100, "--schedule", "linear:20")
    assert r.returncode == 0, r.stderr
    assert "warning: only" in r.stdout and "effective sample size" in r.stdout
    r = run_cli("ratio", d / "a.npz", d / "b.npz", "--runs", 100, "--schedule", "linear:20",
                "--json")
    assert json.loads(r.stdout)["weight_warning"].startswith("only")
    r = run_cli("ais", d / "a.npz", "--runs", 50, "--schedule", "linear:50", "--json")
    out = json.loads(r.stdout)
    assert out["weight_warning"] is None and 0 < out["max_weight_share"] < 0.5


def test_cli_evaluate(tmp_path, uneven_pair, run_cli):
    _, _, d = uneven_pair
    rng = np.random.default_rng(3)
    np.save(tmp_path / "test.npy", (rng.random((40, 24)) < 0.5).astype(np.uint8))
    sched = tmp_path / "tuned.txt"
    r = run_cli("evaluate", d / "a.npz", "--data", tmp_path / "test.npy", "--runs", 50,
                "--chains", 4, "--schedule", "adaptive:40", "--save-schedule", sched,
                "--simulate", 30, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["command"] == "evaluate" and out["schedule"] == "adaptive:40"
    for key in ("ais", "raise"):
        assert isinstance(out[key]["mean_log_prob"], float)
        assert len(out[key]["mean_log_prob_3sigma_interval"]) == 2
    assert out["betas"] == 40 and out["simulate"]["source"] == "exact"
    again = run_cli("evaluate", d / "a.npz", "--data", tmp_path / "test.npy", "--runs", 50,
                    "--chains", 4, "--schedule", sched, "--json")
    assert json.loads(again.stdout)["raise"]["mean_log_prob"] == out["raise"]["mean_log_prob"]
    text = run_cli("evaluate", d / "a.npz", "--data", tmp_path / "test.npy", "--runs", 50,
                   "--chains", 4, "--schedule", "linear:40")
    assert "AIS   (optimistic)" in text.stdout and "RAISE (conservative)" in text.stdout
    for bad, words in ((["--chains", "0"], "--chains"), (["--schedule", "adaptive:1"], "K >= 2"),
                       (["--simulate", "x"], "--simulate")):
        r = run_cli("evaluate", d / "a.npz", "--data", tmp_path / "test.npy", *bad)
        assert r.returncode == 1 and words in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    r = run_cli("evaluate", d / "a.npz")
    assert r.returncode == 2 and "needs --data" in r.stderr


def test_cli_evaluate_on_ratio_path(tmp_path, uneven_pair, run_cli):
    A, _, d = uneven_pair
    rng = np.random.default_rng(3)
    np.save(tmp_path / "test.npy", (rng.random((20, 24)) < 0.5).astype(np.uint8))
    common = ["--data", tmp_path / "test.npy", "--runs", 40, "--schedule", "linear:60"]
    r = run_cli("evaluate", d / "b.npz", "--base-model", d / "a.npz", "--chains", 2,
                *common, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    base = out["base"]
    assert base["kind"] == "model" and base["model"] == str(d / "a.npz")
    assert base["log_Z_source"] == "exact" and base["start"] == "exact"
    assert base["log_Z"] == pytest.approx(exact_log_partition(A))
    assert out["ais"]["log_Z_base"] == base["log_Z"]
    assert out["gap"] == pytest.approx(out["ais"]["mean_log_prob"]
                                       - out["raise"]["mean_log_prob"])
    ratio = json.loads(run_cli("ratio", d / "a.npz", d / "b.npz", *common, "--json").stdout)
    assert out["ais"]["log_weights"] == ratio["log_weights"]        # the ratio's own run
    assert base["log_ratio"] == ratio["log_ratio"]
    given = run_cli("evaluate", d / "b.npz", "--base-model", d / "a.npz", "--chains", 2,
                    "--base-logz", "7.5", "--start", "gibbs", "--burn-in", "30", *common)
    assert given.returncode == 0, given.stderr
    assert "on the path of the ratio" in given.stdout and "ln Z_A = 7.5000 (given" in given.stdout
    assert "Gibbs chains, 30 sweeps of burn-in" in given.stdout
    other = tmp_path / "other.npz"
    RBM(np.zeros((5, 2)), np.zeros(5), np.zeros(2)).save(other)
    for bad, words in ((["--base-model", d / "a.npz", "--base-logz", "x"], "--base-logz"),
                       (["--base-logz", "3"], "--base-model"),
                       (["--start", "gibbs"], "--base-model"),
                       (["--burn-in", "30"], "--base-model"),
                       (["--base-model", d / "a.npz", "--schedule", "adaptive:40"],
                        "--base-model"),
                       (["--base-model", d / "a.npz", "--start", "maybe"], "--start"),
                       (["--base-model", other], "visible")):
        r = run_cli("evaluate", d / "b.npz", "--data", tmp_path / "test.npy", *bad)
        assert r.returncode == 1 and words in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_cli_evaluate_plot(tmp_path, uneven_pair, run_cli):
    pytest.importorskip("matplotlib")
    _, _, d = uneven_pair
    np.save(tmp_path / "test.npy", (np.random.default_rng(3).random((20, 24)) < 0.5)
            .astype(np.uint8))
    png = tmp_path / "eval.png"
    r = run_cli("evaluate", d / "a.npz", "--data", tmp_path / "test.npy", "--runs", 30,
                "--chains", 3, "--schedule", "linear:64", "--plot", png)
    assert r.returncode == 0, r.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000
    import matplotlib.image
    img = matplotlib.image.imread(str(png))
    assert img.shape[0] > 200 and img.shape[1] > 600
    assert np.std(img[..., :3]) > 0.05            # not blank: lines, bars, text
