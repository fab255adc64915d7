"""ln Z through parallel-tempering training, from training's own tempered draws
(Desjardins, Courville & Bengio, "On Tracking the Partition Function", NIPS 2011).

PT training (``Trainer(method="pt")``) keeps M ladders of chains at inverse temperatures
0 = beta_0 < ... < beta_K = 1 of the model class's tempered family (``_tempered_log_p``:
CRI10's (beta W, b, c) for a binary RBM; beta scaling W, c and L for a Gaussian RBM or
an SRBM).  The tracker follows the vector zeta = (ln Z_1, ..., ln Z_K) of the family's
log partition functions at the current parameters; ln Z_0 is known exactly
(``_tempered_base_log_partition``: independent units), the anchor.  Before each round
of the ladders (the sampler calls :meth:`PTLogZTracker.before_round`), the states the
last round left at temperature k are M draws of p_k under the parameters theta of that
round, and give

* an observation (DCB11 Sec. 3.2): ln Z_{k+1} - ln Z_k at theta for every neighbouring
  pair, by bridge sampling with the states at both temperatures, in its optimal form,
  Bennett's acceptance ratio (``bennett_pairs``: w_F = ln p*_{k+1} - ln p*_k at the
  states of k, w_R the reverse at those of k + 1), with its asymptotic variance as the
  observation noise;
* a transition (DCB11 Sec. 3.1): the change of ln Z_k from theta to the new parameters
  theta' (and a re-tuned beta'_k of an adaptive ladder) by importance sampling,
  Delta_k = ln mean_m exp(ln p*'_k(x_m) - ln p*_k(x_m)), with the delta-method
  variance (1 / M) (mean w^2 / (mean w)^2 - 1) as the process noise;
* a Kalman filter (DCB11 Sec. 3.3) over zeta: predict zeta + Delta, P + diag(var Delta);
  update with the K bridge observations y_k = zeta_{k+1} - zeta_k (zeta_0 = ln Z_0
  exact), noise diag(var y_k).  The filter's first state is the chain of bridges itself
  (the posterior under a flat prior).  The posterior variance of ln Z_K = ln Z is the
  error bar.

Variances from a handful of chains: the filter's gain uses the asymptotic (delta-method)
covariances of each update's estimates over the M ladders (the draws paired by ladder,
so estimates from shared states covary).  The error bar does not trust those alone: the
M ladders are independent chains, so the filter carries each ladder's first-order share
of its error (``influence``: the observation's gain and the transitions applied to each
ladder's influence values) and the variance of ln Z is their spread, sum_m E_Km^2 /
(M (M - 1)), the variance over independent replicas, which counts errors that persist
from update to update with the chains as well.  The coverage test in
tests/test_pt_tracking.py checks it against exact ln Z; with 24 ladders instead of 64
the small-sample biases of ln mean exp and BAR made mean z^2 1.2 to 2.3.

A single update whose weights are too degenerate for a delta-method variance to mean
anything (effective sample size below MIN_ESS_FRACTION of
the chains at some temperature), or a pair of temperatures whose BAR overlap holds fewer
than ``tracking.MIN_OVERLAP_RUNS`` chains, is flagged: the record's ``overlap_warning``
(printed by ``cyrbm train``), as the checkpoint ladder flags its links.  Everything
assumes the states are draws of the current tempered models: when training outruns the
chains, the weights degenerate and ln Z drifts low by more than the error bar (on the
digits, 64 x 16 at learning rate 0.1: 0.3 to 1.9 nats, 3 to 20 standard errors, where
the smallest effective sample size was 0.05 to 0.27; docs/user_guide/train.rst), hence
the threshold of one half.

Where it comes from: a binary RBM's ladders (tempering.TemperedChains) on the Gibbs
engine, tracked every update, give the filter everything from the engine's own float64
sums of its kept hidden inputs, with no matrix product of the tracker's
(``_engine_update``): the bridges' log weights are the ones the last round's swaps
computed for their acceptance (each pair's states as its swap met them: draws of p_k
and p_{k+1} at theta_ref), and ln p*_k of the states left at each temperature too
(cyrbm_pt_swaps' terms); then ``ladders.prepare`` sets the new parameters (the next
round then does not) and ln p*'_k of the states comes from the next round's own hidden
draws (its first sweep recomputes their inputs and takes the exps anyway; ``after_round``
ends the transition), the same bits as training without tracking; the same sweep sums
the M states at K - 1 once more, at the top's beta (cyrbm_ak_step's top sums).
BAR's K roots and the update's importance ratios are compiled (_tempering.bar_pairs,
importance_rows).  A record (``step``) refreshes every state's inputs and sums them
instead.  Other unit types' ladders, and ``every`` > 1 (whose draws are gone from the engine by the
transition), weigh the states here (``_observe``, ``_transition``: two free energies of
all M (K + 1) states, one matrix product each).  Records (``step``) are made where the
Trainer asks for a rung.

The states must follow the model (above): with ``Trainer(k=R)``, PT takes R rounds of
the ladders an update (PT-R), the last round's states the filter's draws.
"""
import math

import numpy as np

from cyrbm import _tempering
from cyrbm.errors import ModelFileError
from cyrbm.models.kinds import MODEL_CLASSES
from cyrbm.models.rbm import RBM
from cyrbm.training.tracking import MIN_OVERLAP_RUNS, LogZTracker

__all__ = ["PTLogZTracker", "MIN_ESS_FRACTION", "importance_log_ratio", "top_log_ratio",
           "bennett_pairs"]

#: an update whose importance weights have an effective sample size (Kong 1992) below
#: this fraction of the chains at some temperature is flagged
MIN_ESS_FRACTION = 0.5


def importance_log_ratio(log_w):
    """ln Z'/Z = ln mean exp(log_w) from log weights ln p*'(x) - ln p*(x) of draws x of
    p (DCB11 Eq. 5); each draw's influence w_m / mean w - 1 (the delta method: the
    estimate's error is their mean, its variance (1/n)(mean w^2 / (mean w)^2 - 1)); and
    the effective sample size over n, (sum w)^2 / (n sum w^2).  For a 2-d ``log_w``,
    each row's (one temperature's draws) at once (compiled: _tempering.importance_rows)."""
    lw = np.asarray(log_w, np.float64)
    ratio, influence, ess = _tempering.importance_rows(
        np.ascontiguousarray(lw.reshape(-1, lw.shape[-1])))
    if lw.ndim == 1:
        return float(ratio[0]), influence[0], float(ess[0])
    return ratio, influence, ess


def top_log_ratio(log_a, log_b):
    """ln Z'_K / Z_K through draws x of p_{K-1}: ln mean e^a - ln mean e^b with a = ln
    p*'_K(x) - ln p*_{K-1}(x) (mean e^a -> Z'_K / Z_{K-1}) and b = ln p*_K(x) - ln
    p*_{K-1}(x) (-> Z_K / Z_{K-1}); each draw's influence A / mean A - B / mean B; the
    effective sample size over n of the weights e^a."""
    ratio, influence, ess = _tempering.importance_rows(
        np.ascontiguousarray(np.stack([log_a, log_b]), np.float64))
    return float(ratio[0] - ratio[1]), influence[0] - influence[1], float(ess[0])


def bennett_pairs(w_forward, w_reverse):
    """Bennett's acceptance ratio for K pairs at once (rows of the K x n arrays of log
    weights: w_F = ln p*_B - ln p*_A at n draws of A, w_R = ln p*_A - ln p*_B at n draws
    of B): the root Delta of sum_F sigma(w_F - Delta) = sum_R sigma(w_R + Delta), the
    equation :func:`cyrbm.training.tracking.bennett_acceptance_ratio` solves for one pair
    by bisection, here by Newton's method kept inside the bisection's bracket (one
    update asks for K of them; compiled, _tempering.bar_pairs).  Returns (Delta,
    overlap, influence): the overlap as there (Shirts et al. 2003), and each pair of
    draws' influence on Delta by the optimal bridge (Meng & Wong 1996) at the root,
    u / mean u - v / mean v with u = sigma(w_F - Delta), v = sigma(w_R + Delta), whose
    mean square over n is BAR's asymptotic variance (n x K).  Pairing the draws by
    ladder lets bridges that share draws, and the Deltas of the same draws, have their
    covariances from the same sums."""
    return _tempering.bar_pairs(np.ascontiguousarray(w_forward, np.float64),
                                np.ascontiguousarray(w_reverse, np.float64))


class PTLogZTracker:
    """The Kalman filter over ln Z at PT's temperatures (see the module's text).

    Parameters
    ----------
    temperatures : array
        The ladder's starting betas (beta_0 must be 0, at least two).
    every : int or None
        Updates between transitions (None: every update).
    threads : int or None
        Unused (the sums are NumPy's, the same bits for any number of threads); kept for
        the Trainer's tracker protocol.
    state : dict, optional
        ``arrays()`` / ``scalars()`` of a checkpoint, to continue exactly.
    """

    def __init__(self, temperatures, *, every=None, threads=None, state=None):
        temps = np.asarray(temperatures, np.float64)
        if temps.size < 2 or temps[0] != 0.0:
            raise ValueError("tracking ln Z through PT training anchors it at temperature 0, "
                             "where it is known exactly: give a ladder of at least two "
                             "temperatures that starts at 0.")
        self.every = None if every is None else int(every)
        self.threads = threads
        self.last = None          # the parameters theta_ref the filter's state is at
        self.temps = temps.copy()  # ... and their betas
        self.ref_update = 0       # updates done at theta_ref
        self.mean = self.cov = None
        self.influence = None     # K x M: each ladder's share of the state's error
        self.draws = self.log_p = None   # the states drawn at theta_ref, ln p*_k of them
        self.min_ess = self.min_overlap = 1.0
        self.warning = None
        self.transitions = 0
        self._previous_update = None
        self._ladders = None      # the sampler's ladders, met at its first round
        self._pending = None      # a transition waiting for the next round's sums
        if state is not None:
            self._restore(state)

    # ------------------------------------------------------------ the filter
    def begin(self, model):
        """Start at the initial model: no record (nothing is drawn from it yet)."""
        self._set_reference(model, self.temps, 0)
        return None

    @property
    def last_update(self):
        """The update of the last record (None before the first)."""
        return self._previous_update

    def before_round(self, model, ladders, n_updates, threads=None):
        """The PT sampler's hook, before the round after ``n_updates`` updates (``model``
        then has theta_{n_updates}): observe the states the last round drew at
        theta_ref, and move the filter to ``model`` when a transition is due."""
        self._ladders = ladders
        if self._from_engine(ladders):
            if n_updates > self.ref_update:
                self._engine_update(model, ladders, n_updates, during_round=True)
            return
        if n_updates == self.ref_update + 1 and self.draws is None:
            self._observe(ladders)
        if n_updates > self.ref_update and (self.every is None or n_updates % self.every == 0):
            self._transition(model, ladders.temps, n_updates)

    def step(self, model, update):
        """The record of ``model`` after ``update`` updates (the Trainer's rung): the
        filter is moved to it first."""
        if update > self.ref_update:
            if self._ladders is not None and self._from_engine(self._ladders):
                if update != self.ref_update + 1:
                    raise RuntimeError("the PT tracker missed the draws of its parameters.")
                self._engine_update(model, self._ladders, update)
                return self._record(update)
            if self.draws is None:
                if self._ladders is None or update != self.ref_update + 1:
                    raise RuntimeError("the PT tracker missed the draws of its parameters.")
                self._observe(self._ladders)
            self._transition(model, self._ladders.temps, update)
        return self._record(update)

    # ---------------------------------------------- from the engine's own sums
    def _from_engine(self, ladders):
        """Whether the update can be taken from the engine's sums (a binary RBM's
        TemperedChains whose last round left its swap terms at theta_ref's betas, every
        update): else the states are weighed here (``_observe``, ``_transition``)."""
        return (self.every is None and self.draws is None and self._pending is None
                and getattr(ladders, "terms", None) is not None
                and np.array_equal(ladders.terms_temps, self.temps))

    def after_round(self, ladders):
        """The PT sampler's hook after the first round of an update: the transition that
        ``before_round`` left for its sums ends here."""
        if self._pending is None:
            return
        t, update, model, rows, below, own, top_old = self._pending
        self._pending = None
        K1, M = t.size, own.shape[0]
        lw = ladders.round_sums[rows].reshape(K1 - 2, M) - own[:, 1:K1 - 1].T
        base = own[:, K1 - 2]
        self._move(t, update, lw, (ladders.top_sums[below] - base, top_old - base), model)

    def _engine_update(self, model, ladders, update, during_round=False):
        """Observe and transition at once from the engine (DCB11 Sec. 3.1-3.2), the
        states the last round left at theta_ref never leaving it: the bridges' log
        weights are the ones the round's swaps computed (cyrbm_pt_swaps' terms: each
        pair's states as its swap met them, draws of p_k and p_{k+1}); ln p*_k of the
        states left at each temperature too; then ``ladders.prepare(model)`` recomputes
        their hidden inputs for theta' as the next round would, and ln p*'_k of them
        comes from those (cyrbm_tempered_sums), the visible biases' change added as
        (b' - b).v.  ``during_round`` (before a round, from the PT sampler): nothing is
        recomputed here; the next round's first sweep takes those sums from the exps of
        its hidden draws, and ln p*'_K of the states at K - 1 from their new inputs (the
        same numbers, ``TemperedChains.prepare``), and ``after_round`` ends the
        transition.  The same estimators as
        ``_observe`` / ``_transition``, from the engine's float64 sums of its kept inputs;
        no matrix product of its own."""
        K1 = self.temps.size
        M = ladders.M
        if M < 2:
            raise ValueError("tracking ln Z through PT takes its error bar from the spread "
                             "over independent ladders: give chains of at least 2.")
        terms = ladders.terms
        own = terms[:, :K1]                             # f_k of the state left at k
        wf, wr = terms[:, K1:2 * K1 - 1].T, terms[:, 2 * K1 - 1:3 * K1 - 2].T
        top_old = terms[:, -1]                          # f_K of the state left at K - 1
        self._bridges(wf, wr, M)
        order = ladders.order
        below = order[:, K1 - 2]
        dbias = (np.asarray(model.vbias, np.float64)
                 - np.asarray(self.last.vbias, np.float64))
        # during a round, its first sweep gives the sums (prepare with dbias); a record
        # recomputes every state's inputs now (the round then starts from them)
        ladders.prepare(model, dbias=dbias if during_round else None)
        t = np.asarray(ladders.temps, np.float64)
        # ln p*'_k - ln p*_k of the states at temperatures 1 .. K - 1, ln p*'_K of those
        # at K - 1 (beta = 0's are not needed: its ln Z is exact)
        rows = order[:, 1:K1 - 1].T.ravel()
        if during_round:     # (the round's swaps write into terms: copies)
            self._pending = (t, update, model, rows, below.copy(), own.copy(), top_old.copy())
            return
        base = own[:, K1 - 2]
        top = (ladders.tempered_sums(below, t[-1], dbias) - base, top_old - base)
        new = ladders.tempered_sums(rows, np.repeat(t[1:K1 - 1], M), dbias)
        lw = new.reshape(K1 - 2, M) - own[:, 1:K1 - 1].T
        self._move(t, update, lw, top, model)

    def _set_reference(self, model, temps, update):
        # theta_ref: ``model``'s parameters copied into the last reference's arrays
        # when they match (no new model each update), else a copy of it
        ref, new = self.last, model._parameters()
        old = ref._parameters() if type(ref) is type(model) else {}
        if old.keys() == new.keys() and all(
                old[k].shape == a.shape and old[k].dtype == a.dtype for k, a in new.items()):
            for k, a in new.items():
                np.copyto(old[k], a)
        else:
            ref = model.copy()
            ref.meta = {}
        self.last, self.ref_update = ref, int(update)
        self.temps = np.asarray(temps, np.float64).copy()
        self.draws = self.log_p = None

    def _observe(self, ladders):
        """The bridge observations at theta_ref from the ladders' states (drawn there)."""
        x = np.ascontiguousarray(ladders.tempered_states())
        K1, t = self.temps.size, self.temps
        M = x.shape[0] // K1
        if M < 2:
            raise ValueError("tracking ln Z through PT takes its error bar from the spread "
                             "over independent ladders: give chains of at least 2.")
        k = np.repeat(np.arange(K1), M)
        betas = np.stack([t[np.maximum(k - 1, 0)], t[k], t[np.minimum(k + 1, K1 - 1)]], axis=1)
        lp = self.last._tempered_log_p(x, betas)            # (K1 M) x 3
        self.draws, self.log_p = x, lp
        wf = (lp[:, 2] - lp[:, 1]).reshape(K1, M)[:-1]   # ln p*_{j+1} - ln p*_j, draws of p_j
        wr = (lp[:, 0] - lp[:, 1]).reshape(K1, M)[1:]    # ln p*_j - ln p*_{j+1}, of p_{j+1}
        self._bridges(wf, wr, M)

    def _bridges(self, wf, wr, M):
        """The filter's update with the K bridge observations (BAR of each neighbouring
        pair from its log weights both ways, K x M, DCB11 Sec. 3.2-3.3)."""
        t, K = self.temps, self.temps.size - 1
        pairs = np.arange(K)
        y, overlap, psi = bennett_pairs(wf, wr)
        for j in pairs[overlap * M < MIN_OVERLAP_RUNS]:
            self._warn(f"temperatures {t[j]:.4g} and {t[j + 1]:.4g} overlap too little "
                       f"(BAR overlap {overlap[j]:.3f}: {overlap[j] * M:.1f} of {M} chains, "
                       f"fewer than {MIN_OVERLAP_RUNS:g})")
        self.min_overlap = min(self.min_overlap, float(overlap.min()))
        R = psi.T @ psi / (M * M)
        z0 = self.last._tempered_base_log_partition()
        if self.mean is None:
            # a flat prior: the first state is the chain of bridges from the anchor
            L = np.tril(np.ones((K, K)))
            self.mean, self.cov = z0 + np.cumsum(y), L @ R @ L.T
            self.influence = L @ psi.T
            return
        H = np.eye(K) - np.eye(K, k=-1)           # y_j = zeta_{j+1} - zeta_j, zeta_0 exact
        y_obs = y.copy()
        y_obs[0] += z0
        P = self.cov
        S = H @ P @ H.T + R
        gain = np.linalg.solve(S, H @ P).T         # P H^T S^-1 (S symmetric)
        self.mean = self.mean + gain @ (y_obs - H @ self.mean)
        A = np.eye(K) - gain @ H
        P = A @ P @ A.T + gain @ R @ gain.T           # Joseph form
        self.cov = 0.5 * (P + P.T)
        self.influence = A @ self.influence + gain @ psi.T

    def _transition(self, model, temps, update):
        """Predict: the filter moved from (theta_ref, betas) to (``model``, ``temps``) by
        importance sampling with the draws at theta_ref (DCB11 Sec. 3.1).  The top
        temperature's draws made the update itself (its negative phase), which lowered
        ln p* at them: weighed there, they would put Delta_K low (by about one of its
        standard errors an update on the 10 x 6 models of the tests).  So ln Z_K moves by
        the draws one temperature down, as a ratio (``top_log_ratio``).  The process
        noise is the covariance of the Deltas over the ladders."""
        K1 = self.temps.size
        M = self.draws.shape[0] // K1
        t = np.asarray(temps, np.float64)
        k = np.repeat(np.arange(K1), M)
        new = model._tempered_log_p(self.draws, np.stack([t[k], t[np.minimum(k + 1, K1 - 1)]],
                                                         axis=1))
        lw = (new[:, 0] - self.log_p[:, 1]).reshape(K1, M)
        below = slice((K1 - 2) * M, (K1 - 1) * M)
        self._move(t, update, lw[1:K1 - 1],
                   (new[below, 1] - self.log_p[below, 1],
                    self.log_p[below, 2] - self.log_p[below, 1]), model)

    def _move(self, t, update, log_w, top, model):
        """The filter's prediction step from the update's log weights: row k - 1 of
        ``log_w`` ln p*'_k - ln p*_k of the draws at temperature k (k = 1 .. K - 1),
        ``top`` the pair of ``top_log_ratio`` (through the draws at K - 1)."""
        K = t.size - 1
        M = top[0].size
        delta, psi, ess = np.empty(K), np.empty((M, K)), np.empty(K)
        if K > 1:
            d, p, e = importance_log_ratio(np.reshape(log_w, (K - 1, M)))
            delta[:-1], psi[:, :-1], ess[:-1] = d, np.transpose(p), e
        delta[-1], psi[:, -1], ess[-1] = top_log_ratio(*top)
        for k in np.flatnonzero(ess < MIN_ESS_FRACTION)[-1:] + 1:
            self._warn(f"the update's importance weights at temperature {t[k]:.4g} have "
                       f"an effective sample size of {ess[k - 1] * M:.1f} of {M} chains")
        self.min_ess = min(self.min_ess, float(ess.min()))
        self.mean = self.mean + delta
        self.cov = self.cov + psi.T @ psi / (M * M)
        self.influence = self.influence + psi.T
        self.transitions += 1
        self._set_reference(model, t, update)

    def _warn(self, what):
        self.warning = what

    # -------------------------------------------------------------- records
    def log_Z(self):
        """(ln Z at beta = 1, its standard error) of the filter's parameters: the
        variance over the M independent ladders of their accumulated influence on
        ln Z_K, sum_m E_Km^2 / (M (M - 1)) (see the module's text)."""
        E = self.influence[-1]
        return float(self.mean[-1]), math.sqrt(float(np.dot(E, E)) / (E.size * (E.size - 1)))

    def _record(self, update):
        log_Z, se = self.log_Z()
        rec = {"update": int(update), "log_Z": log_Z, "log_Z_se": se,
               "ess": self.min_ess, "overlap": self.min_overlap, "overlap_warning": None}
        if self.warning is not None:
            rec["overlap_warning"] = (
                f"tracking ln Z through PT, up to update {update}: {self.warning}, too few "
                f"for the error bar of ln Z to be trusted from here on: use more chains, "
                f"more temperatures, a smaller learning rate, or track every update.")
        self.min_ess = self.min_overlap = 1.0
        self.warning = None
        self._previous_update = int(update)
        return rec

    log_likelihood = LogZTracker.log_likelihood

    # ------------------------------------------------------------- checkpoints
    def arrays(self):
        """The filter's arrays for a checkpoint: theta_ref's, its betas, the state and
        covariance, and the pending draws with their ln p* (empty when none)."""
        D = self.last.n_visible
        arrays = {k: a for k, a in self.last.to_arrays().items() if k != "meta"}
        K = self.temps.size - 1
        return {**arrays, "temps": self.temps,
                "chains": self.draws if self.draws is not None else np.zeros((0, D), np.uint8),
                "log_p": self.log_p if self.log_p is not None else np.zeros((0, 3)),
                "mean": self.mean if self.mean is not None else np.zeros(0),
                "cov": self.cov if self.cov is not None else np.zeros((0, K)),
                "influence": (self.influence if self.influence is not None
                              else np.zeros((K, 0)))}

    def scalars(self):
        """The filter's numbers for a checkpoint's meta."""
        return {"ref_update": self.ref_update, "min_ess": self.min_ess,
                "min_overlap": self.min_overlap, "warning": self.warning,
                "transitions": self.transitions, "previous_update": self._previous_update,
                "visible": getattr(self.last, "visible", "binary"),
                "arrays": sorted(self.arrays())}

    def _restore(self, state):
        kind = MODEL_CLASSES.get(state.get("visible", "binary"), RBM)
        missing = [k for k in state.get("arrays", ()) if k not in state]
        if missing or "temps" not in state:
            raise ModelFileError("the checkpoint's tracked ln Z lacks part of the PT "
                                 "tracker's state, so it cannot be continued; train again "
                                 "from the start to track ln Z.")
        self.last = kind.from_arrays({k: state[k] for k in state if k in (
            "W", "vbias", "hbias", "sigma", "L")}, "a tracked ln Z's checkpoint")
        self.temps = np.asarray(state["temps"], np.float64)
        pending = state["chains"].shape[0] > 0
        self.draws = np.ascontiguousarray(state["chains"]) if pending else None
        self.log_p = np.asarray(state["log_p"], np.float64) if pending else None
        self.mean = np.asarray(state["mean"], np.float64) if state["mean"].size else None
        self.cov = np.asarray(state["cov"], np.float64) if self.mean is not None else None
        self.influence = (np.asarray(state["influence"], np.float64)
                          if self.mean is not None else None)
        self.ref_update = int(state["ref_update"])
        self.min_ess, self.min_overlap = float(state["min_ess"]), float(state["min_overlap"])
        self.warning, self.transitions = state["warning"], int(state["transitions"])
        prev = state["previous_update"]
        self._previous_update = None if prev is None else int(prev)
