"""Resume means continue (issue 20): a resumed run continues the run its checkpoint
began, or is refused in one sentence naming the cause.

Through the command line (``cyrbm.cli.main`` in-process, as in cli/test_main.py) where the
issue names a command, and through the Python API (Trainer, train_dbn).
"""
import json

import numpy as np
import pytest

import cyrbm
from cyrbm import DBN, RBM, Trainer
from cyrbm.errors import ModelFileError, ModelMismatchError
from cyrbm.training.greedy import layer_checkpoint, progress_file, train_dbn
from _commands import run


def one_error(err, *needles):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], err
    return lines[0]


# --------------------------------------------------------------------------- k ramp
def test_resumed_k_ramp_continues_the_ramp_its_run_began(tmp_path, capsys):
    """train --epochs 4 --k 1:5, then --epochs 8 --resume: k was [1, 2, 4, 5, 3, 4, 4, 5]
    (the ramp re-planned over 8 epochs); now the ramp of the first run, then its last k."""
    model = tmp_path / "m.npz"
    train = ["train", "digits", "-o", model, "--hidden", "5", "--batch", "200",
             "--monitor", "0"]
    code, out, err = run(train + ["--epochs", "4", "--k", "1:5", "--json"], capsys)
    assert code == 0, err
    assert [r["k"] for r in json.loads(out)["history"]] == [1, 2, 4, 5]
    code, out, err = run(train + ["--epochs", "8", "--resume", "--json"], capsys)
    assert code == 0, err
    assert [r["k"] for r in json.loads(out)["history"]] == [1, 2, 4, 5, 5, 5, 5, 5]
    settings = RBM.load(model).meta["training"]["settings"]
    assert settings["k"] == "1:5" and settings["k_span"] == 4 and settings["epochs"] == 8
    # the label says how k went
    code, out, err = run(train + ["--epochs", "9", "--resume"], capsys)
    assert code == 0, err
    assert "CD-1:5 (k from 1 to 5 over epochs 1-4, then 5)" in out


def test_resumed_k_ramp_through_the_api(tmp_path):
    X = cyrbm.load_data("digits")[:300]
    ck = tmp_path / "m.ckpt.npz"
    kw = dict(k="2:6", batch_size=100, monitor_size=0, seed=3, checkpoint=ck)
    tr = Trainer(5, epochs=3, **kw)
    tr.fit(X)
    assert [r["k"] for r in tr.history] == [2, 4, 6]
    again = Trainer(5, epochs=5, **kw)
    again.fit(X, resume=True)
    assert again.k_span == 3
    assert [r["k"] for r in again.history] == [2, 4, 6, 6, 6]
    assert again.settings()["k_span"] == 3
    # a fresh run plans its ramp over its own epochs
    fresh = Trainer(5, epochs=5, **dict(kw, checkpoint=None))
    fresh.fit(X)
    assert [r["k"] for r in fresh.history] == [2, 3, 4, 5, 6]


# ------------------------------------------------------------------- no checkpoint
def test_train_resume_without_a_checkpoint_is_refused(tmp_path, capsys):
    code, out, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--hidden", "5",
                          "--epochs", "2", "--resume"], capsys)
    assert code == 1 and out == ""
    one_error(err, "cannot resume", "no checkpoint")
    assert list(tmp_path.iterdir()) == []


def test_dbn_resume_without_a_checkpoint_is_refused(tmp_path, capsys):
    code, out, err = run(["dbn", "digits", "-o", tmp_path / "d.npz", "--layers", "10,10",
                          "--epochs", "2", "--resume", "--no-progress"], capsys)
    assert code == 1 and out == ""
    one_error(err, "cannot resume: no checkpoint of this DBN", "d.done.npz",
              "train without --resume first")
    assert list(tmp_path.iterdir()) == []
    X = cyrbm.load_data("digits")[:100]
    with pytest.raises(ModelFileError, match="train without resume first"):
        train_dbn(X, [5, 5], checkpoint=tmp_path / "d.ckpt.npz", resume=True, epochs=1)


# ----------------------------------------------------------------------- dbn resume
DBN_ARGS = ["--layers", "10,10", "--batch", "200", "--monitor", "0", "--no-progress"]


@pytest.fixture
def finished_dbn(tmp_path, capsys):
    path = tmp_path / "d.npz"
    code, _, err = run(["dbn", "digits", "-o", path, "--epochs", "2", *DBN_ARGS], capsys)
    assert code == 0, err
    return path


@pytest.mark.parametrize("extra", [
    ["digits", "--epochs", "2"],              # the same run: nothing left to do
    ["digits", "--epochs", "4"],              # trained nothing yet printed "trained"
    ["digits:test", "--epochs", "2"],         # relabelled the DBN as trained on other data
])
def test_resuming_a_finished_dbn_is_refused(finished_dbn, capsys, extra):
    before = finished_dbn.read_bytes()
    data, *rest = extra
    code, out, err = run(["dbn", data, "-o", finished_dbn, *rest, "--resume", *DBN_ARGS],
                         capsys)
    assert code == 1 and out == ""
    one_error(err, "is finished", "its 2 layers (64-10-10) are trained",
              "nothing to resume", "list more sizes in --layers to add a layer on top")
    assert finished_dbn.read_bytes() == before
    assert DBN.load(finished_dbn).meta["training"]["data"] == "digits"


def test_a_finished_dbn_is_extended_by_a_layer_on_top(finished_dbn, capsys):
    done = DBN.load(finished_dbn)
    code, out, err = run(["dbn", "digits", "-o", finished_dbn, "--epochs", "2", "--resume",
                          *DBN_ARGS[:1], "10,10,4", *DBN_ARGS[2:]], capsys)
    assert code == 0, err
    grown = DBN.load(finished_dbn)
    assert grown.sizes == [64, 10, 10, 4]
    for a, b in zip(grown.layers, done.layers):          # the done layers are kept
        np.testing.assert_array_equal(a.W, b.W)
    # ... on the same data only
    code, out, err = run(["dbn", "digits:test", "-o", finished_dbn, "--epochs", "2",
                          "--resume", *DBN_ARGS[:1], "10,10,4,3", *DBN_ARGS[2:]], capsys)
    assert code == 1
    one_error(err, "were trained on other data")


def _unfinish(path):
    """Keep only layer 0 in the done file: layer 1 is then the layer in progress (its
    checkpoint is kept), as after a Ctrl-C during layer 1."""
    ck = str(path).replace(".npz", ".ckpt.npz")
    pf = progress_file(ck)
    dbn = DBN.load(pf)
    DBN(dbn.layers[:1], meta=dbn.meta).save(pf)
    return ck


def test_dbn_resume_refuses_settings_that_conflict_with_the_checkpoint(finished_dbn, capsys):
    ck = _unfinish(finished_dbn)
    # a finished layer's setting
    code, out, err = run(["dbn", "digits", "-o", finished_dbn, "--epochs", "2", "--resume",
                          "--lr", "0.1", *DBN_ARGS], capsys)
    assert code == 1 and out == ""
    one_error(err, "--lr 0.1 conflicts with the checkpoint", "(layer 0)",
              "made with --lr 0.05")
    # the layer in progress: its checkpoint, by the resume rule (its batch size cannot
    # change; its learning rate can: test_dbn_resume_records_a_changed_learning_rate)
    code, out, err = run(["dbn", "digits", "-o", finished_dbn, "--epochs", "2", "--resume",
                          *DBN_ARGS[:3], "200,100", *DBN_ARGS[4:]], capsys)
    assert code == 1
    one_error(err, f"cannot resume from the checkpoint '{layer_checkpoint(ck, 1)}'",
              "it was made with --batch 200, not --batch 100",
              "a resume may change only --epochs, --k, --lr")
    # a finished layer's epochs cannot change
    code, out, err = run(["dbn", "digits", "-o", finished_dbn, "--epochs", "3", "--resume",
                          *DBN_ARGS], capsys)
    assert code == 1
    one_error(err, "--epochs 3 conflicts", "made with --epochs 2")
    # another layer size, layer input or init_transpose
    for layers, extra, needle in (
            ("10,9", [], "layer 1 has 10 hidden units, not 9"),
            ("10,10", ["--layer-input", "probs"], "trained on samples of Q, not on probs"),
            ("10,10", ["--init-transpose"], "trained without init_transpose")):
        code, out, err = run(["dbn", "digits", "-o", finished_dbn, "--epochs", "2",
                              "--resume", "--layers", layers, *extra, *DBN_ARGS[2:]], capsys)
        assert code == 1 and out == "", (extra, err)
        one_error(err, needle)


def test_dbn_resume_records_a_changed_learning_rate(finished_dbn, capsys):
    """The layer in progress resumed with another --lr: allowed by the resume rule, and
    recorded in its history at the update where it changed (and in the epoch line)."""
    _unfinish(finished_dbn)
    code, out, err = run(["dbn", "digits", "-o", finished_dbn, "--epochs", "2,3", "--resume",
                          "--lr", "0.05,0.1", "--json", *DBN_ARGS], capsys)
    assert code == 0, err
    top = DBN.load(finished_dbn).layers[1].meta["training"]
    changed = [c for r in top["history"] for c in r.get("changed", [])]
    assert [(c["setting"], c["checkpoint"], c["now"], c["update"]) for c in changed] == [
        ("epochs", 2, 3, 2 * 9), ("learning_rate", 0.05, 0.1, 2 * 9)]    # 1797 rows: 9 batches
    assert top["settings"]["learning_rate"] == 0.1


def test_dbn_resume_continues_the_layer_in_progress(finished_dbn, capsys):
    """Left-out settings are the checkpoint's; the layer in progress may run to more
    epochs when they are given per layer, the finished ones keeping theirs."""
    _unfinish(finished_dbn)
    code, out, err = run(["dbn", "digits", "-o", finished_dbn, "--epochs", "2,4", "--resume",
                          "--json", *DBN_ARGS], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert [layer["epochs"] for layer in result["layers"]] == [2, 4]
    assert [layer["learning_rate"] for layer in result["layers"]] == [0.05, 0.05]
    dbn = DBN.load(finished_dbn)
    assert [r.meta["training"]["epochs_done"] for r in dbn.layers] == [2, 4]


def test_train_dbn_api_refuses_a_finished_run_and_other_data(tmp_path):
    X = cyrbm.load_data("digits")[:200]
    ck = tmp_path / "d.ckpt.npz"
    kw = dict(epochs=1, monitor_size=0, progress=False, checkpoint=ck)
    train_dbn(X, [6, 5], **kw)
    with pytest.raises(ModelMismatchError, match="is finished.*give more layers"):
        train_dbn(X, [6, 5], resume=True, **kw)
    with pytest.raises(ModelMismatchError, match="trained on other data"):
        train_dbn(X[:150], [6, 5, 4], resume=True, **kw)
    grown = train_dbn(X, [6, 5, 4], resume=True, **kw)
    assert grown.sizes == [64, 6, 5, 4]


def test_train_resume_of_a_finished_run_is_refused(tmp_path, capsys):
    model = tmp_path / "m.npz"
    train = ["train", "digits", "-o", model, "--hidden", "4", "--monitor", "0",
             "--no-progress"]
    code, _, err = run(train + ["--epochs", "2"], capsys)
    assert code == 0, err
    before = model.read_bytes()
    for epochs in ([], ["--epochs", "2"]):
        code, out, err = run(train + epochs + ["--resume"], capsys)
        assert code == 1 and out == ""
        one_error(err, "has done all 2 epochs of its run", "is written", "nothing to resume",
                  "give --epochs above 2")
    assert model.read_bytes() == before
    # stopped after the last checkpoint, before the model was written: a resume writes it
    model.unlink()
    code, _, err = run(train + ["--resume"], capsys)
    assert code == 0, err
    assert RBM.load(model).meta["training"]["epochs_done"] == 2
    code, _, err = run(train + ["--epochs", "3", "--resume"], capsys)
    assert code == 0, err
    assert RBM.load(model).meta["training"]["epochs_done"] == 3


def test_dbn_resume_within_the_first_layer(tmp_path, capsys):
    """Interrupted in layer 0 (only its checkpoint, at epoch 1 of 2): --batch 100 is
    refused as in the middle of that layer; without it the run ends as an uninterrupted one."""
    straight = tmp_path / "s.npz"
    code, _, err = run(["dbn", "digits", "-o", straight, "--epochs", "2", *DBN_ARGS], capsys)
    assert code == 0, err
    path = tmp_path / "d.npz"
    code, _, err = run(["dbn", "digits", "-o", path, "--epochs", "1", *DBN_ARGS], capsys)
    assert code == 0, err
    for name in ("d.npz", "d.done.npz", "d.layer1.ckpt.npz"):
        (tmp_path / name).unlink()
    code, out, err = run(["dbn", "digits", "-o", path, "--epochs", "2", "--resume",
                          *DBN_ARGS[:3], "100", *DBN_ARGS[4:]], capsys)
    assert code == 1 and out == ""
    one_error(err, "d.layer0.ckpt.npz", "it was made with --batch 200, not --batch 100")
    code, out, err = run(["dbn", "digits", "-o", path, "--epochs", "2", "--resume",
                          *DBN_ARGS], capsys)
    assert code == 0, err
    for a, b in zip(DBN.load(path).layers, DBN.load(straight).layers):
        np.testing.assert_array_equal(a.W, b.W)
        np.testing.assert_array_equal(a.hbias, b.hbias)


# -------------------------------------------------------- the one resume rule (issue 38)
def _digits(real=False):
    X = cyrbm.load_data("digits")
    if not real:
        return X
    Xf = X.astype(np.float64)
    sd = Xf.std(axis=0)
    return (Xf - Xf.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


#: one setting of each method, and a Gaussian RBM (the interrupted run's settings)
RESUMED_RUNS = {
    "cd-k-ramp": dict(method="cd", k="1:4"),
    "pcd": dict(method="pcd", k=2),
    "pt": dict(method="pt", temperatures="adaptive:4", chains=150, adapt_every=7),
    "amh": dict(method="amh", hop_prob=0.5, modes=4, mode_every=5),
    "ptt": dict(method="ptt", chains=120, swap_threshold=0.6),
    "gaussian": dict(method="pcd", visible="gaussian", learn_sigma=True, k="1:3",
                     learning_rate=0.01),
}


@pytest.mark.parametrize("name", list(RESUMED_RUNS))
def test_an_interrupted_run_resumed_gives_the_bits_of_an_uninterrupted_one(tmp_path, name):
    """Ctrl-C in the middle of epoch 2 of 3 (interrupted_fit), then fit(resume=True) with
    the same settings: every parameter, and the history but for its timings, as the run
    never stopped."""
    from _commands import interrupted_fit
    settings = dict(batch_size=100, monitor_size=0, seed=11, progress=False,
                    **RESUMED_RUNS[name])
    X = _digits(real=settings.get("visible") == "gaussian")
    ck = tmp_path / "ck.npz"
    interrupted_fit(Trainer(8, epochs=3, checkpoint=ck, **settings), X)
    resumed_trainer = Trainer(8, epochs=3, checkpoint=ck, **settings)
    resumed = resumed_trainer.fit(X, resume=True)
    straight_trainer = Trainer(8, epochs=3, **settings)
    straight = straight_trainer.fit(X)
    for key in ("W", "vbias", "hbias", "sigma"):
        if getattr(straight, key, None) is not None:
            np.testing.assert_array_equal(getattr(resumed, key), getattr(straight, key), key)

    def timeless(history):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in history]
    assert timeless(resumed_trainer.history) == timeless(straight_trainer.history)
    assert not any("changed" in r for r in resumed_trainer.history)
    # the power of this test: a resume that drew one stream differently would differ
    assert not np.array_equal(
        Trainer(8, epochs=3, **dict(settings, seed=12)).fit(X).W, straight.W)


def test_a_resume_with_another_learning_rate_records_the_change(tmp_path, capsys):
    """learning_rate is one of the settings a resume may change: the run continues with
    it from the checkpoint's update, and the history of that epoch says so."""
    from _commands import interrupted_fit
    from cyrbm.training.resume import CHANGEABLE
    assert "learning_rate" in CHANGEABLE
    X = _digits()
    settings = dict(batch_size=100, monitor_size=0, seed=4, progress=False, method="pcd")
    ck = tmp_path / "ck.npz"
    interrupted_fit(Trainer(8, epochs=3, checkpoint=ck, **settings), X)
    done = RBM.load(ck).meta["checkpoint"]["n_updates"]
    assert done == 18 + 1                      # 1797 rows, 18 batches an epoch
    ck_same = tmp_path / "ck_same.npz"
    ck_same.write_bytes(ck.read_bytes())
    trainer = Trainer(8, epochs=3, checkpoint=ck, learning_rate=0.02, **settings)
    changed = trainer.fit(X, resume=True)
    records = [r.get("changed") for r in trainer.history]
    assert records[0] is None and records[2] is None
    assert records[1] == [{"setting": "learning_rate", "checkpoint": 0.05, "now": 0.02,
                           "update": done, "epoch": 2, "batch": 1}]
    assert changed.meta["training"]["history"][1]["changed"] == records[1]
    assert changed.meta["training"]["settings"]["learning_rate"] == 0.02
    # the change took effect
    same = Trainer(8, epochs=3, checkpoint=ck_same, **settings).fit(X, resume=True)
    assert not np.array_equal(changed.W, same.W)
    # the command line shows it on the epoch line
    from cyrbm.cli.train import epoch_line
    assert ("learning_rate changed on resume from 0.05 to 0.02 after update 19"
            in epoch_line(trainer.history[1]))


def test_a_change_interrupted_before_its_epoch_ended_is_still_recorded(tmp_path,
                                                                        monkeypatch):
    """Resumed with another lr and stopped again in the same epoch: the change waits in
    the checkpoint and lands in that epoch's record after the next resume."""
    import os
    import signal
    from cyrbm.training import trainer as trainer_module
    X = _digits()
    settings = dict(batch_size=100, monitor_size=0, seed=4, progress=False)
    ck = tmp_path / "ck.npz"
    Trainer(8, epochs=1, checkpoint=ck, **settings).fit(X)
    order = trainer_module._epoch_order

    def ctrl_c_at_the_epoch_start(*args):          # Ctrl-C during the first batch
        os.kill(os.getpid(), signal.SIGINT)
        return order(*args)
    monkeypatch.setattr(trainer_module, "_epoch_order", ctrl_c_at_the_epoch_start)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            Trainer(8, epochs=2, checkpoint=ck, learning_rate=0.02, **settings).fit(
                X, resume=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    monkeypatch.setattr(trainer_module, "_epoch_order", order)
    info = RBM.load(ck).meta["checkpoint"]
    assert (info["epoch"], info["batch"]) == (1, 1)
    assert [c["setting"] for c in info["changes"]] == ["epochs", "learning_rate"]
    trainer = Trainer(8, epochs=2, checkpoint=ck, learning_rate=0.02, **settings)
    trainer.fit(X, resume=True)
    assert trainer.history[1]["changed"] == [
        {"setting": "epochs", "checkpoint": 1, "now": 2, "update": 18, "epoch": 2,
         "batch": 0},
        {"setting": "learning_rate", "checkpoint": 0.05, "now": 0.02, "update": 18,
         "epoch": 2, "batch": 0}]


@pytest.mark.parametrize("face", ["api", "cli"])
def test_a_resume_with_another_n_hidden_is_refused_in_one_sentence(tmp_path, capsys, face):
    """n_hidden is not one of the settings a resume may change: refused, naming it, the
    checkpoint's value and the value given, in both faces (no silent replacement)."""
    from cyrbm.training.resume import CHANGEABLE
    assert "n_hidden" not in CHANGEABLE
    model, ck = tmp_path / "m.npz", tmp_path / "m.ckpt.npz"
    code, _, err = run(["train", "digits", "-o", model, "--hidden", "10", "--epochs", "1",
                        "--monitor", "0", "--no-progress"], capsys)
    assert code == 0, err
    before = ck.read_bytes()
    if face == "api":
        with pytest.raises(ModelMismatchError) as err:
            Trainer(12, epochs=2, checkpoint=ck, monitor_size=0).fit(
                cyrbm.load_data("digits"), resume=True)
        message = str(err.value)
        assert message.count(".") >= 1 and "\n" not in message
        assert (f"cannot resume from the checkpoint '{ck}': it was made with n_hidden=10, "
                f"not n_hidden=12, and a resume may change only epochs, k, learning_rate"
                in message), message
    else:
        code, out, err = run(["train", "digits", "-o", model, "--hidden", "12", "--epochs",
                              "2", "--resume"], capsys)
        assert code == 1 and out == ""
        one_error(err, f"cannot resume from the checkpoint '{ck}': it was made with "
                       f"--hidden 10, not --hidden 12, and a resume may change only "
                       f"--epochs, --k, --lr")
    assert ck.read_bytes() == before


def test_a_model_given_with_resume_is_refused(tmp_path):
    """fit(model=..., resume=True) would continue the checkpoint's model and ignore the
    one given: refused in one sentence instead."""
    X = _digits()
    ck = tmp_path / "ck.npz"
    Trainer(8, epochs=1, checkpoint=ck, monitor_size=0).fit(X)
    with pytest.raises(ValueError, match="resume=True continues the checkpoint's own model: "
                                         "give no model with it"):
        Trainer(8, epochs=2, checkpoint=ck, monitor_size=0).fit(
            X, model=RBM.random(64, 8, seed=1), resume=True)
