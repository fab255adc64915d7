"""Parallel tempering (Cho, Raiko & Ilin 2010, Sec. IV) over cyrbm's Gibbs engine, and
over the own sweeps of the other unit types (``TemperedStates``), and parallel
trajectory tempering (``TrajectoryChains``) for every model class.

The chains of a ladder follow the RBMs R_k with parameters (T_k W, b, c), 0 <= T_0 < ...
< T_K = 1 (CRI10 Table I): each round, one tempered block-Gibbs sweep of every chain
(``GibbsEngine.sweep`` with a temperature per chain, in the engine's tempered
configuration ``set_tempered``), then swaps of neighbours from the top down by the
Metropolis rule, Eq. 5 (``GibbsEngine.swap``; chains keep their states and random
streams and trade temperatures).  ``TemperedChains`` holds M such ladders for training
(persistent, the T = 1 states are the negative phase) and ``retune`` the adaptive
ladder: spacing re-tuned so that neighbouring pairs swap at equal rates.

A GaussianRBM or SRBM has no engine configuration for CRI10's family; its ladders
(``TemperedStates``) follow the tempered family the class states in its ``sample``
(beta scaling W, the hidden biases and L, keeping the visible biases and sigma, so
beta = 0 is independent visible units), on the class's own compiled sweeps at a
constant beta (cyrbm_gauss_block / cyrbm_srbm_steps between the model and the base of
its own visible biases), and swap states by Eq. 5: one nogil engine driver per class
(``_tempering.gauss_pt_sweeps`` / ``srbm_pt_sweeps``, through the class's ``_pt_rounds``),
which the C API runs too.
"""
import numpy as np

from cyrbm import _anneal, _engine
from cyrbm.errors import ModelMismatchError
from cyrbm._random import make_run_streams, make_streams, pt_swap_streams

#: CRI10's ladder: 0, 0.05, ..., 1 (K = 20).
DEFAULT_TEMPERATURES = np.linspace(0.0, 1.0, 21)
#: TemperedStates' swap rule: 0 CRI10's Eq. 5; 1 (the untempered ln p*_1 at both rungs)
#: and 2 (e left out) are wrong on purpose, for the tests' power checks only.
_SWAP_VARIANT = 0


def check_temperatures(temps, what="temperatures"):
    """A float64 ladder 0 <= T_0 < ... < T_K = 1, or a ValueError in one sentence."""
    try:
        t = np.asarray(temps, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numbers, not {temps!r}.") from None
    if t.size < 1 or not np.all(np.isfinite(t)):
        raise ValueError(f"{what} must be finite numbers, at least one.")
    if t.size > 1 and not np.all(np.diff(t) > 0):
        raise ValueError(f"{what} must increase strictly, not {_show(t)}.")
    if t[0] < 0:
        raise ValueError(f"{what} must not be negative (the first is {t[0]:g}).")
    if t[-1] != 1.0:
        raise ValueError(f"{what} must end at 1 (the model itself), not at {t[-1]:g}.")
    return t


def _show(t):
    return ", ".join(f"{x:g}" for x in t[:8]) + (", ..." if t.size > 8 else "")


def parse_temperatures(spec):
    """(ladder, adaptive) from a specification: None (CRI10's 0, 0.05, ..., 1), N (N
    evenly spaced temperatures from 0 to 1, N >= 2), a list or "0,0.5,1", or
    "adaptive:N" (N evenly spaced to start, then re-tuned during training; its ends
    stay) or "adaptive:LIST" (that ladder to start)."""
    if spec is None:
        return DEFAULT_TEMPERATURES.copy(), False
    adaptive = False
    if isinstance(spec, str):
        text = spec.strip()
        if text.lower().startswith("adaptive:"):
            adaptive = True
            text = text.split(":", 1)[1]
        parts = [p for p in text.replace(" ", "").split(",") if p != ""]
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"temperatures must be a count N, a list such as '0,0.5,1' or "
                             f"'adaptive:N', not {spec!r}.") from None
        if len(values) == 1 and (adaptive or "." not in parts[0]):
            spec = values[0]
        else:
            return check_temperatures(values), adaptive
    if np.ndim(spec) == 0:
        n = float(spec)
        if not n.is_integer() or n < 2:
            raise ValueError(f"the number of temperatures must be a whole number of at least 2, "
                             f"not {spec!r}.")
        return np.linspace(0.0, 1.0, int(n)), adaptive
    return check_temperatures(spec), adaptive


def retune(temps, accept_rate, damping=0.5, floor=1e-3):
    """A ladder with the same ends whose neighbouring pairs should swap at equal rates.

    The rejection rate 1 - a_k of pair (T_{k-1}, T_k) is spread evenly over that interval;
    the new temperatures sit at equal quantiles of the cumulative rejection, and the
    result is ``damping`` of the way from the old ladder to that one (so noisy rates
    do not throw the ladder about).  T_0 and T_K = 1 stay; the order stays strict.
    """
    t = np.asarray(temps, dtype=np.float64)
    K = t.size - 1
    if K < 2:
        return t.copy()
    rej = np.maximum(1.0 - np.asarray(accept_rate, dtype=np.float64), floor)
    cum = np.concatenate([[0.0], np.cumsum(rej)])
    target = np.linspace(0.0, cum[-1], K + 1)
    new = np.interp(target, cum, t)
    out = (1.0 - damping) * t + damping * new
    out[0], out[-1] = t[0], 1.0
    # keep a strict order (a tiny minimum gap)
    gap = 1e-6 * (out[-1] - out[0])
    for k in range(1, K + 1):
        out[k] = max(out[k], out[k - 1] + gap)
    out[-1] = 1.0
    return out


class TemperedChains:
    """M persistent parallel-tempering ladders of K+1 chains on one Gibbs engine.

    ``step(W, vbias, hbias)`` is one round of CRI10 Table I (one sweep per chain at its
    temperature, then the swaps from the top down) with the current parameters;
    ``top()`` the T = 1 states (M x n_visible), the negative phase of PT training.
    The state (``arrays()`` / ``from_arrays``) is the chains' visible states, their
    engine streams, the ladders' swap streams and their run order at each temperature:
    the kept inputs are recomputed at each round (the parameters changed), so a resumed
    run continues bit for bit.
    """

    def __init__(self, temps, n_visible, n_hidden, chains, *, dtype=np.float32, n_threads=1,
                 seed=0, init=None, adaptive=False, state=None):
        self.temps = check_temperatures(temps)
        self.adaptive = bool(adaptive)
        K1 = self.temps.size
        self.M, self.K1 = int(chains), K1
        R = self.M * K1
        self.n_visible = n_visible
        if state is None:
            state = {
                "chains": np.ascontiguousarray(init, dtype=np.uint8),
                "streams": make_run_streams(seed, "chains", R, 2),
                "swap_streams": make_streams(seed, "chains", self.M, 3),
                "order": np.arange(R, dtype=np.int32).reshape(self.M, K1),
                "window": np.zeros((2, max(K1 - 1, 1)), dtype=np.int64),
            }
        self.order = np.ascontiguousarray(state["order"], dtype=np.int32)
        self.swap_streams = np.ascontiguousarray(state["swap_streams"], dtype=np.uint64)
        self.window = np.ascontiguousarray(state["window"], dtype=np.int64)
        if "temperatures" in state:
            self.temps = check_temperatures(state["temperatures"])
        chains_v = np.ascontiguousarray(state["chains"], dtype=np.uint8)
        if chains_v.shape != (R, n_visible) or self.order.shape != (self.M, K1) \
                or self.swap_streams.shape != (self.M, 4):
            raise ValueError("tempered chain state of the wrong shape.")
        self.beta = np.empty(R)
        self.beta[self.order.ravel()] = np.tile(self.temps, self.M)
        zeros_b = np.zeros(n_visible)
        # no subset tables: the parameters change at every update, and rebuilding the
        # tables (about 8 n_visible n_hidden additions) costs more than they save on the
        # refreshed sweeps of fewer than about a thousand chains (bench/README.md)
        previous = _anneal.use_dense_tables("never")
        try:
            self.engine = _engine.GibbsEngine(zeros_b, None, None,
                                              np.zeros((n_visible, n_hidden)), zeros_b,
                                              np.zeros(n_hidden), state["streams"],
                                              dtype=dtype, n_threads=n_threads)
        finally:
            _anneal.use_dense_tables(previous)
        self.engine.set_visible(chains_v)
        self.accepted = np.zeros((self.M, max(K1 - 1, 1)), dtype=np.int64)
        # what the last round's swaps leave the PT tracker of ln Z (cyrbm_pt_swaps'
        # terms, at the temperatures ``terms_temps``); None until a round makes them
        terms = state.get("swap_terms")
        self.terms = (np.array(terms, np.float64) if terms is not None
                      and np.shape(terms) == (self.M, 3 * K1 - 1) else None)
        self.terms_temps = (np.array(state.get("terms_temperatures", self.temps), np.float64)
                            if self.terms is not None else None)
        self._prepared = None
        self.round_sums = self.top_sums = None

    def step(self, model, n_threads=None):
        """One round with the parameters of ``model`` (an RBM): sweep, then swaps.  After
        ``prepare(model)`` of the same model, its parameters unchanged since (the biases
        are checked, W is not: a copy and comparison of W would cost a tenth of the PT
        tracker's time), the round starts from the parameters and inputs that set (the
        same numbers)."""
        if n_threads is not None:
            self.engine.n_threads = int(n_threads)
        refresh, sums, top = True, False, None
        if self._prepared is not None and self._prepared[0] is model and all(
                np.array_equal(a, b) for a, b in zip(self._prepared[1:3], (
                    model.vbias, model.hbias))):
            refresh, sums, top = self._prepared[3:]
        else:
            self.engine.set_tempered(model.W, model.vbias, model.hbias)
        self._prepared = None
        self.engine.sweep(1, beta=self.beta, force_refresh=refresh, tempered_sums=sums, top=top)
        self.round_sums = self.engine.log_weights if sums else None
        self.top_sums = self.engine.top_log_weights if top is not None else None
        if self.K1 > 1:
            if self.terms is None:
                self.terms = np.zeros((self.M, 3 * self.K1 - 1))
            self.terms_temps = self.temps.copy()
            self.engine.swap(self.temps, self.order, self.beta, self.swap_streams, self.accepted,
                             self.terms)

    # --------------------------------------------- the PT tracker's sums (DCB11)
    def prepare(self, model, n_threads=None, dbias=None):
        """Set ``model``'s parameters for the next round and recompute every chain's
        hidden inputs for them now, as the round would (``step`` then starts from them:
        the same numbers, for ``tempered_sums`` of any chains).  With ``dbias`` nothing is
        recomputed now: the next round's first sweep leaves ``round_sums``, every chain's
        ``tempered_sums`` at its beta with that dbias, of its state before the round (from
        the exps of its hidden draws), and ``top_sums``, those of the chains one
        temperature below the top at the top's beta (the others' entries undefined)."""
        if n_threads is not None:
            self.engine.n_threads = int(n_threads)
        self.engine.set_tempered(model.W, model.vbias, model.hbias)
        if dbias is None:
            self.engine.refresh_inputs()
            how = ("inputs", False, None)
        else:
            self.engine.set_bias_change(dbias)
            how = (True, True, (self.temps[-2], self.temps[-1]) if self.K1 > 1 else None)
        self._prepared = (model, model.vbias.copy(), model.hbias.copy()) + how

    def tempered_sums(self, rows, beta, dbias=None):
        """sum_j softplus(beta (W^T v)_j + c_j) (+ dbias.v) of the chains ``rows`` from the
        engine's kept inputs: of the parameters of the last round after ``step``, of the
        new ones after ``prepare`` (GibbsEngine.tempered_sums)."""
        return self.engine.tempered_sums(rows, beta, dbias)

    def top(self, ladders=None):
        """The T = 1 state of each ladder (M x n_visible), or of the given ladders."""
        return self.engine.visible(self.order[:, -1] if ladders is None
                                   else self.order[ladders, -1])

    def tempered_states(self):
        """Every chain's state, grouped by temperature: rows k M .. (k + 1) M - 1 are the
        states at T_k of ladders 0 .. M - 1 (the PT tracker's draws of each R_k)."""
        return self.engine.visible(self.order.T.ravel())

    def top_inputs(self, ladders):
        """W^T v of the T = 1 states of the given ladders (the engine's kept hidden
        inputs, current after the swaps of ``step``), or None without swaps (K = 0)."""
        if self.K1 < 2:
            return None
        return self.engine.hidden_inputs_b(self.order[ladders, -1])

    def adapt(self, min_trials):
        """Retune the ladder (``retune``) once the window (``window[0]``: accepted swaps
        per pair, ``window[1]``: attempts, which the caller adds) holds ``min_trials``
        attempts per pair; returns whether it did."""
        if not self.adaptive or self.K1 < 3 or self.window[1, 0] < min_trials:
            return False
        rates = self.window[0, : self.K1 - 1] / self.window[1, 0]
        self.temps = retune(self.temps, rates)
        self._retuned()
        self.window[:] = 0
        return True

    def _retuned(self):
        self.beta[self.order.ravel()] = np.tile(self.temps, self.M)

    def arrays(self):
        """The state to checkpoint (``accepted`` is not part of it: take it first)."""
        extra = {} if self.terms is None else {"swap_terms": self.terms.copy(),
                                               "terms_temperatures": self.terms_temps.copy()}
        return {"chains": self.engine.visible(), "streams": self.engine.streams,
                "swap_streams": self.swap_streams.copy(), "order": self.order.copy(),
                "window": self.window.copy(), "temperatures": self.temps.copy(), **extra}


class TemperedStates(TemperedChains):
    """M persistent parallel-tempering ladders of K+1 chains for a model class with a
    tempered family on its own sweeps (GaussianRBM, SRBM: ``model._pt_rounds`` runs
    rounds of the family's Gibbs transitions at each chain's beta and the swaps, in one
    nogil engine driver; ln p*_beta(v) = g + beta e + sum_j softplus(beta x_j), the
    ``_tempered_parts`` of the class; the families are stated in each class's
    ``sample``: beta scales W, the hidden biases c and L, and keeps the visible biases
    and sigma, so beta = 0 is independent visible units).

    Chain m K1 + k of ``state["chains"]`` stays at temperature k, on its stream
    ``state["streams"][m K1 + k]``; the ladders swap states (where TemperedChains'
    engine swaps temperatures; ``order`` is the identity, kept for the checkpoint's
    shape).  A round (``step(model)``, CRI10 Table I): one sweep of the chains at each
    beta_k, then per ladder the swaps of neighbours from the top down, pair (k, k+1)
    for k = K-1 .. 0 with the uniform u[m, K-1-k] of ladder m's swap stream
    (K uniforms a round, as ``_anneal.chain_uniforms`` draws them), taken when u <
    min(1, r) (Eq. 5, ln r from ``_tempered_parts``' g, e and x; _tempering.pyx's
    ``_ladder_swaps``).  Every number comes from a chain's or a ladder's stream, so results do
    not depend on threads.  ``accepted`` (M x K) counts the swaps taken per pair.
    """

    def __init__(self, temps, chains, *, n_threads=1, adaptive=False, state):
        self.temps = check_temperatures(state.get("temperatures", temps))
        self.adaptive = bool(adaptive)
        self.M, self.K1 = int(chains), self.temps.size
        R = self.M * self.K1
        self.n_threads = int(n_threads)
        self.v = np.array(state["chains"], order="C")
        self.streams = np.array(state["streams"], dtype=np.uint64, order="C")
        self.swap_streams = np.array(state["swap_streams"], dtype=np.uint64, order="C")
        self.order = np.arange(R, dtype=np.int32).reshape(self.M, self.K1)
        self.window = np.array(state.get("window", np.zeros((2, max(self.K1 - 1, 1)))),
                               dtype=np.int64)
        if self.v.ndim != 2 or self.v.shape[0] != R or self.streams.shape != (R, 4) \
                or self.swap_streams.shape != (self.M, 4) \
                or self.window.shape != (2, max(self.K1 - 1, 1)):
            raise ValueError("tempered chain state of the wrong shape.")
        self.accepted = np.zeros((self.M, max(self.K1 - 1, 1)), dtype=np.int64)

    def step(self, model, n_threads=None, rounds=1):
        """``rounds`` rounds at ``model``'s parameters: a sweep of every chain at its
        beta, then the swaps (the class's ``_pt_rounds``: one nogil engine driver,
        _tempering.gauss_pt_sweeps / srbm_pt_sweeps)."""
        if n_threads is not None:
            self.n_threads = int(n_threads)
        model._pt_rounds(self.v, self.streams, self.swap_streams, self.temps, int(rounds),
                         self.accepted, self.n_threads, _SWAP_VARIANT)

    def _retuned(self):
        pass

    def top(self, ladders=None):
        """The beta = 1 state of each ladder (M x n_visible), or of the given ladders."""
        return self.v[self.order[:, -1] if ladders is None else self.order[ladders, -1]]

    def tempered_states(self):
        """Every chain's state, grouped by temperature (as TemperedChains')."""
        return self.v[self.order.T.ravel()]

    def top_inputs(self, ladders):
        """None: the training step computes the hidden inputs of the states itself."""
        return None

    def arrays(self):
        """The state to checkpoint (``accepted`` is not part of it: take it first)."""
        return {"chains": self.v.copy(), "streams": self.streams.copy(),
                "swap_streams": self.swap_streams.copy(), "order": self.order.copy(),
                "window": self.window.copy(), "temperatures": self.temps.copy()}


def sampler_plan(model, n, steps, sampler, temperatures, ladder, check_rung):
    """``sample``'s sampler settings of ``model`` checked: (temperatures or None, the
    PTT ladder of ``check_rung``'s models with ``model`` last, or None)."""
    if n < 0 or steps < 0:
        raise ValueError("n and steps must be non-negative.")
    if sampler not in ("gibbs", "pt", "ptt"):
        raise ValueError(f"sampler must be 'gibbs', 'pt' or 'ptt', not {sampler!r}.")
    if sampler != "pt" and temperatures is not None:
        raise ValueError("temperatures are for sampler='pt'.")
    if (sampler == "ptt") != (ladder is not None):
        raise ValueError("sampler='ptt' samples along a ladder of earlier models: give "
                         "ladder=[...] with it (and only with it).")
    temps = rungs = None
    if sampler == "ptt":
        rungs = [check_rung(m) for m in ladder]
        for m in rungs:
            if (m.n_visible, m.n_hidden) != (model.n_visible, model.n_hidden):
                raise ModelMismatchError(
                    f"a ladder model has {m.n_visible} x {m.n_hidden} units, this model "
                    f"{model.n_visible} x {model.n_hidden}: PTT swaps states between models "
                    f"of the same shape.")
        rungs.append(model)
    if sampler == "pt":
        temps, adaptive = parse_temperatures(temperatures)
        if adaptive:
            raise ValueError("adaptive temperatures are for training; give a ladder.")
    return temps, rungs


class SweptChains:
    """Chains of a model with its own ``_sweeps`` (GaussianRBM, SRBM) with the part of
    GibbsEngine's interface TrajectoryChains uses (the classes' ``_chains``)."""

    def __init__(self, model, v, streams, n_threads):
        self.model, self.n_threads = model, int(n_threads)
        self.v = np.array(v, dtype=model._state_dtype, order="C")
        self.streams = np.array(streams, dtype=np.uint64, order="C")

    def sweep(self, n, beta=1.0, force_refresh=True):
        """``n`` sweeps at the model (beta 1; each recomputes its inputs from v)."""
        self.model._sweeps(self.v, self.streams, 1, int(n) + 1, self.n_threads, beta=beta)

    def visible(self):
        return self.v.copy()

    def set_visible(self, v):
        self.v[...] = v


def tempered_sample(model, v, k0, steps, streams, temps, rungs, seed, n_threads):
    """``sample(sampler="pt" | "ptt")`` of a GaussianRBM or SRBM (models.Layers.
    _chain_sample): the chains ``v`` (INOUT; ladder m's chain at temps[k] is row
    m K1 + k on streams[m K1 + k]) take step 0's exact draw at beta = 0 first when
    ``k0`` is 0, then ``steps`` rounds of TemperedStates (swaps on stream m of
    ``pt_swap_streams(seed, n)``) or of TrajectoryChains on ``rungs``.  Returns the
    final states at beta = 1 (the model)."""
    if k0 == 0:
        model._sweeps(v, streams, 0, 1, n_threads)
    if temps is not None:
        n = v.shape[0] // temps.size
        ladders = TemperedStates(temps, n, n_threads=n_threads, state={
            "chains": v, "streams": streams, "swap_streams": pt_swap_streams(seed, n)})
        ladders.step(model, n_threads, rounds=steps)
        return ladders.top()
    chains = TrajectoryChains(rungs, v.shape[0], seed=seed, init=v, dtype=model.dtype,
                              n_threads=n_threads)
    chains.step(steps)
    return chains.states(-1)


class TrajectoryChains:
    """Parallel trajectory tempering (PTT; Béreux, Decelle, Furtlehner, Rosset & Seoane,
    ICLR 2025, arXiv 2405.15376): ``chains`` Gibbs chains at each model of a training
    trajectory, the rungs 0 .. K-1 (rung 0 the earliest, rung K-1 the model sampled),
    swapped between neighbouring models instead of neighbouring temperatures.

    ``models`` are models of one class (RBM, GaussianRBM or SRBM) and shape; each class
    supplies what a rung needs: ``_chains`` (its Gibbs chains at the model: a
    GibbsEngine for an RBM, the class's own ``_sweeps`` for the others), their streams
    (``_chain_streams``) and ln p*(v) (``_log_unnormalized_rows``, h summed out).

    A round is one Gibbs sweep of every chain at its rung's model (SM08 Eq. 5-6; an
    SRBM's visible units one at a time), then Metropolis swaps (CRI10 Eq. 5 with models
    for temperatures): chain m of rungs k and k+1 exchange their visible states with
    probability

        min(1, p*_k(x_{k+1}) p*_{k+1}(x_k) / (p*_k(x_k) p*_{k+1}(x_{k+1}))),

    ln p*_k(v) = -F_k(v), the rung's free energy (the RBM's b_k.v + sum_j softplus(c_k +
    W_k^T v)_j; with the Gaussian or lateral terms of the other classes).
    Round t tries the pairs (k, k+1) with k = t mod 2 (deterministic even-odd swaps: the
    pairs of a round are disjoint, and states travel the ladder without the diffusive
    back-and-forth of random pair choice; Syed, Bouchard-Côté, Deligiannidis & Doucet
    2022).  Each swap draws one uniform from the chain's swap stream, each sweep from the
    chain's own engine stream, so the result depends only on the seed, never on threads.

    ``rung_model`` replaces the last rung's model (training: the current model), and
    ``add_rung`` appends a model, its chains copied from the last rung's.
    """

    def __init__(self, models, chains, *, seed=0, purpose="sample", init=None,
                 dtype=np.float32, n_threads=1, state=None):
        self.M = int(chains)
        self.seed, self.purpose = seed, purpose
        self.dtype = np.dtype(dtype)
        self.n_threads = int(n_threads)
        self.models, self.engines = [], []
        self.round = 0 if state is None else int(state["round"])
        self.swap_streams = (make_streams(seed, purpose, self.M, 6) if state is None
                             else np.ascontiguousarray(state["swap_streams"], dtype=np.uint64))
        self.accepted = np.zeros(0, dtype=np.int64)    # accepted swaps per pair (K - 1)
        self.attempts = np.zeros(0, dtype=np.int64)
        for k, model in enumerate(models):
            streams = None if state is None else state["streams"][k]
            v = init if state is None else state["chains"][k]
            self._append(model, v, streams)
        if state is not None:
            self.accepted[:] = state["accepted"]
            self.attempts[:] = state["attempts"]

    # ------------------------------------------------------------------- rungs
    @property
    def K(self):
        return len(self.models)

    def _append(self, model, v, streams=None):
        k = len(self.models)
        # a copy: a training run updates its model's arrays in place
        model = model.astype(self.dtype)
        if streams is None:
            streams = model._chain_streams(self.seed, self.purpose, self.M, 5, k)
        self.models.append(model)
        self.engines.append(model._chains(v, streams, self.n_threads))
        if k:
            self.accepted = np.append(self.accepted, np.int64(0))
            self.attempts = np.append(self.attempts, np.int64(0))

    def add_rung(self, model):
        """Append ``model`` (of the ladder's class) as the new last rung; its chains
        start as copies of the previous last rung's states (with streams of their own)."""
        self._append(model, self.engines[-1].visible())

    def rung_model(self, model):
        """Replace the last rung's model by ``model``, keeping its chains' states and
        streams."""
        last = self.engines[-1]
        model = model.astype(self.dtype)
        self.models[-1] = model
        self.engines[-1] = model._chains(last.visible(), last.streams, self.n_threads)

    def set_states(self, k, v):
        """Set rung k's chain states (chains x n_visible, 0/1)."""
        self.engines[k].set_visible(v)

    def states(self, k=-1):
        """Rung k's chain states (default: the last rung's), chains x n_visible uint8."""
        return self.engines[k].visible()

    # ------------------------------------------------------------------ rounds
    def sweep(self, rungs=None):
        """One block-Gibbs sweep of the chains of every rung (or of ``rungs``)."""
        for k in (range(self.K) if rungs is None else rungs):
            # inputs recomputed at every sweep: states set by swaps, and a resumed run,
            # then give the same bits as an uninterrupted one
            self.engines[k].n_threads = self.n_threads
            self.engines[k].sweep(1, beta=1.0, force_refresh=True)

    def swap(self):
        """This round's swaps (pairs k, k+1 with k = round mod 2); returns the number
        accepted."""
        K, parity = self.K, self.round % 2
        self.round += 1
        pairs = list(range(parity, K - 1, 2))
        u = _anneal.chain_uniforms(self.swap_streams, len(pairs))
        if not pairs:
            return 0
        V = [self.engines[k].visible() for k in range(K)]
        total = 0
        for i, k in enumerate(pairs):
            x, y = V[k], V[k + 1]
            lo, hi = self.models[k], self.models[k + 1]
            log_r = (self._log_p(lo, y) + self._log_p(hi, x)
                     - self._log_p(lo, x) - self._log_p(hi, y))
            take = u[:, i] < np.exp(np.minimum(log_r, 0.0))
            n = int(take.sum())
            self.attempts[k] += self.M
            self.accepted[k] += n
            if n:
                V[k], V[k + 1] = np.where(take[:, None], y, x), np.where(take[:, None], x, y)
                self.set_states(k, V[k])
                self.set_states(k + 1, V[k + 1])
                total += n
        return total

    def step(self, rounds=1):
        """``rounds`` rounds: a sweep of every rung, then the swaps."""
        for _ in range(int(rounds)):
            self.sweep()
            if self.K > 1:
                self.swap()

    def _log_p(self, model, v):
        return model._log_unnormalized_rows(v, self.n_threads)

    @property
    def swap_rates(self):
        """Accepted / attempted swaps of each neighbouring pair so far (K - 1)."""
        return self.accepted / np.maximum(self.attempts, 1)

    def arrays(self):
        """The state to checkpoint: the rungs' models (their ``_parameters``, stacked:
        W, vbias, hbias, and sigma or L), states and streams."""
        params = [m._parameters() for m in self.models]
        return {**{key: np.stack([p[key] for p in params]) for key in params[0]},
                "chains": np.stack([e.visible() for e in self.engines]),
                "streams": np.stack([e.streams for e in self.engines]),
                "swap_streams": self.swap_streams.copy(), "round": np.int64(self.round),
                "accepted": self.accepted.copy(), "attempts": self.attempts.copy()}
