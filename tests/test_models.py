"""cyrbm.models.rbm.RBM (and the kernels behind it) against exact answers on models small
enough to enumerate."""
import numpy as np
import pytest
from scipy.special import expit

import cyrbm
from cyrbm import _gibbs
from _reference import (all_states, check_sampler, exact_conditionals, exact_draws,
                        exact_log_unnormalized, loop_layer_probs, tiny_model)


# ----------------------------------------------------------- deterministic kernels
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 2e-4)])
def test_log_unnormalized_matches_enumeration(dtype, tol):
    model = tiny_model(dtype=dtype)
    V = all_states(model.n_visible)
    np.testing.assert_allclose(model.log_unnormalized(V), exact_log_unnormalized(model, V),
                               rtol=0, atol=tol)
    np.testing.assert_allclose(model.free_energy(V), -model.log_unnormalized(V))


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_conditionals_match_the_joint_distribution(dtype, tol):
    """hidden_probs, visible_probs and the binary kernel against the conditionals of
    p(v, h) by enumeration (every visible and every hidden state of an 8 x 6 model); the
    mean-field inputs of reconstruct against explicit float64 loops."""
    model = tiny_model(dtype=dtype)
    V, ph_exact, H, pv_exact = exact_conditionals(model)
    np.testing.assert_allclose(model.hidden_probs(V), ph_exact, rtol=0, atol=tol)
    np.testing.assert_allclose(_gibbs.hidden_probs_binary(model.W, model.hbias, V), ph_exact,
                               rtol=0, atol=tol)
    np.testing.assert_allclose(model.visible_probs(H), pv_exact, rtol=0, atol=tol)
    W, b, a = (np.asarray(x, dtype=np.float64) for x in (model.W, model.vbias, model.hbias))
    rng = np.random.default_rng(1)
    P = rng.random((20, 8))                      # mean-field inputs, not 0/1
    np.testing.assert_allclose(model.hidden_probs(P, probabilities=True),
                               loop_layer_probs(P, W, a), rtol=0, atol=tol)
    for v in (P, V[::13]):
        expected = loop_layer_probs(loop_layer_probs(v, W, a), W.T, b)
        np.testing.assert_allclose(model.reconstruct(v, probabilities=v is P), expected,
                                   rtol=0, atol=tol)


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
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("start", ["random bits, 30 sweeps", "exact draws, 1 sweep"])
def test_sample_is_stationary(dtype, start):
    """RBM.sample (block Gibbs) passes the shared stationarity check on a 6 x 4 model:
    from uniform random bits after 30 sweeps, and one sweep from exact draws of p(v)
    (the transition leaves p(v) invariant).  One thread: the draws are the same for any
    number (test_sample_from_data_start_and_thread_independence)."""
    model = tiny_model(6, 4, seed=3, dtype=dtype)
    if start.startswith("random"):
        def sample(n, seed):
            return model.sample(n, steps=30, seed=seed, threads=1)
    else:
        def sample(n, seed):
            return model.sample(n, steps=1, seed=seed, init=exact_draws(model, n, seed + 1),
                                threads=1)
    check_sampler(sample, model)


def test_sample_from_data_start_and_thread_independence(model86):
    init = all_states(8)[:5]
    a = model86.sample(300, steps=5, seed=4, init=init, threads=1)
    b = model86.sample(300, steps=5, seed=4, init=init, threads=2)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(model86.sample(7, steps=0, init=init), init[np.arange(7) % 5])
    assert not np.array_equal(a, model86.sample(300, steps=5, seed=5, init=init))


def test_training_a_given_model_leaves_the_callers_arrays_alone():
    """RBM copies its parameters, so Trainer.fit(X, model=m) trains a copy of m."""
    rng = np.random.default_rng(0)
    W = 0.01 * rng.standard_normal((6, 4)).astype(np.float32)
    b, c = np.zeros(6, np.float32), np.zeros(4, np.float32)
    W0 = W.copy()
    m = cyrbm.RBM(W, b, c)
    X = (rng.random((20, 6)) < 0.5).astype(np.uint8)
    fit = cyrbm.Trainer(4, epochs=2, batch_size=10, monitor_size=0, progress=False,
                        dtype=np.float32).fit(X, model=m)
    assert not np.array_equal(fit.W, W0)           # it trained
    np.testing.assert_array_equal(W, W0)           # the caller's array
    np.testing.assert_array_equal(m.W, W0)         # and the given model
    assert not np.shares_memory(m.W, W)
