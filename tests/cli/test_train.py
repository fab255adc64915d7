"""``cyrbm train`` (cyrbm/cli/train.py) under bad input and faults (issue 10): one sentence
on stderr for every user error, no user file replaced unless it is the output named for
it, and resume's rules for settings left out or given.
"""
import json
import os
import stat

import numpy as np
import pytest

import cyrbm
from cyrbm import RBM, _io
from _commands import one_error_line, run


def test_output_naming_the_training_data_is_refused(tmp_path, capsys):
    data = tmp_path / "d.npz"
    np.savez(data, x=cyrbm.load_data("digits")[:200])
    before = data.read_bytes()
    code, _, err = run(["train", data, "-o", data, "--epochs", "1"], capsys)
    assert code == 1
    one_error_line(err, "is the training data")
    assert data.read_bytes() == before


def test_checkpoint_naming_the_training_data_is_refused(tmp_path, capsys):
    data = tmp_path / "d.npy"
    np.save(data, cyrbm.load_data("digits")[:200])
    before = data.read_bytes()
    code, _, err = run(["train", data, "-o", tmp_path / "m.npz", "--checkpoint", data,
                        "--epochs", "1"], capsys)
    assert code == 1
    one_error_line(err, "--checkpoint")
    assert data.read_bytes() == before and not (tmp_path / "m.npz").exists()
    # the checkpoint named after -o is the data file
    data2 = tmp_path / "m.ckpt.npz"
    np.savez(data2, x=cyrbm.load_data("digits")[:200])
    before = data2.read_bytes()
    code, _, err = run(["train", data2, "-o", tmp_path / "m.npz", "--epochs", "1"], capsys)
    assert code == 1 and "is the training data" in one_error_line(err)
    assert data2.read_bytes() == before


def test_a_foreign_file_where_the_checkpoint_goes_is_kept(tmp_path, capsys):
    (tmp_path / "m.ckpt.npz").write_text("my notes")
    code, _, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--epochs", "1"], capsys)
    assert code == 1 and "not a cyrbm checkpoint" in one_error_line(err)
    assert (tmp_path / "m.ckpt.npz").read_text() == "my notes"


@pytest.mark.parametrize("which", ["model", "checkpoint"])
def test_read_only_files_are_not_replaced(tmp_path, capsys, which):
    model, ckpt = tmp_path / "m.npz", tmp_path / "m.ckpt.npz"
    code, _, err = run(["train", "digits", "-o", model, "--hidden", "5", "--epochs", "1",
                        "--no-progress"], capsys)
    assert code == 0, err
    target = model if which == "model" else ckpt
    os.chmod(target, 0o444)
    # The check itself: tests may run as root, for whom os.access says "writable";
    # the mode bits still say "keep me".
    assert _io.is_read_only(target)
    before = target.read_bytes()
    code, _, err = run(["train", "digits", "-o", model, "--hidden", "5", "--epochs", "2"], capsys)
    assert code == 1
    one_error_line(err, "read-only")
    assert target.read_bytes() == before
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o444
    os.chmod(target, 0o644)


def test_a_replaced_model_keeps_its_mode(tmp_path, capsys):
    model = tmp_path / "m.npz"
    assert run(["train", "digits", "-o", model, "--hidden", "5", "--epochs", "1"], capsys)[0] == 0
    os.chmod(model, 0o640)
    assert run(["train", "digits", "-o", model, "--hidden", "5", "--epochs", "1"], capsys)[0] == 0
    assert stat.S_IMODE(os.stat(model).st_mode) == 0o640


@pytest.mark.parametrize("option,value,was", [("--hidden", "20", "10"), ("--batch", "50", "100"),
                                              ("--seed", "3", "0"), ("--method", "pcd", "cd")])
def test_resume_with_conflicting_settings_is_refused(tmp_path, capsys, option, value, was):
    """The resume rule (cyrbm.training.resume): a setting it does not let change is
    refused in one sentence naming it, the checkpoint's value and the given one."""
    model = tmp_path / "m.npz"
    assert run(["train", "digits", "-o", model, "--hidden", "10", "--epochs", "1"], capsys)[0] == 0
    code, _, err = run(["train", "digits", "-o", model, option, value, "--epochs", "2",
                        "--resume"], capsys)
    assert code == 1
    one_error_line(err, f"it was made with {option} {was}, not {option} {value}, and a "
                        f"resume may change only --epochs, --k, --lr, --lr-decay, "
                        f"--momentum, --weight-decay, --monitor")


@pytest.mark.parametrize("option,value,setting,was,now", [
    ("--lr", "0.2", "learning_rate", 0.05, 0.2), ("--k", "2", "k", 1, 2),
    ("--momentum", "0.9", "momentum", 0.5, 0.9)])
def test_resume_with_a_changeable_setting_records_it(tmp_path, capsys, option, value,
                                                     setting, was, now):
    """--lr, --k, --momentum may change on resume: the change is in the history (--json)
    and on the epoch line."""
    model = tmp_path / "m.npz"
    assert run(["train", "digits", "-o", model, "--hidden", "10", "--epochs", "1"], capsys)[0] == 0
    code, out, err = run(["train", "digits", "-o", model, option, value, "--epochs", "2",
                          "--resume", "--json"], capsys)
    assert code == 0, err
    history = json.loads(out)["history"]
    assert "changed" not in history[0]
    assert [(c["setting"], c["checkpoint"], c["now"]) for c in history[1]["changed"]] == [
        ("epochs", 1, 2), (setting, was, now)]
    code, out, err = run(["train", "digits", "-o", model, option, value, "--epochs", "3",
                          "--resume"], capsys)
    assert code == 0, err
    assert "epochs changed on resume from 2 to 3 after update 36" in err


def test_resume_takes_left_out_settings_from_the_checkpoint(tmp_path, capsys):
    model = tmp_path / "m.npz"
    base = ["train", "digits", "-o", model, "--hidden", "10", "--lr", "0.1", "--k", "2",
            "--epochs", "2"]
    assert run(base, capsys)[0] == 0
    straight = RBM.load(model)
    assert run(base[:-1] + ["1"] + ["--checkpoint", tmp_path / "c.npz"], capsys)[0] == 0
    code, out, err = run(["train", "digits", "-o", model, "--checkpoint", tmp_path / "c.npz",
                          "--epochs", "2", "--resume", "--json"], capsys)
    assert code == 0, err
    resumed = RBM.load(model)
    assert resumed.meta["training"]["settings"]["n_hidden"] == 10
    assert resumed.meta["training"]["settings"]["learning_rate"] == 0.1
    np.testing.assert_array_equal(resumed.W, straight.W)
    code, _, err = run(["train", "digits", "-o", model, "--checkpoint", tmp_path / "c.npz",
                        "--epochs", "1", "--resume"], capsys)
    assert code == 1 and "fewer than the 2 epochs" in one_error_line(err)


@pytest.mark.parametrize("args,needle", [
    (["--dtype", "foo"], "--dtype must be float32 or float64"),
    (["--hidden", "1000000000"], "use fewer hidden units"),
    (["--batch", "1e9"], "use smaller mini-batches"),
    (["--batch", "1000000000"], "use smaller mini-batches"),
    (["--hidden", "0"], "--hidden must be at least 1"),
    (["--momentum", "1"], "--momentum must be"),
    (["--lr", "-1"], "--lr must be above 0"),
    (["--k", "0"], "--k must be"),
])
def test_bad_train_values_are_one_sentence(tmp_path, capsys, args, needle):
    code, _, err = run(["train", "digits", "-o", tmp_path / "m.npz"] + args, capsys)
    assert code == 1
    one_error_line(err, needle)
    assert not (tmp_path / "m.npz").exists()


def test_zero_epochs_is_refused_and_no_phantom_checkpoint(tmp_path, capsys):
    code, out, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--epochs", "0"], capsys)
    assert code == 1 and out == ""
    one_error_line(err, "--epochs must be at least 1")
    assert list(tmp_path.iterdir()) == []
    code, out, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--epochs", "1",
                          "--hidden", "5"], capsys)
    assert code == 0 and "(checkpoint " in out and (tmp_path / "m.ckpt.npz").exists()
