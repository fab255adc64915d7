"""A two-layer DBN whose bottom layer has Gaussian visible units (Murray & Salakhutdinov
2009, Sec. 5.2: the image-patch DBN): its top layer, exact ln p(v) and the variational
bound's terms.

The DBN is [RBM1, top]: RBM1 a :class:`cyrbm.models.gaussian.GaussianRBM` on (v, h1), D Gaussian
visible and H1 binary hidden units, and an undirected top layer on (h1, h2).  With h2
summed out (MS09 Eq. 16 with a Gaussian P(v | h1))::

    p(v, h1) = p(v | h1) P*(h1) / Z_top,   p(v | h1) = N(v; b1 + s (W1 h1), s^2),
    ln P*(h1) = b2.h1 + h1^T L h1 / 2 + sum_k softplus(c2 + W2^T h1)_k,

where p(v | h1) is a normalised density and Z_top = sum_h1 P*(h1).  The top layer enters
only through ln P*(h1) and ln Z_top: it is any object with ``W`` (H1 x H2), ``vbias``
(b2), ``hbias`` (c2) and optional lateral weights ``lateral`` or ``L`` (H1 x H1,
symmetric with a zero diagonal: a semi-restricted top such as cyrbm.SRBM; absent or
None for an RBM).

* :func:`exact_log_prob`: ln p(v) by summing the 2^H1 states of h1 (tiny models; the
  reference of every estimator);
* :func:`variational_terms`: the terms of SM08's bound (Eq. 19-24) with Gaussian v, for
  :meth:`cyrbm.BoundEstimator.variational`: E_Q[ln p(v | h1)] in closed form for the
  factorial Q (the mean and variance of W1 h1), E_Q[ln P*(h1)] by samples of Q;
* the Chib-style estimator and per-vector AIS run through :mod:`cyrbm.estimators.chib` on the
  compiled driver ``cyrbm._chib_scalar.ScalarChibModel``.

The same functions serve a binary RBM1 (a :class:`cyrbm.RBM`) under a semi-restricted
top, the one binary DBN whose top the kernels of the binary estimators cannot hold:
there ln p(v | h1) = v.u - sum_i softplus(u_i), u = b1 + W1 h1, and Q(h1 | v) =
sigma(c1 + W1^T v); E_Q[ln p(v | h1)] is then sampled with the rest of the bound.
"""
import math

import numpy as np

from cyrbm._random import bound_streams
from cyrbm._threads import pieces
from cyrbm.errors import ModelMismatchError
from cyrbm.models.rbm import binary_states, expit, logsumexp

__all__ = ["is_gaussian_bottom", "lateral_of", "top_log_unnormalized", "exact_log_prob",
           "exact_top_log_partition", "variational_terms", "kernel_model"]

_LN_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def is_gaussian_bottom(layer):
    """Whether a DBN's bottom layer has Gaussian (real-valued) visible units."""
    return layer.real_valued


def lateral_of(top):
    """The top layer's lateral weights L (H1 x H1, float64): its ``lateral``, or its
    ``L`` (cyrbm.SRBM's name), or None for an RBM top; checked: square of the top's
    visible size, finite, symmetric, zero diagonal."""
    L = getattr(top, "lateral", None)
    if L is None:
        L = getattr(top, "L", None)
    if L is None:
        return None
    L = np.asarray(L, dtype=np.float64)
    n = top.W.shape[0]
    if L.shape != (n, n):
        raise ModelMismatchError(f"the top layer's lateral weights have shape {L.shape}, "
                                 f"not ({n}, {n}) (its visible units squared).")
    if not np.all(np.isfinite(L)):
        raise ModelMismatchError("the top layer's lateral weights contain NaN or infinite "
                                 "values.")
    if np.any(np.diag(L) != 0) or not np.array_equal(L, L.T):
        raise ModelMismatchError("the top layer's lateral weights must be symmetric with a "
                                 "zero diagonal.")
    return L


def top_log_unnormalized(top, h, L=None):
    """ln P*(h1) = b2.h1 + h1^T L h1 / 2 + sum_k softplus(c2 + W2^T h1)_k for rows h of
    0/1 states (or probabilities: then the mean-field value), float64."""
    h = np.asarray(h, dtype=np.float64)
    W2 = top.W.astype(np.float64, copy=False)
    out = h @ top.vbias.astype(np.float64) + np.sum(
        np.logaddexp(0.0, h @ W2 + top.hbias.astype(np.float64)), axis=1)
    if L is not None:
        out += 0.5 * np.sum((h @ L) * h, axis=1)
    return out


def _check_units(n, max_units):
    if n > max_units:
        raise ModelMismatchError(f"an exact ln p(v) sums 2^{n} states of h1 and the limit is "
                                 f"{max_units} units; use an estimator (BoundEstimator.chib "
                                 f"or ais_per_vector) instead.")


def exact_top_log_partition(top, *, max_units=20):
    """ln Z_top = ln sum_h1 P*(h1), by enumerating h1 (the top's visible layer)."""
    _check_units(top.W.shape[0], max_units)
    L = lateral_of(top)
    parts = [logsumexp(top_log_unnormalized(top, h, L)) for h in binary_states(top.W.shape[0])]
    return float(logsumexp(np.array(parts)))


def exact_log_prob(low, top, v, *, max_units=20):
    """ln p(v) of each row of ``v`` under the DBN [low, top] exactly: ln sum_h1 p(v | h1)
    P*(h1) - ln Z_top, with p(v | h1) RBM1's normalised conditional (the Gaussian density,
    so no Gaussian integral is left; or, binary, prod_i Bernoulli(v_i; sigma(b1 + W1 h1)))
    and Z_top by enumeration too.  Returns (ln p(v) (n,), ln Z_top)."""
    _check_units(low.n_hidden, max_units)
    v = np.asarray(low._visible_data(v), dtype=np.float64)
    L = lateral_of(top)
    W1 = low.W.astype(np.float64)
    b1 = low.vbias.astype(np.float64)
    if is_gaussian_bottom(low):
        s = low.sigma.astype(np.float64)
        a = (v - b1) / s
        norm = float(np.sum(np.log(s))) + low.n_visible * _LN_SQRT_2PI

        def log_lik(u):                                 # u = W1 h, one row per state
            sq = (np.sum(a * a, axis=1)[:, None] - 2.0 * (a @ u.T)
                  + np.sum(u * u, axis=1)[None, :])     # ||a - W1 h||^2
            return -0.5 * sq - norm
    else:
        def log_lik(u):
            u = u + b1
            return v @ u.T - np.sum(np.logaddexp(0.0, u), axis=1)[None, :]
    joint, top_parts = [], []
    for h in binary_states(low.n_hidden):
        lt = top_log_unnormalized(top, h, L)
        joint.append(logsumexp(log_lik(h @ W1.T) + lt[None, :], axis=1))
        top_parts.append(logsumexp(lt))
    log_Z = float(logsumexp(np.array(top_parts)))
    return logsumexp(np.stack(joint, axis=1), axis=1) - log_Z, log_Z


def kernel_model(low, top):
    """The compiled driver's layout of the DBN [low, top] (float64; a binary RBM1 has no
    sigma)."""
    from cyrbm import _chib_scalar
    sigma = low.sigma if is_gaussian_bottom(low) else None
    return _chib_scalar.ScalarChibModel(low.W, low.vbias, low.hbias, sigma, top.W, top.vbias,
                                        top.hbias, lateral_of(top))


def variational_terms(low, top, v, samples, seed, threads, model=None):
    """The per-sample terms of the variational bound (SM08 Eq. 19-24) with Gaussian v
    (or binary v under a lateral top, E_Q[ln p(v | h1)] then sampled too), ln Z_top not
    subtracted: (analytic, sampled), each (n, samples).

    ``analytic``: E_Q[ln p(v | h1)] + ln P*(h^(m)) + H(Q), where for the factorial
    Q(h1 | v) = sigma(c1 + W1^T (v / s)) with means mu,
    E_Q ||a - W1 h1||^2 = ||a - W1 mu||^2 + sum_j mu_j (1 - mu_j) ||W1_j||^2 (a = (v - b1)
    / s) is exact, and only ln P*(h1) is sampled.  ``sampled``: ln p(v | h^(m)) +
    ln P*(h^(m)) - ln Q(h^(m) | v), every term sampled (no variance when Q is the true
    posterior).  h^(m) ~ Q from stream i of ``bound_streams(seed, n)`` for row i (the
    compiled driver: ``ScalarChibModel.bound_samples``)."""
    model = kernel_model(low, top) if model is None else model
    n = v.shape[0]
    streams = bound_streams(seed, n)
    lpv, ltop, lq = (np.empty((n, samples)) for _ in range(3))
    for i0, i1 in pieces(0, n, threads):        # Ctrl-C answered between pieces
        part = model.bound_samples(v[i0:i1], samples, np.ascontiguousarray(streams[i0:i1]),
                                   threads)
        for whole, piece in zip((lpv, ltop, lq), part):
            whole[i0:i1] = piece
    W1 = low.W.astype(np.float64)
    v = np.asarray(v, dtype=np.float64)
    gaussian = is_gaussian_bottom(low)
    s = low.sigma.astype(np.float64) if gaussian else 1.0
    x = (v / s) @ W1 + low.hbias.astype(np.float64)          # Q's log-odds
    mu = expit(x)
    entropy = np.sum(np.logaddexp(0.0, x) - mu * x, axis=1)
    if gaussian:
        r = (v - low.vbias.astype(np.float64)) / s - mu @ W1.T
        e_lik = (-0.5 * (np.sum(r * r, axis=1) + (mu * (1.0 - mu)) @ np.sum(W1 * W1, axis=0))
                 - float(np.sum(np.log(s))) - low.n_visible * _LN_SQRT_2PI)
        return (e_lik + entropy)[:, None] + ltop, lpv + ltop - lq
    # binary RBM1: E_Q[ln p(v | h1)] has no closed form, so it is sampled with ln P*
    return lpv + ltop + entropy[:, None], lpv + ltop - lq
