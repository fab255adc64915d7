"""DBN layers trained on probabilities (issue 12: "sampled states, or probabilities (an
option)"), and `cyrbm dbn` with another Trainer method per layer (issue 11)."""
import json
import subprocess
import sys

import numpy as np
import pytest

import cyrbm
from cyrbm import DBN, BoundEstimator, Trainer
from cyrbm._random import make_streams
from cyrbm.errors import DataError, ModelMismatchError
from cyrbm.training.greedy import progress_file, train_dbn
from cyrbm.models.rbm import probability_statistics


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def statistics(v, W, c):
    """sum_n v_n p(h | v_n)^T, sum_n v_n, sum_n p(h | v_n) in float64 (SM08 Eq. 7)."""
    p = sigmoid(v @ W + c)
    return v.T @ p, v.sum(axis=0), p.sum(axis=0)


@pytest.mark.parametrize("k,persistent", [(0, True), (1, False), (2, True)])
def test_positive_statistics_are_the_expectation_under_the_probabilities(k, persistent):
    rng = np.random.default_rng(0)
    D, H, B = 7, 5, 6
    model = cyrbm.RBM(rng.standard_normal((D, H)), rng.standard_normal(D),
                      rng.standard_normal(H), dtype=np.float64)
    x = rng.random((B, D))
    x[0, 0], x[1, 1] = 0.0, 1.0
    chains = (rng.random((B, D)) < 0.5).astype(np.uint8)
    params = (model.W, model.vbias, model.hbias)
    grads = tuple(np.empty_like(a) for a in params)
    settings = dict(k=k, persistent=persistent, n_threads=1, learning_rate=0.1, momentum=0.0,
                    weight_decay=0.0, scale=1.0)
    probability_statistics(params, x, chains, make_streams(0, "chains", B), grads, settings)
    # chains now hold the negative phase's states v~ (CD: k sweeps from a draw of x)
    pos = statistics(x, model.W, model.hbias)
    neg = statistics(chains.astype(float), model.W, model.hbias)
    for got, p, n in zip(grads, pos, neg):
        np.testing.assert_allclose(got, p - n, rtol=0, atol=1e-12)


def test_cd_chains_start_at_a_draw_of_the_probabilities():
    """A model whose CD-1 sweep copies v to h and back (W = 50 I, biases -25): the chains
    after the step are the draw of x itself.  x in {0, 1} comes back exactly, x = 0.3
    gives ones at a rate of 0.3 (within 4 standard errors)."""
    D, B = 40, 200
    model = cyrbm.RBM(50.0 * np.eye(D), np.full(D, -25.0), np.full(D, -25.0),
                      dtype=np.float64)
    x = np.full((B, D), 0.3)
    x[:, :10] = 1.0
    x[:, 10:20] = 0.0
    chains = np.empty((B, D), np.uint8)
    grads = tuple(np.empty_like(a) for a in (model.W, model.vbias, model.hbias))
    settings = dict(k=1, persistent=False, n_threads=2, learning_rate=0.1, momentum=0.0,
                    weight_decay=0.0, scale=1.0)
    probability_statistics((model.W, model.vbias, model.hbias), x, chains,
                           make_streams(2, "chains", B), grads, settings)
    assert chains[:, :10].all() and not chains[:, 10:20].any()
    rate = chains[:, 20:].mean()
    assert abs(rate - 0.3) < 4 * np.sqrt(0.3 * 0.7 / chains[:, 20:].size)


def test_fit_takes_probabilities_only_when_asked():
    x = np.random.default_rng(2).random((30, 6))
    with pytest.raises(DataError, match="not binary"):
        Trainer(3, epochs=1, monitor_size=0, progress=False).fit(x)
    bad = x.copy()
    bad[4, 2] = 1.5
    with pytest.raises(DataError, match="row 5, column 3; probabilities must lie in"):
        Trainer(3, epochs=1, monitor_size=0, progress=False).fit(bad, probabilities=True)
    tr = Trainer(3, epochs=2, monitor_size=10, progress=False, seed=1)
    model = tr.fit(x, probabilities=True)
    assert model.meta["training"]["input"] == "probabilities"
    assert np.isfinite(tr.history[-1]["pseudo_log_likelihood"])


def test_three_layer_dbn_on_probabilities_same_bits_and_bound(tmp_path):
    X = cyrbm.load_data("digits:train")[:300]
    kw = dict(epochs=2, learning_rate=0.1, seed=3, monitor_size=0, progress=False,
              layer_input="probs")
    a = train_dbn(X, [12, 9, 7], threads=1, **kw)
    b = train_dbn(X, [12, 9, 7], threads=2, **kw)
    for ra, rb in zip(a.layers, b.layers):
        np.testing.assert_array_equal(ra.W, rb.W)
        np.testing.assert_array_equal(ra.hbias, rb.hbias)
    assert a.meta["training"]["layer_input"] == "probs"
    assert a.layers[1].meta["training"]["input"] == "probabilities"
    assert a.layers[0].meta["training"]["input"] == "binary"
    assert a.layers[2].meta["greedy"]["data"] == "probs of Q"
    samples = train_dbn(X, [12, 9, 7], threads=1, **dict(kw, layer_input="samples"))
    assert not np.array_equal(samples.layers[1].W, a.layers[1].W)
    res = BoundEstimator(a, log_Z=cyrbm.exact_log_partition(a.top), seed=0).variational(
        cyrbm.load_data("digits:test")[:50], samples=2)
    assert np.all(np.isfinite(res.values)) and res.mean < 0
    # a resume must use the same layer input
    ck = tmp_path / "d.ckpt.npz"
    DBN(a.layers[:2]).save(progress_file(ck))
    with pytest.raises(ModelMismatchError, match="same layer input"):
        train_dbn(X, [12, 9, 7], checkpoint=ck, resume=True, **dict(kw, layer_input="samples"))


def run_cli(*argv):
    import tempfile
    with tempfile.TemporaryDirectory() as cwd:    # the installed package, not the tree
        p = subprocess.run([sys.executable, "-m", "cyrbm.cli", *argv], capture_output=True,
                           text=True, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("extra", [["--layer-input", "probs"], ["--method", "pt"],
                                   ["--method", "cd,pt", "--layer-input", "probs"]])
def test_cli_dbn_layer_input_and_methods_then_bound(tmp_path, extra):
    data = tmp_path / "tiny.npy"
    np.save(data, (np.random.default_rng(4).random((60, 12)) < 0.4).astype(np.uint8))
    out = tmp_path / "x.npz"
    code, so, se = run_cli("dbn", str(data), "-o", str(out), "--layers", "8,6", "--epochs",
                           "1", "--no-progress", "--json", *extra)
    assert code == 0, se
    r = json.loads(so)
    assert r["sizes"] == [12, 8, 6]
    assert r["layer_input"] == ("probs" if "probs" in extra else "samples")
    code, so, se = run_cli("bound", str(out), "--data", str(data), "--logz", "0", "--json")
    assert code == 0, se
    assert np.isfinite(json.loads(so)["mean"])
    code, so, se = run_cli("info", str(out), "--json")
    assert code == 0 and json.loads(so)["training"]["layer_input"] == r["layer_input"], se


def test_cli_dbn_bad_layer_input(tmp_path):
    code, so, se = run_cli("dbn", "digits:train", "-o", str(tmp_path / "x.npz"), "--layers",
                           "8", "--layer-input", "means")
    assert code == 1 and "--layer-input must be samples or probs" in se
    assert "Traceback" not in se


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_vectors_bound_terms_do_not_depend_on_the_other_vectors(dtype):
    """Each row's products take row sums or subset tables by its own count: the terms of
    a vector are the same bits alone, in any block, beside sparse or dense rows."""
    rng = np.random.default_rng(5)
    dbn = DBN([cyrbm.RBM(rng.standard_normal((37, 21)), rng.standard_normal(37),
                         rng.standard_normal(21), dtype=dtype),
               cyrbm.RBM(rng.standard_normal((21, 13)), rng.standard_normal(21),
                         rng.standard_normal(13) - 1, dtype=dtype)])
    p = np.repeat([0.05, 0.3, 0.9], 200)[rng.permutation(600)][:, None]
    V = (rng.random((600, 37)) < p).astype(np.uint8)      # rows of every density, mixed
    from cyrbm import _dbn
    args = ([r.W for r in dbn.layers], [r.vbias for r in dbn.layers],
            [r.hbias for r in dbn.layers])
    streams = make_streams(2, "bound", 600)
    full = _dbn.bound_terms(*args, V, 2, streams.copy(), 2, 512)
    for rows in (slice(0, 7), slice(300, 301), slice(450, 600), slice(5, 600)):
        part = _dbn.bound_terms(*args, np.ascontiguousarray(V[rows]), 2,
                                streams[rows].copy(), 1, 512)      # advanced in place
        for a, b in zip(part, full):
            np.testing.assert_array_equal(a, b[rows])
