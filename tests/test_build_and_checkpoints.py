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
from cyrbm import RBM
from cyrbm.training import trainer as training
from cyrbm.cli import main
from cyrbm.data.datasets import load_data
from cyrbm.training.trainer import Trainer

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
    ({"checkpoint_every": "3"}, "checkpoint_every"),
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
    assert done.returncode == 0 and done.stdout.strip() == "cyrbm.models.rbm", done.stderr


def test_the_readme_amh_example_shows_hops_and_modes():
    """The user guide's AMH settings hop between modes (issue 20: with 5 epochs it showed
    0 hops, 1 mode and an acceptance of None)."""
    amh = Trainer(25, method="amh", hop_prob=0.1, modes=10, radius=7, hop_weight="uniform",
                  epochs=20, learning_rate=0.05, seed=0)
    amh.fit(load_data("digits:train"))
    last = amh.history[-1]
    assert last["hops_proposed"] > 50 and 0 < last["hop_acceptance"] < 1
    assert last["modes"] >= 2 and len(amh.modes_) == last["modes"]
    guide = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "docs", "user_guide", "train.rst"), encoding="utf-8").read()
    assert 'hop_weight="uniform", epochs=20, learning_rate=0.05, seed=0)' in guide


def test_the_readme_main_job_says_what_it_prints(tmp_path, capsys):
    """The README's figures for its main job (train, ais, logz --exact) are what the
    commands print, and its sentence on the intervals holds: the exact ln Z outside
    ±σ and inside ±3σ (issue 20: the README said it lands inside 'the intervals')."""
    import json
    import re
    readme = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "README.md"), encoding="utf-8").read()
    said = re.search(r"prints ln Z = ([\d.]+), ±σ \[([\d.]+), ([\d.]+)\],\s+±3σ \[([\d.]+), "
                     r"([\d.]+)\], and the exact ([\d.]+): outside ±σ, inside ±3σ", readme)
    assert said, "the README no longer quotes its main job's figures"
    log_z, s1_lo, s1_hi, s3_lo, s3_hi, exact = (float(x) for x in said.groups())
    command = re.search(r"bin/cyrbm (train digits:train .*?) && \.venv/bin/cyrbm (ais .*?) && "
                        r"\.venv/bin/cyrbm (logz .*?)\n", readme).groups()
    model = str(tmp_path / "digits.npz")

    def run(words):
        argv = [model if w == "digits.npz" else w for w in words.split()] + ["--json"]
        assert main(argv) == 0
        return json.loads(capsys.readouterr().out)

    trained = run(command[0] + " --no-progress")
    assert (trained["n_samples"], trained["n_visible"], trained["n_hidden"]) == (1397, 64, 25)
    ais = run(command[1])
    truth = run(command[2])
    assert ais["n_data"] == 400 and ais["runs"] == 100 and ais["betas"] == 14500
    assert truth["terms"] == 2 ** 25
    got = (ais["log_Z"], *ais["log_Z_sigma_interval"], *ais["log_Z_3sigma_interval"],
           truth["log_Z"])
    np.testing.assert_allclose(got, (log_z, s1_lo, s1_hi, s3_lo, s3_hi, exact), atol=1e-4)
    assert not s1_lo <= exact <= s1_hi and s3_lo <= exact <= s3_hi
