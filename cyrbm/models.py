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

from cyrbm import _anneal, _gibbs, _io, defaults
from cyrbm._omp import resolve_threads
from cyrbm._random import make_streams, pt_swap_streams, sample_streams
from cyrbm._threads import auto_threads
from cyrbm._validation import check_memory, check_probabilities, check_visible_rows
from cyrbm.errors import DataError, ModelFileError, ModelMismatchError

FORMAT = "cyrbm.rbm"
FORMAT_VERSION = 1
_DTYPES = (np.float32, np.float64)


def _version():
    from cyrbm import __version__
    return __version__


class Layers:
    """The sizes and dtype of a model with weights ``W`` (n_visible x n_hidden): shared
    by :class:`RBM` and :class:`cyrbm.gaussian.GaussianRBM`.

    ``Layers.kinds``: the model class of each kind of visible units other than binary
    (a subclass's ``visible`` name, e.g. "gaussian"), registered when the class is
    defined, so that a DBN file naming its bottom layer's kind is read by that class
    (cyrbm.models cannot import the modules built on it)."""

    kinds = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("visible")
        if isinstance(kind, str):
            Layers.kinds[kind] = cls

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

    def _chain_sample(self, n, steps, seed, init, threads, dtype, work):
        """``sample`` of a model with its own ``_sweeps`` (GaussianRBM, SRBM): ``n`` chains
        of ``dtype``, chain r on stream r of ``sample_streams(seed, n)``, from ``init``
        rows (cycled; then steps 1 .. steps) or from step 0's exact draw of the model's
        start; threads by the ``work`` of a sweep of one chain.  Returns the final states."""
        n, steps = int(n), int(steps)
        if n < 0 or steps < 0:
            raise ValueError("n and steps must be non-negative.")
        streams = sample_streams(seed, n)
        if init is None:
            v, k0 = np.zeros((n, self.n_visible), dtype=dtype), 0
        else:
            init = self._visible_data(init, "init")
            v = np.ascontiguousarray(init[np.arange(n) % init.shape[0]], dtype=dtype)
            k0 = 1
        self._sweeps(v, streams, k0, steps + 1, auto_threads(threads, n * work))
        return v


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

    _a_name = "an RBM"                  # the model in a sentence

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
        if probabilities:
            v = np.asarray(v)
            v = check_probabilities(v[None, :] if v.ndim == 1 else v, name="v")
        else:
            v = self._visible_data(v, "v")
        v = self._float_input(v, self.n_visible, "visible", "v")
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

    def pseudo_log_likelihood(self, v, *, threads=None):
        """``sum_i ln p(v_i | v_-i)`` for each row, over all bits (no sampling), float64."""
        v = self._visible_data(v)
        return _anneal.pseudo_log_likelihood(self.W, self.vbias, self.hbias, v,
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
        cyrbm.tempering.TrajectoryChains) ``ladder`` is a list of earlier models of this
        RBM's training (RBMs on the same units, earliest first, e.g. its checkpoints):
        ``n`` chains run at each of them and at this model, ``steps`` rounds of one sweep
        per chain and Metropolis swaps of states between neighbouring models, and the
        samples are the chains' final states at this model.

        Returns
        -------
        v : uint8 array, shape (n, n_visible)
        """
        n = int(n)
        if n < 0 or int(steps) < 0:
            raise ValueError("n and steps must be non-negative.")
        if sampler not in ("gibbs", "pt", "ptt"):
            raise ValueError(f"sampler must be 'gibbs', 'pt' or 'ptt', not {sampler!r}.")
        if sampler != "pt" and temperatures is not None:
            raise ValueError("temperatures are for sampler='pt'.")
        if (sampler == "ptt") != (ladder is not None):
            raise ValueError("sampler='ptt' samples along a ladder of earlier models: give "
                             "ladder=[...] with it (and only with it).")
        K1 = 1
        if sampler == "ptt":
            rungs = [as_rbm(m, "a ladder model") for m in ladder]
            for m in rungs:
                if (m.n_visible, m.n_hidden) != (self.n_visible, self.n_hidden):
                    raise ModelMismatchError(
                        f"a ladder model has {m.n_visible} x {m.n_hidden} units, this RBM "
                        f"{self.n_visible} x {self.n_hidden}: PTT swaps states between models "
                        f"of the same shape.")
            rungs.append(self)
        if sampler == "pt":
            from cyrbm.tempering import parse_temperatures
            temps, adaptive = parse_temperatures(temperatures)
            if adaptive:
                raise ValueError("adaptive temperatures are for training; give a ladder.")
            K1 = temps.size
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
            from cyrbm.tempering import TrajectoryChains
            chains = TrajectoryChains([(m.W, m.vbias, m.hbias) for m in rungs], n, seed=seed,
                                      init=v, dtype=self.dtype, n_threads=T)
            chains.step(int(steps))
            return chains.states(-1)
        if sampler == "pt":
            swap_streams = pt_swap_streams(seed, n)
            accepted = np.zeros((n, max(K1 - 1, 1)), dtype=np.int64)
            _anneal.pt_sample(self.W, self.vbias, self.hbias, v, temps, int(steps), streams,
                              swap_streams, accepted, T)
            return np.ascontiguousarray(v[K1 - 1::K1])
        h = np.empty((n, self.n_hidden), dtype=np.uint8)
        _anneal.gibbs_sample(self.W, self.vbias, self.hbias, v, h, int(steps), streams, T)
        return v

    # ------------------------------------------- AIS protocol (cyrbm.annealing)
    def _ais_log_partition(self, annealer, base_rate, data, **options):
        """:meth:`cyrbm.Annealer.log_partition` of this model (from a base-rate model)."""
        return annealer._rbm_log_partition(self, base_rate, data, **options)

    def _ais_log_ratio(self, annealer, other, data=None, **options):
        """:meth:`cyrbm.Annealer.log_ratio` from this model to the RBM ``other``."""
        return annealer._rbm_log_ratio(self, other, data, **options)

    def _start_units(self):
        """The units an exact ln Z (and an exact draw) enumerates: the smaller layer."""
        return min(self.n_visible, self.n_hidden)

    def _unconnected(self, n, rng):
        """This model with W = 0, its ln Z in closed form (sum_i softplus(b_i) +
        sum_j softplus(c_j): the units are independent) and ``n`` exact draws of its v
        (uniforms from ``rng``): the first rung of a tracked ln Z (cyrbm.tracking)."""
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


# ------------------------------------------------------------------------------ DBN
DBN_FORMAT = "cyrbm.dbn"
#: 2: a bottom layer of Gaussian visible units (meta "visible": "gaussian", array
#: layer0_sigma); 3: a top layer with lateral weights, an SRBM (meta "top": "lateral",
#: array layer{L-1}_L).  A file is written with the lowest version that holds it:
#: binary DBNs as version 1, a Gaussian bottom under an RBM top as version 2
DBN_FORMAT_VERSION = 3
_LAYER_ARRAYS = ("W", "vbias", "hbias")


def as_rbm(model, name="model"):
    """``model`` if it is an RBM, else a TypeError naming ``name``."""
    if not isinstance(model, RBM):
        raise TypeError(f"{name} must be a cyrbm.RBM, not {type(model).__name__}.")
    return model


class DBN:
    """A Deep Belief Network: a stack of RBMs, bottom first (SM08 Sec. 4).

    With layers 0 .. L-1 and h_0 = v, the generative model is directed below the top::

        p(h_l | h_{l+1}) = sigma(W_l h_{l+1} + b_l)          for l < L-1,

    and the top two layers (h_{L-1}, h_L) form the undirected RBM ``layers[-1]``, so::

        p(v, h_1, .., h_L) = p(v | h_1) ... p(h_{L-2} | h_{L-1}) p(h_{L-1}, h_L).

    The factorial recognition model that greedy training leaves (SM08 Eq. 19, Sec. 4.2) is::

        Q(h_{l+1} | h_l) = sigma(W_l^T h_l + c_l),

    with W_l, b_l (vbias), c_l (hbias) the parameters of ``layers[l]``.  One layer is an
    RBM.

    Parameters
    ----------
    layers : list of RBM
        Bottom first; ``layers[l].n_hidden == layers[l + 1].n_visible``.  Stored in one
        dtype: float64 if any layer is float64, else float32 (or ``dtype``).  The bottom
        layer may be a :class:`cyrbm.gaussian.GaussianRBM` (Gaussian visible units, MS09
        Sec. 5.2; see :mod:`cyrbm.gaussian_dbn`): then p(v | h_1) is its Gaussian.
        The top layer of two or more may be a :class:`cyrbm.srbm.SRBM` (lateral weights
        among h_{L-1}, MS09 Sec. 5.2's patch DBN).
    dtype : float32 or float64, optional
    meta : dict, optional
        Free-form record (how the stack was trained), saved with it.
    """

    def __init__(self, layers, *, dtype=None, meta=None):
        if isinstance(layers, RBM):
            layers = [layers]
        try:
            layers = list(layers)
        except TypeError:
            raise TypeError("a DBN is made from a list of RBMs, bottom first.") from None
        if not layers:
            raise ModelMismatchError("a DBN needs at least one layer (an RBM).")
        for l, layer in enumerate(layers):
            # the bottom may have other visible units (GaussianRBM), the top be another
            # model on binary units (with ``lateral`` weights: an SRBM)
            if not isinstance(layer, RBM) and not (
                    isinstance(layer, Layers) and (l == 0 and layer.visible == "gaussian"
                                                   or 0 < l == len(layers) - 1)):
                raise TypeError(f"layer {l} of a DBN must be a cyrbm.RBM"
                                f"{' or GaussianRBM' if l == 0 else ' or SRBM (the top)'}, not "
                                f"{type(layer).__name__}.")
        for l in range(len(layers) - 1):
            if layers[l].n_hidden != layers[l + 1].n_visible:
                raise ModelMismatchError(
                    f"layer {l} has {layers[l].n_hidden} hidden units but layer {l + 1} has "
                    f"{layers[l + 1].n_visible} visible units: the layers of a DBN must chain.")
        if dtype is None:
            dtype = (np.float64 if any(r.dtype == np.float64 for r in layers) else np.float32)
        dtype = _float_dtype(dtype)
        self.layers = [r if r.dtype == dtype else r.astype(dtype) for r in layers]
        self.meta = dict(meta or {})

    @property
    def n_layers(self):
        return len(self.layers)

    @property
    def top(self):
        """The undirected top RBM, ``layers[-1]``."""
        return self.layers[-1]

    @property
    def sizes(self):
        """[n_visible, n_h1, ..., n_hL]."""
        return [self.layers[0].n_visible] + [r.n_hidden for r in self.layers]

    @property
    def n_visible(self):
        return self.layers[0].n_visible

    @property
    def visible(self):
        """The kind of the visible units: "binary", or the bottom layer's ("gaussian")."""
        return getattr(self.layers[0], "visible", "binary")

    @property
    def top_kind(self):
        """The kind of the top layer: "rbm", or "lateral" for an SRBM (lateral weights
        among its visible units, MS09 Sec. 5.2)."""
        top = self.layers[-1]
        return "lateral" if self.n_layers > 1 and getattr(top, "visible", None) == "lateral" \
            else "rbm"

    @property
    def dtype(self):
        return self.layers[0].dtype

    def astype(self, dtype):
        return DBN([r.astype(dtype) for r in self.layers], dtype=dtype, meta=dict(self.meta))

    def __repr__(self):
        return f"DBN(sizes={'-'.join(str(s) for s in self.sizes)}, dtype={self.dtype.name})"

    def recognition_probs(self, v, layer=None):
        """Mean-field pass of the recognition model: Q(h_1 = 1 | v), then
        Q(h_{l+1} = 1 | q_l) with the probabilities of the layer below as input, up to
        h_``layer`` (default: the top, h_L).  One row per v."""
        x = self.layers[0]._visible_data(v, "v")
        layer = self.n_layers if layer is None else int(layer)
        if not 1 <= layer <= self.n_layers:
            raise ValueError(f"layer must be between 1 and {self.n_layers}, not {layer}.")
        for l, r in enumerate(self.layers[:layer]):
            x = r.hidden_probs(x) if l == 0 else r.hidden_probs(x, probabilities=True)
        return x

    # ---------------------------------------------------------------- files
    def to_arrays(self):
        """The arrays of the .npz layout: layer{l}_W, layer{l}_vbias, layer{l}_hbias and
        meta (format "cyrbm.dbn", sizes, each layer's own record under "layers")."""
        out = {}
        records = [dict(r.meta) for r in self.layers]
        top = self.top_kind
        for l, r in enumerate(self.layers):
            plain = isinstance(r, RBM) and getattr(r, "lateral", None) is None
            own = ((l == 0 and self.visible != "binary")
                   or (l == self.n_layers - 1 and top != "rbm"))
            if not (plain or own):
                raise ModelMismatchError(f"layer {l} ({type(r).__name__}, lateral "
                                         f"connections) is not one a DBN file of this "
                                         f"version can hold.")
            out[f"layer{l}_W"] = r.W
            out[f"layer{l}_vbias"] = r.vbias
            out[f"layer{l}_hbias"] = r.hbias
            if own:          # every array of the layer's own model file, its record
                arrays = r.to_arrays()
                out.update({f"layer{l}_{k}": a for k, a in arrays.items() if k != "meta"})
                records[l] = _io.meta_from_array(arrays["meta"], "<model>")
        version = 3 if top != "rbm" else 1 if self.visible == "binary" else 2
        meta = {
            "format": DBN_FORMAT,
            "format_version": version,
            **({} if self.visible == "binary" else {"visible": self.visible}),
            **({} if top == "rbm" else {"top": top}),
            "dtype": self.dtype.name,
            "n_layers": self.n_layers,
            "sizes": [int(s) for s in self.sizes],
            "cyrbm_version": _version(),
            "layers": records,
        }
        meta.update({k: v for k, v in self.meta.items() if k not in meta})
        out["meta"] = _io.meta_to_array(meta)
        return out

    def save(self, path):
        """Write the DBN to ``path`` (.npz) atomically."""
        _io.atomic_savez(path, self.to_arrays())

    @classmethod
    def load(cls, path, *, dtype=None):
        """Read a DBN file (or a plain RBM model file, as a DBN of one layer)."""
        return cls.from_arrays(_io.read_npz(path), path, dtype=dtype)

    @classmethod
    def from_arrays(cls, arrays, path="<arrays>", *, dtype=None):
        what = "DBN file"
        if "layer0_W" not in arrays and "W" in arrays:      # an RBM file: one layer
            return cls([RBM.from_arrays(arrays, path, dtype=dtype)], dtype=dtype)
        meta = {}
        if "meta" in arrays:
            meta = _io.meta_from_array(arrays["meta"], path, what)
            fmt = meta.get("format", DBN_FORMAT)
            if fmt != DBN_FORMAT:
                raise ModelFileError(f"{what} '{path}' holds a '{fmt}', not a DBN ('{DBN_FORMAT}').")
            _check_version(meta, path, what, DBN_FORMAT_VERSION)
        found = sorted({int(k[5:].split("_", 1)[0]) for k in arrays
                        if k.startswith("layer") and "_" in k and k[5:].split("_", 1)[0].isdigit()})
        n_layers = meta.get("n_layers", (found[-1] + 1) if found else 0)
        if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 1:
            if not found:
                raise ModelFileError(f"{what} '{path}' has no layers (no array 'layer0_W'; it "
                                     f"has {', '.join(sorted(arrays)) or 'none'}).")
            raise ModelFileError(f"{what} '{path}' has an invalid layer count {n_layers!r}.")
        extra = [l for l in found if l >= n_layers]
        if extra:
            raise ModelFileError(f"{what} '{path}' says it has {n_layers} layers but holds "
                                 f"arrays of layer {extra[0]}.")
        layer_meta = meta.get("layers", [{}] * n_layers)
        if not isinstance(layer_meta, list) or len(layer_meta) != n_layers:
            layer_meta = [{}] * n_layers
        layers = []
        for l in range(n_layers):
            names = [f"layer{l}_{a}" for a in _LAYER_ARRAYS]
            missing = [n for n in names if n not in arrays]
            if missing:
                raise ModelFileError(
                    f"{what} '{path}' lacks layer {l} of {n_layers} (no array"
                    f"{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in missing)}).")
            if l == 0 and (meta.get("visible", "binary") != "binary" or "layer0_sigma" in arrays):
                layers.append(_own_layer(arrays, path, 0, meta.get("visible", "gaussian"),
                                         layer_meta[0], dtype, what))
                continue
            if l == n_layers - 1 and (meta.get("top", "rbm") != "rbm" or f"layer{l}_L" in arrays):
                if l == 0:
                    raise ModelFileError(f"{what} '{path}' has one layer with lateral "
                                         f"weights; a DBN's top layer above another may "
                                         f"have them (an SRBM file holds one alone).")
                layers.append(_own_layer(arrays, path, l, meta.get("top", "lateral"),
                                         layer_meta[l], dtype, what))
                continue
            sub = {a: arrays[n] for a, n in zip(_LAYER_ARRAYS, names)}
            rbm = RBM.from_arrays(sub, path, dtype=dtype, what=f"{what} (layer {l})")
            if isinstance(layer_meta[l], dict):
                rbm.meta = dict(layer_meta[l])
            layers.append(rbm)
        for l in range(n_layers - 1):
            if layers[l].n_hidden != layers[l + 1].n_visible:
                raise ModelFileError(
                    f"{what} '{path}': layer {l} has {layers[l].n_hidden} hidden units but "
                    f"layer {l + 1} has {layers[l + 1].n_visible} visible units.")
        sizes = [layers[0].n_visible] + [r.n_hidden for r in layers]
        if "sizes" in meta and meta["sizes"] != sizes:
            raise ModelFileError(f"{what} '{path}' is corrupt: its meta says sizes "
                                 f"{meta['sizes']!r} but its arrays have {sizes}.")
        keep = {k: v for k, v in meta.items()
                if k not in ("format", "format_version", "dtype", "n_layers", "sizes",
                             "cyrbm_version", "layers", "visible", "top")}
        return cls(layers, dtype=dtype, meta=keep)


def _own_layer(arrays, path, l, kind, record, dtype, what):
    """Layer ``l`` of a DBN file stored as its own model file's arrays (a bottom layer
    of Gaussian visible units, a top layer with lateral weights): the arrays
    layer{l}_* and the layer's record, read by the model class of ``kind``
    (Layers.kinds: "gaussian", "lateral")."""
    cls = Layers.kinds.get(kind) if isinstance(kind, str) else None
    where = "bottom" if l == 0 else "top"
    if cls is None or cls.visible != kind:
        raise ModelFileError(f"{what} '{path}' has a {where} layer of kind {kind!r}, which "
                             f"this cyrbm cannot read (cyrbm.DBN reads every kind; with "
                             f"cyrbm.models.DBN, import cyrbm.gaussian and cyrbm.srbm first).")
    prefix = f"layer{l}_"
    sub = {k[len(prefix):]: a for k, a in arrays.items() if k.startswith(prefix)}
    if isinstance(record, dict):
        sub["meta"] = _io.meta_to_array(record)
    return cls.from_arrays(sub, path, dtype=dtype, what=f"{what} (layer {l})")
