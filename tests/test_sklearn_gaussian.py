"""cyrbm.sklearn.GaussianRBM: real-valued data, ln p(v) a density (exact ln Z or AIS).
scikit-learn's checks run for it in test_sklearn.py."""
import numpy as np
import pytest

pytest.importorskip("sklearn")

import scipy.sparse as sp                                            # noqa: E402
from sklearn.pipeline import make_pipeline                          # noqa: E402
from sklearn.preprocessing import StandardScaler                    # noqa: E402

import cyrbm                                                        # noqa: E402
from cyrbm.models.exact import EXACT_START_UNITS                    # noqa: E402
from cyrbm.sklearn import GaussianRBM                               # noqa: E402


def _data(n=300, d=2, seed=0):
    """Two correlated clusters, standardised."""
    rng = np.random.default_rng(seed)
    centre = np.where(rng.random(n) < 0.5, -1.5, 1.5)[:, None]
    X = centre + 0.6 * rng.standard_normal((n, d))
    return (X - X.mean(0)) / X.std(0)


def test_score_samples_is_a_density_that_integrates_to_one():
    """exp(score_samples) over a grid of [-10, 10]^2 (step 0.04, the midpoint rule)
    integrates to 1 within 1e-4 (a ln Z off by 1e-3 moves it by 1e-3: it would fail)."""
    X = _data()
    est = GaussianRBM(n_components=4, n_iter=20, learning_rate=0.1, random_state=0).fit(X)
    g = np.arange(-10, 10, 0.04) + 0.02
    grid = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    mass = float(np.sum(np.exp(est.score_samples(grid))) * 0.04 ** 2)
    assert est.ais_result_ is None
    assert abs(mass - 1) < 1e-4, mass
    # the training made the density fit: higher on the data than the fresh model's
    fresh = GaussianRBM.from_model(cyrbm.GaussianRBM.random(2, 4, seed=0))
    assert est.score(X) > fresh.score(X) + 0.1


def test_score_samples_by_ais_above_the_enumeration_limit():
    """n_components > EXACT_START_UNITS: ln Z by AIS (kept as ais_result_); on a model
    still small enough to enumerate with a raised limit, ln Z-hat lies within 4
    sigma-hat of the truth, in an interval narrower than 0.5 nats."""
    rng = np.random.default_rng(1)
    D, H = 3, EXACT_START_UNITS + 1
    model = cyrbm.GaussianRBM(0.2 * rng.standard_normal((D, H)), 0.1 * rng.standard_normal(D),
                              0.1 * rng.standard_normal(H))
    est = GaussianRBM.from_model(model, ais_runs=50, ais_schedule="linear:500",
                                 random_state=0)
    X = rng.standard_normal((5, D))
    lp = est.score_samples(X)
    result = est.ais_result_
    truth = model.log_partition(max_units=H)
    assert result is not None and result.log_Z == est.log_partition_
    lo, hi = result.log_Z_interval(4)
    assert lo <= truth <= hi and hi - lo < 0.5
    np.testing.assert_allclose(lp, model.log_unnormalized(X) - result.log_Z)


def test_trains_as_the_trainer_does_and_takes_every_input_form():
    """The fit is Trainer(visible="gaussian").fit bit for bit; lists, CSR, float32
    (kept) and integers give the same answers as the dense array."""
    X = _data(n=60, d=3)
    est = GaussianRBM(n_components=3, n_iter=2, random_state=0).fit(X)
    seed = int(np.random.RandomState(0).randint(2 ** 31 - 1))
    trainer = cyrbm.Trainer(3, method="cd", epochs=2, batch_size=10, learning_rate=0.01,
                            momentum=0.0, weight_decay=0.0, seed=seed, dtype=np.float64,
                            monitor_size=0, progress=False, visible="gaussian")
    np.testing.assert_array_equal(est.components_, trainer.fit(X).W.T)
    for data in (X.tolist(), sp.csr_matrix(X)):
        other = GaussianRBM(n_components=3, n_iter=2, random_state=0).fit(data)
        np.testing.assert_array_equal(other.components_, est.components_)
        np.testing.assert_array_equal(other.score_samples(data), est.score_samples(X))
    est32 = GaussianRBM(n_components=3, n_iter=2, random_state=0).fit(X.astype(np.float32))
    assert est32.transform(X.astype(np.float32)).dtype == np.float32
    Xi = np.round(X * 3).astype(int)
    with pytest.warns(UserWarning, match="variances 9.02 times sigma"):     # not scaled
        Xt = GaussianRBM(n_components=3, n_iter=2, random_state=0).fit_transform(Xi)
    assert Xt.dtype == np.float64
    with pytest.raises(ValueError, match="NaN"):
        est.score_samples(np.where(np.eye(3) == 1, np.nan, 0.0))


def test_learned_sigma_and_pipeline():
    """learn_sigma fits one sigma per unit (sigma_), used by score_samples; behind a
    StandardScaler in a Pipeline, score is the mean ln p of the scaled rows."""
    rng = np.random.default_rng(2)
    raw = rng.standard_normal((200, 2)) * [3.0, 0.5] + [10.0, -4.0]
    pipe = make_pipeline(StandardScaler(), GaussianRBM(n_components=2, n_iter=5,
                                                       learn_sigma=True, random_state=0))
    pipe.fit(raw)
    rbm = pipe[-1]
    assert rbm.sigma_.shape == (2,) and not np.all(rbm.sigma_ == 1.0)
    scaled = pipe[0].transform(raw)
    assert pipe.score(raw) == pytest.approx(np.mean(rbm.to_model().log_prob(scaled)), rel=1e-12)
