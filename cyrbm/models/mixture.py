"""The mixture of Bernoullis: SM08's baseline (Salakhutdinov & Murray 2008, Sec. 5.1).

    p(v) = sum_k pi_k prod_i mu_ki^v_i (1 - mu_ki)^(1 - v_i),

a model whose ln p(v) is exact (a sum over K components), fitted by EM.  SM08 trained
mixtures with 10, 100 and 500 components on MNIST and found their test log-probabilities
(-168.95, -142.63, -137.64) far below the RBMs': they overfit.  SM08 does not say how the
mixtures were trained; here EM with an optional Beta(1 + a, 1 + a) prior on each mu_ki
(``smoothing`` = a pseudo-counts per value), which keeps ln p(v) finite on test vectors
whose pixels the training set never turned on.

File format (``.npz``): arrays ``weights`` (pi, K), ``means`` (mu, K x n_visible) and
``meta``, a JSON string with ``format`` ("cyrbm.mixture"), ``format_version``, sizes and a
``training`` record (seed, iterations, the objective per iteration).
"""
import numpy as np

from cyrbm import _io
from cyrbm._random import seed_sequence
from cyrbm._validation import check_binary, check_memory, check_visible_rows
from cyrbm.errors import ModelFileError, ModelMismatchError
from cyrbm.models.rbm import _check_version, _version, logsumexp

FORMAT = "cyrbm.mixture"
FORMAT_VERSION = 1
_ROWS = 4096          # rows per block of the E-step: memory K x 4096, not K x N
_TINY = np.finfo(np.float64).tiny


class BernoulliMixture:
    """A mixture of K factorial Bernoulli distributions over binary vectors (SM08 Sec. 5.1).

    Parameters
    ----------
    weights : array, shape (K,)
        Mixing proportions pi (non-negative, summing to 1).
    means : array, shape (K, n_visible)
        mu_ki = p(v_i = 1 | component k), in [0, 1].
    meta : dict, optional
        Free-form record (how it was fitted), saved with the model.
    """

    def __init__(self, weights, means, *, meta=None):
        weights = np.array(weights, dtype=np.float64, copy=True).ravel()
        means = np.array(means, dtype=np.float64, copy=True)
        if means.ndim == 1:
            means = means[None, :]
        if means.ndim != 2 or means.shape[0] != weights.size or weights.size == 0:
            raise ModelMismatchError(
                f"a mixture needs one weight per row of its means: {weights.size} weights "
                f"and means of shape {means.shape}.")
        if not (np.all(np.isfinite(weights)) and np.all(weights >= 0)
                and abs(weights.sum() - 1) < 1e-6):
            raise ModelMismatchError("the mixing weights must be non-negative and sum to 1.")
        if not (np.all(np.isfinite(means)) and np.all((means >= 0) & (means <= 1))):
            raise ModelMismatchError("the means of a Bernoulli mixture must lie in [0, 1].")
        self.weights = weights / weights.sum()
        self.means = np.ascontiguousarray(means)
        self.meta = dict(meta or {})

    @property
    def n_components(self):
        return self.means.shape[0]

    @property
    def n_visible(self):
        return self.means.shape[1]

    def __repr__(self):
        return f"BernoulliMixture(n_components={self.n_components}, n_visible={self.n_visible})"

    # ------------------------------------------------------------ probabilities
    def _data(self, v, name="data"):
        return check_visible_rows(v, self.n_visible, name, "the mixture")

    def _joint_blocks(self, v):
        """Yield (rows, ln pi_k + ln p(v | k)) over blocks of rows of 0/1 data ``v``."""
        log_mu = np.log(np.maximum(self.means, _TINY))
        log_1mu = np.log(np.maximum(1.0 - self.means, _TINY))
        diff = (log_mu - log_1mu).T                          # n_visible x K
        base = np.log(np.maximum(self.weights, _TINY)) + log_1mu.sum(axis=1)
        for start in range(0, v.shape[0], _ROWS):
            x = v[start:start + _ROWS].astype(np.float64)
            yield x, x @ diff + base

    def log_prob(self, v):
        """Exact ln p(v) of each row (nats): ln sum_k pi_k p(v | mu_k)."""
        v = self._data(v, "v")
        return np.concatenate([logsumexp(a, axis=1) for _, a in self._joint_blocks(v)]) \
            if v.shape[0] else np.zeros(0)

    def sample(self, n, *, seed=0):
        """``n`` exact independent draws (uint8 rows): a component by pi, then its pixels."""
        rng = np.random.default_rng(seed_sequence(seed, "sample"))
        k = rng.choice(self.n_components, size=int(n), p=self.weights)
        return (rng.random((int(n), self.n_visible)) < self.means[k]).astype(np.uint8)

    # ------------------------------------------------------------------- EM
    @classmethod
    def fit(cls, data, n_components, *, iterations=100, seed=0, smoothing=0.0, tol=0.0,
            callback=None):
        """Fit a mixture to 0/1 rows by EM (Dempster, Laird & Rubin 1977).

        Starts from ``n_components`` training rows drawn without replacement (by ``seed``),
        each mixed half and half with the data's mean, and equal weights.  The E-step
        computes the responsibilities r_nk = p(k | v_n); the M-step sets
        pi_k = N_k / N and mu_k = (sum_n r_nk v_n + a) / (N_k + 2 a), with a =
        ``smoothing`` (a Beta(1 + a, 1 + a) prior; a = 0 is maximum likelihood).  Each
        iteration cannot lower the objective, mean ln p(v_n) + ln prior / N, recorded in
        ``meta["training"]["objective"]`` (the mean log-likelihood in
        ``meta["training"]["log_likelihood"]``).  Stops after ``iterations``, or when the
        objective rises by less than ``tol`` nats per vector.
        ``callback(iteration, mixture)`` is called after each M-step.
        """
        X = check_binary(data, name="data")
        N, D = X.shape
        K = int(n_components)
        if K < 1 or K > N:
            raise ValueError(f"n_components must be between 1 and the {N} training rows, not {K}.")
        a = float(smoothing)
        if not (np.isfinite(a) and a >= 0):
            raise ValueError(f"smoothing must be a non-negative number, not {smoothing!r}.")
        iterations = int(iterations)
        if iterations < 1:
            raise ValueError(f"iterations must be at least 1, not {iterations}.")
        check_memory(8 * (2 * K * D + K * min(N, _ROWS) + D * min(N, _ROWS)),
                     f"a mixture of {K} components", "use fewer components")
        rng = np.random.default_rng(seed_sequence(seed, "init"))
        mean = X.mean(axis=0, dtype=np.float64)
        start = rng.choice(N, size=K, replace=False)
        model = cls(np.full(K, 1.0 / K), 0.5 * X[start] + 0.5 * mean)
        objective, loglik = [], []
        for it in range(iterations):
            Nk = np.zeros(K)
            S = np.zeros((K, D))
            total = 0.0
            for x, joint in model._joint_blocks(X):
                lp = logsumexp(joint, axis=1)
                total += lp.sum()
                r = np.exp(joint - lp[:, None])
                Nk += r.sum(axis=0)
                S += r.T @ x
            ll = total / N
            # the objective of the parameters just used: ln p(X) + ln prior (Beta(1+a,1+a))
            prior = a * (np.log(np.maximum(model.means, _TINY)).sum()
                         + np.log(np.maximum(1 - model.means, _TINY)).sum()) if a else 0.0
            obj = ll + prior / N
            if objective and tol > 0 and obj - objective[-1] < tol:
                objective.append(obj)
                loglik.append(ll)
                break
            objective.append(obj)
            loglik.append(ll)
            weights = Nk / N
            means = (S + a) / np.maximum(Nk + 2 * a, _TINY)[:, None]
            model = cls(weights, np.clip(means, 0.0, 1.0))
            if callback is not None:
                callback(it + 1, model)
        model.meta = {"training": {"method": "em", "seed": seed if isinstance(seed, int) else None,
                                   "iterations": len(objective), "smoothing": a,
                                   "n_train": int(N), "objective": objective,
                                   "log_likelihood": loglik}}
        return model

    # ----------------------------------------------------------------- files
    def to_arrays(self):
        meta = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "n_components": int(self.n_components), "n_visible": int(self.n_visible),
                "cyrbm_version": _version()}
        meta.update({k: v for k, v in self.meta.items() if k not in meta})
        return {"weights": self.weights, "means": self.means, "meta": _io.meta_to_array(meta)}

    def save(self, path):
        """Write the mixture to ``path`` (.npz) atomically."""
        _io.atomic_savez(path, self.to_arrays())

    @classmethod
    def load(cls, path):
        """Read a mixture file; a ModelFileError in one sentence for anything else."""
        return cls.from_arrays(_io.read_npz(path, "mixture file"), path)

    @classmethod
    def from_arrays(cls, arrays, path="<arrays>"):
        what = "mixture file"
        missing = [k for k in ("weights", "means") if k not in arrays]
        if missing:
            raise ModelFileError(
                f"{what} '{path}' lacks the array{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(m) for m in missing)} (it has "
                f"{', '.join(sorted(arrays)) or 'none'}).")
        meta = {}
        if "meta" in arrays:
            meta = _io.meta_from_array(arrays["meta"], path, what)
            fmt = meta.get("format", FORMAT)
            if fmt != FORMAT:
                raise ModelFileError(f"{what} '{path}' holds a '{fmt}', not a mixture "
                                     f"('{FORMAT}').")
            _check_version(meta, path, what, FORMAT_VERSION)
        for name in ("weights", "means"):
            if not np.issubdtype(np.asarray(arrays[name]).dtype, np.number):
                raise ModelFileError(f"{what} '{path}': array '{name}' is not numeric.")
        try:
            model = cls(arrays["weights"], arrays["means"])
        except ModelMismatchError as exc:
            raise ModelFileError(f"{what} '{path}' is corrupt: {exc}") from None
        model.meta = {k: v for k, v in meta.items()
                      if k not in ("format", "format_version", "n_components", "n_visible",
                                   "cyrbm_version")}
        return model
