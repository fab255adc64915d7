"""The measuring commands ``cyrbm ais``, ``ratio`` and ``logz`` (cyrbm/cli/measure.py)
under bad input and faults (issue 10): one sentence on stderr for every user error,
sizes that cannot fit refused, Ctrl-C during an exact sum answered promptly.
"""
import json
import signal
import subprocess
import time

import numpy as np
import pytest

import cyrbm
from cyrbm.cli import main
from _commands import cyrbm_command, one_error_line, run, small_model


def default_sigint():
    """Child processes start with Python's usual Ctrl-C even under `pytest &`."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 64 x 25 model trained as in the issue's repro (row 1)."""
    d = tmp_path_factory.mktemp("trained")
    code = main(["train", "digits:train", "-o", str(d / "m.npz"), "--hidden", "25",
                 "--epochs", "30", "--lr", "0.1", "--json"])
    assert code == 0
    return d / "m.npz"


def test_ais_text_output_with_an_unbounded_interval(trained, capsys):
    code, out, err = run(["ais", trained, "--runs", "2", "--schedule", "linear:2",
                          "--data", "digits:test"], capsys)
    assert code == 0, err
    assert "ln(Z +- 3 sigma) [-inf," in out          # ln(Z - 3 sigma) = -inf, said so
    assert "+inf]" in out                            # the log-probability's upper end
    code, out, err = run(["ratio", trained, trained, "--runs", "2", "--schedule", "linear:2"],
                         capsys)
    assert code == 0 and "ln(Z_B / Z_A)" in out, err


def test_ctrl_c_during_an_exact_sum_is_answered_within_a_second(tmp_path):
    small_model(tmp_path / "big.npz", 64, 30)        # 2^30 terms: far longer than 2 s
    proc = subprocess.Popen(cyrbm_command() + ["logz", "big.npz", "--exact"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    try:
        time.sleep(2.0)
        assert proc.poll() is None, proc.communicate()
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        waited = time.perf_counter() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert waited < 1.0, f"answered Ctrl-C after {waited:.2f} s"
    one_error_line(err, "interrupted")


@pytest.mark.parametrize("args,needle", [
    (["--runs", "1000000000"], "use fewer runs"),
    (["--schedule", "linear:100000000000"], "use fewer betas"),
])
def test_ais_sizes_that_cannot_fit_in_memory(tmp_path, capsys, args, needle):
    small_model(tmp_path / "m.npz")
    code, _, err = run(["ais", tmp_path / "m.npz"] + args, capsys)
    assert code == 1
    one_error_line(err, needle)


def test_logz_without_exact_gets_its_own_hint(tmp_path, capsys):
    small_model(tmp_path / "m.npz")
    code, _, err = run(["logz", tmp_path / "m.npz"], capsys)
    assert code == 1
    one_error_line(err, "add --exact")


def test_schedule_errors_show_plain_numbers_and_no_warnings(tmp_path, capsys):
    small_model(tmp_path / "m.npz")
    sched = tmp_path / "betas.txt"
    sched.write_text("0\n0.5\n0.4\n1\n")
    code, _, err = run(["ais", tmp_path / "m.npz", "--schedule", sched], capsys)
    line = one_error_line(err, "strictly increasing")
    assert code == 1 and "(0.4)" in line and "np." not in line
    sched.write_text("0\n0.5\n0.9\n")
    code, _, err = run(["ais", tmp_path / "m.npz", "--schedule", sched], capsys)
    assert code == 1 and "not 0.9." in one_error_line(err) and "np." not in err
    sched.write_text("# nothing here\n")
    with _no_warnings():
        code, _, err = run(["ais", tmp_path / "m.npz", "--schedule", sched], capsys)
    assert code == 1
    one_error_line(err, "holds no betas")


class _no_warnings:
    def __enter__(self):
        import warnings
        self._cm = warnings.catch_warnings(record=True)
        self.caught = self._cm.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        assert not self.caught, [str(w.message) for w in self.caught]


def test_ratio_option_errors_name_the_option(tmp_path, capsys):
    small_model(tmp_path / "m.npz")
    m = tmp_path / "m.npz"
    code, _, err = run(["ratio", m, m, "--runs", "4", "--chains", "7", "--start", "gibbs"],
                       capsys)
    assert code == 1 and "--chains must be between 1 and the number of runs (4), not 7" \
        in one_error_line(err)
    code, _, err = run(["ratio", m, m, "--start", "perfect"], capsys)
    assert code == 1 and "--start must be 'auto', 'exact' or 'gibbs', not 'perfect'" \
        in one_error_line(err)


def test_cli_ais_with_a_schedule_file(tmp_path, capsys):
    model = cyrbm.RBM(np.random.default_rng(0).normal(0, 0.1, (64, 6)), np.zeros(64), np.zeros(6))
    model.save(tmp_path / "m.npz")
    sched = tmp_path / "betas.txt"
    sched.write_text("# a schedule of my own\n" + "\n".join(str(b) for b in np.linspace(0, 1, 37)))
    code, out, err = run(["ais", str(tmp_path / "m.npz"), "--schedule", str(sched), "--runs",
                              "4", "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["betas"] == 37 and result["runs"] == 4 and result["schedule"] == str(sched)
    code, out, err = run(["logz", str(tmp_path / "m.npz"), "--exact", "--json"], capsys)
    lo, hi = result["log_Z_3sigma_interval"]
    assert lo <= json.loads(out)["log_Z"] <= hi
    sched.write_text("0\n0.5\n0.4\n1\n")
    code, out, err = run(["ais", str(tmp_path / "m.npz"), "--schedule", str(sched)], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "strictly increasing" in lines[0], err
    sched.write_text("0\nhalf\n1\n")
    code, out, err = run(["ais", str(tmp_path / "m.npz"), "--schedule", str(sched)], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "not a list of numbers" in lines[0], err
