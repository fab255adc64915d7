"""scikit-learn estimators on cyrbm: ``BernoulliRBM``, a drop-in for
``sklearn.neural_network.BernoulliRBM``, and ``GaussianRBM`` for real-valued data; both
train with cyrbm's kernels and their ``score_samples`` is ln p(v).

The parameters, fitted attributes and methods are scikit-learn's (``n_components``,
``learning_rate``, ``batch_size``, ``n_iter``, ``verbose``, ``random_state``;
``components_``, ``intercept_hidden_``, ``intercept_visible_``, ``h_samples_``;
``fit``, ``partial_fit``, ``transform``, ``gibbs``, ``score_samples``), with its
defaults: PCD-1 (SML) without momentum or weight decay.  Input is checked by
scikit-learn's own ``validate_data``: dense or sparse (CSR, CSC, ...; densified), lists,
float32 (kept), float64 and integer dtypes (cast to float64).  The differences:

- ``score_samples(X)`` is ln p(v) = ln p*(v) - ln Z (SM08 Eq. 2-3): Z exactly when the
  layer the model enumerates (an RBM's smaller one, a Gaussian RBM's hidden one) has at
  most ``EXACT_START_UNITS`` (20) units, else by AIS (SM08 Eq. 13-18), kept as
  ``ais_result_`` with its error.  scikit-learn's is a one-bit stochastic
  pseudo-likelihood; its expectation, the exact pseudo-log-likelihood
  ``sum_i ln p(v_i | v_-i)``, is ``pseudo_log_likelihood(X)``.
- BernoulliRBM: values in [0, 1] that are not 0/1 are probabilities (as scikit-learn's
  positive phase uses them), trained by ``Trainer.fit(probabilities=True)``; negative
  values are refused (ValueError, scikit-learn's sentence for estimators of non-negative
  data) and values above 1 are read as 1, with a :class:`ValuesAboveOneWarning`, by every
  method alike.

Needs scikit-learn (``pip install "cyrbm[sklearn]"``); ``import cyrbm`` does not.
"""
import warnings
import zlib

import numpy as np

try:
    import scipy.sparse as _sparse
    from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
    from sklearn.exceptions import ConvergenceWarning, DataConversionWarning
    from sklearn.utils import check_random_state
    from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data
except ImportError:
    raise ImportError("cyrbm.sklearn needs scikit-learn 1.6 or later: install it with "
                      "pip install \"cyrbm[sklearn]\".") from None

from cyrbm._validation import check_binary
from cyrbm.estimators.annealing import Annealer, base_rate_biases
from cyrbm.models.exact import EXACT_START_UNITS, exact_log_partition
from cyrbm.models.gaussian import GaussianRBM as _GaussianModel
from cyrbm.models.rbm import RBM, as_rbm
from cyrbm.training.trainer import Trainer

__all__ = ["BernoulliRBM", "GaussianRBM", "ValuesAboveOneWarning"]

_SEED_LIMIT = 2 ** 31 - 1


def _keep_parameters(estimator, arguments):
    """Store each ``__init__`` argument unchanged under its own name (scikit-learn's
    convention: no validation in ``__init__``)."""
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


class ValuesAboveOneWarning(DataConversionWarning):
    """BernoulliRBM was given values above 1 and reads them as 1 (probabilities)."""


class _RBMEstimator(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """What both estimators share: training by :class:`cyrbm.Trainer`, ``partial_fit``
    continuing it, ``transform`` = p(h = 1 | v), ``score_samples`` = ln p(v) with ln Z
    exact or by AIS.  A subclass checks its input and converts to and from its model."""

    #: Trainer settings of the subclass's unit type
    _trainer_settings = {}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _validated(self, X, reset):
        """X through scikit-learn's validate_data (2-D, finite, float32 kept, else
        float64; feature count and names), densified."""
        X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype=(np.float64, np.float32),
                          reset=reset)
        return X.toarray() if _sparse.issparse(X) else X

    # -------------------------------------------------------------- training
    def _print_epoch(self, record):
        """``verbose``: scikit-learn's line for one epoch of training's history."""
        pll = record.get("pseudo_log_likelihood")
        pll = "nan" if pll is None else f"{pll:.2f}"
        print(f"[{type(self).__name__}] Iteration {record['epoch']}, "
              f"pseudo-likelihood = {pll}, time = {record['seconds']:.2f}s")

    def _trainer(self, dtype, epochs, seed):
        callback = self._print_epoch if self.verbose else None
        return Trainer(self.n_components, method=self.method, k=self.k, epochs=epochs,
                       batch_size=self.batch_size, learning_rate=self.learning_rate,
                       momentum=self.momentum, weight_decay=self.weight_decay, seed=seed,
                       threads=self.threads, dtype=dtype,
                       monitor_size="auto" if self.verbose else 0, progress=False,
                       callback=callback, **self._trainer_settings)

    def _train(self, X, *, warm_start):
        """One Trainer run on checked rows X, then the fitted attributes."""
        data, options = self._training_data(X)
        trainer = self._cyrbm_trainer
        trainer.fit(data, warm_start=warm_start, **options,
                    model=self.to_model() if hasattr(self, "components_") else None)
        self._set_parameters(trainer.model)
        if not hasattr(self, "_base_rate"):
            self._base_rate = self._fit_base(data)
        self.h_samples_ = self._hidden_samples(trainer, data)
        return self

    def _set_parameters(self, model):
        self.components_ = model.W.T
        self.intercept_hidden_ = model.hbias
        self.intercept_visible_ = model.vbias
        self._n_features_out = model.n_hidden

    def _hidden_samples(self, trainer, data):
        """h ~ p(h | v) at the training chains' visible states (persistent chains), or at
        the last ``batch_size`` rows of the data (CD and PT keep no such chains)."""
        v = trainer._state.get("chains")
        if v is None:
            v = self._chain_rows(data[-self.batch_size:])
        p = self.to_model().hidden_probs(v, probabilities=True)
        return (self._rng.random_sample(p.shape) < p).astype(p.dtype)

    def fit(self, X, y=None):
        """Train on X (n_samples, n_features) for ``n_iter`` epochs from fresh weights."""
        X = self._checked(X, reset=True)
        for name in ("components_", "_base_rate", "log_partition_", "ais_result_", "_scored",
                     "random_state_"):
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

    # --------------------------------------------------------------- methods
    def transform(self, X):
        """p(h = 1 | v) for each row (SM08 Eq. 5), in the fitted dtype."""
        check_is_fitted(self)
        X = self._checked(X, reset=False)
        model = self.to_model()
        return model.hidden_probs(X, probabilities=True).astype(model.dtype, copy=False)

    def score_samples(self, X):
        """ln p(v) = -F(v) - ln Z of each row (SM08 Eq. 2-3), float64; see the class."""
        check_is_fitted(self)
        X = self._checked(X, reset=False)
        model = self.to_model()
        return self._log_unnormalized(model, X) - self._log_partition(model)

    def score(self, X, y=None):
        """Mean ``score_samples`` over the rows of X (nats): held-out ln p(v) for
        GridSearchCV without a scoring."""
        return float(np.mean(self.score_samples(X)))

    def pseudo_log_likelihood(self, X):
        """``sum_i ln p(v_i | v_-i)`` of each row, exactly (every unit, no sampling)."""
        check_is_fitted(self)
        X = self._checked(X, reset=False)
        return self.to_model().pseudo_log_likelihood(self._state_rows(X), threads=self.threads)

    def _log_partition(self, model):
        """ln Z of the fitted parameters, computed once for each set of them: exact when
        the model's enumerated layer has at most EXACT_START_UNITS units, else AIS from
        the base fitted to the training data, seeded by ``random_state``."""
        key = tuple(zlib.crc32(np.ascontiguousarray(a).tobytes())
                    for a in model._parameters().values())
        if getattr(self, "_scored", None) == key:
            return self.log_partition_
        if model.exact_layer()[1] <= EXACT_START_UNITS:
            self.ais_result_ = None
            self.log_partition_ = exact_log_partition(model, threads=self.threads)
        else:
            seed = int(check_random_state(self.random_state).randint(_SEED_LIMIT))
            result = Annealer(self.ais_runs, self.ais_schedule, seed=seed,
                              threads=self.threads, progress=False).log_partition(
                model, base_rate=getattr(self, "_base_rate", None))
            if result.weight_warning:
                warnings.warn(result.weight_warning, ConvergenceWarning, stacklevel=3)
            self.ais_result_ = result
            self.log_partition_ = result.log_Z
        self._scored = key
        return self.log_partition_


_COMMON_PARAMETERS = """    n_components : int
        Hidden units.
    learning_rate : float
        eta of the updates (the gradient is averaged over a mini-batch, as scikit-learn).
    batch_size : int
        Rows per update.  A last, short mini-batch is completed with rows from the start
        of the epoch's permutation (cyrbm.Trainer).
    n_iter : int
        Epochs.
    verbose : int
        Print each epoch's line "[Name] Iteration i, pseudo-likelihood = ..., time = ...s"
        (the exact pseudo-log-likelihood on a fixed subset of rows).
    random_state : None, int or RandomState
        As scikit-learn: an int gives the same fit, transform and scores every time (for
        any number of threads).  It draws the seed of cyrbm's streams (initial weights,
        mini-batch order, chains) and of AIS.
    k : int or str
        Gibbs sweeps per update ("1:25" raises k during training).
    momentum, weight_decay : float
        cyrbm.Trainer's.
    ais_runs : int
        AIS runs when Z cannot be enumerated.
    ais_schedule : str or array
        AIS betas (cyrbm.estimators.schedules; "paper": SM08's 14,500).
    threads : int or None
        OpenMP threads (results do not depend on them)."""

_COMMON_ATTRIBUTES = """    components_ : array (n_components, n_features)
        W^T.
    intercept_hidden_, intercept_visible_ : arrays
        Hidden biases c and visible biases b.
    h_samples_ : array (batch_size, n_components)
        Hidden states drawn from p(h | v) at the visible states of the training chains
        (the persistent chains of PCD and AMH; for CD and PT, which keep none, the last
        ``batch_size`` rows of the data).
    n_features_in_, feature_names_in_ : as scikit-learn.
    log_partition_ : float
        ln Z used by the last ``score_samples``: exact, or the AIS estimate.
    ais_result_ : AISResult or None
        The AIS estimate behind ``log_partition_`` (its ``log_Z_interval``, ``ess``), or
        None when Z was summed exactly."""


class BernoulliRBM(_RBMEstimator):
    __doc__ = f"""Bernoulli Restricted Boltzmann Machine, scikit-learn's interface on cyrbm.

    Trains by PCD-k (SML; Tieleman 2008, SM08 Eq. 7) or CD-k, PT or AMH with
    :class:`cyrbm.Trainer`; ``transform`` is p(h = 1 | v) (SM08 Eq. 5).

    ``score_samples`` is -F(v) - ln Z with the free energy
    F(v) = -b.v - sum_j softplus(c_j + sum_i W_ij v_i) (SM08 Eq. 2 with h summed out) and
    Z exact (at most ``EXACT_START_UNITS`` = 20 units in the smaller layer) or by AIS
    from the base-rate model fitted to the training data (SM08 Eq. 13-18, kept as
    ``ais_result_``).  On 0/1 rows it is ln p(v).  On rows of probabilities in [0, 1] it
    is the same formula at v = the probabilities: not a log-probability of anything, but
    what the model's energy says of the mean-field input (the input ``transform`` and
    training use); it lies between the values at the 0/1 rows it interpolates only
    roughly.  Values above 1 are read as 1 (a :class:`ValuesAboveOneWarning`) and
    negative values refused (ValueError) by every method alike.

    Parameters
    ----------
{_COMMON_PARAMETERS}
    method : {{"pcd", "cd", "pt", "amh"}}
        cyrbm.Trainer's sampler; "pcd" is scikit-learn's.

    Attributes
    ----------
{_COMMON_ATTRIBUTES}
    """

    def __init__(self, n_components=256, *, learning_rate=0.1, batch_size=10, n_iter=10,
                 verbose=0, random_state=None, method="pcd", k=1, momentum=0.0,
                 weight_decay=0.0, ais_runs=100, ais_schedule="paper", threads=None):
        _keep_parameters(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        return tags

    def _checked(self, X, reset):
        """Validated rows (``_validated``): negative values refused with scikit-learn's
        sentence, values above 1 read as 1 with a warning."""
        X = self._validated(X, reset)
        check_non_negative(X, type(self).__name__)
        if X.size and X.max() > 1:
            n = int(np.count_nonzero(X > 1))
            warnings.warn(f"X holds {n} values above 1 (the largest {float(X.max()):g}); "
                          f"{type(self).__name__} reads each value as the probability "
                          f"that its unit is on, so they are read as 1.",
                          ValuesAboveOneWarning, stacklevel=3)
            X = np.minimum(X, np.array(1, dtype=X.dtype))
        return X

    # cyrbm's RBM takes 0/1 rows as states and other rows of [0, 1] as probabilities
    @staticmethod
    def _binary_rows(X):
        return np.all((X == 0) | (X == 1), axis=1)

    def _training_data(self, X):
        if self._binary_rows(X).all():
            return X.astype(np.uint8), {}
        return X, {"probabilities": True}

    def _fit_base(self, data):
        """Base-rate visible biases (SM08 Sec. 5) of the training rows (a Bernoulli draw
        of rows of probabilities)."""
        return base_rate_biases(self._chain_rows(data))

    def _chain_rows(self, rows):
        if rows.dtype == np.uint8:
            return rows
        return (self._rng.random_sample(rows.shape) < rows).astype(np.uint8)

    def _state_rows(self, X):
        """0/1 rows as states; the pseudo-likelihood is of binary data."""
        return check_binary(X, name="X")

    def _log_unnormalized(self, model, X):
        """-F(v) of each row: the kernel on 0/1 rows, the same formula in float64 NumPy on
        rows of probabilities (each row's value depends on that row alone)."""
        out = np.empty(X.shape[0])
        binary = self._binary_rows(X)
        if binary.any():
            out[binary] = model.log_unnormalized(X[binary].astype(np.uint8),
                                                 threads=self.threads)
        if not binary.all():
            v = X[~binary].astype(np.float64)
            W = model.W.astype(np.float64)
            out[~binary] = v @ model.vbias.astype(np.float64) + np.sum(
                np.logaddexp(0.0, v @ W + model.hbias.astype(np.float64)), axis=1)
        return out

    def gibbs(self, v):
        """One block-Gibbs step from v: h ~ p(h | v), then v' ~ p(v | h) (a bool array);
        consecutive calls continue one random stream (``random_state_``)."""
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

    def pseudo_log_likelihood(self, X):
        """``sum_i ln p(v_i | v_-i)`` of each 0/1 row, exactly (every bit, no sampling): the
        expectation of scikit-learn's ``score_samples``, which flips one random bit."""
        return super().pseudo_log_likelihood(X)

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
        est._set_parameters(model.copy())
        est.n_features_in_ = model.n_visible
        return est


class GaussianRBM(_RBMEstimator):
    __doc__ = f"""RBM with Gaussian visible units of fixed standard deviation ``sigma``
    and binary hidden units (MS09 Sec. 5.2), scikit-learn's interface on
    :class:`cyrbm.GaussianRBM`, for real-valued data (standardise it first, e.g. with
    ``StandardScaler``, or whiten it: sigma = 1 suits unit variance).

    Trains by CD-k (default CD-1), PCD-k or PT with :class:`cyrbm.Trainer`
    (``visible="gaussian"``); ``transform`` is p(h_j = 1 | v) =
    sigma(c_j + sum_i W_ij v_i / sigma_i).  ``score_samples`` is the log-density
    ln p(v) = -F(v) - ln Z with F(v) = sum_i (v_i - b_i)^2 / (2 sigma_i^2)
    - sum_j softplus(c_j + sum_i W_ij v_i / sigma_i) and ln Z **exact** (the Gaussian
    integral over v for each of the 2^n_components hidden states,
    :meth:`cyrbm.GaussianRBM.log_partition`) when ``n_components`` is at most
    ``EXACT_START_UNITS`` = 20, **else by AIS** from independent Gaussians fitted to the
    training data (:func:`cyrbm.models.gaussian.gaussian_log_partition`, kept as
    ``ais_result_``).  Any finite real values are accepted.

    Parameters
    ----------
{_COMMON_PARAMETERS}
    method : {{"cd", "pcd", "pt"}}
        cyrbm.Trainer's sampler.
    sigma : float
        The visible units' standard deviation (fixed unless ``learn_sigma``).
    learn_sigma : bool
        Learn one sigma per visible unit too (``sigma_`` after fitting).

    Attributes
    ----------
{_COMMON_ATTRIBUTES}
    sigma_ : array (n_features,)
        The visible units' standard deviations.
    """

    def __init__(self, n_components=256, *, learning_rate=0.01, batch_size=10, n_iter=10,
                 verbose=0, random_state=None, method="cd", k=1, momentum=0.0,
                 weight_decay=0.0, sigma=1.0, learn_sigma=False, ais_runs=100,
                 ais_schedule="paper", threads=None):
        _keep_parameters(self, locals())

    @property
    def _trainer_settings(self):
        return {"visible": "gaussian", "sigma": self.sigma, "learn_sigma": self.learn_sigma}

    def _checked(self, X, reset):
        return self._validated(X, reset)

    def _training_data(self, X):
        return X, {}

    def _fit_base(self, data):
        """(means, standard deviations) of the training rows: AIS's base Gaussians."""
        sd = np.maximum(data.std(axis=0), 1e-3 * np.asarray(self.sigma_, dtype=np.float64))
        return data.mean(axis=0, dtype=np.float64), sd.astype(np.float64)

    def _chain_rows(self, rows):
        return rows

    def _state_rows(self, X):
        return X

    def _log_unnormalized(self, model, X):
        return model.log_unnormalized(X, threads=self.threads)

    def _set_parameters(self, model):
        super()._set_parameters(model)
        self.sigma_ = model.sigma

    def to_model(self):
        """The fitted parameters as a :class:`cyrbm.GaussianRBM`."""
        check_is_fitted(self, "components_")
        return _GaussianModel(self.components_.T, self.intercept_visible_,
                              self.intercept_hidden_, self.sigma_,
                              dtype=self.components_.dtype)

    @classmethod
    def from_model(cls, model, **params):
        """An estimator fitted to the parameters of ``model`` (a cyrbm.GaussianRBM)."""
        if not hasattr(model, "sigma"):
            raise ValueError(f"GaussianRBM.from_model takes a cyrbm.GaussianRBM, not "
                             f"{type(model).__name__}.")
        est = cls(n_components=model.n_hidden, **params)
        est._set_parameters(model.copy())
        est.n_features_in_ = model.n_visible
        return est
