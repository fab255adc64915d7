"""The RBM's kernels against exact answers on models small enough to enumerate."""
import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

import cyrbm
from cyrbm import _gibbs, _kernel_tests, _random
from conftest import all_states, exact_distribution, exact_log_unnormalized, tiny_model


# ------------------------------------------------------------------ random streams
def _xoshiro_reference(state, n):
    """xoshiro256++ in plain Python (Blackman & Vigna), the reference for rng.h."""
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


def test_streams_match_reference_xoshiro():
    states = _random.make_streams(123, "chains", 3)
    expected = [_xoshiro_reference(row, 20) for row in states]
    got = _kernel_tests.uniform(states.copy(), 20)
    np.testing.assert_array_equal(got, np.array(expected))


def test_streams_are_keyed_by_seed_purpose_and_index():
    a = _random.make_streams(5, "chains", 4)
    b = _random.make_streams(5, "chains", 10)
    np.testing.assert_array_equal(a, b[:4])          # more chains leave the first unchanged
    assert not np.array_equal(a, _random.make_streams(6, "chains", 4))
    assert not np.array_equal(a, _random.make_streams(5, "sample", 4))
    assert len({tuple(r) for r in b}) == 10


# ----------------------------------------------------------- deterministic kernels
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 2e-4)])
def test_log_unnormalized_matches_enumeration(dtype, tol):
    model = tiny_model(dtype=dtype)
    V = all_states(model.n_visible)
    np.testing.assert_allclose(model.log_unnormalized(V), exact_log_unnormalized(model, V),
                               rtol=0, atol=tol)
    np.testing.assert_allclose(model.free_energy(V), -model.log_unnormalized(V))


def test_conditionals_match_definitions(model86):
    rng = np.random.default_rng(1)
    V = (rng.random((50, 8)) < 0.5).astype(np.uint8)
    H = (rng.random((50, 6)) < 0.5).astype(np.uint8)
    ph = expit(V @ model86.W + model86.hbias)
    np.testing.assert_allclose(model86.hidden_probs(V), ph, atol=1e-12)
    np.testing.assert_allclose(_gibbs.hidden_probs_binary(model86.W, model86.hbias, V), ph, atol=1e-12)
    np.testing.assert_allclose(model86.visible_probs(H), expit(H @ model86.W.T + model86.vbias),
                               atol=1e-12)
    np.testing.assert_allclose(model86.reconstruct(V), expit(ph @ model86.W.T + model86.vbias),
                               atol=1e-12)


def test_pseudo_log_likelihood_matches_enumeration(model86):
    V = all_states(8)[::7]
    logp = exact_log_unnormalized(model86, all_states(8))
    index = {tuple(v): i for i, v in enumerate(all_states(8))}
    expected = []
    for v in V:
        total = 0.0
        for i in range(8):
            u = v.copy()
            u[i] ^= 1
            a, b = logp[index[tuple(v)]], logp[index[tuple(u)]]
            total += a - np.logaddexp(a, b)
        expected.append(total)
    np.testing.assert_allclose(model86.pseudo_log_likelihood(V), expected, atol=1e-10)


def test_binary_products_on_wide_layers_match_numpy():
    # widths that exercise full register tiles, the overlapping tail and tiny remainders
    rng = np.random.default_rng(2)
    for n_visible, n_hidden in [(784, 500), (100, 77), (33, 5), (200, 1030)]:
        for dtype in (np.float32, np.float64):
            m = cyrbm.RBM(rng.standard_normal((n_visible, n_hidden)) * 0.1,
                          rng.standard_normal(n_visible), rng.standard_normal(n_hidden), dtype=dtype)
            V = (rng.random((37, n_visible)) < 0.2).astype(np.uint8)
            ref = expit(V @ m.W.astype(np.float64) + m.hbias)
            tol = 1e-5 if dtype == np.float32 else 1e-12
            for threads in (1, 2):
                np.testing.assert_allclose(_gibbs.hidden_probs_binary(m.W, m.hbias, V, threads),
                                           ref, atol=tol)
            logu = V @ m.vbias.astype(np.float64) + np.logaddexp(0, V @ m.W.astype(np.float64) + m.hbias).sum(1)
            np.testing.assert_allclose(m.log_unnormalized(V), logu, rtol=1e-5 if dtype == np.float32 else 1e-12)


# -------------------------------------------------------------- the Gibbs sampler
def _chi_square_pvalue(samples, probs):
    """Pearson's chi-square of sampled visible states against exact probabilities,
    with states of expected count < 5 pooled into one bin."""
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


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gibbs_long_run_distribution_matches_exact(dtype):
    model = tiny_model(scale=1.0, seed=3, dtype=dtype)
    _, probs, _ = exact_distribution(model)
    samples = model.sample(40000, steps=30, seed=11)
    pvalue, tv = _chi_square_pvalue(samples, probs)
    # 40,000 independent chains: a correct sampler gives p >= 1e-4 except once in 10,000
    # seeds; the seed is fixed, so this cannot flake.  TV distance for reference.
    assert pvalue > 1e-4, (pvalue, tv)
    assert tv < 0.03
    # the same test must reject a slightly different model (power)
    other = cyrbm.RBM(model.W, model.vbias, model.hbias + 0.4, dtype=dtype)
    _, other_probs, _ = exact_distribution(other)
    assert _chi_square_pvalue(samples, other_probs)[0] < 1e-8


def test_sample_from_data_start_and_thread_independence(model86):
    init = all_states(8)[:5]
    a = model86.sample(300, steps=5, seed=4, init=init, threads=1)
    b = model86.sample(300, steps=5, seed=4, init=init, threads=2)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(model86.sample(7, steps=0, init=init), init[np.arange(7) % 5])
    assert not np.array_equal(a, model86.sample(300, steps=5, seed=5, init=init))


# ------------------------------------------------------------- CD statistics
def _exact_gradient(model, data):
    """d/dtheta of mean ln p(v) over data, with exact model expectations."""
    W = model.W.astype(np.float64)
    V, probs, _ = exact_distribution(model)
    V = V.astype(np.float64)
    pd = expit(data @ W + model.hbias)
    pm = expit(V @ W + model.hbias)
    gW = data.T @ pd / len(data) - (V * probs[:, None]).T @ pm
    gb = data.mean(0) - probs @ V
    ga = pd.mean(0) - probs @ pm
    return gW, gb, ga


def _mean_log_likelihood(W, b, a, data):
    m = cyrbm.RBM(W, b, a, dtype=np.float64)
    _, _, log_z = exact_distribution(m)
    return float(np.mean(exact_log_unnormalized(m, data)) - log_z)


def test_exact_expectations_give_the_log_likelihood_gradient(model86):
    rng = np.random.default_rng(5)
    data = (rng.random((40, 8)) < 0.4).astype(np.float64)
    gW, gb, ga = _exact_gradient(model86, data)
    eps = 1e-5
    W, b, a = model86.W, model86.vbias, model86.hbias
    for (i, j) in [(0, 0), (3, 2), (7, 5)]:
        Wp, Wm = W.copy(), W.copy()
        Wp[i, j] += eps
        Wm[i, j] -= eps
        fd = (_mean_log_likelihood(Wp, b, a, data) - _mean_log_likelihood(Wm, b, a, data)) / (2 * eps)
        assert abs(fd - gW[i, j]) < 1e-7
    for i in (0, 5):
        bp, bm = b.copy(), b.copy()
        bp[i] += eps
        bm[i] -= eps
        fd = (_mean_log_likelihood(W, bp, a, data) - _mean_log_likelihood(W, bm, a, data)) / (2 * eps)
        assert abs(fd - gb[i]) < 1e-7
    ap, am = a.copy(), a.copy()
    ap[1] += eps
    am[1] -= eps
    fd = (_mean_log_likelihood(W, b, ap, data) - _mean_log_likelihood(W, b, am, data)) / (2 * eps)
    assert abs(fd - ga[1]) < 1e-7


def test_cd_statistics_with_exact_model_samples_estimate_the_exact_gradient(model86):
    """PCD-1 started from exact samples of the model: the chains stay exactly
    distributed, so the kernel's statistics are an unbiased estimate of the exact
    log-likelihood gradient; checked per parameter in standard errors."""
    rng = np.random.default_rng(6)
    data = (rng.random((40, 8)) < 0.4).astype(np.uint8)
    B = 20000
    V, probs, _ = exact_distribution(model86)
    v_data = np.ascontiguousarray(data[np.arange(B) % 40])
    chains = np.ascontiguousarray(V[rng.choice(len(V), size=B, p=probs)])
    W, b, a = model86.W, model86.vbias, model86.hbias
    dW, db, da = np.empty_like(W), np.empty_like(b), np.empty_like(a)
    streams = _random.make_streams(7, "chains", B)
    _gibbs.cd_statistics((W, b, a), v_data, chains, streams, (dW, db, da),
                         dict(k=1, persistent=True, learning_rate=0.0, momentum=0.0,
                              weight_decay=0.0, scale=1.0, n_threads=2))
    # 1) the kernel's arithmetic, on the states it sampled (written back to `chains`)
    pd = expit(v_data @ W + a)
    pk = expit(chains @ W + a)
    np.testing.assert_allclose(dW, v_data.T @ pd - chains.T @ pk, atol=1e-8)
    np.testing.assert_allclose(db, v_data.sum(0, dtype=float) - chains.sum(0, dtype=float), atol=1e-8)
    np.testing.assert_allclose(da, pd.sum(0) - pk.sum(0), atol=1e-8)
    # 2) statistically: model term per parameter against its exact expectation
    contrib = (chains[:, :, None] * pk[:, None, :]).reshape(B, -1)
    se = contrib.std(0, ddof=1) / np.sqrt(B)
    gW, gb, ga = _exact_gradient(model86, data.astype(np.float64))
    z = (dW / B - gW).ravel() / se
    assert np.max(np.abs(z)) < 5, np.max(np.abs(z))
    zb = (db / B - gb) / (chains.std(0, ddof=1) / np.sqrt(B))
    za = (da / B - ga) / (pk.std(0, ddof=1) / np.sqrt(B))
    assert np.max(np.abs(zb)) < 5 and np.max(np.abs(za)) < 5
    # power: against the gradient of a slightly different model the same check fails
    other = cyrbm.RBM(W + 0.1, b, a, dtype=np.float64)
    oW, _, _ = _exact_gradient(other, data.astype(np.float64))
    assert np.max(np.abs((dW / B - oW).ravel() / se)) > 10


def test_cd_k_statistics_use_k_sweeps():
    model = tiny_model(scale=0.5, seed=8)
    data = np.ascontiguousarray(all_states(8)[::3])
    B = data.shape[0]
    W, b, a = model.W, model.vbias, model.hbias
    out = [np.empty_like(W), np.empty_like(b), np.empty_like(a)]
    ends = []
    for k in (1, 3):
        chain = np.empty_like(data)
        _gibbs.cd_statistics((W, b, a), data, chain, _random.make_streams(9, "chains", B), out,
                             dict(k=k, persistent=False, learning_rate=0.0, momentum=0.0,
                                  weight_decay=0.0, scale=1.0, n_threads=1))
        ends.append(chain.copy())
    # same streams: k=3 continues the k=1 chain, so the first sweep's draws are shared,
    # and the final states differ
    assert not np.array_equal(ends[0], ends[1])
