"""cyrbm._io: the durability of atomic writes (issue 20)."""
import os
import stat

import numpy as np
import pytest

from cyrbm import _io


@pytest.fixture
def recorded(monkeypatch):
    """Record, in order, every os.fsync (as "file <bytes on disk>" or "dir") and
    os.replace that cyrbm._io makes, still doing each."""
    calls = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        st = os.fstat(fd)
        calls.append(("dir",) if stat.S_ISDIR(st.st_mode) else ("file", st.st_size))
        return real_fsync(fd)

    def replace(src, dst, *args, **kwargs):
        calls.append(("replace", os.path.basename(dst)))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(_io.os, "fsync", fsync)
    monkeypatch.setattr(_io.os, "replace", replace)
    return calls


@pytest.mark.parametrize("existing", [False, True])
def test_atomic_write_syncs_the_data_before_the_rename_and_the_directory_after(
        tmp_path, recorded, existing):
    """The temporary file is flushed and fsync'ed with all its bytes before it is
    renamed over the target, and the directory is fsync'ed after the rename (so that
    the rename itself survives a crash): removing either fsync, or moving the file's
    after the rename, fails here."""
    path = tmp_path / "out.bin"
    if existing:
        path.write_bytes(b"old contents")
    data = b"x" * 100_000
    _io.atomic_write(path, lambda f: f.write(data))
    assert path.read_bytes() == data
    assert recorded == [("file", len(data)), ("replace", "out.bin"), ("dir",)]


def test_atomic_savez_syncs_before_the_rename(tmp_path, recorded):
    """atomic_savez (models and checkpoints) goes the same way."""
    path = tmp_path / "m.npz"
    _io.atomic_savez(path, {"W": np.arange(6.0).reshape(2, 3)})
    size = path.stat().st_size
    assert recorded == [("file", size), ("replace", "m.npz"), ("dir",)]
    with np.load(path) as z:
        np.testing.assert_array_equal(z["W"], np.arange(6.0).reshape(2, 3))
