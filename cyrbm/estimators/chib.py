"""Test log-probabilities of a two-layer DBN by summing over its first hidden layer.

Murray & Salakhutdinov (2009), *Evaluating probabilities under high-dimensional latent
variable models* (MS09).  A DBN of two layers, RBM1 on (v, h1) and the top RBM on
(h1, h2), has (MS09 Eq. 16)

    P(v, h1) = P(v | h1) P*(h1) / Z,    P(v | h1) = prod_i sigma(W1 h1 + b1)_i^v_i (...),

where P*(h1) is the top RBM's unnormalized marginal of its visible layer (h2 summed out)
and Z its partition function.  P(v) = sum_h1 P*(v, h1) / Z needs a sum over 2^H1 states;
given ln Z (exact, or shared from one AIS run of the ``Annealer``):

* :func:`chib_log_prob`: the Chib-style estimator of MS09 Sec. 3 (Figure 1, Eq. 9-15),
  unbiased in P(v) for any number of Markov chain steps S, so ln P(v) is underestimated
  on average (Jensen), never overstated;
* :func:`ais_per_vector`: annealed importance sampling over h1 for each test vector
  (MS09's gold standard, Sec. 5.1), from Q(h1 | v) to P(h1 | v) with the same transition;
* :func:`chib_trace`: the estimate against S (MS09 Figure 2).

Both run compiled single-site Gibbs updates of h1 with the top layer summed out
analytically (cyrbm/_kernels/chib.c): the inputs to the visible layer and to the top
layer are kept and moved by one weight row per flip, O(n_visible + n_top) per site, in
parallel over test vectors with one random stream each, so results are identical for
any number of threads.

A DBN is any object with a ``layers`` attribute (a list of ``RBM``, bottom first) or a
plain list of two ``RBM``; RBM1's hidden biases are used only by Q(h1 | v) =
sigma(W1^T v + c1), the factorial approximation of SM08 that gives the starting states.
RBM1 may be a :class:`cyrbm.models.gaussian.GaussianRBM` (real v, MS09 Sec. 5.2), and the top
layer may have lateral weights (a semi-restricted top, ``lateral`` or cyrbm.SRBM's ``L``)
above either bottom: the same estimators then run on ``cyrbm._chib_scalar.ScalarChibModel``
(see :mod:`cyrbm.estimators.gaussian_dbn`).
"""
import math
import os
import time
import zlib

import numpy as np

from cyrbm import defaults
from cyrbm._chib import ITEMS_IN_FLIGHT
from cyrbm._random import chib_streams, per_vector_ais_streams
from cyrbm._threads import auto_threads, pieces
from cyrbm._validation import check_binary
from cyrbm.errors import CyrbmError, ModelMismatchError

__all__ = ["chib_log_prob", "chib_trace", "ais_per_vector", "LogProbEstimate",
           "ChibTrace", "EstimatorError", "dbn_layers"]

#: items (test vector x repeat) per call into the kernel, per thread: Ctrl-C is answered
#: between calls, and the grouping changes no number
_ITEMS_PER_CALL = 16
#: default steps of per-vector AIS (uniform betas)
AIS_SCHEDULE = f"linear:{defaults.AIS_PER_VECTOR_BETAS}"
#: the S of chib_trace (MS09 Figure 2)
TRACE_STEPS = (1, 2, 5, 10, 20, 40)


class EstimatorError(CyrbmError, ValueError):
    """A request the DBN estimators cannot carry out (S < 1, R < 1, a one-layer model)."""


# ------------------------------------------------------------------------- checks
def dbn_layers(dbn, what="the Chib-style estimator"):
    """The two RBMs of a DBN given as an object with ``.layers`` or as a list of RBMs,
    checked: exactly two layers whose sizes chain (RBM1's hidden = the top's visible).
    RBM1 may be a GaussianRBM, and the top may have lateral weights (checked)."""
    from cyrbm.models.dbn import dbn_layer_list
    from cyrbm.estimators.gaussian_dbn import lateral_of
    layers = dbn_layer_list(dbn, what)
    if len(layers) != 2:
        raise EstimatorError(f"{what} needs a DBN of two layers (an RBM under a top RBM); "
                             f"this model has {len(layers)}.")
    low, top = layers
    if low.n_hidden != top.n_visible:
        raise ModelMismatchError(f"the DBN's layers do not chain: layer 1 has {low.n_hidden} "
                                 f"hidden units but layer 2 has {top.n_visible} visible units.")
    lateral_of(top)                           # checked: square, finite, symmetric
    return low, top


def _whole(value, name, least=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise EstimatorError(f"{name} must be a whole number, not {value!r}.")
    if value < least:
        raise EstimatorError(f"{name} must be at least {least}, not {value}.")
    return int(value)


def _log_z(log_Z, error=EstimatorError):
    """ln Z of the top RBM: a finite number or an AISResult (its log_Z), else ``error``
    (the one check of cyrbm.estimators.chib and cyrbm.estimators.bounds)."""
    value = getattr(log_Z, "log_Z", log_Z)
    if value is None and value is not log_Z:
        raise error("the AIS result given as ln Z has no ln Z (a ratio without ln Z_A).")
    if isinstance(value, bool):
        raise error(f"ln Z must be a number or an AISResult, not {log_Z!r}.")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise error(f"ln Z must be a number or an AISResult, not {log_Z!r}.") from None
    if not math.isfinite(value):
        raise error(f"ln Z must be finite, not {value}.")
    return value


def _data(data, low):
    if low.real_valued:
        return low._visible_data(data, "data")
    v = check_binary(data, name="data", allow_1d=True)
    if v.shape[1] != low.n_visible:
        raise ModelMismatchError(f"data has {v.shape[1]} columns but the DBN has "
                                 f"{low.n_visible} visible units.")
    return v


def _kernel_dtype(low, top):
    """The kernels' float type for the DBN: float32 when both layers are (and every
    |weight| <= 80, so that e^w is a finite float32), else float64."""
    from cyrbm import _chib
    f32 = low.dtype == np.float32 and top.dtype == np.float32
    wmax = max(float(np.max(np.abs(low.W))), float(np.max(np.abs(top.W))))
    if wmax > _chib.MAX_WEIGHT_F64:
        raise EstimatorError(f"the DBN has a weight of magnitude {wmax:.4g}; the estimators "
                             f"take weights up to {_chib.MAX_WEIGHT_F64:g}.")
    return np.dtype(np.float32 if f32 and wmax <= _chib.MAX_WEIGHT_F32 else np.float64)


class _KernelDBN:
    """The DBN's two layers and their kernel tables (:class:`cyrbm._chib.ChibModel`, the
    e^w tables: 11 MB for a 784-500-2000 DBN in float32), built on first use and shared
    by every task of a process: on a Dask worker the tasks of one call receive the same
    scattered object, so its threads read one copy of the tables, as a local run's
    threads do (two copies would double what the sweeps stream through the cache).
    Pickles as the layers alone."""

    def __init__(self, low, top):
        import threading
        from cyrbm.estimators.gaussian_dbn import lateral_of
        self.low, self.top = low, top
        # a Gaussian bottom or a top with lateral weights: the scalar driver, float64
        # throughout; else the weights' size is checked once
        self.scalar = low.real_valued or lateral_of(top) is not None
        self.dtype = np.dtype(np.float64) if self.scalar else _kernel_dtype(low, top)
        self._model = None
        self._lock = threading.Lock()

    def model(self):
        with self._lock:
            if self._model is None:
                from cyrbm import _chib
                low, top = self.low, self.top
                if self.scalar:
                    from cyrbm.estimators.gaussian_dbn import kernel_model
                    self._model = kernel_model(low, top)
                else:
                    self._model = _chib.ChibModel(low.W, low.vbias, low.hbias, top.W,
                                                  top.vbias, top.hbias, dtype=self.dtype)
            return self._model

    def __getstate__(self):
        return {"low": self.low, "top": self.top}

    def __setstate__(self, state):
        self.__init__(state["low"], state["top"])


def _threads(threads, low, top, items, sweeps):
    work = items * sweeps * low.n_hidden * (low.n_visible + top.n_hidden)
    return auto_threads(threads, work)


def _item_slice(dbn, v, j0, j1, settings, *, threads):
    """Items j0 .. j1 (test vector j // R, repeat or run j % R) of the Chib-style
    estimator (``settings[0] == "chib"``: ln P*(v, h*) and ln T-hat, MS09 Eq. 11-15)
    or of per-vector AIS ("ais": ln w), each from its own stream, in calls of about
    0.1 s (Ctrl-C answered between them); the grouping changes no number."""
    method, R, seed, x, refresh, flag = settings
    model = dbn.model()
    vec = (np.arange(j0, j1) // R).astype(np.int32)
    if method == "chib":
        streams = chib_streams(seed, j1, x)
        out = (np.empty(j1 - j0), np.empty(j1 - j0))
    else:
        streams = per_vector_ais_streams(seed, j1)
        out = (np.empty(j1 - j0),)
    # the kernels run ITEMS_IN_FLIGHT items side by side on a thread: pieces of whole
    # groups for every thread
    for i0, i1 in pieces(j0, j1, threads, most=_ITEMS_PER_CALL * threads,
                         step=ITEMS_IN_FLIGHT * threads):
        st = np.ascontiguousarray(streams[i0:i1])
        if method == "chib":
            part = model.estimate(v, vec[i0 - j0:i1 - j0], x, st, threads, refresh, flag)
        else:
            part = (model.ais(v, vec[i0 - j0:i1 - j0], x, st, threads, refresh, flag),)
        for whole, piece in zip(out, part):
            whole[i0 - j0:i1 - j0] = piece
    return out


def _checkpoint(path, client):
    """The estimator's checkpoint path (os.fspath), refused beside a cluster client."""
    if path is None:
        return None
    if client is not None:
        raise EstimatorError("a checkpoint is kept by a run on this machine: give either "
                             "client or checkpoint, not both.")
    from cyrbm import _io
    path = os.fspath(path)
    _io.check_outputs([("checkpoint", path, "npz")])
    return path


def _items(client, chunk, dbn, v, items, settings, threads, checkpoint=None):
    """_item_slice over all the items: here, or on a Dask cluster in tasks of ``chunk``
    items (cyrbm.distributed; the same bits).  Returns the slices' results in order, and
    the seconds spent on them before this call (a resumed ``checkpoint``, else 0)."""
    if checkpoint is not None:
        return _resumable_items(checkpoint, chunk, dbn, v, items, settings, threads)
    if client is None:
        return [_item_slice(dbn, v, 0, items, settings, threads=threads)], 0.0
    from cyrbm.distributed import default_chunk, map_slices
    return map_slices(client, _item_slice, items, chunk or default_chunk(client, items),
                      shared=(dbn, v), args=(settings,), desc=settings[0],
                      unit="item"), 0.0


def _run_key(dbn, v, items, settings):
    """A checksum of what the items' numbers depend on: both layers' parameters, the
    test vectors, the settings (method, runs or repeats, seed, S or the betas, refresh,
    the variant flag) and cyrbm's version (the kernels are keyed apart: build_key)."""
    from cyrbm.models.rbm import _version
    crc = zlib.crc32(repr((_version(), items, settings[:3], settings[4:])).encode())
    arrays = [np.asarray(settings[3]), v]
    for layer in (dbn.low, dbn.top):
        arrays += [getattr(layer, name) for name in ("W", "vbias", "hbias", "sigma", "L")
                   if getattr(layer, name, None) is not None]
    for a in arrays:
        a = np.ascontiguousarray(a)
        crc = zlib.crc32(f"{a.dtype.str}{a.shape}".encode(), crc)
        crc = zlib.crc32(a.view(np.uint8).reshape(-1), crc)
    return f"{crc:08x}"


def _resumable_items(path, chunk, dbn, v, items, settings, threads):
    """_item_slice in slices of ``chunk`` items (default: a fiftieth of the whole), the
    finished ones written to the .npz ``path`` (atomically) after each slice; a call
    that finds the file resumes after its last slice, once the file is seen to be of the
    same model, data and settings.  The grouping changes no number."""
    from cyrbm import _io
    from cyrbm._version import build_key
    n_out = 2 if settings[0] == "chib" else 1
    key, build = _run_key(dbn, v, items, settings), build_key()
    out = [np.empty(items) for _ in range(n_out)]
    done, before = 0, 0.0
    if os.path.exists(path):
        saved = _io.read_npz(path, "estimator checkpoint")
        names = [f"out{k}" for k in range(n_out)]
        if any(k not in saved for k in ["key", "done", "seconds"] + names):
            raise EstimatorError(f"'{path}' is not a checkpoint of this estimator (it lacks "
                                 f"the items done).")
        if "build" not in saved or str(saved["build"]) != build:
            raise EstimatorError(
                f"checkpoint '{path}' was written by another build of cyrbm's kernels "
                f"({str(saved['build']) if 'build' in saved else 'an older one'}, not this "
                f"build's {build}), whose numbers may differ: give a new path, or remove it.")
        if str(saved["key"]) != key:
            raise EstimatorError(f"checkpoint '{path}' was written for another model, other "
                                 f"data or other settings: give a new path, or remove it.")
        try:
            done, before = int(saved["done"]), float(saved["seconds"])
        except (TypeError, ValueError):
            done = -1
        if not 0 <= done <= items or any(saved[name].shape != (done,) for name in names):
            raise EstimatorError(f"checkpoint '{path}' is damaged (its count of finished "
                                 f"items does not fit its arrays): remove it to start over.")
        for k in range(n_out):
            out[k][:done] = saved[names[k]]
    if chunk is None:
        chunk = max(1, -(-items // 50))
    elif isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise EstimatorError(f"chunk must be a whole number of at least 1, not {chunk!r}.")
    earlier, spent = before, before
    while done < items:
        t0 = time.perf_counter()
        j1 = min(items, done + chunk)
        part = _item_slice(dbn, v, done, j1, settings, threads=threads)
        for whole, piece in zip(out, part):
            whole[done:j1] = piece
        done, spent = j1, spent + time.perf_counter() - t0
        _io.atomic_savez(path, {"key": np.array(key), "build": np.array(build),
                                "done": np.array(done),
                                "seconds": np.array(spent),
                                **{f"out{k}": out[k][:done] for k in range(n_out)}})
    # the caller adds this call's own time
    return [tuple(out)], earlier


# ------------------------------------------------------------------------- result
class LogProbEstimate:
    """Estimated ln P(v) of each test vector of a DBN, and their mean.

    Attributes
    ----------
    method : "chib" or "ais"
    log_probs : float64 array (n,)
        ln P-hat(v) per vector: for ``chib`` the repeats averaged in P (MS09 Eq. 15), for
        ``ais`` ln mean(w) - ln Z over the runs.
    samples : float64 array (n, R)
        Per repeat (chib: ln P-hat of each repeat) or per run (ais: ln w - ln Z).
    log_Z : float
        ln Z of the top RBM that every value used.
    mean, stderr : float
        Mean of ``log_probs`` and its standard error over the vectors (test-set spread
        and Monte Carlo noise together).
    mc_stderr : float or None
        Monte Carlo error of ``mean`` alone, from the spread of the repeats (runs) of
        each vector (delta method, needs R >= 2): the error to compare two estimators
        on the same vectors with.
    steps, repeats, runs, betas, seed, seconds, threads, dtype : settings.
    """

    def __init__(self, *, method, samples, log_Z, seed, seconds, threads, dtype, steps=None,
                 betas=None, log_probs=None):
        self.method = method
        self.samples = np.asarray(samples, dtype=np.float64)
        n, R = self.samples.shape
        self.log_Z = float(log_Z)
        if log_probs is None:
            from cyrbm.estimators.annealing import logmeanexp
            log_probs = logmeanexp(self.samples, axis=1).reshape(n)
        self.log_probs = np.asarray(log_probs, dtype=np.float64)
        self.steps = steps
        self.repeats = R if method == "chib" else None
        self.runs = R if method == "ais" else None
        self.betas = betas
        self.seed = seed
        self.seconds = float(seconds)
        self.threads = int(threads)
        self.dtype = dtype
        self.n_data = n
        self.mean = float(np.mean(self.log_probs))
        self.stderr = (float(np.std(self.log_probs, ddof=1) / math.sqrt(n)) if n > 1
                       else float("nan"))
        self.mc_stderrs = None
        self.mc_stderr = None
        if R > 1:
            shift = np.max(self.samples, axis=1, keepdims=True)
            w = np.exp(self.samples - shift)
            self.mc_stderrs = np.std(w, axis=1, ddof=1) / math.sqrt(R) / np.mean(w, axis=1)
            self.mc_stderr = float(math.sqrt(float(np.sum(self.mc_stderrs ** 2))) / n)

    def mean_interval(self, k=1.0):
        """(mean - k stderr, mean + k stderr)."""
        return (self.mean - k * self.stderr, self.mean + k * self.stderr)

    def to_dict(self):
        """A JSON-ready record (numbers in nats)."""
        def num(x):
            return None if x is None or not math.isfinite(x) else float(x)
        return {
            "method": self.method, "mean": num(self.mean), "stderr": num(self.stderr),
            "mc_stderr": num(self.mc_stderr), "log_Z": self.log_Z, "n_data": self.n_data,
            "steps": self.steps, "repeats": self.repeats, "runs": self.runs,
            "betas": self.betas, "seed": self.seed, "seconds": self.seconds,
            "threads": self.threads, "dtype": self.dtype,
            "log_probs": [num(x) for x in self.log_probs],
        }

    def __repr__(self):
        return (f"LogProbEstimate(method={self.method!r}, mean={self.mean:.4f}, "
                f"stderr={self.stderr:.4f}, n_data={self.n_data})")


# ------------------------------------------------------------------------- estimators
def chib_log_prob(dbn, data, log_Z, *, steps=defaults.CHIB_STEPS,
                  repeats=defaults.CHIB_REPEATS, seed=defaults.SEED, threads=None,
                  refresh=10, client=None, chunk=None, checkpoint=None,
                  _tilde_backward=True):
    """ln P(v) of each row of ``data`` by the Chib-style estimator of Murray &
    Salakhutdinov (2009, Sec. 3, Figure 1).

    For each test vector and repeat: h* is drawn from Q(h1 | v) and climbed to a local
    mode of ln P*(v, h1), one unit at a time; s is uniform on 1..S; h(s) ~ T-tilde(. <-
    h*), then the chain runs forward to S with T (a sweep of single-site Gibbs updates of
    h1 in ascending order, h2 summed out) and backward to 1 with T-tilde (the same
    updates in descending order); T(h* <- h(s')) is evaluated exactly as a product of
    single-site conditionals (Eq. 11).  Then

        P-hat(v) = P*(v, h*) / Z / [(1/S) sum_s' T(h* <- h(s'))],

    unbiased in P(v) for every S (Eq. 13-15); ln P-hat underestimates ln P(v) on average.
    Repeats are independent (a fresh h* each) and averaged in P.

    Parameters
    ----------
    dbn : DBN or list of two RBMs
    data : 0/1 array (n, n_visible), or real rows under a Gaussian bottom layer
    log_Z : float or AISResult
        ln Z of the top RBM (shared with the variational bound, estimated once).
    steps : int
        S, Markov chain steps per repeat (MS09 used 40).
    repeats : int
        Independent runs per vector, averaged in P (MS09 averaged 10).
    seed, threads : every random number flows from ``seed`` (one stream per vector and
        repeat); the result does not depend on ``threads``.
    refresh : int
        Sweeps between exact recomputations of the kept inputs.
    client, chunk : a ``distributed.Client`` to run on a Dask cluster, ``chunk`` items
        (vector x repeat) a task (:mod:`cyrbm.distributed`): the same bits.
    checkpoint : path or None
        An .npz file for a long run (here, not with ``client``): the items go in slices
        of ``chunk`` (default: a fiftieth of them), the finished ones written to it
        atomically after each slice.  Called again with the same DBN, data and
        settings, the estimator resumes after the last slice saved, to the same bits
        (``seconds`` then counts every call's time); a file of another run is refused.

    Returns
    -------
    LogProbEstimate
    """
    low, top = dbn_layers(dbn)
    steps = _whole(steps, "the number of Markov chain steps S")
    repeats = _whole(repeats, "the number of repeats R")
    refresh = _whole(refresh, "refresh")
    lz = _log_z(log_Z)
    v = _data(data, low)
    dbn = _KernelDBN(low, top)
    n = v.shape[0]
    items = n * repeats
    nt = _threads(threads, low, top, items, 2 * steps)
    t0 = time.perf_counter()
    settings = ("chib", repeats, seed, steps, refresh, _tilde_backward)
    parts, before = _items(client, chunk, dbn, v, items, settings, nt,
                           _checkpoint(checkpoint, client))
    lp, ph = (np.concatenate(x) for x in zip(*parts))
    from cyrbm import _chib
    log_probs = _chib.combine(lp, ph, repeats, lz)
    return LogProbEstimate(method="chib", samples=(lp - ph - lz).reshape(n, repeats),
                           log_probs=log_probs, log_Z=lz, seed=seed, steps=steps,
                           seconds=before + time.perf_counter() - t0, threads=nt,
                           dtype=dbn.dtype.name)


def ais_per_vector(dbn, data, log_Z, *, schedule=AIS_SCHEDULE, runs=defaults.AIS_PER_VECTOR_RUNS,
                   base="q", seed=defaults.SEED, threads=None, refresh=10, client=None,
                   chunk=None, checkpoint=None):
    """ln P(v) of each row of ``data`` by annealed importance sampling over h1, one
    annealing per test vector (MS09 Sec. 5.1, their gold standard).

    Each run starts from h1 ~ Q(h1 | v) (exact: Q is factorial and normalized; with
    ``base="uniform"`` from the uniform distribution over h1 instead) and moves
    through p_k(h1) ~ Q(h1 | v)^(1 - beta_k) P*(v, h1)^beta_k by one sweep of the same
    single-site Gibbs updates as :func:`chib_log_prob` (at beta = 1 they are T), with log
    weight sum_k (beta_k - beta_{k-1}) [ln P*(v, h1) - ln Q(h1 | v)] (Neal 2001; SM08
    Eq. 13-16 with h1 in place of v).  mean(w) estimates Z P(v) without bias, so
    ln P-hat(v) = ln mean(w) - ln Z.

    Parameters
    ----------
    schedule : "linear:K", an array of betas, or anything
        :func:`cyrbm.estimators.annealing.make_schedule` takes (0 = beta_0 < ... < beta_K = 1).
    runs : int
        Annealing runs per vector (at least 2, for the error bar).
    base : "q" or "uniform"
        The tractable start: SM08's factorial Q(h1 | v) (close to the posterior when
        it is unimodal), or the uniform distribution (no preference for Q's mode, which
        helps when the posterior has a mode Q does not point to).
    client, chunk, checkpoint : as :func:`chib_log_prob` (``chunk`` items: vector x run).

    Returns
    -------
    LogProbEstimate (``samples`` holds each run's ln w - ln Z)
    """
    from cyrbm.estimators.annealing import make_schedule
    low, top = dbn_layers(dbn, "per-vector AIS")
    runs = _whole(runs, "the number of AIS runs", least=2)
    refresh = _whole(refresh, "refresh")
    if base not in ("q", "uniform"):
        raise EstimatorError(f"the AIS base must be 'q' or 'uniform', not {base!r}.")
    lz = _log_z(log_Z)
    betas = np.ascontiguousarray(make_schedule(schedule), dtype=np.float64)
    v = _data(data, low)
    dbn = _KernelDBN(low, top)
    n = v.shape[0]
    items = n * runs
    nt = _threads(threads, low, top, items, betas.size)
    t0 = time.perf_counter()
    settings = ("ais", runs, seed, betas, refresh, base == "q")
    parts, before = _items(client, chunk, dbn, v, items, settings, nt,
                           _checkpoint(checkpoint, client))
    lw = np.concatenate([p[0] for p in parts])
    return LogProbEstimate(method="ais", samples=(lw - lz).reshape(n, runs), log_Z=lz,
                           seed=seed, betas=int(betas.size),
                           seconds=before + time.perf_counter() - t0, threads=nt,
                           dtype=dbn.dtype.name)


# ------------------------------------------------------------------------- trace
class ChibTrace:
    """The estimator against the number of Markov chain steps S (MS09 Figure 2):
    ``results[k]`` is the :class:`LogProbEstimate` at ``steps[k]``, each an independent
    run on the same vectors (``chib_log_prob`` with that S)."""

    def __init__(self, steps, results, references=None):
        self.steps = list(steps)
        self.results = list(results)
        self.references = dict(references or {})

    @property
    def means(self):
        return np.array([r.mean for r in self.results])

    def table(self):
        """The trace as a text table: S, mean ln P-hat, its standard error, its Monte
        Carlo error, seconds; then any reference lines (name: value)."""
        lines = [f"{'S':>5}  {'mean ln P-hat':>14}  {'stderr':>8}  {'MC err':>8}  {'seconds':>8}"]
        for s, r in zip(self.steps, self.results):
            mc = f"{r.mc_stderr:8.4f}" if r.mc_stderr is not None else f"{'-':>8}"
            lines.append(f"{s:>5}  {r.mean:14.4f}  {r.stderr:8.4f}  {mc}  {r.seconds:8.2f}")
        for name, value in self.references.items():
            lines.append(f"{name}: {value:.4f}")
        return "\n".join(lines)

    def to_dict(self):
        return {"steps": self.steps,
                "results": [r.to_dict() for r in self.results],
                "references": {k: float(v) for k, v in self.references.items()}}

    def plot(self, path, title=None):
        """Draw the trace (with the reference lines) to ``path`` (needs matplotlib, the
        'plot' extra); the file is written atomically."""
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise EstimatorError("drawing the trace needs matplotlib; install cyrbm[plot].") from None
        from cyrbm import _io
        fig, ax = plt.subplots(figsize=(5, 3.6))
        # error bars: the Monte Carlo error of each mean (the vectors are the same for
        # every S and reference, so their spread is no part of the comparison)
        mc = [r.mc_stderr if r.mc_stderr is not None else 0.0 for r in self.results]
        ax.errorbar(self.steps, self.means, yerr=mc, marker="o", capsize=3,
                    label="Chib-style estimator (MS09), +-MC error")
        styles = iter(["--", ":", "-."])
        for name, value in self.references.items():
            ax.axhline(value, linestyle=next(styles, "--"), color="k", lw=1, label=name)
        ax.set_xlabel("Markov chain steps S")
        ax.set_ylabel("mean test ln P(v) (nats)")
        if title:
            ax.set_title(title)
        ax.legend(fontsize=8)
        fig.tight_layout()
        try:
            _io.atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=110), ".png.tmp")
        finally:
            plt.close(fig)


def chib_trace(dbn, data, log_Z, *, steps=TRACE_STEPS, repeats=defaults.CHIB_REPEATS,
               seed=defaults.SEED, threads=None, references=None, client=None):
    """:func:`chib_log_prob` at each S of ``steps`` (MS09 Figure 2), each an independent
    run (on ``client``'s Dask cluster when given); ``references`` (name: value, e.g. the
    variational bound and per-vector AIS) are carried to the table and figure."""
    steps = [_whole(s, "the number of Markov chain steps S") for s in np.atleast_1d(steps)]
    if not steps:
        raise EstimatorError("the trace needs at least one number of steps S.")
    results = [chib_log_prob(dbn, data, log_Z, steps=s, repeats=repeats, seed=seed,
                             threads=threads, client=client) for s in steps]
    return ChibTrace(steps, results, references)
