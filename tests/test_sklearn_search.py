"""cyrbm.sklearn in scikit-learn's model selection: GridSearchCV scored by held-out
ln p(v), and the digits pipeline (RBM features -> LogisticRegression)."""
import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.base import clone                                       # noqa: E402
from sklearn.datasets import load_digits                             # noqa: E402
from sklearn.linear_model import LogisticRegression                  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, train_test_split  # noqa: E402
from sklearn.neural_network import BernoulliRBM as SkBernoulliRBM    # noqa: E402
from sklearn.pipeline import Pipeline                                # noqa: E402
from sklearn.preprocessing import minmax_scale                       # noqa: E402

from cyrbm.sklearn import BernoulliRBM                              # noqa: E402

DIGITS = load_digits()
GREY = minmax_scale(DIGITS.data.astype(np.float32))                  # [0, 1]


def test_grid_search_by_held_out_log_probability():
    """GridSearchCV over n_components and learning_rate with the estimator's own score:
    each split's test score is the mean held-out ln p(v) of a fit on the other folds
    (checked by hand for one cell), and the best cell is the one of highest mean."""
    X = (GREY[:600] > 0.5).astype(np.float64)
    grid = {"n_components": [4, 12], "learning_rate": [0.01, 0.1]}
    cv = KFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(BernoulliRBM(n_iter=10, random_state=0), grid, cv=cv).fit(X)
    res = search.cv_results_
    assert search.best_index_ == int(np.argmax(res["mean_test_score"]))
    assert np.all(np.isfinite(res["mean_test_score"]))
    train, test = next(cv.split(X))
    cell = 3                                                  # the last cell of the grid
    est = clone(search.estimator).set_params(**res["params"][cell]).fit(X[train])
    assert res["split0_test_score"][cell] == pytest.approx(
        np.mean(est.score_samples(X[test])), rel=1e-12)
    # held-out ln p(v) separates the cells: 12 units trained at 0.1 beat 4 at 0.01
    assert res["params"][3] == {"learning_rate": 0.1, "n_components": 12}
    assert res["params"][0] == {"learning_rate": 0.01, "n_components": 4}
    assert res["mean_test_score"][3] > res["mean_test_score"][0] + 0.5
    assert search.best_estimator_.n_components == search.best_params_["n_components"]


def test_grid_search_and_pipeline_score_on_grey_digits():
    """The issue's complaint: an unsupervised GridSearchCV and a one-step Pipeline's
    score on the grey data the model was trained on run (they raised before)."""
    X = GREY[:300]
    search = GridSearchCV(BernoulliRBM(n_iter=2, random_state=0),
                          {"n_components": [4, 8]}, cv=2).fit(X)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    pipe = Pipeline([("rbm", BernoulliRBM(n_components=4, n_iter=2, random_state=0))]).fit(X)
    assert np.isfinite(pipe.score(X))


def test_digits_pipeline_accuracy_at_least_scikit_learns():
    """scikit-learn's example "Restricted Boltzmann Machine features for digit
    classification" (8x8 digits min-max scaled, RBM features -> LogisticRegression), made
    fast: 40 components, learning rate 0.06, 10 epochs, C = 10 (newton-cg).  cyrbm's test accuracy
    averaged over the seeds 0-4 (the same seeds for both) is at least scikit-learn's
    (measured: 0.8928 against 0.8883)."""
    X_train, X_test, y_train, y_test = train_test_split(GREY, DIGITS.target, test_size=0.2,
                                                        random_state=0)
    accuracy = {}
    for cls in (SkBernoulliRBM, BernoulliRBM):
        scores = []
        for seed in range(5):
            rbm = cls(n_components=40, learning_rate=0.06, n_iter=10, random_state=seed)
            logistic = LogisticRegression(C=10, solver="newton-cg")
            pipe = Pipeline([("rbm", rbm), ("logistic", logistic)])
            scores.append(pipe.fit(X_train, y_train).score(X_test, y_test))
        accuracy[cls.__module__] = float(np.mean(scores))
    assert accuracy["cyrbm.sklearn"] >= accuracy[SkBernoulliRBM.__module__] > 0.5, accuracy
