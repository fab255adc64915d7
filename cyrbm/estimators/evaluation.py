"""Evaluation you can trust: the AIS/RAISE sandwich, self-tuned schedules, diagnostics.

Forward AIS (Salakhutdinov & Murray 2008, "SM08", Eq. 8-18) tends to under-estimate Z
(E[ln Z-hat] <= ln Z), so the test log-probability mean ln p*(v) - ln Z-hat it gives is
*optimistic*.  Reverse annealing, RAISE (Burda, Grosse & Salakhutdinov 2015), gives a
*conservative* estimate of the same number from the same ingredients, and the two
together bracket it (the "sandwich").

RAISE.  The annealing process of forward AIS defines a generative model, the *annealing
model*: x_0 ~ p_0 (the base-rate model), x_k ~ T_k(. | x_{k-1}) for k = 1 .. K, where
T_k is the block-Gibbs transition at beta_k (SM08 Eq. 15-17), reversible with respect
to f_k(v) = p*_{beta_k}(v).  Its probability of a test vector v, p_ann(v), tends to
p(v) as K grows.  RAISE estimates it without bias by running the chain backwards from
the data: x_K = v, then x_{k-1} ~ T_k(. | x_k) for k = K .. 1, with weight

    w = p_0(x_0) prod_{k=1..K} f_k(x_k) / f_k(x_{k-1})
      = [f_K(v) / Z_0] prod_{k=1..K} f_{k-1}(x_{k-1}) / f_k(x_{k-1}),

(T_k's reversibility makes the reverse proposal's density cancel the forward one's), so
E[w] = p_ann(v) and, by Jensen, E[ln w] <= ln p_ann(v).  The second form is what the
Gibbs engine computes: the engine's annealing step on the *reversed* schedule
beta_K, ..., beta_0 accumulates ln f_{k-1}(x) - ln f_k(x) and then moves by T_{k-1}; one
extra transition T_K at the start takes x_K = v to x_{K-1}.  No partition function is
needed (Z_0 is the base rate's, Eq. 18).  Each test vector gets ``chains`` independent
reverse chains, its estimate is ln mean(w) over them; every chain is one run of the
engine with its own random stream, so the vectors and chains run in parallel with the
same bits for any thread count.

The path of a ratio.  With a base RBM A instead of a base-rate model (``base_model``),
p_0 = p_A and the f_k and T_k are those of ratio AIS between A and B (SM08 Sec. 3.2,
Eq. 13-17: A's hidden layer at 1 - beta, B's at beta).  Forward AIS is the ratio run
(ln Z_B-hat = ln Z_A + ln(Z_B / Z_A)-hat) and RAISE runs the same path backwards to
p_A, normalized by ln Z_A.  ln Z_A shifts both estimates by the same amount, so their
gap measures the error of the path itself: the error of the ratio estimate.

Bidirectional check (Grosse, Ghahramani & Adams 2015).  On states v drawn from the model
itself, E[mean ln p*(v) - ln w_RAISE] >= ln Z + KL(p || p_ann) >= ln Z while forward AIS
gives E[ln Z-hat] <= ln Z: ln Z is bracketed, and the AIS/RAISE gap bounds the error of
ln Z-hat (exactly so when the states are exact draws).

Self-tuned schedules.  A pilot run of forward AIS measures how the variance of the
accumulated log weight grows with beta, V(beta), covariances of successive increments
included; the betas are then spaced with density proportional to sqrt(a(beta)), a the
local cost (dV / dbeta) / (pilot spacing), which minimises var(ln w) at a given number
of betas (see :func:`adaptive_schedule`).  With uncorrelated increments this is MS09's
hand rule, "to equalize the variance of the intermediate log weights".
"""
import math
import time

import numpy as np

from cyrbm import _anneal, _engine, _exact, defaults
from cyrbm._omp import resolve_threads
from cyrbm._progress import progress_bar
from cyrbm._random import ais_streams
from cyrbm._threads import pieces
from cyrbm._validation import check_run_memory
from cyrbm.errors import AnnealingError, DataError, ModelMismatchError
from cyrbm.models.exact import EXACT_START_UNITS
from cyrbm.models.rbm import as_rbm
from cyrbm.estimators.results import (ESS_WARN, SHARE_WARN, json_number as _num,  # noqa: F401
                           json_pair as _pair, logmeanexp, weight_diagnostics)
from cyrbm.estimators.schedules import ScheduleError, make_schedule, schedule_count

_LN2 = math.log(2.0)

__all__ = ["EvaluationResult", "evaluate", "raise_log_weights", "adaptive_schedule",
           "parse_adaptive", "save_schedule", "weight_diagnostics", "ESS_WARN",
           "SHARE_WARN"]

# stream keys of the "ais" purpose (the Annealer uses 0-3)
_KEY_RAISE, _KEY_PILOT, _KEY_SIMULATE, _KEY_SIM_RAISE = 4, 5, 6, 7
_KEY_BASE_LOGZ = 8          # base-rate AIS of a base model A whose ln Z is unknown
#: Runs of the engine held in memory at once by RAISE (vectors x chains are cut into
#: batches of this many runs; the batching does not change a number).
RAISE_BATCH = 2000


# ------------------------------------------------------------------------------ RAISE
def raise_log_weights(model, data, base, betas, *, log_Z_base=None, chains=defaults.RAISE_CHAINS, seed=0,
                      threads=1, refresh=200, chunk=500, batch=RAISE_BATCH, progress=None,
                      key=_KEY_RAISE, client=None, runs_per_task=None):
    """Log RAISE weights ln w of every chain of every test vector (see the module
    docstring): a (n_vectors, chains) float64 array.

    Parameters
    ----------
    model : RBM
        The model B whose probabilities are estimated (beta = 1).
    data : uint8 array (n_vectors, n_visible)
        0/1 test vectors; chain c of vector n is engine run n * chains + c.
    base : float64 array (n_visible,) or RBM
        The base p_0 (beta = 0): the visible biases b_A of a base-rate model (stored in
        the model's dtype, as forward AIS uses them), or an RBM A on the same visible
        units: the path of ratio AIS (SM08 Sec. 3.2, :meth:`Annealer.log_ratio`) run
        backwards, whose transitions sample A's hidden layer at 1 - beta and B's at beta.
    betas : float64 array
        The forward schedule 0 = beta_0 < ... < beta_K = 1, run backwards.
    log_Z_base : float
        ln Z_A of an RBM base (required then); a base rate's is Eq. 18.
    chains : int >= 1
    seed : int
        Run r draws from stream r of (seed, "ais", key): independent of ``threads``, of
        ``batch`` and of the slices a cluster runs.
    client : distributed.Client, optional
        Run the chains on a Dask cluster (:mod:`cyrbm.distributed`), ``runs_per_task``
        chains a task: the same bits.

    Notes
    -----
    With a base-rate model, ln w = ln p*(v) - ln Z_0 + (the engine's accumulated
    ln f_{k-1}(x_{k-1}) - ln f_k(x_{k-1})), with ln p*(v) from
    :meth:`RBM.log_unnormalized` and ln Z_0 = M ln 2 + sum_i softplus(b_A,i) (SM08
    Eq. 18).  With an RBM A the engine's f_beta sums out both hidden layers, and the
    layer at inverse temperature 0 contributes a factor 2 per unit: f_1(v) = 2^nA
    p*_B(v) and Z_0 = 2^nB Z_A (as in :meth:`Annealer.log_ratio`), so
    ln w = ln p*_B(v) - ln Z_A + (nA - nB) ln 2 + (the accumulated sum).  The engine
    then runs in float64 if either model is float64 (as ratio AIS does).
    """
    model = as_rbm(model)
    V = np.ascontiguousarray(model._visible_data(data, "data"), dtype=np.uint8)
    if isinstance(chains, bool) or not isinstance(chains, (int, np.integer)) or chains < 1:
        raise AnnealingError(f"chains must be a whole number of at least 1, not {chains!r}.")
    N = V.shape[0]
    R = N * int(chains)
    threads = resolve_threads(threads)
    rev = np.ascontiguousarray(make_schedule(betas)[::-1])
    K = rev.size - 1
    if hasattr(base, "W"):                 # an RBM A, not a base rate's biases
        if base.n_visible != model.n_visible:
            raise ModelMismatchError(f"the base model has {base.n_visible} visible units and "
                                     f"the model {model.n_visible}; RAISE between two RBMs "
                                     f"needs the same visible layer.")
        try:
            log_z_a = float(log_Z_base)
        except (TypeError, ValueError):
            log_z_a = float("nan")
        if not math.isfinite(log_z_a):
            raise AnnealingError(f"RAISE from a base RBM needs its ln Z as a finite number, "
                                 f"not {log_Z_base!r}.")
        dtype = np.float64 if np.float64 in (base.dtype, model.dtype) else np.float32
        if model.dtype != dtype:
            model = model.astype(dtype)
        params = (base.vbias, base.W, base.hbias)
        log_z0 = log_z_a + (model.n_hidden - base.n_hidden) * _LN2
    else:
        dtype = model.dtype
        params = (base, None, None)
        log_z0 = (_anneal.base_rate_log_z(base, model.n_hidden) if log_Z_base is None
                  else float(log_Z_base))
    if R == 0:
        return np.empty((N, chains))
    settings = (int(chains), int(seed), key, dtype, int(refresh), int(chunk), int(batch))
    if client is None:
        bar = progress_bar(progress, R * K, 0, "RAISE", unit="step")
        try:
            out = _raise_runs(params, model, V, rev, 0, R, settings, threads=threads, bar=bar)
        finally:
            if bar is not None:
                bar.close()
    else:
        from cyrbm.distributed import default_chunk, map_slices
        out = np.concatenate(map_slices(
            client, _raise_runs, R, runs_per_task or default_chunk(client, R),
            shared=(params, model, V, rev), args=(settings,), progress=progress,
            desc="RAISE", unit="chain"))
    lp = np.asarray(model.log_unnormalized(V, threads=threads), dtype=np.float64)
    return out.reshape(N, chains) + (lp - log_z0)[:, None]


def _raise_runs(params, model, V, rev, r0, r1, settings, *, threads, bar=None):
    """RAISE chains r0 .. r1 (chain c of vector n is run n * chains + c, from stream r of
    (seed, "ais", key)), in batches of engine runs: their ln w before ln p*(v) - ln Z_0."""
    chains, seed, key, dtype, refresh, chunk, batch = settings
    K = rev.size - 1
    streams = ais_streams(seed, r1, key)
    out = np.empty(r1 - r0)
    for b0 in range(r0, r1, batch):
        b1 = min(r1, b0 + batch)
        eng = _engine.GibbsEngine(*params, model.W, model.vbias, model.hbias,
                                  streams[b0:b1], dtype=dtype, n_threads=threads,
                                  refresh_every=refresh)
        eng.set_visible(V[np.arange(b0, b1) // chains])
        eng.steps(rev, 0, 1, K, False, True)            # x_{K-1} ~ T_K(. | v)
        for k, k1 in pieces(1, K + 1, most=chunk):
            # weight at x_{k-1}, then T_{k-1} (the inputs follow the flips of T_K)
            eng.steps(rev, k, k1, K, True, False)
            if bar is not None:
                bar.update((k1 - k) * (b1 - b0))
        out[b0 - r0:b1 - r0] = eng.log_weights
    return out


def _per_vector(log_w):
    """Per-vector ln mean(w) over the chains and its Monte Carlo variance (the delta
    method: var(w) / (C mean(w)^2); NaN with one chain)."""
    est = logmeanexp(log_w, axis=1) if log_w.shape[1] > 1 else log_w[:, 0].copy()
    C = log_w.shape[1]
    if C < 2:
        return est, np.full(est.shape, np.nan)
    w = np.exp(log_w - np.max(log_w, axis=1, keepdims=True))
    m = np.mean(w, axis=1)
    var = np.var(w, axis=1, ddof=1) / (C * m * m)
    return est, var


# ----------------------------------------------------------------------------- result
class EvaluationResult:
    """The sandwich: forward AIS's optimistic and RAISE's conservative estimates of the
    mean test log-probability, side by side (see :meth:`Annealer.evaluate`).

    Attributes
    ----------
    ais : AISResult
        The forward AIS run (from a base-rate model, or ratio AIS from ``base_model``).
    raise_log_weights : float64 array (n_vectors, chains)
        ln w of every RAISE chain.
    raise_per_vector : float64 array (n_vectors,)
        ln mean(w) over each vector's chains: RAISE's estimate of ln p(v).
    log_unnormalized : float64 array (n_vectors,)
        ln p*(v) of each test vector.
    simulation : dict or None
        The bidirectional check on states drawn from the model (``simulate=N``).
    simulation_log_weights, simulation_log_unnormalized : arrays or None
        Its raw numbers: ln w of every RAISE chain from each simulated state (n, chains)
        and ln p*(v) of each state (n,), from which its ln Z bounds and their standard
        errors are computed.
    base : dict
        What the annealing starts from: ``{"kind": "base_rate", ...}``, or ``{"kind":
        "model", "n_hidden", "log_Z", "log_Z_source" ("given", "exact" or "ais"), ...}``
        for the path of ratio AIS from an RBM A (``base_model``).
    """

    def __init__(self, *, ais, raise_log_weights, log_unnormalized, schedule, chains,
                 raise_seconds, simulation=None, base=None, simulation_raw=None):
        self.ais = ais
        self.base = dict(base) if base is not None else {"kind": "base_rate"}
        self.raise_log_weights = np.asarray(raise_log_weights, dtype=np.float64)
        self.log_unnormalized = np.asarray(log_unnormalized, dtype=np.float64)
        self.schedule = schedule
        self.chains = int(chains)
        self.raise_seconds = float(raise_seconds)
        self.simulation = simulation
        self.simulation_log_weights, self.simulation_log_unnormalized = (
            simulation_raw if simulation_raw is not None else (None, None))
        self.raise_per_vector, self._var = _per_vector(self.raise_log_weights)

    # -- forward AIS (optimistic)
    @property
    def ais_mean_log_prob(self):
        """mean ln p*(v) - ln Z-hat over the test vectors (ln Z-hat = ln Z_A + ln r-hat
        from a base-rate model or from RBM A)."""
        return float(np.mean(self.log_unnormalized)) - self.ais.log_Z

    def ais_interval(self, k=3.0):
        """The range of ais_mean_log_prob over ln(Z-hat +- k sigma-hat) (upper end +inf
        when Z-hat - k sigma-hat <= 0)."""
        lo, hi = self.ais.log_Z_interval(k)
        m = float(np.mean(self.log_unnormalized))
        return (m - hi, m - lo)

    @property
    def ais_se(self):
        """Standard error of AIS's mean test log-probability: sigma-hat / Z-hat (the
        delta method on ln Z-hat, Eq. 12)."""
        return math.exp(self.ais.log_sigma - self.ais.log_Z) if math.isfinite(
            self.ais.log_sigma) else 0.0

    # -- RAISE (conservative)
    @property
    def n_vectors(self):
        return self.raise_per_vector.size

    @property
    def raise_mean_log_prob(self):
        return float(np.mean(self.raise_per_vector))

    @property
    def raise_se(self):
        """Monte Carlo standard error of RAISE's mean over the vectors: the root of the
        summed per-vector variances (delta method over the chains) / n_vectors; None with
        one chain per vector."""
        if self.chains < 2:
            return None
        return float(math.sqrt(np.sum(self._var)) / self.n_vectors)

    @property
    def raise_data_se(self):
        """Standard error over the test vectors (how much the mean would move with
        another test set of the same size), not a Monte Carlo error."""
        n = self.n_vectors
        return float(np.std(self.raise_per_vector, ddof=1) / math.sqrt(n)) if n > 1 else None

    def raise_interval(self, k=3.0):
        se = self.raise_se
        if se is None:
            return None
        m = self.raise_mean_log_prob
        return (m - k * se, m + k * se)

    # -- the sandwich
    @property
    def gap(self):
        """AIS's mean test log-probability minus RAISE's (>= 0 up to noise)."""
        return self.ais_mean_log_prob - self.raise_mean_log_prob

    @property
    def gap_se(self):
        return math.sqrt(self.ais_se ** 2 + (self.raise_se or 0.0) ** 2)

    def _subset_gap_se(self, n):
        """gap_se over the first n vectors only."""
        raise_var = 0.0 if self.chains < 2 else float(np.sum(self._var[:n])) / (n * n)
        return math.sqrt(self.ais_se ** 2 + raise_var)

    @property
    def disagreement(self):
        """One plain sentence when AIS and RAISE differ by more than 3 combined
        standard errors, else None."""
        gap, se = self.gap, self.gap_se
        if abs(gap) <= 3.0 * se:
            return None
        if gap > 0:
            return (f"AIS (optimistic) and RAISE (conservative) differ by {gap:.3f} nats, "
                    f"more than 3 standard errors ({3.0 * se:.3f}): the mean test "
                    f"log-probability is only known to lie roughly between "
                    f"{self.raise_mean_log_prob:.3f} and {self.ais_mean_log_prob:.3f}; "
                    f"anneal with more betas to narrow the gap.")
        causes = (f"RAISE came out {-gap:.3f} nats above AIS, more than 3 standard errors "
                  f"({3.0 * se:.3f}): either the chains have not mixed (too few betas, runs "
                  f"or chains, and the standard errors understate the spread), or the "
                  f"annealing process that RAISE measures fits these test rows better than "
                  f"the RBM does (RAISE is then not conservative, and AIS may be right)")
        verdict = self._raise_above_ais_verdict()
        if verdict is not None:
            return f"{causes}; {verdict}."
        return (f"{causes}; to tell which, add --simulate N (on the model's own states AIS "
                f"and RAISE agree when the chains mix), anneal with more betas (a gap from "
                f"poor mixing shrinks, the annealing process's excess need not), or, when "
                f"the model's smaller layer has at most 30 units, compare AIS's ln Z "
                f"({self.ais.log_Z:.3f}) with the exact one (cyrbm logz --exact).")

    def _raise_above_ais_verdict(self):
        """Which cause of RAISE above AIS the bidirectional check (``simulation``) points
        to, as a clause, or None without it."""
        sim = self.simulation
        if not sim or sim.get("gap") is None:
            return None
        exact = sim.get("exact_log_Z")
        if exact is not None:
            # the exact mean test log-probability: RAISE above it means p_ann > p here
            ais_error = self.ais.log_Z - exact
            excess = self.raise_mean_log_prob - (float(np.mean(self.log_unnormalized)) - exact)
            if excess > abs(ais_error) + 3.0 * (self.raise_se or 0.0):
                return (f"here AIS's ln Z is {abs(ais_error):.3f} nats from the exact "
                        f"{exact:.3f} while RAISE lies {excess:.3f} nats above the exact "
                        f"mean test log-probability, so it is the annealing process that fits "
                        f"these rows better (AIS is the closer estimate)")
            return (f"here AIS's ln Z is {abs(ais_error):.3f} nats from the exact {exact:.3f}, "
                    f"so the chains have not mixed: anneal with more betas or runs")
        se = math.hypot(sim.get("log_Z_lower_se") or 0.0, sim.get("log_Z_upper_se") or 0.0)
        n = sim.get("n")
        if abs(sim["gap"]) <= 3.0 * se:
            return (f"on {n} states from the model AIS and RAISE agree (gap "
                    f"{sim['gap']:.3f}, 3 se {3.0 * se:.3f}), so the chains mix there: most "
                    f"likely the annealing process fits these test rows better")
        return (f"on {n} states from the model they differ too (gap {sim['gap']:.3f}, "
                f"3 se {3.0 * se:.3f}), so the chains have not mixed: anneal with more "
                f"betas or runs")

    def to_dict(self):
        """A JSON-ready dict (docs/json_keys_ais.md, ``cyrbm evaluate``)."""
        a = self.ais
        ess, share, warning = weight_diagnostics(a.log_weights, "runs")
        ais = {
            "mean_log_prob": _num(self.ais_mean_log_prob),
            "se": _num(self.ais_se),
            "mean_log_prob_sigma_interval": _pair(self.ais_interval(1)),
            "mean_log_prob_3sigma_interval": _pair(self.ais_interval(3)),
            "log_Z": _num(a.log_Z),
            "log_Z_base": _num(a.log_Z_base),
            "log_ratio": _num(a.log_ratio),
            "log_Z_3sigma_interval": _pair(a.log_Z_interval(3)),
            "runs": a.runs,
            "ess": _num(ess),
            "max_weight_share": _num(share),
            "weight_warning": warning,
            "seconds": _num(a.seconds),
            "log_weights": [float(x) for x in a.log_weights],
        }
        rse = self.raise_se
        ri = self.raise_interval(1)
        ri3 = self.raise_interval(3)
        rai = {
            "mean_log_prob": _num(self.raise_mean_log_prob),
            "se": _num(rse),
            "mean_log_prob_sigma_interval": _pair(ri),
            "mean_log_prob_3sigma_interval": _pair(ri3),
            "data_se": _num(self.raise_data_se),
            "chains": self.chains,
            "n_vectors": self.n_vectors,
            "seconds": _num(self.raise_seconds),
            "log_prob_per_vector": [float(x) for x in self.raise_per_vector],
        }
        return {
            "ais": ais,
            "raise": rai,
            "gap": _num(self.gap),
            "gap_se": _num(self.gap_se),
            "disagreement": self.disagreement,
            "mean_log_unnormalized": _num(np.mean(self.log_unnormalized)),
            "n_data": self.n_vectors,
            "betas": a.betas,
            "schedule": self.schedule,
            "seed": a.seed,
            "threads": a.threads,
            "dtype": a.dtype,
            "base_rate": a.extra.get("base_rate"),
            "base": self.base,
            "simulate": self.simulation,
        }

    def __repr__(self):
        return (f"EvaluationResult(ais={self.ais_mean_log_prob:.4f}, "
                f"raise={self.raise_mean_log_prob:.4f}, gap={self.gap:.4f}, "
                f"n_vectors={self.n_vectors}, chains={self.chains}, betas={self.ais.betas})")


# ------------------------------------------------------------------------- evaluation
def _own_sandwich(annealer, model, V, base_rate, base_data, chains, pseudocount, **others):
    """evaluate for a model with its own AIS and RAISE runs (``model._sandwich_runs``): a
    Gaussian RBM (from one base of independent Gaussians) or an SRBM (from one base rate
    of independent binary units, fitted as for an RBM)."""
    given = [name for name, value in others.items() if value is not None]
    if given:
        raise AnnealingError(f"{', '.join(given)} of evaluate {'is' if len(given) == 1 else 'are'} "
                             f"for binary RBMs, not yet for {model.noun}.")
    fit_to = V if base_data is None else model._visible_data(base_data, "base_data")
    ais, raise_log_weights = model._sandwich_runs(annealer, V, base_rate, fit_to, chains,
                                                  pseudocount)
    t0 = time.perf_counter()
    log_w = raise_log_weights()
    return EvaluationResult(ais=ais, raise_log_weights=log_w,
                            log_unnormalized=model._log_unnormalized_rows(V),
                            schedule=annealer.schedule_spec, chains=chains,
                            raise_seconds=time.perf_counter() - t0,
                            base={"kind": model.visible,
                                  "base_rate": ais.extra["base_rate"]})


def evaluate(annealer, model, data, *, base_rate="data", base_data=None, chains=defaults.RAISE_CHAINS,
             simulate=None, pseudocount=1.0, base_model=None, base_log_Z=None,
             start="auto", burn_in=None, client=None, chunk=None):
    """The AIS/RAISE sandwich of ``model`` on ``data`` (:meth:`Annealer.evaluate`)."""
    own = getattr(model, "_sandwich_runs", None) is not None   # their own AIS and RAISE
    if not own:
        model = as_rbm(model)
    if isinstance(chains, bool) or not isinstance(chains, (int, np.integer)) or chains < 1:
        raise AnnealingError(f"chains must be a whole number of at least 1, not {chains!r}.")
    chains = int(chains)
    if data is None:
        raise DataError("evaluate needs test data: the vectors whose log-probability to "
                        "estimate.")
    V = model._visible_data(data, "data")
    if V.shape[0] == 0:
        raise DataError("data has no rows.")
    if own:
        return _own_sandwich(annealer, model, V, base_rate, base_data, chains, pseudocount,
                             simulate=simulate, base_model=base_model, client=client)
    if base_model is not None:
        base_model = as_rbm(base_model, "base_model")
    n_hidden = model.n_hidden + (0 if base_model is None else base_model.n_hidden)
    check_run_memory(min(V.shape[0] * chains, RAISE_BATCH), model.n_visible, n_hidden)
    fit_to = None
    if isinstance(base_rate, str):
        fit_to = V if base_data is None else model._visible_data(base_data, "base_data")
    if base_model is None:
        if base_log_Z is not None:
            raise AnnealingError("base_log_Z is ln Z of a base model: give base_model too.")
        bA = annealer._base_biases(base_rate, fit_to, model.n_visible, pseudocount)
        ais = annealer.log_partition(model, base_rate=bA, data=V, client=client, chunk=chunk)
        ais.extra["base_rate"] = ("data" if isinstance(base_rate, str) else
                                  "zero" if base_rate is None else "given")
        base = bA.astype(model.dtype).astype(np.float64)          # the biases the runs use
        describe = {"kind": "base_rate", "base_rate": ais.extra["base_rate"]}
        lp_model = model
    else:
        base, ais, describe = _ratio_forward(annealer, model, V, base_model, base_log_Z,
                                             start, burn_in, base_rate, fit_to, pseudocount,
                                             {"client": client, "chunk": chunk})
        ais.extra["base_rate"] = None
        lp_model = model if model.dtype == ais.dtype else model.astype(ais.dtype)
    t0 = time.perf_counter()
    lw = raise_log_weights(model, V, base, annealer.betas, log_Z_base=ais.log_Z_base,
                           chains=chains, seed=annealer.seed, threads=annealer.threads,
                           refresh=annealer.refresh, chunk=annealer.chunk,
                           progress=annealer.progress, client=client, runs_per_task=chunk)
    seconds = time.perf_counter() - t0
    lp = lp_model.log_unnormalized(V, threads=annealer.threads)
    sim = sim_raw = None
    if simulate:
        sim, sim_raw = _simulate(annealer, model, base, ais, int(simulate), chains,
                                 {"start": start, "burn_in": burn_in},
                                 {"client": client, "chunk": chunk})
    return EvaluationResult(ais=ais, raise_log_weights=lw, log_unnormalized=lp,
                            schedule=annealer.schedule_spec, chains=chains,
                            raise_seconds=seconds, simulation=sim, base=describe,
                            simulation_raw=sim_raw)


def _ratio_forward(annealer, model, V, A, log_Z_a, start, burn_in, base_rate, fit_to,
                   pseudocount, cluster):
    """Forward AIS of the sandwich on the path of ratio AIS from RBM A to ``model`` (SM08
    Sec. 3.2, :meth:`Annealer.log_ratio`, with its starting states), and ln Z_A: the given
    one, else exact (A's smaller layer has at most EXACT_START_UNITS units, or
    ``start="exact"``), else base-rate AIS of A with this annealer's runs and schedule.
    ``cluster`` holds log_partition's client and chunk.  Returns (A, the AISResult with
    log_Z_base = ln Z_A, the base description)."""
    A = as_rbm(A, "base_model")
    if A.n_visible != model.n_visible:
        raise ModelMismatchError(f"the base model has {A.n_visible} visible units and the "
                                 f"model {model.n_visible}; annealing between them needs "
                                 f"the same visible layer.")
    source, lnz_ais = "given", None
    if log_Z_a is not None:
        try:
            log_Z_a = float(log_Z_a)
        except (TypeError, ValueError):
            log_Z_a = float("nan")
        if not math.isfinite(log_Z_a):
            raise AnnealingError("base_log_Z (ln Z of the base model) must be a finite "
                                 "number.")
    elif min(A.n_visible, A.n_hidden) <= EXACT_START_UNITS or start == "exact":
        source = "exact"                    # log_ratio enumerates A's smaller layer
    else:
        source = "ais"
        bA = annealer._base_biases(base_rate, fit_to, A.n_visible, pseudocount)
        lnz_ais = annealer.log_partition(A, base_rate=bA, _key=_KEY_BASE_LOGZ, **cluster)
        log_Z_a = lnz_ais.log_Z
    ais = annealer.log_ratio(A, model, V, start=start, burn_in=burn_in, log_Z_a=log_Z_a,
                             **cluster)
    describe = {"kind": "model", "n_hidden": A.n_hidden, "log_Z": _num(ais.log_Z_base),
                "log_Z_source": source, "start": ais.extra["start"],
                "burn_in": ais.extra["burn_in"], "chains": ais.extra["chains"],
                "steps_between": ais.extra["steps_between"],
                "log_ratio": _num(ais.log_ratio)}
    if lnz_ais is not None:
        lo, hi = lnz_ais.log_Z_interval(3)
        describe.update(log_Z_3sigma_interval=_pair((lo, hi)), log_Z_ess=_num(lnz_ais.ess),
                        log_Z_weight_warning=lnz_ais.weight_warning)
    return A, ais, describe


def _simulate(annealer, model, base, ais, n, chains, ratio_settings, cluster):
    """The bidirectional check on ``n`` states drawn from the model itself; ``base`` is
    the base rate's biases, or RBM A (then ``ratio_settings`` holds log_ratio's start
    and burn_in, for more forward runs); ``cluster``: the client and chunk.  Returns (the summary dict, (RAISE's log
    weights, ln p*(v) of the states))."""
    if n < 1:
        raise AnnealingError(f"simulate needs at least 1 state, not {n}.")
    m = min(model.n_visible, model.n_hidden)
    if m <= EXACT_START_UNITS:
        rng = annealer._generator(_KEY_SIMULATE)
        states, log_z, hidden = _exact.exact_sample_smaller_layer(
            model.W, model.vbias, model.hbias, rng.random(n), n_threads=annealer.threads)
        if hidden:
            p_on = model.visible_probs(states)
            states = (rng.random(p_on.shape) < p_on).astype(np.uint8)
        source, exact_log_z = "exact", float(log_z)
    else:
        if n <= ais.runs:
            states = ais.samples[:n]
        else:
            more = annealer.replace(runs=n)
            if hasattr(base, "W"):         # an RBM A, not a base rate's biases
                states = more.log_ratio(base, model, log_Z_a=ais.log_Z_base,
                                        **ratio_settings, **cluster).samples
            else:
                states = more.log_partition(model, base_rate=base, **cluster).samples
        source, exact_log_z = "ais", None
    lw = raise_log_weights(model, states, base, annealer.betas, log_Z_base=ais.log_Z_base,
                           chains=chains, seed=annealer.seed, threads=annealer.threads,
                           refresh=annealer.refresh, chunk=annealer.chunk,
                           progress=annealer.progress, key=_KEY_SIM_RAISE,
                           client=cluster["client"], runs_per_task=cluster["chunk"])
    est, _ = _per_vector(lw)
    lp_model = model if model.dtype == np.dtype(ais.dtype) else model.astype(ais.dtype)
    lp = np.asarray(lp_model.log_unnormalized(states, threads=annealer.threads))
    mean_lp = float(np.mean(lp))
    raise_mean = float(np.mean(est))
    ais_mean = mean_lp - ais.log_Z
    upper = mean_lp - raise_mean            # reverse estimate of ln Z: an upper bound
    upper_se = float(np.std(lp - est, ddof=1) / math.sqrt(n)) if n > 1 else None
    lower_se = math.exp(ais.log_sigma - ais.log_Z) if math.isfinite(ais.log_sigma) else 0.0
    gap = ais_mean - raise_mean
    how = ("drawn exactly from the model" if source == "exact"
           else "taken from the end states of forward AIS runs (approximate draws)")
    sentence = (f"On {n} states {how}, ln Z lies between {ais.log_Z:.3f} (forward AIS) and "
                f"{upper:.3f} (RAISE), so the error of AIS's ln Z is at most {max(gap, 0.0):.3f} "
                f"nats (in expectation" + ("" if source == "exact" else
                                          ", if the states follow the model") + ").")
    return {"n": n, "source": source, "ais_mean_log_prob": _num(ais_mean),
            "raise_mean_log_prob": _num(raise_mean), "gap": _num(gap),
            "log_Z_lower": _num(ais.log_Z), "log_Z_lower_se": _num(lower_se),
            "log_Z_upper": _num(upper), "log_Z_upper_se": _num(upper_se),
            "log_Z_error_bound": _num(max(gap, 0.0)), "exact_log_Z": _num(exact_log_z),
            "summary": sentence}, (lw, lp)


# --------------------------------------------------------------------------- schedules
def parse_adaptive(spec):
    """K from "adaptive:K" (K >= 2 betas), or None when ``spec`` is something else."""
    if not isinstance(spec, str) or not spec.startswith("adaptive:"):
        return None
    return schedule_count(spec)


def adaptive_schedule(model, n_betas, base_biases=None, *, pilot_runs=256, pilot=None,
                      bins=10, seed=0, threads=1, refresh=200):
    """A schedule of ``n_betas`` betas spaced to minimise the variance of ln w.

    The variance of ln w = sum_k d_k (d_k = ln f_k(x_k) - ln f_{k-1}(x_k), the step
    increments) is sum_k sum_j cov(d_k, d_j), not sum_k var(d_k): where the chains mix
    slowly (near beta = 1 on trained models) successive increments are strongly and
    positively correlated.  So the pilot, forward AIS with ``pilot_runs`` runs over the
    ``pilot`` betas (default: min(n_betas, 1000) evenly spaced) from the base-rate model
    with visible biases ``base_biases`` (zeros if None), records V(beta), the variance
    across runs of the log weight accumulated up to beta, which contains every
    covariance: V(1) = var(ln w).

    Model.  A step of size delta at beta has var(d) ~ g(beta) delta^2 and its increments
    are correlated over tau(beta) sweeps, so a stretch of width dbeta, taken in dbeta /
    delta steps, adds dV ~ g tau delta^2 (dbeta / delta) = a(beta) delta dbeta to the
    variance, with the local cost a = g tau (a variance times an integrated
    autocorrelation time).  From the pilot, over ``bins`` stretches of equal width in
    beta, a ~ (dV / dbeta) / delta_p (delta_p: the pilot's spacing there); increments of
    V that come out negative in a bin are clipped to zero, a is smoothed with weights
    (1, 2, 1) / 4 over neighbouring bins and floored at 5% of its largest value, so every
    stretch gets some betas.  Minimising var(ln w) ~ integral a(beta) delta(beta) dbeta
    at a fixed number of steps K = integral dbeta / delta(beta) (a Lagrange multiplier:
    a = lambda / delta^2) gives delta ~ 1 / sqrt(a): the betas split the length
    integral sqrt(a) dbeta into n_betas - 1 equal parts.  With uncorrelated increments
    (tau = 1) a = g and this is the rule of equal variance per step (var(d) = g delta^2
    the same for every step), what MS09 did by hand: "to equalize the variance of the
    intermediate log weights".

    The pilot's runs draw from their own streams (seed, "ais", 5), never an evaluation's.
    On the 784 x 500 digits RBM of bench/raise_eval.py this rule beats the uniform
    schedule at 14,500 betas and ties with it at 1,000 (bench/README.md).

    Returns
    -------
    betas : float64 array, 0 = beta_0 < ... < beta_{n_betas - 1} = 1
    """
    model = as_rbm(model)
    K = int(n_betas) - 1
    if K < 1:
        raise ScheduleError(f"an adaptive schedule needs at least 2 betas, not {n_betas}.")
    if int(pilot_runs) < 2:
        raise AnnealingError(f"the pilot needs at least 2 runs, not {pilot_runs}.")
    if int(bins) < 1:
        raise AnnealingError(f"the pilot needs at least 1 bin, not {bins}.")
    if pilot is None:
        pilot = np.linspace(0.0, 1.0, max(min(int(n_betas), 1000), 2 * int(bins) + 1))
    grid = make_schedule(pilot)
    threads = resolve_threads(threads)
    D = model.n_visible
    bA = np.zeros(D) if base_biases is None else np.asarray(base_biases, dtype=np.float64)
    bA = bA.astype(model.dtype).astype(np.float64)
    eng = _engine.GibbsEngine(bA, None, None, model.W, model.vbias, model.hbias,
                              ais_streams(seed, int(pilot_runs), _KEY_PILOT),
                              dtype=model.dtype, n_threads=threads, refresh_every=refresh)
    eng.anneal(grid, 0, 1)              # exact samples from the base rate
    L = grid.size - 1
    V = np.zeros(L + 1)                 # V[k]: variance of ln w accumulated to beta_k
    for k in range(1, L + 1):
        eng.anneal(grid, k, k + 1)
        V[k] = np.var(eng.log_weights, ddof=1)
    idx = np.unique(np.searchsorted(grid, np.linspace(0.0, 1.0, int(bins) + 1)))
    idx[0], idx[-1] = 0, L
    idx = np.unique(idx)
    edges = grid[idx]
    width = np.diff(edges)
    a = np.maximum(np.diff(V[idx]), 0.0) * np.diff(idx) / (width * width)
    pad = np.concatenate([a[:1], a, a[-1:]])
    a = (pad[:-2] + 2.0 * pad[1:-1] + pad[2:]) / 4.0
    top = float(np.max(a)) if np.any(a > 0) else 1.0
    s = np.sqrt(np.maximum(a, 0.05 * top))
    length = np.concatenate([[0.0], np.cumsum(s * width)])
    betas = np.interp(np.linspace(0.0, length[-1], K + 1), length, edges)
    betas[0], betas[-1] = 0.0, 1.0
    if np.any(np.diff(betas) <= 0):
        raise ScheduleError(f"{n_betas} betas are too many to space apart in float64.")
    return betas


def save_schedule(path, betas):
    """Write ``betas`` as a text file, one per line (read back by ``make_schedule``),
    atomically."""
    from cyrbm._io import atomic_write
    betas = make_schedule(np.asarray(betas, dtype=np.float64))
    text = "# cyrbm annealing schedule: one inverse temperature per line\n" + "".join(
        f"{b!r}\n" for b in betas.tolist())
    atomic_write(path, lambda f: f.write(text.encode()))


def gap_curve(annealer, model, data, base_biases, result, *, chains=defaults.RAISE_CHAINS, strides=(16, 4),
              max_vectors=100, **base):
    """The AIS/RAISE gap against the number of betas, for the ``--plot`` figure.

    On the first ``max_vectors`` test vectors: the gap of ``result`` (the full schedule)
    and of schedules keeping every stride-th beta (the last one always kept), each with
    the annealer's runs and seed.  Returns [(n_betas, gap, its standard error), ...] in
    increasing n_betas.  ``base`` passes evaluate's base_model, base_log_Z (the one
    ``result`` used, so ln Z_A is not estimated again), start and burn_in.
    """
    V = np.ascontiguousarray(data, dtype=np.uint8)[:max_vectors]
    n = V.shape[0]
    full = (float(np.mean(result.log_unnormalized[:n])) - result.ais.log_Z
            - float(np.mean(result.raise_per_vector[:n])))
    out = [(annealer.betas.size, full, result._subset_gap_se(n))]
    for stride in strides:
        betas = np.unique(np.concatenate([annealer.betas[::stride], [1.0]]))
        if betas.size >= annealer.betas.size or betas.size < 2:
            continue
        ann = annealer.replace(schedule=betas)
        res = evaluate(ann, model, V, base_rate=base_biases, chains=chains, **base)
        out.append((betas.size, res.gap, res.gap_se))
    return sorted(out)
