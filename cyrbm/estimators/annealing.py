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
import time

import numpy as np

from cyrbm import _anneal, _engine, _exact, defaults
from cyrbm._omp import resolve_threads
from cyrbm._progress import progress_bar
from cyrbm._random import ais_streams, make_streams
from cyrbm._threads import pieces
from cyrbm.distributed import check_client, default_chunk, map_slices
from cyrbm._validation import check_binary, check_memory, check_run_memory
from cyrbm.errors import AnnealingError, DataError, ModelMismatchError
from cyrbm.models.exact import (EXACT_MAX_UNITS, EXACT_START_UNITS, check_enumerable,  # noqa: F401
                         estimate_exact_seconds, exact_log_partition)
from cyrbm.estimators.ratio import chain_settings, check_start, ratio_rows
from cyrbm.estimators.results import AISResult, ais_result, logmeanexp
from cyrbm.estimators.schedules import ScheduleError, make_schedule, schedule_count

__all__ = ["Annealer", "AISResult", "AnnealingError", "ScheduleError", "exact_log_partition",
           "estimate_exact_seconds", "make_schedule", "base_rate_biases", "logmeanexp",
           "schedule_count", "ais_streams", "EXACT_MAX_UNITS", "EXACT_START_UNITS"]

_LN2 = math.log(2.0)


# ----------------------------------------------------------------------------- helpers
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
    v = check_binary(data, name="base-rate data", allow_1d=True)
    if n_visible is not None and v.shape[1] != n_visible:
        raise ModelMismatchError(f"base-rate data has {v.shape[1]} columns but the model has "
                                 f"{n_visible} visible units.")
    return _base_rate_of_rows(v, pseudocount)


def _base_rate_of_rows(v, pseudocount):
    """base_rate_biases of 0/1 rows already checked (check_binary): no second scan."""
    if not (isinstance(pseudocount, (int, float)) and math.isfinite(pseudocount) and pseudocount > 0):
        raise AnnealingError(f"the base-rate pseudocount must be a positive number, not {pseudocount!r}.")
    if v.shape[0] == 0:
        raise DataError("base-rate data has no rows.")
    on = v.sum(axis=0, dtype=np.float64)
    n = float(v.shape[0])
    return np.log(on + pseudocount) - np.log(n - on + pseudocount)


def _protocol(model, method, name):
    """The AIS method ``method`` of ``model`` (each model class has its own: RBM,
    GaussianRBM, SRBM); a ModelMismatchError of one sentence for anything else."""
    found = getattr(model, method, None)
    if found is None:
        raise ModelMismatchError(f"{name} must be an RBM, a Gaussian RBM or an SRBM, not "
                                 f"{type(model).__name__}.")
    return found


def _kind(model):
    """The model in a sentence: 'an RBM', 'a Gaussian RBM', 'an SRBM'."""
    return getattr(model, "noun", f"a {type(model).__name__}")


def _check_runs(runs):
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)):
        raise AnnealingError(f"runs must be a whole number, not {runs!r}.")
    if runs < 2:
        raise AnnealingError(f"AIS needs at least 2 runs to estimate its error, not {runs}.")
    check_memory(512 * int(runs), f"{int(runs)} AIS runs", "use fewer runs")
    return int(runs)


# --------------------------------------------------------------------------- annealer


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

    def __init__(self, runs=defaults.AIS_RUNS, schedule=defaults.SCHEDULE, *, seed=defaults.SEED, threads=None, progress=None,
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
    def replace(self, *, runs=None, schedule=None):
        """An annealer with the same seed, threads and settings, but ``runs`` and
        ``schedule`` when given (as ``dataclasses.replace``)."""
        return Annealer(runs=self.runs if runs is None else runs,
                        schedule=self.betas if schedule is None else schedule,
                        seed=self.seed, threads=self.threads, progress=self.progress,
                        refresh=self.refresh, chunk=self.chunk)

    def log_partition(self, model, base_rate=None, data=None, *, base_data=None,
                      pseudocount=1.0, client=None, chunk=None, _key=0):
        """Estimate ln Z of ``model`` by AIS from a base-rate model (SM08 Eq. 13-18).

        The base-rate model has W = 0, visible biases b_A and (like the model) M hidden
        units with zero biases, so ln Z_A = M ln 2 + sum_i softplus(b_A,i) (Eq. 18) and its
        visible units are independent: runs start from exact independent samples.  The
        intermediate distributions are::

            p_k(v) ~ exp((1 - beta_k) b_A.v) sum_h exp(-beta_k E(v, h; model)),

        and each step is one block-Gibbs sweep at beta_k (Eq. 15-17 with A the base).

        Parameters
        ----------
        model : RBM or GaussianRBM
            A :class:`cyrbm.models.gaussian.GaussianRBM` is annealed from independent Gaussians
            (:func:`cyrbm.models.gaussian.gaussian_log_partition`): ``base_rate`` "data" (the
            default when data are given) fits their means and standard deviations,
            None takes the model's (b, sigma), or give a pair (means, sds).  An
            :class:`cyrbm.models.srbm.SRBM` is annealed from the same base rate as an RBM, its
            lateral weights scaled by beta too (:func:`cyrbm.models.srbm.srbm_log_partition`).
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
        client : distributed.Client, optional
            Run the runs on a Dask cluster (:mod:`cyrbm.distributed`), ``chunk`` runs a
            task (default: two tasks a worker thread): the same bits as without.

        Returns
        -------
        AISResult
        """
        check_client(client)
        return _protocol(model, "_ais_log_partition", "model")(
            self, base_rate, data, base_data=base_data, pseudocount=pseudocount,
            client=client, chunk=chunk, key=_key)

    def _rbm_log_partition(self, model, base_rate, data, *, base_data=None,
                           pseudocount=1.0, client=None, chunk=None, key=0):
        """:meth:`log_partition` of a binary RBM (``RBM._ais_log_partition`` calls it)."""
        _key = key
        D, M = model.n_visible, model.n_hidden
        check_run_memory(self.runs, D, M)
        # the data are checked once: the base rate and ln p*(v) take the checked rows
        v_data = None if data is None else model._visible_data(data, "data")
        bA = self._base_biases(base_rate, base_data if base_data is not None else v_data, D,
                               pseudocount, checked=base_data is None)
        bA_stored = bA.astype(model.dtype).astype(np.float64)      # the biases the runs use
        log_Z_base = _anneal.base_rate_log_z(bA_stored, M)          # Eq. 18
        t0 = time.perf_counter()
        # _key: another purpose's independent streams
        if client is None:
            log_w, samples = ais_runs(self, bA_stored, model, np.arange(self.runs), key=_key,
                                      progress=self.progress, desc="AIS ln Z")
        else:
            parts = map_slices(client, _partition_task, self.runs,
                               chunk or default_chunk(client, self.runs),
                               shared=(self, model, bA_stored), args=(_key,),
                               progress=self.progress, desc="AIS ln Z")
            log_w, samples = (np.concatenate(x) for x in zip(*parts))
        seconds = time.perf_counter() - t0
        mean_lp, n_data = None, 0
        if v_data is not None and v_data.shape[0] > 0:
            mean_lp = float(np.mean(model._log_unnormalized_rows(v_data, self.threads)))
            n_data = v_data.shape[0]
        return ais_result(self, "partition", log_w, log_Z_base, seconds=seconds,
                          dtype=model.dtype, samples=samples, mean_log_unnormalized=mean_lp,
                          n_data=n_data,
                          extra={"base_rate": "data" if isinstance(base_rate, str) else
                                 ("zero" if base_rate is None else "given")})

    def log_ratio(self, model_a, model_b, data=None, *, start=defaults.RATIO_START, burn_in=None,
                  chains=None, steps_between=None, init=None, log_Z_a=None, client=None,
                  chunk=None):
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

        Two Gaussian RBMs, or two SRBMs, run the same path with their own kernels
        (:func:`cyrbm.estimators.ratio.own_log_ratio`: v given both hidden layers is Gaussian with
        the mixed precision, or lateral units one at a time with the mixed field); their
        exact starts enumerate the layer their exact ln Z sums (a Gaussian RBM's hidden
        layer, an SRBM's visible layer).  Models of two unit types are refused.

        Parameters
        ----------
        model_a, model_b : RBM, GaussianRBM or SRBM (both of one class)
        data : array_like, optional
            Rows (0/1, or real for Gaussian RBMs): the result then reports
            mean(ln p*_B(v) - ln p*_A(v)).
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
        client, chunk : as :meth:`log_partition`; with Gibbs starts a task takes
            ``chunk`` chains and the runs that start from them.

        Returns
        -------
        AISResult
        """
        check_client(client)
        run = _protocol(model_a, "_ais_log_ratio", "model_a")
        _protocol(model_b, "_ais_log_ratio", "model_b")
        if type(model_a) is not type(model_b):
            raise ModelMismatchError(
                f"ratio AIS joins two models of one unit type, but model A is {_kind(model_a)} "
                f"and model B {_kind(model_b)}.")
        if model_a.n_visible != model_b.n_visible:
            raise ModelMismatchError(f"the two models have {model_a.n_visible} and "
                                     f"{model_b.n_visible} visible units; a ratio needs the "
                                     f"same visible layer.")
        return run(self, model_b, data, start=start, burn_in=burn_in, chains=chains,
                   steps_between=steps_between, init=init, log_Z_a=log_Z_a, client=client,
                   chunk=chunk)

    def _rbm_log_ratio(self, A, B, data=None, *, start=defaults.RATIO_START, burn_in=None,
                       chains=None, steps_between=None, init=None, log_Z_a=None,
                       client=None, chunk=None):
        """:meth:`log_ratio` of two binary RBMs (``RBM._ais_log_ratio`` calls it)."""
        D = A.n_visible
        check_run_memory(self.runs, D, A.n_hidden + B.n_hidden)
        check_start(start)
        m_a = min(A.n_visible, A.n_hidden)
        if start == "exact":
            check_enumerable(A, self.threads, EXACT_MAX_UNITS, "exact starting states",
                              "start_gibbs")
        exact = start == "exact" or (start == "auto" and m_a <= EXACT_START_UNITS)
        burn_in, chains, steps_between = chain_settings(
            self.runs, exact, burn_in, chains, steps_between,
            "" if start == "exact" else f" (start auto: model A's smaller layer has {m_a} units)")
        v_data, init = ratio_rows(A, data, init)
        dtype = np.float64 if np.float64 in (A.dtype, B.dtype) else np.float32
        t0 = time.perf_counter()
        if exact:
            starts, log_Z_exact = self._exact_starts(A)
            if log_Z_a is None:
                log_Z_a = log_Z_exact
            chain_info = {"start": "exact", "burn_in": None, "chains": None,
                          "steps_between": None}
            plan, n = {"starts": starts}, self.runs
        else:
            if init is not None:
                v0 = init[np.arange(chains) % init.shape[0]]
            else:
                v0 = (self._generator(2).random((chains, D)) < 0.5).astype(np.uint8)
            if log_Z_a is None and m_a <= EXACT_START_UNITS:
                log_Z_a = exact_log_partition(A, threads=self.threads)
            chain_info = {"start": "gibbs", "burn_in": burn_in, "chains": chains,
                          "steps_between": steps_between}
            plan, n = dict(chain_info, v0=v0), chains
        if client is None:
            parts = [_ratio_task(self, A, B, dtype, plan, 0, n, threads=self.threads,
                                 progress=self.progress)]
        else:
            parts = map_slices(client, _ratio_task, n, chunk or default_chunk(client, n),
                               shared=(self, A, B, dtype, plan), progress=self.progress,
                               desc="AIS ln(ZB/ZA)", unit="chain" if not exact else "run")
        runs = np.concatenate([p[0] for p in parts])
        log_w, samples = np.empty(self.runs), np.empty((self.runs, D), dtype=np.uint8)
        log_w[runs] = np.concatenate([p[1] for p in parts])
        samples[runs] = np.concatenate([p[2] for p in parts])
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
        log_weights = log_w + (B.n_hidden - A.n_hidden) * _LN2
        return ais_result(self, "ratio", log_weights, log_Z_a, seconds=seconds, dtype=dtype,
                          samples=samples, mean_log_unnormalized=mean_lp, n_data=n_data,
                          extra=dict(chain_info, n_hidden_a=A.n_hidden,
                                     n_hidden_b=B.n_hidden))

    def evaluate(self, model, data, *, base_rate="data", base_data=None,
                 chains=defaults.RAISE_CHAINS,
                 simulate=None, pseudocount=1.0, base_model=None, base_log_Z=None,
                 start="auto", burn_in=None, client=None, chunk=None):
        """The AIS/RAISE sandwich: the mean test log-probability of ``data`` under
        ``model`` from forward AIS (optimistic) and from reverse annealing, RAISE
        (conservative; Burda, Grosse & Salakhutdinov 2015), side by side.

        Both use this annealer's schedule, base-rate model (fitted as in
        :meth:`log_partition`) and block-Gibbs transitions (SM08 Eq. 13-18).  Forward
        AIS runs ``runs`` runs; RAISE runs ``chains`` reverse chains from every test
        vector (see :mod:`cyrbm.estimators.evaluation`).  With ``simulate=N`` the bidirectional check
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

        With ``client`` (and ``chunk`` runs a task, as :meth:`log_partition`) forward AIS
        and RAISE run on a Dask cluster, with the same bits.

        Returns
        -------
        cyrbm.estimators.evaluation.EvaluationResult
            ``ais_mean_log_prob``, ``raise_mean_log_prob`` (each with ``ais_se`` /
            ``raise_se``), ``gap``, ``disagreement`` (a sentence or None), ``to_dict()``.
        """
        from cyrbm.estimators.evaluation import evaluate
        return evaluate(self, model, data, base_rate=base_rate, base_data=base_data,
                        chains=chains, simulate=simulate, pseudocount=pseudocount,
                        base_model=base_model, base_log_Z=base_log_Z, start=start,
                        burn_in=burn_in, client=client, chunk=chunk)

    # ------------------------------------------------------------------ internals
    def _streams(self, key, n=None):
        return ais_streams(self.seed, self.runs if n is None else n, key)

    def _generator(self, key):
        """A NumPy generator of (seed, "ais", key), for the few draws made outside the
        kernels (key 2: random chain starts, 3: exact starting states)."""
        return np.random.default_rng(np.random.SeedSequence(
            make_streams(self.seed, "ais", 1, key)[0]))

    def _base_biases(self, base_rate, data, D, pseudocount, checked=False):
        """b_A of log_partition; ``checked``: ``data`` are rows already checked."""
        if base_rate is None:
            return np.zeros(D)
        if isinstance(base_rate, str):
            if base_rate != "data":
                raise AnnealingError(f"base_rate must be None, 'data' or an array of {D} biases, "
                                     f"not {base_rate!r}.")
            if data is None:
                raise AnnealingError("base_rate='data' needs data (or base_data) to fit the base rate to.")
            if checked:
                return _base_rate_of_rows(data, pseudocount)
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
        (cyrbm._exact.exact_sample_smaller_layer); when that is the hidden layer, the
        visible units are then drawn given it with p(v | h) from RBM.visible_probs."""
        rng = self._generator(3)
        states, log_z, hidden = _exact.exact_sample_smaller_layer(
            A.W, A.vbias, A.hbias, rng.random(self.runs), n_threads=self.threads)
        if not hidden:
            return states, log_z
        p_on = A.visible_probs(states)
        return (rng.random(p_on.shape) < p_on).astype(np.uint8), log_z


# ------------------------------------------------------------- runs, in any slices
def ais_runs(annealer, base, model, runs, *, key=0, starts=None, dtype=None, threads=None,
             progress=False, desc="AIS"):
    """Forward AIS runs ``runs`` (their indices) of ``annealer``'s schedule from ``base``
    (a base rate's visible biases, SM08 Eq. 13-18, or an RBM A, Sec. 3.2) to ``model``.

    Run r draws from stream r of (seed, "ais", key) and starts from exact draws of the
    base rate, or from ``starts`` (one row a run): its numbers do not depend on the other
    runs given, so any slices of the runs give the whole's bits.  Returns (the log
    weights, the end states).
    """
    runs = np.asarray(runs, dtype=np.intp)
    params = (base.vbias, base.W, base.hbias) if hasattr(base, "W") else (base, None, None)
    streams = ais_streams(annealer.seed, int(runs.max()) + 1 if runs.size else 0, key)[runs]
    engine = _engine.GibbsEngine(*params, model.W, model.vbias, model.hbias, streams,
                                 dtype=model.dtype if dtype is None else dtype,
                                 n_threads=annealer.threads if threads is None else threads,
                                 refresh_every=annealer.refresh)
    if starts is not None:
        engine.set_visible(starts)
    # AIS on the engine's one driver (GibbsEngine.anneal): step 0, when there are no given
    # starts, is the exact draw from the base rate; pieces for the progress bar and Ctrl-C
    betas = annealer.betas
    K = betas.size - 1
    bar = progress_bar(progress, K, 0, desc, unit="beta")
    try:
        for k, k1 in pieces(0 if starts is None else 1, K + 1, most=annealer.chunk):
            engine.anneal(betas, k, k1)
            if bar is not None:
                bar.update(k1 - max(k, 1))
    finally:
        if bar is not None:
            bar.close()
    return engine.log_weights, engine.visible()


def chain_starts(annealer, A, dtype, chain_ids, v0, per_chain, burn_in, steps_between, *,
                 threads=None, progress=False):
    """Starting states of ratio runs: block-Gibbs chains ``chain_ids`` on model A, from
    ``v0`` (one row a chain; see :meth:`Annealer.log_ratio`).

    Chain c draws from stream c of (seed, "ais", 1) and gives its m-th state after
    ``burn_in + m * steps_between`` sweeps, taken in pieces of ``chunk`` sweeps (for the
    progress bar) without changing a number.  Returns (per_chain, len(chain_ids), D).
    """
    D = A.n_visible
    chain_ids = np.asarray(chain_ids, dtype=np.intp)
    streams = ais_streams(annealer.seed, int(chain_ids.max()) + 1, 1)[chain_ids]
    chain = _engine.GibbsEngine(A.vbias, A.W, A.hbias, np.zeros((D, 0)), np.zeros(D),
                                np.zeros(0), streams, dtype=dtype,
                                n_threads=annealer.threads if threads is None else threads,
                                refresh_every=annealer.refresh)
    chain.set_visible(v0)
    marks = [burn_in + m * steps_between for m in range(per_chain)]
    taken = []
    bar = progress_bar(progress, marks[-1], 0, "Gibbs on model A", unit="sweep")
    try:
        done = 0
        for mark in marks:
            for s0, s1 in pieces(done, mark, most=annealer.chunk):
                chain.sweep(s1 - s0, force_refresh=s0 == 0, start=s0)
                if bar is not None:
                    bar.update(s1 - s0)
            done = mark
            taken.append(chain.visible())
    finally:
        if bar is not None:
            bar.close()
    return np.stack(taken)


def _partition_task(annealer, model, base, r0, r1, key, *, threads):
    """Runs r0 .. r1 of :meth:`Annealer.log_partition` (a task of cyrbm.distributed)."""
    return ais_runs(annealer, base, model, np.arange(r0, r1), key=key, threads=threads)


def _ratio_task(annealer, A, B, dtype, plan, c0, c1, *, threads, progress=False):
    """The runs of :meth:`Annealer.log_ratio` that start from exact draws c0 .. c1
    (``plan["starts"]``), or from Gibbs chains c0 .. c1 (run r takes state r // chains of
    chain r % chains).  Returns (the runs' indices, their log weights, end states)."""
    if "starts" in plan:
        runs = np.arange(c0, c1)
        starts = plan["starts"][c0:c1]
    else:
        C = plan["chains"]
        r = np.arange(annealer.runs)
        runs = r[(r % C >= c0) & (r % C < c1)]
        taken = chain_starts(annealer, A, dtype, np.arange(c0, c1), plan["v0"][c0:c1],
                             -(-annealer.runs // C), plan["burn_in"], plan["steps_between"],
                             threads=threads, progress=progress)
        starts = taken[runs // C, runs % C - c0]
    log_w, ends = ais_runs(annealer, A, B, runs, starts=starts, dtype=dtype, threads=threads,
                           progress=progress, desc="AIS ln(ZB/ZA)")
    return runs, log_w, ends
