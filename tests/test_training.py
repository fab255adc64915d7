"""cyrbm.training.trainer: the CD/PCD statistics and update, and the Trainer (reproducibility,
checkpoints, interruption, divergence, schedules)."""
import os
import signal

import numpy as np
import pytest
from scipy.special import expit

import cyrbm
from cyrbm import RBM, Trainer, TrainingDiverged, _cd, _random
from cyrbm.data.datasets import load_data
from cyrbm.errors import ModelMismatchError
from _reference import (all_states, check_sampler, exact_distribution, exact_gradient,
                        exact_log_unnormalized, gibbs_transition, mean_log_likelihood,
                        slightly_different, state_codes, tiny_model, total_variation)


@pytest.fixture(scope="module")
def wide_data():
    rng = np.random.default_rng(0)
    # 784 x 0.13 density, like binarized MNIST: exercises many column blocks per thread
    return (rng.random((1000, 784)) < 0.13).astype(np.uint8)


@pytest.mark.parametrize("method,k", [("cd", 1), ("pcd", 2), ("cd", "1:3")])
def test_identical_parameters_with_one_and_two_threads(wide_data, method, k):
    models = [Trainer(64, method=method, k=k, epochs=2, batch_size=50, seed=3, threads=t,
                      monitor_size=0, progress=False).fit(wide_data) for t in (1, 2)]
    np.testing.assert_array_equal(models[0].W, models[1].W)
    np.testing.assert_array_equal(models[0].vbias, models[1].vbias)
    np.testing.assert_array_equal(models[0].hbias, models[1].hbias)
    assert not np.array_equal(models[0].W, RBM.random(784, 64, seed=3, data=wide_data).W)


def test_float32_and_float64_training_agree():
    X = load_data("digits")
    m32, m64 = (Trainer(50, epochs=2, seed=1, dtype=dt, monitor_size=0).fit(X)
                for dt in (np.float32, np.float64))
    assert m32.dtype == np.float32 and m64.dtype == np.float64
    # same seed, same draws: only rounding differs (a rare flipped draw moves W by
    # about lr / batch = 5e-4)
    assert np.max(np.abs(m32.W - m64.W)) < 5e-3
    assert np.max(np.abs(m32.hbias - m64.hbias)) < 5e-3


def test_training_improves_pseudo_likelihood_on_digits():
    X = load_data("digits")
    trainer = Trainer(100, epochs=15, learning_rate=0.1, seed=0, monitor_size=300)
    trainer.fit(X)
    pll = [h["pseudo_log_likelihood"] for h in trainer.history]
    assert pll[-1] > pll[0] + 2.0, pll
    assert all(h["k"] == 1 for h in trainer.history)


def test_pcd_learns_a_tiny_distribution():
    """PCD on data drawn from a known 8 x 6 RBM: the trained model's exact log-likelihood
    of the data gets close to that of the true model (both computed exactly)."""
    rng = np.random.default_rng(4)
    truth = RBM(1.5 * rng.standard_normal((8, 6)), np.zeros(8), np.zeros(6), dtype=np.float64)
    V, p, log_z = exact_distribution(truth)
    data = V[rng.choice(len(V), size=5000, p=p)]
    ll_truth = np.mean(exact_log_unnormalized(truth, data)) - log_z
    model = Trainer(6, method="pcd", k=1, epochs=60, batch_size=50, learning_rate=0.05,
                    momentum=0.5, weight_decay=0.0, seed=1, dtype=np.float64,
                    monitor_size=0).fit(data)
    _, _, lz = exact_distribution(model)
    ll_model = np.mean(exact_log_unnormalized(model, data)) - lz
    uniform = -8 * np.log(2)
    # the fit recovers most of the gap between a uniform model and the truth
    assert ll_model > ll_truth - 0.1 * (ll_truth - uniform), (ll_model, ll_truth, uniform)


def test_k_schedule_and_learning_rate_schedule():
    t = Trainer(10, k="1:25", epochs=25, learning_rate=0.1, lr_decay=100)
    assert [t.k_at(e) for e in (0, 12, 24)] == [1, 13, 25]
    assert t.learning_rate_at(0) == 0.1
    assert t.learning_rate_at(100) == pytest.approx(0.05)
    assert Trainer(10, k=3).k_at(5) == 3
    for bad in ("0", "a:b", "1:2:3", 0, -1):
        with pytest.raises(ValueError):
            Trainer(10, k=bad)


@pytest.mark.parametrize("method", ["cd", "pcd"])
def test_resume_continues_bit_identically(tmp_path, method):
    X = load_data("digits")
    ck = tmp_path / "ck.npz"
    settings = dict(method=method, batch_size=64, seed=2, learning_rate=0.1, lr_decay=50)
    Trainer(30, epochs=2, checkpoint=ck, **settings).fit(X)
    resumed = Trainer(30, epochs=4, checkpoint=ck, **settings).fit(X, resume=True)
    straight = Trainer(30, epochs=4, **settings).fit(X)
    np.testing.assert_array_equal(resumed.W, straight.W)
    np.testing.assert_array_equal(resumed.hbias, straight.hbias)
    # the checkpoint is a model file too
    assert RBM.load(ck).n_hidden == 30


def test_ctrl_c_saves_a_checkpoint_and_resume_matches(tmp_path):
    X = load_data("digits")
    ck = tmp_path / "ck.npz"
    settings = dict(method="pcd", batch_size=50, seed=5, monitor_size=0)

    def interrupt_after_first_epoch(record):
        if record["epoch"] == 1:
            os.kill(os.getpid(), signal.SIGINT)

    trainer = Trainer(20, epochs=3, checkpoint=ck, callback=interrupt_after_first_epoch, **settings)
    # Python's usual Ctrl-C, even when the tests run with SIGINT ignored (`pytest &`)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            trainer.fit(X)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
    meta = RBM.load(ck).meta["checkpoint"]
    assert meta["epoch"] == 1 and meta["batch"] == 1      # stopped after one more batch
    resumed = Trainer(20, epochs=3, checkpoint=ck, **settings).fit(X, resume=True)
    straight = Trainer(20, epochs=3, **settings).fit(X)
    np.testing.assert_array_equal(resumed.W, straight.W)


def test_divergence_stops_with_a_clear_error_and_keeps_the_checkpoint(tmp_path):
    X = load_data("digits")
    ck = tmp_path / "ck.npz"
    Trainer(20, epochs=1, checkpoint=ck, seed=0).fit(X)
    before = RBM.load(ck).W.copy()
    with pytest.raises(TrainingDiverged) as err:
        Trainer(20, epochs=3, checkpoint=ck, seed=0, learning_rate=1e38).fit(X, resume=True)
    message = str(err.value)
    assert "diverged at epoch 2" in message and "ck.npz" in message and "\n" not in message
    np.testing.assert_array_equal(RBM.load(ck).W, before)   # last good checkpoint intact


def test_resume_refuses_other_data_or_settings(tmp_path):
    X = load_data("digits")
    ck = tmp_path / "ck.npz"
    Trainer(10, epochs=1, checkpoint=ck).fit(X)
    with pytest.raises(ModelMismatchError, match="different training data"):
        Trainer(10, epochs=2, checkpoint=ck).fit(X[:500], resume=True)
    with pytest.raises(ModelMismatchError, match="batch_size"):
        Trainer(10, epochs=2, checkpoint=ck, batch_size=7).fit(X, resume=True)
    with pytest.raises(cyrbm.ModelFileError, match="no checkpoint"):
        Trainer(10, epochs=2, checkpoint=tmp_path / "none.npz").fit(X, resume=True)


def test_fit_from_a_given_model_and_width_mismatch():
    X = load_data("digits")
    start = RBM.random(64, 12, seed=9)
    model = Trainer(epochs=1, monitor_size=0).fit(X, model=start)
    assert model.n_hidden == 12
    with pytest.raises(ModelMismatchError, match="64 columns but the model has 10"):
        Trainer(epochs=1).fit(X, model=RBM.random(10, 3))


@pytest.mark.parametrize("kwargs", [dict(learning_rate=-1), dict(momentum=1.0), dict(batch_size=0),
                                    dict(method="sgd"), dict(weight_decay=float("nan")),
                                    dict(epochs=-1), dict(seed=-3)])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        Trainer(10, **kwargs)


# ------------------------------------------------------------- CD statistics
def _update_z_scores(model, data, k, update, reference, batch=20000):
    """z-scores of one update (parameter moves at learning rate 1, one batch of ``batch``
    chains: each data row repeated equally often) against reference values of (W, vbias,
    hbias), with each parameter's standard error computed exactly: the chains' end states
    after k sweeps from their data rows follow rows of the enumerated k-sweep transition
    matrix."""
    W, a = (np.asarray(x, dtype=np.float64) for x in (model.W, model.hbias))
    V = all_states(model.n_visible).astype(np.float64)
    ends = gibbs_transition(model, k)[state_codes(data)]
    pm = expit(V @ W + a)
    stats_per_state = np.hstack([(V[:, :, None] * pm[:, None, :]).reshape(len(V), -1), V, pm])
    var = (ends @ stats_per_state ** 2 - (ends @ stats_per_state) ** 2).mean(axis=0)
    se = np.sqrt(var / batch)
    moved = np.concatenate([np.ravel(u) for u in update])
    return (moved - np.concatenate([np.ravel(r) for r in reference])) / se


def test_one_training_update_follows_the_log_likelihood_gradient(model86):
    """One Trainer update (CD-20 from the data, learning rate 1, no momentum or weight
    decay, one batch of 20,000 chains: 40 data rows 500 times each) moves every parameter
    of an 8 x 6 model by a Monte Carlo estimate of the exact log-likelihood gradient,
    within 5 standard errors (computed exactly by enumeration).  The reference gradient is
    exact (enumeration), checked against central finite differences of the exact mean
    log-likelihood; CD-20's own bias, computed from the 20-sweep transition matrix, is
    below 1e-6 standard errors here.  Power: the same check rejects the gradient of a
    slightly different model (W + 0.05) and the CD-1 update (biased on this model)."""
    rng = np.random.default_rng(5)
    data = (rng.random((40, 8)) < 0.4).astype(np.uint8)
    W, b, a = model86.W.copy(), model86.vbias.copy(), model86.hbias.copy()
    exact = exact_gradient(model86, data)
    eps = 1e-5
    for which, index in [(0, (0, 0)), (0, (3, 2)), (0, (7, 5)), (1, 0), (1, 5), (2, 1)]:
        plus, minus = [W.copy(), b.copy(), a.copy()], [W.copy(), b.copy(), a.copy()]
        plus[which][index] += eps
        minus[which][index] -= eps
        fd = (mean_log_likelihood(*plus, data) - mean_log_likelihood(*minus, data)) / (2 * eps)
        assert abs(fd - exact[which][index]) < 1e-7

    def update(k):
        trained = Trainer(6, method="cd", k=k, epochs=1, batch_size=20000, learning_rate=1.0,
                          momentum=0.0, weight_decay=0.0, seed=3, dtype=np.float64, threads=1,
                          monitor_size=0, progress=False).fit(data, model=model86.copy())
        return trained.W - W, trained.vbias - b, trained.hbias - a

    cd20 = update(20)
    cd20_expected = _cd_expectation(model86, data, 20)
    assert np.max(np.abs(_update_z_scores(model86, data, 20, cd20_expected, exact))) < 1e-6
    z = _update_z_scores(model86, data, 20, cd20, exact)
    assert np.max(np.abs(z)) < 5, np.max(np.abs(z))
    other = exact_gradient(cyrbm.RBM(W + 0.05, b, a, dtype=np.float64), data)
    assert np.max(np.abs(_update_z_scores(model86, data, 20, cd20, other))) > 10
    assert np.max(np.abs(_update_z_scores(model86, data, 1, update(1), exact))) > 10


def _cd_expectation(model, data, k):
    """The exact expected CD-k gradient estimate (data term minus the mean of v p(h|v)
    over the chains' end states), by enumeration."""
    W, a = (np.asarray(x, dtype=np.float64) for x in (model.W, model.hbias))
    V = all_states(model.n_visible).astype(np.float64)
    q = gibbs_transition(model, k)[state_codes(data)].mean(0)
    pd, pm = expit(data @ W + a), expit(V @ W + a)
    return (data.T @ pd / len(data) - (V * q[:, None]).T @ pm,
            data.mean(0) - q @ V, pd.mean(0) - q @ pm)


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
    _cd.cd_statistics((W, b, a), v_data, chains, streams, (dW, db, da),
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
    gW, gb, ga = exact_gradient(model86, data.astype(np.float64))
    z = (dW / B - gW).ravel() / se
    assert np.max(np.abs(z)) < 5, np.max(np.abs(z))
    zb = (db / B - gb) / (chains.std(0, ddof=1) / np.sqrt(B))
    za = (da / B - ga) / (pk.std(0, ddof=1) / np.sqrt(B))
    assert np.max(np.abs(zb)) < 5 and np.max(np.abs(za)) < 5
    # power: against the gradient of a slightly different model the same check fails
    other = cyrbm.RBM(W + 0.1, b, a, dtype=np.float64)
    oW, _, _ = exact_gradient(other, data.astype(np.float64))
    assert np.max(np.abs((dW / B - oW).ravel() / se)) > 10


def test_cd_k_chains_end_after_k_sweeps():
    """The negative chains of CD-k (cd_statistics, not persistent), all started at one
    visible state v0 of a 6 x 4 model, end distributed as T^k(. | v0), the k-sweep block
    Gibbs transition by enumeration (the shared stationarity check with that target).
    Beyond the default power check, the same test rejects T^(k-1) and T^(k+1): the kernel
    makes exactly k sweeps."""
    model = tiny_model(6, 4, seed=3)
    W, b, a = model.W, model.vbias, model.hbias
    k, v0 = 3, np.zeros(6, np.uint8)

    def sample(n, seed):
        data = np.ascontiguousarray(np.tile(v0, (n, 1)))
        chains = np.empty_like(data)
        out = [np.empty_like(W), np.empty_like(b), np.empty_like(a)]
        _cd.cd_statistics((W, b, a), data, chains, _random.make_streams(seed, "chains", n),
                          out, dict(k=k, persistent=False, learning_rate=0.0, momentum=0.0,
                                       weight_decay=0.0, scale=1.0, n_threads=1))
        return chains

    def after(sweeps):
        return lambda m: gibbs_transition(m, sweeps)[0]       # row of v0 = 000000

    check_sampler(sample, model, target=after(k), max_tv=0.07,
                  wrong=[slightly_different(model), after(k - 1)(model), after(k + 1)(model)])


def test_pcd_persistent_chains_are_stationary(tmp_path):
    """The persistent chains of PCD training pass the shared stationarity check when the
    model does not move: the Trainer refuses a learning rate of 0, so it runs at 1e-300,
    where every update rounds away (asserted: the parameters are unchanged bit for bit).
    20,000 chains (the batch) all start at the training row 000000 and take 20 updates of
    one sweep (T^20(. | 000000) is within 1e-6 of p(v) in total variation), so they pass
    only if they persist from update to update; they are read from the final checkpoint."""
    model = tiny_model(6, 4, seed=3)

    def sample(n, seed):
        data = np.zeros((n, 6), np.uint8)
        ck = tmp_path / f"pcd{seed}.npz"
        trained = Trainer(4, method="pcd", k=1, epochs=20, batch_size=n, learning_rate=1e-300,
                          momentum=0.5, weight_decay=0.0, seed=seed, dtype=np.float64,
                          threads=1, monitor_size=0, progress=False,
                          checkpoint=ck).fit(data, model=model.copy())
        for got, want in zip((trained.W, trained.vbias, trained.hbias),
                             (model.W, model.vbias, model.hbias)):
            np.testing.assert_array_equal(got, want)
        with np.load(ck) as arrays:
            return arrays["trainer_chains"]

    assert total_variation(gibbs_transition(model, 20)[0], exact_distribution(model)[1]) < 1e-6
    check_sampler(sample, model)


@pytest.mark.parametrize("method", ["cd", "pcd"])
def test_weight_decay_through_training_follows_the_momentum_recurrence(method):
    """Weight decay in Trainer.fit, alone: with visible biases of 50 and all-one data,
    every negative sample equals its data row, so the data gradient is zero (to
    rounding) and W follows vel = momentum * vel - lr * wd * W, W = W + vel, over all
    12 updates (3 epochs of 4 batches); the biases do not move (decay is on W only),
    and without decay W stays put."""
    rng = np.random.default_rng(0)
    W0, a0 = 0.3 * rng.standard_normal((8, 6)), rng.standard_normal(6)
    b0 = np.full(8, 50.0)
    data = np.ones((20, 8), np.uint8)
    lr, mom, wd = 0.1, 0.5, 0.05
    for decay in (0.0, wd):
        trained = Trainer(6, method=method, k=1, epochs=3, batch_size=5, learning_rate=lr,
                          momentum=mom, weight_decay=decay, seed=0, dtype=np.float64,
                          threads=1, monitor_size=0, progress=False).fit(
            data, model=RBM(W0.copy(), b0.copy(), a0.copy(), dtype=np.float64))
        W, vel = W0.copy(), np.zeros_like(W0)
        for _ in range(12):
            vel = mom * vel - lr * decay * W
            W = W + vel
        np.testing.assert_allclose(trained.W, W, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(trained.vbias, b0)
        np.testing.assert_array_equal(trained.hbias, a0)
    assert np.max(np.abs(W - W0)) > 0.01          # the decay moved W measurably


@pytest.mark.parametrize("probabilities", [False, True])
def test_weight_decay_in_one_update_with_a_data_gradient(model86, probabilities):
    """One CD-1 update from the same model and seed with and without weight decay (both
    update paths: sampled states, and fit(probabilities=True)): the samples are the same
    (they depend only on the starting W), so W differs by exactly -lr * wd * W (the W
    before the update) and the biases not at all."""
    rng = np.random.default_rng(3)
    data = (rng.random((30, 8)) < 0.4).astype(np.uint8)
    lr, wd = 0.2, 0.1

    def update(decay):
        return Trainer(6, method="cd", k=1, epochs=1, batch_size=30, learning_rate=lr,
                       momentum=0.9, weight_decay=decay, seed=4, dtype=np.float64,
                       threads=1, monitor_size=0, progress=False).fit(
            data, model=model86.copy(), probabilities=probabilities)

    plain, decayed = update(0.0), update(wd)
    assert np.max(np.abs(plain.W - model86.W)) > 0.01
    np.testing.assert_allclose(decayed.W - plain.W, -lr * wd * model86.W, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(decayed.vbias, plain.vbias)
    np.testing.assert_array_equal(decayed.hbias, plain.hbias)


@pytest.mark.parametrize("method", ["cd", "pcd", "pt", "amh"])
def test_warm_start_continues_as_one_run(method):
    """fit(epochs=1) then fit(warm_start=True) for 2 more equals one fit of 3 epochs bit
    for bit (velocities, chains, streams, epoch and update counts carry over); a refit
    from the model alone (fresh velocities and chains) differs, so the check can fail."""
    data = (np.random.default_rng(3).random((30, 7)) < 0.4).astype(np.uint8)
    common = dict(method=method, batch_size=10, momentum=0.5, monitor_size=0,
                  progress=False, seed=2, lr_decay=5.0)
    whole = Trainer(4, epochs=3, **common).fit(data)
    trainer = Trainer(4, epochs=1, **common)
    model = trainer.fit(data)
    trainer.epochs = 2
    warm = trainer.fit(data, warm_start=True)
    assert trainer.epochs == 3 and [r["epoch"] for r in trainer.history] == [1, 2, 3]
    np.testing.assert_array_equal(warm.W, whole.W)
    cold = Trainer(4, epochs=2, **common).fit(data, model=model)
    assert not np.array_equal(cold.W, whole.W)
    with pytest.raises(ValueError, match="call fit without it first"):
        Trainer(4, **common).fit(data, warm_start=True)
    with pytest.raises(ModelMismatchError, match="8 columns"):
        trainer.fit(np.zeros((5, 8), np.uint8), warm_start=True)
