"""cyrbm.models.srbm.SRBM (binary visible units with lateral connections, binary hidden units;
Osindero & Hinton 2008, MS09 Sec. 5.2) against exact answers: ln Z against a brute
force over (v, h), the sequential Gibbs sampler's moments against the exact ones, AIS
within its stated error (with a power check), training by CD with damped mean-field
and by sequential Gibbs, files, checkpoints and bad input.  Monte Carlo checks use
fixed seeds and tolerances in standard errors."""
import itertools
import math

import numpy as np
import pytest

from cyrbm import Annealer, RBM, SRBM, Trainer
from cyrbm._random import sample_streams
from cyrbm.errors import AnnealingError, ModelFileError, ModelMismatchError


def lateral(D, scale, rng):
    L = np.triu(rng.normal(0, scale, (D, D)), 1)
    return L + L.T


def model_of(D, M, seed=0, scale=0.7, lscale=0.5, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return SRBM(rng.normal(0, scale, (D, M)), rng.normal(0, 0.5, D), rng.normal(0, 0.5, M),
                lateral(D, lscale, rng), dtype=dtype)


def states(n):
    return np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.float64)


def brute_joint(m):
    """-E(v, h) for every (v, h), rows v, columns h, straight from the energy."""
    W, b, c, L = (np.asarray(a, np.float64) for a in (m.W, m.vbias, m.hbias, m.L))
    V, H = states(m.n_visible), states(m.n_hidden)
    return (V @ b)[:, None] + (H @ c)[None, :] + V @ W @ H.T \
        + 0.5 * np.einsum("ni,ij,nj->n", V, L, V)[:, None]


def exact_moments(m):
    """E[v], E[v v^T] and E[h] by enumerating (v, h)."""
    e = brute_joint(m)
    p = np.exp(e - e.max())
    p /= p.sum()
    V, H = states(m.n_visible), states(m.n_hidden)
    pv = p.sum(axis=1)
    return pv @ V, V.T @ (pv[:, None] * V), p.sum(axis=0) @ H


# ------------------------------------------------------------------- exact ln Z
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_log_partition_and_free_energy_match_a_brute_force(dtype):
    m = model_of(7, 4, seed=1, lscale=0.8, dtype=dtype)
    e = brute_joint(m)
    assert m.log_partition() == pytest.approx(float(np.logaddexp.reduce(e.ravel())),
                                              rel=0, abs=1e-10)
    np.testing.assert_allclose(m.log_unnormalized(states(7)), np.logaddexp.reduce(e, axis=1),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.logaddexp.reduce(m.log_prob(states(7))), 0, atol=1e-10)
    # power: the same sum without L's half (v^T L v instead of v^T L v / 2) differs
    assert abs(SRBM(m.W, m.vbias, m.hbias, 2 * m.L).log_partition() - m.log_partition()) > 0.1
    with pytest.raises(AnnealingError, match=r"sums 2\^21 visible states and the limit is 20"):
        model_of(21, 2).log_partition()


# ----------------------------------------------------------------- sampling
def test_gibbs_moments_match_the_exact_ones():
    """E[v], E[v v^T] (off the diagonal) and E[h] of 20,000 chains after 130 sweeps
    (past the exact recomputation of the lateral field at step 128) against the exact
    ones, within 4.5 standard errors; a model whose L moved by 0.3 on one pair fails the
    same test (power)."""
    m = model_of(6, 4, seed=2, scale=0.8, lscale=1.0)
    mean, second, hmean = exact_moments(m)
    n = 20000

    def run(model):
        v = np.zeros((n, 6), np.uint8)
        h = model._sweeps(v, sample_streams(1, n), 0, 131, 2)
        return v.astype(float), h.astype(float)

    def close(model):
        v, h = run(model)
        ok = np.abs(v.mean(0) - mean) < 4.5 * np.sqrt(mean * (1 - mean) / n)
        vv = v.T @ v / n
        ok_vv = np.abs(vv - second) < 4.5 * np.sqrt(second * (1 - second) / n)
        ok_h = np.abs(h.mean(0) - hmean) < 4.5 * np.sqrt(hmean * (1 - hmean) / n)
        return ok.all() and ok_vv.all() and ok_h.all()

    assert close(m)
    L = m.L.copy()
    L[0, 1] += 0.3
    L[1, 0] += 0.3
    assert not close(SRBM(m.W, m.vbias, m.hbias, L))
    # the public sampler runs the same chains, from sample_streams(seed)
    v = np.zeros((500, 6), np.uint8)
    m._sweeps(v, sample_streams(1, 500), 0, 11, 1)
    np.testing.assert_array_equal(m.sample(500, 10, seed=1), v)


def test_results_do_not_depend_on_threads():
    m = model_of(10, 8, seed=8, dtype=np.float32)
    np.testing.assert_array_equal(m.sample(64, 20, seed=3, threads=1),
                                  m.sample(64, 20, seed=3, threads=2))
    data = m.sample(300, 20, seed=4)
    runs = [Annealer(runs=32, schedule="linear:300", seed=2, threads=t, chunk=50)
            .log_partition(m, data=data) for t in (1, 2)]
    np.testing.assert_array_equal(runs[0].log_weights, runs[1].log_weights)
    # the pieces of a run (chunk) give the one call's bits
    one = Annealer(runs=32, schedule="linear:300", seed=2, chunk=1000).log_partition(m, data=data)
    np.testing.assert_array_equal(runs[0].log_weights, one.log_weights)
    fits = [Trainer(8, method="pcd", epochs=2, batch_size=20, seed=1, threads=t, lateral=True,
                    reconstruction="gibbs", monitor_size=0).fit(data) for t in (1, 2)]
    np.testing.assert_array_equal(fits[0].L, fits[1].L)


# ----------------------------------------------------------------------- AIS
@pytest.mark.parametrize("seed", [10, 11])
def test_ais_lands_within_its_stated_error(seed):
    """AIS from the data's base rate: within 3 sigma-hat of the exact ln Z, with a
    healthy ESS; its interval excludes the ln Z of a model whose lateral weights moved by
    0.05 (power); a uniform base (base_rate None) lands too."""
    m = model_of(12, 8, seed=seed, scale=0.5, lscale=0.4)
    data = m.sample(500, 30, seed=seed)
    res = Annealer(runs=100, schedule="linear:1000", seed=seed).log_partition(
        m, base_rate="data", data=data)
    exact = m.log_partition()
    lo, hi = res.log_Z_interval(3)
    assert lo <= exact <= hi
    assert res.ess > 50 and res.extra["visible"] == "lateral"
    shifted = m.L + 0.05 * (1 - np.eye(12))
    other = SRBM(m.W, m.vbias, m.hbias, shifted).log_partition()
    assert not lo <= other <= hi
    assert res.avg_log_prob == pytest.approx(float(np.mean(m.log_prob(data, res.log_Z))))
    uniform = Annealer(runs=100, schedule="linear:1000", seed=seed).log_partition(m)
    lo, hi = uniform.log_Z_interval(3)
    assert lo <= exact <= hi


# ------------------------------------------------------------------ training
def _data(seed=5):
    true = model_of(10, 4, seed=seed, scale=1.0, lscale=0.5)
    return true, true.sample(2000, 50, seed=1), true.sample(1000, 50, seed=2)


@pytest.mark.parametrize("reconstruction,epochs,lr,share", [("mean-field", 10, 0.02, 0.5),
                                                            ("gibbs", 30, 0.05, 0.75)])
def test_training_raises_the_test_log_likelihood(reconstruction, epochs, lr, share):
    """On data from a known 10 x 4 SRBM, CD-1 raises the exact test log-likelihood above
    the independent model of the data's marginals (the initial model) by more than 5
    paired standard errors and by a share of the true model's gain (0.163 nats): damped
    mean-field 0.132 after 10 epochs, sequential Gibbs 0.151 after 30, here.  (Mean-field
    CD is biased: run on to 30 epochs it doubles the largest lateral weight and falls
    below the start, -0.23; an RBM trained alike gains 0.006.)"""
    true, data, test = _data()
    trainer = Trainer(4, epochs=epochs, batch_size=50, learning_rate=lr, seed=0,
                      dtype=np.float64, lateral=True, reconstruction=reconstruction)
    model = trainer.fit(data)
    assert isinstance(model, SRBM) and np.all(np.diag(model.L) == 0)
    np.testing.assert_array_equal(model.L, model.L.T)
    start = SRBM.random(10, 4, data=data).log_prob(test)
    gain = model.log_prob(test) - start
    assert gain.mean() > 5 * gain.std() / math.sqrt(gain.size)
    assert gain.mean() > share * np.mean(true.log_prob(test) - start)
    assert "reconstruction_error" in trainer.history[-1]
    assert model.meta["training"]["settings"]["lateral"] == {
        "reconstruction": reconstruction, "damping": 0.2, "mean_field_steps": 10}


@pytest.mark.parametrize("method,reconstruction", [("cd", "mean-field"), ("pcd", "gibbs")])
def test_checkpoint_resume_gives_the_same_bits(tmp_path, method, reconstruction):
    data = _data()[1][:400]
    kw = dict(method=method, batch_size=40, seed=3, lateral=True,
              reconstruction=reconstruction, monitor_size=0)
    whole = Trainer(3, epochs=4, **kw).fit(data)
    path = tmp_path / "ck.npz"
    Trainer(3, epochs=2, checkpoint=path, **kw).fit(data)
    resumed = Trainer(3, epochs=4, checkpoint=path, **kw).fit(data, resume=True)
    for name in ("W", "vbias", "hbias", "L"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(resumed, name))
    with pytest.raises(ModelFileError, match="holds a 'cyrbm.srbm', not an RBM"):
        Trainer(3, epochs=4, checkpoint=path, method=method, batch_size=40,
                seed=3).fit(data, resume=True)


# ------------------------------------------------------------------ bad input
def test_bad_input_is_refused_in_one_sentence(tmp_path):
    W, b, c = np.zeros((3, 2)), np.zeros(3), np.zeros(2)
    L = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], float)
    asym = L.copy()
    asym[0, 1] = 2
    diag = L + np.eye(3)
    nan = L.copy()
    nan[2, 1] = nan[1, 2] = np.nan
    for bad, message in ((asym, r"L must be symmetric, but L\[0, 1\] is 2 and L\[1, 0\] is 1\.$"),
                         (diag, r"L must have a zero diagonal .*L\[0, 0\] is 1\.$"),
                         (nan, r"L contains NaN or infinite values\.$"),
                         (np.zeros((3, 2)), r"L has shape \(3, 2\) .* must be 3 x 3\.$")):
        with pytest.raises(ModelMismatchError, match=message):
            SRBM(W, b, c, bad)
        np.savez(tmp_path / "bad.npz", W=W, vbias=b, hbias=c, L=bad)
        with pytest.raises(ModelFileError, match="model file '.*bad.npz': " + message):
            SRBM.load(tmp_path / "bad.npz")
    with pytest.raises(ModelMismatchError, match=r"vbias has shape \(4,\) but W has 3 rows"):
        SRBM(W, np.zeros(4), c, L)
    m = SRBM(W, b, c, L)
    with pytest.raises(Exception, match=r"data has 4 columns but the model has 3 visible"):
        m.log_unnormalized(np.zeros((2, 4)))
    with pytest.raises(Exception, match=r"data is not binary: row 1, column 2 holds 0\.5"):
        m.log_prob([[0, 0.5, 1]])
    for kw, message in ((dict(method="amh"), "an SRBM trains with amh only with "
                                             "reconstruction='gibbs'"),
                        (dict(method="pcd"), "pcd only with reconstruction='gibbs'"),
                        (dict(reconstruction="exact"), "reconstruction must be 'mean-field' "
                                                       "or 'gibbs'"),
                        (dict(damping=1.0), "damping must be in \\[0, 1\\)"),
                        (dict(visible="gaussian"), "do not give it visible='gaussian'")):
        with pytest.raises(ValueError, match=message):
            Trainer(2, lateral=True, **kw)
    with pytest.raises(ValueError, match="trains with amh only with reconstruction='gibbs'"):
        Trainer(2, method="amh").fit(np.zeros((4, 3)), model=m)
    with pytest.raises(ValueError, match="lateral=True trains an SRBM, not the RBM given"):
        Trainer(2, lateral=True).fit(np.zeros((4, 3)), model=RBM(W, b, c))


# --------------------------------------------------------------------- files
def test_files_round_trip_and_refuse_the_other_model(tmp_path, capsys):
    from _commands import run
    m = model_of(5, 3, seed=9, dtype=np.float32)
    path = tmp_path / "s.npz"
    m.save(path)
    back = SRBM.load(path)
    for name in ("W", "vbias", "hbias", "L"):
        np.testing.assert_array_equal(getattr(back, name), getattr(m, name))
    assert back.dtype == np.float32 and back.L.dtype == np.float32
    with pytest.raises(ModelFileError, match=r"holds a 'cyrbm.srbm', not an RBM "
                                             r"\('cyrbm.rbm'\)\.$"):
        RBM.load(path)
    RBM(m.W, m.vbias, m.hbias).save(tmp_path / "b.npz")
    with pytest.raises(ModelFileError, match=r"holds a 'cyrbm.rbm', not an SRBM "
                                             r"\('cyrbm.srbm'\)\.$"):
        SRBM.load(tmp_path / "b.npz")
    np.savez(tmp_path / "plain.npz", W=m.W, vbias=m.vbias, hbias=m.hbias)
    with pytest.raises(ModelFileError, match="lacks the array 'L'"):
        SRBM.load(tmp_path / "plain.npz")
    np.savez(tmp_path / "plain.npz", W=m.W, vbias=m.vbias, hbias=m.hbias, L=m.L)
    np.testing.assert_array_equal(SRBM.load(tmp_path / "plain.npz").L, m.L)
    code, out, _ = run(["info", path], capsys)
    assert code == 0 and "SRBM (lateral visible connections) 5 visible x 3 hidden" in out
    code, out, _ = run(["info", path, "--json"], capsys)
    assert code == 0 and '"visible": "lateral"' in out
