"""The checkpoint cadence (by time, bounded by epochs, always at the end and on Ctrl-C)
and the one-sentence refusal of an unbuilt source tree (issue 20)."""
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

import cyrbm
from cyrbm import RBM, training
from cyrbm.cli import main
from cyrbm.datasets import load_data
from cyrbm.training import Trainer

SETTINGS = dict(method="pcd", batch_size=50, seed=4, monitor_size=0, threads=1)


class Clock:
    """A clock that moves only when told (``tick`` seconds after each epoch)."""

    def __init__(self, tick):
        self.t = 1000.0
        self.tick = tick

    def __call__(self):
        return self.t

    def epoch_done(self, record):
        self.t += self.tick


@pytest.fixture
def saves(monkeypatch):
    """The epochs (and batches) at which checkpoints are written."""
    written = []
    original = Trainer._save_checkpoint

    def save(self, state, fingerprint):
        written.append((state["epoch"], state["batch"]))
        original(self, state, fingerprint)

    monkeypatch.setattr(Trainer, "_save_checkpoint", save)
    return written


def fit_with_clock(monkeypatch, tmp_path, tick, epochs=8, **kw):
    clock = Clock(tick)
    monkeypatch.setattr(training, "_now", clock)
    trainer = Trainer(6, epochs=epochs, checkpoint=tmp_path / "ck.npz",
                      callback=clock.epoch_done, **SETTINGS, **kw)
    return trainer.fit(load_data("digits:test"))


@pytest.mark.parametrize("tick, kw, expected", [
    (2.0, {}, [3, 6, 8]),                                  # 5 s default: every 3rd epoch
    (2.0, {"checkpoint_seconds": 3}, [2, 4, 6, 8]),
    (0.0, {}, [8]),                                        # a fast run: at the end only
    (0.0, {"checkpoint_every": 3}, [3, 6, 8]),             # the epoch bound
    (2.0, {"checkpoint_every": 2}, [2, 4, 6, 8]),          # the bound before the time
    (2.0, {"checkpoint_every": 5}, [3, 6, 8]),             # the time before the bound
    (0.0, {"checkpoint_seconds": 0}, list(range(1, 9))),   # every epoch
])
def test_checkpoints_by_time_bounded_by_epochs_and_always_at_the_end(
        monkeypatch, tmp_path, saves, tick, kw, expected):
    fit_with_clock(monkeypatch, tmp_path, tick, **kw)
    assert saves == [(e, 0) for e in expected]
    assert RBM.load(tmp_path / "ck.npz").meta["checkpoint"]["epoch"] == 8


def test_ctrl_c_checkpoints_even_when_none_is_due(monkeypatch, tmp_path, saves):
    X = load_data("digits:test")
    clock = Clock(0.0)                       # no checkpoint is ever due by time
    monkeypatch.setattr(training, "_now", clock)

    def interrupt(record):
        if record["epoch"] == 2:
            os.kill(os.getpid(), signal.SIGINT)

    ck = tmp_path / "ck.npz"
    trainer = Trainer(6, epochs=5, checkpoint=ck, callback=interrupt, **SETTINGS)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            trainer.fit(X)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert saves == [(2, 1)] and trainer.saved_on_interrupt
    resumed = Trainer(6, epochs=5, checkpoint=ck, **SETTINGS).fit(X, resume=True)
    straight = Trainer(6, epochs=5, **SETTINGS).fit(X)
    np.testing.assert_array_equal(resumed.W, straight.W)


def test_resume_from_a_timed_checkpoint_after_a_crash_is_bit_identical(monkeypatch, tmp_path, saves):
    X = load_data("digits:test")
    clock = Clock(2.0)

    def crash_in_epoch_5(record):
        clock.epoch_done(record)
        if record["epoch"] == 5:
            raise RuntimeError("power cut")

    monkeypatch.setattr(training, "_now", clock)
    ck = tmp_path / "ck.npz"
    with pytest.raises(RuntimeError):
        Trainer(6, epochs=8, checkpoint=ck, callback=crash_in_epoch_5, **SETTINGS).fit(X)
    assert saves == [(3, 0)]                 # epochs 4 and 5 are lost, as the cadence allows
    resumed = Trainer(6, epochs=8, checkpoint=ck, callback=clock.epoch_done,
                      **SETTINGS).fit(X, resume=True)
    assert saves == [(3, 0), (6, 0), (8, 0)]
    straight = Trainer(6, epochs=8, **SETTINGS).fit(X)
    np.testing.assert_array_equal(resumed.W, straight.W)
    np.testing.assert_array_equal(resumed.vbias, straight.vbias)


@pytest.mark.parametrize("kw, needle", [
    ({"checkpoint_every": 0}, "checkpoint_every"),
    ({"checkpoint_every": 1.5}, "checkpoint_every"),
    ({"checkpoint_every": True}, "checkpoint_every"),
    ({"checkpoint_seconds": -1}, "checkpoint_seconds"),
    ({"checkpoint_seconds": float("nan")}, "checkpoint_seconds"),
    ({"checkpoint_seconds": "5"}, "checkpoint_seconds"),
])
def test_bad_cadence_is_refused(kw, needle):
    with pytest.raises(ValueError, match=needle):
        Trainer(5, **kw)


def test_command_line_cadence(monkeypatch, tmp_path, capsys, saves):
    monkeypatch.setattr(training, "_now", Clock(0.0))
    base = ["train", "digits:test", "-o", str(tmp_path / "m.npz"), "--hidden", "5",
            "--epochs", "4", "--monitor", "0", "--no-progress"]
    assert main(base) == 0 and saves == [(4, 0)]
    saves.clear()
    assert main(base + ["--checkpoint-seconds", "0"]) == 0 and saves == [(e, 0) for e in range(1, 5)]
    saves.clear()
    assert main(base + ["--checkpoint-every", "2"]) == 0 and saves == [(2, 0), (4, 0)]
    capsys.readouterr()
    for bad in ("-1", "inf", "soon"):
        assert main(base + ["--checkpoint-seconds", bad]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--checkpoint-seconds" in err[0] and "Traceback" not in err[0]


def test_an_unbuilt_source_tree_is_refused_in_one_sentence(tmp_path):
    """`import cyrbm` from a source tree without compiled modules names the cause and
    the remedy, instead of failing later on 'No module named cyrbm._random'."""
    package = os.path.dirname(os.path.abspath(cyrbm.__file__))
    shutil.copytree(package, tmp_path / "cyrbm",
                    ignore=lambda d, names: [n for n in names
                                             if n.endswith((".so", ".pyd")) or n == "__pycache__"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", "import cyrbm; cyrbm.RBM"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: cyrbm at ") and str(tmp_path) in last, done.stderr
    assert "not built" in last and "pip install ." in last and "build_ext --inplace" in last
    assert "_random" in last and "No module named" not in done.stderr
    # with the compiled modules beside it, the same copy imports
    for name in os.listdir(package):
        if name.endswith((".so", ".pyd")):
            shutil.copy2(os.path.join(package, name), tmp_path / "cyrbm" / name)
    done = subprocess.run([sys.executable, "-c", "import cyrbm; print(cyrbm.RBM.__module__)"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "cyrbm.models", done.stderr
