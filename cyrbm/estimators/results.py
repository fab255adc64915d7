"""The results every estimator returns and the diagnostics of importance weights.

Below both :mod:`cyrbm.estimators.annealing` (AIS, ratio AIS) and :mod:`cyrbm.estimators.evaluation` (RAISE,
the sandwich), which build on them: :class:`AISResult` (SM08 Eq. 11-12),
:func:`weight_diagnostics` (effective sample size and the low-ESS warning),
:func:`logmeanexp`, and the JSON conventions (an infinite or NaN value is null).
"""
import math

import numpy as np

__all__ = ["AISResult", "ais_result", "logmeanexp", "weight_diagnostics", "json_number", "json_pair",
           "ESS_WARN", "SHARE_WARN"]

#: A warning is given when the effective sample size is below min(ESS_WARN, runs / 2) ...
ESS_WARN = 10.0
#: ... or when the largest weight is more than this share of their sum.
SHARE_WARN = 0.5


def logmeanexp(x, axis=None):
    """ln(mean(exp(x))) over all of ``x`` (axis=None: a float) or along ``axis`` (an
    array), computed relative to the largest element, so that large or very negative x
    neither overflow nor underflow: ln r-hat of AIS from its log weights (SM08 Eq. 11).

    -inf elements count as exp(-inf) = 0 (all -inf gives -inf); any +inf gives +inf and
    any NaN gives NaN.  The mean of no numbers is refused (ValueError).
    """
    x = np.asarray(x, dtype=np.float64)
    if axis is None:
        if x.size == 0:
            raise ValueError("logmeanexp of an empty array: the mean of no numbers.")
        m = float(np.max(x))
        if not np.isfinite(m):
            return m
        return m + math.log(float(np.mean(np.exp(x - m))))
    m = np.max(x, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.mean(np.exp(x - shift), axis=axis, keepdims=True)) + shift
    return np.squeeze(out, axis=axis)


def weight_diagnostics(log_weights, what="runs"):
    """(ess, largest share, warning or None) of importance weights given as logs.

    ess = (sum w)^2 / sum w^2 (between 1 and the number of weights); the largest share
    is max w / sum w.  The warning, one plain sentence, is given when so few weights
    carry the sum that the sample standard deviation sigma-hat (SM08 Eq. 12), and so
    every interval built on it, cannot be trusted: ess < min(ESS_WARN, n / 2), or one
    weight is more than SHARE_WARN of the total.
    """
    lw = np.asarray(log_weights, dtype=np.float64).ravel()
    n = lw.size
    if n == 0 or not np.all(np.isfinite(lw)):
        return float("nan"), float("nan"), None
    w = np.exp(lw - np.max(lw))
    total = float(np.sum(w))
    ess = total * total / float(np.sum(w * w))
    share = float(np.max(w)) / total
    warning = None
    if ess < min(ESS_WARN, n / 2.0) or share > SHARE_WARN:
        warning = (f"only {ess:.1f} of {n} {what} carry the weight (effective sample size; "
                   f"the largest weight is {100.0 * share:.0f}% of the total), so sigma-hat "
                   f"and the intervals built on it cannot be trusted: anneal with more betas "
                   f"or more {what}.")
    return ess, share, warning


def json_number(x):
    """A float for JSON, None for None and for an infinite or NaN value (JSON null)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def json_pair(p):
    """An interval for JSON: [low, high] with null ends, or None."""
    return None if p is None else [json_number(p[0]), json_number(p[1])]


class AISResult:
    """The outcome of an AIS estimate (SM08 Eq. 11-12).

    For ``kind == "partition"`` the runs annealed from a base-rate model with known
    ln Z_A = ``log_Z_base`` to the model, and ``log_Z`` = ln Z-hat.  For ``kind ==
    "ratio"`` they annealed from RBM A to RBM B, ``log_ratio`` = ln(Z_B / Z_A)-hat, and
    ``log_Z`` = ln Z_B-hat only when ln Z_A was supplied.

    Attributes
    ----------
    log_weights : float64 array (runs,)
        ln w of each run; w estimates Z_B / Z_A without bias.
    log_Z_base : float or None
        ln Z_A (Eq. 18 for a base-rate model).
    betas : int
        Number of inverse temperatures (K + 1).
    runs, seconds, threads, dtype, seed, schedule : run settings.
    samples : uint8 array (runs, n_visible)
        The final visible state of each run (approximate samples of the model).
    mean_log_unnormalized : float or None
        mean over the data of ln p*(v) (for a ratio: of ln p*_B(v) - ln p*_A(v)).
    n_data : int
    """

    def __init__(self, *, kind, log_weights, log_Z_base, betas, runs, seconds, threads, dtype,
                 seed, schedule, samples=None, mean_log_unnormalized=None, n_data=0,
                 extra=None):
        self.kind = kind
        self.log_weights = np.asarray(log_weights, dtype=np.float64)
        self.log_Z_base = None if log_Z_base is None else float(log_Z_base)
        self.betas = int(betas)
        self.runs = int(runs)
        self.seconds = float(seconds)
        self.threads = int(threads)
        self.dtype = str(np.dtype(dtype).name)
        self.seed = seed
        self.schedule = schedule
        self.samples = samples
        self.mean_log_unnormalized = (None if mean_log_unnormalized is None
                                      else float(mean_log_unnormalized))
        self.n_data = int(n_data)
        self.extra = dict(extra or {})
        lw = self.log_weights
        self._shift = float(np.max(lw))
        w = np.exp(lw - self._shift)                       # weights relative to the largest
        self._mean = float(np.mean(w))
        self._sd_mean = float(np.std(w, ddof=1) / math.sqrt(lw.size)) if lw.size > 1 else float("nan")
        self._ess = float(np.sum(w) ** 2 / np.sum(w * w))

    # -- the estimate of ln(Z_B / Z_A) and its error (Eq. 11-12), in log space
    @property
    def log_ratio(self):
        """ln r-hat = ln mean(w) (Eq. 11)."""
        return logmeanexp(self.log_weights)

    @property
    def log_sigma_ratio(self):
        """ln sigma-hat of r-hat: sample std of the weights / sqrt(runs) (Eq. 12)."""
        return self._shift + math.log(self._sd_mean) if self._sd_mean > 0 else float("-inf")

    def log_ratio_interval(self, k=1.0):
        """(ln(r - k sigma), ln(r + k sigma)); the lower end is -inf when r - k sigma <= 0."""
        lo = self._mean - k * self._sd_mean
        hi = self._mean + k * self._sd_mean
        return (self._shift + math.log(lo) if lo > 0 else float("-inf"),
                self._shift + math.log(hi))

    @property
    def log_Z(self):
        """ln Z-hat = ln Z_A + ln r-hat, or None when ln Z_A is unknown."""
        return None if self.log_Z_base is None else self.log_Z_base + self.log_ratio

    @property
    def log_sigma(self):
        """ln sigma-hat of Z-hat (Eq. 12), or of r-hat when ln Z_A is unknown."""
        return (self.log_Z_base or 0.0) + self.log_sigma_ratio

    def log_Z_interval(self, k=1.0):
        """(ln(Z - k sigma), ln(Z + k sigma)) as SM08 Table 1 reports them (k = 1 and 3);
        the lower end is -inf when Z - k sigma <= 0.  None when ln Z_A is unknown."""
        if self.log_Z_base is None:
            return None
        lo, hi = self.log_ratio_interval(k)
        return (lo + self.log_Z_base, hi + self.log_Z_base)

    @property
    def ess(self):
        """Effective sample size of the importance weights, (sum w)^2 / sum w^2."""
        return self._ess

    @property
    def max_weight_share(self):
        """The largest weight's share of the sum of the weights."""
        return weight_diagnostics(self.log_weights)[1]

    @property
    def weight_warning(self):
        """A plain sentence when so few runs carry the weight that sigma-hat cannot be
        trusted (ESS below min(10, runs / 2), or one weight above half the total), else
        None (:func:`weight_diagnostics`)."""
        return weight_diagnostics(self.log_weights)[2]

    # -- average log-probability of data
    @property
    def avg_log_prob(self):
        """mean ln p*(v) - ln Z-hat over the data (for a ratio: the mean of
        ln p_B(v) - ln p_A(v)); None without data."""
        if self.mean_log_unnormalized is None:
            return None
        if self.kind == "ratio":
            return self.mean_log_unnormalized - self.log_ratio
        return self.mean_log_unnormalized - self.log_Z

    def avg_log_prob_interval(self, k=1.0):
        """The range of avg_log_prob over ln(Z +- k sigma) (upper end +inf when
        Z - k sigma <= 0); None without data."""
        if self.mean_log_unnormalized is None:
            return None
        lo, hi = self.log_ratio_interval(k)
        base = 0.0 if self.kind == "ratio" else self.log_Z_base
        return (self.mean_log_unnormalized - (hi + base),
                self.mean_log_unnormalized - (lo + base))

    def to_dict(self):
        """A JSON-ready dict (keys documented in docs/json_keys_ais.md); infinite interval
        ends become None (JSON null)."""
        num, pair = json_number, json_pair
        out = {
            "kind": self.kind,
            "log_Z": num(self.log_Z),
            "log_Z_base": num(self.log_Z_base),
            "log_ratio": num(self.log_ratio),
            "log_sigma": num(self.log_sigma),
            "log_Z_sigma_interval": pair(self.log_Z_interval(1)),
            "log_Z_3sigma_interval": pair(self.log_Z_interval(3)),
            "log_ratio_sigma_interval": pair(self.log_ratio_interval(1)),
            "log_ratio_3sigma_interval": pair(self.log_ratio_interval(3)),
            "ess": num(self.ess),
            "max_weight_share": num(self.max_weight_share),
            "weight_warning": self.weight_warning,
            "runs": self.runs,
            "betas": self.betas,
            "schedule": self.schedule,
            "seconds": num(self.seconds),
            "threads": self.threads,
            "dtype": self.dtype,
            "seed": self.seed,
            "avg_log_prob": num(self.avg_log_prob),
            "avg_log_prob_sigma_interval": pair(self.avg_log_prob_interval(1)),
            "avg_log_prob_3sigma_interval": pair(self.avg_log_prob_interval(3)),
            "mean_log_unnormalized": num(self.mean_log_unnormalized),
            "n_data": self.n_data,
            "log_weights": [float(x) for x in self.log_weights],
        }
        out.update(self.extra)
        return out

    def __repr__(self):
        if self.kind == "partition":
            lo, hi = self.log_Z_interval(3)
            return (f"AISResult(log_Z={self.log_Z:.4f}, 3-sigma=({lo:.4f}, {hi:.4f}), "
                    f"runs={self.runs}, betas={self.betas}, ess={self.ess:.1f})")
        lo, hi = self.log_ratio_interval(3)
        return (f"AISResult(log_ratio={self.log_ratio:.4f}, 3-sigma=({lo:.4f}, {hi:.4f}), "
                f"runs={self.runs}, betas={self.betas}, ess={self.ess:.1f})")
def ais_result(annealer, kind, log_weights, log_Z_base, *, seconds, dtype, samples,
               mean_log_unnormalized=None, n_data=0, extra=None):
    """The one place an :class:`AISResult` is built from an annealer's runs (every unit
    type's AIS, RAISE-free forward runs and ratio AIS call it): the schedule's length,
    the runs, threads, seed and schedule name come from ``annealer``."""
    return AISResult(kind=kind, log_weights=log_weights, log_Z_base=log_Z_base,
                     betas=annealer.betas.size, runs=annealer.runs, seconds=seconds,
                     threads=annealer.threads, dtype=dtype, seed=annealer.seed,
                     schedule=annealer.schedule_spec, samples=samples,
                     mean_log_unnormalized=mean_log_unnormalized, n_data=n_data,
                     extra=extra)


