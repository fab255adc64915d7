"""Mode-hopping moves for SML (Hu & Yu, "Learning RBMs using mode-hopping MCMC", Sec. 4).

A persistent chain takes one Gibbs update per iteration (the PCD-1 step of
``_cd.cd_update``) and, with probability p, a mode-hopping proposal (AMH-p) first:

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

An SRBM (lateral weights L) takes the same moves with its own mu (``SRBM._local_mode``:
h = argmax P(h | v), then sequential v_i = [b_i + (W h)_i + (L v)_i > 0]) and its own
ln P*(v), lateral term included, in NumPy (``SRBM._amh_hops``, the kernel's draws and
Eq. 6); the proposals g~ stay factorial (a_i = b + W h*_i), which keeps Eq. 6 exact.

The hops are compiled (``_gibbs.amh_hops``, cyrbm/_kernels/modehop_t.h: the row sums and
the factorial rows' draws and softplus sums of the Gibbs kernels, chains in parallel);
the mode set and its proposal kernels are NumPy over the few modes, on the compiled
binary products.  Random numbers come from chain streams of cyrbm's one generator: the
decision to hop by ``_anneal.chain_uniforms``, then the kernel's.  tests/_reference.py
holds the same hop written in NumPy (``amh_hop_reference``), which the kernel matches.
"""
import numpy as np

from cyrbm import _anneal, _gibbs

WEIGHTS = ("uniform", "prob", "distance")


def _softplus(x):
    return np.logaddexp(0.0, x)


def log_unnormalized(model, v):
    """ln P*(v) = -F(v) of the model's class, float64: an RBM's b.v + sum_j softplus(c_j
    + (W^T v)_j) (SM08 Eq. 2, compiled), an SRBM's with v^T L v / 2 added."""
    v = np.ascontiguousarray(v, dtype=np.uint8)
    if v.shape[0] == 0:
        return np.zeros(0)
    return model._log_unnormalized_rows(v, 1)


def _hidden_inputs(W, c, v):
    """c + W^T v for 0/1 rows v (the compiled binary product: no BLAS call, whose
    products of a few rows are slow in a multithreaded BLAS on a busy machine)."""
    return _gibbs.binary_inputs(W, c, np.ascontiguousarray(v, dtype=np.uint8))


def _visible_inputs(WT, b, h):
    """b + W h for 0/1 rows h, from WT = W^T (C order, ``_gibbs.transposed``)."""
    return _gibbs.binary_inputs(WT, b, np.ascontiguousarray(h, dtype=np.uint8))


def local_mode(model, v, max_iter=100, WT=None):
    """mu(v) of the model's class (``model._local_mode``): for an RBM, alternate h =
    argmax P(h | v), v = argmax P(v | h) until v is a fixed point (at most ``max_iter``
    rounds; each half-step lowers the joint energy); rows of 0/1.  ``WT`` is W^T if the
    caller has it."""
    return model._local_mode(v, WT, max_iter)


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

    def update_proposal(self, model, WT=None):
        """Compute the proposal kernels for the current parameters and keep them:
        with a_i = b + W h*_i (g~(i, .) = Bernoulli(sigma(a_i))), the float64 arrays
        sigma(a_i) (|L| x D), the a_i as columns (D x |L|), sum_d softplus(a_id), ln H and
        H: the tuple ``_gibbs.amh_hops`` takes.  ``hop`` uses the kept ones (any fixed
        proposal keeps Eq. 6 exact; older ones only lower the acceptance), so a trainer
        refreshes them every few updates.  ``WT``: W^T if the caller has it."""
        W, b, c = model.W, model.vbias, model.hbias
        if WT is None:
            WT = _gibbs.transposed(W)
        hstar = (_hidden_inputs(W, c, self.modes) > 0).view(np.uint8)
        A = np.ascontiguousarray(_visible_inputs(WT, b, hstar), dtype=np.float64)
        logH = self.log_hop(model)
        self.proposal = (0.5 + 0.5 * np.tanh(0.5 * A), np.ascontiguousarray(A.T),
                         _softplus(A).sum(axis=1), logH, np.exp(logH))
        return self.proposal

    def __len__(self):
        return self.modes.shape[0]

    def rebuild(self, model, walk, WT=None):
        """Rebuild L from the random-walk states ``walk`` and the current modes: mu of
        each, ranked by ln P*, kept greedily while at distance >= R from those kept.
        ``WT``: W^T if the caller has it."""
        walk = np.asarray(walk, np.uint8)
        if WT is None:
            WT = _gibbs.transposed(model.W)
        if walk.shape[0] > 2 * self.capacity:       # 2K states of the walk, evenly spaced
            walk = walk[np.linspace(0, walk.shape[0] - 1, 2 * self.capacity).astype(int)]
        cand = np.concatenate([walk, self.modes]) if len(self) else walk
        cand = np.unique(model._local_mode(cand, WT), axis=0)
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


def hop(model, chains, modes, p, streams, *, n_threads=1, terms=None):
    """One round of mode-hopping proposals on the persistent ``chains`` (INOUT, rows of
    0/1): each chain proposes with probability ``p`` (a uniform of its stream), the
    proposal is accepted by Eq. 6 (``_gibbs.amh_hops``).  ``streams`` (one chain stream
    per row, INOUT) give every random number.  The proposal kernels are those kept by
    ``modes.update_proposal`` (made now if there are none).  ``terms``: a list to which
    the (rows, terms of Eq. 6) of this round are appended (tests).  Returns (proposed,
    accepted).
    """
    n = chains.shape[0]
    if p <= 0 or len(modes) < 2 or n == 0:
        return 0, 0
    go = np.flatnonzero(_anneal.chain_uniforms(streams, 1)[:, 0] < p)
    if go.size == 0:
        return 0, 0
    proposal = modes.proposal or modes.update_proposal(model)
    out = None if terms is None else np.empty((go.size, 8))
    accepted = model._amh_hops(proposal, chains, go.astype(np.int64), streams, out,
                               n_threads)
    if terms is not None:
        terms.append((go, out))
    return int(go.size), int(accepted)
