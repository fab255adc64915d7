"""Parallel tempering (Cho, Raiko & Ilin 2010) and mode-hopping SML (Hu & Yu, AMH-p).

Without learning, each PT transition leaves p(v) invariant: on tiny RBMs the long-run
draws pass the shared stationarity check (chi-square against enumeration, with its power
check), and the same check fails for a deliberately wrong swap rule (the mode-hopping
moves' own checks are in test_modehop.py).  Then the training paths of both: thread counts, resume, history records, and bad input in one sentence.
"""
import numpy as np
import pytest

import cyrbm
from cyrbm import RBM, _anneal, _cd, _engine, _tempering
from cyrbm.capi import make_ais_streams
from cyrbm.models.tempering import TemperedChains, check_temperatures, parse_temperatures, retune
from _reference import (all_states, check_sampler, exact_distribution,
                        slightly_different,
                        tiny_model, total_variation)

LADDER = [0.0, 0.3, 0.6, 1.0]


def softplus(x):
    return np.logaddexp(0.0, x)


def tempered_distribution(model, t):
    """p_t(v) of the RBM (t W, b, c) over all_states, by enumeration (CRI10 Sec. IV)."""
    V = all_states(model.n_visible).astype(np.float64)
    f = V @ model.vbias + softplus(t * (V @ model.W) + model.hbias).sum(1)
    return np.exp(f - np.logaddexp.reduce(f))


@pytest.fixture(scope="module")
def model():
    """A 6 x 4 RBM with five local modes (fixed points of the mode-hopping optimiser)."""
    return tiny_model(6, 4, scale=1.5, seed=5)


# ------------------------------------------------------------------ PT invariance
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pt_samples_follow_p(model, dtype):
    m = model.astype(dtype)
    check_sampler(lambda n, seed: m.sample(n, steps=40, seed=seed, sampler="pt",
                                           temperatures=LADDER), model)


def test_pt_every_temperature_follows_its_own_rbm(model):
    """All rows of pt_sample: ladder m's chain at T_k follows p_{T_k} (the family
    (T W, b, c), not SM08's, which would scale c too)."""
    temps = np.array(LADDER)
    K1, n = temps.size, 20000
    v = (np.random.default_rng(0).random((n * K1, 6)) < 0.5).astype(np.uint8)
    acc = np.zeros((n, K1 - 1), np.int64)
    _tempering.pt_sample(model.W, model.vbias, model.hbias, v, temps, 40,
                         cyrbm.capi.make_streams(1, n * K1), cyrbm.capi.make_streams(2, n), acc, 2)
    k = 1
    p = tempered_distribution(model, temps[k])
    wrong = next(q for q in (tempered_distribution(model, temps[k] + d)
                             for d in (0.15, 0.1, 0.07, 0.05, 0.03))
                 if 0 < total_variation(p, q) <= 0.05)
    check_sampler(lambda n_, s: v[k::K1], model, target=lambda _: p, wrong=[wrong])
    assert np.all(acc > 0)


def python_pt(model, temps, n, rounds, seed, accept):
    """PT with the engine's sweeps and swaps written here in NumPy with the acceptance
    ``accept(log_r, u)``: the harness of the wrong-rule check."""
    temps = np.asarray(temps, float)
    K1, R = temps.size, n * temps.size
    eng = _engine.GibbsEngine(np.zeros(6), None, None, np.zeros((6, 4)), np.zeros(6),
                              np.zeros(4), make_ais_streams(seed, R), dtype=np.float64)
    eng.set_tempered(model.W, model.vbias, model.hbias)
    eng.set_visible((np.random.default_rng(seed).random((R, 6)) < 0.5).astype(np.uint8))
    order = np.arange(R).reshape(n, K1)
    beta = np.tile(temps, n)
    rng = np.random.default_rng(seed + 1)
    rows = np.arange(n)

    def f(v, t):
        return softplus(t[:, None] * (v @ model.W) + model.hbias).sum(1)

    for s in range(rounds):
        eng.sweep(1, beta=beta, force_refresh=True)
        V = eng.visible().astype(float)
        for k in range(K1 - 1, 0, -1):
            a, b = order[:, k], order[:, k - 1]
            hi, lo = np.full(n, temps[k]), np.full(n, temps[k - 1])
            log_r = f(V[a], lo) + f(V[b], hi) - f(V[a], hi) - f(V[b], lo)
            ok = accept(log_r, rng.random(n))
            order[ok, k], order[ok, k - 1] = b[ok], a[ok]
        beta[order.ravel()] = np.tile(temps, n)
    return eng.visible()[order[rows, -1]]


def test_pt_wrong_swap_rule_fails(model):
    right = lambda log_r, u: np.log(u) < log_r                   # Eq. 5
    wrong = lambda log_r, u: np.log(u) < -log_r                  # the ratio upside down
    check_sampler(lambda n, s: python_pt(model, LADDER, n, 40, s, right), model)
    with pytest.raises(AssertionError, match="do not follow"):
        check_sampler(lambda n, s: python_pt(model, LADDER, n, 40, s, wrong), model)


@pytest.mark.parametrize("dense", ["never", "auto", "always"])
def test_pt_runs_at_zero_recompute_their_visible_inputs(dense):
    """A tempered run at beta = 0 keeps no W h (its visible draw does not use it); when
    a swap gives it beta > 0 it must recompute it (by the row sums without subset
    tables, by the tables with them).  Chains whose inputs follow their flips (one
    refresh at the start) take the same path as chains refreshed every sweep, and every
    run at beta > 0 keeps the W h a refresh gives."""
    rng = np.random.default_rng(3)
    D, H, n = 24, 16, 30
    W, b, c = rng.normal(0, 0.2, (D, H)), rng.normal(0, 0.5, D), rng.normal(0, 0.5, H)
    temps = np.array([0.0, 1.0])
    v0 = (rng.random((2 * n, D)) < 0.5).astype(np.uint8)
    runs = []
    for every_sweep in (False, True):
        previous = _anneal.use_dense_tables(dense)
        try:
            eng = _engine.GibbsEngine(np.zeros(D), None, None, np.zeros((D, H)), np.zeros(D),
                                      np.zeros(H), make_ais_streams(4, 2 * n),
                                      dtype=np.float64, refresh_every=10000)
        finally:
            _anneal.use_dense_tables(previous)
        eng.set_tempered(W, b, c)
        eng.set_visible(v0)
        order = np.arange(2 * n, dtype=np.int32).reshape(n, 2)
        beta = np.tile(temps, n)
        streams = cyrbm.capi.make_streams(5, n)
        acc = np.zeros((n, 1), np.int64)
        for s in range(30):
            eng.sweep(1, beta=beta, force_refresh=every_sweep or s == 0, start=s + 1)
            eng.swap(temps, order, beta, streams, acc)
        eng.sweep(1, beta=beta, force_refresh=every_sweep, start=31)
        runs.append((eng.visible(), beta.copy(), eng.inputs()[3], acc.sum()))
    (v1, b1, u1, a1), (v2, b2, u2, _) = runs
    assert a1 > n                               # runs went from beta 0 to 1 and back
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(b1, b2)
    hot = b1 > 0
    np.testing.assert_allclose(u1[hot], u2[hot], rtol=0, atol=1e-12)


# ---------------------------------------------------------------- PTT invariance
def scaled(model, t):
    return cyrbm.RBM(t * model.W, model.vbias, t * model.hbias)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ptt_samples_follow_p(model, dtype):
    """Parallel trajectory tempering: the last rung's chains follow the last model
    (chi-square against enumeration, with the shared power check), the swaps between
    different models accepted at a rate in (0, 1)."""
    ladder = [scaled(model, t).astype(dtype) for t in (0.0, 0.4, 0.7)]
    m = model.astype(dtype)
    check_sampler(lambda n, seed: m.sample(n, steps=40, seed=seed, sampler="ptt",
                                           ladder=ladder), model)


def test_ptt_every_rung_follows_its_own_model(model):
    """Chains at every rung of the ladder follow that rung's model (swaps move states
    between models without biasing any), and no rung is the neighbour's distribution."""
    from cyrbm.models.tempering import TrajectoryChains
    rungs = [scaled(model, t) for t in (0.0, 0.5, 1.0)]
    n = 20000
    chains = TrajectoryChains(rungs, n, seed=3,
                              init=np.zeros((n, 6), np.uint8), dtype=np.float64, n_threads=2)
    chains.step(40)
    assert np.all((chains.swap_rates > 0.05) & (chains.swap_rates < 0.99)), chains.swap_rates
    states = chains.states(1)
    check_sampler(lambda n_, s: states, rungs[1], wrong=[slightly_different(rungs[1])])
    with pytest.raises(AssertionError, match="do not follow"):
        check_sampler(lambda n_, s: states, rungs[2])


def test_ptt_sample_is_the_same_for_any_threads(model):
    ladder = [scaled(model, t) for t in (0.2, 0.6)]
    a = model.sample(300, 10, seed=2, sampler="ptt", ladder=ladder, threads=1)
    b = model.sample(300, 10, seed=2, sampler="ptt", ladder=ladder, threads=2)
    np.testing.assert_array_equal(a, b)


def test_ptt_bad_input(model):
    with pytest.raises(ValueError, match="ladder"):
        model.sample(5, 2, sampler="ptt")
    with pytest.raises(ValueError, match="ladder"):
        model.sample(5, 2, ladder=[model])
    with pytest.raises(cyrbm.errors.ModelMismatchError, match="same shape"):
        model.sample(5, 2, sampler="ptt", ladder=[tiny_model(6, 3, seed=1)])
    with pytest.raises(ValueError, match="setting of method ptt"):
        cyrbm.Trainer(5, method="pcd", max_rungs=4)
    with pytest.raises(ValueError, match="swap threshold"):
        cyrbm.Trainer(5, method="ptt", swap_threshold=1.0)


def test_ptt_training_freezes_rungs():
    """PTT training: rung 0 stays the initial model (a copy, not the live parameters),
    rungs are frozen as the swap rate with the last one drops, up to max_rungs, and the
    history records them."""
    start = tiny_model(12, 5, scale=2.0, seed=1)
    tr, m = fit("ptt", epochs=16)
    rungs = tr._state["ptt"]
    assert 2 < rungs["W"].shape[0] <= 4
    np.testing.assert_array_equal(rungs["W"][0], start.W.astype(np.float32))
    # the last rung holds the model of the last update's negative phase
    assert not np.array_equal(rungs["W"][1], rungs["W"][0])
    assert 0 < np.abs(rungs["W"][-1] - m.W).max() < 0.5
    assert [r["rungs"] for r in tr.history][-1] == rungs["W"].shape[0]
    assert all(0 <= x <= 1 for r in tr.history for x in r["swap_rates"] if x is not None)


# ------------------------------------------------------------------ training
DATA = np.repeat(np.eye(4, 12, 0, np.uint8) + np.eye(4, 12, 4, np.uint8), 15, axis=0)


#: each method's own sampler settings (another method's are refused)
SAMPLER = {"pt": dict(temperatures="adaptive:5", adapt_every=2),
           "amh": dict(hop_prob=0.5, modes=4, radius=1, mode_every=2),
           "ptt": dict(swap_threshold=0.9, max_rungs=4, chains=8)}


def fit(method, threads=1, start=True, **kw):
    args = dict(method=method, epochs=3, batch_size=20, learning_rate=0.1, seed=4,
                threads=threads, monitor_size=0, progress=False, **SAMPLER.get(method, {}))
    args.update(kw)
    tr = cyrbm.Trainer(5, **args)
    # a start with several modes, so that AMH has hops to make from the first update
    return tr, tr.fit(DATA, model=tiny_model(12, 5, scale=2.0, seed=1) if start else None)


@pytest.mark.parametrize("method", ["pt", "amh", "ptt"])
def test_training_does_not_depend_on_threads(method):
    _, a = fit(method, threads=1)
    _, b = fit(method, threads=2)
    for x, y in zip((a.W, a.vbias, a.hbias), (b.W, b.vbias, b.hbias)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("method", ["pt", "amh", "ptt"])
def test_resume_is_bit_identical(method, tmp_path):
    _, whole = fit(method, epochs=4)
    ck = tmp_path / "c.npz"
    fit(method, epochs=2, checkpoint=ck)
    assert method != "amh" or len(np.load(ck)["trainer_amh_modes"]) >= 2
    tr = cyrbm.Trainer(5, **{**dict(method=method, epochs=4, batch_size=20, learning_rate=0.1,
                                    seed=4, threads=1, monitor_size=0, progress=False,
                                    checkpoint=ck), **SAMPLER[method]})
    resumed = tr.fit(DATA, resume=True)
    np.testing.assert_array_equal(resumed.W, whole.W)
    np.testing.assert_array_equal(resumed.hbias, whole.hbias)


def test_pt_negative_phase_matches_the_model_expectation(model):
    """The negative phase of PT training (the T = 1 chains after the swaps, with the
    engine's kept inputs, through cd_statistics with k = 0), averaged over rounds without
    learning, is E_model[v p(h | v)^T] by enumeration, within 4 standard errors."""
    from cyrbm.models.tempering import TemperedChains
    M, rounds = 200, 150
    def expectation(m):
        V, p, _ = exact_distribution(m)
        Vf = V.astype(np.float64)
        P = 1.0 / (1.0 + np.exp(-(Vf @ m.W + m.hbias)))
        return (p[:, None, None] * Vf[:, :, None] * P[:, None, :]).sum(0)

    exact = expectation(model)
    init = (np.random.default_rng(2).random((M * len(LADDER), 6)) < 0.5).astype(np.uint8)
    pt = TemperedChains(LADDER, 6, 4, M, dtype=np.float64, seed=3, init=init)
    data = np.zeros((M, 6), np.uint8)          # the positive phase adds nothing
    grads = (np.empty((6, 4)), np.empty(6), np.empty(4))
    settings = dict(k=0, persistent=True, learning_rate=0.0, momentum=0.0,
                    weight_decay=0.0, scale=1.0, n_threads=1)
    ws = _cd.Workspace(M, 6, 4, np.float64)
    velocity = tuple(np.zeros_like(a) for a in grads)
    means = []
    for t in range(rounds + 20):
        pt.step(model)
        top = pt.top()
        x = pt.top_inputs(np.arange(M))
        np.testing.assert_allclose(x, top @ model.W, atol=1e-12)    # W^T v, kept
        if t < 20:
            continue
        _cd.cd_statistics((model.W, model.vbias, model.hbias), data, top.copy(),
                          cyrbm.capi.make_streams(t, M, "chains"), grads, settings)
        # the same statistics ladder by ladder (the ladders are independent chains)
        per_ladder = top[:, :, None] * (1.0 / (1.0 + np.exp(-(x + model.hbias))))[:, None, :]
        np.testing.assert_allclose(per_ladder.mean(0), -grads[0] / M, atol=1e-12)
        means.append(per_ladder)
        # the trainer's path (sigma of the kept inputs) gives the same update
        params = tuple(a.copy() for a in (model.W, model.vbias, model.hbias))
        lr = dict(settings, learning_rate=1.0, scale=1.0 / M)
        _cd.cd_update(params, tuple(a.copy() for a in velocity), data, top.copy(),
                      cyrbm.capi.make_streams(t, M, "chains"), lr, workspace=ws,
                      chain_inputs=x)
        np.testing.assert_allclose(params[0] - model.W, grads[0] / M, atol=1e-12)
    with pytest.raises(ValueError, match="k = 0"):
        _cd.cd_update(params, velocity, data, top.copy(),
                      cyrbm.capi.make_streams(0, M, "chains"), dict(lr, k=1), workspace=ws,
                      chain_inputs=x)
    # successive rounds of a ladder are correlated, the ladders independent: the
    # standard error from the spread of the M ladders' averages over the rounds
    ladder_means = np.mean(means, axis=0)
    se = ladder_means.std(0, ddof=1) / np.sqrt(M)
    z = (ladder_means.mean(0) - exact) / se
    assert np.all(np.abs(z) <= 4), np.array2string(z, precision=2)
    # power: the expectation of a model whose visible biases are 0.1 higher is rejected
    shifted = expectation(cyrbm.RBM(model.W, model.vbias + 0.1, model.hbias))
    assert np.max(np.abs(ladder_means.mean(0) - shifted) / se) > 4


def test_history_records():
    tr, _ = fit("pt")
    rec = tr.history[-1]
    assert len(rec["swap_rates"]) == 4 and all(0 <= r <= 1 for r in rec["swap_rates"])
    t = np.array(rec["temperatures"])
    assert t[0] == 0 and t[-1] == 1 and np.all(np.diff(t) > 0)
    tr, model = fit("amh")
    rec = tr.history[-1]
    assert rec["hops_proposed"] > 0 and 0 <= rec["hop_acceptance"] <= 1
    assert rec["modes"] == len(tr.modes_) >= 1
    assert model.meta["training"]["settings"]["hop_prob"] == 0.5


def test_save_modes(tmp_path):
    tr, _ = fit("amh")
    tr.save_modes(tmp_path / "modes.npz")
    modes = cyrbm.load_data(str(tmp_path / "modes.npz"))
    np.testing.assert_array_equal(modes, tr.modes_)


def test_adaptive_retune_equalises_rates():
    t = np.linspace(0, 1, 6)
    rates = np.array([0.95, 0.9, 0.8, 0.4, 0.1])       # the cold end swaps rarely
    new = retune(t, rates, damping=1.0)
    assert new[0] == 0 and new[-1] == 1 and np.all(np.diff(new) > 0)
    assert np.diff(new)[-1] < np.diff(t)[-1]            # denser where swaps fail


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("spec, message", [
    ([0.0, 0.5, 0.4, 1.0], "increase strictly"),
    ([0.0, 0.5, 0.9], "end at 1"),
    ("0,0.5,0.9", "end at 1"),
    ([-0.1, 1.0], "negative"),
    ("1", "at least 2"),
    ("adaptive:x", "count"),
    ("adaptive:0,0.5", "end at 1"),
])
def test_bad_temperatures(spec, message):
    with pytest.raises(ValueError, match=message):
        cyrbm.Trainer(5, method="pt", temperatures=spec)


@pytest.mark.parametrize("kw, message", [
    (dict(method="pt", chains=0), "chains"),
    (dict(method="amh", hop_prob=1.5), r"\[0, 1\]"),
    (dict(method="amh", hop_prob=-0.1), r"\[0, 1\]"),
    (dict(method="amh", radius=-1), "radius R"),
    (dict(method="amh", modes=0), "capacity K"),
    (dict(method="ptt", k=2), "one round per update"),
])
def test_bad_sampler_settings(kw, message):
    with pytest.raises(ValueError, match=message):
        cyrbm.Trainer(5, **kw)


def test_sample_checks_its_sampler(model):
    with pytest.raises(ValueError, match="'gibbs', 'pt' or 'ptt'"):
        model.sample(3, sampler="mh")
    with pytest.raises(ValueError, match="end at 1"):
        model.sample(3, sampler="pt", temperatures=[0, 0.5])
    a = model.sample(50, steps=5, seed=2, sampler="pt", threads=1)
    b = model.sample(50, steps=5, seed=2, sampler="pt", threads=2)
    np.testing.assert_array_equal(a, b)


def test_ladder_parsing():
    t, ad = parse_temperatures(None)
    assert t.size == 21 and not ad and t[1] == 0.05
    t, ad = parse_temperatures("adaptive:10")
    assert ad and t.size == 10
    t, ad = parse_temperatures("0.9,0.95,1")
    assert not ad and t[0] == 0.9
    assert parse_temperatures(5)[0].size == 5
    t, ad = parse_temperatures("adaptive:0.8,0.9,1")
    assert ad and t[0] == 0.8
    np.testing.assert_array_equal(check_temperatures([0, 1]), [0.0, 1.0])


# ------------------------------------------------------------------ command line
@pytest.mark.parametrize("options, needle", [
    (["--method", "pt", "--temperatures", "0,0.5,0.4,1"], "increase strictly"),
    (["--method", "pt", "--temperatures", "0,0.5,0.9"], "end at 1"),
    (["--method", "pt", "--chains", "0"], "--chains must be at least 1"),
    (["--method", "amh", "--hop-prob", "1.5"], "--hop-prob must be at least 0 and at most 1"),
    (["--method", "amh", "--hop-prob", "-0.5"], "--hop-prob"),
    (["--method", "amh", "--radius", "-1"], "--radius must be at least 0"),
    (["--method", "amh", "--modes", "0"], "--modes must be at least 1"),
    (["--method", "amh", "--hop-weight", "far"], "--hop-weight"),
    (["--method", "cd", "--temperatures", "5"], "--temperatures is a setting of --method pt"),
])
def test_cli_bad_sampler_options(options, needle, tmp_path, capsys):
    from cyrbm.cli import main
    code = main(["train", "digits:train", "-o", str(tmp_path / "m.npz"), "--hidden", "4",
                 "--epochs", "1", *options])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert needle in lines[0], err


def test_cli_trains_pt_and_amh(tmp_path, capsys):
    import json
    from cyrbm.cli import main
    for method, extra in (("pt", ["--temperatures", "adaptive:4", "--chains", "50"]),
                          ("amh", ["--hop-prob", "0.2", "--modes", "5", "--radius", "3",
                                   "--hop-weight", "distance"])):
        code = main(["train", "digits:train", "-o", str(tmp_path / f"{method}.npz"),
                     "--hidden", "8", "--epochs", "2", "--method", method, "--json", *extra])
        out = json.loads(capsys.readouterr().out)
        assert code == 0 and out["method"] == method
        rec = out["history"][-1]
        assert ("swap_rates" in rec) if method == "pt" else ("hop_acceptance" in rec)
        saved = cyrbm.RBM.load(tmp_path / f"{method}.npz").meta["training"]["settings"]
        assert saved["method"] == method


def test_cli_sample_by_parallel_tempering(tmp_path, capsys):
    """cyrbm sample --sampler pt: the image of RBM.sample(sampler="pt") (needs Pillow)."""
    Image = pytest.importorskip("PIL.Image")
    from cyrbm.cli import main
    model_path = tmp_path / "m.npz"
    assert main(["train", "digits:train", "-o", str(model_path), "--hidden", "16",
                 "--epochs", "5", "--lr", "0.1", "--no-progress"]) == 0
    out = tmp_path / "pt.png"
    code = main(["sample", str(model_path), "-o", str(out), "--n", "12", "--steps", "50",
                 "--sampler", "pt", "--seed", "2"])
    text = capsys.readouterr().out
    assert code == 0 and "pt sweeps" in text
    with Image.open(out) as picture:
        pixels = np.asarray(picture)
    assert pixels.std() > 0                                  # not blank
    v = cyrbm.RBM.load(model_path).sample(12, 50, seed=2, sampler="pt")
    assert 0 < v.mean() < 1


def test_cli_sample_by_parallel_trajectory_tempering(tmp_path, capsys):
    """cyrbm sample --sampler ptt --ladder FILES: RBM.sample(sampler="ptt") along the
    checkpoint files, and the ladder's errors in one sentence."""
    pytest.importorskip("PIL.Image")
    from cyrbm.cli import main
    paths = [tmp_path / f"e{e}.npz" for e in (1, 4)]
    for e, path in zip((1, 4), paths):
        assert main(["train", "digits:train", "-o", str(path), "--hidden", "16", "--epochs",
                     str(e), "--lr", "0.1", "--no-progress"]) == 0
    out = tmp_path / "ptt.png"
    code = main(["sample", str(paths[1]), "-o", str(out), "--n", "12", "--steps", "20",
                 "--sampler", "ptt", "--ladder", str(paths[0]), "--seed", "2"])
    assert code == 0 and "ptt sweeps" in capsys.readouterr().out
    for extra, needle in ((["--sampler", "ptt"], "give them with --ladder"),
                          (["--ladder", str(paths[0])], "give them with --ladder"),
                          (["--sampler", "ptt", "--ladder", str(tmp_path / "no.npz")],
                           "no such model file")):
        code = main(["sample", str(paths[1]), "-o", str(out)] + extra)
        err = capsys.readouterr().err
        assert code == 1 and needle in err and "Traceback" not in err


# ------------------------------------------------ the PT tracker's sums from the engine
def _tracker_case(seed=0, D=30, H=20, M=8, K1=4, dtype=np.float32):
    rng = np.random.default_rng(seed)

    def model(s):
        r = np.random.default_rng(s)
        return RBM(r.normal(0, 0.5, (D, H)).astype(dtype), r.normal(0, 0.5, D).astype(dtype),
                   r.normal(0, 0.5, H).astype(dtype))
    temps = np.linspace(0, 1, K1)
    init = (rng.random((M * K1, D)) < 0.5).astype(np.uint8)
    return temps, init, model


def _f(model, v, beta):
    """sum_j softplus(beta (W^T v)_j + c_j) in float64 (ln p*_beta(v) - b.v, CRI10)."""
    x = np.asarray(v, np.float64) @ model.W.astype(np.float64)
    return np.sum(np.logaddexp(0.0, np.multiply.outer(beta, 1.0) * x
                               + model.hbias.astype(np.float64)), axis=-1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_prepared_round_is_the_same_bits(dtype):
    # prepare (set the parameters, recompute the inputs) then step == step alone; the
    # round's sums (the tracker's, from its hidden draws) == tempered_sums before it, at
    # each chain's beta and, for the chains one temperature below the top, at the top's
    temps, init, model = _tracker_case(dtype=dtype)
    a, b = (TemperedChains(temps, 30, 20, 8, init=init, seed=1, dtype=dtype) for _ in "ab")
    m0, m1 = model(1), model(2)
    for t in range(3):
        a.step(m0)
        b.step(m0)
    a.step(m1)
    db = np.random.default_rng(9).normal(size=30)
    below = b.order[:, -2].copy()
    b.prepare(m1)                                        # every chain's inputs, now
    want = b.tempered_sums(np.arange(32), b.beta, db)   # of the states before the round
    want_top = b.tempered_sums(below, 1.0, db)
    b.prepare(m1, dbias=db)                              # the round's first sweep sums
    b.step(m1)
    assert np.array_equal(b.round_sums, want)            # from the round's own exps
    assert np.array_equal(b.top_sums[below], want_top)
    a.step(m1)
    X = b.engine.visible().astype(np.float64)
    below, beta = b.order[:, -2].copy(), b.beta.copy()   # (the swaps move them)
    b.prepare(m1, dbias=db)
    b.step(m1)
    tol = 2e-4 if dtype == np.float32 else 1e-9
    want = np.array([_f(m1, X[r], bt) for r, bt in enumerate(beta)]) + X @ db
    assert np.max(np.abs(b.round_sums - want)) < tol
    want = np.array([_f(m1, X[r], 1.0) for r in below]) + X[below] @ db
    assert np.max(np.abs(b.top_sums[below] - want)) < tol
    a.step(m0)
    b.prepare(m1)             # prepared for other parameters: step sets its own
    b.step(m0)
    assert np.array_equal(a.engine.visible(), b.engine.visible())
    assert np.array_equal(a.order, b.order) and np.array_equal(a.terms, b.terms)
    assert np.array_equal(a.engine.streams, b.engine.streams)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_swap_terms_and_sums_are_the_free_energies(dtype):
    temps, init, model = _tracker_case(dtype=dtype)
    K1, M = temps.size, 8
    tol = 2e-4 if dtype == np.float32 else 1e-9
    ch = TemperedChains(temps, 30, 20, M, init=init, seed=2, dtype=dtype)
    m = model(3)
    for _ in range(4):
        ch.step(m)
    # the swaps by hand from the swept states, pair (K-1, K) down to (0, 1)
    ch.engine.set_tempered(m.W, m.vbias, m.hbias)
    ch.engine.sweep(1, beta=ch.beta, force_refresh=True)
    X = ch.engine.visible()
    order, acc0 = ch.order.copy(), ch.accepted.copy()
    terms = np.zeros((M, 3 * K1 - 1))
    ch.engine.swap(ch.temps, ch.order, ch.beta, ch.swap_streams, ch.accepted, terms)
    took = ch.accepted - acc0
    for mm in range(M):
        o = order[mm].copy()
        for k in range(K1 - 1, 0, -1):
            xa, xb = X[o[k]], X[o[k - 1]]
            wf = _f(m, xb, temps[k]) - _f(m, xb, temps[k - 1])
            wr = _f(m, xa, temps[k - 1]) - _f(m, xa, temps[k])
            assert abs(terms[mm, K1 + k - 1] - wf) < tol
            assert abs(terms[mm, 2 * K1 - 1 + k - 1] - wr) < tol
            if took[mm, k - 1]:
                o[k], o[k - 1] = o[k - 1], o[k]
        assert np.array_equal(o, ch.order[mm])
        for k in range(K1):
            assert abs(terms[mm, k] - _f(m, X[o[k]], temps[k])) < tol
        assert abs(terms[mm, -1] - _f(m, X[o[K1 - 2]], 1.0)) < tol
    assert took.sum() > 0
    # the kept inputs' sums, of these parameters and, after prepare, of new ones
    rows = np.arange(M * K1)
    beta = np.random.default_rng(7).random(rows.size)
    db = np.random.default_rng(8).normal(size=30)
    want = np.array([_f(m, X[r], b) for r, b in zip(rows, beta)])
    assert np.max(np.abs(ch.tempered_sums(rows, beta) - want)) < tol
    m2 = model(4)
    ch.prepare(m2)
    want = np.array([_f(m2, X[r], b) for r, b in zip(rows, beta)]) + X @ db
    assert np.max(np.abs(ch.tempered_sums(rows, beta, db) - want)) < tol
