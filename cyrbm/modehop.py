"""Mode-hopping moves for SML (Hu & Yu, "Learning RBMs using mode-hopping MCMC", Sec. 4).

A persistent chain takes one Gibbs update per iteration (the PCD-1 step of
``_gibbs.cd_update``) and, with probability p, a mode-hopping proposal (AMH-p) first:

* g~(i, .) (Sec. 4.1): h* = argmax_h P(h | m_i) (h*_j = [c_j + (W^T m_i)_j > 0]), then
  v ~ P(v | h*) = prod_d sigma(a_id)^v_d (1 - sigma(a_id))^(1 - v_d), a_i = b + W h*;
* g^(v, i) = g~(i, v) / sum_j g~(j, v) (Eq. 7 with p(i) = 1 / |L|);
* H(i, j) = w_ij / sum_{k != i} w_ik with w_ij = 1 ("uniform"), P(m_j) ("prob") or the
  Hamming distance |m_i - m_j| ("distance");
* from v: i ~ g^(v, .), j ~ H(i, .), v' ~ g~(j, .), accepted with probability Eq. 6,
  min{1, P(v') g^(v', j) H(j, i) g~(i, v) / (P(v) g^(v, i) H(i, j) g~(j, v'))}, a
  Metropolis-Hastings move on (v, i, j) whose reverse is (v', j, i): it leaves P(v)
  invariant.

The mode set L (Sec. 4.2) holds at most K mode states m = mu(m), pairwise at Hamming
distance >= R, ranked by ln P*(m): ``ModeSet.rebuild`` takes states of a random walk (the
persistent chains), moves each to its nearby mode with the local optimiser mu
(alternating h = argmax P(h | v), v = argmax P(v | h) until v stops changing: each
half-step lowers the joint energy, so it ends at a local mode), adds the current modes
(re-optimised under the current parameters), and keeps the most probable ones, dropping a
state closer than R to one already kept.

Random numbers come from chain streams of cyrbm's one generator
(``_anneal.chain_uniforms``); the arithmetic is NumPy over chains (products in the
model's dtype, probabilities in float64), ln P* the model's compiled free energy.
"""
import numpy as np

from cyrbm import _anneal, _gibbs

WEIGHTS = ("uniform", "prob", "distance")


def _softplus(x):
    return np.logaddexp(0.0, x)


def log_unnormalized(model, v):
    """ln P*(v) = b.v + sum_j softplus(c_j + (W^T v)_j) (SM08 Eq. 2), float64: the
    model's compiled ``log_unnormalized``."""
    v = np.ascontiguousarray(v, dtype=np.uint8)
    if v.shape[0] == 0:
        return np.zeros(0)
    return _gibbs.log_unnormalized(model.W, model.vbias, model.hbias, v, 1)


def _hidden_inputs(W, c, v):
    """c + W^T v for 0/1 rows v: sums of the rows of W where v is on (no BLAS call:
    products of a few rows are slow in a multithreaded BLAS on a busy machine)."""
    return np.stack([W[r.astype(bool)].sum(axis=0) for r in v]) + c if len(v) else \
        np.zeros((0, W.shape[1]), W.dtype)


def _visible_inputs(WT, b, h):
    """b + W h for 0/1 rows h, from WT = W^T (C order): sums of its rows where h is on."""
    return np.stack([WT[r.astype(bool)].sum(axis=0) for r in h]) + b if len(h) else \
        np.zeros((0, WT.shape[1]), WT.dtype)


def local_mode(model, v, max_iter=100):
    """mu(v): alternate h = argmax P(h | v), v = argmax P(v | h) until v is a fixed point
    (at most ``max_iter`` rounds; each half-step lowers the joint energy); rows of 0/1.
    Products in the model's dtype, only rows not yet fixed are carried on."""
    W, b, c = model.W, model.vbias, model.hbias
    WT = np.ascontiguousarray(W.T)
    v = np.array(v, dtype=np.uint8)
    live = np.arange(v.shape[0])
    for _ in range(max_iter):
        if live.size == 0:
            break
        h = _hidden_inputs(W, c, v[live]) > 0
        nv = (_visible_inputs(WT, b, h) > 0).astype(np.uint8)
        moved = np.any(nv != v[live], axis=1)
        v[live] = nv
        live = live[moved]
    return v


class ModeSet:
    """The mode set L of capacity K (``capacity``) and Hamming radius R (``radius``)."""

    def __init__(self, capacity, radius, weighting="uniform", n_visible=None, modes=None):
        if capacity < 1:
            raise ValueError(f"the mode set needs a capacity K of at least 1, not {capacity}.")
        if radius < 0:
            raise ValueError(f"the Hamming radius R must be non-negative, not {radius}.")
        if weighting not in WEIGHTS:
            raise ValueError(f"hop weighting must be one of {', '.join(WEIGHTS)}, not {weighting!r}.")
        self.capacity, self.radius, self.weighting = int(capacity), int(radius), weighting
        if modes is None:
            modes = np.zeros((0, n_visible or 0), np.uint8)
        self.modes = np.ascontiguousarray(modes, dtype=np.uint8)
        self.proposal = None

    def update_proposal(self, model):
        """Compute the proposal kernels for the current parameters and keep them:
        a_i = b + W h*_i (g~(i, .) = Bernoulli(sigma(a_i))), sum_d softplus(a_id) and
        ln H.  ``hop`` uses the kept ones (any fixed proposal keeps Eq. 6 exact; older
        ones only lower the acceptance), so a trainer refreshes them every few updates."""
        W, b, c = model.W, model.vbias, model.hbias
        hstar = _hidden_inputs(W, c, self.modes) > 0
        A = _visible_inputs(np.ascontiguousarray(W.T), b, hstar).astype(np.float64)
        self.proposal = (A, _softplus(A).sum(axis=1), self.log_hop(model))
        return self.proposal

    def __len__(self):
        return self.modes.shape[0]

    def rebuild(self, model, walk):
        """Rebuild L from the random-walk states ``walk`` and the current modes: mu of
        each, ranked by ln P*, kept greedily while at distance >= R from those kept."""
        walk = np.asarray(walk, np.uint8)
        if walk.shape[0] > 2 * self.capacity:       # 2K states of the walk, evenly spaced
            walk = walk[np.linspace(0, walk.shape[0] - 1, 2 * self.capacity).astype(int)]
        cand = np.concatenate([walk, self.modes]) if len(self) else walk
        cand = np.unique(local_mode(model, cand), axis=0)
        lp = log_unnormalized(model, cand)
        kept = []
        for i in np.argsort(-lp, kind="stable"):
            m = cand[i]
            if all(np.count_nonzero(m != cand[k]) >= self.radius for k in kept):
                kept.append(i)
                if len(kept) == self.capacity:
                    break
        self.modes = np.ascontiguousarray(cand[kept])
        self.proposal = None
        return self.modes

    def log_hop(self, model):
        """ln H(i, j) (|L| x |L|, -inf on the diagonal) for the current parameters."""
        L = len(self)
        if L < 2:
            return np.zeros((L, L))          # no hop with fewer than two modes
        if self.weighting == "uniform":
            w = np.zeros((L, L))
        elif self.weighting == "prob":
            w = np.tile(log_unnormalized(model, self.modes), (L, 1))
        else:
            d = (self.modes[:, None, :] != self.modes[None, :, :]).sum(axis=2)
            with np.errstate(divide="ignore"):
                w = np.log(d.astype(np.float64))
        np.fill_diagonal(w, -np.inf)
        bad = ~np.isfinite(w).any(axis=1)          # every other mode at distance 0
        if bad.any():
            w[bad] = 0.0
            w[bad, np.flatnonzero(bad)] = -np.inf
        top = w.max(axis=1, keepdims=True)
        return w - (top + np.log(np.exp(w - top).sum(axis=1, keepdims=True)))


def _log_gtilde(v, A, spA):
    """ln g~(i, v) for every row v and mode i: v.a_i - sum_d softplus(a_id)."""
    # sum_d v_d A_id without a BLAS call (see _hidden_inputs)
    return np.einsum("nd,ld->nl", np.asarray(v, np.float64), A) - spA


def _log_ghat(lg):
    """ln g^(v, i) (Eq. 7, p(i) uniform) from ln g~(i, v), row by row."""
    top = lg.max(axis=1, keepdims=True)
    return lg - (top + np.log(np.exp(lg - top).sum(axis=1, keepdims=True)))


def _pick(logp, u):
    """Index drawn from each row of probabilities exp(logp) by the inverse CDF at u."""
    cdf = np.cumsum(np.exp(logp), axis=1)
    idx = (cdf < (u * cdf[:, -1])[:, None]).sum(axis=1)
    return np.minimum(idx, logp.shape[1] - 1)


def hop(model, chains, modes, p, streams, *, accept_rule=None):
    """One round of mode-hopping proposals on the persistent ``chains`` (INOUT, rows of
    0/1): each chain proposes with probability ``p`` (a uniform of its stream), the
    proposal is accepted by Eq. 6.  ``streams`` (one chain stream per row, INOUT) give
    every random number.  The proposal kernels are those kept by
    ``modes.update_proposal`` (made now if there are none).  Returns (proposed, accepted).

    ``accept_rule`` (tests only) replaces the log acceptance ratio: a function of the
    dict of its terms.
    """
    n = chains.shape[0]
    if p <= 0 or len(modes) < 2 or n == 0:
        return 0, 0
    go = np.flatnonzero(_anneal.chain_uniforms(streams, 1)[:, 0] < p)
    if go.size == 0:
        return 0, 0
    A, spA, logH = modes.proposal or modes.update_proposal(model)
    sub = streams[go]
    D = chains.shape[1]
    u = _anneal.chain_uniforms(sub, D + 3)
    streams[go] = sub
    v = chains[go]
    lg_v = _log_gtilde(v, A, spA)
    lh_v = _log_ghat(lg_v)
    i = _pick(lh_v, u[:, 0])
    j = _pick(logH[i], u[:, 1])
    prob = 0.5 + 0.5 * np.tanh(0.5 * A[j])                # sigma(A_j)
    v_new = (u[:, 3:] < prob).astype(np.uint8)
    lg_new = _log_gtilde(v_new, A, spA)
    lh_new = _log_ghat(lg_new)
    rows = np.arange(go.size)
    lp = log_unnormalized(model, np.concatenate([v_new, v]))
    terms = {
        "log_p_new": lp[:go.size], "log_p_old": lp[go.size:],
        "ghat_new_j": lh_new[rows, j], "H_ji": logH[j, i], "gtilde_i_old": lg_v[rows, i],
        "ghat_old_i": lh_v[rows, i], "H_ij": logH[i, j], "gtilde_j_new": lg_new[rows, j],
    }
    if accept_rule is None:
        log_r = ((terms["log_p_new"] + terms["ghat_new_j"] + terms["H_ji"] + terms["gtilde_i_old"])
                 - (terms["log_p_old"] + terms["ghat_old_i"] + terms["H_ij"] + terms["gtilde_j_new"]))
    else:
        log_r = accept_rule(terms)
    ok = np.log(np.maximum(u[:, 2], 1e-300)) < log_r
    chains[go[ok]] = v_new[ok]
    return int(go.size), int(ok.sum())
