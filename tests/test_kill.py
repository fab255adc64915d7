"""SIGKILL at random moments of `cyrbm train` leaves only complete files (issue 10).

Twenty runs of the command are killed (SIGKILL: no handler, no clean-up) at random
moments: while Python starts, while training, while a checkpoint or the model is being
written.  After each kill every file in the directory must be complete: the model and
the checkpoint load with all their arrays, and the only other files allowed are
temporaries recognisably left by the dead process (``.cyrbm-<pid>-*.tmp``), which the
next run removes.  At the end the resumed run gives the model of an uninterrupted one.
"""
import os
import re
import signal
import subprocess
import time

import numpy as np

import cyrbm
from cyrbm import RBM, _io
from cyrbm.training.checkpoints import _TRAINER_KEYS, checkpoint_info
from _commands import cyrbm_command as command

KILLS = 20
EPOCHS = 300
# a checkpoint after every epoch (not the default cadence of one per 5 s), so that kills
# land while checkpoints are being written
TRAIN = ["train", "digits", "-o", "m.npz", "--hidden", "16", "--monitor", "0", "--seed", "3",
         "--no-progress", "--threads", "1", "--checkpoint-every", "1"]
TEMP = re.compile(r"^\.cyrbm-(\d+)-.*\.tmp$")



def check_directory(d, dead_pids):
    names = sorted(os.listdir(d))
    for name in names:
        path = os.path.join(d, name)
        match = TEMP.match(name)
        if match:
            assert int(match.group(1)) in dead_pids, name        # only a killed run's
            continue
        assert name in ("m.npz", "m.ckpt.npz"), names
        arrays = _io.read_npz(path)
        model = RBM.from_arrays(arrays, path)
        training = model.meta["training"]
        if name == "m.ckpt.npz":
            assert all(key in arrays for key in _TRAINER_KEYS[:4])
            info = checkpoint_info(model.meta["checkpoint"], path)
            assert info["epoch"] == training["epochs_done"] >= 1 and info["batch"] == 0
            assert len(training["history"]) == info["epoch"]
        else:
            assert training["epochs_done"] == EPOCHS == len(training["history"])
    return names


def test_sigkill_at_random_moments_leaves_only_complete_files(tmp_path):
    rng = np.random.default_rng(20261123)
    dead = set()
    for _ in range(KILLS):
        if (tmp_path / "m.npz").exists():
            break           # the job is done (a resume would be refused: nothing to do)
        resume = ["--resume"] if (tmp_path / "m.ckpt.npz").exists() else []
        proc = subprocess.Popen(command() + TRAIN + ["--epochs", str(EPOCHS)] + resume,
                                cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        time.sleep(float(rng.uniform(0.05, 1.0)))
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode in (-signal.SIGKILL, 0), err
        dead.add(proc.pid)
        check_directory(tmp_path, dead)
    # the next run removes the stale temporaries and finishes the job (unless one did)
    if not (tmp_path / "m.npz").exists():
        resume = ["--resume"] if (tmp_path / "m.ckpt.npz").exists() else []
        done = subprocess.run(command() + TRAIN + ["--epochs", str(EPOCHS)] + resume,
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    assert check_directory(tmp_path, set()) == ["m.ckpt.npz", "m.npz"]
    straight = cyrbm.Trainer(16, epochs=EPOCHS, monitor_size=0, seed=3).fit(cyrbm.load_data("digits"))
    np.testing.assert_array_equal(RBM.load(tmp_path / "m.npz").W, straight.W)
