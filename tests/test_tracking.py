"""Tracked ln Z through training (cyrbm.training.tracking): Bennett's acceptance ratio over ratio
AIS both ways, chained from an exact first rung, checked against exact ln Z on
enumerable models (12 hidden units on the 8 x 8 digits), with fixed seeds.

Tolerance: every rung within 4 of its stated standard errors (the z-scores of one run
are correlated, as the rungs share their links; 4 sigma keeps a run of a dozen rungs
from failing by chance at these seeds and any nearby), and the power check that a
single link's Delta shifted by 10 of the stated standard errors of ln Z at its rung
fails that same check.
"""
import math

import numpy as np
import pytest

from cyrbm import RBM, Trainer
from cyrbm.data.datasets import load_data
from cyrbm.models.exact import exact_log_partition
from cyrbm.training.tracking import LogZTracker, bennett_acceptance_ratio

from _commands import interrupted_fit

TOL = 4.0          # standard errors

SETTINGS = dict(method="cd", batch_size=60, learning_rate=0.1, seed=4, monitor_size=0,
                progress=False, track_logz=True, track_every=10)


def tracked_run(epochs=4, **kw):
    """A tracked training run on the digits; (trainer, the models at each rung)."""
    X = load_data("digits")
    models = {}
    trainer = Trainer(12, epochs=epochs, **{**SETTINGS, **kw})
    step = trainer._track

    def spy(state, tracker, model, n_threads):
        step(state, tracker, model, n_threads)
        models[state["n_updates"]] = model.copy()
    trainer._track = spy
    model0 = RBM.random(64, 12, seed=SETTINGS["seed"], dtype=np.float32, data=X)
    models[0] = model0
    trainer.fit(X, test_data=load_data("digits:test"))
    return trainer, models


def rungs_of(history):
    return [r for record in history for r in record["tracked"]]


def worst_z(rungs, exact, shift_link=None, shift=0.0):
    """max |tracked - exact| / se over the rungs; with ``shift_link``, that link's Delta
    is moved by ``shift`` standard errors of ln Z at its rung (and every rung after it
    with it)."""
    worst, moved = 0.0, 0.0
    for i, r in enumerate(rungs):
        if i == shift_link:
            moved = shift * r["log_Z_se"]
        z = abs(r["log_Z"] + moved - exact[r["update"]]) / max(r["log_Z_se"], 1e-12)
        worst = max(worst, z)
    return worst


def test_tracked_log_z_matches_exact_at_every_checkpoint_and_a_wrong_ratio_fails():
    trainer, models = tracked_run(epochs=4)
    rungs = rungs_of(trainer.history)
    exact = {u: exact_log_partition(m) for u, m in models.items()}
    assert [r["update"] for r in rungs] == sorted(exact) and len(rungs) == 13
    assert rungs[0]["log_Z"] == exact[0] and rungs[0]["log_Z_se"] == 0.0   # exact first rung
    assert worst_z(rungs, exact) < TOL
    # not vacuous: the error bars are small against ln Z's change over training
    assert rungs[-1]["log_Z_se"] < 0.2 < abs(exact[max(exact)] - exact[0])
    # power: one link's ratio 10 sigma off fails the same check, wherever it is
    for link in (1, 6, len(rungs) - 1):
        assert worst_z(rungs, exact, link, 10.0) > TOL
    # the history: every epoch's rungs, the last one's figures, the test log-likelihood
    last = trainer.history[-1]
    assert last["log_Z"] == rungs[-1]["log_Z"] and last["log_Z_se"] == rungs[-1]["log_Z_se"]
    test = load_data("digits:test")
    final = models[max(models)]
    truth = float(np.mean(final.log_unnormalized(test))) - exact[max(exact)]
    lo, hi = last["log_likelihood_interval"]
    assert lo < truth < hi and math.isclose(hi - lo, 6 * last["log_Z_se"])
    assert all(r["overlap_warning"] is None and 0 < r["overlap"] <= 1 for r in rungs[1:])


def test_bar_error_bars_cover_the_exact_ratio():
    """Coverage of BAR's asymptotic standard error (Shirts et al. 2003) over 40 seeds on
    an enumerable pair: |z| < 2 in at least 85% (95% expected), and the z-scores'
    spread between 0.6 and 1.5 (neither too wide nor too narrow)."""
    rng = np.random.default_rng(1)
    A = RBM(rng.normal(0, 0.5, (16, 10)), rng.normal(0, 0.5, 16), rng.normal(0, 0.5, 10))
    B = RBM(A.W + rng.normal(0, 0.3, (16, 10)), A.vbias + 0.2, A.hbias)
    truth = exact_log_partition(B) - exact_log_partition(A)
    z = []
    for seed in range(40):
        tracker = LogZTracker(seed, runs=32, betas=5)
        tracker.last, tracker.log_Z, tracker.var, tracker._previous_update = A, 0.0, 0.0, 0
        r = tracker.step(B, 1)
        z.append((r["delta"] - truth) / r["delta_se"])
    z = np.array(z)
    assert np.mean(np.abs(z) < 2) >= 0.85 and 0.6 < z.std() < 1.5


def test_bar_solves_its_equation_and_knows_identical_models():
    rng = np.random.default_rng(0)
    wf, wr = rng.normal(1.0, 0.5, 50), rng.normal(-1.2, 0.7, 30)
    d, se, overlap = bennett_acceptance_ratio(wf, wr)
    m = math.log(50 / 30)
    lhs = np.sum(1 / (1 + np.exp(m - wf + d)))
    rhs = np.sum(1 / (1 + np.exp(-m - wr - d)))
    assert math.isclose(lhs, rhs, rel_tol=1e-9) and se > 0 and 0 < overlap < 1
    assert bennett_acceptance_ratio(np.zeros(8), np.zeros(8)) == (0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        bennett_acceptance_ratio([np.nan], [0.0])


def test_chains_path_tracks_an_enumerable_run():
    """The runs' starts from carried Gibbs chains (the path of large models) on the same
    enumerable models: within the same tolerance."""
    trainer, models = tracked_run(epochs=2)
    ups = sorted(models)
    tracker = LogZTracker(7, start="gibbs")
    first = tracker.begin(models[0])          # through the W = 0 copy of the first model
    exact = {u: exact_log_partition(models[u]) for u in ups}
    rungs = [first] + [tracker.step(models[u], u) for u in ups[1:]]
    assert worst_z(rungs, exact) < TOL and rungs[-1]["log_Z_se"] < 0.2


def test_overlap_weighs_the_last_rungs_draws():
    """LogZTracker.overlap: the effective sample size of the carried draws of the last
    rung weighed towards another model, over their number: by hand, 1 for the rung
    itself, falling as the model moves away; None before an exact ladder's first link."""
    rng = np.random.default_rng(3)
    A = RBM(rng.normal(0, 0.3, (24, 22)), rng.normal(0, 0.5, 24), rng.normal(0, 0.5, 22))
    tracker = LogZTracker(0, runs=16, betas=20)
    tracker.begin(A)                          # through A's W = 0 copy: draws carried
    assert tracker.overlap(A) == 1.0 and tracker.last_update == 0
    x = tracker.chains
    assert x.shape == (16, 24)
    found = []
    for scale in (0.05, 0.3, 1.0):
        B = RBM(A.W + scale * rng.normal(0, 1, A.W.shape), A.vbias, A.hbias)
        lw = B.log_unnormalized(x) - A.log_unnormalized(x)
        w = np.exp(lw - lw.max())
        found.append(tracker.overlap(B))
        assert math.isclose(found[-1], w.sum() ** 2 / (16 * np.sum(w * w)), rel_tol=1e-9)
    assert 1.0 > found[0] > found[1] > found[2] >= 1 / 16
    small = RBM(A.W[:, :8], A.vbias, A.hbias[:8])          # enumerable: exact starts
    exact = LogZTracker(0)
    exact.begin(small)
    assert exact.overlap(small) is None


def test_track_overlap_adds_rungs_where_the_model_moves():
    """Trainer(track_overlap=X): a rung wherever a check (every TRACK_OVERLAP_EVERY
    updates) finds the overlap below X, besides the scheduled ones; none added at a low
    X; the denser ladder still within TOL of exact at every rung (and a wrong link not)."""
    from cyrbm import defaults
    every = defaults.TRACK_OVERLAP_EVERY
    scheduled = [0, 1, 2, 4, 8, 16, 30, 60, 90, 120]
    low, _ = tracked_run(epochs=4, track_every=None, track_overlap=0.5)
    assert [r["update"] for r in rungs_of(low.history)] == scheduled
    trainer, models = tracked_run(epochs=4, track_every=None, track_overlap=0.95)
    rungs = rungs_of(trainer.history)
    ups = [r["update"] for r in rungs]
    added = sorted(set(ups) - set(scheduled))
    assert ups == sorted(set(ups)) and set(scheduled) <= set(ups)      # no rung twice
    assert len(added) >= 4 and all(u % every == 0 for u in added)
    exact = {u: exact_log_partition(m) for u, m in models.items()}
    assert worst_z(rungs, exact) < TOL and rungs[-1]["log_Z_se"] < 0.2
    assert worst_z(rungs, exact, len(rungs) // 2, 10.0) > TOL
    assert trainer.settings()["track_logz"]["overlap"] == 0.95
    with pytest.raises(ValueError, match=r"track_overlap is a fraction of the carried "
                                         r"draws, in \(0, 1\), not 1"):
        Trainer(4, track_logz=True, track_overlap=1)


def test_refine_factor_follows_the_log_weight_variance():
    from cyrbm.training.tracking import refine_factor
    rng = np.random.default_rng(0)
    w = lambda var: rng.normal(0, np.sqrt(var), 400)
    assert refine_factor(w(0.1), w(0.1)) == 2              # at least 2
    assert refine_factor(w(1000.0), w(1000.0)) == 16       # at most 16
    assert 6 <= refine_factor(w(30.0), w(1000.0)) <= 10    # the smaller variance / 4


def test_a_poor_overlap_is_reported():
    rng = np.random.default_rng(2)
    A = RBM(np.zeros((20, 16)), np.zeros(20), np.zeros(16))
    B = RBM(rng.normal(0, 5.0, (20, 16)), np.zeros(20), np.zeros(16))
    tracker = LogZTracker(0, runs=8, betas=2, refine=2)
    tracker.begin(A)
    r = tracker.step(B, 5)
    # two refinements, each 2 to 16 times the betas, by the log weights' variance
    assert r["overlap"] * 8 < 5 and 8 <= r["betas"] <= 512 and r["betas"] > 2
    assert "overlap too little" in r["overlap_warning"]
    assert "\n" not in r["overlap_warning"]


@pytest.mark.parametrize("every", [7, None, "overlap"])
def test_an_interrupted_tracked_run_resumes_with_the_same_bits(tmp_path, every):
    X = load_data("digits")
    ck = tmp_path / "ck.npz"
    settings = {**SETTINGS, "track_every": every}
    if every == "overlap":
        settings.update(track_every=None, track_overlap=0.95)
    interrupted_fit(Trainer(12, epochs=3, checkpoint=ck, **settings), X)
    resumed = Trainer(12, epochs=3, checkpoint=ck, **settings)
    resumed.fit(X, resume=True)
    straight = Trainer(12, epochs=3, **settings)
    straight.fit(X)
    assert rungs_of(resumed.history) == rungs_of(straight.history)
    # without track_every: the epochs' ends and, in the first epoch, updates 1, 2, 4, 8, 16
    n = len(rungs_of(straight.history))
    assert n == 1 + 3 + 5 if every is None else n > 1 + 3 + 5 if every == "overlap" \
        else n == 1 + 3 * 30 // every
    np.testing.assert_array_equal(resumed.model.W, straight.model.W)


def test_tracking_does_not_depend_on_threads():
    X = load_data("digits:test")
    runs = [Trainer(12, epochs=2, threads=t, **SETTINGS) for t in (1, 2)]
    for trainer in runs:
        trainer.fit(X)
    assert rungs_of(runs[0].history) == rungs_of(runs[1].history)


def test_test_data_needs_tracking():
    with pytest.raises(ValueError, match="track_logz"):
        Trainer(4, epochs=1, progress=False).fit(load_data("digits:test"),
                                                 test_data=load_data("digits:test"))


# ------------------------------------------------------------------ command line
def test_cli_track_logz_prints_it_per_epoch_and_in_json(tmp_path, capsys):
    import json
    from _commands import run
    out_path, plot = tmp_path / "m.npz", tmp_path / "curve.png"
    args = ["train", "digits", "-o", out_path, "--hidden", "12", "--epochs", "2",
            "--batch", "60", "--seed", "4", "--track-logz", "--track-every", "10",
            "--data", "digits:test", "--no-progress"]
    code, out, err = run(args[:-1] + ["--plot", plot], capsys)
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.startswith("epoch")]
    assert len(lines) == 2 and all("ln Z" in l and "test log-likelihood" in l for l in lines)
    assert "tracked ln Z" in out and plot.stat().st_size > 0
    code, out, err = run(args + ["--json", "--checkpoint", tmp_path / "other.npz"], capsys)
    result = json.loads(out)
    rungs = [r for record in result["history"] for r in record["tracked"]]
    assert [r["update"] for r in rungs] == list(range(0, 61, 10))
    assert result["log_Z"] == rungs[-1]["log_Z"] and len(result["log_likelihood_interval"]) == 2


def test_cli_tracking_options_need_track_logz(tmp_path, capsys):
    from _commands import one_error_line, run
    code, out, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--track-every", "5"],
                         capsys)
    assert code != 0
    one_error_line(err, "--track-logz")
    code, out, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--track-overlap",
                          "0.9"], capsys)
    assert code != 0
    one_error_line(err, "--track-overlap is an option of train --track-logz")
    code, out, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--track-logz",
                          "--track-overlap", "1"], capsys)
    assert code != 0
    one_error_line(err, "--track-overlap")
