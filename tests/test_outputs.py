"""Outputs that never destroy inputs (issue 20): every output path is checked, before any
work, by one function (``cyrbm._io.check_outputs``) that every writing command calls.

The cases of the issue run through the command line (``cyrbm.cli.main``): each ends with
a non-zero status and one sentence on stderr, and its input files keep their bytes.  A
property-based test then throws generated output paths (the inputs, links to them, a
FIFO, a device node, a socket, a directory, missing and unwritable places, wrong endings,
odd names) at every command that writes, and checks that no input changes and no special
file is replaced.  Device nodes are made in the test's own directory (never /dev).
"""
import hashlib
import itertools
import os
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
}
ENDING = {"npz": ".npz", "png": ".png", "text": ".txt"}
WRONG = {"npz": [".npy", ".png", ".txt", ""], "png": [".npz", ".jpg", ".npy", ""],
         "text": [".npy", ".npz", ".png"]}
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
    if refused:
        assert code in (1, 2), (case, err)
        one_error_line(err)
    else:
        assert code == 0, (case, err)
        written = os.path.join(cwd, out) if cwd is not None else out
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
