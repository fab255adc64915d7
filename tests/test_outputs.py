"""Outputs that never destroy inputs (issue 20): every output path is checked, before any
work, by one function (``cyrbm._io.check_outputs``) that every writing command calls.

The cases of the issue run through the command line (``cyrbm.cli.main``): each ends with
a non-zero status and one sentence on stderr, and its input files keep their bytes.  A
property-based test then throws generated output paths (the inputs, links to them, a
FIFO, a device node, a socket, a directory, missing and unwritable places, wrong endings,
odd names) at every command that writes, and checks that no input changes and no special
file is replaced.  Device nodes are made in the test's own directory (never /dev).
"""
import ast
import hashlib
import itertools
import json
import os
import re
import socket
import stat
import subprocess
import sys

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings, strategies as st  # noqa: E402

from cyrbm import DBN, RBM, _io  # noqa: E402
from cyrbm.cli import main  # noqa: E402
from cyrbm.errors import OutputError  # noqa: E402
from _commands import run

#: generated paths per command output, on top of one example of each kind of path
EXAMPLES = 6 if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci" else 200


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def one_error_line(err, *needles):
    """stderr is one sentence starting 'cyrbm', naming each of ``needles``."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cyrbm") and "Traceback" not in err, err
    assert lines[0].endswith("."), err
    for needle in needles:
        assert str(needle) in lines[0], err
    return lines[0]


def make_files(d):
    """Tiny inputs: 9 x 4 RBM, 9-4-3 DBN, 30 rows of 9 bits, a schedule of 5 betas."""
    rng = np.random.default_rng(0)
    files = {"model": d / "model.npz", "dbn": d / "dbn.npz", "data": d / "good.npy",
             "test": d / "test.npy", "schedule": d / "sched.txt"}
    RBM(rng.normal(0, 0.1, (9, 4)), np.zeros(9), np.zeros(4)).save(files["model"])
    DBN([RBM(rng.normal(0, 0.1, (9, 4)), np.zeros(9), np.zeros(4)),
         RBM(rng.normal(0, 0.1, (4, 3)), np.zeros(4), np.zeros(3))]).save(files["dbn"])
    np.save(files["data"], (rng.random((30, 9)) < 0.5).astype(np.uint8))
    np.save(files["test"], (rng.random((6, 9)) < 0.5).astype(np.uint8))
    files["schedule"].write_text("0\n0.25\n0.5\n0.75\n1\n")
    files["config"] = d / "sweep.json"
    files["config"].write_text(json.dumps({
        "data": str(files["data"]), "test": str(files["test"]), "grid": {"n_hidden": [3]},
        "fixed": {"epochs": 1, "batch_size": 10, "monitor_size": 0},
        "ais": {"runs": 2, "schedule": "linear:5"}}))
    return files


def make_char_device(path):
    """A character device node with /dev/null's numbers, or None where one cannot be
    made (not root, or no CAP_MKNOD)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        return None
    return path


@pytest.fixture
def files(tmp_path):
    return make_files(tmp_path)


@pytest.fixture
def unchanged(files):
    """Asserts, after the test, that no input file changed."""
    before = {k: digest(p) for k, p in files.items()}
    yield files
    assert {k: digest(p) for k, p in files.items()} == before


# ------------------------------------------------------- the cases of the issue
def test_sample_onto_its_own_model_is_refused(unchanged, capsys):
    m = unchanged["model"]
    code, _, err = run(["sample", m, "-o", m, "--n", "2", "--steps", "2"], capsys)
    assert code == 1
    one_error_line(err, "-o", str(m), "the model file MODEL")


def test_the_installed_command_refuses_too(unchanged):
    """The same through the `cyrbm` command in a process of its own."""
    exe = os.path.join(os.path.dirname(sys.executable), "cyrbm")
    command = [exe] if os.path.exists(exe) else [sys.executable, "-m", "cyrbm.cli"]
    m = unchanged["model"]
    p = subprocess.run(command + ["sample", str(m), "-o", str(m)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 1 and p.stdout == ""
    one_error_line(p.stderr, "the model file MODEL")


def test_filters_onto_the_training_data_is_refused(unchanged, capsys):
    # not an input of `filters`, but not a PNG either: the ending says so
    code, _, err = run(["filters", unchanged["model"], "-o", unchanged["data"]], capsys)
    assert code == 1
    one_error_line(err, "-o", str(unchanged["data"]), "must end in .png")


@pytest.mark.parametrize("option,target", [("--save-schedule", "model"),
                                           ("--save-schedule", "test"),
                                           ("--plot", "test"), ("--plot", "model"),
                                           ("--save-schedule", "schedule")])
def test_evaluate_outputs_onto_its_inputs_are_refused(unchanged, capsys, option, target):
    f = unchanged
    code, _, err = run(["evaluate", f["model"], "--data", f["test"], "--runs", "2",
                        "--chains", "1", "--schedule", f["schedule"], option, f[target]],
                       capsys)
    assert code == 1
    line = one_error_line(err, option, str(f[target]))
    assert "which this command reads" in line


def test_bound_plot_onto_the_dbn_is_refused(unchanged, capsys):
    f = unchanged
    code, _, err = run(["bound", f["dbn"], "--data", f["test"], "--method", "chib", "--trace",
                        "--logz", "58", "--plot", f["dbn"]], capsys)
    assert code == 1
    one_error_line(err, "--plot", str(f["dbn"]), "the DBN file DBN")


def test_train_onto_a_fifo_is_refused(unchanged, tmp_path, capsys):
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    inode = os.stat(fifo).st_ino
    code, _, err = run(["train", unchanged["data"], "-o", fifo, "--hidden", "3", "--epochs", "1"],
                       capsys)
    assert code == 1
    one_error_line(err, "-o", str(fifo), "FIFO")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.stat(fifo).st_ino == inode
    assert not (tmp_path / "pipe.ckpt.npz").exists()          # nothing was trained


def test_train_onto_a_device_is_refused(unchanged, tmp_path, capsys):
    dev = make_char_device(tmp_path / "full.npz")
    if dev is None:
        pytest.skip("this process may not make device nodes")
    inode = os.stat(dev).st_ino
    code, _, err = run(["train", unchanged["data"], "-o", dev, "--hidden", "3", "--epochs", "1"],
                       capsys)
    assert code == 1
    one_error_line(err, "-o", str(dev), "character device")
    st_ = os.stat(dev)
    assert stat.S_ISCHR(st_.st_mode) and st_.st_ino == inode and st_.st_rdev == os.makedev(1, 3)
    # a checkpoint named after a device is refused in the same way
    code, _, err = run(["train", unchanged["data"], "-o", tmp_path / "m.npz", "--checkpoint",
                        dev, "--hidden", "3", "--epochs", "1"], capsys)
    assert code == 1
    one_error_line(err, "--checkpoint", "character device")
    assert stat.S_ISCHR(os.stat(dev).st_mode) and not (tmp_path / "m.npz").exists()


def test_links_to_an_input_are_the_input(unchanged, tmp_path, capsys):
    m = unchanged["model"]
    os.symlink(m, tmp_path / "soft.png")
    os.link(m, tmp_path / "hard.png")
    for link in ("soft.png", "hard.png"):
        code, _, err = run(["sample", m, "-o", tmp_path / link, "--n", "2", "--steps", "2"],
                           capsys)
        assert code == 1
        one_error_line(err, link, "the model file MODEL")
    assert os.path.islink(tmp_path / "soft.png")


def test_outputs_of_one_command_never_collide(unchanged, tmp_path, capsys):
    data = unchanged["data"]
    code, _, err = run(["train", data, "-o", tmp_path / "m.npz", "--checkpoint",
                        tmp_path / "m.npz", "--epochs", "1"], capsys)
    assert code == 1
    one_error_line(err, "-o", "--checkpoint", "are the same file")
    # dbn: -o is the file of finished layers named after --checkpoint
    code, _, err = run(["dbn", data, "-o", tmp_path / "x.done.npz", "--checkpoint",
                        tmp_path / "x.npz", "--layers", "4,3", "--epochs", "1"], capsys)
    assert code == 1
    one_error_line(err, "-o", "finished layers", "are the same file")
    # evaluate: the schedule and the figure are one file (through a symlink)
    os.symlink(tmp_path / "fig.png", tmp_path / "s.txt")
    f = unchanged
    code, _, err = run(["evaluate", f["model"], "--data", f["test"], "--runs", "2",
                        "--save-schedule", tmp_path / "s.txt", "--plot", tmp_path / "fig.png"],
                       capsys)
    assert code == 1
    one_error_line(err, "--save-schedule", "--plot", "are the same file")
    assert list(tmp_path.glob("x.*")) == [] and not (tmp_path / "m.npz").exists()


def test_a_derived_dbn_file_onto_the_data_is_refused(tmp_path, capsys):
    data = tmp_path / "x.layer1.ckpt.npz"           # the data, named like layer 1's checkpoint
    np.savez(data, x=(np.random.default_rng(1).random((20, 9)) < 0.5).astype(np.uint8))
    before = digest(data)
    code, _, err = run(["dbn", data, "-o", tmp_path / "x.npz", "--checkpoint", tmp_path / "x.npz",
                        "--layers", "4,3", "--epochs", "1"], capsys)
    assert code == 1
    one_error_line(err, "layer 1's checkpoint", "the training data DATA")
    assert digest(data) == before and not (tmp_path / "x.layer0.ckpt.npz").exists()


@pytest.mark.parametrize("argv,needle", [
    (["sample", "{model}", "-o", "{d}/s.npz"], "must end in .png"),
    (["filters", "{model}", "-o", "{d}/f"], "must end in .png"),
    (["train", "{data}", "-o", "{d}/m.png", "--epochs", "1"], "must end in .npz"),
    (["train", "{data}", "-o", "{d}/m.npz", "--checkpoint", "{d}/c.npy"], "must end in .npz"),
    (["dbn", "{data}", "-o", "{d}/m.npy", "--layers", "3"], "must end in .npz"),
    (["evaluate", "{model}", "--data", "{test}", "--save-schedule", "{d}/s.npy"], "text file"),
    (["evaluate", "{model}", "--data", "{test}", "--plot", "{d}/p.pdf"], "must end in .png"),
    (["sample", "{model}", "-o", "{d}/no/such/s.png"], "does not exist"),
    (["sample", "{model}", "-o", "{data}/s.png"], "is not a directory"),
    (["sample", "{model}", "-o", "{d}"], "is a directory"),
    (["sample", "{model}", "-o", "/proc/cyrbm-test.png"], "cannot be written"),
    (["train", "{data}", "-o", "/proc/cyrbm-test.npz"], "cannot be written"),
    (["bound", "{dbn}", "--data", "{test}", "--method", "chib", "--trace", "--logz", "5",
      "--plot", "/proc/cyrbm-test.png"], "cannot be written"),
])
def test_unwritable_places_and_wrong_endings(unchanged, tmp_path, capsys, argv, needle):
    names = {k: str(v) for k, v in unchanged.items()}
    argv = [a.format(d=tmp_path, **names) for a in argv]
    before = sorted(os.listdir(tmp_path))
    code, _, err = run(argv, capsys)
    assert code == 1
    one_error_line(err, needle)
    assert sorted(os.listdir(tmp_path)) == before          # nothing written anywhere


def test_the_check_comes_before_any_work(unchanged, tmp_path, capsys, monkeypatch):
    """The outputs are refused before a model or any data is read."""
    def no_work(*a, **k):
        raise AssertionError("work started before the outputs were checked")
    monkeypatch.setattr(RBM, "load", no_work)
    monkeypatch.setattr(DBN, "load", no_work)
    monkeypatch.setattr("cyrbm.data.datasets.load_data", no_work)
    f = unchanged
    missing = tmp_path / "missing" / "x"
    for argv in (["train", f["data"], "-o", f"{missing}.npz"],
                 ["dbn", f["data"], "-o", f"{missing}.npz", "--layers", "3"],
                 ["sample", f["model"], "-o", f"{missing}.png"],
                 ["filters", f["model"], "-o", f"{missing}.png"],
                 ["evaluate", f["model"], "--data", f["test"], "--schedule", "adaptive:50",
                  "--save-schedule", f"{missing}.txt"],
                 ["evaluate", f["model"], "--data", f["test"], "--plot", f"{missing}.png"],
                 ["bound", f["dbn"], "--data", f["test"], "--method", "chib", "--trace",
                  "--plot", f"{missing}.png"]):
        code, _, err = run(argv, capsys)
        assert code == 1
        one_error_line(err, "does not exist")


def test_a_read_only_file_is_refused_even_for_root(tmp_path):
    target = tmp_path / "kept.png"
    target.write_bytes(b"mine")
    os.chmod(target, 0o444)
    with pytest.raises(OutputError, match="read-only"):
        _io.check_outputs([("-o", target, "png")])
    assert target.read_bytes() == b"mine"


def test_the_python_api_never_replaces_a_special_file(tmp_path):
    fifo = tmp_path / "m.npz"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="FIFO"):
        RBM.random(4, 2).save(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_one_checker_for_every_command():
    """No writing command keeps an ad-hoc check of its own beside check_outputs."""
    import cyrbm
    root = os.path.dirname(cyrbm.__file__)
    for name in ("cli/train.py", "cli/measure.py", "cli/dbn.py", "cli/pictures.py",
                 "training/trainer.py"):
        text = open(os.path.join(root, name), encoding="utf-8").read()
        assert "check_writable" not in text and "same_file(" not in text, name
    assert not hasattr(_io, "check_writable")


# ---------------------------------------------- property: generated output paths
#: command output -> (its kind, the argv with {out} for the path, the inputs it reads);
#: dbn's --checkpoint X is not written itself: it names X.layer<l>.ckpt.npz and X.done.npz
WRITERS = {
    "train -o": ("npz", ["train", "{data}", "-o", "{out}", "--hidden", "3", "--epochs", "1",
                         "--batch", "10", "--monitor", "0", "--no-progress"], ["data"]),
    "train --checkpoint": ("npz", ["train", "{data}", "-o", "{d}/tm.npz", "--checkpoint", "{out}",
                                   "--hidden", "3", "--epochs", "1", "--batch", "10",
                                   "--monitor", "0", "--no-progress"], ["data"]),
    "dbn -o": ("npz", ["dbn", "{data}", "-o", "{out}", "--layers", "4,3", "--epochs", "1",
                       "--batch", "10", "--monitor", "0", "--no-progress"], ["data"]),
    "dbn --checkpoint": ("npz", ["dbn", "{data}", "-o", "{d}/dm.npz", "--checkpoint", "{out}",
                                 "--layers", "4,3", "--epochs", "1", "--batch", "10",
                                 "--monitor", "0", "--no-progress"], ["data"]),
    "sample -o": ("png", ["sample", "{model}", "-o", "{out}", "--n", "2", "--steps", "2"],
                  ["model"]),
    "filters -o": ("png", ["filters", "{model}", "-o", "{out}"], ["model"]),
    "evaluate --save-schedule": ("text", ["evaluate", "{model}", "--data", "{test}", "--runs",
                                          "2", "--chains", "1", "--schedule", "{schedule}",
                                          "--save-schedule", "{out}"],
                                 ["model", "test", "schedule"]),
    "evaluate --plot": ("png", ["evaluate", "{model}", "--data", "{test}", "--runs", "2",
                                "--chains", "1", "--schedule", "{schedule}", "--plot", "{out}"],
                        ["model", "test", "schedule"]),
    "bound --plot": ("png", ["bound", "{dbn}", "--data", "{test}", "--method", "chib",
                             "--trace", "--logz", "5", "--steps", "2", "--plot", "{out}"],
                     ["dbn", "test"]),
    "bound --checkpoint": ("npz", ["bound", "{dbn}", "--data", "{test}", "--method", "chib",
                                   "--logz", "5", "--steps", "2", "--repeats", "1",
                                   "--checkpoint", "{out}"], ["dbn", "test"]),
    "train --plot": ("png", ["train", "{data}", "-o", "{d}/pm.npz", "--hidden", "3",
                             "--epochs", "1", "--batch", "10", "--monitor", "0",
                             "--no-progress", "--track-logz", "--track-every", "3",
                             "--data", "{test}", "--plot", "{out}"], ["data", "test"]),
    "sweep -o": ("dir", ["sweep", "{config}", "-o", "{out}", "--no-progress", "--json"],
                 ["config", "data", "test"]),
}
ENDING = {"npz": ".npz", "png": ".png", "text": ".txt", "dir": ""}
WRONG = {"npz": [".npy", ".png", ".txt", ""], "png": [".npz", ".jpg", ".npy", ""],
         "text": [".npy", ".npz", ".png"], "dir": [".d", ".npz"]}
ODD = st.text(alphabet=list("abcXYZ019 -_.,'+=#()é数λü"), min_size=1, max_size=12)

PATHS = st.one_of(
    st.tuples(st.sampled_from(["input", "symlink", "hardlink", "under-input"]),
              st.integers(0, 9)),
    st.tuples(st.sampled_from(["fifo", "device", "socket", "directory", "missing-dir",
                               "proc", "read-only"]), st.just(0)),
    st.tuples(st.just("wrong-ending"), st.integers(0, 3)),
    st.tuples(st.just("odd"), ODD, st.booleans()),
)
KINDS = [("input", 0), ("input", 2), ("symlink", 1), ("hardlink", 0), ("under-input", 0),
         ("fifo", 0), ("device", 0), ("socket", 0), ("directory", 0), ("missing-dir", 0),
         ("proc", 0), ("read-only", 0), ("wrong-ending", 0), ("wrong-ending", 3),
         ("odd", "-lead ing é.数", False), ("odd", "-x", True)]


class Place:
    """A directory of inputs and special files, shared by the examples of one writer."""

    def __init__(self, d):
        self.d = d
        self.files = make_files(d)
        self.digests = {k: digest(p) for k, p in self.files.items()}
        self.count = itertools.count()
        self.specials = {}
        for kind in ENDING:
            ext = ENDING[kind]
            fifo = d / f"fifo{ext}"
            os.mkfifo(fifo)
            self.specials[fifo] = stat.S_ISFIFO
            dev = make_char_device(d / f"null{ext}")
            if dev is not None:
                self.specials[dev] = stat.S_ISCHR
            (d / f"adir{ext}").mkdir()
            self.specials[d / f"adir{ext}"] = stat.S_ISDIR
            ro = d / f"ro{ext}"
            ro.write_bytes(b"keep me")
            os.chmod(ro, 0o444)
        self.sockets = []
        for kind in ENDING:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            path = d / f"sock{ENDING[kind]}"
            try:
                s.bind(str(path))             # fails on a path over ~107 bytes
            except OSError:
                s.close()
                continue
            self.sockets.append(s)
            self.specials[path] = stat.S_ISSOCK
        self.inodes = {p: os.stat(p).st_ino for p in self.specials}

    def path(self, case, kind, inputs):
        """(the output path, whether the command must refuse it, cwd to run in)."""
        how = case[0]
        ext = ENDING[kind]
        n = next(self.count)
        if how in ("input", "symlink", "hardlink", "under-input"):
            source = self.files[inputs[case[1] % len(inputs)]]
            if how == "input":
                return source, True, None
            if how == "under-input":
                return f"{source}/x{ext}", True, None
            link = self.d / f"{how}{n}{ext}"
            (os.symlink if how == "symlink" else os.link)(source, link)
            return link, True, None
        if how in ("fifo", "device", "socket", "read-only"):
            name = {"fifo": "fifo", "device": "null", "socket": "sock", "read-only": "ro"}[how]
            path = self.d / f"{name}{ext}"
            if how in ("device", "socket") and path not in self.specials:
                path = self.d / f"fifo{ext}"          # none could be made here
            return path, True, None
        if how == "directory":
            return self.d / f"adir{ext}", True, None
        if how == "missing-dir":
            return self.d / f"missing{n}" / f"x{ext}", True, None
        if how == "proc":
            return f"/proc/cyrbm-test{ext}", True, None
        if how == "wrong-ending":
            return self.d / f"w{n}{WRONG[kind][case[1] % len(WRONG[kind])]}", True, None
        fresh = self.d / "odd" / str(n)          # a new directory: outputs of earlier
        fresh.mkdir(parents=True)                # examples cannot be in the way
        name = case[1] + ext
        if case[2]:
            return f"./{name}", False, fresh
        return fresh / name, False, None

    def check(self):
        assert {k: digest(p) for k, p in self.files.items()} == self.digests
        for path, is_kind in self.specials.items():
            st_ = os.stat(path)
            assert is_kind(st_.st_mode) and st_.st_ino == self.inodes[path], path
            if stat.S_ISCHR(st_.st_mode):
                assert st_.st_rdev == os.makedev(1, 3)
        for ext in ENDING.values():
            assert (self.d / f"ro{ext}").read_bytes() == b"keep me"
        assert not any(name.startswith(".cyrbm-") for name in os.listdir(self.d))

    def close(self):
        for s in self.sockets:
            s.close()
        for ext in ENDING.values():
            os.chmod(self.d / f"ro{ext}", 0o644)


@pytest.fixture(scope="module", params=sorted(WRITERS))
def writer(request, tmp_path_factory):
    place = Place(tmp_path_factory.mktemp("outputs"))
    yield request.param, place
    place.close()


def _property(writer, case, capsys):
    name, place = writer
    kind, argv, inputs = WRITERS[name]
    out, refused, cwd = place.path(case, kind, inputs)
    names = {k: str(v) for k, v in place.files.items()}
    args = [a.format(out=out, d=place.d, **names) for a in argv]
    here = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        code = main(args)
    finally:
        os.chdir(here)
    _, err = capsys.readouterr()
    place.check()
    if name == "dbn --checkpoint":           # only the files named after it are written
        refused = case[0] in ("missing-dir", "proc", "under-input")
        out = os.fspath(out)
        out = (out[:-4] if out.endswith(".npz") else out) + ".done.npz"
    if kind == "dir":                        # a folder: an existing one is written into
        refused = case[0] not in ("directory", "wrong-ending", "odd")
    if refused:
        assert code in (1, 2), (case, err)
        one_error_line(err)
    else:
        assert code == 0, (case, err)
        written = os.path.join(cwd, out) if cwd is not None else out
        if kind == "dir":
            written = os.path.join(written, "results.json")
        assert stat.S_ISREG(os.stat(written).st_mode)


def _with_examples(test):
    for case in KINDS:
        test = example(case=case)(test)
    return test


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@_with_examples
@given(case=PATHS)
def test_generated_output_paths_never_destroy_a_file(writer, case, capsys):
    """For every command that writes: whatever path an output is given, no input file
    changes and no special file is replaced; a path that would is refused in one
    sentence, and an ordinary one (odd names included) is written."""
    _property(writer, case, capsys)


# ------------------------------------------- the writers, enumerated from the code
def usage_outputs():
    """Every output of the command line, read from its usage text: "COMMAND OPTION" for
    -o and each option whose argument is FILE, and each option whose description says
    it writes (``Write ...``, ``File to write``), on every command that takes it."""
    from cyrbm.cli.parse import USAGE
    usage, options = USAGE.split("Options:")
    usage = usage.split("Usage:")[1].split("\n\n")[0]
    writes = set(re.findall(r"^\s+(--?[\w-]+)[ ,][^\n]*?\s{2,}(?:Write|File to write)",
                            options, flags=re.M))
    assert {"-o", "--plot", "--save-schedule"} <= writes       # the reading still works
    found = set()
    for line in re.split(r"\n  cyrbm ", usage)[1:]:
        command = line.split()[0]
        if command.startswith("-"):             # cyrbm -h, cyrbm --version
            continue
        for option, argument in re.findall(r"(--?[\w-]+)(?:[ =]([A-Z_]+))?", line):
            if option == "-o" or argument == "FILE" or option in writes:
                found.add(f"{command} {option}")
    return found


def test_every_output_option_of_the_command_line_is_a_writer_of_the_property_test():
    """WRITERS is checked against the usage text: an output option added to a command
    without an entry here fails this test (and so enters the property test)."""
    found = usage_outputs()
    assert "sweep -o" in found and "train --checkpoint" in found and "bound --plot" in found
    assert found == set(WRITERS), (found ^ set(WRITERS))


#: the calls that put bytes into a file (on a path or a file object), by name; those of
#: _OWNED only as functions of these modules (``a.copy()`` is no write)
_WRITE_CALLS = {"save", "savez", "savez_compressed", "savefig", "write_text", "write_bytes",
                "to_csv", "tofile", "dump", "copy", "copy2", "copyfile", "copyfileobj",
                "copytree", "move", "rename", "replace", "mkstemp", "NamedTemporaryFile",
                "fdopen", "imwrite", "imsave"}
_OWNED = {"copy": ("shutil",), "copy2": ("shutil",), "copyfile": ("shutil",),
          "copyfileobj": ("shutil",), "copytree": ("shutil",), "move": ("shutil",),
          "rename": ("os",), "replace": ("os",), "mkstemp": ("tempfile",),
          "NamedTemporaryFile": ("tempfile",), "fdopen": ("os",), "dump": ("json", "pickle"),
          "save": ("np", "numpy")}
_CHECKED_WRITERS = {"atomic_write", "atomic_savez"}


def unchecked_writes(source, name="<source>"):
    """The writes of Python ``source`` that do not go through cyrbm._io's atomic writers
    (which pass every path through check_outputs): (file:line, call) for a call of
    _WRITE_CALLS, or open() with a writing mode, on anything but the file object an
    atomic writer hands its callback (a lambda's parameter) or an in-memory buffer; a
    model's ``.save(path)`` counts as checked (every ``def save`` of the package is
    checked by test_every_save_method_writes_through_the_atomic_writer)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    buffers = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and isinstance(node.value, ast.Call)
               and getattr(node.value.func, "attr", getattr(node.value.func, "id", ""))
               in ("BytesIO", "StringIO") for t in node.targets if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called == "open":
            mode = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "mode"), None)
            if not (isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax+")):
                continue
        elif called not in _WRITE_CALLS:
            continue
        owner = func.value if isinstance(func, ast.Attribute) else None
        if called in _OWNED and owner is not None and not (
                isinstance(owner, ast.Name) and owner.id in _OWNED[called]):
            continue              # a method of that name (a model's save: see below)
        target = node.args[0] if node.args else None
        if called == "dump" and len(node.args) > 1:
            target = node.args[1]
        if isinstance(target, ast.Name):
            if target.id in buffers:
                continue
            scope, inside = node, False
            while scope in parents:
                scope = parents[scope]
                if isinstance(scope, ast.Lambda) and target.id in [a.arg for a in
                                                                    scope.args.args]:
                    inside = isinstance(parents.get(scope), ast.Call) and getattr(
                        parents[scope].func, "attr", getattr(parents[scope].func, "id", "")
                    ) in _CHECKED_WRITERS
                    break
            if inside:
                continue
        found.append(f"{name}:{node.lineno} {ast.unparse(node)[:60]}")
    return found


def _package_sources():
    import cyrbm
    root = os.path.dirname(cyrbm.__file__)
    for folder, _, names in os.walk(root):
        for n in sorted(names):
            if n.endswith(".py"):
                path = os.path.join(folder, n)
                yield os.path.relpath(path, root), open(path, encoding="utf-8").read()


def test_every_write_of_the_package_goes_through_the_one_output_check():
    """Enumerated from the code: every write in the package's Python sources is one of
    cyrbm._io's atomic writers (or fills the file object one hands it), and those pass
    the path through check_outputs first; _io.py itself is where the writing is done."""
    found = [w for rel, text in _package_sources() if rel != "_io.py"
             for w in unchecked_writes(text, rel)]
    assert found == [], found
    # the atomic writer runs the check before it writes anything
    tree = ast.parse(open(_io.__file__, encoding="utf-8").read())
    atomic = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                  and n.name == "atomic_write")
    first_calls = [getattr(c.func, "id", None) for c in ast.walk(atomic)
                   if isinstance(c, ast.Call)]
    assert "check_outputs" in first_calls
    assert first_calls.index("check_outputs") < first_calls.index("remove_stale_temporaries")
    # a writer that skips the check is caught (the power of this test)
    for bad in ('np.save(path, x)', 'numpy.savez(path, a=x)', 'fig.savefig("f.png")',
                'open(path, "w").write(text)', 'open(path, mode="ab")',
                'json.dump(result, open(path, "w"))', 'os.replace(tmp, path)',
                'Path(path).write_text(text)', 'frame.to_csv(path)',
                'atomic_write(path, lambda f: f.write(b""))\nnp.save(f, x)'):
        assert unchecked_writes(bad), bad
    for good in ('atomic_write(path, lambda f: fig.savefig(f, format="png"))',
                 'buf = io.BytesIO()\nfig.savefig(buf)', 'model.save(path)',
                 'open(path, encoding="utf-8")', '_io.atomic_savez(path, arrays)'):
        assert not unchecked_writes(good), good


def test_every_save_method_writes_through_the_atomic_writer():
    """The ``save`` methods that unchecked_writes lets pass (a model's, a DBN's) each
    write by cyrbm._io.atomic_savez (so by check_outputs)."""
    saves = []
    for rel, text in _package_sources():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and node.name == "save":
                calls = {getattr(c.func, "attr", getattr(c.func, "id", None))
                         for c in ast.walk(node) if isinstance(c, ast.Call)}
                saves.append(rel)
                assert calls & _CHECKED_WRITERS or "save" in calls, (rel, node.lineno)
    assert len(saves) >= 3


def test_the_api_writers_refuse_a_special_file(tmp_path):
    """Through the check: a model's save, a Trainer's save_modes, a sweep's folder."""
    import cyrbm
    from cyrbm.sweep import check_output_folder
    fifo = tmp_path / "f.npz"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="FIFO"):
        RBM.random(4, 2).save(fifo)
    trainer = cyrbm.Trainer(3, method="amh", epochs=1, batch_size=10, monitor_size=0)
    trainer.fit((np.random.default_rng(0).random((20, 6)) < 0.5).astype(np.uint8))
    with pytest.raises(OutputError, match="FIFO"):
        trainer.save_modes(fifo)
    with pytest.raises(OutputError, match="the output folder 'f.npz'|FIFO"):
        check_output_folder(fifo, 1)
    (tmp_path / "out" / "models").mkdir(parents=True)
    (tmp_path / "out" / "results.csv").mkdir()
    with pytest.raises(OutputError, match="results.csv.*is a directory"):
        check_output_folder(tmp_path / "out", 1)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
