"""
Choosing an RBM's size by held-out ln p(v) with GridSearchCV
============================================================

:class:`cyrbm.sklearn.BernoulliRBM` is a scikit-learn estimator whose ``score`` is the
mean log-probability ln p(v) = -F(v) - ln Z of the rows it is given (SM08 Eq. 2-3; Z
summed exactly here, as every model has at most 20 hidden units).  So
``GridSearchCV`` with no ``scoring`` chooses ``n_components`` and ``learning_rate`` by
the held-out ln p(v) of its folds: a likelihood, comparable across model sizes, which
scikit-learn's stochastic pseudo-likelihood is not.  The data are scikit-learn's 8 x 8
digits scaled to [0, 1] and thresholded at 0.5.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, KFold

from cyrbm.sklearn import BernoulliRBM

X = (load_digits().data / 16.0 > 0.5).astype(np.float64)
grid = {"n_components": [4, 8, 16], "learning_rate": [0.01, 0.05, 0.2]}
search = GridSearchCV(BernoulliRBM(n_iter=5, random_state=0), grid,
                      cv=KFold(3, shuffle=True, random_state=0)).fit(X)
print("best:", search.best_params_, f"held-out ln p(v) = {search.best_score_:.2f} nats")

scores = search.cv_results_["mean_test_score"].reshape(len(grid["n_components"]),
                                                       len(grid["learning_rate"]))
fig, ax = plt.subplots(figsize=(5, 3.6))
for row, n in zip(scores, grid["n_components"]):
    ax.plot(grid["learning_rate"], row, "o-", label=f"{n} hidden units")
ax.set_xscale("log")
ax.set_xlabel("learning rate")
ax.set_ylabel("mean held-out ln p(v) (nats)")
ax.set_title("GridSearchCV on the digits, 3 folds")
ax.legend()
plt.tight_layout()
