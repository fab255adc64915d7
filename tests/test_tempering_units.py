"""Parallel tempering (CRI10 Table I, Eq. 5) and parallel trajectory tempering (Béreux et
al. 2025) on the other unit types: GaussianRBM and SRBM (cyrbm.models.tempering.TemperedStates,
TrajectoryChains over each class's own sweeps).

The tempered families (stated in GaussianRBM.sample and SRBM.sample): beta scales W, the
hidden biases c and, for the SRBM, L; the visible biases and sigma stay, so that

    Gaussian:  ln p*_beta(v) = -sum_i (v_i - b_i)^2 / (2 s_i^2)
                               + sum_j softplus(beta (c_j + sum_i W_ij v_i / s_i)),
    SRBM:      ln p*_beta(v) = b.v + beta v^T L v / 2 + sum_j softplus(beta (c + W^T v)_j).

Checked against exact answers: a Gaussian RBM's moments of v at any beta by enumerating
h (v | h is N(b + beta s W h, s^2), p_beta(h) ~ exp(beta c.h + beta b.u / s + beta^2
|u|^2 / 2), u = W h), an SRBM's distribution by enumerating v.  Each Monte Carlo check
uses independent chains (one final state each), a fixed seed and |z| <= 4 (or a
chi-square p-value >= 1e-4), with a power check: a wrong swap rule or a wrong family
fails the same tolerance.
"""
import numpy as np
import pytest

import cyrbm
from cyrbm._random import pt_swap_streams, sample_streams
from cyrbm.errors import ModelTypeError
from cyrbm.models import tempering
from cyrbm.models.gaussian import GaussianRBM
from cyrbm.models.srbm import SRBM
from cyrbm.training.trainer import Trainer
from _reference import (SIGNIFICANCE, all_states, chi_square_pvalue, swap_log_ratio,
                        tempered_states_rounds)

Z = 4.0                      # the tolerance of every z-score


# ------------------------------------------------------------------ models, exact
def gauss_model(seed=0, D=3, M=6, scale=1.3):
    rng = np.random.default_rng(seed)
    return GaussianRBM(scale * rng.standard_normal((D, M)), 0.5 * rng.standard_normal(D),
                       rng.standard_normal(M) - 1.0, sigma=rng.uniform(0.6, 1.2, D),
                       dtype=np.float64)


def srbm_model(seed=0, D=6, M=3, scale=1.2):
    rng = np.random.default_rng(seed)
    L = 1.5 * rng.standard_normal((D, D))
    L = np.triu(L, 1) + np.triu(L, 1).T
    return SRBM(scale * rng.standard_normal((D, M)), 0.5 * rng.standard_normal(D),
                rng.standard_normal(M), L, dtype=np.float64)


def scaled(model, t):
    """The model with W (and L) times t: a ladder's earlier model for PTT."""
    p = {k: np.array(v, np.float64) for k, v in model._parameters().items()}
    p["W"] = t * p["W"]
    if "L" in p:
        p["L"] = t * p["L"]
    return type(model)(**p, dtype=np.float64)


def gauss_moments(model, beta=1.0, c_scaled=True):
    """E[v] and E[v v^T] under the Gaussian family at beta, by enumerating h; with
    ``c_scaled=False`` a wrong family (the hidden biases unscaled, as CRI10's binary
    one) for the power checks."""
    W, b, c, s = (np.asarray(a, np.float64) for a in (model.W, model.vbias, model.hbias,
                                                       model.sigma))
    M = W.shape[1]
    H = ((np.arange(1 << M)[:, None] >> np.arange(M)) & 1).astype(np.float64)
    u = H @ W.T
    logp = (beta if c_scaled else 1.0) * H @ c + beta * (u * b / s).sum(1) \
        + 0.5 * beta ** 2 * (u * u).sum(1)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    mean = b + beta * s * u                             # E[v | h]
    m1 = p @ mean
    m2 = np.einsum("h,hi,hj->ij", p, mean, mean) + np.diag(s * s)
    return m1, m2


def gauss_z(v, model, beta=1.0, **wrong):
    """z-scores of the means and second moments of independent draws ``v``."""
    m1, m2 = gauss_moments(model, beta, **wrong)
    v = np.asarray(v, np.float64)
    n, D = v.shape
    iu = np.triu_indices(D)
    stats = np.concatenate([v, (v[:, :, None] * v[:, None, :])[:, iu[0], iu[1]]], axis=1)
    exact = np.concatenate([m1, m2[iu]])
    return (stats.mean(0) - exact) / (stats.std(0, ddof=1) / np.sqrt(n))


def srbm_probs(model, beta=1.0, scale_L=True):
    """p_beta(v) over all_states(D) (most significant bit first) by enumeration; with
    ``scale_L=False`` a wrong family (L unscaled) for the power checks."""
    W, b, c, L = (np.asarray(a, np.float64) for a in (model.W, model.vbias, model.hbias,
                                                       model.L))
    V = all_states(W.shape[0]).astype(np.float64)
    lp = V @ b + (beta if scale_L else 1.0) * 0.5 * np.sum((V @ L) * V, axis=1) \
        + np.logaddexp(0.0, beta * (V @ W + c)).sum(1)
    p = np.exp(lp - lp.max())
    return p / p.sum()


def log_p_beta(model, v, beta):
    """ln p*_beta(v) of either family, written out in NumPy from the parameters."""
    W, b, c = (np.asarray(a, np.float64) for a in (model.W, model.vbias, model.hbias))
    v = np.asarray(v, np.float64)
    if isinstance(model, GaussianRBM):
        s = np.asarray(model.sigma, np.float64)
        return (-0.5 * (((v - b) / s) ** 2).sum(1)
                + np.logaddexp(0.0, beta * ((v / s) @ W + c)).sum(1))
    L = np.asarray(model.L, np.float64)
    return (v @ b + beta * 0.5 * np.sum((v @ L) * v, axis=1)
            + np.logaddexp(0.0, beta * (v @ W + c)).sum(1))


LADDER = [0.0, 0.25, 0.5, 0.75, 1.0]


def run_ladders(model, n, rounds, seed, temps=LADDER):
    """``n`` independent ladders at ``temps`` from the beta = 0 draw: the TemperedStates."""
    K1 = len(temps)
    v = np.zeros((n * K1, model.n_visible), dtype=model._state_dtype)
    streams = sample_streams(seed, n * K1)
    model._sweeps(v, streams, 0, 1, 2)
    ladders = tempering.TemperedStates(temps, n, n_threads=2, state={
        "chains": v, "streams": streams,
        "swap_streams": pt_swap_streams(seed, n)})
    for _ in range(rounds):
        ladders.step(model)
    return ladders


def wrong_swaps(monkeypatch, variant):
    """Replace the swap rule of TemperedStates by a wrong one (the engine driver's
    ``variant``: 1 the untempered ln p*_1 at both rungs, 2 the term e left out)."""
    monkeypatch.setattr(tempering, "_SWAP_VARIANT", variant)


# --------------------------------------------------------------- PT: Gaussian RBM
def test_gaussian_pt_reproduces_the_exact_moments_and_a_wrong_swap_fails(monkeypatch):
    g = gauss_model()
    n, steps = 8000, 30
    z = gauss_z(g.sample(n, steps, seed=5, sampler="pt", temperatures=LADDER), g)
    assert np.max(np.abs(z)) <= Z, z
    # power: the swap rule with the untempered ln p* (ln p*_1 at every rung, which for
    # this family takes every swap) must fail the same tolerance.  (Subtler errors, the
    # hidden biases unscaled as in CRI10's binary family, move the beta = 1 moments by
    # only 1-4 se at these sizes: one Gibbs sweep a round at beta = 1 undoes most of a
    # wrong swap on a model this small; the rung check below catches the family.)
    wrong_swaps(monkeypatch, 1)
    z_wrong = gauss_z(g.sample(n, steps, seed=5, sampler="pt", temperatures=LADDER), g)
    assert np.max(np.abs(z_wrong)) > Z, z_wrong


def test_gaussian_rungs_follow_their_tempered_family():
    """The chains at beta = 0.5 of PT ladders have the moments of p_0.5 of the stated
    family (beta scaling W and c): the tempered conditional of the sweeps and the
    swaps both hold; the same draws fail the moments of the family with c unscaled."""
    g = gauss_model(seed=2)
    ladders = run_ladders(g, 8000, 25, seed=3)
    half = ladders.v[ladders.order[:, 2]]
    z = gauss_z(half, g, beta=0.5)
    assert np.max(np.abs(z)) <= Z, z
    assert np.max(np.abs(gauss_z(half, g, beta=0.5, c_scaled=False))) > Z


# ------------------------------------------------------------------- PT: SRBM
def test_srbm_pt_reproduces_the_exact_distribution_and_a_wrong_swap_fails(monkeypatch):
    s = srbm_model()
    p = srbm_probs(s)
    n, steps = 6000, 25
    draws = s.sample(n, steps, seed=7, sampler="pt", temperatures=LADDER)
    pvalue, tv = chi_square_pvalue(draws, p)
    assert pvalue >= SIGNIFICANCE, (pvalue, tv)
    # power: the lateral term left out of the swap rule (e = v^T L v / 2 dropped)
    wrong_swaps(monkeypatch, 2)
    wrong = s.sample(n, steps, seed=7, sampler="pt", temperatures=LADDER)
    assert chi_square_pvalue(wrong, p)[0] < SIGNIFICANCE


def test_srbm_rungs_follow_their_tempered_family():
    """The chains at beta = 0.5 follow p_0.5 (beta scaling W, c and L), not the family
    with L unscaled."""
    s = srbm_model(seed=3)
    ladders = run_ladders(s, 6000, 25, seed=4)
    half = ladders.v[ladders.order[:, 2]]
    assert chi_square_pvalue(half, srbm_probs(s, 0.5))[0] >= SIGNIFICANCE
    assert chi_square_pvalue(half, srbm_probs(s, 0.5, scale_L=False))[0] < SIGNIFICANCE


# ------------------------------------------------------------ the swap rule exactly
@pytest.mark.parametrize("make", [gauss_model, srbm_model])
def test_swap_rule_matches_the_family(make):
    """Eq. 5 on a few states: the reference's swap_log_ratio from the classes'
    _tempered_parts equals ln p*_lo(y) + ln p*_hi(x) - ln p*_lo(x) - ln p*_hi(y) from
    the parameters (so the driver, which takes the reference's decisions below, takes
    Eq. 5's)."""
    model = make(seed=5)
    M, D = 7, model.n_visible
    rng = np.random.default_rng(0)
    v = (rng.standard_normal((2 * M, D)) if isinstance(model, GaussianRBM)
         else (rng.random((2 * M, D)) < 0.5)).astype(model._state_dtype)
    g, e, x = model._tempered_parts(v)
    for beta in (0.0, 0.3, 1.0):
        np.testing.assert_allclose(g + beta * e + np.logaddexp(0, beta * x).sum(1),
                                   log_p_beta(model, v, beta), rtol=1e-12, atol=1e-12)
    lo, hi = v[:M], v[M:]
    ref = (log_p_beta(model, hi, 0.3) + log_p_beta(model, lo, 0.7)
           - log_p_beta(model, lo, 0.3) - log_p_beta(model, hi, 0.7))
    got = swap_log_ratio(0.3, 0.7, e[:M], x[:M], e[M:], x[M:])
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)


def ladder_start(model, n, temps, seed):
    v = np.zeros((n * len(temps), model.n_visible), dtype=model._state_dtype)
    streams = sample_streams(seed, n * len(temps))
    model._sweeps(v, streams, 0, 1, 1)
    return v, streams, pt_swap_streams(seed, n)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["gaussian", "srbm"])
def test_the_engine_driver_gives_the_numpy_rounds_bits(kind, dtype):
    """TemperedStates on the engine driver (_tempering.gauss_pt_sweeps / srbm_pt_sweeps)
    gives, bit for bit, the states, streams and swap counts of the NumPy round it
    replaced (tests/_reference.py: tempered_states_rounds), for 1 and 2 threads, with
    ladders that do not fill the Gaussian blocks of 16 chains.  (The two compute ln r
    in float64 in different orders, so a decision could differ only where u falls
    within rounding of min(1, r): the margin printed is the closest one met.)"""
    if kind == "gaussian":
        model = gauss_model(seed=4, D=9, M=7, scale=0.6).astype(dtype)
    else:
        model = srbm_model(seed=4, D=11, M=5, scale=0.5).astype(dtype)
    temps = np.array([0.0, 0.2, 0.45, 0.7, 0.85, 1.0])
    n, rounds = 37, 30
    v, streams, swaps = ladder_start(model, n, temps, seed=2)
    ref = [v.copy(), streams.copy(), swaps.copy(), np.zeros((n, temps.size - 1), np.int64)]
    margin = tempered_states_rounds(model, *ref[:3], temps, ref[3], rounds)
    print("closest decision:", margin)
    assert 0 < ref[3].sum() < n * (temps.size - 1) * rounds
    for threads in (1, 2):
        ladders = tempering.TemperedStates(temps, n, n_threads=threads, state={
            "chains": v, "streams": streams, "swap_streams": swaps})
        for _ in range(rounds // 2):
            ladders.step(model)
        ladders.step(model, rounds=rounds - rounds // 2)
        for got, want in zip((ladders.v, ladders.streams, ladders.swap_streams,
                              ladders.accepted), ref):
            np.testing.assert_array_equal(got, want)


def test_the_swaps_hidden_inputs_are_summed_in_unit_order_by_every_variant():
    """cyrbm_inputs_rows (anneal.c, per ISA): x = a W + c with each sum from 0 over the
    units in order, a multiply then an add, then c, for 1-4 rows at a time and widths
    that take every column path (4 vectors, one vector, single columns); every variant
    gives those bits.  Power check: the same sums in reverse unit order, or with c added
    first, differ somewhere."""
    from cyrbm import _dispatch, _tempering
    rng = np.random.default_rng(11)
    D = 53
    saved = _dispatch.kernels_in_use()
    try:
        for isa in _dispatch.kernels_runnable():
            _dispatch.use_kernels(isa)
            for M in (1, 3, 8, 13, 32, 37, 100):
                for N in (1, 2, 3, 4, 7):
                    a = rng.standard_normal((N, D))
                    W = rng.standard_normal((D, M))
                    c = rng.standard_normal(M)
                    want = np.zeros((N, M))
                    for i in range(D):
                        want = want + a[:, i:i + 1] * W[i]
                    got = _tempering.swap_inputs(a, W, c)
                    np.testing.assert_array_equal(got, want + c, err_msg=f"{isa} {M} {N}")
    finally:
        _dispatch.use_kernels(saved)
    back, first = np.zeros((N, M)), np.zeros((N, M)) + c
    for i in reversed(range(D)):
        back = back + a[:, i:i + 1] * W[i]
    for i in range(D):
        first = first + a[:, i:i + 1] * W[i]
    assert not np.array_equal(back + c, got) and not np.array_equal(first, got)


# ---------------------------------------------------------------------- PTT
def test_gaussian_ptt_with_a_ladder_of_two_models(monkeypatch):
    g = gauss_model(seed=0)
    ladder = [scaled(g, 0.4)]
    n, steps = 8000, 30
    z = gauss_z(g.sample(n, steps, seed=2, sampler="ptt", ladder=ladder), g)
    assert np.max(np.abs(z)) <= Z, z
    # power: swaps that drop ln p* (always taken) bring the earlier model's states up
    monkeypatch.setattr(tempering.TrajectoryChains, "_log_p",
                        lambda self, model, v: np.zeros(v.shape[0]))
    z_wrong = gauss_z(g.sample(n, steps, seed=2, sampler="ptt", ladder=ladder), g)
    assert np.max(np.abs(z_wrong)) > Z, z_wrong


def test_srbm_ptt_with_a_ladder_of_two_models(monkeypatch):
    s = srbm_model(seed=6)
    ladder = [scaled(s, 0.4)]
    n, steps = 6000, 25
    draws = s.sample(n, steps, seed=3, sampler="ptt", ladder=ladder)
    assert chi_square_pvalue(draws, srbm_probs(s))[0] >= SIGNIFICANCE
    monkeypatch.setattr(tempering.TrajectoryChains, "_log_p",
                        lambda self, model, v: np.zeros(v.shape[0]))
    wrong = s.sample(n, steps, seed=3, sampler="ptt", ladder=ladder)
    assert chi_square_pvalue(wrong, srbm_probs(s))[0] < SIGNIFICANCE


# ----------------------------------------------------------- threads, refusals
@pytest.mark.parametrize("make", [gauss_model, srbm_model])
def test_samples_do_not_depend_on_threads(make):
    model = make()
    for kw in (dict(sampler="pt", temperatures=4), dict(sampler="ptt", ladder=[scaled(model, .5)])):
        one = model.sample(300, 5, seed=9, threads=1, **kw)
        two = model.sample(300, 5, seed=9, threads=2, **kw)
        np.testing.assert_array_equal(one, two)
        assert one.dtype == model._state_dtype and one.shape == (300, model.n_visible)
    with pytest.raises(ValueError, match="adaptive temperatures are for training"):
        model.sample(3, 2, sampler="pt", temperatures="adaptive:4")
    with pytest.raises(ModelTypeError, match="a ladder model must be a"):
        model.sample(3, 2, sampler="ptt", ladder=[cyrbm.RBM(np.zeros((model.n_visible, 2)),
                                                             np.zeros(model.n_visible),
                                                             np.zeros(2))])


# ------------------------------------------------------------------- training
def gauss_data(n=240, D=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3)) @ rng.standard_normal((3, D)) * 0.6 \
        + 0.4 * rng.standard_normal((n, D))


def srbm_data(n=240):
    return cyrbm.load_data("digits")[:n, :16]


CASES = {
    "gaussian-pt": (dict(visible="gaussian", method="pt", temperatures="adaptive:4",
                         adapt_every=2), gauss_data),
    "gaussian-ptt": (dict(visible="gaussian", method="ptt", swap_threshold=0.9), gauss_data),
    "srbm-pt": (dict(lateral=True, method="pt", temperatures=4), srbm_data),
    "srbm-ptt": (dict(lateral=True, method="ptt", swap_threshold=0.9), srbm_data),
}


def train(case, epochs, **extra):
    settings, data = CASES[case]
    kw = dict(batch_size=40, learning_rate=0.02, seed=3, dtype=np.float64, monitor_size=20,
              **settings)
    kw.update(extra)
    return Trainer(5, epochs=epochs, **kw), data()


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_runs_reports_swap_rates_and_resumes_bit_for_bit(case, tmp_path):
    trainer, X = train(case, 2, threads=1)
    model = trainer.fit(X)
    record = trainer.history[-1]
    rates = record["swap_rates"]
    assert rates and all(r is None or 0 <= r <= 1 for r in rates)
    assert any(r for r in rates)
    if "pt" == settings_method(case):
        assert len(record["temperatures"]) == len(rates) + 1
    else:
        assert record["rungs"] == len(rates) + 1
    # the same bits with 2 threads
    other, _ = train(case, 2, threads=2)
    np.testing.assert_array_equal(other.fit(X).W, model.W)
    # a checkpointed run of 1 epoch resumed to 2 gives the uninterrupted run's bits
    ck = tmp_path / "ck.npz"
    first, _ = train(case, 1, checkpoint=ck, checkpoint_seconds=0)
    first.fit(X)
    resumed, _ = train(case, 2, checkpoint=ck, checkpoint_seconds=0)
    again = resumed.fit(X, resume=True)
    for name, a in model._parameters().items():
        np.testing.assert_array_equal(again._parameters()[name], a, err_msg=name)
    assert resumed.history[-1]["swap_rates"] == rates


def settings_method(case):
    return CASES[case][0]["method"]


def test_srbm_tempered_training_sweeps_by_gibbs_and_gaussian_amh_is_refused():
    t = Trainer(3, lateral=True, method="pt")
    assert t.reconstruction == "gibbs"
    assert t.settings()["lateral"]["reconstruction"] == "gibbs"
    with pytest.raises(ValueError, match="an SRBM trains with amh only with "
                                         "reconstruction='gibbs'"):
        Trainer(3, lateral=True, method="amh")
    with pytest.raises(ValueError, match="not amh: Hu & Yu's mode set is of Hamming balls"):
        Trainer(3, visible="gaussian", method="amh")
    # an SRBM given to a binary Trainer of method ptt trains by Gibbs chains too
    s = srbm_model()
    trainer = Trainer(3, method="ptt", epochs=1, batch_size=20, seed=1, monitor_size=0)
    trainer.fit(srbm_data(60)[:, :6], model=s)
    assert trainer.reconstruction == "gibbs" and trainer.history[-1]["rungs"] >= 2


# ----------------------------------------------------------------- command line
@pytest.mark.parametrize("method", ["pt", "ptt"])
def test_cli_trains_a_gaussian_rbm_on_whitened_patches(method, tmp_path, capsys):
    import json
    from _commands import run
    pytest.importorskip("sklearn")          # the bundled patches are of its sample images
    X = cyrbm.load_data("patches", real=True)[:400, :64]
    np.save(tmp_path / "p.npy", X)
    argv = ["train", str(tmp_path / "p.npy"), "--visible", "gaussian", "--whiten", "zca",
            "--method", method, "--hidden", "8", "--epochs", "2", "--batch", "50", "--lr",
            "0.001", "--threads", "1"] + (["--temperatures", "5"] if method == "pt" else [])
    code, out, err = run(argv + ["-o", str(tmp_path / "m.npz"), "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    rates = result["history"][-1]["swap_rates"]
    assert len(rates) == (4 if method == "pt" else result["history"][-1]["rungs"] - 1)
    assert all(0 <= r <= 1 for r in rates)
    m = GaussianRBM.load(tmp_path / "m.npz")
    assert m.whitening is not None and m.meta["training"]["settings"]["method"] == method
    code, out, err = run(argv + ["-o", str(tmp_path / "n.npz")], capsys)
    assert code == 0 and "swap rates" in err, err


def test_cli_trains_an_srbm_by_pt(tmp_path, capsys):
    import json
    from _commands import run
    np.save(tmp_path / "x.npy", srbm_data(120))
    code, out, err = run(["train", str(tmp_path / "x.npy"), "-o", str(tmp_path / "s.npz"),
                          "--lateral", "--method", "pt", "--temperatures", "3", "--hidden",
                          "4", "--epochs", "1", "--batch", "40", "--json"], capsys)
    assert code == 0, err
    record = json.loads(out)["history"][-1]
    assert len(record["swap_rates"]) == 2
    assert SRBM.load(tmp_path / "s.npz").meta["training"]["settings"]["lateral"][
        "reconstruction"] == "gibbs"
