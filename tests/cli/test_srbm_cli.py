"""The command line of SRBMs (issue 22): ``cyrbm train --lateral [--reconstruction
mean-field|gibbs]`` writes an SRBM file (resume continues it bit for bit, the SRBM
settings defaulting to the checkpoint's); ``cyrbm ais`` estimates its ln Z within its
stated error of the exact value that ``cyrbm logz --exact`` gives; ``cyrbm evaluate``
sets forward AIS beside RAISE on it, each within its error of the exact mean ln p(v);
bad combinations are refused in one sentence.  Tiny models (4-6 visible units)."""
import json

import numpy as np
import pytest

from cyrbm import SRBM
from _commands import one_error_line, run


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("srbm_cli")
    rng = np.random.default_rng(0)
    z = rng.random((400, 1)) < 0.5          # two correlated halves: lateral weights help
    X = np.where(z, rng.random((400, 6)) < 0.8, rng.random((400, 6)) < 0.2).astype(np.uint8)
    np.save(d / "x.npy", X)
    return d


def train(data, capsys, out, *extra):
    code, stdout, err = run(["train", data / "x.npy", "-o", out, "--lateral", "--hidden", "3",
                             "--lr", "0.1", "--batch", "50", "--threads", "1",
                             "--checkpoint-seconds", "0", "--json", *extra], capsys)
    assert code == 0, err
    return json.loads(stdout)


def test_train_lateral_writes_an_srbm_and_resumes(data, tmp_path, capsys):
    train(data, capsys, tmp_path / "a.npz", "--epochs", "4", "--reconstruction", "gibbs")
    m = SRBM.load(tmp_path / "a.npz")
    assert np.any(m.L != 0) and m.meta["training"]["settings"]["lateral"]["reconstruction"] \
        == "gibbs"
    # 2 epochs, then --resume to 4 (--lateral and --reconstruction left out: the
    # checkpoint's): the same bits as 4 straight
    train(data, capsys, tmp_path / "b.npz", "--epochs", "2", "--reconstruction", "gibbs")
    code, _, err = run(["train", data / "x.npy", "-o", tmp_path / "b.npz", "--resume",
                        "--epochs", "4", "--no-progress"], capsys)
    assert code == 0, err
    b = SRBM.load(tmp_path / "b.npz")
    for name in ("W", "vbias", "hbias", "L"):
        np.testing.assert_array_equal(getattr(b, name), getattr(m, name))
    code, out, _ = run(["info", tmp_path / "b.npz"], capsys)
    assert "SRBM (lateral visible connections) 6 visible x 3 hidden" in out


def test_ais_and_logz_of_an_srbm_file(data, tmp_path, capsys):
    path = tmp_path / "s.npz"
    train(data, capsys, path, "--epochs", "5")
    code, out, err = run(["logz", path, "--exact", "--json"], capsys)
    assert code == 0, err
    exact = json.loads(out)
    assert exact["log_Z"] == pytest.approx(SRBM.load(path).log_partition(), abs=1e-12)
    assert exact["enumerated_layer"] == "visible" and exact["terms"] == 64
    code, out, err = run(["ais", path, "--data", data / "x.npy", "--runs", "100",
                          "--schedule", "linear:300", "--json"], capsys)
    assert code == 0, err
    ais = json.loads(out)
    assert ais["visible"] == "lateral"
    sigma = ais["log_Z"] - ais["log_Z_sigma_interval"][0]
    assert 0 < sigma and abs(ais["log_Z"] - exact["log_Z"]) < 3 * sigma + 1e-3, ais
    model = SRBM.load(path)
    X = np.load(data / "x.npy")
    mean = float(np.mean(model.log_prob(X, exact["log_Z"])))
    assert abs(ais["avg_log_prob"] - mean) < 3 * sigma + 1e-3
    code, out, _ = run(["ais", path, "--runs", "20", "--schedule", "linear:50"], capsys)
    assert code == 0 and out.startswith("ln Z = ")
    # over 20 visible units: no exact sum, one sentence
    rng = np.random.default_rng(1)
    SRBM(rng.normal(size=(21, 2)), np.zeros(21), np.zeros(2)).save(tmp_path / "big.npz")
    code, _, err = run(["logz", tmp_path / "big.npz", "--exact"], capsys)
    assert code != 0
    one_error_line(err, "sums 2^21 visible states")


def test_evaluate_an_srbm_file_forward_ais_and_raise(data, tmp_path, capsys):
    """cyrbm evaluate of an SRBM: forward AIS and RAISE (srbm_raise_log_weights: reverse
    chains from each test row) each within 3 of its standard errors of the exact mean
    ln p(v); both far from a model with shifted biases (power)."""
    rng = np.random.default_rng(1)
    L = np.triu(rng.normal(0, 0.8, (6, 6)), 1)
    m = SRBM(rng.normal(0, 0.8, (6, 3)), rng.normal(0, 0.5, 6), rng.normal(0, 0.5, 3),
             L + L.T, dtype=np.float64)
    m.save(tmp_path / "m.npz")
    V = m.sample(20, steps=50, seed=3)
    np.save(tmp_path / "v.npy", V)
    exact = float(np.mean(m.log_prob(V)))
    shifted = SRBM(m.W, m.vbias + 0.3, m.hbias, m.L)
    wrong = float(np.mean(shifted.log_prob(V)))
    code, out, err = run(["evaluate", tmp_path / "m.npz", "--data", tmp_path / "v.npy",
                          "--runs", "100", "--schedule", "linear:300", "--chains", "10",
                          "--seed", "2", "--json"], capsys)
    assert code == 0, err
    r = json.loads(out)
    for part in ("ais", "raise"):
        est, se = r[part]["mean_log_prob"], r[part]["se"]
        assert 0 < se and abs(est - exact) < 3 * se, (part, est, exact, se)
        assert abs(est - wrong) > 3 * se
    assert r["base"]["kind"] == "lateral"
    code, out, _ = run(["evaluate", tmp_path / "m.npz", "--data", tmp_path / "v.npy",
                        "--runs", "20", "--schedule", "linear:50"], capsys)
    assert code == 0 and "RAISE (conservative)" in out


@pytest.mark.parametrize("argv,needle", [
    (["train", "{x}", "-o", "{o}", "--reconstruction", "gibbs"], "add --lateral"),
    (["train", "{x}", "-o", "{o}", "--lateral", "--method", "pcd"],
     "pcd or amh with --reconstruction gibbs"),
    (["train", "{x}", "-o", "{o}", "--lateral", "--method", "amh"],
     "not --method amh with mean-field"),
    (["train", "{x}", "-o", "{o}", "--lateral", "--method", "pt", "--reconstruction",
      "mean-field"], "--reconstruction mean-field does not apply"),
    (["train", "{x}", "-o", "{o}", "--lateral", "--visible", "gaussian"],
     "--visible gaussian does not apply"),
    (["train", "{x}", "-o", "{o}", "--lateral", "--reconstruction", "exact"],
     "mean-field or gibbs"),
    (["evaluate", "{s}", "--data", "{x}", "--simulate", "5"], "not yet for an SRBM"),
])
def test_refused_in_one_sentence(data, tmp_path, capsys, argv, needle):
    rng = np.random.default_rng(2)
    SRBM(rng.normal(size=(6, 2)), np.zeros(6), np.zeros(2)).save(tmp_path / "s.npz")
    names = {"x": data / "x.npy", "o": tmp_path / "o.npz", "s": tmp_path / "s.npz"}
    code, _, err = run([a.format(**names) for a in argv], capsys)
    assert code != 0
    one_error_line(err, needle)
