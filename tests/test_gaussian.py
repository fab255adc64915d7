"""cyrbm.models.gaussian.GaussianRBM (Gaussian visible, binary hidden units; MS09 Sec. 5.2)
against exact answers: ln Z by numerical integration and by an independent sum of
Gaussian integrals, moments of its Gibbs sampler against the exact ones, AIS within its
stated error (with a power check), training by CD and PCD, files and checkpoints.
Monte Carlo checks use fixed seeds and tolerances in standard errors."""
import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from cyrbm import Annealer, RBM, Trainer
from cyrbm.errors import DataError, ModelFileError
from cyrbm.models.gaussian import GaussianRBM


def model_of(D, M, seed=0, scale=0.7, sigma=None, dtype=np.float64, centred=False):
    """A random Gaussian RBM; ``centred``: hidden biases -|W_j|^2 / 2 + N(0, 0.25), so no
    hidden state dominates (the u^2 / 2 of the integral favours large W h)."""
    rng = np.random.default_rng(seed)
    W = rng.normal(0, scale, (D, M))
    c = rng.normal(0, 0.5, M) - (0.5 * np.sum(W * W, axis=0) if centred else 0)
    s = rng.uniform(0.5, 1.5, D) if sigma is None else sigma
    return GaussianRBM(W, rng.normal(0, 0.5, D), c, s, dtype=dtype)


def hidden_states(M):
    return np.array(list(itertools.product((0, 1), repeat=M)), dtype=np.float64)


def brute_log_partition(m):
    """ln Z as sum_h exp(c.h - sum b^2/(2 s^2)) times the Gaussian integral of
    exp(-v^T A v / 2 + beta^T v), A = diag(1/s^2), beta = b/s^2 + (W h)/s, done by linear
    algebra: sqrt((2 pi)^D / det A) exp(beta^T A^-1 beta / 2)."""
    W, b, c, s = (np.asarray(a, np.float64) for a in (m.W, m.vbias, m.hbias, m.sigma))
    A = np.diag(1 / s ** 2)
    logdet = np.linalg.slogdet(A)[1]
    terms = []
    for h in hidden_states(m.n_hidden):
        beta = b / s ** 2 + (W @ h) / s
        terms.append(h @ c - np.sum(b ** 2 / (2 * s ** 2)) + 0.5 * m.n_visible * math.log(2 * math.pi)
                     - 0.5 * logdet + 0.5 * beta @ np.linalg.solve(A, beta))
    return float(np.logaddexp.reduce(terms))


def exact_moments(m):
    """E[v] and Var[v] of the model: a mixture over h of N(b + s (W h), s^2)."""
    W, b, c, s = (np.asarray(a, np.float64) for a in (m.W, m.vbias, m.hbias, m.sigma))
    H = hidden_states(m.n_hidden)
    u = H @ W.T
    e = H @ c + u @ (b / s) + 0.5 * np.sum(u * u, axis=1)
    p = np.exp(e - e.max())
    p /= p.sum()
    mu = b + s * u
    mean = p @ mu
    return mean, p @ (mu ** 2) + s ** 2 - mean ** 2


# ------------------------------------------------------------------- exact ln Z
@pytest.mark.parametrize("D", [1, 2])
def test_log_partition_matches_numerical_integration(D):
    m = model_of(D, 3, seed=D)
    f = lambda *v: math.exp(m.log_unnormalized(np.array([v[::-1]]))[0])  # noqa: E731
    if D == 1:
        Z, _ = integrate.quad(f, -30, 30, epsabs=1e-13, epsrel=1e-12, limit=200)
    else:
        Z, _ = integrate.dblquad(f, -30, 30, -30, 30, epsabs=1e-12, epsrel=1e-10)
    assert m.log_partition() == pytest.approx(math.log(Z), abs=1e-8)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-9), (np.float32, 1e-9)])
def test_log_partition_matches_an_independent_sum(dtype, tol):
    """13 hidden units: more than one block of 2^12 states in log_partition's sum."""
    m = model_of(5, 13, seed=3, scale=0.3, dtype=dtype)
    assert m.log_partition() == pytest.approx(brute_log_partition(m), abs=tol)


def test_free_energy_sums_the_joint_over_h():
    m = model_of(4, 5, seed=4)
    v = np.random.default_rng(0).normal(0, 2, (7, 4))
    W, b, c, s = m.W, m.vbias, m.hbias, m.sigma
    H = hidden_states(5)
    # -E(v, h) for every (v, h)
    neg_e = (-np.sum((v - b) ** 2 / (2 * s ** 2), axis=1)[:, None] + (H @ c)[None, :]
             + (v / s) @ W @ H.T)
    np.testing.assert_allclose(m.log_unnormalized(v), np.logaddexp.reduce(neg_e, axis=1),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(m.free_energy(v), -m.log_unnormalized(v))
    p_h = np.exp(neg_e - np.logaddexp.reduce(neg_e, axis=1)[:, None]) @ H
    np.testing.assert_allclose(m.hidden_probs(v), p_h, rtol=0, atol=1e-12)
    # ln p(v) integrates to one (1 visible unit)
    m1 = model_of(1, 4, seed=5)
    lz = m1.log_partition()
    total, _ = integrate.quad(lambda x: math.exp(m1.log_prob([[x]], lz)[0]), -30, 30,
                              limit=200)
    assert total == pytest.approx(1.0, abs=1e-9)


def test_too_many_hidden_units_for_exact_are_refused():
    with pytest.raises(Exception, match=r"2\^21 hidden states .* so use Annealer\(\).log_partition \(AIS\)"):
        model_of(2, 21).log_partition()


# ------------------------------------------------------------------ sampling
def test_normal_draws_are_standard_normal():
    """W = 0: v = b + sigma z exactly, from the first draw (step 0) and after Gibbs
    steps; the z pass a KS test and their first four moments (fixed seed)."""
    m = GaussianRBM(np.zeros((3, 2)), [1.0, -2.0, 0.5], [0.0, 0.0], [0.5, 2.0, 1.0])
    for steps in (0, 3):
        z = ((m.sample(20000, steps, seed=7) - m.vbias) / m.sigma).ravel()
        assert stats.kstest(z, "norm").pvalue > 1e-3
        se = 1 / math.sqrt(z.size)
        assert abs(z.mean()) < 4.5 * se
        assert abs(z.var() - 1) < 4.5 * math.sqrt(2) * se
        assert abs(stats.skew(z)) < 4.5 * math.sqrt(6) * se
        assert abs(stats.kurtosis(z)) < 4.5 * math.sqrt(24) * se


def test_normal_draws_follow_the_stream_and_box_muller():
    """The kernel's first draws (step 0, v = mu + sd z, 37 runs: blocks of 16 and a
    part) against the chain streams computed in plain Python and Box-Muller's cosine and
    sine with the C library's ln, cos and sin: units 2i and 2i + 1 share the uniforms
    2i, 2i + 1 (r from the first, the angle from the second), the odd last unit takes the
    cosine; vmath.h's float64 ln, cos(2 pi u) and sin(2 pi u) within 4e-15 of it over
    37 x 301 draws (every quadrant), the uniforms taken in the documented order."""
    from _reference import xoshiro_reference
    from cyrbm import _gauss
    from cyrbm._random import gaussian_ais_streams
    R, D = 37, 301
    st = gaussian_ais_streams(3, R)
    first = st.copy()
    v, h, lw = np.zeros((R, D)), np.zeros((R, 1), np.uint8), np.zeros(R)
    mu, sd = np.zeros(D), np.ones(D)
    _gauss.gauss_run(np.zeros((D, 1)), np.zeros(D), np.zeros(1), np.ones(D), mu, sd, v, h,
                     np.zeros(1), 0, 1, False, st, lw, 2)
    for r in range(R):
        u = np.array(xoshiro_reference(first[r], D + 1))
        radius, angle = np.sqrt(-2 * np.log(1 - u[0::2])), 2 * np.pi * u[1::2]
        z = np.empty(D + 1)
        z[0::2], z[1::2] = radius * np.cos(angle), radius * np.sin(angle)
        z = z[:D]
        np.testing.assert_allclose(v[r], z, rtol=0, atol=4e-15 * max(1.0, np.abs(z).max()))


@pytest.mark.parametrize("D", [23, 5])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_cd_products_match_numpy(dtype, tol, D):
    """The CD step's statistics on the engine's kernels (gauss_cd_products: p(h | v) of
    the data and the chains, the weight gradient, the bias statistics) against float64
    NumPy, 37 rows (two blocks of 16 and a part), D x 19 units (vector tails; 23 rows of
    the gradient take a tile moved back to end at the last row, 5 take single rows); and
    p(h | data) from the first Gibbs sweep (gauss_run's p_first) has the same bits as
    gauss_cd_products' own."""
    from cyrbm import _gauss
    from cyrbm._random import gaussian_ais_streams
    from cyrbm.models.rbm import expit
    m = model_of(D, 19, seed=3, dtype=dtype)
    rng = np.random.default_rng(5)
    v, w = (rng.normal(0, 1.5, (37, D)).astype(dtype) for _ in range(2))
    p0, pk, dW = np.empty((37, 19), dtype), np.empty((37, 19), dtype), np.empty_like(m.W)
    db, dc = np.empty_like(m.vbias), np.empty_like(m.hbias)
    _gauss.gauss_cd_products(m.W, m.hbias, m.sigma, v, w, p0, pk, dW, db, dc, 2)
    W, c, s = (a.astype(np.float64) for a in (m.W, m.hbias, m.sigma))
    q0, qk = expit((v / s) @ W + c), expit((w / s) @ W + c)
    np.testing.assert_allclose(p0, q0, rtol=tol, atol=tol)
    np.testing.assert_allclose(pk, qk, rtol=tol, atol=tol)
    want = (v / s).T @ q0 - (w / s).T @ qk
    np.testing.assert_allclose(dW, want, rtol=0, atol=tol * 40 * np.abs(want).max())
    want_b = np.sum(v.astype(np.float64) - w, axis=0) / s ** 2
    np.testing.assert_allclose(db, want_b, rtol=0, atol=tol * 40 * np.abs(want_b).max())
    np.testing.assert_allclose(dc, q0.sum(axis=0) - qk.sum(axis=0), rtol=0, atol=tol * 40)
    # the sweep's p(h | data), then the statistics with it given
    chains, first = v.copy(), np.full((37, 19), np.nan, dtype)
    m._sweeps(chains, gaussian_ais_streams(1, 37), 1, 2, 2, first)
    np.testing.assert_array_equal(first, p0)
    again = np.empty_like(dW)
    _gauss.gauss_cd_products(m.W, m.hbias, m.sigma, v, w, first, pk, again, db, dc, 2, True)
    np.testing.assert_array_equal(again, dW)


def test_gibbs_moments_match_the_exact_ones():
    """Means and variances of 20,000 chains after 30 sweeps against the exact mixture's,
    within 4.5 standard errors; the same test rejects a model with shifted visible
    biases (power)."""
    m = model_of(4, 5, seed=6, scale=0.8, centred=True)
    mean, var = exact_moments(m)
    n = 20000
    v = m.sample(n, 30, seed=1)
    se_mean = np.sqrt(var / n)
    se_var = var * np.sqrt(2 / n) * 1.5          # room for the mixture's excess kurtosis
    assert np.all(np.abs(v.mean(0) - mean) < 4.5 * se_mean)
    assert np.all(np.abs(v.var(0) - var) < 4.5 * se_var)
    shifted = GaussianRBM(m.W, m.vbias + 0.1, m.hbias, m.sigma)
    assert np.any(np.abs(shifted.sample(n, 30, seed=1).mean(0) - mean) > 4.5 * se_mean)


def test_results_do_not_depend_on_threads():
    m = model_of(6, 8, seed=8, dtype=np.float32)
    np.testing.assert_array_equal(m.sample(64, 10, seed=3, threads=1),
                                  m.sample(64, 10, seed=3, threads=2))
    data = m.sample(300, 20, seed=4)
    runs = [Annealer(runs=32, schedule="linear:100", seed=2, threads=t).log_partition(m, data=data)
            for t in (1, 2)]
    np.testing.assert_array_equal(runs[0].log_weights, runs[1].log_weights)
    fits = [Trainer(8, method="pcd", epochs=2, batch_size=20, seed=1, threads=t,
                    visible="gaussian", monitor_size=0).fit(data) for t in (1, 2)]
    np.testing.assert_array_equal(fits[0].W, fits[1].W)


# ----------------------------------------------------------------------- AIS
@pytest.mark.parametrize("seed,M", [(10, 12), (11, 16)])
def test_ais_lands_within_its_stated_error(seed, M):
    """AIS from independent Gaussians fitted to the model's samples: within 3 sigma-hat
    of the exact ln Z, with a healthy ESS; and its interval is narrow enough to exclude
    the ln Z of a model whose hidden biases moved by 0.05 (power)."""
    m = model_of(6, M, seed=seed, scale=0.5, centred=True)
    data = m.sample(500, 30, seed=seed)
    res = Annealer(runs=100, schedule="linear:2000", seed=seed).log_partition(m, data=data)
    exact = m.log_partition()
    lo, hi = res.log_Z_interval(3)
    assert lo <= exact <= hi
    assert res.ess > 50
    other = GaussianRBM(m.W, m.vbias, m.hbias + 0.05, m.sigma).log_partition()
    assert not lo <= other <= hi
    # ln p*(v) - ln Z-hat reported for the data, as for binary RBMs
    assert res.avg_log_prob == pytest.approx(float(np.mean(m.log_prob(data, res.log_Z))))


def test_ais_base_choices():
    m = model_of(3, 4, seed=12)
    exact = m.log_partition()
    for base in (None, (np.zeros(3), np.full(3, 2.0))):
        res = Annealer(runs=100, schedule="linear:1000", seed=2).log_partition(m, base_rate=base)
        lo, hi = res.log_Z_interval(3)
        assert lo <= exact <= hi
    with pytest.raises(Exception, match="needs data"):
        Annealer(runs=10, schedule="linear:10").log_partition(m, base_rate="data")


def test_ais_raise_sandwich_brackets_the_exact_mean_log_prob():
    """Annealer.evaluate on a Gaussian RBM: forward AIS and RAISE (20 chains a vector)
    both within 3 of their standard errors of the exact mean ln p(v) of 20 test vectors,
    and their gap within 3 of its own (exact -9.0871; AIS -9.0888 +- 0.0062, RAISE
    -9.0908 +- 0.0031 here); RAISE's interval excludes the exact mean of a model whose
    visible biases moved by 0.2 (power)."""
    m = model_of(6, 12, seed=10, scale=0.5, centred=True)
    train, test = m.sample(500, 30, seed=10), m.sample(20, 30, seed=11)
    res = Annealer(runs=100, schedule="linear:300", seed=1).evaluate(m, test, base_data=train,
                                                                      chains=20)
    exact = float(np.mean(m.log_prob(test)))
    lo, hi = res.ais_interval(3)
    assert lo <= exact <= hi
    lo, hi = res.raise_interval(3)
    assert lo <= exact <= hi
    assert abs(res.gap) <= 3 * res.gap_se and res.disagreement is None
    other = GaussianRBM(m.W, m.vbias + 0.2, m.hbias, m.sigma)
    assert not lo <= float(np.mean(other.log_prob(test))) <= hi
    with pytest.raises(Exception, match="simulate of evaluate is for binary RBMs, not yet"):
        Annealer(runs=10, schedule="linear:10").evaluate(m, test, simulate=5)


# ------------------------------------------------------------------ training
def _mixture_data(seed=0):
    true = model_of(4, 2, seed=seed, scale=1.5, sigma=1.0, centred=True)
    return true, true.sample(2000, 50, seed=1), true.sample(1000, 50, seed=2)


@pytest.mark.parametrize("method", ["cd", "pcd"])
def test_training_raises_the_test_log_likelihood(method):
    """On data from a two-hidden-unit Gaussian RBM (a mixture of four Gaussians), 30
    epochs of CD-1 / PCD-1 raise the exact test log-likelihood above the initial model's
    (a Gaussian at the data's mean) by more than 5 paired standard errors and by at least
    3/4 of the true model's gain (0.35 of 0.38 nats here, standard error 0.04)."""
    true, data, test = _mixture_data()
    trainer = Trainer(2, method=method, epochs=30, batch_size=50, learning_rate=0.05,
                      seed=0, dtype=np.float64, visible="gaussian")
    model = trainer.fit(data)
    assert isinstance(model, GaussianRBM)
    start = GaussianRBM.random(4, 2, data=data).log_prob(test)
    gain = model.log_prob(test) - start
    assert gain.mean() > 5 * gain.std() / math.sqrt(gain.size)
    assert gain.mean() > 0.75 * np.mean(true.log_prob(test) - start)
    errors = [r["reconstruction_error"] for r in trainer.history]
    assert errors[-1] < errors[0] and "pseudo_log_likelihood" not in trainer.history[-1]
    assert model.meta["training"]["input"] == "real"


def test_learned_sigma_finds_the_data_scale(tmp_path):
    """Data from a model of sigma 0.5, training from sigma 1: with learn_sigma, sigma
    comes near the data's (0.49, 0.54, 0.52, 0.72 here) and the test log-likelihood beats
    fixed sigma = 1 by more than 5 paired standard errors (-3.43 against -4.37, the true
    model -3.36); a checkpoint keeps the velocity of ln sigma, so a resume gives the same
    bits."""
    true = model_of(4, 2, seed=0, scale=1.5, sigma=0.5, centred=True)
    data, test = true.sample(2000, 50, seed=1), true.sample(1000, 50, seed=2)
    kw = dict(method="pcd", epochs=30, batch_size=50, learning_rate=0.02, seed=0,
              dtype=np.float64, visible="gaussian", monitor_size=0)
    fixed = Trainer(2, **kw).fit(data)
    learned = Trainer(2, learn_sigma=True, **kw).fit(data)
    assert np.all(fixed.sigma == 1) and np.all((learned.sigma > 0.4) & (learned.sigma < 0.8))
    gain = learned.log_prob(test) - fixed.log_prob(test)
    assert gain.mean() > 5 * gain.std() / math.sqrt(gain.size)
    kw.update(epochs=4, learn_sigma=True)
    whole = Trainer(2, **kw).fit(data[:400])
    path = tmp_path / "ck.npz"
    Trainer(2, **dict(kw, epochs=2), checkpoint=path).fit(data[:400])
    resumed = Trainer(2, **kw, checkpoint=path).fit(data[:400], resume=True)
    np.testing.assert_array_equal(whole.sigma, resumed.sigma)
    np.testing.assert_array_equal(whole.W, resumed.W)
    with pytest.raises(ValueError, match="learn_sigma is for Gaussian visible units"):
        Trainer(2, learn_sigma=True)


def test_checkpoint_resume_gives_the_same_bits(tmp_path):
    _, data, _ = _mixture_data()
    data = data[:400]
    kw = dict(method="pcd", batch_size=40, seed=3, visible="gaussian", monitor_size=0)
    whole = Trainer(2, epochs=4, **kw).fit(data)
    path = tmp_path / "ck.npz"
    Trainer(2, epochs=2, checkpoint=path, **kw).fit(data)
    resumed = Trainer(2, epochs=4, checkpoint=path, **kw).fit(data, resume=True)
    for a, b in ((whole.W, resumed.W), (whole.vbias, resumed.vbias),
                 (whole.hbias, resumed.hbias)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ModelFileError, match="holds a 'cyrbm.gaussian_rbm', not an RBM"):
        Trainer(2, epochs=4, checkpoint=path, method="pcd", batch_size=40,
                seed=3).fit((data > 0).astype(np.uint8), resume=True)


def test_bad_training_input_is_refused_in_one_sentence():
    _, data, _ = _mixture_data()
    data = data[:50].copy()
    data[6, 2] = np.nan         # row 7, column 3
    with pytest.raises(DataError, match=r"training data holds nan at row 7, column 3; NaN "
                                        r"and infinite values are not allowed\."):
        Trainer(3, visible="gaussian").fit(data)
    data[6, 2] = 1e39           # finite in float64, not in the float32 model's data
    with pytest.raises(DataError, match=r"training data holds a value at row 7, column 3 too "
                                        r"large for float32\."):
        Trainer(3, visible="gaussian", dtype=np.float32).fit(data)
    with pytest.raises(ValueError, match="a Gaussian RBM trains with method cd, pcd, pt or "
                                         "ptt, not amh: Hu & Yu's mode set"):
        Trainer(3, method="amh", visible="gaussian")
    with pytest.raises(ValueError, match="visible must be 'binary' or 'gaussian'"):
        Trainer(3, visible="real")
    with pytest.raises(ValueError, match="visible='gaussian' trains a Gaussian RBM, not the RBM given"):
        Trainer(3, visible="gaussian").fit(data[:5], model=RBM(np.zeros((4, 3)), np.zeros(4),
                                                                 np.zeros(3)))
    with pytest.warns(UserWarning, match=r"training data has variances 1\.\de\+04 times "
                                         r"sigma\^2 \(the median over the visible units\)"):
        Trainer(2, visible="gaussian", epochs=1, monitor_size=0).fit(_mixture_data()[1] * 100)


# --------------------------------------------------------------------- files
def test_files_round_trip_and_refuse_the_other_model(tmp_path):
    m = model_of(4, 3, seed=9, dtype=np.float32)
    path = tmp_path / "g.npz"
    m.save(path)
    back = GaussianRBM.load(path)
    for name in ("W", "vbias", "hbias", "sigma"):
        np.testing.assert_array_equal(getattr(back, name), getattr(m, name))
    assert back.dtype == np.float32
    assert "'visible': 'gaussian'" not in repr(back.meta)        # format keys are not meta
    with pytest.raises(ModelFileError, match=r"holds a 'cyrbm.gaussian_rbm', not an RBM "
                                             r"\('cyrbm.rbm'\)\.$"):
        RBM.load(path)
    binary = tmp_path / "b.npz"
    RBM(m.W, m.vbias, m.hbias).save(binary)
    with pytest.raises(ModelFileError, match=r"holds a 'cyrbm.rbm', not a Gaussian RBM "
                                             r"\('cyrbm.gaussian_rbm'\)\.$"):
        GaussianRBM.load(binary)
    # weights trained elsewhere: W, vbias, hbias (sigma 1) load too
    np.savez(tmp_path / "plain.npz", W=m.W, vbias=m.vbias, hbias=m.hbias)
    assert np.all(GaussianRBM.load(tmp_path / "plain.npz").sigma == 1)
    np.savez(tmp_path / "bad.npz", W=m.W, vbias=m.vbias, hbias=m.hbias, sigma=-m.sigma)
    with pytest.raises(ModelFileError, match="sigma must be one positive number"):
        GaussianRBM.load(tmp_path / "bad.npz")


# -------------------------------------------------------------- command line
def test_train_visible_gaussian_on_the_command_line(tmp_path, capsys):
    from _commands import one_error_line, run
    x = np.random.default_rng(0).normal(size=(200, 5))
    np.save(tmp_path / "x.npy", x)
    model = tmp_path / "m.npz"
    code, out, _ = run(["train", tmp_path / "x.npy", "-o", model, "--visible", "gaussian",
                        "--hidden", "3", "--epochs", "2", "--method", "pcd"], capsys)
    assert code == 0 and "5 x 3 Gaussian RBM by PCD-1" in out
    assert GaussianRBM.load(model).n_hidden == 3
    # a resume takes --visible from the checkpoint
    code, out, _ = run(["train", tmp_path / "x.npy", "-o", model, "--epochs", "3",
                        "--resume"], capsys)
    assert code == 0 and "Gaussian RBM" in out and "(3 epochs" in out
    code, out, _ = run(["info", model], capsys)
    assert code == 0 and out.startswith(f"{model}: Gaussian RBM 5 visible x 3 hidden")
    x[4, 1] = np.inf
    np.save(tmp_path / "bad.npy", x)
    code, _, err = run(["train", tmp_path / "bad.npy", "-o", tmp_path / "b.npz",
                        "--visible", "gaussian"], capsys)
    assert code != 0
    one_error_line(err, "holds inf at row 5, column 2")
    code, _, err = run(["train", tmp_path / "x.npy", "-o", tmp_path / "b.npz",
                        "--visible", "gaussian", "--method", "amh"], capsys)
    assert code != 0
    one_error_line(err, "a Gaussian RBM trains with --method cd, pcd, pt or ptt, not amh")
