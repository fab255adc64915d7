"""The command line of Gaussian RBMs (issue 22): ``cyrbm train --visible gaussian`` with
--sigma, --learn-sigma and --whiten (the whitening saved in the model file), and ``cyrbm
ais``, ``logz`` and ``evaluate`` of a Gaussian model file (its whitening applied to
--data, ln p reported in pixel space too); bad input in one sentence."""
import json

import numpy as np
import pytest

from cyrbm import RBM
from cyrbm.models.gaussian import GaussianRBM
from cyrbm.data.patches import fit_whitening
from _commands import one_error_line, run


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Correlated real rows (train, test) as .npy files."""
    d = tmp_path_factory.mktemp("gaussian_cli")
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6)) + 2 * np.eye(6)
    for name, n in (("train", 400), ("test", 60)):
        np.save(d / f"{name}.npy", 3 + rng.normal(size=(n, 6)) @ A.T)
    return d


def train(files, capsys, *extra):
    out = files / "g.npz"
    code, stdout, err = run(["train", files / "train.npy", "-o", out, "--visible", "gaussian",
                             "--hidden", "4", "--epochs", "3", "--lr", "0.01", "--json",
                             *extra], capsys)
    assert code == 0, err
    return out, json.loads(stdout)


def test_sigma_and_learn_sigma(files, capsys):
    path, _ = train(files, capsys, "--sigma", "0.5", "--whiten", "standardize")
    m = GaussianRBM.load(path)
    np.testing.assert_array_equal(m.sigma, np.float32(0.5))
    path, _ = train(files, capsys, "--learn-sigma", "--whiten", "zca")
    m = GaussianRBM.load(path)
    assert not np.all(m.sigma == 1) and m.meta["training"]["settings"]["learn_sigma"]


def test_whitening_saved_and_applied_by_ais_logz_evaluate(files, capsys):
    path, _ = train(files, capsys, "--whiten", "zca")
    m = GaussianRBM.load(path)
    X, T = np.load(files / "train.npy"), np.load(files / "test.npy")
    w = fit_whitening(X, "zca")
    np.testing.assert_allclose(m.whitening.matrix, w.matrix, rtol=1e-12)
    code, out, err = run(["info", path, "--json"], capsys)
    assert code == 0 and json.loads(out)["whitening"]["kind"] == "zca"

    code, out, err = run(["logz", path, "--exact", "--json"], capsys)
    assert code == 0, err
    log_z = json.loads(out)["log_Z"]
    assert log_z == pytest.approx(m.log_partition(), abs=1e-9)

    code, out, err = run(["ais", path, "--data", files / "test.npy", "--runs", "50",
                          "--schedule", "linear:300", "--json"], capsys)
    assert code == 0, err
    r = json.loads(out)
    exact = float(np.mean(m.log_prob(w.transform(T), log_z)))
    # AIS of a 4-hidden-unit model: within 4 of its own standard errors of the exact
    lo, hi = r["avg_log_prob_sigma_interval"]
    assert abs(r["avg_log_prob"] - exact) < 4 * max(hi - r["avg_log_prob"], 1e-3)
    assert r["avg_log_prob_pixels"] == pytest.approx(r["avg_log_prob"] + w.log_det, abs=1e-9)
    assert r["whitening"]["log_det"] == pytest.approx(w.log_det, abs=1e-9)

    code, out, err = run(["evaluate", path, "--data", files / "test.npy", "--runs", "20",
                          "--schedule", "linear:100", "--chains", "2"], capsys)
    assert code == 0, err
    assert "AIS   in pixel space (zca whitening" in out and "RAISE in pixel space" in out
    code, out, err = run(["evaluate", path, "--data", files / "test.npy", "--runs", "20",
                          "--schedule", "linear:100", "--chains", "2", "--json"], capsys)
    r = json.loads(out)
    assert r["whitening"] == {"kind": "zca", "log_det": pytest.approx(w.log_det, abs=1e-9)}
    for part in ("ais", "raise"):
        assert "whitening" not in r[part]
        assert r[part]["mean_log_prob_pixels"] == pytest.approx(
            r[part]["mean_log_prob"] + w.log_det, abs=1e-9)


@pytest.mark.parametrize("args, needle", [
    (["train", "digits", "-o", "x.npz", "--sigma", "2"], "--visible gaussian"),
    (["train", "digits", "-o", "x.npz", "--learn-sigma"], "--visible gaussian"),
    (["train", "X", "-o", "x.npz", "--visible", "gaussian", "--sigma", "0"], "above 0"),
    (["train", "X", "-o", "x.npz", "--visible", "gaussian", "--whiten", "white"], "zca"),
    (["ratio", "G", "R"], "one unit type"),
    (["evaluate", "G", "--data", "T", "--simulate", "5"], "not yet for a Gaussian RBM"),
    (["evaluate", "G", "--data", "T", "--schedule", "adaptive:20"], "Gaussian RBM"),
    (["ais", "G", "--data", "digits:test"], "columns"),
    (["logz", "G25", "--exact"], "use 'cyrbm ais'"),
])
def test_bad_input_is_one_sentence(files, capsys, tmp_path, args, needle):
    path, _ = train(files, capsys, "--whiten", "pca")
    GaussianRBM.random(6, 25).save(tmp_path / "g25.npz")
    RBM.random(6, 3).save(tmp_path / "r.npz")
    subst = {"R": str(tmp_path / "r.npz"), "X": str(files / "train.npy"), "G": str(path), "T": str(files / "test.npy"),
             "x.npz": str(tmp_path / "x.npz"), "G25": str(tmp_path / "g25.npz")}
    code, out, err = run([subst.get(a, a) for a in args], capsys)
    assert code != 0
    one_error_line(err, needle)


def test_a_warning_is_one_sentence(files, capsys):
    """Data far from sigma^2 (the rows' variances are about 9 to 50): the Trainer's
    UserWarning reaches the command line's stderr as one sentence, without Python's file,
    line and category; the run goes on."""
    out = files / "w.npz"
    code, _, err = run(["train", files / "train.npy", "-o", out, "--visible", "gaussian",
                        "--hidden", "4", "--epochs", "1", "--json"], capsys)
    lines = err.strip().splitlines()
    assert code == 0 and len(lines) == 1, err
    assert lines[0].startswith("cyrbm train: warning: training data has variances"), err
    assert "UserWarning" not in err and ".py" not in err
