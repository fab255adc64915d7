"""ln Z through training: a ladder of the Trainer's checkpoints, chained by Bennett's
acceptance ratio over AIS run both ways between neighbouring models.

Béreux, Decelle, Furtlehner, Rosset & Seoane (ICLR 2025, arXiv 2405.15376) follow ln Z
along the training trajectory instead of annealing every checkpoint from a base rate.
Here:

* the ladder's first rung has an exact ln Z: the initial model itself when its smaller
  layer can be enumerated (cyrbm.models.exact), else the initial model with W = 0, whose
  ln Z = sum_i softplus(b_i) + sum_j softplus(c_j) in closed form (units independent);
* from rung A to the next rung B, ratio AIS (SM08 Sec. 3.2, ``Annealer.log_ratio``) is
  run forward (A -> B, log weights w_F) and in reverse (B -> A, w_R), and Bennett's
  acceptance ratio (Bennett 1976) combines them into Delta = ln Z_B - ln Z_A
  (:func:`bennett_acceptance_ratio`), with the asymptotic variance of Shirts, Bair,
  Hooker & Pande (2003, PRL 91, 140601, Eq. 10), the two-state case of MBAR;
* ln Z of rung n is ln Z_0 + sum of the Deltas, and its variance the sum of theirs: each
  link's runs draw from streams of their own (purpose "ais", key (9, link, direction,
  attempt)), so the links' estimates are independent given their starting states (the
  starting states carried from link to link are a Markov chain's, whose dependence is
  neglected, as SM08 neglect that of their Gibbs starts);
* BAR's asymptotic variance holds only when enough runs fall where the two models
  overlap: a link with fewer than ``MIN_OVERLAP_RUNS`` runs in the overlap (the
  overlap, below, times the runs of one direction) is run again with more betas
  (:func:`refine_factor`: 2 to 16 times, by its log weights' variance), up to ``refine``
  times (default none, for the cost), and if it is still short it gets a warning: its
  error bar, and so every interval after it, cannot be trusted.

Where the rungs are is the Trainer's choice (``track_every``, log-spaced early rungs),
and with ``track_overlap`` also the models' own: :meth:`LogZTracker.overlap` weighs the
draws carried from the last link towards the current model and gives their effective
sample size over their number (Kong 1992), the one-sided analogue of the swap rate
between neighbouring models that PTT uses to freeze rungs (a swap rate needs draws of
both models; between links the tracker has draws of the last rung only).

The starting states matter as much as the betas: the reverse runs start from the
forward runs' end states, which AIS of few betas leaves away from p_B, and their
``burn_in`` sweeps must bring them there.  On a 784 x 500 RBM of MNIST-like digits the
link from the initial model to the first epoch's (16 runs each way) was 3 to 8 of its
standard errors too low with 5 burn-in sweeps (30 to 300 betas), and within its errors
of 100 runs of 14,500 betas with 50 (bench/README.md).

Starting states: when the smaller layer can be enumerated the runs of both directions
start from exact draws of their first model (``log_ratio``'s ``start="exact"``).
Otherwise they start from Gibbs chains (``start="gibbs"``, ``burn_in`` sweeps): the
forward runs from the states carried from the previous link (draws of p_A), the
reverse runs from the forward runs' end states (draws of p_B, once burnt in), which are
carried on to the next link.
"""
import math

import numpy as np

from cyrbm import defaults
from cyrbm._random import seed_sequence
from cyrbm.errors import ModelFileError
from cyrbm.estimators.annealing import Annealer
from cyrbm.estimators.results import logmeanexp
from cyrbm.models.exact import EXACT_START_UNITS, exact_log_partition
from cyrbm.models.kinds import MODEL_CLASSES
from cyrbm.models.rbm import RBM, expit

__all__ = ["bennett_acceptance_ratio", "LogZTracker", "MIN_OVERLAP_RUNS"]

#: A link needs this many runs (of the fewer of its two directions) in the overlap ...
MIN_OVERLAP_RUNS = 5.0
#: ... else it is run again with more betas (at most ``refine`` times): as many times
#: more as the smaller variance of the two directions' log weights exceeds
#: TARGET_LOG_WEIGHT_VAR (the variance of AIS log weights falls about as 1 / betas),
#: between REFINE_FACTOR and MAX_REFINE_FACTOR times.
REFINE_FACTOR = 2
MAX_REFINE_FACTOR = 16
TARGET_LOG_WEIGHT_VAR = 4.0


def bennett_acceptance_ratio(w_forward, w_reverse):
    """Bennett's acceptance ratio (Bennett 1976): Delta = ln(Z_B / Z_A) from forward log
    weights ``w_forward`` (A -> B, E[e^w_F] = Z_B / Z_A) and reverse ``w_reverse``
    (B -> A, E[e^w_R] = Z_A / Z_B).

    Delta solves, with n_F, n_R the numbers of weights and M = ln(n_F / n_R),

        sum_F 1 / (1 + e^(M - w_F + Delta)) = sum_R 1 / (1 + e^(-M - w_R - Delta)),

    (its two sides differ by a decreasing function of Delta: solved by bisection between
    the one-sided estimates, to the last bit).  Its variance is the asymptotic one of
    Shirts, Bair, Hooker & Pande (2003), Eq. 10 (the two-state MBAR covariance):

        var(Delta) = (1/N) <1 / (2 + 2 cosh x)>^-1 - (1/n_F + 1/n_R),

    the average over all N = n_F + n_R weights of x = M - w_F + Delta (forward) and
    x = M + w_R + Delta (reverse).  With the overlap O = <1 / (2 + 2 cosh x)> N^2 /
    (n_F n_R), in (0, 1] (1 when A and B are the same model), this is
    var = (1/n_F + 1/n_R) (1/O - 1).

    Returns
    -------
    (delta, se, overlap) : floats
    """
    wf = np.asarray(w_forward, dtype=np.float64).ravel()
    wr = np.asarray(w_reverse, dtype=np.float64).ravel()
    if wf.size < 1 or wr.size < 1:
        raise ValueError("Bennett's acceptance ratio needs forward and reverse weights.")
    if not (np.all(np.isfinite(wf)) and np.all(np.isfinite(wr))):
        raise ValueError("Bennett's acceptance ratio needs finite log weights.")
    nf, nr = wf.size, wr.size
    m = math.log(nf / nr)

    def balance(d):
        # (sum_F f(M - w_F + d) - sum_R f(-M - w_R - d)), f(x) = 1/(1 + e^x): decreasing
        return float(np.sum(expit(-(m - wf + d))) - np.sum(expit(m + wr + d)))

    # the one-sided estimates bracket the root (widened until they do)
    lo = min(logmeanexp(wf), -logmeanexp(wr))
    hi = max(logmeanexp(wf), -logmeanexp(wr))
    width = max(1.0, hi - lo)
    while balance(lo) < 0:
        lo -= width
        width *= 2
    while balance(hi) > 0:
        hi += width
        width *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if balance(mid) > 0:
            lo = mid
        else:
            hi = mid
    delta = 0.5 * (lo + hi)
    x = np.concatenate([m - wf + delta, m + wr + delta])
    # 1 / (2 + 2 cosh x) = sigma(x) sigma(-x) = e^(-|x|) / (1 + e^(-|x|))^2, for any |x|
    e = np.exp(-np.abs(x))
    mean_term = float(np.mean(e / (1.0 + e) ** 2))
    n = nf + nr
    overlap = min(1.0, mean_term * n * n / (nf * nr))
    var = (1.0 / nf + 1.0 / nr) * (1.0 / overlap - 1.0) if overlap > 0 else math.inf
    return float(delta), math.sqrt(max(var, 0.0)), float(overlap)


def refine_factor(w_forward, w_reverse):
    """How many times more betas a link short of overlap is run again with: the smaller
    of the two directions' log-weight variances over TARGET_LOG_WEIGHT_VAR (AIS's
    log-weight variance falls about as 1 / betas once the runs overlap), rounded up and
    kept between REFINE_FACTOR and MAX_REFINE_FACTOR (with little overlap the variances
    themselves are underestimated, so the factor is a floor)."""
    var = min(float(np.var(w_forward)), float(np.var(w_reverse)))
    factor = math.ceil(var / TARGET_LOG_WEIGHT_VAR) if math.isfinite(var) else MAX_REFINE_FACTOR
    return int(min(max(factor, REFINE_FACTOR), MAX_REFINE_FACTOR))


def _rung(model):
    """A rung's own copy of ``model`` (any unit type; no meta)."""
    rung = model.copy()
    rung.meta = {}
    return rung


class LogZTracker:
    """The ladder of tracked ln Z along a training run (see the module's text).

    Parameters
    ----------
    seed : int
        The training seed; link n's direction d draws from streams of (seed, "ais",
        9, n, d, attempt), so a resumed run continues with the same bits.
    runs, betas, burn_in : int
        AIS runs per direction, betas of each link's linear schedule (at first: see
        ``MIN_OVERLAP_RUNS``), Gibbs sweeps that start the runs when they do not start
        from exact draws.
    refine : int
        Times a link short of overlap is run again with REFINE_FACTOR times the betas.
    start : "auto", "exact" or "gibbs"
        Exact draws when the smaller layer has at most EXACT_START_UNITS units ("auto").
    threads : int or None
    state : dict, optional
        ``arrays()`` / ``scalars()`` of a checkpoint, to continue the ladder.
    """

    def __init__(self, seed, *, runs=defaults.TRACK_RUNS, betas=defaults.TRACK_BETAS,
                 burn_in=defaults.TRACK_BURN_IN, refine=defaults.TRACK_REFINE, start="auto",
                 threads=None, state=None):
        self.seed, self.runs, self.betas = int(seed), int(runs), int(betas)
        self.refine = int(refine)
        self.burn_in, self.start, self.threads = int(burn_in), start, threads
        self.last = None            # the last rung's model (RBM, GaussianRBM or SRBM)
        self.log_Z = self.var = None
        self.links = 0
        self.chains = None          # draws of the last rung's model, carried on
        self._previous_update = None
        if state is not None:
            self._restore(state)

    # ------------------------------------------------------------------ ladder
    def begin(self, model):
        """Rung 0: the initial model, ln Z exact (enumerated, or through its W = 0
        copy and a first link).  Returns the rung's record."""
        model = _rung(model)
        if self._exact(model):
            self.last, self.log_Z, self.var = model, exact_log_partition(model, threads=self.threads), 0.0
            return self._record(0, None)
        rng = np.random.default_rng(seed_sequence(self.seed, "ais", 9, 0, 2))
        base, log_Z, self.chains = model._unconnected(self.runs, rng)
        self.last, self.log_Z, self.var = base, log_Z, 0.0
        return self.step(model, 0)

    def step(self, model, update):
        """Add ``model`` (after ``update`` updates) as the next rung: Delta by BAR over
        AIS both ways from the last rung; returns the rung's record."""
        B = _rung(model)
        A = self.last
        betas = self.betas
        for attempt in range(self.refine + 1):
            fwd = self._ratio(A, B, 0, self.chains, betas, attempt)
            rev = self._ratio(B, A, 1, fwd.samples, betas, attempt)
            delta, se, overlap = bennett_acceptance_ratio(fwd.log_weights, rev.log_weights)
            if overlap * self.runs >= MIN_OVERLAP_RUNS or attempt == self.refine:
                break
            betas *= refine_factor(fwd.log_weights, rev.log_weights)
        self.links += 1
        self.log_Z += delta
        self.var += se * se
        self.last = B
        # the next link's forward starts (unused when the runs start from exact draws),
        # and the draws of the last rung that overlap() weighs
        self.chains = fwd.samples
        return self._record(update, (delta, se, overlap, betas))

    @property
    def last_update(self):
        """The update after which the last rung was taken (None before the first)."""
        return self._previous_update

    def overlap(self, model, threads=None):
        """How much ``model`` still overlaps the last rung: the importance-sampling
        effective sample size (Kong 1992) of the carried draws x of the last rung p_A
        weighted by p*_model(x) / p*_A(x), over their number.  1 for the last rung
        itself, falling towards 1/runs as the models part (Trainer's ``track_overlap``
        adds a rung below a threshold).  None while the ladder has no draws (a first
        rung enumerated exactly, before its first link)."""
        if self.chains is None:
            return None
        lw = (model._log_unnormalized_rows(self.chains, threads)
              - self.last._log_unnormalized_rows(self.chains, threads))
        w = np.exp(lw - lw.max())
        return float(w.sum() ** 2 / (w.size * np.dot(w, w)))

    def _exact(self, model):
        return self.start == "exact" or (
            self.start == "auto" and model._start_units() <= EXACT_START_UNITS)

    def _ratio(self, A, B, direction, init, betas, attempt):
        ss = seed_sequence(self.seed, "ais", 9, self.links + 1, direction, attempt)
        ann = Annealer(self.runs, f"linear:{betas}",
                       seed=int(ss.generate_state(1, np.uint64)[0] >> np.uint64(1)),
                       threads=self.threads, progress=False)
        if self._exact(A):
            return ann.log_ratio(A, B, start="exact")
        return ann.log_ratio(A, B, start="gibbs", init=init, burn_in=self.burn_in)

    def _record(self, update, link):
        se = math.sqrt(self.var)
        rec = {"update": int(update), "log_Z": float(self.log_Z), "log_Z_se": se}
        if link is not None:
            delta, dse, overlap, betas = link
            rec.update(delta=delta, delta_se=dse, overlap=overlap, betas=betas,
                       overlap_warning=None)
            if overlap * self.runs < MIN_OVERLAP_RUNS:
                rec["overlap_warning"] = (
                    f"the models after updates {self._previous_update} and {update} overlap "
                    f"too little (BAR overlap {overlap:.3f}: {overlap * self.runs:.1f} of "
                    f"{self.runs} runs, fewer than {MIN_OVERLAP_RUNS:g}, with {betas} betas) "
                    f"for the error bar of ln Z to be trusted from here on: track more "
                    f"often, or with more betas or runs.")
        self._previous_update = int(update)
        return rec

    def log_likelihood(self, record, data, threads=None):
        """Add to ``record`` the mean ln p(v) = mean ln p*(v) - ln Z of the 0/1 rows
        ``data`` under the last rung, and its interval +- 3 se of ln Z (the data's
        mean is exact; the interval is that of ln Z-hat)."""
        mean = float(np.mean(self.last._log_unnormalized_rows(data, threads)))
        ll = mean - record["log_Z"]
        record["log_likelihood"] = ll
        record["log_likelihood_interval"] = [ll - 3 * record["log_Z_se"],
                                             ll + 3 * record["log_Z_se"]]
        return record

    # ------------------------------------------------------------- checkpoints
    def arrays(self):
        """The ladder's arrays for a checkpoint (the last rung and the carried draws)."""
        D = self.last.n_visible
        arrays = {k: a for k, a in self.last.to_arrays().items() if k != "meta"}
        return {**arrays, "chains": self.chains if self.chains is not None
                else np.zeros((0, D), np.uint8)}

    def scalars(self):
        """The ladder's numbers for a checkpoint's meta (JSON: floats round-trip)."""
        return {"log_Z": self.log_Z, "var": self.var, "links": self.links,
                "previous_update": self._previous_update,
                **({"visible": kind, "arrays": sorted(self.arrays())}
                   if (kind := getattr(self.last, "visible", None)) else {})}

    def _restore(self, state):
        kind = MODEL_CLASSES.get(state.get("visible", "binary"), RBM)
        missing = [k for k in state.get("arrays", ()) if k not in state]
        if missing:
            raise ModelFileError(f"the checkpoint's tracked ln Z lacks its last rung's "
                                 f"{', '.join(missing)}, so the ladder cannot be continued; "
                                 f"train again from the start to track ln Z.")
        self.last = kind.from_arrays({k: state[k] for k in state if k in (
            "W", "vbias", "hbias", "sigma", "L")}, "a tracked ln Z's checkpoint")
        self.chains = state["chains"] if state["chains"].shape[0] else None
        self.log_Z, self.var = float(state["log_Z"]), float(state["var"])
        self.links, self._previous_update = int(state["links"]), int(state["previous_update"])
