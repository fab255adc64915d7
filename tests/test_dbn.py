"""DBNs and the bounds on ln p(v) (SM08 Sec. 4, Eq. 19-24; MS09 Sec. 2.2), checked
against exact answers on DBNs small enough to enumerate."""
import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

import cyrbm
from cyrbm import DBN, RBM, BoundEstimator
from cyrbm.estimators.annealing import exact_log_partition
from cyrbm.estimators.bounds import BoundError
from cyrbm.errors import ModelFileError, ModelMismatchError
from cyrbm.training.greedy import layer_checkpoint, progress_file, train_dbn


def softplus(x):
    return np.logaddexp(0.0, x)


def random_rbm(D, H, rng, scale=1.0, dtype=np.float64):
    return RBM(scale * rng.standard_normal((D, H)), rng.standard_normal(D),
               rng.standard_normal(H), dtype=dtype)


def exact_log_prob(dbn, V):
    """ln p(v) of a DBN by summing over every state of h_1 .. h_{L-1} (h_L summed out)."""
    layers = [r.astype(np.float64) for r in dbn.layers]
    top = layers[-1]
    log_Z = exact_log_partition(top)
    sizes = dbn.sizes
    states = [np.array(list(itertools.product([0, 1], repeat=n)), dtype=float)
              for n in sizes[1:-1]]
    grids = np.meshgrid(*[np.arange(len(s)) for s in states], indexing="ij")
    combos = [s[g.ravel()] for s, g in zip(states, grids)]        # h_1 .. h_{L-1}
    hl = combos[-1]
    rest = hl @ top.vbias + softplus(hl @ top.W + top.hbias).sum(1)
    for l in range(1, len(combos)):     # ln p(h_l | h_{l+1})
        a = combos[l] @ layers[l].W.T + layers[l].vbias
        rest = rest + (combos[l - 1] * a - softplus(a)).sum(1)
    a = combos[0] @ layers[0].W.T + layers[0].vbias                # ln p(v | h_1)
    out = []
    for v in np.asarray(V, dtype=float):
        t = (v * a - softplus(a)).sum(1) + rest
        out.append(np.logaddexp.reduce(t) - log_Z)
    return np.array(out)


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(1)
    dbn = DBN([random_rbm(10, 8, rng), random_rbm(8, 6, rng)])
    V = (rng.random((40, 10)) < 0.5).astype(np.uint8)
    return dbn, V, exact_log_prob(dbn, V)


# ------------------------------------------------------------------ exact tests (point 1)
@pytest.mark.parametrize("entropy", ["analytic", "sampled"])
def test_bound_is_below_exact_log_prob_for_every_vector(small, entropy):
    dbn, V, exact = small
    est = BoundEstimator(dbn, log_Z=exact_log_partition(dbn.top), seed=3)
    M = 400
    res = est.variational(V, samples=M, entropy=entropy)
    lpv, lrest, lq, ent = est._terms(dbn.layers, est._data(V), M, None)
    per = lpv + lrest + (ent if entropy == "analytic" else -lq)
    se = per.std(axis=1, ddof=1) / np.sqrt(M)
    assert np.all(res.values <= exact + 4 * se + 1e-12)
    # and it is a real gap here (random weights: Q is far from the posterior)
    assert np.mean(exact - res.values) > 0.5
    # the terms of the two entropy forms have the same expectation: the analytic entropy
    # is the mean of -ln Q
    d = (ent + lq).ravel()
    assert abs(d.mean()) < 4 * d.std() / np.sqrt(d.size)


def test_three_layer_bound_against_enumeration():
    rng = np.random.default_rng(4)
    dbn = DBN([random_rbm(9, 6, rng), random_rbm(6, 5, rng), random_rbm(5, 4, rng)])
    V = (rng.random((30, 9)) < 0.5).astype(np.uint8)
    exact = exact_log_prob(dbn, V)
    est = BoundEstimator(dbn, log_Z=exact_log_partition(dbn.top), seed=1)
    M = 400
    res = est.variational(V, samples=M)
    lpv, lrest, lq, ent = est._terms(dbn.layers, est._data(V), M, None)
    se = (lpv + lrest + ent).std(axis=1, ddof=1) / np.sqrt(M)
    assert np.all(res.values <= exact + 4 * se + 1e-12)
    # the top two layers transposed from the one below: p(v) is the 2-layer DBN's and
    # Q(h_2 | h_1) the exact posterior of the top, so the bound is that of the 2-layer DBN
    d3 = DBN([dbn.layers[0], dbn.layers[1], dbn.layers[1].transposed()])
    d2 = DBN(dbn.layers[:2])
    np.testing.assert_allclose(exact_log_prob(d3, V), exact_log_prob(d2, V), atol=1e-10)


def test_transposed_top_makes_every_term_exact(small):
    """W2 = W1^T (biases swapped): Q is the true posterior, so ln p*(v, h) - ln Q(h | v)
    is ln p(v) for every sample, and the bound is the one-layer model's exact ln p(v)."""
    dbn, V, _ = small
    r1 = dbn.layers[0]
    tied = DBN([r1, r1.transposed()])
    log_Z = exact_log_partition(r1)
    exact1 = r1.log_unnormalized(V) - log_Z
    np.testing.assert_allclose(exact_log_prob(tied, V), exact1, atol=1e-10)
    est = BoundEstimator(tied, log_Z=log_Z, seed=5)
    lpv, lrest, lq, ent = est._terms(tied.layers, est._data(V), 7, None)
    np.testing.assert_allclose(lpv + lrest - lq - log_Z, np.repeat(exact1[:, None], 7, 1),
                               rtol=0, atol=1e-11)
    res = est.variational(V, samples=3, entropy="sampled")
    np.testing.assert_allclose(res.values, exact1, rtol=0, atol=1e-11)
    # the analytic-entropy form agrees on average, within its Monte Carlo error
    res = est.variational(V, samples=200, entropy="analytic")
    assert abs(res.mean - exact1.mean()) < 4 * res.mc_stderr


def test_harmonic_mean_over_estimates(small):
    """MS09: the harmonic-mean estimate of ln p(v) is too high on average."""
    dbn, V, exact = small
    est = BoundEstimator(dbn, seed=2)
    res = est.harmonic(V, samples=300)
    assert res.log_Z is None
    diff = res.values - exact
    assert diff.mean() > 4 * diff.std(ddof=1) / np.sqrt(diff.size)
    assert 0 < res.extra["acceptance_rate"] < 1
    # for one RBM the posterior is sampled exactly, and still the estimate is too high
    r1 = dbn.layers[0]
    V10 = np.tile(V, (10, 1))
    one = BoundEstimator(r1, seed=2).harmonic(V10, samples=10)
    d1 = one.values - (r1.log_unnormalized(V10) - exact_log_partition(r1))
    assert d1.mean() > 4 * d1.std(ddof=1) / np.sqrt(d1.size)


def test_log_Z_is_estimated_once_and_shared(small):
    dbn, V, exact = small
    ann = cyrbm.Annealer(runs=50, schedule="linear:3000", seed=0, progress=False)
    est = BoundEstimator(dbn, annealer=ann, seed=1)
    a = est.variational(V, samples=2)
    b = est.variational(V, samples=2, entropy="sampled")
    assert a.ais is b.ais and a.log_Z == b.log_Z
    true = exact_log_partition(dbn.top)
    lo, hi = a.ais.log_Z_interval(3)
    assert lo <= true <= hi
    shift = a.ais_interval(3)
    assert shift[0] <= 0 <= shift[1]
    assert a.total_stderr >= a.stderr
    d = a.to_dict(values=False)
    json.dumps(d)
    assert d["log_Z"] == a.log_Z and "values" not in d


def test_log_prob_lower_bound_of_one_rbm(small):
    dbn, V, _ = small
    r1 = dbn.layers[0]
    log_Z = exact_log_partition(r1)
    res = BoundEstimator(r1, log_Z=log_Z).log_prob_lower_bound(V)
    np.testing.assert_allclose(res.values, r1.log_unnormalized(V) - log_Z)
    with pytest.raises(BoundError):
        BoundEstimator(dbn, log_Z=1.0).log_prob_lower_bound(V)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_bits_for_any_thread_count(dtype):
    rng = np.random.default_rng(9)
    dbn = DBN([random_rbm(37, 21, rng, 0.3), random_rbm(21, 13, rng, 0.3),
               random_rbm(13, 19, rng, 0.3)], dtype=dtype)
    V = (rng.random((700, 37)) < 0.4).astype(np.uint8)      # several blocks of 512 rows
    out = [BoundEstimator(dbn, log_Z=2.0, seed=4, threads=t).variational(V, samples=3).values
           for t in (1, 2)]
    np.testing.assert_array_equal(out[0], out[1])


def test_float32_agrees_with_float64(small):
    dbn, V, _ = small
    a = BoundEstimator(dbn, log_Z=0.0, seed=6).variational(V, samples=5).values
    b = BoundEstimator(dbn.astype(np.float32), log_Z=0.0, seed=6).variational(V, samples=5).values
    np.testing.assert_allclose(a, b, atol=1e-3)


# ------------------------------------------------------------------------ the DBN class
def test_dbn_attributes_and_file_round_trip(tmp_path, small):
    dbn, V, _ = small
    assert dbn.n_layers == 2 and dbn.top is dbn.layers[-1] and dbn.sizes == [10, 8, 6]
    path = tmp_path / "d.npz"
    dbn.save(path)
    with np.load(path) as f:
        keys = set(f.files)
        meta = json.loads(f["meta"].item())
    assert keys == {"meta"} | {f"layer{l}_{a}" for l in range(2) for a in ("W", "vbias", "hbias")}
    assert meta["format"] == "cyrbm.dbn" and meta["sizes"] == [10, 8, 6]
    back = DBN.load(path)
    for a, b in zip(back.layers, dbn.layers):
        np.testing.assert_array_equal(a.W, b.W)
        np.testing.assert_array_equal(a.hbias, b.hbias)


def test_layers_that_do_not_chain_are_refused(small):
    rng = np.random.default_rng(0)
    with pytest.raises(ModelMismatchError, match="layer 0 has 8 hidden units but layer 1 has 7"):
        DBN([random_rbm(10, 8, rng), random_rbm(7, 6, rng)])


def test_dbn_file_with_a_missing_layer(tmp_path, small):
    dbn, _, _ = small
    arrays = dbn.to_arrays()
    del arrays["layer1_hbias"]
    path = tmp_path / "broken.npz"
    np.savez(path, **arrays)
    with pytest.raises(ModelFileError, match="lacks layer 1 of 2"):
        DBN.load(path)
    arrays = dbn.to_arrays()
    for a in ("W", "vbias", "hbias"):
        del arrays[f"layer1_{a}"]
    np.savez(path, **arrays)
    with pytest.raises(ModelFileError, match="lacks layer 1 of 2"):
        DBN.load(path)


def test_bad_bound_input(small):
    dbn, V, _ = small
    est = BoundEstimator(dbn, log_Z=1.0)
    with pytest.raises(ModelMismatchError, match="11 columns"):
        est.variational(np.zeros((3, 11), np.uint8))
    with pytest.raises(BoundError, match="at least 1"):
        est.variational(V, samples=0)
    with pytest.raises(BoundError, match="must be a number"):
        BoundEstimator(dbn, log_Z="abc")
    with pytest.raises(BoundError, match="entropy"):
        est.variational(V, entropy="exact")


# -------------------------------------------------------------------- greedy training
def test_greedy_init_transpose_starts_at_the_rbm(tmp_path):
    X = cyrbm.load_data("digits:train")[:300]
    dbn = train_dbn(X, [12, 64], init_transpose=True, epochs=2, learning_rate=0.1,
                    seed=1, trainers=[{}, {"epochs": 1, "learning_rate": 1e-12}],
                    monitor_size=0, progress=False)     # (epochs=0 is refused)
    r1 = dbn.layers[0]
    np.testing.assert_allclose(dbn.layers[1].W, r1.W.T, rtol=0, atol=1e-9)
    log_Z = exact_log_partition(r1)
    res = BoundEstimator(dbn, log_Z=log_Z).variational(X[:50], samples=2, entropy="sampled")
    np.testing.assert_allclose(res.values, r1.log_unnormalized(X[:50]) - log_Z, atol=1e-4)


def test_greedy_checkpoints_and_resume(tmp_path):
    X = cyrbm.load_data("digits:train")[:200]
    ck = tmp_path / "d.ckpt.npz"
    kw = dict(epochs=2, learning_rate=0.1, seed=3, monitor_size=0, progress=False)
    full = train_dbn(X, [10, 7], checkpoint=ck, **kw)
    assert (tmp_path / "d.layer0.ckpt.npz").exists() and (tmp_path / "d.layer1.ckpt.npz").exists()
    assert layer_checkpoint(ck, 1) == str(tmp_path / "d.layer1.ckpt.npz")
    # keep only the first layer done and resume: the same DBN bit for bit
    DBN(full.layers[:1]).save(progress_file(ck))
    again = train_dbn(X, [10, 7], checkpoint=ck, resume=True, **kw)
    for a, b in zip(again.layers, full.layers):
        np.testing.assert_array_equal(a.W, b.W)
    with pytest.raises(ModelMismatchError, match="transpose"):
        train_dbn(X, [10, 7], init_transpose=True, **kw)


# --------------------------------------------------------------------------- commands
def run_cli(*argv):
    import tempfile
    with tempfile.TemporaryDirectory() as cwd:    # the installed package, not the tree
        p = subprocess.run([sys.executable, "-m", "cyrbm.cli", *argv], capture_output=True,
                           text=True, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def test_cli_dbn_bound_info(tmp_path):
    out = tmp_path / "d.npz"
    code, so, se = run_cli("dbn", "digits:train", "-o", str(out), "--layers", "16,20",
                           "--epochs", "2,1", "--lr", "0.1", "--json")
    assert code == 0, se
    assert json.loads(so)["sizes"] == [64, 16, 20]
    code, so, se = run_cli("info", str(out), "--json")
    assert code == 0 and json.loads(so)["sizes"] == [64, 16, 20]
    code, so, se = run_cli("bound", str(out), "--data", "digits:test", "--logz", "20",
                           "--samples", "2", "--json")
    assert code == 0, se
    r = json.loads(so)
    assert r["method"] == "variational" and r["log_Z"] == 20 and r["n_data"] == 400
    code, so, se = run_cli("bound", str(out), "--data", "digits:test", "--method", "harmonic",
                           "--samples", "5", "--json")
    assert code == 0 and json.loads(so)["method"] == "harmonic", se


@pytest.mark.parametrize("argv,message", [
    (["--logz", "abc"], "--logz must be a number"),
    (["--samples", "0"], "--samples must be at least 1"),
    (["--logz", "1", "--runs", "10"], "do not apply"),
])
def test_cli_bound_bad_input(tmp_path, small, argv, message):
    dbn, _, _ = small
    path = tmp_path / "d.npz"
    DBN([RBM(np.zeros((64, 5)), np.zeros(64), np.zeros(5)),
         RBM(np.zeros((5, 3)), np.zeros(5), np.zeros(3))]).save(path)
    code, so, se = run_cli("bound", str(path), "--data", "digits:test", *argv)
    assert code == 1 and message in se and len(se.strip().splitlines()) == 1 and "Traceback" not in se


def test_cli_bound_wrong_width_and_missing_layer(tmp_path, small):
    dbn, _, _ = small
    path = tmp_path / "d.npz"
    dbn.save(path)
    code, so, se = run_cli("bound", str(path), "--data", "digits:test", "--logz", "1")
    assert code == 1 and "64 columns but the model has 10 visible units" in se
    arrays = dbn.to_arrays()
    del arrays["layer1_W"]
    np.savez(path, **arrays)
    code, so, se = run_cli("bound", str(path), "--data", "digits:test", "--logz", "1")
    assert code == 1 and "lacks layer 1" in se and "Traceback" not in se
    code, so, se = run_cli("dbn", "digits:train", "-o", str(tmp_path / "x.npz"), "--layers",
                           "5,x")
    assert code == 1 and "--layers" in se


# ------------------------------------- BoundEstimator.chib / ais_per_vector (issue 13)
def test_estimator_methods_share_one_log_z_and_order_as_expected(small):
    """The Chib-style estimate and per-vector AIS through BoundEstimator: ln Z-hat
    estimated once (the same AISResult for every method), the estimate at least the
    variational bound on average and within 3 standard errors of exact, AIS too."""
    dbn, V, exact = small
    from cyrbm.estimators.annealing import Annealer
    est = BoundEstimator(dbn, annealer=Annealer(runs=200, schedule="linear:300", seed=1,
                                                progress=False), seed=2)
    bound = est.variational(V, samples=50)
    ais_for_z = est.ais
    chib = est.chib(V, steps=10, repeats=20)
    per = est.ais_per_vector(V, runs=20, schedule="linear:200")
    assert est.ais is ais_for_z and chib.ais is ais_for_z and per.ais is ais_for_z
    assert chib.log_Z == per.log_Z == bound.log_Z == ais_for_z.log_Z
    assert chib.method == "chib" and per.method == "ais" and chib.n_data == V.shape[0]
    assert chib.extra == {"steps": 10, "repeats": 20}
    # against exact ln p(v) with ln Z-hat's error and the Monte Carlo error apart
    z_err = ais_for_z.log_Z - exact_log_partition(dbn.top)
    for res in (chib, per):
        assert res.mc_stderr is not None and res.mc_stderr > 0
        assert abs(res.mean + z_err - exact.mean()) < 3 * res.mc_stderr + 0.02
    assert chib.mean >= bound.mean - 3 * (bound.mc_stderr or 0.0)


def test_estimator_methods_keep_a_checkpoint(small, tmp_path):
    """BoundEstimator.chib and ais_per_vector hand checkpoint= to the estimators: the
    file is written, and a second call reads it back to the same values."""
    dbn, V, _ = small
    est = BoundEstimator(dbn, log_Z=1.0, seed=2)
    for method, kw in (("chib", dict(steps=3, repeats=4)),
                       ("ais_per_vector", dict(runs=4, schedule="linear:20"))):
        path = tmp_path / f"{method}.npz"
        plain = getattr(est, method)(V, **kw)
        kept = getattr(est, method)(V, checkpoint=path, chunk=5, **kw)
        again = getattr(est, method)(V, checkpoint=path, chunk=5, **kw)
        assert path.exists()
        np.testing.assert_array_equal(kept.values, plain.values)
        np.testing.assert_array_equal(again.values, plain.values)


def test_estimator_methods_refuse_a_one_layer_model_and_bad_counts(small):
    dbn, V, _ = small
    est = BoundEstimator(dbn.layers[0], log_Z=1.0)
    with pytest.raises(cyrbm.errors.CyrbmError, match="two layers"):
        est.chib(V)
    with pytest.raises(cyrbm.errors.CyrbmError, match="two layers"):
        est.ais_per_vector(V)
    est = BoundEstimator(dbn, log_Z=1.0)
    with pytest.raises(cyrbm.errors.CyrbmError, match="steps S must be at least 1"):
        est.chib(V, steps=0)
    with pytest.raises(cyrbm.errors.CyrbmError, match="repeats R must be at least 1"):
        est.chib(V, repeats=0)


def test_cli_bound_chib_ais_and_trace(tmp_path, small):
    dbn, V, exact = small
    path, data = tmp_path / "d.npz", tmp_path / "v.npy"
    dbn.save(path)
    np.save(data, V)
    log_z = str(exact_log_partition(dbn.top))
    code, so, se = run_cli("bound", str(path), "--data", str(data), "--method", "chib",
                           "--steps", "5", "--repeats", "4", "--logz", log_z, "--json")
    assert code == 0, se
    r = json.loads(so)
    assert r["method"] == "chib" and r["n_data"] == 40 and r["steps"] == 5 and r["repeats"] == 4
    code, so, se = run_cli("bound", str(path), "--data", str(data), "--method", "ais",
                           "--steps", "50", "--repeats", "3", "--logz", log_z)
    assert code == 0 and "per-vector AIS over h1" in so and "3 runs of 50 betas" in so, se
    code, so, se = run_cli("bound", str(path), "--data", str(data), "--method", "chib",
                           "--steps", "5", "--trace", "--logz", log_z)
    assert code == 0, se
    rows = [line.split()[0] for line in so.splitlines() if line.split()[:1] and line.split()[0].isdigit()]
    assert rows == ["1", "2", "5"]


@pytest.mark.parametrize("argv,message", [
    (["--method", "chib", "--steps", "0"], "--steps must be at least 1"),
    (["--method", "chib", "--repeats", "0"], "--repeats must be at least 1"),
    (["--method", "ais", "--repeats", "1"], "--repeats must be at least 2"),
    (["--method", "variational", "--steps", "3"], "apply to --method chib and ais"),
    (["--method", "variational", "--trace"], "--trace applies to --method chib"),
    (["--method", "gibbs"], "must be variational, harmonic, chib or ais"),
])
def test_cli_bound_chib_bad_input(tmp_path, small, argv, message):
    dbn, V, _ = small
    path, data = tmp_path / "d.npz", tmp_path / "v.npy"
    dbn.save(path)
    np.save(data, V)
    code, so, se = run_cli("bound", str(path), "--data", str(data), "--logz", "1", *argv)
    assert code == 1 and message in se and len(se.strip().splitlines()) == 1, se


def test_cli_bound_chib_needs_two_layers(tmp_path, small):
    dbn, V, _ = small
    path, data = tmp_path / "d.npz", tmp_path / "v.npy"
    DBN([dbn.layers[0]]).save(path)
    np.save(data, V)
    code, so, se = run_cli("bound", str(path), "--data", str(data), "--method", "chib",
                           "--logz", "1")
    assert code == 1 and "two layers" in se and "Traceback" not in se, se
