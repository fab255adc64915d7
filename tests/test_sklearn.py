"""cyrbm.sklearn.BernoulliRBM: scikit-learn's checks, its digits pipeline, ln p(v)."""
import pickle
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.base import clone                                       # noqa: E402
from sklearn.neural_network import BernoulliRBM as SkBernoulliRBM    # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import cyrbm                                                        # noqa: E402
from cyrbm.sklearn import BernoulliRBM                              # noqa: E402

from _commands import child_env                                     # noqa: E402

#: scikit-learn's checks feed data outside [0, 1] (blobs, 3 * uniform, iris shifted to 0);
#: a Bernoulli RBM's inputs are probabilities, and cyrbm refuses others with a ValueError
#: where scikit-learn's BernoulliRBM trains on them silently.  These checks fail on that
#: refusal before testing what they test; test_conventions_on_probabilities below checks
#: the same properties (fit returns self, clone, pickling, dtypes, Fortran order,
#: read-only memory maps, n_features_in_, idempotence, subset and order invariance) on data
#: in [0, 1].
_OUT_OF_RANGE = (
    "check_fit_score_takes_y check_estimators_overwrite_params check_dont_overwrite_parameters "
    "check_estimators_fit_returns_self check_readonly_memmap_input "
    "check_n_features_in_after_fitting check_estimators_dtypes check_pipeline_consistency "
    "check_estimators_pickle check_f_contiguous_array_estimator "
    "check_transformer_data_not_an_array check_transformer_general "
    "check_transformer_preserve_dtypes check_methods_sample_order_invariance "
    "check_methods_subset_invariance check_fit2d_1sample check_fit2d_1feature "
    "check_dict_unchanged check_fit_idempotent check_fit_check_is_fitted check_n_features_in "
    "check_fit2d_predict1d").split()


def _expected_failures(estimator):
    return {name: "its data lie outside [0, 1], which cyrbm refuses (a ValueError); "
                  "checked on probabilities in test_conventions_on_probabilities"
            for name in _OUT_OF_RANGE}


@parametrize_with_checks([BernoulliRBM(n_components=3, n_iter=2, batch_size=10,
                                       random_state=0)],
                         expected_failed_checks=_expected_failures)
def test_sklearn_checks(estimator, check):
    check(estimator)


def _probabilities(n=40, d=6, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).random((n, d)).astype(dtype)


def test_conventions_on_probabilities(tmp_path):
    """What the exempted checks test, on rows of probabilities."""
    X = _probabilities()
    est = BernoulliRBM(n_components=3, n_iter=2, batch_size=10, random_state=0)
    assert est.fit(X) is est and est.n_features_in_ == 6
    assert est.get_params() == clone(est).get_params() and not hasattr(clone(est), "components_")
    T = est.transform(X)
    assert T.shape == (40, 3) and T.dtype == np.float64
    again = BernoulliRBM(n_components=3, n_iter=2, batch_size=10, random_state=0).fit(X)
    np.testing.assert_array_equal(again.components_, est.components_)        # idempotent
    np.testing.assert_array_equal(est.fit(X).components_, again.components_)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.transform(X), T)
    np.testing.assert_allclose(est.transform(X[::-1])[::-1], T)             # order invariance
    np.testing.assert_allclose(est.transform(X[:7]), T[:7])                 # subsets
    # score_samples too (scikit-learn exempts its own from these two: its one-bit
    # pseudo-likelihood is random; ln p(v) is not)
    V = (X > 0.5).astype(np.float64)
    lp = est.score_samples(V)
    np.testing.assert_array_equal(est.score_samples(V[:7]), lp[:7])
    np.testing.assert_array_equal(est.score_samples(V[::-1])[::-1], lp)
    # float32 kept, Fortran order, read-only memory map, sparse CSR: the same fit
    est32 = clone(est).fit(X.astype(np.float32))
    assert est32.components_.dtype == np.float32
    assert est32.transform(X.astype(np.float32)).dtype == np.float32
    path = tmp_path / "x.npy"
    np.save(path, X)
    mapped = np.load(path, mmap_mode="r")
    import scipy.sparse as sp
    for variant in (np.asfortranarray(X), mapped, sp.csr_matrix(X)):
        np.testing.assert_array_equal(clone(est).fit(variant).components_, est.components_)
    with pytest.raises(ValueError, match="probabilities must lie in"):
        clone(est).fit(X * 3)
    with pytest.raises(ValueError, match="Negative values"):
        clone(est).fit(X - 0.5)
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :5])
    assert list(est.get_feature_names_out()) == ["bernoullirbm0", "bernoullirbm1", "bernoullirbm2"]


def test_probabilities_train_as_the_trainer_does():
    """Rows that are not 0/1 are probabilities: the same fit as
    Trainer.fit(probabilities=True); 0/1 rows the same as Trainer.fit on states."""
    X = _probabilities()
    est = BernoulliRBM(n_components=3, n_iter=2, batch_size=10, random_state=0,
                       momentum=0.5).fit(X)
    seed = int(np.random.RandomState(0).randint(2 ** 31 - 1))
    trainer = cyrbm.Trainer(3, method="pcd", epochs=2, batch_size=10, learning_rate=0.1,
                            momentum=0.5, weight_decay=0.0, seed=seed, dtype=np.float64,
                            monitor_size=0, progress=False)
    model = trainer.fit(X, probabilities=True)
    np.testing.assert_array_equal(est.components_, model.W.T)
    B = (X > 0.5).astype(np.float32)
    est = BernoulliRBM(n_components=3, n_iter=2, batch_size=10, random_state=0).fit(B)
    trainer = cyrbm.Trainer(3, method="pcd", epochs=2, batch_size=10, learning_rate=0.1,
                            momentum=0.0, weight_decay=0.0, seed=seed, dtype=np.float32,
                            monitor_size=0, progress=False)
    np.testing.assert_array_equal(est.components_, trainer.fit(B.astype(np.uint8)).W.T)


def test_partial_fit_continues_as_one_run():
    """A fit of one epoch and two partial_fit calls on the same rows equal one Trainer run
    of three epochs bit for bit: velocities, chains, streams and counts carry over."""
    X = (_probabilities(n=30) > 0.5).astype(np.float64)
    est = BernoulliRBM(n_components=4, n_iter=1, batch_size=10, random_state=1,
                       momentum=0.5, learning_rate=0.05)
    est.fit(X)
    est.partial_fit(X)
    est.partial_fit(X)
    seed = int(np.random.RandomState(1).randint(2 ** 31 - 1))
    common = dict(method="pcd", batch_size=10, learning_rate=0.05, momentum=0.5,
                  weight_decay=0.0, seed=seed, dtype=np.float64, monitor_size=0,
                  progress=False)
    model = cyrbm.Trainer(4, epochs=3, **common).fit(X.astype(np.uint8))
    np.testing.assert_array_equal(est.components_, model.W.T)
    # the same three epochs without the carried state differ (the check can fail)
    cold = cyrbm.Trainer(4, epochs=1, **common)
    m = cold.fit(X.astype(np.uint8))
    for _ in range(2):
        m = cyrbm.Trainer(4, epochs=1, **common).fit(X.astype(np.uint8), model=m)
    assert not np.array_equal(m.W, model.W)
    # partial_fit from scratch, and after from_model
    fresh = BernoulliRBM(n_components=4, batch_size=10, random_state=0).partial_fit(X)
    assert fresh.components_.shape == (4, 6)
    loaded = BernoulliRBM.from_model(est.to_model(), batch_size=10, random_state=0)
    before = loaded.components_.copy()
    assert not np.array_equal(loaded.partial_fit(X).components_, before)


def test_score_samples_is_the_exact_log_probability():
    """ln p(v) sums to 1 over every state; score is its mean; the pseudo-likelihood is
    the expectation of scikit-learn's one-bit estimate."""
    X = (_probabilities(n=50, d=5) > 0.5).astype(np.float64)
    est = BernoulliRBM(n_components=3, n_iter=5, batch_size=10, random_state=0).fit(X)
    states = ((np.arange(32)[:, None] >> np.arange(5)) & 1).astype(np.float64)
    lp = est.score_samples(states)
    assert abs(np.logaddexp.reduce(lp)) < 1e-9
    assert est.ais_result_ is None and np.isfinite(est.log_partition_)
    assert est.score(X) == pytest.approx(np.mean(est.score_samples(X)))
    # scikit-learn's score_samples flips one random bit i: D ln sigma(F(v^i) - F(v));
    # averaged over i it is sum_i ln p(v_i | v_-i)
    sk = SkBernoulliRBM(n_components=3)
    sk.components_, sk.intercept_hidden_ = est.components_, est.intercept_hidden_
    sk.intercept_visible_ = est.intercept_visible_
    F = sk._free_energy
    for v in X[:5]:
        flips = np.where(np.eye(5) == 1, 1 - v, v)
        expected = np.mean(-5 * np.logaddexp(0, -(F(flips) - F(v[None]))))
        assert est.pseudo_log_likelihood(v[None])[0] == pytest.approx(expected, rel=1e-10)
    with pytest.raises(ValueError, match="not binary"):
        est.score_samples(_probabilities(n=3, d=5))


def test_score_samples_by_ais_agrees_with_the_exact_answer():
    """Above the enumeration limit score_samples uses AIS and keeps its result; on a
    model small enough to check, ln Z-hat lies within 4 of its sigma-hat of the truth."""
    from cyrbm.estimators.annealing import EXACT_START_UNITS
    rng = np.random.default_rng(0)
    D, H = EXACT_START_UNITS + 1, EXACT_START_UNITS + 2
    model = cyrbm.RBM(0.3 * rng.standard_normal((D, H)), 0.1 * rng.standard_normal(D),
                      0.1 * rng.standard_normal(H))
    est = BernoulliRBM.from_model(model, ais_runs=50, ais_schedule="linear:500",
                                  random_state=0)
    v = (rng.random((4, D)) < 0.5).astype(np.float64)
    lp = est.score_samples(v)
    result = est.ais_result_
    truth = cyrbm.exact_log_partition(model)
    assert result is not None and result.log_Z == est.log_partition_
    lo, hi = result.log_Z_interval(4)
    assert lo <= truth <= hi and hi - lo < 0.5
    np.testing.assert_allclose(lp, model.log_unnormalized(v) - result.log_Z)


def test_gibbs_and_conversions():
    X = (_probabilities(n=20, d=6) > 0.5).astype(np.float64)
    est = BernoulliRBM(n_components=3, n_iter=1, batch_size=5, random_state=0).fit(X)
    assert est.h_samples_.shape == (5, 3) and set(np.unique(est.h_samples_)) <= {0.0, 1.0}
    v = est.gibbs(X)
    assert v.dtype == bool and v.shape == X.shape
    model = est.to_model()
    np.testing.assert_array_equal(model.W, est.components_.T)
    back = BernoulliRBM.from_model(model)
    np.testing.assert_array_equal(back.transform(X), est.transform(X))
    with pytest.raises(TypeError, match="cyrbm.RBM"):
        BernoulliRBM.from_model(est)


def test_digits_pipeline_accuracy_at_least_scikit_learns():
    """scikit-learn's example "Restricted Boltzmann Machine features for digit
    classification" (8x8 digits, min-max scaled, no nudging, 100 components, learning
    rate 0.06, 10 epochs, logistic regression with C = 6000 on the features) with each
    RBM: cyrbm's test accuracy, averaged over the seeds 0, 1, 2 (the same seeds for both),
    is at least scikit-learn's (measured: 0.7963 against 0.7935)."""
    from sklearn import datasets, linear_model
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import minmax_scale
    digits = datasets.load_digits()
    X = minmax_scale(np.asarray(digits.data, "float32"), feature_range=(0, 1))
    X_train, X_test, y_train, y_test = train_test_split(X, digits.target, test_size=0.2,
                                                        random_state=0)
    accuracy = {}
    for cls in (SkBernoulliRBM, BernoulliRBM):
        scores = []
        for seed in range(3):
            rbm = cls(n_components=100, learning_rate=0.06, n_iter=10, random_state=seed)
            logistic = linear_model.LogisticRegression(solver="newton-cg", tol=1e-2, C=6000)
            pipeline = Pipeline([("rbm", rbm), ("logistic", logistic)]).fit(X_train, y_train)
            scores.append(pipeline.score(X_test, y_test))
        accuracy[cls] = np.mean(scores)
    assert accuracy[BernoulliRBM] >= accuracy[SkBernoulliRBM] > 0.5, accuracy


def test_import_without_scikit_learn_names_the_extra(tmp_path):
    """cyrbm's core imports without scikit-learn; cyrbm.sklearn says which extra to install."""
    code = ("import sys; sys.modules['sklearn'] = None\n"
            "import cyrbm, cyrbm.models.rbm, cyrbm.training.trainer\n"
            "try:\n    import cyrbm.sklearn\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=child_env(), cwd=tmp_path).stdout.strip()
    assert out == ('cyrbm.sklearn needs scikit-learn 1.6 or later: install it with '
                   'pip install "cyrbm[sklearn]".')
