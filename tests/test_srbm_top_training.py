"""Choosing a DBN's top layer (issue 22): ``train_dbn(..., top="srbm")`` trains the top
layer as an SRBM (``Trainer(lateral=True)``) above a Gaussian or binary bottom, resume
continues from an SRBM layer's checkpoint bit for bit, and ``cyrbm dbn --visible gaussian
--top srbm [--whiten KIND] [--reconstruction HOW]`` does the same from the command line
(the whitening kept in the bottom layer, applied by ``cyrbm bound``).  Tiny models."""
import json

import numpy as np
import pytest

from cyrbm import DBN, BoundEstimator, GaussianRBM, RBM, SRBM, train_dbn
from cyrbm.errors import ModelMismatchError
from cyrbm.estimators.gaussian_dbn import exact_log_prob
from cyrbm.training.greedy import layer_checkpoint, progress_file
from _commands import one_error_line, run

KW = dict(epochs=2, batch_size=50, learning_rate=0.01, seed=1, threads=1, progress=False)


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """Correlated real rows, (train, test), and their .npy files."""
    d = tmp_path_factory.mktemp("srbm_top")
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4)) + 2 * np.eye(4)
    X, T = (3 + rng.normal(size=(n, 4)) @ A.T for n in (300, 8))
    np.save(d / "train.npy", X)
    np.save(d / "test.npy", T)
    return X, T, d


def test_train_dbn_top_srbm(real):
    X, _, _ = real
    Z = (X - X.mean(0)) / X.std(0)
    dbn = train_dbn(Z, [6, 3], visible="gaussian", top="srbm", reconstruction="gibbs",
                    method="cd", **KW)
    assert isinstance(dbn.layers[0], GaussianRBM) and isinstance(dbn.top, SRBM)
    assert dbn.top_kind == "lateral" and dbn.meta["training"]["top"] == "srbm"
    assert np.any(dbn.top.L != 0)                       # the lateral weights were trained
    # the SRBM's settings went to the top alone
    assert dbn.top.meta["training"]["settings"]["lateral"]["reconstruction"] == "gibbs"
    assert "lateral" not in dbn.layers[0].meta["training"]["settings"]
    # the default (rbm) is the DBN it always was, and the top's own Trainer(lateral=True)
    # makes an SRBM top too
    assert isinstance(train_dbn(Z, [6, 3], visible="gaussian", **KW).top, RBM)
    assert train_dbn(Z, [6, 3], visible="gaussian", trainers=[{}, {"lateral": True}],
                     **KW).meta["training"]["top"] == "srbm"
    # a binary bottom with the top started as the transpose of the layer below (L = 0)
    B = (Z > 0).astype(np.uint8)
    dbn = train_dbn(B, [6, 4], top="srbm", init_transpose=True, **KW)
    assert isinstance(dbn.top, SRBM) and dbn.sizes == [4, 6, 4]


@pytest.mark.parametrize("kw,needle", [
    (dict(top="srbm", layers=[6]), "a DBN of one layer has none"),
    (dict(top="srbm", layer_input="probs"), "it needs layer_input samples"),
    (dict(reconstruction="gibbs"), "is for an SRBM top layer"),
    (dict(top="lateral"), "top must be 'rbm' or 'srbm'"),
])
def test_train_dbn_top_refusals(real, kw, needle):
    X, _, _ = real
    kw = dict(dict(layers=[6, 3]), **kw)
    with pytest.raises(ModelMismatchError) as exc:
        train_dbn((X > X.mean(0)).astype(np.uint8), kw.pop("layers"), **kw, **KW)
    text = str(exc.value)
    assert needle in text and "\n" not in text and text.endswith("."), text


def test_resume_from_an_srbm_layers_checkpoint(real, tmp_path):
    """A run stopped in its SRBM top layer continues from that layer's checkpoint: the
    same DBN bit for bit as a run never stopped."""
    X, _, _ = real
    Z = (X - X.mean(0)) / X.std(0)
    kw = dict(KW, visible="gaussian", top="srbm")
    full = train_dbn(Z, [6, 3], checkpoint=tmp_path / "a.ckpt.npz", **kw)
    # the same run stopped after one epoch of the top: its checkpoint is at epoch 1 and
    # the file of finished layers holds the bottom alone (as train_dbn writes it)
    ck = tmp_path / "b.ckpt.npz"
    train_dbn(Z, [6, 3], checkpoint=ck, trainers=[{}, {"epochs": 1}], **kw)
    done = DBN.load(progress_file(ck))
    DBN(done.layers[:1], meta=done.meta).save(progress_file(ck))
    assert SRBM.load(layer_checkpoint(ck, 1)).meta["checkpoint"]["epoch"] == 1
    again = train_dbn(Z, [6, 3], checkpoint=ck, resume=True, **kw)
    for a, b in zip(full.layers, again.layers):
        for name in ("W", "vbias", "hbias", "L"):
            if hasattr(a, name):
                np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    # a resume with another top is refused in one sentence
    DBN(done.layers[:1], meta=done.meta).save(progress_file(ck))
    with pytest.raises(ModelMismatchError, match="with top srbm, not rbm"):
        train_dbn(Z, [6, 3], checkpoint=ck, resume=True, **dict(kw, top="rbm"))


def test_cli_dbn_gaussian_srbm_top_whitened(real, tmp_path, capsys):
    X, T, d = real
    out = tmp_path / "p.npz"
    argv = ["dbn", d / "train.npy", "-o", out, "--layers", "6,3", "--visible", "gaussian",
            "--top", "srbm", "--whiten", "zca", "--epochs", "2", "--lr", "0.01",
            "--batch", "50", "--threads", "1", "--reconstruction", "gibbs"]
    code, stdout, err = run([*argv, "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    assert res["top"] == "srbm" and res["visible"] == "gaussian" and res["whiten"] == "zca"
    dbn = DBN.load(out)
    assert isinstance(dbn.top, SRBM) and dbn.layers[0].whitening.kind == "zca"
    assert dbn.top.meta["training"]["settings"]["lateral"]["reconstruction"] == "gibbs"
    code, stdout, err = run(["info", out], capsys)
    assert "top SRBM 6 x 3" in stdout
    # bound whitens --data as the bottom layer's file says, and adds ln|det A|
    w = dbn.layers[0].whitening
    exact, log_z = exact_log_prob(*dbn.layers, w.transform(T))
    code, stdout, err = run(["bound", out, "--data", d / "test.npy", "--method", "ais",
                             "--logz", repr(log_z), "--steps", "200", "--repeats", "8",
                             "--seed", "2", "--json"], capsys)
    assert code == 0, err
    res = json.loads(stdout)
    api = BoundEstimator(dbn, log_Z=log_z, seed=2).ais_per_vector(
        w.transform(T), 8, schedule="linear:200")
    assert res["mean"] == api.mean
    # ln Z given: the error is the runs' alone (not the spread over the rows, "stderr")
    assert abs(res["mean"] - exact.mean()) < 4 * res["mc_stderr"], res
    assert res["mean_pixels"] == pytest.approx(res["mean"] + w.log_det, abs=1e-12)
    code, stdout, _ = run(["bound", out, "--data", d / "test.npy", "--logz", repr(log_z)],
                          capsys)
    assert "in pixel space (zca whitening" in stdout
    # resume: --top left out is the run's own (srbm)
    ck = tmp_path / "p.ckpt.npz"
    done = DBN.load(progress_file(ck))
    DBN(done.layers[:1], meta=done.meta).save(progress_file(ck))
    code, stdout, err = run(["dbn", d / "train.npy", "-o", out, "--layers", "6,3",
                             "--visible", "gaussian", "--whiten", "zca", "--resume",
                             "--no-progress"], capsys)
    assert code == 0, err
    first = DBN.load(out)
    assert isinstance(first.top, SRBM)
    # the whitening is kept beside the checkpoints: a resume without --whiten applies it
    # (the same model as with it), one with another kind is refused
    assert (tmp_path / "p.whitening.npz").is_file()
    DBN(done.layers[:1], meta=done.meta).save(progress_file(ck))
    code, stdout, err = run(["dbn", d / "train.npy", "-o", out, "--layers", "6,3",
                             "--visible", "gaussian", "--resume", "--no-progress", "--json"],
                            capsys)
    assert code == 0, err
    assert json.loads(stdout)["whiten"] == "zca"
    again = DBN.load(out)
    assert again.layers[0].whitening.kind == "zca"
    for a, b in zip(first.layers, again.layers):
        np.testing.assert_array_equal(a.W, b.W)
    DBN(done.layers[:1], meta=done.meta).save(progress_file(ck))
    code, stdout, err = run(["dbn", d / "train.npy", "-o", out, "--layers", "6,3",
                             "--visible", "gaussian", "--whiten", "pca", "--resume",
                             "--no-progress"], capsys)
    assert code == 1
    assert "the run being resumed whitened its data by zca, not pca" in err


@pytest.mark.parametrize("extra,needle", [
    (["--top", "lateral"], "--top must be rbm or srbm"),
    (["--reconstruction", "gibbs"], "add --top srbm"),
    (["--top", "srbm", "--layer-input", "probs", "--binarize", "threshold"],
     "--top srbm trains the top layer on 0/1 samples"),
    (["--whiten", "zca"], "add --visible gaussian"),
    (["--visible", "gaussian", "--binarize", "threshold"], "--binarize is for binary"),
])
def test_cli_dbn_refusals(real, tmp_path, capsys, extra, needle):
    _, _, d = real
    code, _, err = run(["dbn", d / "train.npy", "-o", tmp_path / "x.npz", "--layers", "6,3",
                        *extra], capsys)
    assert code != 0
    one_error_line(err, needle)
