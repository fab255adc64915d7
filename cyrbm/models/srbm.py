"""The semi-restricted Boltzmann machine (SRBM): binary visible units with symmetric
lateral connections, binary hidden units (Osindero & Hinton 2008; the top layer of
Murray & Salakhutdinov 2009's image-patch DBN, Sec. 5.2).

Energy, with lateral weights L (D x D, symmetric, zero diagonal)::

    E(v, h) = -b.v - c.h - v^T W h - v^T L v / 2,

so h_j | v ~ Bernoulli(sigma(c_j + (W^T v)_j)) all at once, while the visible units
given h form a fully-visible Boltzmann machine: v_i given h and the other units is
Bernoulli(sigma(b_i + (W h)_i + (L v)_i)), sampled one unit at a time.  Summing h out,

    ln p*(v) = b.v + v^T L v / 2 + sum_j softplus(c_j + (W^T v)_j),

and ln Z is exact by enumerating the 2^D visible states (:meth:`SRBM.log_partition`).
Sampling, AIS and the sequential-Gibbs negative phase run in compiled code
(``cyrbm._srbm.srbm_run``, the kernel ``cyrbm_srbm_steps``), one stream per chain.

Training (Osindero & Hinton 2008, Sec. 3; MS09 Sec. 5.2: "Contrastive Divergence
together with mean-field"): CD-k whose reconstruction of the visible layer, given h
drawn from p(h | v), is the damped mean-field iteration
m <- lambda m + (1 - lambda) sigma(b + W h + L m), started at the chain's v, run
:data:`MEAN_FIELD_STEPS` (10) times with damping lambda = :data:`DAMPING` (0.2); or,
as an option, sequential Gibbs sweeps.

File format (``.npz``): as the RBM's (``W``, ``vbias``, ``hbias``, ``meta``) with the
array ``L`` (n_visible x n_visible) and meta ``format`` "cyrbm.srbm", ``visible``
"lateral".  A file of W, vbias, hbias and L alone loads too.
"""
import math
import time

import numpy as np

from cyrbm import _anneal, _cd, _io, _ratio, _srbm, _tempering, defaults
from cyrbm._progress import schedule_pieces
from cyrbm._random import srbm_ais_streams
from cyrbm._validation import check_memory, check_visible_rows
from cyrbm.distributed import default_chunk, map_slices
from cyrbm.errors import ModelFileError, ModelMismatchError
from cyrbm.models.rbm import Layers, RBM, binary_states, expit, logsumexp, read_parameters
from cyrbm.estimators.ratio import exact_draws, own_log_ratio, state_bits
from cyrbm.estimators.results import ais_result

__all__ = ["SRBM", "srbm_cd_update", "srbm_log_partition", "srbm_raise_log_weights",
           "check_lateral_settings",
           "DAMPING", "MEAN_FIELD_STEPS", "RECONSTRUCTIONS"]

FORMAT = "cyrbm.srbm"             # format version 1 (cyrbm.models.rbm.FORMAT_VERSION)
#: lambda of the damped mean-field reconstruction (Osindero & Hinton 2008)
DAMPING = 0.2
#: mean-field iterations of one reconstruction
MEAN_FIELD_STEPS = 10
#: the negative phase's reconstructions of the visible layer: "mean-field" (CD only) or
#: "gibbs" (sequential Gibbs sweeps, CD or PCD)
RECONSTRUCTIONS = ("mean-field", "gibbs")
#: the largest visible layer whose 2^D states log_partition enumerates by default
EXACT_MAX_VISIBLE = 20
_LN2 = math.log(2.0)


def _lateral(L, D, where, error=ModelMismatchError):
    """L as a float64 array after the checks of an SRBM's lateral weights: shape (D, D),
    finite, symmetric (to 1e-6 of its largest entry, then made exactly so), zero
    diagonal; one sentence of ``error`` otherwise."""
    L = np.asarray(L)
    if L.ndim != 2 or L.shape != (D, D):
        raise error(f"{where}: L has shape {L.shape} but the model has {D} visible units, "
                    f"so it must be {D} x {D}.")
    if not (np.issubdtype(L.dtype, np.floating) or np.issubdtype(L.dtype, np.integer)):
        raise error(f"{where}: L is not numeric ({L.dtype}).")
    L = L.astype(np.float64)
    if not np.all(np.isfinite(L)):
        raise error(f"{where}: L contains NaN or infinite values.")
    if np.any(np.diag(L) != 0):
        i = int(np.flatnonzero(np.diag(L))[0])
        raise error(f"{where}: L must have a zero diagonal (a unit is not connected to "
                    f"itself), but L[{i}, {i}] is {L[i, i]:g}.")
    gap = np.abs(L - L.T)
    if gap.max() > 1e-6 * max(1.0, float(np.abs(L).max())):
        i, j = np.unravel_index(int(np.argmax(gap)), gap.shape)
        raise error(f"{where}: L must be symmetric, but L[{i}, {j}] is {L[i, j]:g} and "
                    f"L[{j}, {i}] is {L[j, i]:g}.")
    return 0.5 * (L + L.T)


class SRBM(Layers):
    """A semi-restricted Boltzmann machine: binary visible units with symmetric lateral
    weights ``L`` (zero diagonal), binary hidden units.

    Parameters
    ----------
    W : array, shape (n_visible, n_hidden)
    vbias : array, shape (n_visible,)
        b.
    hbias : array, shape (n_hidden,)
        c.
    L : array, shape (n_visible, n_visible), optional
        Symmetric lateral weights with a zero diagonal (default zeros: an RBM).
    dtype : float32 or float64, optional
    meta : dict, optional
    """

    visible = "lateral"
    noun = "an SRBM"
    title = "SRBM (lateral visible connections)"
    _exact_layer = property(lambda self: ("visible", self.n_visible))
    trainer_settings = {"lateral": True}

    def _cd_step(self, batch, chains, chain_inputs, state, settings, trainer, scratch):
        """CD-k / PCD-k with the trainer's reconstruction (:func:`srbm_cd_update`: damped
        mean-field or sequential Gibbs), the lateral weights learnt too."""
        velocity = (state["vel_W"], state["vel_vbias"], state["vel_hbias"])
        return srbm_cd_update(self, velocity, state["vel_L"], batch, chains, state["streams"],
                              settings, trainer.reconstruction, trainer.damping,
                              trainer.mean_field_steps)
    exact_max_units = EXACT_MAX_VISIBLE

    def __init__(self, W, vbias, hbias, L=None, *, dtype=None, meta=None,
                 _error=ModelMismatchError, _where="the given parameters"):
        dtype = self._own(W, vbias, hbias, dtype, meta, _where, _error)
        D = self.n_visible
        L = np.zeros((D, D)) if L is None else _lateral(L, D, _where, _error)
        self.L = np.array(L, dtype=dtype, order="C", copy=True)

    @classmethod
    def random(cls, n_visible, n_hidden, *, seed=0, dtype=np.float32, scale=0.01, data=None):
        """A fresh model: the RBM's initial draw (:meth:`cyrbm.RBM.random`) and L = 0."""
        init = RBM.random(n_visible, n_hidden, seed=seed, dtype=np.float64, scale=scale,
                          data=data)
        return cls(init.W, init.vbias, init.hbias, dtype=dtype)

    def copy(self):
        return self.astype(self.dtype)

    def astype(self, dtype):
        """The same model stored in ``dtype`` (float32 or float64)."""
        return SRBM(self.W, self.vbias, self.hbias, self.L, dtype=dtype, meta=dict(self.meta))

    def __repr__(self):
        return (f"SRBM(n_visible={self.n_visible}, n_hidden={self.n_hidden}, "
                f"dtype={self.dtype.name})")

    # ------------------------------------------------------------ conditionals
    def _visible_data(self, v, name="data"):
        return check_visible_rows(v, self.n_visible, name)

    def _f64(self):
        return tuple(a.astype(np.float64, copy=False)
                     for a in (self.W, self.vbias, self.hbias, self.L))

    def _hidden_inputs(self, v):
        """c + W^T v of rows (0/1 or mean-field values), float64."""
        return np.asarray(v, np.float64) @ self.W.astype(np.float64, copy=False) + self.hbias

    def hidden_probs(self, v, *, probabilities=False):
        """p(h_j = 1 | v) = sigma(c_j + sum_i W_ij v_i), one row per v: 0/1 rows, or with
        ``probabilities`` rows in [0, 1] (a mean-field pass, as :meth:`cyrbm.RBM.hidden_probs`)."""
        return expit(self._hidden_inputs(self._input_rows(v, probabilities)))

    def visible_field(self, v, h):
        """b + W h + L v: row n's entry i is the log-odds of p(v_i = 1 | h, the other units), the
        conditional of the sequential Gibbs update (L's zero diagonal leaves v_i out).
        ``v`` rows of 0/1 states or mean-field values, ``h`` rows of 0/1 states or
        probabilities; float64."""
        W, b, _, L = self._f64()
        v, h = (np.atleast_2d(np.asarray(a, dtype=np.float64)) for a in (v, h))
        if v.shape[1] != self.n_visible or h.shape[1] != self.n_hidden:
            raise ModelMismatchError(f"v must have {self.n_visible} columns and h "
                                     f"{self.n_hidden} (the model's visible and hidden units).")
        return b + h @ W.T + v @ L

    def mean_field(self, h, m, *, damping=DAMPING, steps=MEAN_FIELD_STEPS):
        """The damped mean-field estimate of E[v | h] (Osindero & Hinton 2008):
        ``steps`` times m <- damping m + (1 - damping) sigma(b + W h + L m), from ``m``
        (rows: the data, or any start in [0, 1]); float64."""
        m = np.atleast_2d(np.asarray(m, dtype=np.float64))
        top = self.visible_field(np.zeros_like(m), h)         # b + W h, fixed
        L = self.L.astype(np.float64, copy=False)
        for _ in range(int(steps)):
            m = damping * m + (1.0 - damping) * expit(top + m @ L)
        return m

    def reconstruction_error(self, v):
        """Mean over rows of sum_i (v_i - m_i)^2, m the mean-field reconstruction from
        p(h | v) (:meth:`mean_field` from v)."""
        v = self._visible_data(v).astype(np.float64)
        m = self.mean_field(expit(self._hidden_inputs(v)), v)
        return float(np.mean(np.sum((v - m) ** 2, axis=1)))

    # ------------------------------------------------------- probabilities
    def log_unnormalized(self, v, *, threads=None):
        """ln p*(v) = b.v + v^T L v / 2 + sum_j softplus(c_j + (W^T v)_j), float64."""
        return self._log_unnormalized_rows(self._visible_data(v))

    def _log_unnormalized_rows(self, v, threads=None):
        _, b, _, L = self._f64()
        v = np.asarray(v, dtype=np.float64)
        return (v @ b + 0.5 * np.sum((v @ L) * v, axis=1)
                + np.sum(np.logaddexp(0.0, self._hidden_inputs(v)), axis=1))

    def free_energy(self, v, *, threads=None):
        """F(v) = -ln p*(v)."""
        return -self.log_unnormalized(v, threads=threads)

    def log_partition(self, *, threads=None, max_units=None):
        """ln Z exactly (SM08 Eq. 3 with the lateral term): the sum of p*(v) over the
        2^n_visible visible states, h summed out in closed form (:meth:`log_unnormalized`),
        float64, in blocks of 2^12 states, a stable log-sum-exp (NumPy: ``threads`` is
        not used).  Refuses (AnnealingError) more than ``max_units`` visible units
        (default :data:`exact_max_units`, 20)."""
        self._enumerable(self.n_visible, "visible", max_units)
        terms = [logsumexp(self._log_unnormalized_rows(v)) for v in binary_states(self.n_visible)]
        return float(logsumexp(np.array(terms)))

    def pseudo_log_likelihood(self, v, *, threads=None):
        """``sum_i ln p(v_i | v_-i)`` for each 0/1 row, exactly, float64 (NumPy).

        Flipping unit i (with ``s_i = 1 - 2 v_i``) changes ln p*(v) by::

            d_i = s_i (b_i + (L v)_i) + sum_j [softplus(x_j + s_i W_ij) - softplus(x_j)],

        ``x = c + W^T v`` (L's zero diagonal leaves v_i out of its row's product), and
        ``ln p(v_i | v_-i) = -softplus(d_i)``, as for the RBM.
        """
        v = self._visible_data(v)
        W, b, _, L = self._f64()
        out = np.empty(v.shape[0])
        for r, row in enumerate(np.asarray(v, dtype=np.float64)):
            x = self._hidden_inputs(row[None, :])[0]
            s = 1.0 - 2.0 * row
            d = s * (b + L @ row) + np.sum(np.logaddexp(0.0, x + s[:, None] * W)
                                           - np.logaddexp(0.0, x), axis=1)
            out[r] = -np.sum(np.logaddexp(0.0, d))
        return out

    def sample(self, n, steps=defaults.SAMPLE_STEPS, *, seed=None, init=None, threads=None,
               sampler="gibbs", temperatures=None, ladder=None):
        """Draw ``n`` visible vectors by Gibbs sampling, parallel tempering or parallel
        trajectory tempering.

        Gibbs: h | v at once, then v | h one unit at a time.  Each chain starts from
        ``init`` (0/1 rows, cycled) or from independent units of log-odds b, runs
        ``steps`` sweeps from its own stream, and returns its final state.

        ``sampler="pt"`` (Cho, Raiko & Ilin 2010, Table I, swaps by Eq. 5): each sample
        comes from a ladder of chains at ``temperatures`` 0 <= beta_0 < ... < beta_K = 1
        (default 0, 0.05, ..., 1; or a count N), the tempered family

            ln p*_beta(v) = b.v + beta v^T L v / 2 + sum_j softplus(beta (c_j + (W^T v)_j)),

        beta scaling W, L and c and keeping b (beta = 1: the model; beta = 0:
        independent units of log-odds b; the family AIS anneals along,
        :func:`srbm_log_partition`): ``steps`` rounds of one sequential-Gibbs sweep per
        chain at its beta, then swaps of neighbouring states from the top down
        (tempering.TemperedStates); the sample is the beta = 1 chain's final state.
        ``sampler="ptt"`` (Béreux et al. 2025): ``ladder`` is a list of earlier SRBMs
        of this model's training (earliest first), swaps of states between neighbouring
        models (tempering.TrajectoryChains).  The result depends on ``seed`` only, not
        on the number of threads.  Returns an (n, n_visible) uint8 array."""
        return self._chain_sample(n, steps, seed, init, threads,
                                  self.n_visible * (self.n_hidden + self.n_visible), sampler,
                                  temperatures, ladder)

    def _sweeps(self, v, streams, k0, k1, n_threads, beta=1.0):
        """Steps k0 .. k1 - 1 at ``beta`` (the tempered family of :meth:`sample`; 1 the
        model) of the chains ``v`` (INOUT, 0/1 uint8), chain r on streams[r] (INOUT);
        step 0 draws independent units of log-odds b.  ``_srbm.srbm_run`` between
        the base of log-odds b and the model at the constant beta: h_j ~
        Bernoulli(sigma(beta x_j)), v_i ~ Bernoulli(sigma((1 - beta) b_i + beta (b_i +
        (W h)_i + (L v)_i))) (common_t.h), the family's conditionals.  Returns the
        hidden states of the last step."""
        R = v.shape[0]
        h = np.zeros((R, self.n_hidden), dtype=np.uint8)
        y = np.zeros((R, self.n_visible))
        _srbm.srbm_run(self.W, self.vbias, self.hbias, self.L,
                       self.vbias.astype(np.float64), v, h, y,
                       np.full(max(k1, 1), float(beta)), k0, k1, False, True, streams,
                       np.zeros(R), n_threads)
        return h

    def _pt_rounds(self, v, streams, swap_streams, temps, rounds, accepted, n_threads,
                   variant=0):
        """``rounds`` rounds of parallel tempering on the tempered family of
        :meth:`sample` (tempering.TemperedStates): ``_tempering.srbm_pt_sample``, the
        nogil driver the C API's srbm_pt_sweeps runs too (sweeps by common_t.h at each
        chain's beta, swaps of states by CRI10 Eq. 5).  v (0/1), streams, swap_streams
        and accepted INOUT (ladder m's state at temps[k] is row m K1 + k)."""
        _tempering.srbm_pt_sample(self.W, self.vbias, self.hbias, self.L, v, temps, rounds,
                                  streams, swap_streams, accepted, n_threads, variant)

    # ------------------------------------------------- the samplers' protocol
    def _parameters(self):
        return {"W": self.W, "vbias": self.vbias, "hbias": self.hbias, "L": self.L}

    def _tempered_parts(self, v):
        """(g, e, x) of 0/1 rows ``v`` in float64 such that the tempered family of
        :meth:`sample` is ln p*_beta(v) = g + beta e + sum_j softplus(beta x_j):
        g = b.v, e = v^T L v / 2, x = c + W^T v."""
        _, b, _, L = self._f64()
        v = np.asarray(v, dtype=np.float64)
        return v @ b, 0.5 * np.sum((v @ L) * v, axis=1), self._hidden_inputs(v)

    @classmethod
    def _method_refusal(cls, method):
        return None

    def _local_mode(self, v, WT=None, max_iter=100):
        """AMH's local optimiser mu with lateral weights (Hu & Yu Sec. 4.2): alternate
        h = argmax P(h | v) (h_j = [c_j + (W^T v)_j > 0]) and one sweep of v_i = [b_i +
        (W h)_i + (L v)_i > 0] in unit order (each update lowers E(v, h)) until v is a
        fixed point (at most ``max_iter`` rounds); rows of 0/1."""
        W, b, c, L = self._f64()
        v = np.array(v, dtype=np.uint8)
        live = np.arange(v.shape[0])
        for _ in range(max_iter):
            if live.size == 0:
                break
            x = v[live].astype(np.float64)
            top = b + (x @ W + c > 0) @ W.T
            for i in range(self.n_visible):
                x[:, i] = top[:, i] + x @ L[:, i] > 0
            moved = np.any(x != v[live], axis=1)
            v[live] = x
            live = live[moved]
        return v

    def _amh_hops(self, proposal, chains, rows, streams, terms=None, n_threads=1):
        """AMH's hops (Hu & Yu Eq. 6-7, cyrbm.training.modehop.hop) with this model's
        ln P*(v), lateral term included: ``_gibbs.amh_hops`` in NumPy (the compiled kernel
        takes an RBM's ln P*),
        drawing as the kernel does from each hopping chain's stream: D + 3 uniforms, the
        pick of i by g^(v, .) (Eq. 7), of j by H(i, .), the acceptance, then v' ~ g~(j, .);
        accepted by Eq. 6, a Metropolis-Hastings move on (v, i, j) that leaves P(v)
        invariant whatever the fixed proposal kernels.  ``chains`` and ``streams`` (INOUT);
        ``terms`` (OUT, len(rows) x 8) the logarithms of Eq. 6.  Returns the number
        accepted."""
        P, AT, spA, logH, _ = proposal
        if rows.size == 0 or P.shape[0] < 2:
            return 0
        D = chains.shape[1]
        sub = streams[rows]
        u = _anneal.chain_uniforms(sub, D + 3)
        streams[rows] = sub
        v = chains[rows].astype(np.float64)

        def log_ghat(lg):                         # Eq. 7 with p(i) = 1 / |L|
            top = lg.max(axis=1, keepdims=True)
            return lg - (top + np.log(np.exp(lg - top).sum(axis=1, keepdims=True)))

        def pick(logp, uu):                       # inverse CDF
            cdf = np.cumsum(np.exp(logp), axis=1)
            return np.minimum((cdf < (uu * cdf[:, -1])[:, None]).sum(axis=1), logp.shape[1] - 1)

        lg_v = v @ AT - spA                       # ln g~(i, v) for every mode i
        lh_v = log_ghat(lg_v)
        i = pick(lh_v, u[:, 0])
        j = pick(logH[i], u[:, 1])
        v_new = (u[:, 3:] < P[j]).astype(np.float64)
        lg_new = v_new @ AT - spA
        lh_new = log_ghat(lg_new)
        n = np.arange(rows.size)
        t = np.stack([self._log_unnormalized_rows(v_new), lh_new[n, j], logH[j, i], lg_v[n, i],
                      self._log_unnormalized_rows(v), lh_v[n, i], logH[i, j], lg_new[n, j]], axis=1)
        if terms is not None:
            terms[...] = t
        ok = np.log(np.maximum(u[:, 2], 1e-300)) < t[:, :4].sum(1) - t[:, 4:].sum(1)
        chains[rows[ok]] = v_new[ok].astype(np.uint8)
        return int(ok.sum())

    # ------------------------------------------- AIS protocol (cyrbm.estimators.annealing)
    def _ais_log_partition(self, annealer, base_rate, data, *, base_data=None,
                           pseudocount=1.0, client=None, chunk=None, key=0):
        """:meth:`cyrbm.Annealer.log_partition` of this model: AIS from the base rate
        (fitted as a binary RBM's) with L scaled by beta too (:func:`srbm_log_partition`)."""
        v_data = None if data is None else self._visible_data(data, "data")
        bA = annealer._base_biases(base_rate, base_data if base_data is not None else v_data,
                                   self.n_visible, pseudocount, checked=base_data is None)
        return srbm_log_partition(annealer, self, bA, v_data, base_rate, key=key,
                                  client=client, chunk=chunk)

    def _ais_log_ratio(self, annealer, other, data=None, **options):
        """:meth:`cyrbm.Annealer.log_ratio` from this model to the SRBM ``other``
        (:func:`cyrbm.estimators.ratio.own_log_ratio`, the kernel cyrbm._ratio.srbm_ratio_run)."""
        return own_log_ratio(annealer, self, other, data, **options)

    def _sandwich_runs(self, annealer, V, base_rate, fit_to, chains, pseudocount):
        """The runs of :meth:`cyrbm.Annealer.evaluate` on checked rows ``V``: forward AIS
        from the base rate fitted to ``fit_to`` as an RBM's (:func:`srbm_log_partition`),
        and a function giving RAISE's log weights (:func:`srbm_raise_log_weights`) down
        the same path."""
        base = annealer._base_biases(base_rate, fit_to, self.n_visible, pseudocount,
                                     checked=True)
        ais = srbm_log_partition(annealer, self, base, V, base_rate)
        return ais, lambda: srbm_raise_log_weights(annealer, self, V, base, chains)

    def _start_units(self):
        """The units an exact draw (and the exact ln Z) enumerates: the visible layer."""
        return self.n_visible

    def _tempered_base_log_partition(self):
        """ln Z of the tempered family at beta = 0 (W = c = L = 0): independent visible
        units of biases b and free hidden ones, sum_i softplus(b_i) + n_hidden ln 2."""
        return float(np.sum(np.logaddexp(0.0, self.vbias.astype(np.float64)))
                     + self.n_hidden * np.log(2.0))

    def _unconnected(self, n, rng):
        """This model with W = 0 and L = 0, its ln Z in closed form (sum_i softplus(b_i)
        + sum_j softplus(c_j)) and ``n`` exact draws of its v (uniforms from ``rng``):
        the first rung of a tracked ln Z (cyrbm.training.tracking)."""
        base = SRBM(np.zeros_like(self.W), self.vbias, self.hbias)
        b, c = (np.asarray(a, np.float64) for a in (base.vbias, base.hbias))
        log_Z = float(np.sum(np.logaddexp(0.0, b)) + np.sum(np.logaddexp(0.0, c)))
        return base, log_Z, (rng.random((n, self.n_visible)) < expit(b)).astype(np.uint8)

    def _start_draws(self, u, rng):
        """Exact draws of v, one per uniform ``u``, by inverse CDF over the 2^D visible
        states of p*(v) (:meth:`log_unnormalized`); uint8."""
        D = self.n_visible
        return state_bits(exact_draws(D, self._log_unnormalized_rows, u), D).astype(np.uint8)

    def _ratio_run(self, other, v, betas, k0, k1, weights, streams, log_w, threads,
                   variant=0):
        """Steps k0 .. k1 - 1 of ratio AIS from this model to ``other`` on the runs ``v``
        (cyrbm._ratio.srbm_ratio_run); returns the runs' 0/1 states."""
        v = np.ascontiguousarray(v, dtype=np.uint8)
        _ratio.srbm_ratio_run(*self._f64(), *other._f64(), v, betas, k0, k1, weights,
                              streams, log_w, threads, variant)
        return v

    # ---------------------------------------------------------------- files
    def to_arrays(self, extra_meta=None):
        return self._file_arrays(FORMAT, extra_meta, "lateral", L=self.L)

    @classmethod
    def load(cls, path, *, dtype=None):
        """Read an SRBM file; a ModelFileError of one sentence for anything else (an RBM's
        or a Gaussian RBM's file included)."""
        return cls.from_arrays(_io.read_npz(path), path, dtype=dtype)

    @classmethod
    def from_arrays(cls, arrays, path="<arrays>", *, dtype=None, what="model file"):
        W, vbias, hbias, meta, dtype = read_parameters(arrays, path, what, FORMAT,
                                                       "an SRBM", dtype, ("L",))
        if "L" not in arrays:
            raise ModelFileError(f"{what} '{path}' lacks the array 'L' (the lateral weights "
                                 f"of an SRBM).")
        return cls(W, vbias, hbias, arrays["L"], dtype=dtype, meta=meta, _error=ModelFileError,
                   _where=f"{what} '{path}'")


# ------------------------------------------------------------------------- training
def check_lateral_settings(method, reconstruction, damping, mean_field_steps):
    """The Trainer's SRBM settings, checked: (reconstruction, damping, steps); a
    ValueError of one sentence for a combination that makes no sense.  Methods pt and
    ptt keep sampled states in their ladders, swept by sequential Gibbs: with them the
    reconstruction is "gibbs" whatever was given (the ladders' states are the negative
    phase; a mean-field reconstruction has no place in it)."""
    if reconstruction not in RECONSTRUCTIONS:
        raise ValueError(f"reconstruction must be 'mean-field' or 'gibbs', not "
                         f"{reconstruction!r}.")
    refusal = SRBM._method_refusal(method)
    if refusal is not None:
        raise ValueError(refusal)
    if method in ("pt", "ptt"):
        # the ladders' chains are sampled states: pt and ptt sweep by sequential Gibbs
        reconstruction = "gibbs"
    if method in ("pcd", "amh") and reconstruction == "mean-field":
        raise ValueError(f"persistent chains need sampled states: an SRBM trains with "
                         f"{method} only with reconstruction='gibbs'.")
    if not (isinstance(damping, (int, float)) and 0 <= damping < 1):
        raise ValueError(f"the mean-field damping must be in [0, 1), not {damping}.")
    if isinstance(mean_field_steps, bool) or int(mean_field_steps) != mean_field_steps \
            or mean_field_steps < 1:
        raise ValueError(f"mean_field_steps must be a whole number of at least 1, not "
                         f"{mean_field_steps}.")
    return reconstruction, float(damping), int(mean_field_steps)


def srbm_cd_update(model, velocity, vel_L, batch, chains, streams, settings,
                   reconstruction="mean-field", damping=DAMPING, steps=MEAN_FIELD_STEPS):
    """One CD-k (or, with Gibbs, PCD-k) step of an :class:`SRBM` (``Trainer``'s update
    with ``lateral=True``; Osindero & Hinton 2008, SM08 Eq. 7 with this energy).

    Negative phase, repeated ``settings["k"]`` times from the chains (CD restarts them at
    ``batch``): "mean-field" draws h ~ p(h | m) (chain r's uniforms from streams[r]) and
    replaces m by :meth:`SRBM.mean_field` from m (``damping``, ``steps``); "gibbs" runs
    sequential Gibbs sweeps on the engine (``chains`` INOUT, 0/1).  The gradient is

        dW = sum v p(h | v)^T,  db = sum v,  dc = sum p(h | v),
        dL = sum v v^T with a zero diagonal,

    over the data less over the reconstructions; W, b, c take the momentum step of
    ``_cd.apply_update`` (the binary models' own, weight decay on W), L the same step
    (weight decay on L too) with ``vel_L`` (INOUT).  Returns False when a parameter
    became non-finite."""
    k, n_threads = settings["k"], settings["n_threads"]
    if not settings["persistent"]:
        chains[...] = batch
    v0 = batch.astype(np.float64)
    if reconstruction == "gibbs":
        if k > 0:
            model._sweeps(chains, streams, 1, k + 1, n_threads)
        vk = chains.astype(np.float64)
    else:
        vk = v0
        for _ in range(k):
            p = expit(model._hidden_inputs(vk))
            h = _anneal.chain_uniforms(streams, model.n_hidden)[:vk.shape[0]] < p
            vk = model.mean_field(h, vk, damping=damping, steps=steps)
    p0, pk = expit(model._hidden_inputs(v0)), expit(model._hidden_inputs(vk))
    dL = v0.T @ v0 - vk.T @ vk
    np.fill_diagonal(dL, 0.0)
    grads = (v0.T @ p0 - vk.T @ pk, np.sum(v0 - vk, axis=0), p0.sum(axis=0) - pk.sum(axis=0))
    grads = tuple(np.ascontiguousarray(g, dtype=model.dtype) for g in grads)
    vel_L *= settings["momentum"]
    vel_L += (settings["learning_rate"] * (settings["scale"] * dL - settings["weight_decay"]
                                           * model.L.astype(np.float64))).astype(model.dtype)
    model.L += vel_L
    if not np.all(np.isfinite(model.L)):
        return False
    return _cd.apply_update((model.W, model.vbias, model.hbias), grads, velocity, settings)


# ------------------------------------------------------------------------------ AIS
def srbm_log_partition(annealer, model, base, data=None, base_rate="data", *, key=0,
                       client=None, chunk=None):
    """ln Z of an :class:`SRBM` by AIS (SM08 Eq. 13-18 with lateral connections), from a
    base A of independent visible units of log-odds ``base`` (b_A, float64; the
    Annealer fits it to the data's base rate) with the model's hidden units free:
    ln Z_A = M ln 2 + sum_i softplus(b_A,i) (Eq. 18), and::

        ln p*_k(v) = (1 - beta_k) b_A.v + beta_k (b.v + v^T L v / 2)
                     + sum_j softplus(beta_k (c_j + (W^T v)_j))

    (beta scales W, L and the hidden layer as SM08 scale the RBM's; kernels.h:
    cyrbm_srbm_pair).  Run r draws v exactly from A, then alternates the weight
    ln p*_k(v) - ln p*_{k-1}(v) and a sweep at beta_k (h | v at once, v | h one unit at a
    time), on its own stream (``cyrbm._random.srbm_ais_streams``), so the result does not
    depend on threads.  ``data``: checked 0/1 rows, for the mean ln p*(v).  What
    :meth:`cyrbm.Annealer.log_partition` runs for an SRBM; returns an :class:`AISResult`
    (sigma-hat of ln Z, the ESS) like the binary case's.  With ``client`` the runs go to a
    Dask cluster, ``chunk`` a task, with the same bits."""
    D, M, R = model.n_visible, model.n_hidden, annealer.runs
    check_memory(R * (9 * D + M + 64), f"{R} AIS runs")
    base = np.ascontiguousarray(base, dtype=np.float64)
    t0 = time.perf_counter()
    if client is None:
        log_w, v = _srbm_runs(annealer, model, base, 0, R, key, threads=annealer.threads,
                              progress=annealer.progress)
    else:
        parts = map_slices(client, _srbm_runs, R, chunk or default_chunk(client, R),
                           shared=(annealer, model, base), args=(key,),
                           progress=annealer.progress, desc="AIS ln Z")
        log_w, v = (np.concatenate(x) for x in zip(*parts))
    seconds = time.perf_counter() - t0
    mean_lp = None if data is None else float(np.mean(model._log_unnormalized_rows(data)))
    return ais_result(annealer, "partition", log_w, _log_Z_base(M, base), seconds=seconds,
                      dtype=model.dtype, samples=v, mean_log_unnormalized=mean_lp,
                      n_data=0 if data is None else data.shape[0],
                      extra={"base_rate": "data" if isinstance(base_rate, str) else
                             ("zero" if base_rate is None else "given"), "visible": "lateral"})


def _srbm_runs(annealer, model, base, r0, r1, key, *, threads, progress=False):
    """Runs r0 .. r1 of :func:`srbm_log_partition` (a task of cyrbm.distributed): run r
    on stream r of ``srbm_ais_streams(seed, .., key)`` alone, so any slices give the
    whole's bits.  Returns (their log weights, end states)."""
    D, M, n = model.n_visible, model.n_hidden, r1 - r0
    betas = annealer.betas
    streams = srbm_ais_streams(annealer.seed, r1, key)[r0:]
    v = np.zeros((n, D), dtype=np.uint8)
    h = np.zeros((n, M), dtype=np.uint8)
    y = np.zeros((n, D))
    log_w = np.zeros(n)
    schedule_pieces(lambda k, k_next: _srbm.srbm_run(
        model.W, model.vbias, model.hbias, model.L, base, v, h, y, betas, k, k_next, True,
        False, streams, log_w, threads), 0, betas.size, progress, annealer.chunk, "AIS ln Z")
    return log_w, v


def _log_Z_base(M, base):
    """ln Z of the base: M free hidden units and independent visible units of log-odds
    ``base`` (SM08 Eq. 18)."""
    return M * _LN2 + float(np.sum(np.logaddexp(0.0, base)))


def srbm_raise_log_weights(annealer, model, v, base, chains, *, key=1):
    """RAISE (Burda, Grosse & Salakhutdinov 2015) on an :class:`SRBM`: ``chains``
    reverse chains from each row of ``v`` (0/1 rows, checked) down ``annealer``'s
    schedule to the base of log-odds ``base`` (float64): a sweep T_K at beta_K = 1
    without a weight, then for k = K-1 .. 0 the weight ln p*_k(v_k) - ln p*_{k+1}(v_k)
    and a sweep at beta_k (``_srbm.srbm_run`` on the reversed schedule: its weight,
    then its sweep).  Returns ln w, (n, chains) float64, with ln w = ln p*(v) - ln Z_A +
    the sum: E[w] = p(v) under the annealing model, so its logarithm is a conservative
    estimate of ln p(v).  Chain i chains + c draws from stream i chains + c of
    ``srbm_ais_streams(seed, .., key)``."""
    n, chains = v.shape[0], int(chains)
    D, M, R = model.n_visible, model.n_hidden, n * chains
    check_memory(R * (9 * D + M + 64), f"{R} RAISE chains")
    base = np.ascontiguousarray(base, dtype=np.float64)
    betas = np.ascontiguousarray(annealer.betas[::-1])
    streams = srbm_ais_streams(annealer.seed, R, key)
    x = np.ascontiguousarray(np.repeat(v, chains, axis=0), dtype=np.uint8)
    h = np.zeros((R, M), dtype=np.uint8)
    y = np.zeros((R, D))
    log_w = np.zeros(R)
    args = (model.W, model.vbias, model.hbias, model.L, base, x, h, y)
    _srbm.srbm_run(*args, np.ones(2), 1, 2, False, True, streams, log_w,
                   annealer.threads)                                  # T_K, no weight
    schedule_pieces(lambda k, k_next: _srbm.srbm_run(
        *args, betas, k, k_next, True, False, streams, log_w, annealer.threads), 1,
        betas.size, annealer.progress, annealer.chunk, "RAISE")
    lp = np.repeat(model._log_unnormalized_rows(v), chains)
    return (lp - _log_Z_base(M, base) + log_w).reshape(n, chains)
