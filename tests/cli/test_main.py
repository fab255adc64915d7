"""The command line under bad input and faults (issue 10, "Hardening").

Each test reproduces one row of the issue through the command line (``cyrbm.cli.main``
with captured output, or the installed ``cyrbm`` command in a subprocess): one
sentence on stderr and a non-zero exit for every user error, no user file replaced
unless it is the output named for that purpose, Ctrl-C answered promptly.
"""
import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

import cyrbm
from cyrbm import RBM
from _commands import one_error_line, run, small_model

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))    # tests/
ROOT = os.path.dirname(HERE)


# ------------------------------------------------------------------------ row 1


# --------------------------------------------------------------------- rows 2-4


# ------------------------------------------------------------------------ row 5
@pytest.mark.parametrize("command", [["ais"], ["logz", "--exact"], ["info"], ["ratio", "OTHER"]])
def test_an_npy_where_a_model_belongs(tmp_path, capsys, command):
    npy = tmp_path / "train.npy"
    np.save(npy, cyrbm.load_data("digits")[:20])
    args = [command[0], npy] + [str(npy) if a == "OTHER" else a for a in command[1:]]
    code, _, err = run(args, capsys)
    assert code == 1
    one_error_line(err, "an .npy file")


# ------------------------------------------------------------------------ row 6


def test_exact_sum_in_pieces_equals_one_call():
    from cyrbm import _exact
    from cyrbm.estimators.annealing import exact_log_partition
    rng = np.random.default_rng(3)
    for D, M in ((30, 17), (14, 40), (64, 12)):
        m = RBM(rng.normal(0, 0.5, (D, M)), rng.normal(0, 0.5, D), rng.normal(0, 0.5, M))
        one = _exact.exact_log_partition(m.W, m.vbias, m.hbias, 1)
        assert exact_log_partition(m, threads=1) == one
        assert exact_log_partition(m, threads=2) == one


# ------------------------------------------------------------------------ row 7
def test_default_threads_follow_the_size_of_the_work(tmp_path, capsys, monkeypatch):
    code, out, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--hidden", "25",
                          "--epochs", "1", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["threads"] == 1             # 100 x 64 x 25: one thread
    from cyrbm import _threads
    cores = cyrbm.config()["threads"]
    monkeypatch.setattr(_threads, "free_cores", lambda n: n)          # an idle machine
    assert _threads.auto_threads(None, 100 * 784 * 500) == min(2, cores)
    monkeypatch.setattr(_threads, "free_cores", lambda n: 1)          # a busy one
    assert _threads.auto_threads(None, 100 * 784 * 500) == 1
    assert _threads.auto_threads(3, 10) == (3 if cyrbm.config()["openmp"] else 1)


def test_free_cores_counts_other_runnable_tasks():
    from cyrbm._threads import free_cores
    assert 1 <= free_cores(2) <= 2 and free_cores(1) == 1


def test_openmp_waits_do_not_spin_unless_the_user_says_so():
    code = ("import os, cyrbm; print(os.environ.get('GOMP_SPINCOUNT'), "
            "os.environ.get('OMP_WAIT_POLICY'))")
    env = {k: v for k, v in os.environ.items()
           if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "KMP_BLOCKTIME")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, cwd=HERE).stdout.split()
    assert out == ["10000", "None"]
    env["OMP_WAIT_POLICY"] = "active"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, cwd=HERE).stdout.split()
    assert out == ["None", "active"]


# ------------------------------------------------------------------------ row 8


# ------------------------------------------------------------------- rows 9, 10


# ----------------------------------------------------------------------- row 11


# ----------------------------------------------------------------------- row 12


# ----------------------------------------------------------------------- row 13
def crafted(path, meta, trainer=False):
    rng = np.random.default_rng(0)
    arrays = dict(W=rng.normal(0, 0.1, (64, 5)).astype(np.float32),
                  vbias=np.zeros(64, np.float32), hbias=np.zeros(5, np.float32),
                  meta=np.array(json.dumps(meta)))
    if trainer:
        arrays.update(trainer_vel_W=np.zeros((64, 5), np.float32),
                      trainer_vel_vbias=np.zeros(64, np.float32),
                      trainer_vel_hbias=np.zeros(5, np.float32),
                      trainer_streams=np.zeros((100, 4), np.uint64))
    np.savez(path, **arrays)


@pytest.mark.parametrize("meta", [
    {"training": []},
    {"training": {"settings": "cd"}},
    {"training": {"history": [1, 2]}},
    {"training": {"epochs_done": "many"}},
    {"checkpoint": 3},
])
@pytest.mark.parametrize("command", [["info"], ["ais", "--runs", "2", "--schedule", "linear:3"]])
def test_crafted_model_meta_is_one_sentence(tmp_path, capsys, meta, command):
    crafted(tmp_path / "m.npz", meta)
    code, _, err = run([command[0], tmp_path / "m.npz"] + command[1:], capsys)
    assert code == 1
    one_error_line(err, "meta entry")


@pytest.mark.parametrize("info", [{}, {"epoch": "1", "batch": 0, "n_updates": 0},
                                  {"epoch": 1, "batch": 0}, {"epoch": -1, "batch": 0, "n_updates": 0}])
def test_crafted_checkpoint_state_is_one_sentence(tmp_path, capsys, info):
    X = cyrbm.load_data("digits")
    from cyrbm.training.checkpoints import _fingerprint
    info = dict(info, data_fingerprint=_fingerprint(X))
    crafted(tmp_path / "m.ckpt.npz", {"training": {"settings": {"n_hidden": 5}},
                                      "checkpoint": info}, trainer=True)
    code, _, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--resume", "--epochs", "2"],
                       capsys)
    assert code == 1
    one_error_line(err, "trainer state")


# ----------------------------------------------------------------------- row 14
def test_ctrl_c_while_importing_is_one_line(tmp_path):
    """The console script as installed, with Ctrl-C arriving while NumPy loads."""
    script = os.path.join(os.path.dirname(sys.executable), "cyrbm")
    if not os.path.exists(script):
        pytest.skip("the cyrbm console script is not installed in this environment")
    code = (
        "import builtins, runpy, sys\n"
        "real = builtins.__import__\n"
        "def hook(name, *a, **k):\n"
        "    if name == 'numpy' or name.startswith('numpy.'):\n"
        "        raise KeyboardInterrupt\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = hook\n"
        f"sys.argv = ['cyrbm', 'train', 'digits', '-o', 'm.npz']\n"
        f"runpy.run_path({script!r}, run_name='__main__')\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 130, result.stderr
    one_error_line(result.stderr, "interrupted")


@pytest.mark.parametrize("command", [["ais", "--runs", "4", "--schedule", "linear:10"],
                                     ["logz", "--exact"]])
def test_threads_zero_means_automatic_everywhere(tmp_path, capsys, command):
    small_model(tmp_path / "m.npz")
    code, out, err = run([command[0], tmp_path / "m.npz"] + command[1:] + ["--threads", "0",
                                                                         "--json"], capsys)
    assert code == 0 and err == "", err
    code, out, err = run(["train", "digits", "-o", tmp_path / "t.npz", "--hidden", "5",
                          "--epochs", "1", "--threads", "0", "--json"], capsys)
    assert code == 0, err
    code, out, err = run([command[0], tmp_path / "m.npz"] + command[1:] + ["--threads", "-1"],
                         capsys)
    assert code == 1 and "--threads must be at least 0" in one_error_line(err)


def test_too_many_threads_are_capped_with_a_note(tmp_path, capsys):
    small_model(tmp_path / "m.npz")
    code, out, err = run(["logz", tmp_path / "m.npz", "--exact", "--threads", "1000", "--json"],
                         capsys)
    assert code == 0
    note = one_error_line(err, "--threads 1000 is more than the")
    assert "note" in note and json.loads(out)["threads"] <= os.cpu_count()


def test_cli_hints_name_options_not_python_calls(tmp_path, capsys):
    grey = tmp_path / "grey.npy"
    np.save(grey, np.array([[0.0, 0.3], [1.0, 0.2]]))
    code, _, err = run(["train", grey, "-o", tmp_path / "m.npz"], capsys)
    line = one_error_line(err, "--binarize threshold")
    assert code == 1 and "binarize=" not in line
    small_model(tmp_path / "big.npz", 64, 40)
    code, _, err = run(["logz", tmp_path / "big.npz", "--exact"], capsys)
    line = one_error_line(err, "'cyrbm ais'")
    assert code == 1 and "Annealer" not in line
    code, _, err = run(["ratio", tmp_path / "big.npz", tmp_path / "big.npz", "--start", "exact"],
                       capsys)
    line = one_error_line(err, "--start gibbs")
    assert code == 1 and "start='gibbs'" not in line
    code, _, err = run(["ais", tmp_path / "big.npz", "--data", grey, "--runs", "2",
                        "--schedule", "linear:3"], capsys)
    line = one_error_line(err, "take 0/1 data only")
    assert code == 1 and "binarize=" not in line and "--binarize" not in line
    # ... while the Python API keeps its own words
    with pytest.raises(cyrbm.DataError, match="binarize='threshold'"):
        cyrbm.load_data(str(grey))


def test_no_progress_prints_no_epoch_lines(tmp_path, capsys):
    code, out, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--hidden", "5",
                          "--epochs", "3", "--no-progress"], capsys)
    assert code == 0 and err == "" and "wrote" in out
    code, out, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--hidden", "5",
                          "--epochs", "3"], capsys)
    assert code == 0 and err.count("epoch ") == 3


def test_stale_temporaries_of_killed_runs_are_removed(tmp_path, capsys):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".cyrbm-{dead.pid}-abc123.npz.tmp"
    live = tmp_path / f".cyrbm-{os.getpid()}-def456.npz.tmp"
    stale.write_bytes(b"PK half a file")
    live.write_bytes(b"PK being written")
    code, _, err = run(["train", "digits", "-o", tmp_path / "m.npz", "--hidden", "5",
                        "--epochs", "1"], capsys)
    assert code == 0, err
    assert not stale.exists() and live.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, "m.ckpt.npz", "m.npz"]


def test_readme_python_snippet_runs(tmp_path, monkeypatch):
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no Python snippet"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})


def test_trainer_leaves_an_ignored_sigint_ignored():
    X = cyrbm.load_data("digits")
    seen = []
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        cyrbm.Trainer(5, epochs=2, monitor_size=0,
                      callback=lambda r: seen.append(signal.getsignal(signal.SIGINT))).fit(X)
        assert seen == [signal.SIG_IGN, signal.SIG_IGN]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_test_passes_when_sigint_starts_ignored():
    """`pytest &` starts with SIGINT ignored; the Ctrl-C test must not depend on it."""
    target = os.path.join(HERE, "test_training.py") + "::test_ctrl_c_saves_a_checkpoint_and_resume_matches"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", target],
                            cwd=HERE, capture_output=True, text=True, timeout=300,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert result.returncode == 0, result.stdout[-2000:]


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
    code, out, err = run([a.format(d=tmp_path) for a in args], capsys)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("cyrbm "), err


def test_console_script_is_installed():
    exe = os.path.join(os.path.dirname(sys.executable), "cyrbm")
    if not os.path.exists(exe):
        pytest.skip("the cyrbm console script is not installed in this environment")
    result = subprocess.run([exe, "info", "--json"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and json.loads(result.stdout)["version"] == cyrbm.__version__
    result = subprocess.run([exe, "info", "/nonexistent.npz"], capture_output=True, text=True)
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
