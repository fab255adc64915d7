"""The Gibbs engine (cyrbm._engine.GibbsEngine): a new sampler is a schedule of its
transitions, and each transition leaves its own distribution invariant.

The example here is tempering, the transition parallel tempering builds on: chains of
one engine, each at its own inverse temperature beta[r] between RBMs A and B, must follow
p_beta(v) ~ sum_h exp(-(1 - beta) E_A(v, hA) - beta E_B(v, hB)) (SM08 Eq. 13-14), checked
against enumeration with the shared stationarity check (chi-square with a power check).
"""
import numpy as np
import pytest
from scipy.special import logsumexp

import cyrbm
from cyrbm import _anneal, _engine
from cyrbm.capi import make_ais_streams
from _reference import all_states, check_sampler, tiny_model, total_variation


def softplus(x):
    return np.logaddexp(0.0, x)


def tempered_distribution(A, B, beta):
    """p_beta(v) over all_states(n_visible), by enumeration (both hidden layers summed)."""
    V = all_states(A.n_visible).astype(np.float64)
    f = ((1 - beta) * (V @ A.vbias) + beta * (V @ B.vbias)
         + softplus((1 - beta) * (V @ A.W + A.hbias)).sum(1)
         + softplus(beta * (V @ B.W + B.hbias)).sum(1))
    return np.exp(f - logsumexp(f))


@pytest.fixture(scope="module")
def pair():
    A = tiny_model(6, 3, scale=1.2, seed=11)
    B = tiny_model(6, 4, scale=1.2, seed=12)
    return A, B


def tempered_chains(A, B, betas, sweeps, seed, dtype=np.float64):
    """Final visible states of len(betas) chains of one engine, chain r at betas[r]."""
    runs = len(betas)
    engine = _engine.GibbsEngine(A.vbias, A.W, A.hbias, B.W, B.vbias, B.hbias,
                                 make_ais_streams(seed, runs), dtype=dtype, n_threads=2,
                                 refresh_every=7)
    start = np.random.default_rng(seed).random((runs, A.n_visible)) < 0.5
    engine.set_visible(start.astype(np.uint8))
    engine.sweep(sweeps, beta=betas)
    return engine.visible()


@pytest.fixture(params=["never", "always"])
def input_path(request):
    """Inputs kept up to date by the flipped units' weight rows ("never" the subset
    tables), or recomputed from the subset tables at every step ("always"); on these
    tiny models the default ("auto") takes the tables at almost every step."""
    previous = _anneal.use_dense_tables(request.param)
    yield request.param
    _anneal.use_dense_tables(previous)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_chain_follows_its_own_temperature(pair, dtype, input_path):
    A, B = pair
    low, high = 0.35, 1.0
    cache = {}

    def run(n, seed):
        if (n, seed) not in cache:
            betas = np.r_[np.full(n, low), np.full(n, high)]   # one engine, mixed betas
            cache[n, seed] = tempered_chains(A, B, betas, 40, seed, dtype)
        return cache[n, seed]

    for beta, part in ((low, slice(0, 1)), (high, slice(1, 2))):
        p = tempered_distribution(A, B, beta)
        # the power check: the distribution at a nearby beta must be told apart
        wrong = next(q for q in (tempered_distribution(A, B, beta + d)
                                 for d in (-0.15, -0.1, -0.07, -0.05))
                     if 0 < total_variation(p, q) <= 0.05)

        def sample(n, seed, part=part):
            v = run(n, seed)
            return v[part.start * n:(part.start + 1) * n]

        check_sampler(sample, A, target=lambda m, p=p: p, wrong=[wrong])


def test_sweeps_in_pieces_equal_one_call(pair):
    A, B = pair
    betas = np.linspace(0, 1, 9)
    one = _engine.GibbsEngine(A.vbias, A.W, A.hbias, B.W, B.vbias, B.hbias,
                              make_ais_streams(3, 9), refresh_every=5)
    two = _engine.GibbsEngine(A.vbias, A.W, A.hbias, B.W, B.vbias, B.hbias,
                              make_ais_streams(3, 9), refresh_every=5)
    one.sweep(23, beta=betas)
    two.sweep(10, beta=betas)
    two.sweep(13, beta=betas, force_refresh=False, start=10)
    np.testing.assert_array_equal(one.visible(), two.visible())
    np.testing.assert_array_equal(one.streams, two.streams)


def test_temperatures_are_checked(pair):
    A, B = pair
    e = _engine.GibbsEngine(A.vbias, A.W, A.hbias, B.W, B.vbias, B.hbias,
                            make_ais_streams(0, 4))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        e.sweep(1, beta=[0.1, 0.2, 1.5, 0.3])
    with pytest.raises(ValueError):
        e.sweep(1, beta=[0.1, 0.2])
