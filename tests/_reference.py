"""Exact references shared by cyrbm's tests.

Everything here is slow and obvious on purpose: plain NumPy (or plain Python) that
enumerates every state of a tiny model, so each compiled kernel and each estimator is
checked against the truth rather than against a copy of its own formula.
"""
import itertools
import math

import numpy as np
from scipy import stats
from scipy.special import logsumexp

import cyrbm


# ------------------------------------------------------------------ enumeration
def all_states(n):
    """Every 0/1 vector of length n, as rows of a (2**n, n) uint8 array (row i is the
    binary code of i, most significant bit first)."""
    return np.array(list(itertools.product([0, 1], repeat=n)), dtype=np.uint8)


def exact_log_unnormalized(model, v):
    """ln p*(v) by summing over every hidden state (SM08 Eq. 2), float64."""
    W = model.W.astype(np.float64)
    b = model.vbias.astype(np.float64)
    a = model.hbias.astype(np.float64)
    H = all_states(model.n_hidden).astype(np.float64)
    v = np.asarray(v, dtype=np.float64)
    neg_energy = (v @ W) @ H.T + (v @ b)[:, None] + (H @ a)[None, :]
    return np.logaddexp.reduce(neg_energy, axis=1)


def exact_distribution(model):
    """(states, p(v), ln Z) over every visible state, by enumeration."""
    V = all_states(model.n_visible)
    logp = exact_log_unnormalized(model, V)
    log_z = np.logaddexp.reduce(logp)
    return V, np.exp(logp - log_z), log_z


def brute_log_z(W, b, a):
    """ln Z by summing over every joint state (v, h) in NumPy: the obvious reference."""
    D, M = W.shape
    V = all_states(D).astype(np.float64)
    H = all_states(M).astype(np.float64)
    E = V @ W @ H.T + (V @ b)[:, None] + (H @ a)[None, :]   # -energy of every (v, h)
    return float(logsumexp(E))


def tiny_model(n_visible=8, n_hidden=6, scale=1.0, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return cyrbm.RBM(scale * rng.standard_normal((n_visible, n_hidden)),
                     0.5 * rng.standard_normal(n_visible),
                     0.5 * rng.standard_normal(n_hidden), dtype=dtype)


# ------------------------------------------------------------- conditionals
def exact_joint_conditionals(model):
    """(p(h | v) as a 2^D x 2^M matrix, p(v | h) as a 2^M x 2^D matrix): the joint
    exp(-E(v, h)) over every state pair, normalized by rows and by columns (states in
    the order of all_states)."""
    W, b, a = (np.asarray(x, dtype=np.float64) for x in (model.W, model.vbias, model.hbias))
    Vf = all_states(model.n_visible).astype(np.float64)
    Hf = all_states(model.n_hidden).astype(np.float64)
    neg_energy = Vf @ W @ Hf.T + (Vf @ b)[:, None] + (Hf @ a)[None, :]   # (2^D, 2^M)
    given_v = np.exp(neg_energy - logsumexp(neg_energy, axis=1, keepdims=True))
    given_h = np.exp(neg_energy - logsumexp(neg_energy, axis=0, keepdims=True))
    return given_v, given_h.T


def exact_conditionals(model):
    """The conditionals from the joint p(v, h) by enumeration, without the logistic
    formula: (V, p(h_j = 1 | v) for every visible state v, H, p(v_i = 1 | h) for every
    hidden state h), each the share of exp(-E(v, h)) with that unit on."""
    V, H = all_states(model.n_visible), all_states(model.n_hidden)
    h_given_v, v_given_h = exact_joint_conditionals(model)
    return V, h_given_v @ H.astype(np.float64), H, v_given_h @ V.astype(np.float64)


def gibbs_transition(model, k=1):
    """T^k, T(v, v') = sum_h p(h | v) p(v' | h): the distribution of the visible state
    after k block-Gibbs sweeps (row: start state, column: end state), by enumeration."""
    h_given_v, v_given_h = exact_joint_conditionals(model)
    return np.linalg.matrix_power(h_given_v @ v_given_h, k)


def loop_layer_probs(x, W, bias):
    """sigma(bias_j + sum_i x_i W_ij) for each row x, in explicit float64 loops with
    math.exp: the reference for mean-field (probability-valued) inputs."""
    x = np.asarray(x, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    out = np.empty((x.shape[0], W.shape[1]))
    for r in range(x.shape[0]):
        for j in range(W.shape[1]):
            total = float(bias[j])
            for i in range(W.shape[0]):
                total += x[r, i] * W[i, j]
            out[r, j] = 1.0 / (1.0 + math.exp(-total)) if total > -700 else 0.0
    return out


# ---------------------------------------------------------------- gradients
def exact_gradient(model, data):
    """d/dtheta of mean ln p(v) over data, with exact model expectations
    (W, visible biases, hidden biases)."""
    from scipy.special import expit
    W = model.W.astype(np.float64)
    a = model.hbias.astype(np.float64)
    V, probs, _ = exact_distribution(model)
    V = V.astype(np.float64)
    data = np.asarray(data, dtype=np.float64)
    pd = expit(data @ W + a)
    pm = expit(V @ W + a)
    gW = data.T @ pd / len(data) - (V * probs[:, None]).T @ pm
    gb = data.mean(0) - probs @ V
    ga = pd.mean(0) - probs @ pm
    return gW, gb, ga


def mean_log_likelihood(W, b, a, data):
    """mean ln p(v) over data, exactly, by enumeration."""
    m = cyrbm.RBM(W, b, a, dtype=np.float64)
    _, _, log_z = exact_distribution(m)
    return float(np.mean(exact_log_unnormalized(m, data)) - log_z)


# ------------------------------------------------------------- random streams
def xoshiro_reference(state, n):
    """n uniforms of xoshiro256++ (Blackman & Vigna) in plain Python, top 53 bits."""
    mask = (1 << 64) - 1
    s = [int(x) for x in state]
    rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & mask  # noqa: E731
    out = []
    for _ in range(n):
        result = (rotl((s[0] + s[3]) & mask, 23) + s[0]) & mask
        t = (s[1] << 17) & mask
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        out.append((result >> 11) * 2.0 ** -53)
    return out


# ------------------------------------------------------------- goodness of fit
def chi_square_pvalue(samples, probs):
    """Pearson's chi-square of sampled visible states against exact probabilities,
    with states of expected count < 5 pooled into one bin; also the TV distance."""
    n = samples.shape[0]
    codes = samples.astype(np.int64) @ (1 << np.arange(samples.shape[1])[::-1])
    counts = np.bincount(codes, minlength=probs.size)
    expected = n * probs
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    chi2 = np.sum((obs - exp) ** 2 / exp)
    tv = 0.5 * np.abs(counts / n - probs).sum()
    return stats.chi2.sf(chi2, obs.size - 1), tv
