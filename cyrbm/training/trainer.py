"""Trainer: CD-k, CD with k raised during training, PCD (SML), parallel tempering,
parallel trajectory tempering and mode-hopping SML for binary RBMs and SRBMs; all but
mode hopping for Gaussian RBMs.

Contrastive Divergence (Hinton 2002; SM08 Eq. 7): the gradient of ln p(v) w.r.t. W_ij,
E_data[v_i h_j] - E_model[v_i h_j], with the model term estimated from the visible
states after k block-Gibbs sweeps started at the data (CD-k).  SM08 raise k during
training ("CD25": k from 1 to 25); ``k="1:25"`` does that, linearly over the epochs.
Persistent CD / Stochastic Maximum Likelihood (Tieleman 2008; Hu & Yu Sec. 3) keeps the
chains between updates instead of restarting them at the data.  Parallel tempering
(Cho, Raiko & Ilin 2010, Table I; ``method="pt"``) takes the negative phase from the
T = 1 chains of M persistent ladders (cyrbm.models.tempering); mode-hopping SML (Hu & Yu, AMH-p;
``method="amh"``) adds mode-hopping proposals to the persistent chains (cyrbm.training.modehop).

Updates use momentum and L2 weight decay on W; the learning rate is constant or
search-then-converge, eta_t = eta_0 / (1 + t / n0) after t updates (Cho, Raiko & Ilin
2010, footnote 3).

Reproducibility: one seed drives the initial weights, the mini-batch order (a fresh
permutation per epoch, keyed by the epoch number) and one random stream per chain slot.
A resumed run continues bit-identically to an uninterrupted one, and results do not
depend on the number of threads.
"""
import math
import os
import time

import numpy as np

from cyrbm import _cd, _io, defaults
from cyrbm._omp import resolve_threads
from cyrbm._progress import progress_bar
from cyrbm._random import make_streams, seed_sequence
from cyrbm._threads import auto_threads
from cyrbm._validation import (_is_finite_real as _real, check_binary, check_memory, check_real,
                               check_probabilities, check_visible_rows, check_whole, worded)
from cyrbm.errors import ModelMismatchError, TrainingDiverged
from cyrbm.models.gaussian import warn_scale
from cyrbm.models.kinds import MODEL_CLASSES
from cyrbm.models.rbm import RBM, Layers
from cyrbm.models.srbm import DAMPING, MEAN_FIELD_STEPS, check_lateral_settings
from cyrbm.training.checkpoints import (_InterruptFlag, _fingerprint, load_checkpoint,
                                        save_checkpoint)
from cyrbm.training.samplers import SAMPLERS, check_tracker

METHODS = ("cd", "pcd", "pt", "amh", "ptt")
#: the method each sampler setting belongs to
_SAMPLER_OF = {"temperatures": ("pt",), "chains": ("pt", "ptt"), "adapt_every": ("pt",),
               "hop_prob": ("amh",), "modes": ("amh",), "radius": ("amh",),
               "hop_weight": ("amh",), "mode_every": ("amh",), "swap_threshold": ("ptt",),
               "max_rungs": ("ptt",)}
#: the clock of the checkpoint cadence (a name of its own, so tests can replace it)
_now = time.monotonic


def parse_k(k):
    """CD steps as (k_first, k_last): an int, or "A:B" for k raised linearly A -> B."""
    if isinstance(k, str):
        parts = k.split(":")
        try:
            values = [int(p) for p in parts]
        except ValueError:
            raise ValueError(f"k must be a whole number or 'FIRST:LAST' such as '1:25', not {k!r}.") from None
        if len(values) == 1:
            values = values * 2
        if len(values) != 2:
            raise ValueError(f"k must be a whole number or 'FIRST:LAST' such as '1:25', not {k!r}.")
        first, last = values
    else:
        if isinstance(k, float) and not k.is_integer():
            raise ValueError(f"k must be a whole number, not {k}.")
        first = last = int(k)
    if first < 1 or last < 1:
        raise ValueError(f"k must be at least 1, not {k!r}.")
    if first > last:
        raise ValueError(f"k's ramp FIRST:LAST must rise (k is raised during training, as in "
                         f"SM08's CD1 to CD25), not fall from {first} to {last}.")
    return first, last


class Trainer:
    """Train a binary RBM by CD-k or PCD-k with mini-batches.

    Parameters
    ----------
    n_hidden : int
        Hidden units of a new model (ignored when ``fit`` is given a model).
    method : {"cd", "pcd", "pt", "amh", "ptt"}
        Contrastive divergence, persistent CD (SML) with batch-size persistent chains,
        parallel tempering (CRI10 Table I: ``chains`` persistent ladders at
        ``temperatures``, k rounds of one sweep per chain and swaps of neighbours per
        update, the T = 1 states as the negative phase), or mode-hopping SML (Hu & Yu AMH-p: PCD-k
        chains with mode-hopping proposals of probability ``hop_prob``).
    k : int or str
        Gibbs sweeps per update (PT: rounds of the ladders per update; CRI10 take one,
        and PT's tracker of ln Z needs more where the model moves faster than one round
        follows, docs/user_guide/train.rst); "1:25" raises k linearly from 1 to 25 over the epochs
        (FIRST <= LAST).  The ramp spans the epochs of the run that began it: a resumed
        run continues it, and epochs beyond its span keep the last k (``k_span``).
    epochs : int
        Total epochs (a resumed run continues up to this number).
    batch_size : int
        Rows per update.  Every batch has exactly this size: the last one of an epoch is
        completed with rows from the start of that epoch's permutation.
    learning_rate : float
        eta_0.
    lr_decay : float or None
        n0 of the search-then-converge schedule eta_0 / (1 + t / n0); None: constant.
    momentum : float
        In [0, 1).
    weight_decay : float
        L2 coefficient on W.
    seed : int
    threads : int or None
        OpenMP threads (None or 0: chosen by the size of the work, see
        cyrbm._threads; results do not depend on it).
    dtype : float32 or float64
    checkpoint : path or None
        Where checkpoints go (an .npz model file with the trainer's state).
    checkpoint_seconds : float
        Least seconds between checkpoints (default 5; 0: after every epoch), so that
        writing them stays a small share of a run (bench/checkpoint_cost.py).  One is
        always written at the end and on Ctrl-C.
    checkpoint_every : int or None
        Most epochs between checkpoints: one is written after this many epochs even if
        ``checkpoint_seconds`` have not passed (None: by time only).
    track_logz : bool or {"ladder", "filter"}
        Track ln Z through training.  True or "ladder" (every method): the checkpoint
        ladder (cyrbm.training.tracking), a ladder of the model at every
        ``track_every`` updates (None: at the end of every epoch and, in the first
        epoch, after updates 1, 2, 4, 8, ..., where the model moves fastest), its first
        rung's ln Z exact, each next one's by Bennett's acceptance ratio over ratio AIS
        both ways (``track_runs`` runs each way, ``track_betas`` betas, run again with 2
        to 16 times the betas, by the log weights' variance, up to ``track_refine`` times
        while fewer than 5 runs overlap: cyrbm.training.tracking.refine_factor), the
        variances summed.  "filter" (method "pt" only; DCB11,
        cyrbm.training.pt_tracking): a Kalman filter over ln Z at the ladders'
        temperatures from their own states, moved every ``track_every`` updates (None:
        every update); its rungs hold ``ess`` and ``overlap`` for ``delta``.  It holds
        fresh AIS on 784 x 500 models where no update is flagged (learning rates of
        0.001 on the digits, 0.0005 on Fashion-MNIST, bench/README.md) at about 5%
        of PT's time, and drifts, flagged, where single updates outrun the chains; the
        ladder, which needs no small learning rate, stays the default.  The
        history records then hold ``tracked`` (the rungs of the epoch: ``update``,
        ``log_Z``, ``log_Z_se``, ``delta``, ``delta_se``, ``overlap``,
        ``overlap_warning``, and with ``fit(test_data=...)`` ``log_likelihood`` and its
        ``log_likelihood_interval``, +- 3 se) and the last rung's figures.
    track_overlap : float or None
        Also take the model as a rung when it has drifted from the last rung: checked
        every ``defaults.TRACK_OVERLAP_EVERY`` updates, a rung is added when the
        importance-sampling overlap of the last rung's carried draws with the current
        model (``LogZTracker.overlap``: effective sample size over draws, 1 for the same
        model) falls below this fraction in (0, 1).  The ladder then adapts its spacing
        to how fast training moves the model; each added rung costs one link.
    monitor_size : int or "auto"
        Training rows (a fixed random subset) on which the reconstruction error and the
        exact pseudo-log-likelihood are recorded after each epoch; 0 turns monitoring off.
        "auto": 200 rows, fewer for large models so that monitoring stays a small part
        of an epoch (see ``auto_monitor_rows``: 8 rows for 784 x 500).
    progress : bool or None
        A progress bar (needs tqdm); None: only when stderr is a terminal.
    callback : callable, optional
        Called with each epoch's history record (a dict) after the epoch.
    temperatures : None, int, list or str
        PT only: the ladder 0 <= T_0 < ... < T_K = 1 (the RBMs (T_k W, b, c); a
        GaussianRBM's or SRBM's family scales W, c and L by T and keeps the visible
        biases and sigma, see their ``sample``); None for
        CRI10's 0, 0.05, ..., 1; N for N evenly spaced; "adaptive:N" to start evenly
        spaced and re-tune the spacing every ``adapt_every`` updates so that neighbouring
        pairs swap at equal rates (cyrbm.models.tempering.retune).
    chains : int or None
        PT only: persistent ladders M (default: the batch size).  The negative phase of
        update t uses the T = 1 states of ladders (t B + i) mod M, i < B.
    visible : {"binary", "gaussian"}
        The visible units: binary (an :class:`RBM`, 0/1 data) or Gaussian (a
        :class:`cyrbm.models.gaussian.GaussianRBM` of fixed ``sigma``, rows of finite
        reals; methods cd, pcd, pt and ptt; amh is refused).  ``fit(model=GaussianRBM)``
        implies "gaussian".
    sigma : float or array
        The standard deviations of a new Gaussian model's visible units (default 1).
    learn_sigma : bool
        Gaussian units only: learn sigma too (as ln sigma, by the same momentum step; see
        :func:`cyrbm.models.gaussian.gaussian_cd_update`); otherwise it stays fixed.
    lateral : bool
        Train a semi-restricted Boltzmann machine (:class:`cyrbm.models.srbm.SRBM`:
        binary visible units with lateral weights L; methods cd, pcd and amh with Gibbs,
        pt and ptt) by :func:`cyrbm.models.srbm.srbm_cd_update`.  ``fit(model=SRBM)``
        implies it.
    reconstruction : {"mean-field", "gibbs"}
        SRBM only: the negative phase's visible layer, the damped mean-field of Osindero
        & Hinton (2008), ``mean_field_steps`` iterations (default 10) with damping
        ``damping`` (lambda, default 0.2), or sequential Gibbs sweeps.  Methods pt and
        ptt sweep their ladders by sequential Gibbs: "gibbs" is implied.
    hop_prob, modes, radius, hop_weight : AMH only
        p (default 0.1), the capacity K (default 10) and Hamming radius R of the mode set
        (default R: a tenth of n_visible, as Hu & Yu's 80 of 784; at most n_visible), and
        the weighting of H (uniform, the default, prob, distance).  The settings of PT
        (``temperatures``, ``chains``, ``adapt_every``, default 50) and of AMH
        (``mode_every`` too, default 100) are refused with another method.  The mode set is rebuilt every ``mode_every`` updates from the
        persistent chains; ``trainer.modes_`` holds it, ``save_modes`` writes it.

    swap_threshold, max_rungs : PTT only
        Parallel trajectory tempering (Béreux et al. 2025; ``method="ptt"``,
        cyrbm.models.tempering.TrajectoryChains): ``chains`` persistent chains (default: the
        batch size) at each rung of a ladder of the training's own models, rung 0 the
        initial model and the last rung the current one; an update runs one sweep of
        every chain at its rung's model and Metropolis swaps of states between
        neighbouring rungs, and the negative phase takes the last rung's states (as PT's
        ladders m, (t B + i) mod M).  The current model is frozen as a new rung when its
        swap rate with the last frozen rung, over at least PTT_WINDOW updates, falls
        below ``swap_threshold`` (default 0.3), up to ``max_rungs`` (default 32).

    History records add, for PT, ``swap_rates`` (per pair, T_k with T_{k+1}, over the
    epoch) and ``temperatures``; for PTT, ``rungs`` (the ladder's models) and
    ``swap_rates`` (per neighbouring pair, over the epoch); for AMH, ``hops_proposed``, ``hop_acceptance`` (the
    acceptance ratio over the epoch) and ``modes`` (the size of L).
    """

    def __init__(self, n_hidden=defaults.N_HIDDEN, *, method=defaults.METHOD, k=defaults.K,
                 epochs=defaults.EPOCHS, batch_size=defaults.BATCH_SIZE,
                 learning_rate=defaults.LEARNING_RATE, lr_decay=None,
                 momentum=defaults.MOMENTUM, weight_decay=defaults.WEIGHT_DECAY,
                 seed=defaults.SEED, threads=None, dtype=np.float32, checkpoint=None,
                 checkpoint_every=None, checkpoint_seconds=defaults.CHECKPOINT_SECONDS,
                 monitor_size=200,
                 progress=None, callback=None,
                 temperatures=None, chains=None, adapt_every=None, hop_prob=None, modes=None,
                 radius=None, hop_weight=None, mode_every=None, swap_threshold=None,
                 max_rungs=None, visible="binary", sigma=1.0,
                 learn_sigma=False, lateral=False, reconstruction="mean-field",
                 damping=DAMPING, mean_field_steps=MEAN_FIELD_STEPS, track_logz=False,
                 track_every=None,
                 track_runs=defaults.TRACK_RUNS, track_betas=defaults.TRACK_BETAS,
                 track_refine=defaults.TRACK_REFINE, track_overlap=None):
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}.")
        self.k_first, self.k_last = parse_k(k)
        n_hidden = check_whole(n_hidden, "n_hidden", 1)
        epochs = check_whole(epochs, "epochs", 1)
        batch_size = check_whole(batch_size, "batch_size", 1)
        if checkpoint_every is not None:
            checkpoint_every = check_whole(checkpoint_every, "checkpoint_every", 1)
        seed = check_whole(seed, "seed", 0)
        if monitor_size != "auto":
            monitor_size = check_whole(monitor_size, "monitor_size (or 'auto')", 0)
        checks = [
            (_real(learning_rate) and learning_rate > 0,
             f"learning rate must be a positive number, not {learning_rate}."),
            (lr_decay is None or (_real(lr_decay) and lr_decay > 0),
             f"lr decay n0 must be a positive number, not {lr_decay}."),
            (_real(momentum) and 0 <= momentum < 1, f"momentum must be in [0, 1), not {momentum}."),
            (_real(weight_decay) and weight_decay >= 0,
             f"weight decay must be non-negative, not {weight_decay}."),
            (_real(checkpoint_seconds) and checkpoint_seconds >= 0,
             f"checkpoint_seconds must be a number of seconds of at least 0, not {checkpoint_seconds}."),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        self._check_sampler_settings(method, temperatures, chains, adapt_every, hop_prob,
                                     modes, radius, hop_weight, mode_every, swap_threshold,
                                     max_rungs)
        if visible not in ("binary", "gaussian"):
            raise ValueError(f"visible must be 'binary' or 'gaussian', not {visible!r}.")
        self.visible, self.sigma, self.learn_sigma = visible, sigma, bool(learn_sigma)
        self._check_visible(method)
        self.lateral = bool(lateral)
        self.reconstruction, self.damping, self.mean_field_steps = check_lateral_settings(
            method if self.lateral else "cd", reconstruction, damping, mean_field_steps)
        if self.lateral and MODEL_CLASSES[visible].real_valued:
            raise ValueError("an SRBM (lateral=True) has binary visible units: do not give "
                             "it visible='gaussian'.")
        self.track_logz = check_tracker(track_logz, method)
        self.track_every = (None if track_every is None
                            else check_whole(track_every, "track_every", 1))
        self.track_runs = check_whole(track_runs, "track_runs", 2)
        self.track_betas = check_whole(track_betas, "track_betas", 2)
        self.track_refine = check_whole(track_refine, "track_refine", 0)
        if track_overlap is not None and not (_real(track_overlap) and 0 < track_overlap < 1):
            raise ValueError(f"track_overlap is a fraction of the carried draws, in (0, 1), "
                             f"not {track_overlap!r}.")
        self.track_overlap = None if track_overlap is None else float(track_overlap)
        self.test_data = None               # set by fit: rows of the tracked log-likelihood
        self.n_hidden = int(n_hidden)
        self.method = method
        self.k = self.k_first if self.k_first == self.k_last else f"{self.k_first}:{self.k_last}"
        self.epochs = int(epochs)
        #: the epochs over which the k ramp was planned: ``epochs`` of the run that began
        #: it (a resume takes it from the checkpoint)
        self.k_span = self.epochs
        self.batch_size = int(batch_size)
        self.learning_rate = float(learning_rate)
        self.lr_decay = None if lr_decay is None else float(lr_decay)
        self.momentum = float(momentum)
        self.weight_decay = float(weight_decay)
        self.seed = int(seed)
        self._threads_requested = None if threads in (None, 0) else resolve_threads(threads)
        self.threads = self._threads_requested
        try:
            self.dtype = np.dtype(dtype)
        except TypeError:
            self.dtype = None
        if self.dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64, not {dtype!r}.")
        self.checkpoint = None if checkpoint is None else os.fspath(checkpoint)
        self.checkpoint_every = None if checkpoint_every is None else int(checkpoint_every)
        self.checkpoint_seconds = float(checkpoint_seconds)
        self.monitor_size = "auto" if monitor_size == "auto" else int(monitor_size)
        self.progress = progress
        self.callback = callback
        self.history = []
        self.model = None
        self.probabilities = False          # set by fit: the rows are probabilities
        self._last_checkpoint_epoch = None
        self.saved_on_interrupt = False
        self.modes_ = None
        self._state = None                  # the last fit's state, for warm_start

    def _check_sampler_settings(self, method, temperatures, chains, adapt_every, hop_prob,
                                modes, radius, hop_weight, mode_every, swap_threshold,
                                max_rungs):
        from cyrbm.models.tempering import parse_temperatures
        from cyrbm.training.modehop import WEIGHTS
        given = {"temperatures": temperatures, "chains": chains, "adapt_every": adapt_every,
                 "hop_prob": hop_prob, "modes": modes, "radius": radius,
                 "hop_weight": hop_weight, "mode_every": mode_every,
                 "swap_threshold": swap_threshold, "max_rungs": max_rungs}
        for name, value in given.items():
            only = _SAMPLER_OF[name]
            if value is not None and method not in only:
                raise worded(ValueError(f"{name} is a setting of method {' or '.join(only)}, "
                                        f"not of {method}."), parameters=(name, "method"))
        adapt_every = defaults.ADAPT_EVERY if adapt_every is None else adapt_every
        hop_prob = defaults.HOP_PROB if hop_prob is None else hop_prob
        modes = defaults.MODES if modes is None else modes
        hop_weight = defaults.HOP_WEIGHT if hop_weight is None else hop_weight
        mode_every = defaults.MODE_EVERY if mode_every is None else mode_every
        swap_threshold = defaults.SWAP_THRESHOLD if swap_threshold is None else swap_threshold
        max_rungs = defaults.MAX_RUNGS if max_rungs is None else max_rungs
        self.temperature_spec = temperatures
        self.temperatures, self.adaptive = parse_temperatures(temperatures)
        if method == "ptt" and (self.k_first != 1 or self.k_last != 1):
            raise ValueError("parallel tempering along the training trajectory takes one "
                             "round per update; k applies to cd, pcd, pt and amh.")
        checks = [
            (chains is None or (not isinstance(chains, bool) and int(chains) == chains and chains >= 1),
             f"the number of chains must be a whole number of at least 1, not {chains}."),
            (int(adapt_every) >= 1, f"adapt_every must be at least 1 update, not {adapt_every}."),
            (isinstance(hop_prob, (int, float)) and math.isfinite(hop_prob) and 0 <= hop_prob <= 1,
             f"the hop probability p must lie in [0, 1], not {hop_prob}."),
            (int(modes) == modes and modes >= 1,
             f"the mode set needs a capacity K of at least 1, not {modes}."),
            (radius is None or (int(radius) == radius and radius >= 0),
             f"the Hamming radius R must be a non-negative whole number, not {radius}."),
            (hop_weight in WEIGHTS,
             f"hop weighting must be one of {', '.join(WEIGHTS)}, not {hop_weight!r}."),
            (int(mode_every) >= 1, f"mode_every must be at least 1 update, not {mode_every}."),
            (_real(swap_threshold) and 0 <= swap_threshold < 1,
             f"the swap threshold must lie in [0, 1), not {swap_threshold}."),
            (not isinstance(max_rungs, bool) and int(max_rungs) == max_rungs and max_rungs >= 2,
             f"max_rungs must be a whole number of at least 2, not {max_rungs}."),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        self.chains = None if chains is None else int(chains)
        self.adapt_every = int(adapt_every)
        self.hop_prob = float(hop_prob)
        self.n_modes = int(modes)
        self.radius = None if radius is None else int(radius)
        self.hop_weight = hop_weight
        self.mode_every = int(mode_every)
        self.swap_threshold = float(swap_threshold)
        self.max_rungs = int(max_rungs)

    def _model_class(self):
        """The class of the model trained: the one of ``visible``, or an SRBM with
        ``lateral``."""
        return MODEL_CLASSES["lateral" if self.lateral else self.visible]

    def _setting_words(self):
        """The settings that chose the model class, in the Python API's words."""
        return "lateral=True" if self.lateral else f"visible={self.visible!r}"

    def _check_visible(self, method):
        refusal = MODEL_CLASSES[self.visible]._method_refusal(method)
        if refusal is not None:
            raise worded(ValueError(refusal), parameters=("method",))
        if self.learn_sigma and not MODEL_CLASSES[self.visible].real_valued:
            raise ValueError("learn_sigma is for Gaussian visible units (visible='gaussian').")

    # ------------------------------------------------------------- settings
    def settings(self):
        """The settings that define a run (saved in checkpoints and model meta)."""
        return {
            "method": self.method, "k": self.k, "epochs": self.epochs,
            **({"k_span": self.k_span} if self.k_first != self.k_last else {}),
            "batch_size": self.batch_size, "learning_rate": self.learning_rate,
            "lr_decay": self.lr_decay, "momentum": self.momentum,
            "weight_decay": self.weight_decay, "seed": self.seed,
            "n_hidden": self.n_hidden, "dtype": self.dtype.name,
            "monitor_size": self.monitor_size,
            **SAMPLERS[self.method].settings(self),
            **({"track_logz": {"tracker": self.track_logz, "every": self.track_every,
                               "runs": self.track_runs, "betas": self.track_betas,
                               "refine": self.track_refine, "overlap": self.track_overlap}}
               if self.track_logz else {}),
            **({"visible": self.visible} if MODEL_CLASSES[self.visible].real_valued else {}),
            **({"learn_sigma": True} if self.learn_sigma else {}),
            **({"lateral": {"reconstruction": self.reconstruction, "damping": self.damping,
                            "mean_field_steps": self.mean_field_steps}}
               if self.lateral else {}),
        }

    def save_modes(self, path):
        """Write the current AMH mode set to ``path`` (.npz, atomically): ``modes``
        (``|L|`` x n_visible uint8, most probable first; the first array, so cyrbm's loaders
        read it as data) and ``log_unnormalized`` (ln P*(m) under the current model)."""
        if self.modes_ is None:
            raise ValueError("no mode set: train with method='amh' first.")
        from cyrbm.training.modehop import log_unnormalized
        _io.atomic_savez(path, {"modes": self.modes_,
                                "log_unnormalized": log_unnormalized(self.model, self.modes_)})

    def k_at(self, epoch):
        """CD steps used in ``epoch`` (0-based): linear from k_first to k_last over the
        ramp's ``k_span`` epochs, then k_last."""
        if self.k_first == self.k_last:
            return self.k_first
        if self.k_span <= 1:
            return self.k_first
        frac = min(epoch, self.k_span - 1) / (self.k_span - 1)
        return int(round(self.k_first + (self.k_last - self.k_first) * frac))

    def learning_rate_at(self, n_updates):
        """eta_0 / (1 + t / n0) (Cho et al. 2010, footnote 3), or eta_0."""
        if self.lr_decay is None:
            return self.learning_rate
        return self.learning_rate / (1.0 + n_updates / self.lr_decay)

    # ------------------------------------------------------------------ fit
    def fit(self, data, *, model=None, resume=False, probabilities=False, warm_start=False,
            test_data=None):
        """Train on ``data`` (0/1 rows) and return the model.

        Parameters
        ----------
        data : array (n_samples, n_visible) of 0/1, or of probabilities in [0, 1]
        model : RBM, optional
            Start from this model instead of a fresh one.
        resume : bool
            Continue from ``self.checkpoint`` (which must exist) exactly where it left
            off, up to ``epochs``; settings may differ only as cyrbm.training.resume allows.
        probabilities : bool
            The rows are probabilities x in [0, 1] (e.g. a DBN layer's Q(h | v) passed up
            as probabilities, SM08 Sec. 4.1): the positive statistics are
            x sigma(W^T x + c)^T, sum x and sum sigma(W^T x + c), the expectation under
            the data's probabilities (SM08 Eq. 7 with p(h | x)), and CD's chains start
            at a Bernoulli draw of x from the chains' own streams (PCD, PT and AMH keep
            their chains).  The reconstruction error and pseudo-log-likelihood of the
            history are taken on a fixed Bernoulli draw of the monitored rows.
        warm_start : bool
            Continue from the state this Trainer's last ``fit`` left (the model, the
            momentum velocities, the persistent chains, the random streams, the epoch and
            update counts) for ``epochs`` more epochs on ``data`` (``epochs`` becomes the
            total): on the same data, fits of 1 + 2 epochs give one fit of 3 bit for bit.
            ``model``, if given, replaces the parameters (they may have been changed
            since).  In memory only: checkpoints are unchanged.
        test_data : array (n, n_visible) of 0/1, optional
            With ``track_logz``: the rows whose mean ln p(v) each rung records.

        Raises
        ------
        TrainingDiverged
            When the parameters become non-finite; the last checkpoint is left intact.
        KeyboardInterrupt
            After Ctrl-C, once a checkpoint of the current state has been written.
        """
        self.probabilities = bool(probabilities)
        if model is not None and type(model) is not self._model_class():
            # a model given decides the unit type of a trainer left at binary units
            if self._model_class() is not RBM or not isinstance(model, Layers):
                raise ValueError(f"{self._setting_words()} trains {self._model_class().noun}, "
                                 f"not the {type(model).__name__} given.")
            for key, value in model.trainer_settings.items():
                setattr(self, key, value)
            self._check_visible(self.method)
            if self.lateral:
                self.reconstruction, self.damping, self.mean_field_steps = \
                    check_lateral_settings(self.method, self.reconstruction, self.damping,
                                           self.mean_field_steps)
        if self.lateral and probabilities:
            raise ValueError("lateral=True trains an SRBM on 0/1 rows: give no "
                             "probabilities.")
        gaussian = self._model_class().real_valued
        if gaussian and self.probabilities:
            raise ValueError("probabilities=True is for binary visible units, not Gaussian ones.")
        data = (check_probabilities(data, name="training data") if self.probabilities
                else check_real(data, name="training data", dtype=self.dtype) if gaussian
                else check_binary(data, name="training data"))
        n, D = data.shape
        if n == 0:
            raise ModelMismatchError("training data has no rows.")
        self.test_data = None
        if test_data is not None:
            if not self.track_logz:
                raise ValueError("test_data is the data of the tracked log-likelihood: "
                                 "give it with track_logz=True.")
            self.test_data = check_visible_rows(test_data, D, "test data")
        if self.method == "amh" and self.radius is not None and self.radius > D:
            raise ValueError(f"the Hamming radius R between modes must be at most the number "
                             f"of visible units ({D}), not {self.radius}.")
        if not resume:
            self.k_span = self.epochs
        if self.checkpoint is not None:
            _io.check_outputs([("checkpoint", self.checkpoint, "npz")])
        B = self.batch_size
        if not resume:
            self._check_sizes(n, D, self.n_hidden if model is None else model.n_hidden)
        # the data's checksum guards checkpoints only (a pass over all the data)
        fingerprint = _fingerprint(data) if self.checkpoint is not None else None
        if warm_start:
            if resume:
                raise ValueError("resume continues from a checkpoint and warm_start from the "
                                 "last fit in memory: give one of them.")
            state = self._warm_state(D, model)
            model = state["model"]
        elif resume:
            state = load_checkpoint(self, D, fingerprint, given=model)
            model = state["model"]
        else:
            if model is None:
                model = self._model_class()._fresh(self, D, data)
            else:
                if model.n_visible != D:
                    raise ModelMismatchError(
                        f"training data has {D} columns but the model has {model.n_visible} visible units.")
                model = model.astype(self.dtype)
                self.n_hidden = model.n_hidden
            state = {
                "model": model, "epoch": 0, "batch": 0, "n_updates": 0,
                "vel_W": np.zeros_like(model.W), "vel_vbias": np.zeros_like(model.vbias),
                "vel_hbias": np.zeros_like(model.hbias),
                "streams": make_streams(self.seed, "chains", B), "history": [],
                "tracker": None, "track_pending": [],
                **SAMPLERS[self.method].fresh(self, data, B, model),
                **({"vel_sigma": np.zeros_like(model.sigma)} if self.learn_sigma else {}),
                **({"vel_L": np.zeros_like(model.L)} if self.lateral else {}),
            }
        if gaussian:
            warn_scale(data, model.sigma)
        self.model = model
        self.history = state["history"]
        self._state = state
        self._run(data, state, fingerprint)
        return model

    def _warm_state(self, n_visible, model):
        """The last fit's state, positioned at epoch 0 of a new run (``fit(warm_start=True)``),
        its parameters replaced by ``model``'s when given."""
        state = self._state
        if state is None:
            raise ValueError("warm_start continues this Trainer's last fit: call fit without "
                             "it first.")
        kept = state["model"]
        if kept.n_visible != n_visible:
            raise ModelMismatchError(f"training data has {n_visible} columns but the model has "
                                     f"{kept.n_visible} visible units.")
        if model is not None:
            if model.W.shape != kept.W.shape:
                raise ModelMismatchError(f"warm_start continues a {kept.n_visible} x "
                                         f"{kept.n_hidden} RBM, not a {model.n_visible} x "
                                         f"{model.n_hidden} one.")
            kept.W[...], kept.vbias[...], kept.hbias[...] = model.W, model.vbias, model.hbias
            if self.lateral:
                kept.L[...] = model.L
        state.update(batch=0, epoch_seconds=0.0)
        self.epochs += state["epoch"]          # epochs more, numbered on from the last fit
        return state

    def _check_sizes(self, n, D, M):
        """Refuse, before allocating, sizes whose arrays cannot fit in memory."""
        item = self.dtype.itemsize
        B = self.batch_size
        model_bytes = D * M * (16 + 5 * item)          # initial draw, W, velocity, scratch
        batch_bytes = B * (D + M) * 40 + -(-n // B) * B * 16
        check_memory(model_bytes, f"a {D} x {M} RBM", "use fewer hidden units")
        check_memory(model_bytes + batch_bytes, f"training a {D} x {M} RBM in mini-batches "
                     f"of {B} rows", "use smaller mini-batches")

    def _run(self, data, state, fingerprint):
        model, B = state["model"], self.batch_size
        # the work of one parallel region: a mini-batch times the weights
        work = B * model.n_visible * model.n_hidden
        T = self.threads = auto_threads(self._threads_requested, work)
        n = data.shape[0]
        n_batches = max(1, -(-n // B))
        workspace = _cd.Workspace(B, model.n_visible, model.n_hidden, model.W.dtype)
        sampler = SAMPLERS[self.method](self, state, model, B, T)
        tracker = self._tracker(state, model, T)
        monitor = None
        monitor_rows = (auto_monitor_rows(model.n_visible, model.n_hidden)
                        if self.monitor_size == "auto" else self.monitor_size)
        if monitor_rows > 0:
            rng = np.random.default_rng(seed_sequence(self.seed, "monitor"))
            rows = np.sort(rng.permutation(n)[:monitor_rows])
            monitor = model._chain_states(
                data[rows], np.random.default_rng(seed_sequence(self.seed, "monitor", 1)))

        interrupted = _InterruptFlag()
        bar = None
        scratch = {"workspace": workspace}     # the CD step's buffers, kept across batches
        # checkpoint cadence: by time, bounded by checkpoint_every epochs (the resumed or
        # fresh state counts as the last checkpoint)
        last_saved = (_now(), state["epoch"])
        try:
            interrupted.install()
            while state["epoch"] < self.epochs:
                epoch = state["epoch"]
                k = self.k_at(epoch)
                if self._threads_requested is None:     # other programs come and go
                    T = self.threads = auto_threads(None, work)
                order = _epoch_order(self.seed, epoch, n, n_batches * B)
                t0 = time.perf_counter()
                seconds_before = state.get("epoch_seconds", 0.0)
                bar = progress_bar(self.progress, n_batches, state["batch"],
                                    f"epoch {epoch + 1}/{self.epochs}")
                while state["batch"] < n_batches:
                    b = state["batch"]
                    batch = np.ascontiguousarray(data[order[b * B:(b + 1) * B]])
                    # SM08 Eq. 7: the data's statistics less the model's, estimated
                    # from the sampler's chains after step_k more sweeps
                    chains, chain_inputs, step_k = sampler.negative_phase(model, state, k, T)
                    settings = dict(k=step_k, persistent=sampler.persistent,
                                    learning_rate=self.learning_rate_at(state["n_updates"]),
                                    momentum=self.momentum, weight_decay=self.weight_decay,
                                    scale=1.0 / B, n_threads=T)
                    # the unit type's own statistics and update, in place
                    ok = model._cd_step(batch, chains, chain_inputs, state, settings, self,
                                        scratch)
                    if not ok:
                        raise TrainingDiverged(self._diverged_message(epoch, b))
                    state["batch"] = b + 1
                    state["n_updates"] += 1
                    if tracker is not None and (
                            self._track_due(state["n_updates"], n_batches)
                            or self._overlap_lost(tracker, model, state["n_updates"], T)):
                        self._track(state, tracker, model, T)
                    if bar is not None:
                        bar.update(1)
                    if interrupted.flag:
                        state["epoch_seconds"] = seconds_before + time.perf_counter() - t0
                        sampler.keep(state)
                        self._save_checkpoint(state, fingerprint)
                        self.saved_on_interrupt = self.checkpoint is not None
                        raise interrupted.stop
                if bar is not None:
                    bar.close()
                    bar = None
                if tracker is not None and self.track_every is None:
                    self._track(state, tracker, model, T)
                record = {
                    "epoch": epoch + 1, "k": k,
                    "learning_rate": self.learning_rate_at(state["n_updates"]),
                    "seconds": seconds_before + time.perf_counter() - t0,
                }
                sampler.describe(state, record)
                if state.get("changes"):        # a resume's changes (training.resume)
                    record["changed"] = state.pop("changes")
                if tracker is not None:
                    self._describe_track(state, record)
                if monitor is not None:
                    record["reconstruction_error"] = model.reconstruction_error(monitor)
                    if model.pll_monitor:
                        record["pseudo_log_likelihood"] = float(np.mean(
                            model.pseudo_log_likelihood(monitor, threads=T)))
                state["history"].append(record)
                if self.callback is not None:
                    self.callback(record)
                state["epoch"] = epoch + 1
                state["batch"] = 0
                state["epoch_seconds"] = 0.0
                if self.checkpoint is not None and self._checkpoint_due(state["epoch"], *last_saved):
                    sampler.keep(state)
                    self._save_checkpoint(state, fingerprint)
                    last_saved = (_now(), state["epoch"])
        finally:
            if bar is not None:
                bar.close()
            interrupted.uninstall()
        sampler.keep(state)
        model.meta["training"] = self._training_record(state, data.shape)

    def _track_due(self, n_updates, per_epoch):
        """Whether the model after ``n_updates`` updates is a rung (besides the epochs'
        ends, without ``track_every``): every ``track_every`` updates, else at updates
        1, 2, 4, 8, ... below one epoch, where training moves the model fastest
        (log-spaced checkpoints, as Béreux et al. 2025 save them)."""
        if self.track_every is not None:
            return n_updates % self.track_every == 0
        return n_updates < per_epoch and n_updates & (n_updates - 1) == 0

    def _overlap_lost(self, tracker, model, n_updates, n_threads):
        """With ``track_overlap``: whether, at a check (every TRACK_OVERLAP_EVERY
        updates), the model overlaps the last rung less than that fraction."""
        if self.track_overlap is None or n_updates % defaults.TRACK_OVERLAP_EVERY:
            return False
        overlap = tracker.overlap(model, n_threads)
        return overlap is not None and overlap < self.track_overlap

    def _tracker(self, state, model, n_threads):
        """The ln Z ladder of a tracked run (cyrbm.training.tracking), begun at the first model
        when the state has none yet; None without tracking."""
        if not self.track_logz:
            return None
        tracker = state.get("tracker")
        if tracker is None:     # the method's own (samplers: PT's follows its ladders)
            tracker = SAMPLERS[self.method].tracker(self, n_threads, state.get("track_state"))
            state["tracker"] = tracker
            state.setdefault("track_pending", [])
            if tracker.last is None and (first := tracker.begin(model)) is not None:
                state["track_pending"].append(self._track_record(tracker, first, n_threads))
        return tracker

    def _track(self, state, tracker, model, n_threads):
        """Add the current model to the ladder (after ``state["n_updates"]`` updates),
        unless it is already the last rung (added by ``track_overlap`` at an epoch's end)."""
        if tracker.last_update == state["n_updates"]:
            return
        tracker.threads = n_threads
        state["track_pending"].append(self._track_record(
            tracker, tracker.step(model, state["n_updates"]), n_threads))

    def _track_record(self, tracker, record, n_threads):
        if self.test_data is not None:
            tracker.log_likelihood(record, self.test_data, n_threads)
        return record

    def _describe_track(self, state, record):
        """The epoch's rungs into its history record, the last one's figures flat."""
        rungs, state["track_pending"] = state["track_pending"], []
        record["tracked"] = rungs
        if rungs:
            last = rungs[-1]
            for key in ("log_Z", "log_Z_se", "log_likelihood", "log_likelihood_interval"):
                if key in last:
                    record[key] = last[key]
            warnings = [r["overlap_warning"] for r in rungs if r.get("overlap_warning")]
            if warnings:
                record["overlap_warning"] = warnings[-1]

    def _checkpoint_due(self, epoch, saved_at, saved_epoch):
        """Whether to checkpoint after ``epoch`` epochs, the last checkpoint having been
        written at clock time ``saved_at`` after ``saved_epoch`` epochs."""
        return (epoch >= self.epochs
                or _now() - saved_at >= self.checkpoint_seconds
                or (self.checkpoint_every is not None
                    and epoch - saved_epoch >= self.checkpoint_every))

    # ---------------------------------------------------------- checkpoints
    def _training_record(self, state, shape):
        return {"settings": self.settings(), "epochs_done": state["epoch"],
                "n_updates": state["n_updates"], "data_shape": list(shape),
                "input": ("probabilities" if self.probabilities else
                          "real" if self._model_class().real_valued else "binary"),
                "history": state["history"]}

    def _save_checkpoint(self, state, fingerprint):
        save_checkpoint(self, state, fingerprint)

    def _diverged_message(self, epoch, batch):
        where = f"epoch {epoch + 1}, batch {batch + 1}"
        if self.checkpoint is not None and self._last_checkpoint_epoch is not None:
            kept = f"the last good checkpoint '{self.checkpoint}' (epoch {self._last_checkpoint_epoch}) is kept"
        else:
            kept = "no checkpoint had been written yet"
        return (f"training diverged at {where}: the parameters became non-finite "
                f"(try a smaller learning rate); {kept}.")


# ---------------------------------------------------------------- helpers
def auto_monitor_rows(n_visible, n_hidden):
    """Monitor rows for monitor_size="auto": 200, or fewer for large models, since the
    exact pseudo-log-likelihood costs n_visible x n_hidden softplus terms a row (about
    4 ms a row for 784 x 500, so 200 rows would add most of a second to each 0.4 s epoch
    of 60,000 rows): at most 2 million terms an epoch, at least 8 rows (784 x 500: 8;
    784 x 25: 102; the 8 x 8 digits: 200)."""
    return int(min(200, max(8, 2_000_000 // (n_visible * n_hidden))))


def _epoch_order(seed, epoch, n, length):
    """Row order of one epoch: a permutation, wrapped around to fill the last batch."""
    rng = np.random.default_rng(seed_sequence(seed, "shuffle", epoch))
    perm = rng.permutation(n)
    reps = -(-length // n)
    return np.tile(perm, reps)[:length]
