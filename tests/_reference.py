"""Exact references shared by cyrbm's tests.

Everything here is slow and obvious on purpose: plain NumPy (or plain Python) that
enumerates every state of a tiny model, so each compiled kernel and each estimator is
checked against the truth rather than against a copy of its own formula.
"""
import itertools
import math

import numpy as np
from scipy import stats
from scipy.special import expit, logsumexp

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


def ais_streams_reference(seed, runs, key=0):
    """The AIS stream layout derived from NumPy directly, as cyrbm/_random.pyx and
    cyrbm.estimators.annealing.ais_streams document it: lane l of run r is stream 8r + l of
    SeedSequence(seed, spawn_key=(5, key)) (purpose "ais" is 5), four uint64 words per
    stream in generate_state order, stored word-major: word w of lane l at column 8w + l.
    (make_streams replaces an all-zero state, probability 2^-256, which is ignored here.)"""
    words = np.random.SeedSequence(seed, spawn_key=(5, key)).generate_state(32 * runs,
                                                                             dtype=np.uint64)
    out = np.empty((runs, 32), dtype=np.uint64)
    for r in range(runs):
        for lane in range(8):
            for w in range(4):
                out[r, 8 * w + lane] = words[4 * (8 * r + lane) + w]
    return out


# ------------------------------------------------------------- goodness of fit
def exact_draws(model, n, seed):
    """n independent exact draws of v from p(v), by NumPy's inverse CDF over the
    enumeration (independent of every sampler in cyrbm)."""
    V, p, _ = exact_distribution(model)
    return V[np.random.default_rng(seed).choice(len(V), size=n, p=p)]


def state_codes(states):
    """Row index of each 0/1 state in all_states (most significant bit first)."""
    states = np.asarray(states)
    return states.astype(np.int64) @ (1 << np.arange(states.shape[1])[::-1])


def total_variation(p, q):
    return 0.5 * float(np.abs(np.asarray(p) - np.asarray(q)).sum())


def chi_square_pvalue(samples, probs):
    """Pearson's chi-square of sampled states against exact probabilities over
    all_states; cells of expected count < 5 are pooled into one cell, and that cell, if
    its own expectation is still below 5, into the smallest other cell.  Returns the
    p-value and the total variation distance of the empirical distribution."""
    n = samples.shape[0]
    probs = np.asarray(probs, dtype=np.float64)
    counts = np.bincount(state_codes(samples), minlength=probs.size)
    if counts.size > probs.size:                 # a state outside the enumeration
        return 0.0, 1.0
    expected = n * probs
    small = expected < 5
    obs, exp = list(counts[~small]), list(expected[~small])
    pooled_obs, pooled_exp = counts[small].sum(), expected[small].sum()
    tv = total_variation(counts / n, probs)
    if pooled_exp == 0 and pooled_obs > 0:       # a state of probability 0 occurred
        return 0.0, tv
    if pooled_exp > 0:
        if pooled_exp < 5 and exp:
            i = int(np.argmin(exp))
            obs[i] += pooled_obs
            exp[i] += pooled_exp
        else:
            obs.append(pooled_obs)
            exp.append(pooled_exp)
    obs, exp = np.array(obs, dtype=np.float64), np.array(exp)
    chi2 = np.sum((obs - exp) ** 2 / exp)
    return float(stats.chi2.sf(chi2, obs.size - 1)), tv


#: Significance level of the stationarity check: the chance that a correct sampler
#: fails at a seed picked at random.  Seeds are fixed, so a test cannot flake; a seed
#: must not be re-chosen to make a failing sampler pass.
SIGNIFICANCE = 1e-4
#: Draws per check: enough that a distribution at total variation ~0.025 from the target
#: is rejected at SIGNIFICANCE (the power check below asserts it each time).
DRAWS = 20000


def slightly_different(model, shift=0.08):
    """The default wrong model of the power check: every visible bias + shift (total
    variation about 0.03 from p(v) on the 6 x 4 and 4 x 6 test models)."""
    return cyrbm.RBM(model.W, np.asarray(model.vbias, np.float64) + shift, model.hbias,
                     dtype=np.float64)


def check_sampler(sample, model, *, target=None, wrong=None, n=DRAWS, seed=0,
                  alpha=SIGNIFICANCE, max_tv=0.05):
    """The shared stationarity check of every sampler, against enumeration.

    sample : callable (n, seed) -> (n, n_visible) 0/1 states; the draws of the sampler
        under test with that seed (after however many transitions from whatever start
        the caller chose).
    model : the RBM whose distribution the draws must follow.
    target : callable RBM -> probabilities over all_states(n_visible); default p(v) by
        enumeration (exact_distribution).  For k Gibbs sweeps from a fixed start, say,
        the row of gibbs_transition(model, k).
    wrong : distributions the draws must NOT pass as (RBMs, turned into distributions by
        ``target``, or probability vectors); default [slightly_different(model)].

    1. Goodness of fit: Pearson's chi-square of the n draws against target(model), small
       cells pooled; the p-value must be at least ``alpha``.
    2. Power: each wrong distribution lies within ``max_tv`` total variation of the
       target (so it is only slightly wrong), and the same test must reject it
       (p-value below ``alpha``): a check that cannot fail is not a check.

    Returns (p-value, total variation distance of the empirical distribution).
    """
    target = target or (lambda m: exact_distribution(m)[1])
    states = np.asarray(sample(n, seed))
    assert states.shape == (n, model.n_visible), states.shape
    assert np.all((states == 0) | (states == 1))
    p = target(model)
    pvalue, tv = chi_square_pvalue(states, p)
    assert pvalue >= alpha, (f"the draws do not follow the exact distribution: chi-square "
                             f"p = {pvalue:.3g} < {alpha} (total variation {tv:.4f})")
    for other in (wrong if wrong is not None else [slightly_different(model)]):
        q = target(other) if isinstance(other, cyrbm.RBM) else np.asarray(other)
        distance = total_variation(p, q)
        assert 0 < distance <= max_tv, f"the wrong distribution is {distance:.4f} away"
        p_wrong, _ = chi_square_pvalue(states, q)
        assert p_wrong < alpha, (f"no power: a distribution {distance:.4f} away in total "
                                 f"variation passes too (p = {p_wrong:.3g})")
    return pvalue, tv


# ------------------------------------------------------------ annealing model
def tempered_transition(model, base_biases, beta):
    """The visible-to-visible matrix of one block-Gibbs transition T_beta of AIS from a
    base-rate model (SM08 Eq. 15-17): T[v, v'] = sum_h p_beta(h | v) p_beta(v' | h),
    with p_beta(v, h) ~ exp((1 - beta) bA.v + beta (b.v + v W h + a.h)); states in the
    order of all_states."""
    W, b, a = (np.asarray(x, dtype=np.float64) for x in (model.W, model.vbias, model.hbias))
    bA = np.asarray(base_biases, dtype=np.float64)
    Vf = all_states(model.n_visible).astype(np.float64)
    Hf = all_states(model.n_hidden).astype(np.float64)
    neg = (1.0 - beta) * (Vf @ bA)[:, None] + beta * (
        Vf @ W @ Hf.T + (Vf @ b)[:, None] + (Hf @ a)[None, :])
    h_given_v = np.exp(neg - logsumexp(neg, axis=1, keepdims=True))
    v_given_h = np.exp(neg - logsumexp(neg, axis=0, keepdims=True)).T
    return h_given_v @ v_given_h


def annealing_model_distribution(model, base_biases, betas):
    """p_ann over every visible state: x_0 ~ p_0 (the base rate), x_k ~ T_k(. | x_{k-1})
    for k = 1 .. K (beta_K = 1): the distribution RAISE's weights are unbiased for."""
    bA = np.asarray(base_biases, dtype=np.float64)
    Vf = all_states(model.n_visible).astype(np.float64)
    p = np.exp(Vf @ bA - np.sum(np.logaddexp(0.0, bA)))
    for beta in np.asarray(betas, dtype=np.float64)[1:]:
        p = p @ tempered_transition(model, bA, beta)
    return p


def state_index(v):
    """Row of all_states holding the 0/1 vector v."""
    return int("".join(str(int(x)) for x in v), 2)
# ------------------------------------------------------------- two-layer DBNs
def tiny_dbn(sizes=(10, 8, 6), scale=1.0, seed=1, dtype=np.float64):
    """A DBN [RBM1 (v, h1), top RBM (h1, h2)] as a list of two RBMs with random weights."""
    rng = np.random.default_rng(seed)
    D, H1, H2 = sizes
    low = cyrbm.RBM(scale * rng.standard_normal((D, H1)), 0.5 * rng.standard_normal(D),
                    0.5 * rng.standard_normal(H1), dtype=dtype)
    top = cyrbm.RBM(scale * rng.standard_normal((H1, H2)), 0.5 * rng.standard_normal(H1),
                    0.5 * rng.standard_normal(H2), dtype=dtype)
    return [low, top]


def dbn_log_joint(layers, v):
    """ln P*(v, h1) for every h1 (rows of all_states(H1)): ln P(v | h1) + ln P*(h1),
    the top layer summed out (MS09 Eq. 16), in plain NumPy."""
    low, top = layers
    W1, b1 = low.W.astype(np.float64), low.vbias.astype(np.float64)
    W2, b2, c2 = (top.W.astype(np.float64), top.vbias.astype(np.float64),
                  top.hbias.astype(np.float64))
    H = all_states(low.n_hidden).astype(np.float64)
    Y = H @ W1.T + b1
    v = np.asarray(v, dtype=np.float64)
    return (Y * v).sum(1) - np.logaddexp(0, Y).sum(1) + H @ b2 + np.logaddexp(0, H @ W2 + c2).sum(1)


def dbn_exact(layers, V):
    """(exact ln P(v) for each row of V, exact ln Z of the top RBM), by enumerating h1
    and, for Z, both layers of the top RBM (brute_log_z)."""
    top = layers[1]
    log_z = brute_log_z(top.W.astype(np.float64), top.vbias.astype(np.float64),
                        top.hbias.astype(np.float64))
    return np.array([logsumexp(dbn_log_joint(layers, v)) for v in V]) - log_z, log_z


def dbn_variational_bound(layers, V, log_z):
    """SM08 Eq. 19-24's bound for two layers, with the expectation summed exactly:
    sum_h1 Q(h1 | v) ln P*(v, h1) + H(Q) - ln Z, Q = sigma(W1^T v + c1) factorial."""
    low = layers[0]
    H = all_states(low.n_hidden).astype(np.float64)
    out = []
    for v in V:
        q = expit(np.asarray(v, np.float64) @ low.W.astype(np.float64) + low.hbias)
        logq = H @ np.log(q) + (1 - H) @ np.log1p(-q)
        entropy = -np.sum(q * np.log(q) + (1 - q) * np.log1p(-q))
        out.append(np.exp(logq) @ dbn_log_joint(layers, v) + entropy - log_z)
    return np.array(out)


def ratio_transition(model_a, model_b, beta):
    """The visible-to-visible matrix of one transition T_beta of ratio AIS between two
    RBMs (SM08 Sec. 3.2, Eq. 15-17): p_beta(v, hA, hB) ~ exp(-(1 - beta) E_A(v, hA)
    - beta E_B(v, hB)) is the RBM with both hidden layers side by side, weights
    [(1 - beta) W_A, beta W_B], visible biases (1 - beta) b_A + beta b_B and hidden
    biases [(1 - beta) a_A, beta a_B]; its block-Gibbs transition by enumeration."""
    A = [np.asarray(x, dtype=np.float64) for x in (model_a.W, model_a.vbias, model_a.hbias)]
    B = [np.asarray(x, dtype=np.float64) for x in (model_b.W, model_b.vbias, model_b.hbias)]
    mixed = cyrbm.RBM(np.hstack([(1.0 - beta) * A[0], beta * B[0]]),
                      (1.0 - beta) * A[1] + beta * B[1],
                      np.concatenate([(1.0 - beta) * A[2], beta * B[2]]), dtype=np.float64)
    return gibbs_transition(mixed)


def ratio_annealing_model_distribution(model_a, model_b, betas):
    """p_ann over every visible state on the path of ratio AIS: x_0 ~ p_A exactly, then
    x_k ~ T_k(. | x_{k-1}) for k = 1 .. K (ratio_transition): what RAISE from base
    model A is unbiased for."""
    p = exact_distribution(model_a)[1]
    for beta in np.asarray(betas, dtype=np.float64)[1:]:
        p = p @ ratio_transition(model_a, model_b, beta)
    return p


# ------------------------------------------------------------------ mode hopping
def amh_hop_reference(model, chains, modes, p, streams, *, accept_rule=None, terms=None):
    """One round of AMH-p proposals (Hu & Yu Sec. 4, Eq. 6-7) written in NumPy over chains:
    the reference ``cyrbm.training.modehop.hop`` (the compiled kernel) matches, drawing the same
    uniforms from the same streams (the decision to hop, then per hopping chain: the
    pick of i, of j, the acceptance, the D draws of v').  ``accept_rule`` replaces the
    log acceptance ratio by a function of the dict of its terms (the wrong-rule check);
    ``terms``, a list, receives (rows, terms as an (n, 8) array).  Returns (proposed,
    accepted); ``chains`` and ``streams`` are updated in place."""
    from cyrbm import _anneal
    n, D = chains.shape
    if p <= 0 or len(modes) < 2 or n == 0:
        return 0, 0
    go = np.flatnonzero(_anneal.chain_uniforms(streams, 1)[:, 0] < p)
    if go.size == 0:
        return 0, 0
    P, AT, spA, logH, _ = modes.proposal or modes.update_proposal(model)   # P = sigma(A)
    sub = streams[go]
    u = _anneal.chain_uniforms(sub, D + 3)
    streams[go] = sub
    v = chains[go].astype(np.float64)

    def log_gtilde(x):                       # ln g~(i, x) for every row x and mode i
        return x @ AT - spA

    def log_ghat(lg):                        # Eq. 7 with p(i) uniform
        return lg - logsumexp(lg, axis=1, keepdims=True)

    def pick(logp, uu):                      # inverse CDF
        cdf = np.cumsum(np.exp(logp), axis=1)
        return np.minimum((cdf < (uu * cdf[:, -1])[:, None]).sum(axis=1), logp.shape[1] - 1)

    def log_p(x):                            # ln P*(x) (SM08 Eq. 2), float64
        W, b, c = (np.asarray(a, np.float64) for a in (model.W, model.vbias, model.hbias))
        return x @ b + np.logaddexp(0.0, x @ W + c).sum(axis=1)

    lg_v = log_gtilde(v)
    lh_v = log_ghat(lg_v)
    i = pick(lh_v, u[:, 0])
    j = pick(logH[i], u[:, 1])
    v_new = (u[:, 3:] < P[j]).astype(np.float64)
    lg_new = log_gtilde(v_new)
    lh_new = log_ghat(lg_new)
    rows = np.arange(go.size)
    t = {"log_p_new": log_p(v_new), "ghat_new_j": lh_new[rows, j], "H_ji": logH[j, i],
         "gtilde_i_old": lg_v[rows, i], "log_p_old": log_p(v), "ghat_old_i": lh_v[rows, i],
         "H_ij": logH[i, j], "gtilde_j_new": lg_new[rows, j]}
    if terms is not None:
        terms.append((go, np.stack(list(t.values()), axis=1)))
    if accept_rule is None:
        log_r = ((t["log_p_new"] + t["ghat_new_j"] + t["H_ji"] + t["gtilde_i_old"])
                 - (t["log_p_old"] + t["ghat_old_i"] + t["H_ij"] + t["gtilde_j_new"]))
    else:
        log_r = accept_rule(t)
    ok = np.log(np.maximum(u[:, 2], 1e-300)) < log_r
    chains[go[ok]] = v_new[ok].astype(np.uint8)
    return int(go.size), int(ok.sum())


# ------------------------------------------- parallel tempering of the other unit types
def swap_log_ratio(beta_lo, beta_hi, e_lo, x_lo, e_hi, x_hi):
    """ln r of CRI10 Eq. 5 for the tempered family ln p*_beta(v) = g(v) + beta e(v) +
    sum_j softplus(beta x_j(v)) (``_tempered_parts`` of GaussianRBM and SRBM), one per
    chain: ln p*_lo(hi) + ln p*_hi(lo) - ln p*_lo(lo) - ln p*_hi(hi), g cancelling
    (models.tempering.swap_log_ratio before the engine driver)."""
    return ((beta_lo - beta_hi) * (e_hi - e_lo) + _softplus_sum(beta_lo, x_hi)
            + _softplus_sum(beta_hi, x_lo) - _softplus_sum(beta_lo, x_lo)
            - _softplus_sum(beta_hi, x_hi))


def _softplus_sum(beta, x):
    y = beta * x
    return np.sum(np.maximum(y, 0.0) + np.log1p(np.exp(-np.abs(y))), axis=1)


def tempered_states_rounds(model, v, streams, swap_streams, temps, accepted, rounds,
                           n_threads=1):
    """``rounds`` rounds of TemperedStates as it ran in NumPy before the engine driver
    (_tempering.gauss_pt_sweeps / srbm_pt_sweeps): per temperature k the chains m K1 + k
    through the class's ``_sweeps(beta=temps[k])``, then per ladder the swaps from the
    top down with K1 - 1 uniforms of its swap stream (``_anneal.chain_uniforms``), ln r
    from ``_tempered_parts`` (BLAS products).  Everything INOUT.  Returns the smallest
    |u - min(1, r)| met: how near a decision came to its threshold."""
    from cyrbm import _anneal
    K1 = len(temps)
    order = np.arange(v.shape[0]).reshape(-1, K1)
    margin = np.inf
    for _ in range(rounds):
        for k in range(K1):
            rows = order[:, k]
            vv, s = v[rows], streams[rows]
            model._sweeps(vv, s, 1, 2, n_threads, beta=float(temps[k]))
            v[rows], streams[rows] = vv, s
        if K1 < 2:
            continue
        K = K1 - 1
        u = _anneal.chain_uniforms(swap_streams, K)
        _, e, x = model._tempered_parts(v)
        for i, k in enumerate(range(K - 1, -1, -1)):
            lo, hi = order[:, k], order[:, k + 1]
            p = np.exp(np.minimum(swap_log_ratio(temps[k], temps[k + 1], e[lo], x[lo],
                                                 e[hi], x[hi]), 0.0))
            margin = min(margin, float(np.min(np.abs(u[:, i] - p))))
            take = u[:, i] < p
            a, b = lo[take], hi[take]
            for arr in (v, e, x):
                arr[a], arr[b] = arr[b], arr[a]
            accepted[:, k] += take
    return margin
