"""Partition functions and log-probabilities of RBMs: exactly where possible, else by AIS.

Salakhutdinov & Murray (2008, "SM08"), Sec. 3; Cho, Raiko & Ilin (2010), Sec. V.

An RBM with weights W (n_visible x n_hidden), visible biases b and hidden biases a has
unnormalized probability p*(v) = exp(b.v) prod_j (1 + exp(a_j + sum_i W_ij v_i)) (SM08
Eq. 2) and partition function Z = sum_v p*(v) (Eq. 3); ln p(v) = ln p*(v) - ln Z.

* :func:`exact_log_partition` sums over every state of the smaller layer (2^min(D, M)
  terms) in compiled code: Gray-code order, float64, a stable log-sum-exp.
* :class:`Annealer` estimates ln Z by annealed importance sampling (AIS, Eq. 8-12) from a
  base-rate model (Eq. 13-18), and ln(Z_B / Z_A) between two RBMs with different hidden
  layers (Sec. 3.2), returning an :class:`AISResult` with the error bars of Eq. 12.

AIS in brief.  With intermediate distributions p_0 = p_A, ..., p_K = p_B defined by
inverse temperatures 0 = beta_0 < ... < beta_K = 1 (the *betas*), a run draws v_1 ~ p_A,
then v_{k+1} ~ T_k(. | v_k) with a Markov kernel T_k that leaves p_k invariant, and has
log importance weight ln w = sum_{k=1..K} [ln p*_k(v_k) - ln p*_{k-1}(v_k)].  Then
E[w] = Z_B / Z_A (Eq. 11), so Z_B is estimated without bias by Z_A times the mean weight.
Here T_k is one block-Gibbs sweep of the tempered conditionals (Eq. 15-17).
"""
import math
import os
import time

import numpy as np

from cyrbm import _anneal
from cyrbm.training import progress_bar
from cyrbm._omp import resolve_threads
from cyrbm._random import make_run_streams, make_streams
from cyrbm._threads import pieces
from cyrbm._validation import check_binary, check_memory, hint, option_name
from cyrbm.errors import CyrbmError, DataError, ModelMismatchError
from cyrbm.models import RBM

__all__ = ["Annealer", "AISResult", "AnnealingError", "ScheduleError", "exact_log_partition",
           "estimate_exact_seconds", "make_schedule", "base_rate_biases", "logmeanexp",
           "ais_streams", "EXACT_MAX_UNITS", "EXACT_START_UNITS"]

#: Largest smaller-layer size :func:`exact_log_partition` accepts by default (2^30 terms).
EXACT_MAX_UNITS = 30
_LN2 = math.log(2.0)


class AnnealingError(CyrbmError, ValueError):
    """A request the annealer cannot carry out: too few runs, a model too big to sum."""


class ScheduleError(CyrbmError, ValueError):
    """An annealing schedule that is not a finite, strictly increasing list from 0 to 1."""


# ----------------------------------------------------------------------------- helpers
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


def make_schedule(spec):
    """The inverse temperatures beta_0 = 0 < beta_1 < ... < beta_K = 1 of an AIS run.

    Parameters
    ----------
    spec : str or array_like
        ``"paper"``: SM08 Sec. 5.1, 500 betas spaced uniformly in [0, 0.5), 4,000 in
        [0.5, 0.9) and 10,000 in [0.9, 1] (14,500 in all, the last exactly 1);
        ``"linear:K"``: K betas spaced uniformly from 0 to 1 (K >= 2);
        the name of a text file with one beta per line (or whitespace-separated);
        or an array of betas.

    Returns
    -------
    betas : float64 array
        Checked: finite, strictly increasing, first 0 and last 1.
    """
    if isinstance(spec, (str, os.PathLike)):
        text = os.fspath(spec)
        if text == "paper":
            betas = np.concatenate([np.linspace(0.0, 0.5, 500, endpoint=False),
                                    np.linspace(0.5, 0.9, 4000, endpoint=False),
                                    np.linspace(0.9, 1.0, 10000)])
        elif text.startswith("linear:"):
            k = schedule_count(text)
            check_memory(16 * k, f"schedule 'linear:{k}'", "use fewer betas")
            betas = np.linspace(0.0, 1.0, k)
        elif os.path.isfile(text):
            betas, lines = _read_schedule_file(text)
            return _check_schedule(betas, text, lines)
        elif text.startswith("adaptive:"):
            raise ScheduleError(f"schedule {text!r} (betas tuned by a pilot run) is for "
                                f"'cyrbm evaluate' (evaluation.adaptive_schedule); here give "
                                f"'paper', 'linear:K' or a file of betas (such as one written "
                                f"by evaluate --save-schedule).")
        else:
            raise ScheduleError(f"schedule must be 'paper', 'linear:K', a file of betas or an "
                                f"array, not {text!r} (no such file).")
    else:
        try:
            betas = np.asarray(spec, dtype=np.float64)
        except (TypeError, ValueError):
            raise ScheduleError("schedule must be 'paper', 'linear:K', a file of betas or an "
                                "array of numbers.") from None
        if betas.ndim != 1:
            raise ScheduleError(f"a schedule must be a 1-D list of betas, not an array of shape "
                                f"{betas.shape}.")
    return _check_schedule(betas)


def schedule_count(spec):
    """K of a schedule "name:K" ("linear:K", "adaptive:K"): a whole number >= 2."""
    name, count = spec.split(":", 1)
    try:
        k = int(count)
    except ValueError:
        raise ScheduleError(f"schedule '{name}:K' needs a whole number K, not {count!r}.") from None
    if k < 2:
        raise ScheduleError(f"schedule '{name}:K' needs K >= 2 betas, not {k}.")
    return k


def _read_schedule_file(path):
    """(betas, the file's line number of each) from a text file of numbers separated by
    white space, '#' starting a comment."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise ScheduleError(f"schedule file '{path}' is not a list of numbers (it is not "
                            f"UTF-8 text).") from None
    except OSError as exc:
        raise ScheduleError(f"cannot read schedule file '{path}': "
                            f"{exc.strerror or exc}.") from None
    betas, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        for field in line.split("#", 1)[0].split():
            try:
                betas.append(float(field))
            except ValueError:
                raise ScheduleError(f"schedule file '{path}' is not a list of numbers: "
                                    f"it holds {field!r} on line {number}.") from None
            lines.append(number)
    if not betas:
        raise ScheduleError(f"schedule file '{path}' holds no betas.")
    return np.array(betas, dtype=np.float64), lines


def _check_schedule(betas, path=None, lines=None):
    """``betas`` checked.  A message names a value by its entry (0-based), or, for the
    betas read from the schedule file ``path``, by the file's line ``lines[k]``."""
    def name(k, short=False):
        if path is None:
            return f"entry {k}" if short else f"schedule entry {k}"
        return f"line {lines[k]}" if short else f"line {lines[k]} of schedule file '{path}'"

    betas = np.ascontiguousarray(betas, dtype=np.float64)
    if betas.size < 2:
        where = "" if path is None else f" (schedule file '{path}')"
        raise ScheduleError(f"a schedule needs at least two betas (0 and 1), not "
                            f"{betas.size}{where}.")
    if not np.all(np.isfinite(betas)):
        k = int(np.flatnonzero(~np.isfinite(betas))[0])
        raise ScheduleError(f"{name(k)} is not a finite number ({float(betas[k])}).")
    if betas[0] != 0.0:
        raise ScheduleError(f"a schedule must start at beta = 0 ({name(0)}), not "
                            f"{float(betas[0])!r}.")
    if betas[-1] != 1.0:
        raise ScheduleError(f"a schedule must end at beta = 1 ({name(betas.size - 1)}), "
                            f"not {float(betas[-1])!r}.")
    steps = np.diff(betas)
    if np.any(steps <= 0):
        k = int(np.flatnonzero(steps <= 0)[0]) + 1
        raise ScheduleError(f"a schedule must be strictly increasing, but {name(k)} "
                            f"({float(betas[k])!r}) is not above {name(k - 1, True)} "
                            f"({float(betas[k - 1])!r}).")
    return betas


def base_rate_biases(data, *, pseudocount=1.0, n_visible=None):
    """Visible biases of the base-rate model fitted to ``data`` (SM08 Sec. 5).

    The maximum-likelihood marginals n_i / N, smoothed so that every p(v) > 0 by adding
    ``pseudocount`` on and ``pseudocount`` off observations to each unit (Laplace's rule
    for pseudocount = 1): p_i = (n_i + c) / (N + 2c), b_i = ln(p_i / (1 - p_i)).

    Parameters
    ----------
    data : array_like, 0/1, shape (N, n_visible)
    pseudocount : float > 0
    n_visible : int, optional
        Expected width (a ModelMismatchError otherwise).
    """
    if not (isinstance(pseudocount, (int, float)) and math.isfinite(pseudocount) and pseudocount > 0):
        raise AnnealingError(f"the base-rate pseudocount must be a positive number, not {pseudocount!r}.")
    v = check_binary(data, name="base-rate data", allow_1d=True)
    if n_visible is not None and v.shape[1] != n_visible:
        raise ModelMismatchError(f"base-rate data has {v.shape[1]} columns but the model has "
                                 f"{n_visible} visible units.")
    if v.shape[0] == 0:
        raise DataError("base-rate data has no rows.")
    on = v.sum(axis=0, dtype=np.float64)
    n = float(v.shape[0])
    return np.log(on + pseudocount) - np.log(n - on + pseudocount)


def _as_rbm(model, name="model"):
    if not isinstance(model, RBM):
        raise TypeError(f"{name} must be a cyrbm.RBM, not {type(model).__name__}.")
    return model


def _check_runs(runs):
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)):
        raise AnnealingError(f"runs must be a whole number, not {runs!r}.")
    if runs < 2:
        raise AnnealingError(f"AIS needs at least 2 runs to estimate its error, not {runs}.")
    check_memory(512 * int(runs), f"{int(runs)} AIS runs", "use fewer runs")
    return int(runs)


def _check_run_memory(runs, D, n_hidden):
    """Refuse runs whose states cannot fit in memory (about 32 bytes a unit a run)."""
    check_memory(runs * (512 + 32 * (D + n_hidden)), f"{runs} AIS runs of a model with "
                 f"{D} visible and {n_hidden} hidden units", "use fewer runs")


# ------------------------------------------------------------------------ exact ln Z
def exact_log_partition(model, *, threads=None, max_units=EXACT_MAX_UNITS):
    """ln Z of an RBM, exactly, by summing over every state of its smaller layer.

    With M <= D hidden units: Z = sum_h exp(a.h) prod_i (1 + exp(b_i + sum_j W_ij h_j)),
    2^M terms (SM08 Sec. 5.1: "summing out the 784 visible units for each configuration
    of the hiddens"); otherwise the same over the visible states.  States are visited in
    Gray-code order so each changes the other layer's inputs by one weight row (recomputed
    exactly every 1024 states); everything is in float64 with a log-sum-exp relative to
    the running maximum.  The 2^m states are cut into chunks of a fixed size, combined in
    a fixed order: the result does not depend on ``threads``.

    Parameters
    ----------
    model : RBM
        float32 models are summed with their stored values converted exactly to float64.
    threads : int or None
    max_units : int
        Refuse (AnnealingError, with a time estimate) when the smaller layer is larger.

    Returns
    -------
    float
    """
    model = _as_rbm(model)
    n_threads = resolve_threads(threads)
    _check_enumerable(model, n_threads, max_units, "an exact ln Z", hint("exact_too_big"))
    # The enumeration is taken in pieces of about 0.1 s, so Ctrl-C (KeyboardInterrupt)
    # is answered between them; the pieces give the one-call result bit for bit.
    m = min(model.n_visible, model.n_hidden)
    n_chunks = 1 << (m - min(_EXACT_CHUNK_BITS, m))
    chunks = np.empty(2 * n_chunks)
    for c, c1 in pieces(0, n_chunks, n_threads):
        _anneal.exact_chunk_range(model.W, model.vbias, model.hbias, chunks, c, c1,
                                  n_threads, _EXACT_CHUNK_BITS)
    return _anneal.exact_combine_chunks(chunks)


_EXACT_CHUNK_BITS = 12


def _check_enumerable(model, n_threads, max_units, what, instead):
    """Refuse (AnnealingError, with a time estimate) to enumerate a too-large layer."""
    m = min(model.n_visible, model.n_hidden)
    if m > max_units:
        seconds = estimate_exact_seconds(model, threads=n_threads)
        raise AnnealingError(
            f"{what} would sum 2^{m} terms ({m} units in the smaller layer), about "
            f"{_human_time(seconds)} on {n_threads} thread{'s' if n_threads > 1 else ''}; "
            f"the limit is {max_units} units, so {instead}.")


def estimate_exact_seconds(model, *, threads=None):
    """Seconds an exact ln Z of ``model`` would take here, from timing 2^12 of its terms."""
    model = _as_rbm(model)
    n_threads = resolve_threads(threads)
    W = np.asarray(model.W, dtype=np.float64)
    if W.shape[1] <= W.shape[0]:
        sub = RBM(W[:, :12], model.vbias, model.hbias[:12], dtype=np.float64)
    else:
        sub = RBM(W[:12, :], model.vbias[:12], model.hbias, dtype=np.float64)
    m = min(model.n_visible, model.n_hidden)
    m_sub = min(sub.n_visible, sub.n_hidden)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        _anneal.exact_log_partition(sub.W, sub.vbias, sub.hbias, 1)
        best = min(best, time.perf_counter() - t0)
    return best * 2.0 ** (m - m_sub) / max(1, n_threads)


def _human_time(seconds):
    if seconds < 120:
        return f"{seconds:.0f} seconds"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} minutes"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} hours"
    if seconds < 2 * 365 * 86400:
        return f"{seconds / 86400:.0f} days"
    return f"{seconds / (365 * 86400):.3g} years"


# ---------------------------------------------------------------------------- result
def _json_number(x):
    """A float for JSON, None for None and for an infinite or NaN value (JSON null)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _json_pair(p):
    """An interval for JSON: [low, high] with null ends, or None."""
    return None if p is None else [_json_number(p[0]), _json_number(p[1])]


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
        from cyrbm.evaluation import weight_diagnostics
        return weight_diagnostics(self.log_weights)[1]

    @property
    def weight_warning(self):
        """A plain sentence when so few runs carry the weight that sigma-hat cannot be
        trusted (ESS below min(10, runs / 2), or one weight above half the total), else
        None (cyrbm.evaluation.weight_diagnostics)."""
        from cyrbm.evaluation import weight_diagnostics
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

        num, pair = _json_number, _json_pair
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


# --------------------------------------------------------------------------- annealer
#: Default Gibbs sweeps before the first starting state of a ratio run (see log_ratio).
RATIO_BURN_IN = 20000
#: Default Gibbs sweeps between the starting states one chain gives (see log_ratio).
RATIO_STEPS_BETWEEN = 100
#: start="auto" draws a ratio's starting states exactly (and gets ln Z_A) when model A's
#: smaller layer has at most this many units (2^20 terms: about a second for 784 x 20).
EXACT_START_UNITS = 20


class Annealer:
    """Annealed importance sampling for binary RBMs (SM08 Sec. 3).

    Parameters
    ----------
    runs : int >= 2
        Independent AIS runs M; the error estimate of Eq. 12 shrinks as 1/sqrt(M).
    schedule : str or array_like
        The betas, see :func:`make_schedule` (default ``"paper"``: 14,500 betas).
    seed : int
        Every random choice flows from it; run r draws only from its own streams, so a
        result does not depend on ``threads``.
    threads : int or None
        OpenMP threads (None: all).  Runs are split between threads.
    progress : bool or None
        A tqdm progress bar on stderr (None: only when stderr is a terminal; without
        tqdm installed, none).
    refresh : int
        The runs' inputs are updated by the weight rows of the units that flip and
        recomputed exactly every ``refresh`` steps (bounds float32 rounding drift).
    chunk : int
        Most steps per call into the compiled kernel (the progress bar moves, and Ctrl-C
        is answered, between calls, which are cut to about 0.1 s each).

    Examples
    --------
    >>> ann = Annealer(runs=100, schedule="paper", seed=0)
    >>> res = ann.log_partition(model, base_rate="data", data=train)   # doctest: +SKIP
    >>> res.log_Z, res.log_Z_interval(3), res.avg_log_prob              # doctest: +SKIP
    """

    exact_log_partition = staticmethod(exact_log_partition)

    def __init__(self, runs=100, schedule="paper", *, seed=0, threads=None, progress=None,
                 refresh=200, chunk=500):
        self.runs = _check_runs(runs)
        self.schedule_spec = schedule if isinstance(schedule, str) else "array"
        self.betas = make_schedule(schedule)
        if seed is None or isinstance(seed, bool) or int(seed) < 0:
            raise AnnealingError(f"seed must be a non-negative whole number, not {seed!r}.")
        self.seed = int(seed)
        self.threads = resolve_threads(threads)
        self.progress = progress
        if int(refresh) < 1:
            raise AnnealingError(f"refresh must be at least 1 step, not {refresh}.")
        self.refresh = int(refresh)
        if int(chunk) < 1:
            raise AnnealingError(f"chunk must be at least 1 step, not {chunk}.")
        self.chunk = int(chunk)

    # ------------------------------------------------------------------ public
    def log_partition(self, model, base_rate=None, data=None, *, base_data=None,
                      pseudocount=1.0, _key=0):
        """Estimate ln Z of ``model`` by AIS from a base-rate model (SM08 Eq. 13-18).

        The base-rate model has W = 0, visible biases b_A and (like the model) M hidden
        units with zero biases, so ln Z_A = M ln 2 + sum_i softplus(b_A,i) (Eq. 18) and its
        visible units are independent: runs start from exact independent samples.  The
        intermediate distributions are::

            p_k(v) ~ exp((1 - beta_k) b_A.v) sum_h exp(-beta_k E(v, h; model)),

        and each step is one block-Gibbs sweep at beta_k (Eq. 15-17 with A the base).

        Parameters
        ----------
        model : RBM
        base_rate : None, "data" or array_like
            b_A: None gives zeros (a uniform base); "data" fits it to ``base_data`` (or,
            if that is not given, ``data``) by maximum likelihood smoothed with
            ``pseudocount`` (see :func:`base_rate_biases`); an array gives it directly.
        data : array_like, optional
            0/1 rows; the result then also reports the average log-probability
            mean ln p*(v) - ln Z-hat with its error interval.
        base_data : array_like, optional
            Data for the base rate when it differs from ``data``.
        pseudocount : float
            Smoothing of the fitted base rate.

        Returns
        -------
        AISResult
        """
        model = _as_rbm(model)
        D, M = model.n_visible, model.n_hidden
        _check_run_memory(self.runs, D, M)
        v_data = None if data is None else model._visible_data(data, "data")
        bA = self._base_biases(base_rate, base_data if base_data is not None else v_data, D,
                               pseudocount)
        bA_stored = bA.astype(model.dtype).astype(np.float64)      # the biases the runs use
        log_Z_base = _anneal.base_rate_log_z(bA_stored, M)          # Eq. 18
        streams = self._streams(_key)       # _key: another purpose's independent streams
        engine = _anneal.GibbsEngine(bA_stored, None, None, model.W, model.vbias, model.hbias,
                                   streams, dtype=model.dtype, n_threads=self.threads,
                                   refresh_every=self.refresh)
        t0 = time.perf_counter()
        engine.sample_visible(0.0)          # exact samples from the base-rate model
        self._anneal(engine, "AIS ln Z")
        seconds = time.perf_counter() - t0
        mean_lp, n_data = None, 0
        if v_data is not None and v_data.shape[0] > 0:
            mean_lp = float(np.mean(model.log_unnormalized(v_data, threads=self.threads)))
            n_data = v_data.shape[0]
        return AISResult(kind="partition", log_weights=engine.log_weights,
                         log_Z_base=log_Z_base, betas=self.betas.size, runs=self.runs,
                         seconds=seconds, threads=self.threads, dtype=model.dtype,
                         seed=self.seed, schedule=self.schedule_spec,
                         samples=engine.visible(), mean_log_unnormalized=mean_lp,
                         n_data=n_data,
                         extra={"base_rate": "data" if isinstance(base_rate, str) else
                                ("zero" if base_rate is None else "given")})

    def log_ratio(self, model_a, model_b, data=None, *, start="auto", burn_in=None,
                  chains=None, steps_between=None, init=None, log_Z_a=None):
        """Estimate ln(Z_B / Z_A) for two RBMs on the same visible units (SM08 Sec. 3.2).

        The intermediate distributions (Eq. 13-14) have energy::

            E_k(v, hA, hB) = (1 - beta_k) E(v, hA; A) + beta_k E(v, hB; B),

        so the hidden layers of A and B (of any sizes) are sampled at 1 - beta_k and
        beta_k given v (Eq. 15-16) and v given both (Eq. 17).  Summing out both hidden
        layers, Z_0 = 2^(n_hidden of B) Z_A and Z_K = 2^(n_hidden of A) Z_B (the layer
        with zero inverse temperature contributes a factor 2 per unit); the log weights
        reported are corrected by (nB - nA) ln 2 so that they estimate Z_B / Z_A.

        The runs must start from p_A.  When A's smaller layer can be enumerated, they
        start from exact independent draws (``start="exact"``): the marginal of that layer
        by inverse-CDF sampling over its Gray-code enumeration, then the other layer
        given it; the same enumeration gives ln Z_A, and the error bars are honest.
        Otherwise (``start="gibbs"``) Z_A is unknown and the starting states come from
        block-Gibbs chains on A, as in SM08 Sec. 3.2: by default one chain per run, each
        started from ``init`` rows (cycled; else ``data`` rows; else uniform random bits)
        and run for ``burn_in`` sweeps; with ``chains`` < runs, each chain gives several
        starting states ``steps_between`` sweeps apart, as in SM08 Sec. 5.1.  These states
        are only approximately from p_A, and their dependence is not reflected in the
        error bars (SM08 discuss the resulting systematic error).

        Parameters
        ----------
        model_a, model_b : RBM
        data : array_like, optional
            0/1 rows: the result then reports mean(ln p_B(v) - ln p_A(v)).
        start : "auto", "exact" or "gibbs"
            "auto": exact draws when A's smaller layer has at most EXACT_START_UNITS
            (20) units, else Gibbs chains; "exact" up to EXACT_MAX_UNITS (30) units.
        burn_in : int >= 0
            Gibbs sweeps before the first starting state.  Chains started at data stay
            near the data for a long time on trained models: between 784 x 20 and
            784 x 25 RBMs of MNIST-like digits (CD1; bench/ais_accuracy.py) 1,000
            sweeps left ln(Z_B/Z_A) 0.75-1.36 nats too high (once outside its 3-sigma
            interval), 20,000 sweeps (the default, RATIO_BURN_IN) 0.02-0.25 nats.
        chains : int, optional
            Number of Gibbs chains (1 .. runs; default: runs).
        steps_between : int >= 1
            Default RATIO_STEPS_BETWEEN.  ``burn_in``, ``chains`` and ``steps_between``
            set the Gibbs chains, so they are refused when the starts are exact.
        init : array_like, optional
            Starting rows of the chains.
        log_Z_a : float, optional
            ln Z_A if known; the result then also holds ln Z_B-hat.  Computed exactly
            when A's smaller layer has at most EXACT_START_UNITS units.

        Returns
        -------
        AISResult
        """
        A = _as_rbm(model_a, "model_a")
        B = _as_rbm(model_b, "model_b")
        if A.n_visible != B.n_visible:
            raise ModelMismatchError(f"the two models have {A.n_visible} and {B.n_visible} "
                                     f"visible units; a ratio needs the same visible layer.")
        D = A.n_visible
        _check_run_memory(self.runs, D, A.n_hidden + B.n_hidden)
        if start not in ("auto", "exact", "gibbs"):
            raise AnnealingError(f"start must be 'auto', 'exact' or 'gibbs', not {start!r}.")
        m_a = min(A.n_visible, A.n_hidden)
        if start == "exact":
            _check_enumerable(A, self.threads, EXACT_MAX_UNITS, "exact starting states",
                              hint("start_gibbs"))
        exact = start == "exact" or (start == "auto" and m_a <= EXACT_START_UNITS)
        given = [option_name(k) for k, v in (("chains", chains), ("burn_in", burn_in),
                                             ("steps_between", steps_between)) if v is not None]
        if exact and given:
            why = ("" if start == "exact" else f" (start auto: model A's smaller layer has "
                   f"{m_a} units)")
            raise AnnealingError(f"{' and '.join(given)} set{'s' if len(given) == 1 else ''} "
                                 f"the Gibbs chains that start the runs, but these runs start "
                                 f"from exact draws of model A{why}, so "
                                 f"{'it' if len(given) == 1 else 'they'} would be ignored; "
                                 f"{hint('start_gibbs')} to start from Gibbs chains.")
        burn_in = RATIO_BURN_IN if burn_in is None else int(burn_in)
        steps_between = RATIO_STEPS_BETWEEN if steps_between is None else int(steps_between)
        if burn_in < 0:
            raise AnnealingError(f"burn-in must be a non-negative number of sweeps, not {burn_in}.")
        if steps_between < 1:
            raise AnnealingError(f"steps between samples must be at least 1, not {steps_between}.")
        if chains is not None and (isinstance(chains, bool) or
                                   not isinstance(chains, (int, np.integer))):
            raise AnnealingError(f"chains must be a whole number, not {chains!r}.")
        chains = self.runs if chains is None else int(chains)
        if not 1 <= chains <= self.runs:
            raise AnnealingError(f"chains must be between 1 and the number of runs "
                                 f"({self.runs}), not {chains}.")
        v_data = None if data is None else A._visible_data(data, "data")
        dtype = np.float64 if np.float64 in (A.dtype, B.dtype) else np.float32
        if init is not None:
            init = A._visible_data(init, "init")
            if init.shape[0] == 0:
                raise DataError("init has no rows.")
        elif v_data is not None and v_data.shape[0] > 0:
            init = v_data
        t0 = time.perf_counter()
        if exact:
            starts, log_Z_exact = self._exact_starts(A)
            if log_Z_a is None:
                log_Z_a = log_Z_exact
            chain_info = {"start": "exact", "burn_in": None, "chains": None,
                          "steps_between": None}
        else:
            starts = self._chain_starts(A, dtype, chains, burn_in, steps_between, init)
            if log_Z_a is None and m_a <= EXACT_START_UNITS:
                log_Z_a = exact_log_partition(A, threads=self.threads)
            chain_info = {"start": "gibbs", "burn_in": burn_in, "chains": chains,
                          "steps_between": steps_between}
        engine = _anneal.GibbsEngine(A.vbias, A.W, A.hbias, B.W, B.vbias, B.hbias,
                                   self._streams(0), dtype=dtype, n_threads=self.threads,
                                   refresh_every=self.refresh)
        engine.set_visible(starts)
        self._anneal(engine, "AIS ln(ZB/ZA)")
        seconds = time.perf_counter() - t0
        mean_lp, n_data = None, 0
        if v_data is not None and v_data.shape[0] > 0:
            A_ = A.astype(dtype)
            B_ = B.astype(dtype)
            mean_lp = float(np.mean(B_.log_unnormalized(v_data, threads=self.threads)
                                    - A_.log_unnormalized(v_data, threads=self.threads)))
            n_data = v_data.shape[0]
        # At beta = 0 the hidden units of B are free (each contributes a factor 2), and at
        # beta = 1 those of A are: Z_0 = 2^nB Z_A, Z_K = 2^nA Z_B.  Remove the constant so
        # the weights estimate Z_B / Z_A itself.
        log_weights = engine.log_weights + (B.n_hidden - A.n_hidden) * _LN2
        return AISResult(kind="ratio", log_weights=log_weights,
                         log_Z_base=log_Z_a, betas=self.betas.size, runs=self.runs,
                         seconds=seconds, threads=self.threads, dtype=dtype, seed=self.seed,
                         schedule=self.schedule_spec, samples=engine.visible(),
                         mean_log_unnormalized=mean_lp, n_data=n_data,
                         extra=dict(chain_info, n_hidden_a=A.n_hidden,
                                    n_hidden_b=B.n_hidden))

    def evaluate(self, model, data, *, base_rate="data", base_data=None, chains=10,
                 simulate=None, pseudocount=1.0, base_model=None, base_log_Z=None,
                 start="auto", burn_in=None):
        """The AIS/RAISE sandwich: the mean test log-probability of ``data`` under
        ``model`` from forward AIS (optimistic) and from reverse annealing, RAISE
        (conservative; Burda, Grosse & Salakhutdinov 2015), side by side.

        Both use this annealer's schedule, base-rate model (fitted as in
        :meth:`log_partition`) and block-Gibbs transitions (SM08 Eq. 13-18).  Forward
        AIS runs ``runs`` runs; RAISE runs ``chains`` reverse chains from every test
        vector (see :mod:`cyrbm.evaluation`).  With ``simulate=N`` the bidirectional check
        (Grosse, Ghahramani & Adams 2015) also runs on N states drawn from the model
        (exactly when its smaller layer has at most 20 units, else the end states of
        forward AIS runs): there the AIS/RAISE gap bounds the error of ln Z-hat.

        With ``base_model`` (an RBM A on the same visible units) both run on the path of
        ratio AIS from A to ``model`` (SM08 Sec. 3.2): forward AIS is
        :meth:`log_ratio` (its starting states by ``start`` and ``burn_in``, Gibbs
        chains started at ``data`` rows), ln Z-hat = ln Z_A + ln(Z_B / Z_A)-hat, and
        RAISE runs that path backwards to p_A.  The gap then measures the error of that
        path, the one a ratio estimate took.  ln Z_A is ``base_log_Z`` if given, else
        exact when A's smaller layer has at most 20 units (or ``start="exact"``), else
        estimated by AIS from a base-rate model (``base_rate``, ``base_data``) with this
        annealer's runs and schedule; it enters both estimates equally, so the gap does
        not depend on it (``result.base`` says which it was).

        Returns
        -------
        cyrbm.evaluation.EvaluationResult
            ``ais_mean_log_prob``, ``raise_mean_log_prob`` (each with ``ais_se`` /
            ``raise_se``), ``gap``, ``disagreement`` (a sentence or None), ``to_dict()``.
        """
        from cyrbm.evaluation import evaluate
        return evaluate(self, model, data, base_rate=base_rate, base_data=base_data,
                        chains=chains, simulate=simulate, pseudocount=pseudocount,
                        base_model=base_model, base_log_Z=base_log_Z, start=start,
                        burn_in=burn_in)

    # ------------------------------------------------------------------ internals
    def _streams(self, key, n=None):
        return ais_streams(self.seed, self.runs if n is None else n, key)

    def _generator(self, key):
        """A NumPy generator of (seed, "ais", key), for the few draws made outside the
        kernels (key 2: random chain starts, 3: exact starting states)."""
        return np.random.default_rng(np.random.SeedSequence(
            make_streams(self.seed, "ais", 1, key)[0]))

    def _base_biases(self, base_rate, data, D, pseudocount):
        if base_rate is None:
            return np.zeros(D)
        if isinstance(base_rate, str):
            if base_rate != "data":
                raise AnnealingError(f"base_rate must be None, 'data' or an array of {D} biases, "
                                     f"not {base_rate!r}.")
            if data is None:
                raise AnnealingError("base_rate='data' needs data (or base_data) to fit the base rate to.")
            return base_rate_biases(data, pseudocount=pseudocount, n_visible=D)
        b = np.asarray(base_rate, dtype=np.float64)
        if b.shape != (D,):
            raise ModelMismatchError(f"base_rate has shape {b.shape} but the model has {D} visible units.")
        if not np.all(np.isfinite(b)):
            raise AnnealingError("base_rate contains NaN or infinite values.")
        return b

    def _exact_starts(self, A):
        """Exact independent draws from p_A, one per run, and the exact ln Z_A.

        The smaller layer's marginal is sampled by inverse CDF over its enumeration
        (cyrbm._anneal.exact_sample_smaller_layer); when that is the hidden layer, the
        visible units are then drawn given it with p(v | h) from RBM.visible_probs."""
        rng = self._generator(3)
        states, log_z, hidden = _anneal.exact_sample_smaller_layer(
            A.W, A.vbias, A.hbias, rng.random(self.runs), n_threads=self.threads)
        if not hidden:
            return states, log_z
        p_on = A.visible_probs(states)
        return (rng.random(p_on.shape) < p_on).astype(np.uint8), log_z

    def _chain_starts(self, A, dtype, chains, burn_in, steps_between, init):
        """Starting states of the runs: Gibbs chains on model A (see log_ratio).

        Each chain is one sequence of sweeps, taken in pieces of ``chunk`` sweeps (for the
        progress bar) without changing a number: chain c gives its m-th state after
        ``burn_in + m * steps_between`` sweeps, and run r takes state r // chains of chain
        r % chains."""
        D = A.n_visible
        chain = _anneal.GibbsEngine(A.vbias, A.W, A.hbias, np.zeros((D, 0)), np.zeros(D),
                                  np.zeros(0), self._streams(1, chains), dtype=dtype,
                                  n_threads=self.threads, refresh_every=self.refresh)
        if init is not None:
            v0 = init[np.arange(chains) % init.shape[0]]
        else:
            v0 = (self._generator(2).random((chains, D)) < 0.5).astype(np.uint8)
        chain.set_visible(v0)
        per_chain = -(-self.runs // chains)
        marks = [burn_in + m * steps_between for m in range(per_chain)]
        taken = []
        bar = progress_bar(self.progress, marks[-1], 0, "Gibbs on model A", unit="sweep")
        try:
            done = 0
            for mark in marks:
                for s0, s1 in pieces(done, mark, most=self.chunk):
                    chain.sweep(s1 - s0, force_refresh=s0 == 0, start=s0)
                    if bar is not None:
                        bar.update(s1 - s0)
                done = mark
                taken.append(chain.visible())
        finally:
            if bar is not None:
                bar.close()
        starts = np.stack(taken)                   # (per_chain, chains, D)
        r = np.arange(self.runs)
        return starts[r // chains, r % chains]

    def _anneal(self, engine, desc):
        betas = self.betas
        K = betas.size - 1
        bar = progress_bar(self.progress, K, 0, desc, unit="beta")
        try:
            for k, k1 in pieces(1, K + 1, most=self.chunk):
                engine.steps(betas, k, k1, K, True, k == 1)
                if bar is not None:
                    bar.update(k1 - k)
        finally:
            if bar is not None:
                bar.close()


def ais_streams(seed, runs, key=0):
    """The random streams of ``runs`` AIS runs: (runs, 32) uint64, purpose "ais" (the
    layout of :func:`cyrbm._random.make_run_streams`)."""
    return make_run_streams(seed, "ais", runs, key)
