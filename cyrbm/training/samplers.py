"""The negative phase of each training method (SM08 Eq. 7's model term): one sampler
class a method, chosen by ``SAMPLERS[method]``.

CD-k (Hinton 2002) restarts B chains at the mini-batch; PCD-k / SML (Tieleman 2008)
keeps them; parallel tempering (Cho, Raiko & Ilin 2010, Table I) takes the T = 1 states
of M persistent ladders (cyrbm.models.tempering); AMH (Hu & Yu, AMH-p) adds mode-hopping
proposals to the persistent chains (cyrbm.training.modehop); PTT (Bereux et al. 2025)
runs chains at the training's own earlier models.  Each sampler keeps its state in the
Trainer's state dict, so a checkpoint holds it and a resume continues it bit for bit.
"""
import numpy as np

from cyrbm import _gibbs, defaults
from cyrbm._random import make_streams, seed_sequence
from cyrbm.errors import ModelFileError

__all__ = ["SAMPLERS", "TRACKERS", "check_tracker"]

#: AMH's proposal kernels (h*, a_i, H) are recomputed every so many updates (hop)
_PROPOSAL_EVERY = 10


class _Sampler:
    """The negative phase of SM08 Eq. 7 for one method: the chains whose statistics
    E_model[v h^T] is estimated from, after this update's sweeps.

    ``fresh(trainer, data, seed, B)`` is a new run's sampler state (entries of the
    trainer's state, which checkpoints hold: ``chains`` and, under ``name``, the arrays
    ``keys``); ``restore(state, arrays, path)`` reads them back from a checkpoint;
    ``start`` builds the machinery on a state; ``negative_phase`` runs one update's
    chains; ``keep`` copies the machinery back into the state for a checkpoint;
    ``describe`` adds the epoch's sampler figures to its history record.
    """
    #: the chains persist between updates (PCD/SML; CD restarts them at the data)
    persistent = True
    #: the checkpoint's arrays of this sampler: trainer_{name}_{key}
    name, keys = None, ()
    #: B persistent chains, kept in the checkpoint as trainer_chains
    keeps_chains = False
    #: arrays of the checkpoint kept when the state has them (trainer_{name}_{key})
    optional = ()

    def __init__(self, trainer, state, model, B, n_threads):
        self.trainer = trainer
        self.chains = state["chains"]

    @classmethod
    def fresh(cls, trainer, data, B, model):
        return {"chains": None}

    @classmethod
    def settings(cls, trainer):
        """The method's own settings of ``trainer`` (for ``Trainer.settings``)."""
        return {}

    @classmethod
    def tracker(cls, trainer, n_threads, state):
        """The ln Z tracker of ``trainer.track_logz`` for this method: the ladder of
        checkpoints (cyrbm.training.tracking), continued from a checkpoint's ``state``."""
        from cyrbm.training.tracking import LogZTracker
        return LogZTracker(trainer.seed, runs=trainer.track_runs, betas=trainer.track_betas,
                           refine=trainer.track_refine, threads=n_threads, state=state)

    @classmethod
    def restore(cls, state, arrays, path):
        """Read this sampler's arrays of a checkpoint into ``state``."""
        if not cls.keys:
            return
        missing = [k for k in cls.keys if f"trainer_{cls.name}_{k}" not in arrays]
        if missing:
            raise ModelFileError(f"checkpoint '{path}' lacks the {cls.name.upper()} sampler "
                                 f"state ({', '.join(missing)}).")
        state[cls.name] = {k: np.array(arrays[f"trainer_{cls.name}_{k}"])
                           for k in cls.keys + cls.optional
                           if f"trainer_{cls.name}_{k}" in arrays}

    def negative_phase(self, model, state, k, n_threads):
        """(chains, their hidden inputs W^T v or None, Gibbs sweeps still to run)."""
        return self.chains, None, k

    def keep(self, state):
        """Copy the sampler's state into ``state`` (for a checkpoint)."""

    def describe(self, state, record):
        """Add the epoch's sampler figures to ``record`` and start the next epoch's."""


class _CD(_Sampler):
    """CD-k (Hinton 2002): chains started at the mini-batch, k sweeps."""
    persistent = False

    def __init__(self, trainer, state, model, B, n_threads):
        super().__init__(trainer, state, model, B, n_threads)
        self.chains = np.empty((B, model.n_visible), model._state_dtype)


class _PCD(_Sampler):
    """PCD-k / SML (Tieleman 2008): B persistent chains, k sweeps an update."""
    keeps_chains = True

    @classmethod
    def fresh(cls, trainer, data, B, model):
        # persistent chains start at random training rows
        rng = np.random.default_rng(seed_sequence(trainer.seed, "chains", 1))
        return {"chains": model._chain_states(data[rng.integers(0, data.shape[0], B)], rng)}


class _PT(_Sampler):
    """Parallel tempering (CRI10 Table I): M persistent ladders (cyrbm.models.tempering), k
    rounds an update (CRI10: one); the T = 1 states of ladders (t B + i) mod M are the
    chains."""
    name, keys = "pt", ("chains", "streams", "swap_streams", "order", "window",
                        "temperatures", "epoch_counts")
    optional = ("swap_terms", "terms_temperatures")

    def __init__(self, trainer, state, model, B, n_threads):
        super().__init__(trainer, state, model, B, n_threads)
        pt = self.state = state["pt"]
        self.B = B
        # the model class's ladders: an RBM's on the engine (CRI10's family), the others'
        # on their own sweeps (their tempered family; tempering.TemperedStates)
        self.ladders = model._tempered_ladders(pt["temperatures"], pt["order"].shape[0],
                                               n_threads=n_threads,
                                               adaptive=trainer.adaptive, state=pt)

    @classmethod
    def fresh(cls, trainer, data, B, model):
        # every chain of every ladder starts at a random training row
        M, temps = trainer.chains or B, trainer.temperatures
        rng = np.random.default_rng(seed_sequence(trainer.seed, "chains", 4))
        init = model._chain_states(data[rng.integers(0, data.shape[0], M * temps.size)], rng)
        return {"chains": None, "pt": {
            "chains": init,
            "streams": model._chain_streams(trainer.seed, "chains", init.shape[0], 2),
            "swap_streams": make_streams(trainer.seed, "chains", M, 3),
            "order": np.arange(init.shape[0], dtype=np.int32).reshape(M, -1),
            "window": np.zeros((2, max(temps.size - 1, 1)), np.int64),
            "temperatures": temps.copy(),
            "epoch_counts": np.zeros(temps.size, np.int64)}}

    @classmethod
    def settings(cls, trainer):
        spec = trainer.temperature_spec
        if spec is not None and not isinstance(spec, (str, int)):
            spec = [float(t) for t in np.ravel(spec)]
        return {"temperatures": spec, "chains": trainer.chains or trainer.batch_size,
                "adapt_every": trainer.adapt_every}

    def negative_phase(self, model, state, k, n_threads):
        # k PT rounds, the last one's T = 1 states with their hidden inputs as the engine
        # kept them
        ladders, M = self.ladders, self.ladders.M
        tracker = state.get("tracker")
        if tracker is not None and self.trainer.track_logz == "filter":
            # the filter's draws of the model before this update: the last round's
            tracker.before_round(model, ladders, state["n_updates"], n_threads)
        counts = self.state["epoch_counts"]             # K per-pair counts, attempts
        for r in range(k):
            ladders.step(model, n_threads=n_threads)
            if r == 0 and tracker is not None and self.trainer.track_logz == "filter":
                tracker.after_round(ladders)            # its sums came from this round
            acc = ladders.accepted.sum(axis=0)          # this round's swaps per pair
            ladders.accepted[:] = 0
            counts[:-1] += acc[: counts.size - 1]
            counts[-1] += M
            ladders.window[0] += acc
            ladders.window[1] += M
        # the ladder is retuned between updates only: an update's rounds share its betas
        # (the PT tracker's draws are of them)
        ladders.adapt(self.trainer.adapt_every * M)
        pick = (state["n_updates"] * self.B + np.arange(self.B)) % M
        return ladders.top(pick), ladders.top_inputs(pick), 0

    @classmethod
    def tracker(cls, trainer, n_threads, state):
        """With ``track_logz="filter"``, PT's own tracker of ln Z
        (cyrbm.training.pt_tracking, DCB11): from the ladders' states at every update (or
        every ``track_every``); ``track_overlap`` is the ladder's.  Else the ladder."""
        if trainer.track_logz != "filter":
            return super().tracker(trainer, n_threads, state)
        from cyrbm.training.pt_tracking import PTLogZTracker
        if trainer.track_overlap is not None:
            raise ValueError("track_overlap places the rungs of the checkpoint ladder, which "
                             "PT training does not use: PT tracks ln Z at every update.")
        return PTLogZTracker(trainer.temperatures, every=trainer.track_every,
                             threads=n_threads, state=state)

    def keep(self, state):
        state["pt"].update(self.ladders.arrays())

    def describe(self, state, record):
        counts = state["pt"]["epoch_counts"]
        record["swap_rates"] = [float(a / max(counts[-1], 1)) for a in counts[:-1]]
        record["temperatures"] = [float(t) for t in self.ladders.temps]
        counts[:] = 0


class _AMH(_PCD):
    """Mode-hopping SML (Hu & Yu AMH-p, cyrbm.training.modehop): PCD-k chains that first take a
    mode-hopping proposal with probability p; the mode set is rebuilt from them every
    ``mode_every`` updates, the proposal kernels every ``_PROPOSAL_EVERY``."""
    name, keys = "amh", ("modes", "hop_streams", "hop_counts")

    def __init__(self, trainer, state, model, B, n_threads):
        from cyrbm.training.modehop import ModeSet
        super().__init__(trainer, state, model, B, n_threads)
        self.state = state["amh"]
        radius = trainer.radius if trainer.radius is not None else max(1, model.n_visible // 10)
        self.modeset = ModeSet(trainer.n_modes, radius, trainer.hop_weight, model.n_visible,
                               self.state["modes"])
        trainer.modes_ = self.modeset.modes

    @classmethod
    def fresh(cls, trainer, data, B, model):
        return {**super().fresh(trainer, data, B, model), "amh": {
            "modes": np.zeros((0, data.shape[1]), np.uint8),
            "hop_streams": make_streams(trainer.seed, "chains", B, 5),
            "hop_counts": np.zeros(2, np.int64)}}

    @classmethod
    def settings(cls, trainer):
        return {"hop_prob": trainer.hop_prob, "modes": trainer.n_modes,
                "radius": trainer.radius, "hop_weight": trainer.hop_weight,
                "mode_every": trainer.mode_every}

    def negative_phase(self, model, state, k, n_threads):
        from cyrbm.training.modehop import hop
        modeset, t = self.modeset, state["n_updates"]
        WT = None            # W^T, made once for both when both are due
        if t % self.trainer.mode_every == 0:
            WT = _gibbs.transposed(model.W, n_threads)
            self.trainer.modes_ = modeset.rebuild(model, self.chains, WT=WT)
        if t % _PROPOSAL_EVERY == 0 or modeset.proposal is None:
            modeset.update_proposal(model, WT=WT)
        self.state["hop_counts"] += hop(model, self.chains, modeset, self.trainer.hop_prob,
                                        self.state["hop_streams"], n_threads=n_threads)
        return self.chains, None, k

    def keep(self, state):
        state["amh"]["modes"] = self.modeset.modes

    def describe(self, state, record):
        proposed, accepted = (int(x) for x in state["amh"]["hop_counts"])
        record["hops_proposed"] = proposed
        record["hop_acceptance"] = accepted / proposed if proposed else None
        record["modes"] = len(self.modeset)
        state["amh"]["hop_counts"][:] = 0


class _PTT(_Sampler):
    """Parallel trajectory tempering (Béreux et al. 2025): M persistent chains at each
    rung of a ladder of the training's own models (cyrbm.models.tempering.TrajectoryChains),
    one round an update with the last rung set to the current model; a rung is frozen
    when the last pair's swap rate falls below the threshold (Trainer's docstring)."""
    name, keys = "ptt", ("W", "vbias", "hbias", "chains", "streams", "swap_streams",
                         "round", "accepted", "attempts", "window", "epoch_counts")
    #: the rungs' parameters of a GaussianRBM (sigma) or SRBM (L): model._parameters
    optional = ("sigma", "L")

    def __init__(self, trainer, state, model, B, n_threads):
        from cyrbm.models.tempering import TrajectoryChains
        super().__init__(trainer, state, model, B, n_threads)
        st = self.state = state["ptt"]
        self.B, self.M = B, trainer.chains or B
        self.trainer = trainer
        dtype = model.W.dtype
        if st["W"] is None:           # a fresh run: rung 0 the initial model, and the top
            self.ladder = TrajectoryChains([model, model], self.M, seed=trainer.seed,
                                           purpose="chains", init=st["init"], dtype=dtype,
                                           n_threads=n_threads)
        else:
            keys = model._parameters().keys()
            rungs = [model._with_parameters({key: st[key][k] for key in keys})
                     for k in range(st["W"].shape[0])]
            self.ladder = TrajectoryChains(rungs, self.M, seed=trainer.seed, purpose="chains",
                                           dtype=dtype, n_threads=n_threads, state=st)
        self.window = np.asarray(st.get("window", np.zeros(2, np.int64)), np.int64).copy()
        counts = st.get("epoch_counts")
        self.epoch_counts = (np.zeros((2, 0), np.int64) if counts is None
                             else np.asarray(counts, np.int64).reshape(2, -1).copy())

    @classmethod
    def fresh(cls, trainer, data, B, model):
        # every chain starts at a random training row (both first rungs the same rows)
        rng = np.random.default_rng(seed_sequence(trainer.seed, "chains", 7))
        init = model._chain_states(data[rng.integers(0, data.shape[0], trainer.chains or B)],
                                   rng)
        return {"chains": None, "ptt": {"W": None, "init": init}}

    @classmethod
    def settings(cls, trainer):
        return {"chains": trainer.chains or trainer.batch_size,
                "swap_threshold": trainer.swap_threshold, "max_rungs": trainer.max_rungs}

    def negative_phase(self, model, state, k, n_threads):
        ladder = self.ladder
        ladder.n_threads = n_threads
        ladder.rung_model(model)
        before = ladder.accepted[-1], ladder.attempts[-1]
        ladder.step(1)
        self.window += (ladder.accepted[-1] - before[0], ladder.attempts[-1] - before[1])
        if self.window[1] >= defaults.PTT_WINDOW * self.M:
            rate = self.window[0] / self.window[1]
            self.window[:] = 0
            if rate < self.trainer.swap_threshold and ladder.K < self.trainer.max_rungs:
                ladder.add_rung(model)
        pick = (state["n_updates"] * self.B + np.arange(self.B)) % self.M
        return np.ascontiguousarray(ladder.states(-1)[pick]), None, 0

    def keep(self, state):
        state["ptt"] = {**self.ladder.arrays(), "window": self.window.copy(),
                        "epoch_counts": self._counts()}

    def _counts(self):
        # accepted swaps and attempts per pair at the start of the epoch (pairs added
        # since count from zero)
        c = np.zeros((2, self.ladder.K - 1), np.int64)
        c[:, :self.epoch_counts.shape[1]] = self.epoch_counts
        return c

    def describe(self, state, record):
        start = self._counts()
        acc, att = self.ladder.accepted - start[0], self.ladder.attempts - start[1]
        record["rungs"] = self.ladder.K
        record["swap_rates"] = [float(a / t) if t else None for a, t in zip(acc, att)]
        stuck = [k for k, (a, t) in enumerate(zip(acc, att)) if t and a / t < 0.01]
        record["ptt_warning"] = None if not stuck else (
            f"{len(stuck)} of the {len(acc)} neighbouring pairs of rungs swapped in fewer "
            f"than 1% of attempts this epoch (the first: rungs {stuck[0]} and "
            f"{stuck[0] + 1}): the model moved too far between them for states to cross, "
            f"so PTT samples there no better than PCD; a smaller learning rate moves it "
            f"less per update.")
        self.epoch_counts = np.stack([self.ladder.accepted, self.ladder.attempts])


#: the sampler of each method
SAMPLERS = {"cd": _CD, "pcd": _PCD, "pt": _PT, "amh": _AMH, "ptt": _PTT}

#: the trackers of ln Z through training: the checkpoint ladder serves every method,
#: the Kalman filter over PT's own ladders only method "pt"
TRACKERS = ("ladder", "filter")


def check_tracker(track_logz, method):
    """``Trainer(track_logz=...)`` as the tracker's name: False (none), "ladder" (True
    too) or "filter" (method "pt" only), or a ValueError in one sentence."""
    if track_logz is None or track_logz is False:
        return False
    if track_logz is True:
        return "ladder"
    if track_logz not in TRACKERS:
        raise ValueError(f"track_logz is True, False or one of the trackers "
                         f"{', '.join(map(repr, TRACKERS))}, not {track_logz!r}.")
    if track_logz == "filter" and method != "pt":
        raise ValueError(f"track_logz='filter' follows the tempered ladders of method "
                         f"'pt', not method {method!r}: use track_logz=True (the "
                         f"checkpoint ladder) with it.")
    return track_logz
