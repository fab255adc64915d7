"""``cyrbm info`` (cyrbm/cli/info.py): a trained model's sizes and training record, the
build's configuration, in text and JSON."""
import json
import os

from _commands import run


def test_cli_train_and_info(tmp_path, capsys):
    model = tmp_path / "m.npz"
    code, out, err = run(["train", "digits", "-o", str(model), "--hidden", "20",
                              "--epochs", "2", "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["n_hidden"] == 20 and result["epochs"] == 2 and len(result["history"]) == 2
    assert os.path.exists(tmp_path / "m.ckpt.npz")
    code, out, err = run(["info", str(model), "--json"], capsys)
    info = json.loads(out)
    assert code == 0 and info["n_visible"] == 64 and info["training"]["settings"]["method"] == "cd"
    code, out, _ = run(["info", str(model)], capsys)
    assert "RBM 64 visible x 20 hidden" in out
    code, out, _ = run(["info", "--json"], capsys)
    assert code == 0 and "openmp" in json.loads(out)
    # resume to more epochs
    code, out, err = run(["train", "digits", "-o", str(model), "--hidden", "20",
                              "--epochs", "3", "--resume", "--json"], capsys)
    assert code == 0 and len(json.loads(out)["history"]) == 3
