"""Model files and bad input: each failure is one clear sentence (the command line's
own tests are in tests/cli/)."""
import json

import numpy as np
import pytest

import cyrbm
from cyrbm import RBM, ModelFileError, DataError
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
