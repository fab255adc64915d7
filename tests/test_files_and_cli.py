"""Model files, bad input, and the command line: each failure is one clear sentence."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cyrbm
from cyrbm import RBM, ModelFileError, DataError
from cyrbm.cli import main
from cyrbm.errors import CyrbmError, ModelMismatchError, OutputError


def one_sentence(exc_or_text):
    text = str(exc_or_text).strip()
    return text and "\n" not in text and "Traceback" not in text


# ------------------------------------------------------------------- model files
def test_save_load_roundtrip_keeps_dtype_and_meta(tmp_path):
    for dtype in (np.float32, np.float64):
        m = RBM.random(12, 5, seed=1, dtype=dtype)
        m.meta["note"] = "hello"
        m.save(tmp_path / "m.npz")
        back = RBM.load(tmp_path / "m.npz")
        assert back.dtype == dtype and back.meta["note"] == "hello"
        np.testing.assert_array_equal(back.W, m.W)
    with np.load(tmp_path / "m.npz") as z:
        meta = json.loads(z["meta"].item())
    assert meta["format"] == "cyrbm.rbm" and meta["format_version"] == 1
    assert meta["n_visible"] == 12 and meta["dtype"] == "float64"


def test_weights_trained_elsewhere_load(tmp_path):
    np.savez(tmp_path / "w.npz", W=np.ones((4, 3)), vbias=np.zeros(4), hbias=np.zeros(3))
    m = RBM.load(tmp_path / "w.npz")
    assert (m.n_visible, m.n_hidden, m.dtype) == (4, 3, np.float64)


@pytest.mark.parametrize("arrays,needle", [
    (dict(W=np.ones((4, 3)), vbias=np.zeros(4)), "lacks the array 'hbias'"),
    (dict(W=np.ones((4, 3)), vbias=np.zeros(5), hbias=np.zeros(3)), "vbias has shape (5,)"),
    (dict(W=np.ones((4, 3)), vbias=np.zeros(4), hbias=np.zeros(2)), "hbias has shape (2,)"),
    (dict(W=np.full((4, 3), np.nan), vbias=np.zeros(4), hbias=np.zeros(3)), "W contains NaN"),
    (dict(W=np.ones((4, 3)), vbias=np.zeros(4), hbias=np.zeros(3),
          meta=np.array(json.dumps({"format_version": 99}))), "format version 99"),
    (dict(W=np.ones((4, 3)), vbias=np.zeros(4), hbias=np.zeros(3), meta=np.array("{oops")),
     "not valid JSON"),
])
def test_bad_model_files_give_one_sentence(tmp_path, arrays, needle):
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ModelFileError) as err:
        RBM.load(tmp_path / "bad.npz")
    assert needle in str(err.value) and one_sentence(err.value)


def test_truncated_and_foreign_files(tmp_path):
    RBM.random(30, 20).save(tmp_path / "m.npz")
    raw = (tmp_path / "m.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(raw[: len(raw) // 2])
    (tmp_path / "text.npz").write_text("not a model")
    for name in ("cut.npz", "text.npz"):
        with pytest.raises(ModelFileError) as err:
            RBM.load(tmp_path / name)
        assert "not a readable .npz" in str(err.value) and one_sentence(err.value)
    with pytest.raises(ModelFileError, match="no such model file"):
        RBM.load(tmp_path / "missing.npz")


def test_save_is_atomic_and_unwritable_paths_are_refused(tmp_path):
    m = RBM.random(5, 2)
    m.save(tmp_path / "m.npz")
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]     # no temporary left over
    for target in (tmp_path / "no" / "such" / "dir.npz", tmp_path):
        with pytest.raises(OutputError) as err:
            cyrbm._io.check_outputs([("-o", target, "npz")])
        assert one_sentence(err.value)
    with pytest.raises(OutputError):
        m.save(tmp_path / "no" / "m.npz")


# ------------------------------------------------------------------- bad data
@pytest.mark.parametrize("call,needle", [
    (lambda m: cyrbm.Trainer(3).fit(np.array([[0, 1], [0.5, 1]])), "row 2, column 1"),
    (lambda m: cyrbm.Trainer(3).fit(np.array([[0, 1], [np.nan, 1]])), "NaN"),
    (lambda m: cyrbm.Trainer(3).fit(np.zeros((0, 6))), "no samples"),
    (lambda m: m.log_unnormalized(np.zeros((3, 5))), "5 columns but the model has 6"),
    (lambda m: m.pseudo_log_likelihood(np.full((3, 6), 2)), "row 1, column 1"),
    (lambda m: m.hidden_probs(np.zeros((2, 7))), "7 columns but the model has 6"),
    (lambda m: m.sample(3, 2, init=np.zeros((2, 4))), "4 columns but the model has 6"),
])
def test_bad_data_for_a_model(call, needle):
    with pytest.raises(CyrbmError) as err:
        call(RBM.random(6, 3))
    assert needle in str(err.value) and one_sentence(err.value)


# ------------------------------------------------------------------- command line
def run_cli(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_train_and_info(tmp_path, capsys):
    model = tmp_path / "m.npz"
    code, out, err = run_cli(["train", "digits", "-o", str(model), "--hidden", "20",
                              "--epochs", "2", "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["n_hidden"] == 20 and result["epochs"] == 2 and len(result["history"]) == 2
    assert os.path.exists(tmp_path / "m.ckpt.npz")
    code, out, err = run_cli(["info", str(model), "--json"], capsys)
    info = json.loads(out)
    assert code == 0 and info["n_visible"] == 64 and info["training"]["settings"]["method"] == "cd"
    code, out, _ = run_cli(["info", str(model)], capsys)
    assert "RBM 64 visible x 20 hidden" in out
    code, out, _ = run_cli(["info", "--json"], capsys)
    assert code == 0 and "openmp" in json.loads(out)
    # resume to more epochs
    code, out, err = run_cli(["train", "digits", "-o", str(model), "--hidden", "20",
                              "--epochs", "3", "--resume", "--json"], capsys)
    assert code == 0 and len(json.loads(out)["history"]) == 3


@pytest.mark.parametrize("make,args,needle", [
    (lambda d: np.save(d / "x.npy", np.array([[0, 1], [2, 0]])), ["train", "{d}/x.npy", "-o", "{d}/m.npz"],
     "row 2, column 1"),
    (lambda d: np.save(d / "x.npy", np.array([[0, np.nan]])), ["train", "{d}/x.npy", "-o", "{d}/m.npz"], "NaN"),
    (lambda d: None, ["train", "digits", "-o", "{d}/nodir/m.npz"], "does not exist"),
    (lambda d: None, ["train", "digits", "-o", "{d}/m.npz", "--epochs", "two"], "--epochs must be a whole number"),
    (lambda d: None, ["train", "digits", "-o", "{d}/m.npz", "--method", "xx"], "method must be one of"),
    (lambda d: None, ["train", "nosuchdata", "-o", "{d}/m.npz"], "nosuchdata"),
    (lambda d: (d / "m.npz").write_bytes(b"PK\x03\x04garbage"), ["info", "{d}/m.npz"], "not a readable .npz"),
    (lambda d: None, ["train", "digits", "-o", "{d}/m.npz", "--resume"], "no checkpoint"),
])
def test_cli_errors_are_one_sentence(tmp_path, capsys, make, args, needle):
    make(tmp_path)
    code, out, err = run_cli([a.format(d=tmp_path) for a in args], capsys)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("cyrbm "), err


def test_cli_ais_with_a_schedule_file(tmp_path, capsys):
    model = cyrbm.RBM(np.random.default_rng(0).normal(0, 0.1, (64, 6)), np.zeros(64), np.zeros(6))
    model.save(tmp_path / "m.npz")
    sched = tmp_path / "betas.txt"
    sched.write_text("# a schedule of my own\n" + "\n".join(str(b) for b in np.linspace(0, 1, 37)))
    code, out, err = run_cli(["ais", str(tmp_path / "m.npz"), "--schedule", str(sched), "--runs",
                              "4", "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["betas"] == 37 and result["runs"] == 4 and result["schedule"] == str(sched)
    code, out, err = run_cli(["logz", str(tmp_path / "m.npz"), "--exact", "--json"], capsys)
    lo, hi = result["log_Z_3sigma_interval"]
    assert lo <= json.loads(out)["log_Z"] <= hi
    sched.write_text("0\n0.5\n0.4\n1\n")
    code, out, err = run_cli(["ais", str(tmp_path / "m.npz"), "--schedule", str(sched)], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "strictly increasing" in lines[0], err
    sched.write_text("0\nhalf\n1\n")
    code, out, err = run_cli(["ais", str(tmp_path / "m.npz"), "--schedule", str(sched)], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "not a list of numbers" in lines[0], err


def test_console_script_is_installed():
    exe = os.path.join(os.path.dirname(sys.executable), "cyrbm")
    if not os.path.exists(exe):
        pytest.skip("the cyrbm console script is not installed in this environment")
    result = subprocess.run([exe, "info", "--json"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and json.loads(result.stdout)["version"] == cyrbm.__version__
    result = subprocess.run([exe, "info", "/nonexistent.npz"], capture_output=True, text=True)
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
