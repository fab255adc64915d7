"""Ctrl-C and SIGTERM end every long computation within about a second (issue 20).

Each long command is started as the installed ``cyrbm`` with settings that would run for
minutes, given time to start (2 s, and until it has used a second of CPU, so that it is
past its imports and into the computation), then sent SIGINT.  It must end within 2 s of
the signal with status 130, one sentence on stderr and no output file: the compiled
loops check for the signal between pieces of about 0.1 s of work on one thread.
SIGTERM ends a command the same way with status 143 (128 + 15).
"""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import cyrbm
from cyrbm import DBN, RBM
from cyrbm.training.greedy import train_dbn
from _commands import cyrbm_command as command

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

#: seconds from the signal to the end of the process that the test allows
LIMIT = 2.0



def cpu_seconds(pid):
    """User + system CPU time of a process, from /proc (None where there is none)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("interrupt")
    rng = np.random.default_rng(20)
    RBM(0.1 * rng.standard_normal((64, 30)), 0.1 * rng.standard_normal(64),
        0.1 * rng.standard_normal(30)).save(d / "m30.npz")
    model = RBM(0.3 * rng.standard_normal((64, 25)), 0.3 * rng.standard_normal(64),
                0.3 * rng.standard_normal(25))
    model.save(d / "model.npz")
    top = RBM(0.3 * rng.standard_normal((25, 20)), 0.3 * rng.standard_normal(25),
              0.3 * rng.standard_normal(20))
    DBN([model, top]).save(d / "dbn.npz")
    return d


def run_and_signal(args, cwd, sig=signal.SIGINT):
    """Start ``cyrbm args``, signal it once it is computing; (status, stderr, seconds
    from the signal to the end)."""
    proc = subprocess.Popen(command() + args, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.0)
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and proc.poll() is None:
            cpu = cpu_seconds(proc.pid)
            if cpu is None or cpu >= 1.0:
                break
            time.sleep(0.1)
        assert proc.poll() is None, f"cyrbm {args[0]} ended before the signal: " \
                                    f"{proc.communicate()[1]}"
        t0 = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        return proc.returncode, err, time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


LONG = {
    "exact ln Z on one thread": ["logz", "m30.npz", "--exact", "--threads", "1"],
    "sample by block Gibbs": ["sample", "model.npz", "-o", "s.png", "--n", "500",
                              "--steps", "100000000"],
    "sample by parallel tempering": ["sample", "model.npz", "-o", "s.png", "--n", "500",
                                     "--steps", "100000000", "--sampler", "pt"],
    "AIS with many runs": ["ais", "model.npz", "--runs", "20000", "--data", "digits:test",
                           "--schedule", "linear:100000"],
    "RAISE": ["evaluate", "model.npz", "--data", "digits:test", "--runs", "100",
              "--schedule", "linear:1000000"],
    "ratio AIS": ["ratio", "m30.npz", "model.npz", "--runs", "20000", "--start", "gibbs",
                  "--schedule", "linear:100000"],
    "the variational bound": ["bound", "dbn.npz", "--data", "digits:test", "--logz", "60",
                              "--samples", "20000"],
    "the Chib-style estimator": ["bound", "dbn.npz", "--data", "digits:test", "--logz", "60",
                                 "--method", "chib", "--steps", "1000000"],
    "per-vector AIS": ["bound", "dbn.npz", "--data", "digits:test", "--logz", "60",
                       "--method", "ais", "--repeats", "100", "--steps", "10000000"],
}


@pytest.mark.parametrize("what", list(LONG))
def test_sigint_ends_a_long_command_within_two_seconds(files, what):
    args = LONG[what]
    before = sorted(os.listdir(files))
    status, err, seconds = run_and_signal(args, files)
    assert status == 130, err
    assert seconds < LIMIT, f"{what}: {seconds:.2f} s from SIGINT to exit"
    assert err == f"cyrbm {args[0]}: interrupted.\n"
    assert sorted(os.listdir(files)) == before            # no output, no temporary


def test_sigterm_ends_a_command_with_status_143(files):
    before = sorted(os.listdir(files))
    status, err, seconds = run_and_signal(LONG["sample by block Gibbs"], files,
                                          signal.SIGTERM)
    assert status == 143, err
    assert seconds < LIMIT
    assert err == "cyrbm sample: terminated (SIGTERM).\n"
    assert sorted(os.listdir(files)) == before


def test_interrupted_dbn_names_only_the_files_it_kept(tmp_path):
    args = ["dbn", "digits", "-o", "d.npz", "--layers", "20,20", "--epochs", "100000",
            "--no-progress", "--threads", "1"]
    status, err, seconds = run_and_signal(args, tmp_path)
    assert status == 130 and seconds < LIMIT, err
    assert err == ("cyrbm dbn: interrupted: no layer finished; the state of layer 1 is in "
                   "'d.layer0.ckpt.npz'; continue with --resume.\n")
    assert sorted(os.listdir(tmp_path)) == ["d.layer0.ckpt.npz"]
    # a finished first layer is named as such, with the second layer's checkpoint
    done = train_dbn(cyrbm.load_data("digits"), [20], epochs=1, seed=0,
                                  checkpoint=str(tmp_path / "e.ckpt.npz"))
    assert done.n_layers == 1
    status, err, _ = run_and_signal(["dbn", "digits", "-o", "e.npz", "--layers", "20,20",
                                     "--epochs", "1,100000", "--no-progress", "--threads",
                                     "1", "--resume"], tmp_path)
    assert status == 130, err
    assert err == ("cyrbm dbn: interrupted: the finished layer 1 of 2 is in 'e.done.npz' "
                   "and the state of layer 2 is in 'e.layer1.ckpt.npz'; continue with "
                   "--resume.\n")


def test_interrupted_bound_keeps_its_vectors_and_goes_on(files, tmp_path):
    """``cyrbm bound --method ais --checkpoint`` stopped once its checkpoint holds some
    vectors names the file; the same command run again finishes from it, to the numbers
    of an uninterrupted run (the Python API's, without a checkpoint)."""
    import json
    from cyrbm import BoundEstimator
    rows = cyrbm.load_data("digits:test")[:10]
    np.save(tmp_path / "rows.npy", rows)
    args = ["bound", str(files / "dbn.npz"), "--data", "rows.npy", "--logz", "60",
            "--method", "ais", "--repeats", "2", "--steps", "30000", "--threads", "1",
            "--checkpoint", "c.npz", "--json"]
    proc = subprocess.Popen(command() + args, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60.0
        while not (tmp_path / "c.npz").exists() and time.monotonic() < deadline \
                and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, f"it ended first: {proc.communicate()[1]}"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert err == ("cyrbm bound: interrupted: the finished vectors are in 'c.npz'; run the "
                   "same command again to go on.\n")
    done = subprocess.run(command() + args, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    want = BoundEstimator(DBN.load(files / "dbn.npz"), log_Z=60.0, seed=0).ais_per_vector(
        rows, 2, schedule="linear:30000")
    assert got["mean"] == want.mean


def test_pieces_cover_the_range_in_whole_steps(monkeypatch):
    """pieces() covers [start, stop) once, in order, each piece but the last a whole
    number of ``step`` items (the Chib-style estimator's groups per thread), growing
    while the work is fast and halving (never below one step) while it is slow."""
    from cyrbm import _threads
    clock = iter(np.arange(0.0, 1000.0, 0.3))         # every piece "takes" 0.3 s: halving
    monkeypatch.setattr(_threads.time, "perf_counter", lambda: next(clock))
    got = list(_threads.pieces(5, 100, first=2, most=64, step=8))
    assert got[0][0] == 5 and got[-1][1] == 100
    assert all(a[1] == b[0] for a, b in zip(got, got[1:]))
    assert all((b - a) % 8 == 0 for a, b in got[:-1]) and all(b - a >= 8 for a, b in got[:-1])
    fast = iter(np.arange(0.0, 1000.0, 0.001))        # fast pieces grow up to ``most``
    monkeypatch.setattr(_threads.time, "perf_counter", lambda: next(fast))
    sizes = [b - a for a, b in _threads.pieces(0, 500, first=2, most=60, step=8)]
    assert sizes[0] == 8 and max(sizes) == 56 and sum(sizes) == 500
    assert all(s % 8 == 0 for s in sizes[:-1])
