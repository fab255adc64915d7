"""Tests for cyrbm.estimators.annealing: exact ln Z, AIS (base rate and ratio), schedules, results.

Monte Carlo checks use fixed seeds (so they cannot flake) and state their tolerance in
standard errors; each is paired with a deliberately broken estimator that the same
tolerance must reject, so the tests can fail.
"""
import json
import math
import os
import sys
import time

import numpy as np
import pytest
from scipy.special import logsumexp

from cyrbm import RBM, _anneal, _kernel_tests
from cyrbm.estimators.annealing import (AISResult, AnnealingError, Annealer, ScheduleError, ais_streams,
                             base_rate_biases, exact_log_partition, logmeanexp, make_schedule)
from cyrbm.errors import CyrbmError, DataError, ModelFileError, ModelMismatchError
from _reference import (ais_streams_reference, all_states, brute_log_z, check_sampler,
                        exact_distribution)

LN2 = math.log(2.0)


# ----------------------------------------------------------------------------- helpers
def random_rbm(D, M, seed, scale=1.0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return RBM(scale * rng.standard_normal((D, M)), rng.standard_normal(D),
               rng.standard_normal(M), dtype=dtype)


def one_sentence(exc):
    msg = str(exc)
    assert isinstance(exc, CyrbmError), type(exc)
    assert msg and "\n" not in msg and msg.endswith("."), msg
    return msg


def softplus(x):
    return np.logaddexp(0.0, x)


def log_p_star(beta, v, bA, model):
    """ln p*_beta(v) of the base-rate annealing path (SM08 Sec. 3.3), hidden units of the
    model summed out: (1-beta) bA.v + beta b.v + sum_j softplus(beta (W^T v + a)_j)."""
    W, b, a = (np.asarray(x, dtype=np.float64) for x in (model.W, model.vbias, model.hbias))
    return (1 - beta) * v @ bA + beta * (v @ b) + softplus(beta * (v @ W + a)).sum(axis=-1)


@pytest.fixture(scope="module")
def small():
    """A 12 x 10 RBM with exact ln Z, and data drawn from it."""
    model = random_rbm(12, 10, seed=5, scale=0.8)
    data = model.sample(300, steps=200, seed=1)
    return model, exact_log_partition(model), data


# ---------------------------------------------------------------------------- exact
@pytest.mark.parametrize("D,M", [(1, 1), (5, 3), (3, 7), (8, 8), (10, 6), (6, 11), (2, 13)])
def test_exact_matches_brute_force(D, M):
    for seed in range(3):
        model = random_rbm(D, M, seed=seed, scale=1.5)
        expected = brute_log_z(model.W, model.vbias, model.hbias)
        assert abs(exact_log_partition(model) - expected) < 1e-9


def test_exact_float32_model_uses_its_stored_values():
    model = random_rbm(9, 7, seed=2, dtype=np.float32)
    W, b, a = (np.asarray(x, dtype=np.float64) for x in (model.W, model.vbias, model.hbias))
    assert abs(exact_log_partition(model) - brute_log_z(W, b, a)) < 1e-9


def test_exact_large_weights_are_stable():
    # big activations: softplus and the log-sum-exp must not overflow
    model = random_rbm(8, 9, seed=3, scale=40.0)
    assert abs(exact_log_partition(model) - brute_log_z(model.W, model.vbias, model.hbias)) < 1e-9


def test_exact_wide_layer_of_zero_inputs_does_not_overflow():
    # 1100 units at input 0 each give a factor 1 + e^0 = 2: a block of 1024 makes 2^128
    # per lane, and the 8 lanes' product 2^1024 would overflow to inf if taken at once
    model = RBM(np.zeros((6, 1100)), np.zeros(6), np.zeros(1100))
    assert exact_log_partition(model) == pytest.approx(1106 * np.log(2), rel=1e-13)
    assert model.pseudo_log_likelihood(np.zeros((1, 6), np.uint8))[0] == \
        pytest.approx(6 * np.log(0.5), rel=1e-13)


def test_exact_many_chunks_and_refreshes():
    # 2^16 states: several chunks of 2^12, each with exact recomputations every 1024 steps
    model = random_rbm(40, 16, seed=4, scale=0.3)
    H = all_states(16).astype(np.float64)
    f = H @ model.hbias + softplus(H @ model.W.T + model.vbias).sum(axis=1)
    assert abs(exact_log_partition(model) - logsumexp(f)) < 1e-9


def test_exact_same_for_any_thread_count():
    model = random_rbm(30, 17, seed=6, scale=0.2)
    assert exact_log_partition(model, threads=1) == exact_log_partition(model, threads=2)


def test_exact_refuses_too_large_with_an_estimate():
    model = random_rbm(60, 40, seed=0, scale=0.01)
    with pytest.raises(AnnealingError) as info:
        exact_log_partition(model)
    msg = one_sentence(info.value)
    assert "2^40" in msg and "limit is 30" in msg and "about" in msg


# ---------------------------------------------------------------- kernel vs reference
def reference_ais(model, bA, betas, seed, runs):
    """AIS from a base rate in plain NumPy, drawing the same random numbers as the
    compiled kernel (float64 models): each run has 8 xoshiro lanes; a layer of n units
    takes ceil(n / 8) draws of 8 lanes per half-step, unit u using lane u % 8 of draw
    u // 8, as a 52-bit uniform; unit on when u (1 + t) < (x >= 0 ? 1 : t), t = exp(-|x|)."""
    W, b, a = (np.asarray(x, dtype=np.float64) for x in (model.W, model.vbias, model.hbias))
    D, M = W.shape
    streams = ais_streams(seed, runs)

    def uniforms(n):
        draws = _kernel_tests.xoshiro_lanes(streams, -(-n // 8))        # (runs, draws, 8)
        return ((draws >> np.uint64(12)).astype(np.float64) * 2.0 ** -52).reshape(runs, -1)[:, :n]

    def bernoulli(x, u):
        t = np.exp(-np.abs(x))
        return (u * (1 + t) < np.where(x >= 0, 1.0, t)).astype(np.float64)

    v = bernoulli(np.broadcast_to(bA, (runs, D)), uniforms(D))
    logw = np.zeros(runs)
    K = len(betas) - 1
    for k in range(1, K + 1):
        bp, bc = betas[k - 1], betas[k]
        logw += log_p_star(bc, v, bA, model) - log_p_star(bp, v, bA, model)
        if k < K:
            h = bernoulli(bc * (v @ W + a), uniforms(M))
            v = bernoulli((1 - bc) * bA + bc * (h @ W.T + b), uniforms(D))
    return logw, v.astype(np.uint8)


def test_ais_streams_follow_the_documented_layout():
    """The streams of the runs (key 0) and of the ratio's starting chains (key 1), against
    the layout derived from numpy's SeedSequence directly."""
    for seed, runs, key in [(3, 5, 0), (0, 1, 0), (7, 4, 1)]:
        np.testing.assert_array_equal(ais_streams(seed, runs, key),
                                      ais_streams_reference(seed, runs, key))


@pytest.mark.parametrize("D,M", [(12, 10), (37, 21), (70, 130)])
def test_kernel_matches_numpy_reference_exactly(D, M):
    model = random_rbm(D, M, seed=D, scale=0.5)
    bA = np.random.default_rng(1).normal(0, 1, D)
    betas = make_schedule("linear:60")
    res = Annealer(runs=7, schedule=betas, seed=3, refresh=7).log_partition(model, base_rate=bA)
    logw, v = reference_ais(model, bA, betas, seed=3, runs=7)
    np.testing.assert_array_equal(res.samples, v)
    np.testing.assert_allclose(res.log_weights, logw, rtol=0, atol=1e-9)


# -------------------------------------------------------------- AIS: statistics
def test_ais_is_unbiased_in_Z_and_a_broken_weight_is_caught(small):
    """E[Z-hat] = Z (SM08 Eq. 11): over 400 independent estimates of 10 runs each, the mean
    of Z-hat / Z is 1 within 4 standard errors.  Dropping the last beta increment from
    each log weight (a plausible off-by-one) must fail the same test."""
    model, log_z, data = small
    betas = make_schedule("linear:100")
    res = Annealer(runs=4000, schedule=betas, seed=11).log_partition(
        model, base_rate="data", data=data)
    ratio = np.exp(res.log_weights + res.log_Z_base - log_z).reshape(400, 10).mean(axis=1)
    z = (ratio.mean() - 1.0) / (ratio.std(ddof=1) / math.sqrt(ratio.size))
    print(f"unbiasedness: mean Z-hat/Z = {ratio.mean():.4f}, z = {z:+.2f}")
    assert abs(z) < 4.0

    bA = base_rate_biases(data)
    v = res.samples.astype(np.float64)
    last = log_p_star(1.0, v, bA, model) - log_p_star(betas[-2], v, bA, model)
    broken = np.exp(res.log_weights - last + res.log_Z_base - log_z).reshape(400, 10).mean(axis=1)
    z_broken = (broken.mean() - 1.0) / (broken.std(ddof=1) / math.sqrt(broken.size))
    print(f"broken (last increment dropped): mean = {broken.mean():.4f}, z = {z_broken:+.2f}")
    assert abs(z_broken) > 4.0


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_ais_truth_within_three_sigma(seed):
    model = random_rbm(12, 10, seed=100 + seed, scale=0.8)
    log_z = exact_log_partition(model)
    res = Annealer(runs=100, schedule="linear:500", seed=seed).log_partition(model)
    lo, hi = res.log_Z_interval(3)
    print(f"seed {seed}: ln Z = {log_z:.4f}, ln Z-hat = {res.log_Z:.4f}, "
          f"3-sigma ({lo:.4f}, {hi:.4f}), z = {(np.exp(res.log_Z - log_z) - 1) / np.exp(res.log_sigma - log_z):+.2f}")
    assert lo <= log_z <= hi
    assert abs(res.log_Z - log_z) < 0.05


def test_average_log_probability(small):
    model, log_z, data = small
    res = Annealer(runs=200, schedule="linear:300", seed=2).log_partition(
        model, base_rate="data", data=data)
    true = float(np.mean(model.log_unnormalized(data))) - log_z
    lo, hi = res.avg_log_prob_interval(3)
    assert lo <= true <= hi
    assert res.n_data == data.shape[0]
    assert abs(res.avg_log_prob - (res.mean_log_unnormalized - res.log_Z)) < 1e-12


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_many_hidden_units_several_tiles(dtype):
    """More than 512 hidden units: the update of the visible inputs takes W^T in several
    tiles of rows (cyrbm/_kernels/anneal_t.h), whose bounds in the flip lists must
    be right.  A 16 x 1100 RBM (3 tiles), against ln Z summed over its 16 visible units,
    with few runs so a wrong input would show; the ratio to a 16 x 600 model likewise."""
    A = random_rbm(16, 600, seed=51, scale=0.15, dtype=dtype)
    B = random_rbm(16, 1100, seed=52, scale=0.15, dtype=dtype)
    log_za, log_zb = exact_log_partition(A), exact_log_partition(B)
    res = Annealer(runs=50, schedule="linear:400", seed=2, refresh=37).log_partition(
        B, base_rate=np.zeros(16))
    lo, hi = res.log_Z_interval(3)
    assert lo <= log_zb <= hi and hi - lo < 0.5, (res.log_Z, log_zb, lo, hi)
    rat = Annealer(runs=50, schedule="linear:400", seed=3, refresh=37).log_ratio(
        B, A, start="gibbs", burn_in=200)
    lo, hi = rat.log_ratio_interval(3)
    assert lo <= log_za - log_zb <= hi and hi - lo < 0.5, (rat.log_ratio, log_za - log_zb, lo, hi)


def test_ratio_of_different_hidden_sizes_matches_exact_and_a_broken_ratio_is_caught():
    """ln(Z_B / Z_A) between a 12 x 10 and a 12 x 7 RBM (SM08 Sec. 3.2): the mean of
    r-hat / r over 300 estimates of 10 runs is 1 within 4 standard errors (starting states
    come from well-mixed Gibbs chains on this small A), the truth lies within
    ln(r-hat +- 3 sigma-hat), and forgetting the 2^(nA - nB) factor of the hidden layers is
    rejected by the same test."""
    A = random_rbm(12, 10, seed=21, scale=0.7)
    B = random_rbm(12, 7, seed=22, scale=0.7)
    log_za, log_zb = exact_log_partition(A), exact_log_partition(B)
    res = Annealer(runs=3000, schedule="linear:150", seed=4).log_ratio(
        A, B, start="gibbs", burn_in=200, log_Z_a=log_za)
    r = np.exp(res.log_weights - (log_zb - log_za)).reshape(300, 10).mean(axis=1)
    z = (r.mean() - 1.0) / (r.std(ddof=1) / math.sqrt(r.size))
    print(f"ratio: ln r = {log_zb - log_za:.4f}, ln r-hat = {res.log_ratio:.4f}, z = {z:+.2f}")
    assert abs(z) < 4.0
    lo, hi = res.log_ratio_interval(3)
    assert lo <= log_zb - log_za <= hi
    assert abs(res.log_Z - log_zb) < 0.05
    broken = r * 2.0 ** (A.n_hidden - B.n_hidden)
    z_broken = (broken.mean() - 1.0) / (broken.std(ddof=1) / math.sqrt(broken.size))
    assert abs(z_broken) > 4.0


def test_ratio_with_few_chains_and_data():
    A = random_rbm(10, 8, seed=31, scale=0.6)
    B = random_rbm(10, 12, seed=32, scale=0.6)
    data = A.sample(100, steps=100, seed=3)
    res = Annealer(runs=120, schedule="linear:300", seed=1).log_ratio(
        A, B, data=data, start="gibbs", burn_in=300, chains=4, steps_between=50)
    true = exact_log_partition(B) - exact_log_partition(A)
    lo, hi = res.log_ratio_interval(3)
    assert lo <= true <= hi
    assert res.extra["chains"] == 4 and res.extra["start"] == "gibbs"
    assert res.log_Z_base == exact_log_partition(A)      # A is small: ln Z_A computed
    expected = float(np.mean(B.log_unnormalized(data) - A.log_unnormalized(data))) - true
    assert abs(res.avg_log_prob - expected) < 0.1


@pytest.mark.parametrize("D,M", [(6, 4), (4, 6)])
def test_exact_starting_states_are_draws_from_model_a(D, M):
    """start="exact" (Annealer._exact_starts): with two betas there is no transition, so
    the returned samples are the starting states; 40,000 of them pass the shared
    stationarity check against p_A(v) (hidden layer enumerated for 6 x 4, visible for
    4 x 6), and from them and one importance step r-hat is unbiased."""
    A = random_rbm(D, M, seed=41, scale=0.8)
    B = random_rbm(D, M + 2, seed=42, scale=0.8)
    results = []

    def sample(n, seed):
        results.append(Annealer(runs=n, schedule=[0.0, 1.0], seed=seed, threads=1).log_ratio(
            A, B, start="exact"))
        return results[-1].samples

    check_sampler(sample, A, n=40000, seed=6)
    res = results[0]
    log_za = exact_distribution(A)[2]
    assert res.extra["start"] == "exact" and res.extra["burn_in"] is None
    assert abs(res.log_Z_base - log_za) < 1e-10
    # independent exact starts and one importance step: r-hat is unbiased
    true = exact_log_partition(B) - log_za
    r = np.exp(res.log_weights - true).reshape(400, 100).mean(axis=1)
    assert abs(r.mean() - 1.0) < 4 * r.std(ddof=1) / math.sqrt(r.size)


def _base_rate_draws(dtype):
    model = random_rbm(6, 4, seed=43, scale=0.8, dtype=dtype)
    bA = np.random.default_rng(7).normal(0.0, 1.0, 6)
    # p_A(v) = prod_i sigma(b_A,i)^v_i ...: an RBM with W = 0 and the stored biases
    base = RBM(np.zeros((6, 4)), bA.astype(dtype), np.zeros(4), dtype=np.float64)
    return base, lambda n, seed: Annealer(runs=n, schedule=[0.0, 1.0], seed=seed,
                                          threads=1).log_partition(model, base_rate=bA).samples


def _gibbs_start_draws(dtype):
    A = random_rbm(6, 4, seed=41, scale=0.8, dtype=dtype)
    B = random_rbm(6, 5, seed=42, scale=0.8, dtype=dtype)
    return A, lambda n, seed: Annealer(runs=n, schedule=[0.0, 1.0], seed=seed, threads=1).log_ratio(
        A, B, start="gibbs", burn_in=30).samples


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sampler", [
    pytest.param(_base_rate_draws, id="base-rate starts"),
    pytest.param(_gibbs_start_draws, id="gibbs starts"),
])
def test_annealer_samplers_are_stationary(sampler, dtype):
    """The Annealer's other samplers pass the shared stationarity check on 6 x 4 models
    (two betas: the returned samples are the starting states): the exact draws from the
    base-rate model that start log_partition's runs (the AIS kernel's own Bernoulli
    draws), and the block-Gibbs chains on model A that start log_ratio's runs with
    start="gibbs" (30 sweeps from uniform random bits).  AIS's final states are not
    exact draws of the model (the weights correct for that): they are tested through
    E[w] = Z_B / Z_A instead."""
    model, sample = sampler(dtype)
    check_sampler(sample, model)


def test_ratio_from_exact_starts_matches_exact():
    """The 12 x 10 -> 12 x 7 ratio of the Gibbs test above, from exact starting states
    (start="auto" chooses them for so small an A): the mean of r-hat / r over 300 estimates
    of 10 runs is 1 within 4 standard errors, and ln Z_B-hat comes with it."""
    A = random_rbm(12, 10, seed=21, scale=0.7)
    B = random_rbm(12, 7, seed=22, scale=0.7)
    log_za, log_zb = exact_log_partition(A), exact_log_partition(B)
    res = Annealer(runs=3000, schedule="linear:150", seed=4).log_ratio(A, B)
    assert res.extra["start"] == "exact" and abs(res.log_Z_base - log_za) < 1e-10
    r = np.exp(res.log_weights - (log_zb - log_za)).reshape(300, 10).mean(axis=1)
    z = (r.mean() - 1.0) / (r.std(ddof=1) / math.sqrt(r.size))
    assert abs(z) < 4.0
    lo, hi = res.log_Z_interval(3)
    assert lo <= log_zb <= hi


def test_exact_starts_refused_for_a_large_model_a():
    A = random_rbm(40, 33, seed=1, scale=0.1)
    B = random_rbm(40, 5, seed=2, scale=0.1)
    with pytest.raises(AnnealingError) as info:
        Annealer(runs=2, schedule="linear:5").log_ratio(A, B, start="exact")
    assert "start='gibbs'" in one_sentence(info.value)
    with pytest.raises(AnnealingError) as info:
        Annealer(runs=2, schedule="linear:5").log_ratio(A, B, start="perfect")
    one_sentence(info.value)
    res = Annealer(runs=2, schedule="linear:5").log_ratio(A, B, burn_in=3)   # auto: Gibbs
    assert res.extra["start"] == "gibbs" and res.log_Z is None


# ------------------------------------------------------------ reproducibility, dtypes
def test_identical_for_one_and_two_threads():
    model = random_rbm(40, 25, seed=8, scale=0.3, dtype=np.float32)
    data = (np.random.default_rng(0).random((50, 40)) < 0.3).astype(np.uint8)
    r1 = Annealer(runs=9, schedule="linear:200", seed=5, threads=1).log_partition(
        model, "data", data)
    r2 = Annealer(runs=9, schedule="linear:200", seed=5, threads=2).log_partition(
        model, "data", data)
    np.testing.assert_array_equal(r1.log_weights, r2.log_weights)
    np.testing.assert_array_equal(r1.samples, r2.samples)
    B = random_rbm(40, 31, seed=9, scale=0.3, dtype=np.float64)
    q1 = Annealer(runs=5, schedule="linear:100", seed=5, threads=1).log_ratio(model, B, burn_in=20)
    q2 = Annealer(runs=5, schedule="linear:100", seed=5, threads=2).log_ratio(model, B, burn_in=20)
    np.testing.assert_array_equal(q1.log_weights, q2.log_weights)
    small = random_rbm(40, 13, seed=10, scale=0.3, dtype=np.float32)     # exact starts
    e1 = Annealer(runs=5, schedule="linear:100", seed=5, threads=1).log_ratio(small, B)
    e2 = Annealer(runs=5, schedule="linear:100", seed=5, threads=2).log_ratio(small, B)
    assert e1.extra["start"] == "exact"
    np.testing.assert_array_equal(e1.log_weights, e2.log_weights)
    assert e1.log_Z_base == e2.log_Z_base


def test_chunking_of_the_starting_chains_does_not_change_results():
    # the Gibbs chains on model A run in pieces of `chunk` sweeps (for the progress bar),
    # numbered on, so the pieces give the numbers of one long chain
    A = random_rbm(20, 4, seed=21, scale=0.5)
    B = random_rbm(20, 7, seed=22, scale=0.5)
    runs = dict(start="gibbs", burn_in=23, chains=3, steps_between=5)
    a = Annealer(runs=7, schedule="linear:40", seed=3, chunk=1000, refresh=4).log_ratio(A, B, **runs)
    b = Annealer(runs=7, schedule="linear:40", seed=3, chunk=3, refresh=4).log_ratio(A, B, **runs)
    np.testing.assert_array_equal(a.log_weights, b.log_weights)
    np.testing.assert_array_equal(a.samples, b.samples)
    c = Annealer(runs=7, schedule="linear:40", seed=3, chunk=3, refresh=4).log_ratio(
        A, B, start="gibbs", burn_in=23, chains=3, steps_between=6)
    assert not np.array_equal(a.log_weights, c.log_weights)


def test_chunking_of_the_schedule_does_not_change_results(small):
    model, _, data = small
    a = Annealer(runs=6, schedule="linear:300", seed=3, chunk=1000).log_partition(model, "data", data)
    b = Annealer(runs=6, schedule="linear:300", seed=3, chunk=7).log_partition(model, "data", data)
    np.testing.assert_array_equal(a.log_weights, b.log_weights)


def test_two_betas_is_plain_importance_sampling(small):
    # K = 1: w = p*(v) / p*_A(v) with v from the base rate (SM08 Eq. 8), still unbiased
    model, log_z, data = small
    res = Annealer(runs=20000, schedule=[0.0, 1.0], seed=9).log_partition(model, "data", data)
    bA = base_rate_biases(data)
    v = res.samples.astype(np.float64)
    np.testing.assert_allclose(res.log_weights,
                               log_p_star(1.0, v, bA, model) - log_p_star(0.0, v, bA, model),
                               rtol=0, atol=1e-9)
    w = np.exp(res.log_weights + res.log_Z_base - log_z)
    assert abs(w.mean() - 1.0) < 4 * w.std(ddof=1) / math.sqrt(w.size)


def test_same_seed_same_result_and_seeds_differ(small):
    model, _, _ = small
    a = Annealer(runs=4, schedule="linear:50", seed=1).log_partition(model)
    b = Annealer(runs=4, schedule="linear:50", seed=1).log_partition(model)
    c = Annealer(runs=4, schedule="linear:50", seed=2).log_partition(model)
    np.testing.assert_array_equal(a.log_weights, b.log_weights)
    assert not np.array_equal(a.log_weights, c.log_weights)


def test_float32_and_float64_agree():
    m64 = random_rbm(30, 12, seed=12, scale=0.5)
    m32 = m64.astype(np.float32)
    z64 = exact_log_partition(m64)
    z32 = exact_log_partition(m32)
    assert abs(z64 - z32) < 1e-3           # the models differ by float32 rounding only
    r64 = Annealer(runs=200, schedule="linear:400", seed=3).log_partition(m64)
    r32 = Annealer(runs=200, schedule="linear:400", seed=3).log_partition(m32)
    for r, z in ((r64, z64), (r32, z32)):
        lo, hi = r.log_Z_interval(3)
        assert lo <= z <= hi
    sd = math.hypot(np.exp(r64.log_sigma - r64.log_Z), np.exp(r32.log_sigma - r32.log_Z))
    assert abs(r64.log_Z - r32.log_Z) < 4 * sd + 1e-3
    assert r32.dtype == "float32" and r64.dtype == "float64"


def test_long_float32_runs_do_not_drift():
    # inputs are updated incrementally in float32 and refreshed every `refresh` steps; a
    # refresh every step must give (almost) the same log weights.  Both draw the same random
    # numbers, so a run takes the same path unless rounding flips a draw; then it wanders
    # off for a while (chains driven by common random numbers may re-couple, so equal
    # final samples do not prove equal paths: about 1 run in 100 here).  So the typical
    # run must agree closely (measured: median difference 2e-6 nats), and the estimates
    # statistically.
    model = random_rbm(50, 40, seed=13, scale=0.3, dtype=np.float32)
    a = Annealer(runs=20, schedule="linear:2000", seed=7, refresh=1).log_partition(model)
    b = Annealer(runs=20, schedule="linear:2000", seed=7, refresh=500).log_partition(model)
    diff = np.abs(a.log_weights - b.log_weights)
    assert np.median(diff) < 1e-4, diff
    assert np.mean(diff < 1e-3) >= 0.8, diff
    assert abs(a.log_Z - b.log_Z) < 3 * math.hypot(np.exp(a.log_sigma - a.log_Z),
                                                    np.exp(b.log_sigma - b.log_Z)) + 1e-3


# ------------------------------------------------------------------------- results
def test_result_error_bars_and_minus_infinity():
    lw = np.array([0.0, -30.0, -30.0, -30.0])       # one run dominates: Z - 3 sigma < 0
    res = AISResult(kind="partition", log_weights=lw, log_Z_base=2.0, betas=10, runs=4,
                    seconds=0.1, threads=1, dtype=np.float64, seed=0, schedule="x")
    w = np.exp(lw)
    assert abs(res.log_Z - (2.0 + math.log(w.mean()))) < 1e-12
    assert abs(res.log_sigma - (2.0 + math.log(w.std(ddof=1) / 2))) < 1e-12
    lo, hi = res.log_Z_interval(3)
    assert lo == float("-inf") and hi > res.log_Z
    assert abs(res.ess - w.sum() ** 2 / (w ** 2).sum()) < 1e-12
    d = res.to_dict()
    assert d["log_Z_3sigma_interval"][0] is None
    json.dumps(d, allow_nan=False)
    # huge log weights: no overflow
    big = AISResult(kind="partition", log_weights=np.array([1000.0, 1001.0]), log_Z_base=0.0,
                    betas=2, runs=2, seconds=0, threads=1, dtype=np.float32, seed=0, schedule="x")
    assert abs(big.log_Z - (1001.0 + math.log((1 + math.exp(-1)) / 2))) < 1e-9


def test_logmeanexp_against_references():
    """ln mean exp against scipy's logsumexp - ln n on skewed values (where mean and
    median differ), closed forms where exp would overflow or underflow, -inf, +inf, NaN,
    every axis of a 2-D array, and AISResult.log_ratio, which is it."""
    rng = np.random.default_rng(0)
    x = rng.exponential(3.0, 1000) - 20.0
    assert abs(logmeanexp(x) - (logsumexp(x) - math.log(x.size))) < 1e-12
    assert abs(logmeanexp(x[:10]) - math.log(np.mean(np.exp(x[:10])))) < 1e-12
    assert abs(logmeanexp([0.0, 0.0, 10.0]) - math.log((2 + math.exp(10)) / 3)) < 1e-12
    assert logmeanexp([2.5]) == 2.5
    for c in (1000.0, -1000.0, 709.5, -745.5):      # exp(c) overflows or underflows
        assert abs(logmeanexp([c, c + math.log(3.0)]) - (c + math.log(2.0))) < 1e-12
    assert abs(logmeanexp([0.0, -800.0]) + LN2) < 1e-15
    assert abs(logmeanexp([0.0, -np.inf]) + LN2) < 1e-15
    assert logmeanexp([-np.inf, -np.inf]) == -np.inf
    assert logmeanexp([np.inf, 0.0]) == np.inf
    assert math.isnan(logmeanexp([np.nan, 0.0]))
    with pytest.raises(ValueError):
        logmeanexp([])
    X = rng.normal(0.0, 30.0, (7, 5))
    X[2, :] = -np.inf
    X[4, 1] = -np.inf
    X[5, 3] = 900.0
    for axis in (0, 1, -1):
        got = logmeanexp(X, axis=axis)
        rows = np.moveaxis(X, axis, -1)
        want = np.array([logsumexp(r) - math.log(r.size) for r in rows])
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
        np.testing.assert_allclose(got, [logmeanexp(r) for r in rows], rtol=1e-15, atol=0)
    assert logmeanexp(X, axis=1)[2] == -np.inf
    assert abs(logmeanexp(X) - (logsumexp(X) - math.log(X.size))) < 1e-12
    res = AISResult(kind="partition", log_weights=x, log_Z_base=1.5, betas=2, runs=x.size,
                    seconds=0, threads=1, dtype=np.float64, seed=0, schedule="x")
    assert res.log_ratio == logmeanexp(x) and res.log_Z == 1.5 + logmeanexp(x)


def test_result_to_dict_keys(small):
    model, _, data = small
    res = Annealer(runs=5, schedule="linear:20", seed=0).log_partition(model, "data", data)
    d = res.to_dict()
    for key in ("kind", "log_Z", "log_Z_base", "log_ratio", "log_sigma", "log_Z_sigma_interval",
                "log_Z_3sigma_interval", "ess", "runs", "betas", "seconds", "threads", "dtype",
                "seed", "avg_log_prob", "avg_log_prob_sigma_interval",
                "avg_log_prob_3sigma_interval", "n_data", "log_weights"):
        assert key in d, key
    assert d["runs"] == 5 and d["betas"] == 20 and len(d["log_weights"]) == 5
    json.dumps(d, allow_nan=False)


def test_base_rate_biases_are_smoothed_maximum_likelihood():
    data = np.array([[1, 0, 1], [1, 0, 0], [1, 0, 1], [1, 0, 0]], dtype=np.uint8)
    b = base_rate_biases(data, pseudocount=1.0)
    p = np.array([5 / 6, 1 / 6, 3 / 6])
    np.testing.assert_allclose(b, np.log(p / (1 - p)))
    assert np.all(np.isfinite(base_rate_biases(np.zeros((3, 4), np.uint8))))


def test_progress_bar_counts_every_beta_and_changes_nothing(small, capsys, monkeypatch):
    """progress=True: a tqdm bar on stderr named for the job, whose updates add up to the
    work done (29 beta steps in pieces of at most 7; for a ratio, first the Gibbs sweeps on model
    A), and the numbers are those of a run without a bar."""
    tqdm = pytest.importorskip("tqdm")
    model, _, _ = small
    bars = []

    class Recording(tqdm.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.steps = []
            bars.append(self)

        def update(self, n=1):
            self.steps.append(n)
            return super().update(n)

    monkeypatch.setattr(tqdm, "tqdm", Recording)
    ann = Annealer(runs=3, schedule="linear:30", seed=0, progress=True, chunk=7)
    res = ann.log_partition(model)
    # pieces of at most `chunk` steps, cut to about 0.1 s each (Ctrl-C between them)
    assert [(b.desc, b.total, sum(b.steps)) for b in bars] == [("AIS ln Z", 29, 29)]
    assert max(bars[0].steps) <= 7 and len(bars[0].steps) >= 29 // 7 + 1
    assert "AIS ln Z" in capsys.readouterr().err
    quiet = Annealer(runs=3, schedule="linear:30", seed=0, progress=False, chunk=7)
    np.testing.assert_array_equal(res.log_weights, quiet.log_partition(model).log_weights)
    bars.clear()
    other = random_rbm(12, 5, seed=1)
    kw = dict(start="gibbs", burn_in=10, chains=2, steps_between=4)
    res = ann.log_ratio(model, other, **kw)
    assert [(b.desc, b.total, sum(b.steps)) for b in bars] == [("Gibbs on model A", 14, 14),
                                                               ("AIS ln(ZB/ZA)", 29, 29)]
    assert "Gibbs on model A" in capsys.readouterr().err
    np.testing.assert_array_equal(res.log_weights, quiet.log_ratio(model, other, **kw).log_weights)


# ----------------------------------------------------------------------- schedules
def test_paper_schedule():
    betas = make_schedule("paper")
    assert betas.size == 14500 and betas[0] == 0.0 and betas[-1] == 1.0
    assert np.all(np.diff(betas) > 0)
    assert np.sum(betas < 0.5) == 500 and np.sum((betas >= 0.5) & (betas < 0.9)) == 4000
    assert np.sum(betas >= 0.9) == 10000


def test_linear_and_file_and_array_schedules(tmp_path):
    np.testing.assert_allclose(make_schedule("linear:5"), [0, 0.25, 0.5, 0.75, 1])
    path = tmp_path / "betas.txt"
    path.write_text("# my schedule\n0\n0.1\n0.5\n1\n")
    np.testing.assert_allclose(make_schedule(str(path)), [0, 0.1, 0.5, 1])
    np.testing.assert_allclose(make_schedule([0, 0.3, 1]), [0, 0.3, 1])


@pytest.mark.parametrize("spec,words", [
    ([0, 0.5, 0.5, 1], "strictly increasing"),
    ([0, 0.7, 0.4, 1], "strictly increasing"),
    ([0.1, 0.5, 1], "start at beta = 0"),
    ([0, 0.5, 0.9], "end at beta = 1"),
    ([0, float("nan"), 1], "not a finite number"),
    ([0], "at least two"),
    ([[0, 1]], "1-D"),
    ("linear:1", "K >= 2"),
    ("linear:x", "whole number"),
    ("no-such-schedule", "no such file"),
])
def test_bad_schedules(spec, words):
    with pytest.raises(ScheduleError) as info:
        make_schedule(spec)
    assert words in one_sentence(info.value)


def test_bad_schedule_file(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("0\nhalf\n1\n")
    with pytest.raises(ScheduleError) as info:
        make_schedule(str(path))
    one_sentence(info.value)


# ---------------------------------------------------------------------- bad input
def test_runs_below_two():
    for runs in (1, 0, -3):
        with pytest.raises(AnnealingError) as info:
            Annealer(runs=runs)
        assert "at least 2 runs" in one_sentence(info.value)


def test_model_file_with_nan(tmp_path):
    path = tmp_path / "nan.npz"
    W = np.zeros((4, 3))
    W[1, 2] = np.nan
    np.savez(path, W=W, vbias=np.zeros(4), hbias=np.zeros(3))
    with pytest.raises(ModelFileError) as info:
        RBM.load(path)
    assert "NaN" in one_sentence(info.value)


def test_data_width_mismatch(small):
    model, _, _ = small
    wrong = np.zeros((5, model.n_visible + 1), dtype=np.uint8)
    ann = Annealer(runs=2, schedule="linear:5")
    for call in (lambda: ann.log_partition(model, data=wrong),
                 lambda: ann.log_partition(model, base_rate="data", base_data=wrong),
                 lambda: ann.log_ratio(model, model, data=wrong)):
        with pytest.raises(ModelMismatchError) as info:
            call()
        assert "columns" in one_sentence(info.value)
    with pytest.raises(ModelMismatchError):
        ann.log_partition(model, base_rate=np.zeros(model.n_visible + 2))
    with pytest.raises(ModelMismatchError) as info:
        ann.log_ratio(model, random_rbm(5, 3, seed=0))
    one_sentence(info.value)


def test_non_binary_data_and_bad_base_rate(small):
    model, _, _ = small
    ann = Annealer(runs=2, schedule="linear:5")
    with pytest.raises(DataError):
        ann.log_partition(model, data=np.full((3, model.n_visible), 0.5))
    with pytest.raises(AnnealingError) as info:
        ann.log_partition(model, base_rate="data")
    one_sentence(info.value)
    with pytest.raises(AnnealingError):
        ann.log_partition(model, base_rate="uniform")


# --------------------------------------------------------------------------- CLI
def cli_args(**kw):
    args = {"--data": None, "--base-data": None, "--runs": None, "--schedule": None,
            "--seed": None, "--threads": None, "--json": True, "--burn-in": None,
            "--chains": None, "--steps-between": None, "--start": None, "--exact": False}
    args.update(kw)
    return args


def test_cli_handlers(tmp_path):
    from cyrbm.cli import measure as _cli_measure
    a = random_rbm(64, 6, seed=1, scale=0.1, dtype=np.float32)
    b = random_rbm(64, 9, seed=2, scale=0.1, dtype=np.float32)
    pa, pb = str(tmp_path / "a.npz"), str(tmp_path / "b.npz")
    a.save(pa)
    b.save(pb)
    out = _cli_measure.run_ais(cli_args(MODEL=pa, **{"--data": "digits:test", "--runs": "5",
                                                     "--schedule": "linear:50"}))
    json.dumps(out, allow_nan=False)
    assert out["kind"] == "partition" and out["runs"] == 5 and out["betas"] == 50
    assert out["n_data"] == 400 and out["avg_log_prob"] is not None
    assert out["base_data"] == "digits:test"
    out = _cli_measure.run_ratio(cli_args(MODEL_A=pa, MODEL_B=pb, **{
        "--runs": "4", "--schedule": "linear:30", "--threads": "2"}))
    json.dumps(out, allow_nan=False)
    assert out["kind"] == "ratio" and out["log_Z"] is not None and out["start"] == "exact"
    assert out["burn_in"] is None and out["chains"] is None
    out = _cli_measure.run_ratio(cli_args(MODEL_A=pa, MODEL_B=pb, **{
        "--runs": "4", "--schedule": "linear:30", "--burn-in": "10", "--start": "gibbs"}))
    assert out["start"] == "gibbs" and out["burn_in"] == 10 and out["chains"] == 4
    assert out["steps_between"] == 100 and out["log_Z"] is not None
    out = _cli_measure.run_ratio(cli_args(MODEL_A=pa, MODEL_B=pb, **{
        "--runs": "6", "--schedule": "linear:30", "--burn-in": "10", "--chains": "2",
        "--steps-between": "3", "--start": "gibbs"}))
    assert out["chains"] == 2 and out["steps_between"] == 3 and len(out["log_weights"]) == 6
    for bad in ({"--chains": "0"}, {"--chains": "7"}, {"--chains": "two"},
                {"--steps-between": "0"}, {"--start": "perfect"}):
        with pytest.raises(CyrbmError) as info:
            _cli_measure.run_ratio(cli_args(MODEL_A=pa, MODEL_B=pb, **{
                "--runs": "6", "--schedule": "linear:30", "--burn-in": "10",
                "--start": "gibbs", **bad}))
        one_sentence(info.value)
    out = _cli_measure.run_logz(cli_args(MODEL=pa, **{"--exact": True}))
    json.dumps(out, allow_nan=False)
    assert abs(out["log_Z"] - exact_log_partition(a)) < 1e-12 and out["terms"] == 64


def test_cli_handler_errors(tmp_path):
    from cyrbm.cli import measure as _cli_measure
    path = str(tmp_path / "m.npz")
    random_rbm(64, 5, seed=0).save(path)
    bad = [cli_args(MODEL=path, **{"--runs": "1"}),
           cli_args(MODEL=path, **{"--runs": "ten"}),
           cli_args(MODEL=path, **{"--schedule": "linear:0"}),
           cli_args(MODEL=path, **{"--seed": "-1"}),
           cli_args(MODEL=str(tmp_path / "missing.npz"))]
    for args in bad:
        with pytest.raises(CyrbmError) as info:
            _cli_measure.run_ais(args)
        one_sentence(info.value)
    with pytest.raises(CyrbmError) as info:
        _cli_measure.run_logz(cli_args(MODEL=path))
    one_sentence(info.value)
    wide = str(tmp_path / "wide.npz")
    random_rbm(70, 5, seed=0).save(wide)
    with pytest.raises(ModelMismatchError) as info:
        _cli_measure.run_ais(cli_args(MODEL=wide, **{"--data": "digits", "--runs": "2",
                                                    "--schedule": "linear:3"}))
    one_sentence(info.value)


# ------------------------------------------------------------- realistic, slow
@pytest.mark.slow
def test_784x20_paper_schedule_within_half_a_nat():
    """SM08 Sec. 5.1 on MNIST-like data: a 784 x 20 RBM trained by CD1, 100 AIS runs with
    the paper's 14,500 betas from the data base rate land within 0.5 nats of the exact
    ln Z (SM08 Table 1: CD1(20), 279.59 exact, 279.57 by AIS)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
    from mnistlike import mnistlike
    from cyrbm import Trainer
    X = mnistlike(3000, seed=0)
    model = Trainer(20, method="cd", k=1, epochs=8, batch_size=100, learning_rate=0.05,
                    momentum=0.9, weight_decay=2e-4, seed=0, progress=False,
                    monitor_size=0).fit(X)
    t0 = time.perf_counter()
    log_z = exact_log_partition(model)
    t_exact = time.perf_counter() - t0
    res = Annealer(runs=100, schedule="paper", seed=0).log_partition(
        model, base_rate="data", data=X)
    lo, hi = res.log_Z_interval(3)
    print(f"784x20: exact ln Z = {log_z:.4f} ({t_exact:.2f} s); AIS ln Z = {res.log_Z:.4f} "
          f"(3-sigma {lo:.4f}, {hi:.4f}), error {res.log_Z - log_z:+.4f} nats, "
          f"{res.seconds:.2f} s, ESS {res.ess:.1f}")
    assert abs(res.log_Z - log_z) < 0.5


def test_log_partition_checks_its_data_once(monkeypatch):
    """The data are scanned by check_binary once; the base rate and ln p*(v) take the
    checked rows (the same numbers as the public, checking paths)."""
    from cyrbm import _validation
    from cyrbm.estimators import annealing
    rng = np.random.default_rng(0)
    model = RBM(rng.normal(0, 0.3, (12, 4)), rng.normal(0, 0.2, 12), rng.normal(0, 0.2, 4))
    X = (rng.random((30, 12)) < 0.4).astype(np.uint8)
    calls = []

    def counting(X, **kw):
        calls.append(kw.get("name"))
        return check(X, **kw)
    check = _validation.check_binary
    monkeypatch.setattr(_validation, "check_binary", counting)     # the model's rows
    monkeypatch.setattr(annealing, "check_binary", counting)
    res = Annealer(runs=4, schedule="linear:20", seed=0).log_partition(
        model, base_rate="data", data=X)
    assert calls == ["data"]
    monkeypatch.undo()
    assert res.log_Z_base == pytest.approx(annealing._anneal.base_rate_log_z(
        annealing.base_rate_biases(X).astype(model.dtype).astype(np.float64), 4), abs=0)
    assert res.mean_log_unnormalized == float(np.mean(model.log_unnormalized(X)))
