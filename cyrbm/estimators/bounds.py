"""Test log-probabilities of DBNs (and RBMs) with their errors: :class:`BoundEstimator`.

Salakhutdinov & Murray (2008, "SM08"), Sec. 4.2 and 5.2; Murray & Salakhutdinov (2009,
"MS09"), Sec. 2.2.

A DBN of L layers (:class:`cyrbm.DBN`) defines p(v) = sum_h p(v, h) with the top layer
h_L summed out analytically, so that p(v, h_1, .., h_{L-1}) = p*(v, h) / Z with Z the
partition function of the top RBM.  For the factorial recognition model Q(h | v) that
greedy training leaves, every v has the variational lower bound (SM08 Eq. 19, 22)

    ln p(v) >= sum_h Q(h | v) ln p*(v, h) + H(Q(h | v)) - ln Z = B(v),

whose expectation term is estimated by M samples h^(i) ~ Q(. | v) (Eq. 23), whose entropy
is analytic (Q is factorial; for L > 2, the conditional entropies of each layer given
the sample below), and whose ln Z comes from AIS on the top RBM (or is given).  Averaged
over N_t test vectors this is r-hat_Bound = r-hat_B - ln Z-hat (Eq. 24), with
Var(r-hat_Bound) = Var(r-hat_B) + Var(ln Z-hat): the two errors are reported apart, as in
SM08 Table 2.

Every estimator is a method of :class:`BoundEstimator` and returns a :class:`BoundResult`
(per-vector values, their mean and standard error, the ln Z-hat used and the AIS result
it came from).  ln Z-hat is estimated once per estimator object (:meth:`BoundEstimator._log_Z`)
and shared by every method.  A new method draws its per-vector terms from the compiled
kernels, builds its values and returns ``self._result(...)``.

A DBN whose bottom layer is a :class:`cyrbm.models.gaussian.GaussianRBM` (real v, MS09 Sec. 5.2;
two layers, the top possibly with lateral weights), or a binary one whose top has lateral
weights (a semi-restricted top, cyrbm.SRBM), takes the same methods but ``harmonic``:
the bound's terms from :func:`cyrbm.estimators.gaussian_dbn.variational_terms`, the Chib-style
estimator and per-vector AIS on the scalar driver of :mod:`cyrbm.estimators.chib`.
"""
import math
import time

import numpy as np

from cyrbm import defaults
from cyrbm._omp import resolve_threads
from cyrbm._random import bound_streams, make_streams
from cyrbm._threads import pieces
from cyrbm._validation import check_memory
from cyrbm.errors import CyrbmError
from cyrbm.estimators.gaussian_dbn import lateral_of, variational_terms
from cyrbm.models.dbn import as_dbn

__all__ = ["BoundEstimator", "BoundResult", "BoundError", "ENTROPY_MODES"]

#: How the entropy term of the variational bound is estimated (see ``variational``).
ENTROPY_MODES = ("analytic", "sampled")
#: Rows (vectors x samples) per block of the compiled bound: fixed, so that results do
#: not depend on the number of threads.
BLOCK_ROWS = 512


class BoundError(CyrbmError, ValueError):
    """A bound request that cannot be carried out (bad M, bad ln Z, wrong model)."""


# ---------------------------------------------------------------------------- result
class BoundResult:
    """Per-vector estimates of ln p(v) and their average, with the errors kept apart.

    Attributes
    ----------
    method : str
        "variational", "harmonic" or "rbm" (exact ln p*(v) - ln Z-hat).
    values : float64 array (N,)
        The estimate for each data vector, ln Z-hat included when the method uses it.
    log_Z : float or None
        ln Z-hat of the top RBM that was subtracted (None when the method needs none).
    ais : AISResult or None
        Where ``log_Z`` came from (None when it was given).
    samples : int
        M, samples per vector.
    mc_stderr : float or None
        Standard error of the mean due to the sampling of Q alone (needs M >= 2).
    per_sample : float64 array (N, M) or None
        The M Monte Carlo terms of each vector that ``values`` and ``mc_stderr`` come
        from ("variational": ln p*(v, h^(i)) + H - ln Z for each sample h^(i);
        "chib": ln p-hat(v) of each repeat; "ais": ln w - ln Z-hat of each run).
    seconds, threads, seed : run facts.
    """

    def __init__(self, *, method, values, log_Z=None, ais=None, samples=1, seconds=0.0,
                 threads=1, seed=None, mc_stderr=None, extra=None, per_sample=None):
        self.method = method
        self.values = np.asarray(values, dtype=np.float64)
        self.log_Z = None if log_Z is None else float(log_Z)
        self.ais = ais
        self.samples = int(samples)
        self.seconds = float(seconds)
        self.threads = int(threads)
        self.seed = seed
        self.mc_stderr = None if mc_stderr is None else float(mc_stderr)
        self.per_sample = None if per_sample is None else np.asarray(per_sample, dtype=np.float64)
        self.extra = dict(extra or {})

    @property
    def n_data(self):
        return int(self.values.size)

    @property
    def mean(self):
        """The average over the data vectors: r-hat_Bound of SM08 Eq. 24 for the bound."""
        return float(np.mean(self.values)) if self.values.size else float("nan")

    @property
    def stderr(self):
        """Standard error of ``mean`` from the spread of the per-vector values (the error
        of r-hat_B as SM08 Table 2 reports it, ``3 * stderr`` there); ln Z-hat's error is
        apart (``ais_interval``)."""
        n = self.values.size
        return float(np.std(self.values, ddof=1) / math.sqrt(n)) if n > 1 else float("nan")

    def interval(self, k=3.0):
        """(mean - k stderr, mean + k stderr): the Monte Carlo error, ln Z-hat fixed."""
        return (self.mean - k * self.stderr, self.mean + k * self.stderr)

    @property
    def log_Z_stderr(self):
        """sd(ln Z-hat) ~ sigma-hat / Z-hat (SM08 Eq. 12, delta method); 0 for a given
        ln Z, None when the method uses none."""
        if self.log_Z is None:
            return None
        if self.ais is None:
            return 0.0
        return math.exp(self.ais.log_sigma - self.ais.log_Z) if self.ais.log_Z is not None else 0.0

    def ais_interval(self, k=3.0):
        """ln(Z-hat +- k sigma-hat) - ln Z-hat as SM08 Table 2 reports it, as the shift of
        ``mean``: (-(ln(Z + k s) - ln Z), -(ln(Z - k s) - ln Z)); the upper end is +inf
        when Z - k s <= 0.  (0, 0) for a given ln Z; None when no ln Z is used."""
        if self.log_Z is None:
            return None
        if self.ais is None:
            return (0.0, 0.0)
        lo, hi = self.ais.log_Z_interval(k)
        return (-(hi - self.log_Z), -(lo - self.log_Z))

    @property
    def total_stderr(self):
        """sqrt(Var(r-hat_B) + Var(ln Z-hat)) (SM08 Sec. 5.2)."""
        z = self.log_Z_stderr or 0.0
        return math.sqrt(self.stderr ** 2 + z ** 2)

    def to_dict(self, values=True):
        """A JSON-ready dict; infinite ends become None."""
        from cyrbm.estimators.results import json_number as num, json_pair as pair
        out = {
            "method": self.method,
            "mean": num(self.mean),
            "stderr": num(self.stderr),
            "mc_3std_interval": pair(self.interval(3)),
            "mc_stderr": num(self.mc_stderr),
            "log_Z": num(self.log_Z),
            "log_Z_given": self.log_Z is not None and self.ais is None,
            "log_Z_stderr": num(self.log_Z_stderr),
            "ais_3sigma_shift": pair(self.ais_interval(3)),
            "total_stderr": num(self.total_stderr),
            "samples": self.samples,
            "n_data": self.n_data,
            "seconds": num(self.seconds),
            "threads": self.threads,
            "seed": self.seed,
        }
        if self.ais is not None:
            out["ais"] = {k: v for k, v in self.ais.to_dict().items() if k != "log_weights"}
        out.update(self.extra)
        if values:
            out["values"] = [num(x) for x in self.values]
        return out

    def __repr__(self):
        lo, hi = self.interval(3)
        z = "" if self.log_Z is None else f", log_Z={self.log_Z:.4f}"
        return (f"BoundResult(method={self.method!r}, mean={self.mean:.4f}, "
                f"3-std=({lo:.4f}, {hi:.4f}){z}, n={self.n_data}, samples={self.samples})")


# ------------------------------------------------------------------------- estimator
class BoundEstimator:
    """Estimators of ln p(v) for a DBN (or an RBM) on a data set.

    Parameters
    ----------
    model : DBN, RBM or GaussianRBM
        An RBM (or GaussianRBM) is taken as a DBN of one layer.
    log_Z : float, AISResult or None
        ln Z of the top RBM: a number, an AIS result (its ``log_Z``), or None to estimate
        it with ``annealer`` the first time a method needs it (once: every later method
        call reuses it).
    annealer : Annealer, optional
        Default: ``Annealer(seed=seed, threads=threads)`` (its default runs and schedule).
        Its base-rate model is fitted to the recognition model's mean-field marginals of
        the top RBM's visible layer on the first data given (SM08 Sec. 5).
    seed : int
        Seed of the samples from Q (purpose "bound": one stream per data vector).
    threads : int or None
        OpenMP threads; results do not depend on them.

    Examples
    --------
    >>> est = BoundEstimator(dbn, log_Z=ais_result)                       # doctest: +SKIP
    >>> res = est.variational(X_test, samples=5)                          # doctest: +SKIP
    >>> res.mean, res.interval(3), res.ais_interval(3)                    # doctest: +SKIP
    """

    def __init__(self, model, *, log_Z=None, annealer=None, seed=0, threads=None):
        self.model = model = as_dbn(model)
        if seed is None or isinstance(seed, bool) or int(seed) < 0:
            raise BoundError(f"seed must be a non-negative whole number, not {seed!r}.")
        self.seed = int(seed)
        self.threads = resolve_threads(threads)
        self.annealer = annealer
        self.ais = None
        self.log_Z_value = None
        if log_Z is not None:
            self._set_log_Z(log_Z)

    # ------------------------------------------------------------ ln Z, shared
    def _set_log_Z(self, log_Z):
        from cyrbm.estimators.annealing import AISResult
        from cyrbm.estimators.chib import _log_z
        value = _log_z(log_Z, BoundError)
        self.ais = log_Z if isinstance(log_Z, AISResult) else None
        self.log_Z_value = value

    def _log_Z(self, data=None, client=None):
        """(ln Z-hat of the top RBM, the AISResult or None): given, or estimated once by AIS
        from a base-rate model fitted to ``data`` passed up through Q (on ``client``'s
        cluster when given)."""
        if self.log_Z_value is None:
            from cyrbm.estimators.annealing import Annealer
            ann = self.annealer or Annealer(seed=self.seed, threads=self.threads)
            top = self.model.top
            if lateral_of(top) is not None and getattr(top, "L", None) is None:
                raise BoundError("an RBM given lateral weights is no model AIS knows: give "
                                 "ln Z of the top layer (log_Z=...).")
            base = None
            if self.model.n_layers == 1 and self.model.real_valued:
                base = "data" if data is not None and data.shape[0] > 0 else None
            elif data is not None and data.shape[0] > 0:
                if self.model.n_layers == 1:
                    q = np.asarray(data, dtype=np.float64)
                else:
                    q = np.asarray(self.model.recognition_probs(data, self.model.n_layers - 1),
                                   dtype=np.float64)
                on = q.sum(axis=0)
                base = np.log(on + 1.0) - np.log(q.shape[0] - on + 1.0)   # pseudo-count 1
            self._set_log_Z(ann.log_partition(top, base_rate=base, client=client))
        return self.log_Z_value, self.ais

    # ---------------------------------------------------------------- helpers
    def _data(self, data):
        return self.model.layers[0]._visible_data(data, "data")

    @staticmethod
    def _samples(samples):
        if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)):
            raise BoundError(f"the number of samples M must be a whole number, not {samples!r}.")
        if samples < 1:
            raise BoundError(f"the number of samples M must be at least 1, not {samples}.")
        return int(samples)

    def _scalar_dbn(self, what):
        """(RBM1, top) of a two-layer DBN that the scalar driver holds (a Gaussian bottom
        layer, or a top with lateral weights: cyrbm.estimators.gaussian_dbn), or None for one the
        binary kernels hold; a BoundError for such a DBN of other depth."""
        layers = self.model.layers
        lateral = lateral_of(layers[-1]) is not None
        if not self.model.real_valued and not lateral:
            return None
        if len(layers) != 2:
            held = ("a Gaussian bottom layer" if self.model.real_valued
                    else "a top layer with lateral weights")
            raise BoundError(f"{what} of a DBN with {held} needs two layers, "
                             f"not {len(layers)}.")
        return layers[0], layers[1]

    def _terms(self, layers, v, samples, seed, client=None, chunk=None):
        """The kernel's (lpv, lrest, lq, ent), each (N, M): see cyrbm._dbn; on a Dask
        cluster in tasks of ``chunk`` vectors with ``client`` (the same bits)."""
        N = v.shape[0]
        width = max(max(r.n_visible, r.n_hidden) for r in layers)
        padded = 2 * sum(r.W.size * r.W.itemsize + 64 * r.n_visible for r in layers)
        check_memory(N * samples * 32 + padded
                     + self.threads * BLOCK_ROWS * width * 8 * (len(layers) + 2),
                     f"the bound's terms for {N} vectors x {samples} samples",
                     "use fewer samples or fewer vectors at a time")
        settings = (samples, self.seed if seed is None else seed)
        if client is None:
            return _terms_slice(layers, v, 0, N, settings, threads=self.threads)
        from cyrbm.distributed import default_chunk, map_slices
        parts = map_slices(client, _terms_slice, N, chunk or default_chunk(client, N),
                           shared=(layers, v), args=(settings,), desc="bound", unit="vector")
        return tuple(np.concatenate(x) for x in zip(*parts))

    def _result(self, method, values, t0, samples, *, log_Z=None, ais=None, mc_stderr=None,
                seed=None, extra=None, per_sample=None):
        return BoundResult(method=method, values=values, log_Z=log_Z, ais=ais, samples=samples,
                           seconds=time.perf_counter() - t0, threads=self.threads,
                           seed=self.seed if seed is None else seed, mc_stderr=mc_stderr,
                           extra=extra, per_sample=per_sample)

    # ------------------------------------------------------------- estimators
    def variational(self, data, samples=defaults.VARIATIONAL_SAMPLES, *, entropy="analytic",
                    seed=None, client=None, chunk=None):
        """The variational lower bound B(v) of SM08 Eq. 19-24 for each data vector.

        B(v) = E_Q[ln p*(v, h)] + H(Q(h | v)) - ln Z, with the expectation by M samples
        h^(i) ~ Q(. | v) (Eq. 23) and ln Z of the top RBM from :meth:`_log_Z`.

        Parameters
        ----------
        data : 0/1 array (N, n_visible), or real rows under a Gaussian bottom layer
        samples : int >= 1
            M, samples from Q per vector (SM08 used 5).
        entropy : "analytic" or "sampled"
            "analytic" (SM08 Eq. 22-23): each sample contributes ln p*(v, h^(i)) + H, H
            the entropy of the factorial Q (for L > 2 layers: of Q(h_1 | v) plus those of
            Q(h_{l+1} | h_l^(i)) given the sample).  "sampled": each contributes
            ln p*(v, h^(i)) - ln Q(h^(i) | v), which has the same expectation and no
            variance at all when Q is the true posterior (a DBN whose top RBM is the
            bottom one transposed: every term is then ln p(v) exactly).
        seed : int, optional
            Seed of the draws (default: the estimator's).
        client, chunk : a ``distributed.Client`` to run on a Dask cluster, ``chunk``
            vectors a task (:mod:`cyrbm.distributed`; the same bits); ln Z-hat too, when
            it is estimated here.

        Returns
        -------
        BoundResult
            ``values`` = B-hat(v) per vector, ``mean`` = r-hat_Bound (Eq. 24).
        """
        t0 = time.perf_counter()
        M = self._samples(samples)
        if entropy not in ENTROPY_MODES:
            raise BoundError(f"entropy must be 'analytic' or 'sampled', not {entropy!r}.")
        v = self._data(data)
        log_Z, ais = self._log_Z(v, client)
        if self.model.n_layers == 1:
            per = self.model.top.log_unnormalized(v, threads=self.threads)[:, None]
            mc = None
        elif self._scalar_dbn("the variational bound") is not None:
            analytic, sampled = variational_terms(*self.model.layers, v, M,
                                                  self.seed if seed is None else seed,
                                                  self.threads)
            per = analytic if entropy == "analytic" else sampled
            mc = _within_stderr(per)
        else:
            lpv, lrest, lq, ent = self._terms(self.model.layers, v, M, seed, client, chunk)
            per = lpv + lrest + (ent if entropy == "analytic" else -lq)
            mc = _within_stderr(per)
        values = per.mean(axis=1) - log_Z
        return self._result("variational", values, t0, M, log_Z=log_Z, ais=ais, mc_stderr=mc,
                            seed=seed, extra={"entropy": entropy}, per_sample=per - log_Z)

    def harmonic(self, data, samples=defaults.HARMONIC_SAMPLES, *, seed=None, client=None,
                 chunk=None):
        """The harmonic-mean estimate of ln p(v) (MS09 Eq. 2): a cautionary baseline.

        1 / p(v) = E_{p(h | v)}[1 / p(v | h_1)] is estimated from M states of a Markov chain
        on the true posterior p(h_1, .., h_{L-1} | v) (an independence Metropolis-Hastings
        chain whose proposals are the samples of Q, accepted with probability
        min(1, w' / w), w = p*(v, h) / Q(h | v); no ln Z is needed).  For an RBM the
        posterior is sampled exactly.  As MS09 explain, states in the posterior's tails
        carry large weights that a finite chain rarely visits, so the estimate of
        1 / p(v) is low with high probability: the method *over-estimates* ln p(v), on
        average (Jensen's inequality), and its empirical spread does not show it.
        Use it only to see why not to.  ``client``, ``chunk``: as :meth:`variational`.
        """
        t0 = time.perf_counter()
        M = self._samples(samples)
        if self.model.real_valued or lateral_of(self.model.top) is not None:
            raise BoundError("the harmonic-mean estimator is for binary DBNs with an RBM on "
                             "top; use chib() or ais_per_vector() on a Gaussian bottom layer "
                             "or a top with lateral weights.")
        v = self._data(data)
        layers = self.model.layers
        if len(layers) == 1:
            layers = [layers[0], layers[0].transposed()]    # posterior of h exactly Q
        lpv, lrest, lq, ent = self._terms(layers, v, M, seed, client, chunk)
        lw = lpv + lrest - lq
        rng = np.random.default_rng(np.random.SeedSequence(
            make_streams(self.seed if seed is None else seed, "bound", 1, 1)[0]))
        u = np.log(rng.random(lw.shape))
        N = v.shape[0]
        cur = np.zeros(N, dtype=np.intp)
        rows = np.arange(N)
        chain = np.empty_like(lpv)
        accepted = 0
        chain[:, 0] = lpv[:, 0]
        for m in range(1, M):
            take = u[:, m] < lw[:, m] - lw[rows, cur]
            cur = np.where(take, m, cur)
            accepted += int(take.sum())
            chain[:, m] = lpv[rows, cur]
        from cyrbm.estimators.annealing import logmeanexp
        values = -logmeanexp(-chain, axis=1)
        rate = accepted / (N * (M - 1)) if M > 1 and N > 0 else None
        return self._result("harmonic", values, t0, M, seed=seed,
                            extra={"acceptance_rate": rate})

    def chib(self, data, steps=defaults.CHIB_STEPS, repeats=defaults.CHIB_REPEATS, *, seed=None,
             client=None, chunk=None, checkpoint=None):
        """ln p(v) of each vector of a two-layer DBN by the Chib-style estimator of Murray &
        Salakhutdinov (2009, Figure 1, Eq. 9-15), unbiased in p(v) for every S.

        Runs :func:`cyrbm.estimators.chib.chib_log_prob` with this estimator's ln Z-hat (shared with
        the other methods: estimated once).

        Parameters
        ----------
        data : 0/1 array (N, n_visible), or real rows under a Gaussian bottom layer
        steps : int >= 1
            S, Markov chain steps per repeat (MS09 used 40).
        repeats : int >= 1
            Independent estimates per vector, averaged in p (MS09 averaged 10).
        seed : int, optional
            Seed of the chains (default: the estimator's; purpose "chib").
        client, chunk : as :meth:`variational` (``chunk`` items: vector x repeat).
        checkpoint : path, optional
            Keep a long run's finished items there and resume from it (see
            :func:`cyrbm.estimators.chib.chib_log_prob`).

        Returns
        -------
        BoundResult
            method "chib"; ``values`` ln p-hat(v) - its ln Z-hat included; ``mc_stderr``
            the Monte Carlo error of the mean from the repeats (R >= 2).
        """
        from cyrbm.estimators import chib as _chib_api
        t0 = time.perf_counter()
        _chib_api.dbn_layers(self.model.layers)
        steps = _chib_api._whole(steps, "the number of Markov chain steps S")
        repeats = _chib_api._whole(repeats, "the number of repeats R")
        v = self._data(data)
        log_Z, ais = self._log_Z(v, client)
        est = _chib_api.chib_log_prob(self.model.layers, v, log_Z, steps=steps,
                                      repeats=repeats, seed=self.seed if seed is None else seed,
                                      threads=self.threads, client=client, chunk=chunk,
                                      checkpoint=checkpoint)
        return self._result("chib", est.log_probs, t0, repeats, log_Z=log_Z, ais=ais,
                            mc_stderr=est.mc_stderr, seed=seed,
                            extra={"steps": steps, "repeats": repeats}, per_sample=est.samples)

    def ais_per_vector(self, data, runs=defaults.AIS_PER_VECTOR_RUNS, *, schedule=None, base="q",
                       seed=None, client=None, chunk=None, checkpoint=None):
        """ln p(v) of each vector of a two-layer DBN by AIS over h1 for that vector (MS09
        Sec. 5.1's gold standard): :func:`cyrbm.estimators.chib.ais_per_vector` with this estimator's
        ln Z-hat.

        Parameters
        ----------
        data : 0/1 array (N, n_visible), or real rows under a Gaussian bottom layer
        runs : int >= 1
            AIS runs per vector.
        schedule : the betas ("linear:K", "paper", an array; default cyrbm.estimators.chib's).
        base : "q" (start from Q(h1 | v)) or "uniform".
        seed : int, optional
        client, chunk : as :meth:`variational` (``chunk`` items: vector x run).
        checkpoint : path, optional
            As :meth:`chib`.

        Returns
        -------
        BoundResult (method "ais"; ``mc_stderr`` from the spread of the runs)
        """
        from cyrbm.estimators import chib as _chib_api
        t0 = time.perf_counter()
        _chib_api.dbn_layers(self.model.layers, "per-vector AIS")
        runs = _chib_api._whole(runs, "the number of AIS runs per vector")
        v = self._data(data)
        log_Z, ais = self._log_Z(v, client)
        kwargs = {} if schedule is None else {"schedule": schedule}
        est = _chib_api.ais_per_vector(self.model.layers, v, log_Z, runs=runs, base=base,
                                       seed=self.seed if seed is None else seed,
                                       threads=self.threads, client=client, chunk=chunk,
                                       checkpoint=checkpoint, **kwargs)
        return self._result("ais", est.log_probs, t0, runs, log_Z=log_Z, ais=ais,
                            mc_stderr=est.mc_stderr, seed=seed,
                            extra={"runs": runs, "betas": est.betas, "base": base},
                            per_sample=est.samples)

    def log_prob_lower_bound(self, data):
        """ln p*(v) - ln Z-hat for a one-layer model (an RBM), exact but for ln Z-hat.

        The values use ln Z-hat itself; ``ais_interval(3)`` gives how far they move over
        ln(Z-hat +- 3 sigma-hat), and ``mean + ais_interval(3)[0]`` (ln Z at its upper
        3-sigma end) is the conservative lower end that SM08 Table 1 reads off.
        """
        t0 = time.perf_counter()
        if self.model.n_layers != 1:
            raise BoundError(f"log_prob_lower_bound is for one RBM, not a DBN of "
                             f"{self.model.n_layers} layers; use variational().")
        v = self._data(data)
        log_Z, ais = self._log_Z(v)
        values = self.model.top.log_unnormalized(v, threads=self.threads) - log_Z
        return self._result("rbm", values, t0, 1, log_Z=log_Z, ais=ais)


def _terms_slice(layers, v, j0, j1, settings, *, threads):
    """The bound's terms of vectors j0 .. j1, each from its own stream (seed, "bound"),
    in pieces of about 0.1 s (Ctrl-C answered between them): the same numbers in any
    slices."""
    from cyrbm import _dbn
    samples, seed = settings
    streams = bound_streams(seed, j1)
    terms = [np.empty((j1 - j0, samples)) for _ in range(4)]
    first = max(1, BLOCK_ROWS // samples) * threads
    for i0, i1 in pieces(j0, j1, first):
        part = _dbn.bound_terms([r.W for r in layers], [r.vbias for r in layers],
                                [r.hbias for r in layers], v[i0:i1], samples,
                                streams[i0:i1], threads, BLOCK_ROWS)
        for whole, piece in zip(terms, part):
            whole[i0 - j0:i1 - j0] = piece
    return tuple(terms)


def _within_stderr(per):
    """Standard error of the mean over vectors due to the M samples within each vector
    (None for M = 1): sqrt(sum_n var_n / M) / N."""
    N, M = per.shape
    if M < 2 or N == 0:
        return None
    return float(math.sqrt(np.sum(np.var(per, axis=1, ddof=1) / M)) / N)
