"""Mode-hopping moves (Hu & Yu, AMH-p; cyrbm/training/modehop.py).

Without learning, the hops (alone, and between PCD-1 Gibbs updates) leave p(v) invariant:
on a tiny RBM the long-run draws pass the shared stationarity check (chi-square against
enumeration, with its power check), and the same check fails for a deliberately wrong
acceptance rule.  The compiled hops match the NumPy reference of tests/_reference.py and
do not depend on threads; the mode set keeps its capacity, radius and order.  Training
with method="amh" is tested with PT's in test_tempering.py.
"""
import numpy as np
import pytest

import cyrbm
import cyrbm.capi  # make_streams; the package loads capi lazily
from cyrbm import _cd
from cyrbm.training import modehop
from _reference import (all_states, amh_hop_reference, check_sampler, exact_draws,
                        tiny_model)


@pytest.fixture(scope="module")
def model():
    """A 6 x 4 RBM with five local modes (fixed points of the mode-hopping optimiser)."""
    return tiny_model(6, 4, scale=1.5, seed=5)


# ----------------------------------------------------------------- AMH invariance
def mode_set(model, K=5, R=1, weighting="uniform"):
    L = modehop.ModeSet(K, R, weighting, model.n_visible)
    L.rebuild(model, all_states(model.n_visible))
    assert len(L) >= 3
    return L


def hops(model, L, n, seed, rounds, rule=None, gibbs=False):
    """``rounds`` AMH iterations on n chains: with ``gibbs``, from random bits, a hop of
    probability 1/2 then the PCD-1 Gibbs update of training (cd_statistics, nothing
    learnt); without, from exact draws, hops alone (p = 1).  The hops are the compiled
    kernel's, or with a ``rule`` the NumPy reference's with that acceptance."""
    if gibbs:
        v = (np.random.default_rng(seed).random((n, model.n_visible)) < 0.5).astype(np.uint8)
    else:
        v = exact_draws(model, n, seed).astype(np.uint8)
    streams = cyrbm.capi.make_streams(seed, n, "chains")
    gstreams = cyrbm.capi.make_streams(seed + 7, n, "chains")
    grads = (np.empty_like(model.W), np.empty_like(model.vbias), np.empty_like(model.hbias))
    settings = dict(k=1, persistent=True, learning_rate=0.0, momentum=0.0, weight_decay=0.0,
                    scale=1.0, n_threads=1)
    for _ in range(rounds):
        if rule is None:
            modehop.hop(model, v, L, 0.5 if gibbs else 1.0, streams, n_threads=2)
        else:
            amh_hop_reference(model, v, L, 0.5 if gibbs else 1.0, streams, accept_rule=rule)
        if gibbs:
            _cd.cd_statistics((model.W, model.vbias, model.hbias), v, v, gstreams, grads,
                              settings)
    return v


@pytest.mark.parametrize("weighting", ["uniform", "prob", "distance"])
def test_mode_hops_leave_p_invariant(model, weighting):
    L = mode_set(model, weighting=weighting)
    check_sampler(lambda n, s: hops(model, L, n, s, 3), model)


def test_amh_transition_follows_p(model):
    L = mode_set(model)
    check_sampler(lambda n, s: hops(model, L, n, s, 40, gibbs=True), model)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighting", ["uniform", "prob", "distance"])
def test_compiled_hops_match_the_numpy_reference(model, weighting, dtype):
    """The kernel (modehop_t.h) draws the same uniforms as the NumPy reference and so
    makes the same proposals and decisions, with the terms of Eq. 6 equal to rounding."""
    m = model.astype(dtype)
    L = mode_set(m, weighting=weighting)
    v0 = exact_draws(model, 3000, 3).astype(np.uint8)
    s0 = cyrbm.capi.make_streams(3, v0.shape[0], "chains")
    got, ref = [], []
    v1, s1, v2, s2 = v0.copy(), s0.copy(), v0.copy(), s0.copy()
    for _ in range(3):
        a = modehop.hop(m, v1, L, 0.7, s1, n_threads=2, terms=got)
        b = amh_hop_reference(m, v2, L, 0.7, s2, terms=ref)
        assert a == b and a[1] > 0
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(s1, s2)
    for (rows_a, ta), (rows_b, tb) in zip(got, ref):
        np.testing.assert_array_equal(rows_a, rows_b)
        tol = 1e-9 if dtype == np.float64 else 1e-4
        np.testing.assert_allclose(ta, tb, rtol=tol, atol=tol)


def test_compiled_hops_do_not_depend_on_threads(model):
    L = mode_set(model, weighting="prob")
    v0 = exact_draws(model, 500, 4).astype(np.uint8)
    out = []
    for threads in (1, 2):
        v, s = v0.copy(), cyrbm.capi.make_streams(4, v0.shape[0], "chains")
        modehop.hop(model, v, L, 0.5, s, n_threads=threads)
        out.append((v, s))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_amh_wrong_acceptance_fails(model):
    """The harness of the reference passes with Eq. 6 and fails without its proposal
    terms."""
    L = mode_set(model)
    eq6 = lambda t: ((t["log_p_new"] + t["ghat_new_j"] + t["H_ji"] + t["gtilde_i_old"])
                     - (t["log_p_old"] + t["ghat_old_i"] + t["H_ij"] + t["gtilde_j_new"]))
    check_sampler(lambda n, s: hops(model, L, n, s, 3, rule=eq6), model)
    # the Metropolis ratio without the proposal terms of Eq. 6
    naive = lambda t: t["log_p_new"] - t["log_p_old"]
    with pytest.raises(AssertionError, match="do not follow"):
        check_sampler(lambda n, s: hops(model, L, n, s, 3, rule=naive), model)


def test_mode_set_respects_capacity_radius_and_order(model):
    L = modehop.ModeSet(3, 2, "prob", model.n_visible)
    walk = all_states(6)
    modes = L.rebuild(model, walk)
    assert 1 <= len(modes) <= 3
    assert np.array_equal(modehop.local_mode(model, modes), modes)     # m = mu(m)
    lp = modehop.log_unnormalized(model, modes)
    assert np.all(np.diff(lp) <= 0)                                    # most probable first
    d = (modes[:, None] != modes[None]).sum(2)
    assert np.all(d[~np.eye(len(modes), dtype=bool)] >= 2)
    logH = L.log_hop(model)
    np.testing.assert_allclose(np.exp(logH).sum(1), 1.0)
    assert np.all(np.isneginf(np.diag(logH)))
