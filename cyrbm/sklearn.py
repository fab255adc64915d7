"""scikit-learn estimators on cyrbm: ``BernoulliRBM``, a drop-in for
``sklearn.neural_network.BernoulliRBM`` that trains with cyrbm's kernels and whose
``score_samples`` is ln p(v).

The parameters, fitted attributes and methods are scikit-learn's (``n_components``,
``learning_rate``, ``batch_size``, ``n_iter``, ``verbose``, ``random_state``;
``components_``, ``intercept_hidden_``, ``intercept_visible_``, ``h_samples_``;
``fit``, ``partial_fit``, ``transform``, ``gibbs``, ``score_samples``), with its
defaults: PCD-1 (SML) without momentum or weight decay.  The differences:

- ``score_samples(X)`` is ln p(v) = ln p*(v) - ln Z (SM08 Eq. 2-3): Z exactly when the
  smaller layer has at most ``EXACT_START_UNITS`` units, else by AIS from a base-rate
  model (SM08 Eq. 13-18), kept as ``ais_result_`` with its error.  scikit-learn's is a
  one-bit stochastic pseudo-likelihood; its expectation, the exact pseudo-log-likelihood
  ``sum_i ln p(v_i | v_-i)``, is ``pseudo_log_likelihood(X)``.
- Rows that are not 0/1 are probabilities in [0, 1] (as scikit-learn's positive phase
  uses them): trained by ``Trainer.fit(probabilities=True)``; values outside [0, 1] are
  refused with a ValueError.

Needs scikit-learn (``pip install "cyrbm[sklearn]"``); ``import cyrbm`` does not.
"""
import zlib

import numpy as np

try:
    import scipy.sparse as _sparse
    from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.utils import check_random_state
    from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data
except ImportError:
    raise ImportError("cyrbm.sklearn needs scikit-learn 1.6 or later: install it with "
                      "pip install \"cyrbm[sklearn]\".") from None

from cyrbm._validation import check_binary, check_probabilities
from cyrbm.estimators.annealing import (EXACT_START_UNITS, Annealer, base_rate_biases,
                             exact_log_partition)
from cyrbm.models.rbm import RBM, as_rbm
from cyrbm.training.trainer import Trainer

__all__ = ["BernoulliRBM"]

_SEED_LIMIT = 2 ** 31 - 1


class BernoulliRBM(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Bernoulli Restricted Boltzmann Machine, scikit-learn's interface on cyrbm.

    Trains by PCD-k (SML; Tieleman 2008, SM08 Eq. 7) or CD-k, PT or AMH with
    :class:`cyrbm.Trainer`; ``score_samples`` is the log-probability ln p(v) (SM08 Eq. 2-3,
    AIS Eq. 13-18 when Z cannot be summed).

    Parameters
    ----------
    n_components : int
        Hidden units.
    learning_rate : float
        eta of the updates (the gradient is averaged over a mini-batch, as scikit-learn).
    batch_size : int
        Rows per update.  A last, short mini-batch is completed with rows from the start
        of the epoch's permutation (cyrbm.Trainer).
    n_iter : int
        Epochs.
    verbose : int
        Print each epoch's exact pseudo-log-likelihood (on a fixed subset of rows).
    random_state : None, int or RandomState
        As scikit-learn: an int gives the same fit every time.  It draws the seed of
        cyrbm's streams (initial weights, mini-batch order, chains) and of AIS.
    method : {"pcd", "cd", "pt", "amh"}
        cyrbm.Trainer's sampler; "pcd" is scikit-learn's.
    k : int or str
        Gibbs sweeps per update ("1:25" raises k during training).
    momentum, weight_decay : float
        cyrbm.Trainer's; 0 is scikit-learn's.
    ais_runs : int
        AIS runs when Z cannot be enumerated.
    ais_schedule : str or array
        AIS betas (cyrbm.estimators.schedules; "paper": SM08's 14,500).
    threads : int or None
        OpenMP threads (results do not depend on them).

    Attributes
    ----------
    components_ : array (n_components, n_features)
        W^T.
    intercept_hidden_, intercept_visible_ : arrays
        Hidden biases a and visible biases b.
    h_samples_ : array (batch_size, n_components)
        Hidden states drawn from p(h | v) at the visible states of the training chains
        (the persistent chains of PCD and AMH; for CD and PT, which keep none, the last
        ``batch_size`` rows of the data, drawn as states).
    n_features_in_, feature_names_in_ : as scikit-learn.
    log_partition_ : float
        ln Z used by the last ``score_samples``: exact, or the AIS estimate.
    ais_result_ : AISResult or None
        The AIS estimate behind ``log_partition_`` (its ``log_Z_interval``, ``ess``), or
        None when Z was summed exactly.
    """

    def __init__(self, n_components=256, *, learning_rate=0.1, batch_size=10, n_iter=10,
                 verbose=0, random_state=None, method="pcd", k=1, momentum=0.0,
                 weight_decay=0.0, ais_runs=100, ais_schedule="paper", threads=None):
        self.n_components = n_components
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.n_iter = n_iter
        self.verbose = verbose
        self.random_state = random_state
        self.method = method
        self.k = k
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.ais_runs = ais_runs
        self.ais_schedule = ais_schedule
        self.threads = threads

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # ----------------------------------------------------------------- input
    def _checked(self, X, reset, binary=False):
        """X validated as scikit-learn does (sparse CSR, float32/64, features), then as
        cyrbm does: dense rows of probabilities in [0, 1], or 0/1 with ``binary``."""
        X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32),
                          reset=reset)
        if _sparse.issparse(X):
            X = X.toarray()
        check_non_negative(X, type(self).__name__)       # scikit-learn's own message
        if binary:
            check_binary(X, name="X")
        elif X.size and X.max() > 1:
            check_probabilities(X, name="X")        # names the first value above 1
        return X

    # -------------------------------------------------------------- training
    def _trainer(self, dtype, epochs, seed):
        callback = None
        if self.verbose:
            def callback(record):
                print(f"[{type(self).__name__}] Iteration {record['epoch']}, "
                      f"pseudo-likelihood = {record['pseudo_log_likelihood']:.2f}, "
                      f"time = {record['seconds']:.2f}s")
        return Trainer(self.n_components, method=self.method, k=self.k, epochs=epochs,
                       batch_size=self.batch_size, learning_rate=self.learning_rate,
                       momentum=self.momentum, weight_decay=self.weight_decay, seed=seed,
                       threads=self.threads, dtype=dtype,
                       monitor_size="auto" if self.verbose else 0, progress=False,
                       callback=callback)

    def _train(self, X, *, warm_start):
        """One Trainer run on X (0/1 rows as states, others as probabilities)."""
        binary = bool(np.all((X == 0) | (X == 1)))
        data = X.astype(np.uint8) if binary else X
        trainer = self._cyrbm_trainer
        trainer.fit(data, probabilities=not binary, warm_start=warm_start,
                    model=self.to_model() if hasattr(self, "components_") else None)
        model = trainer.model
        self.components_ = model.W.T
        self.intercept_hidden_ = model.hbias
        self.intercept_visible_ = model.vbias
        self._n_features_out = model.n_hidden
        if not hasattr(self, "_base_rate"):
            rows = data if binary else self._rng.random_sample(X.shape) < X
            self._base_rate = base_rate_biases(rows)
        self.h_samples_ = self._hidden_samples(trainer, data, binary)
        return self

    def _hidden_samples(self, trainer, data, binary):
        """h ~ p(h | v) at the training chains' visible states (PCD, AMH), or at the last
        ``batch_size`` rows of the data (CD and PT keep no such chains)."""
        v = trainer._state.get("chains")
        if v is None:
            v = data[-self.batch_size:]
            if not binary:
                v = self._rng.random_sample(v.shape) < v
        p = self.to_model().hidden_probs(v, probabilities=True)
        return (self._rng.random_sample(p.shape) < p).astype(p.dtype)

    def fit(self, X, y=None):
        """Train on X (n_samples, n_features) for ``n_iter`` epochs from fresh weights."""
        X = self._checked(X, reset=True)
        for name in ("components_", "_base_rate", "log_partition_", "ais_result_", "_scored"):
            self.__dict__.pop(name, None)
        self._rng = check_random_state(self.random_state)
        self._cyrbm_trainer = self._trainer(X.dtype, self.n_iter,
                                            int(self._rng.randint(_SEED_LIMIT)))
        return self._train(X, warm_start=False)

    def partial_fit(self, X, y=None):
        """One epoch over X in mini-batches of ``batch_size``, continuing the last fit
        (its velocities, persistent chains and random streams) or starting one."""
        first = not hasattr(self, "components_")
        X = self._checked(X, reset=first)
        if not hasattr(self, "_rng"):
            self._rng = check_random_state(self.random_state)
        trainer = getattr(self, "_cyrbm_trainer", None)
        warm = trainer is not None and trainer._state is not None
        if warm:
            trainer.epochs = 1
            trainer.learning_rate, trainer.momentum = self.learning_rate, self.momentum
            trainer.weight_decay = self.weight_decay
        else:
            dtype = self.components_.dtype if not first else X.dtype
            self._cyrbm_trainer = self._trainer(dtype, 1, int(self._rng.randint(_SEED_LIMIT)))
        return self._train(X, warm_start=warm)

    # ------------------------------------------------------------- the model
    def to_model(self):
        """The fitted parameters as a :class:`cyrbm.RBM` (W = ``components_.T``)."""
        check_is_fitted(self, "components_")
        return RBM(self.components_.T, self.intercept_visible_, self.intercept_hidden_,
                   dtype=self.components_.dtype)

    @classmethod
    def from_model(cls, model, **params):
        """An estimator fitted to the parameters of ``model`` (a cyrbm.RBM); ``params``
        are the estimator's other parameters (``partial_fit`` continues training)."""
        model = as_rbm(model)
        est = cls(n_components=model.n_hidden, **params)
        est.components_ = np.array(model.W.T)
        est.intercept_hidden_ = np.array(model.hbias)
        est.intercept_visible_ = np.array(model.vbias)
        est.n_features_in_ = model.n_visible
        est._n_features_out = model.n_hidden
        return est

    # --------------------------------------------------------------- methods
    def transform(self, X):
        """p(h = 1 | v) for each row (SM08 Eq. 5), rows of X as probabilities."""
        check_is_fitted(self)
        X = self._checked(X, reset=False)
        return self.to_model().hidden_probs(X, probabilities=True)

    def gibbs(self, v):
        """One block-Gibbs step from v: h ~ p(h | v), then v' ~ p(v | h) (a bool array)."""
        check_is_fitted(self)
        v = self._checked(v, reset=False)
        if not hasattr(self, "random_state_"):
            self.random_state_ = check_random_state(self.random_state)
        rng = self.random_state_
        model = self.to_model()
        p = model.hidden_probs(v, probabilities=True)
        h = (rng.uniform(size=p.shape) < p).astype(p.dtype)
        p = model.visible_probs(h)
        return rng.uniform(size=p.shape) < p

    def score_samples(self, X):
        """ln p(v) of each 0/1 row (SM08 Eq. 2-3): ln p*(v) - ln Z, Z exact when the
        smaller layer has at most ``EXACT_START_UNITS`` units, else by AIS (kept as
        ``ais_result_``).  scikit-learn's BernoulliRBM returns a pseudo-likelihood here;
        that is :meth:`pseudo_log_likelihood`."""
        check_is_fitted(self)
        X = self._checked(X, reset=False, binary=True)
        model = self.to_model()
        return model.log_unnormalized(X, threads=self.threads) - self._log_partition(model)

    def score(self, X, y=None):
        """Mean ln p(v) over the rows of X (nats)."""
        return float(np.mean(self.score_samples(X)))

    def pseudo_log_likelihood(self, X):
        """``sum_i ln p(v_i | v_-i)`` of each 0/1 row, exactly (every bit, no sampling): the
        expectation of scikit-learn's ``score_samples``, which flips one random bit."""
        check_is_fitted(self)
        X = self._checked(X, reset=False, binary=True)
        return self.to_model().pseudo_log_likelihood(X, threads=self.threads)

    def _log_partition(self, model):
        """ln Z of the fitted parameters, computed once for each set of them."""
        key = tuple(zlib.crc32(np.ascontiguousarray(a).tobytes())
                    for a in (model.W, model.vbias, model.hbias))
        if getattr(self, "_scored", None) == key:
            return self.log_partition_
        if min(model.n_visible, model.n_hidden) <= EXACT_START_UNITS:
            self.ais_result_ = None
            self.log_partition_ = exact_log_partition(model, threads=self.threads)
        else:
            seed = int(check_random_state(self.random_state).randint(_SEED_LIMIT))
            result = Annealer(self.ais_runs, self.ais_schedule, seed=seed,
                              threads=self.threads, progress=False).log_partition(
                model, base_rate=getattr(self, "_base_rate", None))
            if result.weight_warning:
                import warnings
                warnings.warn(result.weight_warning, ConvergenceWarning, stacklevel=3)
            self.ais_result_ = result
            self.log_partition_ = result.log_Z
        self._scored = key
        return self.log_partition_
