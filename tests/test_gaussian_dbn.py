"""The two-layer DBN with a Gaussian bottom layer (MS09 Sec. 5.2): exact ln p(v), the
variational bound (SM08 Eq. 19-24), the Chib-style estimator (MS09 Figure 1) and
per-vector AIS, on models small enough to enumerate (D = 2-4 Gaussian visible, H1 = 6-7,
H2 = 3), with an RBM top and with a top that has lateral weights (a stand-in for
cyrbm.SRBM: an RBM given ``lateral``).

Monte Carlo checks use fixed seeds and tolerances in standard errors; each has a power
check: the same numbers measured against a model with a shifted bias fail it.
"""
import json
import math
import subprocess
import sys

import numpy as np
import pytest

import cyrbm
from cyrbm import BoundEstimator, DBN, GaussianRBM, RBM, train_dbn
from cyrbm.estimators.chib import ais_per_vector, chib_log_prob
from cyrbm.errors import CyrbmError, DataError, ModelFileError, ModelMismatchError
from cyrbm.estimators.gaussian_dbn import exact_log_prob, exact_top_log_partition, variational_terms
from cyrbm.models.rbm import Layers

from _commands import child_env, run
from _reference import all_states, brute_log_z, logsumexp


class LateralTop(RBM):
    """A top layer with symmetric lateral weights L (zero diagonal) among its visible
    units: ln P*(h1) gains h1^T L h1 / 2 (what cyrbm.SRBM will give a DBN)."""

    def __init__(self, W, vbias, hbias, lateral):
        super().__init__(W, vbias, hbias, dtype=np.float64)
        self.lateral = np.asarray(lateral, dtype=np.float64)


class StandInTop(Layers):
    """A top layer that is no RBM: W, vbias, hbias and L alone (cyrbm.SRBM's names: the
    interface an SRBM top plugs in through)."""

    def __init__(self, W, vbias, hbias, L):
        self.W, self.vbias, self.hbias, self.L = (
            np.array(a, dtype=np.float64) for a in (W, vbias, hbias, L))
        self.meta = {}


def random_lateral(n, rng, scale=0.5):
    L = scale * rng.standard_normal((n, n))
    L = np.triu(L, 1)
    return L + L.T


def gaussian_dbn(D=3, H1=7, H2=3, seed=0, lateral=False, scale=0.8):
    rng = np.random.default_rng(seed)
    low = GaussianRBM(scale * rng.standard_normal((D, H1)), rng.standard_normal(D),
                      0.5 * rng.standard_normal(H1), rng.uniform(0.6, 1.4, D),
                      dtype=np.float64)
    args = (rng.standard_normal((H1, H2)), 0.5 * rng.standard_normal(H1),
            0.5 * rng.standard_normal(H2))
    top = LateralTop(*args, random_lateral(H1, rng)) if lateral else RBM(*args, dtype=np.float64)
    return low, top


def equivalent_dbn(low, H2=3):
    """The DBN whose p(v) is the GaussianRBM ``low``'s own: integrating v out of the
    Gaussian RBM leaves P*(h) = exp(c.h + (b/s)^T W h + ||W h||^2 / 2), a top with
    b2 = c + W^T (b / s) + diag(W^T W) / 2, lateral L = W^T W off its diagonal and no
    hidden weights; its posterior p(h1 | v) is the factorial Q exactly."""
    W, b, c, s = (np.asarray(a, np.float64) for a in (low.W, low.vbias, low.hbias, low.sigma))
    G = W.T @ W
    L = G - np.diag(np.diag(G))
    H1 = W.shape[1]
    return LateralTop(np.zeros((H1, H2)), c + W.T @ (b / s) + np.diag(G) / 2,
                      np.zeros(H2), L)


def shifted(low, by=0.3):
    return GaussianRBM(low.W, low.vbias + by, low.hbias, low.sigma, dtype=np.float64)


def data_from(low, n, seed):
    return low.sample(n, steps=20, seed=seed).astype(np.float64)


@pytest.fixture(scope="module", params=[False, True], ids=["rbm-top", "lateral-top"])
def case(request):
    low, top = gaussian_dbn(seed=1, lateral=request.param)
    V = data_from(low, 4, seed=3)
    exact, log_z = exact_log_prob(low, top, V)
    wrong, _ = exact_log_prob(shifted(low), top, V)
    return low, top, V, exact, log_z, wrong


def z_scores(samples, target):
    """(mean p-hat - p) / its standard error per vector, in p (the estimators are
    unbiased in p), and the relative standard errors."""
    P = np.exp(samples - target[:, None])
    se = P.std(axis=1, ddof=1) / math.sqrt(P.shape[1])
    return (P.mean(axis=1) - 1.0) / se, se


# ------------------------------------------------------------------- exact ln p(v)
@pytest.mark.parametrize("lateral", [False, True])
def test_exact_density_integrates_to_one(lateral):
    low, top = gaussian_dbn(D=2, H1=6, seed=4, lateral=lateral, scale=0.6)
    g = np.linspace(-11, 11, 441)
    X, Y = np.meshgrid(g, g, indexing="ij")
    lp, _ = exact_log_prob(low, top, np.column_stack([X.ravel(), Y.ravel()]))
    step = g[1] - g[0]
    # within 1e-6: a density off by a constant factor e^0.01 (ln Z_top off by 0.01)
    # would miss by 1e-2
    assert np.exp(lp).sum() * step * step == pytest.approx(1.0, abs=1e-6)


def test_exact_matches_the_gaussian_rbm_it_is_equivalent_to():
    low, _ = gaussian_dbn(D=3, H1=6, seed=5)
    V = data_from(low, 6, seed=1)
    lp, _ = exact_log_prob(low, equivalent_dbn(low), V)
    # GaussianRBM.log_prob: ln Z by its own Gaussian integral per hidden state
    np.testing.assert_allclose(lp, low.log_prob(V), rtol=0, atol=1e-9)
    assert np.max(np.abs(exact_log_prob(shifted(low), equivalent_dbn(low), V)[0]
                         - low.log_prob(V))) > 0.05


def test_exact_top_partition_by_brute_force():
    low, top = gaussian_dbn(seed=2)
    W, b, c = (np.asarray(a, np.float64) for a in (top.W, top.vbias, top.hbias))
    assert exact_top_log_partition(top) == pytest.approx(brute_log_z(W, b, c), abs=1e-10)
    _, lt = gaussian_dbn(seed=2, lateral=True)
    H = all_states(lt.W.shape[0]).astype(float)
    ref = logsumexp(H @ b + 0.5 * np.sum((H @ lt.lateral) * H, 1)
                    + np.logaddexp(0, H @ W + c).sum(1))
    assert exact_top_log_partition(lt) == pytest.approx(ref, abs=1e-10)
    assert exact_log_prob(low, lt, np.zeros((1, 3)))[1] == pytest.approx(ref, abs=1e-10)


# ------------------------------------------------------------- the variational bound
def exact_bound(low, top, V, log_z):
    """sum_h1 Q(h1 | v) [ln p(v | h1) + ln P*(h1)] + H(Q) - ln Z_top, summed exactly."""
    H = all_states(low.n_hidden).astype(float)
    s, W = low.sigma, low.W
    L = getattr(top, "lateral", None)
    lt = H @ top.vbias + np.logaddexp(0, H @ top.W + top.hbias).sum(1)
    if L is not None:
        lt += 0.5 * np.sum((H @ L) * H, 1)
    out = []
    for v in V:
        r = (v - low.vbias) / s - H @ W.T
        lpv = -0.5 * np.sum(r * r, 1) - np.sum(np.log(s)) - len(v) * 0.5 * math.log(2 * math.pi)
        q = 1 / (1 + np.exp(-((v / s) @ W + low.hbias)))
        logq = H @ np.log(q) + (1 - H) @ np.log1p(-q)
        out.append(np.exp(logq) @ (lpv + lt) - np.exp(logq) @ logq - log_z)
    return np.array(out)


def test_bound_below_exact_and_estimated_within_its_error(case):
    low, top, V, exact, log_z, _ = case
    ref = exact_bound(low, top, V, log_z)
    assert np.all(ref < exact - 0.01)                       # a bound, and not tight here
    est = BoundEstimator(DBN([low, top]), log_Z=log_z, seed=4)
    for entropy in ("analytic", "sampled"):
        res = est.variational(V, samples=4000, entropy=entropy)
        se = res.per_sample.std(axis=1, ddof=1) / math.sqrt(4000)
        assert np.all(np.abs(res.values - ref) < 3 * se), (entropy, (res.values - ref) / se)
        assert res.mc_stderr > 0 and res.log_Z == log_z


def test_bound_is_exact_when_q_is_the_posterior():
    low, _ = gaussian_dbn(D=3, H1=6, seed=6)
    top = equivalent_dbn(low)
    V = data_from(low, 5, seed=2)
    exact, log_z = exact_log_prob(low, top, V)
    est = BoundEstimator(DBN([low, top]), log_Z=log_z)
    res = est.variational(V, samples=3, entropy="sampled")
    np.testing.assert_allclose(res.per_sample, np.repeat(exact[:, None], 3, 1), atol=1e-9)
    res = est.variational(V, samples=3000)
    se = res.per_sample.std(axis=1, ddof=1) / math.sqrt(3000)
    assert np.all(np.abs(res.values - exact) < 3 * se)
    # power: the same samples against the shifted model's ln p(v)
    wrong, _ = exact_log_prob(shifted(low, 0.1), top, V)
    assert np.max(np.abs(res.values - wrong) / se) > 3


# ---------------------------------------------------- Chib-style and per-vector AIS
@pytest.mark.parametrize("steps", [1, 4])
def test_chib_unbiased_in_p(case, steps):
    low, top, V, exact, log_z, wrong = case
    res = chib_log_prob([low, top], V, log_z, steps=steps, repeats=2000, seed=steps)
    z, rel = z_scores(res.samples, exact)
    assert np.all(rel < 0.03), rel
    assert np.all(np.abs(z) < 3), z
    zw, _ = z_scores(res.samples, wrong)
    assert np.max(np.abs(zw)) > 3, zw                       # the shifted bias is rejected
    # and so is the deliberately wrong reverse operator (T-tilde = T)
    bad = chib_log_prob([low, top], V, log_z, steps=steps, repeats=2000, seed=steps,
                        _tilde_backward=False)
    assert np.max(np.abs(z_scores(bad.samples, exact)[0])) > 3


@pytest.mark.parametrize("big", [30.0, 45.0], ids=["blocks", "one-log-a-factor"])
def test_chib_with_a_wide_top_and_a_large_weight(big):
    """The top's flip term is summed as logarithms of blocks of 16 factors, or one
    logarithm a factor when some |W2| passes 40 (a block could overflow): both paths,
    with 40 top units (blocks of 16, 16 and 8) and one large weight, are unbiased in p."""
    from cyrbm.estimators.gaussian_dbn import kernel_model
    low, top = gaussian_dbn(H2=40, seed=2, lateral=True)
    top.W[2, 5], top.hbias[5] = big, -big / 2
    assert kernel_model(low, top).delta_block == (16 if big <= 40 else 1)
    V = data_from(low, 3, seed=4)
    exact, log_z = exact_log_prob(low, top, V)
    res = chib_log_prob([low, top], V, log_z, steps=2, repeats=2000, seed=5)
    z, rel = z_scores(res.samples, exact)
    assert np.all(rel < 0.03), rel
    assert np.all(np.abs(z) < 3), z
    wrong, _ = exact_log_prob(shifted(low), top, V)
    assert np.max(np.abs(z_scores(res.samples, wrong)[0])) > 3


def test_per_vector_ais_within_its_error(case):
    low, top, V, exact, log_z, wrong = case
    for base in ("q", "uniform"):
        res = ais_per_vector([low, top], V, log_z, schedule="linear:200", runs=200, seed=3,
                             base=base)
        assert np.all(res.mc_stderrs < 0.02), res.mc_stderrs
        assert np.all(np.abs(res.log_probs - exact) < 3 * res.mc_stderrs), base
        assert np.max(np.abs(res.log_probs - wrong) / res.mc_stderrs) > 3


def test_bound_estimator_methods_on_a_gaussian_dbn(case):
    low, top, V, exact, log_z, _ = case
    est = BoundEstimator(DBN([low, top]), log_Z=log_z, seed=2)
    chib = est.chib(V, steps=3, repeats=200)
    ais = est.ais_per_vector(V, runs=50, schedule="linear:100")
    for res in (chib, ais):
        assert res.log_Z == log_z and res.mc_stderr > 0
        # each vector's value is the log of its terms' mean; its standard error by the
        # delta method (the exact ln Z is given: no other error)
        t = res.per_sample
        w = np.exp(t - t.max(axis=1, keepdims=True))
        np.testing.assert_allclose(res.values, t.max(axis=1) + np.log(w.mean(axis=1)),
                                   rtol=0, atol=1e-12)
        se = np.std(w, axis=1, ddof=1) / np.sqrt(t.shape[1]) / w.mean(axis=1)
        assert np.all(np.abs(res.values - exact) < 4 * se), (res.method, res.values - exact, se)
    same = chib_log_prob([low, top], V, log_z, steps=3, repeats=200, seed=2)
    np.testing.assert_array_equal(chib.values, same.log_probs)
    with pytest.raises(CyrbmError, match="binary DBNs with an RBM on top"):
        est.harmonic(V)
    with pytest.raises(CyrbmError, match="for one RBM"):
        est.log_prob_lower_bound(V)


def test_any_top_with_w_biases_and_lateral_plugs_in(case):
    low, top, V, exact, log_z, _ = case
    other = StandInTop(top.W, top.vbias, top.hbias,
                       getattr(top, "lateral", np.zeros((7, 7))))
    np.testing.assert_allclose(exact_log_prob(low, other, V)[0], exact, atol=1e-12)
    est = BoundEstimator(DBN([low, other]), log_Z=log_z, seed=5)
    ref = BoundEstimator(DBN([low, top]), log_Z=log_z, seed=5)
    for name, kw in (("variational", {"samples": 3}), ("chib", {"steps": 2, "repeats": 3}),
                     ("ais_per_vector", {"runs": 2, "schedule": "linear:20"})):
        np.testing.assert_array_equal(getattr(est, name)(V, **kw).values,
                                      getattr(ref, name)(V, **kw).values)
    with pytest.raises(ModelMismatchError, match="StandInTop"):
        DBN([low, other]).to_arrays()


def test_log_prob_lower_bound_of_a_gaussian_rbm():
    low, _ = gaussian_dbn(seed=7)
    V = data_from(low, 5, seed=1)
    res = BoundEstimator(low, log_Z=low.log_partition()).log_prob_lower_bound(V)
    np.testing.assert_allclose(res.values, low.log_prob(V), atol=1e-9)


def test_same_bits_for_one_and_two_threads():
    low, top = gaussian_dbn(seed=8, lateral=True)
    V = data_from(low, 5, seed=1)
    runs = []
    for threads in (1, 2):
        a = chib_log_prob([low, top], V, 1.0, steps=3, repeats=7, seed=2, threads=threads)
        b = ais_per_vector([low, top], V, 1.0, schedule="linear:30", runs=5, seed=2,
                           threads=threads)
        c = variational_terms(low, top, V, 6, 2, threads)
        runs.append((a.samples, b.samples) + c)
    for one, two in zip(*runs):
        np.testing.assert_array_equal(one, two)


# ------------------------------------------------------------ files, training, input
def test_save_load_round_trip_and_info(tmp_path, capsys):
    low, top = gaussian_dbn(seed=9)
    dbn = DBN([low, top], meta={"note": "x"})
    path = tmp_path / "g.npz"
    dbn.save(path)
    back = DBN.load(path)
    assert isinstance(back.layers[0], GaussianRBM) and back.visible == "gaussian"
    for a, b in zip(dbn.layers, back.layers):
        for name in ("W", "vbias", "hbias"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_array_equal(back.layers[0].sigma, low.sigma)
    assert back.meta == {"note": "x"}
    V = data_from(low, 3, seed=1)
    np.testing.assert_array_equal(exact_log_prob(*back.layers, V)[0],
                                  exact_log_prob(low, top, V)[0])
    # a fresh process reads it through cyrbm.DBN (no other module imported first)
    child = subprocess.run([sys.executable, "-c", f"import cyrbm; print(cyrbm.DBN.load("
                            f"{str(path)!r}).visible)"], capture_output=True, text=True,
                           env=child_env(), cwd=tmp_path)   # not the source tree's cyrbm
    assert child.stdout.strip() == "gaussian", child.stderr
    code, out, err = run(["info", str(path), "--json"], capsys)
    assert code == 0, err
    info = json.loads(out)
    assert info["visible"] == "gaussian" and info["sizes"] == [3, 7, 3]
    code, out, _ = run(["info", str(path)], capsys)
    assert "Gaussian visible units" in out
    # cyrbm bound reads real data for it
    np.save(tmp_path / "x.npy", V)
    exact, log_z = exact_log_prob(low, top, V)
    code, out, err = run(["bound", str(path), "--data", str(tmp_path / "x.npy"), "--method",
                          "ais", "--logz", repr(log_z), "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert abs(res["mean"] - exact.mean()) < 3 * res["mc_stderr"] + 1e-3
    # a binary DBN's file is unchanged (version 1, no visible record)
    RBM_dbn = DBN([RBM(np.zeros((4, 3)), np.zeros(4), np.zeros(3)),
                   RBM(np.zeros((3, 2)), np.zeros(3), np.zeros(2))])
    meta = json.loads(str(RBM_dbn.to_arrays()["meta"]))
    assert meta["format_version"] == 1 and "visible" not in meta
    # a top with lateral weights cannot be written in this format: one sentence
    with pytest.raises(ModelMismatchError, match="lateral"):
        DBN([low, gaussian_dbn(seed=9, lateral=True)[1]]).save(tmp_path / "l.npz")


def test_train_dbn_with_a_gaussian_bottom(capsys):
    low, _ = gaussian_dbn(D=4, H1=6, seed=10)
    X = data_from(low, 300, seed=5)
    for layer_input in ("samples", "probs"):
        dbn = train_dbn(X, [6, 3], epochs=2, batch_size=50, learning_rate=0.01, seed=1,
                        visible="gaussian", sigma=1.0, layer_input=layer_input, threads=1,
                        progress=False)
        assert isinstance(dbn.layers[0], GaussianRBM) and isinstance(dbn.layers[1], RBM)
        assert dbn.sizes == [4, 6, 3] and dbn.meta["training"]["visible"] == "gaussian"
        assert capsys.readouterr().err == ""              # progress=False: no bars
        exact, log_z = exact_log_prob(*dbn.layers, X[:3])
        res = BoundEstimator(dbn, log_Z=log_z).variational(X[:3], samples=50)
        assert np.all(res.values < exact + 3 * res.per_sample.std(1) / math.sqrt(50))
    # ln Z of the top RBM by AIS, its base rate from Q(h1 | v) of the data
    est = BoundEstimator(dbn, annealer=cyrbm.Annealer(runs=100, schedule="linear:500",
                                                      progress=False))
    res = est.variational(X[:3], samples=5)
    assert res.ais is not None and abs(res.log_Z - log_z) < 3 * res.log_Z_stderr + 1e-3
    with pytest.raises(ModelMismatchError, match="Gaussian visible units"):
        train_dbn((X > 0).astype(np.uint8), [3], sigma=2.0)


def one_sentence(exc):
    text = str(exc.value)
    assert "\n" not in text and text.endswith(".") and "Traceback" not in text, text
    return text


def test_bad_input_in_one_sentence():
    low, top = gaussian_dbn(seed=11)
    V = data_from(low, 3, seed=1)
    est = BoundEstimator(DBN([low, top]), log_Z=1.0)
    bad = V.copy()
    bad[1, 2] = np.nan
    for method in (est.variational, est.chib, est.ais_per_vector):
        with pytest.raises(DataError) as exc:
            method(bad)
        assert "row 2" in one_sentence(exc)
        with pytest.raises(ModelMismatchError) as exc:
            method(V[:, :2])
        assert "columns" in one_sentence(exc)
    # a binary bottom layer given real data
    binary = DBN([RBM(np.zeros((3, 7)), np.zeros(3), np.zeros(7)), RBM(top.W, top.vbias, top.hbias)])
    with pytest.raises(DataError) as exc:
        BoundEstimator(binary, log_Z=1.0).chib(V)
    one_sentence(exc)
    # lateral weights: asymmetric
    L = random_lateral(7, np.random.default_rng(0))
    L[0, 1] += 1
    with pytest.raises(ModelMismatchError) as exc:
        chib_log_prob([low, LateralTop(top.W, top.vbias, top.hbias, L)], V, 1.0)
    assert "symmetric" in one_sentence(exc)
    lat = gaussian_dbn(seed=11, lateral=True)[1]
    # (a binary bottom under a lateral top is measured: tests/test_srbm_top_binary.py)
    with pytest.raises(CyrbmError) as exc:
        BoundEstimator(DBN([low, lat])).variational(V)
    assert "ln Z" in one_sentence(exc)
    # a DBN file whose Gaussian bottom lacks its sigma is still read (sigma = 1), one
    # whose sigma is bad is refused in one sentence
    arrays = DBN([low, top]).to_arrays()
    arrays["layer0_sigma"] = -arrays["layer0_sigma"]
    with pytest.raises(ModelFileError) as exc:
        DBN.from_arrays(arrays, "x.npz")
    assert "sigma" in one_sentence(exc)


def test_the_srbm_as_the_top_layer():
    """MS09's patch DBN shape on a tiny scale: a Gaussian bottom under a cyrbm.SRBM top.
    Exact ln p(v) against an independent sum over h1 that uses the SRBM's own ln P*(h1)
    and exact ln Z (cyrbm.models.srbm), the Gaussian density done in closed form; then the
    Chib-style estimator and per-vector AIS within their errors of it, and a bottom with
    shifted biases rejected by both."""
    from cyrbm.models.srbm import SRBM
    rng = np.random.default_rng(12)
    low, _ = gaussian_dbn(seed=12)
    top = SRBM(rng.standard_normal((7, 3)), 0.5 * rng.standard_normal(7),
               0.5 * rng.standard_normal(3), random_lateral(7, rng), dtype=np.float64)
    V = data_from(low, 4, seed=5)
    H = all_states(7).astype(np.float64)
    W, b, s = (np.asarray(a, np.float64) for a in (low.W, low.vbias, low.sigma))
    mean = b + s * (H @ W.T)                                  # E[v | h1], one row per h1
    log_lik = (-0.5 * (((V[:, None, :] - mean[None]) / s) ** 2).sum(-1)
               - np.log(np.sqrt(2 * np.pi) * s).sum())
    log_z = top.log_partition()
    independent = logsumexp(log_lik + top.log_unnormalized(H.astype(np.uint8))[None], axis=1) \
        - log_z
    exact, _ = exact_log_prob(low, top, V)
    np.testing.assert_allclose(exact, independent, atol=1e-9)
    wrong, _ = exact_log_prob(shifted(low), top, V)
    chib = chib_log_prob([low, top], V, log_z, steps=3, repeats=2000, seed=4)
    z, _ = z_scores(chib.samples, exact)
    assert np.all(np.abs(z) < 3), z
    assert np.max(np.abs(z_scores(chib.samples, wrong)[0])) > 3
    ais = ais_per_vector([low, top], V, log_z, schedule="linear:200", runs=200, seed=4)
    assert np.all(np.abs(ais.log_probs - exact) < 3 * ais.mc_stderrs)
    assert np.max(np.abs(ais.log_probs - wrong) / ais.mc_stderrs) > 3
