"""ln Z tracked through PT training (cyrbm.training.pt_tracking, DCB11) against exact ln Z on
enumerable models (10 visible x 6 hidden), fixed seeds.

The coverage test runs SEEDS whole PT training runs (seed s: its own data, initial model
and chains) and takes the z-score z = (tracked - exact) / se of each run's last record
(runs are independent, so the z's are):

* +-1 sigma must cover a fraction within 3 binomial standard errors of 0.683,
  sqrt(0.683 0.317 / n);
* +-3 sigma may miss at most MAX_3SIGMA_MISSES runs (P(3 or more of 60 misses) < 0.01
  when the error bars are right, p = 0.0027);
* the mean of z^2 must lie within 3 of its standard errors, sqrt(2 / n), of 1.
* every record of every run (every epoch) within |z| <= 4.

Power checks, on the same runs: the error bar 3x too small in variance (z times sqrt 3),
and the update term Delta dropped (the filter moved by the bridge observations alone),
must each fail the same checks.
"""
import json
import math

import numpy as np
import pytest

from cyrbm import RBM, Trainer
from cyrbm.data.datasets import load_data
from cyrbm.models.gaussian import GaussianRBM
from cyrbm.models.srbm import SRBM
from cyrbm.training import pt_tracking
from cyrbm.training.tracking import bennett_acceptance_ratio

from _commands import interrupted_fit, one_error_line, run as run_cli

SEEDS = 60
MAX_3SIGMA_MISSES = 2
TOL = 4.0
INIT_SCALE = 0.3

SETTINGS = dict(method="pt", batch_size=10, epochs=6, learning_rate=0.1, momentum=0.5,
                chains=64, temperatures=6, monitor_size=0, progress=False,
                track_logz="filter")


def data_of(seed, n=60, D=10):
    """Rows of a few noisy prototypes (a multimodal target)."""
    rng = np.random.default_rng(1000 + seed)
    protos = rng.random((3, D)) < 0.5
    rows = protos[rng.integers(0, 3, n)] ^ (rng.random((n, D)) < 0.1)
    return rows.astype(np.uint8)


def start_of(seed, D=10, H=6, scale=INIT_SCALE):
    """An initial model with weights of a trained one's size (the tempered family then
    spans several nats between beta = 0 and 1)."""
    rng = np.random.default_rng(2000 + seed)
    return RBM(rng.normal(0, scale, (D, H)), rng.normal(0, 0.5, D), rng.normal(0, 0.5, H))


def run(seed, scale=None, **kw):
    """(error, se) of every tracked record of one PT run against exact ln Z, and the
    trainer."""
    X = data_of(seed)
    zs = []
    trainer = Trainer(6, seed=seed, **{**SETTINGS, **kw})
    step = trainer._track

    def spy(state, tracker, model, n_threads):
        step(state, tracker, model, n_threads)
        r = state["track_pending"][-1]
        zs.append((r["log_Z"] - model.log_partition(), r["log_Z_se"]))
    trainer._track = spy
    trainer.fit(X, model=start_of(seed, scale=INIT_SCALE if scale is None else scale))
    return zs, trainer


def checks(last, scale=1.0):
    """The coverage checks' outcomes for last records (error, se), se scaled."""
    z = np.array([e / (s * scale) for e, s in last])
    n = z.size
    cover1 = np.mean(np.abs(z) <= 1)
    misses3 = int(np.sum(np.abs(z) > 3))
    mean_z2 = float(np.mean(z * z))
    return {"cover1": abs(cover1 - 0.6827) <= 3 * math.sqrt(0.6827 * 0.3173 / n),
            "cover3": misses3 <= MAX_3SIGMA_MISSES,
            "z2": abs(mean_z2 - 1) <= 3 * math.sqrt(2 / n)}, (cover1, misses3, mean_z2)


@pytest.fixture(scope="module")
def runs():
    return [run(s)[0] for s in range(SEEDS)]


def test_every_epoch_within_its_error(runs):
    worst = max(abs(e) / s for zs in runs for e, s in zs)
    assert worst <= TOL, worst


def test_coverage(runs):
    ok, figures = checks([zs[-1] for zs in runs])
    assert all(ok.values()), (ok, figures)


def test_coverage_power_variance_too_small(runs):
    ok, figures = checks([zs[-1] for zs in runs], scale=1 / math.sqrt(3))
    assert not all(ok.values()), figures


def test_coverage_power_update_term_dropped(monkeypatch):
    real, real_top = pt_tracking.importance_log_ratio, pt_tracking.top_log_ratio

    def dropped(log_w):
        _, psi, ess = real(log_w)
        return 0.0, psi, ess

    def dropped_top(log_a, log_b):
        _, psi, ess = real_top(log_a, log_b)
        return 0.0, psi, ess
    monkeypatch.setattr(pt_tracking, "importance_log_ratio", dropped)
    monkeypatch.setattr(pt_tracking, "top_log_ratio", dropped_top)
    last = [run(s)[0][-1] for s in range(SEEDS // 3)]
    ok, figures = checks(last)
    assert not all(ok.values()), figures


def test_threads_and_resume_same_bits(tmp_path):
    X = data_of(3)
    one = run(3, threads=1)[1]
    two = run(3, threads=2)[1]
    assert [r["log_Z"] for r in one.history] == [r["log_Z"] for r in two.history]
    assert [r["log_Z_se"] for r in one.history] == [r["log_Z_se"] for r in two.history]
    path = tmp_path / "ckpt.npz"
    first = Trainer(6, seed=3, **{**SETTINGS, "epochs": 2}, checkpoint=path,
                    checkpoint_seconds=0)
    first.fit(X, model=start_of(3))
    rest = Trainer(6, seed=3, **SETTINGS, checkpoint=path, checkpoint_seconds=0)
    rest.fit(X, resume=True)
    assert [r["log_Z"] for r in rest.history] == [r["log_Z"] for r in one.history]
    assert [r["tracked"] for r in rest.history] == [r["tracked"] for r in one.history]


def test_bennett_pairs_solve_bennetts_equation():
    # the ladder tracker's one-pair bisection and the K pairs by Newton: the same root
    rng = np.random.default_rng(0)
    wf, wr = rng.normal(1, 2, (4, 30)), rng.normal(-1.5, 1.5, (4, 30))
    delta, overlap, psi = pt_tracking.bennett_pairs(wf, wr)
    for j in range(4):
        d, _, o = bennett_acceptance_ratio(wf[j], wr[j])
        assert delta[j] == pytest.approx(d, abs=1e-10)
        assert overlap[j] == pytest.approx(o, rel=1e-10)
    assert np.allclose(psi.sum(axis=0), 0.0, atol=1e-9)


@pytest.mark.parametrize("model", [
    RBM(np.zeros((5, 3)), np.array([0.3, -1, 2, 0, 0.5]), np.array([1.0, -2, 0.2])),
    SRBM(np.zeros((5, 3)), np.array([0.3, -1, 2, 0, 0.5]), np.zeros(3), np.zeros((5, 5))),
    GaussianRBM(np.zeros((5, 3)), np.zeros(5), np.zeros(3), sigma=np.array([1, 2, .5, 1, 3.])),
])
def test_anchor_is_the_beta_zero_models_exact_log_z(model):
    # beta = 0 of each family: W (and c, L for the Gaussian RBM and SRBM) out
    assert model._tempered_base_log_partition() == pytest.approx(model.log_partition(),
                                                                 abs=1e-12)


@pytest.mark.parametrize("cls", [RBM, SRBM, GaussianRBM])
def test_tempered_log_p_at_one_is_the_model(cls):
    rng = np.random.default_rng(0)
    W = rng.normal(0, 1, (5, 3))
    extra = {"L": (lambda a: a + a.T - 2 * np.diag(np.diag(a)))(rng.normal(0, .3, (5, 5)))} \
        if cls is SRBM else {}
    model = cls(W, rng.normal(0, 1, 5), rng.normal(0, 1, 3), **extra)
    v = (rng.random((7, 5)) < 0.5).astype(model._state_dtype)
    lp = model._tempered_log_p(v, np.ones((7, 1)))[:, 0]
    np.testing.assert_allclose(lp, model._log_unnormalized_rows(v, 1), rtol=1e-12)


def test_refusals():
    with pytest.raises(ValueError, match="temperature 0"):
        Trainer(4, **{**SETTINGS, "temperatures": [0.5, 1.0]}).fit(data_of(0))
    with pytest.raises(ValueError, match="track_overlap"):
        Trainer(4, **SETTINGS, track_overlap=0.5).fit(data_of(0))
    with pytest.raises(ValueError, match="track_logz='filter' follows the tempered"):
        Trainer(4, method="pcd", track_logz="filter")
    with pytest.raises(ValueError, match="one of the trackers 'ladder', 'filter', not 'kalman'"):
        Trainer(4, **{**SETTINGS, "track_logz": "kalman"})


def test_pt_keeps_the_ladder_unless_the_filter_is_asked_for():
    # track_logz=True is the checkpoint ladder for every method, pt included (the filter
    # drifts low on large models: bench/README.md); its rungs carry no "ess"
    short = {**SETTINGS, "epochs": 1}
    for track, filtered in ((True, False), ("ladder", False), ("filter", True)):
        trainer = Trainer(4, **{**short, "track_logz": track}, seed=1)
        trainer.fit(data_of(1), model=start_of(1))
        rungs = trainer.history[-1]["tracked"]
        assert rungs and all(("ess" in r) == filtered for r in rungs), (track, rungs)
        assert trainer.settings()["track_logz"]["tracker"] == ("filter" if filtered
                                                                else "ladder")


def test_cli_tracker_option(tmp_path, capsys):
    data = tmp_path / "d.npy"
    np.save(data, data_of(2))
    base = ["train", data, "--hidden", 4, "--epochs", 1, "--json", "--batch", 10,
            "--monitor", 0]
    pt = ["--method", "pt", "--temperatures", 4, "--chains", 8]
    code, out, err = run_cli(base + pt + ["-o", tmp_path / "f.npz", "--track-logz",
                                      "--tracker", "filter"], capsys)
    assert code == 0, err
    rungs = json.loads(out)["history"][-1]["tracked"]
    assert rungs and all("ess" in r for r in rungs)
    code, out, err = run_cli(base + pt + ["-o", tmp_path / "g.npz", "--tracker", "filter"],
                         capsys)
    assert code != 0
    one_error_line(err, "--tracker is an option of train --track-logz")
    code, out, err = run_cli(base + ["-o", tmp_path / "h.npz", "--track-logz", "--tracker",
                                 "filter"], capsys)
    assert code != 0
    one_error_line(err, "--tracker is ladder or filter (with --method pt only), not filter "
                        "with --method cd")


@pytest.mark.parametrize("units, noise", [({"lateral": True}, None),
                                          ({"visible": "gaussian"}, 0.3)])
def test_other_unit_types_within_their_error(units, noise):
    # an SRBM's and a Gaussian RBM's tempered families (beta scales W, c and L): the
    # last record of a few runs within TOL standard errors of exact ln Z
    X = data_of(0)
    if noise is not None:
        X = X + np.random.default_rng(0).normal(0, noise, X.shape)
    for seed in range(3):
        trainer = Trainer(6, **{**SETTINGS, "epochs": 3, "learning_rate": 0.05}, seed=seed,
                          **units)
        model = trainer.fit(X)
        last = trainer.history[-1]
        assert abs(last["log_Z"] - model.log_partition()) <= TOL * last["log_Z_se"]


def test_warns_where_the_updates_outrun_the_draws():
    # 64 x 16 on the digits at learning rate 0.1, batches of 20: from epoch 3 the
    # updates' importance weights fall below half of the chains and the tracked ln Z
    # drifts 1-2 nats below exact with error bars of 0.1-0.25 (measured; docs): flagged
    X = load_data("digits:train")
    trainer = Trainer(16, method="pt", epochs=4, batch_size=20, learning_rate=0.1, chains=50,
                      temperatures=11, seed=0, progress=False, monitor_size=0,
                      track_logz="filter")
    trainer.fit(X)
    assert trainer.history[0].get("overlap_warning") is None
    assert any(r.get("overlap_warning") for r in trainer.history[2:])
    assert "effective sample size" in next(r["overlap_warning"] for r in trainer.history
                                           if r.get("overlap_warning"))


@pytest.mark.parametrize("every", [None, 4])
def test_interrupted_and_resumed_mid_epoch_same_bits(tmp_path, every):
    # Ctrl-C after an epoch stops the run at the next batch: its checkpoint holds the
    # filter mid-epoch (with track_every, draws waiting for their transition)
    X = data_of(5)
    kw = {**SETTINGS, "epochs": 3, "track_every": every, "seed": 5}
    ck = tmp_path / "ck.npz"
    interrupted_fit(Trainer(6, checkpoint=ck, **kw), X)
    resumed = Trainer(6, checkpoint=ck, **kw)
    resumed.fit(X, resume=True)
    straight = Trainer(6, **kw)
    straight.fit(X)
    assert [r["tracked"] for r in resumed.history] == [r["tracked"] for r in straight.history]


def test_k_rounds_per_update_tracked_from_the_engine(monkeypatch):
    # PT-k: k rounds of the ladders an update, the filter taken from the engine's sums (the states are never weighed in NumPy), every record
    # within its error of exact ln Z
    monkeypatch.setattr(pt_tracking.PTLogZTracker, "_observe", None)
    monkeypatch.setattr(pt_tracking.PTLogZTracker, "_transition", None)
    zs, trainer = run(7, k=3)
    assert len(zs) >= SETTINGS["epochs"]
    assert max(abs(e) / s for e, s in zs) <= TOL
    one = run(7)[1]
    assert [r["log_Z"] for r in one.history] != [r["log_Z"] for r in trainer.history]


def test_engine_sums_agree_with_weighing_the_states(monkeypatch):
    # the same run tracked from the engine's sums and by weighing the states in NumPy
    # (the general path, which other unit types take): the same estimators on draws of
    # the same models, so the records agree within their errors
    fast = run(11)[0]
    monkeypatch.setattr(pt_tracking.PTLogZTracker, "_from_engine", lambda self, ladders: False)
    slow = run(11)[0]
    assert len(fast) == len(slow)
    for (e1, s1), (e2, s2) in zip(fast, slow):
        assert e1 != e2
        assert abs(e1 - e2) <= 4 * math.hypot(s1, s2)
