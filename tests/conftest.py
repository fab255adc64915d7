"""Shared fixtures and exact references for cyrbm's tests.

The references here are slow and obvious on purpose: they enumerate every state of a
tiny model with plain NumPy, so each compiled kernel is checked against the truth.
"""
import itertools

import numpy as np
import pytest

import cyrbm


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than about 20 s (deselect with -m 'not slow')")


def pytest_report_header(config):
    c = cyrbm.config()
    return (f"cyrbm {c['version']} from {cyrbm.__file__}; OpenMP "
            f"{'on' if c['openmp'] else 'off'}, {c['threads']} threads, BLAS {c['blas']}")


def all_states(n):
    """Every 0/1 vector of length n, as rows of a (2**n, n) uint8 array."""
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
    """(states, p(v)) over every visible state, by enumeration."""
    V = all_states(model.n_visible)
    logp = exact_log_unnormalized(model, V)
    log_z = np.logaddexp.reduce(logp)
    return V, np.exp(logp - log_z), log_z


def tiny_model(n_visible=8, n_hidden=6, scale=1.0, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return cyrbm.RBM(scale * rng.standard_normal((n_visible, n_hidden)),
                     0.5 * rng.standard_normal(n_visible),
                     0.5 * rng.standard_normal(n_hidden), dtype=dtype)


@pytest.fixture
def model86():
    return tiny_model()
