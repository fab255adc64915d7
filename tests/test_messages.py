"""Messages that name the real cause, and outputs that say what they should (issue 20,
"Messages that mislead" and "Also seen").

Each test runs the case of the issue through the command line: ``cyrbm.cli.main`` with
captured output, or the ``cyrbm`` command in a subprocess where its stdout must be a
full device or a closed pipe.
"""
import json
import os
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest

from cyrbm import RBM
from cyrbm.cli import main

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_error(err, code, *needles):
    """stderr is one sentence starting 'cyrbm', holding every needle, no traceback."""
    lines = err.strip().splitlines()
    assert code != 0 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("cyrbm"), err
    for needle in needles:
        assert needle in lines[0], err
    return lines[0]


def cyrbm_command():
    exe = os.path.join(os.path.dirname(sys.executable), "cyrbm")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "cyrbm.cli"]


def child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture
def files(tmp_path):
    """Good data and a model, and files that only pretend to be .npy / .npz."""
    rng = np.random.default_rng(0)
    np.save(tmp_path / "good.npy", (rng.random((20, 6)) < 0.5).astype(np.uint8))
    RBM(rng.normal(0, 0.1, (6, 3)), np.zeros(6), np.zeros(3)).save(tmp_path / "m.npz")
    RBM(rng.normal(0, 0.1, (6, 4)), np.zeros(6), np.zeros(4)).save(tmp_path / "m4.npz")
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2
    for name in ("png.npy", "png.npz"):
        (tmp_path / name).write_bytes(png)
    for name in ("text.npy", "text.npz"):
        (tmp_path / name).write_text("0,1,0\n1,0,1\n")
    (tmp_path / "real.npy").write_bytes(pickle.dumps({"W": [1, 2]}, protocol=4))
    objects = np.array([{"a": 1}], dtype=object)
    np.save(tmp_path / "objects.npy", objects, allow_pickle=True)
    np.savez(tmp_path / "objects.npz", W=objects, vbias=np.zeros(2), hbias=np.zeros(2))
    return tmp_path


# --------------------------------------------------------- files of another kind
def test_pickle_bearing_npz_model_is_named_as_such(files, capsys):
    code, _, err = run(["info", files / "objects.npz"], capsys)
    line = one_error(err, code, "objects.npz", "pickled Python objects",
                     "does not load")
    assert "ValueError" not in line and "corrupt" not in line
    code, _, err = run(["ais", files / "objects.npz", "--runs", "2"], capsys)
    one_error(err, code, "pickled Python objects")


@pytest.mark.parametrize("name, kind", [("png.npy", "a PNG image"), ("text.npy", "text"),
                                        ("real.npy", "a Python pickle")])
def test_a_file_named_npy_that_is_not_one(files, capsys, name, kind):
    code, _, err = run(["train", files / name, "--hidden", "2", "--epochs", "1",
                        "-o", files / "out.npz", "--no-progress"], capsys)
    line = one_error(err, code, name, "is not a NumPy .npy file", f"it looks like {kind}")
    assert "pickled data" not in line
    # as a model file it is not an .npz either, and is called what it looks like
    code, _, err = run(["info", files / name], capsys)
    one_error(err, code, "not a readable .npz file", f"it looks like {kind}")
    assert not (files / "out.npz").exists()


def test_object_arrays_in_data_files_are_refused_for_safety(files, capsys):
    for name in ("objects.npy", "objects.npz"):
        code, _, err = run(["train", files / name, "--hidden", "2", "--epochs", "1",
                            "-o", files / "out.npz", "--no-progress"], capsys)
        one_error(err, code, name, "pickled Python objects", "does not load")


def test_a_file_named_npz_that_is_not_one(files, capsys):
    for name, kind in (("png.npz", "a PNG image"), ("text.npz", "text")):
        code, _, err = run(["train", files / name, "--hidden", "2", "--epochs", "1",
                            "-o", files / "out.npz", "--no-progress"], capsys)
        one_error(err, code, "not a valid .npz file", f"it looks like {kind}")
        code, _, err = run(["info", files / name], capsys)
        one_error(err, code, "not a readable .npz file", f"it looks like {kind}")
