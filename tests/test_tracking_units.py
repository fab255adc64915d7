"""Tracked ln Z (cyrbm.training.tracking) of a Gaussian RBM and of an SRBM through training: the
first rung exact (GaussianRBM.log_partition over the hidden states, SRBM's over the
visible states) or through the model's W = 0 copy (closed form), the links by ratio AIS
between two models of the unit type (cyrbm.estimators.ratio) both ways and Bennett's acceptance
ratio.  Checked against the exact ln Z of every rung's model, with fixed seeds.

Tolerance: every rung within 4 of its stated standard errors (as tests/test_tracking.py
for binary RBMs), and the power check that one link's Delta moved by 10 of the stated
standard errors of ln Z at its rung fails that same check, as does a ladder whose links
run the deliberately wrong ratio kernel (A's hidden term left out of ln p*_k).
"""
import numpy as np
import pytest

from cyrbm import Trainer
from cyrbm.models.gaussian import GaussianRBM
from cyrbm.models.srbm import SRBM
from cyrbm.training.tracking import LogZTracker

from _commands import interrupted_fit

TOL = 4.0


def gaussian_data(seed=0, n=300, D=6):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1.5, (3, D))
    return centres[rng.integers(0, 3, n)] + rng.normal(0, 0.6, (n, D))


def binary_data(seed=0, n=300, D=9):
    rng = np.random.default_rng(seed)
    protos = rng.random((3, D)) < 0.5
    flips = rng.random((n, D)) < 0.1
    return (protos[rng.integers(0, 3, n)] ^ flips).astype(np.uint8)


RUNS = {
    "gaussian": (dict(visible="gaussian", learning_rate=0.05), gaussian_data),
    "lateral": (dict(lateral=True, learning_rate=0.1), binary_data),
}


def tracked_run(kind, epochs=5):
    """A tracked training run of ``kind``; (trainer, the models at each rung)."""
    settings, data = RUNS[kind]
    X = data()
    models = {}
    trainer = Trainer(5, method="cd", epochs=epochs, batch_size=30, seed=4, monitor_size=0,
                      progress=False, track_logz=True, track_every=5, **settings)
    step = trainer._track

    def spy(state, tracker, model, n_threads):
        step(state, tracker, model, n_threads)
        models[state["n_updates"]] = model.copy()
    trainer._track = spy
    begin = trainer._tracker

    def first(state, model, n_threads):
        if state.get("tracker") is None:
            models[0] = model.copy()
        return begin(state, model, n_threads)
    trainer._tracker = first
    trainer.fit(X)
    return trainer, models


def worst_z(rungs, exact, shift_link=None, shift=0.0):
    worst, moved = 0.0, 0.0
    for i, r in enumerate(rungs):
        if i == shift_link:
            moved = shift * r["log_Z_se"]
        worst = max(worst, abs(r["log_Z"] + moved - exact[r["update"]])
                    / max(r["log_Z_se"], 1e-12))
    return worst


@pytest.mark.parametrize("kind", RUNS)
def test_tracked_log_z_matches_exact_at_every_rung(kind):
    trainer, models = tracked_run(kind)
    rungs = [r for record in trainer.history for r in record["tracked"]]
    exact = {u: m.log_partition() for u, m in models.items()}
    assert [r["update"] for r in rungs] == sorted(exact) and len(rungs) >= 4
    assert rungs[0]["log_Z"] == exact[0] and rungs[0]["log_Z_se"] == 0.0
    worst = worst_z(rungs, exact)
    change = abs(exact[max(exact)] - exact[0])
    print(f"{kind}: {len(rungs)} rungs, worst |z| {worst:.2f}, last se "
          f"{rungs[-1]['log_Z_se']:.3f}, ln Z moved {change:.2f}")
    assert worst < TOL
    assert rungs[-1]["log_Z_se"] < 0.2 < change          # not vacuous
    for link in (1, len(rungs) // 2, len(rungs) - 1):    # power: one link 10 se off
        assert worst_z(rungs, exact, link, 10.0) > TOL


@pytest.mark.parametrize("kind", RUNS)
def test_first_rung_through_the_unconnected_copy_and_gibbs_starts(kind, monkeypatch):
    """start="gibbs": the first rung is the model's W = 0 copy (closed-form ln Z), the
    links start from carried Gibbs chains; within the same tolerance.  The same ladder
    on the wrong ratio kernel (A's hidden term dropped) fails it (power)."""
    _, models = tracked_run(kind, epochs=2)
    ups = sorted(models)
    exact = {u: models[u].log_partition() for u in ups}

    def ladder():
        tracker = LogZTracker(7, start="gibbs", burn_in=30)
        return [tracker.begin(models[0])] + [tracker.step(models[u], u) for u in ups[1:]]
    rungs = ladder()
    worst = worst_z(rungs, exact)
    import cyrbm.estimators.ratio as ratio
    own = ratio.own_log_ratio
    monkeypatch.setattr(ratio, "own_log_ratio",
                        lambda *a, **k: own(*a, **{**k, "_variant": 2}))
    for cls in (GaussianRBM, SRBM):
        monkeypatch.setattr(cls, "_ais_log_ratio",
                            lambda self, ann, other, data=None, **o:
                            ratio.own_log_ratio(ann, self, other, data, **o))
    wrong = worst_z(ladder(), exact)
    print(f"{kind}: gibbs ladder worst |z| {worst:.2f}; wrong kernel {wrong:.1f}")
    assert worst < TOL < wrong


@pytest.mark.parametrize("kind", RUNS)
def test_tracked_runs_do_not_depend_on_threads(kind):
    settings, data = RUNS[kind]
    X = data()
    runs = [Trainer(5, method="cd", epochs=1, batch_size=30, seed=4, monitor_size=0,
                    progress=False, track_logz=True, track_every=5, threads=t,
                    **settings).fit(X) for t in (1, 2)]
    a, b = (m.meta["training"]["history"][-1]["tracked"] for m in runs)
    assert [r["log_Z"] for r in a] == [r["log_Z"] for r in b]


@pytest.mark.parametrize("kind", RUNS)
def test_an_interrupted_tracked_run_resumes_with_the_same_bits(kind, tmp_path):
    """The checkpoint keeps the last rung of every unit type whole (a Gaussian RBM's
    sigma, an SRBM's L), so the ladder continues as if never stopped."""
    settings, data = RUNS[kind]
    X = data()
    ck = tmp_path / "ck.npz"
    common = dict(method="cd", batch_size=30, seed=4, monitor_size=0, progress=False,
                  track_logz=True, track_every=5, **settings)
    interrupted_fit(Trainer(5, epochs=3, checkpoint=ck, **common), X)
    resumed = Trainer(5, epochs=3, checkpoint=ck, **common)
    resumed.fit(X, resume=True)
    straight = Trainer(5, epochs=3, **common)
    straight.fit(X)
    rungs = [r for record in straight.history for r in record["tracked"]]
    assert len(rungs) > 3
    assert [r for record in resumed.history for r in record["tracked"]] == rungs
    np.testing.assert_array_equal(resumed.model.W, straight.model.W)
