"""The RBM with Gaussian visible units and binary hidden units (Murray & Salakhutdinov
2009, Sec. 5.2: the first layer of their image-patch DBN).

Energy, with fixed standard deviations sigma_i (1 for standardised or whitened data)::

    E(v, h) = sum_i (v_i - b_i)^2 / (2 sigma_i^2) - c.h - sum_ij (v_i / sigma_i) W_ij h_j,

so h_j | v ~ Bernoulli(sigma(c_j + sum_i W_ij v_i / sigma_i)) and v_i | h ~
N(b_i + sigma_i (W h)_i, sigma_i^2).  Summing h out, ln p*(v) = -F(v) with the free
energy F(v) = sum_i (v_i - b_i)^2 / (2 sigma_i^2) - sum_j softplus(c_j + (v / sigma)^T W_j).
Integrating v out for each h is a Gaussian integral::

    Z = sum_h exp(c.h) prod_i sqrt(2 pi) sigma_i exp(b_i u_i / sigma_i + u_i^2 / 2),
    u = W h,

so ln Z is exact by enumerating the hidden layer (:meth:`GaussianRBM.log_partition`).
Sampling, training's negative phase and AIS run on the engine's Gaussian visible layer
(``cyrbm._gauss.gauss_run`` on the engine's loop, the kernel ``cyrbm_gauss_block``
in gauss_t.h), and so do the CD step's products (``cyrbm._gauss.gauss_cd_products``).

File format (``.npz``): as the RBM's (``W``, ``vbias``, ``hbias``, ``meta``) with the
array ``sigma`` (n_visible) and meta ``format`` "cyrbm.gaussian_rbm", ``visible``
"gaussian".  A file of W, vbias, hbias (and sigma, default 1) alone loads too.  A model
of whitened data keeps its whitening (:class:`cyrbm.data.patches.Whitening`, y = A (x - m))
as the arrays ``whitening_mean`` (m) and ``whitening_matrix`` (A) and the meta record
``whitening`` {"kind", "log_det": ln|det A|}: the model's methods take whitened rows, and
ln p(x) of a pixel row is ln p(A (x - m)) + log_det.
"""
import math
import time

import numpy as np

from cyrbm import _cd, _gauss, _io, _ratio, _tempering, defaults
from cyrbm._progress import schedule_pieces
from cyrbm._threads import auto_threads
from cyrbm._random import gaussian_ais_streams
from cyrbm._validation import check_memory, check_real
from cyrbm.distributed import default_chunk, map_slices
from cyrbm.errors import AnnealingError, DataError, ModelFileError, ModelMismatchError
from cyrbm.models.rbm import (_DTYPES, Layers, RBM, _checked_parameters, _float_dtype, _version,
                          binary_states, expit, logsumexp, read_parameters)
from cyrbm.data.patches import Whitening
from cyrbm.estimators.ratio import exact_draws, own_log_ratio, state_bits
from cyrbm.estimators.results import ais_result

__all__ = ["GaussianRBM", "gaussian_base", "gaussian_log_partition", "gaussian_cd_update",
           "gaussian_raise_log_weights", "warn_scale"]

FORMAT = "cyrbm.gaussian_rbm"
FORMAT_VERSION = 1
_LN_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LN2 = math.log(2.0)


class GaussianRBM(Layers):
    """An RBM with Gaussian visible units of fixed standard deviations ``sigma``.

    Parameters
    ----------
    W : array, shape (n_visible, n_hidden)
    vbias : array, shape (n_visible,)
        b, the visible means when h = 0.
    hbias : array, shape (n_hidden,)
        c.
    sigma : float or array, shape (n_visible,)
        Positive standard deviations (default 1).
    dtype : float32 or float64, optional
    meta : dict, optional
    whitening : cyrbm.data.patches.Whitening, optional
        The transform of the data the model was trained on (saved in its file).
    """

    visible = "gaussian"
    noun = "a Gaussian RBM"
    title = "Gaussian RBM"
    real_valued = True
    trainer_settings = {"visible": "gaussian"}
    _exact_layer = property(lambda self: ("hidden", self.n_hidden))

    @classmethod
    def _fresh(cls, trainer, n_visible, data):
        return cls.random(n_visible, trainer.n_hidden, seed=trainer.seed, dtype=trainer.dtype,
                          data=data, sigma=trainer.sigma)

    def _cd_step(self, batch, chains, chain_inputs, state, settings, trainer, scratch):
        """CD-k / PCD-k of Gaussian visible units (:func:`gaussian_cd_update`), learning
        sigma too when the state has its velocity."""
        velocity = (state["vel_W"], state["vel_vbias"], state["vel_hbias"])
        return gaussian_cd_update(self, velocity, batch, chains, state["streams"], settings,
                                  state.get("vel_sigma"), scratch.setdefault("gaussian", {}))

    def __init__(self, W, vbias, hbias, sigma=1.0, *, dtype=None, meta=None, whitening=None):
        W = np.asarray(W)
        if dtype is None:
            dtype = W.dtype if W.dtype in _DTYPES else np.float64
        dtype = _float_dtype(dtype)
        W, vbias, hbias = _checked_parameters(W, vbias, hbias, "the given parameters")
        sigma = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (W.shape[0],)) \
            if np.ndim(sigma) == 0 else np.asarray(sigma, dtype=np.float64)
        if sigma.shape != (W.shape[0],) or not np.all(np.isfinite(sigma)) or np.any(sigma <= 0):
            raise ModelMismatchError(f"sigma must be one positive number or {W.shape[0]} of "
                                     f"them (one per visible unit).")
        self.W = np.array(W, dtype=dtype, order="C", copy=True)
        self.vbias = np.array(vbias, dtype=dtype, order="C", copy=True)
        self.hbias = np.array(hbias, dtype=dtype, order="C", copy=True)
        self.sigma = np.array(sigma, dtype=dtype, order="C", copy=True)
        self.meta = dict(meta or {})
        if whitening is not None and (not isinstance(whitening, Whitening)
                                      or whitening.n_features != W.shape[0]):
            raise ModelMismatchError(f"whitening must be a cyrbm.data.patches.Whitening of "
                                     f"{W.shape[0]} features (the visible units).")
        self.whitening = whitening

    @classmethod
    def random(cls, n_visible, n_hidden, *, seed=0, dtype=np.float32, scale=0.01, data=None,
               sigma=1.0):
        """A fresh model: W ~ N(0, scale^2) (the RBM's initial draw), c = 0, and b the
        data's column means when ``data`` is given, else 0."""
        init = RBM.random(n_visible, n_hidden, seed=seed, dtype=np.float64, scale=scale)
        vbias = np.zeros(int(n_visible)) if data is None else np.mean(data, axis=0)
        return cls(init.W, vbias, init.hbias, sigma, dtype=dtype)

    def copy(self):
        return self.astype(self.dtype)

    def astype(self, dtype):
        """The same model stored in ``dtype`` (float32 or float64)."""
        return GaussianRBM(self.W, self.vbias, self.hbias, self.sigma, dtype=dtype,
                           meta=dict(self.meta), whitening=self.whitening)

    def __repr__(self):
        return (f"GaussianRBM(n_visible={self.n_visible}, n_hidden={self.n_hidden}, "
                f"dtype={self.dtype.name})")

    # ------------------------------------------------------------ conditionals
    def _visible_data(self, v, name="data"):
        """Rows of finite reals of this model's width (float64)."""
        v = check_real(v, name=name, allow_1d=True)
        if v.shape[1] != self.n_visible:
            raise ModelMismatchError(f"{name} has {v.shape[1]} columns but the model has "
                                     f"{self.n_visible} visible units.")
        return v

    def _hidden_inputs(self, v):
        """c + W^T (v / sigma) of checked rows, float64."""
        return (v / self.sigma) @ self.W.astype(np.float64, copy=False) + self.hbias

    def hidden_probs(self, v, *, probabilities=False):
        """p(h_j = 1 | v) = sigma(c_j + sum_i W_ij v_i / sigma_i), one row per v (real
        values; ``probabilities``, which lets a binary model take rows in [0, 1], changes
        nothing here)."""
        return expit(self._hidden_inputs(self._visible_data(v)))

    def visible_mean(self, h):
        """E[v | h] = b + sigma (W h), one row per h (0/1 states or probabilities)."""
        h = np.atleast_2d(np.asarray(h, dtype=np.float64))
        if h.ndim != 2 or h.shape[1] != self.n_hidden:
            raise ModelMismatchError(f"h must have {self.n_hidden} columns (hidden units).")
        return self.vbias + self.sigma * (h @ self.W.T.astype(np.float64, copy=False))

    def reconstruction_error(self, v):
        """Mean over rows of sum_i (v_i - E[v_i | p(h | v)])^2."""
        v = self._visible_data(v)
        return float(np.mean(np.sum((v - self.visible_mean(expit(self._hidden_inputs(v))))
                                    ** 2, axis=1)))

    # ------------------------------------------------------- probabilities
    def log_unnormalized(self, v, *, threads=None):
        """ln p*(v) = -F(v) = -sum_i (v_i - b_i)^2 / (2 sigma_i^2)
        + sum_j softplus(c_j + sum_i W_ij v_i / sigma_i), float64."""
        return self._log_unnormalized_rows(self._visible_data(v), threads)

    def _log_unnormalized_rows(self, v, threads=None):
        v = np.asarray(v, dtype=np.float64)
        z = (v - self.vbias) / self.sigma
        return -0.5 * np.sum(z * z, axis=1) + np.sum(np.logaddexp(0.0, self._hidden_inputs(v)),
                                                      axis=1)

    def free_energy(self, v, *, threads=None):
        """F(v) = -ln p*(v)."""
        return -self.log_unnormalized(v, threads=threads)

    def log_partition(self, *, threads=None, max_units=None):
        """ln Z exactly, by the Gaussian integral over v for each of the 2^n_hidden
        hidden states: ln Z = sum_i ln(sqrt(2 pi) sigma_i)
        + ln sum_h exp(c.h + sum_i (b_i u_i / sigma_i + u_i^2 / 2)), u = W h; float64,
        in blocks of 2^12 states, a stable log-sum-exp, in compiled code
        (``cyrbm._gauss.gauss_log_partition``, which the C API's
        ``gauss_exact_log_partition`` runs too; the same bits for any number of
        threads).  Refuses (AnnealingError) more than ``max_units`` hidden units
        (default :data:`exact_max_units`, 20)."""
        M = self.n_hidden
        self._enumerable(M, "hidden", max_units)
        return _gauss.gauss_log_partition(self.W, self.vbias, self.hbias, self.sigma,
                                          auto_threads(threads, self.n_visible << M))

    def pseudo_log_likelihood(self, v, *, threads=None, max_units=None):
        """``sum_i ln p(v_i | v_-i)`` for each row, exactly, float64 (a log-density).

        Each conditional is p*(v) over its integral along v_i; summing h out inside the
        integral, with z = (v - b) / sigma, x = c + W^T (v / sigma) and u = W h::

            ln p(v_i | v_-i) = sum_j softplus(x_j) - ln(sqrt(2 pi) sigma_i)
                               - ln sum_h exp(h.x + (u_i - z_i)^2 / 2),

        a sum over the 2^n_hidden hidden states (blocks of 2^12, a stable log-sum-exp,
        NumPy), so it is refused (AnnealingError) above ``max_units`` hidden units
        (default :data:`exact_max_units`, 20) like :meth:`log_partition`.
        """
        v = self._visible_data(v)
        M = self.n_hidden
        self._enumerable(M, "hidden", max_units, "an exact pseudo-likelihood")
        W = self.W.astype(np.float64)
        x = self._hidden_inputs(v)                                    # rows x M
        z = (v - self.vbias) / self.sigma                             # rows x D
        lse = np.full(v.shape, -np.inf)
        for h in binary_states(M):
            hx = x @ h.T                                              # rows x S
            u = h @ W.T                                               # S x D
            for r in range(v.shape[0]):
                t = hx[r][:, None] + 0.5 * (u - z[r]) ** 2            # S x D
                lse[r] = np.logaddexp(lse[r], logsumexp(t, axis=0))
        return (np.sum(np.logaddexp(0.0, x), axis=1)[:, None]
                - np.log(math.sqrt(2.0 * math.pi) * self.sigma) - lse).sum(axis=1)

    def sample(self, n, steps=defaults.SAMPLE_STEPS, *, seed=None, init=None, threads=None,
               sampler="gibbs", temperatures=None, ladder=None):
        """Draw ``n`` visible vectors by block Gibbs sampling, parallel tempering or
        parallel trajectory tempering.

        Gibbs: h | v, then v | h Gaussian with mean b + sigma (W h) and sd sigma.  Each
        chain starts from ``init`` (rows of real data, cycled) or from N(b, sigma^2),
        runs ``steps`` sweeps from its own stream, and returns its final state.

        ``sampler="pt"`` (Cho, Raiko & Ilin 2010, Table I, swaps by Eq. 5): each sample
        comes from a ladder of chains at ``temperatures`` 0 <= beta_0 < ... < beta_K = 1
        (default 0, 0.05, ..., 1; or a count N), the tempered family

            ln p*_beta(v) = -sum_i (v_i - b_i)^2 / (2 sigma_i^2)
                            + sum_j softplus(beta (c_j + sum_i W_ij v_i / sigma_i)),

        beta scaling W and c and keeping b and sigma (beta = 1: the model; beta = 0:
        independent N(b_i, sigma_i^2)): ``steps`` rounds of one sweep per chain at its
        beta, then swaps of neighbouring states from the top down (tempering.
        TemperedStates); the sample is the beta = 1 chain's final state.  ``sampler=
        "ptt"`` (Béreux et al. 2025): ``ladder`` is a list of earlier GaussianRBMs of this
        model's training (earliest first), swaps of states between neighbouring models
        (tempering.TrajectoryChains).  Chains without ``init`` start from N(b, sigma^2).
        The result depends on ``seed`` only, not on the number of threads.  Returns an
        (n, n_visible) array of the model's dtype."""
        return self._chain_sample(n, steps, seed, init, threads,
                                  self.n_visible * self.n_hidden, sampler, temperatures,
                                  ladder)

    def _sweeps(self, v, streams, k0, k1, n_threads, p_first=None, beta=1.0):
        """Steps k0 .. k1 - 1 at ``beta`` (the tempered family of :meth:`sample`; 1 the
        model) of the chains ``v`` (INOUT), chain r on streams[r] (INOUT); step 0 draws
        from N(b, sigma^2).  Returns the hidden states of the last step; ``p_first``
        (OUT, chains x n_hidden), if given, receives p(h | v) of the chains as they were
        (step k0 > 0).  ``_gauss.gauss_run`` between N(mu, sd^2) = N(b, sigma^2) and
        the model at the constant beta: its precision (1 - beta) / sigma^2 + beta /
        sigma^2 is 1 / sigma^2, so v | h is N(b + beta sigma (W h), sigma^2) and h_j | v
        Bernoulli(sigma(beta x_j)) (gauss_t.h), the family's conditionals."""
        h = np.zeros((v.shape[0], self.n_hidden), dtype=np.uint8)
        base = self.vbias.astype(np.float64), self.sigma.astype(np.float64)
        _gauss.gauss_run(self.W, self.vbias, self.hbias, self.sigma, *base, v, h,
                         np.full(max(k1, 1), float(beta)), k0, k1, False, streams,
                         np.zeros(v.shape[0]), n_threads, p_first)
        return h

    def _pt_rounds(self, v, streams, swap_streams, temps, rounds, accepted, n_threads,
                   variant=0):
        """``rounds`` rounds of parallel tempering on the tempered family of
        :meth:`sample` (tempering.TemperedStates): ``_tempering.gauss_pt_sample``, the
        nogil driver the C API's gauss_pt_sweeps runs too (sweeps by gauss_t.h at each
        chain's beta, swaps of states by CRI10 Eq. 5).  v, streams, swap_streams and
        accepted INOUT (ladder m's state at temps[k] is row m K1 + k)."""
        _tempering.gauss_pt_sample(self.W, self.vbias, self.hbias, self.sigma, v, temps,
                                   rounds, streams, swap_streams, accepted, n_threads,
                                   variant)

    # ------------------------------------------------- the samplers' protocol
    @property
    def _state_dtype(self):
        return self.dtype

    def _parameters(self):
        return {"W": self.W, "vbias": self.vbias, "hbias": self.hbias, "sigma": self.sigma}

    def _chain_states(self, rows, rng):
        """Chains started at training rows: the rows themselves, in the model's dtype."""
        return np.ascontiguousarray(rows, dtype=self.dtype)

    def _tempered_parts(self, v):
        """(g, e, x) of rows ``v`` in float64 such that the tempered family of
        :meth:`sample` is ln p*_beta(v) = g + beta e + sum_j softplus(beta x_j):
        g = -sum_i (v_i - b_i)^2 / (2 sigma_i^2), e = 0, x = c + W^T (v / sigma)."""
        v = np.asarray(v, dtype=np.float64)
        z = (v - self.vbias) / self.sigma
        return -0.5 * np.sum(z * z, axis=1), np.zeros(v.shape[0]), self._hidden_inputs(v)

    @classmethod
    def _method_refusal(cls, method):
        if method == "amh":
            return ("a Gaussian RBM trains with method cd, pcd, pt or ptt, not amh: Hu & "
                    "Yu's mode set is of Hamming balls around binary states, which "
                    "real-valued visible units do not have.")
        return None

    # ------------------------------------------- AIS protocol (cyrbm.estimators.annealing)
    def _ais_log_partition(self, annealer, base_rate, data, *, base_data=None,
                           pseudocount=1.0, client=None, chunk=None, key=0):
        """:meth:`cyrbm.Annealer.log_partition` of this model: AIS from independent
        Gaussians (:func:`gaussian_log_partition`; ``base_rate`` None means "data" when
        data are given, else the model's own (b, sigma))."""
        if base_rate is None and (data is not None or base_data is not None):
            base_rate = "data"
        return gaussian_log_partition(annealer, self, base_rate, data, base_data=base_data,
                                      key=key, client=client, chunk=chunk)

    def _ais_log_ratio(self, annealer, other, data=None, **options):
        """:meth:`cyrbm.Annealer.log_ratio` from this model to the Gaussian RBM ``other``
        (:func:`cyrbm.estimators.ratio.own_log_ratio`, the kernel cyrbm._ratio.gauss_ratio_run)."""
        return own_log_ratio(annealer, self, other, data, **options)

    def _sandwich_runs(self, annealer, V, base_rate, fit_to, chains, pseudocount):
        """The runs of :meth:`cyrbm.Annealer.evaluate` on checked rows ``V``: forward AIS
        from the base of independent Gaussians fitted to ``fit_to`` (:func:`gaussian_base`),
        and a function giving RAISE's log weights (:func:`gaussian_raise_log_weights`)
        down the same path."""
        base = gaussian_base(self, base_rate, fit_to)
        ais = gaussian_log_partition(annealer, self, base, V)
        ais.extra["base_rate"] = ("data" if isinstance(base_rate, str) else
                                  "model" if base_rate is None else "given")
        return ais, lambda: gaussian_raise_log_weights(annealer, self, V, base, chains)

    def _start_units(self):
        """The units an exact draw (and the exact ln Z) enumerates: the hidden layer."""
        return self.n_hidden

    def _tempered_base_log_partition(self):
        """ln Z of the tempered family at beta = 0 (W = c = 0): independent Gaussians
        and free hidden units, sum_i ln(sqrt(2 pi) sigma_i) + n_hidden ln 2."""
        sigma = np.broadcast_to(np.asarray(self.sigma, np.float64), (self.n_visible,))
        return float(np.sum(0.5 * np.log(2 * np.pi) + np.log(sigma))
                     + self.n_hidden * np.log(2.0))

    def _unconnected(self, n, rng):
        """This model with W = 0, its ln Z in closed form (sum_i ln(sqrt(2 pi) s_i) +
        sum_j softplus(c_j)) and ``n`` exact draws v ~ N(b, s^2) (normals from ``rng``):
        the first rung of a tracked ln Z (cyrbm.training.tracking)."""
        base = GaussianRBM(np.zeros_like(self.W), self.vbias, self.hbias, self.sigma)
        b, c, s = (np.asarray(a, np.float64) for a in (base.vbias, base.hbias, base.sigma))
        log_Z = float(np.sum(np.log(s)) + s.size * _LN_SQRT_2PI
                      + np.sum(np.logaddexp(0.0, c)))
        return base, log_Z, b + s * rng.standard_normal((n, self.n_visible))

    def _start_draws(self, u, rng):
        """Exact draws of v, one per uniform ``u``: h from its marginal
        p(h) ~ exp(c.h + sum_i (b_i u_i / s_i + u_i^2 / 2)), u = W h, by inverse CDF over
        the 2^M hidden states, then v | h ~ N(b + s (W h), s^2) (normals from ``rng``)."""
        W, b, c, s = (a.astype(np.float64) for a in (self.W, self.vbias, self.hbias,
                                                     self.sigma))

        def log_terms(H):
            U = H @ W.T
            return H @ c + U @ (b / s) + 0.5 * np.sum(U * U, axis=1)
        h = state_bits(exact_draws(self.n_hidden, log_terms, u), self.n_hidden)
        return b + s * (h @ W.T) + s * rng.standard_normal((h.shape[0], self.n_visible))

    def _ratio_run(self, other, v, betas, k0, k1, weights, streams, log_w, threads,
                   variant=0):
        """Steps k0 .. k1 - 1 of ratio AIS from this model to ``other`` on the runs ``v``
        (cyrbm._ratio.gauss_ratio_run, float64); returns the runs' states."""
        v = np.ascontiguousarray(v, dtype=np.float64)
        _ratio.gauss_ratio_run(*_f64(self), *_f64(other), v, betas, k0, k1, weights,
                               streams, log_w, threads, variant)
        return v

    # ---------------------------------------------------------------- files
    def to_arrays(self, extra_meta=None):
        meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "visible": "gaussian",
                "dtype": self.dtype.name, "n_visible": int(self.n_visible),
                "n_hidden": int(self.n_hidden), "cyrbm_version": _version()}
        meta.update({k: v for k, v in self.meta.items() if k not in meta})
        if extra_meta:
            meta.update(extra_meta)
        arrays = {}
        if self.whitening is not None:
            arrays, meta["whitening"] = self.whitening.to_arrays()
        return {"W": self.W, "vbias": self.vbias, "hbias": self.hbias, "sigma": self.sigma,
                **arrays, "meta": _io.meta_to_array(meta)}

    def save(self, path):
        """Write the model to ``path`` (.npz) atomically."""
        _io.atomic_savez(path, self.to_arrays())

    @classmethod
    def load(cls, path, *, dtype=None):
        """Read a Gaussian RBM file; a ModelFileError of one sentence for anything else
        (a binary RBM's file included)."""
        return cls.from_arrays(_io.read_npz(path), path, dtype=dtype)

    @classmethod
    def from_arrays(cls, arrays, path="<arrays>", *, dtype=None, what="model file"):
        W, vbias, hbias, meta, dtype = read_parameters(arrays, path, what, FORMAT,
                                                       "a Gaussian RBM", dtype,
                                                       ("sigma", "whitening_mean", "whitening_matrix"))
        sigma = np.asarray(arrays["sigma"]) if "sigma" in arrays else 1.0
        try:
            whitening = Whitening.from_arrays(arrays, meta.pop("whitening", None))
            return cls(W, vbias, hbias, sigma, dtype=dtype, meta=meta, whitening=whitening)
        except (ModelMismatchError, DataError) as exc:
            raise ModelFileError(f"{what} '{path}': {exc}") from None


# ------------------------------------------------------------------------- training
def warn_scale(data, sigma, name="training data"):
    """One warning sentence (UserWarning) when the data's variances are far from sigma^2:
    the median over the visible units of var(v_i) / sigma_i^2 outside [1/4, 4] (a
    fixed-sigma model cannot then fit the data's scale), the variances from at most
    about 2,000 evenly spaced rows.  Returns the median ratio."""
    import warnings
    rows = data[::max(1, data.shape[0] // 2000)]
    ratio = float(np.median(np.var(rows, axis=0, dtype=np.float64)
                            / np.asarray(sigma, np.float64) ** 2))
    if not 0.25 <= ratio <= 4:
        warnings.warn(f"{name} has variances {ratio:.3g} times sigma^2 (the median over the "
                      f"visible units); standardise or whiten the data, or give the model "
                      f"a sigma near the data's standard deviations.", UserWarning,
                      stacklevel=3)
    return ratio


def gaussian_cd_update(model, velocity, batch, chains, streams, settings, vel_sigma=None,
                       buffers=None):
    """One CD-k / PCD-k step of a :class:`GaussianRBM` (``Trainer``'s update for Gaussian
    visible units): the chains (INOUT, batch x n_visible, the model's dtype; CD restarts
    them at ``batch``) take ``settings["k"]`` Gibbs sweeps on the engine (chain r on
    streams[r]), then the gradient of ln p(v) (SM08 Eq. 7 with this energy),

        dW = sum (v/sigma) p(h | v)^T,  db = sum (v - b) / sigma^2,  dc = sum p(h | v),

    over the data less over the chains, takes the momentum step of
    ``_cd.apply_update`` (the binary models' own).  With ``vel_sigma`` (INOUT, the
    velocity of ln sigma) sigma is learned too, by the same step on ln sigma with the
    gradient sum (v - b)^2 / sigma^2 - (v / sigma) (W p(h | v)) (all from the parameters
    before the step).  ``buffers``, a dict the caller keeps between batches, holds the
    products' outputs for reuse (no fresh arrays each batch).  Returns False when a
    parameter became non-finite."""
    k, n_threads = settings["k"], settings["n_threads"]
    data = np.ascontiguousarray(batch, dtype=model.dtype)
    B, M = data.shape[0], model.n_hidden
    buffers = {} if buffers is None else buffers
    if buffers.get("p0") is None or buffers["p0"].shape != (B, M) \
            or buffers["p0"].dtype != model.dtype or buffers["dW"].shape != model.W.shape:
        buffers.update(p0=np.empty((B, M), model.dtype), pk=np.empty((B, M), model.dtype),
                       dW=np.empty_like(model.W), db=np.empty_like(model.vbias),
                       dc=np.empty_like(model.hbias))
    p0, pk = buffers["p0"], buffers["pk"]
    grads = buffers["dW"], buffers["db"], buffers["dc"]
    # CD restarts the chains at the batch: the first sweep's product gives p(h | data)
    have_p0 = not settings["persistent"] and k > 0
    if not settings["persistent"]:
        chains[...] = data
    if k > 0:
        model._sweeps(chains, streams, 1, k + 1, n_threads, p0 if have_p0 else None)
    _gauss.gauss_cd_products(model.W, model.hbias, model.sigma, data, chains, p0, pk,
                             *grads, n_threads, have_p0)
    if vel_sigma is not None:
        W, b = model.W.astype(np.float64, copy=False), model.vbias.astype(np.float64)
        s, vk = model.sigma.astype(np.float64), chains.astype(np.float64)
        p0, pk = p0.astype(np.float64), pk.astype(np.float64)

        def terms(v, p):
            return np.sum(((v - b) / s) ** 2 - (v / s) * (p @ W.T), axis=0)

        vel_sigma *= settings["momentum"]
        vel_sigma += (settings["learning_rate"] * settings["scale"]
                      * (terms(batch, p0) - terms(vk, pk))).astype(model.dtype)
        model.sigma[...] = np.exp(np.log(s) + vel_sigma)
        if not np.all(np.isfinite(model.sigma)) or np.any(model.sigma <= 0):
            return False
    return _cd.apply_update((model.W, model.vbias, model.hbias), grads, velocity, settings)


# ------------------------------------------------------------------------------ AIS
def gaussian_base(model, base_rate, data):
    """(mu, sd) of AIS's base of independent Gaussians for ``model``: fitted to ``data``
    (rows checked) with base_rate "data" (per unit the mean and the standard deviation,
    floored at 1e-3 sigma_i), the model's own (b, sigma) with None, or a given pair."""
    D = model.n_visible
    if base_rate is None:
        return model.vbias.astype(np.float64), model.sigma.astype(np.float64)
    if isinstance(base_rate, str):
        if base_rate != "data":
            raise AnnealingError(f"base_rate must be None, 'data' or a pair (means, standard "
                                 f"deviations), not {base_rate!r}.")
        if data is None:
            raise AnnealingError("base_rate='data' needs data (or base_data) to fit the "
                                 "base Gaussians to.")
        return data.mean(axis=0), np.maximum(data.std(axis=0), 1e-3 * model.sigma.astype(np.float64))
    try:
        mu, sd = (np.asarray(a, dtype=np.float64) for a in base_rate)
    except (TypeError, ValueError):
        raise AnnealingError("base_rate of a Gaussian RBM must be None, 'data' or a pair "
                             "(means, standard deviations).") from None
    if mu.shape != (D,) or sd.shape != (D,):
        raise ModelMismatchError(f"the base means and standard deviations must have {D} "
                                 f"entries each (the model's visible units).")
    if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(sd)) and np.all(sd > 0)):
        raise AnnealingError("the base means must be finite and its standard deviations "
                             "positive.")
    return np.ascontiguousarray(mu), np.ascontiguousarray(sd)


def _f64(model):
    """(W, b, c, sigma) of a Gaussian RBM as contiguous float64 arrays."""
    return tuple(np.ascontiguousarray(a, dtype=np.float64)
                 for a in (model.W, model.vbias, model.hbias, model.sigma))


def _log_Z_base(M, sd):
    """ln Z of the base: M free hidden units and independent N(mu_i, sd_i^2)."""
    return M * _LN2 + float(np.sum(np.log(sd))) + len(sd) * _LN_SQRT_2PI


def _anneal_pieces(annealer, model, base, v, h, betas, k0, k1, streams, log_w, desc,
                   threads=None, progress=None):
    """gauss_run over steps k0 .. k1 - 1 with weights, in pieces (the progress bar moves
    and Ctrl-C is answered between them; the pieces give the one call's bits)."""
    threads = annealer.threads if threads is None else threads
    schedule_pieces(lambda k, k_next: _gauss.gauss_run(
        model.W, model.vbias, model.hbias, model.sigma, *base, v, h, betas, k, k_next, True,
        streams, log_w, threads), k0, k1, annealer.progress if progress is None else progress,
        annealer.chunk, desc)


def _gaussian_runs(annealer, model, base, r0, r1, key, *, threads, progress=False):
    """Runs r0 .. r1 of :func:`gaussian_log_partition` (a task of cyrbm.distributed): run
    r on stream r of ``gaussian_ais_streams(seed, .., key)`` alone, so any slices give the
    whole's bits.  Returns (their log weights, end states)."""
    betas = annealer.betas
    streams = gaussian_ais_streams(annealer.seed, r1, key)[r0:]
    v = np.zeros((r1 - r0, model.n_visible), dtype=model.dtype)
    h = np.zeros((r1 - r0, model.n_hidden), dtype=np.uint8)
    log_w = np.zeros(r1 - r0)
    _anneal_pieces(annealer, model, base, v, h, betas, 0, betas.size, streams, log_w,
                   "AIS ln Z", threads, progress)
    return log_w, v


def gaussian_raise_log_weights(annealer, model, v, base, chains, *, key=1):
    """RAISE (Burda, Grosse & Salakhutdinov 2015) on a Gaussian RBM: ``chains`` reverse
    chains from each row of ``v`` (rows checked) down ``annealer``'s schedule to the base
    ``(mu, sd)``: a Gibbs sweep T_K at beta_K = 1 without a weight, then for k = K-1 .. 0
    the weight ln p*_k(v_k) - ln p*_{k+1}(v_k) and a sweep at beta_k.  Returns ln w,
    (n, chains) float64, with ln w = ln p*(v) - ln Z_A + the sum: E[w] = p(v) under the
    annealing model, so its logarithm is a conservative estimate of ln p(v).  Chain
    i chains + c draws from stream i chains + c of ``gaussian_ais_streams(seed, .., key)``."""
    n, chains = v.shape[0], int(chains)
    R = n * chains
    check_memory(R * (model.n_visible * model.dtype.itemsize + model.n_hidden + 64),
                 f"{R} RAISE chains")
    betas = annealer.betas
    streams = gaussian_ais_streams(annealer.seed, R, key)
    x = np.ascontiguousarray(np.repeat(v, chains, axis=0), dtype=model.dtype)
    h = np.zeros((R, model.n_hidden), dtype=np.uint8)
    log_w = np.zeros(R)
    base = tuple(np.ascontiguousarray(a, dtype=np.float64) for a in base)
    _gauss.gauss_run(model.W, model.vbias, model.hbias, model.sigma, *base, x, h,
                     np.ones(2), 1, 2, False, streams, log_w, annealer.threads)   # T_K
    _anneal_pieces(annealer, model, base, x, h, np.ascontiguousarray(betas[::-1]), 1,
                   betas.size, streams, log_w, "RAISE")
    lp = np.repeat(model._log_unnormalized_rows(v), chains)
    return (lp - _log_Z_base(model.n_hidden, base[1]) + log_w).reshape(n, chains)


def gaussian_log_partition(annealer, model, base_rate="data", data=None, *, base_data=None,
                           key=0, client=None, chunk=None):
    """ln Z of a :class:`GaussianRBM` by AIS (SM08 Eq. 13-18 with Gaussian visible
    units), from a base A of independent Gaussians N(mu_i, sd_i^2) with the model's
    hidden units free: ln Z_A = M ln 2 + sum_i ln(sqrt(2 pi) sd_i), and::

        ln p*_k(v) = -(1 - beta_k) sum_i (v_i - mu_i)^2 / (2 sd_i^2)
                     - beta_k sum_i (v_i - b_i)^2 / (2 sigma_i^2)
                     + sum_j softplus(beta_k (c_j + sum_i W_ij v_i / sigma_i))

    (kernels.h: cyrbm_gauss_pair); run r draws v exactly from A, then alternates the
    weight ln p*_k(v) - ln p*_{k-1}(v) and a Gibbs sweep at beta_k, on its own stream
    (``cyrbm._random.gaussian_ais_streams``), so the result does not depend on threads.
    What :meth:`cyrbm.Annealer.log_partition` runs for a Gaussian RBM; returns an
    :class:`AISResult` (sigma-hat of ln Z, the ESS) like the binary case's.  With
    ``client`` the runs go to a Dask cluster, ``chunk`` a task, with the same bits."""
    D, M, R = model.n_visible, model.n_hidden, annealer.runs
    check_memory(R * (D * model.dtype.itemsize + M + 64), f"{R} AIS runs")
    v_data = None if data is None else model._visible_data(data, "data")
    fit = v_data if base_data is None else model._visible_data(base_data, "base_data")
    mu, sd = gaussian_base(model, base_rate, fit)
    t0 = time.perf_counter()
    if client is None:
        log_w, v = _gaussian_runs(annealer, model, (mu, sd), 0, R, key,
                                  threads=annealer.threads, progress=annealer.progress)
    else:
        parts = map_slices(client, _gaussian_runs, R, chunk or default_chunk(client, R),
                           shared=(annealer, model, (mu, sd)), args=(key,),
                           progress=annealer.progress, desc="AIS ln Z")
        log_w, v = (np.concatenate(x) for x in zip(*parts))
    seconds = time.perf_counter() - t0
    mean_lp = None
    if v_data is not None:
        mean_lp = float(np.mean(model._log_unnormalized_rows(v_data)))
    return ais_result(annealer, "partition", log_w, _log_Z_base(M, sd), seconds=seconds,
                      dtype=model.dtype, samples=v, mean_log_unnormalized=mean_lp,
                      n_data=0 if v_data is None else v_data.shape[0],
                      extra={"base_rate": "data" if isinstance(base_rate, str) else
                             ("model" if base_rate is None else "given"),
                             "visible": "gaussian"})
