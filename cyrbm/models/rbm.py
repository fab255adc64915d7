"""The binary Restricted Boltzmann Machine and its file format.

Energy (Salakhutdinov & Murray 2008, Eq. 1):
    E(v, h) = -v^T W h - b^T v - a^T h,
with ``W`` (n_visible x n_hidden), visible biases ``vbias`` (b) and hidden biases
``hbias`` (a).  p*(v) = sum_h exp(-E(v, h)) (Eq. 2) and the conditionals are logistic
(Eq. 4-6).

File format (``.npz``): arrays ``W``, ``vbias``, ``hbias`` and ``meta``, a JSON string
with ``format`` ("cyrbm.rbm"), ``format_version``, ``dtype``, sizes and a ``training``
record.  A file with only ``W``, ``vbias`` and ``hbias`` (weights trained elsewhere)
loads too.  Checkpoints are model files with extra ``trainer_*`` arrays.
"""
import numpy as np

from cyrbm import _anneal, _cd, _engine, _exact, _gibbs, _io, _tempering, defaults
from cyrbm._omp import resolve_threads
from cyrbm._random import make_run_streams, make_streams, pt_swap_streams, sample_streams
from cyrbm._threads import auto_threads
from cyrbm._version import __version__
from cyrbm._validation import (check_memory, check_probabilities, check_visible_rows, hint,
                               worded)
from cyrbm.errors import (AnnealingError, DataError, ModelFileError, ModelMismatchError,
                          ModelTypeError)
from cyrbm.models.exact import EXACT_MAX_UNITS, binary_log_partition

FORMAT = "cyrbm.rbm"
FORMAT_VERSION = 1
_DTYPES = (np.float32, np.float64)


def _version():
    return __version__


class Layers:
    """What every unit type shares (:class:`RBM`, :class:`cyrbm.models.gaussian.GaussianRBM`,
    :class:`cyrbm.models.srbm.SRBM`): sizes and dtype of the weights ``W`` (n_visible x
    n_hidden), files, ln p(v) from ln p*(v) and ln Z, the enumeration's limit, and the
    words sentences use for the model.  Each class supplies its own energy
    (``_log_unnormalized_rows``), conditionals, ``log_partition`` and samplers."""

    #: how sentences name a model of this class ("an RBM", "a Gaussian RBM", ...)
    noun = "a model"
    #: its kind as a heading ("RBM", "Gaussian RBM", ...)
    title = "model"
    #: whether its visible units take real values (else 0/1 states)
    real_valued = False
    #: the largest layer ``log_partition`` enumerates by default
    exact_max_units = 20

    n_visible = property(lambda self: self.W.shape[0], doc="Visible units (rows of W).")
    n_hidden = property(lambda self: self.W.shape[1], doc="Hidden units (columns of W).")
    dtype = property(lambda self: self.W.dtype, doc="The parameters' float type.")

    def _own(self, W, vbias, hbias, dtype, meta, where="the given parameters",
             error=ModelMismatchError):
        """Check W, vbias, hbias and keep copies of them (the model never writes into the
        caller's arrays) in ``dtype``: by default W's when float32 or float64, else
        float64; and a copy of ``meta``.  Returns the dtype."""
        W = np.asarray(W)
        if dtype is None:
            dtype = W.dtype if W.dtype in _DTYPES else np.float64
        dtype = _float_dtype(dtype)
        W, vbias, hbias = _checked_parameters(W, vbias, hbias, where, error)
        self.W = np.array(W, dtype=dtype, order="C", copy=True)
        self.vbias = np.array(vbias, dtype=dtype, order="C", copy=True)
        self.hbias = np.array(hbias, dtype=dtype, order="C", copy=True)
        self.meta = dict(meta or {})
        return dtype

    def _file_arrays(self, fmt, extra_meta, kind=None, **arrays):
        """A model file's arrays: W, vbias, hbias, ``arrays`` and the JSON ``meta``
        (``format`` ``fmt``, format version 1, the dtype, sizes, the cyrbm version, the
        ``visible`` ``kind`` unless None, then the model's own records and ``extra_meta``)."""
        meta = {"format": fmt, "format_version": FORMAT_VERSION,
                **({"visible": kind} if kind else {}),
                "dtype": self.dtype.name, "n_visible": int(self.n_visible),
                "n_hidden": int(self.n_hidden), "cyrbm_version": _version()}
        meta.update({k: v for k, v in self.meta.items() if k not in meta})
        if extra_meta:
            meta.update(extra_meta)
        return {"W": self.W, "vbias": self.vbias, "hbias": self.hbias, **arrays,
                "meta": _io.meta_to_array(meta)}

    def save(self, path):
        """Write the model to ``path`` (.npz) atomically."""
        _io.atomic_savez(path, self.to_arrays())

    def log_prob(self, v, log_Z=None, *, threads=None):
        """ln p(v) = ln p*(v) - ln Z for each row (SM08 Eq. 2-3), float64: a probability
        for binary visible units, a density for Gaussian ones.  ``log_Z`` defaults to the
        exact value (:meth:`log_partition`, refused for a layer too large to enumerate:
        then pass an AIS estimate, ``Annealer().log_partition(model).log_Z``)."""
        v = self._visible_data(v)
        log_Z = self.log_partition(threads=threads) if log_Z is None else float(log_Z)
        return self._log_unnormalized_rows(v, threads) - log_Z

    def _input_rows(self, v, probabilities):
        """Rows ``v`` checked as the model's visible states or, with ``probabilities``, as
        rows of probabilities in [0, 1] of its width (mean-field input)."""
        if not probabilities:
            return self._visible_data(v, "v")
        v = np.asarray(v)
        v = check_probabilities(v[None, :] if v.ndim == 1 else v, name="v")
        if v.shape[1] != self.n_visible:
            raise ModelMismatchError(f"v has {v.shape[1]} columns but the model has "
                                     f"{self.n_visible} visible units.")
        return v

    def _enumerable(self, units, layer, max_units, what="an exact ln Z"):
        """``max_units`` (None: the class's ``exact_max_units``), or an AnnealingError of
        one sentence when the enumerated ``layer`` has more than that many ``units``."""
        limit = self.exact_max_units if max_units is None else int(max_units)
        if units > limit:
            raise worded(AnnealingError(
                f"{what} of {self.noun} sums 2^{units} {layer} states and the limit is "
                f"{limit} units, so {hint('exact_too_big')}."), hints=("exact_too_big",))
        return limit

    def exact_layer(self):
        """(name, units) of the layer :meth:`log_partition` enumerates: "hidden" or
        "visible" and its size (an RBM's smaller layer, a Gaussian RBM's hidden one, an
        SRBM's visible one)."""
        return self._exact_layer

    # ------------------------------------------------- the training protocol
    #: the Trainer settings that train a model of this class (fit(model=...) takes them)
    trainer_settings = {}
    #: whether training's monitor reports the exact pseudo-likelihood (cheap: binary)
    pll_monitor = False

    @classmethod
    def _fresh(cls, trainer, n_visible, data):
        """A fresh model for ``trainer`` (Trainer) on ``data``: the class's ``random``."""
        return cls.random(n_visible, trainer.n_hidden, seed=trainer.seed, dtype=trainer.dtype,
                          data=data)

    def _cd_step(self, batch, chains, chain_inputs, state, settings, trainer, scratch):
        """One CD-k / PCD-k update of this model in place from ``batch`` and the sampler's
        ``chains`` (SM08 Eq. 7; the velocities and streams in the training ``state``,
        ``settings`` the step's k, learning rate, momentum, decay and scale, ``scratch``
        buffers kept across batches); False when the parameters became non-finite."""
        raise NotImplementedError

    # ------------------------------------------------- the samplers' protocol
    # What the samplers of cyrbm.models.tempering and cyrbm.training.trainer ask of a model
    # class, each a method of the same name and signature on RBM, GaussianRBM and SRBM
    # (defaults here for the models with their own ``_sweeps``: GaussianRBM, SRBM).

    #: the dtype of a chain's visible states (0/1 uint8; a Gaussian model's reals)
    _state_dtype = np.dtype(np.uint8)

    def _parameters(self):
        """The arrays that define the model, by their constructor's names."""
        return {"W": self.W, "vbias": self.vbias, "hbias": self.hbias}

    def _with_parameters(self, params):
        """A model of this class with the given ``_parameters`` arrays, in this dtype."""
        return type(self)(**params, dtype=self.dtype)

    def _chain_states(self, rows, rng):
        """Chains started at training rows: 0/1 rows as they are, rows of probabilities
        as a Bernoulli draw from ``rng`` (a Gaussian model: the rows in its dtype)."""
        if rows.dtype == np.uint8:
            return np.ascontiguousarray(rows)
        return np.ascontiguousarray(rng.random(rows.shape) < rows, dtype=np.uint8)

    @staticmethod
    def _chain_streams(seed, purpose, runs, *extra):
        """The streams of ``runs`` chains of ``_sweeps`` (one chain stream each)."""
        return make_streams(seed, purpose, runs, *extra)

    def _chains(self, v, streams, n_threads):
        """Chains at this model (beta = 1) from states ``v`` on ``streams``: an object
        with GibbsEngine's ``sweep``, ``visible``, ``set_visible``, ``streams`` and
        ``n_threads`` (what tempering.TrajectoryChains runs a rung on)."""
        from cyrbm.models.tempering import SweptChains
        return SweptChains(self, v, streams, n_threads)

    def _tempered_ladders(self, temps, chains, *, n_threads=1, adaptive=False, state):
        """The persistent PT ladders of training (tempering.TemperedStates: sweeps at
        beta by ``_sweeps``, swaps of states by ``_tempered_parts``)."""
        from cyrbm.models.tempering import TemperedStates
        return TemperedStates(temps, chains, n_threads=n_threads, adaptive=adaptive,
                              state=state)

    @classmethod
    def _method_refusal(cls, method):
        """None if a Trainer method trains this class, else the sentence that refuses it."""
        return None

    def _tempered_log_p(self, v, betas):
        """ln p*_beta(v) of the class's tempered family (the one its PT ladders sample,
        stated in its ``sample``) for rows ``v`` at each column of ``betas`` (rows x n),
        float64, from ``_tempered_parts``: g + beta e + sum_j softplus(beta x_j).  The
        PT tracker of ln Z (cyrbm.training.pt_tracking) weighs the ladders' states by it."""
        g, e, x = self._tempered_parts(v)
        betas = np.asarray(betas, np.float64)
        return np.stack([g + b * e + np.sum(np.logaddexp(0.0, b[:, None] * x), axis=1)
                         for b in betas.T], axis=1)

    def _same_class(self, model):
        if type(model) is not type(self):
            raise ModelTypeError(f"a ladder model must be a {type(self).__name__} like the "
                                 f"model sampled, not a {type(model).__name__}.")
        return model

    def _chain_sample(self, n, steps, seed, init, threads, work, sampler="gibbs",
                      temperatures=None, ladder=None):
        """``sample`` of a model with its own ``_sweeps`` (GaussianRBM, SRBM): ``n`` chains
        of ``_state_dtype``, from ``init`` rows (cycled; then steps 1 .. steps) or from
        step 0's exact draw of the model's start (the tempered family's beta = 0 member);
        threads by the ``work`` of a sweep of one chain.  Gibbs: chain r on stream r of
        ``sample_streams(seed, n)``.  PT: ladder m's chain at temperatures[k] on stream
        m K1 + k of ``sample_streams(seed, n K1)``, started at init row m, its swaps on
        stream m of ``pt_swap_streams(seed, n)``; ``steps`` rounds
        (tempering.TemperedStates).  PTT: tempering.TrajectoryChains on ``ladder`` and
        this model.  Returns the final states (at beta = 1, at this model)."""
        from cyrbm.models.tempering import sampler_plan
        n, steps = int(n), int(steps)
        temps, rungs = sampler_plan(self, n, steps, sampler, temperatures, ladder,
                                    self._same_class)
        K1 = 1 if temps is None else temps.size
        streams = sample_streams(seed, n * K1)
        dtype = self._state_dtype
        if init is None:
            v, k0 = np.zeros((n * K1, self.n_visible), dtype=dtype), 0
        else:
            init = self._visible_data(init, "init")
            if init.shape[0] == 0:
                raise DataError("init has no rows.")
            v = np.ascontiguousarray(init[np.arange(n * K1) // K1 % init.shape[0]],
                                     dtype=dtype)
            k0 = 1
        T = auto_threads(threads, n * K1 * work)
        if sampler == "gibbs":
            self._sweeps(v, streams, k0, steps + 1, T)
            return v
        from cyrbm.models.tempering import tempered_sample
        return tempered_sample(self, v, k0, steps, streams, temps, rungs, seed, T)


class RBM(Layers):
    """A binary RBM with parameters ``W``, ``vbias`` (b) and ``hbias`` (a).

    Parameters
    ----------
    W : array, shape (n_visible, n_hidden)
    vbias : array, shape (n_visible,)
    hbias : array, shape (n_hidden,)
    dtype : float32 or float64, optional
        Storage and arithmetic precision; by default that of ``W`` when it is float32 or
        float64, else float64.  Log-probabilities are always accumulated in float64.
    meta : dict, optional
        Free-form record (how the model was trained), saved with the model.
    """

    visible = "binary"
    noun = "an RBM"
    title = "RBM"
    pll_monitor = True
    exact_max_units = EXACT_MAX_UNITS

    def __init__(self, W, vbias, hbias, *, dtype=None, meta=None):
        self._own(W, vbias, hbias, dtype, meta)

    # ------------------------------------------------------------------ basics
    @classmethod
    def random(cls, n_visible, n_hidden, *, seed=0, dtype=np.float32, scale=0.01, data=None):
        """A fresh RBM: W ~ N(0, scale^2), a = 0, and b = logit of the data's marginals
        (clipped to [1e-3, 1 - 1e-3]) when ``data`` is given, else 0 (Hinton's guide)."""
        if int(n_visible) < 1 or int(n_hidden) < 1:
            raise ValueError("an RBM needs at least one visible and one hidden unit.")
        dtype = _float_dtype(dtype)
        check_memory(int(n_visible) * int(n_hidden) * (16 + dtype.itemsize),
                     f"a {int(n_visible)} x {int(n_hidden)} RBM", "use fewer hidden units")
        rng = np.random.default_rng(np.random.SeedSequence(make_streams(seed, "init", 1)[0]))
        W = scale * rng.standard_normal((int(n_visible), int(n_hidden)))
        vbias = np.zeros(int(n_visible))
        if data is not None:
            p = np.clip(_column_means(data), 1e-3, 1 - 1e-3)
            vbias = np.log(p / (1 - p))
        return cls(W, vbias, np.zeros(int(n_hidden)), dtype=dtype)

    def copy(self):
        return RBM(self.W, self.vbias, self.hbias, meta=dict(self.meta))

    def astype(self, dtype):
        """The same model stored in ``dtype`` (float32 or float64)."""
        return RBM(self.W, self.vbias, self.hbias, dtype=dtype, meta=dict(self.meta))

    def transposed(self):
        """The RBM with visible and hidden layers swapped: W^T, vbias = a, hbias = b (the
        same joint distribution).  As the top of a DBN above this RBM it makes the DBN's
        p(v) this RBM's, and Q(h | v) its exact posterior (SM08 Sec. 4.1, "W2 = W1^T")."""
        return RBM(self.W.T, self.hbias, self.vbias, dtype=self.dtype)

    def __repr__(self):
        return f"RBM(n_visible={self.n_visible}, n_hidden={self.n_hidden}, dtype={self.dtype.name})"

    # ------------------------------------------------------------ conditionals
    def _visible_data(self, v, name="data"):
        return check_visible_rows(v, self.n_visible, name)

    def _float_input(self, x, width, what, name):
        x = np.asarray(x)
        if x.ndim == 1:
            x = x[None, :]
        if x.ndim != 2:
            raise DataError(f"{name} must be a 2-D array of samples x {what} units.")
        if x.shape[1] != width:
            raise ModelMismatchError(
                f"{name} has {x.shape[1]} columns but the model has {width} {what} units.")
        x = x.astype(self.dtype, copy=False)
        if not np.all(np.isfinite(x)):
            raise DataError(f"{name} contains NaN or infinite values.")
        return x

    def hidden_probs(self, v, *, probabilities=False):
        """p(h_j = 1 | v) = sigma(sum_i W_ij v_i + a_j) (SM08 Eq. 5), one row per v.

        ``v`` holds 0/1 states; with ``probabilities=True`` it may hold probabilities in
        [0, 1] instead (mean-field input, as a DBN's recognition pass takes them).
        """
        v = self._float_input(self._input_rows(v, probabilities), self.n_visible, "visible", "v")
        return expit(v @ self.W + self.hbias)

    def visible_probs(self, h):
        """p(v_i = 1 | h) = sigma(sum_j W_ij h_j + b_i) (SM08 Eq. 6), one row per h."""
        h = self._float_input(h, self.n_hidden, "hidden", "h")
        return expit(h @ self.W.T + self.vbias)

    def reconstruct(self, v, *, probabilities=False):
        """Mean-field reconstruction p(v | p(h | v)), as probabilities, of 0/1 rows ``v``
        (rows of probabilities in [0, 1] with ``probabilities=True``)."""
        return self.visible_probs(self.hidden_probs(v, probabilities=probabilities))

    def reconstruction_error(self, v):
        """Mean over rows of sum_i (v_i - reconstruct(v)_i)^2."""
        v = self._visible_data(v)
        if v.shape[0] == 0:
            return float("nan")
        return float(np.mean(np.sum((v - self.reconstruct(v)) ** 2, axis=1)))

    # ------------------------------------------------------- probabilities
    def log_unnormalized(self, v, *, threads=None):
        """ln p*(v) = b^T v + sum_j softplus(a_j + sum_i W_ij v_i) for each 0/1 row
        (SM08 Eq. 2 with h summed out), in float64.  Equals minus the free energy."""
        return self._log_unnormalized_rows(self._visible_data(v), threads)

    def _log_unnormalized_rows(self, v, threads):
        """log_unnormalized of rows already checked (``_visible_data``): no second scan."""
        return _gibbs.log_unnormalized(self.W, self.vbias, self.hbias, v, resolve_threads(threads))

    def free_energy(self, v, *, threads=None):
        """F(v) = -ln p*(v)."""
        return -self.log_unnormalized(v, threads=threads)

    def log_partition(self, *, threads=None, max_units=None):
        """ln Z exactly, by summing over every state of the smaller layer (SM08 Eq. 3;
        :func:`cyrbm.models.exact.binary_log_partition`): float64, the same bits for any number
        of threads.  Refuses (AnnealingError, with a time estimate) a smaller layer of
        more than ``max_units`` units (default :data:`exact_max_units`, 30)."""
        limit = self.exact_max_units if max_units is None else int(max_units)
        return binary_log_partition(self, threads=threads, max_units=limit)

    @property
    def _exact_layer(self):
        return (("hidden", self.n_hidden) if self.n_hidden <= self.n_visible
                else ("visible", self.n_visible))

    def _cd_step(self, batch, chains, chain_inputs, state, settings, trainer, scratch):
        """CD-k / PCD-k of the binary RBM (SM08 Eq. 7): the statistics and the update in
        one pass (``_cd.cd_update``, bit-identical to ``cd_statistics`` then
        ``apply_update``), or, with ``trainer.probabilities``, the positive phase under
        rows of probabilities (:func:`probability_statistics`)."""
        params = (self.W, self.vbias, self.hbias)
        velocity = (state["vel_W"], state["vel_vbias"], state["vel_hbias"])
        if not trainer.probabilities:
            return _cd.cd_update(params, velocity, batch, chains, state["streams"],
                                    settings, workspace=scratch["workspace"],
                                    chain_inputs=chain_inputs)
        if "grads" not in scratch:
            scratch["grads"] = tuple(np.empty_like(a) for a in params)
        probability_statistics(params, batch, chains, state["streams"], scratch["grads"],
                               settings, scratch["workspace"])
        return _cd.apply_update(params, scratch["grads"], velocity, settings)

    def pseudo_log_likelihood(self, v, *, threads=None):
        """``sum_i ln p(v_i | v_-i)`` for each row, over all bits (no sampling), float64."""
        v = self._visible_data(v)
        return _exact.pseudo_log_likelihood(self.W, self.vbias, self.hbias, v,
                                            resolve_threads(threads))

    def sample(self, n, steps=defaults.SAMPLE_STEPS, *, seed=None, init=None, threads=None, sampler="gibbs",
               temperatures=None, ladder=None):
        """Draw ``n`` visible vectors by block Gibbs sampling (SM08 Eq. 5-6) or by
        parallel tempering (Cho, Raiko & Ilin 2010, Table I).

        Each of the ``n`` chains starts from ``init`` (rows of 0/1 data, cycled) or from
        uniform random bits, runs ``steps`` full sweeps with its own random stream, and
        returns its final visible state.  With ``sampler="pt"`` each of the ``n`` samples
        comes from a ladder of chains at ``temperatures`` (0 <= T_0 < ... < T_K = 1, the
        RBMs (T_k W, b, c); default CRI10's 0, 0.05, ..., 1; or a count N for N evenly
        spaced), every chain of ladder m starting from init row m (or random bits):
        ``steps`` rounds of one sweep per chain and swaps of neighbours from the top down
        (Eq. 5), and the sample is the T = 1 chain's final state.  The result depends only
        on ``seed``, not on the number of threads.

        With ``sampler="ptt"`` (parallel trajectory tempering, Béreux et al. 2025;
        cyrbm.models.tempering.TrajectoryChains) ``ladder`` is a list of earlier models of this
        RBM's training (RBMs on the same units, earliest first, e.g. its checkpoints):
        ``n`` chains run at each of them and at this model, ``steps`` rounds of one sweep
        per chain and Metropolis swaps of states between neighbouring models, and the
        samples are the chains' final states at this model.

        Returns
        -------
        v : uint8 array, shape (n, n_visible)
        """
        from cyrbm.models.tempering import sampler_plan
        n = int(n)
        temps, rungs = sampler_plan(self, n, int(steps), sampler, temperatures, ladder,
                                    lambda m: as_rbm(m, "a ladder model"))
        K1 = 1 if temps is None else temps.size
        streams = sample_streams(seed, n * K1)
        if init is None:
            rng = np.random.default_rng(np.random.SeedSequence(make_streams(seed, "sample", 1, 1)[0]))
            v = (rng.random((n * K1, self.n_visible)) < 0.5).astype(np.uint8)
        else:
            init = self._visible_data(init, "init")
            if init.shape[0] == 0:
                raise DataError("init has no rows.")
            v = np.ascontiguousarray(init[np.arange(n * K1) // K1 % init.shape[0]], dtype=np.uint8)
        # a parallel region per sweep over the chains
        T = auto_threads(threads, n * K1 * self.n_visible * self.n_hidden)
        if sampler == "ptt":
            from cyrbm.models.tempering import TrajectoryChains
            chains = TrajectoryChains(rungs, n, seed=seed, init=v, dtype=self.dtype,
                                      n_threads=T)
            chains.step(int(steps))
            return chains.states(-1)
        if sampler == "pt":
            swap_streams = pt_swap_streams(seed, n)
            accepted = np.zeros((n, max(K1 - 1, 1)), dtype=np.int64)
            _tempering.pt_sample(self.W, self.vbias, self.hbias, v, temps, int(steps), streams,
                                 swap_streams, accepted, T)
            return np.ascontiguousarray(v[K1 - 1::K1])
        h = np.empty((n, self.n_hidden), dtype=np.uint8)
        _engine.gibbs_sample(self.W, self.vbias, self.hbias, v, h, int(steps), streams, T)
        return v

    # ------------------------------------------------- the samplers' protocol
    @staticmethod
    def _chain_streams(seed, purpose, runs, *extra):
        """The streams of ``runs`` engine chains (8 lanes each: make_run_streams)."""
        return make_run_streams(seed, purpose, runs, *extra)

    def _chains(self, v, streams, n_threads):
        """Chains at this RBM on a GibbsEngine (A = its visible biases, B = the RBM;
        ``sweep`` at beta = 1), from states ``v`` (Layers._chains)."""
        engine = _engine.GibbsEngine(self.vbias, None, None, self.W, self.vbias, self.hbias,
                                     streams, dtype=self.dtype, n_threads=n_threads)
        engine.set_visible(np.ascontiguousarray(v, dtype=np.uint8))
        return engine

    def _local_mode(self, v, WT=None, max_iter=100):
        """mu(v): alternate h = argmax P(h | v), v = argmax P(v | h) until v is a fixed point
        (at most ``max_iter`` rounds; each half-step lowers the joint energy); rows of 0/1.
        Products in the model's dtype, only rows not yet fixed are carried on; ``WT`` is
        W^T if the caller has it."""
        W, b, c = self.W, self.vbias, self.hbias
        if WT is None:
            WT = _gibbs.transposed(W)
        v = np.array(v, dtype=np.uint8)
        live = np.arange(v.shape[0])
        for _ in range(max_iter):
            if live.size == 0:
                break
            h = (_gibbs.binary_inputs(W, c, np.ascontiguousarray(v[live])) > 0).view(np.uint8)
            nv = (_gibbs.binary_inputs(WT, b, np.ascontiguousarray(h)) > 0).view(np.uint8)
            moved = np.any(nv != v[live], axis=1)
            v[live] = nv
            live = live[moved]
        return v

    def _amh_hops(self, proposal, chains, rows, streams, terms, n_threads):
        """AMH's hops of ``chains[rows]`` (Hu & Yu Eq. 6-7): the compiled _gibbs.amh_hops."""
        return _gibbs.amh_hops(self.W, self.vbias, self.hbias, proposal, chains, rows,
                               streams, terms, n_threads)

    def _tempered_ladders(self, temps, chains, *, n_threads=1, adaptive=False, state):
        """The persistent PT ladders of training: tempering.TemperedChains, CRI10's RBMs
        (T W, b, c) on one GibbsEngine, chains trading temperatures."""
        from cyrbm.models.tempering import TemperedChains
        return TemperedChains(temps, self.n_visible, self.n_hidden, chains, dtype=self.dtype,
                              n_threads=n_threads, adaptive=adaptive, state=state)

    # ------------------------------------------- AIS protocol (cyrbm.estimators.annealing)
    def _ais_log_partition(self, annealer, base_rate, data, **options):
        """:meth:`cyrbm.Annealer.log_partition` of this model (from a base-rate model)."""
        return annealer._rbm_log_partition(self, base_rate, data, **options)

    def _ais_log_ratio(self, annealer, other, data=None, **options):
        """:meth:`cyrbm.Annealer.log_ratio` from this model to the RBM ``other``."""
        return annealer._rbm_log_ratio(self, other, data, **options)

    def _start_units(self):
        """The units an exact ln Z (and an exact draw) enumerates: the smaller layer."""
        return min(self.n_visible, self.n_hidden)

    def _tempered_log_p(self, v, betas):
        """ln p*_beta(v) = b^T v + sum_j softplus(c_j + beta (W^T v)_j) of CRI10's family
        (beta W, b, c) for 0/1 rows ``v`` at each column of ``betas`` (rows x n), float64.
        W^T v and the softplus terms in W's dtype (float32: several times faster, each
        term within an ulp of float32), summed in float64."""
        dt = self.W.dtype
        u = np.asarray(v, dt) @ self.W
        c, betas = self.hbias, np.asarray(betas, dt)
        bv = np.asarray(v, np.float64) @ self.vbias.astype(np.float64)
        out = np.empty((u.shape[0], betas.shape[1]))
        for i in range(betas.shape[1]):
            y = c + betas[:, i, None] * u
            out[:, i] = bv + np.sum(np.maximum(y, 0) + np.log1p(np.exp(-np.abs(y))), axis=1,
                                    dtype=np.float64)
        return out

    def _tempered_base_log_partition(self):
        """ln Z of CRI10's family at beta = 0, (0, b, c): sum_i softplus(b_i) +
        sum_j softplus(c_j), the units independent (the PT tracker's anchor)."""
        return float(np.sum(np.logaddexp(0.0, self.vbias.astype(np.float64)))
                     + np.sum(np.logaddexp(0.0, self.hbias.astype(np.float64))))

    def _unconnected(self, n, rng):
        """This model with W = 0, its ln Z in closed form (sum_i softplus(b_i) +
        sum_j softplus(c_j): the units are independent) and ``n`` exact draws of its v
        (uniforms from ``rng``): the first rung of a tracked ln Z (cyrbm.training.tracking)."""
        base = RBM(np.zeros_like(self.W), self.vbias, self.hbias)
        b, c = (np.asarray(a, np.float64) for a in (base.vbias, base.hbias))
        log_Z = float(np.sum(np.logaddexp(0.0, b)) + np.sum(np.logaddexp(0.0, c)))
        return base, log_Z, (rng.random((n, self.n_visible)) < expit(b)).astype(np.uint8)

    # ---------------------------------------------------------------- files
    def to_arrays(self, extra_meta=None):
        return self._file_arrays(FORMAT, extra_meta)

    @classmethod
    def load(cls, path, *, dtype=None):
        """Read a model file; a clear ModelFileError for anything that is not one."""
        arrays = _io.read_npz(path)
        return cls.from_arrays(arrays, path, dtype=dtype)

    @classmethod
    def from_arrays(cls, arrays, path="<arrays>", *, dtype=None, what="model file"):
        W, vbias, hbias, meta, dtype = read_parameters(arrays, path, what, FORMAT, "an RBM",
                                                       dtype)
        return cls(W, vbias, hbias, dtype=dtype, meta=meta)


def read_parameters(arrays, path, what, fmt, kind, dtype, extra=()):
    """W, vbias, hbias, the meta record without its format keys, and the dtype (``dtype``,
    or W's) of a model file's ``arrays`` holding a ``fmt`` (``kind``: "an RBM"); a
    ModelFileError of one sentence for anything else (missing or non-numeric arrays, a
    file of another format, a corrupt meta).  ``extra``: names of further arrays that
    must be numeric when present."""
    names = ("W", "vbias", "hbias") + tuple(extra)
    missing = [k for k in names[:3] if k not in arrays]
    if missing:
        raise ModelFileError(
            f"{what} '{path}' lacks the array{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)} (it has {', '.join(sorted(arrays)) or 'none'}).")
    meta = {}
    if "meta" in arrays:
        meta = _io.meta_from_array(arrays["meta"], path, what)
        _check_version(meta, path, what, FORMAT_VERSION)
        got = meta.get("format", fmt)
        if got != fmt:
            raise ModelFileError(f"{what} '{path}' holds a '{got}', not {kind} ('{fmt}').")
        _check_records(meta, path, what)
    for name in names:
        arr = arrays.get(name)
        if arr is not None and not (np.issubdtype(arr.dtype, np.floating)
                                    or np.issubdtype(arr.dtype, np.integer)):
            raise ModelFileError(f"{what} '{path}': array '{name}' is not numeric ({arr.dtype}).")
    W, vbias, hbias = _checked_parameters(arrays["W"], arrays["vbias"], arrays["hbias"],
                                          f"{what} '{path}'", ModelFileError)
    _check_meta_shape(meta, W, path, what)
    if dtype is None:
        dtype = W.dtype if W.dtype in _DTYPES else np.float64
    meta = {k: v for k, v in meta.items()
            if k not in ("format", "format_version", "dtype", "n_visible", "n_hidden",
                         "cyrbm_version", "visible")}
    return W, vbias, hbias, meta, dtype


def _column_means(data):
    """Mean of each column, float64; 0/1 uint8 data summed in blocks of 255 rows in uint16
    (exact, and 3-4 times faster than a float64 mean over 60,000 x 784)."""
    data = np.asarray(data)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[0] == 0:
        return np.asarray(data).mean(axis=0, dtype=np.float64)
    counts = np.zeros(data.shape[1], dtype=np.int64)
    for start in range(0, data.shape[0], 255):
        counts += data[start:start + 255].sum(axis=0, dtype=np.uint16)
    return counts / data.shape[0]


def probability_statistics(params, x, v_chain, streams, grads, settings, workspace=None):
    """Sums over a mini-batch of the CD-k / PCD-k gradient when the data rows are
    probabilities x in [0, 1] (a DBN layer trained on Q(h | v) as probabilities, SM08
    Sec. 4.1): SM08 Eq. 7 with the positive phase's expectation taken under x,

        dW = sum_n x_n sigma(W^T x_n + c)^T - sum_n v~_n p(h | v~_n)^T
        db = sum_n x_n - sum_n v~_n,   dc = sum_n sigma(W^T x_n + c) - sum_n p(h | v~_n),

    v~ the chains after k block-Gibbs sweeps.  CD (``settings["persistent"]`` false)
    starts chain n at a Bernoulli draw of x_n from stream n (cyrbm_rng_uniform < x);
    persistent chains keep ``v_chain`` (INOUT).  The sweeps and the negative statistics
    are the CD kernel's (``_cd.cd_statistics`` on all-zero data, whose positive terms
    are 0, and sigma(c) for the hidden biases, removed here); the positive statistics are
    dense products in the model's dtype.  ``grads`` (OUT) = (dW, db, dc), not divided by
    the batch size; ``settings`` as for cd_statistics."""
    W, vbias, hbias = params
    x = np.asarray(x, dtype=W.dtype)
    B = x.shape[0]
    if not settings["persistent"]:
        v_chain[:] = _anneal.chain_uniforms(streams, x.shape[1])[:B] < x
    stats = dict(settings, persistent=True)
    _cd.cd_statistics(params, np.zeros(x.shape, np.uint8), v_chain, streams, grads, stats,
                         workspace)
    dW, dvbias, dhbias = grads
    P = expit(x @ W + hbias)
    dW += x.T @ P
    dvbias += x.sum(axis=0, dtype=W.dtype)
    dhbias += P.sum(axis=0, dtype=W.dtype) - B * expit(hbias)


def binary_states(n, bits=12):
    """Every 0/1 state of ``n`` units in order (unit 0 the lowest bit), as float64 rows
    in blocks of 2^min(n, bits): the enumeration of a finite layer (SM08 Eq. 3)."""
    low = min(n, bits)
    block = ((np.arange(1 << low)[:, None] >> np.arange(low)) & 1).astype(np.float64)
    for t in range(1 << (n - low)):
        states = np.empty((block.shape[0], n))
        states[:, :low] = block
        states[:, low:] = (t >> np.arange(n - low)) & 1
        yield states


def logsumexp(a, axis=None):
    """ln sum exp(a) along ``axis``, relative to the maximum (float64)."""
    a = np.asarray(a, dtype=np.float64)
    mx = np.max(a, axis=axis, keepdims=True)
    out = mx + np.log(np.sum(np.exp(a - mx), axis=axis, keepdims=True))
    return out.item() if axis is None else np.squeeze(out, axis=axis)


def expit(x):
    """The logistic function 1 / (1 + exp(-x)), as 0.5 (1 + tanh(x / 2)): stable for any
    x and without importing SciPy (a fifth of a second at start-up)."""
    x = np.asarray(x)
    return 0.5 + 0.5 * np.tanh(0.5 * x)


def _float_dtype(dtype):
    """np.dtype(dtype) if it is float32 or float64, else a ValueError in one sentence."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        dt = None
    if dt not in _DTYPES:
        raise ValueError(f"dtype must be float32 or float64, not {dtype!r}.")
    return dt


def _check_version(meta, path, what, newest):
    """A file's format_version is a whole number from 1 to ``newest`` (absent: ``newest``)."""
    version = meta.get("format_version", newest)
    if not isinstance(version, int) or version < 1:
        raise ModelFileError(f"{what} '{path}' has an invalid format version {version!r}.")
    if version > newest:
        raise ModelFileError(
            f"{what} '{path}' has format version {version}, newer than this cyrbm "
            f"understands ({newest}); upgrade cyrbm to read it.")


def _check_records(meta, path, what):
    """The records cyrbm reads back from a file's meta have the types it wrote: a
    'training' object with a 'settings' object and a 'history' list of objects, and a
    'checkpoint' object.  A crafted file gets a ModelFileError, not a traceback later."""
    def bad(name, kind):
        raise ModelFileError(f"{what} '{path}' has a meta entry '{name}' that is not {kind}.")

    training = meta.get("training")
    if training is not None:
        if not isinstance(training, dict):
            bad("training", "a JSON object")
        if not isinstance(training.get("settings", {}), dict):
            bad("training.settings", "a JSON object")
        history = training.get("history", [])
        if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
            bad("training.history", "a list of JSON objects")
        for key in ("epochs_done", "n_updates"):
            value = training.get(key, 0)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                bad(f"training.{key}", "a whole number")
    if "checkpoint" in meta and not isinstance(meta["checkpoint"], dict):
        bad("checkpoint", "a JSON object")


def _check_meta_shape(meta, W, path, what):
    """A file whose meta gives sizes or a dtype other than its arrays' is corrupt."""
    for key, actual, where in (("n_visible", W.shape[0], "rows"),
                               ("n_hidden", W.shape[1], "columns")):
        if key in meta and meta[key] != actual:
            raise ModelFileError(f"{what} '{path}' is corrupt: its meta says {key} "
                                 f"{meta[key]!r} but W has {actual} {where}.")
    if "dtype" in meta and meta["dtype"] != W.dtype.name:
        raise ModelFileError(f"{what} '{path}' is corrupt: its meta says dtype "
                             f"{meta['dtype']!r} but W is {W.dtype.name}.")


def _checked_parameters(W, vbias, hbias, where, error=ModelMismatchError):
    W, vbias, hbias = np.asarray(W), np.asarray(vbias), np.asarray(hbias)
    if W.ndim != 2 or W.shape[0] < 1 or W.shape[1] < 1:
        raise error(f"{where}: W must be a non-empty 2-D array (n_visible x n_hidden), "
                    f"not of shape {W.shape}.")
    if vbias.shape != (W.shape[0],):
        raise error(f"{where}: vbias has shape {vbias.shape} but W has {W.shape[0]} rows "
                    f"(visible units).")
    if hbias.shape != (W.shape[1],):
        raise error(f"{where}: hbias has shape {hbias.shape} but W has {W.shape[1]} columns "
                    f"(hidden units).")
    for name, arr in (("W", W), ("vbias", vbias), ("hbias", hbias)):
        if not np.all(np.isfinite(arr)):
            raise error(f"{where}: {name} contains NaN or infinite values.")
    return W, vbias, hbias


def as_rbm(model, name="model"):
    """``model`` if it is an RBM, else a ModelTypeError (cyrbm's own, a TypeError too)
    naming ``name``."""
    if not isinstance(model, RBM):
        raise ModelTypeError(f"{name} must be a cyrbm.RBM, not {type(model).__name__}.")
    return model
